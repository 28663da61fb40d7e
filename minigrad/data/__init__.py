"""minigrad.data: bundled real data sets, text helpers, loaders, micro-batches.

- ``datasets``: ``load_digits``, ``load_mnist_test``, ``load_tinyshakespeare``
  (files shipped in ``minigrad/data/files``; no download).
- ``text``: ``CharTokenizer``, ``pad_sequences``, ``make_lm_batch``,
  ``sample_variable_length_sequences``.
- ``loader``: ``TensorDataset``, ``DataLoader``, ``split_micro_batches``.
"""

from .datasets import DATA_DIR, data_path, load_digits, load_mnist_test, load_tinyshakespeare
from .loader import DataLoader, TensorDataset, split_micro_batches
from .text import CharTokenizer, make_lm_batch, pad_sequences, sample_variable_length_sequences

__all__ = [
    "DATA_DIR",
    "data_path",
    "load_digits",
    "load_mnist_test",
    "load_tinyshakespeare",
    "CharTokenizer",
    "pad_sequences",
    "make_lm_batch",
    "sample_variable_length_sequences",
    "TensorDataset",
    "DataLoader",
    "split_micro_batches",
]
