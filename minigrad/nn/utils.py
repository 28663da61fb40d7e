"""Saving and loading state dicts as NumPy ``.npz`` files.

PyTorch pickles with ``torch.save``; minigrad writes the open ``.npz`` format
instead (readable by ``numpy.load`` and by any tool, and never runs code when
loaded: ``allow_pickle=False``).  Use ``minigrad.nn.utils.save(model.state_dict(),
path)`` / ``model.load_state_dict(minigrad.nn.utils.load(path))``, or the
shortcuts ``model.save(path)`` / ``model.load(path)``.
"""
from __future__ import annotations

import os

import numpy as np

from .. import backend
from ..tensor import Tensor


def save(state_dict: dict, path) -> None:
    """Write a mapping of names to arrays (or Tensors) to ``path`` (.npz, uncompressed).

    NumPy appends ``.npz`` to a path without that suffix.
    Raises TypeError for a value that is not an array or a Tensor.
    """
    arrays = {}
    for key, value in state_dict.items():
        data = value.data if isinstance(value, Tensor) else value
        if not (isinstance(data, np.ndarray) or backend.is_cupy_array(data)):
            raise TypeError(f"save: value of {key!r} must be an array or a Tensor, got "
                            f"{type(value).__name__}")
        arrays[key] = backend.asnumpy(data)
    np.savez(os.fspath(path), **arrays)


def load(path) -> dict:
    """Read a ``.npz`` written by :func:`save` into a dict of NumPy arrays, in
    the order they were saved.  Raises FileNotFoundError for a missing file."""
    with np.load(os.fspath(path), allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}
