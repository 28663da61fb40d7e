"""Data parallelism on MPI: what a gradient exchange and a BLAS thread pool cost.

Two measurements, each run under ``mpiexec`` side by side in one benchmark:

* **buffer vs pickled all-reduce**: the seconds of one exchange of the
  digits MLP's gradients (2,410 float64 numbers), as one in-place buffer
  ``Allreduce`` of the packed gradients (what ``GradientAccumulator(...,
  comm=comm)`` does once per window) against one pickled ``allreduce`` per
  parameter array, at W = 2 and W = 4 (the timing row of ``minigrad verify
  --distributed``);
* **BLAS threads per rank**: 4 ranks each running a loop of 300 x 300
  matrix products with an all-reduce after every 30, with one BLAS thread
  per rank (:func:`minigrad.distributed.launcher_env`) against the default
  thread pool of one thread per core.  Ratio = default / one thread.

Run:  python benchmarks/bench_distributed.py [--quick]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from minigrad import distributed as dist

_RANK_LOOP = """
import time, numpy as np
import minigrad.distributed as d
c = d.init(); buf = np.zeros(1000)
a = np.random.default_rng(0).standard_normal((300, 300))
c.Barrier(); t = time.perf_counter()
for _ in range({windows}):
    for _ in range(30):
        a = np.tanh(a @ a.T / 300)
    d.allreduce_sum_(c, buf)
c.Barrier()
if c.Get_rank() == 0:
    print(time.perf_counter() - t)
"""


def _mpiexec(n, args, env, timeout=300):
    out = subprocess.run([dist.find_mpiexec(), "-n", str(n), sys.executable, "-m", "mpi4py",
                          *args], env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode:
        raise RuntimeError(f"mpiexec -n {n} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def run(quick: bool = False) -> dict:
    if dist.find_mpiexec() is None:
        print("bench_distributed: skipped, mpiexec not found")
        return {"skipped": "mpiexec not found"}
    result = {"exchange": {}, "blas_threads": {}}
    one = dist.launcher_env()
    with tempfile.TemporaryDirectory() as tmp:
        for W in (2, 4):
            path = Path(tmp) / f"w{W}.json"
            _mpiexec(W, ["-m", "minigrad", "verify", "--distributed", "--json", str(path)]
                     + (["--quick"] if quick else []), one)
            timing = json.loads(path.read_text())["timing"]
            result["exchange"][f"W={W}"] = timing
            print(f"W={W}: buffer Allreduce {timing['buffer_s'] * 1e6:8.0f} us   pickled "
                  f"per parameter {timing['pickled_s'] * 1e6:8.0f} us   ratio "
                  f"{timing['ratio']:.1f}")
    cores = str(os.cpu_count() or 1)
    many = dict(one, OMP_NUM_THREADS=cores, OPENBLAS_NUM_THREADS=cores, MKL_NUM_THREADS=cores)
    code = _RANK_LOOP.format(windows=2 if quick else 6)
    times = {"one_thread": [], "default_threads": []}
    for _ in range(1 if quick else 3):                   # alternate, take the best
        for name, env in (("one_thread", one), ("default_threads", many)):
            start = time.perf_counter()
            inner = float(_mpiexec(4, ["-c", code], env).split()[-1])
            times[name].append((inner, time.perf_counter() - start))
    best = {name: min(t[0] for t in values) for name, values in times.items()}
    result["blas_threads"] = {"ranks": 4, "cores": os.cpu_count(),
                              "one_thread_s": best["one_thread"],
                              "default_threads_s": best["default_threads"],
                              "ratio": best["default_threads"] / best["one_thread"]}
    print(f"4 ranks on {cores} cores: one BLAS thread {best['one_thread']:.2f} s, default "
          f"threads ({cores} each) {best['default_threads']:.2f} s, ratio "
          f"{result['blas_threads']['ratio']:.1f}")
    return result


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
