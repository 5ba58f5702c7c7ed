"""Writing the index: parse → chunk → embed (only what changed) → faiss + BM25 → swap in.

A build writes a complete new generation directory and only then flips CURRENT with
os.replace, so a crash mid-write leaves the previous generation in use. Chunks whose hash
is unchanged keep their vectors, so touching one article re-embeds a handful of chunks;
when the live generation is damaged, the vectors that still match their checksum (or,
with no readable manifest, that a re-embedded sample confirms) are reused and only what
is bad is rebuilt.

Where the time goes (measured on FastDeploy's docs, 2 cores): parsing and chunking take
well under a second; BM25 and the jieba dictionary a second or two; the rest is the
embedder, whose cost is proportional to the tokens it reads (~1,000 tokens/s per core for
e5-small). So chunks are bounded to the model's window (ingest/chunking.py), what still
overflows is cut at the window instead of being averaged over several windows, identical
texts are embedded once, and a build uses up to `threads` cores.
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

from oncall_common.errors import IndexError_

from .chunking import chunk_document, estimate_tokens
from .documents import parse_document
from .embedders import Embedder
from .files import PARSE_ERRORS, Skipped, unparsable
from .identity import read_documents
from .index import RULES, SCHEMA, DocMeta, KBIndex, _read_verified, _stat, checksum, current_generation, index_lock, load_index, scan_sources
from .keyword import KeywordIndex
from .records import Chunk
from .tokenize import Tokenizer, build_dictionary

Progress = Callable[[str], None]
_lock = index_lock  # the old name, for callers that imported it


def _quiet(_: str) -> None:
    pass


def _old_vectors(index_dir: Path, embedder: Embedder) -> dict[str, np.ndarray]:
    """Vectors of the live generation keyed by chunk hash, if it was built by this embedder.

    A damaged generation still gives back its vectors when vectors.npy matches its
    checksum: the manifest lists the chunk hashes in vector order, so a bad chunks.json,
    BM25 file or dictionary costs no re-embedding. Without a readable manifest (a truncated
    manifest.json re-embedded the whole tree) the vectors are paired with chunks.json and
    kept only if this embedder gives a sample of them back.
    """
    try:
        old = load_index(index_dir)
    except IndexError_:
        return _salvage_vectors(index_dir, embedder.name) or _unlisted_vectors(index_dir, embedder)
    if old.embedder_name != embedder.name or not old.chunks:
        return {}
    return {c.hash: np.array(old.vectors[i]) for i, c in enumerate(old.chunks)}


SALVAGE_SAMPLE = 4  # chunks re-embedded to confirm unlisted vectors are this embedder's
SALVAGE_MIN_COSINE = 0.99


def _unlisted_vectors(index_dir: Path, embedder: Embedder) -> dict[str, np.ndarray]:
    """Vectors of a generation whose manifest cannot be read, when chunks.json and
    vectors.npy agree in count and dimension and a sample re-embeds to the same vectors:
    nothing else says which embedder wrote them."""
    gen = current_generation(index_dir)
    if gen is None:
        return {}
    try:
        json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
        return {}  # a readable manifest: _salvage_vectors judged it already
    except (OSError, ValueError):
        pass
    try:
        chunks = [Chunk(**c) for c in json.loads((gen / "chunks.json").read_text(encoding="utf-8"))]
        vectors = np.load(gen / "vectors.npy", allow_pickle=False)
    except (OSError, ValueError, TypeError, EOFError):  # an emptied vectors.npy raises EOFError
        return {}
    if not chunks or vectors.ndim != 2 or vectors.shape != (len(chunks), embedder.dim) or not np.isfinite(vectors).all():
        return {}
    picks = np.linspace(0, len(chunks) - 1, num=min(SALVAGE_SAMPLE, len(chunks))).astype(int)
    fresh = np.asarray(embedder.embed_passages([embed_text(chunks[i]) for i in picks]), dtype=np.float32)
    stored = vectors[picks]
    cosines = (fresh * stored).sum(axis=1) / np.maximum(np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1), 1e-9)
    if not (cosines >= SALVAGE_MIN_COSINE).all():
        return {}
    return {c.hash: np.array(vectors[i]) for i, c in enumerate(chunks)}


def _salvage_vectors(index_dir: Path, embedder_name: str) -> dict[str, np.ndarray]:
    gen = current_generation(index_dir)
    return {} if gen is None else _generation_vectors(gen, embedder_name)


# `assistant bench --ingest` turns this off: it measures the embedder, not the bundle.
REUSE_SHIPPED_VECTORS = True


def _shipped_vectors(embedder_name: str) -> dict[str, np.ndarray]:
    """The vectors of the index shipped in the package, by chunk hash: a rebuild after a
    damaged cache re-embedded the 470 bundled chunks (68 s) although they ship embedded."""
    from .bundled import bundled_index_dir

    if not REUSE_SHIPPED_VECTORS:
        return {}
    return _generation_vectors(bundled_index_dir(), embedder_name)


def _generation_vectors(gen: Path, embedder_name: str, manifest: dict | None = None) -> dict[str, np.ndarray]:
    """A generation's (or the bundle's) vectors keyed by chunk hash, when its vectors.npy
    matches its manifest's checksum and it was written by this embedder (`manifest`: the
    generation's, when the caller has read it already)."""
    import io

    try:
        if manifest is None:
            manifest = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("schema") != SCHEMA or manifest.get("embedder") != embedder_name:
            return {}
        hashes = manifest["chunk_hashes"]
        vectors = np.load(io.BytesIO(_read_verified(gen, "vectors.npy", manifest)), allow_pickle=False)
    except (OSError, ValueError, KeyError, TypeError, EOFError, IndexError_):
        return {}
    if vectors.ndim != 2 or vectors.shape[0] != len(hashes) or vectors.shape[1] != manifest.get("dim"):
        return {}
    return {h: np.array(vectors[i]) for i, h in enumerate(hashes) if np.isfinite(vectors[i]).all()}


