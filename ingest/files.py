"""Finding KB files, deciding which ones can be read as text, and hashing content: all the
freshness check needs, without the parser (documents.py), which the query path never has
to import.

Nothing is dropped silently: `survey` says for every file it passes over why (hidden,
unknown type, too big), and `read_text` says why bytes are not text (binary, encoding),
so `assistant ingest` can list what it skipped.
"""

from __future__ import annotations

import codecs
import csv
import os
from dataclasses import dataclass
from pathlib import Path

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}  # .mdx: markdown with JSX components (mdx.py)
TEXT_SUFFIXES = {".txt", ".text"}
HTML_SUFFIXES = {".html", ".htm"}
RST_SUFFIXES = {".rst", ".rest"}  # reStructuredText (Sphinx doc trees), converted by rst.py
EXPORT_SUFFIXES = {".csv", ".ipynb"}  # a Notion database, a Jupyter notebook (exports.py)
SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | HTML_SUFFIXES | RST_SUFFIXES | EXPORT_SUFFIXES
# A runbook or a wiki page is kilobytes; a file this big is a log or a dump, not a document.
MAX_FILE_BYTES = 2_000_000
# Files about a doc tree rather than in it: where it was copied from, its licence, who wrote
# it. They name every topic of the tree in one list, so they match many questions and answer
# none. Skipped (and reported) in a folder when named in capitals or at its top; read when a
# user points at one on its own.
META_STEMS = {"sources", "license", "licence", "copying", "notice", "code_of_conduct", "authors", "contributors"}


@dataclass(frozen=True)
class Skipped:
    path: str  # absolute path, or a folder for a group of hidden files
    reason: str


def content_hash(data: bytes | str) -> str:
    import hashlib  # OpenSSL's init costs ~3 ms; the freshness check usually needs no hash

    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:16]


def _size(path: Path) -> int:
    """Size of a regular file; -1 for anything else (a FIFO would block the reader)."""
    import stat

    try:
        st = path.stat()
    except OSError:
        return -1
    return st.st_size if stat.S_ISREG(st.st_mode) else -1


def survey(root: Path) -> tuple[list[Path], list[Skipped]]:
    """KB files under root (or root itself) in a stable order, and what was passed over.

    Hidden folders (.git, .venv…) are reported once and never walked.
    """
    skipped: list[Skipped] = []
    links: list[Path] = []  # symlinks to files inside the tree
    if root.is_file():
        candidates = [root]
    elif root.is_dir():
        candidates = []
        for folder, dirs, names in os.walk(root):
            for d in [d for d in dirs if d.startswith(".")]:
                dirs.remove(d)  # never walked: a .git can hold thousands of files
                skipped.append(Skipped(os.path.join(folder, d), "hidden folder"))
            for d in dirs:
                if os.path.islink(os.path.join(folder, d)):  # os.walk does not follow it: said, not silent
                    skipped.append(Skipped(os.path.join(folder, d), "symlink to a folder, not followed (add its target instead)"))
            for name in names:
                full = os.path.join(folder, name)
                if name.startswith("."):
                    skipped.append(Skipped(full, "hidden"))
                elif os.path.islink(full) and not os.path.exists(full):
                    skipped.append(Skipped(full, "broken or looping symlink"))
                elif os.path.islink(full) and _inside(Path(os.path.realpath(full)), root):
                    links.append(Path(folder, name))
                else:
                    candidates.append(Path(folder, name))
        candidates.sort()
    else:
        return [], [Skipped(str(root), "does not exist")]
    ignored = _ignore_patterns(root)
    out: list[Path] = []
    for path in candidates:
        why = _why_not(path, root, ignored)
        if why:
            skipped.append(Skipped(str(path), why))
        else:
            out.append(path)
    # A link to a file read anyway is read there: indexed twice, one page had two documents and
    # two titles (trial). A link to one that is not read (in a hidden folder, ignored) is read as itself.
    read = {os.path.realpath(path) for path in out}
    for path in sorted(links):
        target = os.path.realpath(path)
        why = f"symlink to {os.path.relpath(target, os.path.realpath(root))}, read there" if target in read else _why_not(path, root, ignored)
        if why:
            skipped.append(Skipped(str(path), why))
        else:
            out.append(path)
            read.add(target)
    return sorted(out), skipped


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(root))
    return path == real or real in path.parents


