"""Every question of a chapter (``**Question N.M.**``) has, in
``chapters/answers/NN.md``, a hint (the first paragraph after its marker,
``*Hint:* ...``) and a reference answer; the answers file answers no question
the chapter does not ask (tools/hints.py).  In a student copy the answers are
not there (unless written with ANSWERS=1): the hints are, in chapters/hints/."""
from __future__ import annotations

import re

import pytest

from tools import hints

from .markdown import ROOT

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_question_has_a_hint_and_an_answer(path):
    text = path.read_text(encoding="utf-8")
    asked = hints.chapter_questions(text)
    if not asked:
        pytest.skip(f"{path.name} asks no question")
    number = path.name[:2]
    answers = ROOT / "chapters" / "answers" / f"{number}.md"
    if not answers.is_file() and (ROOT / "student.json").is_file():
        page = ROOT / "chapters" / "hints" / f"{number}.md"
        assert page.is_file(), f"the student copy has no hints page {page.name}"
        shown = re.findall(r"^\*\*Question (\d+\.\d+)\.\*\* \*Hint:\*", page.read_text(), re.M)
        assert shown == asked, f"chapters/hints/{number}.md: {shown}, the chapter asks {asked}"
        return
    assert answers.is_file(), f"chapters/answers/{number}.md is missing"
    problems = hints.problems(text, answers.read_text(encoding="utf-8"),
                              f"chapters/answers/{number}.md")
    assert not problems, "\n".join(problems)
