"""Learning-rate schedulers: LambdaLR, StepLR, CosineAnnealingLR, LinearLR (warm-up).

A scheduler owns a counter ``last_epoch`` (the number of ``step()`` calls so
far; despite the name it counts whatever you step it on: epochs, or optimizer
updates) and sets ``group["lr"]`` of every parameter group of its optimizer
to ``lr(base_lr, last_epoch)``, where ``base_lr`` is the group's learning rate
when the scheduler was made (saved in ``group["initial_lr"]``).

PyTorch's semantics: making a scheduler sets the learning rate of step 0 at
once; call ``optimizer.step()`` first and ``scheduler.step()`` after it, once
per epoch or per update.  Under gradient accumulation the scheduler must step
once per *optimizer update*, not per micro-batch; ``GradientAccumulator``
does that for you.

minigrad computes every schedule in closed form from ``last_epoch`` (PyTorch
computes some of them recursively from the previous value; the two agree to
rounding).
"""
from __future__ import annotations

import math
import numbers

from .optimizer import Optimizer, check_number


def _check_int(owner: str, name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{owner}: {name} must be >= {low}, got {value}")
    return int(value)


class LRScheduler:
    """Base class: subclasses define :meth:`lr_at` (the closed-form schedule).

    Args:
        optimizer: the :class:`~minigrad.optim.Optimizer` whose groups' ``"lr"``
            this scheduler sets.

    Attributes:
        base_lrs: each group's learning rate at construction.
        last_epoch: number of ``step()`` calls so far (0 right after construction).

    Raises:
        TypeError: ``optimizer`` is not a minigrad Optimizer.
    """

    def __init__(self, optimizer):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected a minigrad Optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self._last_lr = list(self.base_lrs)
        self.step()                     # sets the learning rate of step 0

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` after
        ``epoch`` steps."""
        raise NotImplementedError  # pragma: no cover - abstract

    def get_lr(self) -> list:
        """The learning rates for the current ``last_epoch``, one per group."""
        return [self.lr_at(base, self.last_epoch, i) for i, base in enumerate(self.base_lrs)]

    def step(self) -> None:
        """Advance the schedule by one and set every group's ``"lr"``."""
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list:
        """The learning rates set by the last ``step()`` (a list, one per group)."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimizer (and, for LambdaLR, the functions)."""
        return {k: (list(v) if isinstance(v, list) else v) for k, v in self.__dict__.items()
                if k not in ("optimizer", "lr_lambdas")}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from :meth:`state_dict` (the optimizer's own state,
        with its current ``lr``, is restored by ``optimizer.load_state_dict``)."""
        for k, v in state_dict.items():
            setattr(self, k, list(v) if isinstance(v, list) else v)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(last_epoch)  (PyTorch's ``LambdaLR``).

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the step count returning a factor, or a list
            of such functions, one per parameter group.

    Raises:
        TypeError: ``lr_lambda`` is not callable.  ValueError: the list's
            length differs from the number of groups.

    Example: a linear warm-up over 100 updates,
    ``LambdaLR(opt, lambda step: min(1.0, (step + 1) / 100))``.
    """

    def __init__(self, optimizer, lr_lambda):
        n = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 0
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if isinstance(lr_lambda, (list, tuple)) and len(lambdas) != n:
            raise ValueError(f"LambdaLR: expected {n} lr_lambdas (one per parameter "
                             f"group), got {len(lambdas)}")
        for f in lambdas:
            if not callable(f):
                raise TypeError(f"LambdaLR: lr_lambda must be callable, got {f!r}")
        self.lr_lambdas = lambdas
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.lr_lambdas[group_index](epoch)


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (last_epoch // step_size)  (PyTorch's ``StepLR``).

    Args:
        optimizer: the optimizer.
        step_size: period of the decay, an int >= 1.
        gamma: multiplicative factor, > 0 (default 0.1).
    """

    def __init__(self, optimizer, step_size, gamma=0.1):
        self.step_size = _check_int("StepLR", "step_size", step_size)
        self.gamma = check_number("StepLR", "gamma", gamma, low=0.0, low_inclusive=False)
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch, group_index):
        # BEGIN SOLUTION ch03.6
        return base_lr * self.gamma ** (epoch // self.step_size)
        # END SOLUTION


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from base_lr down to eta_min over T_max steps.

    lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2

    Source: Loshchilov & Hutter, "SGDR: Stochastic Gradient Descent with Warm
    Restarts", ICLR 2017, eq. (5), without restarts (PyTorch's
    ``CosineAnnealingLR``).  Past T_max the cosine continues, so the rate rises
    again, as in PyTorch.

    Args:
        optimizer: the optimizer.
        T_max: number of steps of the half cosine, an int >= 1.
        eta_min: the final learning rate, >= 0 (default 0).
    """

    def __init__(self, optimizer, T_max, eta_min=0.0):  # noqa: N803 (PyTorch's name)
        self.T_max = _check_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = check_number("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch, group_index):
        # BEGIN SOLUTION ch03.7
        cosine = (1 + math.cos(math.pi * epoch / self.T_max)) / 2
        return self.eta_min + (base_lr - self.eta_min) * cosine
        # END SOLUTION


class LinearLR(LRScheduler):
    """Linear warm-up: the factor goes linearly from start_factor to end_factor.

    lr = base_lr * (start_factor + (end_factor - start_factor)
                    * min(last_epoch, total_iters) / total_iters)

    PyTorch's ``LinearLR``.  With ``start_factor=0.01, end_factor=1.0,
    total_iters=W`` it is the usual warm-up of the first W updates (Goyal et
    al., 2017, "Accurate, Large Minibatch SGD", section 2.2), after which the
    rate stays at base_lr.

    Args:
        optimizer: the optimizer.
        start_factor: factor at step 0, in (0, 1] (default 1/3).
        end_factor: factor from step ``total_iters`` on, in [0, 1] (default 1).
        total_iters: number of steps of the ramp, an int >= 1 (default 5).
    """

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        self.start_factor = check_number("LinearLR", "start_factor", start_factor,
                                         low=0.0, low_inclusive=False, high=1.0,
                                         high_inclusive=True)
        self.end_factor = check_number("LinearLR", "end_factor", end_factor, high=1.0,
                                       high_inclusive=True)
        self.total_iters = _check_int("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch, group_index):
        # BEGIN SOLUTION ch03.8
        progress = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * progress)
        # END SOLUTION

