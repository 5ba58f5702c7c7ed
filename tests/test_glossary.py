"""Keyword search across languages (assistant/glossary.py): a Chinese question reaches an
English-only doc by its domain words, and a KB in both languages is searched as before."""

from dataclasses import replace

import numpy as np
import pytest

from assistant.answer import answer_question
from assistant.config import Settings
from assistant.glossary import translate
from assistant.knowledge import open_kb
from assistant.retrieval import cross_keyword_scores

from .conftest import dedent, docs_kb

DOCS = dedent("""
    # Serving runbook

    ## Gateway returns 502
    The gateway in front of the model servers answers 502 when every upstream is busy.
    Raise the upstream pool: `gatewayctl pool --size 64`.

    ## Throughput dropped after a deploy
    Usually the new build disabled the fused kernels, and every request got slow.
    Set `MODELSRV_FUSED=1` in the deployment and roll it again.

    ## Container keeps restarting
    The liveness probe kills the container before the weights finish loading.
    Raise `initialDelaySeconds` on the probe.
""")


@pytest.fixture(scope="module")
def english_docs(tmp_path_factory):
    """DOCS as an English-only doc tree, indexed once for this module: (settings, kb)."""
    root = tmp_path_factory.mktemp("english")
    kb_dir = root / "docs"
    kb_dir.mkdir()
    (kb_dir / "runbook.md").write_text(DOCS, encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=root / "cache")
    return settings, open_kb(settings, progress=lambda _m: None)


def test_longer_terms_win_and_ambiguous_english_words_are_not_mapped_back():
    assert translate("显存不足", "zh") == ["out of memory oom"]  # not also 显存's "gpu memory vram"
    assert sorted(translate("部署后吞吐变慢", "zh")) == ["deploy deployment", "slow speed", "throughput"]
    assert translate("the gpu is slow", "en") == ["变慢 很慢 太慢 速度"]  # "gpu" belongs to several concepts
    assert translate("为什么", "zh") == [] and translate("hello there", "en") == []
    # Concurrency said as "handling several at once", not only as 并发.
    assert "concurrency concurrent parallel" in translate("怎么让它同时处理多个请求", "zh")
    assert translate("同时还打开了日志", "zh") == ["log logs logging"]  # 同时 alone is "also"
    # A team's own process words: a quota runbook written in English, asked in Chinese.
    assert sorted(translate("紧急申请 GPU 配额", "zh")) == ["emergency urgent", "quota", "request apply"]


def test_scaling_down_is_told_apart():
    """"缩容太慢" asks about scaling down: an English page's scale-down settings (a cooldown
    window, a downscale delay) are named in those words, not in a bare "scaling"."""
    down = " ".join(translate("压测停了以后缩容特别慢", "zh"))
    assert "scale-down" in down and "downscale" in down and "scale-up" not in down
    up = " ".join(translate("扩容太慢", "zh"))
    assert "scale-up" in up and "scaling" in up and "scale-down" not in up
    assert translate("扩缩容策略", "zh") == translate("扩容策略", "zh")  # both ways at once: the general words
    assert not any("scale" in t for t in translate("压缩容量不够", "zh"))  # 压缩 (compress), then 容量: no 缩容 in it
    # English back to Chinese: the general words still reach 扩容 (review), the down-only ones 缩容.
    assert [t.split()[0] for t in translate("how do I scale the router", "en")] == ["扩容", "路由"]
    assert [t.split()[0] for t in translate("scaling is slow", "en")] == ["扩容", "变慢"]
    assert translate("downscale takes minutes", "en") == ["缩容"]


def test_english_words_reach_every_chinese_word_of_their_concept():
    """A Chinese page says one of a concept's words, the writer's choice: "canary" reached only
    金丝雀, and a team FAQ's 灰度发布 entry never matched "how do we do a canary rollout" (trial)."""
    assert "灰度" in " ".join(translate("how do we do a canary rollout of a new model?", "en"))
    assert "回退" in " ".join(translate("rollback steps", "en"))
    assert "周末" in " ".join(translate("is there a change freeze on weekends?", "en"))
    # "out of" and "of memory" are no "out of memory"; the whole phrase is (review)
    for everyday in ("index out of range", "we ran out of disk", "80GB of memory on each card"):
        assert not any("显存不足" in t for t in translate(everyday, "en")), everyday
    assert any("显存不足" in t for t in translate("the server ran out of memory", "en"))
    assert "卡住" in " ".join(translate("the vllm server freeze", "en"))  # "freeze" is the hang row's alone


