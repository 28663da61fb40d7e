"""No public method leaves state half-changed when it raises: optimizers, the
accumulator, modules.  Each test injects a failure, checks that the state is
exactly what it was before the call, and (where it makes sense) that a retry
gives the result of an uninterrupted run."""
import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.optim import SGD, Adam, AdamW, GradientAccumulator, Optimizer, lr_scheduler

from .loops import ce_loss, classification_batches, make_mlp


class Boom(Exception):
    pass


def _copy(value):
    """A deep copy of a state (dicts, lists, tuples, arrays, numbers)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _equal(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(
            a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


def _everything(model, opt, acc=None):
    """Parameters, gradients, optimizer state (and the accumulator's) as plain data."""
    snap = {"params": [p.numpy().copy() for p in model.parameters()],
            "grads": [None if p.grad is None else p.grad.numpy().copy()
                      for p in model.parameters()],
            "optimizer": _copy(opt.state_dict())}
    if acc is not None:
        snap["accumulator"] = _copy(acc.state_dict())
    return snap


OPTIMIZERS = {
    "SGD": lambda ps: SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
    "SGD-nesterov": lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "Adam": lambda ps: Adam(ps, lr=0.01, weight_decay=1e-3),
    "AdamW": lambda ps: AdamW(ps, lr=0.01),
}


def _two_groups(model, make):
    ps = list(model.parameters())
    return make([{"params": ps[:2]}, {"params": ps[2:]}])


def _backward(model, batch):
    ce_loss(model, *batch).backward()


# ---------------------------------------------------------------- optimizers
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "fast", None])
def test_a_bad_rate_in_a_later_group_updates_nothing(float64, name, bad):
    model = make_mlp()
    opt = _two_groups(model, OPTIMIZERS[name])
    batches = classification_batches(3, 8)
    for batch in batches[:2]:
        _backward(model, batch)
        opt.step()
        opt.zero_grad()
    _backward(model, batches[2])
    good = opt.param_groups[1]["lr"]
    opt.param_groups[1]["lr"] = bad
    before = _everything(model, opt)
    with pytest.raises((TypeError, ValueError), match="parameter group 1"):
        opt.step()
    opt.param_groups[1]["lr"] = good
    after = _everything(model, opt)
    after["optimizer"]["param_groups"][1]["lr"] = bad
    assert _equal(after, before)
    # the retry is the step an uninterrupted run takes
    reference = make_mlp()
    ref_opt = _two_groups(reference, OPTIMIZERS[name])
    for batch in batches:
        _backward(reference, batch)
        ref_opt.step()
        ref_opt.zero_grad()
    opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_gradient_of_the_wrong_shape_on_the_last_parameter_updates_nothing(float64, name):
    model = make_mlp()
    opt = OPTIMIZERS[name](model.parameters())
    _backward(model, classification_batches(1, 8)[0])
    opt.step()
    last = list(model.parameters())[-1]
    before = None
    with pytest.raises((ValueError, RuntimeError), match="shape|size"):
        last.grad = minigrad.ones(1, dtype=last.dtype)     # may be refused right here
        before = _everything(model, opt)
        opt.step()
    if before is not None:
        assert _equal(_everything(model, opt), before)


class HalfwayFailure(SGD):
    """An optimizer you might write: its step updates parameters one by one
    and raises after the first (``fail`` times)."""

    def __init__(self, params, fail=1, **kwargs):
        super().__init__(params, **kwargs)
        self.fail = fail

    def step(self):
        if self.fail:
            first = self.param_groups[0]["params"][0]
            first.data -= 1.0
            self.state.setdefault(first, {})["momentum_buffer"] = first.data.copy()
            self.fail -= 1
            raise Boom("failed after updating one parameter")
        super().step()


def test_an_optimizer_that_raises_after_writing_is_put_back(float64):
    model = make_mlp()
    opt = HalfwayFailure(model.parameters(), lr=0.1, momentum=0.9)
    assert not opt._step_is_atomic
    _backward(model, classification_batches(1, 8)[0])
    before = _everything(model, opt)
    with pytest.raises(Boom):
        opt.step()
    assert _equal(_everything(model, opt), before)
    opt.step()                                          # the retry works
    reference = make_mlp()
    ref_opt = SGD(reference.parameters(), lr=0.1, momentum=0.9)
    _backward(reference, classification_batches(1, 8)[0])
    ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


