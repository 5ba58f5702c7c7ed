"""What a question is about beyond its symptom: product, hardware, version, and the
near-domain entities a KB may or may not cover.

Retrieval ranks by symptom, and symptoms repeat across products and platforms: "KV cache
at 100%" reads the same in vLLM and FastDeploy, and "Torch not compiled with CUDA enabled"
means something else on a TPU than on an NVIDIA box. This module only detects; the
decisions (demote a mismatching article, refuse, answer partially) are in retrieval.py and
refusal.py. Every pattern is a plain substring or a small linear regex over a lower-cased
question, so detection costs microseconds and cannot backtrack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from ingest.index import derived
from oncall_common.lang import is_cjk

from .names import EXCEPTION_NAME
from .questions import FD as _FD, MAX_QUERY_CHARS

# Product names as people write them. Keys match the KB's `product` front matter.
PRODUCTS: dict[str, tuple[str, ...]] = {
    # and what only vLLM's log prints ("GPU KV cache size: 115,328 tokens": a FastDeploy article answered it, trial)
    "vllm": ("vllm", "vllm-openai", "vllm serve", "samplingparams", "asyncllmengine", "llmengine", "enginecore", "enginecore_core",
             "gpu kv cache size", "maximum concurrency for"),
    # ERNIE-4.5 is served with it; "FD", what its users call it, is `_FD` (upper case only).
    "fastdeploy": ("fastdeploy", "fast deploy", "paddlepaddle", "paddle inference", "fd_", "ernie-4.5", "ernie 4.5", "ernie4.5",
                   "ernie-45", "ernie4_5"),
    "sglang": ("sglang",),
    "tensorrt-llm": ("tensorrt-llm", "tensorrt_llm", "trt-llm", "trtllm"),
    "tgi": ("text-generation-inference", "huggingface tgi", "tgi"),
    "ollama": ("ollama",),
    "llama.cpp": ("llama.cpp", "llama-server", "llama_cpp"),
    "lmdeploy": ("lmdeploy",),
    "triton": ("tritonserver", "triton inference server"),
    "xinference": ("xinference",),
    "mindie": ("mindie",),
    "lightllm": ("lightllm",),
    "ktransformers": ("ktransformers",),
    "paddlex": ("paddlex",),
    "localai": ("localai",),
    "mlc-llm": ("mlc-llm", "mlc_llm", "mlc llm"),
    # Versioned names too: docs that say "ExLlamav3" know the "exllama" a user asks about.
    "exllama": ("exllama*", "tabbyapi"),
    "text-generation-webui": ("text-generation-webui", "oobabooga"),
    "lm studio": ("lm studio", "lmstudio"),
    "docker model runner": ("docker model runner", "docker model configure", "docker model run"),
    "deepspeed-mii": ("deepspeed-mii", "deepspeed mii", "mii.serve", "mii.pipeline"),
    "tei": ("text-embeddings-inference", "text embeddings inference"),
    "mistral.rs": ("mistral.rs", "mistralrs", "mistralrs-server"),
    "lorax": ("lorax",),
    "rtp-llm": ("rtp-llm", "rtp_llm"),
    "xllm": ("xllm",),
    "ipex-llm": ("ipex-llm", "ipex_llm", "bigdl-llm"),
    "openvino model server": ("openvino model server", "ovms", "openvino/model_server"),
    "dashinfer": ("dashinfer", "dash-infer"),
    "ramalama": ("ramalama",),
    "fastchat": ("fastchat",),
    "litgpt": ("litgpt", "lit-gpt"),
    # Stacks that run an engine for you (Kubernetes, Ray). Named alone, the question is about
    # the stack ("llm-d's router with P/D roles", "KubeAI loads LoRA from MinIO?"); named with
    # the engine ("the llm-d image runs as the vllm user"), the engine's KB still answers.
    "llm-d": ("llm-d",),
    "kubeai": ("kubeai",),
    "kserve": ("kserve",),
    "aibrix": ("aibrix",),
    "gpustack": ("gpustack",),
    "ms-swift": ("ms-swift",),
    "openllm": ("openllm",),
    "ray serve": ("ray serve", "ray.serve", "ray-serve"),
    "dynamo": ("nvidia dynamo", "ai-dynamo"),
}
# Names that point to a product in a question (ERNIE-4.5 is mostly served with FastDeploy)
# but are models, not the product: a KB listing ERNIE-4.5 among its supported models does
# not thereby know FastDeploy.
MODEL_HINTS = frozenset({"ernie-4.5", "ernie 4.5"})

PRODUCT_NAMES = {"vllm": "vLLM", "fastdeploy": "FastDeploy", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM", "tgi": "TGI",
                 "ollama": "Ollama", "llama.cpp": "llama.cpp", "lmdeploy": "LMDeploy", "triton": "Triton Inference Server",
                 "xinference": "Xinference", "mindie": "MindIE", "lightllm": "LightLLM", "ktransformers": "KTransformers",
                 "paddlex": "PaddleX", "localai": "LocalAI", "mlc-llm": "MLC LLM", "exllama": "ExLlama",
                 "text-generation-webui": "text-generation-webui", "lm studio": "LM Studio", "litgpt": "LitGPT", "docker model runner": "Docker Model Runner",
                 "deepspeed-mii": "DeepSpeed-MII", "tei": "Text Embeddings Inference", "mistral.rs": "mistral.rs",
                 "llm-d": "llm-d", "kubeai": "KubeAI", "kserve": "KServe", "aibrix": "AIBrix", "openllm": "OpenLLM",
                 "ray serve": "Ray Serve", "dynamo": "NVIDIA Dynamo", "lorax": "LoRAX", "rtp-llm": "RTP-LLM", "xllm": "xLLM",
                 "ipex-llm": "IPEX-LLM", "openvino model server": "OpenVINO Model Server", "dashinfer": "DashInfer",
                 "ramalama": "RamaLama", "fastchat": "FastChat", "gpustack": "GPUStack",
                 "ms-swift": "ms-swift"}

# Hardware families. NVIDIA is what the bundled articles are written for; the others have
# their own runtimes (ROCm, XLA, CANN, XPU…) where CUDA fixes do not apply.
HARDWARE: dict[str, tuple[str, ...]] = {
    # Not "cuda": a TPU user pasting "Torch not compiled with CUDA enabled" is not on NVIDIA.
    "nvidia": ("nvidia", "a100*", "h100*", "h800*", "a800*", "h200*", "h20*", "l40*", "l20*", "4090*", "3090*", "a30*",
               "v100*", "t4", "a10*", "a6000*", "rtx*", "geforce", "tesla", "nvlink", "gb200*", "b200*", "jetson"),
    "amd": ("rocm*", "amd", "ryzen", "strix halo", "mi200*", "mi210*", "mi250*", "mi300*", "mi308*", "mi325*", "mi355*", "radeon", "rccl", "hipblas", "hip error",
            # torch on ROCm says HIP where CUDA's build says CUDA; gfx9xx/gfx1xxx are AMD's GPU targets
            "hip out of memory", "hiperror*", "gfx8*", "gfx9*", "gfx10*", "gfx11*", "gfx12*"),
    "tpu": ("tpu", "torch_xla", "pjrt", "libtpu"),
    "ascend": ("ascend", "昇腾", "npu", "910b*", "910c*", "cann", "torch_npu", "hccl", "atlas 800", "vllm-ascend"),
    "kunlun": ("kunlun", "昆仑", "kunlunxin", "p800", "xpu"),
    "intel": ("gaudi*", "habana*", "hpu", "ipex", "intel gpu", "arc a770", "intel xpu", "intel arc"),
    "hygon": ("dcu", "海光", "hygon"),
    "metax": ("metax", "沐曦"),
    "iluvatar": ("iluvatar", "天数"),
    "neuron": ("neuron", "inferentia", "trainium"),
    "moore threads": ("摩尔线程", "moore threads", "mthreads", "musa", "mtt s4000*", "mtt s80*", "mtt s3000*"),
    "cambricon": ("寒武纪", "cambricon", "mlu370*", "mlu590*", "mlu290*"),
    "enflame": ("燧原", "enflame"),
    "biren": ("壁仞", "biren"),
    "apple": ("apple silicon", "mps", "macbook", "macos", "mac", "m1 max", "m2 max", "m3 max", "m4 max", "m-series"),
    # The machine, not the torch build: "a CPU-only PyTorch" on a GPU box is the torch article's case.
    "cpu": ("cpu backend", "vllm-target-device=cpu", "vllm_target_device=cpu", "--device cpu", "device=cpu", "cpu-only machine", "cpu-only-",
            "cpu-only server", "cpu-only host", "cpu only machine", "no gpu box", "no gpu machine", "without a gpu", "without gpu",
            "only have cpu", "只有 cpu", "只有cpu", "没有显卡", "纯cpu", "纯 cpu"),
}
HARDWARE_NAMES = {"nvidia": "NVIDIA/CUDA", "amd": "AMD ROCm", "tpu": "TPU", "ascend": "Ascend NPU", "kunlun": "Kunlun XPU",
                  "intel": "Intel Gaudi/XPU", "hygon": "Hygon DCU", "metax": "MetaX", "iluvatar": "Iluvatar",
                  "neuron": "AWS Neuron", "apple": "Apple silicon", "cpu": "CPU-only",
                  "moore threads": "Moore Threads MUSA", "cambricon": "Cambricon MLU", "enflame": "Enflame GCU", "biren": "Biren"}

# Near-domain subjects an on-call KB may or may not cover. A question naming one that the
# KB's text never mentions asks about something else, however well its symptom matches:
# "LoRA adapter OOM" is not answered by the generic OOM article. The list is a domain
# lexicon, checked against whatever KB is in use, so a team whose runbooks cover LoRA is
# not penalised.
ENTITIES: dict[str, tuple[str, ...]] = {
    "LoRA": ("lora", "qlora", "lora_modules", "enable-lora", "enable_lora"),
    "speculative decoding": ("speculative", "spec decode", "spec_decode", "draft model", "draft_model", "eagle", "medusa",
                             "num_speculative_tokens", "投机解码", "推测解码", "投机采样", "acceptance rate", "接受率"),
    "structured output": ("guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided decoding", "structured output",
                          "response_format", "json_schema", "json schema", "xgrammar", "outlines", "lm-format-enforcer",
                          "结构化输出", "guided_decoding",
                          # Asked for in plain words: "the output must be a JSON object following a schema".
                          "json object", "json mode", "json_object", "valid json", "follows a schema", "following a schema",
                          "follow a schema", "specific schema", "输出 json", "输出json", "返回 json 格式", "返回json格式",
                          "json 格式输出", "json格式输出"),
    "chat templates": ("chat template", "chat_template", "jinja", "聊天模板", "对话模板"),
    "tool calling": ("tool call", "tool_call", "function call", "function_call", "tool-call-parser", "tool_choice",
                     "函数调用", "工具调用", "auto-tool-choice", "tool use", "tool-use", "with tools", "include tools",
                     "includes tools", "including tools", "tools field", "tools parameter", "tools param", "tools 参数"),
    "reasoning parsers": ("reasoning parser", "reasoning_parser", "reasoning-parser", "reasoning_content", "enable_thinking", "思考模式"),
    "quantization kernels": ("awq", "gptq", "marlin", "bitsandbytes", "w8a8", "w4a16", "wint4", "wint8",
                             "squeezellm", "compressed-tensors", "minimum capability", "quantization method", "quantization scheme", "gguf", "量化",
                             # FP8 as the subject, not a flag's value ("--kv-cache-dtype fp8") or a model's format.
                             "fp8 checkpoint*", "fp8 model*", "fp8 quantiz*", "fp8 weights", "fp8 量化", "fp8 模型",
                             "quantized weight*", "int4 model*", "int4 模型", "int8 model*", "int8 模型"),
    "several models on one GPU": ("two models", "multiple models", "several models", "second model", "another model on the same gpu",
                                  "两个模型", "多个模型", "两个 vllm", "两个vllm", "再起一个"),
    "vision/OCR model serving": ("paddleocr", "ocr", "uie", "yolo", "ppyoloe", "simple-serving", "detection model", "目标检测"),
    # (A model family's name before the generic words: the first word found is the one judged against the KB,
    # and Yi-VL's docs name LLaVA in a heading but never say "vision" twice; dev.)
    "multimodal inputs": ("multimodal", "multi-modal", "llava*", "vision", "image_url", "video", "audio", "pixel_values",
                          "limit_mm_per_prompt", "limit-mm-per-prompt", "image(s)", "images per", "multiple images", "多模态", "图片", "图像",
                          # pictures given to the model, and the vision models by name ("20+ images per request on
                          # Qwen2.5-VL", "large images to llava", trial); a Docker image is not one (_NOT_SUBJECTS)
                          "images", "an image", "image input*", "image token*",
                          "视觉", "多张图", "一张图", "两张图", "几张图", "三张图",  # "超过一张图就报错": images counted per request
                          # the vision tower's frames in a pasted traceback ("inside visual.forward -> patch_embed")
                          "patch_embed", "visual.forward", "vision_tower", "visual encoder", "视觉塔", "视觉编码器"),
    "IPv6 networking": ("ipv6",),
    # A pod the scheduler cannot place never started: no serving setting explains it. Only the
    # pod's words ("vLLM request 一直 pending" is a hung request, not an unscheduled pod).
    "GPU scheduling on Kubernetes": ("insufficient nvidia.com/gpu", "nodes are available", "failedscheduling",
                                     "untolerated taint", "pod pending", "pod is pending", "pods pending", "pod stuck pending",
                                     "pod stuck in pending", "pods stuck in pending", "pod 一直 pending", "pod一直pending",
                                     "pod 一直处于 pending", "pod 一直是 pending", "pod 卡在 pending"),
    # A pod the kubelet evicts for the node's disk or memory: "The node was low on resource:
    # ephemeral-storage" was answered, as sure, from the multi-node NCCL article (a probe).
    # The pod's words only: a prefix cache's blocks "were evicted" too (review).
    "Kubernetes evictions": ("ephemeral-storage", "ephemeral storage", "pod was evicted", "pod evicted", "pods evicted",
                             "pod got evicted", "pod keeps getting evicted", "pod is being evicted", "evicted pod*",
                             "low on resource", "diskpressure", "memorypressure", "pod 被驱逐", "pod被驱逐", "pod 一直被驱逐"),
    # The CUDA runtime's own libraries and the driver under them: an install or image mismatch,
    # which no serving article answers ("ImportError: libcudart.so.12: cannot open shared
    # object file" got the multi-GPU NCCL article, as sure; trial).
    "CUDA libraries and driver versions": ("libcudart*", "libcublas*", "libcudnn*", "libnvrtc*", "libnvjitlink*", "libcusparse*",
                                           "libcufft*", "driver version is insufficient", "driver/library version mismatch",
                                           "cudaerrorinsufficientdriver", "cuda_error_system_driver_mismatch"),
    # The GPU itself failing: a fault to drain or reset the card for, which no serving setting
    # answers ("dmesg shows 'NVRM: Xid 79, GPU has fallen off the bus'" under a CUDA-graph
    # traceback was told to run with --enforce-eager, as sure; trial). Only the Xids that name
    # hardware (48 and 94/95 ECC, 63/64 row remapping, 74 NVLink, 79 off the bus, 92, 119/120 GSP):
    # an Xid 13 beside an illegal memory access is the kernel's fault, answered by a CUDA-graph article.
    # (The numbered Xids first: the one the question names is the word a runbook that lists it is judged by.)
    "GPU hardware faults (Xid, ECC)": ("xid 48", "xid 63", "xid 64", "xid 74", "xid 79", "xid 92", "xid 94", "xid 95", "xid 119",
                                       "xid 120", "fallen off the bus", "ecc error*", "uncorrectable ecc", "double bit ecc",
                                       "double-bit ecc", "volatile dbe", "dbe count", "row remap*", "remapped rows", "掉卡"),
    # Access to a gated model on the Hugging Face Hub: a token or an accepted licence, which no
    # mirror or cache setting gives ("401 Client Error … Cannot access gated repo" got the
    # download article's HF_ENDPOINT mirror, as sure; trial). The error's words only: a "gated
    # model" run offline is a download question the KB may answer.
    # (Not a bare 401 or 403: a browser's CORS refusal is a "403 Forbidden" too.)
    # (Not HF_TOKEN itself: `docker run -e HF_TOKEN=…` starts many a question on something else; review.)
    "Hugging Face access tokens": ("cannot access gated repo", "gated repo", "huggingface-cli login", "hf auth login",
                                   "accept the license", "accept the licence", "access to model"),
    # What serving costs in money, not in memory: "how much would it cost per million tokens on
    # AWS p4d" got the preemption article (trial). Not "cost" alone: "the memory cost exceeded 11GB".
    # Nor "how much does it cost" (in GPU memory) or 降低推理成本 (by serving more): the money's own words (review).
    "cost and pricing": ("cost per million", "per million tokens", "price per", "pricing", "cost per hour", "cost per token",
                         "per gpu-hour", "多少钱", "价格", "每百万 token", "每百万token"),
    # Keeping the service up when a node or worker goes away: a question of fault tolerance, which
    # no start-up NCCL article answers ("ncclRemoteError — one spot node got reclaimed, how do we make
    # vllm survive a node going away?" got its NCCL_P2P_DISABLE and --ipc=host, as sure; probe).
    "fault tolerance": ("fault toleran*", "fault-toleran*", "survive a node", "node failure*", "node going away", "node goes away",
                        "node got reclaimed", "spot node*", "spot instance*", "preemptible", "容错", "节点故障", "节点挂了", "抢占式实例"),
    "embedding and rerank models": ("embedding model", "embedding 模型", "embedding模型", "embeddings endpoint", "embedding endpoint",
                                    "embeddings api", "embedding api", "/v1/embeddings", "pooling", "rerank", "reranker",
                                    "task embed", "--task embed", "task=embed", 'task="embed"', "task='embed'", "llm.embed(",
                                    "向量模型", "嵌入模型", "重排"),
    "prefix caching": ("prefix cach*", "enable-prefix-caching", "enable_prefix_caching", "前缀缓存", "automatic prefix"),
    "disaggregated serving": ("disaggregat*", "pd分离", "pd 分离", "kv transfer", "kv_transfer", "lmcache*", "mooncake*", "nixl*",
                              # a connector's class name says it too ("MooncakeStoreConnector", "--kv-connector")
                              "kv connector*", "kv-connector*", "kvconnector*"),
    "tokenizers": ("tokenizer", "detokeniz*", "tokenization", "分词器"),
    "beam search": ("beam search", "beam_search", "best_of", "use_beam_search"),
    "Ray clusters": ("ray cluster", "ray start", "ray://", "kuberay", "raylet"),
    # Kubernetes as the subject (its objects and tools), not as where vLLM happens to run.
    "Kubernetes": ("helm", "helm chart", "kubectl", "ingress", "kuberay", "daemonset", "statefulset"),
    "pipeline and expert parallelism": ("pipeline-parallel", "pipeline_parallel", "expert parallel", "expert-parallel", "enable-expert-parallel"),
    "multi-node serving": ("multi-node", "multinode", "multiple nodes", "multiple hosts", "multiple machines", "across machines",
                           "across nodes", "two nodes", "two machines", "多机", "多台机器", "多节点", "两台机器"),
    "sleep mode and weight updates": ("sleep mode", "sleep_mode", "wake_up", "update_weights", "rlhf", "weight sync", "weights sync",
                                      "sync weights", "syncing weights", "sync the weights", "sync backend", "sync_backend",
                                      "update weights", "weight update", "weight updates", "权重同步", "同步权重", "更新权重"),
    # Fine-tuning as the subject ("how do I run SFT"), not as the history of a model
    # ("a fine-tuned Baichuan", "微调后的模型").
    "fine-tuning": ("sft", "fine-tuning", "finetuning", "how to fine-tune", "how do i fine-tune", "微调训练", "怎么微调", "如何微调", "全参微调",
                    "deepspeed zero", "zero-3", "zero3", "zero stage",
                    "rlhf training"),
    "GPU partitioning (MIG)": ("mig", "mig slice", "multi-instance gpu"),
    "TLS and certificates": ("tls", "ssl certificate", "certificate", "enable https", "证书"),
    "dashboards and alerting": ("grafana", "alert", "alerts", "alerting", "alertmanager", "pagerduty", "告警", "监控面板", "dashboard"),
    "autoscaling": ("autoscal*", "hpa", "弹性伸缩", "扩缩容", "自动扩容"),
    # Not the attention backend (flash-attn, FlashInfer, xFormers): askers name it to describe
    # their stack ("vllm + flash-attn 跑 …", an INFO line "Using XFormers backend"); as a subject
    # it refused 5 in-scope dev questions for 2 out-of-scope ones it alone kept from an answer.
    "torch.compile": ("torch.compile", "compilation_config", "compilation-config", "inductor", "dynamo", "torch._dynamo"),
    "building from source": ("build from source", "building from source", "setup.py", "cmake", "compile vllm", "源码编译", "从源码"),
    # Not the bare word: llama.cpp-style servers "offload layers to the GPU", the opposite.
    "CPU offload": ("cpu-offload-gb", "cpu_offload_gb", "cpu offload", "cpu offloading", "offload to cpu", "offload to the cpu",
                    "offload to host", "offload to ram", "offloaded to cpu", "kv offload*", "kv-offload*", "kv cache offload*",
                    "kv-cache offload*", "offloadingconnector", "offload the kv cache", "卸载到cpu", "卸载到 cpu",
                    "offload 到 cpu", "offload到cpu"),
    "KV cache quantization": ("fp8 kv", "kv cache fp8", "calculate_kv_scales", "kv cache quantization"),
    "OpenAI API request fields": ("stream_options", "logit_bias", "stop_token_ids", "stop sequences", "tool_choice",
                                  "extra_body", "chat/completions format"),
    "reward and classification models": ("reward model", "--task classify", "task classify", "classification model", "奖励模型"),
    "speech models": ("whisper", "transcription", "/v1/audio", "语音识别"),
    "benchmark tools": ("benchmark_serving", "benchmark_throughput", "vllm bench", "benchmarks/"),
    "rate limiting": ("rate limit*", "ratelimit*", "限流", "tpm/rpm", "rpm/tpm"),
    # What sits in front of the server: a 502 or 504 comes from a proxy, not from vLLM.
    "proxies and gateways": ("bad gateway", "gateway timeout", "gateway returns", "gateway returned", "api gateway",
                             "reverse proxy", "load balancer", "nginx", "haproxy", "envoy", "http 502", "http 504", "returns 502",
                             "returned 502", "returns 504", "got 502", "got a 502", "502 error", "504 error", "报 502", "返回 502",
                             "报 504", "返回 504", "网关", "反向代理", "负载均衡"),
    "CORS": ("cors", "allow-origins", "allowed-origins", "跨域"),
    # Who may call the server: keys and tokens on the API, not the Hugging Face token a download needs.
    # Said in words: "--api-key" in a pasted command or OPENAI_API_KEY in a client's set-up is how a
    # question about something else starts the server.
    "API authentication": ("api key", "api keys", "bearer token", "authorization header", "auth token",
                           "鉴权", "api 密钥", "api密钥", "访问令牌"),
    # Making the server a service of the host (start on boot, restart when it dies): an ops
    # question about the host, which docs on the server's own flags do not answer. Only
    # phrases that ask for it: "systemctl daemon-reload drops the GPUs", "I made a systemd
    # unit restarting it", "I run it as a systemd service and it OOMs", "a service account"
    # are set-ups of questions doc trees answer.
    "system services (systemd)": ("systemd service file", "start on boot", "start at boot", "starts on boot",
                                  "开机自启", "开机自动启动", "as a windows service"),
    # OpenAI's newer Responses endpoint, asked of a server that may only speak chat completions.
    # (Not the path: words with a slash are blanked as model ids before needles are looked for.)
    "OpenAI Responses API": ("responses api", "responses endpoint", "responses 接口"),
    # Freeing the GPU when no request comes (Ollama's keep_alive): a model-manager feature. Not
    # "keep_alive" itself: dashed, it is HTTP's keep-alive (--timeout-keep-alive,
    # VLLM_HTTP_TIMEOUT_KEEP_ALIVE), said in hang questions the KB answers.
    "idle model unloading": ("unload the model after", "unload it after", "unload when idle", "unload idle",
                             "idle unload*", "auto-unload*", "auto unload*",
                             "空闲时自动卸载", "空闲自动卸载", "闲置自动卸载", "自动卸载模型", "空闲时卸载"),
    # Exporting the server's metrics for scraping, not reading one figure from the log.
    "Prometheus metrics": ("prometheus", "/metrics", "metrics endpoint", "metrics 接口", "指标接口", "监控指标"),
    # The host's limits, not the server's: "too many open files" under load is a ulimit.
    # Not the bare "file descriptor": "Bad file descriptor" (errno 9) is a closed socket or pipe.
    "file descriptor limits": ("too many open files", "ulimit -n", "file descriptor limit", "out of file descriptors",
                               "open files limit", "nofile", "errno 24", "emfile", "文件句柄", "句柄数", "文件描述符上限",
                               "文件描述符数", "打开文件数"),
    # A process killed from outside, exit code 137 (128 + SIGKILL 9): the kernel's or the cgroup's
    # OOM killer (host RAM) or a failed Kubernetes probe. No GPU setting in a CUDA OOM article
    # changes that (newcomer trial: answered as sure from it). Not "OOMKilled" nor "host memory"
    # alone: askers say "OOMKilled on the GPU", and doc trees answer "32 GB RAM, it prints
    # Killed" in other words; not a bare SIGKILL, which NCCL's watchdog sends after a timeout.
    "exit code 137 (a killed process)": ("exit code 137", "exit status 137", "exited with code 137", "exit 137",
                                         "exitcode 137", "退出码 137", "退出码137", "退出码是 137", "退出码是137",
                                         "oom-killer", "oom killer", "oom_kill", "out of memory: killed process"),
    # Output that is garbage rather than missing or slow: a precision, kernel or template
    # problem, which no hang or memory article answers. 乱码 counts only as the model's
    # output (全是乱码, 输出乱码): alone it is as often a terminal's escape codes.
    "garbled output": ("garbled", "gibberish", "全是乱码", "都是乱码", "输出乱码", "回答乱码", "生成乱码", "返回乱码", "结果乱码",
                       "夹着乱码", "全是感叹号", "都是感叹号", "一串感叹号", "!!!!", "nonsense output", "outputs nonsense"),
    # Whether a release can load a model at all ("Model architectures ['GlmForCausalLM'] are not
    # supported for now", "官方 vllm 是不是还不支持这个模型"): a version matrix, not a fix.
    "new model support": ("are not supported for now", "architectures are not supported",
                          "support this model", "supports this model", "support for this model",
                          "不支持这个模型", "不支持该模型", "支持这个模型", "支持该模型", "支不支持这个模型", "哪个版本支持",
                          "哪个 vllm 能跑", "哪个vllm能跑", "什么版本的 vllm", "什么版本的vllm", "哪个版本的 vllm", "哪个版本的vllm",
                          "which vllm version supports", "which version of vllm supports", "which version supports",
                          # the list itself ("vllm 支持哪些模型", "which models does it support")
                          "支持哪些模型", "支持什么模型", "支持的模型有哪些", "which models does", "which models are supported",
                          "what models does", "what models are supported", "list of supported models"),
    # The installed release, asked for as such ("怎么查看 vllm 的版本号"): a pip or `--version`
    # question, which a symptom article that names versions in passing does not answer.
    # Only with the checking verb: "驱动的版本号太低" is a driver problem, not this question.
    "checking the installed version": ("查看版本", "查看 vllm 版本", "查看vllm版本", "查看 vllm 的版本", "查看vllm的版本",
                                       "版本号怎么看", "怎么看版本", "check the version", "check which version",
                                       "check the installed version", "which version is installed", "what version is installed",
                                       "find the installed version", "check which vllm version", "which vllm version is installed",
                                       "what vllm version is installed", "check the installed vllm version",
                                       "what version of vllm do i have", "which version of vllm do i have",
                                       "当前安装的 vllm 版本", "当前安装的vllm版本", "安装的是哪个版本", "装的是哪个版本"),
    # Moving to another release, asked for as such ("how do I upgrade vllm to the latest
    # version", "vllm 怎么升级"): an install question. Not "after I upgraded vLLM, answers got
    # worse", where the upgrade is the setting of a symptom the KB may well answer.
    "upgrading to a new release": ("how do i upgrade", "how to upgrade", "how can i upgrade", "how should i upgrade",
                                   "upgrade vllm to the latest", "upgrade to the latest version", "upgrade to the newest version",
                                   "怎么升级", "如何升级", "怎样升级", "升级到最新版", "升级到最新的版本", "升级方法"),
    # A dtype the GPU lacks ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0").
    "bf16 on older GPUs": ("bfloat16 is only supported", "bf16 is only supported", "bfloat16 is not supported",
                           "bf16 is not supported", "does not support bfloat16", "doesn't support bfloat16", "does not support bf16",
                           "doesn't support bf16", "不支持 bf16", "不支持bf16", "不支持 bfloat16", "不支持bfloat16"),
    # Generation that never ends: the model's EOS and stop tokens, not a hung server.
    "stop tokens and EOS": ("eos token", "eos_token", "eos_token_id", "stop token", "stop tokens", "stop_token", "停不下来", "停不住",
                            "不会停止", "无法停止输出", "一直输出停不", "never stops generating", "doesn't stop generating",
                            "does not stop generating", "won't stop generating", "keeps generating until",
                            # said of the output, with the token it prints or the sentence it repeats ("the model
                            # never stops, it keeps printing <|im_end|>" was answered, as sure, as a hung request)
                            "model never stops", "generation never ends", "generation never stops", "output never ends",
                            "never stops at", "<|im_end|>", "<|endoftext|>", "<|eot_id|>"),
    # Output that repeats itself: sampling penalties, which a KB on generation defaults may well
    # cover ("重复输出，一直生成到 max_tokens … repetition_penalty=1.0" is answered by the article on
    # sampling defaults; as a stop-token question it was refused).
    "repetitive output": ("keeps repeating", "repeats the same", "repeating the same", "repeats itself", "repeating itself",
                          "一直重复", "重复输出", "复读"),
    # Running past the model's trained context (RoPE scaling, YaRN).
    "context extension (RoPE/YaRN)": ("rope_scaling", "rope scaling", "rope-scaling", "rope_theta", "rope-theta", "yarn",
                                      "max_position_embeddings", "context extension", "extend the context", "扩展上下文", "上下文扩展"),
    "saving logs to a file": ("save the logs", "save logs", "save the log", "logs to a file", "log to a file", "logs into a file",
                              "保存日志", "日志保存", "日志输出到文件", "日志写到文件", "日志存到", "vllm_logging_config"),
}

# The words a KB covering a phrase-named subject would use: docs that say "bf16" and "f16"
# on several pages cover "V100 不支持 bfloat16", whatever phrase the asker used. Such a subject
# is named in a Chinese answer by its own name, not by the asker's phrase ("are not supported
# for now").
CORE_TERMS: dict[str, tuple[str, ...]] = {
    "bf16 on older GPUs": ("bf16", "bfloat16"),
    # Servers name them differently: exllama's and TabbyAPI's docs say `stop_strings` and
    # "stopping strings", TGI's stop_sequences, others stop_words (a TabbyAPI tree whose
    # chat-template page sets stop_strings was told it had nothing on stop tokens).
    "stop tokens and EOS": ("eos", "stop token*", "stop_token*", "stop sequence*", "stop_sequence*",
                            "stop string*", "stop_string*", "stopping string*", "stop word*", "stop_word*"),
    "context extension (RoPE/YaRN)": ("rope", "yarn", "rope_scaling", "max_position_embeddings"),
    # A page headed "为什么回复会乱码" covers 输出乱码 and 回答乱码 however the asker words it.
    "garbled output": ("garbled", "gibberish", "乱码"),
    # Docs with a systemd heading, or that speak of the Responses endpoint or of unloading
    # idle models, cover those questions whatever phrase asked them. Not a bare systemctl
    # (`systemctl restart docker` on an install page), keep-alive (an HTTP header) or 自动卸载
    # (pip's uninstall).
    "system services (systemd)": ("#systemd*", "systemd service*", "systemd unit*", "开机自启"),
    "OpenAI Responses API": ("responses api", "/v1/responses"),
    "idle model unloading": ("idle unload*", "unload idle", "unloads idle", "#unload*", "keep_alive duration"),
    "new model support": ("supported models", "supported architectures", "model support", "支持的模型", "支持模型列表"),
    # Docs that show `vllm --version`, or head a section on the installed version, cover it.
    "checking the installed version": ("--version", "#installed version", "#check the version", "#查看版本", "pip show"),
    # Docs with an "Upgrading" heading or a `pip install -U` line answer it; an article titled
    # "output changed after an upgrade" does not.
    "upgrading to a new release": ("#upgrading*", "#how to upgrade", "#upgrade procedure", "#upgrade guide", "#upgrade steps",
                                   "#升级方法", "#版本升级", "#升级步骤", "#升级流程", "#升级指南", "#升级 vllm",
                                   "pip install -u", "pip install --upgrade", "pip install vllm=="),
    "proxies and gateways": ("gateway", "proxy", "nginx", "load balancer", "网关", "代理"),
    # Docs with a scheduling section, or on the device plugin that advertises nvidia.com/gpu,
    # cover an unscheduled pod (HAMi's, KAITO's, the GPU Operator's).
    "GPU scheduling on Kubernetes": ("#schedul*", "#调度*", "nvidia.com/gpu", "device plugin", "device-plugin"),
    # Docs on penalties, or on the default sampling parameters (generation_config.json sets them),
    # cover repeating output: "经常重复输出 … 怎么让 vLLM 用上模型自带的默认采样参数" is the
    # sampling-defaults article's question.
    "repetitive output": ("repetition_penalty", "repetition penalty", "presence_penalty", "frequency_penalty", "重复惩罚",
                          "generation_config*", "generation-config", "sampling param*", "采样参数"),
    # Subjects that are phrasings (PHRASINGS), named by their own name in a Chinese answer.
    "cost and pricing": ENTITIES["cost and pricing"],
    "fault tolerance": ENTITIES["fault tolerance"],
    # Docs on Xid errors or ECC (a GPU health page, a device plugin's) cover a failing GPU.
    "GPU hardware faults (Xid, ECC)": ("xid", "ecc", "fallen off the bus", "dcgm"),
    # Docs that say how to pass a Hugging Face token cover a gated model's 401.
    "Hugging Face access tokens": ("hf_token", "hugging_face_hub_token", "huggingface-cli login", "hf auth login", "gated",
                                   "access token*", "hf token*", "huggingface token*", "hugging face token*", "huggingface-login",
                                   "huggingface login", "hugging face login", "login token*"),
    # Docs with a section on evictions, or on the pod's ephemeral storage, cover them.
    "Kubernetes evictions": ("#evict*", "#驱逐*", "ephemeral-storage"),
    # Docs on installing CUDA libraries (cuDNN, cuBLAS, the toolkit, LD_LIBRARY_PATH) cover them.
    "CUDA libraries and driver versions": ("cudnn", "cublas", "cuda toolkit", "ld_library_path", "#cuda 版本", "#driver*",
                                           "#cuda version*", "libcudart*"),
    # Docs with an "Embeddings" section cover the "embeddings endpoint" asked about; the word
    # in running text does not ("cached image embeddings", "the embedding layer"). A leading
    # "#" marks a core word that counts only in a title or heading.
    "embedding and rerank models": ("#embeddings", "#embedding", "/v1/embeddings", "embedding model*", "rerank*"),
    # A team FAQ headed "Where are the dashboards?" covers the Grafana dashboards asked about
    # (a newcomer trial was refused: "nothing on dashboards and alerting").
    "dashboards and alerting": ("#dashboard*", "#alert*", "#grafana", "#告警", "#监控面板", "#看板"),
    # A page on tool calling ("Deploy with Tool Calling Support") covers tool_choice too.
    "tool calling": ("tool calling", "function calling", "工具调用", "函数调用"),
    # A runbook headed "Pod OOMKilled (host memory)", whose symptoms show `Exit Code:    137`,
    # covers exit code 137: "pod OOMKilled exit code 137" was refused above it (trial).
    "exit code 137 (a killed process)": ("#oomkilled", "#oom killed", "#oom-killed", "#oom killer", "#oom-killer",
                                         "#exit code 137", "#host memory", "#主机内存", "#内存溢出被杀"),
    # A "Configure speech-to-text" page covers the Whisper model asked about.
    "speech models": ("#speech", "speech-to-text", "speech to text", "transcription*", "/v1/audio", "whisper"),
    # Docs with a "… from source" heading ("Build wheel from source") cover building from
    # source, asked as 源码编译 or by its knob (MAX_JOBS) alike; so do a C++ project's docs
    # with a CMake or 源码安装 section.
    "building from source": ("#from source", "build from source", "building from source", "max_jobs", "#cmake",
                             "#源码安装", "#源码编译", "#编译安装"),
    # Docs that document a server's key option (`--api-key`, `api_key` under its own heading)
    # cover "how do I require an API key"; a client example's `openai_api_key = "EMPTY"` does not.
    "API authentication": ("api key*", "--api-key*", "#api-key*", "bearer token*", "鉴权"),
    # Docs with a "Metrics" or "Prometheus" heading cover exporting metrics; an article that
    # says in passing "vLLM's Prometheus metrics count preemptions" does not.
    "Prometheus metrics": ("#prometheus*", "#metrics", "#监控*", "#*指标"),
    # Reasoning output under any of its names: docs with a "Thinking" page, or that document
    # enable_thinking, answer "怎么关掉思考模式" and "--reasoning-parser" alike. Not
    # reasoning_content: an OpenAI-compatible server's field list may name it without more.
    "reasoning parsers": ("reasoning parser*", "reasoning_parser", "enable_thinking", "thinking mode",
                          "#thinking", "思考模式"),
}
PHRASE_SUBJECTS_ZH = {"new model support": "新模型架构的支持", "bf16 on older GPUs": "旧 GPU 上的 bf16",
                      "GPU hardware faults (Xid, ECC)": "GPU 硬件故障（Xid、ECC）",
                      "Hugging Face access tokens": "Hugging Face 访问令牌（gated 模型）", "cost and pricing": "成本与价格", "fault tolerance": "容错（节点或 worker 故障）", "repetitive output": "重复输出",
                      "stop tokens and EOS": "停止符与 EOS", "context extension (RoPE/YaRN)": "上下文扩展（RoPE/YaRN）",
                      "proxies and gateways": "代理与网关", "tool calling": "工具调用（tool calling）",
                      "embedding and rerank models": "embedding 与 rerank 模型",
                      "checking the installed version": "查看已安装的版本", "upgrading to a new release": "升级到新版本",
                      # found by "!!!!" or 全是感叹号 too: "知识库里没有关于 !!!! 的内容" named no subject (trial)
                      "garbled output": "输出乱码"}

# ENTITIES families whose names are phrasings of one subject, not distinct techniques: any
# of them is a core word.
PHRASINGS = frozenset({"several models on one GPU", "tokenizers", "IPv6 networking", "CORS",
                       "rate limiting", "saving logs to a file", "autoscaling", "GPU partitioning (MIG)",
                       "multi-node serving", "cost and pricing", "fault tolerance"})


def core_terms(entity: str) -> tuple[str, ...]:
    """Words any of which, covered by a KB, covers the subject whatever word the asker used."""
    return ENTITIES[entity] if entity in PHRASINGS else CORE_TERMS.get(entity, ())


_VERSION = re.compile(r"(?<![\w.])v?(\d{1,2})\.(\d{1,3})(?:\.(\d{1,3}))?(?:\.post\d+|rc\d+|\.dev\d*)?(?![\w.])")


@dataclass(frozen=True)
class Scope:
    """What a question names. Empty sets mean "not said", which never counts as a mismatch."""

    products: frozenset[str] = frozenset()
    hardware: frozenset[str] = frozenset()
    versions: tuple[tuple[int, int, int], ...] = ()
    entities: tuple[str, ...] = ()  # ENTITIES keys the question names
    entity_terms: dict[str, str] = field(default_factory=dict)  # entity → the word the question used
    hardware_terms: dict[str, str] = field(default_factory=dict)  # hardware family → the word the question used
    said_entities: tuple[str, ...] = ()  # the entities named in the prose, not only in a pasted command or config
    contrasted: frozenset[str] = frozenset()  # products and hardware named only to be set against another ("not vllm")
    architectures: tuple[str, ...] = ()  # model families an error names by class ("MiniCPM3ForCausalLM" → "minicpm")


_TOKEN = re.compile(r"[\w.\-/:]+")


def _dashed(text: str) -> str:
    """`enable_prefix_caching` and `--enable-prefix-caching` are one name."""
    return text.replace("_", "-")


def _drop_model_ids(text: str) -> str:
    """Blank out Hugging Face ids, paths and model file names ("Qwen/Qwen2.5-VL-7B-AWQ",
    "qwen2.5-vl-32b-instruct", "model-fp8.safetensors"): words with a slash, or with a
    dash and a digit. Flags ("--enable-lora") are kept."""

    out: list[str] = []
    last = 0
    after_name = False  # the previous word was a model name or a size ("Yi-34B", "4B")
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        gap = text[last:m.start()]
        out.append(gap)
        last = m.end()
        name = not tok.startswith("--") and ("/" in tok or ("-" in tok and any(ch.isdigit() or ch.isupper() for ch in tok)))
        # "Yi-34B AWQ", "Qwen3 4B AWQ": the quantization format of the model being served
        # describes the model; the question is not about quantization. "7B fp8 kv cache" and
        # "int4 awq kernel" are: a format followed by what it quantizes stays.
        # "an int4 model only takes 4G, yet memory grows" describes the model too; "how do I
        # serve an AWQ model", "能跑 Int4 模型吗" ask about serving the format.
        described = _MODEL_NOUN.match(text, m.end()) and not _SERVED.search(text[max(0, m.start() - 24):m.start()])
        descriptor = ((after_name and "\n" not in gap and len(gap) <= 2) or described) and (
            tok.lower() in _QUANT_FORMATS and not _QUANT_SUBJECT.match(text, m.end()))
        out.append(" " if name or descriptor else tok)  # Qwen/Qwen2-VL-7B, DeepSeek-OCR, llama-3-8b: names, not subjects
        # "72B Chat AWQ": a variant word between the model and its format.
        variant = after_name and tok.lower() in _MODEL_VARIANTS
        after_name = name or variant or bool(_MODEL_SIZE.fullmatch(tok))  # one format per model: no chain
    out.append(text[last:])
    return "".join(out)


_QUANT_FORMATS = frozenset({"awq", "gptq", "gguf", "int4", "int8", "fp8", "w8a8", "w4a16", "nvfp4", "bnb"})
# What a format is followed by when quantization is the subject ("awq kernel", "fp8 kv cache",
# "AWQ 量化怎么做"); "AWQ 量化模型" (an AWQ-quantized model) still describes the model.
_QUANT_SUBJECT = re.compile(r"[\s_-]*(?:kv|kernel|quant|量化(?!模型|版|后的)|awq|gptq|marlin|int4|int8|fp8)", re.IGNORECASE)
_MODEL_VARIANTS = frozenset({"chat", "instruct", "base"})
_MODEL_NOUN = re.compile(r"[\s-]?(?:models?\b|checkpoints?\b|模型)", re.IGNORECASE)
_SERVED = re.compile(r"(?i)\b(?:serv\w*|run\w*|load\w*|deploy\w*|support\w*|use|using|host\w*|convert\w*|export\w*|quantiz\w*)\b"
                     r"|跑|部署|加载|支持|使用|用|转换|导出|量化")
_MODEL_SIZE = re.compile(r"\d+(?:\.\d+)?[bB]")


_COUNT_TIMES = re.compile(r"(\d)\s?[x×*]\s?(?=[a-z])")


def _padded(text: str) -> str:
    """Lower-cased, one line, with "8xA100" / "8*H100" split so the model name stands alone."""
    return " " + _COUNT_TIMES.sub(r"\1 ", text.lower().replace("\n", " ")) + " "


def _ascii_alnum(ch: str) -> bool:
    """Word characters for boundaries: Chinese next to a name ("4卡A100") is a boundary."""
    return ch.isascii() and ch.isalnum()


def _found(haystack: str, needles: tuple[str, ...]) -> str | None:
    """The first needle present in haystack. ASCII needles must stand as words ("cann" is
    not in "cannot", "ray start" not in "array start"); a trailing "*" marks a prefix."""
    return next((needle for needle in needles if next(_mentions(haystack, needle), None) is not None), None)


def _mentions(haystack: str, needle: str):
    """Where needle stands in haystack (see `_found`): each start position, left to right.
    A non-ASCII needle ("量化") is any substring."""
    prefix = needle.endswith("*")
    word = needle.rstrip("*")
    i = haystack.find(word)
    while i != -1:
        j = i + len(word)
        before_ok = not word.isascii() or not word[0].isalnum() or i == 0 or not _ascii_alnum(haystack[i - 1])
        after_ok = not word.isascii() or prefix or not word[-1].isalnum() or j >= len(haystack) or not _ascii_alnum(haystack[j])
        if before_ok and after_ok:
            yield i
        i = haystack.find(word, i + 1)


_AFTER_UPGRADE = re.compile(r"(?:after|since) (?:i |we )?(?:upgrad|updat)|升级[^，。,.;；!?？]{0,16}?(?:后|之后|以后)")


# A line of FastDeploy's own log ("ERROR    2026-04-19 19:22:38,720 4358  engine.py[line:160] Failed to
# launch worker processes"): pasted with "这是啥", it got vLLM's debug switches (trial).
_FD_LOG_LINE = re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} +\d+ +\w+\.py\[line:\d+\]")


# A subject the asker says is absent or fine: "no ECC errors … no Xid 79, but it still OOMs"
# (negation.denied_before), "liveness probe 一直是通过的" (review: each hedged an answer the KB gives).
_FINE_AFTER_SUBJECT = re.compile(r"\s*(?:一直|也|都)?\s*(?:是)?\s*(?:通过的?|正常|没问题|好的|ok\b|passes|passing|is fine|are fine|works)")


def _only_denied(text: str, needle: str) -> bool:
    """Whether every mention of a subject in `text` is denied or said to be fine."""
    spans = [(i, i + len(needle.rstrip("*"))) for i in _mentions(text, needle)]
    from .negation import denied_before

    return bool(spans) and all(denied_before(text, i) or _FINE_AFTER_SUBJECT.match(text, j) for i, j in spans)


# A browser right beside the Mac ("macOS + Chrome", "Edge 112 on macOS", "macOS 上用 Chrome"),
# in a question that names no engine serving a model on it ("Ollama on my Mac … in Chrome" is
# about the Mac that serves: review).
_MAC = r"(?<![A-Za-z])(?:mac ?os|mac|macbook)(?![A-Za-z])"
_BROWSER = r"(?<![A-Za-z])(?:chrome|chromium|firefox|safari|microsoft edge|edge \d{2,3}|edge browser)(?![A-Za-z])"
_BROWSER_ON_MAC = re.compile(rf"{_MAC}[^\n]{{0,12}}?{_BROWSER}|{_BROWSER}[^\n]{{0,12}}?{_MAC}", re.I)
_LOCAL_ENGINE = re.compile(r"ollama|vllm|llama\.?cpp|lm ?studio|mlx|sglang|\bserve\b|跑模型|本地跑|本地部署", re.I)


def detect(question: str) -> Scope:
    """Products, hardware, versions and near-domain entities named in the question."""
    text = _padded(question[:MAX_QUERY_CHARS])
    products = frozenset(p for p, names in PRODUCTS.items() if _found(text, names))
    if _FD.search(question[:MAX_QUERY_CHARS]) or _FD_LOG_LINE.search(question[:MAX_QUERY_CHARS]):
        products |= {"fastdeploy"}
    contrasted = frozenset(p for p in products if _only_contrasted(text, PRODUCTS[p]))
    contrasted |= _in_passing(question[:MAX_QUERY_CHARS], products - contrasted)
    hardware_terms = {h: hit for h, names in HARDWARE.items() if (hit := _found(text, names))}
    if (hardware_terms.get("apple") in ("macos", "mac", "macbook") and _BROWSER_ON_MAC.search(question[:MAX_QUERY_CHARS])
            and not _LOCAL_ENGINE.search(question[:MAX_QUERY_CHARS])):
        # "Edge 112 on macOS", "macOS + Chrome": the desk where a web UI is opened, not the
        # machine that serves the model. Read as Apple silicon, a question about a chat web
        # app's settings page was refused as being about a platform its docs do not cover (trial).
        del hardware_terms["apple"]
    hardware = frozenset(hardware_terms)
    contrasted |= frozenset(h for h in hardware if _only_contrasted(text, HARDWARE[h]))  # "…than on H100"
    versions = tuple((int(a), int(b), int(c or 0)) for a, b, c in _VERSION.findall(text[:4000]))
    # Model ids are left out: Qwen2.5-VL-32B-Instruct-AWQ in a command line says little
    # about what is asked, while a flag such as --enable-lora says a lot.
    from .negation import without_ruled_out

    asked = _NOT_SUBJECTS.sub(" ", without_ruled_out(question[:MAX_QUERY_CHARS]))  # "not using LoRA" is no LoRA question
    said = _dashed(_padded(_drop_model_ids(asked)).replace(" --", " "))
    prose = _dashed(_padded(_drop_model_ids(sentences(asked))).replace(" --", " "))
    terms: dict[str, str] = {}
    in_prose: list[str] = []
    for entity, names in ENTITIES.items():
        needles = tuple(_dashed(n) for n in names)
        hit = next((n for n in needles if _found(said, (n,)) and not _only_denied(said, n)), None)
        if hit:
            terms[entity] = hit
            if _found(prose, needles):
                in_prose.append(entity)
    if "upgrading to a new release" in terms and _AFTER_UPGRADE.search(text):
        # "After upgrading vllm the output got worse; should I upgrade to the latest?": the
        # upgrade is the setting of a symptom, which the KB may answer (review).
        del terms["upgrading to a new release"]
        in_prose = [e for e in in_prose if e != "upgrading to a new release"]
    if terms.get("vision/OCR model serving") == "ocr" and (products - contrasted) & (ENGINES - {"fastdeploy"}):
        # On an LLM engine, OCR is what a vision-language model is asked to do (GOT-OCR, "用
        # Qwen2.5-VL 做 OCR"), not the detection/recognition pipelines the subject is about.
        del terms["vision/OCR model serving"]
        in_prose = [e for e in in_prose if e != "vision/OCR model serving"]
    return Scope(products, hardware, versions, tuple(terms), terms, hardware_terms, tuple(in_prose), contrasted,
                 architectures(question[:MAX_QUERY_CHARS]))


# A model class as loaders name it ("MiniCPM3ForCausalLM", "Qwen2VLForConditionalGeneration"),
# or the list an "architectures ... are not supported" error quotes (['MiniCPM']).
_ARCHITECTURE = re.compile(r"\b([A-Za-z][A-Za-z0-9]*?)For(?:CausalLM|ConditionalGeneration|Seq2SeqLM|MaskedLM|SequenceClassification)\b"
                           r"|model architectures?\W{1,4}\[\s*['\"]([A-Za-z][A-Za-z0-9_.-]*)['\"]", re.I)


def architectures(question: str) -> tuple[str, ...]:
    """The model families a question names by class: "MiniCPM3ForCausalLM" is MiniCPM,
    "Qwen2VLForConditionalGeneration" Qwen. A team's docs for that model (a model
    repository's own deployment pages) say which release loads it, so an "architectures
    are not supported" error about it is theirs to answer, not a version matrix the KB lacks."""
    out: list[str] = []
    for m in _ARCHITECTURE.finditer(question):
        name = (m.group(1) or m.group(2) or "").lower()
        family = re.match(r"[a-z]+", name)
        if family and len(family.group(0)) >= 3 and family.group(0) not in out:
            out.append(family.group(0))
    return tuple(out)


