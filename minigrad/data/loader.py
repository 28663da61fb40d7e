"""Batches: a dataset of aligned arrays, a loader, and micro-batch splitting.

``DataLoader`` cuts a dataset into mini-batches of minigrad Tensors;
``split_micro_batches`` cuts one mini-batch into k micro-batches for gradient
accumulation (sum the gradients of the k parts, then take one optimizer step).

Nothing here imports the engine at module import time: ``minigrad.tensor`` is
looked up only when a batch is made.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["TensorDataset", "DataLoader", "split_micro_batches"]


def _first_dim(x, what: str) -> int:
    """Length of the first axis of an array-like with a ``shape``."""
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) == 0:
        raise ValueError(f"{what}: expected an array with at least one axis, got {type(x).__name__} with shape {shape}")
    return int(shape[0])


class TensorDataset:
    """Aligned arrays indexed together along their first axis (samples).

    Args:
        *arrays: one or more arrays (NumPy arrays, or anything ``numpy.asarray``
            accepts), all with the same first dimension N. ``X`` of shape
            (N, ...) and ``y`` of shape (N,) is the usual pair.

    ``len(ds)`` is N; ``ds[idx]`` is a tuple with ``array[idx]`` for each array,
    where ``idx`` is an int, a slice, or an integer index array.

    Raises:
        ValueError: if no arrays are given, an array is 0-d, or the first
            dimensions differ (the message lists them).
    """

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("TensorDataset: needs at least one array")
        self.arrays = tuple(a if hasattr(a, "shape") and hasattr(a, "dtype") else np.asarray(a) for a in arrays)
        lengths = [_first_dim(a, "TensorDataset") for a in self.arrays]
        if len(set(lengths)) != 1:
            raise ValueError(
                "TensorDataset: all arrays must have the same first dimension (number "
                f"of samples), got lengths {lengths}"
            )
        self._length = lengths[0]

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, idx):
        return tuple(a[idx] for a in self.arrays)

    def __repr__(self) -> str:
        shapes = ", ".join(str(tuple(a.shape)) for a in self.arrays)
        return f"TensorDataset({shapes})"


class DataLoader:
    """Iterate over a dataset in mini-batches of minigrad Tensors.

    Args:
        dataset: a ``TensorDataset``, or a tuple/list of aligned arrays
            (wrapped in one).
        batch_size: samples per batch, an int >= 1. The last batch is smaller
            when N is not a multiple of ``batch_size``, unless ``drop_last``.
        shuffle: if True, visit the samples in a new random order each epoch.
        seed: seed for ``numpy.random.default_rng``, the loader's own generator;
            the same seed gives the same sequence of epoch orders. ``None``
            draws fresh entropy.
        drop_last: drop the last batch if it is smaller than ``batch_size``.
        device: device of the batch Tensors ("cpu" or "cuda").

    Iterating yields, per batch, a tuple with one Tensor per dataset array:
    shape (b, ...) with b <= batch_size, the array's dtype, ``requires_grad``
    False. Each ``iter()`` is one epoch and advances ``epoch`` by one.
    ``len(loader)`` is the number of batches per epoch.

    Raises:
        TypeError: if ``batch_size`` is not an integer.
        ValueError: if ``batch_size`` < 1, or the dataset's arrays are misaligned.
    """

    def __init__(self, dataset, batch_size: int, shuffle: bool = False, seed=None,
                 drop_last: bool = False, device: str = "cpu"):
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
            raise TypeError(f"DataLoader: batch_size must be an int >= 1, got {batch_size!r}")
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be >= 1, got {batch_size}")
        if not isinstance(dataset, TensorDataset):
            if isinstance(dataset, (tuple, list)):
                dataset = TensorDataset(*dataset)
            else:
                dataset = TensorDataset(dataset)
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.drop_last = bool(drop_last)
        self.device = device
        self.epoch = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.drop_last:
            return n // self.batch_size
        return math.ceil(n / self.batch_size)

    def __iter__(self):
        from minigrad import tensor  # lazy: the data package loads without the engine

        n = len(self.dataset)
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        self.epoch += 1
        for b in range(len(self)):
            idx = order[b * self.batch_size : (b + 1) * self.batch_size]
            arrays = self.dataset[idx]  # integer-array indexing: always a copy
            yield tuple(tensor(a, dtype=a.dtype, device=self.device) for a in arrays)

    def __repr__(self) -> str:
        return (f"DataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last}, device={self.device!r})")


def split_micro_batches(batch, k: int) -> list:
    """Split one mini-batch into k micro-batches along the first axis.

    Sizes are as equal as possible: with n samples, the first ``n % k`` parts
    get ``n // k + 1`` samples and the rest ``n // k`` (the rule of
    ``numpy.array_split``). Concatenating the parts gives the batch back.

    Args:
        batch: an array or Tensor of shape (n, ...), or a tuple/list of them
            sharing the first dimension n (e.g. ``(x, y)``).
        k: number of micro-batches, ``1 <= k <= n``.

    Returns:
        list of k parts, each of the same kind as ``batch``: an array/Tensor of
        shape (n_i, ...), or a tuple of them. Parts are slices: NumPy parts are
        views; Tensor parts are made with ``t[a:b]``, so gradients flow back.

    Raises:
        ValueError: if k < 1 or k > n (some micro-batch would be empty; the
            message names both numbers), the batch has no first axis, or the
            items of a tuple differ in first dimension.
        TypeError: if k is not an integer.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"split_micro_batches: k must be an int, got {k!r}")
    is_group = isinstance(batch, (tuple, list))
    items = tuple(batch) if is_group else (batch,)
    if not items:
        raise ValueError("split_micro_batches: got an empty tuple of arrays")
    lengths = [_first_dim(x, "split_micro_batches") for x in items]
    if len(set(lengths)) != 1:
        raise ValueError(
            f"split_micro_batches: all parts of the batch must share the first dimension, got {lengths}"
        )
    n = lengths[0]
    if k < 1 or k > n:
        raise ValueError(
            f"split_micro_batches: cannot split a batch of {n} samples into k={k} "
            f"micro-batches; need 1 <= k <= {n} so that no micro-batch is empty"
        )
    # BEGIN SOLUTION ch04.2
    base, extra = divmod(n, k)
    bounds = [0]
    for i in range(k):
        bounds.append(bounds[-1] + base + (1 if i < extra else 0))
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        sliced = tuple(x[start:stop] for x in items)
        parts.append(sliced if is_group else sliced[0])
    return parts
    # END SOLUTION
