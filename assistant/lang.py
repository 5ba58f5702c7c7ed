"""Language detection for zh/en, the two languages the KB is written in.

A question counts as Chinese when Chinese characters carry a real share of it; log lines
and flag names pasted into a Chinese question are English tokens but do not make it English.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z]{2,}")


def cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def _line_is_zh(line: str) -> bool:
    cjk = cjk_count(line)
    # A Chinese character is roughly worth half an English word of content.
    return cjk >= 2 and cjk >= 0.5 * len(_WORD.findall(line))


def detect_lang(text: str) -> str:
    """Return "zh" or "en". Judged per line, so a Chinese question above a pasted English
    log stays Chinese."""
    if not _CJK.search(text):
        return "en"
    return "zh" if any(_line_is_zh(line) for line in text.splitlines()) else "en"
