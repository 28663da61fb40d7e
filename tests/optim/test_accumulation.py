"""GradientAccumulator mechanics: counting, resume, non-finite windows, bad input, docs."""
import doctest
import pickle

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.optim import SGD, Adam, GradientAccumulator, accumulation
from minigrad.optim import lr_scheduler
from minigrad.optim.accumulation_state import STATE_KEYS
from minigrad.testing import max_abs_diff, max_rel_diff

from .loops import GradientRecorder, ce_loss, make_mlp, params


def test_docstring_example_runs():
    minigrad.set_default_dtype(np.float32)
    result = doctest.testmod(accumulation, raise_on_error=False, verbose=False)
    assert result.attempted >= 10 and result.failed == 0


def _micro_batches(n, size=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((size, 6)), rng.integers(0, 3, size)) for _ in range(n)]


# -------------------------------------------------------------- counting
def test_counters_and_return_values(float64):
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 3)
    results = []
    for x, y in _micro_batches(7):
        acc.backward(ce_loss(model, x, y), num_items=len(x))
        results.append(acc.step())
        assert acc.micro_step == len(results) % 3
    assert results == [False, False, True, False, False, True, False]
    assert acc.updates == 2 and acc.micro_step == 1
    assert all(p.grad is not None for p in model.parameters())   # a window is pending
    assert acc.flush() and acc.updates == 3
    assert all(p.grad is None for p in model.parameters())       # zeroed after the update
    assert not acc.flush()


def test_classic_mode_divides_by_the_micro_batches_in_the_window(float64):
    """Without num_items: the gradient is the mean of the micro-batches' mean
    gradients, over however many the window holds (here a short one of 2)."""
    parts = [_micro_batches(1, size=4)[0], _micro_batches(1, size=9, seed=1)[0]]
    model = make_mlp()
    rec = GradientRecorder(model.parameters())
    acc = GradientAccumulator(rec, 4)
    losses = []
    for x, y in parts:
        loss = ce_loss(model, x, y)
        losses.append(loss.item())
        acc.backward(loss)
        acc.step()
    assert acc.flush()
    singles = []
    for x, y in parts:
        m = make_mlp()
        ce_loss(m, x, y).backward()
        singles.append([p.grad.numpy() for p in m.parameters()])
    expected = [(a + b) / 2 for a, b in zip(*singles)]
    assert max_rel_diff(rec.seen[0], expected) <= 1e-12
    assert acc.window_loss == pytest.approx(np.mean(losses), rel=1e-14)


def test_window_loss_is_the_item_weighted_mean(float64):
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.0), 2)
    assert acc.window_loss is None
    values = []
    for size, seed in ((3, 0), (9, 1)):
        x, y = _micro_batches(1, size, seed)[0]
        loss = ce_loss(model, x, y)
        values.append(loss.item())
        acc.backward(loss, num_items=size)
        acc.step()
    assert acc.window_loss == pytest.approx((3 * values[0] + 9 * values[1]) / 12, rel=1e-15)


# --------------------------------------------------------- save and resume
def _resume_run(stop_after, with_bn=False):
    """Train 11 micro-batches with k = 4 (Adam, clipping, warm-up); when
    ``stop_after`` is given, stop after that many micro-batches, pickle every
    state, and continue in a freshly built model, optimizer, scheduler and
    accumulator.  Returns the final parameters (and BN statistics)."""
    norm = nn.BatchNorm1d if with_bn else None

    def build(seed):
        model = make_mlp(seed=seed, norm=norm)
        opt = Adam(model.parameters(), lr=0.01)
        sched = lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
        acc = GradientAccumulator(opt, 4, max_grad_norm=0.5, scheduler=sched,
                                  model=model if with_bn else None)
        return model, acc

    model, acc = build(seed=0)
    sizes = [5, 3, 6, 5, 2, 4, 5, 7, 3, 5, 4]
    data = [_micro_batches(1, n, seed=i)[0] for i, n in enumerate(sizes)]
    for i, (x, y) in enumerate(data):
        if i == stop_after:
            saved = pickle.dumps({"model": model.state_dict(), "acc": acc.state_dict()})
            model, acc = build(seed=99)                       # other initial weights
            state = pickle.loads(saved)
            model.load_state_dict(state["model"])
            acc.load_state_dict(state["acc"])
        acc.backward(ce_loss(model, x, y), num_items=len(x))
        acc.step()
    acc.flush()
    out = params(model)
    if with_bn:
        out += [model[1].running_mean.numpy(), model[1].running_var.numpy()]
    return out, acc