def test_outputs_that_differ_are_said_in_the_words_english_docs_use():
    """"并发跑出来的结果和单独请求时不一样" asks why outputs vary; an English FAQ says "vary" and
    "different", and a short section on concurrency numbers outranked it on 并发 alone."""
    assert "vary" in " ".join(translate("同一个 prompt 并发跑出来的结果和单独请求时不一样", "zh"))
    assert "vary" in " ".join(translate("两次输出有差异", "zh"))
    assert not any("vary" in t for t in translate("用不同的模型测吞吐", "zh"))  # 不同 is mostly "another"


def test_a_postmortems_account_of_events_is_its_timeline():
    """"那次故障的经过" asks for what happened, hour by hour: an English postmortem calls it the
    Timeline, and the Chinese question got its root cause and action items instead (trial)."""
    assert "timeline" in translate("gateway 那次故障的经过是什么", "zh")
    assert "timeline" in translate("事故时间线发一下", "zh")
    assert "timeline" not in translate("经过测试以后还是 OOM", "zh")  # 经过 (after) at a clause's start is no account
    for plain in ("所有的经过网关的请求都返回 502", "经过是否开启 chunked prefill 的对比", "排查的经过是这样的"):  # review
        assert "timeline" not in translate(plain, "zh"), plain
    # and its root cause: "那次故障的根因是什么" got "What went well" first (trial)
    assert "root cause" in translate("11月3号那次故障的根因是什么", "zh")


def test_a_chinese_question_reaches_an_english_only_passage(english_docs):
    settings, kb = english_docs
    question = "上线部署之后吞吐明显变慢"
    native = kb.index.keyword.scores(kb.index.tokenizer(question))
    assert not native.any()  # no shared word at all
    cross, shared = cross_keyword_scores(kb.index, question, "zh", native)
    best = kb.index.chunks[int(np.argmax(cross))]
    assert "Throughput dropped" in best.title
    assert {"throughput", "deploy"} <= shared and not any("\u4e00" <= ch <= "\u9fff" for term in shared for ch in term)
    answer = answer_question("容器一直重启，探针把它杀掉了", settings, kb=kb)
    assert answer.citations and "Container keeps restarting" in answer.citations[0].section


def test_a_kb_in_both_languages_keeps_its_own_keyword_scores(bundled_kb):
    question = "显存不足，服务启动失败"
    native = bundled_kb.index.keyword.scores(bundled_kb.index.tokenizer(question))
    scores, shared = cross_keyword_scores(bundled_kb.index, question, "zh", native)
    assert scores is native and shared is None


def test_names_the_kb_never_uses_still_count_against_a_chinese_question_on_english_docs(english_docs):
    """An English name the docs never use (Dify) is written the same in both languages."""
    from assistant.refusal import features
    from assistant.retrieval import RetrievalParams, search

    settings, kb = english_docs
    result = search(kb.index, kb.embedder, "在 Dify 里接入我们的模型服务，容器一直重启", RetrievalParams.from_settings(settings))
    assert result.articles[0].other_lang_only
    assert "dify" in result.unknown_terms and features(result)["unknown_terms"] > 0


def test_keyword_coverage_of_an_english_passage_is_measured_on_the_translation(english_docs):
    """A Chinese question shares no words with an English passage, so its coverage was 0 and
    only the dense score spoke for it; the translated serving terms now count."""
    from assistant.retrieval import RetrievalParams, search

    settings, kb = english_docs
    result = search(kb.index, kb.embedder, "上线部署之后吞吐明显变慢", RetrievalParams.from_settings(settings))
    top = result.articles[0]
    assert "Throughput" in top.chunks[0].chunk.title and top.translated and top.coverage > 0.3


