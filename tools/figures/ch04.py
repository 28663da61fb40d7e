"""Chapter 04's figures: one accumulation window, and the order of one update.

Both are drawn from runs of ``GradientAccumulator`` on the chapter's worked
example (x = 1, 2, 3, 4; y = 2, 4, 5, 9; w = 1; the mean squared error), so
every number on them is what minigrad computes.  The bar chart of the running
sum (``04_window.png``) is drawn by ``tools/make_chapter_figures.py``.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyBboxPatch

import minigrad
import minigrad.nn.functional as F
from minigrad import nn, optim

from . import save

X = np.array([[1.0], [2.0], [3.0], [4.0]])
Y = np.array([[2.0], [4.0], [5.0], [9.0]])


def _model():
    minigrad.manual_seed(0)
    model = nn.Linear(1, 1, bias=False).to(np.float64)
    model.weight.data[...] = 1.0
    return model


def window_trace(k: int = 4):
    """One window of k micro-batches through ``GradientAccumulator`` (SGD, lr 0.01).

    Returns ``(grad_after_each_backward, updated_after_each_step, w_before, w_after,
    mean_gradient)``; ``.grad`` holds the item-weighted sum Σ n_j ∇L_j during the window.
    """
    model = _model()
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.01), accumulation_steps=k)
    grads, updated = [], []
    w_before = model.weight.item()
    for xb, yb in zip(np.split(X, k), np.split(Y, k)):
        acc.backward(F.mse_loss(model(minigrad.tensor(xb)), minigrad.tensor(yb)), num_items=len(xb))
        grads.append(model.weight.grad.item())
        updated.append(acc.step())
    mean_gradient = grads[-1] / len(X)
    return grads, updated, w_before, model.weight.item(), mean_gradient


def update_trace(max_norm: float = 10.0, lr: float = 0.01, gamma: float = 0.5):
    """The five actions of one update, done by hand on the worked example (k = 2),
    with the state after each; checked against ``GradientAccumulator``.

    Returns a list of ``(action, grad, w, lr)`` and the accumulator's ``(w, lr)``.
    """
    model = _model()
    opt = optim.SGD(model.parameters(), lr=lr)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=gamma)
    for xb, yb in zip(np.split(X, 2), np.split(Y, 2)):     # seed backward with n_j
        loss = F.mse_loss(model(minigrad.tensor(xb)), minigrad.tensor(yb))
        loss.backward(np.full(loss.shape, float(len(xb))))
    p = model.weight

    def state(action):
        grad = None if p.grad is None else p.grad.item()
        return action, grad, p.item(), opt.param_groups[0]["lr"]

    trace = [state("window's sum")]
    p.grad.data /= len(X)
    trace.append(state("divide by N"))
    optim.clip_grad_norm_([p], max_norm)
    trace.append(state("clip"))
    opt.step()
    trace.append(state("optimizer step"))
    sched.step()
    trace.append(state("scheduler step"))
    opt.zero_grad()
    trace.append(state("zero .grad"))

    check = _model()
    check_opt = optim.SGD(check.parameters(), lr=lr)
    check_sched = optim.lr_scheduler.StepLR(check_opt, step_size=1, gamma=gamma)
    acc = optim.GradientAccumulator(check_opt, accumulation_steps=2, max_grad_norm=max_norm,
                                    scheduler=check_sched)
    for xb, yb in zip(np.split(X, 2), np.split(Y, 2)):
        acc.backward(F.mse_loss(check(minigrad.tensor(xb)), minigrad.tensor(yb)), num_items=len(xb))
        acc.step()
    by_accumulator = (check.weight.item(), check_opt.param_groups[0]["lr"])
    assert np.isclose(by_accumulator[0], trace[-1][2]) and by_accumulator[1] == trace[-1][3]
    return trace, by_accumulator


def _box(ax, x, y, w, h, text, color, fontsize=9):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="black",
                                lw=0.8))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)


def draw_window() -> Path:
    grads, updated, w0, w1, mean = window_trace(k=4)
    k = len(grads)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.2, 4.6), height_ratios=[1, 1.4],
                                      sharex=True)
    for j in range(k):
        _box(top, j + 0.05, 0.35, 0.9, 0.5, f"micro-batch {j + 1}\nforward,\nbackward",
             "#cfe2f3", fontsize=8)
        top.text(j + 0.5, 0.12, "step(): " + ("update" if updated[j] else "count only"),
                 ha="center", fontsize=8)
    _box(top, k + 0.05, 0.35, 0.9, 0.5, f"one update\nw: {w0:g} → {w1:.4g}", "#d9ead3",
         fontsize=8)
    top.set_ylim(0, 1)
    top.axis("off")
    top.set_title(f"One window of k = {k} micro-batches: backward adds, one update at the end",
                  fontsize=10)
    bottom.bar(np.arange(k) + 0.5, grads, width=0.5, color="tab:blue",
               label=".grad after the backward (running sum)")
    for j, g in enumerate(grads):
        bottom.text(j + 0.5, g - 2, f"{g:g}", ha="center", va="top", fontsize=8)
    bottom.bar([k + 0.5], [mean], width=0.5, color="tab:green",
               label=f"divided once by N = {len(X)} items: {mean:g}")
    bottom.text(k + 0.5, mean - 2, f"{mean:g}", ha="center", va="top", fontsize=8)
    bottom.axhline(0, color="black", lw=0.6)
    bottom.set_ylim(min(grads) * 1.25, 5)
    bottom.set_ylabel("∂/∂w")
    bottom.set_xticks([])
    bottom.legend(fontsize=8, loc="lower left")
    return save(fig, "04_one_window.png")


def draw_update_order() -> Path:
    trace, _ = update_trace()
    fig, ax = plt.subplots(figsize=(8.6, 2.7))
    colors = ["#eeeeee", "#cfe2f3", "#fce5cd", "#d9ead3", "#fff2cc", "#eeeeee"]
    width, gap = 1.25, 0.22
    for i, (action, grad, w, lr) in enumerate(trace):
        x = i * (width + gap)
        grad_text = "None" if grad is None else f"{grad:g}"
        _box(ax, x, 0.28, width, 0.5, f"{action}\n.grad = {grad_text}\nw = {w:.4g}\nlr = {lr:g}",
             colors[i], fontsize=8)
        if i:
            ax.annotate("", xy=(x - 0.02, 0.53), xytext=(x - gap + 0.02, 0.53),
                        arrowprops=dict(arrowstyle="->", lw=1.2))
        ax.text(x + width / 2, 0.12, ["", "once, by the\nwindow's items", "the window's norm\n(max_norm 10)",
                                      "once per window", "once per window",
                                      "ready for the\nnext window"][i],
                ha="center", va="center", fontsize=7.5)
    ax.set_xlim(-0.1, len(trace) * (width + gap))
    ax.set_ylim(0, 0.9)
    ax.axis("off")
    ax.set_title("The order of one update: divide → clip → step → schedule → zero "
                 "(worked example, k = 2)", fontsize=10)
    return save(fig, "04_update_order.png")


def draw_all() -> list[Path]:
    return [draw_window(), draw_update_order()]
