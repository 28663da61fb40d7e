"""Grade a class: ``make grade SUBMISSIONS=dir/ [RELEASE=build/student] [JOBS=2] [OUT=build/grades]``.

Each entry of SUBMISSIONS is one student: a folder (their copy of the course)
or a git bundle ``name.bundle`` (``git bundle create name.bundle --all`` in
their copy); the student's id is the folder's (or bundle's) name.  For each:

1. the tree is copied into a scratch folder (without ``.git``, ``.venv``,
   caches), and every file of the course a student must not change (tests,
   tools, ``conftest.py``, ``Makefile``, ``pyproject.toml``, ``student.json``,
   ``release.json``) is replaced by the release's own (RELEASE, the copy that
   was handed out; its ``release.json`` lists them): an edited test changes
   nothing, and the gradebook names the files that differed;
2. one fresh ``python -m pytest`` runs there, in its own process group, for the
   tests of the graded exercises: those marked ``@pytest.mark.exercise("N.M")``
   and those that run its regions (``tools/dependencies.json``), within the
   graded chapters (MODE=fast: the marked ones only; MODE=full: every test of
   those chapters); a test past TEST_LIMIT seconds fails, the whole run is
   killed at LIMIT seconds (an endless loop costs its limit only);
3. an exercise scores 1 when every one of its tests that ran passed (at least
   one), 0 otherwise, the rule of ``make test``'s progress table.

Up to JOBS students are graded at once.  Written to OUT:

* ``gradebook.csv``: one row per student, one column per released exercise
  (1/0), then total, max, status, changed course files, seconds;
* ``results/<student>/results.json``: Gradescope's autograder format (``tests``
  with name, number, score, max_score, status, output; top-level score,
  execution_time, output);
* ``junit.xml``: one test suite per student, one test case per exercise, the
  exercise id in its properties;
* ``logs/<student>.txt``: the run's output.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):                       # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from tools import exercises, release  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Files that change how Python or pytest start: never taken from a submission.
STARTUP_FILES = ("pytest.ini", "tox.ini", "setup.cfg", "sitecustomize.py",
                 "usercustomize.py", "student.json", release.MANIFEST)
# Tests that check the course's texts and tools, not the student's code.
NOT_GRADED = ("tests/site", "tests/docs", "tools/tests")


@dataclass
class Outcome:
    student: str
    scores: dict = field(default_factory=dict)       # exercise id -> 1 / 0
    details: dict = field(default_factory=dict)      # exercise id -> text
    status: str = "graded"
    changed: list = field(default_factory=list)      # course files the student changed
    seconds: float = 0.0
    tests_passed: int = 0
    tests_run: int = 0

    @property
    def total(self):
        return sum(self.scores.values())


# ------------------------------------------------------------ one student

def grade_one(submission: Path, release_dir: Path, manifest: dict, *, work_root: Path,
              log_dir: Path, limit: float, test_limit: float, only=None,
              mode: str = "exercises", paths=("tests",)) -> Outcome:
    """Grade one submission (a folder or a git bundle) in a fresh process."""
    name = student_id(submission)
    outcome = Outcome(name)
    start = time.monotonic()
    work = work_root / name
    try:
        outcome.changed = prepare(submission, work, release_dir, manifest)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        outcome.status = f"error: cannot read the submission ({e})"
        outcome.scores = {i: 0 for i in only or manifest["released"]}
        outcome.seconds = time.monotonic() - start
        return outcome
    log = work_root / f"{name}.jsonl"
    graded = only or manifest["released"]
    chapters = ["--chapter", f"1-{max(exercises.chapter_of(i) for i in graded)}"]
    selection = {"full": chapters,
                 "exercises": chapters + ["--grade-exercises", ",".join(graded)],
                 "fast": ["--exercise", ",".join(graded)]}[mode]
    cmd = [sys.executable, "-m", "pytest", *test_paths(work, paths), "-q", "-p", "no:cacheprovider",
           "-p", "tools.grade_plugin", "--grade-log", str(log),
           "--grade-test-limit", str(test_limit), "--tb=short", *selection]
    env = dict(os.environ, PYTHONPATH=str(work), PYTHONDONTWRITEBYTECODE="1",
               MINIGRAD_HYPOTHESIS_PROFILE="ci", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        outcome.status = f"time limit: killed after {limit:g} s"
    (log_dir / f"{name}.txt").write_bytes(output)
    score(outcome, log, graded, output.decode("utf-8", "replace"), stubs_left(work))
    outcome.seconds = time.monotonic() - start
    shutil.rmtree(work, ignore_errors=True)
    return outcome


def student_id(submission: Path) -> str:
    name = submission.name[:-len(".bundle")] if submission.name.endswith(".bundle") \
        else submission.name
    return re.sub(r"[^A-Za-z0-9._@-]", "_", name) or "student"


def prepare(submission: Path, work: Path, release_dir: Path, manifest: dict) -> list[str]:
    """The student's tree at ``work`` with the release's course files; returns
    the course files the submission had changed (or lacked)."""
    if work.exists():
        shutil.rmtree(work)
    if submission.is_file():
        if not submission.name.endswith(".bundle"):
            raise ValueError(f"{submission.name} is neither a folder nor a .bundle")
        clone = work.with_name(work.name + ".clone")
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(submission), str(clone)], check=True,
                       capture_output=True)
        source = clone
    else:
        source = submission
    shutil.copytree(source, work, symlinks=True,
                    ignore=shutil.ignore_patterns(*release.SKIPPED_DIRS, "*.pyc"))
    if source is not submission:
        shutil.rmtree(source, ignore_errors=True)
    files = manifest["files"]
    changed = [rel for rel in manifest["protected"]
               if not (work / rel).is_file() or release.sha256(work / rel) != files[rel]]
    changed += [rel for rel in release.release_files(work)
                if release.is_protected(rel) and rel not in files]
    for rel in ("tests", "tools"):
        shutil.rmtree(work / rel, ignore_errors=True)
    for rel in release.PROTECTED + STARTUP_FILES:
        path = work / rel
        if path.is_file() or path.is_symlink():
            path.unlink()
    for rel in manifest["protected"] + ["student.json", release.MANIFEST]:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(release_dir / rel, work / rel)
    return sorted(changed)


def test_paths(work: Path, paths=("tests",)) -> list[str]:
    """``paths`` without the checks of the course's own texts and tools."""
    return list(paths) + [f"--ignore={p}" for p in NOT_GRADED if (work / p).exists()]


