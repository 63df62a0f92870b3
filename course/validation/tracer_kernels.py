"""The kernels of the tracer's validation suite (:mod:`course.validation.tracer_suite` holds the cases):
kernels that make memory counting hard, and a few with known divergence and races
(``DIVERGENCE_KERNELS``, ``RACE_KERNELS``) that the tests use.
"""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import complex64, complex128, cuda, float32, float64, int32, uint8


TILE = 32
ROWS = 8  # a (32, 8) block covers a 32x32 tile in 4 passes of 8 rows
# Padded widths as constants: numba needs a shared array's shape as literal ints, and `TILE + 1`
# inside a kernel is an int64 expression, which compiles on the CPU but not for the GPU.
TILE_PAD1 = TILE + 1
TILE_PAD2 = TILE + 2


# ---------------------------------------------------------------------------------------------------
# Global memory


@cuda.jit
def strided_load(a, out, stride):
    """Lane i reads a[i * stride]: the classic coalescing experiment."""
    i = cuda.grid(1)
    out[i] = a[i * stride]


@cuda.jit
def offset_load(a, out, offset):
    """Lane i reads a[i + offset]: a misaligned start."""
    i = cuda.grid(1)
    out[i] = a[i + offset]


@cuda.jit
def copy(a, out):
    """out[i] = a[i]: the baseline, for any element size."""
    i = cuda.grid(1)
    out[i] = a[i]


@cuda.jit
def broadcast_load(a, out):
    """Every lane reads a[0]."""
    i = cuda.grid(1)
    out[i] = a[0]


@cuda.jit
def guarded_copy(a, out, n):
    """The usual bounds guard: the last warp has only n % 32 active lanes."""
    i = cuda.grid(1)
    if i < n:
        out[i] = a[i]


@cuda.jit
def copy_2d(a, out):
    """One block copies a small matrix; with blockDim.x < 32 a warp spans several rows."""
    row = cuda.threadIdx.y
    col = cuda.threadIdx.x
    out[row, col] = a[row, col]


@cuda.jit
def copy_2d_rowview(a, out):
    """The same copy through a row view (a[row] is a 1-D view of one row)."""
    row = cuda.threadIdx.y
    col = cuda.threadIdx.x
    src = a[row]
    out[row, col] = src[col]


@cuda.jit
def copy_3d(a, out):
    """A 3-D block reading a 3-D array whose rows are wider than the block."""
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    z = cuda.threadIdx.z
    out[z, y, x] = a[z, y, x]


@cuda.jit
def gather(a, idx, out):
    """out[i] = a[idx[i]]: the sectors depend on the data."""
    i = cuda.grid(1)
    out[i] = a[idx[i]]


@cuda.jit
def transpose_naive(a, out):
    """Reads rows (coalesced), writes columns (one sector per lane)."""
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        out[tx, ty + j] = a[ty + j, tx]


@cuda.jit
def histogram(a, hist):
    """Global atomics: not loads or stores in Nsight Compute's counts."""
    i = cuda.grid(1)
    cuda.atomic.add(hist, a[i] % 8, 1)


# ---------------------------------------------------------------------------------------------------
# Shared memory


@cuda.jit
def shared_stride_f32(out, stride):
    """Store and load s[t * stride] (4-byte words): gcd(stride, 32)-way conflicts on both sides."""
    s = cuda.shared.array(2048, float32)
    t = cuda.threadIdx.x
    s[t * stride] = t
    cuda.syncthreads()
    out[t] = s[(t ^ 1) * stride]


@cuda.jit
def shared_stride_u8(out, stride):
    """The same with 1-byte elements: lanes in one 4-byte word share it."""
    s = cuda.shared.array(8192, uint8)
    t = cuda.threadIdx.x
    s[t * stride] = t
    cuda.syncthreads()
    out[t] = s[(t ^ 1) * stride]


