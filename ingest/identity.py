"""Which documents are one article: zh/en twins share an id; any other clash is renamed.

Retrieval merges chunks by document id and answers from the twin in the asker's language,
so the id decides what counts as "the same document":

- A document whose front matter has an `id` keeps it (that is how the bundled KB pairs
  its articles).
- Otherwise zh/en versions of a user doc are paired by the usual path conventions, within
  one source: `zh/x.md` vs `en/x.md`, `docs/zh/x.md` vs `docs/x.md`, `source/x.md` vs
  `source_en/x.md`, `x.zh.md` vs `x.md`, `x_CN.md` vs `x.md`. The pair gets one id; an unpaired document keeps the id of its path.
- An id already taken by another source (an ingested runbook saying `id: vllm-cuda-oom`),
  or by a document of the same language in the same source, is never merged: the newcomer
  is renamed `<id>@<file stem>` and a message says so. Sources are settled in order, so
  the KB directory, listed first, keeps its ids.
- Two sources holding the same relative path get the later one's folder name in front,
  so every chunk cites its own file.
- A translation into a third language (`README_JA.md`, `docs/faq-es.md`, `docs/ko/x.md`)
  beside the English or Chinese file it translates is set aside, and ingest says so (see
  `set_aside_translations`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path, PurePosixPath

from oncall_common.lang import cjk_count, is_cjk

from .documents import Document, _slug, language_text

_LANG_DIRS = {"zh": "zh", "zh-cn": "zh", "zh_cn": "zh", "zh-hans": "zh", "cn": "zh", "chinese": "zh",
              "en": "en", "en-us": "en", "en_us": "en", "english": "en"}
_LANG_SUFFIX = re.compile(r"[._-](zh[-_]?cn|zh[-_]?hans|zh|cn|en[-_]?us|en)$", re.I)


# Folders that keep a page's translations apart from the original: `locales/README.zh-CN.md`
# beside the root README.md (AnythingLLM: its English questions were answered from the Chinese
# README, an unpaired page of its own), `i18n/zh-Hans/docusaurus-plugin-content-docs/current/x.md`
# beside `docs/x.md` (Docusaurus). Only a fallback (`outside_key`): a folder of that name can hold
# pages of its own and their twins (`docs/i18n/setup.md` beside `docs/i18n/setup_zh.md`, review).
_TRANSLATION_DIRS = {"locales", "locale", "i18n", "l10n", "translations", "translation", "languages"}
_DOCUSAURUS = ["docusaurus-plugin-content-docs", "current"]


def _outside(key: str) -> str:
    """A twin key without its translation folders (`locales/readme` → `readme`)."""
    *folders, name = key.split("/")
    out = [f for f in folders if f not in _TRANSLATION_DIRS]
    if len(out) < len(folders):
        for i in range(len(out) - 1):
            if out[i:i + 2] == _DOCUSAURUS:
                out = out[:i] + ["docs"] + out[i + 2:]
                break
    return "/".join(out + [name])


def twin_key(source: str) -> tuple[str, str | None]:
    """(the path without its language marker and suffix, the language the marker names)."""
    path = PurePosixPath(source.replace("\\", "/"))
    hint: str | None = None
    folders = []
    for part in path.parts[:-1]:
        lang = _LANG_DIRS.get(part.lower())
        if lang and hint is None:
            hint = lang
            continue
        marked = _LANG_SUFFIX.search(part) if hint is None else None
        if marked and marked.start() > 0:  # source_en/ beside source/ (Sphinx), docs-zh/ beside docs/
            hint = "en" if marked.group(1).lower().startswith("en") else "zh"
            part = part[: marked.start()]
        folders.append(part)
    stem = path.stem
    match = _LANG_SUFFIX.search(stem)
    if match and match.start() > 0:
        marker = match.group(1).lower()
        hint = hint or ("en" if marker.startswith("en") else "zh")
        stem = stem[: match.start()]
    return "/".join(folders + [stem]).lower(), hint


def outside_key(source: str) -> str | None:
    """The twin key of a language-marked file with its translation folders left out, when
    that differs from its own key (`locales/README.zh-CN.md` → `readme`); else None."""
    key, hint = twin_key(source)
    outside = _outside(key) if hint is not None else key
    return outside if outside != key else None


def pair_twins(docs: list[Document]) -> list[Document]:
    """Give a zh/en pair of user docs (no front-matter id) one id, found by path convention."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, doc in enumerate(docs):
        if not doc.structured:
            groups.setdefault((doc.root, twin_key(doc.source)[0]), []).append(i)
    # A marked file left alone in a translation folder pairs with a lone unmarked file outside it.
    for (root, key), members in list(groups.items()):
        if len(members) != 1 or (outside := outside_key(docs[members[0]].source)) is None:
            continue
        original = groups.get((root, outside))
        if original is not None and len(original) == 1 and twin_key(docs[original[0]].source)[1] is None:
            original.append(members[0])
            del groups[(root, key)]
    out = list(docs)
    for (_, key), members in groups.items():
        langs = [docs[i].lang for i in members]
        if sorted(langs) != ["en", "zh"]:
            langs = _langs_by_path([docs[i].source for i in members])
            if langs is None:
                continue  # alone, or ambiguous (two English files for one Chinese one): leave as is
        shared = _slug(key)
        for i, lang in zip(members, langs):
            out[i] = replace(docs[i], id=shared, lang=lang)
    return out


