"""Normalization layers and dropout under gradient accumulation.

Accumulation is exact when each example's loss depends on that example alone.
That holds for

* **LayerNorm** and **GroupNorm**: their statistics are computed per example
  (over its features, or over groups of its channels);
* **Dropout** when each example's mask depends on the example, not on where
  it sits in a batch (``Dropout(p, per_example=True)`` inside
  ``nn.dropout_context(step=..., example_index=...)``);
* **BatchNorm in eval mode**: it applies the fixed running statistics, an
  affine map per channel.

It fails for **BatchNorm in training mode**: the mean and variance are taken
over the batch, so an example's output depends on the other examples of its
micro-batch, and 8 micro-batches of 16 normalize with 8 different statistics
where the full batch of 128 uses one. What accumulation computes instead is
exactly *ghost batch normalization* (Hoffer et al., "Train longer, generalize
better", NeurIPS 2017, §4): the full batch normalized in virtual batches of 16.
:class:`GhostBatchNorm1d` writes that out, and the accumulated run equals it.

BatchNorm's *running* statistics are a separate matter: by default each
micro-batch updates them (k momentum steps per window); with
``nn.set_merge_running_stats(model)`` and ``GradientAccumulator(...,
model=model)`` the layers merge the window's counts, sums and sums of squares
and update once, exactly as one full-batch step would.
"""
from __future__ import annotations

import time

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.data import load_digits
from minigrad.testing import max_abs_diff, max_rel_diff

from .common import (DIFFERS, EQUAL, CaseResult, build_model, classification_windows,
                     compare_training, cross_entropy_loss, equal_tolerance, split_batch,
                     to_tensor)
from .mlp_digits import OPTIMIZERS


