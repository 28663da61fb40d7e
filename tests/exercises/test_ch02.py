"""Exercises of chapter 2 (layers and losses)."""
import warnings

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.functions.dropout import scaled_mask
from minigrad.functions.elementwise import ReLU, stable_sigmoid
from minigrad.functions.embedding import EmbeddingFunction
from minigrad.functions.linear import LinearFunction
from minigrad.functions.loss import CrossEntropy
from minigrad.functions.norm import normalized_grad
from minigrad.functions.softmax import Softmax, log_softmax_array
from minigrad.nn.normalization import _update_running_stats

from .check import assert_close, forward_backward, rng


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.exercise("2.1")
def test_relu_backward_masks_the_gradient():
    a = np.array([-2.0, -0.0, 0.0, 1.0, 3.0])
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    _, (ga,) = forward_backward(ReLU(), [a], g)
    assert_close(ga, [0.0, 0.0, 0.0, 4.0, 5.0], "ReLU.backward",
                 [(np.array([0.0, 2.0, 3.0, 4.0, 5.0]), "the gradient at 0 is 0 (PyTorch's "
                   "choice): keep g only where a > 0"),
                  (np.array([0.0, 0.0, 0.0, 1.0, 1.0]), "multiply the mask by g")])


@pytest.mark.exercise("2.1")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_relu_backward_passes_the_gradient_at_nan_and_blocks_inf(dtype):
    a = np.array([np.nan, -1.0, 0.0, 2.0], dtype=dtype)
    g = np.array([3.0, np.inf, np.nan, 5.0], dtype=dtype)
    fn = ReLU()
    fn(minigrad.tensor(a, requires_grad=True))
    with np.errstate(all="ignore"):
        ga = fn.backward(g)
    assert ga.dtype == dtype, f"ReLU.backward gave {ga.dtype} for {np.dtype(dtype)} input"
    assert_close(ga, [3.0, 0.0, 0.0, 5.0], "ReLU.backward at a = [nan, -1, 0, 2] with "
                 "g = [3, inf, nan, 5]",
                 [(np.array([0.0, 0.0, 0.0, 5.0]), "a nan input passes its gradient, as "
                   "PyTorch's threshold_backward: block only where the output is 0 "
                   "(nan > 0 is False, but nan != 0 is True)"),
                  (np.array([3.0, np.nan, np.nan, 5.0]), "a blocked entry's gradient is "
                   "exactly 0, also for an inf or nan g: select, do not multiply by a mask")])


@pytest.mark.exercise("2.2")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sigmoid_never_overflows(dtype):
    a = np.array([-1000.0, -30.0, -1.0, 0.0, 1.0, 30.0, 1000.0], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # an overflow warning fails the test
        with np.errstate(over="raise", invalid="raise"):
            try:
                got = stable_sigmoid(a)
            except FloatingPointError as e:
                pytest.fail(f"stable_sigmoid overflowed ({e}): take exp only of -|a|, "
                            "so that every exponent is <= 0", pytrace=False)
    expected = np.array([0.0, 9.357622968840175e-14, 0.2689414213699951, 0.5,
                         0.7310585786300049, 0.9999999999999065, 1.0])
    assert got.dtype == dtype, f"stable_sigmoid returned {got.dtype} for {np.dtype(dtype)} input"
    assert_close(got, expected.astype(dtype), "stable_sigmoid", rtol=1e-6, atol=0)


@pytest.mark.exercise("2.3")
def test_log_softmax_is_stable_for_large_logits():
    a = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0], [0.0, 0.0, 0.0]])
    expected = np.array([[-2.40760596, -1.40760596, -0.40760596],
                         [-0.40760596, -1.40760596, -2.40760596],
                         [-1.09861229, -1.09861229, -1.09861229]])
    with np.errstate(all="ignore"):
        got = log_softmax_array(a, axis=-1)
    assert np.all(np.isfinite(got)), \
        f"log_softmax of large logits gave {got[~np.isfinite(got)][:3]}: subtract the row's " \
        "maximum before exp (log-sum-exp trick)"
    assert_close(got, expected, "log_softmax_array(axis=-1)", rtol=1e-7)
    assert_close(log_softmax_array(a.T, axis=0), expected.T, "log_softmax_array(axis=0)",
                 rtol=1e-7)


