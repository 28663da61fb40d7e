"""A thin stand-in for tinygrad's ``Tensor`` on top of minigrad, enough to run
tinygrad's operator suite (``test/backend/test_ops.py``) against minigrad.

Only the calls that suite makes are translated: tinygrad's ``axis=`` becomes
``dim=``, its pad pairs become PyTorch's flat pads, ``gradient(*ts)`` runs
minigrad's ``backward``; everything else is forwarded by name to
``minigrad.Tensor``, then ``minigrad.nn.functional``, then ``minigrad``.
"""
from __future__ import annotations

import numpy as np

import minigrad
import minigrad.nn.functional as F

from . import helpers  # noqa: F401


class dtypes:  # noqa: N801
    float32 = float = np.dtype("float32")
    float64 = double = np.dtype("float64")
    float16 = half = np.dtype("float16")
    int8, int16, int32, int64 = (np.dtype(f"int{b}") for b in (8, 16, 32, 64))
    uint8, uint16, uint32, uint64 = (np.dtype(f"uint{b}") for b in (8, 16, 32, 64))
    int = int32
    bool = np.dtype(bool)
    default_float = float32
    default_int = int32

    @staticmethod
    def is_float(d):
        return np.dtype(d).kind == "f"

    @staticmethod
    def is_int(d):
        return np.dtype(d).kind in "iu"


class _DeviceMeta(type):
    def __getitem__(cls, name):
        class _Renderer:
            @staticmethod
            def supported_dtypes():
                return [dtypes.float32, dtypes.float64, dtypes.float16, dtypes.int32,
                        dtypes.int64, dtypes.bool, dtypes.uint8]

        class _Device:
            renderer = _Renderer()
        return _Device


class Device(metaclass=_DeviceMeta):
    DEFAULT = "CPU"


def _un(x):
    if isinstance(x, Tensor):
        return x.mg
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_un(v) for v in x)
    if isinstance(x, dict):
        return {k: _un(v) for k, v in x.items()}
    return x


def _wrap(r):
    if isinstance(r, minigrad.Tensor):
        return Tensor(r)
    if isinstance(r, (list, tuple)):
        return type(r)(_wrap(v) for v in r) if not hasattr(r, "_fields") else \
            tuple(_wrap(v) for v in r)
    return r


def _kw(kwargs):
    if "axis" in kwargs:
        kwargs["dim"] = kwargs.pop("axis")
    if "dtype" in kwargs and kwargs["dtype"] is not None:
        kwargs["dtype"] = np.dtype(kwargs["dtype"])
    return kwargs


def _int32(r):
    """tinygrad's default int is int32: minigrad's int64 indices become int32."""
    if isinstance(r, minigrad.Tensor) and np.dtype(r.dtype) == np.int64:
        return r.to(np.int32)
    if isinstance(r, tuple):
        return tuple(_int32(v) for v in r)
    return r


def _has_int64(x):
    if isinstance(x, Tensor):
        return x.dtype == np.int64
    if isinstance(x, (list, tuple)):
        return any(_has_int64(v) for v in x)
    if isinstance(x, dict):
        return any(_has_int64(v) for v in x.values())
    return False


def _call(fn, args, kwargs):
    r = fn(*_un(list(args)), **_un(_kw(dict(kwargs))))
    if not _has_int64((args, kwargs)) and kwargs.get("dtype") is None:
        r = _int32(r)
    return _wrap(r)


