"""The student copy holds no answer: no line of a blanked solution region in its
chapters, notebooks or site pages, and its quoted-code checks never compare a
student's code (tools/redact.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.docs.markdown import anchors, blocks, document_text, quote_found
from tools import make_student, redact, solutions

ROOT = Path(__file__).resolve().parents[2]
# The student copy has no regions left to check against (and no answers).
pytestmark = pytest.mark.skipif((ROOT / "student.json").is_file(),
                                reason="needs the reference's regions")


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    dest = tmp_path_factory.mktemp("student") / "course"
    summary = make_student.write_student_copy(dest, root=ROOT, link=True, git=False)
    return dest, summary


def test_no_line_of_a_blanked_region_is_in_the_copy(copy):
    dest, summary = copy
    regions = sum(len(r) for r in solutions.collect(ROOT).values())
    found = redact.leaks(ROOT, dest, summary["blanked"])
    leaked = sorted(found)
    assert not found, (f"{len(leaked)} of {len(summary['blanked'])} exercises "
                       f"({regions} regions) leak into the student copy: "
                       + "; ".join(f"{i} at {found[i][:3]}" for i in leaked))
    assert summary["redacted_blocks"] > 0


def test_every_exercise_has_secret_lines_to_look_for():
    """The leak test is not empty: each region has lines only it holds."""
    by_id = solutions.collect(ROOT)
    secret = redact.secret_lines(ROOT, list(by_id))
    covered = set().union(*secret.values())
    # A region made only of trivial lines (a one-line return) may have none.
    assert len(covered) >= 0.9 * len(by_id), sorted(set(by_id) - covered)


def test_quoted_blocks_of_the_copy_avoid_every_region(copy, tmp_path):
    """What the copy still quotes lies outside the regions: found in the blanked
    source, and still found once a student has written any code at the stubs."""
    dest, _ = copy
    stub = re.compile(r'^(?P<indent>[ \t]*)raise NotImplementedError\("Exercise .*$', re.M)
    for path in sorted((dest / "chapters").glob("*.md")):
        for block in blocks(path.read_text(encoding="utf-8")):
            if block.lang != "python" or "source" not in block.options:
                continue
            source = (dest / block.options["source"]).read_text(encoding="utf-8")
            student = stub.sub(r"\g<indent>answer = 42  # a student's own code", source)
            where = f"{path.name}:{block.line} quoting {block.options['source']}"
            assert quote_found(block.text, source), where
            assert quote_found(block.text, student), where


def test_statements_link_to_their_exercise(copy):
    dest, _ = copy
    link = re.compile(r"^> \*\*Exercise (\d+\.\d+) — .*\[Exercise \1\]\(([^)]*)\)", re.M)
    seen = 0
    for rel in redact.documents(dest):
        text = document_text(dest / rel)
        for match in link.finditer(text):
            target, _, anchor = match.group(2).partition("#")
            file = (dest / rel).parent / target if target else dest / rel
            assert file.is_file(), f"{rel}: {match.group(2)}"
            assert anchor in anchors(document_text(file)), f"{rel}: {match.group(2)}"
            seen += 1
    assert seen > 0


def test_reference_only_text_is_dropped():
    text = "Cells hold a blank<!-- reference-only --> (here: the answer)<!-- /reference-only -->."
    redactor = redact.Redactor(ROOT, [])
    assert redactor.markdown(text, "chapters/x.md") == "Cells hold a blank."


def test_notebook_01_does_not_promise_the_answer_in_the_copy(copy):
    dest, _ = copy
    nb = json.loads((dest / "notebooks" / "01_autograd.ipynb").read_text(encoding="utf-8"))
    header = "".join(nb["cells"][0]["source"])
    assert "worked answer" not in header and "reference-only" not in header


def test_a_quote_is_located_by_line_numbers():
    source = "def f(x):\n    # BEGIN SOLUTION ch01.1\n    y = x + 1\n    return y\n" \
             "    # END SOLUTION\n"
    assert redact.quote_spans("y = x + 1\nreturn y\n", source) == [(3, 4)]
    assert redact.quote_spans("    y = x + 2\n", source) == []


def test_no_link_of_the_copy_dangles(copy):
    """The answers to the chapter questions stay with the teacher; no link of the
    copy's texts points at them, or at any other file the copy lacks."""
    dest, _ = copy
    link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
    dangling = []
    for rel in redact.documents(dest):
        if not rel.endswith(".md"):
            continue
        for target in link.findall((dest / rel).read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not ((dest / rel).parent / target).exists():
                dangling.append(f"{rel}: {target}")
    assert not dangling, dangling[:10]
    text = (dest / "chapters" / "01_autograd.md").read_text(encoding="utf-8")
    assert "the answers (with your teacher" in text


def test_a_quote_of_an_exercise_s_second_function_names_that_function(copy):
    """Exercise 4.3 is written in two methods; chapter 04 quotes each apart, and
    each placeholder names the method its quote showed."""
    dest, _ = copy
    text = (dest / "chapters/04_gradient_accumulation.md").read_text(encoding="utf-8")
    placed = re.findall(r"> \*\*Exercise 4\.3 —.*?in `([^`]+)`", text)
    assert placed == ["minigrad/optim/accumulation.py::GradientAccumulator._weighted_backward",
                      "minigrad/optim/accumulation.py::GradientAccumulator._count_micro_batch"]