@pytest.mark.exercise("2.4")
def test_softmax_backward_couples_the_outputs():
    a, g = rng(1).standard_normal((3, 5)), rng(2).standard_normal((3, 5))
    s = _softmax(a)
    _, (ga,) = forward_backward(Softmax(axis=-1), [a], g)
    assert_close(ga, s * (g - (g * s).sum(axis=-1, keepdims=True)), "Softmax.backward",
                 [(g * s * (1 - s), "s·(1 - s) is only the diagonal of the Jacobian; every "
                                    "output depends on every input through the sum")])


LOGITS = rng(3).standard_normal((4, 3))
TARGET = np.array([0, 2, -100, 1])


def _cross_entropy_numpy():
    logp = np.log(_softmax(LOGITS))
    kept = TARGET != -100
    per = np.where(kept, -logp[np.arange(4), np.where(kept, TARGET, 0)], 0.0)
    return per, kept


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_forward_skips_ignored_positions(reduction):
    per, kept = _cross_entropy_numpy()
    expected = {"mean": per.sum() / kept.sum(), "sum": per.sum(), "none": per}[reduction]
    fn = CrossEntropy(ignore_index=-100, reduction=reduction)
    got = fn(minigrad.tensor(LOGITS), minigrad.tensor(TARGET))
    assert_close(got, expected, f"cross_entropy(reduction={reduction!r})",
                 [(per.sum() / 4, "the mean is over the 3 kept positions, not all 4")])


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_ignores_an_index_that_is_a_class(reduction):
    target = np.array([0, 1, 2, 1])              # ignore_index=1 is also a valid class
    logp = np.log(_softmax(LOGITS))
    per = -logp[[0, 2], [0, 2]]                  # rows 1 and 3 are ignored
    expected = per.mean() if reduction == "mean" else per.sum()
    got = CrossEntropy(ignore_index=1, reduction=reduction)(minigrad.tensor(LOGITS),
                                                            minigrad.tensor(target))
    every = -logp[np.arange(4), target]
    assert_close(got, expected, f"cross_entropy(ignore_index=1, reduction={reduction!r})",
                 [(every.mean() if reduction == "mean" else every.sum(),
                   "ignore_index=1 lies in [0, C): targets equal to it are still ignored, "
                   "even though every target is a valid class")])


@pytest.mark.exercise("2.6")      # its backward is 2.6's; the forward's shortcut is 2.5's
def test_cross_entropy_none_with_nothing_ignored_keeps_one_loss_per_position():
    target = np.array([0, 2, 1, 1])              # every position kept
    g = np.array([1.0, 2.0, -1.0, 0.5])          # one upstream gradient per position
    fn = CrossEntropy(reduction="none")
    got = fn(minigrad.tensor(LOGITS, requires_grad=True), minigrad.tensor(target))
    logp = np.log(_softmax(LOGITS))
    assert_close(got, -logp[np.arange(4), target], "cross_entropy(reduction='none')")
    try:
        grad, _ = fn.backward(g)
    except ValueError as e:
        pytest.fail(f"CrossEntropy(reduction='none').backward with nothing ignored raised "
                    f"{e}: with reduction='none' each row has its own weight g[i], so "
                    "forward must not take the shortcut for 'nothing ignored' (keep=None), "
                    "which is for a single mean or sum", pytrace=False)
    onehot = np.eye(3)[target]
    assert_close(grad, (_softmax(LOGITS) - onehot) * g[:, None],
                 "CrossEntropy(reduction='none').backward with nothing ignored")


