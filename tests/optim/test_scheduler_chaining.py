"""Schedulers chain as PyTorch's do, resume in any order, and never half-step."""
import numpy as np
import pytest

import minigrad
from minigrad.optim import SGD, Adam, lr_scheduler as L

STEPS = 25


def _optimizer(lrs=(1.0,)):
    groups = [dict(params=[minigrad.tensor([1.0], requires_grad=True)], lr=lr) for lr in lrs]
    return SGD(groups, lr=1.0)


def _torch_optimizer(torch, lrs=(1.0,)):
    groups = [dict(params=[torch.zeros(1, requires_grad=True)], lr=lr) for lr in lrs]
    return torch.optim.SGD(groups, lr=1.0)


# Each case: a function (module, optimizer) -> the object whose step() is called
# (a scheduler, or a list of schedulers stepped one after the other).  The same
# function builds minigrad's and PyTorch's, so the two are built alike.
CASES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 11], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=4),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, total_iters=6),
    "LinearLR-down": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.2,
                                             total_iters=10),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "CosineAnnealingLR-past-T_max": lambda m, o: m.CosineAnnealingLR(o, T_max=4),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda t: 1.0 / (1.0 + t) ** 0.5),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda t: 0.95),
    # two schedulers stepped together on one optimizer (the factors multiply)
    "LinearLR+StepLR": lambda m, o: [m.LinearLR(o, start_factor=0.25, total_iters=3),
                                     m.StepLR(o, 2, 0.5)],
    "StepLR+LinearLR": lambda m, o: [m.StepLR(o, 2, 0.5),
                                     m.LinearLR(o, start_factor=0.25, total_iters=3)],
    "Cosine+ExponentialLR": lambda m, o: [m.CosineAnnealingLR(o, T_max=6),
                                          m.ExponentialLR(o, gamma=0.97)],
    "ConstantLR+MultiStepLR": lambda m, o: [m.ConstantLR(o, factor=0.5, total_iters=3),
                                            m.MultiStepLR(o, [2, 4], gamma=0.1)],
    "LambdaLR+StepLR": lambda m, o: [m.LambdaLR(o, lambda t: 0.9 ** t), m.StepLR(o, 3)],
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.LinearLR(o, start_factor=0.25, total_iters=3), m.StepLR(o, 2, 0.5)]),
    "ChainedScheduler-3": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=2), m.ExponentialLR(o, gamma=0.9),
         m.CosineAnnealingLR(o, T_max=9)]),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=4),
            m.CosineAnnealingLR(o, T_max=10, eta_min=0.05)], milestones=[5]),
    "SequentialLR-3": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.2, total_iters=3), m.ExponentialLR(o, gamma=0.8),
            m.StepLR(o, step_size=2, gamma=0.5)], milestones=[4, 9]),
    "SequentialLR-of-chained": lambda m, o: m.SequentialLR(
        o, [m.ChainedScheduler([m.LinearLR(o, start_factor=0.5, total_iters=2),
                                m.StepLR(o, 3, 0.5)]),
            m.ExponentialLR(o, gamma=0.9)], milestones=[5]),
}


def _steppers(built):
    return built if isinstance(built, list) else [built]


def _trace(optimizer, built, steps=STEPS):
    """Every group's lr at steps 0 ... steps-1 (optimizer.step before scheduler.step)."""
    lrs = []
    for _ in range(steps):
        lrs.append([g["lr"] for g in optimizer.param_groups])
        optimizer.step()
        for s in _steppers(built):
            s.step()
    return lrs


def test_the_example_matches_pytorch_exactly():
    opt = _optimizer()
    warmup = L.LinearLR(opt, start_factor=0.25, total_iters=3)
    decay = L.StepLR(opt, 2, 0.5)
    lrs = []
    for _ in range(7):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        warmup.step()
        decay.step()
    assert lrs == [0.25, 0.5, 0.375, 0.5, 0.25, 0.25, 0.125]
    assert decay.get_last_lr() == [0.125]


@pytest.mark.filterwarnings("ignore:Detected call of:UserWarning")
@pytest.mark.parametrize("case", sorted(CASES))
def test_parity_with_torch(torch, case):
    ours_opt = _optimizer((0.1, 0.03))
    ours = CASES[case](L, ours_opt)
    their_opt = _torch_optimizer(torch, (0.1, 0.03))
    theirs = CASES[case](torch.optim.lr_scheduler, their_opt)
    ours_trace = _trace(ours_opt, ours)
    their_trace = _trace(their_opt, theirs)
    np.testing.assert_allclose(ours_trace, their_trace, rtol=1e-14, atol=0)
    for a, b in zip(_steppers(ours), _steppers(theirs)):
        np.testing.assert_allclose(a.get_last_lr(), b.get_last_lr(), rtol=1e-14)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
                                  "ExponentialLR", "CosineAnnealingLR"])
