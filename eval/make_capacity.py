"""Write eval/capacity.jsonl: capacity questions, each with the tool call it must produce.

A case names the tool and the arguments a careful engineer would read from the question (and its
log); the expected result is computed here by calling that tool function, never typed by hand.
Cases with `missing` must produce no number at all. Run `python eval/make_capacity.py` after editing
CASES; tests/test_capacity_questions.py runs every case through the real no-LLM answer path.
"""

from __future__ import annotations

import json
from pathlib import Path

# (id, lang, kind, question, log, tool, arguments, key) for computed cases;
# (id, lang, kind, question, log, tool, missing) for cases that must ask instead of computing.
FD_LOG = "INFO worker_process.py:321 num_blocks_global: 17131\nINFO engine started\n"
FD_LOG_128 = "INFO num_blocks_global: 9000\nINFO block_size: 128\n"
FD_LOG_RESET = "INFO Reset block num, the total_block_num:17220, prefill_kvcache_block_num:12915\n"
VLLM_LOG = ("INFO 11-30 10:07:31 [kv_cache_utils.py:716] GPU KV cache size: 458,752 tokens\n"
            "INFO 11-30 10:07:31 [kv_cache_utils.py:720] Maximum concurrency for 32,768 tokens per request: 14.00x\n")

COMPUTED = [
    # ---- concurrency from blocks (kv_concurrency)
    ("zh-conc-01", "zh", "concurrency", "17131 个 block，每个请求平均 2 万 token，实际能并发多少", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-02", "zh", "concurrency", "num_blocks_global: 9000，block_size 128，每个请求平均 3.2 万 token，能并发多少？", None,
     "kv_concurrency", {"num_blocks": 9000, "avg_tokens_per_request": 32000, "block_size": 128}, "concurrent_requests"),
    ("zh-conc-03", "zh", "unit", "num_blocks_global 9000，block_size 我们改成了 128，平均每个请求输入加输出大概 32000 tokens，能并发多少", None,
     "kv_concurrency", {"num_blocks": 9000, "avg_tokens_per_request": 32000, "block_size": 128}, "concurrent_requests"),
    # Chinese numbers written in parts are one value (trial): "一万七千多" is 17,000-odd, "1万7千" 17,000, "两万" 20,000
    ("zh-conc-20", "zh", "unit", "每个请求大约 2 万 token，平均能同时处理多少个请求？我们 kv block 有一万七千多个", None,
     "kv_concurrency", {"num_blocks": 17000, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-21", "zh", "unit", "一共 1万7千 个 block，每块 64 token，请求平均两万 token，并发多少？", None,
     "kv_concurrency", {"num_blocks": 17000, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-04", "zh", "sum", "17131 个 block，输入2k+输出6k，能并发多少", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 8000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-05", "zh", "sum", "num_blocks_global 17131，每个请求输入 2k、输出 6k，同时能跑几个请求？", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 8000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-06", "zh", "unit", "ｎｕｍ＿ｂｌｏｃｋｓ＿ｇｌｏｂａｌ：１７１３１，每个请求平均２００００个token，能并发多少？", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-07", "zh", "unit", "共 1.2w 个 block，block_size 64，单个请求 8千 token，最多同时处理多少请求", None,
     "kv_concurrency", {"num_blocks": 12000, "avg_tokens_per_request": 8000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-08", "zh", "cap", "17131 个 block，每个请求 2000 token，max_num_seqs 设的 128，能并发多少", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 2000, "block_size": 64, "max_num_seqs": 128}, "concurrent_requests"),
    ("zh-conc-09", "zh", "gpu-count", "8 张卡，每张卡 num_blocks_global 17131，每个请求平均 2 万 token，能并发多少", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-10", "zh", "gpu-count", "8 块 A100，total_block_num 20000，每个请求大约 4k token，并发能到多少", None,
     "kv_concurrency", {"num_blocks": 20000, "avg_tokens_per_request": 4000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-11", "zh", "unit", "KV Cache 一共 30,000 个 block，每个 block 16 个 token，平均请求长度 1500 token，能同时跑几个", None,
     "kv_concurrency", {"num_blocks": 30000, "avg_tokens_per_request": 1500, "block_size": 16}, "concurrent_requests"),
    ("zh-conc-12", "zh", "sum", "num_blocks_global 17131，平均输入 3000 token，平均输出 1000 token，能并发多少", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 4000, "block_size": 64}, "concurrent_requests"),
    # "KV blocks of 16 tokens" sets the block size; "2e4" is 20,000 (trial: the default 64 was used, and 2e4 read as 2)
    ("en-conc-20", "en", "unit", "we have 17131 KV blocks of 16 tokens, prompts average 3k tokens and outputs 1k, how many concurrent requests?",
     None, "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 4000, "block_size": 16}, "concurrent_requests"),
    ("en-conc-21", "en", "unit", "num_blocks_global 17131, requests average 2e4 tokens, how many concurrent?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    # a length in k after "requests of", beside a vLLM log: each one's length, not 8,000 requests (trial)
    ("en-vllm-20", "en", "vllm-log", "how many concurrent requests of 8k can it hold?", VLLM_LOG,
     "kv_tokens_concurrency", {"kv_cache_tokens": 458752, "tokens_per_request": 8000}, "concurrent_requests"),
    ("en-conc-01", "en", "concurrency", "num_blocks_global 9000, block_size 128, 32000 tokens per request, how many concurrent?", None,
     "kv_concurrency", {"num_blocks": 9000, "avg_tokens_per_request": 32000, "block_size": 128}, "concurrent_requests"),
    ("en-conc-02", "en", "unit", "17131 blocks of 64 tokens with 20K-token requests, how many run concurrently", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("en-conc-03", "en", "sum", "We have 17,131 KV blocks; input 2k + output 6k tokens per request. How many requests at once?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 8000, "block_size": 64}, "concurrent_requests"),
    ("en-conc-04", "en", "sum", "total blocks 17131, each request is 2k + 6k tokens, how many fit at the same time?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 8000, "block_size": 64}, "concurrent_requests"),
    ("en-conc-05", "en", "cap", "17131 blocks, 2000 tokens per request, --max-num-seqs 256: how many concurrent requests?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 2000, "block_size": 64, "max_num_seqs": 256}, "concurrent_requests"),
    ("en-conc-06", "en", "vllm-default", "vLLM with num_gpu_blocks 4096 and requests of about 1,000 tokens (prompt + output): what concurrency can I expect?", None,
     "kv_concurrency", {"num_blocks": 4096, "avg_tokens_per_request": 1000, "block_size": 16}, "concurrent_requests"),
    ("en-conc-07", "en", "gpu-count", "On 8 GPUs with num_blocks_global 17131 and an average of 20k tokens per request, how many concurrent requests?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("en-conc-08", "en", "unit", "num_blocks_global = 17131, block size 128, requests average ~15k tokens (prompt + output); max concurrency?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 15000, "block_size": 128}, "concurrent_requests"),
    ("en-conc-09", "en", "full-length", "17131 blocks and max_model_len 32768: how many full-length requests fit concurrently?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 32768, "block_size": 64}, "concurrent_requests"),
    ("mix-conc-01", "zh", "mixed", "FastDeploy 的 num_blocks_global 是 17131，avg 20k tokens per request，并发多少？", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("mix-conc-02", "zh", "mixed", "total_block_num: 17220, block_size=64, input 1500 + output 500 tokens, 能撑多少并发", None,
     "kv_concurrency", {"num_blocks": 17220, "avg_tokens_per_request": 2000, "block_size": 64}, "concurrent_requests"),
    ("mix-conc-03", "en", "mixed", "how many concurrent requests: 9000 个 block, block_size 128, 每个请求 3.2万 token", None,
     "kv_concurrency", {"num_blocks": 9000, "avg_tokens_per_request": 32000, "block_size": 128}, "concurrent_requests"),
    ("en-conc-10", "en", "unit", "The worker log says num_blocks_global: 17131. Our prompts average 1.5k tokens and completions 500. Max concurrent?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 2000, "block_size": 64}, "concurrent_requests"),
    ("en-conc-11", "en", "unit", "If each request uses 4096 tokens and I have 10000 blocks of size 16, how many requests can run in parallel?", None,
     "kv_concurrency", {"num_blocks": 10000, "avg_tokens_per_request": 4096, "block_size": 16}, "concurrent_requests"),
    ("en-conc-12", "en", "sum", "How many requests can run concurrently if num_blocks_global = 17131 and the average prompt length is 1,024 with 512 generated tokens?",
     None, "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 1536, "block_size": 64}, "concurrent_requests"),
    ("en-conc-13", "en", "vllm-default", "vLLM 0.8.5 on Qwen2.5-7B, 4096 GPU blocks, block size 16, 2k tokens per request, how many concurrent?", None,
     "kv_concurrency", {"num_blocks": 4096, "avg_tokens_per_request": 2000, "block_size": 16}, "concurrent_requests"),
    ("zh-conc-13", "zh", "gpu-count", "A800 * 8，num_blocks_global 30000，每个请求 6000 token，理论并发", None,
     "kv_concurrency", {"num_blocks": 30000, "avg_tokens_per_request": 6000, "block_size": 64}, "concurrent_requests"),
    ("zh-conc-14", "zh", "sum", "我们每个请求大概 5k 输入，1k 输出，17131 个 blocks，能同时跑多少", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 6000, "block_size": 64}, "concurrent_requests"),
    # ---- log plus question
    ("zh-log-01", "zh", "log", "每个请求平均 2 万 token，能并发多少？", FD_LOG,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 20000, "block_size": 64}, "concurrent_requests"),
    ("en-log-01", "en", "log", "with 5000 tokens per request and max-num-seqs 128, how many requests run at once?", FD_LOG,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 5000, "block_size": 64, "max_num_seqs": 128}, "concurrent_requests"),
    ("zh-log-02", "zh", "log", "每个请求输入 6k 输出 2k，能并发多少", FD_LOG_128,
     "kv_concurrency", {"num_blocks": 9000, "avg_tokens_per_request": 8000, "block_size": 128}, "concurrent_requests"),
    ("en-log-02", "en", "log", "what if --max-model-len were 8192, how many concurrent requests?", VLLM_LOG,
     "kv_tokens_concurrency", {"kv_cache_tokens": 458752, "tokens_per_request": 8192}, "concurrent_requests"),
    ("zh-log-03", "zh", "log", "如果把 --max-model-len 改成 65536，还能并发几个？", VLLM_LOG,
     "kv_tokens_concurrency", {"kv_cache_tokens": 458752, "tokens_per_request": 65536}, "concurrent_requests"),
    ("zh-log-04", "zh", "log", "kv_cache_ratio 0.75，平均输出 2000 token，max_num_seqs 应该设多少", FD_LOG_RESET,
     "fastdeploy_decode_budget", {"total_blocks": 17220, "kv_cache_ratio": 0.75, "block_size": 64, "avg_output_tokens": 2000},
     "max_num_seqs_supported"),
    # ---- vLLM max-model-len what-if (kv_tokens_concurrency), log pasted in the question
    ("en-vllm-01", "en", "what-if", "GPU KV cache size: 458,752 tokens. If I set --max-model-len 8192, how many concurrent requests?", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 458752, "tokens_per_request": 8192}, "concurrent_requests"),
    ("en-vllm-02", "en", "what-if", "GPU KV cache size: 34,952 tokens, Maximum concurrency for 8,192 tokens per request: 4.27x. What if max-model-len is 4096?", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 34952, "tokens_per_request": 4096}, "concurrent_requests"),
    ("zh-vllm-01", "zh", "what-if", "vLLM 日志 GPU KV cache size: 120,000 tokens，max-model-len 改成 16384 能并发多少", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 120000, "tokens_per_request": 16384}, "concurrent_requests"),
    ("en-vllm-03", "en", "what-if", "Maximum concurrency for 32,768 tokens per request: 14.00x — what would it be at --max-model-len 8192?", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 458752, "tokens_per_request": 8192}, "concurrent_requests"),
    ("en-vllm-04", "en", "what-if", "GPU KV cache size: 458,752 tokens, average request 3k tokens, --max-num-seqs 64. How many run concurrently?", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 458752, "tokens_per_request": 3000, "max_num_seqs": 64}, "concurrent_requests"),
    ("zh-vllm-02", "zh", "what-if", "GPU KV cache size: 34,952 tokens，如果 max_model_len 设成 65536 会怎样", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 34952, "tokens_per_request": 65536}, "concurrent_requests"),
    # ---- inverse: blocks needed
    ("en-inv-01", "en", "inverse", "how many blocks do I need for 100 sessions of 16k tokens", None,
     "blocks_needed", {"sessions": 100, "tokens_per_session": 16000, "block_size": 64}, "total_blocks"),
    ("zh-inv-01", "zh", "inverse", "要撑 50 并发，每个请求 8k token，至少要多少 block", None,
     "blocks_needed", {"sessions": 50, "tokens_per_session": 8000, "block_size": 64}, "total_blocks"),
    ("zh-inv-02", "zh", "inverse", "block_size 128，想同时跑 200 个会话，每个会话 4000 token，需要多少个 block？", None,
     "blocks_needed", {"sessions": 200, "tokens_per_session": 4000, "block_size": 128}, "total_blocks"),
    ("en-inv-02", "en", "inverse", "How many KV blocks are needed for 64 concurrent requests of 2k + 1k tokens with block size 16?", None,
     "blocks_needed", {"sessions": 64, "tokens_per_session": 3000, "block_size": 16}, "total_blocks"),
    ("zh-inv-03", "zh", "inverse", "支持 1000 个用户同时在线，每个请求大概 1.5k token，需要多少 block", None,
     "blocks_needed", {"sessions": 1000, "tokens_per_session": 1500, "block_size": 64}, "total_blocks"),
    ("en-inv-03", "en", "inverse", "vLLM: blocks needed for 32 sessions of 100,000 tokens?", None,
     "blocks_needed", {"sessions": 32, "tokens_per_session": 100000, "block_size": 16}, "total_blocks"),
    ("mix-inv-01", "zh", "mixed", "我想要 128 concurrent requests，每个 20k tokens，需要多少个 blocks", None,
     "blocks_needed", {"sessions": 128, "tokens_per_session": 20000, "block_size": 64}, "total_blocks"),
    ("en-inv-04", "en", "inverse", "We need to support 300 simultaneous users at 4k tokens each; how many blocks (block size 64)?", None,
     "blocks_needed", {"sessions": 300, "tokens_per_session": 4000, "block_size": 64}, "total_blocks"),
    ("zh-inv-04", "zh", "inverse", "并发 100 的话需要多少 block，每条请求 3000 token", None,
     "blocks_needed", {"sessions": 100, "tokens_per_session": 3000, "block_size": 64}, "total_blocks"),
    # ---- KV bytes per token
    ("en-bytes-03", "en", "bytes", "DeepSeek-V3: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64, bf16 — KV bytes per token?", None,
     "kv_bytes_per_token", {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "dtype": "bfloat16"}, "bytes_per_token"),
    # ---- a model the built-in table knows (assistant/model_shapes.py): its shape and bf16 weights
    ("en-table-01", "en", "table", "Llama-3.1-8B bf16 with 24 GB free for KV cache, how many tokens of KV cache?", None,
     "kv_tokens_from_memory", {"kv_cache_gib": 24.0, "kv_bytes_per_token": 131072}, "kv_tokens"),
    ("zh-table-01", "zh", "table", "Qwen2.5-7B-Instruct 单卡 24G，max-model-len 32768，最多能并发多少？", None,
     "kv_cache_capacity", {"gpu_memory_gib": 24.0, "weights_gib": 14.175, "kv_bytes_per_token": 57344, "gpu_memory_utilization": 0.9,
                           "max_model_len": 32768}, "max_concurrency_at_max_model_len"),
    ("en-table-02", "en", "table", "Llama-3.1-70B-Instruct on 4x H100 80GB, TP 4, max-model-len 32768: how many concurrent 32k requests fit?",
     None, "kv_cache_capacity", {"gpu_memory_gib": 79.647, "weights_gib": 131.503, "kv_bytes_per_token": 81920,
                                 "gpu_memory_utilization": 0.9, "max_model_len": 32768, "tensor_parallel_size": 4},
     "max_concurrency_at_max_model_len"),
    ("zh-table-02", "zh", "table", "DeepSeek-R1-Distill-Qwen-32B 两张 A100 80G，tp 2，kv-cache-dtype fp8，max_model_len 65536 能并发几个？", None,
     "kv_cache_capacity", {"gpu_memory_gib": 80.0, "weights_gib": 60.536, "kv_bytes_per_token": 65536, "gpu_memory_utilization": 0.9,
                           "max_model_len": 65536, "tensor_parallel_size": 2}, "max_concurrency_at_max_model_len"),
    ("en-bytes-01", "en", "bytes", "Llama 3.1 8B: 32 layers, 8 KV heads, head_dim 128, bf16. How many bytes of KV cache per token?", None,
     "kv_bytes_per_token", {"num_layers": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "bfloat16"}, "bytes_per_token"),
    ("zh-bytes-01", "zh", "bytes", "32 层，8 个 KV 头，head_dim 128，fp16，每个 token 的 KV cache 占多少字节", None,
     "kv_bytes_per_token", {"num_layers": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "float16"}, "bytes_per_token"),
    ("en-bytes-02", "en", "bytes", "num_hidden_layers 80, num_key_value_heads 8, head_dim 128, bf16 with TP=4: KV bytes per token per GPU?", None,
     "kv_bytes_per_token", {"num_layers": 80, "num_kv_heads": 8, "head_dim": 128, "dtype": "bfloat16", "tensor_parallel_size": 4},
     "bytes_per_token_per_gpu"),
    ("zh-bytes-02", "zh", "bytes", "模型 28 层，kv heads 4，head_dim 128，--kv-cache-dtype fp8，单个 token 的 KV 多大", None,
     "kv_bytes_per_token", {"num_layers": 28, "num_kv_heads": 4, "head_dim": 128, "dtype": "fp8"}, "bytes_per_token"),
    # ---- KV capacity at a max_model_len (kv_cache_capacity)
    ("en-cap-01", "en", "capacity", "80GB GPU, gpu_memory_utilization 0.9, weights 16 GiB, 128 KiB per token, max-model-len 8192: how many concurrent requests?", None,
     "kv_cache_capacity", {"gpu_memory_gib": 80.0, "weights_gib": 16.0, "kv_bytes_per_token": 131072, "gpu_memory_utilization": 0.9,
                           "max_model_len": 8192}, "kv_tokens"),
    ("zh-cap-01", "zh", "capacity", "显存 24G，模型权重 16G，每 token 128 KiB，max_model_len 131072，vLLM 能启动吗，KV cache 能放多少 token", None,
     "kv_cache_capacity", {"gpu_memory_gib": 24.0, "weights_gib": 16.0, "kv_bytes_per_token": 131072, "gpu_memory_utilization": 0.9,
                           "max_model_len": 131072}, "largest_max_model_len"),
    ("en-cap-02", "en", "capacity", "A100 80GB, weights 16 GiB, 32 layers, 8 KV heads, head_dim 128, bf16, max-model-len 32768: how many full-length requests fit?", None,
     "kv_cache_capacity", {"gpu_memory_gib": 80.0, "weights_gib": 16.0, "kv_bytes_per_token": 131072, "gpu_memory_utilization": 0.9,
                           "max_model_len": 32768}, "max_concurrency_at_max_model_len"),
    ("zh-cap-02", "zh", "capacity", "显存 80G，显存利用率 0.95，权重 40 GiB，每 token 64 KiB，KV cache 能放多少 token", None,
     "kv_cache_capacity", {"gpu_memory_gib": 80.0, "weights_gib": 40.0, "kv_bytes_per_token": 65536, "gpu_memory_utilization": 0.95},
     "kv_tokens"),
    ("mix-cap-01", "en", "capacity", "H100 80GB x4, TP 4, weights 140 GiB, 80 layers, 8 KV heads, head_dim 128, bf16, max_model_len 32768: how many concurrent?",
     None, "kv_cache_capacity", {"gpu_memory_gib": 79.647, "weights_gib": 140.0, "kv_bytes_per_token": 81920, "gpu_memory_utilization": 0.9,
                                 "max_model_len": 32768, "tensor_parallel_size": 4}, "max_concurrency_at_max_model_len"),
    ("zh-cap-03", "zh", "capacity", "GPU 显存 80GB，gpu-memory-utilization=0.92，权重占 60GB，每个 token 需要 160KB KV cache，max-model-len 32768 时能并发多少",
     None, "kv_cache_capacity", {"gpu_memory_gib": 80.0, "weights_gib": 60.0, "kv_bytes_per_token": 163840, "gpu_memory_utilization": 0.92,
                                 "max_model_len": 32768}, "max_concurrency_at_max_model_len"),
    # ---- KV tokens from the KV cache's own memory (kv_tokens_from_memory)
    ("en-kvmem-01", "en", "capacity", "KV cache 20 GiB, 128 KiB per token, max_model_len 8192: how many concurrent requests?", None,
     "kv_tokens_from_memory", {"kv_cache_gib": 20.0, "kv_bytes_per_token": 131072, "max_model_len": 8192}, "max_concurrency_at_max_model_len"),
    ("zh-kvmem-01", "zh", "log", "32 层，8 个 KV 头，head_dim 128，bf16，max_model_len 32768 能并发多少？",
     "INFO 05-12 09:59:01 gpu_worker.py:276] Available KV cache memory: 20.5 GiB",
     "kv_tokens_from_memory", {"kv_cache_gib": 20.5, "kv_bytes_per_token": 131072, "max_model_len": 32768}, "kv_tokens"),
    ("mix-kvmem-01", "zh", "mixed", "留给 KV cache 的显存有 30G，每个 token 160KB，能放多少 token？", None,
     "kv_tokens_from_memory", {"kv_cache_gib": 30.0, "kv_bytes_per_token": 163840}, "kv_tokens"),
    ("en-cap-loadlog", "en", "log", "Model loading took 33.88 GiB, --tensor-parallel-size 2, H100 80GB, gpu-memory-utilization 0.9, "
     "80 layers, 8 KV heads, head_dim 128, bf16, max-model-len 16000 — how many concurrent requests fit?", None, "kv_cache_capacity",
     {"gpu_memory_gib": 79.647, "weights_gib": 67.76, "kv_bytes_per_token": 163840, "gpu_memory_utilization": 0.9, "max_model_len": 16000,
      "tensor_parallel_size": 2}, "kv_tokens"),
    ("en-cap-gpus-as-tp", "en", "gpu-count", "Llama-3.1-70B on 4x A100 80GB, weights 131 GiB total, KV 320 KiB per token for the whole "
     "model, gpu-memory-utilization 0.9, max-model-len 32768: how many concurrent full-length requests?", None, "kv_cache_capacity",
     {"gpu_memory_gib": 80.0, "weights_gib": 131.0, "gpu_memory_utilization": 0.9, "max_model_len": 32768, "tensor_parallel_size": 4,
      "kv_bytes_per_token": 81920}, "max_concurrency_at_max_model_len"),
    ("zh-cap-total-weights", "zh", "capacity", "4 张 A100 80G 跑 Llama-3.1-70B，--tensor-parallel-size 4，权重一共 131 GiB，每张卡每 token KV 80 KiB，"
     "利用率 0.9，max-model-len 32768，能并发几个满长度请求", None, "kv_cache_capacity",
     {"gpu_memory_gib": 80.0, "weights_gib": 131.0, "gpu_memory_utilization": 0.9, "max_model_len": 32768, "tensor_parallel_size": 4,
      "kv_bytes_per_token": 81920}, "max_concurrency_at_max_model_len"),
    ("en-cap-gpu-util", "en", "capacity", "2x H100 80GB, TP 2, weights 135 GiB, 320 KiB per token per model, max-model-len 8192, "
     "gpu util 0.92: how many concurrent?", None, "kv_cache_capacity",
     {"gpu_memory_gib": 79.647, "weights_gib": 135.0, "gpu_memory_utilization": 0.92, "max_model_len": 8192, "tensor_parallel_size": 2,
      "kv_bytes_per_token": 163840}, "max_concurrency_at_max_model_len"),
    ("mix-kvmem-per-request", "zh", "mixed", "显存里给 KV cache 留了 40GB，每个 token 128KB，每个请求 2 万 token，能同时跑几个", None,
     "kv_tokens_from_memory", {"kv_cache_gib": 40.0, "kv_bytes_per_token": 131072, "max_model_len": 20000}, "max_concurrency_at_max_model_len"),
    ("mix-conc-gpus-beside-blocks", "zh", "gpu-count", "we have 8 块 A100 80G, num_gpu_blocks 2048, block_size 16, avg request 4k tokens, "
     "how many concurrent?", None, "kv_concurrency", {"num_blocks": 2048, "avg_tokens_per_request": 4000, "block_size": 16}, "concurrent_requests"),
    ("en-conc-in-out", "en", "sum", "vllm: num_gpu_blocks 17131, requests are 2k in + 6k out, how many can run concurrently?", None,
     "kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 8000, "block_size": 16}, "concurrent_requests"),
    ("en-vllm-context-each", "en", "what-if", "GPU KV cache size: 312,256 tokens. we need 20 concurrent users with 16k context each, enough?", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 312256, "tokens_per_request": 16000}, "exact"),
    # ---- the KV cache a load takes (kv_memory_needed)
    ("en-kvneed-01", "en", "inverse", "64 sessions of 32k context, KV cache 320 KiB per token (before TP), TP=2: how much memory?", None,
     "kv_memory_needed", {"sessions": 64, "tokens_per_session": 32000, "kv_bytes_per_token": 327680, "tensor_parallel_size": 2},
     "per_gpu_gib"),
    ("zh-kvneed-01", "zh", "inverse", "vllm 上 32 个并发、每个 8192 token，每 token 的 KV 是 128 KiB，需要多少显存", None,
     "kv_memory_needed", {"sessions": 32, "tokens_per_session": 8192, "kv_bytes_per_token": 131072}, "total_gib"),
    ("mix-kvneed-01", "zh", "mixed", "16 个会话每个 4096 token，32 层、8 个 KV 头、head_dim 128、bf16，tp 4，KV cache 要多少显存？", None,
     "kv_memory_needed", {"sessions": 16, "tokens_per_session": 4096, "kv_bytes_per_token": 131072, "tensor_parallel_size": 4,
                          "kv_bytes_per_token_per_gpu": 32768}, "per_gpu_gib"),
    ("zh-vllm-03", "zh", "what-if", "上下文 128k 的话 KV cache 够不够？GPU KV cache size: 100,000 tokens", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 100000, "tokens_per_request": 128000}, "limited_by"),
    # ---- FastDeploy decode budget
    ("zh-dec-03", "zh", "decode", "FastDeploy total_block_num 17220，想知道留给 decode 的 token 有多少", None,
     "fastdeploy_decode_budget", {"total_blocks": 17220, "kv_cache_ratio": 0.75, "block_size": 64}, "decode_tokens"),
    ("en-dec-03", "en", "decode", "17131 blocks; 50% of them are reserved for prefill (kv_cache_ratio 0.5); outputs average 1000 tokens: max_num_seqs?", None,
     "fastdeploy_decode_budget", {"total_blocks": 17131, "kv_cache_ratio": 0.5, "block_size": 64, "avg_output_tokens": 1000},
     "max_num_seqs_supported"),
    ("zh-dec-01", "zh", "decode", "kv_cache_ratio 0.75，total_block_num 17220，平均输出 2000 token，max_num_seqs 设多少", None,
     "fastdeploy_decode_budget", {"total_blocks": 17220, "kv_cache_ratio": 0.75, "block_size": 64, "avg_output_tokens": 2000},
     "max_num_seqs_supported"),
    ("en-dec-01", "en", "decode", "num_blocks_global 17131, kv_cache_ratio 0.6, block_size 64: what is the decode token budget?", None,
     "fastdeploy_decode_budget", {"total_blocks": 17131, "kv_cache_ratio": 0.6, "block_size": 64}, "decode_tokens"),
    ("en-dec-02", "en", "decode", "Reset block num, the total_block_num:17220, prefill_kvcache_block_num:12915 — with 1,000 output tokens per request, what max_num_seqs?", None,
     "fastdeploy_decode_budget", {"total_blocks": 17220, "kv_cache_ratio": 0.75, "block_size": 64, "avg_output_tokens": 1000},
     "max_num_seqs_supported"),
    ("zh-dec-02", "zh", "decode", "FastDeploy 解码预算：num_blocks_global 20000，kv_cache_ratio 0.5", None,
     "fastdeploy_decode_budget", {"total_blocks": 20000, "kv_cache_ratio": 0.5, "block_size": 64}, "decode_tokens"),
    # ---- logprobs message size and messages per queue
    ("zh-msg-01", "zh", "logprobs", "开了 logprobs 和 MTP，kernel.msgmax=1048576，kernel.msgmnb=268435456，队列能放几条消息", None,
     "logprobs_message_size", {"mtp": True, "max_batch": 512, "top_logprobs": 20, "mtp_tokens": 6, "msgmax": 1048576,
                               "msgmnb": 268435456}, "messages_per_queue"),
    ("en-msg-01", "en", "logprobs", "logprobs on, no MTP, kernel.msgmax 8192: how big is one message?", None,
     "logprobs_message_size", {"mtp": False, "max_batch": 512, "top_logprobs": 20, "msgmax": 8192}, "bytes"),
    ("en-msg-02", "en", "logprobs", "With logprobs and msgmnb 16777216, how many messages fit in one queue?", None,
     "logprobs_message_size", {"mtp": False, "max_batch": 512, "top_logprobs": 20, "msgmax": 8192, "msgmnb": 16777216},
     "messages_per_queue"),
    # FastDeploy sends the message at its built-in size (MAX_BSZ 512, K 20 in save_output_msg_with_topk.cc's
    # msgsnd), whatever a request's top_logprobs: a smaller one is no smaller message (trial).
    ("zh-msg-02", "zh", "logprobs", "logprobs 开了 top_logprobs 5，max_batch 256，消息多大，kernel.msgmax 65536 够不够", None,
     "logprobs_message_size", {"mtp": False, "max_batch": 512, "top_logprobs": 20, "msgmax": 65536}, "bytes"),
    # ---- phrasings a newcomer trial found unread (nineteenth stop)
    ("en-blocks-conv", "en", "inverse", "vllm with block_size 16, we need 200 concurrent conversations of 4k tokens each, "
     "how many KV blocks is that?", None, "blocks_needed", {"sessions": 200, "tokens_per_session": 4000, "block_size": 16},
     "total_blocks"),
    ("en-line-len", "en", "log", "Maximum concurrency for 32,768 tokens per request: 0.82x — is that bad? server did start", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 26870, "tokens_per_request": 32768}, "concurrent_requests"),
    ("en-longest-01", "en", "inverse", "GPU KV cache size: 500,000 tokens. We want 64 concurrent requests. "
     "What's the largest max-model-len we can set?", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 500000, "tokens_per_request": 7808}, "concurrent_requests"),
    ("zh-longest-01", "zh", "inverse", "GPU KV cache size: 500,000 tokens，想同时跑 64 个请求，max-model-len 最大能设多少？", None,
     "kv_tokens_concurrency", {"kv_cache_tokens": 500000, "tokens_per_request": 7808}, "concurrent_requests"),
    ("zh-decode-ratio-log", "zh", "log", "服务跑了半小时后大量请求超时，每个请求大概输入3k输出5k，能撑多少并发？",
     "INFO Reset block num, the total_block_num:17131, prefill_kvcache_block_num:12848\n"
     "INFO max_num_seqs: 128, kv_cache_ratio: 0.9, block_size: 64\n",
     "fastdeploy_decode_budget", {"total_blocks": 17131, "kv_cache_ratio": 0.9, "block_size": 64, "avg_output_tokens": 5000},
     "max_num_seqs_supported"),
]

MISSING = [
    ("zh-miss-01", "zh", "missing", "平均每个请求输入加输出大概 32000 tokens，能并发多少", None, "kv_concurrency", ["num_blocks"]),
    ("zh-miss-02", "zh", "missing", "8 块 A100, 每个请求平均 2000 token，能并发多少", None, "kv_concurrency", ["num_blocks"]),
    ("zh-miss-03", "zh", "missing", "要撑 50 并发至少要多少 block", None, "blocks_needed", ["tokens_per_request"]),
    ("en-miss-01", "en", "missing", "num_blocks_global 17131, how many concurrent requests can it handle?", None, "kv_concurrency",
     ["tokens_per_request"]),
    ("en-miss-02", "en", "missing", "17131 blocks, prompts of 3000 tokens, how many concurrent requests?", None, "kv_concurrency",
     ["output_tokens"]),
    ("en-miss-03", "en", "missing", "8 x H100, 2k tokens per request, how many requests at once?", None, "kv_concurrency", ["num_blocks"]),
    ("en-miss-04", "en", "missing", "32 layers, 8 KV heads, head_dim 128: KV bytes per token?", None, "kv_bytes_per_token", ["dtype"]),
    ("zh-miss-04", "zh", "missing", "显存 80G，max_model_len 32768，KV cache 能放多少 token", None, "kv_cache_capacity",
     ["weights", "kv_bytes_per_token"]),
    # A model the built-in shape table does not hold: its KV bytes per token are asked for.
    ("en-miss-10", "en", "missing", "Yi-34B bf16 with 24 GB free for KV cache, how many tokens of KV cache?", None,
     "kv_tokens_from_memory", ["kv_bytes_per_token"]),
    ("en-miss-table-vl", "en", "missing", "Qwen2-VL-7B on one 24G GPU, max-model-len 32768: how many concurrent requests?", None,
     "kv_cache_capacity", ["weights", "kv_bytes_per_token"]),
    ("en-miss-table-gpu", "en", "missing", "Qwen2.5-7B on one GPU, max-model-len 32768, how many concurrent requests?", None,
     "kv_cache_capacity", ["gpu_memory"]),  # the model is known: only the GPU's memory is asked for, not FastDeploy's blocks
    ("en-miss-table-awq", "en", "missing", "Qwen2.5-72B-Instruct-AWQ on 2x A100 80G, max-model-len 32768, how many concurrent requests?",
     None, "kv_cache_capacity", ["weights"]),
    ("en-miss-kvneed", "en", "missing", "how much memory do 64 sessions of 32k context need?", None, "kv_memory_needed",
     ["kv_bytes_per_token"]),
    ("en-miss-05", "en", "missing", "if I set --max-model-len 8192, how many concurrent requests will vLLM run? It has 4 GPUs.", None,
     "kv_concurrency", ["num_blocks"]),
    ("zh-miss-05", "zh", "missing", "kv_cache_ratio 0.75，平均输出 2000 token，max_num_seqs 设多少", None, "fastdeploy_decode_budget",
     ["num_blocks"]),
    ("en-miss-06", "en", "ambiguous", "17131 blocks, each request 2k-6k tokens, how many concurrent?", None, "kv_concurrency", []),
    ("zh-miss-06", "zh", "ambiguous", "num_blocks_global 17131，block_size 64，block_size 128，每个请求 2 万 token，能并发多少", None,
     "kv_concurrency", []),
    ("en-miss-07", "en", "bad-value", "max_num_seqs=-3, 17131 blocks, 2000 tokens per request, how many concurrent?", None,
     "kv_concurrency", []),
    ("en-miss-08", "en", "bad-value", "how many concurrent requests with num_blocks_global " + "9" * 7000 + " and 2000 tokens per request?",
     None, "kv_concurrency", []),
    ("zh-miss-08", "zh", "ambiguous", "显存 80G，权重 140 GiB，TP 4，每 token 64 KiB，KV cache 能放多少 token", None,
     "kv_cache_capacity", []),
    ("zh-miss-09", "zh", "missing", "DeepSeek 每个 token 的 KV cache 多大？61 层，kv_lora_rank 512", None, "kv_bytes_per_token",
     ["qk_rope_head_dim", "dtype"]),
    ("en-miss-09", "en", "ambiguous", "how much KV cache per token for a model with 40 layers, 40 heads, head size 128 in fp16?", None,
     "kv_bytes_per_token", []),
    ("zh-miss-07", "zh", "missing", "GPU KV cache size: 458,752 tokens，能并发多少？", None, "kv_tokens_concurrency", ["max_model_len"]),
    # a block count the asker says is unknown is no question for blocks: ask for it (probe)
    ("zh-miss-11", "zh", "missing", "我们 KV cache 有多少 block 不清楚，每个请求 3000 token，能并发多少？", None, "kv_concurrency",
     ["num_blocks"]),
    ("en-miss-12", "en", "missing", "we don't know how many blocks we have, requests are 3000 tokens, how many concurrent?", None,
     "kv_concurrency", ["num_blocks"]),
    # a range said in words is a range as "2k-4k" is: it was read as 2000 sessions of 4000 tokens (trial)
    ("en-miss-11", "en", "ambiguous", "num_blocks_global 17131, requests between 2000 and 4000 tokens, how many concurrent?", None,
     "kv_concurrency", []),
]

NOT_CAPACITY = [
    ("en-none-01", "en", "trap", "num_blocks_global is 17131, what does it mean", None),
    ("en-none-02", "en", "trap", "how many concurrent requests can FastDeploy handle", None),
    ("zh-none-01", "zh", "trap", "为什么 8 张卡启动时报 NCCL error", None),
]


# Why a case's arguments are not the question's figures as written.
NOTES = {"mix-cap-01": "An H100 sold as 80GB reports 81,559 MiB (79.65 GiB) in nvidia-smi",
         "en-cap-loadlog": "vLLM logs 'Model loading took' per GPU: the whole model's weights are 2 × 33.88 GiB",
         "en-cap-gpus-as-tp": "4x with no tensor-parallel size given is read as TP 4; 320 KiB for the whole model is 80 KiB per GPU",
         "en-cap-gpu-util": "an H100 sold as 80GB reports 79.65 GiB; 320 KiB per token for the model is 160 KiB per GPU at TP 2",
         "mix-kvmem-per-request": "the concurrency is at the request's 20,000 tokens"}


def build() -> list[dict]:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assistant.tools import call_tool

    rows: list[dict] = []
    for case_id, lang, kind, question, log, tool, arguments, key in COMPUTED:
        call = call_tool(tool, arguments)
        if call.error:
            raise SystemExit(f"{case_id}: {call.error}")
        rows.append({"id": f"cap-{case_id}", "lang": lang, "kind": kind, "question": question, "log": log, "tool": tool,
                     "arguments": arguments, "key": key, "expected": call.result[key]})
        if case_id in NOTES:
            rows[-1]["note"] = NOTES[case_id]
    for case_id, lang, kind, question, log, tool, missing in MISSING:
        rows.append({"id": f"cap-{case_id}", "lang": lang, "kind": kind, "question": question, "log": log, "tool": tool,
                     "missing": missing, "expected": None})
    for case_id, lang, kind, question, log in NOT_CAPACITY:
        rows.append({"id": f"cap-{case_id}", "lang": lang, "kind": kind, "question": question, "log": log, "tool": None, "expected": None})
    return rows


if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "capacity.jsonl"
    rows = build()
    out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"{len(rows)} cases written to {out}")