def _sibling_vectors(share_root: Path, index_dir: Path, embedder_name: str, wanted: set[str]) -> dict[str, np.ndarray]:
    """Vectors for `wanted` chunk hashes from the other indexes in the same cache: a team's
    docs added to the default KB with `assistant ingest docs` and then asked with `--kb docs`
    were embedded twice (104 s for 619 chunks), as was a tree forgotten and added again. Only
    indexes that share a hash are read, and only those written by this embedder."""
    out: dict[str, np.ndarray] = {}
    try:
        siblings = sorted(p for p in share_root.iterdir() if p.is_dir() and p.resolve() != index_dir.resolve())
    except OSError:
        return out
    for sibling in siblings:
        gen = current_generation(sibling)
        if gen is None:
            continue
        try:
            manifest = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(manifest, dict) or manifest.get("embedder") != embedder_name:
            continue
        hashes = manifest.get("chunk_hashes")
        if not isinstance(hashes, list) or wanted.isdisjoint(hashes):
            continue
        found = _generation_vectors(gen, embedder_name, manifest)
        out.update({h: found[h] for h in wanted & found.keys()})
        wanted = wanted - out.keys()
        if not wanted:
            break
    return out


def embed_text(chunk: Chunk) -> str:
    """What the dense model sees: the heading path gives a bare section its context."""
    return f"{chunk.title}\n{chunk.text}"


BULK_CHUNKS = 100


def _name_the_bulk(sources: list[str], progress) -> None:
    """Say which file most of the embedding is for: a 1.9 MB log dump committed beside the
    runbooks made the next `ask` wait four minutes, and nothing said why (trial)."""
    from collections import Counter

    if not sources:
        return
    source, count = Counter(sources).most_common(1)[0]
    if count >= BULK_CHUNKS and count * 2 > len(sources):
        progress(f"{source}: {count} of them (most of the ingest time); if it is a log, a changelog or a generated page, "
                 "list it in .kbignore to leave it out")


