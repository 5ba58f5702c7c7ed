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

import functools
import math
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ingest.records import Chunk
from ingest.index import KBIndex, derived
from ingest.tokenize import correct_typos, normalize, stem

from oncall_common.lang import detect_lang, is_cjk
from .names import MODEL_FAMILIES
from .questions import query_text

if TYPE_CHECKING:
    from .config import Settings

MODES = ("hybrid", "dense", "bm25")
# multilingual-e5 squeezes cosine similarity into a narrow band, and the band sits higher
# for Chinese: unrelated English text scores ~0.80, unrelated Chinese ~0.85. These bounds,
# read off the eval's in-scope and out-of-scope questions, stretch each band onto 0..1.
# An article's score is its best chunk's plus this share of its second best: two matching
# sections say more than one, but never as much as a better first one.
SECOND_CHUNK_WEIGHT = 0.1
# A passage is also judged by the page it sits on: a page whose chunks, averaged, lie close to
# the question is about it, while a stray section of a page about something else only
# mentions it. A match loses this share of its page's cosine gap to the closest page
# (rescaled like a chunk's), so close calls between two pages go to the one about the
# subject. A curated article is one symptom, so its best chunk already says most of what
# its page does: it gets half the weight. Set on dev data: doc trees file@1 273 -> 282 of
# 374 and fix 279 -> 282; real dev questions topic@1 .875/.886 -> .900/.900 (zh/en), the
# bundled cases unchanged (0.5 for articles cost one of them).
PAGE_WEIGHT = 0.5
ARTICLE_PAGE_WEIGHT = 0.25
# A passage also loses this share of its page's hubness (page_hubness, rescaled like a
# cosine): close calls between a hub page and the page about the subject go to the latter.
# Set on 15 dev doc trees (347 questions in scope): file@1 243 -> 252, fix in the answer
# 257 -> 256; 0.5 gave 248/255 and 2.0 230/250. The fixes lost came back (+4) once the
# penalty only ordered passages (answer._passages_body). Curated articles are one symptom
# each and keep no such penalty.
HUB_WEIGHT = 1.0
# Chunks kept per article or passage: its best ones score it and are quoted from.
CHUNKS_PER_MATCH = 8


@dataclass(frozen=True)
class RetrievalParams:
    """The retrieval tuning, in one object built from Settings and passed whole: `search`
    has no defaults of its own that could drift from the configuration."""

    dense_weight: float
    bm25_weight: float
    signature_boost: float
    coverage_weight: float
    min_relevance: float
    mismatch_penalty: float
    faiss_min_vectors: int
    limit: int  # articles ranked

    @classmethod
    def from_settings(cls, settings: "Settings") -> "RetrievalParams":
        return cls(settings.dense_weight, settings.bm25_weight, settings.signature_boost, settings.coverage_weight,
                   settings.min_relevance, settings.mismatch_penalty, settings.faiss_min_vectors, settings.retrieval_limit)


DENSE_BAND = {"en": (0.80, 0.90), "zh": (0.85, 0.93), "cross": (0.80, 0.90)}
# The band the refusal model reads a team's passage on (`ArticleMatch.grounding`): wider at
# the top in English. A doc page written about the asker's product reads close to every
# English question about it, in scope or not: on the 13 dev doc trees the best cosine of the
# questions the docs answer had a median of 0.911, of those they do not 0.885, so over half
# the answered ones sat at DENSE_BAND's top (1.0), where the two could not be told apart
# (out-of-scope refused: dev trees en 25 → 27 of 48; the eight trees earlier stops measured
# as unseen, used here to check it, 12 → 14 of 32; no false refusal more, the passage
# threshold as fitted). Chinese and cross-language cosines sit lower and keep DENSE_BAND, as
# does a curated article. More right English passage answers read as close calls now (19
# trees: 8 → 20 of 226 marked unsure), fewer wrong ones as sure (29 → 20 of 80).
PASSAGE_DENSE_BAND = {"en": (0.80, 0.92), "zh": (0.85, 0.93), "cross": (0.80, 0.90)}
# Overview articles (tag "summary") list many symptoms, so they match many questions a
# little; they should lead only when no specific article fits about as well.
OVERVIEW_FACTOR = 0.9
# A document titled by a feature the asker says is not in play ("logprobs is NOT enabled",
# "没开 logprobs"): the asker has ruled out its subject, which a mismatch's small penalty
# (the product or platform detected in passing) left first at 0.995.
RULED_OUT_FACTOR = 0.5
# Ranking scale per question language: Chinese questions score higher against every
# passage (the band above), and a shared ceiling clipped their best matches flat.
# "twin": the other-language half of a translated pair (the bundled KB's articles), as tuned
# before the shift below.
DENSE_RANGE = {"en": (0.78, 0.92), "zh": (0.85, 0.97), "twin": (0.76, 0.92)}
# A question against a page written only in the other language, by the question's language.
# An English question reads 0.036 lower on a Chinese page than on its English twin (measured
# on the bundled KB's twins: 377 real dev questions, the best chunk of the right article in
# each language; 10th–90th percentile 0.022–0.053), so its range sits that much under the
# English one: on one shared range (0.76–0.92) an English question's Chinese-only FAQ entry on
# where logs are kept (0.827) ranked 21st, under English pages that shared only "vllm". A
# Chinese question reads 0.052 lower on an English twin, but its range stays the one tuned on
# English-only doc trees: shifted by that (0.798–0.918), Chinese questions on the AIBrix,
# Aphrodite and api-for-open-llm docs lost 3 first passages and 4 fixes.
EN_ON_ZH_OFFSET = 0.036
CROSS_RANGE = {"en": (DENSE_RANGE["en"][0] - EN_ON_ZH_OFFSET, DENSE_RANGE["en"][1] - EN_ON_ZH_OFFSET), "zh": (0.76, 0.92)}


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
    coverage: float = 0.0  # IDF-weighted share of the question's keywords in this article
    dense: float = 0.0  # best chunk cosine, rescaled to the question language's band
    grounding: float | None = None  # the same as the refusal model reads it: a passage's on PASSAGE_DENSE_BAND (None: `dense`)
    product: str = ""
    other_lang_only: bool = False  # the document has no version in the question's language
    translated: bool = False  # coverage was measured on the question's glossary translation (glossary.py)
    passage: str = ""  # the heading path, when this match is one section of a document without article structure
    hardware_conflict: tuple[str, ...] = ()  # the question's hardware this article does not apply to
    product_conflict: bool = False
    version_conflict: bool = False
    page_penalty: float = 0.0  # what the match lost for standing on a page about something else, or on a hub page (PAGE_WEIGHT, HUB_WEIGHT)
    hub_penalty: float = 0.0  # the part of page_penalty for standing on a hub page (HUB_WEIGHT)
    quotes_the_paste: bool = False  # a team's passage quotes a log sample the pasted lines hold (no page prior then)

    @property
    def evidence(self) -> float:
        """The score before the page prior: what the match itself says (refusal.by_evidence)."""
        return self.score + self.page_penalty


@dataclass
class Retrieval:
    question: str
    lang: str
    mode: str
    articles: list[ArticleMatch]
    grounded: bool
    timings_ms: dict[str, float]
    scope: object = None  # scope.Scope: products, hardware, versions, entities named
    unseen: list[str] = field(default_factory=list)  # near-domain subjects this KB never mentions
    foreign_products: list[str] = field(default_factory=list)  # named products this KB has nothing on
    kb_coverage: float = 0.0  # IDF-weighted share of the question's keywords the KB has at all
    unknown_terms: list[str] = field(default_factory=list)  # names in the question the KB never uses (Kafka, PostgreSQL…)
    unknown_codes: list[str] = field(default_factory=list)  # "Xid 43": a code the KB numbers elsewhere, never with this number
    unknown_params: list[str] = field(default_factory=list)  # flags, fields, env vars the asker names that the KB never writes
    # Of those and the camelCase fields the KB never writes (scope._FIELD), the ones the asking
    # sentence names (scope.asked_unknown_parameters): the answer says the KB lacks them.
    asked_unknown: list[str] = field(default_factory=list)
    n_terms: int = 0  # distinct keywords in the question
    confidence: float | None = None  # the refusal model's P(the KB answers this)
    symptom_covered: bool = False  # the KB would answer but for an unknown subject, product or platform
    flags: dict[str, str] = field(default_factory=dict)  # --flag values pasted in the question
    unknown_error: bool = False  # the question is a bare error message the KB never words (scope.bare_unknown_error)
    unworded_error: bool = False  # the error lines pasted with it are worded as the KB never words them (scope.unworded_error)
    quiet_stats: bool = False  # the engine figures it quotes show nothing queued (questions.quiet_stats)
    denied_signatures: set[str] = field(default_factory=set)  # articles whose log line the question says is absent
    unanchored: bool = False  # a Chinese question's best passage, English only, shares none of its rare words (`unanchored`)
    query_vector: object = None  # the question's embedding (refusal.py compares it with labelled questions)
    embedder: str = ""  # the name of the embedder that made it
    exemplar_lean: float | None = None  # refusal.exemplar_lean: nearer out-of-scope questions (>0) or answered ones


def squash(text: str) -> str:
    """Text compared for log signatures: NFKC, lower-case, no whitespace."""
    return re.sub(r"\s+", "", normalize(text))


def section_key(title: str) -> str:
    """The passage a chunk belongs to: its heading path down to the second level
    ("Doc > Section"), so a section's "Cause" and "Fix" subsections answer together."""
    return " > ".join(title.split(" > ")[:2])


def dense_scale(cosine: float | np.ndarray, lang: str = "en", cross: bool = False) -> float | np.ndarray:
    """Cosine to 0..1 on the question language's range; `cross` for pages written only in
    the other language (CROSS_RANGE)."""
    floor, ceil = (CROSS_RANGE if cross else DENSE_RANGE).get(lang, DENSE_RANGE["en"])
    return np.clip((cosine - floor) / (ceil - floor), 0.0, 1.0)


