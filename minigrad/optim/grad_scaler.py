"""GradScaler: dynamic loss scaling, PyTorch's ``torch.amp.GradScaler`` on NumPy/CuPy.

A gradient smaller than float16's smallest subnormal (2**-24 ~ 6e-8) is
flushed to zero in a float16 backward or buffer.  Multiplying the loss by a
scale S multiplies every gradient by S (backward is linear in its seed), which
lifts small gradients into range; dividing by S once before the update
("unscaling") gives back the true gradient.  Too large an S overflows to inf:
the update is then skipped and S lowered.  After ``growth_interval`` good
updates in a row S is raised again (Micikevicius et al. 2018, "Mixed
Precision Training", ICLR, sec. 3.2).

With gradient accumulation the unit is the *window*: the scaled gradients of
all k micro-batches are summed, then unscaled **once**, checked once,
clipped, and the optimizer steps once (or the whole window is skipped).  Pass
the scaler to :class:`~minigrad.optim.GradientAccumulator` (``scaler=``) and
it does exactly that; used alone, the calls are PyTorch's::

    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)           # optional: before clipping
    clip_grad_norm_(params, 1.0)
    scaler.step(optimizer)               # skipped if a gradient is inf/nan
    scaler.update()
"""
from __future__ import annotations

import math
import numbers

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer


