"""Figures of the verification suite (``python -m minigrad verify --plots DIR``).

Needs matplotlib (the ``cli`` extra); it is imported only here, on demand, with
the non-interactive Agg backend, so the rest of minigrad never needs it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .common import EQUAL, CaseResult


def _pyplot():
    import matplotlib  # noqa: PLC0415 (optional dependency)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415
    return plt, MaxNLocator


def plot_summary(results: list[CaseResult], ax) -> None:
    """Horizontal bars: each case's max relative difference, its tolerance as a tick (log scale)."""
    names = [r.name for r in results]
    # Exact zeros cannot be drawn on a log scale: show them at 1e-18.
    values = [max(r.max_rel_diff, 1e-18) if np.isfinite(r.max_rel_diff) else np.nan
              for r in results]
    # A reproduced bug (it has its own labels) is compared with its predicted value,
    # e.g. k x the full-batch gradient: red, so that it never reads as "harmless".
    colors = ["tab:red" if r.expected_label else
              "tab:blue" if r.expected == EQUAL else "tab:orange" for r in results]
    y = np.arange(len(results))
    ax.barh(y, values, color=colors)
    ax.scatter([r.tolerance for r in results], y, marker="|", s=300, color="black",
               label="tolerance / threshold")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("max relative difference, accumulated vs full batch")
    ax.set_title("blue: expected equal, orange: expected to differ, "
                 "red: a bug reproduced, vs its prediction", fontsize=9)
    ax.legend(loc="lower right")


def plot_per_update(results: list[CaseResult], axes) -> None:
    """Relative gradient difference at each update (log scale): cases expected to be
    equal on the first axis, cases expected to differ on the second."""
    plt, _ = _pyplot()
    groups = ([r for r in results if r.expected == EQUAL],
              [r for r in results if r.expected != EQUAL])
    titles = ("expected equal: rounding only", "expected to differ")
    for ax, group, title in zip(axes, groups, titles):
        colors = iter(plt.cm.tab20(np.linspace(0, 1, max(len(group), 1))))
        for r in group:
            if len(r.grad_rel_per_update):
                values = np.maximum(r.grad_rel_per_update, 1e-18)
                ax.plot(np.arange(1, len(values) + 1), values, marker=".", color=next(colors),
                        label=r.name)
        ax.set_yscale("log")
        ax.set_xlabel("update")
        ax.set_ylabel("gradient: max relative difference")
        ax.set_title(title)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plot_losses(results: list[CaseResult], axes) -> None:
    """Loss per update of the reference and accumulated runs, one panel per case."""
    for ax, r in zip(axes, results):
        updates = np.arange(1, len(r.losses_reference) + 1)
        ax.plot(updates, r.losses_reference, label="full batch")
        ax.plot(updates, r.losses_accumulated, "--", label="accumulated")
        ax.set_title(r.name, fontsize=8)
        ax.set_xlabel("update")
        ax.set_ylabel("mean loss", fontsize=8)
    axes[0].legend(fontsize=7)


def save_plots(results: list[CaseResult], directory) -> list[Path]:
    """Write ``verify_summary.png``, ``verify_per_update.png`` and ``verify_losses.png``.

    Returns the paths written. Creates ``directory`` if needed.
    """
    plt, integer_ticks = _pyplot()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []

    fig, ax = plt.subplots(figsize=(9, 0.35 * len(results) + 1.5))
    plot_summary(results, ax)
    paths.append(_save(fig, directory / "verify_summary.png", plt))

    fig, axes = plt.subplots(2, 1, figsize=(10, 8))
    plot_per_update(results, axes)
    for ax in axes:
        ax.xaxis.set_major_locator(integer_ticks(integer=True))
    paths.append(_save(fig, directory / "verify_per_update.png", plt))

    with_losses = [r for r in results if len(r.losses_reference)]
    if with_losses:
        columns = 4
        rows = -(-len(with_losses) // columns)
        fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), squeeze=False)
        plot_losses(with_losses, axes.ravel())
        for ax in axes.ravel():
            ax.xaxis.set_major_locator(integer_ticks(integer=True))
        for ax in axes.ravel()[len(with_losses):]:
            ax.set_visible(False)
        paths.append(_save(fig, directory / "verify_losses.png", plt))
    return paths


def _save(fig, path: Path, plt) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
