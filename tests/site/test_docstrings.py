"""Docstrings written for help() render on the site: plain-text maths such as
``|x|`` or ``(N, *)`` is shown as written, real markup is kept."""
from __future__ import annotations

import sys

import pytest

from .conftest import ROOT

pytest.importorskip("docutils", reason="the site extra is not installed")
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
minigrad_site = pytest.importorskip("minigrad_site", reason="the site extra is not installed")


def _render(text: str) -> list[str]:
    lines = text.splitlines()
    minigrad_site._plain_text_docstrings(None, "function", "f", None, {}, lines)
    return lines


@pytest.mark.parametrize("text", [
    "moves each weight by lr * g / (|g| + eps)",
    "Shapes: input (N, *) -> output (N, *), the same.",
    "zeros(*shape, dtype=None): a tensor of 0s.",
    "loss = (1 - y)·x + (1 + (w - 1)·y)·(log(1 + exp(-|x|)) + max(-x, 0))",
])
def test_plain_text_maths_is_escaped_until_docutils_accepts_it(text):
    assert minigrad_site._rst_problems(text)
    rendered = _render(text)
    assert not minigrad_site._rst_problems("\n".join(rendered))
    assert rendered[0].replace("\\", "") == text   # the same characters, escaped


@pytest.mark.parametrize("text", [
    "**The idea.**  Take *one* step; see :class:`~minigrad.optim.Optimizer`.",
    "Code::\n\n    a = |b| * c\n\nafter ``|x|`` literal",
    ":param x: the input, of shape ``(N, *)``\n:raises ValueError: if x is empty",
])
def test_valid_markup_is_left_alone(text):
    assert _render(text) == text.splitlines()


def test_what_escaping_cannot_fix_is_shown_verbatim():
    text = "Title\n=====\n\n  bad indentation\n    here\n  and\n\n.. unknown-directive:: x"
    assert minigrad_site._rst_problems(text)
    rendered = _render(text)
    assert rendered[:2] == ["::", ""]
    assert [line[4:] for line in rendered[2:]] == text.splitlines()
