"""Chapter 09's figures: host-device traffic in one accumulation window, summation orders, and
kernel fusion.

No GPU is needed: the transfer picture counts what the loop and ``GradientAccumulator``'s
device path do (one copy of each micro-batch's two arrays to the device, no read per micro-batch,
at the window's end one read of the loss sum with its non-finite flag and one of the
gradients' finite check); the sums are float32 sums computed with NumPy in the orders named;
the fusion picture counts the bytes two kernels and one fused kernel move, and computes the
rounding of a·b + c both ways with NumPy.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from tools.figures import save

K = 8                       # micro-batches per window, notebook 09's 8 x 16


def window_events(read_loss_every_micro_batch: bool) -> list[tuple[str, int]]:
    """(kind, micro-batch) of one window, in order: 'copy' host -> device, 'work' the queued
    forward and backward kernels, 'read' device -> host (the host waits for the device)."""
    events = []
    for j in range(K):
        events += [("copy", j), ("copy", j), ("work", j)]      # inputs and targets, then kernels
        if read_loss_every_micro_batch:
            events.append(("read", j))                         # loss.item(): copy and wait
    events += [("read", K), ("read", K)]                       # loss sum + flag; finite check
    return events


def figure_transfers():
    """A schematic clock: the host spends LAUNCH per micro-batch copying its arrays and queuing
    its kernels, the device WORK running them; a read makes the host wait for the device."""
    launch, work = 0.45, 1.0
    fig, axes = plt.subplots(2, 1, figsize=(7.4, 3.9), sharex=True)
    titles = ["GradientAccumulator on the GPU: the loss sum stays on the device",
              "the same loop with loss.item() after every micro-batch"]
    for ax, logging, title in zip(axes, (False, True), titles):
        host = device_free = 0.0
        for kind, j in window_events(logging):
            if kind == "copy":
                ax.annotate("", xy=(host + 0.05, 0.15), xytext=(host + 0.05, 0.85),
                            arrowprops=dict(arrowstyle="->", color="tab:blue"))
                host += 0.1
            elif kind == "work":
                ax.barh(1, launch - 0.2, left=host, height=0.22, color="tab:gray")
                host += launch - 0.2
                start = max(host, device_free)
                ax.barh(0, work, left=start, height=0.22, color="tab:green", alpha=0.8,
                        edgecolor="white")
                ax.text(start + work / 2, 0, str(j + 1), ha="center", va="center", fontsize=7)
                device_free = start + work
            else:                                              # the host waits, then copies back
                host = max(host, device_free)
                ax.annotate("", xy=(host + 0.05, 0.85), xytext=(host + 0.05, 0.15),
                            arrowprops=dict(arrowstyle="->", color="tab:red"))
                host += 0.1
        events = window_events(logging)
        copies = sum(kind == "copy" for kind, _ in events)
        reads = sum(kind == "read" for kind, _ in events)
        ax.axvline(host, color="black", linewidth=0.8)
        ax.set_yticks([0, 1], ["device", "host"])
        ax.set_ylim(-0.4, 1.3)
        ax.set_title(f"{title}: {copies} copies to the device (blue), {reads} reads (red)",
                     fontsize=8.5)
        ax.spines[["top", "right"]].set_visible(False)
    axes[1].set_xlabel("time (schematic): gray, the host launching; green, the kernels running; "
                       "line: the window's end", fontsize=8.5)
    return save(fig, "09_transfers_per_window.png")


def figure_summation_orders():
    """float32 sums of the same 4096 numbers in 200 random orders, and in three fixed orders."""
    rng = np.random.default_rng(0)
    values = rng.standard_normal(4096).astype(np.float32)
    exact = float(np.sum(values.astype(np.float64)))

    def sequential(v):
        total = np.float32(0)
        for x in v:
            total = np.float32(total + x)
        return total

    sums = [float(sequential(values[rng.permutation(len(values))])) - exact for _ in range(200)]
    blocks = np.array([sequential(b) for b in values.reshape(16, 256)], dtype=np.float32)
    while len(blocks) > 1:                                     # a tree over 16 block sums
        blocks = (blocks[0::2] + blocks[1::2]).astype(np.float32)
    fixed = {"left to right": float(sequential(values)) - exact,
             "NumPy np.sum (pairwise)": float(np.sum(values)) - exact,
             "16 blocks of 256, then a tree": float(blocks[0]) - exact}
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    ax.hist(sums, bins=30, color="tab:blue", alpha=0.7, label="200 random orders (atomic adds)")
    for (name, value), color, style, width in zip(fixed.items(), ("black", "tab:red", "tab:green"),
                                                  ("--", "-", ":"), (1.2, 3, 2)):
        ax.axvline(value, color=color, linestyle=style, linewidth=width, label=name)
    ax.set_xlabel("float32 sum − exact sum")
    ax.set_ylabel("orders")
    ax.set_title("One set of 4096 float32 numbers, summed in different orders")
    ax.legend(fontsize=7.5)
    return save(fig, "09_summation_orders.png")


def figure_kernel_fusion():
    """a·b + c on n float32 numbers: two kernels and a temporary, or one fused kernel."""
    n = 1_000_000
    item = np.dtype(np.float32).itemsize
    unfused = {"read a, b": 2, "write t = a·b": 1, "read t, c": 2, "write out": 1}
    fused = {"read a, b, c": 3, "write out": 1}
    a = np.float32(1 + 2 ** -12)
    c = np.float32(-(1 + 2 ** -11))
    two_roundings = np.float32(a * a) + c                      # the product rounded first
    one_rounding = np.float32(np.float64(a) * np.float64(a) + np.float64(c))   # exact, rounded once
    fig, ax = plt.subplots(figsize=(7.0, 2.8))
    for row, (name, parts) in enumerate((("two kernels: mul, then add", unfused),
                                         ("one fused kernel (FMA)", fused))):
        left = 0.0
        for i, (label, arrays) in enumerate(parts.items()):
            width = arrays * n * item / 1e6
            ax.barh(row, width, left=left, color=plt.cm.tab20(2 * i + (row == 1)),
                    edgecolor="black")
            ax.text(left + width / 2, row, label, ha="center", va="center", fontsize=7.5)
            left += width
        result = two_roundings if row == 0 else one_rounding
        ax.text(left + 0.3, row, f"{left:.0f} MB moved;\n{1 + (row == 0)} rounding(s): "
                f"a·a + c = {result:.3g}", va="center", fontsize=7.5)
    ax.set_yticks([0, 1], ["unfused", "fused"])
    ax.set_xlim(0, 34)
    ax.invert_yaxis()
    ax.set_xlabel(f"memory traffic for n = {n:,} float32 numbers (MB)")
    ax.set_title(f"a·b + c: fusing saves a temporary and a rounding (a = 1 + 2⁻¹², c = −(1 + 2⁻¹¹))",
                 fontsize=9)
    return save(fig, "09_kernel_fusion.png")


def draw_all():
    return [figure_transfers(), figure_summation_orders(), figure_kernel_fusion()]
