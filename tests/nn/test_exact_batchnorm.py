"""Exact BatchNorm from micro-batches (nn.exact_batchnorm_backward): the full batch's
gradients, parameters after 20 SGD-momentum and AdamW updates, and running
statistics, to 1e-12 relative in float64; the pass counts of the derivation
(2L + 1 forward, L + 1 backward per window, a layer between BatchNorm i and
i + 1 running 2L + 1 - i times forward and i + 1 times backward); dropout and
checkpointing inside; memory of one micro-batch; every bad-input error."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn, optim
from minigrad.autograd import Function
from minigrad.checkpointing import checkpoint_sequential
from minigrad.experiments.exact_batchnorm import case_batchnorm_exact, case_exact_batchnorm
from minigrad.testing import max_rel_diff

EXACT = 1e-12


# ------------------------------------------------ training runs vs the full batch
@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adamw"])
@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("model", ["mlp1", "mlp2", "cnn"])
def test_twenty_updates_equal_the_full_batch(model, k, optimizer):
    r = case_exact_batchnorm(model, optimizer=optimizer, batch_size=32, accumulation_steps=k,
                             updates=20)
    layers = r.extras["layers"]
    assert r.grad_rel_diff <= EXACT, r.param_rel_by_name
    assert r.param_rel_diff <= EXACT, r.param_rel_by_name     # parameters + running stats
    assert (r.extras["forward_passes"], r.extras["backward_passes"]) == \
        (2 * layers + 1, layers + 1)


@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adamw"])
@pytest.mark.parametrize("model", ["mlp1", "mlp2", "cnn"])
def test_unequal_micro_batches_equal_the_full_batch(model, optimizer):
    r = case_exact_batchnorm(model, optimizer=optimizer, batch_size=32,
                             micro_sizes=[3, 5, 8, 16], updates=20)
    assert r.grad_rel_diff <= EXACT and r.param_rel_diff <= EXACT, r.param_rel_by_name


@pytest.mark.parametrize("model", ["mlp1", "mlp2", "cnn"])
def test_the_default_mode_still_differs(model):
    r = case_exact_batchnorm(model, mode="plain", batch_size=32, accumulation_steps=4,
                             updates=3)
    assert r.grad_rel_diff > 1e-2 and r.passed


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_verify_rows_are_exact(model):
    r = case_batchnorm_exact(model, updates=3)
    assert r.passed and r.grad_rel_diff <= EXACT and r.param_rel_diff <= EXACT
    assert "exact (multi-pass)" in r.name


# ------------------------------------------------------------- small set-ups
def _data(n=24, features=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, features)), rng.integers(0, classes, n)


def _split(arrays, sizes):
    bounds = np.cumsum([0, *sizes])
    return [tuple(a[lo:hi] for a in arrays) for lo, hi in zip(bounds[:-1], bounds[1:])]


def _ce(model, batch, device="cpu"):
    x, y = batch[0], batch[1]
    logits = model(minigrad.tensor(x, device=device))
    return nn.functional.cross_entropy(logits, minigrad.tensor(y, device=device)), len(y)


def _grads(model):
    return [p.grad.numpy().copy() for p in model.parameters()]


def _stats(model):
    return [b.numpy().astype(np.float64) for b in model.buffers()]


def _full_and_exact(make, batch, sizes, loss_fn=_ce, device="cpu"):
    """Gradients and buffers of one full-batch backward and of the exact micro-batches."""
    minigrad.manual_seed(0)
    full = make().to(device)
    minigrad.manual_seed(0)
    exact = make().to(device)
    loss, _ = loss_fn(full, batch)
    loss.backward()
    passes = nn.exact_batchnorm_backward(exact, _split(batch, sizes), loss_fn)
    assert passes.window_loss == pytest.approx(float(loss.item()), rel=1e-13)
    return full, exact, passes


def _mlp(*widths, bn=nn.BatchNorm1d, bias=True):
    layers = []
    for a, b in zip(widths[:-2], widths[1:-1]):
        layers += [nn.Linear(a, b, bias=bias), bn(b), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(widths[-2], widths[-1]))


def test_gradient_and_running_stats_on_device(float64, device):
    full, exact, passes = _full_and_exact(lambda: _mlp(5, 8, 6, 3), _data(), [3, 5, 7, 9],
                                          device=device)
    assert max_rel_diff(_grads(exact), _grads(full)) <= EXACT
    assert max_rel_diff(_stats(exact), _stats(full)) <= EXACT
    assert (passes.layers, passes.forward_passes, passes.backward_passes) == (2, 5.0, 3.0)


@pytest.mark.torch
def test_gradient_equals_pytorch_full_batch(float64, torch):
    x, y = _data()
    minigrad.manual_seed(0)
    model = _mlp(5, 8, 6, 3)
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.BatchNorm1d(8),
                                 torch.nn.Tanh(), torch.nn.Linear(8, 6),
                                 torch.nn.BatchNorm1d(6), torch.nn.Tanh(),
                                 torch.nn.Linear(6, 3)).double()
    with torch.no_grad():
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            tp.copy_(torch.from_numpy(p.numpy()))
    torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x)),
                                      torch.from_numpy(y)).backward()
    nn.exact_batchnorm_backward(model, _split((x, y), [6, 6, 6, 6]), _ce)
    want = [tp.grad.numpy() for tp in tmodel.parameters()]
    assert max_rel_diff(_grads(model), want) <= EXACT
    tstats = [b.numpy() for n, b in tmodel.named_buffers() if "running" in n]
    stats = [b.numpy() for n, b in model.named_buffers() if "running" in n]
    assert max_rel_diff(stats, tstats) <= EXACT


# ------------------------------------------------------------- pass counts
class _Count(Function):
    def __init__(self, counter):
        self.counter = counter

    def forward(self, x):
        return x

    def backward(self, g):
        self.counter["backward"] += 1
        return g


class Counter(nn.Module):
    """Identity that counts the forwards and backwards run through it."""

    def __init__(self):
        super().__init__()
        self.counts = {"forward": 0, "backward": 0}

    def forward(self, x):
        self.counts["forward"] += 1
        return _Count(self.counts)(x)


@pytest.mark.parametrize("n_layers", [1, 2, 3])
def test_pass_counts_match_the_derivation(float64, n_layers):
    counters = [Counter() for _ in range(n_layers + 1)]
    layers = [nn.Linear(4, 6), counters[0]]
    for i in range(n_layers):
        layers += [nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 6), counters[i + 1]]
    model = nn.Sequential(*layers, nn.Linear(6, 2))
    x, y = _data(16, 4, 2)
    k = 4
    passes = nn.exact_batchnorm_backward(model, _split((x, y), [4] * k), _ce)
    assert passes.layers == passes.statistics_passes == passes.collecting_passes == n_layers
    assert (passes.forward_passes, passes.backward_passes) == (2 * n_layers + 1, n_layers + 1)
    for i, c in enumerate(counters):      # c sits between BatchNorm i and i + 1
        assert c.counts == {"forward": (2 * n_layers + 1 - i) * k, "backward": (i + 1) * k}


def test_eval_mode_is_one_plain_pass(float64):
    model = _mlp(5, 8, 3)
    model.eval()
    x, y = _data()
    passes = nn.exact_batchnorm_backward(model, _split((x, y), [12, 12]), _ce)
    assert (passes.layers, passes.forward_passes, passes.backward_passes) == (0, 1.0, 1.0)


# ------------------------------------------------ model shapes and layer options
def test_batchnorm1d_on_sequences_and_without_affine_or_running_stats(float64):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Linear(5, 4)
            self.bn = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
            self.bn2 = nn.BatchNorm1d(4, momentum=None)
            self.head = nn.Linear(4, 3)

        def forward(self, x):                    # x (N, 5) -> (N, 4, 3) sequences
            h = self.conv(x).reshape(x.shape[0], 4, 1) * minigrad.tensor(np.arange(1.0, 4.0))
            h = self.bn2(self.bn(h).tanh())
            return self.head(h.mean(axis=2))

    full, exact, _ = _full_and_exact(Net, _data(), [5, 7, 12])
    assert max_rel_diff(_grads(exact), _grads(full)) <= EXACT
    assert max_rel_diff(_stats(exact), _stats(full)) <= EXACT


def test_skip_connection_around_batchnorm(float64):
    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(5, 5), nn.Linear(5, 5)
            self.bn1, self.bn2 = nn.BatchNorm1d(5), nn.BatchNorm1d(5)
            self.head = nn.Linear(5, 3)

        def forward(self, x):
            h = self.bn1(self.a(x)).tanh() + x
            return self.head(self.bn2(self.b(h)).tanh() + h + x)

    full, exact, passes = _full_and_exact(Residual, _data(), [6, 8, 10])
    assert passes.layers == 2
    assert max_rel_diff(_grads(exact), _grads(full)) <= EXACT


def test_micro_batches_of_one_example(float64):
    """A BatchNorm1d micro-batch of one example is an error in plain training, but
    the exact mode normalizes with the window's statistics: k = N works."""
    full, exact, _ = _full_and_exact(lambda: _mlp(5, 8, 3), _data(8), [1] * 8)
    assert max_rel_diff(_grads(exact), _grads(full)) <= EXACT


