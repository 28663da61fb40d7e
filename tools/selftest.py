"""``make selftest``: check that the graded exercises grade what they claim.

For every exercise E of tools/exercises.py:

(a) on the reference tree every test marked ``exercise(E)`` passes;
(b) on a copy with only E blanked, every test marked E fails, test by test (so
    no test of E passes without running E's code);
(b') for every chapter N, on a copy with the exercises of chapters N and later
    blanked, every test of the chapters before N passes (a chapter never
    depends on a later one; blanking one exercise of chapter N blanks a subset
    of that);
(c) the full student copy (every exercise blanked) collects without an error,
    and the tests of chapter 0 (data sets, command-line checks, tooling), which
    need no exercise, pass in it;
(m) the dependency map (tools/dependencies.json: which tests run which
    region, from a coverage run) is current: the regions and the collected
    tests are those it was generated from;
(d) on a copy with every exercise after E blanked (a student who has done the
    exercises in order, up to E), every test of E passes: no test of E
    depends on a later exercise;
(n) every notebook with its "your turn" regions blanked, run against the
    reference library (every cell, even after an error), fails only with a
    ``NotImplementedError("Your turn nbNN.M: ...")``, first at the cell after
    each stub (tools/notebook_stubs.py).

Every run writes a report (tools/course_plugin.py) naming the folder its
``minigrad`` came from; the self-test fails if that is not the tree under test.
The copies hard-link the reference's files (fast, throw-away) and are removed
afterwards unless ``--keep``.  Hypothesis uses the "selftest" profile (few
examples).  ``--notebooks`` runs step (n) alone.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from tools import dependencies, exercises, solutions  # noqa: E402
from tools.make_student import EXCLUDED_PREFIXES, write_student_copy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(tree: Path, args: list[str], label: str, timeout: int = 1800) -> dict:
    """Run pytest in ``tree`` (its own minigrad first on sys.path); return the report."""
    report_path = Path(tempfile.mkstemp(prefix="selftest-", suffix=".json")[1])
    env = dict(os.environ, PYTHONPATH=str(tree), MPLBACKEND="Agg",
               MINIGRAD_HYPOTHESIS_PROFILE="selftest", PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--run-blocked",
           "--course-report", str(report_path), *args]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                          timeout=timeout)
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise SelfTestError(f"{label}: pytest wrote no report (exit {proc.returncode}):\n"
                            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}") from None
    finally:
        report_path.unlink(missing_ok=True)
    expected = (tree / "minigrad").resolve()
    if Path(report["minigrad"]) != expected:
        raise SelfTestError(f"{label}: the tests imported minigrad from {report['minigrad']}, "
                            f"not from the tree under test {expected}")
    report["seconds"] = time.monotonic() - started
    report["output"] = proc.stdout[-4000:] + proc.stderr[-2000:]
    report["returncode"] = proc.returncode
    return report


class SelfTestError(RuntimeError):
    pass


def left_out(nodeid: str) -> bool:
    """True for a test parametrized by a file that every copy leaves out (the
    answer keys, ``chapters/answers/``): it exists in the reference only."""
    return any(f"[{prefix}" in nodeid for prefix in EXCLUDED_PREFIXES)


def copy_only(nodeid: str) -> bool:
    """True for a test parametrized by a file only the copies have: the hints
    (``chapters/hints/``) that make_student writes from the answer keys."""
    return "[chapters/hints/" in nodeid


def redacted(nodeid: str) -> bool:
    """True for a check of one quoted block of a chapter: the student copy
    quotes fewer blocks (tools/redact.py replaces those of blanked regions),
    and the others move to other lines."""
    return "::test_quoted_code_appears_in_its_source[" in nodeid


def _copy(dest: Path, **kwargs) -> Path:
    write_student_copy(dest, root=ROOT, force=True, git=False, link=True, **kwargs)
    return dest


# nbclient's error when a kernel process dies while starting (seen on a loaded
# 2-core machine); the notebook never ran, so it is run once more.
_KERNEL_START_FAILED = "Kernel died before replying to kernel_info"


def blanked_notebooks(jobs: int = 2) -> list[str]:
    """(n) Each notebook with regions, blanked and executed in a process of its own
    (tools/notebook_stubs.py); the problems found, prefixed "(n)"."""
    paths = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
             if solutions.notebook_regions(json.loads(p.read_text(encoding="utf-8")), p.name)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    started = time.monotonic()

    def run(path, tries=2):
        try:
            proc = subprocess.run([sys.executable, "-m", "tools.notebook_stubs", str(path)],
                                  cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=600)
        except subprocess.TimeoutExpired:
            return [f"(n) {path.name}: the blanked notebook ran over 600 s"]
        if proc.returncode != 0 and tries > 1 and _KERNEL_START_FAILED in proc.stderr:
            return run(path, tries - 1)     # Jupyter's kernel did not start: not the notebook
        if proc.returncode == 0:
            return []
        lines = [line.strip() for line in proc.stdout.splitlines() if line.startswith("  ")]
        return [f"(n) {line}" for line in lines] or \
            [f"(n) {path.name}: exit {proc.returncode}\n{proc.stdout}{proc.stderr[-2000:]}"]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        problems = [p for found in pool.map(run, paths) for p in found]
    print(f"selftest: (n) {len(paths)} blanked notebooks: "
          + ("each stops only at its \"Your turn\" stubs" if not problems
             else f"{len(problems)} problem(s) (below)")
          + f" ({time.monotonic() - started:.0f} s)")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make selftest", description=__doc__.split("\n")[0])
    parser.add_argument("--exercises", default=None,
                        help="check only these exercise ids (comma-separated)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the copies")
    parser.add_argument("--workdir", default=None, help="where the copies go (default: a "
                        "temporary folder)")
    parser.add_argument("--notebooks", action="store_true",
                        help="only step (n): the blanked notebooks")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    failures: list[str] = []
    if args.notebooks:
        failures = blanked_notebooks(args.jobs)
        print("selftest: " + (f"FAILED, {len(failures)} problem(s):\n  " + "\n  ".join(failures)
                              if failures else "passed"))
        return 1 if failures else 0

    errors, warnings = solutions.check_tree(ROOT)
    for w in warnings:
        print(f"selftest: warning: {w}")
    if errors:
        print("selftest: the solution regions are malformed:\n  " + "\n  ".join(errors))
        return 1

    work = Path(args.workdir or tempfile.mkdtemp(prefix="minigrad-selftest-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        # Which tests exist, of which chapter and exercise (collection of the reference).
        inventory = run_pytest(ROOT, ["--collect-only", "tests", "tools/tests"],
                               "collection of the reference")
        tests = inventory["tests"]
        by_exercise: dict[str, list[str]] = {}
        by_chapter: dict[int, list[str]] = {}
        for nodeid, info in tests.items():
            for ident in info["exercises"]:
                by_exercise.setdefault(ident, []).append(nodeid)
            if info["chapter"] is not None:
                by_chapter.setdefault(info["chapter"], []).append(nodeid)
        selected = sorted(exercises.EXERCISES, key=exercises.sort_key)
        if args.exercises:
            selected = [i.strip() for i in args.exercises.split(",")]
        for ident in selected:
            if not by_exercise.get(ident):
                failures.append(f"exercise {ident} has no test marked exercise({ident!r})")
        stale = dependencies.check(ROOT, set(tests))
        failures += [f"(m) {problem}" for problem in stale]
        print(f"selftest: (m) {dependencies.MAP_FILE} is "
              + ("current" if not stale else "out of date (below)"))
        unmapped = sorted({n.split("::")[0] for n, i in tests.items() if i["chapter"] is None})
        if unmapped:
            print(f"selftest: warning: test files without a chapter: {', '.join(unmapped)}")

        # (a) the reference passes every exercise test.
        ids = sorted({n for i in selected for n in by_exercise.get(i, [])})
        ref = run_pytest(ROOT, ids, "(a) reference")
        bad = [n for n in ids if ref["tests"].get(n, {}).get("outcome") not in ("passed", "skipped")]
        failures += [f"(a) on the reference, {n} does not pass" for n in bad]
        print(f"selftest: (a) reference: {len(ids) - len(bad)}/{len(ids)} exercise tests pass "
              f"({ref['seconds']:.0f} s)")

        def blank_one(ident):
            tree = _copy(work / f"ex-{ident}", only=[ident])
            report = run_pytest(tree, by_exercise[ident], f"(b) {ident} blanked")
            outcomes = {n: report["tests"].get(n, {}).get("outcome") for n in by_exercise[ident]}
            if not args.keep:
                shutil.rmtree(tree, ignore_errors=True)
            return ident, outcomes, report["seconds"]

        order = sorted(exercises.EXERCISES, key=exercises.sort_key)

        def in_order(ident):
            later = order[order.index(ident) + 1:]
            if not later:
                return ident, {}, 0.0
            tree = _copy(work / f"upto-{ident}", only=later)
            report = run_pytest(tree, by_exercise[ident], f"(d) exercises after {ident} blanked")
            if not args.keep:
                shutil.rmtree(tree, ignore_errors=True)
            return ident, {n: report["tests"].get(n, {}).get("outcome")
                           for n in by_exercise[ident]}, report["seconds"]

        def earlier_chapters(chapter):
            earlier = sorted(n for c, ns in by_chapter.items() if c < chapter for n in ns
                             if not left_out(n) and not redacted(n))
            if not earlier:
                return chapter, {}, 0.0, 0
            tree = _copy(work / f"ch-{chapter}", chapters=f"{chapter}-")
            report = run_pytest(tree, ["tests", "tools/tests", "--chapter",
                                       f"0-{chapter - 1}"], f"(b') chapters {chapter}- blanked")
            if not args.keep:
                shutil.rmtree(tree, ignore_errors=True)
            outcomes = {n: report["tests"].get(n, {}).get("outcome") for n in earlier}
            return chapter, outcomes, report["seconds"], len(earlier)

        chapters = sorted({exercises.chapter_of(i) for i in selected})
        per_exercise = {}
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            chapter_jobs = [pool.submit(earlier_chapters, c) for c in chapters]
            exercise_jobs = [pool.submit(blank_one, i) for i in selected if by_exercise.get(i)]
            order_jobs = [pool.submit(in_order, i) for i in selected if by_exercise.get(i)]
            for job in exercise_jobs:
                ident, outcomes, seconds = job.result()
                passing = [n for n, o in outcomes.items() if o == "passed"]
                per_exercise[ident] = (len(outcomes), len(passing), seconds)
                failures += [f"(b) with only {ident} blanked, {n} still passes: it does not "
                             f"exercise {ident}" for n in passing]
                if all(o == "skipped" for o in outcomes.values()):
                    failures.append(f"(b) every test of {ident} skipped; none can fail")
            for job in order_jobs:
                ident, outcomes, _ = job.result()
                failures += [f"(d) with the exercises after {ident} blanked, {n} does not "
                             f"pass: a test of {ident} depends on a later exercise"
                             for n, o in outcomes.items() if o not in ("passed", "skipped")]
            print(f"selftest: (d) {len(order_jobs)} exercises pass with every later "
                  "exercise blanked" if not any(f.startswith("(d)") for f in failures)
                  else "selftest: (d) some exercises need a later one (below)")
            for job in chapter_jobs:
                chapter, outcomes, seconds, count = job.result()
                broken = sorted(n for n, o in outcomes.items() if o not in ("passed", "skipped"))
                failures += [f"(b') with chapters {chapter}- blanked, {n} (chapter "
                             f"{tests[n]['chapter']}) fails: it depends on a later chapter"
                             for n in broken]
                if count:
                    print(f"selftest: (b') chapters {chapter}- blanked: "
                          f"{count - len(broken)}/{count} tests of chapters 0-{chapter - 1} "
                          f"pass ({seconds:.0f} s)")

        # (c) the full student copy collects, and chapter 0 passes in it.
        tree = _copy(work / "student")
        collected = run_pytest(tree, ["--collect-only", "tests", "tools/tests"],
                               "(c) student copy collection")
        expected = {n for n in tests if not left_out(n) and not redacted(n)}
        got = {n for n in collected["tests"] if not redacted(n) and not copy_only(n)}
        if collected["returncode"] != 0 or got != expected:
            failures.append(f"(c) the student copy does not collect cleanly: "
                            f"{len(collected['tests'])} of {len(expected)} tests, exit "
                            f"{collected['returncode']}\n{collected['output']}")
        zero = run_pytest(tree, ["tests", "tools/tests", "--chapter", "0"],
                          "(c) chapter 0 in the student copy")
        broken = [n for n, i in zero["tests"].items()
                  if i["chapter"] == 0 and i["outcome"] not in ("passed", "skipped")]
        failures += [f"(c) in the student copy, the chapter-0 test {n} fails" for n in broken]
        print(f"selftest: (c) student copy: {len(collected['tests'])} tests collected; "
              f"{sum(i['chapter'] == 0 for i in zero['tests'].values()) - len(broken)} "
              f"chapter-0 tests pass with every exercise blanked")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    failures += blanked_notebooks(args.jobs)

    print("\nselftest: exercise  tests  still passing when blanked")
    for ident in selected:
        if ident in per_exercise:
            n, passing, _ = per_exercise[ident]
            print(f"          {ident:8}  {n:5d}  {passing}")
    by_ch: dict[int, int] = {}
    for ident in per_exercise:
        by_ch[exercises.chapter_of(ident)] = by_ch.get(exercises.chapter_of(ident), 0) + 1
    print(f"selftest: {len(per_exercise)} exercises ("
          + ", ".join(f"ch{c}: {n}" for c, n in sorted(by_ch.items()))
          + f"), {sum(v[0] for v in per_exercise.values())} exercise tests, "
          f"{time.monotonic() - t0:.0f} s")
    if failures:
        print(f"selftest: FAILED, {len(failures)} problem(s):\n  " + "\n  ".join(failures))
        return 1
    print("selftest: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
