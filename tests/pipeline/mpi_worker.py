"""Run under ``mpiexec -n 4``: the MPI pipeline against the one-process full batch.

Every rank builds the same model (same seed), keeps its own stage, and
compares that stage's gradients and parameters after each update with those
of a full-batch run it computes itself.  Cases: p = 4 on all ranks, and p = 2
on ranks {0, 1} and {2, 3} at once (a split communicator).  Rank 0 writes
every rank's results to the JSON file named by the first argument.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mpi4py import MPI  # noqa: E402

from minigrad import nn  # noqa: E402
from minigrad.pipeline import split_sequential  # noqa: E402
from minigrad.pipeline.mpi import MPIPipeline  # noqa: E402
from tests.pipeline.models import (full_batch_reference, make_data, make_model,  # noqa: E402
                                   optimizer_for, relative_error, stage_sizes)

STEPS = 2


def run_case(comm, name, schedule, m, checkpoint=False):
    p, rank = comm.Get_size(), comm.Get_rank()
    x, y = make_data()
    grads, params, losses = full_batch_reference(x, y, STEPS)
    model = make_model()
    stages = split_sequential(model, stage_sizes(p))
    offset = sum(len(list(s.parameters())) for s in stages[:rank])
    count = len(list(stages[rank].parameters()))
    opt = optimizer_for(stages[rank].parameters())
    pipe = MPIPipeline(stages[rank], opt, nn.functional.cross_entropy, m, schedule,
                       comm=comm, checkpoint=checkpoint, measure_stash=True)
    grad_err, param_err, loss_err = 0.0, 0.0, 0.0
    for step in range(STEPS):
        loss = pipe.step(x if rank == 0 else None, y if rank == p - 1 else None)
        mine = [q.numpy() for q in stages[rank].parameters()]
        grad_err = max(grad_err, relative_error(opt.seen_grads, grads[step][offset:offset + count]))
        param_err = max(param_err, relative_error(mine, params[step][offset:offset + count]))
        loss_err = max(loss_err, abs(loss - losses[step]) / abs(losses[step]))
    return {"case": name, "schedule": schedule, "p": p, "m": m, "checkpoint": checkpoint,
            "stage": rank, "grad_err": grad_err, "param_err": param_err,
            "loss_err": loss_err, "peak_stash": pipe.stage.peak_stash,
            "peak_stash_bytes": pipe.stage.peak_stash_bytes,
            "updates": pipe.stage.accumulator.updates}


def main(path):
    world = MPI.COMM_WORLD
    results = []
    for schedule, m, ck in (("gpipe", 5, False), ("1f1b", 5, False), ("1f1b", 4, True)):
        results.append(run_case(world, "p4", schedule, m, ck))
    pair = world.Split(color=world.Get_rank() // 2, key=world.Get_rank())
    for schedule, m, ck in (("gpipe", 3, False), ("1f1b", 4, False), ("1f1b", 2, True)):
        result = run_case(pair, f"p2-ranks{2 * (world.Get_rank() // 2)}", schedule, m, ck)
        results.append(result)
    pair.Free()
    gathered = world.gather(results, root=0)
    if world.Get_rank() == 0:
        with open(path, "w") as f:
            json.dump([r for rank_results in gathered for r in rank_results], f, indent=1)


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except BaseException:       # one failing rank ends the job, not a hang till the timeout
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
