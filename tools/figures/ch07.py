"""Chapter 07's figures: memory over one update, the peak and the time per update against k,
and what gradient checkpointing stores and runs twice.

The memory over one update is measured here with minigrad and ``tracemalloc`` (exact byte
counts of NumPy's buffers, the same every run).  The peaks and times per k are read from the
stored outputs of notebook 07, so the figures show the numbers the chapter quotes; times are
of the machine that executed the notebook.  The checkpointing counts are those of
``checkpoint_sequential`` (``checkpoint_counts`` below, the formula of chapter 07 §4).
"""
from __future__ import annotations

import gc
import json
import re
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch, Rectangle

from tools.figures import ROOT, save

MiB = 2 ** 20
NOTEBOOK = ROOT / "notebooks" / "07_memory_and_time.ipynb"


def notebook_output(marker: str) -> str:
    """The stored text output of the first cell of notebook 07 whose output contains ``marker``."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", ""))
            if marker in text:
                return text
    raise LookupError(f"notebook 07 has no stored output containing {marker!r}")


def notebook_peaks() -> dict:
    """``{k: (update peak MiB, total peak MiB)}`` from notebook 07's table."""
    rows = {}
    for line in notebook_output("update peak MiB").splitlines()[1:]:
        k, _, update, total, *_ = line.split()
        rows[int(k)] = (float(update), float(total))
    return rows


def notebook_times() -> dict:
    """``{k: ms per update}`` from notebook 07's timing output."""
    text = notebook_output("ms per update")
    return {int(k): float(ms) for k, ms in re.findall(r"k=\s*(\d+):\s*([\d.]+) ms per update", text)}


def resident_bytes() -> dict:
    """The exact byte counts of notebook 07's model: parameters, gradients, Adam's moments."""
    import minigrad
    import minigrad.nn.functional as F
    from minigrad import nn, optim
    from minigrad.memory import breakdown
    minigrad.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                        nn.Linear(128, 10))
    adam = optim.Adam(mlp.parameters(), lr=1e-3)
    x = minigrad.tensor(np.zeros((16, 784), dtype=np.float32))
    F.cross_entropy(mlp(x), minigrad.tensor(np.zeros(16, dtype=np.int64))).backward()
    adam.step()
    return breakdown(mlp, adam)


def memory_over_one_update(k: int, batch: int = 2048) -> tuple[list, list]:
    """Bytes allocated above the resident part after each step of one update of notebook 07's
    MLP (k micro-batches of batch // k MNIST images), and the peak inside each step.

    The steps are: each layer's forward, the loss, the backward, for every micro-batch, then the
    optimizer step.  Measured with tracemalloc after a warm-up update (Adam's moments exist)."""
    import minigrad
    import minigrad.nn.functional as F
    from minigrad import nn, optim
    from minigrad.data import load_mnist_test
    X, y = load_mnist_test()
    X, y = X.reshape(len(X), -1)[:batch], y[:batch]
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    accumulator = optim.GradientAccumulator(optim.Adam(model.parameters(), lr=1e-3), k)
    micro = batch // k

    def update(sample):
        for j in range(k):
            h = minigrad.tensor(X[j * micro:(j + 1) * micro])
            target = minigrad.tensor(y[j * micro:(j + 1) * micro])
            sample()                                         # the micro-batch's input is in memory
            for layer in model:
                h = layer(h)
                sample()
            loss = F.cross_entropy(h, target)
            sample()
            del h
            accumulator.backward(loss, num_items=micro)
            del loss
            sample()
            accumulator.step()                               # the k-th call: Adam's step, zero_grad
        sample()

    update(lambda: None)                                     # warm-up: Adam allocates its moments
    gc.collect()
    current, peaks = [], []
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]

        def sample():
            now, top = tracemalloc.get_traced_memory()
            current.append(now - base)
            peaks.append(top - base)
            tracemalloc.reset_peak()

        update(sample)
    finally:
        tracemalloc.stop()
    return current, peaks


