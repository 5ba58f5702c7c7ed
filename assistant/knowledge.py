"""Opening the knowledge base for a process: find or build its index, load it once.

The index lives in the user's cache directory, keyed by the KB directory, so every `ask`
after the first starts warm. Each open compares the KB files' hashes with the manifest
(a few ms for a few dozen files) and re-ingests incrementally when they differ; an index
that cannot be read is rebuilt rather than trusted.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ingest.records import Chunk
from ingest.index import DocMeta, KBIndex, current_generation, load_docs, load_index, read_manifest, staleness

from .config import Settings, warn_once
from oncall_common.errors import AssistantError, IndexError_


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class KB:
    index: KBIndex
    embedder: object
    by_doc: dict[tuple[str, str], list[Chunk]]  # (article id, lang) → chunks in order
    settings: Settings | None = None  # what it was opened with

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


def _read_extra(settings: Settings) -> list[Path]:
    f = _extra_sources_file(settings)
    try:
        extra = json.loads(f.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return []  # nothing was ever added
    except (OSError, ValueError):
        extra = None
    if isinstance(extra, list) and all(isinstance(p, str) for p in extra):
        return [Path(p) for p in extra]
    return _recover_extra(settings, f)


def _recover_extra(settings: Settings, f: Path) -> list[Path]:
    """The runbook paths again, from the live index's manifest, when the list of them is
    damaged (a half-written disk, a hand edit). Reading it as empty would rebuild the index
    from the KB directory alone and silently drop every team's runbooks."""
    manifest = read_manifest(index_dir(settings)) or {}
    kb = str(settings.kb_dir.resolve())
    recorded = manifest.get("sources")
    paths = [Path(p) for p in recorded if isinstance(p, str) and p != kb] if isinstance(recorded, list) else []
    try:
        damaged = f.read_bytes()
    except OSError:
        damaged = None
    if paths:
        warn_once(f"warning: {f} could not be read; the {len(paths)} added runbook path(s) were recovered from the index")
        _rewrite_if_unchanged(settings, f, damaged, paths)
    else:
        warn_once(f"warning: {f} could not be read and the index records no added runbooks; "
                   "re-run `assistant ingest PATH` for any you had added")
    return paths


def _rewrite_if_unchanged(settings: Settings, f: Path, damaged: bytes | None, paths: list[Path]) -> None:
    """Write the recovered list back, unless an `assistant ingest` rewrote it meanwhile. The
    check and the write hold the index lock, so no ingest lands between them; when the lock
    is busy (an ingest, or this process inside one), the repair is left to the next read."""
    from ingest.index import index_lock

    try:
        with index_lock(index_dir(settings), wait=False) as free:
            if free and f.read_bytes() == damaged:
                _write_extra(settings, paths)
    except OSError:
        pass  # a read-only cache: recovered again next time, without a second warning


def sources(settings: Settings) -> list[Path]:
    """The KB directory plus runbook paths added with `assistant ingest PATH`."""
    out = [settings.kb_dir.resolve()]
    for path in _read_extra(settings):
        if path not in out:
            out.append(path)
    return out


def _write_extra(settings: Settings, paths: list[Path]) -> None:
    import os
    import uuid

    f = _extra_sources_file(settings)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f".sources.{os.getpid()}.{uuid.uuid4().hex}.tmp")  # unique: writers never share a tmp file
    try:
        tmp.write_text(json.dumps([str(p.resolve()) for p in paths], ensure_ascii=False), encoding="utf-8")
        tmp.replace(f)
    finally:
        tmp.unlink(missing_ok=True)


def set_extra_sources(settings: Settings, paths: list[Path]) -> None:
    """Replace the runbook paths (under the index lock)."""
    from ingest.index import index_lock

    with index_lock(index_dir(settings)):
        _write_extra(settings, paths)


def update_extra_sources(settings: Settings, add: list[Path] = (), forget: list[Path] = ()) -> list[Path]:
    """Add and remove runbook paths in one read-modify-write under the index lock, so two
    `assistant ingest` runs at once both keep their paths. Returns the new list."""
    kb = settings.kb_dir.resolve()
    gone = {Path(p).resolve() for p in forget}
    try:
        return _update_extra(settings, kb, gone, add)
    except OSError as exc:
        raise AssistantError(f"cannot save the list of runbooks under {index_dir(settings)}: {exc.strerror or exc}",
                             "set ASSISTANT_CACHE_DIR to a writable directory") from exc


