"""The chunk record shared by ingest (which makes chunks) and the query path (which reads
them). Kept apart from chunking.py so loading an index does not import the chunker."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    lang: str
    title: str  # heading path, "Article > Section"
    section: str  # the innermost heading
    kind: str  # symptoms | signatures | causes | checks | fixes | questions | question | other
    source: str
    text: str
    hash: str
