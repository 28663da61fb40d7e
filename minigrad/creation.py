"""Module-level functions: making tensors, and the functional forms of ops."""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from . import backend
from . import random as _random
from .arguments import check_shape
from .functions import elementwise as E
from .functions import shape as S
from .tensor import Tensor, _to_array, as_tensor_like, get_default_dtype


def tensor(data, dtype=None, device="cpu", requires_grad: bool = False) -> Tensor:
    """Make a tensor from data (number, nested list, NumPy/CuPy array or Tensor), copying it.

    Python floats take the default dtype (float32 unless changed by
    :func:`minigrad.set_default_dtype`); integers give int64; NumPy arrays keep
    their dtype unless ``dtype`` is given.

    Dtypes then follow PyTorch's promotion (:mod:`minigrad.dtypes`): tensors
    with dimensions decide, a 0-d tensor or a Python number does not widen a
    float32 tensor (float32 * np.float64(2) is float32), integer and bool
    tensors enter floating functions (exp, log, sqrt, /, mean) in the default
    dtype, and layers (Linear, Conv2d, the norms) raise TypeError for an
    input whose dtype is not their parameters' (PyTorch raises too): a float64
    NumPy array given to a float32 model must be converted, e.g.
    ``minigrad.tensor(x, dtype=np.float32)``.

    Raises:
        TypeError: ``requires_grad=True`` with a non-floating dtype, or data
            that is not numeric.
        ValueError: an unknown device name.  RuntimeError: ``device="cuda"``
            without a usable GPU.
    """
    device = backend.normalize_device(device)
    arr = _to_array(data, dtype, device)
    source = data.data if isinstance(data, Tensor) else data
    if arr is source:                   # no conversion made a new array: copy it
        arr = arr.copy()
    return Tensor(arr, requires_grad=requires_grad)


def _creator(fill):
    def make(*shape, dtype=None, device="cpu", requires_grad=False):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = check_shape(fill.__name__, shape)
        xp = backend.array_module(device)
        arr = fill(xp, shape, np.dtype(dtype or get_default_dtype()))
        return Tensor(arr, requires_grad=requires_grad)
    return make


def _zeros(xp, shape, dt):
    return xp.zeros(shape, dtype=dt)


def _ones(xp, shape, dt):
    return xp.ones(shape, dtype=dt)


_zeros.__name__, _ones.__name__ = "zeros", "ones"
zeros = _creator(_zeros)
zeros.__doc__ = "``zeros(*shape, dtype=None, device='cpu', requires_grad=False)``: a tensor of 0s."
ones = _creator(_ones)
ones.__doc__ = "``ones(*shape, dtype=None, device='cpu', requires_grad=False)``: a tensor of 1s."


def zeros_like(t: Tensor, dtype=None, device=None, requires_grad=False) -> Tensor:
    """0s of ``t``'s shape, dtype and device (unless given)."""
    return full_like(t, 0, dtype, device, requires_grad)


def ones_like(t: Tensor, dtype=None, device=None, requires_grad=False) -> Tensor:
    """1s of ``t``'s shape, dtype and device (unless given)."""
    return full_like(t, 1, dtype, device, requires_grad)


def arange(*args, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """``arange(end)``, ``arange(start, end, step=1)``: the values start,
    start + step, ... below end.  Without ``dtype``, integer arguments give
    int64 and a float argument the default floating dtype, as ``torch.arange``;
    with one, the values are computed in it (``arange(0, 1, 0.25, dtype=float64)``)."""
    xp = backend.array_module(device)
    _check_arange(args)
    if dtype is None:
        arr = xp.arange(*args)
        arr = arr.astype(get_default_dtype() if arr.dtype.kind == "f" else np.int64)
    else:
        arr = xp.arange(*args, dtype=dtype)
    return Tensor(arr, requires_grad=requires_grad)


def _check_arange(args):
    """torch.arange's refusals: a zero step, or one that moves away from end."""
    values = [a.item() if hasattr(a, "item") else a for a in args]
    if not 1 <= len(values) <= 3 or not builtins.all(
            isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values):
        raise TypeError(f"arange: expected (end), (start, end) or (start, end, step) numbers, "
                        f"got {tuple(args)!r}")
    start, end, step = (0, values[0], 1) if len(values) == 1 else (*values[:2], 1) \
        if len(values) == 2 else values
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: upper bound and lower bound inconsistent with step sign "
                         f"(start {start}, end {end}, step {step})")


