"""The quantity extractor: which number is what, in Chinese, English and both, and never slowly."""

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.quantities import extract, normalize

from .conftest import finishes_within


def labels(text: str) -> dict[str, Decimal | None]:
    """label → value for the bound quantities of `text` (the last one wins; tests use unique labels)."""
    return {q.label: q.value for q in extract(text).quantities if q.label}


@pytest.mark.parametrize("text,expected", [
    # the issue's own examples
    ("17131 个 block，每个请求平均 2 万 token，实际能并发多少", {"num_blocks": 17131, "tokens_per_request": 20000}),
    ("平均每个请求输入加输出大概 32000 tokens", {"tokens_per_request": 32000}),
    ("block_size 我们改成了 128", {"block_size": 128}),
    ("8 块 A100, 每个请求平均 2000 token", {"gpu_count": 8, "tokens_per_request": 2000}),
    ("input 2k + output 6k tokens", {"input_tokens": 2000, "output_tokens": 6000}),
    ("输入2k+输出6k", {"input_tokens": 2000, "output_tokens": 6000}),
    ("输入 2k、输出 6k", {"input_tokens": 2000, "output_tokens": 6000}),
    # written number-first: each label belongs to the number before it
    ("128 个并发请求，每个 4k 输入 1k 输出", {"sessions": 128, "input_tokens": 4000, "output_tokens": 1000}),
    ("200 个并发，每个请求 2k 输入 512 输出", {"sessions": 200, "input_tokens": 2000, "output_tokens": 512}),
    ("128 concurrent requests, 4k input 1k output each", {"sessions": 128, "input_tokens": 4000, "output_tokens": 1000}),
    ("并发 128 输入 2k 输出 6k", {"sessions": 128, "input_tokens": 2000, "output_tokens": 6000}),
    # number-first with a joining word: "+ 1k" and "and 1k" kept the output from pairing
    ("each request 4k input + 1k output", {"input_tokens": 4000, "output_tokens": 1000}),
    ("4k input and 1k output per request", {"input_tokens": 4000, "output_tokens": 1000}),
    ("每个请求 4k 输入 + 1k 输出", {"input_tokens": 4000, "output_tokens": 1000}),
    # "prompt" right after its number in such a pair: it was read as the whole request ("3k prompts")
    ("each request is 3k prompt + 1k output tokens", {"input_tokens": 3000, "output_tokens": 1000}),
    ("3k prompt, 1k output", {"input_tokens": 3000, "output_tokens": 1000}),
    ("how many 32k prompts fit", {"tokens_per_request": 32000}),
    # a count of sequences, not of the blocks named before it (trial)
    ("will decode run out of blocks at 128 seqs?", {"sessions": 128}),
    ("how many blocks do I need for 100 sessions of 16k tokens", {"sessions": 100, "tokens_per_request": 16000}),
    ("要撑 50 并发至少要多少 block", {"sessions": 50}),
    ("num_blocks_global: 17131", {"num_blocks": 17131}),
    # names and nouns on either side
    ("17131 blocks of 64 tokens with 20K-token requests", {"num_blocks": 17131, "block_size": 64, "tokens_per_request": 20000}),
    ("total blocks 9000, block size: 16", {"num_blocks": 9000, "block_size": 16}),
    ("每个 block 128 个 token，共 4000 块", {"block_size": 128, "num_blocks": 4000}),
    ("--max-num-seqs 256 --max-model-len 8192", {"max_num_seqs": 256, "max_model_len": 8192}),
    ("max_num_seqs=128, max_model_len=32768", {"max_num_seqs": 128, "max_model_len": 32768}),
    ("上下文长度 32k，并发 64", {"max_model_len": 32000, "sessions": 64}),
    ("32 layers, 8 KV heads, head_dim 128, TP=2", {"num_layers": 32, "num_kv_heads": 8, "head_dim": 128, "tensor_parallel_size": 2}),
    ("61 层，num_key_value_heads 128，tp4", {"num_layers": 61, "num_kv_heads": 128, "tensor_parallel_size": 4}),
    ("kv_cache_ratio 0.75, total_block_num: 17220", {"kv_cache_ratio": Decimal("0.75"), "num_blocks": 17220}),
    ("Reset block num, the total_block_num:17220, prefill_kvcache_block_num:12915", {"num_blocks": 17220, "prefill_blocks": 12915}),
    ("kernel.msgmax=1048576 kernel.msgmnb=268435456", {"msgmax": 1048576, "msgmnb": 268435456}),
    ("80GB GPU, gpu_memory_utilization 0.9, weights 16 GiB, 128 KiB per token",
     {"gpu_memory": 80 * 2**30, "gpu_memory_utilization": Decimal("0.9"), "weights": 16 * 2**30, "kv_bytes_per_token": 131072}),
    ("显存 80G，显存利用率 90%，模型权重 15,360 MiB", {"gpu_memory": 80 * 2**30, "gpu_memory_utilization": Decimal("0.9"), "weights": 15 * 2**30}),
    ("A100-80GB, 131072 bytes per token", {"gpu_memory": 80 * 2**30, "kv_bytes_per_token": 131072}),
    # host memory is no GPU memory: a pod's 120G was shown as "GPU memory = 120g"
    ("pod 的 memory 还是 120G，显存 80G", {"gpu_memory": 80 * 2**30}),
    ("主机内存 512G, 24 GB VRAM", {"gpu_memory": 24 * 2**30}),
    ("host memory 256 GB", {}),
    ("GPU KV cache size: 34,952 tokens", {"kv_cache_tokens": 34952}),
    ("Maximum concurrency for 8,192 tokens per request: 4.27x", {"max_concurrency_tokens": 8192, "max_concurrency_x": Decimal("4.27")}),
    ("top_logprobs 5, max_batch 256", {"top_logprobs": 5, "max_batch": 256}),
    # a count, then each one's length: 8k and 4k were 8,000 and 4,000 sessions (trial)
    ("单张 A100 40G 能撑住 50 个 8k 并发吗", {"gpu_memory": 40 * 2**30, "sessions": 50, "tokens_per_request": 8000}),
    ("100个4k请求需要多少block", {"sessions": 100, "tokens_per_request": 4000}),
    ("能不能扛住 1k 并发", {"sessions": 1000}),  # a thousand at once
    # "32k ctx" is the context (it was left out, and the concurrency asked for went unsaid)
    ("两张4090 tp2 32k ctx 能跑几个并发", {"tensor_parallel_size": 2, "max_model_len": 32000}),
    # the flag's bare short name, a fraction right after ("util 0.95 instead of 0.92", trial); not a CPU's
    ("one L40S, util 0.95, weights 15 GiB", {"gpu_memory_utilization": Decimal("0.95"), "weights": 15 * 2**30}),
    ("cpu util 0.9, weights 15 GiB", {"weights": 15 * 2**30}),
    # the length a concurrency is asked at, not 32,000 sessions; a count of sequences stays a count
    ("KV tokens and concurrency at 32k?", {"max_model_len": 32000}),
    ("concurrency at 128 seqs", {"sessions": 128}),
    # review: the request's parts after "concurrency at"; 这个 before 个; an upper-case K
    ("max concurrency at 8k input + 1k output?", {"input_tokens": 8000, "output_tokens": 1000}),
    ("what is the concurrency at 5k users?", {"sessions": 5000}),
    ("这个 1k 并发、每个请求 4k token", {"sessions": 1000, "tokens_per_request": 4000}),
    ("50 个 8K 并发", {"sessions": 50, "tokens_per_request": 8000}),
    ("50 concurrent 8K requests", {"sessions": 50, "tokens_per_request": 8000}),
    ("要几张H20 才能跑 128K 上下文", {"max_model_len": 128000}),  # (read as 131,072 where vLLM would: calculations)
    ("ctx 32k", {"max_model_len": 32000}),
    # a rate is no count of requests at once, per second as per day (review)
    ("200 requests per second of 2k each", {"tokens_per_request": 2000}),
    ("每秒 10 个请求，每个 2k，能并发多少", {"tokens_per_request": 2000}),
    # no count of GPUs is written "128k": it was 128,000 H20s, and the sizing counted the weights only
    ("Qwen2.5-72B-Instruct 要几张H20 才能跑 128k 上下文", {"max_model_len": 128000}),
    # a bare length right after the model's size or a verb of serving is its context (trial);
    # "req/s" is a rate like "requests per second"
    ("8 张 A100 跑 Qwen2.5-72B 32k 能有多少并发", {"gpu_count": 8, "max_model_len": 32000}),
    ("serving llama-3-70b at 32k on 4 H100, max concurrency?", {"gpu_count": 4, "max_model_len": 32000}),
    ("8 张 A100 跑 32k 能有多少并发", {"gpu_count": 8, "max_model_len": 32000}),
    ("Qwen2.5-72B at 50 req/s of 4k each", {"tokens_per_request": 4000}),
    # (review) other counts and settings after the same words are no context
    ("How many H100s do I need to serve Llama-3-70B at 2k qps?", {}),
    ("Qwen2.5-7B 单卡 A100 80G，max_num_batched_tokens 开到 8k，最多能同时跑多少个请求？", {"gpu_memory": 80 * 2**30}),
    ("部署 2k 个副本", {}), ("跑 2k 条数据", {}), ("throughput drops at 2k", {}), ("vllm running 4k concurrent", {}),
])
def test_each_number_is_bound_to_its_label(text, expected):
    assert labels(text) == {k: Decimal(v) for k, v in expected.items()}


