"""Bring a new release into a student copy that holds answers:
``make student UPDATE=1 DEST=<copy> [CHAPTERS=1-6]``.

1. The new release is written into a temporary folder (tools/make_student.py).
2. The student's answers are read from the copy: ``release.json`` records each
   function that held a stub as it was handed out, so the lines that now stand
   in place of a stub are the answer (``extract``).
3. Every file is brought up to the new release, except what the student made:

   * a file the student did not change is replaced by the new release's;
   * a library file with answers keeps the student's file when the release did
     not change it; otherwise the new file is taken and each answer is put in
     place of its stub again (re-indented if needed);
   * a protected file (tests, tools, ``conftest.py``, ``Makefile``,
     ``pyproject.toml``) is always the release's;
   * any other file both the student and the release changed (a notebook) keeps
     the student's version; the release's goes to the backup's ``incoming/``.

4. Every file replaced or removed is first copied to
   ``DEST/.minigrad-backup/<timestamp>/files/``; the report lists the answers
   kept and each conflict: an exercise whose region the release removed or
   moved to another function, an answer whose surrounding lines the student
   changed so it cannot be told apart, edits outside the regions that were not
   carried over.  Nothing is committed: ``git diff`` in the copy shows the update.
"""
from __future__ import annotations

import ast
import datetime
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tools import release
from tools.answers import Answer, extract
from tools.exercises import sort_key
from tools.make_student import write_student_copy

BACKUP_DIR = ".minigrad-backup"


@dataclass
class Report:
    dest: Path
    backup: Path
    version: str = ""
    kept: list[str] = field(default_factory=list)          # exercise ids whose answer stays
    updated: list[str] = field(default_factory=list)       # files replaced by the release's
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # files left as the student had them in a conflict: rel -> the old release's
    # hash, which the copy's manifest keeps, so that the next update sees the
    # conflict again instead of taking the student's file for the new release's
    unresolved: dict = field(default_factory=dict)

    def text(self) -> str:
        self.kept = sorted(set(self.kept), key=sort_key)
        lines = [f"make student UPDATE=1: {self.dest} is now release {self.version}: "
                 f"{len(self.updated)} file(s) updated, answers kept for "
                 f"{len(self.kept)} exercise(s)"
                 + (f" ({', '.join(self.kept)})" if self.kept else "")]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  CONFLICT: {c}" for c in self.conflicts]
        lines.append(f"  backup of every replaced file: {self.backup}"
                     if self.backup.exists() else "  nothing needed a backup")
        if self.conflicts:
            lines.append("  resolve each conflict by hand (the backup holds your version), "
                         "then `make test`")
        return "\n".join(lines)


# ----------------------------------------------------------------- the update

def update(dest, *, root, chapters=None, now=None, answers=None) -> Report:
    """Bring the release of the reference at ``root`` into the copy ``dest``
    (``answers``: keep the answers to the questions; None: as the copy had them)."""
    dest = Path(dest).resolve()
    if not dest.is_dir():
        raise SystemExit(f"make student UPDATE=1: {dest} does not exist; write a new copy "
                         "with `make student DEST=...` (without UPDATE=1)")
    old = release.read_manifest(dest)
    if old is None:
        raise SystemExit(f"make student UPDATE=1: {dest} has no {release.MANIFEST}: it is "
                         "not a student copy written by `make student` (nothing changed)")
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    report = Report(dest, dest / BACKUP_DIR / stamp)
    with tempfile.TemporaryDirectory(prefix="minigrad-release-") as tmp:
        fresh = Path(tmp) / "copy"
        write_student_copy(fresh, root=root, chapters=chapters or _old_chapters(old),
                           git=False, answers=_old_answers(dest) if answers is None else answers)
        new = release.read_manifest(fresh)
        report.version = new["version"]
        answers = extract(dest, old)
        _apply(dest, fresh, old, new, answers, report)
        for name in ("student.json", release.MANIFEST):
            _put(dest, fresh, name, report, count=False)
        _keep_unresolved(dest, report)
    _exclude_backup(dest)
    if report.backup.exists():
        (report.backup / "report.txt").write_text(report.text() + "\n", encoding="utf-8")
    return report


def _old_answers(dest) -> bool:
    """Whether the copy was written with the answers to the questions (ANSWERS=1)."""
    try:
        return bool(json.loads((Path(dest) / "student.json").read_text(encoding="utf-8"))
                    .get("answers", False))
    except (OSError, ValueError):
        return False


def _old_chapters(manifest):
    chapters = manifest.get("chapters")
    return None if chapters in (None, "all") else chapters


