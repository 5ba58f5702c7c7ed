"""Capacity questions through the real no-LLM answer path: every case of eval/capacity.jsonl exact,
no number when a value is missing, and random values in phrase templates equal to a direct tool call."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.calculations import capacity_answer, capacity_call, explain
from assistant.i18n import texts
from assistant.tools import call_tool

CASES = [json.loads(line) for line in (Path(__file__).resolve().parent.parent / "eval" / "capacity.jsonl").read_text(encoding="utf-8").splitlines()]
CAPACITY_TOOLS = {"kv_concurrency", "kv_tokens_concurrency", "blocks_needed", "kv_bytes_per_token", "kv_cache_capacity", "kv_tokens_from_memory",
                  "kv_memory_needed", "fastdeploy_decode_budget", "logprobs_message_size"}
HEADINGS = {"en": ("**Calculation**", "**Calculation: more numbers needed"), "zh": ("**计算结果**", "**计算：还缺数据")}


def test_the_eval_has_enough_cases_of_every_kind():
    kinds = {c["kind"] for c in CASES}
    assert len(CASES) >= 60 and {c["lang"] for c in CASES} == {"zh", "en"}
    assert {"inverse", "unit", "sum", "log", "missing", "gpu-count", "what-if", "mixed", "trap"} <= kinds
    assert sum("missing" in c for c in CASES) >= 10
    assert {c["tool"] for c in CASES if c.get("arguments")} == CAPACITY_TOOLS


@pytest.mark.parametrize("case", [c for c in CASES if c.get("arguments")], ids=lambda c: c["id"])
def test_stored_expectations_are_what_the_tools_compute(case):
    call = call_tool(case["tool"], case["arguments"])
    assert call.error is None and call.result[case["key"]] == case["expected"]


def _shown_block(case: dict, lang: str) -> str:
    """The calculation block the answer must start with, built the same way answer_question builds it."""
    from assistant.config import bundled_kb_dir
    from assistant.tools.logs import diagnose_text

    numbers = diagnose_text(case["log"], str(bundled_kb_dir())).numbers if case["log"] else None
    return explain(capacity_answer(case["question"], numbers), lang)


def _numbers(text: str) -> set[str]:
    """Digit runs of a text, leaving out names that contain digits (bf16, fp8, float32)."""
    return set(re.findall(r"\d+", re.sub(r"(?:bf|fp|float|int)\d+", "", text.replace(",", ""))))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_every_capacity_case_through_the_no_llm_answer(case, bundled_settings, bundled_kb):
    from assistant.answer import MAX_ANSWER_CHARS, answer_question

    answer = answer_question(case["question"], bundled_settings, kb=bundled_kb, use_llm=False, log_text=case["log"])
    # The bound holds beside a long calculation too (a 70B table question came to 3,011 characters).
    assert len(answer.answer) <= MAX_ANSWER_CHARS, len(answer.answer)
    calls = [c for c in answer.tool_calls if c["name"] in CAPACITY_TOOLS]
    done, missing = HEADINGS[answer.lang]
    if case["tool"] is None:  # not a capacity question: no calculation, no request for numbers
        assert calls == [] and done not in answer.answer and missing not in answer.answer
        return
    if "missing" in case:  # a needed value is missing or unclear: ask, compute nothing
        assert calls == []
        block = _shown_block(case, answer.lang)
        assert answer.answer.startswith(block) and block.startswith(missing), answer.answer[:300]
        known = re.sub(r"\D+", " ", (case["question"] + " " + (case["log"] or "")).replace(",", ""))
        # "2k" is said to be read as 2,000 (write 2,048 for multiples of 1024): the asker's number too
        known += " 1024 " + " ".join(f"{int(k) * 1000} {int(k) * 1024}" for k in re.findall(r"(\d+)\s*k\b", case["question"], re.I))
        formula_digits = {"1", "2"}  # "(1 − kv_cache_ratio)", "2 × layers" in the formulas shown
        assert all(n in known or n in formula_digits for n in _numbers(block)), block  # only the asker's own numbers
        return
    (call,) = [c for c in calls if c["name"] == case["tool"]]
    assert call["error"] is None and call["arguments"] == case["arguments"]
    assert call["result"][case["key"]] == case["expected"]
    block = _shown_block(case, answer.lang)
    formula = call["result"]["formula_zh" if answer.lang == "zh" else "formula"]
    assert answer.answer.startswith(block) and block.startswith(done)  # the work is shown first, above the KB article
    assert f"`{formula}`" in block
    # The figure answers; the article is its background, not one guess among several.
    assert "It could also be" not in answer.answer and "也可能是" not in answer.answer


def test_defaults_are_said_out_loud_and_override_them_when_given():
    assumed = capacity_answer("17131 个 block，每个请求平均 2 万 token，实际能并发多少")
    assert assumed.call.arguments["block_size"] == 64 and "FastDeploy 的默认值 64" in explain(assumed, "zh")
    given_ = capacity_answer("17131 个 block，block_size 我们改成了 128，每个请求平均 2 万 token，实际能并发多少")
    assert given_.call.result["concurrent_requests"] == 109 and "默认值" not in explain(given_, "zh")
    vllm = capacity_answer("vLLM, num_gpu_blocks 4096, requests of 1000 tokens (prompt + output), how many concurrent?")
    assert vllm.call.arguments["block_size"] == 16 and "vLLM's default" in explain(vllm, "en")


def test_a_total_beside_one_part_is_asked_about_not_computed():
    """"each request 4k input + 1k output" gave 48 requests of 4,000 tokens: the 1k was
    dropped. Written number-first, the pair sums; beside a stated total, one part is a
    question for the asker, never a number."""
    pair = capacity_answer("num_gpu_blocks 12000, block_size 16, each request 4k input + 1k output, how many concurrent requests?")
    assert pair.computed and pair.call.result["concurrent_requests"] == 38
    unclear = capacity_answer("num_blocks 12000, block_size 16, each request 4k tokens + 1k output tokens, how many concurrent?")
    assert not unclear.computed and "does 4k per request already include the 1k output tokens" in explain(unclear, "en")
    zh = capacity_answer("num_blocks_global 12000，block_size 16，每个请求 4k token，其中输出 1k，能并发多少？")
    assert not zh.computed and "4k 里是否已含输出 1k" in explain(zh, "zh")


def test_a_pasted_oom_message_is_not_a_capacity_question():
    """torch's message says "total capacity of 79.33 GiB"; the asker wants the OOM fixed, and
    got "missing data, not computed" above the fix."""
    oom = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.33 GiB"
    assert capacity_answer(f"服务启动报错：{oom}，怎么处理") is None
    assert capacity_answer(oom) is None


@pytest.mark.parametrize("question", [
    "I want to start the worker with 2 GPUs and int8 at the same time for one 13B model. Which arguments do I combine?",
    "同时用 2 张卡加载一个 13B 模型，再开 int8，参数怎么写？",
])
def test_at_the_same_time_without_requests_is_no_concurrency_question(question):
    """"2 GPUs and int8 at the same time" names two settings, not requests running at once:
    a list of what a concurrency calculation would need only got in the way of the answer."""
    assert capacity_answer(question) is None


@pytest.mark.parametrize("question", [
    "17131 blocks of 16 tokens, 8k tokens per request: how many fit at the same time?",
    "num_blocks_global 17131，每个请求 8k token，能同时跑几个？",
    "We need 300 simultaneous users at 4k tokens each; block_size 64, how many blocks?",
])
def test_at_the_same_time_next_to_requests_still_asks_for_concurrency(question):
    answer = capacity_answer(question)
    assert answer is not None and answer.tool in ("kv_concurrency", "blocks_needed")
    assert capacity_answer("80 GiB 的卡，权重 15 GiB，能放多少 token 的 KV cache？") is not None


def test_sizes_in_a_question_that_asks_for_no_figure_list_nothing_missing():
    """"单卡 4090 24G … 是显存不够还是参数设错了？" states a size and asks a question, but no
    figure: "missing data, not computed" (and "4090 is a GPU count") led a LoRAX answer.
    Asked for a figure, or whether it fits, the missing values are still listed."""
    case = "本地 llama2-13b 起 lorax，单卡 4090 24G，设了 MAX_INPUT_LENGTH=8191，这是显存不够还是参数设错了？"
    assert capacity_answer(case) is None
    assert capacity_answer("单卡 24G 跑 13B 模型够不够？").missing
    assert capacity_answer("24 GiB card, 13B model: how many tokens of KV cache fit?").missing


def test_a_gpu_count_is_named_and_not_used_as_blocks():
    answer = capacity_answer("8 块 A100, 每个请求平均 2000 token，能并发多少")
    text = explain(answer, "zh")
    assert not answer.computed and answer.missing == ["num_blocks"]
    assert "num_blocks_global" in text and "log/worker_process.log" in text and "GPU 数量" in text


def test_the_cap_by_max_num_seqs_says_the_rest_queue():
    answer = capacity_answer("17131 blocks, 2000 tokens per request, --max-num-seqs 256: how many concurrent requests?")
    assert answer.call.result["limited_by"] == "max_num_seqs" and "queue" in explain(answer, "en")


@pytest.mark.parametrize("question,ceiling", [
    ("Qwen2.5-7B-Instruct on one H100 80GB, max-model-len 4096, how many concurrent requests can it serve?", "256 by default"),
    ("vllm 日志 GPU KV cache size: 1,200,000 tokens，max-model-len 4096 能并发多少", "默认 256"),
    ("17131 blocks, 2000 tokens per request, how many concurrent requests on FastDeploy?", "defaults to 8"),
    ("17131 blocks, 2000 tokens per request, --max-num-seqs 256: how many concurrent requests?", None),  # set: its own cap
    ("vllm 日志 GPU KV cache size: 200,000 tokens，max-model-len 4096 能并发多少", None),  # 48: under the default
])
def test_a_concurrency_over_the_default_batch_ceiling_says_the_rest_queue(question, ceiling):
    """"262.9 full-length requests at once" on one H100 is what the KV cache holds; vLLM
    schedules 256 unless --max-num-seqs says more, and FastDeploy decodes 8 (trial)."""
    answer = capacity_answer(question)
    assert answer is not None and answer.computed
    notes = " ".join(n["zh"] + n["en"] for n in answer.lead + answer.notes)
    if ceiling is None:
        assert "max-num-seqs requests at once" not in notes and "defaults to 8" not in notes
    else:
        lead = " ".join(n["zh"] + n["en"] for n in answer.lead)
        assert ceiling in lead and ("queue" in lead or "排队" in lead)
        # said right under the figure it limits, before the formula, not among the notes (trial)
        lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in question) else "en"
        shown = explain(answer, lang)
        values = shown.index(texts("calculations", lang)["heading.values"])
        assert -1 < shown.index(ceiling) < values and ceiling not in shown[values:], shown


@pytest.mark.parametrize("question,expect", [
    ("need 50 concurrent 8k requests on Llama-3.1-8B-Instruct, will a single A100 40GB do it?",
     ("400,000 tokens", "172,384", "do not fit", "about 21")),
    ("Llama-3.1-8B-Instruct 单张 A100 40G 能撑住 50 个 8k 并发吗", ("400,000 个 token", "放不下", "约 21 个")),
    ("Llama-3.1-8B-Instruct 单张 A100 40G 能撑住 10 个 8k 并发吗", ("80,000 个 token", "放得下")),
    ("GPU KV cache size: 1,200,000 tokens. 64 sessions of 32k, will they fit?", ("2,048,000 tokens", "do not fit", "about 37")),
    # requests as long as the question says, not max_model_len (review: "100 requests of 32,768 … do not fit")
    ("Qwen2.5-7B on one H100 80GB, max-model-len 32768, 100 concurrent users averaging 2k tokens each, will it handle that?",
     ("200,000 tokens", "they fit", "up to 538")),
    ("Qwen2.5-7B on one H100 80GB, max-model-len 32768, 300 concurrent users averaging 2k tokens each, will it handle that?",
     ("600,000 tokens", "they fit", "256 by default")),  # held, but not all scheduled at once
])
def test_the_load_a_question_states_is_set_against_the_kv_cache(question, expect):
    """"Will a single A100 40GB do 50 concurrent 8k requests?" computed nothing in English and,
    in Chinese, read 8k as 8,000 sessions and left the 50 to the reader (trial)."""
    answer = capacity_answer(question)
    assert answer is not None and answer.computed, answer and answer.missing
    notes = " ".join(n["zh"] + " " + n["en"] for n in answer.notes + answer.lead)  # (the batch ceiling leads)
    assert all(e in notes for e in expect), notes


@pytest.mark.parametrize("question,expect", [
    ("startup says 'Maximum concurrency for 32,768 tokens per request: 3.20x' but under load I regularly see 40 requests "
     "running at once. is the log wrong?", "average at most about 2,621 tokens"),
    ("日志说 Maximum concurrency for 32,768 tokens per request: 3.20x，但监控上看到 40 个请求同时在跑，日志算错了吗",
     "平均最多约 2,621 个 token"),
])
def test_requests_seen_running_are_no_load_to_fit_at_the_full_context(question, expect):
    """"I regularly see 40 requests running" against the log's 3.20x was told the 40 "do not fit;
    the rest wait" (trial 4): they run, being shorter; what the figure allows them on average is said."""
    answer = capacity_answer(question)
    assert answer is not None and answer.computed
    notes = " ".join(n["zh"] + " " + n["en"] for n in answer.notes)
    assert expect in notes and "do not fit" not in notes and "放不下" not in notes


def test_a_follow_up_that_restates_the_request_replaces_its_input_and_output():
    """Turn 3 of a chat, "what about avg 4k tokens per request?", after "2k 输入 + 6k 输出" and a
    block-size change, was asked back which total was right (trial); it restates the request."""
    from assistant.interfaces import chat

    first = "fastdeploy num_blocks_global: 17131, block_size 64, 平均每个请求 2k 输入 + 6k 输出，能并发多少？"
    question = chat.thread_question("what about avg 4k tokens per request?", [first, "那如果 block_size 改成 128 呢"])
    answer = capacity_answer(question)
    assert answer is not None and answer.computed, answer and answer.problems
    assert answer.call.result["concurrent_requests"] == 267  # 8,565 blocks of 128; ⌈4,000 ÷ 128⌉ = 32 each
    assert any("4k" in n["en"] and "2k + 6k" in n["en"] for n in answer.notes)
    same_line = capacity_answer("17131 blocks, 2k input + 6k output, 4k tokens per request: how many concurrent?")
    assert same_line is not None and not same_line.computed  # said at once, the two disagree: asked


