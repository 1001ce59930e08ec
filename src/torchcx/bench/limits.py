"""The machine's limits, measured in the same process as the workloads, and what the machine is.

* Copy bandwidth: ``dst.copy_(src)`` of float32 buffers far larger than the
  last-level cache, counted as STREAM counts its "copy" (bytes read plus bytes
  written; the write-allocate traffic of the destination is not counted).
* GEMM rate: a square float32 ``torch.mm`` (2 n^3 flops), the vendor BLAS at
  its best case.

Both are medians of repeated runs after a warm-up, with the same number of
threads as the workloads, so a workload's roofline time (its compulsory
bytes over the bandwidth, or its flops over the GEMM rate) is a bound it
could reach on this machine and this software.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from .modes import synchronize


@dataclass
class Limits:
    copy_gb_per_s: float
    gemm_gflop_per_s: float
    copy_bytes: int
    gemm_n: int

    def bound_ms(self, nbytes: float, flops: float) -> tuple[float, str]:
        """The roofline time of a call moving ``nbytes`` and computing ``flops``, and which bound it is."""
        memory = nbytes / (self.copy_gb_per_s * 1e9) * 1e3
        compute = flops / (self.gemm_gflop_per_s * 1e9) * 1e3
        return (memory, "memory") if memory >= compute else (compute, "GEMM")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _median_seconds(fn: Callable[[], object], device: torch.device, repeat: int) -> float:
    fn()
    synchronize(device)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(device: torch.device, *, quick: bool = False) -> Limits:
    """Copy bandwidth and float32 GEMM rate on ``device``."""
    copy_bytes = (64 if quick else 256) << 20
    src = torch.ones(copy_bytes // 4, device=device)
    dst = torch.empty_like(src)
    seconds = _median_seconds(lambda: dst.copy_(src), device, 5 if quick else 15)
    copy_rate = 2 * copy_bytes / seconds / 1e9

    n = 1024 if quick else 2048
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, generator=g)
    b = torch.randn(n, n, device=device, generator=g)
    seconds = _median_seconds(lambda: torch.mm(a, b), device, 5 if quick else 10)
    return Limits(copy_rate, 2 * n**3 / seconds / 1e9, copy_bytes, n)


def describe_machine(device: torch.device) -> dict[str, Any]:
    """The processor, cores, memory and software versions, for the record."""
    from .modes import jax_version

    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "torch_threads": torch.get_num_threads(),
        # the cores this process may run on (``--threads`` confines it; JAX uses them all)
        "cores_used": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        # other processes' load makes timings noisy: record it with them
        "load_average_1min": load_average(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchcx": _torchcx_version(),
        "jax": jax_version(),
        "device": str(device),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def _torchcx_version() -> str:
    """torchcx's version and, in a git checkout, its commit (marked dirty with uncommitted changes)."""
    import torchcx

    version = torchcx.__version__
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(torchcx.__file__))))
    if not os.path.exists(os.path.join(root, ".git")):  # installed, not a checkout (src/torchcx)
        return version
    try:
        out = subprocess.run(
            ["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True, text=True, check=True
        )
        return f"{version} ({out.stdout.strip()})"
    except (OSError, subprocess.CalledProcessError):
        return version


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        match = re.search(r"^Model name:\s*(.+)$", out, re.MULTILINE)
        if match:
            return match.group(1).strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])  # "MemTotal:  24684084 kB"
        return round(kib / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return None
