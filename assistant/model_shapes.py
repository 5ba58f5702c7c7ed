"""The published shapes of the open models people serve most, for capacity questions that
name a model but not its layers and KV heads.

"Qwen2.5-7B on one 4090, max-model-len 32768: how many at once?" could not be computed: the
KV bytes per token need the model's layers, KV heads and head_dim, and the asker rarely has
its config.json at hand. These come from each model's published config.json (and the
parameter counts from its model card). Only exact names are matched: a fine-tune keeps its
base's shape, a vision variant or another size does not, and a name this table does not hold
leaves the figure to the asker, as before. A wrong shape would be a confident wrong number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache


@dataclass(frozen=True)
class ModelShape:
    name: str  # as shown in the answer
    layers: int
    kv_heads: int
    head_dim: int
    params_b: Decimal  # billions of parameters, from the model card
    heads: int  # num_attention_heads: vLLM splits them over tensor_parallel_size, which must divide them

    def splits_over(self, tp: int) -> bool:
        """Whether vLLM accepts this tensor-parallel size: attention heads divide evenly, and KV
        heads either divide evenly or are copied to whole multiples."""
        return self.heads % tp == 0 and (self.kv_heads % tp == 0 or tp % self.kv_heads == 0)

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """Keys and values of every layer for one token, the whole model (before tensor parallelism)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


def _shape(name: str, layers: int, kv_heads: int, head_dim: int, params_b: str, heads: int) -> ModelShape:
    return ModelShape(name, layers, kv_heads, head_dim, Decimal(params_b), heads)


# config.json: num_hidden_layers, num_key_value_heads, head_dim (or hidden_size ÷ num_attention_heads).
_QWEN25 = {"0.5": _shape("Qwen2.5-0.5B", 24, 2, 64, "0.49", 14), "1.5": _shape("Qwen2.5-1.5B", 28, 2, 128, "1.54", 12),
           "3": _shape("Qwen2.5-3B", 36, 2, 128, "3.09", 16), "7": _shape("Qwen2.5-7B", 28, 4, 128, "7.61", 28),
           "14": _shape("Qwen2.5-14B", 48, 8, 128, "14.7", 40), "32": _shape("Qwen2.5-32B", 64, 8, 128, "32.5", 40),
           "72": _shape("Qwen2.5-72B", 80, 8, 128, "72.7", 64)}
_QWEN2 = {"0.5": _shape("Qwen2-0.5B", 24, 2, 64, "0.49", 14), "1.5": _shape("Qwen2-1.5B", 28, 2, 128, "1.54", 12),
          "7": _shape("Qwen2-7B", 28, 4, 128, "7.62", 28), "72": _shape("Qwen2-72B", 80, 8, 128, "72.7", 64)}
_QWEN3 = {"4": _shape("Qwen3-4B", 36, 8, 128, "4.02", 32), "8": _shape("Qwen3-8B", 36, 8, 128, "8.19", 32),
          "14": _shape("Qwen3-14B", 40, 8, 128, "14.8", 40), "32": _shape("Qwen3-32B", 64, 8, 128, "32.8", 64),
          "30": _shape("Qwen3-30B-A3B", 48, 4, 128, "30.5", 32), "235": _shape("Qwen3-235B-A22B", 94, 4, 128, "235", 64)}
_LLAMA3 = {"": {"8": _shape("Llama-3-8B", 32, 8, 128, "8.03", 32), "70": _shape("Llama-3-70B", 80, 8, 128, "70.6", 64)},
           ".1": {"8": _shape("Llama-3.1-8B", 32, 8, 128, "8.03", 32), "70": _shape("Llama-3.1-70B", 80, 8, 128, "70.6", 64),
                  "405": _shape("Llama-3.1-405B", 126, 8, 128, "405", 128)}}
_LLAMA2 = {"7": _shape("Llama-2-7B", 32, 32, 128, "6.74", 32), "13": _shape("Llama-2-13B", 40, 40, 128, "13.0", 40),
           "70": _shape("Llama-2-70B", 80, 8, 128, "69.0", 64)}
