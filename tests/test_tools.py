import json
import urllib.error
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from assistant.calculations import capacity_call
from assistant.tools import call_tool, registry, tool
from assistant.tools.capacity import (LOGPROBS_MESSAGE_BYTES, LOGPROBS_MESSAGE_BYTES_MTP, RECOMMENDED_MSGMAX, RECOMMENDED_MSGMNB,
                                      blocks_needed, fastdeploy_decode_budget, kv_bytes_per_token, kv_cache_capacity,
                                      kv_concurrency, kv_tokens_concurrency, logprobs_message_size)
from assistant.tools.gpu import gpu_status
from assistant.tools.host import host_status
from assistant.tools.logs import diagnose_log, diagnose_text
from assistant.tools.serving import parse_metrics, serving_status

from .conftest import run_cli

LLAMA_31_8B = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
               "num_key_value_heads": 8, "torch_dtype": "bfloat16", "max_position_embeddings": 131072}


# ---------------------------------------------------------------- capacity math

def test_fastdeploy_faq_concurrency_example_with_corrected_division():
    r = kv_concurrency(17131, 20000, block_size=64)
    assert r.total_tokens == 1_096_384 and r.exact == pytest.approx(54.82, abs=0.01)
    assert r.concurrent_requests == 54 and r.limited_by == "kv_cache"
    assert "17131 × 64 = 1,096,384" in r.formula and "wait" in r.explanation["en"] and "排队" in r.explanation["zh"]


def test_max_num_seqs_caps_concurrency_and_the_issue_example():
    assert kv_concurrency(17131, 20000, 64, max_num_seqs=32).concurrent_requests == 32
    assert kv_concurrency(17131, 20000, 64, max_num_seqs=32).limited_by == "max_num_seqs"
    assert kv_concurrency(9000, 32000, block_size=128).concurrent_requests == 36  # 1,152,000 / 32,000
    with pytest.raises(ValueError):
        kv_concurrency(0, 100)


def test_blocks_needed_rounds_partial_blocks_up():
    r = blocks_needed(10, 1000, 64)
    assert (r.blocks_per_session, r.total_blocks) == (16, 160)  # ceil(1000 / 64) = 16


def test_llama_31_8b_needs_128_kib_per_token_in_bf16(tmp_path):
    r = kv_bytes_per_token(json.dumps(LLAMA_31_8B))
    assert r.bytes_per_token == 131072 and r.kib_per_token == 128.0 and not r.mla
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_31_8B))
    assert kv_bytes_per_token(config_path=str(tmp_path)).bytes_per_token == 131072  # a model folder works too
    assert kv_bytes_per_token(config_path=str(tmp_path / "config.json")).bytes_per_token == 131072
    tp2 = kv_bytes_per_token(json.dumps(LLAMA_31_8B), tensor_parallel_size=2)
    assert tp2.bytes_per_token_per_gpu == 65536
    assert kv_bytes_per_token(num_layers=32, num_kv_heads=8, head_dim=128, dtype="fp8").bytes_per_token == 65536


def test_config_path_reads_only_small_regular_files_and_never_says_which_exist(tmp_path):
    import os
    import threading

    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n")
    big = tmp_path / "big.json"
    big.write_text("{" + " " * 2_000_000 + "}")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    messages = set()
    for path in ("/dev/zero", str(fifo), str(big), str(secret), str(tmp_path / "missing.json"), str(tmp_path)):
        box = {}
        worker = threading.Thread(target=lambda: box.update(call=call_tool("kv_bytes_per_token", {"config_path": path})), daemon=True)
        worker.start()
        worker.join(5)
        assert not worker.is_alive(), f"{path} blocked"
        error = box["call"].error
        assert error and "hunter2" not in error and "password" not in error
        messages.add(error)
    assert len(messages) == 1  # the same words whether the file is missing, a FIFO, huge or not JSON


def test_config_json_is_inline_json_only_and_config_values_are_not_echoed(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_31_8B))
    with pytest.raises(ValueError, match="JSON text"):
        kv_bytes_per_token(config_json=str(tmp_path))  # a path in config_json is not opened
    with pytest.raises(ValueError) as info:
        kv_bytes_per_token(config_json=json.dumps({**LLAMA_31_8B, "num_hidden_layers": "s3cret"}))
    assert "num_hidden_layers" in str(info.value) and "s3cret" not in str(info.value)
    with pytest.raises(ValueError) as info:
        kv_bytes_per_token(config_json=json.dumps({**LLAMA_31_8B, "torch_dtype": "s3cret"}))
    assert "s3cret" not in str(info.value)


def test_config_path_is_declared_a_local_file_parameter():
    from assistant.tools import remote_caller

    tool_ = registry()["kv_bytes_per_token"]
    assert tool_.access.reads_files == ("config_path",)
    remote = remote_caller("127.0.0.1")
    assert "config_path" not in remote.parameters(tool_)["properties"]
    assert call_tool("kv_bytes_per_token", {"config_path": "/etc/hostname"}, caller=remote).error


CAPACITY_TOOLS = ["kv_concurrency", "kv_tokens_concurrency", "blocks_needed", "kv_bytes_per_token", "kv_cache_capacity", "kv_tokens_from_memory",
                  "fastdeploy_decode_budget", "logprobs_message_size"]


@pytest.mark.parametrize("name", CAPACITY_TOOLS)
def test_capacity_schemas_allow_positive_values_only(name):
    for pname, prop in registry()[name].parameters["properties"].items():
        if prop.get("type") in ("integer", "number") and pname not in ("top_logprobs", "overhead_gib", "kv_cache_ratio"):
            assert prop.get("minimum", 0) >= 1 or "exclusiveMinimum" in prop, (name, pname)


