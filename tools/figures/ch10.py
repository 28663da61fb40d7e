"""Chapter 10's figures: one window across W ranks, the mean of means, the traffic.

The micro-batch sizes come from ``DistributedWindowSampler``, the gradients of
the worked example from NumPy, and the bytes from ``CountingCommunicator``
around the accumulator (``minigrad.experiments.data_parallel``).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyBboxPatch

from minigrad import distributed as dist
from minigrad.experiments import data_parallel as dp

from . import save

W, K, WINDOW = 4, 3, 101          # the chapter's sharding example


def window():
    """W ranks, k micro-batches each, one all-reduce, one identical step."""
    sampler = dist.DistributedWindowSampler(dataset_size=3 * WINDOW, window_size=WINDOW,
                                            accumulation_steps=K, num_replicas=W, rank=0,
                                            shuffle=False)
    table = sampler.shard_table(0)
    fig, ax = plt.subplots(figsize=(9.5, 3.4))
    for r, sizes in enumerate(table):
        y = W - 1 - r
        x = 0.0
        for j, n in enumerate(sizes):
            ax.add_patch(FancyBboxPatch((x + 0.05, y - 0.32), 0.9, 0.64,
                                        boxstyle="round,pad=0.02", fc="#9ecae1", ec="black", lw=0.6))
            ax.text(x + 0.5, y, f"fwd+bwd\n{n} items", ha="center", va="center", fontsize=7)
            x += 1.0
        ax.text(-0.1, y, f"rank {r}\nN_{r} = {sum(sizes)}", ha="right", va="center", fontsize=8)
        ax.add_patch(FancyBboxPatch((K + 1.25, y - 0.32), 0.8, 0.64,
                                    boxstyle="round,pad=0.02", fc="#a1d99b", ec="black", lw=0.6))
        ax.text(K + 1.65, y, "÷ N\nstep", ha="center", va="center", fontsize=7)
    ax.add_patch(FancyBboxPatch((K + 0.15, -0.4), 0.9, W - 0.2,
                                boxstyle="round,pad=0.02", fc="#fdae6b", ec="black", lw=0.8))
    total = sum(map(sum, table))
    ax.text(K + 0.6, (W - 1) / 2, f"one\nall-reduce\n(Σ grads,\nN = {total})", ha="center",
            va="center", fontsize=8)
    for r in range(W):
        ax.annotate("", xy=(K + 0.15, W - 1 - r), xytext=(K, W - 1 - r),
                    arrowprops=dict(arrowstyle="->", lw=0.8))
        ax.annotate("", xy=(K + 1.25, W - 1 - r), xytext=(K + 1.05, W - 1 - r),
                    arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.text(K / 2, W - 0.35, f"k = {K} micro-batches: local sums only, no traffic",
            ha="center", va="bottom", fontsize=8)
    ax.set_xlim(-1.1, K + 2.2)
    ax.set_ylim(-0.6, W)
    ax.axis("off")
    ax.set_title(f"one window of {total} items on W = {W} ranks")
    return save(fig, "10_window.png")


def mean_of_means():
    """The worked example: item-weighted mean against the mean of the two ranks' means."""
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = np.array([2.0, 3.0, 5.0, 4.0, 6.0])
    per_item = -y * x
    shards = [slice(0, 3), slice(3, 5)]
    colors = ["C0", "C1"]
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    for r, (s, c) in enumerate(zip(shards, colors)):
        idx = np.arange(5)[s]
        ax.bar(idx, per_item[s], color=c, alpha=0.7, label=f"rank {r}: {len(idx)} items, "
                                                              f"mean {per_item[s].mean():.2f}")
    exact = per_item.sum() / per_item.size
    means = float(np.mean([per_item[s].mean() for s in shards]))
    ax.axhline(exact, color="black", lw=1.5, label=f"Σ grads / Σ items = {exact:.2f} (full batch)")
    ax.axhline(means, color="C3", ls="--", lw=1.5, label=f"mean of the ranks' means = {means:.2f}")
    ax.set_xticks(range(5))
    ax.set_xticklabels([f"item {i}" for i in range(5)])
    ax.set_ylabel("gradient at w = 0")
    ax.legend(fontsize=8, loc="lower left")
    return save(fig, "10_mean_of_means.png")


def traffic():
    """Bytes each rank sends per window: deferred vs after every micro-batch, against k."""
    X, y = dp._data()
    ks = [1, 2, 4, 8, 16]
    rows = [dp._collectives(dist.LocalCommunicator(), X, y, k) for k in ks]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.plot(ks, [r["deferred"]["bytes"] / 1e3 for r in rows], "o-", label="deferred: one all-reduce per window")
    ax.plot(ks, [r["every_micro_batch"]["bytes"] / 1e3 for r in rows], "s-", color="C3",
            label="after every micro-batch: k all-reduces")
    for k, r in zip(ks, rows):
        ax.annotate(f"{r['every_micro_batch']['collectives']}", (k, r["every_micro_batch"]["bytes"] / 1e3),
                    textcoords="offset points", xytext=(-4, 6), fontsize=7, color="C3")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("micro-batches per window, k")
    ax.set_ylabel("kB sent per rank per window")
    ax.set_title(f"digits MLP, {rows[0]['parameters']:,} float64 parameters")
    ax.legend(fontsize=8)
    return save(fig, "10_traffic.png")


def draw_all():
    return [window(), mean_of_means(), traffic()]
