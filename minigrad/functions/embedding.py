"""Embedding lookup: rows of a weight matrix selected by integer ids."""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module, scatter_add


class EmbeddingFunction(Function):
    """out[..., :] = weight[ids[...], :].

    Inputs: weight (num_embeddings, embedding_dim); ``ids`` (any shape, integers)
    is given to ``__init__``.  Output: ids.shape + (embedding_dim,).
    Backward: dW[k] = Σ over positions with ids == k of g (repeated ids add
    up, via ``backend.scatter_add``); the row ``padding_idx`` gets no gradient,
    as in ``torch.nn.Embedding``.

    Raises ValueError naming the first id outside [0, num_embeddings).
    """

    def __init__(self, ids, padding_idx=None):
        self.ids = ids
        self.padding_idx = padding_idx

    def forward(self, weight):
        xp = get_array_module(weight)
        ids = self.ids
        if ids.dtype.kind not in "iu":
            raise TypeError(f"embedding: ids must be integers, got dtype {ids.dtype}")
        n = weight.shape[0]
        bad = (ids < 0) | (ids >= n)
        if bool(bad.any()):
            value = int(ids.reshape(-1)[xp.argmax(bad.reshape(-1))])
            raise ValueError(f"embedding: id {value} is out of range: ids must lie in "
                             f"[0, {n}) for num_embeddings={n}")
        self.weight_shape = weight.shape
        return weight[ids]

    def backward(self, g):
        xp = get_array_module(g)
        # BEGIN SOLUTION ch02.12
        grad = xp.zeros(self.weight_shape, dtype=g.dtype)
        scatter_add(grad, self.ids.reshape(-1), g.reshape(-1, self.weight_shape[1]))
        # END SOLUTION
        if self.padding_idx is not None:
            grad[self.padding_idx] = 0
        return grad
