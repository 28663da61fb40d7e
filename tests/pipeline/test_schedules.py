"""The schedules: their form, their dependencies, the bubble and the stash."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.pipeline import (bubble_formula, check_schedule, get_schedule, gpipe,
                               one_f_one_b, peak_stash, simulate)

GRID = [(name, p, m) for name in ("gpipe", "1f1b") for p in (2, 4, 8) for m in range(1, 65)
        if not (name == "1f1b" and m < p)]


def _dependencies_met(result, schedule):
    """Check a timeline independently of the simulator's loop: every (stage, op, j)
    once, stages never run two ops at once, each stage keeps its program's order,
    and every op starts after the ops it depends on have ended."""
    p, m = result.p, result.m
    end = {}
    for s, kind, j, start, stop in result.timeline:
        assert (kind, s, j) not in end, f"{(kind, s, j)} runs twice"
        end[(kind, s, j)] = (start, stop)
    assert len(end) == 2 * p * m
    for s in range(p):
        intervals = [end[(kind, s, j)] for kind, j in schedule[s]]
        for (_, a_end), (b_start, _) in zip(intervals, intervals[1:]):
            assert b_start >= a_end, f"stage {s} runs two ops at once or out of order"
    for (kind, s, j), (start, _) in end.items():
        if kind == "F" and s > 0:
            assert start >= end[("F", s - 1, j)][1]
        if kind == "B":
            assert start >= end[("F", s, j)][1]
            if s < p - 1:
                assert start >= end[("B", s + 1, j)][1]


@pytest.mark.parametrize("name, p, m", [g for g in GRID if g[2] in (1, 2, 3, 4, 7, 8, 9, 16, 64)])
@pytest.mark.parametrize("times", [(1.0, 1.0), (1.0, 2.0), (0.3, [0.5, 0.9] * 4)])
def test_schedule_respects_dependencies_and_runs_each_op_once(name, p, m, times):
    schedule = get_schedule(name, p, m)
    assert check_schedule(schedule) == (p, m)
    for ops in schedule:
        assert sorted(ops) == sorted([("F", j) for j in range(m)] + [("B", j) for j in range(m)])
    tf, tb = times
    tb = tb[:p] if isinstance(tb, list) else tb
    _dependencies_met(simulate(schedule, tf, tb), schedule)


@pytest.mark.parametrize("times", [(1.0, 1.0), (1.0, 2.0), (0.25, 0.5)])
def test_uniform_bubble_is_p_minus_1_over_m_plus_p_minus_1(times):
    """GPipe's formula (Huang et al. 2019), for both schedules, p in {2, 4, 8}, m in 1..64."""
    worst = 0.0
    for name, p, m in GRID:
        result = simulate(get_schedule(name, p, m), *times)
        worst = max(worst, abs(result.bubble - (p - 1) / (m + p - 1)))
        assert result.makespan == pytest.approx((m + p - 1) * sum(times), rel=1e-12)
    assert worst <= 1e-12


def test_peak_stash_is_m_for_gpipe_and_p_minus_s_for_1f1b():
    for name, p, m in GRID:
        peaks = simulate(get_schedule(name, p, m)).peak_stash
        want = tuple([m] * p) if name == "gpipe" else tuple(p - s for s in range(p))
        assert peaks == want, (name, p, m)
        assert peak_stash(get_schedule(name, p, m)) == want


def test_one_f_one_b_program_by_hand():
    """p = 3, m = 4: warm-up p - s - 1 forwards, then alternate, then drain."""
    F, B = "F", "B"
    assert one_f_one_b(3, 4) == [
        [(F, 0), (F, 1), (F, 2), (B, 0), (F, 3), (B, 1), (B, 2), (B, 3)],
        [(F, 0), (F, 1), (B, 0), (F, 2), (B, 1), (F, 3), (B, 2), (B, 3)],
        [(F, 0), (B, 0), (F, 1), (B, 1), (F, 2), (B, 2), (F, 3), (B, 3)],
    ]
    assert gpipe(2, 2) == [[(F, 0), (F, 1), (B, 0), (B, 1)]] * 2


@pytest.mark.parametrize("p, m", [(2, 1), (4, 3), (8, 1), (8, 7)])
def test_one_f_one_b_refuses_fewer_micro_batches_than_stages(p, m):
    with pytest.raises(ValueError, match=r"m >= p.*m=%d < p=%d" % (m, p)):
        one_f_one_b(p, m)


