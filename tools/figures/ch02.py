"""Chapter 02's figures: softmax and the cross-entropy gradient, with and without
label smoothing, and a dense layer's weight gradient as a sum over examples.

Every number drawn is computed by minigrad (``F.softmax``, ``F.cross_entropy``
and its backward, ``nn.Linear``'s backward).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

import minigrad
import minigrad.nn.functional as F
from minigrad import nn
from tools.figures import save


def cross_entropy_gradient(logits, target, label_smoothing=0.0):
    """``(softmax, gradient of the loss)`` for one example, in float64."""
    z = minigrad.tensor(np.asarray([logits], dtype=np.float64), requires_grad=True)
    loss = F.cross_entropy(z, minigrad.tensor([target]), label_smoothing=label_smoothing)
    loss.backward()
    return F.softmax(z.detach(), dim=1).numpy()[0], z.grad.numpy()[0]


def softmax_gradient_figure():
    logits, target, eps = [2.0, 1.0, 0.0], 1, 0.1
    p, g = cross_entropy_gradient(logits, target)
    _, g_smooth = cross_entropy_gradient(logits, target, eps)
    classes = np.arange(len(logits))
    onehot = (classes == target).astype(float)
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(10, 3.4))
    width = 0.38
    a0.bar(classes - width / 2, p, width, label="softmax p", color="#4a6fa5")
    a0.bar(classes + width / 2, onehot, width, label=f"one-hot target (class {target})",
           color="#bbbbbb")
    for c in classes:
        a0.text(c - width / 2, p[c] + 0.02, f"{p[c]:.3f}", ha="center", fontsize=9)
    a0.set_xticks(classes, [f"class {c}\nz = {z:g}" for c, z in zip(classes, logits)])
    a0.set_ylim(0, 1.15)
    a0.legend(fontsize=8.5, loc="upper right")
    a0.set_title("logits z = (2, 1, 0): probabilities and target", fontsize=10)

    a1.axhline(0, color="0.3", lw=0.8)
    a1.bar(classes - width / 2, g, width, label="p − one-hot", color="#a0301f")
    a1.bar(classes + width / 2, g_smooth, width,
           label=f"p − (1−ε)·one-hot − ε/C, ε = {eps:g}", color="#e0907f")
    for c in classes:
        for dx, v in ((-width / 2, g[c]), (width / 2, g_smooth[c])):
            a1.text(c + dx, v + (0.03 if v >= 0 else -0.08), f"{v:.3f}", ha="center",
                    fontsize=8.5)
    a1.set_xticks(classes, [f"class {c}" for c in classes])
    a1.set_ylim(-0.9, 0.8)
    a1.legend(fontsize=8.5, loc="upper right")
    a1.set_title("gradient of the loss with respect to z", fontsize=10)
    return save(fig, "02_softmax_gradient.png")


def dense_layer_figure():
    """dW of a dense layer is the sum over examples of one outer product each."""
    minigrad.manual_seed(0)
    layer = nn.Linear(3, 2).to(np.float64)
    x = minigrad.tensor(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]))
    upstream = np.array([[1.0, -1.0], [0.5, 2.0]])
    layer(x).backward(minigrad.tensor(upstream))
    parts = [np.outer(upstream[n], x.numpy()[n]) for n in range(2)]
    fig, axes = plt.subplots(1, 3, figsize=(10, 2.6))
    titles = ["example 1: its G row ⊗ its x row", "example 2: its G row ⊗ its x row", "layer.weight.grad: the sum"]
    for ax, m, title in zip(axes, parts + [layer.weight.grad.numpy()], titles):
        ax.imshow(m, cmap="coolwarm", vmin=-4, vmax=4)
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, f"{v + 0.0:g}", ha="center", va="center", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=10)
    return save(fig, "02_dense_layer_sum.png")


def draw_all():
    return [softmax_gradient_figure(), dense_layer_figure()]
