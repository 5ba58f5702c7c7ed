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


def _signed(payload: bytes) -> bytes:
    return regex_cache._HEADER + regex_cache._digest(payload) + payload


@pytest.mark.parametrize("content", [
    b"",  # empty
    b"\x00\xffnot marshal at all" * 10,  # junk
    marshal.dumps({"stamp": regex_cache._STAMP, "entries": {}}),  # no header or digest (the first format)
    _signed(marshal.dumps({"stamp": "CPython 2.7|other build", "entries": {}})),  # another interpreter's
    _signed(marshal.dumps(["a", "list"])),  # the wrong shape
    _signed(b"\x00\xffnot marshal"),  # signed junk
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


def _entries(path: Path) -> dict:
    raw = path.read_bytes()
    return marshal.loads(raw[len(regex_cache._HEADER) + regex_cache._DIGEST:])["entries"]


def test_a_file_changed_after_it_was_written_is_not_read(cache_dir):
    """One int changed in a stored entry made a pattern match other text, or crashed `_sre`
    (a segfault on every `ask` until the file was deleted, review): the digest no longer
    matches, so none of the file is served."""
    from re._constants import LITERAL

    assert regex_cache.install(cache_dir)
    re.compile(r"needle")
    regex_cache.save_now()
    path = regex_cache.cache_file(cache_dir)
    raw = path.read_bytes()
    entries = _entries(path)
    (key, parts), = entries.items()
    code = list(parts[1])
    at = code.index(int(LITERAL))  # the first letter matched: "n" -> "m", still valid SRE code
    code[at + 1] = ord("m")
    entries[key] = (parts[0], code, *parts[2:])
    payload = marshal.dumps({"stamp": regex_cache._STAMP, "entries": entries})
    path.write_bytes(raw[:len(regex_cache._HEADER) + regex_cache._DIGEST] + payload)  # the old digest kept
    regex_cache.uninstall()
    re.purge()
    assert regex_cache.install(cache_dir)
    assert re.compile(r"needle").search("a needle here") is not None
    assert regex_cache.stats() == {"served": 0, "compiled": 1}


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX file modes")
def test_a_file_others_could_have_written_is_not_read(cache_dir):
    _fresh(cache_dir)
    regex_cache.save_now()
    path = regex_cache.cache_file(cache_dir)
    path.chmod(0o666)
    _fresh(cache_dir)
    assert regex_cache.stats()["served"] == 0
    path.chmod(0o600)
    _fresh(cache_dir)
    assert regex_cache.stats()["served"] == len(PATTERNS)


def test_an_entry_that_does_not_rebuild_is_compiled_afresh(cache_dir):
    """`_sre` rejects code it can tell is invalid; such an entry (from a build whose compiler
    changed under the same stamp) is compiled again and the pattern still works."""
    _fresh(cache_dir)
    regex_cache.save_now()
    path = regex_cache.cache_file(cache_dir)
    entries = _entries(path)
    key = next(iter(entries))
    flags, _code, groups, groupindex, indexgroup = entries[key]
    entries[key] = (flags, [999999, 1, 2], groups, groupindex, indexgroup)  # invalid SRE code
    regex_cache._write(path, entries)
    expected = [_behaviour(re.compile(p, f)) for p, f in PATTERNS]
    assert _fresh(cache_dir) == expected
    assert regex_cache.stats() == {"served": len(PATTERNS) - 1, "compiled": 1}


def test_a_pattern_of_a_str_subclass_is_compiled_as_usual_and_the_rest_saved(cache_dir):
    class Text(str):
        pass

    assert regex_cache.install(cache_dir)
    assert re.compile(Text(r"sub(\w+)")).match("subclass").group(1) == "class"
    re.compile(r"plain (\w+)")
    regex_cache.save_now()
    assert [key[1] for key in _entries(regex_cache.cache_file(cache_dir))] == ["plain (\\w+)"]


def test_only_what_a_run_used_is_kept(cache_dir):
    assert regex_cache.install(cache_dir)
    re.compile(r"per-question term one")
    regex_cache.save_now()
    regex_cache.uninstall()
    re.purge()
    assert regex_cache.install(cache_dir)
    re.compile(r"per-question term two")
    regex_cache.save_now()
    assert [key[1] for key in _entries(regex_cache.cache_file(cache_dir))] == ["per-question term two"]


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


def _buffered(env: dict[str, str]) -> dict[str, str]:
    """Without PYTHONUNBUFFERED (set on many CI machines): stdout to a pipe is then
    block-buffered, so an exit that skipped the last flush would lose the answer."""
    return {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}


ASK = ("import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main; ask_main(); "
       "print('NOT REACHED: ask_main returns only when the process cannot leave early')")


def test_two_asks_answer_alike_and_the_second_reads_the_file(bundled_env, tmp_path):
    """Through the real `ask` entry point: the first run writes the file, the second is
    served from it (and so has nothing new to write back), and both print the same complete
    JSON answer and exit 0."""
    env = _buffered(dict(bundled_env, ASSISTANT_CACHE_DIR=str(tmp_path / "cache")))  # its own: the shipped index is copied in
    cache = regex_cache.cache_file(tmp_path / "cache")
    outputs, written = [], []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", ASK, "--json", "多卡启动报 NCCL error"], env=env,
                              capture_output=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        assert b"NOT REACHED" not in proc.stdout
        outputs.append({k: v for k, v in json.loads(proc.stdout).items() if k != "timings_ms"})
        written.append(cache.stat().st_mtime_ns)  # the first run's exit wrote it
    assert outputs[0]["citations"] and outputs[0] == outputs[1]
    assert written[0] == written[1]  # every pattern of the second run came from the file


def test_ask_without_the_cache_answers_the_same(bundled_env, tmp_path):
    answers = []
    for switch in ("1", "0"):
        env = _buffered(dict(bundled_env, ASSISTANT_REGEX_CACHE=switch))
        proc = subprocess.run([sys.executable, "-c", ASK, "--json", "Torch not compiled with CUDA enabled"], env=env,
                              capture_output=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        answers.append({k: v for k, v in json.loads(proc.stdout).items() if k != "timings_ms"})
    assert answers[0] == answers[1]
