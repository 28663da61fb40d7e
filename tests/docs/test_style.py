"""One style for the course text (CONVENTIONS of the chapters):

* cross-references: "chapter 04" ("Chapter 04" at the start of a sentence),
  "chapter 04 §6" for a section; never "chapter 1", "ch. 4", "(11.7)",
  "section 1.6" or "Chapter 04" in the middle of a sentence;
* headings of a chapter: ``# NN. Title``, then ``## N. Sentence case title``
  for the numbered main sections and the fixed unnumbered ones
  (``## Objectives``, ``## Prerequisites``, ``## Pitfalls``, ...);
* US spelling: no word of the UK list below (centred, normalise, behaviour, ...).

Read outside fenced code blocks, inline code and link targets.  Checked: the
README, every page of chapters/ (chapters, answers, syllabus, glossary,
teaching notes) and the site's own pages under docs/.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from .markdown import ROOT

DOCUMENTS = sorted({ROOT / "README.md", *(ROOT / "chapters").rglob("*.md"),
                    *(ROOT / "docs").rglob("*.md")})
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))

UNNUMBERED = ["Objectives", "Prerequisites", "Pitfalls", "Exercises", "Questions",
              "Reading the code", "Going further", "History", "References"]

# The wrong cross-reference forms, each with what to write instead.
CROSS_REFERENCES = [
    (re.compile(r"\b[Cc]hapters? (\d)(?![\d.,]\d)\b"),
     "two digits: 'chapter 0N' (a range: 'chapters 01–03')"),
    (re.compile(r"\b[Cc]hapters? \d{1,2}\.\d{1,2}\b"),
     "'chapter NN §K' for a section, or name the section"),
    (re.compile(r"\b[Cc]hs?\.? ?\d"), "'chapter NN'"),
    (re.compile(r"(?<![\w=(])\((?:see )?(?:1[0-4]\.(?:[1-9]|1[0-9])|(?<=see )[1-9]\.[1-9])\)"),
     "'chapter NN §K', not a bare '(NN.K)'"),
    # a paper's own numbering ("Narayanan et al. 2021, section 2.2", "their
    # section 2.2") is not a cross-reference of the course
    (re.compile(r"(?<!their )(?<!its )\b[Ss]ections? \d{1,2}\.\d{1,2}\b"),
     "'chapter NN §K' (or '§K' in the same chapter)"),
    (re.compile(r"(?<=[a-z,;] )Chapter \d\d\b"),
     "'chapter NN' in the middle of a sentence ('Chapter NN' only at its start)"),
]

# UK spellings and their US forms (whole words, any case).
UK_SPELLINGS = {
    r"centred": "centered", r"centre": "center", r"centres": "centers",
    r"normalis(?:e|ed|es|ing|ation|ations)": "normaliz…",
    r"optimis(?:e|ed|es|er|ers|ing|ation|ations)": "optimiz…",
    r"minimis(?:e|ed|es|ing)": "minimiz…", r"maximis(?:e|ed|es|ing)": "maximiz…",
    r"initialis(?:e|ed|es|ing|ation)": "initializ…", r"regularis(?:e|ed|es|ing|ation)": "regulariz…",
    r"summaris(?:e|ed|es|ing)": "summariz…", r"organis(?:e|ed|es|ing|ation|ations)": "organiz…",
    r"recognis(?:e|ed|es|ing|able)": "recogniz…", r"realis(?:e|ed|es|ing)": "realiz…",
    r"serialis(?:e|ed|es|ing|ation)": "serializ…", r"vectoris(?:e|ed|es|ing|ation)": "vectoriz…",
    r"parallelis(?:e|ed|es|ing)": "paralleliz…", r"utilis(?:e|ed|es|ing|ation)": "utiliz…",
    r"emphasis(?:e|ed|es|ing)": "emphasiz…", r"analys(?:e|ed|es|ing)": "analyz…",
    r"behaviour(?:s|al)?": "behavior", r"colour(?:s|ed|ing)?": "color",
    r"favour(?:s|ed|ite|able)?": "favor", r"neighbour(?:s|ing|hood)?": "neighbor",
    r"honour(?:s|ed)?": "honor", r"labour": "labor",
    r"modelling": "modeling", r"modelled": "modeled", r"labelled": "labeled",
    r"labelling": "labeling", r"travelled": "traveled", r"cancelled": "canceled",
    r"signalling": "signaling", r"artefacts?": "artifact", r"grey": "gray",
    r"licence": "license", r"defence": "defense", r"judgement": "judgment",
    r"programme": "program", r"whilst": "while", r"amongst": "among",
    r"catalogue": "catalog", r"fulfil": "fulfill", r"practise[sd]?": "practice",
}
_UK = re.compile(r"\b(" + "|".join(UK_SPELLINGS) + r")\b", re.I)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def unfenced_lines(text: str):
    """(line number, line) for every line outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.splitlines(), start=1):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is not None:
            if m and line.strip().startswith(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield n, line


def prose_lines(text: str):
    """(line number, text) outside fenced code, with inline code, link targets,
    HTML tags and URLs blanked."""
    for n, line in unfenced_lines(text):
        line = re.sub(r"`[^`]*`", "``", line)
        line = re.sub(r"\]\([^)]*\)", "]", line)
        line = re.sub(r"<[^>]+>", "", line)
        line = re.sub(r"https?://\S+", "", line)
        yield n, line


def cross_reference_problems(text: str, where: str = "") -> list[str]:
    out = []
    for n, line in prose_lines(text):
        for pattern, advice in CROSS_REFERENCES:
            for m in pattern.finditer(line):
                if "ection" in m.group(0) and re.search(r"\b(?:19|20)\d\d\b|et al",
                                                        line[max(0, m.start() - 60):m.start()]):
                    continue            # a paper's section
                out.append(f"{where}:{n}: '{m.group(0)}': write {advice}")
    return out


def spelling_problems(text: str, where: str = "") -> list[str]:
    out = []
    for n, line in prose_lines(text):
        for m in _UK.finditer(line):
            word = m.group(0)
            us = next(v for k, v in UK_SPELLINGS.items() if re.fullmatch(k, word, re.I))
            out.append(f"{where}:{n}: '{word}' is UK spelling; the course writes US ({us})")
    return out


def heading_problems(text: str, where: str = "") -> list[str]:
    """A chapter's headings: ``# NN. Title`` first, ``## N. Title`` numbered in
    order, or one of the unnumbered ones; sentence case (a capital first letter,
    no Title Case)."""
    out, expected = [], 1
    for n, line in unfenced_lines(text):
        if n == 1 and not re.match(r"^# \d\d\. \S", line):
            out.append(f"{where}:1: the title must read '# NN. Title', not {line!r}")
        if not line.startswith("## "):
            continue
        title = line[3:].strip()
        numbered = re.match(r"^(\d+)\. (\S.*)$", title)
        if numbered:
            if int(numbered.group(1)) != expected:
                out.append(f"{where}:{n}: section {numbered.group(1)} where {expected} "
                           "comes next")
            expected = int(numbered.group(1)) + 1
            words = numbered.group(2)
            if not (words[0].isupper() or not words[0].isalpha()):
                out.append(f"{where}:{n}: {title!r}: start the title with a capital letter")
            if _title_case(words):
                out.append(f"{where}:{n}: {title!r}: sentence case, not Title Case")
        elif title not in UNNUMBERED:
            out.append(f"{where}:{n}: heading {title!r}: write '## N. Sentence case title' "
                       f"or one of {UNNUMBERED}")
    return out


_SMALL = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to",
          "with", "vs"}


