"""Language detection for zh/en, the two languages the KB is written in.

A question counts as Chinese when Chinese characters carry a real share of it; log lines
and flag names pasted into a Chinese question are English tokens but do not make it English.
"""

from __future__ import annotations

import re
from typing import Literal

# The languages the KB, the answers and every user-facing string come in. Adding one means a
# value here, its strings in assistant/i18n, and its KB articles.
LANGS: tuple[str, ...] = ("zh", "en")
Lang = Literal["zh", "en"]
DEFAULT_LANG: Lang = "en"

_WORD = re.compile(r"[A-Za-z]{2,}")


def is_cjk(ch: str) -> bool:
    """CJK ideographs (Extension A, Unified, Compatibility). A code-point test rather than a
    regex class: compiling a class over these ranges costs ~2 ms in every process."""
    o = ord(ch)
    return 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF


def cjk_count(text: str) -> int:
    return sum(1 for ch in text if is_cjk(ch))


def _line_is_zh(line: str) -> bool:
    cjk = cjk_count(line)
    # A Chinese character is roughly worth half an English word of content.
    return cjk >= 2 and cjk >= 0.5 * len(_WORD.findall(line))


def detect_lang(text: str) -> str:
    """Return "zh" or "en". Judged per line, so a Chinese question above a pasted English
    log stays Chinese."""
    if not any(is_cjk(ch) for ch in text):
        return "en"
    return "zh" if any(_line_is_zh(line) for line in text.splitlines()) else "en"
