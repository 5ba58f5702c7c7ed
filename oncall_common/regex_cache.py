"""Compiled regular expressions kept between processes, like bytecode in `__pycache__`.

Why: a cold `ask` compiles some two hundred patterns (the question readers, the scope and
log vocabularies), and `re` compiles in pure Python: about 45 ms of a 0.17 s process whose
floor (Python, the embedder and one query) is 0.09 s. The compiled form is a list of ints
that `_sre.compile` turns back into a pattern object in microseconds. This module keeps
those lists in a file, keyed by the pattern and its flags, and serves them on the next run.

It leans on CPython's private compiler (`re._compiler`, `re._parser`, `_sre.compile`), so
every entry is tied to the exact interpreter build and `_sre.MAGIC`: a file written by
another Python is ignored, and so is any file that cannot be read, fails its digest, could
have been written by someone else, or whose entries do not rebuild. Whatever goes wrong,
the pattern is compiled the ordinary way: the cache can only ever save time. Only `ask`, a
process that lives for one question, installs it; a server pays the compile once and keeps
the patterns."""

from __future__ import annotations

import atexit
import marshal
import os
import re
import sys
import tempfile
import threading
from pathlib import Path

try:  # CPython 3.11+: the compiler the `re` module itself uses
    import _sre
    from re import _compiler, _parser
except ImportError:  # pragma: no cover - another interpreter: nothing to cache
    _sre = _compiler = _parser = None  # type: ignore[assignment]

MAX_ENTRIES = 4000  # what one run may add: a caller that builds thousands of patterns must not grow the file without end
_STAMP = f"{sys.implementation.cache_tag}|{sys.version}|{getattr(_sre, 'MAGIC', '')}|{getattr(_sre, 'CODESIZE', '')}"

_lock = threading.Lock()
_installed: dict[str, object] = {}


def cache_file(cache_dir: Path) -> Path:
    return Path(cache_dir) / f"regex-{sys.implementation.cache_tag}.marshal"


def _compile_parts(pattern: str | bytes, flags: int) -> tuple:
    """What `re._compiler.compile` hands `_sre.compile`, computed the way it does."""
    p = _parser.parse(pattern, flags)
    code = _compiler._code(p, flags)
    groupindex = p.state.groupdict
    indexgroup = [None] * p.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    # Plain ints: marshal takes no int subclass (re.IGNORECASE is a RegexFlag).
    return (int(flags | p.state.flags), [int(c) for c in code], p.state.groups - 1, dict(groupindex), tuple(indexgroup))


# The file: this header, a BLAKE2b digest of the rest, then the marshalled entries. `_sre`
# trusts the code it is handed (one wrong int in a stored entry crashed every `ask` with a
# segfault, review): a file whose digest does not match, or that someone else could have
# written (another owner, group- or world-writable), is not read.
_HEADER = b"oncall-assistant regex cache 1\n"
_DIGEST = 32


def _digest(payload: bytes) -> bytes:
    try:  # the C module hashlib wraps: importing hashlib itself loads OpenSSL (~2 ms of a cold `ask`)
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter without it
        from hashlib import blake2b
    return blake2b(payload, digest_size=_DIGEST).digest()


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
                return {}
            raw = f.read()
    except OSError:
        return {}
    start = len(_HEADER) + _DIGEST
    if not raw.startswith(_HEADER) or _digest(raw[start:]) != raw[len(_HEADER):start]:
        return {}
    try:
        data = marshal.loads(raw[start:])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict) or data.get("stamp") != _STAMP or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def _write(path: Path, entries: dict) -> None:
    """Atomically, so two `ask`s at once never read half a file; failures are silent (a
    read-only home, a full disk): the next run compiles as before. The file is the user's
    own (mode 0600, from mkstemp), like the rest of a per-user cache."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = marshal.dumps({"stamp": _STAMP, "entries": entries})
        fd, tmp = tempfile.mkstemp(prefix=".regex-", dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(_HEADER + _digest(payload) + payload)
        os.replace(tmp, path)
        tmp = None
    except (OSError, ValueError):
        pass
    finally:  # an interrupt mid-write too: no half-written temp file is left behind
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def install(cache_dir: Path) -> bool:
    """Serve this process's pattern compiles from `cache_dir`'s file, and write back at exit
    what this run used when it compiled anything the file lacked. Patterns built per question
    (an escaped term inside a pattern) are new each run: keeping only what the run used drops
    the last run's, so the file holds the patterns every run compiles and no history.
    Returns whether it is installed (not on an interpreter without CPython's `re` internals,
    not with ASSISTANT_REGEX_CACHE=0, and only once per process)."""
    if _compiler is None or not hasattr(_sre, "compile") or "original" in _installed:
        return False
    if os.environ.get("ASSISTANT_REGEX_CACHE", "1").strip().lower() in {"0", "false", "no", "off"}:
        return False
    path = cache_file(cache_dir)
    entries = _read(path)
    used: dict = {}
    new: list = []
    original = _compiler.compile
    counts = _installed.setdefault("counts", {"served": 0, "compiled": 0})

    def compile(p, flags=0):  # noqa: A001 - stands in for re._compiler.compile
        if type(p) not in (str, bytes) or flags & re.DEBUG:  # a subclass would not marshal
            return original(p, flags)
        key = (type(p) is bytes, p, int(flags))
        parts = entries.get(key)
        if parts is not None:
            try:
                compiled = _sre.compile(p, parts[0], parts[1], parts[2], parts[3], parts[4])
                used[key] = parts
                counts["served"] += 1
                return compiled
            except Exception:  # a stale or damaged entry: compile it afresh
                entries.pop(key, None)
        try:
            parts = _compile_parts(p, flags)
            compiled = _sre.compile(p, parts[0], parts[1], parts[2], parts[3], parts[4])
        except re.error:
            raise
        except Exception:  # the private compiler changed shape: leave it to `re`
            return original(p, flags)
        counts["compiled"] += 1
        with _lock:
            if len(used) < MAX_ENTRIES:
                used[key] = parts
                new.append(key)
        return compiled

    def save() -> None:
        if new:
            _write(path, dict(used))

    _compiler.compile = compile
    _installed.update(original=original, path=path, save=save)
    atexit.register(save)
    return True


def stats() -> dict[str, int]:
    """Patterns served from the file and compiled afresh since `install`."""
    return dict(_installed.get("counts", {"served": 0, "compiled": 0}))


def save_now() -> None:
    """Write the file now rather than at exit (tests)."""
    save = _installed.get("save")
    if save is not None:
        save()


def uninstall() -> None:
    """Put `re`'s own compiler back (tests)."""
    original = _installed.pop("original", None)
    if original is not None:
        _compiler.compile = original
    save = _installed.get("save")
    if save is not None:
        atexit.unregister(save)
    _installed.clear()
