"""In-place arithmetic with PyTorch's meaning: ``+=``, ``-=``, ``*=``, ``/=``,
``add_``, ``sub_``, ``mul_``, ``div_``, ``clamp_``, ``zero_``, ``fill_``, ``copy_``.

An in-place operation changes the tensor itself, so every name that refers
to it sees the new values: under ``no_grad``, ``w -= lr * w.grad`` updates the
model's parameter (without ``__isub__``, Python would rebind ``w`` to a new
tensor and leave the parameter untouched).

``t[index] = value`` (``__setitem__``) follows the same rules.

The three cases (PyTorch's rules):

1. **No graph involved** (grad mode off, or neither operand requires grad):
   the array is overwritten in place; other tensors sharing it (``detach()``)
   see the change.
2. **A leaf that requires grad, with grad mode on**: RuntimeError, since its
   gradient would no longer describe the value it holds.  Wrap the update
   in ``with minigrad.no_grad():``.
3. **A result that requires grad** (an interior tensor ``h += x``, or a
   constant tensor combined with one that requires grad): the operation is
   recorded in the graph and the tensor becomes its output, holding a new
   array; its old value is the operation's input (its array kept only if
   the operation's backward needs it).
   Because the target gets a new array, a target that is a view of other
   memory (a slice, reshape or transpose) is refused with RuntimeError:
   the tensor it views would keep the old values (PyTorch tracks views and
   updates the base; minigrad does not track views).  So is a target that
   *has* a live view (or a ``detach()``ed alias): the view would keep the
   old values (:func:`minigrad.versions.live_aliases`).

The result keeps the target's shape, dtype and device.  The other operand is
broadcast to the target's shape (RuntimeError when the broadcast shape
differs, as PyTorch's "output with shape [3] doesn't match the broadcast
shape [2, 3]") and the result is cast to the target's dtype when it is of
the same kind or lower (float64 into float32 is fine; a float result into an
integer tensor is a RuntimeError, PyTorch's "result type Float can't be cast
to the desired output type Long").

Version counter (:mod:`minigrad.versions`): one global count advances with every in-place operation.
Overwriting an array stamps its memory (the array that owns it, so views
made by indexing, ``reshape`` or ``detach()`` count as the same memory) with
the count.  Every recorded Function remembers the count when it was
recorded.  When backward reaches a Function that kept, for its backward, an
array whose memory was overwritten after that (an input, its own output, a
view of either), it raises PyTorch's RuntimeError "one of the variables
needed for gradient computation has been modified by an inplace operation"
instead of returning a silently wrong gradient.  A Function that keeps no
array (``add``, ``reshape``) does not mind.  The check runs only when an
in-place operation happened after the Function was recorded, so the hot path
costs one integer comparison per Function.

Re-recording (case 3) overwrites no memory, and it does not disturb
earlier uses of the target either: a Function keeps an
:class:`~minigrad.autograd.Edge` to the Function that made the value it
used, so ``s = h.sum(); h += 1`` still sends ``s``'s gradient to ``h``'s
old value, and ``h += h.sum()`` is fine.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import autograd, backend, versions
from .functions import elementwise as E

_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_KIND_NAME = {"b": "Bool", "u": "Integer", "i": "Integer", "f": "Float", "c": "Complex"}


def _tensor_type():
    """The Tensor class: tensor.py imports this module and registers the class
    with autograd (:func:`minigrad.autograd._register_tensor_type`)."""
    return autograd._Tensor


def _has_views_error(name, target):
    return RuntimeError(f"{name}: a view of this tensor of shape {list(target.shape)} exists "
                        "(made by indexing, reshape, transpose or detach()); recorded in the "
                        "graph, the operation gives the tensor a new array and the view "
                        "would keep the old values (PyTorch updates views; minigrad does "
                        "not track them). Make the views after the write, or write into "
                        "a clone: t = t.clone()")


def _leaf_error(name):
    return RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an "
                        "in-place operation; do it under `with minigrad.no_grad():` "
                        "(e.g. an update of a parameter) or on a copy")


def _view_error(name, target):
    # A recorded in-place operation gives the target a new array (case 3), so a
    # tensor sharing the old memory (the base of a slice, reshape or transpose)
    # would keep the old values and a graph that misses the operation; PyTorch
    # tracks views and updates the base, minigrad refuses instead.
    return RuntimeError(f"{name}: in-place operation on a view (a slice, reshape, "
                        f"transpose, ...) of another tensor's memory, of shape "
                        f"{list(target.shape)}, while recording gradients: minigrad does "
                        "not track views, so the tensor it views would not see the change. "
                        "Write it out of place (v = v + x), or copy the view first "
                        "(v = v * 1, or minigrad.tensor(v) under no_grad)")


def _check_writable(name, array):
    """RuntimeError for memory an in-place write cannot change element by
    element: a broadcast view (``broadcast_to``), where one memory location
    stands for several elements (PyTorch's error), or a read-only array."""
    if any(stride == 0 and size > 1 for stride, size in zip(array.strides, array.shape)):
        raise RuntimeError(f"{name}: unsupported operation: more than one element of the "
                           f"written-to tensor (a broadcast view of shape "
                           f"{list(array.shape)}) refers to a single memory location; "
                           "copy it first (minigrad.tensor(t) or t * 1)")
    flags = getattr(array, "flags", None)
    if flags is not None and not getattr(flags, "writeable", True):
        raise RuntimeError(f"{name}: the tensor's array is read-only (a broadcast view, "
                           "or made from a read-only NumPy array); copy it first "
                           "(minigrad.tensor(t))")


def _check_result(name, target, result_dtype, result_shape):
    if tuple(result_shape) != target.shape:
        raise RuntimeError(f"{name}: output with shape {list(target.shape)} doesn't match "
                           f"the broadcast shape {list(result_shape)}")
    casts_anything = name in ("copy_", "__setitem__")      # PyTorch casts there
    if not casts_anything and \
            _KIND_RANK[np.dtype(result_dtype).kind] > _KIND_RANK[target.dtype.kind]:
        raise RuntimeError(f"{name}: result type {_KIND_NAME[np.dtype(result_dtype).kind]} "
                           f"({np.dtype(result_dtype)}) can't be cast to the desired "
                           f"output type {target.dtype} of the tensor changed in place")


def _operand(name, target, other):
    """``other`` as a Tensor on the target's device (numbers take the target's dtype)."""
    Tensor, as_tensor_like = _tensor_type(), autograd._as_tensor_like
    if isinstance(other, Tensor):
        if other.device != target.device:
            raise RuntimeError(f"{name}: expected the other operand on {target.device}, "
                               f"got a tensor on {other.device}")
        return other
    if isinstance(other, numbers.Number) or isinstance(other, (list, tuple, np.ndarray)) \
            or backend.is_cupy_array(other):
        t = as_tensor_like(other, target)
        if t.device != target.device:
            t = Tensor(backend.to_device(t.data, target.device))
        return t
    raise TypeError(f"{name}: expected a Tensor, an array or a number, got "
                    f"{type(other).__name__}")


def apply(name, target, function, *operands, alpha=1):
    """Run ``function`` (a Function instance) on ``target`` and ``operands``
    (each scaled by ``alpha`` first) and make ``target`` hold the result,
    following the three cases above.  An operand that is ``target`` itself
    (``h += h``) stands for its value before the operation."""
    Tensor = _tensor_type()
    operands = [_operand(name, target, o) for o in operands]
    grad_on = autograd.is_grad_enabled()
    if grad_on and target._creator is None and target._requires_grad:
        raise _leaf_error(name)
    records = grad_on and (target._requires_grad or any(o._requires_grad for o in operands))
    if not records:
        _check_writable(name, target._data)
        if alpha != 1:
            operands = [o * alpha for o in operands]
        result = function.forward(target._data, *[o._data for o in operands])
        _check_result(name, target, result.dtype, result.shape)
        target._data[...] = result          # casts to the target's dtype
        versions.mark_modified(target._data)
        return target
    if getattr(target._data, "base", None) is not None:
        raise _view_error(name, target)
    if versions.live_aliases(target):
        raise _has_views_error(name, target)
    # Record the operation.  The old value becomes a new tensor that takes
    # over the target's place in the graph; the target becomes the output.
    old = Tensor(target._data)
    old._creator, old._output_index = target._creator, target._output_index
    old._requires_grad = target._requires_grad
    # The target as an operand is its old value: recording the target itself
    # would make the new operation its own input.
    operands = [old if o is target else o for o in operands]
    if alpha != 1:
        operands = [o * alpha for o in operands]
    out = function(old, *operands)
    _check_result(name, target, out.dtype, out.shape)
    if out.dtype != target.dtype:
        out = out.to(dtype=target.dtype)
    target._data = out._data      # earlier users of target keep Edges to its old creator
    target._creator, target._output_index = out._creator, out._output_index
    target._requires_grad = True
    return target


class _Fill(autograd.Function):
    """Every entry set to one value: no gradient flows to the old value."""

    def __init__(self, value):
        self.value = value

    def forward(self, a):
        xp = backend.get_array_module(a)
        return xp.full(a.shape, self.value, dtype=a.dtype)

    def backward(self, g):
        return backend.get_array_module(g).zeros_like(g)   # PyTorch: zeros, not None


class _Copy(autograd.Function):
    """The values of ``src`` broadcast to the target's shape; gradient to ``src``."""

    def forward(self, a, src):
        xp = backend.get_array_module(a)
        try:
            out = xp.broadcast_to(src, a.shape)
        except ValueError:
            raise RuntimeError(f"copy_: the source of shape {tuple(src.shape)} cannot be "
                               f"broadcast to the target's shape {tuple(a.shape)}") from None
        self.src_shape = src.shape
        return out.astype(a.dtype) if out.dtype != a.dtype else out.copy()

    def backward(self, g):
        xp = backend.get_array_module(g)
        g_old = xp.zeros_like(g) if self.needs_input_grad[0] else None
        g_src = autograd.unbroadcast(g, self.src_shape) if self.needs_input_grad[1] else None
        return g_old, g_src


class _SetItem(autograd.Function):
    """``a`` with ``a[index] = value`` (value broadcast to ``a[index]``'s shape).

    Backward: the gradient of ``a`` is g with the written positions zeroed;
    the gradient of ``value`` is g at those positions, summed back to its
    shape (a position written twice counts twice, as PyTorch's ``index_put_``).

    Ints mixed with arrays select first, as in PyTorch's ``x[0, :, [1, 2]] = v``
    (see :func:`~minigrad.functions.shape.select_ints_first`): the ints pick a
    view, the arrays then index it, so ``value`` broadcasts to the shape that
    ``x[0, :, [1, 2]]`` reads, (3, 2) for x of shape (2, 3, 4).
    """

    def __init__(self, index):
        self.index = index

    def forward(self, a, value):
        from .functions.shape import normalize_index, select_ints_first  # noqa: PLC0415
        xp = backend.get_array_module(a)
        self.index = normalize_index(self.index, xp, a.ndim)
        if xp is not np:                        # CuPy wraps out-of-bounds indices
            backend.check_index_bounds(self.index, a.shape)
        split = select_ints_first(self.index)  # PyTorch's order: the ints first
        self.first, self.index = (None, self.index) if split is None else split
        self.value_shape = value.shape
        lead = next((k for k, n in enumerate(value.shape) if n != 1), value.ndim)
        value = value.reshape(value.shape[lead:])   # leading 1s broadcast away (PyTorch)
        out = a.copy()
        try:
            self._place(out)[self.index] = value
        except (IndexError, ValueError, TypeError) as e:
            kind = IndexError if isinstance(e, IndexError) else ValueError
            raise kind(f"__setitem__: cannot assign a value of shape "
                       f"{tuple(self.value_shape)} to index {self._full_index()!r} of a "
                       f"tensor of shape {tuple(a.shape)}: the value must broadcast to the "
                       f"selected shape {_selected_shape(self, a)} ({e})") from None
        return out

    def backward(self, g):
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = g.copy()
            self._place(ga)[self.index] = 0
        if self.needs_input_grad[1]:
            gi = self._place(g)[self.index]
            extra = len(self.value_shape) - gi.ndim    # leading 1s that the write dropped
            if extra > 0:
                gi = gi.reshape((1,) * extra + gi.shape)
            gv = autograd.unbroadcast(gi, self.value_shape)
        return ga, gv

    def _place(self, array):
        """The view that ``self.index`` indexes: ``array[first]`` when ints
        mixed with arrays select first (a basic index, so a view that writes
        through), else ``array`` itself."""
        return array if self.first is None else array[self.first]

    def _full_index(self):
        return self.index if self.first is None else (self.first, self.index)


def _selected_shape(setitem, a):
    try:
        return tuple(setitem._place(a)[setitem.index].shape)
    except (IndexError, ValueError, TypeError):
        return "(none: the index itself is invalid)"


def setitem(target, index, value):
    """``target[index] = value`` in place (see the module docstring); returns
    ``target``.  ``value`` is cast to the target's dtype, as PyTorch does."""
    return apply("__setitem__", target, _SetItem(index), value)


def add_(target, other, alpha=1):
    """``target += alpha * other`` in place; returns ``target``."""
    return apply("add_", target, E.Add(), other, alpha=alpha)


def sub_(target, other, alpha=1):
    """``target -= alpha * other`` in place; returns ``target``."""
    return apply("sub_", target, E.Sub(), other, alpha=alpha)


def mul_(target, other):
    return apply("mul_", target, E.Mul(), other)


def div_(target, other):
    if target.dtype.kind != "f":
        raise RuntimeError(f"div_: result type Float can't be cast to the desired output "
                           f"type {target.dtype}; true division of an integer tensor gives "
                           "floats")
    return apply("div_", target, E.Div(), other)


def clamp_(target, min=None, max=None):  # noqa: A002 (PyTorch's names)
    return apply("clamp_", target, E.Clip(min, max))


def fill_(target, value):
    """Set every entry to ``value`` (a number, or a one-element Tensor)."""
    Tensor = _tensor_type()
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill_: only supports a 0-dimensional value tensor, got "
                               f"shape {value.shape}")
        value = value.item()
    if not isinstance(value, numbers.Number):
        raise TypeError(f"fill_: value must be a number, got {type(value).__name__}")
    if target.dtype.kind in "iub" and isinstance(value, float) and not value.is_integer():
        raise RuntimeError(f"fill_: value {value} cannot be stored in a tensor of dtype "
                           f"{target.dtype} without losing its fraction")
    return apply("fill_", target, _Fill(value))


def zero_(target):
    """Set every entry to 0."""
    return fill_(target, 0)


def copy_(target, src):
    """Copy ``src``'s values (broadcast to the target's shape, cast to its dtype)
    into ``target``; gradients flow to ``src`` when it requires grad."""
    Tensor = _tensor_type()
    if isinstance(src, Tensor) and src.device != target.device:
        src = src.to(target.device)
    return apply("copy_", target, _Copy(), src)
