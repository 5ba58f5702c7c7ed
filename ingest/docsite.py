"""Doc-site markup in markdown pages, unwrapped so a parser sees the content: MkDocs
Material (vLLM's, GPUStack's doc sites), MyST (Sphinx trees written in markdown: SGLang,
LMDeploy, TensorRT-LLM) and GitHub alerts.

What each hides from a CommonMark parser:

- MkDocs admonitions (`!!! note "Title"`, collapsible `??? tip`, `???+ warning`) and content
  tabs (`=== "pip"`) indent what they wrap by four spaces, which CommonMark reads as an
  indented code block: the note's paragraphs, lists and even headings became one opaque
  code chunk;
- MyST admonitions are fenced (```` ```{note} ````, `:::{tip}`): a note's sentences were
  quoted as code, and a colon fence's `:::` lines as prose; ```` ```{code-block} bash ````
  is a plain code fence;
- MkDocs snippet markers (`--8<-- [start:requirements]`, `--8<-- "docs/x.md"`) say which
  part of the file another page includes, and were quoted in answers as prose. A file of
  such parts (vLLM's `gpu.cuda.inc.md`) has no heading for them: the page that includes a
  part gives it one. So a named part starts a section titled by its name ("Pre built
  images"), one level above the file's own headings, and the other markers go;
- attribute lists after a heading (`## Full build {#full-build}`) became part of its title;
- a GitHub alert's marker (`> [!NOTE]`) was quoted as a link-like token;
- Docusaurus admonitions (`:::tip Pin the version`, `:::note[Title]`, closed by `:::`) are
  MyST's colon fences without the braces: their markers were quoted as prose;
- HTML collapsibles (`<details><summary>For <b>APT</b></summary> … </details>`, READMEs'
  FAQs and per-installer variants) were quoted with their tags, and a FAQ made of them read
  as one block of markup.

So an admonition's, tab's or collapsible's marker becomes a bold line with its title (or its kind:
"Note", or the tab's label: "pip" says which installer the commands are for), what it wraps
is un-indented or un-fenced, snippet markers and heading attributes go. Code fences are left
as they are. Plain line scanning, like mdx.py: these markers are one per line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# `!!! note "Title"`, `??? console "pip"`, `???+ tip`, `!!! warning ""` (an empty title hides it).
_ADMONITION = re.compile(r"""^(?:!!!|\?\?\?\+?)\s+([\w-]+)(?:\s+[\w-]+)*(?:\s+"([^"]*)")?\s*$""")
_TAB = re.compile(r"""^===\+?\s+"([^"]*)"\s*$""")
_SNIPPET = re.compile(r"^\s*-{1,2}8<-{1,2}(?:\s|$)")
_PART_START = re.compile(r"^\s*-{1,2}8<-{1,2}\s+\[start:([\w.-]+)\]\s*$")
_ATX = re.compile(r"^(#{1,6})\s")
_ATTRS = re.compile(r"\{\s*[:#.][^{}]*\}\s*")
# MyST: ```{note}, ````{tip} Title, :::{warning}, ```{admonition} Title.
_MYST_KINDS = ("note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error",
               "seealso", "admonition", "dropdown")
_MYST_OPEN = re.compile(r"^(`{3,}|:{3,})\{([\w-]+)\}\s*(.*?)\s*$")
# Docusaurus: :::note, :::tip Title, :::caution[Title] (a known kind, no braces); Yuque's
# exports write :::tips, :::info, :::color1 … the same way.
_DOCUSAURUS_OPEN = re.compile(r"^(:{3,})(note|tips?|info|caution|danger|warning|important|success|secondary|color\d)"
                              r"(?:\[([^\]]*)\]|\s+(.*?))?\s*$", re.I)