def test_asking_how_to_handle_it_asks_for_a_fix_not_a_figure():
    """"How can we handle this?" under a pasted CUDA OOM opened with a KV-cache calculation (review):
    whether a card takes a load is asked with the card, or of "it"."""
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.15 GiB of which 1.2 GiB is free. Qwen2.5-7B on one H100 80GB, max-model-len 32768.\nHow can we handle this?")
    assert capacity_answer(oom) is None


def test_a_what_if_on_the_memory_share_is_computed():
    """"Qwen2.5-14B-Instruct on one L40S, util 0.95 instead of 0.92: KV tokens and concurrency at
    32k?" computed nothing: neither "util" nor the question were read (trial)."""
    answer = capacity_answer("Qwen2.5-14B-Instruct on one L40S, util 0.95 instead of 0.92: KV tokens and concurrency at 32k?")
    assert answer is not None and answer.computed
    assert answer.call.arguments["gpu_memory_utilization"] == 0.95 and answer.call.result["kv_tokens"] == 83_872
    assert answer.call.arguments["max_model_len"] == 32_000


@pytest.mark.parametrize("question,bytes_", [
    ("Qwen2.5-72B 每个 token 的 KV cache 多大", 327_680),
    ("Qwen2.5-72B KV cache bytes per token with --kv-cache-dtype fp8?", 163_840),
    ("Qwen2.5-7B kv bytes per token at tp 2", 57_344),
    # a KV cache's dtype said in words (review: 128 KiB, the bf16 figure)
    ("Llama-3.1-8B fp8 KV cache: how many bytes per token?", 65_536),
    ("Qwen2.5-72B KV cache 用 FP8，每个 token 多大", 163_840),
])
def test_a_named_model_gives_its_kv_bytes_per_token_from_the_table(question, bytes_):
    """"Qwen2.5-72B 每个 token 的 KV cache 多大" asked for the layers, KV heads and head_dim the
    built-in table holds, above a team page that said 320 KiB (trial)."""
    answer = capacity_answer(question)
    assert answer is not None and answer.computed, answer and answer.missing
    assert answer.call.result["bytes_per_token"] == bytes_


def test_the_llm_gets_the_same_result_or_is_told_not_to_guess():
    computed = capacity_answer("num_blocks_global 9000, block_size 128, 32000 tokens per request, how many concurrent?")
    assert "9000 × 128 = 1,152,000" in computed.context() and "36" in computed.context()
    asking = capacity_answer("num_blocks_global 17131, how many concurrent requests can it handle?")
    assert "Do not invent" in asking.context() and "tokens per request" in asking.context()


@pytest.mark.parametrize("question", [
    "num_blocks_global 0, average 2000 tokens per request, how many concurrent?",
    "num_blocks_global 17131, requests average 20k tokens, max_num_seqs 0, how many concurrent?",
])
def test_a_zero_the_tool_refuses_is_said_not_a_crash(question, bundled_settings, bundled_kb):
    """The no-LLM answer read the refused call's name and crashed (exit 70, trial)."""
    from assistant.answer import answer_question

    answer = answer_question(question, bundled_settings, kb=bundled_kb, use_llm=False)
    assert "must be positive" in answer.answer and answer.citations


def test_an_h100_nvl_is_not_sized_as_an_80_gb_h100():
    """An H100 NVL has 94 GB; it was sized as an H100 (79.6 GiB), and "80GB H100s" (plural)
    as exactly 80 GiB (trial)."""
    nvl = capacity_answer("Qwen2.5-7B-Instruct on one H100 NVL, max_model_len 32768, how many concurrent?")
    assert nvl is not None and "gpu_memory" in nvl.missing
    h200 = capacity_answer("Qwen2.5-72B-Instruct on two H200 NVL, TP=2, max_model_len 32768, how many concurrent requests?")
    assert h200.computed  # an H200 NVL has an H200's 141 GB (review)
    plural = capacity_answer("--gpu-memory-utilization 0.95 on 80GB H100s with Llama-3.1-70B fp16, TP=4, max_model_len 32k, how many concurrent requests?")
    assert plural.computed and plural.call.arguments["gpu_memory_gib"] == pytest.approx(79.647, abs=0.001)


def test_whole_blocks_agree_everywhere_vllm_counts_them():
    """The figure, the asked load and the largest length all count whole blocks (review):
    "about 455 at once" sat beside "456 … they fit"; 26,870 tokens were said not to fit and
    to be the largest that fits; a log's forced block size of 64 was ignored."""
    load = capacity_answer("GPU KV cache size: 458,752 tokens. Can it hold 456 concurrent requests of 1000 tokens?")
    assert load.call.value.concurrent_requests == 455
    assert any("do not fit" in n["en"] and "about 455" in n["en"] for n in load.notes), load.notes
    edge = call_tool("kv_tokens_concurrency", {"kv_cache_tokens": 26870, "tokens_per_request": 26870}).value
    assert (edge.concurrent_requests, edge.largest_max_model_len) == (0, 26864) and edge.exact < 1
    assert "The largest that fits is 26,864" in edge.explanation["en"]
    from assistant.tools.logs import diagnose_text

    log = ("INFO 11-30 10:07:01 [cuda.py:160] Forcing kv cache block size to 64 for FlashMLA backend.\n"
           "INFO 11-30 10:07:31 [kv_cache_utils.py:634] GPU KV cache size: 458,752 tokens\n")
    mla = capacity_answer("how many concurrent requests of 1000 tokens?", diagnose_text(log, None).numbers)
    assert mla.call.arguments["block_size"] == 64 and mla.call.value.exact == 448.0


def test_a_max_model_len_past_the_checkpoints_context_is_said_under_the_figure():
    """"vLLM prints this as 5.01x" for a --max-model-len vLLM refuses at start-up (trial): the
    refusal is said right under the figure."""
    answer = capacity_answer("Qwen2.5-32B-Instruct, GPU KV cache size: 328,640 tokens. What if I set --max-model-len 65536, how many concurrent?")
    shown = explain(answer, "en")
    refused = shown.index("vLLM refuses --max-model-len 65536 at start-up")
    assert refused < shown.index("Formula:") and "Notes:" not in shown[:refused]


def test_a_pasted_float32_config_gets_the_16_bit_kv_cache_as_the_tool_does():
    answer = capacity_answer('how much KV cache per token? config.json: {"num_hidden_layers": 32, "num_attention_heads": 32, '
                             '"num_key_value_heads": 8, "hidden_size": 4096, "torch_dtype": "float32"}')
    assert answer.call.value.bytes_per_token == 131072
    served = capacity_answer("how much KV cache per token with --dtype float32, 32 layers, 8 KV heads, head_dim 128?")
    assert served.call.value.bytes_per_token == 262144  # served in float32 on purpose: 4 bytes


def test_a_7000_digit_number_is_refused_with_a_message_not_an_overflow():
    answer = capacity_answer("how many concurrent requests with 17131 blocks and " + "9" * 7000 + " tokens per request?")
    assert answer is not None and not answer.computed and "too large" in explain(answer, "en")


# ---------------------------------------------------------------- properties: templates × random values

_FULL_WIDTH = str.maketrans("0123456789,", "０１２３４５６７８９，")


@st.composite
def written(draw, n: int, lang: str) -> str:
    """n as a person might write it: plain, with separators, full-width, k, 万 or w."""
    forms = [str(n), f"{n:,}", str(n).translate(_FULL_WIDTH)]
    if n % 1000 == 0:
        forms.append(f"{n // 1000}k" if lang == "en" else f"{n // 1000}K")
    if n % 1000 == 0 and n >= 10000 and lang == "zh":
        forms += [f"{n / 10000:g} 万", f"{n / 10000:g}w"]
    return draw(st.sampled_from(forms))


BLOCKS = st.integers(100, 200_000)
SIZES = st.sampled_from([16, 32, 64, 128, 256])
TOKENS = st.one_of(st.integers(50, 120_000), st.integers(1, 120).map(lambda k: k * 1000))

CONCURRENCY = {
    "en": ["num_blocks_global {b}, block_size {s}, {t} tokens per request, how many concurrent?",
           "{b} blocks of {s} tokens with {t}-token requests, how many run concurrently?",
           "total blocks: {b}; block size {s}; average request {t} tokens. How many requests at once?"],
    "zh": ["{b} 个 block，block_size {s}，每个请求平均 {t} token，能并发多少",
           "num_blocks_global: {b}，block_size 是 {s}，单个请求 {t} 个 token，同时能跑几个请求？",
           "KV Cache 一共 {b} 个 block，每个 block {s} 个 token，平均请求长度 {t} token，最多并发多少"],
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), BLOCKS, SIZES, TOKENS, st.sampled_from(["en", "zh"]))
def test_concurrency_phrasings_equal_the_direct_tool_call(data, blocks, size, tokens, lang):
    template = data.draw(st.sampled_from(CONCURRENCY[lang]))
    question = template.format(b=data.draw(written(blocks, lang)), s=size, t=data.draw(written(tokens, lang)))
    call = capacity_call(question)
    direct = call_tool("kv_concurrency", {"num_blocks": blocks, "avg_tokens_per_request": tokens, "block_size": size})
    assert call is not None, question
    assert call.result == direct.result, question


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), BLOCKS, st.integers(1, 60).map(lambda k: k * 1000), st.integers(1, 30).map(lambda k: k * 1000), st.sampled_from(["en", "zh"]))
def test_input_plus_output_phrasings_sum_the_two(data, blocks, given_in, given_out, lang):
    template = {"en": "{b} KV blocks; input {i} + output {o} tokens per request. How many requests at once?",
                "zh": "num_blocks_global {b}，每个请求输入 {i}、输出 {o}，能并发多少"}[lang]
    question = template.format(b=data.draw(written(blocks, lang)), i=data.draw(written(given_in, lang)), o=data.draw(written(given_out, lang)))
    direct = call_tool("kv_concurrency", {"num_blocks": blocks, "avg_tokens_per_request": given_in + given_out})
    call = capacity_call(question)
    assert call is not None and call.result == direct.result, question


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(1, 5000), TOKENS, SIZES, st.sampled_from(["en", "zh"]))
def test_inverse_phrasings_equal_blocks_needed(data, sessions, tokens, size, lang):
    template = {"en": "how many blocks do I need for {n} sessions of {t} tokens with block_size {s}?",
                "zh": "要撑 {n} 并发，每个请求 {t} token，block_size {s}，至少要多少 block"}[lang]
    question = template.format(n=sessions, t=data.draw(written(tokens, lang)), s=size)
    direct = call_tool("blocks_needed", {"sessions": sessions, "tokens_per_session": tokens, "block_size": size})
    call = capacity_call(question)
    assert call is not None and call.result == direct.result, question


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1000, 5_000_000), st.sampled_from([2048, 4096, 8192, 16384, 32768, 65536, 131072]), st.sampled_from(["en", "zh"]))
def test_vllm_what_if_phrasings_equal_kv_tokens_concurrency(kv_tokens, max_model_len, lang):
    template = {"en": "GPU KV cache size: {kv:,} tokens. If I set --max-model-len {m}, how many concurrent requests?",
                "zh": "GPU KV cache size: {kv:,} tokens，如果 max-model-len 改成 {m}，能并发几个"}[lang]
    question = template.format(kv=kv_tokens, m=max_model_len)
    direct = call_tool("kv_tokens_concurrency", {"kv_cache_tokens": kv_tokens, "tokens_per_request": max_model_len})
    call = capacity_call(question)
    assert call is not None and call.result == direct.result, question


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 128), st.integers(1, 64), st.sampled_from([64, 80, 96, 128, 256]), st.sampled_from(["bf16", "fp16", "fp8", "float32"]),
       st.sampled_from(["en", "zh"]))
def test_kv_bytes_phrasings_equal_kv_bytes_per_token(layers, kv_heads, head_dim, dtype, lang):
    template = {"en": "{L} layers, {H} KV heads, head_dim {D}, {dt}: how many bytes of KV cache per token?",
                "zh": "{L} 层，{H} 个 KV 头，head_dim {D}，{dt}，每个 token 的 KV 占多少字节"}[lang]
    question = template.format(L=layers, H=kv_heads, D=head_dim, dt=dtype)
    direct = call_tool("kv_bytes_per_token", {"num_layers": layers, "num_kv_heads": kv_heads, "head_dim": head_dim, "dtype": dtype})
    call = capacity_call(question)
    assert call is not None and call.result == direct.result, question


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), BLOCKS, st.sampled_from([0.5, 0.6, 0.7, 0.75, 0.8, 0.9]), st.integers(100, 8000), st.sampled_from(["en", "zh"]))
def test_decode_budget_phrasings_equal_fastdeploy_decode_budget(data, blocks, ratio, output, lang):
    template = {"en": "total_block_num {b}, kv_cache_ratio {r}, average output {o} tokens: what max_num_seqs?",
                "zh": "num_blocks_global {b}，kv_cache_ratio {r}，平均输出 {o} token，max_num_seqs 设多少"}[lang]
    question = template.format(b=data.draw(written(blocks, lang)), r=ratio, o=output)
    direct = call_tool("fastdeploy_decode_budget", {"total_blocks": blocks, "kv_cache_ratio": ratio, "avg_output_tokens": output})
    call = capacity_call(question)
    assert call is not None and call.result == direct.result, question


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.integers(8192, 2**24), st.integers(2**20, 2**30), st.sampled_from(["en", "zh"]))
def test_logprobs_phrasings_equal_logprobs_message_size(mtp, msgmax, msgmnb, lang):
    template = {"en": "logprobs on, {m}, kernel.msgmax {a}, kernel.msgmnb {b}: how many messages fit in one queue?",
                "zh": "开了 logprobs，{m}，kernel.msgmax={a}，kernel.msgmnb={b}，一个队列能放几条消息"}[lang]
    flag = {("en", True): "with MTP", ("en", False): "without MTP", ("zh", True): "开了 MTP", ("zh", False): "没开 MTP"}[(lang, mtp)]
    question = template.format(m=flag, a=msgmax, b=msgmnb)
    direct = call_tool("logprobs_message_size", {"mtp": mtp, "msgmax": msgmax, "msgmnb": msgmnb})
    call = capacity_call(question)
    assert call is not None and call.result == direct.result, question