class GradScaler:
    """Dynamic loss scaling (PyTorch's names, defaults and semantics).

    Args:
        init_scale: the first scale S (float > 0), default 2**16.
        growth_factor: S is multiplied by it after ``growth_interval`` updates
            in a row without inf/nan (> 1), default 2.0.
        backoff_factor: S is multiplied by it after an update with inf/nan
            (in (0, 1)), default 0.5.
        growth_interval: the run of good updates before growing (int >= 1),
            default 2000.
        enabled: if False, every method is a pass-through (scale 1, no checks).

    Raises:
        TypeError: a setting is not a number (``growth_interval``: not an int).
        ValueError: a factor or interval out of range.
    """

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _check_settings("GradScaler", "init_scale", init_scale, growth_factor,
                        backoff_factor, growth_interval)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._enabled = bool(enabled)
        self._per_optimizer = {}  # id(optimizer) -> {"unscaled", "found_inf", "stepped": bool}

    # ---------------------------------------------------------------- reading
    def get_scale(self) -> float:
        """The current scale S (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def found_inf(self, optimizer) -> bool:
        """Whether the last unscale of ``optimizer``'s gradients met inf or nan."""
        return self._per_optimizer.get(id(optimizer), {}).get("found_inf", False)

    # ---------------------------------------------------------------- the steps
    def scale(self, outputs):
        """``outputs * S``: a Tensor, or a list/tuple of Tensors (returned alike)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: expected a Tensor or a list/tuple of Tensors, "
                        f"got {type(outputs).__name__}")

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by S, in place, and
        record whether any is inf or nan.

        Call it at most once per update (per window), after the last backward
        and before clipping.

        Raises:
            TypeError: ``optimizer`` is not a minigrad Optimizer.
            RuntimeError: called twice since the last :meth:`update`.
        """
        if not self._enabled:
            return
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"GradScaler.unscale_: expected a minigrad Optimizer, "
                            f"got {type(optimizer).__name__}")
        state = self._per_optimizer.setdefault(id(optimizer), _fresh_state())
        if state["unscaled"]:
            raise RuntimeError("GradScaler.unscale_: unscale_() has already been called on "
                               "this optimizer since the last update(); unscale once per "
                               "update (once per accumulation window)")
        # BEGIN SOLUTION ch12.2
        inv_scale = 1.0 / self._scale
        grads = [p.grad.data for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        for g in grads:
            g *= g.dtype.type(inv_scale)
        found_inf = not backend.all_finite(grads)   # one read on the host, not one per grad
        # END SOLUTION
        state["unscaled"] = True
        state["found_inf"] = found_inf

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done), then ``optimizer.step()`` unless a gradient is inf/nan.

        Returns:
            What ``optimizer.step`` returns, or None when the step is skipped.

        Raises:
            RuntimeError: ``step`` was already called on this optimizer since
                the last :meth:`update` (PyTorch's rule: one step per update).
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._per_optimizer.get(id(optimizer))
        if state is not None and state["stepped"]:
            raise RuntimeError("GradScaler.step: step() has already been called since the "
                               "last update(); call update() after each step")
        if state is None or not state["unscaled"]:
            self.unscale_(optimizer)
            state = self._per_optimizer[id(optimizer)]
        state["stepped"] = True
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def _record_found_inf(self, optimizer) -> None:
        """Mark this update as one that met inf/nan although the gradients are
        finite: the accumulator's window whose loss was inf or nan (that
        micro-batch never ran backward, so no gradient shows it)."""
        state = self._per_optimizer.setdefault(id(optimizer), _fresh_state())
        state["unscaled"] = True
        state["found_inf"] = True

    def update(self, new_scale=None) -> None:
        """Adjust S after an update: times ``backoff_factor`` if any unscale since the last
        update found inf/nan, times ``growth_factor`` after ``growth_interval`` good
        updates in a row; or set it to ``new_scale`` if given.  Ends the update:
        the next window may unscale again.

        Raises:
            RuntimeError: no gradient was unscaled (checked for inf/nan) since
                the last update, so there is nothing to decide on (PyTorch
                raises too: "No inf checks were recorded prior to update").
            ValueError: ``new_scale`` is not a finite number > 0.
        """
        if not self._enabled:
            return
        if new_scale is None and not any(s["unscaled"] for s in self._per_optimizer.values()):
            raise RuntimeError("GradScaler.update: no inf checks were recorded since the last "
                               "update(); call step(optimizer) (or unscale_) first")
        if new_scale is not None:
            self._scale = _positive("GradScaler.update", "new_scale", new_scale)
        elif any(s["found_inf"] for s in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._per_optimizer = {}

    # ----------------------------------------------------------- save and load
    def state_dict(self) -> dict:
        """PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval,
        _growth_tracker (an empty dict when disabled, as in PyTorch)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict) -> None:
        """Restore :meth:`state_dict`.

        Raises:
            TypeError: ``state_dict`` is not a dict, or a value is not a number.
            RuntimeError: the dict is empty (saved from a disabled scaler).
            ValueError: a key is missing, or a value is out of the range
                ``__init__`` accepts.
        """
        if not self._enabled:
            return
        if not isinstance(state_dict, dict):
            raise TypeError(f"GradScaler.load_state_dict: expected a dict from "
                            f"GradScaler.state_dict(), got {type(state_dict).__name__}")
        if len(state_dict) == 0:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty, "
                               "it was saved from a disabled GradScaler")
        missing = [k for k in ("scale", "growth_factor", "backoff_factor", "growth_interval",
                               "_growth_tracker") if k not in state_dict]
        if missing:
            raise ValueError(f"GradScaler.load_state_dict: missing keys {missing}")
        _check_settings("GradScaler.load_state_dict", "scale", state_dict["scale"],
                        state_dict["growth_factor"], state_dict["backoff_factor"],
                        state_dict["growth_interval"])
        tracker = state_dict["_growth_tracker"]
        if isinstance(tracker, bool) or not isinstance(tracker, numbers.Integral) or \
                not 0 <= tracker < state_dict["growth_interval"]:
            raise ValueError(f"GradScaler.load_state_dict: _growth_tracker must be an int in "
                             f"[0, growth_interval), got {tracker!r}")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def __repr__(self):
        return (f"GradScaler(scale={self.get_scale()}, growth_factor={self._growth_factor}, "
                f"backoff_factor={self._backoff_factor}, "
                f"growth_interval={self._growth_interval}, enabled={self._enabled})")


def _fresh_state() -> dict:
    return {"unscaled": False, "found_inf": False, "stepped": False}


def _positive(where, name, value) -> float:
    """``value`` as a float, checked finite and > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: {name} must be a finite number > 0, got {value}")
    return float(value)


def _check_settings(where, scale_name, scale, growth_factor, backoff_factor, growth_interval):
    """The ranges ``__init__`` and ``load_state_dict`` both enforce."""
    _positive(where, scale_name, scale)
    if _positive(where, "growth_factor", growth_factor) <= 1.0:
        raise ValueError(f"{where}: growth_factor must be > 1, got {growth_factor}")
    if not _positive(where, "backoff_factor", backoff_factor) < 1.0:
        raise ValueError(f"{where}: backoff_factor must be in (0, 1), got {backoff_factor}")
    if isinstance(growth_interval, bool) or not isinstance(growth_interval, numbers.Integral):
        raise TypeError(f"{where}: growth_interval must be an int >= 1, "
                        f"got {growth_interval!r}")
    if growth_interval < 1:
        raise ValueError(f"{where}: growth_interval must be an int >= 1, got {growth_interval}")
