"""Chapter 01's figures: the backward order on a diamond, and broadcasting undone.

Both are computed with minigrad: the diamond's order is the one
``minigrad.autograd._topological_order`` returns for the recorded graph, and
each Function's pending count is the number of recorded inputs that point at
it; the broadcast figure shows the gradients ``backward`` puts into ``.grad``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

import minigrad
from minigrad.autograd import _topological_order
from tools.figures import save


def diamond():
    """``y = tanh(u) + 3·u`` with ``u = exp(x)``: the graph, the backward order
    and, per Function, how many gradients it waits for (its pending count)."""
    x = minigrad.tensor(0.5, requires_grad=True)
    u = x.exp()
    y = u.tanh() + u * 3
    order, uses = _topological_order(y.creator)
    pending = {fn: 0 for fn in order}
    for fn in order:
        for inp in fn.inputs:
            if inp._creator is not None:
                pending[inp._creator] += 1
    return x, y, order, pending, uses


def label(fn) -> str:
    return {"Add": "y = p + q", "Tanh": "p = tanh(u)", "Mul": "q = 3·u",
            "Exp": "u = exp(x)"}[type(fn).__name__]


def diamond_figure():
    x, y, order, pending, uses = diamond()
    names = [label(fn) for fn in order]
    where = {"y = p + q": (1.0, 3.0), "p = tanh(u)": (0.0, 2.0), "q = 3·u": (2.0, 2.0),
             "u = exp(x)": (1.0, 1.0), "x (leaf)": (1.0, 0.0)}
    edges = [("x (leaf)", "u = exp(x)"), ("u = exp(x)", "p = tanh(u)"),
             ("u = exp(x)", "q = 3·u"), ("p = tanh(u)", "y = p + q"),
             ("q = 3·u", "y = p + q")]
    counts = {label(fn): pending[fn] for fn in order}
    counts["x (leaf)"] = next(iter(uses.values()))[0]

    fig, (ax, tab) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1, 1.25]})
    for s, t in edges:
        (x0, y0), (x1, y1) = where[s], where[t]
        ax.annotate("", xy=(x1, y1 - 0.5), xytext=(x0, y0 + 0.2),
                    arrowprops=dict(arrowstyle="->", color="0.5"))
    for name, (px, py) in where.items():
        ax.text(px, py, name, ha="center", va="center", fontsize=10,
                bbox=dict(boxstyle="round", fc="#e8f0fe", ec="#4a6fa5"))
        ax.text(px, py - 0.36, f"waits for {counts[name]}", ha="center", fontsize=8.5,
                color="#a0301f")
        if name in names:
            ax.text(px - 0.62, py + 0.12, str(names.index(name) + 1), ha="center",
                    va="center", fontsize=10, color="white",
                    bbox=dict(boxstyle="circle", fc="#a0301f", ec="none"))
    ax.set_xlim(-0.8, 2.8)
    ax.set_ylim(-0.6, 3.5)
    ax.axis("off")
    ax.set_title("forward: up the arrows; backward: red numbers", fontsize=10)

    # The pass step by step: each Function's count of gradients still missing.
    rows, left = [], dict(counts)
    columns = names + ["x (leaf)"]
    rows.append([str(left[c]) for c in columns])
    step_names = ["before"]
    for fn in order:
        name = label(fn)
        for inp in fn.inputs:            # the gradients this backward sends
            if inp._creator is not None:
                left[label(inp._creator)] -= 1
            elif inp._requires_grad:
                left["x (leaf)"] -= 1
        rows.append([str(left[c]) for c in columns])
        step_names.append(f"{names.index(name) + 1}: {name.split(' =')[0]} runs")
    tab.axis("off")
    table = tab.table(cellText=rows, rowLabels=step_names, colLabels=columns,
                      loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8.5)
    table.scale(1.0, 1.5)
    for i, fn in enumerate(order, start=1):      # highlight the Function that runs
        table[i + 1, columns.index(label(fn))].set_facecolor("#fde2dd")
    tab.set_title("gradients each node still waits for, after each step", fontsize=10)
    return save(fig, "01_backward_order.png")


def unbroadcast_figure():
    """x (3, 1) + y (4,) -> (3, 4); an upstream gradient G of that shape, summed
    back by ``backward`` to x's shape (over each row) and y's (over each column)."""
    x = minigrad.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    y = minigrad.tensor([10.0, 20.0, 30.0, 40.0], requires_grad=True)
    upstream = np.arange(1.0, 13.0).reshape(3, 4)
    (x + y).backward(minigrad.tensor(upstream, dtype=x.dtype))
    fig, axes = plt.subplots(1, 3, figsize=(10, 2.8), gridspec_kw={"width_ratios": [4, 1.3, 4]})

    def grid(ax, values, title, color):
        values = np.atleast_2d(values)
        ax.imshow(np.ones_like(values), cmap="Greys", vmin=0, vmax=8)
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=10, color=color)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=9.5)

    grid(axes[0], upstream, "upstream gradient G of x + y, shape (3, 4)", "#1f5f1f")
    grid(axes[1], x.grad.numpy(), "x.grad (3, 1):\neach row of G summed", "#a0301f")
    grid(axes[2], y.grad.numpy()[None, :], "y.grad (4,): each column of G summed", "#a0301f")
    return save(fig, "01_unbroadcast.png")


def draw_all():
    return [diamond_figure(), unbroadcast_figure()]
