"""The pytest plugin ``make grade`` loads in each submission's run
(``-p tools.grade_plugin``): a time limit per test, and a log of every result.

* ``--grade-log PATH``: one JSON object per line, written as the run goes (a
  run killed at the student's time limit still leaves every finished result):
  first ``{"collected": [{"nodeid", "exercises", "chapter"}, ...]}``, then for each test
  ``{"nodeid", "outcome", "when", "duration", "exercises", "message", "stub"}``
  (``stub``: the exercise whose stub a failed test stopped at, if any).
* ``--grade-test-limit S``: a test (each of its setup, call and teardown) that
  runs longer than S seconds fails with "time limit"; the run goes on, so an
  endless loop in one exercise costs only that exercise (POSIX: SIGALRM).
* ``--grade-exercises 1.1,1.2``: run only the tests of these exercises.

The exercises of a test are those of its ``exercise`` markers and, when the
tree has ``tools/dependencies.json`` (``{"tests": {nodeid: [ids]}}``: the
exercises whose regions each test runs), those the map names: an exercise
passes only when every test that runs its code passes, as in ``make test``'s
table.
"""
from __future__ import annotations

import contextlib
import json
import re
import signal
from pathlib import Path

import pytest


STUB_RE = re.compile(r"NotImplementedError: Exercise (\d+\.\d+) — ")
OUTPUT_STUB_RE = re.compile(r"Exercise (\d+\.\d+) — ")


class TimeLimit(BaseException):
    """Raised in a test that ran past --grade-test-limit (a BaseException, so
    that an ``except Exception`` in the code under test cannot swallow it)."""


def pytest_addoption(parser):
    group = parser.getgroup("grade", "make grade")
    group.addoption("--grade-log", default=None, metavar="PATH",
                    help="append one JSON line per test result to PATH")
    group.addoption("--grade-test-limit", type=float, default=0, metavar="S",
                    help="fail a test phase that runs longer than S seconds (0: none)")
    group.addoption("--grade-exercises", default=None, metavar="IDS",
                    help="run only the tests of these exercises (marked or mapped)")


def _dependencies(config) -> dict:
    path = Path(config.rootpath) / "tools" / "dependencies.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8")).get("tests", {})


def _write(config, record):
    path = config.getoption("--grade-log")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


_MAP = pytest.StashKey[dict]()


def _exercises(item):
    marked = [m.args[0] for m in item.iter_markers("exercise") if m.args]
    mapped = item.config.stash.get(_MAP, {}).get(item.nodeid, [])
    return marked + [i for i in mapped if i not in marked]


def pytest_configure(config):
    config.stash[_MAP] = _dependencies(config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    wanted = config.getoption("--grade-exercises")
    if not wanted:
        return
    wanted = {i.strip() for i in wanted.split(",") if i.strip()}
    keep = [item for item in items if wanted & set(_exercises(item))]
    drop = [item for item in items if not wanted & set(_exercises(item))]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _chapter(item):
    found = [int(m.name[7:]) for m in item.iter_markers() if re.fullmatch(r"chapter\d+", m.name)]
    return found[0] if found else None


def pytest_collection_finish(session):
    _write(session.config, {"collected": [{"nodeid": item.nodeid, "exercises": _exercises(item),
                                           "chapter": _chapter(item)}
                                          for item in session.items]})


@contextlib.contextmanager
def _limit(config, nodeid):
    seconds = config.getoption("--grade-test-limit")
    if not seconds or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise TimeLimit(f"{nodeid} ran past the time limit of {seconds:g} s per test")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)    # and again every second after
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _limit(item.config, item.nodeid):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _limit(item.config, item.nodeid):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    with _limit(item.config, item.nodeid):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" and report.passed:
        return
    message, stub = "", None
    if report.failed:
        found = STUB_RE.findall(str(report.longrepr))
        if not found:            # a stub reached in a subprocess: its output names it
            found = OUTPUT_STUB_RE.findall("\n".join(text for _, text in report.sections))
        stub = found[-1] if found else None
        excinfo = call.excinfo
        message = (f"{excinfo.typename}: {excinfo.value}" if excinfo is not None
                   else str(report.longrepr))
        message = message.strip().splitlines()[0][:300] if message.strip() else "failed"
    _write(item.config, {"nodeid": item.nodeid, "when": report.when, "outcome": report.outcome,
                         "duration": round(report.duration, 3), "exercises": _exercises(item),
                         "message": message, "stub": stub})
