"""Capacity math for KV caches, concurrency and FastDeploy's IPC messages.

Every result carries the formula it used and a short explanation in both languages, so
the extractive path can answer a sizing question without an LLM and an LLM can quote it.
Figures are checked in tests against the sources: 17131 blocks × 64 = 1,096,384 tokens →
54 requests of 20,000 tokens; logprobs messages of 133,136 (non-MTP) and 802,840 (MTP)
bytes; Llama-3.1-8B in bf16 needs 128 KiB of KV cache per token.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from . import tool

GIB = 1024**3
DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
               "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}
DEFAULT_MSGMAX = 8192
RECOMMENDED_MSGMAX = 1048576
RECOMMENDED_MSGMNB = 268435456


def _fmt(n: float) -> str:
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


@dataclass
class Concurrency:
    total_tokens: int
    avg_tokens_per_request: int
    exact: float
    concurrent_requests: int
    max_num_seqs: int | None
    limited_by: str  # "kv_cache" or "max_num_seqs"
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)


@tool
def kv_concurrency(num_blocks: int, avg_tokens_per_request: int, block_size: int = 64, max_num_seqs: int | None = None) -> Concurrency:
    """How many requests fit in the KV cache at once: num_blocks × block_size / average tokens per request, capped by max_num_seqs.

    Args:
        num_blocks: KV-cache blocks the server allocated (FastDeploy logs it as num_blocks_global).
        avg_tokens_per_request: average prompt + output tokens of one request.
        block_size: tokens per block (FastDeploy's default is 64, vLLM's 16).
        max_num_seqs: the server's configured batch ceiling, if known.
    """
    if num_blocks <= 0 or block_size <= 0 or avg_tokens_per_request <= 0:
        raise ValueError("num_blocks, block_size and avg_tokens_per_request must be positive")
    total = num_blocks * block_size
    exact = total / avg_tokens_per_request
    fits = math.floor(exact)
    limited = "kv_cache"
    if max_num_seqs is not None and max_num_seqs < fits:
        fits, limited = max_num_seqs, "max_num_seqs"
    formula = f"{num_blocks} × {block_size} = {_fmt(total)} tokens; {_fmt(total)} / {_fmt(avg_tokens_per_request)} ≈ {exact:.1f}"
    if limited == "kv_cache":
        en = (f"The KV cache holds {_fmt(total)} tokens, so about {fits} requests of {_fmt(avg_tokens_per_request)} tokens "
              f"run at once; further requests wait in the queue until blocks free up.")
        zh = f"KV Cache 可缓存 {_fmt(total)} 个 token，平均 {_fmt(avg_tokens_per_request)} token 的请求同时大约能跑 {fits} 个；更多的请求会排队，等 block 释放。"
        if max_num_seqs is not None:
            en += f" max_num_seqs ({max_num_seqs}) is higher, so the KV cache, not the flag, is the limit."
            zh += f" max_num_seqs（{max_num_seqs}）比这个大，真正的上限是 KV Cache 而不是这个参数。"
    else:
        en = (f"The KV cache would hold about {exact:.1f} such requests, but max_num_seqs caps the batch at {fits}; "
              f"requests beyond {fits} queue.")
        zh = f"KV Cache 能容纳约 {exact:.1f} 个这样的请求，但 max_num_seqs 把批大小限制在 {fits}，超出的请求排队。"
    return Concurrency(total, avg_tokens_per_request, round(exact, 2), fits, max_num_seqs, limited, formula, {"en": en, "zh": zh})


@dataclass
class BlocksNeeded:
    blocks_per_session: int
    total_blocks: int
    total_tokens: int
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)


@tool
def blocks_needed(sessions: int, tokens_per_session: int, block_size: int = 64) -> BlocksNeeded:
    """KV-cache blocks needed to hold N sessions of T tokens each (a partial block still takes a whole block).

    Args:
        sessions: concurrent sessions (requests) to hold.
        tokens_per_session: prompt + output tokens of each session.
        block_size: tokens per block (FastDeploy 64, vLLM 16 by default).
    """
    if sessions <= 0 or tokens_per_session <= 0 or block_size <= 0:
        raise ValueError("sessions, tokens_per_session and block_size must be positive")
    per = math.ceil(tokens_per_session / block_size)
    total = per * sessions
    formula = f"ceil({tokens_per_session} / {block_size}) = {per} blocks per session; {per} × {sessions} = {total} blocks"
    return BlocksNeeded(per, total, sessions * tokens_per_session, formula, {
        "en": f"{sessions} sessions of {_fmt(tokens_per_session)} tokens need {_fmt(total)} blocks of {block_size} tokens ({per} each).",
        "zh": f"{sessions} 个 {_fmt(tokens_per_session)} token 的会话需要 {_fmt(total)} 个大小为 {block_size} 的 block（每个 {per} 个）。",
    })


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


def _load_config(config_json: str) -> dict:
    text = config_json.strip()
    if not text.startswith("{"):
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "config.json"
        text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    return data.get("text_config", data) if isinstance(data, dict) else {}


@tool
def kv_bytes_per_token(
    config_json: str | None = None,
    num_layers: int | None = None,
    num_kv_heads: int | None = None,
    head_dim: int | None = None,
    dtype: str = "auto",
    tensor_parallel_size: int = 1,
    kv_lora_rank: int | None = None,
    qk_rope_head_dim: int | None = None,
) -> KVBytes:
    """KV-cache bytes per token: 2 × layers × KV heads × head_dim × dtype bytes (MLA models: layers × (kv_lora_rank + qk_rope_head_dim) × dtype bytes), from a model's config.json or explicit numbers.

    Args:
        config_json: a path to config.json (or its folder), or the JSON text itself.
        num_layers: num_hidden_layers, when not read from config_json.
        num_kv_heads: num_key_value_heads (equals num_attention_heads without GQA).
        head_dim: per-head dimension (hidden_size / num_attention_heads when absent).
        dtype: KV-cache dtype: auto (the model's torch_dtype), bfloat16, float16, float32 or fp8.
        tensor_parallel_size: GPUs the KV heads are split across.
        kv_lora_rank: MLA latent rank (DeepSeek-style models), read from config when present.
        qk_rope_head_dim: MLA rotary key dimension, read from config when present.
    """
    cfg = _load_config(config_json) if config_json else {}
    layers = num_layers or cfg.get("num_hidden_layers") or cfg.get("n_layer") or cfg.get("num_layers")
    heads = cfg.get("num_attention_heads") or cfg.get("n_head")
    kv_heads = num_kv_heads or cfg.get("num_key_value_heads") or heads
    hdim = head_dim or cfg.get("head_dim") or (cfg.get("hidden_size") // heads if cfg.get("hidden_size") and heads else None)
    lora = kv_lora_rank or cfg.get("kv_lora_rank")
    rope = qk_rope_head_dim or cfg.get("qk_rope_head_dim")
    if dtype == "auto":
        dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    dbytes = DTYPE_BYTES.get(dtype.lower().replace("torch.", ""))
    if dbytes is None:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(DTYPE_BYTES)}")
    if not layers:
        raise ValueError("need num_layers (or a config.json with num_hidden_layers)")
    tp = max(1, tensor_parallel_size)
    if lora and rope:
        per_token = int(layers) * (int(lora) + int(rope)) * dbytes
        per_gpu = per_token  # the MLA latent cache is not split across tensor-parallel ranks
        formula = f"{layers} layers × ({lora} + {rope}) × {dbytes} B = {_fmt(per_token)} B per token (MLA: one latent, no K/V factor 2)"
        return KVBytes(per_token, per_gpu, per_token / 1024, int(layers), 1, int(lora) + int(rope), dbytes, tp, True, formula)
    if not kv_heads or not hdim:
        raise ValueError("need num_kv_heads and head_dim (or a config.json with them)")
    per_token = 2 * int(layers) * int(kv_heads) * int(hdim) * dbytes
    heads_per_gpu = max(1, math.ceil(int(kv_heads) / tp))  # a KV head is replicated when TP > heads
    per_gpu = 2 * int(layers) * heads_per_gpu * int(hdim) * dbytes
    formula = f"2 × {layers} layers × {kv_heads} KV heads × {hdim} head_dim × {dbytes} B = {_fmt(per_token)} B per token"
    if tp > 1:
        formula += f"; {_fmt(per_gpu)} B per GPU at tensor_parallel_size {tp}"
    return KVBytes(per_token, per_gpu, per_token / 1024, int(layers), int(kv_heads), int(hdim), dbytes, tp, False, formula)


@dataclass
class KVCapacity:
    kv_budget_gib: float
    kv_tokens: int
    max_concurrency_at_max_model_len: float | None
    largest_max_model_len: int
    fits_one_request: bool | None
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)


@tool
def kv_cache_capacity(
    gpu_memory_gib: float,
    weights_gib: float,
    kv_bytes_per_token: int,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
    tensor_parallel_size: int = 1,
    overhead_gib: float = 0.0,
) -> KVCapacity:
    """KV-cache tokens a vLLM deployment can hold per GPU, the concurrency that gives at max_model_len, and the largest max_model_len that fits one request (vLLM's start-up check).

    Args:
        gpu_memory_gib: memory of one GPU in GiB (80 for an A100-80GB).
        weights_gib: size of the model weights in GiB (all GPUs together).
        kv_bytes_per_token: KV bytes per token per GPU (see kv_bytes_per_token).
        gpu_memory_utilization: share of GPU memory vLLM may use (its default is 0.9).
        max_model_len: the context length to check.
        tensor_parallel_size: GPUs the weights are split across.
        overhead_gib: activations, CUDA graphs and other non-KV memory per GPU, if known.
    """
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError("gpu_memory_utilization must be in (0, 1]")
    if kv_bytes_per_token <= 0 or gpu_memory_gib <= 0:
        raise ValueError("gpu_memory_gib and kv_bytes_per_token must be positive")
    tp = max(1, tensor_parallel_size)
    budget = gpu_memory_gib * gpu_memory_utilization - weights_gib / tp - overhead_gib
    tokens = max(0, int(budget * GIB // kv_bytes_per_token))
    conc = tokens / max_model_len if max_model_len else None
    fits = (max_model_len <= tokens) if max_model_len else None
    formula = (f"{gpu_memory_gib} GiB × {gpu_memory_utilization} − {weights_gib}/{tp} GiB weights − {overhead_gib} GiB = "
               f"{budget:.2f} GiB; {budget:.2f} GiB / {kv_bytes_per_token} B = {_fmt(tokens)} tokens")
    en = f"About {_fmt(tokens)} tokens of KV cache fit per GPU ({budget:.2f} GiB)."
    zh = f"每张卡大约能放 {_fmt(tokens)} 个 token 的 KV Cache（{budget:.2f} GiB）。"
    if max_model_len:
        formula += f"; {_fmt(tokens)} / {max_model_len} = {conc:.2f} requests at max_model_len"
        if fits:
            en += f" At max_model_len {max_model_len} that is {conc:.1f} full-length requests at once."
            zh += f" 按 max_model_len {max_model_len} 计算，同时能容纳 {conc:.1f} 个满长度请求。"
        else:
            need = max_model_len * kv_bytes_per_token / GIB
            en += (f" max_model_len {max_model_len} needs {need:.2f} GiB for one request, more than the {max(budget, 0):.2f} GiB "
                   f"available: vLLM refuses to start. Lower --max-model-len to {_fmt(tokens)} or less, or raise "
                   f"--gpu-memory-utilization, or add GPUs.")
            zh += (f" max_model_len {max_model_len} 单个请求就需要 {need:.2f} GiB，超过可用的 {max(budget, 0):.2f} GiB，vLLM 会拒绝启动。"
                   f"把 --max-model-len 降到 {_fmt(tokens)} 以下，或调高 --gpu-memory-utilization，或增加 GPU。")
    return KVCapacity(round(budget, 3), tokens, round(conc, 2) if conc is not None else None, tokens, fits, formula, {"en": en, "zh": zh})


@dataclass
class DecodeBudget:
    decode_tokens: int
    prefill_tokens: int
    max_num_seqs_supported: int | None
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)


@tool
def fastdeploy_decode_budget(total_blocks: int, kv_cache_ratio: float, block_size: int = 64, avg_output_tokens: int | None = None) -> DecodeBudget:
    """FastDeploy's output (decode) token budget: total_blocks × (1 − kv_cache_ratio) × block_size, and the max_num_seqs it supports at an average output length.

    Args:
        total_blocks: KV-cache blocks (num_blocks_global in log/worker_process.log).
        kv_cache_ratio: the share of blocks reserved for prompts (prefill).
        block_size: tokens per block (64 by default).
        avg_output_tokens: average output tokens per request.
    """
    if not 0 <= kv_cache_ratio < 1:
        raise ValueError("kv_cache_ratio must be in [0, 1)")
    decode = int(total_blocks * (1 - kv_cache_ratio) * block_size)
    prefill = int(total_blocks * kv_cache_ratio * block_size)
    seqs = decode // avg_output_tokens if avg_output_tokens else None
    formula = f"{total_blocks} × (1 − {kv_cache_ratio}) × {block_size} = {_fmt(decode)} decode tokens"
    en = f"{_fmt(decode)} tokens are left for outputs."
    zh = f"留给输出（解码）的 token 有 {_fmt(decode)} 个。"
    if seqs is not None:
        formula += f"; {_fmt(decode)} / {avg_output_tokens} = {seqs}"
        en += f" At {avg_output_tokens} output tokens per request that supports max_num_seqs ≈ {seqs}; if outputs run short of blocks (free_list_len: 0), lower kv_cache_ratio."
        zh += f" 平均每个请求输出 {avg_output_tokens} token 时，可支撑 max_num_seqs ≈ {seqs}；如果出现 free_list_len: 0，调小 kv_cache_ratio。"
    return DecodeBudget(decode, prefill, seqs, formula, {"en": en, "zh": zh})


@dataclass
class MessageSize:
    bytes: int
    mtp: bool
    msgmax: int
    msgmnb: int | None
    fits: bool
    recommended_msgmax: int
    recommended_msgmnb: int
    formula: str
    explanation: dict[str, str] = field(default_factory=dict)


@tool
def logprobs_message_size(
    mtp: bool = False,
    max_batch: int = 512,
    top_logprobs: int = 20,
    mtp_tokens: int = 6,
    msgmax: int | None = None,
    msgmnb: int | None = None,
) -> MessageSize:
    """Size of one FastDeploy inter-process message with logprobs on, compared with the System V limit kernel.msgmax (8192 bytes by default; a larger message blocks and requests hang).

    Args:
        mtp: whether MTP (multi-token prediction) is enabled.
        max_batch: batch slots in the message (512 in FastDeploy's example).
        top_logprobs: logprobs returned per token (20 in the example).
        mtp_tokens: tokens per step with MTP (6 in the example).
        msgmax: the host's kernel.msgmax; 8192 when unknown.
        msgmnb: the host's kernel.msgmnb, if known.
    """
    b, k, m = max_batch, top_logprobs, mtp_tokens
    if mtp:
        size = (b * m * (k + 1) + b + 3) * 8 + b * m * (k + 1) * 4 + b * m * 8
        formula = f"({b} × {m} × ({k} + 1) + {b} + 3) × 8 + {b} × {m} × ({k} + 1) × 4 + {b} × {m} × 8 = {size:,} bytes"
    else:
        size = ((b * (k + 1)) + 2) * 8 + b * (k + 1) * 4 + b * 8
        formula = f"(({b} × ({k} + 1)) + 2) × 8 + {b} × ({k} + 1) × 4 + {b} × 8 = {size:,} bytes"
    limit = msgmax or DEFAULT_MSGMAX
    fits = size <= limit
    if fits:
        en = f"One message is {size:,} bytes, within kernel.msgmax ({limit:,})."
        zh = f"单条消息 {size:,} 字节，没有超过 kernel.msgmax（{limit:,}）。"
    else:
        en = (f"One message is {size:,} bytes, larger than kernel.msgmax ({limit:,}): the IPC blocks and requests hang. "
              f"Raise it: sysctl -w kernel.msgmax={RECOMMENDED_MSGMAX} and sysctl -w kernel.msgmnb={RECOMMENDED_MSGMNB} "
              f"(in Docker: --privileged, or set them in the container's start-up options).")
        zh = (f"单条消息 {size:,} 字节，超过 kernel.msgmax（{limit:,}），进程间通信会阻塞，请求卡住。"
              f"调大限制：sysctl -w kernel.msgmax={RECOMMENDED_MSGMAX}，sysctl -w kernel.msgmnb={RECOMMENDED_MSGMNB}"
              f"（Docker 中需 --privileged 或在启动参数里设置）。")
    return MessageSize(size, mtp, limit, msgmnb, fits, RECOMMENDED_MSGMAX, RECOMMENDED_MSGMNB, formula, {"en": en, "zh": zh})
