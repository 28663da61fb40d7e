"""Keep the answers out of the student copy's texts: chapters, notebooks, site.

The chapters walk through the library's code by quoting it (```` ```python
source=minigrad/x.py ````).  When a quoted block shows a solution region that
the student copy blanks, the student would find the answer one page away from
the exercise.  So in the student copy every fenced block that

* quotes lines of a blanked region (found by position in its ``source=`` file), or
* holds a *secret* line of a blanked region (see ``secret_lines``),

is replaced by the exercise's statement and a link to it; notebook code cells
outside the "your turn" regions are not rewritten (they must run), and the
test (tools/tests/test_redact.py) checks that none holds a secret line.

A *secret* line is a line of a region's body, stripped, that is not trivial:
not blank, not a comment-free fragment shorter than 16 characters (``return
ga, gb``, ``else:``), not a continuation line (starting with a closing bracket,
or a lone keyword argument closing a call), not a line of the docstring the
student copy keeps, and not a line that the student copy's library holds anyway
outside the blanked regions.  Text between ``<!-- reference-only -->`` and
``<!-- /reference-only -->`` in markdown (e.g. "here they hold the worked
answer") is dropped from the student copy.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from tools import exercises, solutions

FENCE_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>.*)$")
REFERENCE_ONLY_RE = re.compile(r"<!-- reference-only -->.*?<!-- /reference-only -->", re.S)
# A link to the answers to the chapter questions, which the copy leaves out.
ANSWER_LINK_RE = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>(?:[\w./]*/)?answers/\d+\.md)\)")
CONTINUATION_RE = re.compile(r"^(?:[)\]}]|\w+=[^=].*[)\]}],?$)")
MIN_SECRET_CHARS = 16


def _body_lines(text_lines: list[str], region) -> list[str]:
    """The region's body without its markers and without the docstring the
    student copy keeps."""
    kept = len(solutions._leading_docstring(text_lines, region))
    return text_lines[region.begin + kept:region.end - 1]


def is_trivial(line: str) -> bool:
    s = line.strip()
    return (len(s.replace(" ", "")) < MIN_SECRET_CHARS or s.startswith("#")
            or bool(CONTINUATION_RE.match(s)) or s in ("pass", "..."))


def secret_lines(root: Path, blanked) -> dict[str, set[str]]:
    """Stripped secret line -> the blanked exercise ids whose regions hold it."""
    root = Path(root)
    by_id = solutions.collect(root)
    by_file: dict[str, list] = {}
    for ident in blanked:
        for region in by_id.get(ident, []):
            by_file.setdefault(region.path, []).append(region)
    public = set()
    for path in solutions.library_files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel in by_file:
            text = solutions.blank_python(text, by_file[rel], lambda i: "")
        public.update(line.strip() for line in text.splitlines())
    secret: dict[str, set[str]] = {}
    for rel, regions in by_file.items():
        lines = (root / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        for region in regions:
            for line in _body_lines(lines, region):
                s = line.strip()
                if not is_trivial(s) and s not in public:
                    secret.setdefault(s, set()).add(region.exercise_id)
    return secret


# ------------------------------------------------------------- quoted blocks

def _code_lines(source: str) -> list[tuple[int, str]]:
    """(1-based line number, right-stripped text) of the source's lines,
    solution markers left out (a quote never shows them)."""
    return [(n, line.rstrip()) for n, line in enumerate(source.splitlines(), start=1)
            if not (solutions.BEGIN_RE.match(line) or solutions.END_RE.match(line))]


def quote_spans(snippet: str, source: str) -> list[tuple[int, int]]:
    """(first, last) source line numbers of every place the snippet's lines
    appear consecutively (same rule as tests/docs: a common extra indentation)."""
    want = [line.rstrip() for line in snippet.strip("\n").splitlines()]
    if not want:
        return []
    indent = min((len(w) - len(w.lstrip()) for w in want if w.strip()), default=0)
    want = [w[indent:] for w in want]
    have = _code_lines(source)
    spans = []
    for start in range(len(have) - len(want) + 1):
        first = have[start][1]
        extra = len(first) - len(first.lstrip()) - (len(want[0]) - len(want[0].lstrip()))
        if extra < 0:
            continue
        pad = first[:extra]
        window = have[start:start + len(want)]
        if all(h == pad + w or (not w and not h.strip()) for (_, h), w in zip(window, want)):
            spans.append((window[0][0], window[-1][0]))
    return spans


class Redactor:
    """Rewrites the texts of a student copy in which ``blanked`` are exercises."""

    def __init__(self, root: Path, blanked, *, answers: bool = False):
        self.root = Path(root)
        self.answers = answers      # the copy keeps chapters/answers/: links stay
        self.blanked = set(blanked)
        self.by_id = solutions.collect(self.root)
        self.secret = secret_lines(self.root, self.blanked)
        self.regions_by_file: dict[str, list] = {}
        for ident in self.blanked:
            for region in self.by_id.get(ident, []):
                self.regions_by_file.setdefault(region.path, []).append(region)
        self._sources: dict[str, str] = {}
        self._functions: dict[str, set[str]] = {}
        self.replaced: list[tuple[str, int, list[str]]] = []   # (document, line, ids)

    # -- which exercises a block shows
    def exercises_shown(self, info: str, body: str) -> list[str]:
        found = set()
        for line in body.splitlines():
            found |= self.secret.get(line.strip(), set())
        source = next((w.partition("=")[2] for w in info.split() if w.startswith("source=")),
                      None)
        if source and source in self.regions_by_file:
            if source not in self._sources:
                path = self.root / source
                self._sources[source] = path.read_text(encoding="utf-8") \
                    if path.is_file() else ""
            for first, last in quote_spans(body, self._sources[source]):
                for region in self.regions_by_file[source]:
                    if first <= region.end and region.begin <= last:
                        found.add(region.exercise_id)
        return sorted(found, key=exercises.sort_key)

    def regions_shown(self, ident: str, body: str) -> list:
        """The regions of ``ident`` whose secret lines the quoted ``body`` shows (an
        exercise of two functions: the one this block quotes); its first region
        when no line tells."""
        shown = {line.strip() for line in body.splitlines()}
        found = []
        for region in self.by_id[ident]:
            if region.path not in self._sources:
                path = self.root / region.path
                self._sources[region.path] = path.read_text(encoding="utf-8") \
                    if path.is_file() else ""
            lines = self._sources[region.path].splitlines(keepends=True)
            if any(ident in self.secret.get(line.strip(), ()) and line.strip() in shown
                   for line in _body_lines(lines, region)):
                found.append(region)
        return found or self.by_id[ident][:1]

    def statement(self, ident: str, document: str, body: str = "") -> str:
        """One markdown paragraph: the exercise, where its code goes (the function
        the quoted ``body`` shows), a link."""
        places = []
        for region in self.regions_shown(ident, body):
            place = f"`{region.path}::{self.outer_function(region)}`" if region.function \
                else f"`{region.path}`"
            if place not in places:
                places.append(place)
        where = " and ".join(places)
        target = exercises.chapter_link(self.root, ident)          # chapters/NN_x.md#...
        doc_dir = Path(document).parent
        file_part, _, anchor = target.partition("#")
        if Path(file_part) == Path(document):
            link = f"#{anchor}"
        else:
            link = Path(_relative(file_part, doc_dir.as_posix())).as_posix() + f"#{anchor}"
        return (f"> **Exercise {ident} — {exercises.EXERCISES[ident]}.** The code that goes "
                f"here is yours to write, in {where}: see [Exercise {ident}]({link}).")

    def outer_function(self, region) -> str:
        """``Class.method`` or ``function`` holding the region: the outermost
        function around it (a nested helper is named by its parent)."""
        import ast  # noqa: PLC0415
        if region.path not in self._functions:
            tree = ast.parse((self.root / region.path).read_text(encoding="utf-8"))
            self._functions[region.path] = {name for name, _ in solutions._functions(tree)}
        names = self._functions[region.path]
        parts = region.function.split(".")
        return next(".".join(parts[:n]) for n in range(1, len(parts) + 1)
                    if ".".join(parts[:n]) in names)

    # -- markdown
    def markdown(self, text: str, document: str) -> str:
        """``text`` with every fenced block that shows a blanked region replaced,
        and the links to the answers to the questions (not in the copy, unless it
        was written with the answers) made text and a link to their hints."""
        text = REFERENCE_ONLY_RE.sub("", text)
        if not self.answers:
            text = ANSWER_LINK_RE.sub(_answers_with_the_teacher, text)
        lines = text.splitlines(keepends=True)
        out, i = [], 0
        while i < len(lines):
            m = FENCE_RE.match(lines[i].rstrip("\n"))
            if not m:
                out.append(lines[i])
                i += 1
                continue
            fence, start = m.group("fence"), i
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence):
                j += 1
            body = "".join(lines[i + 1:j])
            ids = self.exercises_shown(m.group("info"), body)
            if ids:
                self.replaced.append((document, start + 1, ids))
                statement = "\n".join(self.statement(x, document, body) for x in ids) + "\n"
                previous = [x for x in out if x.strip()][-1:]
                if previous == [statement]:             # two quotes of one exercise in a row
                    while out and not out[-1].strip():
                        out.pop()
                elif statement in out and not any(x.startswith("#") for x in
                                                  out[len(out) - out[::-1].index(statement):]):
                    # the same exercise a few lines above, in the same section: no repeat
                    out.append("> (More of " + ", ".join(f"Exercise {x}" for x in ids)
                               + "'s code, also yours to write.)\n")
                else:
                    out.append(statement)
            else:
                out.extend(lines[i:j + 1])
            i = j + 1
        return "".join(out)

    def notebook(self, nb: dict, document: str) -> dict:
        """The notebook with its markdown cells redacted (code cells unchanged)."""
        for cell in nb.get("cells", []):
            if cell.get("cell_type") == "markdown":
                source = solutions._cell_text(cell)
                new = self.markdown(source, document)
                if new != source:
                    cell["source"] = new
        return nb


def _answers_with_the_teacher(match) -> str:
    """``[the answers](answers/01.md)`` -> ``the answers (with your teacher: ...;
    [the hints](hints/01.md) are here)``: the copy has the hints (tools/hints.py)."""
    text = match.group("text")
    target = match.group("target")
    shown = f"`{text}`" if text == target else text
    head, _, tail = target.rpartition("answers/")
    hints = f"{head}hints/{tail}"
    return (f"{shown} (with your teacher: the student copy leaves them out; "
            f"[the hints]({hints}) are here)")


def _relative(target: str, start: str) -> str:
    import os.path
    return os.path.relpath(target, start or ".")


def documents(root: Path) -> list[str]:
    """The texts a student reads (posix paths relative to ``root``): the
    README, chapters (answers included, when present), the notebooks and the
    site's own pages under docs/."""
    root = Path(root)
    found = [root / "README.md", *(root / "chapters").rglob("*.md"),
             *(root / "notebooks").glob("*.ipynb"), *(root / "docs").rglob("*.md"),
             *(root / "docs").rglob("*.rst")]
    return sorted(p.relative_to(root).as_posix() for p in found if p.is_file())


