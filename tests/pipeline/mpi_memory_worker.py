"""Run under ``mpiexec -n 2``: the MPI executor's per-rank memory against m.

Two stages of [Linear 256→256 + Tanh] (float64, micro-batches of 64 rows, so
each activation or gradient is a 128 KiB message, sent by rendezvous rather
than copied eagerly) run GPipe and 1F1B for several m.  Each rank reports the
most bytes of send buffers it held at once (``MPIPipeline.peak_send_bytes``),
the bytes it sent in the batch (what it would have held had every buffer been
kept until the end of the batch), and its stash's peak bytes.  Rank 0 writes
all ranks' records as JSON to the file named by the first argument, or prints
a table when there is none.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import minigrad  # noqa: E402
from minigrad import nn  # noqa: E402
from minigrad.optim import SGD  # noqa: E402
from minigrad.pipeline import split_sequential  # noqa: E402
from minigrad.pipeline.mpi import MPIPipeline  # noqa: E402

WIDTH, ROWS = 256, 64
M_VALUES = (2, 4, 8, 16)


def measure(comm, schedule, m):
    rank, p = comm.Get_rank(), comm.Get_size()
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH, dtype=np.float64), nn.Tanh(),
                          nn.Linear(WIDTH, WIDTH, dtype=np.float64), nn.Tanh())
    stage = split_sequential(model, [2, 2])[rank]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS * m, WIDTH))
    y = rng.standard_normal((ROWS * m, WIDTH))
    pipe = MPIPipeline(stage, SGD(stage.parameters(), lr=0.01), nn.functional.mse_loss, m,
                       schedule, comm=comm, measure_stash=True)
    sent = []
    original = pipe._isend

    def counting_isend(array, *args, **kwargs):
        sent.append(int(np.asarray(minigrad.backend.asnumpy(array)).nbytes))
        return original(array, *args, **kwargs)

    pipe._isend = counting_isend
    pipe.step(x if rank == 0 else None, y if rank == p - 1 else None)
    return {"schedule": schedule, "m": m, "rank": rank, "message_bytes": ROWS * WIDTH * 8,
            "peak_send_bytes": pipe.peak_send_bytes, "sent_bytes": sum(sent),
            "peak_stash_bytes": pipe.stage.peak_stash_bytes}


def main(path=None):
    world = MPI.COMM_WORLD
    records = [measure(world, schedule, m) for schedule in ("gpipe", "1f1b")
               for m in M_VALUES]
    gathered = world.gather(records, root=0)
    if world.Get_rank() != 0:
        return
    flat = sorted((r for rank_records in gathered for r in rank_records),
                  key=lambda r: (r["schedule"], r["rank"], r["m"]))
    if path:
        with open(path, "w") as f:
            json.dump(flat, f, indent=1)
        return
    print(f"{'schedule':>8} {'rank':>4} {'m':>3} {'peak send KiB':>14} "
          f"{'sent KiB':>9} {'peak stash KiB':>15}")
    for r in flat:
        print(f"{r['schedule']:>8} {r['rank']:>4} {r['m']:>3} "
              f"{r['peak_send_bytes'] / 1024:>14.1f} {r['sent_bytes'] / 1024:>9.1f} "
              f"{r['peak_stash_bytes'] / 1024:>15.1f}")


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else None)
    except BaseException:
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
