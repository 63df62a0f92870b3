"""Shared memory: loop-carried tiles, tiled matmul, a partial last block, in-place updates, aliasing views,
device functions and byte views.

Part of the race checker's validation suite: see :mod:`course.validation.race_suite`."""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, int32, uint8

from course.validation.races.common import B, B_ALIAS, B_WORDS, HALF, N_MM, TILE, E, W, case_adder
from course.validation.races.common import f32 as _f32
from course.validation.races.common import reverse_ref as _reverse_ref
from course.validation.races.common import x_args as _x


# ---------------------------------------------------------------------------------------------------
# Loop-carried tile reuse


@cuda.jit
def tile_loop_one_sync(x, out):
    """Each iteration loads a tile, barrier, reads a neighbour's element; no barrier before the next
    load, so iteration k+1's store to s[t] races with iteration k's read of s[t] by thread t - 1."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    acc = float32(0)
    for k in range(4):
        s[t] = x[k * B + t]
        cuda.syncthreads()
        acc += s[(t + 1) % B]
    out[t] = acc


@cuda.jit
def tile_loop_two_sync(x, out):
    """The same with a second barrier at the end of each iteration: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    acc = float32(0)
    for k in range(4):
        s[t] = x[k * B + t]
        cuda.syncthreads()
        acc += s[(t + 1) % B]
        cuda.syncthreads()
    out[t] = acc


def _tile_loop_ref(x, out):
    r = x.reshape(4, B).astype(np.float64)
    return np.roll(r, -1, axis=1).sum(axis=0).astype(np.float32)


