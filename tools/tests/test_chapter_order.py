"""Chapters stand on earlier chapters only, measured from the code: a test
whose chapter is fixed by its place (tests/exercises/test_chNN.py, the code
blocks of chapters/NN_*.md) or by its exercise marker runs only regions of
exercises of that chapter or earlier (tools/dependencies.json)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import dependencies, exercises

ROOT = Path(__file__).resolve().parents[2]


def fixed_chapter(nodeid: str, marked: list[str]) -> int | None:
    """The chapter a test must not go beyond, or None when its place does not fix one."""
    found = re.match(r"tests/exercises/test_ch(\d+)\.py::", nodeid)
    if found:
        return int(found.group(1))
    found = re.match(r"tests/docs/[^:]+::[^\[]+\[chapters/(?:answers/)?(\d{2})", nodeid)
    if found:
        return int(found.group(1))
    if marked:
        return max(exercises.chapter_of(i) for i in marked)
    return None




@pytest.mark.skipif(dependencies.load(ROOT) is None, reason="no dependency map")
def test_no_chapter_needs_a_later_chapter():
    mapping = dependencies.load(ROOT)["tests"]
    marks = _exercise_marks()
    late = []
    for nodeid, ids in mapping.items():
        chapter = fixed_chapter(nodeid, marks.get(nodeid.split("[")[0], []))
        if chapter is None:
            continue
        later = [i for i in ids if exercises.chapter_of(i) > chapter]
        if later:
            late.append(f"{nodeid} (chapter {chapter}) runs {', '.join(later)}")
    assert not late, "tests that need a later chapter's exercises:\n" + "\n".join(late)


def _exercise_marks() -> dict[str, list[str]]:
    """Test function id (without parameters) -> the exercises it is marked with,
    read from the test files' decorators."""
    marks = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        rel = path.relative_to(ROOT).as_posix()
        pending = []
        for line in path.read_text(encoding="utf-8").splitlines():
            found = re.match(r'\s*@pytest\.mark\.exercise\("([\d.]+)"\)', line)
            if found:
                pending.append(found.group(1))
                continue
            test = re.match(r"\s*def (test_\w+)\(", line)
            if test:
                if pending:
                    marks[f"{rel}::{test.group(1)}"] = pending
                pending = []
            elif line.strip() and not line.lstrip().startswith("@"):
                pending = []
    return marks


def test_the_fixed_chapter_of_a_test():
    assert fixed_chapter("tests/exercises/test_ch04.py::test_x", []) == 4
    assert fixed_chapter("tests/docs/test_chapters.py::test_python_blocks_run_and_show_"
                         "their_numbers[chapters/01_autograd.md]", []) == 1
    assert fixed_chapter("tests/optim/test_sgd.py::test_y", ["3.2"]) == 3
    assert fixed_chapter("tests/optim/test_sgd.py::test_y", []) is None
