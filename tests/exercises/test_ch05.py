"""Exercises of chapter 5 (normalizing the loss)."""
import warnings

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.data.text import make_lm_batch
from minigrad.experiments.char_lm import token_loss
from minigrad.optim import SGD, GradientAccumulator, GradScaler

from .check import assert_close, rng

X = rng(1).standard_normal((7, 3))


def _model():
    return minigrad.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)


def _mean_loss(w, x):
    y = minigrad.tensor(x) @ w
    return (y * y).mean()


@pytest.mark.exercise("5.1")
def test_flush_applies_the_short_last_window():
    w, lr = _model(), 0.1
    before = w.numpy().copy()
    acc = GradientAccumulator(SGD([w], lr=lr), accumulation_steps=4)
    for start, n in [(0, 2), (2, 2), (4, 3)]:          # 3 of 4 micro-batches: data ran out
        acc.backward(_mean_loss(w, X[start:start + n]), num_items=n)
        acc.step()
    assert acc.flush() is True, "flush() with 3 micro-batches pending must update (True)"
    full = 2 * X.T @ (X @ before) / 7
    assert_close(w, before - lr * full, "the parameters after flush() of 7 items",
                 [(before - lr * full * 7 / 8, "a short window divides by the items it "
                   "holds (7), not by a full window's count")])
    assert acc.flush() is False, "flush() with nothing pending does nothing and returns False"
    assert acc.updates == 1


class _Bigram(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(rng(2).standard_normal((4, 4)))

    def forward(self, ids):
        return self.table[ids.numpy()]


@pytest.mark.exercise("5.2")
def test_token_loss_is_the_mean_over_real_tokens():
    inputs = np.array([[0, 1, 2], [3, 0, 0]])
    targets = np.array([[1, 2, 3], [1, -100, -100]])
    model = _Bigram()
    loss, count = token_loss("cpu")(model, (inputs, targets))
    assert count == 4, f"the micro-batch holds 4 real target tokens, token_loss counted " \
                       f"{count}" + (": padded positions (-100) do not count" if count == 6 else "")
    table = model.table.numpy()
    logits = table[inputs.reshape(-1)]
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    flat = targets.reshape(-1)
    kept = flat != -100
    expected = -logp[np.arange(6)[kept], flat[kept]].mean()
    assert_close(loss, expected, "the micro-batch's loss",
                 [(-logp[np.arange(6)[kept], flat[kept]].sum() / 6,
                   "the mean is over the 4 real tokens, not the 6 positions")])


@pytest.mark.exercise("5.3")
def test_a_non_finite_window_is_skipped_whole():
    w = _model()
    before = w.numpy().copy()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2)
    acc.backward(_mean_loss(w, X[:2]), num_items=2)
    acc.step()
    acc.backward(_mean_loss(w, X[2:4]) * float("nan"), num_items=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        updated = acc.step()
    assert updated is False, "a window with a nan loss must not update (step returns False)"
    assert np.array_equal(w.numpy(), before), "a skipped window must leave the parameters"
    assert w.grad is None, "a skipped window's gradients are cleared, not carried over"
    assert acc.skipped_windows == 1 and acc.updates == 0
    assert any(issubclass(c.category, RuntimeWarning) for c in caught), \
        "skipping a window warns (RuntimeWarning)"
    acc.backward(_mean_loss(w, X[:2]), num_items=2)
    assert acc.step() is False and acc.micro_step == 1, \
        "after a skipped window the next window starts from micro-batch 1"


@pytest.mark.exercise("5.4")
def test_make_lm_batch_shifts_and_pads():
    inputs, targets = make_lm_batch([[5, 6, 7, 8], [1, 2], [3, 4, 9]], ignore_index=-100)
    assert inputs.tolist() == [[5, 6, 7], [1, 0, 0], [3, 4, 0]], \
        f"inputs are s[:-1] padded with 0, got {inputs.tolist()}"
    assert targets.tolist() == [[6, 7, 8], [2, -100, -100], [4, 9, -100]], \
        f"targets are s[1:] padded with ignore_index, got {targets.tolist()}" + \
        (": the padding of targets must be ignore_index, so the loss skips it"
         if targets[1, 1] == 0 else "")
    assert inputs.dtype == np.int64 and targets.dtype == np.int64


@pytest.mark.exercise("5.3")
def test_a_non_finite_gradient_with_a_finite_loss_is_skipped_too():
    w = minigrad.tensor(np.array([0.0, 1.0, 2.0]), requires_grad=True)
    before = w.numpy().copy()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=1)
    loss = (w.sqrt() * 0.0).sum()            # finite loss 0, gradient inf at w = 0
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        acc.backward(loss, num_items=1)
        updated = acc.step()
    assert updated is False and acc.skipped_windows == 1, \
        "a window whose gradient holds inf or nan is skipped, even when its loss is finite"
    assert np.array_equal(w.numpy(), before) and w.grad is None


