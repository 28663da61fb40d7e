"""Training loops, models and data shared by the gradient-accumulation tests.

Every comparison runs the same model (same seed) twice: once on full batches
with the plain optimizer loop, once on micro-batches through
GradientAccumulator, and compares with ``max_rel_diff`` (max |a-b| / max |b|).
"""
import numpy as np

import minigrad
from minigrad import nn
from minigrad.data import split_micro_batches
from minigrad.nn import functional as F
from minigrad.optim import Optimizer, clip_grad_norm_


class GradientRecorder(Optimizer):
    """An optimizer that only records (copies of) the gradients it is given.

    ``seen[t]`` is the list of gradients (NumPy arrays, None where a parameter
    had none) at step t: exactly what a real optimizer would have used.
    """

    def __init__(self, params):
        super().__init__(params, {"lr": 0.0})
        self.seen = []

    def step(self):
        self.seen.append([None if p.grad is None else p.grad.numpy().copy()
                          for p in self._params()])


def make_mlp(seed=0, norm=None, dropout=None, n_in=6, hidden=8, n_out=3):
    """Linear(n_in, hidden) [norm] Tanh [dropout] Linear(hidden, n_out), seeded."""
    minigrad.manual_seed(seed)
    layers = [nn.Linear(n_in, hidden)]
    if norm is not None:
        layers.append(norm(hidden))
    layers.append(nn.Tanh())
    if dropout is not None:
        layers.append(nn.Dropout(dropout, per_example=True))
    layers.append(nn.Linear(hidden, n_out))
    return nn.Sequential(*layers)


def classification_batches(num_batches, batch_size, seed=0, n_in=6, n_out=3):
    """``num_batches`` pairs (x float64 (B, n_in), y int64 (B,)) from default_rng(seed)."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch_size, n_in)), rng.integers(0, n_out, batch_size))
            for _ in range(num_batches)]


def ce_loss(model, x, y):
    """Mean cross-entropy of the model on one (micro-)batch (x in the model's dtype)."""
    dtype = next(iter(model.parameters())).dtype
    return F.cross_entropy(model(minigrad.tensor(x, dtype=dtype)), y)


def train_full(model, opt, batches, loss_fn=ce_loss, scheduler=None, max_grad_norm=None):
    """The reference: one forward, backward and step per full batch.

    Returns the list of mean losses, one per batch (before its update).
    """
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(model, x, y)
        loss.backward()
        losses.append(loss.item())
        if max_grad_norm is not None:
            clip_grad_norm_(model.parameters(), max_grad_norm)
        opt.step()
        if scheduler is not None:
            scheduler.step()
    return losses


def train_accumulated(acc, model, batches, k, loss_fn=ce_loss, weight_by_items=True):
    """Each batch as k micro-batches through ``acc``; returns the window losses."""
    losses = []
    for batch in batches:
        parts = split_micro_batches(batch, k)
        for i, (x, y) in enumerate(parts):
            acc.backward(loss_fn(model, x, y), num_items=len(x) if weight_by_items else None)
            assert acc.step() == (i == len(parts) - 1)
        losses.append(acc.window_loss)
    return losses


def params(model):
    """The parameters' arrays (NumPy copies), in order."""
    return [p.numpy().copy() for p in model.parameters()]
