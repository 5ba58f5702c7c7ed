"""What every chat adapter (Slack today; Feishu/Lark or Discord next) shares, and where
adapters are registered.

A chat platform differs from another in its transport (webhooks, a websocket), its markup
and its limits; what it does with a question does not: take each event once across
replicas, fold a follow-up into the thread's first question, answer as a remote caller,
store the answer, render it in small pieces with a sources footer, take 👍/👎. That part
lives here so an adapter is one module of transport and markup.

Adding an adapter: write `assistant/interfaces/<name>.py` defining `ADAPTER = ChatAdapter(...)`
and add its module name to ADAPTER_MODULES below: the registry is that tuple (not a
decorator), because a decorator only runs once something imports the module, which is the
list again. `mount_enabled` then mounts it on the API server when its settings are present,
and `run_adapter` runs its long-lived mode, if it has one.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ContextManager, Protocol

from assistant.i18n import DEFAULT_LANG, Lang, t

if TYPE_CHECKING:
    from fastapi import FastAPI

    from assistant.answer import Answer
    from assistant.config import Settings
    from assistant.knowledge import KB

log = logging.getLogger(__name__)

# The registry: one line per adapter module, each defining ADAPTER.
ADAPTER_MODULES: tuple[str, ...] = (
    "assistant.interfaces.slack",
)

# Lines that are not answers (a prompt for an empty question, an error, thanks for feedback)
# come before any answer tells the asker's language, and a button press never does: one
# language keeps them consistent, and choosing another is this one line.
NOTICE_LANG: Lang = DEFAULT_LANG

FENCE = "```"
MAX_QUESTION_BYTES = 8000  # a thread's question and follow-up together, under the 8 KiB a question may have (CJK: 3 bytes a character)


# ---------------------------------------------------------------- registration

class AnswerStore(Protocol):
    """What adapters need of the state store (assistant.ops.store.StateStore), and no more, so
    a test can hand them a stand-in."""

    def record_answer(self, answer: Answer, channel: str) -> str: ...

    def add_feedback(self, answer_id: str, rating: int, comment: str = ..., user: str = ...) -> None: ...

    def claim_event(self, event_id: str) -> bool | None: ...


class ServerSide(Protocol):
    """What an adapter may use of the API server's state (ServerState): kept this small so an
    adapter can be mounted against a stand-in, and so a new need shows up here rather than in
    passing."""

    store: AnswerStore

    def wait_loaded(self, timeout: float = ...) -> KB | None: ...

    def slot(self, client: str, cost: int) -> ContextManager[None]:
        """Hold a place in the server's answer queue (blocks until granted)."""
        ...


@dataclass(frozen=True)
class ChatAdapter:
    """One chat platform as the server and the CLI see it. `enabled(settings)` says whether to
    mount it on the API server (its credentials are set); `run(settings)`, when the platform
    can connect out instead (a websocket, a long poll), is the blocking loop that does it."""

    name: str
    enabled: Callable[[Settings], bool]
    mount_http: Callable[[FastAPI, Settings, ServerSide], None]
    run: Callable[[Settings], None] | None = None


def adapters() -> list[ChatAdapter]:
    """Every registered adapter, importing each module on the first call; read from
    ADAPTER_MODULES each time, so a test can register a stand-in by patching that tuple."""
    return [importlib.import_module(name).ADAPTER for name in ADAPTER_MODULES]


def adapter(name: str) -> ChatAdapter:
    """The adapter called `name`; a ConfigError naming the known ones otherwise."""
    from oncall_common.errors import ConfigError

    known = adapters()
    for candidate in known:
        if candidate.name == name:
            return candidate
    raise ConfigError(f"no chat adapter called {name!r}", "known: " + ", ".join(a.name for a in known))


def mount_enabled(fastapi_app: FastAPI, settings: Settings, state: ServerSide) -> list[str]:
    """Mount every adapter whose settings are present on the API server; the names mounted,
    so the caller can log them. An adapter without credentials is skipped, not an error: most
    deployments use one platform or none."""
    mounted: list[str] = []
    for candidate in adapters():
        if candidate.enabled(settings):
            candidate.mount_http(fastapi_app, settings, state)
            mounted.append(candidate.name)
    return mounted


def run_adapter(name: str, settings: Settings) -> None:
    """Run adapter `name`'s long-lived mode (e.g. `assistant slack` for Socket Mode)."""
    from oncall_common.errors import ConfigError

    chosen = adapter(name)
    if chosen.run is None:
        raise ConfigError(f"the {name} adapter has no mode of its own", "it is served by `assistant serve`")
    chosen.run(settings)


