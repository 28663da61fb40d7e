"""Learning-rate schedulers, chainable as PyTorch's are.

A scheduler owns a counter ``last_epoch`` (the number of ``step()`` calls so
far; despite the name it counts whatever you step it on: epochs, or optimizer
updates) and changes ``group["lr"]`` of every parameter group of its optimizer.
``base_lr`` is the group's learning rate when the first scheduler was made
(saved in ``group["initial_lr"]``, as PyTorch does).

**Chainable.**  Each ``step()`` computes the new rate from the group's
*current* rate (PyTorch's recursive ``get_lr``): StepLR multiplies it by gamma
at every multiple of step_size, LinearLR by the ratio of two successive
factors, CosineAnnealingLR by the ratio of two successive cosines.  So two
schedulers stepped one after the other on the same optimizer compose: their
factors multiply.  ``LinearLR(start_factor=0.25, total_iters=3)`` and
``StepLR(step_size=2, gamma=0.5)`` stepped together from lr = 1 give
0.25, 0.5, 0.375, 0.5, 0.25, 0.25, 0.125, exactly PyTorch's values.
:class:`LambdaLR` is the exception, as in PyTorch: it sets
``base_lr * lr_lambda(epoch)`` and overwrites what others did.

:meth:`LRScheduler.lr_at` keeps each schedule's closed form (PyTorch's
``_get_closed_form_lr``), used where PyTorch uses it: when
:class:`SequentialLR` restarts a scheduler at its milestone.  In exact
arithmetic the two forms agree; in floating point they differ by rounding.

**Order of calls** (PyTorch's): making a scheduler sets the learning rate of
step 0 at once; call ``optimizer.step()`` first and ``scheduler.step()``
after it, once per epoch or per update.  Under gradient accumulation the
scheduler must step once per *optimizer update*, not per micro-batch;
``GradientAccumulator`` does that for you.

**Resuming.**  Save ``optimizer.state_dict()`` (it holds each group's current
``lr`` and its ``initial_lr``) and ``scheduler.state_dict()``; to resume, make
the optimizer and the scheduler again and load both.  Any order gives the
uninterrupted rate: scheduler made before or after the optimizer's state is
loaded, scheduler state loaded before or after.  (PyTorch warns that making a
scheduler after loading the optimizer overwrites the loaded rates; minigrad
puts them back when the scheduler's state is then loaded.)

**Failures.**  ``step()`` and ``load_state_dict()`` either complete or leave
the scheduler and the optimizer's rates as they were (a raising ``lr_lambda``,
a rate that is not a finite number, a state of another scheduler).
"""
from __future__ import annotations

import bisect
import math
import numbers

from .checks import check_number
from .optimizer import Optimizer