@pytest.mark.parametrize("text,label,value", [
    ("１７１３１ 个 block", "num_blocks", 17131),  # full-width digits
    ("１７，１３１ blocks", "num_blocks", 17131),  # full-width thousands separator
    ("17,131 blocks", "num_blocks", 17131),
    ("每个请求平均 ３.２ 万 token", "tokens_per_request", 32000),
    ("每个请求 3.2w token", "tokens_per_request", 32000),
    ("每个请求 2千 token", "tokens_per_request", 2000),
    ("1.5M tokens per request", "tokens_per_request", 1_500_000),
    ("20K tokens per request", "tokens_per_request", 20000),
    ("2k + 6k tokens per request", "tokens_per_request", 8000),  # a sum
    ("block_size 从 64 改成 128", "block_size", 128),  # a change: the new value
])
def test_units_and_separators(text, label, value):
    assert labels(text)[label] == value


@pytest.mark.parametrize("text,normalized", [
    # one value written in parts (trial: 7,000 blocks and 10,000 tokens were read from "1万7千")
    # (in the scale written, which other rules read: "两万 上下文" is a context, not 20,000 GPUs; review)
    ("1万7千 个 block", "1.7万 个 block"), ("一万七千多个", "1.7万多个"), ("1万7 个", "1.7万 个"), ("两万 token", "2万 token"),
    ("三千五 token", "3.5千 token"), ("一千五百", "1.5千"), ("十万", "10万"), ("2万 token", "2万 token"),
    ("共 1万7千。", "共 1.7万."),  # a full stop ends the sentence, it is no decimal point (review)
    # not numbers, or not one: left as written
    ("千万不要这样", "千万不要这样"), ("几十万 token", "几十万 token"), ("一千万", "一千万"), ("1.5万", "1.5万"),
    ("一万零五百", "一万零五百"), ("十万火急", "十万火急"),
    # scientific notation: whole numbers only, never a name
    ("2e4 tokens", "20000 tokens"), ("1.5e4", "15000"), ("fp8e4m3", "fp8e4m3"), ("1e-5", "1e-5"), ("3e4a9f", "3e4a9f"),
])
def test_numbers_written_in_parts_or_with_an_exponent_are_one_value(text, normalized):
    assert normalize(text) == normalized


