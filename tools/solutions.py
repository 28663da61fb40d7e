"""Solution regions: find them, check them, and blank them for the student copy.

A region is a run of whole statements inside a function body, between two
comment lines at the indentation of its first statement::

    def backward(self, g):
        # BEGIN SOLUTION ch01.2
        ga = ...
        return ga, gb
        # END SOLUTION

The student copy replaces the region by one line at the same indentation,
``raise NotImplementedError("Exercise 1.2 — <title>: see chapters/....md#exercise-1.2")``,
so the function fails as soon as it reaches the region, even when the region is
in the middle of the body.  Notebook code cells may hold regions too
(``# BEGIN SOLUTION nb04.1``); there each variable the region assigns becomes
``name = ...  # your turn``, so the cell runs and the next assert fails.
"""
from __future__ import annotations

import ast
import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import exercises

BEGIN_RE = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION (?P<kind>ch|nb)(?P<chapter>\d{2})"
                      r"\.(?P<number>\d+)[ \t]*$")
END_RE = re.compile(r"^[ \t]*# END SOLUTION[ \t]*$")
ANY_MARKER_RE = re.compile(r"(BEGIN|END)[ _]SOLUTION")
ANCHOR_RE = re.compile(r'<a id="exercise-(\d+\.\d+)"></a>')


class RegionError(ValueError):
    """A malformed solution region; the message names the file and line."""


@dataclass(frozen=True)
class Region:
    """Lines ``begin`` .. ``end`` (1-based, the two marker lines included)."""

    exercise_id: str        # "3.2"; notebook regions: "nb04.1"
    path: str
    begin: int
    end: int
    indent: str
    function: str           # qualified name of the enclosing function ("" in notebooks)


def _exercise_id(match) -> str:
    ident = f"{int(match.group('chapter'))}.{int(match.group('number'))}"
    return ident if match.group("kind") == "ch" else f"nb{match.group('chapter')}.{match.group('number')}"


def scan_markers(text: str, path: str, kind: str = "ch") -> list[tuple[str, int, int, str]]:
    """(id, begin line, end line, indentation) of every region, in order.

    Raises RegionError for a nested BEGIN, an END without BEGIN, a region left
    open at the end, an empty region, or a line that looks like a marker but
    is not one (e.g. ``#BEGIN SOLUTION 3.2``).
    """
    found, open_at = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        begin, end = BEGIN_RE.match(line), END_RE.match(line)
        if begin:
            if begin.group("kind") != kind:
                raise RegionError(f"{path}:{number}: a {begin.group('kind')} marker where "
                                  f"{kind}NN.M markers are expected")
            if open_at is not None:
                raise RegionError(f"{path}:{number}: BEGIN SOLUTION inside the region opened "
                                  f"at line {open_at[1]}: regions do not nest")
            open_at = (_exercise_id(begin), number, begin.group("indent"))
        elif end:
            if open_at is None:
                raise RegionError(f"{path}:{number}: END SOLUTION without a BEGIN SOLUTION")
            if number == open_at[1] + 1:
                raise RegionError(f"{path}:{open_at[1]}: empty solution region "
                                  f"{open_at[0]}")
            found.append((open_at[0], open_at[1], number, open_at[2]))
            open_at = None
        elif ANY_MARKER_RE.search(line) and line.lstrip().startswith("#"):
            raise RegionError(f"{path}:{number}: malformed marker {line.strip()!r}; expected "
                              f"'# BEGIN SOLUTION {kind}NN.M' or '# END SOLUTION'")
    if open_at is not None:
        raise RegionError(f"{path}:{open_at[1]}: unterminated region {open_at[0]}: no "
                          "END SOLUTION before the end of the file")
    return found