def _title_case(words: str) -> bool:
    """True for 'Memory And Time'-style titles: every later word of plain
    letters is capitalized (names like BatchNorm, GPU, PyTorch do not count)."""
    later = [w for w in re.findall(r"[A-Za-z][a-z]*\b", words)[1:] if w.lower() not in _SMALL]
    plain = [w for w in later if len(w) > 3]
    return len(plain) >= 2 and all(w[0].isupper() for w in plain)


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_cross_references_have_one_form(path):
    problems = cross_reference_problems(path.read_text(encoding="utf-8"), _name(path))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_us_spelling(path):
    problems = spelling_problems(path.read_text(encoding="utf-8"), _name(path))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CHAPTERS, ids=_name)
def test_chapter_headings_have_one_form(path):
    problems = heading_problems(path.read_text(encoding="utf-8"), _name(path))
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- the checks themselves

def test_wrong_cross_references_are_caught_and_right_ones_pass():
    wrong = ("see chapter 1, ch. 4 and Ch 4; the deadlock (11.7); chapter 1.11;\n"
             "section 1.6 says; as shown in Chapter 04 above; chapters 1–3\n")
    found = cross_reference_problems(wrong)
    caught = " ".join(found)
    for text in ("'chapter 1'", "'ch. 4'", "'Ch 4'", "'(11.7)'", "'chapter 1.11'",
                 "'section 1.6'", "'Chapter 04'", "'chapters 1'"):
        assert text in caught, (text, found)
    right = ("See chapter 04 and chapter 04 §6. Chapter 12 shows it; chapters 01–03;\n"
             "(Narayanan et al. 2021, section 2.2) and their section 3.1;\n"
             "a ratio (1.5), a mean (0.25), `chapter 1` in code, 1.5 × 10.\n"
             "[chapter 04](04_gradient_accumulation.md#section-1-2)\n"
             "```text\nchapter 1 in a code block\n```\n")
    assert cross_reference_problems(right) == []


def test_uk_spellings_are_caught():
    found = spelling_problems("Centred data; we normalise the behaviour; colour;\n"
                              "modelling and optimisers. `normalise` in code.\n")
    words = [re.search(r"'(\w+)'", p).group(1) for p in found]
    assert words == ["Centred", "normalise", "behaviour", "colour", "modelling", "optimisers"]
    assert spelling_problems("centered, normalize, behavior, parallelism, emphasis\n") == []


def test_heading_forms_are_checked():
    good = ("# 04. Gradient accumulation\n\n## Objectives\n\n## Prerequisites\n\n"
            "## 1. The idea in one picture\n\n## 2. BatchNorm and PyTorch's rule\n\n"
            "## Pitfalls\n\n## Reading the code\n\n```text\n## not a heading\n```\n")
    assert heading_problems(good) == []
    bad = ("04 Gradient accumulation\n\n## 1. Memory And Time Per Update\n\n"
           "## 3. skipped two\n\n## Summary\n")
    found = " ".join(heading_problems(bad))
    assert "'# NN. Title'" in found and "Title Case" in found
    assert "section 3 where 2 comes next" in found and "capital letter" in found
    assert "'Summary'" in found
