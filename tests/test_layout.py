"""The layers point one way: ingest and oncall_common know nothing of assistant, and the
core knows nothing of its adapters (interfaces) or of ops. Read from the source, so a stray
import fails here rather than in a review."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imports(path: Path, root: Path = ROOT) -> set[str]:
    """Absolute module names a file imports (relative imports resolved from its package)."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def offenders(folder: str, forbidden: tuple[str, ...], skip: tuple[str, ...] = (), root: Path = ROOT) -> list[str]:
    bad = []
    for path in sorted((root / folder).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(rel.startswith(s) for s in skip):
            continue
        for module in sorted(imports(path, root)):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                bad.append(f"{rel} imports {module}")
    return bad


def test_ingest_and_common_import_nothing_from_assistant():
    assert offenders("ingest", ("assistant",)) == []
    assert offenders("oncall_common", ("assistant", "ingest")) == []


def test_the_core_imports_no_adapter_and_no_ops():
    assert offenders("assistant", ("assistant.interfaces", "assistant.ops"),
                     skip=("assistant/interfaces/", "assistant/ops/")) == []


def test_the_finder_sees_forbidden_imports(tmp_path):
    """The checks above must be able to fail: planted imports, absolute and relative, are reported."""
    (tmp_path / "ingest").mkdir()
    (tmp_path / "ingest" / "probe.py").write_text("import os\nfrom assistant.answer import Answer\n", encoding="utf-8")
    (tmp_path / "assistant").mkdir()
    (tmp_path / "assistant" / "core.py").write_text("from .interfaces import cli\n", encoding="utf-8")
    assert offenders("ingest", ("assistant",), root=tmp_path) == ["ingest/probe.py imports assistant.answer",
                                                                  "ingest/probe.py imports assistant.answer.Answer"]
    assert offenders("assistant", ("assistant.interfaces",), root=tmp_path) == ["assistant/core.py imports assistant.interfaces",
                                                                              "assistant/core.py imports assistant.interfaces.cli"]


def test_no_function_is_over_the_complexity_limit():
    """ruff's McCabe check with the limit in pyproject.toml (15): the same check CI runs."""
    import shutil
    import subprocess
    import sys

    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        import pytest

        pytest.skip("ruff is not installed (pip install -e '.[test]' brings it)")
    proc = subprocess.run([ruff, "check", "--select", "C901", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_bench_compiles_every_package_a_cold_ask_imports():
    """`assistant bench` compiles our bytecode before timing a cold `ask` against the
    floor; a package it missed is compiled from source in every timed run. After the move
    to assistant/ops it compiled only assistant/ops, and the ratio read 1.7–2.0× for it."""
    import subprocess
    import sys

    import compileall

    from assistant.ops import bench

    probe = ("import sys; from assistant.interfaces.cli import ask_main; import assistant.answer; "
             "print('\\n'.join(m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', None)))")
    files = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    ours = [Path(f).resolve() for f in files
            if Path(f).resolve().is_relative_to(ROOT) and "site-packages" not in Path(f).resolve().parts]  # a venv in the checkout
    compiled: list[Path] = []
    real = compileall.compile_dir
    compileall.compile_dir = lambda folder, **_kw: compiled.append(Path(folder).resolve()) or True
    try:
        bench._compile_bytecode()
    finally:
        compileall.compile_dir = real
    dirs = compiled
    assert ours, "the probe imported nothing from the checkout"
    missed = sorted({str(f.relative_to(ROOT)) for f in ours if not any(f.is_relative_to(d) for d in dirs)})
    assert not missed, f"bench would not compile: {missed[:5]}"
