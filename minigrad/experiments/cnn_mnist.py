"""A small CNN with BatchNorm2d on MNIST test images.

``Conv2d(1, 4, 3) -> BatchNorm2d(4) -> ReLU -> MaxPool2d(2) -> Flatten ->
Linear(4*13*13, 10)`` on 28x28 images. BatchNorm2d takes its statistics over
the batch *and* the spatial positions of each channel; in training mode a
micro-batch of 8 images normalizes with different numbers than the full batch
of 32, so accumulation differs from the full batch. In eval mode the layer
applies its running statistics, a fixed affine map, and accumulation is exact.
"""
from __future__ import annotations

import numpy as np

import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.data import load_mnist_test

from .common import (DIFFERS, EQUAL, CaseResult, classification_windows, compare_training,
                     cross_entropy_loss)


def make_cnn(channels: int = 4, classes: int = 10):
    """``Conv2d(1, c, 3) -> BatchNorm2d(c) -> ReLU -> MaxPool2d(2) -> Flatten -> Linear``.

    Input (N, 1, 28, 28), output logits (N, 10).
    """
    return nn.Sequential(nn.Conv2d(1, channels, 3), nn.BatchNorm2d(channels), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(channels * 13 * 13, classes))


def case_cnn_mnist(mode: str = "train", *, batch_size: int = 32, accumulation_steps: int = 4,
                   updates: int = 5, device: str = "cpu", dtype=np.float64,
                   seed: int = 0) -> CaseResult:
    """CNN with BatchNorm2d on MNIST, SGD (lr 0.05): train differs, eval equal.

    Args:
        mode: ``"train"`` (expected: differs; ``extras["gap"]`` is the relative
            gradient gap at the first update) or ``"eval"`` (expected: equal).
        batch_size, accumulation_steps, updates, device, dtype, seed: as in the
            other cases (batch 32 as 4 micro-batches of 8, 5 updates).
    """
    if mode not in ("train", "eval"):
        raise ValueError(f"case_cnn_mnist: mode must be 'train' or 'eval', got {mode!r}")
    X, y = load_mnist_test()
    k = accumulation_steps
    micro = batch_size // k
    windows = classification_windows(X, y, batch_size=batch_size, micro_sizes=[micro] * k,
                                     updates=updates, seed=seed)
    train = mode == "train"
    result = compare_training(
        name=f"cnn-mnist BatchNorm2d {mode} {batch_size}={k}x{micro}",
        expected=DIFFERS if train else EQUAL, make_model=make_cnn,
        make_optimizer=lambda params: optim.SGD(params, lr=0.05), windows=windows,
        loss_fn=cross_entropy_loss(device, dtype), device=device, dtype=dtype, seed=seed,
        train_mode=train,
        description=f"Conv2d-BatchNorm2d-ReLU-MaxPool-Linear on MNIST test images, {mode} mode")
    if train:
        gap = float(result.grad_rel_per_update[0])
        result.extras["gap"] = gap
        result.note = f"gap {gap:.2e}"
    return result