def test_particles_are_never_terms():
    """"scale up / scale in", "roll back" and "on-call" put up, in, back and on in the table:
    "CUDA out of memory in the server" was translated with 缩容 (review)."""
    assert sorted(t.split()[0] for t in translate("CUDA out of memory in the server", "en")) == ["显存不足", "服务端"]
    # "of" and "out" alone are no "out of memory", nor "first" a "first token" (every English
    # question with "of" in it was searched for 显存不足 on Chinese-only pages).
    assert translate("how do we do a canary rollout of a new model?", "en") == ["金丝雀 灰度", "发布"]
    assert translate("the first time it takes long", "en") == []
    assert "首字 首token" in translate("first token latency", "en")
    assert [t.split()[0] for t in translate("the pods are up but requests wait in the queue", "en")] == ["请求", "排队"]
    assert [t.split()[0] for t in translate("rollback", "en")] == ["回滚"]


def test_terms_are_read_left_to_right_longest_first():
    """单卡在跑 is 单卡 (one GPU) + 在跑, not 卡在 (stuck at): the reviewer's case."""
    assert translate("单卡在跑72B模型时OOM", "zh") == ["single gpu"]
    assert "hang stuck hangs freeze" not in translate("多卡在启动", "zh")
    assert translate("推理模型怎么关思考", "zh") == ["thinking reasoning"]


def test_a_chinese_question_on_english_docs_is_judged_on_the_keywords_it_shares(english_docs):
    """The refusal model reads the keyword coverage actually measured (on the glossary
    translation), not the dense score in its place: a Chinese near-domain question is
    otherwise answered whenever an English page reads roughly alike. A covered question is
    still answered: the fitted weight of `other_lang_only` makes up for the smaller overlap."""
    from assistant.refusal import features
    from assistant.retrieval import RetrievalParams, search

    settings, kb = english_docs
    params = RetrievalParams.from_settings(settings)
    covered = search(kb.index, kb.embedder, "上线部署之后吞吐明显变慢", params)
    x = features(covered)
    assert x["other_lang_only"] == 1.0 and x["coverage"] == pytest.approx(covered.articles[0].coverage)
    assert answer_question("上线部署之后吞吐明显变慢", settings, kb=kb).grounded
    untranslated = search(kb.index, kb.embedder, "服务网格 502", params)  # no glossary word: only "502" is shared
    y = features(untranslated)
    assert y["other_lang_only"] == 1.0 and y["coverage"] == pytest.approx(untranslated.articles[0].coverage)
    assert y["coverage"] < y["dense"]


RUNBOOK_ZH = """# 显存告警处理

## 告警说明
GPUMemoryHigh 告警在显存使用超过 95% 持续 5 分钟时触发。不要重启服务，先看 `nvidia-smi`。

## 处理步骤
把 `--gpu-memory-utilization` 调低到 0.85 后滚动重启。值班电话 1234。
"""
QUANT_ZH = """# 模型量化

## 量化说明
量化后的模型放在 `/models/int4` 下，量化脚本见 `tools/quant.sh`。
"""
GATEWAY_EN = """# Gateway runbook

## Gateway returns 502
When llm-gw returns 502, the upstream pods are not ready. Run `gatewayctl upstreams` and drain the bad pod.

## Canary rollout
Start a canary with `gatewayctl canary start --weight 5`; abort it with `gatewayctl canary abort`.
"""


@pytest.fixture(scope="module")
def mixed_runbooks(tmp_path_factory):
    """A team's tree with Chinese-only and English-only pages, no twins."""
    root = tmp_path_factory.mktemp("mixed")
    kb_dir = root / "docs"
    (kb_dir / "zh").mkdir(parents=True)
    (kb_dir / "en").mkdir()
    (kb_dir / "zh" / "显存告警.md").write_text(RUNBOOK_ZH, encoding="utf-8")
    (kb_dir / "zh" / "量化.md").write_text(QUANT_ZH + "\n## 量化精度\n量化会略微降低精度。\n", encoding="utf-8")
    (kb_dir / "en" / "gateway.md").write_text(GATEWAY_EN, encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=root / "cache")
    return settings, open_kb(settings, progress=lambda _m: None)


