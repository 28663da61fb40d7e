"""The gradient noise scale measured by GradientAccumulator: unbiased, and where it refuses.

The reference is exact: the per-example gradients of a small model (a loop
of batch-1 backwards), their mean G and covariance Σ.  Micro-batches are
drawn with replacement from those examples, so E|g_b|² = |G|² + tr(Σ)/b holds
exactly, and the mean of the accumulator's per-window estimates over many
windows must land on |G|² and tr(Σ) within a few standard errors.
"""
import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.optim import SGD, GradientAccumulator
from minigrad.optim.noise_scale import squared_norm, unbiased_estimates, window_estimates

N_EXAMPLES = 48


def _task(seed=0):
    """A two-layer tanh regression, its data, and the exact per-example gradients
    as an (N, P) array (float64)."""
    minigrad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N_EXAMPLES, 4))
    y = (np.sin(x[:, :1]) + 0.3 * rng.standard_normal((N_EXAMPLES, 1))) + 1.0
    per_example = []
    for i in range(N_EXAMPLES):                 # a loop of batch-1 backwards
        for p in model.parameters():
            p.grad = None
        _loss(model, x[i:i + 1], y[i:i + 1]).backward()
        per_example.append(np.concatenate([p.grad.numpy().ravel() for p in model.parameters()]))
    for p in model.parameters():
        p.grad = None
    return model, x, y, np.array(per_example)


def _loss(model, xb, yb):
    return nn.functional.mse_loss(model(minigrad.tensor(xb)), minigrad.tensor(yb))


def _exact(per_example):
    g = per_example.mean(axis=0)
    centered = per_example - g
    trace = float((centered ** 2).sum() / len(per_example))    # tr Σ, Σ over the population
    return float(g @ g), trace


def _run_windows(model, x, y, sizes, windows, seed=1, **options):
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.0), len(sizes),
                              track_noise_scale=True, **options)
    rng = np.random.default_rng(seed)
    for _ in range(windows):
        for n in sizes:
            idx = rng.integers(0, N_EXAMPLES, n)       # with replacement: independent items
            acc.backward(_loss(model, x[idx], y[idx]), num_items=n)
            acc.step()
    return acc


def test_estimator_is_unbiased_for_grad_sq_and_trace(float64):
    model, x, y, per_example = _task()
    grad_sq, trace = _exact(per_example)
    acc = _run_windows(model, x, y, sizes=[2, 3, 7], windows=1500, noise_scale_beta=0.995)
    est = np.array([[h["grad_sq"], h["trace"]] for h in acc.noise.history])
    assert len(est) == 1500 and all(h["small_batch"] == 4 for h in acc.noise.history)
    mean, se = est.mean(axis=0), est.std(axis=0, ddof=1) / np.sqrt(len(est))
    for name, m, s, true in (("|G|²", mean[0], se[0], grad_sq), ("tr Σ", mean[1], se[1], trace)):
        assert abs(m - true) < 4 * s, f"{name}: mean estimate {m:.5g} +- {s:.2g}, exact {true:.5g}"
        assert s < 0.1 * abs(true), f"{name}: the test is too weak (se {s:.2g} vs {true:.3g})"
    # B_simple: the ratio of the smoothed terms, against tr Σ / |G|² of the exact gradients
    assert acc.noise_scale == pytest.approx(acc.noise_trace / acc.noise_grad_sq)
    assert acc.noise_scale == pytest.approx(trace / grad_sq, rel=0.25)
    assert mean[1] / mean[0] == pytest.approx(trace / grad_sq, rel=0.1)


def test_equal_micro_batches_match_the_closed_form(float64):
    """One window by hand: the raw estimates from the exact squared norms."""
    model, x, y, per_example = _task()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.0), 3, track_noise_scale=True)
    groups = [np.array([0, 1]), np.array([2, 3, 4, 5]), np.array([6])]
    for idx in groups:
        acc.backward(_loss(model, x[idx], y[idx]), num_items=len(idx))
        acc.step()
    means = [per_example[idx].mean(axis=0) for idx in groups]
    window = per_example[np.concatenate(groups)].mean(axis=0)
    expected = window_estimates([m @ m for m in means], [len(i) for i in groups], window @ window)
    h = acc.noise.history[0]
    np.testing.assert_allclose([h["grad_sq"], h["trace"]], expected, rtol=1e-10)
    assert acc.noise_grad_sq == pytest.approx(expected[0])      # the first average: the raw value


def test_closed_forms_recover_exact_expectations():
    g2, tr = 2.5, 40.0
    b, big = 4.0, 32.0
    np.testing.assert_allclose(unbiased_estimates(g2 + tr / b, b, g2 + tr / big, big), (g2, tr))
    sizes = [1, 5, 10]                          # unequal: item weights, b = B / k
    np.testing.assert_allclose(
        window_estimates([g2 + tr / n for n in sizes], sizes, g2 + tr / sum(sizes)), (g2, tr))


def test_clipping_and_the_loss_scale_do_not_change_the_estimate(float64):
    model, x, y, _ = _task()
    state = model.state_dict()
    plain = _run_windows(model, x, y, sizes=[3, 5], windows=4)
    model.load_state_dict(state)
    clipped = _run_windows(model, x, y, sizes=[3, 5], windows=4, max_grad_norm=1e-3)
    np.testing.assert_allclose([h["trace"] for h in clipped.noise.history],
                               [h["trace"] for h in plain.noise.history], rtol=1e-9)