# Phrases that hold a subject's word without being about it: "video memory" is 显存 put into
# English (GPU memory, not video input), a connection pool is not a pooling model,
# "见下面图片" points at a screenshot of the error, not at an image the model is given, and
# "after fine-tuning our model" / "SFT 后的模型" is the model's history, not the question.
_NOT_SUBJECTS = re.compile(r"video[ -](?:memory|card|ram)"
                           r"|(?:docker|container|base|prebuilt|pre-built|official|oci|nightly|release|cached|cuda|vllm|sglang)"
                           r"[ -](?:[\w.:/-]+ )?images?\b"
                           r"|\b(?:pull|push|build|built|rebuild|rebuilt|upgrad|updat|publish)\w*[ -]"
                           r"(?:(?:the|an|a|our|my|new|latest|all|these|those|both|two)\s+)?(?:[\w.:/-]+ )?images?\b"
                           r"|\ban image (?:of|tag|registry|pull)"
                           r"|(?:connection|thread|process|worker)[ -]pool(?:ing|s)?"
                           r"|(?:见|如|看|附|贴)(?:下|上)?(?:面|方)?(?:的)?(?:截)?图片?|图片所示|截图"
                           r"|after (?:fine-?tuning|finetuning|sft)\b|\bsft\s*(?:后|过|完|之后)|\bsft(?:'d|ed)?\s+(?:model|checkpoint|weights)"
                           # An error already fixed ("先是报 …，改成 dtype=float16 后又报 …", "first got …, after setting …").
                           r"|先是?报[^\n]{0,240}?(?:改成|换成|改了|加了|设了|设置|去掉)[^\n]{0,80}?后"
                           r"|\bfirst (?:got|hit|saw)\b[^\n]{0,240}?\bafter (?:setting|changing|adding|switching|passing)\b"
                           # A LoRA merged into the weights is how the model was made, not a LoRA being served.
                           r"|\bmerged\s+(?:[\w.-]+\s+){0,3}(?:\+\s*|with\s+|and\s+)?(?:an?\s+|the\s+|its\s+)?q?lora(?:\s+adapters?|\s+weights)?"
                           r"|\bq?lora(?:\s+adapters?|\s+weights)?\s+(?:merged|已?合并)|合并(?:了|后|过)?(?:的)?\s*q?lora|merge[_-]lora"
                           # vLLM's stats line prints its prefix-cache hit rate whether or not the asker
                           # uses prefix caching: a stalled server's stats were refused as a question on it (trial).
                           r"|(?:(?:gpu|cpu)\s+)?prefix\s+cache\s+hit\s+rate:\s*[\d.]+\s*%",
                           re.I)


