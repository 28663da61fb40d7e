"""A gradient blocked by a mask is exactly 0, even when the upstream gradient
is inf or nan (``inf * 0`` would be nan).  Every backward that zeroes part of
its input's gradient is checked with an inf/nan upstream gradient, against
PyTorch where PyTorch selects too, and against the pinned value where PyTorch
multiplies (dropout, abs at 0, amax)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from minigrad import nn, optim

INF, NAN = np.inf, np.nan


def _grad(fn, x, upstream, device="cpu"):
    t = minigrad.tensor(np.asarray(x, dtype=np.float64), device=device, requires_grad=True)
    out = fn(t)
    out.backward(minigrad.tensor(np.asarray(upstream, dtype=np.float64), device=device))
    return t.grad.numpy()


def _torch_grad(torch, fn, x, upstream):
    t = torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
    fn(t).backward(torch.tensor(np.asarray(upstream, dtype=np.float64)))
    return t.grad.numpy()


CASES = [  # name, minigrad fn, torch fn (or None), input, upstream
    ("relu", lambda t: t.relu(), lambda t: t.relu(), [-1.0, 0.0, 4.0, NAN], [INF, NAN, 1.0, 1.0]),
    ("clip", lambda t: t.clip(0.0, 1.0), lambda t: t.clamp(0.0, 1.0),
     [-1.0, 0.5, 2.0], [INF, INF, NAN]),
    ("clip low only", lambda t: t.clip(0.0, None), lambda t: t.clamp(min=0.0),
     [-1.0, 0.5], [NAN, 2.0]),
    ("maximum", lambda t: minigrad.maximum(t, minigrad.tensor([2.0, 2.0, 1.0], dtype="float64",
                                                              device=t.device)),
     lambda t: t.maximum(t.new_tensor([2.0, 2.0, 1.0])), [1.0, 2.0, NAN], [INF, INF, 1.0]),
    ("minimum", lambda t: minigrad.minimum(t, minigrad.tensor([0.0, 2.0, 1.0], dtype="float64",
                                                              device=t.device)),
     lambda t: t.minimum(t.new_tensor([0.0, 2.0, 1.0])), [1.0, 2.0, 0.5], [NAN, INF, 1.0]),
    ("max over all axes", lambda t: t.max(), lambda t: t.max(), [[1.0, 3.0, 3.0]], INF),
    ("min over all axes", lambda t: t.min(), lambda t: t.min(), [[1.0, -3.0, 2.0]], NAN),
    ("where", lambda t: minigrad.where(t.data > 0, t, minigrad.zeros(3, dtype="float64",
                                                                      device=t.device)),
     lambda t: t.where(t > 0, t.new_zeros(3)), [-1.0, 2.0, -3.0], [INF, 1.0, NAN]),
    ("max_pool2d", lambda t: F.max_pool2d(t, 2), lambda t: __import__("torch").nn.functional
     .max_pool2d(t, 2), [[[[1.0, 2.0], [3.0, 4.0]]]], [[[[INF]]]]),
    ("embedding padding row", lambda w: F.embedding(np.array([0, 1]), w, padding_idx=0),
     lambda w: __import__("torch").nn.functional.embedding(
         __import__("torch").tensor([0, 1]), w, padding_idx=0),
     np.ones((3, 2)), np.full((2, 2), INF)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_blocked_gradient_is_zero_like_pytorch(case, torch):
    _, mg_fn, th_fn, x, up = case
    mine = _grad(mg_fn, x, up)
    ref = _torch_grad(torch, th_fn, x, up)
    np.testing.assert_array_equal(mine, ref)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_blocked_gradient_on_device(case, device):
    """The same selects on every device; the blocked entries are exactly 0."""
    _, mg_fn, _, x, up = case
    cpu = _grad(mg_fn, x, up)
    np.testing.assert_array_equal(_grad(mg_fn, x, up, device), cpu)


def test_amax_multiplies_by_its_mask_as_pytorch(torch):
    # amax's backward is g / count * (a == max), PyTorch's: 0 * inf = nan at the
    # other entries; max() (below) blocks instead, as PyTorch's max() does
    for rows, up in (([[1.0, 3.0, 3.0]], [INF]), ([[1.0, NAN, 2.0]], [1.0])):
        g = _grad(lambda t: t.amax(dim=1), rows, up)
        x = torch.tensor(rows, dtype=torch.float64, requires_grad=True)
        x.amax(dim=1).backward(torch.tensor(up, dtype=torch.float64))
        np.testing.assert_array_equal(g, x.grad.numpy())
    np.testing.assert_array_equal(_grad(lambda t: t.max(), [1.0, 3.0, 3.0], INF),
                                  [0.0, INF, INF])


def test_amax_gradient_at_stated_values():
    """The same rule without PyTorch: ties share g; off the maximum 0 · g (nan for
    an inf or nan g); a row whose maximum is nan is nan everywhere (0 / 0)."""
    np.testing.assert_array_equal(_grad(lambda t: t.amax(dim=1), [[1.0, 3.0, 3.0]], [2.0]),
                                  [[0.0, 1.0, 1.0]])
    np.testing.assert_array_equal(_grad(lambda t: t.amax(dim=1), [[1.0, 3.0, 3.0]], [INF]),
                                  [[NAN, INF, INF]])
    np.testing.assert_array_equal(_grad(lambda t: t.amin(dim=1), [[1.0, NAN, 2.0]], [1.0]),
                                  [[NAN, NAN, NAN]])
    np.testing.assert_array_equal(_grad(lambda t: t.amax(dim=0, keepdim=True),
                                        [[1.0], [4.0]], [[NAN]]), [[NAN], [NAN]])


def test_abs_multiplies_by_the_sign_as_pytorch(torch):
    # the subgradient at 0 is 0, and 0 * inf = nan there, as in PyTorch
    x = torch.tensor([0.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    x.abs().backward(torch.tensor([INF, INF, NAN], dtype=torch.float64))
    np.testing.assert_array_equal(_grad(lambda t: t.abs(), [0.0, -2.0, 3.0], [INF, INF, NAN]),
                                  x.grad.numpy())
    np.testing.assert_array_equal(_grad(lambda t: t.abs(), [0.0, -2.0], [1.0, 1.0]), [0.0, -1.0])


def test_dropout_dropped_entries_get_zero():
    x = minigrad.tensor(np.ones(64), requires_grad=True)
    y = F.dropout(x, 0.5, training=True)
    y.backward(minigrad.tensor(np.full(64, INF)))
    kept = y.numpy() != 0
    assert 0 < kept.sum() < 64
    np.testing.assert_array_equal(x.grad.numpy()[~kept], 0.0)
    np.testing.assert_array_equal(x.grad.numpy()[kept], INF)


def test_ignored_positions_with_nonfinite_upstream(torch):
    logits = np.random.default_rng(0).standard_normal((3, 4))
    target = np.array([-100, 1, -100])
    up = np.array([INF, 1.0, NAN])
    t = minigrad.tensor(logits, requires_grad=True)
    F.cross_entropy(t, target, reduction="none").backward(minigrad.tensor(up))
    tt = torch.tensor(logits, requires_grad=True)
    torch.nn.functional.cross_entropy(tt, torch.tensor(target), reduction="none").backward(
        torch.tensor(up))
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(t.grad.numpy()[[0, 2]], 0.0)


def test_sqrt_of_relu(torch):
    x = minigrad.tensor([-1.0, 0.0, 4.0], requires_grad=True)
    x.relu().sqrt().sum().backward()
    tx = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)
    tx.relu().sqrt().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.25])


def test_sqrt_of_relu_through_the_accumulator_updates():
    """The window is finite now, so it is applied, not skipped."""
    w = nn.Parameter(np.array([-1.0, 0.0, 4.0]))
    opt = optim.SGD([w], lr=1.0)
    acc = optim.GradientAccumulator(opt, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            acc.backward(w.relu().sqrt().sum())
            updated = acc.step()
    assert updated and acc.skipped_windows == 0
    np.testing.assert_array_equal(w.numpy(), [-1.0, 0.0, 3.75])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("upstream", [[2.0, 3.0, 4.0, 5.0], [INF, -INF, NAN, 5.0]],
                         ids=["finite", "inf-nan"])
@pytest.mark.parametrize("op", ["relu", "clip"])
def test_select_keeps_dtype_and_warns_not(op, upstream, dtype, device):
    """Both ways of selecting (a multiply for a finite gradient on the CPU, a
    where otherwise): blocked entries exactly 0, passed ones unchanged, the
    gradient's dtype kept, and no floating-point warning."""
    fn = {"relu": lambda t: t.relu(), "clip": lambda t: t.clip(-1.0, 1.0)}[op]
    x = minigrad.tensor(np.array([-2.0, 0.0, 0.5, 3.0], dtype=dtype), device=device,
                        requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(x).backward(minigrad.tensor(np.array(upstream, dtype=dtype), device=device))
    grad = x.grad.numpy()
    assert grad.dtype == dtype
    passes = {"relu": [False, False, True, True], "clip": [False, True, True, False]}[op]
    factor = [1, 1, 1, 1]
    with np.errstate(invalid="ignore"):        # -inf * 0 where the mask blocks anyway
        expected = np.where(passes, np.array(upstream, dtype=dtype) * factor, 0)
    np.testing.assert_array_equal(grad, expected.astype(dtype))


def test_all_finite_is_exact_or_safely_false():
    """``all_finite``: True only when no entry is inf or nan; a false False (squares
    that overflow) only sends the caller to its exact ``where`` path."""
    from minigrad.functions.elementwise import all_finite, select_where_nonzero
    for dtype in (np.float16, np.float32, np.float64):
        a = np.arange(12, dtype=dtype).reshape(3, 4)
        assert all_finite(a) and all_finite(a[:, ::2]) and all_finite(a[:0])
        for bad in (np.inf, -np.inf, np.nan):
            b = a.copy()
            b[2, 3] = bad
            assert not all_finite(b)
    big = np.full(4, 1e30, np.float32)            # finite, but its squares overflow
    out = np.array([0.0, 1.0, 0.0, 2.0], np.float32)
    with warnings.catch_warnings():               # NumPy may warn of the dot's overflow
        warnings.simplefilter("ignore", RuntimeWarning)
        assert not all_finite(big)
        np.testing.assert_array_equal(select_where_nonzero(out, big), big * [0, 1, 0, 1])
    g = np.array([np.inf, np.nan, -np.inf, 3.0], np.float32)
    np.testing.assert_array_equal(select_where_nonzero(out, g), [0, np.nan, 0, 3.0])