@pytest.mark.parametrize("stop_after", [1, 4, 6, 10])
def test_stopping_mid_window_and_resuming_gives_the_same_parameters(float64, stop_after):
    reference, ref_acc = _resume_run(None)
    resumed, acc = _resume_run(stop_after)
    assert max_abs_diff(resumed, reference) == 0.0
    assert (acc.updates, acc.window_loss, acc.last_grad_norm) == \
        (ref_acc.updates, ref_acc.window_loss, ref_acc.last_grad_norm)
    assert acc.scheduler.last_epoch == ref_acc.scheduler.last_epoch == 3


def test_resume_keeps_pending_batchnorm_statistics(float64):
    reference, _ = _resume_run(None, with_bn=True)
    resumed, _ = _resume_run(6, with_bn=True)
    assert max_abs_diff(resumed, reference) == 0.0


def test_resume_without_the_pending_statistics_differs(float64):
    """The check above is not vacuous: a window whose first micro-batch's
    statistics were lost ends with other running statistics."""
    data = [_micro_batches(1, n, seed=i)[0] for i, n in enumerate((5, 3))]

    def build():
        model = make_mlp(norm=nn.BatchNorm1d)
        return model, GradientAccumulator(SGD(model.parameters(), lr=0.0), 4, model=model)

    def finish(model, acc):
        acc.backward(ce_loss(model, *data[1]), num_items=3)
        acc.step()
        acc.flush()
        return _bn_running(model)

    model, acc = build()
    acc.backward(ce_loss(model, *data[0]), num_items=5)
    acc.step()
    state = acc.state_dict()
    assert int(state["batchnorm"][0]["count"]) == 5
    reference = finish(model, acc)
    kept_model, kept = build()
    kept.load_state_dict(state)
    lost_model, lost = build()
    lost.load_state_dict({**state, "batchnorm": [None]})
    assert max_abs_diff(finish(kept_model, kept), reference) == 0.0
    assert max_rel_diff(finish(lost_model, lost), reference) > 1e-3


def _bn_running(model):
    return [model[1].running_mean.numpy().copy(), model[1].running_var.numpy().copy()]


def test_state_dict_is_a_copy(float64):
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2)
    x, y = _micro_batches(1)[0]
    acc.backward(ce_loss(model, x, y), num_items=5)
    acc.step()
    state = acc.state_dict()
    before = [g.copy() for g in state["pending_grads"]]
    acc.backward(ce_loss(model, x, y), num_items=5)
    acc.step()
    assert max_abs_diff(state["pending_grads"], before) == 0.0
    assert state["micro_step"] == 1 and state["item_total"] == 5


def test_load_state_dict_mismatches(float64):
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2)
    state = acc.state_dict()
    with pytest.raises(ValueError, match="accumulation_steps=2, this accumulator has 3"):
        GradientAccumulator(SGD(model.parameters(), lr=0.1), 3).load_state_dict(state)
    other = make_mlp(hidden=5)
    with pytest.raises(ValueError, match="shape"):
        acc.backward(ce_loss(model, *_micro_batches(1)[0]))
        acc.step()
        GradientAccumulator(SGD(other.parameters(), lr=0.1), 2).load_state_dict(
            acc.state_dict())
    with pytest.raises(ValueError, match="scheduler"):
        opt = SGD(model.parameters(), lr=0.1)
        GradientAccumulator(opt, 2, scheduler=lr_scheduler.StepLR(opt, 2)).load_state_dict(
            state)


