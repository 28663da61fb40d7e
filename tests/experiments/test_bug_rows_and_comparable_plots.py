"""The table row of a reproduced bug reads as a bug, and the loss plot of
``train --compare-micro-batch`` puts comparable quantities side by side."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from minigrad.experiments import case_forgot_to_divide, format_table
from minigrad.experiments.training import (TRAIN_SIZES, items_seen, plot_losses, train,
                                          window_means)


def test_forgot_to_divide_row_reads_as_a_bug_reproduced():
    result = case_forgot_to_divide(accumulation_steps=2, micro_batch=4, windows=1)
    row = format_table([result]).splitlines()[2]
    assert row.startswith("bug: forgot 1/k, k=2")
    assert "2x grad" in row and "2x too large, as predicted" in row
    assert " equal " not in row and not row.split()[-4:].count("ok")
    # The JSON keys and values keep their meaning.
    assert result.to_dict()["expected"] == "equal" and result.to_dict()["passed"] is True


def test_a_failed_bug_row_still_reads_fail():
    result = case_forgot_to_divide(accumulation_steps=2, micro_batch=4, windows=1)
    broken = dataclasses.replace(result, grad_rel_diff=0.5)
    row = format_table([broken]).splitlines()[2]
    assert "FAIL" in row and "as predicted" not in row


def test_window_means_by_hand():
    # 9 items in batches of 2: sizes 2, 2, 2, 2, 1; windows of k = 2 updates.
    np.testing.assert_allclose(window_means([1, 2, 3, 4, 5], 2, 2, 1, 9), [1.5, 3.5, 5.0])
    # 7 items: sizes 2, 2, 2, 1; the short batch weighs 1 item: (3*2 + 6*1) / 3 = 4.
    np.testing.assert_allclose(window_means([1, 2, 3, 6], 2, 2, 1, 7), [1.5, 4.0])
    # Windows never straddle an epoch boundary (5 updates per epoch, k = 2).
    np.testing.assert_allclose(window_means(np.arange(10.0), 2, 2, 2, 9),
                               [0.5, 2.5, 4.0, 5.5, 7.5, 9.0])
    with pytest.raises(ValueError, match="window_means: 6 losses"):
        window_means(np.zeros(6), 2, 2, 1, 9)


def test_compare_micro_batch_curve_has_one_point_per_window(tmp_path, monkeypatch):
    result = train("digits", micro_batch=100, accumulation_steps=5, epochs=1,
                   compare_micro_batch=True, dtype=np.float64)
    means = window_means(result.micro_batch_losses, 100, 5, 1, TRAIN_SIZES["digits"])
    assert len(means) == len(result.losses) == 3
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    drawn = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: (drawn.append(fig), close(fig)))
    plot_losses(result, tmp_path / "losses.png")
    assert (tmp_path / "losses.png").stat().st_size > 0
    lines = drawn[0].axes[0].get_lines()
    plain = next(line for line in lines if line.get_label().startswith("plain batch 100"))
    np.testing.assert_allclose(plain.get_ydata(), means)
    np.testing.assert_array_equal(plain.get_xdata(), items_seen(3, 500, 1, TRAIN_SIZES["digits"]))


def test_summary_plot_draws_a_reproduced_bug_in_red():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    from minigrad.experiments import CaseResult
    from minigrad.experiments.plots import plot_summary
    bug = case_forgot_to_divide(accumulation_steps=2, micro_batch=4, windows=1)
    plain = CaseResult("plain", "equal", 1e-10, grad_rel_diff=1e-16)
    fig, ax = plt.subplots()
    plot_summary([bug, plain], ax)
    colors = [patch.get_facecolor() for patch in ax.patches]
    plt.close(fig)
    assert colors == [to_rgba("tab:red"), to_rgba("tab:blue")]
