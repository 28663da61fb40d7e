"""Write the student copy of the course: ``make student [DEST=...] [CHAPTERS=3-5]``.

The copy holds every file of the reference that git tracks (or would track: new
files not ignored), without the git history and without the answer keys
(``chapters/answers/``) unless ``--answers`` (``ANSWERS=1``) keeps them; the hints
to the chapter questions go into ``chapters/hints/NN.md`` either way
(tools/hints.py), and the chapters' links to the answers point at the hints.  In the selected chapters every solution region of the
library becomes ``raise NotImplementedError("Exercise N.M — ...")`` and every
notebook's "your turn" regions (function bodies) become
``raise NotImplementedError("Your turn nbNN.M: ...")`` and its ``answer``
cells are blanked (outputs cleared).  Exercises of the chapters before the selected ones keep their
reference code, so a teacher can hand out one part at a time on top of working
earlier parts.

With ``--chapters`` (``CHAPTERS=1-3``) only those chapters' exercises are
*released*; the exercises of every later chapter are blanked too (*withheld*,
their stubs say "not released yet"), so the copy hands out no solution of a
chapter that is not released, and ``make test`` there runs the tests of the
chapters up to the last released one.  A later ``make student UPDATE=1
CHAPTERS=1-6 DEST=...`` releases more (tools/update_student.py).

The copy gets ``student.json`` (which exercises are blanked: the test runner's
progress table reads it), ``release.json`` (the release's version and the hash
of every file: tools/release.py), the README section "How to work through the
course", and a fresh git repository with one commit (unless ``--no-git``).
``--force`` replaces an existing copy only when it holds no work: no
uncommitted change and no answer (``--update`` keeps them instead).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):                       # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from tools import exercises, hints, redact, release, solutions  # noqa: E402
from tools.answers import written_exercises  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXCLUDED_PREFIXES = ("chapters/answers/",)
STUDENT_FILE = "student.json"


def tracked_files(root: Path) -> list[str]:
    """Paths (posix, relative) of the files git tracks or would track under ``root``."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=root, check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"make student: {root} must be a git checkout of minigrad "
                         f"(git ls-files failed: {e})") from None
    files = sorted({p for p in out.decode().split("\0") if p})
    return [p for p in files if (root / p).is_file() or (root / p).is_symlink()]


def _notebook_chapter(path: str) -> int | None:
    name = Path(path).name
    return int(name[:2]) if path.startswith("notebooks/") and name[:2].isdigit() else None


def write_student_copy(dest: Path, *, root: Path = ROOT, chapters: str | None = None,
                       only: list[str] | None = None, force: bool = False,
                       git: bool = True, link: bool = False, answers: bool = False) -> dict:
    """Write the student copy into ``dest``; return a summary dict.

    Args:
        chapters: which chapters to blank ("3-5", "1,3", "4-", None = all).
        only: blank exactly these exercise ids instead (the self-test's
            one-exercise copies); notebooks are then left as they are.
        force: replace ``dest`` if it exists.
        git: make the copy a fresh git repository with one commit.
        link: hard-link the unchanged files instead of copying them (fast, for
            throw-away copies only: editing a linked file edits the reference).
        answers: keep the reference answers to the chapter questions
            (``chapters/answers/``); without it the copy has only their hints.

    Raises:
        SystemExit: ``dest`` exists (without ``force``) or lies inside the
            reference's tracked tree, or CHAPTERS is malformed; RegionError
            (a ValueError) for malformed regions.
    """
    root, dest = Path(root).resolve(), Path(dest).resolve()
    if dest == root or root in dest.parents and not _ignored(root, dest):
        raise SystemExit(f"make student: DEST={dest} lies inside the reference tree; "
                         "choose a folder outside it or under build/")
    if dest.exists():
        if not force:
            raise SystemExit(f"make student: {dest} already exists; bring a new release "
                             "into it with UPDATE=1 (keeps the answers), or replace it "
                             "with FORCE=1")
        refuse_to_remove(dest)
        shutil.rmtree(dest)
    by_id = solutions.collect(root)
    released, withheld = select(by_id, chapters, only)
    blanked = sorted(released + withheld, key=exercises.sort_key)
    blank_chapters = set() if only is not None else {exercises.chapter_of(i) for i in blanked}
    regions_by_file: dict[str, list] = {}
    for ident in blanked:
        for region in by_id[ident]:
            regions_by_file.setdefault(region.path, []).append(region)

    def message(ident):
        later = f" (chapter {exercises.chapter_of(ident):02d} is not released yet)"
        return exercises.stub_message(root, ident) + (later if ident in withheld else "")

    counts = {"files": 0, "regions": 0, "notebook_regions": 0, "answer_cells": 0}
    for rel in tracked_files(root):
        if (rel.startswith(EXCLUDED_PREFIXES) and not answers) or rel == STUDENT_FILE \
                or rel.startswith(hints.HINTS_DIR + "/"):
            continue
        src, out = root / rel, dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        counts["files"] += 1
        if rel in regions_by_file:
            text = src.read_text(encoding="utf-8")
            out.write_text(solutions.blank_python(text, regions_by_file[rel], message),
                           encoding="utf-8")
            counts["regions"] += len(regions_by_file[rel])
        elif rel.endswith(".ipynb") and _notebook_chapter(rel) in blank_chapters:
            nb = json.loads(src.read_text(encoding="utf-8"))
            new, n_regions, n_answers = solutions.blank_notebook(nb, rel)
            if n_regions or n_answers:
                out.write_text(json.dumps(new, indent=1, ensure_ascii=False) + "\n",
                               encoding="utf-8")
                counts["notebook_regions"] += n_regions
                counts["answer_cells"] += n_answers
            else:
                _copy(src, out, link)
        elif rel == "README.md":
            out.write_text(_student_readme(src.read_text(encoding="utf-8"), released),
                           encoding="utf-8")
        else:
            _copy(src, out, link)
    counts["hint_pages"] = len(hints.write_hints(root, dest, answers=answers))
    counts["redacted_blocks"] = len(redact.redact(root, dest, blanked, answers=answers))
    summary = {"blanked": blanked,
               "titles": {i: exercises.EXERCISES.get(i, "") for i in blanked},
               "chapters": chapters or "all", "answers": answers, **counts}
    summary.update(released=released, withheld=withheld,
                   test_chapters=_test_chapters(released, only))
    (dest / STUDENT_FILE).write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    release.write_manifest(dest, root, chapters=summary["chapters"], released=released,
                           withheld=withheld)
    if git:
        _git_init(dest)
    return summary


