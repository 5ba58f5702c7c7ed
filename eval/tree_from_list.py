"""Rebuild a doc tree that the eval uses but the repository does not hold.

The unseen doc trees (eval/corpus-*-docs.files) are public docs of other serving products,
listed by file with the commit they were taken at, instead of being copied in:

    git clone https://github.com/InternLM/lmdeploy /tmp/lmdeploy
    python eval/tree_from_list.py eval/corpus-lmdeploy-docs.files /tmp/lmdeploy /tmp/lmdeploy-docs
    assistant eval --kb /tmp/lmdeploy-docs --cases eval/corpus-lmdeploy-docs.jsonl --mode hybrid

The first line of a list is "# owner/repo@commit folder/"; each further line is a path
under that folder, which becomes the tree's root.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    listing, clone, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    lines = [line.strip() for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()]
    header = lines[0].lstrip("# ").split()
    commit = header[0].partition("@")[2]
    folder = header[1].strip("/") if len(header) > 1 else ""  # "/" is the repository root
    if folder and not folder.endswith("/"):
        folder += "/"  # "docs" and "docs/" name the same folder
    paths = [folder + line for line in lines[1:]]
    archive = subprocess.run(["git", "-C", str(clone), "archive", "--format=tar", commit, *paths],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        print(f"git archive failed: {archive.stderr.decode(errors='replace').strip()}", file=sys.stderr)
        return 1
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            target = out / member.name[len(folder):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
    print(f"{len(paths)} files from {header[0]} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
