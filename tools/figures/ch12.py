"""Chapter 12's figures: where a sum stalls, the window mean's error, the bytes per parameter.

The running sums are NumPy (float16, ml_dtypes' bfloat16, float32), the error
table is ``minigrad.experiments.precision.error_table`` (the notebook's), and
the bytes come from ``minigrad.memory_planner.plan``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import ml_dtypes
import numpy as np

from minigrad.experiments import precision as P
from minigrad.memory_planner import plan

from . import save

FORMATS = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
COLORS = {"float32": "C0", "float16": "C1", "bfloat16": "C2"}


def stall():
    """Adding 1 three thousand times, in each format."""
    n = 3000
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for name, dtype in FORMATS.items():
        one, s, sums = dtype(1), dtype(0), []
        for _ in range(n):
            s = dtype(s + one)
            sums.append(float(s))
        label = f"{name}: still exact" if sums[-1] == n else f"{name}: stops at {sums[-1]:g}"
        ax.plot(range(1, n + 1), sums, color=COLORS[name], label=label)
    ax.set_xlabel("number of 1s added")
    ax.set_ylabel("running sum")
    ax.legend(fontsize=8)
    return save(fig, "12_stall.png")


def window_error():
    """The relative error of a window mean against k, plain and Kahan, with √k·u."""
    table = P.error_table(ks=(1, 4, 16, 64, 256, 1024, 4096))
    ks = np.array(table["k"])
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name in ("float32", "float16", "bfloat16"):
        ax.loglog(ks, table[name], "o-", color=COLORS[name], label=f"{name}, plain sum")
        ax.loglog(ks, np.sqrt(ks) * P.UNIT_ROUNDOFF[name], ":", color=COLORS[name], alpha=0.7)
    for name in ("float16", "bfloat16"):
        ax.loglog(ks, table[f"{name} + Kahan"], "s--", color=COLORS[name], mfc="none",
                  label=f"{name} + Kahan")
        ax.loglog(ks, table[f"{name} once"], "-", color=COLORS[name], lw=4, alpha=0.25,
                  label=f"{name}, exact mean rounded once")
        ax.axvline(P.stall_point(name), color=COLORS[name], ls="--", lw=0.8)
    ax.set_xlabel("k (micro-batches summed)")
    ax.set_ylabel("relative L2 error of the window mean")
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    return save(fig, "12_window_error.png")


def bytes_per_parameter():
    """Resident bytes per trainable parameter, split into value, master copy, gradient, state."""
    cases = [("float32\nSGD", dict(optimizer="sgd")),
             ("float32\nSGD + momentum", dict(optimizer="sgd-momentum")),
             ("float32\nAdam", dict(optimizer="adam")),
             ("mixed precision\nAdam", dict(optimizer="adam", param_dtype="float16",
                                            master_weights=True))]
    n = 1_000_000
    parts = {"value": [], "float32 master copy": [], "gradient": [], "optimizer state": []}
    for _, kw in cases:
        p = plan(n, activation_bytes_per_item=0, **kw)
        without_master = plan(n, activation_bytes_per_item=0, **{**kw, "master_weights": False})
        parts["value"].append(without_master.parameters / n)
        parts["float32 master copy"].append((p.parameters - without_master.parameters) / n)
        parts["gradient"].append(p.gradients / n)
        parts["optimizer state"].append(p.optimizer_state / n)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    bottom = np.zeros(len(cases))
    colors = ["#6baed6", "#c6dbef", "#fd8d3c", "#74c476"]
    for (name, values), color in zip(parts.items(), colors):
        values = np.array(values)
        ax.bar(range(len(cases)), values, bottom=bottom, color=color, edgecolor="black",
               lw=0.5, label=name)
        for i, (b, v) in enumerate(zip(bottom, values)):
            if v:
                ax.text(i, b + v / 2, f"{v:g}", ha="center", va="center", fontsize=8)
        bottom += values
    for i, total in enumerate(bottom):
        ax.text(i, total + 0.3, f"{total:g} B", ha="center", va="bottom", fontsize=9, weight="bold")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c for c, _ in cases], fontsize=8)
    ax.set_ylabel("bytes per trainable parameter")
    ax.set_ylim(0, bottom.max() + 2.5)
    ax.legend(fontsize=8, loc="upper left")
    return save(fig, "12_bytes_per_parameter.png")


def draw_all():
    return [stall(), window_error(), bytes_per_parameter()]