def test_closed_form_agrees_with_the_recursion(name):
    opt = _optimizer((0.1,))
    sched = CASES[name](L, opt)
    recursive = [lr[0] for lr in _trace(opt, sched, 30)]
    closed = [sched.lr_at(0.1, t, 0) for t in range(30)]
    np.testing.assert_allclose(recursive, closed, rtol=1e-12)


# ----------------------------------------------------------------------- resuming
ORDERS = ["scheduler, optimizer state, scheduler state",
          "optimizer state, scheduler, scheduler state",
          "scheduler, scheduler state, optimizer state"]


def _save_state(built):
    return [s.state_dict() for s in _steppers(built)]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_resume_in_any_order_gives_the_uninterrupted_rates(case, order):
    reference_opt = _optimizer((0.1, 0.03))
    reference = _trace(reference_opt, CASES[case](L, reference_opt), 24)
    opt = _optimizer((0.1, 0.03))
    built = CASES[case](L, opt)
    first = _trace(opt, built, 9)
    saved_opt, saved_sched = opt.state_dict(), _save_state(built)
    _trace(opt, built, 2)                          # the saved copies must not move

    opt2 = _optimizer((0.1, 0.03))
    if order == ORDERS[0]:
        built2 = CASES[case](L, opt2)
        opt2.load_state_dict(saved_opt)
        for s, state in zip(_steppers(built2), saved_sched):
            s.load_state_dict(state)
    elif order == ORDERS[1]:
        opt2.load_state_dict(saved_opt)
        built2 = CASES[case](L, opt2)
        for s, state in zip(_steppers(built2), saved_sched):
            s.load_state_dict(state)
    else:
        built2 = CASES[case](L, opt2)
        for s, state in zip(_steppers(built2), saved_sched):
            s.load_state_dict(state)
        opt2.load_state_dict(saved_opt)
    assert first + _trace(opt2, built2, 15) == reference


def test_the_restore_example():
    # CosineAnnealingLR(T_max=10) restored after 4 updates: 0.6545084972, not 1.0.
    opt = _optimizer()
    sched = L.CosineAnnealingLR(opt, T_max=10)
    _trace(opt, sched, 4)
    opt2 = _optimizer()
    opt2.load_state_dict(opt.state_dict())
    sched2 = L.CosineAnnealingLR(opt2, T_max=10)
    sched2.load_state_dict(sched.state_dict())
    assert opt2.param_groups[0]["lr"] == pytest.approx(0.6545084972, abs=1e-10)
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert opt2.param_groups[0]["initial_lr"] == 1.0 and sched2.last_epoch == 4
    w = opt2.param_groups[0]["params"][0]                # the next update uses it
    before = w.numpy().copy()
    w.grad = minigrad.ones_like(w)
    opt2.step()
    np.testing.assert_allclose(before - w.numpy(), [0.6545084972], rtol=1e-6)


def test_initial_lr_is_kept_in_the_groups_as_pytorch_does(torch):
    opt = _optimizer((0.5,))
    L.StepLR(opt, 2)
    t_opt = _torch_optimizer(torch, (0.5,))
    torch.optim.lr_scheduler.StepLR(t_opt, 2)
    assert opt.param_groups[0]["initial_lr"] == t_opt.param_groups[0]["initial_lr"] == 0.5
    assert opt.state_dict()["param_groups"][0]["initial_lr"] == 0.5


def test_state_dict_is_plain_python():
    opt = _optimizer()
    sched = CASES["SequentialLR-of-chained"](L, opt)
    _trace(opt, sched, 5)
    import json
    text = json.dumps(sched.state_dict())
    assert json.loads(text) == sched.state_dict()


# ------------------------------------------------------------------ all or nothing
class Boom(Exception):
    pass


def _raising_at(bad_epoch):
    def factor(t):
        if t == bad_epoch:
            raise Boom(f"no factor at {t}")
        return 0.9 ** t
    return factor


def _snapshot(opt, scheds):
    return ([dict((k, v) for k, v in g.items() if k != "params") for g in opt.param_groups],
            [s.state_dict() for s in scheds])


@pytest.mark.parametrize("make", [
    lambda o: [L.LambdaLR(o, _raising_at(3))],
    lambda o: [L.MultiplicativeLR(o, _raising_at(3))],
    lambda o: [L.ChainedScheduler([L.StepLR(o, 1, 0.5), L.LambdaLR(o, _raising_at(3))])],
    lambda o: [L.SequentialLR(o, [L.StepLR(o, 1, 0.5), L.MultiplicativeLR(o, _raising_at(1))],
                              milestones=[2])],
])
def test_a_failing_step_changes_nothing(make):
    opt = _optimizer((0.1, 0.2))
    scheds = make(opt)
    failed = False
    for _ in range(6):
        before = _snapshot(opt, scheds)
        try:
            for s in scheds:
                s.step()
        except Boom:
            failed = True
            assert _snapshot(opt, scheds) == before
            break
    assert failed


