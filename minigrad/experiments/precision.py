"""What the precision of the accumulation buffer does to the window's gradient.

The experiments of chapter 12, shared by its tests and its notebook.  Each is
seeded and takes seconds.  The gradients are synthetic but shaped like real
ones: d = 20 000 coordinates whose typical magnitudes m_i are log-uniform
over 1e-6 ... 1e-1 (a network's gradient spans many decades), and
micro-batch j's gradient is ``g_j = m * (1 + 0.5 z_j)`` with z_j standard
normal noise, so the window mean is close to m.  Summation runs through the
library's own :class:`~minigrad.optim.buffers.GradBuffer`, the buffer the
accumulator uses.

The error measure is the relative L2 error of the window mean against the
same mean computed in float64: ``||mean - mean64|| / ||mean64||``.

Unit roundoffs u (half the spacing of the numbers in [1, 2)):
float32 2**-24 ~ 6.0e-8, float16 2**-11 ~ 4.9e-4, bfloat16 2**-8 ~ 3.9e-3.
"""
from __future__ import annotations

import numpy as np

from ..optim.buffers import GradBuffer, resolve_dtype
from ..tensor import Tensor

D = 20_000
MAGNITUDES = (1e-6, 1e-1)

UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "float16": 2.0 ** -11,
                 "bfloat16": 2.0 ** -8}


def magnitudes(d: int = D, seed: int = 0) -> np.ndarray:
    """m, shape (d,), float64: log-uniform over 1e-6 ... 1e-1."""
    rng = np.random.default_rng(seed)
    low, high = np.log10(MAGNITUDES[0]), np.log10(MAGNITUDES[1])
    return 10.0 ** rng.uniform(low, high, size=d)


def micro_batch_gradients(k: int, d: int = D, seed: int = 0):
    """Yield k float64 gradients of shape (d,): ``m * (1 + 0.5 z_j)``."""
    m = magnitudes(d, seed)
    rng = np.random.default_rng(seed + 1)
    for _ in range(k):
        yield m * (1.0 + 0.5 * rng.standard_normal(d))


def stall_point(dtype, limit: int = 1 << 20) -> int:
    """Add 1.0 to a running sum in ``dtype`` until it stops growing; return the sum.

    float16 stops at 2048 (its spacing there is 2, and 2048 + 1 rounds back to
    2048 by round-half-to-even); bfloat16 at 256.  float32 would need 2**24
    steps; ``limit`` bounds the loop (ValueError when reached).
    """
    dt = resolve_dtype(dtype)
    one = np.ones(1, dtype=dt)
    total = np.zeros(1, dtype=dt)
    for _ in range(limit):
        new = total + one
        if new[0] == total[0]:
            return int(float(total[0]))
        total = new
    raise ValueError(f"stall_point: {dtype} still grows after {limit} additions")


