"""Opening the knowledge base for a process: find or build its index, load it once.

The index lives in the user's cache directory, keyed by the KB directory, so every `ask`
after the first starts warm. Each open compares the KB files' hashes with the manifest
(a few ms for a few dozen files) and re-ingests incrementally when they differ; an index
that cannot be read is rebuilt rather than trusted.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ingest.records import Chunk
from ingest.index import KBIndex, current_generation, load_index, read_manifest, staleness

from .config import Settings
from .errors import AssistantError, IndexError_


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class KB:
    index: KBIndex
    embedder: object
    by_doc: dict[tuple[str, str], list[Chunk]]  # (article id, lang) → chunks in order

    def article_chunks(self, doc_id: str, lang: str) -> list[Chunk]:
        return self.by_doc.get((doc_id, lang), [])

    def article_langs(self, doc_id: str) -> list[str]:
        return [lang for (d, lang) in self.by_doc if d == doc_id]


def index_dir(settings: Settings) -> Path:
    """One index per KB directory: its name plus a checksum of its absolute path."""
    import zlib

    kb = settings.kb_dir.resolve()
    return settings.cache_dir / "index" / f"{kb.name}-{zlib.crc32(str(kb).encode()):08x}"


def _extra_sources_file(settings: Settings) -> Path:
    return index_dir(settings) / "sources.json"


def sources(settings: Settings) -> list[Path]:
    """The KB directory plus runbook paths added with `assistant ingest PATH`."""
    extra: list[str] = []
    try:
        extra = json.loads(_extra_sources_file(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        extra = []
    out = [settings.kb_dir.resolve()]
    for p in extra:
        path = Path(p)
        if path not in out:
            out.append(path)
    return out


def set_extra_sources(settings: Settings, paths: list[Path]) -> None:
    f = _extra_sources_file(settings)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps([str(p.resolve()) for p in paths], ensure_ascii=False), encoding="utf-8")
    tmp.replace(f)


def get_embedder_for(settings: Settings):
    from ingest.embedders import get_embedder

    return get_embedder(settings.embedder, threads=settings.embed_threads, base_url=settings.embed_base_url, api_key=settings.embed_api_key)


_OPEN: dict[tuple, KB] = {}


def open_kb(settings: Settings, progress: Callable[[str], None] = _stderr) -> KB:
    """Load (building or refreshing if needed) the index for settings.kb_dir."""
    if not settings.kb_dir.is_dir():
        raise AssistantError(f"KB directory {settings.kb_dir} does not exist", "pass --kb DIR or set ASSISTANT_KB_DIR")
    key = (str(settings.kb_dir), str(settings.cache_dir), settings.embedder)
    embedder = get_embedder_for(settings)
    directory = index_dir(settings)
    srcs = sources(settings)
    reason = staleness(directory, srcs, embedder.name)
    index = None
    if reason is None:
        cached = _OPEN.get(key)
        if cached is not None and cached.index.path == current_generation(directory):
            return cached  # still the live generation: nothing to reload
        try:
            index = load_index(directory)
        except IndexError_ as exc:
            reason = f"{exc.message}"
    if index is None:
        progress(f"indexing the knowledge base ({reason})…")
        from ingest.build import build_index

        try:
            index = build_index(directory, srcs, embedder, max_chunk_chars=settings.max_chunk_chars, progress=progress)
        except OSError as exc:
            raise AssistantError(f"cannot write the index under {directory}: {exc}", "set ASSISTANT_CACHE_DIR to a writable directory") from exc
    by_doc: dict[tuple[str, str], list[Chunk]] = {}
    for chunk in index.chunks:
        by_doc.setdefault((chunk.doc_id, chunk.lang), []).append(chunk)
    kb = KB(index, embedder, by_doc)
    _OPEN[key] = kb
    return kb


def forget_loaded() -> None:
    """Drop this process's loaded indexes; the next open_kb reads from disk again."""
    _OPEN.clear()


def describe(settings: Settings) -> dict:
    """Index facts for `assistant ingest --status` and the readiness check."""
    manifest = read_manifest(index_dir(settings)) or {}
    return {
        "index_dir": str(index_dir(settings)),
        "sources": [str(s) for s in sources(settings)],
        "embedder": manifest.get("embedder"),
        "documents": len(manifest.get("documents", {})),
        "chunks": manifest.get("chunk_count"),
        "built_at": manifest.get("built_at"),
    }
