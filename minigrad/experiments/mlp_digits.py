"""A multilayer perceptron on the bundled digits: accumulation equals the full batch.

The model is ``Linear(64, 32) -> Tanh -> Linear(32, 10)`` on 8x8 digit images
(64 pixels in [0, 1]) with the mean cross-entropy loss. For a loss that is a
mean over independent examples, the full-batch gradient is the item-weighted
mean of the micro-batch gradients, so k accumulated micro-batches followed by
one optimizer step must give the same update as one step on the full batch, to
rounding, for SGD and AdamW alike.
"""
from __future__ import annotations

import numpy as np

import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.data import load_digits

from .common import EQUAL, CaseResult, classification_windows, compare_training, cross_entropy_loss

#: Optimizers of the digits experiments: name -> (parameters -> optimizer).
OPTIMIZERS = {
    "sgd": lambda params: optim.SGD(params, lr=0.1),
    "adamw": lambda params: optim.AdamW(params, lr=1e-2, weight_decay=0.01),
}


def make_mlp(in_features: int = 64, hidden: int = 32, classes: int = 10):
    """``Linear(in, hidden) -> Tanh -> Linear(hidden, classes)``."""
    return nn.Sequential(nn.Linear(in_features, hidden), nn.Tanh(), nn.Linear(hidden, classes))


def case_mlp_digits(batch_size: int = 128, accumulation_steps: int = 8, optimizer: str = "sgd",
                    *, updates: int = 20, device: str = "cpu", dtype=np.float64,
                    seed: int = 0) -> CaseResult:
    """Full batch of ``batch_size`` vs ``accumulation_steps`` equal micro-batches (expected: equal).

    Args:
        batch_size: B, examples per update; must be a multiple of ``accumulation_steps``.
        accumulation_steps: k, micro-batches per update, each of B/k examples.
        optimizer: ``"sgd"`` (lr 0.1) or ``"adamw"`` (lr 1e-2, weight decay 0.01).
        updates: optimizer steps in each run.
        device, dtype, seed: where and in what precision to run; the seed fixes
            the initial parameters and the order of the examples.

    Raises:
        ValueError: if B is not a multiple of k, or the optimizer is unknown.
    """
    if batch_size % accumulation_steps:
        raise ValueError(f"batch_size {batch_size} is not a multiple of accumulation_steps "
                         f"{accumulation_steps}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(OPTIMIZERS)}")
    X, y = load_digits()
    micro = batch_size // accumulation_steps
    windows = classification_windows(X, y, batch_size=batch_size,
                                     micro_sizes=[micro] * accumulation_steps,
                                     updates=updates, seed=seed)
    return compare_training(
        name=f"mlp-digits {batch_size}={accumulation_steps}x{micro} {optimizer}",
        expected=EQUAL, make_model=make_mlp, make_optimizer=OPTIMIZERS[optimizer],
        windows=windows, loss_fn=cross_entropy_loss(device, dtype), device=device,
        dtype=dtype, seed=seed,
        description=f"MLP on digits, {updates} {optimizer} updates: batch {batch_size} vs "
                    f"{accumulation_steps} micro-batches of {micro}")