def _other_lang_mask(index: KBIndex, lang: str) -> np.ndarray:
    """Which chunks are in the other language than the question's, cached per index."""
    cache = derived(index, "_lang_masks", dict)
    if lang not in cache:
        cache[lang] = np.fromiter((c.lang != lang for c in index.chunks), dtype=bool, count=len(index.chunks))
    return cache[lang]


def twinless_mask(index: KBIndex, lang: str) -> np.ndarray:
    """Chunks in another language than the question's whose document has no version in it
    (an English-only doc tree, for a Chinese question), cached per index."""
    cache = derived(index, "_twinless_masks", dict)
    if lang not in cache:
        has_lang = {meta.id for key, meta in index.docs.items() if key.endswith(":" + lang)}
        cache[lang] = np.fromiter((c.lang != lang and c.doc_id not in has_lang for c in index.chunks),
                                  dtype=bool, count=len(index.chunks))
    return cache[lang]




def _writes_mostly_in(index: KBIndex, lang: str) -> bool:
    """Whether most of the KB's documents have a version in `lang`, cached per index."""
    def build() -> bool:
        ids = {meta.id for meta in index.docs.values()}
        return 2 * len({m.id for k, m in index.docs.items() if k.endswith(":" + lang)}) > len(ids)

    return derived(index, f"_writes_mostly_in_{lang}", build)


def query_tokens(index: KBIndex, text: str) -> list[str]:
    """The question's keywords, typos mended, without bare model family names: "Llama 3
    runs out of memory" is about memory. A KB's examples name models too ("vllm serve
    meta-llama/Llama-3.1-8B-Instruct" in the chunked-prefill article), and the family name
    alone pulled such articles to the top of unrelated questions. A family the KB's titles
    or file names carry stays a keyword: a doc tree with a DeepSeek deployment page is asked
    about it by that name."""
    tokens = correct_typos(index.tokenizer(text), index.doc_freq.keys())
    if any(is_cjk(t[0]) for t in tokens):
        from .glossary import kb_words

        tokens = [w for t in tokens for w in (kb_words(t, index.doc_freq) if is_cjk(t[0]) else [t])]
    if not any(t.isascii() and t.isalpha() for t in tokens):
        return tokens  # no English word: no family name, and no need to load the stemmer (60 ms)
    families = _ignored_families(index)
    return [t for t in tokens if t not in families]


def _ignored_families(index: KBIndex) -> frozenset[str]:
    def build() -> frozenset[str]:
        # "command" and "opt" are ordinary words far more often than models.
        names = {stem(name) for name in MODEL_FAMILIES - {"command", "opt"}}
        named = set()
        for meta in index.docs.values():
            named.update(index.tokenizer(f"{meta.title} {meta.source.replace('_', ' ')}"))
        return frozenset(names - named)

    return derived(index, "_ignored_families", build)


_UNDERSCORED = re.compile(r"\w+_\w+")
# A name with letters and digits (h100, qwen2.5, xid79); a bare number, time or date is none (review).
_IDENTIFIER = re.compile(r"[a-z][a-z.-]*\d|\d[\d.-]*[a-z]")
# ALL-CAPS (OOM, NCCL) or with a capital inside (DCGMExporterDown, vLLM): a name, not a word.
_CAPITALISED = re.compile(r"\b(?:[A-Z]{2,}[A-Za-z]*|[A-Za-z]+[a-z][A-Z][A-Za-z]*)\b")


def cross_keyword_scores(index: KBIndex, query: str, lang: str, native: np.ndarray,
                         own: list[str] | None = None) -> tuple[np.ndarray, set[str] | None]:
    """BM25 scores where documents without a version in the question's language are scored
    on the question plus its glossary translation (glossary.py); others keep `native`.
    Also the terms such a document can share with the question: the question's own words
    written in the document's script (identifiers, flags) and the translations; None when
    nothing was translated. `own`: the question's own keywords (query_tokens), when the caller
    has them already."""
    twinless = twinless_mask(index, lang)
    if not twinless.any():
        return native, None
    from .glossary import translate

    extra = translate(query, lang)
    if not extra:
        return native, None
    tokens = query_tokens(index, query + "\n" + " ".join(extra))
    own = own if own is not None else query_tokens(index, query)
    # Identifiers are written the same in both scripts: a Chinese page about the H100 says
    # "H100". Left out of an English question's shareable terms, "how do I request more H100
    # quota" was fully covered by a Chinese page on hung requests, through 请求 alone. An
    # identifier has letters and a digit, or an underscore (H100, Qwen2.5, CUDA_VISIBLE_DEVICES),
    # or is a dashed name the KB writes (--max-model-len, num_requests_waiting);
    # a dashed English word ("out-of-memory") is not one. Only the asker's sentences are
    # read for them: a pasted error's paths and library versions name no subject.
    if lang == "zh":
        own_script = {t for t in tokens if not any(is_cjk(ch) for ch in t)}
    else:
        from .scope import sentences

        prose = sentences(query, errors=False)
        underscored = {t for t in index.tokenizer(" ".join(_UNDERSCORED.findall(prose))) if "-" in t}
        # (the question's own Chinese words; its translation's are counted below)
        # Names written in capitals (DCGMExporterDown, OOM, NVLink) are written so in Chinese
        # pages too: a Chinese GPU section "covered" the DCGMExporterDown alert through
        # 告警 and 处理 alone, above the English alert table that names it (trial).
        named = set(index.tokenizer(" ".join(_CAPITALISED.findall(prose))))
        own_script = {t for t in own if any(is_cjk(ch) for ch in t)} | {
            t for t in query_tokens(index, prose)
            if _IDENTIFIER.search(t) or t in underscored or t in named or ("-" in t and index.doc_freq.get(t, 0) > 0)}
    if lang == "zh":
        translated = set(index.tokenizer(" ".join(extra)))
    else:
        # An English word brings every Chinese word of its concept (glossary.translate), and
        # each would count as a keyword of its own that a page cannot all have: "stuck" on a
        # page that says 卡住 covered 1 of 8, the rarest weighing most (review). A concept counts
        # by the words of it the KB uses, or its first word when it uses none.
        translated = set()
        for concept in extra:
            words = index.tokenizer(concept)
            translated.update([w for w in words if index.doc_freq.get(w, 0) > 0] or words[:1])
        if _writes_mostly_in(index, lang):
            # A word no page uses, in a KB mostly written in the asker's language, is one the
            # Chinese page lacks too: it names a subject the KB never takes up. Left out, a
            # Chinese on-call handbook covered "Postgres replication lag alert is firing" in
            # full through 告警 (alert) alone, and answered it as sure (trial). In a KB written
            # mostly in Chinese, an English word it never uses says nothing of the sort.
            own_script |= {t for t in own if t.isascii() and t.isalpha() and not index.doc_freq.get(t)}
    shared = own_script | translated
    return np.where(twinless, index.keyword.scores(tokens), native), shared


def page_vectors(index: KBIndex) -> tuple[dict[str, int], np.ndarray]:
    """Each document's mean chunk vector, normalised (zh and en twins share one), cached per
    index: what the page as a whole is about."""
    def build() -> tuple[dict[str, int], np.ndarray]:
        vectors = np.asarray(index.vectors, dtype=np.float32)
        rows = {doc_id: i for i, doc_id in enumerate(dict.fromkeys(c.doc_id for c in index.chunks))}
        of_chunk = np.fromiter((rows[c.doc_id] for c in index.chunks), dtype=np.int64, count=len(index.chunks))
        order = np.argsort(of_chunk, kind="stable")
        starts = np.searchsorted(of_chunk[order], np.arange(len(rows)))
        sums = np.add.reduceat(vectors[order], starts, axis=0)
        sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-9)
        return rows, sums

    return derived(index, "_page_vectors", build)


def page_hubness(index: KBIndex) -> np.ndarray:
    """How much closer each page lies to the other pages, on average, than the median page
    does (0 for half the pages at least), cached per index. A README, an overview or a
    parameter list names every subject of the docs in passing, so its page vector is close
    to all of them, and to most questions, without being about any one."""
    def build() -> np.ndarray:
        _rows, pages = page_vectors(index)
        if len(pages) < 3:
            return np.zeros(len(pages), dtype=np.float32)
        sims = pages @ pages.T
        np.fill_diagonal(sims, np.nan)
        central = np.nanmean(sims, axis=1)
        return np.maximum(0.0, central - np.median(central)).astype(np.float32)

    return derived(index, "_page_hubness", build)


def demote_ruled_out(question: str, matches: list[ArticleMatch], metas: dict) -> None:
    """A document titled by what the asker says is not in play ("logprobs is NOT enabled",
    "没开 logprobs"): its subject was ruled out, whatever else it shares with the question."""
    from .negation import ruled_out

    excluded = [re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.I) for name in ruled_out(question)]
    if not excluded:
        return
    for match in matches:
        meta = metas.get(match.doc_id)
        title = match.chunks[0].chunk.title if match.passage else getattr(meta, "title", "")
        if any(x.search(title) for x in excluded):
            match.score *= RULED_OUT_FACTOR