def test_ranges_and_lengths_said_in_words():
    """"between 2000 and 4000 tokens" is a range, as "2k-4k" is (it was 2000 sessions of 4000
    tokens); "requests of 8k" gives their length (it was 8,000 requests); "KV blocks of 16
    tokens" the block size (trial)."""
    (q,) = [q for q in extract("requests between 2000 and 4000 tokens").quantities]
    assert q.problem == "range" and q.value is None
    assert labels("how many concurrent requests of 8k can it hold?") == {"tokens_per_request": 8000}
    assert labels("50 concurrent requests of 8k") == {"sessions": 50, "tokens_per_request": 8000}
    assert labels("17131 KV blocks of 16 tokens") == {"num_blocks": 17131, "block_size": 16}
    assert [q.approximate for q in extract("kv block 有一万七千多个").quantities] == [True]
    assert [q.approximate for q in extract("每个请求 2000 token 最多能并发几个").quantities] == [False]  # 最多 is no "-odd"
    assert labels("要几张H20 才能跑 两万 上下文") == {"max_model_len": 20000}
    assert [q.approximate for q in extract("两万 上下文").quantities] == [False]  # 上下文 is no 上下 ("about")
    # a prompt's length, and a request's two parts, are not the request's whole length (review)
    assert labels("how many concurrent prompts of 8k?") == {"input_tokens": 8000}
    assert labels("requests of 4k input and 1k output") == {"input_tokens": 4000, "output_tokens": 1000}


