"""The local executor: a real model in p stages equals the one-process full batch."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.optim import SGD, GradientAccumulator
from minigrad.pipeline import (LocalPipeline, PipelineStage, StageAccumulator, get_schedule,
                               split_batch, split_sequential)

from .models import (HIDDEN, expected_checkpoint_stash_bytes, full_batch_reference, make_data,
                     make_model, optimizer_for, relative_error, stage_sizes)

STEPS = 2


def _pipeline(p, m, schedule, checkpoint=False, measure_stash=False):
    model = make_model()
    stages = split_sequential(model, stage_sizes(p))
    optimizers = [optimizer_for(s.parameters()) for s in stages]
    pipe = LocalPipeline(stages, optimizers, nn.functional.cross_entropy, m, schedule,
                         checkpoint=checkpoint, measure_stash=measure_stash)
    return model, optimizers, pipe


CASES = [(p, m, name) for p in (1, 2, 3, 4) for m in (1, 2, 4, 5, 8, 23)
         for name in ("gpipe", "1f1b") if not (name == "1f1b" and m < p)]


@pytest.mark.parametrize("p, m, schedule", CASES)
def test_update_equals_full_batch(p, m, schedule):
    """Gradients at each update and parameters after it, to 1e-14 relative (float64),
    over two updates of SGD with momentum and weight decay.  23 items in m parts:
    unequal micro-batches (e.g. 5, 5, 5, 4, 4), weighted by their item counts."""
    x, y = make_data()
    grads, params, losses = full_batch_reference(x, y, STEPS)
    model, optimizers, pipe = _pipeline(p, m, schedule)
    for step in range(STEPS):
        loss = pipe.step(x, y)
        seen = [g for opt in optimizers for g in opt.seen_grads]
        assert relative_error(seen, grads[step]) <= 1e-14
        assert relative_error([q.numpy() for q in model.parameters()], params[step]) <= 1e-14
        assert loss == pytest.approx(losses[step], rel=1e-14)
    assert all(stage.accumulator.updates == STEPS for stage in pipe.stages)
    assert all(q.grad is None for q in model.parameters())     # zeroed after the update


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p", [2, 4])
def test_checkpointed_stages_equal_full_batch_and_stash_only_inputs(p, schedule):
    """With minigrad.checkpoint around each stage: the same update, and the stash
    holds the stage inputs (and the last stage's targets) and nothing more."""
    m = 5
    x, y = make_data()
    grads, params, _ = full_batch_reference(x, y, STEPS)
    model, optimizers, pipe = _pipeline(p, m, schedule, checkpoint=True, measure_stash=True)
    _, _, plain = _pipeline(p, m, schedule, measure_stash=True)
    for step in range(STEPS):
        pipe.step(x, y)
        plain.step(x, y)
        seen = [g for opt in optimizers for g in opt.seen_grads]
        assert relative_error(seen, grads[step]) <= 1e-14
        assert relative_error([q.numpy() for q in model.parameters()], params[step]) <= 1e-14
    for s in range(p):
        want = expected_checkpoint_stash_bytes(pipe.schedule, s, p)
        assert pipe.peak_stash_bytes[s] == want
        if stage_sizes(p)[s] > 2 or s == p - 1:
            # a Tanh inside (its output is stashed too), or the loss's saved arrays
            assert plain.peak_stash_bytes[s] > want
        else:
            # Linear -> Tanh keeps the stage's input (for Linear) and its output
            # (Tanh saved it, so the graph keeps it after it was sent on)
            assert plain.peak_stash_bytes[s] == expected_checkpoint_stash_bytes(
                pipe.schedule, s, p, extra_per_item=8 * HIDDEN)
    assert pipe.peak_stash == plain.peak_stash


@pytest.mark.parametrize("p, m", [(2, 2), (4, 4), (4, 8), (3, 9), (4, 23)])
def test_executor_stash_matches_the_simulated_one(p, m):
    for schedule in ("gpipe", "1f1b"):
        _, _, pipe = _pipeline(p, m, schedule)
        pipe.step(*make_data())
        want = tuple([m] * p) if schedule == "gpipe" else tuple(p - s for s in range(p))
        assert pipe.peak_stash == want


def test_one_stage_one_micro_batch_is_plain_training():
    x, y = make_data()
    _, params, _ = full_batch_reference(x, y, 1)
    model, _, pipe = _pipeline(1, 1, "gpipe")
    pipe.step(x, y)
    assert relative_error([q.numpy() for q in model.parameters()], params[0]) <= 1e-15


def test_non_finite_loss_skips_the_window_on_every_stage():
    model, _, pipe = _pipeline(2, 2, "1f1b")
    before = [q.numpy().copy() for q in model.parameters()]
    x, y = make_data()
    x[0, 0] = np.nan
    with pytest.warns(RuntimeWarning, match="skipped"):
        pipe.step(x, y)
    assert [st.accumulator.skipped_windows for st in pipe.stages] == [1, 1]
    assert all(np.array_equal(a, q.numpy()) for a, q in zip(before, model.parameters()))
    x, y = make_data()
    pipe.step(x, y)                         # the next window trains normally
    assert [st.accumulator.updates for st in pipe.stages] == [1, 1]


def test_split_batch_and_split_sequential():
    assert [len(b) for b in split_batch(np.arange(23), 5)] == [5, 5, 5, 4, 4]
    assert np.array_equal(np.concatenate(split_batch(np.arange(23), 5)), np.arange(23))
    with pytest.raises(ValueError, match="cannot be cut into 4"):
        split_batch(np.arange(3), 4)
    model = make_model()
    stages = split_sequential(model, 3)
    assert [len(s) for s in stages] == [3, 2, 2]
    assert [id(q) for s in stages for q in s.parameters()] == [id(q) for q in model.parameters()]
    for bad in ([3, 3], [0, 7], 8, 0):
        with pytest.raises(ValueError, match="split_sequential"):
            split_sequential(model, bad)
    with pytest.raises(TypeError, match="Sequential"):
        split_sequential(nn.Linear(2, 2), 1)


def test_a_stage_without_parameters_is_refused_at_the_split():
    model = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1))
    with pytest.raises(ValueError, match=r"stage 1 \(Tanh\) has no parameters"):
        split_sequential(model, [1, 1, 1])
    assert [len(s) for s in split_sequential(model, [2, 1])] == [2, 1]