def _update_extra(settings: Settings, kb: Path, gone: set[Path], add) -> list[Path]:
    from ingest.index import index_lock

    with index_lock(index_dir(settings)):
        before = _read_extra(settings)
        unknown = sorted(str(p) for p in gone - set(before))
        if unknown:
            raise AssistantError(f"nothing to forget: {', '.join(unknown)} was never added",
                                 "`assistant ingest --status` lists the paths that are indexed")
        extra = [p for p in before if p not in gone]
        for p in add:
            path = Path(p).resolve()
            if path not in extra and path != kb and covering_source([kb, *extra], path) is None:
                extra.append(path)
        _write_extra(settings, extra)
    return extra


def covering_source(known: list[Path], path: Path) -> Path | None:
    """The folder among `known` that `path` lies inside: a file under an added folder is read
    with it already. Added on its own too, it was scanned twice ("skipped 2 path(s)", the same
    file twice) and listed as a source of its own (newcomer trial)."""
    return next((k for k in known if k != path and k in path.parents), None)


def get_embedder_for(settings: Settings):
    from ingest.embedders import get_embedder

    return get_embedder(settings.embedder, threads=settings.embed_threads, base_url=settings.embed_base_url, api_key=settings.embed_api_key)


_OPEN: dict[tuple, KB] = {}


def require_kb_dir(kb_dir: Path) -> None:
    """A missing or mistyped KB directory, said in one line with what to pass instead: by
    `open_kb`, and by `serve` before it binds (it loads the index only afterwards)."""
    if kb_dir.is_dir():
        return
    if kb_dir.exists():
        raise AssistantError(f"{kb_dir} is a file, not a KB directory",
                             f"pass the folder that holds it (--kb {kb_dir.parent}), or add it with `assistant ingest {kb_dir}`")
    raise AssistantError(f"KB directory {kb_dir} does not exist", "pass --kb DIR or set ASSISTANT_KB_DIR")


def open_kb(settings: Settings, progress: Callable[[str], None] = _stderr, rebuild: bool = False) -> KB:
    """Load (building or refreshing if needed) the index for settings.kb_dir.

    rebuild: embed every chunk again (`assistant ingest --rebuild`). The index folder is not
    emptied first: it holds the runbooks the user added, which a rebuild once forgot, and the
    live generation answers other processes until the new one replaces it."""
    require_kb_dir(settings.kb_dir)
    key = (str(settings.kb_dir), str(settings.cache_dir), settings.embedder)
    embedder = get_embedder_for(settings)
    directory = index_dir(settings)
    srcs = sources(settings)
    reason = "--rebuild: every chunk is embedded again" if rebuild else staleness(directory, srcs, embedder.name)
    if reason is not None and not rebuild:
        _seed_bundled(settings, directory, embedder.name)
        # Again: seeded, or seeded or built by another worker meanwhile; what is still missing is indexed below.
        reason = staleness(directory, srcs, embedder.name)
    index = None
    fallback = False
    held = _fallback(key) if reason is not None and not rebuild else None
    if held is not None:
        return held  # the cache was unwritable a moment ago: what this process answers from, not another rebuild
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
        index, fallback = _build(settings, directory, srcs, embedder, progress, fresh=rebuild)
    if not index.chunks:
        progress(f"warning: nothing to search: no markdown, text or HTML documents under {settings.kb_dir} "
                 "(every question will be refused; check --kb or ASSISTANT_KB_DIR)")
    by_doc: dict[tuple[str, str], list[Chunk]] = {}
    for chunk in index.chunks:
        by_doc.setdefault((chunk.doc_id, chunk.lang), []).append(chunk)
    kb = KB(index, embedder, by_doc, settings)
    _OPEN[key] = kb
    if fallback:
        _FALLBACK[key] = (kb, time.monotonic())
    else:
        _FALLBACK.pop(key, None)
    return kb


