"""``make student``: the command line of the student copy.

Without ``--update`` it writes a new copy (tools/make_student.py); with
``--update`` (``UPDATE=1``) it brings this release into an existing copy and
keeps the student's answers (tools/update_student.py).

    .venv/bin/python tools/student.py --dest build/student --chapters 1-3
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):                       # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from tools import make_student, update_student  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make student",
                                     description=make_student.__doc__.split("\n")[0])
    parser.add_argument("--dest", default=str(make_student.ROOT / "build" / "student"),
                        help="where to write the copy (default: build/student)")
    parser.add_argument("--chapters", default=None,
                        help="chapters whose exercises are blanked: 3-5, 1,3, 4- "
                             "(default: all)")
    parser.add_argument("--only", default=None,
                        help="blank exactly these exercise ids (comma-separated)")
    parser.add_argument("--force", action="store_true",
                        help="replace DEST if it exists (refused when it holds work)")
    parser.add_argument("--update", action="store_true",
                        help="bring this release into the existing copy DEST, keeping "
                             "the student's answers (tools/update_student.py)")
    parser.add_argument("--answers", action="store_true",
                        help="keep the reference answers to the chapter questions "
                             "(chapters/answers/); without it the copy has their hints only")
    parser.add_argument("--no-git", action="store_true", help="do not git-init the copy")
    parser.add_argument("--link", action="store_true",
                        help="hard-link unchanged files (throw-away copies only)")
    args = parser.parse_args(argv)
    only = [i.strip() for i in args.only.split(",")] if args.only else None
    if args.update:
        report = update_student.update(Path(args.dest), root=make_student.ROOT,
                                       chapters=args.chapters,
                                       answers=True if args.answers else None)
        print(report.text())
        return 1 if report.conflicts else 0
    summary = make_student.write_student_copy(Path(args.dest), chapters=args.chapters,
                                              only=only, force=args.force,
                                              git=not args.no_git, link=args.link,
                                              answers=args.answers)
    print(f"make student: wrote {args.dest}: {summary['files']} files, "
          f"{len(summary['blanked'])} exercises blanked ({summary['regions']} regions; "
          f"{len(summary['released'])} released, {len(summary['withheld'])} withheld "
          "until their chapter is released), "
          f"{summary['notebook_regions']} notebook regions, {summary['answer_cells']} "
          f"answer cells, {summary['hint_pages']} pages of hints; "
          + ("with the answers to the questions" if args.answers else "no answer keys")
          + ", no history of the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