def redact(root: Path, dest: Path, blanked, *,
           answers: bool = False) -> list[tuple[str, int, list[str]]]:
    """Rewrite, in the copy at ``dest``, every document that shows code of a
    ``blanked`` exercise; return (document, line, exercise ids) of each block
    replaced.  ``root`` is the reference (its library still has the regions);
    ``answers``: the copy keeps the answers to the questions (links to them stay)."""
    redactor = Redactor(root, blanked, answers=answers)
    dest = Path(dest)
    for rel in documents(dest):
        path = dest / rel
        text = path.read_text(encoding="utf-8")
        if rel.endswith(".ipynb"):
            nb = json.loads(text)
            new = json.dumps(redactor.notebook(nb, rel), indent=1, ensure_ascii=False) + "\n"
            if json.loads(new) != json.loads(text):
                _write(path, new)
        else:
            new = redactor.markdown(text, rel)
            if new != text:
                _write(path, new)
    return redactor.replaced


def _write(path: Path, text: str) -> None:
    """Write a new file (a hard link of the reference is replaced, not edited)."""
    path.unlink()
    path.write_text(text, encoding="utf-8")


def leaks(root: Path, dest: Path, blanked) -> dict[str, list[str]]:
    """Exercise id -> ``document:line`` of each secret line of it found in the
    copy's documents (markdown, notebook cells and outputs)."""
    secret = secret_lines(root, blanked)
    found: dict[str, list[str]] = {}
    for rel in documents(dest):
        text = (Path(dest) / rel).read_text(encoding="utf-8")
        for where, line in _document_lines(rel, text):
            for ident in secret.get(line.strip(), ()):
                found.setdefault(ident, []).append(where)
    return found


def _document_lines(rel: str, text: str):
    if not rel.endswith(".ipynb"):
        for n, line in enumerate(text.splitlines(), start=1):
            yield f"{rel}:{n}", line
        return
    for index, cell in enumerate(json.loads(text).get("cells", [])):
        for line in solutions._cell_text(cell).splitlines():
            yield f"{rel} cell {index}", line
        for output in cell.get("outputs", []):
            shown = output.get("text") or output.get("data", {}).get("text/plain", "")
            shown = "".join(shown) if isinstance(shown, list) else shown
            for line in shown.splitlines():
                yield f"{rel} cell {index} output", line
