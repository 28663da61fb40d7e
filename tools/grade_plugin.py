"""The pytest plugin ``make grade`` loads in each submission's run
(``-p tools.grade_plugin``): a time limit per test, and a report of every result
that the submission's own code cannot forge.

The plugin is imported from the release's read-only ``tools/`` before pytest
reads any conftest, so before the submission's code is imported.  At import it

* takes the report channel from the environment: ``MINIGRAD_GRADE_FD`` (a pipe
  the grader reads, open in no file the submission can reach) and the key of the
  records from ``MINIGRAD_GRADE_KEY_FD`` (read once, closed, the variables
  removed): each line it writes is ``<HMAC-SHA256 of the line> <JSON>``, with a
  sequence number, so a line the submission writes into the pipe is rejected;
* keeps a reference to every function and class of pytest, pluggy and NumPy's
  assertions that decides a verdict (``_GUARDED``), and, once collected, to
  the functions of the tests' own modules (``assert_close`` and the like);
  before each result is written they are compared with the ones seen then
  (object and code), and a replaced one ends the run at once with a
  ``tampered`` record naming it and the test during which it was found;
* decides each test phase's outcome itself from the exception the phase raised
  (``call.excinfo``) and compares it with pytest's report: a report that says
  "passed" for a phase that raised is a forgery too.

Records: first ``{"collected": [{"nodeid", "exercises", "chapter"}, ...]}``;
``{"start": nodeid}`` as each test begins (a run that ends early names the test
it ended in); one per test phase that failed or was skipped, and per passing
call: ``{"nodeid", "outcome", "when", "duration", "exercises", "message",
"stub"}``; ``{"finished": exitstatus}`` at the end.  Without the environment
variables (a run outside ``make grade``), ``--grade-log PATH`` appends the same
JSON lines to a file, unsigned.

* ``--grade-test-limit S``: a test (each of its setup, call and teardown) that
  runs longer than S seconds fails with "time limit"; the run goes on, so an
  endless loop in one exercise costs only that exercise (POSIX: SIGALRM).
* ``--grade-exercises 1.1,1.2``: run only the tests of these exercises.
* ``--grade-skip PATH``: a JSON list of test ids not to run again (the grader
  resumes a run that ended early after the test it ended in).

The exercises of a test are those of its ``exercise`` markers and, when the
tree has ``tools/dependencies.json`` (``{"tests": {nodeid: [ids]}}``: the
exercises whose regions each test runs), those the map names: an exercise
passes only when every test that runs its code passes, as in ``make test``'s
table.
"""
from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import signal
import sys
from pathlib import Path

import _pytest.outcomes
import _pytest.python
import _pytest.reports
import _pytest.runner
import pluggy
import pytest

try:                                    # NumPy's assertions decide most verdicts
    import numpy
    import numpy.testing
except ImportError:                     # pragma: no cover - the course needs NumPy
    numpy = None


from tools.exercises import EXERCISES as _EXERCISES, chapter_of as _chapter_of  # noqa: E402

STUB_RE = re.compile(r"(?:NotImplementedError: |this needs )Exercise (\d+\.\d+) — ")
OUTPUT_STUB_RE = re.compile(r"Exercise (\d+\.\d+) — ")
TAMPERED_EXIT = 70


class TimeLimit(BaseException):
    """Raised in a test that ran past --grade-test-limit (a BaseException, so
    that an ``except Exception`` in the code under test cannot swallow it)."""


# ------------------------------------------------------------ taken at import

def _channel():
    """The report pipe and the key, from the grader (None outside make grade)."""
    fd, key_fd = os.environ.pop("MINIGRAD_GRADE_FD", None), \
        os.environ.pop("MINIGRAD_GRADE_KEY_FD", None)
    if fd is None or key_fd is None:
        return None, b""
    key = b""
    with open(int(key_fd), "rb", closefd=True) as f:
        key = f.read()
    return int(fd), key


_FD, _KEY = _channel()
_PID = os.getpid()
_WRITE, _DIGEST, _DUMPS, _EXIT, _GETPID = (os.write, hmac.new, json.dumps, os._exit,
                                           os.getpid)
_SEQ = [0]


