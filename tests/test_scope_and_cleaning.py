"""What a question names (product, platform, subjects) and what it pastes."""

import pytest

from assistant.cleaning import retrieval_text, split_question
from assistant.scope import detect, version_mismatch

from .conftest import docs_kb, finishes_within


def test_products_and_hardware_are_detected_in_both_languages():
    s = detect("vLLM 0.8.0 在 8xA100 上跑，MI300X 那台机器也有同样问题")
    assert s.products == {"vllm"}
    assert s.hardware == {"nvidia", "amd"}
    assert (0, 8, 0) in s.versions
    assert detect("FastDeploy 起服务 OOM").products == {"fastdeploy"}
    assert detect("昇腾910B 上跑 vllm-ascend 报错").hardware == {"ascend"}
    assert detect("TPU v5e: AssertionError: Torch not compiled with CUDA enabled").hardware == {"tpu"}


def test_other_accelerators_engines_and_near_domain_subjects_are_named():
    """Domestic accelerators, other engines and a few more subjects a KB may lack: each is
    judged against the KB in use (scope.unseen_entities, foreign_products), never refused
    by name alone."""
    assert detect("摩尔线程 MTT S4000 能跑 vllm 吗").hardware == {"moore threads"}
    assert detect("寒武纪 MLU370 上部署报错").hardware == {"cambricon"}
    # "Gaudi2" alone got a CUDA article, where "Intel Gaudi2 (HPU)" was told the KB is for NVIDIA (trial)
    assert detect("Gaudi2 box, vllm-fork: startup warmup takes 20+ minutes").hardware == {"intel"}
    assert detect("Gaudi3 上跑 vllm").hardware == {"intel"}
    assert detect("Is pipeline parallelism supported in DeepSpeed-MII?").products == {"deepspeed-mii"}
    assert detect("TGI returns 422 for long prompts").products == {"tgi"}
    assert detect("ovms 启动报错").products == {"openvino model server"}
    assert detect("Moving a LoRA from vLLM to LoRAX").products == {"vllm", "lorax"}
    assert detect("How do I enable CORS on the api server").entities == ("CORS",)
    assert detect("每个 API Key 单独设置 TPM/RPM 限流").entities == ("rate limiting", "API authentication")  # limits per key
    assert "fine-tuning" in detect("DeepSpeed ZeRO-3 全参微调还是 OOM").entities
    assert "embedding and rerank models" in detect("is there an embedding endpoint on the same server").entities
    # Structured output asked for in plain words, and an engine under its versioned name.
    assert detect("how do I tell it per request that the output must be a JSON object following a schema?").entities == (
        "structured output",)
    assert detect("Is multimodal supported with ExLlamaV3?").products == {"exllama"}


def test_subjects_named_by_a_phrase_and_the_history_that_is_not_one():
    """Real questions name a subject by what happened ("requests that include tools fail",
    "对话停不下来"), or mention one that is only the model's or the error's past."""
    assert detect("Qwen3 behind an MCP client: requests that include tools fail").entities == ("tool calling",)
    assert detect("vllm 起 glm-4-9b-chat-1m，对话停不下来，一直输出到 max_tokens").entities == ("stop tokens and EOS",)
    assert detect("ValueError: Model architectures ['GlmForCausalLM'] are not supported for now").entities == ("new model support",)
    assert detect("V100 上 Bfloat16 is only supported on GPUs with compute capability of at least 8.0").entities == ("bf16 on older GPUs",)
    assert detect("any way to run the fp8 checkpoint on A100s?").entities == ("quantization kernels",)
    assert detect("gateway returns 502 after vllm restart").entities == ("proxies and gateways",)
    # A flag's value and a model's format are not the subject; neither is a merged LoRA or a fixed error.
    assert detect("Qwen3.8-27B-FP8 on 4x A5000 (TP=4, --max-model-len 262144 --kv-cache-dtype fp8) hangs at startup").entities == ()
    assert detect("merged Qwen-14B + lora adapter, V100S: The model's max seq len (4096) is larger than …").entities == ()
    assert detect("4 张 T4，先是报 Bfloat16 is only supported on GPUs with compute capability of at least 8.0，"
                  "改成 dtype=\"float16\" 后又报 CUDA out of memory").entities == ()


def test_a_phrase_named_subject_is_covered_by_its_core_words(tmp_path):
    """Docs that say "bf16" and "f16" on several pages cover "V100 不支持 bfloat16" whatever
    phrase the asker used; docs that never say it do not."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import unseen_entities

    question = "V100 does not support bfloat16, how do I load the safetensors model in f16?"
    for i, (extra, unseen) in enumerate([("BF16 needs compute capability 8.0; on older GPUs load with `-d f16`.", []),
                                         ("Lower the batch size when memory runs out.", ["bf16 on older GPUs"])]):
        docs = tmp_path / f"docs{i}"
        docs.mkdir()
        (docs / "dtypes.md").write_text(f"# Data types\n\n{extra}\n", encoding="utf-8")
        (docs / "faq.md").write_text(f"# FAQ\n\n{extra} Auto picks a dtype.\n", encoding="utf-8")
        kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / f"c{i}"), progress=lambda _m: None)
        assert unseen_entities(detect(question), kb.index) == unseen


def test_one_page_that_keeps_coming_back_to_a_subject_covers_it_a_passing_remark_does_not(tmp_path):
    """A runbook whose cause, fix and checks all speak of the Ray cluster is about Ray
    clusters, though no other page mentions them; one remark on one page is not coverage."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import unseen_entities

    question = "On our Ray cluster the placement group never gets created, what should I check?"
    about = ("# Multi-node start-up\n\n## Cause\nOn a Ray cluster the nodes may register other addresses.\n\n"
             "## Fix\nSet VLLM_HOST_IP on every node of the Ray cluster before `ray start`.\n\n"
             "## Checks\nRun `ray status` on the Ray cluster head.\n")
    remark = "# Multi-node start-up\n\n## Fix\nSet VLLM_HOST_IP on every node (this also holds on a Ray cluster).\n"
    for i, (text, unseen) in enumerate([(about, []), (remark, ["Ray clusters"])]):
        docs = tmp_path / f"docs{i}"
        docs.mkdir()
        (docs / "multinode.md").write_text(text, encoding="utf-8")
        (docs / "oom.md").write_text("# Out of memory\n\nLower --gpu-memory-utilization.\n", encoding="utf-8")
        kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / f"c{i}"), progress=lambda _m: None)
        assert unseen_entities(detect(question), kb.index) == unseen


def test_a_setting_that_carries_a_subjects_word_is_no_page_about_that_subject(tmp_path):
    """A CPU runtime's NUMA switch `multinode_mode`, repeated through its config examples,
    does not make the page one about serving across machines."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import unseen_entities

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cpu.md").write_text(
        "# CPU inference\n\nTo use several NUMA nodes, list them in `device_ids` and set "
        "`multinode_mode` to true.\n\n```json\n\"multinode_mode\": true\n```\n\n"
        "- `multinode_mode`: whether the engine runs on a multi-NUMA CPU.\n", encoding="utf-8")
    (docs / "oom.md").write_text("# Out of memory\n\nLower --gpu-memory-utilization.\n", encoding="utf-8")
    kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "c"), progress=lambda _m: None)
    question = "Can I serve one model across machines, multinode with two boxes of 4 GPUs each?"
    assert unseen_entities(detect(question), kb.index) == ["multi-node serving"]


def test_api_keys_and_prometheus_metrics_are_subjects_a_clients_key_or_a_passing_remark_does_not_cover(tmp_path):
    """Requiring an API key and exporting Prometheus metrics are near-domain subjects: docs
    that document a server's `--api-key` option or have a Metrics page cover them, while a
    client example's `openai_api_key = "EMPTY"` and a remark that metrics count preemptions
    do not. A question that only sets OPENAI_API_KEY, or pastes `--api-key`, names neither."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import unseen_entities

    client = ("# Quick start\n\n```python\nopenai_api_key = \"EMPTY\"\nclient = OpenAI(api_key=openai_api_key)\n```\n\n"
              "Preemptions show up in the Prometheus metrics too.\n")
    server = ("# Server options\n\n## Security\n\nStart with `--api-key KEY` to require a bearer token.\n\n"
              "## Metrics\n\nPrometheus scrapes `/metrics`.\n")
    asks = {"auth": "How do I require an API key on the server so that not everyone can call it?",
            "metrics": "Is there a /metrics endpoint Prometheus can scrape?"}
    for i, (text, unseen) in enumerate([(client, {"auth": ["API authentication"], "metrics": ["Prometheus metrics"]}),
                                        (server, {"auth": [], "metrics": []})]):
        docs = tmp_path / f"docs{i}"
        docs.mkdir()
        (docs / "guide.md").write_text(text, encoding="utf-8")
        (docs / "oom.md").write_text("# Out of memory\n\nLower --gpu-memory-utilization.\n", encoding="utf-8")
        kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / f"c{i}"), progress=lambda _m: None)
        for key, question in asks.items():
            assert unseen_entities(detect(question), kb.index) == unseen[key], question
    assert "API authentication" not in detect("我们用 OPENAI_API_KEY 调 vllm，请求一直卡住不返回").entities
    assert "API authentication" not in detect("requests hang; started with vllm serve m --api-key sk-1").entities


