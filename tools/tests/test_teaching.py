"""The teacher's workflow end to end: hand out chapter by chapter, the release
manifest and its warning, a corrected release brought into a copy with
answers (UPDATE=1), FORCE=1 refusing to destroy work, and grading a class."""
import csv
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tools import answers, grade, release, solutions, update_student
from tools.make_student import STUDENT_FILE, tracked_files, write_student_copy
from tools.tests.course_copies import solve

ROOT = Path(__file__).resolve().parents[2]
IS_STUDENT_COPY = (ROOT / STUDENT_FILE).exists()
pytestmark = pytest.mark.skipif(IS_STUDENT_COPY, reason="needs the reference's regions")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]


def _git(cwd, *args):
    return subprocess.run(GIT + list(args), cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def _reference(tmp_path) -> Path:
    """A private git checkout of the reference as it is now (to correct it)."""
    ref = tmp_path / "reference"
    for rel in tracked_files(ROOT):
        (ref / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, ref / rel)
    _git(ref, "init", "-q")
    _git(ref, "add", "-A")
    _git(ref, "commit", "-q", "-m", "reference")
    return ref


def test_chapters_1_to_3_hand_out_no_later_solution_and_a_manifest(tmp_path):
    dest = tmp_path / "student"
    summary = write_student_copy(dest, root=ROOT, chapters="1-3", git=False)
    assert {i.split(".")[0] for i in summary["released"]} == {"1", "2", "3"}
    assert summary["withheld"] and all(int(i.split(".")[0]) > 3 for i in summary["withheld"])
    assert solutions.collect(dest) == {}, "every region, released or not, is blanked"
    by_id = solutions.collect(ROOT)
    for ident in summary["withheld"]:
        for region in by_id[ident]:
            lines = (ROOT / region.path).read_text(encoding="utf-8").splitlines()
            outside = {s.strip() for s in lines[:region.begin] + lines[region.end:]}
            secret = {s.strip() for s in lines[region.begin:region.end - 1]
                      if len(s.strip()) > 20 and not s.strip().startswith(("#", '"'))} - outside
            handed_out = {s.strip() for s in
                          (dest / region.path).read_text(encoding="utf-8").splitlines()}
            assert not secret & handed_out, f"{ident}: a line of its answer is in the copy"
            stub = f'raise NotImplementedError("Exercise {ident} — '
            assert stub in (dest / region.path).read_text(encoding="utf-8")
    assert '(chapter 04 is not released yet)' in (dest / "minigrad" / "optim" /
                                                 "accumulation.py").read_text(encoding="utf-8")
    info = json.loads((dest / STUDENT_FILE).read_text(encoding="utf-8"))
    assert info["test_chapters"] == "0-3"
    manifest = release.read_manifest(dest)
    assert manifest["released"] == summary["released"]
    assert len(manifest["commit"]) == 40 and manifest["date"].endswith("Z")
    assert {"Makefile", "conftest.py", "pyproject.toml"} <= set(manifest["protected"])
    assert all(p in manifest["protected"] for p in manifest["files"]
               if p.startswith(("tests/", "tools/")))
    assert manifest["files"]["minigrad/tensor.py"] == release.sha256(dest / "minigrad/tensor.py")
    assert release.check_manifest(dest) == []

    # make test warns, in one line, about an edited test and an added one.
    (dest / "tests" / "exercises" / "test_ch03.py").write_text("def test_x():\n    pass\n")
    (dest / "tests" / "test_mine.py").write_text("")
    assert release.check_manifest(dest) == ["tests/exercises/test_ch03.py", "tests/test_mine.py"]
    run = subprocess.run([sys.executable, "-m", "pytest", "tools/tests/test_solutions.py", "-q",
                          "-p", "no:cacheprovider", "-k", "chapter_selection"], cwd=dest,
                         env={"PYTHONPATH": str(dest), "PATH": ""}, capture_output=True,
                         text=True)
    warnings = [line for line in run.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "test_ch03.py" in warnings[0], run.stdout
    assert run.returncode == 0, run.stdout


def _answer_lines(root, ident):
    """The reference's body of exercise ``ident``'s (first) region."""
    region = solutions.collect(root)[ident][0]
    lines = (root / region.path).read_text(encoding="utf-8").splitlines(keepends=True)
    return lines[region.begin:region.end - 1]


def test_update_keeps_the_answers_and_reports_conflicts(tmp_path):
    ref = _reference(tmp_path)
    copy = tmp_path / "student"
    write_student_copy(copy, root=ref, chapters="1-3", git=True)
    solve(copy, ref, ["1.2", "1.4", "3.1"])
    (copy / "notes.md").write_text("my notes\n")
    notebook = next((copy / "notebooks").glob("01_*.ipynb"))
    notebook.write_text(notebook.read_text(encoding="utf-8").replace(
        '"cells": [', '"cells": [{"cell_type": "markdown", "metadata": {}, '
        '"source": "mine"},', 1), encoding="utf-8")
    mul_answer = _answer_lines(ref, "1.2")[0].strip()      # read from the reference,
    exp_answer = "".join(_answer_lines(ref, "1.4"))         # never written out here
    assert mul_answer in (copy / "minigrad/functions/elementwise.py").read_text()

    # FORCE=1 refuses: uncommitted work, then (committed) answers.
    with pytest.raises(SystemExit, match="uncommitted change"):
        write_student_copy(copy, root=ref, chapters="1-3", force=True)
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "my answers")
    with pytest.raises(SystemExit, match=r"answers to exercise\(s\) 1.2, 1.4, 3.1"):
        write_student_copy(copy, root=ref, chapters="1-3", force=True)

    # The teacher corrects the course: a line above 1.2's region, 1.4's region
    # moved into a helper, a test fixed; and releases chapter 4.
    source = ref / "minigrad/functions/elementwise.py"
    text = source.read_text(encoding="utf-8")
    text = text.replace("    def backward(self, g):\n        # BEGIN SOLUTION ch01.2\n",
                        "    def backward(self, g):\n        # the product rule, per input\n"
                        "        # BEGIN SOLUTION ch01.2\n", 1)
    text = text.replace("    def backward(self, g):\n        # BEGIN SOLUTION ch01.4\n"
                        + exp_answer + "        # END SOLUTION\n",
                        "    def backward(self, g):\n        return self._grad(g)\n\n"
                        "    def _grad(self, g):\n        # BEGIN SOLUTION ch01.4\n"
                        + exp_answer + "        # END SOLUTION\n", 1)
    source.write_text(text, encoding="utf-8")
    fixed_test = ref / "tests/exercises/test_ch01.py"
    fixed_test.write_text(fixed_test.read_text(encoding="utf-8") + "\n# corrected\n")
    ref_notebook = ref / "notebooks" / notebook.name        # the student changed it too
    ref_notebook.write_text(ref_notebook.read_text(encoding="utf-8").replace(
        '"cells": [', '"cells": [{"cell_type": "markdown", "metadata": {}, '
        '"source": "corrected"},', 1), encoding="utf-8")
    _git(ref, "commit", "-qam", "corrections")

    report = update_student.update(copy, root=ref, chapters="1-4")
    text = report.text()
    assert set(report.kept) == {"1.2", "3.1"}, text
    assert any("1.4" in c and "Exp._grad" in c for c in report.conflicts), text
    new = (copy / "minigrad/functions/elementwise.py").read_text(encoding="utf-8")
    assert mul_answer in new and "# the product rule, per input" in new
    assert 'raise NotImplementedError("Exercise 1.4 — ' in new        # the new stub
    assert (copy / "tests/exercises/test_ch01.py").read_text().endswith("# corrected\n")
    assert (copy / "notes.md").read_text() == "my notes\n"
    assert '"source": "mine"' in notebook.read_text(encoding="utf-8")
    sgd = (copy / "minigrad/optim/sgd.py").read_text(encoding="utf-8")
    assert "Exercise 3.1 — " not in sgd, "sgd.py unchanged by the release: the answer stays"
    accumulation = (copy / "minigrad/optim/accumulation.py").read_text(encoding="utf-8")
    assert "chapter 04 is not released yet" not in accumulation
    assert "Exercise 4.3 — " in accumulation and "chapter 05 is not released yet" in accumulation
    backup = report.backup / "files" / "minigrad/functions/elementwise.py"
    assert exp_answer.strip() in backup.read_text(encoding="utf-8"), "1.4's answer is kept"
    assert (report.backup / "report.txt").is_file()
    manifest = release.read_manifest(copy)
    assert "4.1" in manifest["released"] and release.check_manifest(copy) == []
    assert ".minigrad-backup" not in _git(copy, "status", "--porcelain")
    # The merged library imports and the kept answers pass their tests.
    run = subprocess.run([sys.executable, "-m", "pytest", "tests/exercises/test_ch01.py", "-q",
                          "-p", "no:cacheprovider", "--exercise", "1.2"], cwd=copy,
                         env={"PYTHONPATH": str(copy), "PATH": ""}, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout[-2000:]
    conflict = f"notebooks/{notebook.name}: both you and the release changed it"
    assert any(c.startswith(conflict) for c in report.conflicts), text
    # A second update changes nothing and loses nothing, and the unresolved
    # conflict is reported again, with the release's notebook in its backup.
    again = update_student.update(copy, root=ref, chapters="1-4",
                                  now=__import__("datetime").datetime(2030, 1, 1))
    assert mul_answer in (copy / "minigrad/functions/elementwise.py").read_text()
    assert not any("1.2" in c for c in again.conflicts)
    assert any(c.startswith(conflict) for c in again.conflicts), again.text()
    assert '"source": "corrected"' in (again.backup / "incoming" / "notebooks" /
                                       notebook.name).read_text(encoding="utf-8")
    assert '"source": "mine"' in notebook.read_text(encoding="utf-8")
    assert release.check_manifest(copy) == []


def test_an_answer_whose_surroundings_were_edited_is_a_conflict_not_a_loss(tmp_path):
    copy = tmp_path / "student"
    write_student_copy(copy, root=ROOT, chapters="3", git=False)
    solve(copy, ROOT, ["3.9"])
    path = copy / "minigrad/optim/optimizer.py"
    path.write_text(path.read_text(encoding="utf-8").replace(
        '"""Clear every parameter\'s gradient.', '"""Clear them all.', 1))
    found = answers.extract(copy, release.read_manifest(copy))
    problem = [a for a in found if a.exercise == "3.9"][0].problem
    assert "were changed" in problem
    assert answers.written_exercises(copy, release.read_manifest(copy)) == ["3.9"]


def test_grade_a_class(tmp_path):
    rel = tmp_path / "release"
    write_student_copy(rel, root=ROOT, chapters="1", git=False, link=True)
    # A dependency map: Mul's test also runs 1.4's region (so 1.4 needs it to pass).
    # (The release's files are hard links to the reference: unlink before writing.)
    (rel / "tools" / "dependencies.json").unlink()
    (rel / "tools" / "dependencies.json").write_text(json.dumps({"tests": {
        "tests/exercises/test_ch01.py::test_mul_backward_is_the_product_rule": ["1.2", "1.4"]}}))
    release.write_manifest(rel, ROOT, chapters="1", released=release.read_manifest(rel)[
        "released"], withheld=[])
    subs = tmp_path / "submissions"
    for name in ("full", "looping", "tampered", "hangs"):
        write_student_copy(subs / name, root=ROOT, chapters="1", git=False)
        shutil.copy2(rel / "tools" / "dependencies.json", subs / name / "tools")
    solve(subs / "full", ROOT, ["1.2", "1.4"])
    solve(subs / "looping", ROOT, ["1.2", "1.4"],
          edit=lambda i, body: body if i == "1.2" else ["        while True:\n",
                                                        "            pass\n"])
    solve(subs / "tampered", ROOT, ["1.2", "1.4"],
          edit=lambda i, body: body if i == "1.4" else ["        return g, g\n"])
    test = subs / "tampered/tests/exercises/test_ch01.py"
    test.write_text(test.read_text(encoding="utf-8").replace(
        "def test_mul_backward_is_the_product_rule():\n",
        "def test_mul_backward_is_the_product_rule():\n    return\n"))
    _git(subs / "tampered", "init", "-q")
    _git(subs / "tampered", "add", "-A")
    _git(subs / "tampered", "commit", "-qm", "done")
    _git(subs / "tampered", "bundle", "create", "-q", str(subs / "tampered.bundle"), "--all")
    shutil.rmtree(subs / "tampered")
    # One whose import never ends: only the limit per student stops it.
    hanging = tmp_path / "late" / "hangs"
    shutil.move(subs / "hangs", hanging)
    init = hanging / "minigrad/__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + "\nwhile True:\n    pass\n")
    grade.grade(hanging.parent, rel, tmp_path / "late-grades", limit=4, only=["1.2", "1.4"],
                paths=["tests/exercises"])
    hangs = next(csv.DictReader(open(tmp_path / "late-grades" / "gradebook.csv")))
    assert hangs["total"] == "0" and hangs["status"].startswith("time limit"), hangs
    assert float(hangs["seconds"]) < 30

    out = tmp_path / "grades"
    outcomes = grade.grade(subs, rel, out, jobs=3, limit=300, test_limit=3,
                           only=["1.2", "1.4"], paths=["tests/exercises"])
    rows = {r["student"]: r for r in csv.DictReader(open(out / "gradebook.csv"))}
    assert set(rows) == {"full", "looping", "tampered"}
    assert (rows["full"]["1.2"], rows["full"]["1.4"], rows["full"]["total"]) == ("1", "1", "2")
    assert (rows["looping"]["1.2"], rows["looping"]["1.4"]) == ("1", "0")
    # every test of 1.4 (Exp.backward loops) hits the limit; the status names the first
    assert re.fullmatch(r"graded; time limit per test in \d+ test\(s\): "
                        r"tests/exercises/test_ch01\.py::test_exp_backward\S*",
                        rows["looping"]["status"]), rows["looping"]["status"]
    # 1.2 is wrong and its test was edited to pass: the release's test fails it,
    # and 1.4 too, whose region that test also runs (the map).
    assert (rows["tampered"]["1.2"], rows["tampered"]["1.4"]) == ("0", "0")
    assert rows["tampered"]["changed course files"] == "tests/exercises/test_ch01.py"
    looping = {o.student: o for o in outcomes}["looping"]
    assert "time limit" in looping.details["1.4"]
    results = json.loads((out / "results/full/results.json").read_text(encoding="utf-8"))
    assert results["score"] == 2 and isinstance(results["execution_time"], int)
    assert [(t["number"], t["score"], t["max_score"], t["status"]) for t in results["tests"]] \
        == [("1.2", 1, 1, "passed"), ("1.4", 1, 1, "passed")]
    tampered = json.loads((out / "results/tampered/results.json").read_text(encoding="utf-8"))
    assert tampered["tests"][1]["status"] == "failed" and \
        "test_mul_backward_is_the_product_rule" in tampered["tests"][1]["output"]
    suites = ET.parse(out / "junit.xml").getroot()
    full = next(s for s in suites if s.get("name") == "full")
    assert [c.find("properties/property[@name='exercise']").get("value")
            for c in full.iter("testcase")] == ["1.2", "1.4"]
    assert next(s for s in suites if s.get("name") == "looping").get("failures") == "1"


def test_a_test_stopped_by_another_unanswered_exercise_proves_nothing(tmp_path):
    log = tmp_path / "log.jsonl"
    records = [{"collected": [{"nodeid": "a", "exercises": ["1.1"]},
                              {"nodeid": "b", "exercises": ["1.1", "6.2"]},
                              {"nodeid": "c", "exercises": ["6.2"]},
                              {"nodeid": "d", "exercises": ["1.3"]}]},
               {"nodeid": "a", "outcome": "passed", "stub": None},
               {"nodeid": "b", "outcome": "failed", "stub": "6.2",
                "message": "NotImplementedError: Exercise 6.2 — ..."},
               {"nodeid": "c", "outcome": "failed", "stub": "6.2", "message": "stub"},
               {"nodeid": "d", "outcome": "failed", "stub": "6.2", "message": "stub"}]
    log.write_text("\n".join(json.dumps(r) for r in records))
    outcome = grade.Outcome("s")
    grade.score(outcome, log, ["1.1", "6.2", "1.3"], "", stubs={"6.2"})
    assert outcome.scores == {"1.1": 1, "6.2": 0, "1.3": 0}
    assert "1 more wait for exercise(s) 6.2" in outcome.details["1.1"]
    assert "wait for exercise(s) 6.2" in outcome.details["1.3"]
    assert outcome.details["6.2"].startswith("not started")     # its stub is still there
    # A failed chapter-6 test of 1.1 without a stub's message (a command caught
    # it) waits for the unanswered chapter-6 exercise; one of chapter 1 does not.
    records[0]["collected"] += [{"nodeid": "e", "exercises": ["1.1"], "chapter": 6},
                                {"nodeid": "f", "exercises": ["1.3"], "chapter": 1}]
    records += [{"nodeid": "e", "outcome": "failed", "stub": None, "message": "exit 3"}]
    log.write_text("\n".join(json.dumps(r) for r in records))
    outcome = grade.Outcome("s")
    grade.score(outcome, log, ["1.1"], "", stubs={"6.2"})
    assert outcome.scores == {"1.1": 1}
    records += [{"nodeid": "f", "outcome": "failed", "stub": None, "message": "wrong"}]
    log.write_text("\n".join(json.dumps(r) for r in records))
    grade.score(outcome, log, ["1.3"], "", stubs={"6.2"})
    assert outcome.scores["1.3"] == 0 and "f: wrong" in outcome.details["1.3"]
    # An untouched copy: every test is held back, so none is collected; that is
    # a graded submission with nothing started, not an error.
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"collected": []}))
    outcome = grade.Outcome("s")
    grade.score(outcome, empty, ["1.1", "6.2"], "26 not started", stubs={"1.1", "6.2"})
    assert outcome.status == "graded: no exercise started"
    assert outcome.scores == {"1.1": 0, "6.2": 0}
    assert all(d.startswith("not started") for d in outcome.details.values())
    # A "stub" the student raises while the real one is answered counts as a failure.
    outcome = grade.Outcome("s")
    grade.score(outcome, log, ["1.1"], "", stubs=set())
    assert outcome.scores == {"1.1": 0}
