"""The set-up: the Makefile's interpreter check and stale-venv rebuild, and
notebooks that re-execute to the same bytes (tools/execute_notebooks.py)."""
from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def fake_python(path: Path, version: str) -> Path:
    """An executable that answers every ``-c`` call with ``version`` (the
    Makefile asks the interpreter only for its version before building)."""
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def project_copy(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


@needs_make
def test_make_refuses_an_old_python_before_building(tmp_path):
    project = project_copy(tmp_path)
    old = fake_python(tmp_path / "python3.9", "3.9.18")
    done = subprocess.run(["make", "-C", str(project), "venv", f"PYTHON={old}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"needs Python >= 3.10, but '{old}' is Python 3.9.18" in done.stderr
    assert not (project / ".venv").exists()           # nothing was built
    done = subprocess.run(["make", "-C", str(project), "venv", "PYTHON=no-such-python"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "'no-such-python' was not found" in done.stderr


@needs_make
def test_make_removes_a_venv_built_by_another_python(tmp_path):
    project = project_copy(tmp_path)
    (project / ".venv" / "bin").mkdir(parents=True)
    fake_python(project / ".venv" / "bin" / "python", "3.9.18")
    (project / ".venv" / ".installed-python3.9.18").touch()
    done = subprocess.run(["make", "-C", str(project), "check-python",
                           f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "was built by another Python; removing it" in done.stdout
    assert not (project / ".venv").exists()
    # the stamp names the interpreter's version, so another Python rebuilds
    dry = subprocess.run(["make", "-C", str(project), "-n", "venv", f"PYTHON={sys.executable}"],
                         capture_output=True, text=True, timeout=60)
    version = "%d.%d.%d" % sys.version_info[:3]
    assert f".installed-python{version}" in dry.stdout


@needs_make
def test_a_venv_of_the_same_python_is_kept(tmp_path):
    project = project_copy(tmp_path)
    (project / ".venv" / "bin").mkdir(parents=True)
    version = "%d.%d.%d" % sys.version_info[:3]
    fake_python(project / ".venv" / "bin" / "python", version)
    done = subprocess.run(["make", "-C", str(project), "check-python",
                           f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "removing" not in done.stdout
    assert (project / ".venv").exists()


def test_an_unchanged_notebook_reexecutes_to_the_same_bytes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbconvert")
    pytest.importorskip("matplotlib")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import execute_notebooks
    finally:
        sys.path.remove(str(ROOT / "tools"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import numpy as np\nimport matplotlib.pyplot as plt\n"
                                          "print(np.round(np.random.default_rng(0).random(3), 6))"),
                nbformat.v4.new_code_cell("fig, ax = plt.subplots(figsize=(2, 1.5))\n"
                                          "ax.plot([0, 1, 2], [1, 0, 2])\nplt.show()")]
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                 "name": "python3"}
    nb.cells[0].metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    path = tmp_path / "small.ipynb"
    nbformat.write(nb, path)

    assert execute_notebooks.execute(path, timeout=120) is True      # outputs added
    first = path.read_bytes()
    assert execute_notebooks.execute(path, timeout=120) is False     # same bytes again
    assert path.read_bytes() == first
    executed = nbformat.reads(first.decode(), as_version=4)
    assert [c.execution_count for c in executed.cells] == [1, 2]
    assert all("execution" not in c.metadata for c in executed.cells)
    assert "version" not in executed.metadata.get("language_info", {})
    outputs = executed.cells[1].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)    # the figure is kept
