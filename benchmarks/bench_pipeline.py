"""Pipeline parallelism: the measured wall-clock bubble against (p - 1)/(m + p - 1).

Two MPI ranks, one stage each (2 x [Linear 512→512 + Tanh], float64,
micro-batches of 128 rows), run GPipe and 1F1B for m = 1, 2, 4, 8, 16
(:func:`minigrad.pipeline.timing.measure_bubble`).  For each we report the
measured bubble ``1 - sum(busy) / (p x makespan)``, the formula's, and their
ratio, and the *pipeline efficiency*: the makespan of an ideal pipeline that
never waits (the busiest rank's compute time) over the measured makespan.

Wall clock, not CPU time: the point is how long ranks wait for each other.  On
a 2-core machine shared with other jobs the two ranks do not always get a core
each, and the measured bubble then sits well above the formula; on idle cores
it approaches it from above (sending and Python's bookkeeping count as idle).
Skips, with the reason, when mpiexec or mpi4py is missing.

Run:  python benchmarks/bench_pipeline.py [--quick]
"""
from __future__ import annotations

import importlib.util
import sys

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

from minigrad.pipeline.mpi import find_mpiexec  # noqa: E402
from minigrad.pipeline.timing import measure_bubble  # noqa: E402

M_VALUES = (1, 2, 4, 8, 16)


def run(quick: bool = False) -> dict:
    """Measure both schedules at p = 2, print the table, return the numbers."""
    if find_mpiexec() is None or importlib.util.find_spec("mpi4py") is None:
        print("bench_pipeline: skipped (mpiexec or mpi4py missing: install the "
              "distributed extra)")
        return {"skipped": "mpiexec or mpi4py missing"}
    result = {}
    for schedule in ("gpipe", "1f1b"):
        m_values = [m for m in M_VALUES if not (schedule == "1f1b" and m < 2)]
        rows = measure_bubble(m_values, p=2, schedule=schedule, width=512, blocks=2,
                              micro_batch=128, repeats=2 if quick else 5)
        table, printed = {}, []
        for r in rows:
            efficiency = max(r["busy"]) / r["makespan"]
            table[r["m"]] = {"makespan_s": r["makespan"], "bubble": r["bubble"],
                             "formula": r["formula"], "bubble_vs_formula":
                             r["bubble"] / r["formula"], "efficiency": efficiency}
            printed.append([r["m"], 1e3 * r["makespan"], r["bubble"], r["formula"],
                            r["bubble"] / r["formula"], efficiency])
        common.print_table(f"Pipeline {schedule}, p = 2 MPI ranks, wall clock",
                           ["m", "makespan ms", "bubble", "(p-1)/(m+p-1)", "ratio",
                            "efficiency"], printed)
        result[schedule] = table
    return result


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
