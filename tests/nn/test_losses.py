"""Losses: cross_entropy, nll_loss, mse_loss, binary_cross_entropy_with_logits."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients, compare_with_torch

REDUCTIONS = ["mean", "sum", "none"]


def _ce_case(rng, n, c, extra=(), ignore_some=True):
    logits = rng.standard_normal((n, c, *extra))
    target = rng.integers(0, c, size=(n, *extra))
    if ignore_some:
        target.reshape(-1)[::3] = -100
    return logits, target


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 4), c=st.integers(1, 4), extra=st.lists(st.integers(1, 3), max_size=2),
       reduction=st.sampled_from(REDUCTIONS), smoothing=st.sampled_from([0.0, 0.1, 0.5]))
def test_cross_entropy_gradcheck(n, c, extra, reduction, smoothing):
    logits, target = _ce_case(np.random.default_rng(n * 10 + c), n, c, tuple(extra))
    if reduction == "mean" and (target == -100).all():
        target.reshape(-1)[0] = 0
    assert check_gradients(lambda z: F.cross_entropy(z, target, reduction=reduction,
                                                     label_smoothing=smoothing), [logits])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("extra", [(), (3,), (2, 2)])
def test_cross_entropy_parity(torch, reduction, smoothing, extra, device):
    logits, target = _ce_case(np.random.default_rng(0), 5, 4, extra)
    compare_with_torch(
        torch,
        lambda z: F.cross_entropy(z, target, reduction=reduction, label_smoothing=smoothing),
        lambda z: torch.nn.functional.cross_entropy(z, torch.tensor(target),
                                                    reduction=reduction,
                                                    label_smoothing=smoothing),
        [logits], device=device, rtol=1e-12, atol=1e-14)


def test_cross_entropy_minus_inf_logits(torch):
    logits = np.array([[0.0, -np.inf, 2.0], [-np.inf, 1.0, -np.inf]])
    target = np.array([0, 1])
    out = compare_with_torch(torch, lambda z: F.cross_entropy(z, target),
                             lambda z: torch.nn.functional.cross_entropy(
                                 z, torch.tensor(target)), [logits], rtol=1e-12, atol=1e-14)
    assert np.isfinite(out.item())
    z = minigrad.tensor(logits, requires_grad=True)
    F.cross_entropy(z, target).backward()
    assert np.isfinite(z.grad.numpy()).all()
    finite = np.array([[0.0, -1e300, 2.0], [-1e300, 1.0, -1e300]])   # -inf ≈ very negative
    check_gradients(lambda t: F.cross_entropy(t, target), [finite])


def test_cross_entropy_all_ignored_is_nan(torch):
    z = minigrad.tensor(np.zeros((2, 3)), requires_grad=True)
    target = np.array([-100, -100])
    loss = F.cross_entropy(z, target)
    assert np.isnan(loss.item())
    ref = torch.nn.functional.cross_entropy(torch.zeros(2, 3), torch.tensor(target))
    assert torch.isnan(ref)
    assert F.cross_entropy(z, target, reduction="sum").item() == 0.0


def test_cross_entropy_mean_over_kept_targets():
    logits = minigrad.tensor(np.zeros((4, 2)))
    loss = F.cross_entropy(logits, [0, -100, 1, -100])
    np.testing.assert_allclose(loss.item(), np.log(2))      # 2·log 2 / 2 kept
    loss = F.cross_entropy(logits, [0, 7, 1, 7], ignore_index=7)
    np.testing.assert_allclose(loss.item(), np.log(2))


def test_cross_entropy_keeps_float32():
    z = minigrad.randn(3, 4, requires_grad=True)
    loss = F.cross_entropy(z, [0, 1, 2])
    assert loss.dtype == np.float32
    loss.backward()
    assert z.grad.dtype == np.float32


def test_cross_entropy_errors():
    z = minigrad.randn(3, 4)
    with pytest.raises(ValueError, match=r"target 4 is out of bounds.*C=4"):
        F.cross_entropy(z, [0, 4, 1])
    with pytest.raises(ValueError, match=r"target -1 is out of bounds.*\[0, 4\)"):
        F.cross_entropy(z, [0, -1, 1])
    with pytest.raises(ValueError, match=r"target of shape \(2,\).*expected target shape \(3,\)"):
        F.cross_entropy(z, [0, 1])
    with pytest.raises(TypeError, match="integer"):
        F.cross_entropy(z, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="reduction must be"):
        F.cross_entropy(z, [0, 1, 2], reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(z, [0, 1, 2], label_smoothing=1.5)
    with pytest.raises(ValueError, match="reduction"):
        nn.CrossEntropyLoss(reduction="max")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_parity_and_gradcheck(torch, reduction):
    logp, target = _ce_case(np.random.default_rng(4), 4, 3, (2,))
    compare_with_torch(torch, lambda z: F.nll_loss(z, target, reduction=reduction),
                       lambda z: torch.nn.functional.nll_loss(z, torch.tensor(target),
                                                              reduction=reduction),
                       [logp], rtol=1e-12, atol=1e-14)
    assert check_gradients(lambda z: F.nll_loss(z, target, reduction=reduction), [logp])
    with pytest.raises(ValueError, match="target 3 is out of bounds"):
        F.nll_loss(minigrad.randn(2, 3), [3, 0])


def test_nll_of_log_softmax_equals_cross_entropy():
    z = minigrad.randn(5, 4, dtype=np.float64)
    t = [0, 3, 1, -100, 2]
    np.testing.assert_allclose(F.nll_loss(F.log_softmax(z), t).item(),
                               F.cross_entropy(z, t).item(), rtol=1e-15)


MSE_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3), ())]


@pytest.mark.parametrize("shapes", MSE_SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss_broadcasting(torch, shapes, reduction):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # both warn when shapes broadcast
        compare_with_torch(torch, lambda x, y: F.mse_loss(x, y, reduction=reduction),
                           lambda x, y: torch.nn.functional.mse_loss(x, y,
                                                                     reduction=reduction),
                           [a, b], rtol=1e-12, atol=1e-14)
        assert check_gradients(lambda x, y: F.mse_loss(x, y, reduction=reduction), [a, b])


def test_mse_loss_warns_when_shapes_broadcast():
    x = minigrad.randn(4, 1, requires_grad=True)
    with pytest.warns(UserWarning, match=r"target shape \(4,\) differs from input shape \(4, 1\)"):
        loss = F.mse_loss(x, minigrad.zeros(4), reduction="none")
    assert loss.shape == (4, 4)                  # the silent bug the warning is about
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(x, minigrad.zeros(4, 1))      # same shapes: no warning


def test_mse_loss_module_and_errors():
    x = minigrad.randn(3, requires_grad=True)
    loss = nn.MSELoss()(x, minigrad.zeros(3))
    np.testing.assert_allclose(loss.item(), (x.numpy() ** 2).mean(), rtol=1e-6)
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(x, x, reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("with_pos_weight", [False, True])
def test_bce_with_logits_parity(torch, reduction, with_pos_weight, device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3)) * 4
    x[0] = [-40.0, 40.0, 0.0]
    y = rng.uniform(0, 1, (4, 3))
    y[0] = [1.0, 0.0, 0.5]
    pw = rng.uniform(0.5, 3, 3) if with_pos_weight else None

    def ours(a, b):
        weight = None if pw is None else minigrad.tensor(pw, device=device)
        return F.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=weight)

    def theirs(a, b):      # PyTorch gives no gradient for pos_weight
        weight = None if pw is None else torch.tensor(pw)
        return torch.nn.functional.binary_cross_entropy_with_logits(
            a, b, reduction=reduction, pos_weight=weight)

    compare_with_torch(torch, ours, theirs, [x, y], device=device, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("with_pos_weight", [False, True])
def test_bce_with_logits_gradcheck_at_40(with_pos_weight):
    x = np.array([[-40.0, 40.0, 0.3], [-2.0, 1.5, 39.0]])
    y = np.array([[1.0, 0.0, 0.4], [0.2, 0.9, 1.0]])
    arrays = [x, y] + ([np.array([0.5, 2.0, 1.5])] if with_pos_weight else [])
    assert check_gradients(lambda *a: F.binary_cross_entropy_with_logits(
        a[0], a[1], reduction="sum", pos_weight=a[2] if len(a) > 2 else None), arrays)


def test_bce_with_logits_finite_and_exact_at_extremes():
    x = minigrad.tensor([-40.0, 40.0, -1000.0, 1000.0], dtype=np.float64)
    y = minigrad.tensor([1.0, 0.0, 0.0, 1.0], dtype=np.float64)
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none").numpy()
    np.testing.assert_allclose(loss, [40.0 + np.log1p(np.exp(-40.0)),
                                      40.0 + np.log1p(np.exp(-40.0)),
                                      np.exp(-1000.0), 0.0], rtol=1e-15)


def test_loss_modules(torch):
    rng = np.random.default_rng(7)
    z = rng.standard_normal((3, 4))
    t = np.array([1, -100, 3])
    ours = nn.CrossEntropyLoss(label_smoothing=0.1)(minigrad.tensor(z), t).item()
    theirs = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(torch.tensor(z),
                                                            torch.tensor(t)).item()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    pw = minigrad.tensor([2.0, 1.0, 0.5, 1.0], dtype=np.float64)
    y = rng.uniform(0, 1, (3, 4))
    ours = nn.BCEWithLogitsLoss(pos_weight=pw)(minigrad.tensor(z), minigrad.tensor(y)).item()
    theirs = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw.numpy()))(
        torch.tensor(z), torch.tensor(y)).item()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    lp = np.log(np.full((2, 3), 1 / 3))
    np.testing.assert_allclose(nn.NLLLoss()(minigrad.tensor(lp), [0, 2]).item(), np.log(3))


def test_cross_entropy_rejects_integer_logits():
    # an int64 "loss" would be silently wrong (and has no gradient)
    with pytest.raises(TypeError, match="cross_entropy: .*floating.*int64"):
        F.cross_entropy(minigrad.tensor([[1, 2]]), minigrad.tensor([0]))
    with pytest.raises(TypeError, match="nll_loss: .*floating"):
        F.nll_loss(minigrad.tensor([[1, 2]]), minigrad.tensor([0]))


def test_mse_loss_shape_error_names_the_loss():
    with pytest.raises(ValueError, match=r"mse_loss: .*\(4, 3\).*\(4, 2\)"):
        F.mse_loss(minigrad.randn(4, 3), minigrad.randn(4, 2))


def test_bce_with_logits_shape_error_names_the_loss():
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits: .*\(4,\).*\(3,\)"):
        F.binary_cross_entropy_with_logits(minigrad.randn(4), minigrad.rand(3))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64", ">i4", "<i8"])
def test_target_bounds_for_every_integer_dtype(dtype):
    """The class-index check (one reduction over the indices viewed as unsigned)
    for every integer dtype, byte order and a strided target."""
    z = minigrad.randn(4, 5)
    target = np.array([0, 4, 9, 2, 3, 1, 1, 0], dtype=dtype)[::2]     # [0, 9, 3, 1]
    with pytest.raises(ValueError, match=r"target 9 is out of bounds.*C=5"):
        F.cross_entropy(z, target)
    target = np.array([0, 4, 2, 1], dtype=dtype)
    assert np.isfinite(F.cross_entropy(z, target).item())
    assert np.isfinite(F.nll_loss(z.log_softmax(axis=1), target).item())
    if np.dtype(dtype).kind == "i":
        with pytest.raises(ValueError, match=r"target -1 is out of bounds"):
            F.cross_entropy(z, np.array([0, -1, 2, 1], dtype=dtype))
        with pytest.raises(ValueError, match=r"target -3 is out of bounds"):
            F.nll_loss(z.log_softmax(axis=1), np.array([0, 1, -3, 1], dtype=dtype))
        # ignore_index outside [0, C) is not an error: those rows are skipped
        loss = F.cross_entropy(z, np.array([0, -100, 2, 1], dtype=np.int64))
        assert np.isfinite(loss.item())