# ------------------------------------------------------- optimizer loading
def _trained(make, steps=2):
    model = make_mlp()
    opt = make(model.parameters())
    for batch in classification_batches(steps, 8):
        _backward(model, batch)
        opt.step()
        opt.zero_grad()
    return model, opt


def _sgd(ps):
    return SGD(ps, lr=0.1, momentum=0.9)


def _adam(ps):
    return Adam(ps, lr=0.01)


def _bad_buffer(key, value):
    def change(state):
        state["state"][0][key] = value(state["state"][0][key])
        return state
    return change


LOAD_FAILURES = [
    ("SGD state into Adam", _adam, lambda s: _trained(_sgd)[1].state_dict(), ValueError,
     "another optimizer"),
    ("Adam state into SGD", _sgd, lambda s: _trained(_adam)[1].state_dict(), ValueError,
     "another optimizer"),
    ("index out of range", _adam,
     lambda s: {**s, "state": {**s["state"], 9: s["state"][0]}}, ValueError,
     "parameter index 9"),
    ("buffer shape", _adam, _bad_buffer("exp_avg", lambda v: v[:1]), ValueError,
     "has shape"),
    ("buffer dtype", _adam, _bad_buffer("exp_avg_sq", lambda v: v.astype(np.float32)),
     ValueError, "dtype float32"),
    ("negative step", _adam, _bad_buffer("step", lambda v: -3), ValueError, "int >= 0"),
    ("buffer not an array", _sgd, _bad_buffer("momentum_buffer", lambda v: v.tolist()),
     TypeError, "must be an array"),
    ("bad rate in a group", _adam,
     lambda s: {**s, "param_groups": [{**g, "lr": float("nan")} for g in s["param_groups"]]},
     ValueError, "lr must be finite"),
    ("bad eps in a group", _adam,
     lambda s: {**s, "param_groups": [{**g, "eps": -1.0} for g in s["param_groups"]]},
     ValueError, "eps must be >= 0"),
    ("bad betas", _adam,
     lambda s: {**s, "param_groups": [{**g, "betas": (0.9,)} for g in s["param_groups"]]},
     TypeError, "betas"),
    ("params not indices", _sgd,
     lambda s: {**s, "param_groups": [{**g, "params": ["a"] * len(g["params"])}
                                      for g in s["param_groups"]]}, TypeError,
     "integer indices"),
    ("too few params", _sgd,
     lambda s: {**s, "param_groups": [{**g, "params": g["params"][:1]}
                                      for g in s["param_groups"]]}, ValueError,
     "parameters in the saved state"),
]


@pytest.mark.parametrize("case, make, change, error, text", LOAD_FAILURES,
                         ids=[c[0] for c in LOAD_FAILURES])
def test_optimizer_load_checks_at_load_time_and_changes_nothing(float64, case, make, change,
                                                                 error, text):
    model, opt = _trained(make, steps=1)
    _, other = _trained(make, steps=3)
    state = change(_copy(other.state_dict()))
    before = _everything(model, opt)
    with pytest.raises(error, match=text):
        opt.load_state_dict(state)
    assert _equal(_everything(model, opt), before)


# --------------------------------------------------------------- accumulator
K = 3


def _accumulator(make_opt, scheduler=None, model=None, **kwargs):
    model = model or make_mlp()
    opt = make_opt(model)
    sched = scheduler(opt) if scheduler else None
    return model, opt, GradientAccumulator(opt, K, scheduler=sched, **kwargs)


def _feed(acc, model, batches):
    for batch in batches:
        acc.backward(ce_loss(model, *batch), num_items=len(batch[0]))
        acc.step()


def _adam_groups(model):
    return _two_groups(model, lambda g: Adam(g, lr=0.01))


def _uninterrupted(make_opt, scheduler, batches, **kwargs):
    model, opt, acc = _accumulator(make_opt, scheduler, **kwargs)
    _feed(acc, model, batches)
    return model, opt, acc


def _same_run(a, b):
    (model_a, opt_a, acc_a), (model_b, opt_b, acc_b) = a, b
    assert _equal(_everything(model_a, opt_a, acc_a), _everything(model_b, opt_b, acc_b))


