"""Finding KB files and hashing their content: all the freshness check needs, without the
parser (documents.py), which the query path never has to import."""

from __future__ import annotations

from pathlib import Path

SUFFIXES = {".md", ".markdown", ".txt", ".text"}


def content_hash(data: bytes | str) -> str:
    import hashlib  # OpenSSL's init costs ~3 ms; the freshness check usually needs no hash

    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:16]


def find_files(root: Path) -> list[Path]:
    """KB files under root (or root itself), in a stable order; hidden folders skipped."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_file() and path.suffix.lower() in SUFFIXES and path.name.lower() != "readme.md":
            out.append(path)
    return out