def test_garbled_model_output_and_saving_logs_are_subjects_but_a_garbled_terminal_is_not():
    assert detect("用 vLLM 部署 Qwen，生成的结果全是乱码").entities == ("garbled output",)
    assert detect("V100 上返回结果全是感叹号，没有正常内容").entities == ("garbled output",)
    assert "garbled output" in detect("video requests return a long string of '!!!!!!!!' as the answer").entities
    assert detect("cmd 里刷出一堆 ←[?25l 这种乱码，VSCode 终端里正常").entities == ()
    assert detect("vllm prints all logs to the screen, can I save the logs to a file?").entities == ("saving logs to a file",)
    assert detect("the log file shows NCCL error unhandled system error").entities == ()


def test_an_oom_killers_exit_code_is_a_subject_a_runbook_can_cover(tmp_path):
    """"vllm container killed with exit code 137" was answered, as sure, from the spawn
    article, and with the CUDA OOM one, whose GPU settings do nothing for host RAM (newcomer
    trial). "OOMKilled" alone is not the subject: askers say "OOMKilled on the GPU". A team
    runbook on the OOM killer covers it."""
    from assistant.scope import unseen_entities

    assert detect("vllm container killed with exit code 137, no CUDA error in log").entities == ("exit code 137 (a killed process)",)
    assert detect("dmesg: Out of memory: Killed process 4242 (python3) while vllm loads weights").entities == ("exit code 137 (a killed process)",)
    assert detect("vllm 容器退出码 137，日志里没有 CUDA 报错").entities == ("exit code 137 (a killed process)",)
    assert detect("vllm 多卡推理时 NCCL watchdog 超时，然后 worker 被 SIGKILL 了").entities == ()  # the watchdog's own kill
    assert detect("my vLLM pod gets OOMKilled on the GPU right after the first few prompts").entities == ()
    assert detect("vllm CUDA out of memory at startup, killed the old process first").entities == ()
    _settings, kb = docs_kb(tmp_path, {
        "oom-killer.md": "# Pod killed with exit code 137\n\n## Symptoms\nThe pod restarts with reason OOMKilled, exit code 137.\n\n"
                         "## Fix\nRaise the container memory limit to 1.5x the weights; loading maps them into host memory first.\n",
        "gpu-oom.md": "# GPU out of memory\n\nLower --gpu-memory-utilization.\n"})
    assert unseen_entities(detect("vllm pod restarts with exit code 137 while loading a 70B model"), kb.index) == []


def test_a_sentence_that_weighs_a_value_states_no_setting():
    """"should I try --max-model-len 2048?" is no server at 2048: its flags are not the
    asker's settings, while the command line's are (review)."""
    from assistant.cleaning import split_question

    parts = split_question("vllm serve m --max-model-len 32768 --gpu-memory-utilization 0.9 OOMs at startup.\n"
                           "should I try --max-model-len 2048 or --max-num-seqs 64?")
    assert parts.flags == {"--max-model-len": "32768", "--gpu-memory-utilization": "0.9"}
    assert split_question("I lowered --max-model-len to 8192, still OOM").flags == {"--max-model-len": "8192"}


def test_cuda_in_an_error_message_is_not_evidence_of_an_nvidia_box():
    assert detect("AssertionError: Torch not compiled with CUDA enabled").hardware == frozenset()


def test_a_cpu_only_torch_build_is_not_a_cpu_only_machine():
    assert detect("how do I replace a CPU-only PyTorch with the CUDA build").hardware == frozenset()
    assert detect("pip 装的 torch 没有 GPU 支持").hardware == frozenset()
    assert detect("vllm serve --device cpu fails").hardware == {"cpu"}


def test_words_inside_other_words_do_not_count():
    assert detect("cannot start, the array start index is wrong").hardware == frozenset()
    assert detect("cannot start").entities == ()


def test_subjects_come_from_what_is_said_not_from_model_names():
    assert detect("用 vllm 部署 qwen2.5-vl-32b-instruct，部署卡死").entities == ()
    assert detect("DeepSeek-OCR 本地连不上 huggingface").entities == ()
    lora = detect("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --enable-lora\nOOM with the adapter")
    assert "LoRA" in lora.entities and "quantization kernels" not in lora.entities
    assert detect("guided_json 很慢，xgrammar 后端").entities == ("structured output",)


def test_a_subject_only_in_a_pasted_command_is_told_apart():
    s = detect("python -m fastdeploy.entrypoints.openai.api_server --reasoning-parser ernie-45-vl --max-num-seqs 32\n"
               "设置了 --max-num-seqs 32，请求还是串行处理的")
    assert s.entities == ("reasoning parsers",) and s.said_entities == ()


def test_version_bounds_in_applies_to():
    class Meta:
        applies_to = {"versions": ">=0.8.0"}

    assert version_mismatch(detect("vllm 0.7.3 temperature ignored"), Meta())
    assert not version_mismatch(detect("vllm 0.8.1 temperature ignored"), Meta())
    assert not version_mismatch(detect("temperature ignored"), Meta())


@pytest.mark.parametrize("question,gone,kept,flags", [
    (("Running a 4-bit Qwen 7B with:\n"
      "python -m vllm.entrypoints.openai.api_server --model /m --gpu-memory-utilization 0.15 --max-model-len 2046\n"
      "  File \"/usr/lib/python3/site-packages/vllm/worker.py\", line 12, in load\n"
      "image: vllm/vllm-openai:latest\n"
      "0.15 fails, 0.2 works. Which knobs shrink vLLM's GPU footprint?"),
     ("api_server", "image:", "worker.py"), ("Which knobs shrink",), {"--gpu-memory-utilization": "0.15"}),
    # Not only vllm, python or docker: a path to a binary, a hyphenated program name, a shell
    # prompt or a build tool followed by flags is a paste too, inline in backticks as well.
    (("8 x A100, built with `cargo build --release --features \"cuda flash-attn\"`\n"
      "user@box:~/mistral.rs$ ./target/release/mistralrs-server --port 1234 -n 8 plain -m ./Qwen2-72B-Instruct -a qwen2\n"
      "mistralrs-server -i plain -m meta-llama/Llama-3.1-8B\n"
      "Only one GPU fills up and then it runs out of memory. How do I split the model over all eight?"),
     ("cargo", "target/release", "meta-llama"), ("8 x A100, built with", "How do I split the model"),
     {"--features": "cuda flash-attn", "--port": "1234"}),
    # vLLM V1's tagged trace and a compose file's command, one item a line (trial: each item was prose).
    (("(EngineCore pid=1426191)   File \"/usr/lib/python3/torch/cuda/graphs.py\", line 139, in replay\n"
      "(EngineCore pid=1426191)     super().replay()\n"
      "(EngineCore pid=1426191) torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
      "  command:\n    - serve\n    - Qwen/Qwen3-32B-AWQ\n    - --tensor-parallel-size\n    - \"2\"\n    - --disable-custom-all-reduce\n"
      "this crashes after a few minutes of traffic on 2x RTX 3090, what do I do?"),
     ("graphs.py", "super()", "Qwen3-32B-AWQ", "- serve", "\"2\"", "custom-all-reduce", "EngineCore"),
     ("illegal memory access", "this crashes after"), {"--tensor-parallel-size": ""}),
], ids=["vllm-python-docker", "any-program", "tagged-trace-compose"])
def test_pasted_command_config_and_stack_frames_leave_the_query(question, gone, kept, flags):
    query = retrieval_text(question)
    assert not [g for g in gone if g in query] and all(k in query for k in kept)
    assert {k: split_question(question).flags[k] for k in flags} == flags


def test_the_askers_words_after_a_command_line_are_searched_with_its_product():
    """"vllm serve Qwen2.5-72B-Instruct --tensor-parallel-size 4 OOM" was all command: its
    flags were searched and it was refused (trial). The words after the arguments are the
    question, with the product the command runs."""
    parts = split_question("vllm serve Qwen2.5-72B-Instruct --tensor-parallel-size 4 OOM")
    assert parts.code == ["vllm serve Qwen2.5-72B-Instruct --tensor-parallel-size 4"] and parts.prose == ["vllm OOM"]
    assert parts.flags == {"--tensor-parallel-size": "4"}
    assert retrieval_text("python -m vllm.entrypoints.openai.api_server --model x --max-model-len 32768 报错 OOM") == "vllm 报错 OOM"
    assert retrieval_text("vllm serve /models/qwen --gpu-memory-utilization 0.97 显存不够") == "vllm 显存不够"
    # words that only ask leave the line whole, as before (review: "vllm help" lost its article)
    for asking in ("help", "报错", "error"):
        line = f"vllm serve m --gpu-memory-utilization 0.97 {asking}"
        assert retrieval_text(line) == line
    # a whole command, or one piped on, stays one paste
    for command in ("pip install vllm", "vllm serve /models/q --port 8000 | tee log.txt",
                    "docker run --gpus all --ipc=host vllm/vllm-openai:latest --model Qwen/Qwen2-7B"):
        assert split_question(command).code == [command] and not split_question(command).prose


def test_the_askers_bullets_and_parentheses_stay_prose():
    """One-word bullets ("- hangs", "- ROCm") and "(FastDeploy)" at a line's start were taken for a
    compose file's items and a process tag (review)."""
    assert split_question("what can cause this? symptoms:\n- hangs\n- logprobs\n- FastDeploy").prose[1:] == ["- hangs", "- logprobs", "- FastDeploy"]
    assert split_question("(FastDeploy) requests hang after logprobs\nERROR 2025 boom").prose == ["(FastDeploy) requests hang after logprobs"]


