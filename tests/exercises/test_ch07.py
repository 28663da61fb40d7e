"""Exercises of chapter 7 (memory and time): gradient checkpointing."""
import numpy as np
import pytest

import minigrad
from minigrad.checkpointing import checkpoint, checkpoint_sequential

from .check import assert_close, rng

X0 = rng(1).standard_normal((3, 4))


def _recording(calls, scale=2.0):
    def fn(t):
        calls.append(minigrad.is_grad_enabled())
        return (t * scale).tanh()
    return fn


@pytest.mark.exercise("7.1")
def test_checkpoint_forward_runs_without_a_graph():
    x = minigrad.tensor(X0, requires_grad=True)
    calls = []
    y = checkpoint(_recording(calls), x)
    assert calls == [False], \
        f"the checkpointed function ran with grad mode {calls}; forward runs it once " \
        "under no_grad, so that no activation is kept"
    assert_close(y, np.tanh(2 * X0), "checkpoint(fn, x) forward")
    assert y.requires_grad, "the output of a checkpoint still requires grad (its node is "\
                            "the CheckpointFunction)"


@pytest.mark.exercise("7.2")
def test_checkpoint_backward_recomputes_then_backpropagates():
    x = minigrad.tensor(X0, requires_grad=True)
    calls = []
    checkpoint(_recording(calls), x).sum().backward()
    assert calls == [False, True], \
        f"grad modes of the calls: {calls}; backward recomputes fn once with grad enabled"
    t = np.tanh(2 * X0)
    assert_close(x.grad, 2 * (1 - t * t), "x.grad through a checkpoint",
                 [(np.zeros_like(X0), "backpropagate the incoming gradient through the "
                                      "recomputed outputs into fresh leaves")])


@pytest.mark.exercise("7.2")
def test_checkpoint_backward_replays_dropout_exactly():
    x = minigrad.tensor(X0, requires_grad=True)
    xr = minigrad.tensor(X0, requires_grad=True)

    def fn(t):
        return minigrad.nn.functional.dropout(t * 3.0, p=0.5, training=True)
    minigrad.manual_seed(5)
    checkpoint(fn, x).sum().backward()
    minigrad.manual_seed(5)
    fn(xr).sum().backward()
    assert_close(x.grad, xr.grad, "x.grad through a checkpointed dropout: the recomputation "
                 "must replay the random state of the forward (the same dropout mask)")


@pytest.mark.exercise("7.3")
def test_checkpoint_sequential_checkpoints_all_but_the_last_segment():
    calls = [[] for _ in range(5)]
    layers = [_recording(c, scale=0.5) for c in calls]
    x = minigrad.tensor(X0, requires_grad=True)
    y = checkpoint_sequential(layers, 2, x)
    first = [c[0] for c in calls]
    assert first == [False, False, True, True, True], \
        f"grad mode of the 5 layers' first calls: {first}; with 2 segments of 5 // 2 = 2 " \
        "layers, layers 0-1 are checkpointed and the last segment (2-4) runs plainly"
    expected = X0
    for _ in range(5):
        expected = np.tanh(0.5 * expected)
    assert_close(y, expected, "checkpoint_sequential output")
    y.sum().backward()
    assert [len(c) for c in calls] == [2, 2, 1, 1, 1], \
        f"calls per layer after backward: {[len(c) for c in calls]}; only checkpointed " \
        "layers run twice"
