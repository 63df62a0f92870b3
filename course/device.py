"""Device limits the course checks launches against, and the simulated device's facts on a CPU backend.

The limits are those of compute capability 9.0 (the H200 the course measures on); a launch that a
real H200 would refuse is refused on the CPU too, with the same reason.
"""

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
WARP_SIZE = 32
SHARED_BANKS = 32
BANK_BYTES = 4
SECTOR_BYTES = 32
MAX_STATIC_SHARED_PER_BLOCK = 48 * 1024
MAX_SHARED_PER_BLOCK_OPTIN = 227 * 1024


def simulated_facts() -> dict:
    """What the CPU backend pretends to be: the limits of the H200 it models."""
    return {
        "device": "none (kernels run on the CPU; limits modelled on an NVIDIA H200, cc 9.0)",
        "compute_capability": "9.0 (modelled)",
        "sm_count": "132 (modelled; the CPU runs one block at a time)",
        "max_threads_per_block": MAX_THREADS_PER_BLOCK,
        "max_grid_dim_x": MAX_GRID_DIM[0],
        "shared_memory_per_block": MAX_STATIC_SHARED_PER_BLOCK,
        "warp_size": WARP_SIZE,
        "driver": "none",
    }
