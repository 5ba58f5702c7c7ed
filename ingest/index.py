"""The on-disk index: faiss (dense) + bm25s (keyword) + chunk records + a manifest.

Layout of an index directory::

    CURRENT            name of the live generation (replaced atomically)
    gen-<n>/           manifest.json, chunks.jsonl, docs.json, dense.faiss, bm25/, zh.dict
    .lock              serialises writers (two `ask` processes on a cold cache)

A build writes a complete new generation and only then flips CURRENT with os.replace, so
a crash mid-write leaves the previous generation in use. Re-ingest reuses the vectors of
chunks whose hash is unchanged, so touching one article re-embeds a handful of chunks.
The manifest names the embedder and schema; an index built by anything else is rebuilt.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable

import numpy as np

from assistant.errors import IndexError_

from .chunking import Chunk, chunk_document
from .documents import Document, content_hash, find_files, parse_document
from .embedders import Embedder
from .tokenize import Tokenizer, build_dictionary

SCHEMA = 4
Progress = Callable[[str], None]


@dataclass
class DocMeta:
    """What the answer builder needs about an article without re-reading the file."""

    id: str
    lang: str
    title: str
    product: str
    source: str
    signatures: list[str]
    tags: list[str]


@dataclass
class KBIndex:
    path: Path
    manifest: dict
    chunks: list[Chunk]
    docs: dict[str, DocMeta]  # key: f"{id}:{lang}"
    dense: object  # faiss.Index
    bm25: object  # bm25s.BM25
    tokenizer: Tokenizer
    terms: dict[str, set[str]]  # article id → every keyword it contains (both languages)

    @property
    def embedder_name(self) -> str:
        return self.manifest["embedder"]

    @cached_property
    def doc_freq(self) -> dict[str, int]:
        """In how many articles each keyword occurs (article-level IDF for grounding)."""
        df: dict[str, int] = {}
        for terms in self.terms.values():
            for t in terms:
                df[t] = df.get(t, 0) + 1
        return df


def _quiet(_: str) -> None:
    pass


# ---------------------------------------------------------------- sources

def scan(sources: list[Path]) -> list[tuple[Path, Path, bytes]]:
    """(file, root, raw bytes) for every KB file under the sources."""
    out = []
    for root in sources:
        for path in find_files(root):
            try:
                out.append((path, root, path.read_bytes()))
            except OSError:
                continue
    return out


def _fingerprint(files: list[tuple[Path, Path, bytes]]) -> dict[str, str]:
    return {str(p.resolve()): content_hash(raw) for p, _, raw in files}


# ---------------------------------------------------------------- reading

def _current_gen(index_dir: Path) -> Path | None:
    try:
        name = (index_dir / "CURRENT").read_text().strip()
    except OSError:
        return None
    gen = index_dir / name
    return gen if name and gen.is_dir() else None


def read_manifest(index_dir: Path) -> dict | None:
    gen = _current_gen(index_dir)
    if gen is None:
        return None
    try:
        return json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_index(index_dir: Path) -> KBIndex:
    """Load the live generation; any inconsistency raises IndexError_ (callers rebuild)."""
    gen = _current_gen(index_dir)
    if gen is None:
        raise IndexError_(f"no index at {index_dir}")
    try:
        import bm25s
        import faiss

        manifest = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("schema") != SCHEMA:
            raise IndexError_(f"index schema {manifest.get('schema')} is not {SCHEMA}")
        with (gen / "chunks.jsonl").open(encoding="utf-8") as fh:
            chunks = [Chunk(**json.loads(line)) for line in fh if line.strip()]
        docs = {k: DocMeta(**v) for k, v in json.loads((gen / "docs.json").read_text(encoding="utf-8")).items()}
        dense = faiss.read_index(str(gen / "dense.faiss"))
        bm25 = bm25s.BM25.load(str(gen / "bm25"))
    except IndexError_:
        raise
    except Exception as exc:  # corrupt files surface as many exception types
        raise IndexError_(f"index at {gen} is unreadable: {type(exc).__name__}: {exc}") from exc
    n = len(chunks)
    if n != manifest.get("chunk_count") or dense.ntotal != n or dense.d != manifest.get("dim"):
        raise IndexError_(f"index at {gen} is inconsistent (chunks {n}, vectors {dense.ntotal})")
    if n and int(getattr(bm25, "scores", {}).get("num_docs", n)) != n:
        raise IndexError_(f"index at {gen} is inconsistent (bm25 docs differ from chunks)")
    try:
        terms = {k: set(v) for k, v in json.loads((gen / "terms.json").read_text(encoding="utf-8")).items()}
    except (OSError, ValueError) as exc:
        raise IndexError_(f"index at {gen} is unreadable: {exc}") from exc
    return KBIndex(gen, manifest, chunks, docs, dense, bm25, Tokenizer(gen / "zh.dict"), terms)


# ---------------------------------------------------------------- writing

@contextlib.contextmanager
def _lock(index_dir: Path):
    import fcntl

    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _old_vectors(index_dir: Path, embedder_name: str) -> dict[str, np.ndarray]:
    """Vectors of the live generation keyed by chunk hash, if it was built by this embedder."""
    try:
        old = load_index(index_dir)
    except IndexError_:
        return {}
    if old.embedder_name != embedder_name or not old.chunks:
        return {}
    vectors = old.dense.reconstruct_n(0, old.dense.ntotal)
    return {c.hash: vectors[i] for i, c in enumerate(old.chunks)}


def embed_text(chunk: Chunk) -> str:
    """What the dense model sees: the heading path gives a bare section its context."""
    return f"{chunk.title}\n{chunk.text}"


def build_index(
    index_dir: Path,
    sources: list[Path],
    embedder: Embedder,
    *,
    max_chunk_chars: int = 1200,
    progress: Progress = _quiet,
) -> KBIndex:
    """(Re)build the index for `sources`, reusing unchanged chunk vectors."""
    import bm25s
    import faiss

    with _lock(index_dir):
        started = time.perf_counter()
        files = scan(sources)
        docs: list[Document] = [parse_document(p, root, raw) for p, root, raw in files]
        chunks: list[Chunk] = []
        for doc in docs:
            chunks.extend(chunk_document(doc, max_chunk_chars))
        reuse = _old_vectors(index_dir, embedder.name)
        todo = [i for i, c in enumerate(chunks) if c.hash not in reuse]
        dim = embedder.dim
        vectors = np.zeros((len(chunks), dim), dtype=np.float32)
        for i, c in enumerate(chunks):
            if c.hash in reuse:
                vectors[i] = reuse[c.hash]
        if todo:
            progress(f"embedding {len(todo)} of {len(chunks)} chunks from {len(docs)} documents…")
        step = 16
        for start in range(0, len(todo), step):
            batch = todo[start : start + step]
            vectors[batch] = embedder.embed_passages([embed_text(chunks[i]) for i in batch])
            if len(todo) > step:
                progress(f"  {min(start + step, len(todo))}/{len(todo)}")

        gen = index_dir / f"gen-{time.time_ns()}"
        tmp = index_dir / f".tmp-{gen.name}-{os.getpid()}"
        tmp.mkdir(parents=True)
        try:
            build_dictionary([c.text for c in chunks if c.lang == "zh"] + [c.title for c in chunks], tmp / "zh.dict")
            tokenizer = Tokenizer(tmp / "zh.dict")
            corpus = [tokenizer(f"{c.title}\n{c.text}") or ["∅"] for c in chunks]
            terms: dict[str, set[str]] = {}
            for c, toks in zip(chunks, corpus):
                terms.setdefault(c.doc_id, set()).update(toks)
            (tmp / "terms.json").write_text(json.dumps({k: sorted(v) for k, v in terms.items()}, ensure_ascii=False), encoding="utf-8")
            bm25 = bm25s.BM25(k1=1.2, b=0.75)
            if chunks:
                bm25.index(corpus, show_progress=False)
            bm25.save(str(tmp / "bm25"))
            dense = faiss.IndexFlatIP(dim)
            if len(chunks):
                dense.add(vectors)
            faiss.write_index(dense, str(tmp / "dense.faiss"))
            with (tmp / "chunks.jsonl").open("w", encoding="utf-8") as fh:
                for c in chunks:
                    fh.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")
            metas = {
                f"{d.id}:{d.lang}": asdict(DocMeta(d.id, d.lang, d.title, d.product, d.source, list(d.signatures), list(d.tags)))
                for d in docs
            }
            (tmp / "docs.json").write_text(json.dumps(metas, ensure_ascii=False), encoding="utf-8")
            manifest = {
                "schema": SCHEMA,
                "embedder": embedder.name,
                "dim": dim,
                "sources": [str(s.resolve()) for s in sources],
                "documents": {
                    d.path: {"hash": d.hash, "id": d.id, "lang": d.lang, "chunks": [c.hash for c in chunks if c.source == d.source and c.doc_id == d.id]}
                    for d in docs
                },
                "chunk_count": len(chunks),
                "embedded": len(todo),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            (tmp / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
            _fsync_dir(tmp)
            os.replace(tmp, gen)
            current_tmp = index_dir / f".CURRENT.{os.getpid()}"
            current_tmp.write_text(gen.name)
            os.replace(current_tmp, index_dir / "CURRENT")
            _fsync_dir(index_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _remove_old_generations(index_dir, keep=gen.name)
        progress(f"indexed {len(chunks)} chunks ({len(todo)} embedded) in {time.perf_counter() - started:.1f}s → {index_dir}")
        return load_index(index_dir)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        for child in path.iterdir():
            if child.is_file():
                with open(child, "rb") as fh:
                    os.fsync(fh.fileno())
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_old_generations(index_dir: Path, keep: str) -> None:
    for child in index_dir.iterdir():
        if child.is_dir() and child.name != keep and (child.name.startswith("gen-") or child.name.startswith(".tmp-")):
            shutil.rmtree(child, ignore_errors=True)


# ---------------------------------------------------------------- freshness

def staleness(index_dir: Path, sources: list[Path], embedder_name: str) -> str | None:
    """Why the index must be (re)built, or None when it matches the sources and embedder."""
    manifest = read_manifest(index_dir)
    if manifest is None:
        return "no index yet"
    if manifest.get("schema") != SCHEMA:
        return "index format changed"
    if manifest.get("embedder") != embedder_name:
        return f"index was built by {manifest.get('embedder')}, not {embedder_name}"
    if manifest.get("sources") != [str(s.resolve()) for s in sources]:
        return "the set of KB sources changed"
    current = _fingerprint(scan(sources))
    recorded = {path: meta["hash"] for path, meta in manifest.get("documents", {}).items()}
    if current != recorded:
        changed = sum(1 for p in current if recorded.get(p) != current[p]) + sum(1 for p in recorded if p not in current)
        return f"{changed} document(s) changed"
    return None
