"""Reading a built HTML site: the ids of each page and the links between pages.

Plain functions on files (the standard library's HTML parser), used by the site
tests; they do not import Sphinx.
"""
from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# The attributes through which a page points at another file.
LINK_ATTRIBUTES = {("a", "href"), ("link", "href"), ("img", "src"), ("script", "src"),
                   ("iframe", "src"), ("source", "src"), ("video", "src"), ("audio", "src")}


@dataclass(frozen=True)
class Link:
    page: Path        # the page the link is on
    tag: str
    url: str          # as written in the page

    def __str__(self):
        return f"{self.page}: <{self.tag}> {self.url}"


class _PageParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            if (tag, name) in LINK_ATTRIBUTES:
                self.links.append((tag, value))


def parse_page(path: Path) -> tuple[set[str], list[tuple[str, str]]]:
    """(the ids defined in the page, its (tag, url) links)."""
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.ids, parser.links


def is_external(url: str) -> bool:
    """True for a URL that names a scheme or host (http:, https:, //host, mailto:...)."""
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc)


def broken_links(root: Path) -> list[str]:
    """Every internal link of the site under ``root`` whose file or anchor is missing.

    A link is internal when it names no scheme and no host.  Its file must exist
    inside ``root``; a ``#fragment`` on an HTML target must be an id (or an
    ``<a name>``) of that page.  Returns one line per broken link.
    """
    root = root.resolve()
    pages = sorted(root.rglob("*.html"))
    ids: dict[Path, set[str]] = {}
    links: dict[Path, list[tuple[str, str]]] = {}
    for page in pages:
        ids[page], links[page] = parse_page(page)
    problems = []
    for page in pages:
        for tag, url in links[page]:
            if is_external(url) or url.startswith("javascript:"):
                continue
            parts = urlsplit(url)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            where = f"{page.relative_to(root)}: <{tag}> {url}"
            if root not in target.parents and target != root:
                problems.append(f"{where}: points outside the site")
                continue
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{where}: no file {target.relative_to(root)}")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target], links[target] = parse_page(target)
                if fragment not in ids[target]:
                    problems.append(f"{where}: no anchor #{fragment} in "
                                    f"{target.relative_to(root)}")
    return problems


def external_resources(root: Path) -> list[str]:
    """Every file a page would fetch from another host: external ``src`` of img,
    script, iframe, and ``<link href>`` (stylesheets, fonts, icons)."""
    found = []
    for page in sorted(root.rglob("*.html")):
        for tag, url in parse_page(page)[1]:
            if tag != "a" and is_external(url) and not url.startswith("data:"):
                found.append(f"{page.relative_to(root)}: <{tag}> {url}")
    return found
