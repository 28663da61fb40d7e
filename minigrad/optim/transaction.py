"""All or nothing: what runs around every optimizer step.

The optimizers' ``step`` methods read as if nothing could fail.
:func:`step_with_hooks` wraps each of them (``Optimizer.__init_subclass__``)
to keep that promise: the pre-hooks, the checks of everything the update
reads (:func:`~minigrad.optim.checks.check_step`), the step itself (restored
from a copy if the optimizer does not promise to write only after its
checks), then the in-place stamps of the parameters and the post-hooks.
(The scheduler's part of a window's update is
:class:`~minigrad.optim.lr_scheduler.step_ahead`.)
"""
from __future__ import annotations

import copy
import functools

from .. import backend
from ..versions import mark_modified


def step_with_hooks(step):
    """Wrap an optimizer class's ``step`` so that hooks, checks and undo run around it."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in list(self._step_pre_hooks.values()):
            hook(self, args, kwargs)
        self._check_step()          # everything the update reads, before it writes
        if self._step_is_atomic:
            self._dry_run()         # np.seterr(...="raise"): the arithmetic first, unwritten
            try:
                result = step(self, *args, **kwargs)
            except BaseException:   # inside the arithmetic: some parameters may be written
                self._step_interrupted = True
                raise
            self._step_interrupted = False
        else:
            result = step_or_restore(self, step, args, kwargs)
        self._loaded_lrs = None     # see LRScheduler.load_state_dict
        mark_updated(self)
        for hook in list(self._step_post_hooks.values()):
            hook(self, args, kwargs)
        return result
    return wrapper


def mark_updated(optimizer) -> None:
    """The step wrote the parameters in place (``p.data``): stamp them, so that a
    backward through a graph that saved the old values raises, as PyTorch's
    "modified by an inplace operation", instead of using the new values."""
    for p in optimizer._params():
        if p.grad is not None:
            mark_modified(p.data)


def copy_buffers(buffers: dict) -> dict:
    """A copy of one parameter's state: arrays copied, other values deep-copied."""
    return {k: v.copy() if backend.is_array(v) else copy.deepcopy(v)
            for k, v in buffers.items()}


def step_or_restore(optimizer, step, args, kwargs):
    """Run ``step``; if it raises, put back every parameter and the whole state
    as they were (for optimizers not marked ``_step_is_atomic``: their step
    may raise after writing)."""
    data = [(p, p.data.copy()) for p in optimizer._params()]
    state = {p: copy_buffers(buffers) for p, buffers in optimizer.state.items()}
    try:
        return step(optimizer, *args, **kwargs)
    except BaseException:
        for p, saved in data:
            p.data = saved
        optimizer.state = state
        raise
