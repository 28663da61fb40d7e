"""Which tests exercise which solution region: ``tools/dependencies.json``.

Derived from the code, not kept by hand: the test suite (``tests``,
``tools/tests``) runs once under coverage with one coverage context per test,
and a test *exercises* exercise N.M when it executes a line inside one of
N.M's regions.  The progress table (tools/course_plugin.py) counts an
exercise as passed only when every test exercising it passed, and the chapter
of a test (tests/chapters.py) is the latest chapter whose exercise it runs.

    python tools/dependencies.py            # regenerate (a few minutes on 2 cores)
    python tools/dependencies.py --update [TEST ...]   # trace only new (and these) tests
    python tools/dependencies.py --check    # is the committed map current? (make selftest)

The map records a hash of every region's body: the check fails when a region
changed, or when the collected tests are not the mapped ones (a test added,
renamed or removed), and then asks for a regeneration.  It also records which
optional packages the trace could import (``OPTIONAL``): a test that skips
without PyTorch executes no region when traced without it, so it would look
chapter-free; the check fails where a package importable now was absent at
trace time (trace where CI runs: PyTorch and the site extra installed).  The Python processes
a test starts (the command line, MPI ranks) are traced too, when they inherit
the environment; a test whose child gets a fresh environment is tied at run
time to the exercises its failures name (``NotImplementedError: Exercise N.M``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

ROOT = Path(__file__).resolve().parent.parent
MAP_FILE = "tools/dependencies.json"
TEST_PATHS = ["tests", "tools/tests"]
# Optional packages whose absence skips tests (PyTorch parity, the site's build).
OPTIONAL = ("torch", "sphinx", "playwright", "mpi4py", "cupy")


def importable() -> list[str]:
    """The packages of ``OPTIONAL`` this interpreter can import."""
    import importlib.util  # noqa: PLC0415
    return [name for name in OPTIONAL if importlib.util.find_spec(name) is not None]


def region_hashes(root: Path) -> dict[str, str]:
    """Exercise id -> sha256 of its regions' text (markers included)."""
    from tools import exercises, solutions  # noqa: PLC0415
    out = {}
    for ident, regions in sorted(solutions.collect(root).items(),
                                 key=lambda kv: exercises.sort_key(kv[0])):
        digest = hashlib.sha256()
        for region in regions:
            lines = (Path(root) / region.path).read_text(encoding="utf-8").splitlines()
            digest.update("\n".join(lines[region.begin - 1:region.end]).encode())
        out[ident] = digest.hexdigest()[:16]
    return out


def load(root: Path = ROOT) -> dict | None:
    """The committed map, or None where there is none."""
    path = Path(root) / MAP_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def tests_of(mapping: dict) -> dict[str, list[str]]:
    """Exercise id -> the test ids that exercise it."""
    out: dict[str, list[str]] = {}
    for nodeid, ids in mapping.get("tests", {}).items():
        for ident in ids:
            out.setdefault(ident, []).append(nodeid)
    return out


class _PerTest:
    """pytest plugin: one coverage context per test (setup, call and teardown),
    in this process and, through ``MINIGRAD_TRACE_CONTEXT``, in the Python
    processes a test starts (the command line, MPI ranks)."""

    def __init__(self, cov):
        self.cov = cov

    def pytest_runtest_setup(self, item):
        self.cov.switch_context(item.nodeid)
        os.environ["MINIGRAD_TRACE_CONTEXT"] = item.nodeid

    def pytest_runtest_logfinish(self, nodeid, location):
        self.cov.switch_context("")
        os.environ["MINIGRAD_TRACE_CONTEXT"] = ""


def _trace_child_processes(root: Path, folder: Path) -> None:
    """Make every Python process started from here record coverage too: the
    ``coverage`` package starts itself in a new interpreter when
    ``COVERAGE_PROCESS_START`` names a configuration (its .pth hook), and the
    configuration takes the test's id from the environment as its context."""
    rc = folder / "coveragerc"
    rc.write_text("[run]\n"
                  f"data_file = {folder / 'child'}\n"
                  "parallel = True\n"
                  f"source = {root / 'minigrad'}\n"
                  "context = ${MINIGRAD_TRACE_CONTEXT}\n"
                  "disable_warnings = no-data-collected, module-not-imported, "
                  "module-not-measured, couldnt-parse\n", encoding="utf-8")
    os.environ["COVERAGE_PROCESS_START"] = str(rc)
    os.environ["MINIGRAD_TRACE_CONTEXT"] = ""


def _child_data(folder: Path):
    """The coverage data the child processes wrote."""
    import coverage  # noqa: PLC0415
    for path in sorted(folder.glob("child.*")):
        data = coverage.CoverageData(basename=str(path))
        try:
            data.read()
        except Exception:  # noqa: BLE001 - a child killed mid-write
            continue
        yield data


