"""Chapter 11's figures: pipelines on minigrad's simulated clock.

Every box, bubble and stash count is computed by ``minigrad.pipeline``
(``gpipe``, ``one_f_one_b``, ``simulate``, ``bubble_formula``).
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from minigrad.pipeline import gpipe, one_f_one_b, simulate
from minigrad.pipeline.simulate import bubble_formula, plot_timeline

from . import save

P, M = 4, 8                 # the chapter's worked example
T_F, T_B = 1.0, 2.0


def one_batch():
    """A whole batch pushed through p = 4 stages: one stage busy at a time."""
    r = simulate(gpipe(P, 1), T_F, T_B)
    fig, ax = plt.subplots(figsize=(8, 2.2))
    plot_timeline(r, ax=ax, title=f"one batch, {P} stages: makespan {r.makespan:g}, "
                                  f"idle share {r.bubble:.0%}")
    return save(fig, "11_one_batch.png")


def schedules():
    """GPipe and 1F1B at p = 4, m = 8 on the same time axis."""
    fig, axes = plt.subplots(2, 1, figsize=(10, 4.4), sharex=True)
    for ax, (name, schedule) in zip(axes, (("GPipe", gpipe), ("1F1B", one_f_one_b))):
        r = simulate(schedule(P, M), T_F, T_B)
        plot_timeline(r, ax=ax, title=f"{name}, p={P}, m={M}: makespan {r.makespan:g}, "
                                      f"bubble {r.bubble:.1%}, peak stash {r.peak_stash}")
    axes[0].set_xlabel("")
    return save(fig, "11_schedules.png")


def bubble():
    """The bubble against m, formula (lines) and simulated clock (dots)."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ms = list(range(1, 65))
    for p, color in zip((2, 4, 8), ("C0", "C1", "C2")):
        ax.plot(ms, [bubble_formula(p, m) for m in ms], color=color,
                label=f"p = {p}: (p − 1)/(m + p − 1)")
        dots = [m for m in (1, 2, 4, 8, 16, 32, 64)]
        ax.plot(dots, [simulate(gpipe(p, m), T_F, T_B).bubble for m in dots], "o",
                color=color, ms=4)
    ax.axhline(0.1, color="gray", ls="--", lw=0.8)
    ax.text(64, 0.105, "10 %", ha="right", va="bottom", color="gray", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("micro-batches per update, m")
    ax.set_ylabel("bubble (idle share)")
    ax.legend(fontsize=8)
    return save(fig, "11_bubble.png")


def _held(result, stage):
    """(time, micro-batches held) steps of one stage: +1 at each F's start, −1 at each B's end."""
    events = []
    for s, kind, _, start, end in result.timeline:
        if s == stage:
            events.append((start, 1) if kind == "F" else (end, -1))
    delta = {}
    for t, d in events:              # a B that ends as the next F starts: one step
        delta[t] = delta.get(t, 0) + d
    times, held, h = [0.0], [0], 0
    for t in sorted(delta):
        h += delta[t]
        times.append(t)
        held.append(h)
    times.append(result.makespan)
    held.append(h)
    return times, held


def stash():
    """Micro-batches whose activations stage 0 and stage 3 hold, over time."""
    m = 16
    runs = {"GPipe": simulate(gpipe(P, m), T_F, T_B), "1F1B": simulate(one_f_one_b(P, m), T_F, T_B)}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    for ax, stage in zip(axes, (0, P - 1)):
        for (name, r), color in zip(runs.items(), ("C3", "C0")):
            t, h = _held(r, stage)
            ax.step(t, h, where="post", color=color,
                    label=f"{name}: peak {r.peak_stash[stage]}")
        ax.set_title(f"stage {stage} (p={P}, m={m})")
        ax.set_xlabel("time")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("micro-batches stashed")
    axes[0].yaxis.get_major_locator().set_params(integer=True)
    return save(fig, "11_stash.png")


def draw_all():
    return [one_batch(), schedules(), bubble(), stash()]