# Sphinx-design containers: a tab's or card's label says which case its content is for; a
# tab set or grid only groups them.
_MYST_LABELLED = ("tab-item", "card", "grid-item-card")
_MYST_GROUPS = ("tab-set", "grid", "grid-item")
_MYST_OPTION = re.compile(r"^:[\w-]+:")
_GH_ALERT = re.compile(r"^(\s*>\s*)\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$", re.I)
# `<details>`, `<details open>`, possibly with its `<summary>` on the same line; `</details>`.
_DETAILS_OPEN = re.compile(r"^(\s*)<details(?:\s[^>]*)?>(.*)$", re.I)
_DETAILS_CLOSE = re.compile(r"^\s*</details>\s*$", re.I)
_SUMMARY_BARE = re.compile(r"^\s*</?summary(?:\s[^>]*)?>\s*$", re.I)
_DETAILS_TAIL = re.compile(r"</details>\s*$", re.I)
_SUMMARY = re.compile(r"^(\s*)<summary(?:\s[^>]*)?>(.*?)</summary>\s*(.*)$", re.I)
_TAG = re.compile(r"<[^<>]*>")
# GitBook's Liquid blocks: {% hint style="warning" %} … {% endhint %}, {% tab title="pip" %}; the
# others ({% tabs %}, {% code title="x" %}, {% embed url="…" %}) only wrap. They were quoted raw (trial).
_LIQUID_HINT = re.compile(r"""^\s*\{%-?\s*hint\s+style=["']?(\w+)["']?\s*-?%\}(.*)$""")
_LIQUID_TAB = re.compile(r"""^\s*\{%-?\s*tab\s+title=["']([^"']*)["']\s*-?%\}\s*$""")
_LIQUID_TAG = re.compile(r"^\s*\{%-?\s*(?:end\w*|tabs|code|embed|raw|content-ref|file|swagger)\b[^%]*-?%\}\s*$")
_LIQUID_END = re.compile(r"\{%-?\s*endhint\s*-?%\}\s*$")
_HINTS = ("!!!", "???", "===", "8<-", "{#", "{:", "```{", "~~~{", ":::", "[!", "<details", "<DETAILS", "{%")


def looks_like_doc_site(text: str) -> bool:
    return any(hint in text for hint in _HINTS)


def unwrap_doc_site_markup(text: str) -> str:
    lines = text.split("\n")
    state = _Unwrapper(part_level=max(2, _outermost_heading(lines) - 1))
    for line in lines:
        state.feed(line)
    return "\n".join(state.out)


