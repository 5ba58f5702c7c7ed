"""Heading-aware chunks from markdown (markdown-it-py) and from plain text.

A chunk is the unit both indexes store and a citation points at. Rules that keep chunks
useful as evidence:

- the heading path is the chunk's title;
- chunks stay under a size bound, in characters and in estimated embedder tokens (e5 reads
  512 tokens; a Chinese character costs about one token, other characters about a third),
  by packing whole blocks;
- a fenced code block is split only at its blank lines and re-fenced (a command cut in half
  is worse than a long chunk); a large table is split into row groups, each with the
  header row repeated, so a question about one parameter finds that row with its header;
- the "how people ask" section of an article becomes one small chunk per phrasing, so the
  question side of the FAQ is indexed too;
- in a FAQ written as bold questions (`**Q: Why do answers stop at 512 tokens?**` and the
  answer below it), each question starts a chunk: packed by size, a chunk ended on a
  question whose answer sat in the next one, and a question in the middle of five others
  was lost among them.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from .bylines import is_byline_not_heading
from .documents import LINK_DEST, MD_LINK, Document, content_hash, lone_h1
from .records import Chunk

# Section headings of KB articles, in both languages, mapped to what the answer needs.
SECTION_KINDS = {
    "symptoms": "symptoms", "symptom": "symptoms", "症状": "symptoms", "现象": "symptoms",
    "log signatures": "signatures", "日志特征": "signatures",
    "causes": "causes", "cause": "causes", "原因": "causes", "可能原因": "causes",
    "checks": "checks", "check": "checks", "排查": "checks", "排查顺序": "checks", "排查步骤": "checks",
    "fixes": "fixes", "fix": "fixes", "solution": "fixes", "solutions": "fixes", "解决": "fixes",
    "解决方案": "fixes", "解决办法": "fixes",
    # How teams' runbooks and postmortems name the same sections.
    "what to do": "fixes", "how to fix": "fixes", "resolution": "fixes", "remediation": "fixes", "mitigation": "fixes",
    "workaround": "fixes", "workarounds": "fixes", "the fix": "fixes", "处理方法": "fixes", "处理办法": "fixes", "处理步骤": "fixes",
    "修复": "fixes", "修复方法": "fixes", "解决步骤": "fixes", "规避方法": "fixes",
    "procedure": "fixes", "steps": "fixes", "actions": "fixes", "操作步骤": "fixes", "处置": "fixes", "处置步骤": "fixes",
    "应对措施": "fixes", "步骤": "fixes", "具体步骤": "fixes", "执行步骤": "fixes", "流程": "fixes", "操作流程": "fixes",
    "处理流程": "fixes", "处理": "fixes", "处理措施": "fixes", "处理建议": "fixes", "应急处理": "fixes", "应急措施": "fixes",
    "解决措施": "fixes", "解决思路": "fixes",
    "why": "causes", "root cause": "causes", "root causes": "causes", "根因": "causes", "根本原因": "causes",
    "how people ask": "questions", "常见问法": "questions",
}

# Estimated e5 tokens per chunk: under the 512-token window with room for the title and
# the tokenizer's spread (measured: actual/estimate ≤ 1.3 for 95% of chunks).
MAX_CHUNK_TOKENS = 500


@dataclass
class _Block:
    text: str
    splittable: bool  # paragraphs and lists may be separated from their neighbours
    kind: str = "other"  # table | code | other
    starts: bool = False  # a FAQ's question: its chunk starts here (_pack)


# A paragraph that is only a bold question: "**Q: Why …?**", "**为什么…？**", "**问：…**".
_BOLD_QUESTION = re.compile(r"^\*\*(?:(?:Q|问)\s*[:：.]\s*\S.*|[^*\n]+[?？]\s*)\*\*\s*[?？]?$|^\*\*(?:Q|问)\s*[:：].*[?？]\s*$")


# …or a plain "问：…" / "Q1: …" paragraph (its answer, "答：…", often on the next line).
_PLAIN_QUESTION = re.compile(r"^(?:Q|问)\s*\d{0,3}\s*[:：]\s*\S")


def is_faq_question(text: str) -> bool:
    text = text.strip()
    return bool(_PLAIN_QUESTION.match(text)) or ("\n" not in text and bool(_BOLD_QUESTION.match(text)))


_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*[.)、]?|[一二三四五六七八九十]+[、.])\s*")


# A runbook's fix section named for its place or case: "Fix on our cluster", "Workaround
# (until 0.9)", "Fix steps", "修复方法（生产环境）", "解决：重启网关". Only a fix word followed by
# its case: "Solution architecture", "Fixing the docs build" and "解决方案 对比" are other
# sections, and one whose case says the fix was not taken ("The fix (rejected)", "Resolution:
# won't fix") is no fix; "Fix: delete old pods" and "Fix (old driver)" are fixes.
_FIX_LEAD = re.compile(r"^how to fix\b|^(?:fix(?:es)?|the fix|resolution|remediation|mitigation|workarounds?|solutions?)"
                       r"(?:\s*[(（:：—–]|\s+-\s|\s+(?:steps?|on|for|in|at|until|when|if|before|after|with|without|via|per)\b)"
                       r"|^(?:解决|修复|处理|规避|处置)(?:方法|办法|方案|步骤|措施)?\s*[(（:：—]")
_NOT_TAKEN_WORDS = (r"rejected|won[’']?t fix|wontfix|not taken|abandoned|obsolete|deprecated|superseded|not recommended"
                    r"|not needed|no longer (?:needed|works?|applies)|does(?:n[’']?t| not) work|did(?:n[’']?t| not) work"
                    r"|failed attempt|not a bug|已废弃|废弃|未采用|不修复|否决|无效|不推荐|不再需要|历史")
# Said anywhere in the heading's brackets ("Fix (v0.5, deprecated)", "修复方法（旧，已废弃）"), or
# within two words after its colon or dash ("Workaround: not recommended").
_NOT_TAKEN = re.compile(rf"[(（][^)）]*(?:{_NOT_TAKEN_WORDS}|failed)"
                        rf"|^[^(（:：—–]*?(?:[:：—–]|\s-\s)\s*(?:\S+\s+){{0,2}}?(?:{_NOT_TAKEN_WORDS})")


def section_kind(heading: str, exact: bool = False) -> str:
    """What a section is for, from its heading ("4. Fix" and "What to do" are fixes).
    `exact`: by the known section names only, not by a fix word leading a longer heading."""
    name = _NUMBERING.sub("", heading.strip()).lower().rstrip(":：")
    kind = SECTION_KINDS.get(name, "other")
    if kind != "other" or exact:
        return kind
    return "fixes" if _FIX_LEAD.match(name) and not _NOT_TAKEN.search(name) else kind


def estimate_tokens(text: str) -> int:
    """About what e5's tokenizer makes of the text: ~1 token per CJK character, ~1 per 3
    other characters."""
    from oncall_common.lang import cjk_count

    cjk = cjk_count(text)
    return int(cjk + 0.35 * (len(text) - cjk))


def chunk_document(doc: Document, max_chars: int = 1200, max_tokens: int = MAX_CHUNK_TOKENS) -> list[Chunk]:
    sections = markdown_sections(doc.body) if doc.is_markdown else text_sections(doc.body)
    page = {doc.title, _page_heading(doc)}
    chunks: list[Chunk] = []
    for path, blocks in sections:
        heading = path[-1] if path else doc.title
        kind = section_kind(heading)
        title_parts = [doc.title] + [p for p in path if p not in page]
        title = " > ".join(title_parts)
        if kind == "questions":
            for item in _list_items(blocks):
                chunks.append(_make(doc, len(chunks), title, heading, "question", item))
            continue
        for text in _pack(blocks, max_chars, max_tokens):
            chunks.append(_make(doc, len(chunks), title, heading, kind, text))
    return chunks


_H1_LINE = re.compile(r"^ {0,3}#(?:[ \t]|$)|^ {0,3}=+[ \t]*$", re.M)


def _page_heading(doc: Document) -> str:
    """The heading that titles a team's page under a front-matter title of other words: the
    page's `# Environment Variables` under `title: Customize LobeChat Deployment with
    Environment Variables`. Kept in the heading path, it made one passage of the whole page
    (a passage is "Doc > Section"): forty variables quoted as one, none of them the one asked
    about. Under it the page's own sections are passages, as on a page with no front matter.
    A curated article keeps its headings as written."""
    if doc.structured or not doc.is_markdown or not _H1_LINE.search(doc.body):
        return doc.title  # no `#` line (nor a setext one) at all: no third parse of the page
    heading = lone_h1(doc.body)
    return heading_text(heading) if heading else doc.title


