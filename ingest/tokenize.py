"""Tokens for the keyword (BM25) index, shared by ingest and query time.

Chinese vocabulary is discovered with jieba at ingest and written as a small dictionary;
text and questions are then segmented with that dictionary (see `Tokenizer`). Loading
jieba's full dictionary costs ~0.6 s per process, the KB one a few ms, and words outside
the KB can never match anyway. Long Chinese words also yield their
character bigrams so "显存不足" still meets "显存不够".

ASCII identifiers are kept whole and split into parts, with `_` and `-` unified, so
`max_num_seqs`, `max-num-seqs` and "max num seqs" all meet.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from pathlib import Path
from typing import Collection

_ASCII_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*[A-Za-z0-9]|[A-Za-z0-9]")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")  # CamelCase, snake_case, digits

EN_STOP = frozenset(
    "a an the and or of to in on at for with is are was were be been being it its this that these those "
    "i my me we our you your he she they them do does did doing done can could should would will shall may "
    "might must how what why when where which who whom whose there here as by from into after before if "
    "then than so not no but also just get gets got have has had am any some all very too up down "
    "about over again now still even ever always please keep keeps kept make makes made go goes going gone come comes "
    "give gives gave take takes took use uses used using try tries tried see look looks seem become put let say says "
    "said mean means meant happen happens happened thanks thank help anyone someone "
    "everyone everybody something anything else seem seems seemed really actually maybe like want need "
    "know tell way thing things lot lots much many more most one ones way ok okay hi hello "
    "because since while during without within whether either neither both each every other "
    "whats its im dont doesnt cant wont isnt".split()
)
ZH_STOP = frozenset(
    "的 了 是 在 和 与 或 就 都 也 还 吗 呢 吧 啊 呀 么 嘛 什么 怎么 怎么办 怎样 怎么样 为什么 为啥 如何 "
    "哪些 哪个 哪里 哪儿 多少 是否 是不是 能不能 会不会 要不要 有没有 一个 一下 一些 这个 那个 这些 "
    "那些 这样 那样 这种 那种 我 你 他 她 它 我们 你们 他们 有 没有 会 要 能 可以 应该 需要 想 请问 "
    "请 帮 帮忙 之后 以后 时候 时 后 把 被 让 给 对 中 里 上 下 现在 今天 总是 经常 其实 但是 "
    "然后 所以 因为 如果 而且 还是 或者 已经 就是 的话 一直在 "
    # Fillers, hedges and courtesies ("到底", "按理说", "感觉", "大佬们"): keyword coverage
    # weighs a question's words the KB has never seen the most, as signs of a subject it
    # lacks, and these say nothing about the subject ("服务到底能扛多少并发" was refused).
    "到底 究竟 明明 按理 按理说 另外 整个 大概 大约 感觉 好像 似乎 估计 也许 或许 这么 那么 一看 咋 咋办 啥 "
    "怎么回事 回事 之类 而已 比如 例如 各位 大佬 老师 谢谢 感谢 麻烦 求助 请教 问下 问一下".split()
)


def split_cjk(text: str) -> tuple[str, list[str]]:
    """(the text with Chinese runs blanked out, the Chinese runs), in one pass."""
    from oncall_common.lang import is_cjk

    rest: list[str] = []
    runs: list[str] = []
    current: list[str] = []
    for ch in text:
        if is_cjk(ch):
            current.append(ch)
            continue
        if current:
            runs.append("".join(current))
            current = []
            rest.append(" ")
        rest.append(ch)
    if current:
        runs.append("".join(current))
    return "".join(rest), runs


def normalize(text: str) -> str:
    """NFKC folds full-width punctuation (the FastDeploy log's '，') into ASCII."""
    return unicodedata.normalize("NFKC", text).lower()


_STEMMER = None


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """Snowball English stemming, so "hangs", "hanging" and "hung up" meet "hang". Cached:
    snowball is pure Python and a KB says the same words again and again (tokenizing the
    bundled KB took 0.58 s uncached, 0.11 s cached; a re-ingest tokenizes every chunk)."""
    global _STEMMER
    if not word.isalpha():
        return word
    if _STEMMER is None:
        from snowballstemmer.english_stemmer import EnglishStemmer

        _STEMMER = EnglishStemmer()
    return _STEMMER.stemWord(word)


def _is_subsequence(short: str, long: str) -> bool:
    """Whether `short` is `long` with some letters left out."""
    it = iter(long)
    return all(ch in it for ch in short)


# How close a typo is, best first: the same word but for a hyphen, two neighbours swapped,
# letters left out. None: no typo of it.
_SAME, _SWAPPED, _DROPPED = 0, 1, 2


def typo_kind(token: str, term: str, limit: int) -> int | None:
    """A slip of the fingers, not another word: letters left out ("stuk", "eror",
    "huggingfc"), two neighbours swapped ("retrun", "donwload") or a hyphen dropped or
    added ("log-prob", "cudagraph"). A letter changed or added is how one real word
    becomes another ("rocm"/"room", "seek"/"seed", "metal"/"meta", "content"/"context"),
    so it is never corrected: measured on the real questions, those were most of the
    corrections made, and each pulled in an unrelated article's words. A swap is taken only
    in words of six letters or more: in shorter ones it makes words too ("there"/"three",
    the stem "entri"/"entir")."""
    a, b = token.replace("-", ""), term.replace("-", "")
    if not a or not b:
        return None
    if a == b:
        return _SAME
    if 0 < len(b) - len(a) <= limit:
        return _DROPPED if _is_subsequence(a, b) else None
    if len(a) == len(b) and len(a) >= 6:
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]:
            return _SWAPPED
    return None


