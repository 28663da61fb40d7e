"""Reading the course text: fenced code blocks, links, anchors and code references.

Used by the tests in this folder; plain functions on strings, no minigrad import.

Conventions the chapters follow (and these functions check):

* ```` ```python ```` blocks run, in order, in one namespace per chapter;
  ```` ```python no-run ```` blocks are shown only.
* A ```` ```text ```` block right after a python block is that block's printed
  output; its numbers are compared with what the block prints.
* ``expression  # -> value`` on the last line of a statement: the value of the
  expression must read as ``value`` (numbers to the digits shown).
* ```` ```python source=minigrad/x.py ```` blocks quote the source: their lines
  must appear, consecutively and in order, in that file.
* ``[text](target)`` links resolve: files exist, ``#anchors`` exist (GitHub's
  heading slugs, or explicit ``<a id="...">`` anchors).
* ```` `minigrad/x.py` ```` paths exist, and ```` `minigrad/x.py::Name.attr` ````
  names a class, function or method defined in that file.
"""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^(`{3,})(.*)$")


@dataclass
class Block:
    """One fenced code block: its info string, text and first line number (1-based)."""

    info: str
    text: str
    line: int

    @property
    def lang(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def options(self) -> dict:
        """``key=value`` words and bare flags after the language, as a dict."""
        out = {}
        for word in self.info.split()[1:]:
            key, _, value = word.partition("=")
            out[key] = value if value else True
        return out


def blocks(markdown: str) -> list[Block]:
    """Every fenced block of ``markdown``, in order."""
    found, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2).strip(), i
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        found.append(Block(info, "\n".join(body) + "\n", start + 1))
        i += 1
    return found


def strip_code(markdown: str) -> str:
    """``markdown`` with fenced blocks blanked (links inside code are not links)."""
    out, inside, fence = [], False, ""
    for line in markdown.splitlines():
        m = _FENCE.match(line)
        if not inside and m:
            inside, fence = True, m.group(1)
            out.append("")
        elif inside and line.startswith(fence):
            inside = False
            out.append("")
        else:
            out.append("" if inside else line)
    return "\n".join(out)


# ---------------------------------------------------------------- numbers

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan")


def numbers(text: str) -> list[tuple[float, str]]:
    """Every number written in ``text``, with the way it was written."""
    return [(float(m.group()), m.group()) for m in _NUMBER.finditer(text)]


def _tolerance(written: str) -> float:
    """Half a unit of the last digit shown (``0.125`` -> 5e-4, ``3e-05`` -> 5e-6)."""
    mantissa, _, exponent = written.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def same_numbers(actual: str, expected: str) -> str | None:
    """None when ``actual`` shows the numbers of ``expected`` to the digits shown
    there; otherwise a message saying which number differs."""
    got, want = numbers(actual), numbers(expected)
    if len(got) != len(want):
        return (f"expected {len(want)} numbers {[w for _, w in want]}, got {len(got)} "
                f"{[w for _, w in got]}")
    for (g, g_text), (w, w_text) in zip(got, want):
        if math.isnan(w) and math.isnan(g):
            continue
        if math.isinf(w) or math.isinf(g):
            if g != w:
                return f"expected {w_text}, got {g_text}"
            continue
        if abs(g - w) > _tolerance(w_text) * (1 + 1e-9) + 1e-12 * abs(w):
            return f"expected {w_text}, got {g_text}"
    return None


# ---------------------------------------------------------------- anchors

def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"<[^>]+>", "", heading)            # inline html
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)              # keeps letters, digits, _, -, space
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Heading slugs (with GitHub's -1, -2 suffixes for repeats) and <a id> anchors."""
    found, seen = set(), {}
    for line in strip_code(markdown).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = github_slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        for a in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", line):
            found.add(a.group(1))
    return found


def notebook_markdown(path: Path) -> str:
    """The markdown cells of a notebook, joined."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def document_text(path: Path) -> str:
    return notebook_markdown(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")


# ---------------------------------------------------------------- links and references

_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"^(?:minigrad|tests|tools|notebooks|chapters|benchmarks)/[\w./-]*$")


def _left_out(path: Path) -> bool:
    """True for the answer keys (chapters/answers/) in a student copy (a tree
    with ``student.json``), which ``make student`` leaves out on purpose."""
    answers = (ROOT / "chapters" / "answers").resolve()
    path = path.resolve()
    return (ROOT / "student.json").is_file() and (path == answers or answers in path.parents)


def broken_links(path: Path) -> list[str]:
    """Links in the document at ``path`` whose file or anchor does not exist."""
    text = strip_code(document_text(path))
    problems = []
    for m in _LINK.finditer(text):
        target = m.group(2) or m.group(3)
        if re.match(r"^[a-z]+:", target):          # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists() and not _left_out(resolved):
            problems.append(f"{target}: {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved} does not exist")
            continue
        if anchor and resolved.suffix in (".md", ".ipynb"):
            if anchor not in anchors(document_text(resolved)):
                problems.append(f"{target}: no heading or <a id> '{anchor}' in {resolved.name}")
    return problems


def _defined_names(source_path: Path) -> set[str]:
    """Dotted names of the classes, functions and methods defined in a file
    (``Class``, ``Class.method``, ``function``) plus its module-level assignments."""
    tree = ast.parse(source_path.read_text(encoding="utf-8"))
    names = set()

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(prefix + child.name)
                if isinstance(child, ast.ClassDef):
                    visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.Assign) and not prefix:
                names.update(t.id for t in child.targets if isinstance(t, ast.Name))

    visit(tree, "")
    return names


def _generated(relative: str) -> bool:
    """True for a path git ignores (an output such as benchmarks/results/...).

    Asks git; outside a git checkout (an exported copy) reads .gitignore."""
    import fnmatch
    import subprocess
    done = subprocess.run(["git", "check-ignore", "-q", relative], cwd=ROOT,
                          capture_output=True)
    if done.returncode in (0, 1):
        return done.returncode == 0
    ignore = ROOT / ".gitignore"
    patterns = [line.strip().rstrip("/") for line in
                (ignore.read_text().splitlines() if ignore.exists() else [])
                if line.strip() and not line.startswith("#")]
    parts = relative.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatch(p, pattern) for p in prefixes for pattern in patterns)


_PUBLIC = re.compile(r"^(minigrad|nn|optim|F|lr_scheduler)((?:\.\w+)+)(\(.*\))?$")
_PREFIXES = {"minigrad": "minigrad", "nn": "minigrad.nn", "optim": "minigrad.optim",
             "F": "minigrad.nn.functional", "lr_scheduler": "minigrad.optim.lr_scheduler"}
_METHOD = re.compile(r"^(_?[A-Z]\w*)\.(\w+)(\(.*\))?$")


def _all_defined_names() -> set[str]:
    """``Class.member`` for every class of the package (methods, class and
    instance attributes), and ``Class`` itself."""
    names = set()
    for source in (ROOT / "minigrad").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
                for child in node.body:
                    if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                        names.add(f"{node.name}.{child.name}")
                    elif isinstance(child, ast.Assign):
                        names.update(f"{node.name}.{t.id}" for t in child.targets
                                     if isinstance(t, ast.Name))
                for sub in ast.walk(node):          # self.x = ... in any method
                    if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) \
                            and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                        names.add(f"{node.name}.{sub.attr}")
    return names


def _public_name_exists(prefix: str, dotted: str) -> bool:
    """``minigrad.optim.SGD``, ``nn.Linear``, ``F.cross_entropy``: import and getattr."""
    import importlib
    module_name = _PREFIXES[prefix]
    obj = importlib.import_module(module_name)
    for part in dotted.strip(".").split("."):
        if not hasattr(obj, part):
            try:                                 # a submodule not imported by its package
                obj = importlib.import_module(f"{module_name}.{part}")
            except ImportError:
                return False
        else:
            obj = getattr(obj, part)
        module_name = f"{module_name}.{part}"
    return True


def broken_references(path: Path) -> list[str]:
    """Code spans naming a repository path that does not exist, a
    ``path.py::Name`` that the file does not define, a public name
    (``minigrad.x``, ``nn.X``, ``optim.X``, ``F.x``) that does not import, or a
    ``Class.member`` of a minigrad class that does not define it."""
    text = strip_code(document_text(path))
    problems = []
    methods = None
    for m in _CODE_SPAN.finditer(text):
        span = m.group(1).strip()
        public = _PUBLIC.match(span)
        if public and not _public_name_exists(public.group(1), public.group(2)):
            problems.append(f"`{span}`: {public.group(1)}{public.group(2)} does not exist")
            continue
        method = _METHOD.match(span)
        if method and not public:
            methods = _all_defined_names() if methods is None else methods
            # A class minigrad does not define (PyTorch's, say) is not checked.
            if method.group(1) in methods and \
                    f"{method.group(1)}.{method.group(2)}" not in methods:
                problems.append(f"`{span}`: no class {method.group(1)} with "
                                f"{method.group(2)} in minigrad/")
            continue
        file_part, sep, name = span.partition("::")
        if not _PATH.match(file_part):
            continue
        target = ROOT / file_part.rstrip("/")
        if not target.exists() and not _generated(file_part) and not _left_out(target):
            problems.append(f"`{span}`: {file_part} does not exist")
        elif sep and name not in _defined_names(target):
            problems.append(f"`{span}`: {file_part} defines no {name}")
    return problems


# ---------------------------------------------------------------- quoted source

_MARKER = re.compile(r"^\s*# (BEGIN|END) SOLUTION\b")


def _significant(lines):
    """Lines without solution markers, right-stripped."""
    return [line.rstrip() for line in lines if not _MARKER.match(line)]


def quote_found(snippet: str, source: str) -> bool:
    """True when the snippet's lines appear consecutively in ``source``, each
    with the same extra indentation (solution marker lines in the source are
    ignored: they are not code)."""
    want = [line.rstrip() for line in snippet.strip("\n").splitlines()]
    indent = min((len(w) - len(w.lstrip()) for w in want if w.strip()), default=0)
    want = [w[indent:] for w in want]
    have = _significant(source.splitlines())
    for start in range(len(have) - len(want) + 1):
        first, lead = have[start], len(want[0]) - len(want[0].lstrip())
        extra = len(first) - len(first.lstrip()) - lead
        if extra < 0:
            continue
        pad = first[:extra]
        if all((h == pad + w) or (not w and not h.strip())
               for h, w in zip(have[start:start + len(want)], want)):
            return True
    return False


# ---------------------------------------------------------------- running blocks

def _arrow_statements(code: str):
    """Split ``code`` into top-level statements; yield (source, expected) where
    expected is the text after ``# ->`` on a statement's last line, or None."""
    tree = ast.parse(code)
    lines = code.splitlines()
    for stmt in tree.body:
        src = "\n".join(lines[stmt.lineno - 1: stmt.end_lineno])
        last = lines[stmt.end_lineno - 1]
        m = re.search(r"#\s*->\s*(.*)$", last)
        yield stmt, src, (m.group(1).strip() if m else None)

