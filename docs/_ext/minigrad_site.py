"""Sphinx glue for the minigrad course site (used by ``docs/conf.py`` and the site tests).

* ``public_names(module_name)``: the public names of a package, read from its
  ``__init__.py``: ``__all__`` when it is defined, else every name that file
  binds at its top level (imports, assignments, definitions) not starting with "_".
* The ``minigrad-api`` directive expands into one ``automodule`` for the package's
  public objects and one section per public submodule, so the reference follows
  the package as it grows.
* ``source-read`` appends a hidden, globbed table of contents to the syllabus
  (the root document) in memory, so every chapter, the glossary, the hints (in
  a student copy), every answer and notebook that exists is in the navigation
  without editing the course files.
* ``source-read`` also turns a Markdown link to a course folder into a link to
  that folder's listing page (``docs/notebooks.md``).
* ``autodoc-process-docstring`` lets docstrings written as plain text for
  ``help()`` (``|x|``, ``(N, *)``) render as written (see below).
* ``build-finished`` copies MathJax 3 (shipped by the ``django-static-mathjax``
  wheel, no Django needed) into ``_static/mathjax``: maths renders offline.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import re
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import roles
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

# The packages whose public names the reference lists, one page each (docs/api/NAME.rst).
API_PACKAGES = ("minigrad", "minigrad.nn", "minigrad.optim")

# Appended to the syllabus when Sphinx reads it; the files themselves are not touched.
TOCTREE = """

```{toctree}
:hidden:
:caption: Chapters
:glob:

/chapters/[0-9]*
```

```{toctree}
:hidden:
:caption: Notebooks

/docs/notebooks
```

```{toctree}
:hidden:
:caption: Glossary

/chapters/GLOSSARY
```

```{toctree}
:hidden:
:caption: Hints
:glob:

/chapters/hints/*
```

```{toctree}
:hidden:
:caption: Answers
:glob:

/chapters/answers/*
```

```{toctree}
:hidden:
:caption: Reference

/docs/api/index
```

```{toctree}
:hidden:
:caption: Teaching

/chapters/TEACHING
```
"""


def _init_file(module_name: str) -> Path:
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ImportError(f"cannot find the package {module_name!r}")
    return Path(spec.origin)


def public_names(module_name: str) -> list[str]:
    """The public names of package ``module_name``, in the order its ``__init__.py`` gives.

    ``__all__`` when the module defines it; otherwise every top-level name bound in
    ``__init__.py`` that does not start with an underscore.
    """
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    tree = ast.parse(_init_file(module_name).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            bound = [a.asname or a.name.split(".")[0] for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = [t.id for t in targets if isinstance(t, ast.Name)]
        else:
            continue
        names += [n for n in bound if not n.startswith("_") and n not in names]
    return names


def split_public(module_name: str) -> tuple[list[str], list[str]]:
    """(objects, submodules) among the public names of ``module_name``."""
    module = importlib.import_module(module_name)
    objects, submodules = [], []
    for name in public_names(module_name):
        value = getattr(module, name)
        (submodules if inspect.ismodule(value) else objects).append(name)
    return objects, submodules


def _callables_and_data(module_name: str) -> tuple[list[str], list[str]]:
    """The public objects of ``module_name``: (classes and functions, other values)."""
    module = importlib.import_module(module_name)
    objects = split_public(module_name)[0]
    data = [n for n in objects if not callable(getattr(module, n))]
    return [n for n in objects if n not in data], data


def _constant_doc(package: str, name: str) -> list[str]:
    """The ``#:`` comment of constant ``name`` in the package or one of its modules."""
    import sys

    from sphinx.pycode import ModuleAnalyzer
    for module_name in sorted(m for m in sys.modules if m == package or
                              m.startswith(package + ".")):
        try:
            docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        except Exception:  # noqa: BLE001 - no source to read: try the next module
            continue
        if ("", name) in docs:
            return [line for line in docs[("", name)] if line.strip()]
    return [f"A constant of :mod:`{package}`."]


