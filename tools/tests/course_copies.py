"""Student copies for the teacher's-workflow tests: answers written in."""
from __future__ import annotations

from pathlib import Path

from tools import release, solutions


def solve(copy: Path, root: Path, ids, *, edit=None) -> list[str]:
    """Write the reference's answer of each exercise in ``ids`` in place of its
    stub in the student copy ``copy`` (``edit(id, lines) -> lines`` may change
    it first: a planted mistake); returns the files changed."""
    copy, root = Path(copy), Path(root)
    by_id = solutions.collect(root)
    changed = set()
    for ident in ids:
        for region in by_id[ident]:
            source = (root / region.path).read_text(encoding="utf-8").splitlines(keepends=True)
            body = source[region.begin:region.end - 1]
            if edit is not None:
                body = edit(ident, body)
            target = copy / region.path
            lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
            at = next(n for n, line in enumerate(lines)
                      if (m := release.STUB_RE.match(line)) and m.group("id") == ident)
            # the stub keeps a docstring that opens the region: do not write it twice
            kept = solutions._leading_docstring(source, region)
            lines[at:at + 1] = body[len(kept):]
            target.write_text("".join(lines), encoding="utf-8")
            changed.add(region.path)
    return sorted(changed)