def _nan_step(acc, loss, num_items=2):
    """backward and step of a micro-batch whose loss is made nan; returns (step's
    result, the RuntimeWarnings issued)."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        acc.backward(loss * float("nan"), num_items=num_items)
        updated = acc.step()
    return updated, [c for c in caught if issubclass(c.category, RuntimeWarning)]


@pytest.mark.exercise("5.1")
def test_flush_of_an_empty_window_does_nothing():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2)
    for start in (0, 2):
        acc.backward(_mean_loss(w, X[start:start + 2]), num_items=2)
        acc.step()
    assert acc.updates == 1 and acc.micro_step == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flushed = acc.flush()
    assert flushed is False, f"flush() right after a full window returned {flushed}"
    assert not caught and acc.skipped_windows == 0, (
        "flush() with no micro-batch pending must do nothing: it skipped a window and warned "
        f"({[str(c.message)[:60] for c in caught]}): return False before calling _update() "
        "when the window holds no micro-batch (micro_step == 0)")


@pytest.mark.exercise("5.1")
def test_flush_applies_a_window_of_one_micro_batch():
    w, lr = _model(), 0.1
    before = w.numpy().copy()
    acc = GradientAccumulator(SGD([w], lr=lr), accumulation_steps=4)
    acc.backward(_mean_loss(w, X[:3]), num_items=3)
    acc.step()
    assert acc.micro_step == 1
    assert acc.flush() is True, \
        "flush() with one micro-batch pending (micro_step == 1) must update and return True"
    assert_close(w, before - lr * 2 * X[:3].T @ (X[:3] @ before) / 3,
                 "the parameters after flush() of one micro-batch of 3 items")


@pytest.mark.exercise("5.3")      # flush (5.1) of a window without items: skipped (5.3)
def test_flush_skips_a_pending_window_without_items():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=3)
    acc.backward(_mean_loss(w, X[:2]), num_items=0)     # a micro-batch, but no items
    acc.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flushed = acc.flush()
    assert flushed is False, \
        f"flush() of a window whose micro-batches hold no items returned {flushed}: " \
        "there is no mean to step on, _update() skips it and flush() returns its False"
    assert acc.micro_step == 0 and acc.skipped_windows == 1, (
        f"after flush() the window must be closed (micro_step {acc.micro_step}, skipped "
        f"windows {acc.skipped_windows}): a window is empty when it holds no micro-batch "
        "(micro_step == 0), not when it holds no items; _update() skips the latter")
    assert any(issubclass(c.category, RuntimeWarning) for c in caught)


@pytest.mark.exercise("5.3")
def test_a_skipped_window_records_its_loss():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=1)
    acc.backward(_mean_loss(w, X[:2]), num_items=2)
    acc.step()
    assert np.isfinite(acc.window_loss)
    updated, warned = _nan_step(acc, _mean_loss(w, X[2:4]))
    assert updated is False and warned
    assert np.isnan(acc.window_loss), (
        f"window_loss is {acc.window_loss} after a window with a nan loss was skipped; "
        "_skip_window records the skipped window's loss (nan), not the previous window's")


@pytest.mark.exercise("5.3")
def test_a_skipped_window_leaves_nothing_in_the_buffer():
    w, lr = _model(), 0.1
    acc = GradientAccumulator(SGD([w], lr=lr), accumulation_steps=2, compensated=True)
    acc.backward(_mean_loss(w, X[:2]), num_items=2)     # moved into the buffer
    acc.step()
    updated, _ = _nan_step(acc, _mean_loss(w, X[2:4]))
    assert updated is False and acc.skipped_windows == 1
    before = w.numpy().copy()
    rows = X[3:6]           # one micro-batch, applied by flush (no Kahan sum: chapter 12's)
    acc.backward(_mean_loss(w, rows), num_items=3)
    acc.step()
    assert acc.flush() is True
    expected = before - lr * 2 * rows.T @ (rows @ before) / 3
    assert_close(w, expected, "the parameters after the window that follows a skipped one "
                 "(with a buffer, compensated=True)",
                 [(before - lr * (2 * rows.T @ (rows @ before) + 2 * X[:2].T @ (X[:2] @ before))
                   / 3, "the skipped window's first micro-batch is still in the buffer: "
                        "a skipped window's sums must not reach the next window")])


@pytest.mark.exercise("5.3")
def test_a_skipped_window_drops_its_batchnorm_statistics():
    """The merging of the statistics is chapter 6's: here they are set by hand."""
    w, bn = _model(), nn.BatchNorm1d(2)
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=1, model=bn)
    bn.set_pending_stats({"count": np.array(4), "mean": np.array([5.0, 6.0]),
                          "m2": np.array([1.0, 2.0])})
    updated, _ = _nan_step(acc, _mean_loss(w, X[:2]))
    assert updated is False and acc.skipped_windows == 1
    assert bn.get_pending_stats() is None, (
        "the skipped window's BatchNorm statistics are still pending, to be merged into the "
        "next window's: _skip_window drops them (layer.set_pending_stats(None) for each "
        "layer of nn.batchnorm_layers(self.model))")