def stubs_left(work: Path) -> set:
    """The exercises whose stub is still in the submission's library."""
    found = set()
    for path in (work / "minigrad").rglob("*.py"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = release.STUB_RE.match(line)
            if match:
                found.add(match.group("id"))
    return found


def score(outcome: Outcome, log: Path, released, output: str, stubs=frozenset()) -> None:
    """Per exercise: 1 when every collected test of it passed, at least one.

    A test that stopped at the stub of *another* exercise, still unanswered in
    the submission (``stubs``), proves nothing about this one: it is left out
    (it counts once that exercise is answered).  So is a failed test of a later
    chapter than this exercise's while an exercise of the chapters in between
    (up to the test's) is unanswered: a chapter's tests may use any exercise
    of its chapter and the earlier ones, and a stub can be caught on the way
    (the command line turns one into a message and an exit status)."""
    collected, results = [], {}
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "collected" in record:
                collected = record["collected"]
            elif record["outcome"] != "passed" or record["nodeid"] not in results:
                results[record["nodeid"]] = record
    if not collected and outcome.status == "graded" and stubs and set(released) <= set(stubs):
        outcome.status = "graded: no exercise started"     # every test was held back
    elif not collected and outcome.status == "graded":
        last = [line for line in output.strip().splitlines() if line.strip()]
        outcome.status = "error: no test ran (" + (last[-1][:200] if last else "no output") + ")"
    outcome.tests_run = sum(1 for r in results.values() if r["outcome"] != "skipped")
    outcome.tests_passed = sum(1 for r in results.values() if r["outcome"] == "passed")
    for ident in released:
        tests = [t["nodeid"] for t in collected if ident in t["exercises"]]
        states = [results.get(t, {"outcome": "not run", "message": "not run (time limit)"})
                  for t in tests]
        chapter_of_test = {t["nodeid"]: t.get("chapter") for t in collected}
        waiting = {}
        for t, s in zip(tests, states):
            if s["outcome"] in ("passed", "skipped", "not run"):
                continue
            if s.get("stub") and s["stub"] != ident and s["stub"] in stubs:
                waiting[t] = s["stub"]
            elif not s.get("stub") and chapter_of_test.get(t) is not None:
                between = sorted((x for x in stubs if x != ident and exercises.chapter_of(ident)
                                  < exercises.chapter_of(x) <= chapter_of_test[t]),
                                 key=exercises.sort_key)
                if between:
                    waiting[t] = between[0]
        bad = [(t, s) for t, s in zip(tests, states)
               if s["outcome"] not in ("passed", "skipped") and t not in waiting]
        ran = [s for s in states if s["outcome"] == "passed"]
        outcome.scores[ident] = int(bool(ran) and not bad)
        later = sorted(set(waiting.values()), key=exercises.sort_key)
        if ident in stubs and not ran:
            outcome.details[ident] = ("not started: its stub (NotImplementedError) is "
                                      "still in the library")
        elif not tests:
            outcome.details[ident] = "no test of this exercise ran"
        elif not bad and not ran and waiting:
            outcome.details[ident] = f"its tests wait for exercise(s) {', '.join(later)}"
        elif bad:
            outcome.details[ident] = f"{len(bad)} of {len(tests)} tests failed:\n" + "\n".join(
                f"{t}: {s.get('message', '')}" for t, s in bad[:5])
        elif not ran:
            outcome.details[ident] = f"all {len(tests)} tests were skipped here"
        else:
            outcome.details[ident] = f"all {len(ran)} tests that ran passed" + (
                f"; {len(waiting)} more wait for exercise(s) {', '.join(later)}"
                if waiting else "")


# ------------------------------------------------------------ the class

def grade(submissions: Path, release_dir: Path, out: Path, *, jobs: int = 2,
          limit: float = 600, test_limit: float = 60, only=None,
          mode: str = "exercises", paths=("tests",)) -> list[Outcome]:
    """Grade every submission; write the gradebook, results.json files, JUnit XML.

    ``only``: grade these exercise ids (default: every released one).  ``mode``
    chooses the tests run: "exercises" (default) every test of the graded
    chapters that exercises a graded exercise (marked with it, or running its
    regions by ``tools/dependencies.json``); "fast" only the tests marked with
    one (``--exercise``); "full" every test of the graded chapters.  The rule
    is the same in each: an exercise scores when all its tests that ran passed.
    ``paths``: where pytest looks (a subset such as ``tests/exercises`` is faster)."""
    if mode not in ("exercises", "fast", "full"):
        raise ValueError(f"grade: mode must be exercises, fast or full, not {mode!r}")
    release_dir, out = Path(release_dir).resolve(), Path(out).resolve()
    manifest = release.read_manifest(release_dir)
    if manifest is None:
        raise SystemExit(f"make grade: RELEASE={release_dir} is not a release: it has no "
                         f"{release.MANIFEST}; make it with `make student` (the copy you "
                         "handed out) or point RELEASE at it")
    broken = release.check_manifest(release_dir)
    if broken:
        raise SystemExit(f"make grade: the release {release_dir} was changed since it was "
                         f"made ({', '.join(broken[:5])}); make it again with `make student`")
    entries = sorted(p for p in Path(submissions).iterdir()
                     if not p.name.startswith(".") and (p.is_dir() or p.name.endswith(".bundle")))
    if not entries:
        raise SystemExit(f"make grade: no submission in {submissions} (expected one folder "
                         "or .bundle per student)")
    unknown = sorted(set(only or []) - set(manifest["released"]), key=exercises.sort_key)
    if unknown:
        raise SystemExit(f"make grade: EXERCISES names {', '.join(unknown)}, not released in "
                         f"{release_dir} (released: {', '.join(manifest['released'])})")
    names = [student_id(p) for p in entries]
    if len(set(names)) != len(names):
        raise SystemExit(f"make grade: two submissions have the same student id in {names}")
    (out / "logs").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="minigrad-grade-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(grade_one, p, release_dir, manifest, work_root=Path(tmp),
                                   log_dir=out / "logs", limit=limit, test_limit=test_limit,
                                   only=only, mode=mode, paths=paths)
                       for p in entries]
            outcomes = [f.result() for f in futures]
    write_gradebook(out / "gradebook.csv", outcomes, only or manifest["released"])
    for outcome in outcomes:
        write_gradescope(out / "results" / outcome.student / "results.json", outcome)
    write_junit(out / "junit.xml", outcomes)
    return outcomes


