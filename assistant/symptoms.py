"""The failure a text names: a hang, running out of memory, slowness. Retrieval matches a
question to an article by its subject (logprobs, the KV cache, NCCL) as much as by its
symptom, so a question can share an article's subject and say its symptom does not happen:
"FastDeploy 开了 logprobs，请求没有卡住，就是吞吐掉了一半" got the logprobs-hang article's
msgmax fix as sure (trial). Knowing which failure a title names, and which one the asker
denies, makes such an answer a close call. (Strings compiled on first use: `ask` imports
this on every question.)"""

from __future__ import annotations

import re
from functools import lru_cache

# Each failure as askers and titles write it. Few words, each unambiguous: "卡" alone is also a
# GPU card, "slow" is slowness in any language.
FAILURES = {
    "hang": r"\bhang(?:s|ing)?\b|\bhung\b|\bstuck\b|\bstall(?:s|ed|ing)?\b|\bfreez(?:e|es|ing)\b|never return"
            r"|卡住|卡死|卡主|夯住|无响应|没响应|没有响应|不返回|不动",
    "oom": r"\bOOM\b|out of (?:gpu )?memory|OutOfMemory|显存(?:不足|不够|溢出|爆了|炸了)|爆显存|(?<!主机)内存不足|内存溢出",
    "preempt": r"\bpreempt(?:ed|ion|s|ing)?\b|被?抢占",
    "slow": r"\bslow(?:er|ly|ness)?\b|poor performance|性能差|很慢|变慢|太慢|慢了",
    # failing to start: the start-up articles' titles ("refuses to start", "at start-up", "启动时报")
    "startup": r"\bstart-?up\b|refuses to start|fails? to start|won't start|while the service starts|启动时|启动阶段|启动失败|启动报错|起不来",
}
# Said not to happen, right before it: "请求也没有卡住", "nothing hangs", "no OOM", "不卡", "并不慢".
_DENIED_BEFORE = (r"(?:(?<![有是])没有?(?:报|出现过?|遇到过?|碰到过?|看到过?|见过)?|从来没有?|并没有?|也没有?|都没有?|(?<!是)不是|(?<![是能会要])不|并不"
                  r"|(?<![\w-])(?:no|not|nothing|never|doesn't|does not|didn't|did not|don't|do not|won't|will not|isn't|is not"
                  r"|aren't|are not|wasn't|was not|weren't|were not|neither|nor|without)"
                  r"(?:\s+(?:a|any|an|really|even|seem to|seems to|get|gets|getting|been|actually|longer|see|seeing|saw|hit|hitting|any more))*)\s*$")
# Said gone after it: "OOM 没有了", "the hang went away".
_GONE_AFTER = r"^\s*(?:没有了|没了|消失了|不见了|也没了|is gone|are gone|went away|no longer)"
# Wanted, not denied: "怎么才能不卡住", "how to serve 72B without OOM", "避免 OOM", "是不是卡住了".
# Only in the failure's own clause: "怎么办？请求没有卡住" denies the hang (review).
_GOAL_BEFORE = (r"才能|才可以|才会|如何|怎么|怎样|避免|防止|确保|保证|能不能|会不会|是不是|是否|\bhow\b|\bavoid|\bprevent"
                r"|\bso that\b|\bensure|\bmake sure\b")
_CLAUSE_START = r"[，,。.；;！!？?\n]"
# A future the asker asks about: "it won't OOM anymore, right?", "以后不会卡住了吧？".
_ASKED_AFTER = r"^[^。.！!\n]*?(?:[?？]|吗|吧)"


# A denial that is the whole phrase: "请求不卡", "也没卡" (卡 alone names no hang: 4 卡, 卡住).
# Said fine in plain words, the failure unnamed: "requests finish fine", "请求都能正常返回", "启动没有报错",
# "the server starts fine" (trial 4: each got the article on that very failure, as sure).
_FLAT_DENIALS = {"hang": r"(?:不|没)卡(?=[\s，,。.；;！!？?了的啊]|$)|\b(?:requests?|calls?) (?:all )?(?:finish|complete|return)s? (?:fine|normally|ok)\b"
                         r"|(?:请求|接口)(?:都|也)?(?:能)?正常返回",
                 "startup": r"启动(?:都|也)?(?:正常|成功|没(?:有)?(?:报错|问题))|\bstarts? (?:up )?(?:fine|normally|ok|cleanly)\b"
                            r"|\bstart-?up (?:is|was|looks) (?:fine|ok|clean)\b|\bcomes? up fine\b"}


@lru_cache(maxsize=None)
def _pattern(name: str) -> re.Pattern:
    return re.compile(FAILURES[name], re.I)


@lru_cache(maxsize=1)
def _denied_before() -> re.Pattern:
    return re.compile(_DENIED_BEFORE, re.I)


@lru_cache(maxsize=1)
def _gone_after() -> re.Pattern:
    return re.compile(_GONE_AFTER, re.I)


@lru_cache(maxsize=1)
def _goal_before() -> re.Pattern:
    return re.compile(_GOAL_BEFORE, re.I)


def _said_not(text: str, start: int, end: int) -> bool:
    """Whether the failure at text[start:end] is said not to happen, not wanted away or asked about."""
    before = text[max(0, start - 16):start]
    clause = re.split(_CLAUSE_START, text[max(0, start - 48):start])[-1]
    if _goal_before().search(clause):
        return False
    cue = _denied_before().search(before)
    if cue and re.search(r"won't|will not|不会", cue.group(0), re.I) and re.search(_ASKED_AFTER, text[end:end + 40]):
        return False
    return bool(cue or _gone_after().search(text[end:end + 12]))


# What a text that deals with running out of memory writes: the error, or the memory knobs and
# the KV cache that an article on memory tunes; or memory words at least twice in its own words
# (a model's README: "显存", "VRAM"). One remark ("float32 needs more memory") does not.
_ON_MEMORY = r"\boom\b|out of memory|outofmemory|显存(?:不足|不够|溢出)|内存不足|内存溢出|gpu-memory-utilization|kv[ -]?cache|kv 缓存"
_MEMORY_WORD = r"memory|显存|内存|vram"


def deals_with_memory(text: str, once: bool = False) -> bool:
    """Whether a document's text (one language, lower case, "_" written "-") deals with memory;
    `once`: a single memory word is enough."""
    return bool(re.search(_ON_MEMORY, text)) or len(re.findall(_MEMORY_WORD, text)) >= (1 if once else 2)


def named(text: str) -> set[str]:
    """The failures a text names at all (a title, a heading)."""
    return {name for name in FAILURES if _pattern(name).search(text)}


def denied(text: str) -> set[str]:
    """The failures the text says do not happen, and names nowhere else as happening: "没有卡住，
    就是慢" denies a hang; "卡住了，不是 OOM" denies OOM only; "not stuck at first, then it hangs"
    denies nothing."""
    out = set()
    for name in FAILURES:
        said = list(_pattern(name).finditer(text))
        flat = name in _FLAT_DENIALS and re.search(_FLAT_DENIALS[name], text)
        if flat and _goal_before().search(re.split(_CLAUSE_START, text[max(0, flat.start() - 24):flat.start()])[-1]):
            flat = None
        if (said or flat) and all(_said_not(text, m.start(), m.end()) for m in said):
            out.add(name)
    return out
