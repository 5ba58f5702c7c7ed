"""Heading-aware chunks from markdown (markdown-it-py) and from plain text.

A chunk is the unit both indexes store and a citation points at. Rules that keep chunks
useful as evidence: the heading path is the chunk's title; a fenced code block or a table
is never split (a command cut in half is worse than a long chunk); chunks stay under a size
bound by splitting between blocks. The "how people ask" section of an article becomes one
small chunk per phrasing, so the question side of the FAQ is indexed too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .documents import Document, content_hash
from .records import Chunk

# Section headings of KB articles, in both languages, mapped to what the answer needs.
SECTION_KINDS = {
    "symptoms": "symptoms", "symptom": "symptoms", "症状": "symptoms", "现象": "symptoms",
    "log signatures": "signatures", "日志特征": "signatures",
    "causes": "causes", "cause": "causes", "原因": "causes", "可能原因": "causes",
    "checks": "checks", "check": "checks", "排查": "checks", "排查顺序": "checks", "排查步骤": "checks",
    "fixes": "fixes", "fix": "fixes", "solution": "fixes", "solutions": "fixes", "解决": "fixes",
    "解决方案": "fixes", "解决办法": "fixes",
    "how people ask": "questions", "常见问法": "questions",
}


@dataclass
class _Block:
    text: str
    splittable: bool  # paragraphs and lists may be separated from their neighbours


def section_kind(heading: str) -> str:
    return SECTION_KINDS.get(heading.strip().lower().rstrip(":："), "other")


def chunk_document(doc: Document, max_chars: int = 1200) -> list[Chunk]:
    sections = markdown_sections(doc.body) if doc.is_markdown else text_sections(doc.body)
    chunks: list[Chunk] = []
    for path, blocks in sections:
        heading = path[-1] if path else doc.title
        kind = section_kind(heading)
        title_parts = [doc.title] + [p for p in path if p != doc.title]
        title = " > ".join(title_parts)
        if kind == "questions":
            for item in _list_items(blocks):
                chunks.append(_make(doc, len(chunks), title, heading, "question", item))
            continue
        for text in _pack(blocks, max_chars):
            chunks.append(_make(doc, len(chunks), title, heading, kind, text))
    return chunks


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


def _pack(blocks: list[_Block], max_chars: int) -> list[str]:
    """Greedy packing of whole blocks under max_chars; oversized prose is split by sentence."""
    pieces: list[str] = []
    for block in blocks:
        if block.splittable and len(block.text) > max_chars:
            pieces.extend(_split_prose(block.text, max_chars))
        else:
            pieces.append(block.text)
    out: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + len(piece) + 2 > max_chars:
            out.append(current)
            current = piece
        else:
            current = f"{current}\n\n{piece}" if current else piece
    if current.strip():
        out.append(current)
    return out


def _split_prose(text: str, max_chars: int) -> list[str]:
    sentences = re.split(r"(?<=[。！？.!?\n])\s*", text)
    out, current = [], ""
    for sentence in sentences:
        while len(sentence) > max_chars:  # a single run-on "sentence": cut it hard
            out.append(sentence[:max_chars])
            sentence = sentence[max_chars:]
        if current and len(current) + len(sentence) + 1 > max_chars:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip() if current else sentence
    if current:
        out.append(current)
    return out


def markdown_sections(body: str) -> list[tuple[list[str], list[_Block]]]:
    """Group top-level markdown blocks under their heading path (h1–h3 start a section)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(body)
    lines = body.splitlines()
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
            text = tokens[i + 1].content.strip()
            if level <= 3:
                flush()
                path = [(lv, t) for lv, t in path if lv < level] + [(level, text)]
            else:
                current.append(_Block(f"**{text}**", True))
            i += 3
            continue
        start, end = tok.map
        raw = "\n".join(lines[start:end]).strip("\n")
        if raw.strip():
            splittable = tok.type in {"paragraph_open", "bullet_list_open", "ordered_list_open", "blockquote_open"}
            if tok.type in {"bullet_list_open", "ordered_list_open"}:
                current.extend(_list_blocks(tokens, i, lines) or [_Block(raw, True)])
            else:
                current.append(_Block(raw, splittable))
        i = _skip_block(tokens, i)
    flush()
    return sections


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


_HEADING_STOP = tuple("。.!?！？:：;；,，")


def text_sections(body: str) -> list[tuple[list[str], list[_Block]]]:
    """Plain text: blank-line blocks; runs of tab-separated lines are tables; short
    unpunctuated lines and "•" bullets are headings (the style of the seed documents)."""
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

    sections: list[tuple[list[str], list[_Block]]] = []
    path: list[str] = []
    content: list[_Block] = []
    for block in blocks:
        first = block[0].strip()
        if len(block) == 1 and _looks_like_heading(first):
            if content:
                sections.append((list(path), content))
                content = []
            if first.startswith("•"):
                path = path[:1] + [first.lstrip("• ").strip()]
            elif re.match(r"^\d+[、.)]", first):
                path = path[:2] + [first]
            else:
                path = [first]
            continue
        is_table = "\t" in first
        text = "\n".join(line.strip() for line in block)
        content.append(_Block(text, not is_table))
    if content:
        sections.append((list(path), content))
    return sections


def _looks_like_heading(line: str) -> bool:
    if line.startswith("•"):
        return True
    if len(line) > 30 or "\t" in line or line.endswith(_HEADING_STOP):
        return False
    if line[0] in "#-$>`/~" or "=" in line or re.match(r"^[a-z]", line):
        return False  # commands, flags and comments are content, not titles
    return True