@pytest.mark.parametrize("question, section", [
    ("GPUMemoryHigh alert fired on a vllm node, should I restart it?", "告警说明"),
    ("网关报 502 怎么办", "Gateway returns 502"),
])
def test_a_runbook_in_the_other_language_answers_by_the_askers_words(mixed_runbooks, question, section):
    """"alert" asked of a Chinese-only page that says 告警 was refused as a subject the KB lacks
    ("dashboards and alerting"), and 网关 of an English page titled "Gateway returns 502" shared
    no word with it; the glossary translates both (a newcomer's runbook tree)."""
    from assistant.scope import detect, unseen_entities

    settings, kb = mixed_runbooks
    assert unseen_entities(detect(question), kb.index) == []
    native = kb.index.keyword.scores(kb.index.tokenizer(question))
    _cross, shared = cross_keyword_scores(kb.index, question, "zh" if "网关" in question else "en", native)
    assert shared & {"gateway", "告警"}
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and answer.citations[0].section == section


def test_an_english_subject_is_not_covered_by_another_chinese_name_of_its_family(mixed_runbooks):
    """Docs that say 量化 know nothing of AWQ: only the asker's own word, translated, counts."""
    from assistant.scope import detect, unseen_entities

    settings, kb = mixed_runbooks
    scope = detect("how do I serve an AWQ model with vllm")
    assert unseen_entities(scope, kb.index)


def test_an_identifier_the_other_language_page_lacks_counts_against_an_english_question(mixed_runbooks):
    """Names with a digit or underscore (H100, CUDA_VISIBLE_DEVICES) read the same in both
    scripts. Left out, "how do I request more H100 quota" was fully covered by a Chinese
    page on hung requests through 请求 alone, and answered with confidence (a newcomer's KB)."""
    from assistant.retrieval import RetrievalParams, search

    settings, kb = mixed_runbooks
    native = kb.index.keyword.scores(kb.index.tokenizer("x"))
    _cross, shared = cross_keyword_scores(kb.index, "GPUMemoryHigh alert on the H100 pool, CUDA_VISIBLE_DEVICES=1", "en", native)
    assert {"h100", "cuda-visible-devices", "告警"} <= shared and "pool" not in shared
    # A pasted error's paths and library versions are no subject of the question.
    _cross, pasted = cross_keyword_scores(kb.index, "the GPUMemoryHigh alert fired, then the client died:\n"
                                          "ImportError: /lib/x86_64-linux-gnu/libcrypto.so.1.1: version `OPENSSL_1.0.1_EC' not found", "en", native)
    assert "告警" in pasted and not any(ch.isdigit() for term in pasted for ch in term)
    params = RetrievalParams.from_settings(settings)
    named = search(kb.index, kb.embedder, "the GPUMemoryHigh alert keeps firing on the H100 pool", params)
    plain = search(kb.index, kb.embedder, "the GPUMemoryHigh alert keeps firing", params)
    assert named.articles[0].passage == plain.articles[0].passage == "显存告警处理 > 告警说明"
    assert named.articles[0].coverage < plain.articles[0].coverage


def test_an_english_word_counts_once_however_many_chinese_words_its_concept_has(tmp_path):
    """"stuck" brings 卡住 卡死 卡在 夯住 无响应…: counted as eight keywords, a Chinese page that
    says 卡住 covered one of them, and the rarest (absent from the KB) weighed most (review)."""
    from .conftest import docs_kb

    _settings, kb = docs_kb(tmp_path, {"卡住.md": "# 请求卡住\n\n## 处理\n\n请求卡住时先看网关日志，再重启服务：`systemctl restart vllm`。\n",
                                       "其他.md": "# 显存\n\n## 处理\n\n显存不足时调低 gpu_memory_utilization。\n"})
    _scores, shared = cross_keyword_scores(kb.index, "requests are stuck", "en", np.zeros(len(kb.index.chunks)))
    assert "卡住" in shared and not {"夯住", "无响应", "不返回"} & shared


