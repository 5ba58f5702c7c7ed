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
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path, PurePosixPath

from .documents import Document, _slug

_LANG_DIRS = {"zh": "zh", "zh-cn": "zh", "zh_cn": "zh", "zh-hans": "zh", "cn": "zh", "chinese": "zh",
              "en": "en", "en-us": "en", "en_us": "en", "english": "en"}
_LANG_SUFFIX = re.compile(r"[._-](zh[-_]?cn|zh[-_]?hans|zh|cn|en[-_]?us|en)$", re.I)


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


def pair_twins(docs: list[Document]) -> list[Document]:
    """Give a zh/en pair of user docs (no front-matter id) one id, found by path convention."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, doc in enumerate(docs):
        if not doc.structured:
            groups.setdefault((doc.root, twin_key(doc.source)[0]), []).append(i)
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
