"""The JSON schema each tool shows a model (and GET /v1/tools) is the one it showed before the
schemas came from pydantic: same properties, types, bounds, defaults, descriptions and `required`.

SCHEMAS was recorded from the hand-written schema builder this replaced. A deliberate change to a
tool's signature or docstring changes its entry here too; a new tool needs no entry.
"""

from __future__ import annotations

import json

import pytest

from assistant.tools import registry, remote_caller, schema_for

SCHEMAS = {
    "blocks_needed": {
        "type": "object",
        "properties": {
            "sessions": {"type": "integer", "minimum": 1, "description": "concurrent sessions (requests) to hold."},
            "tokens_per_session": {"type": "integer", "minimum": 1, "description": "prompt + output tokens of each session."},
            "block_size": {"type": "integer", "minimum": 1, "description": "tokens per block (FastDeploy 64, vLLM 16 by default).", "default": 64},
        },
        "additionalProperties": False,
        "required": ["sessions", "tokens_per_session"],
    },
    "diagnose_log": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "the log text itself (pasted lines)."},
            "path": {"type": "string", "description": "a log file to read instead (its last 2 MB)."},
        },
        "additionalProperties": False,
    },
    "fastdeploy_decode_budget": {
        "type": "object",
        "properties": {
            "total_blocks": {"type": "integer", "minimum": 1, "description": "KV-cache blocks (num_blocks_global in log/worker_process.log)."},
            "kv_cache_ratio": {"type": "number", "minimum": 0, "exclusiveMaximum": 1, "description": "the share of blocks reserved for prompts (prefill)."},
            "block_size": {"type": "integer", "minimum": 1, "description": "tokens per block (64 by default).", "default": 64},
            "avg_output_tokens": {"type": "integer", "minimum": 1, "description": "average output tokens per request."},
        },
        "additionalProperties": False,
        "required": ["total_blocks", "kv_cache_ratio"],
    },
    "gpu_status": {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    },
    "host_status": {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    },
    "kv_bytes_per_token": {
        "type": "object",
        "properties": {
            "config_json": {"type": "string", "description": "the JSON text of the model's config.json (inline; never a path)."},
            "config_path": {"type": "string", "description": "a config.json file, or a model folder holding one, on this machine (command line only)."},
            "num_layers": {"type": "integer", "minimum": 1, "description": "num_hidden_layers, when not read from the config."},
            "num_kv_heads": {"type": "integer", "minimum": 1, "description": "num_key_value_heads (equals num_attention_heads without GQA)."},
            "head_dim": {"type": "integer", "minimum": 1, "description": "per-head dimension (hidden_size / num_attention_heads when absent)."},
            "dtype": {"type": "string", "description": "KV-cache dtype: auto (the model's torch_dtype, 16-bit for a float32 model as vLLM serves it), bfloat16, float16, float32 or fp8.", "default": "auto"},
            "tensor_parallel_size": {"type": "integer", "minimum": 1, "description": "GPUs the KV heads are split across.", "default": 1},
            "kv_lora_rank": {"type": "integer", "minimum": 1, "description": "MLA latent rank (DeepSeek-style models), read from config when present."},
            "qk_rope_head_dim": {"type": "integer", "minimum": 1, "description": "MLA rotary key dimension, read from config when present."},
        },
        "additionalProperties": False,
    },
    "kv_cache_capacity": {
        "type": "object",
        "properties": {
            "gpu_memory_gib": {"type": "number", "exclusiveMinimum": 0, "description": "memory of one GPU in GiB (80 for an A100-80GB)."},
            "weights_gib": {"type": "number", "exclusiveMinimum": 0, "description": "size of the model weights in GiB (all GPUs together; vLLM's \"Model loading took N GiB\" is one GPU's)."},
            "kv_bytes_per_token": {"type": "integer", "minimum": 1, "description": "KV bytes per token per GPU (see kv_bytes_per_token)."},
            "gpu_memory_utilization": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "share of GPU memory vLLM may use (its default is 0.9).", "default": 0.9},
            "max_model_len": {"type": "integer", "minimum": 1, "description": "the context length to check."},
            "tensor_parallel_size": {"type": "integer", "minimum": 1, "description": "GPUs the weights are split across.", "default": 1},
            "overhead_gib": {"type": "number", "minimum": 0, "description": "activations, CUDA graphs and other non-KV memory per GPU, if known.", "default": 0.0},
        },
        "additionalProperties": False,
        "required": ["gpu_memory_gib", "weights_gib", "kv_bytes_per_token"],
    },
    "kv_memory_needed": {"type": "object",
     "properties": {"sessions": {"minimum": 1, "type": "integer", "description": "concurrent sessions (requests) to hold."},
                    "tokens_per_session": {"minimum": 1,
                                           "type": "integer",
                                           "description": "prompt + output tokens of each session (the context length, for "
                                                          "full-length ones)."},
                    "kv_bytes_per_token": {"minimum": 1,
                                           "type": "integer",
                                           "description": "KV bytes per token for the whole model (see kv_bytes_per_token)."},
                    "tensor_parallel_size": {"minimum": 1,
                                             "type": "integer",
                                             "default": 1,
                                             "description": "GPUs the KV heads are split over."},
                    "kv_bytes_per_token_per_gpu": {"minimum": 1,
                                                   "type": "integer",
                                                   "description": "the per-GPU figure, when known (kv_bytes_per_token gives it: KV "
                                                                  "heads fewer than GPUs are copied, not split); otherwise the whole "
                                                                  "model's ÷ tensor_parallel_size."}},
     "additionalProperties": False,
     "required": ["sessions", "tokens_per_session", "kv_bytes_per_token"]},
    "kv_tokens_from_memory": {
        "type": "object",
        "properties": {
            "kv_cache_gib": {"type": "number", "exclusiveMinimum": 0, "description": "KV-cache memory per GPU in GiB (vLLM's start-up log: \"Available KV cache memory: N GiB\")."},
            "kv_bytes_per_token": {"type": "integer", "minimum": 1, "description": "KV bytes per token per GPU (see kv_bytes_per_token)."},
            "max_model_len": {"type": "integer", "minimum": 1, "description": "the context length to check."},
        },
        "additionalProperties": False,
        "required": ["kv_cache_gib", "kv_bytes_per_token"],
    },
    "kv_concurrency": {
        "type": "object",
        "properties": {
            "num_blocks": {"type": "integer", "minimum": 1, "description": "KV-cache blocks the server allocated (FastDeploy logs it as num_blocks_global)."},
            "avg_tokens_per_request": {"type": "integer", "minimum": 1, "description": "average prompt + output tokens of one request."},
            "block_size": {"type": "integer", "minimum": 1, "description": "tokens per block (FastDeploy's default is 64, vLLM's 16).", "default": 64},
            "max_num_seqs": {"type": "integer", "minimum": 1, "description": "the server's configured batch ceiling, if known."},
        },
        "additionalProperties": False,
        "required": ["num_blocks", "avg_tokens_per_request"],
    },
    "kv_tokens_concurrency": {
        "type": "object",
        "properties": {
            "kv_cache_tokens": {"type": "integer", "minimum": 1, "description": "the KV cache size in tokens, from `GPU KV cache size: N tokens` in vLLM's log."},
            "tokens_per_request": {"type": "integer", "minimum": 1, "description": "tokens of one request: the --max-model-len to check, or the average prompt + output tokens."},
            "max_num_seqs": {"type": "integer", "minimum": 1, "description": "the server's --max-num-seqs, if known."},
            "block_size": {"type": "integer", "minimum": 1, "description": "tokens per KV block (vLLM's --block-size, 16 by default on GPUs).",
                           "default": 16},
        },
        "additionalProperties": False,
        "required": ["kv_cache_tokens", "tokens_per_request"],
    },
    "logprobs_message_size": {
        "type": "object",
        "properties": {
            "mtp": {"type": "boolean", "description": "whether MTP (multi-token prediction) is enabled.", "default": False},
            "max_batch": {"type": "integer", "minimum": 1, "description": "batch slots in the message: FastDeploy's compile-time MAX_BSZ (512), not the server's batch size.", "default": 512},
            "top_logprobs": {"type": "integer", "minimum": 0, "description": "logprobs slots per token: FastDeploy's compile-time K (20), not a request's top_logprobs.", "default": 20},
            "mtp_tokens": {"type": "integer", "minimum": 1, "description": "tokens per step with MTP (6 in FastDeploy's FAQ).", "default": 6},
            "msgmax": {"type": "integer", "minimum": 1, "description": "the host's kernel.msgmax; 8192 when unknown."},
            "msgmnb": {"type": "integer", "minimum": 1, "description": "the host's kernel.msgmnb (bytes one queue may hold), if known."},
        },
        "additionalProperties": False,
    },
    "serving_status": {
        "type": "object",
        "properties": {
            "base_url": {"type": "string", "description": "the server's address, e.g. http://127.0.0.1:8000 (a trailing /v1 is fine)."},
            "timeout_s": {"exclusiveMinimum": 0, "maximum": 30.0, "type": "number", "default": 3.0,
                          "description": "seconds to wait for each endpoint (at most 30)."},
        },
        "additionalProperties": False,
        "required": ["base_url"],
    },
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_is_unchanged(name):
    tool = registry()[name]
    assert tool.parameters == SCHEMAS[name]
    assert json.loads(json.dumps(tool.parameters)) == SCHEMAS[name]  # plain JSON: nothing pydantic-specific left
    assert schema_for(tool.fn) == SCHEMAS[name]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_remote_schema_is_the_local_one_without_file_parameters(name):
    tool = registry()[name]
    remote = remote_caller("127.0.0.1").parameters(tool)
    expected = {**SCHEMAS[name], "properties": {k: v for k, v in SCHEMAS[name]["properties"].items() if k not in tool.access.reads_files}}
    assert remote == expected
    assert tool.parameters == SCHEMAS[name]  # the local schema was not changed in place


def test_no_schema_carries_pydantic_noise():
    for tool in registry().values():
        text = json.dumps(tool.parameters)
        assert '"title"' not in text and '"null"' not in text and "anyOf" not in text, tool.name