# -------------------------------------------------------- non-finite values
def test_non_finite_loss_skips_the_whole_window(float64):
    model = make_mlp()
    opt = Adam(model.parameters(), lr=0.01)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    acc = GradientAccumulator(opt, 2, scheduler=sched)
    before = params(model)
    x, y = _micro_batches(1)[0]
    acc.backward(ce_loss(model, x, y), num_items=5)
    acc.step()
    bad = ce_loss(model, x, y) * float("nan")
    acc.backward(bad, num_items=5)
    with pytest.warns(RuntimeWarning, match="non-finite loss or gradient") as record:
        assert acc.step() is False
    assert record[0].filename == __file__          # the warning names the caller's line
    assert acc.skipped_windows == 1 and acc.updates == 0 and acc.micro_step == 0
    assert max_abs_diff(params(model), before) == 0.0
    assert all(p.grad is None for p in model.parameters())
    assert opt.state == {} and sched.last_epoch == 0
    # the next window is a normal one
    for _ in range(2):
        acc.backward(ce_loss(model, x, y), num_items=5)
        acc.step()
    assert acc.updates == 1 and sched.last_epoch == 1
    assert max_abs_diff(params(model), before) > 0


def test_non_finite_gradient_skips_the_window(float64):
    w = minigrad.tensor([0.0, 1.0], requires_grad=True)
    acc = GradientAccumulator(SGD([w], lr=0.1), 1)
    with pytest.warns(RuntimeWarning, match="skipped"):
        acc.backward(w.sqrt().sum(), num_items=1)       # finite loss, d sqrt(0) = inf
        assert not acc.step()
    np.testing.assert_array_equal(w.numpy(), [0.0, 1.0])
    assert acc.skipped_windows == 1 and w.grad is None


def test_skipped_window_drops_pending_batchnorm_statistics(float64):
    model = make_mlp(norm=nn.BatchNorm1d)
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2, model=model)
    x, y = _micro_batches(1)[0]
    acc.backward(ce_loss(model, x, y))
    acc.step()
    acc.backward(ce_loss(model, x, y) * float("inf"))
    with pytest.warns(RuntimeWarning):
        acc.step()
    assert model[1].get_pending_stats() is None
    assert int(model[1].num_batches_tracked.item()) == 0


# ---------------------------------------------------------------- bad input
def _acc(k=2, **options):
    model = make_mlp()
    return GradientAccumulator(SGD(model.parameters(), lr=0.1), k, **options), model


@pytest.mark.parametrize("k, error, text", [
    (0, ValueError, "accumulation_steps must be >= 1, got 0"),
    (-3, ValueError, "got -3"),
    (2.0, TypeError, "must be an int >= 1, got 2.0"),
    (True, TypeError, "got True"),
    ("4", TypeError, "got '4'"),
])
def test_bad_accumulation_steps(k, error, text):
    with pytest.raises(error, match=text):
        _acc(k)


def test_bad_constructor_arguments():
    model = make_mlp()
    opt = SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="minigrad Optimizer"):
        GradientAccumulator("sgd", 2)
    with pytest.raises(ValueError, match="max_grad_norm must be > 0"):
        GradientAccumulator(opt, 2, max_grad_norm=0.0)
    other = SGD(make_mlp().parameters(), lr=0.1)
    with pytest.raises(ValueError, match="same optimizer"):
        GradientAccumulator(opt, 2, scheduler=lr_scheduler.StepLR(other, 2))
    with pytest.raises(TypeError, match="nn.Module"):
        GradientAccumulator(opt, 2, model=[model])


@pytest.mark.parametrize("num_items, error, text", [
    (-5, ValueError, "num_items must be a finite number >= 0.*got -5"),
    (-0.5, ValueError, "got -0.5"),
    (float("nan"), ValueError, "got nan"),
    ("5", TypeError, "got '5'"),
    (True, TypeError, "got True"),
])
def test_bad_num_items(float64, num_items, error, text):
    acc, model = _acc()
    with pytest.raises(error, match=text):
        acc.backward(ce_loss(model, *_micro_batches(1)[0]), num_items=num_items)
    assert acc.micro_step == 0 and all(p.grad is None for p in model.parameters())


