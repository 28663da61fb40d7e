"""The model, data and full-batch reference shared by the pipeline tests (local and MPI)."""
from __future__ import annotations

import numpy as np

import minigrad
from minigrad import nn
from minigrad.optim import SGD

IN, HIDDEN, CLASSES = 5, 8, 3


def make_model(layers: int = 4, seed: int = 0):
    """A float64 MLP of ``layers`` Linear layers with Tanh between (2 * layers - 1 modules)."""
    minigrad.set_default_dtype(np.float64)
    minigrad.manual_seed(seed)
    modules = [nn.Linear(IN, HIDDEN)]
    for _ in range(layers - 2):
        modules += [nn.Tanh(), nn.Linear(HIDDEN, HIDDEN)]
    modules += [nn.Tanh(), nn.Linear(HIDDEN, CLASSES)]
    return nn.Sequential(*modules)


def make_data(n: int = 23, seed: int = 1):
    """n inputs (n, IN) float64 and integer class targets (n,)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, IN)), rng.integers(0, CLASSES, n)


def stage_sizes(p: int, layers: int = 4):
    """Module counts per stage: the 2 * layers - 1 modules cut into p near-equal parts."""
    n = 2 * layers - 1
    return [n // p + (1 if s < n % p else 0) for s in range(p)]


class RecordingSGD(SGD):
    """SGD that keeps a copy of the gradients it was given at each step."""

    def step(self):
        self.seen_grads = [None if p.grad is None else p.grad.numpy().copy()
                           for g in self.param_groups for p in g["params"]]
        super().step()


def optimizer_for(params):
    return RecordingSGD(params, lr=0.1, momentum=0.9, weight_decay=0.01)


def full_batch_reference(x, y, steps: int, layers: int = 4):
    """One process, the whole batch: per step, the gradients and the parameters after it."""
    model = make_model(layers)
    opt = optimizer_for(model.parameters())
    grads, params, losses = [], [], []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(minigrad.tensor(x)), minigrad.tensor(y))
        loss.backward()
        opt.step()
        opt.zero_grad()
        grads.append(opt.seen_grads)
        params.append([p.numpy().copy() for p in model.parameters()])
        losses.append(loss.item())
    return grads, params, losses


def relative_error(got, want) -> float:
    """max |got - want| / max |want| over matching lists of arrays."""
    return max(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))
               for a, b in zip(got, want))


def expected_checkpoint_stash_bytes(schedule, s, p, n=23, extra_per_item=0):
    """The peak bytes of stage s's stash when it holds stage inputs only.

    Each stashed micro-batch holds its input (n_j rows of IN or HIDDEN float64
    values) and, on the last stage, its targets (n_j int64), plus
    ``extra_per_item`` bytes per row (a stage's output, when its graph keeps
    it).  Walks stage s's program: + at each F, - at each B.
    """
    from minigrad.pipeline import split_batch
    m = len(schedule[s]) // 2
    sizes = [len(b) for b in split_batch(np.zeros(n), m)]
    width = IN if s == 0 else HIDDEN
    per_item = 8 * width + (8 if s == p - 1 else 0) + extra_per_item
    held = peak = 0
    for kind, j in schedule[s]:
        held += sizes[j] * per_item * (1 if kind == "F" else -1)
        peak = max(peak, held)
    return peak