@pytest.mark.exercise("2.10")
def test_normalization_backward_keeps_float32():
    x = rng(14).standard_normal((5, 3)).astype(np.float32)
    dxhat = rng(15).standard_normal((5, 3)).astype(np.float32)
    mean = x.mean(axis=0, keepdims=True)
    inv_std = (1 / np.sqrt(x.var(axis=0, keepdims=True) + 1e-5)).astype(np.float32)
    xhat = (x - mean) * inv_std
    got = normalized_grad(dxhat, xhat, inv_std, (0,))
    assert got.dtype == np.float32, \
        f"normalized_grad gave {got.dtype} for float32 inputs: keep the means in the " \
        "inputs' dtype (a float64 gradient doubles the memory of a float32 model)"
    x64, d64 = xhat.astype(np.float64), dxhat.astype(np.float64)
    expected = inv_std * (d64 - d64.mean(axis=0) - x64 * (d64 * x64).mean(axis=0))
    assert_close(got, expected, "normalized_grad in float32", rtol=1e-4, atol=1e-5)


@pytest.mark.exercise("2.6")
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_backward_is_softmax_minus_one_hot(reduction):
    _, kept = _cross_entropy_numpy()
    fn = CrossEntropy(ignore_index=-100, reduction=reduction)
    fn(minigrad.tensor(LOGITS, requires_grad=True), minigrad.tensor(TARGET))
    grad, _ = fn.backward(np.asarray(1.0))
    onehot = np.zeros((4, 3))
    onehot[np.arange(4)[kept], TARGET[kept]] = 1
    expected = (_softmax(LOGITS) - onehot) * kept[:, None]
    if reduction == "mean":
        expected /= kept.sum()
    assert_close(grad, expected, f"CrossEntropy(reduction={reduction!r}).backward",
                 [(expected * kept.sum() if reduction == "mean" else expected / 4,
                   "the mean's gradient divides by the number of kept positions (3)"),
                  ((_softmax(LOGITS) - onehot) / (kept.sum() if reduction == "mean" else 1),
                   "an ignored position gets no gradient: zero its row")])


@pytest.mark.exercise("2.7")
def test_linear_backward():
    x, w, b = rng(4).standard_normal((2, 5, 3)), rng(5).standard_normal((4, 3)), rng(6).standard_normal(4)
    g = rng(7).standard_normal((2, 5, 4))
    out, (gx, gw, gb) = forward_backward(LinearFunction(), [x, w, b], g)
    g2, x2 = g.reshape(-1, 4), x.reshape(-1, 3)
    assert_close(out, x @ w.T + b, "LinearFunction.forward")
    assert_close(gx, g @ w, "LinearFunction.backward: dx")
    assert_close(gw, g2.T @ x2, "LinearFunction.backward: dW (shape (out, in) = gᵀ x)",
                 [((g2.T @ x2).T, "dW must have W's shape (out, in): gᵀ x, not xᵀ g")])
    assert_close(gb, g2.sum(axis=0), "LinearFunction.backward: db (summed over every row)",
                 [(g.sum(axis=1), "sum db over every leading axis, the batch axes included")])


@pytest.mark.exercise("2.8")
def test_inverted_dropout_mask():
    u = np.array([0.1, 0.5, 0.3, 0.9, 0.4])
    got = scaled_mask(u, 0.4, np.float32)
    assert got.dtype == np.float32, f"the mask must have the requested dtype, got {got.dtype}"
    assert_close(got, [0.0, 1 / 0.6, 0.0, 1 / 0.6, 1 / 0.6], "scaled_mask(u, p=0.4)",
                 [(np.array([0.0, 1.0, 0.0, 1.0, 1.0]), "kept entries are scaled by "
                   "1/(1 - p), so that the expected output equals the input"),
                  (np.array([1 / 0.6, 0.0, 1 / 0.6, 0.0, 0.0]), "keep where u >= p "
                   "(probability 1 - p), drop where u < p")], rtol=1e-6)


@pytest.mark.exercise("2.8")
def test_inverted_dropout_mask_compares_the_uniforms_as_given():
    u = np.array([0.39995, 0.5, 0.1])          # 0.39995 < p, but rounds to 0.4 in float16
    got = scaled_mask(u, 0.4, np.float16)
    assert got.dtype == np.float16, f"the mask must have the requested dtype, got {got.dtype}"
    assert_close(got, [0.0, 1 / 0.6, 0.0], "scaled_mask(u, p=0.4, float16)",
                 [(np.array([1 / 0.6, 1 / 0.6, 0.0]), "compare u >= p on the uniforms as "
                   "given, then cast the mask: in float16 a u just below p rounds to p")],
                 rtol=1e-3)