class _ScalerWithoutUnscale(GradScaler):
    """A GradScaler whose ``unscale_`` (exercise 12.2, chapter 12) does nothing:
    the windows here hold no gradient to unscale."""

    def unscale_(self, optimizer):
        pass


@pytest.mark.exercise("5.3")
def test_a_skipped_window_backs_the_scale_off_under_a_grad_scaler():
    w = _model()
    scaler = _ScalerWithoutUnscale(init_scale=8.0)
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=1, scaler=scaler)
    updated, warned = _nan_step(acc, _mean_loss(w, X[:2]))
    assert updated is False and acc.skipped_windows == 1
    assert scaler.get_scale() == 4.0, (
        f"the scale is {scaler.get_scale()} after a window with a nan loss; under a "
        "GradScaler that is an overflow like any other: scaler.update() backs it off (8 → 4)")
    assert not warned, "under a GradScaler a non-finite window is skipped silently (no warning)"


@pytest.mark.exercise("5.3")
def test_a_window_without_items_warns_and_keeps_the_scale():
    w = _model()
    scaler = GradScaler(init_scale=8.0)
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=1, scaler=scaler)
    acc.backward(_mean_loss(w, X[:2]), num_items=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        updated = acc.step()
    assert updated is False and acc.skipped_windows == 1
    assert scaler.get_scale() == 8.0, (
        f"the scale is {scaler.get_scale()}: a window without items is no overflow, the "
        "scale stays; only a non-finite window backs it off")
    assert any(issubclass(c.category, RuntimeWarning) for c in caught), \
        "a window without items is skipped with a RuntimeWarning, a GradScaler or not"
