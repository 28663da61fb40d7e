"""The course tools stay easy to find one's way in: tools/README.md names every
module and folder, and no module imports (even inside a function) a module
that imports it back."""
from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    """Module name -> file, for tools/*.py (the package's own modules)."""
    return {p.stem: p for p in sorted(TOOLS.glob("*.py")) if p.stem != "__init__"}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The tools modules ``path`` imports anywhere: ``from tools import x``,
    ``from tools.x import y``, ``import tools.x``, ``from . import x``,
    ``from .x import y``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if (node.level == 1 and not module) or module == "tools":
                found |= {alias.name for alias in node.names}
            elif node.level == 1:
                found.add(module.split(".")[0])
            elif module.startswith("tools."):
                found.add(module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names
                      if alias.name.startswith("tools.")}
    return found & known - {path.stem}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (a list that starts and ends with the same
    module), or None."""
    state: dict[str, int] = {}                  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_find_cycle_finds_one_and_only_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_tools_import_no_module_that_imports_them_back():
    modules = _modules()
    graph = {name: imports_of(path, set(modules)) for name, path in modules.items()}
    assert "make_student" in graph["update_student"]       # the parser sees imports
    cycle = find_cycle(graph)
    assert cycle is None, ("an import circle among the tools: " + " -> ".join(cycle)
                           + "; move what both need into a module of its own")


def test_the_readme_names_every_module_and_folder():
    readme = (TOOLS / "README.md").read_text(encoding="utf-8")
    names = [f"{p.name}" for p in _modules().values()]
    names += [f"{p.name}/" for p in sorted(TOOLS.iterdir())
              if p.is_dir() and not p.name.startswith(("_", "."))]
    missing = [n for n in names if f"`{n}" not in readme]
    assert not missing, f"tools/README.md does not say what these do: {missing}"
