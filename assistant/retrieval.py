"""Hybrid retrieval: dense (e5) + keyword (BM25) + exact log-signature matches, per article.

Scores are blended per chunk, then chunks are grouped by article id, which merges the zh
and en twins of one article: a question in English can land on a Chinese-only fact, and the
answer is then rendered in the asker's language.

Two numbers per article, kept apart on purpose:
- `score` ranks: 0.7 × dense + 0.3 × BM25 per chunk (BM25 max-normalised per query), the
  best chunk per article, + a boost when the question contains one of the article's log
  signatures verbatim, + a little article-level keyword coverage to break near-ties between
  articles whose short "how people ask" chunks all match about equally.
- `relevance` decides `grounded`: it must be comparable *across* questions, so it uses the
  absolute cosine (rescaled from e5's narrow band) and the IDF-weighted share of the
  question's keywords the article contains, never a per-query normalisation that makes
  every top hit look good. An article that exists only in the other language is judged on
  the cosine alone.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

import numpy as np

from ingest.records import Chunk
from ingest.index import FAISS_MIN_VECTORS, KBIndex
from ingest.tokenize import correct_typos, normalize

from .lang import detect_lang
from .questions import query_text

MODES = ("hybrid", "dense", "bm25")
# multilingual-e5 squeezes cosine similarity into a narrow band, and the band sits higher
# for Chinese: unrelated English text scores ~0.80, unrelated Chinese ~0.85. These bounds,
# read off the eval's in-scope and out-of-scope questions, stretch each band onto 0..1.
DENSE_BAND = {"en": (0.80, 0.90), "zh": (0.85, 0.93)}
# Overview articles (tag "summary") list many symptoms, so they match many questions a
# little; they should lead only when no specific article fits about as well.
OVERVIEW_FACTOR = 0.9
DENSE_FLOOR = 0.78  # ranking scale, shared by both languages
DENSE_CEIL = 0.92


@dataclass(frozen=True)
class ScoredChunk:
    chunk: Chunk
    score: float
    dense: float  # raw cosine similarity
    keyword: float  # BM25, normalised by the best BM25 score of this query


@dataclass
class ArticleMatch:
    doc_id: str
    score: float
    relevance: float
    chunks: list[ScoredChunk] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)


@dataclass
class Retrieval:
    question: str
    lang: str
    mode: str
    articles: list[ArticleMatch]
    grounded: bool
    timings_ms: dict[str, float]


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", normalize(text))


def dense_scale(cosine: float | np.ndarray) -> float | np.ndarray:
    return np.clip((cosine - DENSE_FLOOR) / (DENSE_CEIL - DENSE_FLOOR), 0.0, 1.0)


def grounding_scale(cosine: float, lang: str) -> float:
    lo, hi = DENSE_BAND.get(lang, DENSE_BAND["en"])
    return float(np.clip((cosine - lo) / (hi - lo), 0.0, 1.0))


def keyword_coverage(query_terms: set[str], article_terms: set[str], doc_freq: dict[str, int], n_articles: int) -> float:
    """IDF-weighted share of the question's keywords found in the article.

    Words the KB has never seen weigh the most: "Kubernetes ingress TLS" is three strong
    signals that the question is about something else, while "排查" or "configure" say little.
    """
    if not query_terms:
        return 0.0
    weights = {t: math.log((n_articles + 1) / (doc_freq.get(t, 0) + 0.5)) for t in query_terms}
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in article_terms) / total if total > 0 else 0.0


def signature_hits(index: KBIndex, question: str) -> dict[str, list[str]]:
    """Article id → signatures found verbatim (whitespace- and width-insensitive)."""
    squashed = _squash(question)
    hits: dict[str, list[str]] = {}
    for meta in index.docs.values():
        for sig in meta.signatures:
            s = _squash(sig)
            if len(s) >= 6 and s in squashed and sig not in hits.get(meta.id, []):
                hits.setdefault(meta.id, []).append(sig)
    return hits


def search(
    index: KBIndex,
    embedder,
    question: str,
    *,
    query_vector: np.ndarray | None = None,
    mode: str = "hybrid",
    dense_weight: float = 0.7,
    bm25_weight: float = 0.3,
    signature_boost: float = 0.35,
    min_relevance: float = 0.5,
    limit: int = 8,
    faiss_min_vectors: int = FAISS_MIN_VECTORS,
    coverage_weight: float = 0.0,
) -> Retrieval:
    timings: dict[str, float] = {}
    lang = detect_lang(question)
    n = len(index.chunks)
    if n == 0:
        return Retrieval(question, lang, mode, [], False, timings)

    t0 = time.perf_counter()
    qvec = query_vector if query_vector is not None else embedder.embed_queries([query_text(question)])
    timings["embed"] = (time.perf_counter() - t0) * 1000
    t1 = time.perf_counter()
    dense = index.dense_scores(qvec[0], faiss_min_vectors)

    tokens = correct_typos(index.tokenizer(question), index.doc_freq.keys())
    keyword_raw = index.keyword.scores(tokens)
    top_kw = float(keyword_raw.max()) if n else 0.0
    keyword = keyword_raw / top_kw if top_kw > 0 else keyword_raw
    dscaled = dense_scale(dense)

    if mode == "dense":
        blended = dscaled
    elif mode == "bm25":
        blended = keyword
    else:
        blended = dense_weight * dscaled + bm25_weight * keyword

    sigs = signature_hits(index, question)
    query_terms = set(tokens)
    by_article: dict[str, ArticleMatch] = {}
    order = np.argsort(-blended)
    for i in order:
        chunk = index.chunks[int(i)]
        match = by_article.setdefault(chunk.doc_id, ArticleMatch(chunk.doc_id, 0.0, 0.0))
        match.chunks.append(ScoredChunk(chunk, float(blended[i]), float(dense[i]), float(keyword[i])))

    article_terms = index.terms
    overview_ids = {m.id for m in index.docs.values() if "summary" in m.tags}
    for match in by_article.values():
        best = match.chunks[0]
        second = match.chunks[1].score if len(match.chunks) > 1 else 0.0
        match.signatures = sigs.get(match.doc_id, [])
        boost = signature_boost if match.signatures else 0.0
        coverage = keyword_coverage(query_terms, article_terms.get(match.doc_id, set()), index.doc_freq, len(article_terms))
        match.score = best.score + 0.1 * second + boost + (coverage_weight * coverage if mode == "hybrid" else 0.0)
        if match.doc_id in overview_ids:
            match.score *= OVERVIEW_FACTOR
        best_dense = max(c.dense for c in match.chunks[:8])
        if f"{match.doc_id}:{lang}" in index.docs:
            match.relevance = 0.5 * grounding_scale(best_dense, lang) + 0.5 * coverage + boost
        else:
            # Written only in the other language: shared keywords cannot be expected, so
            # the multilingual dense score is the only evidence.
            match.relevance = grounding_scale(best_dense, lang) + boost
        match.chunks = match.chunks[:8]

    articles = sorted(by_article.values(), key=lambda a: -a.score)[:limit]
    timings["search"] = (time.perf_counter() - t1) * 1000
    grounded = bool(articles) and articles[0].relevance >= min_relevance
    return Retrieval(question, lang, mode, articles, grounded, timings)
