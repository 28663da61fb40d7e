"""``tinygrad.tensor`` for the operator suite: Tensor and ``_to_np_dtype``."""
import numpy as np

from . import Tensor  # noqa: F401


def _to_np_dtype(dtype):
    return np.dtype(dtype)
