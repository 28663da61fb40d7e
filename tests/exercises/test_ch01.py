"""Exercises of chapter 1 (autograd): each backward is called on raw arrays."""
import numpy as np
import pytest

import minigrad
from minigrad.autograd import _topological_order, unbroadcast
from minigrad.functions.elementwise import Add, Div, Exp, Log, Mul, Tanh
from minigrad.functions.linalg import MatMul
from minigrad.functions.reduction import Max, Mean, Sum
from minigrad.functions.shape import GetItem, Transpose

from .check import assert_close, forward_backward, rng

A = rng(1).standard_normal((3, 4))
B = rng(2).uniform(0.5, 2.0, (3, 4))
G = rng(3).standard_normal((3, 4))


@pytest.mark.exercise("1.1")
def test_add_passes_the_gradient_to_both_inputs():
    _, (ga, gb) = forward_backward(Add(), [A, B], G)
    assert_close(ga, G, "Add.backward: the gradient for a",
                 [(np.zeros_like(G), "d(a + b)/da = 1: pass g through unchanged")])
    assert_close(gb, G, "Add.backward: the gradient for b")


@pytest.mark.exercise("1.2")
def test_mul_backward_is_the_product_rule():
    _, (ga, gb) = forward_backward(Mul(), [A, B], G)
    assert_close(ga, G * B, "Mul.backward: the gradient for a",
                 [(G * A, "you multiplied g by a; d(a·b)/da = b"), (G, "d(a·b)/da = b, not 1")])
    assert_close(gb, G * A, "Mul.backward: the gradient for b",
                 [(G * B, "you multiplied g by b; d(a·b)/db = a")])


@pytest.mark.exercise("1.3")
def test_div_backward_is_the_quotient_rule():
    _, (ga, gb) = forward_backward(Div(), [A, B], G)
    assert_close(ga, G / B, "Div.backward: the gradient for a", [(G * B, "d(a/b)/da = 1/b")])
    assert_close(gb, -G * A / B**2, "Div.backward: the gradient for b",
                 [(G * A / B**2, "d(a/b)/db = -a/b²: the sign is missing"),
                  (-G / B**2, "d(a/b)/db = -a/b²: the factor a is missing")])


@pytest.mark.exercise("1.4")
def test_exp_backward():
    _, (ga,) = forward_backward(Exp(), [A], G)
    assert_close(ga, G * np.exp(A), "Exp.backward", [(G * A, "d exp(a)/da = exp(a), not a")])


@pytest.mark.exercise("1.4")
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_exp_backward_keeps_the_dtype(dtype):
    a, g = np.array([-1.0, 0.0, 2.0], dtype=dtype), np.array([1.0, 3.0, 0.5], dtype=dtype)
    ga = _backward_in_dtype(Exp(), a, g, "multiply g by the saved output as it is")
    assert_close(ga, g * np.exp(a), "Exp.backward", rtol=1e-3)


def _backward_in_dtype(fn, a, g, how):
    """``fn``'s input gradient for input ``a`` and upstream ``g`` (float32 or
    float16), checked to keep their dtype; ``how`` says what to do instead."""
    fn(minigrad.tensor(a, requires_grad=True))
    ga = fn.backward(g)
    assert ga.dtype == a.dtype, \
        f"{type(fn).__name__}.backward gave a {ga.dtype} gradient for a {a.dtype} input: " \
        f"{how}, without casting it"
    return ga


@pytest.mark.exercise("1.5")
def test_log_backward():
    _, (ga,) = forward_backward(Log(), [B], G)
    assert_close(ga, G / B, "Log.backward",
                 [(G * np.log(B), "d log(a)/da = 1/a, not log(a)"), (G * B, "divide by a")])


@pytest.mark.exercise("1.6")
def test_tanh_backward():
    _, (ga,) = forward_backward(Tanh(), [A], G)
    t = np.tanh(A)
    assert_close(ga, G * (1 - t * t), "Tanh.backward",
                 [(G * (1 - t), "d tanh(a)/da = 1 - tanh(a)², square the tanh"),
                  (G * (1 - A * A), "use tanh(a)² (the saved output), not a²")])


@pytest.mark.exercise("1.5")
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_log_backward_keeps_the_dtype(dtype):
    a, g = np.array([0.5, 1.0, 4.0], dtype=dtype), np.array([1.0, 3.0, 2.0], dtype=dtype)
    ga = _backward_in_dtype(Log(), a, g, "divide g by the saved input as it is")
    assert_close(ga, [2.0, 3.0, 0.5], "Log.backward", rtol=1e-3)


