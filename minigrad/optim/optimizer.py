"""The Optimizer base class: parameter groups, per-parameter state, save and resume.

An optimizer reads each parameter's ``.grad`` and changes its ``.data`` in
place.  Parameters are kept in *parameter groups*: a list of dicts, each with
``"params"`` (a list of Tensors) and the group's hyperparameters (``"lr"`` and
the rest), so that, as in PyTorch, a learning-rate scheduler or a user can set
``optimizer.param_groups[i]["lr"]`` between steps.

``state[p]`` is a dict of per-parameter buffers (momentum, Adam's moments and
step count).  :meth:`Optimizer.state_dict` turns parameters into their index
in the groups (0, 1, 2, ... in order), so a state saved from one model loads
into a freshly built copy of it and the next step is exactly the same.
"""
from __future__ import annotations

import copy
import functools
import itertools
import math
import numbers

import numpy as np

from .. import backend
from ..autograd import mark_modified
from ..tensor import Tensor

_required = object()  # marks a hyperparameter without a default (SGD's lr)


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray) or backend.is_cupy_array(x)


def _as_index(key):
    """A state key as a parameter index (an int, or a string of digits)."""
    if isinstance(key, str) and key.isdigit():
        return int(key)
    if isinstance(key, bool) or not isinstance(key, numbers.Integral):
        return key
    return int(key)


def check_state_keys(owner: str, state, keys) -> None:
    """Raise TypeError unless ``state`` is a dict, ValueError naming the missing keys."""
    if not isinstance(state, dict):
        raise TypeError(f"{owner}: expected a dict made by state_dict(), got "
                        f"{type(state).__name__}")
    missing = [k for k in keys if k not in state]
    if missing:
        raise ValueError(f"{owner}: not a state made by state_dict(); missing keys: "
                         f"{', '.join(missing)}")


def check_number(owner: str, name: str, value, *, low=0.0, low_inclusive=True,
                 high=None, high_inclusive=False) -> float:
    """Return ``value`` as a float after checking that it is a real number in range.

    Raises TypeError for a non-number (or bool) and ValueError for a value
    outside [low, high) (the bounds' inclusiveness is set by the flags).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{owner}: {name} must be finite, got {value}")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        bound = ">=" if low_inclusive else ">"
        raise ValueError(f"{owner}: {name} must be {bound} {low}, got {value}")
    if high is not None and (value > high or (value == high and not high_inclusive)):
        bound = "<=" if high_inclusive else "<"
        raise ValueError(f"{owner}: {name} must be {bound} {high}, got {value}")
    return value


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(self._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


def _step_with_hooks(step):
    """Wrap a subclass's ``step`` so that registered hooks run around it."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in list(self._step_pre_hooks.values()):
            hook(self, args, kwargs)
        self._check_step()          # everything the update reads, before it writes
        if self._step_is_atomic:
            result = step(self, *args, **kwargs)
        else:
            result = self._step_or_restore(step, args, kwargs)
        self._loaded_lrs = None     # see LRScheduler.load_state_dict
        _mark_updated(self)
        for hook in list(self._step_post_hooks.values()):
            hook(self, args, kwargs)
        return result
    return wrapper


