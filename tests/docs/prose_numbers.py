"""Binding the numbers the chapters state to the executed notebooks.

A *binding* names a chapter, a regular expression that finds a number in the
chapter's prose (group ``n``; or ``lo`` and ``hi`` for a stated range), where
the executed result lies, and a tolerance.  Two kinds of executed result:

* :func:`recorded` -- a value a notebook recorded with
  ``minigrad.experiments.results.record`` in ``notebooks/results/NN.json``;
* :func:`printed` -- a number a notebook printed, read from its saved outputs
  (the outputs ``make notebooks`` saved when it last executed it);
* :func:`command_record` -- a number a long command wrote into its committed
  record with ``--record`` (``benchmarks/critical_batch.json``,
  ``benchmarks/finetune/*.json``: the run's numbers and its command line).

The prose is read outside fenced code blocks, with ``**``, ``*`` and backticks
removed and every run of white space (line breaks included) made one space,
so a phrase may wrap.  Plain functions on strings; the table of bindings is in
``test_prose_numbers.py``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from .markdown import ROOT, _tolerance, strip_code

# ---------------------------------------------------------------- reading numbers

WORDS = {"half": 0.5, "one": 1, "once": 1, "two": 2, "twice": 2, "three": 3, "thrice": 3,
         "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_TIMES_TEN = re.compile(r"^([-+−]?[\d.]+)\s*[·×x*]\s*10\^?([⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺\d-]+)$")


def parse_number(written: str) -> float:
    """``2.6``, ``1,003,854``, ``5.7e-16``, ``1.3·10⁻²``, ``−15.5``, ``twice``."""
    s = written.strip().lower().replace("−", "-").replace("\u2009", "")
    if s in WORDS:
        return float(WORDS[s])
    m = _TIMES_TEN.match(s)
    if m:
        return float(m.group(1)) * 10.0 ** int(m.group(2).translate(_SUPERSCRIPT))
    if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    return float(s)


def shown_tolerance(written: str) -> float:
    """Half a unit of the last digit written (``2.6`` -> 0.05; a word: 0.5)."""
    s = written.strip().lower().replace("−", "-").replace(",", "")
    if s in WORDS:
        return 0.5 if WORDS[s] >= 1 else 0.25
    m = _TIMES_TEN.match(s)
    if m:
        return _tolerance(m.group(1)) * 10.0 ** int(m.group(2).translate(_SUPERSCRIPT))
    return _tolerance(s)


@dataclass(frozen=True)
class Tol:
    """How far a stated number may lie from the result.

    ``shown``: to the digits written (half a unit of the last one);
    ``rel``: also anything within this fraction of the result;
    ``factor``: within this factor either way (timings, rounding-level gaps)."""

    shown: bool = True
    rel: float = 0.0
    factor: float | None = None

    def allows(self, written: str, actual: float) -> bool:
        value = parse_number(written)
        if self.factor is not None and actual > 0 and value > 0:
            if actual / self.factor <= value <= actual * self.factor:
                return True
        slack = max(self.rel * abs(actual), shown_tolerance(written) if self.shown else 0.0)
        return abs(value - actual) <= slack * (1 + 1e-9) + 1e-12 * abs(actual)

    def widen(self, written: str) -> tuple[float, float]:
        """The interval a stated range end ``written`` may stand for."""
        value = parse_number(written)
        slack = max(self.rel * abs(value), shown_tolerance(written) if self.shown else 0.0)
        low, high = value - slack, value + slack
        if self.factor is not None and value > 0:
            low, high = min(low, value / self.factor), max(high, value * self.factor)
        return low, high

    def __str__(self) -> str:
        parts = ["to the digits shown"] if self.shown else []
        if self.rel:
            parts.append(f"±{self.rel:.0%}")
        if self.factor:
            parts.append(f"within ×{self.factor:g}")
        return " or ".join(parts)


# ---------------------------------------------------------------- the chapters' prose

@dataclass
class Prose:
    """A chapter's prose, white space collapsed, with the line of each character."""

    path: object
    text: str
    lines: list = field(repr=False)

    def line(self, position: int) -> int:
        return self.lines[min(position, len(self.lines) - 1)] if self.lines else 1


def prose_of(markdown: str, path=None) -> Prose:
    raw = strip_code(markdown)
    out, lines, line, space = [], [], 1, False
    for ch in raw:
        if ch == "\n":
            line += 1
        if ch in "*`":
            continue
        if ch.isspace():
            if not space and out:
                out.append(" ")
                lines.append(line)
            space = True
            continue
        space = False
        out.append(ch)
        lines.append(line)
    return Prose(path, "".join(out), lines)


def chapter_path(chapter: str):
    found = sorted((ROOT / "chapters").glob(f"{chapter}_*.md"))
    if not found:
        raise LookupError(f"no chapters/{chapter}_*.md")
    return found[0]


# ---------------------------------------------------------------- the executed results

class MissingResult(LookupError):
    pass


def results_path(chapter: str):
    return ROOT / "notebooks" / "results" / f"{chapter}.json"


@lru_cache(maxsize=None)
def _results(chapter: str) -> dict:
    path = results_path(chapter)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def recorded(chapter: str, key: str) -> float:
    """The value notebook ``chapter`` recorded as ``key``."""
    entry = _results(chapter).get(key)
    if entry is None:
        raise MissingResult(f"notebooks/results/{chapter}.json has no {key!r}: the notebook "
                            f"no longer records it, or `make notebooks` was not run")
    return float(entry["value"])


