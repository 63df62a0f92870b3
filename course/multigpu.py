"""Several GPUs (多 GPU): the devices, their peers and the bytes that cross between them.

Defined for chapter 11 (notebooks/11_multi_gpu.ipynb).

On a GPU backend these helpers are thin names over numba-cuda's own devices and contexts.  On the CPU
backend, :func:`simulate` makes numba's simulator present several devices (``cuda.gpus``,
``with cuda.gpus[i]:``, ``cuda.current_context()``, ``cuda.select_device``), so that the chapter's
code runs unchanged without a GPU.  The simulated devices run nothing faster; they **count**: bytes
per link (host → gpu0, gpu0 → gpu1, ...), launches and threads per device, and they refuse what a
GPU refuses — a kernel on one device that reads an array living on another without peer access
(对等访问) enabled.  Nothing on the CPU is timed: the chapter's times are recorded two-GPU runs.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import course

__all__ = [
    "Counters",
    "can_access_peer",
    "counters",
    "current_device",
    "device_count",
    "device_of",
    "enable_peer_access",
    "reset_counters",
    "simulate",
    "simulated",
]

DEFAULT_SIMULATED = 2


@dataclass
class Counters:
    """What the simulated devices saw since the last :func:`reset_counters`."""

    link_bytes: dict = field(default_factory=collections.Counter)   # (from, to) -> bytes, "host" or "gpuN"
    link_kind: dict = field(default_factory=dict)                   # (gpuI, gpuJ) -> "peer" | "via host"
    launches: dict = field(default_factory=collections.Counter)     # device id -> kernel launches
    threads: dict = field(default_factory=collections.Counter)      # device id -> threads launched
    elements: dict = field(default_factory=collections.Counter)     # device id -> array elements its kernels got

    def table(self) -> str:
        """The counters as a short text table."""
        lines = ["link              bytes      how"]
        for (src, dst), nbytes in sorted(self.link_bytes.items()):
            how = self.link_kind.get((src, dst), "copy engine" if "host" in (src, dst) else "on the device")
            lines.append(f"{src:>5} → {dst:<5} {nbytes:>12,}  {how}")
        lines.append("device  launches  threads      elements in its kernels' arrays")
        for dev in sorted(set(self.launches) | set(self.elements)):
            lines.append(f"gpu{dev:<4} {self.launches[dev]:>8}  {self.threads[dev]:>10,}  {self.elements[dev]:>12,}")
        return "\n".join(lines)

    __str__ = table


_COUNTERS = Counters()
_SIM = {"n": 0, "stack": [], "base": 0, "peers": set()}


def simulated() -> bool:
    """True when the devices are the CPU engine's simulated ones."""
    return _SIM["n"] > 0


def counters() -> Counters:
    """The simulated devices' counters (links, launches); empty on a GPU, where nothing is counted."""
    return _COUNTERS


def reset_counters() -> None:
    """Start counting afresh."""
    global _COUNTERS
    _COUNTERS = Counters()


def device_count() -> int:
    """How many devices ``cuda.gpus`` holds (real or simulated)."""
    from numba import cuda

    return len(cuda.gpus)


def current_device() -> int:
    """The id of the device whose context is current."""
    from numba import cuda

    return int(cuda.get_current_device().id)


def device_of(array) -> int:
    """The device a device array lives on."""
    if simulated():
        return getattr(array, "_course_device", 0)
    return int(array.gpu_data.context.device.id)  # the context the allocation was made in


def can_access_peer(i: int, j: int) -> bool:
    """Whether device ``i`` can read and write device ``j``'s memory directly (over NVLink or PCIe)."""
    from numba import cuda

    if i == j:
        return False
    with cuda.gpus[i]:
        return bool(cuda.current_context().can_access_peer(j))


def enable_peer_access(i: int, j: int) -> bool:
    """Let kernels and copies on device ``i`` reach device ``j``'s memory; False when the pair cannot."""
    from numba import cuda

    if not can_access_peer(i, j):
        return False
    if simulated():
        _SIM["peers"].add((i, j))
        return True
    peer = cuda.gpus[j].get_primary_context()
    with cuda.gpus[i]:
        try:
            cuda.current_context().enable_peer_access(peer.handle)
        except Exception as exc:  # already enabled is fine
            if "ALREADY_ENABLED" not in str(exc).upper():
                raise
    return True


# --- the simulated devices ------------------------------------------------------------------------------------


def simulate(n: int = DEFAULT_SIMULATED) -> int:
    """Make the CPU backend present ``n`` devices (idempotent; returns ``n``). Refuses on a GPU backend."""
    if course.on_gpu():
        raise RuntimeError("simulate() is for the CPU backend: on a GPU, cuda.gpus lists the real devices.")
    if n < 1:
        raise ValueError(f"simulate(n): n must be at least 1, got {n}.")
    from course.engine import simulator as seam

    seam.install_devices(n, _Hooks())
    _SIM.update(n=n, stack=[], base=0, peers=set())
    reset_counters()
    return n


class _Hooks:
    """What the simulator seam asks of this layer: which device is current, and where to count."""

    @staticmethod
    def current() -> int:
        return _SIM["stack"][-1] if _SIM["stack"] else _SIM["base"]

    @staticmethod
    def push(dev: int) -> None:
        _SIM["stack"].append(dev)

    @staticmethod
    def pop() -> None:
        if _SIM["stack"]:
            _SIM["stack"].pop()

    @staticmethod
    def select(dev: int) -> None:
        if not 0 <= dev < _SIM["n"]:
            raise ValueError(f"select_device({dev}): the simulated machine has devices 0 to {_SIM['n'] - 1}.")
        _SIM["base"] = dev

    @staticmethod
    def count() -> int:
        return _SIM["n"]

    @staticmethod
    def peer_enabled(i: int, j: int) -> bool:
        return (i, j) in _SIM["peers"]

    @staticmethod
    def copy(src, dst, nbytes: int) -> None:
        """A copy of ``nbytes`` from ``src`` to ``dst`` (``None`` = host, else a device id)."""
        name = lambda d: "host" if d is None else f"gpu{d}"  # noqa: E731
        key = (name(src), name(dst))
        _COUNTERS.link_bytes[key] += int(nbytes)
        if src is not None and dst is not None and src != dst:
            _COUNTERS.link_kind[key] = "peer" if (dst, src) in _SIM["peers"] or (src, dst) in _SIM["peers"] \
                else "via host"

    @staticmethod
    def launch(dev: int, threads: int, array_devices: list, kernel_name: str) -> None:
        """A kernel launched on ``dev``; ``array_devices`` holds (argument, device, elements) of its arrays."""
        for arg, where, _size in array_devices:
            if where != dev and (dev, where) not in _SIM["peers"]:
                raise course.engine.KernelError(
                    f"kernel '{kernel_name}' launched on device {dev} gets argument '{arg}', an array that lives "
                    f"on device {where}. On a GPU that is an illegal memory access unless device {dev} has peer "
                    f"access to device {where}: call course.multigpu.enable_peer_access({dev}, {where}) first, "
                    f"or copy the array to device {dev} (dst.copy_to_device(src))."
                )
        _COUNTERS.launches[dev] += 1
        _COUNTERS.threads[dev] += int(threads)
        _COUNTERS.elements[dev] += sum(size for _arg, where, size in array_devices if where == dev)