def test_why_1f1b_needs_m_at_least_p():
    """Stage 0's warm-up is p - 1 forwards: with m < p its program would have to
    change shape, and its stash would be m, as GPipe's.  GPipe covers that case."""
    assert simulate(gpipe(4, 3)).peak_stash == (3, 3, 3, 3)


@pytest.mark.parametrize("bad, error", [
    ((0, 4), ValueError), ((4, 0), ValueError), ((2.0, 4), TypeError), ((True, 4), TypeError)])
def test_sizes_are_checked(bad, error):
    for fn in (gpipe, one_f_one_b):
        with pytest.raises(error, match="must be"):
            fn(*bad)


def test_unknown_schedule_name():
    with pytest.raises(ValueError, match="expected one of"):
        get_schedule("interleaved", 2, 4)


@pytest.mark.parametrize("schedule, message", [
    ([], "non-empty"),
    ([[("F", 0), ("F", 0), ("B", 0)]], "twice"),
    ([[("B", 0), ("F", 0)]], "before"),
    ([[("F", 0), ("B", 0)], [("F", 0)]], "once"),
    ([[("F", 0), ("B", 0)], [("F", 0), ("B", 0), ("F", 1), ("B", 1)]], "micro-batches"),
    ([[("X", 0)]], "expected"),
])
def test_malformed_schedules_are_refused(schedule, message):
    with pytest.raises(ValueError, match=message):
        check_schedule(schedule)


def test_a_deadlocking_schedule_is_detected():
    """Stage 0 wants B0 before F1; stage 1 wants F1 before B0: each waits for the other."""
    schedule = [[("F", 0), ("B", 0), ("F", 1), ("B", 1)],
                [("F", 0), ("F", 1), ("B", 0), ("B", 1)]]
    with pytest.raises(ValueError, match="deadlocks"):
        simulate(schedule)


def test_bad_times_are_refused():
    with pytest.raises(ValueError, match="t_forward must be > 0"):
        simulate(gpipe(2, 2), 0.0, 1.0)
    with pytest.raises(ValueError, match="one per stage"):
        simulate(gpipe(2, 2), 1.0, [1.0, 2.0, 3.0])


def test_unequal_stages_the_slowest_sets_the_pace():
    """A stage twice as slow: the makespan approaches m times its op time."""
    result = simulate(gpipe(2, 64), [1.0, 2.0], [2.0, 4.0])
    assert result.makespan == pytest.approx(64 * 6.0 + 3.0)
    assert result.bubble > bubble_formula(2, 64)


def test_plot_timeline_draws_one_box_per_op():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from minigrad.pipeline import plot_timeline
    result = simulate(one_f_one_b(4, 8))
    ax = plot_timeline(result)
    assert len(ax.collections) == 2 * 4 * 8
    assert "bubble 27.3%" in ax.get_title()
    plt.close(ax.figure)


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 10), extra=st.integers(0, 40),
       tf=st.floats(0.01, 100.0), tb=st.floats(0.01, 100.0),
       name=st.sampled_from(["gpipe", "1f1b"]))
def test_bubble_formula_for_any_equal_stage_times(p, extra, tf, tb, name):
    """Any p, any m >= p, any t_forward and t_backward shared by all stages."""
    m = p + extra
    result = simulate(get_schedule(name, p, m), tf, tb)
    assert abs(result.bubble - bubble_formula(p, m)) <= 1e-12
    _dependencies_met(result, get_schedule(name, p, m))


@settings(max_examples=40, deadline=None)
@given(times=st.lists(st.tuples(st.floats(0.1, 10.0), st.floats(0.1, 10.0)),
                      min_size=2, max_size=6),
       extra=st.integers(0, 12))
def test_unequal_stages_never_beat_the_slowest_stage(times, extra):
    """With stage times of any sizes the makespan is at least the busiest stage's
    work, plus the forwards that bring it micro-batch 0 and the backwards that take
    its last gradient back to stage 0; the bubble stays in [0, 1)."""
    p, m = len(times), len(times) + extra
    tf, tb = [t[0] for t in times], [t[1] for t in times]
    for name in ("gpipe", "1f1b"):
        result = simulate(get_schedule(name, p, m), tf, tb)
        for s in range(p):
            before = sum(tf[:s])               # micro-batch 0 reaches stage s
            after = sum(tb[:s])                # the last gradient leaves stage s
            assert result.makespan >= before + m * (tf[s] + tb[s]) + after - 1e-9
        assert 0.0 <= result.bubble < 1.0
        _dependencies_met(result, get_schedule(name, p, m))
