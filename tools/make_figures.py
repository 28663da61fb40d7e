"""Draw the figures of the course text into chapters/figures/ (matplotlib).

Usage: python tools/make_figures.py        (from the repository root)

Every figure is computed by minigrad itself (or by plain NumPy where it shows
arithmetic), so the pictures say what the code does.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import minigrad  # noqa: E402
from minigrad import nn, optim  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "chapters" / "figures"


def graph_figure(path):
    """The graph of f = (a*b + c)^2: forward values and backward adjoints."""
    a = minigrad.tensor(2.0, requires_grad=True)
    b = minigrad.tensor(-3.0, requires_grad=True)
    c = minigrad.tensor(10.0, requires_grad=True)
    u = a * b
    v = u + c
    f = v ** 2
    f.backward()
    nodes = {"a": (0, 2, a.item(), a.grad.item()), "b": (0, 1, b.item(), b.grad.item()),
             "c": (1, 0, c.item(), c.grad.item()), "u = a·b": (1, 1.5, u.item(), 8.0),
             "v = u + c": (2, 1, v.item(), 8.0), "f = v²": (3, 1, f.item(), 1.0)}
    edges = [("a", "u = a·b"), ("b", "u = a·b"), ("u = a·b", "v = u + c"),
             ("c", "v = u + c"), ("v = u + c", "f = v²")]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for s, t in edges:
        (x0, y0), (x1, y1) = nodes[s][:2], nodes[t][:2]
        ax.annotate("", xy=(x1 - 0.25, y1), xytext=(x0 + 0.25, y0),
                    arrowprops=dict(arrowstyle="->", color="0.4"))
    for name, (x, y, value, grad) in nodes.items():
        ax.text(x, y, name, ha="center", va="center", fontsize=11,
                bbox=dict(boxstyle="round", fc="#e8f0fe", ec="#4a6fa5"))
        ax.text(x, y + 0.3, f"value {value:g}", ha="center", color="#1f5f1f", fontsize=9)
        ax.text(x, y - 0.32, f"∂f/∂· = {grad:g}", ha="center", color="#a0301f", fontsize=9)
    ax.set_xlim(-0.6, 3.6)
    ax.set_ylim(-0.6, 2.6)
    ax.axis("off")
    ax.set_title("f = (a·b + c)² at a=2, b=−3, c=10: values forward (green), "
                 "gradients backward (red)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def finite_difference_figure(path):
    """Central-difference error for d/dx exp(x) at x = 1 against eps."""
    eps = np.logspace(-12, -1, 45)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for dtype, label in ((np.float64, "float64"), (np.float32, "float32")):
        x = dtype(1.0)
        errors = [abs(float((np.exp(x + dtype(e)) - np.exp(x - dtype(e))) / dtype(2 * e))
                      - math.e) for e in eps]
        ax.loglog(eps, np.maximum(errors, 1e-17), label=label)
    ax.set_xlabel("ε")
    ax.set_ylabel("|central difference − e|")
    ax.set_title("Truncation error falls as ε², rounding error grows as u/ε")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bias_correction_figure(path):
    """|step| of Adam over the first updates for a constant gradient, with
    and without bias correction."""
    beta1, beta2, lr, g = 0.9, 0.999, 0.1, 1.0
    t = np.arange(1, 201)
    m = (1 - beta1 ** t) * g
    v = (1 - beta2 ** t) * g * g
    corrected = lr * (m / (1 - beta1 ** t)) / np.sqrt(v / (1 - beta2 ** t))
    raw = lr * m / np.sqrt(v)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(t, raw, label="without bias correction")
    ax.plot(t, corrected, label="with bias correction (Adam)")
    ax.set_xlabel("update t")
    ax.set_ylabel("step size (lr = 0.1, constant gradient)")
    ax.set_title("Without correction the early steps are 3 to 6.6 times too large")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def train_digits(make_optimizer, steps=150, batch=64):
    """Training losses of the chapter-2 MLP on the digits (float64, seed 0)."""
    from minigrad.data import load_digits
    import minigrad.nn.functional as F
    X, y = load_digits()
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = make_optimizer(model.parameters())
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        idx = rng.choice(len(X), batch, replace=False)
        loss = F.cross_entropy(model(minigrad.tensor(X[idx])), minigrad.tensor(y[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def adam_vs_sgd_figure(path):
    runs = {"SGD lr=0.01": lambda p: optim.SGD(p, lr=0.01),
            "SGD + momentum 0.9, lr=0.01": lambda p: optim.SGD(p, lr=0.01, momentum=0.9),
            "Adam lr=0.01": lambda p: optim.Adam(p, lr=0.01)}
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, make in runs.items():
        ax.plot(train_digits(make), label=label)
    ax.set_xlabel("update")
    ax.set_ylabel("training loss (batch of 64)")
    ax.set_title("Digits MLP 64-32-10: the same learning rate")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def schedules_figure(path):
    from minigrad.optim import lr_scheduler
    makers = {"StepLR(step_size=10, gamma=0.5)": lambda o: lr_scheduler.StepLR(o, 10, 0.5),
              "CosineAnnealingLR(T_max=40)": lambda o: lr_scheduler.CosineAnnealingLR(o, 40),
              "LinearLR(0.1 → 1 over 10): warm-up":
                  lambda o: lr_scheduler.LinearLR(o, 0.1, 1.0, 10)}
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, make in makers.items():
        w = minigrad.tensor([0.0], requires_grad=True)
        opt = optim.SGD([w], lr=0.1)
        sched = make(opt)
        rates = []
        for _ in range(41):
            rates.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        ax.plot(rates, label=label)
    ax.set_xlabel("optimizer update")
    ax.set_ylabel("learning rate")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cross_entropy_figure(path):
    """Loss and gradient of cross-entropy in the correct class's logit z
    (9 other logits at 0), computed by minigrad."""
    import minigrad.nn.functional as F
    zs = np.linspace(-6, 10, 161)
    logits = np.zeros((len(zs), 10))
    logits[:, 3] = zs
    z = minigrad.tensor(logits, requires_grad=True)
    F.cross_entropy(z, minigrad.tensor(np.full(len(zs), 3)), reduction="sum").backward()
    losses = F.cross_entropy(minigrad.tensor(logits), minigrad.tensor(np.full(len(zs), 3)),
                             reduction="none").numpy()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(zs, losses, label="loss −log p_y")
    ax.plot(zs, z.grad.numpy()[:, 3], label="∂loss/∂z_y = p_y − 1")
    ax.plot(zs, z.grad.numpy()[:, 0], label="∂loss/∂z_j = p_j (another class)")
    ax.axhline(0, color="0.7", lw=0.8)
    ax.set_xlabel("logit z_y of the correct class (the 9 others are 0)")
    ax.set_title("Cross-entropy: the gradient fades as the answer becomes sure")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def digits_figure(path):
    """Twelve of the bundled digits with their labels."""
    from minigrad.data import load_digits
    X, y = load_digits()
    fig, axes = plt.subplots(2, 6, figsize=(6, 2.4))
    for ax, image, label in zip(axes.ravel(), X[:12], y[:12]):
        ax.imshow(image.reshape(8, 8), cmap="gray_r")
        ax.set_title(str(label), fontsize=9)
        ax.axis("off")
    fig.suptitle("load_digits(): 1,797 images of 8×8 pixels, 10 classes", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    minigrad.set_default_dtype(np.float64)
    graph_figure(OUT / "01_graph.png")
    finite_difference_figure(OUT / "01_finite_differences.png")
    cross_entropy_figure(OUT / "02_cross_entropy.png")
    digits_figure(OUT / "02_digits.png")
    bias_correction_figure(OUT / "03_bias_correction.png")
    adam_vs_sgd_figure(OUT / "03_adam_vs_sgd.png")
    schedules_figure(OUT / "03_schedules.png")
    print(f"figures written to {OUT}")


if __name__ == "__main__":
    main()