@pytest.mark.parametrize("text", ["8 块 A100", "8 张卡", "8x H100", "8 gpus", "8 卡", "8 块 H800"])
def test_a_count_of_gpus_is_never_a_count_of_blocks(text):
    found = labels(text)
    assert found == {"gpu_count": 8}


def test_approximate_words_mark_a_value_without_blocking_it():
    for text in ("大概 32000 tokens per request", "约 32000 tokens per request", "~32000 tokens per request",
                 "about 32000 tokens per request", "32000 tokens per request 左右"):
        (q,) = [q for q in extract(text).quantities if q.label]
        assert q.value == 32000 and q.approximate, text
    (q,) = extract("32000 tokens per request").quantities
    assert not q.approximate


@pytest.mark.parametrize("text,problem", [
    ("每个请求 2k-6k token", "range"),
    ("2000 到 6000 tokens per request", "range"),
    ("max_num_seqs=-3", "negative"),
    ("2.5 blocks", "not_integer"),
])
def test_unusable_values_are_marked_not_guessed(text, problem):
    assert [q.problem for q in extract(text).quantities if q.problem] == [problem]


def test_a_7000_digit_number_is_too_large_not_an_overflow():
    x = extract("num_blocks_global " + "9" * 7000 + ", 每个请求 2000 token")
    (blocks,) = x.by_label("num_blocks")
    assert blocks.value is None and blocks.problem == "too_large"
    assert x.by_label("tokens_per_request")[0].value == 2000


def test_dtypes_and_mtp_are_read_as_words():
    x = extract("bf16 weights, --kv-cache-dtype fp8, MTP on")
    assert x.dtypes == ("bfloat16", "fp8") and x.kv_cache_dtype == "fp8" and x.mtp is True
    assert extract("logprobs without MTP").mtp is False
    assert extract("logprobs").mtp is None


def test_things_that_only_look_like_numbers_are_left_alone():
    found = labels("vLLM 0.6.3 on Llama-3.1-8B, fp8, A100, GPU 0 has a total capacity of 79.10 GiB, port 8000")
    assert found == {"gpu_memory": Decimal("79.10") * 2**30}  # the model size, GPU index and port are not capacity numbers


def test_normalize_collapses_whitespace_and_caps_digit_runs():
    assert normalize("ＡＢ\t\t  １２") == "ab 12"
    assert normalize("1" * 5000) == "1" * 21


# ---------------------------------------------------------------- time: linear on adversarial input

def test_the_reported_slow_inputs_are_fast():
    # issue 11: 12.9 s and 10.4 s before, through the old chained \s*…\s* patterns
    for text in ("多少 请求" + " " * 300 + "1", "多少 请求" + " " * 7900 + "1", "how many " + "7" * 7990,
                 "num_blocks_global " * 450, "每个请求 2k + " * 600, "1-2~3 到 " * 900):
        assert finishes_within(0.5, extract, text[:8192]), text[:40]


