"""Shared memory and its 32 banks (chapter 04): small kernels that each isolate one access pattern.

Versions, in teaching order (each line: the idea; the counts are derived in chapter 04):

1. ``strided_read``        lane reads ``s[(lane * stride) % 1024]`` of float32: gcd(stride, 32) passes,
                           so every odd stride is conflict-free and stride 32 is a 32-way conflict.
2. ``broadcast_read``      every lane reads ``s[0]``: one word, one pass (a broadcast, not a conflict).
3. ``indexed_read``        lane reads ``s[idx[lane]]`` for an index table made on the host: any pattern
                           the bank explorer can draw, run as a real kernel.
4. ``strided_read_f64``    8-byte elements: a warp moves 256 bytes, so two passes at best.
5. ``strided_read_c128``   16-byte elements (complex128): 512 bytes, four passes at best.
6. ``tile_rows``           a 32×32 float32 tile written and read by rows: the conflict-free baseline.
7. ``tile_columns``        the same tile read by columns, ``tile[tx][ty]``: a 32-way conflict (seed 000 §2.3).
8. ``tile_columns_pad33``  ``[32][33]``: one pad column puts a column into 32 different banks.
9. ``tile_columns_pad34``  ``[32][34]``: a pad of 2 is not coprime with 32, still 2-way (seed 000 §3.1).
10. ``tile_columns_swizzle`` ``tile[ty][tx ^ ty]``: the XOR swizzle, no extra memory (seed 000 §3.2).
11. ``tile_column_store``  the conflict on the store side: written by columns, read by rows.
12. ``tile_columns_f64`` / ``tile_columns_f64_pad33``  the same with 8-byte elements.

Timed on the H200 by ``scripts/gpu/bench_shared_memory.py`` (not traced: they are about time):

13. ``conflict_loop``      a loop of shared loads at a given stride: does an n-way conflict cost n× the time?
    ``sync_loop``          the same loop with a ``syncthreads`` every few loads: what a barrier costs.
    ``mod_loop`` / ``counter_loop``  sync_loop's ``k % every`` test and branch with no barrier, and the same
                           with the modulo replaced by a counter: what the int64 modulo costs (seed 000 §4.5).
14. ``stencil_global`` / ``stencil_shared``  a moving sum read straight from global memory (the caches
                           serve the neighbours' reads) or staged in shared memory: when does staging pay?
    ``stencil_global_cheap`` / ``stencil_shared_cheap``  the same at radius 1 with cheap indices and eight
                           outputs per thread, so that both are limited by memory, not by instruction issue.

The tile kernels transpose every 32×32 tile of a stack of tiles (``inp`` of shape ``(32 * n, 32)``):
their only job is to make each warp read one column of a shared tile, so they take whole tiles by
design; general shapes are chapter 05's transpose (``course/kernels/transpose.py``).

``KERNELS`` lists every version with its NumPy reference and launch shape; ``NCU_CASES`` are the
launches ``scripts/gpu/validate_tracer.py`` runs under Nsight Compute on the H200, each with counts
derived by hand in ``expect``.

Defined for chapter 04 (notebooks/04_shared_memory_banks.ipynb).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import course  # (chooses the backend before numba is imported)
from numba import complex128, cuda, float32, float64

from course.kernels import registry
from course.kernels.cases import Case
from course.kernels.vector import uint32

WARP_SIZE = 32
N_WORDS = 1024  # elements in the 1-D shared arrays: 4 KB of float32
TILE = 32
# Shapes of shared arrays must be compile-time constants on a GPU: numba folds a module constant but
# not an expression such as ``TILE + 1`` written inside the kernel, so the padded widths are named here.
TILE_PAD33 = TILE + 1
TILE_PAD34 = TILE + 2


# --- 1-D shared arrays: strides, broadcast, any pattern ---------------------------------------------


@cuda.jit
def strided_read(inp, out, stride):
    """out[t] = s[(lane * stride) % 1024] with s a float32 copy of inp: gcd(stride, 32) passes per read."""
    s = cuda.shared.array(N_WORDS, float32)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):  # neighbours store neighbours: conflict-free stores
        s[i] = inp[i]
    cuda.syncthreads()
    lane = t % WARP_SIZE
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = s[(lane * stride) % N_WORDS]


@cuda.jit
def broadcast_read(inp, out):
    """out[t] = s[0]: all 32 lanes want the same word, which the banks deliver to all at once."""
    s = cuda.shared.array(N_WORDS, float32)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = inp[i]
    cuda.syncthreads()
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = s[0]


@cuda.jit
def indexed_read(inp, idx, out):
    """out[t] = s[idx[lane]]: the shared read follows an index table chosen on the host."""
    s = cuda.shared.array(N_WORDS, float32)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = inp[i]
    cuda.syncthreads()
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = s[idx[t % WARP_SIZE]]


@cuda.jit
def strided_read_f64(inp, out, stride):
    """strided_read with 8-byte elements: each lane needs two banks, a warp 256 bytes."""
    s = cuda.shared.array(N_WORDS, float64)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = inp[i]
    cuda.syncthreads()
    lane = t % WARP_SIZE
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = s[(lane * stride) % N_WORDS]


@cuda.jit
def strided_read_c128(inp, out, stride):
    """strided_read with 16-byte elements (complex128): four banks per lane, 512 bytes per warp (not on numba-sim)."""
    # alignment=16 lets the compiler use one 16-byte load per element (ld.shared.v2.f64); at the default
    # alignment of 8 numba emits two 8-byte loads (real part, imaginary part) and the access is 8 bytes
    s = cuda.shared.array(N_WORDS, complex128, alignment=16)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = inp[i]
    cuda.syncthreads()
    lane = t % WARP_SIZE
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = s[(lane * stride) % N_WORDS]


# --- 2-D tiles: rows, columns, and the two cures ----------------------------------------------------
# Every tile kernel runs one 32×32 block per tile: tx = threadIdx.x is the lane, ty the warp.


@cuda.jit
def tile_rows(inp, out):
    """Write tile[ty][tx], read tile[ty][tx]: each warp touches one row, 32 banks, one pass (a copy)."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[ty][tx] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[ty][tx]