def _lambda_failing_once(at):
    calls = {"failed": False}

    def factor(t):
        if t == at and not calls["failed"]:
            calls["failed"] = True
            raise Boom("lr_lambda failed")
        return 0.5 ** t
    return factor


@pytest.mark.parametrize("max_grad_norm", [None, 0.05])
def test_a_bad_rate_at_the_update_changes_nothing_and_a_retry_continues(float64,
                                                                        max_grad_norm):
    batches = classification_batches(2 * K, 4)
    sched = lambda o: lr_scheduler.StepLR(o, 1, 0.5)  # noqa: E731
    run = _accumulator(_adam_groups, sched, max_grad_norm=max_grad_norm)
    model, opt, acc = run
    _feed(acc, model, batches[:K + K - 1])
    acc.backward(ce_loss(model, *batches[-1]), num_items=4)
    opt.param_groups[1]["lr"] = float("inf")
    before = _everything(model, opt, acc)
    with pytest.raises(ValueError, match="parameter group 1"):
        acc.step()
    assert _equal(_everything(model, opt, acc), before)
    assert acc.micro_step == K - 1 and acc.updates == 1
    opt.param_groups[1]["lr"] = opt.param_groups[0]["lr"]
    assert acc.step() is True
    _same_run(run, _uninterrupted(_adam_groups, sched, batches, max_grad_norm=max_grad_norm))


def test_a_raising_lr_lambda_changes_nothing_and_a_retry_continues(float64):
    batches = classification_batches(2 * K, 4)
    run = _accumulator(_adam_groups, lambda o: lr_scheduler.LambdaLR(o, _lambda_failing_once(2)))
    model, opt, acc = run
    _feed(acc, model, batches[:-1])
    acc.backward(ce_loss(model, *batches[-1]), num_items=4)
    before = _everything(model, opt, acc)
    with pytest.raises(Boom):
        acc.step()
    assert _equal(_everything(model, opt, acc), before)
    assert acc.step() is True
    _same_run(run, _uninterrupted(_adam_groups,
                                  lambda o: lr_scheduler.LambdaLR(o, lambda t: 0.5 ** t),
                                  batches))


def _halfway(model):
    return HalfwayFailure(model.parameters(), fail=0, lr=0.1, momentum=0.9)


@pytest.mark.parametrize("where", ["step", "flush"])
@pytest.mark.parametrize("max_grad_norm", [None, 0.05])
def test_an_optimizer_failing_halfway_inside_the_accumulator(float64, where, max_grad_norm):
    """The optimizer is put back by its own step(); the scheduler is put back
    by the accumulator; the window stays open with its gradient normalized
    (and clipped) once, and the retry is the uninterrupted update."""
    sched = lambda o: lr_scheduler.ChainedScheduler(  # noqa: E731
        [lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=2),
         lr_scheduler.ExponentialLR(o, gamma=0.9)])
    n = 2 * K if where == "step" else 2 * K - 1
    batches = classification_batches(n, 4)
    run = _accumulator(_halfway, sched, max_grad_norm=max_grad_norm)
    model, opt, acc = run
    _feed(acc, model, batches[:-1])
    acc.backward(ce_loss(model, *batches[-1]), num_items=4)
    if where == "flush":
        acc.step()
    opt.fail = 1
    before = _everything(model, opt, acc)
    with pytest.raises(Boom):
        acc.step() if where == "step" else acc.flush()
    after = _everything(model, opt, acc)
    assert _equal(after["params"], before["params"])
    assert _equal(after["optimizer"], before["optimizer"])
    for key in ("micro_step", "updates", "awaiting_step", "item_total", "scheduler",
                "window_loss", "last_grad_norm"):
        assert _equal(after["accumulator"][key], before["accumulator"][key]), key
    assert after["accumulator"]["prepared"] is not None      # normalized once, kept
    with pytest.raises(RuntimeError, match="again to retry|twice without step"):
        acc.backward(ce_loss(model, *batches[0]), num_items=4)   # no raw gradient on top
    assert _equal(_everything(model, opt, acc)["params"], before["params"])
    assert (acc.step() if where == "step" else acc.flush()) is True
    reference = _accumulator(_halfway, sched, max_grad_norm=max_grad_norm)
    _feed(reference[2], reference[0], batches)
    if where == "flush":
        reference[2].flush()
    _same_run(run, reference)