_PIECES = st.sampled_from([
    " ", "  ", "\t", "\n", "　", "1", "9" * 50, "0.", ".", ",", "，", "、", "+", "-", "~", "x", "k", "万", "w", "G", "GiB", "%",
    "block", "blocks", "block_size", "num_blocks_global", "个", "块", "张卡", "A100", "token", "tokens per request", "每个请求",
    "平均", "输入", "输出", "加", "并发", "多少", "how many", "sessions of", "max-num-seqs", "max_model_len", "kv_cache_ratio",
    "GPU KV cache size: ", "Maximum concurrency for ", "layers", "KV heads", "head_dim", "bf16", "tp", "logprobs", "msgmnb",
    "显存", "weights", "per token", "=", ":", "改成",
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.tuples(_PIECES, st.integers(1, 400)), min_size=1, max_size=40))
def test_fuzz_adversarial_inputs_up_to_8_kb_stay_fast(parts):
    from assistant.calculations import capacity_answer

    text = "".join(piece * times for piece, times in parts)[:8192]
    assert finishes_within(0.5, lambda: (extract(text), capacity_answer(text))), len(text)


def test_a_models_version_is_not_a_number_to_explain():
    """"Llama-3.1-8B" left 3.1 unbound, and the answer asked what 3.1 referred to."""
    assert extract("Llama-3.1-8B bf16 on one 80GB H100, how many tokens of KV cache?").unbound() == []
    assert [q.text for q in extract("gpt-4 with 128k context").quantities] == ["128k"]  # the context's length, not gpt's 4
    assert [q.problem for q in extract("16gb-32gb of memory").quantities] == ["range"]  # a unit, not a name


def test_a_consumer_cards_model_number_is_not_a_value():
    """"单卡 4090 24G" read 4090 as a GPU count, "2 张 4090" as a number nobody could place;
    4090 blocks, said so, are still blocks."""
    from assistant.quantities import extract

    assert [q.value for q in extract("单卡 4090 24G 跑 13B 模型够不够？").quantities if q.value == 4090] == []
    assert [q.value for q in extract("2 x RTX 3090, 24 GiB each").quantities if q.value == 3090] == []
    assert [q.label for q in extract("num_blocks 4090, each request 2000 tokens").quantities if q.value == 4090] == ["num_blocks"]
    # an article or a count before it: "could not tell what 4090 refers to" (trial)
    assert [q.value for q in extract("--max-model-len 32768 on a 4090 with a 7B AWQ model").quantities if q.value == 4090] == []
    assert [q.value for q in extract("my 3090 runs out of memory").quantities if q.value == 3090] == []
    # ... but not a count of tokens after an article (review)
    assert [q.value for q in extract("how many requests if each is a 3070 token prompt").quantities if q.value == 3070] == [3070]
    assert [q.value for q in extract("one 2080-token request at a time").quantities if q.value == 2080] == [2080]


def test_a_cards_size_after_its_model_is_its_memory():
    """"8 张 A100 80G" left 80G unbound: the answer said it could not tell what 80g was, where
    "显存 80G" read fine. A share after a card's model is not gpu_memory_utilization."""
    def labels(text):
        return [(q.label, q.unit) for q in extract(text).quantities]

    assert labels("我有 8 张 A100 80G，跑 Llama-3-70B") == [("gpu_count", "count"), ("gpu_memory", "bytes"), ("", "params")]
    assert labels("8 x H100 80GB") == [("gpu_count", "times"), ("gpu_memory", "bytes")]
    assert labels("A100 90%") == [("", "ratio")]
    assert extract("我有 8 张 A100 80G，跑 Llama-3-70B bf16，max-model-len 32768").unbound() == []


@pytest.mark.parametrize("text, value", [
    ("KV cache 320 KiB per token (before TP), TP=2", 320 * 1024),
    ("each token takes 128 KB of KV cache", 128 * 1024),
    ("kv 每个 token 160KB", 160 * 1024),
    ("每个 token 占 160 KB 的 KV cache", 160 * 1024),
])
def test_a_size_said_per_token_is_the_kv_bytes_per_token(text, value):
    """"KV cache 320 KiB per token" was shown back as "KV-cache memory = 320 kib"."""
    assert [(q.label, q.value) for q in extract(text).quantities if q.unit == "bytes"] == [("kv_bytes_per_token", value)]
    assert [(q.label, q.value) for q in extract("KV cache 20 GiB, 128 KiB per token").quantities] == [
        ("kv_cache_memory", 20 * 2**30), ("kv_bytes_per_token", 128 * 1024)]