def test_what_was_given_is_its_own_paragraph_after_the_missing_list():
    """Right under a bullet, markdown reads the next line as that bullet's continuation."""
    text = explain(capacity_answer("How many concurrent 32k-token requests can my vLLM server handle?"), "en")
    assert "\n- num_blocks" in text and "\n\nGiven: " in text


def test_where_to_read_the_weights_follows_the_engine():
    """FastDeploy prints no "Model loading took N GiB": its asker was sent to a vLLM log line
    for the weights' size. The unit note writes the unit as nvidia-smi does ("GiB", not "giB")."""
    fd = explain(capacity_answer("FastDeploy kv_cache_ratio 调到多少合适？显存 80G"), "zh")
    assert "du -sh" in fd and "Model loading took" not in fd and "g 即 GiB" in fd
    vllm = explain(capacity_answer("vLLM on one 80G card, max-model-len 32768: how many concurrent requests fit?"), "en")
    assert "Model loading took N GiB" in vllm and "du -sh" not in vllm
    # Moving from FastDeploy to vLLM, the asker will read vLLM's logs.
    moving = explain(capacity_answer("从 FastDeploy 换到 vLLM，单卡 80G，max-model-len 32768，能并发多少？"), "zh")
    assert "Model loading took" in moving and "du -sh" not in moving
    # The block count too: a vLLM asker is sent to vLLM's own log line first, not FastDeploy's files.
    blocks = explain(capacity_answer("How many concurrent 32k-token requests can my vLLM server handle?"), "en")
    assert "`GPU KV cache size: N tokens`" in blocks and "`# GPU blocks: N`" in blocks and "worker_process.log" not in blocks
    fd_blocks = explain(capacity_answer("FastDeploy 能并发多少个 32k 的请求？"), "zh")
    assert "worker_process.log" in fd_blocks and "GPU KV cache size" not in fd_blocks  # and not vLLM's line
    neither = explain(capacity_answer("How many concurrent 32k-token requests can my inference server handle?"), "en")
    assert "worker_process.log" in neither and "GPU KV cache size" in neither  # no engine named: both


def test_pasted_logs_do_not_make_a_question_a_calculation():
    """torch's "has a total capacity of 23.65 GiB" under a pasted command is an OOM question,
    not a capacity one; a log line's date and time are never numbers to ask the user about."""
    from assistant.calculations import capacity_answer

    oom = ("vllm serve Qwen/Qwen2.5-14B --max-model-len 8192 --gpu-memory-utilization 0.9\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB "
           "of which 1.21 GiB is free.\n怎么办")
    assert capacity_answer(oom) is None
    asked = ("INFO 05-12 09:59:01 metrics.py:341] Running: 2 reqs, Pending: 20 reqs, GPU KV cache usage: 99.8%\n"
             "why are requests stuck? how many can run at once?")
    # The log's "Running: 2 reqs, Pending: 20 reqs" are the server's counts, not sessions the
    # asker plans for: with nothing of the asker's to compute with, no calculation is shown.
    assert capacity_answer(asked) is None
    answer = capacity_answer("INFO 05-12 09:59:01 metrics.py:341] Running: 2 reqs, Pending: 20 reqs\n"
                             "how many requests of 20000 tokens can run at once?")
    assert answer is not None and answer.missing
    assert not any("05-12" in note["en"] or "59" in note["en"] or "341" in note["en"] for note in answer.notes), answer.notes


VLLM_START = """INFO 12-04 10:01:02 [api_server.py:1043] vLLM API server version 0.9.1
INFO 12-04 10:01:02 [cli_args.py:325] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', 'max_model_len': 32768, 'gpu_memory_utilization': 0.9}
INFO 12-04 10:01:45 [gpu_model_runner.py:1595] Model loading took 14.2487 GiB and 8.231 seconds
INFO 12-04 10:01:58 [gpu_worker.py:227] Available KV cache memory: 53.31 GiB
INFO 12-04 10:01:58 [kv_cache_utils.py:715] GPU KV cache size: 998,336 tokens
INFO 12-04 10:01:58 [kv_cache_utils.py:719] Maximum concurrency for 32,768 tokens per request: 30.47x
INFO 12-04 10:02:30 [gpu_model_runner.py:1995] Graph capturing finished in 25 secs, took 0.53 GiB
"""


def test_a_pasted_start_up_log_is_read_as_a_log():
    """`tail -n 50 server.log | ask -` with vLLM's start-up lines drew a "more numbers needed"
    block that asked what 1043, 325 and 823 (the lines' source positions) were. Alone, the log
    asks for no figure; with a question, its `GPU KV cache size` answers it and the asker's
    own max-model-len wins over the one the log's arguments show."""
    from assistant.calculations import capacity_answer

    assert capacity_answer(VLLM_START) is None
    what_if = capacity_answer(VLLM_START + "if I set max-model-len to 65536 how many requests fit?")
    assert what_if.tool == "kv_tokens_concurrency" and not what_if.missing and not what_if.problems
    assert what_if.calls[0].value.exact == 15.23
    asked = capacity_answer(VLLM_START + "how many concurrent requests of 20000 tokens can it serve?")
    assert asked.calls[0].value.concurrent_requests == 49 and not asked.notes


@pytest.mark.parametrize("question", [
    "prompt_logprobs for the same prompt come out different with batch_size > 1 than with batch_size=1. Bug?",
    "vLLM: requests hang once logprobs=20 is on, what is wrong?",
    "xinference 部署 qwen2.5-vl，5 并发、每个请求 20 张图片，第二轮请求就堵住了，服务不可用",
    "load testing with 200 concurrent users, but the server never runs more than 100 requests at a time. how do I raise it?",
])
def test_no_calculation_for_questions_that_only_mention_its_words(question):
    """A logprobs question about batch size, a vLLM logprobs hang (FastDeploy's IPC message is
    not its cause) and a load stated while asking for a fix got a message size or a list of
    numbers a concurrency calculation would need, above the answer."""
    assert capacity_answer(question) is None


@pytest.mark.parametrize("question", ["requests hang after I enabled logprobs", "FastDeploy 打开 logprobs 以后推理请求卡住，也没有报错"])
def test_a_logprobs_hang_gets_the_message_size_with_its_defaults(question):
    answer = capacity_answer(question)
    assert answer is not None and answer.tool == "logprobs_message_size" and answer.computed
    assert "msgmax" in explain(answer, "en")


def test_a_cause_question_and_a_version_are_no_capacity_figures():
    """"是 KV block 不够吗？" asks whether that is the cause, not for a figure, and "0.8.2" is
    vLLM's version, not a value 0.8 to ask about."""
    from assistant.quantities import extract

    question = "vllm 0.8.2 V1 引擎，高并发下请求一直生成直到打满上下文，最后报 AssertionError。是 KV block 不够吗？"
    assert capacity_answer(question) is None
    assert not any(q.text.startswith("0.8") for q in extract(question).quantities)
    assert capacity_answer("80G 显存跑 70B，权重 140G，KV cache 够不够？") is not None  # "够不够" still asks


@pytest.mark.parametrize("question", [
    # what the asker did, in "what if" words ("改成", "换成"), is no what-if question
    "4 张 T4 跑 GLM-4-9B，改成 dtype=float16 后又报 torch.cuda.OutOfMemoryError: CUDA out of memory，显存 16G",
    "原模型 transformers 单卡 A100 就能跑，显存 80G 以内；换成 vllm 之后要两张 A100，显存占到 160G。有参数能降下来吗？",
    # "estimated", "recompute", "should fit" and a log's reason="capacity" are no asks
    "ValueError: 2.43 GiB KV cache is needed, which is larger than the available KV cache memory (2.4 GiB). "
    "Based on the available memory, the estimated maximum model length is 128000. Single 3090 24GB, what do I change?",
    "WARNING Sequence group 127 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache "
    "space. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. 显存 80G，怎么办",
    "The model doesn't fit on one node. I have 2 nodes with 8 GPUs each: what tensor and pipeline parallel sizes should I use?",
    # "计算" is also computation: "把更多计算放到 GPU 上"
    "4卡跑 ds-r1，每张 H20 只用了 4GB 左右显存，单卡有 90GB。怎么改 yaml 把更多计算放到 GPU 上？",
    # "好几块网卡" is several NICs, and "几个敏感的层" a few layers, not "how many"
    "两台机器用 ray 起 vllm，NCCL_SOCKET_IFNAME=eth0 已经设了，还是报 Gloo connectFullMesh failed，机器上有好几块网卡，还要设啥？",
    "Qwen2.5-14B 想量化成 GPTQ：32 layers, 8 KV heads，大部分层 4bit、几个敏感的层用 8bit，有支持按层配置的工具吗？",
    # another engine's asker would be sent to vLLM's and FastDeploy's logs for the missing numbers
    "用 LM Studio 跑 OpenAI 兼容接口，同时来 3 个请求是排队一个个处理，还是内存够就能并发？",
    "One A100 80G, two TensorRT-LLM models behind Triton, ~40G each: how much KV cache can the first one take?",
    # a share of the GPU is not a count of GPUs, and "80-90%" is a range of shares, not 80 tokens
    "一张卡上部署了好几个模型，每个单独跑都要吃掉 80-90% 的 GPU 算力，并发请求多个模型时延迟很差，能排队吗？",
    # "how much" as what a setting caps is no figure asked for: the asker wants the flag
    "int4 model only takes ~4G VRAM but with a ~2000 char prompt GPU memory grows past 16G. Is there a flag to cap how much memory the KV cache may use?",
    "A100 80G 上 KV cache 越用越多，怎么限制 KV cache 最多用多少显存？",
])
def test_no_missing_numbers_list_where_no_figure_is_asked_or_the_logs_are_not_ours(question):
    """Read as a user, 16 real answers opened with "more numbers needed, nothing computed"
    above the fix, and one with "tokens per request = 80" read from "80-90% 的 GPU 算力"."""
    assert capacity_answer(question) is None


def test_figures_asked_for_still_get_the_calculation():
    assert capacity_answer("如果把 --max-model-len 改成 65536，还能并发几个？GPU KV cache size: 458,752 tokens").computed
    assert capacity_answer("24 GiB card, 13B model: will the KV cache fit 32k tokens?").missing
    assert capacity_answer("8 x H100, 2k tokens per request, how many requests at once?").missing
    assert capacity_answer("GPU KV cache size: 458,752 tokens，max-model-len 65536，还能并发几个").computed
    assert capacity_answer("80 GiB GPU, weights 15 GiB: estimate how many tokens the KV cache holds").missing


def test_conversations_are_sessions_too():
    """"200 concurrent conversations of 4k tokens" asked for the number of sessions it named."""
    direct = call_tool("blocks_needed", {"sessions": 200, "tokens_per_session": 4000, "block_size": 16})
    for question in ("vllm with block_size 16, we need 200 concurrent conversations of 4k tokens each, how many KV blocks is that?",
                     "vllm block_size 16，要同时跑 200 个对话，每个 4k token，需要多少 block？"):
        call = capacity_call(question)
        assert call is not None and call.result == direct.result, question


def test_vllms_own_concurrency_line_is_read_for_its_request_length():
    """"Maximum concurrency for 32,768 tokens per request: 0.82x": the length is in the line;
    asking for max_model_len back was asking for what the asker had pasted."""
    call = capacity_call("Maximum concurrency for 32,768 tokens per request: 0.82x — is that bad? server did start")
    assert call is not None and call.name == "kv_tokens_concurrency"
    assert call.arguments == {"kv_cache_tokens": 26870, "tokens_per_request": 32768}
    assert call.value.concurrent_requests == 0 and call.value.limited_by == "too_long"


def test_a_logged_kv_cache_ratio_is_used_instead_of_the_default():
    """FastDeploy logs its kv_cache_ratio; the decode budget derived one from the prefill
    blocks (or took the documented 0.75) instead of the value the server printed."""
    from assistant.tools.logs import diagnose_text

    log = ("[INFO] - Reset block num, the total_block_num:17131, prefill_kvcache_block_num:12848\n"
           "[INFO] - max_num_seqs: 128, kv_cache_ratio: 0.9, block_size: 64, enc_dec_block_num: 2\n")
    numbers = diagnose_text(log).numbers
    assert numbers["kv_cache_ratio"] == 0.9
    answer = capacity_answer("服务跑了半小时后大量请求超时，每个请求大概输入3k输出5k，能撑多少并发？", numbers)
    assert answer is not None and answer.calls and answer.calls[0].name == "fastdeploy_decode_budget"
    assert answer.calls[0].arguments["kv_cache_ratio"] == 0.9 and not answer.defaults


