"""Formats that wiki and notebook exports hold besides pages: a Notion database is only a CSV
file, and ML teams keep runbooks as Jupyter notebooks. Both were skipped as "unknown type"
(trial), so an alert threshold that only the CSV held was refused. Each becomes markdown the
chunker already handles: a CSV a table (split in row groups under its header), a notebook its
markdown cells and code cells in order, outputs left out (they are results, not instructions)."""

from __future__ import annotations

import csv
import io
import json
import re

# Notion appends a 32-hex id to every exported name: "Alerts 3c4d5e6f708192a3b4c5d6e7f8091a2b".
_NOTION_ID = re.compile(r"\s+[0-9a-f]{32}$")


def export_title(stem: str) -> str:
    return _NOTION_ID.sub("", stem).strip() or stem


MAX_COLUMNS = 40


def csv_to_markdown(text: str, stem: str) -> tuple[str, str]:
    """(title, markdown) of a CSV file: its name as the title, its rows as a pipe table."""
    title = export_title(stem)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    limit = csv.field_size_limit(max(len(text), 131072))  # a long cell (a runbook step in a Notion database) is text too
    try:
        rows = [row for row in csv.reader(io.StringIO(text), dialect) if any(cell.strip() for cell in row)]
    except csv.Error:  # a stray quote or NUL: the rows as lines, unsplit
        rows = [[line] for line in text.splitlines() if line.strip()]
    finally:
        csv.field_size_limit(limit)
    if not rows:
        return title, f"# {title}\n"
    # Columns empty in every row are no columns: a spreadsheet's stray cell far to the right made a
    # 450 kB CSV 3.6 GB of padded markdown, then 42 s of scanning (reviews). One pass over the
    # cells finds the used ones; past MAX_COLUMNS, the rest joins the last.
    used = sorted({i for row in rows for i, cell in enumerate(row) if cell.strip()})
    rows = [[row[i] if i < len(row) else "" for i in used] for row in rows]
    rows = [row[:MAX_COLUMNS - 1] + [" ".join(row[MAX_COLUMNS - 1:])] if len(row) > MAX_COLUMNS else row for row in rows]
    width = max(1, min(len(used), MAX_COLUMNS))

    def line(row: list[str]) -> str:
        cells = [" ".join(cell.split()).replace("|", "\\|") for cell in row] + [""] * (width - len(row))
        return "| " + " | ".join(cells) + " |"

    table = [line(rows[0]), "|" + "---|" * width, *(line(row) for row in rows[1:])]
    return title, f"# {title}\n\n" + "\n".join(table) + "\n"


def notebook_to_markdown(text: str) -> str:
    """A notebook's markdown and code cells as markdown; the text as it is when it is no notebook."""
    try:
        data = json.loads(text)
        cells = data["cells"]
        language = str(((data.get("metadata") or {}).get("kernelspec") or {}).get("language") or "python")
    except (ValueError, KeyError, TypeError, AttributeError):
        return text
    parts: list[str] = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = "".join(part for part in source if isinstance(part, str)) if isinstance(source, list) else str(source or "")
        if not source.strip():
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(source.strip())
        elif cell.get("cell_type") == "code":
            parts.append(f"```{language}\n{source.rstrip()}\n```")
    return "\n\n".join(parts) + "\n"
