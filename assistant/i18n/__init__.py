"""Every user-facing string, in every language in LANGS, in one catalog.

The catalog is this package: each module beside this one holds the strings of one area
(`answer.py`: answer labels and refusals; `chat.py`: chat adapters; …) as
`MESSAGES = {"key": {"zh": "…", "en": "…"}}`, and is found without a list. A string is
looked up as "area.key", so fixing a translation or adding a language is one hunt in one
folder. `tests/test_i18n.py` checks that every entry has every language and the same
{placeholders} in each.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import lru_cache
from typing import Iterator

from oncall_common.lang import DEFAULT_LANG, LANGS, Lang

__all__ = ["LANGS", "Lang", "DEFAULT_LANG", "t", "both", "texts", "catalog", "pick_lang"]


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict[str, str]]:
    """All entries as {"area.key": {lang: text}}, loaded once per process on first use."""
    entries: dict[str, dict[str, str]] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for key, texts in getattr(module, "MESSAGES", {}).items():
            entries[f"{info.name}.{key}"] = texts
    return entries


def pick_lang(lang: str | None) -> Lang:
    """`lang` when it is one of LANGS, else the default: a caller's typo must not fail an answer."""
    return lang if lang in LANGS else DEFAULT_LANG  # type: ignore[return-value]


def t(key: str, lang: str | None, /, **values: object) -> str:
    """The text of `key` ("area.key") in `lang`, with {placeholders} filled from `values`.
    An unknown key is a bug and raises KeyError."""
    text = catalog()[key][pick_lang(lang)]
    return text.format(**values) if values else text


def both(key: str, /, **values: object) -> dict[str, str]:
    """`key` in every language, e.g. for a tool result that carries {"zh": …, "en": …}."""
    return {lang: t(key, lang, **values) for lang in LANGS}


class texts(Mapping):
    """One area's strings in one language, as a read-only mapping: `texts("answer", lang)["fix"]`.
    For code that hands a set of labels down to its helpers."""

    def __init__(self, area: str, lang: str | None) -> None:
        self.area, self.lang = area, pick_lang(lang)  # built per answer: nothing else here

    def __getitem__(self, key: str) -> str:
        return t(f"{self.area}.{key}", self.lang)

    def _keys(self) -> list[str]:
        prefix = self.area + "."
        return [key[len(prefix):] for key in catalog() if key.startswith(prefix)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())