def test_bad_arguments_are_refused():
    model = make_model()
    stages = split_sequential(model, 2)
    opts = [SGD(s.parameters(), lr=0.1) for s in stages]
    with pytest.raises(ValueError, match="one optimizer per stage"):
        LocalPipeline(stages, opts[:1], nn.functional.cross_entropy, 2)
    with pytest.raises(ValueError, match="m >= p"):
        LocalPipeline(stages, opts, nn.functional.cross_entropy, 1, "1f1b")
    with pytest.raises(ValueError, match="expected"):
        LocalPipeline(stages, opts, nn.functional.cross_entropy, 2, get_schedule("gpipe", 3, 2))
    with pytest.raises(ValueError, match="micro_batches"):
        LocalPipeline(stages, opts, nn.functional.cross_entropy, 0)
    pipe = LocalPipeline(stages, opts, nn.functional.cross_entropy, 2)
    with pytest.raises(ValueError, match="3 targets"):
        pipe.step(np.zeros((4, 5)), np.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError, match="loss_fn"):
        PipelineStage(stages[1], opts[1], 2, is_first=False, is_last=True)


def test_stage_accumulator_checks_its_arguments():
    minigrad.set_default_dtype(np.float64)
    layer = nn.Linear(2, 2)
    acc = StageAccumulator(SGD(layer.parameters(), lr=0.1), 2)
    out = layer(minigrad.tensor(np.ones((3, 2))))
    with pytest.raises(ValueError, match="shape"):
        acc.backward_output(out, np.ones((2, 2)), 3, 0.5)
    with pytest.raises(ValueError, match="num_items must be a finite number >= 0"):
        acc.backward_output(out, np.ones((3, 2)), -1, 0.5)
    acc.backward_output(out, np.ones((3, 2)), 3, 0.5)
    with pytest.raises(RuntimeError, match="twice"):
        acc.backward_output(out, np.ones((3, 2)), 3, 0.5)


def _window_through(stage, **options):
    """One window of two micro-batches through a stage's ``backward_output``
    (``stage``) or, the same gradients, through ``backward(loss, num_items)``;
    returns the layer's weight after the update."""
    minigrad.manual_seed(0)
    layer = nn.Linear(2, 2)
    acc = (StageAccumulator if stage else GradientAccumulator)(
        SGD(layer.parameters(), lr=0.5), 2, **options)
    rng = np.random.default_rng(1)
    for n in (3, 5):
        out = layer(minigrad.tensor(rng.standard_normal((n, 2))))
        grad = rng.standard_normal((n, 2))
        if stage:
            acc.backward_output(out, grad, n, 0.25)
        else:                   # the mean loss whose n-weighted gradient is grad
            acc.backward((out * minigrad.tensor(grad)).sum() / n, num_items=n)
        acc.step()
    assert acc.updates == 1
    return layer.weight.numpy()


