"""The accumulation window's record, and saving and resuming it mid-window.

:class:`Window` holds everything that a window's end resets; the accumulator
keeps one and replaces it by a fresh one when the window closes.  Its
fields are also the window's part of ``GradientAccumulator.state_dict()``,
so one list of names gives the reset, the saved keys and their check.

:func:`accumulator_state` and :func:`load_accumulator_state` implement
``state_dict`` and ``load_state_dict``: the load checks everything it can
first, then loads the optimizer, the scheduler, the BatchNorm statistics and
the buffer, and puts every one of them back if any raises.
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from .. import backend, nn
from ..tensor import Tensor
from .checks import check_number, check_state_keys
from .lr_scheduler import restore_state


@dataclasses.dataclass
class Window:
    """The state of the open accumulation window."""

    micro_step: int = 0            # micro-batches completed in the window (0 ... k-1)
    awaiting_step: bool = False    # backward() done, step() not yet
    mode: str | None = None        # "items" (num_items given) or "count"
    item_total: int | float = 0    # sum_j n_j
    loss_sum: float = 0.0          # sum_j n_j * L_j (on the GPU: a 0-d array until settle())
    nonfinite: bool = False        # a non-finite loss was seen in this window (idem)
    prepared: tuple | None = None  # (window loss, grad norm) once the grads are normalized

    @property
    def normalized(self) -> bool:
        """The window's gradient is divided and clipped (``prepared`` holds the
        result): a retried update steps on it as it is, without dividing again."""
        return self.prepared is not None

    def settle(self) -> None:
        """Make ``loss_sum`` a float and ``nonfinite`` a bool.  On the GPU they
        are 0-d device arrays during the window (``accumulation_device.py``),
        so that no micro-batch waits for the device; both come to the host
        here, in one transfer, at the window's end or when it is saved."""
        if not (backend.is_array(self.loss_sum) or backend.is_array(self.nonfinite)):
            return
        device = backend.device_of(self.loss_sum if backend.is_array(self.loss_sum)
                                   else self.nonfinite)
        xp = backend.array_module(device)
        both = xp.stack([xp.asarray(self.loss_sum, dtype=np.float64),
                         xp.asarray(self.nonfinite, dtype=np.float64)])
        loss_sum, nonfinite = backend.asnumpy(both).tolist()
        self.loss_sum, self.nonfinite = loss_sum, nonfinite != 0


WINDOW_KEYS = tuple(field.name for field in dataclasses.fields(Window))
COUNTER_KEYS = ("accumulation_steps", "max_grad_norm", "updates", "skipped_windows",
                "window_loss", "last_grad_norm")
PART_KEYS = ("pending_grads", "optimizer", "scheduler", "batchnorm")
STATE_KEYS = COUNTER_KEYS + WINDOW_KEYS + PART_KEYS


def accumulator_state(acc) -> dict:
    """``acc.state_dict()``: see :meth:`GradientAccumulator.state_dict`."""
    state = {key: getattr(acc, key) for key in COUNTER_KEYS}
    acc.window.settle()                 # a GPU window's loss sum, to the host
    state.update(dataclasses.asdict(acc.window))
    if acc.window.prepared is not None:
        state["prepared"] = list(acc.window.prepared)
    state["pending_grads"] = [None if p.grad is None else p.grad.data.copy()
                              for p in acc.optimizer._params()]
    state["optimizer"] = acc.optimizer.state_dict()
    state["scheduler"] = None if acc.scheduler is None else acc.scheduler.state_dict()
    state["batchnorm"] = None
    if acc.buffer is not None:
        state["buffer"] = acc.buffer.state_dict()
    if acc.model is not None:
        state["batchnorm"] = [layer.get_pending_stats()
                              for layer in nn.batchnorm_layers(acc.model)]
    return state


def load_accumulator_state(acc, state) -> None:
    """``acc.load_state_dict(state)``: see :meth:`GradientAccumulator.load_state_dict`."""
    name = "GradientAccumulator.load_state_dict"
    check_state_keys(name, state, STATE_KEYS)
    if acc.buffer is None and state.get("buffer") and state["buffer"]["sums"]:
        raise ValueError(f"{name}: the state holds a window summed in an accumulation "
                         "buffer (dtype=/compensated=); build this accumulator with "
                         "the same dtype and compensated")
    if state["accumulation_steps"] != acc.accumulation_steps:
        raise ValueError(f"{name}: saved with accumulation_steps="
                         f"{state['accumulation_steps']}, this accumulator has "
                         f"{acc.accumulation_steps}")
    counters, window = _check_counters(name, state, acc.accumulation_steps)
    params = acc.optimizer._params()
    grads = _check_pending_grads(name, state["pending_grads"], params)
    if (state["scheduler"] is None) != (acc.scheduler is None):
        raise ValueError(f"{name}: the saved state and this accumulator differ in "
                         "having a scheduler")
    if (state["batchnorm"] is None) != (acc.model is None):
        raise ValueError(f"{name}: the saved state and this accumulator differ in "
                         "having a model")
    layers = [] if acc.model is None else list(nn.batchnorm_layers(acc.model))
    if acc.model is not None and (not isinstance(state["batchnorm"], list)
                                  or len(state["batchnorm"]) != len(layers)):
        raise ValueError(f"{name}: saved pending statistics of {len(state['batchnorm'])} "
                         f"BatchNorm layers, the model has {len(layers)}")
    _load_parts(acc, state, layers)      # all or nothing
    for p, g in zip(params, grads):
        p.grad = g
    for key, value in counters.items():
        setattr(acc, key, value)
    acc.window = window