@pytest.mark.exercise("2.9")
def test_named_parameters_walks_the_tree_in_order():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(np.ones(2))
            self.b = nn.Parameter(np.zeros(2))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(np.ones(1))
            self.first = Block()
            self.second = Block()
            self.second.w = self.first.w           # shared: listed once

    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["scale", "first.w", "first.b", "second.b"], \
        f"named_parameters gave {names}; expected dotted names in registration order, a " \
        "parameter shared by two modules once: ['scale', 'first.w', 'first.b', 'second.b']"
    assert [p for _, p in net.named_parameters()][1] is net.first.w


@pytest.mark.exercise("2.9")
def test_named_buffers_and_members_registered_as_none():
    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(np.ones(2))
            self.register_parameter("bias", None)          # a layer without bias
            self.register_buffer("running", minigrad.tensor(np.zeros(2)))
            self.register_buffer("unused", None)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = Layer()

    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["layer.weight"], \
        f"named_parameters gave {names}; a member registered as None is skipped: " \
        "['layer.weight']"
    buffers = list(net.named_buffers())
    assert [name for name, _ in buffers] == ["layer.running"], \
        f"named_buffers gave {[name for name, _ in buffers]}; walk the registry asked " \
        "for (_buffers here), skipping None: ['layer.running']"
    assert buffers[0][1] is net.layer.running


@pytest.mark.exercise("2.10")
def test_normalization_backward_matches_finite_differences():
    x = rng(8).standard_normal((6, 3))
    dxhat = rng(9).standard_normal((6, 3))
    eps = 1e-5

    def xhat_of(x):
        mean = x.mean(axis=0, keepdims=True)
        return (x - mean) / np.sqrt(x.var(axis=0, keepdims=True) + eps)
    mean = x.mean(axis=0, keepdims=True)
    inv_std = 1 / np.sqrt(x.var(axis=0, keepdims=True) + eps)
    got = normalized_grad(dxhat, (x - mean) * inv_std, inv_std, (0,))
    numeric = np.zeros_like(x)
    h = 1e-6
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += h
        xm[idx] -= h
        numeric[idx] = ((dxhat * xhat_of(xp)).sum() - (dxhat * xhat_of(xm)).sum()) / (2 * h)
    assert_close(got, numeric, "normalized_grad", rtol=1e-5, atol=1e-7,
                 hints=[(inv_std * dxhat, "μ and σ depend on every x of the batch: subtract "
                         "mean(dx̂) and x̂·mean(dx̂·x̂)")])


@pytest.mark.exercise("2.11")
def test_running_statistics_move_by_momentum():
    running_mean = minigrad.tensor(np.array([0.0, 1.0]))
    running_var = minigrad.tensor(np.array([1.0, 1.0]))
    _update_running_stats(running_mean, running_var, np.array([2.0, 3.0]),
                          np.array([5.0, 9.0]), 0.1)
    assert_close(running_mean, [0.2, 1.2], "running_mean after one update",
                 [(np.array([1.8, 2.8]), "momentum (0.1) is the weight of the *new* "
                                         "statistic: (1 - m)·running + m·new")])
    assert_close(running_var, [1.4, 1.8], "running_var after one update")


@pytest.mark.exercise("2.11")
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_running_statistics_are_updated_in_place(dtype):
    running_mean = minigrad.tensor(np.array([0.0, 1.0], dtype=dtype))
    running_var = minigrad.tensor(np.array([1.0, 1.0], dtype=dtype))
    mean_buffer, var_buffer = running_mean.data, running_var.data
    _update_running_stats(running_mean, running_var, np.array([2.0, 3.0]),
                          np.array([5.0, 9.0]), 0.5)
    for name, tensor, buffer in [("running_mean", running_mean, mean_buffer),
                                 ("running_var", running_var, var_buffer)]:
        assert tensor.data is buffer and tensor.dtype == dtype, \
            f"{name} became a new array of dtype {tensor.dtype} (was {np.dtype(dtype)}): " \
            f"write the blend into the buffer ({name}.data[...] = ...), which keeps its " \
            "dtype (float16 buffers are blended in float32) and every view of it"
    assert_close(running_mean, [1.0, 2.0], "running_mean after one update (momentum 0.5)")
    assert_close(running_var, [3.0, 5.0], "running_var after one update (momentum 0.5)")


