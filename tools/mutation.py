"""``make mutants [EX=1.13,4.3]``: does each exercise's check catch plausible mistakes?

The catalogue ``tools/mutants/*.json`` lists, per exercise, mistakes students
make (a dropped edge-case branch, a wrong axis, a missing normalization, a
wrong dtype, an ignored option), each as text replacements inside the
exercise's solution regions::

    {"exercise": "1.13", "name": "argsort-without-normalizing",
     "description": "...", "replace": [["old text", "new text"], ...],
     "equivalent": "why no test can tell it apart (optional)"}

Each ``old`` must occur exactly once in the exercise's regions.  For every
mutant the tool copies the repository's tracked files into a temporary folder,
applies the replacements there, and runs exactly what ``make check EX=N.M``
runs (``pytest tests -q --ignore=tests/site --exercise N.M --whole-exercise``, that copy first
on the path), with PyTorch hidden even where it is installed (a ``torch`` package
first on the path whose import raises ``ModuleNotFoundError``: the parity tests skip, as
on a student's machine; ``--with-torch`` lets them run).  A mutant is *killed* when that run fails, *survived* when it
passes.  An equivalent mutant is run too, and reported apart: it should
survive, and a kill means its "equivalent" note is wrong.  The reference
itself is run first: it must pass.

Prints one line per mutant and a table per exercise; ``--json PATH`` writes
the results.  Exit status 1 when a non-equivalent mutant survives (or no
longer applies: its text is not in the regions any more).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):                       # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from tools import exercises, solutions  # noqa: E402
from tools.make_student import tracked_files  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "tools" / "mutants"


def catalogue(folder: Path = CATALOGUE) -> list[dict]:
    """Every mutant of ``folder/*.json``, checked for its fields."""
    found = []
    for path in sorted(folder.glob("*.json")):
        for mutant in json.loads(path.read_text(encoding="utf-8")):
            missing = {"exercise", "name", "description", "replace"} - set(mutant)
            if missing or mutant["exercise"] not in exercises.EXERCISES:
                raise ValueError(f"{path.name}: mutant {mutant.get('name')!r}: missing "
                                 f"{sorted(missing)} or unknown exercise "
                                 f"{mutant.get('exercise')!r}")
            found.append(dict(mutant, file=path.name))
    return found


def apply(root: Path, mutant: dict, regions) -> list[str]:
    """Apply ``mutant`` to the files under ``root``; returns the files changed.
    ValueError when a replacement's text is not found exactly once in the
    exercise's regions (``regions``: their lines in the files as they are)."""
    texts = {r.path: (root / r.path).read_text(encoding="utf-8") for r in regions}
    edits = {path: [] for path in texts}           # path -> [(at, old, new)]
    for old, new in mutant["replace"]:
        hits = []
        for region in regions:
            text = texts[region.path]
            lines = text.splitlines(keepends=True)
            start = sum(len(line) for line in lines[:region.begin])
            stop = sum(len(line) for line in lines[:region.end - 1])
            at = text.find(old, start, stop)
            while at != -1:
                hits.append((region.path, at))
                at = text.find(old, at + 1, stop)
        if len(hits) != 1:
            raise ValueError(f"mutant {mutant['name']} ({mutant['exercise']}): {old!r} "
                             f"occurs {len(hits)} times in the exercise's regions, not once")
        path, at = hits[0]
        edits[path].append((at, old, new))
    changed = []
    for path, found in edits.items():
        if not found:
            continue
        text = texts[path]
        for at, old, new in sorted(found, reverse=True):     # later ones first
            text = text[:at] + new + text[at + len(old):]
        (root / path).write_text(text, encoding="utf-8")
        changed.append(path)
    return sorted(changed)


def check_command(ident: str) -> list[str]:
    """What ``make check EX=ident`` runs (the Makefile's ``check`` target)."""
    return [sys.executable, "-m", "pytest", "tests", "-q", "--ignore=tests/site",
            "--exercise", ident, "--whole-exercise", "-p", "no:cacheprovider"]


def hide_torch(folder: Path) -> Path:
    """A folder holding a ``torch`` package whose import fails as if PyTorch were
    not installed: ``ModuleNotFoundError`` (``pytest.importorskip("torch")``
    then skips; a plain ImportError would be an error there)."""
    package = folder / "torch"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(
        'raise ModuleNotFoundError("PyTorch is hidden by make mutants (the grade without '
        'it)", name="torch")\n',
        encoding="utf-8")
    return folder


def run_check(copy: Path, ident: str, timeout: float,
              hidden: Path | None = None) -> tuple[str, str]:
    path = [str(copy)] + ([str(hidden)] if hidden else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), MPLBACKEND="Agg",
               PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(check_command(ident), cwd=copy, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "killed", "time limit"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else done.stderr.strip()[-200:]
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    return ("killed" if done.returncode else "survived"), (failed[0] if failed else summary)


def run(idents, *, timeout: float = 300, out=sys.stdout, torch: bool = False) -> list[dict]:
    mutants = [m for m in catalogue() if m["exercise"] in idents]
    regions = solutions.collect(ROOT)
    results = []
    with tempfile.TemporaryDirectory(prefix="minigrad-mutants-") as tmp:
        copy = Path(tmp) / "tree"
        hidden = None if torch else hide_torch(Path(tmp) / "no-torch")
        for rel in tracked_files(ROOT):
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, copy / rel)
        for ident in idents:
            start = time.monotonic()
            verdict, detail = run_check(copy, ident, timeout, hidden)
            print(f"{ident:6} reference                        "
                  f"{'passes' if verdict == 'survived' else 'FAILS: ' + detail}", file=out,
                  flush=True)
            for mutant in (m for m in mutants if m["exercise"] == ident):
                try:
                    changed = apply(copy, mutant, regions[ident])
                except ValueError as e:         # the catalogue no longer fits the code
                    verdict, detail, changed = "invalid", str(e), []
                else:
                    try:
                        verdict, detail = run_check(copy, ident, timeout, hidden)
                    finally:
                        for rel in changed:
                            shutil.copy2(ROOT / rel, copy / rel)
                result = dict(exercise=ident, name=mutant["name"], verdict=verdict,
                              equivalent=mutant.get("equivalent"), detail=detail,
                              description=mutant["description"])
                results.append(result)
                print(f"{ident:6} {mutant['name']:32} {verdict:8}"
                      f"{' (equivalent)' if mutant.get('equivalent') else ''}  {detail[:110]}",
                      file=out, flush=True)
            print(f"{ident:6} {time.monotonic() - start:.0f} s", file=out, flush=True)
    return results


def table(results) -> str:
    rows = ["| exercise | mutants | killed | survived | equivalent (survived) |",
            "|---|---|---|---|---|"]
    for ident in sorted({r["exercise"] for r in results}, key=exercises.sort_key):
        mine = [r for r in results if r["exercise"] == ident]
        real = [r for r in mine if not r["equivalent"]]
        killed = sum(r["verdict"] == "killed" for r in real)
        eq = [r for r in mine if r["equivalent"]]
        rows.append(f"| {ident} | {len(real)} | {killed} | {len(real) - killed} | "
                    f"{len(eq)} ({sum(r['verdict'] == 'survived' for r in eq)}) |")
    return "\n".join(rows)


def markdown(results) -> str:
    """The report: the table, then each mutant with its verdict and the first
    test that failed (or, for an equivalent one, why it cannot fail)."""
    lines = ["# Mutants of the exercises", "",
             "Written by `make mutants` (`python tools/mutation.py --markdown ...`), "
             "without PyTorch: each mutant of `tools/mutants/*.json` applied alone to a "
             "copy and run through what `make check EX=N.M` runs.", "", table(results), "",
             "| exercise | mutant | verdict | first failing test, or why it is equivalent |",
             "|---|---|---|---|"]
    for r in results:
        why = r["equivalent"] or r["detail"].replace("FAILED ", "")
        lines.append(f"| {r['exercise']} | {r['name']}: {r['description']} | "
                     f"{r['verdict']}{' (equivalent)' if r['equivalent'] else ''} | "
                     f"{why.replace('|', '/')[:160]} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make mutants", description=__doc__.split("\n")[0])
    parser.add_argument("--exercises", default=None,
                        help="1.13,4.3 (default: every exercise of the catalogue)")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--markdown", default=None,
                        help="write the table and every mutant's verdict to this file")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per check run")
    parser.add_argument("--with-torch", action="store_true",
                        help="let the PyTorch comparisons run where PyTorch is installed "
                             "(by default it is hidden: the grade without it)")
    args = parser.parse_args(argv)
    known = sorted({m["exercise"] for m in catalogue()}, key=exercises.sort_key)
    idents = [i.strip() for i in args.exercises.split(",")] if args.exercises else known
    unknown = [i for i in idents if i not in exercises.EXERCISES]
    if unknown:
        raise SystemExit(f"make mutants: unknown exercise(s) {', '.join(unknown)}")
    results = run(idents, timeout=args.timeout, torch=args.with_torch)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(markdown(results), encoding="utf-8")
    survived = [r for r in results if r["verdict"] in ("survived", "invalid")
                and not r["equivalent"]]
    wrong = [r for r in results if r["verdict"] == "killed" and r["equivalent"]]
    return 1 if survived or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
