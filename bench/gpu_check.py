"""Live check of the GPU probes on a machine with an NVIDIA GPU: run it there, read the figures.

Unit tests cover the probes with no driver (what CI and most laptops have) and `doctor` with
hand-made reports; only a real card shows whether NVML's answers reach the user right. This
script probes the idle card, then loads it from a child process (a large allocation and a
matmul loop, through torch) and probes again, so that what `gpu_status`, `doctor` and the
HTTP tool endpoint say can be compared with what was done to the card:

    python bench/gpu_check.py            # exit 0: every check held; 1: one failed; 2: no GPU here

It needs torch with CUDA on that machine for the load; without it the loaded checks are skipped.
It prints figures and PASS/FAIL lines, never timings to assert on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.tools.gpu import GPUReport, gpu_status  # noqa: E402

FAILED: list[str] = []

# The child fills the card to this share, past doctor's 90% warning line.
LOAD_SHARE = 0.93

CHILD = r"""
import sys, time, torch
target = int(float(sys.argv[1]) * 2**20)
free, total = torch.cuda.mem_get_info()
hold = torch.empty(max(target - (total - free) - 2**30, 0), dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("ready", flush=True)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
"""


def check(ok: bool, what: str, detail: str = "") -> bool:
    print(("PASS " if ok else "FAIL ") + what + (f": {detail}" if detail else ""), flush=True)
    if not ok:
        FAILED.append(what)
    return ok


def show(report: GPUReport, label: str) -> None:
    print(f"--- gpu_status ({label}): driver {report.driver_version}, CUDA {report.cuda_version}")
    for g in report.gpus:
        procs = ", ".join(f"pid {p.pid} {p.used_mib} MiB" for p in g.processes) or "none listed"
        print(f"    GPU {g.index} {g.name}: {g.memory_used_mib:.0f}/{g.memory_total_mib:.0f} MiB ({g.memory_used_pct:.1f}%), "
              f"util {g.utilization_pct}%, {g.temperature_c} C, ECC uncorrected {g.ecc_uncorrected}; processes: {procs}")
    for link in report.links:
        print(f"    link {link.gpu_a}-{link.gpu_b}: {link.topology}, {link.nvlinks} NVLinks, P2P {link.p2p_read}")


def doctor_gpu_lines() -> list[tuple[str, str, str | None]]:
    from assistant.config import load_settings
    from assistant.ops.doctor import run_doctor

    findings = run_doctor(load_settings())
    for f in findings:
        print(f"    doctor {f.severity:8} {f.source:6} {f.message}" + (f"  [{f.article}]" if f.article else ""))
    return [(f.severity, f.source, f.article) for f in findings]


def cli_tool_output() -> dict:
    out = subprocess.run([sys.executable, "-c", "from assistant.interfaces.commands import main; main()", "tool", "gpu_status"],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    if out.returncode:
        print(out.stderr[-2000:])
    return json.loads(out.stdout) if out.returncode == 0 else {}


def http_tool_output() -> tuple[int, dict]:
    """POST /v1/tools/gpu_status on a real server bound to 127.0.0.1 (the route a portal uses).
    Through the standard library: httpx is only in the test extra, and a GPU machine has what
    `pip install .` gave it."""
    import http.client
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "assistant.interfaces.http.app:app_factory",
                               "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
                              cwd=Path(__file__).resolve().parent.parent)
    try:
        for _ in range(120):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                conn.close()
                break
            except OSError:
                time.sleep(0.5)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", "/v1/tools/gpu_status", body=b"{}", headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        status, body = response.status, json.loads(response.read() or b"{}")
        conn.close()
        return status, body
    finally:
        server.terminate()
        server.wait(timeout=30)


def idle_checks() -> GPUReport:
    idle = gpu_status()
    if not idle.available:
        print(f"no GPU here: {idle.reason}")
        sys.exit(2)
    show(idle, "idle")
    check(bool(idle.driver_version) and bool(idle.cuda_version), "driver and CUDA versions read", f"{idle.driver_version} / {idle.cuda_version}")
    check(all(g.memory_total_mib > 1024 and g.name not in ("", "?") for g in idle.gpus), "every GPU has a name and its memory")
    check(json.loads(json.dumps(asdict(idle))) == asdict(idle), "the report is plain JSON")
    return idle


def loaded_checks(idle: GPUReport) -> None:
    g0 = idle.gpus[0]
    target_mib = g0.memory_total_mib * LOAD_SHARE
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(target_mib), "90"], stdout=subprocess.PIPE, text=True)
    try:
        if not check(child.stdout.readline().strip() == "ready", "torch child filled the card"):
            return
        time.sleep(3)
        samples = [gpu_status() for _ in range(5) if not time.sleep(0.5)]
        busy = samples[-1]
        show(busy, f"loaded to {LOAD_SHARE:.0%} by pid {child.pid}")
        b0 = busy.gpus[0]
        check(b0.memory_used_mib - g0.memory_used_mib > 0.5 * g0.memory_total_mib, "memory use rose with the child's allocation",
              f"{g0.memory_used_mib:.0f} -> {b0.memory_used_mib:.0f} MiB")
        util = max(s.gpus[0].utilization_pct or 0 for s in samples)
        check(util > 0, "utilization seen while the matmul loop runs", f"max {util}% over {len(samples)} samples")
        pids = [p.pid for p in b0.processes]
        # In a container or sandbox NVML may report host pids or none at all: print what it saw.
        print(f"    child pid {child.pid}; NVML lists {pids or 'no processes'}")
        check(any(p.used_mib and p.used_mib > 0.5 * g0.memory_total_mib for p in b0.processes) or not pids,
              "a listed process carries the child's memory (or none are listed)")
        found = doctor_gpu_lines()
        check(("warning", "gpu", "vllm-cuda-oom") in found, "doctor warns of little headroom, linked to the OOM article")
        check(not any(src == "host" and a == "vllm-torch-not-compiled-with-cuda" for s, src, a in found),
              "doctor does not call this CUDA torch CPU-only")
        cli = cli_tool_output()
        check(bool(cli.get("gpus")) and cli["gpus"][0]["memory_used_pct"] > 85, "`assistant tool gpu_status` prints the loaded card",
              f"{cli.get('gpus', [{}])[0].get('memory_used_pct')}%")
        status, body = http_tool_output()
        print(f"    POST /v1/tools/gpu_status -> {status}: {json.dumps(body)[:300]}")
        http_gpus = body.get("result", {}).get("gpus", []) if status == 200 else []
        same = [(g["name"], g["memory_total_mib"]) for g in http_gpus] == [(g["name"], g["memory_total_mib"]) for g in cli.get("gpus", [])]
        check(status == 200 and bool(http_gpus) and same, "HTTP tool endpoint returns the card the CLI reported", str(status))
    finally:
        child.kill()
        child.wait()


def main() -> None:
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}")
    idle = idle_checks()
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        loaded_checks(idle)
        time.sleep(2)
        after = gpu_status()
        check(after.gpus[0].memory_used_mib < idle.gpus[0].memory_used_mib + 2048, "memory returns after the child exits",
              f"{after.gpus[0].memory_used_mib:.0f} MiB")
    else:
        print("SKIP loaded checks: no torch with CUDA here")
    print("gpu_check:", "FAIL " + "; ".join(FAILED) if FAILED else "all checks held")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
