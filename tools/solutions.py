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
(``# BEGIN SOLUTION nb04.1``), also inside a function body; the cell states
the task in a comment ``# Your turn nb04.1: <what to write>; expected <type
and shape>``, and the student copy replaces the region by
``raise NotImplementedError("Your turn nb04.1: ...")``: the cell defines the
function, and the next cell, which calls it, fails with that message.
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


def find_regions(text: str, path: str = "<source>", kind: str = "ch") -> list[Region]:
    """Check the regions of a Python source (``kind="nb"``: a notebook cell)
    and return them.

    Each region must lie inside a function body and span whole statements of
    one block, indented like its BEGIN line.  Raises RegionError otherwise.
    """
    marks = scan_markers(text, path, kind)
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

YOUR_TURN_RE = re.compile(r"^[ \t]*# Your turn (?P<ident>nb\d{2}\.\d+): (?P<task>.+?)[ \t]*$",
                          re.MULTILINE)


def notebook_regions(nb: dict, path: str) -> list[tuple[int, list]]:
    """(cell index, scan_markers result) of every code cell with regions."""
    found = []
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        marks = scan_markers(_cell_text(cell), f"{path} cell {index}", kind="nb")
        if marks:
            found.append((index, marks))
    return found


def _cell_text(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def notebook_tasks(text: str, where: str) -> dict[str, str]:
    """Region id -> its "Your turn" message, for the regions of one code cell.

    Each region must be a function body (or part of one: ``find_regions``) and
    the cell must state its task in a comment ``# Your turn nbNN.M: <what to
    write>; expected <type and shape>``.  Raises RegionError otherwise.
    """
    tasks = {m.group("ident"): m.group("task") for m in YOUR_TURN_RE.finditer(text)}
    out = {}
    for region in find_regions(text, where, kind="nb"):
        ident = region.exercise_id
        task = tasks.get(ident)
        if task is None or "; expected " not in task:
            raise RegionError(f"{where}:{region.begin}: region {ident} needs a comment "
                              f"'# Your turn {ident}: <what to write>; expected <type and "
                              "shape>' in its cell (the student's stub raises it)")
        out[ident] = f"Your turn {ident}: {task}"
    return out


def blank_notebook(nb: dict, path: str = "<notebook>") -> tuple[dict, int, int]:
    """A student version of a notebook: each code region (a function body)
    becomes ``raise NotImplementedError("Your turn nbNN.M: ...")`` with the
    task its cell states, markdown cells tagged ``answer`` become a blank
    "*Your answer:*" cell, and every output is cleared (printed results would
    give answers away).

    Returns (new notebook, number of code regions, number of answer cells).
    Raises RegionError for a region outside a function or without its task.
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
        where = f"{path} cell {index}"
        if not scan_markers(text, where, kind="nb"):
            continue
        tasks = notebook_tasks(text, where)
        found = find_regions(text, where, kind="nb")
        cell["source"] = blank_python(text, found, tasks.__getitem__)
        regions += len(found)
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
            nb = json.loads(path.read_text(encoding="utf-8"))
            found = notebook_regions(nb, rel)
        except (RegionError, ValueError) as e:
            errors.append(str(e))
            continue
        seen = set()
        for index, marks in found:
            try:
                notebook_tasks(_cell_text(nb["cells"][index]), f"{rel} cell {index}")
            except RegionError as e:
                errors.append(str(e))
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
