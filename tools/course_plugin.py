"""The course's pytest plugin: chapters, exercises and the progress table.

* Every test gets the marker ``chapterNN`` from ``tests/chapters.py`` (notebooks
  from their number: ``notebooks/05_*.ipynb`` is chapter 5).  Exercise tests
  carry ``@pytest.mark.exercise("3.2")``.  Only markers in use are registered,
  and ``--strict-markers`` rejects any other.
* ``--chapter 3`` (also ``3-5``, ``1,3``) and ``--exercise 3.2`` select tests;
  ``make test CHAPTER=3`` and ``make check EX=3.2`` pass them.
* In the student copy (it has ``student.json``), or with ``--progress``, the run
  ends with a table: per exercise, passed / not started / needs N.M / failing.
  An exercise is *not started* while its stub ``raise NotImplementedError(
  "Exercise N.M — ...")`` is still in the library; *needs N.M* when its tests
  stop at the stub of another exercise.  The notebooks are not collected in
  the student copy (their "your turn" cells fail until filled in) unless
  ``--notebooks`` is given.
* The run stops at once if the ``minigrad`` it imports is not the one of the
  tree under test (an installed copy shadowing the student's own code).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import exercises

STUB_RE = re.compile(r'NotImplementedError\("Exercise (\d+\.\d+) — ')
_RESULTS = pytest.StashKey[dict]()


def pytest_addoption(parser):
    group = parser.getgroup("course", "the course's exercises")
    group.addoption("--chapter", default=None, metavar="N",
                    help="run only the tests of these chapters: 3, 3-5, 1,3")
    group.addoption("--exercise", default=None, metavar="N.M",
                    help="run only the tests of these exercises: 3.2 or 3.2,3.3")
    group.addoption("--progress", action="store_true",
                    help="end with the table of exercises (default in the student copy)")
    group.addoption("--notebooks", action="store_true",
                    help="collect the notebooks in the student copy too")
    group.addoption("--course-report", default=None, metavar="PATH",
                    help="write JSON: every collected test's chapter, exercises and "
                         "outcome, and the file minigrad was imported from (make selftest)")


def _chapter_map():
    from tests import chapters  # noqa: PLC0415
    return chapters.PATHS, chapters.TESTS


def _by_parameter():
    from tests import chapters  # noqa: PLC0415
    return getattr(chapters, "BY_PARAMETER", {})


def chapter_of_nodeid(nodeid: str, paths=None, tests=None):
    """The chapter of a test id (``tests/x.py::test_y[param]``), or None."""
    if paths is None:
        paths, tests = _chapter_map()
    if nodeid in tests:                 # one parameter of a parametrized test
        return tests[nodeid]
    base = nodeid.split("[", 1)[0]
    if base in tests:
        return tests[base]
    file = base.split("::", 1)[0]
    if "[" in nodeid:                   # a test parametrized by a chapter file
        for prefix, pattern in _by_parameter().items():
            found = re.search(pattern, nodeid[len(base):])
            if file.startswith(prefix) and found:
                return int(found.group(1))
    match = re.match(r"notebooks/(\d{2})_[^/]*\.ipynb$", file)
    if match:
        return int(match.group(1))
    best = None
    for prefix, chapter in paths.items():
        if (file == prefix or (prefix.endswith("/") and file.startswith(prefix))) and \
                (best is None or len(prefix) > len(best[0])):
            best = (prefix, chapter)
    return None if best is None else best[1]


def _student_info(root: Path):
    path = root / "student.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def pytest_configure(config):
    import os  # noqa: PLC0415
    try:
        from hypothesis import settings  # noqa: PLC0415
    except ImportError:  # pragma: no cover - hypothesis is in the dev extra
        settings = None
    if settings is not None:
        # make selftest runs every exercise's tests many times: few examples there.
        settings.register_profile("selftest", max_examples=5, deadline=None,
                                  derandomize=True)
        # CI: the same examples on every run, so a red run is reproducible and a
        # green one is not luck (explore new examples locally with the default).
        settings.register_profile("ci", derandomize=True, deadline=None)
        profile = os.environ.get("MINIGRAD_HYPOTHESIS_PROFILE") or (
            "ci" if os.environ.get("CI") else None)
        if profile:
            settings.load_profile(profile)
    import minigrad  # noqa: PLC0415
    root = Path(config.rootpath).resolve()
    location = Path(minigrad.__file__).resolve()
    if root not in location.parents:
        raise pytest.UsageError(
            f"the tests of {root} import minigrad from {location.parent}, another tree "
            f"(an installed copy shadows this one); run them with {root} first on "
            "sys.path, e.g. from that folder with `python -m pytest`")
    paths, tests = _chapter_map()
    notebooks = {int(p.name[:2]) for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    for chapter in sorted(set(paths.values()) | set(tests.values()) | notebooks):
        config.addinivalue_line("markers", f"chapter{chapter:02d}: a test of chapter "
                                f"{chapter} of the course (tests/chapters.py)")
    config.addinivalue_line("markers", "exercise(id): a test of the graded exercise id, "
                            "e.g. exercise('3.2') (tools/exercises.py)")
    config.stash[_RESULTS] = {"student": _student_info(root) is not None}


def pytest_sessionstart(session):
    """In the student copy the progress table is the end of the report: no
    one-line-per-failure summary after it (errors are still listed)."""
    if session.config.stash[_RESULTS].get("student"):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.reportchars = "".join(c for c in reporter.reportchars if c in "E")


def pytest_ignore_collect(collection_path, config):
    if collection_path.suffix == ".ipynb" and not config.getoption("--notebooks") and \
            _student_info(Path(config.rootpath)) is not None:
        return True
    return None


def _selected_chapters(text):
    try:
        return {exercises.chapter_of(i) for i in
                exercises.parse_selection(text, {f"{c}.1" for c in range(0, 14)})}
    except ValueError as e:
        raise pytest.UsageError(f"--chapter / CHAPTER: {e}") from None


def pytest_collection_modifyitems(session, config, items):
    paths, tests = _chapter_map()
    unmapped = set()
    for item in items:
        chapter = chapter_of_nodeid(item.nodeid, paths, tests)
        if chapter is None:
            unmapped.add(item.nodeid.split("::", 1)[0])
        else:
            item.add_marker(getattr(pytest.mark, f"chapter{chapter:02d}"))
        for mark in item.iter_markers("exercise"):
            if len(mark.args) != 1 or mark.args[0] not in exercises.EXERCISES:
                raise pytest.UsageError(f"{item.nodeid}: exercise marker {mark.args} names "
                                        "no exercise of tools/exercises.py")
    config.stash[_RESULTS]["unmapped"] = sorted(unmapped)
    config.stash[_RESULTS]["collected"] = {
        item.nodeid: {"chapter": chapter_of_nodeid(item.nodeid, paths, tests),
                      "exercises": [m.args[0] for m in item.iter_markers("exercise")]}
        for item in items}
    chapter_text, exercise_text = config.getoption("--chapter"), config.getoption("--exercise")
    if not chapter_text and not exercise_text:
        return
    wanted_chapters = _selected_chapters(chapter_text) if chapter_text else None
    wanted_ids = None
    if exercise_text:
        wanted_ids = {i.strip() for i in exercise_text.split(",") if i.strip()}
        unknown = sorted(wanted_ids - set(exercises.EXERCISES))
        if unknown:
            raise pytest.UsageError(f"--exercise / EX: unknown exercise {', '.join(unknown)}; "
                                    "ids look like 3.2 (see tools/exercises.py)")
    keep, drop = [], []
    for item in items:
        chapter = chapter_of_nodeid(item.nodeid, paths, tests)
        ok = wanted_chapters is None or chapter in wanted_chapters
        if wanted_ids is not None:
            ok = ok and any(m.args and m.args[0] in wanted_ids
                            for m in item.iter_markers("exercise"))
        (keep if ok else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logreport(report):
    outcomes = _OUTCOMES
    if report.when == "call" or report.outcome != "passed":
        previous = outcomes.get(report.nodeid)
        if previous in (None, "passed"):
            outcomes[report.nodeid] = report.outcome if report.when == "call" else (
                "skipped" if report.skipped else "error")


_OUTCOMES: dict = {}


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--course-report")
    if not path:
        return
    import minigrad  # noqa: PLC0415
    stash = session.config.stash[_RESULTS]
    collected = stash.get("collected", {})
    report = {"minigrad": str(Path(minigrad.__file__).resolve().parent),
              "rootdir": str(Path(session.config.rootpath).resolve()),
              "exitstatus": int(exitstatus),
              "tests": {nodeid: dict(info, outcome=_OUTCOMES.get(nodeid, "not run"))
                        for nodeid, info in collected.items()}}
    Path(path).write_text(json.dumps(report, indent=0), encoding="utf-8")


def _stub_in_failure(report):
    """The exercise id whose stub raised in this failed test, or None."""
    text = str(report.longrepr) if report.longrepr is not None else ""
    found = re.findall(r"NotImplementedError: Exercise (\d+\.\d+) — ", text)
    return found[-1] if found else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None and \
            call.excinfo.errisinstance(NotImplementedError) and \
            str(call.excinfo.value).startswith("Exercise ") and \
            item.config.stash[_RESULTS].get("student"):
        # In the student copy a stub's traceback says nothing new: one line instead.
        report.longrepr = f"NotImplementedError: {call.excinfo.value}"
    ids = [m.args[0] for m in item.iter_markers("exercise") if m.args]
    if not ids:
        return
    results = item.config.stash[_RESULTS].setdefault("tests", {})
    if report.when == "call" or report.failed or report.skipped:
        if report.passed and report.when != "call":
            return
        state = "passed" if report.passed else "skipped" if report.skipped else "failed"
        stub = _stub_in_failure(report) if report.failed else None
        for ident in ids:
            results.setdefault(ident, []).append((state, stub))


def _stubs_left(root: Path) -> set:
    found = set()
    for path in (root / "minigrad").rglob("*.py"):
        found.update(STUB_RE.findall(path.read_text(encoding="utf-8")))
    return found


def exercise_status(ident, outcomes, stubs_left):
    """passed / not started / needs N.M / failing / skipped, from (state, stub) pairs."""
    states = [s for s, _ in outcomes]
    if states and all(s == "skipped" for s in states):
        return "skipped"
    if all(s in ("passed", "skipped") for s in states):
        return "passed"
    if ident in stubs_left:
        return "not started"
    others = sorted({stub for s, stub in outcomes if s == "failed" and stub and stub != ident},
                    key=exercises.sort_key)
    if others:
        return "needs " + ", ".join(others)
    return "failing"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stash = config.stash[_RESULTS]
    unmapped = stash.get("unmapped", [])
    if unmapped:
        terminalreporter.write_line(
            f"note: {len(unmapped)} test file(s) have no chapter in tests/chapters.py: "
            + ", ".join(unmapped))
    root = Path(config.rootpath)
    info = _student_info(root)
    if info is None and not config.getoption("--progress"):
        return
    results = stash.get("tests", {})
    if not results:
        return
    stubs_left = _stubs_left(root)
    terminalreporter.section("exercises")
    rows = []
    for ident in sorted(results, key=exercises.sort_key):
        status = exercise_status(ident, results[ident], stubs_left)
        n_pass = sum(s == "passed" for s, _ in results[ident])
        n_ran = sum(s != "skipped" for s, _ in results[ident])
        rows.append((ident, exercises.EXERCISES[ident], status, f"{n_pass}/{n_ran}"))
    width = max(len(r[1]) for r in rows)
    terminalreporter.write_line(f"{'exercise':8}  {'title':{width}}  {'tests':>5}  status")
    for ident, title, status, tally in rows:
        markup = {"green": status == "passed", "yellow": status == "not started",
                  "red": status not in ("passed", "not started", "skipped")}
        terminalreporter.write_line(f"{ident:8}  {title:{width}}  {tally:>5}  {status}",
                                    **markup)
    counts = {}
    for row in rows:
        key = row[2].split(" ")[0] if row[2].startswith("needs") else row[2]
        counts[key] = counts.get(key, 0) + 1
    terminalreporter.write_line(", ".join(f"{v} {k}" for k, v in counts.items()))
