"""The message catalog (assistant/i18n): complete in every language, placeholders that
agree, and lookups that fill them."""

from __future__ import annotations

import string

import pytest

from assistant.i18n import LANGS, both, catalog, pick_lang, t


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_entry_has_every_language_and_the_same_placeholders():
    entries = catalog()
    assert entries, "the catalog is empty"
    for key, texts in entries.items():
        assert set(texts) == set(LANGS), f"{key}: languages {sorted(texts)}"
        assert all(isinstance(v, str) and v.strip() for v in texts.values()), key
        fields = {lang: _fields(text) for lang, text in texts.items()}
        assert len({frozenset(f) for f in fields.values()}) == 1, f"{key}: placeholders differ {fields}"


def test_lookup_fills_placeholders_and_falls_back_to_the_default_language():
    key = next(k for k, v in catalog().items() if not _fields(v["en"]))
    assert t(key, "zh") == catalog()[key]["zh"]
    assert t(key, "fr") == catalog()[key]["en"]
    assert pick_lang(None) == "en" and pick_lang("zh") == "zh"
    with pytest.raises(KeyError):
        t("nowhere.nothing", "en")
    assert set(both(key)) == set(LANGS)


def test_every_llm_failure_reason_has_its_chinese_words():
    """A Chinese answer's fallback note gives the reason in Chinese (i18n/llm.py REASONS_ZH):
    a reason added to llm.py without its Chinese words read half in English."""
    import re
    from pathlib import Path

    from assistant.answer import _reason_in

    source = (Path(__file__).resolve().parent.parent / "assistant" / "llm.py").read_text(encoding="utf-8")
    reasons = {re.sub(r"\{[^}]*\}", "5", m.group(2)) for m in re.finditer(r"""(f?)"(the LLM[^"]*|the openai package[^"]*)\"""", source)}
    reasons = {r for r in reasons if not r.startswith(("the LLM kept", "the LLM answered in", "the LLM found"))}  # notes, not reasons
    assert len(reasons) >= 10
    untranslated = sorted(r for r in reasons if _reason_in(r, "zh") == r)
    assert not untranslated, untranslated
