"""Reading KB files: front matter, format, language, and a stable content hash.

Articles written for this project carry YAML front matter (id, lang, title, product,
signatures, tags, applies_to). A user's own runbook usually does not, so every field has a
fallback derived from the file itself:

- format from the content: a `.txt` with markdown headings, fences or tables is markdown;
  `.html`/`.htm` pages are converted to markdown (ingest/html.py), and so are reST pages
  (`.rst`, Sphinx doc trees; ingest/rst.py);
- language from the body text, not counting navigation links (`[简体中文](…)`), link
  targets, URLs and code, so an English page with a language switch stays English;
- id from the path (twins and collisions are settled across documents in ingest/identity.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from oncall_common.lang import cjk_count, detect_lang

from .files import HTML_SUFFIXES, MARKDOWN_SUFFIXES, RST_SUFFIXES, TEXT_SUFFIXES, content_hash, find_files, read_text  # noqa: F401  (re-exported)

_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)
# Hugo writes its front matter in TOML between `+++` lines (title, weight, url…).
_FRONT_TOML = re.compile(r"\A\+\+\+[ \t]*\n(.*?)\n\+\+\+[ \t]*\n", re.S)


@dataclass(frozen=True)
class Document:
    id: str
    lang: str
    title: str
    product: str
    source: str  # path relative to the root it was found under, for display and citations
    path: str  # absolute path, the manifest key
    body: str
    hash: str
    is_markdown: bool
    signatures: tuple[str, ...] = ()
    # Signatures that are normal output, quoted for their figures (`num_blocks_global`):
    # a log that has them is read, not diagnosed as failing.
    informational: tuple[str, ...] = ()
    # Signatures (or fragments of them) that decide an incident on their own, at any log level.
    critical: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] = field(default=())
    format: str = "markdown"  # markdown | text | html | rst | csv (what the file was; html, rst and csv are chunked as markdown)
    structured: bool = False  # front matter declares the article structure (has an `id`)
    applies_to: dict = field(default_factory=dict, hash=False, compare=False)
    root: str = ""  # the source root it was found under


def _slug(text: str) -> str:
    slug = re.sub(r"[^\w\u4e00-\u9fff]+", "-", text.lower()).strip("-")
    return slug or "doc"


def _as_tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value if str(v).strip())
    return (str(value),) if str(value).strip() else ()


def _applies_to(value: object) -> dict:
    """`applies_to: {hardware: [nvidia], versions: ">=0.8.0"}` as plain JSON data."""
    if not isinstance(value, dict):
        return {}
    return json.loads(json.dumps({str(k): v for k, v in value.items()}, default=str, ensure_ascii=False))


def parse_document(path: Path, root: Path, raw: bytes) -> Document:
    """Parse one file. Undecodable bytes are replaced rather than failing the whole ingest
    (files.read_text lets callers skip binaries first)."""
    text, _ = read_text(raw)
    if text is None:
        text = raw.decode("utf-8", errors="replace")
    text = text.replace("\r\n", "\n")
    suffix = path.suffix.lower()
    meta: dict = {}
    html_title = ""
    if suffix in HTML_SUFFIXES:
        from .html import html_to_markdown

        html_title, text = html_to_markdown(text)
        fmt = "html"
    elif suffix == ".csv":
        from .exports import csv_to_markdown

        html_title, text = csv_to_markdown(text, path.stem)
        fmt = "csv"
    elif suffix in RST_SUFFIXES:
        from .rst import rst_to_markdown

        html_title, text = rst_to_markdown(text)
        fmt = "rst"
    else:
        if suffix == ".ipynb":
            from .exports import notebook_to_markdown

            text = notebook_to_markdown(text)
        meta, text = _front_matter(text)
        if suffix in MARKDOWN_SUFFIXES:
            text = promote_bold_headings(text)
        from .mdx import looks_like_mdx, mdx_to_markdown

        if suffix == ".mdx" or (suffix in MARKDOWN_SUFFIXES and looks_like_mdx(text)):
            text = mdx_to_markdown(text)
        fmt = "markdown" if suffix in MARKDOWN_SUFFIXES or suffix == ".ipynb" or looks_like_markdown(text) else "text"
        if fmt == "markdown":
            from .docsite import looks_like_doc_site, unwrap_doc_site_markup

            if looks_like_doc_site(text):
                text = unwrap_doc_site_markup(text)
    is_markdown = fmt != "text"
    if is_markdown and fmt == "markdown" and "<table" in text.lower():
        text = html_tables_to_pipes(text)
    if is_markdown:
        text = strip_non_content(text)
    source = str(path.relative_to(root)) if root.is_dir() else path.name
    from .chunking import heading_text, text_title  # chunking imports this module

    # A heading's words, not its markup: "Gemma 2: [`collection`](https://…)" titled every passage with the link.
    # A .txt read as markdown (bullets, code spans) with no markdown heading still has its first line:
    # "推理服务值班手册（FastDeploy 常见问题）" over "1.显存不足" was titled by the file name (trial).
    title = str(meta.get("title") or html_title or (heading_text(_first_heading(text)) if is_markdown else "")
                or (text_title(text) if not is_markdown or suffix in TEXT_SUFFIXES else "") or path.stem)
    lang = str(meta.get("lang") or document_lang(text))
    doc_id = str(meta.get("id") or _slug(str(Path(source).with_suffix(""))))
    return Document(
        id=doc_id,
        lang=lang,
        title=title,
        product=str(meta.get("product") or "general"),
        source=source,
        path=str(path.resolve()),
        body=text,
        hash=content_hash(raw),
        is_markdown=is_markdown,
        signatures=_as_tuple(meta.get("signatures")),
        informational=_as_tuple(meta.get("informational")),
        critical=_as_tuple(meta.get("critical")),
        tags=_as_tuple(meta.get("tags")),
        sources=_as_tuple(meta.get("sources")),
        format=fmt,
        structured=bool(meta.get("id")),
        applies_to=_applies_to(meta.get("applies_to")),
        root=str(root.resolve()),
    )


def _front_matter(text: str) -> tuple[dict, str]:
    """(the front matter's fields, the text after it): YAML between `---` lines (this KB,
    Jekyll, MkDocs, Docusaurus) or TOML between `+++` lines (Hugo). Front matter that does
    not parse is still cut off: its `key = value` lines are not the document's prose."""
    for pattern, toml in ((_FRONT, False), (_FRONT_TOML, True)):
        match = pattern.match(text)
        if not match:
            continue
        try:
            if toml:
                import tomllib

                loaded = tomllib.loads(match.group(1))
            else:
                import yaml

                loaded = yaml.safe_load(match.group(1))
        except Exception:  # yaml.YAMLError, tomllib.TOMLDecodeError: a broken header, not a broken file
            loaded = None
        return (loaded if isinstance(loaded, dict) else {}), text[match.end():]
    return {}, text


