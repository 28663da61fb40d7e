"""Chapter 12's figures of the quantized base: NF4's levels, and bytes per weight.

Drawn from minigrad's own computations: the levels of :mod:`minigrad.quantization`,
the shipped GPT's weights divided by their blocks' absmax, and the bytes that
the quantized layers store beside the planner's.
"""
from __future__ import annotations

from pathlib import Path
from statistics import NormalDist

import matplotlib.pyplot as plt
import numpy as np

from minigrad import nn
from minigrad import quantization as Q
from minigrad.experiments.pretrain import load_gpt
from minigrad.experiments.quantized import bytes_table

from . import save


def normalized_weights() -> np.ndarray:
    """Every weight of the shipped GPT's quantized layers divided by its block's absmax."""
    model, _, _ = load_gpt()
    tied = nn.quantized._tied_weights(model)
    parts = []
    for _, m in model.named_modules():
        if type(m) is nn.Linear and id(m.weight) not in tied:
            blocks = m.weight.data.reshape(-1, Q.BLOCKSIZE).astype(np.float64)
            parts.append((blocks / np.abs(blocks).max(axis=1, keepdims=True)).reshape(-1))
    return np.concatenate(parts)


def draw_levels() -> Path:
    levels = Q.NF4_LEVELS.astype(np.float64)
    edge = NormalDist().inv_cdf(0.9677083)            # the outermost quantile, scaled to 1
    x = np.linspace(-1.05, 1.05, 400)
    density = np.array([NormalDist().pdf(v * edge) for v in x]) * edge
    w = normalized_weights()
    codes = Q.nearest_level(w, Q.NF4_LEVELS)
    share = np.bincount(codes, minlength=16) / codes.size
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.4))
    a.plot(x, density, color="C0", label="N(0, 1), scaled so that its 96.8 % quantile is 1")
    a.vlines(levels, 0.2, density.max() * 1.05, colors="C3", linewidth=1,
             label="NF4's 16 levels")
    a.set_xlabel("value / block absmax")
    a.set_ylabel("density")
    a.set_title("NF4 levels: quantiles of a normal")
    a.set_ylim(0, 0.85)
    a.legend(fontsize=7, loc="lower center")
    b.hist(w, bins=120, range=(-1.05, 1.05), density=True, color="C7")
    b.vlines(levels, 0, 1.4, colors="C3", linewidth=1)
    for level, s in zip(levels, share):
        b.text(level, 1.43, f"{100 * s:.0f}", ha="center", fontsize=7, color="C3")
    b.set_ylim(0, 1.6)
    b.set_xlabel("weight / its block's absmax (red: % of weights at each level)")
    b.set_title("the shipped GPT's weights, blocks of 64")
    return save(fig, "12_nf4_levels.png")


def draw_bytes() -> Path:
    rows = bytes_table()
    names = [r["scheme"] for r in rows]
    measured = [r["measured_per_weight"] for r in rows]
    planned = [r["planned_per_weight"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    at = np.arange(len(rows))
    ax.bar(at - 0.2, measured, 0.4, label="measured (the layers' arrays)")
    ax.bar(at + 0.2, planned, 0.4, label="planned (memory_planner)", alpha=0.7)
    for i, m in enumerate(measured):
        ax.text(i - 0.2, m + 0.05, f"{m:.3f}", ha="center", fontsize=8)
    ax.set_xticks(at, names)
    ax.set_ylabel("bytes per weight")
    ax.set_title("the GPT's Linear weights, stored four ways")
    ax.legend(fontsize=8)
    return save(fig, "12_quant_bytes.png")


def draw_all() -> list[Path]:
    return [draw_levels(), draw_bytes()]
