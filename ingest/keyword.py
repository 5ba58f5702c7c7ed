"""The BM25 keyword index: weights computed by bm25s at ingest, summed with numpy per query.

bm25s precomputes every (term, chunk) BM25 weight into a sparse matrix; scoring a query is
then a sum of a few matrix columns. Persisting that matrix as plain arrays lets the query
path skip importing bm25s (which costs ~25 ms per process via importlib.metadata) while
keeping bm25s's scoring exactly (a test checks the two agree).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np


@dataclass
class KeywordIndex:
    vocab: dict[str, int]
    data: np.ndarray  # BM25 weights, CSC over terms
    indices: np.ndarray  # chunk ids
    indptr: np.ndarray  # term id → slice of data/indices
    num_docs: int

    @classmethod
    def build(cls, corpus: list[list[str]], k1: float = 1.2, b: float = 0.75) -> "KeywordIndex":
        import bm25s

        if not corpus:
            return cls({}, np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(1, np.int64), 0)
        retriever = bm25s.BM25(k1=k1, b=b)
        # Token ids in sorted order: bm25s numbers tokens as a set yields them, which differs
        # between processes, so an unchanged KB rebuilt to different bytes.
        docs = [tokens or ["∅"] for tokens in corpus]
        vocab = {token: i for i, token in enumerate(sorted({t for doc in docs for t in doc}))}
        retriever.index(([[vocab[t] for t in doc] for doc in docs], vocab), show_progress=False)
        s = retriever.scores
        columns = len(s["indptr"]) - 1
        return cls(
            # bm25s adds an empty-string token that has no column; it can never match.
            {str(k): int(v) for k, v in retriever.vocab_dict.items() if k and int(v) < columns},
            np.asarray(s["data"], dtype=np.float32),
            np.asarray(s["indices"], dtype=np.int32),
            np.asarray(s["indptr"], dtype=np.int64),
            int(s["num_docs"]),
        )

    def save(self, directory: Path) -> None:
        # Plain .npy files: reading an .npz imports zipfile, 5 ms on every cold start.
        for name in ("data", "indices", "indptr"):
            np.save(directory / f"bm25_{name}.npy", getattr(self, name))
        meta = {"num_docs": self.num_docs, "vocab": self.vocab}
        (directory / "bm25.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, read: Callable[[str], bytes] | None = None) -> "KeywordIndex":
        """Load from directory; `read(name)` returns a file's bytes (the index verifies them)."""
        import io

        read = read or (lambda name: (directory / name).read_bytes())
        data, indices, indptr = (np.load(io.BytesIO(read(f"bm25_{name}.npy")), allow_pickle=False) for name in ("data", "indices", "indptr"))
        meta = json.loads(read("bm25.json").decode("utf-8"))
        vocab, num_docs = meta["vocab"], int(meta["num_docs"])
        if len(indptr) < max(vocab.values(), default=-1) + 2:
            raise ValueError("bm25 vocabulary and matrix disagree")
        return cls(vocab, data, indices, indptr, num_docs)

    def scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every chunk for the query tokens (repeated tokens count again)."""
        out = np.zeros(self.num_docs, dtype=np.float32)
        for token in tokens:
            tid = self.vocab.get(token)
            if tid is None:
                continue
            start, end = self.indptr[tid], self.indptr[tid + 1]
            out[self.indices[start:end]] += self.data[start:end]
        return out
