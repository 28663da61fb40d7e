"""Chapter 06's figures: what BatchNorm does to activations, micro-batch statistics
against the batch's, and the three terms of BatchNorm's backward.

The activations are those of a ``Linear(64, 32)`` on a batch of 128 bundled
digits, normalized by minigrad's ``BatchNorm1d``; the backward's terms are
computed with NumPy from the chapter's formula and checked against minigrad's
backward.  The ghost-batch bars (``06_ghost_batches.png``) are drawn by
``tools/make_chapter_figures.py``.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import minigrad
from minigrad import nn
from minigrad.data import load_digits

from . import save

CHANNELS = 8            # channels shown
MICRO = 16              # micro-batch size for the statistics figure


def digits_activations(batch=128, seed=0):
    """(before, after): a Linear(64, 32)'s outputs on ``batch`` digits, and BatchNorm1d's."""
    minigrad.manual_seed(seed)
    x, _ = load_digits()
    rows = np.random.default_rng(seed).choice(len(x), size=batch, replace=False)
    layer = nn.Linear(64, 32).to(np.float64)
    bn = nn.BatchNorm1d(32, dtype=np.float64)
    with minigrad.no_grad():
        h = layer(minigrad.tensor(x[rows].astype(np.float64)))
        return h.numpy(), bn(h).numpy()


def backward_terms(x=(1.0, 3.0, 5.0, 7.0), g=(1.0, 0.0, 0.0, 2.0)):
    """The three terms of dL/dx for one channel, and minigrad's own gradient.

    Returns ``(terms, sigma, from_formula, from_minigrad)`` with ``terms`` the rows
    g_i, -mean(g), -x̂_i·mean(g·x̂) (before the division by sigma).
    """
    x, g = np.asarray(x), np.asarray(g)
    eps = 1e-5
    sigma = np.sqrt(x.var() + eps)
    xhat = (x - x.mean()) / sigma
    terms = np.stack([g, np.full_like(g, -g.mean()), -xhat * (g * xhat).mean()])
    formula = terms.sum(axis=0) / sigma
    xt = minigrad.tensor(x.reshape(-1, 1), dtype=np.float64, requires_grad=True)
    bn = nn.BatchNorm1d(1, dtype=np.float64)
    (bn(xt) * minigrad.tensor(g.reshape(-1, 1))).sum().backward()
    return terms, sigma, formula, xt.grad.numpy().ravel()


def draw_before_after() -> Path:
    before, after = digits_activations()
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2), sharey=False)
    for ax, data, title in ((axes[0], before, "before BatchNorm: the Linear layer's outputs"),
                            (axes[1], after, "after BatchNorm (γ = 1, β = 0)")):
        ax.boxplot([data[:, c] for c in range(CHANNELS)], whis=(0, 100))
        ax.axhline(0, color="black", lw=0.5)
        ax.set_xlabel("channel")
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("activation (128 digits)")
    fig.suptitle("Each channel, centered and scaled by the batch's own mean and spread", fontsize=10)
    return save(fig, "06_before_after.png")


def draw_micro_statistics() -> Path:
    before, _ = digits_activations()
    parts = before.reshape(-1, MICRO, before.shape[1])           # k micro-batches of 16
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2))
    for ax, stat, name in ((axes[0], np.mean, "mean"), (axes[1], np.var, "variance")):
        for c in range(CHANNELS):
            micro = stat(parts[:, :, c], axis=1)
            ax.scatter(np.full(len(micro), c + 1), micro, s=12, color="tab:orange",
                       label=f"{len(micro)} micro-batches of {MICRO}" if c == 0 else None)
            ax.plot([c + 0.7, c + 1.3], [stat(before[:, c])] * 2, color="tab:blue", lw=2.5,
                    label=f"the batch of {len(before)}" if c == 0 else None)
        ax.set_xlabel("channel")
        ax.set_title(f"per-channel {name}", fontsize=9)
        ax.set_xticks(range(1, CHANNELS + 1))
    axes[0].legend(fontsize=8)
    fig.suptitle("Each micro-batch normalizes with its own statistics, not the batch's",
                 fontsize=10)
    return save(fig, "06_micro_statistics.png")


def draw_backward_terms() -> Path:
    terms, sigma, formula, grad = backward_terms()
    assert np.allclose(formula, grad, rtol=1e-9, atol=1e-12), (formula, grad)
    fig, ax = plt.subplots(figsize=(7.0, 3.2))
    pos = np.arange(terms.shape[1])
    names = ["gᵢ (direct)", "−mean(g) (through μ)", "−x̂ᵢ·mean(g·x̂) (through σ)"]
    colors = ["tab:gray", "tab:orange", "tab:purple"]
    for r in range(3):
        ax.bar(pos + (r - 1.5) * 0.2, terms[r], width=0.2, color=colors[r], label=names[r])
    ax.bar(pos + 1.5 * 0.2, grad, width=0.2, color="tab:blue",
           label=f"∂L/∂xᵢ = sum / σ (σ = {sigma:.3f}), minigrad's")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(pos, [f"x = {v:g}\ng = {w:g}" for v, w in zip((1, 3, 5, 7), (1, 0, 0, 2))])
    ax.legend(fontsize=7.5, loc="upper center", ncol=2)
    ax.set_ylim(terms.min() * 1.3, terms.max() * 1.9)
    ax.set_title("BatchNorm's input gradient, term by term (x = 1, 3, 5, 7)", fontsize=10)
    return save(fig, "06_backward_terms.png")


def draw_all() -> list[Path]:
    return [draw_before_after(), draw_micro_statistics(), draw_backward_terms()]