_LLAMA32_3B = _shape("Llama-3.2-3B", 28, 8, 128, "3.21", 24)
_LLAMA33_70B = _shape("Llama-3.3-70B", 80, 8, 128, "70.6", 64)
_MISTRAL_7B = _shape("Mistral-7B", 32, 8, 128, "7.24", 32)
_MIXTRAL = _shape("Mixtral-8x7B", 32, 8, 128, "46.7", 32)

_SEP = r"[-_ :/]?"
_SIZE = r"(\d+(?:\.\d)?)b(?![a-z0-9]|\.\d)"
_END = r"(?![a-z0-9])"
# A variant with other weights or another architecture under the same name's start:
# Qwen2-VL, Qwen2.5-Omni, Llama-3.2-11B-Vision, Qwen3-Next, Qwen3-Coder-480B.
_VARIANT = r"(?!" + _SEP + r"(?:vl|omni|audio|vision|next|coder-480))"
_PATTERNS: tuple[tuple[re.Pattern, object], ...] = (
    (re.compile(r"(?<![a-z0-9])deepseek" + _SEP + r"r1" + _SEP + r"distill" + _SEP + r"(qwen|llama)" + _SEP + _SIZE), "distill"),
    (re.compile(r"(?<![a-z0-9])qwq" + _SEP + r"32b" + _END), _QWEN25["32"]),
    (re.compile(r"(?<![a-z0-9])qwen ?2\.5" + _VARIANT + r"(?:" + _SEP + r"(?:coder|math|instruct))?" + _SEP + _SIZE), _QWEN25),
    (re.compile(r"(?<![a-z0-9])qwen ?2(?![.\d])" + _VARIANT + r"(?:" + _SEP + r"(?:instruct|math))?" + _SEP + _SIZE), _QWEN2),
    (re.compile(r"(?<![a-z0-9])qwen ?3(?![.\d])" + _VARIANT + _SEP + r"(\d+)b(?:" + _SEP + r"a\d+b)?" + _END), _QWEN3),
    (re.compile(r"(?<![a-z0-9])(?:meta" + _SEP + r")?llama" + _SEP + r"3(\.[0-3])?" + _SEP + r"(\d+)b" + _END), "llama3"),
    (re.compile(r"(?<![a-z0-9])llama" + _SEP + r"2" + _SEP + r"(\d+)b" + _END), _LLAMA2),
    (re.compile(r"(?<![a-z0-9])mistral" + _SEP + r"7b" + _END), _MISTRAL_7B),
    (re.compile(r"(?<![a-z0-9])mixtral" + _SEP + r"8x7b" + _END), _MIXTRAL),
)
# R1's distilled models are Qwen2.5 (Math) and Llama 3.1/3.3 checkpoints, shape and all.
# (The 1.5B distill unties its embeddings: 1.78B parameters, not Qwen2.5-1.5B's 1.54B; left out.)
_DISTILL = {("qwen", "7"): _QWEN25["7"], ("qwen", "14"): _QWEN25["14"],
            ("qwen", "32"): _QWEN25["32"], ("llama", "8"): _LLAMA3[".1"]["8"], ("llama", "70"): _LLAMA33_70B}


def _one(m: re.Match, table: object) -> ModelShape | None:
    if isinstance(table, ModelShape):
        return table
    if table == "distill":
        return _DISTILL.get((m.group(1), m.group(2)))
    if table == "llama3":
        version, size = m.group(1) or "", m.group(2)
        if version == ".2":
            return _LLAMA32_3B if size == "3" else None
        if version == ".3":
            return _LLAMA33_70B if size == "70" else None
        return _LLAMA3.get(version, {}).get(size)
    return table.get(m.group(1))  # type: ignore[union-attr]


# Other models a question may name beside one of the table's ("moved from Qwen2.5-72B to
# DeepSeek-V3", "Qwen3-1.7B instead of Qwen3-14B"): the figures would be the wrong model's.
_OTHER_MODEL = re.compile(r"deepseek(?![-_ ]?r1[-_ ]?distill)|gpt[-_ ]?oss|kimi|(?<![a-z])glm|gemma|(?<![a-z])phi[-_ ]?\d"
                          r"|(?<![a-z])yi[-_ ]\d|internlm|baichuan|minicpm|mistral[-_ ]?(?:small|large|nemo|medium)|mixtral[-_ ]?8x22b"
                          r"|llama[-_ ]?4|command[-_ ]?r|falcon|(?<![a-z])opt[-_]\d|starcoder|codellama|chatglm")
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)b(?![a-z0-9])")
_MISTRAL_V01 = re.compile(r"mistral[-_ ]?7b[-_ ]?(?:instruct[-_ ]?)?v0\.1(?!\d)")


