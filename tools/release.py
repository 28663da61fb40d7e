"""The release manifest of a student copy: which version was handed out, and
the SHA-256 of every file in it.

``make student`` writes ``release.json`` into the copy::

    {"version": "v0.3-12-gab12cd3", "commit": "ab12cd3...", "date": "2026-03-01T09:00:00Z",
     "chapters": "1-3", "released": ["1.1", ...], "withheld": ["4.1", ...],
     "protected": ["Makefile", "conftest.py", "tests/...", ...],
     "files": {"minigrad/tensor.py": "<sha256>", ...},
     "stubs": [{"path": ..., "function": ..., "exercises": [...], "lines": [...]}]}

``protected`` are the files a student must not change (the tests, the tools,
``conftest.py``, the ``Makefile``, ``pyproject.toml``): ``make test`` in the copy
prints one warning line when any of them differs (this module is a pytest
plugin, loaded by the root ``conftest.py``), and ``make grade`` replaces them by
the release's own.  ``stubs`` records each function that holds an exercise stub
as handed out, so that ``make student UPDATE=1`` can find the lines a student
wrote in place of a stub (tools/update_student.py).
"""
from __future__ import annotations

import ast
import datetime
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

MANIFEST = "release.json"
PROTECTED = ("tests/", "tools/", "conftest.py", "Makefile", "pyproject.toml")
# Never part of a release: what running the course makes, and the update's backups.
SKIPPED_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis",
                ".ipynb_checkpoints", "build", ".minigrad-backup"}
STUB_RE = re.compile(r'^(?P<indent>[ \t]*)raise NotImplementedError\("Exercise '
                     r'(?P<id>\d+\.\d+) — ')


def check_manifest(root) -> list[str]:
    """The protected files of the copy at ``root`` that differ from its release:
    changed, missing, or added under ``tests/`` or ``tools/`` (sorted paths).
    Empty when there is no manifest (the reference itself)."""
    root = Path(root)
    manifest = read_manifest(root)
    if manifest is None:
        return []
    files = manifest["files"]
    expected = set(manifest["protected"])
    changed = [rel for rel in sorted(expected)
               if not (root / rel).is_file() or sha256(root / rel) != files[rel]]
    added = [rel for rel in release_files(root) if is_protected(rel) and rel not in expected]
    return sorted(changed + added)


def warning(root) -> str | None:
    """The one line ``make test`` prints when protected files were changed."""
    changed = check_manifest(root)
    if not changed:
        return None
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return (f"warning: {len(changed)} file(s) of the course differ from release "
            f"{read_manifest(root)['version']}: {shown}; grading uses the release's "
            "own (restore yours with `git checkout -- <file>`)")


# ------------------------------------------------------------------ writing

def write_manifest(dest, root, *, chapters: str, released, withheld) -> dict:
    """Hash every file of the copy at ``dest`` and write ``dest/release.json``."""
    dest = Path(dest)
    files = {rel: sha256(dest / rel) for rel in release_files(dest)}
    manifest = {**version(root), "chapters": chapters, "released": list(released),
                "withheld": list(withheld),
                "protected": sorted(rel for rel in files if is_protected(rel)),
                "files": files, "stubs": stub_functions(dest)}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
    return manifest


def read_manifest(root) -> dict | None:
    path = Path(root) / MANIFEST
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def version(root) -> dict:
    """``git describe`` and the commit of the reference at ``root`` (``-dirty``
    when it had uncommitted changes), and the date of the release (UTC)."""
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"version": git("describe", "--tags", "--always", "--dirty") or "unknown",
            "commit": git("rev-parse", "HEAD") or "unknown", "date": date}


def is_protected(rel: str) -> bool:
    return rel in PROTECTED or any(p.endswith("/") and rel.startswith(p) for p in PROTECTED)


def release_files(root) -> list[str]:
    """Every file under ``root`` (posix, relative), without SKIPPED_DIRS,
    compiled files and the manifest itself."""
    root = Path(root)
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in names:
            if name.endswith((".pyc", ".pyo")):
                continue
            rel = (Path(folder) / name).relative_to(root).as_posix()
            if rel != MANIFEST:
                found.append(rel)
    return sorted(found)


def sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stub_functions(root) -> list[dict]:
    """Each library function that holds exercise stubs, as it is in the copy:
    path, qualified name, the exercise ids of its stubs (in order), its lines."""
    root = Path(root)
    out = []
    for path in sorted((root / "minigrad").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "NotImplementedError(\"Exercise " not in text:
            continue
        lines = text.splitlines()
        stubs = [n for n, line in enumerate(lines, start=1) if STUB_RE.match(line)]
        if not stubs:
            continue
        rel = path.relative_to(root).as_posix()
        by_function: dict[str, dict] = {}
        for number in stubs:
            name, node = innermost_function(ast.parse(text), number)
            entry = by_function.setdefault(name, {
                "path": rel, "function": name, "exercises": [],
                "lines": lines[node.lineno - 1:node.end_lineno]})
            entry["exercises"].append(STUB_RE.match(lines[number - 1]).group("id"))
        out.extend(by_function.values())
    return out


def functions(tree) -> list[tuple[str, ast.AST]]:
    """(qualified name, node) of every function in a module, outermost first."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)
    visit(tree, "")
    return found


def innermost_function(tree, line: int):
    """(qualified name, node) of the innermost function holding line ``line``."""
    inside = [(name, node) for name, node in functions(tree)
              if node.lineno <= line <= node.end_lineno]
    if not inside:
        raise ValueError(f"line {line} is not inside a function")
    return max(inside, key=lambda pair: pair[1].lineno)


# ------------------------------------------------------- the pytest plugin

def pytest_sessionstart(session):
    """``make test`` in a student copy: one line when protected files differ."""
    line = warning(session.config.rootpath)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if line and reporter is not None:
        reporter.write_line(line, yellow=True, bold=True)
