"""Chapter 14's figures: the equal-lr comparison, the noise scale over training,
and the steps-examples trade-off with B_crit, all measured on the digits MLP
(:mod:`minigrad.experiments.critical_batch`)."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt

from minigrad.experiments import critical_batch as cb

from . import save

K = 16              # batch 1 against 16 accumulated micro-batches of 1
EXAMPLES = 640      # the same examples for every run (40 windows of 16)


def draw_equal_lr():
    """Training loss against examples seen: 16 accumulated at its tuned lr, and
    batch 1 at the same lr, at lr/16 and at lr/4."""
    rows = cb.compare_at_equal_examples(accumulation_steps=K, windows=EXAMPLES // K,
                                        rules=("equal",))
    lr = rows[0]["lr"]
    runs = [(K, lr, f"1 × {K} accumulated, lr {lr:g} (tuned)", "k-"),
            (1, lr, f"batch 1, the same lr {lr:g}", "r--"),
            (1, lr / K, f"batch 1, lr/{K} = {lr / K:g} (linear rule)", "b-."),
            (1, lr / math.sqrt(K), f"batch 1, lr/√{K} = {lr / math.sqrt(K):g} (square-root rule)",
             "g:")]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for batch, rate, label, style in runs:
        curve = cb.loss_curve(batch, rate, EXAMPLES)
        ax.plot([c[0] for c in curve], [min(c[1], 3.0) for c in curve], style, label=label)
    ax.set_xlabel("training examples seen")
    ax.set_ylabel("training loss (clipped at 3)")
    ax.set_title("the same examples, different learning rates")
    ax.legend(fontsize=8)
    return save(fig, "14_equal_lr.png")


def draw_full_run():
    """The full critical-batch run: the noise scale over training, and the trade-off."""
    result = cb.critical_batch(quick=False)
    paths = []
    for draw, name in ((cb.draw_noise_scale, "14_noise_scale.png"),
                       (cb.draw_tradeoff, "14_steps_examples.png")):
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        draw(result, ax)
        paths.append(save(fig, name))
    return paths


def draw_all():
    return [draw_equal_lr(), *draw_full_run()]