# "用 lmdeploy（不是 vllm）", "类似 vllm 的 --gpu-memory-utilization", "works with vLLM but not with
# TGI": a product named to be set against the one the question is about.
# Chinese cues must not sit inside a longer word (是不是 "is it", 镜像 "image", 好像 "seems",
# 对比 "compare"), while "能不能像 vllm 那样" is a contrast after any character;
# English ones stand as words. A count may follow a preposition ("than on 8×H200"), not the
# cue itself ("more than 2 vllm instances").
_CONTRAST = re.compile(r"(?:(?<!是)不是|不用|而非|而不是|类似|(?<![好图镜想录影肖画头偶])像|(?<![\u4e00-\u9fff])比"
                       r"|(?<![a-z])(?:not|instead of|rather than|unlike|without|than|vs\.?|versus))"
                       r"(?:\s+(?:on|with|in|for|the)(?:\s+\d)?)?[\s(（:：,，]*(?:在|用)?\s*$")


# After the name, what works elsewhere: "ollama 多卡也没问题", "用 transformers 跑也正常" (also
# fine: the failure is in the other one), "works fine with lmdeploy" (before it).
_FINE_AFTER = re.compile(r"[^，,。；;！!？?\n]{0,8}?(?:也|都)(?:没问题|没事|正常|能用|能跑|可以|好好的|ok)")
# "works on vllm" says vLLM is fine; "runs on SGLang" says where the asker runs (review).
_FINE_BEFORE = re.compile(r"(?<![a-z])(?:(?:works?|worked)\s+(?:(?:fine|ok|okay|well)\s+)?|(?:runs?|ran)\s+(?:fine|ok|okay|well)\s+)"
                          r"(?:with|on|in|under|using)\s*$")


