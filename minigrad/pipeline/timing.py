"""Wall-clock bubble of a real pipeline: p MPI ranks, one stage each.

:func:`measure_bubble` launches ``mpiexec -n p`` on this module; every rank
builds its stage of an MLP (float64, ``blocks`` x [Linear(width, width),
Tanh] per stage), runs :class:`~minigrad.pipeline.mpi.MPIPipeline` on batches
of m micro-batches of ``micro_batch`` rows each, and records when each of its
operations started and ended.  From those timestamps:

* ``makespan``: from the batch's start (a barrier) to the last op's end, over
  all ranks (seconds);
* ``busy``: the time each rank spent computing;
* ``bubble = 1 - sum(busy) / (p * makespan)``: the same definition as the
  simulated clock's (:func:`~minigrad.pipeline.simulate`), so the two can be
  put side by side.  Sending, receiving and Python's bookkeeping count as
  idle, so the measured bubble sits a little above the formula.

Each configuration runs ``repeats`` batches after one warm-up; the batch with
the median makespan is reported.  Run as a script for a table:
``python -m minigrad.pipeline.timing``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

__all__ = ["measure_bubble"]


def measure_bubble(m_values=(1, 2, 4, 8, 16), p=2, schedule="gpipe", *, width=256,
                   blocks=2, micro_batch=64, repeats=3, timeout=120):
    """Measure the wall-clock bubble of a p-stage pipeline for each m.

    Args:
        m_values: the micro-batch counts to measure (ints >= 1; >= p for 1F1B).
        p: stages = MPI ranks.
        schedule: ``"gpipe"`` or ``"1f1b"``.
        width, blocks, micro_batch: the stage size (``blocks`` Linear+Tanh of
            ``width`` features) and the rows per micro-batch.
        repeats: timed batches per m (after one warm-up); the median is kept.
        timeout: seconds before the mpiexec run is abandoned.

    Returns:
        A list of dicts, one per m: ``m``, ``makespan`` (s), ``busy`` (s per
        rank), ``bubble`` (measured), ``formula`` ((p-1)/(m+p-1)) and
        ``timeline`` (``(rank, op, j, start, end)``, seconds).

    Raises:
        RuntimeError: no ``mpiexec`` (install the ``distributed`` extra), or
            the run failed (its output is in the message).
    """
    from .mpi import find_mpiexec, mpiexec_env  # noqa: PLC0415
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise RuntimeError("measure_bubble: mpiexec not found; install the distributed "
                           "extra (pip install 'minigrad[distributed]')")
    config = {"m_values": [int(m) for m in m_values], "schedule": schedule, "width": width,
              "blocks": blocks, "micro_batch": micro_batch, "repeats": repeats}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bubble.json")
        done = subprocess.run([mpiexec, "-n", str(p), sys.executable, "-m",
                               "minigrad.pipeline.timing", "--worker", json.dumps(config), out],
                              env=mpiexec_env(), capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"measure_bubble: mpiexec failed ({done.returncode}):\n"
                               f"{done.stdout}\n{done.stderr}")
        with open(out) as f:
            return json.load(f)


def _worker(config, out):
    """One rank: build its stage, time batches for each m, rank 0 writes the results."""
    from mpi4py import MPI  # noqa: PLC0415

    import minigrad  # noqa: PLC0415
    from minigrad import nn  # noqa: PLC0415
    from minigrad.optim import SGD  # noqa: PLC0415

    from .mpi import MPIPipeline  # noqa: PLC0415
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    minigrad.set_default_dtype(np.float64)
    minigrad.manual_seed(rank)
    width, b = config["width"], config["micro_batch"]
    layers = []
    for _ in range(config["blocks"]):
        layers += [nn.Linear(width, width), nn.Tanh()]
    stage = nn.Sequential(*layers)
    rng = np.random.default_rng(0)
    rows = []
    for m in config["m_values"]:
        pipe = MPIPipeline(stage, SGD(stage.parameters(), lr=1e-3), nn.functional.mse_loss,
                           m, config["schedule"])
        x = rng.standard_normal((m * b, width))
        y = rng.standard_normal((m * b, width))
        runs = []
        for _ in range(config["repeats"] + 1):
            pipe.step(x, y)
            timelines = comm.gather(pipe.timeline, root=0)
            if rank == 0:
                events = [e for t in timelines for e in t]
                makespan = max(e[4] for e in events)
                busy = [sum(e[4] - e[3] for e in events if e[0] == s) for s in range(p)]
                runs.append({"m": m, "makespan": makespan, "busy": busy,
                             "bubble": 1.0 - sum(busy) / (p * makespan),
                             "formula": (p - 1) / (m + p - 1), "timeline": events})
        if rank == 0:
            runs = sorted(runs[1:], key=lambda r: r["makespan"])
            rows.append(runs[len(runs) // 2])
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f)


def _main(argv):
    if len(argv) == 3 and argv[0] == "--worker":
        _worker(json.loads(argv[1]), argv[2])
        return
    for name in ("gpipe", "1f1b"):
        rows = measure_bubble(schedule=name, m_values=(2, 4, 8, 16))
        print(f"{name}, p = 2: m, makespan ms, measured bubble, (p-1)/(m+p-1)")
        for r in rows:
            print(f"  {r['m']:3d} {1e3 * r['makespan']:8.1f} {r['bubble']:8.3f} "
                  f"{r['formula']:8.3f}")


if __name__ == "__main__":
    _main(sys.argv[1:])
