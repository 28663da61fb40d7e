"""Saving and loading a model's state dict as a NumPy ``.npz`` file.

PyTorch pickles with ``torch.save``; minigrad writes the open ``.npz`` format
instead (readable by ``numpy.load`` and by any tool, and never runs code when
loaded: ``allow_pickle=False``), atomically, through
:mod:`minigrad.serialization`.  Use ``minigrad.nn.utils.save(model.state_dict(),
path)`` / ``model.load_state_dict(minigrad.nn.utils.load(path))``, or the
shortcuts ``model.save(path)`` / ``model.load(path)``; both add ``.npz`` to a
path without it, so ``model.save("model")`` and ``model.load("model")`` meet
at ``model.npz``.
"""
from __future__ import annotations

import numpy as np

from .. import backend, serialization
from ..tensor import Tensor


def save(state_dict: dict, path) -> str:
    """Write a mapping of names to arrays (or Tensors) to ``path`` (.npz,
    uncompressed, written atomically: a crash leaves the previous file intact).

    ``.npz`` is appended to a path without that suffix (NumPy's rule); the
    path written is returned.

    Raises:
        TypeError: a key is not a str, or a value is not an array or a Tensor.
    """
    arrays = {}
    for key, value in state_dict.items():
        data = value.data if isinstance(value, Tensor) else value
        if not isinstance(key, str):
            raise TypeError(f"save: keys must be names (str), got {key!r}")
        if not backend.is_array(data):
            raise TypeError(f"save: value of {key!r} must be an array or a Tensor, got "
                            f"{type(value).__name__}")
        arrays[key] = data
    return serialization.save(arrays, path)


def load(path) -> dict:
    """Read a ``.npz`` written by :func:`save` into a dict of NumPy arrays, in
    the order they were saved (``.npz`` is appended to a path without it).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: the file is truncated or corrupted, or is not a
            model's state (a dict from names to arrays).
    """
    state = serialization.load(path)
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, np.ndarray) for k, v in state.items()):
        raise serialization.CheckpointError(
            serialization.checkpoint_path(path),
            "it holds no model state dict (a dict from names to arrays); read it with "
            "minigrad.load")
    return state
