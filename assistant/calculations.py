"""Capacity questions answered without an LLM: find the numbers in the question, run the
capacity tool, and explain the result with its formula in the asker's language.

Only questions that carry every number a calculation needs are computed; anything less
falls through to the normal KB answer, which explains how to get the numbers.
"""

from __future__ import annotations

import re
import unicodedata

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tools import ToolCall

_NUM = r"(\d[\d,]*(?:\.\d+)?)\s*(k|K|千|万|w|W)?"
_SCALE = {"k": 1_000, "K": 1_000, "千": 1_000, "万": 10_000, "w": 10_000, "W": 10_000, None: 1, "": 1}

_BLOCKS = [
    re.compile(r"(?:num_blocks_global|num_gpu_blocks(?:_override)?|total_block_num|num_blocks)\s*[:=]?\s*(?:of|是|为|=)?\s*" + _NUM, re.I),
    re.compile(_NUM + r"\s*(?:个\s*)?(?:kv[\s-]*(?:cache)?\s*)?(?:blocks?|块)(?!_)", re.I),
]
_BLOCK_SIZE = [
    re.compile(r"block[_\s-]?size\s*(?:is|of|=|:|是|为)?\s*(\d+)", re.I),
    re.compile(r"blocks?\s+of\s+(\d+)\s+tokens?", re.I),
    re.compile(r"每个\s*block\s*(\d+)\s*(?:个)?\s*token", re.I),
]
_AVG = [
    re.compile(_NUM + r"[\s-]*tokens?\s*(?:per|each|/|an?)\s*(?:request|req|session|user)", re.I),
    re.compile(_NUM + r"[\s-]*tokens?\s*(?:requests|sessions)", re.I),
    re.compile(r"(?:average|avg|mean)\s*(?:of\s*)?(?:request\s*(?:size|length)\s*(?:of|is)?\s*)?" + _NUM + r"\s*tokens?", re.I),
    re.compile(r"(?:每个|每条|单个)?\s*(?:请求|会话)\s*(?:平均)?\s*(?:长度)?\s*(?:为|是|有|约)?\s*" + _NUM + r"\s*(?:个)?\s*token", re.I),
    re.compile(r"平均\s*(?:每个请求)?\s*(?:输入\s*\+\s*输出\s*)?(?:为|是|约)?\s*" + _NUM + r"\s*(?:个)?\s*token", re.I),
]
_MAX_SEQS = re.compile(r"max[_-]num[_-]seqs\s*(?:is|of|=|:|是|为)?\s*(\d+)", re.I)
_INTENT = re.compile(r"concurren|how many|simultaneous|at once|parallel|capacity|并发|多少|同时|几个|容量", re.I)


def _number(value: str, scale: str | None) -> int:
    return int(float(value.replace(",", "")) * _SCALE.get(scale, 1))


def _first(patterns: list[re.Pattern], text: str) -> int | None:
    for pattern in patterns:
        m = pattern.search(text)
        if m:
            groups = [g for g in m.groups()]
            return _number(groups[0], groups[1] if len(groups) > 1 else None)
    return None


def capacity_call(question: str) -> "ToolCall | None":
    """A kv_concurrency call when the question asks for concurrency and gives the numbers."""
    text = unicodedata.normalize("NFKC", question)
    if not _INTENT.search(text):
        return None
    blocks = _first(_BLOCKS, text)
    avg = _first(_AVG, text)
    if not blocks or not avg or blocks == avg:
        return None
    args: dict = {"num_blocks": blocks, "avg_tokens_per_request": avg}
    size = _first(_BLOCK_SIZE, text)
    if size:
        args["block_size"] = size
    seqs = _MAX_SEQS.search(text)
    if seqs:
        args["max_num_seqs"] = int(seqs.group(1))
    from .tools import call_tool

    call = call_tool("kv_concurrency", args)
    return None if call.error else call


HEADINGS = {
    "en": ("Calculation", "formula", "block_size 64 assumed (FastDeploy's default); vLLM's default is 16."),
    "zh": ("计算结果", "公式", "按 FastDeploy 默认的 block_size = 64 计算；vLLM 默认是 16。"),
}


def explain(call: "ToolCall", lang: str) -> str:
    title, formula_label, assumed = HEADINGS.get(lang, HEADINGS["en"])
    result = call.result
    lines = [f"**{title}** (kv_concurrency)", "", result["explanation"].get(lang, result["explanation"]["en"]), "",
             f"{formula_label}: `{result['formula']}`"]
    if "block_size" not in call.arguments:
        lines += ["", assumed]
    return "\n".join(lines)
