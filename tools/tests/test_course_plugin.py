"""The pytest plugin's chapter mapping and progress classification."""
import subprocess
import sys
import textwrap
from pathlib import Path

from tools.course_plugin import chapter_of_nodeid, exercise_status

PATHS = {"tests/nn/": 2, "tests/nn/test_batchnorm.py": 2, "tests/optim/": 3,
         "tests/optim/test_accumulation.py": 4}
TESTS = {"tests/nn/test_batchnorm.py::test_merged": 6}


def test_chapter_of_a_test_is_its_longest_match_or_override():
    assert chapter_of_nodeid("tests/optim/test_sgd.py::test_x", PATHS, TESTS) == 3
    assert chapter_of_nodeid("tests/optim/test_accumulation.py::test_y[1-2]", PATHS, TESTS) == 4
    assert chapter_of_nodeid("tests/nn/test_batchnorm.py::test_merged[cpu]", PATHS, TESTS) == 6
    assert chapter_of_nodeid("tests/nn/test_batchnorm.py::test_other", PATHS, TESTS) == 2
    assert chapter_of_nodeid("notebooks/05_normalization_pitfalls.ipynb::Cell 3", PATHS,
                             TESTS) == 5
    assert chapter_of_nodeid("tests/test_new.py::test_z", PATHS, TESTS) is None


def test_progress_status():
    stubs = {"3.2"}
    assert exercise_status("3.1", [("passed", None), ("skipped", None)], stubs) == "passed"
    assert exercise_status("3.2", [("failed", "3.2"), ("passed", None)], stubs) == "not started"
    assert exercise_status("3.3", [("failed", "3.2")], stubs) == "needs 3.2"
    assert exercise_status("3.3", [("failed", None)], stubs) == "failing"
    assert exercise_status("9.2", [("skipped", None)], stubs) == "skipped"
    # done, but a test that also runs a later exercise stops at that one's stub
    assert exercise_status("3.1", [("passed", None), ("failed", "4.1")], stubs) == \
        "waits for 4.1"


def _student_skeleton(tmp_path) -> None:
    """What marks a student tree: student.json, the course plugin, tests/ with
    its chapter table, and an empty minigrad package."""
    (tmp_path / "student.json").write_text("{}")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tools.course_plugin"]\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "chapters.py").write_text('PATHS = {"tests/": 1}\nTESTS = {}\n')
    (tmp_path / "minigrad").mkdir()


