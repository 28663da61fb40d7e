"""The data-parallel verification: ``mpiexec -n W python -m mpi4py -m minigrad verify --distributed``.

Every rank runs :func:`run_data_parallel` together (it is collective); each
computes the single-process full-batch reference itself and compares.  The
rows, in float64 on the 8x8 digits:

- **invariance**: W ranks × k micro-batches × b items = 128, for k in
  {1, 2, 8}: 20 AdamW updates equal the full-batch updates of 128 items
  (relative difference of the parameters, max over the updates, <= 1e-13);
- **uneven shards**: windows of 101 items cut into W uneven shards and 3
  unequal micro-batches per rank: with ``num_items`` equal; with every
  micro-batch counted once (the mean of per-rank means) it differs;
- **identical**: the parameters are bitwise identical on every rank after
  every update (SHA-256 digests compared);
- **collectives**: exactly one all-reduce per window with the exchange
  deferred to the window's end, against k when gradients are synchronized
  after every micro-batch; bytes per window for both;
- **SyncBatchNorm** at k = 1 equals full-batch BatchNorm (gradients and
  running statistics <= 1e-12); plain BatchNorm under data parallelism
  differs (W > 1); SyncBatchNorm with k = 2 is still ghost-batch (differs)
  but its merged running statistics equal the full batch's.

The GPT fine-tuning window split over ranks runs on its own
(:mod:`minigrad.experiments.sft_data_parallel`).

And a measurement: the time of one buffer all-reduce of the packed
gradients against one pickled ``allreduce`` per parameter.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import distributed as dist
from minigrad.data import load_digits
from minigrad.optim import AdamW, GradientAccumulator

from .common import DIFFERS, DIFFERS_THRESHOLD, EQUAL

WINDOW = 128                  # W * k * b, fixed
# relative, parameters after every update: float64 rounding that 20 AdamW updates
# carry (AdamW divides by sqrt(v), which amplifies it); measured 7e-15 to 1.2e-14
# for k = 8 on different CPUs, whose BLAS kernels sum in different orders.
INVARIANCE_TOL = 1e-13
SYNCBN_TOL = 1e-12            # relative, gradients and running statistics


# ------------------------------------------------------------------ small tools
def _data():
    X, y = load_digits()
    return X.astype(np.float64), y


def _mlp(batchnorm=False):
    minigrad.manual_seed(0)
    # no bias before BatchNorm: its gradient is 0 up to rounding, which AdamW
    # would turn into steps of +-lr, amplifying rounding noise
    layers = [nn.Linear(64, 32, bias=not batchnorm, dtype=np.float64)]
    if batchnorm:
        layers.append(nn.BatchNorm1d(32, dtype=np.float64))
    layers += [nn.Tanh(), nn.Linear(32, 10, dtype=np.float64)]
    return nn.Sequential(*layers)


def _flat(tensors) -> np.ndarray:
    return np.concatenate([np.asarray(t.data, dtype=np.float64).ravel() for t in tensors]
                          + [np.zeros(0)])


def _rel(a, b) -> float:
    """max |a - b| / max |b| (0 when both are 0)."""
    a, b = np.asarray(a), np.asarray(b)
    scale = float(np.abs(b).max()) if b.size else 0.0
    diff = float(np.abs(a - b).max()) if b.size else 0.0
    return diff / scale if scale else diff


def _loss(model, X, y, idx):
    return F.cross_entropy(model(minigrad.tensor(X[idx])), minigrad.tensor(y[idx]))


def _record_grads(optimizer, store):
    """Keep a copy of every gradient each time ``optimizer.step`` runs."""
    original = optimizer.step

    def step(*args, **kwargs):
        store.append(_flat([p.grad for p in optimizer._params()]))
        return original(*args, **kwargs)
    optimizer.step = step


def _running_stats(model) -> np.ndarray:
    layers = nn.batchnorm_layers(model)
    return _flat([t for m in layers for t in (m.running_mean, m.running_var)])


def _row(name, expected, value, tolerance, **extra):
    passed = value <= tolerance if expected == EQUAL else value > tolerance
    return dict(name=name, expected=expected, value=float(value), tolerance=tolerance,
                passed=bool(passed), **extra)


# --------------------------------------------------------- full batch, one process
def _train_full(make_model, X, y, windows, *, grads=None):
    """Full-batch AdamW updates, one per window of indices; snapshots per update."""
    model = make_model()
    optimizer = AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    if grads is not None:
        _record_grads(optimizer, grads)
    params, stats = [], []
    for idx in windows:
        _loss(model, X, y, idx).backward()
        optimizer.step()
        optimizer.zero_grad()
        params.append(_flat(model.parameters()))
        stats.append(_running_stats(model))
    return params, stats


# --------------------------------------------------------- W ranks, accumulation
def _train_dp(comm, make_model, X, y, sampler, epochs, *, items=True, sync_bn=False,
              merge_stats=False, grads=None, counting=None):
    """Data-parallel AdamW: this rank's micro-batches, one all-reduce per window."""
    model = make_model()
    if sync_bn:
        nn.SyncBatchNorm.convert_sync_batchnorm(model, comm)
    dist.broadcast_parameters(model, comm=comm)
    optimizer = AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    if grads is not None:
        _record_grads(optimizer, grads)
    acc = GradientAccumulator(optimizer, sampler.accumulation_steps,
                              comm=counting or comm, model=model if merge_stats else None)
    params, stats, mismatches, windows = [], [], 0, []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for micro_batches in sampler:
            windows.append([len(mb) for mb in micro_batches])
            for idx in micro_batches:
                acc.backward(_loss(model, X, y, idx), num_items=len(idx) if items else None)
                acc.step()
            if len(micro_batches) < sampler.accumulation_steps:
                acc.flush()
            params.append(_flat(model.parameters()))
            stats.append(_running_stats(model))
            mismatches += not dist.check_parameters_identical(model, comm)
    return params, stats, mismatches, windows


