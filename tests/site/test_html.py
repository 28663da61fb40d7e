"""The site checker itself: it finds each kind of broken link it is meant to find."""
from __future__ import annotations

from .sitehtml import broken_links, external_resources


def _site(tmp_path, pages: dict[str, str]):
    for name, body in pages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<!DOCTYPE html><html><body>{body}</body></html>", encoding="utf-8")
    return tmp_path


def test_a_site_whose_links_resolve_has_none_broken(tmp_path):
    root = _site(tmp_path, {
        "index.html": '<a href="a/b.html#sec-1">x</a> <a href="#top">top</a> <p id="top"></p>'
                      '<a href="https://example.org/x">out</a> <img src="img/f.png">',
        "a/b.html": '<h2 id="sec-1">S</h2> <a href="../index.html">home</a>'
                    ' <a href="c.html#n">named</a>',
        "a/c.html": '<a name="n"></a>',
        "img/f.png": "",
    })
    assert broken_links(root) == []


def test_a_missing_file_a_missing_anchor_and_a_path_outside_are_reported(tmp_path):
    root = _site(tmp_path / "site", {
        "index.html": '<a href="missing.html">1</a> <a href="b.html#nope">2</a>'
                      ' <a href="#also-nope">3</a> <img src="../outside.png">'
                      ' <script src="_static/gone.js"></script>',
        "b.html": '<p id="yes"></p>',
    })
    problems = broken_links(root)
    assert len(problems) == 5, problems
    assert any("no file missing.html" in p for p in problems)
    assert any("no anchor #nope in b.html" in p for p in problems)
    assert any("no anchor #also-nope in index.html" in p for p in problems)
    assert any("points outside the site" in p for p in problems)
    assert any("gone.js" in p for p in problems)


def test_external_resources_are_found_but_external_links_are_not(tmp_path):
    root = _site(tmp_path, {
        "index.html": '<a href="https://example.org">a link is fine</a>'
                      '<script src="https://cdn.example.org/mathjax.js"></script>'
                      '<link rel="stylesheet" href="//fonts.example.org/css">'
                      '<img src="data:image/png;base64,AAAA">',
    })
    found = external_resources(root)
    assert len(found) == 2, found
    assert "mathjax.js" in found[0] and "fonts.example.org" in found[1]