@pytest.mark.parametrize("options", [{}, {"dtype": "float16"}, {"compensated": True}])
def test_stage_accumulator_counts_a_micro_batch_as_backward_does(options):
    """backward_output ends with the accumulator's own micro-batch step: with an
    accumulation buffer (dtype=, compensated=) the stage's gradients are summed
    in it too, so the stage's update is the accumulator's."""
    minigrad.set_default_dtype(np.float64)
    np.testing.assert_allclose(_window_through(True, **options),
                               _window_through(False, **options), rtol=1e-12)


def test_stage_accumulator_refuses_a_micro_batch_before_a_failed_update_is_retried():
    minigrad.set_default_dtype(np.float64)
    layer = nn.Linear(2, 2)

    class Failing(SGD):
        fail = True

        def step(self):
            if Failing.fail:
                raise MemoryError("simulated")
            super().step()

    acc = StageAccumulator(Failing(layer.parameters(), lr=0.1), 1)
    out = layer(minigrad.tensor(np.ones((3, 2))))
    acc.backward_output(out, np.ones((3, 2)), 3, 0.5)
    with pytest.raises(MemoryError):
        acc.step()
    out = layer(minigrad.tensor(np.ones((3, 2))))
    with pytest.raises(RuntimeError, match="retry"):
        acc.backward_output(out, np.ones((3, 2)), 3, 0.5)
    Failing.fail = False
    assert acc.step() is True and acc.updates == 1


def test_importing_the_pipeline_does_not_import_mpi4py():
    code = ("import sys, minigrad, minigrad.pipeline; "
            "assert 'mpi4py' not in sys.modules, 'mpi4py was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_pipeline_on_each_device(device, schedule):
    """The same pipeline with the stages on ``device``: inputs arrive as NumPy arrays
    and are moved to each stage's device; the update matches the CPU full batch."""
    x, y = make_data()
    grads, params, _ = full_batch_reference(x, y, 1)
    model = make_model().to(device)
    stages = split_sequential(model, stage_sizes(2))
    optimizers = [optimizer_for(s.parameters()) for s in stages]
    pipe = LocalPipeline(stages, optimizers, nn.functional.cross_entropy, 4, schedule)
    pipe.step(x, y)
    tol = 1e-14 if device == "cpu" else 1e-12          # cuBLAS sums in another order
    seen = [g for opt in optimizers for g in opt.seen_grads]
    assert relative_error(seen, grads[0]) <= tol
    assert relative_error([q.numpy() for q in model.parameters()], params[0]) <= tol


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p", [2, 3])
def test_micro_batch_with_every_target_ignored_equals_full_batch(p, schedule):
    """A micro-batch whose targets are all ignore_index has no items (its mean
    loss is nan, as in PyTorch): every stage adds nothing for it, none skips
    the window, and the update is the full batch's (no RuntimeWarning)."""
    x, y = make_data(12)
    y[4:8] = -100                                   # micro-batch 1 of 3
    ref = make_model()
    ref_opt = optimizer_for(ref.parameters())
    nn.functional.cross_entropy(ref(minigrad.tensor(x)), minigrad.tensor(y)).backward()
    ref_opt.step()
    model = make_model()
    stages = split_sequential(model, stage_sizes(p))
    pipe = LocalPipeline(stages, [optimizer_for(s.parameters()) for s in stages],
                         nn.functional.cross_entropy, 3, schedule,
                         num_items=lambda t: int((np.asarray(t) != -100).sum()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = pipe.step(x, y)
    assert [st.accumulator.updates for st in pipe.stages] == [1] * p
    assert relative_error([q.numpy() for q in model.parameters()],
                          [q.numpy() for q in ref.parameters()]) <= 1e-14
    assert all(np.isfinite(st.accumulator.window_loss) for st in pipe.stages)
    assert loss == pytest.approx(nn.functional.cross_entropy(
        make_model()(minigrad.tensor(x)), minigrad.tensor(y)).item(), rel=1e-14)