class GhostBatchNorm1d(nn.Module):
    """Batch normalization over virtual batches ("ghost batches") of a fixed size.

    A batch of shape (N, C) with N = G * ``virtual_batch_size`` is reshaped to
    (G, n, C); each of the G groups is normalized with its own mean and biased
    variance, then the shared affine ``weight * x_hat + bias`` is applied:

        x_hat[g, i, c] = (x[g, i, c] - mean_i x[g, i, c]) / sqrt(var_i x[g, i, c] + eps)

    Built from differentiable tensor operations only, so autograd derives its
    backward. It keeps no running statistics (this module exists to show what
    gradient accumulation computes with BatchNorm in training mode).

    Args:
        num_features: C.
        virtual_batch_size: n, the size of each ghost batch.
        eps: added to the variance, as in ``BatchNorm1d`` (1e-5).

    Raises:
        ValueError: in forward, if x is not (N, C) or N is not a multiple of n.
    """

    def __init__(self, num_features: int, virtual_batch_size: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.virtual_batch_size = virtual_batch_size
        self.eps = eps
        self.weight = nn.Parameter(minigrad.ones(num_features))
        self.bias = nn.Parameter(minigrad.zeros(num_features))

    def forward(self, x):
        n, c = self.virtual_batch_size, self.num_features
        if x.ndim != 2 or x.shape[1] != c or x.shape[0] % n:
            raise ValueError(f"GhostBatchNorm1d: expected (N, {c}) with N a multiple of "
                             f"{n}, got shape {x.shape}")
        groups = x.reshape(x.shape[0] // n, n, c)
        mean = groups.mean(axis=1, keepdims=True)
        centered = groups - mean
        var = (centered * centered).mean(axis=1, keepdims=True)
        x_hat = centered / (var + self.eps).sqrt()
        return x_hat.reshape(x.shape[0], c) * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"{self.num_features}, virtual_batch_size={self.virtual_batch_size}"


def make_norm_mlp(norm: str, hidden: int = 32, virtual_batch_size: int = 16):
    """``Linear(64, h) -> <norm> -> Tanh -> Linear(h, 10)``.

    ``norm`` is ``"layer"`` (LayerNorm(h)), ``"group"`` (GroupNorm(4, h)),
    ``"batch"`` (BatchNorm1d(h)) or ``"ghost"`` (GhostBatchNorm1d(h, n)).
    """
    layers = {
        "layer": lambda: nn.LayerNorm(hidden),
        "group": lambda: nn.GroupNorm(4, hidden),
        "batch": lambda: nn.BatchNorm1d(hidden),
        "ghost": lambda: GhostBatchNorm1d(hidden, virtual_batch_size),
    }
    if norm not in layers:
        raise ValueError(f"unknown norm {norm!r}; expected one of {sorted(layers)}")
    return nn.Sequential(nn.Linear(64, hidden), layers[norm](), nn.Tanh(), nn.Linear(hidden, 10))


def make_dropout_mlp(p: float = 0.2, hidden: int = 32):
    """``Linear(64, h) -> ReLU -> Dropout(p, per_example=True) -> Linear(h, 10)``."""
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(p, per_example=True),
                         nn.Linear(hidden, 10))


def _digits_windows(batch_size, k, updates, seed):
    X, y = load_digits()
    return classification_windows(X, y, batch_size=batch_size, micro_sizes=[batch_size // k] * k,
                                  updates=updates, seed=seed)


def case_norm_layer(norm: str = "layer", *, batch_size: int = 128, accumulation_steps: int = 8,
                    updates: int = 20, device: str = "cpu", dtype=np.float64,
                    seed: int = 0) -> CaseResult:
    """LayerNorm or GroupNorm MLP on digits, SGD (expected: equal).

    Args:
        norm: ``"layer"`` or ``"group"``.
        batch_size, accumulation_steps, updates, device, dtype, seed: as in
            :func:`~minigrad.experiments.mlp_digits.case_mlp_digits`.
    """
    if norm not in ("layer", "group"):
        raise ValueError(f"case_norm_layer: norm must be 'layer' or 'group', got {norm!r}")
    k = accumulation_steps
    label = {"layer": "LayerNorm", "group": "GroupNorm(4)"}[norm]
    return compare_training(
        name=f"{label} mlp {batch_size}={k}x{batch_size // k}", expected=EQUAL,
        make_model=lambda: make_norm_mlp(norm), make_optimizer=OPTIMIZERS["sgd"],
        windows=_digits_windows(batch_size, k, updates, seed),
        loss_fn=cross_entropy_loss(device, dtype), device=device, dtype=dtype, seed=seed,
        description=f"{label} statistics are per example: accumulation is exact")


def dropout_loss(device: str, dtype):
    """Cross-entropy loss of batches ``(x, y, example_index, step)`` for per-example dropout.

    ``example_index`` holds each example's position in the full batch (0..B-1)
    and ``step`` the update number (repeated per row, so that splitting the
    batch carries it along); ``nn.dropout_context`` hands both to Dropout.
    """
    def loss_fn(model, batch):
        x, y, example_index, step = batch
        with nn.dropout_context(step=int(step[0]), example_index=example_index):
            logits = model(to_tensor(x, device=device, dtype=dtype))
        loss = nn.functional.cross_entropy(logits, to_tensor(y, device=device))
        return loss, len(y)
    return loss_fn


def case_dropout(p: float = 0.2, *, batch_size: int = 128, accumulation_steps: int = 8,
                 updates: int = 20, device: str = "cpu", dtype=np.float64,
                 seed: int = 0) -> CaseResult:
    """Dropout with per-example masks (expected: equal).

    Each example's mask is drawn from (seed, update, layer id, its index in the
    full batch, position), so it is the same whether the example sits in the
    full batch or in a micro-batch, and new at every update.
    """
    k = accumulation_steps
    windows = []
    for t, (full, _) in enumerate(_digits_windows(batch_size, k, updates, seed)):
        full = (*full, np.arange(batch_size), np.full(batch_size, t))
        windows.append((full, split_batch(full, [batch_size // k] * k)))
    return compare_training(
        name=f"dropout p={p} per-example masks", expected=EQUAL,
        make_model=lambda: make_dropout_mlp(p), make_optimizer=OPTIMIZERS["sgd"],
        windows=windows, loss_fn=dropout_loss(device, dtype), device=device, dtype=dtype,
        seed=seed, description="dropout masks keyed by example index, not by batch position")


def case_batchnorm(mode: str = "train", *, batch_size: int = 128, accumulation_steps: int = 8,
                   updates: int = 20, device: str = "cpu", dtype=np.float64,
                   seed: int = 0) -> CaseResult:
    """BatchNorm1d MLP on digits, SGD.

    Args:
        mode: ``"train"``: BatchNorm in training mode against the full batch
            (expected: differs; ``extras["gap"]`` is the relative gradient gap
            at the first update, where both runs have the same parameters);
            ``"ghost"``: the same accumulated run against the full batch through
            :class:`GhostBatchNorm1d` with virtual batches of B/k (expected:
            equal); ``"eval"``: both runs in eval mode (expected: equal).
    """
    if mode not in ("train", "ghost", "eval"):
        raise ValueError(f"case_batchnorm: mode must be 'train', 'ghost' or 'eval', got {mode!r}")
    k = accumulation_steps
    micro = batch_size // k
    shape = f"{batch_size}={k}x{micro}"
    settings = {
        "train": (f"BatchNorm train {shape}", DIFFERS, None,
                  f"BatchNorm1d in training mode: statistics of {micro} vs {batch_size} examples"),
        "ghost": (f"BatchNorm train = ghost BN({micro})", EQUAL,
                  lambda: make_norm_mlp("ghost", virtual_batch_size=micro),
                  f"accumulated BatchNorm1d vs full batch with ghost batches of {micro}"),
        "eval": (f"BatchNorm eval {shape}", EQUAL, None,
                 "BatchNorm1d in eval mode: fixed running statistics, an affine map"),
    }
    name, expected, make_reference, description = settings[mode]
    result = compare_training(
        name=name, expected=expected, make_model=lambda: make_norm_mlp("batch"),
        make_reference_model=make_reference, make_optimizer=OPTIMIZERS["sgd"],
        windows=_digits_windows(batch_size, k, updates, seed),
        loss_fn=cross_entropy_loss(device, dtype), device=device, dtype=dtype, seed=seed,
        train_mode=mode != "eval", description=description)
    if mode == "train":
        gap = float(result.grad_rel_per_update[0])
        result.extras["gap"] = gap
        result.note = f"gap {gap:.2e}"
    return result


def case_merged_running_stats(*, batch_size: int = 128, accumulation_steps: int = 8,
                              updates: int = 20, device: str = "cpu", dtype=np.float64,
                              seed: int = 0) -> CaseResult:
    """Merged BatchNorm running statistics equal one full-batch step (expected: equal).

    At each of ``updates`` windows, a copy of the model takes the full batch
    in training mode (forward only: that is when BatchNorm updates its
    running statistics), while the model itself runs the window as k
    accumulated micro-batches with ``nn.set_merge_running_stats(model)`` and
    ``GradientAccumulator(..., model=model)``. The compared numbers are
    ``running_mean`` and ``running_var`` after each window (reported in the
    "param" columns); then the copy is reset to the model's new state for the
    next window. ``extras["per_micro_batch_gap"]`` is what the default
    per-micro-batch ("ghost") statistics would differ by, after one window.
    """
    start = time.perf_counter()
    k = accumulation_steps
    windows = _digits_windows(batch_size, k, updates, seed)
    loss_fn = cross_entropy_loss(device, dtype)
    make = lambda: make_norm_mlp("batch")  # noqa: E731
    model = build_model(make, seed=seed, device=device, dtype=dtype)
    reference = build_model(make, seed=seed, device=device, dtype=dtype)
    nn.set_merge_running_stats(model)
    optimizer = OPTIMIZERS["sgd"](model.parameters())
    accumulator = optim.GradientAccumulator(optimizer, k, model=model)
    abs_d, rel_d = [], []
    for full_batch, micro_batches in windows:
        reference.load_state_dict(model.state_dict())
        with minigrad.no_grad():
            loss_fn(reference, full_batch)
        for micro in micro_batches:
            loss, n = loss_fn(model, micro)
            accumulator.backward(loss, num_items=n)
            accumulator.step()
        got, want = _running_stats(model), _running_stats(reference)
        abs_d.append(max_abs_diff(got, want))
        rel_d.append(max_rel_diff(got, want))
    gap = _per_micro_batch_gap(make, windows[0], loss_fn, seed=seed, device=device, dtype=dtype)
    return CaseResult(
        name=f"merged running stats {batch_size}={k}x{batch_size // k}", expected=EQUAL,
        tolerance=equal_tolerance(dtype), param_abs_diff=max(abs_d), param_rel_diff=max(rel_d),
        param_rel_per_update=np.array(rel_d), device=device, dtype=np.dtype(dtype).name,
        updates=updates, seconds=time.perf_counter() - start,
        description="running_mean/var after each window: merged over k micro-batches vs "
                    "one full-batch step",
        note=f"default gap {gap:.2e}", extras={"per_micro_batch_gap": gap})


def _running_stats(model) -> list:
    """running_mean and running_var of every BatchNorm layer, as arrays."""
    return [b.data for name, b in model.named_buffers()
            if name.endswith("running_mean") or name.endswith("running_var")]


def _per_micro_batch_gap(make, window, loss_fn, *, seed, device, dtype) -> float:
    """Relative difference of the running statistics after one window, per micro-batch vs full."""
    full_batch, micro_batches = window
    per_micro = build_model(make, seed=seed, device=device, dtype=dtype)
    full = build_model(make, seed=seed, device=device, dtype=dtype)
    with minigrad.no_grad():
        loss_fn(full, full_batch)
        for micro in micro_batches:
            loss_fn(per_micro, micro)
    return max_rel_diff(_running_stats(per_micro), _running_stats(full))
