"""Attention: scaled dot-product attention, the masks it needs, and the head split.

The whole of attention (Vaswani et al., *Attention Is All You Need*, 2017, eq. 1)
is three matrix products and a softmax, for queries Q (L, E), keys K (S, E) and
values V (S, Ev)::

    scores  = Q Kᵀ · scale + M        (L, S)   scale = 1/√E, M the mask (0 or -inf)
    weights = softmax(scores, axis=-1) (L, S)   each row sums to 1
    out     = weights V                (L, Ev)

Row i of ``weights`` says how much query i takes from each key; a -inf in the
mask gives weight exactly 0 (the causal mask puts -inf above the diagonal, so
position i sees only positions <= i).  Backward runs the same three steps in
reverse (the softmax's backward is that of :mod:`minigrad.functions.softmax`)::

    dV = weightsᵀ dOut        dW = dOut Vᵀ
    dS = W ⊙ (dW - Σ_j dW ⊙ W)            (softmax backward, row by row)
    dQ = dS K · scale         dK = dSᵀ Q · scale

:func:`attention_reference` builds the same three steps from Functions that
already exist (matmul, transpose, scaling, masked fill, softmax, dropout), so
autograd derives its backward; ``ScaledDotProductAttention`` is the fused
Function, one graph node with the backward above, and is tested against it.

Every array may carry leading batch axes (N, H, ...), broadcast as matmul does.
``masked_fill``, ``tril`` and ``triu`` are the mask helpers; ``split_heads`` and
``merge_heads`` move between (N, T, H·D) and (N, H, T, D).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import backend
from .. import random as _random
from ..autograd import Function, unbroadcast
from ..backend import get_array_module
from .dropout import DropoutFunction, scaled_mask


def _swap(a):
    """The last two axes exchanged: Kᵀ of a batch of matrices (a view)."""
    return a.swapaxes(-1, -2)


class ScaledDotProductAttention(Function):
    """softmax(Q Kᵀ · scale + M) V over the last two axes, with an optional
    additive mask M and a dropout mask on the weights (see the module docstring).

    Inputs: q (..., L, E), k (..., S, E), v (..., S, Ev), and optionally a
    floating additive mask (broadcastable to (..., L, S)) that receives a
    gradient as any input.  ``bool_mask`` (True = may attend) and
    ``drop_mask`` (0 or 1/(1-p), the weights' shape) are constants.  With
    ``return_weights`` a second output holds the (dropped-out) weights.
    """

    def __init__(self, scale, bool_mask=None, drop_mask=None, return_weights=False):
        self.scale, self.bool_mask, self.drop_mask = scale, bool_mask, drop_mask
        self.return_weights = return_weights

    def forward(self, q, k, v, additive_mask=None):
        self.mask_shape = None if additive_mask is None else additive_mask.shape
        k, v = _contiguous(k), _contiguous(v)
        q = q * self.scale                      # (Q·scale) Kᵀ: scaled where it is small
        scores = q @ _contiguous(_swap(k))
        if additive_mask is not None:
            scores = scores + additive_mask     # may broadcast to a larger shape
        if self.bool_mask is not None:
            scores = _fill_where_not(scores, self.bool_mask, -np.inf)
        self.weights = _softmax_rows(scores)    # overwrites scores, not needed again
        weights = self.weights if self.drop_mask is None else self.weights * self.drop_mask
        out = weights @ v
        self.q, self.k, self.v, self.dropped = q, k, v, weights
        return (out, weights) if self.return_weights else out

    def backward(self, g_out, g_weights=None):
        q, k, v, w = self.q, self.k, self.v, self.weights
        xp = get_array_module(q)
        if g_out is None:
            g_out = xp.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)
        g_out = _contiguous(g_out)
        g_v = _swap(self.dropped) @ g_out
        g_w = g_out @ _contiguous(_swap(v))
        if g_weights is not None:
            g_w += g_weights
        if self.drop_mask is not None:
            g_w *= self.drop_mask
        g_scores = _softmax_rows_backward(g_w, w)   # overwrites g_w
        g_q = g_scores @ k
        g_q *= self.scale
        g_k = _swap(g_scores) @ q               # q holds Q·scale
        grads = (unbroadcast(g_q, q.shape), unbroadcast(g_k, k.shape),
                 unbroadcast(g_v, v.shape))
        if self.mask_shape is not None:
            grads += (unbroadcast(g_scores, self.mask_shape),)
        return grads


def causal_mask(L, S, xp=np):
    """The causal mask (L, S), bool: True where query i may attend to key j,
    that is j <= i (the lower triangle with the diagonal, aligned at the top
    left, as PyTorch's ``is_causal``)."""
    # BEGIN SOLUTION ch13.2
    return xp.tril(xp.ones((L, S), dtype=bool))
    # END SOLUTION


def _softmax_rows(scores):
    """softmax over the last axis; a row whose entries are all -inf (a query
    that may attend to nothing) gets weights 0, as PyTorch's SDPA gives.

    Overwrites ``scores`` with the result (the caller's fresh array, not needed
    again): ``exp(scores - top) / total`` computed in place, where the one-line
    form allocates three arrays of the scores' size, (B, H, T, T), the largest
    of an attention layer."""
    xp = get_array_module(scores)
    top = _row_max(scores)
    top = xp.where(xp.isfinite(top), top, 0)
    scores -= top
    e = xp.exp(scores, out=scores)
    total = _row_sums(e)
    e /= xp.where(total == 0, 1, total)          # a NaN total stays NaN
    return e


def _softmax_rows_backward(g_w, w):
    """The softmax's backward row by row, w ⊙ (g_w - Σ_j g_w ⊙ w), written into
    ``g_w`` (a fresh product of backward): no temporary of the weights' size,
    where the one-line form allocates three."""
    g_w -= _row_sums(g_w, w)
    g_w *= w
    return g_w


def _row_max(a):
    """max over the last axis, keepdims.  On the CPU ``fmax.reduce``, which
    skips NaN and runs about a quarter faster than ``max``; a row holding a
    NaN still gives NaN weights, since the NaN goes through the exp."""
    xp = get_array_module(a)
    if xp is np:
        return np.fmax.reduce(a, axis=-1, keepdims=True)
    return a.max(axis=-1, keepdims=True)


def _row_sums(a, b=None):
    """Σ_j a[..., j] (times b[..., j] when given), keepdims, as one einsum.
    What it saves: NumPy's reduction along the short contiguous last axis
    runs at a third of einsum's speed, and ``(a * b).sum(-1)`` needs an
    array of a's size for the product; the sum's order differs from
    ``sum``'s, so the last bit may too."""
    xp = get_array_module(a)
    sums = xp.einsum("...j->...", a) if b is None else xp.einsum("...j,...j->...", a, b)
    return sums[..., None]


def _contiguous(a):
    """``a`` as a C-contiguous array: itself when it is one, else a copy.

    What it saves: NumPy's batched ``matmul`` is markedly slower on strided
    operands, such as the heads cut out of the packed q, k, v projection
    (a view with a row stride of 3C) or a transposed Kᵀ, than on contiguous
    ones; at the GPT's sizes the products took up to 1.6 times (float32) and
    2.1 times (float64) as long, much more than the copy costs.  The copies
    replace the views that backward keeps, so they cost no memory beyond
    the moment of the copy."""
    return get_array_module(a).ascontiguousarray(a)


def _fill_where_not(a, keep, value):
    """``where(keep, a, value)`` (``keep`` bool), written into ``a`` when ``keep``
    broadcasts to a's shape: the masked scores without a copy of them.  A
    mask with more leading axes than ``a`` gives a new, larger array."""
    xp = get_array_module(a)
    if np.broadcast_shapes(tuple(keep.shape), a.shape) != a.shape:
        return xp.where(keep, a, value)
    xp.copyto(a, value, where=~keep)
    return a


class MaskedFill(Function):
    """``value`` where ``mask`` is True, the input elsewhere; no gradient
    flows to the filled entries."""

    def __init__(self, mask, value):
        self.mask, self.value = mask, value

    def forward(self, a):
        xp = get_array_module(a)
        return xp.where(self.mask, xp.asarray(self.value, dtype=a.dtype), a)

    def backward(self, g):
        return get_array_module(g).where(self.mask, 0, g).astype(g.dtype, copy=False)


class Triangle(Function):
    """The lower (``upper=False``) or upper triangle of the last two axes,
    from ``diagonal`` on; zeros elsewhere.  Backward keeps the same triangle."""

    def __init__(self, diagonal=0, upper=False):
        self.diagonal, self.upper = diagonal, upper

    def _keep(self, a):
        xp = get_array_module(a)
        return (xp.triu if self.upper else xp.tril)(a, self.diagonal)

    def forward(self, a):
        return self._keep(a)

    def backward(self, g):
        return self._keep(g)


class SplitHeads(Function):
    """(N, T, chunks·H·D) -> ``chunks`` arrays of (N, H, T, D): the packed
    projections of q, k, v cut apart and each cut into H heads of width D."""

    def __init__(self, num_heads, chunks=1):
        self.num_heads, self.chunks = num_heads, chunks

    def forward(self, x):
        n, t, width = x.shape
        self.in_shape, self.dtype = x.shape, x.dtype
        d = width // (self.chunks * self.num_heads)
        parts = x.reshape(n, t, self.chunks, self.num_heads, d).transpose(2, 0, 3, 1, 4)
        return tuple(parts) if self.chunks > 1 else parts[0]

    def backward(self, *grads):
        like = next(g for g in grads if g is not None)               # (N, H, T, D)
        xp = get_array_module(like)
        n, h, t, d = like.shape
        # each chunk's gradient copied once into its place, (N, T, chunks, H, D)
        out = xp.empty((n, t, self.chunks, h, d), dtype=like.dtype)
        for i, g in enumerate(grads):
            out[:, :, i] = 0 if g is None else g.transpose(0, 2, 1, 3)
        return out.reshape(self.in_shape)


class MergeHeads(Function):
    """(N, H, T, D) -> (N, T, H·D): the heads' outputs side by side again."""

    def forward(self, x):
        n, h, t, d = x.shape
        self.in_shape = x.shape
        return x.transpose(0, 2, 1, 3).reshape(n, t, h * d)

    def backward(self, g):
        n, h, t, d = self.in_shape
        return g.reshape(n, t, h, d).transpose(0, 2, 1, 3)


# ------------------------------------------------------------ the public functions
# (Tensor in, Tensor out; checks live in the helpers below them.)

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *,
                                 generator=None):
    """``torch.nn.functional.scaled_dot_product_attention``: softmax(Q Kᵀ·scale + M) V.

    Args:
        query: (..., L, E); key: (..., S, E); value: (..., S, Ev), one floating
            dtype; leading axes broadcast.
        attn_mask: None; a bool mask broadcastable to (..., L, S), True where a
            query may attend (False entries get weight 0); or a floating mask
            of the query's dtype, added to the scores (it gets a gradient when
            it requires one).
        dropout_p: probability of dropping an attention weight (inverted
            dropout, scaled by 1/(1-p)); pass 0 in evaluation, as in PyTorch.
        is_causal: the lower-triangular causal mask (query i sees keys j <= i,
            aligned at the top-left); cannot be combined with ``attn_mask``.
        scale: default 1/√E.
        enable_gqa: grouped-query attention (Ainslie et al. 2023): query
            (..., Hq, L, E) with key and value of Hk heads, Hq a multiple of Hk;
            each key/value head serves Hq/Hk consecutive query heads.
        generator: a ``numpy.random.Generator`` for the dropout mask (default:
            minigrad's seeded stream, reset by ``minigrad.manual_seed``).

    Returns:
        (..., L, Ev).  A query row that may attend to nothing gives zeros.

    Raises:
        ValueError: shapes that do not fit (E of query and key, S of key and
            value, fewer than 2 axes), p outside [0, 1), both ``attn_mask`` and
            ``is_causal``, a mask that does not broadcast, with ``enable_gqa``
            a query head count that is not a multiple of the key/value's.
        TypeError: non-Tensor inputs, different or non-floating dtypes.

    Formula: Vaswani et al. 2017, eq. 1; backward in the module docstring.
    """
    _check_sdpa_flags(is_causal=is_causal, enable_gqa=enable_gqa)
    if hasattr(key, "shape") and len(key.shape) >= 2 and key.shape[-2] == 0:
        return _no_keys(query, value)
    if enable_gqa:
        key, value = _share_heads(query, key, "key"), _share_heads(query, value, "value")
    fn, inputs = _attention_function(query, key, value, attn_mask, dropout_p, is_causal,
                                     scale, generator, return_weights=False)
    return fn(*inputs)


def _check_sdpa_flags(**flags):
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"scaled_dot_product_attention: argument {name!r} must be bool, "
                            f"not {type(value).__name__}")


