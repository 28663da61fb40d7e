"""Terms before use: chapters/GLOSSARY.md and the chapters read in course order.

* the glossary has at least 40 entries, each in the format of
  tests/docs/glossary.py, listed under its chapter's section;
* each entry's link names an existing chapter and a heading (or ``<a id>``) in it,
  and the term or an alias appears in that section;
* no term or alias is used before its defining section (course order 01, 02, ...;
  not counting fenced code, the chapter's ``# `` title, which names its subject,
  the ``## Objectives`` list, link targets), unless
  followed by "(defined in chapter NN)";
* the terms the course must define are there;
* the syllabus (chapters/README.md) links to the glossary.

The checker is proven on small made-up chapters at the end of this file.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from . import glossary
from .markdown import ROOT

MIN_TERMS = 40

# Concepts the course must define (each: a pattern one of a glossary entry's
# term or aliases must match, case-insensitive).
REQUIRED = {
    "grad mode": r"\bgrad(?:ient)?[ -]mode\b",
    "Edge": r"^edges?$",
    "AccumulateGrad": r"accumulate_?grad",
    "Jacobian": r"jacobian",
    "no_grad": r"no_grad",
    "BLAS": r"\bblas\b",
    "GradScaler": r"grad_?scaler|loss scal",
    "rank": r"\branks?\b",
    "Kahan summation": r"kahan",
    "causal LM": r"causal (?:lm|language model)",
    "padding": r"\bpad(?:ding)?\b",
    "logits": r"\blogits?\b",
    "ignore_index": r"ignore_index",
    "train mode": r"\btrain(?:ing)? mode\b",
    "eval mode": r"\beval(?:uation)? mode\b",
    "running statistics": r"running stat",
    "channel": r"\bchannels?\b",
    "SFT": r"\bsft\b|supervised fine-tuning",
    "query": r"\bquer(?:y|ies)\b",
    "key": r"\bkeys?\b",
    "value": r"\bvalues?\b",
    "residual connection": r"\bresidual",
    "attention head": r"\bheads?\b",
    "GELU": r"\bgelu\b",
}


def glossary_path() -> Path:
    return ROOT / "chapters" / "GLOSSARY.md"


def chapters_dir() -> Path:
    return ROOT / "chapters"


def _check():
    return glossary.check(glossary_path().read_text(encoding="utf-8"), chapters_dir())


def test_the_glossary_has_enough_well_formed_entries():
    result = _check()
    assert result["malformed"] == [], "\n".join(result["malformed"])
    terms = [e.term for e in result["entries"]]
    assert len(terms) >= MIN_TERMS, (
        f"chapters/GLOSSARY.md has {len(terms)} terms, fewer than {MIN_TERMS}")
    duplicates = sorted({t for t in terms if terms.count(t) > 1})
    assert not duplicates, f"terms listed twice: {duplicates}"


def test_every_entry_links_to_a_section_that_uses_the_term():
    result = _check()
    problems = result["broken"] + result["absent"]
    assert result["entries"], "chapters/GLOSSARY.md has no entries"
    assert not problems, "\n".join(problems)


def test_no_term_is_used_before_its_definition():
    result = _check()
    assert result["entries"], "chapters/GLOSSARY.md has no entries"
    early = result["early"]
    assert not early, f"{len(early)} uses before the definition:\n" + "\n".join(early)


def test_the_terms_the_course_needs_are_in_the_glossary():
    entries = _check()["entries"]
    words = [w for e in entries for w in e.words]
    missing = [concept for concept, pattern in REQUIRED.items()
               if not any(re.search(pattern, w, re.I) for w in words)]
    assert not missing, f"chapters/GLOSSARY.md lacks these terms: {missing}"


def test_the_syllabus_links_to_the_glossary():
    text = (chapters_dir() / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\]\((?:\./)?GLOSSARY\.md(?:#[^)]*)?\)", text), (
        "chapters/README.md has no link to GLOSSARY.md")


# ---------------------------------------------------------------- the checker itself

GLOSSARY = """# Glossary

```text
- **term** (also: *alias*) — the format, in a code block: not an entry. [NN §S](NN_x.md#a)
```

## 01. First