# Text formats a runbook repo holds that are not read, with the command that makes them markdown:
# 4 of a repo's 5 runbooks were skipped as "unknown type (.adoc)" with nothing said to do (trial).
_ASCIIDOC = ": AsciiDoc is not read; convert it: asciidoctor -b docbook -o - FILE | pandoc -f docbook -t gfm -o FILE.md"
_CONVERT = {
    ".adoc": _ASCIIDOC,
    ".asciidoc": _ASCIIDOC,
    ".org": ": Org is not read; convert it: pandoc -f org -t gfm -o FILE.md FILE",
    ".docx": ": Word is not read; convert it: pandoc -t gfm -o FILE.md FILE",
    ".textile": ": Textile is not read; convert it: pandoc -f textile -t gfm -o FILE.md FILE",
    ".wiki": ": MediaWiki markup is not read; convert it: pandoc -f mediawiki -t gfm -o FILE.md FILE",
}


# What a parser raises on a file it cannot read (a CSV cell over csv's limit, a page 400 <div>s
# deep): that file is passed over with the reason, never the whole build (ingest/build.py, index.py).
PARSE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, csv.Error)


def unparsable(path: Path, exc: Exception) -> Skipped:
    return Skipped(str(path.resolve()), f"could not be parsed ({type(exc).__name__}: {str(exc)[:120]})")


def _why_not(path: Path, root: Path, ignored: list[str]) -> str:
    """Why a file found in the tree is not read ("" when it is)."""
    if ignored and _ignored(path, root, ignored):
        return f"listed in {IGNORE_FILE}"
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        return f"unknown type ({suffix or 'no extension'}{_CONVERT.get(suffix, '')})"
    if _about_the_tree(path, root):
        return "about the tree, not documentation (provenance, licence or authors)"
    if _sphinx_artefact(path, root):
        return "a Sphinx build's page source copy, index or search page (the built page is read)"
    size = _size(path)
    if size < 0:
        return "not a readable regular file"
    if size > MAX_FILE_BYTES:
        return f"too big ({size / 1e6:.1f} MB > {MAX_FILE_BYTES / 1e6:.0f} MB)"
    return ""


def _about_the_tree(path: Path, root: Path) -> bool:
    """A provenance, licence or authors file: named so in capitals (`SOURCES.md`, `LICENSE`)
    or at the top of the tree. A page deeper down in lower case is documentation, as
    Xinference's `models/sources/sources.rst` (where models are downloaded from) is."""
    stem = path.stem
    if root.is_file() or stem.lower().replace("-", "_") not in META_STEMS:
        return False
    return stem.isupper() or path.parent == root


_SPHINX_PAGES = frozenset({"genindex.html", "search.html", "py-modindex.html", "searchindex.js"})


def _sphinx_artefact(path: Path, root: Path) -> bool:
    """In a built Sphinx site (`.buildinfo` or `searchindex.js` beside its pages), the `_sources/`
    copies of every page, the general index and the search page: each page was indexed twice,
    cited as `_sources/usage/log.md.txt`, and the index answered parameter questions (trial)."""
    if root.is_file():
        return False
    parts = path.relative_to(root).parts
    if "_sources" not in parts[:-1] and path.name not in _SPHINX_PAGES:
        return False
    site = path.parent
    while "_sources" in site.parts[len(root.parts):]:
        site = site.parent
    for folder in (site, *site.parents):
        if (folder / ".buildinfo").is_file() or (folder / "searchindex.js").is_file():
            return True
        if folder == root or root not in folder.parents:
            break
    return False


# Paths a team leaves out of its KB, one glob per line, in a file at the tree's root:
# "*.log", "dumps/", "drafts/**". A log dump committed beside the runbooks cost minutes of
# embedding on every change (trial).
IGNORE_FILE = ".kbignore"


def _ignore_patterns(root: Path) -> list[str]:
    try:
        lines = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines() if root.is_dir() else []
    except OSError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _ignored(path: Path, root: Path, patterns: list[str]) -> bool:
    from fnmatch import fnmatch

    rel = path.relative_to(root).as_posix()
    for pattern in patterns:
        pattern = pattern.lstrip("/")
        if pattern.endswith("/"):  # a folder, anywhere in the tree
            if f"/{pattern}" in f"/{rel}":
                return True
        elif fnmatch(rel, pattern) or fnmatch(path.name, pattern):  # fnmatch's * crosses folders: "drafts/*" holds drafts/a/b.md
            return True
    return False


def find_files(root: Path) -> list[Path]:
    """KB files under root (or root itself), in a stable order; hidden folders skipped."""
    return survey(root)[0]


