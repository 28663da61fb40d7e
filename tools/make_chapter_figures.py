"""Draw one figure each of chapters 04-06 into chapters/figures/ (PNG): the
running sum of a window (04_window.png), the per-token weights
(05_token_weights.png) and the ghost batches (06_ghost_batches.png).  The
chapters' other figures, and all of chapters 07-13, are drawn by
tools/figures/chNN.py (``python -m tools.figures``).

Every number drawn is computed here, from the chapters' worked examples or
with minigrad itself, so a figure never disagrees with its text.

    .venv/bin/python tools/make_chapter_figures.py            # all figures
    .venv/bin/python tools/make_chapter_figures.py 05 06      # some chapters
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:           # run as a script: the repository's tools package
    sys.path.insert(0, str(ROOT))

from tools.figures import FIGURES, plt, save  # noqa: E402  (Agg backend, the figures folder)


def _save(fig, name: str) -> Path:
    return save(fig, name, FIGURES)     # FIGURES read at call time (the tests redirect it)


def figure_04() -> Path:
    """The running sum in .grad over a window of 2 micro-batches (chapter 04's example)."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([2.0, 4.0, 5.0, 9.0])
    per_example = 2 * x * (x - y)                      # d l_i / dw at w = 1
    micro = [per_example[:2].mean(), per_example[2:].mean()]
    running = np.cumsum(micro)
    full = per_example.mean()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    ax.bar([0, 1], micro, color="tab:gray", width=0.35, label="∇L_j of micro-batch j")
    ax.bar([0.38, 1.38], running, color="tab:blue", width=0.35, label=".grad after backward")
    ax.axhline(full, color="tab:orange", linestyle="--", label=f"full batch ∇L = {full:g}")
    ax.bar([2.2], [running[-1] / 2], color="tab:green", width=0.35,
           label=f"divided once by k = 2: {running[-1] / 2:g}")
    ax.set_xticks([0.19, 1.19, 2.2], ["micro-batch 1", "micro-batch 2", "update"])
    ax.set_ylabel("dL/dw")
    ax.set_title("One window: backward adds into .grad, one division, one step")
    ax.legend(fontsize=8, loc="lower left")
    return _save(fig, "04_window.png")


def figure_05() -> Path:
    """Per-token weights with micro-batches of 10 and 100 tokens."""
    n = np.array([10, 100])
    naive = 1 / (len(n) * n)                           # mean of the micro-batch means
    right = np.full(2, 1 / n.sum())                    # one mean over the window
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    pos = np.arange(2)
    ax.bar(pos - 0.18, naive, width=0.36, color="tab:red", label="mean of means: 1/20, 1/200")
    ax.bar(pos + 0.18, right, width=0.36, color="tab:blue", label="token count: 1/110 each")
    ax.set_xticks(pos, ["a token of the\n10-token micro-batch", "a token of the\n100-token micro-batch"])
    ax.set_ylabel("weight of one token in the loss")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("Which denominator: each token should weigh 1/110")
    return _save(fig, "05_token_weights.png")


def figure_06() -> Path:
    """BatchNorm of 4 numbers: one batch of 4 vs two ghost batches of 2."""
    x = np.array([1.0, 3.0, 5.0, 7.0])

    def normalize(v):
        return (v - v.mean()) / np.sqrt(v.var() + 1e-5)

    full = normalize(x)
    ghost = np.concatenate([normalize(x[:2]), normalize(x[2:])])
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    pos = np.arange(4)
    ax.bar(pos - 0.18, full, width=0.36, color="tab:blue", label="one batch of 4")
    ax.bar(pos + 0.18, ghost, width=0.36, color="tab:orange", label="two ghost batches of 2")
    ax.set_xticks(pos, [f"x = {v:g}" for v in x])
    ax.set_ylabel("normalized value x̂")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.legend(fontsize=8)
    ax.set_title("Same numbers, different batch, different outputs")
    return _save(fig, "06_ghost_batches.png")


FIGURES_BY_CHAPTER = {"04": figure_04, "05": figure_05, "06": figure_06}


def main(argv: list[str]) -> int:
    chosen = argv or list(FIGURES_BY_CHAPTER)
    unknown = [c for c in chosen if c not in FIGURES_BY_CHAPTER]
    if unknown:
        print(f"unknown chapter(s) {unknown}; expected some of {list(FIGURES_BY_CHAPTER)}")
        return 2
    for chapter in chosen:
        print(FIGURES_BY_CHAPTER[chapter]().relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
