"""PyTorch's type promotion, floating functions of integers, the layer dtype
policy, and the pow family at 0, each compared with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from minigrad import nn

def _t(value, dtype):
    return minigrad.tensor(np.asarray(value, dtype=dtype))


PAIRS = [  # (a value, a dtype, b value, b dtype): arrays with dims and 0-d
    ([1.0, 2.0], "float32", 1.5, "float64"),
    ([1.0, 2.0], "float16", 1.5, "float64"),
    ([1, 2], "int64", 1.5, "float64"),
    ([1, 2], "int32", 1, "int64"),
    ([1, 2], "uint8", 3, "int64"),
    ([1.0, 2.0], "float32", [1.0, 3.0], "float64"),
    ([1, 2], "int64", [1.0, 3.0], "float16"),
    ([1, 2], "uint8", [1, 3], "int8"),
    ([True, False], "bool", [1, 3], "int32"),
    ([True, False], "bool", [True, True], "bool"),
    (1.0, "float64", 1.0, "float32"),
    ([1, 2], "int64", [2, 4], "int64"),
]
OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
       "div": lambda a, b: a / b, "maximum": None, "where": None}


CASES = [(pair, op) for pair in PAIRS for op in OPS
         if not (op == "sub" and "bool" in (pair[1], pair[3]))]   # no bool subtraction


@pytest.mark.parametrize("pair, op", CASES, ids=[
    f"{op}-{p[1]}{np.ndim(p[0])}d-{p[3]}{np.ndim(p[2])}d" for p, op in CASES])
def test_binary_promotion_matches_torch(pair, op, torch):
    av, ad, bv, bd = pair
    a, b = _t(av, ad), _t(bv, bd)
    ta = torch.tensor(np.asarray(av, dtype=ad))
    tb = torch.tensor(np.asarray(bv, dtype=bd))
    if op == "maximum":
        out, ref = minigrad.maximum(a, b), torch.maximum(ta, tb)
    elif op == "where":
        cond = np.array(True)
        out, ref = minigrad.where(cond, a, b), torch.where(torch.tensor(True), ta, tb)
    else:
        out, ref = OPS[op](a, b), OPS[op](ta, tb)
    assert out.dtype == np.dtype(str(ref.dtype).replace("torch.", ""))
    np.testing.assert_allclose(out.numpy().astype(np.float64),
                               ref.numpy().astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("tensor_dtype, number, expected", [
    ("float32", 2.5, "float32"), ("float32", np.float64(2.5), "float32"),
    ("float16", 2, "float16"), ("int64", 2.5, "float32"), ("int32", 2, "int32"),
    ("bool", 1, "int64"), ("bool", 2.5, "float32"), ("uint8", 3, "uint8"),
])
def test_python_numbers_do_not_promote_within_a_category(tensor_dtype, number, expected,
                                                         torch):
    t = _t([1, 0], tensor_dtype)
    assert (t * number).dtype == np.dtype(expected)
    assert (number * t).dtype == np.dtype(expected)
    ref = torch.tensor(np.array([1, 0], dtype=tensor_dtype)) * number
    assert str(ref.dtype) == f"torch.{expected}"


def test_float32_times_0d_float64_stays_float32_with_gradient():
    w = minigrad.tensor([1.0, 2.0], requires_grad=True)
    s = minigrad.tensor(np.float64(3.0), dtype="float64", requires_grad=True)
    y = w * s
    assert y.dtype == np.float32
    y.sum().backward()
    assert w.grad.dtype == np.float32 and s.grad.dtype == np.float64
    assert s.grad.item() == 3.0


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "mean"])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "bool"])
def test_floating_functions_of_integers_use_the_default_dtype(name, dtype, torch):
    values = np.array([12, 1, 4], dtype=dtype) if dtype != "bool" else np.array([True, False])
    out = getattr(minigrad.tensor(values), name)()
    ref = getattr(torch.tensor(values).float() if name == "mean" else torch.tensor(values),
                  name)()
    assert out.dtype == np.float32 and ref.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize("fn", [lambda t: t.softmax(), lambda t: t.log_softmax(),
                                lambda t: F.gelu(t), lambda t: t.var()])
def test_other_floating_functions_of_integers(fn):
    # PyTorch refuses integers here; minigrad computes them in the default dtype
    # like exp and log (NumPy would give float64).
    assert fn(minigrad.tensor([1, 2, 3])).dtype == np.float32


def test_uint8_exp_is_finite():
    out = minigrad.tensor(np.array([12], dtype=np.uint8)).exp()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), [162754.8], rtol=1e-6)


def test_default_dtype_float64_applies_to_integer_functions(float64):
    assert minigrad.tensor([1, 4]).sqrt().dtype == np.float64
    assert (minigrad.tensor([1, 4]) / minigrad.tensor([2, 2])).dtype == np.float64


def test_integer_powers_and_clamp(torch):
    i = minigrad.tensor([4, 9])
    assert (i ** 2).dtype == np.int64 and (i ** 2).tolist() == [16, 81]
    assert (i ** 0.5).dtype == np.float32 and (i ** 0.5).tolist() == [2.0, 3.0]
    assert (2 ** i).dtype == np.int64 and (2.5 ** i).dtype == np.float32
    assert i.clip(0.5, None).dtype == np.float32
    assert minigrad.tensor([-3, 2]).relu().dtype == np.int64
    with pytest.raises(ValueError, match="negative integer power"):
        i ** -1
    with pytest.raises(RuntimeError, match="negative integer powers"):
        torch.tensor([4]) ** -1


# ------------------------------------------------------------------- layer policy
def _layers():
    return {
        "Linear": (nn.Linear(4, 3), (2, 4)),
        "Linear without bias": (nn.Linear(4, 3, bias=False), (2, 4)),
        "Conv2d": (nn.Conv2d(2, 3, 1), (1, 2, 3, 3)),
        "LayerNorm": (nn.LayerNorm(4), (2, 4)),
        "BatchNorm1d": (nn.BatchNorm1d(4), (3, 4)),
        "BatchNorm1d eval": (nn.BatchNorm1d(4).eval(), (3, 4)),
        "BatchNorm1d without affine": (nn.BatchNorm1d(4, affine=False), (3, 4)),
        "GroupNorm": (nn.GroupNorm(2, 4), (2, 4, 3)),
    }


@pytest.mark.parametrize("name", list(_layers()))
@pytest.mark.parametrize("input_dtype", ["float64", "int64", "float16"])
def test_layer_rejects_an_input_of_another_dtype(name, input_dtype):
    layer, shape = _layers()[name]
    x = minigrad.tensor(np.ones(shape, dtype=input_dtype))
    with pytest.raises(TypeError, match=f"input dtype {input_dtype} differs from .* "
                                        "dtype float32"):
        layer(x)
    y = layer(x.to(np.float32))
    assert y.dtype == np.float32


def test_pytorch_raises_for_the_same_layers(torch):
    x = torch.ones(3, 4, dtype=torch.float64)
    for layer in (torch.nn.Linear(4, 3), torch.nn.LayerNorm(4), torch.nn.BatchNorm1d(4)):
        with pytest.raises(RuntimeError, match="dtype|datatype"):
            layer(x)


def test_layers_without_parameters_follow_the_input():
    x = minigrad.tensor(np.ones((2, 4)), dtype="float64")
    assert nn.LayerNorm(4, elementwise_affine=False)(x).dtype == np.float64
    assert F.layer_norm(x, (4,)).dtype == np.float64


def test_embedding_returns_the_weights_dtype():
    layer = nn.Embedding(5, 3)
    assert layer(minigrad.tensor([1, 2])).dtype == np.float32


# ------------------------------------------------------------------- pow at 0
POW_CASES = [(0.0, 0.0), (0.0, 2.0), (0.0, -1.0), (0.0, 0.5), (0.0, -0.5), (0.0, 1.0),
             (-2.0, 3.0), (-2.0, 2.0), (-2.0, 0.5), (2.0, 0.0), (-0.0, 0.0)]


@pytest.mark.parametrize("a, b", POW_CASES)
def test_pow_with_tensor_exponent_at_zero_matches_torch(a, b, torch):
    ta = minigrad.tensor(np.array(a), requires_grad=True)
    tb = minigrad.tensor(np.array(b), requires_grad=True)
    out = ta ** tb
    out.backward()
    ra = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    rb = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    ref = ra ** rb
    ref.backward()
    np.testing.assert_array_equal([out.item(), ta.grad.item(), tb.grad.item()],
                                  [ref.item(), ra.grad.item(), rb.grad.item()])


def test_zero_to_the_zero_exponent_gradient_is_zero():
    a = minigrad.tensor(np.array([0.0]), requires_grad=True)
    b = minigrad.tensor(np.array([0.0]), requires_grad=True)
    (a ** b).sum().backward()
    assert b.grad.item() == 0.0 and a.grad.item() == 0.0


@pytest.mark.parametrize("c", [0, 1, 2, 3, -1, 0.5, -0.5, 2.5])
def test_pow_with_number_exponent_at_zero_and_negative_base(c, torch):
    values = np.array([0.0, -2.0, 3.0])
    up = np.array([np.inf, 1.0, 2.0])
    t = minigrad.tensor(values, requires_grad=True)
    out = t ** c
    out.backward(minigrad.tensor(up))
    r = torch.tensor(values, requires_grad=True)
    ref = r ** c
    ref.backward(torch.tensor(up))
    # NumPy and PyTorch may round 3**0.5 one unit apart
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-15, atol=0)
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-15, atol=0)


@pytest.mark.parametrize("base", [0.0, 2.0, -2.0])
def test_number_to_a_tensor_power_matches_torch(base, torch):
    b = np.array([0.0, -1.0, 0.5, 2.0])
    t = minigrad.tensor(b, requires_grad=True)
    out = base ** t
    out.sum().backward()
    r = torch.tensor(b, requires_grad=True)
    ref = base ** r
    ref.sum().backward()
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(t.grad.numpy(), r.grad.numpy())


@pytest.mark.parametrize("join", ["concatenate", "stack"])
def test_concatenate_and_stack_promote_like_torch(join, torch):
    a = minigrad.tensor(np.array([1, 2]))
    b = minigrad.tensor(np.array([0.5, 1.5], dtype=np.float32), requires_grad=True)
    out = getattr(minigrad, join)([a, b])
    ref = getattr(torch, "cat" if join == "concatenate" else "stack")(
        [torch.tensor([1, 2]), torch.tensor([0.5, 1.5])])
    assert out.dtype == np.float32 and ref.dtype == torch.float32
    out.sum().backward()
    assert b.grad.dtype == np.float32


@pytest.mark.parametrize("scalar", [np.float64(2.0), np.float16(2.0)])
def test_tensor_from_a_numpy_scalar_keeps_its_dtype(scalar, torch):
    assert str(torch.tensor(scalar).dtype) == f"torch.{np.dtype(type(scalar))}"
    assert minigrad.tensor(scalar).dtype == np.dtype(type(scalar))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("axis", [None, 0])
def test_sum_of_integers_is_int64_as_in_torch(dtype, axis, torch):
    """PyTorch sums bool and integer tensors in int64; NumPy sums uint8 in
    uint64, where subtracting from the sum wraps around."""
    a = np.array([[200, 0, 3], [100, 1, 0]]).astype(dtype)
    t = torch.from_numpy(a.copy())
    got = minigrad.tensor(a).sum(axis=axis)
    want = t.sum() if axis is None else t.sum(axis)
    assert str(want.dtype) == "torch.int64" and got.dtype == np.int64
    np.testing.assert_array_equal((got - 1000).numpy(), (want - 1000).numpy())
    np.testing.assert_array_equal(np.sum(minigrad.tensor(a)).numpy(), t.sum().numpy())


@pytest.mark.parametrize("exponent", [2, 0, True, False])
def test_bool_tensor_to_an_int_or_bool_power_matches_torch(exponent, torch):
    a = np.array([True, False, True])
    got = minigrad.tensor(a) ** exponent
    want = torch.from_numpy(a.copy()) ** exponent
    assert str(want.dtype) == f"torch.{got.dtype}"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("axis", [None, 0])
def test_float16_mean_sums_in_float32_as_torch(axis, torch):
    x = np.array([[60000.0, 30000.0], [60000.0, 20000.0]], dtype=np.float16)
    got = minigrad.tensor(x).mean(axis=axis)
    t = torch.tensor(x)
    want = t.mean() if axis is None else t.mean(axis)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-3)
