"""Assemble eval/real.jsonl from the researchers' part files and split it once, by source.

Run once over the part files: `python eval/build_real.py PART.jsonl … > eval/real.jsonl`. The split
is a hash of the normalised source (owner/repo#N or the page address), so two cases from
one thread always land on the same side and the split does not depend on file order or
on which cases were added: re-running it over the same sources gives the same split. Tune
on `dev`; `test` is for the figures reported in the README.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys

DEV_SHARE = 60  # percent of sources in dev


def normalise_source(source: str) -> str:
    m = re.match(r"https?://github\.com/([^/]+/[^/]+)/(?:issues|pull|discussions)/(\d+)", source.strip())
    if m:
        return f"{m.group(1)}#{m.group(2)}".lower()
    return source.strip().rstrip("/").lower()


def split_for(source: str) -> str:
    digest = hashlib.sha1(normalise_source(source).encode("utf-8")).hexdigest()
    return "dev" if int(digest[:8], 16) % 100 < DEV_SHARE else "test"


def main(paths: list[str]) -> None:
    seen: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                case = json.loads(line)
                if case["id"] in seen:
                    raise SystemExit(f"duplicate id {case['id']} in {path}")
                seen.add(case["id"])
                case["split"] = split_for(case["source"])
                print(json.dumps(case, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
