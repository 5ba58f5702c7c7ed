"""Reading the on-disk index: faiss (dense) + BM25 (keyword) + chunk records + manifest.

Layout of an index directory (written by `ingest.build`)::

    CURRENT            name of the live generation (replaced atomically)
    gen-<n>/           manifest.json, chunks.json, docs.json, terms.json, dense.faiss,
                       vectors.npy, bm25_{data,indices,indptr}.npy, bm25.json, zh.dict,
                       zh.runs.json (what jieba made of each run of Chinese, for the next build)
    .lock              serialises writers (two `ask` processes on a cold cache)

This module is on every question's path, so it imports only what loading needs.

Integrity: the manifest records one checksum (size + CRC-32) per file of the generation,
and loading verifies each file it reads against it, so an altered chunks.json, NaN vectors
or a garbage zh.dict raise IndexError_ (the caller rebuilds, reusing whatever vectors are
still valid) instead of being quoted as truth. CRC-32 rather than SHA: it catches
corruption, costs about a millisecond for the bundled KB, and needs no OpenSSL at start-up.

Dense search: faiss holds the index (IndexFlatIP: inner product on normalised vectors).
Importing faiss costs ~45 ms per process, a third of a cold `ask`, while an exact flat
search over a few thousand vectors is a single numpy product over the same vectors; so
below `faiss_min_vectors` (a setting) the query path multiplies the stored vectors.npy, and
above it faiss is loaded and searched. Both give the same scores (tests check this).
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, TypeVar

from oncall_common.errors import IndexError_

from .records import Chunk
from .files import HTML_SUFFIXES, MARKDOWN_SUFFIXES, PARSE_ERRORS, Skipped, content_hash, find_files, read_text, survey, unparsable
from .keyword import KeywordIndex
from .tokenize import Tokenizer

T = TypeVar("T")

SCHEMA = 16
# How documents are parsed, paired and chunked. A change here makes every index stale, and
# the rebuild re-embeds only the chunks whose text, id or language changed (SCHEMA, the
# file format, throws the vectors away). 2: twins paired by path when their text cannot tell.
# 3: .mdx pages are read, and a language-marked folder (source_en/) pairs with its unmarked twin.
# 4: lines that render nothing (mkdocs anchors, empty HTML anchors, one-line comments) are dropped.
# 5: a document's title is its first real heading, never a `# comment` inside a code block.
# 6: reST pages are read (rst.py); a lower-case `sources` page inside a tree is documentation.
# 7: Hugo pages: TOML front matter (between +++ lines) is read, shortcodes are dropped.
# 8: MkDocs admonitions, tabs and snippet markers are unwrapped (docsite.py); sections start at
#    the three outermost heading levels a document uses, not only at h1–h3.
# 9: a named MkDocs snippet part (`--8<-- [start:name]`) starts a section titled by its name.
# 10: MyST admonitions (```{note}, :::{tip}) and GitHub alerts (> [!NOTE]) are unwrapped (docsite.py).
# 11: Sphinx-design tabs and cards (:::{tab-item} pip) keep their label, lose their markers.
# 12: only a page whose headings all sit at h3 or deeper has sections below h3.
# 13: an empty file is skipped (and reported), not indexed as a document.
# 14: HTML collapsibles (<details>/<summary>) are unwrapped like admonitions (docsite.py); a
#     file that is neither UTF-8 nor GB18030-looking is read as Windows-1252 (files.py).
# 15: Docusaurus admonitions (:::tip Title) and, in .md pages that import theme components,
#     JSX tabs are unwrapped; a FAQ's bold question starts a chunk; section kinds know
#     runbook headings ("What to do", "Root cause") and ignore numbering ("4. Fix").
# 16: an HTML page that is only a list of links (a wiki export's index.html) is skipped.
# 17: exports from Feishu, Yuque and Word: bold-line sections on pages without headings,
#     <font>/<span> tags and images dropped, Yuque's :::tips, "3.1.1 现象" above its text is a
#     heading, "第三章"/"一、" numbering nests; a FAQ's plain "问：" paragraph starts a chunk.
# 18: HTML tables' merged cells (rowspan) repeat in each row they span, so rows keep their columns.
# 19: a plain-text document's first line titles it when it stands above numbered sections.
# 20: lone short text lines with nothing under them are a list, not headings (a file of steps
#     indexed to nothing): a heading has a line nested under it or text after it that does not
#     go on with its numbering; a span ends with its table row group, short rows are padded.
# 21: long prose is split between lines and after sentence ends only (never at a dot inside
#     "127.0.0.1" or "v0.8.0"), and rejoined with the breaks it had.
# 22: an HTML page whose content has one <h1> is titled by it, not by its <title> (site chrome).
# 23: headings are titled by their words, not their links or anchors; a reST page's own table
#     of contents is dropped and an image keeps the link it stands for.
# 24: a markdown page's own table of contents (runs of list items linking to its anchors) is
#     dropped too.
# 25: multi-line HTML comments and <style>/<script> blocks are dropped.
# 26: plain text: a numbered heading right above steps numbered another way ("一、" over "1.")
#     is a heading.
# 27: front matter `critical` (log signatures that decide an incident at any log level) is read.
# 28: "步骤", "流程" (and "具体步骤", "执行步骤", "操作流程", "处理流程") headings are a runbook's fixes.
# 29: Chinese fillers and courtesies (到底, 按理说, 感觉, 大佬) are function words: no keyword.
# 30: plain text: numbering styles nest in the order a document first uses them ("二、" over
#     "1. LLMGateway5xxHigh"), and a numbered item written as labelled lines ("现象：", "处理：")
#     is a section of its own, in a block too; a byline ("维护：… / 更新：…") is never a heading;
#     a Confluence page's header title (`h1#title-heading`) titles it, not its <title>.
# 31: plain text: a title line with a byline under it ("Last edit: jmorgan, 2025-03") still
#     titles the page.
# 32: reST object descriptions (`.. option:: --tokenizer_mode`, `.. envvar::`) keep the name they document.
# 33: a third-language copy of a page (README_JA.md beside README.md) is set aside; a page under
#     locales/ or i18n/ with a language marker pairs with its original outside that folder.
# 34: a team's page titled in front matter (or by an HTML <title>) and again by a heading of
#     other words: that heading titles the page too, so its sections are the passages.
# 35: an HTML <img> is dropped like a markdown image, and so is a line of layout tags left
#     with nothing to render (a README's centred logo and badge links).
# 36: ... and a bare </img> line (SGLang's README).
# 37: exported doc trees: HTML tables in markdown become pipe tables, GitBook hint/tab blocks bold
#     titles; Pygments line-numbered code, MkDocs content tabs, Confluence code macros and
#     permalinks in HTML; CSV and notebooks read; a .txt read as markdown titled by its first line.
# 38: ... tables only where they open a line outside code, nested ones whole; MkDocs tabs innermost
#     first; a table of contents skipped only by its name (the day's second review).
RULES = 38
FAISS_TOP = 2_000


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
    # True only when the front matter declares the article structure (it has an `id`):
    # then chunks group into an article; otherwise each passage stands on its own.
    structured: bool = False
    # Front matter `applies_to`, e.g. {"hardware": ["nvidia"], "versions": ">=0.8.0"}; {} when absent.
    applies_to: dict = field(default_factory=dict)
    format: str = "markdown"  # markdown | text | html: what the file was
    # Front matter `informational`: signatures that are routine output, listed by
    # diagnose_log as information (from the index in use, like the signatures).
    informational: list[str] = field(default_factory=list)
    # Front matter `critical`: fragments of signatures that decide an incident on their own,
    # whatever level the line was logged at ("CUDA out of memory" in a warning is still OOM).
    critical: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, doc) -> "DocMeta":
        """The metadata of a parsed `ingest.documents.Document`."""
        return cls(doc.id, doc.lang, doc.title, doc.product, doc.source, list(doc.signatures), list(doc.tags),
                   doc.structured, dict(doc.applies_to), doc.format, list(doc.informational), list(doc.critical))


@dataclass
class KBIndex:
    path: Path
    manifest: dict
    chunks: list[Chunk]
    docs: dict[str, DocMeta]  # key: f"{id}:{lang}"
    vectors: object  # np.ndarray, the chunk embeddings in chunk order
    keyword: KeywordIndex
    tokenizer: Tokenizer
    terms: dict[str, set[str]]  # article id → every keyword it contains (both languages)

    @property
    def embedder_name(self) -> str:
        return self.manifest["embedder"]

    @cached_property
    def faiss_index(self):
        import faiss

        _read_verified(self.path, "dense.faiss", self.manifest)
        index = faiss.read_index(str(self.path / "dense.faiss"))
        if index.ntotal != len(self.chunks):
            raise IndexError_(f"index at {self.path} is inconsistent (faiss holds {index.ntotal} vectors)")
        return index

    def dense_scores(self, query_vector, faiss_min_vectors: int):
        """Cosine similarity of the query to every chunk (floor value where faiss cut off)."""
        import numpy as np

        q = np.asarray(query_vector, dtype=np.float32).reshape(1, -1)
        n = len(self.chunks)
        if n < faiss_min_vectors:
            return np.asarray(self.vectors @ q[0], dtype=np.float32)
        scores, ids = self.faiss_index.search(q, min(n, FAISS_TOP))
        out = np.full(n, -1.0, dtype=np.float32)
        keep = ids[0] >= 0
        out[ids[0][keep]] = scores[0][keep]
        return out

    @cached_property
    def doc_freq(self) -> dict[str, int]:
        """In how many articles each keyword occurs (article-level IDF for grounding)."""
        df: dict[str, int] = {}
        for terms in self.terms.values():
            for t in terms:
                df[t] = df.get(t, 0) + 1
        return df


def derived(index, name: str, build: Callable[[], T]) -> T:
    """A value worked out from a loaded index (a mask, the KB's words, page vectors), built on
    first use and kept on that index object: answering asks for it on every question, and a
    re-ingest loads a new index, so it never goes stale. An object that cannot hold it (a
    stand-in without a __dict__) gets it built each time."""
    store = getattr(index, "__dict__", None)
    if store is None:
        return build()
    if name not in store:
        store[name] = build()
    return store[name]


# ---------------------------------------------------------------- sources

def scan_sources(sources: list[Path]) -> tuple[list[tuple[Path, Path, bytes]], list[Skipped]]:
    """(file, root, raw bytes) for every readable text document under the sources, and
    every file passed over with the reason (hidden, unknown type, too big, binary…)."""
    out = []
    skipped: list[Skipped] = []
    for root in sources:
        paths, passed = survey(root)
        skipped.extend(passed)
        for path in paths:
            try:
                raw = path.read_bytes()
            except OSError as exc:
                skipped.append(Skipped(str(path.resolve()), f"unreadable ({exc.strerror or exc})"))
                continue
            text, why = read_text(raw)
            if text is None:
                skipped.append(Skipped(str(path.resolve()), why))
                continue
            if not text.strip():
                # An empty page would be a document titled by its file name with nothing to
                # cite, listed among the KB's topics ("empty").
                skipped.append(Skipped(str(path.resolve()), "empty"))
                continue
            suffix = path.suffix.lower()
            try:
                why = (_html_skip_reason(text) if suffix in HTML_SUFFIXES
                       else _markdown_skip_reason(path, text) if suffix in MARKDOWN_SUFFIXES else "")
            except PARSE_ERRORS as exc:  # a page 400 <div>s deep took the whole build down (review)
                skipped.append(unparsable(path, exc))
                continue
            if why:
                skipped.append(Skipped(str(path.resolve()), why))
                continue
            out.append((path, root, raw))
    return out, skipped


_TOC_NAMES = frozenset({"summary.md", "_sidebar.md", "_navbar.md", "toc.md"})


def _markdown_skip_reason(path: Path, text: str) -> str:
    """A doc site's table of contents (GitBook's SUMMARY.md, docsify's _sidebar.md), when it is
    links and nothing else: it was indexed as the document "Table of contents" and listed among a
    tree's topics (trial). Only by those names: an FAQ answered by links is documentation (review)."""
    if path.name.lower() not in _TOC_NAMES or "](" not in text:
        return ""
    from .html import is_link_index

    return "a page of links (a table of contents or site map), not documentation" if is_link_index(text) else ""


def _html_skip_reason(html: str) -> str:
    """Why an HTML page is not indexed ("" when it is): a page of links, or one with no text once
    its navigation and chrome are removed (a built site's pages gave 0 chunks, with nothing said, trial)."""
    from .html import html_to_markdown, is_link_index, is_not_found_page

    title, markdown = html_to_markdown(html)
    if not re.search(r"\w", markdown):
        return "no text once its navigation and page chrome are removed"
    if is_not_found_page(title, markdown):
        return "a site's not-found (404) page, not documentation"
    return "a page of links (an index or site map), not documentation" if is_link_index(markdown) else ""


def scan(sources: list[Path]) -> list[tuple[Path, Path, bytes]]:
    """(file, root, raw bytes) for every KB file under the sources."""
    return scan_sources(sources)[0]


@contextlib.contextmanager
def index_lock(index_dir: Path, wait: bool = True, on_wait: Callable[[str], None] | None = None):
    """Serialise writers of one index directory (builds, and the sources.json update).
    With wait=False it yields whether the lock was free instead of waiting for it: for a
    repair that may be skipped, and may run while this very process holds the lock.
    `on_wait` hears, once, that another process holds it: a second `ask` sat silent for the
    100 s the first one's build took (newcomer)."""
    import fcntl

    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            if on_wait is not None:
                on_wait("another process is building this index; waiting for it to finish…")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _stat(path: str) -> list[int] | None:
    """(size, mtime in ns): a change to either means the file must be hashed again."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _fingerprint(files: list[tuple[Path, Path, bytes]]) -> dict[str, str]:
    return {str(p.resolve()): content_hash(raw) for p, _, raw in files}


# ---------------------------------------------------------------- reading

def current_generation(index_dir: Path) -> Path | None:
    """The live generation, or None when the pointer is missing or not a generation's name
    (a damaged pointer means "no index yet": rebuilt, never an error)."""
    try:
        name = (index_dir / "CURRENT").read_text(encoding="utf-8").strip()
    except (OSError, ValueError):  # unreadable, or bytes that are not UTF-8
        return None
    if not re.fullmatch(r"gen-\d+", name):
        return None
    gen = index_dir / name
    return gen if gen.is_dir() else None


def read_manifest(index_dir: Path) -> dict | None:
    gen = current_generation(index_dir)
    if gen is None:
        return None
    try:
        return json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def checksum(data: bytes) -> str:
    """What the manifest records per file: size and CRC-32."""
    import zlib

    return f"{len(data)}:{zlib.crc32(data):08x}"


def _read_verified(gen: Path, name: str, manifest: dict) -> bytes:
    data = (gen / name).read_bytes()
    expected = (manifest.get("files") or {}).get(name)
    if expected is None:
        raise IndexError_(f"index at {gen} has no checksum for {name}")
    if checksum(data) != expected:
        raise IndexError_(f"index at {gen} is corrupt: {name} does not match its checksum")
    return data


def load_index(index_dir: Path) -> KBIndex:
    """Load the live generation; any inconsistency raises IndexError_ (callers rebuild)."""
    gen = current_generation(index_dir)
    if gen is None:
        raise IndexError_(f"no index at {index_dir}")
    try:
        import io

        import numpy as np

        manifest = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("schema") != SCHEMA:
            raise IndexError_(f"index schema {manifest.get('schema')} is not {SCHEMA}")

        def read(name: str) -> bytes:
            return _read_verified(gen, name, manifest)

        chunks = [Chunk(**c) for c in json.loads(read("chunks.json").decode("utf-8"))]
        docs = {k: DocMeta(**v) for k, v in json.loads(read("docs.json").decode("utf-8")).items()}
        vectors = np.load(io.BytesIO(read("vectors.npy")), allow_pickle=False)
        faiss_size = (gen / "dense.faiss").stat().st_size
        keyword = KeywordIndex.load(gen, read=read)
        terms = {k: set(v) for k, v in json.loads(read("terms.json").decode("utf-8")).items()}
        read("zh.dict")  # the tokenizer reads it lazily; verify it now
    except IndexError_:
        raise
    except Exception as exc:  # corrupt files surface as many exception types
        raise IndexError_(f"index at {gen} is unreadable: {type(exc).__name__}: {exc}") from exc
    n = len(chunks)
    dim = manifest.get("dim")
    if n != manifest.get("chunk_count") or vectors.shape != (n, dim) or faiss_size < n * dim * 4:
        raise IndexError_(f"index at {gen} is inconsistent (chunks {n}, vectors {vectors.shape})")
    if keyword.num_docs != n:
        raise IndexError_(f"index at {gen} is inconsistent (bm25 docs differ from chunks)")
    if n and not np.isfinite(vectors).all():
        raise IndexError_(f"index at {gen} is corrupt: vectors.npy holds NaN or infinite values")
    return KBIndex(gen, manifest, chunks, docs, vectors, keyword, Tokenizer(gen / "zh.dict"), terms)


def load_docs(index_dir: Path) -> dict[str, DocMeta] | None:
    """Only the per-document metadata of the live generation (verified), or None."""
    gen = current_generation(index_dir)
    if gen is None:
        return None
    try:
        manifest = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("schema") != SCHEMA:
            return None
        raw = json.loads(_read_verified(gen, "docs.json", manifest).decode("utf-8"))
        return {k: DocMeta(**v) for k, v in raw.items()}
    except (OSError, ValueError, TypeError, IndexError_):
        return None


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
    if manifest.get("rules", 1) != RULES:
        return "the way documents are read changed (vectors are reused)"
    if manifest.get("sources") != [str(s.resolve()) for s in sources]:
        return "the set of KB sources changed"
    recorded = {path: meta["hash"] for path, meta in manifest.get("documents", {}).items()}
    recorded.update(manifest.get("set_aside", {}))  # third-language copies (identity.set_aside_translations)
    # Files ingest passed over for their content (binary, undecodable) are candidates too.
    known = set(recorded) | set(manifest.get("skipped_content", {}))
    stats = manifest.get("stats", {})
    paths = [str(p.resolve()) for root in sources for p in find_files(root)]
    if paths and sorted(paths) == sorted(known) and all(_stat(p) == stats.get(p) for p in paths):
        return None  # same files, same sizes and mtimes: no need to read and hash them
    current = _fingerprint(scan(sources))
    if current != recorded:
        changed = sum(1 for p in current if recorded.get(p) != current[p]) + sum(1 for p in recorded if p not in current)
        return f"{changed} document(s) changed"
    return None
