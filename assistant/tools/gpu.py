"""Live GPU facts through NVML (nvidia-ml-py): what `nvidia-smi` and `nvidia-smi topo -m` show.

Without a driver or a GPU the probe returns a structured "no NVIDIA driver found" report:
a machine without GPUs is a fact to report, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import tool

# nvmlDeviceGetTopologyCommonAncestor levels, named as `nvidia-smi topo -m` prints them.
TOPOLOGY = {0: "SAME", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


@dataclass
class GPUProcess:
    pid: int
    used_mib: float | None


@dataclass
class GPUInfo:
    index: int
    name: str
    memory_used_mib: float
    memory_total_mib: float
    memory_used_pct: float
    utilization_pct: int | None
    temperature_c: int | None
    ecc_uncorrected: int | None
    processes: list[GPUProcess] = field(default_factory=list)


@dataclass
class GPULink:
    gpu_a: int
    gpu_b: int
    topology: str  # SAME/PIX/PXB/PHB/NODE/SYS, or NV<n> when NVLink connects them
    nvlinks: int
    p2p_read: str  # "OK" or the reason peer-to-peer is unavailable


@dataclass
class GPUReport:
    available: bool
    reason: str | None
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[GPUInfo] = field(default_factory=list)
    links: list[GPULink] = field(default_factory=list)


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _try(fn, *args, default=None):
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: the field is simply unknown
        return default


@tool(reads_host=True)
def gpu_status() -> GPUReport:
    """Driver and CUDA version, each GPU's memory, utilisation, temperature, ECC errors and processes, and the link (NVLink/PCIe topology, P2P) between every pair of GPUs."""
    try:
        import pynvml
    except ImportError:
        return GPUReport(False, "nvidia-ml-py is not installed")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return GPUReport(False, f"no NVIDIA driver found ({_s(exc)})")
    try:
        report = GPUReport(True, None)
        report.driver_version = _try(lambda: _s(pynvml.nvmlSystemGetDriverVersion()))
        cuda = _try(pynvml.nvmlSystemGetCudaDriverVersion)
        report.cuda_version = f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            report.available, report.reason = False, "NVIDIA driver present but no GPU visible"
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        for i, h in enumerate(handles):
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            util = _try(pynvml.nvmlDeviceGetUtilizationRates, h)
            procs = _try(pynvml.nvmlDeviceGetComputeRunningProcesses, h, default=[]) or []
            report.gpus.append(GPUInfo(
                index=i,
                name=_s(_try(pynvml.nvmlDeviceGetName, h, default="?")),
                memory_used_mib=round(mem.used / 2**20, 1),
                memory_total_mib=round(mem.total / 2**20, 1),
                memory_used_pct=round(100 * mem.used / mem.total, 1) if mem.total else 0.0,
                utilization_pct=getattr(util, "gpu", None),
                temperature_c=_try(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
                ecc_uncorrected=_try(pynvml.nvmlDeviceGetTotalEccErrors, h, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC),
                processes=[GPUProcess(p.pid, round(p.usedGpuMemory / 2**20, 1) if getattr(p, "usedGpuMemory", None) else None) for p in procs],
            ))
        buses = [_s(_try(lambda h=h: pynvml.nvmlDeviceGetPciInfo(h).busId, default="")) for h in handles]
        for a in range(count):
            for b in range(a + 1, count):
                nvlinks = 0
                for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
                    if _try(pynvml.nvmlDeviceGetNvLinkState, handles[a], link) != 1:
                        continue
                    remote = _try(lambda l=link: _s(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(handles[a], l).busId))
                    if remote and buses[b] and remote.lower() == buses[b].lower():
                        nvlinks += 1
                level = _try(pynvml.nvmlDeviceGetTopologyCommonAncestor, handles[a], handles[b])
                topo = f"NV{nvlinks}" if nvlinks else TOPOLOGY.get(level, str(level))
                p2p = _try(pynvml.nvmlDeviceGetP2PStatus, handles[a], handles[b], pynvml.NVML_P2P_CAPS_INDEX_READ)
                p2p_text = "OK" if p2p == pynvml.NVML_P2P_STATUS_OK else ("unknown" if p2p is None else f"not supported (status {p2p})")
                report.links.append(GPULink(a, b, topo, nvlinks, p2p_text))
        return report
    finally:
        _try(pynvml.nvmlShutdown)