def _tiny_tree(tmp_path, tests: str, mapping: dict) -> Path:
    """A student tree: tools copied (with its own dependency map), one test file."""
    import json
    import shutil
    root = Path(__file__).resolve().parents[2]
    _student_skeleton(tmp_path)
    shutil.copytree(root / "tools", tmp_path / "tools",
                    ignore=shutil.ignore_patterns("tests", "__pycache__", "*.json"))
    (tmp_path / "tools" / "dependencies.json").write_text(json.dumps({"tests": mapping}))
    (tmp_path / "minigrad" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_x.py").write_text(textwrap.dedent(tests))
    return tmp_path


def _run(tree: Path, *args: str):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests", *args], cwd=tree, env={"PYTHONPATH": str(tree), "PATH": ""},
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout


def test_an_exercise_passes_only_when_every_test_running_its_code_passes(tmp_path):
    """1.1's own test passes, but an unmarked test that runs 1.1's region
    (tools/dependencies.json) fails: 1.1 is failing, named with that test."""
    tree = _tiny_tree(tmp_path, '''
        import pytest

        @pytest.mark.exercise("1.1")
        def test_add():
            assert 1 + 1 == 2

        def test_add_at_zero():
            assert 0 + 0 == 1, "adding zeros gives 1"
    ''', {"tests/test_x.py::test_add_at_zero": ["1.1"]})
    code, out = _run(tree)
    assert code == 1, out
    row = next(line for line in out.splitlines() if line.startswith("1.1 "))
    assert "1/2  failing: tests/test_x.py::test_add_at_zero: AssertionError: adding zeros " \
        "gives 1" in row, out
    assert out.rstrip().splitlines()[-1].startswith("1 failing"), out   # the table is last


def test_make_check_runs_every_test_of_the_exercise_in_its_chapter(tmp_path):
    """``--exercise 1.1`` alone runs the test marked 1.1, which passes; with
    ``--whole-exercise`` (``make check``) it also runs the chapter-1 test that
    runs 1.1's code and fails, so the check agrees with 1.1's table row.  A
    chapter-2 test that runs 1.1's code is later material: not selected."""
    tree = _tiny_tree(tmp_path, '''
        import pytest

        @pytest.mark.exercise("1.1")
        def test_add():
            assert 1 + 1 == 2

        def test_add_broadcast():
            assert (1, 3) == (3,), "the gradient keeps the broadcast shape"
    ''', {"tests/test_x.py::test_add_broadcast": ["1.1"],
          "tests/test_y.py::test_later": ["1.1"]})
    (tree / "tests" / "chapters.py").write_text(
        'PATHS = {"tests/": 1, "tests/test_y.py": 2}\nTESTS = {}\n')
    (tree / "tests" / "test_y.py").write_text(
        "def test_later():\n    raise AssertionError('a chapter-2 test must not run')\n")
    code, out = _run(tree, "--exercise", "1.1")
    assert code == 0 and out.rstrip().endswith("1 passed; every exercise passed"), out
    code, out = _run(tree, "--exercise", "1.1", "--whole-exercise")
    assert code == 1, out
    assert "chapter-2 test must not run" not in out
    row = next(line for line in out.splitlines() if line.startswith("1.1 "))
    assert "1/2  failing: tests/test_x.py::test_add_broadcast" in row, out


def test_green_table_exactly_when_the_run_passes(tmp_path):
    tree = _tiny_tree(tmp_path, '''
        import pytest

        @pytest.mark.exercise("1.1")
        def test_add():
            assert 1 + 1 == 2

        def test_data():
            assert False, "a test of no exercise"
    ''', {})
    code, out = _run(tree)
    assert code == 1 and "1 failing test(s) of no exercise: tests/test_x.py::test_data" in out
    assert "every exercise passed" not in out
    (tree / "tests" / "test_x.py").write_text("def test_data():\n    assert True\n\n"
                                             "import pytest\n\n@pytest.mark.exercise('1.1')\n"
                                             "def test_add():\n    assert True\n")
    code, out = _run(tree)
    assert code == 0 and out.rstrip().endswith("1 passed; every exercise passed"), out


def test_progress_table_in_a_student_tree(tmp_path):
    """A tiny tree with student.json: the table names each exercise's state and the
    exit status is non-zero while one is not done."""
    root = Path(__file__).resolve().parents[2]
    _student_skeleton(tmp_path)
    (tmp_path / "tools").symlink_to(root / "tools")
    (tmp_path / "minigrad" / "__init__.py").write_text(
        'def mul():\n    raise NotImplementedError("Exercise 1.2 — Mul.backward: the '
        'product rule: see x")\n')
    (tmp_path / "tests" / "test_x.py").write_text(textwrap.dedent('''
        import pytest
        import minigrad

        @pytest.mark.exercise("1.1")
        def test_add():
            assert 1 + 1 == 2

        @pytest.mark.exercise("1.2")
        def test_mul():
            minigrad.mul()

        @pytest.mark.exercise("1.3")
        def test_div():
            assert 1 / 2 == 0.4, "the quotient is wrong"
    '''))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests", "--strict-markers"], cwd=tmp_path,
                          env={"PYTHONPATH": str(tmp_path), "PATH": ""},
                          capture_output=True, text=True)
    out = proc.stdout
    assert proc.returncode != 0, out
    lines = {line.split()[0]: line for line in out.splitlines()
             if line[:3] in ("1.1", "1.2", "1.3")}
    assert lines["1.1"].rstrip().endswith("passed"), out
    assert lines["1.2"].rstrip().endswith("not started"), out
    assert "failing: tests/test_x.py::test_div: AssertionError: the quotient is wrong" \
        in lines["1.3"], out


def test_tests_of_an_exercise_not_started_are_held_back_and_fail_the_run(tmp_path):
    """A test that runs the region of an exercise whose stub is still there is
    not run; the table counts it, and the exit status is 1."""
    tree = _tiny_tree(tmp_path, '''
        import pytest

        def test_uses_mul():
            raise AssertionError("this test must not run")

        @pytest.mark.exercise("1.1")
        def test_add():
            assert True
    ''', {"tests/test_x.py::test_uses_mul": ["1.2"]})
    (tree / "minigrad" / "__init__.py").write_text(
        'def mul():\n    raise NotImplementedError("Exercise 1.2 — Mul.backward: the '
        'product rule: see x")\n')
    code, out = _run(tree)
    assert code == 1, out
    assert "must not run" not in out
    assert "1 tests not run: they need exercises not started" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:3] in ("1.1", "1.2")}
    assert rows["1.1"].rstrip().endswith("passed") and rows["1.2"].rstrip().endswith(
        "not started"), out


def test_make_check_says_passed_so_far_while_its_other_tests_wait(tmp_path):
    """``make check EX=1.1``: 1.1's own tests pass and one more waits for 1.2's
    stub.  The check shows 1.1's row only, ends with "check passed so far"
    naming 1.2, and exits 0; once 1.1's test fails it says "check failed"
    and exits 1."""
    tree = _tiny_tree(tmp_path, '''
        import pytest

        def test_uses_mul():
            raise AssertionError("this test must not run")

        @pytest.mark.exercise("1.1")
        def test_add():
            assert True

        @pytest.mark.exercise("1.3")
        def test_div():
            assert True
    ''', {"tests/test_x.py::test_uses_mul": ["1.1", "1.2"]})
    (tree / "minigrad" / "__init__.py").write_text(
        'def mul():\n    raise NotImplementedError("Exercise 1.2 — Mul.backward: the '
        'product rule: see x")\n')
    code, out = _run(tree, "--exercise", "1.1", "--whole-exercise")
    last = out.rstrip().splitlines()[-1]
    assert code == 0, out
    assert last == ("1.1: no failure so far (1 of its 2 tests pass; the other 1 also run "
                    "1.2, not started: do that, then check 1.1 again) — check passed so far"), out
    assert not any(line.startswith(("1.2 ", "1.3 ")) for line in out.splitlines()), out
    text = (tree / "tests" / "test_x.py").read_text()
    (tree / "tests" / "test_x.py").write_text(
        text.replace("def test_add():\n    assert True", "def test_add():\n    assert 0"))
    code, out = _run(tree, "--exercise", "1.1", "--whole-exercise")
    assert code == 1 and out.rstrip().endswith("— check failed"), out
    assert "1.1 failing: tests/test_x.py::test_add" in out.rstrip().splitlines()[-1], out


