"""The checks of minigrad's optimizers: numbers in range, parameter groups, and
everything a step reads, checked before it writes.

Each function raises TypeError or ValueError naming the owner, the value and
what was expected; none of them changes anything.
"""
from __future__ import annotations

import math
import numbers

from .. import backend
from ..tensor import Tensor

required = object()  # marks a hyperparameter without a default (SGD's lr)


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


def check_params(optimizer, params) -> None:
    """The constructor's ``params``: an iterable (not a single Tensor), not empty."""
    name = type(optimizer).__name__
    if isinstance(params, Tensor):
        raise TypeError(f"{name}: params must be an iterable of Tensors "
                        "or of dicts, got a single Tensor; wrap it in a list")
    if not params:
        raise ValueError(f"{name}: got an empty parameter list")


def check_new_group(optimizer, group) -> None:
    """``add_param_group``'s argument: a dict with ``"params"`` (checked by
    :func:`check_group_params` once listed)."""
    if not isinstance(group, dict) or "params" not in group:
        raise TypeError(f"{type(optimizer).__name__}: a parameter group must be a dict with "
                        f"a 'params' key, got {group!r}")


def check_group_params(optimizer, params, full) -> None:
    """A new group's parameters (floating-point leaf Tensors, each in one group
    once) and its required hyperparameters."""
    name = type(optimizer).__name__
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{name}: parameter {i} must be a Tensor, got {type(p).__name__}")
        if p.dtype.kind != "f":
            raise TypeError(f"{name}: parameter {i} has dtype {p.dtype}; only "
                            "floating-point tensors can be optimized")
        if not p.is_leaf:
            raise TypeError(f"{name}: parameter {i} (shape {p.shape}) is not a leaf "
                            "tensor; optimize the leaves (e.g. model.parameters())")
    seen = {id(p) for p in optimizer._params()}
    if len({id(p) for p in params}) != len(params) or seen & {id(p) for p in params}:
        raise ValueError(f"{name}: some parameters appear more than once; each "
                         "parameter may be in one group only, once")
    for key, default in optimizer.defaults.items():
        if default is required and key not in full:
            raise ValueError(f"{name}: parameter group did not specify a value of "
                             f"the required hyperparameter {key!r}")


def check_group_as_set(optimizer, values: dict) -> None:
    """The optimizer's ``_check_group`` on a group as a user or a scheduler left
    it: ``lr`` may then be of either sign, as PyTorch lets it be after
    construction (schedules multiply rates, so rounding can take a rate to
    -4.5e-18 at the end of LinearLR(end_factor=0), and chained schedules with
    an eta_min can go below 0)."""
    lr = values.get("lr")
    signed = isinstance(lr, numbers.Real) and not isinstance(lr, bool)
    if signed:
        values["lr"] = abs(lr)
    optimizer._check_group(values)
    if signed:
        values["lr"] = math.copysign(values["lr"], lr)


def check_step(optimizer) -> None:
    """Raise, before anything changes, if an update could not be made.

    Checks each group's hyperparameters again (a user or a scheduler may have
    set them since; ``lr`` must be a finite number, of either sign) and each
    gradient: a Tensor of the parameter's shape, dtype and device; and each
    buffer of the parameter's state.

    Raises:
        TypeError / ValueError: naming the group or parameter and what was
            expected; nothing has been updated.
    """
    name = type(optimizer).__name__
    for i, group in enumerate(optimizer.param_groups):
        try:
            check_group_as_set(optimizer, dict(group))
        except (TypeError, ValueError) as error:
            raise type(error)(f"{error} (parameter group {i}; nothing was "
                              "updated)") from None
    for i, p in enumerate(optimizer._params()):
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
        check_writable(name, f"parameter {i}", p.data)
        check_buffers(optimizer, i, p)


def check_writable(name, what, array) -> None:
    """Raise ValueError when ``array`` (a parameter's or a buffer's) is read-only:
    the update would fail at it after writing the ones before it."""
    flags = getattr(array, "flags", None)
    if flags is not None and not getattr(flags, "writeable", True):
        raise ValueError(f"{name}.step: {what} is a read-only array (writeable=False); "
                         f"expected a writable array (e.g. p.data = p.data.copy()); "
                         f"nothing was updated")


def check_buffers(optimizer, i, p) -> None:
    """Raise when a buffer of ``p``'s state (momentum, Adam's moments) no
    longer fits ``p``: its ``.data`` was replaced by one of another shape
    or device after the state was made.  The update would otherwise fail
    after writing the parameters before it."""
    spec = optimizer._state_spec
    for k, v in optimizer.state.get(p, {}).items():
        kind = None if spec is None else spec.get(k)
        if not backend.is_array(v) or not (kind == "tensor" or v.ndim):
            continue
        check_writable(type(optimizer).__name__, f"buffer {k!r} of parameter {i}", v)
        device = backend.device_of(v)
        if tuple(v.shape) != p.shape or device != p.device:
            raise ValueError(f"{type(optimizer).__name__}.step: buffer {k!r} of parameter "
                             f"{i} has shape {tuple(v.shape)}, {v.dtype}, {device}, the "
                             f"parameter {p.shape}, {p.dtype}, {p.device} (was its .data "
                             "replaced after the optimizer's first step? make a new "
                             "optimizer, or move the model before making it); nothing "
                             "was updated")
