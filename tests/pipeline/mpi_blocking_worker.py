"""Run under ``mpiexec -n 2``: why MPIPipeline's sends must not block.

The executor's ``Isend`` is replaced by a *synchronous* send (``Issend``
waited on at once: MPI_Ssend's semantics, which is what ``MPI_Send`` does for
messages too large to buffer).  GPipe still finishes; 1F1B deadlocks, with
both ranks inside a send.  A send that has not completed after ``DEADLINE``
seconds is reported as stuck: each rank writes what happened to
``<prefix>.<rank>.json`` (appending a line per case), waits until the other
rank has written its line for the case (a rank that left first would end the
job, hydra killing the other before its own deadline), and leaves.
"""
from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import minigrad  # noqa: E402
from minigrad import nn  # noqa: E402
from minigrad.optim import SGD  # noqa: E402
from minigrad.pipeline import mpi as pipeline_mpi  # noqa: E402

DEADLINE = 6.0   # seconds; a send the peer is too busy to take on a loaded 2-core machine
                 # can need more than 3 (seen once under a parallel self-test)


def main(prefix):
    rank = MPI.COMM_WORLD.Get_rank()
    path = f"{prefix}.{rank}.json"

    def report(**record):
        with open(path, "a") as f:
            f.write(json.dumps({"rank": rank, **record}) + "\n")

    def wait_for_peer(schedule, seconds=30.0):
        """Until the other rank's file has a line for ``schedule`` (stuck or finished)."""
        peer = f"{prefix}.{1 - rank}.json"
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if os.path.exists(peer) and f'"schedule": "{schedule}"' in open(peer).read():
                return
            time.sleep(0.01)

    def synchronous_send(self, array, dest, j, direction, n_items=0.0, loss=0.0):
        data = np.ascontiguousarray(array)
        header = np.zeros(pipeline_mpi._HEADER)
        header[:4] = (pipeline_mpi._DTYPES.index(data.dtype.type), data.ndim, n_items, loss)
        header[4:4 + data.ndim] = data.shape
        for part, buf in ((0, header), (1, data)):
            request = self.comm.Issend(buf, dest=dest, tag=pipeline_mpi._tag(j, direction, part))
            deadline = time.monotonic() + DEADLINE
            while not request.Test():
                if time.monotonic() > deadline:
                    report(schedule=self.schedule_name, finished=False,
                           stuck_in_send=["F" if direction == 0 else "B", j])
                    wait_for_peer(self.schedule_name)
                    os._exit(0)       # the other rank is stuck too: leave without MPI
                time.sleep(0.001)

    pipeline_mpi.MPIPipeline._isend = synchronous_send
    minigrad.set_default_dtype(np.float64)
    x = np.ones((8, 4))
    for schedule in ("gpipe", "1f1b"):
        stage = nn.Sequential(nn.Linear(4, 4))
        pipe = pipeline_mpi.MPIPipeline(stage, SGD(stage.parameters(), lr=0.1),
                                        nn.functional.mse_loss, 4, schedule)
        pipe.schedule_name = schedule
        pipe.step(x, x)
        report(schedule=schedule, finished=True)


if __name__ == "__main__":
    main(sys.argv[1])
