from pathlib import Path

from ingest.chunking import chunk_document, text_sections, text_title
from ingest.documents import parse_document

from .conftest import ARTICLE_EN, dedent


def _doc(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return parse_document(path, tmp_path, path.read_bytes())


def test_front_matter_fields_are_read(tmp_path):
    doc = _doc(tmp_path, "a.md", ARTICLE_EN)
    assert (doc.id, doc.lang, doc.product) == ("widget-hang", "en", "general")
    assert doc.signatures == ("Widget queue is full",)
    assert doc.title == "Widget server: requests hang"


def test_heading_path_is_the_chunk_title_and_sections_have_kinds(tmp_path):
    chunks = chunk_document(_doc(tmp_path, "a.md", ARTICLE_EN))
    kinds = [c.kind for c in chunks]
    assert kinds[:5] == ["symptoms", "signatures", "causes", "checks", "fixes"]
    fixes = chunks[4]
    assert fixes.title == "Widget server: requests hang > Fixes"
    assert "widgetd --queue-len 4096" in fixes.text


def test_how_people_ask_items_become_one_chunk_each(tmp_path):
    chunks = chunk_document(_doc(tmp_path, "a.md", ARTICLE_EN))
    questions = [c.text for c in chunks if c.kind == "question"]
    assert questions == ["widget requests hang", "the widget server stopped answering"]


def test_code_block_longer_than_the_bound_is_never_split(tmp_path):
    code = "\n".join(f"echo line {i} of a long script" for i in range(120))
    text = dedent(f"""
        # Runbook
        ## Restart
        Before.

        ```bash
        {code.replace(chr(10), chr(10) + '        ')}
        ```

        After.
    """)
    chunks = chunk_document(_doc(tmp_path, "r.md", text), max_chars=400)
    holding = [c for c in chunks if "echo line 0 of" in c.text]
    assert len(holding) == 1 and "echo line 119 of" in holding[0].text
    assert holding[0].text.count("```") == 2


def test_large_table_is_split_into_row_groups_each_with_the_header(tmp_path):
    rows = "\n".join(f"| flag-{i} | value {i} |" for i in range(60))
    text = f"# T\n## Flags\n| flag | value |\n|---|---|\n{rows}\n"
    chunks = chunk_document(_doc(tmp_path, "t.md", text), max_chars=300)
    assert len(chunks) > 2
    for c in chunks:
        assert c.text.startswith("| flag | value |\n|---|---|\n") and c.title == "T > Flags"
    found = [c for c in chunks if "| flag-37 |" in c.text]
    assert len(found) == 1  # each row in exactly one group
    assert sum(c.text.count("| flag-") for c in chunks) == 60


def test_small_table_stays_whole(tmp_path):
    rows = "\n".join(f"| flag-{i} | value {i} |" for i in range(5))
    text = f"# T\n## Flags\n| flag | value |\n|---|---|\n{rows}\n"
    chunks = chunk_document(_doc(tmp_path, "t.md", text), max_chars=300)
    assert len(chunks) == 1 and "flag-0 " in chunks[0].text and "flag-4 " in chunks[0].text


def test_long_prose_is_split_under_the_bound(tmp_path):
    para = " ".join(f"Sentence number {i} explains one more detail." for i in range(200))
    chunks = chunk_document(_doc(tmp_path, "p.md", f"# P\n## Notes\n{para}\n"), max_chars=500)
    assert len(chunks) > 5
    assert all(len(c.text) <= 500 for c in chunks)
    assert all(c.title == "P > Notes" for c in chunks)


def test_long_prose_split_keeps_its_line_breaks_and_dotted_words(tmp_path):
    """A long run of one-line steps is split between lines and keeps them; an address or
    a version is never cut or spaced at its dots."""
    steps = "\n".join(f"Step {i}: curl http://10.0.{i}.1:8000/health against v0.8.{i}" for i in range(80))
    chunks = chunk_document(_doc(tmp_path, "steps.txt", f"Restart runbook\n\n1. Steps\n{steps}\n"), max_chars=500)
    assert len(chunks) > 5 and all(len(c.text) <= 500 for c in chunks)
    for c in chunks:
        lines = c.text.splitlines()
        assert len(lines) > 3 and all(line.startswith("Step ") for line in lines)
    joined = "\n".join(c.text for c in chunks)
    assert "http://10.0.41.1:8000/health against v0.8.41\n" in joined and ". " not in joined.replace(": ", "")


def test_chunk_hash_changes_with_content_only(tmp_path):
    a = chunk_document(_doc(tmp_path, "a.md", ARTICLE_EN))
    b = chunk_document(_doc(tmp_path, "b.md", ARTICLE_EN.replace("4096", "8192")))
    changed = [x.kind for x, y in zip(a, b) if x.hash != y.hash]
    assert changed == ["fixes"]


SEED_STYLE = """前言

        生产环境里问题很多，本文给出排查思路。

显存相关报错

• CUDA out of memory 错误

        可能导致的原因先列出来：

可能原因\t本质
max-model-len 过大\tKV Cache 预留爆炸
并发太高\t同时生成的 token 过多了

• 排查顺序

        1、检查模型大小

#通过指令查看显存
nvidia-smi
"""


def test_plain_text_tab_tables_and_bullets(tmp_path):
    doc = _doc(tmp_path, "seed.txt", SEED_STYLE)
    assert doc.lang == "zh" and doc.title == "seed"
    sections = text_sections(doc.body)
    paths = [" > ".join(p) for p, _ in sections]
    assert "显存相关报错 > CUDA out of memory 错误" in paths
    chunks = chunk_document(doc)
    table = [c for c in chunks if "max-model-len 过大\tKV Cache 预留爆炸" in c.text]
    assert len(table) == 1 and "并发太高" in table[0].text
    cmd = [c for c in chunks if "nvidia-smi" in c.text]
    # an indented numbered step is body text: it stays with its command under the bullet heading
    assert cmd and cmd[0].title.endswith("排查顺序") and "1、检查模型大小" in cmd[0].text


def test_a_handbooks_alerts_nest_under_their_part_and_are_sections_of_their_own():
    """A team's handbook numbers its parts "一、" and the alerts in a part "1. …", each written
    as labelled lines. Both numberings are level 1 by depth, so "二、告警处理" read as text (glued
    to the part above it) and, without blank lines, the part's alerts were one section:
    any question on one alert quoted all of them (trial)."""
    body = ("推理网关值班手册\n\n维护：平台组 张磊 / 更新：2025-09-30\n\n一、值班须知\n值班同学 5 分钟内响应 P1 告警。\n\n二、告警处理\n"
            "1. LLMGateway5xxHigh\n现象：网关 5xx 比例超过 5%。\n处理：kubectl -n llm rollout restart deploy/envoy\n"
            "2. LLMGatewayLatencyHigh\n现象：P99 超过 30 秒。\n原因：排队过长。\n处理：kubectl -n llm scale deploy/vllm --replicas=4\n\n"
            "三、重启流程\n1. 先摘流\nkubectl cordon node-1\n2. 重启\nkubectl rollout restart deploy/vllm\n")
    sections = {" > ".join(path[1:]): " ".join(b.text for b in blocks) for path, blocks in text_sections(body)}
    # the page's byline is its opening's text, not a heading over every section
    path, blocks = text_sections(body)[0]
    assert path == ["推理网关值班手册"] and [b.text for b in blocks] == ["维护：平台组 张磊 / 更新：2025-09-30"]
    del sections[""]
    assert list(sections) == ["一、值班须知", "二、告警处理 > 1. LLMGateway5xxHigh", "二、告警处理 > 2. LLMGatewayLatencyHigh",
                              "三、重启流程"]
    assert "二、" not in sections["一、值班须知"]
    assert "deploy/envoy" in sections["二、告警处理 > 1. LLMGateway5xxHigh"]
    assert "--replicas=4" in sections["二、告警处理 > 2. LLMGatewayLatencyHigh"]
    assert "deploy/envoy" not in sections["二、告警处理 > 2. LLMGatewayLatencyHigh"]
    # the steps of a procedure (a command under each) stay one list under their part
    assert "kubectl cordon" in sections["三、重启流程"] and "deploy/vllm" in sections["三、重启流程"]
    # blank lines between the alerts: the same sections
    spaced = body.replace("\n2. LLMGatewayLatencyHigh", "\n\n2. LLMGatewayLatencyHigh").replace("\n1. LLM", "\n\n1. LLM")
    assert [" > ".join(p[1:]) for p, _b in text_sections(spaced)][1:] == list(sections)
    # once one item is written as fields, its one-field sibling is an entry too, not glued to it (review)
    glued = "二、告警处理\n1. GatewayAuthFailSpike\n现象：401 超过 5%。\n处理：按 x-tenant-id 统计\n2. GatewayCertExpiry\n处理：cmctl renew llm-gw-tls\n"
    assert [p[-1] for p, _b in text_sections(glued)] == ["1. GatewayAuthFailSpike", "2. GatewayCertExpiry"]
    # a procedure's steps with config lines under them stay one list; a titled field is still a heading
    steps = "升级流程\n1. 修改配置\nmodel: qwen\ndtype: bfloat16\n2. 重启服务\nkubectl rollout restart deploy/vllm\n"
    assert len(text_sections(steps)) == 1
    titled = "故障复盘\n\n故障一：驱动更新后 NCCL 超时\n\n回滚驱动到 535。\n\n故障二：版本升级后 OOM\n\n把利用率调回 0.85。\n"
    assert [p[-1] for p, _b in text_sections(titled)] == ["故障一：驱动更新后 NCCL 超时", "故障二：版本升级后 OOM"]
    # a list in the preamble does not set the nesting order: "一、部署" heads its part (review)
    preamble = "vLLM 部署说明\n\n1. 本文适用于 vLLM 0.6\n\n2. 如有问题联系平台组\n\n一、部署\n先装驱动。\n\n二、排障\n看日志。\n"
    assert [p[-1:] for p, _b in text_sections(preamble)][-2:] == [["一、部署"], ["二、排障"]]
    # Word's outline order: "（一）" under "一、", "1." under "（一）"
    outline = "一、部署\n\n（一）单机\n\n1. 准备\n先装驱动。\n\n2. 启动\n运行 vllm serve。\n\n（二）多机\n配置 Ray。\n"
    assert [p for p, _b in text_sections(outline)] == [["一、部署", "（一）单机", "1. 准备"], ["一、部署", "（一）单机", "2. 启动"],
                                                       ["一、部署", "（二）多机"]]


def test_file_without_front_matter_gets_fallbacks(tmp_path):
    (tmp_path / "ops").mkdir()
    doc = _doc(tmp_path, "ops/restart-guide.md", "# Restarting the fleet\n\nDrain first.\n")
    assert doc.id == "ops-restart-guide" and doc.title == "Restarting the fleet" and doc.lang == "en"


def test_a_chinese_numbered_heading_over_arabic_steps_is_a_heading():
    """A team's text runbook: "一、重启流程" right above its "1. … 2. …" steps was taken for
    the first item of one list and lost (its steps were cited under the file's title)."""
    body = ("推理服务值班手册（2026 版）\n\n一、重启流程\n1. 先在网关上摘流：gatewayctl drain --node <node>\n"
            "2. 等待 60 秒，确认 Running 请求为 0\n3. 重启 vllm：systemctl restart vllm@prod\n\n"
            "二、显存不足\n把 --gpu-memory-utilization 从 0.92 调到 0.85，再重启。\n\n三、网关超时\n把 timeout 调到 120 秒。\n")
    sections = {path[-1]: " ".join(b.text for b in blocks) for path, blocks in text_sections(body)}
    assert list(sections) == ["一、重启流程", "二、显存不足", "三、网关超时"]
    assert "gatewayctl drain" in sections["一、重启流程"] and "120 秒" in sections["三、网关超时"]
    # one list stays one list: "1. Drain" over "2. Restart" are steps, not headings
    steps = "Restart procedure\n\n1. Drain the node\n2. Restart vllm\n3. Check /health\n"
    assert [path[-1] for path, _blocks in text_sections(steps)] == ["Restart procedure"]
    # a later line of the section that happens to look like a heading stays text
    glued = "一、显存不足\n现象：服务启动时报 OOM\n三、网关超时\n现象：504\n"
    assert [path for path, _blocks in text_sections(glued)] == [["一、显存不足"]]


def test_a_command_inside_a_plain_text_step_is_not_a_heading():
    """"2.2 执行回滚" over "执行 helm rollback vllm-serving <REVISION> -n llm-serving --wait":
    the command became the parent heading of the steps after it, and 2.2 its body."""
    body = dedent("""\
        推理服务回滚流程

        2. 回滚步骤
        2.1 确认上一个版本
        执行 helm history vllm-serving -n llm-serving，找到上一个 REVISION。
        2.2 执行回滚
        执行 helm rollback vllm-serving <REVISION> -n llm-serving --wait --timeout 20m
        2.3 验证
        回滚后观察 15 分钟。
        """)
    paths = {tuple(path): [b.text for b in blocks] for path, blocks in text_sections(body)}
    rollback = [texts for path, texts in paths.items() if path[-1] == "2.2 执行回滚"]
    assert rollback and "helm rollback" in rollback[0][0]
    assert not any("helm rollback" in part for path in paths for part in path)


def test_a_step_title_naming_one_flag_is_still_a_heading():
    from ingest.chunking import looks_like_heading

    assert looks_like_heading("2.1 调低 --max-model-len")
    assert not looks_like_heading("执行 helm rollback vllm-serving <REVISION> -n llm-serving --wait --timeout 20m")


def test_html_entities_in_markdown_prose_are_characters_and_spacer_lines_go(tmp_path):
    """LitGPT's docs space their sections with "&nbsp;" lines: they came back raw in answers."""
    doc = _doc(tmp_path, "page.md", "# Serve\n\nStart it.\n\n&nbsp;\n\n## Limits\n\nuse &lt;model&gt; &amp; a port\n\n```\necho &amp;\n```\n")
    texts = [c.text for c in chunk_document(doc)]
    assert not any("&nbsp;" in t for t in texts)
    assert any("use <model> & a port" in t for t in texts) and any("echo &amp;" in t for t in texts)  # code stays as written


def test_entities_in_inline_code_and_escaped_ones_stay_as_written(tmp_path):
    """Markdown renders `a &amp;&amp; b` and \\&amp; literally: decoding them changed the
    command a runbook quotes (review)."""
    doc = _doc(tmp_path, "page.md", "# Run\n\nRun `make &amp;&amp; make install` with &lt;prefix&gt;, and type \\&amp; as is.\n")
    text = " ".join(c.text for c in chunk_document(doc))
    assert "`make &amp;&amp; make install`" in text and "<prefix>" in text and "\\&amp;" in text


def test_a_plain_text_title_with_a_byline_under_it_still_titles_the_page():
    """"Inference On-call Checklist (start of shift)" over "Last edit: jmorgan, 2025-03" and
    numbered sections: the page was titled by its file name, and its sections' names were
    strung together as its title in topic lists (trial)."""
    body = ("Inference On-call Checklist (start of shift)\nLast edit: jmorgan, 2025-03\n\n1. Start of shift\n"
            "Acknowledge the PagerDuty handoff in #inference-oncall\n\n2. Health checks\n"
            "kubectl -n llm get deploy -o wide\n\n3. End of shift\nWrite the handover note.\n")
    assert text_title(body) == "Inference On-call Checklist (start of shift)"
    # a second line that is text, not a byline, leaves it untitled as before
    assert text_title(body.replace("Last edit: jmorgan, 2025-03", "Run these checks every shift, they take 10 min.")) == ""