def _make(doc: Document, n: int, title: str, section: str, kind: str, text: str) -> Chunk:
    return Chunk(
        chunk_id=f"{doc.source}#{n}",
        doc_id=doc.id,
        lang=doc.lang,
        title=title,
        section=section,
        kind=kind,
        source=doc.source,
        text=text,
        hash=content_hash(f"{doc.id}\x00{doc.lang}\x00{title}\x00{kind}\x00{text}"),
    )


def _list_items(blocks: list[_Block]) -> list[str]:
    items = []
    for block in blocks:
        for line in block.text.splitlines():
            line = re.sub(r"^\s*(?:[-*+•]|\d+[.)])\s+", "", line).strip()
            if line:
                items.append(line)
    return items


def _fits(text: str, max_chars: int, max_tokens: int) -> bool:
    return len(text) <= max_chars and (len(text) <= max_tokens or estimate_tokens(text) <= max_tokens)


def _pack(blocks: list[_Block], max_chars: int, max_tokens: int = MAX_CHUNK_TOKENS) -> list[str]:
    """Greedy packing of whole blocks under the bounds; oversized prose is split by sentence,
    oversized tables by row groups, oversized code at its blank lines."""
    pieces: list[tuple[str, bool]] = []  # (text, stands alone: a row group is a chunk of its own)
    starts = {block.text for block in blocks if block.starts}
    for block in blocks:
        if _fits(block.text, max_chars, max_tokens):
            pieces.append((block.text, False))
        elif block.kind == "table":  # row groups half the bound: a few rows each, so one row stands out
            pieces.extend((t, True) for t in split_table(block.text, max_chars // 2, max_tokens // 2))
        elif block.kind == "code":
            pieces.extend((t, True) for t in split_code(block.text, max_chars // 2, max_tokens // 2))
        elif block.splittable:
            pieces.extend((t, False) for t in _split_prose(block.text, max_chars, max_tokens))
        else:
            pieces.append((block.text, False))
    out: list[str] = []
    current = ""
    for piece, alone in pieces:
        if current and (alone or piece in starts or not _fits(f"{current}\n\n{piece}", max_chars, max_tokens)):
            out.append(current)
            current = ""
        if alone:
            out.append(piece)
        else:
            current = f"{current}\n\n{piece}" if current else piece
    if current.strip():
        out.append(current)
    return out


def _split_prose(text: str, max_chars: int, max_tokens: int = MAX_CHUNK_TOKENS) -> list[str]:
    """Split at sentence ends and line ends, rejoined as they were separated: a line break
    stays one (a plain-text runbook's 120 one-line steps were read back as one paragraph),
    and a dot inside a word ends no sentence ("127.0.0.1" had come back as "127. 0. 0. 1",
    "v0.8.0" as "v0. 8. 0", and a chunk could end inside either)."""
    parts = re.split(r"(\s*\n\s*|(?<=[。！？])\s*|(?<=[.!?])\s+)", text)
    out, current = [], ""
    for sentence, sep in zip(parts[::2], [" ", *parts[1::2]]):
        joiner = "\n" if "\n" in sep else " " if sep else ""
        while not _fits(sentence, max_chars, max_tokens) and len(sentence) > 1:  # a run-on "sentence": cut it hard
            cut = _longest_prefix(sentence, max_chars, max_tokens)
            out.append(sentence[:cut])
            sentence = sentence[cut:]
        if current and not _fits(f"{current}{joiner}{sentence}", max_chars, max_tokens):
            out.append(current)
            current = sentence
        else:
            current = f"{current}{joiner}{sentence}".strip() if current else sentence
    if current:
        out.append(current)
    return out


def _longest_prefix(text: str, max_chars: int, max_tokens: int) -> int:
    lo, hi = 1, min(len(text), max_chars)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _fits(text[:mid], max_chars, max_tokens):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _groups(header: list[str], units: list[str], footer: list[str], max_chars: int, max_tokens: int, joiner: str) -> list[str]:
    """Pack units (rows, code paragraphs) into groups under the bounds, each group framed by
    header and footer lines; a unit too big on its own gets a group to itself."""
    out: list[str] = []
    current: list[str] = []

    def text(units_: list[str]) -> str:
        return "\n".join(header + [joiner.join(units_)] + footer)

    for unit in units:
        if current and not _fits(text(current + [unit]), max_chars, max_tokens):
            out.append(text(current))
            current = []
        current.append(unit)
    if current:
        out.append(text(current))
    return out


def header_lines(lines: list[str]) -> int:
    """How many of a table's lines are its header: the column names, and for markdown the
    separator line under them."""
    return 2 if len(lines) > 1 and re.match(r"^\s*\|?\s*:?-{3,}", lines[1]) else 1


def split_table(table: str, max_chars: int, max_tokens: int = MAX_CHUNK_TOKENS) -> list[str]:
    """A large table as row groups, each starting with the header row (and, for markdown, its
    separator line), so every piece reads as a table on its own."""
    lines = [line for line in table.split("\n") if line.strip()]
    n = header_lines(lines)  # a tab-separated text table: its first line names the columns
    header, rows = lines[:n], lines[n:]
    if not rows:
        return [table]
    return _groups(header, rows, [], max_chars, max_tokens, "\n")


def split_code(code: str, max_chars: int, max_tokens: int = MAX_CHUNK_TOKENS) -> list[str]:
    """A large fenced code block split at its blank lines, each piece fenced again. Code with
    no blank line stays whole: lines of one command or function belong together."""
    lines = code.split("\n")
    fence = re.match(r"^\s*(`{3,}|~{3,})", lines[0]) if lines else None
    if fence is None or len(lines) < 3:
        return [code]
    opening, closing = lines[0], lines[-1] if lines[-1].strip().startswith(fence.group(1)) else fence.group(1)
    inner = lines[1:-1] if lines[-1].strip().startswith(fence.group(1)) else lines[1:]
    paragraphs: list[str] = []
    current: list[str] = []
    for line in inner:
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    if len(paragraphs) < 2:
        return [code]
    return _groups([opening], paragraphs, [closing], max_chars, max_tokens, "\n\n")


def markdown_sections(body: str) -> list[tuple[list[str], list[_Block]]]:
    """Group top-level markdown blocks under their heading path.

    h1–h3 start a section. A page whose headings all sit at h3 or deeper (a fragment
    included into another page, like vLLM's `gpu.cuda.inc.md`, or one that starts at `####`)
    has its sections at its three outermost levels instead: it was one section of thirty
    chunks, every one titled with its first heading. Deeper headings stay in the text, in
    bold. (Letting every page split at its three outermost levels cut pages that start at
    `##` under a front-matter title down to their `####` subsections, and answers lost the
    sibling subsection that held the fix.)"""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(body)
    lines = body.splitlines()
    used = sorted({int(t.tag[1]) for t in tokens if t.type == "heading_open" and t.level == 0})
    section_levels = {1, 2, 3} | (set(used[:3]) if used and used[0] >= 3 else set())
    sections: list[tuple[list[str], list[_Block]]] = []
    path: list[tuple[int, str]] = []
    current: list[_Block] = []

    def flush() -> None:
        if current:
            sections.append(([t for _, t in path], list(current)))
            current.clear()

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.level != 0 or tok.map is None:
            i += 1
            continue
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            text = heading_text(tokens[i + 1].content)
            if level in section_levels:
                flush()
                path = [(lv, t) for lv, t in path if lv < level] + [(level, text)]
            else:
                current.append(_Block(f"**{text}**", True))
            i += 3
            continue
        start, end = tok.map
        raw = "\n".join(lines[start:end]).strip("\n")
        if tok.type not in {"fence", "code_block"}:
            raw = _entities(raw)  # "&nbsp;" spacer lines between sections came back raw in answers (trial)
        if raw.strip():
            splittable = tok.type in {"paragraph_open", "bullet_list_open", "ordered_list_open", "blockquote_open"}
            if tok.type in {"bullet_list_open", "ordered_list_open"}:
                current.extend(_list_blocks(tokens, i, lines) or [_Block(raw, True)])
            else:
                kind = "table" if tok.type == "table_open" else "code" if tok.type in {"fence", "code_block"} else "other"
                current.append(_Block(raw, splittable, kind, starts=tok.type == "paragraph_open" and is_faq_question(raw)))
        i = _skip_block(tokens, i)
    flush()
    return sections


_ENTITY = re.compile(r"(?<!\\)&(?:[a-zA-Z]{2,8}|#\d{2,5}|#x[0-9a-fA-F]{2,4});")  # "\&amp;" is escaped: literal
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def _entities(text: str) -> str:
    """HTML entities as the characters they stand for (a no-break space as a space): a page
    that spaces its sections with "&nbsp;" lines showed them raw, in Slack and over HTTP.
    Inline code keeps them as written (`a &amp;&amp; b` renders as typed), as markdown does."""
    if "&" not in text:
        return text
    def prose(part: str) -> str:
        return _ENTITY.sub(lambda m: html.unescape(m.group(0)).replace("\xa0", " "), part)
    out, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [prose(text[at:span.start()]), span.group(0)]
        at = span.end()
    return "".join([*out, prose(text[at:])])


_IMAGE = re.compile(r"!\[[^\]]*\]" + LINK_DEST)
_INLINE_HTML = re.compile(r"</?(?:a|span|img|br|sup|sub|small|font|div|p|b|i|em|strong)\b[^>]*>", re.I)


def heading_text(markdown: str) -> str:
    """A heading as text: a heading that links somewhere ("## [Prerequisite](#toc-entry-2)",
    a page's own table of contents) or carries an anchor (`<a name="faq"></a>`) is titled by
    its words, not its markup, which would show in every answer's title and count as words."""
    text = MD_LINK.sub(r"\1", _IMAGE.sub("", markdown))  # images first: their alt text is no title
    return " ".join(_INLINE_HTML.sub("", text).split())


def _skip_block(tokens: list, i: int) -> int:
    """Index just past the top-level block that starts at tokens[i]."""
    tok = tokens[i]
    if tok.nesting != 1:
        return i + 1
    depth = 0
    while i < len(tokens):
        depth += tokens[i].nesting
        i += 1
        if depth == 0:
            return i
    return i


def _list_blocks(tokens: list, i: int, lines: list[str]) -> list[_Block]:
    """A list split into item blocks, so a long list can spread over chunks by whole items."""
    end = _skip_block(tokens, i)
    blocks = []
    for tok in tokens[i:end]:
        if tok.type == "list_item_open" and tok.level == 1 and tok.map:
            s, e = tok.map
            blocks.append(_Block("\n".join(lines[s:e]).rstrip(), False))
    # Keep short lists as a single block so they read as one piece.
    if sum(len(b.text) for b in blocks) < 600:
        return [_Block("\n".join(b.text for b in blocks), True)] if blocks else []
    return blocks


_HEADING_STOP = tuple("。.!！:：;；,，、")
MAX_HEADING_CHARS = 80


def text_sections(body: str) -> list[tuple[list[str], list[_Block]]]:
    """Plain text: blank-line blocks; runs of tab-separated lines are tables; a lone line
    that reads like a title (see `looks_like_heading`) and "•" bullets are headings (the style
    of the seed documents, whose body paragraphs are indented and whose titles are not)."""
    blocks = _blank_line_blocks(body)
    sections: list[tuple[list[str], list[_Block]]] = []
    path: list[str] = []
    content: list[_Block] = []
    parts = [part for block in blocks for part in _split_at_headings(block)]
    ranks = _numbering_ranks(parts)
    heads = _headings_of(parts, ranks)
    for block, is_heading in zip(parts, heads):
        first = block[0].strip()
        if is_heading:
            if content:
                sections.append((list(path), content))
                content = []
            kind, depth = _heading_level(first)  # the same levels _headings_of nests by
            if kind == "•":
                path = path[:1] + [first.lstrip("• ").strip()]
            elif kind == "numbered":  # "2.1 In the pod log" sits under "2. Symptoms", "3. Fix" replaces it
                path = [p for p in path if not _numbered_depth(p) or _rank(p, ranks) < _rank(first, ranks)][:2] + [first]
            else:
                path = [first]
            continue
        is_table = "\t" in first
        text = "\n".join(line.strip() for line in block)
        content.append(_Block(text, not is_table, "table" if is_table else "other"))
    if content:
        sections.append((list(path), content))
    return sections


def _heading_level(heading: str) -> tuple[str, int]:
    """What kind of heading a line is, for nesting: ("•", 0), ("numbered", depth) or ("plain", 0)."""
    if heading.startswith("•"):
        return "•", 0
    depth = _numbered_depth(heading)
    return ("numbered", depth) if depth else ("plain", 0)


def _nests_under(child: str, parent: str, ranks: dict[tuple[str, int], int]) -> bool:
    """Whether heading `child` opens a subsection of `parent`, as text_sections nests them."""
    (kind, _depth), (parent_kind, _parent_depth) = _heading_level(child), _heading_level(parent)
    if kind == "•":
        return parent_kind != "•"
    if kind == "numbered":
        return parent_kind != "numbered" or _rank(parent, ranks) < _rank(child, ranks)
    return False


def _numbering_key(heading: str) -> tuple[str, int]:
    return _numbering_style(heading) or "", _numbered_depth(heading)


def _numbering_ranks(parts: list[list[str]]) -> dict[tuple[str, int], int]:
    """The nesting order of a document's numbering styles: the style it uses first is the
    outer one, and within a style "2.1" sits under "2.". A team's handbook numbers its parts
    "一、", "二、" and the alerts in a part "1. LLMGateway5xxHigh": by depth alone both were
    level 1, so "二、告警处理" read as text and the alerts lost their part (trial). Word's
    outline order (一、 > （一） > 1. > （1）) comes out of the same rule."""
    first_seen: dict[str, int] = {}
    keys: set[tuple[str, int]] = set()
    for n, part in enumerate(parts):
        line = part[0].strip()
        # A list's items ("1. 本文适用于 vLLM 0.6" over "2. 如有问题联系平台组", each a lone line) head
        # nothing: ranked first, they put the document's "一、部署" under them (review).
        listed = any(0 <= m < len(parts) and len(parts[m]) == 1 and _goes_on_numbering(*(
            (parts[m][0], line) if m < n else (line, parts[m][0]))) for m in (n - 1, n + 1))
        if len(part) == 1 and _numbered_depth(line) and not listed:
            style, depth = _numbering_key(line)
            first_seen.setdefault(style, len(first_seen))
            keys.add((style, depth))
    return {key: n for n, key in enumerate(sorted(keys, key=lambda k: (first_seen[k[0]], k[1])))}


def _rank(heading: str, ranks: dict[tuple[str, int], int]) -> int:
    """A numbered heading's level in this document (see `_numbering_ranks`); a numbering the
    document never uses alone on a line falls back on its depth."""
    key = _numbering_key(heading)
    return ranks.get(key, key[1] - 1 + len(ranks))


def _headings_of(parts: list[list[str]], ranks: dict[tuple[str, int], int]) -> list[bool]:
    """Which one-line blocks are headings. A lone short line reads like one, but in a run of
    such lines with nothing under them most are a list: "Restart procedure" over "1. Drain
    the node", "2. Restart vllm", "3. Check /health", each after a blank line, lost all four
    (every line a heading, no section with text), and so did "Ports" over "8080 gateway",
    "9090 metrics". In a run, a line is a heading when the next line nests under it ("After
    the reboot" over "1. Check the driver") or when text follows it, unless that text goes on
    with its numbering ("1. Cordon the node" above a long "2. Drain …" is a step); the
    document's first line stays a heading (it may be the title). The rest is text."""
    heads = [len(b) == 1 and looks_like_heading(b[0]) for b in parts]
    i = 0
    while i < len(parts):
        if not heads[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(parts) and heads[j + 1]:
            j += 1
        if i == j and j + 1 < len(parts) and not _goes_on_numbering(parts[j][0], parts[j + 1][0]):
            i = j + 1
            continue
        for k in range(i, j + 1):
            line = parts[k][0].strip()
            if k == 0:
                continue
            if k < j:
                heads[k] = _nests_under(parts[k + 1][0].strip(), line, ranks)
            elif j + 1 < len(parts):
                heads[k] = not _goes_on_numbering(line, parts[j + 1][0])
            else:
                heads[k] = False
        i = j + 1
    return heads


def _goes_on_numbering(line: str, following: str) -> bool:
    """Whether `following` is the next item of the numbered list `line` belongs to."""
    (kind, depth), (next_kind, next_depth) = _heading_level(line.strip()), _heading_level(following.strip())
    return (kind == next_kind == "numbered" and depth == next_depth
            and _numbering_style(line.strip()) == _numbering_style(following.strip()))


_GENERIC_HEADINGS = {"overview", "background", "summary", "introduction", "intro", "preface", "context", "notes",
                     "背景", "概述", "简介", "前言", "说明", "引言", "总结", "备注"}


def text_title(body: str) -> str:
    """The title a plain-text document gives itself on its first line, or "". A team's notes
    saved as text ("推理服务值班手册（2026 版）" above "一、显存不足", "二、请求卡住") were
    titled with the file name, and the first line became one section holding every numbered
    part, so any question quoted them all. The first line titles the page when it reads
    like a heading and either nothing sits under it before the next heading or every later
    heading is numbered (it is above them, not beside them)."""
    blocks = [part for block in _blank_line_blocks(body) for part in _split_at_headings(block)]
    if blocks and len(blocks[0]) > 1 and all(is_byline_not_heading(line) for line in blocks[0][1:]):
        # "Inference On-call Checklist (start of shift)" over "Last edit: jmorgan, 2025-03":
        # the byline under a title is no text of it (the page was titled by its file name).
        blocks[0] = blocks[0][:1]
    if len(blocks) < 2 or len(blocks[0]) != 1:
        return ""
    first = blocks[0][0].strip()
    if not looks_like_heading(blocks[0][0]) or first.startswith("•") or _numbered_depth(first):
        return ""
    if section_kind(first) != "other" or first.lower().rstrip(":：") in _GENERIC_HEADINGS:
        return ""  # "Symptoms", "Background": a section's name, not the document's
    later = [b[0].strip() for b in blocks[1:] if len(b) == 1 and looks_like_heading(b[0])]
    if not later:
        return ""
    second_is_heading = len(blocks[1]) == 1 and looks_like_heading(blocks[1][0])
    return first if second_is_heading or all(_numbered_depth(h) for h in later) else ""


def _blank_line_blocks(body: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in body.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = []
            continue
        is_table = "\t" in line.strip()
        if current and ("\t" in current[-1].strip()) != is_table:
            blocks.append(current)
            current = []
        current.append(line.rstrip())
    if current:
        blocks.append(current)
    return blocks


_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)(?:[、.)]\s*|\s+)\S")
_CN_NUMERAL = "一二三四五六七八九十百零〇"
_CHAPTER = re.compile(rf"^第[{_CN_NUMERAL}\d]+([章篇部节])\s*\S")
_CN_NUMBERED = re.compile(rf"^(?:[{_CN_NUMERAL}]+、|（[{_CN_NUMERAL}]+）)\s*\S")


def _numbered_depth(heading: str) -> int:
    """1 for "2. Symptoms", "3、原因", "第三章 常见故障" or "一、现象", 2 for "2.1 In the pod log",
    "第二节" or "（一）", 0 when not numbered."""
    m = _NUMBERED.match(heading)
    if m:
        return m.group(1).count(".") + 1
    chapter = _CHAPTER.match(heading)
    if chapter:
        return 2 if chapter.group(1) == "节" else 1
    m = _CN_NUMBERED.match(heading)
    return (2 if heading.startswith("（") else 1) if m else 0


def _split_at_headings(block: list[str]) -> list[list[str]]:
    """A block whose numbered headings sit right above their text, as a Word document saved
    as text writes them ("3.1 HCCL 初始化失败" / "3.1.1 现象" / "日志中出现…"): each heading
    becomes a one-line block of its own. Inside a block only a sub-numbered ("3.1.1") or
    chapter line counts; a plain "1." line counts only first, above unindented text that
    is not the next item of a list."""
    if len(block) == 1:
        return [block]
    # Items written as labelled lines: once one is, each of its siblings heads an entry too,
    # fields or not (a one-line "2. GatewayCertExpiry / 处理：…" was glued to the alert above, review).
    fielded = {_numbering_key(line.strip()) for i, line in enumerate(block) if _numbered_depth(line.strip()) and _has_fields(block, i)}
    out: list[list[str]] = []
    current: list[str] = []
    for i, line in enumerate(block):
        depth = _numbered_depth(line.strip())
        inner = depth >= 2 or bool(_CHAPTER.match(line.strip()))
        first = (i == 0 and depth == 1 and not block[1][:1].isspace()
                 and _numbering_style(block[1].strip()) in (None, *({"arabic", "chinese", "chapter"} - {_numbering_style(line.strip())})))
        if (inner or first or (depth and _numbering_key(line.strip()) in fielded)) and looks_like_heading(line):
            if current:
                out.append(current)
            out.append([line])
            current = []
        else:
            current.append(line)
    if current:
        out.append(current)
    return out


# A labelled line of an item: "现象：网关 5xx 超过 5%", "处理：重启 envoy", "Action: scale out"; not
# a URL ("http://…") or a command.
_FIELD_LINE = re.compile(r"^(?:(?:现象|症状|表现|原因|根因|可能原因|处理|处理方法|处理方式|处理步骤|解决|解决方法|解决办法|解决方案|措施|"
                         r"影响|影响范围|排查|排查方法|检查|操作|步骤|触发条件|告警条件|阈值|级别|负责人|备注|说明)(?:\s*/\s*[A-Za-z ]{2,20})?"
                         r"|(?i:symptoms?|causes?|fix|action|impact|severity|runbook|resolution|mitigation|condition"
                         r"|threshold|trigger|fires when|what to do|why))\s*[：:](?!//)\s*\S")


def _has_fields(block: list[str], i: int) -> bool:
    """Whether the numbered line `block[i]` heads an item written as labelled lines
    ("1. LLMGateway5xxHigh" over "现象：…", "原因：…", "处理：…"): a handbook's alerts, each
    an entry of its own, not the steps of one procedure ("1. 先摘流" over a command). With no
    blank line between the alerts, all of a part's alerts were one section, and any question
    on one quoted them all (trial)."""
    body: list[str] = []
    for line in block[i + 1:]:
        if _numbered_depth(line.strip()) or line[:1].isspace():
            break
        body.append(line)
    return len(body) >= 2 and sum(bool(_FIELD_LINE.match(line.strip())) for line in body) >= 2


def _numbering_style(line: str) -> str | None:
    """How a line is numbered: "arabic" (1. / 2.1), "chinese" (一、 / （一）), "chapter" (第三章).
    "一、重启流程" over "1. 先摘流" is a heading over its steps; "1. Drain" over "2. Restart" is
    one list."""
    if _NUMBERED.match(line):
        return "arabic"
    if _CHAPTER.match(line):
        return "chapter"
    return "chinese" if _CN_NUMBERED.match(line) else None


def looks_like_heading(line: str) -> bool:
    """A lone line of plain text that names what follows: not indented, at most 80
    characters, no sentence punctuation at its end or inside, not a command, flag or
    comment. Long titles such as "启动时报'Torch not compiled with CUDA enabled'" qualify."""
    if line.lstrip().startswith("•"):
        return True
    if line[:1].isspace():
        return False  # body paragraphs are the indented lines in this style
    line = line.strip()
    if not line or len(line) > MAX_HEADING_CHARS or "\t" in line or line.endswith(_HEADING_STOP):
        return False
    if line[0] in "#-$>`/~|*[(<{" or "=" in line or re.match(r"^[a-z]", line):
        return False  # commands, flags, comments and markup are content, not titles
    if len(re.findall(r"\s--[a-zA-Z]", line)) >= 2 or re.search(r"<[A-Z][A-Z_-]*>", line):
        # A command inside a step ("执行 helm rollback vllm-serving <REVISION> -n llm --wait"); one
        # flag named in a title stays a title ("2.1 调低 --max-model-len", review).
        return False
    if sum(line.count(p) for p in "，,。；;") >= 2:
        return False  # a sentence, not a title
    if _FIELD_LINE.match(line):
        return False  # "处理：cmctl renew llm-gw-tls" is an entry's field, not its title
    if is_byline_not_heading(line):
        return False  # "维护：平台组 张磊 / 更新：2025-09-30" headed every section of a handbook (trial)
    return len(line.split()) <= 12
