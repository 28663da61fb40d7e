"""Exercises of chapter 3 (optimizers): steps on hand-set gradients."""
import math

import numpy as np
import pytest

import minigrad
from minigrad.optim import SGD, Adam, AdamW, clip_grad_norm_
from minigrad.optim.lr_scheduler import CosineAnnealingLR, LinearLR, StepLR

from .check import assert_close

P0 = np.array([1.0, -2.0, 0.5])
G1 = np.array([0.5, 0.25, -1.0])
G2 = np.array([-0.5, 1.0, 2.0])


def _param(values=P0):
    return minigrad.tensor(np.array(values, dtype=np.float64), requires_grad=True)


def _set_grad(p, g):
    p.grad = minigrad.tensor(np.array(g, dtype=np.float64))


def _run(optimizer_class, grads, **kwargs):
    p = _param()
    opt = optimizer_class([p], **kwargs)
    for g in grads:
        _set_grad(p, g)
        opt.step()
    return p.numpy()


@pytest.mark.exercise("3.1")
def test_sgd_plain_step():
    assert_close(_run(SGD, [G1], lr=0.1), P0 - 0.1 * G1, "SGD(lr=0.1) after one step",
                 [(P0 + 0.1 * G1, "step against the gradient: p ← p - lr·g")])


@pytest.mark.exercise("3.1")
def test_sgd_weight_decay_adds_to_the_gradient():
    assert_close(_run(SGD, [G1], lr=0.1, weight_decay=0.01), P0 - 0.1 * (G1 + 0.01 * P0),
                 "SGD(lr=0.1, weight_decay=0.01) after one step",
                 [(P0 - 0.1 * G1, "weight_decay adds weight_decay·p to the gradient")])


@pytest.mark.exercise("3.2")
@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum(nesterov):
    m, lr = 0.9, 0.1
    buf = G1.copy()                              # PyTorch: the first buffer is g itself
    p1 = P0 - lr * (G1 + m * buf if nesterov else buf)
    buf = m * buf + G2
    p2 = p1 - lr * (G2 + m * buf if nesterov else buf)
    plain = P0 - lr * G1 - lr * G2
    assert_close(_run(SGD, [G1, G2], lr=lr, momentum=m, nesterov=nesterov), p2,
                 f"SGD(momentum=0.9, nesterov={nesterov}) after two steps",
                 [(plain, "momentum is ignored: keep a buffer b ← m·b + g per parameter"),
                  (P0 - lr * ((1 - m) * G1) - lr * (m * (1 - m) * G1 + (1 - m) * G2),
                   "PyTorch's buffer is b ← m·b + g (no 1 - m factor; the first b is g)")])


@pytest.mark.exercise("3.2")
def test_sgd_dampening_spares_the_first_buffer():
    m, d, lr = 0.9, 0.5, 0.1
    buf = G1.copy()                              # PyTorch: b₁ = g₁, undamped
    p1 = P0 - lr * buf
    buf = m * buf + (1 - d) * G2                 # then b ← m·b + (1 - d)·g
    p2 = p1 - lr * buf
    damped = P0 - lr * (1 - d) * G1
    damped = damped - lr * (m * (1 - d) * G1 + (1 - d) * G2)
    assert_close(_run(SGD, [G1, G2], lr=lr, momentum=m, dampening=d), p2,
                 "SGD(momentum=0.9, dampening=0.5) after two steps",
                 [(damped, "the first buffer is g itself: dampening applies from the "
                           "second step on (b ← m·b + (1 - dampening)·g)"),
                  (P0 - lr * G1 - lr * (m * G1 + G2), "dampening is ignored")])


def _adam_reference(grads, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, decoupled=0.0, l2=0.0,
                    bias_correction=True):
    p, m, v = P0.copy(), 0 * P0, 0 * P0
    for t, g in enumerate(grads, start=1):
        p = p * (1 - lr * decoupled)
        g = g + l2 * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        mh = m / (1 - betas[0] ** t) if bias_correction else m
        vh = v / (1 - betas[1] ** t) if bias_correction else v
        p = p - lr * mh / (np.sqrt(vh) + eps)
    return p