@pytest.mark.parametrize("question,expect", [
    ("still CUDA OOM during serving. already lowered --gpu-memory-utilization to 0.8, no effect. Qwen2.5-14B on one A10 24GB",
     ("about 27 GiB", "one 22.5 GiB GPU", "at least 2")),  # an A10 "24GB" reports 23,028 MiB; 14.7B parameters
    ("Llama-3-70B on 4x 4090 24GB, OOM at start-up", ("about 132 GiB", "4 × 24 GiB = 96 GiB", "at least 8")),  # a power of two
    ("vllm serve Qwen2.5-72B --tensor-parallel-size 4 on A10 24GB, OOM", ("about 135 GiB", "4 × 22.5 GiB = 90 GiB", "at least 8")),
    ("vllm serve Qwen2.5-72B -tp 4 on A10 24GB, OOM", ("about 135 GiB", "4 × 22.5 GiB", "at least 8")),
    ("Qwen2.5-32B --kv-cache-dtype fp8 on a 4090 24GB OOM", ("about 61 GiB", "bf16", "at least 4")),  # the KV cache's dtype
    ("Qwen2.5-72B 用十二张 V100 32GB 启动 CUDA out of memory", None),  # 十二 is 12: 384 GiB hold 134
    ("DeepSeek-V3 671B on 8x H100 80GB", None),  # published in FP8: a size alone does not say its bytes
    ("vllm 启动 OOM，Qwen2.5-72B，一张 A100 80G", ("about 135 GiB", "one 80 GiB GPU", "at least 2")),
    ("vllm 启动 OOM，Qwen2.5-72B，两张 A100 80G", None),  # 135 GiB over 160: fits, whatever else fails
    ("Qwen2.5-7B on a 4090 24GB OOM", None),
    ("Qwen2.5-32B-Instruct-AWQ on a 4090 24G OOM", None),  # 4-bit: about 15 GiB
    ("Qwen2.5-14B on a machine with 16GB RAM, loading is slow", None),  # memory that is not the GPU's
    ("32B model, --cpu-offload-gb 16 on a 4090 24GB", None),  # offloaded: a flag does change it
    ("Qwen2.5-72B with --pipeline-parallel-size 2 --tensor-parallel-size 1 on A100 80GB", None),
    # Held off the GPU layer by layer, or said to run: the asker contradicts "no setting fits it" (trial)
    ("单卡 4090 跑 Qwen3-235B-A22B-INT4MIX，--device cuda --moe_device numa 能跑，但显存还剩很多。想把一小部分 moe 层放到显卡上", None),
    ("Qwen2.5-72B Q4_K_M on a 4090 24GB with -ngl 40 is slow, how to speed it up?", None),
    ("Qwen3-235B Q4_K_M on an RTX 3090 24GB gave ~10 tok/s, BF16 gave 4 tok/s. Why is it slower?", None),
    ("3070Ti 8G 显存跑 6B chat，能跑但是巨慢，十几分钟才出结果", None),
    ("Qwen2.5-32B on a 4090 24GB with device_map=\"auto\" OOMs during calibration", None),
    # ... but a speed wanted, a 不能跑, a question, something else that works, an uninstall: the note stands (review)
    *[(f"Qwen2.5-72B bf16 on one 4090 24GB, {tail}", ("about 135 GiB", "GPU holds", "at least 8"))
      for tail in ("I need 50 tok/s", "希望达到 30 tok/s", "要求每秒 30 tokens", "不能跑", "现在能跑起来了吗", "runs fine?",
                   "works fine on the A100 box", "the nginx gateway works fine", "卸载重装 vllm 也不行", "vllm 加载 OOM，ollama 能跑，")],
    # Fine-tuning holds gradients and optimizer states beside the weights: no server's floor (trial)
    ("单机 4 张 A10（每张 24GB），想全量微调 internlm2.5-7b-chat，能不能把一个模型切开分到几张卡上放？", None),
    ("Can I do full-parameter SFT of Yi-34B on 8x A100-40G? How much GPU memory does fine-tuning 34B FP16 need?", None),
    ("QLoRA on Llama-2-70B on A100 40GB cards, CUDA out of memory a few steps in", None),
    # ... but loading a pretrained checkpoint is no training
    ("Qwen2.5-72B on one 4090 24GB: AutoModelForCausalLM.from_pretrained(path) OOM, 加载预训练模型就爆", ("about 135 GiB", "GPU holds", "at least 8")),
    # A count with each card's memory between it and the card; DJL's tensor_parallel_degree is the TP size (trial)
    ("ml.g5.12xlarge 4 张 24G 卡部署 Llama-2-13b-chat，tensor_parallel_degree=2，吞吐上不去", None),
    ("Llama-2-70b 在 4 张 24G 卡上启动 OOM", ("about 129 GiB", "4 × 24 GiB", "at least 8")),
    # A count before a card named with its line or maker is the GPU count: four cards hold 34 GiB (trial)
    ("4x RTX 4090 serving Qwen2.5-72B-Instruct-AWQ on vLLM 0.6.3. Under load only a few requests run", None),
    ("2x NVIDIA A100 80GB, Qwen2.5-72B, OOM at start-up", None),
    # ... but not when the model runs under another engine: a 4-bit build there, bf16 here (review)
    ("Single 16GB GPU. vllm serve Qwen2.5-14B dies at startup with CUDA out of memory. The same model runs fine under "
     "ollama on this box.", ("about 27 GiB", "GPU holds", "at least 2")),
])
def test_weights_that_no_setting_fits_are_said_above_the_answer(question, expect):
    """"Qwen2.5-14B on one A10 24GB, lowered --gpu-memory-utilization, no effect" got the OOM
    article's flags to lower: bf16 weights of 26 GiB never fit 24 GiB, whatever the flags."""
    from assistant.calculations import weights_note

    note = weights_note(question)
    if expect is None:
        assert note is None
    else:
        assert note is not None and all(e in note["en"] for e in expect), note
        assert "GiB" in note["zh"] and str(expect[2].split()[-1]) in note["zh"]


@pytest.mark.parametrize("question, weights", [
    ("Can Llama-3.1-70B run on 2x A100 80GB with 32k context?", "132 GiB"),
    ("Llama-3.1-8B-Instruct on one L4, max-model-len 131072, will it start?", "15 GiB"),
    ("Could we serve Qwen2.5-72B on 2x H100 with 32k context?", "135 GiB"),
])
def test_a_yes_no_sizing_question_gets_the_arithmetic(question, weights):
    """"Can Llama-3.1-70B run on 2x A100 80GB with 32k context?" got the OOM table and no
    figure, where "will it fit" computed (newcomer trial)."""
    from assistant.calculations import asks_sizing, weights_note

    assert asks_sizing(question)
    note = weights_note(question)
    assert note is not None and weights in note["en"], note
    for other in ("can vllm run on windows?", "Qwen2.5-72B with --enforce-eager, will it run slower?",
                  "Can Qwen2.5-7B run in docker without --ipc=host?", "Can Qwen2.5-7B run on vLLM 0.6.3?",
                  "I switched Llama-3.1-8B to --kv-cache-dtype fp8, will it run with the same quality?"):
        assert not asks_sizing(other), other  # no GPU named after "on", or not a yes/no on fitting (review)


@pytest.mark.parametrize("question", [
    "vllm 0.6.1、0.6.3 都试了，加载 glm-4-9b-chat-hf 都报 Model architectures ['GlmForCausalLM'] are not supported for now. "
    "这个 hf 版本的 GLM4 到底哪个 vllm 能跑？",
    "vLLM 部署 Qwen3.5-27B，tensor_parallel_size 4，启动报 RuntimeError: NCCL error: unhandled system error。怎么查，让 4 卡能起来？",
    "llamafactory-cli api 用 vllm 后端跑 qwen-1.5-72B，两张卡，一启动就报错起不来。这个 yaml 应该怎么改才能起来？",
])
def test_can_it_run_without_a_gpu_named_is_no_sizing_question(question):
    """"哪个 vllm 能跑？" asks which release supports a model, "让 4 卡能起来？" how to start on the
    cards the asker has: both were told how many 80, 48 and 24 GB cards the weights take (trial).
    A count is said when asked for in so many words, or when the question names its GPUs."""
    from assistant.calculations import weights_note

    assert weights_note(question) is None
    assert weights_note("Qwen2.5-72B 需要几张卡？") is not None
    assert weights_note("单卡 L40S 48G 跑 Qwen2.5-72B 能起来吗？") is not None


def test_a_count_before_a_card_named_with_its_maker_is_a_gpu_count():
    from assistant.quantities import extract

    for text, count in (("4x RTX 4090", 4), ("2x NVIDIA A100 80GB", 2), ("8 x GeForce RTX 3090", 8), ("4x 4090", 4)):
        assert [q.value for q in extract(text).by_label("gpu_count")] == [count], text
    assert extract("17131 个 block").by_label("num_blocks") and not extract("3 nvidia-smi runs").by_label("gpu_count")


def test_a_sizing_question_on_a_model_the_table_lacks_gets_the_weights_floor():
    """"ERNIE-4.5-21B-A3B-Paddle bf16 跑 32k 上下文需要几张卡？A800 80G" got an OOM article and no
    figure (trial): the model is not in the built-in table, but its weights' floor is sure."""
    from assistant.calculations import weights_verdict

    note, over = weights_verdict("ERNIE-4.5-21B-A3B-Paddle bf16 跑 32k 上下文需要几张卡？A800 80G")
    assert note is not None and not over
    assert "光权重约 39 GiB（21B 参数 × 2 字节" in note["zh"] and "至少要 1 张 80 GiB 的卡" in note["zh"] and "KV Cache 还要另外的显存" in note["zh"]
    # 75 GiB of weights on an 80 GiB card: 0.9 of it is 72, so two (a power of two)
    assert "at least 2 GPU(s) of 80 GiB" in weights_verdict("a 40B model in bf16: how many A100 80GB GPUs for 8k context?")[0]["en"]
    assert weights_verdict("ERNIE-4.5-21B-A3B bf16 on an A800 80G keeps OOMing at start-up")[0] is None  # no sizing asked


def test_a_plan_on_gpus_that_cannot_hold_the_weights_keeps_only_what_adds_room():
    """"Can Llama-3.1-70B run on one A100 80GB with 32k context?" gets the plan's arithmetic,
    and the verdict that the GPU named cannot hold the weights, which decides the fix list (review)."""
    from assistant.calculations import weights_verdict

    note, over = weights_verdict("Can Llama-3.1-70B run on one A100 80GB with 32k context?")
    assert note is not None and "132 GiB" in note["en"] and over
    note, over = weights_verdict("Can Llama-3.1-8B run on one A100 80GB with 32k context?")
    assert note is not None and not over


@pytest.mark.parametrize("question, expect", [
    ("gemma-2-27b 32k 上下文需要几张卡", ["50 GiB", "1 × 80 GB", "2 × 48 GB", "4 × 24 GB"]),  # a model the shape table lacks
    ("部署 Qwen3-32B 需要多少显存", ["61 GiB", "1 × 80 GB", "2 × 48 GB", "4 × 24 GB"]),  # 32.8B; no context stated
    # An A10 reports 22.5 GiB: 23 GiB of weights do not fit one "24 GB" card.
    ("Qwen2.5-7B-AWQ how much VRAM", ["4 GiB", "7.61B parameters × 0.5 bytes", "the real size is larger", "1 × 24 GB"]),
    ("deepseek 671B 要几张 H100", None),  # FP8 as published: its bytes per parameter are not bf16's
    ("Qwen2.5-72B 能支持多少个并发请求", None),  # a concurrency question, not a sizing one
    ("vllm 起 Qwen2.5-72B 报 OOM，我有 8 张卡", None),  # asks for no count
])
def test_a_sizing_question_without_a_gpu_gets_the_weights_floor_per_gpu_class(question, expect):
    """"Qwen2.5-72B 32k 上下文需要几张卡" got the OOM article and nothing about its numbers.
    The weights' size is certain, so it is said, with the least count per common GPU class;
    the KV cache needs the model's shape, so the note says what it takes instead of a figure."""
    from assistant.calculations import weights_note

    note = weights_note(question)
    if expect is None:
        assert note is None
        return
    assert note is not None and all(e in note["en"] for e in expect), note
    assert "config.json" in note["en"] and "config.json" in note["zh"] and expect[0] in note["zh"]


@pytest.mark.parametrize("question, expect", [
    # 135 GiB of weights + 32,000 × 320 KiB of KV = 145.2 GiB, at 0.9 of each GPU: 71.1 GiB of an
    # 80 GB class card, so 4 (two hold 142 GiB and vLLM would not start); 4 × 39.6, 8 × 19.8 GiB.
    ("Qwen2.5-72B 32k 上下文需要几张卡", ["135 GiB", "9.8 GiB", "145.2 GiB", "4 × 80 GB", "4 × 48 GB", "8 × 24 GB"]),
    # 132 + 128,000 × 320 KiB (39.1 GiB) = 170.6 GiB: the weights alone fit 2 × 80 GB, with the context 4.
    ("how many GPUs do I need to serve Llama-3.1-70B with 128k context?", ["132 GiB", "39.1 GiB", "4 × 80 GB", "16 × 24 GB"]),
    ("how much GPU memory do I need to serve Llama-3.1-8B in bf16 with 128k context?", ["15 GiB", "15.6 GiB", "1 × 48 GB", "2 × 24 GB"]),
    # 16 users at 131,072: 640 GiB of KV on top of the weights; an H100 reports 79.6 GiB
    ("how many H100 for Llama-3.1-70B with max-model-len 131072 and 16 concurrent users", ["640 GiB", "771.5 GiB", "16 × H100"]),
    # the KV cache is bf16 whatever the weights: 34 + 9.8 GiB over 0.9 × 24 GiB is just over 2 cards, so 4
    ("Qwen2.5-72B-AWQ 32k 上下文需要几张 4090", ["34 GiB", "9.8 GiB", "4 × 4090"]),
    ("Qwen2.5-72B 32k 上下文需要几张 A100 80G，gpu-memory-utilization 0.95", ["145.2 GiB", "0.95", "2 × 80 GiB"]),  # 2 × 76 GiB
])
def test_a_sizing_question_for_a_known_model_counts_the_contexts_kv_cache(question, expect):
    """With the model's published shape (assistant/model_shapes.py) the KV cache of the stated
    context is computed, not only described: "Llama-3.1-70B with 128k context" was told 2 × 80
    GB for its weights while one such request needs 39 GiB more."""
    from assistant.calculations import weights_note

    note = weights_note(question)
    assert note is not None and all(e in note["en"] for e in expect), note
    assert expect[1] in note["zh"] and "下限" in note["zh"]


def test_the_least_count_per_class_uses_the_memory_the_smallest_card_of_the_class_reports():
    """12B in bf16 is 22.4 GiB: under 24, but more than the 22 GiB an A10 "24GB" has to give."""
    from assistant.calculations import weights_note

    note = weights_note("a 12B model, how many GPUs?")
    assert note is not None and "2 × 24 GB" in note["en"] and "1 × 48 GB" in note["en"], note


@pytest.mark.parametrize("question", [
    "GPU KV cache size: 500,000 tokens. We want 64 concurrent requests. What's the largest max-model-len we can set?",
    "GPU KV cache size: 500,000 tokens，想同时跑 64 个请求，max-model-len 最大能设多少？",
])
def test_the_largest_max_model_len_for_a_concurrency_is_the_division_the_other_way(question):
    """It asked for max_model_len: the very value the question wanted."""
    call = capacity_call(question)
    assert call is not None and call.arguments == {"kv_cache_tokens": 500000, "tokens_per_request": 7808}
    assert call.value.concurrent_requests == 64