def test_kv_bytes_per_token_by_its_name_and_vllms_own_figure_first():
    """"kv_bytes_per_token=131072" was left unbound while the answer asked for it; a question
    pasting both "Available KV cache memory" and "GPU KV cache size" asked for the bytes per
    token instead of using vLLM's figure."""
    from assistant.calculations import capacity_answer

    assert [(q.label, q.value) for q in extract("KV cache 20 GiB, kv_bytes_per_token=131072").quantities] == [
        ("kv_cache_memory", 20 * 2**30), ("kv_bytes_per_token", 131072)]
    done = capacity_answer("KV cache 20 GiB, kv_bytes_per_token=131072, how many tokens?")
    assert done.missing == [] and done.calls[-1].result["kv_tokens"] == 163840
    both = capacity_answer("INFO Available KV cache memory: 24.5 GiB\nINFO GPU KV cache size: 200,000 tokens\n"
                           "max_model_len 32768，能并发多少？")
    assert both.tool == "kv_tokens_concurrency" and both.missing == []


@pytest.mark.parametrize("text, version", [("how many concurrent requests can llama 3 70b serve", "3"),
                                           ("qwen 2.5 7b on a 4090 24g", "2.5"), ("用 glm 4 9b 跑，显存 24g", "4")])
def test_a_version_after_a_model_family_is_part_of_the_name(text, version):
    """"llama 3 70b" (a space, not a dash) left 3 unbound, and the capacity answer asked what
    "3" referred to (a newcomer trial)."""
    assert version not in [q.text for q in extract(text).quantities]


@pytest.mark.parametrize("text, kept", [("qwen 72B 需要几张 A100 80G", "72b"), ("部署 qwen 4 张 A100", "4"), ("glm 2 gpus with 24GB each", "2")])
def test_a_size_or_a_count_after_a_model_family_is_kept(text, kept):
    """Only a version followed by a size or a variant is part of the name (review)."""
    assert kept in [q.text for q in extract(text).quantities]


@pytest.mark.parametrize("text", ["Llama-3.1-70B on one MI300X (192GB) with max-model-len 32768",
                                  "one A100 (40GB), max-model-len 8192", "单卡 H100（80GB），max-model-len 32768",
                                  "2x H100 (80GB each), max-model-len 8192"])
def test_a_cards_memory_in_brackets_is_its_memory(text):
    """"one MI300X (192GB)" was "I could not tell what 192gb refers to" while "MI300X with 192GB
    memory" was computed (trial); an H100 only passed by its known size."""
    labels = {q.label for q in extract(text).quantities if q.unit == "bytes"}
    assert labels == {"gpu_memory"}


@pytest.mark.parametrize("text", ["weights (as logged) 30 GiB", "Llama-3.1-70B on 4x A100 (320GB total) with tp 4",
                                  "Llama-3.1-8B on one A100 (20GB free), max-model-len 32768"])
def test_brackets_still_separate_a_label_from_what_is_not_its_value(text):
    """A total or the free memory in brackets is no card's size: 320GB read as each A100's
    made 102 requests of what fits 15 (review)."""
    assert "gpu_memory" not in {q.label for q in extract(text).quantities}


def test_a_number_with_a_letter_typed_inside_is_named_never_split():
    """"5O4,608 tokens" (a letter O for a zero) was read as 5 blocks and 608 tokens, and "about
    0 requests" followed, sure (trial)."""
    x = extract("GPU KV cache size: 5O4,608 tokens, max-model-len 8192 concurrency?")
    assert x.garbled == ("5o4,608",) and [str(q.value) for q in x.quantities] == ["8192"]
    assert extract("num_blocks_global 17l31 and 20000 tokens").garbled == ("17l31",)
    # Names with letters and digits are no typos.
    assert extract("qwen2.5-7b on an h100 (gfx942? no), v0.8.0 at 10:05").garbled == ()
