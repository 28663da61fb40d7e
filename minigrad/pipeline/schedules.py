"""Pipeline schedules: the order in which each stage runs its forwards and backwards.

A model is cut into ``p`` stages, a batch into ``m`` micro-batches.  Stage
``s`` runs ``F(s, j)`` (the forward of micro-batch ``j``) and ``B(s, j)``
(its backward) for every ``j``, and the data dependencies are

    F(s-1, j) -> F(s, j)      (stage s needs stage s-1's activation)
    B(s+1, j) -> B(s, j)      (stage s needs stage s+1's gradient)
    F(s, j)   -> B(s, j)      (a backward needs its own forward)

A *schedule* says, for each stage, the order of its 2m operations.  It is a
list of ``p`` lists of ``("F", j)`` / ``("B", j)`` tuples: ``schedule[s]`` is
stage s's program.  Both schedules below end with one optimizer update after
the last backward (a synchronous *flush*), so both compute the same update as
the full batch; they differ in idle time only at the margins and in memory.

* **GPipe** (Huang et al. 2019): every stage runs all m forwards, then all m
  backwards.  Stage s holds the activations of all m micro-batches at once.
* **1F1B** (PipeDream, Narayanan et al. 2019; with the flush of
  PipeDream-Flush, Narayanan et al. 2021): stage s runs ``p - s - 1`` warm-up
  forwards, then alternates one forward and one backward, then drains the
  remaining backwards.  Stage s never holds more than ``p - s`` micro-batches.
"""
from __future__ import annotations

import numbers

__all__ = ["gpipe", "one_f_one_b", "SCHEDULES", "get_schedule", "check_schedule"]


def _check_sizes(name, p, m):
    for label, value in (("p (stages)", p), ("m (micro-batches)", m)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name}: {label} must be an int >= 1, got {value!r}")
        if value < 1:
            raise ValueError(f"{name}: {label} must be >= 1, got {value}")


def gpipe(p: int, m: int) -> list[list[tuple[str, int]]]:
    """The GPipe schedule: all forwards, then all backwards, on every stage.

    Args:
        p: number of stages (int >= 1).
        m: number of micro-batches (int >= 1).

    Returns:
        ``p`` lists; list s is ``[("F", 0), ..., ("F", m-1), ("B", 0), ...,
        ("B", m-1)]``.  Backwards run in the order of the forwards, as in
        PyTorch's ``ScheduleGPipe``.

    Raises:
        TypeError / ValueError: ``p`` or ``m`` is not an int >= 1.

    Source: Huang et al., "GPipe: Efficient Training of Giant Neural Networks
    using Pipeline Parallelism", NeurIPS 2019, section 2.2 and figure 2.
    """
    _check_sizes("gpipe", p, m)
    # BEGIN SOLUTION ch11.1
    schedule = []
    for _stage in range(p):
        ops = [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
        schedule.append(ops)
    return schedule
    # END SOLUTION


def one_f_one_b(p: int, m: int) -> list[list[tuple[str, int]]]:
    """The 1F1B schedule (PipeDream-Flush): warm up, alternate, drain.

    Stage s (counted from 0) runs ``w = p - s - 1`` warm-up forwards, then
    ``m - w`` pairs "one forward, one backward", then the last ``w``
    backwards.  Backward j can start on stage s as soon as its gradient
    arrives, so a stage holds at most ``w + 1 = p - s`` stashed activations
    instead of GPipe's m.

    Args:
        p: number of stages (int >= 1).
        m: number of micro-batches, ``m >= p``.

    Returns:
        ``p`` lists of ``("F", j)`` / ``("B", j)`` tuples.

    Raises:
        TypeError / ValueError: ``p`` or ``m`` is not an int >= 1.
        ValueError: ``m < p``: the first stage's warm-up (p - 1 forwards)
            would not fill the pipeline; PyTorch's ``Schedule1F1B`` refuses
            it too.  Use :func:`gpipe` for so few micro-batches.

    Source: Narayanan et al., "PipeDream: Generalized Pipeline Parallelism
    for DNN Training", SOSP 2019; Narayanan et al., "Memory-Efficient
    Pipeline-Parallel DNN Training", ICML 2021 (PipeDream-Flush, figure 3).
    """
    _check_sizes("one_f_one_b", p, m)
    if m < p:
        raise ValueError(f"one_f_one_b: 1F1B needs at least as many micro-batches as "
                         f"stages (m >= p), got m={m} < p={p}; use gpipe({p}, {m}) or "
                         f"raise m")
    # BEGIN SOLUTION ch11.2
    schedule = []
    for stage in range(p):
        warmup = p - stage - 1
        ops = [("F", j) for j in range(warmup)]
        for j in range(m - warmup):
            ops.append(("F", warmup + j))
            ops.append(("B", j))
        ops += [("B", j) for j in range(m - warmup, m)]
        schedule.append(ops)
    return schedule
    # END SOLUTION


SCHEDULES = {"gpipe": gpipe, "1f1b": one_f_one_b}


def get_schedule(name: str, p: int, m: int) -> list[list[tuple[str, int]]]:
    """``SCHEDULES[name](p, m)``; ValueError naming the choices for an unknown name."""
    if name not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {name!r}; expected one of "
                         f"{sorted(SCHEDULES)}")
    return SCHEDULES[name](p, m)


def check_schedule(schedule) -> tuple[int, int]:
    """Check the form of a schedule and return its ``(p, m)``.

    Every stage must run ``("F", j)`` and ``("B", j)`` exactly once for each
    j in ``0 .. m-1`` (the same m on every stage), and ``F`` before ``B`` for
    each j.  Whether the cross-stage dependencies can be met (no deadlock) is
    checked by :func:`minigrad.pipeline.simulate`.

    Raises:
        TypeError: not a list of lists of ``(op, j)`` pairs.
        ValueError: an empty schedule, an unknown op, a missing or repeated
            ``(op, j)``, stages with different m, or a backward before its
            forward.
    """
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise ValueError(f"schedule: expected a non-empty list with one list of ops per "
                         f"stage, got {schedule!r}")
    m = None
    for s, ops in enumerate(schedule):
        if not isinstance(ops, (list, tuple)):
            raise TypeError(f"schedule: stage {s} must be a list of (op, j) pairs, got "
                            f"{type(ops).__name__}")
        seen_f, seen_b = set(), set()
        for k, op in enumerate(ops):
            if not (isinstance(op, (list, tuple)) and len(op) == 2 and op[0] in ("F", "B")
                    and isinstance(op[1], numbers.Integral) and op[1] >= 0):
                raise ValueError(f"schedule: stage {s}, position {k}: expected ('F', j) or "
                                 f"('B', j) with j >= 0, got {op!r}")
            kind, j = op[0], int(op[1])
            seen = seen_f if kind == "F" else seen_b
            if j in seen:
                raise ValueError(f"schedule: stage {s} runs {(kind, j)} twice")
            if kind == "B" and j not in seen_f:
                raise ValueError(f"schedule: stage {s} runs ('B', {j}) before ('F', {j})")
            seen.add(j)
        count = len(seen_f)
        if seen_f != set(range(count)) or seen_b != seen_f:
            raise ValueError(f"schedule: stage {s} must run F and B of each micro-batch "
                             f"0..{count - 1} once; forwards {sorted(seen_f)}, backwards "
                             f"{sorted(seen_b)}")
        if m is None:
            m = count
        elif count != m:
            raise ValueError(f"schedule: stage {s} has {count} micro-batches, stage 0 has {m}")
    if m == 0:
        raise ValueError("schedule: no micro-batches")
    return len(schedule), m
