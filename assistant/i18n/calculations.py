"""Capacity-calculation texts: parameter names, where to read each value, formulas, headings,
and the notes that say which value was assumed or is missing. Keys: name.*, where.*, formula.*,
heading.*, source.*, sep.* (list separators differ by language), default.*, problem.*."""

MESSAGES = {
    'name.num_blocks': {
        "zh": 'num_blocks（block 总数）',
        "en": 'num_blocks',
    },
    'name.block_size': {
        "zh": 'block_size',
        "en": 'block_size',
    },
    'name.tokens_per_request': {
        "zh": '每个请求的 token 数（输入 + 输出）',
        "en": 'tokens per request (prompt + output)',
    },
    'name.input_tokens': {
        "zh": '平均输入 token 数',
        "en": 'average input (prompt) tokens',
    },
    'name.output_tokens': {
        "zh": '平均输出 token 数',
        "en": 'average output tokens',
    },
    'name.sessions': {
        "zh": '并发会话数',
        "en": 'concurrent sessions',
    },
    'name.max_num_seqs': {
        "zh": 'max_num_seqs',
        "en": 'max_num_seqs',
    },
    'name.kv_cache_tokens': {
        "zh": 'GPU KV cache size（token 数）',
        "en": 'GPU KV cache size (tokens)',
    },
    'name.max_model_len': {
        "zh": 'max_model_len',
        "en": 'max_model_len',
    },
    'name.kv_cache_ratio': {
        "zh": 'kv_cache_ratio',
        "en": 'kv_cache_ratio',
    },
    'name.num_layers': {
        "zh": '层数',
        "en": 'layers',
    },
    'name.num_kv_heads': {
        "zh": 'KV 头数',
        "en": 'KV heads',
    },
    'name.head_dim': {
        "zh": 'head_dim',
        "en": 'head_dim',
    },
    'name.dtype': {
        "zh": 'KV Cache 的 dtype',
        "en": 'KV-cache dtype',
    },
    'name.tensor_parallel_size': {
        "zh": 'tensor_parallel_size',
        "en": 'tensor_parallel_size',
    },
    'name.gpu_memory': {
        "zh": '单卡显存（GiB）',
        "en": 'GPU memory (GiB)',
    },
    'name.weights': {
        "zh": '权重大小（GiB）',
        "en": 'weights (GiB)',
    },
    'name.kv_cache_memory': {
        "zh": 'KV Cache 显存（GiB）',
        "en": 'KV-cache memory (GiB)',
    },
    'name.gpu_memory_utilization': {
        "zh": 'gpu_memory_utilization',
        "en": 'gpu_memory_utilization',
    },
    'name.kv_bytes_per_token': {
        "zh": '每 token 的 KV 字节数',
        "en": 'KV bytes per token',
    },
    'name.msgmax': {
        "zh": 'kernel.msgmax',
        "en": 'kernel.msgmax',
    },
    'name.msgmnb': {
        "zh": 'kernel.msgmnb',
        "en": 'kernel.msgmnb',
    },
    'name.top_logprobs': {
        "zh": 'top_logprobs',
        "en": 'top_logprobs',
    },
    'name.max_batch': {
        "zh": 'max_batch',
        "en": 'max_batch',
    },
    'name.mtp_tokens': {
        "zh": 'mtp_tokens',
        "en": 'mtp_tokens',
    },
    'name.tokens': {
        "zh": 'token 数',
        "en": 'tokens',
    },
    'name.gpu_count': {
        "zh": 'GPU 数',
        "en": 'GPUs',
    },
    'name.num_attention_heads': {
        "zh": '注意力头数',
        "en": 'attention heads',
    },
    'name.prefill_blocks': {
        "zh": 'prefill_kvcache_block_num',
        "en": 'prefill_kvcache_block_num',
    },
    'name.max_concurrency_tokens': {
        "zh": 'Maximum concurrency 日志行',
        "en": 'Maximum concurrency line',
    },
    'name.max_concurrency_x': {
        "zh": 'Maximum concurrency（倍数）',
        "en": 'Maximum concurrency (x)',
    },
    'name.hidden_size': {
        "zh": 'hidden_size',
        "en": 'hidden_size',
    },
    'name.kv_lora_rank': {
        "zh": 'kv_lora_rank',
        "en": 'kv_lora_rank',
    },
    'name.qk_rope_head_dim': {
        "zh": 'qk_rope_head_dim',
        "en": 'qk_rope_head_dim',
    },
    'name.mtp': {
        "zh": 'MTP',
        "en": 'MTP',
    },
    'where.num_blocks': {
        "zh": 'FastDeploy 的 `log/worker_process.log` 里的 `num_blocks_global`（或 `log/fastdeploy.log` 里的 `total_block_num`）；vLLM 的日志给的是 `GPU KV cache size: N tokens`',
        "en": "`num_blocks_global` in FastDeploy's `log/worker_process.log` (or `total_block_num` in `log/fastdeploy.log`); vLLM logs `GPU KV cache size: N tokens` instead",
    },
    'where.num_blocks.fastdeploy': {
        "zh": 'FastDeploy 的 `log/worker_process.log` 里的 `num_blocks_global`（或 `log/fastdeploy.log` 里的 `total_block_num`）',
        "en": "`num_blocks_global` in FastDeploy's `log/worker_process.log` (or `total_block_num` in `log/fastdeploy.log`)",
    },
    'where.num_blocks.vllm': {
        "zh": 'vLLM 的启动日志：`GPU KV cache size: N tokens`（V1 引擎；贴进问题就按 token 数计算），老的 V0 引擎是 `# GPU blocks: N`（`num_blocks_global` 是 FastDeploy 的日志）',
        "en": "vLLM's start-up log: `GPU KV cache size: N tokens` (V1 engine; paste it into the question and it is computed from tokens), or `# GPU blocks: N` on the old V0 engine (`num_blocks_global` is FastDeploy's log)",
    },
    'where.tokens_per_request': {
        "zh": '从实际流量统计：响应里的 `usage.prompt_tokens` + `usage.completion_tokens`',
        "en": 'measure it from your traffic: `usage.prompt_tokens` + `usage.completion_tokens` of the responses',
    },
    'where.input_tokens': {
        "zh": '响应里的 `usage.prompt_tokens`；KV Cache 同时存输入和输出',
        "en": '`usage.prompt_tokens` of the responses; the KV cache holds prompt and output',
    },
    'where.output_tokens': {
        "zh": '响应里的 `usage.completion_tokens`；KV Cache 同时存输入和输出',
        "en": '`usage.completion_tokens` of the responses; the KV cache holds prompt and output',
    },
    'where.sessions': {
        "zh": '你希望同时服务的会话（请求）数',
        "en": 'the number of sessions (requests) you want to serve at once',
    },
    'where.kv_cache_tokens': {
        "zh": 'vLLM 启动日志里的 `GPU KV cache size: N tokens`',
        "en": "`GPU KV cache size: N tokens` in vLLM's start-up log",
    },
    'where.max_model_len': {
        "zh": '要检查的 `--max-model-len`（或每个请求平均的 token 数）',
        "en": 'the `--max-model-len` to check (or the average tokens per request)',
    },
    'where.num_layers': {
        "zh": '模型 config.json 里的 `num_hidden_layers`',
        "en": "`num_hidden_layers` in the model's config.json",
    },
    'where.num_kv_heads': {
        "zh": 'config.json 里的 `num_key_value_heads`（GQA 模型比 `num_attention_heads` 小）',
        "en": '`num_key_value_heads` in config.json (with GQA it is smaller than `num_attention_heads`)',
    },
    'where.head_dim': {
        "zh": 'config.json 里的 `head_dim`，或 `hidden_size` ÷ `num_attention_heads`',
        "en": '`head_dim` in config.json, or `hidden_size` ÷ `num_attention_heads`',
    },
    'where.kv_lora_rank': {
        "zh": '模型 config.json 里的 `kv_lora_rank`（MLA 模型）',
        "en": "`kv_lora_rank` in the model's config.json (MLA models)",
    },
    'where.qk_rope_head_dim': {
        "zh": '模型 config.json 里的 `qk_rope_head_dim`（MLA 模型）',
        "en": "`qk_rope_head_dim` in the model's config.json (MLA models)",
    },
    'where.dtype': {
        "zh": 'config.json 里的 `torch_dtype`（bf16/fp16），或 `--kv-cache-dtype`（fp8）',
        "en": '`torch_dtype` in config.json (bf16/fp16), or `--kv-cache-dtype` (fp8)',
    },
    'where.gpu_memory': {
        "zh": '单卡总显存：`nvidia-smi` 或 `assistant tool gpu_status`',
        "en": "one GPU's total memory: `nvidia-smi` or `assistant tool gpu_status`",
    },
    'where.weights': {
        "zh": 'vLLM 启动日志：`Model loading took N GiB`（每张卡的；整个模型是 N × 张量并行数）',
        "en": "vLLM's start-up log: `Model loading took N GiB` (per GPU; the whole model is N × tensor_parallel_size)",
    },
    'where.weights.fastdeploy': {
        "zh": '模型目录里权重文件的大小：`du -shL <模型目录>`（-L 跟随 Hugging Face 缓存里的符号链接；bf16 约为 2 字节 × 参数量；整个模型的，不是每张卡的）',
        "en": "the size of the weight files in the model directory: `du -shL <model dir>` (-L follows a Hugging Face cache's symlinks; bf16 is about 2 bytes × parameters; the whole model, not one GPU's)",
    },
    'where.kv_cache_memory': {
        "zh": 'vLLM 启动日志：`Available KV cache memory: N GiB`',
        "en": "vLLM's start-up log: `Available KV cache memory: N GiB`",
    },
    'where.kv_bytes_per_token': {
        "zh": '`assistant tool kv_bytes_per_token num_layers=… num_kv_heads=… head_dim=… dtype=…`（或 config_path=模型的 config.json），或在问题里写出层数、KV 头数、head_dim 和 dtype',
        "en": '`assistant tool kv_bytes_per_token num_layers=… num_kv_heads=… head_dim=… dtype=…` (or config_path=the model\'s config.json), or give layers, KV heads, head_dim and dtype in the question',
    },
    'formula.kv_concurrency': {
        "zh": '并发 = num_blocks × block_size ÷ 每个请求的 token 数（输入 + 输出），且不超过 max_num_seqs',
        "en": 'concurrency = num_blocks × block_size ÷ tokens per request (prompt + output), capped by max_num_seqs',
    },
    'formula.blocks_needed': {
        "zh": 'block 数 = ceil(每个会话的 token 数 ÷ block_size) × 会话数',
        "en": 'blocks = ceil(tokens per session ÷ block_size) × sessions',
    },
    'formula.kv_tokens_concurrency': {
        "zh": '并发 = GPU KV cache size（token 数）÷ 每个请求的 token 数（满长度请求就是 --max-model-len），按整 block 计',
        "en": 'concurrency = GPU KV cache size (tokens) ÷ tokens per request (the --max-model-len for full-length requests), in whole KV blocks',
    },
    'formula.kv_bytes_per_token': {
        "zh": '每 token 字节数 = 2 × 层数 × KV 头数 × head_dim × dtype 字节数（每张卡：KV 头数 ÷ TP）',
        "en": 'bytes per token = 2 × layers × KV heads × head_dim × dtype bytes (per GPU: KV heads ÷ TP)',
    },
    'formula.kv_cache_capacity': {
        "zh": '每张卡的 KV token 数 = (显存 GiB × gpu_memory_utilization − 权重 ÷ TP) ÷ 每 token 的 KV 字节数；并发 = KV token 数 ÷ max_model_len',
        "en": 'KV tokens per GPU = (GPU GiB × gpu_memory_utilization − weights ÷ TP) ÷ KV bytes per token; concurrency = KV tokens ÷ max_model_len',
    },
    'formula.kv_memory_needed': {
        "zh": 'KV Cache 显存 = 会话数 × 每个会话的 token 数 × 每 token 的 KV 字节数（每张卡：再按张量并行切分）',
        "en": 'KV-cache memory = sessions × tokens per session × KV bytes per token (per GPU: split over tensor parallelism)',
    },
    'formula.kv_tokens_from_memory': {
        "zh": 'KV token 数 = KV Cache 显存 ÷ 每 token 的 KV 字节数；并发 = KV token 数 ÷ max_model_len',
        "en": 'KV tokens = KV-cache memory ÷ KV bytes per token; concurrency = KV tokens ÷ max_model_len',
    },
    'formula.fastdeploy_decode_budget': {
        "zh": '解码 token 数 = total_blocks × (1 − kv_cache_ratio) × block_size；max_num_seqs = 解码 token 数 ÷ 平均输出 token 数',
        "en": 'decode tokens = total_blocks × (1 − kv_cache_ratio) × block_size; max_num_seqs = decode tokens ÷ average output tokens',
    },
    'formula.kv_bytes_per_token_mla': {
        "zh": '每 token 字节数 = 层数 × (kv_lora_rank + qk_rope_head_dim) × dtype 字节数（MLA：只存一个 latent）',
        "en": 'bytes per token = layers × (kv_lora_rank + qk_rope_head_dim) × dtype bytes (MLA: one latent, no K/V factor)',
    },
    'formula.logprobs_message_size': {
        "zh": '消息字节数由 batch、top_logprobs 和 MTP 决定；每个队列的消息数 = kernel.msgmnb ÷ 消息字节数',
        "en": 'message bytes from batch, top_logprobs and MTP; messages per queue = kernel.msgmnb ÷ message bytes',
    },
    'heading.done': {
        "zh": '计算结果',
        "en": 'Calculation',
    },
    'heading.missing': {
        "zh": '计算：还缺数据，暂不计算',
        "en": 'Calculation: more numbers needed, nothing computed',
    },
    'heading.formula': {
        "zh": '公式：',
        "en": 'Formula: ',
    },
    'heading.values': {
        "zh": '使用的数值：',
        "en": 'Values used:',
    },
    'heading.need': {
        "zh": '缺少：',
        "en": 'Missing:',
    },
    'heading.given': {
        "zh": '已知：',
        "en": 'Given: ',
    },
    'heading.ask': {
        "zh": '请确认：',
        "en": 'Please check:',
    },
    'heading.notes': {
        "zh": '说明：',
        "en": 'Notes:',
    },
    'sep.list': {
        "zh": '、',
        "en": ', ',
    },
    'sep.and': {
        "zh": '、',
        "en": ' and ',
    },
    'sep.given': {
        "zh": '；',
        "en": '; ',
    },
    'sep.example': {
        "zh": '，',
        "en": ', ',
    },
    'shown': {
        "zh": '{name} = {approx}{number}（{source}）',
        "en": '{name} = {approx}{number} ({source})',
    },
    'source.question': {
        "zh": '来自问题：“{written}”',
        "en": 'from the question: "{written}"',
    },
    'source.log': {
        "zh": '来自日志：`{written}`',
        "en": 'from the log: `{written}`',
    },
    'source.default': {
        "zh": '默认值，见下方说明',
        "en": 'default, see the note below',
    },
    'source.model': {
        "zh": '内置模型表：{written}',
        "en": 'built-in model table: {written}',
    },
    'source.derived': {
        "zh": '推算：{written}',
        "en": 'derived: {written}',
    },
    'twice_in_question': {
        "zh": '问题里 {name} 出现了不止一个值（{values}），用哪一个？',
        "en": 'the question gives {name} more than once ({values}); which one is it?',
    },
    'card_memory': {
        "zh": '{card} 标称 {text}，nvidia-smi 显示的总显存是 {mib} MiB（{gib} GiB），按这个算',
        "en": '{card} ({text} as sold): nvidia-smi reports {mib} MiB ({gib} GiB); computed with that',
    },
    'binary_units': {
        "zh": '{text} 按二进制单位计算（{scale} 即 {unit}iB），与 nvidia-smi 和 vLLM 的口径一致',
        "en": '{text} is read in binary units ({scale} as {unit}iB), as nvidia-smi and vLLM report memory',
    },
    'decimal_k': {
        "zh": '{text} 按 {value} 计算；如果指的是 1024 的倍数，请写 {binary}',
        "en": '{text} is read as {value}; write {binary} if you mean multiples of 1024',
    },
    'over_max_model_len': {
        "zh": '每个请求 {stated} token 超过了 --max-model-len {limit}：vLLM 会直接拒绝这样的请求（HTTP 400），这里按 {limit} 计算',
        "en": 'requests of {stated} tokens are over --max-model-len {limit}: vLLM refuses them (HTTP 400), so this computes with {limit}',
    },
    'binary_elsewhere': {
        "zh": '{text} 按 {value} 计算：问题或日志里的大小是按 1024 写的',
        "en": '{text} is read as {value}: the question or its log writes sizes in multiples of 1024',
    },
    'binary_k': {
        "zh": '{text} 按 {value} 计算：vLLM 把 --max-model-len 的大写 K 当作 1024（小写 k 是 1000）',
        "en": '{text} is read as {value}, as vLLM reads an upper-case K in --max-model-len (1024; a lower-case k is 1000)',
    },
    'question_over_log': {
        "zh": '日志里 {setting} 是 {logged}；按问题里的 {text} 计算',
        "en": "the log says {setting} {logged}; the question's {text} is used",
    },
    'log_gives_several': {
        "zh": '日志里 {name} 有多个值（{values}），用哪一个？',
        "en": 'the log gives {name} as {values}; which one is it?',
    },
    'problem.range': {
        "zh": '{text} 是一个范围，请给出 {name} 的一个平均值',
        "en": '{text} is a range; give one average value for {name}',
    },
    'problem.negative': {
        "zh": '{name} 必须是正数，不能是 {text}',
        "en": '{name} must be positive, not {text}',
    },
    'problem.too_large': {
        "zh": '{text}… 太大了，不像真实的 {name}',
        "en": '{text}… is too large to be a real {name}',
    },
    'problem.not_integer': {
        "zh": '{name} 必须是整数，不能是 {text}',
        "en": '{name} must be a whole number, not {text}',
    },
    'problem.gpu_memory_total': {
        "zh": '{text} 比任何一张卡的显存都大（目前最大约 288 GB）：像是几张卡的总和；请给出单卡显存和 tensor_parallel_size',
        "en": "{text} is more than any one GPU has (the largest hold about 288 GB): it reads as several GPUs' total; give one GPU's memory and tensor_parallel_size",
    },
    'problem.garbled': {
        "zh": '{text} 读不成一个数（是不是把 0 打成了字母 O，或把 1 打成了 l？），请改正后再问',
        "en": 'I could not read {text} as a number (a letter O typed for a zero, or l for a one?); correct it and ask again',
    },
    'problem.other': {
        "zh": '{text} 不能作为 {name}',
        "en": '{text} cannot be used as {name}',
    },
    'default.block_size_vllm': {
        "zh": '问题里没有给 block_size，按 vLLM 的默认值 16（CUDA）计算；如果不同，请写明，例如 `block_size 32`',
        "en": "block_size 16 is vLLM's default (CUDA), used because the question does not give it; say e.g. `block_size 32` if yours differs",
    },
    'default.block_size_fastdeploy': {
        "zh": '问题里没有给 block_size，按 FastDeploy 的默认值 64 计算（vLLM 默认是 16）；如果不同，请写明，例如 `block_size 128`',
        "en": "block_size 64 is FastDeploy's default, used because the question does not give it (vLLM's default is 16); say e.g. `block_size 128` if yours differs",
    },
    'sum_mismatch': {
        "zh": '输入 {given_in} + 输出 {given_out} 与问题里的 {total} 不一致，以哪个为准？',
        "en": 'input {given_in} + output {given_out} is not the stated {total}; which total is right?',
    },
    'part_unclear_output': {
        "zh": '每个请求 {total} 里是否已含输出 {part}？若 {total} 只是输入，每个请求就是 {total} + {part}；请说明',
        "en": 'does {total} per request already include the {part} output tokens? If {total} is the prompt alone, a request holds {total} + {part}; say which',
    },
    'part_unclear_input': {
        "zh": '每个请求 {total} 里是否已含输入 {part}？若 {total} 只是输出，每个请求就是 {total} + {part}；请说明',
        "en": 'does {total} per request already include the {part} prompt tokens? If {total} is the output alone, a request holds {total} + {part}; say which',
    },
    'full_length': {
        "zh": '按满长度 max_model_len 计算（最坏情况）；给出每个请求的平均 token 数可得到常规流量下的结果',
        "en": 'requests are taken at the full max_model_len (the worst case); give the average tokens per request for typical traffic',
    },
    'derived_kv_size': {
        "zh": 'KV Cache 大小由 `Maximum concurrency for {per} tokens per request: {times}x` 推算（vLLM 保留两位小数）；`GPU KV cache size: N tokens` 更精确',
        "en": 'the KV cache size is derived from `Maximum concurrency for {per} tokens per request: {times}x` (vLLM rounds that to 2 decimals); `GPU KV cache size: N tokens` gives it exactly',
    },
    'several_dtypes': {
        "zh": '问题里有多个 dtype（{dtypes}），KV Cache 用的是哪一个？',
        "en": 'the question names several dtypes ({dtypes}); which one does the KV cache use?',
    },
    'kv_heads': {
        "zh": '{heads} 个头是 KV 头（num_key_value_heads）吗？GQA 模型的 KV 头比注意力头少',
        "en": 'are the {heads} heads KV heads (num_key_value_heads)? With GQA there are fewer KV heads than attention heads',
    },
    'default.gpu_memory_utilization': {
        "zh": '问题里没有给 gpu_memory_utilization，按默认值 0.9 计算（vLLM 和 FastDeploy 都是 0.9）',
        "en": "gpu_memory_utilization 0.9 is the default (vLLM's and FastDeploy's alike), used because the question does not give it",
    },
    'per_gpu_kv': {
        "zh": '{given} 是整个模型每 token 的 KV，还是 TP {tp} 时每张卡的？请给出每张卡的数值',
        "en": 'is {given} per token for the whole model or per GPU at tensor_parallel_size {tp}? Give the per-GPU figure',
    },
    'weights.need_gpus': {
        "zh": '光权重就约 {weights} GiB（{params}B 参数 × {bytes} 字节，{fmt}），一张 {gpu} GiB 的卡放不下，调任何参数都没用：'
              '至少要 {needed} 张这样的卡，用 `--tensor-parallel-size` 切分{quantize}',
        "en": 'the weights alone are about {weights} GiB ({params}B parameters × {bytes} bytes, {fmt}), more than one {gpu} GiB GPU '
              'holds, and no flag or memory setting changes that: split them over at least {needed} such GPUs with '
              '`--tensor-parallel-size`{quantize}',
    },
    'weights.do_not_fit': {
        "zh": '光权重就约 {weights} GiB（{params}B 参数 × {bytes} 字节，{fmt}），超过你这 {count} 张 × {gpu} GiB = {total} GiB 的显存，'
              '调任何参数都没用：至少要 {needed} 张这样的卡（`--tensor-parallel-size`）{quantize}',
        "en": 'the weights alone are about {weights} GiB ({params}B parameters × {bytes} bytes, {fmt}), more than your {count} × {gpu} GiB '
              '= {total} GiB of GPU memory, and no flag or memory setting changes that: they need at least {needed} such GPUs '
              '(`--tensor-parallel-size`){quantize}',
    },
    'weights.size_only': {
        "zh": '光权重就约 {weights} GiB（{params}B 参数 × {bytes} 字节，{fmt}）。只算权重，至少要 {counts}'
              '（`--tensor-parallel-size` 取 2 的幂）；上下文和并发请求的 KV Cache 还要另外的显存：'
              '每 token 2 × 层数 × KV 头数 × head_dim × 字节数，这几项看模型的 config.json',
        "en": 'the weights alone are about {weights} GiB ({params}B parameters × {bytes} bytes, {fmt}). For the weights alone '
              'that is at least {counts} (`--tensor-parallel-size` takes powers of two); the KV cache for the context and the '
              'concurrent requests needs memory on top: 2 × layers × KV heads × head_dim × bytes per token, from the model\'s '
              'config.json',
    },
    'weights.per_gpu_log': {
        "zh": 'vLLM 日志里的 `Model loading took {text}` 是每张卡的权重：按张量并行 {tp} 换算成整个模型的 {tp} × {text} 计算',
        "en": "vLLM's `Model loading took {text}` is the weights on each GPU: counted as {tp} × {text} for the whole model at tensor_parallel_size {tp}",
    },
    'weights.with_kv': {
        "zh": '权重约 {weights} GiB（{params}B 参数 × {bytes} 字节，{fmt}）；{requests} 个 {tokens} token 的请求，KV Cache 还要约 {kv} GiB'
              '（{model} 每 token {per_token} KiB），合计约 {total} GiB。按每张卡的 gpu_memory_utilization {util} 算，只放这两项就至少要 {counts}'
              '（`--tensor-parallel-size` 取 2 的幂）；这是下限：激活和 CUDA Graph 还要显存，实际往往还要更多',
        "en": 'the weights are about {weights} GiB ({params}B parameters × {bytes} bytes, {fmt}), and the KV cache for {requests} of {tokens} '
              'tokens adds about {kv} GiB ({model}: {per_token} KiB per token), about {total} GiB together. '
              'At gpu_memory_utilization {util} of each GPU, those two alone take at least {counts} (`--tensor-parallel-size` takes '
              'powers of two); that is a floor: activations and CUDA graphs need memory too, so the real need is often higher',
    },
    'weights.rate': {
        "zh": '每秒（或每分钟）多少个请求是到达速率，不是同时在跑的请求数：同时在跑的约为 速率 × 每个请求从进到出的时长；上面只算了这些请求的 KV Cache，'
              '同时在跑的数目确定后再按它乘上去',
        "en": 'A request rate (per second or minute) is how fast requests arrive, not how many run at once: those in flight are about the '
              'rate × the time each request takes end to end; the KV cache above is only for the requests counted, so multiply it by the '
              'number in flight',
    },
    'weights.fit_floor': {
        "zh": '光权重约 {weights} GiB（{params}B 参数 × {bytes} 字节，{fmt}），按每张卡的 gpu_memory_utilization 0.9 算，'
              '只放权重至少要 {needed} 张 {gpu} GiB 的卡',
        "en": 'the weights are about {weights} GiB ({params}B parameters × {bytes} bytes, {fmt}): at gpu_memory_utilization 0.9 '
              'of each GPU, the weights alone take at least {needed} GPU(s) of {gpu} GiB',
    },
    'weights.kv_on_top': {
        "zh": '。这只是放下权重的下限：上下文和并发请求的 KV Cache 还要另外的显存（每 token 2 × 层数 × KV 头数 × '
              'head_dim × 字节数，看模型的 config.json），长上下文往往还要再多几张卡',
        "en": '. That is the floor for the weights alone: the KV cache for the context and the concurrent requests needs memory '
              'on top (2 × layers × KV heads × head_dim × bytes per token, from the model\'s config.json), and a long context '
              'often takes more GPUs still',
    },
    'weights.quantize': {
        "zh": '，或者换量化版本（AWQ/GPTQ/FP8）',
        "en": ', or a quantized checkpoint (AWQ/GPTQ/FP8)',
    },
    'weights.format_16bit': {
        "zh": '问题里没提量化，按 bf16/fp16 算',
        "en": 'bf16/fp16, as the question names no quantization',
    },
    'weights.format_8bit': {
        "zh": '8 bit 量化；仍是 16 bit 的词嵌入和输出层也按 8 bit 算了，实际更大',
        "en": '8-bit; the embeddings and output layer, which stay 16-bit, counted at 8 bits: the real size is larger',
    },
    'weights.format_4bit': {
        "zh": '4 bit 量化；未计缩放参数，仍是 16 bit 的词嵌入和输出层也按 4 bit 算了，实际更大',
        "en": '4-bit; scales not counted, and the embeddings and output layer, which stay 16-bit, counted at 4 bits: the real size is larger',
    },
    'default.kv_cache_ratio': {
        "zh": '问题里没有给 kv_cache_ratio，按 FastDeploy 默认值 0.75 计算',
        "en": "kv_cache_ratio 0.75 is FastDeploy's default, used because the question does not give it",
    },
    'mtp_off': {
        "zh": '问题里没有提到 MTP，按未开启计算（开启 MTP 时单条消息 {mtp_bytes} 字节）',
        "en": 'MTP is taken as off because the question does not mention it (with MTP one message is {mtp_bytes} bytes)',
    },
    'compiled_size': {
        "zh": 'FastDeploy 的消息按固定大小发送（FAQ 公式里的 512 个槽位、每个 20 个 logprobs 是编译时定好的），与请求里的 {setting} 无关：问题里的 {given} 不会让消息变小，仍按 {size} 计算',
        "en": "FastDeploy sends the message at a fixed size (the FAQ formula's 512 slots of 20 logprobs each are set when it is built), whatever a request's {setting}: the question's {given} does not make it smaller, so {size} is used",
    },
    'load.fits': {
        "zh": '问题里的 {sessions} 个 {tokens} token 的请求共需 {need} 个 token 的 KV Cache，在算出的 {kv} 个之内：放得下（KV Cache 最多能放 {fits} 个）',
        "en": 'the {sessions} requests of {tokens} tokens asked about need {need} tokens of KV cache, within the {kv} computed: they fit (the KV cache holds up to {fits} of them)',
    },
    'load.observed': {
        "zh": '你看到同时在跑的 {sessions} 个请求比 {tokens} token 短：这个数字按满长请求算；{kv} 个 token 的 KV Cache 同时放下 {sessions} 个请求，意味着它们平均最多约 {mean} 个 token',
        "en": 'the {sessions} requests you see running are shorter than {tokens} tokens: the figure counts full-length requests; {kv} tokens of KV cache hold {sessions} requests at once when they average at most about {mean} tokens',
    },
    'load.over': {
        "zh": '问题里的 {sessions} 个 {tokens} token 的请求共需 {need} 个 token 的 KV Cache，超过算出的 {kv} 个：放不下，KV Cache 同时只能放约 {fits} 个，其余排队；要放下全部，需要更多显存（加卡做张量并行）或更短的请求',
        "en": 'the {sessions} requests of {tokens} tokens asked about need {need} tokens of KV cache, more than the {kv} computed: they do not fit; the KV cache holds about {fits} at once and the rest wait. Holding them all takes more memory (more GPUs with tensor parallelism) or shorter requests',
    },
    'ceiling.vllm': {
        "zh": '这是 KV Cache 装得下的数量；vLLM 同时调度的请求数还受 --max-num-seqs 限制：默认 256（较新的 V1 版本在 70 GiB 以上、非 A100 的卡上是 1024），超出的请求排队。要用满这些 KV Cache，请调高 --max-num-seqs',
        "en": 'that is what the KV cache holds; vLLM also schedules at most --max-num-seqs requests at once: 256 by default (1024 in recent V1 releases on GPUs of 70 GiB or more that are not A100s), and the rest queue. To use this KV cache, raise --max-num-seqs',
    },
    'ceiling.fastdeploy': {
        "zh": '这是 KV Cache 装得下的数量；FastDeploy 解码阶段的并发上限 max_num_seqs 默认只有 8，没有设置时最多 8 个请求同时解码，其余排队（FAQ 建议配置为 128）',
        "en": "that is what the KV cache holds; FastDeploy's decode ceiling max_num_seqs defaults to 8, so unless it is set, at most 8 requests decode at once and the rest queue (the FAQ suggests 128)",
    },
    'faq_example': {
        "zh": '按 FastDeploy FAQ 公式里消息的固定尺寸计算：{values}（编译 FastDeploy 时定下，不随请求或批大小变化）',
        "en": "{values} are the sizes FastDeploy's message is built with (its FAQ's formula; fixed when FastDeploy is compiled, whatever a request or batch asks)",
    },
    'default.msgmnb': {
        "zh": '问题里没说调过 kernel.msgmnb（一个队列能放的字节数），按 Linux 默认值 {msgmnb} 计算：比一条消息还小时，发送会一直阻塞（`ipcs -l` 的 max size of queue 可查看）',
        "en": 'kernel.msgmnb (the bytes one queue holds) {msgmnb} is the Linux default, used because the question does not say it was raised: '
              'below one message\'s size a send blocks for good (`ipcs -l` shows max size of queue)',
    },
    'default.msgmax': {
        "zh": '问题里没有给 kernel.msgmax，按 Linux 默认值 8192 计算（`sysctl kernel.msgmax` 可查看）',
        "en": 'kernel.msgmax 8192 is the Linux default, used because the question does not give it (`sysctl kernel.msgmax` shows yours)',
    },
    'follow_up_value': {
        "zh": '{name} 按最后一句的 {new} 计算，替换了前面的 {old}',
        "en": '{name} is the last line\'s {new}, in place of {old} from before',
    },
    'blocks_at_new_size': {
        "zh": '{blocks} 个 block 是按 block_size {old} 统计的；KV Cache 显存不变，换成 block_size {new} 就是 {new_blocks} 个 block（token 总量不变）',
        "en": '{blocks} blocks were counted at block_size {old}; the KV-cache memory stays the same, so at block_size {new} it holds {new_blocks} blocks (the same tokens)',
    },
    'blocks_at_default_size': {
        "zh": '{blocks} 个 block 按 {engine} 默认的 block_size {old} 统计（问题里没写）；KV Cache 显存不变，换成 block_size {new} 就是 {new_blocks} 个 block（token 总量不变）',
        "en": "{blocks} blocks taken as counted at {engine}'s default block_size {old} (the question does not say); the KV-cache memory stays the same, so at block_size {new} it holds {new_blocks} blocks (the same tokens)",
    },
    'follow_up_which': {
        "zh": '最后一句的 {value} 要替换前面的哪个值：{names}？',
        "en": "which value does the last line's {value} replace: {names}?",
    },
    'weights_beside_kv': {
        "zh": '再加上 {model} 的 bf16 权重约 {weights} GiB，一共约 {total} GiB（还不算激活和 CUDA Graph）',
        "en": "with {model}'s bf16 weights, about {weights} GiB, that is about {total} GiB in all (before activations and CUDA graphs)",
    },
    'tp_does_not_divide': {
        "zh": 'vLLM 不接受 {model} 用 tensor_parallel_size {tp}：{heads} 个注意力头（{kv_heads} 个 KV 头）不能按 {tp} 均分，启动时就会报错；'
              '换成能整除的 TP（或用 --pipeline-parallel-size 补足卡数）',
        "en": "vLLM does not accept tensor_parallel_size {tp} for {model}: its {heads} attention heads ({kv_heads} KV heads) do not "
              "split evenly over {tp}, and start-up fails; use a TP that divides them (or --pipeline-parallel-size for the rest of the GPUs)",
    },
    'context_over_limit.yarn': {
        "zh": '{checkpoint} 的 config.json 里 max_position_embeddings 是 {tokens}：不打开 YaRN 位置编码缩放，vLLM 启动时会拒绝 '
              '{setting}（"User-specified max_model_len ... is greater than the derived max_model_len"）；模型卡写明 YaRN '
              '可到 {yarn}：`--hf-overrides \'{{"rope_scaling": {{"rope_type": "yarn", "factor": {factor}, "original_max_position_embeddings": {original}}}}}\'`（较新的 vLLM 把键名写成 rope_parameters；vLLM 的 YaRN 是静态的，短 prompt 的效果可能变差）。这里的数字只是 {length} token 的 KV 算术{base}',
        "en": "{checkpoint}'s config.json sets max_position_embeddings to {tokens}: without YaRN rope scaling, vLLM refuses "
              "{setting} at start-up (\"User-specified max_model_len ... is greater than the derived max_model_len\"); "
              "its model card documents up to {yarn} with YaRN: `--hf-overrides '{{\"rope_scaling\": {{\"rope_type\": \"yarn\", \"factor\": {factor}, \"original_max_position_embeddings\": {original}}}}}'` (newer vLLM names the key rope_parameters; vLLM's YaRN is static and can lower quality on short prompts). "
              "The figures here are only the KV arithmetic at {length} tokens{base}",
    },
    'context_over_limit.past_yarn': {
        "zh": '{checkpoint} 的 config.json 里 max_position_embeddings 是 {tokens}，模型卡写明 YaRN 最多到 {yarn}，不是 {length}：'
              'vLLM 启动时会拒绝 {setting}（"User-specified max_model_len ... is greater than the derived max_model_len"）；'
              'VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 只是跳过检查，超出文档长度的输出不可靠。这里的数字只是 {length} token 的 KV 算术{base}',
        "en": "{checkpoint}'s config.json sets max_position_embeddings to {tokens}, and its model card documents up to {yarn} "
              "with YaRN, not {length}: vLLM refuses {setting} at start-up (\"User-specified max_model_len ... is greater than "
              "the derived max_model_len\"); VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 only skips the check, and outputs past the "
              "documented length are unreliable. The figures here are only the KV arithmetic at {length} tokens{base}",
    },
    'context_over_limit.none': {
        "zh": '{checkpoint} 的 config.json 里 max_position_embeddings 是 {tokens}，模型卡没有写更长的上下文：vLLM 启动时会拒绝 '
              '{setting}（"User-specified max_model_len ... is greater than the derived max_model_len"）；'
              'VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 只是跳过检查，超出训练长度的输出不可靠。这里的数字只是 {length} token 的 KV 算术{base}',
        "en": "{checkpoint}'s config.json sets max_position_embeddings to {tokens}, and its model card documents no longer context: vLLM "
              "refuses {setting} at start-up (\"User-specified max_model_len ... is greater than the derived "
              "max_model_len\"); VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 only skips the check, and outputs past the trained length are "
              "unreliable. The figures here are only the KV arithmetic at {length} tokens{base}",
    },
    'context_over_limit.flag': {
        "zh": '--max-model-len {flag}',
        "en": "--max-model-len {flag}",
    },
    'context_over_limit.request': {
        "zh": '{length} token 的请求所需的 --max-model-len {flag}',
        "en": "the --max-model-len {flag} that a {length}-token request needs",
    },
    'context_over_limit.base': {
        "zh": '（基座模型 {name} 的 config.json 是 {tokens}）',
        "en": " (the base {name} checkpoint's config.json says {tokens})",
    },
    'model_table': {
        "zh": '{name} 的层数、KV 头数、head_dim 和参数量取自它公开的 config.json 和模型卡（内置表）；微调模型沿用基座的结构，'
              '其他模型不一定：如果你的模型不同，请写明层数、KV 头数和 head_dim，或给出 config.json',
        "en": "{name}'s layers, KV heads, head_dim and parameter count are from its published config.json and model card (a "
              "built-in table); a fine-tune keeps its base's shape, another model may not: if yours differs, give its layers, KV "
              "heads and head_dim, or its config.json",
    },
    'kv_model_split': {
        "zh": '{given} 是整个模型每 token 的 KV，按张量并行 {tp} 均分到每张卡（KV 头数少于卡数时会复制，每张卡更多）',
        "en": '{given} is the whole model\'s KV per token, split evenly over tensor_parallel_size {tp} (more per GPU when there are '
              'fewer KV heads than GPUs: they are copied)',
    },
    'gpus_as_tp': {
        "zh": '没有给张量并行数，{text} 按 `--tensor-parallel-size {n}` 计算（权重和 KV 头分到 {n} 张卡上）；用流水线或数据并行时结果不同',
        "en": 'no tensor-parallel size given: {text} is counted as `--tensor-parallel-size {n}` (weights and KV heads split over {n} GPUs); '
              'pipeline or data parallelism would give other figures',
    },
    'gpu_count_not_blocks': {
        "zh": '{text} 是 GPU 数量，不是 KV Cache 的 block 数，不参与这个计算',
        "en": '{text} is read as a count of GPUs, not of KV-cache blocks, and is not part of this calculation',
    },
    'unclear_numbers': {
        "zh": '无法判断 {values} 指的是什么；请写明参数名（例如 `num_blocks_global 17131`）',
        "en": 'I could not tell what {values} refers to; name it (e.g. `num_blocks_global 17131`)',
    },
}
