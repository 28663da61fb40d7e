"""Tests of minigrad.optim: optimizers, schedulers, clipping, gradient accumulation.

The helpers below drive a minigrad optimizer and a torch.optim optimizer
through the same sequence of parameters and gradients.
"""
import numpy as np

import minigrad

SHAPES = [(3, 4), (4,), (2, 1, 3)]


def random_problem(steps, seed=0):
    """Initial parameters (float64) and a gradient for each of ``steps`` steps."""
    rng = np.random.default_rng(seed)
    start = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]
    return start, grads


def _split(params, groups):
    """The parameters as a flat list, or as groups of one or two parameters each."""
    if groups is None:
        return params
    return [dict(options, params=params[i::len(groups)]) for i, options in enumerate(groups)]


def run_minigrad(optimizer_class, options, steps, groups=None, seed=0):
    """Final parameters (NumPy arrays) after ``steps`` steps of a minigrad optimizer."""
    start, grads = random_problem(steps, seed)
    params = [minigrad.tensor(a, requires_grad=True) for a in start]
    opt = optimizer_class(_split(params, groups), **options)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = minigrad.tensor(g)
        opt.step()
    return [p.numpy() for p in params]


def run_torch(torch, optimizer_class, options, steps, groups=None, seed=0):
    """The same with a torch.optim optimizer (float64, CPU)."""
    start, grads = random_problem(steps, seed)
    params = [torch.tensor(a, requires_grad=True) for a in start]
    opt = optimizer_class(_split(params, groups), **options)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = torch.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in params]