def _no_keys(query, value):
    """Attention over zero keys: every output row is an empty sum, 0 (PyTorch's
    value; the gradients are 0 too)."""
    from ..tensor import Tensor
    lead = np.broadcast_shapes(tuple(query.shape[:-2]), tuple(value.shape[:-2]))
    xp = get_array_module(query.data)
    return Tensor(xp.zeros(lead + (query.shape[-2], value.shape[-1]), dtype=query.dtype))


def _share_heads(query, t, name):
    """``t`` (..., Hk, S, E) with each head repeated Hq/Hk times in a row, so
    that it has the query's Hq heads (PyTorch's ``repeat_interleave`` along
    dim -3); the gradient of the copies adds up in the shared head."""
    if query.ndim < 3 or t.ndim < 3:
        raise ValueError(f"scaled_dot_product_attention: enable_gqa needs (..., heads, "
                         f"length, features) inputs, got query {tuple(query.shape)} and "
                         f"{name} {tuple(t.shape)}")
    hq, hk = query.shape[-3], t.shape[-3]
    if hq % hk:
        raise ValueError(f"scaled_dot_product_attention: enable_gqa needs the query's "
                         f"{hq} heads to be a multiple of the {name}'s {hk}")
    lead, (s, e) = t.shape[:-3], t.shape[-2:]
    return t.unsqueeze(-3).expand(*lead, hk, hq // hk, s, e).reshape(*lead, hq, s, e)


def attention_reference(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                        scale=None, enable_gqa=False, *, generator=None):
    """:func:`scaled_dot_product_attention` composed of existing Functions.

    The scores are a matmul with the transposed keys, times ``scale``; the
    additive mask is added, the bool mask fills the scores a query may not
    see with -inf (``MaskedFill``); the weights are the softmax over the keys
    (the last axis), dropped out (``DropoutFunction``), and multiply the
    values.  Every step records its own graph node, so autograd gives the
    backward for free: the same numbers as the fused
    ``ScaledDotProductAttention``, at the cost of keeping every step's arrays.

    Args and shapes: as :func:`scaled_dot_product_attention` (the masks and
    the dropout mask are drawn there, so both give the same numbers for the
    same generator or seed).  A query row that may attend to nothing gives
    NaN here (the softmax of a row of -inf), zeros in the fused version.

    Returns:
        (..., L, Ev).

    Raises:
        As :func:`scaled_dot_product_attention`.

    Formula: Vaswani et al. 2017, eq. 1; PyTorch documents the same reference
    for ``torch.nn.functional.scaled_dot_product_attention``.
    """
    if enable_gqa:
        key, value = _share_heads(query, key, "key"), _share_heads(query, value, "value")
    fused, inputs = _attention_function(query, key, value, attn_mask, dropout_p, is_causal,
                                        scale, generator, return_weights=False)
    scale, bool_mask, drop_mask = fused.scale, fused.bool_mask, fused.drop_mask
    additive_mask = inputs[3] if len(inputs) > 3 else None
    # BEGIN SOLUTION ch13.1
    scores = (query @ key.transpose(-2, -1)) * scale              # (..., L, S)
    if additive_mask is not None:
        scores = scores + additive_mask
    if bool_mask is not None:
        scores = MaskedFill(~bool_mask, -math.inf)(scores)      # True = may not attend
    weights = scores.softmax(dim=-1)                              # over the keys
    if drop_mask is not None:
        weights = DropoutFunction(drop_mask)(weights)
    return weights @ value                                        # (..., L, Ev)
    # END SOLUTION


def attention_with_weights(query, key, value, attn_mask=None, dropout_p=0.0,
                           is_causal=False, scale=None, generator=None):
    """As :func:`scaled_dot_product_attention`, returning ``(output, weights)``;
    ``weights`` (..., L, S) are those multiplied with V (after dropout), both
    outputs differentiable (what ``nn.MultiheadAttention(need_weights=True)`` returns)."""
    fn, inputs = _attention_function(query, key, value, attn_mask, dropout_p, is_causal,
                                     scale, generator, return_weights=True)
    return fn(*inputs)


def masked_fill(input, mask, value):  # noqa: A002 (PyTorch's name)
    """``torch.masked_fill``: ``value`` where the bool ``mask`` (broadcastable to
    the input's shape, Tensor or array) is True, the input elsewhere.  The
    output has the input's shape and dtype; filled entries get gradient 0.

    Raises TypeError for a non-bool mask or a non-number value, ValueError
    for a mask that does not broadcast to the input's shape."""
    mask = _bool_mask(mask, input, "masked_fill")
    grad_value = getattr(value, "requires_grad", False)
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        value = _scalar_value(value) if not grad_value else _check_scalar_tensor(value)
    try:
        fits = np.broadcast_shapes(tuple(mask.shape), input.shape) == input.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast "
                         f"to the input's shape {input.shape}")
    if grad_value:  # the value gets the sum of the gradient over the filled entries
        from ..creation import where
        return where(mask, value.to(dtype=input.dtype) if value.dtype != input.dtype
                     else value, input)
    return MaskedFill(mask, value)(input)


