"""The bundled KB's index, shipped in the wheel, so the first `ask` after `pip install` needs
no indexing (42 s on two cores before, for 428 chunks).

`assistant/bundled_index/` holds one index generation as `ingest.build` writes it (vectors,
BM25 weights, chunk records, dictionary), with a manifest whose paths are relative to the
KB root and which names the embedder, the index schema, the chunk size, and a hash per
document and per chunk.

- `assistant ingest --build-bundled` regenerates it from `kb/`, re-embedding only the chunks
  that changed (it starts from the current bundle's vectors): seconds, so cheap to rerun
  after every edit of an article.
- `bundle_staleness` says whether it still matches `kb/`; a test fails when it does not.
- At run time `seed_index` copies it into the cache as the live generation, with paths made
  absolute again, when the embedder, schema and chunk size match. Whatever differs
  afterwards (articles edited in a checkout, runbooks added with `assistant ingest`) is
  then re-indexed incrementally as usual, reusing the shipped vectors.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

from .index import RULES, SCHEMA, _stat, current_generation, index_lock
from .tokenize import RUNS_FILE

MANIFEST = "manifest.json"
FORMAT = 1


def bundled_index_dir() -> Path:
    """`assistant/bundled_index`, beside the package (in a checkout and in a wheel)."""
    return Path(__file__).resolve().parent.parent / "assistant" / "bundled_index"


def read_bundle_manifest(bundle: Path | None = None) -> dict | None:
    try:
        return json.loads(((bundle or bundled_index_dir()) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _relative(path: str, root: Path) -> str:
    return Path(path).resolve().relative_to(root.resolve()).as_posix()


def kb_fingerprint(kb_root: Path, max_chunk_chars: int = 1200) -> dict:
    """Per-document hashes (relative paths) and the chunk hashes, in index order, of `kb_root`
    as ingest would index it now. Parsing and chunking only: well under a second."""
    from .chunking import chunk_document
    from .documents import parse_document
    from .identity import read_documents
    from .index import scan_sources

    files, _ = scan_sources([kb_root])
    docs, _, _ = read_documents([parse_document(p, root, raw) for p, root, raw in files])
    chunks = [c for d in docs for c in chunk_document(d, max_chunk_chars)]
    return {"documents": {_relative(d.path, kb_root): d.hash for d in docs}, "chunk_hashes": [c.hash for c in chunks]}


def bundle_staleness(kb_root: Path, embedder_name: str, max_chunk_chars: int = 1200, bundle: Path | None = None) -> str | None:
    """Why the shipped index does not match `kb_root` (and this embedder), or None."""
    manifest = read_bundle_manifest(bundle)
    if manifest is None:
        return "there is no bundled index"
    if manifest.get("schema") != SCHEMA:
        return f"it has index schema {manifest.get('schema')}, the code writes {SCHEMA}"
    if manifest.get("embedder") != embedder_name:
        return f"it was embedded by {manifest.get('embedder')}, the installed embedder is {embedder_name}"
    if manifest.get("rules", 1) != RULES:
        return f"it was read with ingest rules {manifest.get('rules', 1)}, the code uses {RULES}"
    if manifest.get("max_chunk_chars") != max_chunk_chars:
        return f"it was chunked at {manifest.get('max_chunk_chars')} characters, not {max_chunk_chars}"
    if RUNS_FILE not in manifest.get("files", {}):
        return f"it has no {RUNS_FILE} (a re-ingest of the bundled KB would load jieba to segment it all again)"
    now = kb_fingerprint(kb_root, max_chunk_chars)
    shipped = {path: meta["hash"] for path, meta in manifest.get("documents", {}).items()}
    changed = sorted(p for p in set(now["documents"]) | set(shipped) if now["documents"].get(p) != shipped.get(p))
    if changed:
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        return f"{len(changed)} article(s) differ from kb/: {', '.join(changed[:5])}{more}"
    if manifest.get("chunk_hashes") != now["chunk_hashes"]:
        return "the articles are unchanged but chunk differently now (the chunker or its settings changed)"
    return None


# ---------------------------------------------------------------- writing the bundle

def export_bundle(generation: Path, kb_root: Path, out: Path, max_chunk_chars: int) -> dict:
    """Copy an index generation built from `kb_root` alone into `out`, replacing it, with a
    manifest free of this machine's paths."""
    manifest = json.loads((generation / MANIFEST).read_text(encoding="utf-8"))
    documents = {_relative(path, kb_root): meta for path, meta in manifest["documents"].items()}
    portable = {
        "schema": manifest["schema"], "rules": manifest.get("rules", 1), "bundle_format": FORMAT, "embedder": manifest["embedder"],
        "dim": manifest["dim"],
        "max_chunk_chars": max_chunk_chars,
        "documents": dict(sorted(documents.items())),
        "skipped": {_relative(p, kb_root): why for p, why in manifest.get("skipped", {}).items()},
        # Third-language copies set aside (identity.set_aside_translations): without their hashes a
        # seeded index found them "changed" and was rebuilt on the first ask (review).
        "set_aside": {_relative(p, kb_root): h for p, h in sorted(manifest.get("set_aside", {}).items())},
        "renamed": manifest.get("renamed", []),
        "chunk_count": manifest["chunk_count"], "chunk_hashes": manifest["chunk_hashes"],
        "built_at": manifest.get("built_at"), "files": manifest["files"],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".bundled_index-", dir=out.parent))
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would follow the package into the wheel
    try:
        for name in manifest["files"]:
            shutil.copyfile(generation / name, tmp / name)
        (tmp / MANIFEST).write_text(json.dumps(portable, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return portable


def build_bundle(kb_root: Path, embedder, max_chunk_chars: int = 1200, out: Path | None = None,
                 progress: Callable[[str], None] = lambda _m: None) -> dict:
    """Index `kb_root` and write the bundle, starting from the current bundle's vectors so
    only changed chunks are embedded. Returns the new manifest."""
    from .build import build_index

    out = out or bundled_index_dir()
    with tempfile.TemporaryDirectory(prefix="assistant-bundle-") as tmp:
        index_dir = Path(tmp) / "index"
        seed_index(index_dir, kb_root, embedder.name, max_chunk_chars, bundle=out)
        index = build_index(index_dir, [kb_root], embedder, max_chunk_chars=max_chunk_chars, progress=progress)
        return export_bundle(index.path, kb_root, out, max_chunk_chars)


# ---------------------------------------------------------------- using it

def seed_index(index_dir: Path, kb_root: Path, embedder_name: str, max_chunk_chars: int, bundle: Path | None = None) -> bool:
    """Make the bundle the live generation of `index_dir` when it fits this embedder, schema
    and chunk size; True when it did. Files are copied (the package may be read-only) and
    their checksums are verified at load as for any generation. Documents whose content
    still matches get their current size and mtime, so the next freshness check is a stat
    per file; the others are found changed and re-indexed by the caller."""
    from .files import content_hash

    bundle = bundle or bundled_index_dir()
    manifest = read_bundle_manifest(bundle)
    if (manifest is None or manifest.get("schema") != SCHEMA or manifest.get("embedder") != embedder_name
            or manifest.get("max_chunk_chars") != max_chunk_chars):
        return False
    kb_root = kb_root.resolve()
    documents = {str(kb_root / rel): meta for rel, meta in manifest["documents"].items()}
    set_aside = {str(kb_root / rel): digest for rel, digest in manifest.get("set_aside", {}).items()}

    def unchanged(path: str, digest: str) -> bool:
        try:
            return content_hash(Path(path).read_bytes()) == digest
        except OSError:
            return False

    hashes = {**{path: meta["hash"] for path, meta in documents.items()}, **set_aside}
    stats = {path: _stat(path) for path, digest in hashes.items() if unchanged(path, digest)}
    live = dict(manifest, sources=[str(kb_root)], documents=documents, stats=stats, set_aside=set_aside,
                skipped={str(kb_root / p): why for p, why in manifest.get("skipped", {}).items()},
                skipped_content={}, embedded=0, embedded_tokens_est=0, timings={}, seeded_from="bundled index")
    with index_lock(index_dir):
        if current_generation(index_dir) is not None and _usable(index_dir, embedder_name):
            return False  # another process seeded or built it meanwhile
        gen = index_dir / f"gen-{time.time_ns()}"
        tmp = index_dir / f".tmp-{gen.name}-{os.getpid()}"
        tmp.mkdir(parents=True)
        try:
            for name in manifest["files"]:
                shutil.copyfile(bundle / name, tmp / name)
            (tmp / MANIFEST).write_text(json.dumps(live, ensure_ascii=False, indent=1), encoding="utf-8")
            os.replace(tmp, gen)
            pointer = index_dir / f".CURRENT.{os.getpid()}"
            pointer.write_text(gen.name)
            os.replace(pointer, index_dir / "CURRENT")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    for child in index_dir.iterdir():  # generations of another schema or embedder are of no further use
        if child.is_dir() and child.name.startswith("gen-") and child != gen:
            shutil.rmtree(child, ignore_errors=True)
    return True


def _usable(index_dir: Path, embedder_name: str) -> bool:
    from .index import read_manifest

    manifest = read_manifest(index_dir) or {}
    return manifest.get("schema") == SCHEMA and manifest.get("embedder") == embedder_name
