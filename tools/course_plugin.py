"""The course's pytest plugin: chapters, exercises and the progress table.

* Every test gets the marker ``chapterNN`` from ``tests/chapters.py`` (notebooks
  from their number: ``notebooks/05_*.ipynb`` is chapter 5).  Exercise tests
  carry ``@pytest.mark.exercise("3.2")``.  Only markers in use are registered,
  and ``--strict-markers`` rejects any other.
* ``--chapter 3`` (also ``3-5``, ``1,3``) and ``--exercise 3.2`` select tests;
  ``make test CHAPTER=3`` and ``make check EX=3.2`` pass them.  ``--exercise``
  takes the tests marked with the exercise; with ``--whole-exercise`` (``make
  check``) also those that run its code, so that its verdict is its table row's.
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
    group.addoption("--whole-exercise", action="store_true",
                    help="with --exercise, also the tests that run the exercise's code "
                         "(tools/dependencies.json) in its chapter or an earlier one: "
                         "every test its row in the table counts (make check)")
    group.addoption("--progress", action="store_true",
                    help="end with the table of exercises (default in the student copy)")
    group.addoption("--notebooks", action="store_true",
                    help="collect the notebooks in the student copy too")
    group.addoption("--run-blocked", action="store_true",
                    help="in the student copy, also run the tests that need an exercise "
                         "not started (they stop at its stub)")
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
    for chapter in sorted(set(paths.values()) | set(tests.values()) | _known_chapters(root)):
        config.addinivalue_line("markers", f"chapter{chapter:02d}: a test of chapter "
                                f"{chapter} of the course (tests/chapters.py)")
    config.addinivalue_line("markers", "exercise(id): a test of the graded exercise id, "
                            "e.g. exercise('3.2') (tools/exercises.py)")
    config.stash[_RESULTS] = {"student": _student_info(root) is not None}


def pytest_sessionstart(session):
    """In the student copy ``make test`` is short: no tracebacks (the table
    gives each failing exercise's first diagnostic; ``make check EX=N.M``
    shows them in full) and no one-line-per-failure summary."""
    config = session.config
    if config.stash[_RESULTS].get("student") and not config.getoption("--exercise"):
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        asked = any(str(a).startswith("-r") for a in config.invocation_params.args)
        if reporter is not None and not asked:
            reporter.reportchars = ""
        if config.option.tbstyle == "auto":
            config.option.tbstyle = "no"


def pytest_ignore_collect(collection_path, config):
    if collection_path.suffix == ".ipynb" and not config.getoption("--notebooks") and \
            _student_info(Path(config.rootpath)) is not None:
        return True
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        wanted = _exercise_files(config)
        if wanted is not None:
            try:
                rel = collection_path.resolve().relative_to(Path(config.rootpath).resolve())
            except ValueError:
                return None
            if rel.as_posix() not in wanted:
                return True
    return None


_FILES = pytest.StashKey[object]()


def _exercise_files(config):
    """With ``--exercise N.M --whole-exercise`` (``make check``): the test files
    that can hold a test it selects, so that only they are collected (importing
    and collecting every test file takes most of a check's time).  A test is
    selected when it is marked with the exercise (markers are written
    ``@pytest.mark.exercise("N.M")``: the files whose text holds the id in
    quotes) or when tools/dependencies.json says it runs the exercise's regions
    (the files of those tests).  A superset of the files of the selected tests:
    the selection itself (pytest_collection_modifyitems) is unchanged.  None
    (collect everything) otherwise."""
    if _FILES in config.stash:
        return config.stash[_FILES]
    wanted = None
    text = config.getoption("--exercise")
    if text and config.getoption("--whole-exercise"):
        ids = {i.strip() for i in text.split(",") if i.strip()}
        root = Path(config.rootpath)
        mapping = _dependency_map(root)
        if ids <= set(exercises.EXERCISES) and mapping is not None:
            wanted = {nodeid.split("::", 1)[0]
                      for nodeid, runs in mapping.get("tests", {}).items()
                      if ids & set(runs)}
            quoted = re.compile("|".join(rf"""["']{re.escape(i)}["']""" for i in ids))
            for folder in ("tests", "tools/tests"):
                for path in (root / folder).rglob("test_*.py"):
                    if quoted.search(path.read_text(encoding="utf-8")):
                        wanted.add(path.relative_to(root).as_posix())
    config.stash[_FILES] = wanted
    return wanted


def _known_chapters(root: Path) -> set[int]:
    """0 (tooling, data) and every chapter with an exercise or a notebook."""
    notebooks = {int(p.name[:2]) for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    return {0} | {exercises.chapter_of(i) for i in exercises.EXERCISES} | notebooks


def _selected_chapters(text, known=None):
    try:
        wanted = {exercises.chapter_of(i) for i in
                  exercises.parse_selection(text, {f"{c}.1" for c in range(0, 100)})}
    except ValueError as e:
        raise pytest.UsageError(f"--chapter / CHAPTER: {e}") from None
    if known is not None and not wanted & known:
        raise pytest.UsageError(
            f"--chapter / CHAPTER={text}: there is no such chapter; the chapters are "
            f"{_ranges(sorted(known))} (0: the data sets and tools)")
    return wanted


def _ranges(numbers) -> str:
    """[0, 1, 2, 3, 5] -> '0-3, 5'."""
    out, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(f"{start}" if start == n else f"{start}-{n}")
            start = None
    return ", ".join(out)


def test_chapter(nodeid, paths, tests, mapping):
    """The chapter of a test: the latest of its place (tests/chapters.py) and
    of the exercises whose regions it runs (tools/dependencies.json)."""
    base = chapter_of_nodeid(nodeid, paths, tests)
    deps = (mapping or {}).get("tests", {}).get(nodeid, [])
    if not deps:
        return base
    return max(base or 0, max(exercises.chapter_of(i) for i in deps))


test_chapter.__test__ = False       # not a test of pytest's


def pytest_collection_modifyitems(session, config, items):
    paths, tests = _chapter_map()
    root = Path(config.rootpath)
    mapping = _dependency_map(root)
    stash = config.stash[_RESULTS]
    unmapped = set()
    chapters = {}
    for item in items:
        chapter = chapters[item.nodeid] = test_chapter(item.nodeid, paths, tests, mapping)
        if chapter is None:
            unmapped.add(item.nodeid.split("::", 1)[0])
        else:
            item.add_marker(getattr(pytest.mark, f"chapter{chapter:02d}"))
        for mark in item.iter_markers("exercise"):
            if len(mark.args) != 1 or mark.args[0] not in exercises.EXERCISES:
                raise pytest.UsageError(f"{item.nodeid}: exercise marker {mark.args} names "
                                        "no exercise of tools/exercises.py")
    stash["unmapped"] = sorted(unmapped)
    stash["collected"] = {
        item.nodeid: {"chapter": chapters[item.nodeid],
                      "exercises": [m.args[0] for m in item.iter_markers("exercise")]}
        for item in items}
    chapter_text, exercise_text = config.getoption("--chapter"), config.getoption("--exercise")
    wanted_chapters = _selected_chapters(chapter_text, _known_chapters(root)) \
        if chapter_text else None
    wanted_ids = None
    if exercise_text:
        wanted_ids = {i.strip() for i in exercise_text.split(",") if i.strip()}
        unknown = sorted(wanted_ids - set(exercises.EXERCISES))
        if unknown:
            raise pytest.UsageError(f"--exercise / EX: unknown exercise {', '.join(unknown)}; "
                                    "ids look like 3.2 (see tools/exercises.py)")
    runs = (mapping or {}).get("tests", {}) if config.getoption("--whole-exercise") else {}
    keep, drop = [], []
    for item in items:
        ok = wanted_chapters is None or chapters[item.nodeid] in wanted_chapters
        if wanted_ids is not None:
            ok = ok and _of_exercise(item, chapters[item.nodeid], wanted_ids, runs)
        (keep if ok else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    if stash.get("student") and not config.getoption("--run-blocked"):
        _hold_back_blocked(config, items, mapping, _stubs_left(root))


def _of_exercise(item, chapter, wanted_ids, runs) -> bool:
    """Whether ``--exercise`` keeps ``item``: marked with a wanted exercise, or
    (``runs``: the dependency map's tests, given with ``--whole-exercise``)
    running a wanted exercise's code in that exercise's chapter or an earlier one."""
    if any(m.args and m.args[0] in wanted_ids for m in item.iter_markers("exercise")):
        return True
    return any(ident in wanted_ids and counts_for(ident, chapter)
               for ident in runs.get(item.nodeid, ()))


def _hold_back_blocked(config, items, mapping, stubs_left):
    """Tests that run the region of an exercise not started (its stub still
    raises) would only fail at that stub: they are not run, and count in the
    table as stopping at it (``--run-blocked`` runs them anyway)."""
    deps = (mapping or {}).get("tests", {})
    outcomes = config.stash[_RESULTS].setdefault("outcomes", {})
    keep, held = [], []
    for item in items:
        ids = set(deps.get(item.nodeid, [])) | {m.args[0] for m in
                                                item.iter_markers("exercise") if m.args}
        blocked = sorted(ids & stubs_left, key=exercises.sort_key)
        if blocked:
            outcomes[item.nodeid] = ("failed", blocked[0],
                                     f"not run: needs {', '.join(blocked)}")
            held.append(item)
        else:
            keep.append(item)
    if held:
        config.stash[_RESULTS]["held"] = len(held)
        config.hook.pytest_deselected(items=held)
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
    config = session.config
    stash = config.stash[_RESULTS]
    root = Path(config.rootpath)
    if stash.get("student") or config.getoption("--progress"):
        checked = _checked_exercises(config)
        table = progress_table(stash.get("outcomes", {}), stash.get("collected", {}),
                               _dependency_map(root), _stubs_left(root), only=checked)
        stash["table"] = table
        green = not table or table[-1].endswith(("every exercise passed", "check passed",
                                                 "check passed so far"))
        # Tests held back (they need an exercise not started) count as failing.
        if not green and session.exitstatus in (0, 5):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    for nodeid, outcome in stash.get("outcomes", {}).items():
        if nodeid not in _OUTCOMES and outcome[2].startswith("not run: needs"):
            _OUTCOMES[nodeid] = "blocked"
    path = config.getoption("--course-report")
    if not path:
        return
    import minigrad  # noqa: PLC0415
    stash = session.config.stash[_RESULTS]
    collected = stash.get("collected", {})
    report = {"minigrad": str(Path(minigrad.__file__).resolve().parent),
              "rootdir": str(Path(session.config.rootpath).resolve()),
              "exitstatus": int(session.exitstatus),
              "tests": {nodeid: dict(info, outcome=_OUTCOMES.get(nodeid, "not run"))
                        for nodeid, info in collected.items()}}
    Path(path).write_text(json.dumps(report, indent=0), encoding="utf-8")


_STUB_FAILURE_RE = re.compile(r"NotImplementedError: Exercise (\d+\.\d+) — |"
                              r"this needs Exercise (\d+\.\d+) — ")


_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_EXCEPTION_LINE_RE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b:? ")


def _plain(text: str) -> str:
    """``text`` without terminal color codes (nbval colors its reports)."""
    return _ANSI_RE.sub("", text)


def _stub_in_failure(report):
    """The exercise id whose stub raised in this failed test, or None."""
    text = _plain(str(report.longrepr)) if report.longrepr is not None else ""
    found = [a or b for a, b in _STUB_FAILURE_RE.findall(text)]
    return found[-1] if found else None


def _first_diagnostic(report) -> str:
    """One line saying why a test failed: its crash message's first line; for a
    notebook cell (nbval's report has no crash message, only a colored "cell
    execution failed"), the exception the cell raised, such as its "Your turn"
    message."""
    if ".ipynb" in report.nodeid:
        full = _plain(str(report.longrepr or "")).splitlines()
        raised = [line.strip() for line in full if _EXCEPTION_LINE_RE.match(line.strip())]
        if raised:
            return raised[-1][:300]
    crash = getattr(report.longrepr, "reprcrash", None)
    text = _plain(crash.message if crash is not None else str(report.longrepr or ""))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "failed"


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
    if report.when == "call" or report.failed or report.skipped:
        if report.passed and report.when != "call":
            return
        state = "passed" if report.passed else "skipped" if report.skipped else "failed"
        stub = _stub_in_failure(report) if report.failed else None
        message = _first_diagnostic(report) if report.failed else ""
        tests = item.config.stash[_RESULTS].setdefault("outcomes", {})
        if tests.get(item.nodeid, ("passed",))[0] == "passed":
            tests[item.nodeid] = (state, stub, message)


def counts_for(ident: str, chapter) -> bool:
    """Whether a test of ``chapter`` that runs exercise ``ident``'s code counts
    in its verdict: when it belongs to the exercise's chapter or an earlier one.
    ``make check``, this table and ``make grade`` share the rule, so an
    exercise's verdict never depends on which later chapters are run with it
    (a later chapter's test counts for that chapter's exercises)."""
    return chapter is not None and chapter <= exercises.chapter_of(ident)


def tests_by_exercise(collected: dict, mapping: dict | None) -> dict[str, set]:
    """Exercise id -> the tests that exercise it: those marked with it, and
    those of its chapter or an earlier one that run a line of its regions
    (tools/dependencies.json; :func:`counts_for`)."""
    out: dict[str, set] = {}
    for nodeid, info in collected.items():
        for ident in info["exercises"]:
            out.setdefault(ident, set()).add(nodeid)
    for nodeid, ids in (mapping or {}).get("tests", {}).items():
        if nodeid in collected:
            for ident in ids:
                if counts_for(ident, collected[nodeid].get("chapter")):
                    out.setdefault(ident, set()).add(nodeid)
    return out


def exercise_row(ident, outcomes, stubs_left):
    """(status, detail) of one exercise from its tests' (state, stub, message).

    passed: every test of it passed (or skipped); not started: its stub is
    still in the library; needs N.M: one of its tests stops at the stub of an
    exercise of its chapter or an earlier one; failing: a test of it fails
    for another reason than a stub (detail: the first such test and its
    message); waits for N.M: its own code works, but tests that also run a
    later exercise stop at that one's stub (they count once it is done).
    """
    states = [o[0] for o in outcomes]
    if states and all(s == "skipped" for s in states):
        return "skipped", ""
    if all(s in ("passed", "skipped") for s in states):
        return "passed", ""
    if ident in stubs_left:
        return "not started", ""
    failed = [o for o in outcomes if o[0] != "passed" and o[0] != "skipped"]
    real = [o for o in failed if not o[1] or o[1] == ident]
    if real:
        nodeid = real[0][3] if len(real[0]) > 3 else ""
        return "failing", f"{nodeid}: {real[0][2]}" if nodeid else real[0][2]
    others = sorted({o[1] for o in failed}, key=exercises.sort_key)
    earlier = [o for o in others if exercises.sort_key(o) < exercises.sort_key(ident)
               or exercises.chapter_of(o) == exercises.chapter_of(ident)]
    if earlier:
        return "needs " + ", ".join(earlier), ""
    shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
    return f"waits for {shown}", f"{len(failed)} test(s) also run {shown}"


def exercise_status(ident, outcomes, stubs_left):
    """The status word of :func:`exercise_row` (outcomes: (state, stub) pairs)."""
    return exercise_row(ident, [(s, stub, "") for s, stub in outcomes], stubs_left)[0]


def _stubs_left(root: Path) -> set:
    found = set()
    for path in (root / "minigrad").rglob("*.py"):
        found.update(STUB_RE.findall(path.read_text(encoding="utf-8")))
    return found


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stash = config.stash[_RESULTS]
    unmapped = stash.get("unmapped", [])
    if unmapped:
        terminalreporter.write_line(
            f"note: {len(unmapped)} test file(s) have no chapter in tests/chapters.py: "
            + ", ".join(unmapped))
    if stash.get("held"):
        terminalreporter.write_line(
            f"{stash['held']} tests not run: they need exercises not started (the table "
            "says which); `make test ARGS=--run-blocked` runs them anyway")


def _dependency_map(root: Path):
    path = root / "tools" / "dependencies.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _checked_exercises(config):
    """The exercises of ``make check`` (``--exercise`` with ``--whole-exercise``), else None."""
    text = config.getoption("--exercise")
    if not text or not config.getoption("--whole-exercise"):
        return None
    return [i.strip() for i in text.split(",") if i.strip()]


def check_verdict(rows, loose=False) -> str:
    """The last line of ``make check``: per checked exercise, passed, no failure
    so far (the tests that can run pass; the others also run an exercise not
    started), or what to fix; then "check passed", "check passed so far"
    (``make check`` exits 0) or "check failed" (exit 1)."""
    words, ok, so_far = [], not loose, False
    for ident, _, status, tally, detail in rows:
        if status in ("passed", "skipped"):
            words.append(f"{ident} passed: all {tally.split('/')[1]} tests that run its "
                         "code pass")
        elif status.startswith(("needs", "waits")):
            other = status.split(" ", 2 if status.startswith("waits") else 1)[-1]
            so_far = True
            passed, total = (int(n) for n in tally.split("/"))
            words.append(f"{ident}: no failure so far ({passed} of its {total} tests pass; "
                         f"the other {total - passed} also run {other}, not started: do "
                         f"that, then check {ident} again)")
        else:
            ok = False
            words.append(f"{ident} {status}" + (f": {_shorten(detail)}" if detail else ""))
    end = "check failed" if not ok else "check passed so far" if so_far else "check passed"
    return "; ".join(words) + " — " + end


def progress_table(outcomes: dict, collected: dict, mapping, stubs_left,
                   only=None) -> list[str]:
    """The lines of the progress table: one row per exercise whose tests ran,
    a row for failing tests that exercise no exercise, and a tally.  With
    ``only`` (``make check EX=...``), only those exercises' rows (the check
    ran only their tests; other rows would count a part of theirs) and
    :func:`check_verdict` as the last line."""
    by_exercise = tests_by_exercise(collected, mapping)
    for nodeid, outcome in outcomes.items():     # a stub named by a failure the
        if outcome[1]:                          # coverage run could not see
            by_exercise.setdefault(outcome[1], set()).add(nodeid)
    rows = []
    for ident in sorted(by_exercise, key=exercises.sort_key):
        if only is not None and ident not in only:
            continue
        ran = [outcomes[n] + (n,) for n in sorted(by_exercise[ident]) if n in outcomes]
        if not ran:
            continue
        status, detail = exercise_row(ident, ran, stubs_left)
        n_pass = sum(o[0] == "passed" for o in ran)
        n_ran = sum(o[0] != "skipped" for o in ran)
        rows.append((ident, exercises.EXERCISES[ident], status, f"{n_pass}/{n_ran}", detail))
    covered = set().union(*by_exercise.values()) if by_exercise else set()
    loose = sorted(n for n, o in outcomes.items() if n not in covered and o[0] == "failed")
    if not rows and not loose:
        return []
    width = max([len(r[1]) for r in rows] + [20])
    lines = [f"{'exercise':8}  {'title':{width}}  {'tests':>7}  status"]
    for ident, title, status, tally, detail in rows:
        lines.append(f"{ident:8}  {title:{width}}  {tally:>7}  {status}"
                     + (f": {_shorten(detail)}" if status == "failing" and detail else ""))
    if loose:
        lines.append(f"{len(loose)} failing test(s) of no exercise: "
                     f"{_shorten(loose[0] + ': ' + outcomes[loose[0]][2])}")
    if only is not None and rows:
        return lines + [check_verdict(rows, loose=bool(loose))]
    counts: dict[str, int] = {}
    for row in rows:
        key = row[2].split(" ")[0] if row[2].split(" ")[0] in ("needs", "waits") else row[2]
        counts[key] = counts.get(key, 0) + 1
    green = all(r[2] in ("passed", "skipped") for r in rows) and not loose
    lines.append(", ".join(f"{v} {k}" for k, v in counts.items())
                 + ("; every exercise passed" if green else ""))
    return lines


def _shorten(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    """The table is the last thing printed, after pytest's own summary line."""
    lines = config.stash.get(_RESULTS, {}).get("table")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not lines or reporter is None:
        return
    reporter.write_sep("=", "exercises")
    for line in lines:
        status = line.rsplit("  ", 1)[-1]
        markup = {"green": status.startswith("passed"),
                  "yellow": status.startswith(("not started", "waits")),
                  "red": status.startswith(("failing", "needs"))}
        reporter.write_line(line, **markup)
