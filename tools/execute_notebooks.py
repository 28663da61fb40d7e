"""Execute notebooks in place so that an unchanged notebook gives an unchanged file.

``make notebooks`` runs this.  ``jupyter nbconvert --execute --inplace`` alone
rewrites every notebook on every run: each code cell gets execution
timestamps, the notebook records the exact Python version, and PNG figures
carry matplotlib's version string.  This script executes with the same
machinery (nbconvert's ExecutePreprocessor) and

* does not record cell timings (``record_timing=False``), and removes any
  ``execution`` timestamps a notebook already holds;
* drops ``metadata.language_info.version`` (the kernel's Python version);
* saves figures without the ``Software`` metadata entry (PNG) and with a
  fixed ``svg.hashsalt`` (SVG ids), so image bytes depend on the figure only;
* writes a notebook only when its bytes changed;
* runs the kernel with this interpreter (the venv's), whatever kernelspec
  named "python3" a user has installed elsewhere.

The kernel runs with ``MINIGRAD_RESULTS=write``: the numbers a notebook records
(``minigrad.experiments.results.record``) are written to
``notebooks/results/NN.json`` in the same run that saves its outputs.

Outputs themselves stay as the notebook computes them: printed numbers must
be deterministic (seeded, rounded) for the file to be stable.

Usage: ``python tools/execute_notebooks.py [--timeout S] NOTEBOOK...``
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbconvert.preprocessors import ExecutePreprocessor

#: Run in the kernel before the notebook's first cell; never saved in the file.
#: The inline backend's savefig arguments (IPython's defaults plus no
#: Software entry) and a fixed SVG id salt.
KERNEL_SETUP = """
import matplotlib as _mpl
_mpl.rcParams["svg.hashsalt"] = "minigrad"
try:
    _ip = get_ipython()
    _ip.run_line_magic("matplotlib", "inline")
    from matplotlib_inline.backend_inline import InlineBackend as _IB
    _IB.instance().print_figure_kwargs = {"bbox_inches": "tight",
                                          "metadata": {"Software": None}}
except Exception:
    pass
get_ipython().execution_count = 1    # the notebook's first cell is [1], as without this cell
del _mpl
"""


class StableExecutePreprocessor(ExecutePreprocessor):
    """ExecutePreprocessor that runs :data:`KERNEL_SETUP` first and records no timings."""

    def preprocess(self, nb, resources=None, km=None):
        setup = nbformat.v4.new_code_cell(KERNEL_SETUP)
        nb.cells.insert(0, setup)
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            nb.cells.remove(setup)
        return nb, resources


def strip_volatile(nb) -> None:
    """Remove what changes from run to run without the notebook changing."""
    nb.metadata.get("language_info", {}).pop("version", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)


def current_env_kernel(kernel_name: str = "python3") -> KernelManager:
    """A kernel manager that starts ``kernel_name`` with this interpreter (the
    one of .venv), not whichever Python a user-wide kernelspec names (as
    nbval's ``--nbval-current-env``)."""
    km = KernelManager(kernel_name=kernel_name)
    km.kernel_spec.argv = [sys.executable] + km.kernel_spec.argv[1:]
    return km


def execute(path: Path, timeout: int = 600, kernel_name: str = "python3") -> bool:
    """Execute ``path`` in its folder and rewrite it; return True when its bytes changed."""
    before = path.read_bytes()
    nb = nbformat.reads(before.decode("utf-8"), as_version=4)
    processor = StableExecutePreprocessor(timeout=timeout, kernel_name=kernel_name,
                                          record_timing=False)
    processor.preprocess(nb, {"metadata": {"path": str(path.parent)}},
                         km=current_env_kernel(kernel_name))
    strip_volatile(nb)
    after = nbformat.writes(nb).encode("utf-8")
    if not after.endswith(b"\n"):
        after += b"\n"
    if after == before:
        return False
    path.write_bytes(after)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds allowed per cell (default: 600)")
    args = parser.parse_args(argv)
    import os
    os.environ.setdefault("MINIGRAD_RESULTS", "write")    # the kernels inherit it
    for path in args.notebooks:
        changed = execute(path, args.timeout)
        print(f"{path}: {'rewritten' if changed else 'unchanged'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
