"""make grade against submissions that try to forge or escape their grade.

Each submission answers exercise 1.4 correctly and plays its trick in 1.2 (a
wrong answer, or a right one that misbehaves); the grade must be 1.4 = 1 and
1.2 = 0 (unless said otherwise), and the status must say what happened.  The
submissions are tiny and the limits small, so the whole class takes a few
seconds.  The sandbox cases skip, with the reason, where bubblewrap cannot run."""
import csv
import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from tools import grade, grade_plugin
from tools.make_student import STUDENT_FILE, write_student_copy
from tools.tests.course_copies import solve

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif((ROOT / STUDENT_FILE).exists(),
                                reason="needs the reference's regions")
NO_BWRAP = grade.sandbox_problem()
needs_bwrap = pytest.mark.skipif(NO_BWRAP is not None, reason=f"no sandbox here: {NO_BWRAP}")
WRONG = "        return g, g\n"            # a wrong Mul.backward (1.2)

# The tricks, each written at the top of Mul.backward (exercise 1.2's region).
TRICKS = {
    # Replaces pytest's report maker so that every test reads "passed".
    "patches_report": """
        import _pytest.reports as _r
        _make = _r.TestReport.from_item_and_call.__func__
        def _passed(cls, item, call):
            report = _make(cls, item, call)
            report.outcome, report.longrepr = "passed", None
            return report
        _r.TestReport.from_item_and_call = classmethod(_passed)
        return g, g
""",
    # Replaces the test's own comparison (the name the test module calls).
    "patches_assert_close": """
        import sys as _s
        _s.modules["tests.exercises.test_ch01"].assert_close = lambda *a, **k: None
        return g, g
""",
    # Writes report lines of its own into every file descriptor it finds, and a log.
    "forges_lines": """
        import json as _j, os as _o
        for _fd in range(3, 64):
            for _n in ("tests/exercises/test_ch01.py::test_mul_backward_is_the_product_rule",):
                _line = _j.dumps({"nodeid": _n, "when": "call", "outcome": "passed",
                                  "exercises": ["1.2"], "seq": 999})
                try:
                    _o.write(_fd, ("0" * 64 + " " + _line + "\\n").encode())
                except OSError:
                    pass
        return g, g
""",
    # Writes outside its working copy (a file of the grader's), then answers.
    "writes_outside": """
        open(RELEASE_FILE, "w").write("overwritten by a submission")
        return unbroadcast(g * self.b, self.a_shape), unbroadcast(g * self.a, self.b_shape)
""",
    # Ends the test process in the middle of the run, with a success status.
    "exits_early": """
        import os as _o
        _o._exit(0)
""",
    # Forks without end.
    "fork_bomb": """
        import os as _o
        while True:
            _o.fork()
""",
    # Ignores the per-test alarm and loops forever.
    "loops_forever": """
        import signal as _s
        _s.signal(_s.SIGALRM, _s.SIG_IGN)
        while True:
            pass
""",
    # Asks for 10 GB.
    "allocates_10GB": """
        import numpy as _np
        _block = _np.ones(10 * 10**9 // 8)
        return g * _block[:1], g
""",
}


def _trick(code, release_file):
    def edit(ident, body):
        if ident != "1.2":
            return body
        text = textwrap.dedent(code).replace("RELEASE_FILE", repr(str(release_file)))
        return textwrap.indent(text, " " * 8).splitlines(keepends=True)
    return edit


# Outside /tmp (which the sandbox replaces by an empty one): visible, read-only.
OUTSIDE = Path("/var/tmp") / f"minigrad-sandbox-probe-{os.getpid()}" / "grader.txt"


@pytest.fixture(scope="module")
def release_copy(tmp_path_factory):
    rel = tmp_path_factory.mktemp("release") / "release"
    write_student_copy(rel, root=ROOT, chapters="1", git=False)
    return rel


def _class(tmp_path, release_copy, names):
    subs = tmp_path / "submissions"
    for name in names:
        write_student_copy(subs / name, root=ROOT, chapters="1", git=False)
        solve(subs / name, ROOT, ["1.2", "1.4"],
              edit=_trick(TRICKS[name], OUTSIDE) if name in TRICKS else None)
    return subs