def randn(*shape, dtype=None, device="cpu", requires_grad=False, generator=None) -> Tensor:
    """Standard normal samples of ``shape`` from minigrad's seeded stream (or ``generator``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = check_shape("randn", shape)
    dtype = np.dtype(dtype or get_default_dtype())
    rng = _random.get_generator(device, generator)
    if isinstance(rng, _random.CounterStream):      # the GPU stream draws in dtype
        arr = rng.standard_normal(shape, dtype=dtype).astype(dtype, copy=False)
    else:
        arr = rng.standard_normal(shape).astype(dtype, copy=False)
    return Tensor(backend.to_device(arr, device), requires_grad=requires_grad)


def rand(*shape, dtype=None, device="cpu", requires_grad=False, generator=None) -> Tensor:
    """Uniform samples in [0, 1) of ``shape`` from minigrad's seeded stream (or ``generator``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = check_shape("rand", shape)
    dtype = np.dtype(dtype or get_default_dtype())
    rng = _random.get_generator(device, generator)
    if isinstance(rng, _random.CounterStream):
        arr = rng.random(shape, dtype=dtype).astype(dtype, copy=False)
    else:
        arr = rng.random(shape).astype(dtype, copy=False)
    return Tensor(backend.to_device(arr, device), requires_grad=requires_grad)


def maximum(input, other) -> Tensor:  # noqa: A002 (PyTorch's names)
    """Elementwise maximum (ties split the gradient evenly)."""
    return E.Maximum()(input, other)


def minimum(input, other) -> Tensor:  # noqa: A002
    """Elementwise minimum (ties split the gradient evenly)."""
    return E.Minimum()(input, other)


def where(condition, input, other) -> Tensor:  # noqa: A002
    """``input`` where ``condition`` is true, else ``other``; no gradient flows
    to ``condition``."""
    cond = condition.data if isinstance(condition, Tensor) else condition
    ref = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else None
    if ref is not None:
        cond = ref._xp.asarray(cond)
    else:
        cond = np.asarray(cond)
    if cond.dtype != np.bool_:
        raise TypeError(f"where: expected condition to be a bool tensor, got dtype "
                        f"{cond.dtype} (compare first, e.g. x > 0, or use .bool())")
    return E.Where(cond)(input, other)


def concatenate(tensors, dim=0, *, axis=None) -> Tensor:
    """Join a sequence of tensors along an existing dimension ``dim`` (or ``axis``)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("concatenate: need at least one tensor")
    return S.Concatenate(dim if axis is None else axis)(*tensors)


cat = concatenate


def stack(tensors, dim=0, *, axis=None) -> Tensor:
    """Join a sequence of same-shape tensors along a new dimension ``dim`` (or ``axis``)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: need at least one tensor")
    dim = dim if axis is None else axis
    ndim = np.ndim(tensors[0]) + 1
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"stack: dim must be an int, got {dim!r}")
    if not -ndim <= dim < ndim:
        raise IndexError(f"stack: dimension {dim} is out of range for the result's {ndim} "
                         f"dimensions (expected {-ndim} <= dim < {ndim})")
    return S.Stack(dim)(*tensors)


def _unary(name, cls):
    def fn(x):
        return cls()(x if isinstance(x, Tensor) else as_tensor_like(x))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} (see ``Tensor.{name}``)."
    return fn


exp = _unary("exp", E.Exp)
log = _unary("log", E.Log)
sqrt = _unary("sqrt", E.Sqrt)
abs = _unary("abs", E.Abs)  # noqa: A001
tanh = _unary("tanh", E.Tanh)
sigmoid = _unary("sigmoid", E.Sigmoid)
relu = _unary("relu", E.ReLU)


def clip(x, min=None, max=None):  # noqa: A002
    return x.clip(min, max)


def matmul(input, other):  # noqa: A002
    return input @ other


