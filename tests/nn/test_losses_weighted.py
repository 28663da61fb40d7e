"""Class weights in cross_entropy / nll_loss (PyTorch's normalization by the
summed target weight), their exact accumulation with a float ``num_items``,
binary_cross_entropy on probabilities (logs clamped at -100), and mse_loss's
per-element weight."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn, optim
from minigrad.nn import functional as F
from tests.helpers import check_gradients, compare_with_torch

REDUCTIONS = ["mean", "sum", "none"]


def _weighted_case(rng, n, c, extra=()):
    logits = rng.standard_normal((n, c, *extra))
    target = rng.integers(0, c, size=(n, *extra))
    target.reshape(-1)[::3] = -100
    weight = rng.uniform(0.1, 3.0, size=c)
    return logits, target, weight


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 4), c=st.integers(1, 4), extra=st.lists(st.integers(1, 3), max_size=2),
       reduction=st.sampled_from(REDUCTIONS), smoothing=st.sampled_from([0.0, 0.3]))
def test_weighted_cross_entropy_gradcheck(n, c, extra, reduction, smoothing):
    logits, target, weight = _weighted_case(np.random.default_rng(n * 10 + c), n, c,
                                            tuple(extra))
    target.reshape(-1)[0] = 0          # at least one kept target: "mean" is finite
    assert check_gradients(lambda z: F.cross_entropy(z, target, reduction=reduction,
                                                     label_smoothing=smoothing,
                                                     weight=weight), [logits])
    assert check_gradients(lambda z: F.nll_loss(z, target, reduction=reduction,
                                                weight=weight), [logits])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("extra", [(), (3,)])
def test_weighted_cross_entropy_parity(torch, reduction, smoothing, extra, device):
    logits, target, weight = _weighted_case(np.random.default_rng(1), 6, 4, extra)
    compare_with_torch(
        torch,
        lambda z: F.cross_entropy(z, target, reduction=reduction, label_smoothing=smoothing,
                                  weight=minigrad.tensor(weight, device=device)),
        lambda z: torch.nn.functional.cross_entropy(
            z, torch.tensor(target), weight=torch.tensor(weight), reduction=reduction,
            label_smoothing=smoothing),
        [logits], device=device, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_nll_parity(torch, reduction, device):
    logits, target, weight = _weighted_case(np.random.default_rng(2), 6, 5, (2,))
    compare_with_torch(
        torch,
        lambda z: F.nll_loss(z, target, reduction=reduction,
                             weight=minigrad.tensor(weight, device=device)),
        lambda z: torch.nn.functional.nll_loss(z, torch.tensor(target),
                                               weight=torch.tensor(weight),
                                               reduction=reduction),
        [logits], device=device, rtol=1e-12, atol=1e-14)


def test_weighted_mean_divides_by_summed_target_weight():
    logits = np.zeros((3, 2))                    # every -log p = log 2
    target = np.array([0, 1, 1])
    weight = np.array([1.0, 3.0])
    loss = F.cross_entropy(minigrad.tensor(logits), target, weight=weight).item()
    # (1·log2 + 3·log2 + 3·log2) / (1 + 3 + 3) = log 2, not 7·log2 / 3
    assert loss == pytest.approx(np.log(2.0), rel=1e-12)


def test_weighted_all_ignored_is_nan_and_modules(torch):
    logits = minigrad.tensor(np.ones((2, 3)))
    assert np.isnan(F.cross_entropy(logits, [-100, -100], weight=[1.0, 2.0, 3.0]).item())
    w = minigrad.tensor([0.5, 2.0, 1.0], dtype=np.float64)
    x, t = np.random.default_rng(3).standard_normal((4, 3)), np.array([0, 2, 1, 1])
    ce = nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)
    nll = nn.NLLLoss(weight=w, reduction="sum")
    assert "weight" in dict(ce.named_buffers())
    ref_ce = torch.nn.CrossEntropyLoss(weight=torch.tensor(w.numpy()), label_smoothing=0.1)
    ref_nll = torch.nn.NLLLoss(weight=torch.tensor(w.numpy()), reduction="sum")
    np.testing.assert_allclose(ce(minigrad.tensor(x), t).item(),
                               ref_ce(torch.tensor(x), torch.tensor(t)).item(), rtol=1e-12)
    np.testing.assert_allclose(nll(minigrad.tensor(x), t).item(),
                               ref_nll(torch.tensor(x), torch.tensor(t)).item(), rtol=1e-12)


def test_weight_errors():
    logits = minigrad.tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"weight of shape \(2,\).*expected shape \(3,\)"):
        F.cross_entropy(logits, [0, 1], weight=[1.0, 2.0])
    with pytest.raises(ValueError, match="weight of shape"):
        F.nll_loss(logits, [0, 1], weight=np.ones((3, 1)))
    # PyTorch's third positional argument is the weight, here too
    w = np.array([1.0, 2.0, 3.0])
    assert F.cross_entropy(logits, [0, 1], w).item() == \
        F.cross_entropy(logits, [0, 1], weight=w).item()
    assert nn.NLLLoss(minigrad.tensor(w)).weight.numpy().tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="ignore_index must be an int"):
        F.nll_loss(logits, [0, 1], None, None, 1.5)
    with pytest.raises(TypeError, match="size_average and reduce are deprecated"):
        F.cross_entropy(logits, [0, 1], None, True)
    with pytest.raises(RuntimeError, match="no gradient"):
        F.cross_entropy(logits, [0, 1], weight=minigrad.tensor(np.ones(3),
                                                               requires_grad=True))


def _accumulate(logits, target, weight, k, num_items):
    """One SGD(lr=1) step on a parameter holding the logits, accumulated over
    k micro-batches; returns (window loss, the gradient the step applied)."""
    z = nn.Parameter(minigrad.tensor(logits))
    opt = optim.SGD([z], lr=1.0)
    acc = optim.GradientAccumulator(opt, k)
    m = len(target) // k
    for j in range(k):
        rows = slice(j * m, (j + 1) * m)
        loss = F.cross_entropy(z[rows], target[rows], weight=weight)
        acc.backward(loss, num_items=num_items(target[rows]))
        acc.step()
    return acc.window_loss, logits - z.numpy()


def test_weighted_accumulation_with_float_num_items(torch):
    """Batch 32 as 8 micro-batches of 4 with class weights: num_items = the
    micro-batch's summed target weight (a float) gives the full-batch loss and
    gradient; the plain mean of the micro-batch means does not."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((32, 5))
    target = rng.integers(0, 5, size=32)
    weight = np.array([0.2, 1.0, 5.0, 0.5, 2.0])
    z = torch.tensor(logits, requires_grad=True)
    full = torch.nn.functional.cross_entropy(z, torch.tensor(target),
                                             weight=torch.tensor(weight))
    full.backward()
    naive = np.mean([torch.nn.functional.cross_entropy(
        torch.tensor(logits[j:j + 4]), torch.tensor(target[j:j + 4]),
        weight=torch.tensor(weight)).item() for j in range(0, 32, 4)])
    # PyTorch's numbers for this example
    assert full.item() == pytest.approx(1.7185771756, abs=1e-9)
    assert naive == pytest.approx(1.7254587085, abs=1e-9)

    loss, grad = _accumulate(logits, target, weight, 8, lambda t: float(weight[t].sum()))
    assert loss == pytest.approx(full.item(), rel=1e-12)
    np.testing.assert_allclose(grad, z.grad.numpy(), rtol=1e-10, atol=1e-14)

    loss, grad = _accumulate(logits, target, weight, 8, lambda t: None)
    assert loss == pytest.approx(naive, rel=1e-12)
    assert np.abs(grad - z.grad.numpy()).max() > 1e-3