@cuda.jit
def tile_columns(inp, out):
    """Read tile[tx][ty]: a warp walks down one column, and a column of [32][32] lives in one bank."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[ty][tx] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[tx][ty]


@cuda.jit
def tile_columns_pad33(inp, out):
    """tile_columns on [32][33]: row r starts r words later in the bank cycle, so a column hits 32 banks."""
    tile = cuda.shared.array((TILE, TILE_PAD33), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[ty][tx] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[tx][ty]


@cuda.jit
def tile_columns_pad34(inp, out):
    """tile_columns on [32][34]: bank (2r + c) % 32 repeats after 16 rows, so still a 2-way conflict."""
    tile = cuda.shared.array((TILE, TILE_PAD34), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[ty][tx] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[tx][ty]


@cuda.jit
def tile_columns_swizzle(inp, out):
    """Store logical tile[r][c] at column c ^ r: a permutation of each row, so rows stay rows, columns spread."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[ty][tx ^ ty] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[tx][ty ^ tx]  # the same rule on the way out: XOR is its own inverse


@cuda.jit
def tile_column_store(inp, out):
    """The conflict on the store side: write tile[tx][ty] (32-way), then read rows (conflict-free)."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[tx][ty] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[ty][tx]


@cuda.jit
def tile_columns_f64(inp, out):
    """tile_columns with float64: a column of [32][32] doubles uses only banks 0 and 1."""
    tile = cuda.shared.array((TILE, TILE), float64)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[ty][tx] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[tx][ty]


@cuda.jit
def tile_columns_f64_pad33(inp, out):
    """tile_columns_f64 on [32][33]: rows start 2 banks apart, a half warp covers all 32 banks."""
    tile = cuda.shared.array((TILE, TILE_PAD33), float64)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + ty
    tile[ty][tx] = inp[row, tx]
    cuda.syncthreads()
    out[row, tx] = tile[tx][ty]


# --- timed on the H200 (scripts/gpu/bench_shared_memory.py) -----------------------------------------------
# What conflicts cost in time, and when shared memory pays at all (seed 003, myth 3).

CONFLICT_MASK = N_WORDS - 1  # N_WORDS is a power of two: & instead of %, so the loop is all shared loads


@cuda.jit
def conflict_loop(out, stride, iters):
    """Each lane sums s[(lane * stride + k) & 1023] for k < iters: shared-load bound, gcd(stride, 32) passes each."""
    s = cuda.shared.array(N_WORDS, float32)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = i % 7  # small integers: every float32 sum below is exact, so NumPy can check it
    cuda.syncthreads()
    base = (t % WARP_SIZE) * stride
    acc = float32(0)
    for k in range(iters):  # + k moves every lane by one word: the banks shift, the conflict degree stays
        acc += s[(base + k) & CONFLICT_MASK]
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = acc


@cuda.jit
def sync_loop(out, iters, every):
    """conflict_loop at stride 1 (no conflicts) with a cuda.syncthreads() after every `every` loads (0: never)."""
    s = cuda.shared.array(N_WORDS, float32)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = i % 7
    cuda.syncthreads()
    acc = float32(0)
    for k in range(iters):
        acc += s[(t + k) & CONFLICT_MASK]
        if every > 0 and k % every == every - 1:  # the same for every thread: all reach the barrier
            cuda.syncthreads()
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = acc


@cuda.jit
def mod_loop(out, iters, every):
    """sync_loop without its barrier: the same int64 ``k % every`` test and branch, a counter bumped in the branch.

    What it isolates, beside ``counter_loop`` (the same loop and branch, the remainder replaced by a
    count-down) and ``mod_loop`` at every=0 (the compiler runs a copy of the loop without the modulo, the
    ``every > 0`` test being loop-invariant): one 64-bit signed remainder by a run-time value per iteration.
    sm_90 has no integer divide instruction.  In the SASS (``scripts/gpu/probe_sass.py``, ptxas 13.5) each
    ``k % every`` tests whether both operands fit in 32 bits: if so, an inline unsigned 32-bit division
    (I2F, MUFU.RCP, F2I, two IMAD.HI and two conditional corrections), else a CALL of
    ``__cuda_sm20_rem_s64``; then Python's sign rule (SEL) and the 64-bit compare.  All three loops are
    unrolled 4×: 225 instructions per 4 iterations here, 89 in counter_loop, 57 in the every=0 copy.
    What else could explain a difference: not unrolling (ruled out above: all unrolled), the branch (it
    becomes predicated adds, the same in counter_loop), and ``sync_loop`` at every=0, which the compiler
    does not unswitch (its every=0 run still tests ``every > 0`` each iteration): compare mod with
    counter for the modulo alone.
    """
    s = cuda.shared.array(N_WORDS, float32)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = i % 7
    cuda.syncthreads()
    acc = float32(0)
    marks = 0
    for k in range(iters):
        acc += s[(t + k) & CONFLICT_MASK]
        if every > 0 and k % every == every - 1:  # where sync_loop waits at a barrier
            marks += 1
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = acc + float32(marks)


@cuda.jit
def counter_loop(out, iters, every):
    """mod_loop with the remainder replaced by a down-counter reset every ``every`` loads: the same branch, no division."""
    s = cuda.shared.array(N_WORDS, float32)
    t = cuda.threadIdx.x
    for i in range(t, N_WORDS, cuda.blockDim.x):
        s[i] = i % 7
    cuda.syncthreads()
    acc = float32(0)
    marks = 0
    left = every  # 0: never reaches 0 again (it only goes down), as mod_loop never branches at every=0
    for k in range(iters):
        acc += s[(t + k) & CONFLICT_MASK]
        left -= 1
        if left == 0:  # k % every == every - 1, counted instead of divided
            marks += 1
            left = every
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = acc + float32(marks)


STENCIL_THREADS = 256  # threads per block of the stencils
R_MAX = 16  # the widest radius the shared stencil's tile holds
STENCIL_TILE = STENCIL_THREADS + 2 * R_MAX  # the block's elements and a halo of R_MAX on each side


@cuda.jit
def stencil_global(inp, out, radius):
    """out[i] = sum of inp[i - radius .. i + radius] (clamped at the ends), every read straight from global memory."""
    i = cuda.grid(1)
    n = inp.shape[0]
    if i < n:
        acc = float32(0)
        for k in range(-radius, radius + 1):  # neighbours' reads hit the same lines: L1/L2 serve them
            acc += inp[min(max(i + k, 0), n - 1)]
        out[i] = acc


@cuda.jit
def stencil_shared(inp, out, radius):
    """The same stencil staged in shared memory: the block's elements plus a halo of radius on each side."""
    s = cuda.shared.array(STENCIL_TILE, float32)
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * cuda.blockDim.x
    n = inp.shape[0]
    for k in range(t, cuda.blockDim.x + 2 * radius, cuda.blockDim.x):
        s[k] = inp[min(max(start + k - radius, 0), n - 1)]
    cuda.syncthreads()
    i = start + t
    if i < n:
        acc = float32(0)
        for k in range(2 * radius + 1):  # the same order of additions as stencil_global: identical sums
            acc += s[t + k]
        out[i] = acc