@cuda.jit
def shared_broadcast(out):
    """s[0] for everyone, s[t // 2] for pairs, s[t % 4 + 40] for groups of 8: all one wavefront."""
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = t * 2.0
    cuda.syncthreads()
    out[t] = s[0] + s[t // 2] + s[t % 4 + 40]


@cuda.jit
def shared_gather_f64(idx, out):
    """8-byte shared loads at data-given indices: half-warp phases, broadcast, pair patterns."""
    s = cuda.shared.array(128, float64)
    t = cuda.threadIdx.x
    s[t] = t
    s[t + 64] = -t
    cuda.syncthreads()
    out[t] = s[idx[t]]


@cuda.jit
def shared_partial_warp(out):
    """A 40-thread block: the second warp has 8 lanes and still issues each instruction once."""
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    out[t] = s[39 - t]


@cuda.jit
def tile_f32_32(a, out):
    """Transpose through a [32][32] tile: column reads, 32-way conflicts."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[ty + j, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        out[ty + j, tx] = tile[tx, ty + j]


@cuda.jit
def tile_f32_33(a, out):
    """[32][33]: one word of padding moves each row to the next bank."""
    tile = cuda.shared.array((TILE, TILE_PAD1), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[ty + j, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        out[ty + j, tx] = tile[tx, ty + j]


@cuda.jit
def tile_f32_34(a, out):
    """[32][34]: two words of padding, rows two banks apart: 2-way."""
    tile = cuda.shared.array((TILE, TILE_PAD2), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[ty + j, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        out[ty + j, tx] = tile[tx, ty + j]


@cuda.jit
def tile_f32_swizzle(a, out):
    """XOR swizzle: element (r, c) lives at tile[r, c ^ r]; columns hit 32 different banks."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        r = ty + j
        tile[r, tx ^ r] = a[r, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        r = ty + j
        out[r, tx] = tile[tx, r ^ tx]


@cuda.jit
def tile_f32_partial_swizzle(a, out):
    """XOR with only the low 3 bits of the row: 8 banks per column read, 4-way."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        r = ty + j
        tile[r, tx ^ (r & 7)] = a[r, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        r = ty + j
        out[r, tx] = tile[tx, r ^ (tx & 7)]


@cuda.jit
def tile_column_store(a, out):
    """Transpose on the store side: column stores conflict 32-way, row reads do not."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[tx, ty + j] = a[ty + j, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        out[ty + j, tx] = tile[ty + j, tx]


@cuda.jit
def tile16_pad0(a, out):
    """A 16x16 block: each warp covers two rows of a [16][16] tile."""
    tile = cuda.shared.array((16, 16), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = a[ty, tx]
    cuda.syncthreads()
    out[ty, tx] = tile[tx, ty]


@cuda.jit
def tile16_pad1(a, out):
    """[16][17]: padding by one still leaves a 2-way conflict when a warp spans two rows."""
    tile = cuda.shared.array((16, 17), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = a[ty, tx]
    cuda.syncthreads()
    out[ty, tx] = tile[tx, ty]


@cuda.jit
def tile_f64_32(a, out):
    """float64 [32][32] tile: 8-byte column reads."""
    tile = cuda.shared.array((TILE, TILE), float64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[ty + j, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        out[ty + j, tx] = tile[tx, ty + j]


@cuda.jit
def tile_f64_33(a, out):
    """float64 [32][33]: one element of padding is two banks."""
    tile = cuda.shared.array((TILE, TILE_PAD1), float64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[ty + j, tx]
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        out[ty + j, tx] = tile[tx, ty + j]


@cuda.jit
def reduce_sequential(a, out):
    """Tree sum with sequential addressing (s[t] += s[t + stride]): conflict-free."""
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.blockIdx.x * 128 + t]
    cuda.syncthreads()
    stride = 64
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_strided_index(a, out):
    """Tree sum with index = 2 * stride * t: the bank conflicts of interleaved addressing."""
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.blockIdx.x * 128 + t]
    cuda.syncthreads()
    stride = 1
    while stride < 128:
        index = 2 * stride * t
        if index < 128:
            s[index] += s[index + stride]
        cuda.syncthreads()
        stride *= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def shared_atomic(out):
    """Shared-memory atomics: counted as neither loads nor stores."""
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    s[t] = 0
    cuda.syncthreads()
    cuda.atomic.add(s, t % 4, 1)
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def complex_copy_c64(a, out):
    """complex64 through shared memory: one 8-byte access per element, or two 4-byte ones?"""
    s = cuda.shared.array(64, complex64)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[t ^ 1]


@cuda.jit
def complex_copy_c128(a, out):
    """complex128 through shared memory: one 16-byte access per element, or two 8-byte ones?"""
    s = cuda.shared.array(64, complex128)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[t ^ 1]


@cuda.jit
def shared_gather_c128(a, idx, out):
    """16-byte shared loads at data-given indices: quarter-warp phases, and when two quarters share one."""
    s = cuda.shared.array(64, complex128)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[idx[t]]


@cuda.jit
def shared_run4_f32(a, out):
    """Each thread sums its own 4 neighbouring floats s[4t .. 4t+3]: may the compiler make it one LDS.128?"""
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    for k in range(4):
        s[t + 64 * k] = a[t + 64 * k]
    cuda.syncthreads()
    acc = float32(0.0)
    for k in range(4):
        acc += s[4 * t + k]
    out[t] = acc


@cuda.jit
def shared_run2_f32(a, out):
    """Each thread sums s[2t] and s[2t+1]: one LDS.64?"""
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    s[t + 64] = a[t + 64]
    cuda.syncthreads()
    acc = float32(0.0)
    for k in range(2):
        acc += s[2 * t + k]
    out[t] = acc


@cuda.jit
def shared_run4_f32_stride5(a, out):
    """s[5t .. 5t+3]: neighbouring floats, but a row of 5 is not 16-byte aligned for most threads."""
    s = cuda.shared.array(320, float32)
    t = cuda.threadIdx.x
    for k in range(5):
        s[t + 64 * k] = a[t + 64 * k]
    cuda.syncthreads()
    acc = float32(0.0)
    for k in range(4):
        acc += s[5 * t + k]
    out[t] = acc


# A particle as a structured record (AoS): 8 float32 fields, 32 bytes; packed (NumPy's default) and aligned.
PARTICLE = np.dtype([("x", np.float32), ("y", np.float32), ("z", np.float32), ("w", np.float32),
                     ("vx", np.float32), ("vy", np.float32), ("vz", np.float32), ("m", np.float32)])
PARTICLE_ALIGNED = np.dtype(PARTICLE.descr, align=True)


@cuda.jit
def record_field_read(p, out):
    """out[i] = p[i].x: one 4-byte field per lane, 32 bytes apart."""
    i = cuda.grid(1)
    if i < p.shape[0]:
        out[i] = p[i].x


@cuda.jit
def record_update(p, dt):
    """Two fields moved by two others, through a record reference."""
    i = cuda.grid(1)
    if i < p.shape[0]:
        q = p[i]
        q.x = q.x + q.vx * dt
        q.y += q.vy * dt


@cuda.jit
def record_copy(p, out):
    """A whole record copied."""
    i = cuda.grid(1)
    if i < p.shape[0]:
        out[i] = p[i]


# ---------------------------------------------------------------------------------------------------
# Known divergence and races (used by tests, not by Nsight Compute)


@cuda.jit
def branch_even_odd(a, out):
    """Even lanes add, odd lanes multiply: every warp splits 16/16 at the if."""
    i = cuda.grid(1)
    if cuda.threadIdx.x % 2 == 0:
        out[i] = a[i] + 1.0
    else:
        out[i] = a[i] * 2.0


@cuda.jit
def branch_by_warp(a, out):
    """The branch depends on the warp number only: no warp splits."""
    i = cuda.grid(1)
    if (cuda.threadIdx.x // 32) % 2 == 0:
        out[i] = a[i] + 1.0
    else:
        out[i] = a[i] * 2.0


@cuda.jit
def tile_transpose_nosync(a, out):
    """The [32][33] tile transpose with its syncthreads() removed: reads race with other threads' writes."""
    tile = cuda.shared.array((TILE, TILE_PAD1), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[ty + j, tx]
    for j in range(0, TILE, ROWS):
        out[ty + j, tx] = tile[tx, ty + j]


DIVERGENCE_KERNELS = {"branch_even_odd": branch_even_odd, "branch_by_warp": branch_by_warp}
RACE_KERNELS = {"tile_transpose_nosync": tile_transpose_nosync, "tile_f32_33": tile_f32_33}