# ---------------------------------------------------------------- answering

@dataclass(frozen=True)
class Hooks:
    """An adapter's ties to the knowledge base and the answer store, made once so the
    adapter's handlers (and a test) need nothing else. `claim(event_id)` is True for the
    first replica to take an event, False for the others, None when the store cannot say."""

    channel: str
    answer: Callable[..., Answer]  # (question, lang=None): lang when the asker named one ("英文怎么说")
    record: Callable[[Answer], str]
    feedback: Callable[[str, int, str], None]
    claim: Callable[[str], bool | None] | None = None
    max_question_bytes: int = 8192  # the settings' limit; a longer message is answered from its tail


def bind(settings: Settings, kb: Callable[[], KB | None], store: AnswerStore, channel: str,
         gate: Callable[[str], ContextManager[None]] | None = None) -> Hooks:
    """Hooks for adapter `channel` (the name its answers are stored under). `kb()` is called
    per question: on the server it waits for the index to finish loading. `gate(question)`,
    when given, holds a slot in the server's answer queue while the answer is made."""
    from contextlib import nullcontext

    from assistant.answer import answer_question
    from assistant.tools import acting_for, remote_caller

    caller = remote_caller(settings.serving_hosts_allow)

    def answer(question: str, lang: str | None = None) -> Answer:
        loaded = kb()  # wait for the index before taking a slot: a queue slot is for answering
        with gate(question) if gate is not None else nullcontext(), acting_for(caller):
            # a chat user is a remote caller, and so is the LLM answering them
            return answer_question(question, settings, kb=loaded, lang=lang)

    def feedback(answer_id: str, rating: int, user: str) -> None:
        store.add_feedback(answer_id, rating, "", user)

    return Hooks(channel, answer, lambda result: store.record_answer(result, channel), feedback, store.claim_event,
                 settings.max_question_bytes)


@dataclass(frozen=True)
class Reply:
    """What to post for a question: an answer with its stored id (for the 👍/👎 buttons), or,
    when there is none, one line saying why."""

    answer: Answer | None = None
    answer_id: str = ""
    text: str = ""


def respond(hooks: Hooks, question: str, note_keys: Iterable[str] = (), lang: str | None = None) -> Reply:
    """Answer `question`, or say in one line why not: a bad question or a broken index must
    reach the asker as a sentence, never as silence in the thread. A message over the
    question limit (a pasted log) is answered from its last lines, as `ask -` does, with a
    note saying so; the notes are in the asker's language. `note_keys`: i18n keys of notes
    the adapter adds (the thread's history could not be read); `lang`, the answer's language when
    the asker asked for one (`language_request`)."""
    if not question:
        return Reply(text=t("chat.empty_question", NOTICE_LANG))
    from assistant.questions import head_and_tail

    tail = head_and_tail(question, hooks.max_question_bytes)
    if tail is not None:
        question = tail.text
    try:
        result = hooks.answer(question, lang) if lang else hooks.answer(question)
    except Exception as exc:
        if not hasattr(exc, "message"):  # not an AssistantError: a bug, whose traceback belongs in the log
            log.exception("%s: answering failed", hooks.channel)
        from oncall_common.lang import detect_lang

        lang: Lang = "zh" if detect_lang(question) == "zh" else "en"  # only here: an answer knows its own
        message = getattr(exc, "message", None) or t("chat.answer_failed", lang)
        return Reply(text=t("chat.cannot_answer", lang, message=message))
    for key in reversed(list(note_keys)):
        result.notes.insert(0, t(key, result.lang))
    if tail is not None:
        key = "chat.answered_tail_chars" if not tail.lines else "chat.answered_head_tail" if tail.head_lines else "chat.answered_tail_lines"
        result.notes.insert(0, t(key, result.lang, whole=tail.whole_bytes, limit=hooks.max_question_bytes,
                                 lines=tail.lines, chars=tail.chars, head=tail.head_lines))
    return Reply(answer=result, answer_id=hooks.record(result))


def feedback_reply(hooks: Hooks, answer_id: str, rating: int, user: str) -> str:
    """Store a 👍 (rating 1) or 👎 (-1) and return the line to show the user; a store that is
    down is logged and admitted to, not raised into the platform's handler."""
    try:
        hooks.feedback(answer_id, rating, user)
    except Exception as exc:
        log.warning("%s feedback not saved: %s", hooks.channel, getattr(exc, "message", type(exc).__name__))
        return t("chat.feedback_not_saved", NOTICE_LANG)
    return t("chat.thanks_up" if rating > 0 else "chat.thanks_down", NOTICE_LANG)