def _functions(tree):
    """(qualified name, node) of every function, outermost first."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                out.append((name, child))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)
    visit(tree, "")
    return out


def _statement_lists(node):
    """Every list of statements (bodies, else branches, handlers) under ``node``."""
    for field in ("body", "orelse", "finalbody"):
        value = getattr(node, field, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(node, "handlers", []) or []:
        yield handler.body
    for case in getattr(node, "cases", []) or []:
        yield case.body


def find_regions(text: str, path: str = "<source>") -> list[Region]:
    """Check the regions of a Python source and return them.

    Each region must lie inside a function body and span whole statements of
    one block, indented like its BEGIN line.  Raises RegionError otherwise.
    """
    marks = scan_markers(text, path)
    if not marks:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise RegionError(f"{path}:{e.lineno}: not valid Python: {e.msg}") from None
    functions = _functions(tree)
    regions = []
    for ident, begin, end, indent in marks:
        inside = [(name, fn) for name, fn in functions
                  if fn.lineno < begin < fn.end_lineno]
        if not inside:
            raise RegionError(f"{path}:{begin}: region {ident} is not inside a function "
                              "body (regions may only replace code in a function)")
        name, fn = inside[-1]                                  # the innermost
        block = _block_of(fn, begin, end)
        if block is None:
            raise RegionError(f"{path}:{begin}: region {ident} does not span whole "
                              "statements of one block (a marker cuts a statement or "
                              "crosses an indentation level)")
        first = block[0]
        col = len(indent.expandtabs())
        if first.col_offset != col:
            raise RegionError(f"{path}:{begin}: the BEGIN SOLUTION line of {ident} is "
                              f"indented by {col}, its first statement by "
                              f"{first.col_offset}; indent the markers like the code")
        regions.append(Region(ident, path, begin, end, indent, name))
    return regions


def _block_of(fn, begin, end):
    """The statements strictly between the marker lines, if they are whole
    statements of one statement list inside ``fn`` and nothing else; else None."""
    def search(node):
        for stmts in _statement_lists(node):
            inside = [s for s in stmts if begin < s.lineno and s.end_lineno < end]
            around = [s for s in stmts if s.lineno < begin < s.end_lineno]
            if inside:
                return None if around else inside
            if around:
                return search(around[0])
        return None
    block = search(fn)
    if block is None:
        return None
    covered = {id(n) for s in block for n in ast.walk(s)}
    for node in ast.walk(fn):
        if isinstance(node, ast.stmt) and begin < node.lineno < end and id(node) not in covered:
            return None
        if isinstance(node, ast.stmt) and id(node) not in covered and \
                node.lineno < end < node.end_lineno and not node.lineno < begin:
            return None
    return block


def blank_python(text: str, regions, message_for) -> str:
    """Replace each region by ``raise NotImplementedError(message_for(id))``
    at the region's indentation; a docstring at the top of a region is kept."""
    lines = text.splitlines(keepends=True)
    newline = "\n"
    for region in sorted(regions, key=lambda r: -r.begin):
        keep = _leading_docstring(lines, region)
        stub = (f"{region.indent}raise NotImplementedError("
                f"{json.dumps(message_for(region.exercise_id), ensure_ascii=False)}){newline}")
        lines[region.begin - 1:region.end] = keep + [stub]
    return "".join(lines)


def _leading_docstring(lines, region):
    """The lines of a docstring that opens the region (kept in the student copy)."""
    body = "".join(lines[region.begin:region.end - 1])
    try:
        tree = ast.parse(_dedent(body, region.indent))
    except SyntaxError:
        return []
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        return lines[region.begin:region.begin + first.end_lineno]
    return []


def _dedent(text: str, indent: str) -> str:
    return "".join(line[len(indent):] if line.startswith(indent) else line
                   for line in text.splitlines(keepends=True))


# ----------------------------------------------------------------- notebooks

def notebook_regions(nb: dict, path: str) -> list[tuple[int, list]]:
    """(cell index, scan_markers result) of every code cell with regions."""
    found = []
    for index, cell in enumerate(nb.get("cells", [])):
        source = _cell_text(cell)
        if cell.get("cell_type") != "code":
            if BEGIN_RE.search(source) or END_RE.search(source):
                pass
            continue
        marks = scan_markers(source, f"{path} cell {index}", kind="nb")
        if marks:
            found.append((index, marks))
    return found