# The same radius-1 stencil with cheap indices (seed 003 myth 3 as the claim states it: is the L1/L2 path
# faster than a shared tile and its barrier when reuse is low?).  stencil_global/stencil_shared above are
# limited by instruction issue (a run-time radius, a clamp on every read): they compare instruction counts.
# Here each thread computes CHEAP_OUTPUTS outputs CHEAP_THREADS apart (every load a coalesced warp-wide
# row), the radius is the constant 1, and only the first and the last blocks clamp: an interior block
# (all its neighbours inside the array, decided once per block) indexes with no test at all.

CHEAP_THREADS = 256  # threads per block of the cheap stencils (their index rule assumes it: launch with it)
CHEAP_OUTPUTS = 8  # outputs per thread: eight independent loads in flight per thread, enough for HBM
CHEAP_SPAN = CHEAP_THREADS * CHEAP_OUTPUTS  # outputs per block
CHEAP_TILE = CHEAP_SPAN + 2  # the block's inputs and one halo element on each side
# Unsigned constants for the index arithmetic: numba adds ``if i < 0: i += n`` to every signed index
# (about ten instructions per load in the SASS), none to an unsigned one.  On the CPU engine plain ints.
_U32 = np.uint32 if course.on_gpu() else int
_ONE, _THREADS_U, _SPAN_U, _HALO_U = _U32(1), _U32(CHEAP_THREADS), _U32(CHEAP_SPAN), _U32(CHEAP_SPAN + 1)