def read_text(raw: bytes) -> tuple[str | None, str]:
    """(text, "") when the bytes are a text document, else (None, why not).

    UTF-8 (with or without BOM) first; then GB18030 for Chinese documents saved by Windows
    tools, or Windows-1252 for Western ones ("server’s", "café"), whichever the bytes look
    like: a file of one was skipped, or read as the other's mojibake.
    """
    if raw[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return _decoded(raw, "utf-32")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        # How Notepad and PowerShell's Out-File save by default: read as "binary" and skipped (trial).
        return _decoded(raw, "utf-16")
    if b"\x00" in raw[:8192]:
        return None, "binary"
    kind = next((name for magic, name in _MAGIC if raw.startswith(magic)), None)
    if kind:  # an image or archive saved under a text name: its bytes were indexed and quoted (trial)
        return None, f"binary ({kind})"
    try:
        return raw.decode("utf-8-sig"), ""
    except UnicodeDecodeError:
        pass
    mixed = _utf8_with_strays(raw)
    if mixed is not None:
        return mixed, ""
    order = ("gb18030", "cp1252") if _looks_chinese(raw) else ("cp1252", "gb18030")
    for encoding in order:
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        if _controls(text) > 0.01:
            return None, "binary"
        return text, ""
    return None, "not text (neither UTF-8, GB18030 nor Windows-1252)"


def _decoded(raw: bytes, encoding: str) -> tuple[str | None, str]:
    """A file whose byte-order mark names its encoding (the codec reads and drops the mark)."""
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        return None, f"not text (starts with a {encoding.upper()} byte-order mark, but is not {encoding.upper()})"
    return (None, "binary") if _controls(text) > 0.01 else (text, "")


def _utf8_with_strays(raw: bytes) -> str | None:
    """UTF-8 with a few Windows-1252 bytes pasted in (a curly quote from an email): its UTF-8
    read as UTF-8 and the stray bytes as Windows-1252. Read whole as Windows-1252, every
    "Café" became "CafÃ©" (trial). None when most non-ASCII bytes are not UTF-8."""
    strict = raw.decode("utf-8-sig", errors="replace")
    invalid = strict.count("\ufffd")
    valid = sum(1 for ch in strict if ord(ch) > 0x7F) - invalid
    # Windows-1252 text almost never holds a valid UTF-8 sequence at all; a GB18030 file reads
    # as a few valid UTF-8 pairs among many invalid bytes.
    if valid == 0 or (valid <= invalid and _looks_chinese(raw)):
        return None
    return raw.decode("utf-8-sig", errors=_STRAYS_AS_CP1252)


def _stray_as_cp1252(exc: UnicodeDecodeError) -> tuple[str, int]:
    return exc.object[exc.start:exc.end].decode("cp1252", errors="replace"), exc.end


_STRAYS_AS_CP1252 = "kb_cp1252"
codecs.register_error(_STRAYS_AS_CP1252, _stray_as_cp1252)


# The first bytes of files that are never text, whatever their name says.
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "PNG image"), (b"\xff\xd8\xff", "JPEG image"), (b"GIF87a", "GIF image"), (b"GIF89a", "GIF image"),
          (b"%PDF-", "PDF"), (b"PK\x03\x04", "zip archive"), (b"\x1f\x8b", "gzip archive"), (b"\x7fELF", "executable"),
          (b"\xfd7zXZ\x00", "xz archive"), (b"7z\xbc\xaf\x27\x1c", "7z archive"),
          (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "Office document"), (b"SQLite format 3\x00", "SQLite database"))


def _looks_chinese(raw: bytes) -> bool:
    """Whether most of the non-ASCII bytes pair up as GB2312 characters (both bytes 0xA1 or
    above), as Chinese text does. Windows-1252 puts a single high byte (a curly quote 0x92,
    an é 0xE9) before an ASCII letter or space, which GBK would read as a rare character."""
    paired = odd = 0
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b < 0x80:
            i += 1
            continue
        t = raw[i + 1] if i + 1 < n else 0
        if b >= 0xA1 and t >= 0xA1:
            paired += 1
        else:
            odd += 1
        i += 2
    return paired > odd


def _controls(text: str) -> float:
    """Share of control characters other than whitespace: what a binary without a NUL in its
    first 8 KB decodes to."""
    sample = text[:8192]
    bad = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f\v\x1b")
    return bad / max(1, len(sample))