@pytest.mark.exercise("3.3")
def test_adam_moments_and_bias_correction():
    assert_close(_run(Adam, [G1, G2], lr=1e-2), _adam_reference([G1, G2]),
                 "Adam(lr=0.01) after two steps",
                 [(_adam_reference([G1, G2], bias_correction=False),
                   "divide the moments by 1 - β^t (bias correction): they start at 0")],
                 rtol=1e-6)


@pytest.mark.exercise("3.4")
def test_adamw_decays_the_weights_directly():
    assert_close(_run(AdamW, [G1, G2], lr=1e-2, weight_decay=0.1),
                 _adam_reference([G1, G2], decoupled=0.1),
                 "AdamW(lr=0.01, weight_decay=0.1) after two steps",
                 [(_adam_reference([G1, G2], l2=0.1), "that is Adam's L2 penalty in the "
                   "gradient; AdamW shrinks the weights, p ← p·(1 - lr·wd), before the step")],
                 rtol=1e-6)


@pytest.mark.exercise("3.5")
def test_clip_grad_norm_scales_all_gradients_together():
    a, b = _param([0.0, 0.0]), _param([0.0])
    _set_grad(a, [3.0, 4.0])
    _set_grad(b, [12.0])
    total = clip_grad_norm_([a, b], max_norm=6.5)
    assert total == pytest.approx(13.0), \
        f"the global norm of [3, 4] and [12] is 13 (sqrt of the sum of all squares), got " \
        f"{total}" + (": that is the largest per-parameter norm" if total == pytest.approx(12)
                      else "")
    scale = 6.5 / (13.0 + 1e-6)
    assert_close(a.grad, [3 * scale, 4 * scale], "the first gradient after clipping",
                 [(np.array([3.0, 4.0]), "scale every gradient by max_norm / (total + 1e-6)")])
    assert_close(b.grad, [12 * scale], "the second gradient after clipping")


@pytest.mark.exercise("3.5")
def test_clip_grad_norm_leaves_small_gradients_and_takes_inf_norm():
    a = _param([0.0, 0.0])
    _set_grad(a, [0.3, -0.4])
    assert clip_grad_norm_([a], max_norm=1.0) == pytest.approx(0.5)
    assert_close(a.grad, [0.3, -0.4], "a gradient below max_norm (left alone: factor ≤ 1)")
    assert clip_grad_norm_([a], max_norm=1.0, norm_type=math.inf) == pytest.approx(0.4), \
        "the inf-norm is the largest |g|"


def _lrs(scheduler_class, steps, **kwargs):
    """The closed form ``lr_at(1.0, t, 0)`` for t = 0..steps: the rate a group
    with base rate 1 has after t steps (stepping sets the same rates; the
    scheduler tests of tests/optim check that)."""
    sched = scheduler_class(SGD([_param()], lr=1.0), **kwargs)
    return np.array([sched.lr_at(1.0, t, 0) for t in range(steps + 1)], dtype=float)


@pytest.mark.exercise("3.6")
def test_step_lr():
    assert_close(_lrs(StepLR, 5, step_size=2, gamma=0.5), [1, 1, 0.5, 0.5, 0.25, 0.25],
                 "StepLR(step_size=2, gamma=0.5) rates for steps 0..5",
                 [(np.array([1, 0.5, 0.25, 0.125, 0.0625, 0.03125]),
                   "decay once every step_size steps: gamma ** (epoch // step_size)")])


@pytest.mark.exercise("3.7")
def test_cosine_annealing_lr():
    expected = 0.1 + 0.9 * (1 + np.cos(np.pi * np.arange(5) / 4)) / 2
    assert_close(_lrs(CosineAnnealingLR, 4, T_max=4, eta_min=0.1), expected,
                 "CosineAnnealingLR(T_max=4, eta_min=0.1) rates for steps 0..4",
                 [((1 + np.cos(np.pi * np.arange(5) / 4)) / 2, "the cosine goes from base_lr "
                   "down to eta_min: eta_min + (base - eta_min)·(1 + cos(π t / T))/2")])


@pytest.mark.exercise("3.8")
def test_linear_lr_warm_up():
    assert_close(_lrs(LinearLR, 5, start_factor=0.25, end_factor=1.0, total_iters=3),
                 [0.25, 0.5, 0.75, 1.0, 1.0, 1.0],
                 "LinearLR(start_factor=0.25, total_iters=3) rates for steps 0..5",
                 [(np.array([0.25, 0.5, 0.75, 1.0, 1.25, 1.5]),
                   "after total_iters steps the factor stays at end_factor")])


