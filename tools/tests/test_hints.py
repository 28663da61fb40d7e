"""The hints to the chapter questions in the student copy (tools/hints.py):
every question of every chapter has its hint there, no answer text is in the
copy unless it was written with the answers (``make student ANSWERS=1``)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import hints, make_student

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif((ROOT / "student.json").is_file(),
                                reason="needs the reference's answers")

CHAPTER = """## Questions

**Question 4.1.** What does `.grad` hold?

```text
**Question 4.9.** inside a code block: not a question
```

**Question 4.2.** Which state must be equal?
"""

ANSWERS = """# Answers to chapter 04's questions

**Question 4.1.** *Hint:* add the two micro-batch gradients and compare
with the full batch.

`.grad` holds the sum of the two gradients, twice the full-batch one.

**Question 4.2.**
*Hint:* list what an optimizer step reads.

The parameters, the optimizer state and the gradient.
"""


def test_answers_are_read_into_hints_and_answers():
    found = hints.parse_answers(ANSWERS)
    assert [q.ident for q in found] == ["4.1", "4.2"]
    assert found[0].hint == ("add the two micro-batch gradients and compare with the "
                             "full batch.")
    assert found[0].answer.startswith("`.grad` holds the sum")
    assert found[1].hint == "list what an optimizer step reads."
    assert hints.chapter_questions(CHAPTER) == ["4.1", "4.2"]
    assert hints.problems(CHAPTER, ANSWERS) == []


def test_missing_hints_answers_and_questions_are_named():
    no_hint = ANSWERS.replace("*Hint:* list what an optimizer step reads.\n", "")
    assert any("Question 4.2 has no hint" in p for p in hints.problems(CHAPTER, no_hint))
    merged = ANSWERS.replace("full batch.\n\n`.grad`", "full batch. " + "x" * 700)
    assert any("blank line between the hint and the answer" in p
               for p in hints.problems(CHAPTER, merged))
    only_hint = ANSWERS.replace("The parameters, the optimizer state and the gradient.\n", "")
    assert any("4.2 has a hint but no answer" in p for p in hints.problems(CHAPTER, only_hint))
    extra = CHAPTER.replace("**Question 4.2.**", "**Question 4.3.**")
    found = hints.problems(extra, ANSWERS)
    assert any("no **Question 4.3.**" in p for p in found)
    assert any("Question 4.2 is not asked" in p for p in found)


def test_the_hints_page_shows_hints_and_no_answer():
    page = hints.hints_page("04", "04_gradient_accumulation.md",
                            hints.parse_answers(ANSWERS), answers=False)
    assert "**Question 4.1.** *Hint:* add the two micro-batch gradients" in page
    assert "twice the full-batch one" not in page and "optimizer state and" not in page
    assert "(../04_gradient_accumulation.md#questions)" in page


def _questions():
    """{chapter number: question ids} of the reference's chapters."""
    out = {}
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md")):
        asked = hints.chapter_questions(path.read_text(encoding="utf-8"))
        if asked:
            out[path.name[:2]] = asked
    return out


def _answer_sentences():
    """Long sentences of the reference answers (what must not leak)."""
    found = []
    for path in sorted((ROOT / "chapters" / "answers").glob("*.md")):
        for q in hints.parse_answers(path.read_text(encoding="utf-8")):
            text = " ".join(q.answer.split())
            found += [(path.name, q.ident, s) for s in re.split(r"(?<=[.:;])\s+", text)
                      if len(s) >= 60]
    return found


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    base = tmp_path_factory.mktemp("hints")
    plain = make_student.write_student_copy(base / "plain", root=ROOT, only=["1.1"],
                                            link=True, git=False)
    full = make_student.write_student_copy(base / "answers", root=ROOT, only=["1.1"],
                                           link=True, git=False, answers=True)
    assert plain["answers"] is False and full["answers"] is True
    return base / "plain", base / "answers"


def test_the_copy_has_a_hint_for_every_question_of_every_chapter(copies):
    plain, _ = copies
    missing = []
    for number, asked in _questions().items():
        page = plain / "chapters" / "hints" / f"{number}.md"
        text = page.read_text(encoding="utf-8") if page.is_file() else ""
        for ident in asked:
            m = re.search(rf"^\*\*Question {re.escape(ident)}\.\*\* \*Hint:\* (.+)$", text, re.M)
            if m is None or m.group(1).startswith("(no hint"):
                missing.append(ident)
    assert not missing, f"questions without a hint in the student copy: {missing}"


def test_no_answer_is_in_the_copy_without_the_option(copies):
    plain, _ = copies
    assert not (plain / "chapters" / "answers").exists()
    texts = "\n".join(" ".join(p.read_text(encoding="utf-8").split())
                      for p in (plain / "chapters").rglob("*.md"))
    leaked = [f"{name} {ident}: {s[:60]}..." for name, ident, s in _answer_sentences()
              if s in texts]
    assert not leaked, f"answer text in the student copy: {leaked[:5]}"
    chapter = next((plain / "chapters").glob("04_*.md")).read_text(encoding="utf-8")
    assert "](hints/04.md)" in chapter and "](answers/04.md)" not in chapter


def test_with_the_option_the_answers_are_there(copies):
    _, full = copies
    for path in sorted((ROOT / "chapters" / "answers").glob("*.md")):
        copied = full / "chapters" / "answers" / path.name
        assert copied.is_file(), f"{copied} is missing"
        assert copied.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")
    chapter = next((full / "chapters").glob("04_*.md")).read_text(encoding="utf-8")
    assert "](answers/04.md)" in chapter
    assert (full / "chapters" / "hints" / "04.md").is_file()