# One GPU said, and no second: "Qwen2.5-72B-Instruct-AWQ 单卡 48G 能起来吗" got the NCCL article
# for starting on several GPUs under its sizing note (trial). A document titled by several GPUs
# is about a set-up the asker does not have.
_ONE_GPU = re.compile(r"单卡|单张卡|一张卡|一块卡|单块卡|单 ?gpu|\b(?:a )?single (?:gpu|card)\b|\bone (?:gpu|card)\b|\b1 ?(?:x ?)?gpu\b", re.I)
_MANY_GPUS = re.compile(r"多卡|多张|多块|多机|多节点|双卡|两张|别的卡|其他卡|其它卡|\bother (?:gpus?|cards?)\b|张量并行|tensor[\s_-]*(?:并行|parallel)|\btp\s*[=:]?\s*(?:[2-9]|[1-9]\d)"
                        # one GPU said to work is the contrast to several that fail ("single GPU is fine", dev)
                        r"|\b(?:single|one|1)\s*gpu\s*(?:is\s*|works?\s*)?(?:fine|ok|okay|good|works?)\b|单卡(?:正常|没问题|可以|能跑|ok)"
                        r"|\b(?:several|multiple|multi)[ -]?(?:gpu|card|node)s?|\b(?:[2-9]|[1-9]\d+)\s*(?:x\s*)?(?:[a-z]+\s+)?(?:gpus|cards|nodes)\b"
                        r"|\b(?:two|three|four|five|six|seven|eight|sixteen)\s+(?:gpus|cards|nodes)\b|\b(?:[2-9]|[1-9]\d+)\s*[x×]\s*[a-z]"
                        r"|(?:[2-9]|[1-9]\d+|[两二三四五六七八九十])\s*[张块台]?\s*卡|[2-9]\s*[张块台]|\bnodes\b|\bnccl\b|分布式|distributed|\bray\b",
                        re.I)
# Not multi-node titles: an address or network article answers one GPU's questions too ("单卡为什么
# 也要去连 dns.google", VLLM_HOST_IP).
_TITLE_MANY = re.compile(r"several gpus|multiple gpus|multi-gpu|多卡", re.I)


def demote_other_gpu_count(question: str, matches: list[ArticleMatch], metas: dict) -> None:
    """A question on one GPU: documents titled by several GPUs yield (as a ruled-out subject)."""
    if not _ONE_GPU.search(question) or _MANY_GPUS.search(question):
        return
    for match in matches:
        meta = metas.get(match.doc_id)
        title = match.chunks[0].chunk.title if match.passage else getattr(meta, "title", "")
        if _TITLE_MANY.search(title) and not match.signatures:
            match.score *= RULED_OUT_FACTOR


# Kept of a document's score when the question asks about running out of memory and the
# document, in every language it has, never deals with memory, while another candidate does:
# "vllm 起不来 报 OOM 咋办" got the model-download article (its "How people ask" says 起不来)
# over the CUDA OOM one, and then a note that the article never speaks of memory (trial).
MEMORYLESS_FACTOR = 0.7


def memory_docs(index: KBIndex) -> frozenset[str]:
    """The ids of the documents that deal with memory in at least one language, cached per index."""
    from .symptoms import deals_with_memory

    def build() -> frozenset[str]:
        texts: dict[tuple[str, str], list[str]] = {}
        for chunk in index.chunks:
            texts.setdefault((chunk.doc_id, chunk.lang), []).append(chunk.text)
        # A team's page answers by its passages: one remark on memory ("a minimum of 48GB of
        # combined CPU and GPU memory") can be the answer, and demoting its page lost it (unseen tree).
        passages = {m.id for m in index.docs.values() if not getattr(m, "structured", True)}
        return frozenset(doc for (doc, _lang), parts in texts.items()
                         if deals_with_memory("\n".join(parts).lower().replace("_", "-"), once=doc in passages))

    return derived(index, "_memory_docs", build)


def demote_memoryless(index: KBIndex, question: str, matches: list[ArticleMatch]) -> None:
    """An OOM question's candidates that never deal with memory yield to one that does; one whose
    log signature the question quotes keeps its place."""
    from .symptoms import denied, named

    if "oom" not in named(question) or "oom" in denied(question):
        return
    on_memory = memory_docs(index)
    if not any(m.doc_id in on_memory for m in matches):
        return
    for match in matches:
        if match.doc_id not in on_memory and not match.signatures:
            match.score *= MEMORYLESS_FACTOR


# An alert's or an env var's name: three capitalised parts (KVCacheUsageHigh, GPUMemoryHigh) or
# UPPER_SNAKE of three words (FD_DISABLED_RECOVER). Not flags or snake_case settings, which a
# parameter table heads as often as the runbook section that explains them (one file@1 lost
# net on the dev trees with them).
_HEADING_NAME = re.compile(r"(?<![\w-])(?:[A-Za-z][A-Za-z0-9]{7,}|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,})(?![\w-])")
HEADING_NAME_BONUS = 0.08


def _alert_like(name: str) -> bool:
    """UPPER_SNAKE, or CamelCase with three capitals ("DeepSeek", "FastDeploy" are no alerts)."""
    if "_" in name:
        return True
    return sum(ch.isupper() for ch in name) >= 3 and any(ch.islower() for ch in name) and bool(re.search(r"[a-z][A-Z]", name))


def favour_named_headings(query: str, matches: list[ArticleMatch]) -> None:
    """A passage headed by the alert or env var the question names before one that mentions
    it: "KVCacheUsageHigh 告警了怎么处理" led with the P99 latency section of an on-call
    handbook, whose last bullet names KVCacheUsageHigh, above the section titled by it
    (trial). Passages only; curated articles are whole."""
    names = {m.group(0).lower() for m in _HEADING_NAME.finditer(query[:8000]) if _alert_like(m.group(0))}
    if not names:
        return
    for match in matches:
        if not match.passage:
            continue
        heading = match.passage.split(" > ", 1)[-1].lower()  # the section's own heading, or a page's title
        if any(name in heading for name in names):
            match.score += HEADING_NAME_BONUS