@pytest.mark.exercise("3.6")
def test_step_lr_scales_the_base_rate_given():
    sched = StepLR(SGD([_param()], lr=1.0), step_size=2, gamma=0.5)
    got = [sched.lr_at(0.3, t, 0) for t in range(5)]
    assert_close(got, [0.3, 0.3, 0.15, 0.15, 0.075],
                 "StepLR.lr_at(0.3, t, 0) for t = 0..4 (a group whose base rate is 0.3)",
                 [(np.array([1, 1, 0.5, 0.5, 0.25]), "multiply the factor by base_lr, the "
                   "argument (not the first group's base rate, nor 1)")])


@pytest.mark.exercise("3.7")
def test_cosine_annealing_base_rate_and_past_t_max():
    sched = CosineAnnealingLR(SGD([_param()], lr=1.0), T_max=4, eta_min=0.1)
    t = np.arange(9)
    got = [sched.lr_at(0.5, int(i), 0) for i in t]
    expected = 0.1 + 0.4 * (1 + np.cos(np.pi * t / 4)) / 2
    assert_close(got, expected,
                 "CosineAnnealingLR(T_max=4, eta_min=0.1).lr_at(0.5, t, 0) for t = 0..8",
                 [(0.1 + 0.9 * (1 + np.cos(np.pi * t / 4)) / 2,
                   "anneal from base_lr, the argument, not from 1"),
                  (0.1 + 0.4 * (1 + np.cos(np.pi * np.minimum(t, 4) / 4)) / 2,
                   "past T_max the cosine continues (the rate rises again, as in PyTorch); "
                   "do not clamp the epoch at T_max")])


@pytest.mark.exercise("3.8")
def test_linear_lr_end_factor_and_base_rate():
    sched = LinearLR(SGD([_param()], lr=1.0), start_factor=0.5, end_factor=0.25,
                     total_iters=2)
    got = [sched.lr_at(0.2, t, 0) for t in range(4)]
    assert_close(got, [0.1, 0.075, 0.05, 0.05],
                 "LinearLR(start_factor=0.5, end_factor=0.25, total_iters=2)"
                 ".lr_at(0.2, t, 0) for t = 0..3",
                 [(np.array([0.1, 0.15, 0.2, 0.2]), "the factor goes to end_factor, not 1"),
                  (np.array([0.5, 0.375, 0.25, 0.25]), "multiply the factor by base_lr, "
                   "the argument")])


@pytest.mark.exercise("3.9")
def test_zero_grad():
    a, b, c = _param(), _param(), _param()
    _set_grad(a, G1)
    _set_grad(b, G2)
    SGD([a, b, c], lr=0.1).zero_grad()
    assert a.grad is None and b.grad is None, \
        "zero_grad() (set_to_none=True, PyTorch's default) sets every .grad to None"
    _set_grad(a, G1)
    held = a.grad.data
    SGD([a, c], lr=0.1).zero_grad(set_to_none=False)
    assert a.grad is not None and a.grad.data is held, \
        "zero_grad(set_to_none=False) fills the existing gradient array with zeros in place"
    assert_close(a.grad, np.zeros(3), "the gradient after zero_grad(set_to_none=False)")


@pytest.mark.exercise("3.5")
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_with_an_empty_gradient(norm_type):
    empty, a = _param([]), _param([0.0, 0.0])
    _set_grad(empty, [])
    _set_grad(a, [3.0, -4.0])
    expected = {2.0: 5.0, 1.0: 7.0, math.inf: 4.0}[norm_type]
    try:
        total = clip_grad_norm_([empty, a], max_norm=100.0, norm_type=norm_type)
    except ValueError as e:
        pytest.fail(f"clip_grad_norm_(norm_type={norm_type}) with an empty gradient raised "
                    f"ValueError: {e}; an empty gradient adds nothing to the norm (skip "
                    "it: the max of no entries does not exist)", pytrace=False)
    assert total == pytest.approx(expected), \
        f"the {norm_type}-norm of [] and [3, -4] is {expected}, got {total}"
    other = _param([])
    _set_grad(other, [])
    assert clip_grad_norm_([empty, other], max_norm=1.0, norm_type=norm_type) == 0.0, \
        "the norm of gradients that are all empty is 0.0"
