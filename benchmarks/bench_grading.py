"""How long ``make grade`` takes: three submissions graded against a release.

The release is a student copy of every chapter (``quick``: chapters 1-3); the
submissions are written from it with the reference's answers:

* ``all_solved``: every released exercise answered;
* ``half_solved``: the first half of them;
* ``edited_test``: the same half, and every test of one unanswered chapter's
  exercises rewritten to pass (the grader restores the release's tests, so it
  must score exactly as ``half_solved``).

Each is graded by its own ``python -m pytest`` process (``JOBS`` at once), as
``make grade`` does.  Prints the gradebook and the seconds per submission.

    python benchmarks/bench_grading.py [--quick] [--jobs 2]
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import exercises, grade, make_student, release  # noqa: E402
from tools.tests.course_copies import solve  # noqa: E402


def make_class(folder: Path, chapters: str | None) -> tuple[Path, Path, list[str]]:
    """(release, submissions folder, released ids) under ``folder``."""
    rel = folder / "release"
    make_student.write_student_copy(rel, root=ROOT, chapters=chapters, git=False)
    released = release.read_manifest(rel)["released"]
    subs = folder / "submissions"
    half = released[:len(released) // 2]
    for name, ids in (("all_solved", released), ("half_solved", half), ("edited_test", half)):
        make_student.write_student_copy(subs / name, root=ROOT, chapters=chapters, git=False)
        solve(subs / name, ROOT, ids)
    unanswered = exercises.chapter_of(released[-1])
    test_file = subs / "edited_test" / "tests" / "exercises" / f"test_ch{unanswered:02d}.py"
    text = test_file.read_text(encoding="utf-8")
    # Every test of that chapter returns before its first line: all would pass.
    test_file.write_text(re.sub(r"(\ndef test_[^\n]*:\n)", r"\1    return\n", text),
                         encoding="utf-8")
    return rel, subs, released


def run(quick: bool = False, jobs: int = 2) -> dict:
    with tempfile.TemporaryDirectory(prefix="minigrad-bench-grading-") as tmp:
        start = time.perf_counter()
        rel, subs, released = make_class(Path(tmp), "1-3" if quick else None)
        setup = time.perf_counter() - start
        start = time.perf_counter()
        outcomes = grade.grade(subs, rel, Path(tmp) / "out", jobs=jobs)
        wall = time.perf_counter() - start
        book = (Path(tmp) / "out" / "gradebook.csv").read_text(encoding="utf-8")
    print(f"grading {len(outcomes)} submissions, {len(released)} released exercises, "
          f"JOBS={jobs}, {os.cpu_count()} CPUs: {wall:.1f} s wall (class set-up {setup:.1f} s)")
    rows = list(csv.DictReader(book.splitlines()))
    for row in rows:
        print(f"  {row['student']:12} {row['total']:>3}/{row['max']}  {row['seconds']:>6} s  "
              f"{row['status']}  {row['changed course files']}")
    print(book)
    by_name = {o.student: o for o in outcomes}
    return {"wall_s": round(wall, 1), "jobs": jobs, "released": len(released),
            "per_submission_s": {o.student: round(o.seconds, 1) for o in outcomes},
            "totals": {o.student: o.total for o in outcomes},
            "edited_test_changes_nothing": {
                "ok": by_name["edited_test"].scores == by_name["half_solved"].scores},
            "all_solved_full_marks": {"ok": by_name["all_solved"].total == len(released)},
            "gradebook": book}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="chapters 1-3 only")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    run(quick=args.quick, jobs=args.jobs)
