"""A student's answers in a copy written by ``make student``.

``release.json`` (tools/release.py) records each function that held a stub as
it was handed out; the lines that now stand where a stub stood are the
student's answer.  ``make student FORCE=1`` refuses to replace a copy that
holds answers (``written_exercises``); ``make student UPDATE=1``
(tools/update_student.py) carries them into a new release (``extract``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tools import release
from tools.exercises import sort_key

@dataclass
class Answer:
    exercise: str
    function: str
    path: str
    lines: list[str] | None        # None: not started (the stub is still there)
    indent: str                    # the stub's indentation in the old release
    stub: str = ""                 # the stub line handed out
    problem: str = ""              # why it cannot be read (a conflict)


# ---------------------------------------------------------------- the answers

def extract(root, manifest) -> list[Answer]:
    """The student's answer for every stub of the release ``manifest`` in the
    copy at ``root``: the lines between the unchanged lines that surround the
    stub in the function as it was handed out."""
    root = Path(root)
    answers = []
    trees: dict[str, object] = {}
    for entry in manifest["stubs"]:
        path = root / entry["path"]
        base = entry["lines"]
        stub_at = [n for n, line in enumerate(base) if release.STUB_RE.match(line)]
        indents = [release.STUB_RE.match(base[n]).group("indent") for n in stub_at]
        stub_lines = [base[n] for n in stub_at]

        def fail(problem):
            for ident, indent, stub in zip(entry["exercises"], indents, stub_lines):
                answers.append(Answer(ident, entry["function"], entry["path"], None,
                                      indent, stub, problem))

        if not path.is_file():
            fail(f"{entry['path']} is missing in the copy")
            continue
        if entry["path"] not in trees:
            text = path.read_text(encoding="utf-8")
            try:
                trees[entry["path"]] = (text.splitlines(), ast.parse(text))
            except SyntaxError as e:
                trees[entry["path"]] = (text.splitlines(), f"line {e.lineno}: {e.msg}")
        lines, tree = trees[entry["path"]]
        if isinstance(tree, str):
            fail(f"{entry['path']} is not valid Python ({tree})")
            continue
        node = dict(release.functions(tree)).get(entry["function"])
        if node is None:
            fail(f"no function {entry['function']} in {entry['path']}")
            continue
        student = lines[node.lineno - 1:node.end_lineno]
        pieces = _between(base, stub_at, student)
        if pieces is None:
            fail(f"the lines around the exercise in {entry['function']} "
                 f"({entry['path']}) were changed, so the answer cannot be told apart")
            continue
        for ident, indent, stub, piece in zip(entry["exercises"], indents, stub_lines,
                                              pieces):
            started = not (len(piece) == 1 and release.STUB_RE.match(piece[0])) and \
                any(line.strip() for line in piece)
            answers.append(Answer(ident, entry["function"], entry["path"],
                                  piece if started else None, indent, stub))
    return answers


def _between(base, stub_at, student):
    """The student's lines standing where each stub of ``base`` stood, or None
    when the lines between the stubs do not appear unchanged, in order."""
    same = [line.rstrip() for line in student]
    segments, start = [], 0
    for n in stub_at:
        segments.append([line.rstrip() for line in base[start:n]])
        start = n + 1
    tail = [line.rstrip() for line in base[start:]]
    head = segments[0]
    if same[:len(head)] != head:
        return None
    pos, pieces = len(head), []
    for k, segment in enumerate(segments[1:]):
        if segment:
            found = next((p for p in range(pos, len(same) - len(segment) + 1)
                          if same[p:p + len(segment)] == segment), None)
        else:                            # two stubs side by side: the first one's answer
            this, after = (_indent(base[stub_at[k]]), _indent(base[stub_at[k + 1]]))
            if after >= this:            # ends where the indentation falls back
                return None
            found = next((p for p in range(pos, len(same)) if same[p].strip()
                          and _indent(same[p]) < this), None)
        if found is None:
            return None
        pieces.append(student[pos:found])
        pos = found + len(segment)
    end = len(same) - len(tail)
    if end < pos or same[end:] != tail:
        return None
    pieces.append(student[pos:end])
    return pieces


def _indent(line: str) -> int:
    return len(line.expandtabs()) - len(line.expandtabs().lstrip())


def written_exercises(root, manifest) -> list[str]:
    """Exercise ids whose stub the student replaced (or whose function cannot
    be read any more: that counts as work too)."""
    return sorted({a.exercise for a in extract(root, manifest) if a.lines or a.problem},
                  key=sort_key)
