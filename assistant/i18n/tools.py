"""What the tools say in words, looked up as "tools.key": the capacity tools' formulas and
explanations (a result carries both languages, so an answer in either can quote it) and the
KV-cache sums diagnose_log adds to its findings.

Keys are "<tool>.<piece>". Numbers arrive formatted where the tool formats them its own way
(`tokens` = "1,096,384"); a format spec in a placeholder (`{exact:.2f}`) does the rest. Entries
named `…_more` continue the text before them and begin with their own separator (a space, or
"; " / "；" in a formula), so a tool appends them as they are. Symbols and arithmetic shared
by both languages (`17131 × 64 = 1,096,384`) are built by the tools and passed in whole.
"""

MESSAGES: dict[str, dict[str, str]] = {
    # kv_concurrency
    "kv_concurrency.formula": {
        "zh": "num_blocks × block_size ÷ 每个请求的 token 数：{steps} 个 token；{tail}{capped}",
        "en": "num_blocks × block_size ÷ tokens per request: {steps} tokens; {tail}{capped}",
    },
    "kv_concurrency.whole_blocks_more": {
        "zh": "；但每个请求占整数个 block：⌈{tokens} ÷ {block_size}⌉ = {per} 个，{blocks} ÷ {per} → {whole}",
        "en": "; but a request holds whole blocks: ⌈{tokens} ÷ {block_size}⌉ = {per}, and {blocks} ÷ {per} → {whole}",
    },
    "kv_concurrency.kv_cache": {
        "zh": "KV Cache 可缓存 {total} 个 token，平均 {tokens} token 的请求同时大约能跑 {fits} 个；更多的请求会排队，等 block 释放。",
        "en": "The KV cache holds {total} tokens, so about {fits} requests of {tokens} tokens run at once; "
              "further requests wait in the queue until blocks free up.",
    },
    "kv_concurrency.too_long": {
        "zh": "KV Cache 一共只能缓存 {total} 个 token，装不下一个 {tokens} token 的请求：这样的请求永远排不上，"
              "不是等一等就能跑。要么缩短请求（或 max_model_len），要么给 KV Cache 更多显存（更多卡、更高的显存比例）。",
        "en": "The KV cache holds {total} tokens in all, less than one request of {tokens} tokens: such a request never "
              "runs, however long it waits. Shorten the requests (or max_model_len), or give the KV cache more memory "
              "(more GPUs, a higher memory share).",
    },
    "kv_concurrency.flag_higher_more": {
        "zh": " max_num_seqs（{max_num_seqs}）比这个大，真正的上限是 KV Cache 而不是这个参数。",
        "en": " max_num_seqs ({max_num_seqs}) is higher, so the KV cache, not the flag, is the limit.",
    },
    "kv_concurrency.capped": {
        "zh": "KV Cache 能容纳约 {exact:.1f} 个这样的请求，但 max_num_seqs 把批大小限制在 {fits}，超出的请求排队。",
        "en": "The KV cache would hold about {exact:.1f} such requests, but max_num_seqs caps the batch at {fits}; "
              "requests beyond {fits} queue.",
    },
    # kv_tokens_concurrency
    "kv_tokens_concurrency.formula": {
        "zh": "GPU KV cache size ÷ 每个请求的 token 数：{steps}",
        "en": "GPU KV cache size ÷ tokens per request: {steps}",
    },
    "kv_tokens_concurrency.too_long": {
        "zh": "一个 {tokens} token 的请求就超过了 {kv_tokens} token 的 KV Cache（按整 block 计），"
              "--max-model-len {max_model_len} 时 vLLM 会拒绝启动；最大能设到 {largest}。",
        "en": "One request of {tokens} tokens needs more than the {kv_tokens} tokens of KV cache (in whole blocks): "
              "vLLM refuses to start with --max-model-len {max_model_len}. The largest that fits is {largest}.",
    },
    "kv_tokens_concurrency.kv_cache": {
        "zh": "{kv_tokens} 个 token 的 KV Cache 能容纳 {exact:.2f} 个 {tokens} token 的请求"
              "（和 vLLM 日志 `Maximum concurrency` 一行的算法相同；那一行按服务的 --max-model-len 算）：同时大约 {fits} 个，其余排队。",
        "en": "{kv_tokens} tokens of KV cache hold {exact:.2f} requests of {tokens} tokens "
              "(the division vLLM's `Maximum concurrency` line makes; that line divides by the server's --max-model-len): "
              "about {fits} at once; the rest wait in the queue.",
    },
    "kv_tokens_concurrency.capped": {
        "zh": "KV Cache 能容纳 {exact:.2f} 个这样的请求，但 max_num_seqs 把批大小限制在 {fits}，超出的请求排队。",
        "en": "The KV cache would hold {exact:.2f} such requests, but max_num_seqs caps the batch at {fits}; requests beyond {fits} queue.",
    },
    # blocks_needed
    "blocks_needed.formula": {
        "zh": "ceil(每个会话的 token 数 ÷ block_size) × 会话数：ceil({tokens_per_session} ÷ {block_size}) = 每个会话 {per} 个 block；"
              "{per} × {sessions} = {total} 个 block",
        "en": "ceil(tokens per session ÷ block_size) × sessions: ceil({tokens_per_session} ÷ {block_size}) = {per} blocks per session; "
              "{per} × {sessions} = {total} blocks",
    },
    "blocks_needed.explanation": {
        "zh": "{sessions} 个 {tokens} token 的会话需要 {total} 个大小为 {block_size} 的 block（每个 {per} 个）。",
        "en": "{sessions} sessions of {tokens} tokens need {total} blocks of {block_size} tokens ({per} each).",
    },
    # kv_memory_needed
    "kv_memory_needed.formula": {
        "zh": "会话数 × 每个会话的 token 数 × 每 token 的 KV 字节数：{sessions} × {tokens} × {bytes} B = {total:.2f} GiB",
        "en": "sessions × tokens per session × KV bytes per token: {sessions} × {tokens} × {bytes} B = {total:.2f} GiB",
    },
    "kv_memory_needed.per_gpu_formula": {
        "zh": "；分到 {tp} 张卡：每张 {per_gpu:.2f} GiB",
        "en": "; over {tp} GPUs: {per_gpu:.2f} GiB each",
    },
    "kv_memory_needed.explanation": {
        "zh": "同时容纳 {sessions} 个 {tokens} token 的会话，KV Cache 一共要 {total:.2f} GiB，这是权重之外另需的显存"
              "（分页缓存按整块分配，实际略多）。",
        "en": "Holding {sessions} sessions of {tokens} tokens at once takes {total:.2f} GiB of KV cache in all, on top of the "
              "weights (the paged cache allocates whole blocks, so a little more).",
    },
    "kv_memory_needed.per_gpu": {
        "zh": " 张量并行 {tp} 时每张卡 {per_gpu:.2f} GiB。",
        "en": " At tensor_parallel_size {tp}, {per_gpu:.2f} GiB per GPU.",
    },
    "kv_memory_needed.per_gpu_split": {
        "zh": " 若这个每 token 字节数是整个模型的，张量并行 {tp} 时每张卡约 {per_gpu:.2f} GiB（KV 头数少于卡数时会复制，每张卡更多）。",
        "en": " If that per-token figure is the whole model's, tensor_parallel_size {tp} puts about {per_gpu:.2f} GiB on each GPU "
              "(more when there are fewer KV heads than GPUs: they are copied, not split).",
    },
    # kv_bytes_per_token
    "kv_bytes_per_token.formula_mla": {
        "zh": "层数 × (kv_lora_rank + qk_rope_head_dim) × dtype 字节：{layers} × ({lora} + {rope}) × {dtype_bytes} B = 每 token {bytes} 字节"
              "（MLA：只存一个 latent，没有 K/V 的 2 倍）",
        "en": "layers × (kv_lora_rank + qk_rope_head_dim) × dtype bytes: {layers} × ({lora} + {rope}) × {dtype_bytes} B = {bytes} B per token "
              "(MLA: one latent, no K/V factor 2)",
    },
    "kv_bytes_per_token.formula": {
        "zh": "2（K 和 V）× 层数 × KV 头数 × head_dim × dtype 字节：{steps}，每个 token",
        "en": "2 (K and V) × layers × KV heads × head_dim × dtype bytes: {steps} per token",
    },
    "kv_bytes_per_token.per_gpu_more": {
        "zh": "；tensor_parallel_size {tp} 时每张卡：2 × {layers} × ceil({kv_heads} ÷ {tp}) × {head_dim} × {dtype_bytes} B = {per_gpu} B",
        "en": "; per GPU at tensor_parallel_size {tp}: 2 × {layers} × ceil({kv_heads} ÷ {tp}) × {head_dim} × {dtype_bytes} B = {per_gpu} B",
    },
    # kv_cache_capacity
    "kv_cache_capacity.formula": {
        "zh": "(显存 GiB × gpu_memory_utilization − 权重/TP − 其他开销) ÷ 每 token 的 KV 字节数：{numbers} 个 token",
        "en": "(GPU GiB × gpu_memory_utilization − weights/TP − overhead) ÷ KV bytes per token: {numbers} tokens",
    },
    "kv_cache_capacity.explanation": {
        "zh": "每张卡大约能放 {tokens} 个 token 的 KV Cache（{budget:.2f} GiB）。",
        "en": "About {tokens} tokens of KV cache fit per GPU ({budget:.2f} GiB).",
    },
    "kv_cache_capacity.no_overhead_more": {
        "zh": "这是上限：激活峰值、CUDA Graph 等非 KV 显存这里按 0 算（不知道多少）；实际值看启动日志：vLLM 的 “GPU KV cache size: N tokens”，FastDeploy 的 num_blocks_global × block_size。",
        "en": " This is an upper bound: activations, CUDA graphs and other non-KV memory (not known here) were counted as 0; the start-up log has the real figure: vLLM's \"GPU KV cache size: N tokens\", FastDeploy's num_blocks_global × block_size.",
    },
    "kv_cache_capacity.concurrency_more": {
        "zh": "；{tokens} ÷ {max_model_len} = 按 max_model_len 同时 {concurrency:.2f} 个请求",
        "en": "; {tokens} ÷ {max_model_len} = {concurrency:.2f} requests at max_model_len",
    },
    "kv_cache_capacity.fits_more": {
        "zh": " 按 max_model_len {max_model_len} 计算，同时能容纳 {concurrency:.1f} 个满长度请求。",
        "en": " At max_model_len {max_model_len} that is {concurrency:.1f} full-length requests at once.",
    },
    "kv_cache_capacity.too_long_more": {
        "zh": " max_model_len {max_model_len} 单个请求就需要 {need:.2f} GiB，超过可用的 {available:.2f} GiB，vLLM 会拒绝启动。"
              "把 --max-model-len 降到 {tokens} 以下，或调高 --gpu-memory-utilization，或增加 GPU。",
        "en": " max_model_len {max_model_len} needs {need:.2f} GiB for one request, more than the {available:.2f} GiB "
              "available: vLLM refuses to start. Lower --max-model-len to {tokens} or less, or raise "
              "--gpu-memory-utilization, or add GPUs.",
    },
    "kv_cache_capacity.weights_do_not_fit": {
        "zh": "权重放不下：每张卡 {weights:.2f} GiB 权重{overhead}，而可用显存只有 {usable:.2f} GiB"
              "（{gpu} GiB × gpu_memory_utilization {util}），超出 {short:.2f} GiB；KV Cache 没有空间，vLLM 无法启动。",
        "en": "The weights do not fit: {weights:.2f} GiB of weights per GPU{overhead} against {usable:.2f} GiB of usable "
              "memory ({gpu} GiB × gpu_memory_utilization {util}), {short:.2f} GiB too much; nothing is left for the "
              "KV cache, and vLLM will not start.",
    },
    "kv_cache_capacity.weights_overhead": {
        "zh": "加上 {overhead:.2f} GiB 其他开销",
        "en": " plus {overhead:.2f} GiB of overhead",
    },
    "kv_cache_capacity.tp_helps_more": {
        "zh": "把 tensor_parallel_size 设到 {tp} 或以上，每张卡的权重降到 {per_gpu:.2f} GiB 以下，才有 KV Cache 的空间。",
        "en": " With tensor_parallel_size {tp} or more, the weights split to {per_gpu:.2f} GiB per GPU or less and leave room for the KV cache.",
    },
    "kv_cache_capacity.utilization_helps_more": {
        "zh": "把 gpu_memory_utilization 调到 {util:.2f} 或更高也能腾出空间（这是下限：激活值和 CUDA graph 还要再占一些）。",
        "en": " A gpu_memory_utilization of {util:.2f} or more would also leave room (a floor: activations and CUDA graphs need some more).",
    },
    "kv_cache_capacity.nothing_helps_more": {
        "zh": "加卡或调高 gpu_memory_utilization 都不够：需要更小（量化）的模型、更少的其他开销，或显存更大的 GPU。",
        "en": " Neither more GPUs nor a higher gpu_memory_utilization is enough: it needs a smaller (quantized) model, "
              "less overhead, or GPUs with more memory.",
    },
    # kv_tokens_from_memory
    "kv_tokens_from_memory.formula": {
        "zh": "KV Cache 显存 ÷ 每 token 的 KV 字节数：{numbers} 个 token",
        "en": "KV-cache memory ÷ KV bytes per token: {numbers} tokens",
    },
    "kv_tokens_from_memory.too_long_more": {
        "zh": " max_model_len {max_model_len} 单个请求就需要 {need:.2f} GiB，超过 KV Cache 的 {available:.2f} GiB，vLLM 会拒绝启动。"
              "把 --max-model-len 降到 {tokens} 以下，或调高 --gpu-memory-utilization，或增加 GPU。",
        "en": " max_model_len {max_model_len} needs {need:.2f} GiB for one request, more than the {available:.2f} GiB "
              "of KV cache: vLLM refuses to start. Lower --max-model-len to {tokens} or less, or raise "
              "--gpu-memory-utilization, or add GPUs.",
    },
    # fastdeploy_decode_budget
    "fastdeploy_decode_budget.formula": {
        "zh": "total_blocks × (1 − kv_cache_ratio) × block_size：{steps} 个解码 token",
        "en": "total_blocks × (1 − kv_cache_ratio) × block_size: {steps} decode tokens",
    },
    "fastdeploy_decode_budget.explanation": {
        "zh": "留给输出（解码）的 token 有 {decode} 个。",
        "en": "{decode} tokens are left for outputs.",
    },
    "fastdeploy_decode_budget.seqs_formula_more": {
        "zh": "；max_num_seqs = 解码 token ÷ 平均输出 token：{decode} ÷ {avg_output_tokens} = {seqs}",
        "en": "; max_num_seqs = decode tokens ÷ average output tokens: {decode} ÷ {avg_output_tokens} = {seqs}",
    },
    "fastdeploy_decode_budget.seqs_more": {
        "zh": " 平均每个请求输出 {avg_output_tokens} token 时，可支撑 max_num_seqs ≈ {seqs}（FastDeploy FAQ 建议不超过 128）；"
              "如果出现 free_list_len: 0，调小 kv_cache_ratio。",
        "en": " At {avg_output_tokens} output tokens per request that supports max_num_seqs ≈ {seqs} (the FastDeploy FAQ advises "
              "no more than 128); if outputs run short of blocks (free_list_len: 0), lower kv_cache_ratio.",
    },
    # logprobs_message_size
    "logprobs_message_size.formula": {
        "zh": "{symbolic}：{steps} 字节",
        "en": "{symbolic}: {steps} bytes",
    },
    "logprobs_message_size.fits": {
        "zh": "单条消息 {size:,} 字节，没有超过 kernel.msgmax（{limit:,}）。",
        "en": "One message is {size:,} bytes, within kernel.msgmax ({limit:,}).",
    },
    "logprobs_message_size.too_big": {
        "zh": "单条消息 {size:,} 字节，超过 kernel.msgmax（{limit:,}），进程间通信会阻塞，请求卡住。"
              "调大限制：sysctl -w kernel.msgmax={recommended_msgmax}，sysctl -w kernel.msgmnb={recommended_msgmnb}"
              "（Docker 中需 --privileged 或在启动参数里设置）。",
        "en": "One message is {size:,} bytes, larger than kernel.msgmax ({limit:,}): the IPC blocks and requests hang. "
              "Raise it: sysctl -w kernel.msgmax={recommended_msgmax} and sysctl -w kernel.msgmnb={recommended_msgmnb} "
              "(in Docker: --privileged, or set them in the container's start-up options).",
    },
    "logprobs_message_size.queue_formula_more": {
        "zh": "；每个队列能放的消息数 = msgmnb ÷ 消息大小：{msgmnb:,} ÷ {size:,} = {per_queue}",
        "en": "; messages per queue = msgmnb ÷ message size: {msgmnb:,} ÷ {size:,} = {per_queue}",
    },
    "logprobs_message_size.queue_more": {
        "zh": " 一个队列（kernel.msgmnb {msgmnb:,}）能放 {per_queue} 条这样的消息。",
        "en": " One queue (kernel.msgmnb {msgmnb:,}) holds {per_queue} such messages.",
    },
    "logprobs_message_size.queue_too_small_more": {
        "zh": " kernel.msgmnb（{msgmnb:,}）比一条消息还小，队列里一条都放不下：需要调大 kernel.msgmnb。",
        "en": " kernel.msgmnb ({msgmnb:,}) is smaller than one message, so not even one fits in a queue: raise kernel.msgmnb.",
    },
    # diagnose_log: sums over the numbers found in a log
    "diagnose_log.kv_cache_from_blocks": {
        "zh": "num_blocks_global {blocks} × block_size {block_size} = {total:,} 个 token 的 KV Cache（除以每个请求平均的输入 + 输出 token 数，就是实际并发）",
        "en": "num_blocks_global {blocks} × block_size {block_size} = {total:,} tokens of KV cache "
              "(divide by the average prompt + output tokens per request for the real concurrency)",
    },
    "diagnose_log.kv_max_model_len": {
        "zh": "按你的报错，KV Cache 最多装下 {fits:,} 个 token（要求的是 {asked:,}）：用 `--max-model-len {fits}` 或更小就能启动，"
              "要更长就调高 `--gpu-memory-utilization` 或加 GPU",
        "en": "by your error, the KV cache holds at most {fits:,} tokens ({asked:,} were asked for): `--max-model-len {fits}` or lower "
              "starts; for longer, raise `--gpu-memory-utilization` or add GPUs",
    },
    "diagnose_log.kv_max_model_len_cpu": {
        "zh": "按你的报错，KV Cache 最多装下 {fits:,} 个 token（要求的是 {asked:,}）：用 `--max-model-len {fits}` 或更小就能启动；"
              "这是 vLLM 的 CPU 后端，KV Cache 用的是内存，要更长就调大 `VLLM_CPU_KVCACHE_SPACE`（单位 GiB）",
        "en": "by your error, the KV cache holds at most {fits:,} tokens ({asked:,} were asked for): `--max-model-len {fits}` or lower "
              "starts; this is vLLM's CPU backend, whose KV cache is host memory: for longer, raise `VLLM_CPU_KVCACHE_SPACE` (GiB)",
    },
    "diagnose_log.kv_max_model_len_estimated_cpu": {
        "zh": "按你的报错，KV Cache 大约能装下 {fits:,} 个 token（{asked:,} × 可用 {free:g} ÷ 需要 {needed:g}，KV Cache 按 token 数等比例增长）："
              "用 `--max-model-len {fits}` 或略小一些就能启动；这是 vLLM 的 CPU 后端，KV Cache 用的是内存，要更长就调大 "
              "`VLLM_CPU_KVCACHE_SPACE`（单位 GiB）",
        "en": "by your error, the KV cache holds about {fits:,} tokens ({asked:,} × {free:g} free ÷ {needed:g} needed: KV memory grows in "
              "proportion to the tokens): `--max-model-len {fits}` or a little lower starts; this is vLLM's CPU backend, whose KV cache "
              "is host memory: for longer, raise `VLLM_CPU_KVCACHE_SPACE` (GiB)",
    },
    "diagnose_log.kv_max_model_len_at_ceiling": {
        "zh": "按你的报错，KV Cache 最多装下 {fits:,} 个 token（要求的是 {asked:,}）：用 `--max-model-len {fits}` 或更小就能启动；"
              "`--gpu-memory-utilization` 已经是 {util}，要更长就加 GPU",
        "en": "by your error, the KV cache holds at most {fits:,} tokens ({asked:,} were asked for): `--max-model-len {fits}` or lower "
              "starts; `--gpu-memory-utilization` is already {util}, so for longer, add GPUs",
    },
    "diagnose_log.kv_max_model_len_estimated_at_ceiling": {
        "zh": "按你的报错，KV Cache 大约能装下 {fits:,} 个 token（{asked:,} × 可用 {free:g} ÷ 需要 {needed:g}，KV 显存按 token 数等比例增长）："
              "用 `--max-model-len {fits}` 或略小一些就能启动；`--gpu-memory-utilization` 已经是 {util}，要更长就加 GPU",
        "en": "by your error, the KV cache holds about {fits:,} tokens ({asked:,} × {free:g} free ÷ {needed:g} needed: KV memory grows in "
              "proportion to the tokens): `--max-model-len {fits}` or a little lower starts; `--gpu-memory-utilization` is already "
              "{util}, so for longer, add GPUs",
    },
    "diagnose_log.kv_max_model_len_estimated": {
        "zh": "按你的报错，KV Cache 大约能装下 {fits:,} 个 token（{asked:,} × 可用 {free:g} ÷ 需要 {needed:g}，KV 显存按 token 数等比例增长）："
              "用 `--max-model-len {fits}` 或略小一些就能启动，要更长就调高 `--gpu-memory-utilization` 或加 GPU",
        "en": "by your error, the KV cache holds about {fits:,} tokens ({asked:,} × {free:g} free ÷ {needed:g} needed: KV memory grows in "
              "proportion to the tokens): `--max-model-len {fits}` or a little lower starts; for longer, raise `--gpu-memory-utilization` "
              "or add GPUs",
    },
    "diagnose_log.derived_sliding_window": {
        "zh": "按你的报错，{derived:,} 个 token 的上限是模型的滑动窗口（要求的是 {asked:,}）：滑动窗口被关掉时，vLLM 把窗口当作整个上下文。"
              "关掉它的是 `--disable-sliding-window`，或是 vLLM 自己（旧版 vLLM 上的 Gemma 2；V0 引擎上用 `VLLM_ATTENTION_BACKEND` "
              "指定了 XFORMERS/FLASHINFER 时）。设置了这个参数就去掉它，否则升级 vLLM 或取消 `VLLM_ATTENTION_BACKEND`，"
              "就能用模型的完整上下文；不然用 `--max-model-len {derived}` 或更小",
        "en": "by your error, the {derived:,}-token limit is the model's sliding window ({asked:,} were asked for): with the "
              "window turned off, vLLM takes it as the whole context. `--disable-sliding-window` turns it off, or vLLM itself "
              "does (Gemma 2 on older vLLM; the V0 engine with XFORMERS or FLASHINFER set in `VLLM_ATTENTION_BACKEND`). "
              "If that flag is set, drop it; otherwise upgrade vLLM or unset `VLLM_ATTENTION_BACKEND` to serve the model's "
              "full context; or use `--max-model-len {derived}` or lower",
    },
    "diagnose_log.derived_max_len": {
        "zh": "按你的报错，这个模型的 config.json 最多允许 {derived:,} 个 token（要求的是 {asked:,}），与显存无关：用 `--max-model-len {derived}` "
              "或更小就能启动。要更长，只能打开模型卡写明的位置编码缩放（YaRN；新版 vLLM 用 `--hf-overrides` 传 `rope_scaling`），"
              "模型卡没写就不行；`VLLM_ALLOW_LONG_MAX_MODEL_LEN=1` 只是跳过检查，超出训练长度的输出不可靠",
        "en": "by your error, this model's config.json allows at most {derived:,} tokens ({asked:,} were asked for), whatever the "
              "memory: `--max-model-len {derived}` or lower starts. Longer needs the rope scaling (YaRN) its model card documents "
              "(current vLLM: a `rope_scaling` block through `--hf-overrides`), and nothing if it documents none; "
              "`VLLM_ALLOW_LONG_MAX_MODEL_LEN=1` only skips the check, and outputs past the trained length are unreliable",
    },
    "diagnose_log.vllm_concurrency": {
        "zh": "KV Cache 共 {tokens:,.0f} 个 token，可同时容纳 {times} 个 {per_request:,.0f} token 的请求",
        "en": "GPU KV cache size {tokens:,.0f} tokens holds {times}x requests of {per_request:,.0f} tokens at once",
    },
    "diagnose_log.kv_cache_full_waiting": {
        "zh": "GPU KV cache 使用率 {pct:g}% 时有 {waiting} 个请求在排队：是 KV Cache 满了让请求排队，不是服务卡死",
        "en": "GPU KV cache usage at {pct:g}% with {waiting} requests waiting: requests queue because the KV cache is full, not because the server hangs",
    },
}
