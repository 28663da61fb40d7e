"""Adam and AdamW: hand-computed steps, parity with torch.optim, state_dict, validation."""
import numpy as np
import pytest

import minigrad
from minigrad.optim import Adam, AdamW

from . import run_minigrad, run_torch


@pytest.mark.parametrize("cls", [Adam, AdamW])
def test_first_step_moves_each_weight_by_lr_times_sign(device, float64, cls):
    start = np.array([0.5, -1.0, 2.0, 0.0])
    g = np.array([3.0, -1e-3, 250.0, -7.0])
    w = minigrad.tensor(start, device=device, requires_grad=True)
    w.grad = minigrad.tensor(g, device=device)
    cls([w], lr=0.01, weight_decay=0.0).step()
    # m̂ = g and v̂ = g², so the step is lr * g / (|g| + eps)
    np.testing.assert_allclose(w.numpy(), start - 0.01 * g / (np.abs(g) + 1e-8), rtol=1e-15)
    np.testing.assert_allclose(w.numpy(), start - 0.01 * np.sign(g), rtol=0, atol=1e-6)


def test_second_step_by_hand(float64):
    b1, b2, lr, eps = 0.9, 0.999, 0.1, 1e-8
    w = minigrad.tensor([1.0], requires_grad=True)
    opt = Adam([w], lr=lr)
    w.grad = minigrad.tensor([2.0])
    opt.step()
    w.grad = minigrad.tensor([-1.0])
    opt.step()
    m = b1 * (1 - b1) * 2.0 + (1 - b1) * -1.0
    v = b2 * (1 - b2) * 4.0 + (1 - b2) * 1.0
    step = lr / (1 - b1 ** 2) * m / (np.sqrt(v) / np.sqrt(1 - b2 ** 2) + eps)
    first = lr * 2.0 / (2.0 + eps)
    np.testing.assert_allclose(w.numpy(), [1.0 - first - step], rtol=1e-14)
    assert opt.state[w]["step"] == 2


def test_adam_l2_versus_adamw_decoupled_decay_by_hand(float64):
    """With a zero gradient, Adam's L2 term becomes the gradient (and is
    normalized to a step of lr); AdamW just shrinks the weight by lr * wd."""
    wa = minigrad.tensor([4.0], requires_grad=True)
    wb = minigrad.tensor([4.0], requires_grad=True)
    wa.grad = minigrad.tensor([0.0])
    wb.grad = minigrad.tensor([0.0])
    Adam([wa], lr=0.1, weight_decay=0.5).step()
    AdamW([wb], lr=0.1, weight_decay=0.5).step()
    np.testing.assert_allclose(wa.numpy(), [4.0 - 0.1 * 2.0 / (2.0 + 1e-8)], rtol=1e-15)
    np.testing.assert_allclose(wb.numpy(), [4.0 * (1 - 0.1 * 0.5)], rtol=1e-15)


def test_adamw_default_weight_decay():
    w = minigrad.tensor([1.0], requires_grad=True)
    assert AdamW([w]).param_groups[0]["weight_decay"] == 0.01
    assert Adam([w]).param_groups[0]["weight_decay"] == 0.0


@pytest.mark.parametrize("options", [
    dict(lr=0.01),
    dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.3, betas=(0.0, 0.5), eps=1e-3, weight_decay=0.02),
])
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_parity_with_torch_over_10_steps(torch, float64, name, options):
    ours = run_minigrad(getattr(minigrad.optim, name), options, steps=10)
    theirs = run_torch(torch, getattr(torch.optim, name), options, steps=10)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_parity_with_torch_param_groups(torch, float64):
    groups = [dict(lr=0.1, weight_decay=0.1), dict(betas=(0.5, 0.9))]
    ours = run_minigrad(AdamW, dict(lr=0.01), steps=10, groups=groups)
    theirs = run_torch(torch, torch.optim.AdamW, dict(lr=0.01), steps=10, groups=groups)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_parameters_without_grad_are_skipped():
    a = minigrad.tensor([1.0], requires_grad=True)
    b = minigrad.tensor([3.0], requires_grad=True)
    opt = AdamW([a, b], lr=0.1)
    a.grad = minigrad.tensor([1.0])
    opt.step()
    np.testing.assert_array_equal(b.numpy(), [3.0])      # not even decayed
    assert b not in opt.state and opt.state[a]["step"] == 1


def test_float32_stays_float32(device):
    w = minigrad.tensor(np.ones(3, np.float32), device=device, requires_grad=True)
    w.grad = minigrad.tensor(np.full(3, 0.5, np.float32), device=device)
    opt = AdamW([w], lr=0.1)
    opt.step()
    assert w.dtype == np.float32 and w.device == device
    assert opt.state[w]["exp_avg"].dtype == np.float32
    np.testing.assert_allclose(w.numpy(), 1.0 * (1 - 0.1 * 0.01) - 0.1, rtol=1e-6)


@pytest.mark.parametrize("cls", [Adam, AdamW])
def test_state_dict_resumes_exactly(float64, cls):
    rng = np.random.default_rng(2)
    start = rng.standard_normal(5)
    grads = [rng.standard_normal(5) for _ in range(7)]

    def run(opt, w, gs):
        for g in gs:
            w.grad = minigrad.tensor(g)
            opt.step()

    w = minigrad.tensor(start, requires_grad=True)
    run(cls([w], lr=0.05, weight_decay=0.1), w, grads)

    w1 = minigrad.tensor(start, requires_grad=True)
    opt1 = cls([w1], lr=0.05, weight_decay=0.1)
    run(opt1, w1, grads[:4])
    saved, saved_w = opt1.state_dict(), w1.numpy().copy()
    run(opt1, w1, grads[:2])                      # the saved copy must not change
    w2 = minigrad.tensor(saved_w, requires_grad=True)
    opt2 = cls([w2])
    opt2.load_state_dict(saved)
    assert opt2.state[w2]["step"] == 4
    run(opt2, w2, grads[4:])
    np.testing.assert_array_equal(w2.numpy(), w.numpy())


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(lr=-1.0), ValueError, "lr must be >= 0"),
    (dict(betas=(1.0, 0.999)), ValueError, r"betas\[0\] must be < 1.0"),
    (dict(betas=(0.9, -0.1)), ValueError, r"betas\[1\] must be >= 0"),
    (dict(betas=0.9), TypeError, "pair"),
    (dict(eps=-1e-8), ValueError, "eps"),
    (dict(weight_decay=-0.1), ValueError, "weight_decay"),
])
@pytest.mark.parametrize("cls", [Adam, AdamW])
def test_bad_hyperparameters(cls, kwargs, error, text):
    w = minigrad.tensor([1.0], requires_grad=True)
    with pytest.raises(error, match=text):
        cls([w], **kwargs)
