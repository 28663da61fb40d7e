"""Training with gradient accumulation on the bundled data (``python -m minigrad train``).

One update = one window of k micro-batches of B items each (an effective
batch of B·k), accumulated by :class:`minigrad.optim.GradientAccumulator`
with ``num_items`` (examples, or real tokens), so that the update is the
full-batch update. :func:`train` can also train the same model, from the same
initial parameters, on the same data in the same order, with plain full
batches of B·k: the two loss curves coincide to rounding.

Tasks (data sets and models):

- ``digits``: the 1797 UCI 8x8 digits; 297 held out (a fixed split); MLP
  ``64 -> 32 -> 10`` (Tanh); metric: held-out accuracy.
- ``mnist``: the 10000 MNIST test images; 2000 held out (a fixed split); MLP
  ``784 -> 64 -> 10`` (ReLU); metric: held-out accuracy.
- ``shakespeare``: 2048 training sequences of 8 to 48 characters drawn from
  the first 90% of tinyshakespeare, 256 held-out sequences from the last 10%;
  a bigram language model; metric: held-out mean loss per token (nats).

The held-out split never depends on ``seed``; the seed fixes the initial
parameters and the order of the examples.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.data import load_digits, load_mnist_test, make_lm_batch
from minigrad.data.text import sample_variable_length_sequences

from .char_lm import IGNORE_INDEX, make_bigram_lm, shakespeare_ids, token_loss
from .common import build_model, cross_entropy_loss, to_tensor
from .mlp_digits import make_mlp

DATASETS = ("digits", "mnist", "shakespeare")
OPTIMIZERS = ("sgd", "adamw")
#: Learning rates used when none is given.
DEFAULT_LR = {"sgd": 0.1, "adamw": 1e-2}
#: Training items per data set (the rest of each data set is held out).
TRAIN_SIZES = {"digits": 1500, "mnist": 8000, "shakespeare": 2048}
_SPLIT_SEED = 1234   # the held-out split is the same for every --seed


@dataclasses.dataclass
class Task:
    """A data set, a model and how to score it.

    Attributes:
        name: the data set's name.
        train_size: number of training items (examples or sequences).
        make_model: builds a fresh model (call after ``manual_seed``).
        make_batch: ``make_batch(indices) -> batch`` of training items.
        loss_fn: ``loss_fn(model, batch) -> (mean loss Tensor, num_items)``.
        evaluate: ``evaluate(model) -> float`` on the held-out items.
        metric_name: ``"accuracy"`` or ``"per-token loss"``.
    """

    name: str
    train_size: int
    make_model: Callable
    make_batch: Callable
    loss_fn: Callable
    evaluate: Callable
    metric_name: str


def _held_out_split(n: int, n_test: int):
    perm = np.random.default_rng(_SPLIT_SEED).permutation(n)
    return perm[n_test:], perm[:n_test]


def _classification_task(name, X, y, n_test, make_model, device, dtype) -> Task:
    train_idx, test_idx = _held_out_split(len(X), n_test)
    X_train, y_train, X_test, y_test = X[train_idx], y[train_idx], X[test_idx], y[test_idx]

    def evaluate(model) -> float:
        model.eval()
        with minigrad.no_grad():
            logits = model(to_tensor(X_test, device=device, dtype=dtype))
        model.train()
        return float((logits.numpy().argmax(axis=1) == y_test).mean())

    return Task(name, len(X_train), make_model, lambda idx: (X_train[idx], y_train[idx]),
                cross_entropy_loss(device, dtype), evaluate, "accuracy")


def _shakespeare_task(device, train_sequences=TRAIN_SIZES["shakespeare"],
                      test_sequences=256) -> Task:
    tokenizer, ids = shakespeare_ids()
    cut = int(0.9 * len(ids))
    rng = np.random.default_rng(_SPLIT_SEED)
    train = sample_variable_length_sequences(ids[:cut], train_sequences, 8, 48, rng)
    test_inputs, test_targets = make_lm_batch(
        sample_variable_length_sequences(ids[cut:], test_sequences, 8, 48, rng), IGNORE_INDEX)
    loss_fn = token_loss(device)

    def evaluate(model) -> float:
        with minigrad.no_grad():
            loss, _ = loss_fn(model, (test_inputs, test_targets))
        return float(loss.item())

    return Task("shakespeare", len(train), lambda: make_bigram_lm(tokenizer.vocab_size),
                lambda idx: make_lm_batch([train[i] for i in idx], IGNORE_INDEX),
                loss_fn, evaluate, "per-token loss")


def load_task(dataset: str, *, device: str = "cpu", dtype=np.float32) -> Task:
    """The :class:`Task` of ``dataset`` (one of :data:`DATASETS`).

    ``dtype`` is the floating dtype the images are fed in (digits, mnist);
    shakespeare's inputs are integer ids, whatever ``dtype``.

    Raises:
        ValueError: for an unknown data set name.
    """
    if dataset == "digits":
        X, y = load_digits()
        return _classification_task("digits", X, y, len(X) - TRAIN_SIZES["digits"], make_mlp,
                                    device, dtype)
    if dataset == "mnist":
        X, y = load_mnist_test()
        X = X.reshape(len(X), -1)
        make = lambda: nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))  # noqa: E731
        return _classification_task("mnist", X, y, len(X) - TRAIN_SIZES["mnist"], make,
                                    device, dtype)
    if dataset == "shakespeare":
        return _shakespeare_task(device)
    raise ValueError(f"unknown dataset {dataset!r}; expected one of {', '.join(DATASETS)}")


def make_optimizer(name: str, parameters, lr: float):
    """``SGD(params, lr)`` or ``AdamW(params, lr)`` (weight decay 0.01)."""
    if name == "sgd":
        return optim.SGD(parameters, lr=lr)
    if name == "adamw":
        return optim.AdamW(parameters, lr=lr)
    raise ValueError(f"unknown optimizer {name!r}; expected one of {', '.join(OPTIMIZERS)}")


def windows_of_epoch(train_size: int, batch_size: int,
                     rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch: a fresh permutation of the items, cut into batches of ``batch_size``.

    The last batch holds the remainder (it may be smaller).
    """
    order = rng.permutation(train_size)
    return [order[start:start + batch_size] for start in range(0, train_size, batch_size)]


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` measured.

    Attributes:
        losses: the window loss of each window (the item-weighted mean loss of
            its micro-batches, i.e. the loss of its full batch), shape (windows,);
            a skipped window's loss is non-finite.
        skipped_windows: windows the accumulator skipped for a non-finite loss
            or gradient (no update); ``updates`` = windows - skipped_windows.
        metric: the held-out accuracy, or per-token loss for shakespeare.
        full_batch_losses, full_batch_metric: the same for the full-batch run
            (batches of B·k), or None when it was not asked for.
        micro_batch_losses, micro_batch_metric: the same for plain training
            with batches of B and no accumulation (k times as many updates of
            the same learning rate: a comparison of learning rates as much as
            of batch sizes), or None when it was not asked for.
        micro_batch_scaled_losses, micro_batch_scaled_metric, micro_batch_scaled_lr:
            the same at the learning rate scaled down for batch B (lr/k for
            SGD, the linear rule; lr/√k for AdamW, the square-root rule).
        noise_scales: with ``track_noise_scale``, the accumulator's smoothed
            gradient noise scale after each window (None until it has one).
        settings: the arguments of :func:`train` (for plot titles and logs).
    """

    losses: np.ndarray
    metric: float
    metric_name: str
    settings: dict
    seconds: float
    full_batch_losses: np.ndarray | None = None
    full_batch_metric: float | None = None
    micro_batch_losses: np.ndarray | None = None
    micro_batch_metric: float | None = None
    micro_batch_scaled_losses: np.ndarray | None = None
    micro_batch_scaled_metric: float | None = None
    micro_batch_scaled_lr: float | None = None
    skipped_windows: int = 0
    noise_scales: list | None = None

    @property
    def updates(self) -> int:
        """Optimizer updates of the accumulated run (windows minus skipped ones)."""
        return len(self.losses) - self.skipped_windows

    @property
    def max_loss_gap(self) -> float | None:
        """``max |losses - full_batch_losses|``, or None without a full-batch run."""
        if self.full_batch_losses is None:
            return None
        if len(self.losses) == 0:
            return 0.0
        return float(np.max(np.abs(self.losses - self.full_batch_losses)))


def train_accumulated(task: Task, model, optimizer, *, micro_batch: int, accumulation_steps: int,
                      epochs: int, seed: int, on_update=None,
                      track_noise_scale: bool = False) -> list[float]:
    """The training loop with gradient accumulation; returns the window loss per update.

    ``on_update(update, epoch, window_loss, skipped)`` is called after every
    window: ``update`` counts the updates made so far, and ``skipped`` is True
    for a window the accumulator skipped (a non-finite loss or gradient), which
    made no update.  The returned list holds every window's loss, skipped
    ones included.  With ``track_noise_scale`` the accumulator measures the
    gradient noise scale, passed as ``on_update(..., noise_scale=value)``.
    """
    accumulator = optim.GradientAccumulator(optimizer, accumulation_steps,
                                            track_noise_scale=track_noise_scale)
    rng = np.random.default_rng(seed)
    losses = []
    model.train()
    for epoch in range(epochs):
        for window in windows_of_epoch(task.train_size, micro_batch * accumulation_steps, rng):
            updated = False
            for start in range(0, len(window), micro_batch):
                batch = task.make_batch(window[start:start + micro_batch])
                loss, num_items = task.loss_fn(model, batch)
                accumulator.backward(loss, num_items=num_items)
                updated = accumulator.step()
            if not updated:           # the epoch's last window is short
                updated = accumulator.flush()
            losses.append(accumulator.window_loss)
            if on_update is not None:
                extra = {"noise_scale": accumulator.noise_scale} if track_noise_scale else {}
                on_update(accumulator.updates, epoch, accumulator.window_loss, not updated,
                          **extra)
    return losses


def train_full_batch(task: Task, model, optimizer, *, batch_size: int, epochs: int,
                     seed: int, on_update=None) -> list[float]:
    """Plain training with batches of ``batch_size``, in the same order as
    :func:`train_accumulated` with the same seed; returns the loss per update."""
    rng = np.random.default_rng(seed)
    losses = []
    model.train()
    for epoch in range(epochs):
        for window in windows_of_epoch(task.train_size, batch_size, rng):
            optimizer.zero_grad()
            loss, _ = task.loss_fn(model, task.make_batch(window))
            loss.backward()
            optimizer.step()
            losses.append(float(loss.item()))
            if on_update is not None:
                on_update(len(losses), epoch, losses[-1], False)
    return losses


def train(dataset: str = "digits", *, micro_batch: int = 16, accumulation_steps: int = 8,
          epochs: int = 1, optimizer: str = "adamw", lr: float | None = None,
          device: str = "cpu", seed: int = 0, dtype=np.float32,
          compare_full_batch: bool = False, compare_micro_batch: bool = False,
          on_update=None, track_noise_scale: bool = False) -> TrainResult:
    """Train on ``dataset`` with micro-batches of B accumulated over k steps.

    Args:
        dataset: ``"digits"``, ``"mnist"`` or ``"shakespeare"``.
        micro_batch: B, items (examples or sequences) per micro-batch, >= 1.
        accumulation_steps: k >= 1; the effective batch is B·k.
        epochs: passes over the training items, >= 0.
        optimizer: ``"sgd"`` or ``"adamw"``; ``lr`` defaults to
            :data:`DEFAULT_LR` of the optimizer.
        device, dtype, seed: where, in what precision, and from which
            initial parameters and example order.
        compare_full_batch: also train a copy of the model (same initial
            parameters) with full batches of B·k.
        compare_micro_batch: also train copies with plain batches of B (one
            update per micro-batch, no accumulation), at the same learning
            rate and at the rate scaled for batch B (lr/k for SGD, lr/√k for
            AdamW).  At the same rate, batch B takes k times as many steps of
            the same size: its gap to the accumulated run is mostly the
            learning rate's, not gradient noise's (chapter 14).
        track_noise_scale: measure the gradient noise scale B_simple in the
            accumulated run (needs k >= 2); ``on_update`` then also gets
            ``noise_scale=`` and the result holds ``noise_scales``.
        on_update: ``on_update(run, update, epoch, loss, skipped)`` after every
            window, ``run`` being ``"accumulated"``, ``"full-batch"`` or
            ``"micro-batch"`` (for logs and progress bars); ``update`` counts
            the updates made so far and ``skipped`` marks a window skipped for
            a non-finite loss or gradient (see :func:`train_accumulated`).

    Returns:
        a :class:`TrainResult`.

    Raises:
        ValueError: for an unknown data set or optimizer, or sizes out of range.
    """
    for name, value, low in (("micro_batch", micro_batch, 1),
                             ("accumulation_steps", accumulation_steps, 1), ("epochs", epochs, 0)):
        if value < low:
            raise ValueError(f"train: {name} must be >= {low}, got {value}")
    if dataset not in DATASETS:
        raise ValueError(f"train: unknown dataset {dataset!r}; expected one of "
                         f"{', '.join(DATASETS)}")
    if micro_batch * accumulation_steps > TRAIN_SIZES[dataset]:
        raise ValueError(f"train: micro_batch x accumulation_steps = "
                         f"{micro_batch * accumulation_steps} exceeds the "
                         f"{TRAIN_SIZES[dataset]} training items of {dataset}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"train: unknown optimizer {optimizer!r}; expected one of "
                         f"{', '.join(OPTIMIZERS)}")
    lr = DEFAULT_LR[optimizer] if lr is None else lr
    if not lr > 0:
        raise ValueError(f"train: lr must be > 0, got {lr}")
    settings = dict(dataset=dataset, micro_batch=micro_batch, accumulation_steps=accumulation_steps,
                    epochs=epochs, optimizer=optimizer, lr=lr, device=device, seed=seed,
                    dtype=np.dtype(dtype).name)
    start = time.perf_counter()
    task = load_task(dataset, device=device, dtype=dtype)

    def report(run):
        if on_update is None:
            return None
        return lambda u, e, loss, skipped: on_update(run, u, e, loss, skipped)

    skipped = []

    noise_scales = []

    def count_skipped(u, e, loss, was_skipped, **extra):
        skipped.append(was_skipped)
        if "noise_scale" in extra:
            noise_scales.append(extra["noise_scale"])
        if on_update is not None:
            on_update("accumulated", u, e, loss, was_skipped, **extra)

    model = build_model(task.make_model, seed=seed, device=device, dtype=dtype)
    losses = train_accumulated(task, model, make_optimizer(optimizer, model.parameters(), lr),
                               micro_batch=micro_batch, accumulation_steps=accumulation_steps,
                               epochs=epochs, seed=seed, on_update=count_skipped,
                               track_noise_scale=track_noise_scale)
    result = TrainResult(np.array(losses), task.evaluate(model), task.metric_name, settings, 0.0,
                         skipped_windows=int(sum(skipped)),
                         noise_scales=noise_scales if track_noise_scale else None)
    if compare_full_batch:
        reference = build_model(task.make_model, seed=seed, device=device, dtype=dtype)
        full = train_full_batch(task, reference,
                                make_optimizer(optimizer, reference.parameters(), lr),
                                batch_size=micro_batch * accumulation_steps, epochs=epochs,
                                seed=seed, on_update=report("full-batch"))
        result.full_batch_losses = np.array(full)
        result.full_batch_metric = task.evaluate(reference)
    if compare_micro_batch:
        scaled = lr / (accumulation_steps if optimizer == "sgd" else np.sqrt(accumulation_steps))
        for run, rate in (("micro-batch", lr), ("scaled-lr", float(scaled))):
            plain = build_model(task.make_model, seed=seed, device=device, dtype=dtype)
            losses = train_full_batch(task, plain,
                                      make_optimizer(optimizer, plain.parameters(), rate),
                                      batch_size=micro_batch, epochs=epochs, seed=seed,
                                      on_update=report(run))
            if run == "micro-batch":
                result.micro_batch_losses = np.array(losses)
                result.micro_batch_metric = task.evaluate(plain)
            else:
                result.micro_batch_scaled_losses = np.array(losses)
                result.micro_batch_scaled_metric = task.evaluate(plain)
                result.micro_batch_scaled_lr = rate
    result.seconds = time.perf_counter() - start
    return result


def items_seen(num_updates: int, batch_size: int, epochs: int, train_size: int) -> np.ndarray:
    """Training items processed after each update (the x axis of loss curves).

    Each epoch has ``ceil(train_size / batch_size)`` updates, the last one short.
    """
    per_epoch = [min(batch_size, train_size - start) for start in range(0, train_size, batch_size)]
    return np.cumsum(per_epoch * epochs)[:num_updates]


def window_means(losses, batch_size: int, k: int, epochs: int, train_size: int) -> np.ndarray:
    """Item-weighted means of consecutive groups of ``k`` per-update losses.

    ``losses`` are the losses of plain training with batches of
    ``batch_size`` (shape (updates,)); each epoch's updates are grouped k at a
    time (the last group of an epoch may be shorter, like the accumulated
    run's last window) and each group's losses are averaged with the batch
    sizes as weights.  The result has one value per window of
    ``batch_size * k`` items, comparable point by point with the window
    losses of accumulated training.

    Raises:
        ValueError: ``losses`` holds more updates than ``epochs`` epochs have.
    """
    losses = np.asarray(losses, dtype=np.float64)
    per_epoch = [min(batch_size, train_size - s) for s in range(0, train_size, batch_size)]
    sizes = np.array(per_epoch * epochs, dtype=np.float64)
    if len(losses) > len(sizes):
        raise ValueError(f"window_means: {len(losses)} losses, but {epochs} epoch(s) of "
                         f"{train_size} items in batches of {batch_size} have {len(sizes)}")
    groups = [np.arange(e * len(per_epoch), (e + 1) * len(per_epoch))[s:s + k]
              for e in range(epochs) for s in range(0, len(per_epoch), k)]
    out = []
    for idx in groups:
        idx = idx[idx < len(losses)]
        if len(idx):
            out.append(float(np.dot(losses[idx], sizes[idx]) / sizes[idx].sum()))
    return np.array(out)


def plot_losses(result: TrainResult, path) -> None:
    """Save the loss curves to ``path`` (PNG, SVG, PDF...), against training items seen.

    Draws the accumulated run, and the full-batch and plain micro-batch runs
    when present.  Every curve has one point per window of B·k items: the
    plain run's k losses of a window are averaged (:func:`window_means`), so
    all curves show the mean loss over the same items. Needs matplotlib (the ``cli`` extra); uses the
    non-interactive Agg backend.
    """
    import matplotlib  # noqa: PLC0415 (optional dependency, imported on demand)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    s = result.settings
    B, k, epochs = s["micro_batch"], s["accumulation_steps"], s["epochs"]
    size = TRAIN_SIZES[s["dataset"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    if result.micro_batch_losses is not None:
        # One point per window of k plain steps, their item-weighted mean: the
        # same quantity, over the same items, as one point of the accumulated
        # run (single-example losses plotted raw would swamp the axis).
        means = window_means(result.micro_batch_losses, B, k, epochs, size)
        ax.plot(items_seen(len(means), B * k, epochs, size), means, color="tab:gray",
                marker=".", label=f"plain batch {B}, same lr, mean over each {k} updates")
    if result.micro_batch_scaled_losses is not None:
        means = window_means(result.micro_batch_scaled_losses, B, k, epochs, size)
        ax.plot(items_seen(len(means), B * k, epochs, size), means, color="tab:green",
                marker=".", label=f"plain batch {B}, lr {result.micro_batch_scaled_lr:.3g} "
                                  f"(scaled), mean over each {k} updates")
    ax.plot(items_seen(len(result.losses), B * k, epochs, size), result.losses,
            color="tab:blue", label=f"accumulated: {k} x {B}")
    if result.full_batch_losses is not None:
        losses = result.full_batch_losses
        ax.plot(items_seen(len(losses), B * k, epochs, size), losses, "--", color="tab:orange",
                label=f"full batch: {B * k}")
    ax.set_xlabel("training items seen")
    ax.set_ylabel("loss per token" if s["dataset"] == "shakespeare" else "loss")
    ax.set_title(f"{s['dataset']}, {s['optimizer']} lr={s['lr']:g}, {epochs} epoch(s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