def test_dropout_with_per_example_masks(float64):
    def make():
        return nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(),
                             nn.Dropout(0.3, per_example=True, layer_id=0), nn.Linear(8, 6),
                             nn.BatchNorm1d(6), nn.Tanh(),
                             nn.Dropout(0.3, per_example=True, layer_id=1), nn.Linear(6, 3))

    def loss_fn(model, batch):
        x, y, index = batch
        with nn.dropout_context(step=3, example_index=index):
            return _ce(model, (x, y))

    x, y = _data()
    full, exact, _ = _full_and_exact(make, (x, y, np.arange(len(y))), [4, 8, 12], loss_fn)
    assert max_rel_diff(_grads(exact), _grads(full)) <= EXACT


def test_checkpointed_segments(float64):
    class Checkpointed(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = _mlp(5, 8, 8, 6, 3)

        def forward(self, x):
            return checkpoint_sequential(self.body, 3, x)

    x, y = _data()
    minigrad.manual_seed(0)
    plain = _mlp(5, 8, 8, 6, 3)
    plain_loss, _ = _ce(plain, (x, y))
    plain_loss.backward()
    minigrad.manual_seed(0)
    model = Checkpointed()
    passes = nn.exact_batchnorm_backward(model, _split((x, y), [8, 8, 8]), _ce)
    assert passes.layers == 3
    assert max_rel_diff(_grads(model), _grads(plain)) <= EXACT
    assert max_rel_diff(_stats(model), _stats(plain)) <= EXACT


# ------------------------------------------ accumulator, .grad and running stats
def test_without_accumulator_adds_the_mean_gradient_into_grad(float64):
    x, y = _data()
    minigrad.manual_seed(0)
    model = _mlp(5, 8, 3)
    nn.exact_batchnorm_backward(model, _split((x, y), [12, 12]), _ce)
    once = _grads(model)
    nn.exact_batchnorm_backward(model, lambda: iter(_split((x, y), [8, 16])), _ce)
    np.testing.assert_allclose(_grads(model)[0], 2 * once[0], rtol=1e-13)
    bn = model[1]
    assert int(bn.num_batches_tracked.item()) == 2     # one update per window


def test_accumulator_applies_the_window_statistics_once_and_steps_once(float64):
    x, y = _data()
    minigrad.manual_seed(0)
    model = _mlp(5, 8, 3)
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.1), 4, model=model)
    before = model[1].running_mean.numpy().copy()
    nn.exact_batchnorm_backward(model, _split((x, y), [12, 12]), _ce, acc)
    assert (acc.updates, acc.micro_step) == (1, 0)        # a short window is flushed
    assert int(model[1].num_batches_tracked.item()) == 1
    assert model[1].get_pending_stats() is None
    assert not np.allclose(model[1].running_mean.numpy(), before)