def _swap_stemmed(token: str, vocabulary: Collection[str]) -> str | None:
    """A swap that only shows before stemming: "enabel" is "enable", whose stem "enabl" is
    one letter shorter than the typo."""
    for i in range(len(token) - 1):
        word = token[:i] + token[i + 1] + token[i] + token[i + 2:]
        stemmed = stem(word)
        # Only an inflection may go ("enable", "compiled", "memory" → "memori"): stemming the
        # swapped "distli" took "li" off and made "distil" the KB's "dist".
        regular = word == stemmed or word in (stemmed + "e", stemmed + "ed", stemmed + "es", stemmed + "s", stemmed + "ing",
                                              stemmed[:-1] + "y")
        if stemmed != token and regular and stemmed in vocabulary:
            return stemmed
    return None


def correct_typos(tokens: list[str], vocabulary: Collection[str]) -> list[str]:
    """Replace an unknown ASCII token by the KB term it is a typo of (see typo_kind; up to
    two letters left out in long words) that starts with the same two letters, the closest
    kind of typo first, then the shortest term. Only tokens the KB has never seen are
    touched, and never ones holding digits: "0.8.3" is another version, not a typo of
    "0.4.3", and "a10g" another GPU than "a100".

    Terms are grouped by their first two letters once per call and each distinct token is
    looked up once, so an 8 kB question of unknown words costs one pass over the vocabulary,
    not one pass per word."""
    out = []
    by_prefix: dict[str, list[str]] | None = None
    corrected: dict[str, str] = {}
    for token in tokens:
        if token in vocabulary or len(token) < 4 or not token.isascii() or any(ch.isdigit() for ch in token):
            out.append(token)
            continue
        if token not in corrected:
            if by_prefix is None:
                by_prefix = {}
                for term in vocabulary:
                    if term.isascii():
                        by_prefix.setdefault(term[:2], []).append(term)
            limit = 2 if len(token) >= 8 else 1
            bare = len(token.replace("-", ""))
            best: tuple[int, int, str] | None = None
            # Typos rarely hit the first two letters; requiring them keeps real words
            # ("speed") from being "corrected" into KB terms ("seed").
            for term in by_prefix.get(token[:2], ()):
                if abs(len(term.replace("-", "")) - bare) > limit:
                    continue
                kind = typo_kind(token, term, limit)
                if kind is not None and (best is None or (kind, len(term), term) < best):
                    best = (kind, len(term), term)
            if best is None and len(token) >= 6:
                swapped = _swap_stemmed(token, vocabulary)
                corrected[token] = swapped or token
            else:
                corrected[token] = best[2] if best else token
        out.append(corrected[token])
    return out


def ascii_tokens(text: str) -> list[str]:
    out: list[str] = []
    for raw in _ASCII_TOKEN.findall(text.replace("'", "")):
        token = raw.replace("_", "-").strip(".-/")
        parts = [p.lower() for p in _PARTS.findall(token)]
        token = token.lower()
        if len(parts) > 1:
            out.append(token)
        for part in parts:
            if part not in EN_STOP and (len(part) > 1 or part.isdigit()):
                out.append(stem(part))
    return out


