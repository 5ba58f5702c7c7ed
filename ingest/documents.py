"""Reading KB files: front matter, language, and a stable content hash.

Articles written for this project carry YAML front matter (id, lang, title, product,
signatures, tags). A user's own runbook usually does not, so every field has a sensible
fallback derived from the file itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from assistant.lang import detect_lang

from .files import content_hash, find_files  # noqa: F401  (re-exported for callers)
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


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
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] = field(default=())


def _slug(text: str) -> str:
    slug = re.sub(r"[^\w\u4e00-\u9fff]+", "-", text.lower()).strip("-")
    return slug or "doc"


def _as_tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value if str(v).strip())
    return (str(value),) if str(value).strip() else ()


def parse_document(path: Path, root: Path, raw: bytes) -> Document:
    """Parse one file. Undecodable bytes are replaced rather than failing the whole ingest."""
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    meta: dict = {}
    match = _FRONT.match(text)
    if match:
        import yaml

        try:
            loaded = yaml.safe_load(match.group(1))
            meta = loaded if isinstance(loaded, dict) else {}
        except yaml.YAMLError:
            meta = {}
        text = text[match.end():]
    is_markdown = path.suffix.lower() in {".md", ".markdown"}
    source = str(path.relative_to(root)) if root.is_dir() else path.name
    title = str(meta.get("title") or (_first_heading(text) if is_markdown else "") or path.stem)
    lang = str(meta.get("lang") or detect_lang(text[:4000]))
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
        tags=_as_tuple(meta.get("tags")),
        sources=_as_tuple(meta.get("sources")),
    )


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