# Serving engines, as opposed to the stacks that run one for you (KubeAI, Xinference, GPUStack):
# a question about one of these may name another engine in passing ("with vLLM a higher
# temperature does change the output").
ENGINES = frozenset({"vllm", "fastdeploy", "sglang", "tensorrt-llm", "tgi", "ollama", "llama.cpp", "lmdeploy", "mindie",
                     "lightllm", "ktransformers", "mlc-llm", "exllama", "mistral.rs", "lorax", "rtp-llm", "xllm",
                     "deepspeed-mii", "tei", "dashinfer", "litgpt"})


def _in_passing(question: str, named: frozenset[str]) -> frozenset[str]:
    """Products the asker's own sentences name less often than an engine they name at least
    twice: that engine is what the question is about ("Running the TensorRT-LLM example …
    With vLLM it changes … Is sampling off on the TRT-LLM side?", "在 vLLM 里碰到过 …，现在想换
    LMDeploy，LMDeploy 会不会也有这个限制？"). Pasted logs do not count: a vLLM traceback may
    name a trtllm kernel several times."""
    if len(named) < 2:
        return frozenset()
    prose = _padded(sentences(question, errors=False))
    counts = {p: len({i for name in PRODUCTS[p] for i in _mentions(prose, name)}) for p in named}  # "vllm serve" once
    lead = max(counts, key=counts.get)
    if lead not in ENGINES or counts[lead] < 2 or any(counts[p] >= counts[lead] for p in named if p != lead):
        return frozenset()
    return frozenset(p for p in named if p != lead and p in ENGINES)  # a stack running the engine is its setting