class Tokenizer:
    """Segments Chinese with the KB dictionary: maximum-probability path over the word DAG.

    This is the dictionary half of jieba's algorithm. jieba itself is only needed at ingest
    to discover the vocabulary; importing it per query would cost ~60 ms (it pulls in
    pkg_resources), more than the whole search. Since a query term can only match KB terms,
    segmenting with the KB's own words loses nothing.
    """

    def __init__(self, dict_path: Path | None = None) -> None:
        self.dict_path = dict_path
        self._freq: dict[str, float] | None = None
        self._max_len = 1

    def _load(self) -> dict[str, float]:
        if self._freq is None:
            freq: dict[str, int] = {}
            if self.dict_path and self.dict_path.exists():
                text = self.dict_path.read_bytes().decode("utf-8", errors="replace")
                for line in text.splitlines():
                    word, _, count = line.rpartition(" ")
                    if word and count.isascii() and count.isdigit():  # a damaged line is dropped, never fatal
                        freq[word] = int(count)
            for word in ZH_STOP:  # always segment function words as words, so they drop out
                if len(word) > 1:
                    freq.setdefault(word, 1000)
            total = float(sum(freq.values()) or 1)
            self._freq = {w: math.log(c / total) for w, c in freq.items()}
            self._single = math.log(1.0 / total)
            self._max_len = max((len(w) for w in freq), default=1)
        return self._freq

    def segment(self, run: str) -> list[str]:
        logp = self._load()
        n = len(run)
        best: list[tuple[float, int]] = [(0.0, 0)] * (n + 1)
        for i in range(n - 1, -1, -1):
            candidates = [(self._single + best[i + 1][0], i + 1)]
            for j in range(i + 2, min(n, i + self._max_len) + 1):
                word = run[i:j]
                if word in logp:
                    candidates.append((logp[word] + best[j][0], j))
            best[i] = max(candidates)
        out, i = [], 0
        while i < n:
            j = best[i][1]
            out.append(run[i:j])
            i = j
        return out

    def chinese_tokens(self, run: str) -> list[str]:
        out: list[str] = []
        words = self.segment(run)
        for k, word in enumerate(words):
            if word in ZH_STOP:
                continue
            if len(word) >= 2:
                out.append(word)
            if len(word) >= 3:
                out.extend(word[i : i + 2] for i in range(len(word) - 1))
            elif len(word) == 1 and k + 1 < len(words) and len(words[k + 1]) == 1 and words[k + 1] not in ZH_STOP:
                out.append(word + words[k + 1])  # two unknown characters in a row: keep the pair
        return out

    def __call__(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text)  # keep case here: CamelCase splits on it
        rest, runs = split_cjk(text)
        tokens = ascii_tokens(rest)
        for run in runs:
            tokens.extend(self.chinese_tokens(run))
        return tokens


RUNS_FILE = "zh.runs.json"


def build_dictionary(texts: list[str], path: Path, previous: Path | None = None) -> None:
    """Write a jieba dictionary with the KB's Chinese vocabulary and jieba's frequencies.

    The words jieba finds in each run of Chinese are kept beside the dictionary
    (RUNS_FILE), with their frequencies: the next build segments only the runs it has not
    seen, and loads jieba (about 1 s of a 2 s re-ingest) only when there are some. Segmenting
    is per run, so the dictionary is the one a build from scratch writes."""
    runs: set[str] = set()
    for text in texts:
        runs.update(split_cjk(normalize(text))[1])
    version = _jieba_version()
    seen, freq = _read_runs(previous, version)
    todo = sorted(r for r in runs if r not in seen)
    if todo:
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)
        full = jieba.Tokenizer()
        full.initialize()
        for run in todo:
            seen[run] = [w for w in full.lcut(run) if len(w) >= 2]
            for w in seen[run]:
                freq[w] = max(full.FREQ.get(w, 0), 3)
    kept = {r: seen[r] for r in sorted(runs)}
    words = sorted({w for ws in kept.values() for w in ws})
    lines = [f"{w} {freq[w]}" for w in words]
    # jieba needs a non-empty dictionary even for an all-English KB.
    path.write_text("\n".join(lines or ["知识库 3"]) + "\n", encoding="utf-8")
    (path.parent / RUNS_FILE).write_text(json.dumps({"jieba": version, "runs": kept, "freq": {w: freq[w] for w in words}},
                                                    ensure_ascii=False), encoding="utf-8")


def _jieba_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jieba")
    except PackageNotFoundError:
        return ""


def _read_runs(previous: Path | None, version: str) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The runs a previous build segmented, if the same jieba did it; else nothing."""
    if previous is None:
        return {}, {}
    try:
        data = json.loads((previous / RUNS_FILE).read_text(encoding="utf-8"))
        if data.get("jieba") != version:
            return {}, {}
        runs = {str(r): [str(w) for w in ws] for r, ws in data["runs"].items()}
        freq = {str(w): int(f) for w, f in data["freq"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, {}
    if any(w not in freq for ws in runs.values() for w in ws):
        return {}, {}
    return runs, freq