def _documented_elsewhere(value, module_name: str) -> bool:
    """True when ``value`` is defined in, and exported by, a package with an API
    page of its own (other than the root) that ``module_name`` does not belong to."""
    home = getattr(value, "__module__", None) or ""
    name = getattr(value, "__name__", None)
    return any((home == p or home.startswith(p + ".")) and not
               (module_name == p or module_name.startswith(p + "."))
               and name is not None
               and getattr(importlib.import_module(p), name, None) is value   # listed there
               for p in API_PACKAGES if p != "minigrad")


class MinigradAPI(SphinxDirective):
    """``minigrad-api`` MODULE: the module's public objects, then each public submodule."""

    required_arguments = 1

    def run(self):
        name = self.arguments[0]
        objects, submodules = split_public(name)
        lines = [f".. automodule:: {name}", f"   :members: {', '.join(objects)}",
                 "   :imported-members:", "   :undoc-members:", "   :member-order: bysource", ""]
        package = importlib.import_module(name)
        for sub in submodules:
            full = getattr(package, sub).__name__
            module = importlib.import_module(full)
            lines += [f"``{full}``", "-" * (len(full) + 4), ""]
            if full in API_PACKAGES:  # it has a page of its own: point there
                lines += [f"The package has its own page: :doc:`{full}`.", ""]
                continue
            lines += [f".. automodule:: {full}"]
            data = []
            if hasattr(module, "__path__") or hasattr(module, "__all__"):
                members, data = _callables_and_data(full)
                # a re-export of a name another page documents (minigrad.distributed's
                # SyncBatchNorm is minigrad.nn's) is described once, on its own page
                members = [m for m in members if not _documented_elsewhere(
                    getattr(module, m), full)]
                lines += [f"   :members: {', '.join(members)}",
                          "   :imported-members:", "   :undoc-members:"]
            else:  # a plain module: what it defines itself
                lines += ["   :members:", "   :undoc-members:"]
            lines += ["   :member-order: bysource", ""]
            for constant in data:   # autodoc skips imported constants: name them
                value = getattr(module, constant)
                lines += [f".. py:data:: {constant}",   # in the module automodule set
                          f"   :type: {type(value).__module__}.{type(value).__qualname__}", ""]
                lines += ["   " + line for line in _constant_doc(full, constant)] + [""]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=f"<minigrad-api {name}>"),
                                 node)
        return node.children


# A link to a folder of the course (``[notebooks/](../notebooks)``) opens that
# folder's listing page in the site.
FOLDER_PAGES = {"notebooks": "docs/notebooks.md"}
_LINK = re.compile(r"\]\(([^)\s#]+?)/?\)")


def _folder_links(app, docname, source):
    srcdir = Path(app.srcdir)
    here = (srcdir / docname).parent

    def replace(match):
        target = (here / match.group(1)).resolve()
        if target.is_dir() and target.parent == srcdir and target.name in FOLDER_PAGES:
            page = srcdir / FOLDER_PAGES[target.name]
            return f"]({Path(os.path.relpath(page, here)).as_posix()})"
        return match.group(0)

    source[0] = _LINK.sub(replace, source[0])


def _append_toctree(app, docname, source):
    if docname == app.config.root_doc:
        # only the sections that have files (a glob matching nothing is a warning)
        srcdir = Path(app.srcdir)
        blocks = [b for b in TOCTREE.split("\n\n```") if b.strip()]
        kept = []
        for block in blocks:
            block = block if block.startswith("```") else "```" + block
            entries = [line for line in block.splitlines() if line.startswith("/")]
            if all(list(srcdir.glob(e[1:] + ("" if "*" in e else ".*"))) for e in entries):
                kept.append(block)
        source[0] = source[0] + "\n\n" + "\n\n".join(kept) + "\n"


# ---------------------------------------------------------------------------
# Docstrings written for help(): plain-text maths such as |x| or (N, *) is not
# reStructuredText markup.  Each docstring (after napoleon) is parsed once on
# its own; when docutils objects, the characters that plain text uses literally
# are escaped (| always, unpaired * next), and if it still objects the docstring
# is shown verbatim as a literal block, exactly as help() shows it.
# ---------------------------------------------------------------------------

