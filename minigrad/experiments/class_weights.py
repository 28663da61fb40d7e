"""Class-weighted cross-entropy under gradient accumulation.

With class weights w, PyTorch's mean cross-entropy divides by the summed
weight of the targets, not by their number::

    L = Σ_i w[y_i]·l_i / Σ_i w[y_i]  =  Σ_j (W_j / W)·L_j,   W_j = Σ_{i in j} w[y_i]

so micro-batch j must weigh W_j / W: pass ``num_items=W_j`` (a float) to
:meth:`~minigrad.optim.GradientAccumulator.backward` and the window's update
is the full-batch one.  The plain mean of the micro-batch means (every
micro-batch weighing 1/k) is not: a micro-batch that happens to hold the
heavy classes counts as much as one that holds the light ones.
"""
from __future__ import annotations

import numpy as np

import minigrad
from minigrad.data import load_digits

from .common import (DIFFERS, EQUAL, CaseResult, classification_windows, compare_training,
                     to_tensor)
from .mlp_digits import OPTIMIZERS, make_mlp

#: Class weights of the digits case: digit d weighs 2**(d % 4 - 1), from 0.5 to 4.
DIGIT_WEIGHTS = 2.0 ** (np.arange(10) % 4 - 1)


def weighted_cross_entropy_loss(weight: np.ndarray, device: str, dtype):
    """A loss function for classification windows: class-weighted mean
    cross-entropy; its ``num_items`` is the batch's summed target weight (a float)."""
    def loss_fn(model, batch):
        x, y = batch
        logits = model(to_tensor(x, device=device, dtype=dtype))
        w = to_tensor(weight, device=device, dtype=dtype)
        loss = minigrad.nn.functional.cross_entropy(logits, to_tensor(y, device=device),
                                                    weight=w)
        return loss, float(weight[y].sum())
    return loss_fn


def case_weighted_cross_entropy(weighting: str = "weight-sum", batch_size: int = 32,
                                accumulation_steps: int = 8, *, updates: int = 20,
                                device: str = "cpu", dtype=np.float64,
                                seed: int = 0) -> CaseResult:
    """Class-weighted cross-entropy, B = k micro-batches (expected equal or differs).

    Args:
        weighting: ``"weight-sum"``: ``num_items`` = the micro-batch's summed
            target weight, expected equal; ``"micro-batch-mean"``:
            ``num_items=None``, the mean of the micro-batch means, expected to differ.
        batch_size, accumulation_steps: B and k (B a multiple of k).
        updates, device, dtype, seed: as in
            :func:`~minigrad.experiments.mlp_digits.case_mlp_digits`.

    Model: the digits MLP with SGD (lr 0.1), class weights :data:`DIGIT_WEIGHTS`.

    Raises:
        ValueError: an unknown ``weighting`` or B not a multiple of k.
    """
    modes = {"weight-sum": ("items", EQUAL), "micro-batch-mean": ("equal", DIFFERS)}
    if weighting not in modes:
        raise ValueError(f"weighting must be one of {sorted(modes)}, got {weighting!r}")
    if batch_size % accumulation_steps:
        raise ValueError(f"batch_size {batch_size} is not a multiple of accumulation_steps "
                         f"{accumulation_steps}")
    X, y = load_digits()
    micro = batch_size // accumulation_steps
    windows = classification_windows(X, y, batch_size=batch_size,
                                     micro_sizes=[micro] * accumulation_steps,
                                     updates=updates, seed=seed)
    mode, expected = modes[weighting]
    how = ("num_items = summed target weight" if mode == "items"
           else "mean of micro-batch means")
    return compare_training(
        name=f"weighted CE {batch_size}={accumulation_steps}x{micro}, {weighting}",
        expected=expected, make_model=make_mlp, make_optimizer=OPTIMIZERS["sgd"],
        windows=windows, loss_fn=weighted_cross_entropy_loss(DIGIT_WEIGHTS, device, dtype),
        device=device, dtype=dtype, seed=seed, weighting=mode,
        description=f"MLP on digits, class-weighted cross-entropy, batch {batch_size} as "
                    f"{accumulation_steps}x{micro}, {how}")