def _check_int(owner: str, name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{owner}: {name} must be >= {low}, got {value}")
    return int(value)


def _check_lrs(owner: str, name: str, values, n: int) -> list:
    """A list of ``n`` finite real numbers (learning rates), as floats."""
    if not isinstance(values, (list, tuple)) or len(values) != n:
        raise ValueError(f"{owner}: {name} must be a list of {n} learning rates (one per "
                         f"parameter group), got {values!r}")
    return [check_number(owner, f"{name}[{i}]", v, low=None) for i, v in enumerate(values)]


def _lrs(optimizer) -> list:
    return [group["lr"] for group in optimizer.param_groups]


def _set_lrs(optimizer, values) -> None:
    for group, lr in zip(optimizer.param_groups, values):
        group["lr"] = lr


class LRScheduler:
    """Base class: subclasses define :meth:`get_lr` (the recursive, chainable
    rule) and, where the schedule has one, :meth:`lr_at` (its closed form).

    Args:
        optimizer: the :class:`~minigrad.optim.Optimizer` whose groups' ``"lr"``
            this scheduler sets.

    Attributes:
        base_lrs: each group's ``initial_lr`` (its rate when the first
            scheduler was made).
        last_epoch: number of ``step()`` calls so far (0 right after construction).

    Raises:
        TypeError: ``optimizer`` is not a minigrad Optimizer.
    """

    # Hyperparameters saved in state_dict, each with the function that checks
    # it (the same one __init__ uses).  Subclasses fill this in.
    _hyper: dict = {}

    def __init__(self, optimizer):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected a minigrad Optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self._last_lr = _lrs(optimizer)
        # The rates loaded into the optimizer just before this scheduler was
        # made (None otherwise): load_state_dict puts them back (see _resume_lrs).
        self._loaded_lrs = getattr(optimizer, "_loaded_lrs", None)
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the rate of step 0 (PyTorch's ``_initial_step``)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    # ------------------------------------------------------------- the rule
    def get_lr(self) -> list:
        """The rates for the current ``last_epoch``, one per group, computed
        from the groups' current rates (chainable) or in closed form."""
        return self._get_closed_form_lr()

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The closed form: the rate of a group with base rate ``base_lr``
        after ``epoch`` steps, this scheduler alone."""
        raise NotImplementedError(f"{type(self).__name__} has no closed form")

    def _get_closed_form_lr(self) -> list:
        return [self.lr_at(base, self.last_epoch, i) for i, base in enumerate(self.base_lrs)]

    # --------------------------------------------------------------- steps
    def step(self) -> None:
        """Advance the schedule by one and set every group's ``"lr"``.

        Raises:
            ValueError: a computed rate is not a finite real number (nothing
                is changed).  Whatever ``lr_lambda`` raises, likewise.
        """
        self._step_count += 1
        try:
            self._update_lr(None)
        except BaseException:
            self._step_count -= 1
            raise

    def _update_lr(self, epoch) -> None:
        """One step: ``last_epoch += 1`` (or ``= epoch``, then the closed form
        where there is one), then set the rates; all or nothing."""
        previous = self.last_epoch
        self.last_epoch = previous + 1 if epoch is None else epoch
        try:
            if epoch is not None and type(self).lr_at is not LRScheduler.lr_at:
                values = self._get_closed_form_lr()
            else:
                values = self.get_lr()
            values = _check_lrs(type(self).__name__, "the new rates", values,
                                len(self.optimizer.param_groups))
        except BaseException:
            self.last_epoch = previous
            raise
        _set_lrs(self.optimizer, values)
        self._last_lr = _lrs(self.optimizer)

    def get_last_lr(self) -> list:
        """The learning rates set by the last ``step()`` (a list, one per group)."""
        return list(self._last_lr)

    # ------------------------------------------------------ save and resume
    def state_dict(self) -> dict:
        """The counters, base and last rates, and hyperparameters: plain Python
        numbers and lists, so :func:`minigrad.save` writes them as JSON.
        (LambdaLR's functions are not saved, as in PyTorch for plain functions.)"""
        state = {"last_epoch": self.last_epoch, "_step_count": self._step_count,
                 "base_lrs": list(self.base_lrs), "_last_lr": list(self._last_lr)}
        for name in self._hyper:
            value = getattr(self, name)
            state[name] = list(value) if isinstance(value, (list, tuple)) else value
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from :meth:`state_dict` (of the same kind of scheduler).

        Everything is checked before anything changes.  If the optimizer's
        state was loaded just before this scheduler was made (so that making
        it changed the loaded rates), the loaded rates are put back.

        Raises:
            TypeError: ``state_dict`` is not a dict.
            ValueError: its keys are not this scheduler's (a state of another
                kind of scheduler), or a value is out of range.
        """
        checked = self._check_state(state_dict)
        resume = self._resume_lrs()
        self._set_state(checked)
        if resume is not None:
            _set_lrs(self.optimizer, resume)
            self._last_lr = _lrs(self.optimizer)

    def _resume_lrs(self):
        """The optimizer's loaded rates when its state was loaded before this
        scheduler was made and it has not stepped (nor loaded again) since;
        else None.  Then making the scheduler may have changed the loaded
        rates (LinearLR multiplies by start_factor, LambdaLR sets base_lr *
        lr_lambda(0), ...), and loading the scheduler's state puts them back."""
        loaded = self._loaded_lrs
        if loaded is None or loaded is not getattr(self.optimizer, "_loaded_lrs", None):
            return None
        return list(loaded)

    def _check_keys(self, state_dict) -> str:
        """Raise unless ``state_dict`` is a dict with this scheduler's keys; returns
        the name to use in later errors."""
        name = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict):
            raise TypeError(f"{name}: expected a dict made by state_dict(), got "
                            f"{type(state_dict).__name__}")
        expected = set(self.state_dict())
        if set(state_dict) != expected:
            raise ValueError(f"{name}: not a state of {type(self).__name__} (keys "
                             f"{sorted(state_dict)}, expected {sorted(expected)}); was it "
                             "saved from another kind of scheduler?")
        return name

    def _check_state(self, state_dict) -> dict:
        name = self._check_keys(state_dict)
        n = len(self.optimizer.param_groups)
        checked = {"last_epoch": _check_int(name, "last_epoch", state_dict["last_epoch"], -1),
                   "_step_count": _check_int(name, "_step_count", state_dict["_step_count"], 0),
                   "base_lrs": _check_lrs(name, "base_lrs", state_dict["base_lrs"], n),
                   "_last_lr": _check_lrs(name, "_last_lr", state_dict["_last_lr"], n)}
        for key, check in self._hyper.items():
            checked[key] = check(state_dict[key])
        return checked

    def _set_state(self, checked: dict) -> None:
        for key, value in checked.items():
            setattr(self, key, value)

    def __repr__(self):
        return f"{type(self).__name__}(last_epoch={getattr(self, 'last_epoch', None)})"


# ----------------------------------------------------------------------- lambdas
def _lambdas(owner: str, optimizer, lr_lambda) -> list:
    n = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 0
    lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
    if isinstance(lr_lambda, (list, tuple)) and len(lambdas) != n:
        raise ValueError(f"{owner}: expected {n} lr_lambdas (one per parameter "
                         f"group), got {len(lambdas)}")
    for f in lambdas:
        if not callable(f):
            raise TypeError(f"{owner}: lr_lambda must be callable, got {f!r}")
    return lambdas


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(last_epoch)  (PyTorch's ``LambdaLR``).

    Not chainable (as in PyTorch): it sets the rate from ``base_lr``,
    overwriting what another scheduler did before it in the same step.

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
        self.lr_lambdas = _lambdas("LambdaLR", optimizer, lr_lambda)
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.lr_lambdas[group_index](epoch)


class MultiplicativeLR(LRScheduler):
    """lr <- lr * lr_lambda(last_epoch) at every step after the first
    (PyTorch's ``MultiplicativeLR``; chainable, no closed form).

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the step count returning a factor, or a list
            of such functions, one per parameter group.
    """

    def __init__(self, optimizer, lr_lambda):
        self.lr_lambdas = _lambdas("MultiplicativeLR", optimizer, lr_lambda)
        super().__init__(optimizer)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        return [group["lr"] * f(self.last_epoch)
                for f, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (last_epoch // step_size)  (PyTorch's ``StepLR``).

    Chainable: at every nonzero multiple of step_size the current rate is
    multiplied by gamma.

    Args:
        optimizer: the optimizer.
        step_size: period of the decay, an int >= 1.
        gamma: multiplicative factor, > 0 (default 0.1).
    """

    _hyper = {"step_size": lambda v: _check_int("StepLR", "step_size", v),
              "gamma": lambda v: check_number("StepLR", "gamma", v, low=0.0,
                                              low_inclusive=False)}

    def __init__(self, optimizer, step_size, gamma=0.1):
        self.step_size = self._hyper["step_size"](step_size)
        self.gamma = self._hyper["gamma"](gamma)
        super().__init__(optimizer)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def lr_at(self, base_lr, epoch, group_index):
        # BEGIN SOLUTION ch03.6
        return base_lr * self.gamma ** (epoch // self.step_size)
        # END SOLUTION


def _check_milestones(owner, milestones) -> list:
    if isinstance(milestones, (str, bytes)) or not hasattr(milestones, "__iter__"):
        raise TypeError(f"{owner}: milestones must be a list of ints, got {milestones!r}")
    values = [_check_int(owner, "milestones[i]", m, 0) for m in milestones]
    if values != sorted(values):
        raise ValueError(f"{owner}: milestones must be increasing, got {values}")
    return values


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (number of milestones <= last_epoch)
    (PyTorch's ``MultiStepLR``; chainable: at each milestone the current rate
    is multiplied by gamma, by gamma**n for a milestone listed n times).

    Args:
        optimizer: the optimizer.
        milestones: increasing step counts (ints >= 0).
        gamma: multiplicative factor, > 0 (default 0.1).
    """

    _hyper = {"milestones": lambda v: _check_milestones("MultiStepLR", v),
              "gamma": lambda v: check_number("MultiStepLR", "gamma", v, low=0.0,
                                              low_inclusive=False)}

    def __init__(self, optimizer, milestones, gamma=0.1):
        self.milestones = self._hyper["milestones"](milestones)
        self.gamma = self._hyper["gamma"](gamma)
        super().__init__(optimizer)

    def get_lr(self):
        n = self.milestones.count(self.last_epoch)
        if n == 0:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma ** n for group in self.optimizer.param_groups]

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for the first total_iters steps, then base_lr
    (PyTorch's ``ConstantLR``; chainable: multiplies the current rate by
    factor at step 0 and by 1 / factor at step total_iters).

    Args:
        optimizer: the optimizer.
        factor: in (0, 1] (default 1/3).
        total_iters: number of steps at the lower rate, an int >= 1 (default 5).
    """

    _hyper = {"factor": lambda v: check_number("ConstantLR", "factor", v, low=0.0,
                                               low_inclusive=False, high=1.0,
                                               high_inclusive=True),
              "total_iters": lambda v: _check_int("ConstantLR", "total_iters", v)}

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5):
        self.factor = self._hyper["factor"](factor)
        self.total_iters = self._hyper["total_iters"](total_iters)
        super().__init__(optimizer)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _lrs(self.optimizer)
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * (self.factor + (epoch >= self.total_iters) * (1 - self.factor))


class LinearLR(LRScheduler):
    """Linear warm-up: the factor goes linearly from start_factor to end_factor.

    lr = base_lr * (start_factor + (end_factor - start_factor)
                    * min(last_epoch, total_iters) / total_iters)

    PyTorch's ``LinearLR``, chainable: at step t (1 <= t <= total_iters) the
    current rate is multiplied by factor(t) / factor(t - 1).  With
    ``start_factor=0.01, end_factor=1.0, total_iters=W`` it is the usual
    warm-up of the first W updates (Goyal et al., 2017, "Accurate, Large
    Minibatch SGD", section 2.2), after which the rate stays at base_lr.

    Args:
        optimizer: the optimizer.
        start_factor: factor at step 0, in (0, 1] (default 1/3).
        end_factor: factor from step ``total_iters`` on, in [0, 1] (default 1).
        total_iters: number of steps of the ramp, an int >= 1 (default 5).
    """

    _hyper = {"start_factor": lambda v: check_number("LinearLR", "start_factor", v,
                                                     low=0.0, low_inclusive=False,
                                                     high=1.0, high_inclusive=True),
              "end_factor": lambda v: check_number("LinearLR", "end_factor", v, high=1.0,
                                                   high_inclusive=True),
              "total_iters": lambda v: _check_int("LinearLR", "total_iters", v)}

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        self.start_factor = self._hyper["start_factor"](start_factor)
        self.end_factor = self._hyper["end_factor"](end_factor)
        self.total_iters = self._hyper["total_iters"](total_iters)
        super().__init__(optimizer)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor
                               + (self.last_epoch - 1) * delta)
        return [group["lr"] * ratio for group in self.optimizer.param_groups]

    def lr_at(self, base_lr, epoch, group_index):
        # BEGIN SOLUTION ch03.8
        progress = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * progress)
        # END SOLUTION


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** last_epoch  (PyTorch's ``ExponentialLR``;
    chainable: every step multiplies the current rate by gamma).

    Args:
        optimizer: the optimizer.
        gamma: multiplicative factor per step, > 0.
    """

    _hyper = {"gamma": lambda v: check_number("ExponentialLR", "gamma", v, low=0.0,
                                              low_inclusive=False)}

    def __init__(self, optimizer, gamma):
        self.gamma = self._hyper["gamma"](gamma)
        super().__init__(optimizer)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.gamma ** epoch


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from base_lr down to eta_min over T_max steps.

    lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2

    Source: Loshchilov & Hutter, "SGDR: Stochastic Gradient Descent with Warm
    Restarts", ICLR 2017, eq. (5), without restarts (PyTorch's
    ``CosineAnnealingLR``).  Past T_max the cosine continues, so the rate rises
    again, as in PyTorch.  Chainable, as PyTorch computes it: each step maps
    the current rate through the ratio of two successive cosines,

        lr_t = eta_min + (lr_{t-1} - eta_min) * (1 + cos(pi t / T_max))
                                               / (1 + cos(pi (t - 1) / T_max)),

    with an additive step where the denominator would be 0 (t - 1 = T_max,
    3 T_max, ...).

    Args:
        optimizer: the optimizer.
        T_max: number of steps of the half cosine, an int >= 1.
        eta_min: the final learning rate, >= 0 (default 0).
    """

    _hyper = {"T_max": lambda v: _check_int("CosineAnnealingLR", "T_max", v),
              "eta_min": lambda v: check_number("CosineAnnealingLR", "eta_min", v)}

    def __init__(self, optimizer, T_max, eta_min=0.0):  # noqa: N803 (PyTorch's name)
        self.T_max = self._hyper["T_max"](T_max)
        self.eta_min = self._hyper["eta_min"](eta_min)
        super().__init__(optimizer)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        t, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._step_count == 1 and t > 0:
            return self._get_closed_form_lr()
        if (t - 1 - T) % (2 * T) == 0:
            return [group["lr"] + (base - eta_min) * (1 - math.cos(math.pi / T)) / 2
                    for base, group in zip(self.base_lrs, self.optimizer.param_groups)]
        return [(1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
                * (group["lr"] - eta_min) + eta_min for group in self.optimizer.param_groups]

    def lr_at(self, base_lr, epoch, group_index):
        # BEGIN SOLUTION ch03.7
        cosine = (1 + math.cos(math.pi * epoch / self.T_max)) / 2
        return self.eta_min + (base_lr - self.eta_min) * cosine
        # END SOLUTION


# -------------------------------------------------------------------- composites
def _check_children(owner: str, optimizer, schedulers) -> list:
    schedulers = list(schedulers) if isinstance(schedulers, (list, tuple)) else schedulers
    if not isinstance(schedulers, list) or not schedulers:
        raise ValueError(f"{owner}: expected a non-empty list of schedulers, got "
                         f"{schedulers!r}")
    for i, s in enumerate(schedulers):
        if not isinstance(s, LRScheduler):
            raise TypeError(f"{owner}: scheduler {i} is a {type(s).__name__}, expected an "
                            "LRScheduler")
        if s.optimizer is not optimizer:
            raise ValueError(f"{owner}: scheduler {i} ({type(s).__name__}) belongs to "
                             "another optimizer; all must share one")
    return schedulers


class _Composite(LRScheduler):
    """Shared by SequentialLR and ChainedScheduler: the children's states are
    saved under ``"_schedulers"``; a failing step or load restores them all."""

    _schedulers: list

    def state_dict(self):
        state = {"_last_lr": list(self._last_lr)}
        state.update(self._own_state())
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def _own_state(self) -> dict:
        return {}

    def _check_state(self, state_dict) -> dict:
        name = self._check_keys(state_dict)
        children = state_dict["_schedulers"]
        if not isinstance(children, list) or len(children) != len(self._schedulers):
            raise ValueError(f"{name}: the state holds {len(children)} schedulers, this "
                             f"one has {len(self._schedulers)}")
        checked = {"_last_lr": _check_lrs(name, "_last_lr", state_dict["_last_lr"],
                                          len(self.optimizer.param_groups)),
                   "_schedulers": [s._check_state(c)
                                   for s, c in zip(self._schedulers, children)]}
        checked.update(self._check_own(name, state_dict))
        return checked

    def _check_own(self, name, state_dict) -> dict:
        return {}

    def _set_state(self, checked):
        for s, c in zip(self._schedulers, checked["_schedulers"]):
            s._set_state(c)
        for key, value in checked.items():
            if key != "_schedulers":
                setattr(self, key, value)

    def _transaction(self, action) -> None:
        """Run ``action()``; if it raises, put every child and the rates back."""
        saved = [s._check_state(s.state_dict()) for s in self._schedulers]
        own = {k: v for k, v in self._check_state(self.state_dict()).items()
               if k != "_schedulers"}
        lrs = _lrs(self.optimizer)
        try:
            action()
        except BaseException:
            self._set_state({**own, "_schedulers": saved})
            _set_lrs(self.optimizer, lrs)
            raise


def _undo_initial_step(scheduler) -> None:
    """Take back the step that making ``scheduler`` did (PyTorch's recursive_undo)."""
    if isinstance(scheduler, _Composite):
        for child in scheduler._schedulers:
            _undo_initial_step(child)
    else:
        scheduler.last_epoch -= 1


class SequentialLR(_Composite):
    """Run one scheduler after another, switching at the milestones
    (PyTorch's ``SequentialLR``).

    Steps 0 ... milestones[0] - 1 follow ``schedulers[0]``, and so on; at a
    milestone the next scheduler starts from its step 0 (in closed form, from
    ``base_lr``, where it has one).  Typical: a LinearLR warm-up then a
    CosineAnnealingLR.

    Args:
        optimizer: the optimizer all the schedulers belong to.
        schedulers: a list of schedulers of ``optimizer``.
        milestones: ``len(schedulers) - 1`` increasing step counts.

    Raises:
        ValueError: no scheduler, a scheduler of another optimizer, or the
            wrong number of milestones.  TypeError: not a scheduler.
    """

    def __init__(self, optimizer, schedulers, milestones):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"SequentialLR: expected a minigrad Optimizer, got "
                            f"{type(optimizer).__name__}")
        schedulers = _check_children("SequentialLR", optimizer, schedulers)
        milestones = _check_milestones("SequentialLR", milestones)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expected {len(schedulers) - 1} milestones "
                             f"(one fewer than the schedulers), got {len(milestones)}")
        for i, s in enumerate(schedulers[1:], 1):
            if isinstance(s, _Composite):
                raise ValueError(f"SequentialLR: scheduler {i} is a {type(s).__name__}, "
                                 "which cannot restart at a milestone; put it first (PyTorch "
                                 "fails there too)")
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = 0
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self._loaded_lrs = schedulers[0]._loaded_lrs
        _set_lrs(optimizer, self.base_lrs)       # undo what making the children did
        for s in schedulers:
            _undo_initial_step(s)
        first = schedulers[bisect.bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        """Step the scheduler of the current phase (restart the next one at a
        milestone) and set every group's ``"lr"``."""
        def action():
            self.last_epoch += 1
            idx = bisect.bisect_right(self._milestones, self.last_epoch)
            scheduler = self._schedulers[idx]
            if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
                scheduler._update_lr(0)
            else:
                scheduler.step()
            self._last_lr = scheduler.get_last_lr()
        self._transaction(action)

    def _own_state(self):
        return {"last_epoch": self.last_epoch, "_milestones": list(self._milestones)}

    def _check_own(self, name, state_dict):
        return {"last_epoch": _check_int(name, "last_epoch", state_dict["last_epoch"], 0),
                "_milestones": _check_milestones(name, state_dict["_milestones"])}


class ChainedScheduler(_Composite):
    """Step several schedulers together, one after the other, in one ``step()``
    (PyTorch's ``ChainedScheduler``).  Their factors multiply, because every
    scheduler but LambdaLR is chainable.

    Args:
        schedulers: a list of schedulers of one optimizer.
        optimizer: that optimizer (default: the first scheduler's).

    Raises:
        ValueError: no scheduler, or schedulers of different optimizers.
        TypeError: not a scheduler.
    """

    def __init__(self, schedulers, optimizer=None):
        if isinstance(schedulers, (list, tuple)) and schedulers and optimizer is None:
            optimizer = getattr(schedulers[0], "optimizer", None)
        self._schedulers = _check_children("ChainedScheduler", optimizer, schedulers)
        self.optimizer = optimizer
        self._loaded_lrs = self._schedulers[0]._loaded_lrs
        self._last_lr = _lrs(optimizer)

    def step(self) -> None:
        """Step every scheduler in order and set every group's ``"lr"``."""
        def action():
            for s in self._schedulers:
                s.step()
            self._last_lr = _lrs(self.optimizer)
        self._transaction(action)


# ------------------------------------------------- a step taken ahead, undone
def restore_state(scheduler, state) -> None:
    """Put back a state saved by ``scheduler.state_dict()`` a moment ago, as it
    was (``load_state_dict`` would also put back rates loaded into the
    optimizer before the scheduler was made, see :meth:`LRScheduler._resume_lrs`)."""
    if isinstance(scheduler, LRScheduler):
        scheduler._set_state(scheduler._check_state(state))
    else:
        scheduler.load_state_dict(state)


class step_ahead:
    """Step ``scheduler`` first; undo it on exit unless :meth:`commit` was called.

    :class:`~minigrad.optim.GradientAccumulator` steps its scheduler *before*
    the optimizer, so that a scheduler that raises (an ``lr_lambda``, a bad
    rate) does so while nothing has changed.  On entry the scheduler steps
    and the groups get their current rates back, for the optimizer's step
    inside the block; ``commit()`` hands them the new rates; a block left
    without it (a skipped window, an exception) puts the scheduler's state and
    the rates back.  Without a scheduler (None) it does nothing.
    """

    def __init__(self, optimizer, scheduler):
        self.optimizer, self.scheduler = optimizer, scheduler
        self.committed = False

    def __enter__(self):
        if self.scheduler is not None:
            self.before = self.scheduler.state_dict()
            self.rates = _lrs(self.optimizer)
            self.scheduler.step()                 # all or nothing
            self.new_rates = _lrs(self.optimizer)
            _set_lrs(self.optimizer, self.rates)
        return self

    def commit(self) -> None:
        self.committed = True

    def __exit__(self, *exc):
        if self.scheduler is not None and self.committed:
            _set_lrs(self.optimizer, self.new_rates)
        elif self.scheduler is not None:
            restore_state(self.scheduler, self.before)
            _set_lrs(self.optimizer, self.rates)
        return False
