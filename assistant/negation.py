"""Features the asker says are not in play ("logprobs is NOT enabled", "没开 logprobs", "not
using LoRA"): the name points at the article the asker has ruled out, and at a subject the
KB may lack. Its own module, read by retrieval and subject detection on every question,
so a plain question does not import the question cleaner."""

from __future__ import annotations

import re

# A feature the asker says is not in play: "logprobs is NOT enabled", "not using LoRA", "没开
# logprobs", "没有用 LoRA", "未开启 prefix caching". The name points at the article the asker
# has ruled out ("FastDeploy requests hang, logprobs is NOT enabled" got the logprobs article
# at 0.995), and at a subject the KB lacks ("not using LoRA" was refused as a LoRA question).
# Only a name written in Latin letters right after (or, in English, right before) the
# negated verb: "调了也没用" (it did not help) names nothing. Not 不开 / 不用: "不开 vllm、直接
# transformers 跑是正常的" says vLLM is where it fails.
_NAME_WORD = r"(?<![\w.-])(?:--)?[A-Za-z][\w-]{0,40}(?:\.[\w-]{1,20}){0,3}(?![\w-])"  # from a word's start: linear
# Features are enabled or used; a setting that was not set ("没设 HF_ENDPOINT", "didn't set
# --enforce-eager") is more often the fix than ruled out, so "set" and "add" do not count.
# Bare 没用 / 没有用 are left out: they mostly say a change did not help ("加了 … 也没用 FastDeploy
# 还是 OOM"), and the word after them is the product or the symptom.
_RULED_OUT = re.compile(
    rf"(?:没有?|未|并未|从未)(?:开启|开|启用|打开|使用|用过)(?:过|了)?\s*(?P<zh>{_NAME_WORD}(?:[ _-]{_NAME_WORD})?)"
    rf"|(?:(?<![\w-])(?:not|never)|n't)\s+(?:using|use|enabled?|enabling|turned on|turning on)\s+"
    rf"(?:any\s+|the\s+)?(?P<en>{_NAME_WORD}(?:[ -]{_NAME_WORD})?)"
    rf"|(?P<before>{_NAME_WORD})\s+(?:is|are|was|were)(?:\s+|n't\s+)(?:not\s+)?(?<=not |n't )(?:enabled|turned on|in use)\b"
    # More Chinese ways of saying it is off ("logprobs 是关着的", "没用 logprobs", "已经关了 prefix
    # caching", "prefix caching 没开"; each got the article on the very feature, as sure, trial).
    # Not "也没用" / "都没用" / "还是没用": a change that did not help;
    # nor "怎么关闭 X" / "关掉 X 就好了": X is then the subject, or the culprit (review of the dev trees).
    # (没用 X only as a clause of its own: "调到 0.8 没用 max_model_len 改到 8192 也不行" is "did not help", review.)
    rf"|(?:^|(?<=[，,。；;！!？?\n])|(?<=我们)|(?<=我))\s*没用(?:过|了)?\s*(?P<zh_used>{_NAME_WORD}(?:[ _-]{_NAME_WORD})?)"
    r"(?=\s*(?:[，,。；;！!？?\n]|$))"
    rf"|(?:已经?|早就)(?:关掉|关闭|关)了?\s*(?P<zh_off>{_NAME_WORD}(?:[ _-]{_NAME_WORD})?)"
    rf"|(?<!被)(?<!被 )(?P<before_zh>{_NAME_WORD}(?:[ _-]{_NAME_WORD})?)\s*(?:是|已经?|也)?\s*(?:关着的?|关掉了|关闭了?|关了|没开|没打开|没有开|没启用|没有启用|未开启|未启用)"
    r"(?!\s*(?:--)?[A-Za-z])"  # "加了 --enforce-eager 关了 cuda graph": 关了 takes what follows it
    # "batching 关了就没问题", "logprobs 没开的时候一切正常": without it all is well, it is the culprit (review)
    r"(?!\s*(?:就|之后|以后|后|的话|的时候|时候|时|之前|以前|前))",
    re.I)
# What a negation names that is no feature: a product ("也没有用 vllm"), a symptom, the hardware,
# or a sentence's own words ("not using my GPU").
_NOT_A_FEATURE = re.compile(r"(?i)(?:my|our|your|the|by|any|it|this|that)\b|(?:vllm|fastdeploy|sglang|ollama|lmdeploy|tgi|trt|tensorrt"
                            r"|oom|nccl|cuda|gpus?|cpus?|npus?|tpus?|memory|ram)\b")


# What every negation above contains: most questions have none, and are not scanned further
# (retrieval, subject detection and the query cleaner each ask).
_CUE = re.compile(r"没|未|关|not\b|n't|never", re.I)


_NAMED_GROUPS = ("zh", "en", "before", "zh_used", "zh_off", "before_zh")


def _ruled_out_names(text: str):
    if not _CUE.search(text):
        return
    for m in _RULED_OUT.finditer(text):
        name = next((m.group(g) for g in _NAMED_GROUPS if m.group(g)), "").strip()
        if name and not _NOT_A_FEATURE.match(name):
            yield m, name


def ruled_out(text: str) -> list[str]:
    """The feature names the text says are not in play (see `_RULED_OUT`), as written."""
    return list(dict.fromkeys(name for _m, name in _ruled_out_names(text)))


def without_ruled_out(text: str) -> str:
    """The text without the feature names it says are not in play (see `_RULED_OUT`)."""
    out, pos = [], 0
    for m, name in _ruled_out_names(text):
        start = m.start() + m.group(0).index(name)
        out += [text[pos:start], " "]
        pos = start + len(name)
    return "".join(out) + text[pos:]


# A term said, right before it, to be absent or off: "no ECC errors … no Xid 79", "without fp8
# kv cache", "没开 fp8 kv cache", with up to two words between. Not the question forms 有没有 and
# 是不是 ("有没有 LoRA 的文档" asks about LoRA), nor 也没用 ("did not help"), nor 关掉 ("怎么关掉思考模式"
# asks for it).
_DENIED = re.compile(r"(?:(?<![a-z])(?:no|not|without|never|(?:don't|do not|didn't|did not) (?:use|send|pass|have))|(?<!有)没有(?:开|用)?|(?<![有也都还])没(?:用|开)?"
                     r"|(?<!有)无|(?<!是)不是|不用|不开)\s*(?:[a-z][\w-]*\s+){0,2}$", re.I)


def denied_before(text: str, at: int) -> bool:
    """Whether what starts at `at` in `text` is said, right before it, to be absent or off."""
    return _DENIED.search(text, max(0, at - 24), at) is not None