def _langs_by_path(sources: list[str]) -> list[str] | None:
    """The languages two files' paths give them, when their text could not tell: the Chinese
    twin of a table of model names reads as English, but `zh_cn/` says what it is. The
    unmarked file of a marked pair (`docs/x.md` beside `docs/zh/x.md`) is the other language."""
    if len(sources) != 2:
        return None
    hints = [twin_key(source)[1] for source in sources]
    if hints.count(None) == 1:
        known = next(h for h in hints if h)
        hints = [h or ("en" if known == "zh" else "zh") for h in hints]
    return hints if sorted(h or "" for h in hints) == ["en", "zh"] else None


def settle_ids(docs: list[Document]) -> tuple[list[Document], list[str]]:
    """Unique sources and ids across sources; returns the documents and what was renamed."""
    messages: list[str] = []
    out: list[Document] = []
    seen_sources: dict[str, str] = {}  # source → root
    owners: dict[str, tuple[str, set[str], str]] = {}  # id → (root, languages, source)
    for doc in docs:
        source = doc.source
        if seen_sources.get(source, doc.root) != doc.root:
            folder = Path(doc.root).name if doc.root != doc.path else Path(doc.path).parent.name  # a file given as its own source
            source = f"{folder}/{doc.source}"
            n = 2
            while seen_sources.get(source, doc.root) != doc.root:
                source = f"{folder}-{n}/{doc.source}"
                n += 1
        seen_sources[source] = doc.root
        owner = owners.get(doc.id)
        new_id = doc.id
        if owner is not None and (owner[0] != doc.root or doc.lang in owner[1]):
            if doc.structured:
                base = f"{doc.id}@{_slug(Path(doc.source).stem)}"
            else:
                base = _slug(str(Path(source).with_suffix("")))
            new_id, n = base, 2
            while new_id in owners:
                new_id, n = f"{base}-{n}", n + 1
            messages.append(f"{source}: id '{doc.id}' is already used by {owner[2]}; indexed as '{new_id}'")
        if new_id in owners:
            owners[new_id][1].add(doc.lang)
        else:
            owners[new_id] = (doc.root, {doc.lang}, source)
        out.append(doc if (new_id, source) == (doc.id, doc.source) else replace(doc, id=new_id, source=source))
    return out, messages