def test_a_state_saved_between_a_failure_and_the_retry_resumes_exactly(float64):
    batches = classification_batches(K, 4)
    model, opt, acc = _accumulator(_halfway)
    _feed(acc, model, batches[:-1])
    acc.backward(ce_loss(model, *batches[-1]), num_items=4)
    opt.fail = 1
    with pytest.raises(Boom):
        acc.step()
    saved = _copy(acc.state_dict())
    model2, opt2, acc2 = _accumulator(_halfway)
    model2.load_state_dict(model.state_dict())
    acc2.load_state_dict(saved)
    assert acc.step() and acc2.step()
    _same_run((model, opt, acc), (model2, opt2, acc2))


# --------------------------------------------------------- accumulator loading
def _bn_model():
    minigrad.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 4),
                         nn.BatchNorm1d(4), nn.Linear(4, 3))


def _bn_accumulator():
    model = _bn_model()
    opt = Adam(model.parameters(), lr=0.01)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    return model, opt, GradientAccumulator(opt, K, scheduler=sched, model=model)


def _set(path, value):
    def change(state):
        target = state
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value(target[path[-1]]) if callable(value) else value
        return state
    return change


ACC_LOAD_FAILURES = [
    ("gradient shape", _set(["pending_grads", 2], lambda g: g[:1]), ValueError, "shape"),
    ("gradient dtype", _set(["pending_grads", 0], lambda g: g.astype(np.int64)), TypeError,
     "floating-point"),
    ("micro_step", _set(["micro_step"], K), ValueError, "micro_step"),
    ("mode", _set(["mode"], "tokens"), ValueError, "mode"),
    ("flag", _set(["awaiting_step"], "yes"), TypeError, "awaiting_step"),
    ("optimizer", _set(["optimizer", "state", 0, "exp_avg"], lambda v: v[:1]), ValueError,
     "has shape"),
    # these fail after the optimizer (and the scheduler) were loaded: all put back
    ("scheduler", _set(["scheduler", "T_max"], 0), ValueError, "T_max"),
    ("second BatchNorm", _set(["batchnorm", 1, "mean"], lambda m: m[:2]), ValueError,
     "mean has shape"),
]


@pytest.mark.parametrize("case, change, error, text", ACC_LOAD_FAILURES,
                         ids=[c[0] for c in ACC_LOAD_FAILURES])
def test_accumulator_load_is_all_or_nothing(float64, case, change, error, text):
    batches = classification_batches(2 * K, 8)
    model, opt, acc = _bn_accumulator()
    _feed(acc, model, batches[:K + 1])                   # one update, one pending
    other_model, _, other = _bn_accumulator()
    _feed(other, other_model, batches[:K + 2])
    state = change(_copy(other.state_dict()))
    before = _everything(model, opt, acc)
    with pytest.raises(error, match=text):
        acc.load_state_dict(state)
    assert _equal(_everything(model, opt, acc), before)
    # and the run goes on as if nothing had happened
    _feed(acc, model, batches[K + 1:])
    model2, opt2, acc2 = _bn_accumulator()
    _feed(acc2, model2, batches)
    _same_run((model, opt, acc), (model2, opt2, acc2))


# -------------------------------------------------------------------- modules
@pytest.mark.parametrize("bad", [np.array(["a", "b", "c"]), np.array([1 + 2j, 0, 0]),
                                 np.array([object(), 1, 2], dtype=object)])
def test_module_load_with_a_bad_later_value_changes_nothing(bad):
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 3))
    good = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 3)).state_dict()
    state = dict(good)
    state["1.bias"] = bad
    before = _copy(model.state_dict())
    with pytest.raises(TypeError, match="'1.bias'"):
        model.load_state_dict(state)
    assert _equal(model.state_dict(), before)


def test_module_load_with_a_bad_shape_later_changes_nothing():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    state = dict(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).state_dict())
    state["1.running_var"] = np.ones(4, dtype=np.float32)
    before = _copy(model.state_dict())
    with pytest.raises(ValueError, match="size mismatch for '1.running_var'"):
        model.load_state_dict(state)
    assert _equal(model.state_dict(), before)