def _only_contrasted(text: str, names: tuple[str, ...]) -> bool:
    """Whether every mention of a product follows a contrast ("not vllm", "类似 vllm 的") or
    says it works ("ollama 多卡也没问题")."""
    spans = [(i, i + len(name.rstrip("*"))) for name in names for i in _mentions(text, name)]
    return bool(spans) and all(_CONTRAST.search(text[max(0, i - 16):i]) or _FINE_BEFORE.search(text[max(0, i - 24):i])
                               or _FINE_AFTER.match(text, j) for i, j in spans)


def sentences(question: str, errors: bool = True) -> str:
    """The asker's sentences and (unless `errors` is false) the error lines they pasted,
    less what is pasted inside them: the errors' log tags ("(autoscaler +7s) Error: …"
    names the process that printed it, not the subject) and runs of flags."""
    from .questions import might_paste

    if not might_paste(question):
        if "=" not in question:
            return question  # nothing printed in it: the cleaner is not even imported
        from .cleaning import without_reprs

        return without_reprs(question)
    from .cleaning import split_question, strip_log_tag, without_reprs

    parts = split_question(question)
    lines = parts.prose + ([strip_log_tag(line) for line in parts.errors] if errors else [])
    written = "\n".join(_FLAG_RUN.sub(" ", without_reprs(line)) for line in lines)
    return written if len(written.strip()) >= 8 or not errors else question