def write_gradebook(path: Path, outcomes, released) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *released, "total", "max", "status",
                         "changed course files", "seconds"])
        for o in outcomes:
            writer.writerow([o.student, *(o.scores.get(i, 0) for i in released), o.total,
                             len(released), o.status, " ".join(o.changed), f"{o.seconds:.1f}"])


def write_gradescope(path: Path, outcome: Outcome) -> None:
    """Gradescope's results.json (github.com/gradescope/autograder_samples, docs/specs.md)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    notes = [f"{outcome.total} of {len(outcome.scores)} exercises pass "
             f"({outcome.tests_passed} of {outcome.tests_run} tests passed); {outcome.status}"]
    if outcome.changed:
        notes.append("course files you changed were replaced by the release's: "
                     + ", ".join(outcome.changed))
    tests = [{"name": f"Exercise {i} — {exercises.EXERCISES.get(i, '')}", "number": i,
              "score": outcome.scores[i], "max_score": 1,
              "status": "passed" if outcome.scores[i] else "failed",
              "output": outcome.details.get(i, ""), "visibility": "visible"}
             for i in outcome.scores]
    results = {"score": outcome.total, "execution_time": round(outcome.seconds),
               "output": "\n".join(notes), "visibility": "visible",
               "stdout_visibility": "hidden", "tests": tests}
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write_junit(path: Path, outcomes) -> None:
    suites = ET.Element("testsuites", name="minigrad grades")
    for o in outcomes:
        failed = sum(1 for v in o.scores.values() if not v)
        suite = ET.SubElement(suites, "testsuite", name=o.student, tests=str(len(o.scores)),
                              failures=str(failed), errors="0", time=f"{o.seconds:.1f}")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="status", value=o.status)
        ET.SubElement(props, "property", name="changed course files", value=" ".join(o.changed))
        for ident, value in o.scores.items():
            case = ET.SubElement(suite, "testcase", classname=f"{o.student}.exercises",
                                 name=f"exercise {ident} — {exercises.EXERCISES.get(ident, '')}")
            case_props = ET.SubElement(case, "properties")
            ET.SubElement(case_props, "property", name="exercise", value=ident)
            if not value:
                detail = o.details.get(ident, "")
                failure = ET.SubElement(case, "failure", message=detail.splitlines()[0]
                                        if detail else "failed")
                failure.text = detail
    ET.indent(suites)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make grade", description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", required=True,
                        help="folder with one student copy (folder or .bundle) per student")
    parser.add_argument("--release", default=str(ROOT / "build" / "student"),
                        help="the copy that was handed out (default: build/student)")
    parser.add_argument("--out", default=str(ROOT / "build" / "grades"),
                        help="where to write the gradebook (default: build/grades)")
    parser.add_argument("--jobs", type=int, default=2, help="students graded at once")
    parser.add_argument("--limit", type=float, default=600,
                        help="seconds per student before the run is killed (default 600)")
    parser.add_argument("--test-limit", type=float, default=60,
                        help="seconds per test before it fails (default 60)")
    parser.add_argument("--exercises", default=None,
                        help="grade only these exercises: 3.1,3.2 (default: all released)")
    parser.add_argument("--mode", choices=("exercises", "fast", "full"), default="exercises",
                        help="the tests run: every test that exercises a graded exercise "
                             "(default), only the tests marked with one (fast), or every "
                             "test of the graded chapters (full)")
    args = parser.parse_args(argv)
    only = [i.strip() for i in args.exercises.split(",") if i.strip()] if args.exercises \
        else None
    if not Path(args.submissions).is_dir():
        raise SystemExit(f"make grade: SUBMISSIONS={args.submissions} is not a folder")
    start = time.monotonic()
    outcomes = grade(Path(args.submissions), Path(args.release), Path(args.out),
                     jobs=args.jobs, limit=args.limit, test_limit=args.test_limit,
                     only=only, mode=args.mode)
    for o in outcomes:
        print(f"{o.student:20} {o.total:3}/{len(o.scores)}  {o.seconds:6.1f} s  {o.status}"
              + (f"  (changed: {', '.join(o.changed)})" if o.changed else ""))
    print(f"make grade: {len(outcomes)} submission(s) in {time.monotonic() - start:.1f} s; "
          f"{args.out}/gradebook.csv, junit.xml, results/<student>/results.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
