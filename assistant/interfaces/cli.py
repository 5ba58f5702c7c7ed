"""The `ask` command, and the error handling every command shares.

`ask` is run by people in a hurry, so it parses its arguments with argparse (click costs
~17 ms to import) and imports numpy, faiss, the embedder and rich only once it needs them:
`ask --help` loads no model. Every failure a user can cause ends as one line on stderr and
a non-zero exit code; a traceback is a bug. The `assistant` command group is in commands.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from assistant.config import load_settings
from oncall_common.errors import AssistantError, BadQuestion
from oncall_common.lang import LANGS

EXIT_INTERNAL = 70


def _fail(message: str, code: int) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def _run(fn, *args, **kwargs):
    """Run a command body, turning every exception into one readable line."""
    try:
        return fn(*args, **kwargs)
    except AssistantError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        # The reader went away (`ask … | head`) and has what it wanted. stdout is pointed at
        # /dev/null so that the interpreter's last flush does not fail on the pipe again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        sys.exit(0)
    except OSError as exc:
        # A path the user gave that cannot be written or read (`--out /no/such/dir/x.jsonl`,
        # a read-only folder): theirs to fix, not a bug to report.
        if exc.filename:
            _fail(f"{exc.filename}: {exc.strerror or exc} (check the path and its permissions)", 1)
        _fail(f"{exc.strerror or exc}", 1)  # a socket or system error: no path to blame
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        _fail(f"internal error: {type(exc).__name__}: {exc} (please report this)", EXIT_INTERNAL)


def read_log(path: str, notes: list[str] | None = None, lang: str = "en") -> tuple[str, int]:
    """The last 2 MB of a log file, or of stdin when the path is `-` (`kubectl logs pod | ask
    --log - "why"`), decoded leniently (logs mix encodings), and the number in the log of its
    first line (findings are reported by their line in the log); `notes` gets a line saying
    so when the log is longer."""
    from oncall_common.errors import AssistantError, BadInput
    from assistant.tools.logs import read_tail_located, read_tail_stream, unread_note

    try:
        text, unread, first_line = (read_tail_stream(sys.stdin.buffer, notes=notes, lang=lang) if path == "-"
                                    else read_tail_located(path))
        if unread and notes is not None:
            notes.append(unread_note(unread, lang))
        if not text.strip() and notes is not None:  # it was dropped without a word
            from assistant.i18n import t

            notes.append(t("answer.log_empty", lang, log="stdin" if path == "-" else path))
        return text, first_line
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        # The path the asker typed: bad input (exit 2), as a binary log is.
        raise BadInput(f"cannot read log file {path}: {exc.strerror}", "check the path; `--log -` reads the log from stdin") from exc
    except OSError as exc:
        raise AssistantError(f"cannot read log file {path}: {exc.strerror}") from exc
    except ValueError as exc:  # binary or not a regular file: bad input, as a binary question is (exit 2)
        hint = "pipe a text log in" if path == "-" else "pass a text log file, or pipe the log in with `--log -`"
        raise BadInput(f"cannot read log file: {exc}", hint) from exc


def _zh(text: str) -> bool:
    from oncall_common.lang import detect_lang

    return detect_lang(text) == "zh"


def settings_for(kb: str | None, **overrides):
    return load_settings(kb_dir=Path(kb) if kb else None, **overrides)


def _require_kb_arg(kb_dir: Path) -> None:
    """A `--kb` that names no directory is a mistyped argument, as a `--log` that names no file
    is: exit 2, not the 1 of a failure on the way (a newcomer's trial found the two differ)."""
    from assistant.knowledge import require_kb_dir
    from oncall_common.errors import BadInput

    try:
        require_kb_dir(kb_dir)
    except AssistantError as exc:
        raise BadInput(exc.message, exc.hint) from exc


def _log_tail(text: str, max_bytes: int, notes: list[str], total: int = 0) -> str:
    """The last whole lines of text that fit in max_bytes (unchanged when it fits); what was
    left out is said in `notes` (stderr, and the JSON answer's notes). `total`: the input's
    size when text is already its end."""
    from assistant.questions import tail_within

    tail = tail_within(text, max_bytes, total)
    if tail is None:
        return text
    if not tail.lines:
        notes.append(f"the input is {tail.whole_bytes} bytes on one line; answering from its last "
                     f"{tail.chars} characters (use --log FILE to diagnose a whole log)")
    else:
        notes.append(f"the input is {tail.whole_bytes} bytes; answering from its last {tail.lines} lines "
                     f"(use --log FILE to diagnose a whole log)")
    return tail.text


def read_question(words: tuple[str, ...], max_bytes: int, notes: list[str] | None = None) -> str:
    """The question from argv, or from stdin when it is `-` (a pasted log works).

    A log piped in (`tail -n 50 server.log | ask -`) easily passes the question limit; its
    last lines, where the error usually is, are kept, and a note in `notes` says so."""
    if words == ("-",) or not words and not sys.stdin.isatty():
        raw, total = _stdin_tail(STDIN_QUESTION_BYTES, notes)
        if b"\x00" in raw:
            raise BadQuestion("the input looks like binary data, not a question", "paste text, not a binary file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = _decoded_leniently(raw, notes)
            if text is None:
                raise BadQuestion("the input is not valid UTF-8 text", "paste text, not a binary file") from exc
        return _log_tail(text, max_bytes, notes if notes is not None else [], total)
    text = " ".join(words)
    if any("\udc80" <= ch <= "\udcff" for ch in text):  # undecodable bytes in argv
        raise BadQuestion("the question is not valid UTF-8 text")
    return text


STDIN_QUESTION_BYTES = 1_000_000
STRAY_BYTES = 8  # undecodable bytes a question on stdin may carry (a Latin-1 "é" pasted from a mail), or 1 in 200 of a long one


def _decoded_leniently(raw: bytes, notes: list[str] | None) -> str | None:
    """Stdin that is not UTF-8 but is still a question: Chinese in GBK/GB18030 (what a Chinese
    Windows console pipes), or UTF-8 with a few stray bytes, each said in `notes`. Both were
    refused whole, GBK as "binary data" (newcomer); a log read with --log was already read
    leniently. None when it is neither. The test for text is the log reader's (odd_share)."""
    from assistant.i18n import t
    from assistant.tools.logs import odd_share

    try:
        text = raw.decode("gb18030")
    except UnicodeDecodeError:
        text = None
    if text is not None and odd_share(text) == 0 and _zh(text):
        if notes is not None:
            notes.append(t("answer.stdin_gb18030", "zh"))
        return text
    text = raw.decode("utf-8", errors="replace")
    stray = text.count("\ufffd")
    if stray > max(STRAY_BYTES, len(text) // 200) or stray > len(text) // 20:  # at most 1 in 20 either way
        return None
    if notes is not None:
        notes.append(t("answer.stdin_stray_bytes", "zh" if _zh(text) else "en", count=stray))
    return text


def _stdin_tail(limit: int, notes: list[str] | None = None) -> tuple[bytes, int]:
    """The end of stdin, from a line start, at most `limit` bytes of it, and stdin's size: a
    log piped in (`cat server.log | ask -`) ends in what went wrong. Reading its first megabyte
    dropped a crash at the end of a 1.5 MB log (trial). A followed log (`kubectl logs -f`) is
    answered once it falls silent, with a line in `notes` saying so."""
    from assistant.tools.logs import stopped_note, stream_tail

    try:
        tail = stream_tail(sys.stdin.buffer, limit)
    except ValueError as exc:
        raise BadQuestion("the input looks like binary data, not a question", "paste text, not a binary file") from exc
    if tail.stopped and notes is not None:
        notes.append(stopped_note(tail, "zh" if _zh(tail.data[-4000:].decode("utf-8", errors="ignore")) else "en"))
    data = tail.data
    if tail.skipped:  # from the first whole line: a multi-byte character or a line cut in two is no input
        newline = data.find(b"\n")
        if 0 <= newline < len(data) - 1 and data[newline + 1:].strip():
            data = data[newline + 1:]
        else:  # one line longer than the limit: its end, from a character's start
            data = data[-limit // 2:].lstrip(bytes(range(0x80, 0xc0)))
    return data, tail.skipped + len(tail.data)


EXAMPLES = """examples:
  ask "为什么推理卡住"
  ask "requests hang after I enabled logprobs"
  tail -n 50 server.log | ask -
  kubectl logs vllm-0 | ask --log - "why did it stop?"
  ask --json "NCCL error at startup" | jq .citations"""


def _parser():
    import argparse

    p = argparse.ArgumentParser(
        prog="ask",
        description="Ask the on-call assistant for LLM serving a question, in Chinese or English.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("question", nargs="*", help="the question; '-' reads it from stdin (a pasted log works)")
    p.add_argument("--json", dest="as_json", action="store_true", help="print exactly one JSON object")
    p.add_argument("-k", "--top-k", type=int, choices=range(1, 11), metavar="{1..10}", help="articles to consider (default 3)")
    p.add_argument("--lang", choices=["auto", *LANGS], default="auto", help="answer language (default: the question's)")
    p.add_argument("--kb", metavar="DIR", help="KB directory (default: the bundled KB)")
    p.add_argument("--log", metavar="FILE", help="a server log to diagnose with the question (last 2 MB); '-' reads it from stdin")
    llm = p.add_mutually_exclusive_group()
    llm.add_argument("--llm", dest="llm", action="store_true", default=None, help="answer with the configured LLM (default when an LLM is configured: ASSISTANT_LLM_BASE_URL or llm_base_url in the config file)")
    llm.add_argument("--no-llm", dest="llm", action="store_false", help="answer from the KB only, even if an LLM is configured")
    p.add_argument("--no-tools", action="store_true", help="do not let the LLM call tools")
    p.add_argument("-v", "--verbose", action="store_true", help="also print log lines (which LLM call failed, and why)")
    p.add_argument("--mode", choices=["hybrid", "dense", "bm25"], default="hybrid", help=argparse.SUPPRESS)
    return p


def _parse(parser, argv: list[str]):
    """Arguments, where a flag `ask` does not have is part of the question: people ask about
    a parameter by its name (`ask --num-scheduler-steps`). A near-miss of one of ask's own
    options (`--jsno`) is still an error, with the fix."""
    import difflib

    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    own = [o for action in parser._actions for o in action.option_strings if o.startswith("--")]
    for token in extra:
        close = difflib.get_close_matches(token.split("=")[0], own, n=1, cutoff=0.75)
        if close:
            _fail(f"unrecognized option {token} (did you mean {close[0]}?); to ask about a flag, "
                  f"put -- before it: ask -- {token}", 2)
    first_extra = argv.index(extra[0])
    before = args.question and argv.index(args.question[0]) < first_extra
    args.question = [*args.question, *extra] if before else [*extra, *args.question]
    return args


def _route_logs(verbose: bool) -> None:
    """The asker already reads each problem once, as a note ("the LLM is unreachable;
    answered from the KB instead"). Python's fallback handler printed the log line behind it
    too ("LLM call to … failed: APIConnectionError"), and a malformed LLM response's with
    its traceback. Those lines are for whoever debugs the setup: shown with --verbose, one
    line each."""
    import logging

    logger = logging.getLogger("assistant")
    if logger.handlers:
        return
    if verbose:
        class OneLine(logging.Formatter):
            def formatException(self, ei) -> str:  # noqa: N802 (logging's name)
                return f"({ei[0].__name__}: {ei[1]})" if ei and ei[0] else ""

            def format(self, record) -> str:
                return " ".join(super().format(record).split("\n"))

        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OneLine("log: %(name)s: %(message)s"))
    else:
        handler = logging.NullHandler()
    logger.addHandler(handler)
    logger.propagate = False


def _check_inputs(parser, args) -> None:
    """Usage errors about where the question and the log come from (exit 2, with the usage)."""
    if args.log == "-" and args.question == ["-"]:
        parser.error("stdin can carry the log (--log -) or the question (-), not both: give the question as words")
    if not args.question and not args.log and sys.stdin.isatty():
        # Typed at a terminal with nothing after it: how to use it, not "the question is empty".
        parser.error('no question given: ask "为什么推理卡住", or pipe a log in with `tail -n 50 server.log | ask -`')


def ask(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = _parse(parser, sys.argv[1:] if argv is None else list(argv))
    _check_inputs(parser, args)

    def body() -> None:
        from assistant.questions import EarlyEmbedding, query_text, validate_question

        settings = settings_for(args.kb)
        if args.kb:
            _require_kb_arg(settings.kb_dir)
        from oncall_common import regex_cache

        regex_cache.install(settings.cache_dir)  # before the question readers' patterns compile
        if args.verbose or settings.llm_base_url:  # the log lines come from the LLM path; logging costs ~10 ms to import
            _route_logs(args.verbose)
        input_notes: list[str] = []
        if args.log and not args.question:
            # With `--log -` stdin is the log, not the question.
            text = "" if sys.stdin.isatty() or args.log == "-" else read_question((), settings.max_question_bytes, input_notes)
            if not text.strip():  # `ask --log FILE` alone: the log is the question
                from assistant.i18n import t
                from oncall_common.lang import LANGS

                text = t("answer.log_question", args.lang if args.lang in LANGS else "en")
        else:
            text = read_question(tuple(args.question), settings.max_question_bytes, input_notes)
        early = None
        if not args.log:  # start embedding before the heavy imports below
            early = EarlyEmbedding.start(settings, query_text(validate_question(text, settings.max_question_bytes)))
        from assistant.answer import answer_question

        lang = None if args.lang == "auto" else args.lang
        log_text, log_first_line = read_log(args.log, input_notes, "zh" if args.lang == "zh" or (args.lang == "auto" and _zh(text))
                                            else "en") if args.log else (None, 1)
        streamed: list[str] = []
        # Tokens are shown as they come only on a terminal: in a pipe or a file, text that a
        # later check removes (a sentence citing no passage) could not be taken back.
        stream = not args.as_json and args.llm is not False and bool(settings.llm_base_url) and sys.stdout.isatty()

        def on_token(token: str) -> None:
            streamed.append(token)
            sys.stdout.write(token)
            sys.stdout.flush()

        def on_tool(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        answer = answer_question(text, settings, lang=lang, top_k=args.top_k, mode=args.mode, use_llm=args.llm,
                                 use_tools=not args.no_tools, log_text=log_text, log_first_line=log_first_line,
                                 on_token=on_token if stream else None, on_tool=None if args.as_json else on_tool,
                                 early=early)
        answer.notes[:0] = input_notes
        if args.as_json:
            for note in input_notes:  # the JSON carries them; a person running it reads stderr
                print(f"note: {note}", file=sys.stderr, flush=True)
            print(json.dumps(answer.to_dict(), ensure_ascii=False))
            return
        if streamed and not "".join(streamed).endswith("\n"):
            # The notes go to stderr, on the same terminal: "…Check ipcs -l [3].note: 1 statement(s)…"
            sys.stdout.write("\n")
            sys.stdout.flush()
        for note in answer.notes:
            print(f"note: {note}", file=sys.stderr, flush=True)
        from assistant.interfaces.render import print_answer

        if streamed and answer.backend != "extractive":
            print()
            print_answer(answer, body=False)  # the text is already on screen
        else:
            if streamed:
                # The unfinished LLM text cannot be taken back from a pipe or a scrollback,
                # so a line between the two says which text stands.
                from assistant.i18n import t

                print(f"\n{t('llm.stream_abandoned', answer.lang)}\n")
            print_answer(answer)

    _run(body)


def ask_main() -> None:
    ask()
    leave_now()


def leave_now(status: int = 0) -> None:
    """End a finished `ask` without tearing the interpreter down. Freeing every module,
    the index and the model one object at a time cost ~20 ms of a ~0.17 s cold `ask`
    (measured: the answer printed, then 25 ms until the process was gone), for memory the
    OS takes back at once. The exit handlers still run (the regex cache is written by one)
    and the output is flushed: a reader that went away (`ask … | head`) has what it wanted,
    but any other write error (a full disk) is one line on stderr and exit 1, as Python's
    own last flush would have failed. It returns, for the ordinary exit, while another
    non-daemon thread is at work, under a profiler or a coverage tracer (their data is
    written at teardown), and on an interpreter without `atexit._run_exitfuncs`. Only after
    an answer: usage errors and `--help` leave through SystemExit as before."""
    import atexit
    import threading

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    busy = any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread())
    if run_exit_handlers is None or busy or sys.getprofile() is not None or sys.gettrace() is not None:
        return
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the descriptor closed (`ask … >&-`)
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away (`ask … | head`): nothing left to say
            pass
        except (OSError, ValueError) as exc:
            if stream is sys.stdout and sys.stderr is not None:
                try:
                    sys.stderr.write(f"error: the answer could not be written: {getattr(exc, 'strerror', None) or exc}\n")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
            status = status or 1
    os._exit(status)