def test_a_sentence_about_a_program_is_not_a_command_line():
    """"llama-server crashes with -c 8192" is a sentence: the words before the flag say so."""
    for sentence in ("llama-server crashes with -c 8192 on my box", "vllm hangs after --enable-prefix-caching",
                     "/v1/chat/completions returns 500 when I set stream"):
        assert retrieval_text(sentence) == sentence and not split_question(sentence).code


def test_a_chinese_sentence_that_starts_with_a_program_name_is_prose():
    """"vllm 0.10.0 想按说明开工具调用，起服务直接报：" is the question, not a command line;
    "vllm serve: error: argument …" is the program's error, not a command either."""
    q = ("vllm 0.10.0 想按 GLM-4.5 的说明开工具调用，起服务直接报：\n"
         "vllm serve: error: argument --tool-call-parser: invalid choice: 'glm45'\n"
         "是参数写错了还是版本不支持？")
    parts = split_question(q)
    assert parts.prose[0].startswith("vllm 0.10.0 想按") and parts.errors[0].startswith("vllm serve: error:")
    assert not parts.code and "开工具调用" in retrieval_text(q)
    assert detect(q).said_entities == ("tool calling",)
    # A command's quoted Chinese argument does not make it a sentence.
    assert split_question('python infer.py --prompt "你好，请介绍一下你自己"\nwhy is it slow').code


def test_error_lines_stay_and_a_bare_log_is_read_whole():
    q = "INFO 05-01 12:00:00 engine.py:10 started\nRuntimeError: NCCL error in: ../nccl.cpp:1, unhandled system error"
    assert "NCCL error" in retrieval_text(q) and "started" not in retrieval_text(q)
    log_only = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>"
    assert retrieval_text(log_only) == log_only


def test_a_status_line_printed_without_its_log_prefix_is_a_log_not_a_subject():
    """vLLM's stats line names prefix caching whether or not the asker uses it."""
    q = ("On the V1 engine GPU memory never goes down and KV cache usage keeps climbing:\n"
         "Running: 6 reqs, Waiting: 0 reqs, GPU KV cache usage: 24.6%, Prefix cache hit rate: 99.2%\n"
         "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs.\n"
         "Is this a memory leak?")
    parts = split_question(q)
    assert len(parts.logs) == 2 and "Prefix cache" not in retrieval_text(q)
    assert "prefix caching" not in detect(q).said_entities
    # A line describing the setup is no status line: its values are not all numbers.
    assert not split_question("GPU: A100, memory: 80 GB, CUDA: 12.1\nwhy does it hang?").logs
    # And a sentence asking about prefix caching still names it.
    assert "prefix caching" in detect("how do I turn on prefix caching? hit rate: 0%").said_entities


def test_settings_already_tried_to_no_effect_are_not_what_retrieval_reads():
    """They name the article the asker already followed: "TP=4 hangs at start-up … someone
    suggested --gpu-memory-utilization and --max-model-len, no effect" drew the OOM article."""
    q = ("4x RTX 3090, --tensor-parallel-size 4 gets stuck during startup; with 1 GPU it works. "
         "Someone suggested --gpu-memory-utilization 0.7~0.9 and --max-model-len 8192, no effect. Same on 2x 3090.")
    text = retrieval_text(q)
    assert "--gpu-memory-utilization" not in text and "--max-model-len" not in text and "8192" not in text
    assert "--tensor-parallel-size 4 gets stuck" in text and "Same on 2x 3090." in text
    assert "max_num_seqs" not in retrieval_text("max_num_seqs 调小了也没用，还是 OOM。怎么办？")
    # A setting asked about, or one that helped, stays.
    assert "--max-model-len" in retrieval_text("what does --max-model-len 8192 do? the server starts fine.")
    assert "--enforce-eager" in retrieval_text("with --enforce-eager it works. why?")


def test_a_change_then_the_failure_still_there_is_a_tried_setting():
    from assistant.cleaning import tried_settings

    assert tried_settings("I lowered --max-model-len to 8192, still OOM after that") == ["--max-model-len"]
    assert tried_settings("调小了 --max-num-seqs 还是 OOM") == ["--max-num-seqs"]
    # the error itself after 还是 (Left list): the flag had been quoted as "your command line"
    assert tried_settings("加了 --ipc=host 之后还是 NCCL error", explicit=True) == ["--ipc"]
    assert tried_settings("加了 --enforce-eager 还是报 illegal memory access", explicit=True) == ["--enforce-eager"]
    assert tried_settings("--gpu-memory-utilization 设成 0.9 还是 0.95 好", explicit=True) == []
    # a state said of it, a decimal in the sentence, "already pass", 还是一直刷 (trial)
    assert tried_settings("I already pass --generation-config vllm and answers are still worse", explicit=True) == ["--generation-config"]
    assert tried_settings("I set kv_cache_ratio=0.5 and ENABLE_V1_KVCACHE_SCHEDULER=1 already, still free_list_len: 0",
                          explicit=True) == ["kv_cache_ratio", "ENABLE_V1_KVCACHE_SCHEDULER"]
    assert tried_settings("ENABLE_V1_KVCACHE_SCHEDULER=1 开了，kv_cache_ratio 也降到 0.5 了，日志还是一直刷 free_list_len: 0",
                          explicit=True) == ["kv_cache_ratio", "ENABLE_V1_KVCACHE_SCHEDULER"]
    assert tried_settings("VLLM_WORKER_MULTIPROC_METHOD=spawn is exported, still RuntimeError: Cannot re-initialize CUDA",
                          explicit=True) == ["VLLM_WORKER_MULTIPROC_METHOD"]
    assert tried_settings("vllm serve --max-model-len 8192 is still loading after 30 min", explicit=True) == []
    assert tried_settings("We were on --max-model-len 32768 and it still OOMs under load", explicit=True) == []  # in use (review)
    assert tried_settings("export HF_ENDPOINT=https://hf-mirror.com 了，还是卡在下载", explicit=True) == ["HF_ENDPOINT"]  # trial 4
    # a quoted `if __name__` is no condition, "LLM(...)" no sentence's end (trial)
    assert tried_settings("everything is under `if __name__ == '__main__':` and VLLM_WORKER_MULTIPROC_METHOD=spawn is exported, "
                          "still RuntimeError: Cannot re-initialize CUDA", explicit=True) == ["VLLM_WORKER_MULTIPROC_METHOD"]
    assert tried_settings("cuda graphs are off (enforce_eager=True in LLM(...)) and we still get CUDA error: misaligned address",
                          explicit=True) == ["enforce_eager"]
    # explicitly: the command in use, with the failure still there after a restart, is no tried fix (review)
    assert tried_settings("vllm serve m --max-model-len 32768 --gpu-memory-utilization 0.95 重启了仍然报 CUDA out of memory",
                          explicit=True) == []
    assert tried_settings("--ipc=host、--shm-size=16g 都加了，NCCL_P2P_DISABLE=1 也试过，还是报 NCCL error", explicit=True) == [
        "--ipc", "--shm-size", "NCCL_P2P_DISABLE"]
    # a log file's name is no setting ("worker_process" was said to be tried, trial)
    assert tried_settings("FastDeploy max-num-seqs 设了 128 还是在排队，worker_process.log 里 num_blocks_global: 17131") == [
        "max-num-seqs"]
    # Nothing was changed: a state described, or 加载 / 调用 / 开始, which only look like 加 / 调 / 开.
    for said in ("vllm serve --max-model-len 8192 is still loading after 30 min", "--max-model-len 8192 加载到一半还是卡住",
                 "用 --max-model-len 8192 调用接口还是超时", "--tensor-parallel-size 4 开始加载后还是卡住"):
        assert tried_settings(said) == [], said


def test_a_sentence_that_starts_with_a_command_word_is_prose():
    q = "nvidia-smi shows 23859MiB per card; with --enforce-eager it's 21395MiB. So is 2.4GB CUDA graph?"
    assert "nvidia-smi shows" in retrieval_text("4x RTX 4090:\nvllm serve x --tensor-parallel-size 4\n" + q)


def test_detection_and_cleaning_are_linear_on_hostile_input():
    for text in ("a-1" * 2700, " " * 8000, "1" * 8000, "--x " * 2000, "x=" * 4000, "File \"" * 1300, "```\n" * 2000,
                 "x_" * 4000 + " no effect", "no effect --a_b 1.2.3.4.5 " * 300, "ab cd: 1 ab/cd, " * 120 + "!"):
        assert finishes_within(1.0, lambda: (detect(text), split_question(text), retrieval_text(text))), text[:40]


