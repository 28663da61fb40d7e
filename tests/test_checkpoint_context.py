"""Checkpointing replays the forward's context: the random state of every
device, the per-example dropout contexts, grad mode and the default dtype.
Each test compares a checkpointed run with the plain run, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad import nn

STEP, ROWS = 3, np.arange(8, 16)


def _model():
    minigrad.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5, per_example=True), nn.Tanh(),
                         nn.Linear(16, 2))


def _x():
    return minigrad.tensor(np.random.default_rng(0).standard_normal((8, 4)), requires_grad=True)


def _grads(model, x):
    out = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]
    x.grad = None
    model.zero_grad()
    return out


def _plain(float64):
    model, x = _model(), _x()
    with nn.dropout_context(step=STEP, example_index=ROWS):
        loss = (model(x) ** 2).sum()
        loss.backward()
    return _grads(model, x)


def _assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_backward_after_the_dropout_context_block(float64):
    expected = _plain(float64)
    model, x = _model(), _x()
    with nn.dropout_context(step=STEP, example_index=ROWS):
        loss = (minigrad.checkpoint(model, x) ** 2).sum()
    loss.backward()                       # outside the block: the documented pattern
    _assert_same(_grads(model, x), expected)


def test_backward_inside_another_micro_batchs_context(float64):
    expected = _plain(float64)
    model, x = _model(), _x()
    with nn.dropout_context(step=STEP, example_index=ROWS):
        loss = (minigrad.checkpoint(model, x) ** 2).sum()
    with nn.dropout_context(step=STEP + 1, example_index=np.arange(8)):
        loss.backward()
        assert nn.dropout.current_dropout_context()[0] == STEP + 1   # put back
    _assert_same(_grads(model, x), expected)


def test_backward_without_a_context_where_the_forward_had_none(float64):
    """A per-example layer that got its indices as arguments: the recomputation
    must not pick up a context that is active only at backward."""
    layer = nn.Dropout(0.5, per_example=True)

    def fn(x):
        return layer(x, example_index=ROWS, step=1) * 3

    x = _x()
    (fn(x) ** 2).sum().backward()
    expected = x.grad.numpy().copy()
    x.grad = None
    loss = (minigrad.checkpoint(fn, x) ** 2).sum()
    with nn.dropout_context(step=9, example_index=np.arange(8)):
        loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_backward_under_no_grad(float64):
    expected = _plain(float64)
    model, x = _model(), _x()
    with nn.dropout_context(step=STEP, example_index=ROWS):
        loss = (minigrad.checkpoint(model, x) ** 2).sum()
    with minigrad.no_grad():
        loss.backward()
        assert not minigrad.is_grad_enabled()
    _assert_same(_grads(model, x), expected)


def _noisy(x):
    return (x * minigrad.randn(*x.shape, device=x.device, dtype=x.dtype)).tanh()


def test_randn_inside_a_checkpointed_segment(device):
    x = minigrad.tensor(np.linspace(-1, 1, 12).reshape(3, 4), device=device,
                        requires_grad=True)
    minigrad.manual_seed(5)
    (_noisy(x) * 2).sum().backward()
    expected = x.grad.numpy().copy()
    x.grad = None
    minigrad.manual_seed(5)
    out = minigrad.checkpoint(_noisy, x)
    minigrad.randn(3, 4, device=device)       # another draw between forward and backward
    (out * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_rng_state_has_the_gpu_stream():
    state = minigrad.random.get_rng_state()
    assert state["gpu_offset"] == 0
    minigrad.random.set_rng_state({**state, "gpu_offset": 7})
    assert minigrad.random.get_rng_state()["gpu_offset"] == 7
    minigrad.manual_seed(0)
    assert minigrad.random.get_rng_state()["gpu_offset"] == 0


def test_default_dtype_changed_between_forward_and_backward():
    def fn(x):
        noise = minigrad.randn(*x.shape)           # takes the default dtype
        return x * noise.double()

    x = minigrad.tensor(np.ones((2, 3)), dtype="float64", requires_grad=True)
    minigrad.manual_seed(1)
    fn(x).sum().backward()
    expected = x.grad.numpy().copy()                # noise drawn in float32
    x.grad = None
    minigrad.manual_seed(1)
    out = minigrad.checkpoint(fn, x)
    minigrad.set_default_dtype(np.float64)
    out.sum().backward()
    assert minigrad.get_default_dtype() == np.float64   # the caller's dtype is back
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_context_restored_after_a_failing_recomputation():
    calls = []

    def fn(x):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("boom")
        return x * 2

    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    out = minigrad.checkpoint(fn, x)
    minigrad.set_default_dtype(np.float64)
    with nn.dropout_context(step=2, example_index=np.arange(2)):
        with pytest.raises(ValueError, match="boom"):
            out.sum().backward()
        assert nn.dropout.current_dropout_context()[0] == 2
    assert minigrad.get_default_dtype() == np.float64
    assert nn.dropout.current_dropout_context() is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_gpu_stream_is_counter_based_and_standard(dtype):
    # the GPU stream's arithmetic is the array module's: checked here with NumPy
    stream = minigrad.random.CounterStream(np)
    minigrad.manual_seed(3)
    z = stream.standard_normal((200, 500), dtype=dtype)
    u = stream.random(100_000, dtype=dtype)
    assert z.dtype == dtype and u.dtype == dtype
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01          # 1e5 values: 3e-3 sd
    assert abs(np.mean(np.abs(z) < 1.959964) - 0.95) < 0.005
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    assert minigrad.random.get_rng_state()["gpu_offset"] == 200_000
    minigrad.manual_seed(3)                                   # same seed: same values
    np.testing.assert_array_equal(stream.standard_normal((200, 500), dtype=dtype), z)
    state = minigrad.random.get_rng_state()
    later = stream.random(10, dtype=dtype)
    np.testing.assert_array_equal(later, u[:10])              # the stream continues as before
    minigrad.random.set_rng_state(state)
    np.testing.assert_array_equal(stream.random(10, dtype=dtype), later)
    a, b = stream.random(100, dtype=dtype), stream.random(100, dtype=dtype)
    assert not np.isin(a, b).any()                             # consecutive draws differ
