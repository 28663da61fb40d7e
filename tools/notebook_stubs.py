"""Run a notebook with its "your turn" regions blanked, and check where it fails.

In the student copy each notebook region (a function body, ``# BEGIN SOLUTION
nb05.2`` … ``# END SOLUTION``) is ``raise NotImplementedError("Your turn
nb05.2: ...")`` (tools/solutions.py).  The cell that defines the function runs;
the next code cell calls it and must be where the notebook first fails, with
that message.  :func:`check` executes the blanked notebook against the
reference library, every cell even after an error (``allow_errors``), and
names every cell that fails otherwise: earlier, with another error, or not at
all after a stub.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import solutions


def expected_failures(nb: dict, path: str = "<notebook>") -> dict[int, str]:
    """Cell index -> region id: the first code cell after each region's cell
    (the one that calls the blanked function and must fail with its message)."""
    cells = nb["cells"]
    out = {}
    for index, marks in solutions.notebook_regions(nb, path):
        after = next((j for j in range(index + 1, len(cells))
                      if cells[j]["cell_type"] == "code"), None)
        if after is None:
            raise solutions.RegionError(f"{path} cell {index}: no code cell after the "
                                        f"region {marks[0][0]} calls it")
        for ident, *_ in marks:
            out.setdefault(after, ident)
    return out


def execute_blanked(path: Path, timeout: int = 120) -> tuple[dict, dict[int, tuple[str, str]]]:
    """Execute ``path`` with every region blanked, in its folder, with this
    interpreter; return (the blanked notebook as run, cell index -> (error
    name, error value) for every cell that raised)."""
    import nbformat
    from nbclient import NotebookClient

    from .execute_notebooks import current_env_kernel

    path = Path(path)
    reference = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    blanked, _, _ = solutions.blank_notebook(reference, str(path))
    nb = nbformat.from_dict(blanked)
    client = NotebookClient(nb, timeout=timeout, allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}},
                            km=current_env_kernel())
    client.execute()
    errors = {}
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") == "error":
                errors[index] = (output["ename"], output["evalue"])
    return nb, errors


def check(path: Path, timeout: int = 120, errors: dict | None = None) -> list[str]:
    """What is wrong with the blanked ``path``: [] when it fails exactly at the
    cell after each stub with that stub's "Your turn" NotImplementedError, and
    anywhere else only with such an error (a later cell that calls a stub).
    ``errors``: the result of :func:`execute_blanked`, if already run."""
    path = Path(path)
    reference = json.loads(path.read_text(encoding="utf-8"))
    expected = expected_failures(reference, str(path))
    if errors is None:
        _, errors = execute_blanked(path, timeout)
    problems = []
    for index, ident in sorted(expected.items()):
        got = errors.get(index)
        if got is None:
            problems.append(f"{path.name} cell {index}: runs with {ident} blanked; it should "
                            f"fail with NotImplementedError('Your turn {ident}: ...')")
        elif got[0] != "NotImplementedError" or not got[1].startswith(f"Your turn {ident}:"):
            problems.append(f"{path.name} cell {index}: fails with {got[0]}: {got[1][:200]}, "
                            f"not with the stub of {ident}")
    for index, (ename, evalue) in sorted(errors.items()):
        if index in expected or index < min(expected, default=len(reference["cells"])):
            continue
        if ename != "NotImplementedError" or not evalue.startswith("Your turn nb"):
            problems.append(f"{path.name} cell {index}: fails with {ename}: {evalue[:200]} "
                            "(only a \"Your turn\" stub may stop a blanked notebook)")
    first = min(expected, default=len(reference["cells"]))
    problems += [f"{path.name} cell {i}: fails before the first stub is called (cell {first})"
                 for i in sorted(errors) if i < first]
    return problems


def main(argv=None) -> int:
    """``python -m tools.notebook_stubs NOTEBOOK...``: check each blanked notebook."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.notebook_stubs",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    args = parser.parse_args(argv)
    problems = []
    for path in args.notebooks:
        found = check(path, args.timeout)
        problems += found
        print(f"{path}: " + ("stops only at its stubs" if not found else
                             f"{len(found)} problem(s)"), flush=True)
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