def test_a_chinese_subject_word_is_looked_up_by_its_english_names_in_an_english_only_kb(tmp_path):
    """思考模式 can never occur in English documents; a KB whose pages cover reasoning
    parsers covers the question, while one that never mentions them does not."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import detect, unseen_entities

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "reasoning.md").write_text("# Reasoning outputs\n\nStart the server with a reasoning parser: "
                                       "`--reasoning-parser qwen3`. The reasoning parser splits the thinking from the answer.\n",
                                       encoding="utf-8")
    (docs / "other.md").write_text("# Memory\n\nLower `--gpu-memory-utilization` when the server runs out of memory.\n", encoding="utf-8")
    question = "Qwen3 怎么在服务端默认关掉思考模式？"
    covered = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "c1"), progress=lambda _m: None)
    assert unseen_entities(detect(question), covered.index) == []
    (docs / "reasoning.md").unlink()
    bare = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "c2"), progress=lambda _m: None)
    assert unseen_entities(detect(question), bare.index) == ["reasoning parsers"]


def test_a_chinese_platform_name_is_looked_up_by_its_english_names_in_an_english_only_kb(tmp_path):
    """昇腾 never occurs in English docs about Ascend; they cover the platform. Docs that say
    only "NPU" (another vendor's) do not: the bare word is no evidence of Ascend."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import detect, unseen_entities

    question = "8 卡昇腾 910b 机器，worker 检测不到 NPU 设备，页面上一张卡都不显示"
    for i, (text, unseen) in enumerate([
        ("# Ascend workers\n\nOn Ascend hosts, mount `/dev/davinci*` into the worker container so it detects the NPUs.\n", []),
        ("# NPU workers\n\nOn Intel Core Ultra hosts, install the NPU driver before starting the worker.\n", ["Ascend NPU"]),
    ]):
        docs = tmp_path / f"docs{i}"
        docs.mkdir()
        (docs / "workers.md").write_text(text, encoding="utf-8")
        (docs / "memory.md").write_text("# Memory\n\nLower `--gpu-memory-utilization` when the server runs out of memory.\n",
                                        encoding="utf-8")
        kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / f"c{i}"), progress=lambda _m: None)
        assert unseen_entities(detect(question), kb.index) == unseen


def test_a_platform_or_a_phrasing_is_covered_under_any_of_its_names(tmp_path):
    """A tree that documents "Apple Silicon" and "macOS" covers the asker's "M1 Mac", and
    one about "multiple models" covers "several models"; a tree naming neither does not."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import detect, unseen_entities

    mac = "On an M1 Mac with PagedAttention on, every request takes 30 s. Which setting should I change?"
    models = "Can I load several models with a single invocation and pick one by the model field?"
    for i, (pages, expected) in enumerate([
        ({"metal.md": "# Metal\n\nOn Apple Silicon, build with the metal feature. PagedAttention on macOS needs a memory budget.\n",
          "perf.md": "# Performance\n\nApple Silicon machines share memory; on macOS set a smaller cache.\n",
          "multi.md": "# Multi-model serving\n\nServe multiple models from one process; requests pick one by `model`.\n",
          "faq.md": "# FAQ\n\nMultiple models can share one GPU when each fits.\n"}, ([], [])),
        ({"memory.md": "# Memory\n\nLower `--gpu-memory-utilization` when the server runs out of memory.\n",
          "hang.md": "# Hangs\n\nIf requests hang, lower `--max-num-seqs`.\n"}, (["Apple silicon"], ["several models on one GPU"])),
    ]):
        docs = tmp_path / f"docs{i}"
        docs.mkdir()
        for name, text in pages.items():
            (docs / name).write_text(text, encoding="utf-8")
        kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / f"c{i}"), progress=lambda _m: None)
        assert [unseen_entities(detect(q), kb.index) for q in (mac, models)] == list(expected)


def test_docs_with_an_embeddings_section_cover_the_embeddings_endpoint_asked_about(tmp_path):
    """"the embeddings endpoint fails with No module named 'sentence_transformers'" was
    refused by docs with an "Embeddings" section: coverage was looked up by the asker's
    phrase only."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import unseen_entities

    question = "any request to the embeddings endpoint of the OpenAI API fails, did I miss a step?"
    # The word in running text, even on two pages, is not coverage ("cached image embeddings").
    in_passing = "## Images\n\nCached image embeddings are reused across turns."
    for i, (section, unseen) in enumerate([("## Embeddings\n\nInstall `sentence-transformers` to serve /v1/embeddings.", []),
                                           ("## Streaming\n\nSet `stream: true`.", ["embedding and rerank models"]),
                                           (in_passing, ["embedding and rerank models"])]):
        docs = tmp_path / f"docs{i}"
        docs.mkdir()
        (docs / "api.md").write_text(f"# OpenAI API\n\nStart with `--api`.\n\n{section}\n", encoding="utf-8")
        (docs / "vision.md").write_text(f"# Vision\n\n{in_passing}\n" if i == 2 else "# Vision\n\nSend images.\n",
                                        encoding="utf-8")
        kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / f"c{i}"), progress=lambda _m: None)
        assert unseen_entities(detect(question), kb.index) == unseen


def test_a_doc_tree_about_one_product_refuses_questions_about_another(tmp_path):
    """Docs without front matter declare no product, but a tree that names vLLM on most of
    its pages is about vLLM: a question naming only a product it never mentions is refused
    as such, while one naming vLLM, or none, is answered. A runbook naming no product at
    all cannot judge and answers."""
    from dataclasses import replace

    from assistant.answer import answer_question
    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import kb_subject_products

    docs = tmp_path / "docs"
    docs.mkdir()
    pages = {
        "memory.md": "# Memory\n\nWhen vLLM runs out of GPU memory at start-up, lower `--gpu-memory-utilization` to 0.85.\n",
        "hang.md": "# Hangs\n\nIf vLLM stops answering, check the KV cache usage and lower `--max-num-seqs`.\n",
        "nccl.md": "# NCCL errors\n\nvLLM with tensor parallelism needs `--ipc=host` in Docker for NCCL shared memory.\n",
    }
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    settings = replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "c1")
    kb = open_kb(settings, progress=lambda _m: None)
    assert kb_subject_products(kb.index) == frozenset({"vllm"})
    other = answer_question("SGLang runs out of GPU memory at start-up, what should I lower?", settings, kb=kb)
    assert not other.grounded and "SGLang" in other.answer
    own = answer_question("vLLM runs out of GPU memory at start-up, what should I lower?", settings, kb=kb)
    assert own.grounded and "--gpu-memory-utilization" in own.answer

    # Named once in passing, SGLang is still not covered; under a heading of its own, it is.
    (docs / "hang.md").write_text(pages["hang.md"] + "\nvLLM's scheduler differs from SGLang's here.\n", encoding="utf-8")
    passing = replace(settings, cache_dir=tmp_path / "c3")
    assert not answer_question("SGLang runs out of GPU memory at start-up, what should I lower?", passing,
                               kb=open_kb(passing, progress=lambda _m: None)).grounded
    # Named in passing on two pages of a twelve-page vLLM tree (benchmarks, comparisons), it
    # still is not: a product's docs that cover another give it a heading or many pages.
    for i in range(9):
        (docs / f"extra{i}.md").write_text(f"# vLLM topic {i}\n\nvLLM setting number {i} is documented here.\n"
                                            + ("It is faster than SGLang on this benchmark.\n" if i == 0 else ""), encoding="utf-8")
    many = replace(settings, cache_dir=tmp_path / "c5")
    assert not answer_question("SGLang runs out of GPU memory at start-up, what should I lower?", many,
                               kb=open_kb(many, progress=lambda _m: None)).grounded
    for i in range(9):
        (docs / f"extra{i}.md").unlink()
    (docs / "sglang.md").write_text("# Running SGLang beside vLLM\n\nWhen SGLang runs out of GPU memory, lower `--mem-fraction-static`.\n",
                                    encoding="utf-8")
    headed = replace(settings, cache_dir=tmp_path / "c4")
    assert answer_question("SGLang runs out of GPU memory at start-up, what should I lower?", headed,
                           kb=open_kb(headed, progress=lambda _m: None)).grounded
    (docs / "sglang.md").unlink()
    (docs / "hang.md").write_text(pages["hang.md"], encoding="utf-8")

    for name, text in pages.items():  # the same runbook without product names
        (docs / name).write_text(text.replace("vLLM", "the server"), encoding="utf-8")
    plain_settings = replace(settings, cache_dir=tmp_path / "c2")
    plain = open_kb(plain_settings, progress=lambda _m: None)
    assert kb_subject_products(plain.index) == frozenset()
    assert answer_question("SGLang runs out of GPU memory at start-up, what should I lower?", plain_settings, kb=plain).grounded


def test_offloading_layers_to_the_gpu_is_not_cpu_offload():
    """llama.cpp-style servers "offload layers to the GPU" (the fix for a model stuck on the
    CPU); CPU offload moves weights or KV cache the other way."""
    assert "CPU offload" not in detect("model runs on the CPU only, how do I offload layers to the GPU?").entities
    assert "CPU offload" not in detect("none of the current offload or quantization options help").entities
    assert "CPU offload" in detect("how do I offload the KV cache to CPU memory in vllm").entities
    assert "CPU offload" in detect("--cpu-offload-gb 10 makes decoding slow").entities


