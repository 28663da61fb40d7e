"""Module-level functions: making tensors, and the functional forms of ops."""
from __future__ import annotations

import numpy as np

from . import backend
from . import random as _random
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
        xp = backend.array_module(device)
        arr = fill(xp, shape, np.dtype(dtype or get_default_dtype()))
        return Tensor(arr, requires_grad=requires_grad)
    return make


zeros = _creator(lambda xp, shape, dt: xp.zeros(shape, dtype=dt))
zeros.__doc__ = "``zeros(*shape, dtype=None, device='cpu', requires_grad=False)``: a tensor of 0s."
ones = _creator(lambda xp, shape, dt: xp.ones(shape, dtype=dt))
ones.__doc__ = "``ones(*shape, dtype=None, device='cpu', requires_grad=False)``: a tensor of 1s."


def zeros_like(t: Tensor, requires_grad=False) -> Tensor:
    return Tensor(t._xp.zeros_like(t.data), requires_grad=requires_grad)


def ones_like(t: Tensor, requires_grad=False) -> Tensor:
    return Tensor(t._xp.ones_like(t.data), requires_grad=requires_grad)


def arange(*args, dtype=None, device="cpu") -> Tensor:
    """``numpy.arange`` as a tensor.  Without ``dtype``, integer arguments give
    int64 and a float argument the default floating dtype, as ``torch.arange``."""
    arr = backend.array_module(device).arange(*args, dtype=dtype)
    if dtype is None and arr.dtype.kind == "f":
        arr = arr.astype(get_default_dtype())
    return Tensor(arr)


def randn(*shape, dtype=None, device="cpu", requires_grad=False, generator=None) -> Tensor:
    """Standard normal samples of ``shape`` from minigrad's seeded stream (or ``generator``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dtype = np.dtype(dtype or get_default_dtype())
    rng = _random.get_generator(device, generator)
    arr = rng.standard_normal(shape).astype(dtype, copy=False)
    return Tensor(backend.to_device(arr, device), requires_grad=requires_grad)


def rand(*shape, dtype=None, device="cpu", requires_grad=False, generator=None) -> Tensor:
    """Uniform samples in [0, 1) of ``shape`` from minigrad's seeded stream (or ``generator``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dtype = np.dtype(dtype or get_default_dtype())
    rng = _random.get_generator(device, generator)
    arr = rng.random(shape).astype(dtype, copy=False)
    return Tensor(backend.to_device(arr, device), requires_grad=requires_grad)


def maximum(a, b) -> Tensor:
    """Elementwise maximum (ties split the gradient evenly)."""
    return E.Maximum()(a, b)


def minimum(a, b) -> Tensor:
    """Elementwise minimum (ties split the gradient evenly)."""
    return E.Minimum()(a, b)


def where(condition, x, y) -> Tensor:
    """``x`` where ``condition`` is true, else ``y``; no gradient flows to ``condition``."""
    cond = condition.data if isinstance(condition, Tensor) else condition
    ref = x if isinstance(x, Tensor) else y if isinstance(y, Tensor) else None
    if ref is not None:
        cond = ref._xp.asarray(cond)
    if cond.dtype != np.bool_:
        cond = cond.astype(bool)
    return E.Where(cond)(x, y)


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
    return S.Stack(dim if axis is None else axis)(*tensors)


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


def matmul(a, b):
    return a @ b


def sum(x, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    return x.sum(dim, keepdim, axis=axis, keepdims=keepdims)


def mean(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return x.mean(dim, keepdim, axis=axis, keepdims=keepdims)


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


def softmax(x, dim=-1, *, axis=None):
    return x.softmax(dim, axis=axis)


def log_softmax(x, dim=-1, *, axis=None):
    return x.log_softmax(dim, axis=axis)