def _report_skipped(skipped: list[Skipped], progress: Progress, heading: str = "skipped {n} path(s):") -> None:
    if not skipped:
        return
    progress(heading.format(n=len(skipped)))
    for s in skipped[:20]:
        progress(f"  {s.path}: {s.reason}")
    if len(skipped) > 20:
        progress(f"  … and {len(skipped) - 20} more (assistant ingest --status lists them all)")


PARTIAL = "partial"  # <index dir>/partial.npy + .json: vectors of a build that did not finish
PARTIAL_EVERY = 4  # batches between two saves of the partial vectors


def _partial_vectors(index_dir: Path, embedder_name: str) -> dict[str, np.ndarray]:
    """The vectors an interrupted build embedded, by chunk hash, when this embedder wrote them:
    an ingest of 600 chunks stopped at 500 (Ctrl-C, a closed laptop) embedded all 600 again
    (newcomer). Anything unreadable or inconsistent is no vectors."""
    try:
        meta = json.loads((index_dir / f"{PARTIAL}.json").read_text(encoding="utf-8"))
        vectors = np.load(index_dir / f"{PARTIAL}.npy", allow_pickle=False)
        hashes = meta["hashes"]
        if meta.get("embedder") != embedder_name or vectors.ndim != 2 or len(vectors) != len(hashes):
            return {}
        return {h: vectors[i] for i, h in enumerate(hashes) if isinstance(h, str) and np.isfinite(vectors[i]).all()}
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return {}


def _save_partial(index_dir: Path, embedder_name: str, done: dict[str, np.ndarray]) -> None:
    """Write `done` for the next build to start from; the vectors first, then the list that
    names them, each replaced whole (a half-written pair fails `_partial_vectors`' checks)."""
    if not done:
        return
    hashes = list(done)
    try:
        tmp = index_dir / f".{PARTIAL}-{os.getpid()}.npy"
        np.save(tmp, np.stack([done[h] for h in hashes]).astype(np.float32))
        os.replace(tmp, index_dir / f"{PARTIAL}.npy")
        tmp_meta = index_dir / f".{PARTIAL}-{os.getpid()}.json"
        tmp_meta.write_text(json.dumps({"embedder": embedder_name, "hashes": hashes}), encoding="utf-8")
        os.replace(tmp_meta, index_dir / f"{PARTIAL}.json")
    except OSError:
        pass  # a full disk: the build goes on, only the resume is lost


def _drop_partial(index_dir: Path) -> None:
    for suffix in ("json", "npy"):
        with contextlib.suppress(OSError):
            (index_dir / f"{PARTIAL}.{suffix}").unlink()