def _mark_updated(optimizer) -> None:
    """The step wrote the parameters in place (``p.data``): stamp them, so that a
    backward through a graph that saved the old values raises, as PyTorch's
    "modified by an inplace operation", instead of using the new values."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                mark_modified(p.data)


class Optimizer:
    """Base class of minigrad's optimizers (PyTorch's ``torch.optim.Optimizer``).

    Args:
        params: an iterable of Tensors (leaves that require grad), or of dicts
            ``{"params": [...], "lr": ..., ...}`` that define parameter groups;
            keys missing from a group take the values in ``defaults``.
        defaults: the optimizer's default hyperparameters.

    Attributes:
        param_groups: list of dicts with ``"params"`` and the hyperparameters.
        state: dict mapping a parameter Tensor to its dict of buffers.
        defaults: the default hyperparameters.

    Subclasses implement :meth:`step` and may override :meth:`_check_group`
    to validate a group's hyperparameters.  Hooks registered with
    :meth:`register_step_pre_hook` / :meth:`register_step_post_hook` run
    around every ``step()`` (PyTorch's names): a place to log or record the
    gradient an update uses.

    **All or nothing.**  ``step()`` first checks everything the update will
    read (:meth:`_check_step`: every group's hyperparameters, every gradient's
    shape, dtype and device) and raises before any parameter changes; in
    minigrad's optimizers the update that follows is arithmetic on checked
    arrays.  An optimizer you write may raise after it has written; unless
    its class sets ``_step_is_atomic = True``, its ``step()`` keeps a copy of
    the parameters and the state and puts them back when it raises.
    ``load_state_dict`` checks the whole state before it replaces anything.
    (In minigrad's own optimizers an exception from inside the arithmetic
    itself, such as MemoryError, could still stop an update halfway: undoing
    that would need a copy of every parameter at every step, which they do
    not keep.)

    Raises:
        TypeError: ``params`` is a single Tensor or holds something that is not
            a Tensor; a parameter is not floating point or is not a leaf.
        ValueError: the parameter list is empty, a parameter appears twice, or
            a required hyperparameter is missing.
    """

    # True for an optimizer whose step() writes nothing before its checks
    # pass (minigrad's own); for others, step() keeps a copy of the parameters
    # and the state, and puts them back if the step raises.
    _step_is_atomic = False

    # The buffers of a non-empty per-parameter state, and what each holds:
    # "tensor" (an array of the parameter's shape and dtype) or "count" (an
    # int >= 0).  Subclasses set it; None (a custom optimizer) checks only
    # that arrays of the state have the parameter's shape.
    _state_spec: dict | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _step_with_hooks(cls.__dict__["step"])
            if "_step_is_atomic" not in cls.__dict__:
                cls._step_is_atomic = False     # a new step: no promise inherited

    def __init__(self, params, defaults: dict):
        self._step_pre_hooks: dict = {}
        self._step_post_hooks: dict = {}
        self._loaded_lrs = None     # the rates set by the last load_state_dict
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict = {}
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params must be an iterable of Tensors "
                            "or of dicts, got a single Tensor; wrap it in a list")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # --------------------------------------------------------------- groups
    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters (a dict with ``"params"``) with its own
        hyperparameters; missing ones come from ``defaults``."""
        name = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{name}: a parameter group must be a dict with a 'params' "
                            f"key, got {group!r}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: parameter {i} must be a Tensor, got "
                                f"{type(p).__name__}")
            if p.dtype.kind != "f":
                raise TypeError(f"{name}: parameter {i} has dtype {p.dtype}; only "
                                "floating-point tensors can be optimized")
            if not p.is_leaf:
                raise TypeError(f"{name}: parameter {i} (shape {p.shape}) is not a leaf "
                                "tensor; optimize the leaves (e.g. model.parameters())")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or seen & {id(p) for p in params}:
            raise ValueError(f"{name}: some parameters appear more than once; each "
                             "parameter may be in one group only, once")
        full = {**group, "params": params}
        for key, default in self.defaults.items():
            if default is _required and key not in full:
                raise ValueError(f"{name}: parameter group did not specify a value of "
                                 f"the required hyperparameter {key!r}")
            full.setdefault(key, default)
        self._check_group(full)
        self.param_groups.append(full)

    def _check_group(self, group: dict) -> None:
        """Validate a group's hyperparameters (subclasses override)."""

    def _params(self):
        """Every parameter, in group order (the order used by state_dict)."""
        return [p for group in self.param_groups for p in group["params"]]

    # ---------------------------------------------------------------- steps
    def step(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.step is not implemented")

    def _step_or_restore(self, step, args, kwargs):
        """Run a subclass's ``step``; if it raises, put back every parameter
        and the whole state as they were (for optimizers not marked
        ``_step_is_atomic``: their step may raise after writing)."""
        data = [(p, p.data.copy()) for p in self._params()]
        state = {p: {k: v.copy() if _is_array(v) else copy.deepcopy(v)
                     for k, v in buffers.items()} for p, buffers in self.state.items()}
        try:
            return step(self, *args, **kwargs)
        except BaseException:
            for p, saved in data:
                p.data = saved
            self.state = state
            raise

    def _check_group_as_set(self, values: dict) -> None:
        """:meth:`_check_group` on a group as a user or a scheduler left it:
        ``lr`` may then be of either sign, as PyTorch lets it be after
        construction (schedules multiply rates, so rounding can take a rate
        to -4.5e-18 at the end of LinearLR(end_factor=0), and chained
        schedules with an eta_min can go below 0)."""
        lr = values.get("lr")
        signed = isinstance(lr, numbers.Real) and not isinstance(lr, bool)
        if signed:
            values["lr"] = abs(lr)
        self._check_group(values)
        if signed:
            values["lr"] = math.copysign(values["lr"], lr)

    def _check_step(self) -> None:
        """Raise, before anything changes, if an update could not be made.

        Checks each group's hyperparameters again (a user or a scheduler may
        have set them since; ``lr`` must be a finite number, of either sign)
        and each gradient: a Tensor of the parameter's shape, dtype and
        device.  Subclasses with more to check extend it.

        Raises:
            TypeError / ValueError: naming the group or parameter and what
                was expected; nothing has been updated.
        """
        name = type(self).__name__
        for i, group in enumerate(self.param_groups):
            try:
                self._check_group_as_set(dict(group))
            except (TypeError, ValueError) as error:
                raise type(error)(f"{error} (parameter group {i}; nothing was "
                                  "updated)") from None
        for i, p in enumerate(self._params()):
            g = p.grad
            if g is None:
                continue
            if not isinstance(g, Tensor):
                raise TypeError(f"{name}.step: parameter {i} has a .grad of type "
                                f"{type(g).__name__}, expected a Tensor; nothing was updated")
            if g.shape != p.shape or g.dtype != p.dtype or g.device != p.device:
                raise ValueError(f"{name}.step: parameter {i} (shape {p.shape}, {p.dtype}, "
                                 f"{p.device}) has a gradient of shape {g.shape}, {g.dtype}, "
                                 f"{g.device}; expected the parameter's shape, dtype and "
                                 "device; nothing was updated")
            self._check_buffers(i, p)

    def _check_buffers(self, i, p) -> None:
        """Raise when a buffer of ``p``'s state (momentum, Adam's moments) no
        longer fits ``p``: its ``.data`` was replaced by one of another shape
        or device after the state was made.  The update would otherwise fail
        after writing the parameters before it."""
        spec = self._state_spec
        for k, v in self.state.get(p, {}).items():
            kind = None if spec is None else spec.get(k)
            if not _is_array(v) or not (kind == "tensor" or v.ndim):
                continue
            device = backend.device_of(v)
            if tuple(v.shape) != p.shape or device != p.device:
                raise ValueError(f"{type(self).__name__}.step: buffer {k!r} of parameter {i} "
                                 f"has shape {tuple(v.shape)}, {v.dtype}, {device}, the "
                                 f"parameter {p.shape}, {p.dtype}, {p.device} (was its .data "
                                 "replaced after the optimizer's first step? make a new "
                                 "optimizer, or move the model before making it); nothing "
                                 "was updated")

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before every ``step()``.

        At that moment every ``.grad`` holds the gradient the update is about
        to use (with :class:`GradientAccumulator`: the normalized, clipped
        gradient of the whole window).  Returns a handle with ``remove()``.
        """
        handle = RemovableHandle(self._step_pre_hooks)
        self._step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after every ``step()``;
        returns a handle with ``remove()``."""
        handle = RemovableHandle(self._step_post_hooks)
        self._step_post_hooks[handle.id] = hook
        return handle

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient.

        With ``set_to_none=True`` (PyTorch's default) ``.grad`` becomes None,
        which frees the memory and lets :meth:`step` skip the parameter; with
        False the gradient arrays are filled with zeros in place.
        """
        # BEGIN SOLUTION ch03.9
        for p in self._params():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.data[...] = 0
        # END SOLUTION

    # ------------------------------------------------------ save and resume
    def state_dict(self) -> dict:
        """The optimizer's state as a dict, ready to save and to load into a copy.

        Returns ``{"state": {index: {name: value}}, "param_groups": [...]}``
        where parameters are replaced by their index in group order and the
        buffers are copies (NumPy or CuPy arrays, as the parameters are).
        """
        index = {id(p): i for i, p in enumerate(self._params())}
        state = {}
        for p, buffers in self.state.items():
            state[index[id(p)]] = {k: v.copy() if _is_array(v) else copy.deepcopy(v)
                                   for k, v in buffers.items()}
        groups = []
        for group in self.param_groups:
            saved = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            saved["params"] = [index[id(p)] for p in group["params"]]
            groups.append(saved)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state made by :meth:`state_dict` (of an optimizer of the
        same kind over parameters of the same shapes, in the same groups).

        Hyperparameters of the groups (``lr`` and ``initial_lr`` included) are
        taken from the saved state; buffers are copied onto each parameter's
        device.  Everything is checked before anything is replaced, so a state
        that does not fit raises here (not at the next ``step()``) and leaves
        the optimizer as it was.

        Raises:
            TypeError: ``state_dict`` is not a dict, or a value has the wrong type.
            ValueError: a key ("state", "param_groups") is missing; the number
                of groups or of parameters per group differs; a group lacks
                this optimizer's hyperparameters or holds a bad value; a
                state's index is not one of the groups' parameters; a buffer
                is not this optimizer's (e.g. SGD's momentum in Adam), or has
                the wrong shape or dtype.
        """
        name = f"{type(self).__name__}.load_state_dict"
        check_state_keys(name, state_dict, ("state", "param_groups"))
        saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        if not isinstance(saved_groups, (list, tuple)) or len(saved_groups) != \
                len(self.param_groups):
            count = len(saved_groups) if isinstance(saved_groups, (list, tuple)) else "no"
            raise ValueError(f"{name}: the saved state has {count} parameter groups "
                             f"(a list), this optimizer has {len(self.param_groups)}")
        if not isinstance(saved_state, dict):
            raise TypeError(f"{name}: 'state' must be a dict from parameter index to "
                            f"buffers, got {type(saved_state).__name__}")
        by_index, new_groups = {}, []
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            new_groups.append(self._check_saved_group(name, i, saved, group))
            for index, p in zip(saved["params"], group["params"]):
                if index in by_index:
                    raise ValueError(f"{name}: parameter index {index} appears twice "
                                     "in the saved groups")
                by_index[index] = p
        new_state = {}
        for key, buffers in saved_state.items():
            index = _as_index(key)
            if index not in by_index:
                raise ValueError(f"{name}: the state has buffers for parameter index "
                                 f"{key!r}, which is not in the saved groups (indices "
                                 f"{sorted(by_index)})")
            p = by_index[index]
            new_state[p] = self._check_saved_buffers(name, index, buffers, p)
        # Checked: now replace, all at once.
        self.state = new_state
        for group, values in zip(self.param_groups, new_groups):
            group.clear()
            group.update(values)
        self._loaded_lrs = [group["lr"] for group in self.param_groups]

    def _check_saved_group(self, name, i, saved, group) -> dict:
        """The group's new contents (params kept) after checking the saved one."""
        if not isinstance(saved, dict) or not isinstance(saved.get("params"), (list, tuple)):
            raise TypeError(f"{name}: saved group {i} must be a dict with a 'params' list "
                            f"of indices, got {saved!r}")
        if len(saved["params"]) != len(group["params"]):
            raise ValueError(f"{name}: group {i} has {len(saved['params'])} parameters in "
                             f"the saved state but {len(group['params'])} here")
        for index in saved["params"]:
            if isinstance(index, bool) or not isinstance(index, numbers.Integral):
                raise TypeError(f"{name}: saved group {i} lists {index!r} as a parameter; "
                                "expected integer indices")
        missing = [k for k in self.defaults if k not in saved]
        if missing:
            has = sorted(k for k in saved if k != "params")
            raise ValueError(f"{name}: saved group {i} lacks {type(self).__name__}'s "
                             f"hyperparameters {missing} (has {has}); was it saved from "
                             "another optimizer?")
        values = {k: v for k, v in group.items() if k != "params"}   # keys the save lacks stay
        values.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
        values["params"] = group["params"]
        try:
            self._check_group_as_set(values)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{name}: saved group {i}: {error}") from None
        return values

    def _check_saved_buffers(self, name, index, buffers, p) -> dict:
        """Copies of one parameter's saved buffers, on its device, after checking them."""
        if not isinstance(buffers, dict):
            raise TypeError(f"{name}: the state of parameter {index} must be a dict of "
                            f"buffers, got {type(buffers).__name__}")
        spec = self._state_spec
        if spec is not None and buffers and set(buffers) != set(spec):
            raise ValueError(f"{name}: the state of parameter {index} has buffers "
                             f"{sorted(buffers)}, {type(self).__name__} keeps "
                             f"{sorted(spec)}; was it saved from another optimizer?")
        restored = {}
        for k, v in buffers.items():
            kind = None if spec is None else spec[k]
            if kind == "count":
                count = v.item() if _is_array(v) and v.size == 1 else v
                if isinstance(count, bool) or not isinstance(count, numbers.Integral) \
                        or count < 0:
                    raise ValueError(f"{name}: buffer {k!r} of parameter {index} must be "
                                     f"an int >= 0, got {v!r}")
                restored[k] = int(count)
                continue
            if not _is_array(v):
                if kind == "tensor":
                    raise TypeError(f"{name}: buffer {k!r} of parameter {index} must be an "
                                    f"array, got {type(v).__name__}")
                restored[k] = copy.deepcopy(v)
                continue
            if (kind == "tensor" or v.ndim) and tuple(v.shape) != p.shape:
                raise ValueError(f"{name}: buffer {k!r} of parameter {index} has shape "
                                 f"{tuple(v.shape)}, the parameter has shape {p.shape}")
            if kind == "tensor" and v.dtype != p.dtype:
                raise ValueError(f"{name}: buffer {k!r} of parameter {index} has dtype "
                                 f"{v.dtype}, the parameter has {p.dtype} (load into a "
                                 "model of the saved precision, or cast the state)")
            restored[k] = backend.to_device(v, p.device).copy()
        return restored

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in group if k != "params"):
                lines.append(f"    {k}: {group[k]}")
        lines.append(")")
        return "\n".join(lines)
