"""A step's arithmetic without its writes, for when NumPy raises on errors.

Under ``np.seterr(all="raise")`` (or ``over="raise"``...), an update can raise
``FloatingPointError`` halfway: the first parameters already written, the
rest not.  To keep every step all or nothing, :func:`dry_run` first computes
the update of every parameter, block by block (``updates.BLOCK`` elements at
a time, so the temporaries are one block, never a parameter), with the same
operations in the same order as the optimizer's ``step``, and writes nothing.
If it passes, the real step makes the same operations on the same numbers and
cannot raise either.  In NumPy's default error state (warnings, not errors)
nothing here runs: no extra time, no extra memory.
"""
from __future__ import annotations

import math

import numpy as np

from .. import backend
from .updates import BLOCK, opmath_dtype


def errors_raise() -> bool:
    """True when NumPy is set to raise on some floating-point error."""
    return "raise" in np.geterr().values()


def _blocks(*arrays):
    """Matching flat blocks of same-shape arrays (None stays None), in opmath dtype."""
    size = next(a.size for a in arrays if a is not None)
    flat = [None if a is None else a.reshape(-1) for a in arrays]
    for start in range(0, max(size, 1), BLOCK):
        block = slice(start, start + BLOCK)
        yield [None if a is None else a[block].astype(opmath_dtype(a.dtype), copy=True)
               for a in flat]


def dry_run(optimizer) -> None:
    """Raise ``FloatingPointError`` now if ``optimizer.step()`` would raise one
    in its arithmetic; write nothing.  For SGD, Adam and AdamW (CPU arrays;
    the GPU kernels do not raise)."""
    if not errors_raise():
        return
    from .adam import Adam
    from .sgd import SGD
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is None or backend.is_cupy_array(p.data):
                continue
            state = optimizer.state.get(p, {})
            if isinstance(optimizer, Adam):
                _adam(optimizer, group, p, state)
            elif isinstance(optimizer, SGD):
                _sgd(group, p, state)


def _sgd(group, p, state):
    lr, momentum = group["lr"], group["momentum"]
    dampening, weight_decay = group["dampening"], group["weight_decay"]
    buffer = state.get("momentum_buffer") if momentum != 0 else None
    for data, g, buf in _blocks(p.data, p.grad.data, buffer):
        if weight_decay != 0:
            g = g + weight_decay * data
        if momentum != 0:
            if buf is None:
                buf = g.copy()
            else:
                buf *= momentum
                buf += (1 - dampening) * g
            g = g + momentum * buf if group["nesterov"] else buf
        data -= lr * g


def _adam(optimizer, group, p, state):
    lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    t = state.get("step", 0) + 1
    bias_correction1 = 1 - beta1 ** t
    bias_correction2_sqrt = math.sqrt(1 - beta2 ** t)
    step_size = lr / bias_correction1
    for data, g, m, v in _blocks(p.data, p.grad.data, state.get("exp_avg"),
                                 state.get("exp_avg_sq")):
        m = np.zeros_like(data) if m is None else m
        v = np.zeros_like(data) if v is None else v
        if weight_decay != 0 and optimizer.decoupled_weight_decay:
            data *= 1 - lr * weight_decay
        elif weight_decay != 0:
            g = g + weight_decay * data
        m += (1 - beta1) * (g - m)
        v *= beta2
        v += (1 - beta2) * (g * g)
        denom = np.sqrt(v) / bias_correction2_sqrt + eps
        data -= step_size * m / denom