def _max_rel(runs, refs) -> float:
    return max(_rel(a, b) for a, b in zip(runs, refs))


def _windows(sampler, epochs):
    out = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        out += [sampler.window_indices(w) for w in range(len(sampler))]
    return out


# ------------------------------------------------------------------------- cases
def _invariance(comm, X, y, updates, ks):
    W = dist.world_size(comm)
    rows, mismatches = [], 0
    epochs = 2 if updates > 10 else 1
    size = WINDOW * -(-updates // epochs)
    for k in ks:
        if WINDOW % (W * k):
            continue
        sampler = dist.DistributedWindowSampler(size, WINDOW, k, W, dist.rank(comm), seed=1)
        ref, _ = _train_full(_mlp, X, y, _windows(sampler, epochs))
        run, _, bad, _ = _train_dp(comm, _mlp, X, y, sampler, epochs)
        mismatches += bad
        rows.append(_row(f"W={W} x k={k} x b={WINDOW // (W * k)} = {WINDOW}", EQUAL,
                         _max_rel(run, ref), INVARIANCE_TOL, W=W, k=k, b=WINDOW // (W * k),
                         updates=len(run), group="invariance"))
    return rows, mismatches


def _uneven(comm, X, y, updates):
    W = dist.world_size(comm)
    window, k = 101, 3
    sampler = dist.DistributedWindowSampler(window * updates, window, k, W, dist.rank(comm),
                                            seed=2)
    ref, _ = _train_full(_mlp, X, y, _windows(sampler, 1))
    rows, mismatches = [], 0
    shards = sampler.shard_table(0)
    for items, expected, name in ((True, EQUAL, "uneven shards, num_items"),
                                  (False, DIFFERS, "uneven shards, mean of means")):
        run, _, bad, _ = _train_dp(comm, _mlp, X, y, sampler, 1, items=items)
        mismatches += bad
        tol = INVARIANCE_TOL if expected == EQUAL else DIFFERS_THRESHOLD * 1e-3
        rows.append(_row(f"W={W} {name}", expected, _max_rel(run, ref), tol, W=W, k=k,
                         window=window, shards=shards, updates=len(run), group="uneven"))
    return rows, mismatches


def _collectives(comm, X, y, k=4):
    """One window deferred (1 all-reduce) vs synchronized after every micro-batch (k)."""
    W = dist.world_size(comm)
    sampler = dist.DistributedWindowSampler(WINDOW, WINDOW, k, W, dist.rank(comm), seed=3)
    micro_batches = next(iter(sampler))

    counting = dist.CountingCommunicator(comm)
    deferred = _mlp()
    acc = GradientAccumulator(AdamW(deferred.parameters(), lr=1e-2), k, comm=counting)
    for idx in micro_batches:
        acc.backward(_loss(deferred, X, y, idx), num_items=len(idx))
        acc.step()
    deferred_counts = (counting.collectives, counting.bytes)

    counting.reset()
    eager = _mlp()
    params = list(eager.parameters())
    optimizer = AdamW(params, lr=1e-2)
    sums = [np.zeros(p.shape) for p in params]
    total = 0.0
    for idx in micro_batches:                       # DDP without no_sync()
        for p in params:
            p.grad = None
        loss = _loss(eager, X, y, idx)
        loss.backward(np.full(loss.shape, float(len(idx))))
        buf = np.concatenate([p.grad.data.ravel() for p in params] + [[len(idx)]])
        dist.allreduce_sum_(counting, buf)
        offset = 0
        for s, p in zip(sums, params):
            s += buf[offset:offset + s.size].reshape(s.shape)
            offset += s.size
        total += buf[-1]
    for s, p in zip(sums, params):
        p.grad = minigrad.Tensor(s / total)
    optimizer.step()
    eager_counts = (counting.collectives, counting.bytes)
    gap = _rel(_flat(deferred.parameters()), _flat(eager.parameters()))
    n_params = sum(p.numel() for p in params)
    return {"k": k, "W": W, "parameters": int(n_params),
            "deferred": {"collectives": deferred_counts[0], "bytes": deferred_counts[1]},
            "every_micro_batch": {"collectives": eager_counts[0], "bytes": eager_counts[1]},
            "same_update_rel_diff": gap}


def _timing(comm, repeats=30):
    """Seconds per exchange of the MLP's gradients (median over ``repeats``,
    interleaved, on rank 0's clock): one buffer Allreduce of the packed
    gradients vs one pickled ``allreduce`` per parameter."""
    model = _mlp()
    grads = [np.random.default_rng(i).standard_normal(p.shape) for i, p in
             enumerate(model.parameters())]
    packed = np.concatenate([g.ravel() for g in grads] + [[1.0]])
    mpi = dist._mpi_of(comm)
    op = None if mpi is None else mpi.SUM
    samples = {"buffer": [], "pickled": []}
    for _ in range(repeats):                  # interleaved; the median of each
        for name in samples:
            comm.Barrier()
            start = time.perf_counter()
            if name == "buffer":
                dist.allreduce_sum_(comm, packed)
            else:
                _ = [comm.allreduce(g, op=op) for g in grads]
            samples[name].append(time.perf_counter() - start)
    # every rank reports rank 0's clock
    results = comm.bcast({k: float(np.median(v)) for k, v in samples.items()}, root=0)
    return {"buffer_s": results["buffer"], "pickled_s": results["pickled"],
            "ratio": results["pickled"] / results["buffer"], "repeats": repeats,
            "bytes": int(packed.nbytes)}


def _batchnorm(comm, X, y, updates):
    W = dist.world_size(comm)
    rank = dist.rank(comm)
    make = lambda: _mlp(batchnorm=True)    # noqa: E731
    rows = []
    sampler1 = dist.DistributedWindowSampler(WINDOW * updates, WINDOW, 1, W, rank, seed=4)
    ref_grads = []
    ref_params, ref_stats = _train_full(make, X, y, _windows(sampler1, 1), grads=ref_grads)

    def case(sampler, **kw):
        grads = []
        params, stats, _, _ = _train_dp(comm, make, X, y, sampler, 1, grads=grads, **kw)
        return _max_rel(grads, ref_grads), stats

    g, stats = case(sampler1, sync_bn=True)
    rows.append(_row(f"W={W} SyncBatchNorm k=1: gradients", EQUAL, g, SYNCBN_TOL, W=W, k=1,
                     group="batchnorm"))
    rows.append(_row(f"W={W} SyncBatchNorm k=1: running stats", EQUAL,
                     _max_rel(stats, ref_stats), SYNCBN_TOL, W=W, k=1, group="batchnorm"))
    g, _ = case(sampler1)
    rows.append(_row(f"W={W} BatchNorm1d k=1: gradients", EQUAL if W == 1 else DIFFERS, g,
                     SYNCBN_TOL if W == 1 else DIFFERS_THRESHOLD * 1e-3, W=W, k=1,
                     group="batchnorm"))
    sampler2 = dist.DistributedWindowSampler(WINDOW * updates, WINDOW, 2, W, rank, seed=4)
    g, stats = case(sampler2, sync_bn=True, merge_stats=True)
    rows.append(_row(f"W={W} SyncBatchNorm k=2: gradients (ghost batch {WINDOW // 2})",
                     DIFFERS, g, DIFFERS_THRESHOLD * 1e-3, W=W, k=2, group="batchnorm"))
    # the running statistics merged over the window are the full batch's at the
    # first update (later the parameters, hence the inputs, have drifted apart)
    rows.append(_row(f"W={W} SyncBatchNorm k=2: merged running stats, 1st update", EQUAL,
                     _rel(stats[0], ref_stats[0]), SYNCBN_TOL, W=W, k=2, group="batchnorm"))
    return rows


def run_data_parallel(comm=None, *, quick=False) -> dict:
    """Run every data-parallel case on every rank of ``comm`` (collective).

    Returns the same dict on every rank: ``world_size``, ``rows`` (name,
    expected, value, tolerance, passed, ...), ``identical`` (updates checked
    and mismatches), ``collectives``, ``timing``, ``passed``.
    """
    comm = comm or dist.init()
    previous = minigrad.get_default_dtype()
    minigrad.set_default_dtype(np.float64)
    try:
        X, y = _data()
        updates = 4 if quick else 20
        start = time.perf_counter()
        rows, bad = _invariance(comm, X, y, updates, ks=(1, 2, 8))
        uneven, bad2 = _uneven(comm, X, y, 3 if quick else 10)
        rows += uneven
        rows += _batchnorm(comm, X, y, 2 if quick else 5)
        collectives = _collectives(comm, X, y)
        timing = _timing(comm, repeats=10 if quick else 30)
    finally:
        minigrad.set_default_dtype(previous)
    checked = sum(r.get("updates", 0) for r in rows if r["group"] in ("invariance", "uneven"))
    mismatches = bad + bad2
    rows.append(_row(f"W={dist.world_size(comm)} parameters bitwise identical on every rank",
                     EQUAL, mismatches, 0, group="identical", updates_checked=checked))
    k = collectives["k"]
    deferred, eager = (collectives[key]["collectives"] for key in ("deferred",
                                                                   "every_micro_batch"))
    rows.append(_row(f"all-reduces per window, deferred: {deferred} (1 expected)", EQUAL,
                     abs(deferred - 1), 0, group="collectives"))
    rows.append(_row(f"all-reduces per window, every micro-batch: {eager} (k={k})", EQUAL,
                     abs(eager - k), 0, group="collectives"))
    seconds = comm.bcast(time.perf_counter() - start, root=0)
    return {"world_size": dist.world_size(comm), "quick": quick,
            "passed": all(r["passed"] for r in rows), "rows": rows,
            "identical": {"updates_checked": checked, "mismatches": mismatches},
            "collectives": collectives, "timing": timing, "seconds": seconds}


def format_report(report: dict) -> str:
    """The table printed by ``minigrad verify --distributed``."""
    lines = [f"{'case':58s} {'expected':8s} {'value':>10s} {'tolerance':>10s}  verdict"]
    for r in report["rows"]:
        lines.append(f"{r['name']:58s} {r['expected']:8s} {r['value']:10.2e} "
                     f"{r['tolerance']:10.0e}  {'ok' if r['passed'] else 'FAILED'}")
    c, t = report["collectives"], report["timing"]
    lines.append(f"per window of k={c['k']} micro-batches: deferred "
                 f"{c['deferred']['collectives']} all-reduce, {c['deferred']['bytes']} bytes; "
                 f"every micro-batch {c['every_micro_batch']['collectives']} all-reduces, "
                 f"{c['every_micro_batch']['bytes']} bytes")
    lines.append(f"gradient exchange: buffer Allreduce {t['buffer_s'] * 1e6:.0f} us, pickled "
                 f"allreduce per parameter {t['pickled_s'] * 1e6:.0f} us "
                 f"({t['ratio']:.1f}x)")
    return "\n".join(lines)


def _one_blas_thread() -> None:
    """One BLAS thread per rank, also when the launcher did not set
    OMP_NUM_THREADS (threadpoolctl, from the dev extra, when installed)."""
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415 (optional)
    except ImportError:
        return
    threadpool_limits(1)


def main(json_path=None, quick=False) -> int:
    """``minigrad verify --distributed``: run, print on rank 0, write JSON; exit status."""
    comm = dist.init()
    W, rank = dist.world_size(comm), dist.rank(comm)
    if W > 1:
        _one_blas_thread()
    if rank == 0:
        print(f"minigrad verify --distributed: {W} rank{'s' if W > 1 else ''}, float64"
              f"{', quick' if quick else ''}", flush=True)
    report = run_data_parallel(comm, quick=quick)
    if rank == 0:
        print(format_report(report))
        ok = sum(r["passed"] for r in report["rows"])
        print(f"{ok}/{len(report['rows'])} verdicts as expected in {report['seconds']:.1f} s: "
              + ("PASSED" if report["passed"] else "FAILED"), flush=True)
        if json_path:
            Path(json_path).write_text(json.dumps(report, indent=1) + "\n")
            print(f"wrote {json_path}", flush=True)
    return 0 if report["passed"] else 1
