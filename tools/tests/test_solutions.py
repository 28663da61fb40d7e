"""The region parser, the blanking, the notebook stubs and the student copy."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import exercises, solutions
from tools.make_student import STUDENT_FILE, write_student_copy

ROOT = Path(__file__).resolve().parents[2]
IS_STUDENT_COPY = (ROOT / STUDENT_FILE).exists()

GOOD = '''\
def f(x):
    """Doc."""
    y = x + 1
    # BEGIN SOLUTION ch03.2
    z = y * 2
    if z > 3:
        z -= 1
    # END SOLUTION
    return z


class A:
    def g(self, v):
        for i in range(3):
            # BEGIN SOLUTION ch01.10
            v = v + i
            # END SOLUTION
        return v
'''


def test_regions_are_found_with_their_function():
    regions = solutions.find_regions(GOOD, "good.py")
    assert [(r.exercise_id, r.function, r.begin, r.end, r.indent) for r in regions] == [
        ("3.2", "f", 4, 8, "    "), ("1.10", "A.g", 15, 17, "            ")]


@pytest.mark.parametrize("source, error", [
    ("# BEGIN SOLUTION ch01.1\nx = 1\n# END SOLUTION\n", "not inside a function"),
    ("def f():\n    # BEGIN SOLUTION ch01.1\n    x = 1\n", "unterminated"),
    ("def f():\n    x = 1\n    # END SOLUTION\n", "without a BEGIN"),
    ("def f():\n    # BEGIN SOLUTION ch01.1\n    # BEGIN SOLUTION ch01.2\n    x = 1\n"
     "    # END SOLUTION\n    # END SOLUTION\n", "do not nest"),
    ("def f():\n    # BEGIN SOLUTION ch01.1\n    # END SOLUTION\n    x = 1\n", "empty"),
    ("def f():\n    #BEGIN SOLUTION 1.1\n    x = 1\n", "malformed marker"),
    ("def f(x):\n    if x:\n        # BEGIN SOLUTION ch01.1\n        y = 1\n    z = 2\n"
     "    # END SOLUTION\n", "whole statements of one block"),
    ("def f(x):\n    y = [1,\n    # BEGIN SOLUTION ch01.1\n         2]\n    # END SOLUTION\n",
     "whole statements"),
    ("def f(x):\n        # BEGIN SOLUTION ch01.1\n    y = 1\n    # END SOLUTION\n", "indented"),
])
def test_malformed_regions_are_errors(source, error):
    with pytest.raises(solutions.RegionError, match=error):
        solutions.find_regions(source, "bad.py")


def test_blanking_keeps_indentation_and_the_docstring_and_still_fails():
    regions = solutions.find_regions(GOOD, "good.py")
    out = solutions.blank_python(GOOD, regions, lambda i: f"Exercise {i} — t")
    assert "BEGIN SOLUTION" not in out and "z = y * 2" not in out and "v = v + i" not in out
    assert '    raise NotImplementedError("Exercise 3.2 — t")\n' in out
    assert '            raise NotImplementedError("Exercise 1.10 — t")\n' in out
    namespace = {}
    exec(compile(out, "blanked.py", "exec"), namespace)       # valid Python
    with pytest.raises(NotImplementedError, match="Exercise 3.2"):
        namespace["f"](1)                                      # a region mid-body still fails
    with pytest.raises(NotImplementedError, match="Exercise 1.10"):
        namespace["A"]().g(0)
    assert namespace["f"].__doc__ == "Doc."


def test_a_docstring_inside_the_region_is_kept():
    source = 'def f():\n    # BEGIN SOLUTION ch01.1\n    """Keep me."""\n    return 1\n' \
             '    # END SOLUTION\n'
    out = solutions.blank_python(source, solutions.find_regions(source), lambda i: "m")
    namespace = {}
    exec(out, namespace)
    assert namespace["f"].__doc__ == "Keep me."


def test_chapter_selection():
    known = ["1.1", "1.10", "2.3", "3.1", "3.2", "5.4", "9.1"]
    assert exercises.parse_selection("3-5", known) == ["3.1", "3.2", "5.4"]
    assert exercises.parse_selection("1,3", known) == ["1.1", "1.10", "3.1", "3.2"]
    assert exercises.parse_selection("5-", known) == ["5.4", "9.1"]
    assert exercises.parse_selection(None, known) == sorted(known, key=exercises.sort_key)
    for bad in ["x", "5-3", "3..5"]:
        with pytest.raises(ValueError):
            exercises.parse_selection(bad, known)


def test_notebook_blanking():
    nb = {"cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": 3, "outputs": [{"x": 1}],
         "source": "a = 1\n# Your turn nb04.1: twice a, and 3; expected a tuple of two ints\n"
                   "def pair(a):\n    # BEGIN SOLUTION nb04.1\n    result, other = a * 2, 3\n"
                   "    return result, other\n    # END SOLUTION\n"},
        {"cell_type": "code", "metadata": {}, "execution_count": 4, "outputs": [],
         "source": "result, other = pair(a)\nassert result == 2\n"},
        {"cell_type": "markdown", "metadata": {"tags": ["answer"]},
         "source": "Because the mean is over items."},
        {"cell_type": "markdown", "metadata": {}, "source": "Question?"},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    out, regions, answers = solutions.blank_notebook(nb, "nb.ipynb")
    assert (regions, answers) == (1, 1)
    code = out["cells"][0]["source"]
    assert "a * 2" not in code and "BEGIN SOLUTION" not in code
    assert ('    raise NotImplementedError("Your turn nb04.1: twice a, and 3; expected a '
            'tuple of two ints")') in code
    assert "# Your turn nb04.1: twice a, and 3; expected a tuple of two ints" in code
    assert out["cells"][0]["outputs"] == [] and out["cells"][0]["execution_count"] is None
    namespace = {}
    exec(code, namespace)                         # the stub's cell runs ...
    with pytest.raises(NotImplementedError, match=r"^Your turn nb04\.1: twice a"):
        exec(out["cells"][1]["source"], namespace)   # ... the cell that calls it fails
    assert out["cells"][2]["source"] == "*Your answer:*\n"
    assert "answer" not in out["cells"][2]["metadata"]["tags"]
    assert out["cells"][3]["source"] == "Question?"
    assert nb["cells"][2]["source"].startswith("Because"), "the input is not modified"


@pytest.mark.parametrize("source, complaint", [
    ("# Your turn nb04.1: x; expected an int\n# BEGIN SOLUTION nb04.1\nx = 1\n"
     "# END SOLUTION\n", "not inside a function body"),
    ("def f():\n    # BEGIN SOLUTION nb04.1\n    return 1\n    # END SOLUTION\n",
     "needs a comment '# Your turn nb04.1"),
    ("# Your turn nb04.1: one\ndef f():\n    # BEGIN SOLUTION nb04.1\n    return 1\n"
     "    # END SOLUTION\n", "expected <type and shape>"),
])
def test_a_notebook_region_is_a_function_body_with_its_task(source, complaint):
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                     "execution_count": None, "source": source}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    with pytest.raises(solutions.RegionError, match=re.escape(complaint)):
        solutions.blank_notebook(nb, "nb.ipynb")


@pytest.mark.skipif(IS_STUDENT_COPY, reason="the reference's regions (this is a student copy)")
def test_the_library_regions_match_the_exercise_table():
    errors, _ = solutions.check_tree(ROOT)
    assert errors == []
    assert len(solutions.collect(ROOT)) >= 45


@pytest.mark.skipif(IS_STUDENT_COPY, reason="needs the reference's regions")
def test_student_copy_has_no_answers(tmp_path):
    dest = tmp_path / "student"
    summary = write_student_copy(dest, root=ROOT, chapters="3-4", git=False, link=True)
    assert summary["released"] and all(i.split(".")[0] in ("3", "4") for i in summary["released"])
    assert set(summary["blanked"]) == set(summary["released"]) | set(summary["withheld"])
    assert summary["withheld"] and all(int(i.split(".")[0]) > 4 for i in summary["withheld"])
    assert not (dest / "chapters" / "answers").exists()
    assert not (dest / ".git").exists()
    blanked = {exercises.chapter_of(i) for i in summary["blanked"]}
    remaining = solutions.collect(dest)
    assert not set(remaining) & set(summary["blanked"]), "no solution region of a blanked chapter"
    assert {exercises.chapter_of(i) for i in remaining}.isdisjoint(blanked)
    assert json.loads((dest / STUDENT_FILE).read_text())["blanked"] == summary["blanked"]
    assert "## How to work through the course" in (dest / "README.md").read_text()
    stub = 'raise NotImplementedError("Exercise 3.2 — SGD: momentum and Nesterov: see chapters/'
    assert stub in (dest / "minigrad" / "optim" / "sgd.py").read_text()


@pytest.mark.skipif(IS_STUDENT_COPY, reason="needs the reference's regions")
def test_full_student_copy_has_no_solution_region_and_imports(tmp_path):
    dest = tmp_path / "student"
    write_student_copy(dest, root=ROOT, git=False, link=True)
    leftovers = [p for p in dest.rglob("*") if p.suffix in (".py", ".ipynb")
                 and "tools" not in p.relative_to(dest).parts
                 and "BEGIN SOLUTION" in p.read_text(encoding="utf-8")]
    assert leftovers == []
    assert not list(dest.glob("chapters/answers*"))
    for path in (dest / "notebooks").glob("*.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert not any("answer" in c.get("metadata", {}).get("tags", []) for c in nb["cells"])
    probe = subprocess.run([sys.executable, "-c", "import minigrad, minigrad.nn, "
                            "minigrad.optim, minigrad.experiments; print(minigrad.__file__)"],
                           cwd=dest, env={"PYTHONPATH": str(dest), "PATH": ""},
                           capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()).resolve().is_relative_to(dest.resolve())


def _tree(tmp_path, source, notebook=None):
    (tmp_path / "minigrad").mkdir()
    (tmp_path / "minigrad" / "m.py").write_text(source)
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "01_autograd.md").write_text(
        '<a id="exercise-1.1"></a>\n### Exercise 1.1 — t\n<a id="exercise-1.9"></a>\n')
    if notebook is not None:
        (tmp_path / "notebooks").mkdir()
        (tmp_path / "notebooks" / "04_x.ipynb").write_text(json.dumps(notebook))
    return tmp_path


def test_tree_check_matches_regions_table_and_anchors(tmp_path):
    source = "def f():\n    # BEGIN SOLUTION ch01.1\n    return 1\n    # END SOLUTION\n"
    root = _tree(tmp_path, source)
    errors, warnings = solutions.check_tree(root, {"1.1": "t", "1.2": "u"})
    assert any("1.2" in e and "no solution region" in e for e in errors)
    assert any("exercise-1.9" in e and "no exercise" in e for e in errors)
    assert any("exercise-1.2" in e and "no anchor" in e for e in errors)
    assert not any("exercise 1.1 " in e or "exercise-1.1" in e for e in errors)


def test_tree_check_of_notebook_regions(tmp_path):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": "# Your turn nb05.1: one; expected an int\ndef f():\n"
                      "    # BEGIN SOLUTION nb05.1\n    return 1\n    # END SOLUTION\n"}
    root = _tree(tmp_path, "def f():\n    return 1\n",
                 {"cells": [cell, dict(cell)], "metadata": {}, "nbformat": 4,
                  "nbformat_minor": 5})
    errors, _ = solutions.check_tree(root, {})
    assert any("appears twice" in e for e in errors)
    assert any("belongs to notebook 05" in e for e in errors)


@pytest.mark.skipif(IS_STUDENT_COPY, reason="needs the reference's regions")
def test_an_existing_destination_is_not_overwritten_without_force(tmp_path):
    (tmp_path / "student").mkdir()
    with pytest.raises(SystemExit, match="already exists"):
        write_student_copy(tmp_path / "student", root=ROOT, git=False)
