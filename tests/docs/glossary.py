"""Reading chapters/GLOSSARY.md and finding terms used before their definition.

An entry is one line of the glossary::

    - **term** (also: *alias*, *alias*) — one-line definition. [NN §Section title](NN_file.md#anchor)

listed under the glossary's section ``## NN. ...`` of the chapter that defines
it.  A term is *used* wherever the term or an alias appears in a chapter:
case-insensitive, as a whole word, with an optional plural ``s``/``es``, in prose
and in inline code, but not in fenced code blocks, not in the chapter's title
(its ``# `` heading, which names the chapter's subject), not in the
``## Objectives`` section, not in link targets and HTML tags.  Reading the chapters in course
order (``chapters/[0-9][0-9]_*.md``: 01, 02, ...), a use before the start of
the term's defining section is an error, unless it is followed right away by
the pointer "(defined in chapter NN)" (NN its chapter; "§K" may follow).

Plain functions on strings and folders, so that the tests can run them on
small made-up chapters as well as on the course.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .markdown import anchors, github_slug

ENTRY = re.compile(
    r"^- \*\*(?P<term>[^*]+?)\*\*"
    r"(?: \(also: (?P<aliases>[^)]*)\))?"
    r"\s*—\s*(?P<definition>.+?)\s*"
    r"\[(?P<label>[^\]]+)\]\((?P<file>[^)#\s]+)#(?P<anchor>[^)\s]+)\)\s*$")
GLOSSARY_SECTION = re.compile(r"^## (\d\d)\. ")
# the pointer may follow closing markup: `no_grad` (...), **term** (...), [term](x.md) (...)
POINTER = re.compile(r"[`*_\]]*\s*\(defined in chapter (\d\d)(?: §\d+)?\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass
class Entry:
    term: str
    aliases: list
    definition: str
    file: str
    anchor: str
    line: int                     # line of GLOSSARY.md
    listed_under: str | None      # the glossary section's chapter number, "04"
    words: list = field(default_factory=list)   # term and aliases as matched in the text

    @property
    def chapter(self) -> str:
        return self.file[:2]

    def where(self) -> str:
        return f"{self.file}#{self.anchor}"


def _clean(word: str) -> str:
    return word.strip().strip("*").strip().strip("`").strip()


def parse(text: str) -> tuple[list[Entry], list[str]]:
    """The entries of a glossary text, and the problems of lines that look like
    entries but do not follow the format."""
    entries, problems, section, fence = [], [], None, None
    for n, line in enumerate(text.splitlines(), start=1):
        f = _FENCE.match(line)
        if f and (fence is None or line.strip().startswith(fence)):
            fence = f.group(1) if fence is None else None
            continue
        if fence is not None:           # the format's example, say
            continue
        heading = GLOSSARY_SECTION.match(line)
        if heading:
            section = heading.group(1)
            continue
        if not line.startswith("- **"):
            continue
        m = ENTRY.match(line)
        if not m:
            problems.append(f"GLOSSARY.md:{n}: not in the entry format "
                            "`- **term** (also: *alias*) — definition. "
                            f"[NN §Section](NN_file.md#anchor)`: {line!r}")
            continue
        aliases = [_clean(a) for a in (m["aliases"] or "").split(",") if _clean(a)]
        term = _clean(m["term"])
        entries.append(Entry(term, aliases, m["definition"], m["file"], m["anchor"], n,
                             section, [term, *aliases]))
    return entries, problems


def chapter_files(folder: Path) -> list[Path]:
    """The chapters in course order."""
    return sorted(Path(folder).glob("[0-9][0-9]_*.md"))


# ---------------------------------------------------------------- sections

def headings(markdown: str) -> list[tuple[int, int, str, str]]:
    """(line, level, title, slug) of every heading outside fenced code, with
    GitHub's -1, -2 suffixes for repeated slugs."""
    out, seen, fence = [], {}, None
    for n, line in enumerate(markdown.splitlines(), start=1):
        f = _FENCE.match(line)
        if f:
            if fence is None:
                fence = f.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        m = _HEADING.match(line)
        if m:
            slug = github_slug(m.group(2))
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.append((n, len(m.group(1)), m.group(2), slug if k == 0 else f"{slug}-{k}"))
    return out


def section_span(markdown: str, anchor: str) -> tuple[int, int, str] | None:
    """(first line, last line, title) of the section ``anchor`` names: a heading's
    slug (to the next heading of the same or a higher level), or an
    ``<a id="anchor">`` (the heading that follows it, or to the next heading)."""
    lines = markdown.splitlines()
    found = headings(markdown)
    start = level = title = None
    own_heading = None
    for n, lv, text, slug in found:
        if slug == anchor:
            start, level, title, own_heading = n, lv, text, n
            break
    if start is None:
        for n, line in enumerate(lines, start=1):
            if re.search(rf"<a\s+(?:id|name)=\"{re.escape(anchor)}\"", line):
                start = own_heading = n
                after = [h for h in found if h[0] > n]
                if after and all(not x.strip() for x in lines[n:after[0][0] - 1]):
                    own_heading, level, title = after[0][0], after[0][1], after[0][2]
                break
    if start is None:
        return None
    end = len(lines)
    for n, lv, _text, _slug in found:
        if n > own_heading and (level is None or lv <= level):
            end = n - 1
            break
    return start, end, title or anchor


