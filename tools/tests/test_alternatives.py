"""Correct answers written another way (tools/alternatives/*.json) are accepted
everywhere: by ``make check``, by the tests of later chapters that call the
exercise's code (the table of ``make test``), and by ``make grade``.

An alternative is written like a mutant of tools/mutants/ (text replacements
inside the exercise's regions, applied by tools/mutation.py), but it must pass.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import grade, mutation, solutions
from tools.make_student import STUDENT_FILE, tracked_files, write_student_copy
from tools.tests.course_copies import solve

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif((ROOT / STUDENT_FILE).exists(),
                                reason="needs the reference's regions")
ALTERNATIVES = mutation.catalogue(ROOT / "tools" / "alternatives")
# The later chapters' tests that call an exercise's code from elsewhere (the
# pipeline stages, the GPU path, the accumulation buffers): an answer that puts
# a line in another helper than the reference's fails there first.
USERS = {"4.3": ("tests/pipeline/test_local.py", "tests/optim/test_accumulation_device.py",
                 "tests/optim/test_precision.py", "tests/optim/test_accumulation.py",
                 "tests/optim/test_all_or_nothing.py")}


def _copy_with(alternative, tmp_path) -> Path:
    copy = tmp_path / "tree"
    for rel in tracked_files(ROOT):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, copy / rel)
    mutation.apply(copy, alternative, solutions.collect(copy)[alternative["exercise"]])
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c",
           "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "alternative"]):
        subprocess.run(git + args, cwd=copy, check=True, capture_output=True)
    return copy


def _pytest(copy, *args):
    env = dict(os.environ, PYTHONPATH=str(copy), MPLBACKEND="Agg",
               PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=copy, env=env, capture_output=True, text=True)


@pytest.mark.parametrize("alternative", ALTERNATIVES, ids=lambda a: f"{a['exercise']}-{a['name']}")
def test_an_alternative_answer_passes_check_the_table_and_grade(alternative, tmp_path):
    ident = alternative["exercise"]
    copy = _copy_with(alternative, tmp_path)
    changed = [r.path for r in solutions.collect(copy)[ident]]
    assert any((copy / p).read_bytes() != (ROOT / p).read_bytes() for p in changed), \
        "the alternative changed nothing"
    # make check EX=N.M
    done = _pytest(copy, *mutation.check_command(ident)[3:])
    assert done.returncode == 0, f"make check EX={ident}:\n{done.stdout[-2000:]}"
    # the tests of later chapters that run the exercise's code from elsewhere
    runs = json.loads((copy / "tools" / "dependencies.json").read_text())["tests"]
    users = sorted(t for t, ids in runs.items()
                   if ident in ids and t.startswith(USERS.get(ident, ())))
    if users:
        done = _pytest(copy, "--progress", *users)
        assert done.returncode == 0, f"later chapters' tests of {ident}:\n{done.stdout[-2000:]}"
    # make grade EX=N.M on a student copy answered with the alternative
    chapter = ident.split(".")[0]
    release_dir = tmp_path / "release"
    write_student_copy(release_dir, root=copy, chapters=f"1-{chapter}", git=False)
    student = tmp_path / "submissions" / "student"
    write_student_copy(student, root=copy, chapters=f"1-{chapter}", git=False)
    released = json.loads((release_dir / "release.json").read_text())["released"]
    solve(student, copy, released)
    out = tmp_path / "grades"
    grade.grade(student.parent, release_dir, out, only=[ident], limit=300,
                paths=["tests/exercises", "tests/optim"])
    row = next(csv.DictReader(open(out / "gradebook.csv")))
    assert row[ident] == "1", (row, (out / "logs" / "student.txt").read_text()[-2000:])