def _cell_text(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _assigned_names(code: str) -> list[str]:
    """Names a block of code binds at its top level, in order (for the stub)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = []

    def add(target):
        if isinstance(target, ast.Name) and target.id not in names:
            names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                add(t)
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                add(t)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            add(node.target)
        elif isinstance(node, (ast.For, ast.With)):
            for t in ([node.target] if isinstance(node, ast.For)
                      else [i.optional_vars for i in node.items if i.optional_vars]):
                add(t)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
    return names


def blank_notebook(nb: dict, path: str = "<notebook>") -> tuple[dict, int, int]:
    """A student version of a notebook: code regions become ``name = ...  # your
    turn`` stubs, markdown cells tagged ``answer`` become a blank "*Your answer:*"
    cell, and every output is cleared (printed results would give answers away).

    Returns (new notebook, number of code regions, number of answer cells).
    """
    nb = copy.deepcopy(nb)
    regions = answers = 0
    for index, cell in enumerate(nb.get("cells", [])):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") == "markdown" and "answer" in tags:
            cell["source"] = "*Your answer:*\n"
            cell["metadata"]["tags"] = [t for t in tags if t != "answer"]
            answers += 1
            continue
        if cell.get("cell_type") != "code":
            continue
        text = _cell_text(cell)
        marks = scan_markers(text, f"{path} cell {index}", kind="nb")
        lines = text.splitlines(keepends=True)
        for ident, begin, end, indent in reversed(marks):
            body = _dedent("".join(lines[begin:end - 1]), indent)
            names = _assigned_names(body)
            label = f"your turn (notebook exercise {ident[2:].lstrip('0')})"
            stub = [f"{indent}{name} = ...  # {label}\n" for name in names] or \
                   [f"{indent}...  # {label}\n"]
            lines[begin - 1:end] = stub
            regions += 1
        cell["source"] = "".join(lines)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb, regions, answers


# ---------------------------------------------------------------- the tree

def library_files(root: Path):
    """The Python files that may hold exercise regions: the ``minigrad`` package."""
    return sorted((Path(root) / "minigrad").rglob("*.py"))


def collect(root: Path) -> dict[str, list[Region]]:
    """Exercise id -> its regions, over the library; RegionError if malformed."""
    root = Path(root)
    by_id: dict[str, list[Region]] = {}
    for path in library_files(root):
        rel = path.relative_to(root).as_posix()
        for region in find_regions(path.read_text(encoding="utf-8"), rel):
            by_id.setdefault(region.exercise_id, []).append(region)
    return by_id


def check_tree(root: Path, table=None) -> tuple[list[str], list[str]]:
    """(errors, warnings) about the regions of the tree at ``root``.

    Errors: malformed regions, ids not in the table, table ids without a region,
    one id's regions spread over several files, an anchor in a chapter
    without a region, a chapter text that has exercise anchors but lacks one.
    Warning: a chapter not written yet, or without any exercise anchor.
    """
    root = Path(root)
    table = exercises.EXERCISES if table is None else table
    errors, warnings = [], []
    try:
        by_id = collect(root)
    except RegionError as e:
        return [str(e)], []
    for ident, regions in sorted(by_id.items(), key=lambda kv: exercises.sort_key(kv[0])):
        if ident not in table:
            errors.append(f"{regions[0].path}:{regions[0].begin}: region {ident} is not in "
                          "the exercise table (tools/exercises.py)")
        places = {r.path for r in regions}
        if len(places) > 1:
            errors.append(f"exercise {ident} has regions in several files: "
                          f"{sorted(places)}; an exercise lives in one file")
    for ident in table:
        if ident not in by_id:
            errors.append(f"exercise {ident} ({table[ident]}) has no solution region in "
                          "the library")
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        rel = path.relative_to(root).as_posix()
        try:
            found = notebook_regions(json.loads(path.read_text(encoding="utf-8")), rel)
        except (RegionError, ValueError) as e:
            errors.append(str(e))
            continue
        seen = set()
        for index, marks in found:
            for ident, *_ in marks:
                if ident in seen:
                    errors.append(f"{rel} cell {index}: notebook region {ident} appears twice")
                seen.add(ident)
                if not path.name.startswith(ident[2:4]):
                    errors.append(f"{rel} cell {index}: region {ident} belongs to notebook "
                                  f"{ident[2:4]}, not to this one")
    chapters = sorted({exercises.chapter_of(i) for i in table})
    for chapter in chapters:
        path = exercises.chapter_file(root, chapter)
        ids = {i for i in table if exercises.chapter_of(i) == chapter}
        if path is None:
            warnings.append(f"chapter {chapter:02d} is not written yet: anchors of "
                            f"{', '.join(sorted(ids, key=exercises.sort_key))} unchecked")
            continue
        anchors = set(ANCHOR_RE.findall(path.read_text(encoding="utf-8")))
        if not anchors:
            warnings.append(f"{path.relative_to(root)} has no exercise anchors yet")
            continue
        for ident in sorted(anchors - ids, key=exercises.sort_key):
            errors.append(f"{path.relative_to(root)}: anchor exercise-{ident} has no "
                          "exercise in the table")
        for ident in sorted(ids - anchors, key=exercises.sort_key):
            errors.append(f"{path.relative_to(root)}: no anchor <a id=\"exercise-{ident}\">"
                          f"</a> for exercise {ident}")
    return errors, warnings