def _build(settings: Settings, directory: Path, srcs: list[Path], embedder, progress: Callable[[str], None],
           fresh: bool = False) -> tuple[KBIndex, bool]:
    """(the index built, whether it is a fallback because the cache could not be written)."""
    from ingest.build import build_index

    try:
        for _ in range(3):
            index = build_index(directory, srcs, embedder, max_chunk_chars=settings.max_chunk_chars, progress=progress,
                                share_root=directory.parent, fresh=fresh)
            fresh = False  # a second round folds in another ingest's sources: what was just embedded is reused
            latest = sources(settings)
            if latest == srcs:
                break
            srcs = latest  # another `assistant ingest` changed the sources meanwhile: fold them in (vectors are reused)
        return index, False
    except OSError as exc:
        return _unwritable_cache(settings, directory, srcs, embedder, exc, progress), True


def _fallback(key: tuple) -> "KB | None":
    """The KB this process fell back to for `key`, until it is time to try the build again."""
    held = _FALLBACK.get(key)
    if held is None:
        return None
    if time.monotonic() - held[1] < FALLBACK_RETRY_S:
        return held[0]
    del _FALLBACK[key]  # the cache may be writable by now
    return None


# Per process: the KB answered from because its cache could not be written, and since when.
# A server checks freshness every kb_check_interval; each check rebuilt into a new temporary
# folder. The build is tried again after this long, in case the cache is writable again.
_FALLBACK: dict[tuple, tuple[KB, float]] = {}
FALLBACK_RETRY_S = 300.0


def _unwritable_cache(settings: Settings, directory: Path, srcs: list[Path], embedder, exc: OSError,
                      progress: Callable[[str], None]) -> KBIndex:
    """An index for this process when the cache cannot be written (a read-only mount, a full
    disk): the last index built, if one can still be read, though the KB changed since;
    else one built in a temporary folder (the shipped bundle is copied there first). Every
    question used to fail on it, the bundled KB's included."""
    import atexit
    import shutil
    import tempfile

    from ingest.build import build_index
    from ingest.index import SCHEMA

    hint = "set ASSISTANT_CACHE_DIR to a writable directory"
    manifest = read_manifest(directory) or {}
    try:
        if manifest.get("schema") != SCHEMA or manifest.get("embedder") != embedder.name:
            raise IndexError_("built for another embedder or format")  # its vectors cannot be searched with ours
        index = load_index(directory)
        progress(f"warning: cannot update the index under {directory} ({exc.strerror or exc}); "
                 f"answering from the last one built, which misses the latest KB changes ({hint})")
        return index
    except (IndexError_, OSError):
        pass
    try:
        scratch = Path(tempfile.mkdtemp(prefix="oncall-index-"))
    except OSError as again:
        raise AssistantError(f"cannot write the index under {directory}: {exc}", hint) from again
    atexit.register(shutil.rmtree, scratch, True)
    progress(f"warning: cannot write the index under {directory} ({exc.strerror or exc}); "
             f"indexing into a temporary folder for this run only ({hint})")
    try:
        _seed_bundled(settings, scratch, embedder.name)
        return build_index(scratch, srcs, embedder, max_chunk_chars=settings.max_chunk_chars, progress=progress)
    except OSError as again:
        raise AssistantError(f"cannot write the index under {directory} or {scratch}: {again}", hint) from again


def _seed_bundled(settings: Settings, directory: Path, embedder_name: str) -> bool:
    """With no usable index of the bundled KB in the cache (a first run after `pip install`),
    start from the index shipped in the package instead of embedding everything (42 s on
    two cores); see ingest/bundled.py. A usable index is refreshed incrementally as before."""
    from ingest.index import SCHEMA

    from .config import bundled_kb_dir

    manifest = read_manifest(directory)
    if manifest is not None and manifest.get("schema") == SCHEMA and manifest.get("embedder") == embedder_name:
        return False
    if settings.kb_dir.resolve() != bundled_kb_dir().resolve():
        return False
    from ingest.bundled import seed_index

    try:
        return seed_index(directory, settings.kb_dir, embedder_name, settings.max_chunk_chars)
    except OSError:
        return False  # an unwritable cache is reported by the build below


def forget_loaded() -> None:
    """Drop this process's loaded indexes; the next open_kb reads from disk again."""
    _OPEN.clear()
    _FALLBACK.clear()