def test_a_custom_optimizer_subclass_inherits_no_atomic_promise():
    class Mine(Adam):
        def step(self):
            super().step()

    assert Adam._step_is_atomic and not Mine._step_is_atomic
    assert not Optimizer._step_is_atomic


def test_module_to_that_fails_halfway_puts_everything_back(monkeypatch):
    from minigrad import backend
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 1))
    ce = (model(minigrad.ones((4, 2))) ** 2).sum()
    ce.backward()
    before = [(t.data, None if t.grad is None else t.grad.data)
              for t in list(model.parameters()) + list(model.buffers())]
    calls = {"n": 0}
    to_device = backend.to_device

    def failing(array, device):
        calls["n"] += 1
        if calls["n"] == 5:
            raise MemoryError("out of device memory")
        return to_device(array, device)

    monkeypatch.setattr(backend, "to_device", failing)
    with pytest.raises(MemoryError):
        model.to("cpu", np.float64)
    after = [(t.data, None if t.grad is None else t.grad.data)
             for t in list(model.parameters()) + list(model.buffers())]
    assert all(a[0] is b[0] and a[1] is b[1] for a, b in zip(after, before))
    assert all(p.dtype == np.float32 for p in model.parameters())


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_parameter_replaced_after_the_state_was_made_updates_nothing(float64, name):
    """The last parameter's .data replaced by one of another shape (its
    gradient matching the new shape): its momentum or moments no longer fit,
    and step raises before writing the parameters in front of it."""
    model = make_mlp()
    opt = OPTIMIZERS[name](model.parameters())
    _backward(model, classification_batches(1, 8)[0])
    opt.step()
    _backward(model, classification_batches(1, 8)[0])
    last = list(model.parameters())[-1]
    last.data = np.zeros(last.shape + (2,), dtype=last.dtype)
    last.grad = minigrad.ones(*last.shape, dtype=last.dtype)
    before = _everything(model, opt)
    with pytest.raises(ValueError, match="buffer .* nothing was updated"):
        opt.step()
    assert _equal(_everything(model, opt), before)


@pytest.mark.parametrize("where", ["step", "flush"])
def test_an_interrupted_atomic_step_refuses_an_inexact_retry(monkeypatch, float64, where):
    """An interrupt inside SGD's arithmetic (after its checks) leaves the first
    parameter stepped: the accumulator refuses the retry that would step it twice."""
    from minigrad.optim import updates
    model = make_mlp()
    opt = SGD(model.parameters(), lr=0.1)
    acc = GradientAccumulator(opt, 2)
    batches = classification_batches(2, 4)
    acc.backward(ce_loss(model, *batches[0]), num_items=4)
    if where == "flush":
        acc.step()
    else:
        acc.step()
        acc.backward(ce_loss(model, *batches[1]), num_items=4)
    calls, real = [], updates.sub_scaled_

    def interrupted(p, lr, g):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(p, lr, g)
    monkeypatch.setattr(updates, "sub_scaled_", interrupted)
    with pytest.raises(KeyboardInterrupt):
        acc.step() if where == "step" else acc.flush()
    assert opt._step_interrupted
    with pytest.raises(RuntimeError, match="interrupted inside the optimizer's step"):
        acc.step() if where == "step" else acc.flush()


# ------------------------------------------- read-only arrays, NumPy raising
def _two_params(make):
    a = minigrad.tensor(np.zeros(2), requires_grad=True)
    b = minigrad.tensor(np.zeros(2), requires_grad=True)
    a.grad, b.grad = minigrad.tensor(np.ones(2)), minigrad.tensor(np.ones(2))
    return a, b, make([a, b])


PLAIN = {"SGD": lambda ps: SGD(ps, lr=1.0),
         "SGD-momentum": lambda ps: SGD(ps, lr=1.0, momentum=0.9, weight_decay=0.1),
         "Adam": lambda ps: Adam(ps, lr=1.0, weight_decay=0.1),
         "AdamW": lambda ps: AdamW(ps, lr=1.0)}


