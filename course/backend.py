"""Choose where kernels run: the real GPU when numba-cuda finds one, the course's CPU engine otherwise.

This is the one place that decides.  It must run before ``numba`` is first imported, because
numba reads ``NUMBA_ENABLE_CUDASIM`` once, at import; ``import course`` calls :func:`choose`.

``COURSE_BACKEND`` overrides the choice:

- ``gpu``        a real CUDA device through numba-cuda;
- ``cpu``        numba's CUDA simulator driven by the course's engine (fast, warp-aware, deterministic);
- ``numba-sim``  numba's CUDA simulator exactly as numba-cuda ships it (slow; for comparison).
"""

from __future__ import annotations

import ctypes
import os
import sys

BACKENDS = ("gpu", "cpu", "numba-sim")

_chosen: str | None = None


class BackendError(RuntimeError):
    """The requested backend cannot be used; the message says why and what to do."""


def gpu_count() -> int:
    """Number of CUDA devices the driver reports, found without importing numba (0 if no driver)."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.cuInit(0) != 0:
                return 0
            count = ctypes.c_int(0)
            if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return 0
            return count.value
        except AttributeError:
            return 0
    return 0


def _simulator_already_loaded() -> bool | None:
    """True/False if numba.cuda is already imported in simulator/hardware mode, None if not imported."""
    mod = sys.modules.get("numba.cuda")
    if mod is None:
        return None
    jit = getattr(mod, "jit", None)
    return getattr(jit, "__module__", "").startswith("numba.cuda.simulator")


def choose() -> str:
    """Decide the backend once per process, set numba up for it, and return its name."""
    global _chosen
    if _chosen is not None:
        return _chosen
    requested = os.environ.get("COURSE_BACKEND", "").strip().lower()
    if requested and requested not in BACKENDS:
        raise BackendError(
            f"COURSE_BACKEND={requested!r} is not a backend this course knows. "
            f"Use one of {', '.join(BACKENDS)}, or unset it to let the course choose."
        )
    if not requested:
        requested = "gpu" if gpu_count() > 0 else "cpu"
    elif requested == "gpu" and gpu_count() == 0:
        raise BackendError(
            "COURSE_BACKEND=gpu, but no CUDA device was found (no driver, or the driver sees no GPU). "
            "Unset COURSE_BACKEND to run on the CPU engine instead."
        )
    want_sim = requested != "gpu"
    loaded = _simulator_already_loaded()
    if loaded is not None and loaded != want_sim:
        raise BackendError(
            "numba.cuda was imported before the course chose its backend, in the other mode "
            f"({'simulator' if loaded else 'hardware'}). Restart the kernel and run `import course` "
            "before `from numba import cuda`."
        )
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if want_sim else "0"
    # the chapters launch small grids on purpose (a few blocks to trace or check); numba's "grid size N will
    # likely result in GPU under-utilization" on every such launch teaches nothing (chapter 06 teaches occupancy)
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    if "numba.core.config" in sys.modules:
        sys.modules["numba.core.config"].reload_config()
    _chosen = requested
    if requested == "cpu":
        from course import engine

        engine.install()
    return requested


def current() -> str:
    """The backend in use (choosing it if nobody has yet)."""
    return choose()


def on_gpu() -> bool:
    """True when kernels run on a real GPU, so that timings mean something."""
    return choose() == "gpu"


def pick(*, cpu, gpu):
    """A problem size (or any setting) for this backend: small on the CPU, large on a GPU."""
    return gpu if on_gpu() else cpu


LIMITATIONS = {
    "gpu": [],
    "cpu": [
        "real timing: CPU wall time says nothing about GPU speed; recorded H200 figures are shown instead",
        "hardware counters: the course's tracer counts sectors and wavefronts instead of Nsight Compute",
        "occupancy and latency: shown from recorded H200 runs and from the occupancy model",
    ],
    "numba-sim": [
        "real timing, hardware counters, occupancy (as on the cpu backend)",
        "warp intrinsics (shfl_*, ballot, activemask, syncwarp): numba's simulator lacks them",
        "speed: one OS thread per CUDA thread; keep problems tiny",
    ],
}
