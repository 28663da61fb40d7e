"""In-place parameter updates without full-size temporaries.

``p -= lr * g`` reads simply but first allocates ``lr * g``, an array as large
as the parameter: for a 1024 × 1024 weight, 4 MiB on top of the parameters
and gradients, at the moment of the step.  In the parameter-dominated regime
(a large model, micro-batch 1) that temporary is the step's whole extra
memory.  The functions below compute the same numbers without it:

* on the CPU, in blocks of ``BLOCK`` elements: each block is exactly
  ``p[b] -= lr * g[b]``, so the result is bit for bit the one-line update, and
  the temporary is one block (16 KiB in float32);
* on the GPU, in one fused CuPy kernel per parameter (one launch, no
  temporary).  The GPU compiler may contract ``p - lr * g`` into one
  fused multiply-add, so the GPU result can differ from the CPU's in the
  last bit.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .. import backend

BLOCK = 1 << 12          # elements per block of the CPU path
FUSED_DTYPES = backend.FUSED_DTYPES     # dtypes of the GPU kernels


# The fused GPU kernels of the updates below, declared once (backend.KERNELS).
SGD_UPDATE = backend.elementwise_kernel("sgd_update", "T g, T lr", "T p", "p -= lr * g",
                                        scalars=("lr",))
ADAM_UPDATE = backend.elementwise_kernel(
    "adam_update",
    "T g, T one_minus_beta1, T beta2, T one_minus_beta2, T step_size, "
    "T bias_correction2_sqrt, T eps",
    "T p, T m, T v",
    "m += one_minus_beta1 * (g - m);"
    "v = v * beta2 + one_minus_beta2 * (g * g);"
    "p -= step_size * m / (sqrt(v) / bias_correction2_sqrt + eps);",
    scalars=("one_minus_beta1", "beta2", "one_minus_beta2", "step_size",
             "bias_correction2_sqrt", "eps"))


def fused_on_gpu(p, g) -> bool:
    """True when the fused kernels apply: CuPy arrays, float32 or float64, one dtype."""
    return backend.is_cupy_array(p) and p.dtype in FUSED_DTYPES and g.dtype == p.dtype


def sub_scaled_(p, lr: float, g) -> None:
    """``p -= lr * g`` in place, with no temporary the size of ``p``.

    Args:
        p: the parameter array (updated in place).
        lr: a Python float.
        g: an array of p's shape and dtype, on p's device.
    """
    if fused_on_gpu(p, g):
        SGD_UPDATE(g, lr, p)
        return
    if backend.is_cupy_array(p):                        # float16 on the GPU
        p -= lr * g
        return
    if p.size <= BLOCK or not (p.flags.c_contiguous and g.flags.c_contiguous):
        p -= lr * g
        return
    flat_p, flat_g = p.reshape(-1), g.reshape(-1)        # views: p is contiguous
    for start in range(0, flat_p.size, BLOCK):
        block = slice(start, start + BLOCK)
        flat_p[block] -= lr * flat_g[block]


CACHE_BLOCK = 1 << 15    # elements per block of cache_blocks: 128 KiB of float32


def cache_blocks(*arrays):
    """Yield the arrays (one shape, on the CPU) as aligned views of consecutive
    blocks of ``CACHE_BLOCK`` elements, so that lines written for whole
    arrays can run block by block: ``for p, m in cache_blocks(p, m): m += p``.

    What it saves: each operator of an update such as Adam's makes a pass over
    memory and a temporary array of the parameter's size; for a parameter
    larger than the cache every pass goes to main memory.  On blocks of 128
    KiB the temporaries stay in the core's cache, and Adam's update of a
    786,432-element weight takes about 0.6 of its time.  Every element sees
    the same operations in the same order, so the result is bit for bit the
    one of the whole-array lines.  Small, non-contiguous or GPU arrays are
    yielded whole, once.
    """
    first = arrays[0]
    if first.size <= CACHE_BLOCK or backend.is_cupy_array(first) or \
            not all(a.flags.c_contiguous for a in arrays):
        yield arrays
        return
    flat = [a.reshape(-1) for a in arrays]               # views: all contiguous
    for start in range(0, first.size, CACHE_BLOCK):
        yield tuple(a[start:start + CACHE_BLOCK] for a in flat)


def adam_update_gpu(p, m, v, g, beta1: float, beta2: float, step_size: float,
                    bias_correction2_sqrt: float, eps: float) -> None:
    """One Adam update of the CuPy arrays ``p``, ``m``, ``v`` in place, fused::

        m <- m + (1 - beta1) * (g - m)
        v <- beta2 * v + (1 - beta2) * g * g
        p <- p - step_size * m / (sqrt(v) / bias_correction2_sqrt + eps)

    the same lines as the NumPy path of :meth:`minigrad.optim.Adam.step`
    (which gives the formula's source), as one kernel instead of about ten
    launches and six temporaries.  For float32 and float64 (``FUSED_DTYPES``).
    """
    ADAM_UPDATE(g, 1 - beta1, beta2, 1 - beta2, step_size, bias_correction2_sqrt, eps, p, m, v)


# The dtype an optimizer computes and keeps its state in for parameters of a
# dtype: float32 for float16 and bfloat16.  Adam's eps = 1e-8 is 0 in float16
# (whose smallest subnormal is 6e-8), so a zero gradient would give 0 / 0 = nan.
opmath_dtype = backend.opmath_dtype


@contextmanager
def in_opmath(p):
    """``with in_opmath(p) as (data, grad):`` the parameter's value and gradient
    to update, in :func:`opmath_dtype`: ``p.data`` and ``p.grad.data``
    themselves for float32/float64; float32 copies for float16/bfloat16,
    rounded back into ``p.data`` once, when the block ends without an
    exception."""
    if opmath_dtype(p.data.dtype) == p.data.dtype:
        yield p.data, p.grad.data
        return
    data = p.data.astype(np.float32)
    yield data, p.grad.data.astype(np.float32)
    p.data[...] = data