@lru_cache(maxsize=64)  # one capacity question asks it from routing, each planner and the weights note
def named_model(text: str) -> ModelShape | None:
    """The one model of the table that `text` (normalised, lower-case) names; None when it
    names none, a size or variant the table does not hold, or two models of different shape
    ("Qwen2.5-7B vs Llama-3.1-8B" is no question about one of them)."""
    found: set[ModelShape] = set()
    unknown = False
    taken: list[tuple[int, int]] = []
    for pattern, table in _PATTERNS:
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue  # "DeepSeek-R1-Distill-Qwen-7B" is not also "Qwen-7B"
            taken.append(m.span())
            shape = _one(m, table)
            if shape is None:
                unknown = True
            else:
                found.add(shape)
    shapes = {(s.layers, s.kv_heads, s.head_dim, s.params_b) for s in found}
    if unknown or len(shapes) != 1 or _OTHER_MODEL.search(text):
        return None
    outside = "".join(ch if not any(a <= i < b for a, b in taken) else " " for i, ch in enumerate(text))
    if _SIZE.search(outside):
        return None  # another model's size beside it ("Qwen3-1.7B", "gpt-oss-120b"): whose figures?
    shape = min(found, key=lambda s: s.name)
    if shape is _MISTRAL_7B and _MISTRAL_V01.search(text):
        return None  # v0.1 attends over a 4096-token sliding window: vLLM keeps less KV per request than the whole context
    return shape


@dataclass(frozen=True)
class ContextLimit:
    """The longest context a checkpoint's config.json lets vLLM serve (the "derived
    max_model_len"), and what its model card documents beyond it."""

    checkpoint: str  # the checkpoint the figure is for ("Qwen2.5-7B-Instruct")
    tokens: int  # max_position_embeddings as shipped
    yarn_tokens: int | None = None  # the length the model card documents with YaRN rope scaling
    base_tokens: int | None = None  # the base checkpoint's figure, when the question does not say which
    yarn_original: int = 32768  # original_max_position_embeddings of the documented YaRN setting (Qwen's)


# max_position_embeddings of the shipped config.json. Qwen2 and Qwen2.5 Instruct checkpoints
# ship 32768 while their 7B+ base models say 131072 (on purpose: 128K needs YaRN, QwenLM/Qwen3#663);
# Qwen3 ships 40960 (32768 of pre-training plus room for output), 131072 with YaRN; the 2507
# releases 262144. Sizes whose config could not be checked are left out (no figure, no note).
_QWEN_CONTEXT = {  # name: (Instruct, base, with YaRN)
    "Qwen2.5-0.5B": (32768, None, None), "Qwen2.5-3B": (32768, 32768, None),
    "Qwen2.5-7B": (32768, 131072, 131072), "Qwen2.5-14B": (32768, 131072, 131072), "Qwen2.5-32B": (32768, 131072, 131072),
    "Qwen2.5-72B": (32768, None, 131072), "Qwen2-0.5B": (32768, 131072, None), "Qwen2-7B": (32768, 131072, 131072),
    "Qwen2-72B": (32768, 131072, 131072),
    "Qwen3-4B": (40960, None, 131072), "Qwen3-8B": (40960, None, 131072), "Qwen3-14B": (40960, None, 131072),
    "Qwen3-32B": (40960, None, 131072), "Qwen3-30B-A3B": (40960, None, 131072), "Qwen3-235B-A22B": (40960, None, 131072),
}
_OTHER_CONTEXT = {"Llama-2-7B": 4096, "Llama-2-13B": 4096, "Llama-2-70B": 4096, "Llama-3-8B": 8192, "Llama-3-70B": 8192,
                  "Llama-3.1-8B": 131072, "Llama-3.1-70B": 131072, "Llama-3.1-405B": 131072, "Llama-3.2-3B": 131072,
                  "Llama-3.3-70B": 131072, "Mistral-7B": 32768, "Mixtral-8x7B": 32768}