def notebook_path(chapter: str):
    found = sorted((ROOT / "notebooks").glob(f"{chapter}_*.ipynb"))
    if not found:
        raise MissingResult(f"no notebooks/{chapter}_*.ipynb")
    return found[0]


@lru_cache(maxsize=None)
def saved_output(chapter: str) -> str:
    """Everything notebook ``chapter`` printed when it was last executed (stdout and
    text results of its code cells), one cell after the other."""
    cells = json.loads(notebook_path(chapter).read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def printed(chapter: str, pattern: str, group: int | str = 1) -> float:
    """The number that ``pattern``'s ``group`` captures in notebook ``chapter``'s
    saved output (first match; multi-line mode)."""
    m = re.search(pattern, saved_output(chapter), re.M)
    if m is None:
        raise MissingResult(f"notebook {chapter}'s saved output has no line matching "
                            f"{pattern!r}: its printout changed; update the binding")
    return parse_number(m.group(group))


def printed_all(chapter: str, pattern: str) -> list[tuple[str, ...]]:
    return re.findall(pattern, saved_output(chapter), re.M)


def command_record_path(name: str):
    return ROOT / "benchmarks" / f"{name}.json"


@lru_cache(maxsize=None)
def _command_record(name: str) -> dict:
    path = command_record_path(name)
    if not path.is_file():
        raise MissingResult(f"benchmarks/{name}.json does not exist: run the command it "
                            f"records with --record (benchmarks/README.md)")
    return json.loads(path.read_text(encoding="utf-8"))


def command_record(name: str, key: str, index: int | None = None) -> float:
    """Result ``key`` of the command record ``benchmarks/<name>.json`` (element
    ``index`` of a list; a key with dots walks into nested dictionaries)."""
    value = _command_record(name)["results"]
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise MissingResult(f"benchmarks/{name}.json has no result {key!r}: the command "
                                f"no longer records it")
        value = value[part]
    if index is not None:
        value = value[index]
    if value is None:
        raise MissingResult(f"benchmarks/{name}.json: {key!r} is null")
    return float(value)


# ---------------------------------------------------------------- bindings

@dataclass
class Binding:
    """A number the prose of ``chapter`` states, and the executed result it must equal.

    ``prose``: a regular expression with the group ``n`` (the number), the
    groups ``lo`` and ``hi`` (a range the result must lie in), the group
    ``max`` (an upper bound: "less than 0.1 %"), or a tuple of
    such expressions (alternative wordings); every match in the chapter is
    checked.  ``result(match)``: the executed value (the match lets
    one binding serve "X MiB at k = 8" for every k).  ``required``: the
    sentence must be found (a binding whose wording may go away entirely, because
    another binding covers the corrected sentence, is not required)."""

    id: str
    chapter: str
    prose: str | tuple
    result: Callable[[re.Match], float]
    tol: Tol = Tol()
    source: str = ""
    required: bool = True

    @property
    def patterns(self) -> tuple:
        """The regular expressions (one, or a tuple of alternative wordings)."""
        return self.prose if isinstance(self.prose, tuple) else (self.prose,)

    def matches(self, text: str) -> list:
        """Every match of every pattern, in text order (one per start position)."""
        found = {}
        for pattern in self.patterns:
            for m in re.finditer(pattern, text, re.I):
                found.setdefault(m.start(), m)
        return [found[k] for k in sorted(found)]

    def problems(self, prose: Prose) -> list[str]:
        where = f"chapters/{prose.path.name}" if prose.path is not None else "<text>"
        found = self.matches(prose.text)
        if not found:
            if self.required:
                return [f"{where}: [{self.id}] no sentence matches {self.prose!r}; the "
                        f"wording that states this number changed: update the binding's "
                        f"regex in tests/docs/test_prose_numbers.py (the number is "
                        f"{self.source})"]
            return []
        out = []
        for m in found:
            try:
                actual = float(self.result(m))
            except MissingResult as e:
                out.append(f"{where}:{prose.line(m.start())}: [{self.id}] {e}")
                continue
            groups = m.groupdict()
            context = m.group(0)
            if groups.get("n") is not None:
                if not self.tol.allows(groups["n"], actual):
                    out.append(
                        f"{where}:{prose.line(m.start('n'))}: [{self.id}] the text says "
                        f"{groups['n']!r} in {context!r}; the executed result is "
                        f"{actual:.4g} ({self.source}; tolerance {self.tol})")
            elif groups.get("lo") is not None and groups.get("hi") is not None:
                low = self.tol.widen(groups["lo"])[0]
                high = self.tol.widen(groups["hi"])[1]
                if not low <= actual <= high:
                    out.append(
                        f"{where}:{prose.line(m.start('lo'))}: [{self.id}] the text states "
                        f"the range {groups['lo']}–{groups['hi']} in {context!r}; the "
                        f"executed result {actual:.4g} lies outside it ({self.source}; "
                        f"tolerance {self.tol})")
            elif groups.get("max") is not None:
                if not actual < parse_number(groups["max"]):
                    out.append(
                        f"{where}:{prose.line(m.start('max'))}: [{self.id}] the text states "
                        f"a bound {groups['max']!r} in {context!r}; the executed result "
                        f"{actual:.4g} is not below it ({self.source})")
            else:
                raise ValueError(f"binding {self.id}: the regex must have group n, lo and "
                                 f"hi, or max")
        return out


def check_text(binding: Binding, markdown: str) -> list[str]:
    """The binding's problems on a chapter text given as a string."""
    return binding.problems(prose_of(markdown))