@pytest.mark.parametrize("name", list(PLAIN))
def test_a_read_only_parameter_is_refused_before_the_first_write(name):
    a, b, opt = _two_params(PLAIN[name])
    b.data.flags.writeable = False
    with pytest.raises(ValueError, match="parameter 1 is a read-only array"):
        opt.step()
    assert a.tolist() == [0.0, 0.0] and opt.state.get(a) in (None, {})
    b.data = b.data.copy()                 # writable again: a retry is one step, not two
    opt.step()
    ref_a, _, ref = _two_params(PLAIN[name])
    ref.step()
    assert a.tolist() == ref_a.tolist() != [0.0, 0.0]


@pytest.mark.parametrize("name", ["SGD-momentum", "Adam"])
def test_a_read_only_state_buffer_is_refused_before_the_first_write(name):
    a, b, opt = _two_params(PLAIN[name])
    opt.step()
    before = a.numpy().copy()
    for buffer in opt.state[b].values():
        if isinstance(buffer, np.ndarray):
            buffer.flags.writeable = False
    with pytest.raises(ValueError, match="buffer .* of parameter 1 is a read-only array"):
        opt.step()
    np.testing.assert_array_equal(a.numpy(), before)


@pytest.mark.parametrize("name", list(PLAIN))
def test_an_overflow_under_numpy_raise_changes_nothing(name):
    a, b, opt = _two_params(PLAIN[name])
    b.data[...] = -1e308
    b.grad = minigrad.tensor(np.full(2, 1e308))
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            opt.step()
    assert a.tolist() == [0.0, 0.0] and b.tolist() == [-1e308, -1e308]
    assert opt.state.get(a) in (None, {}) and opt.state.get(b) in (None, {})
    b.grad = minigrad.tensor(np.ones(2))
    b.data[...] = 0.0
    opt.step()                             # the retry: exactly one step
    ref_a, _, ref = _two_params(PLAIN[name])
    ref.step()
    assert a.tolist() == ref_a.tolist()


def test_the_first_pass_runs_only_when_numpy_raises(monkeypatch):
    from minigrad.optim import dry_run
    calls = []
    monkeypatch.setattr(dry_run, "_blocks", lambda *arrays: calls.append(1) or iter(()))
    a, b, opt = _two_params(PLAIN["Adam"])
    opt.step()                             # NumPy's default: warnings, no first pass
    assert calls == []
    with np.errstate(over="raise"):
        opt.step()
    assert len(calls) == 2                 # one pass per parameter, block by block


def test_a_large_parameter_is_checked_block_by_block():
    from minigrad.optim.updates import BLOCK
    big = minigrad.tensor(np.zeros(3 * BLOCK + 5), requires_grad=True)
    small = minigrad.tensor(np.zeros(2), requires_grad=True)
    big.grad = minigrad.tensor(np.ones(3 * BLOCK + 5))
    grad = np.ones(2)
    grad[1] = np.inf
    small.grad = minigrad.tensor(grad)
    small.data[...] = np.inf
    opt = SGD([big, small], lr=1.0)
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            opt.step()                     # inf - inf: invalid, in the last parameter
    assert not big.numpy().any()


@pytest.mark.parametrize("failure", ["read-only", "overflow"])
def test_the_accumulators_update_is_all_or_nothing(float64, failure):
    batches = classification_batches(K, 4)
    make = lambda m: Adam(m.parameters(), lr=0.01, weight_decay=0.5)  # noqa: E731
    run = _accumulator(make)
    model, opt, acc = run
    _feed(acc, model, batches[:-1])
    acc.backward(ce_loss(model, *batches[-1]), num_items=4)
    last = list(model.parameters())[-1]
    saved = last.data
    if failure == "read-only":
        last.data = saved.copy()
        last.data.flags.writeable = False
    else:
        last.data = np.full_like(saved, 1e308)
    before = _everything(model, opt, acc)
    with np.errstate(all="raise" if failure == "overflow" else "warn"):
        with pytest.raises(ValueError if failure == "read-only" else FloatingPointError):
            acc.step()
    after = _everything(model, opt, acc)
    assert _equal(after["params"], before["params"])
    assert _equal(after["optimizer"], before["optimizer"])
    assert acc.updates == 0
    last.data = saved                      # fixed: the retry is the uninterrupted update
    assert acc.step() is True
    _same_run(run, _uninterrupted(make, None, batches))
