"""Terminal rendering of an Answer with rich: the answer as markdown, then its sources."""

from __future__ import annotations

import re
import sys

from assistant.answer import Answer
from assistant.i18n import t


def _reader_gone() -> None:
    raise BrokenPipeError


_HTML_LIKE = re.compile(r"<(?=[^\s<>][^<>\n]*>)")


def _keep_angle_brackets(text: str) -> str:
    """Escape `<…>` outside code: runbooks write placeholders as `py-spy dump --pid <PID>`
    in plain prose, and the terminal's markdown renderer drops them as inline HTML, which
    leaves a command without its argument."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            parts = line.split("`")
            # Even parts are outside code spans (an unmatched trailing backtick leaves the
            # rest as prose, as markdown reads it).
            line = "`".join(_HTML_LIKE.sub(r"\\<", part) if i % 2 == 0 else part for i, part in enumerate(parts))
        out.append(line)
    return "\n".join(out)


def _sources_heading(answer: Answer) -> str:
    heading = t("answer.sources", answer.lang)
    if answer.grounded:
        return heading
    note = t("answer.not_grounded", answer.lang)
    return heading + (f"（{note}）" if answer.lang == "zh" else f" ({note})")


def _where(c) -> str:
    # A section quoted for context (the next one of the page, a passage's neighbour) was not
    # scored itself: its 0.00 read as an error (two trials).
    return f"{c.source} · {c.lang}" + (f" · {c.score:.2f}" if c.score != 0 else "")


def print_answer(answer: Answer, console=None, body: bool = True) -> None:
    if console is None and not sys.stdout.isatty():
        # Not rich's is_terminal: FORCE_COLOR or TTY_COMPATIBLE (common in CI) make it say yes
        # to a pipe; the streaming decision asks the same question of stdout.
        print_plain(answer, body)
        return
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.text import Text

    if console is None:
        console = Console()
        # rich ends the process with status 1 when the reader goes away (`ask … | head`);
        # the caller's handler ends it quietly with 0, like any other write to a closed pipe.
        console.on_broken_pipe = _reader_gone
    if body:
        console.print(Markdown(_keep_angle_brackets(answer.answer)))
        console.print()
    if not answer.citations:
        # An empty KB, or nothing close enough to cite: the answer says so; an empty
        # "Sources" heading under it read like a missing list.
        if answer.backend != "extractive":
            console.print(Text(f"answered by {answer.backend}", style="dim"))
        return
    console.print(Text(_sources_heading(answer), style="bold"))
    for n, c in enumerate(answer.citations, 1):
        line = Text(f"[{n}] ", style="cyan")
        line.append(f"{c.title}", style="bold" if answer.grounded else "")
        line.append(f"  {_where(c)}", style="dim")
        console.print(line)
    if answer.backend != "extractive":
        console.print(Text(f"answered by {answer.backend}", style="dim"))


def print_plain(answer: Answer, body: bool = True) -> None:
    """The answer as its markdown, and its sources as lines, for a pipe or a file: rich wraps
    at 80 columns there, which broke a long command across lines (with trailing spaces) and
    cut table cells to "LUMEN_ENABLE_PREFIX_CA…" (newcomer trial). Markdown reads as is."""
    out: list[str] = [answer.answer.rstrip("\n"), ""] if body else []
    if answer.citations:
        out.append(_sources_heading(answer))
        out += [f"[{n}] {c.title}  {_where(c)}" for n, c in enumerate(answer.citations, 1)]
    if answer.backend != "extractive":
        out.append(f"answered by {answer.backend}")
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()