@dataclass
class _Unwrapper:
    part_level: int  # the heading level a snippet part gets: one above the file's own headings
    out: list[str] = field(default_factory=list)
    indents: list[int] = field(default_factory=list)  # per open MkDocs admonition or tab: its body's indentation
    closers: list[str] = field(default_factory=list)  # per open MyST admonition: the fence that closes it
    fence: str = ""
    options: bool = False  # just after a MyST opening: its `:class: tip` option lines go

    def feed(self, line: str) -> None:
        if line.strip():
            while self.indents and _indent(line) < self.indents[-1]:
                self.indents.pop()
        strip = self.indents[-1] if self.indents else 0
        body = line[strip:] if line.strip() else ""
        if self.options:
            if _MYST_OPTION.match(body.strip()):
                return
            self.options = False
        if self.fence:
            self.out.append(body)
            if body.strip().startswith(self.fence) and not body.strip().strip(self.fence[0]):
                self.fence = ""
            return
        if self.closers and body.strip() == self.closers[-1]:
            self.closers.pop()
            self.out.append("")
            return
        if self._myst(body) or self._snippet(body) or self._mkdocs(body, strip) or self._details(body) or self._liquid(body):
            return
        opened = _FENCE.match(body)
        if opened:
            self.fence = opened.group(1)
        alert = _GH_ALERT.match(body)
        if alert:
            body = f"{alert.group(1)}**{alert.group(2).capitalize()}**"
        self.out.append(_without_attributes(body) if body.startswith("#") else body)

    def _liquid(self, body: str) -> bool:
        """GitBook's blocks: a hint's kind and a tab's title become bold titles, the wrappers go."""
        hint = _LIQUID_HINT.match(body)
        if hint:
            self.out.append(f"**{hint.group(1).capitalize()}**")
            rest = _LIQUID_END.sub("", hint.group(2)).strip()
            self.out.extend([rest, ""] if rest else [""])
            return True
        tab = _LIQUID_TAB.match(body)
        if tab:
            self.out.extend([f"**{tab.group(1)}**", ""])
            return True
        if _LIQUID_TAG.match(body):
            self.out.append("")
            return True
        if _LIQUID_END.search(body):
            self.out.append(_LIQUID_END.sub("", body))
            return True
        return False

    def _myst(self, body: str) -> bool:
        myst = _MYST_OPEN.match(body.strip())
        if not myst:
            return self._docusaurus(body)
        run, kind, title = myst.groups()
        if kind.lower() in _MYST_KINDS or kind.lower() in _MYST_LABELLED and title:
            self.out.extend([f"**{title or kind.capitalize()}**", ""])
            self.closers.append(run)
        elif kind.lower() in _MYST_GROUPS or kind.lower() in _MYST_LABELLED:
            self.closers.append(run)
        elif kind.lower() in ("code-block", "code", "sourcecode") and run[0] != ":":
            self.out.append(f"{run}{title}")
            self.fence = run
        else:
            return False
        self.options = True
        return True

    def _docusaurus(self, body: str) -> bool:
        opened = _DOCUSAURUS_OPEN.match(body.strip())
        if not opened:
            return False
        run, kind, bracketed, title = opened.groups()
        self.out.extend(["", f"**{(bracketed or title or '').strip() or kind.capitalize()}**", ""])
        self.closers.append(run)
        return True

    def _snippet(self, body: str) -> bool:
        if not _SNIPPET.match(body):
            return False
        part = _PART_START.match(body)
        if part:
            name = re.sub(r"[-_.]+", " ", part.group(1)).strip()
            self.out.extend(["", f"{'#' * self.part_level} {name[:1].upper()}{name[1:]}", ""])
        return True

    def _details(self, body: str) -> bool:
        """`<details>` and `</details>` go (a blank line ends the HTML block they opened);
        a one-line `<summary>` becomes the bold title, keeping the list indentation it had."""
        if _DETAILS_CLOSE.match(body) or _SUMMARY_BARE.match(body):  # a summary over several lines keeps its words
            self.out.append("")
            return True
        closed = _DETAILS_TAIL.search(body)
        if closed:  # `…last words</details>`
            self._details(body[:closed.start()]) or self.out.append(body[:closed.start()])
            self.out.append("")
            return True
        opened = _DETAILS_OPEN.match(body)
        if opened:
            indent, rest = opened.groups()
            self.out.append("")
            if rest.strip():
                self._details(indent + rest.strip()) or self.out.append(indent + rest.strip())
            return True
        summary = _SUMMARY.match(body)
        if not summary:
            return False
        indent, title, rest = summary.groups()
        title = " ".join(_TAG.sub("", title).split())
        self.out.extend(["", f"{indent}**{title}**", ""] if title else [""])
        if rest.strip() and not self._details(indent + rest.strip()):
            self.out.append(indent + rest.strip())
        return True

    def _mkdocs(self, body: str, strip: int) -> bool:
        marker = _ADMONITION.match(body) or _TAB.match(body)
        if not marker:
            return False
        title = marker.group(2) if marker.re is _ADMONITION else marker.group(1)
        if title is None:
            title = marker.group(1).replace("-", " ").capitalize()
        if title.strip():
            self.out.extend([f"**{title.strip()}**", ""])
        self.indents.append(strip + 4)
        return True


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


def _without_attributes(line: str) -> str:
    """`## Full build {#full-build}` → `## Full build` (found from the right, no backtracking)."""
    brace = line.rfind("{")
    if brace > 0 and _ATX.match(line) and _ATTRS.fullmatch(line, brace):
        return line[:brace].rstrip()
    return line