def sum(x, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A001
    """The sum over ``dim`` (all by default), computed in ``dtype`` when given."""
    return x.sum(dim, keepdim, dtype, axis=axis, keepdims=keepdims)


def mean(x, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """The mean over ``dim`` (all by default), computed in ``dtype`` when given."""
    return x.mean(dim, keepdim, dtype, axis=axis, keepdims=keepdims)


def reshape(x, *shape):
    return x.reshape(*shape)


def transpose(x, dim0, dim1):
    """``x`` with dimensions ``dim0`` and ``dim1`` swapped (``torch.transpose``)."""
    return x.transpose(dim0, dim1)


def permute(x, *dims):
    """``x`` with its dimensions in the order ``dims`` (``torch.permute``)."""
    return x.permute(*dims)


def broadcast_to(x, shape):
    return x.broadcast_to(shape)


def squeeze(x, dim=None):
    return x.squeeze(dim)


def unsqueeze(x, dim):
    return x.unsqueeze(dim)


def softmax(x, dim=-1, *, dtype=None, axis=None):
    """softmax along ``dim``, of ``x`` cast to ``dtype`` first when given."""
    return (x if dtype is None else x.to(dtype=dtype)).softmax(dim, axis=axis)


def log_softmax(x, dim=-1, *, dtype=None, axis=None):
    """log_softmax along ``dim``, of ``x`` cast to ``dtype`` first when given."""
    return (x if dtype is None else x.to(dtype=dtype)).log_softmax(dim, axis=axis)


sin = _unary("sin", E.Sin)
cos = _unary("cos", E.Cos)
rsqrt = _unary("rsqrt", E.Rsqrt)
log2 = _unary("log2", E.Log2)
log10 = _unary("log10", E.Log10)
exp2 = _unary("exp2", E.Exp2)


def _method(name):
    def fn(x, *args, **kwargs):
        return getattr(x if isinstance(x, Tensor) else as_tensor_like(x), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"``{name}(x, ...)``: the function form of ``Tensor.{name}``."
    return fn


(erf, floor, ceil, round, trunc, sign, isnan, isinf, isfinite, lerp, remainder,  # noqa: A001
 floor_divide, flip, roll, diagonal, gather, take_along_dim, index_select, scatter,
 scatter_add, scatter_reduce, logsumexp, cumsum, prod, argmax, argmin, all,  # noqa: A001
 any, sort, argsort, topk, var, std, amax, amin, flatten, unflatten, max, min) = [  # noqa: A001
    _method(n) for n in (
        "erf", "floor", "ceil", "round", "trunc", "sign", "isnan", "isinf", "isfinite",
        "lerp", "remainder", "floor_divide", "flip", "roll", "diagonal", "gather",
        "take_along_dim", "index_select", "scatter", "scatter_add", "scatter_reduce",
        "logsumexp", "cumsum", "prod", "argmax", "argmin", "all", "any", "sort", "argsort",
        "topk", "var", "std", "amax", "amin", "flatten", "unflatten", "max", "min")]


# --------------------------------------------------------------- creation
def full(size, fill_value, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``.  Without ``dtype``
    a bool gives bool, an int int64, a float the default dtype (PyTorch's rule)."""
    if dtype is None:
        dtype = np.bool_ if isinstance(fill_value, (bool, np.bool_)) else np.int64 \
            if isinstance(fill_value, (int, np.integer)) else get_default_dtype()
    size = check_shape("full", tuple(size) if isinstance(size, (tuple, list)) else (size,))
    if not isinstance(fill_value, (numbers.Number, np.number, np.bool_)) and not (
            backend.is_array(fill_value) and fill_value.ndim == 0):
        raise TypeError(f"full: fill_value must be a number, got "
                        f"{type(fill_value).__name__} {fill_value!r}")
    arr = backend.array_module(device).full(size, fill_value, dtype=dtype)
    return Tensor(arr, requires_grad=requires_grad)


def full_like(t: Tensor, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``t``'s shape, dtype and device (unless given) filled with
    ``fill_value``."""
    return full(t.shape, fill_value, dtype or t.dtype, device or t.device, requires_grad)


def _empty(xp, shape, dt):
    return xp.empty(shape, dtype=dt)


_empty.__name__ = "empty"
empty = _creator(_empty)
empty.__doc__ = ("``empty(*shape, dtype=None, device='cpu', requires_grad=False)``: a "
                 "tensor whose values are whatever the memory held (fill it before use).")


def eye(n, m=None, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """The (n, m) identity matrix (m = n by default): ones on the diagonal."""
    for name, value in (("n", n), ("m", m)):
        if value is not None and (isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, np.integer)) or value < 0):
            raise ValueError(f"eye: {name} must be an int >= 0, got {value!r}")
    arr = backend.array_module(device).eye(n, m, dtype=dtype or get_default_dtype())
    return Tensor(arr, requires_grad=requires_grad)


def linspace(start, end, steps, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"linspace: steps must be an int >= 0, got {steps!r}")
    dtype = np.dtype(dtype or get_default_dtype())
    start, end = _linspace_end(start, "start"), _linspace_end(end, "end")
    # PyTorch's formula, computed in the output dtype (float64 for integer
    # outputs, then truncated toward 0): start + i·step for the first half,
    # end - (steps - 1 - i)·step for the second, so both ends are exact
    work = dtype if dtype.kind == "f" else np.dtype(np.float64)
    i = np.arange(steps, dtype=work)
    step = (work.type(end) - work.type(start)) / work.type(steps - 1 if steps > 1 else 1)
    with np.errstate(invalid="ignore", over="ignore"):
        arr = np.where((i < steps // 2) | (steps == 1), work.type(start) + i * step,
                       work.type(end) - (work.type(steps - 1) - i) * step).astype(work)
    if dtype.kind != "f":
        arr = np.trunc(arr)
    arr = backend.to_device(arr.astype(dtype), device)
    return Tensor(arr, requires_grad=requires_grad)


def _linspace_end(value, name):
    """A linspace end as a Python number (a 0-d tensor's value, in float64)."""
    if isinstance(value, Tensor) or backend.is_array(value):
        data = value.data if isinstance(value, Tensor) else value
        if data.ndim != 0:
            raise ValueError(f"linspace: only supports 0-dimensional start and end tensors, "
                             f"but got {name} of shape {tuple(data.shape)}")
        return backend.asnumpy(data).item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"linspace: {name} must be a number or a 0-d tensor, got "
                        f"{type(value).__name__}")
    return value
