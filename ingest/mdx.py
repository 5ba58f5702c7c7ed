"""MDX pages (Mintlify, Docusaurus, Nextra doc sites) as plain markdown.

MDX is markdown with JSX components around it: `<Note>`, `<Tabs>` / `<Tab title="Linux">`,
`<Card title=… href=…>`, plus `import` / `export` lines. Left in, the component lines are
noise in every passage, and the indentation inside a component turns its paragraphs into
indented code for a markdown parser. So: the import/export lines go, a component line goes
(a `title` it carries stays, as a bold line: "Linux" says which tab the commands are for),
and what a component wraps is un-indented by its own indentation. Code fences are left as
they are. Plain line scanning, no JSX parser: components in docs are one tag per line.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_MODULE_LINE = re.compile(r"^(?:import\s.+\sfrom\s|import\s+['\"]|export\s+(?:const|default|function|let)\s)")
# A JSX component starts with a capital letter; HTML tags (<br>, <details>) are left to markdown.
_TAG_START = re.compile(r"^\s*<(/?)([A-Z][\w.]*)")
_CLOSE_AT_END = re.compile(r"</[A-Z][\w.]*>\s*$")
_TITLE = re.compile(r"""\btitle=(?:"([^"]*)"|'([^']*)'|\{["'`]([^"'`]*)["'`]\})""")


def mdx_to_markdown(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    dedent: list[int] = []  # for each open component, the indentation of what it wraps (-1: not seen yet)
    fence = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if fence:
            out.append(_unindent(line, dedent))
            if line.strip().startswith(fence):
                fence = ""
            continue
        m = _FENCE.match(line)
        if m:
            _note_indent(line, dedent)
            fence = m.group(1)[0] * 3
            out.append(_unindent(line, dedent))
            continue
        if not dedent and _MODULE_LINE.match(line):
            continue
        tag = _TAG_START.match(line)
        if tag is None:
            if line.strip():
                _note_indent(line, dedent)
            out.append(_unindent(line, dedent))
            continue
        # A tag may spread its attributes over several lines: read up to its closing '>'.
        whole, extra = line, 0
        while ">" not in whole and i < len(lines) and extra < 20:
            whole += " " + lines[i].strip()
            i, extra = i + 1, extra + 1
        if tag.group(1):  # </Tab>
            if dedent:
                dedent.pop()
            continue
        title = _TITLE.search(whole)
        name = next((g for g in title.groups() if g is not None), "").strip() if title else ""
        if name:
            out += ["", f"**{name}**", ""]
        if whole.rstrip().endswith("/>"):
            continue  # <Card title="…" href="…" />
        after = whole[whole.index(">") + 1:].strip() if ">" in whole else ""
        inner = _CLOSE_AT_END.sub("", after)
        if inner != after:
            out.append(inner)  # <Note>One line.</Note>
            continue
        dedent.append(-1)
        if after:
            out.append(after)
    return "\n".join(out)


def _note_indent(line: str, dedent: list[int]) -> None:
    if dedent and dedent[-1] < 0:
        dedent[-1] = len(line) - len(line.lstrip(" "))


def _unindent(line: str, dedent: list[int]) -> str:
    n = max([d for d in dedent if d > 0], default=0)
    lead = len(line) - len(line.lstrip(" "))
    return line[min(n, lead):]