_DOCUTILS_ROLE = roles.role   # docutils' role lookup, before Sphinx swaps in its own
_LITERAL_OR_ROLE = re.compile(r"(``.+?``|:[\w:.-]+:`[^`]*`|`[^`]*`_?)")
_STAR_PAIR = re.compile(r"\*\*[^*\s](?:[^*]*?[^*\s])?\*\*|\*[^*\s](?:[^*]*?[^*\s])?\*(?![\w*])")
_SPHINX_ONLY = re.compile(r"^(\s*)\.\. (seealso|versionadded|versionchanged|deprecated|"
                          r"py:\w+|autolink-\w+)::", re.M)


def _rst_problems(text: str) -> bool:
    """Whether docutils reports a warning or error for ``text`` (roles as literals)."""
    import io

    from docutils.core import publish_doctree
    from docutils.utils import SystemMessage
    text = _SPHINX_ONLY.sub(r"\1.. note::", text)
    known = roles.role   # during a build, Sphinx's lookup: use docutils' own instead

    def any_role(name, language, lineno, reporter):  # Sphinx's roles (:class:, ...)
        try:
            function, messages = _DOCUTILS_ROLE(name, language, lineno, reporter)
        except Exception:  # noqa: BLE001 - any failure: treat it as an unknown role
            function, messages = None, []
        return (function, messages) if function else (roles.GenericRole(name, nodes.literal), [])

    roles.role = any_role
    try:
        doctree = publish_doctree(text, settings_overrides={
            "report_level": 2, "halt_level": 5, "warning_stream": io.StringIO(),
            "file_insertion_enabled": False, "raw_enabled": False})
    except SystemMessage:
        return True
    finally:
        roles.role = known
    return any(True for _ in doctree.findall(nodes.problematic)) or any(
        m["level"] >= 2 for m in doctree.findall(nodes.system_message))


def _escape_line(line: str, stars: bool) -> str:
    stripped = line.strip()
    if stripped.startswith(("+-", "+=")) or (stripped.startswith("|") and stripped.endswith("|")):
        return line                      # a grid table
    parts = _LITERAL_OR_ROLE.split(line)
    for i in range(0, len(parts), 2):    # the even parts are outside literals and roles
        text = parts[i].replace("|", "\\|")
        if stars:
            pieces = _STAR_PAIR.split(text)
            pairs = _STAR_PAIR.findall(text)
            text = "".join(p.replace("*", "\\*") + (pairs[j] if j < len(pairs) else "")
                           for j, p in enumerate(pieces))
        parts[i] = text
    return "".join(parts)


def _escape(lines: list[str], stars: bool) -> list[str]:
    """Escape ``lines`` outside literal blocks (the indented lines after a ``::``)."""
    out, literal_indent = [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if line.strip() and indent <= literal_indent:
                literal_indent = None      # the literal block has ended
            else:
                out.append(line)
                continue
        out.append(_escape_line(line, stars) if line.strip() else line)
        if line.rstrip().endswith("::"):
            literal_indent = indent
    return out


def _plain_text_docstrings(app, what, name, obj, options, lines):
    if not lines or not _rst_problems("\n".join(lines)):
        return
    for stars in (False, True):
        escaped = _escape(lines, stars)
        if not _rst_problems("\n".join(escaped)):
            lines[:] = escaped
            return
    verbatim = ["::", ""] + ["    " + line for line in lines]
    lines[:] = verbatim


def _copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("MathJax is missing: install the site extra "
                           "(pip install -e '.[site]'), which ships it in django-static-mathjax")
    es5 = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax" / "es5"
    target = Path(app.outdir) / "_static" / "mathjax"
    if target.exists():
        shutil.rmtree(target)
    # the component, the fonts it asks for, and the TeX extensions it may autoload
    target.mkdir(parents=True)
    shutil.copy2(es5 / "tex-chtml.js", target / "tex-chtml.js")
    for sub in ("output/chtml/fonts/woff-v2", "input/tex/extensions", "ui", "a11y", "sre"):
        if (es5 / sub).exists():
            shutil.copytree(es5 / sub, target / sub)


def setup(app):
    app.add_directive("minigrad-api", MinigradAPI)
    app.connect("source-read", _folder_links)
    app.connect("source-read", _append_toctree)
    app.connect("build-finished", _copy_mathjax)
    # after napoleon (priority 500): check what Sphinx will parse
    app.connect("autodoc-process-docstring", _plain_text_docstrings, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