def _check_scalar_tensor(value):
    if value.ndim != 0:
        raise TypeError(f"masked_fill: value must be a number or a 0-d tensor, got a "
                        f"tensor of shape {tuple(value.shape)}")
    return value


def tril(input, diagonal=0):  # noqa: A002
    """``torch.tril``: the lower triangle of the last two axes (entries with
    column - row <= ``diagonal``), zeros above.  Raises ValueError for fewer
    than 2 axes."""
    _check_matrix(input, "tril")
    return Triangle(int(diagonal), upper=False)(input)


def triu(input, diagonal=0):  # noqa: A002
    """``torch.triu``: the upper triangle of the last two axes (entries with
    column - row >= ``diagonal``), zeros below.  Raises ValueError for fewer
    than 2 axes."""
    _check_matrix(input, "triu")
    return Triangle(int(diagonal), upper=True)(input)


def split_heads(x, num_heads, chunks=1):
    """(N, T, chunks·H·D) -> (N, H, T, D), or a tuple of ``chunks`` of them
    (``q, k, v = split_heads(qkv, H, chunks=3)``).  Raises ValueError when the
    width is not a multiple of chunks·H."""
    if x.ndim != 3 or x.shape[-1] % (chunks * num_heads):
        raise ValueError(f"split_heads: expected (N, T, {chunks}*H*D) with H={num_heads}, "
                         f"got shape {x.shape}")
    return SplitHeads(num_heads, chunks)(x)


