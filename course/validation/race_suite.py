"""Racy and race-free kernels whose races are derived by hand: the race checker's validation suite.

Each entry of ``RACE_CASES`` is a :class:`RaceCase`: a kernel, its launch shape, a recipe for fresh
arguments and what CUDA's memory model says about it, worked out by hand (the comment above each
kernel gives the reasoning):

- ``shared``: the severities of the shared-memory races, as compute-sanitizer racecheck grades them:
  ``"warning"`` for a race between lanes of one warp (racecheck's "warp-level programming" hazard),
  ``"error"`` for a race between threads of different warps; ``()`` when there is none;
- ``global_``: whether two threads access one global address, at least one writing, with no barrier
  between them (threads of different blocks: always a race; racecheck does not look at global memory);
- ``benign``: races that write the same value (a flag), which racecheck does not report.

``scripts/gpu/validate_races.py`` runs every case under ``compute-sanitizer --tool racecheck`` on the
H200 and records the table in ``data/race_validation.json``; ``tests/test_race_validation.py`` runs the
tracer on every case and compares.  Where the model defines a race that racecheck does not report, the
recorded table says so explicitly (``racecheck_misses``), case by case.

Blocks are 64 threads (two warps) unless a case says otherwise, so that every racy pattern can be made
to stay inside one warp (a warning) or to cross the warp boundary (an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, int32, uint8

B = 64          # threads per block in the 1-D cases (two warps)
HALF = 32
TILE = 16       # matmul tile: (16, 16) blocks, 8 warps
N_MM = 32       # matmul size: 2 tiles along k
# shapes of shared arrays must be literal ints for the GPU compiler: `B + 2` inside a kernel is an int64
# expression, which the engine accepts and numba-cuda refuses (seen on the H200)
B_HALO = B + 2
B_ALIAS = B + HALF
B_WORDS = B // 4
FULL = 0xFFFFFFFF
LOW = 0x0000FFFF


@dataclass(frozen=True)
class RaceCase:
    """One launch and what CUDA's memory model says about its races (derived by hand)."""

    name: str
    kernel: Any
    griddim: Any
    blockdim: Any
    make_args: Callable[[np.random.Generator], tuple]
    shared: tuple = ()          # severities of shared-memory races: subset of ("error", "warning")
    global_: bool = False       # a global-memory race (racecheck does not look at global memory)
    benign: bool = False        # same-value writes only (a flag): racecheck reports nothing
    note: str = ""
    tags: tuple = field(default_factory=tuple)
    reference: Optional[Callable[..., np.ndarray]] = None  # race-free cases: NumPy's value of the last argument

    def args(self, seed: int = 0) -> tuple:
        return tuple(self.make_args(np.random.default_rng(seed)))

    @property
    def racy(self) -> bool:
        return bool(self.shared) or self.global_


def _f32(rng, n):
    return rng.standard_normal(n).astype(np.float32)


def _ints(rng, n):
    return rng.integers(0, 100, n).astype(np.float32)  # small integers: exact float sums in any order


# ---------------------------------------------------------------------------------------------------
# Shared memory: reversal (a barrier between store and cross-warp load)


@cuda.jit
def reverse_nosync(x, out):
    """s[t] = x[t]; out[t] = s[63 - t]: thread t reads what thread 63 - t (the other warp) wrote."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[B - 1 - t]


@cuda.jit
def reverse_sync(x, out):
    """The same with syncthreads() between: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[B - 1 - t]