def _first_heading(text: str) -> str:
    """The first real heading, if it titles the page: a `# comment` inside a code block is
    not one (an install page that opens with a shell snippet was titled "Install vLLM with
    CUDA 12.9."), and neither is the first of several sections at the same level (a FAQ of
    `## Q` sections, or an include fragment of `####` sections, was titled with its first
    question, and that title prefixed every passage). Empty when no heading titles it."""
    headings = _headings(text)
    if not headings:
        return ""
    level, title = headings[0]
    if level == 1 or all(other > level for other, _ in headings[1:]):
        return title
    return ""


def lone_h1(text: str) -> str:
    """The page's `#` heading when it opens the page and is its only one, else ""."""
    headings = _headings(text)
    return headings[0][1] if headings and headings[0][0] == 1 and all(level > 1 for level, _ in headings[1:]) else ""


def _headings(text: str) -> list[tuple[int, str]]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    return [(int(tok.tag[1]), tokens[i + 1].content.strip()) for i, tok in enumerate(tokens[:-1])
            if tok.type == "heading_open" and tok.level == 0 and tokens[i + 1].content.strip()]


# ---------------------------------------------------------------- format

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$")
_ATX = re.compile(r"^#{1,6}\s+\S")
_LINK = re.compile(r"\[[^\]\n]+\]\([^)\s]+\)")
_BOLD = re.compile(r"\*\*[^*\n]+\*\*")


