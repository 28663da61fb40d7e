"""clip_grad_norm_: the global norm, the scale, parity with torch."""
import math

import numpy as np
import pytest

import minigrad
from minigrad.optim import clip_grad_norm_


def _params(grads, device="cpu"):
    params = []
    for g in grads:
        p = minigrad.tensor(np.zeros_like(g), device=device, requires_grad=True)
        p.grad = minigrad.tensor(g, device=device)
        params.append(p)
    return params


def test_norm_and_scale_by_hand(device, float64):
    params = _params([np.array([3.0, 0.0]), np.array([[4.0]])], device)
    total = clip_grad_norm_(params, max_norm=1.0)
    assert isinstance(total, float) and total == 5.0
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(params[0].grad.numpy(), [3.0 * scale, 0.0], rtol=1e-15)
    np.testing.assert_allclose(params[1].grad.numpy(), [[4.0 * scale]], rtol=1e-15)


def test_small_gradients_are_left_alone(float64):
    params = _params([np.array([0.3, -0.4])])
    assert clip_grad_norm_(params, max_norm=1.0) == pytest.approx(0.5, rel=1e-15)
    np.testing.assert_array_equal(params[0].grad.numpy(), [0.3, -0.4])


def test_inf_and_other_norms(float64):
    params = _params([np.array([1.0, -6.0]), np.array([2.0])])
    assert clip_grad_norm_(params, 100.0, norm_type=float("inf")) == 6.0
    assert clip_grad_norm_(params, 100.0, norm_type=1) == 9.0
    assert clip_grad_norm_(params, 3.0, norm_type=1) == 9.0
    np.testing.assert_allclose(params[0].grad.numpy(), [1.0 / 3, -2.0], rtol=1e-6)


def test_no_gradients_and_single_tensor():
    p = minigrad.tensor([1.0], requires_grad=True)
    assert clip_grad_norm_([p], 1.0) == 0.0
    p.grad = minigrad.tensor([-2.0])
    assert clip_grad_norm_(p, 1.0) == 2.0


def test_direction_is_kept(float64):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    params = _params(grads)
    total = clip_grad_norm_(params, 0.5)
    flat = np.concatenate([g.ravel() for g in grads])
    assert total == pytest.approx(np.linalg.norm(flat), rel=1e-14)
    clipped = np.concatenate([p.grad.numpy().ravel() for p in params])
    np.testing.assert_allclose(clipped, flat * (0.5 / (total + 1e-6)), rtol=1e-14)
    assert np.linalg.norm(clipped) == pytest.approx(0.5, rel=1e-5)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.1, 100.0])
def test_parity_with_torch(torch, float64, norm_type, max_norm):
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal((4, 3)), rng.standard_normal(7)]
    ours = _params(grads)
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for t, g in zip(theirs, grads):
        t.grad = torch.tensor(g)
    total = clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert total == pytest.approx(float(t_total), rel=1e-13)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-13)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.1, 100.0])
def test_the_clipping_formula_without_torch(float64, norm_type, max_norm):
    """What test_parity_with_torch checks, against the formula in float64 (it
    runs where PyTorch is not installed, the student's and the grader's case)."""
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal((4, 3)), rng.standard_normal(7)]
    params = _params(grads)
    flat = np.abs(np.concatenate([g.ravel() for g in grads]))
    want = flat.max() if math.isinf(norm_type) else (flat ** norm_type).sum() ** (1 / norm_type)
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert total == pytest.approx(want, rel=1e-13)
    factor = min(1.0, max_norm / (want + 1e-6))
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * factor, rtol=1e-13)


def test_float16_gradients_are_clipped_without_overflow():
    """test_float16_gradients_are_clipped_like_torch without PyTorch: the norm
    of [300, 400] in float16 is 500 (summed in float32), not inf."""
    p = minigrad.tensor(np.zeros(2, dtype=np.float16), requires_grad=True)
    p.grad = minigrad.tensor(np.array([300.0, 400.0], dtype=np.float16))
    assert clip_grad_norm_([p], 1.0) == pytest.approx(500.0, rel=1e-3)
    assert p.grad.dtype == np.float16
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-3)


def test_non_finite(float64):
    params = _params([np.array([1.0, np.inf])])
    with pytest.raises(RuntimeError, match="total norm of order 2.0 of the gradients is inf"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_(_params([np.array([np.inf])]), 1.0))
    assert math.isnan(clip_grad_norm_(_params([np.array([np.nan, 1.0])]), 1.0,
                                      norm_type=float("inf")))


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(max_norm=-1.0), ValueError, "max_norm must be >= 0"),
    (dict(max_norm="1"), TypeError, "max_norm must be a real number"),
    (dict(max_norm=1.0, norm_type=0), ValueError, "norm_type must be a positive"),
    (dict(max_norm=1.0, norm_type="fro"), ValueError, "norm_type"),
])
def test_bad_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        clip_grad_norm_(_params([np.ones(2)]), **kwargs)


def test_float16_gradients_are_clipped_like_torch(torch):
    """A float16 gradient of norm 500 (squares above the float16 range) is
    clipped to norm 1, not multiplied by max_norm / inf = 0."""
    g = np.array([300.0, 400.0], dtype=np.float16)
    p = minigrad.tensor(np.zeros(2, dtype=np.float16), requires_grad=True)
    p.grad = minigrad.tensor(g)
    tp = torch.zeros(2, dtype=torch.float16, requires_grad=True)
    tp.grad = torch.tensor(g)
    total = clip_grad_norm_([p], 1.0)
    want = torch.nn.utils.clip_grad_norm_([tp], 1.0)
    assert total == pytest.approx(float(want), rel=1e-3)
    assert p.grad.dtype == np.float16
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-3)