@cuda.jit
def neighbour_nosync(x, out):
    """out[t] = s[t ^ 1]: the partner lane is in the same warp, so only a warp-level hazard."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[t ^ 1]


# ---------------------------------------------------------------------------------------------------
# Stencils


@cuda.jit
def stencil_nosync(x, out):
    """3-point stencil with halo; no barrier: lane 31 reads s[33] (written by thread 32, other warp)."""
    s = cuda.shared.array(B_HALO, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * B + t
    n = x.shape[0]
    s[t + 1] = x[i]
    if t == 0:
        s[0] = x[i - 1] if i > 0 else 0.0
    if t == B - 1:
        s[B + 1] = x[i + 1] if i + 1 < n else 0.0
    out[i] = s[t] + s[t + 1] + s[t + 2]


@cuda.jit
def stencil_sync(x, out):
    """The same with syncthreads() before the reads: race-free."""
    s = cuda.shared.array(B_HALO, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * B + t
    n = x.shape[0]
    s[t + 1] = x[i]
    if t == 0:
        s[0] = x[i - 1] if i > 0 else 0.0
    if t == B - 1:
        s[B + 1] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    out[i] = s[t] + s[t + 1] + s[t + 2]


def _stencil_ref(x, out):
    p = np.concatenate([[0], x, [0]]).astype(np.float64)
    return (p[:-2] + p[1:-1] + p[2:]).astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# Scans (Hillis-Steele inclusive prefix sum over one block)


@cuda.jit
def scan_nosync(x, out):
    """Each step reads s[t - off] and writes s[t] with no barrier at all."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    off = 1
    while off < B:
        if t >= off:
            s[t] += s[t - off]
        off *= 2
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def scan_one_sync(x, out):
    """One barrier per step, after the write: thread t writes s[t] while thread t + off reads it."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    off = 1
    while off < B:
        if t >= off:
            s[t] += s[t - off]
        cuda.syncthreads()
        off *= 2
    out[t] = s[t]


@cuda.jit
def scan_two_sync(x, out):
    """Read, barrier, write, barrier: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    off = 1
    while off < B:
        v = s[t - off] if t >= off else 0.0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        off *= 2
    out[t] = s[t]


@cuda.jit
def scan_double_buffer(x, out):
    """Ping-pong between two buffers, one barrier per step: race-free."""
    s = cuda.shared.array((2, B), float32)
    t = cuda.threadIdx.x
    s[0, t] = x[t]
    cuda.syncthreads()
    src = 0
    off = 1
    while off < B:
        v = s[src, t]
        if t >= off:
            v += s[src, t - off]
        s[1 - src, t] = v
        cuda.syncthreads()
        src = 1 - src
        off *= 2
    out[t] = s[src, t]


@cuda.jit
def scan_double_buffer_nosync(x, out):
    """Ping-pong without the barrier: step k+1 reads what step k of other threads has not written yet."""
    s = cuda.shared.array((2, B), float32)
    t = cuda.threadIdx.x
    s[0, t] = x[t]
    cuda.syncthreads()
    src = 0
    off = 1
    while off < B:
        v = s[src, t]
        if t >= off:
            v += s[src, t - off]
        s[1 - src, t] = v
        src = 1 - src
        off *= 2
    cuda.syncthreads()
    out[t] = s[src, t]


def _scan_ref(x, out):
    return np.cumsum(x.astype(np.float64)).astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# Reductions


@cuda.jit
def reduce_nosync(x, out):
    """Tree reduction with sequential addressing and no barrier inside the loop."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * B + t]
    cuda.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_sync(x, out):
    """The same with syncthreads() after each step: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * B + t]
    cuda.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_warp_unsynced(x, out):
    """The old 'last warp unrolled' trick without syncwarp: lanes of warp 0 race (warning only)."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * B + t]
    cuda.syncthreads()
    if t < 32:
        s[t] += s[t + 32]
        s[t] += s[t + 16]
        s[t] += s[t + 8]
        s[t] += s[t + 4]
        s[t] += s[t + 2]
        s[t] += s[t + 1]
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_warp_syncwarp(x, out):
    """Warp-synchronous done right: read, syncwarp, write, syncwarp at each step: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * B + t]
    cuda.syncthreads()
    if t < 32:
        off = 32
        while off > 0:
            v = s[t] + s[t + off]
            cuda.syncwarp()
            s[t] = v
            cuda.syncwarp()
            off //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


def _block_sums(x, out):
    return x.reshape(-1, B).astype(np.float64).sum(axis=1).astype(np.float32)


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


def _reverse_ref(x, out):
    return x[::-1].copy()


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
# Atomics, flags, read-only after a barrier, disjoint halves


@cuda.jit
def shared_atomic_histogram(x, out):
    """Trap: every thread does atomic.add on a shared bin; barrier; read: race-free."""
    h = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    if t < 8:
        h[t] = 0
    cuda.syncthreads()
    cuda.atomic.add(h, x[t] % 8, 1)
    cuda.syncthreads()
    if t < 8:
        out[t] = h[t]