@pytest.mark.exercise("1.6")
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_tanh_backward_keeps_the_dtype(dtype):
    a, g = np.array([-1.0, 0.0, 0.5], dtype=dtype), np.array([1.0, 3.0, 2.0], dtype=dtype)
    ga = _backward_in_dtype(Tanh(), a, g, "use the saved output as it is")
    t = np.tanh(a.astype(np.float64))
    assert_close(ga, g * (1 - t * t), "Tanh.backward", rtol=2e-3, atol=1e-3)


@pytest.mark.exercise("1.7")
@pytest.mark.parametrize("grad_shape, shape", [((2, 3, 4), (3, 1)), ((2, 3, 4), (4,)),
                                               ((3, 4), ()), ((2, 3, 4), (1, 3, 4)),
                                               ((5, 1), (1,))])
def test_unbroadcast_sums_the_broadcast_axes(grad_shape, shape):
    g = rng(4).standard_normal(grad_shape)
    extra = len(grad_shape) - len(shape)
    expected = g.sum(axis=tuple(range(extra)))
    expected = expected.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1),
                            keepdims=True).reshape(shape)
    leading_only = g.sum(axis=tuple(range(extra))) if extra else g
    assert_close(unbroadcast(g, shape), expected, f"unbroadcast of {grad_shape} to {shape}",
                 [(leading_only, "sum the size-1 axes too (with keepdims), not only the "
                                 "leading axes that broadcasting added")])


@pytest.mark.exercise("1.8")
def test_topological_order_puts_each_function_before_its_inputs_creators():
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2.0
    b = a + x
    c = a * b          # a is used twice: its creator must come after both uses
    result = _topological_order(c._creator)
    assert isinstance(result, tuple) and len(result) == 2, \
        "return two things: the list of Functions and the dict of leaf uses"
    order, uses = result
    assert uses == {id(x): [2, None]}, \
        f"x is an input of two Functions (x * 2 and a + x), so uses[id(x)] must be " \
        f"[2, None]; got {uses}"
    assert len(order) == 3 and len({id(f) for f in order}) == 3, \
        f"expected the 3 Functions of the graph once each, got {len(order)}: " \
        f"{[type(f).__name__ for f in order]}"
    position = {id(f): i for i, f in enumerate(order)}
    for fn in order:
        for t in fn.inputs:
            if t._creator is not None:
                assert position[id(fn)] < position[id(t._creator)], \
                    f"{type(fn).__name__} must come before {type(t._creator).__name__}, " \
                    "the creator of its input (reverse topological order)"