def test_a_gpu_count_used_as_the_tensor_parallel_size_is_not_called_unused():
    """"4x A100 … --tensor-parallel-size 4" said "4x is not part of this calculation" while
    the 4 was used, as the tensor-parallel size."""
    question = ("Llama-3.1-70B bf16 on 4x A100 80GB with --tensor-parallel-size 4, weights 131 GiB, kv bytes per token 327680. "
                "how many tokens of KV cache per GPU?")
    notes = " ".join(n["en"] for n in capacity_answer(question).notes)
    assert "4x is read as a count of GPUs" not in notes
    notes = " ".join(n["en"] for n in capacity_answer("8x A100, num_blocks_global 9000, 4k tokens per request, how many concurrent?").notes)
    assert "8x is read as a count of GPUs" in notes


def test_review_cases_of_the_inverse_and_of_flags_in_sentences():
    # No division by zero sessions; "at most how many concurrent" is no question about max_model_len.
    zero = capacity_answer("KV cache of 500,000 tokens, 0 concurrent requests: the largest max-model-len?")
    assert zero is not None and not zero.calls and not zero.error
    other = capacity_answer("GPU KV cache size: 500,000 tokens，现在 64 个并发，最多能开到多少并发？")
    assert other is None or all(c.arguments.get("tokens_per_request") != 7808 for c in other.calls)
    from assistant.cleaning import split_question

    flags = split_question("vllm OOM, I raised --max-num-seqs from 256 to 512 and set --max-model-len at 4096").flags
    assert flags == {"--max-num-seqs": "512", "--max-model-len": "4096"}
    from assistant.names import asked_codes

    assert asked_codes("error: 128 tokens max, code 2024 release") == {}


@pytest.mark.parametrize("question, gib", [
    ("Llama-3.1-8B on one A10 24GB, weights 15 GiB, kv bytes per token 131072, how many tokens of KV cache?", 22.488),
    ("L40S 48GB, weights 15 GiB, kv bytes per token 131072, how many tokens of KV cache?", 44.988),
    ("A100 80GB, weights 15 GiB, kv bytes per token 131072, how many tokens of KV cache?", 80.0),  # 81,920 MiB: binary already
    ("A10 22GB, weights 15 GiB, kv bytes per token 131072, how many tokens of KV cache?", 22.0),  # the asker's own figure
    ("A10 or L4 24GB, weights 15 GiB, kv bytes per token 131072, how many tokens of KV cache?", 24.0),  # several cards: as written
    ("A40 48GB, weights 15 GiB, kv bytes per token 131072, how many tokens of KV cache?", 44.988),  # 46,068 MiB
    # "RTX A6000 48GB" asked for the GPU memory, and "48gb" was a number nobody could place (trial)
    ("RTX A6000 48GB, weights 15 GiB, kv bytes per token 131072, how many tokens of KV cache?", 48.0),
])
def test_a_card_sold_by_a_round_figure_is_computed_with_the_memory_it_reports(question, gib):
    """"A10 24GB" was read as 24 GiB; the card reports 23,028 MiB, and the KV cache is what is
    left after the weights, so the tokens came out a fifth too many."""
    call = capacity_call(question)
    assert call is not None and call.arguments["gpu_memory_gib"] == gib, call.arguments
    notes = " ".join(n["en"] for n in capacity_answer(question).notes)
    assert ("nvidia-smi reports" in notes) == (gib not in (80.0, 22.0, 24.0, 48.0)), notes


def test_an_a6000_named_alone_says_its_memory():
    """"Qwen2.5-7B on one A6000, max-model-len 8192" asked for the GPU memory: the card comes
    in one size, 49,140 MiB as nvidia-smi reports it."""
    call = capacity_call("Qwen2.5-7B-Instruct on one A6000, max-model-len 8192, how many concurrent?")
    assert call is not None and abs(call.arguments["gpu_memory_gib"] - 47.988) < 0.001, call.arguments


def test_a_sizing_question_naming_the_gpu_says_the_weights_count_is_only_the_floor():
    """"Llama-3.1-70B 要跑 128k 上下文，需要几张 A100 80G？" was told "at least 2": the weights'
    floor, while one 128k request's KV cache needs about 40 GiB more."""
    from assistant.calculations import weights_note

    note = weights_note("Llama-3.1-70B-Instruct 要跑 128k 上下文，需要几张 A100 80G？")  # 132 + 39.1 GiB over 80 GiB cards
    assert note is not None and "80 GiB 的卡 4 张" in note["zh"] and "39.1 GiB" in note["zh"] and "KV cache" in note["en"]
    unknown = weights_note("Baichuan2-13B 要跑 128k 上下文，需要几张 4090？")  # no shape known: the weights' floor, said as such
    assert unknown is not None and "至少要 2 张" in unknown["zh"] and "config.json" in unknown["zh"]
    plain = weights_note("vLLM OOM: Qwen2.5-14B on one A10 24GB")  # no count asked: no sizing caveat
    assert plain is not None and "KV cache" not in plain["en"]


def test_the_weights_note_stays_when_the_calculation_stops_for_a_missing_value(bundled_settings, bundled_kb):
    """"Qwen2.5-14B on one A10 24GB, will it fit with max-model-len 8192?" started a KV
    calculation that stopped for the weights' GiB, and the note that they cannot fit was gone."""
    from assistant.answer import answer_question

    answer = answer_question("Qwen2.5-14B on one A10 24GB, will it fit with max-model-len 8192?", bundled_settings,
                             kb=bundled_kb, use_llm=False)
    # With the shape table the calculation runs and says the bf16 weights (27.38 GiB) cannot fit.
    assert answer.answer.startswith("**Calculation**") and "The weights do not fit: 27.38 GiB of weights per GPU" in answer.answer


def test_a_token_count_in_k_is_said_to_be_read_as_thousands():
    """"4k prompt + 1k output" was read as 5,000 tokens with no word said, only max_model_len
    got the note; 5,120 would have made 87 requests, not 89."""
    notes = [n["en"] for n in capacity_answer(
        "num_blocks_global 27895, block_size 16, each request 4k prompt + 1k output, how many concurrent requests?").notes]
    assert "4k is read as 4,000; write 4,096 if you mean multiples of 1024" in notes
    assert "1k is read as 1,000; write 1,024 if you mean multiples of 1024" in notes


@pytest.mark.parametrize("question, expect", [
    ("Qwen2.5-14B on one A10 24GB, vLLM says model weights take 9.3 GiB, will it fit with max-model-len 8192?", None),
    ("vLLM 跑 Qwen2.5-72B，每秒能生成多少个 token 算正常？", None),
    ("Qwen2.5-7B 用 vLLM 部署，max-model-len 设多少个 token 合适？", None),
    ("vLLM 加载 Qwen2.5-72B 要几个小时，正常吗？", None),
    ("Qwen2.5-72B-Instruct-GPTQ-Int8 需要几张卡", "68 GiB"),  # int8 wins over GPTQ's usual 4 bits
    ("Qwen2.5-72B q8 gguf 需要多少显存", "68 GiB"),
    ("Qwen2.5-72B-GPTQ-Int4 需要几张卡", "34 GiB"),
    ("Qwen2.5-72B 需要几张？", "135 GiB"),
])
def test_the_weights_note_is_said_only_for_sizing_and_with_the_bits_named(question, expect):
    """Review: a weights figure the asker gave was contradicted by a bf16 guess; "多少个 token"
    and "几个小时" read as sizing questions; GPTQ-Int8 and Q8 GGUF were counted as 4-bit."""
    from assistant.calculations import weights_note

    note = weights_note(question)
    assert (note is None) if expect is None else (note is not None and expect in note["en"]), note


def test_a_listed_card_beside_an_unlisted_one_keeps_the_figure_as_written():
    call = capacity_call("Llama-3.1-8B on one A100 80GB (moved off our H100 box), weights 15 GiB, kv bytes per token 131072, "
                         "how many tokens of KV cache?")
    assert call is not None and call.arguments["gpu_memory_gib"] == 80.0


def test_review_misreadings_of_the_days_capacity_changes_stay_fixed():
    """Found in review of the day's change: each of these gave a wrong number."""
    from assistant.quantities import extract

    labels = lambda text: [(q.text, q.label) for q in extract(text).quantities]  # noqa: E731
    assert labels("3 out of 10 requests get truncated") == [("3", ""), ("10", "sessions")]
    assert labels("we had 2 out-of-memory crashes") == [("2", "")]
    for busy in ("CPU util 0.3", "CPU 利用率 0.3", "kv cache utilization 0.95 at peak", "gpu util at 0.92 in nvidia-smi"):
        assert "gpu_memory_utilization" not in [label for _text, label in labels(busy)], busy
    # A per-GPU figure is each GPU's, in all TP times it.
    need = capacity_answer("how much memory do 64 sessions of 32k need at 80 KiB per token per GPU with tensor_parallel_size 4?").call.result
    assert (need["total_gib"], need["per_gpu_gib"]) == (625.0, 156.25)
    # Words of another clause do not say whose the figure is: asked, not guessed.
    other = capacity_answer("A100 80GB, tensor_parallel_size 4, weights 131 GiB, KV 320 KiB per token (8 KV heads, so 2 per GPU), "
                            "max_model_len 8192: how many concurrent requests?")
    assert other.call is None and other.problems
    # Data parallel: one replica per GPU, nothing split.
    dp = capacity_answer("8x A100 80GB with --data-parallel-size 8; weights 16 GiB, KV 128 KiB per token per GPU, max_model_len 32768: "
                         "how many concurrent requests?").call.result
    assert dp["max_concurrency_at_max_model_len"] == 14.0
    # A what-if on the memory share is not answered with the blocks as they are.
    what_if = capacity_answer("A100 80GB, vllm num_gpu_blocks 2048 at gpu_memory_utilization 0.8, block_size 16, requests 4k tokens. "
                              "If I raise gpu_memory_utilization to 0.95, how many concurrent requests fit?")
    assert what_if.tool != "kv_concurrency"
    # A log from another run is that run's whole model.
    moved = capacity_answer("On a single H200 vLLM said Model loading took 67.76 GiB. Moving to 2x A100 80GB, kv 160 KiB per token "
                            "per GPU, max_model_len 32768, how many concurrent requests?").call
    assert moved.arguments["weights_gib"] == 67.76 and moved.result["max_concurrency_at_max_model_len"] == 7.62
    # "(before TP)" is about the KV figure, not another run: the log's weights are still per GPU.
    here = capacity_answer("Model loading took 33.88 GiB, --tensor-parallel-size 2, H100 80GB, KV 320 KiB per token (before TP), "
                           "max-model-len 16000 — how many concurrent requests fit?").call
    assert here.arguments["weights_gib"] == 67.76 and here.arguments["kv_bytes_per_token"] == 163840


def test_second_review_misreadings_stay_fixed():
    """The second review of the day's change: each gave a wrong number."""
    from assistant.calculations import weights_note
    from assistant.quantities import extract

    base = ("Model loading took 33.88 GiB, --tensor-parallel-size 2, H100 80GB, KV 160 KiB per token per GPU, max-model-len 16000, "
            "how many concurrent requests?")
    for prefix in ("", "We moved to vLLM 0.6.3. ", "moving average load is 20 requests. ", "planning to migrate traffic. "):
        assert capacity_answer(prefix + base).call.arguments["weights_gib"] == 67.76, prefix  # the log's run is this one
    for elsewhere in ("Earlier on an H200, Model loading took 67.76 GiB. Now --tensor-parallel-size 2 on A100 80GB, KV 160 KiB per "
                      "token per GPU, max-model-len 32768, how many concurrent requests?",
                      "之前在 H200 上 Model loading took 67.76 GiB，现在 TP 2 跑 A100 80GB，每张卡每 token KV 160 KiB，max-model-len 32768，能并发多少？"):
        assert capacity_answer(elsewhere).call.arguments["weights_gib"] == 67.76  # another run's whole model
    for q8 in ("Qwen2.5-72B GGUF Q8 跑在 4090 上需要几张卡？", "Qwen2.5-72B-Instruct-GGUF Q8 on 4090, how many cards?", "Qwen2.5-72B q8 gguf 需要多少显存"):
        assert "68 GiB" in weights_note(q8)["en"], q8
    assert weights_note("Qwen2.5-72B Q6_K GGUF on 4090 how many cards") is None  # neither 4 nor 8 bits
    for busy in ("nvidia-smi 显示利用率 0.3", "显卡利用率 0.3", "平均利用率 0.3", "内存利用率 0.6", "GPU 利用率 0.3",
                 "nvidia-smi shows gpu util 0.3", "gpu utilization: 0.3 (nvidia-smi)"):
        assert [q.label for q in extract(busy).quantities] == [""], busy
    assert [q.label for q in extract("，利用率 0.9，").quantities] == ["gpu_memory_utilization"]


@pytest.mark.parametrize("question", ["DeepSeek-R1 671B: how many H200 do we need? Our other services all run bf16.",
                                      "DeepSeek-R1 671B on H20, how many GPUs? we need it by Q4"])
def test_a_format_said_apart_from_the_model_is_not_its_format(question):
    from assistant.calculations import weights_note

    assert weights_note(question) is None  # DeepSeek's own FP8: no guess, as before


@pytest.mark.parametrize("name, shape", [
    ("Qwen2.5-7B-Instruct", ("Qwen2.5-7B", 57344)), ("qwen2.5:7b", ("Qwen2.5-7B", 57344)),
    ("Qwen/Qwen2.5-72B-Instruct-AWQ", ("Qwen2.5-72B", 327680)), ("QwQ-32B", ("Qwen2.5-32B", 262144)),
    ("DeepSeek-R1-Distill-Qwen-32B", ("Qwen2.5-32B", 262144)), ("deepseek-r1-distill-llama-70b", ("Llama-3.3-70B", 327680)),
    ("Qwen3-30B-A3B-Instruct-2507", ("Qwen3-30B-A3B", 98304)), ("Meta-Llama-3-70B-Instruct", ("Llama-3-70B", 327680)),
    ("llama3.1:8b", ("Llama-3.1-8B", 131072)), ("Llama-2-7b-chat-hf", ("Llama-2-7B", 524288)),
    # Not the model the table holds under a similar name, or two models at once: no shape.
    ("Qwen2-VL-7B", None), ("Qwen2.5-VL-7B-Instruct", None), ("Llama-3.2-11B-Vision", None), ("Qwen3-Coder-30B-A3B", None),
    ("Qwen3-Next-80B-A3B", None), ("qwen1.5-7b", None), ("Qwen2.5-7B vs Llama-3.1-8B", None), ("Llama-3.1-Nemotron-70B", None),
])
def test_the_shape_table_matches_exact_model_names_only(name, shape):
    """A wrong shape is a confident wrong number: a vision variant or a size the table does not
    hold must give none, and a name naming two models of different shape too."""
    from assistant.model_shapes import named_model
    from assistant.quantities import normalize

    model = named_model(normalize(name))
    assert (model is None) if shape is None else (model is not None and (model.name, model.kv_bytes_per_token()) == shape)