# Several flags in a row inside a sentence are a pasted command line ("same flags
# (--max-model-len 116160 --reasoning-parser deepseek_r1) now fail"), not what is asked;
# two flags joined by a word ("requires --enable-auto-tool-choice and --tool-call-parser")
# are what the sentence is about.
_FLAG_RUN = re.compile(r"(?:--[A-Za-z][\w-]{1,60}(?:[ =](?!-|(?:and|or|but|with|to|then|is|are|in|on|for|the|a|an|not)\b)[^\s,)）]{1,80})?"
                       r"[\s,]*){2,}")


# Parameter names as people write them in a sentence: a flag (--max-concurrent-requests),
# a snake_case field (cache_max_entry_count) or an environment variable (FD_LOG_DIR).
# Not a C++ name: "terminate called after throwing an instance of 'std::runtime_error'" (trial).
_PARAMETER = re.compile(r"(?<![\w/.:-])(?:--[A-Za-z][\w-]{2,60}|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w/]|\.\w)")
# And, as Kubernetes manifests, Helm values and JSON configs name them, a camelCase field
# (`progressDeadlineSeconds`, `storageUri`, `loadBalancerIP`). Kept apart: the refusal model
# was fitted on the names above, and counted as one more unknown setting a field refused a
# dev question that named its own workaround ("mount an emptyDir … sizeLimit: 20Gi") while
# asking for the chart's option; only the sentence that asks about one counts (see below).
# Its edges are ASCII: Python's \w is any letter, so "能不能改progressDeadlineSeconds" hid the name.
_FIELD = re.compile(r"(?<![A-Za-z0-9_/.-])[a-z]{2,}(?:[A-Z][a-z0-9]+)+[A-Z]{0,4}(?![A-Za-z0-9_/]|\.\w)")
_CAMEL_PARTS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
MAX_FIELDS = 10  # no model input counts them: a paste of a thousand names costs no more than ten
# A GPU runtime's function or status names the error it raised (`cudaMalloc`,
# `ncclCommInitRank`, Ascend's `rtStreamWaitEvent`, `aclnnInplaceCopy`), not a setting to change.
_RUNTIME_CALL = re.compile(r"^(?:cuda|cu|cublas|cudnn|curand|cusparse|nccl|nvml|hip|rccl|miopen|acl|aclnn|rt|hccl)[A-Z]")


def unknown_parameters(question: str, index, fields: bool = False) -> list[str]:
    """Parameters the asker's sentences name that this KB never writes: "what is the
    equivalent of TGI's --max-concurrent-requests" asks about a setting the KB cannot
    explain, however close its passages about concurrency read. Only the sentences count:
    a pasted command or traceback names many settings the question is not about. With
    `fields`, the camelCase fields instead (`_FIELD`)."""
    prose = sentences(question[:MAX_QUERY_CHARS], errors=False)
    if not fields and "-" not in prose and "_" not in prose:
        return []
    heads, body, _per_doc = kb_text(index)
    seen: set[str] = set()
    out: list[str] = []
    for m in (_FIELD if fields else _PARAMETER).finditer(prose):
        if fields and (len(seen) >= 4 * MAX_FIELDS or len(out) >= MAX_FIELDS):
            break
        if _RUNTIME_CALL.match(m.group(0)):
            continue
        name = _dashed(m.group(0).lower()).strip("-")
        if len(name) < 4 or name in seen or not any(ch.isalpha() for ch in name):
            continue
        seen.add(name)
        # A one-word flag (--json, --port) is written with its dashes: the plain word says
        # nothing about whether the KB knows the setting.
        written = "--" + name if m.group(0).startswith("-") and "-" not in name else name
        # A field is the KB's flag in another spelling as often as not: Helm's `maxModelLen`
        # is `--max-model-len`.
        spelt = (written, _CAMEL_PARTS.sub("-", m.group(0)).lower()) if fields else (written,)
        # A heading writes it too ("## 2. Set NCCL_SOCKET_IFNAME" over a step that says
        # "export it"): a review found it called unknown.
        if not _found(body, spelt) and not _found(heads, spelt):
            out.append(m.group(0))  # as the asker wrote it, to be named back in a refusal
    return out


_CLAUSE_END = re.compile(r"[,，:：;；]\s*|\s+[-—–]+\s+")
_ASKS = re.compile(r"\b(?:how|what|which|where|why|can(?!')|could|is there|are there|does|do i|should)\b"
                   r"|怎么|怎样|如何|能不能|能否|可不可以|可以吗|是否|吗|什么|哪|为什么|有没有|干嘛|是啥|啥意思"
                   # the A-not-A questions: "SGLang 要不要开 --enable-torch-compile" asks about that flag (trial)
                   r"|(?<!只)(?<!不管)(?<!无论)(?:要不要|需不需要|该不该|用不用|开不开|加不加|值不值得)", re.I)
# Sentence ends: ASCII punctuation before a space ("v0.8.0" and "config.json" go on), a
# Chinese one anywhere, a line break.
_SENTENCE_END = re.compile(r"(?<=[.!;])\s+|(?<=[?？。！；])|\n")


def asked_unknown_parameters(question: str, unknown: list[str]) -> list[str]:
    """Those of `unknown` (settings the KB never writes) that the asking sentence names: "can
    I change progressDeadlineSeconds on it?" asks about that very field, and a page about the
    same object that never writes it cannot say how. A setting named only while describing
    the set-up ("I run with --foo-bar, and it hangs: why?") is not what is asked."""
    if not unknown:
        return []
    said = [s.strip() for s in _SENTENCE_END.split(question[:MAX_QUERY_CHARS]) if s and s.strip(" ?？")]
    # The one that asks; without a question mark, the last, if it asks at all ("能不能改 X",
    # not "栈里是 spawn_main -> _fixup_main_from_path").
    asking = [s for s in said if s.endswith(("?", "？"))] or [s for s in said[-1:] if _ASKS.search(s)]
    # Within it, the clauses that ask (or its last): "the readinessProbe fails after 10 min:
    # can I change initialDelaySeconds?" asks about the second name only.
    clauses: list[str] = []
    for sentence in asking:
        parts = [c for c in _CLAUSE_END.split(sentence) if c.strip(" ?？")]
        clauses += [c for c in parts if _ASKS.search(c)] or parts[-1:]
    text = "\n".join(clauses)
    return [name for name in unknown[:MAX_FIELDS]
            if re.search(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])", text)]