_DISTILL_NAME = re.compile(r"(?<![a-z0-9])deepseek" + _SEP + r"r1" + _SEP + r"distill" + _SEP + r"(qwen|llama)" + _SEP + r"(\d+(?:\.\d)?)b")
_DISTILL_CONTEXT = {("qwen", "7"): 131072, ("qwen", "32"): 131072, ("llama", "8"): 131072, ("llama", "70"): 131072}
_QWQ = re.compile(r"(?<![a-z0-9])qwq" + _SEP + r"32b(" + _SEP + r"preview)?")
_INSTRUCT = re.compile(r"instruct|(?<![a-z])chat(?![a-z])")
_BASE = re.compile(r"(?<![a-z])base(?![a-z])")
# The asker already extends the context (YaRN, rope scaling), or names a release or fine-tune
# that ships another one: 2507, "-1M" (also "Instruct 1M", "1M 版本"), a length glued to the
# name ("Llama-3-8B-Instruct-Gradient-1048k", "LLaMA-2-7B-32K", "longlora"). A length after a
# digit or a k is a range ("2-4k tokens", "8K-32K"), and "1M tokens per day" or "at 32k" a
# plan, not a name; "long chat sessions" and "gradient checkpointing" are no fine-tunes.
_EXTENDED = re.compile(r"yarn|rope|2507|(?<=[a-jl-z])-(?:\d{1,4}k|1m)(?![a-z0-9])"
                       # Qwen2.5-7B/14B-Instruct-1M, the only 1M releases, written apart ("Instruct 1M", "_1M",
                       # "1M 版本"): not "1M requests per day" nor "1M context"
                       r"|qwen ?2\.5-(?:7|14)b(?:-instruct)?[ _]1m(?=$|[\s,，.。;；:：)）]|版本|version)"
                       r"(?! ?(?:tokens?|requests?|reqs?|users?|qps|per|context|ctx|上下文|请求|用户|条|次))"
                       r"|(?<![a-z0-9])1m ?(?:版本|version|release)|longlora|longchat|long-?alpaca|gradient[-_ ]?\d{2,4}k")
# Variants with their own config under a Qwen2.5 shape: Qwen2.5-Math ships 4096, Coder 32768
# for every size (not the base's 131072); neither was checked per size.
_OWN_CONFIG = re.compile(r"(?<![a-z0-9])qwen ?2(?:\.5)?" + _SEP + r"(?:math|coder)")


@lru_cache(maxsize=64)
def context_limit(text: str) -> ContextLimit | None:
    """The config.json context of the one checkpoint `text` (normalised, lower-case) names;
    None when the table has no checked figure for it, when it names none or several, or when
    the question already extends the context (YaRN, rope scaling, a 1M or 2507 release)."""
    shape = named_model(text)
    if shape is None or _EXTENDED.search(text) or _OWN_CONFIG.search(text):
        return None
    distill = _DISTILL_NAME.search(text)
    if distill:
        tokens = _DISTILL_CONTEXT.get((distill.group(1), distill.group(2)))
        return ContextLimit(f"DeepSeek-R1-Distill-{distill.group(1).title()}-{distill.group(2)}B", tokens) if tokens else None
    qwq = _QWQ.search(text)
    if qwq:
        # QwQ-32B's config said 131072 at release and 40960 since (QwenLM/QwQ#26): which one a
        # download holds depends on its date, so only the Preview gets a figure.
        return ContextLimit("QwQ-32B-Preview", 32768) if qwq.group(1) else None
    if shape.name in _OTHER_CONTEXT:
        return ContextLimit(shape.name, _OTHER_CONTEXT[shape.name])
    if shape.name not in _QWEN_CONTEXT:
        return None
    instruct, base, yarn = _QWEN_CONTEXT[shape.name]
    qwen3 = shape.name.startswith("Qwen3")
    if _BASE.search(text):
        return None if base is None or qwen3 else ContextLimit(shape.name, base)
    named = shape.name if qwen3 else f"{shape.name}-Instruct"
    said = qwen3 or _INSTRUCT.search(text) is not None
    return ContextLimit(named, instruct, yarn, None if said or base == instruct else base)
