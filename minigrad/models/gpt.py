"""A GPT: a decoder-only transformer language model, top to bottom.

    idx (B, T) token ids
     │
     ├─ wte: token embedding (B, T, C) ─┐
     ├─ wpe: position embedding (T, C) ─┴─ + ─ dropout
     │
     ├─ n_layer × Block:                x = x + attn(ln_1(x))     causal self-attention
     │                                  x = x + mlp(ln_2(x))      Linear → GELU → Linear
     ├─ ln_f: LayerNorm
     └─ lm_head: Linear(C, V), its weight *tied* to wte's (B, T, V) logits

The layout and the names are those of GPT-2 (Radford et al. 2019: the
LayerNorm moved to the input of each sub-block, "pre-LN", and one more after
the last block) as nanoGPT writes it, so a student can set the two side by
side.  Weight tying (Press & Wolf 2017) uses the one (V, C) matrix both to
embed a token and to score every token at the output.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import backend
from .. import random as _random
from ..autograd import no_grad
from ..checkpointing import checkpoint
from ..creation import arange
from ..functions.attention import merge_heads, scaled_dot_product_attention, split_heads
from ..nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList
from ..nn import functional as F
from ..nn import init


@dataclasses.dataclass
class GPTConfig:
    """The sizes of a GPT.  ``block_size`` is the context length T_max;
    ``n_embd`` (C) must be a multiple of ``n_head``."""

    vocab_size: int = 65
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(Module):
    """Every position attends to itself and the positions before it, in
    ``n_head`` heads of width C / n_head; (B, T, C) -> (B, T, C)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head, self.dropout = config.n_head, config.dropout
        self.c_attn = Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)  # q, k, v
        self.c_proj = Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = Dropout(config.dropout)

    def forward(self, x):
        q, k, v = split_heads(self.c_attn(x), self.n_head, chunks=3)      # (B, H, T, D) each
        p = self.dropout if self.training else 0.0
        y = scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        return self.resid_dropout(self.c_proj(merge_heads(y)))            # (B, T, C)


class MLP(Module):
    """Linear(C, 4C) → GELU → Linear(4C, C) → dropout, at every position (GELU in
    its tanh form, as GPT-2 computes it; Hendrycks & Gimpel 2016)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(Module):
    """One transformer block, pre-LayerNorm: two residual branches."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(Module):
    """The GPT language model (see the module docstring for the picture).

    Call ``model(idx)`` with integer ids (B, T), T <= block_size (a Tensor,
    array or list) to get logits (B, T, vocab_size) in the parameters' dtype;
    position t's logits predict token t + 1.

    Attributes:
        gradient_checkpointing: when True (and grad mode is on), each block
            runs under :func:`minigrad.checkpoint`: its activations are
            recomputed in backward instead of kept (same gradients).

    Raises:
        ValueError: a sequence longer than ``block_size``, or ids that are
            not 2-D.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        _check_config(config)
        self.config = config
        self.wte = Embedding(config.vocab_size, config.n_embd)
        self.wpe = Embedding(config.block_size, config.n_embd)
        self.drop = Dropout(config.dropout)
        self.h = ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight               # weight tying
        self.gradient_checkpointing = False
        _init_weights(self, config)

    def forward(self, idx):
        B, T = _check_ids(idx, self.config.block_size)
        pos = arange(T, device=self.wte.weight.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))                     # (B, T, C)
        for block in self.h:
            x = checkpoint(block, x) if self._checkpointing(x) else block(x)
        return self.lm_head(self.ln_f(x))                                 # (B, T, V)

    @no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """Extend ``idx`` (B, T) by ``max_new_tokens`` sampled tokens, one at a time.

        Each step feeds the last ``block_size`` tokens, takes the logits of
        the last position, divides them by ``temperature`` (> 0; smaller is
        greedier), keeps the ``top_k`` largest (if given), and samples from
        their softmax with ``generator`` (a ``numpy.random.Generator``;
        default minigrad's seeded CPU stream).  Call ``model.eval()`` first to
        switch dropout off.  Returns an int64 NumPy array (B, T + max_new_tokens).
        """
        _check_sampling(temperature, top_k, self.config.vocab_size)
        rng = _random.get_generator("cpu", generator)
        idx = np.array(backend.asnumpy(getattr(idx, "data", idx)), dtype=np.int64, ndmin=2)
        for _ in range(max_new_tokens):
            context = idx[:, -self.config.block_size:]
            logits = self(context).numpy()[:, -1, :].astype(np.float64) / temperature
            if top_k is not None:
                kth = np.sort(logits, axis=-1)[:, -top_k][:, None]
                logits = np.where(logits < kth, -np.inf, logits)
            probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
            probs /= probs.sum(axis=-1, keepdims=True)
            u = rng.random((len(idx), 1))
            nxt = np.minimum((probs.cumsum(axis=-1) < u).sum(axis=-1), probs.shape[-1] - 1)
            idx = np.concatenate([idx, nxt[:, None]], axis=1)
        return idx

    def _checkpointing(self, x) -> bool:
        return self.gradient_checkpointing and x.requires_grad

    def num_parameters(self) -> int:
        """The number of trainable numbers (the tied matrix counted once)."""
        return sum(p.numel() for p in self.parameters())


def lm_loss(logits, targets, ignore_index=-100):
    """Mean cross-entropy over the tokens whose target is not ``ignore_index``:
    logits (B, T, V), targets (B, T) integers -> a scalar."""
    V = logits.shape[-1]
    targets = np.asarray(backend.asnumpy(getattr(targets, "data", targets))).reshape(-1)
    return F.cross_entropy(logits.reshape(-1, V), targets, ignore_index=ignore_index)


# ---------------------------------------------------------------- helpers

def _init_weights(model: GPT, config: GPTConfig) -> None:
    """GPT-2's initialization: N(0, 0.02) weights and embeddings, zero biases,
    and the projections back into the residual stream scaled by 1/√(2·n_layer)
    (each block adds two of them), as nanoGPT does."""
    for name, module in model.named_modules():
        if isinstance(module, (Linear, Embedding)):
            std = 0.02
            if name.endswith("c_proj"):
                std = 0.02 / math.sqrt(2 * config.n_layer)
            if module is model.lm_head:
                continue                                    # tied: wte's init
            init.normal_(module.weight, 0.0, std)
            if isinstance(module, Linear) and module.bias is not None:
                init.zeros_(module.bias)


def _check_config(config):
    if config.n_embd % config.n_head:
        raise ValueError(f"GPT: n_embd ({config.n_embd}) must be a multiple of n_head "
                         f"({config.n_head})")
    for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
        if getattr(config, name) < 1:
            raise ValueError(f"GPT: {name} must be >= 1, got {getattr(config, name)}")


def _check_ids(idx, block_size):
    shape = tuple(np.shape(getattr(idx, "data", idx)))
    if len(shape) != 2:
        raise ValueError(f"GPT: expected token ids of shape (B, T), got shape {shape}")
    if shape[1] > block_size:
        raise ValueError(f"GPT: sequence length {shape[1]} exceeds block_size {block_size}")
    return shape


def _check_sampling(temperature, top_k, vocab_size):
    if not temperature > 0:
        raise ValueError(f"generate: temperature must be > 0, got {temperature}")
    if top_k is not None and not 1 <= top_k <= vocab_size:
        raise ValueError(f"generate: top_k must lie in [1, {vocab_size}], got {top_k}")
