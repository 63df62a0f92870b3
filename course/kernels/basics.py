"""The programming model's first kernels (chapter 01): vector add, 1-D and 2-D indexing, the tail effect.

Versions, in teaching order:

1. ``vector_add``            seed 001's ``vectorAdd``: one thread per element, guarded by ``if i < n``.
2. ``vector_add_grid``       the same with ``cuda.grid(1)``, numba's shorthand for the index arithmetic.
3. ``vector_add_unguarded``  the guard left out: the threads past ``n`` index outside the arrays.
4. ``record_index_1d``       each thread writes down who it is (block, thread, global index).
5. ``record_index_2d``       the same on a 2-D grid: ``col`` from x, ``row`` from y.
6. ``matrix_add``            a 2-D kernel over a row-major matrix, x ↔ col so neighbours in a warp
                             touch neighbouring elements.

``KERNELS`` lists every version with its NumPy reference.  The lane-counting helpers at the bottom
(``blocks_for``, ``lane_count``, ``active_lanes_per_warp``) count the idle lanes of the tail effect
by plain arithmetic, without running anything.

Defined for chapter 01 (notebooks/01_programming_model.ipynb).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from course.kernels import registry
from numba import cuda

WARP_SIZE = 32


# --- kernels ---------------------------------------------------------------------------------------


@cuda.jit
def vector_add(a, b, out, n):
    """out[i] = a[i] + b[i] for i < n, one thread per element (seed 001's vectorAdd)."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:  # the last block usually has more threads than elements left
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_grid(a, b, out, n):
    """vector_add written with cuda.grid(1), which computes blockIdx.x * blockDim.x + threadIdx.x."""
    i = cuda.grid(1)
    if i < n:
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_unguarded(a, b, out, n):
    """vector_add without the bounds guard: wrong whenever the grid has more threads than n."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    out[i] = a[i] + b[i]  # n is passed but never checked: that is the bug


@cuda.jit
def record_index_1d(block_of, thread_of, index_of):
    """Each thread writes its blockIdx.x, threadIdx.x and global index into slot i."""
    i = cuda.grid(1)
    if i < index_of.shape[0]:
        block_of[i] = cuda.blockIdx.x
        thread_of[i] = cuda.threadIdx.x
        index_of[i] = i


@cuda.jit
def record_index_2d(rows, cols):
    """Each thread of a 2-D grid writes its row into rows[row, col] and its col into cols[row, col]."""
    col, row = cuda.grid(2)  # x first: x runs along a row, so it is the column
    if row < rows.shape[0] and col < rows.shape[1]:
        rows[row, col] = row
        cols[row, col] = col


@cuda.jit
def matrix_add(a, b, out):
    """out = a + b for row-major 2-D arrays, one thread per element, x ↔ col."""
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = a[row, col] + b[row, col]


# --- host side -------------------------------------------------------------------------------------


def blocks_for(n: int, threads_per_block: int) -> int:
    """Blocks needed to give each of n elements a thread: ceil(n / threads_per_block)."""
    if n < 0 or threads_per_block <= 0:
        raise ValueError(
            f"blocks_for(n={n}, threads_per_block={threads_per_block}): n must be >= 0 and "
            "threads_per_block > 0."
        )
    return (n + threads_per_block - 1) // threads_per_block


def vector_add_host(a: np.ndarray, b: np.ndarray, threads_per_block: int = 256) -> np.ndarray:
    """The five steps of seed 001's main(): allocate, copy in, launch, synchronise, copy back."""
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"vector_add_host needs two 1-D arrays of one length, got {a.shape} and {b.shape}.")
    n = a.shape[0]
    # 1. allocate device memory for the result (the inputs get theirs in step 2)
    d_out = cuda.device_array(n, dtype=np.result_type(a, b))
    # 2. copy the inputs host -> device
    d_a = cuda.to_device(a)
    d_b = cuda.to_device(b)
    # 3. launch: enough blocks that every element gets a thread
    blocks_per_grid = blocks_for(n, threads_per_block)
    if blocks_per_grid:
        vector_add[blocks_per_grid, threads_per_block](d_a, d_b, d_out, n)
    # 4. wait for the GPU: launches are asynchronous
    cuda.synchronize()
    # 5. copy the result device -> host (device memory is freed when d_* are garbage-collected)
    return d_out.copy_to_host()


def reference_vector_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy reference for the vector-add kernels."""
    return a + b


def reference_matrix_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy reference for matrix_add."""
    return a + b