def _embed(embedder: Embedder, texts: list[str], threads: int, progress: Progress,
           on_batch: Callable[[list[str], np.ndarray], None] | None = None) -> np.ndarray:
    """Embed texts, each distinct text once, in batches of similar length. `on_batch` hears of
    each batch embedded (the partial vectors an interrupted build leaves)."""
    distinct: dict[str, int] = {}
    for t in texts:
        distinct.setdefault(t, len(distinct))
    unique = sorted(distinct, key=len)
    out = np.zeros((len(unique), embedder.dim), dtype=np.float32)
    bulk = getattr(embedder, "threads_for_bulk", None)
    step = 16
    with bulk(threads) if bulk else contextlib.nullcontext():
        for start in range(0, len(unique), step):
            batch = unique[start : start + step]
            out[start : start + len(batch)] = embedder.embed_passages(batch)
            if on_batch is not None:
                on_batch(batch, out[start : start + len(batch)])
            done = min(start + step, len(unique))
            # One line per tenth of the work, not per batch: a rebuild of 516 chunks printed 33
            # lines, into a CI log as much as onto a terminal (newcomer).
            if len(unique) > step and (done == len(unique) or done * 10 // len(unique) > start * 10 // len(unique)):
                progress(f"  {done}/{len(unique)}")
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():  # never store NaN: such a chunk is found by BM25 alone
        progress(f"  {int(bad.sum())} chunk(s) got no valid embedding; they are searched by keywords only")
        out[bad] = 0.0
    row = {t: i for i, t in enumerate(unique)}
    return out[[row[t] for t in texts]] if texts else out


def _embed_keeping(index_dir: Path, embedder: Embedder, hashes: list[str], texts: list[str],
                   resumed: dict[str, np.ndarray], threads: int, progress: Progress) -> np.ndarray:
    """`_embed`, keeping what it embeds as it goes (with what an earlier build left) in the
    partial vectors: stopped half way, the next build embeds only the rest."""
    hashes_of: dict[str, list[str]] = {}
    for h, text in zip(hashes, texts):
        hashes_of.setdefault(text, []).append(h)
    done = dict(resumed)
    batches = [0]

    def keep(batch: list[str], batch_vectors: np.ndarray) -> None:
        for text, vector in zip(batch, batch_vectors):
            for h in hashes_of.get(text, ()):
                done[h] = np.array(vector)
        batches[0] += 1
        if batches[0] % PARTIAL_EVERY == 0:
            _save_partial(index_dir, embedder.name, done)

    index_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _embed(embedder, texts, threads, progress, keep)
    except BaseException:
        _save_partial(index_dir, embedder.name, done)
        raise


def _parse_all(files: list[tuple[Path, Path, bytes]]) -> tuple[list, list[Skipped]]:
    """Each file parsed on its own: one a parser cannot read (a CSV cell over the csv module's
    limit, a notebook with a cell of nulls) took the whole KB down with it, and every `ask` said
    "internal error" (review). Such a file is passed over with the parser's reason."""
    parsed, unparsed = [], []
    for path, root, raw in files:
        try:
            parsed.append(parse_document(path, root, raw))
        except PARSE_ERRORS as exc:
            unparsed.append(unparsable(path, exc))
    return parsed, unparsed


def build_index(
    index_dir: Path,
    sources: list[Path],
    embedder: Embedder,
    *,
    max_chunk_chars: int = 1200,
    progress: Progress = _quiet,
    threads: int = 0,
    share_root: Path | None = None,
    fresh: bool = False,
) -> KBIndex:
    """(Re)build the index for `sources`, reusing unchanged chunk vectors.

    threads: cores for the embedder during this build (0: all of them, at most 4).
    share_root: the folder of the cache's indexes, whose other members lend vectors of chunks
    they embedded already (None: none; a scratch build in /tmp must not read its neighbours).
    fresh: embed every chunk again, borrowing no vector (`assistant ingest --rebuild`, for an
    index whose vectors are suspect); the live generation still serves until the new one is in.
    """
    import faiss

    with index_lock(index_dir, on_wait=progress):
        started = time.perf_counter()
        timings: dict[str, float] = {}
        files, skipped = scan_sources(sources)
        _report_skipped(skipped, progress)
        stats = {str(p.resolve()): _stat(str(p.resolve())) for p, _, _ in files}  # as read, before any later edit
        # Files passed over for their content are still candidates for the freshness check.
        skipped_content = {s.path: s.reason for s in skipped if s.reason == "empty" or s.reason.startswith(("binary", "not text"))}
        for path in skipped_content:
            stats[path] = _stat(path)
        parsed, unparsed = _parse_all(files)
        if unparsed:
            _report_skipped(unparsed, progress, "could not parse:")
            skipped = skipped + unparsed
        docs, renamed, aside = read_documents(parsed)
        if aside:
            # Listed like the files passed over (`assistant ingest --status` has them all), and
            # kept with their hashes: an edit to a copy is a change the freshness check sees.
            set_aside = [Skipped(doc.path, why) for doc, why in aside]
            copies = "a copy" if len(aside) == 1 else f"{len(aside)} copies"
            _report_skipped(set_aside, progress, f"set aside {copies} of pages in a third language:")
            skipped = skipped + set_aside
        for message in renamed:
            progress(f"id collision: {message}")
        chunks: list[Chunk] = []
        for doc in docs:
            chunks.extend(chunk_document(doc, max_chunk_chars))
        timings["parse_chunk_s"] = time.perf_counter() - started

        t0 = time.perf_counter()
        reuse = {} if fresh else {**_shipped_vectors(embedder.name), **_old_vectors(index_dir, embedder)}
        wanted = {c.hash for c in chunks}
        partial = {} if fresh else _partial_vectors(index_dir, embedder.name)
        resumed = {h: v for h, v in partial.items() if h in wanted and h not in reuse}
        if resumed:
            progress(f"resuming: {len(resumed)} chunk(s) an interrupted build embedded are reused")
            reuse.update(resumed)
        missing = {c.hash for c in chunks if c.hash not in reuse}
        if missing and share_root is not None and not fresh:
            reuse.update(_sibling_vectors(share_root, index_dir, embedder.name, missing))
        todo = [i for i, c in enumerate(chunks) if c.hash not in reuse]
        dim = embedder.dim
        vectors = np.zeros((len(chunks), dim), dtype=np.float32)
        for i, c in enumerate(chunks):
            if c.hash in reuse:
                vectors[i] = reuse[c.hash]
        texts = [embed_text(chunks[i]) for i in todo]
        tokens = sum(estimate_tokens(t) for t in texts)
        if todo:
            progress(f"embedding {len(todo)} of {len(chunks)} chunks (~{tokens:,} tokens) from {len(docs)} documents…")
            _name_the_bulk([chunks[i].source for i in todo], progress)
            vectors[todo] = _embed_keeping(index_dir, embedder, [chunks[i].hash for i in todo], texts, resumed,
                                           threads or min(4, os.cpu_count() or 1), progress)
        timings["embed_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        gen = index_dir / f"gen-{time.time_ns()}"
        tmp = index_dir / f".tmp-{gen.name}-{os.getpid()}"
        tmp.mkdir(parents=True)
        try:
            build_dictionary([c.text for c in chunks if c.lang == "zh"] + [c.title for c in chunks], tmp / "zh.dict",
                             previous=None if fresh else current_generation(index_dir))
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
            metas = {f"{d.id}:{d.lang}": asdict(DocMeta.of(d)) for d in docs}
            (tmp / "docs.json").write_text(json.dumps(metas, ensure_ascii=False), encoding="utf-8")
            timings["index_s"] = time.perf_counter() - t0
            manifest = {
                "schema": SCHEMA,
                "rules": RULES,
                "embedder": embedder.name,
                "dim": dim,
                "sources": [str(s.resolve()) for s in sources],
                "documents": {
                    d.path: {"hash": d.hash, "id": d.id, "lang": d.lang, "source": d.source,
                             "chunks": [c.hash for c in chunks if c.source == d.source and c.doc_id == d.id]}
                    for d in docs
                },
                "stats": stats,
                "skipped": {s.path: s.reason for s in skipped},
                "skipped_content": skipped_content,
                "set_aside": {doc.path: doc.hash for doc, _why in aside},
                "renamed": renamed,
                "chunk_count": len(chunks),
                "chunk_hashes": [c.hash for c in chunks],
                "embedded": len(todo),
                "embedded_tokens_est": tokens,
                "timings": {k: round(v, 3) for k, v in timings.items()},
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "files": {f.name: checksum(f.read_bytes()) for f in sorted(tmp.iterdir()) if f.is_file()},
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
            if todo:  # stopped while writing: what was embedded is kept for the next build
                _save_partial(index_dir, embedder.name, {chunks[i].hash: vectors[i] for i in todo})
            raise
        _remove_old_generations(index_dir, keep=gen.name)
        _drop_partial(index_dir)
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
