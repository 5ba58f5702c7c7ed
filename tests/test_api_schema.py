"""Schemathesis: generated requests against every operation in the OpenAPI schema; no 5xx.

Runs schemathesis's own CLI against the app served on 127.0.0.1 (its pytest plugin does
not support pytest 9)."""

import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from assistant.interfaces.http import create_app

from .live_server import LiveServer


@pytest.mark.skipif(shutil.which("schemathesis") is None and not shutil.which("st"), reason="schemathesis is not installed")
def test_no_server_errors_on_generated_requests(bundled_settings, bundled_kb, tmp_path):
    app = create_app(replace(bundled_settings, feedback_db=str(tmp_path / "f.sqlite3"), tool_timeout=3.0))
    with LiveServer(app) as live:
        cli = [sys.executable, "-c", "import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())"]
        proc = subprocess.run([*cli, "run", f"{live.url}/openapi.json", "--checks", "not_a_server_error",
                               "--max-examples", "20", "--workers", "1", "--seed", "1"], capture_output=True, text=True, timeout=600)
    summary = proc.stdout[-3000:]
    assert proc.returncode == 0, summary
    assert "passed" in summary and "failed" not in summary.split("Test cases:")[-1]
