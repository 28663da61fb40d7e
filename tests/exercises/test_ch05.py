"""Exercises of chapter 5 (normalizing the loss)."""
import warnings

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.data.text import make_lm_batch
from minigrad.experiments.char_lm import token_loss
from minigrad.optim import SGD, GradientAccumulator

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
