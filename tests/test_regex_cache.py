"""The regex cache `ask` installs (oncall_common/regex_cache.py): patterns served from the file
behave exactly as freshly compiled ones, and a bad file only costs the time it was to save."""

from __future__ import annotations

import json
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oncall_common import regex_cache

ROOT = Path(__file__).resolve().parents[1]

# Shapes the package's patterns take: named groups, flags inline and passed, lookarounds,
# alternations of words, Chinese, bytes, a verbose pattern, a backreference.
PATTERNS: list[tuple[str | bytes, int]] = [
    (r"(?P<key>[A-Z_]{3,})\s*=\s*(?P<value>\S+)", 0),
    (r"(?i)\bkv[ _-]?cache\b.*?(\d+(?:\.\d+)?)\s*%", 0),
    (r"(?<![\w-])--(?:gpu-memory-utilization|max-model-len)(?:[= ](\S+))?", re.IGNORECASE),
    (r"显存(?:不足|不够)|out of memory|OOM", 0),
    (rb"\x7fELF|\x00{4,}", 0),
    (r"""(?x) ^ \s* (?P<cmd> vllm \s+ serve ) \s+ (?P<model> \S+ )  # a serve line""", 0),
    (r"(\w+)\s+\1", re.MULTILINE),
]
SAMPLES: list[str] = [
    "VLLM_USE_V1 = 0 and KV cache usage 99.5 % --gpu-memory-utilization 0.95",
    "torch.OutOfMemoryError: CUDA out of memory; 显存不足 the the",
    "  vllm serve Qwen/Qwen2.5-7B --max-model-len=8192",
]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("ASSISTANT_REGEX_CACHE", raising=False)
    regex_cache.uninstall()
    re.purge()
    yield tmp_path
    regex_cache.uninstall()
    re.purge()


def _behaviour(pattern: re.Pattern) -> list:
    """Everything a caller can observe of a pattern on the samples."""
    seen: list = [pattern.flags, pattern.groups, dict(pattern.groupindex)]
    for text in SAMPLES:
        subject = text.encode() if isinstance(pattern.pattern, bytes) else text
        seen.append([(m.span(), m.groups(), m.groupdict()) for m in pattern.finditer(subject)])
        seen.append(pattern.sub(b"#" if isinstance(subject, bytes) else "#", subject))
    return seen


def _fresh(path: Path) -> list:
    regex_cache.uninstall()
    re.purge()
    assert regex_cache.install(path)
    return [_behaviour(re.compile(p, f)) for p, f in PATTERNS]


def test_patterns_served_from_the_file_behave_as_compiled_ones(cache_dir):
    expected = [_behaviour(re.compile(p, f)) for p, f in PATTERNS]  # stock `re`
    assert _fresh(cache_dir) == expected
    assert regex_cache.stats() == {"served": 0, "compiled": len(PATTERNS)}
    regex_cache.save_now()
    assert regex_cache.cache_file(cache_dir).is_file()

    assert _fresh(cache_dir) == expected  # now read back from the file
    assert regex_cache.stats() == {"served": len(PATTERNS), "compiled": 0}


def test_a_bad_pattern_raises_re_error_as_before(cache_dir):
    assert regex_cache.install(cache_dir)
    with pytest.raises(re.error):
        re.compile(r"(unclosed")


@pytest.mark.parametrize("content", [
    b"",  # empty
    b"\x00\xffnot marshal at all" * 10,  # junk
    marshal.dumps({"stamp": "CPython 2.7|other build", "entries": {}}),  # another interpreter's
    marshal.dumps(["a", "list"]),  # the wrong shape
])
def test_a_damaged_or_foreign_file_is_ignored_and_replaced(cache_dir, content):
    path = regex_cache.cache_file(cache_dir)
    path.write_bytes(content)
    expected = [_behaviour(re.compile(p, f)) for p, f in PATTERNS]
    assert _fresh(cache_dir) == expected
    assert regex_cache.stats()["served"] == 0
    regex_cache.save_now()
    assert _fresh(cache_dir) == expected
    assert regex_cache.stats()["served"] == len(PATTERNS)


def test_an_entry_that_does_not_rebuild_is_compiled_afresh(cache_dir):
    _fresh(cache_dir)
    regex_cache.save_now()
    path = regex_cache.cache_file(cache_dir)
    data = marshal.loads(path.read_bytes())
    key = next(iter(data["entries"]))
    flags, _code, groups, groupindex, indexgroup = data["entries"][key]
    data["entries"][key] = (flags, [999999, 1, 2], groups, groupindex, indexgroup)  # invalid SRE code
    path.write_bytes(marshal.dumps(data))
    expected = [_behaviour(re.compile(p, f)) for p, f in PATTERNS]
    assert _fresh(cache_dir) == expected
    assert regex_cache.stats() == {"served": len(PATTERNS) - 1, "compiled": 1}


def test_only_what_a_run_used_is_kept(cache_dir):
    assert regex_cache.install(cache_dir)
    re.compile(r"per-question term one")
    regex_cache.save_now()
    regex_cache.uninstall()
    re.purge()
    assert regex_cache.install(cache_dir)
    re.compile(r"per-question term two")
    regex_cache.save_now()
    entries = marshal.loads(regex_cache.cache_file(cache_dir).read_bytes())["entries"]
    assert [key[1] for key in entries] == ["per-question term two"]


def test_it_can_be_turned_off(cache_dir, monkeypatch):
    monkeypatch.setenv("ASSISTANT_REGEX_CACHE", "0")
    assert not regex_cache.install(cache_dir)
    assert regex_cache.stats() == {"served": 0, "compiled": 0}


def test_an_unwritable_cache_dir_costs_nothing_but_the_save(cache_dir):
    blocked = cache_dir / "a-file"
    blocked.write_text("not a directory")
    assert regex_cache.install(blocked / "cache")
    assert re.compile(r"still (\w+)").match("still works").group(1) == "works"
    regex_cache.save_now()  # mkdir fails under a file: silently nothing


def test_two_asks_answer_alike_and_the_second_reads_the_file(bundled_env, tmp_path):
    """Through the real `ask` entry point: the first run writes the file, the second is
    served from it, and both print the same complete JSON answer and exit 0."""
    env = dict(bundled_env, ASSISTANT_CACHE_DIR=str(tmp_path / "cache"))  # its own: the shipped index is copied in
    code = ("import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main; ask_main(); "
            "print('NOT REACHED: ask_main returns only when the process cannot leave early')")
    outputs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code, "--json", "多卡启动报 NCCL error"], env=env,
                              capture_output=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        assert b"NOT REACHED" not in proc.stdout
        outputs.append({k: v for k, v in json.loads(proc.stdout).items() if k != "timings_ms"})
        if not outputs[1:]:
            assert regex_cache.cache_file(tmp_path / "cache").is_file()  # written by the first run's exit
    assert outputs[0]["citations"] and outputs[0] == outputs[1]


def test_ask_without_the_cache_answers_the_same(bundled_env, tmp_path):
    code = "import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main; ask_main()"
    answers = []
    for switch in ("1", "0"):
        env = dict(bundled_env, ASSISTANT_REGEX_CACHE=switch)
        proc = subprocess.run([sys.executable, "-c", code, "--json", "Torch not compiled with CUDA enabled"], env=env,
                              capture_output=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        answers.append({k: v for k, v in json.loads(proc.stdout).items() if k != "timings_ms"})
    assert answers[0] == answers[1]
    assert os.environ.get("ASSISTANT_REGEX_CACHE") is None  # the test's own process is untouched
