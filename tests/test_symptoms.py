"""The failure a question names, and the one it says does not happen (symptoms.py)."""

import pytest

from assistant.symptoms import denied, named


@pytest.mark.parametrize("text, said, not_said", [
    ("FastDeploy 开 logprobs 之后没有卡住，就是吞吐掉了一半", {"hang"}, {"hang"}),
    ("throughput is great, nothing hangs and no preemption warnings", {"hang", "preempt"}, {"hang", "preempt"}),
    ("卡住了，不是 OOM", {"hang", "oom"}, {"oom"}),
    ("not stuck at first, then it hangs", {"hang"}, set()),  # said as happening too: not denied
    ("请求不卡，返回也正常", set(), {"hang"}),
    ("4 卡 A100 跑 72B，卡顿明显", set(), set()),  # 卡 alone is a card
    ("requests hang after enabling logprobs", {"hang"}, set()),
    ("vllm is not slow, but outputs differ", {"slow"}, {"slow"}),
    # asked or wanted away, not denied (review): 是不是, 才能不, without, 怎么才能不
    ("是不是 OOM 了？", {"oom"}, set()),
    ("请求是不是卡住了？", {"hang"}, set()),
    ("how to serve 72B on two GPUs without OOM", {"oom"}, set()),
    ("怎么才能不卡住", {"hang"}, set()),
    ("参数怎么调才能不爆显存", {"oom"}, set()),
    # more ways of saying no, and gone after it (review)
    ("vllm requests don't hang, they are just slow", {"hang", "slow"}, {"hang"}),
    ("没报 OOM，但是 NCCL 一直卡住", {"hang", "oom"}, {"oom"}),
    ("OOM 没有了，但是吞吐很低", {"oom"}, {"oom"}),
    # the wanting is read in the failure's own clause only; "without" said of the present denies (second review)
    ("FastDeploy 开了 logprobs，怎么办？请求没有卡住，就是吞吐掉了一半", {"hang"}, {"hang"}),
    ("vLLM starts without OOM now, but requests never return", {"oom", "hang"}, {"oom"}),
    ("how to serve 72B on two GPUs without OOM", {"oom"}, set()),
    ("it won't OOM anymore, right?", {"oom"}, set()),
    ("I want to make sure it doesn't hang", {"hang"}, set()),
    # fine in plain words (trial 4): a start-up that went well, requests that return
    ("启动没有报错，但是第一个请求就一直卡住", {"hang"}, {"startup"}),
    ("the server starts fine but requests hang", {"hang"}, {"startup"}),
    ("requests finish fine but latency doubled after enabling logprobs", set(), {"hang"}),
    ("vllm 启动时报 Torch not compiled with CUDA enabled", {"startup"}, set()),
    # more ways of saying it (second review): "no longer", "don't see any", 没出现, 没遇到过
    ("no longer stuck after raising msgmax, but logprobs are wrong", {"hang"}, {"hang"}),
    ("we don't see any OOM, just slow decode", {"oom", "slow"}, {"oom"}),
    ("没出现 OOM，但是吞吐很低", {"oom"}, {"oom"}),
    ("没遇到过卡住，就是结果不一样", {"hang"}, {"hang"}),
])
def test_a_failure_named_and_one_said_not_to_happen(text, said, not_said):
    assert named(text) == said and denied(text) == not_said


@pytest.mark.parametrize("question, lead", [
    ("FastDeploy 开 logprobs 之后没有卡住，也能正常返回，就是吞吐掉了一半多", "**不一定对症。** 你说没有卡住"),
    ("vllm shows GPU KV cache usage: 100.0%, throughput is great, nothing hangs and no preemption warnings. is this a problem?",
     "**Not a sure match.**"),
    ("FastDeploy 跑几个小时显存慢慢涨，最后 OOM；日志里从来没有 free_list_len: 0", "**不一定对症。** 你说日志里没有这一篇所讲的那行日志"),
    ("FastDeploy 日志里没有 free_list_len 日志，但是服务跑一会儿就 OOM", "**不一定对症。** 你说日志里没有这一篇所讲的那行日志"),
    ("4 卡 vllm 启动正常没有报错，跑了半小时后推理时报 NCCL timeout", "**不一定对症。** 你说没有启动失败"),
])
def test_an_article_whose_own_symptom_or_log_line_the_asker_denies_is_a_close_call(bundled_settings, bundled_kb, question, lead):
    """"请求也没有卡住" under the logprobs-hang article, "日志里从来没有 free_list_len: 0" under the
    one on that line: both answered as sure at 0.97 (trial). Said as happening, they stay sure."""
    from assistant.answer import answer_question

    answer = answer_question(question, bundled_settings, kb=bundled_kb, use_llm=False)
    assert answer.grounded and answer.coverage == "tentative" and answer.answer.startswith(lead)


@pytest.mark.parametrize("question", ["FastDeploy 开了 logprobs 之后请求卡住了，一直不返回", "FastDeploy 日志一直刷 free_list_len: 0",
                                      "vllm requests preempted, log shows PreemptionMode.RECOMPUTE",
                                      # a title that only suspects the failure is about something else (review)
                                      "vllm is not stuck, but I want debug logging to see what it does",
                                      # a log line confirmed after a bare 没 (review)
                                      "vllm 一直没 response 日志里一直刷 Waiting for free blocks in KV cache",
                                      "是不是 OOM 了？vllm 启动报 torch.OutOfMemoryError",
                                      # the line said to be there after 但 (second review)
                                      "没看到 OOM 但一直有 free_list_len: 0，FastDeploy 怎么办"])
def test_the_same_symptom_said_as_happening_stays_sure(bundled_settings, bundled_kb, question):
    from assistant.answer import answer_question

    assert answer_question(question, bundled_settings, kb=bundled_kb, use_llm=False).coverage == "full"


def test_a_log_lines_name_said_absent_in_english_is_no_hit(bundled_kb):
    """"there are no free_list_len lines at all" (trial 4) named the line only to deny it."""
    from assistant.retrieval import denied_signatures

    assert "fastdeploy-oom-while-serving" in denied_signatures(bundled_kb.index, "FastDeploy OOMs after hours but there are no "
                                                                                  "free_list_len lines at all")
    assert not denied_signatures(bundled_kb.index, "FastDeploy logs free_list_len: 0 all the time")
