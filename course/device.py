"""The H200's facts in one place: the limits the course checks launches against, the per-SM budgets of the
occupancy calculator, the memory system's units, and the simulated device's facts on a CPU backend.

The limits are those of compute capability 9.0 (the H200 the course measures on); a launch that a
real H200 would refuse is refused on the CPU too, with the same reason.  :mod:`course.engine`,
:mod:`course.measure.occupancy` (``H200``) and :mod:`course.trace.analysis` take their numbers from here.
"""

NAME = "NVIDIA H200"
COMPUTE_CAPABILITY = (9, 0)
SM_COUNT = 132

# launch limits
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
WARP_SIZE = 32

# per-SM budgets (NVIDIA's occupancy calculator for cc 9.0)
MAX_WARPS_PER_SM = 64
MAX_THREADS_PER_SM = MAX_WARPS_PER_SM * WARP_SIZE  # 2048
MAX_BLOCKS_PER_SM = 32
REGS_PER_SM = 65536
REGS_PER_BLOCK = 65536
MAX_REGS_PER_THREAD = 255
SHARED_PER_SM = 228 * 1024
MAX_STATIC_SHARED_PER_BLOCK = 48 * 1024  # without opting in
MAX_SHARED_PER_BLOCK_OPTIN = 227 * 1024
SHARED_RESERVED_PER_BLOCK = 1024  # the driver's own use, per block (cc >= 8.0)
MAX_LOCAL_PER_THREAD = 512 * 1024  # ptxas refuses more: "uses too much local data"

# the memory system's units
SHARED_BANKS = 32
BANK_BYTES = 4
SECTOR_BYTES = 32
LINE_BYTES = 128


def simulated_facts() -> dict:
    """What the CPU backend pretends to be: the limits of the H200 it models."""
    return {
        "device": "none (kernels run on the CPU; limits modelled on an NVIDIA H200, cc 9.0)",
        "compute_capability": "9.0 (modelled)",
        "sm_count": f"{SM_COUNT} (modelled; the CPU runs one block at a time)",
        "max_threads_per_block": MAX_THREADS_PER_BLOCK,
        "max_grid_dim_x": MAX_GRID_DIM[0],
        "shared_memory_per_block": MAX_STATIC_SHARED_PER_BLOCK,
        "warp_size": WARP_SIZE,
        "driver": "none",
    }
