"""Capacity math for KV caches, concurrency and FastDeploy's IPC messages.

Every result carries the formula it used, with the numbers substituted, in English (`formula`) and
Chinese (`formula_zh`), and a short explanation in both languages, so the extractive path can answer a
sizing question without an LLM and an LLM can quote it. The words come from the message catalog
(assistant/i18n/tools.py); the numbers and the arithmetic, the same in every language, are built here.
Figures are checked in tests against the sources: 17131 blocks × 64 = 1,096,384 tokens → 54 requests
of 20,000 tokens; logprobs messages of 133,136 (non-MTP) and 802,840 (MTP) bytes; Llama-3.1-8B in
bf16 needs 128 KiB of KV cache per token.

Every count is positive: the signature says so (`PositiveInt` becomes `"minimum": 1` in the tool's
JSON schema, so a model sees it) and each function checks again, because the CLI and tests call
the functions directly. Nothing here reads a file except `kv_bytes_per_token(config_path=…)`, whose
parameter is marked LOCAL_PATH so remote callers never get it.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from annotated_types import Ge, Gt, Le, Lt

from assistant.i18n import both

from . import LOCAL_PATH, tool

GIB = 1024**3
DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
               "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}
DEFAULT_MSGMAX = 8192
DEFAULT_MSGMNB = 16384  # Linux's MSGMNB: the bytes one System V queue holds unless raised
RECOMMENDED_MSGMAX = 1048576
RECOMMENDED_MSGMNB = 268435456
CONFIG_MAX_BYTES = 1_000_000  # a real config.json is a few kB; this stops /dev/zero-style inputs
MAX_VALUE = 10**15  # larger "counts" are typos or attacks; they would only overflow floats

PositiveInt = Annotated[int, Ge(1)]
PositiveFloat = Annotated[float, Gt(0)]
NonNegativeInt = Annotated[int, Ge(0)]
NonNegativeFloat = Annotated[float, Ge(0)]
Share = Annotated[float, Gt(0), Le(1)]  # gpu_memory_utilization
PrefillRatio = Annotated[float, Ge(0), Lt(1)]  # kv_cache_ratio


def _fmt(n: float) -> str:
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.2f}"


def _say(key: str, **values: object) -> dict[str, str]:
    """The catalog entry "tools.<key>" in every language (see assistant/i18n/tools.py)."""
    return both(f"tools.{key}", **values)


def _then(text: dict[str, str], key: str, **values: object) -> dict[str, str]:
    """`text` continued, in each language, by the catalog entry `key` (a "…_more" entry)."""
    more = _say(key, **values)
    return {lang: words + more[lang] for lang, words in text.items()}


def _check(positive: dict[str, float | None] | None = None, non_negative: dict[str, float | None] | None = None) -> None:
    """Reject values that are not positive (or negative, for non_negative), NaN, or absurdly large, naming
    the parameter: the schema says the same, but the CLI and tests call these functions directly."""
    for name, value in (positive or {}).items():
        if value is not None and (isinstance(value, bool) or not value > 0):
            raise ValueError(f"{name} must be positive")
    for name, value in (non_negative or {}).items():
        if value is not None and (isinstance(value, bool) or not value >= 0):
            raise ValueError(f"{name} must not be negative")
    for name, value in {**(positive or {}), **(non_negative or {})}.items():
        if value is not None and value > MAX_VALUE:
            raise ValueError(f"{name} is too large to be a real value")


@dataclass
class Concurrency:
    total_tokens: int
    avg_tokens_per_request: int
    exact: float
    concurrent_requests: int
    max_num_seqs: int | None
    limited_by: str  # "kv_cache", "max_num_seqs" or "too_long" (not even one request fits)
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)
    formula_zh: str = ""


@tool
def kv_concurrency(num_blocks: PositiveInt, avg_tokens_per_request: PositiveInt, block_size: PositiveInt = 64,
                   max_num_seqs: PositiveInt | None = None) -> Concurrency:
    """How many requests fit in the KV cache at once: num_blocks × block_size / average tokens per request, capped by max_num_seqs.

    Args:
        num_blocks: KV-cache blocks the server allocated (FastDeploy logs it as num_blocks_global).
        avg_tokens_per_request: average prompt + output tokens of one request.
        block_size: tokens per block (FastDeploy's default is 64, vLLM's 16).
        max_num_seqs: the server's configured batch ceiling, if known.
    """
    _check({"num_blocks": num_blocks, "avg_tokens_per_request": avg_tokens_per_request, "block_size": block_size,
            "max_num_seqs": max_num_seqs})
    total = num_blocks * block_size
    exact = total / avg_tokens_per_request
    # A request holds whole blocks: 100 blocks of 64 hold 98 requests of 65 tokens by the
    # token count, but each takes 2 blocks, so 50 (trial; blocks_needed said so already).
    # (never more than the token count gives: a request's blocks hold at least its tokens)
    per_request = math.ceil(avg_tokens_per_request / block_size)
    in_kv = fits = num_blocks // per_request
    # Not even one request fits: it never runs, however long it waits ("about 0 requests …
    # wait in the queue until blocks free up" was said of a 40,000-token request in 32,768; trial).
    limited = "kv_cache" if fits >= 1 else "too_long"
    if max_num_seqs is not None and max_num_seqs < fits:
        fits, limited = max_num_seqs, "max_num_seqs"
    steps = f"{num_blocks} × {block_size} = {_fmt(total)}"
    tail = f"{_fmt(total)} ÷ {_fmt(avg_tokens_per_request)} ≈ {exact:.2f} → {math.floor(exact)}"
    formula = _say("kv_concurrency.formula", steps=steps, tail=tail, capped="")
    if in_kv < math.floor(exact):
        formula = _then(formula, "kv_concurrency.whole_blocks_more", tokens=_fmt(avg_tokens_per_request), block_size=block_size,
                        per=per_request, blocks=num_blocks, whole=in_kv)
    if limited == "max_num_seqs":  # the cap comes last, after the whole-block step
        formula = {lang: f"{text}; min({in_kv}, max_num_seqs {max_num_seqs}) = {fits}" for lang, text in formula.items()}
    if limited == "too_long":
        text = _say("kv_concurrency.too_long", total=_fmt(total), tokens=_fmt(avg_tokens_per_request))
    elif limited == "kv_cache":
        text = _say("kv_concurrency.kv_cache", total=_fmt(total), tokens=_fmt(avg_tokens_per_request), fits=fits)
        if max_num_seqs is not None:
            text = _then(text, "kv_concurrency.flag_higher_more", max_num_seqs=max_num_seqs)
    else:
        text = _say("kv_concurrency.capped", exact=min(exact, float(in_kv)), fits=fits)
    return Concurrency(total, avg_tokens_per_request, round(exact, 2), fits, max_num_seqs, limited, formula["en"], text,
                       formula["zh"])


@dataclass
class TokenConcurrency:
    kv_cache_tokens: int
    tokens_per_request: int
    exact: float
    concurrent_requests: int
    max_num_seqs: int | None
    limited_by: str  # "kv_cache", "max_num_seqs" or "too_long" (not even one request fits)
    largest_max_model_len: int
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)
    formula_zh: str = ""


@tool
def kv_tokens_concurrency(kv_cache_tokens: PositiveInt, tokens_per_request: PositiveInt,
                          max_num_seqs: PositiveInt | None = None, block_size: PositiveInt = 16) -> TokenConcurrency:
    """vLLM what-if from its start-up log: requests of tokens_per_request tokens (a new --max-model-len for full-length requests, or an average) that fit at once in a KV cache of kv_cache_tokens (`GPU KV cache size: N tokens`), as vLLM's `Maximum concurrency` line computes it (whole blocks per request); capped by max_num_seqs.

    Args:
        kv_cache_tokens: the KV cache size in tokens, from `GPU KV cache size: N tokens` in vLLM's log.
        tokens_per_request: tokens of one request: the --max-model-len to check, or the average prompt + output tokens.
        max_num_seqs: the server's --max-num-seqs, if known.
        block_size: tokens per KV block (vLLM's --block-size, 16 by default on GPUs).
    """
    _check({"kv_cache_tokens": kv_cache_tokens, "tokens_per_request": tokens_per_request, "max_num_seqs": max_num_seqs,
            "block_size": block_size})
    # vLLM V1 (the release that logs "GPU KV cache size") divides whole blocks by the blocks one
    # request takes, a partial block counted whole: 458,752 tokens hold 455.11 requests of 1,000,
    # not 458.75 (trial, against kv_cache_utils.get_max_concurrency_for_kv_cache_config).
    blocks, per = kv_cache_tokens // block_size, math.ceil(tokens_per_request / block_size)
    exact = blocks / per
    if exact < 1:
        exact = math.floor(exact * 100) / 100  # 0.9994 is no "1.00x → 0" (review)
    largest = blocks * block_size  # the longest request in whole blocks: 26,870 tokens hold 1,679 blocks, 26,864 tokens
    fits = math.floor(exact)
    limited = "kv_cache" if fits >= 1 else "too_long"
    if max_num_seqs is not None and max_num_seqs < fits:
        fits, limited = max_num_seqs, "max_num_seqs"
    capped = f"; min({math.floor(exact)}, max_num_seqs {max_num_seqs}) = {fits}" if limited == "max_num_seqs" else ""
    if kv_cache_tokens % block_size == 0 and tokens_per_request % block_size == 0:
        steps = f"{_fmt(kv_cache_tokens)} ÷ {_fmt(tokens_per_request)} = {exact:.2f}x → {math.floor(exact)}{capped}"
    else:
        steps = (f"{_fmt(kv_cache_tokens)} ÷ {block_size} = {_fmt(blocks)} blocks; ⌈{_fmt(tokens_per_request)} ÷ {block_size}⌉ = {_fmt(per)}; "
                 f"{_fmt(blocks)} ÷ {_fmt(per)} = {exact:.2f}x → {math.floor(exact)}{capped}")
    formula = _say("kv_tokens_concurrency.formula", steps=steps)
    if limited == "too_long":
        text = _say("kv_tokens_concurrency.too_long", tokens=_fmt(tokens_per_request), kv_tokens=_fmt(kv_cache_tokens),
                    max_model_len=tokens_per_request, largest=_fmt(largest))
    elif limited == "kv_cache":
        text = _say("kv_tokens_concurrency.kv_cache", kv_tokens=_fmt(kv_cache_tokens), tokens=_fmt(tokens_per_request),
                    exact=exact, fits=fits)
    else:
        text = _say("kv_tokens_concurrency.capped", exact=exact, fits=fits)
    return TokenConcurrency(kv_cache_tokens, tokens_per_request, round(exact, 2), fits, max_num_seqs, limited, largest,
                            formula["en"], text, formula["zh"])


@dataclass
class BlocksNeeded:
    blocks_per_session: int
    total_blocks: int
    total_tokens: int
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)
    formula_zh: str = ""


@tool
def blocks_needed(sessions: PositiveInt, tokens_per_session: PositiveInt, block_size: PositiveInt = 64) -> BlocksNeeded:
    """KV-cache blocks needed to hold N sessions of T tokens each (a partial block still takes a whole block).

    Args:
        sessions: concurrent sessions (requests) to hold.
        tokens_per_session: prompt + output tokens of each session.
        block_size: tokens per block (FastDeploy 64, vLLM 16 by default).
    """
    _check({"sessions": sessions, "tokens_per_session": tokens_per_session, "block_size": block_size})
    per = math.ceil(tokens_per_session / block_size)
    total = per * sessions
    formula = _say("blocks_needed.formula", tokens_per_session=tokens_per_session, block_size=block_size, per=per,
                   sessions=sessions, total=total)
    text = _say("blocks_needed.explanation", sessions=sessions, tokens=_fmt(tokens_per_session), total=_fmt(total),
                block_size=block_size, per=per)
    return BlocksNeeded(per, total, sessions * tokens_per_session, formula["en"], text, formula["zh"])


@dataclass
class KVMemory:
    total_gib: float
    per_gpu_gib: float
    total_tokens: int
    tensor_parallel_size: int
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)
    formula_zh: str = ""


@tool
def kv_memory_needed(sessions: PositiveInt, tokens_per_session: PositiveInt, kv_bytes_per_token: PositiveInt,
                     tensor_parallel_size: PositiveInt = 1, kv_bytes_per_token_per_gpu: PositiveInt | None = None) -> KVMemory:
    """KV-cache memory that N sessions of T tokens each take, in all and per GPU: the inverse of kv_tokens_from_memory.

    Args:
        sessions: concurrent sessions (requests) to hold.
        tokens_per_session: prompt + output tokens of each session (the context length, for full-length ones).
        kv_bytes_per_token: KV bytes per token for the whole model (see kv_bytes_per_token).
        tensor_parallel_size: GPUs the KV heads are split over.
        kv_bytes_per_token_per_gpu: the per-GPU figure, when known (kv_bytes_per_token gives it: KV heads fewer
            than GPUs are copied, not split); otherwise the whole model's ÷ tensor_parallel_size.
    """
    _check({"sessions": sessions, "tokens_per_session": tokens_per_session, "kv_bytes_per_token": kv_bytes_per_token,
            "tensor_parallel_size": tensor_parallel_size, "kv_bytes_per_token_per_gpu": kv_bytes_per_token_per_gpu})
    tokens = sessions * tokens_per_session
    total = tokens * kv_bytes_per_token / GIB
    per_gpu = tokens * kv_bytes_per_token_per_gpu / GIB if kv_bytes_per_token_per_gpu else total / tensor_parallel_size
    formula = _say("kv_memory_needed.formula", sessions=sessions, tokens=_fmt(tokens_per_session), bytes=_fmt(kv_bytes_per_token),
                   total=total)
    text = _say("kv_memory_needed.explanation", sessions=sessions, tokens=_fmt(tokens_per_session), total=total)
    if tensor_parallel_size > 1:
        formula = _then(formula, "kv_memory_needed.per_gpu_formula", tp=tensor_parallel_size, per_gpu=per_gpu)
        text = _then(text, "kv_memory_needed.per_gpu" if kv_bytes_per_token_per_gpu else "kv_memory_needed.per_gpu_split",
                     tp=tensor_parallel_size, per_gpu=per_gpu)
    return KVMemory(round(total, 3), round(per_gpu, 3), tokens, tensor_parallel_size, formula["en"], text, formula["zh"])


@dataclass
class KVBytes:
    bytes_per_token: int
    bytes_per_token_per_gpu: int
    kib_per_token: float
    num_layers: int
    num_kv_heads: int
    head_dim: int
    dtype_bytes: int
    tensor_parallel_size: int
    mla: bool
    formula: str
    formula_zh: str = ""


_PATH_ERROR = (f"could not read a model config from config_path: it must be a regular file (config.json, or a folder "
               f"holding one) of at most {CONFIG_MAX_BYTES:,} bytes, holding a JSON object")


def read_config_file(path: str) -> str:
    """The text of a config.json named on the command line. Only a regular file (no FIFO, device or
    directory) of at most CONFIG_MAX_BYTES is read, so /dev/zero or a pipe cannot exhaust memory or hang
    a thread. Every failure raises the same message: it never says which paths exist or what they hold."""
    try:
        target = Path(path).expanduser()
        if target.is_dir():
            target = target / "config.json"
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: opening a FIFO must not wait for a writer
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > CONFIG_MAX_BYTES:
                raise ValueError
            data = os.read(fd, CONFIG_MAX_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > CONFIG_MAX_BYTES:
            raise ValueError
        return data.decode("utf-8")
    except (OSError, ValueError, UnicodeError):
        raise ValueError(_PATH_ERROR) from None


def _parse_config(text: str, from_file: bool) -> dict:
    """The config as a dict (a multimodal model's text_config when it has one)."""
    if len(text) > CONFIG_MAX_BYTES:
        raise ValueError(f"config_json is larger than {CONFIG_MAX_BYTES:,} bytes")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        if from_file:
            raise ValueError(_PATH_ERROR) from None
        raise ValueError("config_json must be the JSON text of a model's config.json (on the CLI, config_path reads a file)") from None
    if not isinstance(data, dict):
        raise ValueError(_PATH_ERROR if from_file else "config_json must be a JSON object")
    inner = data.get("text_config")
    return inner if isinstance(inner, dict) else data


def _config_int(cfg: dict, *names: str) -> int | None:
    """A positive integer field of config.json. A field that is not one is refused by name only:
    its value is never echoed (the config may have come from a file the caller cannot read)."""
    for name in names:
        if name in cfg and cfg[name] is not None:
            value = cfg[name]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_VALUE:
                raise ValueError(f"config field {name} is not a positive integer")
            return value
    return None


@tool
def kv_bytes_per_token(
    config_json: str | None = None,
    config_path: Annotated[str | None, LOCAL_PATH] = None,
    num_layers: PositiveInt | None = None,
    num_kv_heads: PositiveInt | None = None,
    head_dim: PositiveInt | None = None,
    dtype: str = "auto",
    tensor_parallel_size: PositiveInt = 1,
    kv_lora_rank: PositiveInt | None = None,
    qk_rope_head_dim: PositiveInt | None = None,
) -> KVBytes:
    """KV-cache bytes per token: 2 × layers × KV heads × head_dim × dtype bytes (MLA models: layers × (kv_lora_rank + qk_rope_head_dim) × dtype bytes), from a model's config.json or explicit numbers.

    Args:
        config_json: the JSON text of the model's config.json (inline; never a path).
        config_path: a config.json file, or a model folder holding one, on this machine (command line only).
        num_layers: num_hidden_layers, when not read from the config.
        num_kv_heads: num_key_value_heads (equals num_attention_heads without GQA).
        head_dim: per-head dimension (hidden_size / num_attention_heads when absent).
        dtype: KV-cache dtype: auto (the model's torch_dtype, 16-bit for a float32 model as vLLM serves it), bfloat16, float16, float32 or fp8.
        tensor_parallel_size: GPUs the KV heads are split across.
        kv_lora_rank: MLA latent rank (DeepSeek-style models), read from config when present.
        qk_rope_head_dim: MLA rotary key dimension, read from config when present.
    """
    _check({"num_layers": num_layers, "num_kv_heads": num_kv_heads, "head_dim": head_dim,
            "tensor_parallel_size": tensor_parallel_size, "kv_lora_rank": kv_lora_rank, "qk_rope_head_dim": qk_rope_head_dim})
    if config_json and config_path:
        raise ValueError("give config_json or config_path, not both")
    cfg: dict = {}
    if config_json:
        cfg = _parse_config(config_json, from_file=False)
    elif config_path:
        cfg = _parse_config(read_config_file(config_path), from_file=True)
    layers = num_layers or _config_int(cfg, "num_hidden_layers", "n_layer", "num_layers")
    heads = _config_int(cfg, "num_attention_heads", "n_head")
    kv_heads = num_kv_heads or _config_int(cfg, "num_key_value_heads") or heads
    hidden = _config_int(cfg, "hidden_size")
    hdim = head_dim or _config_int(cfg, "head_dim") or (hidden // heads if hidden and heads else None)
    lora = kv_lora_rank or _config_int(cfg, "kv_lora_rank")
    rope = qk_rope_head_dim or _config_int(cfg, "qk_rope_head_dim")
    from_config = dtype == "auto"
    if from_config:
        raw = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
        dtype = raw if isinstance(raw, str) else ""
    dbytes = DTYPE_BYTES.get(dtype.lower().replace("torch.", ""))
    if dbytes is None:
        if from_config:
            raise ValueError(f"the config's torch_dtype is not one of {sorted(DTYPE_BYTES)}; pass dtype")
        raise ValueError(f"unknown dtype {dtype[:40]!r}; use one of {sorted(DTYPE_BYTES)}")
    if from_config and dbytes == 4:
        # vLLM's --dtype auto serves a float32 checkpoint in 16 bits ("we use float16 for
        # float32 models"; bfloat16 in newer releases), and --kv-cache-dtype auto follows the
        # model: 2 bytes, not the config's 4, which doubled every figure after it (trial).
        dbytes = 2
    if not layers:
        raise ValueError("need num_layers (or a config with num_hidden_layers)")
    tp = tensor_parallel_size
    if lora and rope:
        per_token = layers * (lora + rope) * dbytes
        per_gpu = per_token  # the MLA latent cache is not split across tensor-parallel ranks
        formula = _say("kv_bytes_per_token.formula_mla", layers=layers, lora=lora, rope=rope, dtype_bytes=dbytes, bytes=_fmt(per_token))
        return KVBytes(per_token, per_gpu, per_token / 1024, layers, 1, lora + rope, dbytes, tp, True, formula["en"], formula["zh"])
    if not kv_heads or not hdim:
        raise ValueError("need num_kv_heads and head_dim (or a config with them)")
    per_token = 2 * layers * kv_heads * hdim * dbytes
    heads_per_gpu = max(1, math.ceil(kv_heads / tp))  # a KV head is replicated when TP > heads
    per_gpu = 2 * layers * heads_per_gpu * hdim * dbytes
    steps = f"2 × {layers} × {kv_heads} × {hdim} × {dbytes} B = {_fmt(per_token)} B ({per_token / 1024:g} KiB)"
    formula = _say("kv_bytes_per_token.formula", steps=steps)
    if tp > 1:
        formula = _then(formula, "kv_bytes_per_token.per_gpu_more", tp=tp, layers=layers, kv_heads=kv_heads, head_dim=hdim,
                        dtype_bytes=dbytes, per_gpu=_fmt(per_gpu))
    return KVBytes(per_token, per_gpu, per_token / 1024, layers, kv_heads, hdim, dbytes, tp, False, formula["en"], formula["zh"])


@dataclass
class KVCapacity:
    kv_budget_gib: float
    kv_tokens: int
    max_concurrency_at_max_model_len: float | None
    largest_max_model_len: int
    fits_one_request: bool | None
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)
    formula_zh: str = ""
    # False when the weights (and overhead) alone exceed the usable memory: kv_tokens is 0
    # because nothing fits, not because of a KV cache that holds nothing.
    weights_fit: bool = True


@tool
def kv_cache_capacity(
    gpu_memory_gib: PositiveFloat,
    weights_gib: PositiveFloat,
    kv_bytes_per_token: PositiveInt,
    gpu_memory_utilization: Share = 0.9,
    max_model_len: PositiveInt | None = None,
    tensor_parallel_size: PositiveInt = 1,
    overhead_gib: NonNegativeFloat = 0.0,
) -> KVCapacity:
    """KV-cache tokens a vLLM deployment can hold per GPU, the concurrency that gives at max_model_len, and the largest max_model_len that fits one request (vLLM's start-up check).

    Args:
        gpu_memory_gib: memory of one GPU in GiB (80 for an A100-80GB).
        weights_gib: size of the model weights in GiB (all GPUs together; vLLM's "Model loading took N GiB" is one GPU's).
        kv_bytes_per_token: KV bytes per token per GPU (see kv_bytes_per_token).
        gpu_memory_utilization: share of GPU memory vLLM may use (its default is 0.9).
        max_model_len: the context length to check.
        tensor_parallel_size: GPUs the weights are split across.
        overhead_gib: activations, CUDA graphs and other non-KV memory per GPU, if known.
    """
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError("gpu_memory_utilization must be in (0, 1]")
    _check({"gpu_memory_gib": gpu_memory_gib, "weights_gib": weights_gib, "kv_bytes_per_token": kv_bytes_per_token,
            "max_model_len": max_model_len, "tensor_parallel_size": tensor_parallel_size})
    _check(non_negative={"overhead_gib": overhead_gib})
    tp = tensor_parallel_size
    budget = gpu_memory_gib * gpu_memory_utilization - weights_gib / tp - overhead_gib
    tokens = max(0, int(budget * GIB // kv_bytes_per_token))
    numbers = (f"{_fmt(gpu_memory_gib)} × {gpu_memory_utilization} − {_fmt(weights_gib)}/{tp} − {_fmt(overhead_gib)} = {budget:.2f} GiB; "
               f"{budget:.2f} GiB ÷ {_fmt(kv_bytes_per_token)} B = {_fmt(tokens)}")
    result = _kv_result(budget, tokens, kv_bytes_per_token, max_model_len, _say("kv_cache_capacity.formula", numbers=numbers),
                        "kv_cache_capacity.too_long_more")
    if budget <= 0:
        result.weights_fit, result.fits_one_request = False, False if max_model_len else None
        one_request = max_model_len * kv_bytes_per_token / GIB if max_model_len else 0.0
        result.explanation = _weights_do_not_fit(gpu_memory_gib, gpu_memory_utilization, weights_gib, tp, overhead_gib, one_request)
    elif not overhead_gib:
        result.explanation = _then(result.explanation, "kv_cache_capacity.no_overhead_more")
    return result


def _weights_do_not_fit(gpu_gib: float, util: float, weights_gib: float, tp: int, overhead_gib: float,
                        one_request_gib: float = 0.0) -> dict[str, str]:
    """What to say when the weights leave nothing for the KV cache ("About 0 tokens fit
    (-28.00 GiB)" read as a result): by how much, and only the changes that would help.
    A change helps when one request of max_model_len fits beside the weights too
    (`one_request_gib`): "0.94 or more would leave room" for 75 GiB of weights on 80 GiB left
    0.2 GiB of KV cache, and vLLM refuses to start with that (review)."""
    usable = gpu_gib * util
    from assistant.i18n import LANGS, t

    overhead = _say("kv_cache_capacity.weights_overhead", overhead=overhead_gib) if overhead_gib else dict.fromkeys(LANGS, "")
    text = {lang: t("tools.kv_cache_capacity.weights_do_not_fit", lang, weights=weights_gib / tp, overhead=overhead[lang],
                    usable=usable, gpu=_fmt(gpu_gib), util=util, short=weights_gib / tp + overhead_gib - usable)
            for lang in LANGS}
    helped = False
    if usable > overhead_gib + one_request_gib:  # more GPUs shrink the weights per GPU until they fit beside the rest
        needed = math.floor(weights_gib / (usable - overhead_gib - one_request_gib)) + 1
        text, helped = _then(text, "kv_cache_capacity.tp_helps_more", tp=needed, per_gpu=weights_gib / needed), True
    # Rounded up, never to nearest: "above 0.93" for a need of 0.935 named a value that fails.
    util_needed = math.ceil((weights_gib / tp + overhead_gib + one_request_gib) / gpu_gib * 100 - 1e-9) / 100
    # Only up to 0.95: the budget must also hold activations, the sampler's profiling run and
    # CUDA graphs (not known here), and "0.96 or more" for 14.18 GiB of weights on a T4 left
    # 0.006 GiB for them, which no utilization makes start (trial).
    if util_needed <= 0.95:
        text, helped = _then(text, "kv_cache_capacity.utilization_helps_more", util=util_needed), True
    return text if helped else _then(text, "kv_cache_capacity.nothing_helps_more")


def _kv_result(budget: float, tokens: int, kv_bytes_per_token: int, max_model_len: int | None, formula: dict[str, str],
               too_long: str) -> KVCapacity:
    """KV tokens and, at max_model_len, the concurrency and whether one request fits, worded
    in both languages (`too_long`: the catalog entry for a request that does not fit)."""
    conc = tokens / max_model_len if max_model_len else None
    fits = (max_model_len <= tokens) if max_model_len else None
    text = _say("kv_cache_capacity.explanation", tokens=_fmt(tokens), budget=budget)
    if max_model_len:
        formula = _then(formula, "kv_cache_capacity.concurrency_more", tokens=_fmt(tokens), max_model_len=max_model_len, concurrency=conc)
        if fits:
            text = _then(text, "kv_cache_capacity.fits_more", max_model_len=max_model_len, concurrency=conc)
        else:
            text = _then(text, too_long, max_model_len=max_model_len, tokens=_fmt(tokens),
                         need=max_model_len * kv_bytes_per_token / GIB, available=max(budget, 0))
    return KVCapacity(round(budget, 3), tokens, round(conc, 2) if conc is not None else None, tokens, fits, formula["en"],
                      text, formula["zh"])


@tool
def kv_tokens_from_memory(kv_cache_gib: PositiveFloat, kv_bytes_per_token: PositiveInt,
                          max_model_len: PositiveInt | None = None) -> KVCapacity:
    """KV-cache tokens that a known amount of KV-cache memory holds, and the concurrency that gives at max_model_len.

    Args:
        kv_cache_gib: KV-cache memory per GPU in GiB (vLLM's start-up log: "Available KV cache memory: N GiB").
        kv_bytes_per_token: KV bytes per token per GPU (see kv_bytes_per_token).
        max_model_len: the context length to check.
    """
    _check({"kv_cache_gib": kv_cache_gib, "kv_bytes_per_token": kv_bytes_per_token, "max_model_len": max_model_len})
    tokens = max(0, int(kv_cache_gib * GIB // kv_bytes_per_token))
    formula = _say("kv_tokens_from_memory.formula", numbers=f"{_fmt(kv_cache_gib)} GiB ÷ {_fmt(kv_bytes_per_token)} B = {_fmt(tokens)}")
    return _kv_result(kv_cache_gib, tokens, kv_bytes_per_token, max_model_len, formula, "kv_tokens_from_memory.too_long_more")


@dataclass
class DecodeBudget:
    decode_tokens: int
    prefill_tokens: int
    max_num_seqs_supported: int | None
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)
    formula_zh: str = ""


@tool
def fastdeploy_decode_budget(total_blocks: PositiveInt, kv_cache_ratio: PrefillRatio, block_size: PositiveInt = 64,
                             avg_output_tokens: PositiveInt | None = None) -> DecodeBudget:
    """FastDeploy's output (decode) token budget: total_blocks × (1 − kv_cache_ratio) × block_size, and the max_num_seqs it supports at an average output length.

    Args:
        total_blocks: KV-cache blocks (num_blocks_global in log/worker_process.log).
        kv_cache_ratio: the share of blocks reserved for prompts (prefill).
        block_size: tokens per block (64 by default).
        avg_output_tokens: average output tokens per request.
    """
    if not 0 <= kv_cache_ratio < 1:
        raise ValueError("kv_cache_ratio must be in [0, 1)")
    _check({"total_blocks": total_blocks, "block_size": block_size, "avg_output_tokens": avg_output_tokens})
    decode = int(total_blocks * (1 - kv_cache_ratio) * block_size)
    prefill = int(total_blocks * kv_cache_ratio * block_size)
    seqs = decode // avg_output_tokens if avg_output_tokens else None
    steps = f"{total_blocks} × (1 − {kv_cache_ratio}) × {block_size} = {_fmt(decode)}"
    formula = _say("fastdeploy_decode_budget.formula", steps=steps)
    text = _say("fastdeploy_decode_budget.explanation", decode=_fmt(decode))
    if seqs is not None:
        formula = _then(formula, "fastdeploy_decode_budget.seqs_formula_more", decode=_fmt(decode), avg_output_tokens=avg_output_tokens,
                        seqs=seqs)
        text = _then(text, "fastdeploy_decode_budget.seqs_more", avg_output_tokens=avg_output_tokens, seqs=seqs)
    return DecodeBudget(decode, prefill, seqs, formula["en"], text, formula["zh"])


def _message_bytes(mtp: bool, batch: int, top_logprobs: int, mtp_tokens: int) -> int:
    """Bytes of one FastDeploy IPC message with logprobs on (the FastDeploy FAQ's formula)."""
    b, k, m = batch, top_logprobs, mtp_tokens
    if mtp:
        return (b * m * (k + 1) + b + 3) * 8 + b * m * (k + 1) * 4 + b * m * 8
    return ((b * (k + 1)) + 2) * 8 + b * (k + 1) * 4 + b * 8


# One logprobs message at the FAQ's example settings (512 batch slots, top 20 logprobs, 6 MTP tokens):
# 133,136 bytes, 802,840 with MTP. A kernel.msgmax below the MTP size makes such a server hang (doctor warns).
LOGPROBS_MESSAGE_BYTES = _message_bytes(False, 512, 20, 6)
LOGPROBS_MESSAGE_BYTES_MTP = _message_bytes(True, 512, 20, 6)


@dataclass
class MessageSize:
    bytes: int
    mtp: bool
    msgmax: int
    msgmnb: int | None
    fits: bool
    messages_per_queue: int | None  # msgmnb ÷ message size, when msgmnb is known
    recommended_msgmax: int
    recommended_msgmnb: int
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)
    formula_zh: str = ""


@tool
def logprobs_message_size(
    mtp: bool = False,
    max_batch: PositiveInt = 512,
    top_logprobs: NonNegativeInt = 20,
    mtp_tokens: PositiveInt = 6,
    msgmax: PositiveInt | None = None,
    msgmnb: PositiveInt | None = None,
) -> MessageSize:
    """Size of one FastDeploy inter-process message with logprobs on, compared with the System V limit kernel.msgmax (8192 bytes by default; a larger message blocks and requests hang), and how many such messages one queue holds (kernel.msgmnb ÷ size). FastDeploy sends every such message at the fixed size it was compiled with (512 slots, 20 logprobs), whatever the server's batch size or a request's top_logprobs: keep the defaults unless FastDeploy was rebuilt with other sizes.

    Args:
        mtp: whether MTP (multi-token prediction) is enabled.
        max_batch: batch slots in the message: FastDeploy's compile-time MAX_BSZ (512), not the server's batch size.
        top_logprobs: logprobs slots per token: FastDeploy's compile-time K (20), not a request's top_logprobs.
        mtp_tokens: tokens per step with MTP (6 in FastDeploy's FAQ).
        msgmax: the host's kernel.msgmax; 8192 when unknown.
        msgmnb: the host's kernel.msgmnb (bytes one queue may hold), if known.
    """
    _check({"max_batch": max_batch, "mtp_tokens": mtp_tokens, "msgmax": msgmax, "msgmnb": msgmnb}, {"top_logprobs": top_logprobs})
    b, k, m = max_batch, top_logprobs, mtp_tokens
    size = _message_bytes(mtp, b, k, m)
    if mtp:
        steps = f"({b} × {m} × ({k} + 1) + {b} + 3) × 8 + {b} × {m} × ({k} + 1) × 4 + {b} × {m} × 8 = {size:,}"
        symbolic = "(batch × mtp_tokens × (top_logprobs + 1) + batch + 3) × 8 + batch × mtp_tokens × (top_logprobs + 1) × 4 + batch × mtp_tokens × 8"
    else:
        steps = f"(({b} × ({k} + 1)) + 2) × 8 + {b} × ({k} + 1) × 4 + {b} × 8 = {size:,}"
        symbolic = "((batch × (top_logprobs + 1)) + 2) × 8 + batch × (top_logprobs + 1) × 4 + batch × 8"
    limit = msgmax or DEFAULT_MSGMAX
    fits = size <= limit
    per_queue = msgmnb // size if msgmnb else None
    formula = _say("logprobs_message_size.formula", symbolic=symbolic, steps=steps)
    if fits:
        text = _say("logprobs_message_size.fits", size=size, limit=limit)
    else:
        text = _say("logprobs_message_size.too_big", size=size, limit=limit, recommended_msgmax=RECOMMENDED_MSGMAX,
                    recommended_msgmnb=RECOMMENDED_MSGMNB)
    if per_queue is not None:
        formula = _then(formula, "logprobs_message_size.queue_formula_more", msgmnb=msgmnb, size=size, per_queue=per_queue)
        more = "logprobs_message_size.queue_more" if per_queue >= 1 else "logprobs_message_size.queue_too_small_more"
        text = _then(text, more, msgmnb=msgmnb, per_queue=per_queue)
    return MessageSize(size, mtp, limit, msgmnb, fits, per_queue, RECOMMENDED_MSGMAX, RECOMMENDED_MSGMNB, formula["en"],
                       text, formula["zh"])