def reference_index_1d(n: int, threads_per_block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NumPy reference for record_index_1d: (block, thread, global index) of each element."""
    i = np.arange(n)
    return i // threads_per_block, i % threads_per_block, i


def reference_index_2d(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """NumPy reference for record_index_2d: the row and the column of each element."""
    return np.indices(shape)


@dataclass(frozen=True)
class Version(registry.Version):
    """One kernel of this module, its one-line idea, and the NumPy reference it must match."""

    reference: Callable


KERNELS = registry.registry(
    Version("vector_add", "one thread per element, guarded", vector_add, reference_vector_add),
    Version("vector_add_grid", "cuda.grid(1) does the index arithmetic", vector_add_grid, reference_vector_add),
    Version("vector_add_unguarded", "no guard: correct only when the grid fits n exactly",
            vector_add_unguarded, reference_vector_add),
    Version("record_index_1d", "who am I, in 1-D", record_index_1d, reference_index_1d),
    Version("record_index_2d", "who am I, in 2-D (x is the column)", record_index_2d, reference_index_2d),
    Version("matrix_add", "2-D kernel, x ↔ col", matrix_add, reference_matrix_add),
)


# --- the tail effect: counting idle lanes ----------------------------------------------------------


def _as_dims(value, name: str) -> tuple[int, ...]:
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(int(d) <= 0 for d in dims):
        raise ValueError(f"{name}={value!r}: give 1 to 3 positive sizes, like 256 or (32, 8).")
    return tuple(int(d) for d in dims)


@dataclass(frozen=True)
class LaneCount:
    """How the lanes of a launch that covers a problem of ``shape`` with blocks of ``block`` are used.

    A warp always occupies 32 lanes.  Lanes go idle for two reasons: a block whose thread count is not
    a multiple of 32 leaves its last warp partly empty in *every* block (``idle_in_partial_warps``), and a
    problem that does not fill the last block(s) leaves threads with nothing to do (``idle_past_end``).
    """

    shape: tuple[int, ...]
    block: tuple[int, ...]
    grid: tuple[int, ...]
    warps_per_block: int
    elements: int

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)

    @property
    def blocks_per_grid(self) -> int:
        return math.prod(self.grid)

    @property
    def warps(self) -> int:
        return self.blocks_per_grid * self.warps_per_block

    @property
    def lanes(self) -> int:
        """Lane slots the launch occupies: 32 per warp."""
        return self.warps * WARP_SIZE

    @property
    def threads(self) -> int:
        return self.blocks_per_grid * self.threads_per_block

    @property
    def idle_in_partial_warps(self) -> int:
        """Lanes no thread sits in, because threads_per_block is not a multiple of 32."""
        return self.lanes - self.threads

    @property
    def idle_past_end(self) -> int:
        """Threads that exist but whose index falls outside the problem (the guard turns them away)."""
        return self.threads - self.elements

    @property
    def idle(self) -> int:
        return self.lanes - self.elements

    @property
    def busy_fraction(self) -> float:
        """Share of the occupied lanes that do useful work."""
        return self.elements / self.lanes


def lane_count(shape, block) -> LaneCount:
    """Count the lanes, threads and idle lanes of a launch covering ``shape`` with blocks of ``block``."""
    shape = _as_dims(shape, "shape")
    block = _as_dims(block, "block")
    if len(shape) != len(block):
        raise ValueError(f"shape {shape} and block {block} need the same number of dimensions.")
    # x is the fastest-moving index and runs along the last axis of a row-major array
    extents = shape[::-1]
    grid = tuple(blocks_for(e, b) for e, b in zip(extents, block))
    warps_per_block = blocks_for(math.prod(block), WARP_SIZE)
    return LaneCount(shape, block, grid, warps_per_block, math.prod(shape))


def active_lanes_per_warp(shape, block) -> np.ndarray:
    """Active lanes (0..32) of every warp of the launch, blocks in launch order, warps by linear tid."""
    lc = lane_count(shape, block)
    extents = np.array(lc.shape[::-1])  # (x, y, z) extents
    bdim = np.array(lc.block)
    tids = np.arange(lc.warps_per_block * WARP_SIZE)
    # a thread's (x, y, z) in its block: x fastest, then y, then z; slots past the block are no thread
    coords = np.stack(np.unravel_index(np.minimum(tids, lc.threads_per_block - 1), lc.block[::-1])[::-1])
    is_thread = tids < lc.threads_per_block
    out = []
    for block_idx in np.ndindex(*lc.grid[::-1]):
        origin = np.array(block_idx[::-1]) * bdim
        inside = np.all(origin[:, None] + coords < extents[:, None], axis=0) & is_thread
        out.append(inside.reshape(lc.warps_per_block, WARP_SIZE).sum(axis=1))
    return np.concatenate(out)


# --- launches whose memory counts the tracer and Nsight Compute must agree on ----------------------


def _ncu_cases():
    from course.kernels.cases import Case

    def vec_args(rng, n=1000):
        return (rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32), n)

    def mat_args(rng, shape=(17, 64)):
        a = rng.random(shape, dtype=np.float32)
        return (a, rng.random(shape, dtype=np.float32), np.zeros(shape, np.float32))

    no_shared = {k: 0 for k in ("shared_load_requests", "shared_load_wavefronts",
                                "shared_store_requests", "shared_store_wavefronts")}
    return [
        # 1000 floats: 31 full warps + 1 warp of 8 lanes issue; the 3 warps past the end issue nothing.
        # Each array is 1000 * 4 B = 4000 B = 125 sectors (31 * 4 + 1).
        Case(name="basics.vector_add[n=1000,tpb=256]", kernel=vector_add, griddim=4, blockdim=256,
             make_args=vec_args,
             expect={"global_load_requests": 2 * 32, "global_load_sectors": 2 * 125,
                     "global_store_requests": 32, "global_store_sectors": 125, **no_shared},
             note="coalesced 1-D access; warps wholly past n issue no request", tags=("chapter01",)),
        # 17 rows x 64 cols, blocks of 32 x 8: each active warp covers 32 floats (128 B, aligned) of one row;
        # 17 rows * 2 warps per row = 34 warps issue, 4 sectors per request.
        Case(name="basics.matrix_add[17x64,block=32x8]", kernel=matrix_add, griddim=(2, 3), blockdim=(32, 8),
             make_args=mat_args,
             expect={"global_load_requests": 2 * 34, "global_load_sectors": 2 * 34 * 4,
                     "global_store_requests": 34, "global_store_sectors": 34 * 4, **no_shared},
             note="2-D, x = col: each warp reads 128 contiguous bytes of a row", tags=("chapter01",)),
    ]


def __getattr__(name):
    # NCU_CASES is built on first use, so that importing this module never needs course.kernels.cases.
    if name == "NCU_CASES":
        globals()["NCU_CASES"] = _ncu_cases()
        return globals()["NCU_CASES"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
