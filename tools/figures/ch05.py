"""Chapter 05's figures: the weight every item gets, the incident's token weights,
and clipping per micro-batch.

Item weights are read off autograd (the gradient of the window's loss with
respect to each item's loss); the incident's token counts come from the
chapter's own tinyshakespeare sample; the clipped vectors from
``clip_grad_norm_``.  The token-weight bars of section 5 (``05_token_weights.png``)
are drawn by ``tools/make_chapter_figures.py``.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import minigrad
from minigrad import nn, optim
from minigrad.data import load_tinyshakespeare, make_lm_batch

from . import save


def item_weights(sizes=(3, 1)):
    """The weight of each item in the window's loss, as autograd sees it:
    ``(divide each micro-batch mean by k, weight by items)``."""
    n = sum(sizes)
    out = []
    for by_items in (False, True):
        losses = minigrad.tensor(np.ones(n), dtype=np.float64, requires_grad=True)
        total, start = None, 0
        for size in sizes:
            mean = losses[start:start + size].mean()
            part = mean * size / n if by_items else mean / len(sizes)
            total = part if total is None else total + part
            start += size
        total.backward()
        out.append(losses.grad.numpy())
    return out[0], out[1]


def incident_token_counts():
    """Real tokens per micro-batch of chapter 05's sample (16 passages, k = 4)."""
    text = load_tinyshakespeare()
    ids = {c: i for i, c in enumerate(sorted(set(text)))}
    rng = np.random.default_rng(0)
    lengths = np.sort(rng.integers(8, 49, size=16))
    starts = rng.integers(0, len(text) - 50, size=16)
    sequences = [np.array([ids[c] for c in text[s:s + n]]) for s, n in zip(starts, lengths)]
    counts = []
    for i in range(0, 16, 4):
        _, targets = make_lm_batch(sequences[i:i + 4])
        counts.append(int((targets != -100).sum()))
    return counts


def clip_vectors(max_norm=2.5):
    """Chapter 05's counter-example: micro-batch gradients (3, 4) and (3, -4)."""
    pieces = [np.array([3.0, 4.0]), np.array([3.0, -4.0])]

    def clipped(v):
        p = nn.Parameter(v.copy())
        p.grad = minigrad.tensor(v.copy(), dtype=np.float64)
        optim.clip_grad_norm_([p], max_norm)
        return p.grad.numpy()

    window = clipped(np.mean(pieces, axis=0))
    per_piece = np.mean([clipped(v) for v in pieces], axis=0)
    return pieces, window, per_piece


def draw_item_weights() -> Path:
    by_k, by_items = item_weights()
    fig, ax = plt.subplots(figsize=(6.2, 3.0))
    pos = np.arange(len(by_k))
    ax.bar(pos - 0.18, by_k, width=0.36, color="tab:red", label="each mean divided by k = 2")
    ax.bar(pos + 0.18, by_items, width=0.36, color="tab:blue",
           label="weighted by items (÷ N = 4 once)")
    for x, v in zip(pos, by_k):
        ax.text(x - 0.18, v + 0.01, f"{v:.3g}", ha="center", fontsize=8)
    for x, v in zip(pos, by_items):
        ax.text(x + 0.18, v + 0.01, f"{v:.3g}", ha="center", fontsize=8)
    ax.set_xticks(pos, ["example 1", "example 2", "example 3", "example 4\n(alone in its\nmicro-batch)"])
    ax.set_ylabel("weight in the window's loss")
    ax.set_ylim(0, max(by_k) * 1.2)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("Micro-batches of 3 + 1 examples: the full batch gives each 1/4", fontsize=10)
    return save(fig, "05_item_weights.png")


def draw_incident_weights() -> Path:
    counts = np.array(incident_token_counts())
    k, n = len(counts), counts.sum()
    before = n / (k * counts)          # a token's weight over its full-batch weight 1/N
    fig, ax = plt.subplots(figsize=(6.2, 3.0))
    pos = np.arange(k)
    ax.bar(pos - 0.18, before, width=0.36, color="tab:red", label="before the fix: 1/(k·nⱼ)")
    ax.bar(pos + 0.18, np.ones(k), width=0.36, color="tab:blue", label=f"after the fix: 1/N, N = {n}")
    for x, v in zip(pos, before):
        ax.text(x - 0.18, v + 0.05, f"{v:.2f}", ha="center", fontsize=8)
    ax.set_xticks(pos, [f"micro-batch {j + 1}\n{c} tokens" for j, c in enumerate(counts)])
    ax.set_ylabel("weight of one token\n÷ its full-batch weight")
    ax.legend(fontsize=8)
    ax.set_title("The incident on tinyshakespeare (k = 4): short micro-batches weigh more",
                 fontsize=10)
    return save(fig, "05_incident_weights.png")


def draw_clipping() -> Path:
    pieces, window, per_piece = clip_vectors()
    fig, ax = plt.subplots(figsize=(5.6, 3.6))

    def arrow(v, color, label, style="-"):
        ax.annotate("", xy=v, xytext=(0, 0),
                    arrowprops=dict(arrowstyle="->", color=color, lw=2, linestyle=style))
        ax.plot([], [], color=color, lw=2, linestyle=style, label=label)

    for v in pieces:
        arrow(v, "tab:gray", None, ":")
    ax.plot([], [], color="tab:gray", lw=2, linestyle=":", label="micro-batch gradients (3, ±4)")
    arrow(window, "tab:blue", f"mean, then clip: ({window[0]:.3g}, {window[1]:.3g})")
    arrow(per_piece, "tab:red", f"clip each, then mean: ({per_piece[0]:.3g}, {per_piece[1]:.3g})")
    circle = plt.Circle((0, 0), 2.5, fill=False, ls="--", color="black", lw=0.8)
    ax.add_patch(circle)
    ax.text(-2.9, 2.7, "circle: max_norm 2.5", fontsize=8)
    ax.set_xlim(-3, 4.5)
    ax.set_ylim(-4.5, 4.5)
    ax.set_aspect("equal")
    ax.axhline(0, color="black", lw=0.4)
    ax.axvline(0, color="black", lw=0.4)
    ax.legend(fontsize=7.5, loc="lower right")
    ax.set_title("Clipping per micro-batch clips a different vector", fontsize=10)
    return save(fig, "05_clipping.png")


def draw_all() -> list[Path]:
    return [draw_item_weights(), draw_incident_weights(), draw_clipping()]