@cuda.jit
def stencil_global_cheap(inp, out):
    """out[i] = inp[i-1] + inp[i] + inp[i+1] (ends clamped), 8 outputs per thread, every read from global memory.

    Each input is read by three warps' loads: the first from DRAM, the other two from L1 (or L2) —
    the caches serve the reuse, with no barrier.  Launch ``[stencil_cheap_blocks(n), CHEAP_THREADS]``;
    32-bit unsigned indices, so n < 2**31.
    """
    n = uint32(inp.shape[0])
    b = uint32(cuda.blockIdx.x)
    i0 = uint32(b * _SPAN_U + uint32(cuda.threadIdx.x))
    if b > 0 and uint32(b * _SPAN_U + _SPAN_U) < n:  # interior block: i - 1 >= 0 and i + 1 < n for all its outputs
        acc = cuda.local.array(CHEAP_OUTPUTS, float32)  # constant indices only: registers
        for k in range(CHEAP_OUTPUTS):  # all 24 loads first: a store between them would keep them in order
            i = uint32(i0 + uint32(k) * _THREADS_U)
            acc[k] = inp[uint32(i - _ONE)] + inp[i] + inp[uint32(i + _ONE)]
        for k in range(CHEAP_OUTPUTS):
            out[uint32(i0 + uint32(k) * _THREADS_U)] = acc[k]
    else:  # the first and the last block: clamp at the ends, skip past n (signed, as clamps need)
        for k in range(CHEAP_OUTPUTS):
            i = uint32(i0 + uint32(k) * _THREADS_U)
            if i < n:
                out[i] = inp[max(i - 1, 0)] + inp[i] + inp[min(i + 1, n - 1)]