def looks_like_markdown(text: str) -> bool:
    """Markdown saved as .txt: fences, pipe tables, `##` headings and links outweigh the
    plain-text signs (tab-separated tables, • bullets, shell comments such as `# 查看变量值`)."""
    md = plain = 0
    fences = 0
    previous_blank = True
    previous = ""
    for line in text.splitlines():
        if _is_underline(line, previous):
            md += 2  # a title underlined with ==== or ---- (a setext heading)
        previous = line
        if _FENCE.match(line):
            fences += 1
        elif _TABLE_RULE.match(line):
            md += 3
        elif _ATX.match(line):
            # `## Heading` is markdown; a lone `# comment` right under text is a shell comment.
            md += 2 if line.startswith("##") or previous_blank else 0
        if "\t" in line.strip():
            plain += 1
        if line.lstrip().startswith("•"):
            plain += 1
        previous_blank = not line.strip()
    md += 2 * (fences // 2) + len(_LINK.findall(text)) + len(_BOLD.findall(text)) // 2
    return md >= 3 and md > plain


_UNDERLINE = re.compile(r"^(?:={3,}|-{3,})\s*$")


def _is_underline(line: str, previous: str) -> bool:
    """`====` or `----` right under a short line of text, about as long as it."""
    title = previous.strip()
    if not _UNDERLINE.match(line) or not title or len(title) > 80 or title[0] in "-*+#>|=`" or previous[:1].isspace():
        return False
    return abs(len(line.strip()) - len(title)) <= max(3, len(title) // 3)


# ---------------------------------------------------------------- language

_LANG_LABELS = {"简体中文", "中文", "繁體中文", "english", "英文", "英语", "chinese", "日本語", "한국어", "zh", "en", "cn"}
_LINK_ONLY_LINE = re.compile(r"^\s*(?:[|/·•,]?\s*\[[^\]\n]*\]\([^)\n]*\)\s*)+[|/·,]?\s*$")
_LINK_LABEL = re.compile(r"\[([^\]\n]*)\]\(")


def _is_language_switch(line: str) -> bool:
    if not _LINK_ONLY_LINE.match(line):
        return False
    labels = [label.strip().strip("*_ ").lower() for label in _LINK_LABEL.findall(line)]
    return bool(labels) and all(label in _LANG_LABELS for label in labels)


_BOLD_LINE = re.compile(r"^\*\*([^*\n]{1,150}?)\s*[:：]?\*\*\s*[:：]?$")
# "Q:" / "问：" leads a FAQ's question; a numbered "Q1:" only with a question's words, since
# "**Q1: revenue grew 12%**" is a quarter.
_FAQ_LEAD = re.compile(r"(?:Q|问)\s*[:：]\s*\S|(?:Q|问)\s*\d{1,3}\s*(?:[:：.)）、]|\s-\s)\s*(?:(?:how|what|why|when|where|which|who|"
                       r"can|could|does|do|did|is|are|were|has|have|should|will)\b|.*[?？]"
                       r"|.*(?:如何|怎么|怎样|为什么|什么|能否|是否|吗|哪|多少|有没有|能不能|可否))", re.I)
_ADMONITION_LABELS = frozenset({"note", "tip", "tips", "info", "warning", "caution", "danger", "important", "hint",
                                "code", "example", "注意", "提示", "警告", "说明"})


def promote_bold_headings(text: str) -> str:
    """A page exported from Feishu, Yuque or Word has no `##` headings: its sections are bold
    lines ("**一、问题现象**", "**处理方法**"), and the page was one passage that answered nothing
    in particular. Where a page has no heading below its title and at least two distinct bold
    lines stand alone as paragraphs (short, or a FAQ's question; not a note's "**Note**"),
    they become `##` headings. Run before doc-site markup is unwrapped, whose notes and tabs
    become bold lines too."""
    if "**" not in text:
        return text
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    if any(t.type == "heading_open" and t.level == 0 and t.tag != "h1" for t in tokens):
        return text
    found: dict[int, str] = {}
    for i, tok in enumerate(tokens):
        if tok.type != "paragraph_open" or tok.level != 0 or tok.map is None or tok.map[1] - tok.map[0] != 1:
            continue
        m = _BOLD_LINE.match(tokens[i + 1].content.strip())
        title = m.group(1).strip() if m else ""
        # Short, or a FAQ's question: a long bold sentence is emphasis, not a heading. A "Q:"
        # entry is a question without its mark too ("**Q: A pod is stuck in Init for 20
        # minutes.**" was glued to the entry before it, and cited under that one's title).
        if title and title.lower() not in _ADMONITION_LABELS and (
                len(title) <= 40 or title.endswith(("?", "？")) or _FAQ_LEAD.match(title)):
            found[tok.map[0]] = title
    if len(set(found.values())) < 2:
        return text
    lines = text.split("\n")
    for n, title in found.items():
        lines[n] = f"## {title}"
    return "\n".join(lines)


_TABLE_TAG = re.compile(r"<(/?)table\b[^>]*>", re.I)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_OPEN_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def html_tables_to_pipes(text: str) -> str:
    """HTML tables written into markdown (Feishu, Yuque and GitBook exports: `<table>` with `<br>`
    in its cells) as pipe tables: kept as HTML, a 9 kB parameter table was one chunk of markup,
    its rows never split, and the row asked about was not quoted (trial). Only a table that opens
    a line outside code (CommonMark fences: a run closed by one as long), matched with its own
    closing tag, nested tables and all; an unclosed one stays as written. One pass over the tags
    (review: a lazy match was quadratic on an unclosed `<table`, and rewrote samples in code and
    inline mentions)."""
    lines = text.split("\n")
    code = _code_lines(lines)
    spans: dict[int, int] = {}  # the first line of a top-level block table -> its last line
    stack: list[tuple[int, bool]] = []  # open tables: (line, opens a line)
    for n, line in enumerate(lines):
        if code[n]:
            continue
        # tags in inline code are mentions: an unclosed "`<table>`" kept every later table as HTML
        for tag in _TABLE_TAG.finditer(_INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)):
            if not tag.group(1):
                stack.append((n, tag.start() <= 3 and not line[:tag.start()].strip()))
            elif stack:
                start, block = stack.pop()
                if not stack and block and not line[tag.end():].strip():
                    spans[start] = n
    out: list[str] = []
    n = 0
    while n < len(lines):
        if n in spans:
            out.extend(["", _pipes("\n".join(lines[n:spans[n] + 1])), ""])
            n = spans[n] + 1
            continue
        out.append(lines[n])
        n += 1
    return "\n".join(out)


def _code_lines(lines: list[str]) -> list[bool]:
    """Which lines are inside (or open or close) a fenced code block, CommonMark's way: a fence is
    closed by a run of its character at least as long."""
    marks: list[bool] = []
    fence = ""
    for line in lines:
        opened = _OPEN_FENCE.match(line)
        if fence:
            marks.append(True)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
                fence = ""
        elif opened:
            fence = opened.group(1)
            marks.append(True)
        else:
            marks.append(False)
    return marks


def _pipes(html: str) -> str:
    from bs4 import BeautifulSoup

    from .html import convert_soup, expand_spans

    soup = BeautifulSoup(html, "html.parser")
    expand_spans(soup)
    return convert_soup(soup).strip()


def strip_non_content(text: str) -> str:
    """Drop lines that are only a language switch, e.g. `[简体中文](../zh/usage/log.md)`,
    and, outside code, lines that render nothing: mkdocs anchors (`[](){ #faq }`), empty
    HTML anchors and one-line comments (`<!-- toc -->`); Hugo shortcodes, keeping the
    text they wrap; images, markdown or <img> (a Yuque screenshot's link is 300 characters of
    URL), and the layout tags left around them (a README's centred logo and badges); inline
    formatting tags, keeping their text (`<font color=red>0.88</font>` from Yuque and
    Feishu exports); and whole comment, `<style>` and `<script>` blocks (vLLM's quantization
    page styles its support table in a 20-line `<style>` block, and an answer quoted it
    before the table). Quoted in an answer they are noise that takes the room of the fix."""
    lines = text.split("\n")
    kept: list[str] = []
    fence = ""
    hidden = hidden_blocks(lines)
    changed = bool(hidden)
    for n, line in enumerate(lines):
        if n in hidden:
            if not hidden[n]:
                continue
            line = hidden[n]  # the text after a block that closes mid-line
        opened = _FENCE.match(line)
        if opened and (not fence or opened.group(1)[0] == fence):
            fence = "" if fence else opened.group(1)[0]
        elif not fence:
            bare = _SHORTCODE.sub("", line) if "{{" in line else line
            if "<" in bare or "![" in bare:
                bare = _outside_code(bare, lambda part: _EMPTY_LINK.sub("", _IMAGE.sub("", _FORMAT_TAG.sub("", _IMG_TAG.sub("", part)))))
                if _MARKUP_ONLY.match(bare):
                    bare = ""
            if bare != line:
                changed = True
                if not bare.strip():
                    continue
                line = bare
            if _is_language_switch(line) or _INVISIBLE.match(line):
                changed = True
                continue
        kept.append(line)
    toc = page_toc_lines(kept)
    if toc:
        kept = [line for i, line in enumerate(kept) if i not in toc]
        changed = True
    return "\n".join(kept) if changed else text


def hidden_blocks(lines: list[str]) -> dict[int, str]:
    """Lines inside an HTML comment, <style> or <script> block that opens a line outside
    code: line number -> "" (drop it) or, for a block that closes mid-line, the text after
    it. A block that never closes hides nothing: a stray `<!-- TODO` must not swallow the
    rest of a page."""
    out: dict[int, str] = {}
    unclosed: set[str] = set()  # end markers no later line holds: openers after one never close
    fence = ""
    n = 0
    while n < len(lines):
        line = lines[n]
        opened = _FENCE.match(line)
        if opened and (not fence or opened.group(1)[0] == fence):
            fence = "" if fence else opened.group(1)[0]
        block = None if fence or opened else _HIDDEN_BLOCK.match(line)
        if block:
            comment = block.group(1) is None
            end = "-->" if comment else f"</{block.group(1).lower()}>"
            start = block.end(0) - (2 if comment else 0)  # "<!-->" closes itself
            for m in range(n, len(lines)) if end not in unclosed else ():
                closes = lines[m].lower().find(end, start if m == n else 0)
                if closes >= 0:
                    rest = lines[m][closes + len(end):]
                    span = {k: "" for k in range(n, m + 1)}
                    if rest.strip():
                        if m == n:
                            break  # "<!-- note --> text": a one-line remark before text stays as written
                        span[m] = rest
                    out.update(span)
                    n = m
                    break
            else:
                unclosed.add(end)  # so a page of stray openers is read once, not once per opener
        n += 1
    return out


# An item of a page's own table of contents: a list item that starts with a link to an anchor
# of the page, with or without a line of description ("- [The Grammar Parameter](#the-grammar-
# parameter): Shape your AI's responses with precision.").
_TOC_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[[^\]\n]+\]\(#[^)\s]*\)")


def page_toc_lines(lines: list[str]) -> set[int]:
    """The lines of a page's own table of contents: runs of two or more such items, outside
    code. Indexed, a table of contents names every heading of the page in a few lines, so it
    matched questions about any of them and was quoted instead of the section it points to
    (a "Table of Contents 📚" section led a question on the grammar parameter). A lone anchor
    link is no table of contents: it may be the sentence "see [Docker](#docker)"."""
    out: set[int] = set()
    run: list[int] = []
    fence = ""
    for i, line in enumerate([*lines, ""]):
        opened = _FENCE.match(line)
        if opened and (not fence or opened.group(1)[0] == fence):
            fence = "" if fence else opened.group(1)[0]
        if not fence and not opened and _TOC_ITEM.match(line):
            run.append(i)
            continue
        if len(run) >= 2:
            out.update(run)
        run = []
    return out


# Hugo shortcodes render as page furniture ({{< alert >}}, {{% notice %}}) or as a link
# target ({{% relref "x" %}}); their text, if any, sits between an opening and a closing one.
_SHORTCODE = re.compile(r"\{\{[<%].{0,300}?[%>]\}\}")


# An <img> in a page's HTML is an image like `![x](y)`: a README's logo and its badges, each a
# link around an image, came back in answers as 1,000 characters of markup under a passage.
_IMG_TAG = re.compile(r"<(?:img|source)\b[^<>\n]{0,1000}>", re.I)
# What is left of such a line: layout tags that render nothing once their images are gone
# (`<p align="center">`, `<a href="…">`, `</a>`, `<div align='center'>`, `<br/>`). A line with
# any text, or a table's tags, stays.
_MARKUP_ONLY = re.compile(r"^\s*(?:</?(?:p|div|a|br|picture|center|hr|img)\b[^<>\n]{0,1000}>\s*)+$", re.I)  # SGLang writes </img>
_FORMAT_TAG = re.compile(r"</?(?:font|span|u|mark|center|small|big|ins)\b[^<>\n]{0,300}>", re.I)
# A link's destination: `(<path with spaces (1).svg>)` in angle brackets (GitBook writes its
# images so), `(https://en.wikipedia.org/wiki/X_(y))` with a pair of parentheses, or plain.
# Cut at the first ")", the image of a GitBook page left ".svg>)" in the quoted answer.
# The first two bounded, the plain one possessive (Python 3.11): unbounded, a malformed
# "[x](<y) " repeated over a 100 kB line took over a second, and a line of "![](<" with no
# ")" took 2.5 times the plain pattern's 7 s (now less than it).
LINK_DEST = r"\((?:<[^<>\n]{0,300}>[^)\n]{0,300}|[^()\n]{0,300}(?:\([^()\n]{0,300}\)[^()\n]{0,300}){1,3}|[^)\n]*+)\)"
_IMAGE = re.compile(r"!\[[^\]\n]*\]" + LINK_DEST)
_EMPTY_LINK = re.compile(r"(?<!!)\[\s*\]" + LINK_DEST + r"(?!\{)")  # what a linked image leaves: [](url)


def _outside_code(line: str, edit) -> str:
    """`edit` applied to the parts of a line outside its `inline code`."""
    out, last = [], 0
    for m in _INLINE_CODE.finditer(line):
        out += [edit(line[last:m.start()]), m.group(0)]
        last = m.end()
    out.append(edit(line[last:]))
    return "".join(out)


# A block that renders nothing, opened at the start of a line: an HTML comment, a <style> or
# a <script> element (it may close on the same line).
_HIDDEN_BLOCK = re.compile(r"^ {0,3}(?:<!--|<(style|script)\b[^>]*>)", re.I)  # CommonMark's indent for HTML blocks
_INVISIBLE = re.compile(r"^\s*(?:\[\]\(\)\{\s*#[\w.:-]+\s*\}|<a\s+(?:id|name)=\"[^\"]*\"\s*>\s*</a>|<!--.*?-->)\s*$")


_CODE_FENCE_BLOCK = re.compile(r"^\s{0,3}(`{3,}|~{3,})[^\n]*\n.*?^\s{0,3}\1[ \t]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
MD_LINK = re.compile(r"!?\[([^\]\n]*)\]" + LINK_DEST)  # a link or image, group 1 its text
_URL = re.compile(r"https?://\S+")
_TAG = re.compile(r"<[^>\n]{1,200}>")
_WORD = re.compile(r"[A-Za-z]{2,}")


def language_text(text: str) -> str:
    """The prose that decides a document's language: no code, link targets, URLs or tags."""
    text = _CODE_FENCE_BLOCK.sub(" ", text)
    text = "\n".join(line for line in text.split("\n") if not _is_language_switch(line))
    text = MD_LINK.sub(r"\1", text)
    text = _INLINE_CODE.sub(" ", text)
    text = _URL.sub(" ", text)
    return _TAG.sub(" ", text)


def document_lang(text: str) -> str:
    """"zh" or "en" for a whole document, from its prose: Chinese when Chinese characters
    carry a real share of it (a character counts for about half an English word)."""
    prose = language_text(text)
    cjk, words = cjk_count(prose), len(_WORD.findall(prose))
    if cjk + words < 5:  # nothing but code: judge what there is
        return detect_lang(text[:4000])
    return "zh" if cjk >= 2 and cjk >= 0.5 * words else "en"