# ------------------------------------------------------------------ third-language translations
# Doc trees often carry their pages in five languages: README.md, README_CN.md, README_JA.md,
# README_KO.md, docs/faq-es.md. The assistant answers in Chinese and English, and a Japanese
# page reads as Chinese to it (its kanji) while Korean and Spanish read as English (its
# identifiers and commands), so each copy competed with the page the asker could read: English
# questions about NextChat were answered from README_JA.md and docs/faq-ja.md, Chinese ones
# from README_KO.md (trial: 8 of 37 questions). Such a copy says nothing its original does not,
# so it is set aside, and `assistant ingest` lists it with the file it translates. A page in
# another language with no English or Chinese original stays: it is all the KB has on that.
THIRD_LANGUAGES = {
    "ja": "Japanese", "jp": "Japanese", "ja-jp": "Japanese", "ko": "Korean", "kr": "Korean", "ko-kr": "Korean",
    "es": "Spanish", "es-es": "Spanish", "fr": "French", "fr-fr": "French", "de": "German", "de-de": "German",
    "it": "Italian", "pt": "Portuguese", "pt-br": "Portuguese", "pt-pt": "Portuguese", "ru": "Russian",
    "uk": "Ukrainian", "pl": "Polish", "nl": "Dutch", "tr": "Turkish", "vi": "Vietnamese", "id": "Indonesian",
    "th": "Thai", "ar": "Arabic", "fa": "Persian", "he": "Hebrew", "hi": "Hindi", "bn": "Bengali", "el": "Greek",
    "ta": "Tamil", "te": "Telugu", "mr": "Marathi", "ur": "Urdu", "or": "Odia",
    "zh-tw": "Traditional Chinese", "zh-hk": "Traditional Chinese", "zh-hant": "Traditional Chinese",
    "tzh": "Traditional Chinese",  # not a bare `hk` or `tw`: a region's runbook, which a Chinese reader reads (review)
    # Spelled out, as some trees name them (README.Japanese.md, docs/README.German.md).
    "japanese": "Japanese", "korean": "Korean", "spanish": "Spanish", "french": "French", "german": "German",
    "italian": "Italian", "portuguese": "Portuguese", "russian": "Russian", "vietnamese": "Vietnamese",
    "turkish": "Turkish", "arabic": "Arabic",
}
# A marker is a claim the text must bear out: `failover-hk.md` beside `failover.md` is a runbook
# for the Hong Kong region, `model-id.md` beside `model.md` a page about model ids, and either
# is written in the KB's own language. A copy is one only when its prose is in the language
# its marker names: that language's script, or for Latin-script languages its small words.
_SCRIPTS = {
    "Japanese": r"[\u3040-\u30ff]",  # kana: kanji alone would be Chinese
    "Korean": r"[\uac00-\ud7af]",
    "Traditional Chinese": "[這們個來為與說對時會過還裡後問題開關應體變發設載記憶顯錯誤請將從網檔數據庫務]",
    "Russian": r"[\u0400-\u04ff]", "Ukrainian": r"[\u0400-\u04ff]", "Arabic": r"[\u0600-\u06ff]",
    "Persian": r"[\u0600-\u06ff]", "Hebrew": r"[\u0590-\u05ff]", "Thai": r"[\u0e00-\u0e7f]",
    "Hindi": r"[\u0900-\u097f]", "Marathi": r"[\u0900-\u097f]", "Bengali": r"[\u0980-\u09ff]", "Greek": r"[\u0370-\u03ff]",
    "Tamil": r"[\u0b80-\u0bff]", "Telugu": r"[\u0c00-\u0c7f]", "Urdu": r"[\u0600-\u06ff]", "Odia": r"[\u0b00-\u0b7f]",
}
_SMALL_WORDS = {name: frozenset(words.split()) for name, words in {
    "Spanish": "de la que el en los las del por para con una es se lo como más pero",
    "French": "le la les de des et est pour une dans que vous pas sur avec il sont",
    "German": "der die und das ist nicht mit sie für den ein eine zu auf sich auch wird",
    "Italian": "il di che la per non una con sono gli del della le si è",
    "Portuguese": "de que não para com uma os do da em você se é no na",
    "Polish": "nie się jest na do że to jak w z po dla czy",
    "Dutch": "de het een van en is niet dat voor met op te zijn",
    "Turkish": "bir ve bu için ile olarak da de değil çok daha",
    "Vietnamese": "của và là các để trong không một có được cho với",
    "Indonesian": "yang dan di untuk dengan ini dari tidak dapat anda akan",
}.items()}
_ENGLISH_SMALL_WORDS = frozenset("the and of to is for that you with this are be can your from will not by on in it or as".split())


