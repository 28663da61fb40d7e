"""Edge values, NaN conventions and refusals, as PyTorch 2.13 has them.

Each test states the expected value itself (it passes without PyTorch) and,
where PyTorch is installed, compares values and gradients with it in float64.
The deliberate differences are listed in docs/api/pytorch_differences.md.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from minigrad import nn

try:
    import torch
except ImportError:  # the student's normal case: the stated values still check
    torch = None

NAN = float("nan")


def _mg(values, grad=True, dtype=np.float64):
    return minigrad.tensor(np.asarray(values, dtype=dtype), requires_grad=grad)


def _th(values, grad=True, dtype=None):
    return torch.tensor(np.asarray(values, dtype=dtype or np.float64), requires_grad=grad)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-12, atol=1e-12, equal_nan=True)


# ------------------------------------------------------------- silent wrong results
def test_masked_fill_sends_the_gradient_to_a_tensor_value():
    x, v = _mg([0.0, 1.0, 2.0, 3.0]), _mg(2.5)
    mask = minigrad.tensor([True, False, True, False])
    y = x.masked_fill(mask, v)
    y.backward(minigrad.tensor([1.0, 2.0, 3.0, 4.0]))
    _close(y.numpy(), [2.5, 1.0, 2.5, 3.0])
    _close(v.grad.numpy(), 4.0)                     # 1 + 3: the filled positions
    _close(x.grad.numpy(), [0.0, 2.0, 0.0, 4.0])
    if torch is not None:
        tx, tv = _th([0.0, 1.0, 2.0, 3.0]), _th(2.5)
        ty = tx.masked_fill(torch.tensor([True, False, True, False]), tv)
        ty.backward(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64))
        _close(v.grad.numpy(), tv.grad.numpy())
        _close(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("dim", [None, 1])
def test_std_of_a_constant_slice_has_gradient_zero(dim):
    data = [[3.0, 3.0, 3.0], [1.0, 2.0, 4.0]]
    x = _mg(data)
    (x.std() if dim is None else x.std(dim).sum()).backward()
    assert np.isfinite(x.grad.numpy()).all()
    if dim == 1:
        _close(x.grad.numpy()[0], [0.0, 0.0, 0.0])
    if torch is not None:
        tx = _th(data)
        (tx.std() if dim is None else tx.std(dim).sum()).backward()
        _close(x.grad.numpy(), tx.grad.numpy())
    c = _mg([2.0, 2.0, 2.0])
    c.std().backward()
    _close(c.grad.numpy(), [0.0, 0.0, 0.0])


def test_var_with_no_degrees_of_freedom_warns():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        out = _mg([1.0, 2.0]).var(correction=2)
    assert out.item() == np.inf


def test_topk_and_descending_sort_count_nan_as_the_largest():
    x = _mg([NAN, 1.0, 2.0], grad=False)
    values, indices = x.topk(1)
    assert np.isnan(values.item()) and indices.tolist() == [0]
    v, i = _mg([1.0, NAN, np.inf, 2.0], grad=False).sort(descending=True)
    assert i.tolist() == [1, 2, 3, 0]
    if torch is not None:
        assert torch.tensor([NAN, 1.0, 2.0]).topk(1).indices.tolist() == [0]
        assert torch.tensor([1.0, NAN, np.inf, 2.0]).sort(descending=True).indices.tolist() \
            == [1, 2, 3, 0]


def test_index_select_refuses_negative_indices():
    with pytest.raises(IndexError, match="index -1 is out of range"):
        _mg([[1.0, 2.0], [3.0, 4.0]]).index_select(0, minigrad.tensor([-1]))
    if torch is not None:
        with pytest.raises(IndexError):
            torch.ones(2, 2).index_select(0, torch.tensor([-1]))


@pytest.mark.parametrize("src", [None, "a"])
def test_scatter_refuses_a_source_that_is_not_a_number(src):
    with pytest.raises(TypeError, match="src must be a Tensor or a number"):
        _mg([1.0, 2.0]).scatter(0, minigrad.tensor([0]), src)


@pytest.mark.parametrize("kwargs, error", [
    (dict(size=(-1, 3)), ValueError), (dict(scale_factor=-1.0), ValueError),
    (dict(size=(3.5, 3)), TypeError), (dict(size=(0, 3)), ValueError),
    (dict(scale_factor=0.0), ValueError)])
def test_interpolate_refuses_sizes_pytorch_refuses(kwargs, error):
    image = _mg(np.ones((1, 1, 4, 4)))
    with pytest.raises(error, match="interpolate"):
        F.interpolate(image, **kwargs)
    if torch is not None:
        with pytest.raises((RuntimeError, ValueError, TypeError)):
            torch.nn.functional.interpolate(torch.ones(1, 1, 4, 4), **kwargs)


def test_interpolate_of_a_uint8_image_is_not_zero():
    image = np.arange(16, dtype=np.uint8).reshape(1, 1, 4, 4) * 10
    out = F.interpolate(minigrad.tensor(image), size=(6, 6), mode="bilinear")
    assert out.dtype == np.uint8 and out.numpy().max() == 150 and out.numpy()[0, 0, 0, 0] == 0
    if torch is not None:
        ref = torch.nn.functional.interpolate(torch.tensor(image), size=(6, 6),
                                              mode="bilinear").numpy()
        assert np.abs(ref.astype(int) - out.numpy().astype(int)).max() <= 1


def test_linspace_computes_in_the_output_dtype_and_truncates_integers():
    assert minigrad.linspace(5, -5, 20, dtype=np.int32).tolist() == \
        [5, 4, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, -1, -1, -2, -2, -3, -3, -4, -5]
    start = minigrad.tensor(np.float32(0.1))
    out = minigrad.linspace(start, 1.0, 4, dtype=np.float64)
    assert out.dtype == np.float64 and out.numpy()[0] == float(np.float32(0.1))
    assert minigrad.linspace(-2.0, 50.0, 1).tolist() == [-2.0]
    if torch is not None:
        assert torch.linspace(5, -5, 20, dtype=torch.int32).tolist() == \
            minigrad.linspace(5, -5, 20, dtype=np.int32).tolist()
        ref = torch.linspace(torch.tensor(0.1), 1.0, 4, dtype=torch.float64).numpy()
        _close(out.numpy(), ref)
        # float32: within one unit in the last place (PyTorch's vectorized lanes
        # add the step in another order)
        np.testing.assert_allclose(minigrad.linspace(-3.3, 7.1, 13, dtype=np.float32).numpy(),
                                   torch.linspace(-3.3, 7.1, 13).numpy(), rtol=2.5e-7)


def test_gather_and_index_select_of_a_0d_input_have_pytorchs_shapes():
    x = _mg(5.0)
    y = x.gather(0, minigrad.tensor([0]))
    assert y.shape == (1,)
    y.backward(minigrad.tensor([3.0]))
    _close(x.grad.numpy(), 3.0)
    z = _mg(5.0).index_select(0, minigrad.tensor([0]))
    assert z.shape == ()
    if torch is not None:
        assert tuple(torch.tensor(5.0).gather(0, torch.tensor([0])).shape) == (1,)
        assert tuple(torch.tensor(5.0).index_select(0, torch.tensor([0])).shape) == ()


def test_float32_to_a_numpy_float64_power_stays_float32():
    x = minigrad.tensor(np.array([1.0, 4.0], dtype=np.float32))
    assert (x ** np.float64(0.5)).dtype == np.float32
    assert x.pow(np.float64(0.5)).tolist() == [1.0, 2.0]


# ------------------------------------------------------------ NaN conventions
@pytest.mark.parametrize("name, expected_grad", [
    ("sign", 0.0), ("abs", 0.0), ("elu", 1.0), ("hardtanh", 1.0), ("relu6", 1.0),
    ("div_trunc", 0.0), ("relu", 1.0), ("leaky_relu", 0.01)])
def test_gradients_at_nan_follow_pytorch(name, expected_grad):
    fns = {"sign": lambda t: t.sign(), "abs": lambda t: t.abs(),
           "elu": F.elu, "hardtanh": F.hardtanh, "relu6": F.relu6,
           "div_trunc": lambda t: t.div(0.3, rounding_mode="trunc"),
           "relu": F.relu, "leaky_relu": F.leaky_relu}
    x = _mg([NAN, 0.5, -2.0])
    y = fns[name](x)
    if y.requires_grad:
        y.backward(minigrad.tensor([1.0, 1.0, 1.0]))
    grad = np.zeros(3) if x.grad is None else x.grad.numpy()
    _close(grad[0], expected_grad)
    if name == "sign":
        _close(y.numpy(), [0.0, 1.0, -1.0])
    if torch is not None:
        tfns = {"sign": torch.sign, "abs": torch.abs,
                "elu": torch.nn.functional.elu, "hardtanh": torch.nn.functional.hardtanh,
                "relu6": torch.nn.functional.relu6,
                "div_trunc": lambda t: torch.div(t, 0.3, rounding_mode="trunc"),
                "relu": torch.relu, "leaky_relu": torch.nn.functional.leaky_relu}
        tx = _th([NAN, 0.5, -2.0])
        ty = tfns[name](tx)
        ty.backward(torch.ones(3, dtype=torch.float64))
        _close(y.numpy(), ty.detach().numpy())
        _close(grad, tx.grad.numpy())


def test_remainder_divisor_gradient_uses_the_computed_floor():
    a, b = _mg(-0.25), _mg(-0.001)
    (a % b).backward()
    _close(b.grad.numpy(), -249.0)      # -0.25 // -0.001 is 249 (floor(a / b) rounds to 250)
    if torch is not None:
        ta, tb = _th(-0.25), _th(-0.001)
        torch.remainder(ta, tb).backward()
        _close(b.grad.numpy(), tb.grad.numpy())


# ------------------------------------------------------------ integer arithmetic
def test_integer_to_a_negative_power_is_refused_clearly():
    with pytest.raises(ValueError, match="integers to negative integer powers"):
        minigrad.tensor([2, 3]) ** -1


def test_uint8_plus_an_out_of_range_int_wraps_as_pytorch():
    x = minigrad.tensor(np.array([1, 44], dtype=np.uint8))
    assert (x + 300).tolist() == [45, 88] and (x + 300).dtype == np.uint8
    assert (x + (-1)).tolist() == [0, 43]
    assert (x * 300).tolist() == [44, 144]
    if torch is not None:
        tx = torch.tensor([1, 44], dtype=torch.uint8)
        assert (tx + 300).tolist() == (x + 300).tolist()
        assert (tx * 300).tolist() == (x * 300).tolist()


# --------------------------------------------------------------- wrong refusals
def test_flatten_and_unflatten_of_empty_tensors():
    assert minigrad.zeros((1, 0, 4)).flatten(0, 0).shape == (1, 0, 4)
    assert minigrad.zeros((0, 3)).unflatten(1, (1, -1)).shape == (0, 1, 3)
    assert minigrad.zeros((2, 6)).unflatten(-1, (-1, 2)).shape == (2, 3, 2)
    with pytest.raises(ValueError, match="unflatten"):
        minigrad.zeros((2, 6)).unflatten(1, (4, -1))


def test_gpt_without_bias_has_no_layernorm_bias():
    from minigrad.models.gpt import GPT, GPTConfig
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8,
                          bias=False))
    assert not [n for n, _ in model.named_parameters() if n.endswith("bias")]
    assert model.transformer.ln_f.bias is None if hasattr(model, "transformer") else True


def test_reductions_of_a_0d_tensor_over_dim_0():
    x = _mg(2.0)
    assert x.sum(0).item() == 2.0 and x.mean(-1).item() == 2.0
    assert F.softmax(x, 0).item() == 1.0 and x.logsumexp(0).item() == 2.0


# --------------------------------------------------------------- unclear crashes
X = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("call, error, words", [
    (lambda x: x.take_along_dim(minigrad.tensor(np.zeros((4, 1), np.int64)), 1),
     ValueError, "take_along_dim: indices of shape"),
    (lambda x: F.pad(x, (1.5, 1)), TypeError, "pad must be a tuple of ints"),
    (lambda x: F.pad(x, (1, 1), value="x"), TypeError, "value must be a number"),
    (lambda x: nn.Conv1d(2, 2, 0), ValueError, "kernel_size must be >= 1"),
    (lambda x: x.topk(1.5, 1), TypeError, "k must be an int"),
    (lambda x: x.repeat(-1, 1), ValueError, "repeats must be non-negative"),
    (lambda x: x.scatter(1, minigrad.tensor([[0]]), "a"), TypeError, "src must be"),
    (lambda x: minigrad.stack([x, x], 5), IndexError, "stack: dimension 5"),
    (lambda x: x.roll(1, 5), IndexError, "roll: dimension 5"),
    (lambda x: x.unsqueeze(5), IndexError, "unsqueeze: dimension 5"),
    (lambda x: minigrad.arange(0, 3, 0), ValueError, "step must be nonzero"),
    (lambda x: minigrad.eye(-1), ValueError, "eye: n must be"),
    (lambda x: F.leaky_relu(x, "a"), TypeError, "negative_slope must be a number"),
])
def test_unclear_crashes_now_name_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call(_mg(X))


def test_scaled_dot_product_attention_over_zero_keys_is_zero():
    q = _mg(np.ones((1, 2, 4)))
    out = F.scaled_dot_product_attention(q, _mg(np.ones((1, 0, 4))), _mg(np.ones((1, 0, 4))))
    assert out.shape == (1, 2, 4) and not out.numpy().any()
    if torch is not None:
        ref = torch.nn.functional.scaled_dot_product_attention(
            torch.ones(1, 2, 4), torch.ones(1, 0, 4), torch.ones(1, 0, 4))
        _close(out.numpy(), ref.numpy())


def test_backward_through_edge_shapes():
    a, s = _mg(5.0), _mg(3.0)
    (a.scatter(0, minigrad.tensor(0), s) * 2).backward()
    _close(a.grad.numpy(), 0.0)
    _close(s.grad.numpy(), 2.0)
    z = _mg(np.zeros((2, 0)))
    z.prod(1).sum().backward()
    assert z.grad.shape == (2, 0)
    x = _mg(X)
    x.clamp(minigrad.tensor(np.array(2, dtype=np.int32))).sum().backward()
    _close(x.grad.numpy(), (X >= 2).astype(float))


def test_conv_transpose2d_with_groups_and_output_padding_differentiates():
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((2, 4, 3, 3)), rng.standard_normal((4, 1, 2, 2))
    kw = dict(groups=2, dilation=4, stride=(3, 2), output_padding=(2, 3))
    x, w = _mg(xv), _mg(wv)
    out = F.conv_transpose2d(x, w, **kw)
    g = rng.standard_normal(out.shape)
    out.backward(minigrad.tensor(g))
    # d<out, g>/dw by the adjoint: the forward is linear in w
    _close((out.numpy() * g).sum(), (w.grad.numpy() * wv).sum())
    if torch is not None:
        tx, tw = _th(xv), _th(wv)
        to = torch.nn.functional.conv_transpose2d(tx, tw, **kw)
        to.backward(torch.tensor(g))
        _close(out.numpy(), to.detach().numpy())
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


# --------------------------------------------------- accepted where PyTorch refuses
@pytest.mark.parametrize("call, error", [
    (lambda x: F.pad(x.reshape(1, 1, 3, 4), (1, 1, 1, 1), mode="reflect", value=2.0),
     ValueError),
    (lambda x: x.cumsum(None), TypeError),
    (lambda x: F.embedding(minigrad.tensor([0, 1]), _mg(np.ones((5, 3))), padding_idx=7),
     ValueError),
    (lambda x: F.embedding(minigrad.tensor([0, 1]), _mg(np.ones(5))), ValueError),
    (lambda x: x.sort(descending="yes"), TypeError),
    (lambda x: x.sum(1, keepdim="x"), TypeError),
    (lambda x: x.max(1, keepdim="x"), TypeError),
    (lambda x: x.amax(1, keepdim="x"), TypeError),
    (lambda x: x.scatter_reduce(1, minigrad.tensor([[0]]), x, "sum", include_self="no"),
     TypeError),
    (lambda x: x.topk(1, largest=None), TypeError),
    (lambda x: F.scaled_dot_product_attention(x, x, x, enable_gqa=None), TypeError),
    (lambda x: x.topk(True), TypeError),
    (lambda x: x.tril(1.5), TypeError),
    (lambda x: x.var(unbiased=True, correction=1), TypeError),
    (lambda x: x.scatter_add(1, minigrad.tensor([[0]]), _mg([[1.0]], dtype=np.float32)),
     TypeError),
    (lambda x: F.pad(x.reshape(1, 1, 3, 4), (6, 6), mode="circular"), ValueError),
    (lambda x: F.pad(x.reshape(1, 1, 3, 4), (1, 1, 1, 1, 1, 1, 1, 1), mode="replicate"),
     ValueError),
    (lambda x: minigrad.where(minigrad.tensor([1.0, 0.0]), x[0, :2], x[1, :2]), TypeError),
    (lambda x: minigrad.arange(0, 3, -1), ValueError),
    (lambda x: x.roll((1, 2), (0,)), ValueError),
])
def test_inputs_pytorch_refuses_are_refused(call, error):
    with pytest.raises(error):
        call(_mg(X))


@pytest.mark.parametrize("call", [
    lambda v: v.sort(stable="x"), lambda v: v.argsort(stable="x"),
    lambda v: v.argmax(1, keepdim="x"), lambda v: v.all(1, keepdim="x"),
    lambda v: v.norm(dim=1, keepdim="x"),
    lambda v: minigrad.linalg.vector_norm(v, 2, 1, "x"),
    lambda v: F.interpolate(v.reshape(1, 1, 3, 4), scale_factor=2.0, mode="bilinear",
                            align_corners="x"),
    lambda v: F.dropout(v, 0.5, training="x"),
    lambda v: F.max_pool2d(v.reshape(1, 1, 3, 4), 2, ceil_mode="x"),
    lambda v: F.avg_pool2d(v.reshape(1, 1, 3, 4), 2, count_include_pad="x"),
    lambda v: F.batch_norm(v, None, None, training="x"),
    lambda v: F.one_hot(minigrad.tensor([0]), 1.5),
    lambda v: v.roll(1.5, 0), lambda v: v.diagonal(1.5),
    lambda v: minigrad.full((1.5,), 1.0), lambda v: minigrad.zeros(1.5),
    lambda v: minigrad.randn(1.5),
])
def test_flags_and_sizes_of_the_wrong_type_are_refused(call):
    with pytest.raises(TypeError, match="must be|must hold|expected"):
        call(_mg(X))


def test_negative_sizes_are_refused_naming_the_size():
    with pytest.raises(ValueError, match="ones: negative dimension -1"):
        minigrad.ones(-1)


def test_clamp_with_a_constant_integer_tensor_bound_keeps_float32():
    x = minigrad.tensor(np.array([-2.0, 0.5, 3.0], dtype=np.float32), requires_grad=True)
    y = x.clamp(minigrad.tensor(np.array(0, dtype=np.int32)),
                minigrad.tensor(np.array(1, dtype=np.int32)))
    assert y.dtype == np.float32 and y.tolist() == [0.0, 0.5, 1.0]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