@cuda.jit
def shared_plain_histogram(x, out):
    """h[bin] += 1 without an atomic: a read-modify-write race within and between warps."""
    h = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    if t < 8:
        h[t] = 0
    cuda.syncthreads()
    h[x[t] % 8] += 1
    cuda.syncthreads()
    if t < 8:
        out[t] = h[t]


def _hist_args(rng):
    return rng.integers(0, 1000, B).astype(np.int32), np.zeros(8, np.int32)


def _hist_ref(x, out):
    return np.bincount(x % 8, minlength=8).astype(np.int32)


@cuda.jit
def atomic_then_plain_read(out):
    """atomic.add on s[0] by every thread and a plain read of s[0] with no barrier between."""
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = 0
    cuda.syncthreads()
    cuda.atomic.add(s, 0, 1)
    out[t] = s[0]


@cuda.jit
def read_only_after_barrier(x, out):
    """Trap: one store, one barrier, then everyone reads anything, many times: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    acc = float32(0)
    for j in range(B):
        acc += s[(t + j) % B]
    out[t] = acc


def _ro_ref(x, out):
    return np.full(B, x.astype(np.float64).sum(), np.float32)


@cuda.jit
def disjoint_halves(x, out):
    """Trap: with no barrier, warp 0 stores and reads the lower half, warp 1 the upper; but warp 0 reads
    each element only after writing it itself: warp 1 writes s[32:], warp 0 reads s[:32] (own stores)."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    if t < HALF:
        out[t] = s[t] * 2.0
    else:
        s[t] = s[t] + 1.0
        out[t] = s[t]


def _halves_ref(x, out):
    r = x.copy()
    r[:HALF] = x[:HALF] * np.float32(2)
    r[HALF:] = x[HALF:] + np.float32(1)
    return r


@cuda.jit
def flag_same_value(x, out):
    """Every thread writes 1 to one flag (the same value), barrier, read: a benign write-write race."""
    f = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        f[0] = 0
    cuda.syncthreads()
    if x[t] > -1000.0:
        f[0] = 1
    cuda.syncthreads()
    out[t] = f[0]


@cuda.jit
def flag_different_values(x, out):
    """Every thread writes its own id to one word: a write-write race of different values."""
    f = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    f[0] = t
    cuda.syncthreads()
    out[t] = f[0] >= 0


# ---------------------------------------------------------------------------------------------------
# Warp-level synchronisation


@cuda.jit
def syncwarp_exchange(x, out):
    """Warp-synchronous done right: store, syncwarp, read the partner lane's element: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncwarp()
    out[t] = s[t ^ 1]


def _xor1_ref(x, out):
    return x[np.arange(B) ^ 1]


@cuda.jit
def syncwarp_across_warps(x, out):
    """syncwarp orders one warp only: reading the other warp's element after it is still a race."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncwarp()
    out[t] = s[(t + HALF) % B]


@cuda.jit
def shfl_then_neighbour_load(x, out):
    """Store, shfl_sync, read the neighbour's element: a shuffle orders execution, not memory;
    racecheck reports a warp-level hazard."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    v = cuda.shfl_sync(FULL, t, 0)
    out[t] = s[t ^ 1] + float32(v - v)


@cuda.jit
def activemask_then_load(x, out):
    """activemask() neither waits nor orders memory: the neighbour read still races (warning)."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    m = cuda.activemask()
    out[t] = s[t ^ 1] + float32(m & 0)


@cuda.jit
def syncwarp_partial_then_full(x, out):
    """Lanes 0-15 run an extra phase ordered by syncwarp(0xFFFF); then a full-warp syncwarp orders their
    writes before lanes 16-31 read them: race-free (one warp; Volta's independent thread scheduling)."""
    s = cuda.shared.array(HALF, float32)
    lane = cuda.threadIdx.x
    if lane < 16:
        s[lane] = x[lane]
        cuda.syncwarp(LOW)
        s[lane + 16] = s[15 - lane] * 2.0
    cuda.syncwarp()
    out[lane] = s[31 - lane]


def _partial_full_ref(x, out):
    s = np.zeros(HALF, np.float32)
    s[:16] = x[:16]
    s[16:] = s[15::-1] * np.float32(2)
    return s[::-1].copy()


