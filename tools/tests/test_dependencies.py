"""tools/dependencies.py: the map of which tests run which solution region."""
from __future__ import annotations

import json
from pathlib import Path

from tools import dependencies

ROOT = Path(__file__).resolve().parents[2]
SOURCE = '''def f(x):
    # BEGIN SOLUTION ch01.1
    return x + 1
    # END SOLUTION
'''


def _tree(tmp_path, source=SOURCE):
    (tmp_path / "minigrad").mkdir(exist_ok=True)
    (tmp_path / "minigrad" / "x.py").write_text(source)
    (tmp_path / "tools").mkdir(exist_ok=True)
    return tmp_path


def test_a_current_map_passes_and_a_stale_one_says_why(tmp_path):
    tree = _tree(tmp_path)
    mapping = {"regions": dependencies.region_hashes(tree),
               "tests": {"tests/test_x.py::test_f": ["1.1"]},
               "traced_with": dependencies.importable()}
    dependencies.write(dict(mapping, about="test"), tree)
    assert dependencies.check(tree, {"tests/test_x.py::test_f"}) == []
    problems = dependencies.check(tree, {"tests/test_x.py::test_f", "tests/test_x.py::test_g"})
    assert any("1 test(s) are not in" in p for p in problems)
    _tree(tmp_path, SOURCE.replace("x + 1", "x + 2"))
    problems = dependencies.check(tree, {"tests/test_x.py::test_f"})
    assert any("the regions of 1.1 changed" in p for p in problems), problems


def test_a_map_traced_without_an_optional_package_importable_now_is_stale(tmp_path,
                                                                          monkeypatch):
    """Traced without PyTorch, a parity test runs no region and looks chapter-free;
    where PyTorch can be imported the map must be traced again."""
    tree = _tree(tmp_path)
    dependencies.write({"about": "test", "regions": dependencies.region_hashes(tree),
                        "tests": {}, "traced_with": ["sphinx"]}, tree)
    monkeypatch.setattr(dependencies, "importable", lambda: ["sphinx", "torch"])
    problems = dependencies.check(tree, set())
    assert any(p.startswith("torch can be imported here but was not") for p in problems), \
        problems
    monkeypatch.setattr(dependencies, "importable", lambda: [])
    assert dependencies.check(tree, set()) == []     # fewer packages: the map still holds


def test_the_map_is_traced_per_test(tmp_path):
    """A two-test suite under coverage: only the test that calls f runs 1.1."""
    tree = _tree(tmp_path)
    (tree / "minigrad" / "__init__.py").write_text("")
    (tree / "tests").mkdir()
    (tree / "tests" / "test_x.py").write_text(
        "from minigrad.x import f\n\ndef test_f():\n    assert f(1) == 2\n\n"
        "def test_other():\n    assert True\n")
    import subprocess
    import sys
    script = ("import json, sys; from pathlib import Path; from tools import dependencies; "
              "m = dependencies.generate(Path(sys.argv[1]), [sys.argv[1] + '/tests', "
              "'-p', 'no:tools.course_plugin', '--rootdir', sys.argv[1], '-c', '/dev/null']); "
              "print(json.dumps(m))")
    done = subprocess.run([sys.executable, "-c", script, str(tree)], capture_output=True,
                          text=True, cwd=tree,
                          env={"PYTHONPATH": f"{tree}:{ROOT}", "PATH": ""})
    mapping = json.loads(done.stdout.strip().splitlines()[-1])
    tests = {k.split("::")[-1]: v for k, v in mapping["tests"].items()}
    assert tests == {"test_f": ["1.1"], "test_other": []}, mapping


def test_the_committed_map_names_real_exercises():
    mapping = json.loads((ROOT / dependencies.MAP_FILE).read_text(encoding="utf-8"))
    from tools import exercises
    named = {i for ids in mapping["tests"].values() for i in ids}
    assert named <= set(exercises.EXERCISES)
    assert set(mapping["regions"]) == set(exercises.EXERCISES)
