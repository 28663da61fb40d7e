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

Beside this file: the checks (:mod:`~minigrad.optim.checks`), what runs
around every ``step`` (:mod:`~minigrad.optim.transaction`) and save and
resume (:mod:`~minigrad.optim.optimizer_state`).
"""
from __future__ import annotations

import itertools

from ..tensor import Tensor
from .checks import check_group_params, check_new_group, check_params, check_step
from .dry_run import dry_run
from .optimizer_state import load_optimizer_state, optimizer_state
from .transaction import step_with_hooks


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
    the parameters and the state and puts them back when it raises
    (:mod:`minigrad.optim.transaction` wraps every subclass's ``step``).
    ``load_state_dict`` checks the whole state before it replaces anything.
    What a step does *not* promise: in minigrad's own optimizers an
    exception from inside the arithmetic itself (KeyboardInterrupt,
    MemoryError) can stop an update halfway, the parameters before that point
    stepped and the rest not; undoing it would need a copy of every parameter
    at every step, which they do not keep.  Such a step sets
    ``_step_interrupted``; :class:`~minigrad.optim.GradientAccumulator` then
    refuses to retry the window (a retry would step the early parameters
    twice) and says to restore the last checkpoint.  PyTorch's optimizers
    promise no more.

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
    _step_interrupted = False   # the last step raised inside its arithmetic (see above)

    @staticmethod
    def _state_dtype(dtype):
        """The dtype of the "tensor" buffers kept for a parameter of ``dtype``."""
        return dtype

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:              # hooks, checks and undo around it
            cls.step = step_with_hooks(cls.__dict__["step"])
            if "_step_is_atomic" not in cls.__dict__:
                cls._step_is_atomic = False     # a new step: no promise inherited

    def __init__(self, params, defaults: dict):
        self._step_pre_hooks: dict = {}
        self._step_post_hooks: dict = {}
        self._loaded_lrs = None     # the rates set by the last load_state_dict
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict = {}
        groups = params if isinstance(params, Tensor) else list(params)
        check_params(self, groups)
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # --------------------------------------------------------------- groups
    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters (a dict with ``"params"``) with its own
        hyperparameters; missing ones come from ``defaults``."""
        check_new_group(self, group)
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        full = {**group, "params": params}
        check_group_params(self, params, full)
        for key, default in self.defaults.items():
            full.setdefault(key, default)
        self._check_group(full)
        self.param_groups.append(full)

    def _check_group(self, group: dict) -> None:
        """Validate a group's hyperparameters (subclasses override)."""

    def _params(self) -> list:
        """Every parameter, in group order (the order used by state_dict)."""
        return [p for group in self.param_groups for p in group["params"]]

    # ---------------------------------------------------------------- steps
    def step(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.step is not implemented")

    def _check_step(self) -> None:
        """Raise, before anything changes, if an update could not be made
        (:func:`minigrad.optim.checks.check_step`); subclasses with more to
        check extend it."""
        check_step(self)

    def _dry_run(self) -> None:
        """When NumPy raises on floating-point errors, compute the update
        without writing, so that an overflow raises before the first write
        (:mod:`minigrad.optim.dry_run`; SGD, Adam and AdamW)."""
        dry_run(self)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient.  ``.grad = None`` (PyTorch's default)
        frees the memory and lets :meth:`step` skip the parameter; with
        ``set_to_none=False`` zeros are written into the gradient arrays."""
        # BEGIN SOLUTION ch03.9
        for p in self._params():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.data[...] = 0
        # END SOLUTION

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before every ``step()``.

        At that moment every ``.grad`` holds the gradient the update is about
        to use (with :class:`GradientAccumulator`: the normalized, clipped
        gradient of the whole window).  Returns a handle with ``remove()``.
        """
        return RemovableHandle(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after every ``step()``;
        returns a handle with ``remove()``."""
        return RemovableHandle(self._step_post_hooks, hook)

    # ------------------------------------------------------ save and resume
    def state_dict(self) -> dict:
        """The optimizer's state as a dict, ready to save and to load into a copy.

        Returns ``{"state": {index: {name: value}}, "param_groups": [...]}``
        where parameters are replaced by their index in group order and the
        buffers are copies (NumPy or CuPy arrays, as the parameters are).
        """
        return optimizer_state(self)

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
        load_optimizer_state(self, state_dict)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in group if k != "params"):
                lines.append(f"    {k}: {group[k]}")
        lines.append(")")
        return "\n".join(lines)


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict, hook=None):
        self._hooks = hooks
        self.id = next(self._ids)
        if hook is not None:
            hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)
