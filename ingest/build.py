"""Writing the index: parse → chunk → embed (only what changed) → faiss + BM25 → swap in.

A build writes a complete new generation directory and only then flips CURRENT with
os.replace, so a crash mid-write leaves the previous generation in use. Chunks whose hash
is unchanged keep their vectors, so touching one article re-embeds a handful of chunks.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import numpy as np

from assistant.errors import IndexError_

from .chunking import chunk_document
from .records import Chunk
from .documents import Document, parse_document
from .embedders import Embedder
from .index import SCHEMA, DocMeta, KBIndex, _stat, load_index, scan
from .keyword import KeywordIndex
from .tokenize import Tokenizer, build_dictionary

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


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
    return {c.hash: np.array(old.vectors[i]) for i, c in enumerate(old.chunks)}


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
    import faiss

    with _lock(index_dir):
        started = time.perf_counter()
        files = scan(sources)
        stats = {str(p.resolve()): _stat(str(p.resolve())) for p, _, _ in files}  # as read, before any later edit
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
            KeywordIndex.build(corpus).save(tmp)
            dense = faiss.IndexFlatIP(dim)
            if len(chunks):
                dense.add(vectors)
            faiss.write_index(dense, str(tmp / "dense.faiss"))
            np.save(tmp / "vectors.npy", vectors)
            (tmp / "chunks.json").write_text(json.dumps([asdict(c) for c in chunks], ensure_ascii=False), encoding="utf-8")
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
                "stats": stats,
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


