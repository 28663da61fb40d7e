"""Measure the core path of the syllabus and rewrite its line counts.

The table "The core path: read these first" in chapters/README.md names
functions as `path.py::Name` and ends each row with a line count.  This script
measures every named class, function or method in the source (from its
``def``/``class`` line to its last line, docstring included) and rewrites the
counts in place, then prints the rows and the total.

Usage (from the repository root):  python tools/core_path.py [--check]

``--check`` changes nothing and exits 1 when a count is out of date.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYLLABUS = ROOT / "chapters" / "README.md"
ROW = re.compile(r"^(.*\|\s*)(\d+)(\s*\|\s*)$")
REF = re.compile(r"`([\w/.]+\.py)::([\w.]+)`")


def definition_lines(path: Path, name: str) -> int:
    """Lines of the (dotted) class, function or method ``name`` in ``path``."""
    node = ast.parse(path.read_text(encoding="utf-8"))
    for part in name.split("."):
        found = [c for c in ast.iter_child_nodes(node)
                 if isinstance(c, (ast.FunctionDef, ast.ClassDef)) and c.name == part]
        if not found:
            raise SystemExit(f"core_path: {path.relative_to(ROOT)} defines no {name}")
        node = found[0]
    return node.end_lineno - node.lineno + 1


def measure(text: str):
    """(new text, rows as (names, old count, new count))."""
    rows, out = [], []
    for line in text.splitlines(keepends=True):
        m = ROW.match(line.rstrip("\n"))
        refs = REF.findall(line)
        if m and refs:
            count = sum(definition_lines(ROOT / path, name) for path, name in refs)
            rows.append(([name for _, name in refs], int(m.group(2)), count))
            line = f"{m.group(1)}{count}{m.group(3)}" + ("\n" if line.endswith("\n") else "")
        out.append(line)
    return "".join(out), rows


def main(argv=None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    text = SYLLABUS.read_text(encoding="utf-8")
    new_text, rows = measure(text)
    for names, old, new in rows:
        mark = "" if old == new else f"   (was {old})"
        print(f"{new:5d}  {', '.join(names)}{mark}")
    print(f"{sum(new for _, _, new in rows):5d}  total")
    if check:
        return 0 if new_text == text else 1
    SYLLABUS.write_text(new_text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