# An error's start: "RuntimeError: CUDA error: …", "torch.OutOfMemoryError: …", "ERROR …"; a line
# that starts with one is nothing but an error.
_ERROR_HEAD = rf"(?:{EXCEPTION_NAME}|ERROR|CRITICAL|FATAL)\b[:\s]"
_BARE_ERROR = re.compile(rf"^\s*{_ERROR_HEAD}")
_ERROR_START = re.compile(rf"(?<![\w.]){_ERROR_HEAD}")
_EXCEPTION_TYPE = re.compile(rf"(?<![\w.]){EXCEPTION_NAME}\b:?")
_WORD = re.compile(r"[a-z][a-z0-9]+")
UNKNOWN_ERROR_COVERAGE = 0.3
_JUST_ASKING = re.compile(r"(?:这是啥|这是什么|这是什么意思|什么意思|啥意思|怎么回事|怎么办|咋办|咋整|求助|为什么|why|help|"
                          r"what(?:'s| is| does) (?:this|that|it)(?: mean)?|any ideas?|what happened)\W{0,4}", re.I)


# The asker's own clause after a pasted error on its line: "… when vllm tries to download",
# "… inside our container", ". our box is air-gapped": two words at least after the first.
_PROSE_TAIL = re.compile(r"(?:\s|[.,;]\s+)(?:when|whenever|while|every time|each time|inside our|in our|on our|our|my)"
                         r"(?:\s+[a-z][\w'-]*){2,}", re.I)


# A quoted path: the asker's own file ('/home/app/.cache/…'); a source location in brackets
# ("[/pytorch/third_party/gloo/…/pair.cc:144]") is part of how the error reads.
_PATH = re.compile(r"(?<=['\"‘“])(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]*)*(?=['\"’”])")


def _without_prose_tail(line: str) -> str:
    tail = _PROSE_TAIL.search(line)
    return line[:tail.start()] if tail else line


def bare_unknown_error(question: str, index) -> bool:
    """Whether the question is only a pasted error (a line or two, nothing said around it)
    whose wording the KB mostly never uses: "RuntimeError: CUDA error: an illegal memory
    access was encountered" was answered, with confidence, by the article on forked CUDA
    processes, for sharing "RuntimeError" and "CUDA error". The measure is the share of the
    message's word pairs found anywhere in the KB; a message it explains shares most."""
    lines = [line for line in question.strip().splitlines() if line.strip()]
    # "这是啥" or "what is this?" above it says nothing of its own: FastDeploy's "Failed to
    # launch worker processes" under "这是啥" got an article on concurrency (trial).
    lines = [line for line in lines if not _JUST_ASKING.fullmatch(line.strip())]
    if not lines or len(lines) > 3 or not all(_BARE_ERROR.match(line) for line in lines):
        return False
    # Only the error is scored, not the asker's clause after it (`_worded_share`): "PermissionError:
    # [Errno 13] Permission denied: '/root/.cache/huggingface/hub' when vllm tries to download as a
    # non-root user" was refused for the KB's not wording "vllm tries to download" (trial).
    words, share = _worded_share("\n".join(lines), index)
    if share is None:
        # Too short for word pairs: its longer words, none of which the KB uses
        # ("jinja2.exceptions.UndefinedError: 'guideline' is undefined", trial). "ValueError:
        # bad input" stays unjudged.
        long_words = [w for w in words if len(w) > 4]
        return len(long_words) >= 2 and not any(f" {w} " in kb_words(index) for w in long_words)
    return share < UNKNOWN_ERROR_COVERAGE


def _worded_share(message: str, index) -> tuple[list[str], float | None]:
    """An error message's words (exception names left out) and the share of its word pairs
    found anywhere in the KB; None when it has fewer than three pairs."""
    # A quoted path is where it happened, not how the error is worded: "Permission denied:
    # '/home/app/.cache/huggingface/hub/models--Qwen'" scored home-app, app-cache… as wording the
    # KB never uses, where '/root/.cache/huggingface/hub' passed (trial).
    # Nor is the asker's clause after it on its line (`_PROSE_TAIL`).
    message = " ".join(_without_prose_tail(line) for line in message.splitlines())
    words = _WORD.findall(_PATH.sub(" ", _EXCEPTION_TYPE.sub(" ", message)).lower())
    pairs = [f" {a} {b} " for a, b in zip(words, words[1:])]
    if len(pairs) < 3:
        return words, None
    text = kb_words(index)
    return words, sum(pair in text for pair in pairs) / len(pairs)


def unworded_error(question: str, index) -> bool:
    """Whether the error lines pasted with a question are worded the way the KB never words
    them (under UNKNOWN_ERROR_COVERAGE of their word pairs anywhere in the KB), whatever is
    said around them. Not a refusal: on the dev sets it holds for 120 out-of-scope questions
    and 64 in scope, 40 of them answered right (the KB explains their error in other words).
    It marks the answer as a close call: "ImportError: libcudart.so.12: cannot open shared object
    file" was answered, as sure, with the multi-GPU NCCL article (trial)."""
    from .cleaning import split_question

    shares = []
    for line in split_question(question).errors[:10]:  # (cached: retrieval split it already)
        start = _ERROR_START.search(line)
        _words, share = _worded_share(line[start.start():] if start else line, index)
        if share is not None:
            shares.append(share)
    return bool(shares) and max(shares) < UNKNOWN_ERROR_COVERAGE


def kb_words(index) -> str:
    """The KB's text as its words only, space-separated, built once per loaded index."""
    return derived(index, "_scope_words", lambda: " " + " ".join(_WORD.findall(kb_text(index)[1])) + " ")


_PASCAL = re.compile(r"\b[A-Z][A-Za-z0-9]{1,63}\b")  # bounded: a 30k-character heading word backtracked (review)
_NAME_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_CAMEL = re.compile(r"\b[a-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+[A-Z]*\b")
_CAMEL_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def kb_text(index) -> tuple[str, str, list[str]]:
    """(titles and headings, all text, the text of each document) of a KB, lower-cased and
    built once per loaded index: coverage is asked on every question naming a subject."""
    def build() -> tuple[str, str, list[str]]:
        docs: dict[str, list[str]] = {}
        spaced: set[str] = set()
        for c in index.chunks:
            docs.setdefault(c.doc_id, []).append(c.text)
            # Helm values and CRD fields name subjects in camelCase (`chatTemplate: …`). Like
            # an exact parameter name, a setting named after a subject covers it: its spaced
            # form ("chat Template") counts as a heading.
            spaced.update(_CAMEL_BREAK.sub(" ", w) for w in _CAMEL.findall(c.text))
        titles = {c.title for c in index.chunks}
        # An alert named in a heading ("## DsV3OutputGarbled", "1. KVCacheUsageHigh") names its
        # subject in its parts: "dsv3 升级后输出乱码" was told the KB had nothing on garbled
        # output, above the very section (trial).
        for title in titles:
            spaced.update(" ".join(parts) for w in _PASCAL.findall(title)
                          if not w.isupper() and len(parts := _NAME_PART.findall(w)) >= 2)
        heads = _dashed(_padded("\n".join(titles | spaced)))
        per_doc = [_dashed(_padded("\n".join(texts))) for texts in docs.values()]
        return heads, "\n".join(per_doc), per_doc

    return derived(index, "_scope_text", build)


SUBJECT_MENTIONS = 3


_FENCE = re.compile(r"^\s*(?:```|~~~)")
_COMMAND = re.compile(r"^\s*(?:\$\s*|>\s*)?([a-z][a-z0-9_.-]{1,30})\s+[\w-]")  # ("# …" is a comment)


# Subjects named by the program that serves them: a KB that runs `helm install` covers helm.
# Only these: any first word of a code line is not a program ("if", "import", and `yarn install`
# is no YaRN, review).
_CLI_SUBJECTS = frozenset({"helm", "kubectl", "kustomize", "kuberay", "docker", "podman", "ray", "nvidia-smi"})


def shown_commands(index) -> frozenset[str]:
    """The programs a KB shows being run: the first word of each line in its fenced code
    blocks ("helm install gpu-operator …"), built once per loaded index."""
    def build() -> frozenset[str]:
        found: set[str] = set()
        for chunk in index.chunks:
            fenced = False
            for line in chunk.text.splitlines():
                if _FENCE.match(line):
                    fenced = not fenced
                elif fenced and (m := _COMMAND.match(line)):
                    found.add(m.group(1))
        return frozenset(found)

    return derived(index, "_shown_commands", build)


def covers(index, word: str, min_docs: int = 2) -> bool:
    """A KB covers a subject when a title or heading names it, or two of its documents do;
    one passing remark ("unlike speculative decoding, …") is not coverage, while one
    mention of an exact parameter name is, and so is a program the KB shows being run:
    "helm 怎么装" was told the KB had nothing on helm, above the section whose code block is
    the `helm install` asked for (trial)."""
    heads, body, per_doc = kb_text(index)
    needle = _dashed(word)
    if _found(heads, (needle,)):
        return True
    if word.strip().lower() in _CLI_SUBJECTS and word.strip().lower() in shown_commands(index):
        return True
    first = _found(body, (needle,))
    if not first:
        return False
    if "-" in needle.strip("-") and " " not in needle:
        return True  # an exact parameter name (enable_prefix_caching) is specific enough
    if re.search(r"[a-z] \d", needle):
        return True  # so is a numbered code ("xid 79", "exit code 137"): a team's drain runbook lists it once, under 适用场景
    head_word = needle.strip().split(" ")[0]
    if " " in needle.strip() and re.fullmatch(r"[a-z]+\d+[a-z\d]*", head_word) and _found(heads, (head_word,)):
        # A page titled by the phrase's first word, a format's name (FP8, INT4, W8A8), that says
        # the whole phrase: "FP8 W8A8", whose text says "FP8 quantization" twice, covers FP8
        # quantization ("how do I run FP8 quantization on H100?" was told the docs had nothing
        # on it, trial). Any first word ("LoRA", "prefix") answered near-domain questions.
        return True
    if min_docs <= 1 or sum(1 for text in per_doc if _found(text, (needle,))) >= min_docs:
        return True
    # One document that comes back to the subject again and again (its cause, its fix, how
    # people ask) is about it, not remarking on it in passing. Only the prose counts: a
    # setting that carries the word (`multinode_mode`, a NUMA switch) repeated through a
    # config example says nothing about serving across machines.
    return any(sum(1 for _ in _prose_mentions(text, needle)) >= SUBJECT_MENTIONS for text in per_doc)


def _prose_mentions(haystack: str, needle: str):
    """`_mentions` that are words of their own, not part of a longer name or flag
    (`multinode-mode`, `--multinode`; underscores are dashes by now)."""
    word = needle.rstrip("*")
    for i in _mentions(haystack, needle):
        j = i + len(word)
        if haystack[i - 1:i] != "-" and haystack[j:j + 1] != "-":
            yield i