def test_a_non_finite_window_is_skipped_with_its_statistics(float64):
    x, y = _data()
    x[3, 0] = np.nan
    minigrad.manual_seed(0)
    model = _mlp(5, 8, 3)
    params = [p.numpy().copy() for p in model.parameters()]
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.1), 2, model=model)
    with pytest.warns(RuntimeWarning, match="non-finite"):
        nn.exact_batchnorm_backward(model, _split((x, y), [12, 12]), _ce, acc)
    assert acc.skipped_windows == 1 and acc.updates == 0
    assert int(model[1].num_batches_tracked.item()) == 0
    for p, before in zip(model.parameters(), params):
        np.testing.assert_array_equal(p.numpy(), before)


def test_accumulator_without_model_applies_the_statistics_at_once(float64):
    x, y = _data()
    minigrad.manual_seed(0)
    full = _mlp(5, 8, 3)
    minigrad.manual_seed(0)
    model = _mlp(5, 8, 3)
    with minigrad.no_grad():
        full(minigrad.tensor(x))
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.1), 3)
    nn.exact_batchnorm_backward(model, _split((x, y), [4, 8, 12]), _ce, acc)
    assert acc.updates == 1
    assert max_rel_diff(_stats(model), _stats(full)) <= EXACT


def test_a_non_finite_loss_without_accumulator_gives_non_finite_gradients(float64):
    """As a full-batch backward would: nothing is dropped silently."""
    x, y = _data()
    x[20, 1] = np.inf
    model = _mlp(5, 8, 3)
    with np.errstate(invalid="ignore"):                  # inf - inf in the statistics
        passes = nn.exact_batchnorm_backward(model, _split((x, y), [12, 12]), _ce)
    assert not np.isfinite(passes.window_loss)
    assert not np.isfinite(_grads(model)[0]).all()


