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
import numbers

import numpy as np

from .. import backend
from ..tensor import Tensor

_required = object()  # marks a hyperparameter without a default (SGD's lr)


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray) or backend.is_cupy_array(x)


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
    if not np.isfinite(value):
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
        result = step(self, *args, **kwargs)
        for hook in list(self._step_post_hooks.values()):
            hook(self, args, kwargs)
        return result
    return wrapper


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

    Raises:
        TypeError: ``params`` is a single Tensor or holds something that is not
            a Tensor; a parameter is not floating point or is not a leaf.
        ValueError: the parameter list is empty, a parameter appears twice, or
            a required hyperparameter is missing.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _step_with_hooks(cls.__dict__["step"])

    def __init__(self, params, defaults: dict):
        self._step_pre_hooks: dict = {}
        self._step_post_hooks: dict = {}
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

        Hyperparameters of the groups (``lr`` included) are taken from the
        saved state; buffers are copied onto each parameter's device.

        Raises:
            TypeError: ``state_dict`` is not a dict.
            ValueError: a key ("state", "param_groups") is missing; the number
                of groups, of parameters per group, or a buffer's shape does
                not match.
        """
        name = type(self).__name__
        check_state_keys(f"{name}.load_state_dict", state_dict, ("state", "param_groups"))
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the saved state has "
                             f"{len(saved_groups)} parameter groups, this optimizer has "
                             f"{len(self.param_groups)}")
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"{name}.load_state_dict: group {i} has "
                                 f"{len(saved['params'])} parameters in the saved state "
                                 f"but {len(group['params'])} here")
        by_index = {}
        for saved, group in zip(saved_groups, self.param_groups):
            by_index.update(zip(saved["params"], group["params"]))
        new_state = {}
        for i, buffers in state_dict["state"].items():
            p = by_index[int(i)]
            restored = {}
            for k, v in buffers.items():
                if _is_array(v):
                    if v.ndim and v.shape != p.data.shape:
                        raise ValueError(f"{name}.load_state_dict: buffer {k!r} of "
                                         f"parameter {i} has shape {tuple(v.shape)}, the "
                                         f"parameter has shape {p.shape}")
                    v = backend.to_device(v, p.device).copy()
                else:
                    v = copy.deepcopy(v)
                restored[k] = v
            new_state[p] = restored
        self.state = new_state
        for saved, group in zip(saved_groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    group[k] = copy.deepcopy(v)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in group if k != "params"):
                lines.append(f"    {k}: {group[k]}")
        lines.append(")")
        return "\n".join(lines)
