"""Host facts that explain serving failures: message-queue limits, /dev/shm, containers,
environment variables, the installed torch build, the Hugging Face cache.

Everything is read through `_root` (and `_environ`, `_python_paths`), so tests point the
probe at a fixture tree; the underscore keeps these out of the schema a model sees.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import tool

ENV_PREFIXES = ("NCCL_", "CUDA_VISIBLE_DEVICES", "ENABLE_V1_KVCACHE_SCHEDULER", "HF_ENDPOINT", "HF_HOME",
                "HF_HUB_OFFLINE", "VLLM_", "PYTORCH_CUDA_ALLOC_CONF", "FD_")
# Values are shown only for these known, non-secret settings (a prefix ends with "_"); every
# other matching variable is reported by name, because VLLM_API_KEY and FD_* secrets exist.
ENV_VALUES = ("NCCL_", "CUDA_VISIBLE_DEVICES", "ENABLE_V1_KVCACHE_SCHEDULER", "HF_ENDPOINT", "HF_HOME", "HF_HUB_OFFLINE",
              "PYTORCH_CUDA_ALLOC_CONF", "VLLM_USE_V1", "VLLM_ATTENTION_BACKEND", "VLLM_WORKER_MULTIPROC_METHOD",
              "VLLM_LOGGING_LEVEL", "VLLM_USE_MODELSCOPE", "VLLM_HOST_IP", "VLLM_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING",
              "FD_ENABLE_MAX_PREFILL", "FD_DEBUG")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
HIDDEN = "<set, value hidden>"
# Docker's default /dev/shm (64 MiB, `tmpfs size=65536k`): too small for multi-GPU NCCL, so doctor warns at or below it.
DOCKER_DEFAULT_SHM = 64 * 2**20


@dataclass
class TorchBuild:
    installed: bool
    version: str | None = None
    cuda: str | None = None  # None for a CPU-only build
    location: str | None = None


@dataclass
class HFCache:
    path: str
    exists: bool
    writable: bool


@dataclass
class HostReport:
    msgmax: int | None
    msgmnb: int | None
    msgmni: int | None
    shm_bytes: int | None
    in_container: bool
    container_evidence: list[str]
    env: dict[str, str]
    torch: TorchBuild
    hf_cache: HFCache
    notes: list[str] = field(default_factory=list)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


_SIZE = re.compile(r"size=(\d+)([kmg]?)", re.I)


def _shm_size(root: Path) -> int | None:
    """From the mount table (tmpfs size=65536k is Docker's 64 MB default)."""
    for mounts in (root / "proc/self/mounts", root / "proc/mounts"):
        try:
            lines = mounts.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) >= 4 and parts[1] == "/dev/shm":
                m = _SIZE.search(parts[3])
                if m:
                    return int(m.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[m.group(2).lower()]
                break
    if str(root) == "/":
        try:
            st = os.statvfs("/dev/shm")
            return st.f_blocks * st.f_frsize
        except OSError:
            return None
    return None


def _container(root: Path) -> list[str]:
    evidence = []
    for marker in (".dockerenv", "run/.containerenv"):
        if (root / marker).exists():
            evidence.append(f"/{marker} exists")
    try:
        cgroup = (root / "proc/1/cgroup").read_text()
        for word in ("docker", "kubepods", "containerd", "libpod"):
            if word in cgroup:
                evidence.append(f"/proc/1/cgroup mentions {word}")
                break
    except OSError:
        pass
    return evidence


def _torch(paths: list[str]) -> TorchBuild:
    """Read torch/version.py instead of importing torch (slow, and may not be installed)."""
    for base in paths:
        version_file = Path(base) / "torch" / "version.py"
        try:
            text = version_file.read_text()
        except OSError:
            continue
        version = re.search(r"^__version__\s*(?::[^=]+)?=\s*['\"]([^'\"]+)", text, re.M)
        cuda = re.search(r"^cuda\s*(?::[^=]+)?=\s*(?:['\"]([^'\"]+)['\"]|None)", text, re.M)
        return TorchBuild(True, version.group(1) if version else None, cuda.group(1) if cuda and cuda.group(1) else None, str(version_file.parent))
    return TorchBuild(False)


def _hf_cache(root: Path, env: dict[str, str]) -> HFCache:
    home = env.get("HF_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache" / "huggingface")
    path = root / home.lstrip("/") if str(root) != "/" else Path(home)
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return HFCache(str(path), path.exists(), os.access(probe, os.W_OK))


def reported_env(env: dict[str, str]) -> dict[str, str]:
    """The serving-related variables: names always, values only for known non-secret ones
    (URLs without their user:password part); anything named like a secret is hidden."""
    out: dict[str, str] = {}
    for name, value in sorted(env.items()):
        if not name.startswith(ENV_PREFIXES):
            continue
        upper = name.upper()
        shown = any(upper == v or (v.endswith("_") and upper.startswith(v)) for v in ENV_VALUES)
        if any(word in upper for word in SECRET_WORDS) or not shown:
            out[name] = HIDDEN
        else:
            out[name] = _without_userinfo(str(value))
    return out


def _without_userinfo(value: str) -> str:
    """HF_ENDPOINT=https://user:pass@mirror/ shows as https://mirror/."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@", r"\1", value)


@tool(reads_host=True)
def host_status(_root: str = "/", _environ: dict | None = None, _python_paths: list | None = None) -> HostReport:
    """System V message-queue limits (kernel.msgmax/msgmnb/msgmni, as `ipcs -l` shows), /dev/shm size, whether this runs in a container, NCCL/CUDA/Hugging Face environment variables, whether the installed torch is a CUDA build, and whether the Hugging Face cache is writable."""
    import sys

    root = Path(_root)
    env = dict(os.environ if _environ is None else _environ)
    paths = _python_paths if _python_paths is not None else [p for p in sys.path if p and os.path.isdir(p)]
    kernel = root / "proc/sys/kernel"
    report = HostReport(
        msgmax=_read_int(kernel / "msgmax"),
        msgmnb=_read_int(kernel / "msgmnb"),
        msgmni=_read_int(kernel / "msgmni"),
        shm_bytes=_shm_size(root),
        in_container=False,
        container_evidence=_container(root),
        env=reported_env(env),
        torch=_torch(paths),
        hf_cache=_hf_cache(root, env),
    )
    report.in_container = bool(report.container_evidence)
    if _python_paths is None:
        report.notes.append(f"torch was looked up in the assistant's own Python ({sys.executable}); run doctor with the serving environment's Python to check that one")
    return report
