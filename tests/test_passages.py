"""A team's own docs: answers by passage, bounded, citing the file, refusals naming its topics."""

from dataclasses import replace
from pathlib import Path

import pytest

from assistant.answer import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS, answer_question
from assistant.config import Settings
from assistant.knowledge import open_kb

from .conftest import dedent

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


def test_quotes_are_bounded_and_the_rest_stays_behind_the_citation(wiki_settings):
    kb = open_kb(wiki_settings, progress=lambda _m: None)
    answer = answer_question("which tool step do I run before the green light", wiki_settings, kb=kb)
    assert answer.grounded and answer.citations[0].source == "long.md"
    assert len(answer.answer) <= MAX_ANSWER_CHARS
    body = answer.answer.split("\n", 2)[2]
    assert len(body) <= MAX_PASSAGE_CHARS + 200


def test_a_refusal_names_this_kbs_topics_not_the_bundled_ones(wiki_settings):
    kb = open_kb(wiki_settings, progress=lambda _m: None)
    answer = answer_question("How do I rotate the TLS certificate of our Kafka brokers?", wiki_settings, kb=kb)
    assert not answer.grounded
    assert "Inference on-call wiki" in answer.answer
    assert "NCCL" not in answer.answer and "FastDeploy" not in answer.answer