def test_a_step_to_a_nonfinite_rate_raises_and_changes_nothing():
    opt = _optimizer()
    sched = L.LambdaLR(opt, lambda t: float("nan") if t == 2 else 1.0)
    opt.step()
    sched.step()
    before = _snapshot(opt, [sched])
    with pytest.raises(ValueError, match="finite"):
        sched.step()
    assert _snapshot(opt, [sched]) == before


@pytest.mark.parametrize("state, error, text", [
    (lambda s: "nope", TypeError, "expected a dict"),
    (lambda s: {**s, "extra": 1}, ValueError, "not a state of StepLR"),
    (lambda s: L.CosineAnnealingLR(_optimizer(), T_max=3).state_dict(), ValueError,
     "another kind of scheduler"),
    (lambda s: {**s, "last_epoch": 2.5}, TypeError, "last_epoch must be an int"),
    (lambda s: {**s, "base_lrs": [1.0, 2.0]}, ValueError, "list of 1 learning rates"),
    (lambda s: {**s, "_last_lr": [float("inf")]}, ValueError, "finite"),
    (lambda s: {**s, "step_size": 0}, ValueError, "step_size must be >= 1"),
])
def test_load_state_dict_checks_everything_first(state, error, text):
    opt = _optimizer()
    sched = L.StepLR(opt, 2)
    _trace(opt, sched, 3)
    saved = sched.state_dict()
    good = L.StepLR(_optimizer(), 2).state_dict()
    before = _snapshot(opt, [sched])
    with pytest.raises(error, match=text):
        sched.load_state_dict(state(good))
    assert _snapshot(opt, [sched]) == before and sched.state_dict() == saved


def test_a_composite_load_with_a_bad_child_changes_nothing():
    opt = _optimizer()
    sched = CASES["ChainedScheduler"](L, opt)
    _trace(opt, sched, 4)
    state = sched.state_dict()
    state["_schedulers"][1] = {**state["_schedulers"][1], "gamma": -1.0}
    before = _snapshot(opt, [sched])
    with pytest.raises(ValueError, match="gamma"):
        sched.load_state_dict(state)
    assert _snapshot(opt, [sched]) == before


@pytest.mark.parametrize("make, error, text", [
    (lambda o: L.MultiStepLR(o, [3, 1]), ValueError, "increasing"),
    (lambda o: L.MultiStepLR(o, 3), TypeError, "list of ints"),
    (lambda o: L.ConstantLR(o, factor=0), ValueError, "factor must be > 0"),
    (lambda o: L.ExponentialLR(o, gamma=0), ValueError, "gamma must be > 0"),
    (lambda o: L.MultiplicativeLR(o, 0.9), TypeError, "callable"),
    (lambda o: L.SequentialLR(o, [], []), ValueError, "non-empty list"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2)], [3]), ValueError, "expected 0 milestones"),
    (lambda o: L.SequentialLR(o, [L.StepLR(_optimizer(), 2)], []), ValueError,
     "another optimizer"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.ChainedScheduler([L.StepLR(o, 2)])], [3]),
     ValueError, "cannot restart at a milestone"),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 2), "x"]), TypeError, "expected an LRScheduler"),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 2), L.StepLR(_optimizer(), 2)]), ValueError,
     "another optimizer"),
])
def test_bad_arguments(make, error, text):
    with pytest.raises(error, match=text):
        make(_optimizer())


def test_a_scheduler_drives_adam_too():
    w = minigrad.tensor([1.0], requires_grad=True)
    opt = Adam([w], lr=0.1)
    sched = L.ChainedScheduler([L.ConstantLR(opt, factor=0.5, total_iters=1),
                                L.ExponentialLR(opt, gamma=0.5)])
    assert opt.param_groups[0]["lr"] == 0.05
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)


# ----------------------------------------------------- random combinations
from hypothesis import given, settings, strategies as st  # noqa: E402

