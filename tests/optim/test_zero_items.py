"""Losses and micro-batches with zero items: every target ignored.

PyTorch: a mean over no kept position is nan, its gradient zeros, so one
update on a fully padded batch leaves the weights unchanged.  In the
accumulator such a micro-batch counts as one of the window's k, adds nothing,
and the update equals the full batch's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from minigrad import nn, optim

IGNORE = -100


def _ce(logits, target, **kw):
    return F.cross_entropy(logits, target, ignore_index=IGNORE, **kw)


def _nll(logits, target, **kw):
    return F.nll_loss(logits.log_softmax(axis=1), target, ignore_index=IGNORE, **kw)


LOSSES = {
    "cross_entropy": (_ce, lambda th, x, t, **kw: th.nn.functional.cross_entropy(
        x, t, ignore_index=IGNORE, **kw)),
    "cross_entropy label smoothing": (
        lambda x, t, **kw: _ce(x, t, label_smoothing=0.1, **kw),
        lambda th, x, t, **kw: th.nn.functional.cross_entropy(
            x, t, ignore_index=IGNORE, label_smoothing=0.1, **kw)),
    "nll_loss": (_nll, lambda th, x, t, **kw: th.nn.functional.nll_loss(
        x.log_softmax(1), t, ignore_index=IGNORE, **kw)),
}
SHAPES = {"(N, C)": ((4, 3), (4,)), "(N, C, d1, d2)": ((2, 3, 2, 2), (2, 2, 2))}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", LOSSES)
def test_every_target_ignored_gives_zero_gradients(name, shape, reduction, torch):
    x_shape, t_shape = SHAPES[shape]
    x = np.random.default_rng(0).standard_normal(x_shape)
    target = np.full(t_shape, IGNORE)
    mg_fn, th_fn = LOSSES[name]
    t = minigrad.tensor(x, requires_grad=True)
    loss = mg_fn(t, target, reduction=reduction)
    tt = torch.tensor(x, requires_grad=True)
    ref = th_fn(torch, tt, torch.tensor(target), reduction=reduction)
    np.testing.assert_array_equal(loss.numpy(), ref.detach().numpy())   # nan for "mean"
    loss.sum().backward()
    ref.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), tt.grad.numpy())
    np.testing.assert_array_equal(t.grad.numpy(), 0.0)


def test_sgd_step_on_a_fully_padded_batch_leaves_weights_unchanged():
    model = nn.Linear(3, 4)
    before = [p.numpy().copy() for p in model.parameters()]
    opt = optim.SGD(model.parameters(), lr=0.1)
    loss = F.cross_entropy(model(minigrad.ones((5, 3))), np.full(5, IGNORE),
                           ignore_index=IGNORE)
    assert np.isnan(loss.item())
    loss.backward()
    opt.step()
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)


def _data(rng):
    x = rng.standard_normal((12, 3))
    y = rng.integers(0, 4, 12)
    y[4:8] = IGNORE                               # micro-batch 2 is prompt only
    y[1] = IGNORE
    return x, y


def _model(seed=0):
    minigrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 4))


@pytest.mark.parametrize("make_opt", [lambda p: optim.SGD(p, lr=0.5, momentum=0.9),
                                      lambda p: optim.AdamW(p, lr=0.1)])
def test_empty_micro_batch_counts_and_update_equals_full_batch(float64, make_opt):
    x, y = _data(np.random.default_rng(3))
    full, acc_model = _model(), _model()
    full_opt = make_opt(full.parameters())
    acc = optim.GradientAccumulator(make_opt(acc_model.parameters()), 3)
    for _ in range(2):                             # two windows: no shift after the empty one
        full_opt.zero_grad()
        full_loss = F.cross_entropy(full(minigrad.tensor(x)), y, ignore_index=IGNORE)
        full_loss.backward()
        full_opt.step()
        results = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for j in range(3):
                xb, yb = x[4 * j:4 * j + 4], y[4 * j:4 * j + 4]
                loss = F.cross_entropy(acc_model(minigrad.tensor(xb)), yb,
                                       ignore_index=IGNORE)
                acc.backward(loss, num_items=int((yb != IGNORE).sum()))
                results.append(acc.step())
        assert results == [False, False, True]
        assert acc.window_loss == pytest.approx(full_loss.item(), rel=1e-12)
    assert acc.updates == 2 and acc.skipped_windows == 0
    for p, q in zip(full.parameters(), acc_model.parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-12, atol=1e-14)


def test_window_without_any_item_is_skipped_with_a_warning(float64):
    model = _model()
    before = [p.numpy().copy() for p in model.parameters()]
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.5, momentum=0.9), 2)
    x = minigrad.tensor(np.ones((2, 3)))
    empty = np.full(2, IGNORE)
    acc.backward(F.cross_entropy(model(x), empty), num_items=0)
    assert acc.step() is False
    acc.backward(F.cross_entropy(model(x), empty), num_items=0.0)
    with pytest.warns(RuntimeWarning, match="holds no items") as record:
        assert acc.step() is False
    assert record[0].filename == __file__          # the warning names the caller's line
    assert acc.skipped_windows == 1 and acc.updates == 0 and acc.micro_step == 0
    assert np.isnan(acc.window_loss)
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)
        assert p.grad is None
    # the next window is a normal one
    for _ in range(2):
        acc.backward(F.cross_entropy(model(x), np.array([0, 1])), num_items=2)
        done = acc.step()
    assert done and acc.updates == 1


def test_flush_of_an_empty_short_window_is_skipped(float64):
    model = _model()
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.5), 4)
    acc.backward(F.cross_entropy(model(minigrad.ones((2, 3))), np.full(2, IGNORE)),
                 num_items=0)
    acc.step()
    with pytest.warns(RuntimeWarning, match="holds no items") as record:
        assert acc.flush() is False
    assert record[0].filename == __file__
    assert acc.micro_step == 0 and acc.skipped_windows == 1
