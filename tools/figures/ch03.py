"""Chapter 03's figure: SGD with and without momentum in a narrow valley.

The paths are the parameters minigrad's ``optim.SGD`` produces on
L(w) = (w₀² + 25·w₁²)/2, started at the same point with the same learning rate.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

import minigrad
from minigrad import optim
from tools.figures import save

CURVATURE = np.array([1.0, 25.0])        # the valley is 25 times steeper across than along


def path(steps=30, lr=0.035, **kwargs):
    """The points SGD visits on L(w) = Σ cᵢ·wᵢ²/2 from w = (-9, 1.5)."""
    w = minigrad.tensor(np.array([-9.0, 1.5]), requires_grad=True)
    c = minigrad.tensor(CURVATURE)
    opt = optim.SGD([w], lr=lr, **kwargs)
    points = [w.numpy().copy()]
    for _ in range(steps):
        opt.zero_grad()
        ((w * w * c).sum() / 2).backward()
        opt.step()
        points.append(w.numpy().copy())
    return np.array(points)


def momentum_figure():
    a, b = np.meshgrid(np.linspace(-10, 2, 200), np.linspace(-2.2, 2.2, 200))
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.contour(a, b, (CURVATURE[0] * a ** 2 + CURVATURE[1] * b ** 2) / 2, levels=12,
               colors="0.8", linewidths=0.8)
    for points, label, color in ((path(), "SGD", "#4a6fa5"),
                                 (path(momentum=0.8), "SGD, momentum 0.8", "#a0301f")):
        ax.plot(points[:, 0], points[:, 1], "o-", ms=3, lw=1.2, color=color,
                label=f"{label}: distance to the minimum after 30 steps "
                      f"{np.linalg.norm(points[-1]):.2g}")
    ax.plot(0, 0, "k*", ms=10)
    ax.set_xlabel("w₀ (gentle direction)")
    ax.set_ylabel("w₁ (steep)")
    ax.legend(fontsize=8.5, loc="lower right")
    ax.set_title("L(w) = (w₀² + 25·w₁²)/2, learning rate 0.035, 30 steps from (−9, 1.5)",
                 fontsize=10)
    return save(fig, "03_momentum.png")


def draw_all():
    return [momentum_figure()]