@cuda.jit
def matmul_tiled(a, b, c):
    """Tiled matmul, 16x16 tiles, both barriers: race-free."""
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0)
    for k in range(N_MM // TILE):
        As[ty, tx] = a[row, k * TILE + tx]
        Bs[ty, tx] = b[k * TILE + ty, col]
        cuda.syncthreads()
        for j in range(TILE):
            acc += As[ty, j] * Bs[j, tx]
        cuda.syncthreads()
    c[row, col] = acc


@cuda.jit
def matmul_no_second_sync(a, b, c):
    """Without the barrier at the end of the loop body: the next tile's stores overwrite As and Bs while
    slower warps still read them (write-after-read between warps)."""
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0)
    for k in range(N_MM // TILE):
        As[ty, tx] = a[row, k * TILE + tx]
        Bs[ty, tx] = b[k * TILE + ty, col]
        cuda.syncthreads()
        for j in range(TILE):
            acc += As[ty, j] * Bs[j, tx]
    c[row, col] = acc


@cuda.jit
def matmul_no_first_sync(a, b, c):
    """Without the barrier after the loads: threads read tiles other warps have not stored yet."""
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0)
    for k in range(N_MM // TILE):
        As[ty, tx] = a[row, k * TILE + tx]
        Bs[ty, tx] = b[k * TILE + ty, col]
        for j in range(TILE):
            acc += As[ty, j] * Bs[j, tx]
        cuda.syncthreads()
    c[row, col] = acc


def _mm_args(rng):
    a = rng.integers(-4, 5, (N_MM, N_MM)).astype(np.float32)
    b = rng.integers(-4, 5, (N_MM, N_MM)).astype(np.float32)
    return a, b, np.zeros((N_MM, N_MM), np.float32)


def _mm_ref(a, b, c):
    return (a.astype(np.float64) @ b).astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# Partial last block


@cuda.jit
def partial_block_sync(x, out):
    """n is not a multiple of 64: out-of-range threads store 0 and still reach the barrier: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * B + t
    n = x.shape[0]
    s[t] = x[i] if i < n else 0.0
    cuda.syncthreads()
    if i < n:
        out[i] = s[t] + s[B - 1 - t]


@cuda.jit
def partial_block_nosync(x, out):
    """The same without the barrier: thread t reads s[63 - t], stored by the other warp."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * B + t
    n = x.shape[0]
    s[t] = x[i] if i < n else 0.0
    if i < n:
        out[i] = s[t] + s[B - 1 - t]


def _partial_ref(x, out):
    n = x.shape[0]
    pad = np.zeros(-(-n // B) * B, np.float32)
    pad[:n] = x
    r = pad.reshape(-1, B)
    return (r + r[:, ::-1]).reshape(-1)[:n]


# ---------------------------------------------------------------------------------------------------
# In-place updates


@cuda.jit
def inplace_shift_nosync(x, out):
    """s[t] = s[t + 1] in place: thread t reads s[t + 1] while thread t + 1 overwrites it."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    if t < B - 1:
        s[t] = s[t + 1]
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def inplace_shift_sync(x, out):
    """Read into a register, barrier, then write: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    v = s[t + 1] if t < B - 1 else s[t]
    cuda.syncthreads()
    s[t] = v
    cuda.syncthreads()
    out[t] = s[t]


def _shift_ref(x, out):
    return np.concatenate([x[1:], x[-1:]])


@cuda.jit
def own_element(x, out):
    """Trap: every thread reads and writes only its own element, many times: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    for _ in range(3):
        s[t] = s[t] * 2.0 + 1.0
    out[t] = s[t]


def _own_ref(x, out):
    v = x.astype(np.float32)
    for _ in range(3):
        v = v * np.float32(2) + np.float32(1)
    return v


# ---------------------------------------------------------------------------------------------------
# Aliasing, device functions, byte views


@cuda.jit
def alias_views_nosync(x, out):
    """Two views of one shared array overlap: lo = s[0:64], hi = s[32:96].  Thread t writes lo[t] and
    reads hi[t] = s[t + 32], written by thread t + 32 (the other warp) with no barrier."""
    s = cuda.shared.array(B_ALIAS, float32)
    lo = s[0:B]
    hi = s[HALF:B + HALF]
    t = cuda.threadIdx.x
    if t < HALF:
        hi[B - HALF + t] = 0.0  # s[64 + t], the tail only hi sees
    lo[t] = x[t]
    out[t] = hi[t]


@cuda.jit
def alias_views_sync(x, out):
    """The same with a barrier: race-free."""
    s = cuda.shared.array(B_ALIAS, float32)
    lo = s[0:B]
    hi = s[HALF:B + HALF]
    t = cuda.threadIdx.x
    if t < HALF:
        hi[B - HALF + t] = 0.0
    lo[t] = x[t]
    cuda.syncthreads()
    out[t] = hi[t]


def _alias_ref(x, out):
    return np.concatenate([x[HALF:], np.zeros(HALF, np.float32)])


@cuda.jit(device=True)
def _dev_reverse_nosync(v):
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = v
    return s[B - 1 - t]


@cuda.jit(device=True)
def _dev_reverse_sync(v):
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = v
    cuda.syncthreads()
    return s[B - 1 - t]


@cuda.jit
def devfn_shared_nosync(x, out):
    """A device function's shared array is the block's: its missing barrier races between warps."""
    t = cuda.threadIdx.x
    out[t] = _dev_reverse_nosync(x[t])


@cuda.jit
def devfn_shared_sync(x, out):
    """The device function with the barrier: race-free."""
    t = cuda.threadIdx.x
    out[t] = _dev_reverse_sync(x[t])


@cuda.jit
def bytes_neighbours_disjoint(x, out):
    """Trap: thread t writes byte t; four threads share each 4-byte word, but no byte is shared: race-free."""
    s = cuda.shared.array(B, uint8)
    t = cuda.threadIdx.x
    s[t] = x[t]
    s[t] = s[t] + 1
    out[t] = s[t]


def _bytes_ref(x, out):
    return (x + 1).astype(np.uint8)


@cuda.jit
def byte_view_nosync(x, out):
    """A byte view of an int32 array: thread t writes byte t, then reads word (63 - t) // 4 = bytes
    stored by threads of the other warp, with no barrier."""
    s = cuda.shared.array(B_WORDS, int32)
    b = s.view(np.uint8)
    t = cuda.threadIdx.x
    b[t] = x[t]
    out[t] = s[(B - 1 - t) // 4]


@cuda.jit
def byte_view_sync(x, out):
    """The same with the barrier: race-free."""
    s = cuda.shared.array(B_WORDS, int32)
    b = s.view(np.uint8)
    t = cuda.threadIdx.x
    b[t] = x[t]
    cuda.syncthreads()
    out[t] = s[(B - 1 - t) // 4]


def _byte_view_ref(x, out):
    words = x.astype(np.uint8).view(np.int32)
    return words[(B - 1 - np.arange(B)) // 4].astype(np.int32)


# ---------------------------------------------------------------------------------------------------
# The cases (what CUDA's memory model says about each kernel above, derived by hand)

CASES: list = []
_add = case_adder(CASES)

# tile loop: thread t reads s[t+1] (lane 31 reads s[32]: other warp); next store to s[t+1] by thread t+1 -> both
_add("tile_loop_one_sync", tile_loop_one_sync, 1, B, lambda rng: (_f32(rng, 4 * B), np.zeros(B, np.float32)),
     (E, W), tags=("loop-carried", "write after read"))
_add("tile_loop_two_sync", tile_loop_two_sync, 1, B, lambda rng: (_f32(rng, 4 * B), np.zeros(B, np.float32)),
     reference=_tile_loop_ref, tags=("loop-carried",))
# matmul: (16,16) block = 8 warps of two rows each; As[ty, j] is read by the two rows' warps... row ty's
# As row is written by warp ty // 2 and read by the same warp; Bs[j, tx] is read by every warp -> error.
# Within a warp: As[ty, j] written by lanes of row ty, read by the same lanes -> warning as well.
_add("matmul_tiled", matmul_tiled, (2, 2), (TILE, TILE), _mm_args, reference=_mm_ref, tags=("tile",))
_add("matmul_no_second_sync", matmul_no_second_sync, (2, 2), (TILE, TILE), _mm_args, (E, W),
     tags=("tile", "loop-carried", "write after read"))
_add("matmul_no_first_sync", matmul_no_first_sync, (2, 2), (TILE, TILE), _mm_args, (E, W),
     tags=("tile", "missing barrier"))
_add("partial_block_sync", partial_block_sync, 3, B, lambda rng: (_f32(rng, 150), np.zeros(150, np.float32)),
     reference=_partial_ref, tags=("partial block",))
_add("partial_block_nosync", partial_block_nosync, 3, B, lambda rng: (_f32(rng, 150), np.zeros(150, np.float32)),
     (E,), tags=("partial block",))
# shift: thread t reads s[t+1], written by t+1: same warp except 31|32 -> both
_add("inplace_shift_nosync", inplace_shift_nosync, 1, B, _x(), (E, W), tags=("in place",))
_add("inplace_shift_sync", inplace_shift_sync, 1, B, _x(), reference=_shift_ref, tags=("in place",))
_add("own_element", own_element, 1, B, _x(), reference=_own_ref, tags=("trap",))
_add("alias_views_nosync", alias_views_nosync, 1, B, _x(), (E,), tags=("aliasing",),
     note="warp 0 reads s[32:64] (stored by warp 1 through lo); warp 1 reads s[64:96] (zeroed by warp 0 "
          "through hi): every racing pair crosses the warps")
_add("alias_views_sync", alias_views_sync, 1, B, _x(), reference=_alias_ref, tags=("aliasing",))
_add("devfn_shared_nosync", devfn_shared_nosync, 1, B, _x(), (E,), tags=("device function",))
_add("devfn_shared_sync", devfn_shared_sync, 1, B, _x(), reference=_reverse_ref, tags=("device function",))
_add("bytes_neighbours_disjoint", bytes_neighbours_disjoint, 1, B,
     lambda rng: (rng.integers(0, 200, B).astype(np.uint8), np.zeros(B, np.uint8)), reference=_bytes_ref,
     tags=("trap", "bytes"))
# byte view: thread t reads word (63-t)//4 = bytes 4*((63-t)//4) .. +3, written by threads 60-.., i.e.
# t in 0..31 reads bytes 32..63 (warp 1) -> error; t in 32..63 reads bytes 0..31 (warp 0) -> error only
_add("byte_view_nosync", byte_view_nosync, 1, B,
     lambda rng: (rng.integers(0, 200, B).astype(np.uint8), np.zeros(B, np.int32)), (E,), tags=("bytes",))
_add("byte_view_sync", byte_view_sync, 1, B,
     lambda rng: (rng.integers(0, 200, B).astype(np.uint8), np.zeros(B, np.int32)), reference=_byte_view_ref,
     tags=("bytes",))
