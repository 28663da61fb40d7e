"""A simulated clock for pipeline schedules: makespan, bubble, and stashed activations.

Each stage is one worker running its program (``schedule[s]``) in order.  An
operation starts when its stage is free *and* its inputs exist:

    start(F, s, j) = max(end of stage s's previous op, end(F, s-1, j))
    start(B, s, j) = max(end of stage s's previous op, end(B, s+1, j))

(``F(s, j) -> B(s, j)`` holds by the order of stage s's own program.)
Communication is free and instantaneous; only compute takes time.

The **bubble fraction** is the share of the ``p x makespan`` stage-time
rectangle in which stages sit idle::

    bubble = 1 - (sum of all op durations) / (p * makespan)

With uniform times, GPipe and 1F1B both give ``(p - 1) / (m + p - 1)``
(Huang et al. 2019, section 2.2): the pipeline takes ``m + p - 1`` slots
of ``t_forward + t_backward`` instead of m.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

from .schedules import check_schedule

__all__ = ["simulate", "SimulationResult", "peak_stash", "plot_timeline", "bubble_formula"]


def bubble_formula(p: int, m: int) -> float:
    """``(p - 1) / (m + p - 1)``: the idle share of a flushed pipeline with uniform stages."""
    return (p - 1) / (m + p - 1)


@dataclass
class SimulationResult:
    """What :func:`simulate` returns.

    Attributes:
        p, m: stages and micro-batches.
        makespan: time from the first op's start to the last op's end (the
            unit of ``t_forward`` / ``t_backward``).
        bubble: idle fraction of the ``p x makespan`` rectangle, in [0, 1).
        peak_stash: per stage, the largest number of micro-batches whose
            forward has run and whose backward has not (activations held).
        busy: per stage, the total time spent computing.
        timeline: ``(stage, op, j, start, end)`` for every op, in order of
            start time (ties by stage).
    """

    p: int
    m: int
    makespan: float
    bubble: float
    peak_stash: tuple
    busy: tuple
    timeline: list = field(repr=False)


def _per_stage(name, value, p):
    """A time per stage: one number for all, or a sequence of p numbers (> 0)."""
    values = [value] * p if isinstance(value, numbers.Real) else list(value)
    if len(values) != p:
        raise ValueError(f"simulate: {name} must be a number or {p} numbers (one per "
                         f"stage), got {len(values)}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0:
            raise ValueError(f"simulate: {name} must be > 0, got {v!r}")
    return [float(v) for v in values]


def peak_stash(schedule) -> tuple:
    """Per stage, the most micro-batches forwarded but not yet backwarded at once.

    It depends only on each stage's order, not on times: +1 at each F, -1 at
    each B.
    """
    check_schedule(schedule)
    peaks = []
    for ops in schedule:
        held = peak = 0
        for kind, _ in ops:
            held += 1 if kind == "F" else -1
            peak = max(peak, held)
        peaks.append(peak)
    return tuple(peaks)


def simulate(schedule, t_forward=1.0, t_backward=2.0) -> SimulationResult:
    """Run ``schedule`` on a simulated clock.

    Args:
        schedule: ``p`` lists of ``("F", j)`` / ``("B", j)`` (see
            :mod:`minigrad.pipeline.schedules`).
        t_forward: duration of one forward on one stage: a number > 0, or a
            sequence of p numbers (one per stage).
        t_backward: the same for a backward (about twice a forward in
            practice: it computes gradients for inputs and weights).

    Returns:
        A :class:`SimulationResult`.

    Raises:
        ValueError: a malformed schedule (:func:`check_schedule`), bad
            times, or a schedule that deadlocks (every stage waits on an op
            that can never run); the message names the waiting ops.
    """
    p, m = check_schedule(schedule)
    tf = _per_stage("t_forward", t_forward, p)
    tb = _per_stage("t_backward", t_backward, p)
    # BEGIN SOLUTION ch11.3
    end = {}                       # (op, s, j) -> end time
    free = [0.0] * p               # when each stage finishes its previous op
    position = [0] * p             # next op of each stage
    timeline = []
    progress = True
    while progress:
        progress = False
        for s in range(p):
            while position[s] < len(schedule[s]):
                kind, j = schedule[s][position[s]]
                if kind == "F":
                    dep = ("F", s - 1, j) if s > 0 else None
                    duration = tf[s]
                else:
                    dep = ("B", s + 1, j) if s < p - 1 else None
                    duration = tb[s]
                if dep is not None and dep not in end:
                    break            # wait for the other stage
                start = max(free[s], end[dep] if dep is not None else 0.0)
                free[s] = end[(kind, s, j)] = start + duration
                timeline.append((s, kind, j, start, start + duration))
                position[s] += 1
                progress = True
    # END SOLUTION
    waiting = [(s, *schedule[s][position[s]]) for s in range(p)
               if position[s] < len(schedule[s])]
    if waiting:
        raise ValueError(f"simulate: the schedule deadlocks; stages wait forever at "
                         f"(stage, op, j) = {waiting}")
    makespan = max(free)
    busy = tuple(m * (tf[s] + tb[s]) for s in range(p))
    bubble = 1.0 - sum(busy) / (p * makespan)
    timeline.sort(key=lambda row: (row[3], row[0]))
    return SimulationResult(p=p, m=m, makespan=makespan, bubble=bubble,
                            peak_stash=peak_stash(schedule), busy=busy, timeline=timeline)


def plot_timeline(result: SimulationResult, ax=None, title=None):
    """Draw a Gantt chart of a simulation: one row per stage, time to the right.

    Forwards are light boxes, backwards dark ones, each labelled with its
    micro-batch; white space is the bubble.  Needs matplotlib (imported
    here, not when minigrad is).

    Args:
        result: a :class:`SimulationResult`.
        ax: a matplotlib Axes to draw on (a new figure when None).
        title: the Axes title (default: p, m, makespan and bubble).

    Returns:
        The Axes.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415 (optional dependency)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.5 + 0.45 * result.p))
    colors = {"F": "#9ecae1", "B": "#3182bd"}
    for s, kind, j, start, end in result.timeline:
        ax.broken_barh([(start, end - start)], (s - 0.4, 0.8), facecolors=colors[kind],
                       edgecolors="black", linewidth=0.5)
        ax.text((start + end) / 2, s, f"{kind}{j}", ha="center", va="center", fontsize=7,
                color="black" if kind == "F" else "white")
    ax.set_yticks(range(result.p))
    ax.set_yticklabels([f"stage {s}" for s in range(result.p)])
    ax.set_ylim(result.p - 0.5, -0.5)
    ax.set_xlim(0, result.makespan)
    ax.set_xlabel("time")
    ax.set_title(title if title is not None else
                 f"p={result.p}, m={result.m}: makespan {result.makespan:g}, "
                 f"bubble {result.bubble:.1%}")
    return ax