def names_a_heading(index: KBIndex, query: str) -> bool:
    """Whether the question names an alert or env var that titles a page or section of this KB:
    then that page is its subject, whatever near-domain word comes with the name. "KVCacheUsageHigh
    alert fired, what should I do?" was refused, "nothing on dashboards and alerting", above the
    team's page titled KVCacheUsageHigh with its "What to do" steps (trial)."""
    from .scope import _dashed, _found, kb_text

    names = {_dashed(m.group(0).lower()) for m in _HEADING_NAME.finditer(query[:8000]) if _alert_like(m.group(0))}
    if not names:
        return False
    heads, _body, per_doc = kb_text(index)
    # An alert is named by a page or two; a name in most pages is the product's ("TabbyAPI" in
    # a tabbyAPI tree, whose near-domain questions it let through, dev trees).
    most = max(3, len(per_doc) // 10)
    return any(_found(heads, (name,)) and sum(1 for text in per_doc if _found(text, (name,))) <= most for name in sorted(names))


# Two passages this close, from files whose paths differ by a model or version name ("internvl2.0/
# deployment.md" and "internvl2.5/deployment.md", "models/Qwen2/…" and "models/Qwen1_5/…"): the
# question's own name decides. A team's tree keeps one copy of a guide per model or release, and
# the copies share every other word (analysis of the dev trees: 30 of 228 wrong files sure).
PATH_TIE = 0.06
_NAME_TOKEN = re.compile(r"[a-z][a-z.]*\d[a-z0-9.]*")
# A number format is no model or release: "fp8" names the features/quantization/fp8.md page and the
# question's format, not which model's copy (angelslim-005 lost its Qwen-VL page to it, dev).
_FORMAT_TOKEN = re.compile(r"(?:fp|bf|int|uint|nvfp|mxfp|q|w\d+a)\d+(?:[a-z0-9.]*)")


def _named_tokens(text: str) -> set[str]:
    """Names with letters and digits ("qwen2", "internvl2.5", "v0.8"), a trailing ".0" dropped and
    "1_5" read as "1.5"; a file's extension is no name."""
    text = re.sub(r"(?<=\d)_(?=\d)", ".", text.lower())
    text = re.sub(r"\.(?:md|mdx|rst|txt|html?)\b", " ", text)
    out = set()
    for token in re.split(r"[^a-z0-9.]+", text):
        token = token.strip(".")
        token = re.sub(r"(?<=\d)\.0$", "", token)
        if _NAME_TOKEN.fullmatch(token) and not _FORMAT_TOKEN.fullmatch(token):
            out.add(token)
    return out


def favour_named_paths(question: str, matches: list[ArticleMatch]) -> None:
    """Of the two best passages, within PATH_TIE of each other and from two copies of one file
    (the same file name) whose paths name different models or versions, the one whose path
    names the question's goes first."""
    passages = sorted((m for m in matches if m.passage and m.chunks), key=lambda m: -m.score)[:2]
    if len(passages) < 2 or passages[0].score - passages[1].score > PATH_TIE:
        return
    sources = [m.chunks[0].chunk.source for m in passages]
    if sources[0].rsplit("/", 1)[-1].lower() != sources[1].rsplit("/", 1)[-1].lower():
        return  # copies of one guide share a file name; "Qwen3-0.6B" beside README.md and docs/qwen3.md is context (dev)
    first, second = (_named_tokens(source) for source in sources)
    asked = _named_tokens(re.sub(r"(?<=[A-Za-z])\s+(?=\d+(?:\.\d+)*\b)", "", question[:8000]))  # "InternVL 2.5" (review)
    if not asked or first == second:
        return
    if asked & (second - first) and not asked & (first - second):
        passages[1].score = passages[0].score + 0.001


def _pages_only_in(index: KBIndex, lang: str) -> np.ndarray:
    """Which pages (page_vectors' rows) are written only in `lang`, cached per index."""
    def build() -> np.ndarray:
        rows, _pages = page_vectors(index)
        mask = np.zeros(len(rows), dtype=bool)
        other = "en" if lang == "zh" else "zh"
        for doc_id, row in rows.items():
            mask[row] = f"{doc_id}:{lang}" in index.docs and f"{doc_id}:{other}" not in index.docs
        return mask

    return derived(index, f"_pages_only_in_{lang}", build)


def apply_page_prior(index: KBIndex, query_vector: np.ndarray, matches: list[ArticleMatch], mode: str,
                     question: str = "", lang: str = "") -> None:
    """Lower each match by its page's cosine gap to the page closest to the question
    (PAGE_WEIGHT, ARTICLE_PAGE_WEIGHT), a passage by its page's hubness (HUB_WEIGHT) and, for
    a question not about versions, a passage of release notes (RELEASE_LOG_PENALTY),
    recording what it lost in `page_penalty`. Keyword-only ranking stays keyword-only."""
    if not matches or mode == "bm25":
        return
    rows, pages = page_vectors(index)
    page_cos = pages @ np.asarray(query_vector, dtype=np.float32)
    if lang == "en":
        # A page written only in Chinese reads EN_ON_ZH_OFFSET further from an English question than
        # its translation would (CROSS_RANGE): without this, every such page paid ~0.13 for
        # its language alone, and an English question never reached a Chinese-only page.
        # (A Chinese question's English-only pages keep the prior as tuned, like their range.)
        page_cos = page_cos + EN_ON_ZH_OFFSET * _pages_only_in(index, "zh")
    closest_page = float(page_cos.max())
    floor, ceil = DENSE_RANGE["en"]
    passages = any(m.passage for m in matches)  # curated articles need neither hubness nor release notes
    hub = page_hubness(index) if passages else None
    logs = release_logs(index) if passages and not _ASKS_ABOUT_VERSIONS.search(question[:8000]) else frozenset()
    incidents = incident_reports(index) if passages and not _ASKS_ABOUT_INCIDENTS.search(question[:8000]) else frozenset()
    retired = retired_pages(index) if passages else frozenset()
    for match in matches:
        # An incident report tells the story of the error, whether or not it quotes the paste;
        # a page that says it is retired points at its successor.
        incident = ((RETIRED_PENALTY if match.doc_id in retired else RELEASE_LOG_PENALTY if match.doc_id in incidents else 0.0)
                    if match.passage else 0.0)
        if match.quotes_the_paste:
            # A passage that quotes a sample of the pasted log is about it, however its page
            # reads: a handbook of many alerts (a hub) lost its alert's section, which quotes
            # "token usage: 0.99", to a page that shares only "SGLang" with the paste (trial).
            # Pieces of the paste found in pages keep the prior: a name alone
            # ("metadata.annotations", in an unrelated page's YAML) is no such sign, and where
            # several pages hold the same error the prior tells them apart.
            match.page_penalty = incident
            match.score -= incident
            continue
        gap = closest_page - float(page_cos[rows[match.doc_id]])
        match.page_penalty = incident + (PAGE_WEIGHT if match.passage else ARTICLE_PAGE_WEIGHT) * gap / (ceil - floor)
        if hub is not None and match.passage:
            match.hub_penalty = HUB_WEIGHT * float(hub[rows[match.doc_id]]) / (ceil - floor)
            match.page_penalty += match.hub_penalty
            if match.doc_id in logs:
                match.page_penalty += RELEASE_LOG_PENALTY
        match.score -= match.page_penalty


# How far behind a curated article a team's own passage may score and still lead (see below).
TEAM_PASSAGE_MARGIN = 0.12


def team_passage_first(articles: list[ArticleMatch]) -> list[ArticleMatch]:
    """A team's runbook passage ahead of the curated article it nearly ties with, when the
    passage's best chunk matches the question better than any of the article's. A curated
    article adds up many chunks (and a second-chunk bonus) that a one-section runbook entry
    cannot, so "NCCL error when our serving pods start" went to the generic NCCL article,
    and the team's own section of that name (their fabric, their on-call channel, their
    stop-gap) was not even offered beside it. Only a KB that mixes both is reordered."""
    if len(articles) < 2 or articles[0].passage or not articles[0].chunks:
        return articles
    top = articles[0]
    for i, art in enumerate(articles[1:3], 1):
        if (art.passage and art.chunks and art.score >= top.score - TEAM_PASSAGE_MARGIN
                and art.chunks[0].score > top.chunks[0].score):
            return [art, *articles[:i], *articles[i + 1:]]
    return articles


# A release log (release notes, a changelog, "News or Update", "Docker Release History") names
# every feature and flag the day it shipped, in a line each: it matched "which startup flag
# serves embeddings?" closer than the parameter reference that explains the flag. A passage
# on one loses this much, unless the question asks about versions or changes. Like the page
# prior it only orders: whether the KB answers is judged before it.
RELEASE_LOG_PENALTY = 0.1
_RELEASE_LOG_TITLE = re.compile(
    r"^\s*(?:release notes?|release history|docker release history|change ?log|changes|news(?: or updates?)?|what'?s new"
    r"|updates|更新日志|版本说明|发布说明|版本发布|发布日志|release\s+(?:[\w.-]+\s+)?v?\d+\.\d+(?:\.\d+)?"
    r"|[\w.-]+\s+v?\d+\.\d+\.\d+)\s*$", re.I)
_RELEASE_LOG_FILE = frozenset({"changelog", "changes", "news", "release", "releases", "release-notes", "release_notes",
                               "releasenotes", "history"})
_ASKS_ABOUT_VERSIONS = re.compile(r"\bv\d+(?:\.\d+)+|\b\d+\.\d+\.\d+|\b(?:release|releases|changelog|upgrad\w*|versions?|"
                                  r"since|new in|added in|deprecated|removed)\b|版本|升级|更新|新增|发布", re.I)


def is_release_log(page) -> bool:
    """Whether a page (a DocMeta, or any chunk of the page) is release notes, by its title or
    file name."""
    from pathlib import PurePath

    title = page.title.split(" > ", 1)[0].strip("*_ ")
    return bool(_RELEASE_LOG_TITLE.match(title)) or PurePath(page.source).stem.lower() in _RELEASE_LOG_FILE


# A team's postmortem tells the story of an incident and names every error met on the way
# ("… the new vLLM pods crash-looped with MetadataIncompleteBuffer"): its summary and timeline
# led the answer to that error above the runbook that fixes it (trial). Its passages lose
# RELEASE_LOG_PENALTY too, unless the question asks about incidents. A postmortem is known by
# its title, or by two of an incident report's sections.
_INCIDENT_TITLE = re.compile(r"post[ -]?mortem|incident (?:report|review|retro\w*|analysis)|\brca\b|复盘|事故报告|故障报告|事故分析"
                             r"|故障分析|事后分析|事故总结|故障总结", re.I)
_INCIDENT_SECTIONS = frozenset({"timeline", "timeline (utc)", "impact", "customer impact", "root cause", "root causes",
                                "action items", "follow-ups", "follow-up actions", "lessons learned", "what went well",
                                "what went wrong", "detection", "时间线", "影响", "影响范围", "根因", "根本原因", "改进项", "后续改进",
                                "改进措施", "经验教训", "故障时间线", "事故时间线"})
_ASKS_ABOUT_INCIDENTS = re.compile(r"\b(?:post[ -]?mortems?|incidents?|outages?|what happened|last time|rca)\b"
                                   r"|复盘|事故|故障报告|上次|之前那次|那次", re.I)


def incident_reports(index: KBIndex) -> frozenset[str]:
    """The ids of the documents that are incident reports (postmortems), cached per index."""
    def build() -> frozenset[str]:
        sections: dict[str, set[str]] = {}
        for chunk in index.chunks:
            parts = chunk.title.split(" > ")
            sections.setdefault(chunk.doc_id, set()).update(p.strip("*_ ").lower() for p in parts[1:])
        return frozenset(meta.id for meta in index.docs.values() if not meta.structured
                         and (_INCIDENT_TITLE.search(meta.title) or len(sections.get(meta.id, set()) & _INCIDENT_SECTIONS) >= 2))

    return derived(index, "_incident_reports", build)


# A page that says of itself that it is retired ("Old page. The current procedure is in the
# runbooks repo. Kept for history.", "本文档已废弃"): its old steps led the answer above the
# current doc (trial). Only the page speaking of itself, in its title or first lines: "the
# --foo flag is deprecated" is a fact the page teaches, and so is a plugin's "> **Deprecated:**
# use single-profile-handler instead" (llm-d: the page that answers "is this still recommended?").
_RETIRED = re.compile(r"\b(?:this|the) (?:page|doc|document|article|runbook|guide|procedure) (?:is|has been) (?:now )?"
                      r"(?:deprecated|obsolete|outdated|out of date|superseded|archived|retired|no longer (?:maintained|valid|current))"
                      r"|\bold page\b|\bkept (?:only )?for (?:history|reference)\b"
                      r"|(?:本|此|该)(?:文档|文章|页面?|手册|流程)(?:已|已经)(?:废弃|过时|弃用|停止维护|不再维护|迁移)|仅作历史参考|仅供历史参考",
                      re.I)


RETIRED_PENALTY = 0.3


def retired_pages(index: KBIndex) -> frozenset[str]:
    """The ids of the documents that say they are retired, cached per index."""
    def build() -> frozenset[str]:
        opening: dict[str, str] = {}
        for chunk in index.chunks:
            if chunk.doc_id not in opening:
                opening[chunk.doc_id] = chunk.text[:400]
        return frozenset(meta.id for meta in index.docs.values() if not meta.structured
                         and (_RETIRED.search(meta.title) or _RETIRED.search(opening.get(meta.id, ""))))

    return derived(index, "_retired_pages", build)


def release_logs(index: KBIndex) -> frozenset[str]:
    """The ids of the documents that are release notes, cached per index."""
    return derived(index, "_release_logs",
                   lambda: frozenset(meta.id for meta in index.docs.values() if not meta.structured and is_release_log(meta)))


def _set_grounding(match: ArticleMatch, lang: str) -> None:
    """`dense` and `grounding`, from the match's closest chunk. A page in the other language
    is judged on the cross band, as the refusal model was fitted. (Judging an English
    question's Chinese-only page as its translation would be, like its ranking, was tried:
    on the dev trees' English questions it cut false refusals by 3 and added 2 fixes but
    answered one more out-of-scope question, and on the new LightCompress tree one more,
    with one fix fewer; dropped.)"""
    closest = max(match.chunks, key=lambda c: c.dense)
    band_lang = lang if closest.chunk.lang == lang else "cross"
    match.dense = grounding_scale(closest.dense, band_lang)
    match.grounding = grounding_scale(closest.dense, band_lang, PASSAGE_DENSE_BAND) if match.passage else match.dense


def section_ordinals(index: KBIndex) -> tuple[dict[tuple[str, str, str], int], frozenset[str]]:
    """Each passage's place among its document's top-level sections, per language, and the
    documents whose versions have as many sections each, cached per index: a translated page
    keeps its sections in order, so the n-th of one language is the n-th of the other, whatever
    each calls it ("FAQ", "常见问题"). Where one version has a section more (a translator's note,
    a section not yet translated), places after it may be shifted (review)."""
    def build() -> tuple[dict[tuple[str, str, str], int], frozenset[str]]:
        places: dict[tuple[str, str, str], int] = {}
        count: dict[tuple[str, str], int] = {}
        for chunk in index.chunks:
            key = (chunk.doc_id, chunk.lang, section_key(chunk.title))
            if key not in places:
                places[key] = count.get(key[:2], 0)
                count[key[:2]] = places[key] + 1
        counts: dict[str, set[int]] = {}
        for (doc, _lang), n in count.items():
            counts.setdefault(doc, set()).add(n)
        return places, frozenset(doc for doc, ns in counts.items() if len(ns) == 1)

    return derived(index, "_section_ordinals", build)


# What a translation keeps as written: identifiers, flags, env vars, paths, versions.
_KEPT_NAME = re.compile(r"--?[a-z][\w-]+|\b[A-Za-z][\w]*[_./][\w./-]*\w|\b[A-Z][A-Z0-9_]{2,}\b|\d+(?:\.\d+)+")


def _section_names(index: KBIndex, key: tuple[str, str, str]) -> frozenset[str]:
    """The names a section writes as they are in any language, cached per index and section."""
    cache = derived(index, "_section_names", dict)
    if key not in cache:
        text = "\n".join(c.text for c in index.chunks if (c.doc_id, c.lang) == key[:2] and section_key(c.title) == key[2])
        cache[key] = frozenset(m.group(0) for m in _KEPT_NAME.finditer(text))
    return cache[key]


def _same_passage(index: KBIndex, a: tuple[str, str, str], b: tuple[str, str, str], even: frozenset[str]) -> bool:
    """Whether two sections in the same place of a page pair are one passage translated: when
    the pages have as many sections each, yes; else only if they write most of the same names."""
    if a[0] in even:
        return True
    na, nb = _section_names(index, a), _section_names(index, b)
    return bool(na and nb) and len(na & nb) >= max(1, min(len(na), len(nb)) / 2)


def twin_grounding(index: KBIndex, matches: list[ArticleMatch], lang: str) -> None:
    """A passage matched in the other language of a translated page is grounded as its twin
    in the asker's language: a Chinese question's English "FAQ" of a zh/en page pair led on its
    pasted command's words and was judged on the cross-language band, while its own "常见问题",
    read on the Chinese one, was as close as a passage gets; the question was refused (LobeChat's
    docs, new tree)."""
    places, even = section_ordinals(index)
    own = {(m.doc_id, places[(m.doc_id, lang, m.passage)]): m for m in matches
           if m.passage and m.chunks and m.chunks[0].chunk.lang == lang and (m.doc_id, lang, m.passage) in places}
    for match in matches:
        if not match.passage or match.other_lang_only or match.grounding is None or not match.chunks:
            continue
        chunk = match.chunks[0].chunk
        place = places.get((match.doc_id, chunk.lang, match.passage))
        twin = own.get((match.doc_id, place)) if chunk.lang != lang and place is not None else None
        if (twin is not None and twin.grounding is not None and twin.grounding > match.grounding
                and _same_passage(index, (match.doc_id, chunk.lang, match.passage), (twin.doc_id, lang, twin.passage), even)):
            match.grounding = twin.grounding


def grounding_scale(cosine: float, lang: str, band: dict[str, tuple[float, float]] = DENSE_BAND) -> float:
    lo, hi = band.get(lang, band["en"])
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


def pasted_in_passages(index: KBIndex, question: str,
                       unstructured: set[str]) -> tuple[dict[tuple[str, str], list[str]], set[tuple[str, str]]]:
    """(passage (doc id, section) → the messages the question pastes that it quotes verbatim,
    the passages among them that quote a log sample the paste holds).
    A team's docs declare no log signatures, yet a troubleshooting page quotes the error it
    is about ("Service temporarily unavailable: All workers are busy"), and a pasted copy
    of that line is as sure a sign as a signature. Only documents without article structure
    are read so; the curated articles declare theirs."""
    from .cleaning import pasted_messages, split_question
    from .names import asked_codes, states_code
    from .questions import might_paste

    if not unstructured:
        return {}, set()
    # A code the question names ("NVRM: Xid (PCI:0000:b3:00): 48", "exit code 137") is such a
    # sign too where a page states it: a runbook's "drain on XID 48" answered a pasted kernel
    # line that shares few other words with it, and the line was refused.
    codes = asked_codes(question)
    pastes = might_paste(question)
    messages = [(m, squash(m)) for m in pasted_messages(question)] if pastes else []
    # A FAQ's heading that names an error: said anywhere in the question, pasted or in its
    # prose, it is the section's subject (see `heading_samples`).
    hits: dict[tuple[str, str], list[str]] = {}
    sampled: set[tuple[str, str]] = set()
    # Not one the question says is absent ("日志里没有 Illegal instruction"), and not beyond
    # what retrieval reads of a long paste. Squashed only where some heading names a message.
    titled = {key: samples for key, samples in titled_samples(index).items() if key[0] in unstructured}
    whole = squash(_NEGATED_CLAUSE.sub(" ", question[:MAX_HEADING_SCAN])) if titled else ""
    for (doc_id, title), samples in titled.items():
        said = [sample for sample, key in samples if _holds_sample(whole, key)]
        if said:
            sampled.add((doc_id, section_key(title)))
            found = hits.setdefault((doc_id, section_key(title)), [])
            found += [sample for sample in said if sample not in found]
    # A troubleshooting page's block of the messages it covers, placeholders and all
    # ("models directory does not exist: <path>"): said anywhere in the question, as a
    # heading's message is. A bare pasted line ("models directory does not exist:
    # /app/models/mom-domain-classifier") reads as no paste, and led with the section above
    # it on the page (newcomer, dev trees).
    fenced = {n: samples for n, samples in _fenced_samples(index).items() if index.chunks[n].doc_id in unstructured}
    if fenced:
        whole = whole or squash(_NEGATED_CLAUSE.sub(" ", question[:MAX_HEADING_SCAN]))
        for n, samples in fenced.items():
            said = [sample for sample, pieces in samples if _holds_pieces(whole, pieces)]
            if said:
                chunk = index.chunks[n]
                sampled.add((chunk.doc_id, section_key(chunk.title)))
                found = hits.setdefault((chunk.doc_id, section_key(chunk.title)), [])
                found += [sample for sample in said if sample not in found]
    if not messages and not codes:
        return hits, sampled
    squashed = derived(index, "_squashed_texts", lambda: [squash(c.text) for c in index.chunks])
    # The other way round too: a page's quoted sample of the log ('日志出现 "token usage: 0.99"')
    # found in the pasted lines. Cut at colons, the paste's pieces never held it whole (trial).
    parts = split_question(question) if pastes else None
    pasted = squash("\n".join(parts.errors + parts.logs)) if parts else ""
    quotes = _quoted_samples(index) if pasted else {}
    for n, (chunk, text) in enumerate(zip(index.chunks, squashed)):
        if chunk.doc_id not in unstructured:
            continue
        # The code is often the section's heading ("## XID 48 (double-bit ECC)"), not its body.
        said = [message for message, key in messages if key in text] + (
            states_code(f"{chunk.title.split(' > ')[-1]}\n{chunk.text}", codes) if codes else [])
        samples = [sample for sample, key in quotes.get(n, ()) if _holds_sample(pasted, key)]
        if samples:
            sampled.add((chunk.doc_id, section_key(chunk.title)))
        said += samples
        for message in said:
            found = hits.setdefault((chunk.doc_id, section_key(chunk.title)), [])
            if message not in found:
                found.append(message)
    return hits, sampled


# A log line quoted in a page's text: "…", “…” or `…`, with a word, a space or colon, and no
# flag or command ("--max-model-len", "$ kubectl …" are settings, not what a log prints).
_QUOTED_SAMPLE = re.compile(r"[\"“`]([A-Za-z#\[][^\"”`\n]{10,118}[^\"”`\n\s])[\"”`]")


def _holds_sample(pasted: str, key: str) -> bool:
    """Whether the squashed paste holds a page's squashed sample, its numbers whole: the
    sample "#new-seq: 1" is not in a healthy "#new-seq: 12" line (review)."""
    at = pasted.find(key)
    while at >= 0:
        end = at + len(key)
        if not (key[-1].isdigit() and end < len(pasted) and pasted[end].isdigit()) \
                and not (key[0].isdigit() and at > 0 and pasted[at - 1].isdigit()):
            return True
        at = pasted.find(key, at + 1)
    return False


_COMMAND_SAMPLE = re.compile(r"(?:sudo\s+)?(?:kubectl|vllm|python3?|docker|pip3?|helm|curl|export|git|bash|sh|cd|nvidia-smi|"
                             r"systemctl|ray|sglang|lmdeploy|gwctl|\./)\b|.*\s--?[a-z]")


# The message a heading reports, after its cue and colon: "执行run.sh时报错：Illegal instruction
# (core dumped)，或OCR服务无法启动", "Startup fails with error: …". Alternatives ("，或", "; or")
# are each a message.
_HEADING_MESSAGE = re.compile(r"(?:报错|错误|提示|显示|出现|失败|异常|error|errors|fails? with|failed with|exception)\s*[：:]\s*(.+)", re.I)
_ALTERNATIVES = re.compile(r"\s*(?:，\s*或者?|，|；|;|\bor\b(?=\s*['\"“`]))\s*")
# What makes a heading's piece a message a program printed, not a topic ("Common errors: GPU and
# drivers", 如何开启 “Prefix Caching”, "系统提示：You are a helpful assistant"): a colon, a
# code-like word (an error class, a path, a name with _ . / or digits), or an error's words.
_MESSAGE_LIKE = re.compile(r":|\b[A-Za-z]*(?:Error|Exception)\b|\w[_/]\w|\w\.\w|\d"
                           r"|\b(?:not found|no such|denied|refused|failed|failure|cannot|can't|could not|couldn't|unable"
                           r"|invalid|illegal|timed out|timeout|killed|dumped|unsupported|not supported|out of memory"
                           r"|bad|fatal|abort(?:ed)?|panic|segmentation|unknown|unexpected|missing|exceeds?|exceeded)\b", re.I)
MAX_HEADING_SCAN = 8000  # characters of a question read for headings' messages


def heading_samples(heading: str) -> list[str]:
    """The log messages a section's heading quotes: its `…` and "…" pieces, and what follows
    an error cue and a colon. A FAQ page names its error in the heading and explains it
    below ("## 在windows上执行bash run.sh时报错：/bin/bash^M: bad interpreter …，或'\\r':
    command not found"), so a pasted copy of that line never met the body's words: the
    pasted `$'\\r': command not found` was answered from another question's section (a team's
    Chinese FAQ, new trees)."""
    pieces = [m.group(1) for m in _QUOTED_SAMPLE.finditer(heading)]
    cued = _HEADING_MESSAGE.search(heading)
    if cued:
        pieces += [p.strip(" '\"“”`。.?？") for p in _ALTERNATIVES.split(cued.group(1))]
    return [p for p in dict.fromkeys(pieces) if re.search(r"[A-Za-z]", p) and _MESSAGE_LIKE.search(p)]


_FENCE_OPEN = re.compile(r"^\s*(```|~~~)\s*(\w*)")
_SAMPLE_BLOCKS = frozenset({"", "text", "txt", "log", "logs", "console", "plaintext", "output", "error"})
# A page's stand-in for what varies in a message: <path>, {model}, [name], "...", "…", XXX.
_PLACEHOLDER = re.compile(r"<[^<>\s]{1,40}>|\{[^{}\s]{1,40}\}|\[[a-z_ -]{1,30}\]|\.{3}|…|\bX{3,}\b")
MIN_SAMPLE_PIECE = 12  # squashed characters of a sample's longest literal piece: "error: <x>" names nothing


def _fenced_samples(index: KBIndex) -> dict[int, list[tuple[str, tuple[str, ...]]]]:
    """Chunk number → the message lines of its plain code blocks (``` text, log, console or
    no language), with their squashed literal pieces between placeholders; per index. Only
    lines that say an error (`_ERROR_WORDS`), not commands, settings, JSON or comments, and
    only blocks of a few such lines (MAX_BLOCK_SAMPLES): a long block is a log or a listing,
    not a page's messages."""
    def build() -> dict[int, list[tuple[str, tuple[str, ...]]]]:
        from .cleaning import PROGRAM_SAYS  # a program's own message: "docker: Error response from daemon"

        out: dict[int, list[tuple[str, tuple[str, ...]]]] = {}
        for n, chunk in enumerate(index.chunks):
            if "```" not in chunk.text and "~~~" not in chunk.text:
                continue
            block: list[str] | None = None
            for line in chunk.text.split("\n"):
                fence = _FENCE_OPEN.match(line)
                if fence and block is None:
                    block = [] if fence.group(2).lower() in _SAMPLE_BLOCKS else None
                    if block is None:
                        block = ["\0"]  # another language's block: skipped to its end
                    continue
                if fence:
                    if block and block[0] != "\0" and len(block) <= MAX_BLOCK_SAMPLES:
                        for sample in block:
                            pieces = tuple(squash(p) for p in _PLACEHOLDER.split(sample) if squash(p))
                            if pieces and max(map(len, pieces)) >= MIN_SAMPLE_PIECE and sum(map(len, pieces)) >= MIN_SAMPLE_TEXT:
                                out.setdefault(n, []).append((sample, pieces))
                    block = None
                    continue
                if block is not None and block[:1] != ["\0"] and (text := _SAMPLE_TAG.sub("", line.strip())):
                    if len(text) <= 160 and _ERROR_WORDS.search(text) and not _NOT_A_MESSAGE.match(_PLACEHOLDER_START.sub("x", text)) \
                            and (PROGRAM_SAYS.match(text) or not _COMMAND_SAMPLE.match(text)):
                        block.append(text)
        return out

    return derived(index, "_fenced_samples", build)


MAX_BLOCK_SAMPLES = 6
# What an error message says ("does not exist", "is required", "failed to …"): a block's
# settings, JSON and output rows say none of it.
_ERROR_WORDS = re.compile(r"\b[A-Za-z]*(?:Error|Exception)\b|\b(?:not found|no such|denied|refused|failed|failure|cannot|can't"
                          r"|could not|couldn't|unable|invalid|illegal|timed out|timeout|killed|unsupported|not supported"
                          r"|out of memory|fatal|abort(?:ed)?|panic|segmentation|unexpected|missing|exceed(?:s|ed)?"
                          r"|does not exist|doesn't exist|is required|are required|not allowed|forbidden|unauthori[sz]ed)\b", re.I)
MIN_SAMPLE_TEXT = 20  # squashed literal characters in all: "<x> connection refused <y>" is any refused connection
_SAMPLE_TAG = re.compile(r"^\[[\w.:-]{1,20}\]:?\s+")  # "[rank0]: RuntimeError: …": which process printed it
_PLACEHOLDER_START = re.compile(r"^(?:<[^<>\s]{1,40}>|\{[^{}\s]{1,40}\})")  # "{model} is not supported on <platform>"
_NOT_A_MESSAGE = re.compile(r"^.*(?:;|\{|\s#\s.*)$|^\s*(?:[\"'{}\[\]#]|//|-{1,2}\w|\w[\w.-]*\s*[=:]\s*\S*\s*$|\w[\w.]*\s*=)")  # JSON, comments, flags, settings


def quoted_sample_holds(squashed: str, sample: str) -> bool:
    """Whether a squashed line holds a page's quoted sample, its placeholders filled in."""
    pieces = tuple(squash(p) for p in _PLACEHOLDER.split(sample) if squash(p))
    return bool(pieces) and max(map(len, pieces)) >= MIN_SAMPLE_PIECE and _holds_pieces(squashed, pieces)


def _holds_pieces(text: str, pieces: tuple[str, ...]) -> bool:
    """Whether squashed `text` holds a sample's literal pieces in order (what a placeholder
    stands for may be anything between them)."""
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _quoted_samples(index: KBIndex) -> dict[int, list[tuple[str, str]]]:
    """Chunk number → the log samples its text quotes, with their squashed keys, per index."""
    def build() -> dict[int, list[tuple[str, str]]]:
        out: dict[int, list[tuple[str, str]]] = {}
        for n, chunk in enumerate(index.chunks):
            for m in _QUOTED_SAMPLE.finditer(chunk.text):
                if len(key := _sample_key(m.group(1))) >= 12:
                    out.setdefault(n, []).append((m.group(1), key))
        return out

    return derived(index, "_quoted_samples", build)


def _sample_key(sample: str) -> str:
    """A sample's squashed key, or "" for what is no log line: a word alone, a command."""
    if (" " not in sample and ":" not in sample) or _COMMAND_SAMPLE.match(sample):
        return ""
    return squash(sample)


def titled_samples(index: KBIndex) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(doc id, heading path) → the messages its headings under the page title name (a
    "原因" under the error's own heading too), with their squashed keys; per index, read
    once per distinct heading path rather than per chunk."""
    def build() -> dict[tuple[str, str], list[tuple[str, str]]]:
        out: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for chunk in index.chunks:
            if (chunk.doc_id, chunk.title) in out:
                continue
            found = [(sample, key) for heading in chunk.title.split(" > ")[1:] for sample in heading_samples(heading)
                     if len(key := _sample_key(sample)) >= 12]
            out[(chunk.doc_id, chunk.title)] = list(dict.fromkeys(found))
        return {k: v for k, v in out.items() if v}

    return derived(index, "_titled_samples", build)


def _quoting_chunk_first(match: ArticleMatch) -> None:
    """The chunk of a passage that quotes the pasted line leads it (and is cited): `ask --log`
    with SGLang's "token usage: 0.99" lines found the handbook part whose first alert quotes
    them, and cited its second, which shared more words with "What does this log show is
    wrong?" (trial)."""
    if not match.quotes_the_paste:
        return
    keys = [squash(s) for s in match.signatures]
    at = next((i for i, c in enumerate(match.chunks) if any(k in squash(c.chunk.text) for k in keys)), 0)
    if at:
        match.chunks.insert(0, match.chunks.pop(at))


# A log line the asker says is not there: "日志里没有 Waiting for free blocks", "there is no
# 'Waiting for free blocks' in the log" scored that article's signature at confidence 0.98 (trial).
# The clause after the cue is left out, to its punctuation. Only a clause that says a line is not
# seen: "没有成功" and "是不是 KV cache 不够？" negate no log line (review), and a bare "no" is none:
# "No available shared memory broadcast block found" is a signature itself.
_NEGATED_CLAUSE = re.compile(r"(?:(?:日志|log|输出|里面|里)(?:也|都|并|根本|从来|压根|一直)?(?:没有|没)|没看到|没看见|没出现|没发现|没见到|没打印|没有看到|没有出现|没有打印)"
                             r"\s*(?:(?!但|却|可是|而是|\bbut\b)[^，,。;；\n？?：:!！]){0,120}"
                             # 没有 right before a log line's own words, to the next Chinese word: "没有 free_list_len 日志",
                             # "从来没有 free_list_len: 0" (trial); not "一直没 response 日志里一直刷 Waiting for …" (review)
                             r"|(?<![有是])(?:从来|根本|压根|并|也|都)?没有?\s*[A-Za-z_][^\u4e00-\u9fff，,。;；\n？?!！]{0,80}"
                             r"|(?<![\w-])(?:there (?:is|are|was|were) no|there's no|(?:do|did)(?:n't| not) see|never see|not seeing"
                             r"|no sign of)\b(?:(?!\bbut\b)[^,;\n?:!]){0,120}"
                             # "no free_list_len lines", "zero num_blocks warnings": a log line's name said absent (trial 4)
                             r"|(?<![\w-])(?:no|zero|not a single|never any)\s+(?=[`'\"]?[A-Za-z]+_[A-Za-z_]+)(?:(?!\bbut\b)[^,;\n?:!]){0,80}",
                             re.I)


# A word "rare" in a tree: in at most this share of its documents (or three of them). A name
# with dashes or underscores (a flag, an env var: `xinference-model-src`) is one however
# many pages repeat it.
RARE_SHARE = 0.05
_IDENTIFIER_TERM = re.compile(r"\w[-_]\w.*[-_]|\w{3,}[-_]\w{3,}")


def unanchored(index: KBIndex, top: ArticleMatch | None, terms: set[str], passage_terms: dict) -> bool:
    """Whether the best match is a passage of an English-only page that holds none of the
    question's rare Latin words (a flag, a command, a model, or a glossary translation of its
    Chinese). Chinese prose alone then picked a page by a loan word or a model name, as sure:
    "xinference 管理员密码忘了，有命令行能重置吗" got the code walkthrough (trial on team trees).
    On the dev trees, of the Chinese questions answered as sure from an English-only page, 98 of
    185 such unanchored answers were out of scope or another file, against 49 of 200 anchored.
    A passage that quotes the very message the question pastes ("启动时报错 milvus configuration
    is required for Milvus cache backend", a page's listed error) is anchored by it, however
    common its words are in the tree (newcomer, semantic-router docs)."""
    if top is None or not top.passage or not top.other_lang_only or top.signatures:
        return False
    limit = max(3, RARE_SHARE * len(index.terms))
    rare = {t for t in terms if t.isascii() and len(t) >= 3 and 0 < index.doc_freq.get(t, 0)
            and (index.doc_freq[t] <= limit or _IDENTIFIER_TERM.search(t))}
    said = passage_terms.get((top.doc_id, top.passage))
    if said is None:
        said = set(index.tokenizer(" ".join(f"{c.chunk.title} {c.chunk.text}" for c in top.chunks)))
    return not rare & said


def denied_signatures(index: KBIndex, question: str, hits: dict[str, list[str]] | None = None) -> set[str]:
    """The articles one of whose log lines the question names only to say it is absent ("日志里
    从来没有 free_list_len: 0，但跑几个小时就 OOM"): the asker has ruled that article's case out.
    `hits`: `signature_hits` of the question, when the caller has them already."""
    negated = [m.group(0) for m in _NEGATED_CLAUSE.finditer(question)]
    if not negated:
        return set()
    if hits is None:
        hits = signature_hits(index, question)
    out = set(signature_hits(index, question, keep_negated=True)) - set(hits)
    # Or the line's own name alone, said absent and named nowhere else: "日志里没有 free_list_len 日志" (review).
    rest = _NEGATED_CLAUSE.sub(" ", question)
    for meta in index.docs.values():
        for sig in meta.signatures:
            names = [n for n in _SIGNATURE_NAME.findall(sig) if "_" in n]
            if any(n in clause and n not in rest and _ABOUT_THE_LOG.search(clause) for n in names for clause in negated):
                out.add(meta.id)
    return out


_SIGNATURE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{7,}")
# A clause about the log, not about a setting of the same name ("没有 max_num_batched_tokens 这个参数").
_ABOUT_THE_LOG = re.compile(r"日志|log|打印|输出|报|\blines?\b|\bmessages?\b|\bwarnings?\b|\bentries\b", re.I)


def signature_hits(index: KBIndex, question: str, keep_negated: bool = False) -> dict[str, list[str]]:
    """Article id → signatures found verbatim (whitespace- and width-insensitive). A signature
    of one word is found as written: squashed, Paddle's "Out of memory error on GPU 0" was
    torch's OutOfMemoryError, and a FastDeploy question got the vLLM OOM article (trial).
    One the question says is absent is no hit (`_NEGATED_CLAUSE`)."""
    if not keep_negated:
        question = _NEGATED_CLAUSE.sub(" ", question)
    squashed = squash(question)
    spaced = re.sub(r"\s+", " ", normalize(question))
    hits: dict[str, list[str]] = {}
    for meta in index.docs.values():
        for sig in meta.signatures:
            s = squash(sig)
            found = s in squashed if any(ch.isspace() for ch in sig.strip()) else s in spaced
            if len(s) >= 6 and found and sig not in hits.get(meta.id, []):
                hits.setdefault(meta.id, []).append(sig)
    return hits


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{2,30}")


_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)


def unknown_names(index: KBIndex, query: str, lang: str) -> list[str]:
    """Names of things the KB never mentions: "PostgreSQL", "Kafka", "Grafana". In an English
    question those are the CamelCase, ALL-CAPS or capitalised words inside a sentence; in a
    Chinese one every English word is such a name. Ordinary English words the KB happens not
    to use ("flight", "sentence") are not evidence of another subject."""
    from .scope import _drop_model_ids

    text = _drop_model_ids(_URL.sub(" ", query))  # "%2Fvar%2Frun" in a socket URL named "Fvar"
    names: list[str] = []
    for m in _NAME.finditer(text):
        word = m.group(0)
        if text[text.rfind(" ", 0, m.start()) + 1:m.start()].lstrip("`'\"(（").startswith("-"):
            continue  # part of a flag (--metrics-port): settings are judged by scope.unknown_parameters
        line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.end()) % (len(text) + 1)]
        # In a Chinese question an English line is a pasted error ("Got permission denied
        # while trying to connect…"): its ordinary words are no names there either.
        if lang != "zh" or not any(is_cjk(ch) for ch in line):
            before = text[max(0, m.start() - 2):m.start()]
            sentence_start = m.start() == 0 or before.rstrip().endswith((".", "?", "!", ":", "\n")) or before.endswith("\n")
            named = (word.isupper() and len(word) >= 3) or any(ch.isupper() for ch in word[1:]) or (word[0].isupper() and not sentence_start)
            if not named:
                continue
        low = word.lower()
        if low in MODEL_FAMILIES or any(ch.isdigit() for ch in word) or low in names or low in _judged_elsewhere():
            continue
        tokens = index.tokenizer(word)
        if not tokens:
            continue  # a stop word, not a name
        known = any(index.doc_freq.get(t) for t in tokens)
        if not known:
            names.append(low)
    return names