@pytest.mark.exercise("1.8")
def test_topological_order_of_a_deep_graph_needs_no_recursion():
    x = minigrad.tensor(0.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1.0
    order, _ = _topological_order(y._creator)
    assert len(order) == 5000, f"expected 5000 Functions, got {len(order)}"
    assert order[0] is y._creator, "the root Function comes first"


@pytest.mark.exercise("1.9")
@pytest.mark.parametrize("axis, keepdims", [(1, False), (-1, True), (None, False), ((0, 2), False)])
def test_sum_backward_spreads_the_gradient_back(axis, keepdims):
    a = rng(5).standard_normal((2, 3, 4))
    out = a.sum(axis=axis, keepdims=keepdims)
    g = rng(6).standard_normal(np.shape(out))
    _, (ga,) = forward_backward(Sum(axis, keepdims), [a], g)
    expected = np.broadcast_to(np.expand_dims(g, axis) if (axis is not None and not keepdims)
                               else g, a.shape)
    assert_close(ga, expected, f"Sum(axis={axis}, keepdims={keepdims}).backward",
                 [(np.ones(a.shape), "multiply by g: every summed entry gets g")])


@pytest.mark.exercise("1.9")
@pytest.mark.parametrize("shape, axis", [((2, 3, 4), [0, -1]), ((), 0), ((), -1)])
def test_sum_backward_takes_the_axes_as_forward_normalized_them(shape, axis):
    # axis may be a list, and on a 0-d input 0 or -1 sums nothing (as in PyTorch):
    # backward uses the normalized axes of forward, not the argument as given.
    a = rng(8).standard_normal(shape)
    out = a.sum(axis=tuple(axis) if isinstance(axis, list) else None if a.ndim == 0 else axis)
    g = rng(9).standard_normal(np.shape(out))
    _, (ga,) = forward_backward(Sum(axis, False), [a], g)
    expected = np.broadcast_to(np.expand_dims(g, (0, 2)) if a.ndim else g, a.shape)
    assert_close(ga, expected, f"Sum(axis={axis}).backward of shape {shape}",
                 [(np.ones(shape), "multiply by g: every summed entry gets g")])


@pytest.mark.exercise("1.10")
def test_mean_backward_keeps_the_dtype():
    dtype = np.float32
    fn = Mean(axis=1)
    a = rng(22).standard_normal((3, 4)).astype(dtype)
    out = fn.forward(a)
    ga = fn.backward(np.ones(out.shape, dtype=dtype))
    assert ga.dtype == dtype, (
        f"Mean.backward returned a {ga.dtype} gradient for a float32 input: "
        "divide by the count as forward keeps it (self.count), not by a float64 number; "
        "a float32 model must get float32 gradients")
    assert_close(ga.astype(np.float64), np.full(a.shape, 0.25), "Mean(axis=1).backward of ones")


@pytest.mark.exercise("1.10")
@pytest.mark.parametrize("axis, keepdims", [(0, False), (None, False), (-1, True)])
def test_mean_backward_divides_by_the_count(axis, keepdims):
    a = rng(7).standard_normal((4, 5))
    g = rng(8).standard_normal(np.shape(a.mean(axis=axis, keepdims=keepdims)))
    _, (ga,) = forward_backward(Mean(axis, keepdims), [a], g)
    count = a.size if axis is None else a.shape[axis]
    expected = np.broadcast_to(np.expand_dims(g, axis) if (axis is not None and not keepdims)
                               else g, a.shape) / count
    assert_close(ga, expected, f"Mean(axis={axis}).backward",
                 [(expected * count, f"divide by the number of averaged entries ({count})")])


@pytest.mark.exercise("1.11")
def test_max_backward_ties_share_the_gradient():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0], [5.0, 5.0, 5.0]])
    g = np.array([6.0, 4.0, 3.0])
    _, (ga,) = forward_backward(Max(axis=1), [a], g)
    expected = np.array([[0, 3, 3], [4, 0, 0], [1, 1, 1]], dtype=float)
    assert_close(ga, expected, "Max(axis=1).backward",
                 [(np.array([[0, 6, 6], [4, 0, 0], [3, 3, 3]], dtype=float),
                   "k tied maxima share g: each gets g / k, not g"),
                  (np.array([[0, 6, 0], [4, 0, 0], [3, 0, 0]], dtype=float),
                   "tied maxima share the gradient evenly, not only the first")])


@pytest.mark.exercise("1.12")
@pytest.mark.parametrize("a_shape, b_shape", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5))])
def test_matmul_backward(a_shape, b_shape):
    a, b = rng(9).standard_normal(a_shape), rng(10).standard_normal(b_shape)
    g = rng(11).standard_normal((a @ b).shape)
    _, (ga, gb) = forward_backward(MatMul(), [a, b], g)
    a2 = a.reshape(-1, a_shape[-1])
    g2 = g.reshape(-1, b_shape[-1])
    assert_close(ga, (g2 @ b.T).reshape(a_shape), "MatMul.backward: the gradient for a",
                 [(np.zeros(a_shape), "dA = G Bᵀ")])
    assert_close(gb, a2.T @ g2, "MatMul.backward: the gradient for b (summed over the "
                 "batch axes that broadcasting added)", [(g2.T @ a2, "dB = Aᵀ G, not Gᵀ A")])


@pytest.mark.exercise("1.13")
@pytest.mark.parametrize("axes", [(1, 2, 0), (2, 0, 1), None])
def test_transpose_backward_applies_the_inverse_permutation(axes):
    a = rng(12).standard_normal((2, 3, 4))
    out = a.transpose(axes)
    g = rng(13).standard_normal(out.shape)
    _, (ga,) = forward_backward(Transpose(axes), [a], g)
    inverse = None if axes is None else tuple(np.argsort(axes))
    hints = [] if axes is None else [(g.transpose(axes),
                                      "you applied the permutation again; backward needs "
                                      "its inverse (argsort of axes)")]
    assert_close(ga, g.transpose(inverse), f"Transpose({axes}).backward", hints)


@pytest.mark.exercise("1.14")
def test_getitem_backward_adds_repeated_indices():
    a = rng(14).standard_normal(5)
    index = np.array([0, 2, 0, 0, 4])
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    _, (ga,) = forward_backward(GetItem(index), [a], g)
    assigned = np.zeros(5)
    assigned[index] = g
    assert_close(ga, [8.0, 0.0, 2.0, 0.0, 5.0], "GetItem([0, 2, 0, 0, 4]).backward",
                 [(assigned, "a repeated index must receive the sum of its gradients "
                             "(scatter-add, np.add.at); assignment keeps only the last")])