def unseen_entities(scope: Scope, index) -> list[str]:
    """The question's near-domain subjects that this KB does not cover. For a KB whose
    documents declare no hardware (a team's own docs), a platform the question names
    (Ascend, ROCm, Apple silicon…) counts as a subject too."""
    out: list[str] = []
    if not kb_hardware(index):
        for h in sorted(scope.hardware - {"nvidia"}):
            hit = scope.hardware_terms.get(h)
            # A platform is one subject under several names: docs that say "Apple Silicon"
            # and "macOS" cover the asker's "M1 Mac". Short names are left out: 昇腾 is
            # never found as the bare "npu" or "xpu" other vendors' docs use too.
            names = [n for n in HARDWARE[h] if len(n.rstrip("*")) >= 4]
            if hit and not covers(index, hit) and not any(covers(index, n) for n in names):
                out.append(HARDWARE_NAMES.get(h, h))
    if not scope.entities:
        return out
    # The word the question used, not the whole family: a KB that mentions 量化 (one
    # quantization remark) still knows nothing about bitsandbytes; unless the subject has core
    # words (see CORE_TERMS, PHRASINGS).
    missing = [e for e in scope.entities
               if not _covers_term(index, scope.entity_terms.get(e) or ENTITIES[e][0], ENTITIES[e])
               and not any(_covers_core(index, n) for n in core_terms(e))
               and not (e == "new model support" and any(_covers_core(index, "#" + a) for a in scope.architectures))]
    # One word can name two subjects ("tool_choice": tool calling, and OpenAI request fields);
    # when the KB covers one of them, the word is no evidence of a subject it lacks.
    known = {scope.entity_terms.get(e) for e in scope.entities if e not in missing}
    return out + [e for e in missing if scope.entity_terms.get(e) not in known]


def _covers_core(index, word: str) -> bool:
    """`covers` for a subject's core word; "#word" counts only in a title or heading."""
    if word.startswith("#"):
        return bool(_found(kb_text(index)[0], (_dashed(word[1:]),)))
    return covers(index, word)


def _covers_term(index, used: str, aliases) -> bool:
    """Whether the KB covers a subject or platform by the word the question used. A word
    asked of documents that exist only in the other language is looked for by the subject's
    `aliases` in that language instead, since those documents can never contain it: a
    Chinese word on an English doc tree, and an English one ("GPUMemoryHigh alert fired")
    on a team's Chinese-only runbook that says 告警."""
    if covers(index, used):
        return True
    from .retrieval import twinless_mask

    chinese = any(is_cjk(ch) for ch in used)
    # Documents in the other language with no twin in the question's: twinless_mask(index, lang)
    # marks what a question in `lang` can only read in the other language.
    if not twinless_mask(index, "zh" if chinese else "en").any():
        return False
    if chinese:
        return any(covers(index, alias) for alias in aliases if not any(is_cjk(ch) for ch in alias))
    # An English word is looked for by its glossary translation, not by the subject's other
    # Chinese names: "AWQ" asked of Chinese docs that say 量化 is still not covered.
    from .glossary import translate

    if not re.fullmatch(r"[a-z]+", used.strip().lower()):
        return False  # "api key", "response-format": not translated by one of their words ("key" → 密钥)
    return any(covers(index, word) for words in translate(used, "en") for word in words.split())


def kb_hardware(index) -> frozenset[str]:
    """Hardware families the KB's documents declare (`applies_to.hardware`), or mention."""
    declared: set[str] = set()
    for meta in index.docs.values():
        applies = getattr(meta, "applies_to", None) or {}
        declared.update(str(h).lower() for h in applies.get("hardware", []) or [])
    return frozenset(declared)


def article_hardware(meta) -> frozenset[str]:
    applies = getattr(meta, "applies_to", None) or {}
    return frozenset(str(h).lower() for h in (applies.get("hardware") or []))


def on_platform(scope: Scope, platform: str) -> Scope:
    """The question's scope on the hardware a log beside it names (tools/logs.PLATFORMS): a
    log's "detected platform rocm" says where the server runs when the question does not."""
    if not platform or platform in scope.hardware:
        return scope
    from dataclasses import replace

    return replace(scope, hardware=scope.hardware | {platform}, hardware_terms={**scope.hardware_terms, platform: platform})


def on_product(scope: Scope, product: str, kb_products: frozenset[str]) -> Scope:
    """The question's scope with the engine a log beside it comes from, when the question
    names none: "why do requests hang?" with a FastDeploy log (`free_list_len: 0`) got the
    vLLM article on hangs, sure, while the log's own finding pointed at FastDeploy's
    (newcomer). Only to rank the KB's articles of that engine first: a KB without any is
    not "about another product" for it, so nothing is refused on a log's say-so."""
    if not product or product not in kb_products or scope.products - scope.contrasted:
        return scope
    from dataclasses import replace

    return replace(scope, products=scope.products | {product})


# What each engine's own log prints, and no other's: its banner, its module paths, its
# process tags and its stats lines. Not model names ("ERNIE-4.5" served by vLLM read as
# FastDeploy), and anywhere in the log, not only its head: `ask --log` reads the last 2 MB of
# a long log, which are stats lines (review).
# Plain substrings, not a pattern: five alternations over a 2 MB log took 220 ms of `ask --log`.
_ENGINE_LINES = {
    "vllm": ("vLLM API server version", "Initializing a V", "vllm.entrypoints", "vllm.engine", "vllm.v1.", "vllm.worker",
             "vllm.model_executor", "vLLM is using nccl", "(EngineCore", "(VllmWorker", "VllmWorkerProcess", "non-default args",
             "Automatically detected platform", "Avg prompt throughput"),
    "fastdeploy": ("FastDeploy", "fastdeploy.", "free_list_len", "num_blocks_global", "need_block_len"),
    "sglang": ("sglang", "#running-req", "#queue-req"),
    "tensorrt-llm": ("[TRT-LLM]", "tensorrt_llm."),
    "lmdeploy": ("lmdeploy",),
}


def log_product(text: str) -> str:
    """The serving engine a log comes from, by the lines only that engine prints, or "" when
    it shows none or several (a router's log that proxies to two engines says nothing of which)."""
    named = [product for product, lines in _ENGINE_LINES.items() if any(line in text for line in lines)]
    return named[0] if len(named) == 1 else ""


def hardware_mismatch(scope: Scope, meta) -> frozenset[str]:
    """Hardware the question is on that the article does not apply to (empty: no conflict).

    Naming NVIDIA beside another platform (an A100 box next to a TPU question) is not a
    mismatch: the user may have both."""
    declared = article_hardware(meta)
    on = scope.hardware - scope.contrasted
    if not declared or not on or on & declared:
        return frozenset()
    return on - declared


def product_mismatch(scope: Scope, product: str, kb_products: frozenset[str]) -> bool:
    """The question names a product this KB covers, and the article is about another one."""
    named = (scope.products - scope.contrasted) & kb_products
    return bool(named) and product not in named and product not in ("general", "")


# In a product's own docs, the share of pages that must name another product, outside any
# heading, for the docs to count as covering it.
OTHER_PRODUCT_SHARE = 0.2
MIN_TREE_DOCS = 5  # fewer documents than this are a team's runbook, not a product's doc tree


def foreign_products(scope: Scope, index) -> frozenset[str]:
    """Serving products the question names that this KB does not cover, when it names none
    that the KB covers ("lmdeploy crashes at 4 concurrent requests" against a vLLM/FastDeploy
    KB), or names those only to contrast ("用 lmdeploy（不是 vllm）"). Only for KBs whose
    articles declare a `product`, or whose pages are evidently about one (a product's own
    docs); a KB evidently about none judges only a product none of its pages names, and a
    runbook of a few files not even that.

    In a KB that declares products, one mention anywhere makes a product known, so a team's
    SGLang runbook does. A product's own docs mention others in passing ("faster than
    vLLM", "like TensorRT-LLM's kernels", a benchmark against TGI), on a few pages of many;
    there another product is known only when a heading names it or a fifth of the pages
    do (at least two)."""
    if not scope.products:
        return frozenset()
    declared = not all(m.product in ("general", "") for m in index.docs.values())
    subject = frozenset() if declared else kb_subject_products(index)
    asked = scope.products - scope.contrasted
    if declared:
        known = {p for p in asked if any(covers(index, name, min_docs=1) for name in PRODUCTS[p] if name not in MODEL_HINTS)}
        return frozenset() if known else asked
    heads, body, per_doc = kb_text(index)
    names = {p: tuple(_dashed(n) for n in PRODUCTS[p] if n not in MODEL_HINTS) for p in asked}
    if not subject:
        # A doc tree about a product this list does not name (a team's platform, a new
        # engine) still cannot answer for a product none of its pages ever mentions:
        # "lmdeploy 里挂多个 LoRA" against another engine's docs. One mention anywhere keeps
        # it (a team's runbooks may name the engine once and mean it throughout), and a
        # handful of files is a team's runbook, not a doc tree.
        if len(per_doc) < MIN_TREE_DOCS or any(_found(body, names[p]) for p in asked):
            return frozenset()
        return asked
    need = max(2, OTHER_PRODUCT_SHARE * len(per_doc))
    known = {p for p in asked if p in subject or _found(heads, names[p])
             or sum(1 for text in per_doc if _found(text, names[p])) >= need}
    return frozenset() if known else asked


def kb_subject_products(index) -> frozenset[str]:
    """The serving products a KB without `product` declarations is evidently about: those
    named in at least a third of its documents (vLLM's own docs name vLLM on most pages).
    A runbook that names none stays undecided."""
    def build() -> frozenset[str]:
        _heads, _body, per_doc = kb_text(index)
        need = max(2, len(per_doc) / 3)
        return frozenset(p for p, names in PRODUCTS.items()
                         if sum(1 for text in per_doc if _found(text, tuple(_dashed(n) for n in names if n not in MODEL_HINTS))) >= need)

    return derived(index, "_subject_products", build)


def _parse_version(text: str) -> tuple[int, int, int] | None:
    m = _VERSION.search(" " + text + " ")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def version_mismatch(scope: Scope, meta) -> bool:
    """The question names only versions outside the article's `applies_to.versions`
    (">=0.8.0", "<0.6", or a list of such bounds, all of which must hold)."""
    applies = getattr(meta, "applies_to", None) or {}
    bounds = applies.get("versions")
    if not bounds or not scope.versions:
        return False
    bounds = [bounds] if isinstance(bounds, str) else list(bounds)

    def ok(v: tuple[int, int, int]) -> bool:
        for bound in bounds:
            m = re.match(r"\s*(>=|<=|>|<|==)?\s*(.+)", str(bound))
            if not m:
                continue
            limit = _parse_version(m.group(2))
            if limit is None:
                continue
            op = m.group(1) or ">="
            if not {">=": v >= limit, "<=": v <= limit, ">": v > limit, "<": v < limit, "==": v[:2] == limit[:2]}[op]:
                return False
        return True

    return not any(ok(v) for v in scope.versions)