def figure_memory_timeline():
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    for k, color in ((1, "tab:red"), (8, "tab:blue")):
        current, peaks = memory_over_one_update(k)
        x = np.linspace(0, 1, len(peaks))
        ax.step(x, np.array(peaks) / MiB, where="pre", color=color,
                label=f"k = {k}: {2048 // k} images per micro-batch")
    grads = resident_bytes()["gradients"] / MiB
    ax.axhline(grads, color="gray", linestyle="--", linewidth=1,
               label=f"gradient buffer ({grads:.2f} MiB)")
    ax.set_xlabel("progress through one update of 2048 images (forward, backward, ..., step)")
    ax.set_ylabel("highest MiB in each step,\nabove parameters + moments")
    ax.set_title("Memory during one update: activations rise in forward, fall in backward")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="center right")
    return save(fig, "07_memory_timeline.png")


def figure_peak_by_k():
    rows = notebook_peaks()
    parts = resident_bytes()
    ks = sorted(rows)
    kept = (parts["parameters"] + parts["optimizer_state"]) / MiB
    grads = parts["gradients"] / MiB
    rest = np.array([rows[k][0] for k in ks]) - grads        # activations and temporaries
    pos = np.arange(len(ks))
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    ax.bar(pos, np.full(len(ks), kept), color="tab:gray", label="parameters + Adam's moments")
    ax.bar(pos, np.full(len(ks), grads), bottom=kept, color="tab:red", label="gradient buffer")
    ax.bar(pos, rest, bottom=kept + grads, color="tab:blue", label="activations + temporaries")
    for p, k in zip(pos, ks):
        ax.text(p, rows[k][1] + 0.15, f"{rows[k][1]:.2f}", ha="center", fontsize=8)
    ax.axhline(kept + grads, color="black", linestyle="--", linewidth=1,
               label="resident: what no k removes")
    ax.set_xticks(pos, [f"{k}\n({2048 // k})" for k in ks])
    ax.set_xlabel("accumulation steps k (images per micro-batch)")
    ax.set_ylabel("total peak (MiB)")
    ax.set_title("Peak of one update, effective batch 2048 (notebook 07)")
    ax.legend(fontsize=8)
    return save(fig, "07_peak_by_k.png")


