"""MkDocs Material syntax (vLLM's, SGLang's and many other projects' doc sites) as plain markdown.

Three constructs hide a page's content from a markdown parser:

- admonitions (`!!! note "Title"`, collapsible `??? tip`, `???+ warning`) and content tabs
  (`=== "pip"`) indent what they wrap by four spaces, which CommonMark reads as an indented
  code block: the note's paragraphs, lists and even headings became one opaque code chunk;
- snippet markers (`--8<-- [start:requirements]`, `--8<-- "docs/x.md"`) say which part of
  the file another page includes, and were quoted in answers as prose. A file of such parts
  (vLLM's `gpu.cuda.inc.md`) has no heading for them: the page that includes a part gives
  it one. So a named part starts a section titled by its name ("Pre built images"), one
  level above the file's own headings, and the other markers go;
- attribute lists after a heading (`## Full build {#full-build}`) became part of its title.

So a marker line becomes a bold line with its title (or its kind: "Note", or the tab's
label: "pip" says which installer the commands are for), what it wraps is un-indented by
its four spaces, snippet markers go and heading attributes are cut. Code fences are left
as they are. Plain line scanning, like mdx.py: these markers are one per line.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# `!!! note "Title"`, `??? console "pip"`, `???+ tip`, `!!! warning ""` (an empty title hides it).
_ADMONITION = re.compile(r"""^(?:!!!|\?\?\?\+?)\s+([\w-]+)(?:\s+[\w-]+)*(?:\s+"([^"]*)")?\s*$""")
_TAB = re.compile(r"""^===\+?\s+"([^"]*)"\s*$""")
_SNIPPET = re.compile(r"^\s*-{1,2}8<-{1,2}(?:\s|$)")
_PART_START = re.compile(r"^\s*-{1,2}8<-{1,2}\s+\[start:([\w.-]+)\]\s*$")
_ATX = re.compile(r"^(#{1,6})\s")
_HEADING_ATTRS = re.compile(r"^(#{1,6}\s.*?)\s*\{\s*[:#.][^{}]*\}\s*$")
_HINTS = ("!!!", "???", "===", "8<-", "{#", "{:")


def looks_like_mkdocs(text: str) -> bool:
    return any(hint in text for hint in _HINTS)


def mkdocs_to_markdown(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    indents: list[int] = []  # for each open admonition or tab, the indentation of what it wraps
    fence = ""
    part_level = max(2, _outermost_heading(lines) - 1)
    for line in lines:
        if line.strip():
            while indents and _indent(line) < indents[-1]:
                indents.pop()
        strip = indents[-1] if indents else 0
        body = line[strip:] if line.strip() else ""
        if fence:
            out.append(body)
            if body.strip().startswith(fence):
                fence = ""
            continue
        opened = _FENCE.match(body)
        if opened:
            fence = opened.group(1)
            out.append(body)
            continue
        if _SNIPPET.match(body):
            part = _PART_START.match(body)
            if part:
                name = re.sub(r"[-_.]+", " ", part.group(1)).strip()
                out.extend(["", f"{'#' * part_level} {name[:1].upper()}{name[1:]}", ""])
            continue
        marker = _ADMONITION.match(body) or _TAB.match(body)
        if marker:
            title = marker.group(2) if marker.re is _ADMONITION else marker.group(1)
            if title is None:
                title = marker.group(1).replace("-", " ").capitalize()
            if title.strip():
                out.extend([f"**{title.strip()}**", ""])
            indents.append(strip + 4)
            continue
        heading = _HEADING_ATTRS.match(body)
        out.append(heading.group(1) if heading else body)
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _outermost_heading(lines: list[str]) -> int:
    """The smallest ATX heading level outside code fences (7 when there is none)."""
    level, fence = 7, ""
    for line in lines:
        opened = _FENCE.match(line)
        if opened and (not fence or line.strip().startswith(fence)):
            fence = "" if fence else opened.group(1)
        elif not fence:
            heading = _ATX.match(line)
            if heading:
                level = min(level, len(heading.group(1)))
    return level