@pytest.mark.exercise("1.14")
def test_getitem_backward_with_a_slice():
    a = rng(15).standard_normal((4, 3))
    g = rng(16).standard_normal((2, 3))
    _, (ga,) = forward_backward(GetItem((slice(1, 3),)), [a], g)
    expected = np.zeros((4, 3))
    expected[1:3] = g
    assert_close(ga, expected, "GetItem(1:3).backward")


@pytest.mark.exercise("1.11")
@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, True)])
def test_max_backward_over_other_axes(axis, keepdims):
    a = np.array([[1.0, 7.0], [7.0, 2.0], [3.0, 7.0]])
    out = a.max(axis=axis, keepdims=keepdims)
    g = np.full(np.shape(out), 6.0)
    _, (ga,) = forward_backward(Max(axis, keepdims), [a], g)
    if axis is None:
        expected = np.where(a == 7.0, 2.0, 0.0)            # three tied maxima share 6
    else:
        expected = np.array([[0.0, 3.0], [6.0, 0.0], [0.0, 3.0]])  # column 1: a tie of two
    assert_close(ga, expected, f"Max(axis={axis}, keepdims={keepdims}).backward")


@pytest.mark.exercise("1.13")
@pytest.mark.parametrize("axes", [(-1, 0, 1), (1, -1, 0), (-3, -1, -2)])
def test_transpose_backward_with_negative_axes(axes):
    a = rng(17).standard_normal((2, 3, 4))
    out = a.transpose(axes)
    g = rng(18).standard_normal(out.shape)
    _, (ga,) = forward_backward(Transpose(axes), [a], g)
    inverse = tuple(np.argsort([ax % 3 for ax in axes]))
    assert_close(ga, g.transpose(inverse), f"Transpose({axes}).backward: a negative axis "
                 "counts from the end (-1 is the last axis); normalize the axes (ax % ndim) "
                 "before inverting the permutation")


@pytest.mark.exercise("1.13")
def test_permute_with_negative_axes_backpropagates_to_the_input_shape():
    x = minigrad.tensor(rng(19).standard_normal((2, 3, 4)), requires_grad=True)
    w = minigrad.tensor(rng(20).standard_normal((4, 2, 3)))
    (x.permute(-1, 0, 1) * w).sum().backward()
    assert_close(x.grad, w.numpy().transpose(1, 2, 0),
                 "x.permute(-1, 0, 1): the gradient of x (shape (2, 3, 4))")


@pytest.mark.exercise("1.11")
def test_max_backward_sends_the_gradient_to_a_nan_maximum():
    a = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 1.0]])
    _, (ga,) = forward_backward(Max(axis=1), [a], np.array([2.0, 3.0]))
    assert_close(ga, [[0.0, 2.0, 0.0], [0.0, 3.0, 0.0]], "Max(axis=1).backward with a nan "
                 "in row 0", [(np.array([[0.0, 0.0, 0.0], [0.0, 3.0, 0.0]]),
                               "the max of a row holding nan is nan, and the nan entry is "
                               "the maximum: it takes the gradient (nan == nan is False, so "
                               "test it with isnan)")])


@pytest.mark.exercise("1.11")
def test_max_backward_blocks_an_inf_gradient_with_exact_zeros():
    a = np.array([[1.0, 3.0, 3.0], [4.0, 0.0, 1.0]])
    with np.errstate(invalid="ignore"):
        _, (ga,) = forward_backward(Max(axis=1), [a], np.array([np.inf, -np.inf]))
    assert_close(ga, [[0.0, np.inf, np.inf], [-np.inf, 0.0, 0.0]],
                 "Max(axis=1).backward with an infinite upstream gradient",
                 [(np.array([[np.nan, np.inf, np.inf], [-np.inf, np.nan, np.nan]]),
                   "an entry that is not the maximum gets exactly 0, but inf × 0 is nan: "
                   "set the blocked entries to 0 (np.where) instead of multiplying")])


@pytest.mark.exercise("1.14")
@pytest.mark.parametrize("index", [np.array([0, 2, 0]), (slice(1, 3),)], ids=["repeated", "slice"])
def test_getitem_backward_keeps_the_dtype(index):
    fn = GetItem(index)
    a = rng(21).standard_normal((4, 3)).astype(np.float32)
    out = fn.forward(a)
    ga = fn.backward(np.ones(out.shape, dtype=np.float32))
    assert ga.dtype == np.float32, (
        f"GetItem.backward returned a {ga.dtype} gradient for a float32 input: make the "
        "buffer with the gradient's dtype (xp.zeros(shape, dtype=g.dtype)); a float32 "
        "model must get float32 gradients")