def figure_time_by_k():
    times = notebook_times()
    ks = np.array(sorted(times))
    ms = np.array([times[k] for k in ks])
    a, b = (float(v) for v in re.search(r"fit: ([\d.]+) ms \+ ([\d.]+) ms per micro-batch",
                                        notebook_output("fit:")).groups())    # the notebook's fit
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    ax.plot(ks, ms, "o", color="tab:blue", label="measured (median of 5, notebook 07)")
    grid = np.linspace(0, ks.max(), 100)
    ax.plot(grid, a + b * grid, "--", color="tab:orange",
            label=f"fit a + b·k = {a:.1f} ms + {b:.2f} ms · k (b/a = {b / a:.1%})")
    ax.fill_between(grid, 0, a, color="tab:gray", alpha=0.2, label="a: the arithmetic, any k")
    ax.set_xlabel("accumulation steps k")
    ax.set_ylabel("time per update (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title("Same arithmetic in more pieces: each pass adds a fixed cost b")
    ax.legend(fontsize=8, loc="upper left")
    return save(fig, "07_time_by_k.png")


def checkpoint_counts(layers: int, segments: int, per_layer: int = 1) -> tuple[int, int]:
    """(stored arrays at the end of forward, layer forwards run twice) of
    checkpoint_sequential on a chain of ``layers`` layers that keep
    ``per_layer`` arrays each, in ``segments`` parts of ``layers // segments``
    (the last part takes the remainder and is not checkpointed): chapter 07's
    ``stored(s) = (s - 1) + c * L / s``."""
    size = layers // segments
    last = layers - size * (segments - 1)
    stored = (segments - 1) + per_layer * last     # boundaries + the plain last segment
    recompute = size * (segments - 1)              # every checkpointed layer runs twice
    return stored, recompute


def figure_checkpoint_counts():
    """16 blocks of one array (Linear -> Tanh) and of two: stored arrays and recompute vs segments."""
    layers = 16
    segments = [1, 2, 4, 8, 16]
    one = [checkpoint_counts(layers, s, per_layer=1) for s in segments]
    two = [checkpoint_counts(layers, s, per_layer=2) for s in segments]
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    ax.plot(segments, [c[0] for c in one], "o-", label="arrays stored, 1 per block (Linear → Tanh)")
    ax.plot(segments, [c[0] for c in two], "^:", label="arrays stored, 2 per block")
    ax.plot(segments, [c[1] for c in one], "s--", label="blocks run twice")
    ax.set_xscale("log", base=2)
    ax.set_xticks(segments, [str(s) for s in segments])
    ax.set_xlabel("segments")
    ax.set_ylabel("count")
    ax.legend(fontsize=8)
    ax.set_title("checkpoint_sequential, 16 blocks: fewest stored near √(cL) segments")
    return save(fig, "07_checkpoint_counts.png")


def figure_checkpoint_schedule():
    """4 layers in 2 segments: which layer outputs are held at each phase, and what runs twice."""
    layers, segments = 4, 2
    size = layers // segments
    phases = ["forward", "backward,\nsegment 2", "recompute\nsegment 1", "backward,\nsegment 1"]
    # state[phase][layer]: "kept" (output held for backward), "boundary" (a segment's input,
    # held), "dropped" (run without a graph), "freed", "rerun" (recomputed and held).
    state = {0: ["dropped", "boundary", "kept", "kept"],
             1: ["dropped", "boundary", "freed", "freed"],
             2: ["rerun", "rerun", "freed", "freed"],
             3: ["freed", "freed", "freed", "freed"]}
    colors = {"kept": "tab:blue", "boundary": "tab:purple", "dropped": "white",
              "freed": "#eeeeee", "rerun": "tab:orange"}
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    for row, name in enumerate(phases):
        held = 0
        for col in range(layers):
            s = state[row][col]
            held += s in ("kept", "boundary", "rerun")
            ax.add_patch(Rectangle((col, -row - 1), 0.92, 0.85, facecolor=colors[s],
                                   edgecolor="black", hatch="//" if s == "dropped" else None))
        ax.text(layers + 0.1, -row - 0.55, f"{held} held", va="center", fontsize=9)
        ax.text(-0.1, -row - 0.55, name, va="center", ha="right", fontsize=9)
    stored, twice = checkpoint_counts(layers, segments)
    ax.set_xlim(-1.6, layers + 1.1)
    ax.set_ylim(-len(phases) - 0.1, 0.6)
    for col in range(layers):
        ax.text(col + 0.46, 0.15, f"layer {col + 1}" + ("\n(seg. 1)" if col < size else "\n(seg. 2)"),
                ha="center", fontsize=8)
    ax.axis("off")
    ax.set_title(f"4 layers, 2 segments: {stored} outputs held after forward (not 4), "
                 f"{twice} layers run twice", fontsize=10)
    ax.legend(handles=[Patch(facecolor=colors[s], edgecolor="black", hatch="//" if s == "dropped" else None,
                             label=label) for s, label in
                       [("kept", "output held for backward"), ("boundary", "segment boundary, held"),
                        ("dropped", "run without a graph"), ("rerun", "recomputed, held"),
                        ("freed", "freed")]],
              fontsize=7, loc="lower center", ncol=5, bbox_to_anchor=(0.5, -0.18))
    return save(fig, "07_checkpoint_schedule.png")


def draw_all():
    return [figure_memory_timeline(), figure_peak_by_k(), figure_time_by_k(),
            figure_checkpoint_schedule(), figure_checkpoint_counts()]
