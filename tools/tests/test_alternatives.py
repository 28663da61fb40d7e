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

from tools import exercises, grade, mutation, solutions
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


def rounds(alternatives) -> list[list[dict]]:
    """The alternatives grouped so that each group holds at most one per exercise:
    a group's answers are applied together to one copy and checked, tabled and
    graded in one go (each exercise's verdict is its own: its tests pass alone
    when they pass with the others)."""
    out: list[list[dict]] = []
    for alternative in alternatives:
        free = next((r for r in out if all(a["exercise"] != alternative["exercise"]
                                           for a in r)), None)
        if free is None:
            out.append(free := [])
        free.append(alternative)
    return out


def _copy_with(group, tmp_path) -> Path:
    copy = tmp_path / "tree"
    for rel in tracked_files(ROOT):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, copy / rel)
    for alternative in group:       # regions found again: an earlier one moved lines
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


def test_rounds_hold_one_alternative_per_exercise():
    groups = rounds(ALTERNATIVES)
    assert sum(len(g) for g in groups) == len(ALTERNATIVES)
    for group in groups:
        assert len({a["exercise"] for a in group}) == len(group)


@pytest.mark.parametrize("group", rounds(ALTERNATIVES),
                         ids=lambda g: ",".join(f"{a['exercise']}-{a['name']}" for a in g))
def test_an_alternative_answer_passes_check_the_table_and_grade(group, tmp_path):
    idents = sorted({a["exercise"] for a in group}, key=exercises.sort_key)
    copy = _copy_with(group, tmp_path)
    regions = solutions.collect(copy)
    for ident in idents:
        changed = [r.path for r in regions[ident]]
        assert any((copy / p).read_bytes() != (ROOT / p).read_bytes() for p in changed), \
            f"the alternative of {ident} changed nothing"
    # make check EX=N.M (the tests of all of them in one run: each passes alone
    # when the union passes)
    command = mutation.check_command(",".join(idents))
    done = _pytest(copy, *command[3:])
    assert done.returncode == 0, f"make check EX={','.join(idents)}:\n{done.stdout[-3000:]}"
    # the tests of later chapters that run the exercise's code from elsewhere
    runs = json.loads((copy / "tools" / "dependencies.json").read_text())["tests"]
    users = sorted(t for t, ids in runs.items()
                   if any(i in ids and t.startswith(USERS.get(i, ())) for i in idents))
    if users:
        done = _pytest(copy, "--progress", *users)
        assert done.returncode == 0, f"later chapters' tests of {idents}:\n{done.stdout[-2000:]}"
    # make grade EX=... on a student copy answered with the alternatives
    chapter = max(exercises.chapter_of(i) for i in idents)
    release_dir = tmp_path / "release"
    write_student_copy(release_dir, root=copy, chapters=f"1-{chapter}", git=False)
    student = tmp_path / "submissions" / "student"
    write_student_copy(student, root=copy, chapters=f"1-{chapter}", git=False)
    released = json.loads((release_dir / "release.json").read_text())["released"]
    solve(student, copy, released)
    out = tmp_path / "grades"
    grade.grade(student.parent, release_dir, out, only=idents, limit=300,
                paths=["tests/exercises", "tests/optim"])
    row = next(csv.DictReader(open(out / "gradebook.csv")))
    assert all(row[i] == "1" for i in idents), \
        (row, (out / "logs" / "student.txt").read_text()[-2000:])