def _load_parts(acc, state, layers) -> None:
    """Load the optimizer, scheduler, BatchNorm statistics and buffer; if any of
    them raises (each checks its own part), put all of them back."""
    opt = acc.optimizer
    undo = (opt.state, [dict(g) for g in opt.param_groups], opt._loaded_lrs,
            None if acc.scheduler is None else acc.scheduler.state_dict(),
            [layer.get_pending_stats() for layer in layers],
            None if acc.buffer is None else acc.buffer.state_dict())
    try:
        opt.load_state_dict(state["optimizer"])
        if acc.scheduler is not None:
            acc.scheduler.load_state_dict(state["scheduler"])
        for layer, stats in zip(layers, state["batchnorm"] or ()):
            layer.set_pending_stats(stats)
        if acc.buffer is not None:
            acc.buffer.load_state_dict(state.get("buffer"))
    except BaseException:
        if acc.buffer is not None:
            acc.buffer.load_state_dict(undo[5])
        opt.state, opt._loaded_lrs = undo[0], undo[2]
        for group, saved in zip(opt.param_groups, undo[1]):
            group.clear()
            group.update(saved)
        if acc.scheduler is not None:
            restore_state(acc.scheduler, undo[3])
        for layer, stats in zip(layers, undo[4]):
            layer.set_pending_stats(stats)
        raise


def _check_counters(name, state, accumulation_steps):
    """The counters to set from ``state`` and its :class:`Window`, each checked."""
    def integer(key, low=0, high=None):
        value = state[key]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
                value < low or (high is not None and value > high):
            raise ValueError(f"{name}: {key} must be an int in [{low}, "
                             f"{'inf' if high is None else high}], got {value!r}")
        return int(value)

    def real(key, optional=True):
        value = state[key]
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}: {key} must be a number"
                            f"{' or None' if optional else ''}, got {value!r}")
        return value

    def flag(key):
        if not isinstance(state[key], bool):
            raise TypeError(f"{name}: {key} must be True or False, got {state[key]!r}")
        return state[key]

    if state["mode"] not in (None, "items", "count"):
        raise ValueError(f"{name}: mode must be None, 'items' or 'count', got "
                         f"{state['mode']!r}")
    max_grad_norm = state["max_grad_norm"]
    if max_grad_norm is not None:
        max_grad_norm = check_number(name, "max_grad_norm", max_grad_norm, low=0.0,
                                     low_inclusive=False)
    prepared = state["prepared"]
    if prepared is not None:
        if not isinstance(prepared, (list, tuple)) or len(prepared) != 2:
            raise ValueError(f"{name}: prepared must be None or [window_loss, "
                             f"grad_norm], got {prepared!r}")
        prepared = tuple(prepared)
    item_total = real("item_total", optional=False)
    micro_step = integer("micro_step", 0, accumulation_steps - 1)
    if item_total < 0:
        raise ValueError(f"{name}: item_total must be >= 0, got {item_total}")
    counters = {"max_grad_norm": max_grad_norm,
                "updates": integer("updates"),
                "skipped_windows": integer("skipped_windows"),
                "window_loss": real("window_loss"),
                "last_grad_norm": real("last_grad_norm")}
    window = Window(micro_step=micro_step,
                    awaiting_step=flag("awaiting_step"), mode=state["mode"],
                    item_total=item_total, loss_sum=real("loss_sum", optional=False),
                    nonfinite=flag("nonfinite"), prepared=prepared)
    return counters, window


def _check_pending_grads(name, pending, params) -> list:
    """The new ``.grad`` of every parameter (Tensors or None), built before any
    is assigned."""
    if not isinstance(pending, (list, tuple)) or len(pending) != len(params):
        count = len(pending) if isinstance(pending, (list, tuple)) else "no"
        raise ValueError(f"{name}: saved {count} gradients for {len(params)} parameters")
    grads = []
    for i, (p, g) in enumerate(zip(params, pending)):
        if g is None:
            grads.append(None)
            continue
        if not backend.is_array(g):
            raise TypeError(f"{name}: gradient {i} must be an array or None, got "
                            f"{type(g).__name__}")
        if tuple(g.shape) != p.shape:
            raise ValueError(f"{name}: gradient {i} has shape {tuple(g.shape)}, the "
                             f"parameter has {p.shape}")
        if g.dtype.kind != "f":
            raise TypeError(f"{name}: gradient {i} has dtype {g.dtype}, expected a "
                            f"floating-point array (it is cast to the parameter's {p.dtype})")
        grads.append(Tensor(backend.to_device(g, p.device).astype(p.dtype)))  # copies
    return grads