# ------------------------------------------------------------- binary_cross_entropy
def _bce_case(rng, shape):
    p = rng.uniform(0.05, 0.95, size=shape)
    y = rng.uniform(0.0, 1.0, size=shape)
    return p, y


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       reduction=st.sampled_from(REDUCTIONS), weighted=st.booleans())
def test_binary_cross_entropy_gradcheck(shape, reduction, weighted):
    rng = np.random.default_rng(len(shape))
    p, y = _bce_case(rng, tuple(shape))
    w = rng.uniform(0.5, 2.0, size=shape[-1]) if weighted else None
    assert check_gradients(lambda a, b: F.binary_cross_entropy(a, b, weight=w,
                                                               reduction=reduction), [p, y])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_parity(torch, reduction, device):
    p, y = _bce_case(np.random.default_rng(4), (4, 3))
    w = np.random.default_rng(5).uniform(0.5, 2.0, size=3)
    compare_with_torch(
        torch,
        lambda a, b: F.binary_cross_entropy(a, b, minigrad.tensor(w, device=device),
                                            reduction=reduction),
        lambda a, b: torch.nn.functional.binary_cross_entropy(a, b, torch.tensor(w),
                                                              reduction=reduction),
        [p, y], device=device, rtol=1e-12, atol=1e-14)


