"""Run every benchmark, write benchmarks/results/results.json, print one summary.

Every ``benchmarks/bench_*.py`` module exposes ``run(quick: bool = False) ->
dict``, which prints its own tables and returns its numbers.  This script
runs each one in a fresh Python process (so that one module's thread pools,
caches and memory do not colour the next one's numbers, and a crash stays
contained), with one BLAS thread, collects the returned dicts, writes them
to ``benchmarks/results/results.json`` and ends with a summary: each module's
status, every floor it checks (any entry with an ``ok`` flag) and its ratios.

Usage::

    python benchmarks/run_all.py            # all benchmarks (what `make bench` runs)
    python benchmarks/run_all.py --quick    # fewer repeats, for a smoke test
    python benchmarks/run_all.py --only bench_checkpoint bench_accumulation
    python benchmarks/run_all.py --strict   # exit 1 also when a floor is missed

Exit status: 1 when a benchmark crashed (or, with ``--strict``, missed a
floor), else 0.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "results.json")
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# Benchmarks that compare against the CPU at its best, with every BLAS thread:
# bench_gpu's "GPU over CPU" speed-up would be flattered by a one-thread CPU.
ALL_THREADS = {"bench_gpu"}


def discover() -> list:
    """Names of the benchmark modules, ``bench_*.py`` in this folder, sorted."""
    return sorted(name[:-3] for name in os.listdir(HERE)
                  if name.startswith("bench_") and name.endswith(".py"))


def _jsonable(value):
    """JSON fallback for NumPy scalars and arrays, tuples and other objects."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# ------------------------------------------------------------------ child side
def run_child(name: str, quick: bool, out_path: str) -> None:
    """In a fresh process: import ``benchmarks.<name>``, call run(quick), save its dict."""
    sys.path.insert(0, ROOT)
    module = importlib.import_module(f"benchmarks.{name}")
    result = module.run(quick=quick)
    with open(out_path, "w") as f:
        json.dump(result, f, default=_jsonable)


# ----------------------------------------------------------------- parent side
def run_module(name: str, quick: bool) -> dict:
    """Run one benchmark in a subprocess; its tables go straight to our stdout."""
    env = dict(os.environ)
    if name not in ALL_THREADS:
        for key, value in ONE_THREAD.items():
            env.setdefault(key, value)
    fd, out_path = tempfile.mkstemp(suffix=".json", prefix=f"{name}-")
    os.close(fd)
    command = [sys.executable, os.path.abspath(__file__), "--child", name, "--out", out_path]
    if quick:
        command.append("--quick")
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, env=env, cwd=ROOT, check=False)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            return {"status": "error", "seconds": seconds,
                    "error": f"exited with status {proc.returncode} (traceback above)"}
        with open(out_path) as f:
            result = json.load(f)
    finally:
        os.unlink(out_path)
    status = "skipped" if isinstance(result, dict) and set(result) == {"skipped"} else "ok"
    return {"status": status, "seconds": seconds, "result": result}


def find_floors(result, path=()) -> list:
    """Every dict with a boolean ``ok`` in a result: (label, dict), depth first."""
    found = []
    if isinstance(result, dict):
        if isinstance(result.get("ok"), bool):
            found.append((".".join(path), result))
        for key, value in result.items():
            if isinstance(value, dict):
                found.extend(find_floors(value, path + (str(key),)))
    return found


def find_ratios(result, path=()) -> list:
    """Numeric entries whose key names a ratio (ratio, vs_..., speedup, ..._vs_...)."""
    found = []
    if isinstance(result, dict):
        for key, value in result.items():
            if isinstance(value, dict):
                found.extend(find_ratios(value, path + (str(key),)))
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and \
                    any(word in str(key) for word in ("ratio", "vs", "speedup", "speed-up")):
                found.append((".".join(path + (str(key),)), value))
    return found


def print_summary(report: dict) -> bool:
    """Print the combined summary; return True when every floor was met."""
    print("\n" + "=" * 72)
    print("Summary")
    print("=" * 72)
    all_met = True
    for name, entry in report["results"].items():
        print(f"\n{name}: {entry['status']} ({entry['seconds']:.1f} s)")
        if entry["status"] == "error":
            print(f"  error: {entry['error']}")
            continue
        result = entry["result"]
        if entry["status"] == "skipped":
            print(f"  skipped: {result['skipped']}")
            continue
        for label, floor in find_floors(result):
            all_met &= floor["ok"]
            value = next((floor[k] for k in ("ratio", "value") if k in floor), None)
            limit = floor.get("floor", floor.get("limit"))
            shown = f"{value:.3f}" if isinstance(value, float) else value
            print(f"  floor {label or '(top)'}: {shown} (limit {limit}) "
                  f"{'met' if floor['ok'] else 'MISSED'}")
        for label, value in find_ratios(result):
            if label.endswith(".ratio") and any(label.startswith(f) for f, _ in
                                                find_floors(result) if f):
                continue                                  # already shown as a floor
            if value == 1.0:
                continue                                  # a baseline against itself
            print(f"  {label}: {value:.3f}")
    return all_met


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these modules (e.g. bench_checkpoint)")
    parser.add_argument("--strict", action="store_true",
                        help="exit with status 1 when a floor is missed")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        run_child(args.child, args.quick, args.out)
        return 0

    names = discover()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"unknown benchmark(s) {', '.join(unknown)}; "
                         f"available: {', '.join(names)}")
        names = [n for n in names if n in args.only]

    report = {"meta": {"date": datetime.datetime.now().isoformat(timespec="seconds"),
                       "quick": args.quick, "python": platform.python_version(),
                       "machine": platform.machine(), "processor": platform.processor(),
                       "cpu_count": os.cpu_count()},
              "results": {}}
    try:
        import numpy  # noqa: PLC0415
        report["meta"]["numpy"] = numpy.__version__
    except ImportError:  # pragma: no cover
        pass
    for name in names:
        print(f"\n{'#' * 72}\n# {name}{' (quick)' if args.quick else ''}\n{'#' * 72}",
              flush=True)
        report["results"][name] = run_module(name, args.quick)

    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(report, f, indent=2, default=_jsonable)
    all_met = print_summary(report)
    print(f"\nresults written to {os.path.relpath(RESULTS, ROOT)}")
    crashed = [n for n, e in report["results"].items() if e["status"] == "error"]
    if crashed:
        print(f"benchmarks that crashed: {', '.join(crashed)}")
    if not all_met:
        print("some floors were MISSED (see above)")
    return 1 if crashed or (args.strict and not all_met) else 0


if __name__ == "__main__":
    sys.exit(main())
