"""A rehearsal of a step that writes nothing, for when NumPy raises on errors.

Under ``np.seterr(all="raise")`` (or ``over="raise"``...), an update can raise
``FloatingPointError`` halfway: the first parameters already written, the
rest not.  To keep every step all or nothing, :func:`dry_run` first runs the
optimizer's own ``step`` on copies: for each parameter, block by block
(``updates.BLOCK`` elements at a time, so the copies are one block, never a
parameter), on a stand-in parameter and state that hold copies of that
block.  Every element sees the operations it will see in the real step, in
the same order, so if the rehearsal passes, the real step cannot raise
either; and the rehearsal is the step itself, not a second copy of its lines.
In NumPy's default error state (warnings, not errors) nothing here runs: no
extra time, no extra memory.
"""
from __future__ import annotations

import copy

import numpy as np

from .. import backend
from .updates import BLOCK


def errors_raise() -> bool:
    """True when NumPy is set to raise on some floating-point error."""
    return "raise" in np.geterr().values()


def _blocks(*arrays):
    """Matching flat blocks of same-shape arrays (None stays None), copied."""
    size = next(a.size for a in arrays if a is not None)
    flat = [None if a is None else a.reshape(-1) for a in arrays]
    for start in range(0, max(size, 1), BLOCK):
        block = slice(start, start + BLOCK)
        yield [None if a is None else a[block].copy() for a in flat]


def dry_run(optimizer) -> None:
    """Raise ``FloatingPointError`` now if ``optimizer.step()`` would raise one
    in its arithmetic; write nothing.  For optimizers whose update is
    elementwise (SGD, Adam, AdamW) on CPU arrays (the GPU kernels do not raise)."""
    if not errors_raise():
        return
    step = type(optimizer).step.__wrapped__          # the step without hooks and checks
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is None or backend.is_cupy_array(p.data):
                continue
            state = optimizer.state.get(p, {})
            names = [k for k, v in state.items() if backend.is_array(v) and v.size == p.size]
            for data, grad, *buffers in _blocks(p.data, p.grad.data,
                                                *[state[k] for k in names]):
                step(_rehearsal(optimizer, group, state, data, grad, dict(zip(names, buffers))))


def _rehearsal(optimizer, group, state, data, grad, buffers):
    """A shallow copy of ``optimizer`` whose one parameter holds ``data`` and
    ``grad`` (one block's copies) and whose state holds ``buffers`` (that
    block of each buffer) and copies of the other entries (the step count)."""
    from ..tensor import Tensor  # noqa: PLC0415 (minigrad.tensor imports optim lazily)
    stand_in = Tensor(data, requires_grad=True)
    stand_in.grad = Tensor(grad)
    rehearsal = copy.copy(optimizer)
    rehearsal.param_groups = [{**group, "params": [stand_in]}]
    rehearsal.state = {stand_in: {**{k: copy.deepcopy(v) for k, v in state.items()
                                     if k not in buffers}, **buffers}} if state else {}
    return rehearsal
