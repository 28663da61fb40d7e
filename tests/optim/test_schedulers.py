"""Learning-rate schedulers: values by hand, parity with torch, resume, validation."""
import math

import numpy as np
import pytest

import minigrad
from minigrad.optim import SGD, lr_scheduler


def _optimizer(lrs=(0.1,)):
    groups = [dict(params=[minigrad.tensor([1.0], requires_grad=True)], lr=lr) for lr in lrs]
    return SGD(groups, lr=1.0)


def _trace(scheduler, steps):
    """The learning rates of the first group at steps 0 ... steps-1."""
    lrs = []
    for _ in range(steps):
        lrs.append(scheduler.optimizer.param_groups[0]["lr"])
        scheduler.optimizer.step()
        scheduler.step()
    return lrs


def test_step_lr_by_hand():
    sched = lr_scheduler.StepLR(_optimizer(), step_size=3, gamma=0.5)
    np.testing.assert_allclose(_trace(sched, 8),
                               [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025], rtol=1e-15)
    assert sched.last_epoch == 8


def test_cosine_by_hand():
    sched = lr_scheduler.CosineAnnealingLR(_optimizer([1.0]), T_max=4, eta_min=0.2)
    expected = [0.2 + 0.8 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(9)]
    np.testing.assert_allclose(_trace(sched, 9), expected, rtol=1e-15)
    assert expected[4] == pytest.approx(0.2) and expected[8] == pytest.approx(1.0)


def test_linear_warmup_by_hand():
    sched = lr_scheduler.LinearLR(_optimizer([1.0]), start_factor=0.25, total_iters=3)
    np.testing.assert_allclose(_trace(sched, 6), [0.25, 0.5, 0.75, 1.0, 1.0, 1.0],
                               rtol=1e-15)


def test_lambda_lr_per_group():
    opt = _optimizer([1.0, 2.0])
    sched = lr_scheduler.LambdaLR(opt, [lambda t: 0.5 ** t, lambda t: t + 1])
    for _ in range(3):
        opt.step()
        sched.step()
    assert sched.get_last_lr() == [0.125, 8.0]
    assert [g["lr"] for g in opt.param_groups] == [0.125, 8.0]
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 2.0]


def test_the_scheduler_sets_the_rate_the_optimizer_uses(float64):
    w = minigrad.tensor([0.0], requires_grad=True)
    opt = SGD([w], lr=1.0)
    sched = lr_scheduler.LambdaLR(opt, lambda t: 10.0 ** -t)
    for _ in range(3):
        w.grad = minigrad.tensor([1.0])
        opt.step()
        sched.step()
    np.testing.assert_allclose(w.numpy(), [-1.11], rtol=1e-15)


SCHEDULES = [
    ("StepLR", dict(step_size=4, gamma=0.3)),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.001)),
    ("CosineAnnealingLR", dict(T_max=7)),
    ("LinearLR", dict(start_factor=0.1, end_factor=1.0, total_iters=6)),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.2, total_iters=10)),
]


@pytest.mark.parametrize("name, options", SCHEDULES)
def test_parity_with_torch(torch, name, options):
    ours = getattr(lr_scheduler, name)(_optimizer([0.1, 0.03]), **options)
    t_params = [dict(params=[torch.zeros(1, requires_grad=True)], lr=lr) for lr in (0.1, 0.03)]
    t_opt = torch.optim.SGD(t_params, lr=1.0)
    theirs = getattr(torch.optim.lr_scheduler, name)(t_opt, **options)
    for _ in range(25):
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12)
        ours.optimizer.step()
        ours.step()
        t_opt.step()
        theirs.step()


def test_lambda_parity_with_torch(torch):
    fn = lambda t: 1.0 / (1.0 + t) ** 0.5  # noqa: E731
    ours = lr_scheduler.LambdaLR(_optimizer([0.5]), fn)
    t_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    theirs = torch.optim.lr_scheduler.LambdaLR(t_opt, fn)
    for _ in range(10):
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-15)
        t_opt.step()
        ours.step()
        theirs.step()


@pytest.mark.parametrize("name, options", SCHEDULES)
def test_state_dict_resumes_exactly(name, options):
    cls = getattr(lr_scheduler, name)
    reference = _trace(cls(_optimizer(), **options), 20)
    opt = _optimizer()
    sched = cls(opt, **options)
    first = _trace(sched, 8)
    saved_opt, saved_sched = opt.state_dict(), sched.state_dict()
    _trace(sched, 3)                                 # the saved copies must not move
    opt2 = _optimizer()
    sched2 = cls(opt2, **options)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    assert sched2.last_epoch == 8
    assert first + _trace(sched2, 12) == reference


@pytest.mark.parametrize("make, error, text", [
    (lambda o: lr_scheduler.StepLR(o, step_size=0), ValueError, "step_size must be >= 1"),
    (lambda o: lr_scheduler.StepLR(o, step_size=2.5), TypeError, "step_size must be an int"),
    (lambda o: lr_scheduler.StepLR(o, step_size=2, gamma=0), ValueError, "gamma must be > 0"),
    (lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=0), ValueError, "T_max"),
    (lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=3, eta_min=-1), ValueError,
     "eta_min"),
    (lambda o: lr_scheduler.LinearLR(o, start_factor=0), ValueError, "start_factor must be > 0"),
    (lambda o: lr_scheduler.LinearLR(o, end_factor=1.5), ValueError, "end_factor"),
    (lambda o: lr_scheduler.LinearLR(o, total_iters=0), ValueError, "total_iters"),
    (lambda o: lr_scheduler.LambdaLR(o, 0.5), TypeError, "callable"),
    (lambda o: lr_scheduler.LambdaLR(o, [abs, abs]), ValueError, "expected 1 lr_lambdas"),
    (lambda o: lr_scheduler.StepLR("sgd", step_size=2), TypeError, "minigrad Optimizer"),
])
def test_bad_arguments(make, error, text):
    with pytest.raises(error, match=text):
        make(_optimizer())