def _shape(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    if any(not isinstance(s, (int, np.integer)) or s < 0 for s in args):
        raise ValueError(f"invalid shape {args}")
    return tuple(int(s) for s in args)


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def unbound(*args, **kwargs):
            if args and isinstance(args[0], Tensor):
                return getattr(args[0], name)(*args[1:], **kwargs)
            fn = getattr(minigrad, name, None) or getattr(F, name)
            return _call(fn, args, kwargs)
        return unbound


class Tensor(metaclass=_Meta):
    training = False

    def __init__(self, data, device=None, dtype=None, requires_grad=None):
        if isinstance(data, Tensor):
            data = data.mg
        if isinstance(data, minigrad.Tensor):
            self.mg = data if dtype is None else data.to(np.dtype(dtype))
            return
        arr = np.asarray(data)
        if dtype is not None:
            arr = arr.astype(np.dtype(dtype))
        elif arr.dtype == np.float64 and not isinstance(data, np.ndarray):
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and not isinstance(data, np.ndarray):
            arr = arr.astype(np.int32)
        self.mg = minigrad.tensor(arr, requires_grad=arr.dtype.kind == "f")

    # ----------------------------------------------------- plumbing
    shape = property(lambda self: tuple(self.mg.shape))
    dtype = property(lambda self: np.dtype(self.mg.dtype))
    ndim = property(lambda self: self.mg.ndim)
    device = "CPU"

    def numpy(self):
        return np.asarray(self.mg.detach().numpy())

    def item(self):
        return self.mg.item()

    def tolist(self):
        return self.numpy().tolist()

    def realize(self, *others):
        return self

    def contiguous(self):
        return self

    def detach(self):
        return Tensor(self.mg.detach())

    def cast(self, dtype):
        return Tensor(self.mg.to(np.dtype(dtype)))

    def float(self):
        return self.cast(np.float32)

    def half(self):
        return self.cast(np.float16)

    def int(self):
        return self.cast(np.int32)

    def bool(self):
        return self.cast(bool)

    def gradient(self, *targets):
        for t in targets:
            t.mg.grad = None
        self.mg.backward()
        out = []
        for t in targets:
            g = t.mg.grad
            out.append(Tensor(np.zeros(t.shape, t.dtype) if g is None else g.numpy()))
            t.mg.grad = None
        return out

    def max(self, axis=None, keepdim=False):
        return self._extreme("max", axis, keepdim)

    def min(self, axis=None, keepdim=False):
        return self._extreme("min", axis, keepdim)

    def _extreme(self, name, axis, keepdim):
        """tinygrad's max/min give the values only, over one or several axes."""
        if axis is None:
            return Tensor(getattr(self.mg, name)())
        return Tensor(getattr(self.mg, "amax" if name == "max" else "amin")(
            dim=axis, keepdim=keepdim))

    def unfold(self, *args, **kwargs):
        raise NotImplementedError("minigrad has no Tensor.unfold(dim, size, step)")

    def __getattr__(self, name):
        if name.startswith("__") or name == "mg":
            raise AttributeError(name)
        for owner in (self.mg, F, minigrad):
            fn = getattr(owner, name, None)
            if fn is not None and callable(fn):
                if owner is self.mg:
                    return lambda *a, **k: _call(fn, a, k)
                return lambda *a, **k: _call(fn, (self, *a), k)
            if fn is not None and owner is self.mg:
                return _wrap(fn)
        raise AttributeError(f"minigrad has no counterpart of tinygrad's Tensor.{name}")

    # ----------------------------------------------------- tinygrad spellings
    def pad(self, padding, mode="constant", value=0.0):
        if padding and all(p is None or isinstance(p, (tuple, list)) for p in padding):
            flat = []
            for p in reversed(padding):
                flat.extend((0, 0) if p is None else p)
            padding = flat
        kw = dict(mode=mode, value=value) if mode == "constant" else dict(mode=mode)
        return _call(F.pad, (self, tuple(padding)), kw)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(self.shape[i] if s is None else s for i, s in enumerate(shape))
        return _call(self.mg.reshape, shape, {})

    # tinygrad's names for minigrad/PyTorch operators and its composites
    def dot(self, w):
        return self @ w

    def mod(self, other):
        return _call(self.mg.remainder, (other,), {})

    def lshift(self, n):
        return self << n

    def rshift(self, n):
        return self >> n

    def swish(self):
        return self.silu()

    def softsign(self):
        return self / (1 + self.abs())

    def quick_gelu(self):
        return self * (self * 1.702).sigmoid()

    def logcumsumexp(self, axis=0):
        return _call(self.mg.logcumsumexp, (axis,), {})

    def sparse_categorical_crossentropy(self, Y, ignore_index=-1, label_smoothing=0.0,  # noqa: N803
                                        reduction="mean"):
        logits = self if self.ndim <= 2 else self.movedim(-1, 1)   # tinygrad: classes last
        return _call(F.cross_entropy, (logits, Y.cast(np.int64)),
                     dict(ignore_index=ignore_index, label_smoothing=label_smoothing,
                          reduction=reduction))

    def binary_crossentropy(self, Y, reduction="mean"):  # noqa: N803
        return _call(F.binary_cross_entropy, (self, Y), dict(reduction=reduction))

    def binary_crossentropy_logits(self, Y, reduction="mean", pos_weight=None):  # noqa: N803
        return _call(F.binary_cross_entropy_with_logits, (self, Y),
                     dict(reduction=reduction, pos_weight=pos_weight))

    def _spatial(self, fn1, fn2, weight_or_kernel_ndim, args, kwargs, pad_value=0.0):
        fn = fn1 if weight_or_kernel_ndim == 1 else fn2
        padding = kwargs.get("padding", 0)
        if isinstance(padding, (tuple, list)) and len(padding) == 2 * weight_or_kernel_ndim:
            x = self.pad(tuple(padding), value=pad_value)  # in F.pad's order
            kwargs["padding"] = 0
            return _call(fn, (x, *args), kwargs)
        return _call(fn, (self, *args), kwargs)

    def conv2d(self, weight, bias=None, groups=1, stride=1, dilation=1, padding=0):
        return self._spatial(F.conv1d, F.conv2d, weight.ndim - 2, (weight, bias),
                             dict(groups=groups, stride=stride, dilation=dilation,
                                  padding=padding))

    def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0,
                   ceil_mode=False, return_indices=False):
        nd = 2 if isinstance(kernel_size, int) else len(kernel_size)
        return self._spatial(F.max_pool1d, F.max_pool2d, nd, (kernel_size,),
                             dict(stride=stride, dilation=dilation, padding=padding,
                                  ceil_mode=ceil_mode, return_indices=return_indices),
                             pad_value=float("-inf"))

    def interpolate(self, size, mode="linear", align_corners=False):
        if mode == "linear" and self.ndim == 4:
            mode = "bilinear"
        kw = dict(mode=mode)
        if mode != "nearest" and mode != "nearest-exact":
            kw["align_corners"] = align_corners
        return _call(F.interpolate, (self, size), kw)

    def sequential(self, layers):
        out = self
        for f in layers:
            out = f(out)
        return out

    def cat(self, *others, dim=0):
        return _call(minigrad.cat, ([self, *others],), dict(dim=dim))

    @staticmethod
    def stack(*tensors, dim=0):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tensors[0]
        return _call(minigrad.stack, (list(tensors),), dict(dim=dim))

    @staticmethod
    def einsum(formula, *operands):
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
        return _call(minigrad.einsum, (formula, *operands), {})

    @staticmethod
    def zeros(*shape, **kw):
        return _call(minigrad.zeros, (_shape(shape),), kw)

    @staticmethod
    def ones(*shape, **kw):
        return _call(minigrad.ones, (_shape(shape),), kw)

    @staticmethod
    def empty(*shape, **kw):
        return _call(minigrad.zeros, (_shape(shape),), kw)

    @staticmethod
    def full(shape, fill_value, **kw):
        return _call(minigrad.full, (_shape((shape,)) if not isinstance(shape, int)
                                     else _shape((shape,)), fill_value), kw)

    @staticmethod
    def rand(*shape, **kw):
        return _call(minigrad.rand, (_shape(shape),), kw)

    @staticmethod
    def randn(*shape, **kw):
        return _call(minigrad.randn, (_shape(shape),), kw)

    @staticmethod
    def arange(start, stop=None, step=1, **kw):
        if stop is None:
            start, stop = 0, start
        return _call(minigrad.arange, (start, stop, step), kw)

    def __bool__(self):
        return bool(self.mg)

    def __len__(self):
        return len(self.mg)

    def __repr__(self):
        return f"<Tensor {self.mg!r}>"


def _dunder(name):
    def method(self, *args):
        return _call(getattr(self.mg, name), args, {})
    method.__name__ = name
    return method


for _n in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow "
           "rpow matmul rmatmul neg abs invert and rand or ror xor rxor lshift rshift "
           "rlshift rrshift lt le gt ge eq ne getitem").split():
    setattr(Tensor, f"__{_n}__", _dunder(f"__{_n}__"))


def _setitem(self, key, value):
    self.mg[_un(key)] = _un(value)


Tensor.__setitem__ = _setitem
Tensor.__hash__ = object.__hash__
