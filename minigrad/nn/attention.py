"""Multi-head attention (``torch.nn.MultiheadAttention``).

H heads attend in parallel, each in its own subspace of width D = E / H
(Vaswani et al. 2017, §3.2.2)::

    q, k, v = query W_qᵀ + b_q,  key W_kᵀ + b_k,  value W_vᵀ + b_v     (N, L|S, E)
    q, k, v cut into H heads                                        (N, H, L|S, D)
    heads   = softmax(q kᵀ / √D + M) v                              (N, H, L, D)
    out     = concat(heads) W_oᵀ + b_o                              (N, L, E)

W_q, W_k, W_v are stacked in one parameter ``in_proj_weight`` (3E, E), as in
PyTorch, so a state dict moves between the two unchanged.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..functions import attention as A
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import Linear, empty_parameter
from .module import Module


class MultiheadAttention(Module):
    """``torch.nn.MultiheadAttention``: attention with ``num_heads`` heads.

    Args:
        embed_dim: E, the width of query, key, value and output.
        num_heads: H; E must be a multiple of H (each head has D = E / H).
        dropout: probability of dropping an attention weight in training.
        bias: learn ``in_proj_bias`` and ``out_proj.bias`` (default True).
        batch_first: inputs and output are (N, L, E) instead of (L, N, E).
        device, dtype: where and how the parameters are made.

    Parameters (PyTorch's names, shapes and initialization):
        ``in_proj_weight`` (3E, E), Xavier-uniform; ``in_proj_bias`` (3E,),
        zeros; ``out_proj`` a Linear(E, E) whose bias starts at 0.

    Call ``mha(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)``:

    * query (L, N, E), key and value (S, N, E) (batch_first: (N, L, E),
      (N, S, E)); unbatched (L, E), (S, E) also work;
    * ``key_padding_mask`` (N, S): bool True = a padding key to ignore, or
      floating, added to the scores;
    * ``attn_mask`` (L, S) or (N·H, L, S): bool True = *not* allowed to attend
      (the opposite of ``F.scaled_dot_product_attention``'s convention, as in
      PyTorch), or floating, added;
    * ``is_causal``: a hint that ``attn_mask`` is the causal mask; as in
      PyTorch it needs ``attn_mask`` to be given.

    Returns ``(attn_output, attn_weights)``: the output (shape of query) and,
    with ``need_weights``, the weights after dropout, averaged over heads
    (N, L, S) or per head (N, H, L, S); else None.

    Differences from PyTorch: ``kdim``/``vdim`` other than E, ``add_bias_kv``
    and ``add_zero_attn`` are not supported (ValueError); a query whose every
    key is masked gets output 0 (PyTorch: nan).

    Raises:
        ValueError: E not a multiple of H, inputs whose widths are not E,
            masks of the wrong shape, ``is_causal`` without ``attn_mask``.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False,
                 device=None, dtype=None):
        super().__init__()
        _check_config(embed_dim, num_heads, dropout, add_bias_kv, add_zero_attn, kdim, vdim)
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, float(dropout)
        self.head_dim, self.batch_first = embed_dim // num_heads, batch_first
        self.in_proj_weight = empty_parameter((3 * embed_dim, embed_dim), device, dtype)
        if bias:
            self.in_proj_bias = empty_parameter((3 * embed_dim,), device, dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        query, key, value, unbatched = self._batch_first(query, key, value)
        N, L, E = query.shape
        S = key.shape[1]
        H = self.num_heads
        q, k, v = (F.linear(x, *self._projection(i)) for i, x in enumerate((query, key, value)))
        q, k, v = (A.split_heads(x, H) for x in (q, k, v))               # (N, H, T, D)
        mask = _additive_mask(attn_mask, key_padding_mask, is_causal, N, H, L, S, query)
        p = self.dropout if self.training else 0.0
        out, weights = A.attention_with_weights(q, k, v, attn_mask=mask, dropout_p=p)
        out = self.out_proj(A.merge_heads(out))                            # (N, L, E)
        if not need_weights:
            weights = None
        elif average_attn_weights:
            weights = weights.mean(axis=1)
        return self._restore_layout(out, weights, unbatched)

    def _projection(self, i):
        """(W, b) of query (i=0), key (1) or value (2): rows i·E ... (i+1)·E."""
        E = self.embed_dim
        rows = slice(i * E, (i + 1) * E)
        bias = None if self.in_proj_bias is None else self.in_proj_bias[rows]
        return self.in_proj_weight[rows], bias

    def _batch_first(self, query, key, value):
        """The inputs as (N, T, E), and whether they came unbatched."""
        _check_inputs(query, key, value, self.embed_dim)
        if query.ndim == 2:
            return (*(x.reshape(1, *x.shape) for x in (query, key, value)), True)
        if not self.batch_first:
            query, key, value = (A.SwapAxes(0, 1)(x) for x in (query, key, value))
        return query, key, value, False

    def _restore_layout(self, out, weights, unbatched):
        if unbatched:
            out = out.reshape(*out.shape[1:])
            weights = None if weights is None else weights.reshape(*weights.shape[1:])
        elif not self.batch_first:
            out = A.SwapAxes(0, 1)(out)
        return out, weights

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


# ---------------------------------------------------------------- helpers

def _additive_mask(attn_mask, key_padding_mask, is_causal, N, H, L, S, query):
    """attn_mask and key_padding_mask merged into one float array, broadcastable
    to (N, H, L, S): 0 where attending is allowed, -inf (or the given float)
    elsewhere; None when neither is given."""
    if is_causal and attn_mask is None:
        raise ValueError("MultiheadAttention: is_causal=True is a hint that needs attn_mask "
                         "(the causal mask) to be given, as in PyTorch")
    xp = backend.array_module(query.device)
    total = None
    if attn_mask is not None:
        m = _as_float(attn_mask, query, "attn_mask")
        if m.shape == (L, S):
            m = m.reshape(1, 1, L, S)
        elif m.shape == (N * H, L, S):
            m = m.reshape(N, H, L, S)
        else:
            raise ValueError(f"MultiheadAttention: attn_mask must have shape ({L}, {S}) or "
                             f"({N * H}, {L}, {S}), got {tuple(m.shape)}")
        total = m
    if key_padding_mask is not None:
        m = _as_float(key_padding_mask, query, "key_padding_mask")
        if m.shape != (N, S):
            raise ValueError(f"MultiheadAttention: key_padding_mask must have shape "
                             f"({N}, {S}), got {tuple(m.shape)}")
        m = m.reshape(N, 1, 1, S)
        total = m if total is None else total + m
    return None if total is None else xp.ascontiguousarray(total)


def _as_float(mask, query, name):
    """A bool mask (True = masked out) as 0 / -inf, or a float mask as it is."""
    array = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    array = backend.to_device(array, query.device)
    xp = backend.array_module(query.device)
    if array.dtype == bool:
        return xp.where(array, -xp.inf, 0.0).astype(query.dtype)
    if array.dtype.kind != "f":
        raise TypeError(f"MultiheadAttention: {name} must be bool or floating, got "
                        f"{array.dtype}")
    return array.astype(query.dtype, copy=False)


def _check_config(embed_dim, num_heads, dropout, add_bias_kv, add_zero_attn, kdim, vdim):
    if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
        raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be a positive "
                         f"multiple of num_heads ({num_heads})")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"MultiheadAttention: dropout must lie in [0, 1), got {dropout}")
    if add_bias_kv or add_zero_attn or kdim not in (None, embed_dim) \
            or vdim not in (None, embed_dim):
        raise ValueError("MultiheadAttention: kdim/vdim other than embed_dim, add_bias_kv "
                         "and add_zero_attn are not supported")


def _check_inputs(query, key, value, embed_dim):
    if not (query.ndim == key.ndim == value.ndim and query.ndim in (2, 3)):
        raise ValueError(f"MultiheadAttention: query, key and value must all be 3-D "
                         f"(batched) or 2-D (unbatched), got shapes {query.shape}, "
                         f"{key.shape}, {value.shape}")
    for label, t in (("query", query), ("key", key), ("value", value)):
        if t.shape[-1] != embed_dim:
            raise ValueError(f"MultiheadAttention: {label} has width {t.shape[-1]}, "
                             f"expected embed_dim={embed_dim}")
    if key.shape[:-1] != value.shape[:-1]:
        raise ValueError(f"MultiheadAttention: key {key.shape} and value {value.shape} "
                         "must have the same length and batch")