def select(by_id, chapters: str | None, only) -> tuple[list[str], list[str]]:
    """(released, withheld) exercise ids.  Released: the exercises of CHAPTERS
    (all by default), the student's work.  Withheld: those of the chapters after
    the last released one, blanked too (a later release hands them out), so the
    copy holds no solution of a chapter not yet handed out.  Chapters before the
    first released one keep their reference code."""
    if only is not None:
        unknown = [i for i in only if i not in by_id]
        if unknown:
            raise SystemExit(f"make student: no region for exercise(s) {unknown}")
        return sorted(only, key=exercises.sort_key), []
    try:
        released = exercises.parse_selection(chapters, by_id)
        wanted = {exercises.chapter_of(i) for i in
                  exercises.parse_selection(chapters, exercises.EXERCISES)}
    except ValueError as e:
        raise SystemExit(f"make student: {e}") from None
    if not released:
        raise SystemExit(f"make student: CHAPTERS={chapters} selects no exercise; the "
                         "exercises are in chapters "
                         f"{_span({exercises.chapter_of(i) for i in by_id})}")
    last = max(wanted)
    withheld = [i for i in sorted(by_id, key=exercises.sort_key)
                if exercises.chapter_of(i) > last]
    return released, withheld


def _span(chapters) -> str:
    return f"{min(chapters)}-{max(chapters)}" if chapters else "(none)"


def _test_chapters(released, only) -> str | None:
    """The chapters ``make test`` runs in the copy by default: up to the last
    released one (None: all)."""
    if only is not None or not released:
        return None
    last = max(exercises.chapter_of(i) for i in released)
    every = max(exercises.chapter_of(i) for i in exercises.EXERCISES)
    return None if last >= every else f"0-{last}"


def refuse_to_remove(dest: Path) -> None:
    """SystemExit unless ``dest`` can be replaced without losing work: a git
    repository with uncommitted changes, or a copy whose exercise stubs the
    student has replaced, is kept."""
    reasons = []
    if (dest / ".git").exists():
        status = subprocess.run(["git", "status", "--porcelain"], cwd=dest,
                                capture_output=True, text=True)
        changed = [line for line in status.stdout.splitlines() if line.strip()]
        if status.returncode != 0:
            reasons.append(f"git status failed there ({status.stderr.strip()})")
        elif changed:
            reasons.append(f"{len(changed)} uncommitted change(s) (git status)")
    manifest = release.read_manifest(dest)
    if manifest is not None:
        written = written_exercises(dest, manifest)
        if written:
            reasons.append("answers to exercise(s) " + ", ".join(written))
    if reasons:
        raise SystemExit(f"make student: FORCE=1 will not remove {dest}: it holds "
                         + " and ".join(reasons) + ". Bring the new release in with "
                         "`make student UPDATE=1 DEST=...` (keeps the answers, backs up "
                         "what it replaces), or move the folder away yourself")


