"""Exercises of chapter 6 (the BatchNorm exception): merged statistics."""
import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.nn.normalization import channel_moments, merge_moments

from .check import assert_close, rng

X = rng(1).standard_normal((6, 3, 2)) * 2 + 1


def _summary(x):
    axes = (0, 2)
    return {"count": x.size // x.shape[1], "mean": x.mean(axis=axes),
            "m2": ((x - x.mean(axis=axes, keepdims=True)) ** 2).sum(axis=axes)}


@pytest.mark.exercise("6.1")
def test_channel_moments():
    got = channel_moments(minigrad.tensor(X))
    want = _summary(X)
    assert int(got["count"]) == 12, f"count is N × L = 12 values per channel, got {got['count']}"
    assert_close(got["mean"], want["mean"], "the per-channel mean (over axes 0 and 2)",
                 [(X.mean(axis=(1, 2)), "average over every axis but the channel axis 1")])
    assert_close(got["m2"], want["m2"], "M2, the sum of squared deviations per channel",
                 [(want["m2"] / 12, "M2 is the *sum* of squares (biased variance × count)"),
                  (want["m2"] / 11, "M2 is the *sum* of squares, not the unbiased variance")])


@pytest.mark.exercise("6.2")
def test_chan_merge_equals_the_moments_of_the_union():
    a, b = X[:2], X[2:]
    merged = merge_moments(_summary(a), _summary(b))
    want = _summary(X)
    assert int(merged["count"]) == 12
    assert_close(merged["mean"], want["mean"], "the merged mean",
                 [((_summary(a)["mean"] + _summary(b)["mean"]) / 2,
                   "weight each mean by its count (4 and 8 values), not equally")])
    naive = _summary(a)["m2"] + _summary(b)["m2"]
    assert_close(merged["m2"], want["m2"], "the merged M2",
                 [(naive, "adding the two M2 misses the spread between the two means: "
                          "+ δ²·n_a·n_b / n (Chan, Golub & LeVeque)")])
    assert merge_moments(None, _summary(a)) is not None




@pytest.mark.exercise("6.3")
def test_micro_batches_merge_into_the_window_statistics():
    bn = nn.BatchNorm1d(3, merge_running_stats=True, dtype=np.float64)
    for part in (X[:2], X[2:3], X[3:]):
        bn(minigrad.tensor(part))
    pending = bn.get_pending_stats()
    assert pending is not None, "after three micro-batches the window's statistics are pending"
    want = _summary(X)
    assert int(pending["count"]) == 12, \
        f"the pending count is {int(pending['count'])}; the window holds 12 values per channel"
    assert_close(pending["mean"], want["mean"], "the pending mean of the window")
    assert_close(pending["m2"], want["m2"], "the pending M2 of the window",
                 [(_summary(X[3:])["m2"], "merge every micro-batch into the pending state; "
                   "this is the last micro-batch alone")])
    assert_close(bn.running_mean, np.zeros(3), "running_mean during the window (unchanged)")


@pytest.mark.exercise("6.4")
def test_one_running_statistics_update_per_window():
    bn = nn.BatchNorm1d(3, merge_running_stats=True, dtype=np.float64)
    for part in (X[:2], X[2:]):
        bn(minigrad.tensor(part))
    assert bn.apply_merged_running_stats() is True
    want = _summary(X)
    assert_close(bn.running_mean, 0.1 * want["mean"], "running_mean after one window",
                 [(0.1 * 0.9 * _summary(X[:2])["mean"] + 0.1 * _summary(X[2:])["mean"],
                   "one update per window with the merged mean, not one per micro-batch")])
    assert_close(bn.running_var, 0.9 + 0.1 * want["m2"] / 11, "running_var after one window",
                 [(0.9 + 0.1 * want["m2"] / 12, "running_var takes the unbiased variance "
                                                "M2 / (n - 1), as PyTorch")])
    assert int(bn.num_batches_tracked.item()) == 1
    assert bn.get_pending_stats() is None, "the pending state is cleared after the update"


@pytest.mark.exercise("6.1")
def test_channel_moments_are_float64_for_float32_input():
    got = channel_moments(minigrad.tensor(X.astype(np.float32)))
    for key in ("mean", "m2"):
        assert got[key].dtype == np.float64, \
            (f"channel_moments returns its {key} in {got[key].dtype}; compute on the float64 "
             "copy `data`, not on x.data: statistics merged over a window must not lose "
             "float32 precision")
    assert_close(got["m2"], _summary(X.astype(np.float32).astype(np.float64))["m2"],
                 "M2 of float32 input, computed in float64")


@pytest.mark.exercise("6.1")
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 2, 2)])
def test_channel_moments_of_2d_and_4d_input(shape):
    x = rng(2).standard_normal(shape) + 3
    axes = (0,) + tuple(range(2, x.ndim))
    got = channel_moments(minigrad.tensor(x))
    mean = x.mean(axis=axes)
    m2 = ((x - x.mean(axis=axes, keepdims=True)) ** 2).sum(axis=axes)
    assert int(got["count"]) == x.size // 3
    assert_close(got["mean"], mean, f"the per-channel mean of a {shape} input")
    assert_close(got["m2"], m2, f"M2 of a {shape} input (the mean is broadcast back over "
                 "every axis but axis 1, whatever the number of axes)")

@pytest.mark.exercise("6.2")
def test_merged_count_is_an_int64_array():
    merged = merge_moments(_summary(X[:2]), _summary(X[2:]))
    count = np.asarray(merged["count"])
    assert count.dtype == np.int64 and count.shape == (), \
        (f"the merged count is a {count.dtype} array of shape {count.shape}; it is an int64 "
         "0-d array, as channel_moments returns it (a count of values, not a float)")
    assert int(count) == 12


@pytest.mark.exercise("6.4")
def test_cumulative_average_with_momentum_none():
    bn = nn.BatchNorm1d(3, momentum=None, merge_running_stats=True, dtype=np.float64)
    windows = (X[:3], X[3:])
    for i, window in enumerate(windows):
        bn(minigrad.tensor(window))
        assert bn.apply_merged_running_stats() is True
        assert int(bn.num_batches_tracked.item()) == i + 1
    first, second = _summary(windows[0]), _summary(windows[1])
    assert_close(bn.running_mean, (first["mean"] + second["mean"]) / 2,
                 "running_mean after two windows with momentum=None",
                 [(0.9 * 0.1 * first["mean"] + 0.1 * second["mean"],
                   "momentum=None is the cumulative average: the factor is "
                   "1 / num_batches_tracked (use self._next_factor()), not 0.1")])
    assert_close(bn.running_var, (first["m2"] / 5 + second["m2"] / 5) / 2,
                 "running_var after two windows with momentum=None (mean of the unbiased "
                 "variances M2 / (n - 1))")