# A numbered code whose number says what went wrong: "Xid 43" (an application fault) is no
# "Xid 48" (a double-bit ECC error), yet a runbook on Xid 48 answered it as sure, with its
# drain-the-node fix (trial). A code the KB numbers elsewhere but never with this number is
# unknown to it, like a name. Only Xid: an exit code or an errno is as often a side line of a
# pasted log ("exited with exit code 1" under a CUDA OOM) as the fault asked about. Only where
# the KB's titles number them (a section per Xid): docs that show one Xid as an example of all
# answer another ("XidCriticalError: Xid=94 … marking device as unhealthy", GPU Operator's
# troubleshooting page, was refused).
_CODE = re.compile(r"\b(xid)\s*[:#=]?\s*(\d{1,4})\b", re.I)


def unknown_codes(index: KBIndex, text: str) -> list[str]:
    """The Xid codes of `text` ("Xid 43") that the KB's titles write with other numbers only
    ("… (Xid 48)", "… (Xid 63 / 64)"); where no title numbers an Xid, the rest of retrieval judges."""
    from .scope import kb_text

    out: list[str] = []
    body = None
    for m in _CODE.finditer(text):
        kind, number = m.group(1).lower(), m.group(2)
        if body is None:
            # Numbered in titles only: runbooks with a section per Xid answer by number; a page
            # that shows "Xid=79" as an example of any Xid error answers Xid 94 as well.
            body = kb_text(index)[0]
        spaced = re.escape(kind).replace("\\ ", r"\s*")
        numbered = re.compile(rf"{spaced}\s*[:#=]?\s*(?:\d{{1,4}}\s*(?:/|,|、|or|and|或|和)\s*)*(\d{{1,4}})\b")
        seen = {n for found in numbered.finditer(body) for n in re.findall(r"\d{1,4}", found.group(0))}
        said = f"{m.group(1)} {number}"  # as the asker wrote it: "Xid 43"
        if seen and number not in seen and said.lower() not in {o.lower() for o in out}:
            out.append(said)
    return out


