"""The built site: every page there, every link resolving, the API reference
complete, the notebooks shown with their saved outputs, nothing fetched from
another host."""
from __future__ import annotations

import base64
import hashlib
import importlib
import inspect
import json
import re
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, STUDENT_COPY
from .sitehtml import broken_links, external_resources, parse_page

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
minigrad_site = pytest.importorskip("minigrad_site", reason="the site extra is not installed")

CHAPTERS = sorted((ROOT / "chapters").glob("*.md")) + sorted(
    (ROOT / "chapters" / "answers").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _page(site: Path, source: Path) -> Path:
    return site / source.relative_to(ROOT).with_suffix(".html")


def _hrefs(page: Path) -> set[Path]:
    """The files that page links to, resolved."""
    return {(page.parent / url.split("#")[0]).resolve()
            for tag, url in parse_page(page)[1] if tag == "a" and not url.startswith(("http", "#"))}


def test_the_front_door_opens_the_syllabus(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'url=chapters/README.html' in index
    syllabus = (site / "chapters" / "README.html").read_text(encoding="utf-8")
    title = (ROOT / "chapters" / "README.md").read_text(encoding="utf-8").splitlines()[0]
    assert title.startswith("# ")
    assert title[2:].split(":")[0] in syllabus


@pytest.mark.parametrize("source", CHAPTERS + NOTEBOOKS,
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_chapter_answer_and_notebook_has_a_page_in_the_navigation(site, source):
    page = _page(site, source)
    assert page.is_file(), f"no page for {source.relative_to(ROOT)}"
    if source.name != "README.md":  # the navigation on the syllabus links to it
        assert page.resolve() in _hrefs(site / "chapters" / "README.html"), \
            f"{page.relative_to(site)} is not in the site's navigation"


def test_every_internal_link_and_anchor_resolves(site):
    problems = broken_links(site)
    if STUDENT_COPY:   # the student copy leaves the answer key out
        problems = [p for p in problems
                    if "chapters/answers/" not in p and "#answers/" not in p]
    assert problems == [], "\n".join(problems)


MD_LINK = re.compile(r"\]\(([^)\s]+?\.(?:md|ipynb))(#[^)\s]*)?\)")


@pytest.mark.parametrize("source", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_to_chapters_and_notebooks_become_links_between_pages(site, source):
    """Each [text](x.md#a) or [text](x.ipynb) of a chapter is an href to x.html (a
    fragment may be renamed to the heading's id in the site; that every anchor
    exists is checked above)."""
    page = _page(site, source)
    resolved = _hrefs(page)
    expected = set()
    for target, _fragment in MD_LINK.findall(source.read_text(encoding="utf-8")):
        file = (source.parent / target).resolve()
        if not target.startswith(("http:", "https:")) and file.is_file():
            expected.add((site / file.relative_to(ROOT)).with_suffix(".html").resolve())
    missing = sorted(str(e.relative_to(site.resolve())) for e in expected - resolved)
    assert missing == [], f"{source.name}: links that are not links in the site: {missing}"


def test_nothing_is_fetched_from_another_host_and_mathjax_is_bundled(site):
    assert external_resources(site) == []
    mathjax = site / "_static" / "mathjax"
    assert (mathjax / "tex-chtml.js").is_file()
    assert any((mathjax / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    css_js = [p for p in site.rglob("*") if p.suffix in (".css", ".js") and p.is_file()
              and mathjax not in p.parents]
    for path in css_js:  # no web fonts or scripts pulled in from a CDN by a stylesheet
        text = path.read_text(encoding="utf-8", errors="replace")
        assert not re.search(r"@import\s+url\(\s*['\"]?https?:|fonts\.googleapis", text), path


def test_notebooks_are_shown_with_their_saved_outputs(site):
    images = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (site / "_images").glob("*")}
    shown = 0
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        page = _page(site, notebook).read_text(encoding="utf-8")
        for cell in cells:
            for output in cell.get("outputs", []):
                png = output.get("data", {}).get("image/png")
                if png:   # the very bytes saved in the notebook
                    data = base64.b64decode("".join(png) if isinstance(png, list) else png)
                    assert hashlib.sha256(data).hexdigest() in images, notebook.name
                    shown += 1
                text = output.get("text")
                if output.get("name") == "stdout" and text:
                    line = ("".join(text) if isinstance(text, list) else text).strip()
                    line = line.splitlines()[0].strip() if line else ""
                    escaped = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                    if line and len(line) > 8:
                        assert escaped.split()[0] in page, (notebook.name, line)
    # The student copy clears the outputs of every notebook with an exercise;
    # the reference must show its saved figures.
    assert shown > 0 or STUDENT_COPY, "no notebook has a saved figure"


def _submodule_names(full: str) -> list[str]:
    """A submodule's public objects: its __all__ (or package exports), else the
    classes and functions it defines."""
    module = importlib.import_module(full)
    if hasattr(module, "__all__") or hasattr(module, "__path__"):
        return minigrad_site.split_public(full)[0]
    return [n for n, v in vars(module).items() if not n.startswith("_")
            and (inspect.isclass(v) or inspect.isfunction(v)) and v.__module__ == full]


def _documented_on_its_home_page(module_name, name, all_ids) -> bool:
    """A re-export (minigrad.distributed.SyncBatchNorm) is listed once, under the
    package page where it is defined (minigrad.nn.SyncBatchNorm)."""
    value = getattr(importlib.import_module(module_name), name)
    if not minigrad_site._documented_elsewhere(value, module_name):
        return False
    home = next(p for p in minigrad_site.API_PACKAGES if p != "minigrad"
                and value.__module__.startswith(p))
    return f"{home}.{name}" in all_ids


@pytest.mark.parametrize("package", minigrad_site.API_PACKAGES)
def test_the_api_reference_lists_every_public_name(site, package):
    api = site / "docs" / "api"
    page_ids = parse_page(api / f"{package}.html")[0]
    all_ids = set().union(*(parse_page(p)[0] for p in api.glob("*.html")))
    objects, submodules = minigrad_site.split_public(package)
    assert objects, package
    missing = [name for name in objects if f"{package}.{name}" not in page_ids]
    module = importlib.import_module(package)
    for name in submodules:
        full = getattr(module, name).__name__
        if f"module-{full}" not in all_ids:
            missing.append(name)
        elif full not in minigrad_site.API_PACKAGES:  # its own public names, on this page
            missing += [f"{name}.{n}" for n in _submodule_names(full)
                        if f"{full}.{n}" not in page_ids
                        and not _documented_on_its_home_page(full, n, all_ids)]
    assert missing == [], f"{package}: not in the API reference: {missing}"
    # each documented object carries its docstring, not an empty entry
    text = (api / f"{package}.html").read_text(encoding="utf-8")
    first = f'id="{package}.{objects[0]}"'
    assert first in text


def test_public_names_follow_all_or_the_init_file():
    assert minigrad_site.public_names("minigrad.optim") == __import__(
        "minigrad.optim", fromlist=["x"]).__all__
    names = minigrad_site.public_names("minigrad")
    for name in ("Tensor", "tensor", "no_grad", "gradcheck", "nn", "optim", "data"):
        assert name in names
    assert not [n for n in names if n.startswith("_")]
    assert "autograd" not in names  # a module the package imports from, not one it exports


def test_search_page_and_index_cover_the_course(site):
    assert (site / "search.html").is_file()
    index = (site / "searchindex.js").read_text(encoding="utf-8")
    for word in ("accumul", "batchnorm", "gradientaccumul"):
        assert word in index.lower()