class SeenEvents:
    """Event ids this process has taken on, the last `size` of them: platforms redeliver an
    event they think went unhandled, and answering twice is worse than not at all."""

    def __init__(self, size: int = 2048) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.size = size

    def first_time(self, event_id: str | None) -> bool:
        """True the first time `event_id` is seen; an event without an id cannot be told apart
        from another, so it always counts as new."""
        if not event_id:
            return True
        with self._lock:
            if event_id in self._seen:
                return False
            self._seen[event_id] = None
            if len(self._seen) > self.size:
                self._seen.popitem(last=False)
            return True


def first_to_take(event_id: str | None, seen: SeenEvents, hooks: Hooks) -> bool:
    """Whether this process answers the event: not a redelivery it has seen, and, with a
    shared store, not claimed by another replica first. A store that cannot say (None) lets
    the local check decide, so an outage of the store does not silence the bot."""
    if not seen.first_time(event_id):
        return False
    if event_id and hooks.claim is not None and hooks.claim(event_id) is False:
        log.info("%s event %s was taken by another replica", hooks.channel, event_id[:64])
        return False
    return True


# A message that only asks for the last answer in the other language: "英文怎么说" and "what about
# in English?" got the same Chinese answer again (trial), though every article has its twin.
_IN_LANG = {
    "en": re.compile(r"^\W*(?:那|请|能)?(?:用)?(?:英文|英语)(?:怎么说|版本?|回答|说一下|说|呢|吧)?\W*$"
                     r"|^\W*(?:(?:can|could) you |please )?(?:(?:answer|say|reply|repeat|write|explain)(?: it| that| this)? )?"
                     r"(?:in )?english(?: please| version)?\W*$|^\W*(?:what|how) about in english\W*$", re.I),
    "zh": re.compile(r"^\W*(?:那|请|能)?(?:用)?(?:中文|汉语)(?:怎么说|版本?|回答|说一下|说|呢|吧)?\W*$"
                     r"|^\W*(?:(?:can|could) you |please )?(?:(?:answer|say|reply|repeat|write|explain)(?: it| that| this)? )?"
                     r"in chinese(?: please)?\W*$|^\W*(?:what|how) about in chinese\W*$", re.I),
}


def language_request(text: str) -> str | None:
    """The language a message asks the last answer in, when that is all it asks."""
    text = text.strip()
    if len(text) > 40:
        return None
    return next((lang for lang, pattern in _IN_LANG.items() if pattern.match(text)), None)


def thread_question(current: str, earlier: Iterable[str]) -> str:
    """The question to answer: a follow-up ("and with MTP?") means little alone, so it carries
    the thread's first question with it. `earlier` holds what people (not the bot) wrote
    before in the thread, oldest first, platform markup already removed. A message that only
    asks for another language ("英文怎么说") asks the message before it again (`language_request`
    gives the language)."""
    asked = [text for text in earlier if text and text != current]
    if asked and language_request(current):
        return thread_question(asked[-1], asked[:-1])
    if not asked or not _follow_up(current):
        return current  # whole: one too long is refused as such, not cut
    room = MAX_QUESTION_BYTES - len(current.encode("utf-8")) - 1
    if room <= 0:
        return current
    # The subject is the first question, or the last message that said it starts a new one:
    # after "换个问题：num_blocks_global 17131，平均 20k…", "那如果平均 8k 呢" got the thread's
    # first question, a CUDA OOM (trial).
    at = next((n for n in range(len(asked) - 1, -1, -1) if _NEW_SUBJECT.search(asked[n])), 0)
    # The what-ifs since then come along, oldest first: "and with 0.95?" then "and with 32768?"
    # computed 32768 at the first question's 0.9, the middle change lost. Only what the
    # calculation reads as a change: "we see 30 requests waiting" in the chain made 16384 ambiguous
    # (review), and "thanks" adds nothing to search with. The oldest go first when there is no room.
    from assistant.calculations import is_follow_on

    chain = [text for text in asked[at + 1:] if _follow_up(text) and is_follow_on(text)][-FOLLOW_UP_CHAIN:]
    while chain and len("\n".join([*chain, current]).encode("utf-8")) >= room:
        chain.pop(0)
    room -= sum(len(text.encode("utf-8")) + 1 for text in chain)
    first = asked[at].encode("utf-8")[:room].decode("utf-8", "ignore")  # cut from the subject, not the follow-ups
    return "\n".join([first, *chain, current])