def _guarded():
    """name -> object: what decides a verdict, as it is before the submission runs."""
    found = {}
    modules = {"_pytest.reports": _pytest.reports, "_pytest.runner": _pytest.runner,
               "_pytest.python": _pytest.python, "_pytest.outcomes": _pytest.outcomes,
               "pytest": pytest, "pluggy": pluggy, "json": json, "hmac": hmac, "os": os}
    names = {
        "_pytest.reports": ["TestReport", "BaseReport", "CollectReport"],
        "_pytest.runner": ["CallInfo", "call_and_report", "call_runtest_hook",
                           "runtestprotocol", "pytest_runtest_call",
                           "pytest_runtest_makereport", "check_interactive_exception"],
        "_pytest.python": ["Function", "pytest_pyfunc_call"],
        "_pytest.outcomes": ["Skipped", "Failed", "OutcomeException", "skip", "fail"],
        "pytest": ["raises", "approx", "fail", "skip", "warns"],
        "pluggy": ["HookCaller", "PluginManager"],
        "json": ["dumps"], "hmac": ["new", "compare_digest"],
        "os": ["write", "_exit", "getpid"],
    }
    if numpy is not None:
        modules.update({"numpy": numpy, "numpy.testing": numpy.testing})
        names["numpy"] = ["allclose", "isclose", "array_equal", "all", "any", "isfinite",
                          "isnan", "abs"]
        names["numpy.testing"] = [n for n in dir(numpy.testing) if n.startswith("assert_")]
    for module, attributes in names.items():
        for attribute in attributes:
            obj = getattr(modules[module], attribute, None)
            if obj is None:
                continue
            found[f"{module}.{attribute}"] = obj
            if isinstance(obj, type):         # the methods a class holds
                for key, value in vars(obj).items():
                    if callable(value) or isinstance(value, (classmethod, staticmethod,
                                                             property)):
                        found[f"{module}.{attribute}.{key}"] = value
    return found


def _fingerprint(obj):
    inner = getattr(obj, "__func__", None) or getattr(obj, "fget", None) or obj
    return obj, getattr(inner, "__code__", None), getattr(inner, "__defaults__", None)


def _lookup(name):
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            obj = module
            for attribute in parts[cut:]:
                obj = vars(obj).get(attribute) if isinstance(obj, type) \
                    else getattr(obj, attribute, None)
            return obj
    return None


_GUARDED = {name: _fingerprint(obj) for name, obj in _guarded().items()}


# The tests' own modules as collected: module name -> {name: fingerprint} of
# their functions and classes (``assert_close`` and the like), so that a
# submission that replaces a test helper while a test runs is caught too.
_TEST_MODULES: dict = {}
SHARED_TEST_MODULES = ("tests.helpers", "tests.exercises.check", "tests.conftest",
                       "tests.functions")


def _snapshot_test_modules():
    for name, module in list(sys.modules.items()):
        if name == "tests" or not name.startswith("tests.") or module is None:
            continue
        _TEST_MODULES[name] = {attr: _fingerprint(value) for attr, value in vars(module).items()
                               if callable(value) and not attr.startswith("__")}


def _test_module_changes(names):
    changed = []
    for name in names:
        module = sys.modules.get(name)
        for attr, (obj, code, defaults) in _TEST_MODULES.get(name, {}).items():
            now = getattr(module, attr, None)
            if now is not obj or getattr(obj, "__code__", None) is not code \
                    or getattr(obj, "__defaults__", None) is not defaults:
                changed.append(f"{name}.{attr}")
    return changed


def _replaced(test_module=None):
    """The guarded names whose object or code changed since import (and those
    of the tests' modules since collection: ``test_module``'s and the shared
    helpers')."""
    changed = _test_module_changes(SHARED_TEST_MODULES + ((test_module,) if test_module
                                                          else ()))
    for name, (obj, code, defaults) in _GUARDED.items():
        now = _lookup(name)
        inner = getattr(obj, "__func__", None) or getattr(obj, "fget", None) or obj
        if now is not obj or getattr(inner, "__code__", None) is not code \
                or getattr(inner, "__defaults__", None) is not defaults:
            changed.append(name)
    for hook in (pytest_runtest_makereport, _write, _check):
        if hook.__code__ is not _OWN[hook.__name__]:
            changed.append(f"tools.grade_plugin.{hook.__name__}")
    return changed


# ------------------------------------------------------------ the report

def _write(config, record):
    if _GETPID() != _PID:                 # a forked copy of the run: not the run
        _EXIT(1)
    if _FD is not None:
        _SEQ[0] += 1
        record = dict(record, seq=_SEQ[0], pid=_PID)
        text = _DUMPS(record)
        mac = _DIGEST(_KEY, text.encode("utf-8"), "sha256").hexdigest()
        data = f"{mac} {text}\n".encode("utf-8")
        while data:
            data = data[_WRITE(_FD, data):]
        return
    path = config.getoption("--grade-log")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def read_records(data: bytes, key: bytes):
    """The grader's side: (records, rejected lines) of a signed report stream;
    a line whose HMAC or sequence number is wrong, or whose process is not the
    run's, is rejected."""
    records, rejected, expected, pid = [], 0, 1, None
    for line in data.decode("utf-8", "replace").splitlines():
        mac, _, text = line.partition(" ")
        good = hmac.compare_digest(mac, hmac.new(key, text.encode("utf-8"),
                                                 "sha256").hexdigest())
        try:
            record = json.loads(text) if good else None
        except ValueError:
            record = None
        if not isinstance(record, dict) or record.get("seq") != expected \
                or (pid is not None and record.get("pid") != pid):
            rejected += 1
            continue
        pid, expected = record.get("pid"), expected + 1
        records.append(record)
    return records, rejected


