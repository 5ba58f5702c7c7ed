"""MDX pages (Mintlify, Docusaurus, Nextra doc sites) as plain markdown.

MDX is markdown with JSX components around it: `<Note>`, `<Tabs>` / `<Tab title="Linux">`,
`<Card title=… href=…>`, plus `import` / `export` lines. Left in, the component lines are
noise in every passage, and the indentation inside a component turns its paragraphs into
indented code for a markdown parser. So: the import/export lines go, a component line goes
(a `title` or `label` it carries stays, as a bold line: "Linux" says which tab the commands
are for),
MDX comments `{/* … */}` go,
and what a component wraps is un-indented by its own indentation. Code fences are left as
they are. Plain line scanning, no JSX parser: components in docs are one tag per line.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_MODULE_LINE = re.compile(r"^(?:import\s.+\sfrom\s|import\s+['\"]|export\s+(?:const|default|function|let)\s)")
# A JSX component starts with a capital letter; HTML tags (<br>, <details>) are left to markdown.
_TAG_START = re.compile(r"^\s*<(/?)([A-Z][\w.]*)")
_ATTRIBUTE_LINE = re.compile(r"^\s*(?:[\w:-]+(?:=|\s*$)|/?>|\{)")  # title="…", cols={2}, a bare flag, the closing >
_MDX_COMMENT = re.compile(r"^\s*\{/\*.*\*/\}\s*$")  # {/* a comment */}
_CLOSE_AT_END = re.compile(r"</[A-Z][\w.]*>\s*$")
_TITLE = re.compile(r"""\b(?:title|label)=(?:"([^"]*)"|'([^']*)'|\{["'`]([^"'`]*)["'`]\})""")
# Docusaurus reads .md files as MDX too: a page importing its theme's components, or using
# tabs, is MDX whatever its suffix.
_MDX_SIGNS = re.compile(r"^(?:import\s+\w+\s+from\s+['\"]@(?:theme|site|docusaurus)/|\s*<(?:Tabs|TabItem)\b)", re.M)


def looks_like_mdx(text: str) -> bool:
    return bool(_MDX_SIGNS.search(text))


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
        if (not dedent and _MODULE_LINE.match(line)) or _MDX_COMMENT.match(line):
            continue
        tag = _TAG_START.match(line)
        if tag is None:
            if line.strip():
                _note_indent(line, dedent)
            out.append(_unindent(line, dedent))
            continue
        # A tag may spread its attributes over several lines: read up to its closing '>'.
        # One that never closes is text ("<Foo is deprecated"), and nothing after it is eaten.
        whole, extra = line, 0
        while ">" not in whole and i + extra < len(lines) and extra < 20 and _ATTRIBUTE_LINE.match(lines[i + extra]):
            whole += " " + lines[i + extra].strip()
            extra += 1
        if ">" not in whole:
            out.append(_unindent(line, dedent))
            continue
        i += extra
        _component(whole, bool(tag.group(1)), out, dedent)
    return "\n".join(out)


def _component(whole: str, closing: bool, out: list[str], dedent: list[int]) -> None:
    """One component tag (its lines joined): a closing tag ends what it wraps; an opening
    one leaves its title and, unless it closes on the same line, starts wrapping."""
    if closing:  # </Tab>
        if dedent:
            dedent.pop()
        return
    title = _TITLE.search(whole)
    name = next((g for g in title.groups() if g is not None), "").strip() if title else ""
    if name:
        out += ["", f"**{name}**", ""]
    if whole.rstrip().endswith("/>"):
        return  # <Card title="…" href="…" />
    after = whole[whole.index(">") + 1:].strip()
    inner = _CLOSE_AT_END.sub("", after)
    if inner != after:
        out.append(inner)  # <Note>One line.</Note>
        return
    dedent.append(-1)
    if after:
        out.append(after)


def _note_indent(line: str, dedent: list[int]) -> None:
    if dedent and dedent[-1] < 0:
        dedent[-1] = len(line) - len(line.lstrip(" "))


def _unindent(line: str, dedent: list[int]) -> str:
    n = max([d for d in dedent if d > 0], default=0)
    lead = len(line) - len(line.lstrip(" "))
    return line[min(n, lead):]
