"""Each exercise's statement names where its blank is: every
``minigrad/x.py::Name`` it quotes is the function (or method) holding one of
its solution regions, and each region's function is named."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import exercises, solutions
from tools.redact import Redactor

ROOT = Path(__file__).resolve().parents[2]
# The student copy has no regions left to check against (and no answers).
pytestmark = pytest.mark.skipif((ROOT / "student.json").is_file(),
                                reason="needs the reference's regions")
LOCATION = re.compile(r"`(minigrad/[\w/]+\.py)::([\w.]+)`")


def statement(ident: str) -> str:
    """The text of exercise ``ident``: from its anchor to the next anchor or heading."""
    text = exercises.chapter_file(ROOT, exercises.chapter_of(ident)).read_text(encoding="utf-8")
    start = text.index(f'<a id="exercise-{ident}"></a>')
    body = text[start:].split("\n", 2)[2]          # after the anchor and the heading
    end = re.search(r'^(<a id="exercise-|#{1,3} )', body, re.M)
    return body[:end.start()] if end else body


REDACTOR = Redactor(ROOT, [])
REGIONS = solutions.collect(ROOT)


@pytest.mark.parametrize("ident", sorted(exercises.EXERCISES, key=exercises.sort_key))
def test_the_statement_names_the_function_that_holds_the_blank(ident):
    # parametrized by the exercise table, so that every tree (a partly blanked
    # copy too) has the same tests; the regions are the reference's
    regions = REGIONS.get(ident)
    assert regions, f"exercise {ident} has no solution region in the library"
    real = {(r.path, REDACTOR.outer_function(r)) for r in regions}
    named = set(LOCATION.findall(statement(ident)))
    wrong = sorted(named - real)
    missing = sorted(real - named)
    assert not wrong, (f"exercise {ident} names {['::'.join(w) for w in wrong]}, but its "
                       f"blank is in {['::'.join(r) for r in sorted(real)]}")
    assert not missing, (f"exercise {ident} does not name `{'`, `'.join('::'.join(m) for m in missing)}`, "
                         "where its blank is")


def test_a_wrong_location_is_caught():
    regions = REGIONS["5.2"]
    real = {(r.path, REDACTOR.outer_function(r)) for r in regions}
    assert ("minigrad/functions/loss.py", "_reduce_kept") not in real