FOLLOW_UP_CHAIN = 3  # earlier follow-ups carried along


FOLLOW_UP_CHARS = 80


def _follow_up(text: str) -> bool:
    """Whether a message leans on what came before: short, and naming no product of its own.
    A chat UI keeps one conversation for hours, and "how do I set up prefix caching in
    FastDeploy?" after an OOM question was answered as the OOM question."""
    from assistant.scope import detect

    return len(text) <= FOLLOW_UP_CHARS and not detect(text).products and not _NEW_SUBJECT.search(text)


# The asker says the message starts a new subject: "ok thanks. separate thing: how do I get
# emergency GPU quota?" was answered with the thread's first question (a 512-token FAQ entry).
# Only explicit switches: "btw it still OOMs", "顺便问下，改成 0.95 会不会更好" lean on the thread (review).
_NEW_SUBJECT = re.compile(r"separate (?:thing|question|issue|topic)|(?:different|unrelated) (?:thing|question|issue|topic|subject)"
                          r"|change of (?:topic|subject)|on another note|换个问题|换个话题|另一个问题|不相关的问题|题外话"
                          r"|^\W*(?:another|new|other) (?:question|issue|topic)\s*[:：,，-]|^\W*(?:新问题|另外(?:一个)?问题|另外问一?下)\s*[:：,，]", re.I)


# ---------------------------------------------------------------- "tried that, still failing"

# The fix section of an earlier answer, as markdown (`**Fix**`, `## Fix`) or as a chat
# platform rendered it (Slack's `*解决办法*`): in a Slack thread the bot's answers are mrkdwn.
_FIX_HEADING = re.compile(r"\*\*(?:Fix|Fixes|解决办法)\*\*|^\*(?:Fix|Fixes|解决办法)\*|^#+ *(?:Fix|Fixes|解决办法)\b", re.M)
# A heading line: markdown's **x** at a line's start as before, mrkdwn's *x* only as the whole
# line (with its [n]): a "* **Lower** `--max-num-seqs`" bullet ended the Fix section (review).
_NEXT_HEADING = re.compile(r"^\*\*[^*\n]+\*\*|^\*[^*\n]+\*[ \t]*(?:\[\d+\])?[ \t]*$|^#+ ", re.M)
_FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]{2,60}")
# A setting the fix names: --max-num-seqs, `max_num_seqs`, `kv-cache-ratio`, ENABLE_V1_KVCACHE_SCHEDULER.
_SETTING = re.compile(r"(?<![\w-])(--[a-z][\w-]{2,60})|`([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)`|(?<![\w-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w-])")
# Said plainly that the fix was tried and failed; not "haven't tried that yet", "has anyone tried
# this", "does it still preempt if …", "没用 k8s" (not using), "测试了" or "还是" meaning "or" (review).
_TRIED_IT = re.compile(r"(?<!n't )(?<!not )(?<!never )(?<!anyone )(?<!nobody )\btried (?:that|it|this|them)\b(?! yet)"
                       r"|\b(?:that|it|this) did(?:n't| not) (?:help|work|change anything)|\bno (?:luck|effect|difference)\b"
                       r"|试过了|试了也|试了还是|还是不行|还是一样|没效果|不管用|不起作用", re.I)


def tried_note(turns: Iterable[tuple[str, str]], current: str) -> str:
    """What "tried that, still failing" refers to, for any chat surface: `turns` are the
    conversation's ("user" | "assistant", text), oldest first, the current message last. For
    each user turn that says a fix failed without naming a setting, the first setting of the
    fix the answer before it gave that was not tried already ("tried that, still preempting.
    what next?" got the same fix list, with the setting it had tried first; in a Slack thread
    "试过了，还是不行" got the first answer word for word: trial). Said as tried, the next
    answer says so instead of offering it again. Empty when nothing was said to fail, or the
    answers had no fix."""
    from assistant.cleaning import tried_settings

    tried: list[str] = []
    reply = ""
    for role, text in turns:
        if role == "assistant":
            reply = text
        elif role == "user" and reply and _TRIED_IT.search(text) and not _FLAG.search(text) and not tried_settings(text):
            name = tried_first_fix(reply, tried)
            if name:
                tried.append(name)
    if not tried:
        return ""
    names = ", ".join(tried)
    return f"（试过 {names}，没用）" if any("\u4e00" <= ch <= "\u9fff" for ch in current) else f" (tried {names}, no effect)"