def _grade(subs, release_copy, out, **options):
    options = dict(dict(jobs=2, limit=90, test_limit=2, only=["1.2", "1.4"],
                        paths=["tests/exercises"], memory=2 * 2**30, processes=64), **options)
    outcomes = {o.student: o for o in grade.grade(subs, release_copy, out, **options)}
    rows = {r["student"]: r for r in csv.DictReader(open(out / "gradebook.csv"))}
    return outcomes, rows


@needs_bwrap
def test_no_submission_forges_or_escapes_its_grade(tmp_path, release_copy):
    OUTSIDE.parent.mkdir(parents=True, exist_ok=True)
    OUTSIDE.write_text("the grader's")
    subs = _class(tmp_path, release_copy, ["honest", *TRICKS])
    try:
        outcomes, rows = _grade(subs, release_copy, tmp_path / "grades")
        outside = OUTSIDE.read_text()
    finally:
        shutil.rmtree(OUTSIDE.parent)
    table = {n: (r["1.2"], r["1.4"], r["status"]) for n, r in rows.items()}
    print("\n".join(f"{n:16} 1.2={a} 1.4={b}  {s}" for n, (a, b, s) in table.items()))
    assert table["honest"] == ("1", "1", "graded")
    for name in TRICKS:
        assert rows[name]["1.2"] == "0", (name, table[name])
        assert rows[name]["1.4"] == "1", (name, table[name])
        assert "NO SANDBOX" not in rows[name]["status"]
    status = {n: r["status"] for n, r in rows.items()}
    assert "tampered with the test runner in tests/exercises/test_ch01.py::" \
           "test_mul_backward_is_the_product_rule (_pytest.reports.TestReport" \
        in status["patches_report"]
    assert "tampered with the test runner in tests/exercises/test_ch01.py::" \
           "test_mul_backward_is_the_product_rule (tests.exercises.test_ch01.assert_close)" \
        in status["patches_assert_close"]
    assert "forged report line(s) rejected" in status["forges_lines"]
    assert outside == "the grader's", "a write left the sandbox"
    assert "a write outside the working copy was refused" in status["writes_outside"]
    assert status["exits_early"].startswith("error (graded anyway): exited early at")
    assert "exited early at" in status["exits_early"] and "(exit status 0) in " \
        "tests/exercises/test_ch01.py::test_mul_backward_is_the_product_rule" \
        in status["exits_early"]
    assert "ended during this test: exited early" in outcomes["exits_early"].details["1.2"]
    assert "process limit (64) reached" in status["fork_bomb"]
    assert "time limit: killed at" in status["loops_forever"]
    assert "killed: memory limit (2 GiB)" in status["allocates_10GB"]


@needs_bwrap
def test_a_submission_that_patches_the_runner_as_it_loads_scores_nothing(tmp_path,
                                                                         release_copy):
    subs = _class(tmp_path, release_copy, ["at_import"])
    init = subs / "at_import" / "minigrad" / "__init__.py"
    patch = textwrap.dedent(TRICKS["patches_report"]).replace("return g, g\n", "")
    init.write_text(init.read_text(encoding="utf-8") + "\n" + patch, encoding="utf-8")
    _, rows = _grade(subs, release_copy, tmp_path / "grades")
    assert (rows["at_import"]["1.2"], rows["at_import"]["1.4"]) == ("0", "0")
    assert "tampered with the test runner while it loaded the submission" \
        in rows["at_import"]["status"]


def test_without_bubblewrap_every_status_says_so(tmp_path, release_copy, capsys):
    subs = _class(tmp_path, release_copy, ["honest"])
    _, rows = _grade(subs, release_copy, tmp_path / "grades", sandbox=False)
    assert rows["honest"]["total"] == "2"
    assert rows["honest"]["status"].startswith("graded; NO SANDBOX: graded without bubblewrap")
    assert "NO SANDBOX" in capsys.readouterr().err


def test_the_report_stream_rejects_lines_it_did_not_sign():
    key = b"k" * 32
    good = [{"collected": [], "seq": 1, "pid": 7}, {"finished": 0, "seq": 2, "pid": 7}]
    lines = [grade_plugin.hmac.new(key, json.dumps(r).encode(), "sha256").hexdigest()
             + " " + json.dumps(r) for r in good]
    forged = "0" * 64 + " " + json.dumps({"finished": 0, "seq": 2, "pid": 7})
    replayed = lines[1]                                         # a copy: seq 2 again
    records, rejected = grade_plugin.read_records(
        "\n".join([lines[0], forged, lines[1], replayed]).encode(), key)
    assert records == good and rejected == 2
