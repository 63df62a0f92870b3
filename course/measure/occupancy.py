"""Occupancy (占用率): how many warps an SM holds for a kernel, from its real resource use.

An SM runs as many blocks at once as its four budgets allow, and the smallest budget wins:

- **warp slots**: at most 64 warps (2048 threads) per SM on compute capability 9.0;
- **block slots**: at most 32 blocks per SM;
- **registers**: 65 536 per SM, split over 4 sub-partitions (one per warp scheduler) of 16 384;
  a warp gets ``regs_per_thread × 32`` registers rounded up to 256, and lives in one sub-partition;
- **shared memory**: 228 KB per SM; a block takes its static + dynamic shared memory plus 1 KB the
  driver reserves, rounded up to 128 bytes.

``occupancy(regs_per_thread, threads_per_block, shared_per_block)`` computes all four limits with
the rules of NVIDIA's occupancy calculator for compute capability 9.0 (the H200) and says which
budget binds.  ``resources(kernel)`` reads what the compiler gave a kernel (registers per thread,
static shared memory) — on a GPU from numba's compiled kernel, on the CPU from the figures the GPU
run recorded in ``data/measurements/occupancy.json`` — and ``driver_blocks_per_sm`` asks the CUDA
driver (``cuOccupancyMaxActiveBlocksPerMultiprocessor``) on a GPU, so the model can be checked
against the driver on every kernel of the course (``scripts/gpu/measure_occupancy.py``).

Defined for chapter 06 (notebooks/06_occupancy_latency.ipynb).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

import course  # (chooses the backend before numba is imported)
from course import device as _dev
from course.measure import measurements

MEASUREMENTS = pathlib.Path(__file__).resolve().parents[2] / "data" / "measurements"
RECORDED = MEASUREMENTS / "occupancy.json"


@dataclass(frozen=True)
class DeviceLimits:
    """The per-SM budgets of one GPU, as the occupancy calculator needs them."""

    name: str
    compute_capability: tuple
    sm_count: int
    warp_size: int = _dev.WARP_SIZE
    max_threads_per_block: int = _dev.MAX_THREADS_PER_BLOCK
    max_warps_per_sm: int = _dev.MAX_WARPS_PER_SM
    max_blocks_per_sm: int = _dev.MAX_BLOCKS_PER_SM
    regs_per_sm: int = _dev.REGS_PER_SM
    regs_per_block: int = _dev.REGS_PER_BLOCK
    max_regs_per_thread: int = _dev.MAX_REGS_PER_THREAD
    reg_alloc_unit: int = 256  # registers are handed to a warp in chunks of 256
    sub_partitions: int = 4  # one register file slice per warp scheduler
    smem_per_sm: int = _dev.SHARED_PER_SM
    smem_per_block: int = _dev.MAX_STATIC_SHARED_PER_BLOCK  # without opting in
    smem_per_block_optin: int = _dev.MAX_SHARED_PER_BLOCK_OPTIN
    smem_reserved_per_block: int = _dev.SHARED_RESERVED_PER_BLOCK  # the driver's own use, per block (cc >= 8.0)
    smem_alloc_unit: int = 128

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * self.warp_size


#: The NVIDIA H200 the course measures on (compute capability 9.0, 132 SMs).
H200 = DeviceLimits(_dev.NAME, _dev.COMPUTE_CAPABILITY, _dev.SM_COUNT)

#: Seed 003's example GPU, GA102 (compute capability 8.6): 48 warps and 16 blocks per SM, 100 KB shared.
GA102 = DeviceLimits("GA102 (RTX 3090, cc 8.6)", (8, 6), 82, max_warps_per_sm=48, max_blocks_per_sm=16,
                     smem_per_sm=100 * 1024, smem_per_block_optin=99 * 1024)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """What fits on one SM: blocks, warps, the fraction of warp slots, and the limit of each budget."""

    threads_per_block: int
    regs_per_thread: int
    shared_per_block: int  # static + dynamic, bytes, as the kernel asks for it
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limits: dict = field(default_factory=dict)  # budget -> blocks per SM it allows
    regs_per_warp: int = 0  # after rounding to the allocation unit
    smem_per_block: int = 0  # after adding the reserve and rounding
    reason: str = ""  # why nothing fits, when blocks_per_sm is 0

    @property
    def occupancy(self) -> float:
        """Theoretical occupancy: resident warps / warp slots of the SM (0 … 1)."""
        return self.warps_per_sm / self.max_warps_per_sm

    @property
    def limited_by(self) -> tuple:
        """The budgets that set blocks_per_sm (several when they tie)."""
        return tuple(k for k, v in self.limits.items() if v == self.blocks_per_sm)

    def __repr__(self) -> str:
        lim = ", ".join(f"{k} {v if v < 10**6 else '∞'}" for k, v in self.limits.items())
        head = (f"{self.threads_per_block} threads/block, {self.regs_per_thread} regs/thread, "
                f"{self.shared_per_block} B shared/block: ")
        if self.blocks_per_sm == 0:
            return head + f"does not fit ({self.reason})"
        return (head + f"{self.blocks_per_sm} blocks = {self.warps_per_sm}/{self.max_warps_per_sm} warps per SM "
                f"= {self.occupancy:.0%} occupancy, limited by {' and '.join(self.limited_by)} "
                f"(blocks allowed by each budget: {lim})")


def occupancy(regs_per_thread: int, threads_per_block: int, shared_per_block: int = 0,
              device: DeviceLimits = H200, *, optin: bool = False) -> Occupancy:
    """Blocks and warps per SM for a kernel's registers per thread, block size and shared memory per block."""
    d = device
    if threads_per_block <= 0 or regs_per_thread < 0 or shared_per_block < 0:
        raise ValueError(
            f"occupancy: threads_per_block={threads_per_block}, regs_per_thread={regs_per_thread}, "
            f"shared_per_block={shared_per_block}; block size must be positive and the others >= 0."
        )
    warps_per_block = -(-threads_per_block // d.warp_size)
    big = 2**31 - 1
    reason = ""

    # warp slots
    by_warps = d.max_warps_per_sm // warps_per_block if threads_per_block <= d.max_threads_per_block else 0
    if by_warps == 0:
        reason = f"a block may have at most {d.max_threads_per_block} threads"

    # registers: per warp, rounded up to the allocation unit; each sub-partition holds whole warps
    regs_per_warp = _round_up(regs_per_thread * d.warp_size, d.reg_alloc_unit)
    if regs_per_warp == 0:
        by_regs = big
    else:
        # the hardware checks a block as if its warps were spread evenly over all sub-partitions
        assumed = regs_per_warp * _round_up(warps_per_block, d.sub_partitions)
        if (regs_per_thread > d.max_regs_per_thread or regs_per_warp * warps_per_block > d.regs_per_block
                or assumed > d.regs_per_block):
            by_regs = 0
            reason = reason or (f"{regs_per_thread} registers × {threads_per_block} threads exceed the "
                                f"{d.regs_per_block} registers a block may have")
        else:
            warps_per_partition = (d.regs_per_sm // d.sub_partitions) // regs_per_warp
            by_regs = (warps_per_partition * d.sub_partitions) // warps_per_block

    # shared memory: the driver reserves some per block; allocation is rounded up
    smem = _round_up(shared_per_block + d.smem_reserved_per_block, d.smem_alloc_unit)
    per_block_limit = (d.smem_per_block_optin if optin else d.smem_per_block) + d.smem_reserved_per_block
    if smem > per_block_limit:
        by_smem = 0
        reason = reason or (f"{shared_per_block} B of shared memory per block is more than the "
                            f"{per_block_limit - d.smem_reserved_per_block} B a block may use"
                            + ("" if optin else " without opting in"))
    else:
        by_smem = d.smem_per_sm // smem if smem else big

    limits = {"warps": by_warps, "registers": by_regs, "shared memory": by_smem, "blocks": d.max_blocks_per_sm}
    blocks = min(limits.values())
    return Occupancy(threads_per_block, regs_per_thread, shared_per_block, blocks, blocks * warps_per_block,
                     d.max_warps_per_sm, limits, regs_per_warp, smem, reason)


def table(regs_per_thread: int, shared_per_block: int = 0, block_sizes=(32, 64, 128, 256, 512, 1024),
          device: DeviceLimits = H200) -> list:
    """occupancy() for several block sizes at once (one Occupancy each)."""
    return [occupancy(regs_per_thread, b, shared_per_block, device) for b in block_sizes]


def max_regs_for(target_warps: int, threads_per_block: int, device: DeviceLimits = H200) -> int:
    """The most registers per thread that still lets ``target_warps`` warps per SM fit (0 if none does)."""
    best = 0
    for r in range(1, device.max_regs_per_thread + 1):
        if occupancy(r, threads_per_block, 0, device).warps_per_sm >= target_warps:
            best = r
    return best


# --------------------------------------------------------------------------------------------------
# A kernel's real resource use


@dataclass(frozen=True)
class Resources:
    """What the compiler gave one compiled kernel: registers per thread, static shared and local memory."""

    name: str
    regs_per_thread: int
    shared_per_block: int
    local_per_thread: int = 0
    max_threads_per_block: int = 1024
    source: str = ""  # "compiled on <device>" or "recorded <date> on <device>"


def _overload(kernel, signature=None):
    """The compiled overload of a numba GPU kernel (the one given, or the only/last one)."""
    overloads = getattr(kernel, "overloads", None)
    if not overloads:
        raise ValueError(
            f"{getattr(kernel, '__name__', kernel)!r} has not been compiled yet: launch it once (or call "
            "kernel.compile(signature)) before asking for its registers."
        )
    if signature is not None:
        return overloads[tuple(signature)]
    return list(overloads.values())[-1]


def kernel_name(kernel) -> str:
    """A stable name for a kernel: module and function name (what the recorded figures are keyed by)."""
    fn = getattr(kernel, "py_func", kernel)
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"
    tag = getattr(kernel, "tag", None)  # kernels made by a factory carry their parameters
    return f"{name}[{tag}]" if tag else name


def resources(kernel, signature=None, *, name=None) -> Resources:
    """Registers per thread and shared memory of ``kernel``: from the compiler on a GPU, recorded on the CPU."""
    name = name or kernel_name(kernel)
    if course.on_gpu():
        ov = _overload(kernel, signature)
        from numba import cuda

        dev = cuda.get_current_device()
        return Resources(name, int(ov.regs_per_thread), int(ov.shared_mem_per_block), int(ov.local_mem_per_thread),
                         int(ov.max_threads_per_block), f"compiled on {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}")
    for rec in recorded():
        if rec.get("kernel") == name:
            return Resources(name, rec["regs_per_thread"], rec["shared_per_block"], rec.get("local_per_thread", 0),
                             rec.get("max_threads_per_block", 1024),
                             f"recorded {rec.get('date', '?')} on {rec.get('device', '?')}")
    raise LookupError(
        f"No recorded resources for {name}: the CPU backend cannot compile for a GPU. Run "
        "scripts/gpu/measure_occupancy.py on a GPU to record them (data/measurements/occupancy.json)."
    )


def recorded(path=None) -> list:
    """The per-kernel records of the last GPU run of measure_occupancy.py ([] when not measured yet).

    Read as every recorded file is (:mod:`course.measure.measurements`: a corrupt file raises, naming it; dry
    runs are left out), and one run only, the latest (:func:`~course.measure.measurements.latest_run`), so
    that a kernel's registers and the driver's figures come from one compiler and one driver."""
    records = measurements.measured_only(measurements.read(RECORDED if path is None else path))
    return [r for r in measurements.latest_run(records) if r.get("variant") == "kernel"]


def driver_blocks_per_sm(kernel, threads_per_block: int, dynamic_shared: int = 0, signature=None) -> int:
    """The CUDA driver's answer (cuOccupancyMaxActiveBlocksPerMultiprocessor) for a compiled kernel; GPU only."""
    if not course.on_gpu():
        raise RuntimeError(
            "driver_blocks_per_sm needs a GPU: the driver's occupancy API looks at the compiled kernel. "
            "On the CPU use occupancy() with recorded resources (resources(kernel))."
        )
    from numba import cuda

    cufunc = _overload(kernel, signature)._codelibrary.get_cufunc()
    try:
        ctx = cuda.current_context()
        return int(ctx.get_active_blocks_per_multiprocessor(cufunc, int(threads_per_block), int(dynamic_shared)))
    except Exception as first:
        # numba's wrapper may hand the driver a library kernel handle (CUkernel); the driver accepts one
        # cast to CUfunction, so ask cuda.bindings directly
        from cuda.bindings import driver as drv

        handle = cufunc.handle
        fn = handle if isinstance(handle, drv.CUfunction) else drv.CUfunction(int(handle))
        err, blocks = drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, int(threads_per_block), int(dynamic_shared))
        if err != drv.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed: {err} (after {first!r})") from first
        return int(blocks)


def kernel_occupancy(kernel, threads_per_block: int, dynamic_shared: int = 0, signature=None,
                     device: DeviceLimits = H200) -> Occupancy:
    """occupancy() of a compiled kernel (GPU) or of its recorded resources (CPU)."""
    r = resources(kernel, signature)
    return occupancy(r.regs_per_thread, threads_per_block, r.shared_per_block + dynamic_shared, device)


# --------------------------------------------------------------------------------------------------
# Latency hiding: Little's law


def bytes_in_flight(bandwidth_bytes_per_s: float, latency_s: float) -> float:
    """Little's law: to sustain a bandwidth with a given latency, this many bytes must be on their way."""
    return bandwidth_bytes_per_s * latency_s


def warps_needed(bandwidth_bytes_per_s: float, latency_s: float, bytes_per_warp_in_flight: float,
                 sm_count: int = H200.sm_count) -> float:
    """Warps per SM needed to keep ``bytes_in_flight`` on the way, if each warp has that many bytes outstanding."""
    return bytes_in_flight(bandwidth_bytes_per_s, latency_s) / sm_count / bytes_per_warp_in_flight


def bandwidth_from_warps(warps_per_sm: float, bytes_per_warp_in_flight: float, latency_s: float,
                         sm_count: int = H200.sm_count) -> float:
    """Little's law the other way: the bandwidth that warps with bytes outstanding can sustain (bytes/s)."""
    return warps_per_sm * sm_count * bytes_per_warp_in_flight / latency_s
