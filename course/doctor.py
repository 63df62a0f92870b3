"""``python -m course doctor``: what this machine runs the course on, and what that backend cannot show."""

from __future__ import annotations

import importlib.metadata as md
import platform

from course import backend


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"


def _nvidia_driver_version() -> str:
    """The kernel driver's version (e.g. 580.159.04), as nvidia-smi shows it."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            for word in f.readline().split():
                if word.count(".") >= 1 and word.replace(".", "").isdigit():
                    return word
    except OSError:
        pass
    return "unknown"


def device_facts() -> dict:
    """Facts about the device kernels run on; on a CPU backend, the simulated device."""
    name = backend.choose()
    facts = {"backend": name}
    if name == "gpu":
        from numba import cuda

        dev = cuda.get_current_device()
        drv = cuda.cudadrv.driver.driver.get_version()
        facts.update(
            device=dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
            compute_capability=".".join(map(str, dev.compute_capability)),
            sm_count=dev.MULTIPROCESSOR_COUNT,
            max_threads_per_block=dev.MAX_THREADS_PER_BLOCK,
            max_grid_dim_x=dev.MAX_GRID_DIM_X,
            shared_memory_per_block=dev.MAX_SHARED_MEMORY_PER_BLOCK,
            warp_size=dev.WARP_SIZE,
            driver=_nvidia_driver_version(),
            cuda_driver_api=".".join(map(str, drv)),
        )
    else:
        from course import device

        facts.update(device.simulated_facts())
    return facts


def report() -> str:
    """The doctor's report as text."""
    facts = device_facts()
    lines = ["course doctor", "-------------"]
    for key, value in facts.items():
        lines.append(f"{key:24} {value}")
    for dist in ("numba", "numba-cuda", "numpy", "python"):
        value = platform.python_version() if dist == "python" else _version(dist)
        lines.append(f"{dist:24} {value}")
    missing = backend.LIMITATIONS[facts["backend"]]
    lines.append("")
    if missing:
        lines.append("This backend cannot show:")
        lines += [f"  - {item}" for item in missing]
    else:
        lines.append("This backend shows everything the course measures (real timing, real counters).")
    if facts["backend"] != "gpu":
        lines.append("")
        lines.append("No GPU found, so kernels run on the CPU. Set COURSE_BACKEND=gpu|cpu|numba-sim to override.")
    return "\n".join(lines)


def main() -> int:
    print(report())
    return 0