@cuda.jit
def syncwarp_partial_only(x, out):
    """Lanes 0-15 store and sync among themselves (mask 0xFFFF); lanes 16-31 read those elements with no
    sync they take part in: a warp-level race."""
    s = cuda.shared.array(HALF, float32)
    lane = cuda.threadIdx.x
    if lane < 16:
        s[lane] = x[lane]
        cuda.syncwarp(LOW)
    else:
        out[lane] = s[lane - 16]


# ---------------------------------------------------------------------------------------------------
# Write-after-read alone (what racecheck reports of it)


@cuda.jit
def war_neighbour_in_warp(x, out):
    """Lane t reads s[t ^ 1], then stores to s[t]: its partner's store lands on what it read (WAR inside a warp)."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    v = s[t ^ 1]
    s[t] = v * 2.0
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def war_across_warps(x, out):
    """Thread t reads s[(t + 32) % 64] (the other warp's element), then stores to s[t]: WAR between warps."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    v = s[(t + HALF) % B]
    s[t] = v * 2.0
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def rmw_pairs_in_warp(out):
    """s[t // 2] += 1: two lanes of one warp read-modify-write one word at one instruction."""
    s = cuda.shared.array(HALF, float32)
    t = cuda.threadIdx.x
    if t < HALF:
        s[t] = 0.0
    cuda.syncthreads()
    s[t // 2] += 1.0
    cuda.syncthreads()
    if t < HALF:
        out[t] = s[t]


# ---------------------------------------------------------------------------------------------------
# Global memory (racecheck does not look at it; CUDA's memory model defines these races all the same)


@cuda.jit
def global_accumulate_plain(x, out):
    """out[0] += x[i] from every thread of every block: lost updates."""
    i = cuda.grid(1)
    out[0] += x[i]


@cuda.jit
def global_accumulate_atomic(x, out):
    """Trap: the same with atomic.add: race-free."""
    i = cuda.grid(1)
    cuda.atomic.add(out, 0, x[i])


def _accum_ref(x, out):
    return np.array([x.astype(np.float64).sum()], np.float32)


@cuda.jit
def global_blocks_one_output(x, out):
    """Thread 0 of every block writes its block's value to out[0]: different blocks, different values."""
    if cuda.threadIdx.x == 0:
        out[0] = x[cuda.blockIdx.x]


@cuda.jit
def global_own_element(x, out):
    """Trap: out[i] = 2 x[i], each thread its own element: race-free."""
    i = cuda.grid(1)
    out[i] = 2.0 * x[i]


def _own_global_ref(x, out):
    return (2 * x).astype(np.float32)


@cuda.jit
def global_shift_one_block(a):
    """a[t] = a[t + 1] in place in one block, no barrier: thread t reads what thread t + 1 overwrites."""
    t = cuda.threadIdx.x
    if t < a.shape[0] - 1:
        a[t] = a[t + 1]


@cuda.jit
def global_shift_one_block_sync(a):
    """Read into a register, syncthreads (orders global memory within the block too), write: race-free."""
    t = cuda.threadIdx.x
    v = a[t + 1] if t < a.shape[0] - 1 else a[t]
    cuda.syncthreads()
    a[t] = v


def _gshift_ref(a):
    return np.concatenate([a[1:], a[-1:]])


@cuda.jit
def global_shift_many_blocks_sync(a, out):
    """Barrier inside each block, but thread 63 of block k reads a[64(k+1)], which block k+1 writes:
    no barrier orders two blocks."""
    i = cuda.grid(1)
    n = a.shape[0]
    v = a[i + 1] if i + 1 < n else a[i]
    cuda.syncthreads()
    a[i] = v
    out[i] = v


@cuda.jit
def global_flag_same_value(x, flag):
    """Every thread of every block writes 1 to flag[0]: a benign same-value write."""
    if x[cuda.grid(1)] > -1000.0:
        flag[0] = 1


@cuda.jit
def global_counter_one_warp(out):
    """out[0] += 1 by the 32 lanes of one warp: a lost-update race inside a warp."""
    out[0] += 1


# ---------------------------------------------------------------------------------------------------
# The table


def _x(n=B, kind="f32"):
    if kind == "ints":
        return lambda rng: (_ints(rng, n), np.zeros(n, np.float32))
    return lambda rng: (_f32(rng, n), np.zeros(n, np.float32))


RACE_CASES: list = []


def _add(name, kernel, grid, block, make_args, shared=(), global_=False, benign=False, note="", tags=(),
         reference=None):
    RACE_CASES.append(RaceCase(name, kernel, grid, block, make_args, tuple(shared), global_, benign, note,
                               tuple(tags), reference))


E, W = "error", "warning"

_add("reverse_nosync", reverse_nosync, 1, B, _x(), (E,), tags=("missing barrier",))
_add("reverse_sync", reverse_sync, 1, B, _x(), reference=_reverse_ref)
_add("neighbour_nosync", neighbour_nosync, 1, B, _x(), (W,), tags=("warp",))
# stencil: lanes read s[t] and s[t+2] (written by lanes t-1, t+1) -> same warp except at 31|32 -> both
_add("stencil_nosync", stencil_nosync, 3, B, _x(3 * B), (E, W), tags=("stencil",))
_add("stencil_sync", stencil_sync, 3, B, _x(3 * B), reference=_stencil_ref, tags=("stencil",))
# scans: off = 1..16 stays in a warp except at the boundary; off = 32 crosses it -> both
_add("scan_nosync", scan_nosync, 1, B, _x(kind="ints"), (E, W), tags=("scan",))
_add("scan_one_sync", scan_one_sync, 1, B, _x(kind="ints"), (E, W), tags=("scan",),
     note="write s[t] vs read s[t] by thread t + off in the same barrier interval")
_add("scan_two_sync", scan_two_sync, 1, B, _x(kind="ints"), reference=_scan_ref, tags=("scan",))
_add("scan_double_buffer", scan_double_buffer, 1, B, _x(kind="ints"), reference=_scan_ref,
     tags=("scan", "double buffer"))
_add("scan_double_buffer_nosync", scan_double_buffer_nosync, 1, B, _x(kind="ints"), (E, W),
     tags=("scan", "double buffer"))
# reduce: stride 32 crosses warps (thread t < 32 reads s[t+32], written... only at the initial store,
# which is before the barrier); later steps: thread t writes s[t] while thread t - stride reads it;
# for stride 32 the readers are t < 32 and the writers of s[32..63] do not write again -> stride 16..1
# inside warp 0 only.  Step stride=32 writes s[0..31] (warp 0) while ... the next step (stride 16) reads
# s[16..31] (warp 0 lanes 0..15) -> warp 0 only.  So warnings only.
_add("reduce_nosync", reduce_nosync, 2, B, lambda rng: (_ints(rng, 2 * B), np.zeros(2, np.float32)), (W,),
     tags=("reduction",), note="every racing pair is inside warp 0: racecheck grades it a warning")
_add("reduce_sync", reduce_sync, 2, B, lambda rng: (_ints(rng, 2 * B), np.zeros(2, np.float32)),
     reference=_block_sums, tags=("reduction",))
_add("reduce_warp_unsynced", reduce_warp_unsynced, 2, B, lambda rng: (_ints(rng, 2 * B), np.zeros(2, np.float32)),
     (W,), tags=("reduction", "warp"))
_add("reduce_warp_syncwarp", reduce_warp_syncwarp, 2, B, lambda rng: (_ints(rng, 2 * B), np.zeros(2, np.float32)),
     reference=_block_sums, tags=("reduction", "warp"))
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
_add("shared_atomic_histogram", shared_atomic_histogram, 1, B, _hist_args, reference=_hist_ref,
     tags=("trap", "atomics"))
_add("shared_plain_histogram", shared_plain_histogram, 1, B, _hist_args, (E, W), tags=("atomics",))
_add("atomic_then_plain_read", atomic_then_plain_read, 1, B, lambda rng: (np.zeros(B, np.int32),), (E, W),
     tags=("atomics",), note="an atomic and a plain read of one word with no barrier: a race in CUDA's model")
_add("read_only_after_barrier", read_only_after_barrier, 1, B, _x(kind="ints"), reference=_ro_ref, tags=("trap",))
_add("disjoint_halves", disjoint_halves, 1, B, _x(), reference=_halves_ref, tags=("trap",))
_add("flag_same_value", flag_same_value, 1, B, _x(), (), benign=True, tags=("flag",),
     note="same-value write-write: racecheck reports nothing; the tracer calls it benign")
_add("flag_different_values", flag_different_values, 1, B, lambda rng: (np.zeros(B, np.float32), np.zeros(B, np.int32)),
     (E, W),
     tags=("flag",))
_add("syncwarp_exchange", syncwarp_exchange, 1, B, _x(), reference=_xor1_ref, tags=("trap", "warp"))
_add("syncwarp_across_warps", syncwarp_across_warps, 1, B, _x(), (E,), tags=("warp",))
_add("shfl_then_neighbour_load", shfl_then_neighbour_load, 1, B, _x(), (W,), tags=("warp", "shuffle"))
_add("activemask_then_load", activemask_then_load, 1, B, _x(), (W,), tags=("warp",))
_add("syncwarp_partial_then_full", syncwarp_partial_then_full, 1, HALF, _x(HALF), reference=_partial_full_ref,
     tags=("trap", "warp", "syncwarp mask"))
_add("syncwarp_partial_only", syncwarp_partial_only, 1, HALF, _x(HALF), (W,), tags=("warp", "syncwarp mask"))
_add("war_neighbour_in_warp", war_neighbour_in_warp, 1, B, _x(), (W,), tags=("write after read", "warp"))
_add("war_across_warps", war_across_warps, 1, B, _x(), (E,), tags=("write after read",))
_add("rmw_pairs_in_warp", rmw_pairs_in_warp, 1, B, lambda rng: (np.zeros(HALF, np.float32),), (W,),
     tags=("warp", "read-modify-write"), note="pairs of lanes of one warp update one word at one instruction")
_add("global_accumulate_plain", global_accumulate_plain, 4, B, lambda rng: (_ints(rng, 4 * B), np.zeros(1, np.float32)),
     (), True, tags=("global",))
_add("global_accumulate_atomic", global_accumulate_atomic, 4, B,
     lambda rng: (_ints(rng, 4 * B), np.zeros(1, np.float32)), reference=_accum_ref, tags=("global", "trap"))
_add("global_blocks_one_output", global_blocks_one_output, 4, B, lambda rng: (_f32(rng, 4), np.zeros(1, np.float32)),
     (), True, tags=("global",))
_add("global_own_element", global_own_element, 4, B, lambda rng: (_f32(rng, 4 * B), np.zeros(4 * B, np.float32)),
     reference=_own_global_ref, tags=("global", "trap"))
_add("global_shift_one_block", global_shift_one_block, 1, B, lambda rng: (_f32(rng, B),), (), True,
     tags=("global", "in place"))
_add("global_shift_one_block_sync", global_shift_one_block_sync, 1, B, lambda rng: (_f32(rng, B),),
     reference=_gshift_ref, tags=("global", "in place"))
_add("global_shift_many_blocks_sync", global_shift_many_blocks_sync, 3, B,
     lambda rng: (_f32(rng, 3 * B), np.zeros(3 * B, np.float32)), (), True, tags=("global", "blocks"))
_add("global_flag_same_value", global_flag_same_value, 4, B, lambda rng: (_f32(rng, 4 * B), np.zeros(1, np.int32)),
     (), False, benign=True, tags=("global", "flag"))
_add("global_counter_one_warp", global_counter_one_warp, 1, 32, lambda rng: (np.zeros(1, np.int32),), (), True,
     tags=("global", "warp"))

CASES_BY_NAME = {c.name: c for c in RACE_CASES}


def tracer_verdict(case: RaceCase, seed=None) -> dict:
    """What the tracer reports for ``case``: shared-memory severities (as racecheck grades them), whether there is a
    global-memory race, whether there are benign (same-value) races, and each reported pair of lines."""
    from course.trace import trace

    races = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), seed=seed, lines=False).races(benign=True)
    shared, glob, benign, pairs = set(), False, False, []
    for r in races:
        if r.benign:
            benign = True
        elif r.space == "shared":
            if r.errors:
                shared.add("error")
            if r.warnings:
                shared.add("warning")
        else:
            glob = True
        pairs.append({"space": r.space, "severity": r.severity, "errors": r.errors, "warnings": r.warnings,
                      "benign": r.benign, "array": r.array, "lines": [r.first["line"], r.second["line"]],
                      "sources": [r.first["source"], r.second["source"]], "ops": [r.first["op"], r.second["op"]]})
    return {"shared": sorted(shared), "global": glob, "benign": benign, "pairs": pairs}
