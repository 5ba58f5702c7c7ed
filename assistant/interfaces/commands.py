"""The `assistant` command group: ingest, eval, bench (and later serve, slack, doctor)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from assistant.interfaces.cli import _run, settings_for
from oncall_common.errors import AssistantError, BadInput


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def assistant() -> None:
    """On-call assistant for LLM serving: index, evaluate and benchmark the knowledge base."""


@assistant.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--kb", type=click.Path(file_okay=False), default=None, help="KB directory (default: the bundled KB).")
@click.option("--forget", "forget", multiple=True, type=click.Path(), help="Stop indexing this path.")
@click.option("--rebuild", is_flag=True, help="Re-embed everything from scratch.")
@click.option("--status", is_flag=True, help="Show what the index holds and exit.")
@click.option("--build-bundled", "build_bundled", is_flag=True,
              help="Regenerate the index shipped in the package (assistant/bundled_index) from the bundled KB; run after editing kb/.")
def ingest(paths: tuple[str, ...], kb: str | None, forget: tuple[str, ...], rebuild: bool, status: bool, build_bundled: bool) -> None:
    """Index the KB, plus your own runbooks (markdown, plain text, HTML or reST) given as PATHS.

    Added paths are remembered: later `ask` calls search them too and pick up their
    changes. Only changed chunks are re-embedded.
    """

    def body() -> None:
        from assistant.knowledge import covering_source, describe, open_kb, sources, update_extra_sources

        if build_bundled:
            _build_bundled(rebuild)
            return
        settings = settings_for(kb)
        if status:
            click.echo(json.dumps(describe(settings, check_sources=True), ensure_ascii=False, indent=2))
            return
        for path in paths:
            _require_readable_file(Path(path))  # before anything is saved: one bad path adds none
        covered = {path: covering_source(sources(settings), Path(path).resolve()) for path in paths}
        for path, inside in covered.items():
            if inside is not None:
                click.echo(f"note: {path} is inside {inside}, which is indexed already; it is read with it", err=True)
        update_extra_sources(settings, add=[Path(p) for p in paths], forget=[Path(p) for p in forget])
        kb_ = open_kb(settings, progress=lambda m: click.echo(m, err=True), rebuild=rebuild)
        info = describe(settings)
        skipped = f"; {len(info['skipped'])} path(s) skipped (see --status)" if info["skipped"] else ""
        for path in paths:
            _say_if_nothing_read(Path(path), info["skipped"], added=covered[path] is None)
        click.echo(f"{len(kb_.index.chunks)} chunks from {info['documents']} documents in {len(info['sources'])} source(s){skipped}; index {info['index_dir']}")

    _run(body)


def _say_if_nothing_read(path: Path, skipped: dict[str, str], added: bool = True) -> None:
    """A folder added on this call that gave the index no document (only images and JSON, or
    binary and empty .md files) is said in one line: it exited 0, among a reprinted list of
    every path ever skipped, as if it had been read (newcomer trial). It stays added, so the
    docs put there later are read."""
    from ingest.files import survey

    readable, passed = survey(path)
    read = [f for f in readable if str(f) not in skipped and str(f.resolve()) not in skipped and _has_text(f)]
    if read:
        return
    # Hidden folders and files (.git, .DS_Store) are never docs: not counted as docs skipped.
    shown = [s.reason for s in passed if not s.reason.startswith("hidden")]
    reasons = shown + [skipped.get(str(f)) or skipped.get(str(f.resolve())) or "empty" for f in readable]
    why = f" ({len(reasons)} file(s) skipped: {next(r for r in reasons if r)})" if any(reasons) else " (no files)"
    kept = "it stays added and is read again when its files change" if added else "its folder is read again when its files change"
    click.echo(f"warning: nothing indexed from {path}{why}; {kept}", err=True)


def _has_text(path: Path) -> bool:
    """Whether a file holds more than whitespace: a .md of blank lines gives no chunk either."""
    try:
        with path.open("rb") as fh:
            return bool(fh.read(1 << 16).strip())
    except OSError:
        return False


def _require_readable_file(path: Path) -> None:
    """A file named on its own must be one ingest reads. Saved anyway, it exited 0 and every
    later rebuild listed it as skipped; in a folder such files are skipped and reported."""
    from ingest.files import SUFFIXES, survey

    if not path.is_file():
        return
    readable, skipped = survey(path)
    if readable or not skipped:
        return
    reason = skipped[0].reason
    if reason.startswith("unknown type"):
        kind = f"{path.suffix} files" if path.suffix else "files with no extension"
        raise BadInput(f"cannot ingest {path}: {kind} are not a type ingest reads "
                       f"(it reads {', '.join(sorted(SUFFIXES))})")
    raise BadInput(f"cannot ingest {path}: {reason}")


def _build_bundled(rebuild: bool) -> None:
    """`assistant ingest --build-bundled`: the shipped index, from kb/ with the default
    embedder and chunk size (what a fresh install runs with); only changed chunks are embedded."""
    import time

    from ingest.bundled import build_bundle, bundle_staleness, bundled_index_dir
    from ingest.embedders import get_embedder

    from assistant.config import Settings, bundled_kb_dir

    defaults = Settings()
    kb_root = bundled_kb_dir()
    embedder = get_embedder(defaults.embedder, threads=defaults.embed_threads)
    out = bundled_index_dir()
    why = "--rebuild" if rebuild else bundle_staleness(kb_root, embedder.name, defaults.max_chunk_chars, out)
    if why is None:
        click.echo(f"the bundled index at {out} matches {kb_root}; nothing to do")
        return
    click.echo(f"rebuilding the bundled index: {why}", err=True)
    if rebuild:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    manifest = build_bundle(kb_root, embedder, defaults.max_chunk_chars, out, progress=lambda m: click.echo(m, err=True))
    click.echo(f"bundled index: {manifest['chunk_count']} chunks from {len(manifest['documents'])} documents "
               f"in {time.perf_counter() - started:.1f} s → {out}")


@assistant.command(name="eval")
@click.option("--cases", type=click.Path(dir_okay=False), default="eval/cases.jsonl", show_default=True)
@click.option("--mode", type=click.Choice(["all", "hybrid", "dense", "bm25"]), default="all", show_default=True)
@click.option("--min-pass3", type=float, default=0.98, show_default=True, help="Fail under this pass@3 in any language.")
@click.option("--min-pass1", type=float, default=0.90, show_default=True, help="Fail under this pass@1 in any language.")
@click.option("--min-topic1", type=float, default=0.0, help="Per-language bar for topic@1 (sets with expect_topic).")
@click.option("--min-fix", type=float, default=0.0, help="Per-language bar for answer-has-fix.")
@click.option("--min-oos", type=float, default=1.0, show_default=True, help="Per-language bar for out-of-scope refusals.")
@click.option("--max-false-refusals", type=float, default=0.03, show_default=True)
@click.option("--min-file1", type=float, default=0.0, help="Per-language bar for file@1 (cases with expect_file: your own docs).")
@click.option("--max-oos-sure", type=float, default=1.0, help="Per-language bar for out-of-scope questions answered with no doubt.")
@click.option("--split", type=click.Choice(["all", "dev", "test"]), default="all", show_default=True,
              help="Run only one split of a set that has one (tune on dev; report test).")
@click.option("--judge", type=click.Choice(["all", "dev", "test"]), default="all", show_default=True,
              help="Which split the thresholds judge.")
@click.option("--fit-refusals", "fit", is_flag=True, help="Fit the refusal model on the dev split and save it.")
@click.option("--fit-exemplars", "fit_exemplars", is_flag=True,
              help="Store the dev questions (--cases and --fit-with) as the refusal gate's exemplars; the model is not refitted.")
@click.option("--fit-with", "fit_with", multiple=True, type=click.Path(dir_okay=False),
              help="More case files to fit on, against the same KB (their dev split, or all of a file without splits).")
@click.option("--fit-with-kb", "fit_with_kb", multiple=True, metavar="DIR=FILE",
              help="Cases asked against another KB directory, fitted on and used to choose the threshold.")
@click.option("--out", type=click.Path(file_okay=False), default="eval", show_default=True, help="Where report.json and report.md go.")
@click.option("--llm", "with_llm", is_flag=True, help="Also answer every case with the configured LLM and report its metrics.")
@click.option("--kb", type=click.Path(file_okay=False), default=None, help="KB directory (default: the bundled KB).")
def eval_cmd(cases: str, mode: str, min_pass3: float, min_pass1: float, min_topic1: float, min_fix: float, min_oos: float,
             max_false_refusals: float, min_file1: float, max_oos_sure: float, split: str, judge: str, fit: bool,
             fit_exemplars: bool, fit_with: tuple[str, ...], fit_with_kb: tuple[str, ...], out: str, with_llm: bool,
             kb: str | None) -> None:
    """Score retrieval and answers on symptom→fix cases; exit 1 under the thresholds, 2 when
    the case file, the KB or a bar is wrong."""

    def body() -> None:
        from assistant.knowledge import open_kb
        from assistant.ops.evaluate import (Thresholds, case_warnings, check_thresholds, evaluate, load_cases, reliability, to_json,
                                            to_markdown)
        from oncall_common.errors import BadInput

        bar = Thresholds(min_pass3, min_pass1, min_topic1, min_fix, min_oos, max_false_refusals, min_file1, max_oos_sure)
        settings = settings_for(kb)
        case_list = load_cases(Path(cases), settings.max_question_bytes)
        out_dir = _writable_dir(Path(out))  # before the run, not after it: a long eval's figures were lost
        if split != "all":
            case_list = [c for c in case_list if c.split == split]
            if not case_list:
                raise BadInput(f"no cases in {cases} with split {split!r}", "cases carry a split field: dev or test")
        if judge != "all" and not any(c.split == judge for c in case_list):
            # judged nothing, it passed everything, even an empty KB (trial)
            raise BadInput(f"--judge {judge}: no case in {cases} has split {judge!r}",
                           "leave --judge out for a file without splits, or add \"split\": \"dev\"/\"test\" to its cases")
        kb_ = open_kb(settings)
        warnings = case_warnings(kb_, case_list)
        for line in warnings:
            click.echo(f"warning: {line}", err=True)

        def dev(path: str) -> list:
            return [c for c in load_cases(Path(path), settings.max_question_bytes) if c.split in ("dev", "")]

        if fit_exemplars:
            from assistant.refusal import build_exemplars, reset_model

            click.echo(build_exemplars(kb_, [c for p in (cases, *fit_with) for c in dev(p)]), err=True)
            reset_model()
        if fit:
            from assistant.refusal import fit_and_save

            from assistant.refusal import FitSet

            sets = [FitSet(kb_, settings, dev(cases))] + [FitSet(kb_, settings, dev(p)) for p in fit_with]
            for pair in fit_with_kb:
                other_dir, _, other_cases = pair.partition("=")
                if not other_cases:
                    from oncall_common.errors import ConfigError

                    raise ConfigError(f"--fit-with-kb {pair!r} needs DIR=FILE")
                other = settings_for(other_dir)
                sets.append(FitSet(open_kb(other), other, dev(other_cases)))
            click.echo(fit_and_save(sets), err=True)
            from assistant.refusal import reset_model

            reset_model()
        modes = ["hybrid", "dense", "bm25"] if mode == "all" else [mode]
        if with_llm:
            if not settings.llm_base_url:
                from oncall_common.errors import ConfigError

                raise ConfigError("--llm needs an LLM endpoint", "set ASSISTANT_LLM_BASE_URL (and ASSISTANT_LLM_MODEL if it serves several)")
            modes.append("llm")
        collected: dict = {}
        report = evaluate(kb_, settings, case_list, modes, collected)
        judged = "hybrid" if "hybrid" in modes else modes[0]
        problems = check_thresholds(report, judged, bar=bar, group_prefix="" if judge == "all" else judge + "/")
        calibration = reliability(collected[judged])
        context = _eval_context(kb_, settings, bar, judge, warnings)
        md = to_markdown(report, problems, cases, calibration, context)
        (out_dir / "report.md").write_text(md, encoding="utf-8")
        (out_dir / "report.json").write_text(json.dumps(to_json(report, problems, cases, calibration, collected, context),
                                                        ensure_ascii=False, indent=1), encoding="utf-8")
        click.echo(md)
        click.echo(f"reports: {out_dir / 'report.md'}, {out_dir / 'report.json'}", err=True)
        if problems:
            sys.exit(1)

    _run(body)


def _eval_context(kb, settings, bar, judge: str, warnings: list[str]) -> dict:
    """What an eval report was measured on and judged by, for the report itself."""
    import dataclasses
    from datetime import datetime, timezone

    manifest = kb.index.manifest if isinstance(kb.index.manifest, dict) else {}
    from assistant.config import bundled_kb_dir

    # As given when relative, else its last part: reports are uploaded as CI artifacts, and a
    # home directory's path is nobody's business there (review).
    given = Path(settings.kb_dir)
    shown = "bundled" if given.resolve() == bundled_kb_dir().resolve() else str(given) if not given.is_absolute() else given.name
    return {"kb": {"path": shown, "documents": len({m.source for m in kb.index.docs.values()}),
                   "chunks": len(kb.index.chunks), "built_at": manifest.get("built_at", "?")},
            "bars": {k.replace("_", "-"): v for k, v in dataclasses.asdict(bar).items()}, "judge": judge, "warnings": warnings,
            "at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


@assistant.command(name="tools")
def tools_cmd() -> None:
    """List the read-only tools and their parameters."""

    def body() -> None:
        from assistant.tools import registry

        for t in registry().values():
            params = t.parameters.get("properties", {})
            required = set(t.parameters.get("required", []))
            args = " ".join(f"{n}=<{p.get('type', 'value')}>" if n in required else f"[{n}=…]" for n, p in params.items())
            click.echo(f"{t.name} {args}".rstrip())
            click.echo(f"    {t.description}")

    _run(body)


@assistant.command(name="tool")
@click.argument("name")
@click.argument("arguments", nargs=-1)
def tool_cmd(name: str, arguments: tuple[str, ...]) -> None:
    """Run one tool: `assistant tool kv_concurrency num_blocks=17131 avg_tokens_per_request=20000`.

    Arguments are key=value pairs (values parsed as JSON when they can be: numbers,
    true/false, lists), or one JSON object. The result is printed as JSON.
    """

    def body() -> None:
        from assistant.tools import call_tool

        if len(arguments) == 1 and arguments[0].lstrip().startswith("{"):
            args: object = arguments[0]
        else:
            args = {}
            for item in arguments:
                key, sep, raw = item.partition("=")
                if not sep:
                    raise BadInput(f"argument {item!r} is not key=value", "e.g. num_blocks=17131")
                try:
                    args[key] = json.loads(raw)
                except ValueError:
                    args[key] = raw
        call = call_tool(name, args, timeout=settings_for(None).tool_timeout)
        if call.error:
            # A name or arguments refused before the tool ran, or a value the tool refused
            # (num_blocks=0), are bad input (exit 2, as `ask`'s); a tool that ran and failed
            # (no GPU driver, a server down) is an error (exit 1).
            refused = BadInput if not call.ms or call.refused_value else AssistantError
            raise refused(call.error, "assistant tools lists the tools and their parameters")
        click.echo(json.dumps(call.result, ensure_ascii=False, indent=1))

    _run(body)


@assistant.command()
@click.option("--serving-url", default=None, help="A vLLM/FastDeploy server to probe, e.g. http://127.0.0.1:8000.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None, help="A server log to scan.")
@click.option("--json", "as_json", is_flag=True, help="Print findings as one JSON object.")
def doctor(serving_url: str | None, log_path: str | None, as_json: bool) -> None:
    """Run every probe (GPU, host, serving endpoint, log) and print findings, worst first.

    Exit code 0: nothing needs attention; 1: a warning or critical finding.
    """

    def body() -> None:
        from dataclasses import asdict

        from assistant.ops.doctor import needs_attention, run_doctor

        url = serving_url
        if url and "://" not in url:
            url = "http://" + url  # "localhost:8000", as people type it; the probe itself takes http(s) URLs only
        findings = run_doctor(settings_for(None), url, log_path)
        attention = needs_attention(findings)
        if as_json:
            click.echo(json.dumps({"needs_attention": attention, "findings": [asdict(f) for f in findings]}, ensure_ascii=False))
        else:
            from rich.console import Console
            from rich.markup import escape
            from rich.table import Table

            styles = {"critical": "bold red", "warning": "yellow", "info": "cyan", "ok": "green"}
            table = Table(title="assistant doctor", show_lines=False)
            for col in ("severity", "source", "finding", "read"):
                table.add_column(col, overflow="fold")
            for f in findings:
                # Messages quote log lines, whose "[loggers.py:116]" rich read as markup and dropped.
                table.add_row(f"[{styles[f.severity]}]{f.severity}[/]", f.source, escape(f.message),
                              escape(f.article and f"{f.title} ({f.article})" or ""))
            Console().print(table)
        if attention:
            sys.exit(1)

    _run(body)


@assistant.command()
@click.option("--queries", type=int, default=30, show_default=True, help="Warm queries to time.")
@click.option("--runs", type=int, default=5, show_default=True, help="Cold `ask` runs to time.")
@click.option("--kb", type=click.Path(file_okay=False), default=None)
@click.option("--ingest", "ingest_only", is_flag=True, help="Instead, time a first-time index of whole doc trees (chunks/s).")
@click.option("--corpus", "corpora", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="With --ingest: a doc tree to index (repeatable; default: the KB and ../shared/corpora/*).")
def bench(queries: int, runs: int, kb: str | None, ingest_only: bool, corpora: tuple[str, ...]) -> None:
    """Print start-up, retrieval latency and ingest timings measured on this machine."""

    def body() -> None:
        from assistant.ops.bench import run_bench, run_ingest_bench

        if ingest_only:
            run_ingest_bench(settings_for(kb), [Path(c) for c in corpora] or None, echo=click.echo)
            return
        run_bench(settings_for(kb), queries=queries, runs=runs, echo=click.echo)

    _run(body)


@assistant.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="Worker processes (each loads the index once).")
@click.option("--kb", type=click.Path(file_okay=False), default=None)
def serve(host: str, port: int, workers: int, kb: str | None) -> None:
    """Serve the HTTP API, the chat page (/) and, when SLACK_* are set, Slack events (/slack/events)."""

    def body() -> None:
        from assistant.config import hand_to_workers
        from assistant.interfaces.http.app import check_port, run_server
        from assistant.interfaces.http.auth import api_tokens, trusted_networks
        from assistant.ops.store import open_state

        if kb:
            hand_to_workers(kb_dir=Path(kb).resolve())
        settings = settings_for(kb)
        from assistant.knowledge import require_kb_dir

        require_kb_dir(settings.kb_dir)  # now, not as a log line behind a /healthz 200
        check_port(host, port)
        tokens = api_tokens(settings)  # refuse ", ," here, in one line, before any worker starts
        trusted_networks(settings.trusted_proxies)  # and a malformed proxy list
        open_state(settings).close()  # migrate the state store once, before the workers race to
        docs = "" if tokens else ", API docs /docs"
        auth = f"bearer tokens required ({len(tokens)} configured)" if tokens else "no authentication (set ASSISTANT_API_TOKENS)"
        proxies = f"; X-Forwarded-For trusted from {settings.trusted_proxies}" if settings.trusted_proxies.strip() else ""
        click.echo(f"serving on http://{host}:{port} (page /{docs}) with {workers} worker(s); {auth}{proxies}; "
                   "the index loads in the background (GET /readyz)", err=True)
        # The port is bound at once and every worker loads the index in the background.
        run_server(host, port, workers)

    _run(body)


@assistant.command()
def slack() -> None:
    """Run the Slack bot in Socket Mode (needs SLACK_APP_TOKEN and SLACK_BOT_TOKEN)."""

    def body() -> None:
        from assistant.interfaces.chat import run_adapter

        run_adapter("slack", settings_for(None))

    _run(body)


@assistant.group()
def feedback() -> None:
    """👍/👎 feedback collected by the API, the page and Slack."""


@feedback.command("export")
@click.option("--out", type=click.Path(dir_okay=False), default="-", show_default=True, help="JSONL file, or - for stdout.")
def feedback_export(out: str) -> None:
    """Write 👎 answers as draft eval cases (eval/cases.jsonl format) for a maintainer to complete."""

    def body() -> None:
        from assistant.ops.store import open_state

        from assistant.config import feedback_path
        from oncall_common.errors import BadInput

        settings = settings_for(None)
        url = settings.state_url
        path = Path(url[len("sqlite://"):]) if url.startswith("sqlite:///") else feedback_path(settings)
        if (not url or url.startswith("sqlite:///")) and not path.exists():
            # opened, a mistyped path made an empty database (and its folder) and exported nothing, exit 0 (trial)
            raise BadInput(f"no feedback database at {path}", "set ASSISTANT_FEEDBACK_DB to the file `assistant serve` writes")
        cases = open_state(settings).export_negative()
        lines = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)
        if out == "-":
            click.echo(lines, nl=False)
        else:
            Path(out).write_text(lines, encoding="utf-8")
        click.echo(f"{len(cases)} draft case(s); fill in `expect` (and `expect_file` for your own docs) before adding them to "
                   "your cases file: `assistant eval` refuses an unfilled draft", err=True)

    _run(body)


def _writable_dir(path: Path) -> Path:
    """`path`, created if need be, once a file can be written in it."""
    import tempfile


    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as exc:
        raise AssistantError(f"cannot write reports to {path}: {exc.strerror or exc}", "pass --out DIR with a writable folder") from exc
    return path


def main() -> None:
    assistant(prog_name="assistant")