@cuda.jit
def stencil_shared_cheap(inp, out):
    """stencil_global_cheap staged in shared memory: one coalesced load per input, one barrier per tile.

    The tile holds the block's CHEAP_SPAN inputs at s[1 ..] and one halo element each side (s[0] and
    s[CHEAP_SPAN + 1], loaded by threads 0 and 1); then each output reads s[j], s[j + 1], s[j + 2].
    """
    s = cuda.shared.array(CHEAP_TILE, float32)
    n = uint32(inp.shape[0])
    b = uint32(cuda.blockIdx.x)
    t = uint32(cuda.threadIdx.x)
    start = uint32(b * _SPAN_U)
    interior = b > 0 and uint32(start + _SPAN_U) < n
    if interior:
        for k in range(CHEAP_OUTPUTS):
            j = uint32(t + uint32(k) * _THREADS_U)
            s[uint32(j + _ONE)] = inp[uint32(start + j)]
        if t < 2:  # t = 0: the left halo inp[start - 1] into s[0]; t = 1: the right one inp[start + SPAN]
            s[uint32(t * _HALO_U)] = inp[uint32(start - _ONE + t * _HALO_U)]
    else:  # every index clamped into [0, n - 1]: the tile then holds exactly what the clamped stencil reads
        for k in range(CHEAP_OUTPUTS):
            j = uint32(t + uint32(k) * _THREADS_U)
            s[uint32(j + _ONE)] = inp[min(uint32(start + j), uint32(n - _ONE))]
        if t == 0:
            s[0] = inp[max(start - 1, 0)]
        if t == 1:
            s[CHEAP_SPAN + 1] = inp[min(start + CHEAP_SPAN, n - 1)]
    cuda.syncthreads()
    for k in range(CHEAP_OUTPUTS):
        j = uint32(t + uint32(k) * _THREADS_U)
        if interior or uint32(start + j) < n:  # the same order of additions as the global version
            out[uint32(start + j)] = s[j] + s[uint32(j + _ONE)] + s[uint32(j + _ONE + _ONE)]