- **grad mode** (also: *no_grad*) — whether operations record a graph. [01 §2 Grad mode](01_first.md#2-grad-mode)

## 02. Second

- **logits** — scores before the softmax. [02 §1 Scores](02_second.md#1-scores)
- **Kahan summation** — addition that carries its rounding error. [02 §2 Kahan](02_second.md#kahan)
"""

FIRST = """# 01. First: grad mode and logits

## Objectives

* use grad mode and read logits

## 1. Tensors

A tensor records its creator; `no_grad` is not needed yet.

```python
with minigrad.no_grad():      # code does not count: logits, Kahan summation
    pass
```

## 2. Grad mode

In grad mode the graph is recorded.

## 3. Outputs

The model's logits (defined in chapter 02) come next; Kahan
summation, wrapped over a line, is used here too early.
"""

SECOND = """# 02. Second

## 1. Scores

The logits of each class; the grad modes of chapter 01.

<a id="kahan"></a>
### 2. A careful sum

Kahan summation keeps the lost digits.

## 3. Later

[a link whose target names logits](01_first.md#logits-are-not-here)
"""


@pytest.fixture
def course(tmp_path):
    (tmp_path / "01_first.md").write_text(FIRST)
    (tmp_path / "02_second.md").write_text(SECOND)
    (tmp_path / "GLOSSARY.md").write_text(GLOSSARY)
    return tmp_path


def test_checker_reads_entries_and_their_sections(course):
    result = glossary.check(GLOSSARY, course)
    assert [e.term for e in result["entries"]] == ["grad mode", "logits", "Kahan summation"]
    assert result["entries"][0].aliases == ["no_grad"]
    assert result["malformed"] == [] and result["broken"] == [] and result["absent"] == []
    assert glossary.section_span(SECOND, "kahan")[:2] == (7, 11)
    assert glossary.section_span(FIRST, "2-grad-mode")[:2] == (16, 19)


def test_checker_catches_a_use_before_the_definition(course):
    early = glossary.check(GLOSSARY, course)["early"]
    # `no_grad` (an alias) in 01 §1, before grad mode's §2; Kahan summation in 01 §3
    # (across a line break).  Not: the Objectives, the code block, the pointed-at
    # logits, anything in §2 and after for grad mode, the link target in 02, the
    # chapter's title (it names grad mode and logits, both defined later).
    assert len(early) == 2, early
    assert early[0].startswith("01_first.md:9: 'no_grad' (grad mode) is used before it is "
                               "defined in 01_first.md:16")
    assert early[1].startswith("01_first.md:22: 'Kahan summation' (Kahan summation)")
    assert "(defined in chapter 02)" in early[1]


def test_checker_accepts_the_pointer_and_ignores_code_and_objectives(course):
    text = FIRST.replace("`no_grad` is not needed yet", "nothing more").replace(
        "Kahan\nsummation, wrapped", "a careful sum, wrapped")
    (course / "01_first.md").write_text(text)
    assert glossary.check(GLOSSARY, course)["early"] == []
    # after inline code or a link, the pointer still counts
    (course / "01_first.md").write_text(text.replace(
        "The model's logits (defined in chapter 02)",
        "The model's `logits` (defined in chapter 02) and [logits](02_second.md#1-scores) "
        "(defined in chapter 02 §1)"))
    assert glossary.check(GLOSSARY, course)["early"] == []
    # a pointer naming the wrong chapter is not accepted
    (course / "01_first.md").write_text(text.replace("(defined in chapter 02)",
                                                     "(defined in chapter 03)"))
    early = glossary.check(GLOSSARY, course)["early"]
    assert len(early) == 1 and "the pointer says chapter 03" in early[0]


def test_checker_reports_broken_links_absent_terms_and_bad_lines(course):
    text = GLOSSARY + "\n- **padding** — fills short rows. [02 §9](02_second.md#9-none)\n" \
        "- **GELU** — a smooth ReLU. [02 §3 Later](02_second.md#3-later)\n" \
        "- **mode** - no em dash and no link\n"
    result = glossary.check(text, course)
    assert any("no heading or <a id> '9-none'" in p for p in result["broken"])
    assert any("'GELU'" in p and "does not appear" in p for p in result["absent"])
    assert len(result["malformed"]) == 1 and "GLOSSARY.md:18" in result["malformed"][0]
    # listed under the wrong chapter's section
    moved = GLOSSARY.replace("## 02. Second\n\n- **logits**", "- **logits**")
    assert any("listed under the glossary's section 01" in p
               for p in glossary.check(moved, course)["broken"])


def test_the_real_tests_pass_on_a_made_up_course(course, monkeypatch):
    """The tests above, run on the made-up course with enough terms: what they
    demand of the real glossary is satisfiable."""
    monkeypatch.setattr(__import__(__name__, fromlist=["x"]), "MIN_TERMS", 3)
    fixed = FIRST.replace("`no_grad` is not needed yet", "nothing more").replace(
        "Kahan\nsummation, wrapped", "a careful sum, wrapped")
    (course / "01_first.md").write_text(fixed)
    (course / "README.md").write_text("[glossary](GLOSSARY.md)\n")
    module = __import__(__name__, fromlist=["x"])
    monkeypatch.setattr(module, "glossary_path", lambda: course / "GLOSSARY.md")
    monkeypatch.setattr(module, "chapters_dir", lambda: course)
    module.test_the_glossary_has_enough_well_formed_entries()
    module.test_every_entry_links_to_a_section_that_uses_the_term()
    module.test_no_term_is_used_before_its_definition()
    module.test_the_syllabus_links_to_the_glossary()