def test_num_items_as_a_tensor(float64):
    acc, model = _acc()
    x, y = _micro_batches(1)[0]
    acc.backward(ce_loss(model, x, y), num_items=minigrad.tensor(np.int64(5)))
    acc.step()
    assert acc.state_dict()["item_total"] == 5


def test_bad_losses(float64):
    acc, model = _acc()
    x, y = _micro_batches(1)[0]
    out = model(minigrad.tensor(x))
    with pytest.raises(ValueError, match=r"must be a scalar .* got shape \(5, 3\)"):
        acc.backward(out)
    with pytest.raises(RuntimeError, match="does not require grad"):
        acc.backward(minigrad.tensor(1.0))
    with minigrad.no_grad():
        with pytest.raises(RuntimeError, match="does not require grad"):
            acc.backward(ce_loss(model, x, y))
    with pytest.raises(TypeError, match="loss must be a Tensor, got float"):
        acc.backward(1.0)


def test_call_order_rules(float64):
    acc, model = _acc()
    x, y = _micro_batches(1)[0]
    with pytest.raises(RuntimeError, match="no backward"):
        acc.step()
    acc.backward(ce_loss(model, x, y), num_items=5)
    with pytest.raises(RuntimeError, match="called twice without step"):
        acc.backward(ce_loss(model, x, y), num_items=5)
    with pytest.raises(RuntimeError, match="call step\\(\\) before flush"):
        acc.flush()
    acc.step()
    with pytest.raises(ValueError, match="mixes micro-batches"):
        acc.backward(ce_loss(model, x, y))
    assert acc.micro_step == 1


def test_leftover_gradients_are_cleared_at_construction(float64):
    model = make_mlp()
    ce_loss(model, *_micro_batches(1)[0]).backward()
    GradientAccumulator(SGD(model.parameters(), lr=0.1), 2)
    assert all(p.grad is None for p in model.parameters())


def test_repr():
    acc, _ = _acc(4, max_grad_norm=1.0)
    assert repr(acc) == ("GradientAccumulator(accumulation_steps=4, micro_step=0, "
                         "updates=0, max_grad_norm=1.0)")


# ------------------------------------------------------------ minigrad.testing
def test_comparison_functions():
    a = [np.array([1.0, 2.0]), np.array([[3.0]])]
    b = [np.array([1.0, 2.5]), np.array([[-4.0]])]
    assert max_abs_diff(a, b) == 7.0
    assert max_rel_diff(a, b) == 7.0 / 4.0
    assert max_rel_diff([np.zeros(2)], [np.zeros(2)]) == 0.0
    assert max_rel_diff([np.ones(2)], [np.zeros(2)]) == float("inf")
    assert max_abs_diff([minigrad.tensor([1.0])], [np.array([1.5])]) == 0.5
    with pytest.raises(ValueError, match="different lengths: 1 and 2"):
        max_abs_diff(a[:1], b)
    with pytest.raises(ValueError, match=r"item 0 has shapes \(2,\) and \(3,\)"):
        max_rel_diff([np.ones(2)], [np.ones(3)])


def test_load_state_dict_of_a_malformed_state():
    acc, _ = _acc()
    with pytest.raises(TypeError, match="GradientAccumulator.load_state_dict: expected a dict"):
        acc.load_state_dict(None)
    state = acc.state_dict()
    del state["micro_step"]
    with pytest.raises(ValueError, match="missing keys: micro_step"):
        acc.load_state_dict(state)
    assert acc.micro_step == 0


def test_loaded_pending_gradients_take_the_parameter_dtype():
    acc, model = _acc()
    acc.backward(ce_loss(model, *_micro_batches(1)[0]))
    acc.step()
    state = acc.state_dict()
    state["pending_grads"] = [g.astype(np.float64) for g in state["pending_grads"]]
    acc2, model2 = _acc()
    acc2.load_state_dict(state)
    for p in model2.parameters():
        assert p.grad.dtype == p.dtype == np.float32


def test_the_keys_load_state_dict_checks_are_those_of_state_dict():
    acc, _ = _acc()
    assert tuple(acc.state_dict()) == STATE_KEYS