def test_words_that_only_contain_a_subject_do_not_name_it():
    """"video memory" is 显存 in English, a connection pool is no pooling model, a
    screenshot of the error (见下面图片) is no image input, and a fine-tuned model's history
    is not a fine-tuning question."""
    for q in ("vllm startup fails: video memory is full, CUDA out of memory", "vllm 启动就 OOM，报错见下面图片",
              "报错截图如下图片所示：CUDA out of memory", "connection pooling in the gateway makes vllm requests hang",
              "after fine-tuning our model, vllm serve OOMs at startup", "我们 SFT 后的 Qwen2 模型用 vllm 起服务直接 OOM",
              # a Docker image is no picture
              "we pull the vllm/vllm-openai images from a mirror and the container OOMs", "docker images for vllm 0.8 crash at start",
              "rebuilt the images, still Torch not compiled with CUDA enabled", "after upgrading images vllm OOMs at start",
              "pulled new images, now NCCL errors"):
        assert detect(q).entities == (), q
    for q in ("一次传三张图片就报错", "video input with qwen2-vl fails", "how many images per prompt can I send",
              "把之前的截图都带上，请求里超过一张图就 400，单张图没事",
              # pictures and vision models by name (trial)
              "CUDA out of memory when I send large images to llava", "Qwen2.5-VL-7B OOMs only with 20+ images per request",
              "vllm OOMs when I send the images as base64", "CUDA out of memory when I send an image from a URL"):
        assert detect(q).entities == ("multimodal inputs",), q
    assert detect("how do I run SFT on Qwen2 before serving it with vllm?").entities == ("fine-tuning",)
    # pictures the asker says were not sent are no subject (fresh3: "even though I don't send any images", dev)
    assert detect("VRAM use explodes at startup even though I don't send any images").entities == ()
    assert detect("I don't need speculative decoding, how do I turn it off?").entities == ("speculative decoding",)
    # the family's name is the word judged against the KB, not a generic one from a pasted frame (Yi-VL's docs name LLaVA)
    assert detect("the LLaVA code fails in build_vision_projector").entity_terms == {"multimodal inputs": "llava*"}


def test_a_quantization_format_that_describes_the_served_model_is_not_the_subject():
    """"Yi-34B AWQ runs out of memory" is a memory question about an AWQ model; "AWQ is not
    supported on V100" is a quantization question."""
    from assistant.scope import detect

    assert "quantization kernels" not in detect("4 张 A10 跑 Yi-34B AWQ，显存只用了一半就起不来").entities
    assert "quantization kernels" not in detect("Qwen3 4B AWQ OOMs at start-up on a 24G card").entities
    assert "quantization kernels" in detect("AWQ is not supported on my V100, what now?").entities
    # a format before "model" describes it too, unless serving that format is what is asked
    assert "quantization kernels" not in detect("int4 model only takes ~4G VRAM but memory grows past 16G. "
                                                "Is there a flag to cap the KV cache?").entities
    assert "quantization kernels" in detect("how do I serve an AWQ model on vllm?").entities
    assert "quantization kernels" in detect("vllm 能不能直接跑 Int4 模型？").entities


def test_a_page_headed_by_a_subject_or_a_setting_named_after_it_covers_it(tmp_path):
    """production-stack's "Tool Enabled Installation" page (headed "Deploy vLLM Instance with
    Tool Calling Support", values `chatTemplate:`) refused a tool-calling question as
    about subjects it lacks; one word ("tool_choice") named a second subject too. A tree
    with neither still lacks them."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import unseen_entities

    question = "How do I enable the OpenAI tool-calling API (tools + tool_choice auto) for Llama-3.1, which parser and chat template?"
    for i, (pages, expected) in enumerate([
        ({"tools.md": "# Tool Enabled Installation\n\n## Deploy with Tool Calling Support\n\n```yaml\nenableTool: true\n"
                      "toolCallParser: llama3_json\nchatTemplate: tool_chat_template_llama3.1_json.jinja\n```\n",
          "helm.md": "# Helm chart\n\nSet `servingEngineSpec` in values.yaml.\n"}, []),
        ({"helm.md": "# Helm chart\n\nSet `servingEngineSpec` in values.yaml.\n",
          "routing.md": "# Routing\n\nThe router picks an engine per request.\n"}, ["chat templates", "tool calling", "OpenAI API request fields"]),
    ]):
        docs = tmp_path / f"docs{i}"
        docs.mkdir()
        for name, text in pages.items():
            (docs / name).write_text(text, encoding="utf-8")
        kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / f"c{i}"), progress=lambda _m: None)
        assert sorted(unseen_entities(detect(question), kb.index)) == sorted(expected)


def test_ordinary_words_of_a_pasted_english_error_in_a_chinese_question_are_not_names(bundled_kb):
    """Every English word of a Chinese sentence may be a name; a pasted English error line's
    "Exiting", "denied" and "trying" are not, nor is "%2Fvar" in a socket URL."""
    from assistant.retrieval import unknown_names

    question = ("装 minikube 启动报错：\nExiting due to PROVIDER_DOCKER_NEWGRP: Got permission denied while trying to connect: "
                'Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.24/version": permission denied\n用 Kafka 接入怎么办？')
    names = unknown_names(bundled_kb.index, question, "zh")
    assert "kafka" in names and not {"exiting", "denied", "trying", "fvar", "frun"} & set(names)


def test_stop_words_in_a_chinese_question_are_not_unknown_names(bundled_kb):
    from assistant.retrieval import unknown_names

    names = unknown_names(bundled_kb.index, "启动报错 The model is not with the cache，用 Dify 接入", "zh")
    assert "dify" in names and not {"the", "not", "with", "is"} & set(names)


def test_words_of_a_flag_are_not_unknown_names(bundled_kb):
    """"--metrics-port 8181" in a Chinese question named "port" and "metrics" as subjects the
    KB never covers; a setting is judged as a setting (scope.unknown_parameters)."""
    from assistant.retrieval import unknown_names

    question = "FastDeploy 起服务，参数 --port 8180 --metrics-port 8181 --reasoning-parser ernie，接 Dify 后并发上不去"
    names = unknown_names(bundled_kb.index, question, "zh")
    assert "dify" in names and not {"port", "metrics", "parser", "reasoning"} & set(names)


def test_products_and_units_are_not_unknown_names(bundled_kb, bundled_settings):
    """A product is judged by the product rule, not as a word the KB never uses: vLLM run
    inside Xinference is vLLM's question. Units after a number are no subject either."""
    from assistant.answer import answer_question
    from assistant.retrieval import unknown_names

    question = "xinference 里用 vllm 后端起 Qwen2-72B，报 CUDA out of memory，还剩 512 MiB，用 Grafana 看的"
    names = unknown_names(bundled_kb.index, question, "zh")
    assert "grafana" in names and not {"xinference", "vllm", "mib"} & set(names)
    # Named alone, an unknown product is still refused, by the product rule.
    alone = answer_question("xinference 启动模型报 CUDA out of memory 怎么办", bundled_settings, kb=bundled_kb, use_llm=False)
    assert not alone.grounded and "Xinference" in alone.answer


def test_a_format_followed_by_what_it_quantizes_stays_the_subject():
    from assistant.scope import detect

    assert "KV cache quantization" in detect("Qwen2-7B fp8 kv cache accuracy drops").entities
    assert "quantization kernels" in detect("Llama-3-8B int4 awq kernel crash").entities


def test_a_command_pasted_inside_a_sentence_leaves_the_query_with_its_flags_kept():
    q = ("want to host offline. python -m vllm.entrypoints.api_server --model TheBloke/CodeLlama-7B-AWQ --quantization awq\n"
         "I already set HF_HUB_OFFLINE=1. how do I make it use the files I have?")
    parts = split_question(q)
    assert parts.prose[0] == "vllm want to host offline."  # the command's product stays with the words
    assert parts.flags["--quantization"] == "awq" and "api_server" not in retrieval_text(q)
    assert detect(q).said_entities == ()  # the quantization format is part of the command, not the question
    zh = "8 张 4090。直接 CUDA_VISIBLE_DEVICES=6,7 vllm serve org/Model-32B --tensor-parallel-size 2 没问题；换到框架里就报错\nRuntimeError: x"
    parts = split_question(zh)
    assert parts.code == ["CUDA_VISIBLE_DEVICES=6,7 vllm serve org/Model-32B --tensor-parallel-size 2"]
    assert "没问题；换到框架里就报错" in parts.prose[0] and parts.flags["--tensor-parallel-size"] == "2"


def test_flags_written_in_a_sentence_keep_their_values_without_its_punctuation():
    flags = split_question("TTFT is 8 s. vllm 0.8.5, --max-num-batched-tokens 2048, --enable-chunked-prefill. "
                           "set --max-model-len 16384. 也试了 --gpu-memory-utilization 0.8。--model .").flags
    assert flags["--max-num-batched-tokens"] == "2048" and flags["--max-model-len"] == "16384"
    assert flags["--gpu-memory-utilization"] == "0.8" and flags["--model"] == "."
    # The value after a word of the sentence: "lowered --gpu-memory-utilization to 0.8", "改成 4096".
    flags = split_question("already lowered --gpu-memory-utilization to 0.8 and --max-model-len to 8192, no effect").flags
    assert flags == {"--gpu-memory-utilization": "0.8", "--max-model-len": "8192"}
    assert split_question("把 --max-model-len 改成 4096 也没用").flags == {"--max-model-len": "4096"}
    # "开到 0.95" (a newcomer trial: the answer quoted the flag back without its value)
    assert split_question("已经把 --gpu-memory-utilization 开到 0.95 了，还是 OOM").flags == {"--gpu-memory-utilization": "0.95"}
    # "--tensor-parallel-size=4": the flag's last word with its value is no keyword argument of its own
    # (the answer said "From your command line: --tensor-parallel-size 4, size=4")
    assert split_question("vllm serve m --tensor-parallel-size=4 --max-model-len=131072").flags == {
        "--tensor-parallel-size": "4", "--max-model-len": "131072"}
    assert split_question("llm = LLM(model=m, max_model_len=4096)").flags == {"llm": "LLM", "model": "m", "max_model_len": "4096"}