def stencil_cheap_blocks(n: int) -> int:
    """blocks_per_grid of the cheap stencils for n elements (CHEAP_SPAN outputs per block)."""
    return max(1, -(-n // CHEAP_SPAN))


# --- NumPy references ---------------------------------------------------------------------------------


def _lanes(blocks: int, threads_per_block: int) -> np.ndarray:
    """The lane (threadIdx.x % 32) of every thread of a 1-D launch, in global order."""
    return np.tile(np.arange(threads_per_block) % WARP_SIZE, blocks)


def reference_strided(inp: np.ndarray, stride: int, blocks: int, threads_per_block: int) -> np.ndarray:
    """What strided_read writes: inp[(lane * stride) % 1024] for every thread."""
    return inp[(_lanes(blocks, threads_per_block) * stride) % N_WORDS]


def reference_broadcast(inp: np.ndarray, blocks: int, threads_per_block: int) -> np.ndarray:
    """What broadcast_read writes: inp[0] everywhere."""
    return np.full(blocks * threads_per_block, inp[0], dtype=inp.dtype)


def reference_indexed(inp: np.ndarray, idx: np.ndarray, blocks: int, threads_per_block: int) -> np.ndarray:
    """What indexed_read writes: inp[idx[lane]] for every thread."""
    return inp[idx[_lanes(blocks, threads_per_block)]]


def reference_tile_transpose(inp: np.ndarray) -> np.ndarray:
    """Every 32×32 tile of a (32n, 32) stack transposed in place: what the column-reading kernels write."""
    n = inp.shape[0] // TILE
    return inp.reshape(n, TILE, TILE).transpose(0, 2, 1).reshape(n * TILE, TILE)


def reference_copy(inp: np.ndarray) -> np.ndarray:
    """What tile_rows writes: the input unchanged."""
    return inp.copy()


def reference_conflict_loop(stride: int, iters: int, blocks: int, threads_per_block: int) -> np.ndarray:
    """What conflict_loop writes, summed exactly in integers."""
    base = _lanes(blocks, threads_per_block) * stride
    words = (base[:, None] + np.arange(iters)[None, :]) & CONFLICT_MASK
    return (words % 7).sum(axis=1).astype(np.float32)


def reference_sync_loop(iters: int, blocks: int, threads_per_block: int) -> np.ndarray:
    """What sync_loop writes (the barriers change the timing, never the sums)."""
    t = np.tile(np.arange(threads_per_block), blocks)
    words = (t[:, None] + np.arange(iters)[None, :]) & CONFLICT_MASK
    return (words % 7).sum(axis=1).astype(np.float32)


def reference_mod_loop(iters: int, every: int, blocks: int, threads_per_block: int) -> np.ndarray:
    """What mod_loop and counter_loop write: sync_loop's sums plus the number of k < iters with k % every == every - 1."""
    marks = iters // every if every > 0 else 0
    return reference_sync_loop(iters, blocks, threads_per_block) + np.float32(marks)


def reference_stencil(inp: np.ndarray, radius: int) -> np.ndarray:
    """Moving sum of width 2·radius + 1 with the ends clamped, in float64 (exact for small integers)."""
    n = inp.shape[0]
    idx = np.clip(np.arange(n)[:, None] + np.arange(-radius, radius + 1)[None, :], 0, n - 1)
    return inp.astype(np.float64)[idx].sum(axis=1)


# --- the registry ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Version(registry.Version):
    """One kernel version: the kernel, what it shows, its element size, and how the tile is read."""

    itemsize: int
    kind: str  # "1d" (strided/broadcast/indexed) or "tile"


KERNELS = registry.registry(
    Version("strided_read", "stride s: gcd(s, 32)-way", strided_read, 4, "1d"),
    Version("broadcast_read", "all lanes read one word: broadcast", broadcast_read, 4, "1d"),
    Version("indexed_read", "any pattern, from an index table", indexed_read, 4, "1d"),
    Version("strided_read_f64", "8-byte elements", strided_read_f64, 8, "1d"),
    Version("strided_read_c128", "16-byte elements", strided_read_c128, 16, "1d"),
    Version("tile_rows", "[32][32] read by rows", tile_rows, 4, "tile"),
    Version("tile_columns", "[32][32] read by columns: 32-way", tile_columns, 4, "tile"),
    Version("tile_columns_pad33", "[32][33]: padding cures it", tile_columns_pad33, 4, "tile"),
    Version("tile_columns_pad34", "[32][34]: pad not coprime with 32, 2-way", tile_columns_pad34, 4, "tile"),
    Version("tile_columns_swizzle", "tile[ty][tx ^ ty]: XOR swizzle", tile_columns_swizzle, 4, "tile"),
    Version("tile_column_store", "conflict on the store side", tile_column_store, 4, "tile"),
    Version("tile_columns_f64", "[32][32] float64 read by columns", tile_columns_f64, 8, "tile"),
    Version("tile_columns_f64_pad33", "[32][33] float64 read by columns", tile_columns_f64_pad33, 8, "tile"),
)

TILE_DTYPES = {4: np.float32, 8: np.float64}
ONE_D_DTYPES = {4: np.float32, 8: np.float64, 16: np.complex128}


def tile_reference(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The NumPy reference of a tile kernel (tile_rows copies; every other one transposes each tile)."""
    return reference_copy if name == "tile_rows" else reference_tile_transpose


def random_1d(rng: np.random.Generator, itemsize: int = 4) -> np.ndarray:
    """Fresh input for the 1-D kernels: N_WORDS random elements of the given size."""
    dtype = ONE_D_DTYPES[itemsize]
    if itemsize == 16:
        return (rng.standard_normal(N_WORDS) + 1j * rng.standard_normal(N_WORDS)).astype(dtype)
    return rng.standard_normal(N_WORDS).astype(dtype)


def random_tiles(rng: np.random.Generator, n_tiles: int, itemsize: int = 4) -> np.ndarray:
    """Fresh input for the tile kernels: a (32 * n_tiles, 32) stack of random tiles."""
    return rng.standard_normal((TILE * n_tiles, TILE)).astype(TILE_DTYPES[itemsize])


def run_tile(name: str, inp: np.ndarray) -> np.ndarray:
    """Launch tile kernel ``name`` on a (32n, 32) stack, one 32×32 block per tile, and return its output."""
    if inp.ndim != 2 or inp.shape[1] != TILE or inp.shape[0] % TILE or inp.shape[0] == 0:
        raise ValueError(f"the tile kernels take a stack of whole 32×32 tiles, shape (32*n, 32); got {inp.shape}")
    out = np.zeros_like(inp)
    KERNELS[name].kernel[inp.shape[0] // TILE, (TILE, TILE)](inp, out)
    return out


def run_strided(name: str, inp: np.ndarray, stride: int, blocks: int = 1, threads_per_block: int = 32) -> np.ndarray:
    """Launch a strided_read kernel (``strided_read``, ``_f64`` or ``_c128``) and return what it wrote."""
    out = np.zeros(blocks * threads_per_block, dtype=inp.dtype)
    KERNELS[name].kernel[blocks, threads_per_block](inp, out, stride)
    return out


# --- arithmetic: the counts derived by hand in chapter 04 ---------------------------------------------


def stride_wavefronts(stride: int, itemsize: int = 4) -> int:
    """Passes one warp needs for ``s[(lane * stride) % 1024]``, for 0 <= stride <= 33, by the gcd rule.

    4 bytes: the 32 words lane*stride fall into 32 / gcd(stride, 32) banks, gcd(stride, 32) lanes each.
    8 bytes: two half warps, 16 lanes each on 2 words: gcd(stride, 16) per half, 2 halves.
    16 bytes: four quarter warps, 8 lanes each on 4 words: gcd(stride, 8) per quarter, 4 quarters.
    Stride 0 is a broadcast: one element for all: one pass per phase, except that the H200 serves
    phases together (analysis.MERGED_PHASES): the two half warps of an 8-byte broadcast in one pass, the
    two quarters of each half warp of a 16-byte broadcast in one (2 in all).  Up to stride 33 no lane wraps
    around onto another lane's element (31 * 33 = 1023 < 1024), which the rule assumes.
    """
    phases = {4: 1, 8: 2, 16: 4}.get(itemsize)
    if phases is None:
        raise ValueError(f"stride_wavefronts covers 4-, 8- and 16-byte elements, not {itemsize}")
    if not 0 <= stride <= 33:
        raise ValueError(f"the gcd rule here assumes 0 <= stride <= 33 (no wrap-around); got {stride}")
    if stride == 0:
        return {4: 1, 8: 1, 16: 2}[itemsize]
    return phases * math.gcd(stride, WARP_SIZE // phases)


def padded_column_wavefronts(pad: int, itemsize: int = 4) -> int:
    """Passes for a warp reading one column of a [32][32 + pad] tile (4- or 8-byte elements).

    4 bytes: row r starts at word r * (32 + pad), bank (r * pad + c) % 32, so the 32 rows land in
    32 / gcd(pad, 32) banks: gcd(pad, 32)-way (pad 0: 32-way; pad 1: none; pad 2: 2-way).
    8 bytes: row r starts at word 2r(32 + pad), bank 2(r * pad + c) % 32; two half warps of 16 rows,
    gcd(pad, 16) rows per bank in each, so pad 0 costs 16 per half (32 in all) and pad 1 the minimum 2.
    """
    if itemsize == 4:
        return math.gcd(pad, 32)
    if itemsize == 8:
        return 2 * math.gcd(pad, 16)
    raise ValueError("padded_column_wavefronts covers 4- and 8-byte elements")


# --- hardware-count cases (the tracer's validation script runs them under ncu on the H200) ------------

_BLOCKS, _THREADS = 2, 128  # 2 blocks of 4 warps: 8 warps, so every per-warp count is multiplied by 8
_WARPS = _BLOCKS * _THREADS // WARP_SIZE
_FILL = N_WORDS // _THREADS  # fill-loop iterations per thread


def _strided_case(name: str, stride: int, itemsize: int) -> Case:
    kernel = KERNELS[name].kernel
    store_wf = {4: 1, 8: 2, 16: 4}[itemsize]  # a fill store: 32 neighbouring elements, the minimum
    expect = {
        "shared_load_requests": _WARPS,
        "shared_load_wavefronts": _WARPS * stride_wavefronts(stride, itemsize),
        "shared_store_requests": _WARPS * _FILL,
        "shared_store_wavefronts": _WARPS * _FILL * store_wf,
    }
    note = f"s[(lane * {stride}) % 1024], {itemsize}-byte elements"
    if itemsize == 16:
        note += ("; complex128 in a shared array with alignment=16, which numba compiles to one 16-byte "
                 "ld/st.shared.v2.f64 per element (checked in the PTX)")
    return Case(name=f"shared_memory.{name}[stride={stride}]", kernel=kernel, griddim=_BLOCKS, blockdim=_THREADS,
                make_args=lambda rng, s=stride, k=itemsize: (random_1d(rng, k),
                                                             np.zeros(_BLOCKS * _THREADS, ONE_D_DTYPES[k]), s),
                expect=expect, note=note, tags=("shared", "chapter04"))


def _tile_case(name: str, load_wf: int, store_wf: int, itemsize: int = 4, tiles: int = 2) -> Case:
    warps = tiles * TILE  # 32 warps per 32×32 block
    expect = {
        "shared_load_requests": warps,
        "shared_load_wavefronts": warps * load_wf,
        "shared_store_requests": warps,
        "shared_store_wavefronts": warps * store_wf,
    }
    return Case(name=f"shared_memory.{name}", kernel=KERNELS[name].kernel, griddim=tiles, blockdim=(TILE, TILE),
                make_args=lambda rng, n=tiles, k=itemsize: (random_tiles(rng, n, k),
                                                            np.zeros((TILE * n, TILE), TILE_DTYPES[k])),
                expect=expect, note=KERNELS[name].idea, tags=("shared", "chapter04"))


def _indexed_case(label: str, idx: list[int], wavefronts: int) -> Case:
    expect = {"shared_load_requests": _WARPS, "shared_load_wavefronts": _WARPS * wavefronts}
    table = np.array(idx, dtype=np.int32)
    return Case(name=f"shared_memory.indexed_read[{label}]", kernel=indexed_read, griddim=_BLOCKS,
                blockdim=_THREADS,
                make_args=lambda rng, t=table: (random_1d(rng), t.copy(), np.zeros(_BLOCKS * _THREADS, np.float32)),
                expect=expect, note=f"s[idx[lane]] with idx = {label}", tags=("shared", "chapter04"))


STRIDES = (1, 2, 3, 4, 8, 16, 17, 31, 32, 33)

NCU_CASES = (
    [_strided_case("strided_read", s, 4) for s in STRIDES]
    + [_strided_case("strided_read_f64", s, 8) for s in (1, 2, 4, 16, 17)]
    + [_strided_case("strided_read_c128", s, 16) for s in (1, 2, 3, 8)]
    + [
        Case(name="shared_memory.broadcast_read", kernel=broadcast_read, griddim=_BLOCKS, blockdim=_THREADS,
             make_args=lambda rng: (random_1d(rng), np.zeros(_BLOCKS * _THREADS, np.float32)),
             expect={"shared_load_requests": _WARPS, "shared_load_wavefronts": _WARPS,
                     "shared_store_requests": _WARPS * _FILL, "shared_store_wavefronts": _WARPS * _FILL},
             note="every lane reads s[0]: a broadcast", tags=("shared", "chapter04")),
        # lane // 4: 8 words in 8 banks, 4 lanes on each: broadcast inside each group, 1 pass
        _indexed_case("lane // 4", [lane // 4 for lane in range(32)], 1),
        # (lane % 4) * 32: 4 different words all in bank 0, 8 lanes on each: 4 passes, not 32
        _indexed_case("(lane % 4) * 32", [(lane % 4) * 32 for lane in range(32)], 4),
        # lanes 0-15 read word 0, lanes 16-31 read word 32: two words of bank 0, 2 passes
        _indexed_case("0 or 32", [0 if lane < 16 else 32 for lane in range(32)], 2),
        _tile_case("tile_rows", 1, 1),
        _tile_case("tile_columns", 32, 1),
        _tile_case("tile_columns_pad33", 1, 1),
        _tile_case("tile_columns_pad34", 2, 1),
        _tile_case("tile_columns_swizzle", 1, 1),
        _tile_case("tile_column_store", 1, 32),
        _tile_case("tile_columns_f64", padded_column_wavefronts(0, 8), 2, itemsize=8),
        _tile_case("tile_columns_f64_pad33", padded_column_wavefronts(1, 8), 2, itemsize=8),
    ]
)