def window_mean(dtype, k: int, *, compensated: bool = False, d: int = D,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Accumulate k micro-batch gradients in a buffer of ``dtype``; return
    ``(mean, mean64)``: the buffer's sum / k and the float64 mean, both float64 (d,)."""
    buffer = GradBuffer(dtype, compensated=compensated)
    param = Tensor(np.zeros(d))
    exact = np.zeros(d)
    for g in micro_batch_gradients(k, d, seed):
        exact += g
        param.grad = Tensor(g)
        buffer.add([param])
    buffer.write([param])
    return param.grad.data / k, exact / k


def relative_error(approx, exact) -> float:
    """``||approx - exact|| / ||exact||`` (L2 norms), computed in float64."""
    approx, exact = np.asarray(approx, np.float64), np.asarray(exact, np.float64)
    return float(np.linalg.norm(approx - exact) / np.linalg.norm(exact))


def window_mean_error(dtype, k: int, *, compensated: bool = False, d: int = D,
                      seed: int = 0) -> float:
    """Relative L2 error of the window mean summed in ``dtype`` (see the module doc)."""
    return relative_error(*window_mean(dtype, k, compensated=compensated, d=d, seed=seed))


def rounded_once_error(dtype, k: int, *, d: int = D, seed: int = 0) -> float:
    """The error of the exact window mean rounded to ``dtype`` once: the best a
    buffer of that dtype can store (the floor for Kahan summation)."""
    _, exact = window_mean("float64", k, d=d, seed=seed)
    return relative_error(exact.astype(resolve_dtype(dtype)).astype(np.float64), exact)


RUNS = {"float32": ("float32", False), "float16": ("float16", False),
        "bfloat16": ("bfloat16", False), "float16 + Kahan": ("float16", True),
        "bfloat16 + Kahan": ("bfloat16", True)}


def error_table(ks=(1, 4, 16, 64, 256, 1024, 4096), *, d: int = D, seed: int = 0) -> dict:
    """Errors against k: ``{name: [error at each k]}`` for the buffers of
    :data:`RUNS` (float32, float16, bfloat16, float16 + Kahan, bfloat16 +
    Kahan) and the rounding-once floors ``"float16 once"`` and ``"bfloat16
    once"``; plus ``"k": list(ks)``.

    One pass over max(ks) micro-batches feeds every buffer; the window of k
    micro-batches is the first k of the stream (the same as
    :func:`window_mean_error` with that k), read at each k of ``ks``.
    """
    ks = sorted(int(k) for k in ks)
    buffers = {name: GradBuffer(dtype, compensated=c) for name, (dtype, c) in RUNS.items()}
    param = Tensor(np.zeros(d))
    exact = np.zeros(d)
    table = {"k": ks, **{name: [] for name in RUNS},
             "float16 once": [], "bfloat16 once": []}
    for j, g in enumerate(micro_batch_gradients(ks[-1], d, seed), start=1):
        exact += g
        for buffer in buffers.values():
            param.grad = Tensor(g)
            buffer.add([param])
        if j in ks:
            mean64 = exact / j
            for name, buffer in buffers.items():
                table[name].append(relative_error(buffer.sums[0].astype(np.float64) / j, mean64))
            for dtype in ("float16", "bfloat16"):
                once = mean64.astype(resolve_dtype(dtype)).astype(np.float64)
                table[f"{dtype} once"].append(relative_error(once, mean64))
    return table


def underflow_fraction(k: int, *, divide: str = "before", d: int = D, seed: int = 0) -> float:
    """Fraction of gradient entries a float16 backward flushes to zero.

    A micro-batch's gradient is ``u = m * z`` (m as above, z standard
    normal: individual entries can be tiny).  Backward is linear in its seed,
    so a loss multiplied by s gives the gradient ``s * u``, and in float16 every
    product is rounded to float16: an entry smaller than half the smallest
    subnormal, 2**-25 ~ 3e-8, becomes 0.

    Args:
        k: the number of micro-batches in the window.
        divide: ``"before"``: each micro-batch loss is divided by k before its
            backward (the gradient computed is ``fp16(u / k)``);
            ``"after"``: the losses are back-propagated as they are
            (``fp16(u)``) and the window's sum is divided by k once, in the
            float32 buffer.

    Returns:
        The fraction (0 ... 1) of the entries of one micro-batch's gradient
        that are zero in float16 but not in float64.
    """
    if divide not in ("before", "after"):
        raise ValueError(f"underflow_fraction: divide must be 'before' or 'after', "
                         f"got {divide!r}")
    rng = np.random.default_rng(seed + 2)
    u = magnitudes(d, seed) * rng.standard_normal(d)
    seed_value = np.float16(1.0 / k) if divide == "before" else np.float16(1.0)
    grad = seed_value * u.astype(np.float16)          # float16 times float16: float16
    return float(np.mean((grad == 0) & (u != 0)))


__all__ = ["D", "MAGNITUDES", "UNIT_ROUNDOFF", "RUNS", "magnitudes", "micro_batch_gradients",
           "stall_point", "window_mean", "relative_error", "window_mean_error",
           "rounded_once_error", "error_table", "underflow_fraction"]