def test_a_table_figure_is_not_computed_for_a_question_that_asks_for_none():
    """"llama2-13b on lorax, one 4090 24G, MAX_INPUT_LENGTH=8191: memory or a wrong setting?"
    asks for no figure, and lorax is not vLLM: the table's shape must not start a vLLM budget."""
    assert capacity_answer("本地 llama2-13b 起 lorax，单卡 4090 24G，设了 MAX_INPUT_LENGTH=8191，这是显存不够还是参数设错了？") is None


@pytest.mark.parametrize("question, tool, key, expected, note", [
    # a chat follow-up folded under the thread's first question: its value replaces the one before
    ("GPU KV cache size: 458,752 tokens. With --max-model-len 8192 how many concurrent requests?\nand with 32768?",
     "kv_tokens_concurrency", "concurrent_requests", 14, "in place of 8192"),
    ("GPU KV cache size: 458,752 tokens. With --max-model-len 8192 how many concurrent requests?\n那如果 max-model-len 改成 16k 呢",
     "kv_tokens_concurrency", "concurrent_requests", 28, "in place of 8192"),
    # a chain of follow-ups: each replaces the value before it, the middle one's change kept
    ("GPU KV cache size: 200,000 tokens. each request 2000 tokens, how many concurrent?\nand with 4000 tokens per request?\nand with 8000?",
     "kv_tokens_concurrency", "concurrent_requests", 25, "8000, in place of 4000"),
    ("Qwen2.5-7B on a 4090, max-model-len 32768, how many concurrent requests?\nand with 0.95?\nand with 16384?",
     "kv_cache_capacity", "max_concurrency_at_max_model_len", 9.84, "in place of 32768"),
    # a new block_size under a logged block count: the same KV memory in fewer, bigger blocks (109 was twice the tokens)
    ("FastDeploy num_blocks_global 17131，平均每个请求 20k token，能并发多少\n那 block_size 改成 128 呢",
     "kv_concurrency", "concurrent_requests", 54, "default block_size 64"),
    ("we have 8192 blocks of 16 tokens, avg 2000 tokens per request, how many concurrent?\nand with block size 32?",
     "kv_concurrency", "concurrent_requests", 65, "at block_size 32 it holds 4,096 blocks"),
    # "FD" is FastDeploy: its block size 64, not vLLM's 16 (trial)
    ("FD 起服务，num_blocks 17131，平均每个请求 3k 输入 1k 输出，能并发多少", "kv_concurrency", "concurrent_requests", 271, None),
    ("GPU KV cache size: 1,310,720 tokens. how many 32k requests can run at once?", "kv_tokens_concurrency", "concurrent_requests", 40, None),
    ("we have 8192 blocks, block size 32, avg 2000 tokens per request, how many concurrent?", "kv_concurrency", "concurrent_requests", 130, None),
    ("GPU KV cache size: 1,310,720 tokens，最多同时跑几个 32k 的请求", "kv_tokens_concurrency", "concurrent_requests", 40, None),
    # 8192 × 16 tokens over 1,500 in + 500 out: 65 (the sum was read as one input of 2,000 and output asked for)
    ("we have 8192 blocks of 16 tokens, avg prompt 1.5k + 500 output, max-num-seqs 256, how many concurrent?",
     "kv_concurrency", "concurrent_requests", 65, None),
    # vLLM V0's start-up line; its block size is vLLM's 16, not FastDeploy's 64
    ("INFO gpu_executor.py:122] # GPU blocks: 27525, # CPU blocks: 2048\nmax-model-len 8192, how many concurrent requests can run?",
     "kv_concurrency", "concurrent_requests", 53, None),
])
def test_newcomer_capacity_phrasings_are_computed(question, tool, key, expected, note):
    """From a newcomer's trial: each gave the previous question's number, asked for a value
    it had been given, or read a figure as another."""
    answer = capacity_answer(question)
    assert answer is not None and answer.computed and answer.call.name == tool, explain(answer, "en")
    assert answer.call.result[key] == expected
    if note:
        assert any(note in n["en"] for n in answer.notes)


@pytest.mark.parametrize("question", ["block_size 128，平均每个请求 20k token，能并发多少",
                                      "平均每个请求 20k token，能并发多少\n那 block_size 改成 128 呢"])
def test_a_block_size_over_a_logged_block_count_recounts_the_blocks(question):
    """num_blocks_global 17131 and block_size 64 in the log, 128 in the question: 17131 blocks
    of 128 were twice the tokens (review); the same memory holds 8565 of them."""
    answer = capacity_answer(question, {"num_blocks_global": 17131, "block_size": 64})
    assert answer is not None and answer.computed and answer.call.result["concurrent_requests"] == 54
    assert any("counted at block_size 64" in n["en"] for n in answer.notes)


def test_the_decode_budget_recounts_a_logged_block_count_at_a_new_block_size():
    """FastDeploy's log: 17220 blocks of 64, kv_cache_ratio 0.75; "block_size 改成 128" computed
    17220 blocks of 128, 551 sequences for the 275 the same memory holds (trial)."""
    answer = capacity_answer("block_size 改成 128 的话，平均每请求 3k 输入 1k 输出，能并发多少",
                             {"total_block_num": 17220, "block_size": 64, "kv_cache_ratio": 0.75, "prefill_kvcache_block_num": 12915})
    assert answer is not None and answer.computed and answer.call.name == "fastdeploy_decode_budget"
    assert answer.call.arguments["total_blocks"] == 8610 and answer.call.result["max_num_seqs_supported"] == 275


def test_a_follow_up_number_that_could_change_two_values_is_asked_about():
    answer = capacity_answer("GPU KV cache size: 458,752 tokens. With --max-model-len 8192 and max-num-seqs 256 how many "
                             "concurrent requests?\nand with 32768?")
    assert answer is not None and not answer.computed and any("32768" in p["en"] for p in answer.problems)


def test_a_rate_or_a_bare_count_is_not_a_request_length():
    from assistant.quantities import extract

    assert [q.label for q in extract("10k requests per day, how many GPUs?").quantities] != ["tokens_per_request"]
    assert [(q.text, q.label) for q in extract("64 requests of 32k").quantities] == [("64", "sessions"), ("32k", "tokens_per_request")]
    # a context length written with its scale: "128k context", "1M context"
    assert [(q.text, q.label) for q in extract("Llama-3.1-8B with a 1M context, or 128k context?").quantities][-2:] == [
        ("1m", "max_model_len"), ("128k", "max_model_len")]


@pytest.mark.parametrize("question", ["单卡 L40S 跑 Qwen2.5-32B bf16 能起来吗", "Is there enough memory on an A10 for Qwen2.5-14B?"])
def test_a_will_it_fit_question_gets_the_weights_arithmetic(question, bundled_settings, bundled_kb):
    """"单卡 L40S 跑 Qwen2.5-32B bf16 能起来吗" was refused outright: no OOM words for the KB,
    and "will it start" was not read as asking whether it fits."""
    from assistant.answer import answer_question

    answer = answer_question(question, bundled_settings, kb=bundled_kb, use_llm=False)
    assert "GiB" in answer.answer.split("\n\n")[0] and ("放不下" in answer.answer or "more than one" in answer.answer)


@pytest.mark.parametrize("question, expected", [
    # A follow-up changing the GPU count moves the tensor-parallel size with it.
    ("Qwen2.5-72B-Instruct on 2x H100 80GB tp 2, max-model-len 32768, how many concurrent requests?\nand with 4 GPUs?", 15.13),
    ("DeepSeek-R1-Distill-Llama-70B on 4x H100 80GB tp 4, max-model-len 65536, how many concurrent?\n那 8 卡呢", 22.1),
    # An English follow-up after a Chinese question: its number is read by its own line ("并发" was taken for it).
    ("Qwen2.5-7B-Instruct 单卡 24G，max-model-len 32768，最多能并发多少\nand with 65536?", 2.12),
    ("Qwen3-32B 2x A100 80G tp2 max_model_len 32768 能并发几个？\n那 40960 呢", 8.29),  # 40960 is no TP
    # A card sold in one size gives its memory; an L20 "48G" reports 44.99 GiB.
    ("Qwen2.5-7B on one 4090, max-model-len 32768: how many at once?", 4.24),
    ("DeepSeek-R1-Distill-Qwen-14B on a single L40S, max-model-len 65536, how many concurrent requests?", 1.09),
    ("QwQ-32B on one H20, max-model-len 65536, how many requests at once?", 1.59),
    ("Qwen3-235B-A22B on 8x H20 tp 8, max-model-len 32768, how many concurrent?", 21.31),
    ("qwen2.5:7b 单卡 L20 48G max-model-len 32768 最多并发多少", 15.04),
    ("Qwen2.5-7B on one 4090, Model loading took 18.14 GiB, max-model-len 32768 how many concurrent?", 1.97),
])
def test_capacity_trial_questions_with_model_names_are_computed(question, expected):
    """From a trial of the shape table: each gave the previous figure, asked for a value it
    had, or used a card's sold size. Checked by hand: e.g. 2 H100s at TP 4 is 79.65 × 0.9 −
    135.41/4 = 37.83 GiB per GPU ÷ 81,920 B = 495,834 tokens ÷ 32,768 = 15.13."""
    answer = capacity_answer(question)
    assert answer is not None and answer.computed and answer.call.name == "kv_cache_capacity", explain(answer, "en")
    assert answer.call.result["max_concurrency_at_max_model_len"] == expected


def test_a_card_name_before_a_setting_does_not_count_it_as_gpus():
    from assistant.quantities import extract

    assert [(q.text, q.label) for q in extract("Qwen2.5-14B-Instruct on L40S\nmax-model-len 32768 最多并发几个请求？").quantities] == [
        ("14b", ""), ("32768", "max_model_len")]
    assert [(q.text, q.label) for q in extract("Llama-3.1-70B on 4 H100 需要多少显存 128k 上下文").quantities][-1] == ("128k", "max_model_len")


def test_a_tensor_parallel_size_the_model_cannot_split_over_is_said_not_computed():
    """Qwen2.5-7B has 28 attention heads: vLLM refuses TP 8, and 44.8 requests read as possible."""
    answer = capacity_answer("Qwen2.5-7B-Instruct 8x A10 24G tp 8 --max-model-len 32768 --gpu-memory-utilization 0.95 并发多少")
    assert answer is not None and not answer.computed and any("28 attention heads" in p["en"] for p in answer.problems)


def test_memory_needed_for_a_known_model_adds_its_weights():
    answer = capacity_answer("Qwen2.5-7B-Instruct 32k 上下文 10 个并发 需要多少显存")
    assert answer is not None and answer.computed and answer.call.name == "kv_memory_needed"
    assert any("14.2 GiB" in n["en"] and "31.3 GiB" in n["en"] for n in answer.notes)  # 17.09 GiB of KV + 14.18 of weights


@pytest.mark.parametrize("question, expected", [
    # A number in a last line that is more than a new value is no new setting (review): 4.24 at 32768.
    ("Qwen2.5-7B on a 4090, max-model-len 32768, how many concurrent requests?\nand why do I see Xid 79 in dmesg?", 4.24),
    ("Qwen2.5-7B on a 4090, max-model-len 32768, how many concurrent requests?\nthen it crashed with CUDA error 700, why?", 4.24),
    ("Qwen2.5-7B on a 4090 24GB, max-model-len 32768, how many concurrent requests?\nand with 64GB of CPU RAM?", 4.24),
    ("Qwen2.5-7B on a 4090, max-model-len 32768, how many concurrent requests?\nand with 0.95?", 4.92),  # a share: the memory one
    # A concurrency question that says "fit" is no sizing question; a length given is divided by.
    ("Llama-3.1-8B with max-model-len 8192: how many concurrent requests fit on one H100?", 56.73),
    ("Llama-3.1-8B on an H100: how many 8k requests can it hold at once?", 58.09),
    ("Qwen2.5-7B 上下文 32768 单卡 4090 最多并发多少", 4.24),  # 上下文 after the model's size still labels the length
])
def test_review_capacity_misreadings_stay_fixed(question, expected):
    answer = capacity_answer(question)
    assert answer is not None and answer.computed, explain(answer, "en")
    assert answer.call.result["max_concurrency_at_max_model_len"] == expected


@pytest.mark.parametrize("question", [
    "Switched from Qwen3-14B to Qwen3-1.7B on one L4, max-model-len 32768: how many concurrent requests now?",
    "We moved from Qwen2.5-72B to DeepSeek-V3 on 8x H200, tp 8, max-model-len 32768, how many concurrent requests?",
    "gpt-oss-120b on one H100 (replacing Llama-3.1-8B), max-model-len 32768, how many concurrent requests?",
])
def test_another_model_beside_a_known_one_borrows_no_shape(question):
    answer = capacity_answer(question)
    assert answer is None or not any(v.source == "model" for v in answer.values)


def test_rates_are_no_concurrent_sessions_and_fp4_is_four_bit():
    from assistant.calculations import weights_note
    from assistant.quantities import extract

    for text in ("we get 10k requests per day", "日活 3000 用户", "2000 sessions per day", "5k requests at once"):
        assert "tokens_per_request" not in [q.label for q in extract(text).quantities], text
    assert [q.label for q in extract("10k requests per day").quantities] == [""]
    note = weights_note("Qwen2.5-72B with 32k context, 2000 sessions per day: how many H100 do we need?")
    assert note is not None and "one request" in note["en"] and "4 × H100" in note["en"]  # 145.2 GiB over 71.7 GiB per H100
    # A rate beside a sizing: the KV cache is only for the requests counted, and it says so.
    rate = weights_note("Qwen2.5-7B 在 A100 上每秒 200 个 2k 请求要几张卡")
    assert rate is not None and "1 个 2,000 token" in rate["zh"] and "到达速率" in rate["zh"] and "request rate" in rate["en"]
    assert "request rate" not in weights_note("Qwen2.5-7B with 2k context, 200 concurrent requests: how many A100?")["en"]
    fp4 = capacity_answer("nvidia/Llama-3.3-70B-Instruct-FP4 on one H200, max-model-len 8192, how many concurrent requests?")
    assert fp4 is not None and "weights" in fp4.missing  # not 131.5 GiB of bf16 that "do not fit"