@pytest.mark.exercise("2.12")
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_embedding_backward_keeps_the_dtype(dtype):
    weight = np.ones((4, 2), dtype=dtype)
    ids = np.array([1, 3, 1])
    g = np.arange(6, dtype=dtype).reshape(3, 2)
    fn = EmbeddingFunction(ids)
    fn(minigrad.tensor(weight, requires_grad=True))
    gw = fn.backward(g)
    assert gw.dtype == dtype, \
        f"EmbeddingFunction.backward gave a {gw.dtype} gradient for a {np.dtype(dtype)} " \
        "table: create the zero table in the gradient's dtype (dtype=g.dtype)"
    assert_close(gw, [[0, 0], [4, 6], [0, 0], [2, 3]], "EmbeddingFunction.backward")


@pytest.mark.exercise("2.12")
def test_embedding_backward_scatter_adds_rows():
    weight = rng(10).standard_normal((5, 3))
    ids = np.array([[0, 2], [0, 4]])
    g = np.arange(12, dtype=float).reshape(2, 2, 3)
    _, (gw,) = forward_backward(EmbeddingFunction(ids), [weight], g)
    expected = np.zeros((5, 3))
    np.add.at(expected, ids.reshape(-1), g.reshape(-1, 3))
    assigned = np.zeros((5, 3))
    assigned[ids.reshape(-1)] = g.reshape(-1, 3)
    assert_close(gw, expected, "EmbeddingFunction.backward",
                 [(assigned, "id 0 is used twice: its row must receive the sum of both "
                             "gradients (scatter-add)")])


@pytest.mark.exercise("2.5")
def test_cross_entropy_label_smoothing():
    eps = 0.1
    logp = np.log(_softmax(LOGITS))
    kept = TARGET != -100
    per = (1 - eps) * -logp[np.arange(4), np.where(kept, TARGET, 0)] - eps / 3 * logp.sum(axis=1)
    expected = per[kept].mean()
    got = CrossEntropy(ignore_index=-100, label_smoothing=eps)(minigrad.tensor(LOGITS),
                                                               minigrad.tensor(TARGET))
    assert_close(got, expected, "cross_entropy(label_smoothing=0.1)",
                 [((-logp[np.arange(4), np.where(kept, TARGET, 0)])[kept].mean(),
                   "label smoothing mixes in ε/C·Σ_c(-log p_c): (1 - ε)·(-log p_y) + "
                   "(ε/C)·Σ_c(-log p_c)")])


@pytest.mark.exercise("2.7")
def test_linear_backward_without_bias():
    x, w = rng(11).standard_normal((5, 3)), rng(12).standard_normal((4, 3))
    g = rng(13).standard_normal((5, 4))
    _, grads = forward_backward(LinearFunction(), [x, w], g)
    assert len(grads) == 2, f"without a bias backward returns 2 gradients, got {len(grads)}"
    assert_close(grads[0], g @ w, "LinearFunction.backward without bias: dx")
    assert_close(grads[1], g.T @ x, "LinearFunction.backward without bias: dW")


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("shape, axis", [((3, 0), -1), ((0, 4), -1), ((0, 4), 0), ((2, 0, 3), 1)])
def test_log_softmax_of_an_empty_array_is_empty_and_silent(shape, axis):
    a = np.zeros(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # log(0) of an empty row's sum warns
        try:
            got = log_softmax_array(a, axis=axis)
        except (RuntimeWarning, ValueError) as e:
            pytest.fail(f"log_softmax_array of an empty array of shape {shape} (axis={axis}) "
                        f"raised {type(e).__name__}: {e}; an empty input has an empty "
                        "log-softmax: return it (a copy) before reducing", pytrace=False)
    assert got.shape == shape, f"log_softmax_array of shape {shape} gave shape {got.shape}"