def describe(settings: Settings, check_sources: bool = False) -> dict:
    """Index facts for `assistant ingest --status`. What it lists (documents, skipped files)
    is the last build's; with `check_sources` it also says whether the sources changed since
    ("stale"), since a file added or edited after the build is in neither list until the next
    `ask` or `ingest` reads it (trial: a new unreadable file went unmentioned)."""
    directory = index_dir(settings)
    manifest = read_manifest(directory) or {}
    info = {
        "index_dir": str(directory),
        "sources": [str(s) for s in sources(settings)],
        "embedder": manifest.get("embedder"),
        "documents": len(manifest.get("documents", {})),
        "chunks": manifest.get("chunk_count"),
        "built_at": manifest.get("built_at"),
        "skipped": manifest.get("skipped", {}),
        "renamed": manifest.get("renamed", []),
    }
    if check_sources:
        reason = staleness(directory, sources(settings), manifest.get("embedder", "")) if manifest else "no index yet"
        info["stale"] = f"{reason}: the next ask or ingest rebuilds it" if reason else None
    return info


# ---------------------------------------------------------------- KB metadata

_META: dict[str, dict] = {}  # generation path → its docs.json, read once


def kb_docs(settings: Settings) -> dict[str, DocMeta]:
    """Per-document metadata (titles, signatures, …) of the index in use for these settings:
    the one this process loaded, else the live generation on disk (docs.json only, no
    vectors), else — no index built yet — the front matter of the source files.

    Keyed like `KBIndex.docs` (f"{id}:{lang}"); it follows rebuilds, so runbooks added with
    `assistant ingest` count as soon as they are indexed.
    """
    key = (str(settings.kb_dir), str(settings.cache_dir), settings.embedder)
    loaded = _OPEN.get(key)
    directory = index_dir(settings)
    gen = current_generation(directory)
    if loaded is not None and loaded.index.path == gen:
        return loaded.index.docs
    # A generation on disk whose sources were edited since (a runbook's new `signatures:`)
    # would answer with the old front matter until the next `ask` rebuilt it: the sources'
    # own front matter is read instead. Sizes and mtimes settle this without hashing.
    manifest = read_manifest(directory) if gen is not None else None
    if gen is not None and manifest is not None and staleness(directory, sources(settings), manifest.get("embedder", "")) is None:
        cached = _META.get(str(gen))
        if cached is not None:
            return cached
        docs = load_docs(directory)
        if docs is not None:
            if len(_META) > 8:
                _META.clear()
            _META[str(gen)] = docs
            return docs
    return _docs_from_sources(sources(settings))


_FROM_SOURCES: dict[tuple, dict[str, DocMeta]] = {}


def _docs_from_sources(paths: list[Path]) -> dict[str, DocMeta]:
    """Front matter of the source files, for a KB not indexed yet (cached on file stamps)."""
    from ingest.files import find_files
    from ingest.index import _stat

    stamp = tuple((str(p), tuple(_stat(str(p)) or ())) for root in paths for p in find_files(root))
    if stamp not in _FROM_SOURCES:
        _FROM_SOURCES.clear()
        _FROM_SOURCES[stamp] = _parse_sources(paths)
    return _FROM_SOURCES[stamp]


def _parse_sources(paths: list[Path]) -> dict[str, DocMeta]:
    from ingest.documents import parse_document
    from ingest.identity import read_documents
    from ingest.index import scan_sources

    files, _ = scan_sources(paths)
    docs, _, _ = read_documents([parse_document(p, root, raw) for p, root, raw in files])
    return {f"{d.id}:{d.lang}": DocMeta.of(d) for d in docs}


def kb_titles(settings: Settings) -> dict[str, str]:
    """Document id → title (the English one when there are twins)."""
    out: dict[str, str] = {}
    for meta in kb_docs(settings).values():
        if meta.lang == "en" or meta.id not in out:
            out[meta.id] = meta.title
    return out


def settings_for_kb_dir(kb_dir: str | Path) -> Settings:
    """Settings for a KB directory named by path: the one this process has open, else the
    configured settings pointed at that directory."""
    resolved = Path(kb_dir).resolve()
    for kb in list(_OPEN.values()):
        settings = getattr(kb, "settings", None)
        if settings is not None and settings.kb_dir.resolve() == resolved:
            return settings
    from .config import load_settings

    return load_settings(kb_dir=resolved)
