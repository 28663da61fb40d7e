"""The site in a real browser: Debian's headless chromium, driven by Playwright.

Three kinds of page, opened from the file system and from a local HTTP server:
a page with maths (a chapter when one has TeX maths, else a notebook), a notebook
with a figure, and an API page.  Each must typeset its maths (MathJax elements,
no raw ``$...$`` or ``\\frac`` left), load every image (natural width > 0), and
send no request that leaves the machine (only file:// and 127.0.0.1; any other
is blocked and reported).  Screenshots go to a temporary folder, or to
``$MINIGRAD_SITE_SCREENSHOTS`` when it is set (the ones in docs/screenshots/).
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .conftest import ROOT, STUDENT_COPY

sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the site extra is not installed (playwright)")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
RAW_TEX = re.compile(r"\\frac|\\sum|\\nabla|\\mathrm|\$[^$\s][^$]*\$|\\\(|\\\[")


def _has_maths(page: Path) -> bool:
    return 'class="math' in page.read_text(encoding="utf-8")


def _has_figure(page: Path) -> bool:
    return "<img" in page.read_text(encoding="utf-8")


def _pick(site: Path) -> dict[str, Path]:
    """One page of each kind, chosen from what the site has (the course grows)."""
    chapters = sorted((site / "chapters").glob("[0-9]*.html"))
    notebooks = sorted((site / "notebooks").glob("*.html"))
    maths = [p for p in chapters if _has_maths(p)] or [p for p in notebooks if _has_maths(p)]
    figures = [p for p in notebooks if _has_figure(p)]
    if not figures and STUDENT_COPY:
        # The student copy clears the outputs of every notebook with an exercise:
        # a chapter's figure stands in.
        figures = [p for p in chapters if _has_figure(p)]
    figures = [p for p in figures if p != maths[0]] or figures  # two pages if there are
    assert maths, "no page of the site has maths"
    assert figures, "no notebook page has a figure"
    return {"maths": maths[0], "notebook": figures[0],
            "api": site / "docs" / "api" / "minigrad.optim.html"}


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(site):
    """``python -m http.server`` on 127.0.0.1, serving the built site."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("file", "data", "blob", "about") or (
        parts.scheme in ("http", "https") and parts.hostname == "127.0.0.1")


def _screenshot_folder(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("MINIGRAD_SITE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("origin", ["file", "http"])
@pytest.mark.parametrize("kind", ["maths", "notebook", "api"])
def test_page_renders_offline_in_chromium(site, server, browser, tmp_path, origin, kind):
    path = _pick(site)[kind]
    relative = path.relative_to(site).as_posix()
    url = path.as_uri() if origin == "file" else f"{server}/{relative}"

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    requests, left, failed, errors = [], [], [], []

    def guard(route):  # a request for another host never goes out
        if _local(route.request.url):
            route.continue_()
        else:
            left.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(url, wait_until="load")
        has_maths = _has_maths(path)
        if has_maths:  # MathJax typesets after load: wait for it
            page.wait_for_function("() => window.MathJax && MathJax.startup"
                                   " && MathJax.startup.promise", timeout=30_000)
            page.evaluate("() => MathJax.startup.promise")
            page.evaluate("() => document.fonts.ready.then(() => true)")
        text = page.inner_text("article")
        prose = page.evaluate("""() => {  // the article's text outside code blocks
            const copy = document.querySelector('article').cloneNode(true);
            copy.querySelectorAll('pre, code, .highlight').forEach(e => e.remove());
            document.body.appendChild(copy);
            const t = copy.innerText; copy.remove(); return t; }""")
        containers = page.locator("mjx-container").count()
        merrors = page.locator("mjx-merror").count()
        images = page.evaluate("""() => Array.from(document.querySelectorAll('article img'))
            .map(img => [img.getAttribute('src'), img.complete, img.naturalWidth])""")
        # the screenshot shows the thing checked: the first formula, figure or class
        first = {"maths": "mjx-container", "notebook": "article img",
                 "api": '[id="minigrad.optim.GradientAccumulator"]'}[kind]
        if page.locator(first).count():
            page.evaluate("s => document.querySelector(s).scrollIntoView("
                          "{block: kind === 'api' ? 'start' : 'center', behavior: 'instant'})"
                          .replace("kind", repr(kind)), first)
        page.screenshot(path=str(_screenshot_folder(tmp_path) / f"site-{kind}.png"))
    finally:
        context.close()

    assert requests and all(_local(u) for u in requests), \
        [u for u in requests if not _local(u)]
    assert left == [], f"requests that would have left the machine: {left}"
    assert failed == [], failed
    assert errors == [], errors
    if kind == "maths":
        assert has_maths and containers > 0, "MathJax typeset nothing"
    if has_maths:
        assert merrors == 0, "MathJax reported a TeX error"
        raw = RAW_TEX.findall(prose)
        assert raw == [], f"raw TeX left in the rendered text: {raw[:5]}"
    if kind == "notebook":
        assert images, "the notebook page shows no figure"
    for src, complete, width in images:
        assert complete and width > 0, f"image not loaded: {src}"
    if kind == "api":
        assert "GradientAccumulator" in text and "accumulation_steps" in text


@pytest.mark.parametrize("origin", ["file", "http"])
def test_search_finds_the_accumulator(site, server, browser, origin):
    search = site / "search.html"
    url = (search.as_uri() if origin == "file" else f"{server}/search.html") + \
        "?q=GradientAccumulator"
    context = browser.new_context()
    left = []
    context.route("**/*", lambda route: route.continue_() if _local(route.request.url)
                  else (left.append(route.request.url), route.abort()))
    page = context.new_page()
    try:
        page.goto(url, wait_until="load")
        page.wait_for_selector("#search-results li", timeout=30_000)
        hits = page.eval_on_selector_all("#search-results li a", "as => as.map(a => a.href)")
    finally:
        context.close()
    assert left == []
    assert any("docs/api/minigrad.optim.html" in h for h in hits), hits


@pytest.mark.parametrize("origin", ["file", "http"])
def test_the_front_door_opens_the_syllabus_in_chromium(site, server, browser, origin):
    url = (site / "index.html").as_uri() if origin == "file" else f"{server}/"
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(url)
        page.wait_for_url("**/chapters/README.html", timeout=30_000)
        title = page.inner_text("h1")
    finally:
        context.close()
    heading = (ROOT / "chapters" / "README.md").read_text(encoding="utf-8").splitlines()[0]
    assert title.startswith(heading.lstrip("# ").split(":")[0])