def merge_heads(x):
    """(N, H, T, D) -> (N, T, H·D).  Raises ValueError for another rank."""
    if x.ndim != 4:
        raise ValueError(f"merge_heads: expected (N, H, T, D), got shape {x.shape}")
    return MergeHeads()(x)


# ------------------------------------------------------------------ helpers

def _attention_function(query, key, value, attn_mask, dropout_p, is_causal, scale,
                        generator, return_weights):
    """Check the arguments and build the Function and its inputs."""
    _check_qkv(query, key, value)
    if not (isinstance(dropout_p, numbers.Real) and 0.0 <= dropout_p < 1.0):
        raise ValueError(f"scaled_dot_product_attention: dropout_p must lie in [0, 1), "
                         f"got {dropout_p!r}")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or "
                         "is_causal=True, not both")
    xp = backend.array_module(query.device)
    L, S = query.shape[-2], key.shape[-2]
    weights_shape = np.broadcast_shapes(query.shape[:-2], key.shape[:-2]) + (L, S)
    bool_mask, inputs = None, [query, key, value]
    if is_causal:
        bool_mask = causal_mask(L, S, xp)
    elif attn_mask is not None:
        mask = attn_mask.data if hasattr(attn_mask, "creator") else attn_mask
        try:
            np.broadcast_shapes(tuple(mask.shape), weights_shape)
        except ValueError:
            raise ValueError(f"scaled_dot_product_attention: attn_mask of shape "
                             f"{tuple(mask.shape)} does not broadcast to the weights' shape "
                             f"{weights_shape}") from None
        if mask.dtype == bool:
            bool_mask = backend.to_device(mask, query.device)
        elif mask.dtype != query.dtype:
            raise TypeError(f"scaled_dot_product_attention: a floating attn_mask must have "
                            f"the query's dtype {query.dtype}, got {mask.dtype}")
        else:
            inputs.append(attn_mask)
    drop_mask = None
    if dropout_p > 0.0:
        if generator is not None:
            u = backend.to_device(generator.random(weights_shape), query.device)
        else:
            u = _random.global_hash_uniform(weights_shape, query.device)
        drop_mask = scaled_mask(u, float(dropout_p), query.dtype)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    return ScaledDotProductAttention(scale, bool_mask, drop_mask, return_weights), inputs