def _ignored(root: Path, path: Path) -> bool:
    """True when git ignores ``path`` (e.g. build/student inside the reference)."""
    result = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=root,
                            capture_output=True)
    return result.returncode == 0


def _copy(src: Path, out: Path, link: bool) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), out)
    elif link:
        try:
            os.link(src, out)
            return
        except OSError:
            shutil.copy2(src, out)
    else:
        shutil.copy2(src, out)


def _git_init(dest: Path) -> None:
    cmd = ["git", "-c", "user.name=minigrad", "-c", "user.email=student@minigrad.invalid",
           "-c", "commit.gpgsign=false"]
    try:
        subprocess.run(["git", "init", "-q"], cwd=dest, check=True, capture_output=True)
        subprocess.run(["git", "add", "-A"], cwd=dest, check=True, capture_output=True)
        subprocess.run(cmd + ["commit", "-q", "-m", "The course, exercises to do"],
                       cwd=dest, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"make student: note: no git repository made in {dest} ({e})",
              file=sys.stderr)


def _student_readme(text: str, blanked: list[str]) -> str:
    """The README with the section "How to work through the course" after the intro."""
    by_chapter: dict[int, list[str]] = {}
    for ident in blanked:
        by_chapter.setdefault(exercises.chapter_of(ident), []).append(ident)
    listing = "\n".join(
        f"* chapter {ch:02d}: " + ", ".join(by_chapter[ch]) for ch in sorted(by_chapter))
    section = f"""## How to work through the course

This is your copy of minigrad. Its library is complete except for the graded
exercises: in each one a function body (or its core lines) has been replaced by

```python
raise NotImplementedError("Exercise 3.2 — SGD: momentum and Nesterov: see chapters/03_optimizers.md#exercise-3.2")
```

Read the chapter the message points to, then replace the `raise` line with your
code. Find an exercise with `grep -rn "Exercise 3.2 " minigrad/`.

```bash
make test              # every test, then a progress table: passed / not started / failing
make test CHAPTER=3    # the tests of chapter 03 only
make check EX=3.2      # the tests that run exercise 3.2's code, up to its chapter
make demo              # the verification; it names the exercises it still needs
```

`make test` ends with a progress table and exits with status 0 exactly when
the table shows every exercise passed. An exercise is *passed* when every test
that runs its code passes (not only the tests named after it), *not started*
while its own stub still raises (the tests that need it are not run: they
would stop at the stub), *needs N.M* when its tests stop at the stub of
another exercise of its chapter or an earlier one (do that one too), *waits
for N.M* when your code works but some tests that also run an exercise of a
later chapter wait for that one, *failing*
when your code runs but gives a wrong result: the row names the first failing
test and its message, and *skipped* when every test of the row was skipped on
this machine (they compare with PyTorch or need a GPU, which it lacks): that
row counts as passed. `make check EX=N.M` runs the tests of that row (those of
its chapter and the earlier ones), shows the full tracebacks and ends with one
line for that exercise: *check passed* (every test of the row passes), *check
passed so far* (the tests that can run pass; the others also run an exercise
you have not started, which the line names: check again once it is done), or
*check failed* (what to fix). It exits 0 for the first two. Its table shows
only that exercise's row; `make test` shows every row.

Work through the chapters in order: later material builds on earlier exercises
(everything backpropagates through the chapter 01 functions), while the tests of
a chapter never depend on a later one.

The notebooks have "your turn" cells, each a function for you to complete: its
comment `# Your turn nb05.2: ...; expected ...` says what to write and what to
return, and until you do, its body raises that message and the next cell, which
calls it, stops there. "*Your answer:*" cells are for the written questions. They are not part of
`make test` in this copy (they would fail until you fill them in); run them
with `make jupyter` and check them with
`.venv/bin/python -m pytest --notebooks --nbval-lax --nbval-current-env notebooks/`
(`--notebooks`: in this copy the notebooks are collected only when asked).

Exercises to do in this copy:

{listing}

"""
    lines = text.splitlines(keepends=True)
    cut = next((i for i, line in enumerate(lines) if i > 0 and line.startswith("## ")),
               len(lines))
    return "".join(lines[:cut]) + section + "".join(lines[cut:])
