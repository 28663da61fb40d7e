"""Normalizing the accumulated gradient: by items, by k, or (a bug) not at all.

The full-batch loss is the mean over all N = n_1 + ... + n_k examples. Written
with the micro-batch means L_j::

    L = (1/N) * sum_i l_i = sum_j (n_j / N) * L_j

so the exact accumulated gradient weighs micro-batch j by n_j / N — by how many
items it holds. Dividing every micro-batch by k instead (weight 1/k) is the same
thing only when all n_j are equal; with 32 + 32 + 32 + 4 the four examples of
the last micro-batch count eight times too much. And forgetting to divide at
all sums the k mean losses: the gradient comes out exactly k times too large
(with SGD, a learning rate k times too large).
"""
from __future__ import annotations

import time

import numpy as np

from minigrad.data import load_digits
from minigrad.testing import max_abs_diff, max_rel_diff

from .common import (DIFFERS, EQUAL, CaseResult, build_model, classification_windows,
                     compare_training, cross_entropy_loss, equal_tolerance, snapshot_grads)
from .mlp_digits import OPTIMIZERS, make_mlp

#: Unequal micro-batches: 100 examples as 32 + 32 + 32 + 4 (a short last one).
UNEQUAL_SIZES = (32, 32, 32, 4)


def case_unequal_micro_batches(weighting: str = "items", *, sizes=UNEQUAL_SIZES,
                               updates: int = 20, device: str = "cpu", dtype=np.float64,
                               seed: int = 0) -> CaseResult:
    """Micro-batches of unequal sizes, normalized by items (equal) or by k (differs).

    Args:
        weighting: ``"items"``: ``accumulator.backward(loss, num_items=n_j)``,
            expected equal; ``"equal"``: ``num_items=None``, each micro-batch
            weighs 1/k, expected to differ.
        sizes: the micro-batch sizes of every window (their sum is the batch).
        updates, device, dtype, seed: as in :func:`~minigrad.experiments.mlp_digits.case_mlp_digits`.

    Model: the digits MLP with SGD (lr 0.1).
    """
    if weighting not in ("items", "equal"):
        raise ValueError(f"weighting must be 'items' or 'equal', got {weighting!r}")
    X, y = load_digits()
    batch_size = sum(sizes)
    windows = classification_windows(X, y, batch_size=batch_size, micro_sizes=sizes,
                                     updates=updates, seed=seed)
    parts = " + ".join(str(s) for s in sizes)
    if weighting == "items":
        name, expected, how = f"unequal {parts}, num_items", EQUAL, "num_items=n_j (weight n_j/N)"
    else:
        name, expected, how = f"unequal {parts}, divide by k", DIFFERS, "num_items=None (weight 1/k)"
    return compare_training(
        name=name, expected=expected, make_model=make_mlp, make_optimizer=OPTIMIZERS["sgd"],
        windows=windows, loss_fn=cross_entropy_loss(device, dtype), device=device,
        dtype=dtype, seed=seed, weighting=weighting,
        description=f"MLP on digits, batch {batch_size} as {parts}, {how}")


def case_forgot_to_divide(accumulation_steps: int = 8, micro_batch: int = 16, *,
                          windows: int = 5, device: str = "cpu", dtype=np.float64,
                          seed: int = 0) -> CaseResult:
    """Summing k mean losses without dividing by k: the gradient is exactly k times too big.

    The classic bug, written out by hand (no accumulator)::

        for x_j, y_j in micro_batches:
            cross_entropy(model(x_j), y_j).backward()   # forgot: / k

    For each of ``windows`` batches (all at the initial parameters, no
    update) it compares the summed gradient g_acc with the full-batch gradient
    g: the case is "equal" when g_acc matches k * g to the dtype's tolerance,
    and ``extras["ratio"]`` is ``<g_acc, g> / <g, g>`` (exactly k in exact
    arithmetic). Parameter fields stay None: nothing is updated.

    The row reproduces a bug, and its table cells say so: expected "kx grad",
    verdict "kx too large, as predicted". A k times larger gradient is a k
    times larger SGD learning rate, one that changes whenever k changes.
    """
    start = time.perf_counter()
    X, y = load_digits()
    batch_size = accumulation_steps * micro_batch
    data = classification_windows(X, y, batch_size=batch_size,
                                  micro_sizes=[micro_batch] * accumulation_steps,
                                  updates=windows, seed=seed)
    model = build_model(make_mlp, seed=seed, device=device, dtype=dtype)
    loss_fn = cross_entropy_loss(device, dtype)
    parameters = list(model.parameters())
    ratios, abs_d, rel_d = [], [], []
    for full_batch, micro_batches in data:
        _zero_grads(parameters)
        loss_fn(model, full_batch)[0].backward()
        full = snapshot_grads(parameters)
        _zero_grads(parameters)
        for micro in micro_batches:
            loss_fn(model, micro)[0].backward()      # the bug: no division by k
        summed = snapshot_grads(parameters)
        g = np.concatenate([a.ravel() for a in full]).astype(np.float64)
        g_acc = np.concatenate([a.ravel() for a in summed]).astype(np.float64)
        ratios.append(float(g_acc @ g / (g @ g)))
        k_times_full = [accumulation_steps * r for r in full]
        abs_d.append(max_abs_diff(summed, k_times_full))
        rel_d.append(max_rel_diff(summed, k_times_full))
    ratio = float(np.mean(ratios))
    k = accumulation_steps
    return CaseResult(
        name=f"bug: forgot 1/k, k={k}",
        expected_label=f"{k}x grad", verdict_label=f"{k}x too large, as predicted",
        expected=EQUAL, tolerance=equal_tolerance(dtype),
        grad_abs_diff=max(abs_d), grad_rel_diff=max(rel_d),
        description=f"sum of {accumulation_steps} micro-batch mean losses (no 1/k) vs "
                    f"{accumulation_steps} x full-batch gradient, {windows} batches",
        note=f"grad/full-batch ratio {ratio:.12f}", device=device, dtype=np.dtype(dtype).name,
        updates=0, seconds=time.perf_counter() - start,
        grad_rel_per_update=np.array(rel_d),
        extras={"ratio": ratio, "ratios": ratios, "k": accumulation_steps})


def _zero_grads(parameters) -> None:
    for p in parameters:
        p.grad = None
