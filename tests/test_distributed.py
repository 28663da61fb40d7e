"""minigrad.distributed: the size-1 communicator in process, and W = 2, 4 ranks under mpiexec.

The ``mpi`` tests launch ``mpiexec -n W python -m mpi4py -m minigrad verify
--distributed --json ...`` once per W (module-scoped fixture) and read the JSON
it writes; they skip only when ``mpiexec`` is missing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import distributed as dist
from minigrad.experiments.data_parallel import INVARIANCE_TOL
from minigrad.optim import SGD, AdamW, GradientAccumulator

MPIEXEC = dist.find_mpiexec()
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found next to "
                                   "the Python interpreter or on PATH (pip install "
                                   "'minigrad[distributed]')")


# --------------------------------------------------------------- import and world
def _clean_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")}
    return env


def test_import_minigrad_does_not_import_mpi4py():
    code = ("import sys, minigrad; assert 'mpi4py' not in sys.modules; "
            "c = minigrad.distributed.init(); assert 'mpi4py' not in sys.modules; "
            "print(type(c).__name__, minigrad.distributed.world_size())")
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["LocalCommunicator", "1"]


def test_local_communicator_collectives():
    comm = dist.LocalCommunicator()
    assert (comm.Get_rank(), comm.Get_size()) == (0, 1)
    buf = np.arange(4.0)
    dist.allreduce_sum_(comm, buf)
    np.testing.assert_array_equal(buf, np.arange(4.0))
    out = np.zeros(4)
    comm.Allreduce(np.ones(4), out)
    np.testing.assert_array_equal(out, np.ones(4))
    every = np.zeros((1, 3))
    comm.Allgather(np.array([1.0, 2.0, 3.0]), every)
    np.testing.assert_array_equal(every, [[1.0, 2.0, 3.0]])
    assert comm.bcast({"a": 1}) == {"a": 1} and comm.allgather(5) == [5]
    with pytest.raises(ValueError, match="root must be 0"):
        comm.Bcast(buf, root=1)
    with pytest.raises(TypeError, match="C-contiguous NumPy"):
        dist.allreduce_sum_(comm, np.zeros((4, 4))[:, 0])


def test_counting_communicator_counts_calls_and_bytes():
    comm = dist.CountingCommunicator(dist.LocalCommunicator())
    dist.allreduce_sum_(comm, np.zeros(10))
    comm.Allgather(np.zeros(3, dtype=np.uint8), np.zeros((1, 3), dtype=np.uint8))
    comm.bcast([1, 2, 3])
    assert comm.collectives == 3
    assert comm.calls[0] == ("Allreduce", 80) and comm.calls[1] == ("Allgather", 3)
    assert comm.bytes == 83 + comm.calls[2][1]
    comm.reset()
    assert (comm.collectives, comm.bytes, comm.calls) == (0, 0, [])


# -------------------------------------------------------------------- the sampler
@pytest.mark.parametrize("size,window,k,W", [(128, 128, 4, 4), (303, 101, 3, 4),
                                             (1000, 128, 2, 3), (130, 64, 1, 2)])
def test_window_sampler_covers_every_item_once(size, window, k, W):
    samplers = [dist.DistributedWindowSampler(size, window, k, W, r, seed=7) for r in range(W)]
    windows = [list(s) for s in samplers]
    assert all(len(w) == len(samplers[0]) for w in windows)
    seen = []
    for w in range(len(samplers[0])):
        counts = {len(windows[r][w]) for r in range(W)}
        assert len(counts) == 1                      # same number of steps on every rank
        shard = [sum(len(mb) for mb in windows[r][w]) for r in range(W)]
        assert max(shard) - min(shard) <= 1          # uneven by at most one item
        assert all(len(mb) > 0 for r in range(W) for mb in windows[r][w])
        items = np.concatenate([mb for r in range(W) for mb in windows[r][w]])
        np.testing.assert_array_equal(items, samplers[0].window_indices(w))
        seen.append(items)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(size))


def test_window_sampler_epochs_and_errors():
    s = dist.DistributedWindowSampler(100, 50, 2, 2, 0, seed=0)
    first = s.order().copy()
    s.set_epoch(1)
    assert not np.array_equal(first, s.order())
    assert s.shard_table(0) == [[13, 12], [13, 12]]
    with pytest.raises(ValueError, match="some micro-batches would be empty"):
        dist.DistributedWindowSampler(100, 7, 2, 4, 0)
    with pytest.raises(ValueError, match="rank must be in"):
        dist.DistributedWindowSampler(100, 50, 2, 2, 2)
    with pytest.raises(ValueError, match="last window has 1 items"):
        dist.DistributedWindowSampler(101, 50, 2, 2, 0)
    assert len(dist.DistributedWindowSampler(101, 50, 2, 2, 0, drop_last=True)) == 2


# ------------------------------------------------- the accumulator, one rank, comm
def _model():
    minigrad.manual_seed(3)
    return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2))


def _train(comm, batches, k=3):
    model = _model()
    acc = GradientAccumulator(AdamW(model.parameters(), lr=0.01), k, comm=comm)
    for x, t in batches:
        loss = F.cross_entropy(model(minigrad.tensor(x)), minigrad.tensor(t))
        acc.backward(loss, num_items=len(x))
        acc.step()
    acc.flush()
    return model, acc


def test_accumulator_with_local_comm_is_bitwise_the_plain_one(float64):
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((n, 5)), rng.integers(0, 2, n)) for n in (3, 5, 2, 4, 7)]
    plain, acc_plain = _train(None, batches)
    counting = dist.CountingCommunicator(dist.LocalCommunicator())
    reduced, acc = _train(counting, batches)
    for a, b in zip(plain.parameters(), reduced.parameters()):
        np.testing.assert_array_equal(a.data, b.data)
    assert acc.updates == acc_plain.updates == 2
    assert acc.window_loss == acc_plain.window_loss
    assert counting.collectives == 2                 # one per window, the short one too
    n_params = sum(p.numel() for p in plain.parameters())
    assert counting.calls[0] == ("Allreduce", 8 * (n_params + 4 + 3))
    # flush with nothing pending still communicates (other ranks may hold items)
    assert acc.flush() is False and counting.collectives == 3


def test_reduce_window_keeps_unused_parameters_without_grad(float64):
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(3, 2))     # the second is unused
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 1,
                              comm=dist.LocalCommunicator())
    loss = model[0](minigrad.ones((2, 3))).sum()
    acc.backward(loss, num_items=2)
    for p in model[1].parameters():
        assert p.grad is None
    assert dist.reduce_window(acc) is True
    assert model[0].weight.grad is not None and model[1].weight.grad is None


def test_parameters_digest_broadcast_and_identity(float64):
    a, b = _model(), _model()
    comm = dist.LocalCommunicator()
    assert dist.parameters_digest(a) == dist.parameters_digest(b)
    b[0].weight.data[0, 0] += 1e-300 if b[0].weight.data[0, 0] == 0 else \
        abs(b[0].weight.data[0, 0]) * 2.0 ** -52
    assert dist.parameters_digest(a) != dist.parameters_digest(b)   # one ulp is seen
    dist.broadcast_parameters(a, comm=comm)
    assert dist.check_parameters_identical(a, comm)


# ------------------------------------------------------------------ SyncBatchNorm
def test_sync_batchnorm_alone_equals_batchnorm(float64):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 3, 4)) * 2 + 1
    g = rng.standard_normal((6, 3, 4))
    bn = nn.BatchNorm1d(3)
    sync = nn.SyncBatchNorm(3, process_group=dist.LocalCommunicator())
    outs = []
    for layer in (bn, sync):
        xt = minigrad.tensor(x, requires_grad=True)
        y = layer(xt)
        y.backward(g)
        outs.append((y.data, xt.grad.data, layer.weight.grad.data, layer.bias.grad.data,
                     layer.running_mean.data, layer.running_var.data))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-13)
    sync.eval()
    np.testing.assert_allclose(sync(minigrad.tensor(x)).data, bn.eval()(minigrad.tensor(x)).data,
                               rtol=1e-12)


def test_sync_batchnorm_gradcheck(float64):
    layer = nn.SyncBatchNorm(2, process_group=dist.LocalCommunicator())
    x = minigrad.tensor(np.random.default_rng(2).standard_normal((4, 2, 3)), requires_grad=True)
    assert minigrad.gradcheck(lambda t: (layer(t) * layer(t)).sum(), [x])


def test_sync_batchnorm_errors():
    layer = nn.SyncBatchNorm(2, process_group=dist.LocalCommunicator())
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        layer(minigrad.ones((1, 2)))
    with pytest.raises(ValueError, match="expected 2 channels"):
        layer(minigrad.ones((4, 3)))
    with pytest.raises(ValueError, match="at least 2-D"):
        layer(minigrad.ones((4,)))


def test_convert_sync_batchnorm_keeps_parameters_and_buffers():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4),
                          nn.Sequential(nn.Linear(4, 2), nn.BatchNorm1d(2)))
    model[1].running_mean.data[...] = 0.5
    weight = model[1].weight
    model.eval()
    converted = dist.convert_sync_batchnorm(model, dist.LocalCommunicator())
    assert converted is model
    assert isinstance(model[1], nn.SyncBatchNorm) and isinstance(model[2][1], nn.SyncBatchNorm)
    assert model[1].weight is weight and not model[1].training
    np.testing.assert_array_equal(model[1].running_mean.data, 0.5)
    assert len(nn.batchnorm_layers(model)) == 2
    assert [n for n, _ in model.named_parameters()] == \
        ["0.weight", "0.bias", "1.weight", "1.bias", "2.0.weight", "2.0.bias",
         "2.1.weight", "2.1.bias"]


# ------------------------------------------------------- the whole suite, one rank
def test_data_parallel_suite_alone_passes():
    from minigrad.experiments.data_parallel import run_data_parallel
    report = run_data_parallel(dist.LocalCommunicator(), quick=True)
    assert report["world_size"] == 1
    failed = [r["name"] for r in report["rows"] if not r["passed"]]
    assert report["passed"], failed


def test_launcher_env_sets_one_blas_thread_and_keeps_user_values():
    env = dist.launcher_env({"OMP_NUM_THREADS": "3"})
    assert env["OMP_NUM_THREADS"] == "3" and env["OPENBLAS_NUM_THREADS"] == "1"
    assert env["MKL_NUM_THREADS"] == "1"


# ----------------------------------------------------------- W = 2 and 4 ranks, MPI
def _mpiexec(n, args, timeout):
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, *args],
                          env=dist.launcher_env(), capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module", params=[2, 4], ids=["W=2", "W=4"])
def mpi_report(request, tmp_path_factory):
    if MPIEXEC is None:
        pytest.skip("mpiexec not found next to the Python interpreter or on PATH "
                    "(pip install 'minigrad[distributed]')")
    path = tmp_path_factory.mktemp("dp") / f"w{request.param}.json"
    out = _mpiexec(request.param, ["-m", "mpi4py", "-m", "minigrad", "verify",
                                   "--distributed", "--json", str(path)], timeout=120)
    assert path.exists(), out.stdout + out.stderr
    return request.param, json.loads(path.read_text()), out


def _rows(report, group):
    return [r for r in report["rows"] if r["group"] == group]


@pytest.mark.mpi
def test_mpi_run_exits_zero_and_prints_the_table(mpi_report):
    W, report, out = mpi_report
    assert out.returncode == 0, out.stdout + out.stderr
    assert report["world_size"] == W and report["passed"]
    assert out.stdout.count("PASSED") == 1           # rank 0 alone prints


@pytest.mark.mpi
def test_mpi_world_size_invariance_over_20_adamw_updates(mpi_report):
    W, report, _ = mpi_report
    rows = _rows(report, "invariance")
    assert [r["k"] for r in rows] == [1, 2, 8]
    for r in rows:
        assert r["W"] * r["k"] * r["b"] == 128 and r["updates"] == 20
        assert r["value"] <= INVARIANCE_TOL, r


@pytest.mark.mpi
def test_mpi_uneven_shards(mpi_report):
    W, report, _ = mpi_report
    items, means = _rows(report, "uneven")
    assert len({sum(s) for s in items["shards"]}) > 1     # the shards are uneven
    assert items["value"] <= INVARIANCE_TOL
    assert means["value"] > 1e-3                          # the mean of per-rank means


@pytest.mark.mpi
def test_mpi_parameters_bitwise_identical_after_every_update(mpi_report):
    _, report, _ = mpi_report
    assert report["identical"]["mismatches"] == 0
    assert report["identical"]["updates_checked"] == 3 * 20 + 2 * 10


@pytest.mark.mpi
def test_mpi_one_collective_per_window(mpi_report):
    W, report, _ = mpi_report
    c = report["collectives"]
    assert c["deferred"]["collectives"] == 1
    assert c["every_micro_batch"]["collectives"] == c["k"] == 4
    assert c["deferred"]["bytes"] == 8 * (c["parameters"] + 4 + 3)
    assert c["every_micro_batch"]["bytes"] == 4 * 8 * (c["parameters"] + 1)
    assert c["same_update_rel_diff"] <= INVARIANCE_TOL


@pytest.mark.mpi
def test_mpi_sync_batchnorm(mpi_report):
    W, report, _ = mpi_report
    rows = {r["name"].split(" ", 1)[1]: r for r in _rows(report, "batchnorm")}
    assert rows["SyncBatchNorm k=1: gradients"]["value"] <= 1e-12
    assert rows["SyncBatchNorm k=1: running stats"]["value"] <= 1e-12
    assert rows["BatchNorm1d k=1: gradients"]["value"] > 1e-3      # ghost batches of b
    assert rows["SyncBatchNorm k=2: gradients (ghost batch 64)"]["value"] > 1e-3
    assert rows["SyncBatchNorm k=2: merged running stats, 1st update"]["value"] <= 1e-12


@pytest.mark.mpi
@needs_mpiexec
@pytest.mark.parametrize("launch", [["-m", "mpi4py"], []], ids=["python -m mpi4py", "plain"])
def test_mpi_failing_rank_ends_the_job_nonzero(launch, tmp_path):
    # rank 1 leaves a mark and raises between two all-reduces; rank 0 would
    # leave another mark if it ever got past the second one
    code = ("import pathlib, minigrad.distributed as d, numpy as np; c = d.init(); "
            f"here = pathlib.Path({str(tmp_path)!r}); buf = np.zeros(1); "
            "d.allreduce_sum_(c, buf); r = c.Get_rank(); "
            "(here / 'raised').write_text('1') if r == 1 else None; "
            "exec('raise RuntimeError(\"rank 1 fails\")') if r == 1 else None; "
            "d.allreduce_sum_(c, buf); (here / f'unreachable{r}').write_text('1')")
    start = time.perf_counter()
    out = _mpiexec(2, [*launch, "-c", code], timeout=60)
    seconds = time.perf_counter() - start
    assert out.returncode != 0, out.stdout + out.stderr
    assert (tmp_path / "raised").exists()
    assert not list(tmp_path.glob("unreachable*"))
    assert seconds < 30


@pytest.mark.mpi
@needs_mpiexec
@pytest.mark.parametrize("launch", [["-m", "mpi4py"], []], ids=["python -m mpi4py", "plain"])
def test_mpi_rank_failing_before_init_ends_the_job_in_seconds(launch, tmp_path):
    # rank 1 raises right after `import minigrad`, before distributed.init();
    # rank 0 waits in an all-reduce it can never finish: the job must still end
    code = ("import os, sys, pathlib, numpy as np, minigrad; "
            "assert 'mpi4py.MPI' not in sys.modules or '-m' in sys.orig_argv; "
            f"here = pathlib.Path({str(tmp_path)!r}); "
            "r = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', 0))); "
            "exec('raise RuntimeError(\"rank 1 fails before init\")') if r == 1 else None; "
            "d = minigrad.distributed; c = d.init(); d.allreduce_sum_(c, np.zeros(1)); "
            "(here / f'unreachable{r}').write_text('1')")
    start = time.perf_counter()
    out = _mpiexec(2, [*launch, "-c", code], timeout=60)
    seconds = time.perf_counter() - start
    assert out.returncode != 0, out.stdout + out.stderr
    assert "rank 1 fails before init" in out.stderr
    assert not list(tmp_path.glob("unreachable*"))
    assert seconds < 30


@pytest.mark.mpi
@needs_mpiexec
def test_mpi_rank_dying_before_importing_minigrad_ends_the_job_after_the_timeout(tmp_path):
    # rank 1 raises before `import minigrad`: it never reaches MPI's initialization,
    # where rank 0 waits; rank 0's watchdog ends it after init's timeout (3 s)
    code = ("import os, pathlib; "
            f"here = pathlib.Path({str(tmp_path)!r}); "
            "r = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', 0))); "
            "exec('raise RuntimeError(\"rank 1 dies first\")') if r == 1 else None; "
            "import minigrad.distributed as d; c = d.init(timeout=3); "
            "(here / f'unreachable{r}').write_text('1')")
    start = time.perf_counter()
    out = _mpiexec(2, ["-c", code], timeout=60)
    seconds = time.perf_counter() - start
    assert out.returncode != 0, out.stdout + out.stderr
    assert "rank 1 dies first" in out.stderr
    assert "_mpi_world_waiting_for_every_rank" in out.stderr, out.stderr
    assert not list(tmp_path.glob("unreachable*"))
    assert seconds < 30


def test_init_timeout_is_checked(monkeypatch):
    assert dist._init_timeout(5) == 5.0
    monkeypatch.setenv("MINIGRAD_INIT_TIMEOUT", "0")
    assert dist._init_timeout(None) == 0.0
    monkeypatch.setenv("MINIGRAD_INIT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="MINIGRAD_INIT_TIMEOUT must be a number"):
        dist._init_timeout(None)
    with pytest.raises(ValueError, match="timeout must be a number of seconds >= 0"):
        dist._init_timeout(-1)


# ------------------------------------------------------------ devices (cuda skips)
def test_reduce_window_on_device_matches_plain_accumulation(device, float64):
    """CuPy gradients are packed on the device, staged through the host once."""
    rng = np.random.default_rng(4)
    batches = [(rng.standard_normal((n, 5)), rng.integers(0, 2, n)) for n in (3, 5, 2)]
    results = []
    for comm in (None, dist.CountingCommunicator(dist.LocalCommunicator())):
        model = _model().to(device)
        acc = GradientAccumulator(AdamW(model.parameters(), lr=0.01), 3, comm=comm)
        for x, t in batches:
            out = model(minigrad.tensor(x, device=device))
            acc.backward(F.cross_entropy(out, minigrad.tensor(t, device=device)),
                         num_items=len(x))
            acc.step()
        assert all(p.device == device for p in model.parameters())
        results.append([p.numpy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_sync_batchnorm_on_device(device, float64):
    rng = np.random.default_rng(5)
    x, g = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    grads = []
    for layer in (nn.BatchNorm1d(3), nn.SyncBatchNorm(3, process_group=dist.LocalCommunicator())):
        layer.to(device)
        xt = minigrad.tensor(x, device=device, requires_grad=True)
        layer(xt).backward(minigrad.tensor(g, device=device))
        assert xt.grad.device == device and layer.running_var.device == device
        grads.append((xt.grad.numpy(), layer.weight.grad.numpy(), layer.running_var.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


def test_sync_batchnorm_leaves_running_stats_alone_when_recomputed(float64):
    layer = nn.SyncBatchNorm(3, process_group=dist.LocalCommunicator())
    x = minigrad.tensor(np.random.default_rng(6).standard_normal((4, 3)), requires_grad=True)
    minigrad.checkpoint(layer, x).sum().backward()     # forward, then recomputed in backward
    assert int(layer.num_batches_tracked.item()) == 1


@pytest.mark.parametrize("args, error, message", [
    ((3,), TypeError, "model must be a minigrad nn.Module, got int"),
    ((nn.Linear(2, 1), 5), ValueError, "root must be a rank in \\[0, 1\\), got 5"),
    ((nn.Linear(2, 1), -1), ValueError, "root must be a rank"),
    ((nn.Linear(2, 1), True), ValueError, "root must be a rank"),
])
def test_broadcast_parameters_names_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        dist.broadcast_parameters(*args, comm=dist.LocalCommunicator())


def test_reduce_window_counts_beyond_float16_range():
    # float16 parameters: the packed item total 80,000 must not become inf
    w = minigrad.tensor(np.zeros(1, np.float16), requires_grad=True)
    acc = GradientAccumulator(SGD([w], lr=1.0), 2, comm=dist.LocalCommunicator())
    for _ in range(2):
        x = minigrad.tensor(np.full(40_000, 1e-4, np.float16))
        acc.backward((w * x).mean(), num_items=40_000)
        acc.step()
    assert acc.updates == 1
    np.testing.assert_allclose(w.numpy(), [-1e-4], rtol=2e-3)


@pytest.mark.parametrize("comm", ["x", 3, object()])
def test_an_accumulator_refuses_a_comm_that_is_no_communicator(comm):
    w = minigrad.tensor(np.zeros(1), requires_grad=True)
    with pytest.raises(TypeError, match="comm must be a communicator"):
        GradientAccumulator(SGD([w], lr=0.1), 2, comm=comm)


@pytest.mark.parametrize("env, size", [
    ({"PMI_SIZE": "4"}, 4), ({"OMPI_COMM_WORLD_SIZE": "3"}, 3),
    ({"MV2_COMM_WORLD_SIZE": "2"}, 2), ({"PMIX_RANK": "0", "SLURM_STEP_NUM_TASKS": "8"}, 8),
    ({"SLURM_STEP_NUM_TASKS": "8"}, 1), ({}, 1)])
def test_the_launched_world_size_is_read_from_every_launcher(monkeypatch, env, size):
    distributed = dist
    for name in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE",
                 "PMIX_RANK", "SLURM_STEP_NUM_TASKS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert distributed._launched_world_size() == size