@settings(max_examples=12, deadline=None)
@given(cuts=st.lists(st.integers(1, 23), min_size=1, max_size=6, unique=True),
       widths=st.lists(st.integers(2, 6), min_size=1, max_size=3))
def test_any_split_and_depth_gives_the_full_batch(cuts, widths):
    minigrad.set_default_dtype(np.float64)
    bounds = [0, *sorted(cuts), 24]
    sizes = [b - a for a, b in zip(bounds[:-1], bounds[1:])]
    full, exact, passes = _full_and_exact(lambda: _mlp(5, *widths, 3), _data(), sizes)
    assert passes.layers == len(widths)
    assert max_rel_diff(_grads(exact), _grads(full)) <= EXACT
    assert max_rel_diff(_stats(exact), _stats(full)) <= EXACT


def test_peak_memory_is_about_one_micro_batch(float64):
    """k = 8 micro-batches of 64: the exact window's peak stays near one micro-batch
    step's, far below the full batch of 512 (measured with minigrad.memory.peak)."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((512, 64)), rng.integers(0, 10, 512)
    minigrad.manual_seed(0)
    model = _mlp(64, 256, 256, 10)
    model(minigrad.tensor(x[:64]))                       # warm-up allocations
    with minigrad.memory.peak() as micro:
        loss, _ = _ce(model, (x[:64], y[:64]))
        loss.backward()
    with minigrad.memory.peak() as full:
        loss, _ = _ce(model, (x, y))
        loss.backward()
    with minigrad.memory.peak() as exact:
        nn.exact_batchnorm_backward(model, _split((x, y), [64] * 8), _ce)
    assert exact.peak_bytes < 2 * micro.peak_bytes
    assert exact.peak_bytes < full.peak_bytes / 3


def test_docstring_example():
    import doctest

    import minigrad.nn.exact_batchnorm as module
    result = doctest.testmod(module)
    assert result.attempted > 5 and result.failed == 0


# ------------------------------------------------------------------ errors
def test_errors(float64):
    x, y = _data()
    model = _mlp(5, 8, 3)
    windows = _split((x, y), [12, 12])
    with pytest.raises(TypeError, match="one-shot iterator"):
        nn.exact_batchnorm_backward(model, iter(windows), _ce)
    with pytest.raises(TypeError, match="must be a minigrad.nn.Module"):
        nn.exact_batchnorm_backward(lambda b: b, windows, _ce)
    with pytest.raises(ValueError, match="no micro-batch"):
        nn.exact_batchnorm_backward(model, [], _ce)
    with pytest.raises(TypeError, match="loss_fn must return"):
        nn.exact_batchnorm_backward(model, windows, lambda m, b: 1.0)
    with pytest.raises(ValueError, match="num_items must be a positive"):
        nn.exact_batchnorm_backward(model, windows, lambda m, b: (_ce(m, b)[0], 0))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.exact_batchnorm_backward(model, _split((x, y), [1])[:1], _ce)
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.1), 1)
    with pytest.raises(ValueError, match="do not fit in one window"):
        nn.exact_batchnorm_backward(model, windows, _ce, acc)
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.1), 4)
    loss, n = _ce(model, windows[0])
    acc.backward(loss, num_items=n)
    acc.step()
    with pytest.raises(RuntimeError, match="middle of a window"):
        nn.exact_batchnorm_backward(model, windows, _ce, acc)
    dropout = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.Dropout(0.5),
                            nn.Linear(8, 3))
    with pytest.raises(ValueError, match="per_example=True"):
        nn.exact_batchnorm_backward(dropout, windows, _ce)
    bn = nn.BatchNorm1d(5)
    twice = nn.Sequential(bn, nn.Tanh(), bn, nn.Linear(5, 3))
    with pytest.raises(ValueError, match="called twice"):
        nn.exact_batchnorm_backward(twice, windows, _ce)
    # the errors leave no window attached and .grad as it was
    assert all(layer._exact_window is None for layer in nn.batchnorm_layers(twice))
    assert model[1]._exact_window is None


def test_micro_batches_that_call_different_layers(float64):
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(5, 4)
            self.bn_a, self.bn_b = nn.BatchNorm1d(4), nn.BatchNorm1d(4)
            self.head = nn.Linear(4, 3)

        def forward(self, x):
            bn = self.bn_a if x.shape[0] < 10 else self.bn_b
            return self.head(bn(self.lin(x)))

    x, y = _data()
    with pytest.raises(RuntimeError, match="differently|different orders"):
        nn.exact_batchnorm_backward(Branchy(), _split((x, y), [6, 18]), _ce)


def test_window_loss_is_the_float64_sum_of_the_micro_batch_losses_to_the_bit():
    """The gradient pass sums w_j L_j on the loss's device and reads it once;
    the result is the Python float sum, bit for bit (float32 losses)."""
    seen = []

    def loss_fn(model, batch):
        loss, n = _ce(model, batch)
        seen.append((n, float(loss.item())))
        return loss, n

    sizes = [3, 5, 7, 9]
    model = _mlp(5, 8, 3)
    for p in model.parameters():
        p.data = p.data.astype(np.float32)
    x, y = _data()
    passes = nn.exact_batchnorm_backward(model, _split((x.astype(np.float32), y), sizes),
                                         loss_fn)
    loss_sum = 0.0
    for n, value in seen[-len(sizes):]:          # the last pass is the gradient pass
        loss_sum += n * value
    assert type(passes.window_loss) is float
    assert passes.window_loss == loss_sum / sum(sizes)
