"""Every chapter has one skeleton, and states the syllabus's prerequisites.

The skeleton: ``## Objectives``, ``## Prerequisites``, the main path (sections
numbered ``## 1.``, ``## 2.``, ... in order), ``## Pitfalls``, ``## Exercises``,
``## Questions``, ``## Going further``, ``## History``, and optionally
``## References`` last.  An optional ``## Reading the code`` (the walk through
the library's files) stands right after the numbered sections, before
``## Pitfalls``: the idea first, then the code that implements it, then its
pitfalls and the exercises that change that code.
The main path, which ends at the first of ``## Reading the code``, ``## Going
further``, ``## History`` and ``## References``, has at most 3,000 words of prose and
at least three figures.  The prerequisites are the chapter numbers named in
the chapter's ``## Prerequisites`` section and in the ``**Prerequisites:**``
line of its entry in chapters/README.md; the two sets must be equal.
"""
from __future__ import annotations

import re

import pytest

from .markdown import ROOT

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))
BEFORE = ["Objectives", "Prerequisites"]
AFTER = ["Pitfalls", "Exercises", "Questions", "Going further", "History"]
READING = "Reading the code"


def _h2_headings(text: str) -> list:
    """The ``## `` headings outside fenced code blocks, in order."""
    headings, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            headings.append(line[3:].strip())
    return headings


def _section(text: str, title: str) -> str:
    match = re.search(rf"(?ms)^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text)
    return match.group(1) if match else ""


def chapter_numbers(text: str) -> set:
    """The two-digit chapter numbers a prerequisite statement names.

    Link targets and parenthetical remarks are dropped first; ``01–03`` is a
    range.
    """
    text = re.sub(r"\]\([^)]*\)", "]", text)
    while re.search(r"\([^()]*\)", text):
        text = re.sub(r"\([^()]*\)", "", text)
    found = set()
    for a, b in re.findall(r"\b(\d\d)\s*[–-]\s*(\d\d)\b", text):
        found.update(range(int(a), int(b) + 1))
    text = re.sub(r"\b\d\d\s*[–-]\s*\d\d\b", "", text)
    found.update(int(n) for n in re.findall(r"\b(\d\d)\b", text))
    return found


def syllabus_prerequisites() -> dict:
    """``{chapter number: set of prerequisite chapters}`` from chapters/README.md."""
    text = (ROOT / "chapters" / "README.md").read_text(encoding="utf-8")
    result = {}
    for block in re.split(r"(?m)^### ", text)[1:]:
        number = re.match(r"(\d\d) ", block)
        line = re.search(r"(?m)^\* \*\*Prerequisites:\*\*(.*)$", block)
        if number and line:
            result[int(number.group(1))] = chapter_numbers(line.group(1))
    return result


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_the_common_headings_in_order(path):
    headings = _h2_headings(path.read_text(encoding="utf-8"))
    if READING in headings:
        at = headings.index(READING)
        assert headings.count(READING) == 1, f"{path.name}: two '{READING}' sections"
        assert headings[at + 1:at + 2] == ["Pitfalls"], (
            f"{path.name}: '{READING}' comes before {headings[at + 1:at + 2]}; it belongs "
            f"right after the numbered sections, before 'Pitfalls'")
        del headings[at]
    if headings and headings[-1] == "References":
        headings = headings[:-1]
    assert headings[:2] == BEFORE, f"{path.name}: starts with {headings[:2]}, expected {BEFORE}"
    assert headings[-len(AFTER):] == AFTER, (
        f"{path.name}: ends with {headings[-len(AFTER):]}, expected {AFTER}")
    main = headings[2:-len(AFTER)]
    assert main, f"{path.name}: no main-path section between Prerequisites and Pitfalls"
    for i, title in enumerate(main, 1):
        assert re.match(rf"{i}\. \S", title), (
            f"{path.name}: main-path section {i} is headed {title!r}, expected '{i}. <title>'")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_prerequisites_equal_the_syllabus(path):
    number = int(path.name[:2])
    syllabus = syllabus_prerequisites()
    assert number in syllabus, f"chapters/README.md has no prerequisites for chapter {number:02d}"
    stated = chapter_numbers(_section(path.read_text(encoding="utf-8"), "Prerequisites"))
    assert stated == syllabus[number], (
        f"{path.name} names prerequisites {sorted(stated)}, the syllabus "
        f"{sorted(syllabus[number])}")


def test_prerequisite_parser():
    assert chapter_numbers("chapters 01–03.") == {1, 2, 3}
    assert chapter_numbers("Chapters 04 (accumulation, 12 items), 05 and 07.") == {4, 5, 7}
    assert chapter_numbers("[chapter 4](04_gradient_accumulation.md) and 07") == {7}
    assert chapter_numbers("NumPy arrays and broadcasting; the chain rule.") == set()


MAIN_PATH_WORDS = 3000
MAIN_PATH_FIGURES = 3
MAIN_PATH_END = re.compile(r"(?m)^## (Reading the code|Going further|History|References)$")


def main_path(text: str) -> str:
    """The chapter from its first line up to the first of ``## Reading the code``,
    ``## Going further``, ``## History`` and ``## References``."""
    stop = MAIN_PATH_END.search(text)
    return text[:stop.start()] if stop else text


def main_path_words(text: str) -> int:
    """Words of prose in the main path: fenced and indented code and display
    maths (``$$ ... $$``) left out."""
    prose = re.sub(r"(?ms)^```.*?^```", " ", main_path(text))
    prose = re.sub(r"(?ms)^\$\$.*?^\$\$", " ", prose)
    prose = re.sub(r"(?m)^(    |\t).*$", " ", prose)
    return len(prose.split())


def main_path_figures(text: str) -> int:
    """Images ``![alt](figures/...)`` in the main path, outside code blocks."""
    prose = re.sub(r"(?ms)^```.*?^```", " ", main_path(text))
    return len(re.findall(r"!\[[^\]]+\]\(figures/[^)]+\)", prose))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_main_path_is_short_and_the_closing_sections_are_not_empty(path):
    text = path.read_text(encoding="utf-8")
    words = main_path_words(text)
    assert words <= MAIN_PATH_WORDS, (
        f"{path.name}: the main path has {words} words of prose, more than "
        f"{MAIN_PATH_WORDS}; move an aside into 'Going further'")
    for title in ("Going further", "History"):
        assert len(_section(text, title).split()) >= 20, f"{path.name}: '{title}' is empty"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_main_path_has_three_figures_with_alt_text(path):
    figures = main_path_figures(path.read_text(encoding="utf-8"))
    assert figures >= MAIN_PATH_FIGURES, (
        f"{path.name}: the main path shows {figures} figure(s) with alt text, "
        f"expected at least {MAIN_PATH_FIGURES}")