@pytest.mark.parametrize("name, limit", [
    # config.json max_position_embeddings as shipped: Qwen2/2.5 Instruct 32768 (base 131072), Qwen3 40960
    ("Qwen2.5-7B-Instruct", ("Qwen2.5-7B-Instruct", 32768, 131072, None)), ("qwen2.5-7b", ("Qwen2.5-7B-Instruct", 32768, 131072, 131072)),
    ("Qwen2.5-7B base", ("Qwen2.5-7B", 131072, None, None)), ("Qwen2.5-3B-Instruct", ("Qwen2.5-3B-Instruct", 32768, None, None)),
    ("Qwen3-32B", ("Qwen3-32B", 40960, 131072, None)), ("QwQ-32B", None),
    ("QwQ-32B-Preview", ("QwQ-32B-Preview", 32768, None, None)), ("Meta-Llama-3-8B-Instruct", ("Llama-3-8B", 8192, None, None)),
    ("Llama-3.1-70B", ("Llama-3.1-70B", 131072, None, None)), ("Llama-2-13b-chat-hf", ("Llama-2-13B", 4096, None, None)),
    ("DeepSeek-R1-Distill-Qwen-7B", ("DeepSeek-R1-Distill-Qwen-7B", 131072, None, None)),
    # no checked figure, or the asker extends it already: no limit, no note
    ("DeepSeek-R1-Distill-Qwen-14B", None), ("Qwen2.5-1.5B-Instruct", None), ("Qwen3-30B-A3B-Instruct-2507", None),
    ("Qwen2.5-7B-Instruct-1M", None), ("Qwen2.5-7B-Instruct with YaRN", None), ("Qwen3-8B-Base", None),
    # long-context fine-tunes and variants with their own config (review): no base figure
    ("Llama-3-8B-Instruct-Gradient-1048k", None), ("gradientai/Llama-3-70B-Instruct-Gradient-262k", None),
    ("togethercomputer/LLaMA-2-7B-32K", None), ("Yukang/Llama-2-13b-longlora-32k-ft", None),
    ("Qwen2.5-Math-7B-Instruct", None), ("Qwen2.5-Coder-7B-Instruct", None),
    # a length or a volume in the question is no release name: the figure stays
    ("Llama-3-8B at 32k context", ("Llama-3-8B", 8192, None, None)),
    ("Qwen2.5-7B-Instruct, 1M tokens per day", ("Qwen2.5-7B-Instruct", 32768, 131072, None)),
    # a range of lengths, "long chat" and "gradient checkpointing" name no fine-tune; "Instruct 1M"
    # and "1M 版本" name the 1M release (review)
    ("Llama-3-8B, inputs 2-4k tokens", ("Llama-3-8B", 8192, None, None)), ("Llama-3-8B 上下文 8-32k", ("Llama-3-8B", 8192, None, None)),
    ("Llama-3-8B, prompts 8K-32K", ("Llama-3-8B", 8192, None, None)),
    ("Llama-3-8B for long chat sessions with gradient checkpointing off", ("Llama-3-8B", 8192, None, None)),
    ("Qwen2.5-7B-Instruct 1M", None), ("Qwen2.5-7B-Instruct_1M", None), ("Qwen2.5-7B 1M 版本", None),
    ("Qwen2.5-7B-Instruct 1M tokens per day", ("Qwen2.5-7B-Instruct", 32768, 131072, None)),
    # "1M requests" is a volume and "1M context" a plan; a gradient fine-tune may be written apart;
    # a setting's name is no release (second review)
    ("Qwen2.5-7B-Instruct 1M requests per day", ("Qwen2.5-7B-Instruct", 32768, 131072, None)),
    ("Llama-3-8B 1M context", ("Llama-3-8B", 8192, None, None)),
    ("Llama-3-8B max_model_len_32k", ("Llama-3-8B", 8192, None, None)),
    ("Llama-3-8B-Instruct-Gradient 1048k", None),
])
def test_the_context_each_checkpoint_ships(name, limit):
    """The distills and QwQ share a Qwen2.5 shape but not its context, and an Instruct
    checkpoint not its base's: the figure is per checkpoint, and none where it was not checked."""
    from assistant.model_shapes import context_limit
    from assistant.quantities import normalize

    got = context_limit(normalize(name))
    assert (got is None) if limit is None else (got is not None and (got.checkpoint, got.tokens, got.yarn_tokens, got.base_tokens) == limit)


