"""Saving and resuming an optimizer: ``Optimizer.state_dict`` and ``load_state_dict``.

A saved state names parameters by their index in the groups (0, 1, 2, ... in
order), so a state saved from one model loads into a freshly built copy of
it and the next step is exactly the same.  The load checks the whole state
before it replaces anything.
"""
from __future__ import annotations

import copy
import numbers

from .. import backend
from .checks import check_group_as_set, check_state_keys
from .transaction import copy_buffers


def optimizer_state(optimizer) -> dict:
    """``optimizer.state_dict()``: see :meth:`Optimizer.state_dict`."""
    index = {id(p): i for i, p in enumerate(optimizer._params())}
    state = {index[id(p)]: copy_buffers(buffers) for p, buffers in optimizer.state.items()}
    groups = []
    for group in optimizer.param_groups:
        saved = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
        saved["params"] = [index[id(p)] for p in group["params"]]
        groups.append(saved)
    return {"state": state, "param_groups": groups}


def load_optimizer_state(optimizer, state_dict) -> None:
    """``optimizer.load_state_dict(state_dict)``: see :meth:`Optimizer.load_state_dict`."""
    name = f"{type(optimizer).__name__}.load_state_dict"
    check_state_keys(name, state_dict, ("state", "param_groups"))
    saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
    if not isinstance(saved_groups, (list, tuple)) or len(saved_groups) != \
            len(optimizer.param_groups):
        count = len(saved_groups) if isinstance(saved_groups, (list, tuple)) else "no"
        raise ValueError(f"{name}: the saved state has {count} parameter groups "
                         f"(a list), this optimizer has {len(optimizer.param_groups)}")
    if not isinstance(saved_state, dict):
        raise TypeError(f"{name}: 'state' must be a dict from parameter index to "
                        f"buffers, got {type(saved_state).__name__}")
    by_index, new_groups = {}, []
    for i, (saved, group) in enumerate(zip(saved_groups, optimizer.param_groups)):
        new_groups.append(_check_saved_group(optimizer, name, i, saved, group))
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
        new_state[p] = _check_saved_buffers(optimizer, name, index, buffers, p)
    # Checked: now replace, all at once.
    optimizer.state = new_state
    for group, values in zip(optimizer.param_groups, new_groups):
        group.clear()
        group.update(values)
    optimizer._loaded_lrs = [group["lr"] for group in optimizer.param_groups]


def _as_index(key):
    """A state key as a parameter index (an int, or a string of digits)."""
    if isinstance(key, str) and key.isdigit():
        return int(key)
    if isinstance(key, bool) or not isinstance(key, numbers.Integral):
        return key
    return int(key)


def _check_saved_group(optimizer, name, i, saved, group) -> dict:
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
    missing = [k for k in optimizer.defaults if k not in saved]
    if missing:
        has = sorted(k for k in saved if k != "params")
        raise ValueError(f"{name}: saved group {i} lacks {type(optimizer).__name__}'s "
                         f"hyperparameters {missing} (has {has}); was it saved from "
                         "another optimizer?")
    values = {k: v for k, v in group.items() if k != "params"}   # keys the save lacks stay
    values.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
    values["params"] = group["params"]
    try:
        check_group_as_set(optimizer, values)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{name}: saved group {i}: {error}") from None
    return values


def _check_saved_buffers(optimizer, name, index, buffers, p) -> dict:
    """Copies of one parameter's saved buffers, on its device, after checking them."""
    if not isinstance(buffers, dict):
        raise TypeError(f"{name}: the state of parameter {index} must be a dict of "
                        f"buffers, got {type(buffers).__name__}")
    spec = optimizer._state_spec
    if spec is not None and buffers and set(buffers) != set(spec):
        raise ValueError(f"{name}: the state of parameter {index} has buffers "
                         f"{sorted(buffers)}, {type(optimizer).__name__} keeps "
                         f"{sorted(spec)}; was it saved from another optimizer?")
    restored = {}
    for k, v in buffers.items():
        kind = None if spec is None else spec[k]
        if kind == "count":
            count = v.item() if backend.is_array(v) and v.size == 1 else v
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) \
                    or count < 0:
                raise ValueError(f"{name}: buffer {k!r} of parameter {index} must be "
                                 f"an int >= 0, got {v!r}")
            restored[k] = int(count)
            continue
        if not backend.is_array(v):
            if kind == "tensor":
                raise TypeError(f"{name}: buffer {k!r} of parameter {index} must be an "
                                f"array, got {type(v).__name__}")
            restored[k] = copy.deepcopy(v)
            continue
        if (kind == "tensor" or v.ndim) and tuple(v.shape) != p.shape:
            raise ValueError(f"{name}: buffer {k!r} of parameter {index} has shape "
                             f"{tuple(v.shape)}, the parameter has shape {p.shape}")
        expected = optimizer._state_dtype(p.dtype)
        if kind == "tensor" and v.dtype != expected:
            raise ValueError(f"{name}: buffer {k!r} of parameter {index} has dtype "
                             f"{v.dtype}, expected {expected} for a {p.dtype} parameter "
                             "(load into a model of the saved precision, or cast the state)")
        restored[k] = backend.to_device(v, p.device).copy()
    return restored
