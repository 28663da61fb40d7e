"""Embedding: a lookup table of learned vectors."""
from __future__ import annotations

import numpy as np

from . import functional as F
from . import init
from .linear import empty_parameter
from .module import Module


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``
    (``torch.nn.Embedding``).

    Args:
        num_embeddings, embedding_dim: table size.
        padding_idx: an id whose row is initialized to 0 and gets no gradient.
        device, dtype: as for :class:`Linear`.

    Shapes: integer ids ``(*)`` -> ``(*, embedding_dim)``.  ``weight`` is
    (num_embeddings, embedding_dim), initialized N(0, 1) as in PyTorch.
    Repeated ids add up in backward.

    Raises ValueError for non-positive sizes, a padding_idx out of range, and
    (in forward) an id outside [0, num_embeddings).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        for name, n in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
                raise ValueError(f"Embedding: {name} must be a positive int, got {n!r}")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range "
                                 f"for num_embeddings={num_embeddings}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = padding_idx
        self.weight = empty_parameter((num_embeddings, embedding_dim), device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text