@pytest.mark.parametrize("text,names", [
    ("FastDeploy requests hang. logprobs is NOT enabled.", ["logprobs"]),
    ("没开 logprobs，请求一直卡着", ["logprobs"]),
    ("vllm OOM, not using LoRA, Qwen2.5-7B", ["LoRA"]),
    ("we are not using --enable-prefix-caching", ["--enable-prefix-caching"]),
    ("未开启 chunked prefill 也卡", ["chunked prefill"]),
    ("调了也没用，还是不行", []),  # it did not help: names nothing
    ("max_num_seqs 调小了也没用", []),
    ("NCCL is not found; CUDA is not available", []),  # a symptom, not a feature left off
    ("NCCL is not set up correctly", []),
    ("不开 vllm、直接 transformers 跑是正常的", []),  # without it, it works: it is the culprit
    ("没设 HF_ENDPOINT，下载一直卡住", []),  # a setting not set is more often the fix
    ("I didn't set --enforce-eager", []),
    ("I don't use LoRA", ["LoRA"]),
    ("加了 --max-num-seqs 32 也没用 FastDeploy 还是 OOM", []),  # 没用: it did not help
    ("改了 --gpu-memory-utilization 0.8 没用 OOM 还在", []),
    ("CUDA graph is not used, decode is slow", []),  # a symptom
    ("vllm is not using my GPU", []),
    ("FP8 is not on Ampere?", []),
    # more ways of saying it is off (trial): each got the feature's own article, as sure
    ("FastDeploy 请求卡住，logprobs 是关着的", ["logprobs"]),
    ("FastDeploy 推理卡住，没用 logprobs", ["logprobs"]),
    ("prefix caching 没开，还是慢", ["prefix caching"]),
    ("已经关掉了 prefix caching 还是慢", ["prefix caching"]),
    ("怎么关闭 qwen3 的思考过程", []),  # asked for: the subject
    ("调用 API 时用 chat_template_kwargs 关 thinking", []),
    ("关掉 batching 就没问题，是哪个参数导致 503", []),  # the remedy: batching is the culprit
    ("batching 关了就好了", []),
    # (review) without it all is well: the culprit; 被 X 关闭: X acted; 没用 as "did not help"
    ("FastDeploy 请求会卡住不返回，logprobs 没开的时候一切正常", []),
    ("prefix caching 没开之前是好的", []),
    ("连接被 nginx 关闭了", []),
    ("gpu_memory_utilization 调到 0.8 没用 max_model_len 改到 8192 也不行", []),
    ("我们没用 LoRA，vllm 启动 OOM", ["LoRA"]),
    ("save_trans: False, save_lightllm: True", []),  # a config's values: what the question is about
    ("加了 --enforce-eager 关了 cuda graph，还是报错", []),  # 关了 takes what follows; --enforce-eager was added
    ("改了 max-num-seqs 也没用 KV cache 还是满", []),  # 也没用: it did not help
])
def test_features_the_asker_rules_out(text, names):
    from assistant.negation import ruled_out, without_ruled_out

    assert ruled_out(text) == names
    assert all(n not in without_ruled_out(text) for n in names)


def test_a_printed_python_dict_is_config_not_prose():
    q = "KV cache 的大小是哪里控制的？加载参数是：\n{'tokenizer_mode': 'auto', 'max_model_len': 4096}"
    assert split_question(q).code == ["{'tokenizer_mode': 'auto', 'max_model_len': 4096}"]
    assert detect(q).said_entities == ()


def test_log_tags_and_runs_of_flags_do_not_make_a_subject():
    ray = "2 nodes over ray, never starts:\nvllm serve m --tensor-parallel-size 16\n(autoscaler +7s) Error: No available node types can fulfill resource request"
    assert detect(ray).entities == ("autoscaling",) and detect(ray).said_entities == ()
    flags = ("the memory needed went up. same flags (--gpu-memory-utilization 0.95 --reasoning-parser deepseek_r1) now fail with\n"
             "RuntimeError: CUDA out of memory")
    assert detect(flags).said_entities == ()
    asked = "Qwen3 with --reasoning-parser=qwen3 hangs when thinking is on\nany idea?"
    assert detect(asked).said_entities == ("reasoning parsers",)


def test_a_doc_tree_about_an_unlisted_product_refuses_a_product_none_of_its_pages_names(tmp_path):
    """A product's own docs whose product the list does not know (here "Gadget") still
    cannot answer for LMDeploy, which no page mentions; one mention anywhere keeps the
    question, and a handful of files (a team's runbook) cannot judge at all."""
    from dataclasses import replace

    from assistant.answer import answer_question
    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import MIN_TREE_DOCS, foreign_products, kb_subject_products

    docs = tmp_path / "docs"
    docs.mkdir()
    topics = ["LoRA adapters", "GPU memory", "tensor parallel", "quantization", "tokenizer", "metrics"]
    for i, topic in enumerate(topics):
        (docs / f"page{i}.md").write_text(f"# Gadget {topic}\n\nGadget serves {topic} with `gadget serve --{topic.split()[0].lower()}-{i}`.\n",
                                          encoding="utf-8")
    settings = replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "c1")
    kb = open_kb(settings, progress=lambda _m: None)
    assert kb_subject_products(kb.index) == frozenset() and len(topics) >= MIN_TREE_DOCS
    asked = detect("lmdeploy 部署 qwen2.5-vl，能在一个服务里挂多个 lora adapter 吗？")
    assert foreign_products(asked, kb.index) == {"lmdeploy"}
    answer = answer_question("lmdeploy 部署 qwen2.5-vl，能在一个服务里挂多个 lora adapter 吗？", settings, kb=kb)
    assert not answer.grounded and "LMDeploy" in answer.answer
    assert foreign_products(detect("Gadget LoRA adapters: how many can one server load?"), kb.index) == frozenset()
    (docs / "page1.md").write_text("# Gadget GPU memory\n\nLike LMDeploy, Gadget keeps a cache.\n", encoding="utf-8")
    once = replace(settings, cache_dir=tmp_path / "c2")
    assert foreign_products(asked, open_kb(once, progress=lambda _m: None).index) == frozenset()
    few = tmp_path / "runbook"
    few.mkdir()
    (few / "oncall.md").write_text("# GPU memory\n\nLower the batch when the server runs out of memory.\n", encoding="utf-8")
    runbook = replace(settings, kb_dir=few, cache_dir=tmp_path / "c3")
    assert foreign_products(asked, open_kb(runbook, progress=lambda _m: None).index) == frozenset()


def test_a_product_named_only_as_a_contrast_is_not_the_subject(bundled_kb):
    from assistant.scope import foreign_products

    asked = detect("rtx4090 * 8，用 lmdeploy（不是 vllm）起 qwen2-72b-awq，4 并发就崩")
    assert asked.contrasted == {"vllm"} and foreign_products(asked, bundled_kb.index) == {"lmdeploy"}
    like = detect("lmdeploy 里怎么设置显存占比？类似 vllm 的 --gpu-memory-utilization 那种")
    assert foreign_products(like, bundled_kb.index) == {"lmdeploy"}
    both = detect("vllm crashes at 4 concurrent requests while lmdeploy holds 16")
    assert not both.contrasted and foreign_products(both, bundled_kb.index) == frozenset()
    assert not detect("好像 vllm 卡住了，lmdeploy 没问题").contrasted  # 好像: "it seems", not "like"
    assert not detect("I would like vllm to use less memory; lmdeploy was fine").contrasted
    # Said to work ("also fine there"), a product is where the failure is not.
    works = detect("两张 4090 跑 --tensor-parallel-size 2，卡在 NCCL 初始化不动，单卡正常，ollama 多卡也没问题")
    assert works.contrasted == {"ollama"} and foreign_products(works, bundled_kb.index) == frozenset()
    assert detect("vLLM hangs with TP=2; it works fine with sglang on the same box").contrasted == {"sglang"}
    # "能不能像 vllm 那样" sets vLLM against the product asked about after any character.
    assert detect("ovms 能不能像 vllm serve --chat-template ./x.jinja 那样自己给一个模板？").contrasted == {"vllm"}
    assert not detect("镜像 vllm/vllm-openai 启动就报错").contrasted
    assert not detect("lmdeploy 单卡正常，多卡报错").contrasted and not detect("sglang 也报 OOM").contrasted


def test_an_engine_named_in_passing_is_not_the_subject(bundled_kb):
    from assistant.scope import foreign_products

    # The question is about TGI; vLLM is named once to compare.
    tgi = detect("TGI keeps every reply identical whatever top_p I send. vLLM does vary them. "
                 "Does TGI ignore top_p unless do_sample is set?")
    assert tgi.contrasted == {"vllm"} and foreign_products(tgi, bundled_kb.index) == {"tgi"}
    zh = detect("vllm 上遇到过 KV cache 放不下的报错，现在改用 lmdeploy，lmdeploy 也有这个限制吗？")
    assert zh.contrasted == {"vllm"} and foreign_products(zh, bundled_kb.index) == {"lmdeploy"}
    # Named as often as the other, both stay asked about; named more often, vLLM is the subject.
    assert not detect("moved from sglang to vllm and now it OOMs at start").contrasted
    assert detect("moved from sglang to vllm and now vllm OOMs at start").contrasted == {"sglang"}
    assert not detect("vllm crashes at 4 concurrent requests while lmdeploy holds 16").contrasted
    # A stack that runs the engine is its setting, not a contrast; a pasted log does not count.
    assert not detect("xinference 里用 vllm 引擎，vllm 启动就 OOM，xinference 日志没别的").contrasted
    log = ("vllm serve fails at start:\n  File \"/x/flashinfer/trtllm_moe.py\", line 3\n"
           "  File \"/x/flashinfer/trtllm_gen.py\", line 9\nRuntimeError: CUDA error")
    assert "vllm" not in detect(log).contrasted