# ---------------------------------------------------------------- usage

def visible_text(markdown: str) -> str:
    """The text in which uses count, line structure kept: fenced code blocks,
    the chapter's title (its first ``# `` heading: it names the subject the
    chapter defines), the ``## Objectives`` section, link targets and HTML tags
    blanked."""
    out, fence, objectives, titled = [], None, False, False
    for line in markdown.splitlines():
        f = _FENCE.match(line)
        if fence is not None:
            if f and line.strip().startswith(fence):
                fence = None
            out.append("")
            continue
        if f:
            fence = f.group(1)
            out.append("")
            continue
        if line.startswith("# ") and not titled:
            titled = True
            out.append("")
            continue
        if line.startswith("## "):
            objectives = line.strip() == "## Objectives"
        if objectives:
            out.append("")
            continue
        line = re.sub(r"\]\([^)\s]*\)", "]", line)          # link targets
        line = re.sub(r"<[^>\n]+>", " ", line)               # html tags, <a id=...>
        out.append(line)
    return "\n".join(out)


def word_pattern(word: str) -> str:
    """A use of ``word``: whole word, any case, optional plural, spaces may wrap."""
    parts = [re.escape(p) for p in word.split()]
    body = r"\s+".join(parts)
    return rf"(?<!\w){body}(?:s|es)?(?!\w)"


def uses(entry: Entry, text: str):
    """(offset, end, word) of every use of the entry's term or aliases in ``text``."""
    found = []
    for word in entry.words:
        for m in re.finditer(word_pattern(word), text, re.I):
            found.append((m.start(), m.end(), m.group(0)))
    return sorted(found)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@dataclass
class Definition:
    entry: Entry
    order: int          # the chapter's position in course order
    start: int          # first line of the defining section
    end: int
    title: str


def definitions(entries: list[Entry], folder: Path) -> tuple[dict, list[str]]:
    """``{term: Definition}`` for the entries whose link resolves, and the
    problems of those that do not (no such chapter, no such heading)."""
    files = chapter_files(folder)
    order = {p.name: i for i, p in enumerate(files)}
    found, problems = {}, []
    for e in entries:
        if e.file not in order:
            problems.append(f"GLOSSARY.md:{e.line}: '{e.term}' links to {e.file}, which is "
                            f"not a chapter in {Path(folder).name}/")
            continue
        text = (Path(folder) / e.file).read_text(encoding="utf-8")
        span = section_span(text, e.anchor)
        if span is None or e.anchor not in anchors(text):
            problems.append(f"GLOSSARY.md:{e.line}: '{e.term}' links to {e.where()}, but "
                            f"{e.file} has no heading or <a id> '{e.anchor}'")
            continue
        if e.listed_under is not None and e.listed_under != e.chapter:
            problems.append(f"GLOSSARY.md:{e.line}: '{e.term}' is defined in chapter "
                            f"{e.chapter} but listed under the glossary's section "
                            f"{e.listed_under}")
        found[e.term] = Definition(e, order[e.file], *span)
    return found, problems


def not_in_defining_section(defs: dict, folder: Path) -> list[str]:
    problems = []
    for d in defs.values():
        text = visible_text((Path(folder) / d.entry.file).read_text(encoding="utf-8"))
        lines = text.splitlines()
        section = "\n".join(lines[d.start - 1:d.end])
        if not uses(d.entry, section):
            problems.append(
                f"GLOSSARY.md:{d.entry.line}: '{d.entry.term}' (or an alias: "
                f"{d.entry.aliases}) does not appear in its defining section "
                f"{d.entry.file}:{d.start}-{d.end} ('{d.title}')")
    return problems


def early_uses(defs: dict, folder: Path) -> list[str]:
    """Every use of a term before its defining section, in course order, as
    ``chapter:line: message``."""
    problems = []
    for i, path in enumerate(chapter_files(folder)):
        text = visible_text(path.read_text(encoding="utf-8"))
        for d in defs.values():
            if i > d.order:
                continue
            for start, end, word in uses(d.entry, text):
                line = _line_of(text, start)
                if i == d.order and line >= d.start:
                    continue
                pointer = POINTER.match(text, end)
                if pointer and pointer.group(1) == d.entry.chapter:
                    continue
                hint = (f"the pointer says chapter {pointer.group(1)}, the term is defined in "
                        f"chapter {d.entry.chapter}; " if pointer else "")
                word = " ".join(word.split())
                problems.append(
                    f"{path.name}:{line}: '{word}' ({d.entry.term}) is used before it is "
                    f"defined in {d.entry.file}:{d.start} (chapter {d.entry.chapter} "
                    f"'{d.title}'); {hint}define it here, reword, or write "
                    f"'(defined in chapter {d.entry.chapter})' right after it")
    return problems


def check(glossary_text: str, folder: Path) -> dict[str, list[str]]:
    """All the glossary's problems, by kind."""
    entries, malformed = parse(glossary_text)
    defs, broken = definitions(entries, folder)
    return {"entries": entries, "malformed": malformed, "broken": broken,
            "absent": not_in_defining_section(defs, folder),
            "early": early_uses(defs, folder)}