def _check(config, nodeid, when, test_module=None):
    """End the run at once when what decides a verdict was replaced."""
    changed = _replaced(test_module)
    if changed:
        _write(config, {"tampered": changed[:10], "nodeid": nodeid, "when": when})
        _EXIT(TAMPERED_EXIT)


# ------------------------------------------------------------ pytest hooks

def pytest_addoption(parser):
    group = parser.getgroup("grade", "make grade")
    group.addoption("--grade-log", default=None, metavar="PATH",
                    help="append one JSON line per test result to PATH")
    group.addoption("--grade-test-limit", type=float, default=0, metavar="S",
                    help="fail a test phase that runs longer than S seconds (0: none)")
    group.addoption("--grade-exercises", default=None, metavar="IDS",
                    help="run only the tests of these exercises (marked or mapped)")
    group.addoption("--grade-skip", default=None, metavar="PATH",
                    help="a JSON list of test ids not to run (already graded)")


def _dependencies(config) -> dict:
    path = Path(config.rootpath) / "tools" / "dependencies.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8")).get("tests", {})


_MAP = pytest.StashKey[dict]()


def _exercises(item):
    """The exercises whose verdict ``item`` counts in: those it is marked with,
    and those whose code it runs when it belongs to their chapter or an earlier
    one (``course_plugin.counts_for``: the rule of make check and make test)."""
    marked = [m.args[0] for m in item.iter_markers("exercise") if m.args]
    mapped = item.config.stash.get(_MAP, {}).get(item.nodeid, [])
    chapter = _chapter(item)
    return marked + [i for i in mapped if i not in marked and i in _EXERCISES
                     and chapter is not None and chapter <= _chapter_of(i)]


def pytest_configure(config):
    config.stash[_MAP] = _dependencies(config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    wanted = config.getoption("--grade-exercises")
    skip = config.getoption("--grade-skip")
    skip = set(json.loads(Path(skip).read_text(encoding="utf-8"))) if skip else set()
    wanted = {i.strip() for i in wanted.split(",") if i.strip()} if wanted else None
    keep = [item for item in items if (wanted is None or wanted & set(_exercises(item)))
            and item.nodeid not in skip]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


def _chapter(item):
    found = [int(m.name[7:]) for m in item.iter_markers() if re.fullmatch(r"chapter\d+", m.name)]
    return found[0] if found else None


def pytest_collection_finish(session):
    _check(session.config, None, "collection")
    _snapshot_test_modules()
    _write(session.config, {"collected": [{"nodeid": item.nodeid, "exercises": _exercises(item),
                                           "chapter": _chapter(item)}
                                          for item in session.items]})


def pytest_runtest_logstart(nodeid, location):
    if _FD is not None:
        _write(None, {"start": nodeid})


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


def _raised(item, call):
    """'passed', 'skipped' or 'failed' from the exception the phase raised alone."""
    excinfo = call.excinfo
    if excinfo is None:
        return "passed"
    if isinstance(excinfo.value, (_SKIPPED, _XFAILED)):
        return "skipped"
    if call.when == "call" and any(True for _ in item.iter_markers("xfail")):
        return "skipped"                  # an expected failure
    return "failed"


_SKIPPED, _XFAILED = _pytest.outcomes.Skipped, _pytest.outcomes.XFailed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    module = getattr(getattr(item, "module", None), "__name__", None)
    _check(item.config, item.nodeid, call.when, module)
    outcome = yield
    report = outcome.get_result()
    _check(item.config, item.nodeid, call.when, module)
    raised = _raised(item, call)
    if raised == "failed" and report.outcome == "passed":
        _write(item.config, {"tampered": ["the report of a phase that raised says passed"],
                             "nodeid": item.nodeid, "when": call.when})
        _EXIT(TAMPERED_EXIT)
    if report.when != "call" and raised == "passed" and report.passed:
        return
    message, stub = "", None
    if raised == "failed" or report.failed:
        found = STUB_RE.findall(str(report.longrepr))
        if not found:            # a stub reached in a subprocess: its output names it
            found = OUTPUT_STUB_RE.findall("\n".join(text for _, text in report.sections))
        stub = found[-1] if found else None
        excinfo = call.excinfo
        message = (f"{excinfo.typename}: {excinfo.value}" if excinfo is not None
                   else str(report.longrepr))
        message = message.strip().splitlines()[0][:300] if message.strip() else "failed"
    verdict = "failed" if "failed" in (raised, report.outcome) else report.outcome
    _write(item.config, {"nodeid": item.nodeid, "when": report.when, "outcome": verdict,
                         "duration": round(report.duration, 3), "exercises": _exercises(item),
                         "message": message, "stub": stub})


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    _check(session.config, None, "finish")
    _write(session.config, {"finished": int(exitstatus)})


_OWN = {f.__name__: f.__code__ for f in (pytest_runtest_makereport, _write, _check)}