def _apply(dest, fresh, old, new, answers, report):
    by_path: dict[str, list[Answer]] = {}
    for answer in answers:
        by_path.setdefault(answer.path, []).append(answer)
        if answer.problem:
            report.conflicts.append(f"exercise {answer.exercise}: {answer.problem}; the "
                                    "file is left as you had it")
    for rel in sorted(set(new["files"]) | set(old["files"])):
        mine = dest / rel
        base_hash, new_hash = old["files"].get(rel), new["files"].get(rel)
        my_hash = release.sha256(mine) if mine.is_file() else None
        if my_hash == new_hash:
            continue
        student_changed = my_hash is not None and my_hash != base_hash
        if new_hash is None:                                   # gone from the release
            if student_changed:
                report.notes.append(f"{rel} is no longer in the course; your version stays")
            elif my_hash is not None:
                _backup(dest, rel, report)
                mine.unlink()
                report.updated.append(rel)
            continue
        if not student_changed or release.is_protected(rel):
            if student_changed:
                report.notes.append(f"your edit of {rel} was replaced by the release's "
                                    "(a file of the course you should not change)")
            _put(dest, fresh, rel, report)
            continue
        written = [a for a in by_path.get(rel, []) if a.lines is not None]
        if any(a.problem for a in by_path.get(rel, [])):
            report.unresolved[rel] = base_hash
            continue                                           # reported above; left as is
        if base_hash == new_hash:                              # the release kept this file
            report.kept.extend(a.exercise for a in written)
            continue
        if written:
            _merge(dest, fresh, rel, by_path[rel], base_hash, report)
            continue
        if rel in by_path:                                     # no answer yet: the release's
            report.notes.append(f"{rel}: your edits outside the exercises were replaced "
                                f"by the release's file (yours: {report.backup / 'files' / rel})")
            _put(dest, fresh, rel, report)
            continue
        incoming = report.backup / "incoming" / rel
        incoming.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(fresh / rel, incoming)
        report.conflicts.append(f"{rel}: both you and the release changed it; yours is "
                                f"kept, the release's is in {incoming}")
        report.unresolved[rel] = base_hash


def _keep_unresolved(dest, report):
    """In the copy's new manifest, a file left in conflict keeps the hash of the
    release it was based on: until the student takes the new version, every
    update reports it again (with the release's file in its backup)."""
    if not report.unresolved:
        return
    manifest = release.read_manifest(dest)
    for rel, base in report.unresolved.items():
        if base is None:
            manifest["files"].pop(rel, None)
        else:
            manifest["files"][rel] = base
    (dest / release.MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False)
                                         + "\n", encoding="utf-8")


def _merge(dest, fresh, rel, answers, base_hash, report):
    """The new release's ``rel`` with each written answer in place of its stub."""
    lines = (fresh / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    tree = ast.parse("".join(lines))
    stubs = {}                                   # exercise id -> [(line index, function)]
    for n, line in enumerate(lines):
        match = release.STUB_RE.match(line)
        if match:
            name, _ = release.innermost_function(tree, n + 1)
            stubs.setdefault(match.group("id"), []).append((n, name, match.group("indent")))
    olds = {}
    for a in answers:
        olds.setdefault(a.exercise, []).append(a)
    replace = {}
    for ident, mine in olds.items():
        places = stubs.get(ident, [])
        if len(places) != len(mine) or any(p[1] != a.function for p, a in zip(places, mine)):
            where = ", ".join(p[1] for p in places) or "nowhere in this file"
            if any(a.lines for a in mine):
                report.conflicts.append(
                    f"exercise {ident}: the release moved its region from "
                    f"{mine[0].function} to {where} ({rel}); your answer was not placed "
                    "(it is in the backup)")
            continue
        for (n, _, indent), answer in zip(places, mine):
            if answer.lines is None:
                continue
            replace[n] = [_reindent(line, answer.indent, indent) + "\n" for line in answer.lines]
        if any(a.lines for a in mine):
            report.kept.append(ident)
    _backup(dest, rel, report)
    out = []
    for n, line in enumerate(lines):
        out.extend(replace.get(n, [line]))
    (dest / rel).write_text("".join(out), encoding="utf-8")
    report.updated.append(rel)
    if not _only_regions_changed(report.backup / "files" / rel, answers, base_hash):
        report.notes.append(f"{rel}: your edits outside the exercises were not carried over "
                            f"(your file: {report.backup / 'files' / rel})")


def _only_regions_changed(yours: Path, answers, base_hash: str) -> bool:
    """True when the student's file is the old release plus answers only: with
    each answer put back to its stub, it hashes to the old release's file."""
    lines = yours.read_text(encoding="utf-8").splitlines(keepends=True)
    pos = 0
    for a in answers:
        if not a.lines:
            continue
        size = len(a.lines)
        found = next((p for p in range(pos, len(lines) - size + 1)
                      if [line.rstrip("\r\n") for line in lines[p:p + size]] == a.lines),
                     None)
        if found is None:
            return False
        lines[found:found + size] = [a.stub + "\n"]
        pos = found + 1
    return release.sha256_text("".join(lines)) == base_hash


def _reindent(line: str, old: str, new: str) -> str:
    if old == new or not line.strip():
        return line.rstrip("\n")
    return (new + line[len(old):] if line.startswith(old) else line).rstrip("\n")


def _put(dest, fresh, rel, report, count=True):
    if (dest / rel).exists():
        _backup(dest, rel, report)
    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(fresh / rel, dest / rel)
    if count:
        report.updated.append(rel)


def _backup(dest, rel, report):
    target = report.backup / "files" / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(dest / rel, target)


def _exclude_backup(dest: Path) -> None:
    """Keep the backups out of the student's commits."""
    exclude = dest / ".git" / "info" / "exclude"
    if (dest / ".git").is_dir():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if f"/{BACKUP_DIR}/" not in text:
            exclude.write_text(text + f"/{BACKUP_DIR}/\n", encoding="utf-8")