def test_a_chapter_that_does_not_exist_is_an_error_naming_the_chapters(tmp_path):
    tree = _tiny_tree(tmp_path, "def test_x():\n    assert True\n", {})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests", "--chapter", "15"], cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": ""},
                          capture_output=True, text=True)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "CHAPTER=15: there is no such chapter; the chapters are 0-14" in proc.stderr


def test_a_later_chapters_test_does_not_change_an_exercises_verdict(tmp_path):
    """A chapter-2 test that runs 1.1's code and fails counts for chapter 2's
    exercises, not for 1.1: 1.1's row passes whether chapter 2 runs with it or
    not, in make test's table as in make check and in make grade's log
    (tools/grade_plugin.py), so no verdict depends on what is graded with it."""
    tree = _tiny_tree(tmp_path, '''
        import pytest

        @pytest.mark.exercise("1.1")
        def test_add():
            assert 1 + 1 == 2
    ''', {"tests/test_y.py::test_later": ["1.1", "2.1"]})
    (tree / "tests" / "chapters.py").write_text(
        'PATHS = {"tests/": 1, "tests/test_y.py": 2}\nTESTS = {}\n')
    (tree / "tests" / "test_y.py").write_text(
        "def test_later():\n    raise AssertionError('2.1 is wrong')\n")
    rows = {}
    for chapters in ("1", "1-2"):
        code, out = _run(tree, "--chapter", chapters)
        rows[chapters] = next(line for line in out.splitlines() if line.startswith("1.1 "))
        assert "passed" in rows[chapters], out
    code, out = _run(tree, "--chapter", "1-2")
    assert "failing: tests/test_y.py::test_later" in next(
        line for line in out.splitlines() if line.startswith("2.1 ")), out
    log = tmp_path / "grade.jsonl"
    _run(tree, "--chapter", "1-2", "-p", "tools.grade_plugin", "--grade-log", str(log))
    import json
    collected = {t["nodeid"]: t["exercises"] for t in
                 json.loads(log.read_text().splitlines()[0])["collected"]}
    assert collected["tests/test_y.py::test_later"] == ["2.1"], collected


def test_a_notebook_cells_failure_is_named_by_its_exception_without_color_codes():
    from types import SimpleNamespace

    from tools.course_plugin import _first_diagnostic, _stub_in_failure
    text = ("\x1b[91mNotebook cell execution failed\x1b[0m\n\x1b[94mCell 4: Cell execution "
            "caused an exception\n\x1b[31mNotImplementedError\x1b[39m: Your turn nb01.1: "
            "write it; expected a float\n")
    report = SimpleNamespace(nodeid="notebooks/01_autograd.ipynb::Cell 4", longrepr=text)
    assert _first_diagnostic(report) == \
        "NotImplementedError: Your turn nb01.1: write it; expected a float"
    stub = SimpleNamespace(nodeid="notebooks/01_autograd.ipynb::Cell 1", longrepr=(
        "\x1b[31mNotImplementedError\x1b[39m: Exercise 1.8 — the topological order: see"))
    assert _stub_in_failure(stub) == "1.8"


def test_an_error_in_a_fixture_counts_under_the_exercise_of_its_tests(tmp_path):
    """A test that errors (in its fixture, before it runs) fails its exercise's
    row like a failure, with the fixture's message; so does a module fixture's
    error for every test that uses it."""
    tree = _tiny_tree(tmp_path, '''
        import pytest

        @pytest.fixture(scope="module")
        def run():
            raise RuntimeError("the worker run failed")

        @pytest.mark.exercise("1.1")
        def test_add():
            assert 1 + 1 == 2

        def test_uses_the_run(run):
            pass

        def test_uses_it_too(run):
            pass
    ''', {"tests/test_x.py::test_uses_the_run": ["1.1"],
          "tests/test_x.py::test_uses_it_too": ["1.2"]})
    code, out = _run(tree)
    assert code == 1, out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:3] in ("1.1", "1.2")}
    assert "1/2  failing: tests/test_x.py::test_uses_the_run: RuntimeError: the worker run " \
        "failed" in rows["1.1"], out
    assert "0/1  failing" in rows["1.2"], out
