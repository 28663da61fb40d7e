"""The GPT fine-tuning window split over data-parallel ranks.

``mpiexec -n W python -m mpi4py -m minigrad.experiments.sft_data_parallel [--quick] [--json PATH]``

The window of 16 prompt/completion pairs with micro-batch 1 (chapter 13),
split over W ranks: rank r takes pairs r, r + W, ..., so k = 16 / W
micro-batches each, every one passing its completion-token count as
``num_items``; one all-reduce of the gradients and token counts per window
(``GradientAccumulator(comm=...)``).  In float64 the parameters after each of
20 AdamW updates equal those of one padded batch of 16 in one process, to
1e-10 (W = 2: 8.8e-16).
"""
from __future__ import annotations

import json
import sys

import numpy as np

import minigrad
from minigrad import distributed as dist
from minigrad.models.gpt import GPT
from minigrad.optim import AdamW, GradientAccumulator

from .common import EQUAL
from .data_parallel import _flat, _max_rel, _row
from .finetune import TINY, sft_loss, sft_pairs, sft_windows


def gpt_sft_data_parallel(comm=None, updates=20, accumulation_steps=16) -> list:
    """The GPT fine-tuning window of 16 pairs, micro-batch 1, split over W ranks
    (k = 16 / W micro-batches each, ``num_items`` = completion tokens): the
    parameters after every update against one padded batch of 16 in one process.
    Collective; returns the row (a list of one dict; empty when W does not divide 16)."""
    comm = comm or dist.init()
    W, r = dist.world_size(comm), dist.rank(comm)
    if accumulation_steps % W:
        return []
    _, train, _ = sft_pairs()
    windows = sft_windows(train, micro_batch=1, accumulation_steps=accumulation_steps,
                          updates=updates)
    loss_fn = sft_loss("cpu")

    def model():
        minigrad.manual_seed(0)
        return GPT(TINY)
    reference, ref = model(), []
    optimizer = AdamW(reference.parameters(), lr=1e-3)
    for full, _ in windows:
        loss_fn(reference, full)[0].backward()
        optimizer.step()
        optimizer.zero_grad()
        ref.append(_flat(reference.parameters()))
    parallel, run = model(), []
    dist.broadcast_parameters(parallel, comm=comm)
    acc = GradientAccumulator(AdamW(parallel.parameters(), lr=1e-3), accumulation_steps // W,
                              comm=comm)
    for _, micro in windows:
        for batch in micro[r::W]:                     # this rank's pairs
            loss, tokens = loss_fn(parallel, batch)
            acc.backward(loss, num_items=tokens)
            acc.step()
        run.append(_flat(parallel.parameters()))
    return [_row(f"W={W} gpt sft 16 = {W} ranks x k={accumulation_steps // W} x 1 pair",
                 EQUAL, _max_rel(run, ref), 1e-10, W=W, k=accumulation_steps // W,
                 updates=len(run), group="gpt")]


def main(argv=None) -> int:
    """The command line of this module (see the module docstring); rank 0 prints
    the row and writes the JSON; exit status 0 when it passes."""
    argv = sys.argv[1:] if argv is None else argv
    comm = dist.init()
    previous = minigrad.get_default_dtype()
    minigrad.set_default_dtype(np.float64)
    try:
        rows = gpt_sft_data_parallel(comm, updates=2 if "--quick" in argv else 20)
    finally:
        minigrad.set_default_dtype(previous)
    passed = bool(rows) and all(r["passed"] for r in rows)
    if dist.rank(comm) == 0:
        for r in rows:
            print(f"{r['name']}: max relative difference {r['value']:.2e} over "
                  f"{r['updates']} updates (tolerance {r['tolerance']:.0e}): "
                  + ("PASSED" if r["passed"] else "FAILED"))
        if not rows:
            print(f"the world size {dist.world_size(comm)} does not divide 16")
        if "--json" in argv:
            path = argv[argv.index("--json") + 1]
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"passed": passed, "rows": rows}, f, indent=1)
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