def _written_in(language: str, text: str, marker: str = "") -> str | None:
    """The language a marked copy's prose is in, when it is the marked one or, for a marker
    in Latin letters, clearly another Latin-script language (NextChat's `-es` page is in
    Italian); None when the text does not bear the marker out. Latin-script prose must be
    prose: a Chinese runbook under `es/` (Elasticsearch) with a few Latin tokens, or a short
    English runbook whose "do", "no" and "de" (as in eu-de-2) score as Portuguese, is no
    copy (review). The marker's own word is not counted."""
    prose = language_text(text)
    script = _SCRIPTS.get(language)
    if script:
        return language if len(re.findall(script, prose)) >= min(20, max(3, len(prose) // 50)) else None
    marker_words = set(re.findall(r"[a-z]+", marker.lower()))
    words = [w for w in re.findall(r"[^\W\d_]+", prose.lower()) if w not in marker_words and not any(is_cjk(ch) for ch in w)]
    if len(words) < 30 or cjk_count(prose) > len(words):
        return None
    english = sum(w in _ENGLISH_SMALL_WORDS for w in words) / len(words)
    share = {name: sum(w in small for w in words) / len(words) for name, small in _SMALL_WORDS.items()}
    if share.get(language, 0.0) >= 0.08 and share[language] > 2 * english:
        return language
    best = max(share, key=share.__getitem__)
    return best if share[best] >= 0.12 and english < 0.03 else None


_SEPARATORS = re.compile(r"[._-]")


def _language_of(code: str) -> str | None:
    """The third language a path marker names: `ja`, `ja-JP`, `tr_TR`, `zh-Hant`, `Japanese`."""
    code = code.lower().replace("_", "-")
    if code in THIRD_LANGUAGES:
        return THIRD_LANGUAGES[code]
    head, _, region = code.partition("-")
    # A language with its region or script (tr-TR, fa-IR, pt-PT); zh-CN and en-US are the
    # assistant's own languages, and zh-TW is listed above.
    return THIRD_LANGUAGES.get(head) if head != "zh" and len(head) == 2 and len(region) in (2, 4) and region.isalpha() else None


def third_language(source: str) -> tuple[str, str] | None:
    """(the path's twin key without its language marker, the language) for a path marked as
    a third language's copy, by folder (`docs/ja/x.md`) or suffix (`x_JA.md`, `x.zh-TW.md`)."""
    path = PurePosixPath(source.replace("\\", "/"))
    folders, language = [], None
    for part in path.parts[:-1]:
        name = _language_of(part) if language is None else None
        if name:
            language = name
            continue
        folders.append(part)
    stem = path.stem
    if language is None:
        pieces = _SEPARATORS.split(stem)
        for n in (2, 1):
            if len(pieces) > n and (name := _language_of("-".join(pieces[-n:]))):
                language, stem = name, stem[: len(stem) - len("-".join(pieces[-n:])) - 1]
                break
    if language is None:
        return None
    return twin_key("/".join(folders + [stem + path.suffix]))[0], language


def set_aside_translations(docs: list[Document]) -> tuple[list[Document], list[tuple[Document, str]]]:
    """(the documents to index, each third-language copy set aside with the reason): a copy
    is set aside only when its original, a file with the same path but no marker, or an
    English or Chinese marker, is in the same source."""
    marks = [None if doc.structured else third_language(doc.source) for doc in docs]
    originals: dict[tuple[str, str], str] = {}
    unmarked = [(twin_key(doc.source), doc) for doc, mark in zip(docs, marks) if not doc.structured and mark is None]
    for (key, _hint), doc in sorted(unmarked, key=lambda pair: pair[0][1] == "zh"):  # name the English original first
        originals.setdefault((doc.root, key), doc.source)
    kept: list[Document] = []
    aside: list[tuple[Document, str]] = []
    for doc, marked in zip(docs, marks):
        original = marked and (originals.get((doc.root, marked[0])) or originals.get((doc.root, _outside(marked[0]))))
        language = marked and original and _written_in(marked[1], doc.body, doc.source)
        if language:
            article = "an" if language[0] in "AEIOU" else "a"
            aside.append((doc, f"{article} {language} copy of {original}, which is indexed (answers are in Chinese and English)"))
        else:
            kept.append(doc)
    return kept, aside


def read_documents(parsed: list[Document]) -> tuple[list[Document], list[str], list[tuple[Document, str]]]:
    """Parsed files as the index holds them: third-language copies set aside, zh/en twins
    paired, ids settled. Returns the documents, what was renamed and what was set aside."""
    kept, aside = set_aside_translations(parsed)
    docs, renamed = settle_ids(pair_twins(kept))
    return docs, renamed, aside