@pytest.mark.parametrize("question, says, lang", [
    ("Qwen2.5-7B-Instruct on one 4090 with max-model-len 131072, how many concurrent requests?",
     ("max_position_embeddings to 32,768", "refuses --max-model-len 131072 at", "rope_scaling", '"factor": 4.0'), "en"),
    ("Qwen2.5-7B-Instruct 单卡 4090，max-model-len 131072，最多能并发多少", ("max_position_embeddings 是 32,768", "YaRN"), "zh"),
    ("Llama-3-8B on one A100 80GB with max-model-len 32768, how many concurrent requests?",
     ("max_position_embeddings to 8,192", "no longer context", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"), "en"),
    # past what YaRN is documented for: no YaRN block, and no "documents no longer context" (review)
    ("Qwen2.5-7B-Instruct on one A100 80GB with max-model-len 262144, how many concurrent requests?",
     ("documents up to 131,072 with YaRN, not 262,144", "refuses --max-model-len 262144 at"), "en"),
    # the length is a request's, not a flag the asker set: the note says which flag it needs
    ("Qwen2.5-7B-Instruct on one A100 80GB, each request 65536 tokens, how many concurrent requests?",
     ("the --max-model-len 65536 that a 65,536-token request needs",), "en"),    ("Llama-3-8B on one A100 80GB, inputs 2-4k tokens, max-model-len 16384, how many concurrent requests?",
     ("max_position_embeddings to 8,192", "refuses --max-model-len 16384 at"), "en"),
])
def test_a_context_longer_than_the_checkpoint_allows_is_said(question, says, lang):
    """vLLM refuses a --max-model-len over the config's (derived max_model_len): a KV budget at
    131072 tokens for Qwen2.5-7B-Instruct read as a plan that would start."""
    answer = capacity_answer(question)
    assert answer is not None and answer.computed
    text = explain(answer, lang)
    assert all(s in text for s in says), text


@pytest.mark.parametrize("question", [
    "Qwen2.5-7B-Instruct on one 4090 with max-model-len 32768, how many concurrent requests?",
    "Qwen2.5-7B-Instruct with YaRN rope scaling on one 4090, max-model-len 131072, how many concurrent requests?",
    "Llama-3.1-8B on one A100 80GB with max-model-len 131072, how many concurrent requests?",
])
def test_a_context_within_the_limit_gets_no_warning(question):
    answer = capacity_answer(question)
    assert answer is not None and answer.computed and "max_position_embeddings" not in explain(answer, "en")


def test_a_sizing_question_over_the_context_says_so_beside_the_gpu_count():
    from assistant.calculations import weights_note

    note = weights_note("Qwen3-32B 128k 上下文需要几张 H100")
    assert note is not None and "H100 的卡 2 张" in note["zh"] and "max_position_embeddings 是 40,960" in note["zh"]


def test_mistral_v0_1_gets_no_table_shape():
    """v0.1 attends over a 4096-token sliding window: the whole-context KV figure would be wrong."""
    from assistant.model_shapes import named_model

    assert named_model("mistral-7b-instruct-v0.1") is None and named_model("mistral-7b-instruct-v0.3") is not None


def test_the_weights_note_is_vllms_arithmetic_and_not_said_for_another_engine():
    """"Llama-2-70b on one A100 40GB with litgpt?": its manual runs it in 4-bit on one card;
    "no flag changes that, use --tensor-parallel-size" is vLLM's (newcomer trial)."""
    from assistant.calculations import weights_note

    assert weights_note("can I run Llama-2-70b on a single A100 40GB with litgpt?") is None
    assert weights_note("lmdeploy 单卡 A100 40G 能跑 Llama-2-70b 吗") is None
    assert weights_note("can I run Llama-2-70b on a single A100 40GB with vllm?") is not None


def test_kv_capacity_said_in_a_sentence_and_the_longest_context_asked_with_a_flag():
    """The figure vLLM logs, said in a sentence ("GPU KV cache size is 458,752 tokens",
    "458752 tokens KV cache"), got "more numbers needed" and a FastDeploy num_blocks request;
    "the largest --max-model-len I can run … on one A100 80GB" and "max context length for …
    on 1x A100 80GB" got no arithmetic (trial)."""
    for q in ("GPU KV cache size is 458,752 tokens; how many 8192-token requests run at once?",
              "how many requests fit: 458752 tokens KV cache, 8192 per request"):
        a = capacity_answer(q)
        assert a is not None and not a.missing and "56" in explain(a, "en"), q
    for q in ("what's the largest --max-model-len I can run Qwen2.5-32B-Instruct with on one A100 80GB?",
              "max context length for Qwen2.5-32B-Instruct on 1x A100 80GB in vllm?"):
        a = capacity_answer(q)
        assert a is not None and a.tool == "kv_cache_capacity" and "46,956" in explain(a, "en"), q
    # the model's own limit, no GPU named: nothing to compute
    assert capacity_answer("what is the max context length of Qwen2.5-7B?") is None


def test_a_count_of_sessions_said_with_each_ones_length_between():
    """"64 个 32k 的会话，每 token 320 KiB，TP 4，需要多少显存" computed nothing (the README's own
    example, asked in short Chinese, trial): 64 was bound to no noun, with "32k 的" before 会话."""
    need = capacity_answer("64 个 32k 的会话，每 token 320 KiB，TP 4，需要多少显存").call.result
    assert (need["total_gib"], need["per_gpu_gib"]) == (625.0, 156.25)
    from assistant.quantities import extract

    for typed in ("50 个 8k 的会话", "50个8k的会话", "50 个8k的会话"):  # however it is spaced (review)
        labels = [(q.text, q.label) for q in extract(typed).quantities]
        assert labels == [("50", "sessions"), ("8k", "tokens_per_request")], typed


def test_a_logged_kv_cache_size_is_used_unless_the_asker_names_another_gpu():
    """vLLM's logged "GPU KV cache size" answers "how many fit?" over torch's "total capacity
    of 79.10 GiB" in a pasted OOM (trial), but a GPU the asker names in a sentence is theirs:
    "On an H100 80GB, how many…?" was answered with the logged A10's figure (review)."""
    log = "INFO 04-18 02:11:58 [kv_cache_utils.py:634] GPU KV cache size: 52,000 tokens\n"
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
           "of which 1.12 GiB is free.\n")
    logged = capacity_answer(log + oom + "we run --max-model-len 16384. how many concurrent 16384-token requests fit?")
    assert logged.tool == "kv_tokens_concurrency"
    other = capacity_answer(log + "this log is from our A10 24GB. On an H100 80GB, how many concurrent 16k requests would fit?")
    assert other.tool != "kv_tokens_concurrency"


def test_an_unreadable_number_stops_the_calculation_and_is_named():
    from assistant.calculations import capacity_answer

    calc = capacity_answer("num_blocks_global 17l31, each request averages 20000 tokens, how many concurrent requests?")
    assert calc is not None and not calc.computed
    assert any("17l31" in p["en"] and "17l31" in p["zh"] for p in calc.problems)


def test_an_upper_case_k_in_max_model_len_is_1024_as_vllm_reads_it():
    """"drop max-model-len to 16K" was computed with 16,000 (31 requests) where vLLM's own
    parser makes it 16384 (30). A lower-case k stays 1000, as vLLM reads it, and an average
    request of "20K tokens" stays 20,000, as the FAQ writes it."""
    from assistant.calculations import capacity_answer

    log = {"kv_cache_tokens": 504608}
    upper = capacity_answer("if I drop max-model-len to 16K how many concurrent?", log)
    assert upper.computed and upper.call.result["concurrent_requests"] == 30
    assert any("16,384" in n["en"] and "1024" in n["en"] for n in upper.notes)
    lower = capacity_answer("if I drop max-model-len to 16k how many concurrent?", log)
    assert lower.call.result["concurrent_requests"] == 31
    from assistant.quantities import normalize

    assert normalize("togethercomputer/LLaMA-2-7B-32K") == "togethercomputer/llama-2-7b-32k"  # a name, as written
    blocks = capacity_answer("17131 blocks of 64 tokens with 20K-token requests, how many run concurrently")
    assert blocks.call.result["concurrent_requests"] == 54 and blocks.call.arguments["avg_tokens_per_request"] == 20000


@pytest.mark.parametrize("follow", ["and with 0.95?", "那 0.95 呢？"])
def test_a_bare_share_after_a_chinese_question_changes_the_memory_share(follow):
    """"and with 0.95?" after "…最多能并发多少" got the first answer again, 0.9 and all (trial): the
    earlier line's 并发 had marked 0.95 "not a whole number", and the mark stayed."""
    from assistant.calculations import capacity_answer

    calc = capacity_answer(f"Qwen2.5-7B-Instruct 单卡 24G，max-model-len 32768，最多能并发多少\n{follow}")
    assert calc.computed and {v.key: v.value for v in calc.values}["gpu_memory_utilization"] == 0.95


def test_more_memory_than_any_one_gpu_has_is_asked_about_not_computed():
    """"on one 800GB GPU" gave 403.3 full-length requests (trial): that is a total of several."""
    from assistant.calculations import capacity_answer

    calc = capacity_answer("Qwen2.5-7B-Instruct on one 800GB GPU, max-model-len 32768, how many concurrent requests?")
    assert not calc.computed and any("800gb" in p["en"] and "288 GB" in p["en"] for p in calc.problems)
    assert capacity_answer("Llama-3.1-70B on one MI300X (192GB) with max-model-len 32768, how many concurrent requests?").computed


@pytest.mark.parametrize("question", ["num_blocks_global 是多少才能支持 100 个并发？每个请求大约 4k token",
                                      "what num_blocks_global do I need for 100 concurrent requests of 4000 tokens?"])
def test_the_block_count_asked_for_is_computed_not_asked_back(question):
    """"num_blocks_global 是多少才能支持 100 个并发" was answered "missing: num_blocks" (a probe):
    the number asked for was asked back."""
    from assistant.calculations import capacity_answer

    calc = capacity_answer(question)
    assert calc.tool == "blocks_needed" and calc.computed and calc.call.result["total_blocks"] == 6300
    assert capacity_answer("num_blocks_global 是 17131，每个请求 4k token，能并发多少").tool == "kv_concurrency"


def test_a_smaller_top_logprobs_does_not_shrink_fastdeploys_message():
    """"top_logprobs=5, msgmax 65536" computed 40,976 B, "fits", and the article turned unsure:
    an all-clear for a hang still to come. The message holds 512 slots of 20 logprobs whatever
    a request asks (trial)."""
    answer = capacity_answer("FastDeploy logprobs with top_logprobs=5 and max batch 64, msgmax is 65536 — does the message fit?")
    assert answer is not None and answer.computed and answer.call.result["bytes"] == 133136 and not answer.call.result["fits"]
    assert answer.call.arguments["top_logprobs"] == 20 and answer.call.arguments["max_batch"] == 512
    assert any("whatever a request's top_logprobs" in n["en"] for n in answer.notes)


def test_a_kv_dtype_said_in_words_is_the_kv_caches_not_the_weights():
    """"Qwen2.5-7B …, fp8 kv cache, how many concurrent?" asked for the weights, as if the
    checkpoint were fp8 (and the chat follow-up "用 fp8 kv cache 呢" asked back the same way);
    a sizing counted the KV cache at bf16's 320 KiB per token (trial)."""
    from assistant.calculations import weights_note

    for question in ("Qwen2.5-7B on one H100, max-model-len 32768, fp8 kv cache, how many concurrent?",
                     "Qwen2.5-7B 单卡 H100，max-model-len 32768，能并发多少？\n用 fp8 kv cache 呢"):
        answer = capacity_answer(question)
        assert answer is not None and not answer.missing, question
        assert answer.calls[-1].value.kv_tokens == 2153599  # 57.51 GiB ÷ 28,672 B: fp8's half of 56 KiB
    # an FP8 checkpoint is still one whose weights are not parameters × 2 bytes
    assert "weights" in capacity_answer("Qwen2.5-7B FP8 on one H100, max-model-len 32768, how many concurrent?").missing
    note = weights_note("Qwen2.5-72B 32k 上下文 fp8 kv cache 要几张 H100")
    assert "每 token 160 KiB" in note["zh"] and "按 bf16/fp16 算" in note["zh"] and "H100 的卡 2 张" in note["zh"]


def test_a_cards_memory_between_the_count_and_the_card_is_still_a_sizing_question():
    """"Qwen2.5-72B 32k 需要几张 80G 的卡" said the weights' floor, 2 cards, without the 32k
    context's KV cache; "需要几张卡" counted it and said 4 (trial)."""
    from assistant.calculations import weights_note

    for question in ("Qwen2.5-72B 32k 需要几张 80G 的卡", "Qwen2.5-72B 32k 需要几张 80GB 显存的卡"):
        note = weights_note(question)["zh"]
        assert "9.8 GiB" in note and "4 张" in note and "至少要 2 张" not in note, question


def test_a_checkpoints_fp8_or_a_denied_fp8_kv_cache_is_not_the_kv_caches_dtype():
    """"Qwen2.5-72B-Instruct-FP8 KV cache" lost the checkpoint's FP8 (135 GiB of bf16 weights), and
    "without fp8 kv cache" counted 1 byte per element (review); "每秒输出 50 个 token" is no request rate."""
    from assistant.calculations import weights_note

    fp8_checkpoint = weights_note("Qwen2.5-72B-Instruct-FP8 KV cache 32k 上下文要几张 H100？")["zh"]
    assert "68 GiB" in fp8_checkpoint and "135 GiB" not in fp8_checkpoint
    assert "320 KiB" in weights_note("Llama-3.1-70B with 32k context, how many H100s without fp8 kv cache?")["en"]
    denied = capacity_answer("Qwen2.5-7B 单卡 A100 80G，max-model-len 32k，没开 fp8 kv cache，能同时跑多少个请求？")
    assert denied.calls[-1].value.max_concurrency_at_max_model_len == 33.84  # bf16's 56 KiB, not fp8's 28
    assert "到达速率" not in weights_note("Llama-3.1-70B 32k 上下文要几张 H100？要求每秒输出 50 个 token")["zh"]


def test_a_known_models_concurrency_with_no_gpu_named_asks_for_the_gpu():
    """"Qwen2.5-7B 单卡能并发多少" named no card: no calculation was offered, and the multi-GPU
    NCCL article answered, marked unsure (an end-of-stop probe). The model's shape is known; the
    GPU's memory is what is missing, and the answer now says so."""
    for question in ("Qwen2.5-7B 单卡能并发多少", "how many concurrent requests can Qwen2.5-7B handle?"):
        answer = capacity_answer(question)
        assert answer is not None and answer.tool == "kv_cache_capacity" and answer.missing == ["gpu_memory"], question
    assert capacity_answer("Qwen2.5-7B 怎么部署") is None  # no figure asked


def test_a_stated_request_length_beats_max_model_len():
    """"上下文 32k，平均每个请求 4k token，并发 200 能跑吗" was computed for 32,000-token requests:
    14 at once instead of 114, said to be what vLLM's log prints (trial)."""
    log = "INFO GPU KV cache size: 458,752 tokens\nINFO Maximum concurrency for 32,768 tokens per request: 14.00x\n"
    for question, lang in ((log + "上下文 32k，平均每个请求 4k token，并发 200 能跑吗", "zh"),
                           ("GPU KV cache size: 458,752 tokens. max-model-len 32k. Average request is about 4k tokens. "
                            "Can it serve 200 concurrent requests?", "en")):
        answer = capacity_answer(question)
        assert answer.tool == "kv_tokens_concurrency" and answer.calls[0].arguments["tokens_per_request"] == 4000
        assert answer.calls[0].value.concurrent_requests == 114
        text = explain(answer, lang)
        assert "14.34" not in text and "114.69" in text
    # with no stated length, or a prompt alone, full-length requests as before (review)
    assert capacity_answer("GPU KV cache size: 458,752 tokens. With --max-model-len 32768, how many requests fit?").calls[0].value.concurrent_requests == 14
    half = capacity_answer("GPU KV cache size: 458,752 tokens, max-model-len 32768, prompts are about 2000 tokens, how many concurrent requests fit?")
    assert half.calls and half.calls[0].value.concurrent_requests == 14
    # a stated length over the context is refused by vLLM: the bound, said so (review)
    over = capacity_answer("GPU KV cache size: 458,752 tokens. --max-model-len 4096. Each request is about 10000 tokens. How many concurrent requests fit?")
    assert over.calls[0].arguments["tokens_per_request"] == 4096 and "HTTP 400" in explain(over, "en")


@pytest.mark.parametrize("question", ["单卡 80G 跑 Qwen2.5-7B-Instruct，max-model-len 32768，能不能支持 200 并发",
                                      "80G 显存 跑 Qwen2.5-7B-Instruct，上下文 32k，并发 200 能扛住吗",
                                      "Qwen2.5-7B-Instruct on one 80GB GPU, max-model-len 32768, can it handle 200 concurrent requests?"])
def test_a_target_load_asked_whether_it_fits_is_computed(question):
    """Naming the concurrency wanted ("能不能支持 200 并发") turned the calculation off, while
    "最多能并发多少" computed it (trial)."""
    answer = capacity_answer(question)
    assert answer is not None and answer.tool == "kv_cache_capacity" and not answer.missing and answer.calls


def test_a_load_named_beside_a_hang_asks_for_no_calculation():
    assert capacity_answer("vllm 200 并发的时候卡住了，能不能支持这么多并发") is None
    assert capacity_answer("we run 200 concurrent users on vllm and requests hang, why?") is None
    # a modal verb with another subject asks for a cause (review)
    assert capacity_answer("Why would vllm hang when we run 200 concurrent requests?") is None
    assert capacity_answer("vllm crashes with CUDA OOM, could that be because we run 256 concurrent requests?") is None
    assert capacity_answer("Why would vllm run 200 concurrent requests so slowly? TTFT is 30 s") is None
    assert capacity_answer("How would vllm handle 500 concurrent requests when the KV cache is full, do they queue or fail?") is None


def test_the_one_gpu_named_beside_a_logged_kv_cache_is_where_that_cache_is():
    """"On an H100 80GB: GPU KV cache size: 458,752 tokens, max-model-len 8192. Can it handle 100
    concurrent requests?" asked for the model's weights (review): 458,752 ÷ 8,192 = 56."""
    answer = capacity_answer("On an H100 80GB: GPU KV cache size: 458,752 tokens, max-model-len 8192. Can it handle 100 concurrent requests?")
    assert answer.tool == "kv_tokens_concurrency" and answer.calls[0].value.concurrent_requests == 56


@pytest.mark.parametrize("follow_up", ["换成 80G 的卡呢", "那 80G 的卡呢", "what about an 80GB card?"])
def test_a_follow_up_card_replaces_the_earlier_one(follow_up):
    """"换成 80G 的卡呢" after 单卡 24G asked which of the two was meant (trial)."""
    answer = capacity_answer("Qwen2.5-7B-Instruct 单卡 24G，max-model-len 32768，最多能并发多少\n" + follow_up)
    assert not answer.problems and answer.calls
    assert next(v for v in answer.values if v.key == "gpu_memory").value == 80


def test_a_chinese_follow_up_needs_no_space_after_na():
    """"那每个请求 3万 token 呢" was no follow-up: 那 and 每 are both word characters to \\b (trial)."""
    answer = capacity_answer("FastDeploy block 数 1万，block_size 64，每个请求 1.5万 token，能并发多少\n那每个请求 3万 token 呢")
    assert not answer.problems and answer.calls[0].value.concurrent_requests == 21  # 10000 × 64 ÷ 30000
    from assistant.calculations import is_follow_on

    assert is_follow_on("那每个请求 3万 token 呢") and not is_follow_on("那个 server 又挂了，日志在下面")


def test_k_is_read_in_1024s_where_the_question_or_its_log_writes_sizes_so():
    """"改成 16k 呢" after max-model-len 32768 was computed at 16,000, and "上下文 32k" beside a pasted
    "Maximum concurrency for 32,768 tokens" at 32,000 (trial). Alone, "32k" stays 32,000, said so."""
    chat = capacity_answer("Qwen2.5-7B-Instruct 单卡 80G，max-model-len 32768，最多能并发多少\n那如果 max-model-len 改成 16k 呢")
    assert next(v for v in chat.values if v.key == "max_model_len").value == 16384
    logged = capacity_answer("INFO GPU KV cache size: 458,752 tokens\nINFO Maximum concurrency for 32,768 tokens per request: 14.00x\n"
                             "上下文 32k，能并发多少")
    assert logged.calls[0].arguments["tokens_per_request"] == 32768 and logged.calls[0].value.concurrent_requests == 14
    # a count that is no token size does not decide it: "--max-num-seqs 2048" made "2k" 2,048 (review)
    seqs = capacity_answer("vllm 日志 GPU KV cache size: 130,000 tokens，--max-num-seqs 2048，平均每个请求 2k token，能并发多少")
    assert seqs.calls[0].arguments["tokens_per_request"] == 2000
    batch = capacity_answer("GPU KV cache size: 130,000 tokens, --max-num-batched-tokens 4096, requests average 4k tokens, "
                            "how many concurrent requests?")
    assert batch.calls[0].arguments["tokens_per_request"] == 4000 and batch.calls[0].value.concurrent_requests == 32
    alone = capacity_answer("Qwen2.5-7B-Instruct 单卡 80G，上下文 32k，最多能并发多少")
    assert next(v for v in alone.values if v.key == "max_model_len").value == 32000
    assert "32k 按 32,000 计算" in explain(alone, "zh")


def test_msgmax_raised_alone_is_checked_against_msgmnbs_default():
    """"已经 sysctl -w kernel.msgmax=1048576 了，还是卡" was told the article's cause was unlikely to be
    theirs (trial): at msgmnb's default (16384) no 133,136-byte message fits in a queue. Not when the
    asker names msgmnb, nor when some requests go through (n=1 works: the queue holds them)."""
    alone = capacity_answer("fastdeploy 开 logprobs 卡住，我已经 sysctl -w kernel.msgmax=1048576 了，还是卡")
    assert alone.calls[0].arguments["msgmnb"] == 16384 and alone.calls[0].value.messages_per_queue == 0
    assert "16,384" in explain(alone, "zh") and alone.calls[0].value.fits  # msgmax itself holds the message
    # "still doesn't work", "不正常" say no request goes through (review)
    for stuck in ("FastDeploy with logprobs: requests hang; I already ran sysctl -w kernel.msgmax=1048576, still doesn't work",
                  "fastdeploy 开 logprobs 卡住，已经 sysctl -w kernel.msgmax=1048576 了，还是卡，返回一直不正常"):
        assert capacity_answer(stuck).calls[0].arguments.get("msgmnb") == 16384, stuck
    for named in ("开了 logprobs 卡住，msgmax 和 msgmnb 都已经调大了，msgmax=1048576", "logprobs hang, MSGMNB raised too, msgmax=1048576",
                  "FD 开了 --enable-logprob，n=1 正常，请求里 n=2 就 hang 住不返回。kernel.msgmax 已经调到 1048576 了。"):
        assert "msgmnb" not in capacity_answer(named).calls[0].arguments, named


def test_a_full_queue_keeps_the_logprobs_article_sure(bundled_settings, bundled_kb):
    from assistant.answer import answer_question

    stuck = answer_question("fastdeploy 开 logprobs 卡住，我已经 sysctl -w kernel.msgmax=1048576 了，还是卡", bundled_settings, kb=bundled_kb)
    assert stuck.citations[0].id == "fastdeploy-logprobs-hang" and stuck.coverage == "full"
    works = answer_question("FD 开了 --enable-logprob，n=1 正常，请求里 n=2 就 hang 住不返回。kernel.msgmax 已经调到 1048576 了。",
                            bundled_settings, kb=bundled_kb)
    assert works.coverage == "tentative"
