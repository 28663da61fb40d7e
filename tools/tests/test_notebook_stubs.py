"""A blanked notebook stops exactly where a "your turn" answer is first needed."""
import json
from pathlib import Path

import nbformat
import pytest

from tools import notebook_stubs, solutions
from tools.make_student import STUDENT_FILE

ROOT = Path(__file__).resolve().parents[2]
IS_STUDENT_COPY = (ROOT / STUDENT_FILE).exists()
needs_reference = pytest.mark.skipif(IS_STUDENT_COPY, reason="needs the reference's regions "
                                     "(this is a student copy)")


@needs_reference
@pytest.mark.parametrize("name", ["01_autograd.ipynb", "02_layers_and_losses.ipynb"])
def test_a_blanked_notebook_fails_only_at_the_cell_that_calls_each_stub(name):
    path = ROOT / "notebooks" / name
    reference = json.loads(path.read_text(encoding="utf-8"))
    regions = solutions.notebook_regions(reference, name)
    assert len(regions) == 2
    _, errors = notebook_stubs.execute_blanked(path, timeout=60)
    # Exactly one failing cell per region: the first code cell after the region's cell,
    # and its error is the stub's NotImplementedError naming the region and its task.
    expected = {}
    for index, marks in regions:
        after = next(j for j in range(index + 1, len(reference["cells"]))
                     if reference["cells"][j]["cell_type"] == "code")
        expected[after] = marks[0][0]
    assert sorted(errors) == sorted(expected), (errors, expected)
    for index, ident in expected.items():
        ename, evalue = errors[index]
        assert ename == "NotImplementedError", (index, ename, evalue)
        assert evalue.startswith(f"Your turn {ident}: ") and "; expected " in evalue, evalue
    assert notebook_stubs.check(path, errors=errors) == []


def _notebook(tmp_path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    path = tmp_path / "05_x.ipynb"
    nbformat.write(nb, path)
    return path


STUB_CELL = ("# Your turn nb05.1: twice x; expected an int\n"
             "def twice(x):\n    # BEGIN SOLUTION nb05.1\n    return 2 * x\n"
             "    # END SOLUTION\n")


def test_the_check_names_a_cell_that_fails_too_early_or_otherwise(tmp_path):
    # The stub's own cell calls the function: the notebook stops one cell early, and a
    # NameError (not the stub's message) stops a later cell.
    path = _notebook(tmp_path, STUB_CELL + "y = twice(1)\n", "assert twice(2) == 4\n",
                     "print(undefined_name)\n")
    problems = notebook_stubs.check(path, timeout=60)
    assert any("cell 0: fails before the first stub is called" in p for p in problems), problems
    assert any("cell 2: fails with NameError" in p for p in problems), problems
    # A stub whose next cell does not call it: that cell should have failed.
    path = _notebook(tmp_path, STUB_CELL, "z = 1\n", "assert twice(2) == 4\n")
    problems = notebook_stubs.check(path, timeout=60)
    assert any("cell 1: runs with nb05.1 blanked" in p for p in problems), problems
    # The right shape: only the next cell fails, with the stub's message.
    path = _notebook(tmp_path, STUB_CELL, "assert twice(2) == 4\n")
    assert notebook_stubs.check(path, timeout=60) == []