def tried_first_fix(reply: str, tried: Iterable[str] = ()) -> str:
    """The first setting the reply's fix section names that is not in `tried`; "" when the
    reply has no fix section or it names no setting."""
    heading = _FIX_HEADING.search(reply)
    if heading is None:
        return ""
    after = _NEXT_HEADING.search(reply, heading.end() + 1)
    for m in _SETTING.finditer(reply, heading.end(), after.start() if after else len(reply)):
        name = m.group(1) or m.group(2) or m.group(3)
        if name not in tried:
            return name
    return ""


# ---------------------------------------------------------------- rendering

def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class Dialect:
    """How one platform writes the markdown the answers use. `render_markdown` walks the
    lines (code blocks, tables, headings, bullets); this says what each becomes, so an
    adapter supplies only its syntax. Templates take the text as {} (or {label} and {url});
    `escape` protects text the platform would read as markup. Code stays fenced with ```,
    which every platform we target reads and `split_message` keeps balanced. The defaults are
    plain markdown with tables flattened to bullets."""

    bold: str = "**{}**"
    italic: str = "_{}_"
    heading: str = "**{}**"
    link: str = "[{label}]({url})"
    bullet: str = "• "
    cell_separator: str = " — "
    escape: Callable[[str], str] = _same


_TABLE_RULE = re.compile(r"^\s*\|[\s:|-]+\|\s*$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
# *one star* is markdown's italic; left as it is, Slack shows it bold (trial).
# Not a glob: /sys/class/*/device/* (review).
_ITALIC = re.compile(r"(?<![*\w/.~])\*(?![\s*])([^*\n]+?)(?<![\s*/])\*(?![*\w/])(?!\.\w)")
# [^\[\]] (not [^\]]): a match attempt stops at the next "[", so "[[[[…" is linear, not quadratic.
# A URL may hold one level of parentheses: "…feature-overview.html#profiling_(metrics)" lost its
# ")" to the link and left one after it (trial).
_LINK = re.compile(r"\[([^\[\]]+)\]\((https?://(?:[^()\s]|\([^()\s]*\))+)\)")
# <https://x> is markdown's autolink; escaped, it showed as "&lt;https://x&gt;" text (trial).
# Linear (no "&" but an entity's own, so no rescan to the run's end), and no "|", which would
# let <https://evil|https://good> show one address and link to another (review).
_AUTOLINK = re.compile(r"&lt;(https?://(?:[^\s<>&|]|&(?!lt;|gt;))+)&gt;")


def render_markdown(markdown: str, dialect: Dialect) -> str:
    """Markdown as the answers are written, in `dialect`. Code is escaped but otherwise left
    alone: a command must be copied exactly."""
    out: list[str] = []
    in_code = False
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(FENCE):
            in_code = not in_code
            out.append(FENCE)
        elif in_code:
            out.append(dialect.escape(line))
        elif _TABLE_ROW.match(line) and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            # The header row names the columns: a bold line above the rows, not a bullet that
            # reads like one more cause ("• 可能原因 — 本质").
            cells = [_plain(cell) for cell in table_cells(line)]
            out.append(dialect.bold.format(render_inline(dialect.cell_separator.join(cells), dialect)))
        elif not _TABLE_RULE.match(line):  # a table's separator row says nothing once flattened
            out.append(_render_line(line, dialect))
    return "\n".join(out).strip()


def table_cells(row: str) -> list[str]:
    """A markdown table row's cells, split at the pipes that are no part of a cell: an
    escaped `\\|` (a runbook's `kubectl logs … \\| grep -i error`) is a literal pipe, and a pipe
    inside a code span is code. Splitting at every "|" turned that command into two cells
    (trial)."""
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    cells: list[str] = []
    current: list[str] = []
    in_code = False
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and body[i + 1:i + 2] == "|":
            current.append("|")
            i += 2
            continue
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    return cells + ["".join(current).strip()]


def _plain(cell: str) -> str:
    """A header cell without its own bold markers, which the header's bold already carries."""
    return _BOLD.sub(lambda m: m.group(1), cell)


def _render_line(line: str, dialect: Dialect) -> str:
    """One line outside code. Tables become one bullet per row: few chat platforms draw tables."""
    if _TABLE_ROW.match(line):
        return dialect.bullet + dialect.cell_separator.join(render_inline(cell, dialect) for cell in table_cells(line))
    heading = _HEADING.match(line)
    if heading:
        return dialect.heading.format(render_inline(heading.group(1), dialect))
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}{dialect.bullet}{render_inline(bullet.group(2), dialect)}"
    return render_inline(line, dialect)


