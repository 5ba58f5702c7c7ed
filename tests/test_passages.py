"""A team's own docs: answers by passage, bounded, citing the file, refusals naming its topics."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.answer import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS, answer_question
from assistant.config import Settings
from assistant.knowledge import open_kb

from .conftest import dedent, docs_kb

WIKI = dedent("""
    # Inference on-call wiki

    ## Gateway returns 502
    The gateway in front of the model servers answers 502 when every upstream is busy.

    ### Fix
    Raise the upstream pool: `gatewayctl pool --size 64`.

    ## Model server crashes with OOM
    The pod is killed with exit code 137 when host memory runs out.

    ### Fix
    Lower the batch: `modelsrv --max-batch 8`, then restart.

    ## Tokens per second dropped after a deploy
    Usually the new build disabled the fused kernels.

    ### Fix
    Set `MODELSRV_FUSED=1` in the deployment and roll it again.
""")


@pytest.fixture()
def wiki_settings(tmp_path: Path) -> Settings:
    kb = tmp_path / "wiki"
    kb.mkdir()
    (kb / "oncall.md").write_text(WIKI, encoding="utf-8")
    (kb / "long.md").write_text("# Runbook\n\n## Everything\n" + "\n\n".join(
        f"Step {i}: run `tool --step {i}` and wait for the green light before going on." for i in range(200)), encoding="utf-8")
    return replace(Settings(), kb_dir=kb, cache_dir=tmp_path / "cache")


def test_a_multi_topic_page_answers_with_the_matching_section_only(wiki_settings):
    kb = open_kb(wiki_settings, progress=lambda _m: None)
    answer = answer_question("model server pod killed with exit code 137", wiki_settings, kb=kb)
    assert answer.grounded
    assert "modelsrv --max-batch 8" in answer.answer
    assert "gatewayctl" not in answer.answer and "MODELSRV_FUSED" not in answer.answer
    assert answer.citations[0].source == "oncall.md"
    assert answer.answer.startswith("### Inference on-call wiki > Model server crashes with OOM")


def _quote_after(answer: str, n: int) -> str:
    """The text after the heading line that carries citation [n]."""
    return re.split(rf" \[{n}\]\n", answer, maxsplit=1)[1]


def test_quotes_are_bounded_and_the_rest_stays_behind_the_citation(wiki_settings):
    kb = open_kb(wiki_settings, progress=lambda _m: None)
    answer = answer_question("which tool step do I run before the green light", wiki_settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "long.md"
    assert len(answer.answer) <= MAX_ANSWER_CHARS
    # each quoted passage (the text after a citation marker) is bounded on its own
    quotes = re.split(r" \[\d+\]$", answer.answer, flags=re.M)[1:]
    assert quotes and all(len(q.split("\n**")[0]) <= MAX_PASSAGE_CHARS + 50 for q in quotes)
    assert answer.answer.count("Step ") < 60  # of 200: the rest stays behind the citations


def test_a_long_section_goes_on_with_its_later_matching_chunk(tmp_path):
    """The list of actions sits at the end of a long section, past the first chunk that
    fits the passage bound: it is quoted as the section's continuation, cited on its own."""
    kb_dir = tmp_path / "docs"
    kb_dir.mkdir()
    story = "\n\n".join(f"Paragraph {i} about how the scheduler shares the block pool between running requests." for i in range(22))
    (kb_dir / "tuning.md").write_text(
        "# Tuning\n\n## Preemption\n\nWhen the block pool runs dry the scheduler preempts requests and logs"
        " `preempted because there is not enough block space`.\n\n" + story +
        "\n\nIf preemption happens often, consider the following actions:\n\n- Increase `pool_fraction`.\n"
        "- Decrease `max_running_requests` so fewer requests share the pool.\n", encoding="utf-8")
    (kb_dir / "other.md").write_text("# Install\n\n## Wheels\n\nRun `pip install widget`.\n", encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=tmp_path / "cache")
    kb = open_kb(settings, progress=lambda _m: None)
    answer = answer_question("requests preempted because there is not enough block space, what should I change",
                             settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "tuning.md"
    assert "max_running_requests" in answer.answer and "(continued)" in answer.answer
    assert len(answer.answer) <= MAX_ANSWER_CHARS


def test_a_big_tables_unrelated_row_groups_are_not_quoted_as_its_continuation(tmp_path):
    """Every row group of a table shares its header and the shape of its rows, so every one
    "matched" a little; the rows that name the asked variables are quoted, not ten others."""
    names = {7: "FD_DISABLED_RECOVER", 31: "FD_RECOVER_TIMEOUT"}
    rows = "\n".join(f"| `{names.get(i, f'FD_VAR_{i}')}` | int | {i} | Controls subsystem {i} buffer size in megabytes. |"
                     for i in range(60))
    settings, kb = docs_kb(tmp_path, {"env.md": "# Environment variables\n\nAll variables the server reads.\n\n"
                                                "| Name | Type | Default | Description |\n|---|---|---|---|\n" + rows + "\n"})
    answer = answer_question("What do FD_DISABLED_RECOVER and FD_RECOVER_TIMEOUT do?", settings, kb=kb)
    assert answer.grounded and "FD_DISABLED_RECOVER" in answer.answer and "FD_RECOVER_TIMEOUT" in answer.answer
    assert "(continued)" not in answer.answer and "`FD_VAR_0`" not in answer.answer and "`FD_VAR_44`" not in answer.answer
    assert len(answer.citations) == 1


def test_a_question_about_one_row_does_not_get_the_tables_first_rows(tmp_path):
    """Cut down to fit, the section kept the table's first row group too: it carries `inline
    code`, which counts as something to do. Other row groups are other variables."""
    rows = [(f"FD_OPTION_{i:02d}", f"Controls internal feature number {i} of the scheduler") for i in range(60)]
    rows[37] = ("FD_DISABLED_RECOVER", "Whether to disable recompute of the request when the KV cache is full")
    table = "\n".join(f"| `{name}` | `0` | {what} |" for name, what in rows)
    settings, kb = docs_kb(tmp_path, {"env.md": "# Environment variables\n\nThese variables tune the engine.\n\n## Variables\n\n"
                                                "| Variable | Default | Description |\n|---|---|---|\n" + table +
                                                "\n\n## Logging\n\nSet FD_LOG_DIR to move the logs.\n"})
    answer = answer_question("what does FD_DISABLED_RECOVER do?", settings, kb=kb)
    assert answer.grounded and "FD_DISABLED_RECOVER" in answer.answer and "| Variable | Default | Description |" in answer.answer
    assert "FD_OPTION_00" not in answer.answer and "FD_OPTION_05" not in answer.answer
    # its row with the header and the rows beside it, not the rest of its row group
    assert "FD_OPTION_36" in answer.answer and "FD_OPTION_38" in answer.answer
    assert "FD_OPTION_35" not in answer.answer and "FD_OPTION_39" not in answer.answer


def test_a_mid_sized_table_under_prose_is_cut_to_the_asked_row(tmp_path):
    """A 14-row variables table under its heading's prose is one passage, not row groups:
    "what is the default of SERVE_GMU" quoted all 14 rows (a newcomer trial)."""
    rows = [(f"SERVE_OPT_{i:02d}", str(i), f"tunes internal feature {i}") for i in range(14)]
    rows[6] = ("SERVE_GMU", "0.90", "passed to --gpu-memory-utilization")
    table = "\n".join(f"| `{name}` | {default} | {what} |" for name, default, what in rows)
    settings, kb = docs_kb(tmp_path, {"env-vars.md": "# Environment variables used by our serving images\n\n"
                                                     "All images read these at start-up.\n\n| Variable | Default | Meaning |\n|---|---|---|\n"
                                                     + table + "\n", "deploy.md": "# Deploying\n\n## Rollout\nRun `make deploy`.\n"})
    answer = answer_question("what is the default of SERVE_GMU", settings, kb=kb)
    assert answer.grounded and "SERVE_GMU" in answer.answer and "| Variable | Default | Meaning |" in answer.answer
    assert "All images read these" in answer.answer
    assert "SERVE_OPT_05" in answer.answer and "SERVE_OPT_07" in answer.answer
    assert "SERVE_OPT_00" not in answer.answer and "SERVE_OPT_13" not in answer.answer


def test_a_question_about_one_setting_of_a_long_code_listing_gets_its_paragraph(tmp_path):
    """FastDeploy documents its environment variables as envs.py, one fenced block of forty
    commented entries split at blank lines: a question about one variable got two pieces of
    the listing, a dozen other variables around it."""
    entries = [(f"SRV_KNOB_{i:02d}", f"Tunes internal knob number {i} of the worker") for i in range(40)]
    entries[23] = ("SRV_DISABLE_RECOVER", "Whether to disable recomputing a request when the block pool is full")
    code = "\n\n".join(f'    # {what}\n    "{name}": lambda: os.getenv("{name}", "0"),' for name, what in entries)
    settings, kb = docs_kb(tmp_path, {"env.md": "# Server environment variables\n\nThe server reads these variables at start-up:\n\n"
                                                "```python\nenvironment_variables = {\n" + code + "\n}\n```\n",
                                      "install.md": "# Install\n\n## Wheels\n\nRun `pip install srv`.\n"})
    answer = answer_question("what does SRV_DISABLE_RECOVER do?", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "env.md"
    assert "block pool is full" in answer.answer and '"SRV_DISABLE_RECOVER"' in answer.answer
    assert "SRV_KNOB_" not in answer.answer and answer.answer.count("```") % 2 == 0


def test_a_question_asking_which_setting_to_add_is_not_cut_to_the_settings_it_already_uses(tmp_path):
    """"I set SRV_INPUT_LIMIT and SRV_PREFILL_LIMIT; which parameter caps input plus output?"
    The names in the question are what the asker already set: the listing was cut to their
    two entries and the one asked for was left out."""
    entries = [(f"SRV_KNOB_{i:02d}", f"Tunes internal knob number {i} of the worker") for i in range(12)]
    entries[3] = ("SRV_INPUT_LIMIT", "Longest prompt accepted, in tokens")
    entries[6] = ("SRV_PREFILL_LIMIT", "Tokens a prefill step may hold")
    entries[8] = ("SRV_TOTAL_LIMIT", "Memory budget of a request: prompt tokens plus generated tokens together")
    code = "\n\n".join(f'    # {what}\n    "{name}": lambda: os.getenv("{name}", "0"),' for name, what in entries)
    settings, kb = docs_kb(tmp_path, {"env.md": "# Server environment variables\n\nThe server reads these variables at start-up:\n\n"
                                                "```python\nenvironment_variables = {\n" + code + "\n}\n```\n",
                                      "install.md": "# Install\n\n## Wheels\n\nRun `pip install srv`.\n"})
    question = ("I set SRV_INPUT_LIMIT=8191 and SRV_PREFILL_LIMIT=8192 and warmup fails. "
                "Which parameter caps the prompt plus generated tokens together?")
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "env.md"
    assert "SRV_TOTAL_LIMIT" in answer.answer
    # Asked what one of them is, the listing is still cut to that entry.
    for question in ("what does SRV_PREFILL_LIMIT do?", "What setting is SRV_PREFILL_LIMIT?", "SRV_PREFILL_LIMIT 是什么参数？"):
        answer = answer_question(question, settings, kb=kb)
        assert "SRV_PREFILL_LIMIT" in answer.answer and "SRV_TOTAL_LIMIT" not in answer.answer, question


GATEWAY_PAGE = """<html><head><title>Confluence - Platform Space - Page 4411</title></head><body>
<nav><a href="/">Home</a></nav><main><h1>API gateway 502 errors</h1>
<h2>Symptoms</h2><p>Clients receive <code>502 Bad Gateway</code> while the vLLM pods report healthy.</p>
<h2>Cause</h2><p>The gateway's upstream idle timeout (60 s) is shorter than long streaming generations.</p>
<h2>Fix</h2><p>Raise <code>proxy_read_timeout</code> to 600s in the config map <code>gw-upstreams</code>:</p>
<pre>kubectl rollout restart deploy/api-gateway -n edge</pre></main></body></html>
"""


def test_a_tables_other_row_groups_are_quoted_only_for_a_name_the_question_asks_about(tmp_path):
    """Beside a runbook, every row group of a 60-row table scored over half the best one's:
    a question about one variable got 24 rows, and the continuation was cited by the table's
    first rows while it quoted others."""
    names = ["FLEET_MAX_BATCH", "FLEET_QUEUE_DEPTH", "FLEET_WARMUP_SECS", "FLEET_LOG_LEVEL", "FLEET_METRICS_PORT",
             "FLEET_SHARD_COUNT", "FLEET_DRAIN_TIMEOUT", "FLEET_RETRY_BUDGET"] + [f"FLEET_OPTION_{i:02d}" for i in range(8, 60)]
    rows = "\n".join(f"| `{n}` | {3 + 7 * i} | " + ("Seconds a pod keeps serving in-flight requests after SIGTERM before it exits."
                      if n == "FLEET_DRAIN_TIMEOUT" else f"Controls fleet behaviour number {i}; set per cluster.") + " |"
                      for i, n in enumerate(names))
    runbook = ("# Inference fleet runbook\n\nOwner: serving-oncall. Last reviewed 2026-01.\n\n## Restarting a stuck pod\n\n"
               "If `/health` stops answering for more than 2 minutes, cordon the node and restart the pod:\n\n"
               "    kubectl cordon $NODE\n    kubectl delete pod -n serving $POD --grace-period=30\n\n"
               "## Rotating the model cache\n\nWhen `/mnt/models` is above 85% full, run `/opt/fleet/bin/prune-models --keep 5`.\n")
    settings, kb = docs_kb(tmp_path, {"envvars.md": "# Fleet environment variables\n\nAll variables read by the fleet agent.\n\n"
                                                    "| Variable | Default | Meaning |\n|---|---|---|\n" + rows + "\n",
                                      "runbook.md": runbook, "wiki/gateway.html": GATEWAY_PAGE})
    answer = answer_question("what does FLEET_DRAIN_TIMEOUT do and what is its default?", settings, kb=kb)
    assert answer.grounded and "FLEET_DRAIN_TIMEOUT" in answer.answer
    assert answer.answer.count("FLEET_") <= 8 and "FLEET_OPTION_2" not in answer.answer and "FLEET_OPTION_5" not in answer.answer
    for c in answer.citations:  # each citation's text is what the answer quotes from it
        first_row = next(line for line in c.text.splitlines() if line.startswith("| `"))
        assert first_row in answer.answer, (c.title, first_row)
    both = answer_question("FLEET_DRAIN_TIMEOUT and FLEET_OPTION_42: what are their defaults?", settings, kb=kb)
    assert "FLEET_DRAIN_TIMEOUT" in both.answer and "FLEET_OPTION_42" in both.answer


def test_a_pages_byline_is_not_quoted_as_an_answer(tmp_path):
    """"Created by Alice, last modified yesterday" was a wiki page's first passage, and
    "Owner: serving-oncall. Last reviewed 2026-01." was quoted under every runbook answer."""
    page = GATEWAY_PAGE.replace("<h2>Symptoms</h2>", "<p>Created by Alice, last modified yesterday</p><h2>Symptoms</h2>")
    runbook = ("# Inference fleet runbook\n\nOwner: serving-oncall. Last reviewed 2026-01.\n\n## Restarting a stuck pod\n\n"
               "If `/health` stops answering for more than 2 minutes, cordon the node and restart the pod:\n\n"
               "    kubectl cordon $NODE\n    kubectl delete pod -n serving $POD --grace-period=30\n")
    settings, kb = docs_kb(tmp_path, {"wiki/gateway.html": page, "runbook.md": runbook})
    gateway = answer_question("the gateway returns 502 Bad Gateway, what do I do?", settings, kb=kb)
    assert gateway.grounded and "proxy_read_timeout" in gateway.answer and "Created by" not in gateway.answer
    pod = answer_question("how do I restart a stuck pod?", settings, kb=kb)
    assert pod.grounded and "kubectl cordon" in pod.answer and "Owner:" not in pod.answer


def test_a_one_field_byline_that_ends_like_a_sentence_is_still_a_byline(tmp_path):
    """A postmortem opened with "Author: on-call team. Duration: 47 minutes.": it was quoted
    after the root cause as the page's answer, and offered on its own as "It could also be"
    (newcomer trial). A sentence that only starts with the word is no byline."""
    from ingest.bylines import is_byline as _is_byline

    assert _is_byline("Author: on-call team. Duration: 47 minutes.") and _is_byline("负责人：推理平台组。")
    assert not _is_byline("Authors should pin the image tag before the rollout.")
    assert not _is_byline("Owner of the gateway must approve every change to the upstream pool, then restart it.")
    page = ("<html><body><h1>Postmortem: Qwen-72B outage</h1><p>Author: on-call team. Duration: 47 minutes.</p>"
            "<h2>Root cause</h2><p>The rollout doubled max-model-len without checking the KV cache capacity.</p>"
            "<h2>Action items</h2><ul><li>Add a KV-capacity check to the deploy pipeline.</li></ul></body></html>")
    settings, kb = docs_kb(tmp_path, {"postmortem.html": page, "gpu-quota.md": "# GPU quota\n\nEach team gets 8 H100s.\n"})
    answer = answer_question("what was the root cause of the Qwen-72B outage?", settings, kb=kb)
    assert answer.grounded and "KV cache capacity" in answer.answer and "Author:" not in answer.answer


def test_a_chinese_question_for_what_happened_gets_an_english_postmortems_timeline(tmp_path):
    """"那次故障的经过是什么" of an English postmortem got its root cause and action items, and
    never the Timeline that says what happened when (newcomer trial)."""
    postmortem = ("# Postmortem: gateway outage, 2026-11-14\n\n## Summary\nFor 47 minutes every chat request through the "
                  "gateway returned HTTP 502.\n\n## Timeline\n- 09:12 gateway 2.3.1 rolls out; 502s start.\n"
                  "- 09:52 rollback to gateway 2.3.0 (`helm rollback gateway 41`).\n- 09:59 502s stop.\n\n"
                  "## Root cause\nGateway 2.3.1 caches the upstream list for 30 minutes and ignored the drain event.\n\n"
                  "## Action items\n1. Set `upstream_refresh_seconds: 30` in the gateway config.\n")
    runbook = "# NCCL timeouts on the A100 pool\n\n## Fix\nSet `NCCL_IB_DISABLE=1` on the A100 pool and restart the pods.\n"
    settings, kb = docs_kb(tmp_path, {"postmortem.md": postmortem, "nccl.md": runbook})
    answer = answer_question("gateway 那次故障的经过是什么", settings, kb=kb)
    assert answer.citations and answer.citations[0].section == "Timeline" and "09:52" in answer.answer


def test_the_section_asked_for_leads_the_page_fix_brought_beside_it(tmp_path):
    """"how do I roll back a bad deploy" quoted the runbook's "Mitigation" (scale out, eject
    endpoints) above the "Rollback" section it matched best (newcomer trial)."""
    runbook = ("# Gateway returns 502\n\n## Symptoms\nClients get `502 Bad Gateway` from /v1/chat/completions.\n\n"
               "## Mitigation\n1. Scale out: `kubectl -n llm-serving scale deploy/vllm-qwen --replicas=8`.\n"
               "2. Eject bad endpoints: `gatewayctl pool eject --pool qwen-72b --only-unhealthy`.\n\n"
               "## Rollback\nIf the 502s started right after a deploy, roll the release back:\n\n"
               "    helm -n llm-serving rollback vllm-qwen <previous-revision>\n")
    other = "# GPU node drain\n\n## Steps\nCordon the node, then drain it with `kubectl drain --ignore-daemonsets`.\n"
    settings, kb = docs_kb(tmp_path, {"gateway-502.md": runbook, "drain.md": other})
    answer = answer_question("how do I roll back a bad deploy", settings, kb=kb)
    assert answer.citations[0].section == "Rollback" and "helm -n llm-serving rollback" in answer.answer
    if "--replicas=8" in answer.answer:  # the page's fix, if quoted, comes after
        assert answer.answer.index("helm -n llm-serving rollback") < answer.answer.index("--replicas=8")


def test_a_section_that_is_only_a_byline_is_not_cited_for_nothing(tmp_path):
    """A wiki page whose title section holds only "Owner: SRE team. Last updated …" led the
    answer with "### Rotating the inference API token [1]" and nothing under it, while
    citation [1] carried the byline the answer never showed."""
    page = ("<html><head><title>Wiki - Internal</title></head><body><nav><a href=\"/\">Home</a></nav>"
            "<h1>Rotating the inference API token</h1><p>Owner: SRE team. Last updated 2025-03-01.</p>"
            "<h2>When</h2><p>Rotate the token every 90 days, or at once if it leaked in a log or a screenshot.</p>"
            "<h2>Steps</h2><ol><li>Run <code>vault kv put secret/llm/api token=$(openssl rand -hex 32)</code>.</li>"
            "<li>Restart the gateway: <code>kubectl rollout restart deploy/llm-gateway -n llm</code>.</li></ol></body></html>")
    settings, kb = docs_kb(tmp_path, {"token-rotation.html": page, "gpu-quota.md": "# GPU quota\n\nEach team gets 8 H100s.\n"})
    answer = answer_question("how do I rotate the inference API token?", settings, kb=kb)
    assert answer.grounded and "vault kv put" in answer.answer and "Owner:" not in answer.answer
    assert answer.answer.startswith("### Rotating the inference API token\n")
    assert answer.citations and all(c.text.strip() and "Owner:" not in c.text for c in answer.citations)
    for i in range(1, len(answer.citations) + 1):
        assert f"[{i}]" in answer.answer


def test_a_twin_that_lacks_the_quoted_line_does_not_replace_the_passage_that_has_it(tmp_path):
    """The Chinese runbook got a third step with the error it prevents; the English one did
    not. An English question quoting that error was answered from the English twin, two
    steps without it, as a sure match."""
    en = ("# Restarting the embedding service\n\n## Steps\n1. Drain traffic: `kubectl annotate svc embed drain=true`.\n"
          "2. Restart: `kubectl rollout restart deploy/embed -n llm`.\n")
    zh = ("# 重启向量服务\n\n## 步骤\n1. 摘流量：`kubectl annotate svc embed drain=true`。\n"
          "2. 重启：`kubectl rollout restart deploy/embed -n llm`。\n"
          "3. 重启后等待 5 分钟再恢复流量，否则会出现 `connection reset by peer`。\n")
    settings, kb = docs_kb(tmp_path, {"en/restart.md": en, "zh/restart.md": zh})
    answer = answer_question("after restarting the embedding service I get connection reset by peer", settings, kb=kb)
    assert answer.grounded and "等待 5 分钟" in answer.answer and answer.citations[0].source == "zh/restart.md"
    assert "The Chinese version of this page says more" in answer.answer
    plain = answer_question("how do I restart the embedding service?", settings, kb=kb)
    assert plain.citations[0].source == "en/restart.md" and "Chinese" not in plain.answer
    # A twin that has the line, ending its sentence with a period, does not lack it.
    from types import SimpleNamespace

    from assistant.answer import _twin_lacks_what_is_quoted

    question = "after restarting I get connection reset by peer"
    matched = SimpleNamespace(text="3. 重启后等待 5 分钟，否则会出现 `connection reset by peer`。")
    assert _twin_lacks_what_is_quoted(question, matched, [SimpleNamespace(text="Restart the service.")])
    assert not _twin_lacks_what_is_quoted(question, matched, [SimpleNamespace(text="Wait, or clients see connection reset by peer.")])
    # English prose a Chinese question shares with an English passage is no quote: its
    # Chinese twin says it in Chinese, and is the one to show.
    prose = SimpleNamespace(text="When the GPU runs out of memory at start-up, lower --gpu-memory-utilization.")
    assert not _twin_lacks_what_is_quoted("启动时报 out of memory 错误怎么办", prose, [SimpleNamespace(text="启动时显存不足，调低显存利用率。")])


def test_a_pages_own_table_of_contents_is_not_quoted(tmp_path):
    """A man page that opens with a pandoc title line and a list of links to its own
    headings quoted both as the first thing of its answer. A lone "see [Docker](#docker)"
    is a sentence and stays."""
    page = ("% runner 7\n\n# Setting up the NPU image\n\nThis guide sets up the runner with NPU support.\n\n"
            " - [Background](#background)\n - [Hardware](#hardware)\n - [Docker](#docker)\n\n"
            "## Hardware\n\nAtlas 800I A2 inference cards are supported; for the container see [Docker](#docker).\n\n"
            "## Docker\n\nBuild the image with `make build IMAGE=npu`, then pick the card with "
            "`export NPU_VISIBLE_DEVICES=0` before `runner serve`.\n")
    settings, kb = docs_kb(tmp_path, {"npu.md": page})
    answer = answer_question("which image do I use on an Atlas 800I A2 NPU and how do I pick the card?", settings, kb=kb)
    assert answer.grounded and "NPU_VISIBLE_DEVICES" in answer.answer
    assert "[Background](#background)" not in answer.answer and "(#hardware)" not in answer.answer
    assert "% runner 7" not in answer.answer  # a pandoc title line says nothing
    asked_in_chinese = answer_question("Atlas 800I A2 NPU 用哪个镜像？怎么指定用第几张卡？", settings, kb=kb)
    assert asked_in_chinese.grounded
    # "only in English" is said once, over the first quote, whichever passage comes first
    first_quote = asked_in_chinese.answer.split("\n\n")[1]
    assert first_quote == "（仅有英文原文）" and asked_in_chinese.answer.count("（仅有英文原文）") == 1


def test_a_table_of_contents_with_descriptions_is_not_indexed(tmp_path):
    """"- [The Grammar Parameter](#the-grammar-parameter): Shape the response." names every
    section of the page in a few lines: its "Table of Contents" section matched a question on
    the grammar parameter best and was quoted in place of the section with the request."""
    page = ("# Guidance\n\nThe server supports JSON and regex grammars and tools.\n\n"
            "## Table of Contents\n\n### Grammar and Constraints\n\n"
            "- [The Grammar Parameter](#the-grammar-parameter): Shape the response with a grammar.\n"
            "- [JSON Schema Integration](#json-schema-integration): Constrain the output with a JSON schema.\n\n"
            "### Tools\n\n- [The Tools Parameter](#the-tools-parameter): Call predefined functions.\n"
            "- [OpenAI integration](#openai-integration): Use OpenAI's client.\n\n"
            "## Grammar and Constraints\n\n### The Grammar Parameter\n\nPass a grammar with the request:\n\n"
            "```json\n{\"inputs\": \"...\", \"parameters\": {\"grammar\": {\"type\": \"json\", \"value\": {}}}}\n```\n\n"
            "## Tools\n\n### The Tools Parameter\n\nList the functions under `tools`.\n")
    settings, kb = docs_kb(tmp_path, {"guidance.md": page})
    assert not any("(#the-grammar-parameter)" in c.text for c in kb.index.chunks)
    answer = answer_question("grammar 参数是干嘛用的？想让 /generate 输出固定 schema 的 JSON，请求体怎么写？", settings, kb=kb)
    assert answer.grounded and '"type": "json"' in answer.answer and "(#json-schema-integration)" not in answer.answer


def test_release_notes_give_way_to_the_page_that_explains_the_flag(tmp_path):
    """Release notes name each feature the day it shipped, in a line: "which startup flag
    serves embeddings?" was answered from them instead of the parameter reference."""
    from assistant.retrieval import is_release_log

    notes = ("# Release gadget 0.10.0\n\n## Major Features and Improvements\n\n"
             "- Support embedding models such as Qwen3-Embedding as a service.\n"
             "- Support prefix cache on NPU.\n\n"
             "# Release gadget 0.9.0\n\n## Major Features and Improvements\n\n- Support the chat endpoint for embedding models.\n")
    cli = ("# Service Startup Parameters\n\n## Common Parameters\n\n"
           "| Parameter | Meaning |\n|---|---|\n| `--model` | path of the model to serve |\n"
           "| `--task` | `generate` (default) or `embed`: serve an embedding model and its embeddings endpoint |\n"
           "| `--port` | port of the service |\n")
    settings, kb = docs_kb(tmp_path, {"RELEASE.md": notes, "cli_reference.md": cli})
    assert is_release_log(next(c for c in kb.index.chunks if c.source == "RELEASE.md"))
    assert not is_release_log(next(c for c in kb.index.chunks if c.source == "cli_reference.md"))
    trace: dict = {}
    answer = answer_question("I want to serve Qwen3-Embedding-8B with gadget and get embeddings, not chat. "
                             "Which startup flag switches the service type to embedding?", settings, kb=kb, trace=trace)
    assert answer.grounded and answer.citations[0].source == "cli_reference.md" and "--task" in answer.answer
    # Asked about versions, release notes are what answers.
    trace = {}
    answer_question("since which gadget release (0.9.0 or 0.10.0) are embedding models supported?", settings, kb=kb, trace=trace)
    notes_match = next(m for m in trace["retrieval"].articles if m.chunks[0].chunk.source == "RELEASE.md")
    assert notes_match.page_penalty < 0.1


IMAGE_OPTIONS = """## OPTIONS

#### **--image**=*IMAGE*

OCI container image to run the model with. By default the image is picked for the accelerator found:

| Backend / Accelerator | Image |
| --------------------- | ----- |
| CPU, Vulkan           | quay.io/runner/runner |
| ROCm (AMD)            | quay.io/runner/rocm   |
| CUDA (NVIDIA)         | quay.io/runner/cuda   |

#### **--keep-groups**

pass --group-add keep-groups to podman, so a GPU reachable through group access stays reachable in the container.
"""


def test_a_section_included_in_several_pages_is_quoted_once(tmp_path):
    """Man pages include one options file each: "It could also be" quoted the same table
    from two more pages, and headings the page set in bold came out as "****--image**…"."""
    pages = {f"runner-{cmd}.1.md": f"# runner-{cmd}\n\n## DESCRIPTION\n\n{what}\n\n{IMAGE_OPTIONS}"
             for cmd, what in (("run", "Run a model as a chat bot in a container."),
                               ("serve", "Serve a model over an OpenAI-compatible REST API in a container."),
                               ("bench", "Benchmark a model's token throughput in a container."))}
    settings, kb = docs_kb(tmp_path, pages)
    answer = answer_question("which container image for ROCm (AMD), and can I override the --image?", settings, kb=kb)
    assert answer.grounded and "quay.io/runner/rocm" in answer.answer
    assert answer.answer.count("quay.io/runner/rocm") == 1, answer.answer
    assert "****" not in answer.answer and "**--image**" in answer.answer
    assert "The same text is also in" in answer.answer
    cited = {c.source for c in answer.citations}
    assert len(cited) >= 2  # the pages that repeat it are still named


FAQ_ENTRIES = [
    ("Which models can I call?", "The `/v1/models` route of the gateway lists every model and its cluster."),
    ("Why does my streaming response arrive in big chunks?", "A proxy is buffering: set `proxy_buffering off;` in nginx."),
    ("Why is the usage token count different from tiktoken?", "Each model has its own tokenizer; trust the `usage` field."),
    ("Why do my answers stop mid-sentence with finish_reason length?",
     "The gateway applies a default `max_tokens` of 512 when the request sets none; set `max_tokens` yourself."),
    ("What is the longest context I can send?", "32768 tokens of prompt plus completion, whatever the model card says."),
    ("Where are the server logs of my requests?", "In Grafana Explore, Loki source, filtered by the `x-request-id` header."),
    ("How do I restart one replica?", "Delete its pod with `kubectl -n infer delete pod <name>`; never `rollout restart`."),
    ("Why does temperature 0 give different answers?", "Batching changes the summation order; pass a `seed`."),
]


def test_a_faq_of_bold_questions_is_answered_by_its_entry(tmp_path):
    """Packed by size, a FAQ's chunk ended on a question whose answer sat in the next chunk,
    and an answer quoted four other questions around the asked one. (Under a `##` heading the
    questions stay in its section, each starting a chunk: tests/test_ingest_docs.py.)"""
    from ingest.chunking import chunk_document
    from ingest.documents import parse_document

    body = "\n\n".join(f"**Q: {q}**\n\n{a}" for q, a in FAQ_ENTRIES)
    settings, kb = docs_kb(tmp_path, {"faq.md": f"# Platform FAQ\n\nQuestions we hear every week.\n\n{body}\n",
                                      "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    path = settings.kb_dir / "faq.md"
    chunks = chunk_document(parse_document(path, settings.kb_dir, path.read_bytes()))
    # A page without headings whose bold lines are questions: each is a section of its own.
    assert [c.title.split(" > ")[-1] for c in chunks[1:]] == [f"Q: {q}" for q, _a in FAQ_ENTRIES]
    answer = answer_question("my completions stop in the middle of a sentence, finish_reason is length", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "faq.md"
    assert "default `max_tokens` of 512" in answer.answer
    others = [q for q, _a in FAQ_ENTRIES if "finish_reason" not in q]
    assert not [q for q in others if q in answer.answer]


PREEMPTION_RUNBOOK = (
    "# Latency spikes from preemption\n\n## Symptoms\n\np99 latency jumps during peaks. The log shows:\n\n"
    "```\nWARNING scheduler.py:1481] Sequence group cmpl-5f2a is preempted by PreemptionMode.RECOMPUTE mode because "
    "there is not enough KV cache space.\n```\n\n## Why\n\nEach running sequence holds cache blocks; peaks exhaust them.\n\n"
    "## 3. What to do\n\n1. Lower `max_num_seqs` from 128 to 96.\n2. Move the model to TP=4.\n")


def test_a_symptom_match_brings_its_runbooks_fix_section(tmp_path):
    """The pasted log line matches a runbook's "Symptoms"; the commands sit under "What to
    do" and share few of the question's words. They were never quoted."""
    settings, kb = docs_kb(tmp_path, {"preemption.md": PREEMPTION_RUNBOOK,
                                      "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question("Sequence group is preempted by PreemptionMode.RECOMPUTE mode because there is not enough "
                             "KV cache space", settings, kb=kb)
    assert answer.grounded and answer.citations[0].section == "Symptoms"
    assert "Lower `max_num_seqs` from 128 to 96" in answer.answer
    assert answer.answer.index("PreemptionMode.RECOMPUTE") < answer.answer.index("max_num_seqs")
    assert "仅有英文原文" not in answer.answer
    # Asked in Chinese of an English-only runbook: said so, then quoted as written.
    zh = answer_question("日志一直刷 Sequence group is preempted by PreemptionMode.RECOMPUTE，延迟很高，怎么处理？", settings, kb=kb)
    assert zh.grounded and zh.citations[0].source == "preemption.md"
    assert "（仅有英文原文）" in zh.answer


CERT_ERROR = ('{\n  "endpoint": "https://api.openai.com/v1",\n  "error": {\n    "cause": {\n      "code": "UNABLE_TO_VERIFY_LEAF_SIGNATURE"\n'
         '    }\n  }\n}')
CERT_FAQ = ("# Certificate errors behind a proxy\n\n## Problem\n\n"
            "Behind a proxy (Surge, a company gateway) requests to the model provider fail with a certificate error:\n\n"
            "```bash\n[TypeError: fetch failed] {\n  cause: [Error: unable to verify the first certificate] {\n"
            "    code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'\n  }\n}\n```\n\nor:\n\n```json\n" + CERT_ERROR + "\n```\n\n"
            "The proxy signs with a self-signed or intermediate certificate that Node.js does not trust by default.\n\n"
            "## Solution\n\nStart the app with certificate checks skipped: add `NODE_TLS_REJECT_UNAUTHORIZED=0` to its "
            "environment.\n\n```yaml\nenvironment:\n  - NODE_TLS_REJECT_UNAUTHORIZED=0\n```\n")
PROXY_ENTRY = ("### `{name}`\n\n- Type: optional\n- Description: the base URL of the OpenAI API proxy; requests to the provider "
         "go through this proxy endpoint instead of api.openai.com. Check your proxy's suffix: some need `/v1`.\n"
         "- Default: `https://api.openai.com/v1`\n- Example: `https://proxy.example.com/v1`\n\n")
PROXY_PROVIDERS = ("# Model provider variables\n\n## OpenAI proxy errors\n\nA proxy error reads:\n\n```json\n"
                   + CERT_ERROR.replace("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "ETIMEDOUT") + "\n```\n\n"
                   + "".join(PROXY_ENTRY.replace("{name}", f"OPENAI_PROXY_URL_{i}") for i in range(8)))
PROXY_DOCKER = ("# Deploy with Docker\n\n## Using a third-party OpenAI proxy\n\nA message failing with a cause such as "
          "ECONNREFUSED means the container cannot reach the proxy endpoint.\n\n" + ("When the OpenAI API is reached through "
          "a third-party proxy, set the proxy URL and the API key in the container's environment. The proxy must forward "
          "`/v1`; an error from the proxy shows in the container log as an `error` object with its `cause`:\n\n"
          "```json\n" + CERT_ERROR.replace("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "ECONNREFUSED") + "\n```\n\n") * 4)


def test_the_best_pages_fix_is_quoted_before_other_pages_passages(tmp_path):
    """An FAQ page's "Problem" matched the pasted error; its "Solution" only took the room the
    alternatives left, and two full passages from other pages left none (LobeChat's docs,
    a "问题描述" quoted without its "解决方案"). The alternatives are cut down instead."""
    settings, kb = docs_kb(tmp_path, {"faq/cert.md": CERT_FAQ, "env/providers.md": PROXY_PROVIDERS, "docker.md": PROXY_DOCKER,
                                      "compose.md": PROXY_DOCKER.replace("# Deploy with Docker", "# Deploy with Docker Compose")})
    question = ("LobeChat in docker with my own OpenAI proxy as the API endpoint: every message fails with an error "
                "whose cause is UNABLE_TO_VERIFY_LEAF_SIGNATURE. The proxy URL works in a browser. What should I set?")
    answer = answer_question(question, settings, kb=kb, use_llm=False)
    assert answer.grounded and answer.citations[0].source == "faq/cert.md"
    assert "NODE_TLS_REJECT_UNAUTHORIZED=0" in answer.answer
    assert len(answer.answer) <= MAX_ANSWER_CHARS
    # The alternative is still offered, cut down, after the fix.
    assert "Deploy with Docker > Using a third-party OpenAI proxy" in answer.answer
    assert answer.answer.index("NODE_TLS_REJECT_UNAUTHORIZED=0") < answer.answer.index("Deploy with Docker")


GATEWAY_RUNBOOK = (
    "# Gateway returns 502 after a deploy\n\n## Symptoms\n\n- The gateway returns `502 Bad Gateway` for a few minutes after "
    "every rollout.\n- Gateway log: `upstream connect error or disconnect/reset before headers`.\n\n## Cause\n\nNew pods "
    "are marked ready before the model finishes loading, so traffic reaches servers that are not listening yet.\n\n"
    "## Fix\n\n1. Point the readiness probe at `/health`.\n2. Roll out with `maxUnavailable: 0`.\n")
GATEWAY_RUNBOOK_ZH = (
    "# 发布后网关返回 502\n\n## 现象\n\n每次滚动发布后的几分钟内，网关对请求返回 `502 Bad Gateway`。\n\n## 原因\n\n"
    "新 Pod 在模型加载完之前就被标记为就绪，流量打到了还没监听端口的服务上。\n\n## 处理方法\n\n"
    "1. 就绪探针改为探测 `/health`。\n2. 发布时设置 `maxUnavailable: 0`。\n")


@pytest.mark.parametrize("page, question, cause, fix", [
    (GATEWAY_RUNBOOK, "why do we get upstream connect error or disconnect/reset before headers after each deploy",
     "marked ready before the model finishes loading", "maxUnavailable: 0"),
    (GATEWAY_RUNBOOK_ZH, "为什么每次滚动发布后网关都返回 502 Bad Gateway", "模型加载完之前就被标记为就绪", "maxUnavailable: 0"),
])
def test_a_symptom_match_brings_its_runbooks_cause_as_well_as_its_fix(tmp_path, page, question, cause, fix):
    """The matched "Symptoms" only say back what the asker sees: "why do we get 502 after
    each deploy" was answered with them and the fix, and the runbook's "Cause" was left out
    (newcomer trial)."""
    settings, kb = docs_kb(tmp_path, {"gateway-502.md": page,
                                      "disk.md": "# Node disk full\n\n## Symptoms\n\nPods are evicted for ephemeral-storage.\n\n"
                                                 "## Fix\n\nMount a shared PVC for the model cache.\n"})
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "gateway-502.md"
    assert answer.citations[0].section in ("Symptoms", "现象")
    assert cause in answer.answer and fix in answer.answer
    assert answer.answer.index(cause) < answer.answer.index(fix)  # in the page's order
    assert "PVC" not in answer.answer


def test_a_chinese_runbooks_steps_follow_its_when_this_applies_section(tmp_path):
    """A drain runbook's "适用场景" (Xid 79, Xid 48) matched "节点出现 Xid 79 怎么处理？", and
    the answer, given as sure, was only that list: the commands under "步骤" were never
    quoted, as 步骤 alone was no fix heading (newcomer trial)."""
    from ingest.chunking import section_kind

    assert [section_kind(h) for h in ("步骤", "操作流程", "处理流程", "3. 具体步骤")] == ["fixes"] * 4
    # a bare 处理 is the commonest Chinese "what to do" heading; it was never quoted as the fix (trial)
    assert [section_kind(h) for h in ("处理", "4. 处理措施", "应急处理")] == ["fixes"] * 3
    page = ("# GPU 节点下线流程\n\n## 适用场景\n\n- 节点出现 Xid 79（GPU has fallen off the bus）或 Xid 48\n"
            "- `nvidia-smi` 显示某张卡 `ERR!`\n\n## 步骤\n\n1. 先打污点：`kubectl taint nodes <node> gpu-maint=true:NoSchedule`\n"
            "2. 驱逐：`kubectl drain <node> --ignore-daemonsets --grace-period=120`\n\n## 注意\n\n不要在高峰期操作。\n")
    settings, kb = docs_kb(tmp_path, {"gpu-node-drain.md": page, "quota.md": "# 配额\n\n每个团队 8 张 H100。\n"})
    for question in ("节点出现 Xid 79 怎么处理？", "How do I take a node with Xid 79 out of service?"):
        answer = answer_question(question, settings, kb=kb)
        assert answer.grounded and "kubectl drain <node>" in answer.answer, question


def test_a_procedure_section_is_a_runbooks_fix_section(tmp_path):
    """A wiki page's "When to drain" matched an XID 79 question; the steps under
    "Procedure" were never quoted."""
    page = ("# Draining a GPU node\n\n## When to drain\n\nDrain a node when XID 79 (GPU has fallen off the bus) appears "
            "in dmesg.\n\n## Procedure\n\n1. Cordon the node: `kubectl cordon $NODE`\n2. Evict: `kubectl drain $NODE "
            "--ignore-daemonsets`\n\n## After maintenance\n\nRun `nvidia-smi -L` and uncordon.\n")
    settings, kb = docs_kb(tmp_path, {"drain.md": page, "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question("dmesg shows XID 79 (GPU has fallen off the bus), what do I do", settings, kb=kb)
    assert answer.grounded and "kubectl cordon $NODE" in answer.answer


def test_a_file_named_by_its_title_keeps_it_and_a_byline_is_not_quoted(tmp_path):
    """Chinese teams name files after their titles: the answer's heading dropped the name as
    if it were an identifier. A page's owner/version line was quoted as its general answer."""
    settings, kb = docs_kb(tmp_path, {
        "昇腾推理部署手册.md": "版本：V1.3    编写：推理平台组\n\n本手册说明昇腾 910B 上部署推理服务的步骤和常见故障的处理办法。\n\n"
                          "## HCCL 初始化失败\n\n日志出现 HcclGetRootInfo, error code is 6 时，先用 npu-smi info 查残留进程，kill 后重启。\n\n"
                          "## 显存不足\n\n把 --gpu-memory-utilization 调到 0.85。\n",
        "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question("昇腾上部署推理服务，HcclGetRootInfo, error code is 6 启动失败怎么办", settings, kb=kb)
    assert answer.grounded and answer.answer.startswith("### 昇腾推理部署手册 > HCCL 初始化失败")
    assert "npu-smi info" in answer.answer and "本手册说明" in answer.answer and "V1.3" not in answer.answer
    # An opening that says nothing the question asks but the page's title is no answer (trial)
    answer = answer_question("昇腾上 HcclGetRootInfo, error code is 6 启动失败怎么办", settings, kb=kb)
    assert "npu-smi info" in answer.answer and "本手册说明" not in answer.answer


def test_a_refusal_names_this_kbs_topics_not_the_bundled_ones(wiki_settings):
    kb = open_kb(wiki_settings, progress=lambda _m: None)
    answer = answer_question("How do I rotate the TLS certificate of our Kafka brokers?", wiki_settings, kb=kb)
    assert not answer.grounded
    assert "Inference on-call wiki" in answer.answer
    assert "NCCL" not in answer.answer and "FastDeploy" not in answer.answer


SLEEP = dedent("""
    # Idle mode

    Idle mode lets the server hand most of its GPU memory back while it stays up, so another job can use the
    card between bursts of traffic. The weights move to host memory and the KV cache is dropped; waking up is
    much faster than a restart. It works with tensor and pipeline parallelism alike.

    ## Levels

    Level one keeps the weights in host memory; level two drops them too, for when the next model differs.
    Level two needs the weights to be loaded again on wake-up, which takes as long as a cold start would.

    ## Usage

    Start the server with idle mode allowed, then put it to sleep and wake it over HTTP:

    ```bash
    modelsrv serve --allow-idle
    curl -X POST localhost:8000/idle?level=1
    curl -X POST localhost:8000/wake
    ```

    ## Limits

    Only one model per server can be idle at a time.
""")


def test_the_section_under_a_matching_introduction_is_quoted_too(tmp_path: Path):
    """A page's introduction often matches the question best while the commands sit a
    heading below: the best document's other matching sections follow the best passage."""
    settings, index = docs_kb(tmp_path, {"idle.md": SLEEP, "oncall.md": WIKI})
    answer = answer_question("how do I give the GPU memory back without stopping the server, and wake it up again?", settings, kb=index)
    assert answer.grounded and answer.citations[0].source == "idle.md"
    assert answer.answer.startswith("### Idle mode")
    assert "modelsrv serve --allow-idle" in answer.answer  # from "Usage", a heading below the match
    assert len(answer.answer) <= MAX_ANSWER_CHARS


def test_only_citations_still_quoted_under_the_bound_are_listed(tmp_path: Path):
    """Ten pages answer alike; the answer quotes what fits in 3,000 characters and lists
    only the sources it still quotes."""
    kb_dir = tmp_path / "pages"
    kb_dir.mkdir()
    for i in range(10):
        body = " ".join(f"When gizmo daemon {i} stalls after a reload, run `gizmoctl restart --unit {i}` and check step {j}."
                        for j in range(14))
        (kb_dir / f"gizmo-{i}.md").write_text(f"# Gizmo daemon {i}\n\n## Stalls after a reload\n\n{body}\n", encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=tmp_path / "cache")
    kb = open_kb(settings, progress=lambda _m: None)
    answer = answer_question("the gizmo daemon stalls after a reload, how do I restart it?", settings, kb=kb, top_k=10)
    assert answer.grounded and len(answer.answer) <= MAX_ANSWER_CHARS
    assert 1 <= len(answer.citations) < 10
    assert all(f"[{n}]" in answer.answer for n in range(1, len(answer.citations) + 1))


REPRO = dedent("""
    # Repeatable outputs

    The server does not promise identical outputs on different GPU models: results repeat only on the
    same hardware with the same server version.

    ## Seeding the samplers
    Pass `--seed 7` at start-up, so every worker's random state begins from the same seed value.

    ## Request ordering
    Requests batched together may be scheduled differently from run to run; send them one by one to compare.
""")


def test_a_passage_from_further_down_brings_the_documents_short_opening(tmp_path: Path):
    kb_dir = tmp_path / "docs"
    kb_dir.mkdir()
    (kb_dir / "repeat.md").write_text(REPRO, encoding="utf-8")
    (kb_dir / "long-intro.md").write_text("# Tuning\n\n" + "General background on tuning. " * 60
                                          + "\n\n## Seed for the load generator\nRun the load tool with `loadgen --seed 3`.\n", encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=tmp_path / "cache")
    kb = open_kb(settings, progress=lambda _m: None)
    answer = answer_question("which seed setting makes sampling repeat between runs of the server?", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "repeat.md"
    assert "--seed 7" in answer.answer
    assert "same hardware with the same server version" in answer.answer  # the opening, cited too
    assert any(c.section == "Repeatable outputs" or c.title == "Repeatable outputs" for c in answer.citations)
    both = answer_question("request ordering batched scheduled differently run to run identical outputs GPU models hardware "
                           "server version", settings, kb=kb)
    assert both.answer.count("results repeat only on the") == 1  # quoted once, as a passage of its own or as the opening
    answer = answer_question("loadgen seed for the load generator", settings, kb=kb)
    assert answer.citations[0].source == "long-intro.md" and "General background" not in answer.answer  # too long to add


def test_a_short_opening_that_says_what_to_set_takes_its_room_before_the_passages_continuation(tmp_path: Path):
    """"请求里带了 tools，但返回里没有 tool_calls": the page on tool calls says in its opening
    to start the server with `--tool-call-parser`; the question matched its long multi-round
    example further down, whose later chunks took all the room, and the flag was left out
    (dev trees). An opening that says what to set comes before that continuation."""
    example = "\n\n".join(f"Round {i}: the client sends the tool result of call {i} back in the messages, "
                            f"and the model answers with the next tool call or the final text." for i in range(60))
    opening = "Function calling needs a parser for the model's format: start the server with `--tool-call-parser internlm` (or qwen, llama3)."
    parallel = "\n\n".join(f"Call {i}: with several tools in one round, the model answers with tool call {i} and the "
                           f"client sends each result back in the messages of the next round." for i in range(30))
    page = ("# Tools\n\n" + opening + "\n\n## Multi-round tool calls\n\n" + example
            + "\n\n## Parallel tool calls\n\n" + parallel + "\n")
    client = ("# Client usage\n\n## Reading the response message\n\n" + "\n\n".join(
        f"Field {i}: the response message holds its content, and tool_calls when a tool is called; "
        f"read both fields." for i in range(30)) + "\n")
    answer = _answer_on(tmp_path, {"tools.md": page, "client.md": client},
                        "requests carry tools, but the response message has no tool_calls: the model answers in "
                        "plain text over several rounds")
    assert answer.grounded and answer.citations[0].source == "tools.md"
    assert "--tool-call-parser" in answer.answer and len(answer.answer) <= MAX_ANSWER_CHARS


def test_an_opening_that_is_only_a_usage_block_is_not_quoted(tmp_path: Path):
    kb_dir = tmp_path / "docs"
    kb_dir.mkdir()
    (kb_dir / "launcher.md").write_text(
        "# Launcher arguments\n\n```shell\nUsage: launcher [OPTIONS]\n\nOptions:\n```\n\n"
        "## MAX_QUEUE_DEPTH\n\n```shell\n  --max-queue-depth <N>\n      Requests waiting beyond this depth are rejected with 429.\n```\n",
        encoding="utf-8")
    (kb_dir / "other.md").write_text("# Install\n\n## Wheels\n\nRun `pip install widget`.\n", encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=tmp_path / "cache")
    kb = open_kb(settings, progress=lambda _m: None)
    answer = answer_question("requests rejected with 429 when the queue is deep, which launcher setting?", settings, kb=kb)
    assert answer.grounded and "--max-queue-depth" in answer.answer
    assert "Usage: launcher" not in answer.answer


def test_a_twin_passage_is_found_by_what_it_names_not_by_its_position(tmp_path):
    """zh and en split a page into different numbers of chunks: the zh chunk quoted for an
    en passage is the one holding the same env vars, not the one at the same position."""
    from assistant.answer import _in_lang
    from assistant.retrieval import ArticleMatch, ScoredChunk

    def block(lang: str, names: range) -> str:
        note = "说明：这个变量控制服务的一项行为，默认值见代码。" if lang == "zh" else "Controls one behaviour of the server."
        return "\n\n".join(f"```python\n# {note}\n\"WIDGET_VAR_{i}\": os.getenv(\"WIDGET_VAR_{i}\", \"{i}\"),\n```" for i in names)

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "env.md").write_text("# Environment variables\n\n" + block("en", range(40)), encoding="utf-8")
    (docs / "zh").mkdir()
    intro = "本页列出服务读取的全部环境变量。" * 60  # a long zh-only opening shifts every chunk
    (docs / "zh" / "env.md").write_text(f"# 环境变量\n\n{intro}\n\n" + block("zh", range(40)), encoding="utf-8")
    settings = replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "cache")
    kb = open_kb(settings, progress=lambda _m: None)
    en = [c for c in kb.index.chunks if c.lang == "en" and '"WIDGET_VAR_30"' in c.text][0]
    zh = _in_lang(kb, ArticleMatch(doc_id=en.doc_id, score=1.0, relevance=1.0, chunks=[ScoredChunk(en, 1.0, 1.0, 1.0)]), "zh")
    assert zh.lang == "zh" and '"WIDGET_VAR_30"' in zh.text


def _answer_on(tmp_path: Path, pages: dict[str, str], question: str):
    """Answer `question` from a doc tree of `pages` (file name → markdown) plus an unrelated page."""
    kb_dir = tmp_path / "docs"
    kb_dir.mkdir()
    for name, text in {**pages, "other.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"}.items():
        (kb_dir / name).write_text(text, encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=tmp_path / "cache")
    return answer_question(question, settings, kb=open_kb(settings, progress=lambda _m: None))


def test_a_guides_opening_is_followed_by_its_steps(tmp_path: Path):
    """The introduction of a how-to page says what the page does and matches best; the
    commands are under the next headings, which share few of the question's words."""
    guide = ("# Multi-node deployment guide\n\nThis guide deploys a model with tensor parallel size 16 across two nodes "
             "of eight GPUs each, for models that do not fit on one node.\n\n"
             "## 1. Prepare the containers\n\nStart one container per node with host networking.\n\n"
             "## 2. Form the cluster\n\nOn the first machine run `clusterctl start --head`, then on the second "
             "`clusterctl start --address HEAD_IP:6379`.\n\n"
             "## 3. Serve\n\nRun `widget serve MODEL --tp 16` on the first machine.\n")
    answer = _answer_on(tmp_path, {"multinode.md": guide},
                        "model doesn't fit on one 8-GPU node, how do I run tp 16 across two nodes?")
    assert answer.grounded and answer.citations[0].source == "multinode.md"
    assert answer.answer.startswith("### Multi-node deployment guide")
    assert "clusterctl start --head" in answer.answer and len(answer.answer) <= MAX_ANSWER_CHARS


def test_an_openings_first_section_with_commands_gets_room_before_other_pages(tmp_path: Path):
    """A page's opening says what the page does and matched "how do I put them behind one
    URL"; the command sits under the next heading. Other pages' launch passages, close enough
    to quote after it, used to take all the room that section had (dev trees)."""
    proxy = ("# Request distributor\n\nThe request distributor puts several api_server instances behind one URL: "
             "clients only call a single URL, the proxy, which spreads their requests over the servers on several boxes "
             "for load balancing.\n\n"
             "## Startup\n\nStart the proxy:\n\n```shell\nwidget serve proxy --server-port 8000\n```\n\n"
             "Then start each api_server with `--proxy-url http://HOST:8000` and it joins the proxy.\n\n"
             "## Serving strategy\n\nHybrid mode does not separate prefill from decode instances; the other "
             "mode runs them on different nodes.\n")
    launch = "".join(
        f"## Launch the api_server, variant {i}\n\nStart the api_server on one GPU and call its URL "
        f"from clients.\n\n```shell\n"
        + "\n".join(f"widget serve api_server model-{i} --server-port {23333 + j} --tp 1  # replica {j} of one box"
                     for j in range(14)) + "\n```\n\n"
        for i in range(3))
    answer = _answer_on(tmp_path, {"proxy.md": proxy, "api_server.md": "# API server\n\n" + launch},
                        "I start one api_server per GPU on several boxes. How do I expose them behind a single URL "
                        "with load balancing?")
    assert answer.grounded and answer.citations[0].source == "proxy.md"
    assert "widget serve proxy --server-port 8000" in answer.answer
    assert len(answer.answer) <= MAX_ANSWER_CHARS


def test_a_page_without_an_introduction_does_not_append_its_other_problems(tmp_path: Path):
    """A troubleshooting page that opens with its first `##` problem has no introduction:
    when that problem is the answer, the page's other problems are not quoted after it."""
    page = ("## Server exits with KV cache too small\n\nAt start-up the server allocates the KV cache and exits "
            "when fewer blocks fit than one request needs. Lower `--max-context` to 16384.\n\n"
            "## Requests time out with HTTP 504\n\nRaise `--request-timeout 1800` for batch jobs.\n\n"
            "## Workers crash with Bus error\n\nStart the container with `--shm-size=16g`.\n")
    answer = _answer_on(tmp_path, {"troubleshooting.md": page}, "the server exits at start-up: KV cache too small")
    assert answer.grounded and answer.citations[0].source == "troubleshooting.md"
    assert "--max-context" in answer.answer
    assert "request-timeout" not in answer.answer and "shm-size" not in answer.answer


def test_an_untitled_pages_short_introduction_is_followed_by_its_how_to(tmp_path: Path):
    """A page no heading titles ("### Custom Models", "### Using Python Custom Models", …)
    is still introduced by its first section: when that matches best, the how-to under the
    next heading comes with it. A FAQ's first question is not an introduction."""
    page = ("### Custom Models\n\nFor models the framework does not support, you can describe the model "
            "structure yourself in a Python file.\n\n"
            "### Using Python Custom Models\n\nPass the file with `--custom ~/mymodel.py` to the chat, webui or "
            "server command.\n\n"
            "### Writing Python Custom Models\n\nEnd the file with `__model__ = MyModel`.\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    answer = _answer_on(tmp_path / "a", {"custom_models.md": page},
                        "my architecture is not supported: can I describe the model structure myself in Python?")
    assert answer.grounded and answer.citations[0].source == "custom_models.md"
    assert "--custom ~/mymodel.py" in answer.answer
    faq = ("### Why is the first token slow\n\nThe first request compiles the kernels, so it is slower than "
           "the rest. Later requests are fast.\n\n"
           "### Requests time out with HTTP 504\n\nRaise `--request-timeout 1800` for batch jobs.\n")
    answer = _answer_on(tmp_path / "b", {"faq.md": faq}, "why is the first token so slow after start-up?")
    assert answer.grounded and "request-timeout" not in answer.answer


QUANTIZATION = dedent("""
    # Quantization

    Serving quantized checkpoints cuts GPU memory: weights in 4 or 8 bits instead of 16.

    ## AWQ
    AWQ checkpoints load with `--quantization awq`. They need compute capability 7.5 or newer.

    ## GPTQ
    GPTQ checkpoints load with `--quantization gptq`. Marlin kernels speed them up on Ampere.

    ## FP8
    FP8 weights need Hopper or Ada GPUs; pass `--quantization fp8` and `--kv-cache-dtype fp8`.

    ## Accuracy
    Quantized models lose a little accuracy; compare perplexity before switching production traffic.
""")
FAQ = "# Frequently asked questions\n\n" + "\n\n".join(f"## {q}\n{a}" for q, a in [
    ("Which port does the server listen on?", "Port 8000 unless `--port` says otherwise."),
    ("Where do logs go?", "To stderr; set `LOG_LEVEL=debug` for more."),
    ("Can I use a smaller model to save memory?",
     "Yes: a quantized checkpoint needs less GPU memory; which GPU you need for it is in the quantization guide."),
    ("How do I stop the server?", "Send SIGTERM; in-flight requests finish first."),
    ("How do I enable TLS?", "Pass `--ssl-certfile` and `--ssl-keyfile`; clients then connect over https."),
    ("How do I require an API key?", "Set `--api-key` and send it as a bearer token in the Authorization header."),
    ("Where are the Prometheus metrics?", "Scrape `/metrics` on the same port; request latency histograms are included."),
    ("Why do clients time out after 60 seconds?", "The load balancer closes idle connections; raise its idle timeout."),
    ("Can I run two models on one server?", "No: start one server per model and route by path at the gateway."),
])


def test_a_close_call_goes_to_the_page_about_the_subject_not_a_pointer_elsewhere(tmp_path, monkeypatch):
    """An FAQ entry that only points at the quantization guide shares the question's words
    better than the guide does; the guide as a whole is about the question, the FAQ page is
    not. Whether the KB answers is judged on the passages' own evidence either way."""
    from assistant import retrieval
    from assistant.retrieval import RetrievalParams, search

    settings, kb = docs_kb(tmp_path, {"quantization.md": QUANTIZATION, "faq.md": FAQ})
    question = "what GPU does a quantized checkpoint need"

    ranked = search(kb.index, kb.embedder, question, RetrievalParams.from_settings(settings))
    assert ranked.articles[0].doc_id.endswith("quantization") and ranked.articles[0].page_penalty == 0.0
    assert ranked.articles[1].doc_id.endswith("faq") and ranked.articles[1].page_penalty > 0.0
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "quantization.md"

    monkeypatch.setattr(retrieval, "PAGE_WEIGHT", 0.0)
    words_only = search(kb.index, kb.embedder, question, RetrievalParams.from_settings(settings))
    assert words_only.articles[0].doc_id.endswith("faq")
    assert (words_only.grounded, words_only.confidence) == (ranked.grounded, ranked.confidence)


def test_a_passage_and_its_twin_section_are_quoted_once(tmp_path):
    """An English question matches a section and its Chinese twin's section, which count as
    two passages; rendered in English, both are the same English section, quoted once."""
    settings, kb = docs_kb(tmp_path, {
        "prefix_caching.md": "# Prefix Caching\n\nPrefix caching reuses the KV cache of a shared prompt prefix.\n\n"
        "## Enabling Prefix Caching for Offline Inference\n\nSet `enable_prefix_caching=True` when launching the engine. "
        "Enable CPU caching via `swap_space`.\n\n## Enabling Prefix Caching for Service Deployment\n\n"
        "Add `--enable-prefix-caching` when starting the server; `--swap-space 50` adds a CPU cache in GB.\n",
    })
    zh = settings.kb_dir / "zh"
    zh.mkdir()
    (zh / "prefix_caching.md").write_text(
        "# 前缀缓存\n\n前缀缓存让多个请求复用相同前缀的 KV Cache。\n\n## 离线推理开启前缀缓存\n\n"
        "启动引擎时设置 `enable_prefix_caching=True`，通过 `swap_space` 开启 CPU 缓存。\n\n## 服务化部署开启前缀缓存\n\n"
        "启动服务时加上 `--enable-prefix-caching`；`--swap-space 50` 以 GB 为单位开启 CPU 缓存。\n", encoding="utf-8")
    kb = open_kb(settings, progress=lambda _m: None)
    answer = answer_question("set enable_prefix_caching=True swap_space", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "prefix_caching.md"
    assert answer.answer.count("Set `enable_prefix_caching=True` when launching the engine.") == 1
    assert "离线推理" not in answer.answer


def test_a_source_with_an_unclosed_fence_does_not_leave_the_answer_in_code(tmp_path: Path):
    page = "# Gateway\n\n## Gateway returns 502\n\nThe upstream died. Restart it:\n\n```bash\nsystemctl restart upstream\n"
    answer = _answer_on(tmp_path, {"gateway.md": page}, "gateway returns 502, what do I restart?")
    assert answer.grounded and "systemctl restart upstream" in answer.answer
    fences = [line for line in answer.answer.splitlines() if line.strip().startswith("```")]
    assert len(fences) % 2 == 0


def test_a_cut_down_section_quotes_its_matched_subsection_first(tmp_path):
    """A long section had to be cut, and the kept chunks were quoted in document order: the
    subsection that answered came after the tail of the introduction and an unrelated
    "Prerequisites"."""
    intro = " ".join(f"Sentence {i} about deploying the gateway fleet, its load balancers, DNS records and certificates."
                     for i in range(14))
    settings, kb = docs_kb(tmp_path, {"guide.md": (
        f"# Serving platform guide\n\n## Deploying the gateway\n\n{intro}\n\n### Prerequisites\n\n"
        "You need a Kubernetes 1.29 cluster, Helm 3.14 and a wildcard certificate.\n\n"
        "### Rolling back a bad gateway release\n\nIf the new gateway release returns 502 for streaming responses, "
        "roll back with `helm rollback gateway 0 -n serving` and pin the chart with `--version 4.2.1`.\n\n"
        "## Scaling the model servers\n\nUse the HPA on `vllm:num_requests_waiting` with a target of 8.\n"),
        "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question("gateway release returns 502 for streaming, how do I roll back?", settings, kb=kb)
    assert answer.grounded and answer.citations[0].section == "Rolling back a bad gateway release"
    body = _quote_after(answer.answer, 1)
    assert body.lstrip().startswith("**Rolling back a bad gateway release**\n\nIf the new gateway release returns 502")
    assert body.index("helm rollback") < body.index("Sentence 13")
    assert "**Deploying the gateway**" in body  # the section's own text keeps a heading after it


def test_a_plain_text_passage_keeps_its_lines(tmp_path):
    """Rendered as markdown, a text runbook's "现象/原因/处理" lines ran into one paragraph and
    its tab-separated table into one line; markdown documents keep their own paragraphs."""
    notes = ("推理服务值班手册（2026 版）\n\n一、显存不足\n现象：启动时报 CUDA out of memory。\n处理：把 --gpu-memory-utilization 降到 0.85。\n\n"
             "二、请求卡住\n现象：请求一直 pending，Running: 0 reqs, Waiting: 12 reqs。\n原因：KV cache 块不够。\n"
             "处理：把 --max-num-seqs 降到 64，重启：\ndocker run --gpus all \\\n  vllm/vllm-openai --max-num-seqs 64\n\n"
             "参数\t建议\n--max-num-seqs\t64\n--max-model-len\t8192\n")
    settings, kb = docs_kb(tmp_path, {"oncall_notes.txt": notes,
                                      "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`\nwith the wheel.\n"})
    answer = answer_question("请求一直 pending 不返回怎么办", settings, kb=kb)
    assert answer.grounded and answer.citations[0].section == "二、请求卡住"
    assert "Waiting: 12 reqs。  \n原因：KV cache 块不够。  \n处理：" in answer.answer
    assert "参数\t建议  \n--max-num-seqs\t64  \n" in answer.answer
    assert "docker run --gpus all \\\nvllm/vllm-openai" in answer.answer  # a continued shell line ends with its "\\"
    assert "显存不足" not in answer.answer  # the other numbered section is another passage
    md = answer_question("how do I install the widget wheel", settings, kb=kb)
    assert "Run `pip install widget`\nwith the wheel." in md.answer


def test_a_plain_text_passage_stays_within_the_bound_with_its_line_breaks(tmp_path):
    """Each kept line break costs two characters: a passage cut to the bound before they
    were added grew past it by two per line."""
    def steps(start: int) -> str:  # a paragraph of 27 one-line steps: two fit the bound, just, before their breaks
        return "\n".join(f"第{i:02d}步：systemctl restart n{i:02d}" for i in range(start, start + 27))

    notes = f"推理值班手册\n\n一、节点重启步骤\n{steps(0)}\n\n{steps(27)}\n\n二、安装\n用 pip install widget 安装。\n"
    settings, kb = docs_kb(tmp_path, {"restart_notes.txt": notes})
    answer = answer_question("节点重启要执行哪些 systemctl restart 步骤", settings, kb=kb)
    assert answer.grounded and answer.citations[0].section == "一、节点重启步骤"
    quote = _quote_after(answer.answer, 1).split("\n\n**", 1)[0].strip("\n")
    assert "  \n" in quote  # the lines are kept...
    assert len(quote) <= MAX_PASSAGE_CHARS  # ...and the passage, as written, is within the bound
    assert len(answer.answer) <= MAX_ANSWER_CHARS


def test_a_refusal_says_among_others_only_when_it_lists_some_of_the_topics(tmp_path):
    settings, kb = docs_kb(tmp_path, {"a.md": "# Gateway 502\n\n## Fix\nRaise the pool: `gatewayctl pool --size 64`.\n",
                                      "b.md": "# Disk full\n\n## Fix\nClean /var/log with `logrotate -f`.\n"})
    answer = answer_question("How do I configure Kubernetes ingress TLS certificates?", settings, kb=kb)
    assert not answer.grounded
    assert "This knowledge base covers 2 topics:\n- Gateway 502\n- Disk full" in answer.answer
    assert "among others" not in answer.answer


def test_a_cut_down_section_marks_what_it_leaves_out_and_what_comes_from_before(tmp_path):
    """Quoting the chunks of a long section that matched, steps 16-45 of a procedure had
    vanished between two quoted runs without a mark, and an earlier part of the section was
    labelled as its continuation."""
    def para(topic: str, n: int) -> str:  # ~700 characters: each paragraph is a chunk of its own
        return " ".join(f"{topic} note {n}.{i} about the cluster." for i in range(24))

    body = [para("Drain the node with `kubectl drain --ignore-daemonsets` before any restart", 0)]
    body += [para(f"Background on rack layout {n}", n) for n in range(1, 4)]
    body += [para("Uncordon with `kubectl uncordon` after the drain and restart", 4)]
    settings, kb = docs_kb(tmp_path, {"ops.md": "# Ops\n\n## Node maintenance\n\n" + "\n\n".join(body) + "\n",
                                      "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question("how do I drain and uncordon a node for a restart with kubectl", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "ops.md"
    quote = _quote_after(answer.answer, 1)
    assert "kubectl drain" in quote and "kubectl uncordon" in quote and "rack layout" not in quote.split("**")[0]
    assert "\n\n…\n\n" in quote  # the paragraphs between are left out, and it says so

    steps = "\n".join(f"第{i}步：检查节点 node-{i} 的 nvidia-smi 输出和推理服务日志，记录时间。" for i in range(1, 60))
    (tmp_path / "zh").mkdir()
    settings, kb = docs_kb(tmp_path / "zh", {"inspect.txt": f"集群值班手册\n\n一、全集群巡检\n{steps}\n\n二、安装\n用 pip install widget 安装。\n"})
    answer = answer_question("全集群巡检怎么做", settings, kb=kb)
    first = int(_quote_after(answer.answer, 1).strip().split("步", 1)[0].lstrip("第"))
    earlier = _quote_after(answer.answer, 2).strip()
    assert first > 1 and earlier.startswith("第1步")  # the best passage is further down; the section's start follows it
    assert "一、全集群巡检 （本节前文）** [2]" in answer.answer and "（续）" not in answer.answer


def test_sections_quoted_from_one_page_keep_the_pages_order(tmp_path):
    """A procedure's sections came back best match first: "Restart", "After the restart",
    then "Before the restart", so draining the node read as the last step."""
    page = ("# Restarting a serving node safely\n\n## Before the restart\n"
            "1. Drain the node: `kubectl drain gpu-node-3 --ignore-daemonsets`.\n"
            "2. Wait until in-flight requests finish (watch `vllm:num_requests_running` go to 0).\n\n"
            "## Restart\nRestart the serving node's container: `systemctl restart vllm-serving`. "
            "Do not restart two nodes of one pool at once.\n\n"
            "## After the restart\n1. Check `curl -s localhost:8000/health` returns 200 on the restarted node.\n"
            "2. Uncordon the node: `kubectl uncordon gpu-node-3`.\n")
    settings, kb = docs_kb(tmp_path, {"restart.md": page, "gpu.md": "# GPU inventory\n\n## Nodes\nWe have 12 H100 nodes in pool A.\n"})
    answer = answer_question("how do I restart a serving node safely?", settings, kb=kb)
    assert answer.grounded and {c.source for c in answer.citations} == {"restart.md"}
    sections = [c.section for c in answer.citations]
    assert sections == ["Before the restart", "Restart", "After the restart"]
    text = answer.answer
    assert text.startswith("### Restarting a serving node safely > Before the restart")
    assert text.index("kubectl drain") < text.index("systemctl restart") < text.index("kubectl uncordon")


def test_an_article_for_other_hardware_is_not_offered_beside_a_runbook(tmp_path):
    """A team's runbook (no hardware declared) may answer a TPU user; the CUDA article
    beside it in the KB may not, not even as "it could also be"."""
    from dataclasses import replace

    from assistant.answer import answer_question
    from assistant.config import Settings
    from assistant.knowledge import open_kb

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "startup-memory.md").write_text(
        "# vLLM server runs out of memory at startup\n\nWhen our vLLM server runs out of memory at startup, lower "
        "`--gpu-memory-utilization` to 0.85 and shorten `--max-model-len` before restarting it. Memory at startup is "
        "weights plus KV cache: a server that runs out of memory at startup asks for more than the device has.\n", encoding="utf-8")
    (docs / "cuda-oom.md").write_text(
        "---\nid: cuda-oom\nproduct: vllm\napplies_to: {hardware: [nvidia]}\n---\n# vLLM: CUDA out of memory at startup\n\n"
        "## Symptoms\nThe vLLM server runs out of memory at startup: torch.OutOfMemoryError: CUDA out of memory while the "
        "server starts.\n\n"
        "## Fixes\nLower `--gpu-memory-utilization`; check `nvidia-smi` for other processes holding memory.\n", encoding="utf-8")
    settings = replace(Settings(), kb_dir=docs, cache_dir=tmp_path / "cache")
    kb = open_kb(settings, progress=lambda _m: None)
    answer = answer_question("my vllm server on TPU v5e runs out of memory at startup", settings, kb=kb, use_llm=False)
    assert answer.citations[0].source.endswith("startup-memory.md"), answer.answer
    assert "cuda-oom" not in [c.id for c in answer.citations]
    assert "nvidia-smi" not in answer.answer


def test_the_row_group_naming_the_asked_setting_is_quoted_whichever_group_matched_best():
    """Every row group of a big table shares its header and reads alike: "what does
    --max_memory_utilization include?" matched the group about KV-cache sizes best and
    quoted it. The group that names the setting (spelt with underscores there) is quoted."""
    from ingest.records import Chunk

    from assistant.answer import _naming_entry, asked_identifiers

    head = "| Name | Default | Meaning |\n|---|---|---|\n"

    def group(i: int, rows: str) -> Chunk:
        return Chunk(f"c{i}", "cli", "en", "Flags > Common flags", "Common flags", "other", "cli.md", head + rows, f"h{i}")

    kv = group(0, "| `block_size` | 128 | KV cache block size |\n| `max_cache_size` | 0 | KV cache size in bytes |\n")
    mem = group(1, "| `max_memory_utilization` | 0.8 | share of device memory for weights and KV cache |\n| `port` | 8000 | port |\n")
    section = [kv, mem]
    assert _naming_entry(kv, section, asked_identifiers("what does --max_memory_utilization include besides KV cache?")) is mem
    assert _naming_entry(kv, section, asked_identifiers("how big is a KV cache block?")) is kv  # names nothing: the best match stays


def test_a_model_family_is_a_keyword_only_where_the_docs_are_about_it(tmp_path):
    """"Llama 3 runs out of memory" is about memory: the family name alone ranked a page whose
    example serves a Llama first. A doc tree with a page titled for DeepSeek is asked about
    it by that name, so there the name stays a keyword."""
    from assistant.retrieval import query_tokens

    settings, kb = docs_kb(tmp_path, {
        "batching.md": "# Batching\n\nRaise the token budget for throughput:\n\n    srv serve meta-llama/Llama-3.1-8B --budget 16384\n",
        "memory.md": "# Out of memory at start-up\n\nLower the memory fraction with `--mem-fraction 0.8`.\n",
        "deepseek.md": "# Deploying DeepSeek V3\n\nUse eight GPUs and `--tp 8`.\n"})
    tokens = query_tokens(kb.index, "Llama 3 runs out of memory when I deploy DeepSeek")
    assert "llama" not in tokens and "memori" in tokens and "deepseek" in tokens
    answer = answer_question("Llama 3 runs out of memory at start-up", settings, kb=kb)
    assert answer.citations[0].source == "memory.md"


def test_a_distant_section_of_a_reference_page_comes_after_the_best_match(tmp_path):
    """An API page's "Examples" (curl calls to every endpoint) was quoted before its
    "Embeddings" section, three headings below, which held the answer: page order is for
    a procedure's neighbouring steps, not for a reference page's distant sections."""
    page = ("# OpenAI-compatible API\n\n## Starting the API\nStart the server with `--api`; it listens on port 5000.\n\n"
            "## Examples\nCall the completions endpoint with `curl http://127.0.0.1:5000/v1/completions`, the chat "
            "endpoint with `curl http://127.0.0.1:5000/v1/chat/completions`, and the embeddings endpoint with "
            "`curl http://127.0.0.1:5000/v1/embeddings`.\n\n"
            "## Environment variables\nSet `OPENEDAI_PORT` to change the port of the API.\n\n"
            "## Third-party applications\nPoint any OpenAI client at `http://127.0.0.1:5000/v1`.\n\n"
            "## Embeddings\nThe embeddings endpoint needs `sentence-transformers` installed: run "
            "`pip install sentence-transformers`. Without it any request to the embeddings endpoint fails with "
            "ModuleNotFoundError: No module named 'sentence_transformers'.\n")
    settings, kb = docs_kb(tmp_path, {"api.md": page, "gpu.md": "# GPU inventory\n\n## Nodes\nWe have 12 H100 nodes.\n"})
    answer = answer_question("embeddings endpoint not working", settings, kb=kb)
    assert answer.grounded and [c.section for c in answer.citations] == ["Embeddings", "Examples"]
    assert answer.answer.startswith("### OpenAI-compatible API > Embeddings")
    assert answer.answer.index("pip install sentence-transformers") < answer.answer.index("curl http")


GADGET_TOPICS = {
    "memory.md": ("Memory budget", "Each model gets a share of the card's memory. Set `gadget serve --mem-fraction 0.6` so that "
                  "two models fit on one card; the rest stays free for other processes. Lower it when the card is shared."),
    "batching.md": ("Batching", "Requests wait up to `--batch-wait-ms` before a batch runs. Raise `--max-batch` for throughput, "
                    "lower it for latency."),
    "tls.md": ("TLS", "Pass `--cert` and `--key` to serve HTTPS with your own certificate; the default is plain HTTP on port 8080."),
    "scaling.md": ("Autoscaling", "Replicas follow the queue length: `--min-replicas 1 --max-replicas 8`. Scale-down waits five minutes."),
    "logging.md": ("Logs", "Every request is logged as one JSON line with its latency; set `--log-level debug` for token timings."),
    "auth.md": ("API keys", "Clients send `Authorization: Bearer <key>`; keys live in `keys.yaml` and reload without a restart."),
    "models.md": ("Model folders", "A model folder holds the weights and the tokenizer; `gadget pull NAME` downloads one from the registry."),
    "metrics.md": ("Metrics", "Prometheus metrics are served on `/metrics`: queue length, tokens per second, GPU utilisation."),
}


def test_a_close_call_between_the_readme_and_the_page_about_the_subject_goes_to_the_page(tmp_path, monkeypatch):
    """A README that lists every feature in a line lies close to every page and to most
    questions; the page about the one asked for is what answers."""
    from assistant import retrieval
    from assistant.retrieval import RetrievalParams, page_hubness, page_vectors, search

    pages = {name: f"# {title}\n\n{body}\n" for name, (title, body) in GADGET_TOPICS.items()}
    pages["README.md"] = ("# Gadget\n\nGadget serves language models over HTTP.\n\n## What it does\n\n"
                          + "\n".join(f"- {title}: {body.split('.')[0]}." for title, body in GADGET_TOPICS.values()) + "\n")
    settings, kb = docs_kb(tmp_path, pages)
    rows, _ = page_vectors(kb.index)
    hub = page_hubness(kb.index)
    assert max(rows, key=lambda doc: hub[rows[doc]]) == "readme" and hub[rows["tls"]] == 0.0

    question = "Gadget 怎么配置 HTTPS 证书"
    ranked = search(kb.index, kb.embedder, question, RetrievalParams.from_settings(settings))
    assert ranked.articles[0].doc_id == "tls"
    assert answer_question(question, settings, kb=kb).citations[0].source == "tls.md"
    # However heavy the penalty, it only orders: the README's line on TLS is still quoted after the page.
    monkeypatch.setattr(retrieval, "HUB_WEIGHT", 5.0)
    assert [c.source for c in answer_question(question, settings, kb=kb).citations][:2] == ["tls.md", "README.md"]
    monkeypatch.setattr(retrieval, "HUB_WEIGHT", 0.0)
    assert search(kb.index, kb.embedder, question, RetrievalParams.from_settings(settings)).articles[0].doc_id == "readme"


def test_docs_about_thinking_cover_a_chinese_question_on_thinking_mode(tmp_path):
    """English docs never say 思考模式; a page titled "Thinking", or a documented
    enable_thinking, covers it. A field list that merely names reasoning_content does not
    cover "--reasoning-parser"."""
    from assistant.scope import detect, unseen_entities

    question = "Qwen3 怎么彻底关掉思考模式？API 调用时能不能默认不思考？"
    pages = {"thinking.md": "# Thinking\n\nSend `\"think\": false` in the request to turn the reasoning trace off.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _settings, kb = docs_kb(tmp_path / "a", pages)
    assert unseen_entities(detect(question), kb.index) == []
    assert unseen_entities(detect("how do I set --reasoning-parser for qwen3?"), kb.index) == []
    fields = {"api.md": "# Chat API\n\n| field | meaning |\n|---|---|\n| content | the reply |\n| reasoning_content | trace |\n",
              "serve.md": pages["serve.md"]}
    _settings, bare = docs_kb(tmp_path / "b", fields)
    assert unseen_entities(detect("how do I set --reasoning-parser for qwen3?"), bare.index) == ["reasoning parsers"]


def test_a_chat_web_apps_docs_cover_its_users_browser_and_garbled_replies(tmp_path):
    """"macOS + Chrome" is where a web UI is opened, not the machine serving the model; and a
    page headed on 乱码 covers 输出乱码 however the asker words it. Both read as subjects the
    docs lack, and a question the FAQ answers was refused."""
    from assistant.scope import detect, unseen_entities

    pages = {"faq.md": "# 常见问题\n\n## 为什么回复会乱码\n\n模型设置里的 `temperature` 大于 1 时回复可能乱码，调回 1 以内即可。\n",
             "deploy.md": "# 部署\n\n用 `docker run -p 3000:3000` 启动，设置 `CODE` 作为访问密码。\n\n"
                          "## 回复乱码\n\n先检查代理是否改写了流式响应。\n"}
    _settings, kb = docs_kb(tmp_path, pages)
    question = "让它写长篇小说，写到后面就开始输出乱码，多次复现。Vercel 部署，macOS + Chrome。是模型的问题还是设置不对？"
    assert "apple" not in detect(question).hardware
    assert unseen_entities(detect(question), kb.index) == []
    assert unseen_entities(detect("Settings page crashes on Edge 112 on macOS"), kb.index) == []
    # The Mac that serves the model is still a platform these docs never mention.
    assert unseen_entities(detect("部署在 M2 Mac 上推理很慢，怎么加速？"), kb.index) == ["Apple silicon"]


def test_docs_with_a_from_source_heading_cover_a_chinese_build_question(tmp_path):
    """源码编译 never appears in English docs; a "Build wheel from source" section does."""
    from assistant.scope import detect, unseen_entities

    question = "源码编译 gadget 把机器内存吃满卡死了，怎么限制编译并发？"
    pages = {"install.md": "# Installation\n\n## Build wheel from source\n\nSet `MAX_JOBS=4` to limit parallel compile jobs.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    _settings, kb = docs_kb(tmp_path, pages)
    assert unseen_entities(detect(question), kb.index) == []
    (tmp_path / "other").mkdir()
    _settings, serving_only = docs_kb(tmp_path / "other", {"serve.md": pages["serve.md"]})
    assert unseen_entities(detect(question), serving_only.index) == ["building from source"]
    # Every word of the subject the asker used counts: a CMake section covers "build from source … cmake".
    (tmp_path / "cmake").mkdir()
    faq = {"faq.md": "# FAQ\n\n## CMAKE\n\nOn old gcc add `-lstdc++fs` to the link flags.\n", "serve.md": pages["serve.md"]}
    _settings, with_cmake = docs_kb(tmp_path / "cmake", faq)
    english = "Build from source with gcc 8 fails at link time: undefined reference to std::filesystem. Any cmake option?"
    assert unseen_entities(detect(english), with_cmake.index) == []
    assert unseen_entities(detect(english), serving_only.index) == ["building from source"]


def test_serving_across_machines_is_a_subject_docs_about_one_machine_do_not_cover(tmp_path):
    """"Does it support pipeline parallelism across multiple nodes?" was answered from a
    multi-backend page of docs that never mention more than one machine; docs with a
    multi-node page cover it however the asker words it (两台机器, across machines)."""
    from assistant.scope import detect, unseen_entities

    pages = {"serve.md": "# Serving\n\nStart the server with `gadget serve MODEL --num-shard 2` to shard a model over two GPUs.\n"}
    _settings, one_box = docs_kb(tmp_path, pages)
    for question in ("Can gadget run one model across multiple nodes, TP inside each node?",
                     "有两台机器，每台 8 张卡，gadget 能不能做多机推理？"):
        assert unseen_entities(detect(question), one_box.index) == ["multi-node serving"]
    (tmp_path / "other").mkdir()
    pages["multinode.md"] = "# Multi-node deployment\n\nRun `gadget serve MODEL --nodes 2` on the head node.\n"
    _settings, cluster = docs_kb(tmp_path / "other", pages)
    assert unseen_entities(detect("有两台机器，gadget 能不能做多机推理？"), cluster.index) == []
    # Where a model runs is not what a question about one node's crash is about.
    assert unseen_entities(detect("gadget crashes with --num-shard 2 on one node"), one_box.index) == []


def test_a_speech_to_text_page_covers_a_question_about_whisper(tmp_path):
    from assistant.scope import detect, unseen_entities

    pages = {"speech.md": "# Configure speech-to-text\n\nSet `engine: FasterWhisper` and post audio to `/v1/audio/transcriptions`.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    _settings, kb = docs_kb(tmp_path, pages)
    assert unseen_entities(detect("which engine runs a whisper model, and where do I send the mp4?"), kb.index) == []


def test_a_heading_quoted_from_its_middle_brings_its_first_steps(tmp_path):
    """A profiling section's "how to read the report" chunk shares the question's words
    (gemm, attention, per-operator timings) and was quoted with the observations after it;
    the chunk that says how to turn the profiler on, the heading's first, was left out."""
    reading = " ".join(f"The {name} column gives the per-operator timing for {what}; compare gemm against attention "
                       "time with it." for name, what in [("opname", "the operator name"), ("count", "how often it ran"),
                                                          ("min_ms", "the fastest call"), ("max_ms", "the slowest call"),
                                                          ("ave_ms", "the average call"), ("total_ms", "the summed time"),
                                                          ("percentage", "the share of the run"), ("rank", "its place")])
    observations = " ".join(f"Observation {i}: in this report gemm operators took {60 + i}% of the per-operator "
                            f"timings and attention took {30 - i}%, so gemm tuning pays first." for i in range(8))
    settings, kb = docs_kb(tmp_path, {"build.md": (
        "# Building and profiling\n\n## Compiling\n\nRun `./build.sh` with `PLATFORM=cuda`.\n\n"
        "## Profiling\n\n### Operator profiling\n\nThis part explains how to enable the operator profiler.\n\n"
        "1. Enable collection: export `ENGINE_OP_PROFILE=ON` before starting the engine.\n\n"
        "2. Dump the report: call `engine.dump_op_profile(model_name)` before the engine shuts down.\n\n"
        + "Keep the run short: the profiler slows every step a little while it collects. " * 4 + "\n\n"
        f"3. Read the report: each row is one operator and its per-operator timings.\n\n{reading}\n\n{observations}\n\n"
        "### System traces\n\nFor whole-program traces use `nsys profile -c cudaProfilerApi python serve.py`.\n"),
        "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question("I want per-operator timings, gemm vs attention, from the engine itself. "
                             "How do I turn the operator profiler on?", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source.endswith("build.md")
    assert "ENGINE_OP_PROFILE=ON" in answer.answer and "dump_op_profile" in answer.answer
    assert len(answer.answer) <= MAX_ANSWER_CHARS


def test_a_tables_alignment_spaces_are_not_quoted():
    """Aligned in the source, a wide table spent most of a bounded passage on spaces; rows
    in a code block keep theirs."""
    from assistant.answer import _tables_compacted

    text = ("| Name           |   Default   | Description                 |\n"
            "| :------------: | :---------: | :-------------------------- |\n"
            "| max_batch      |     8       | Requests run together.      |\n\n"
            "```\n| keep   | this |\nrank      opname     count\n```\n"
            "A sentence  with two spaces stays as written.")
    out = _tables_compacted(text)
    assert out.splitlines()[:3] == ["| Name | Default | Description |", "| :---: | :---: | :--- |",
                                    "| max_batch | 8 | Requests run together. |"]
    assert "| keep   | this |\nrank      opname     count" in out
    assert "A sentence  with two spaces stays as written." in out


def test_a_quote_cut_right_after_a_fence_opens_leaves_no_empty_code_box():
    """Cut at the line that opens a code block, the quote closed it at once: an empty box
    in the answer (seen in a newcomer's `--log` answer)."""
    from assistant.answer import _bounded
    from assistant.i18n import texts

    prose = "Run the check first.\n\n" + "Some context line that explains the check. " * 3 + "\n"
    text = prose + "```\n" + "nvidia-smi --query-gpu=memory.used,memory.total --format=csv\n" * 6 + "```\n"
    cut = _bounded(text, len(prose) + len("```\n") + 40 + 2, texts("answer", "en"))  # room for the fence line only
    assert "```" not in cut and cut.startswith("Run the check first.")
    kept = _bounded(text, len(prose) + 200, texts("answer", "en"))  # a code line fits: the box is closed
    assert kept.count("```") == 2 and "nvidia-smi --query" in kept


@pytest.mark.parametrize("tail", [
    "python -c '\nimport ray\nray.init(address=\"ray://localhost\")'\n",  # an open quote
    "curl http://127.0.0.1:8000/v1/models \\\n  -H 'Authorization: Bearer x' \\\n  -H 'Accept: */*'\n",  # continuations
    "cat <<EOF >./cert.conf\nDNS.1 = localhost\nIP.1 = 127.0.0.1\nEOF\n",  # a heredoc
])
def test_a_code_block_cut_in_the_middle_of_a_command_ends_before_it(tail):
    """Closed as if whole, half a command read as the command: a `python -c '` left open,
    pasted, hung the shell (newcomer). Cut inside a command, the quoted block ends before it."""
    from assistant.answer import _bounded
    from assistant.i18n import texts

    labels = texts("answer", "en")
    prose = "Connect with the certificates created above.\n\n"
    steps = "".join(f"openssl step {i} --in ./tls.csr --out ./tls{i}.crt\n" for i in range(8))
    text = prose + "```sh\n" + steps + tail + "```\n"
    first_tail_line = tail.splitlines()[0]
    room = len(prose) + len("```sh\n") + len(steps) + len(first_tail_line) + 1 + 40 + 2  # the cut falls inside the tail's command
    out = _bounded(text, room, labels)
    assert out.count("```") == 2 and "openssl step 7" in out and first_tail_line not in out, out
    assert out.endswith(labels["cut"]) and len(out) <= room
    assert _bounded(text, 2000, labels) == text  # a block that fits is quoted as written


def test_a_code_line_with_an_apostrophe_in_a_comment_is_no_open_quote():
    from assistant.answer import _whole_commands

    assert _whole_commands(["ls -la", "rm -rf ./tmp  # don't keep it", "ls"]) == 3
    assert _whole_commands(["# don't run this twice", "ls"]) == 2
    assert _whole_commands(["ls", "python -c '", "import os"]) == 1


@pytest.mark.parametrize("room_after_header", [5, 30, 120])
def test_a_table_cut_after_its_header_stays_within_the_limit(room_after_header):
    """Only a table's header fitted and its first row was added cut to at least 80
    characters whatever the room: a gpt4all answer came to 3,041 of 3,000 characters."""
    from assistant.answer import _bounded
    from assistant.i18n import texts

    lead = "Intro line.\n" * 20
    table = "| model | size | ram | notes |\n|---|---|---|---|\n" + "| `Meta-Llama-3-8B-Instruct.Q4_0.gguf` | 4.66 GB | 8 GB | " + "word " * 60 + "|\n" * 3
    head = lead + "| model | size | ram | notes |\n|---|---|---|---|"
    limit = len(head) + 1 + 40 + room_after_header
    out = _bounded(lead + table, limit, texts("answer", "en"))
    assert len(out) <= limit
    if room_after_header >= 60 + len(" … |"):
        assert "Meta-Llama-3-8B" in out  # room for part of the first row: it is quoted
    else:
        assert "| model |" not in out  # a bare header says nothing: it goes too


def test_a_pasted_message_the_docs_quote_verbatim_finds_that_page(tmp_path):
    """A team's docs declare no signatures, but the page about request rejection quotes the
    503 body word for word; the question's prose ("503 under load, GPUs not even full, which
    setting?") reads more like the page on scaling workers."""
    settings, kb = docs_kb(tmp_path, {
        "scaling.md": ("# Scaling workers\n\n## Low GPU utilisation\n\nIf the GPUs are not full under load, add "
                       "decode workers: set `--replicas 4` on the worker deployment.\n"),
        "rejection.md": ("# Request rejection\n\n## Busy workers\n\nUnder load the frontend turns requests away when every "
                         "worker is over its threshold. Clients then see:\n\n```json\n{\n  \"message\": \"Service temporarily "
                         "unavailable: All workers are busy, please retry later\",\n  \"code\": 503\n}\n```\n\n"
                         "Raise `--active-decode-blocks-threshold` (0.85 by default) to reject later.\n"),
        "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    question = ("Under load the frontend answers 503 although the GPUs are not full:\n"
                '{"message": "Service temporarily unavailable: All workers are busy, please retry later", "code": 503}\n'
                "Which setting controls this?")
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and answer.citations[0].source.endswith("rejection.md")
    assert "--active-decode-blocks-threshold" in answer.answer


def test_pasted_messages_are_error_lines_and_quoted_sentences_not_commands():
    from assistant.cleaning import pasted_messages

    question = ("why?\nvllm serve /models/qwen --tensor-parallel-size 2 --gpu-memory-utilization 0.9\n"
                "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
                '{"message": "Service temporarily unavailable: All workers are busy", "type": "service_unavailable"}')
    found = pasted_messages(question)
    assert "unhandled system error" in found and "run with NCCL_DEBUG=INFO for details" in found
    assert "Service temporarily unavailable: All workers are busy" in found
    assert not any("tensor-parallel" in m or "service_unavailable" in m for m in found)


def _bundled_with_runbook(tmp_path: Path, name: str, text: str):
    """The bundled KB plus a team's runbook added as `assistant ingest ./runbooks` adds it: (settings, kb)."""
    from assistant.config import bundled_kb_dir
    from assistant.knowledge import forget_loaded, update_extra_sources

    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / name).write_text(text, encoding="utf-8")
    settings = replace(Settings(), kb_dir=bundled_kb_dir(), cache_dir=tmp_path / "cache")
    update_extra_sources(settings, add=[runbooks])
    forget_loaded()
    return settings, open_kb(settings, progress=lambda _m: None)


def test_a_teams_runbook_section_leads_the_curated_article_it_nearly_ties_with(tmp_path):
    """The bundled NCCL article adds up many matching chunks; a team's one-section entry on
    the same error (its fabric, its on-call channel, its stop-gap), added with `assistant
    ingest`, matched better chunk for chunk and still lost, and was not even offered beside
    the article. Now it leads, and the article is offered by title and first fix, not by
    its "How people ask" phrasings."""
    settings, kb = _bundled_with_runbook(tmp_path, "team-runbook.md", (
        "# Team inference runbook\n\n## NCCL errors when the serving pods start\n\nOur A100 nodes have a flaky "
        "InfiniBand fabric. If vLLM pods die at start-up with an NCCL error, page the infra on-call in #infra-oncall "
        "and set `NCCL_IB_DISABLE=1` on the deployment as a stop-gap until the fabric is repaired.\n\n"
        "## Model downloads\n\nModels come from our internal mirror; set `HF_ENDPOINT=http://models.internal:8080`.\n"))
    answer = answer_question("NCCL error when our serving pods start", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source.endswith("team-runbook.md")
    assert "#infra-oncall" in answer.answer
    assert any(c.id == "vllm-nccl-error-multi-gpu" for c in answer.citations[1:])  # still offered beside it
    assert "How people ask" not in answer.answer


def test_a_teams_section_quoted_beside_the_article_keeps_its_fix(tmp_path):
    """Quoted from the top, a team section's Symptoms and Why filled the note and its Fix
    (their leftover-pod check, their standard 0.90) stayed behind the citation (trial)."""
    log = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 79.10 GiB "
           "of which 1.12 GiB is free. Including non-PyTorch memory, this process has 77.96 GiB memory in use.")
    settings, kb = _bundled_with_runbook(tmp_path, "vllm-serving.md", (
        "# vLLM serving runbook\n\n## Pod crash-looping at start-up (CUDA out of memory)\n\n**Symptoms**\n\n"
        "- Alert `VLLMPodCrashLooping`; `kubectl get pods` shows `CrashLoopBackOff`.\n- `kubectl logs --previous` ends with:\n\n"
        f"```\n{log}\n```\n\n**Why**\n\nSomeone raised `--gpu-memory-utilization` to 0.95+ or another process (a stuck old pod, "
        "a debug container) still holds memory on the GPU. CUDA graph capture needs memory outside the vLLM budget.\n\n"
        "**Fix**\n\n1. Look for a leftover process with `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` and delete "
        "the old pod with `--grace-period=0 --force`.\n2. Otherwise set `--gpu-memory-utilization 0.90` (our standard).\n\n"
        "## Model downloads\n\nModels come from our internal mirror; set `HF_ENDPOINT=http://models.internal:8080`.\n"))
    answer = answer_question(f"vllm pod in CrashLoopBackOff: {log}", settings, kb=kb)
    assert "--grace-period=0 --force" in answer.answer and "(our standard)" in answer.answer
    assert len(answer.answer) <= MAX_ANSWER_CHARS
    # quoted as a note under the curated article, the fix is what is kept
    from assistant.answer import TEAM_NOTE_CHARS, _team_quote

    text = "\n\n".join(c.text for c in kb.index.chunks if c.source == "vllm-serving.md" and "Pod crash-looping" in c.title)
    note = _team_quote(text, {"more": "(more in the cited source)"})
    assert "(our standard)" in note and note.startswith("**Symptoms**") and len(note) <= TEAM_NOTE_CHARS * 1.5


def test_a_teams_own_section_on_the_problem_is_quoted_after_the_curated_article(tmp_path):
    """"推理卡住" went to the bundled hang article, rightly, and the team's own section of
    that name (their dashboard, their restart command, their channel) was not mentioned at
    all, being further behind than an alternative may be."""
    settings, kb = _bundled_with_runbook(tmp_path, "值班手册.md", (
        "# 推理服务值班手册\n\n## 推理卡住、请求不返回\n我们的集群上请求卡住时，先看 Grafana 面板「vllm-serving」里的 KV cache "
        "使用率。\n超过 95% 就执行 `kubectl rollout restart deploy/vllm-qwen -n serving`，并在 #infra-oncall 里报备。\n\n"
        "## 模型下载\n内部模型仓库地址是 `http://models.internal:8080`，设置 `HF_ENDPOINT` 指向它。\n"))
    answer = answer_question("推理卡住了，请求一直不返回怎么办", settings, kb=kb)
    assert answer.grounded and answer.citations[0].id == "vllm-requests-hang"
    assert "**你们自己的文档里:** 推理服务值班手册 > 推理卡住、请求不返回" in answer.answer
    assert "kubectl rollout restart deploy/vllm-qwen" in answer.answer
    assert any(c.source.endswith("值班手册.md") for c in answer.citations)
    assert len(answer.answer) <= MAX_ANSWER_CHARS


def test_a_teams_section_offered_as_an_alternative_is_not_quoted_again(tmp_path):
    """Close enough to be an alternative ("也可能是"), the team's section is offered there
    once, not also quoted under "你们自己的文档里"."""
    from assistant.answer import compose
    from assistant.retrieval import RetrievalParams, search

    settings, kb = _bundled_with_runbook(tmp_path, "值班手册.md", (
        "# 推理服务值班手册\n\n## 推理卡住、请求不返回\n我们的集群上请求卡住时，先看 Grafana 面板「vllm-serving」里的 KV cache "
        "使用率。\n超过 95% 就执行 `kubectl rollout restart deploy/vllm-qwen -n serving`，并在 #infra-oncall 里报备。\n"))
    result = search(kb.index, kb.embedder, "推理卡住了，请求一直不返回怎么办", RetrievalParams.from_settings(settings))
    team = next(a for a in result.articles if a.passage)
    result.articles.remove(team)
    result.articles.insert(1, team)
    team.score, team.relevance = result.articles[0].score - 0.01, result.articles[0].relevance  # a near tie
    result.grounded = True
    answer = compose(kb, result, "zh", 3)
    assert answer.answer.count("推理服务值班手册") == 1  # offered once: as the alternative it is
    assert any(c.source.endswith("值班手册.md") for c in answer.citations)


def test_a_models_own_docs_cover_its_architecture_is_not_supported_error(tmp_path):
    """"Model architectures ['MiniCPM3ForCausalLM'] are not supported for now" asks which
    release loads the model. A model repository's docs, with the model's name in their
    headings, say so ("vLLM >= 0.6.2"); docs that never name it in a heading do not, and
    the question stays about a subject they lack."""
    from assistant.scope import architectures, detect, unseen_entities

    question = ("跑官方 demo 一启动就报 ValueError: Model architectures ['MiniCPM3ForCausalLM'] are not supported "
                "for now. vllm 要装哪个版本？")
    assert architectures(question) == ("minicpm",)
    assert architectures("Model architectures ['MiniCPM'] are not supported. Supported architectures: ['AquilaModel']") == (
        "minicpm",)
    pages = {"minicpm3.md": "# MiniCPM 3.0\n\n## Inference\n\nInstall vLLM from our fork: `pip install vllm==0.6.2`.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _settings, kb = docs_kb(tmp_path / "a", pages)
    assert unseen_entities(detect(question), kb.index) == []
    _settings, other = docs_kb(tmp_path / "b", {"serve.md": pages["serve.md"],
                                               "models.md": "# Models\n\nWe also serve MiniCPM and Qwen.\n"})
    assert unseen_entities(detect(question), other.index) == ["new model support"]


def test_a_refusal_on_a_teams_kb_says_how_to_add_to_that_kb(tmp_path, bundled_settings, bundled_kb):
    """Under `--kb DIR` the refusal ended "add your own runbooks with `assistant ingest PATH`",
    which adds them to the default KB's index, one `--kb DIR` never reads."""
    settings, kb = docs_kb(tmp_path, {"redis.md": "# Redis failover\n\nRun `sentinel failover mymaster`.\n",
                                      "gpu.md": "# GPU quota\n\nEach team gets 8 H100s.\n"})
    refused = answer_question("How do I configure SAML single sign-on for Kibana?", settings, kb=kb)
    assert not refused.grounded and "assistant ingest --kb DIR PATH" in refused.answer and str(tmp_path) not in refused.answer
    bundled = answer_question("How do I configure SAML single sign-on for Kibana?", bundled_settings, kb=bundled_kb)
    assert not bundled.grounded and "`assistant ingest PATH`" in bundled.answer


VLLM_LORA_PAGE = Path(__file__).resolve().parents[1].parent / "shared" / "corpora" / "vllm-docs" / "docs" / "features" / "lora.md"


@pytest.mark.skipif(not VLLM_LORA_PAGE.is_file(), reason="../shared/corpora is not beside the clone")
def test_a_section_that_matched_nearly_as_well_comes_before_more_of_the_best_one(tmp_path: Path):
    """vLLM's LoRA page: "How do I serve a LoRA adapter?" quoted two chunks of "Dynamically
    serving LoRA Adapters" and no room was left for "Serving LoRA Adapters", which matched
    nearly as well and holds --enable-lora."""
    answer = _answer_on(tmp_path, {"lora.md": VLLM_LORA_PAGE.read_text(encoding="utf-8")},
                        "How do I serve a LoRA adapter with vllm serve?")
    assert answer.grounded and "--enable-lora" in answer.answer and len(answer.answer) <= MAX_ANSWER_CHARS


@pytest.mark.parametrize("codes", [[13, 31, 48, 79, 94], [8, 13, 31, 32, 38, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119]])
def test_a_code_the_question_names_brings_its_table_row(tmp_path: Path, codes):
    """"dmesg shows Xid 79, what do I do?" quoted the page's intro and procedure, never the
    Xid table whose row 79 says to power-cycle; a long table is cut to that row."""
    rows = "\n".join(f"| {x} | event {x} | {'power-cycle via `ipmitool chassis power cycle`' if x == 79 else 'restart the pod'} |"
                     for x in codes)
    page = (f"# GPU node runbook\n\n## When to use\nUse this when a node shows Xid 79 or Xid 48 in `dmesg`.\n\n"
            f"## Xid reference\n\n| Xid | Meaning | Action |\n|---|---|---|\n{rows}\n\n"
            "## Procedure\n1. `kubectl cordon gpu-node-XX`\n2. `kubectl drain gpu-node-XX --ignore-daemonsets`\n")
    answer = _answer_on(tmp_path, {"gpu-node.md": page}, "dmesg shows Xid 79 on gpu-node-12, what do I do?")
    assert answer.grounded and "ipmitool chassis power cycle" in answer.answer
    if len(codes) > 8:
        assert "| 13 |" not in answer.answer.replace(" ", "").replace("|13|", "| 13 |") and "event 13" not in answer.answer


def test_codes_the_question_names():
    from assistant.names import asked_codes, names_code

    assert asked_codes("dmesg shows Xid 79 on gpu-node-12") == {"79": "xid"}
    assert asked_codes("gateway returns HTTP 502, pod exit code 137") == {"502": "http", "137": "exit code"}
    assert asked_codes("Qwen2.5-72B on 8 GPUs, 4096 tokens") == {}
    assert names_code("| Xid | Action |\n| 79 | drain |", {"79": "xid"}) and not names_code("| 79 | drain |", {"79": "xid"})


def test_a_team_section_offered_as_an_alternative_is_the_section_that_matched(tmp_path: Path):
    """Offered beside a curated article, a runbook's "二、请求卡住" was cited as its page's first
    section, "一、显存不足", with that section's first sentence as the way to tell it apart."""
    from assistant.answer import _alternative, _Cites
    from assistant.i18n import texts
    from assistant.retrieval import ArticleMatch, ScoredChunk, section_key

    _settings, kb = docs_kb(tmp_path, {"oncall.md": "# 值班手册\n\n## 一、显存不足\n现象：启动时报 CUDA out of memory。\n\n"
                                                    "## 二、请求卡住\n现象：waiting 持续上涨，running 不动。\n处理：重启 deploy。\n"})
    stuck = next(c for c in kb.index.chunks if "请求卡住" in c.title)
    art = ArticleMatch(stuck.doc_id, 1.0, 1.0, chunks=[ScoredChunk(stuck, 1.0, 0.9, 1.0)], passage=section_key(stuck.title))
    lines = _alternative(kb, art, "zh", texts("answer", "zh"), _Cites())
    assert "二、请求卡住" in lines[0] and "waiting 持续上涨" in lines[0] and "显存" not in "\n".join(lines)


def test_a_teams_faq_entry_is_quoted_beside_the_articles_it_loses_to(tmp_path):
    """"Where are the vLLM logs?", word for word a question of the team's FAQ, went to a
    bundled article's "Log signatures" section, and the FAQ (seventh, behind a page prior a
    many-topic page pays) was not cited at all."""
    entries = [("Why do answers stop at 512 tokens?", "The gateway sets `max_tokens=512` when the client sends none."),
               ("How do I get access to the Grafana serving dashboards?", "Request the `grafana-serving-viewer` group."),
               ("A client gets HTTP 429. Is the cluster overloaded?", "Usually not: 429 comes from the gateway's rate limit."),
               ("How long does a rolling restart take?", "About 25 minutes for the 72B pool, one pod at a time."),
               ("Can I run a benchmark against prod?", "No. Use `chat-staging`; prod benchmarks need a change ticket."),
               ("Where are the vLLM logs?", 'In Loki: `{namespace="chat-prod", app="llm-serve"}`. They are kept 14 days.'),
               ("How do I roll back a model version?", "`argocd app rollback llm-serve-prod <revision>`.")]
    faq = "# Inference platform FAQ\n\n" + "".join(f"**Q: {q}**\n\n{a}\n\n" for q, a in entries)
    settings, kb = _bundled_with_runbook(tmp_path, "faq.md", faq)
    answer = answer_question("Where are the vLLM logs?", settings, kb=kb, use_llm=False)
    assert 'app="llm-serve"' in answer.answer and any(c.source.endswith("faq.md") for c in answer.citations)


def test_a_teams_runbook_ranked_second_is_quoted_even_behind_a_pasted_signature(tmp_path):
    """A pasted "torch.OutOfMemoryError: CUDA out of memory" is a signature only the bundled
    article declares: it led far ahead, and the team's own OOM section, second of all, was
    not listed."""
    settings, kb = _bundled_with_runbook(tmp_path, "值班手册.txt", (
        "推理服务值班手册（2025 版）\n\n一、显存不足（CUDA out of memory）\n\n现象：Pod 反复重启，日志里有 torch.OutOfMemoryError。\n"
        "处理：把 SERVE_GPU_MEM_UTIL 改回 0.90；72B 模型必须 TP=4。\n\n二、请求卡住不返回\n\n现象：请求超时。\n"
        "处理：看 Grafana 的 KV cache 使用率，超过 95% 就扩容。\n"))
    answer = answer_question("Pod 反复重启，日志 torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                             settings, kb=kb, use_llm=False)
    assert answer.citations[0].id == "vllm-cuda-oom"
    assert "SERVE_GPU_MEM_UTIL" in answer.answer and any(c.source.endswith("值班手册.txt") for c in answer.citations)


def test_a_pasted_kernel_xid_line_finds_the_runbook_that_states_the_code(tmp_path):
    """The kernel writes "NVRM: Xid (PCI:0000:b3:00): 48, …": the PCI address between the word
    and the code hid the code, and the runbook's "drain on XID 48" shared few other words with
    the line, so it was refused ("I found nothing")."""
    from assistant.names import asked_codes, states_code

    line = ("[Thu Nov 20 03:12:44 2025] NVRM: Xid (PCI:0000:b3:00): 48, pid=88121, name=python3, "
            "An uncorrectable double bit error (DBE) has been detected on GPU")
    assert asked_codes(line) == {"48": "xid"}
    assert states_code("Drain when nvidia-smi shows XID 48 (double-bit ECC error).", {"48": "xid"}) == ["xid 48"]
    assert states_code("| Xid | meaning |\n|---|---|\n| 48 | double-bit ECC |", {"48": "xid"}) == ["xid 48"]
    assert states_code("Xid errors are logged. The pool has 48 GPUs.", {"48": "xid"}) == []
    pages = {
        "drain.md": ("# GPU node drain procedure\n\n## When to drain\n\nDrain a GPU node when nvidia-smi shows an XID 79 "
                     "(\"GPU has fallen off the bus\") or XID 48 (double-bit ECC error). Do not drain for XID 13 alone.\n\n"
                     "## Steps\n\n1. `kubectl cordon NODE`\n2. `kubectl drain NODE --ignore-daemonsets`\n"),
        "deploy.md": "# Deploying a model\n\n## Canary\n\nRoll out to one pod first with `deployctl canary start`.\n",
        "gateway.md": "# Gateway\n\n## Timeouts\n\nIdle connections are closed after 60 seconds.\n",
    }
    settings, kb = docs_kb(tmp_path, pages)
    from assistant.retrieval import RetrievalParams, search

    result = search(kb.index, kb.embedder, line, RetrievalParams.from_settings(settings))
    assert result.articles[0].doc_id == "drain" and result.articles[0].signatures == ["xid 48"]
    from assistant import refusal

    assert refusal.features(result)["signature"] == 1.0  # weighed as a quoted log line is
    # The code as the section's heading, its body not repeating it: a small team KB refused
    # the pasted line (a newcomer trial).
    headed = {"gpu-errors.md": ("# GPU hardware errors\n\n## XID 48 (double-bit ECC)\nThe GPU reported an uncorrectable ECC error. "
                                "Drain the node with `kubectl drain NODE --ignore-daemonsets` and open a hardware ticket.\n\n"
                                "## XID 79 (GPU fell off the bus)\nReboot the node; if it repeats, RMA the card.\n"),
              "deploy.md": pages["deploy.md"], "gateway.md": pages["gateway.md"]}
    (tmp_path / "headed").mkdir()
    settings, kb = docs_kb(tmp_path / "headed", headed)
    result = search(kb.index, kb.embedder, line, RetrievalParams.from_settings(settings))
    assert result.articles[0].passage.endswith("XID 48 (double-bit ECC)") and result.articles[0].signatures == ["xid 48"]


def test_a_chinese_entry_of_an_english_page_is_not_labelled_english_only(tmp_path):
    """The page is English, so its language is; its Chinese FAQ entry, quoted to a Chinese
    question, was labelled "（仅有英文原文）" over Chinese text."""
    faq = ("# Inference platform FAQ\n\n**Q: Why do answers stop at 512 tokens?**\n\nThe gateway sets `max_tokens=512` when "
           "the client sends none; send your own max_tokens.\n\n**Q: A client gets HTTP 429. Is the cluster overloaded?**\n\n"
           "Usually not: 429 comes from the gateway's per-tenant rate limit, raise it in the tenant config.\n\n"
           "**Q: How long does a rolling restart take?**\n\nAbout 25 minutes for the 72B pool, one pod at a time.\n\n"
           "**Q: Where are the vLLM logs?**\n\nIn Loki, kept 14 days.\n\n"
           "**Q: How do I roll back a model version?**\n\nRun `argocd app rollback llm-serve-prod REVISION`.\n\n"
           "**Q: Can I benchmark prod?**\n\nNo, use chat-staging; prod needs a change ticket.\n\n"
           "**Q: 为什么 streaming 返回中间断开？**\n\n网关对空闲连接有 60 秒超时，模型 60 秒内没有输出 token 连接就会断开。"
           "批处理租户可申请 `GATEWAY_TIMEOUT_S=600`。\n")
    settings, kb = docs_kb(tmp_path, {"faq.md": faq})
    answer = answer_question("为什么 streaming 返回中间断开？", settings, kb=kb, use_llm=False)
    assert "GATEWAY_TIMEOUT_S=600" in answer.answer and "英文" not in answer.answer, answer.answer


def test_codes_are_read_as_errors_only_where_a_page_states_them():
    """Review: "HTTP 200" made a health-check page a signature match and refused the right
    answer; a row starting with 48 counted under any table once "xid" was in the chunk; 错误码
    inside Chinese prose was never read."""
    from assistant.names import asked_codes, states_code

    assert asked_codes("The server answers HTTP 200 but the completion text is empty") == {}
    assert asked_codes("nginx returns HTTP 413 on big images") == {"413": "http"}
    assert states_code("Xid errors: see the table.\n\n| Node | GPUs |\n|---|---|\n| 48 | 8 |", {"48": "xid"}) == []
    assert asked_codes("接口返回错误码 1001 怎么办") == {"1001": "错误码"}
    assert states_code("如果接口返回错误码 1001，说明模型名写错了。", {"1001": "错误码"}) == ["错误码 1001"]


def test_one_chinese_line_does_not_make_an_english_section_chinese():
    from assistant.answer import _mostly_in

    english = ("Streaming connections drop after 60 seconds without a token. Raise the gateway timeout for batch "
               "tenants. Long prompts take longer to prefill. Check the gateway logs first.\n注意：改完要重启网关。")
    assert not _mostly_in(english, "zh") and _mostly_in(english, "en")
    assert _mostly_in("网关对空闲连接有 60 秒超时，批处理租户可申请 `GATEWAY_TIMEOUT_S=600`。", "zh")


def test_the_procedure_step_the_question_names_follows_the_section_its_pasted_error_matched(tmp_path):
    """A pasted 503 line matched "When to use this page", which was all the answer quoted;
    the "Restart" section the question asks for ("how do I restart the gateway safely?") came
    nowhere (a newcomer trial with a wiki export)."""
    page = ("# Restarting the inference gateway (llm-gw) safely\n\n## When to use this page\n\nUse this page when the llm-gw pods return "
            "`503 upstream connect error or disconnect/reset before headers` for more than 5 minutes and the backends are healthy.\n\n"
            "## Before the restart\n\n1. Announce it in #llm-oncall.\n2. Drain one replica at a time: `gatewayctl pool drain --replica llm-gw-0`\n\n"
            "## Restart\n\n```\nkubectl -n llm-serving rollout restart deployment/llm-gw\n```\n\n"
            "## After the restart\n\nWatch the error rate for ten minutes.\n")
    settings, kb = docs_kb(tmp_path, {"gateway-restart.md": page, "deploy.md": "# Deploying a model\n\n## Canary\n\nRoll out to one pod first.\n",
                                      "quota.md": "# GPU quota\n\n## How to request\n\nFill in the GPU quota form in the portal.\n"})
    answer = answer_question('llm-gw pods returning "503 upstream connect error or disconnect/reset before headers" for 10 min, '
                             "backends look healthy. how do I restart the gateway safely?", settings, kb=kb, use_llm=False)
    assert "rollout restart deployment/llm-gw" in answer.answer
    assert [c.section for c in answer.citations][:2] == ["When to use this page", "Restart"]


def test_a_teams_section_on_the_pasted_error_is_shown_after_a_long_article_that_declares_it(tmp_path):
    """"ncclCommInitRank failed: unhandled system error" is a signature of a bundled article: its
    boost made the team's own note on that error look far behind, and the long article took
    the whole answer, so the note (shm.sizeLimit below 1Gi) was not shown (a newcomer trial)."""
    settings, kb = _bundled_with_runbook(tmp_path, "deploy-values-example.md", (
        "# Reference Helm values for a new model pool\n\n## Values\n\n```yaml\nshm:\n  sizeLimit: 8Gi\nreplicas: 2\n```\n\n"
        "## Notes\n\n- `initialDelaySeconds` must be longer than the model load time.\n"
        "- `shm.sizeLimit` below 1Gi gives `ncclCommInitRank failed: unhandled system error` at start.\n"))
    answer = answer_question("ncclCommInitRank failed: unhandled system error  -- new pool with TP=4 on k8s", settings, kb=kb, use_llm=False)
    assert answer.citations[0].id == "vllm-nccl-init-and-network"
    assert "shm.sizeLimit" in answer.answer and any(c.source.endswith("deploy-values-example.md") for c in answer.citations)
    assert len(answer.answer) <= 3000


@pytest.mark.parametrize("page, question, subject", [
    # "where are the grafana dashboards for the canary" was refused as "nothing on dashboards and
    # alerting" beside a FAQ entry headed "Where are the dashboards?" (newcomer trial).
    ("# On-call FAQ\n\n## Q: Where are the dashboards?\n\nGrafana folder \"LLM Serving\": `chat-prod / canary`.\n",
     "where are the grafana dashboards for the canary", "dashboards and alerting"),
    # "pod OOMKilled exit code 137" was refused as "nothing on exit code 137" above the team's
    # runbook "Pod OOMKilled (host memory)", whose symptoms show `Exit Code:    137` (trial).
    ("# Pod OOMKilled (host memory)\n\n## Symptoms\n\n```\nLast State: Terminated\n  Reason: OOMKilled\n"
     "  Exit Code:    137\n```\n\n## Fix\n\nRaise `resources.limits.memory` to 64Gi.\n",
     "pod OOMKilled exit code 137", "exit code 137 (a killed process)"),
])
def test_a_heading_on_the_subject_covers_what_is_asked_by_another_name(tmp_path, page, question, subject):
    """A subject the question names by one word is covered by a page headed by another of its
    words; a KB without such a page still lacks it."""
    from assistant.scope import detect, unseen_entities

    serve = "# Serving\n\nStart the server with `gadget serve MODEL`.\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _settings, kb = docs_kb(tmp_path / "a", {"page.md": page, "serve.md": serve})
    assert unseen_entities(detect(question), kb.index) == []
    _settings, bare = docs_kb(tmp_path / "b", {"serve.md": serve, "ops.md": "# Ops\n\nRestart with `gadget restart`.\n"})
    assert unseen_entities(detect(question), bare.index) == [subject]


def test_the_runbook_that_fixes_an_error_leads_the_postmortem_that_tells_of_it(tmp_path):
    """A postmortem names every error met on the way; its summary led the answer to
    "MetadataIncompleteBuffer" and the runbook's fix was never quoted (trial). Asked about the
    incident, the postmortem still leads."""
    error = "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer"
    pages = {
        "runbooks/model-cache.md": f"# Model cache disk full\n\n## Symptoms\n\n- vLLM pods crash-loop with `{error}`\n"
                                   "- the model-sync job fails with `No space left on device`\n\n## Fix\n\n"
                                   "1. Free space: `huggingface-cli delete-cache`.\n2. Re-run the sync job.\n",
        "postmortems/2025-06-20.md": "# Postmortem: rollout blocked by a full model cache (2025-06-20)\n\n## Summary\n\n"
                                     "The Qwen rollout failed: model-sync hit `No space left on device`, left a partial safetensors blob, "
                                     f"and the new vLLM pods crash-looped with `{error}`. On-call re-downloaded twice.\n\n"
                                     "## Timeline\n\n- 02:03 model-sync fails.\n- 02:40 pods crash-loop, MetadataIncompleteBuffer.\n\n"
                                     "## Root cause\n\nNo retention on the model cache volume.\n",
        "serve.md": "# Serving\n\nStart the server with `vllm serve MODEL`.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    answer = answer_question("new vLLM pods crash-looped with MetadataIncompleteBuffer", settings, kb=kb, use_llm=False)
    assert answer.citations[0].source == "runbooks/model-cache.md" and "huggingface-cli delete-cache" in answer.answer
    told = answer_question("what happened in the MetadataIncompleteBuffer incident?", settings, kb=kb, use_llm=False)
    assert told.citations[0].source == "postmortems/2025-06-20.md"


def test_a_page_that_says_it_is_retired_is_ranked_below_the_current_one(tmp_path):
    """An old wiki page ("Old page. The current procedure is in the runbooks repo. Kept for
    history.") led the answer with its old steps above the current doc (trial); a page that
    teaches that a flag is deprecated is no retired page."""
    from assistant.retrieval import retired_pages

    pages = {"wiki/hf-token-rotation.md": "# Rotating the HF token\n\nOld page. The current procedure is in docs/hf-token.md. "
                                          "Kept for history.\n\n## Steps\n\n1. Write the new token to Vault at `secret/hf`.\n",
             "docs/hf-token.md": "# Hugging Face token expired or revoked\n\n## Fix: rotate the token\n\n"
                                 "`kubectl create secret generic hf-token --from-literal=token=$NEW | kubectl apply -f -`\n",
             "flags.md": "# Server flags\n\nThe `--foo` flag is deprecated: use `--bar`.\n\n## --bar\n\nSets the bar.\n",
             "plugin.md": "# DataParallel Profile Handler\n\n> **Deprecated:** Use `single-profile-handler` instead.\n\nRoutes requests.\n",
             "zh.md": "# 旧版扩容流程\n\n本文档已废弃，新流程见 scale.md。\n\n## 步骤\n\n1. 手工改副本数。\n"}
    settings, kb = docs_kb(tmp_path, pages)
    assert retired_pages(kb.index) == {"wiki-hf-token-rotation", "zh"}
    answer = answer_question("how do I rotate the Hugging Face token?", settings, kb=kb, use_llm=False)
    assert answer.citations[0].source == "docs/hf-token.md", [c.source for c in answer.citations]


def test_a_code_the_runbooks_number_otherwise_is_not_answered_with_their_fix(tmp_path):
    """"Xid 43" was answered as sure with the Xid 48 runbook's drain-the-node fix (trial):
    another number is another fault."""
    pages = {"gpu.md": "# GPU node alerts\n\n## GPUDoubleBitECC (Xid 48)\n\nThe GPU stopped processing: CUDA calls fail and dmesg "
                       "shows `NVRM: Xid (PCI:0000:3b:00): 48`. What to do: cordon and drain the node, then `nvidia-smi -r`.\n\n## GPURowRemapPending (Xid 63 / 64)\n\nRow remapping is pending. Fix: reboot the node "
                       "in the next maintenance window.\n\n## GPU fell off the bus (Xid 79)\n\nFix: power-cycle the node.\n",
             "serve.md": "# Serving\n\nStart the server with `vllm serve MODEL`.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    from assistant.retrieval import unknown_codes

    assert unknown_codes(kb.index, "Xid 43 and Xid 64, exit code 3") == ["Xid 43"]  # an exit code is not judged
    unknown = answer_question("Xid 43 GPU stopped processing, what should I do?", settings, kb=kb, use_llm=False)
    assert not unknown.grounded and "nvidia-smi -r" not in unknown.answer
    for known, fix in (("Xid 48 on node gpu-17, what now?", "nvidia-smi -r"), ("节点报 Xid 64 了怎么办", "reboot the node")):
        answer = answer_question(known, settings, kb=kb, use_llm=False)
        assert answer.grounded and fix in answer.answer, known
    # A page showing one Xid as an example of any answers another: GPU Operator's troubleshooting page was refused.
    (tmp_path / "b").mkdir()
    _settings, example = docs_kb(tmp_path / "b", {"gpu.md": "# Troubleshooting\n\n## GPU marked unhealthy\n\nThe device plugin logs "
                                                          "`XidCriticalError: Xid=79 on Device=GPU-1; marking device as unhealthy`. "
                                                          "Check `sudo dmesg | grep -i xid`.\n"})
    assert unknown_codes(example.index, "Xid=94 on Device=GPU-3; marking device as unhealthy") == []


def test_a_fix_section_named_for_its_case_follows_the_matched_symptoms(tmp_path):
    """A pasted log line matches "Symptoms"; the commands are under "Fix on our cluster", a
    heading the exact list of fix names did not know, and the answer quoted no fix (trial)."""
    from assistant.answer import answer_question
    from ingest.chunking import section_kind

    assert [section_kind(h) for h in ("Fix on our cluster", "Workaround (until 0.9)", "修复方法（生产环境）", "Fixed-size blocks",
                                      "Fixtures")] == ["fixes", "fixes", "fixes", "other", "other"]
    pages = {"nccl.md": "# Runbook: NCCL failures on our racks\n\nTP=8 start-ups fail when the pod picks the wrong interface.\n\n"
                        "## Symptoms\n\n- `NCCL WARN NET/Socket : No usable listening interface found`\n- start-up hangs for ten minutes\n\n"
                        "## Fix on our cluster\n\n1. Set `NCCL_SOCKET_IFNAME=bond0` in the pod.\n2. Set `NCCL_IB_HCA=mlx5_0,mlx5_1`.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    answer = answer_question("TP=8 start on our racks: NCCL WARN NET/Socket : No usable listening interface found", settings, kb=kb)
    assert answer.grounded and "NCCL_SOCKET_IFNAME=bond0" in answer.answer


def test_a_heading_a_fix_word_leads_is_no_fix_unless_it_names_its_case(tmp_path):
    """"Solution architecture", "Fixing the docs build", "The fix (rejected)" and "解决方案 对比"
    are not where a runbook keeps its fix (review): the answer quoted the architecture section
    after the matched symptoms. An exactly named fix ("What to do") wins over a led one."""
    from assistant.answer import answer_question
    from ingest.chunking import section_kind

    others = ("Solution architecture", "Fixing the docs build", "Remediation history", "The fix (rejected)",
              "Resolution: won't fix", "处理 日志", "解决方案 对比", "Fix-ups in the changelog")
    assert [section_kind(h) for h in others] == ["other"] * len(others)
    assert [section_kind(h) for h in ("Fix for the H100 racks", "Mitigation: drain the node", "处理方法（值班）",
                                      "Solutions (until 0.9)")] == ["fixes"] * 4
    pages = {"gw.md": "# Runbook: gateway 503s\n\nThe gateway returns 503 when the upstream pool drains.\n\n"
                      "## Symptoms\n\n- `upstream connect error or disconnect/reset before headers`\n- 503 on every route\n\n"
                      "## Solution architecture\n\nThe gateway fronts four pools behind one load balancer, drawn in the wiki.\n\n"
                      "## Mitigation on the canary\n\nRun `gwctl drain --pool canary` then `gwctl undrain --pool canary`.\n\n"
                      "## What to do\n\nRun `gwctl restart --rolling` and watch the 503 rate fall.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    answer = answer_question("all routes 503: upstream connect error or disconnect/reset before headers", settings, kb=kb)
    assert answer.grounded and "gwctl restart --rolling" in answer.answer
    assert "four pools" not in answer.answer.split("gwctl restart --rolling")[0]


def test_a_fix_heading_is_not_taken_only_when_its_case_says_so():
    """The not-taken words were looked for anywhere in a fix heading, so "Fix: delete old pods"
    and "Mitigation: do not drain all nodes at once" were no fixes; "How to fix it", "Fix steps"
    and a bare "解决：重启网关" were no longer leads (review of the narrowed rule)."""
    from ingest.chunking import section_kind

    fixes = ("Fix: delete old pods", "Mitigation: do not drain all nodes at once", "Fix (old driver)",
             "Fix on nodes not yet upgraded", "处理方法（旧集群）", "Fixes for the router", "How to fix it", "Fix steps",
             "Remediation steps", "解决：重启网关", "修复（生产环境）", "规避：关闭前缀缓存", "Fix: failed pods are restarted by hand")
    assert [h for h in fixes if section_kind(h) != "fixes"] == []
    others = ("Workaround (obsolete since 0.9)", "解决方案（已废弃）", "Resolution — wontfix", "The fix (not taken)",
              # said further inside the brackets, or a few words after the colon (second review)
              "Fix (v0.5, deprecated)", "Fix — Option B (rejected)", "修复方法（旧，已废弃）", "修复步骤（历史）",
              "Workaround (not needed after 0.9)", "Workaround: not recommended", "Fix (doesn't work)", "Resolution: not a bug")
    assert [h for h in others if section_kind(h) != "other"] == []


def test_a_pages_opening_follows_the_section_that_answers_and_is_left_out_when_it_says_nothing_asked(tmp_path):
    """A pasted Xid log matched the runbook's Xid section, and the page's opening ("This page
    covers the three GPU-node incidents…") led the answer as [1]; a FAQ's opening ("Collected
    from #oncall threads…"), which shares no word of the question, was cited as a passage of
    its own (newcomer trial)."""
    from assistant.answer import answer_question

    pages = {"gpu-node.md": "# Runbook: GPU node problems on the Lumen platform\n\nThis page covers the GPU-node incidents we see "
                            "most: Xid 79 and other Xid errors, draining a node, and pods stuck in `Terminating`.\n\n"
                            "## Xid 79 / GPU fallen off the bus\n\n### Symptoms\n\n- `dmesg` shows `NVRM: Xid (PCI:0000:3b:00): 79, "
                            "pid=1234, GPU has fallen off the bus.`\n- engine pods on one node restart in a loop\n\n### Fix\n\n"
                            "Cordon and drain the node, then hand it to the hardware team:\n\n```\nkubectl cordon \"$NODE\"\n"
                            "kubectl drain \"$NODE\" --ignore-daemonsets --grace-period=120\n```\n\n"
                            "## Pods stuck in Terminating\n\n### Fix\n\nRun `kubectl delete pod --force --grace-period=0 POD`.\n",
             "faq.md": "# Lumen Platform — On-call FAQ\n\nCollected from #oncall threads. Ask in the channel if yours is not here.\n\n"
                       "## Q: How do I restart a model deployment without downtime?\n\nUse a rolling restart:\n\n"
                       "```\nlipctl deploy restart qwen2-72b-chat --rolling --max-surge 1\n```\n\n"
                       "## Q: Why does my deployment stay Pending?\n\nThe pool has no free GPU: `lipctl pool usage`.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    log = "engine pods restarting on gpu-a100-17\n[ 8123.4] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
    answer = answer_question(log, settings, kb=kb)
    assert answer.grounded and answer.answer.startswith("### Runbook: GPU node problems on the Lumen platform > Xid 79")
    assert answer.answer.index("kubectl cordon") < answer.answer.find("This page covers") or "This page covers" not in answer.answer
    restart = answer_question("how do I restart a model deployment without downtime?", settings, kb=kb)
    assert "lipctl deploy restart qwen2-72b-chat --rolling" in restart.answer and "Collected from" not in restart.answer


def test_a_pages_opening_that_answers_is_kept(tmp_path):
    """A question made of the title's words ("prefix caching on Ascend"), or sharing little
    else, is the opening's to answer: "Not supported yet" was left out, or offered as "It
    could also be" beside its own page (review of the opening rule)."""
    from assistant.answer import answer_question

    pages = {"ascend.md": "# Prefix caching on Ascend NPUs\n\nNot supported yet: the NPU plugin ignores the flag and logs "
                          "a warning at start-up.\n\n## Checking the plugin version\n\nRun `pip show vllm-ascend` and compare "
                          "with the release notes.\n\n## On GPUs\n\nPass `--enable-prefix-caching` to `vllm serve`.\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n",
             "nccl.md": "# NCCL\n\nSet `NCCL_SOCKET_IFNAME=eth0` when start-up hangs.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    for question in ("prefix caching on Ascend", "does prefix caching work on Ascend NPUs?"):
        answer = answer_question(question, settings, kb=kb)
        assert "Not supported yet" in answer.answer, answer.answer
        also = answer.answer.split("It could also be")[1] if "It could also be" in answer.answer else ""
        assert "Prefix caching on Ascend NPUs [" not in also


def test_a_question_naming_the_sections_alert_is_not_hedged(tmp_path):
    """"LumenGatewayQueueFull 告警是什么意思" matched that alert's section of an English page and
    was hedged as "may not answer your question" (trial): a name no prose word looks like,
    heading the section, is no close call. A product name ("FastDeploy") is no such name."""
    from assistant.answer import answer_question
    from assistant.refusal import _NAMED

    alerts = "\n\n".join(f"## {name}\n\n**Meaning:** {meaning}\n\n**What to do:** {todo}" for name, meaning, todo in (
        ("LumenKVCacheUsageHigh", "`vllm:gpu_cache_usage_perc` above 0.95 for 10 minutes on a replica.",
         "scale out by one replica: `lipctl deploy scale MODEL --replicas +1`."),
        ("LumenGatewayQueueFull", "the gateway queue for a replica reached `LUMEN_MAX_QUEUE` and the gateway answers "
         "`503 upstream queue full`.", "scale out; if one client is bursting, rate-limit it with "
         "`lipctl gateway ratelimit set --client <id> --rps 20`."),
        ("LumenModelLoadSlow", "a pod took more than 15 minutes to become Ready.", "pre-warm the cache: `lipctl model prefetch`.")))
    pages = {"alerts.md": "# Alert Reference\n\nEvery alert below pages #oncall.\n\n" + alerts + "\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    answer = answer_question("LumenGatewayQueueFull 告警是什么意思？是一个客户端在突发流量，怎么限流？", settings, kb=kb)
    assert answer.grounded and answer.coverage == "full" and "lipctl gateway ratelimit set" in answer.answer
    assert _NAMED.findall("FastDeploy on PyTorch, NCCL_SOCKET_IFNAME and ncclCommInitRank") == ["NCCL_SOCKET_IFNAME", "ncclCommInitRank"]


def test_a_passage_on_one_long_line_is_quoted_in_part_not_as_a_bare_pointer(tmp_path):
    """A config on one line, or a table row longer than the passage's room, was quoted as
    nothing but "… (more in the cited source)" (or a table's bare header): a citation with
    no text (newcomer trial). A part of it is quoted, cut at a word, code kept as code."""
    from assistant.answer import answer_question

    config = '{"gateway": {"pools": [' + ", ".join(f'{{"name": "pool{i}", "grace": "120s", "weight": {i}}}' for i in range(60)) + "]}}"
    row = "| `GW_DRAIN_GRACE` | " + "How long the gateway waits for in-flight requests before it closes a pool. " * 30 + " | 120s |"
    pages = {"drain.md": "# Runbook: gateway config\n\n## Pool config\n\nThe pool config lives in `gw.json`:\n\n```json\n" + config + "\n```\n",
             "env.md": "# Gateway env vars\n\n| name | meaning | default |\n|---|---|---|\n" + row + "\n",
             "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"}
    settings, kb = docs_kb(tmp_path, pages)
    code = answer_question("where is the gateway pool config gw.json", settings, kb=kb).answer
    assert '{"gateway": {"pools": [{"name": "pool0"' in code and code.count("```") % 2 == 0
    table = answer_question("what does GW_DRAIN_GRACE do", settings, kb=kb).answer
    assert "| `GW_DRAIN_GRACE` | How long the gateway waits for in-flight requests" in table
    assert max(len(code), len(table)) <= 3000


def test_a_faq_entry_without_a_question_mark_is_an_entry_of_its_own(tmp_path):
    """"**Q: A pod is stuck in Init for more than 20 minutes.**" is long and ends with a full
    stop: it was glued to the entry before it and cited under that one's title (trial)."""
    from ingest.chunking import chunk_document
    from ingest.documents import parse_document

    entries = [*FAQ_ENTRIES[:3], ("A pod is stuck in Init for more than twenty minutes after a deploy.",
                                  "The init container copies weights from S3: look for `SlowDown` in its logs.")]
    body = "\n\n".join(f"**Q: {q}**\n\n{a}" for q, a in entries)
    path = tmp_path / "faq.md"
    path.write_text(f"# Platform FAQ\n\n{body}\n", encoding="utf-8")
    chunks = chunk_document(parse_document(path, tmp_path, path.read_bytes()))
    assert [c.title.split(" > ")[-1] for c in chunks] == [f"Q: {q}" for q, _a in entries]

    # A numbered "Q1:" without a question's words is a quarter, not an entry (review)
    from ingest.documents import promote_bold_headings

    report = "# Quarterly notes\n\n**Q1: revenue grew twelve percent over the year before, led by serving.**\n\nDetails.\n\n" \
             "**Q2: costs held flat while the fleet doubled its H100 count again.**\n\nMore.\n"
    assert "## Q1" not in promote_bold_headings(report)
    faq = report.replace("Q1: revenue grew", "Q1: why did revenue grow").replace("Q2: costs held", "Q2: how were costs held")
    assert "## Q1: why did revenue grow" in promote_bold_headings(faq)
    # "Q1." and "Q1)" number an entry too, and "did/has/my" and "多少/有没有" are a question's words
    asked = report.replace("Q1: revenue grew", "Q1. did the canary roll back after the H100 pool drained").replace(
        "Q2: costs held", "Q2) how do pods restart every night at three, where do the logs go; costs held")
    assert "## Q1. did the canary" in promote_bold_headings(asked) and "## Q2) how do pods" in promote_bold_headings(asked)
    # a quarter's "I/O", "my team", "was quiet" or "可以看到" is no question (second review)
    quarters = report.replace("Q1: revenue grew", "Q1: I/O throughput dropped twelve percent").replace(
        "Q2: costs held", "Q2：本季度我们可以看到推理成本下降了百分之三十，主要来自 H100 集群的利用率提升")
    assert "## Q" not in promote_bold_headings(quarters)
    zh = "# 值班问答\n\n**Q1：上线之后单卡 H100 到底能扛多少并发请求，压测数据在哪里能查到呢。**\n\n看压测报告。\n\n" \
         "**Q2：网关那边有没有针对长连接的超时设置，默认是多少秒，改完要不要重启。**\n\n默认 600 秒。\n"
    assert "## Q1：上线之后" in promote_bold_headings(zh) and "## Q2：网关" in promote_bold_headings(zh)


@pytest.mark.parametrize("closing", ["", "\n\nThen restart the predictor so the change takes effect: "
                                         "`kubectl rollout restart deploy/isvc-predictor`"])
def test_a_cut_down_section_drops_a_kept_chunk_before_it_cuts_the_match(closing):
    """The room estimate left out the subsection headings the quote adds: a service-account
    example and the matched tip both "fitted", the headings took the text past the bound,
    and the cut fell at the end, in the tip, on the one line that answered. A closing line
    both chunks share does not make the cut tip look whole (a review's case)."""
    from ingest.records import Chunk

    from assistant.answer import _section_text
    from assistant.i18n import texts

    title = "S3 > Deploy a model stored on S3 > "

    def chunk(i: int, sub: str, text: str) -> Chunk:
        return Chunk(f"s3.md#{i}", "s3", "en", title + sub, sub.split(" > ")[-1], "other", "s3.md", text, f"h{i}")

    example = chunk(0, "Create a service account with an IAM role for the storage initializer > Create the service account",
                    "```yaml\n" + "    serving.example.io/s3-setting: value # replace with the value for your bucket\n" * 8 + "```"
                    + closing)
    tip = chunk(1, "Create a secret and attach it to the service account > Attach the secret to the service account",
                "With sidecars enabled the proxy may not be ready when the initializer pulls the model. " * (5 if closing else 7)
                + "\n\nSet `proxy.holdApplicationUntilProxyStarts: true` in the sidecar injector's configmap." + closing)
    assert len(example.text) + len(tip.text) + 80 <= 1500 < len(example.text) + len(tip.text) + 300
    text, left = _section_text([example, tip], tip, texts("answer", "en"), {tip.chunk_id: 0.9, example.chunk_id: 0.8}, 1500)
    assert "holdApplicationUntilProxyStarts" in text and len(text) <= 1500
    assert left == [example]


def test_a_chunk_that_fits_as_written_is_not_left_out_for_a_worse_one():
    """The room for each chunk was estimated with 40 characters for a heading and a gap mark,
    needed or not: a router FAQ's second-best chunk (265 characters, with the pinned
    gunicorn version) missed the bound by 11 estimated characters, and a chunk that matched
    half as well took its place."""
    from ingest.records import Chunk

    from assistant.answer import _section_text
    from assistant.i18n import texts

    def chunk(i: int, text: str) -> Chunk:
        return Chunk(f"faq.md#{i}", "faq", "en", "Router FAQ > Troubleshooting > Health Status", "Health Status", "other",
                     "faq.md", text, f"h{i}")

    best = chunk(0, "Check that every instance answers on /health from the router's host. " * 16 + "\n\nThen compare counts.")
    pinned = chunk(1, "If instances register and then drop out, the router's workers time out on the health check. "
                      "Pin the web server: `pip install gunicorn==25.0.3`, then restart the router. Older releases "
                      "close idle keep-alive connections before the router's next probe, so the instance looks down "
                      "although it serves requests.")
    other = chunk(2, "The tokenizer service is only used by the cache_aware strategy. " * 2)
    estimate = len(best.text) + 40 + len(pinned.text) + 40
    assert estimate > 1500 and len(best.text) + len(pinned.text) + 40 < 1500  # over by the estimate, under as written
    text, left = _section_text([best, pinned, other], best, texts("answer", "en"),
                               {best.chunk_id: 0.87, pinned.chunk_id: 0.65, other.chunk_id: 0.37}, 1500)
    assert "gunicorn==25.0.3" in text and len(text) <= 1500
    assert left == [other]


COMPOSE_EN = ("# Deploy with Docker Compose\n\n## Start\n\nRun `docker compose up -d` in the folder with `docker-compose.yml`.\n\n"
              "## FAQ\n\n### The container cannot reach the internet through my proxy\n\nThe log shows `TypeError: fetch failed`. "
              "Set `PROXY_URL=http://host:3128` in the env file; `HTTP_PROXY` is not read by the server.\n")
COMPOSE_ZH = ("# 使用 Docker Compose 部署\n\n## 启动\n\n在 `docker-compose.yml` 所在目录执行 `docker compose up -d`。\n\n"
              "## 常见问题\n\n### 容器无法通过代理访问外网\n\n日志报 `TypeError: fetch failed`。在 env 文件里设置 "
              "`PROXY_URL=http://host:3128`；服务端不读取 `HTTP_PROXY`。\n")


def test_a_passage_matched_in_the_other_language_is_grounded_as_its_twin(tmp_path):
    """A Chinese question's English "FAQ" of a zh/en page pair led on the words of its pasted
    command and was judged on the cross-language band, while its own "常见问题", on the
    Chinese one, was as close as a passage gets: the question was refused (LobeChat's docs).
    The twin is the section in the same place of the other language's page, whatever its name."""
    from assistant.retrieval import ArticleMatch, ScoredChunk, section_key, twin_grounding

    settings, kb = docs_kb(tmp_path, {"compose.md": COMPOSE_EN, "compose.zh-CN.md": COMPOSE_ZH})
    doc = kb.index.chunks[0].doc_id
    assert {c.lang for c in kb.index.chunks} == {"en", "zh"} and {c.doc_id for c in kb.index.chunks} == {doc}

    def match(lang: str, heading: str, grounding: float) -> ArticleMatch:
        chunk = next(c for c in kb.article_chunks(doc, lang) if section_key(c.title).endswith(heading))
        return ArticleMatch(doc, 1.0, 0.5, chunks=[ScoredChunk(chunk, 1.0, 0.8, 0.5)], passage=section_key(chunk.title),
                            grounding=grounding)

    faq, start, own = match("en", "FAQ", 0.3), match("en", "Start", 0.2), match("zh", "常见问题", 0.9)
    twin_grounding(kb.index, [faq, start, own], "zh")
    assert faq.grounding == 0.9  # 常见问题 is the FAQ's twin: the second section of each
    assert start.grounding == 0.2  # 启动 did not match: nothing to go by
    assert own.grounding == 0.9
    # Asked in English, the English passage stands on its own.
    faq, own = match("en", "FAQ", 0.3), match("zh", "常见问题", 0.9)
    twin_grounding(kb.index, [faq, own], "en")
    assert faq.grounding == 0.3


def test_a_twin_is_no_twin_when_the_two_pages_differ_in_their_sections(tmp_path):
    """A translator's note made a section more on the Chinese page: every place after it
    shifted, and the English FAQ took the grounding of 启动 (review). Such a pair lends none."""
    from assistant.retrieval import ArticleMatch, ScoredChunk, section_key, twin_grounding

    noted = COMPOSE_ZH.replace("## 启动", "## 译者注\n\n本页译自英文版。\n\n## 启动")
    settings, kb = docs_kb(tmp_path, {"compose.md": COMPOSE_EN, "compose.zh-CN.md": noted})
    doc = kb.index.chunks[0].doc_id

    def match(lang: str, heading: str, grounding: float) -> ArticleMatch:
        chunk = next(c for c in kb.article_chunks(doc, lang) if section_key(c.title).endswith(heading))
        return ArticleMatch(doc, 1.0, 0.5, chunks=[ScoredChunk(chunk, 1.0, 0.8, 0.5)], passage=section_key(chunk.title),
                            grounding=grounding)

    faq, start = match("en", "FAQ", 0.3), match("zh", "启动", 0.9)
    twin_grounding(kb.index, [faq, start], "zh")
    assert faq.grounding == 0.3


def test_a_sibling_that_is_the_twin_of_the_quoted_section_joins_its_continuation(tmp_path):
    """A Chinese page's section was quoted; its English twin's section matched too and came
    back as a sibling that maps into the same Chinese section. Quoted as a passage of its
    own it was charged the room again (the rest of a README's section got 50 characters) or
    quoted the section twice; dropped outright, a step it maps to that the passage left out
    was lost (a review's case: the last step, `finalize_cfg --commit`)."""
    from assistant.answer import _passage, _twins_folded
    from assistant.i18n import texts
    from assistant.retrieval import ArticleMatch, ScoredChunk

    zh = "".join(f"{i}. 第{i}步：执行 `cfg_step{i}`，" + "检查配置目录和数据目录，确认没有报错再继续。" * 16 + "\n\n"
                 for i in range(1, 8)) + "8. 最后执行 `finalize_cfg --commit` 提交配置。\n"
    en = "".join(f"{i}. Step {i}: run `cfg_step{i}`, " + "then check the config and data directories for errors. " * 6 + "\n\n"
                 for i in range(1, 8)) + "8. Finally run `finalize_cfg --commit` to commit the configuration.\n"
    settings, kb = docs_kb(tmp_path, {"zh/setup.md": "# 快速上手\n\n## 安装部署\n\n" + zh + "\n## 其他\n\n有问题请在群里提问。\n",
                                      "en/setup.md": "# Quick start\n\n## Installation\n\n" + en + "\n## Other\n\nAsk in the channel.\n"})
    zh_chunks = [c for c in kb.index.chunks if c.source == "zh/setup.md"]
    en_last = next(c for c in kb.index.chunks if c.source == "en/setup.md" and "finalize_cfg" in c.text)
    labels = texts("answer", "zh")
    top = ArticleMatch(zh_chunks[0].doc_id, 1.0, 1.0, chunks=[ScoredChunk(zh_chunks[0], 1.0, 1.0, 1.0)],
                       passage="快速上手 > 安装部署")
    twin = ArticleMatch(en_last.doc_id, 0.9, 0.9, chunks=[ScoredChunk(en_last, 0.9, 0.9, 0.9)], passage="Quick start > Installation")
    zh_other = next(c for c in zh_chunks if "群里" in c.text)
    other = ArticleMatch(zh_other.doc_id, 0.8, 0.8, chunks=[ScoredChunk(zh_other, 0.8, 0.8, 0.8)], passage="快速上手 > 其他")
    hits = {zh_chunks[0].chunk_id: 1.0}
    quoted = _passage(kb, top, "zh", labels, hits)
    assert "finalize_cfg" not in quoted[1]
    siblings, rest, hits = _twins_folded(kb, [twin, other], quoted, [], hits, "zh", "")
    assert siblings == [other]
    assert any("finalize_cfg" in c.text and c.lang == "zh" for c in rest) and hits[rest[-1].chunk_id] == 0.9


def test_a_reference_page_named_by_its_title_keeps_it_in_the_heading(tmp_path):
    """GitBook reference pages are named after their titles (Settings.md, ModelSettings.md)
    and both have a "Fields" section: dropped as if it were an identifier, the title left
    two passages headed "Fields". Identifier-like names still go."""
    from assistant.answer import _display_title

    assert _display_title("Settings > Fields", "api/Settings.md") == "Settings > Fields"
    assert _display_title("ModelSettings > Fields", "api/ModelSettings.md") == "ModelSettings > Fields"
    assert _display_title("startup-oom > Fix", "runbooks/startup-oom.md") == "Fix"
    assert _display_title("001_075f06 > NCCL errors", "wiki/001_075f06.txt") == "NCCL errors"
    assert _display_title("README > Usage", "README.md") == "Usage"
    assert _display_title("Index > Install", "docs/Index.md") == "Install"


def test_a_variables_own_entry_is_quoted_without_the_other_entries_of_its_section(tmp_path):
    """A reference page with one heading per variable under a long "Server configuration":
    "what is SECRET_KEY for?" quoted its entry, then the logging table and the storage
    credentials (OCI_SECRET_KEY…), which share words with the question but are other settings."""
    logging = "| Variable | Default | Meaning |\n|---|---|---|\n" + "".join(
        f"| `LOG_{name}` | `{default}` | How the server writes its log {name.lower()}, read once at start-up. |\n"
        for name, default in [("LEVEL", "INFO"), ("FILE", "/app/logs/server.log"), ("FORMAT", "text"), ("TZ", "UTC"),
                              ("FILE_MAX_SIZE", "20"), ("FILE_BACKUP_COUNT", "5"), ("DATEFORMAT", "%Y-%m-%d")])
    storage = "| Variable | Default | Meaning |\n|---|---|---|\n" + "".join(
        f"| `{p}_{k}` | (empty) | The {p.lower()} bucket's {k.lower().replace('_', ' ')} for uploaded files. |\n"
        for p in ("OCI", "OBS", "COS") for k in ("ENDPOINT", "ACCESS_KEY", "SECRET_KEY", "REGION"))
    page = ("# Environment variables\n\n## Server configuration\n\n### Logging\n\n" + logging
            + "\n### SECRET_KEY\n\nDefault: prefilled in `.env.example`; replace it in production.\n\n"
            "Signs session cookies and file URLs. Generate one before the first start:\n\n```bash\nopenssl rand -base64 42\n```\n\n"
            "### INIT_PASSWORD\n\nOptional password asked before the admin account is created.\n\n"
            "### Storage credentials\n\n" + storage)
    settings, kb = docs_kb(tmp_path, {"environments.md": page, "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question("SECRET_KEY 是干什么的？生产环境要不要改", settings, kb=kb)
    assert answer.grounded and "openssl rand -base64 42" in answer.answer
    assert "OCI_SECRET_KEY" not in answer.answer and "LOG_LEVEL" not in answer.answer


@pytest.mark.parametrize("question", ["vLLM hangs at start-up with NCCL_P2P_DISABLE set, how do I fix it?",
                                      "设置了 NCCL_P2P_DISABLE 之后 vLLM 启动卡住怎么办"])
def test_a_section_whose_heading_contains_the_asked_name_keeps_its_subsections(tmp_path, question):
    """Only a heading that is nothing but the asked name is a reference entry: "Hangs with
    NCCL_P2P_DISABLE" is a topic, and its Cause and Fix subsections are its answer (a
    review found them dropped). An entry keeps subsections of its own too."""
    page = ("# vLLM troubleshooting\n\n"
            "## Hangs with NCCL_P2P_DISABLE\n\nOn some PCIe boxes the engine hangs at start-up when NCCL_P2P_DISABLE "
            "is set by the base image.\n\n### Cause\n\nThe driver's peer-to-peer path is broken on these boards, so the "
            "all-reduce never completes.\n\n### Fix\n\nUpgrade the driver to 535.104 or later and restart the pod:\n\n"
            "```bash\nkubectl rollout restart deploy/vllm\n```\n\n"
            "## Slow start\n\nLoading weights from NFS takes minutes; copy them to local disk first.\n")
    settings, kb = docs_kb(tmp_path, {"trouble.md": page, "install.md": "# Install\n\n## Wheels\n\nRun `pip install widget`.\n"})
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and "kubectl rollout restart deploy/vllm" in answer.answer

    from assistant.answer import _entry_or_asked, _names_entry
    from ingest.records import Chunk

    def chunk(i: int, title: str, text: str) -> Chunk:
        return Chunk(f"env.md#{i}", "env", "en", title, title.split(" > ")[-1], "other", "env.md", text, f"h{i}")

    entry = chunk(0, "Env > Server > SECRET_KEY", "Signs session cookies.")
    rotating = chunk(1, "Env > Server > SECRET_KEY > Rotating", "Rotating it logs every user out.")
    other = chunk(2, "Env > Server > LOG_LEVEL", "How much the server logs.")
    asked = frozenset({"secret_key"})
    assert _names_entry(entry, asked) and _entry_or_asked([entry, rotating, other], entry, asked) == [entry, rotating]
    assert not _names_entry(chunk(3, "Env > Server > Hangs with SECRET_KEY", "…"), asked)
    assert not _names_entry(chunk(4, "Env > SECRET_KEY", "…"), asked)  # a section's own heading: the passage itself


def test_an_alert_named_in_a_heading_covers_the_subject_its_name_spells(tmp_path):
    """"## DsV3OutputGarbled" is a section on garbled output: a Chinese question about 输出乱码
    was told the KB had nothing on garbled output, above that very section, and its fix was
    never shown (trial). "TTFTHigh" and "KVCacheUsageHigh" spell their subjects the same way."""
    settings, kb = docs_kb(tmp_path, {"sglang.md": dedent("""
        # SGLang / DeepSeek-V3 runbook

        Service `dsv3` runs SGLang with DeepSeek-V3 FP8 on one 8x H800 node per replica.

        ## DsV3OutputGarbled

        Symptoms: outputs are repeated Chinese characters or random tokens after an upgrade.

        Fix: do not pass `--quantization` for the official FP8 checkpoint; check `pip show flashinfer` is 0.1.6 or newer.

        ## Startup takes 20+ minutes

        The log stops at `Load weight begin` while the weights stream from NFS; wait, or pre-warm the page cache.
        """)})
    answer = answer_question("dsv3 升级镜像后输出乱码，全是重复的字", settings, kb=kb)
    assert answer.grounded and answer.citations[0].section.endswith("DsV3OutputGarbled")
    assert "pip show flashinfer" in answer.answer and "乱码" not in answer.answer.split("\n")[0]


def test_a_log_sample_a_page_quotes_is_found_in_pasted_lines(tmp_path):
    """A handbook's alert says its log shows "token usage: 0.99"; SGLang's batch lines
    pasted alone (`tail sglang.log | ask -`) hold that sample among other numbers. They were
    called healthy (no problem in them), and the section was never found (trial)."""
    settings, kb = docs_kb(tmp_path, {"值班手册.txt": (
        "推理平台值班手册\n\n一、SGLang 告警\n\n1. SglangTokenUsageHigh\n"
        "现象：SGLang 日志出现 \"token usage: 0.99\"，并且 #queue-req 持续大于 50。\n"
        "处理：在网关把 dsv3 的 max_tokens 上限调到 4096；长期增加副本。\n\n"
        "2. SglangSchedulerHang\n现象：/health 正常，但请求全部超时，日志停在 \"Prefill batch. #new-seq: 1\"。\n"
        "处理：nvidia-smi nvlink --status 检查链路。\n\n"
        "二、网关\n\n1. GatewayAuthFailSpike\n现象：llm-gw 返回 401 的比例超过 5%。\n处理：按 x-tenant-id 统计 401 来源。\n")})
    line = ("[2025-10-12 03:14:0{n} TP0] Decode batch. #running-req: 40, #token: 81234, token usage: 0.99, "
            "gen throughput (token/s): 1200.5, #queue-req: 63")
    pasted = "\n".join(line.format(n=n) for n in range(3))
    answer = answer_question(pasted, settings, kb=kb)
    assert answer.grounded and answer.citations[0].section.endswith("SglangTokenUsageHigh")
    assert "max_tokens 上限调到 4096" in answer.answer
    # found as a signature is: the quoted sample, in the pasted lines
    from assistant.retrieval import RetrievalParams, search

    top = search(kb.index, kb.embedder, pasted, RetrievalParams.from_settings(settings)).articles[0]
    assert top.signatures == ["token usage: 0.99"]
    # its numbers whole: the sample "#new-seq: 1" is not in a "#new-seq: 12" line (review)
    healthy = "[2025-10-12 03:14:07 TP3] Prefill batch. #new-seq: 12, #new-token: 8192, token usage: 0.41"
    assert not any(a.signatures for a in search(kb.index, kb.embedder, healthy, RetrievalParams.from_settings(settings)).articles)
    # `ask --log sglang.log` with no question: the same lines, not "no failure signature in this log"
    from assistant.i18n import t

    answer = answer_question(t("answer.log_question", "en"), settings, kb=kb, log_text=pasted + "\n")
    assert answer.grounded and answer.citations[0].section.endswith("SglangTokenUsageHigh")


def test_the_subsection_that_matched_leads_a_section_quoted_whole(tmp_path):
    """A handbook part quoted whole began with its first alert, whatever the question: the
    one asked about came second, and an engineer reading the top acted on the other (trial)."""
    settings, kb = docs_kb(tmp_path, {"handbook.md": dedent("""
        # Platform handbook

        ## Gateway alerts

        Never restart llm-gw without the platform lead's approval.

        ### GatewayAuthFailSpike

        The share of 401 responses is above 5%. Count the 401s by `x-tenant-id` and call that team.

        ### GatewayCertExpiry

        The llm-gw TLS certificate expires within 7 days. Renew it by hand: `cmctl renew llm-gw-tls -n llm-prod`.

        ## Node maintenance

        Drain one node at a time: `kubectl drain gpu-a17 --ignore-daemonsets`.
        """)})
    answer = answer_question("llm-gw TLS certificate expires in 5 days, how do I renew it?", settings, kb=kb)
    assert answer.grounded and answer.citations[0].section.endswith("GatewayCertExpiry")
    assert "cmctl renew" in answer.answer
    assert "x-tenant-id" not in answer.answer or answer.answer.index("cmctl renew") < answer.answer.index("x-tenant-id")
    # the section's own opening stays above it, and nothing was left out, so no gap is marked (review)
    assert answer.answer.index("Never restart") < answer.answer.index("cmctl renew") and "……" not in answer.answer


def test_a_subject_found_by_how_it_is_asked_is_named_by_its_name(tmp_path):
    """"It has nothing on how do I fine-tune." (trial): a subject matched by a question phrase
    is named as the subject, not as the phrase."""
    settings, kb = docs_kb(tmp_path, {
        "serve.md": "# Serving\n\nStart the server with `vllm serve MODEL`.\n\n## Fine-tuning notes\n\nFine-tuning is done "
                    "elsewhere; vLLM only serves the fine-tuned weights.\n",
        "ports.md": "# Ports\n\nThe API listens on 8000. Metrics are on /metrics.\n"})
    answer = answer_question("how do I fine-tune llama 3 with DPO before serving it?", settings, kb=kb)
    assert "how do I fine-tune" not in answer.answer


MIXED_TEAM_DOCS = {
    "oncall/常见问题.md": "# 推理值班常见问题\n\n## 日志在哪里？保存多久？\n\nvLLM 和 SGLang 的日志都通过 fluent-bit 收集，节点上落盘在 "
                          "`/data/logs/vllm/`，本地保留 7 天，之后归档到 OSS，保留 30 天。\n\n## 模型灰度发布怎么做？\n\n"
                          "先用 `gatewayctl route weight --model <name> --canary 5` 切 5% 流量，观察 30 分钟再放量。\n\n"
                          "## 怎么申请 GPU 配额？\n\n在资源平台提单，写明卡型和数量，组长审批。\n",
    "runbooks/vllm-upgrade.md": "# vLLM 0.6.6 to 0.8.4 upgrade notes\n\nWhat broke when we moved vllm to 0.8: the V1 engine is on by "
                                "default, `--disable-log-requests` was renamed, and vllm serve prints its args once.\n\n"
                                "## What to check\n\nRun the smoke test against the new vllm image before rolling.\n",
    "runbooks/kv-cache.md": "# Runbook: VLLMKVCacheUsageHigh\n\nFires when vllm KV cache usage stays above 0.95 for 5 minutes.\n\n"
                            "## What to do\n\nScale out: `kubectl -n llm scale deploy/vllm --replicas=<n+2>`.\n",
    "oncall/faq.md": "# Inference on-call FAQ\n\n## Q: Where is the HF token stored and how do we rotate it?\n\nIn Vault at "
                     "`secret/llm/hf`; rotate it with `vault kv put` and restart the vllm pods.\n\n"
                     "## Q: How do I tell if the model is loaded?\n\n`curl :8000/v1/models` lists it once vllm is ready.\n",
}


@pytest.mark.parametrize("question,expect", [
    ("where are vllm logs kept and for how long?", "/data/logs/vllm/"),
    ("how do we do a canary rollout of a new model?", "gatewayctl route weight"),
])
def test_an_english_question_reaches_a_chinese_only_page_of_a_mixed_tree(tmp_path, question, expect):
    """A team tree with Chinese-only and English-only pages: the English question's answer
    sits on a Chinese FAQ page. Ranked on the English range and penalised by the page prior
    for its language alone, the entry ranked 21st, under English pages sharing "vllm", and
    "canary" reached 金丝雀 only, never the page's 灰度发布 (trial)."""
    settings, kb = docs_kb(tmp_path, MIXED_TEAM_DOCS)
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "oncall/常见问题.md" and expect in answer.answer


HANDBOOK_TREE = {
    "handbook/值班手册.txt": "推理平台值班手册\n\n一、vLLM 服务告警\n\n1. KV Cache 使用率告警\n现象：vllm:gpu_cache_usage_perc 持续高于 0.95。\n"
                            "处理：扩容副本，或调低 --max-num-seqs。\n\n2. 请求卡住告警\n现象：请求不返回，/health 正常。\n处理：先看 "
                            "num_requests_waiting，再重启实例。\n\n二、GPU 节点告警\n\n1. Xid 48 告警\n现象：dmesg 出现 Xid 48。\n"
                            "处理：驱逐节点上的 Pod，报修。\n",
    "runbooks/gpu-alerts.md": "# GPU alerts\n\n## DCGMExporterDown\n\nThe dcgm-exporter pod is not scraped. Fix: restart the "
                              "daemonset with `kubectl -n gpu-operator rollout restart ds/nvidia-dcgm-exporter`.\n\n"
                              "## GPUTemperatureHigh\n\nAbove 85 C for 10 minutes. Fix: check the fans and drain the node.\n",
    "runbooks/vllm.md": "# vLLM runbook\n\n## Requests hang\n\nThe KV cache is full and requests wait. Fix: scale out.\n",
    "runbooks/disk.md": "# Model cache disk full\n\nOSError: [Errno 28] No space left on device. Fix: prune old revisions.\n",
}


@pytest.mark.parametrize("question,expect", [
    ("Postgres replication lag alert is firing, what should I do?", None),  # no page speaks of Postgres
    ("DCGMExporterDown alert, how to fix", "runbooks/gpu-alerts.md"),
])
def test_a_chinese_only_page_does_not_cover_what_the_english_asker_names(tmp_path, question, expect):
    """An English question on a Chinese handbook is judged on the words both can share, and
    "Postgres", "replication" and "lag", unknown to every page, were not among them: the
    handbook covered the Postgres alert in full through 告警 (alert) and answered it as sure.
    A name in capitals (DCGMExporterDown) is written the same in a Chinese page, so a page
    that lacks it does not cover it either (trial)."""
    settings, kb = docs_kb(tmp_path, HANDBOOK_TREE)
    answer = answer_question(question, settings, kb=kb)
    if expect is None:
        assert not answer.grounded, answer.answer[:300]
    else:
        assert answer.grounded and answer.citations[0].source == expect, answer.answer[:300]


def test_the_section_headed_by_the_alert_asked_about_is_favoured():
    """"KVCacheUsageHigh 告警了怎么处理" led with an on-call handbook's P99 latency section, whose
    last bullet names KVCacheUsageHigh, above the section titled by it (trial). An alert's or an
    env var's name in a section's own heading lifts it; a word like DeepSeek or a flag does not."""
    from assistant.retrieval import HEADING_NAME_BONUS, ArticleMatch, favour_named_headings

    def matches():
        return [ArticleMatch("handbook", 0.80, 0.0, passage="推理服务告警处理手册 > 4. P99LatencyHigh（P99 TTFT"),
                ArticleMatch("handbook", 0.78, 0.0, passage="推理服务告警处理手册 > 1. KVCacheUsageHigh（KV cache 使用率"),
                ArticleMatch("KVCacheUsageHigh-runbook", 0.5, 0.0),  # a curated article is whole: no bonus
                ArticleMatch("env", 0.5, 0.0, passage="参数表 > FD_DISABLED_RECOVER")]

    named = matches()
    favour_named_headings("KVCacheUsageHigh 告警了怎么处理", named)
    assert [round(m.score, 3) for m in named] == [0.80, round(0.78 + HEADING_NAME_BONUS, 3), 0.5, 0.5]
    env = matches()
    favour_named_headings("FD_DISABLED_RECOVER 是干什么的", env)
    assert env[3].score == pytest.approx(0.5 + HEADING_NAME_BONUS)
    plain = matches()
    favour_named_headings("DeepSeek 上 --max-num-seqs 设多少", plain)
    assert [m.score for m in plain] == [m.score for m in matches()]


def test_a_program_the_docs_show_being_run_is_covered(tmp_path):
    """"装 gpu-operator 时驱动用宿主机自带的，helm 怎么装" was told the KB had nothing on helm,
    above the section whose code block is the very `helm install` (trial). A word in prose
    alone is still a passing remark."""
    docs = {
        "vendor/gpu-operator.md": "# GPU Operator notes\n\n## Install\n\nWe keep the host driver:\n\n```\n"
                                  "helm install gpu-operator nvidia/gpu-operator -n gpu-operator --set driver.enabled=false\n```\n",
        "runbooks/vllm.md": "# vLLM runbook\n\n## Requests hang\n\nScale out the deployment.\n",
        "runbooks/nccl.md": "# NCCL timeouts\n\n## Fix\n\nSet NCCL_SOCKET_IFNAME=bond0.\n",
        "web/console.md": "# Web console\n\n## Build\n\n```\nyarn install --frozen-lockfile\n```\n",
    }
    from assistant.scope import covers

    settings, kb = docs_kb(tmp_path, docs)
    assert covers(kb.index, "helm") and not covers(kb.index, "kustomize")
    # only programs that name a subject: `yarn install` in a web app's docs is no YaRN (review)
    assert not covers(kb.index, "yarn")
    answer = answer_question("装 gpu-operator 时驱动用宿主机自带的，helm 怎么装", settings, kb=kb)
    assert answer.grounded and "helm install gpu-operator" in answer.answer
    (tmp_path / "prose").mkdir()
    _, prose = docs_kb(tmp_path / "prose", {**docs, "vendor/gpu-operator.md": "# GPU Operator notes\n\nSome teams use helm.\n"})
    assert not covers(prose.index, "helm")


def test_a_follow_up_that_tried_a_passages_command_is_told_so(tmp_path):
    """A chat follow-up "tried flush_cache, got 400, what next?" under the thread's first
    question got the first answer again, word for word (trial). A team page says what was
    tried, as a curated article does."""
    page = dedent("""
        # Cache server alerts

        ## Token pool almost full
        When token usage stays above 0.95, first clear the radix cache:
        `curl -X POST http://pod:30000/flush_cache` (only when idle; with requests in flight it returns 400).
        If that does not help, lower `--max-running-requests` from 256 to 192.
    """)
    settings, kb = docs_kb(tmp_path, {"alerts.md": page})
    first = answer_question("token usage 0.97, what do I do?", settings, kb=kb)
    follow = answer_question("token usage 0.97, what do I do?\ntried flush_cache, got 400, what next?", settings, kb=kb)
    assert "flush_cache" in follow.answer.split("\n\n")[1] and "already tried" in follow.answer
    assert "already tried" not in first.answer and follow.answer != first.answer


def test_of_two_copies_of_a_guide_the_one_whose_path_names_the_asked_model_comes_first(tmp_path):
    """A team's tree keeps one copy of a guide per model or release, sharing every other word:
    "InternVL2-40B-AWQ … per-GPU memory" got internvl2.5's copy by 0.009 (analysis of the trees)."""
    guide = ("# Deployment\n\n## Serving with LMDeploy\nServe the AWQ model with `lmdeploy serve api_server ./model "
             "--model-format awq --cache-max-entry-count 0.2` on one 24 GB GPU; lower the ratio if memory runs short.\n")
    # the same words: only the path tells them apart
    settings, kb = docs_kb(tmp_path, {"internvl2.0/deployment.md": guide, "internvl2.5/deployment.md": guide,
                                      "faq.md": "# FAQ\n\n## Install\nRun `pip install lmdeploy`.\n"})
    from assistant.retrieval import _named_tokens

    # a number format is no model or release (angelslim-005 lost its Qwen-VL page to features/quantization/fp8.md)
    assert _named_tokens("features/quantization/fp8.md") == set() and _named_tokens("models/Qwen1_5/README.md") == {"qwen1.5"}
    for question, path in (("InternVL2-40B-AWQ with lmdeploy on one 24GB 4090: which cache-max-entry-count?", "internvl2.0/deployment.md"),
                           ("InternVL2.5-AWQ with lmdeploy on one 24GB 4090: which cache-max-entry-count?", "internvl2.5/deployment.md"),
                           ("InternVL 2.5 AWQ with lmdeploy on one 24GB 4090: which cache-max-entry-count?", "internvl2.5/deployment.md")):
        answer = answer_question(question, settings, kb=kb)
        assert answer.grounded and answer.citations[0].source == path, question


def test_a_setting_the_asker_tried_does_not_pick_the_row_quoted_from_a_long_table(tmp_path):
    """"HTTP 413 … I already raised --max-client-batch-size" was quoted that row of the arguments
    table, not the one that answers (analysis of the dev trees): a tried setting is no sign."""
    rows = [("--max-client-batch-size", "Maximum number of inputs a client can send in a single request", "32"),
            *[(f"--option-{n}", f"Tuning knob number {n} of the router", str(n)) for n in range(1, 13)],
            ("--payload-limit", "Payload size limit in bytes: requests with a larger body get 413 Payload Too Large", "2000000")]
    table = "\n".join(f"| `{flag}` | {text} | {default} |" for flag, text, default in rows)
    settings, kb = docs_kb(tmp_path, {
        "cli.md": "# CLI arguments\n\n## Router arguments\n\n| Argument | Description | Default |\n|---|---|---|\n" + table + "\n",
        "install.md": "# Install\n\n## Docker\nRun `docker run -p 8080:80 router:latest`.\n"})
    answer = answer_question("router returns 413 Payload Too Large for big embedding batches. I already raised "
                             "--max-client-batch-size to 256, still 413", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "cli.md"
    assert "--payload-limit" in answer.answer


def test_a_chinese_question_on_an_english_page_that_shares_no_rare_word_is_a_close_call(tmp_path):
    """Chinese prose alone picks an English-only page by dense similarity and common words, as
    sure ("xinference 管理员密码忘了，有命令行能重置吗" got the code walkthrough, trial on team
    trees; on the dev trees about half of such answers were another file or out of scope).
    Naming a word of the page's own (a command) anchors it."""
    topics = [("GPU memory", "Lower `--gpu-memory-utilization` when the GPU runs out of memory"),
              ("GPU clocks", "Lock the GPU clocks with `nvidia-smi -lgc 1410` before a benchmark so results compare"),
              ("GPU power", "Cap the GPU power with `nvidia-smi -pl 300` on racks with a tight power budget"),
              ("GPU temperature alerts", "The `GpuTempHigh` alert fires above 85 C; check the fans and the airflow of the rack"),
              ("GPU topology", "Run `nvidia-smi topo -m` to see which GPUs share NVLink"),
              ("GPU drivers", "Upgrade the GPU driver with the `gpu-driver-upgrade` playbook, one node at a time"),
              ("GPU metrics", "Scrape `DCGM_FI_DEV_GPU_UTIL` from dcgm-exporter for GPU utilisation"),
              ("GPU scheduling", "Request GPUs with `nvidia.com/gpu: 1` in the pod spec"),
              ("GPU sharing", "Enable time-slicing with the `sharing.timeSlicing` block of the device plugin config"),
              ("GPU MIG", "Split an A100 with `nvidia-smi mig -cgi 9,9 -C`"),
              ("GPU burn-in", "Run `gpu-burn 600` on a new node before it takes traffic"),
              ("GPU ECC", "Reset ECC counters with `nvidia-smi -r` after a double-bit error"),
              ("GPU persistence", "Turn on persistence mode with `nvidia-smi -pm 1` so the driver stays loaded"),
              ("GPU inventory", "List the GPUs of the fleet with `fleetctl gpus --json`"),
              ("GPU quotas", "Each team's GPU quota lives in `quotas.yaml`; raise it through a ticket")]
    settings, kb = docs_kb(tmp_path, {f"gpu{i}.md": f"# {title}\n\n## What to do\n{text}. This applies to every GPU node in the cluster.\n"
                                      for i, (title, text) in enumerate(topics)})
    prose = answer_question("GPU 节点上线前要做什么", settings, kb=kb)
    assert prose.grounded and prose.citations[0].source == "gpu10.md" and prose.coverage == "tentative"
    named = answer_question("新节点上线前 gpu-burn 要跑多久", settings, kb=kb)
    assert named.grounded and named.citations[0].source == "gpu10.md" and named.coverage == "full"
    # A Chinese word the glossary puts into the page's English is an anchor too: 温度 → temperature.
    assert answer_question("GPU 温度太高了怎么办", settings, kb=kb).coverage == "full"


def test_a_chinese_question_pasting_the_message_an_english_page_lists_is_anchored_by_it(tmp_path):
    """"启动时报错 milvus configuration is required for Milvus cache backend，怎么改配置？": every
    word of the message is common in the tree, so no rare one anchored the answer, and the page
    that lists that very message was hedged as "may not answer your question" (newcomer,
    semantic-router docs). The quoted message is the anchor."""
    common = " Any backend of the cache needs its configuration; the backend is required to start."
    pages = {f"store{i}.md": f"# Store {i}\n\n## Setup\nSet `store{i}_size` for the store.{common}\n" for i in range(8)}
    pages["errors.md"] = ("# Cache errors\n\n## Cache backend cannot start\n\nMessages such as these mean the backend has no "
                          "configuration of its own:\n\n```text\nconfiguration is required for the cache backend\n```\n\n"
                          "Add the backend's block, e.g. `cache.redis.address`, and restart." + common + "\n")
    settings, kb = docs_kb(tmp_path, pages)
    answer = answer_question("启动时出现 configuration is required for the cache backend，怎么改？", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "errors.md" and answer.coverage == "full"


def test_a_big_tables_row_the_question_describes_without_naming_it_is_quoted(tmp_path):
    """"装不上没签名的插件 … has a bad signature" is the FORCE_VERIFYING_SIGNATURE row of a long
    variables table; the table was quoted from its top and cut three rows above it (dev
    trees). The row the question's rarer words pick is quoted, with its header; words that
    many rows share pick none, and the table is quoted as before. (On this small page
    retrieval alone finds the row's group too; the `picked` checks below are what guard the
    rule, whichever group retrieval ranks first.)"""
    from assistant.answer import answer_question

    rows = [f"| `PLUGIN_SETTING_{i:02d}` | `{i * 10}` | Plugin daemon option number {i}: tunes the plugin worker pool "
            f"size for batch {i} of the plugin jobs. |" for i in range(40)]
    rows[33] = ("| `FORCE_VERIFYING_SIGNATURE` | `true` | Require a valid signature before a plugin is installed; "
                "set it to false to install unsigned plugin packages. |")
    for i in range(10, 14):
        rows[i] = f"| `PLUGIN_QUOTA_{i}` | `{i}` | GPU quota limit for plugin pool {i}. |"
    page = ("# Environment variables\n\n## Plugin daemon\n\nThe plugin daemon runs plugins for the API.\n\n"
            "| Variable | Default | Description |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    settings, kb = docs_kb(tmp_path, {"env.md": page, "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"})
    answer = answer_question("Installing my own plugin package fails: PluginDaemonBadRequestError: plugin verification has "
                             "been enabled, and the plugin you want to install has a bad signature. How do I install an "
                             "unsigned plugin on our self-hosted deployment?", settings, kb=kb)
    assert answer.grounded and "`FORCE_VERIFYING_SIGNATURE` | `true`" in answer.answer
    assert "| Variable | Default | Description |" in answer.answer
    vague = answer_question("What does the plugin daemon's worker pool size option do for batch jobs?", settings, kb=kb)
    assert vague.grounded and "PLUGIN_SETTING_00" in vague.answer  # no row picked: from the top, as before
    # Which rows the words pick, whichever row group retrieval ranked first (on a real tree
    # another group outscored the row's, and the table was quoted from the top).
    from assistant.answer import _described_rows
    from assistant.retrieval import RetrievalParams, search

    def picked(question: str, asked: frozenset[str] = frozenset(), tried: frozenset[str] = frozenset()) -> frozenset[str]:
        result = search(kb.index, kb.embedder, question, RetrievalParams.from_settings(settings))
        env = next(a for a in result.articles if a.chunks[0].chunk.source.endswith("env.md"))
        return _described_rows(kb, env, question, asked, tried)

    assert picked("plugin install says the package has a bad signature, how do I allow unsigned ones") == {"force_verifying_signature"}
    assert picked("What does the plugin daemon's worker pool size option do for batch jobs?") == frozenset()
    assert picked("unsigned plugin fails, what is PLUGIN_SETTING_07 for?", frozenset({"plugin_setting_07"})) == frozenset()
    # Numbers are no description: "batch 7" rows' digits picked a row for "2 replicas, 20 workers".
    assert picked("We run 2 replicas with 20 workers each and the plugin jobs crash at batch 7, what should I check?") == frozenset()
    # A row the asker already set is not brought back as the answer.
    tried = frozenset({"force_verifying_signature"})
    assert picked("I already set FORCE_VERIFYING_SIGNATURE to false but an unsigned plugin still fails with a bad signature",
                  tried=tried) == frozenset()
    # Words that four rows share pick none of them.
    assert picked("the plugin jobs hit the GPU quota limit, which setting raises it?") == frozenset()


def test_a_parameter_listing_is_cut_to_the_entries_the_question_describes(tmp_path):
    """"Is there a flag to cap how much memory the KV cache may use?" matched a parameter page
    whose thirty "- **Name (`--flag`)**: …" entries fill three chunks; the passage quoted the
    first entries of each and the `--kv_cache_limit` entry was cut off (dev trees). The entry
    the rarer words describe is quoted, with its neighbours, and the rest stays behind "…"."""
    entries = [f"- **Option {i} (`--option_{i}`)**: Tunes the worker thread pool for batch jobs, part {i} of the "
               f"scheduler settings; leave it at the default unless the scheduler team asks you to change it." for i in range(30)]
    entries[17] = ("- **KV Cache Maximum Usage (`--kv_cache_limit`)**: Caps the memory the KV cache may use, e.g. "
                   "`--kv_cache_limit 5G`; unset or `auto`, the framework sizes it.")
    page = "# Server parameters\n\n## General parameters\n\nEvery server command takes these.\n\n" + "\n\n".join(entries) + "\n"
    settings, kb = docs_kb(tmp_path, {"params.md": page, "install.md": "# Install\n\nRun `pip install gadget`.\n"})
    answer = answer_question("int4 model only takes 4G but GPU memory keeps growing past 16G while generating. "
                             "Is there a flag to cap how much memory the KV cache may use?", settings, kb=kb)
    assert answer.grounded and "--kv_cache_limit 5G" in answer.answer
    assert "`--option_16`" in answer.answer and "`--option_18`" in answer.answer  # its neighbours
    assert "`--option_3`" not in answer.answer and "…" in answer.answer
    # Words every entry shares describe none: the listing is quoted as it comes.
    vague = answer_question("how do I tune the worker thread pool for batch jobs?", settings, kb=kb)
    assert vague.grounded and len(set(re.findall(r"`--option_\d+`", vague.answer))) > 3


def test_a_procedures_steps_are_no_listing_to_cut(tmp_path):
    """Numbered steps name no setting each: a question describing one step still gets the
    procedure from its start, not the one step with its neighbours."""
    from assistant.answer import _list_items

    steps = "\n".join(f"{i}. Run the check number {i} and wait for the green light." for i in range(1, 13))
    assert _list_items(steps) == []
    # Steps with bold titles are steps too, numbered or not (review: a 10-step runbook was cut to three).
    assert _list_items("\n".join(f"{i}. **Drain node {i}**: move its traffic away." for i in range(1, 13))) == []
    assert _list_items("\n".join(f"- **Stop the router on node {i}**: wait for it." for i in range(1, 13))) == []
    named = "\n".join(f"- `--flag-{i}`: what flag {i} does." for i in range(12))
    assert len(_list_items(named)) == 12
    assert len(_list_items("\n".join(f"* **ctx_size_{i}**: what it sets." for i in range(12)))) == 12
    # A code block at the margin is no entry: its YAML "- match:" lines are never cut away.
    yaml = "- `a`: one\n- `b`: two\n```yaml\nroutes:\n- match: x\n- match: y\n```\n- `c`: three"
    assert _list_items(yaml) == [(0, 1), (1, 2), (7, 8)]


# An error page's section that lists its messages in a plain code block, placeholders and all.
MODEL_LOAD_SECTION = dedent("""
    ## A classifier or embedding model cannot load

    Model-load errors normally include the failed path:

    ```text
    models directory does not exist: <path>
    failed to initialize <name> model from <path>: <error>
    ```

    Check the path inside the container, not on the host: mount `models/` at `/app/models`.
""")


def test_a_pasted_line_meets_the_message_block_it_fills_in(tmp_path):
    """A troubleshooting page lists the messages a section covers in a plain code block, with
    placeholders for what varies ("models directory does not exist: <path>"). The bare pasted
    line reads as no paste, and the answer led with the section above it on the page
    (newcomer, semantic-router docs): the block's message, its placeholders filled in by the
    paste, picks the section. Settings and JSON in such blocks are no messages."""
    from assistant.retrieval import _fenced_samples

    page = dedent("""
        # Common errors

        ## Category classifier cannot start

        These errors identify an incomplete transport:

        ```text
        command is required for stdio transport
        URL is required for HTTP transport
        ```

        Use one transport and disable the local domain classifier when the external one owns
        category classification. Its models directory does not exist until the first start, and
        the models directory of the external classifier does not exist on the router at all: the
        models directory does not exist for it, by design.

    """) + "\n" + MODEL_LOAD_SECTION + "\n" + dedent("""
        ## Settings

        ```text
        timeout_seconds=30
        {"error": "not found"}
        ```
    """)
    settings, kb = docs_kb(tmp_path, {"common-errors.md": page, "install.md": "# Install\n\nRun `pip install gadget`.\n"})
    samples = [sample for found in _fenced_samples(kb.index).values() for sample, _pieces in found]
    assert "models directory does not exist: <path>" in samples
    assert not any("timeout_seconds" in s or "not found" in s for s in samples)
    answer = answer_question("models directory does not exist: /app/models/mom-domain-classifier", settings, kb=kb)
    assert answer.grounded
    assert answer.answer.startswith("### Common errors > A classifier or embedding model cannot load")


def test_a_logs_error_line_before_an_unknown_death_is_its_cause(tmp_path):
    """`ask --log` on a router's start-up: an ERROR line with the cause (no exception class),
    then a FATAL line that only wraps it. Only the FATAL line was listed, "→ no KB article on
    it", right above the page whose heading quotes it; the ERROR line was dropped (newcomer,
    semantic-router docs). Both are listed, each with the section that quotes it, and the
    cause's section is quoted with its fix."""
    from assistant.i18n import t

    page = dedent("""
        # Common errors

        ## Router cannot load the configuration

        ### `Failed to create ExtProc server`

        This is a top-level startup failure. The useful cause normally appears on the same
        log line or immediately before it. Run `gadget validate --config config.yaml`.

    """) + "\n" + MODEL_LOAD_SECTION
    settings, kb = docs_kb(tmp_path, {"common-errors.md": page, "install.md": "# Install\n\nRun `pip install gadget`.\n"})
    log = ("2026-12-07T10:00:01Z INFO Starting the router with config /app/config/config.yaml\n"
           "2026-12-07T10:00:02Z ERROR failed to initialize domain model from /app/models/intent-classifier: "
           "models directory does not exist: /app/models\n"
           "2026-12-07T10:00:02Z FATAL Failed to create ExtProc server: failed to initialize classifier\n")
    answer = answer_question(t("answer.log_question", "en"), settings, kb=kb, log_text=log)
    findings = answer.answer.split("\n\n###", 1)[0]
    assert "FATAL Failed to create ExtProc server" in findings and "ERROR failed to initialize domain model" in findings
    assert "no KB article on it" not in findings
    assert "→ Common errors > A classifier or embedding model cannot load" in findings
    assert "Common errors > A classifier or embedding model cannot load** [" in answer.answer
    assert "mount `models/` at `/app/models`" in answer.answer
    # Earlier error lines do not crowd the cause out of the findings (review).
    early = "".join(f"2026-12-07T10:00:01Z ERROR failed to reach the {name} store: connection refused\n"
                    for name in ("alpha", "beta", "gamma", "delta"))
    lines = log.splitlines(keepends=True)
    crowded = answer_question(t("answer.log_question", "en"), settings, kb=kb, log_text=lines[0] + early + "".join(lines[1:]))
    assert "ERROR failed to initialize domain model" in crowded.answer.split("\n\n###", 1)[0]


def test_a_traceback_logged_at_error_line_by_line_lists_no_frames(tmp_path):
    """vLLM logs a traceback at ERROR, one line each: its frames are no error lines of their own
    (review), only the exception they end in is."""
    from assistant.tools.logs import diagnose_text

    settings, _kb = docs_kb(tmp_path, {"install.md": "# Install\n\nRun `pip install gadget`.\n"})
    log = ("ERROR 11-30 10:00:05 [core.py:390] EngineCore encountered a fatal error.\n"
           "ERROR 11-30 10:00:05 [core.py:390] Traceback (most recent call last):\n"
           'ERROR 11-30 10:00:05 [core.py:390]   File "/usr/lib/python3/vllm/v1/engine/core.py", line 381, in run_engine_core\n'
           "ERROR 11-30 10:00:05 [core.py:390]     engine_core.run_busy_loop()\n"
           "ERROR 11-30 10:00:05 [core.py:390] RuntimeError: CUDA error: an illegal memory access was encountered\n")
    signatures = [f.signature for f in diagnose_text(log, settings).findings]
    assert any("illegal memory access" in s for s in signatures)
    assert not any("File " in s or "run_busy_loop" in s or "Traceback" in s for s in signatures)


def test_a_url_in_a_default_cell_names_no_row(tmp_path):
    """"plugin_daemon 日志 … 能不能配国内 pip 源" named the service whose log it pasted, and
    the PLUGIN_DAEMON_URL row's default `http://plugin_daemon:5002` made that row the one
    asked about: the table was cut to it, and PIP_MIRROR_URL, the row the words describe,
    was cut away (dev trees). A URL's host is no setting's name."""
    from assistant.answer import _row_names

    assert "plugin_daemon" not in _row_names("| `PLUGIN_DAEMON_URL` | `http://plugin_daemon:5002` | Daemon URL. |")
    assert "plugin_daemon_url" in _row_names("| `PLUGIN_DAEMON_URL` | `http://plugin_daemon:5002` | Daemon URL. |")
    rows = [f"| `PLUGIN_SETTING_{i:02d}` | `{i * 10}` | Plugin daemon option number {i}: tunes the plugin worker pool "
            f"size for batch {i} of the plugin jobs. |" for i in range(40)]
    rows[0] = "| `PLUGIN_DAEMON_URL` | `http://plugin_daemon:5002` | Where the API reaches the plugin daemon. |"
    rows[30] = ("| `PIP_MIRROR_URL` | (empty) | Custom PyPI mirror the plugin daemon installs plugin dependencies "
                "from; speeds up installs on slow or offline networks. |")
    page = ("# Environment variables\n\n## Plugin daemon\n\nThe plugin daemon runs plugins for the API.\n\n"
            "| Variable | Default | Description |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    settings, kb = docs_kb(tmp_path, {"env.md": page, "serve.md": "# Serving\n\nStart the server with `gadget serve MODEL`.\n"})
    answer = answer_question("Installing plugins from the marketplace keeps failing, the plugin_daemon log says "
                             "init environment failed: failed to install dependencies: signal: killed. Downloading "
                             "python dependencies is very slow here; can I point plugin installs at a local pip mirror?",
                             settings, kb=kb)
    assert answer.grounded and "`PIP_MIRROR_URL`" in answer.answer


def test_words_that_many_documents_share_pick_no_row_of_a_big_table(tmp_path):
    """"gpustack 用 docker 起的 … 怎么把 UI 端口改成别的" picked the registry row of an English
    CLI table by "docker" and the product's name, words rare among the table's rows but in
    most of the tree's documents, and the --port row was cut away (GPUStack dev tree). Such
    words name the product or how it runs, not a row."""
    from assistant.answer import _described_rows
    from assistant.retrieval import RetrievalParams, search

    rows = [f"| `--option-{i:02d}` value | `{i}` | Tuning knob {i} of the scheduler queue. |" for i in range(30)]
    rows[5] = "| `--registry` value | `docker.io` | Default registry to pull the gadget docker images from. |"
    rows[20] = "| `--port` value | `80` | Port to bind the web server to; it serves the UI and the API. |"
    docs = {"cli.md": "# gadget start\n\n## Options\n\n| Flag | Default | Description |\n|---|---|---|\n" + "\n".join(rows) + "\n"}
    for i, topic in enumerate(["install", "upgrade", "backup", "models", "workers", "logs", "metrics", "tokens", "users"]):
        docs[f"{topic}.md"] = f"# {topic.title()}\n\nRun gadget with docker for {topic}: `docker run gadget/gadget {topic}`.\n"
    settings, kb = docs_kb(tmp_path, docs)

    def picked(question: str) -> frozenset[str]:
        result = search(kb.index, kb.embedder, question, RetrievalParams.from_settings(settings))
        cli = next(a for a in result.articles if a.chunks[0].chunk.source.endswith("cli.md"))
        return _described_rows(kb, cli, question, frozenset(), frozenset())

    # The words that describe the row (web, UI, 端口 → port) pick it; gadget and docker pick none.
    assert picked("gadget 用 docker 起的，默认 web 端口 80 被别的服务占了，怎么把 UI 端口改成别的？") == {"port"}
    assert picked("Started gadget with docker on 80, which is taken; how do I move the web UI elsewhere?") == {"port"}
    assert picked("gadget 是用 docker 起的，要改哪个配置？") == frozenset()


def test_a_passage_with_an_empty_code_block_is_compared_with_its_twin(tmp_path):
    """A converted page's empty fenced block ("```\\n```", left by an rst directive) made every
    question that quoted its twin's passage fail with an internal error (the XTuner tree,
    blind set): the block is code with nothing in it."""
    from types import SimpleNamespace

    from assistant.answer import _twin_lacks_what_is_quoted

    empty = SimpleNamespace(text="Install it:\n\n```\n```\n\nthen run `xtuner train my_config --deepspeed deepspeed_zero2`.")
    assert _twin_lacks_what_is_quoted("怎么跑 xtuner train my_config --deepspeed deepspeed_zero2", empty,
                                      [SimpleNamespace(text="安装后执行训练。")])
    en = ("# Training\n\n## Start a run\n\nInstall it first:\n\n```\n```\n\nThen start the run with "
          "`xtuner train my_config --deepspeed deepspeed_zero2` on every node.\n")
    zh = ("# 训练\n\n## 开始训练\n\n先安装：\n\n```\n```\n\n然后在每个节点上执行 "
          "`xtuner train my_config --deepspeed deepspeed_zero2` 开始训练。\n")
    settings, kb = docs_kb(tmp_path, {"en/train.md": en, "zh_cn/train.md": zh})
    for question in ("xtuner train my_config --deepspeed deepspeed_zero2 要在每个节点上都执行吗？",
                     "do I run xtuner train my_config --deepspeed deepspeed_zero2 on every node?"):
        answer = answer_question(question, settings, kb=kb)
        assert answer.grounded and "deepspeed_zero2" in answer.answer, question


FAQ_ZH = dedent("""
    # 常见问题

    ## 服务启动报错：could not select device driver "nvidia" with capabilities: [[gpu]]
    - 现象：Docker Desktop 下 container 启动后马上退出（exited with code 1）。
    - 原因：没有安装 NVIDIA Container Toolkit，或者 docker 没有重启。
    - 解决方案：安装 NVIDIA Container Toolkit 后执行 `systemctl restart docker`。

    ## 执行 run.sh 时报错：Illegal instruction (core dumped)，或 OCR 服务无法启动
    - 原因：CPU 不支持 AVX2 指令集，日志里会打印 "All workers are busy, try again later"。
    - 解决方案：换一台支持 AVX2 的机器。

    ## Common errors: GPU and drivers
    - 支持的显卡和驱动版本见安装文档。

    ## 在 windows 上执行 bash run.sh 时报错：/bin/bash^M: bad interpreter，或'\\r': command not found
    - 原因：脚本在 windows 下编辑过，行尾是 dos 格式。
    - 解决方案：把回车符去掉：`sed -i "s/\\r//" scripts/run.sh`
""")


def test_a_faq_headings_error_is_matched_by_a_pasted_copy_of_it(tmp_path):
    """A FAQ names its error in the heading and explains it below. A pasted copy of that
    line, flattened into one line with the next error, never met the body's words: another
    entry's section was cited first, as sure, and the `sed` fix was not quoted (a team's
    Chinese FAQ asked in English, new trees)."""
    from assistant.retrieval import heading_samples, pasted_in_passages

    assert heading_samples("执行 run.sh 时报错：Illegal instruction (core dumped)，或 OCR 服务无法启动")[0] == \
        "Illegal instruction (core dumped)"
    assert heading_samples("How can I resolve the error: At most 1 image(s) may be provided in one request?") == \
        ["At most 1 image(s) may be provided in one request"]
    for topic in ("Check for errors", "Troubleshooting", "Common errors: GPU and drivers", "如何开启 “Prefix Caching”",
                  "系统提示：You are a helpful assistant", "On error: restart the worker process"):
        assert heading_samples(topic) == [], topic
    settings, kb = docs_kb(tmp_path, {"FAQ_zh.md": FAQ_ZH, "install.md": "# Install\n\n## Docker\n\nRun `bash run.sh`.\n"})
    question = ("Win11 + Docker Desktop. The container dies right away: app-local | scripts/entrypoint.sh: line 2: "
                "$'\\r': command not found app-local | scripts/entrypoint.sh: line 3: syntax error near unexpected "
                "token `$'{\\r''  app-local exited with code 2. How do I fix this?")
    unstructured = {m.id for m in kb.index.docs.values()}
    hits, _sampled = pasted_in_passages(kb.index, question, unstructured)
    assert [section for (_doc, section) in hits] == [next(c.title for c in kb.index.chunks if "command not found" in c.title)]
    answer = answer_question(question, settings, kb=kb)
    assert answer.grounded and "command not found" in answer.citations[0].section
    assert 'sed -i "s/\\r//"' in answer.answer
    # A body's quoted line counts only where the question pastes it, not in its prose; a heading
    # that names a topic, not a message, holds none; and a message said to be absent is none (review).
    for prose in ("do the All workers are busy, try again later messages mean the install failed?",
                  "Which GPU and drivers do you support?",
                  "日志里没有 Illegal instruction (core dumped)，但是 OCR 服务起不来，怎么办？"):
        assert not pasted_in_passages(kb.index, prose, unstructured)[0], prose
    assert pasted_in_passages(kb.index, "run.sh 报 Illegal instruction (core dumped)", unstructured)[0]
    assert pasted_in_passages(kb.index, "起服务以后日志一直刷：\nWARN All workers are busy, try again later", unstructured)[0]


TLS_GUIDE = dedent("""
    # Serve the console over HTTPS

    This guide puts your own certificate on the console's built-in nginx.

    ## 1. Prepare the certificate files
    You need the certificate chain and its private key, as `fullchain.pem` and `privkey.pem`.

    ## 2. Check that the container runs
    Run `docker ps` and look for `console-web-1`.

    ## 3. Copy the files into the container
    `docker cp ./fullchain.pem console-web-1:/tmp/` and the same for the key.

    ## 4. Put the certificate files where nginx reads them
    Inside the container, move the certificate files to `/etc/nginx/ssl/` and `chmod 600` the key.

    ## 5. Switch to the TLS site
    Replace the site file with the shipped template: `cp /etc/nginx/console.tls.conf ./console.conf`.

    ## 6. Point nginx at the certificate files
    In `console.conf`, set `ssl_certificate` and `ssl_certificate_key` to the certificate files in `/etc/nginx/ssl/`.

    ## 7. Reload nginx
    Run `nginx -s reload`, or restart the container.
""")


def test_a_step_between_two_quoted_steps_of_a_procedure_is_quoted_too(tmp_path):
    """Steps 4 and 6 of a procedure matched the question and step 5, the one that names the
    template to copy, shared few of its words: it was left out, and the procedure quoted had
    a hole in it (new trees)."""
    from assistant.answer import _step_number

    assert [_step_number(f"Guide > {h}") for h in ("5. Switch", "Step 5: switch", "第 5 步 切换", "5）切换", "2024 notes", "Intro")] \
        == [5, 5, 5, 5, None, None]
    assert _step_number("5. A page title alone") is None
    # versions, sub-numbers and a FAQ's numbered questions are no steps (review)
    for topic in ("3.0 release notes", "1.2 Configure", "0.6.0", "3. 如何开启 API Key 鉴权", "4. How do I change the port?"):
        assert _step_number(f"Guide > {topic}") is None, topic
    settings, kb = docs_kb(tmp_path, {"tls.md": TLS_GUIDE, "faq.md": "# FAQ\n\n## Ports\n\nThe console listens on 8080.\n"})
    answer = answer_question("I have my certificate files from the CA. Where do the certificate files go so nginx uses "
                             "the certificate files, and what do I point at them?", settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "tls.md"
    quoted = [c.section.split(" > ")[-1][:2] for c in answer.citations if c.source == "tls.md"]
    assert {"4.", "6."} <= set(quoted)
    assert "console.tls.conf" in answer.answer and answer.answer.index("4. Put") < answer.answer.index("5. Switch") \
        < answer.answer.index("6. Point")
    # A FAQ's numbered questions are topics: the one between two that matched is not brought in.
    faq = dedent("""
        # Console FAQ

        ## 1. Which browsers are supported?
        Any current browser.

        ## 2. How do I change the console's port?
        Set `CONSOLE_PORT=8081` in `.env` and restart.

        ## 3. How do I turn on API key authentication?
        Set `CONSOLE_API_KEY` in `.env`.

        ## 4. How do I change the address the console listens on?
        Set `CONSOLE_HOST=0.0.0.0` in `.env` and restart.
    """)
    (tmp_path / "faq").mkdir()
    settings, kb = docs_kb(tmp_path / "faq", {"faq.md": faq})
    answer = answer_question("how do I change the console's port and the address it listens on?", settings, kb=kb)
    assert answer.grounded and "CONSOLE_API_KEY" not in answer.answer


def _install_page(title: str, bullet: str, version: str, step: str, note: str) -> str:
    return dedent(f"""
        # {title}

        ## Install the gateway

        {bullet} Install a stable version from the Helm repository

        ```sh
        helm install acme-gateway acme/acme-gateway --version {version} --set security=null
        ```

        {bullet} Install a stable version with the auth proxy in front of it

        ```sh
        helm install acme-gateway acme/acme-gateway --version {version}
        ```

        {bullet} Install the nightly version from a clone of the repository

        ```sh
        # {step}
        helm install acme-gateway ./charts/acme-gateway --set security=null
        ```

        > **Important**
        > {note}
        """)


def test_a_copy_of_a_passage_in_another_file_is_cited_not_quoted_again(tmp_path):
    """A Helm chart's README and the install guide beside it say the same thing, with `*` for
    `-`, another chart version and another case: the copy was quoted whole as "It could also
    be" and took half the answer (newcomer). Its source is still cited."""
    settings, kb = docs_kb(tmp_path, {
        "charts/acme-gateway/README.md": _install_page("Acme gateway chart", "-", "1.4.2", "Step3: Install the Acme Gateway",
                                                       "If a request returns \"Unauthorized\", add `-H 'Authorization: 12345'` to it."),
        "docs/installation.md": _install_page("Acme gateway installation", "*", "1.4.0", "Step3: Install the acme gateway",
                                              "A request may return \"Unauthorized\": add `-H 'Authorization: 12345'` to it."),
        "docs/metrics.md": "# Metrics\n\n## Scraping\nThe gateway exports Prometheus metrics on port 9090 at `/metrics`.\n",
    })
    answer = answer_question("curl to the acme gateway API keeps returning Unauthorized", settings, kb=kb)
    assert answer.grounded and "Authorization: 12345" in answer.answer
    assert ("--version 1.4.2" in answer.answer) != ("--version 1.4.0" in answer.answer)  # one copy quoted
    assert {c.source for c in answer.citations} >= {"charts/acme-gateway/README.md", "docs/installation.md"}


GATEWAY_RUNBOOK = """# Inference gateway runbook

## 502 from the gateway

The gateway (Envoy) returns 502 when the upstream vLLM pod closed the connection.
Check the pod restarts: `kubectl get pods -n serving -l app=vllm`.

## 504 upstream request timeout

Our Envoy route timeout is 300 s. Long generations (max_tokens above 8000) can exceed it.
Raise the timeout per route in gateway/routes.yaml (field `timeout_seconds`), never globally.

## 429 from the gateway

Rate limiting per API key: 60 requests per minute. Ask for a higher quota in #infra.
"""


def test_a_runbooks_entry_by_code_leads_the_entries_above_it(tmp_path):
    """"gateway returns 504 for long generations" matched the 504 section best, and the 502
    section above it led the answer, in page order (newcomer). Entries by status code are
    topics side by side; a procedure's steps keep their order (the tests above)."""
    settings, kb = docs_kb(tmp_path, {"runbooks/gateway.md": GATEWAY_RUNBOOK})
    answer = answer_question("gateway returns 504 for long generations", settings, kb=kb)
    assert answer.grounded and answer.answer.lstrip().startswith("### Inference gateway runbook > 504 upstream request timeout")
    assert "timeout_seconds" in answer.answer


def test_a_procedures_steps_keep_their_order_when_their_headings_name_ports(tmp_path):
    """The code rule above moved "Step 2: restart vLLM on port 8080" ahead of "Step 1: drain
    traffic on port 8000" when the question named 8080 (review): steps are not keyed by codes."""
    page = ("# Restarting a serving node\n\nFollow these steps in order.\n\n## Step 1: drain traffic on port 8000\n\n"
            "Run `gatewayctl drain node-7 --port 8000` and wait until the active connections reach zero.\n\n"
            "## Step 2: restart vLLM on port 8080\n\nRun `systemctl restart vllm@8080` and watch `journalctl -u vllm@8080`.\n")
    settings, kb = docs_kb(tmp_path, {"runbooks/restart.md": page})
    answer = answer_question("how do I drain traffic and restart vllm on 8080?", settings, kb=kb)
    text = answer.answer
    assert answer.grounded and "gatewayctl drain" in text and "systemctl restart" in text
    assert text.index("gatewayctl drain") < text.index("systemctl restart")


def test_a_section_the_question_matches_leads_the_entries_keyed_by_codes_it_does_not_name(tmp_path):
    """"gateway returns 429, what to do?" matched the "Rate limiting" section best, and the
    "502 from the gateway" section above it led the answer (newcomer): an entry keyed by a code
    the asker does not name is a topic beside it, not a step before it. A step keyed by a
    number stays before the best one."""
    from assistant.answer import _behind
    from assistant.retrieval import ArticleMatch, ScoredChunk, section_key

    page = ("# Edge proxy runbook\n\nOwner: platform team\n\n## 502 from the gateway\n\n"
            "The edge proxy returns 502 when the upstream vLLM pod closed the connection.\n\n"
            "## Step 2: restart on port 8080\n\nRun `systemctl restart vllm@8080`.\n\n"
            "## Rate limiting\n\nTo raise a tenant's limit, run `gwctl quota raise <tenant> --rpm 120`.\n")
    settings, kb = docs_kb(tmp_path, {"runbooks/edge-proxy.md": page})
    chunks = {c.title.split(" > ")[-1]: c for c in kb.index.chunks}

    def match(heading):
        chunk = chunks[heading]
        return ArticleMatch(chunk.doc_id, 1.0, 1.0, chunks=[ScoredChunk(chunk, 1.0, 0.0, 0.0)], passage=section_key(chunk.title))

    top, code, step = match("Rate limiting"), match("502 from the gateway"), match("Step 2: restart on port 8080")
    quoted = {id(art): (art.chunks[0].chunk, art.chunks[0].chunk.text) for art in (top, code, step)}
    where = {id(code): 1, id(step): 2, id(top): 3}
    behind = _behind(kb, "gateway returns 429, what to do?", top, [code, step, top], [], where, quoted)
    assert id(code) in behind and id(step) not in behind
    assert not _behind(kb, "how do I raise a tenant's rate limit?", top, [code, step, top], [], where, quoted)  # no code named


def test_a_page_titled_by_the_alert_asked_about_answers_it_whatever_subject_word_comes_with_it(tmp_path):
    """"KVCacheUsageHigh alert fired, what should I do?" was refused, "nothing on dashboards and
    alerting", above the team's page titled KVCacheUsageHigh with its "What to do" (trial)."""
    settings, kb = docs_kb(tmp_path, {
        "Alerts/KVCacheUsageHigh 9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b.md": (
            "# KVCacheUsageHigh\n\nSeverity: P2\nExpression: vllm:gpu_cache_usage_perc\nThreshold: > 0.95 for 10m\n\n"
            "## What it means\n\nThe KV cache of a replica has been above 95% full for ten minutes. New requests wait.\n\n"
            "## What to do\n\n1. If preemptions grow, restart the replica with `--max-num-seqs 128`.\n"
            "2. If the alert persists after 30 minutes, scale out: `kubectl scale deploy/vllm-qwen --replicas=6`.\n"),
        "Deploy/Nginx load balancer.md": (
            "# Nginx load balancer\n\n## Upstreams\n\nEach vLLM replica is an upstream; `proxy_read_timeout 300s` keeps long streams.\n"),
    })
    for question in ("KVCacheUsageHigh alert fired, what should I do?", "KVCacheUsageHigh 告警了怎么处理"):
        answer = answer_question(question, settings, kb=kb)
        assert answer.grounded and answer.citations[0].source.startswith("Alerts/KVCacheUsageHigh"), question
        assert "--max-num-seqs 128" in answer.answer
    assert not answer_question("How do I set up a Grafana dashboard for vLLM?", settings, kb=kb).grounded


def test_a_team_page_that_remarks_on_memory_once_is_no_memoryless_page(tmp_path):
    """An OOM question's candidates that never deal with memory yield (retrieval.demote_memoryless);
    on a team's tree one remark can be the answer ("a minimum of 48GB of combined CPU and GPU
    memory … use CPU for onnx export"), and demoting its page lost it (an unseen tree)."""
    from assistant.retrieval import memory_docs

    settings, kb = docs_kb(tmp_path, {
        "diffusers.md": "# Diffusers\n\n## ONNX export\nWe recommend a device with a minimum of 48GB of combined CPU and GPU "
                        "memory for exporting ONNX models. If not, use CPU for onnx export: `--onnx-device cpu`.\n",
        "ptq.md": "# LLM PTQ\n\n## Out of memory\nIf calibration runs out of memory (OOM), lower `--calib-batch-size` "
                  "or set `--gpu-memory-utilization 0.8`.\n",
        "serving.md": "# Serving\n\n## Ports\nThe server listens on 8000; set `--port` to change it.\n"})
    docs = memory_docs(kb.index)
    assert {"diffusers", "ptq"} <= docs and "serving" not in docs
    answer = answer_question("ONNX export of my diffusion model hits OOM, what should I do?", settings, kb=kb)
    assert answer.citations[0].source == "diffusers.md"