def test_squared_norm_takes_no_copy_of_a_contiguous_gradient():
    g = np.arange(12.0).reshape(3, 4)
    assert squared_norm(g) == pytest.approx((g * g).sum())
    assert squared_norm(g.T) == pytest.approx((g * g).sum())      # F-contiguous: a view
    assert squared_norm(g.astype(np.float16)) == pytest.approx((g * g).sum())


def test_memory_cost_is_a_small_fraction_of_the_gradients(float64):
    from minigrad.memory import peak
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 64))
    grad_bytes = sum(p.data.nbytes for p in model.parameters())
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 64)), rng.standard_normal((8, 64))
    peaks = []
    for track in (False, True):
        acc = GradientAccumulator(SGD(model.parameters(), lr=0.0), 4, track_noise_scale=track)
        with peak() as mem:
            for j in range(8):
                acc.backward(_loss(model, x[j:j + 1], y[j:j + 1]), num_items=1)
                acc.step()
        peaks.append(mem.peak_bytes)
    assert peaks[1] - peaks[0] < 0.25 * grad_bytes, (peaks, grad_bytes)


def test_refuses_where_it_does_not_apply(float64):
    model, x, y, _ = _task()
    with pytest.raises(ValueError, match="one micro-batch"):
        GradientAccumulator(SGD(model.parameters(), lr=0.1), 1, track_noise_scale=True)
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2, track_noise_scale=True)
    with pytest.raises(ValueError, match="num_items"):
        acc.backward(_loss(model, x[:2], y[:2]))
    bn = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 1))
    with pytest.raises(ValueError, match="BatchNorm"):
        GradientAccumulator(SGD(bn.parameters(), lr=0.1), 2, model=bn, track_noise_scale=True)
    acc = GradientAccumulator(SGD(bn.parameters(), lr=0.1), 2, track_noise_scale=True)
    with pytest.raises(ValueError, match="BatchNorm"):
        acc.backward(_loss(bn, x[:4], y[:4]), num_items=4)
    bn.eval()                                   # eval mode: each item on its own, fine
    acc.backward(_loss(bn, x[:4], y[:4]), num_items=4)
    assert acc.noise_scale is None              # before the first window


def test_off_by_default_and_observers_are_released(float64):
    from minigrad import autograd
    model, x, y, _ = _task()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2)
    assert acc.noise is None and acc.noise_scale is None
    before = len(autograd._leaf_observers)
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2, track_noise_scale=True)
    assert len(autograd._leaf_observers) == before + 1
    del acc
    import gc
    gc.collect()
    assert len(autograd._leaf_observers) == before


class _ThreadComm:
    """W ranks as threads of one process: Allreduce sums through a barrier."""

    def __init__(self, rank, size, shared):
        self.rank, self.size, self.shared = rank, size, shared

    def Get_rank(self):  # noqa: N802
        return self.rank

    def Get_size(self):  # noqa: N802
        return self.size

    def Allreduce(self, sendbuf, recvbuf, op=None):  # noqa: N802
        slots, barrier = self.shared
        slots[self.rank] = np.array(recvbuf, copy=True)
        barrier.wait()
        total = sum(slots)
        barrier.wait()
        recvbuf[...] = total


def test_data_parallel_ranks_are_the_small_batches(float64):
    """Two ranks, one micro-batch each (3 and 5 items): each rank's window is a
    small batch, the all-reduced window the big one, item-weighted."""
    import threading
    model, x, y, per_example = _task()
    state = model.state_dict()
    groups = [np.arange(0, 3), np.arange(3, 8)]
    shared = ([None, None], threading.Barrier(2))
    results, errors = [None, None], []

    def rank(r):
        try:
            minigrad.set_default_dtype(np.float64)
            replica = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
            replica.load_state_dict(state)
            acc = GradientAccumulator(SGD(replica.parameters(), lr=0.0), 1,
                                      comm=_ThreadComm(r, 2, shared), track_noise_scale=True)
            idx = groups[r]
            acc.backward(_loss(replica, x[idx], y[idx]), num_items=len(idx))
            acc.step()
            results[r] = acc.noise.history[0]
        except Exception as e:          # noqa: BLE001 (reported below)
            errors.append(e)
            shared[1].abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    means = [per_example[idx].mean(axis=0) for idx in groups]
    window = per_example[np.concatenate(groups)].mean(axis=0)
    expected = window_estimates([m @ m for m in means], [3, 5], window @ window)
    for h in results:
        assert h["small_batch"] == 4 and h["items"] == 8
        np.testing.assert_allclose([h["grad_sq"], h["trace"]], expected, rtol=1e-10)


def test_the_same_estimates_on_every_device(device, float64):
    """On the GPU the micro-batch norms stay on the device until the window ends."""
    model, x, y, _ = _task()
    state = model.state_dict()
    groups = [np.arange(0, 3), np.arange(3, 5), np.arange(5, 12), np.arange(12, 14)]
    estimates = []
    for where in ("cpu", device):
        model.load_state_dict(state)
        model.to(where)
        acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2, track_noise_scale=True)
        for idx in groups:
            out = model(minigrad.tensor(x[idx], device=where))
            loss = nn.functional.mse_loss(out, minigrad.tensor(y[idx], device=where))
            acc.backward(loss, num_items=len(idx))
            acc.step()
        estimates.append([[h["grad_sq"], h["trace"]] for h in acc.noise.history])
        model.to("cpu")
    assert len(estimates[0]) == 2
    np.testing.assert_allclose(estimates[1], estimates[0], rtol=1e-9)