def render_inline(text: str, dialect: Dialect) -> str:
    """Italics, bold and links within a line; code spans are set aside first, so `a*b*c` and a
    URL in code stay as written (a span may sit inside bold: **set `x`**). Escaping comes
    first, so markup the dialect adds is not escaped away."""
    spans: list[str] = []

    def aside(m: re.Match) -> str:
        spans.append(dialect.escape(m.group(0)))
        return f"\ue001{len(spans) - 1}\ue001"

    text = dialect.escape(_INLINE_CODE.sub(aside, text.replace("\ue001", "")))  # the placeholder's own character, if any, goes
    text = _ITALIC.sub(lambda m: dialect.italic.format(m.group(1)), text)
    text = _BOLD.sub(lambda m: dialect.bold.format(m.group(1)), text)
    text = _LINK.sub(lambda m: dialect.link.format(label=m.group(1), url=m.group(2)), text)
    text = _AUTOLINK.sub(lambda m: dialect.link.format(label=m.group(1), url=m.group(1)), text)
    return re.sub("\ue001(\\d+)\ue001", lambda m: spans[int(m.group(1))], text) if spans else text


_INLINE_CODE = re.compile(r"`[^`\n]+`")


def split_message(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut between lines (inside a line only when one
    line alone is too long); a code block cut in two is closed at the end of one piece and
    reopened at the start of the next, so every piece renders on its own."""
    pieces = _Pieces(limit - 4)  # room to close a fence
    for line in text.split("\n"):
        pieces.add_line(line)
    return pieces.done()


class _Pieces:
    """split_message's running state: the pieces so far and the one being filled."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.pieces: list[str] = []
        self.current = ""
        self.fence_open = False  # whether `current` ends inside a code block

    def add_line(self, line: str) -> None:
        while len(line) > self.budget - 4:  # one enormous line: cut it, at a space where there is one
            at = _cut_at(line, self.budget - 4)
            head, line = line[:at], line[at:].lstrip(" ")
            self.flush()
            self.current = self._joined(head)
        if len(self._joined(line)) > self.budget:
            self.flush()
        self.current = self._joined(line)
        if line.strip().startswith(FENCE):
            self.fence_open = not self.fence_open

    def _joined(self, line: str) -> str:
        return f"{self.current}\n{line}" if self.current else line

    def _closed(self) -> str:
        return self.current + (f"\n{FENCE}" if self.fence_open else "")

    def flush(self) -> None:
        if self.current:
            self.pieces.append(self._closed())
            self.current = FENCE if self.fence_open else ""

    def done(self) -> list[str]:
        if self.current and self.current != FENCE:
            self.pieces.append(self._closed())
        return self.pieces


def _cut_at(line: str, most: int) -> int:
    """Where to cut a line too long for one piece: at its last space within `most`, or, with
    none in the last quarter, at `most` moved back out of any `&amp;`-style escape: a hard cut
    left "&a" at one piece's end and "mp;" at the next's (trial)."""
    space = line.rfind(" ", 0, most + 1)
    if space > most * 3 // 4:
        return space
    amp = line.rfind("&", max(0, most - 8), most)
    if amp != -1 and ";" not in line[amp:most]:
        return amp or most
    return most


def sources_footer(answer: Answer, dialect: Dialect) -> str:
    """The numbered sources the answer's [n] markers point to, under a label in the answer's
    language; "" when it cites nothing."""
    lines = [f"[{i}] {dialect.escape(c.title)} ({dialect.escape(c.source)})" for i, c in enumerate(answer.citations, 1)]
    if not lines:
        return ""
    return dialect.bold.format(t("answer.sources", answer.lang)) + "\n" + "\n".join(lines)


def answer_sections(answer: Answer, dialect: Dialect, limit: int) -> list[str]:
    """An answer as pieces of at most `limit` characters: the body (with its notes in italics)
    split as needed, then the sources footer as a piece of its own."""
    body = render_markdown(answer.answer, dialect)
    if answer.notes:
        body += "\n\n" + dialect.italic.format(dialect.escape(" · ".join(answer.notes)))
    footer = sources_footer(answer, dialect)
    return split_message(body, limit) + ([footer] if footer else [])