def test_ocr_asked_of_an_llm_engine_is_a_vision_models_task_not_the_ocr_pipeline_subject():
    assert detect("用 sglang 跑 GOT OCR 模型，temperature 设 0 两次结果还是不一样").entities == ()
    assert detect("deploying an OCR model with vllm takes 80GB, how do I cap the memory?").entities == ()
    assert "vision/OCR model serving" in detect("FastDeploy 服务化部署 OCR，一张图 2.5 秒").entities
    assert "vision/OCR model serving" in detect("vllm 旁边还要部署 PaddleOCR 的检测模型").entities
    assert "vision/OCR model serving" in detect("how do I serve an OCR pipeline?").entities


def test_a_printed_object_and_a_model_variant_are_not_subjects():
    q = ("Qwen2 72B Chat AWQ on vllm: a request loops forever. the log shows SamplingParams(n=1, best_of=1, "
         "temperature=0.6) but generation_config.json has repetition_penalty 1.15. why?")
    assert detect(q).said_entities == ()
    assert detect("how do I serve an AWQ model with beam search, best_of=4?").said_entities == ("quantization kernels", "beam search")


def test_hardware_named_only_for_comparison_is_not_the_platform():
    class Meta:
        applies_to = {"hardware": ["nvidia"]}

    from assistant.scope import HARDWARE, PRODUCT_NAMES, PRODUCTS, hardware_mismatch

    rocm = detect("piecewise cudagraph capture on ROCm (MI300) takes way more memory than on H100 for the same model")
    assert rocm.hardware == {"nvidia", "amd"} and hardware_mismatch(rocm, Meta()) == {"amd"}
    both = detect("we run the same model on H100 and on MI300 boxes; the MI300 one OOMs")
    assert hardware_mismatch(both, Meta()) == frozenset()
    assert set(PRODUCT_NAMES) == set(PRODUCTS) and HARDWARE


def test_a_one_line_question_with_a_command_after_its_sentence_is_split():
    q = ("since 0.8.1 temperature seems to be ignored, every answer is the same. Server: python3 -m "
         "vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B --max-model-len 32768 --gpu-memory-utilization 0.95")
    assert "max-model-len" not in retrieval_text(q) and "temperature seems to be ignored" in retrieval_text(q)
    assert split_question(q).flags["--max-model-len"] == "32768"
    # A question that starts with its command: the words after it, with its product (its flags
    # outweighed "OOM" and it was refused; trial). The flags stay as facts.
    alone = "vllm serve Qwen/Qwen2-7B --max-model-len 32768 fails with CUDA out of memory"
    assert retrieval_text(alone) == "vllm fails with CUDA out of memory"
    assert split_question(alone).flags == {"--max-model-len": "32768"}


def test_two_flags_joined_by_a_word_are_what_the_sentence_says():
    q = ("every step fails with\nAPI error: '\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'\n"
         "what do I need to add?")
    assert "tool calling" in detect(q).said_entities


def test_words_that_only_look_like_contrasts_leave_the_product_asked_about():
    for q in ("是不是 vllm 的 bug？同样的模型 sglang 没问题，启动就 CUDA out of memory",
              "从 sglang 换成 vllm 之后，启动就 CUDA out of memory",
              "I run more than 2 vllm instances on one GPU and the second one fails; sglang was fine",
              "拉了镜像vllm-openai:v0.8.5，启动就 CUDA out of memory，sglang 镜像没问题",
              "对比 vllm 和 sglang，前者启动就 OOM"):
        assert "vllm" not in detect(q).contrasted, q
    assert "nvidia" not in detect("MI300 上正常，是不是 H100 的驱动问题？").contrasted
    assert detect("it is slower than on 8xH200 here, on MI300X").contrasted == {"nvidia"}


def test_a_sentence_that_names_a_program_is_not_cut_as_a_command():
    q = "Does vllm serve support --enable-lora with AWQ models?\nthanks"
    assert "support --enable-lora" in retrieval_text(q) and "LoRA" in detect(q).said_entities
    # "with" is the sentence, not the flag's value; asked about, the flag is no setting of the asker's
    assert "--enable-lora" not in split_question(q).flags
    slow = "Server: vllm serve Qwen/Qwen2.5-7B --enforce-eager why is it slower than without\nok"
    assert "why is it slower" in retrieval_text(slow) and "vllm serve Qwen" not in retrieval_text(slow)
    quoted = "I run `vllm serve Qwen/Qwen2-7B --max-model-len 4096` and it hangs forever\nany idea?"
    assert "`" not in retrieval_text(quoted)
    assert split_question("[vllm, 0.8.5] OOM at startup, what now?\nthanks").code == []


def test_parameters_the_sentences_name_that_the_kb_never_writes_are_unknown(bundled_kb):
    from assistant.scope import unknown_parameters

    # A flag of another server, asked about in a sentence: the KB cannot explain it.
    assert unknown_parameters("is there an equivalent of TGI's --max-concurrent-requests?", bundled_kb.index) == ["--max-concurrent-requests"]
    # Spelled as a field or a flag, a parameter the KB writes is known either way.
    assert unknown_parameters("should I lower gpu_memory_utilization or --max-model-len?", bundled_kb.index) == []
    # Settings inside a pasted command or traceback are not what the sentence asks about.
    pasted = "vllm crashes at start-up, why?\nvllm serve m --max-concurrent-requests 4 --foo-bar-baz 2\n"
    assert unknown_parameters(pasted, bundled_kb.index) == []
    # A C++ type a crash names is no setting (trial: a refusal said the KB had nothing on `runtime_error`).
    assert unknown_parameters("卡在 Loading layers 96%，terminate called after throwing an instance of 'std::runtime_error'，怎么办",
                              bundled_kb.index) == []
    # File names and module paths are not parameters.
    assert unknown_parameters("the error comes from async_engine.py in lmdeploy", bundled_kb.index) == []


def test_a_parameter_only_a_heading_writes_is_known(tmp_path):
    """A procedure's step heading names the variable ("### 2. Set NCCL_SOCKET_IFNAME") while
    its text says "export it to the interface": a review found it called unknown."""
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.knowledge import open_kb
    from assistant.scope import unknown_parameters

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "nccl.md").write_text("# Multi-node NCCL\n\n## Fix\n\n### 1. Find the interface\n\nRun `ip -br addr`.\n\n"
                                  "### 2. Set NCCL_SOCKET_IFNAME\n\nExport it to the interface that holds the node's IP.\n",
                                  encoding="utf-8")
    kb = open_kb(replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "cache"), progress=lambda _m: None)
    assert unknown_parameters("what should NCCL_SOCKET_IFNAME be set to?", kb.index) == []
    assert unknown_parameters("what should NCCL_IB_HCA be set to?", kb.index) == ["NCCL_IB_HCA"]


def test_camel_case_fields_are_parameters_and_runtime_calls_are_not(bundled_kb):
    """Kubernetes manifests and JSON configs name settings in camelCase: a field the KB never
    writes is unknown like a flag. A GPU runtime's function in a sentence ("cudaMalloc failed")
    names the error, not a setting; nor is a product's name (vLLM, macOS) a field."""
    from assistant.scope import unknown_parameters

    def fields(q: str) -> list[str]:
        return unknown_parameters(q, bundled_kb.index, fields=True)

    assert fields("can I raise progressDeadlineSeconds on the deployment?") == ["progressDeadlineSeconds"]
    assert fields("is there a values key for loadBalancerIP?") == ["loadBalancerIP"]
    assert fields("cudaMalloc failed and ncclCommInitRank hangs, why?") == []
    assert fields("vLLM on macOS with gRPC, why so slow?") == []
    # Helm's spelling of a flag the KB writes is known; a name touching Chinese is still a name.
    assert fields("maxModelLen 怎么设置？") == [] and fields("能不能改progressDeadlineSeconds？") == ["progressDeadlineSeconds"]
    # Counted apart from the flags and env vars the refusal model was fitted on.
    assert unknown_parameters("can I raise progressDeadlineSeconds on the deployment?", bundled_kb.index) == []


def test_the_asked_settings_are_those_the_asking_sentence_names():
    """Only the sentence that asks counts: a setting named while describing the set-up is
    not what is asked about."""
    from assistant.scope import asked_unknown_parameters

    unknown = ["progressDeadlineSeconds", "--foo-bar"]
    assert asked_unknown_parameters("Pods take 10 min to start. Can I change progressDeadlineSeconds?", unknown) == ["progressDeadlineSeconds"]
    assert asked_unknown_parameters("I run with --foo-bar 2. Why does it hang?", unknown) == []
    assert asked_unknown_parameters("I run with --foo-bar, and it hangs: why?", unknown) == []
    assert asked_unknown_parameters("The readinessProbe fails after 10 min: can I change initialDelaySeconds?",
                                    ["readinessProbe", "initialDelaySeconds"]) == ["initialDelaySeconds"]
    assert asked_unknown_parameters("启动要十分钟。能不能改 progressDeadlineSeconds", unknown) == ["progressDeadlineSeconds"]
    assert asked_unknown_parameters("anything?", []) == []
    # Without a question mark the last sentence counts only if it asks.
    assert asked_unknown_parameters("启动报错。栈里是 spawn.py 的 spawn_main", ["spawn_main"]) == []
    # a Chinese A-not-A question asks, with no question mark or 吗 (trial)
    assert asked_unknown_parameters("SGLang 要不要开 --enable-torch-compile", ["--enable-torch-compile"]) == ["--enable-torch-compile"]
    assert asked_unknown_parameters("dsv3 需不需要加 --enable-dp-attention", ["--enable-dp-attention"]) == ["--enable-dp-attention"]
    assert asked_unknown_parameters("不管开不开 --enforce-eager 都报错", ["--enforce-eager"]) == []
    assert asked_unknown_parameters("只要不要开 --enforce-eager 就行了", ["--enforce-eager"]) == []


