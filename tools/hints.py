"""The hints to the chapter questions, for the student copy.

Each question of chapter NN (``**Question N.M.**`` in ``chapters/NN_*.md``) has
its reference answer in ``chapters/answers/NN.md`` under the same marker, and
the first paragraph after the marker is a hint::

    **Question 4.1.** *Hint:* one or two sentences that point the way
    without giving the answer.

    The reference answer ...

(the hint may also start on the line after the marker; a blank line ends it).
``make student`` leaves the answers out of the copy and writes the hints alone
into ``chapters/hints/NN.md``; the chapters' links to their answers become
links to the hints.  ``make student ANSWERS=1`` keeps the answers as well.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

QUESTION = re.compile(r"\*\*Question (\d+\.\d+)\.\*\*")
HINT = re.compile(r"^\*Hint:\*\s*")
HINTS_DIR = "chapters/hints"
#: A hint longer than this has probably swallowed its answer (no blank line between).
MAX_HINT_CHARS = 600


@dataclass
class Question:
    ident: str          # "4.1"
    line: int           # line of the marker in the answers file
    hint: str | None    # the hint's text without "*Hint:*", None when there is none
    answer: str         # what follows the hint (the reference answer)


def _outside_code(text: str) -> str:
    """``text`` with fenced code blocks blanked to spaces (offsets kept)."""
    out, fence = [], None
    for line in text.splitlines():
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
            out.append(" " * len(line))
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append(" " * len(line))
        else:
            out.append(line)
    return "\n".join(out)


def chapter_questions(chapter_text: str) -> list[str]:
    """The question ids a chapter asks, in order (markers outside code blocks)."""
    return QUESTION.findall(_outside_code(chapter_text))


def parse_answers(text: str) -> list[Question]:
    """Every question of an answers file with its hint and answer, in order."""
    body = _outside_code(text)
    marks = list(QUESTION.finditer(body))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        rest = text[m.end():end]
        stripped = rest.lstrip(" \t\n")
        hint = None
        if HINT.match(stripped):
            paragraph, _, after = stripped.partition("\n\n")
            hint = " ".join(HINT.sub("", paragraph).split())
            answer = after.strip()
        else:
            answer = stripped.strip()
        out.append(Question(m.group(1), text.count("\n", 0, m.start()) + 1, hint, answer))
    return out


def problems(chapter_text: str, answers_text: str, name: str = "answers") -> list[str]:
    """What is missing: a question of the chapter without an answer or a hint,
    an answer to a question the chapter does not ask, an empty answer, a hint
    that runs into its answer."""
    asked = chapter_questions(chapter_text)
    found = {q.ident: q for q in parse_answers(answers_text)}
    out = []
    for ident in asked:
        q = found.get(ident)
        if q is None:
            out.append(f"{name}: no **Question {ident}.** (the chapter asks it)")
            continue
        if not q.hint:
            out.append(f"{name}:{q.line}: Question {ident} has no hint: its first line "
                       "after the marker must be '*Hint:* ...'")
        elif len(q.hint) > MAX_HINT_CHARS:
            out.append(f"{name}:{q.line}: Question {ident}'s hint is {len(q.hint)} characters: "
                       "put a blank line between the hint and the answer")
        if not q.answer:
            out.append(f"{name}:{q.line}: Question {ident} has a hint but no answer")
    for ident in found:
        if ident not in asked:
            out.append(f"{name}:{found[ident].line}: Question {ident} is not asked in the chapter")
    return out


def hints_page(number: str, chapter_file: str, questions: list[Question], *,
               answers: bool) -> str:
    """The text of ``chapters/hints/NN.md``."""
    where = (f"The reference answers are in [answers/{number}.md](../answers/{number}.md)."
             if answers else "The reference answers stay with your teacher.")
    lines = [f"# Hints for chapter {number}'s questions", "",
             f"One hint for each question of [chapter {number}](../{chapter_file}#questions). "
             f"Answer the question first, then read its hint if you are stuck. {where}", ""]
    for q in questions:
        text = q.hint if q.hint else "(no hint for this question yet)"
        lines += [f"**Question {q.ident}.** *Hint:* {text}", ""]
    return "\n".join(lines)


def write_hints(root: Path, dest: Path, *, answers: bool = False) -> list[str]:
    """Write ``chapters/hints/NN.md`` into the copy at ``dest`` for every
    ``chapters/answers/NN.md`` of the reference at ``root``; return the paths written."""
    root, dest = Path(root), Path(dest)
    written = []
    for path in sorted((root / "chapters" / "answers").glob("[0-9][0-9].md")):
        number = path.stem
        chapters = sorted((root / "chapters").glob(f"{number}_*.md"))
        if not chapters:
            continue
        questions = parse_answers(path.read_text(encoding="utf-8"))
        out = dest / HINTS_DIR / f"{number}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(hints_page(number, chapters[0].name, questions, answers=answers) + "\n",
                       encoding="utf-8")
        written.append(out.relative_to(dest).as_posix())
    return written
