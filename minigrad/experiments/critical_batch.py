"""The critical batch size, measured (``python -m minigrad critical-batch``).

How many optimizer steps does a larger batch save?  Train the digits MLP
(:func:`minigrad.experiments.training.load_task`) with plain SGD to a target
training loss at batch sizes 1, 2, 4, ..., 128, each made of micro-batches
of at most 8 examples by a :class:`~minigrad.optim.GradientAccumulator`, and
each at its own best learning rate from a small sweep (a grid of factors of
2).  Record the steps S and the examples E = S·B each batch size needed.

McCandlish, Kaplan, Amodei et al. (*An Empirical Model of Large-Batch
Training*, 2018) predict the trade-off

    (S / S_min − 1)(E / E_min − 1) = 1,   i.e.  S = S_min + E_min / B,

where S_min is the fewest steps (an infinitely large batch) and E_min the
fewest examples (batch 1 with a tuned rate), and the critical batch size
B_crit = E_min / S_min is where both are twice their minimum.  Below B_crit a
batch twice as large takes almost half the steps for almost the same
examples; above it, the steps hardly fall and the examples double.
:func:`fit_tradeoff` fits S_min and E_min (least squares on the relative
error, a linear problem in 1/B).

The same run measures the gradient noise scale B_simple = tr(Σ)/|G|²
(:mod:`minigrad.optim.noise_scale`) while training at batch 32 (4 micro-batches
of 8): the paper's prediction is B_crit ≈ B_noise, of which B_simple is the
cheap estimate.  :func:`compare_at_equal_examples` is the chapter's other
experiment: batch 1 against 16 accumulated micro-batches of 1 after the same
examples, at the same and at scaled learning rates.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np

import minigrad
import minigrad.optim as optim

from .training import load_task

BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
QUICK_BATCH_SIZES = (1, 4, 16, 64)
MICRO_BATCH = 8             # the largest micro-batch: batch B = k micro-batches of min(B, 8)
TARGET_LOSS = 0.3           # mean cross-entropy on the 1500 training digits (start: 2.36)
FIRST_LR = 0.05             # where batch 1's sweep starts
NOISE_BATCH = 32            # the batch at which the noise scale is tracked (4 x 8)


class _Trainer:
    """One SGD run on the digits task: batches of B from a stream of shuffled epochs."""

    def __init__(self, task, batch_size, lr, seed, *, track_noise_scale=False):
        minigrad.manual_seed(seed)
        self.task, self.batch_size = task, batch_size
        self.model = task.make_model()
        self.micro = min(batch_size, MICRO_BATCH)
        k = batch_size // self.micro
        self.acc = optim.GradientAccumulator(optim.SGD(self.model.parameters(), lr=lr), k,
                                             track_noise_scale=track_noise_scale)
        self.rng = np.random.default_rng(seed)
        self.order, self.pos, self.steps = self.rng.permutation(task.train_size), 0, 0

    def step(self) -> None:
        """One update: k micro-batches, one SGD step."""
        for _ in range(self.acc.accumulation_steps):
            if self.pos + self.micro > len(self.order):
                self.order, self.pos = self.rng.permutation(self.task.train_size), 0
            idx = self.order[self.pos:self.pos + self.micro]
            self.pos += self.micro
            loss, n = self.task.loss_fn(self.model, self.task.make_batch(idx))
            self.acc.backward(loss, num_items=n)
            self.acc.step()
        self.steps += 1


def _train_loss(task):
    """``loss(model)``: the mean cross-entropy over every training example."""
    x, y = task.make_batch(np.arange(task.train_size))

    def loss(model) -> float:
        with minigrad.no_grad():
            value, _ = task.loss_fn(model, (x, y))
        return float(value.item())
    return loss


def steps_to_target(task, batch_size, lr, *, target=TARGET_LOSS, max_steps=20_000, seed=0,
                    evaluate=None):
    """Updates until the training loss is <= ``target`` (checked about every 3 % of
    the steps so far), or None when ``max_steps`` pass first or the run diverges."""
    evaluate = evaluate or _train_loss(task)
    run = _Trainer(task, batch_size, lr, seed)
    check = 1
    while run.steps < max_steps:
        run.step()
        if run.steps >= check:
            loss = evaluate(run.model)
            if not math.isfinite(loss) or loss > 10:
                return None
            if loss <= target:
                return run.steps
            check = run.steps + max(1, run.steps // 32)
    return None


def sweep_lr(task, batch_size, start_lr, *, seeds=(0,), target=TARGET_LOSS, max_steps=20_000,
             evaluate=None, factor=2.0):
    """The best learning rate of ``batch_size`` on a grid of powers of ``factor``
    around ``start_lr``: climb while a larger rate helps, then descend while a
    smaller one helps (a run slower than 1.5 times the best so far is stopped).
    Returns ``(best lr, its mean steps, {lr: mean steps or None})``."""
    tried = {}

    def mean_steps(lr):
        if lr not in tried:
            cap = max_steps if not _finite(tried) else int(1.5 * min(_finite(tried).values())) + 1
            steps = [steps_to_target(task, batch_size, lr, target=target, max_steps=cap,
                                     seed=s, evaluate=evaluate) for s in seeds]
            tried[lr] = None if None in steps else float(np.mean(steps))
        return tried[lr]

    def rate(i):                    # the grid: start_lr * factor**i, 3 significant digits
        return float(f"{start_lr * factor ** i:.3g}")

    i = 0
    mean_steps(rate(i))
    for direction in (1, -1):
        while True:
            here, there = mean_steps(rate(i)), mean_steps(rate(i + direction))
            if there is None or (here is not None and there >= here):
                break
            i += direction
    best = min(_finite(tried), key=_finite(tried).get)
    return best, tried[best], dict(sorted(tried.items()))


def _finite(tried):
    return {k: v for k, v in tried.items() if v is not None}


def fit_tradeoff(batch_sizes, steps):
    """Fit S = S_min + E_min / B to the measured steps (least squares on the
    relative error S_fit/S − 1, linear in S_min and E_min).

    Returns ``(S_min, E_min, B_crit = E_min / S_min)``.
    """
    b = np.asarray(batch_sizes, dtype=np.float64)
    s = np.asarray(steps, dtype=np.float64)
    design = np.stack([np.ones_like(b), 1.0 / b], axis=1) / s[:, None]
    (s_min, e_min), *_ = np.linalg.lstsq(design, np.ones_like(s), rcond=None)
    return float(s_min), float(e_min), float(e_min / s_min)


def noise_scale_run(task, lr, steps, *, batch_size=NOISE_BATCH, seed=0, evaluate=None,
                    beta=0.9, target=TARGET_LOSS):
    """Train ``steps`` updates at ``batch_size`` with ``track_noise_scale=True``.

    Returns ``(record, at_target, frozen)``: one ``{step, loss, noise_scale,
    grad_sq, trace}`` per update (the accumulator's smoothed values), the
    smoothed noise scale at the first update that reached ``target``, and the
    noise scale at that update's parameters held fixed
    (:func:`frozen_noise_scale`); None when the target was not reached.

    The two differ: along a trajectory at a large learning rate the
    parameters bounce across a valley, and the gradient at the points
    visited is larger than at a point where the loss happens to be low."""
    evaluate = evaluate or _train_loss(task)
    run = _Trainer(task, batch_size, lr, seed, track_noise_scale=True)
    run.acc.noise.beta = beta
    record, at_target, frozen = [], None, None
    for _ in range(steps):
        run.step()
        record.append({"step": run.steps, "loss": evaluate(run.model),
                       "noise_scale": run.acc.noise_scale, "grad_sq": run.acc.noise_grad_sq,
                       "trace": run.acc.noise_trace})
        if at_target is None and record[-1]["loss"] <= target:
            at_target = record[-1]["noise_scale"]
            frozen = frozen_noise_scale(task, run.model.state_dict(), seed=seed)
    return record, at_target, frozen


def frozen_noise_scale(task, state, *, batch_size=NOISE_BATCH, windows=300, seed=0):
    """B_simple at fixed parameters ``state``: the accumulator's per-window estimates
    over ``windows`` windows at learning rate 0, their means' ratio
    (mean tr Σ / mean |G|²: each mean is unbiased, so the ratio is consistent)."""
    run = _Trainer(task, batch_size, 0.0, seed + 1, track_noise_scale=True)
    run.model.load_state_dict(state)
    for _ in range(windows):
        run.step()
    history = run.acc.noise.history
    return float(np.mean([h["trace"] for h in history]) /
                 np.mean([h["grad_sq"] for h in history]))


@dataclasses.dataclass
class CriticalBatchResult:
    """What :func:`critical_batch` measured (``to_dict`` for JSON)."""

    batch_sizes: list
    best_lr: list
    steps: list
    examples: list
    sweeps: dict
    s_min: float
    e_min: float
    b_crit: float
    noise_record: list
    noise_scale_at_target: float | None
    noise_scale_frozen: float | None
    target_loss: float
    seeds: list
    seconds: float

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def table(self) -> str:
        """The measured steps and examples, and the fit's, as a Markdown table."""
        rows = ["| batch B | micro-batches k | best lr | steps S | examples E | S fit |",
                "|---:|---:|---:|---:|---:|---:|"]
        for b, lr, s, e in zip(self.batch_sizes, self.best_lr, self.steps, self.examples):
            rows.append(f"| {b} | {b // min(b, MICRO_BATCH)} | {lr:g} | {s:.0f} | {e:.0f} | "
                        f"{self.s_min + self.e_min / b:.0f} |")
        return "\n".join(rows)


def critical_batch(*, quick=False, seeds=None, target=TARGET_LOSS, on_progress=None):
    """Sweep, fit, and measure the noise scale; returns a :class:`CriticalBatchResult`.

    ``quick``: batch sizes 1, 4, 16, 64, one seed, learning rates a factor 2
    apart (about 10 s of CPU); otherwise 1 ... 128, the steps averaged over four
    seeds, rates a factor √2 apart.  ``on_progress(text)`` gets one line per
    batch size.
    """
    start = time.perf_counter()
    task = load_task("digits")
    evaluate = _train_loss(task)
    sizes = QUICK_BATCH_SIZES if quick else BATCH_SIZES
    seeds = tuple(seeds) if seeds is not None else ((0,) if quick else (0, 1, 2, 3))
    best_lr, steps, sweeps, lr = [], [], {}, FIRST_LR
    for b in sizes:
        lr, s, tried = sweep_lr(task, b, lr, seeds=seeds, target=target, evaluate=evaluate,
                                factor=2.0 if quick else math.sqrt(2.0))
        best_lr.append(lr)
        steps.append(s)
        sweeps[str(b)] = {f"{k:g}": v for k, v in tried.items()}
        if on_progress is not None:
            on_progress(f"batch {b:4d}: best lr {lr:g}, {s:.0f} steps, {s * b:.0f} examples "
                        f"(tried {', '.join(f'{k:g}' for k in tried)})")
    s_min, e_min, b_crit = fit_tradeoff(sizes, steps)
    noise_lr = best_lr[list(sizes).index(NOISE_BATCH)] if NOISE_BATCH in sizes else \
        float(f"{np.exp(np.interp(np.log2(NOISE_BATCH), np.log2(sizes), np.log(best_lr))):.3g}")
    noise_steps = int(math.ceil(s_min + e_min / NOISE_BATCH))
    record, at_target, frozen = noise_scale_run(task, noise_lr, 3 * noise_steps,
                                                evaluate=evaluate, target=target)
    return CriticalBatchResult(list(sizes), best_lr, steps, [s * b for s, b in zip(steps, sizes)],
                               sweeps, s_min, e_min, b_crit, record, at_target, frozen, target,
                               list(seeds), time.perf_counter() - start)


# ------------------------------------------------- the same examples, two batch sizes
def compare_at_equal_examples(*, accumulation_steps=16, lr=None, windows=60, seed=0,
                              rules=("equal", "linear", "square root", "tuned")):
    """Batch 1 against ``accumulation_steps`` accumulated micro-batches of 1
    after the same examples (``windows`` × k), SGD on the digits task.

    The accumulated run uses ``lr`` (by default the best of a small sweep at its
    batch); batch 1 runs at the same lr ("equal": k times as many steps of the
    same size), at lr/k ("linear" scaling), at lr/√k ("square root"), and at
    its own best lr ("tuned", swept on the same grid).  Returns a list of
    ``{run, batch, lr, steps, examples, loss}`` (training loss at the end).
    """
    task = load_task("digits")
    evaluate = _train_loss(task)
    k = accumulation_steps
    examples = windows * k

    def final_loss(batch, rate):
        run = _Trainer(task, batch, rate, seed)
        for _ in range(examples // batch):
            run.step()
        value = evaluate(run.model)
        return value if math.isfinite(value) else float("inf")

    grid = [0.05 * 2.0 ** i for i in range(-3, 7)]
    if lr is None:
        lr = min(grid, key=lambda r: final_loss(k, r))
    rows = [{"run": f"{k} accumulated x 1", "batch": k, "lr": lr, "steps": windows,
             "examples": examples, "loss": final_loss(k, lr)}]
    scaled = {"equal": lr, "linear": lr / k, "square root": lr / math.sqrt(k)}
    for rule in rules:
        rate = min(grid, key=lambda r: final_loss(1, r)) if rule == "tuned" else scaled[rule]
        rows.append({"run": f"batch 1, {rule} lr", "batch": 1, "lr": rate, "steps": examples,
                     "examples": examples, "loss": final_loss(1, rate)})
    return rows


def loss_curve(batch_size, lr, examples, *, points=40, seed=0):
    """Training loss of SGD at ``batch_size`` and ``lr`` on the digits task,
    ``[(examples seen, loss)]`` at about ``points`` evenly spaced moments."""
    task = load_task("digits")
    evaluate = _train_loss(task)
    run = _Trainer(task, batch_size, lr, seed)
    steps = examples // batch_size
    every = max(1, steps // points)
    curve = [(0, evaluate(run.model))]
    while run.steps < steps:
        run.step()
        if run.steps % every == 0 or run.steps == steps:
            curve.append((run.steps * batch_size, evaluate(run.model)))
    return curve


def update_spread(*, batch_sizes=(1, 16), draws=400, seed=0):
    """The noise of one update's direction at the initial parameters of the digits
    MLP: for each batch size b, ``E|g_b − G|² / |G|²`` over ``draws`` random
    batches (G: the full training gradient), which theory puts at B_simple / b.
    Returns ``{b: ratio}``."""
    task = load_task("digits")
    minigrad.manual_seed(seed)
    model = task.make_model()
    params = list(model.parameters())

    def gradient(idx):
        for p in params:
            p.grad = None
        loss, _ = task.loss_fn(model, task.make_batch(idx))
        loss.backward()
        return np.concatenate([p.grad.numpy().ravel() for p in params]).astype(np.float64)

    full = gradient(np.arange(task.train_size))
    rng = np.random.default_rng(seed)
    out = {}
    for b in batch_sizes:
        dev = [gradient(rng.integers(0, task.train_size, b)) - full for _ in range(draws)]
        out[b] = float(np.mean([d @ d for d in dev]) / (full @ full))
    return out


# ------------------------------------------------------------------ output files
def draw_tradeoff(result: CriticalBatchResult, ax) -> None:
    """Steps against examples on ``ax``, measured and fitted, B_crit and the noise scale marked."""
    b = np.geomspace(0.5, 512, 200)
    ax.plot(result.e_min * (1 + b / result.b_crit), result.s_min * (1 + result.b_crit / b),
            color="0.6", label="fit: (S/S_min − 1)(E/E_min − 1) = 1")
    ax.plot(result.examples, result.steps, "o", color="C0", label="measured, each at its best lr")
    for bs, e, s in zip(result.batch_sizes, result.examples, result.steps):
        ax.annotate(f"B={bs}", (e, s), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.plot([2 * result.e_min], [2 * result.s_min], "*", color="C3", markersize=12,
            label=f"B_crit = E_min/S_min ≈ {result.b_crit:.0f}")
    if result.noise_scale_at_target:
        bn = result.noise_scale_at_target
        ax.plot([result.e_min * (1 + bn / result.b_crit)],
                [result.s_min * (1 + result.b_crit / bn)], "D", color="C2",
                label=f"B = measured noise scale ≈ {bn:.0f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("examples E to the target loss")
    ax.set_ylabel("steps S to the target loss")
    ax.set_title(f"digits MLP, SGD, to training loss {result.target_loss}")
    ax.legend(fontsize=8)


def draw_noise_scale(result: CriticalBatchResult, ax) -> None:
    """The smoothed noise scale B_simple and the training loss, update by update, on ``ax``."""
    rec = [r for r in result.noise_record if r["noise_scale"] is not None]
    ax.plot([r["step"] for r in rec], [r["noise_scale"] for r in rec], color="C2")
    ax.set_xlabel(f"update (batch {NOISE_BATCH} = 4 × 8)")
    ax.set_ylabel("B_simple = tr(Σ)/|G|² (examples)", color="C2")
    twin = ax.twinx()
    twin.plot([r["step"] for r in rec], [r["loss"] for r in rec], color="C0")
    twin.set_ylabel("training loss", color="C0")
    ax.set_title("the noise scale grows as the loss falls")


def _save_drawing(draw, result, path):
    import matplotlib  # noqa: PLC0415 (optional dependency)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    draw(result, ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_tradeoff(result: CriticalBatchResult, path) -> Path:
    """:func:`draw_tradeoff` into the file ``path``."""
    return _save_drawing(draw_tradeoff, result, path)


def plot_noise_scale(result: CriticalBatchResult, path) -> Path:
    """:func:`draw_noise_scale` into the file ``path``."""
    return _save_drawing(draw_noise_scale, result, path)


def write_outputs(result: CriticalBatchResult, out_dir) -> list[Path]:
    """results.json, table.md, tradeoff.png and noise_scale.png in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    (out / "table.md").write_text(result.table() + "\n")
    paths = [out / "results.json", out / "table.md"]
    try:
        paths += [plot_tradeoff(result, out / "tradeoff.png"),
                  plot_noise_scale(result, out / "noise_scale.png")]
    except ImportError:             # no matplotlib: the numbers only
        pass
    return paths
