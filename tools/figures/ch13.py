"""Chapter 13's figures: the causal attention pattern, the GPT and its block, the
tokens of a window.

The attention weights are computed with minigrad's ``attention_with_weights``
(the chapter's three tokens, and the shipped GPT reading a line of the play);
the shapes in the diagram are the shipped model's config; the token counts
come from ``sft_windows``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyBboxPatch

import minigrad
from minigrad.functions.attention import attention_with_weights, split_heads
from minigrad.data.sft import completion_tokens
from minigrad.experiments.finetune import sft_pairs, sft_windows
from minigrad.experiments.pretrain import load_gpt

from . import save

LINE = "ROMEO:\nBut soft, what light"


def _heat(ax, weights, labels, title):
    shown = np.where(np.tril(np.ones_like(weights)) > 0, weights, np.nan)
    im = ax.imshow(shown, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)))
    ax.set_yticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("key j (the token looked at)")
    ax.set_ylabel("query i (the token computing)")
    ax.set_title(title, fontsize=9)
    return im


def causal_pattern():
    """The three-token example and head 0 of the shipped GPT's first block."""
    q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    _, small = attention_with_weights(*(minigrad.tensor(a) for a in (q, k, v)), is_causal=True)
    small = small.numpy()

    model, tokenizer, _ = load_gpt()
    ids = np.array([tokenizer.encode(LINE)])
    with minigrad.no_grad():
        x = model.wte(minigrad.tensor(ids)) + model.wpe(minigrad.arange(ids.shape[1]))
        block = model.h[0]
        qh, kh, vh = split_heads(block.attn.c_attn(block.ln_1(x)), block.attn.n_head, chunks=3)
        _, big = attention_with_weights(qh, kh, vh, is_causal=True)
    big = big.numpy()[0, 0]
    labels = [repr(c)[1:-1] if c != " " else "␣" for c in LINE]

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 2.2]})
    _heat(axes[0], small, ["0", "1", "2"], "the three tokens of the worked example")
    for i in range(3):
        for j in range(i + 1):
            axes[0].text(j, i, f"{small[i, j]:.2f}", ha="center", va="center", fontsize=9,
                         color="white" if small[i, j] > 0.6 else "black")
    im = _heat(axes[1], big, labels, "the shipped GPT, block 1, head 1, reading a line")
    fig.colorbar(im, ax=axes[1], fraction=0.04, label="weight (each row sums to 1)")
    return save(fig, "13_causal_pattern.png")


def _box(ax, x, y, text, color, w=3.2, h=0.62, fontsize=8):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05",
                                fc=color, ec="black", lw=0.7))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, a, b, **kw):
    ax.annotate("", xy=b, xytext=a, arrowprops=dict(arrowstyle="->", lw=0.9, **kw))


def _plus(ax, x, y):
    ax.add_patch(plt.Circle((x, y), 0.2, fc="white", ec="black", lw=0.9))
    ax.text(x, y, "+", ha="center", va="center", fontsize=11)