@pytest.fixture(scope="module")
def chinese_docs(tmp_path_factory):
    """A Chinese runbook that says 多节点 and 挂掉, never 多机 or 崩溃."""
    root = tmp_path_factory.mktemp("chinese")
    kb_dir = root / "docs"
    kb_dir.mkdir()
    (kb_dir / "手册.md").write_text(dedent("""
        # 推理服务手册

        ## 多节点部署
        两台机器组成一个服务时，先在每台上设置 `GLOO_SOCKET_IFNAME=eth0`，再用 ray 拉起。

        ## 服务挂掉以后
        看 `journalctl -u infer` 里最后一条报错，按错误码查值班表。

        ## 网关超时
        网关默认 60 秒超时，长输出请求把 `GW_TIMEOUT` 调到 300。
    """), encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=root / "cache")
    return settings, open_kb(settings, progress=lambda _m: None)


def test_a_chinese_synonym_the_kb_never_uses_is_searched_as_the_one_it_does(chinese_docs):
    """崩溃 and 挂掉 name one thing; a page says one of them. BM25 met only the writer's word."""
    from assistant.glossary import kb_words
    from assistant.retrieval import query_tokens

    settings, kb = chinese_docs
    df = kb.index.doc_freq
    assert df.get("崩溃", 0) == 0 and df["挂掉"] > 0
    assert kb_words("崩溃", df) == ["挂掉"]  # the KB's word of the row, wherever the row lists it
    assert kb_words("部署", df) == ["部署"] and kb_words("没有的词", df) == ["没有的词"]  # used, or not in the glossary: kept
    # A synonym the KB has only as pieces stands in for nothing: 向量化 is 量化 to a segmenter (review).
    assert kb_words("嵌入", {"量化": 3}) == ["嵌入"]
    assert kb_words("报错", {"错误": 3}) == ["报错"]  # said of any error: no page's subject
    tokens = query_tokens(kb.index, "服务崩溃以后怎么查")
    assert "挂掉" in tokens and "崩溃" not in tokens
    answer = answer_question("服务崩溃以后看哪里", settings, kb=kb)
    assert answer.citations and "服务挂掉以后" in answer.citations[0].section


SERVER_LOGS_EN = dedent("""
    # Reading the server logs

    ## Startup lines
    On start the server prints its host, port and base URL, then `Uvicorn running on http://0.0.0.0:9380`.
    The entrypoint script starts the task executors and writes `server.log` under `/app/logs`.

    ## Log levels
    The root logger prints INFO; the database driver and the PDF parser print WARNING only.
""")

ADMIN_EN = dedent("""
    # Administration

    ## Reset a user's password
    Users who forgot their password cannot recover it from the login page. An admin resets it
    for their account: `ragctl user reset-password --email someone@example.com`.

    ## Back up and migrate your data
    Stop the stack, then run `ragctl backup --out /backups/rag.tar` and restore it on the new host
    with `ragctl restore /backups/rag.tar`.

    ## Send email through your SMTP server
    Set `SMTP_HOST`, `SMTP_PORT` and `MAIL_FROM` in `.env`.
""")