_floats = lambda lo, hi: st.floats(lo, hi, allow_nan=False, allow_subnormal=False)  # noqa: E731
SIMPLE = {
    "StepLR": st.fixed_dictionaries({"step_size": st.integers(1, 5),
                                     "gamma": _floats(0.1, 0.99)}),
    "MultiStepLR": st.fixed_dictionaries({"milestones": st.lists(st.integers(0, 20),
                                                                 max_size=4).map(sorted),
                                          "gamma": _floats(0.1, 0.99)}),
    "ConstantLR": st.fixed_dictionaries({"factor": _floats(0.05, 1.0),
                                         "total_iters": st.integers(1, 8)}),
    "LinearLR": st.fixed_dictionaries({"start_factor": _floats(0.05, 1.0),
                                       "end_factor": _floats(0.0, 1.0),
                                       "total_iters": st.integers(1, 10)}),
    "ExponentialLR": st.fixed_dictionaries({"gamma": _floats(0.5, 1.0)}),
    "CosineAnnealingLR": st.fixed_dictionaries({"T_max": st.integers(1, 12),
                                                "eta_min": _floats(0.0, 0.01)}),
}
_one = st.sampled_from(sorted(SIMPLE)).flatmap(
    lambda name: SIMPLE[name].map(lambda kwargs: (name, kwargs)))


@st.composite
def _combinations(draw):
    specs = draw(st.lists(_one, min_size=1, max_size=3))
    how = draw(st.sampled_from(["together", "chained", "sequential"]))
    cuts = sorted(draw(st.lists(st.integers(1, 20), min_size=len(specs) - 1,
                                max_size=len(specs) - 1)))
    return specs, how, cuts


def _build(module, opt, combination):
    specs, how, cuts = combination
    children = [getattr(module, name)(opt, **kwargs) for name, kwargs in specs]
    if how == "together":
        return children
    if how == "chained":
        return module.ChainedScheduler(children)
    return module.SequentialLR(opt, children, milestones=cuts)


@pytest.mark.filterwarnings("ignore:Detected call of:UserWarning")
@settings(max_examples=60, deadline=None)
@given(combination=_combinations())
def test_random_combinations_match_torch(combination):
    torch = pytest.importorskip("torch")
    ours_opt = _optimizer((0.1, 0.02))
    ours = _build(L, ours_opt, combination)
    their_opt = _torch_optimizer(torch, (0.1, 0.02))
    theirs = _build(torch.optim.lr_scheduler, their_opt, combination)
    np.testing.assert_allclose(_trace(ours_opt, ours), _trace(their_opt, theirs),
                               rtol=1e-12, atol=1e-300)


def test_a_decay_to_zero_that_rounds_below_zero_still_steps(torch):
    # The recursion of LinearLR(end_factor=0) ends at -4.5e-18, in PyTorch too;
    # the optimizer must take that step, not reject the rate.
    ours_opt = _optimizer((1.0,))
    ours = L.LinearLR(ours_opt, start_factor=0.8171118335181818, end_factor=0.0,
                      total_iters=4)
    their_opt = _torch_optimizer(torch, (1.0,))
    theirs = torch.optim.lr_scheduler.LinearLR(their_opt, start_factor=0.8171118335181818,
                                               end_factor=0.0, total_iters=4)
    ours_trace, their_trace = _trace(ours_opt, ours, 8), _trace(their_opt, theirs, 8)
    assert ours_trace == their_trace and ours_trace[-1][0] < 0


@settings(max_examples=40, deadline=None)
@given(combination=_combinations(), stop=st.integers(0, 15),
       order=st.sampled_from(ORDERS))
def test_random_combinations_resume_in_any_order(combination, stop, order):
    reference_opt = _optimizer((0.1, 0.02))
    reference = _trace(reference_opt, _build(L, reference_opt, combination), 24)
    opt = _optimizer((0.1, 0.02))
    built = _build(L, opt, combination)
    first = _trace(opt, built, stop)
    saved_opt, saved_sched = opt.state_dict(), _save_state(built)
    opt2 = _optimizer((0.1, 0.02))
    if order == ORDERS[1]:
        opt2.load_state_dict(saved_opt)
    built2 = _build(L, opt2, combination)
    if order == ORDERS[0]:
        opt2.load_state_dict(saved_opt)
    for s, state in zip(_steppers(built2), saved_sched):
        s.load_state_dict(state)
    if order == ORDERS[2]:
        opt2.load_state_dict(saved_opt)
    assert first + _trace(opt2, built2, 24 - stop) == reference


def test_a_chain_that_goes_below_zero_saves_and_loads(torch):
    # ExponentialLR then a cosine with eta_min: the recursion takes the rate below
    # 0 (PyTorch too); the optimizer's state holding it must load again.
    combination = ([("ExponentialLR", {"gamma": 0.5}),
                    ("CosineAnnealingLR", {"T_max": 3, "eta_min": 0.0078125})], "together", [])
    opt = _optimizer((0.1, 0.02))
    trace = _trace(opt, _build(L, opt, combination), 6)
    their_opt = _torch_optimizer(torch, (0.1, 0.02))
    assert trace == _trace(their_opt, _build(torch.optim.lr_scheduler, their_opt, combination), 6)
    assert min(min(lrs) for lrs in trace) < 0
    opt2 = _optimizer((0.1, 0.02))
    opt2.load_state_dict(opt.state_dict())
    assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]