@pytest.mark.parametrize("name,args", [
    ("kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 2000, "max_num_seqs": -3}),
    ("kv_concurrency", {"num_blocks": 17131, "avg_tokens_per_request": 2000, "block_size": 0}),
    ("kv_tokens_concurrency", {"kv_cache_tokens": -5, "tokens_per_request": 8192}),
    ("blocks_needed", {"sessions": -1, "tokens_per_session": 100}),
    ("kv_bytes_per_token", {"num_layers": 32, "num_kv_heads": -8, "head_dim": 128, "dtype": "bf16"}),
    ("kv_cache_capacity", {"gpu_memory_gib": -80, "weights_gib": 16, "kv_bytes_per_token": 131072}),
    ("kv_tokens_from_memory", {"kv_cache_gib": 0, "kv_bytes_per_token": 131072}),
    ("fastdeploy_decode_budget", {"total_blocks": 0, "kv_cache_ratio": 0.75}),
    ("logprobs_message_size", {"msgmnb": -1}),
    ("kv_concurrency", {"num_blocks": 10**400, "avg_tokens_per_request": 2000}),
])
def test_capacity_tools_reject_non_positive_and_absurd_values(name, args):
    call = call_tool(name, args)
    assert call.error and call.result is None
    with pytest.raises(ValueError):
        registry()[name].fn(**args)


def test_kv_tokens_concurrency_is_vllms_maximum_concurrency():
    r = kv_tokens_concurrency(34952, 8192)  # the KB's log line: 34,952 tokens, 8,192 per request: 4.27x
    assert r.exact == 4.27 and r.concurrent_requests == 4 and r.limited_by == "kv_cache"
    assert kv_tokens_concurrency(34952, 65536).limited_by == "too_long"
    capped = kv_tokens_concurrency(458752, 2000, max_num_seqs=64)
    assert capped.concurrent_requests == 64 and "queue" in capped.explanation["en"] and "排队" in capped.explanation["zh"]


def test_messages_per_queue_is_msgmnb_over_message_size():
    r = logprobs_message_size(mtp=True, msgmax=RECOMMENDED_MSGMAX, msgmnb=RECOMMENDED_MSGMNB)
    assert r.fits and r.messages_per_queue == RECOMMENDED_MSGMNB // 802840 == 334
    assert logprobs_message_size(msgmnb=16384).messages_per_queue == 0


def test_mla_models_store_one_latent_without_the_factor_two():
    deepseek = {"num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "hidden_size": 7168,
                "kv_lora_rank": 512, "qk_rope_head_dim": 64, "torch_dtype": "bfloat16"}
    r = kv_bytes_per_token(json.dumps(deepseek))
    assert r.mla and r.bytes_per_token == 61 * (512 + 64) * 2


def test_kv_cache_capacity_and_vllm_start_up_check():
    # one 80 GiB GPU at 0.9, 16 GiB of weights, 128 KiB per token
    r = kv_cache_capacity(80, 16, 131072, 0.9, max_model_len=8192)
    assert r.kv_budget_gib == pytest.approx(56.0) and r.kv_tokens == 458752
    assert r.fits_one_request and r.max_concurrency_at_max_model_len == pytest.approx(56.0)
    too_long = kv_cache_capacity(24, 16, 131072, 0.9, max_model_len=131072)
    # 24 × 0.9 − 16 = 5.6 GiB; 1 GiB holds 8192 tokens of 128 KiB; 5.6 × 8192 = 45,875
    assert too_long.fits_one_request is False and too_long.largest_max_model_len == 45875
    assert "refuses to start" in too_long.explanation["en"] and "--max-model-len" in too_long.explanation["en"]
    # With no overhead given, the figure is said to be an upper bound; with one, it is not.
    assert "upper bound" in r.explanation["en"] and "上限" in r.explanation["zh"]
    assert "upper bound" not in kv_cache_capacity(80, 16, 131072, 0.9, overhead_gib=4).explanation["en"]


def test_weights_that_do_not_fit_are_said_so_not_reported_as_zero_tokens_of_kv_cache():
    """80 GiB at 0.9 with 100 GiB of weights said "About 0 tokens of KV cache fit per GPU
    (-28.00 GiB)", as if that were a result."""
    r = call_tool("kv_cache_capacity", {"gpu_memory_gib": 80, "weights_gib": 100, "kv_bytes_per_token": 131072}).result
    assert r["weights_fit"] is False and r["kv_tokens"] == 0 and r["kv_budget_gib"] == pytest.approx(-28.0)
    en, zh = r["explanation"]["en"], r["explanation"]["zh"]
    assert en.startswith("The weights do not fit: 100.00 GiB of weights per GPU against 72.00 GiB") and "28.00 GiB too much" in en
    assert "About 0 tokens" not in en and "upper bound" not in en and "权重放不下" in zh and "超出 28.00 GiB" in zh
    # 100 GiB over 2 GPUs fits; no gpu_memory_utilization (100/80 > 1) could
    assert "tensor_parallel_size 2 or more" in en and "gpu_memory_utilization of" not in en
    near = kv_cache_capacity(80, 75, 131072, 0.9, max_model_len=8192)  # 75/80 = 0.9375 of the GPU would do
    assert near.weights_fit is False and near.fits_one_request is False
    # 0.9375 holds the weights, not also one 8192-token request (1 GiB): 0.95 does, and is said (review)
    assert "gpu_memory_utilization of 0.95 or more" in near.explanation["en"] and "tensor_parallel_size 2" in near.explanation["en"]
    assert kv_cache_capacity(80, 75, 131072, 0.95, max_model_len=8192).fits_one_request
    # A need of 0.935 is named rounded up: "above 0.93" named a value that fails (trial, TPU v5e 16 GB).
    tight = kv_cache_capacity(16, 14.96, 131072, 0.9).explanation
    assert "of 0.94 or more" in tight["en"] and "0.93" not in tight["en"] and "调到 0.94 或更高" in tight["zh"]
    hopeless = kv_cache_capacity(24, 10, 131072, 0.9, overhead_gib=30).explanation["en"]  # the overhead alone is over the GPU
    assert "plus 30.00 GiB of overhead" in hopeless and "tensor_parallel_size" not in hopeless.split("enough")[0]
    assert "Neither more GPUs nor a higher gpu_memory_utilization is enough" in hopeless
    assert kv_cache_capacity(80, 16, 131072).weights_fit is True


def test_fastdeploy_decode_budget():
    r = fastdeploy_decode_budget(17131, 0.75, 64, avg_output_tokens=2000)
    assert r.decode_tokens == int(17131 * 0.25 * 64) and r.max_num_seqs_supported == r.decode_tokens // 2000


def test_logprobs_message_sizes_match_the_faq():
    plain, mtp = logprobs_message_size(), logprobs_message_size(mtp=True)
    assert (plain.bytes, mtp.bytes) == (133136, 802840) == (LOGPROBS_MESSAGE_BYTES, LOGPROBS_MESSAGE_BYTES_MTP)
    assert not plain.fits and "kernel.msgmax=1048576" in plain.explanation["en"]
    assert logprobs_message_size(mtp=True, msgmax=1048576).fits
    assert logprobs_message_size(max_batch=1, top_logprobs=0).bytes < 8192


def test_a_request_holds_whole_blocks():
    """100 blocks of 64 "hold 98 requests of 65 tokens" by the token count, while
    blocks_needed said 98 such requests need 196 blocks (trial): each takes 2 blocks."""
    r = kv_concurrency(100, 65, 64)
    assert r.concurrent_requests == 50 and r.formula.endswith("⌈65 ÷ 64⌉ = 2, and 100 ÷ 2 → 50")
    assert blocks_needed(r.concurrent_requests, 65, 64).total_blocks <= 100 < blocks_needed(r.concurrent_requests + 1, 65, 64).total_blocks
    assert kv_concurrency(17131, 8000, 128).concurrent_requests == 271  # the README's example: 274 by tokens
    assert kv_concurrency(17131, 20000, 64).concurrent_requests == 54  # where whole blocks change nothing, nothing is added
    assert "whole blocks" not in kv_concurrency(17131, 20000, 64).formula


def test_capacity_texts_from_the_catalog_read_as_before():
    r = kv_concurrency(17131, 20000, 64, max_num_seqs=1000000)
    assert r.formula == "num_blocks × block_size ÷ tokens per request: 17131 × 64 = 1,096,384 tokens; 1,096,384 ÷ 20,000 ≈ 54.82 → 54"
    assert r.formula_zh == "num_blocks × block_size ÷ 每个请求的 token 数：17131 × 64 = 1,096,384 个 token；1,096,384 ÷ 20,000 ≈ 54.82 → 54"
    assert r.explanation == {
        "en": "The KV cache holds 1,096,384 tokens, so about 54 requests of 20,000 tokens run at once; further requests wait in the "
              "queue until blocks free up. max_num_seqs (1000000) is higher, so the KV cache, not the flag, is the limit.",
        "zh": "KV Cache 可缓存 1,096,384 个 token，平均 20,000 token 的请求同时大约能跑 54 个；更多的请求会排队，等 block 释放。"
              " max_num_seqs（1000000）比这个大，真正的上限是 KV Cache 而不是这个参数。"}
    m = logprobs_message_size(mtp=True, msgmnb=16384)
    assert m.formula.endswith("= 802,840 bytes; messages per queue = msgmnb ÷ message size: 16,384 ÷ 802,840 = 0")
    assert m.formula_zh.endswith("= 802,840 字节；每个队列能放的消息数 = msgmnb ÷ 消息大小：16,384 ÷ 802,840 = 0")
    assert m.explanation["zh"] == ("单条消息 802,840 字节，超过 kernel.msgmax（8,192），进程间通信会阻塞，请求卡住。调大限制：sysctl -w "
                                   "kernel.msgmax=1048576，sysctl -w kernel.msgmnb=268435456（Docker 中需 --privileged 或在启动参数里设置）。"
                                   " kernel.msgmnb（16,384）比一条消息还小，队列里一条都放不下：需要调大 kernel.msgmnb。")


def test_tool_modules_leave_their_words_to_the_catalog():
    import pathlib
    import re

    import assistant.tools as tools

    for path in pathlib.Path(tools.__file__).parent.glob("*.py"):
        assert not re.search(r"[\u4e00-\u9fff]", path.read_text(encoding="utf-8")), f"{path.name}: Chinese text belongs in assistant/i18n/tools.py"


@pytest.mark.parametrize("question,expected", [
    ("num_blocks_global 9000, block_size 128, 32000 tokens per request, how many concurrent?", 36),
    ("num_blocks_global: 9000，block_size 128，每个请求平均 3.2 万 token，能并发多少？", 36),
    ("17131 个 block，每个请求平均 2 万 token，实际能并发多少", 54),
    ("17131 blocks of 64 tokens with 20K-token requests, how many run concurrently", 54),
])
def test_capacity_questions_are_computed_without_an_llm(question, expected):
    call = capacity_call(question)
    assert call is not None and call.result["concurrent_requests"] == expected


def test_questions_without_all_numbers_are_not_computed():
    assert capacity_call("how many concurrent requests can FastDeploy handle") is None
    assert capacity_call("num_blocks_global is 17131, what does it mean") is None


def test_capacity_answer_in_both_languages(bundled_settings, bundled_kb):
    from assistant.answer import answer_question

    zh = answer_question("num_blocks_global: 9000，block_size 128，每个请求平均 3.2 万 token，能并发多少？", bundled_settings, kb=bundled_kb)
    en = answer_question("num_blocks_global 9000, block_size 128, 32000 tokens per request, how many concurrent?", bundled_settings, kb=bundled_kb)
    assert "计算结果" in zh.answer and "36" in zh.answer and "9000 × 128 = 1,152,000" in zh.answer
    assert "Calculation" in en.answer and "about 36 requests" in en.answer
    assert en.tool_calls[0]["name"] == "kv_concurrency" and en.grounded


# ---------------------------------------------------------------- schemas and calls

def test_schema_comes_from_signature_and_docstring():
    schema = registry()["kv_concurrency"].parameters
    assert schema["required"] == ["num_blocks", "avg_tokens_per_request"]
    assert schema["properties"]["block_size"] == {"type": "integer", "minimum": 1, "description": "tokens per block (FastDeploy's default is 64, vLLM's 16).", "default": 64}
    assert schema["additionalProperties"] is False
    host = registry()["host_status"].parameters
    assert host["properties"] == {}  # _root and friends are for tests, not for models
    desc = registry()["logprobs_message_size"].description
    assert "kernel.msgmax" in desc


def test_every_tool_has_a_description_and_an_object_schema():
    for t in registry().values():
        assert t.description and t.parameters["type"] == "object"
        assert t.openai_schema()["function"]["name"] == t.name


def test_call_tool_never_raises():
    assert "unknown tool" in call_tool("nope", {}).error
    assert "not valid JSON" in call_tool("kv_concurrency", "{oops").error
    assert "unknown argument 'blocks'" in call_tool("kv_concurrency", {"blocks": 1, "num_blocks": 1, "avg_tokens_per_request": 1}).error
    assert "must be positive" in call_tool("kv_concurrency", {"num_blocks": -1, "avg_tokens_per_request": 5}).error
    ok = call_tool("kv_concurrency", '{"num_blocks": 100, "avg_tokens_per_request": 640}')
    assert ok.error is None and ok.result["concurrent_requests"] == 10


def test_arguments_are_checked_strictly_and_explained_in_one_line_each():
    t = registry()["kv_cache_capacity"]
    ok = {"gpu_memory_gib": 80, "weights_gib": 16.5, "kv_bytes_per_token": 131072}
    assert t.problems(ok) == [] and t.problems({**ok, "max_model_len": None}) == []  # ints are numbers; null is "not given"
    assert t.problems({**ok, "kv_bytes_per_token": True}) == ["argument 'kv_bytes_per_token': expected integer, got bool"]
    assert t.problems({**ok, "kv_bytes_per_token": "3"}) == ["argument 'kv_bytes_per_token': expected integer, got str"]
    assert t.problems({**ok, "kv_bytes_per_token": 3.0}) == ["argument 'kv_bytes_per_token': expected integer, got float"]
    assert t.problems({**ok, "gpu_memory_gib": "80"}) == ["argument 'gpu_memory_gib': expected number, got str"]
    assert t.problems({**ok, "weights_gib": False}) == ["argument 'weights_gib': expected number, got bool"]
    assert t.problems({**ok, "weights_gib": 10**400}) == ["argument 'weights_gib': too large to be a number"]
    assert registry()["logprobs_message_size"].problems({"mtp": 1}) == ["argument 'mtp': expected boolean, got int"]
    assert t.problems({"weights_gib": "x", "_root": "/", "gpu_memory_gib": 1}) == [
        "missing required argument 'kv_bytes_per_token'", "argument 'weights_gib': expected number, got str",
        "unknown argument '_root' (allowed: gpu_memory_gib, weights_gib, kv_bytes_per_token, gpu_memory_utilization, "
        "max_model_len, tensor_parallel_size, overhead_gib)"]
    assert t.problems([1]) == ["arguments must be a JSON object"]
    # ranges are in the schema, but the tool checks them and names the parameter in its own words
    assert t.problems({**ok, "gpu_memory_gib": -80}) == []
    assert call_tool("kv_cache_capacity", {**ok, "gpu_memory_gib": -80}).error == "gpu_memory_gib must be positive"
    bad = call_tool("kv_concurrency", {"num_blocks": True, "avg_tokens_per_request": "20000"})
    assert bad.error == ("invalid arguments for kv_concurrency: argument 'num_blocks': expected integer, got bool; "
                         "argument 'avg_tokens_per_request': expected integer, got str") and bad.value is None


def test_a_remote_callers_hidden_parameters_are_unknown_arguments():
    from assistant.tools import remote_caller

    t = registry()["diagnose_log"]
    assert t.problems({"path": ""}) == []
    assert t.problems({"path": ""}, remote_caller("").hidden(t)) == ["unknown argument 'path' (allowed: text)"]
    assert "unknown argument 'path'" in call_tool("diagnose_log", {"text": "x", "path": ""}, caller=remote_caller("")).error


def test_tool_modules_are_found_without_a_list(tmp_path, monkeypatch):
    import pathlib

    import assistant.tools as tools

    folder = pathlib.Path(tools.__file__).parent
    public = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    assert {t.fn.__module__.rsplit(".", 1)[1] for t in registry().values() if t.fn.__module__.startswith("assistant.tools.")} == public
    package = tmp_path / "extra_tools_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_helpers.py").write_text("raise RuntimeError('plumbing modules are not imported as tool modules')\n")
    (package / "widgets.py").write_text(
        "from assistant.tools import tool\n\n"
        "@tool\ndef count_widgets_for_test(n: int) -> int:\n"
        '    """Count widgets.\n\n    Args:\n        n: how many.\n    """\n    return n\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(tools, "_REGISTRY", dict(tools._REGISTRY))
    assert tools.tool_modules("extra_tools_pkg") == ["extra_tools_pkg.widgets"]
    found = tools.registry()["count_widgets_for_test"]
    assert found.parameters["properties"] == {"n": {"type": "integer", "description": "how many."}}
    assert call_tool("count_widgets_for_test", {"n": 3}).result == 3


def test_tool_calls_carry_the_typed_value_and_json_for_everyone_else():
    from assistant.tools import ToolCall
    from assistant.tools.capacity import Concurrency

    call = call_tool("kv_concurrency", {"num_blocks": 100, "avg_tokens_per_request": 640})
    assert isinstance(call.value, Concurrency) and call.value.concurrent_requests == call.result["concurrent_requests"] == 10
    assert set(call.to_dict()) == {"name", "arguments", "result", "error", "ms"}
    json.dumps(call.to_dict())
    made = ToolCall.of("kv_concurrency", {"num_blocks": 100}, call.value, 1.5)
    assert (made.result, made.value, made.error, made.ms) == (call.result, call.value, None, 1.5)


def test_every_tool_is_declared_to_return_a_dataclass():
    import dataclasses
    import typing

    ours = [t for t in registry().values() if t.fn.__module__.startswith("assistant.tools.")]
    assert len(ours) >= 11
    for t in ours:
        returns = typing.get_type_hints(t.fn)["return"]
        assert dataclasses.is_dataclass(returns), f"{t.name} returns {returns}"


def test_slow_tool_is_cut_off():
    @tool
    def _slow_probe_for_test(seconds: float = 5.0) -> str:
        """Sleep."""
        time.sleep(seconds)
        return "done"

    started = time.monotonic()
    call = call_tool("_slow_probe_for_test", {}, timeout=0.2)
    assert "did not finish within" in call.error and time.monotonic() - started < 1.0


# ---------------------------------------------------------------- probes

def test_gpu_probe_without_a_driver_is_a_structured_result():
    report = gpu_status()
    if report.available:  # on a GPU machine this test checks the other half
        assert report.driver_version and report.gpus and report.gpus[0].memory_total_mib > 0
    else:
        assert "no NVIDIA driver found" in report.reason or "no GPU" in report.reason
        assert report.gpus == [] and report.links == []


def _fixture_root(tmp_path, msgmax=8192, shm="size=65536k", torch_cuda=None):
    root = tmp_path / "root"
    (root / "proc/sys/kernel").mkdir(parents=True)
    for name, value in (("msgmax", msgmax), ("msgmnb", 16384), ("msgmni", 32000)):
        (root / "proc/sys/kernel" / name).write_text(f"{value}\n")
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mounts").write_text(f"overlay / overlay rw 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,{shm} 0 0\n")
    (root / ".dockerenv").write_text("")
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    cuda = repr(torch_cuda) if torch_cuda else "None"
    (site / "torch/version.py").write_text(f"from typing import Optional\n__version__ = '2.9.1+cpu'\ncuda: Optional[str] = {cuda}\n")
    return root, site


def test_host_probe_reads_a_fixture_tree(tmp_path):
    root, site = _fixture_root(tmp_path)
    env = {"NCCL_P2P_DISABLE": "1", "CUDA_VISIBLE_DEVICES": "0,1", "HOME": "/home/u", "SECRET_TOKEN": "x"}
    r = host_status(_root=str(root), _environ=env, _python_paths=[str(site)])
    assert (r.msgmax, r.msgmnb, r.msgmni) == (8192, 16384, 32000)
    assert r.shm_bytes == 64 * 2**20 and r.in_container and "/.dockerenv exists" in r.container_evidence
    assert r.env == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_P2P_DISABLE": "1"}  # nothing unrelated leaks
    assert r.torch.installed and r.torch.version == "2.9.1+cpu" and r.torch.cuda is None
    assert r.hf_cache.path.endswith("home/u/.cache/huggingface")


def test_host_probe_recognises_a_cuda_torch(tmp_path):
    root, site = _fixture_root(tmp_path, torch_cuda="12.8")
    assert host_status(_root=str(root), _environ={}, _python_paths=[str(site)]).torch.cuda == "12.8"
    assert not host_status(_root=str(root), _environ={}, _python_paths=[]).torch.installed


METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 64.0
vllm:num_requests_waiting{engine="0",model_name="m"} 17.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 1.0
vllm:num_preemptions_total{engine="0",model_name="m"} 3.0
vllm:prompt_tokens_total{engine="0",model_name="m"} 12345.0
"""


class _FakeVLLM:
    def __init__(self, healthy=True, metrics=None, trickle=False):
        page = metrics if metrics is not None else METRICS

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                text = page() if callable(page) else page
                body, status = {"/health": (b"", 200 if healthy else 503), "/v1/models": (json.dumps({"data": [{"id": "Qwen/Qwen3-8B"}]}).encode(), 200),
                                "/metrics": (text.encode(), 200 if text else 404)}.get(self.path, (b"", 404))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if trickle and self.path == "/metrics":
                    try:
                        for byte in body:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:
                        pass
                    return
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_serving_probe_reads_metrics_and_points_at_the_hung_requests_article():
    fake = _FakeVLLM()
    try:
        r = serving_status(fake.url + "/v1")
    finally:
        fake.close()
    assert r.healthy and r.models == ["Qwen/Qwen3-8B"]
    assert (r.running, r.waiting, r.kv_cache_usage, r.preemptions) == (64.0, 17.0, 1.0, 3.0)
    critical = [f for f in r.findings if f.severity == "critical"]
    assert critical and critical[0].article == "vllm-requests-hang" and "17 requests waiting" in critical[0].message
    # Preemptions point at the preemption article, not the OOM one (newcomer), and every
    # article a finding names is one the bundled KB has.
    # A counter since start is said as one, at info: 200 preemptions a week ago kept doctor
    # failing (trial); a second probe says how many came since the first.
    preempted = next(f for f in r.findings if "preemptions since the server started" in f.message)
    assert preempted.article == "vllm-preemption" and preempted.severity == "info"
    kb_ids = {p.stem for p in (Path(__file__).resolve().parent.parent / "kb" / "en").glob("*.md")}
    assert {f.article for f in r.findings if f.article} <= kb_ids


def test_serving_metrics_over_engines_and_names_and_odd_samples():
    """Two data-parallel engines at 60% read "KV cache 120% full", and the deprecated name
    beside the new one was added to it; NaN and Inf became findings; a `}` inside a quoted
    label value hid its series (trial)."""
    dp = ('vllm:kv_cache_usage_perc{engine="0"} 0.5\nvllm:kv_cache_usage_perc{engine="1"} 0.6\n'
          'vllm:num_requests_waiting{engine="0"} 20\nvllm:num_requests_waiting{engine="1"} 20\n')
    assert parse_metrics(dp) == {"kv_cache_usage": 0.6, "waiting": 40.0}
    both = "vllm:gpu_cache_usage_perc 0.6\nvllm:kv_cache_usage_perc 0.6\nvllm:num_preemptions_total 5\nvllm:num_preemptions 5\n"
    assert parse_metrics(both) == {"kv_cache_usage": 0.6, "preemptions": 5.0}
    from assistant.tools.serving import read_metrics

    odd = read_metrics('vllm:kv_cache_usage_perc NaN\nvllm:num_requests_waiting +Inf\n'
                       'vllm:num_requests_running{model_name="a}b",x="q\\"{"} 7\n')
    assert odd.values == {"running": 7.0} and odd.skipped == 2
    fake = _FakeVLLM(metrics=dp)
    try:
        r = serving_status(fake.url)
    finally:
        fake.close()
    # half-full engines with a queue: the batch ceiling, not "KV cache full"
    assert not [f for f in r.findings if f.severity == "critical"] and any("max-num-seqs" in f.message for f in r.findings)


def test_unreadable_metrics_and_a_growing_counter_are_said(bundled_settings):
    """/metrics answering 404 or trickling left doctor at "ok … running None" (trial)."""
    from assistant.ops.doctor import run_doctor

    missing = _FakeVLLM(metrics="")
    try:
        r = serving_status(missing.url)
        doctor = [f for f in run_doctor(bundled_settings, serving_url=missing.url) if f.source == "serving"]
    finally:
        missing.close()
    assert r.metrics_error == "HTTP 404" and r.findings[0].severity == "warning" and "could not read" in r.findings[0].message
    assert any(f.severity == "ok" and "running ?, waiting ?" in f.message for f in doctor) and not any("None" in f.message for f in doctor)
    slow = _FakeVLLM(metrics=METRICS, trickle=True)
    try:
        started = time.monotonic()
        r = serving_status(slow.url, timeout_s=1)
        assert time.monotonic() - started < 4
    finally:
        slow.close()
    assert r.healthy and r.models == ["Qwen/Qwen3-8B"] and r.metrics_error == "timed out"
    reads = iter(range(150, 10_000, 50))
    growing = _FakeVLLM(metrics=lambda: f"vllm:num_preemptions_total {next(reads)}\n")
    try:
        r = serving_status(growing.url)
    finally:
        growing.close()
    # read twice a second apart within one probe: each `assistant doctor` is a new process (review)
    grew = next(f for f in r.findings if f.article == "vllm-preemption")
    assert grew.severity == "warning" and grew.message.startswith("50 preemptions in the last 1 s")


def test_address_mistakes_are_said_as_such_not_as_a_hung_server():
    """A name that does not resolve, or TLS against a plain-HTTP port, was "critical: health
    check failed" with the hung-requests article (trial)."""
    fake = _FakeVLLM()
    try:
        tls = serving_status(fake.url.replace("http://", "https://"), timeout_s=2)
    finally:
        fake.close()
    assert [(f.severity, f.article) for f in tls.findings] == [("warning", None)]
    assert "did not complete a TLS handshake" in tls.findings[0].message and "use http://" in tls.findings[0].message
    # OpenSSL 3.2 and later word it "record layer failure" (review)
    import ssl

    from assistant.tools.serving import ADDRESS_PROBLEM, _unreachable

    later = _unreachable(urllib.error.URLError(ssl.SSLError(1, "[SSL] record layer failure (_ssl.c:1000)")), "https://h:8000")
    assert later.startswith(ADDRESS_PROBLEM) and "use http://" in later
    dns = serving_status("http://vllm-typo.invalid:8000", timeout_s=2)
    assert [(f.severity, f.article) for f in dns.findings] == [("warning", None)] and "does not resolve" in dns.findings[0].message


def test_serving_probe_on_a_dead_or_sick_server():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = serving_status(f"http://127.0.0.1:{port}", timeout_s=1)
    assert dead.healthy is False and dead.health_error.startswith("connection refused")
    # Nothing listening is a server that is not running, not one that hangs: no hung-requests article.
    assert [f.article for f in dead.findings] == [None] and "not running" in dead.findings[0].message
    sick = _FakeVLLM(healthy=False)
    try:
        sick_report = serving_status(sick.url)
        assert sick_report.health_error == "HTTP 503" and sick_report.findings[0].article == "vllm-requests-hang"
    finally:
        sick.close()
    assert parse_metrics("vllm:gpu_cache_usage_perc 0.5\ngarbage line\n") == {"kv_cache_usage": 0.5}


def test_a_server_that_answers_404_on_health_is_the_wrong_address_not_a_hung_vllm(bundled_settings, tmp_path):
    """/health answering 404 (another server, or the wrong port or path) was reported as
    "health check failed: HTTP 404" with the KV-cache article for hung requests."""
    from http.server import SimpleHTTPRequestHandler

    from assistant.ops.doctor import run_doctor

    (tmp_path / "index.html").write_text("<p>not vLLM</p>", encoding="utf-8")

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        report = serving_status(url, timeout_s=2)
        doctor = [f for f in run_doctor(bundled_settings, serving_url=url) if f.source == "serving"]
    finally:
        server.shutdown()
        server.server_close()
    assert report.healthy is False and report.health_error == "HTTP 404"
    assert [f.article for f in report.findings] == [None]
    assert "not a vLLM or FastDeploy server, or the URL or port is wrong" in report.findings[0].message
    assert [(f.severity, f.article) for f in doctor] == [("warning", None)] and "HTTP 404" in doctor[0].message


VLLM_LOG = """INFO 11-30 10:01:02 [gpu_model_runner.py:1811] Model loading took 14.99 GiB and 6.2 seconds
INFO 11-30 10:01:09 [kv_cache_utils.py:868] GPU KV cache size: 158,816 tokens
INFO 11-30 10:01:09 [kv_cache_utils.py:872] Maximum concurrency for 32,768 tokens per request: 4.85x
ERROR 11-30 10:07:33 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB
ERROR 11-30 10:07:33 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.
"""


def test_log_diagnosis_on_a_vllm_log(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_LOG)
    r = diagnose_log(path=str(log))
    assert r.findings[0].article == "vllm-cuda-oom" and r.findings[0].severity == "critical" and r.findings[0].count == 2
    assert r.findings[0].first_line == 4
    assert r.numbers["kv_cache_tokens"] == 158816 and r.numbers["max_concurrency_x"] == 4.85
    assert any("4.85x" in c["en"] for c in r.computed)


def test_log_diagnosis_on_a_fastdeploy_worker_log():
    text = "INFO num_blocks_global: 17131\nneed_block_len: 1， free_list_len: 0\nstep max_id: 2， max_num: 133， encoder block len: 24\n"
    r = diagnose_log(text=text)
    assert r.findings[0].signature == "free_list_len: 0" and r.findings[0].article == "fastdeploy-oom-while-serving"
    assert r.numbers["num_blocks_global"] == 17131 and "1,096,384" in r.computed[0]["en"]


def test_ask_with_a_log_file_names_the_article(bundled_env, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_LOG)
    proc = run_cli(["ask", "--json", "--log", str(log), "what happened?"], bundled_env)
    data = json.loads(proc.stdout)
    assert data["grounded"] and data["citations"][0]["id"] == "vllm-cuda-oom"
    assert data["tool_calls"][0]["name"] == "diagnose_log" and "Log findings" in data["answer"]


def test_ask_with_a_log_longer_than_the_read_window_cites_the_line_in_the_file(bundled_env, tmp_path):
    """`ask --log` counted from where the last 2 MB began (line 9,611 for line 30,002), as the
    tool and `doctor --log` did before."""
    rows = [f"INFO 11-30 02:17:46 [engine.py:160] step {i}: running, nothing to see here, padding padding" for i in range(1, 40_001)]
    rows[30_001] = "WARNING 11-30 02:17:46 [scheduler.py:1] Waiting for free blocks in KV cache"
    log = tmp_path / "big.log"
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    proc = run_cli(["ask", "--json", "--log", str(log), "what happened?"], bundled_env)
    assert "line 30002" in json.loads(proc.stdout)["answer"]



def test_a_log_piped_in_with_log_dash_is_diagnosed_and_its_lines_counted(bundled_env):
    """On call the log comes from a pipe (`kubectl logs pod | ask --log - "why"`): `--log`
    wanted a regular file, so it had to be saved first, and `ask -` read only its last 8 kB."""
    proc = run_cli(["ask", "--json", "--log", "-", "what happened?"], bundled_env, stdin=VLLM_LOG.encode())
    data = json.loads(proc.stdout)
    assert data["grounded"] and data["citations"][0]["id"] == "vllm-cuda-oom"
    assert data["tool_calls"][0]["name"] == "diagnose_log" and "Log findings" in data["answer"]
    # Longer than the read window: the tail is kept and a finding keeps its line in the log.
    rows = [f"INFO 11-30 02:17:46 [engine.py:160] step {i}: running, nothing to see here, padding padding" for i in range(1, 40_001)]
    rows[30_001] = "WARNING 11-30 02:17:46 [scheduler.py:1] Waiting for free blocks in KV cache"
    proc = run_cli(["ask", "--json", "--log", "-", "what happened?"], bundled_env, stdin=("\n".join(rows) + "\n").encode())
    data = json.loads(proc.stdout)
    assert "line 30002" in data["answer"] and any("MB" in n for n in data["notes"])
    # Only the question's words: stdin cannot carry both.
    both = run_cli(["ask", "--log", "-", "-"], bundled_env, stdin=VLLM_LOG.encode())
    assert both.returncode == 2 and b"not both" in both.stderr and b"Traceback" not in both.stderr


def test_a_stream_is_read_to_its_end_holding_only_its_tail():
    import io

    from assistant.tools.logs import read_tail_stream

    data = b"".join(f"line {i}\n".encode() for i in range(1, 100_001))  # 1.2 MB in 1 MB reads
    text, skipped, first = read_tail_stream(io.BytesIO(data), limit=1000)
    assert text.endswith("line 100000\n") and len(text) <= 1000 and skipped == len(data) - len(text.encode())
    assert text.split("\n", 1)[0].endswith(str(first))  # the first kept line is numbered by what was passed over
    assert read_tail_stream(io.BytesIO(b"short log\n"))[1:] == (0, 1)
    with pytest.raises(ValueError, match="binary"):
        read_tail_stream(io.BytesIO(b"\x00" * 5000))

    class Zeros(io.RawIOBase):  # /dev/zero: refused at its first block, not read forever
        def readable(self):
            return True

        def readinto(self, b):
            b[:] = bytes(len(b))
            return len(b)

    with pytest.raises(ValueError, match="binary"):
        read_tail_stream(io.BufferedReader(Zeros()))


def test_a_crash_is_seen_whatever_its_exception_and_process_tag(bundled_settings):
    """A trial's real logs: a traceback ending in a ValueError, a crash behind vLLM's
    "(EngineCore pid=N)" tag or torch's "[rank0]:", an AssertionError with no message were
    no finding at all, and `ask --log` answered from the question alone."""
    from assistant.tools.logs import diagnose_text, is_crash_line

    def top(log):
        findings = diagnose_text(log, bundled_settings).findings
        return (findings[0].severity, findings[0].fatal, findings[0].article, findings[0].signature) if findings else None

    awq = ('Traceback (most recent call last):\n  File "/usr/lib/python3.10/dist-packages/vllm/config.py", line 203, in _verify\n'
           "    raise ValueError(\nValueError: The quantization method awq is not supported for the current GPU. "
           "Minimum capability: 75. Current capability: 70.\n")
    assert top(awq)[:3] == ("critical", True, "") and top(awq)[3].startswith("ValueError: The quantization method awq")
    tagged = top("(EngineCore pid=1426191) torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n")
    assert tagged[:2] == ("critical", True) and tagged[3].startswith("torch.AcceleratorError")
    assert top("[rank0]: RuntimeError: NCCL error: unhandled system error\n")[:2] == ("critical", True)
    # The tag keeps a frame's indent: a crash through torch's graph replay names the CUDA-graph article, as one.
    graph = ('(EngineCore pid=7)   File "/usr/lib/python3/torch/cuda/graphs.py", line 139, in replay\n(EngineCore pid=7)     super().replay()\n'
             "(EngineCore pid=7) torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n")
    assert top(graph)[:3] == ("critical", True, "vllm-cuda-graph-errors")
    assert top("(VllmWorker TP1 pid=88) ERROR 05-16 07:10:58 [core.py:398] AssertionError\n")[:4] == ("critical", True, "", "AssertionError")
    assert is_crash_line("(EngineCore_0 pid=679800) ERROR 08-22 [core.py:632] torch.OutOfMemoryError: CUDA out of memory.")
    # Start-up failing, the cause in another file: FastDeploy's engine says so at ERROR with no exception.
    assert top("ERROR    2025-08-01 13:47:52,704 3233322 engine.py[line:206] Failed to launch worker processes, "
               "check log/workerlog.* for more details.\n")[:3] == ("critical", True, "")
    # A request the server refused is no crash, tagged or bare.
    assert not is_crash_line("ValueError: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens")
    assert not is_crash_line("(APIServer pid=1) INFO 08-22 [api_server.py:1] vLLM API server version 0.10.1")
    # Lines as `grep -n` counts them: a progress bar's \r is no new line; a CRLF log reads the same.
    bars = "Loading shards:  0%\rLoading shards: 50%\rLoading shards: 100%\n"
    oom = "ERROR 05-12 11:00:00 [engine.py:448] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.\n"
    assert diagnose_text(bars + oom, bundled_settings).findings[0].first_line == 2
    assert diagnose_text((bars + oom).replace("\n", "\r\n"), bundled_settings).findings[0].first_line == 2


def test_a_piped_question_of_one_long_line_or_binary_is_answered_or_refused_at_once(bundled_env):
    """A one-line input over a megabyte became an empty question; `cat /dev/zero | ask -` read
    until it was killed (review)."""
    long_line = ("why does vllm hang " * 80_000 + "\n").encode()
    proc = run_cli(["ask", "--json", "-"], bundled_env, stdin=long_line)
    assert proc.returncode == 0 and "on one line" in " ".join(json.loads(proc.stdout)["notes"])
    proc = run_cli(["ask", "-"], bundled_env, stdin=b"\x00" * 3_000_000)
    assert proc.returncode == 2 and b"binary" in proc.stderr


def test_a_piped_question_longer_than_a_megabyte_keeps_its_end(bundled_env):
    """`cat server.log | ask -` read the first megabyte of a 1.5 MB log and answered from that
    part's last lines: the crash at its end was never read (trial)."""
    rows = [f"INFO 11-30 02:17:46 [loggers.py:116] Avg prompt throughput: {i}.0 tokens/s, padding padding padding" for i in range(16_000)]
    log = "\n".join(rows) + "\nERROR 11-30 03:00:00 [core.py:632] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.\n"
    assert len(log) > 1_400_000
    proc = run_cli(["ask", "--json", "-"], bundled_env, stdin=log.encode())
    data = json.loads(proc.stdout)
    assert data["citations"][0]["id"] == "vllm-cuda-oom", data["answer"][:300]
    assert any(f"the input is {len(log)} bytes" in n for n in data["notes"])


def test_a_traceback_printed_for_one_request_is_no_crash(bundled_settings):
    """Any bare exception line was taken for the process dying (review): a client gone
    (CancelledError under "Exception in ASGI application", ConnectionResetError) or a chat
    template refusing one request is a warning; a start-up ValueError is still the crash."""
    from assistant.tools.logs import diagnose_text

    def top(log):
        f = diagnose_text(log, bundled_settings).findings[0]
        return f.severity, f.fatal

    asgi = ('ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n  File "x.py", line 1, in f\n'
            "    await x\nasyncio.exceptions.CancelledError\nINFO:     127.0.0.1 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n")
    assert top(asgi) == ("warning", False)
    assert top("ConnectionResetError: [Errno 104] Connection reset by peer\n") == ("warning", False)
    template = ("ERROR 10-02 09:00:00 [serving_chat.py:200] Error in preprocessing prompt inputs\nTraceback (most recent call last):\n"
                '  File "x", line 1\njinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant\n')
    assert top(template) == ("warning", False)
    startup = 'Traceback (most recent call last):\n  File "/usr/lib/python3/vllm/config.py", line 203\nValueError: The quantization method awq is not supported for the current GPU.\n'
    assert top(startup) == ("critical", True)
    assert top(template + "INFO 10-02 09:01:00 [api_server.py:1] shutting down\n" + startup) == ("critical", True)


def test_a_log_appended_across_restarts_keeps_its_last_runs_settings(tmp_path):
    """The head's args line was put before a tail that has its own run's args line, and the
    first value read won: 65536 and 0.9 reported where the last run used 32768 and 0.95 (review)."""
    from assistant.tools.logs import diagnose_log, startup_lines

    first = "INFO 05-12 10:01:03 [cli_args.py:309] non-default args: {'max_model_len': 65536, 'gpu_memory_utilization': 0.9}\n"
    again = "INFO 05-12 12:01:03 [cli_args.py:309] non-default args: {'max_model_len': 32768, 'gpu_memory_utilization': 0.95}\n"
    body = "".join(f"INFO 05-12 10:02:00 [loggers.py:111] Avg prompt throughput: {i} tokens/s\n" for i in range(60_000))
    log = tmp_path / "restarts.log"
    log.write_text(first + body + again + "INFO started\n")
    assert diagnose_log(path=str(log)).settings["--max-model-len"] == "32768"
    platform = "INFO 05-12 10:01:02 [__init__.py:239] Automatically detected platform rocm.\n"
    assert len(startup_lines((platform + first).encode())) == 2  # a head ending on a whole line keeps its last


def test_a_long_logs_tail_keeps_its_start_up_lines(bundled_settings, tmp_path):
    """A ROCm log over 2 MB lost its "detected platform rocm" line to the tail, and its OOM was
    answered with nvidia-smi checks; the args line, printed once at start-up, was lost too.
    The lines of the tail keep their numbers in the log."""
    import io

    from assistant.tools.logs import diagnose_log, diagnose_text, read_tail_stream

    start = ("INFO 05-12 10:01:02 [__init__.py:239] Automatically detected platform rocm.\n"
             "INFO 05-12 10:01:03 [api_server.py:1043] vLLM API server version 0.8.5\n"
             "INFO 05-12 10:01:03 [cli_args.py:309] non-default args: {'max_model_len': 65536, 'gpu_memory_utilization': 0.95}\n")
    body = "".join(f"INFO 05-12 10:02:00 [loggers.py:111] Avg prompt throughput: {i} tokens/s\n" for i in range(60_000))
    oom = "ERROR 05-12 11:00:00 [engine.py:448] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.\n"
    log = tmp_path / "rocm.log"
    log.write_text(start + body + oom)
    assert log.stat().st_size > 2_000_000
    report = diagnose_log(path=str(log))
    assert report.unread_bytes > 0 and report.platform == "amd"
    assert report.settings.get("--gpu-memory-utilization") == "0.95"
    oom_finding = next(f for f in report.findings if f.article == "vllm-cuda-oom")
    assert oom_finding.first_line == 3 + 60_000 + 1  # its line in the whole file
    text, skipped, first = read_tail_stream(io.BytesIO((start + body + oom).encode()))
    assert skipped > 0 and text.startswith("INFO 05-12 10:01:02") and "non-default args" in text
    piped = diagnose_text(text, bundled_settings, first)
    assert piped.platform == "amd" and next(f for f in piped.findings if f.article == "vllm-cuda-oom").first_line == 60_004
    # A log whose start the tail reaches is read as it is.
    assert read_tail_stream(io.BytesIO(start.encode()))[0] == start


PRELUDE_THEN_OOM = (
    "WARNING 12-01 10:00:05 [scheduler.py:1000] Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode "
    "because there is not enough KV cache space.\n"
    "ERROR 12-01 10:01:00 [engine.py:300] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
)


def test_ask_with_a_log_leads_with_its_most_severe_finding_unless_asked_about_another(bundled_env, tmp_path):
    """A preemption warning before a CUDA OOM led the answer while the log findings (and
    `doctor --log`) led with the OOM. `ask --log FILE` with no question answers the log."""
    log = tmp_path / "vllm.log"
    log.write_text(PRELUDE_THEN_OOM)

    def first(*words: str) -> str:
        proc = run_cli(["ask", "--json", "--log", str(log), *words], bundled_env, stdin=b"")
        assert proc.returncode == 0, proc.stderr.decode()
        return json.loads(proc.stdout)["citations"][0]["id"]

    assert first("what is wrong with my server?") == "vllm-cuda-oom"
    assert first() == "vllm-cuda-oom"
    assert first("why are my requests preempted?") == "vllm-preemption"

def test_a_binary_file_is_not_read_as_a_log(tmp_path):
    """Junk passed as a log was scanned and reported as a log with nothing in it."""
    import random

    from assistant.tools.logs import read_tail

    junk = tmp_path / "core.bin"
    junk.write_bytes(random.Random(7).randbytes(4000))
    with pytest.raises(ValueError, match="looks like binary data"):
        read_tail(str(junk))
    gbk = tmp_path / "gbk.log"  # a log in another encoding, with colours, is still a log
    gbk.write_bytes("错误：显存不足\n\x1b[31mERROR\x1b[0m CUDA out of memory\n".encode("gbk"))
    assert "CUDA out of memory" in read_tail(str(gbk))


def test_doctor_json_and_exit_code(bundled_env, tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("need_block_len: 1， free_list_len: 0\n")
    proc = run_cli(["assistant", "doctor", "--json", "--log", str(log)], bundled_env)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["needs_attention"] is True
    first = data["findings"][0]
    assert first["severity"] == "critical" and first["article"] == "fastdeploy-oom-while-serving" and first["title"]
    severities = [f["severity"] for f in data["findings"]]
    order = {"critical": 0, "warning": 1, "info": 2, "ok": 3}
    assert severities == sorted(severities, key=order.get)


def test_doctor_takes_a_serving_address_without_its_scheme(bundled_env):
    """`--serving-url localhost:8000`, as people type it, was a finding that the URL must
    start with http://, not a probe of the server."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run_cli(["assistant", "doctor", "--json", "--serving-url", f"127.0.0.1:{port}"], bundled_env)
    serving = [f for f in json.loads(proc.stdout)["findings"] if f["source"] == "serving"]
    assert serving and "must start with" not in serving[0]["message"]
    assert f"no server answers at http://127.0.0.1:{port}" in serving[0]["message"]


def test_doctor_reads_the_probes_typed_results(tmp_path, monkeypatch):
    import assistant.ops.doctor as doctor
    from assistant.ops.doctor import _gpu_findings, _host_findings, _log_findings, _serving_findings
    from assistant.tools.gpu import GPUInfo, GPULink, GPUProcess, GPUReport
    from assistant.tools.serving import ServingFinding, ServingReport

    root, site = _fixture_root(tmp_path)
    host = host_status(_root=str(root), _environ={"NCCL_P2P_DISABLE": "1", "HOME": "/nowhere"}, _python_paths=[str(site)])
    # Every stock kernel has msgmax 8192: without FastDeploy on the host that is information
    # (a vLLM-only host can still exit 0); with it, a warning.
    found = {(f.severity, f.article): f.message for f in _host_findings(host)}
    assert found["info", "fastdeploy-logprobs-hang"].endswith("if this host runs FastDeploy")
    assert ("ok", None) not in found  # not "ok kernel.msgmax=8192" beside "raise it" (newcomer)
    monkeypatch.setattr(doctor, "_fastdeploy_installed", lambda: True)
    found = {(f.severity, f.article): f.message for f in _host_findings(host)}
    assert "FastDeploy with logprobs sends 133,136 (802,840 with MTP) and hangs" in found["warning", "fastdeploy-logprobs-hang"]
    assert found["warning", "vllm-nccl-error-multi-gpu"].startswith("/dev/shm is 64 MiB inside a container")
    assert "CPU-only build" in found["critical", "vllm-torch-not-compiled-with-cuda"]
    assert "NCCL_P2P_DISABLE=1 is set" in found["info", "vllm-nccl-error-multi-gpu"]
    assert found["info", None].startswith("kernel.msgmax=")  # the summary is not "ok" beside those warnings
    # msgmax raised and msgmnb left at 16,384: a queue holds no message at all, still a hang (trial)
    host.msgmax, host.shm_bytes = 802840, 64 * 2**20 + 1
    (hang,) = [f for f in _host_findings(host) if f.article == "fastdeploy-logprobs-hang"]
    assert hang.severity == "warning" and hang.message.startswith("kernel.msgmnb is 16,384 bytes")
    assert "kernel.msgmnb=268435456" in hang.message and "kernel.msgmax is" not in hang.message
    host.msgmnb = 802840  # the limits themselves: no warning
    assert not [f for f in _host_findings(host) if f.article in ("fastdeploy-logprobs-hang", "vllm-nccl-error-multi-gpu")
                and f.severity == "warning"]
    gpu = GPUReport(True, None, "550.1", "12.4", [GPUInfo(0, "H100", 75000.0, 80000.0, 93.8, 99, 60, 2, [GPUProcess(7, 1.0)])],
                    [GPULink(0, 1, "SYS", 0, "not supported (status 2)")])
    assert [(f.severity, f.message) for f in _gpu_findings(gpu)] == [
        ("ok", "driver 550.1, CUDA 12.4, 1 GPU(s)"),
        ("critical", "GPU 0 has 2 uncorrected ECC errors: take it out of service"),
        ("warning", "GPU 0 (H100) memory 94% used (1 process): little headroom left"),
        ("warning", "GPU 0↔1 (SYS): peer-to-peer not supported (status 2)")]
    assert _gpu_findings(GPUReport(False, "no NVIDIA driver found (x)"))[0].message == "no NVIDIA driver found (x)"
    serving = ServingReport("http://h:8000", True, models=["m"], running=2.0, waiting=0.0, kv_cache_usage=0.5,
                            findings=[ServingFinding("warning", "KV cache 95% full", "vllm-requests-hang")])
    assert [(f.severity, f.message, f.article) for f in _serving_findings(serving)] == [
        ("warning", "KV cache 95% full", "vllm-requests-hang"),
        ("ok", "http://h:8000 healthy; models m; running 2, waiting 0, KV cache 50%", None)]
    log = diagnose_log(text="INFO num_blocks_global: 17131\nneed_block_len: 1， free_list_len: 0\n")
    assert [(f.severity, f.article) for f in _log_findings(log)][:1] == [("critical", "fastdeploy-oom-while-serving")]
    assert any("1,096,384" in f.message for f in _log_findings(log))
    # A log with no signature says so, and a stalled engine's stats are a warning, not silence (trial)
    stalled = diagnose_log(text="INFO 12-05 23:40:01 [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                                "Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 57 reqs, GPU KV cache usage: 0.0%\n")
    assert [(f.severity, f.source) for f in _log_findings(stalled)] == [("warning", "log")]
    assert "[loggers.py:116]" in _log_findings(stalled)[0].message
    quiet = diagnose_log(text="INFO 12-05 23:40:01 [api_server.py:1] Started server process\n")
    assert [(f.severity, f.message) for f in _log_findings(quiet)] == [("ok", "no known failure signature in 1 lines")]


def test_a_doctor_log_finding_quotes_what_it_matched_and_cuts_at_a_word():
    """"because there is not enough KV cache space × 1 (first at line 2): … mode because there i"
    read as a sentence starting and ending mid-word."""
    from assistant.ops.doctor import _log_findings
    from assistant.tools.logs import diagnose_log

    line = ("WARNING 05-09 00:50:01 scheduler.py:1057 Sequence group 12 is preempted by PreemptionMode.RECOMPUTE mode "
            "because there is not enough KV cache space. This can affect the end-to-end performance.")
    (finding,) = [f for f in _log_findings(diagnose_log("INFO start\n" + line + "\n")) if f.article == "vllm-preemption"]
    assert finding.message.startswith("“") and "” × 1 (first at line 2): WARNING" in finding.message
    assert finding.message.endswith(" …") and not finding.message.endswith("there i …")


def test_tools_from_the_cli(bundled_env, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_31_8B))
    listing = run_cli(["assistant", "tools"], bundled_env).stdout.decode()
    assert "kv_concurrency num_blocks=<integer> avg_tokens_per_request=<integer>" in listing
    proc = run_cli(["assistant", "tool", "kv_bytes_per_token", f"config_path={tmp_path}"], bundled_env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["bytes_per_token"] == 131072
    proc = run_cli(["assistant", "tool", "kv_concurrency", '{"num_blocks": 17131, "avg_tokens_per_request": 20000}'], bundled_env)
    assert json.loads(proc.stdout)["concurrent_requests"] == 54
    bad = run_cli(["assistant", "tool", "kv_concurrency", "num_blocks=many"], bundled_env)
    # Bad input, exit 2 as for `ask` (it was 1, as for a tool that ran and failed: newcomer).
    assert bad.returncode == 2 and bad.stderr.decode().startswith("error: invalid arguments") and "Traceback" not in bad.stderr.decode()
    assert run_cli(["assistant", "tool", "nope"], bundled_env).returncode == 2
    # A value the tool itself refuses is the caller's input too (it exited 1, as for a tool that failed; trial)
    zero = run_cli(["assistant", "tool", "kv_concurrency", "num_blocks=0", "avg_tokens_per_request=2000"], bundled_env)
    assert zero.returncode == 2 and "num_blocks must be positive" in zero.stderr.decode()


def test_vllm_concurrency_from_kv_tokens_counts_whole_blocks():
    """vLLM V1 divides whole blocks by the blocks a request takes: 458,752 tokens hold 455.11
    requests of 1,000 tokens, which the tool said vLLM prints as 458.75x (trial)."""
    r = kv_tokens_concurrency(458752, 1000)
    assert (r.exact, r.concurrent_requests) == (455.11, 455) and "28,672 blocks" in r.formula
    assert kv_tokens_concurrency(458752, 32768).exact == 14.0  # a multiple of the block: the plain division
    assert kv_tokens_concurrency(458752, 300, block_size=32).concurrent_requests == 1433


def test_a_request_larger_than_the_whole_kv_cache_never_runs():
    """"about 0 requests … further requests wait in the queue until blocks free up" (trial)."""
    r = kv_concurrency(2048, 40000, block_size=16)
    assert r.concurrent_requests == 0 and r.limited_by == "too_long"
    assert "never runs" in r.explanation["en"] and "永远排不上" in r.explanation["zh"] and "wait in the queue" not in r.explanation["en"]


def test_a_float32_config_gets_the_16_bit_kv_cache_vllm_serves_it_with(tmp_path):
    """--dtype auto serves a float32 checkpoint in 16 bits, and the KV cache follows: 256 KiB
    per token was twice vLLM's figure (trial). Asked for float32 explicitly, 4 bytes stay."""
    config = {**LLAMA_31_8B, "torch_dtype": "float32"}
    assert kv_bytes_per_token(config_json=json.dumps(config)).bytes_per_token == 131072
    assert kv_bytes_per_token(config_json=json.dumps(config), dtype="float32").bytes_per_token == 262144


def test_no_utilization_is_suggested_that_leaves_nothing_for_activations():
    """14.18 GiB of weights on a T4 (15 GiB): "0.96 or more would also leave room" left 0.006
    GiB for activations and CUDA graphs (trial). Above 0.95 no utilization is offered."""
    t4 = kv_cache_capacity(15.0, 14.18, 57344, 0.9, max_model_len=4096)
    assert t4.weights_fit is False and "gpu_memory_utilization of" not in t4.explanation["en"]
    assert "tensor_parallel_size 2" in t4.explanation["en"]


CRASH_LOG = """INFO 11-30 02:10:40 [kv_cache_utils.py:634] GPU KV cache size: 412,528 tokens
WARNING 11-30 02:16:11 [serving_chat.py:201] Waiting for free blocks in KV cache
ERROR 11-30 02:17:45 [engine.py:160] RuntimeError: CUDA error: an illegal memory access was encountered
ERROR 11-30 02:17:45 [engine.py:160] Traceback (most recent call last):
ERROR 11-30 02:17:45 [engine.py:160]   File "/usr/lib/python3/dist-packages/vllm/worker/model_runner.py", line 2003, in forward
ERROR 11-30 02:17:45 [engine.py:160]     self.graph.replay()
ERROR 11-30 02:17:45 [engine.py:160] RuntimeError: CUDA error: an illegal memory access was encountered
CRITICAL 11-30 02:17:46 [launcher.py:99] MQLLMEngine is already dead, terminating server process
"""


def test_a_crash_outranks_the_warnings_before_it_even_without_a_kb_signature(bundled_env, tmp_path):
    """The engine died of a CUDA error after an hour of 'Waiting for free blocks': the log
    findings and the answer led with the KV-cache warning, and the crash (no KB signature)
    was not listed at all."""
    r = diagnose_log(text=CRASH_LOG)
    assert [(f.fatal, f.article) for f in r.findings[:3]] == [(True, ""), (True, "vllm-cuda-graph-errors"), (True, "")]
    assert r.findings[0].signature == "RuntimeError: CUDA error: an illegal memory access was encountered" and r.findings[0].count == 2
    assert r.findings[2].signature == "MQLLMEngine is already dead, terminating server process"
    assert r.findings[3].article == "vllm-requests-hang" and not r.findings[3].fatal
    log = tmp_path / "server.log"
    log.write_text(CRASH_LOG)
    data = json.loads(run_cli(["ask", "--json", "--log", str(log)], bundled_env).stdout)
    assert data["citations"][0]["id"] == "vllm-cuda-graph-errors" and "no KB article on it" in data["answer"]
    # Without the CUDA-graph frame, the crash is one the KB never words: no article explains it
    # (the forked-CUDA article answered it, for sharing "RuntimeError" and "CUDA error").
    log.write_text("\n".join(line for line in CRASH_LOG.splitlines() if "graph" not in line))
    bare = json.loads(run_cli(["ask", "--json", "--log", str(log)], bundled_env).stdout)
    assert bare["grounded"] is False and "no KB article on it" in bare["answer"]


def test_the_sixty_second_broadcast_warning_points_at_the_debug_switches(bundled_kb):
    """Workers printing the shared-memory broadcast warning every minute are stuck or busy
    somewhere: the article that finds where, in both of vLLM's wordings of the message."""
    for line in ("(VllmWorkerProcess pid=3253) WARNING 08-13 11:31:37 shm_broadcast.py:386] No available block found in 60 second",
                 "(EngineCore pid=395) INFO 07-12 02:35:01 [shm_broadcast.py:705] No available shared memory broadcast block "
                 "found in 60 seconds. This typically happens when some processes are hanging or doing some "
                 "time-consuming work (e.g. compilation, weight/kv cache quantization)."):
        r = diagnose_text((line + "\n") * 3, kb=bundled_kb)
        assert r.findings and r.findings[0].article == "vllm-debug-switches" and r.findings[0].count == 3


def test_a_healthy_log_is_not_answered_with_an_article_and_a_long_one_says_what_was_not_read(bundled_env, tmp_path):
    healthy = tmp_path / "healthy.log"
    healthy.write_text("INFO 11-30 02:10:40 [kv_cache_utils.py:634] GPU KV cache size: 412,528 tokens\n"
                       "INFO 11-30 02:11:02 [launcher.py:28] Route: /v1/chat/completions, Methods: POST\n" * 3)
    data = json.loads(run_cli(["ask", "--json", "--log", str(healthy)], bundled_env).stdout)
    assert data["grounded"] is False and data["citations"] == [] and "No failure signature" in data["answer"]
    empty = tmp_path / "empty.log"
    empty.write_text("")
    data = json.loads(run_cli(["ask", "--json", "--log", str(empty)], bundled_env).stdout)
    assert data["grounded"] is False and "(0 lines)" in data["answer"]  # an empty log was answered with the debug-switches article
    big = tmp_path / "big.log"
    big.write_text("ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
                   + "INFO 11-30 02:11:02 [metrics.py:455] Running: 1 reqs\n" * 60_000)
    proc = run_cli(["ask", "--json", "--log", str(big), "what happened?"], bundled_env)
    assert any("only its last 2.0 MB was read" in n for n in json.loads(proc.stdout)["notes"])
    doctor = json.loads(run_cli(["assistant", "doctor", "--json", "--log", str(big)], bundled_env).stdout)
    assert any("earlier lines were not scanned" in f["message"] for f in doctor["findings"])


def test_a_log_longer_than_the_read_window_reports_line_numbers_in_the_file(tmp_path):
    """A warning at line 30,002 of a 4 MB log was reported at line 14,707: counted from where
    the last 2 MB began, not from the top of the file."""
    from assistant.tools.logs import LOG_TAIL_BYTES

    rows = [f"INFO 11-30 02:17:46 [engine.py:160] step {i}: running, nothing to see here, padding padding" for i in range(1, 40_001)]
    rows[30_001] = "WARNING 11-30 02:17:46 [scheduler.py:1] Waiting for free blocks in KV cache"
    rows[39_000:39_004] = ["Traceback (most recent call last):", '  File "x.py", line 3, in forward', "    self.graph.replay()",
                           "RuntimeError: CUDA error: an illegal memory access was encountered"]
    log = tmp_path / "big.log"
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert log.stat().st_size > LOG_TAIL_BYTES + 1_000_000
    r = diagnose_log(path=str(log))
    where = {f.article or f.signature[:12]: (f.first_line, f.fatal) for f in r.findings}
    assert where["vllm-requests-hang"] == (30_002, False)
    assert where["vllm-cuda-graph-errors"] == (39_003, True)  # a frame of the crash below it, found by its real number
    assert where["RuntimeError"] == (39_004, True)
    assert r.unread_bytes > 0
    small = tmp_path / "small.log"
    small.write_text("\n".join(rows[30_000:30_003]) + "\n", encoding="utf-8")
    assert diagnose_log(path=str(small)).findings[0].first_line == 2


def test_crashes_are_found_in_any_log_format_and_refused_requests_do_not_crowd_them_out():
    """A bare traceback (no level), a worker's "(VllmWorker rank=0 pid=42) ERROR", FastDeploy's
    "[   ERROR]" all read as a healthy log; three client ValueErrors that differed only in
    their numbers took every place for unlisted errors, and outranked a KV-cache hang."""
    bare = ("Traceback (most recent call last):\n  File \"x.py\", line 3, in forward\n    self.graph.replay()\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    r = diagnose_log(text=bare)
    assert [(f.fatal, f.article) for f in r.findings] == [(True, "vllm-cuda-graph-errors"), (True, "")]
    for line in ("(VllmWorker rank=0 pid=4242) ERROR 12-01 10:00:00 [x.py:1] RuntimeError: NCCL timeout",
                 "[2025-06-01 10:00:00,000] [   ERROR] - RuntimeError: NCCL timeout in allreduce",
                 "\x1b[1;36m(EngineCore_0 pid=9)\x1b[0m ERROR 12-01 [core.py:1] EngineCore encountered a fatal error."):
        assert diagnose_log(text=line).findings[0].fatal, line
    refused = "".join(f"ERROR 12-01 [serving_chat.py:1] ValueError: This model's maximum context length is 32768 tokens. "
                      f"However, you requested {40000 + i} tokens\n" for i in range(5))
    log = refused + "WARNING 12-01 [x] Waiting for free blocks in KV cache\n" + CRASH_LOG.splitlines()[2] + "\n" + CRASH_LOG.splitlines()[-1]
    found = [(f.severity, f.fatal, f.article, f.count) for f in diagnose_log(text=log).findings]
    # The refused requests are a warning under the article that explains them (lower max_tokens),
    # after the crash and the hang, however many there are.
    assert found == [("critical", True, "", 1), ("critical", True, "", 1), ("critical", False, "vllm-requests-hang", 1),
                     ("warning", False, "vllm-chunked-prefill-tuning", 5)]
    assert diagnose_log(text="max seq len (,) is larger than … stored in KV cache (,)").numbers == {}


def test_a_tool_calls_record_is_always_valid_json():
    """A model's `1e400` argument was kept as inf, and `ask --json` printed `Infinity`."""
    call = call_tool("kv_concurrency", json.dumps({"num_blocks": -5, "avg_tokens_per_request": 1e400, "block_size": "sixty-four"}))
    assert call.error and "avg_tokens_per_request" in call.error
    text = json.dumps(call.to_dict(), allow_nan=False)
    assert json.loads(text)["arguments"]["avg_tokens_per_request"] is None


def test_doctor_says_which_config_it_read_and_whether_the_llm_answers(bundled_settings, tmp_path, monkeypatch):
    """Neither doctor nor --help said which config file was read or whether the LLM was up: a
    mistyped URL showed only as answers that were always extractive."""
    from dataclasses import replace

    from assistant.ops.doctor import _setup_findings

    from .fake_llm import ScriptedLLM

    cfg = tmp_path / "config.toml"
    cfg.write_text("top_k = 3\n", encoding="utf-8")
    monkeypatch.setenv("ASSISTANT_CONFIG", str(cfg))
    none = _setup_findings(bundled_settings)
    assert [(f.severity, f.source) for f in none] == [("ok", "config"), ("info", "config")]
    assert str(cfg) in none[0].message and "no LLM configured" in none[1].message
    with ScriptedLLM([]) as llm:
        up = _setup_findings(replace(bundled_settings, llm_base_url=llm.url))
    assert up[1].severity == "ok" and "answers /models" in up[1].message
    down = _setup_findings(replace(bundled_settings, llm_base_url="http://127.0.0.1:9/v1", llm_connect_timeout=0.5))
    assert down[1].severity == "warning" and "falls back to the KB" in down[1].message


def test_start_up_statements_are_information_and_a_full_kv_cache_with_a_queue_is_said():
    """`doctor --log` showed vLLM's "Chunked prefill is enabled" and FastDeploy's "Reset block
    num" INFO lines as warnings, and said nothing of stats lines with the KV cache at 100% and
    64 requests waiting (a newcomer trial)."""
    from assistant.tools.logs import diagnose_text

    log = ("INFO 12-04 10:00:00 [config.py:1] Chunked prefill is enabled with max_num_batched_tokens=2048.\n"
           "INFO 2025-07-01 10:00:00 Reset block num, the total_block_num:17220, prefill_kvcache_block_num:12915\n"
           "INFO 12-04 10:01:00 [metrics.py:1] Running: 30 reqs, Waiting: 64 reqs, GPU KV cache usage: 100.0%, CPU KV cache usage: 0.0%\n"
           "INFO 12-04 10:02:00 [metrics.py:1] Running: 30 reqs, Waiting: 12 reqs, GPU KV cache usage: 97.1%, CPU KV cache usage: 0.0%\n")
    report = diagnose_text(log)
    assert report.findings and all(f.severity == "info" for f in report.findings)
    assert report.numbers["kv_cache_usage_pct"] == 100.0 and report.numbers["waiting_at_full_kv"] == 64
    assert any("100% with 64 requests waiting" in c["en"] for c in report.computed)
    calm = diagnose_text("INFO 12-04 10:01:00 [metrics.py:1] Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%\n")
    assert not calm.computed
    # Full once with nobody waiting, then a queue on an empty cache: a hang, not a full cache (review).
    hang = diagnose_text("INFO 12-04 10:01:00 [metrics.py:1] Running: 9 reqs, Pending: 0 reqs, GPU KV cache usage: 99.5%\n"
                         "INFO 12-04 10:09:00 [metrics.py:1] Running: 0 reqs, Pending: 57 reqs, GPU KV cache usage: 0.0%\n")
    assert not hang.computed


def test_a_start_up_failure_logged_as_a_valueerror_is_critical():
    """vLLM V1 logs its own start-up failure as "ERROR … ValueError: To serve at least one
    request …": read as a client's refused request it became a warning (review)."""
    from assistant.tools.logs import diagnose_text

    log = ("ERROR 12-04 10:00:00 [core.py:390] EngineCore failed to start.\n"
           "ERROR 12-04 10:00:00 [core.py:396] ValueError: To serve at least one request with the models's max seq len (131072), "
           "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.50 GiB).\n")
    found = {f.article: f for f in diagnose_text(log).findings}
    assert found["vllm-kv-cache-insufficient-for-max-model-len"].severity == "critical"


def test_a_kv_cache_error_in_gib_gets_an_estimated_max_model_len():
    """Earlier V1 releases say only how many GiB one full-length request needs and how many
    are free: the largest --max-model-len that starts is in proportion, said as an estimate."""
    text = ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, "
            "which is larger than the available KV cache memory (5.12 GiB). Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.")
    computed = diagnose_log(text=text).computed
    assert len(computed) == 1 and "41,943" in computed[0]["en"] and "41,943" in computed[0]["zh"]
    assert "about" in computed[0]["en"]
    exact = text.replace("when initializing", "Based on the available memory, the estimated maximum model length is 41936. when initializing")
    computed = diagnose_log(text=exact).computed
    assert len(computed) == 1 and "41,936" in computed[0]["en"] and "about" not in computed[0]["en"]


def test_a_logs_start_up_settings_are_read_as_flags():
    """`ask --log` on a log that printed `gpu_memory_utilization=0.95` was told to raise it:
    the server's own settings are what an answer quotes back."""
    namespace = ("INFO 05-12 10:01:02 api_server.py:124] args: Namespace(host=None, port=8000, model='Qwen/Qwen2.5-32B-Instruct', "
                 "max_model_len=65536, gpu_memory_utilization=0.95, enforce_eager=False, trust_remote_code=True)")
    assert diagnose_text(namespace).settings == {"--port": "8000", "--model": "Qwen/Qwen2.5-32B-Instruct", "--max-model-len": "65536",
                                                 "--gpu-memory-utilization": "0.95", "--trust-remote-code": ""}
    v1 = ("INFO 08-01 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B', 'override_generation_config': "
          "{'temperature': 0.7}, 'max_model_len': 32768, 'enable_prefix_caching': True}")
    assert diagnose_text(v1).settings == {"--model": "Qwen/Qwen3-8B", "--max-model-len": "32768", "--enable-prefix-caching": ""}
    assert diagnose_text("INFO temperature=0.7 max_model_len=4096").settings == {}


def test_settings_of_a_long_args_line_and_nested_ones():
    """A real `args: Namespace(…)` line runs past the 2,000 characters the signatures read;
    settings two levels down (hf_overrides → rope_scaling) are not the server's."""
    line = "INFO args: Namespace(" + ", ".join(f"opt{i}=1" for i in range(400)) + ", gpu_memory_utilization=0.95, max_model_len=65536)"
    settings = diagnose_text(line).settings
    assert len(line) > 2000 and settings["--gpu-memory-utilization"] == "0.95" and settings["--max-model-len"] == "65536"
    nested = ("INFO non-default args: {'model': 'm', 'hf_overrides': {'rope_scaling': {'type': 'yarn'}, 'max_model_len': 131072}, "
              "'gpu_memory_utilization': 0.9}")
    assert diagnose_text(nested).settings == {"--model": "m", "--gpu-memory-utilization": "0.9"}


@pytest.mark.parametrize("timeout_s", [1e308, 1e9, 31, 0, -1, float("nan")])
def test_serving_status_refuses_a_wait_out_of_range_by_name(timeout_s):
    """1e308 failed as "OverflowError" from inside urllib, and each 1e9 call to a port that
    never answers held a server thread: the wait is bounded, and said so."""
    call = call_tool("serving_status", {"base_url": "http://127.0.0.1:9", "timeout_s": timeout_s})
    assert call.error == "timeout_s must be over 0 and at most 30 seconds"


def test_a_pipe_is_read_until_it_ends_falls_silent_or_passes_its_limit():
    """`kubectl logs -f` never ends and `yes` never falls silent: both were read forever."""
    import io
    import os
    import threading
    import time

    from assistant.tools.logs import stream_tail

    read_fd, write_fd = os.pipe()

    def follow():  # a followed log: some lines, then silence with the pipe still open
        os.write(write_fd, b"line one\nline two\n")
        time.sleep(3)
        os.close(write_fd)

    writer = threading.Thread(target=follow)
    writer.start()
    with os.fdopen(read_fd, "rb") as stream:
        started = time.monotonic()
        tail = stream_tail(stream, 1000, idle=0.3)
        assert tail.stopped == "idle" and tail.data == b"line one\nline two\n" and time.monotonic() - started < 2.5
    writer.join()

    read_fd, write_fd = os.pipe()

    def endless():
        try:
            while True:
                os.write(write_fd, b"y\n" * 4096)
        except OSError:  # the reader is gone
            os.close(write_fd)

    writer = threading.Thread(target=endless)
    writer.start()
    with os.fdopen(read_fd, "rb") as stream:
        tail = stream_tail(stream, 1000, idle=5, most=200_000)
    writer.join()
    assert tail.stopped == "size" and len(tail.data) == 1000 and tail.skipped >= 199_000
    ended = stream_tail(io.BytesIO(b"a whole log\n"), 1000)
    assert ended.stopped == "" and ended.data == b"a whole log\n"


def test_a_glog_style_error_line_is_an_error(bundled_settings):
    """torch's c10d logs "[rank9]:[E708 15:22:31.118 ProcessGroupNCCL.cpp:616] … Watchdog caught
    collective operation timeout" with glog's level letter, not a word: the log read as having
    "no ERROR-level exception", above a team postmortem quoting the line (trial)."""
    from assistant.tools.logs import diagnose_text

    log = ("NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0>\n"
           "[rank9]:[E708 15:22:31.118 ProcessGroupNCCL.cpp:616] [Rank 9] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds "
           "before timing out.\n"
           "I0708 15:22:31.200000 123 other.cc:10] all fine here\n")
    findings = diagnose_text(log, bundled_settings).findings
    assert any("Watchdog caught collective operation timeout" in f.signature and f.first_line == 2 and f.severity == "critical"
               for f in findings), findings
    assert not any("all fine" in f.signature for f in findings)
    undated = "[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)\n"
    assert any(f.severity == "critical" for f in diagnose_text(undated, bundled_settings).findings)  # torch 2.0/2.1 (review)


def test_a_frames_source_line_is_no_finding_and_long_findings_are_cut_between_words(bundled_settings):
    """Under `File "…/core_client.py", line 273, in __init__` the source line `raise
    RuntimeError("Engine core initialization failed. "` was listed as a crash of its own, and
    NCCL's watchdog line was listed as "… ran for 600021 millisecon" (newcomer)."""
    from assistant.tools.logs import FINDING_CHARS, diagnose_text, shown_signature

    log = ("Traceback (most recent call last):\n"
           '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py", line 273, in __init__\n'
           '    raise RuntimeError("Engine core initialization failed. "\n'
           '                       "See root cause above. "\n'  # Python 3.13 prints the whole statement (review)
           "RuntimeError: Engine core initialization failed. See root cause above.\n"
           "[rank3]:[E1207 11:12:31.402345 2213 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.\n")
    findings = diagnose_text(log, bundled_settings).findings
    assert not any(f.signature.lstrip().startswith(("raise ", '"See root')) for f in findings), [f.signature for f in findings]
    assert any(f.signature == "RuntimeError: Engine core initialization failed. See root cause above." for f in findings)
    # Kept as a prefix of the line, which callers look for in pasted lines (a clipped "…" one
    # never matched, review); listed, it is cut between words.
    long = [f for f in findings if len(f.signature) > 100]
    assert long and all(f.signature in f.example for f in long)
    shown = [shown_signature(f.signature) for f in long]
    assert all(len(s) <= FINDING_CHARS and s.endswith("…") and s[-2] != " " and not s.endswith("millisecon…") for s in shown), shown


def test_a_traceback_logged_line_by_line_ends_in_its_cause(bundled_settings):
    """vLLM logs a start-up traceback at ERROR, line by line, under "EngineCore failed to
    start": its last line ("safetensors_rust.SafetensorError: … MetadataIncompleteBuffer") was
    a warning below the wrapper lines, and the answer searched with the wrappers alone (trial).
    One logged for a request ("Error in preprocessing prompt inputs") stays a warning."""
    from assistant.tools.logs import diagnose_text

    prefix = "ERROR 06-20 02:41:26 [core.py:396] "
    log = (f"{prefix}EngineCore failed to start.\n{prefix}Traceback (most recent call last):\n"
           f'{prefix}  File "/usr/lib/vllm/weight_utils.py", line 468, in safetensors_weights_iterator\n'
           f"{prefix}    with safe_open(st_file, framework=\"pt\") as f:\n"
           f"{prefix}safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer\n"
           "RuntimeError: Engine core initialization failed. See root cause above.\n")
    findings = diagnose_text(log, bundled_settings).findings
    assert [(f.severity, f.fatal) for f in findings] == [("critical", True)] * 3
    assert findings[0].signature.startswith("safetensors_rust.SafetensorError")  # the cause before its wrappers
    request = ("ERROR 06-20 02:41:26 [serving_chat.py:200] Error in preprocessing prompt inputs\n"
               "ERROR 06-20 02:41:26 [serving_chat.py:200] Traceback (most recent call last):\n"
               'ERROR 06-20 02:41:26 [serving_chat.py:200]   File "/usr/lib/vllm/serving_chat.py", line 190, in create\n'
               "ERROR 06-20 02:41:26 [serving_chat.py:200] jinja2.exceptions.TemplateError: Conversation roles must alternate\n")
    assert not any(f.fatal for f in diagnose_text(request, bundled_settings).findings if "TemplateError" in f.signature)


HF_TIMEOUT_LOG = """INFO 04-09 05:39:40 [api_server.py:1043] vLLM API server version 0.8.3
INFO 04-09 05:39:41 [api_server.py:1044] args: Namespace(model='Qwen/Qwen2.5-7B', hf_token='hf_qXkVbRzTnWmLpJsYdFgHc', api_key='sk-prod-7Hq2xVb9', max_model_len=8192)
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/urllib3/connection.py", line 198, in _new_conn
    sock = connection.create_connection(
TimeoutError: timed out
"""


def test_wrapped_logs_read_as_the_server_printed_them_and_secrets_stay_out():
    """From a trial with real logs: `docker logs -t` time stamps and kubectl's `--prefix` tags
    hid a traceback's last line (a failed start-up was called clean), JSON lines with their
    level after a long message lost it, ANSI colours reached the findings, and the server's
    hf_token and api_key came back in the settings."""
    plain = diagnose_text(HF_TIMEOUT_LOG)
    assert [f.signature for f in plain.findings if f.severity == "critical"] == ["TimeoutError: timed out"]
    docker = "".join(f"2025-04-09T05:39:{i:02d}.123456789Z {line}\n" for i, line in enumerate(HF_TIMEOUT_LOG.splitlines()))
    kubectl = "".join(f"[pod/vllm-0/vllm] {line}\n" for line in HF_TIMEOUT_LOG.splitlines())
    colour = HF_TIMEOUT_LOG.replace("INFO", "\x1b[32mINFO\x1b[0m").replace("TimeoutError", "\x1b[1;31mTimeoutError\x1b[0m")
    for wrapped in (docker, kubectl, colour):
        d = diagnose_text(wrapped)
        assert [f.signature for f in d.findings if f.severity == "critical"] == ["TimeoutError: timed out"], wrapped[:80]
        assert "\x1b" not in json.dumps([f.example for f in d.findings])
    message_first = ('{"msg": "' + "RuntimeError: Error in model execution (input dumped to /tmp/x.pkl): " + "y" * 90
                     + ' CUDA error: an illegal memory access was encountered", "ts": 1, "level": "ERROR"}\n')
    (found,) = [f for f in diagnose_text(message_first).findings if f.severity == "critical"]
    assert found.example.startswith("ERROR RuntimeError") and "illegal memory access" in found.example
    settings = plain.settings
    assert settings["--hf-token"] == "<redacted>" and settings["--api-key"] == "<redacted>" and settings["--max-model-len"] == "8192"
    assert "hf_qXk" not in json.dumps(diagnose_text(docker).settings)


def test_a_gzip_log_and_a_long_clean_tail_are_said_as_such(tmp_path, bundled_settings, bundled_kb):
    """A rotated `.gz` log was "binary data" with a hint that failed the same way; a 200 MB
    log whose crash sat in its middle got "nothing in this log (14275 lines)" (trial)."""
    import gzip

    from assistant.answer import answer_question
    from assistant.ops.doctor import _log_findings

    gz = tmp_path / "server.log.1.gz"
    gz.write_bytes(gzip.compress(HF_TIMEOUT_LOG.encode()))
    with pytest.raises(ValueError, match=r"gzip-compressed: `zcat .*server.log.1.gz \| ask --log -` reads it"):
        diagnose_log(path=str(gz))
    healthy = "INFO 04-09 05:39:40 [loggers.py:1] Avg prompt throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs\n" * 20
    answer = answer_question("What does this log show is wrong?", bundled_settings, kb=bundled_kb, use_llm=False,
                             log_text=healthy, log_first_line=720_001)
    assert "in the last 20 lines of this log; the 720,000 lines before them were not read" in answer.answer
    report = diagnose_text(healthy)
    report.unread_bytes = 199_000_000
    assert [f.severity for f in _log_findings(report) if "not read" in f.message or "MB" in f.message] == ["warning"]


def test_a_traceback_frame_and_an_empty_error_line_are_no_findings():
    """vLLM logs a traceback at ERROR line by line: the frame of pynccl.py read as an NCCL
    crash, and the closing line with no message was listed as a warning (trial)."""
    log = ('ERROR 04-09 05:39:54 [core.py:390] Traceback (most recent call last):\n'
           'ERROR 04-09 05:39:54 [core.py:390]   File "/usr/lib/python3/site-packages/vllm/distributed/pynccl.py", line 89, in __init__\n'
           'ERROR 04-09 05:39:54 [core.py:390]     self.comm = self.nccl.ncclCommInitRank(\n'
           'ERROR 04-09 05:39:54 [core.py:390] RuntimeError: NCCL error: unhandled system error\n'
           'ERROR 04-09 05:39:54 [core.py:390] \n')
    listed = [(f.signature, f.first_line) for f in diagnose_text(log).findings]
    assert not [s for s, n in listed if "pynccl.py" in s or n == 5], listed
    assert any(s == "NCCL error" for s, _ in listed)


HEALTHY_VLLM_LOG = ("INFO 04-09 05:39:31 [__init__.py:239] Automatically detected platform cuda.\n"
                    "INFO 04-09 05:39:33 [api_server.py:1034] vLLM API server version 0.8.3\n"
                    "INFO 04-09 05:39:33 [api_server.py:1035] args: Namespace(model='meta-llama/Llama-3.1-8B-Instruct', "
                    "max_model_len=32768, gpu_memory_utilization=0.9, tensor_parallel_size=1)\n"
                    + "".join(f"(APIServer pid=1) INFO 04-10 05:30:{i:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 7{i}.5 tokens/s, "
                              f"Avg generation throughput: 17{i}.0 tokens/s, Running: {i} reqs, Waiting: 0 reqs, GPU KV cache usage: 3{i % 10}.6%\n"
                              '(APIServer pid=1) INFO:     10.0.0.90:34534 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                              for i in range(30)))


def test_a_healthy_vllm_log_asked_why_it_crashed_says_so_and_stays_on_vllm(bundled_settings, bundled_kb):
    """A healthy vLLM log with "why did the server crash?" was answered, sure, from FastDeploy's
    start-up OOM article, and nothing said the log shows no crash (trial with real logs)."""
    from assistant.answer import answer_question

    trace: dict = {}
    answer = answer_question("why did the server crash?", bundled_settings, kb=bundled_kb, use_llm=False,
                             log_text=HEALTHY_VLLM_LOG, trace=trace)
    assert answer.answer.startswith("**The log shows no crash**")
    assert not [a for a in trace["retrieval"].articles[:3] if a.product == "fastdeploy"]
    assert not answer.citations or answer.citations[0].id.startswith("vllm-")