# Units people write after a number ("24 MiB", "剩余 512 MiB"): no subject.
_UNITS = frozenset({"kib", "mib", "gib", "tib", "kb", "mb", "gb", "tb", "ms"})


@functools.lru_cache(maxsize=1)
def _judged_elsewhere() -> frozenset[str]:
    """Words that are never unknown names: serving products, which the product rule judges
    (named alone, a product the KB never mentions is refused as such; named with vLLM, as in
    "xinference 里的 vllm 后端 OOM", the question is vLLM's), and units."""
    from .scope import PRODUCTS

    return _UNITS | frozenset(n for names in PRODUCTS.values() for n in names if n.isascii() and n.isalnum())


def kb_keyword_coverage(query_terms: set[str], doc_freq: dict[str, int], n_articles: int,
                        passing: set[str] = frozenset()) -> float:
    """IDF-weighted share of the question's keywords that occur anywhere in the KB (and not
    only in a passing remark on a subject it does not cover): low when the question is
    mostly about words this KB has never seen."""
    return keyword_coverage(query_terms, {t for t in query_terms if doc_freq.get(t, 0) > 0 and t not in passing},
                            doc_freq, n_articles)


def _log_engine_first(articles: list, by_log: bool) -> list:
    """When a log named its engine and the question none (`by_log`), that engine's articles (or
    neutral ones) come before another engine's, whatever the scores: a vLLM log with "why did
    the server crash?" was answered, sure, from FastDeploy's start-up OOM article (trial)."""
    return sorted(articles, key=lambda a: a.product_conflict) if by_log else articles


