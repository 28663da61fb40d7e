"""SGD: hand-computed steps, parity with torch.optim.SGD, state_dict, validation."""
import numpy as np
import pytest

import minigrad
from minigrad.optim import SGD

from . import run_minigrad, run_torch


def test_plain_step_by_hand(device):
    w = minigrad.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
    (w * w).sum().backward()                          # grad 2w
    SGD([w], lr=0.1).step()
    np.testing.assert_allclose(w.numpy(), [0.8, -1.6, 2.4], rtol=1e-6)


def test_momentum_and_weight_decay_by_hand(float64):
    w = minigrad.tensor([1.0, -1.0], requires_grad=True)
    opt = SGD([w], lr=0.5, momentum=0.9, weight_decay=0.1)
    w.grad = minigrad.tensor([2.0, 4.0])
    opt.step()   # g = [2.1, 3.9]; buf = g; w = [1 - 1.05, -1 - 1.95]
    np.testing.assert_allclose(w.numpy(), [-0.05, -2.95], rtol=1e-14)
    opt.step()   # g = [2 - 0.005, 4 - 0.295]; buf = 0.9 * [2.1, 3.9] + g
    g = np.array([2.0 - 0.005, 4.0 - 0.295])
    buf = 0.9 * np.array([2.1, 3.9]) + g
    np.testing.assert_allclose(w.numpy(), np.array([-0.05, -2.95]) - 0.5 * buf, rtol=1e-14)


def test_nesterov_by_hand(float64):
    w = minigrad.tensor([0.0], requires_grad=True)
    opt = SGD([w], lr=1.0, momentum=0.5, nesterov=True)
    w.grad = minigrad.tensor([1.0])
    opt.step()   # buf = 1, step = g + 0.5 * buf = 1.5
    opt.step()   # buf = 0.5 + 1 = 1.5, step = 1 + 0.75 = 1.75
    np.testing.assert_allclose(w.numpy(), [-3.25], rtol=1e-15)


@pytest.mark.parametrize("options", [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.8, weight_decay=0.01),
    dict(lr=0.02, momentum=0.9, nesterov=True, weight_decay=0.1),
])
def test_parity_with_torch_over_10_steps(torch, float64, options):
    ours = run_minigrad(SGD, options, steps=10)
    theirs = run_torch(torch, torch.optim.SGD, options, steps=10)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_parity_with_torch_param_groups(torch, float64):
    groups = [dict(lr=0.1, momentum=0.9), dict(lr=0.01)]
    ours = run_minigrad(SGD, dict(lr=0.5), steps=10, groups=groups)
    theirs = run_torch(torch, torch.optim.SGD, dict(lr=0.5), steps=10, groups=groups)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_parameters_without_grad_are_skipped():
    a = minigrad.tensor([1.0, 2.0], requires_grad=True)
    b = minigrad.tensor([3.0], requires_grad=True)
    opt = SGD([a, b], lr=0.1, momentum=0.9)
    a.grad = minigrad.tensor([1.0, 1.0])
    opt.step()
    np.testing.assert_array_equal(b.numpy(), [3.0])
    assert b not in opt.state
    np.testing.assert_allclose(a.numpy(), [0.9, 1.9], rtol=1e-6)


def test_float32_stays_float32(device):
    w = minigrad.tensor(np.ones(3, np.float32), device=device, requires_grad=True)
    w.grad = minigrad.tensor(np.ones(3, np.float32), device=device)
    opt = SGD([w], lr=0.1, momentum=0.9, weight_decay=0.1)
    opt.step()
    opt.step()
    assert w.dtype == np.float32
    assert opt.state[w]["momentum_buffer"].dtype == np.float32
    assert w.device == device


def test_zero_grad():
    w = minigrad.tensor([1.0], requires_grad=True)
    opt = SGD([w], lr=0.1)
    w.grad = minigrad.tensor([5.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), [0.0])
    opt.zero_grad()
    assert w.grad is None


def test_state_dict_resumes_exactly(float64):
    rng = np.random.default_rng(1)
    start = rng.standard_normal(4)
    grads = [rng.standard_normal(4) for _ in range(8)]
    options = dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)

    def run(opt, w, gs):
        for g in gs:
            w.grad = minigrad.tensor(g)
            opt.step()

    w = minigrad.tensor(start, requires_grad=True)
    run(SGD([w], **options), w, grads)               # without stopping

    w1 = minigrad.tensor(start, requires_grad=True)
    opt1 = SGD([w1], **options)
    run(opt1, w1, grads[:3])
    saved, saved_w = opt1.state_dict(), w1.numpy().copy()
    run(opt1, w1, [np.full(4, 1e3)])                 # the live state moves on;
    w2 = minigrad.tensor(saved_w, requires_grad=True)  # the saved copy must not
    opt2 = SGD([w2], lr=0.5)                         # hyperparameters come from the state
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.param_groups[0]["nesterov"]
    run(opt2, w2, grads[3:])
    np.testing.assert_array_equal(w2.numpy(), w.numpy())


def test_load_state_dict_mismatch():
    a = minigrad.tensor([1.0], requires_grad=True)
    b = minigrad.tensor([1.0, 2.0], requires_grad=True)
    saved = SGD([a], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="1 parameters in the saved state but 2 here"):
        SGD([a, b], lr=0.1).load_state_dict(saved)
    opt = SGD([a], lr=0.1, momentum=0.9)
    a.grad = minigrad.tensor([1.0])
    opt.step()
    with pytest.raises(ValueError, match="shape"):
        SGD([b], lr=0.1, momentum=0.9).load_state_dict(opt.state_dict())


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(lr=-0.1), ValueError, "lr must be >= 0"),
    (dict(lr="0.1"), TypeError, "lr must be a real number"),
    (dict(lr=0.1, momentum=-1), ValueError, "momentum"),
    (dict(lr=0.1, weight_decay=-1e-4), ValueError, "weight_decay"),
    (dict(lr=0.1, nesterov=True), ValueError, "nesterov momentum requires momentum > 0"),
    (dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), ValueError, "dampening"),
    (dict(lr=float("nan")), ValueError, "finite"),
])
def test_bad_hyperparameters(kwargs, error, text):
    w = minigrad.tensor([1.0], requires_grad=True)
    with pytest.raises(error, match=text):
        SGD([w], **kwargs)


def test_bad_parameters():
    w = minigrad.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="required hyperparameter 'lr'"):
        SGD([w])
    with pytest.raises(ValueError, match="empty parameter list"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="single Tensor"):
        SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="more than once"):
        SGD([w, w], lr=0.1)
    with pytest.raises(TypeError, match="not a leaf"):
        SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="must be a Tensor"):
        SGD([np.ones(2)], lr=0.1)
    with pytest.raises(TypeError, match="dtype int64"):
        SGD([minigrad.tensor([1, 2])], lr=0.1)


def test_load_state_dict_of_a_malformed_state():
    opt = SGD([minigrad.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(TypeError, match="SGD.load_state_dict: expected a dict"):
        opt.load_state_dict([1, 2])
    with pytest.raises(ValueError, match="SGD.load_state_dict: .*missing keys: param_groups"):
        opt.load_state_dict({"state": {}})