def test_binary_cross_entropy_clamps_logs_at_minus_100(torch):
    p = np.array([0.0, 1.0, 0.0, 1.0, 1e-60, 0.5])
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.5])
    a = minigrad.tensor(p, requires_grad=True)
    out = nn.BCELoss(reduction="none")(a, minigrad.tensor(y))
    out.sum().backward()
    pt = torch.tensor(p, requires_grad=True)
    ref = torch.nn.BCELoss(reduction="none")(pt, torch.tensor(y))
    ref.sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.numpy()[:5], [100.0, 100.0, 0.0, 0.0, 100.0])
    np.testing.assert_allclose(a.grad.numpy(), pt.grad.numpy(), rtol=1e-12)
    assert np.isfinite(a.grad.numpy()).all()


def test_binary_cross_entropy_errors():
    p = minigrad.tensor([0.2, 1.5])
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        F.binary_cross_entropy(p, [0.0, 1.0])
    with pytest.raises(ValueError, match="differs from input"):
        F.binary_cross_entropy(minigrad.tensor([0.2, 0.5]), [[0.0, 1.0]])
    with pytest.raises(ValueError, match="reduction"):
        nn.BCELoss(reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_weight_parity(torch, reduction, device):
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((4, 3)), rng.uniform(0, 1, (4, 3))
    w, pos = rng.uniform(0.5, 2.0, 3), rng.uniform(0.5, 2.0, 3)
    compare_with_torch(
        torch,
        lambda a, b: F.binary_cross_entropy_with_logits(
            a, b, minigrad.tensor(w, device=device), reduction=reduction,
            pos_weight=minigrad.tensor(pos, device=device)),
        lambda a, b: torch.nn.functional.binary_cross_entropy_with_logits(
            a, b, weight=torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pos)),
        [x, y], device=device, rtol=1e-12, atol=1e-14)
    assert check_gradients(lambda a, b, p: F.binary_cross_entropy_with_logits(
        a, b, w, reduction=reduction, pos_weight=p), [x, y, pos])
    layer = nn.BCEWithLogitsLoss(weight=minigrad.tensor(w))
    ref = torch.nn.BCEWithLogitsLoss(weight=torch.tensor(w))
    np.testing.assert_allclose(layer(minigrad.tensor(x), minigrad.tensor(y)).item(),
                               ref(torch.tensor(x), torch.tensor(y)).item(), rtol=1e-12)


def test_probability_targets_get_an_error_that_names_them():
    """cross_entropy accepts class probabilities of the input's shape, as
    PyTorch; nll_loss takes class indices and says so, instead of asking for
    shape (N,) as if the shapes merely disagreed."""
    logits = minigrad.tensor(np.zeros((4, 3)))
    uniform = minigrad.tensor(np.full((4, 3), 1 / 3))
    assert F.cross_entropy(logits, uniform).item() == pytest.approx(np.log(3))
    with pytest.raises(ValueError, match="class probabilities.*shape \\(4,\\)"):
        F.nll_loss(logits, uniform)
    with pytest.raises(ValueError, match="expected target shape \\(4,\\)"):
        F.cross_entropy(logits, minigrad.tensor(np.zeros((4, 3), dtype=np.int64)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_weight_matches_torch(torch, reduction):
    """PyTorch's per-element weight: "mean" is Σ w·(x - y)² / Σ w; the weight
    gets a gradient too."""
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal((3, 4)), rng.standard_normal((3, 4)),
              rng.uniform(0.1, 2.0, (3, 4))]
    compare_with_torch(
        torch, lambda x, y, w: F.mse_loss(x, y, reduction=reduction, weight=w),
        lambda x, y, w: torch.nn.functional.mse_loss(x, y, reduction=reduction, weight=w),
        arrays)
    with pytest.raises(ValueError, match=r"weight of shape \(4,\) must have the input's"):
        F.mse_loss(minigrad.tensor(arrays[0]), minigrad.tensor(arrays[1]), weight=np.ones(4))