def search(
    index: KBIndex,
    embedder,
    question: str,
    params: RetrievalParams,
    *,
    query_vector: np.ndarray | None = None,
    mode: str = "hybrid",
    platform: str = "",
    product: str = "",
) -> Retrieval:
    """Rank articles for a question; decide whether the KB answers it (see refusal.py).

    The question is read in two ways: retrieval sees its prose and error lines
    (cleaning.py), while log signatures are matched on the whole text, pasted logs
    included. Articles about another product than the one the question names, or for
    other hardware or versions, are demoted by `mismatch_penalty`. `platform`: the hardware
    family a log beside the question says the server runs on (tools/logs.PLATFORMS);
    `product`: the engine it comes from (scope.log_product), for ranking only."""
    dense_weight, bm25_weight, signature_boost = params.dense_weight, params.bm25_weight, params.signature_boost
    coverage_weight, mismatch_penalty, limit = params.coverage_weight, params.mismatch_penalty, params.limit
    from .scope import (asked_unknown_parameters, bare_unknown_error, detect, foreign_products, hardware_mismatch, on_platform,
                        on_product, product_mismatch, unknown_parameters, unseen_entities, unworded_error, version_mismatch)

    timings: dict[str, float] = {}
    lang = detect_lang(question)
    n = len(index.chunks)
    scope = on_platform(detect(question), platform)
    if n == 0:
        return Retrieval(question, lang, mode, [], False, timings, scope)

    t0 = time.perf_counter()
    query = query_text(question)
    qvec = query_vector if query_vector is not None else embedder.embed_queries([query])
    timings["embed"] = (time.perf_counter() - t0) * 1000
    t1 = time.perf_counter()
    dense = index.dense_scores(qvec[0], params.faiss_min_vectors)

    tokens = query_tokens(index, query)
    keyword_raw, cross_terms = cross_keyword_scores(index, query, lang, index.keyword.scores(tokens), tokens)
    top_kw = float(keyword_raw.max()) if n else 0.0
    keyword = keyword_raw / top_kw if top_kw > 0 else keyword_raw
    dscaled = dense_scale(dense, lang)
    other = _other_lang_mask(index, lang)
    if other.any():
        # A page with no version in the question's language on the shifted range; the other
        # half of a translated pair on the range it was tuned with: it only repeats its twin,
        # and on its twin's footing it counted as that article's second chunk.
        dscaled = np.where(twinless_mask(index, lang), dense_scale(dense, lang, cross=True),
                           np.where(other, dense_scale(dense, "twin"), dscaled))

    if mode == "dense":
        blended = dscaled
    elif mode == "bm25":
        blended = keyword
    else:
        blended = dense_weight * dscaled + bm25_weight * keyword

    sigs = signature_hits(index, question)
    query_terms = set(tokens)
    unseen = unseen_entities(scope, index) if not names_a_heading(index, query) else []
    # A subject the KB does not cover (covers(): no heading names it, at most one passing
    # remark does) matches only that remark: its words are no evidence that an article
    # answers. "How to enable speculative decoding?" matched the logprobs article's one
    # aside about it on every keyword and was answered from it.
    passing = {t for e in scope.entities if e in unseen for t in index.tokenizer(scope.entity_terms.get(e, ""))}
    # Articles written for the KB (front matter with an id) are answered as a whole; any
    # other document is a set of passages, each ranked and cited on its own, so a long
    # wiki page with twenty topics does not answer every question with all of them.
    unstructured = {m.id for m in index.docs.values() if not getattr(m, "structured", True)}
    by_article: dict[tuple[str, str], ArticleMatch] = {}
    order = np.argsort(-blended)
    for i in order:
        chunk = index.chunks[int(i)]
        passage = section_key(chunk.title) if chunk.doc_id in unstructured else ""
        key = (chunk.doc_id, passage)
        match = by_article.get(key)
        if match is None:
            match = by_article[key] = ArticleMatch(chunk.doc_id, 0.0, 0.0, passage=passage)
        if len(match.chunks) < CHUNKS_PER_MATCH:
            match.chunks.append(ScoredChunk(chunk, float(blended[i]), float(dense[i]), float(keyword[i])))

    article_terms = index.terms
    metas: dict[str, object] = {}
    for key, meta in index.docs.items():
        metas.setdefault(meta.id, meta)
        if key.endswith(":" + lang):
            metas[meta.id] = meta
    kb_products = frozenset(m.product for m in index.docs.values())
    ranking_scope = on_product(scope, product, kb_products)
    overview_ids = {m.id for m in index.docs.values() if "summary" in m.tags}
    # A passage's keyword coverage is judged on its own words, not its whole file's; only
    # passages that can still make the top of the list are tokenised.
    quoted, sampled = pasted_in_passages(index, question, unstructured)
    passage_pool = sorted((m for m in by_article.values() if m.passage), key=lambda m: -m.chunks[0].score)[:15]
    passage_terms = {(m.doc_id, m.passage): set(index.tokenizer(" ".join(f"{c.chunk.title} {c.chunk.text}" for c in m.chunks)))
                     for m in passage_pool}
    for match in by_article.values():
        best = match.chunks[0]
        second = match.chunks[1].score if len(match.chunks) > 1 else 0.0
        match.signatures = sigs.get(match.doc_id, []) or quoted.get((match.doc_id, match.passage), [])
        match.quotes_the_paste = (match.doc_id, match.passage) in sampled
        _quoting_chunk_first(match)  # scored as it matched (`best`), cited by what it quotes
        boost = signature_boost if match.signatures else 0.0
        terms = passage_terms.get((match.doc_id, match.passage), set()) if match.passage else article_terms.get(match.doc_id, set())
        twinless = cross_terms is not None and f"{match.doc_id}:{lang}" not in index.docs
        coverage = keyword_coverage(cross_terms if twinless else query_terms, terms - passing, index.doc_freq, len(article_terms))
        match.coverage = coverage
        match.translated = twinless
        match.score = best.score + SECOND_CHUNK_WEIGHT * second + boost + (coverage_weight * coverage if mode == "hybrid" else 0.0)
        if match.doc_id in overview_ids:
            match.score *= OVERVIEW_FACTOR
        meta = metas.get(match.doc_id)
        if meta is not None:
            match.product = meta.product
            match.product_conflict = product_mismatch(ranking_scope, meta.product, kb_products)
            match.hardware_conflict = tuple(sorted(hardware_mismatch(scope, meta)))
            match.version_conflict = version_mismatch(scope, meta)
            conflicts = match.product_conflict + bool(match.hardware_conflict) + match.version_conflict
            match.score -= mismatch_penalty * conflicts
        match.other_lang_only = f"{match.doc_id}:{lang}" not in index.docs
        _set_grounding(match, lang)
        if not match.other_lang_only:
            match.relevance = 0.5 * match.dense + 0.5 * coverage + boost
        else:
            # Written only in the other language: shared keywords cannot be expected, so
            # the multilingual dense score is the only evidence.
            match.relevance = match.dense + boost

    twin_grounding(index, list(by_article.values()), lang)
    demote_ruled_out(question, list(by_article.values()), metas)
    demote_memoryless(index, question, list(by_article.values()))
    demote_other_gpu_count(question, list(by_article.values()), metas)
    favour_named_headings(query, list(by_article.values()))
    apply_page_prior(index, qvec[0], list(by_article.values()), mode, question, lang)
    favour_named_paths(question, list(by_article.values()))
    articles = _log_engine_first(team_passage_first(sorted(by_article.values(), key=lambda a: -a.score)[:limit]),
                                 ranking_scope is not scope)
    timings["search"] = (time.perf_counter() - t1) * 1000
    result = Retrieval(question, lang, mode, articles, False, timings, scope)
    result.unknown_codes = unknown_codes(index, _URL.sub(" ", query))
    result.unseen = unseen + [c for c in result.unknown_codes if c not in unseen]
    result.query_vector = qvec[0]
    result.embedder = str(getattr(embedder, "name", ""))
    result.foreign_products = sorted(foreign_products(scope, index))
    result.kb_coverage = kb_keyword_coverage(query_terms, index.doc_freq, len(article_terms), passing)
    result.n_terms = len(query_terms)
    result.unknown_terms = unknown_names(index, query, lang)
    result.unknown_params = unknown_parameters(question, index)
    fields = unknown_parameters(question, index, fields=True)
    result.asked_unknown = asked_unknown_parameters(question, [*result.unknown_params, *fields])
    result.unknown_error = not sigs and bare_unknown_error(question, index)
    result.unworded_error = not sigs and unworded_error(question, index)
    from .questions import quiet_stats

    result.quiet_stats = quiet_stats(question)
    result.unanchored = lang == "zh" and unanchored(index, articles[0] if articles else None, query_terms | (cross_terms or set()),
                                                    passage_terms)
    result.denied_signatures = denied_signatures(index, question, sigs)
    if "--" in question or "=" in question:
        from .cleaning import split_question

        result.flags = split_question(question).flags
    from .refusal import decide

    result.grounded, result.confidence, result.symptom_covered = decide(result, params.min_relevance)
    return result
