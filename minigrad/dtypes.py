"""Dtypes: the default floating dtype, PyTorch's type promotion, and the layer policy.

The rules (those of PyTorch, ``torch.result_type``; NumPy's differ, see below)
--------------------------------------------------------------------------
Operands fall into categories, ordered bool < integer < floating.

1. **Tensors with dimensions** (ndim >= 1) decide first.  Of one category,
   they promote within it: float32 with float64 gives float64, int32 with
   int64 gives int64, uint8 with int8 gives int16.  Of different
   categories, the higher category's dtype wins as it is: int64 with float16
   gives float16 (NumPy: float64).
2. **0-d tensors** count only when they are of a *higher* category than every
   tensor with dimensions: float32 with a 0-d float64 gives float32 (NumPy
   2: float64), an int tensor with a 0-d float64 tensor gives float64.
3. **Python numbers** (and NumPy scalars) count only when of a higher
   category, and then as the default dtype: float32 * 2.5 stays float32,
   int64 * 2.5 is float32 (the default), a bool tensor + 1 is int64.
4. **Floating functions of integers**: ``exp``, ``log``, ``sqrt``, ``tanh``,
   ``sigmoid``, true division, ``mean`` and ``var``, powers with a floating
   exponent, and ``clip`` with floating bounds compute integer and bool
   tensors in the default floating dtype (so do ``softmax``,
   ``log_softmax`` and ``gelu``, which PyTorch refuses for integers): uint8 [12].exp() is 162754.8 in float32 (NumPy computes
   it in float16 and overflows to inf); int / int is float32.
5. ``concatenate`` and ``stack`` promote like rule 1 (int64 with float32 is
   float32).  ``matmul`` promotes nothing: its operands must have one dtype (PyTorch:
   "expected m1 and m2 to have the same dtype").

The layer policy
----------------
Layers whose parameters or buffers meet the input in arithmetic (``linear``,
``conv2d``, ``batch_norm``, ``layer_norm``, ``group_norm``) raise TypeError
when the input's dtype differs from theirs, as PyTorch does, instead of
silently computing in the wider dtype: a float32 model given float64 (or
integer) data is an error that names both dtypes, and the fix is to convert
the data (``x.to(np.float32)``) or the model.  ``embedding`` takes integer
ids and returns rows in the weight's dtype.

The default floating dtype is float32, as in PyTorch; ``set_default_dtype``
changes it for tensors made from Python floats, new parameters, and rule 3
and 4 above.
"""
from __future__ import annotations

import numpy as np

_default_dtype = np.dtype(np.float32)

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def set_default_dtype(dtype) -> None:
    """Set the floating dtype of tensors made from Python floats and of new
    parameters (float32 by default, as in PyTorch).  Raises TypeError for a
    non-floating dtype."""
    global _default_dtype
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"set_default_dtype: expected a floating dtype (float32 or "
                        f"float64), got {dtype}")
    _default_dtype = dtype


def get_default_dtype() -> np.dtype:
    """The current default floating dtype."""
    return _default_dtype


def category(dtype) -> int:
    """0 for bool, 1 for integers, 2 for floating, 3 for complex dtypes."""
    return _CATEGORY[np.dtype(dtype).kind]


def result_type(*arrays) -> np.dtype:
    """The dtype PyTorch gives an elementwise operation on ``arrays`` (rules 1-2
    of the module docstring; Python numbers arrive here already converted by
    :func:`minigrad.tensor.as_tensor_like`, which applies rule 3)."""
    dims = [a.dtype for a in arrays if a.ndim > 0]
    zero_d = [a.dtype for a in arrays if a.ndim == 0]
    if not dims:
        dims, zero_d = zero_d, []
    result = _promote_all(dims)
    if zero_d:
        scalar = _promote_all(zero_d)
        if category(scalar) > category(result):
            result = scalar
    return result


def _promote_all(dtypes) -> np.dtype:
    result = np.dtype(dtypes[0])
    for d in dtypes[1:]:
        d = np.dtype(d)
        if d == result:
            continue
        cr, cd = category(result), category(d)
        if cr == cd:
            result = np.promote_types(result, d)
        elif cd > cr:
            result = d
    return result


def promote(a, b):
    """``a`` and ``b`` cast to their PyTorch result type (no copy when equal)."""
    if a.dtype == b.dtype:
        return a, b
    dtype = result_type(a, b)
    return a.astype(dtype, copy=False), b.astype(dtype, copy=False)


def to_floating(a):
    """An integer or bool array in the default floating dtype (rule 4); a
    floating array as it is."""
    return a if a.dtype.kind in "fc" else a.astype(_default_dtype)


def check_layer_dtype(name: str, x, **params) -> None:
    """Raise TypeError when a parameter or buffer of a layer (a Tensor or array,
    or None) has a dtype other than the input ``x``'s (the layer policy of this
    module).

    Example message: ``linear: input dtype float64 differs from weight dtype
    float32; minigrad does not promote inside layers (PyTorch raises too):
    convert the input with x.to(float32), or the layer with layer.to(float64)``.
    """
    for label, p in params.items():
        if p is not None and p.dtype != x.dtype:
            raise TypeError(f"{name}: input dtype {x.dtype} differs from {label} dtype "
                            f"{p.dtype}; minigrad does not promote inside layers "
                            f"(PyTorch raises too): convert the input with "
                            f"x.to({p.dtype}), or the layer with layer.to({x.dtype})")


__all__ = ["get_default_dtype", "set_default_dtype", "result_type", "promote",
           "to_floating", "check_layer_dtype", "category"]