def test_a_long_paste_keeps_its_last_lines():
    """400 INFO lines and the one `torch.OutOfMemoryError` at the end: reading the first 400
    lines only lost the line the server died of (the answer was the NCCL article)."""
    from assistant.cleaning import MAX_LINES, split_question

    text = "why did it die?\n" + "INFO 12-04 10:00:00 [engine.py:1] step\n" * 600 + "torch.OutOfMemoryError: CUDA out of memory"
    parts = split_question(text)
    assert parts.prose == ["why did it die?"] and parts.errors == ["torch.OutOfMemoryError: CUDA out of memory"]
    assert len(parts.logs) + len(parts.prose) + len(parts.errors) <= MAX_LINES


def test_a_question_about_a_setting_is_not_a_tried_setting():
    """Review: hypotheticals and either/or questions were marked tried and their settings
    dropped from retrieval; an asked value replaced the command line's."""
    from assistant.cleaning import split_question, tried_settings

    for said in ("If I set --max-model-len 8192, will it still OOM?", "--gpu-memory-utilization 设成 0.9 还是 0.95 比较好？",
                 "--max-model-len 改成 8192 还是 16384？", "假设 --max-model-len 32768，还是会 OOM 吗？",
                 "推理速度下降了，--max-num-batched-tokens 8192，还是很慢", "Should I set --max-num-seqs 64 or is 256 still fine?"):
        assert tried_settings(said) == [], said
    flags = split_question("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768 gives CUDA out of memory at startup.\n"
                           "Should I lower --max-model-len to 8192 or to 16384?").flags
    assert flags["--max-model-len"] == "32768"


def test_a_commands_column_output_is_a_paste_and_its_failing_states_are_what_is_asked():
    """`kubectl get pods` pasted above "why is the first one crashing": its header's words
    (RESTARTS, AGE) were read as the question's, unknown to a team's KB, and refused it (trial)."""
    q = ("NAME                           READY   STATUS             RESTARTS      AGE\n"
         "qwen72b-vllm-6d8f7b9c4-x2kqp   0/1     CrashLoopBackOff   7 (2m ago)    31m\n"
         "qwen72b-vllm-6d8f7b9c4-zz91m   1/1     Running            0             3d\n"
         "why is the first one crashing")
    parts = split_question(q)
    assert parts.prose == ["why is the first one crashing"] and parts.errors == ["CrashLoopBackOff"]
    assert len(parts.logs) == 3 and retrieval_text(q) == "why is the first one crashing\nCrashLoopBackOff"
    # a sentence after the table is prose again, and a table of healthy rows asks about no state
    healthy = "NAME   READY   STATUS   RESTARTS   AGE\nvllm-0   1/1   Running   0   3d\nis this fine?"
    assert split_question(healthy).errors == [] and split_question(healthy).prose == ["is this fine?"]
    # a sentence typed with two spaces after each stop is no row of it; a shout in capitals with
    # no row under it is no header (review)
    typed = q.replace("why is the first one crashing", "The first pod keeps dying.  I set the limit to 64Gi.  What now?")
    assert split_question(typed).prose == ["The first pod keeps dying.  I set the limit to 64Gi.  What now?"]
    assert split_question("GPU  OOM  ON  H100  AGAIN\nwhy?").prose == ["GPU  OOM  ON  H100  AGAIN", "why?"]
    assert split_question("NAME  STATUS  AGE\nvllm-0  Exited (1)  5m\nwhy").errors == ["Exited (1)"]


def test_a_flag_is_not_given_the_word_after_it_and_a_stats_line_names_no_subject():
    """"the largest --max-model-len I can run" was quoted back as "From your command line:
    `--max-model-len I`"; vLLM's stats lines end in "Prefix cache hit rate: 0.0%" whether or not
    prefix caching is used, and a stalled server's stats were refused as a question on it (trial)."""
    assert split_question("what's the largest --max-model-len I can run on one A100?").flags == {}
    assert split_question("I run with --enforce-eager and it hangs").flags == {"--enforce-eager": ""}
    assert split_question("I run with --enforce-eager, why is it slow?").flags == {"--enforce-eager": ""}
    assert split_question("vllm serve m --max-model-len 8192 --dtype half").flags == {"--max-model-len": "8192", "--dtype": "half"}
    stats = ("INFO 12-05 23:40:01 [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
             "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 57 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%")
    assert "prefix caching" not in detect(stats).entities
    assert "prefix caching" in detect("how do I turn on prefix caching? the hit rate is low").entities


def test_a_page_titled_by_a_phrases_first_word_that_says_the_phrase_covers_it(tmp_path):
    """vLLM's "FP8 W8A8" page says "FP8 quantization" twice: "how do I run FP8 quantization on
    H100?" was told the docs had nothing on quantization kernels (trial)."""
    from assistant.retrieval import RetrievalParams, search

    settings, kb = docs_kb(tmp_path, {
        "fp8.md": "# FP8 W8A8\n\nvLLM supports FP8 quantization on Hopper GPUs such as the H100.\n\n"
                  "## Quantization process\n\nRun `oneshot(model, recipe=QuantizationModifier(scheme=\"FP8_DYNAMIC\"))`, "
                  "then serve the saved model with `vllm serve ./model-FP8-Dynamic`.\n",
        "install.md": "# Installation\n\nInstall with `pip install vllm`. Build from source with `pip install -e .`.\n"})
    r = search(kb.index, kb.embedder, "how do I run FP8 quantization on H100?", RetrievalParams.from_settings(settings))
    assert r.unseen == [] and r.grounded
    # a subject no heading names stays unknown: GPTQ is said nowhere
    r = search(kb.index, kb.embedder, "how do I run GPTQ quantization on H100?", RetrievalParams.from_settings(settings))
    assert "quantization kernels" in r.unseen


def test_stats_lines_that_show_trouble_are_what_retrieval_reads():
    """"throughput dropped, is this normal?" over vLLM's stats line (Running: 256, Waiting: 88,
    KV cache 41%) was read as the sentence alone and answered with the debug switches; the
    line that shows requests waiting is the evidence (trial). A healthy one stays a log line."""
    q = ("throughput dropped, is this normal?\nINFO 12-05 23:50:10 [loggers.py:116] Engine 000: Avg prompt throughput: "
         "312.5 tokens/s, Avg generation throughput: 95.2 tokens/s, Running: 256 reqs, Waiting: 88 reqs, GPU KV cache usage: 41.2%")
    assert "Waiting: 88 reqs" in retrieval_text(q)
    healthy = q.replace("Waiting: 88 reqs", "Waiting: 0 reqs")
    assert "Waiting" not in retrieval_text(healthy) and split_question(healthy).logs


@pytest.mark.parametrize("text, term, denied", [
    ("no ecc errors", "ecc", True), ("没有 xid 79", "xid", True), ("没开 fp8 kv cache", "fp8", True),
    ("without fp8 kv cache", "fp8", True),
    ("有没有 lora 的文档", "lora", False), ("是不是 ecc 错误", "ecc", False),  # questions about the term
    ("改了也没用 lora 还是报错", "lora", False), ("怎么关掉思考模式", "思考", False),
])
def test_a_term_said_to_be_absent_or_off_right_before_it(text, term, denied):
    """One reading for subjects (scope) and a KV cache's dtype (calculations)."""
    from assistant.negation import denied_before

    assert denied_before(text, text.index(term)) is denied


def test_near_domain_subjects_in_their_other_spellings():
    """A subject is named in more ways than its flag: "CPU KV offloading", a connector's
    class name, the `task="embed"` keyword of the offline API. Unnamed, the question went to
    the article its pasted log line matched, as sure (real questions)."""
    assert "CPU offload" in detect("Start-up hangs during CUDA graph capture once CPU KV offloading is on").entities
    assert "CPU offload" in detect("vllm serve ... --kv-offloading-backend native hangs").entities
    assert "CPU offload" in detect("开了 KV cache 卸载到 CPU 以后启动就卡住").entities
    assert "disaggregated serving" in detect("DeepSeek with the MooncakeStoreConnector as KV connector fails the KV-cache pre-check").entities
    assert "disaggregated serving" in detect("--kv-connector LMCacheConnectorV1 makes start-up slow").entities
    assert "embedding and rerank models" in detect('llm = LLM(model=m, task="embed"); outs = llm.embed(texts) never returns').entities
    assert "CPU offload" in detect("our kv-cache offload tiers fill host memory").entities
    assert "CPU offload" in detect('--kv-transfer-config \'{"kv_connector":"OffloadingConnector"}\' hangs').entities
    # Not the subject: offloading layers the other way.
    assert "CPU offload" not in detect("how do I offload layers to the GPU?").entities
