"""Exercises of chapter 11 (pipeline parallelism)."""
import pytest

from minigrad.pipeline.schedules import gpipe, one_f_one_b
from minigrad.pipeline.simulate import bubble_formula, peak_stash, simulate


def _program(schedule):
    return [" ".join(f"{kind}{j}" for kind, j in ops) for ops in schedule]


@pytest.mark.exercise("11.1")
@pytest.mark.parametrize("p, m", [(3, 4), (1, 2), (4, 1)])
def test_gpipe_runs_every_forward_then_every_backward(p, m):
    got = gpipe(p, m)
    assert isinstance(got, list) and len(got) == p, \
        f"gpipe({p}, {m}) must return one list of ops per stage ({p}), got " \
        f"{type(got).__name__} of length {len(got) if hasattr(got, '__len__') else '?'}"
    stage = [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
    for s, ops in enumerate(got):
        if m > 1 and [tuple(op) for op in ops] == [("F", j) for j in range(m)] + \
                [("B", j) for j in reversed(range(m))]:
            pytest.fail(f"gpipe({p}, {m}) stage {s}: the backwards run in the order of the "
                        "forwards (B0 first, as PyTorch's ScheduleGPipe), not reversed",
                        pytrace=False)
        assert [tuple(op) for op in ops] == stage, \
            f"gpipe({p}, {m}) stage {s} is {_program([ops])[0]!r}; expected " \
            f"{_program([stage])[0]!r}: all m forwards, then all m backwards"


@pytest.mark.exercise("11.2")
def test_one_f_one_b_reproduces_the_program_of_section_11_2():
    expected = ["F0 F1 F2 B0 F3 B1 B2 B3",
                "F0 F1 B0 F2 B1 F3 B2 B3",
                "F0 B0 F1 B1 F2 B2 F3 B3"]
    got = _program(one_f_one_b(3, 4))
    for s, (line, want) in enumerate(zip(got, expected)):
        assert line == want, \
            f"one_f_one_b(3, 4) stage {s} is {line!r}, expected {want!r}: stage s runs " \
            f"p - s - 1 = {3 - s - 1} warm-up forwards, then pairs (forward, backward), then " \
            "the remaining backwards"
    assert len(got) == 3, f"one_f_one_b(3, 4) must return 3 stages, got {len(got)}"


@pytest.mark.exercise("11.2")
@pytest.mark.parametrize("p, m", [(2, 2), (4, 4), (4, 9), (8, 16)])
def test_one_f_one_b_stashes_p_minus_s_micro_batches(p, m):
    schedule = one_f_one_b(p, m)
    peaks = peak_stash(schedule)          # also checks that F j comes before B j, once each
    assert peaks == tuple(p - s for s in range(p)), \
        f"one_f_one_b({p}, {m}): the peak stash per stage is {peaks}; stage s must hold at " \
        f"most p - s = {tuple(p - s for s in range(p))} micro-batches" + \
        (" (this is GPipe's m on every stage: alternate forward and backward after the "
         "warm-up)" if peaks == (m,) * p else "")


GPIPE_2_2 = [[("F", 0), ("F", 1), ("B", 0), ("B", 1)]] * 2


@pytest.mark.exercise("11.3")
def test_simulate_a_small_gpipe_by_hand():
    result = simulate(GPIPE_2_2, t_forward=1.0, t_backward=2.0)
    rows = sorted(result.timeline)
    expected = sorted([(0, "F", 0, 0.0, 1.0), (0, "F", 1, 1.0, 2.0),
                       (1, "F", 0, 1.0, 2.0), (1, "F", 1, 2.0, 3.0),
                       (1, "B", 0, 3.0, 5.0), (1, "B", 1, 5.0, 7.0),
                       (0, "B", 0, 5.0, 7.0), (0, "B", 1, 7.0, 9.0)])
    if result.makespan == 6.0:
        pytest.fail("the makespan is 6 = one stage's own work: an op must also wait for its "
                    "dependency (F j on the stage before, B j on the stage after) to end",
                    pytrace=False)
    assert [tuple(r) for r in rows] == expected, \
        f"the timeline (stage, op, j, start, end) of GPipe p = 2, m = 2, t_f = 1, t_b = 2 is " \
        f"{rows}; expected {expected}: an op starts at max(its stage is free, its " \
        "dependency has ended)"
    assert result.makespan == 9.0, f"makespan {result.makespan}, expected 9"
    assert result.bubble == pytest.approx(1 / 3, abs=1e-12), \
        f"bubble {result.bubble}, expected 1 - (2 stages · 6 busy) / (2 · 9) = 1/3"


@pytest.mark.exercise("11.3")
@pytest.mark.parametrize("p", [2, 4, 8])
def test_the_bubble_of_both_schedules_is_the_formula(p):
    for m in sorted({p, p + 1, 2 * p, 64}):
        for name, make in (("gpipe", gpipe), ("1f1b", one_f_one_b)):
            result = simulate(make(p, m), t_forward=1.0, t_backward=2.0)
            assert result.bubble == pytest.approx(bubble_formula(p, m), abs=1e-12), \
                f"{name} p = {p}, m = {m}: bubble {result.bubble:.6f}, expected " \
                f"(p - 1)/(m + p - 1) = {bubble_formula(p, m):.6f}"
            assert result.makespan == pytest.approx((m + p - 1) * 3.0), \
                f"{name} p = {p}, m = {m}: makespan {result.makespan}, expected " \
                f"(m + p - 1)(t_f + t_b) = {(m + p - 1) * 3.0}"


@pytest.mark.exercise("11.3")
def test_a_deadlocking_schedule_is_reported():
    # Stage 0 waits for B0 from stage 1, which waits for F1 from stage 0.
    schedule = [[("F", 0), ("B", 0), ("F", 1), ("B", 1)],
                [("F", 1), ("F", 0), ("B", 0), ("B", 1)]]
    with pytest.raises(ValueError, match="deadlock"):
        simulate(schedule)


@pytest.mark.exercise("11.3")
def test_simulate_uses_each_stage_s_own_times_and_waits_for_a_busy_stage():
    # stage 1 is slower: its F1 is ready at 2 (F1 of stage 0 ends) but waits for its F0
    result = simulate(GPIPE_2_2, t_forward=(1.0, 3.0), t_backward=(2.0, 4.0))
    rows = sorted(tuple(r) for r in result.timeline)
    expected = sorted([(0, "F", 0, 0.0, 1.0), (0, "F", 1, 1.0, 2.0),
                       (1, "F", 0, 1.0, 4.0), (1, "F", 1, 4.0, 7.0),
                       (1, "B", 0, 7.0, 11.0), (1, "B", 1, 11.0, 15.0),
                       (0, "B", 0, 11.0, 13.0), (0, "B", 1, 15.0, 17.0)])
    if (1, "F", 1, 2.0, 5.0) in rows:
        pytest.fail("stage 1 starts F1 at 2.0 while it still runs F0 (until 4.0): an op "
                    "starts at max(the end of its stage's previous op, the end of its "
                    "dependency)", pytrace=False)
    assert rows == expected, \
        f"GPipe p = 2, m = 2 with t_forward = (1, 3), t_backward = (2, 4) per stage: the " \
        f"timeline is {rows}; expected {expected}: an op of stage s lasts " \
        "t_forward[s] or t_backward[s], that stage's own time"
    assert result.makespan == 17.0, f"makespan {result.makespan}, expected 17"