def _check_qkv(query, key, value):
    name = "scaled_dot_product_attention"
    for label, t in (("query", query), ("key", key), ("value", value)):
        if not hasattr(t, "creator"):
            raise TypeError(f"{name}: {label} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{name}: {label} needs at least 2 axes (..., T, E), got "
                             f"shape {t.shape}")
        if t.dtype.kind != "f" or t.dtype != query.dtype:
            raise TypeError(f"{name}: query, key and value must share one floating dtype, "
                            f"got {query.dtype}, {key.dtype}, {value.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"{name}: query's last axis {query.shape[-1]} != key's "
                         f"{key.shape[-1]} (shapes {query.shape} and {key.shape})")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{name}: key has {key.shape[-2]} positions but value has "
                         f"{value.shape[-2]} (shapes {key.shape} and {value.shape})")
    try:
        np.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except ValueError:
        raise ValueError(f"{name}: the batch axes of {query.shape}, {key.shape} and "
                         f"{value.shape} do not broadcast") from None


def _bool_mask(mask, reference, name):
    """A bool mask (Tensor or array) as an array on the reference's device."""
    array = mask.data if hasattr(mask, "creator") else np.asarray(mask)
    if array.dtype != bool:
        raise TypeError(f"{name}: mask must be bool, got dtype {array.dtype}")
    return backend.to_device(array, reference.device)


def _scalar_value(value):
    """A fill value given as a 0-d Tensor or array (no gradient flows to it)."""
    array = value.data if hasattr(value, "creator") else np.asarray(value)
    if array.ndim != 0 or array.dtype.kind not in "biuf":
        raise TypeError(f"masked_fill: value must be a number or a 0-d tensor, got "
                        f"{type(value).__name__} of shape {tuple(np.shape(array))}")
    return backend.asnumpy(array).item()


def _check_matrix(x, name):
    if x.ndim < 2:
        raise ValueError(f"{name}: input must have at least 2 axes, got shape {x.shape}")


class SwapAxes(Function):
    """Exchange two axes (a view); backward exchanges them back.  Used to move
    between sequence-first (L, N, E) and batch-first (N, L, E) layouts."""

    def __init__(self, axis0, axis1):
        self.axis0, self.axis1 = axis0, axis1

    def forward(self, a):
        return a.swapaxes(self.axis0, self.axis1)

    def backward(self, g):
        return g.swapaxes(self.axis0, self.axis1)