def test_a_self_hosted_services_own_words_cross_languages(tmp_path):
    """Teams run RAG and chat platforms beside their models, with English-only docs asked in
    Chinese: "自己注册的账号密码忘了，怎么重置" shared no keyword with the page on resetting a
    user's password, and a page of server logs was cited first (new trees)."""
    assert {"password", "reset", "account", "forgot forgotten", "login"} <= set(
        translate("自己注册的账号密码忘了，登录页面也没有找回的入口，怎么重置？", "zh"))
    assert {"备份", "恢复", "知识库"} <= {w for t in translate("how do I backup and restore the knowledge base", "en") for w in t.split()}
    assert translate("日志级别怎么调", "zh") == ["log logs logging", "level"]  # "log" still maps back alone
    assert translate("where are the logs", "en") == ["日志"]
    # A word of a phrase alone is no term, and a new term takes no old one's characters (review).
    assert translate("which base image should I use", "en") == []
    assert "port" in translate("升级后端口变了，现在默认是多少", "zh")
    assert "queue queued waiting" in translate("请求被重排队了", "zh")
    settings, kb = docs_kb(tmp_path, {"a-server-logs.md": SERVER_LOGS_EN, "admin.md": ADMIN_EN})
    for question, section in (("自己注册的账号密码忘了，登录页面也没有找回的入口，怎么重置？", "Reset a user's password"),
                              ("要把整套环境搬到另一台服务器，有没有官方的备份和恢复办法", "Back up and migrate your data"),
                              ("邮件一直发不出去，邮箱服务器在哪配", "Send email through your SMTP server")):
        native = kb.index.keyword.scores(kb.index.tokenizer(question))
        cross, _shared = cross_keyword_scores(kb.index, question, "zh", native)
        best = int(np.argmax(cross))
        assert cross[best] > 0 and section in kb.index.chunks[best].title, question
        answer = answer_question(question, settings, kb=kb)
        assert answer.grounded and answer.citations[0].section.endswith(section), question


WEB_UI_EN = dedent("""
    # Running the server

    ## Reach the web UI from another machine
    The container listens on 127.0.0.1 unless told otherwise, so the UI cannot be accessed from
    outside even when the port mapping (`-p 9997:9997`) is right: start it with `--host 0.0.0.0`.

    ## Upgrade the inference engine
    Dependencies installed by hand (`pip install engine==0.0.1`) are too old: run
    `pip install -U "server[engine]"` to get the version the server requires.

    ## Shard a large model
    Split the weights across GPUs with `--shards 2`; the console prints each shard as it loads.
""")


def test_everyday_software_words_cross_languages(tmp_path):
    """Words a Chinese question about running software uses all the time had no English side:
    "浏览器访问不了，端口已经映射了" shared only 端口 and 浏览器 with the page on reaching the web
    UI (access, mapping), and "之前手动 pip install" nothing with the page on dependencies
    installed by hand (dev trees)."""
    assert {"access", "mapping"} <= set(translate("浏览器打开就是访问不了 webUI，端口已经映射了", "zh"))
    assert {"manual manually", "engine", "console", "init initialize initialization"} <= set(
        translate("之前手动装的推理引擎太旧，初始化后控制台没输出", "zh"))
    # No row for 切分 or 链接: read first, they took 分块's 分 and 接口's 接 ("文档切分块大小"), and
    # 链接 is often written for 连接 (review).
    assert "chunked" in translate("文档切分块大小怎么设置", "zh") and "api endpoint" in translate("链接口超时", "zh")
    assert translate("which environment variables does it read", "en") == ["环境变量"]  # no bare 环境 row to split "environment"
    settings, kb = docs_kb(tmp_path, {"server.md": WEB_UI_EN})
    for question, section in (("docker run -p 9997:9997 起来了，但浏览器访问不了界面，端口已经映射了，还差什么？", "Reach the web UI"),
                              ("之前手动 pip install 装的依赖，启动报版本太旧，怎么更新推理引擎", "Upgrade the inference engine")):
        native = kb.index.keyword.scores(kb.index.tokenizer(question))
        cross, _shared = cross_keyword_scores(kb.index, question, "zh", native)
        best = int(np.argmax(cross))
        assert cross[best] > 0 and section in kb.index.chunks[best].title, question


def test_router_and_gateway_words_reach_english_docs():
    """A gateway or router in front of the servers has its own words: semantic cache hit
    rates, false positives of a jailbreak or PII filter, headers. "语义缓存命中率很低" reached
    an English router's docs through "cache" alone (newcomer, semantic-router docs)."""
    assert {"semantic", "cache", "hit rate"} <= set(translate("语义缓存命中率很低怎么办", "zh"))
    assert {"false positive positives", "jailbreak"} <= set(translate("越狱检测误判太多", "zh"))
    assert "header headers" in translate("响应头里看不到选中的模型", "zh")