def generate(root: Path = ROOT, args: list[str] | None = None) -> dict:
    """Run the suite under coverage and return the map."""
    import coverage  # noqa: PLC0415
    root = Path(root).resolve()
    cov = coverage.Coverage(data_file=None, source=[str(root / "minigrad")],
                            config_file=False)
    cov.start()
    import pytest  # noqa: PLC0415
    from tools import solutions  # noqa: PLC0415
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("MINIGRAD_HYPOTHESIS_PROFILE", "ci")
    collected: list[str] = []

    class Collect:
        def pytest_collection_finish(self, session):
            collected.extend(item.nodeid for item in session.items)

    import tempfile  # noqa: PLC0415
    folder = Path(tempfile.mkdtemp(prefix="minigrad-trace-"))
    saved = {k: os.environ.get(k) for k in ("COVERAGE_PROCESS_START",
                                            "MINIGRAD_TRACE_CONTEXT")}
    _trace_child_processes(root, folder)
    try:
        code = pytest.main([*(args or TEST_PATHS), "-q", "-p", "no:cacheprovider",
                            "--no-header"],
                           plugins=[_PerTest(cov), Collect()])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    cov.stop()
    tests: dict[str, set[str]] = {n: set() for n in collected}
    regions = solutions.collect(root)
    for data in [cov.get_data(), *_child_data(folder)]:
        for ident, places in regions.items():
            for region in places:
                by_line = data.contexts_by_lineno(str(root / region.path))
                for line in range(region.begin + 1, region.end):
                    for context in by_line.get(line, []):
                        if context in tests:
                            tests[context].add(ident)
    import shutil  # noqa: PLC0415
    shutil.rmtree(folder, ignore_errors=True)
    from tools import exercises  # noqa: PLC0415
    return {"about": "generated by tools/dependencies.py from a coverage run: the "
                     "exercises whose solution regions each test executes",
            "exit_status": int(code),
            "traced_with": importable(),
            "regions": region_hashes(root),
            "tests": {n: sorted(ids, key=exercises.sort_key)
                      for n, ids in sorted(tests.items())}}


def _collect(root: Path) -> set[str]:
    """The test ids of ``TEST_PATHS`` (a collection in a child process)."""
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    report = Path(tempfile.mkstemp(suffix=".json")[1])
    try:
        subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "no:cacheprovider", "--course-report", str(report), *TEST_PATHS],
                       cwd=root, capture_output=True, check=False,
                       env=dict(os.environ, PYTHONPATH=str(root)))
        return set(json.loads(report.read_text(encoding="utf-8"))["tests"])
    finally:
        report.unlink(missing_ok=True)


def write(mapping: dict, root: Path = ROOT) -> Path:
    path = Path(root) / MAP_FILE
    lines = ["{",
             f' "about": {json.dumps(mapping["about"])},',
             f' "traced_with": {json.dumps(mapping.get("traced_with", []))},',
             f' "regions": {json.dumps(mapping["regions"])},',
             ' "tests": {']
    items = list(mapping["tests"].items())
    for i, (nodeid, ids) in enumerate(items):
        lines.append(f"  {json.dumps(nodeid)}: {json.dumps(ids)}"
                     + ("," if i < len(items) - 1 else ""))
    lines += [" }", "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def check(root: Path, collected: set[str] | None) -> list[str]:
    """Why the committed map is not current (empty when it is)."""
    mapping = load(root)
    if mapping is None:
        return [f"{MAP_FILE} is missing; run `python tools/dependencies.py`"]
    problems = []
    now = region_hashes(root)
    changed = sorted(i for i in set(now) | set(mapping["regions"])
                     if now.get(i) != mapping["regions"].get(i))
    if changed:
        problems.append(f"the regions of {', '.join(changed)} changed since {MAP_FILE} "
                        "was generated")
    missing = sorted(set(importable()) - set(mapping.get("traced_with", [])))
    if missing:
        problems.append(f"{', '.join(missing)} can be imported here but was not when "
                        f"{MAP_FILE} was traced: the tests that need it were skipped, "
                        "so their exercises are unknown")
    if collected is not None:
        mapped = set(mapping["tests"])
        new, gone = sorted(collected - mapped), sorted(mapped - collected)
        if new:
            problems.append(f"{len(new)} test(s) are not in {MAP_FILE}, e.g. {new[:3]}")
        if gone:
            problems.append(f"{len(gone)} mapped test(s) no longer exist, e.g. {gone[:3]}")
    if problems:
        problems.append("regenerate it: `.venv/bin/python tools/dependencies.py` (or, when "
                        "no region changed, `... tools/dependencies.py --update`)")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tools/dependencies.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only say whether the committed map is current")
    parser.add_argument("--update", action="store_true",
                        help="trace only the tests the map lacks (and drop those gone) "
                             "when no region changed; else a full run")
    parser.add_argument("tests", nargs="*",
                        help="with --update: tests (ids or files) to trace again as well, "
                             "e.g. after editing them")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(ROOT, None)
        print("\n".join(problems) or f"{MAP_FILE} is current")
        return 1 if problems else 0
    started = time.monotonic()
    old = load(ROOT)
    if (args.update and old is not None and old["regions"] == region_hashes(ROOT)
            and old.get("traced_with") == importable()):
        collected = _collect(ROOT)
        new = sorted(collected - set(old["tests"])) + list(args.tests)
        mapping = generate(ROOT, new) if new else dict(old, tests={})
        tests = {n: ids for n, ids in old["tests"].items() if n in collected}
        tests.update(mapping["tests"])
        mapping = dict(mapping, regions=old["regions"], tests=dict(sorted(tests.items())))
    else:
        mapping = generate(ROOT)
    path = write(mapping, ROOT)
    used = sum(bool(v) for v in mapping["tests"].values())
    print(f"dependencies: wrote {path.relative_to(ROOT)}: {len(mapping['tests'])} tests, "
          f"{used} exercise at least one region; suite exit status "
          f"{mapping.get('exit_status', 'not run')}; {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