def gpt_block():
    """Left: the whole GPT. Right: one pre-LN block with its two residual branches."""
    model, _, _ = load_gpt()
    c = model.config
    C, H, V, T = c.n_embd, c.n_head, c.vocab_size, c.block_size
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 7.2), gridspec_kw={"width_ratios": [1, 1.25]})

    # the model, bottom to top
    ys = [0.0, 1.3, 2.6, 3.9, 5.2, 6.5, 7.8]
    texts = [f"token ids (B, T), T ≤ {T}",
             f"token embedding wte ({V}×{C})\n+ position embedding wpe ({T}×{C})",
             "block 1", "⋮", f"block {c.n_layer}", "LayerNorm ln_f",
             f"lm_head: x · wteᵀ  (tied)\nlogits (B, T, {V})"]
    colors = ["white", "#fdd0a2", "#c6dbef", "white", "#c6dbef", "#e5e5e5", "#fdd0a2"]
    for y, t, col in zip(ys, texts, colors):
        if t == "⋮":
            left.text(0, y, "⋮", ha="center", va="center", fontsize=16)
            continue
        _box(left, 0, y, t, col, w=3.6, h=0.8)
    for a, b in zip(ys[:-1], ys[1:]):
        if b != ys[3] and a != ys[3]:
            _arrow(left, (0, a + 0.42), (0, b - 0.42))
    left.annotate("", xy=(2.0, 7.8), xytext=(2.0, 1.3),
                  arrowprops=dict(arrowstyle="<->", ls="--", lw=0.8, color="C3"))
    left.text(2.1, 4.55, "one matrix,\nused twice\n(weight tying)", color="C3", fontsize=8,
              va="center")
    left.text(0, -0.75, f"x: (B, T, C) with C = {C} between the boxes", ha="center", fontsize=8)
    left.set_xlim(-2.5, 3.3)
    left.set_ylim(-1.1, 8.6)
    left.axis("off")
    left.set_title(f"the GPT ({c.n_layer} blocks)", fontsize=10)

    # one block, bottom to top: x -> LN -> attention -> + -> LN -> MLP -> +
    x0, xs = 0.0, 2.3                     # main column, skip column
    _box(right, x0, 0.0, f"x  (B, T, {C})", "white")
    _box(right, x0, 1.2, "LayerNorm ln_1", "#e5e5e5")
    _box(right, x0, 2.5, f"causal self-attention\n{H} heads of width {C // H}", "#c6dbef", h=0.8)
    _plus(right, x0, 3.8)
    _box(right, x0, 5.0, "LayerNorm ln_2", "#e5e5e5")
    _box(right, x0, 6.4, f"MLP: Linear {C}→{4 * C}, GELU,\nLinear {4 * C}→{C}", "#c7e9c0", h=0.8)
    _plus(right, x0, 7.7)
    _box(right, x0, 8.7, f"out  (B, T, {C})", "white")
    for a, b in ((0.31, 0.89), (1.51, 2.1), (2.9, 3.6), (4.0, 4.69), (5.31, 6.0), (6.8, 7.5),
                 (7.9, 8.39)):
        _arrow(right, (x0, a), (x0, b))
    for (y0, x_start, col, y1) in ((0.0, x0 + 1.65, xs, 3.8),            # the residuals
                                   (4.35, x0, xs + 0.7, 7.7)):
        right.plot([x_start, col, col], [y0, y0, y1], color="C3", lw=1.2)
        right.plot([x_start], [y0], "o", color="C3", ms=4)
        _arrow(right, (col, y1), (x0 + 0.2, y1), color="C3")
    right.text(xs + 0.1, 1.9, "residual:\nx + attn(ln_1(x))", color="C3", fontsize=8, va="center")
    right.text(xs + 0.8, 5.9, "residual:\nx + mlp(ln_2(x))", color="C3", fontsize=8, va="center")
    right.set_xlim(-2.0, 5.0)
    right.set_ylim(-0.6, 9.3)
    right.axis("off")
    right.set_title("one block (pre-LN: LayerNorm at the start of each branch)", fontsize=10)
    return save(fig, "13_gpt_block.png")


def window_tokens():
    """The completion tokens of the 16 micro-batches of a window, and their weights."""
    _, train, _ = sft_pairs()
    _, micro = sft_windows(train, micro_batch=1, accumulation_steps=16, updates=1)[0]
    counts = np.array([completion_tokens(y) for _, y in micro])
    total = counts.sum()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10.5, 3.4))
    a1.bar(range(16), counts, color="C0")
    a1.set_xlabel("micro-batch j (one pair)")
    a1.set_ylabel("completion tokens n_j")
    a1.set_title(f"a window of 16 pairs: {total} tokens", fontsize=9)
    exact = np.full(16, 1.0 / total)
    bug = 1.0 / (16 * counts)
    a2.bar(np.arange(16) - 0.2, exact * 1e3, width=0.4, color="C0", label=f"exact: 1/{total}")
    a2.bar(np.arange(16) + 0.2, bug * 1e3, width=0.4, color="C3", label="mean of means: 1/(16 n_j)")
    a2.set_xlabel("micro-batch j")
    a2.set_ylabel("weight of one token (× 10⁻³)")
    a2.set_title("how much one of its tokens counts in the update", fontsize=9)
    a2.legend(fontsize=8)
    return save(fig, "13_window_tokens.png")


def draw_all():
    return [causal_pattern(), gpt_block(), window_tokens()]
