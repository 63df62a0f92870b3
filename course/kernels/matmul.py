"""Matrix multiply ``c = a @ b`` in float32, from seed 002's tiled kernel to a register-tiled one.

Versions, in teaching order (each line: the idea; chapter 09 traces and measures every one):

1. ``naive``          one thread per output element, reading a row of ``a`` and a column of ``b``
                      straight from global memory: 2 loads per multiply-add.
2. ``seed_tiled``     seed 002 §1.3 as written: ``TILE``×``TILE`` shared tiles, flat arrays, a square
                      ``N``, no bounds checks and ``for t in range(N / TILE)``: right only when ``N`` is
                      a multiple of ``TILE`` (otherwise it reads and writes past the arrays, or misses
                      the last ``N % TILE`` terms of every sum).
3. ``tiled``          the same idea made correct for any ``M``×``K`` by ``K``×``N``: round the tile count
                      up, load zeros outside the matrices, guard the store.  Each element loaded into
                      shared memory is used ``TILE`` times, but every multiply-add still costs two
                      shared-memory loads.
4. ``regtile``        register tiling (寄存器分块): a block computes a 128×128 tile of ``c``, each thread
                      an 8×8 patch held in 64 registers; per step of ``k`` a thread loads 8 + 8 values
                      from shared memory and does 64 multiply-adds.  ``a``'s tile is stored transposed
                      so a thread's 8 values lie in one row.  Two bank conflicts (存储体冲突) remain: the
                      transposing store is 8-way and the ``b`` reads (stride 8 words) 4-way.
5. ``regtile_cf``     the same arithmetic, conflict-free: the transposed ``a`` tile gets 4 floats of
                      padding per row, and a thread owns rows ``ty + 16·i`` and columns ``tx + 16·j``
                      (strided, not a contiguous patch), so a warp's shared loads hit consecutive words
                      and its stores to ``c`` are coalesced (合并访存).
6. ``vectorized``     16-byte accesses: ``float4`` global loads of ``a`` and ``b``, 16-byte shared loads
                      (a thread owns 4-wide column groups ``4·tx + 64·g``, which keeps each quarter warp
                      on 8 distinct 16-byte slots), 16-byte stores of ``c``.
7. ``double_buffer``  two shared stages: the next tile's global loads are issued before the current
                      tile's arithmetic and stored after it, so their latency hides behind the math and
                      one ``syncthreads`` per step is enough.
8. ``unrolled``       version 7 with two steps of ``k`` written out per loop turn (seed 001 §3.2's loop
                      unrolling): the compiler can issue the next step's shared loads while the
                      multiply-adds of this one run.  numba has no ``#pragma unroll``; the kernel calls
                      its one-step device function twice.

``MATMUL_VERSIONS`` holds them in that order.  Versions 4–8 come from factories (``regtile_kernel``,
``fast_kernel``) that ``scripts/gpu/bench_matmul.py`` also calls with other block tiles, k-steps, outputs
per thread, unrolling, register caps and warp arrangements (``sweep_candidates``).  ``reference`` is NumPy's product in float64; ``error_bound`` is the
rounding error float32 arithmetic may make, derived from first principles, so a check never depends
on the kernel under test.  ``NCU_CASES`` are small launches of versions 1–5 that
``scripts/gpu/validate_tracer.py`` counts on the H200.

Defined for chapter 09 (notebooks/09_tiled_matmul.ipynb).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import course  # (chooses the backend before numba is imported)
from course.kernels import registry
from course.kernels.vector import gload4, gstore4, sload4, sstore4
from numba import cuda, float32

TILE = 16  # the seed's TILE_SIZE: 16×16 = 256 threads per block


# --- the answer ---------------------------------------------------------------------------------------


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` computed in float64 (the float32 kernels are compared with this, within ``error_bound``)."""
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64)


def error_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element, the most a float32 dot product of length K may be off: ``2·K·u·(|a| @ |b|)`` plus a hair.

    A sum of K products in any order has a forward error of at most ``γ_K·Σ|a_ik·b_kj|`` with
    ``γ_K = K·u / (1 − K·u)`` and ``u = 2⁻²⁴`` (float32's unit roundoff); the products themselves add
    one more ``u``.  Twice ``K·u`` covers both with room; any wrong term (a missed ``k``, a wrong
    index) is of the size of one product and far outside it unless K is in the millions.
    """
    a64 = np.abs(np.asarray(a, np.float64))
    b64 = np.abs(np.asarray(b, np.float64))
    k = a64.shape[1]
    u = 2.0 ** -24
    return 2.0 * (k + 1) * u * (a64 @ b64) + 1e-30


def wrong_elements(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Boolean mask of the elements of ``c`` outside float32's rounding error of ``a @ b`` (NaN counts as wrong)."""
    c = np.asarray(c, np.float64)
    err = np.abs(c - reference(a, b))
    return ~(err <= error_bound(a, b))


def relative_error(c, ref) -> float:
    """‖c − ref‖ / ‖ref‖ (Frobenius): float32 lands near 1e-7·√K, TF32 tensor cores near 1e-4 to 1e-3."""
    c = np.asarray(c, np.float64)
    ref = np.asarray(ref, np.float64)
    return float(np.linalg.norm(c - ref) / np.linalg.norm(ref))


def flops(m: int, n: int, k: int) -> int:
    """Floating-point operations of an m×k by k×n product: one multiply and one add per term."""
    return 2 * m * n * k


def random_operands(m: int, k: int, n: int, rng=None):
    """Fresh float32 ``a`` (m×k) and ``b`` (k×n), standard normal: never zeros, which hide wrong indexing."""
    rng = rng if rng is not None else np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return a, b


# --- 16-byte accesses: gload4/sload4/gstore4/sstore4 (course.kernels.vector), one instruction each -------


if course.on_gpu():
    from numba.cuda.extending import register_jitable as _helper
else:
    _helper = cuda.jit(device=True)
# ``_helper`` makes the fast kernel's per-configuration helpers device code: on the GPU a function numba
# inlines and Python can still call (so the CPU engine can trace the kernel on a GPU machine too); on
# the CPU engine a device function, whose accesses the tracer attributes to its own source lines.


# --- 1. naive ---------------------------------------------------------------------------------------------


@cuda.jit
def naive(a, b, c):
    """One thread per element of ``c``: K loads of ``a``'s row and K of ``b``'s column, all from global memory."""
    m, k_total = a.shape
    n = b.shape[1]
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row < m and col < n:
        s = float32(0.0)
        for k in range(k_total):
            s += a[row, k] * b[k, col]
        c[row, col] = s


# --- 2. the seed's tiled kernel, as written -----------------------------------------------------------------


@cuda.jit
def seed_tiled(A, B, C, N):
    """Seed 002 §1.3 line by line (flat N×N arrays): no bounds checks, ``N / TILE`` tiles rounded down."""
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = by * TILE + ty
    col = bx * TILE + tx
    s = float32(0.0)
    for t in range(N // TILE):  # C's integer division: the last N % TILE columns of A are never loaded
        As[ty, tx] = A[row * N + t * TILE + tx]
        Bs[ty, tx] = B[(t * TILE + ty) * N + col]
        cuda.syncthreads()
        for k in range(TILE):
            s += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    C[row * N + col] = s  # no `if row < N and col < N`: threads past the edge write outside C


# --- 3. tiled, correct for any shape -------------------------------------------------------------------------


def tiled_kernel(tile):
    """A ``tile``×``tile``-thread block computing a ``tile``×``tile`` piece of ``c`` through shared tiles."""

    @cuda.jit
    def tiled(a, b, c):
        """Seed 002's kernel for any shape: tile count rounded up, zeros loaded past the edges, store guarded."""
        As = cuda.shared.array((tile, tile), float32)
        Bs = cuda.shared.array((tile, tile), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        m, k_total = a.shape
        n = b.shape[1]
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        s = float32(0.0)
        for t in range((k_total + tile - 1) // tile):
            ka = t * tile + tx
            kb = t * tile + ty
            # Every thread stores (a zero past the edge) and reaches both barriers, even outside c:
            # a thread that skipped syncthreads() would leave the others waiting for it.
            As[ty, tx] = a[row, ka] if row < m and ka < k_total else float32(0.0)
            Bs[ty, tx] = b[kb, col] if kb < k_total and col < n else float32(0.0)
            cuda.syncthreads()
            for k in range(tile):
                s += As[ty, k] * Bs[k, tx]
            cuda.syncthreads()
        if row < m and col < n:
            c[row, col] = s

    return tiled


tiled = tiled_kernel(TILE)


# --- 4–5. register tiling ------------------------------------------------------------------------------------


def regtile_kernel(BM=128, BN=128, BK=8, TM=8, TN=8, pad=0, strided=False):
    """Blocks of (BM/TM)·(BN/TN) threads computing a BM×BN tile of ``c``, TM×TN outputs per thread in registers.

    ``pad`` floats of padding per row of the transposed ``a`` tile; ``strided`` gives each thread rows
    ``ty + TY·i`` and columns ``tx + TX·j`` instead of a contiguous TM×TN patch.  Scalar 4-byte loads.
    """
    TX = BN // TN  # threads along a row of the block tile
    TY = BM // TM
    THREADS = TX * TY
    A_LOADS = BM * BK // THREADS  # elements of the a tile each thread loads per step
    B_LOADS = BK * BN // THREADS
    AW = BM + pad  # a shared array's shape must be a constant: computed here, not in the kernel
    if BM % TM or BN % TN or (BM * BK) % THREADS or (BK * BN) % THREADS:
        raise ValueError(f"regtile_kernel: tile {BM}x{BN}x{BK} with {TM}x{TN} per thread does not divide evenly.")

    @cuda.jit
    def regtile(a, b, c):
        """Each thread: TM×TN sums in registers; per k it reads TM values of a and TN of b from shared memory."""
        At = cuda.shared.array((BK, AW), float32)  # a's tile, transposed: At[k, m] = a[row0 + m, k0 + k]
        Bs = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)  # every index a constant after unrolling: registers
        af = cuda.local.array(TM, float32)
        bf = cuda.local.array(TN, float32)
        tid = cuda.threadIdx.x
        tx = tid % TX
        ty = tid // TX
        m, k_total = a.shape
        n = b.shape[1]
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for k0 in range(0, k_total, BK):
            for l in range(A_LOADS):  # consecutive threads walk along a row of a: coalesced
                f = tid + l * THREADS
                r = f // BK
                kk = f % BK
                At[kk, r] = a[row0 + r, k0 + kk] if row0 + r < m and k0 + kk < k_total else float32(0.0)
            for l in range(B_LOADS):
                f = tid + l * THREADS
                kk = f // BN
                cc = f % BN
                Bs[kk, cc] = b[k0 + kk, col0 + cc] if k0 + kk < k_total and col0 + cc < n else float32(0.0)
            cuda.syncthreads()
            for kk in range(BK):
                for i in range(TM):
                    af[i] = At[kk, ty + TY * i] if strided else At[kk, ty * TM + i]
                for j in range(TN):
                    bf[j] = Bs[kk, tx + TX * j] if strided else Bs[kk, tx * TN + j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += af[i] * bf[j]
            cuda.syncthreads()
        for i in range(TM):
            row = row0 + (ty + TY * i if strided else ty * TM + i)
            for j in range(TN):
                col = col0 + (tx + TX * j if strided else tx * TN + j)
                if row < m and col < n:
                    c[row, col] = acc[i, j]

    regtile.config = dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN, pad=pad, strided=strided, threads=THREADS)
    return regtile


# --- 6–7. 16-byte accesses, then double buffering ----------------------------------------------------------------


@cuda.jit(device=True)
def guarded4(x, r, c, rows, cols):
    """``x[r, c:c+4]`` as four floats, zeros for the ones outside ``rows``×``cols`` (the edge path)."""
    inside = r < rows
    x0 = x[r, c] if inside and c < cols else float32(0.0)
    x1 = x[r, c + 1] if inside and c + 1 < cols else float32(0.0)
    x2 = x[r, c + 2] if inside and c + 2 < cols else float32(0.0)
    x3 = x[r, c + 3] if inside and c + 3 < cols else float32(0.0)
    return x0, x1, x2, x3


def fast_kernel(BM=128, BN=128, BK=8, TM=8, TN=8, pad=4, double_buffer=False, unroll=1, min_blocks=0, warp_rows=0):
    """Register tiling with 16-byte loads and stores, optionally two shared stages (double buffering).

    The kernel takes ``(a, b, c, vec)``: ``vec`` = 1 when 16-byte accesses are legal (K and N multiples
    of 4, arrays 16-byte aligned: :func:`vec_ok`).  Whole tiles then take the 16-byte path; edge tiles
    and ``vec`` = 0 take guarded 4-byte loads, so every shape is right.  ``unroll`` (1, 2 or 4) writes
    that many steps of k out per loop turn; ``min_blocks`` > 0 asks the compiler (launch bounds) to fit
    that many blocks per SM, capping registers per thread (GPU only).  ``warp_rows`` = 4 arranges each
    warp's 32 threads as 4 rows × 8 columns of the thread grid instead of whole rows (0): a warp then
    reads 4 distinct 16-byte slots of ``At`` and 8 of ``Bs`` per step instead of 2 and 16, fewer bytes
    of shared memory per multiply-add.
    """
    TX = BN // TN
    TY = BM // TM
    THREADS = TX * TY
    GM = TM // 4  # 4-row groups a thread owns: rows 4·ty + q + 4·TY·g
    GN = TN // 4  # 4-column groups: columns 4·tx + q + 4·TX·g
    A_QUADS = BM * BK // 4  # float4s in the a tile
    B_QUADS = BK * BN // 4
    A_LOADS = -(-A_QUADS // THREADS)  # float4 loads of a per thread and step (the last may idle some threads)
    B_LOADS = -(-B_QUADS // THREADS)
    KQ = BK // 4  # float4s per row of the a tile
    NQ = BN // 4
    STAGES = 2 if double_buffer else 1
    AW = BM + pad
    WX = TX // 8  # warps along a row of the thread grid when warp_rows = 4
    if (TM % 4 or TN % 4 or BK % 4 or BM % TM or BN % TN or BN % 4 or unroll not in (1, 2, 4)
            or warp_rows not in (0, 4) or (warp_rows and (TX % 8 or TY % 4))):
        raise ValueError(f"fast_kernel: tile {BM}x{BN}x{BK} with {TM}x{TN} per thread does not divide into float4 loads.")

    @_helper
    def fetch(a, b, pa, pb, tid, row0, col0, k0, inside):
        """Load the a and b tiles of step ``k0`` into the registers ``pa``/``pb`` (float4s where legal)."""
        m, k_total = a.shape
        n = b.shape[1]
        whole = inside and k0 + BK <= k_total
        for l in range(A_LOADS):  # consecutive threads read consecutive float4s of a row of a
            f = tid + l * THREADS
            if A_QUADS % THREADS != 0 and f >= A_QUADS:  # (a constant test when the tile divides evenly)
                break
            r = row0 + f // KQ
            kq = k0 + (f % KQ) * 4
            if whole:
                pa[l, 0], pa[l, 1], pa[l, 2], pa[l, 3] = gload4(a, (r, kq))
            else:
                pa[l, 0], pa[l, 1], pa[l, 2], pa[l, 3] = guarded4(a, r, kq, m, k_total)
        for l in range(B_LOADS):
            f = tid + l * THREADS
            if B_QUADS % THREADS != 0 and f >= B_QUADS:
                break
            kk = k0 + f // NQ
            cq = col0 + (f % NQ) * 4
            if whole:
                pb[l, 0], pb[l, 1], pb[l, 2], pb[l, 3] = gload4(b, (kk, cq))
            else:
                pb[l, 0], pb[l, 1], pb[l, 2], pb[l, 3] = guarded4(b, kk, cq, k_total, n)

    @_helper
    def stash(At, Bs, pa, pb, tid, s):
        """Store the registers into shared stage ``s``: a transposed (4 scalar stores), b as float4s."""
        for l in range(A_LOADS):
            f = tid + l * THREADS
            if A_QUADS % THREADS != 0 and f >= A_QUADS:
                break
            r = f // KQ
            kq = (f % KQ) * 4
            for q in range(4):  # the 4-float padding of At's rows keeps this transposing store conflict-free
                At[s, kq + q, r] = pa[l, q]
        for l in range(B_LOADS):
            f = tid + l * THREADS
            if B_QUADS % THREADS != 0 and f >= B_QUADS:
                break
            sstore4(Bs, (s, f // NQ, (f % NQ) * 4), pb[l, 0], pb[l, 1], pb[l, 2], pb[l, 3])

    @_helper
    def rank1(At, Bs, af, bf, acc, tx, ty, s, kk):
        """One step of k: TM values of a and TN of b from shared memory (16-byte loads), TM·TN multiply-adds."""
        for g in range(GM):
            af[4 * g], af[4 * g + 1], af[4 * g + 2], af[4 * g + 3] = sload4(At, (s, kk, 4 * ty + 4 * TY * g))
        for g in range(GN):
            bf[4 * g], bf[4 * g + 1], bf[4 * g + 2], bf[4 * g + 3] = sload4(Bs, (s, kk, 4 * tx + 4 * TX * g))
        for i in range(TM):
            for j in range(TN):
                acc[i, j] += af[i] * bf[j]

    @_helper
    def multiply(At, Bs, af, bf, acc, tx, ty, s):
        """The BK steps of shared stage ``s``; ``unroll`` steps written out per turn so the next loads overlap the math."""
        for k0 in range(0, BK, unroll):
            rank1(At, Bs, af, bf, acc, tx, ty, s, k0)
            if unroll >= 2:  # constants: the compiler keeps only the calls this configuration asks for
                rank1(At, Bs, af, bf, acc, tx, ty, s, k0 + 1)
            if unroll >= 4:
                rank1(At, Bs, af, bf, acc, tx, ty, s, k0 + 2)
                rank1(At, Bs, af, bf, acc, tx, ty, s, k0 + 3)

    bounds = {"launch_bounds": (THREADS, min_blocks)} if min_blocks and course.on_gpu() else {}

    @cuda.jit(**bounds)
    def fast(a, b, c, vec):
        """Register tiling; a and b arrive in float4s, shared reads are 16 bytes, c leaves in float4s."""
        At = cuda.shared.array((STAGES, BK, AW), float32, alignment=16)
        Bs = cuda.shared.array((STAGES, BK, BN), float32, alignment=16)
        acc = cuda.local.array((TM, TN), float32)  # constant indices after unrolling: registers
        af = cuda.local.array(TM, float32)
        bf = cuda.local.array(TN, float32)
        pa = cuda.local.array((A_LOADS, 4), float32)  # a tile on its way from global to shared memory
        pb = cuda.local.array((B_LOADS, 4), float32)
        tid = cuda.threadIdx.x
        if warp_rows:  # lane l of warp w: column 8·(w mod WX) + l mod 8, row 4·(w div WX) + l div 8
            tx = (tid // 32) % WX * 8 + tid % 8
            ty = (tid // 32) // WX * 4 + (tid % 32) // 8
        else:
            tx = tid % TX
            ty = tid // TX
        m, k_total = a.shape
        n = b.shape[1]
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        inside = vec != 0 and row0 + BM <= m and col0 + BN <= n  # the same for the whole block: no divergence
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        steps = (k_total + BK - 1) // BK
        fetch(a, b, pa, pb, tid, row0, col0, 0, inside)
        stash(At, Bs, pa, pb, tid, 0)
        cuda.syncthreads()
        for t in range(steps):
            if double_buffer:
                s = t % 2
                if t + 1 < steps:  # issue the next tile's loads now: they arrive while the math runs
                    fetch(a, b, pa, pb, tid, row0, col0, (t + 1) * BK, inside)
                multiply(At, Bs, af, bf, acc, tx, ty, s)
                if t + 1 < steps:  # stage 1 - s was last read in step t - 1, before the last barrier
                    stash(At, Bs, pa, pb, tid, 1 - s)
                cuda.syncthreads()
            else:
                multiply(At, Bs, af, bf, acc, tx, ty, 0)
                cuda.syncthreads()  # everyone is done reading the stage before it is overwritten
                if t + 1 < steps:
                    fetch(a, b, pa, pb, tid, row0, col0, (t + 1) * BK, inside)
                    stash(At, Bs, pa, pb, tid, 0)
                    cuda.syncthreads()

        for i in range(TM):
            row = row0 + 4 * ty + (i % 4) + 4 * TY * (i // 4)
            for g in range(GN):
                col = col0 + 4 * tx + 4 * TX * g
                if inside:
                    gstore4(c, (row, col), acc[i, 4 * g], acc[i, 4 * g + 1], acc[i, 4 * g + 2], acc[i, 4 * g + 3])
                else:
                    for q in range(4):
                        if row < m and col + q < n:
                            c[row, col + q] = acc[i, 4 * g + q]

    fast.config = dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN, pad=pad, double_buffer=double_buffer, unroll=unroll,
                       min_blocks=min_blocks, warp_rows=warp_rows, threads=THREADS)
    return fast


def _aligned16(x) -> bool:
    """True when ``x``'s data starts on a 16-byte boundary (host or device array)."""
    if isinstance(x, np.ndarray):
        return x.ctypes.data % 16 == 0
    cai = getattr(x, "__cuda_array_interface__", None)
    return cai is None or cai["data"][0] % 16 == 0


def vec_ok(a, b, c) -> int:
    """1 when the 16-byte path is legal for these arrays: K and N multiples of 4, every array 16-byte aligned."""
    k, n = a.shape[1], b.shape[1]
    ok = k % 4 == 0 and n % 4 == 0 and all(_aligned16(x) for x in (a, b, c))
    return 1 if ok else 0


# --- the registry ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Version(registry.Version):
    """One matmul version: its kernel, the block tile it computes, threads per block, one-line idea."""

    block_tile: tuple  # (rows, cols) of c one block computes
    threads: tuple  # threads_per_block
    make_args: Callable = field(default=lambda a, b, c: (a, b, c))
    any_shape: bool = True  # False for the seed's kernel: square N, multiple of TILE only

    def griddim(self, m: int, n: int) -> tuple:
        """blocks_per_grid for an m×n ``c``: x walks columns, y rows (rounded up)."""
        bm, bn = self.block_tile
        return (max(1, math.ceil(n / bn)), max(1, math.ceil(m / bm)))

    def args(self, a, b, c) -> tuple:
        """The kernel's arguments for ``a``, ``b`` and output ``c`` (device or host arrays)."""
        return self.make_args(a, b, c)

    def launch(self, a, b, c) -> None:
        """Run this version once: ``c = a @ b``."""
        m, n = c.shape
        self.kernel[self.griddim(m, n), self.threads](*self.args(a, b, c))


def _seed_args(a, b, c):
    n = a.shape[0]
    if not (a.shape == b.shape == c.shape == (n, n)):
        raise ValueError(f"seed_tiled multiplies square N×N matrices only, got a {a.shape}, b {b.shape}, c {c.shape}.")
    return (a.reshape(n * n), b.reshape(n * n), c.reshape(n * n), n)


def _vec_args(a, b, c):
    return (a, b, c, vec_ok(a, b, c))


def regtile_version(name, idea, **cfg) -> Version:
    """A :class:`Version` of :func:`regtile_kernel` with configuration ``cfg``."""
    k = regtile_kernel(**cfg)
    p = k.config
    return Version(name, idea, k, (p["BM"], p["BN"]), (p["threads"],), family="regtile", params=p)


def fast_version(name, idea, **cfg) -> Version:
    """A :class:`Version` of :func:`fast_kernel` with configuration ``cfg``."""
    k = fast_kernel(**cfg)
    p = k.config
    family = "double_buffer" if p["double_buffer"] else "vectorized"
    return Version(name, idea, k, (p["BM"], p["BN"]), (p["threads"],), make_args=_vec_args, family=family, params=p)


MATMUL_VERSIONS = registry.registry(
    Version("naive", "one thread per output, a's row and b's column read from global memory",
            naive, (TILE, TILE), (TILE, TILE), family="naive"),
    Version("seed_tiled", "seed 002 §1.3 as written: shared tiles, no bounds checks, N / TILE tiles",
            seed_tiled, (TILE, TILE), (TILE, TILE), make_args=_seed_args, any_shape=False, family="seed",
            params={"TILE": TILE}),
    Version("tiled", "the seed's kernel for any shape: tiles rounded up, zeros past the edges, guarded store",
            tiled, (TILE, TILE), (TILE, TILE), family="tiled", params={"TILE": TILE}),
    regtile_version("regtile", "128x128 block tile, 8x8 outputs per thread in registers (a's tile transposed)"),
    regtile_version("regtile_cf", "the same without bank conflicts: padded a tile, strided rows and columns",
                    pad=4, strided=True),
    fast_version("vectorized", "16-byte global loads, 16-byte shared loads, 16-byte stores"),
    fast_version("double_buffer", "two shared stages: next tile's loads in flight during the math",
                 double_buffer=True),
    fast_version("unrolled", "double buffering with two steps of k per loop turn: the next shared loads "
                             "overlap the math (seed 001 §3.2's loop unrolling)", double_buffer=True, unroll=2),
)


def sweep_candidates() -> list:
    """Other block tiles, k-steps, outputs per thread and unrolling of the fast versions, for the benchmark's sweep."""
    configs = [
        # (BM, BN, BK, TM, TN, double_buffer, unroll, min_blocks, warp_rows), likeliest first: the benchmark
        # compiles them in this order and leaves out the last ones if its time budget runs short
        (128, 128, 8, 8, 8, True, 2, 0, 4),  # warps of 4×8 threads: fewer shared bytes per multiply-add
        (128, 128, 8, 8, 8, True, 4, 2, 4),
        (128, 128, 8, 8, 8, True, 4, 2, 0),  # unrolled by 4, capped at 128 registers (no spills): 2 blocks per SM
        (128, 128, 16, 8, 8, False, 2, 0, 4),
        (128, 128, 8, 8, 8, False, 2, 0, 0),
        (128, 128, 16, 8, 8, False, 2, 0, 0),
        (128, 128, 8, 8, 8, True, 4, 0, 0),  # about 165 registers: one block of 256 threads per SM
        (128, 128, 16, 8, 8, True, 2, 0, 0),  # about 160 registers (capped at 128 it spills): one block per SM
        (64, 128, 8, 4, 8, True, 2, 0, 0),
        (128, 64, 8, 8, 4, True, 2, 0, 0),
        (64, 64, 16, 4, 4, True, 4, 0, 0),
    ]
    out = []
    for bm, bn, bk, tm, tn, db, un, mb, wr in configs:
        name = (f"{'db' if db else 'vec'}_{bm}x{bn}x{bk}_{tm}x{tn}_u{un}" + (f"_lb{mb}" if mb else "")
                + (f"_w{wr}x8" if wr else ""))
        idea = (f"{'double-buffered ' if db else ''}{bm}x{bn} block tile, BK={bk}, {tm}x{tn} outputs per thread, "
                f"k unrolled by {un}" + (f", at least {mb} blocks per SM" if mb else "")
                + (f", warps of {wr}x8 threads" if wr else ""))
        out.append(fast_version(name, idea, BM=bm, BN=bn, BK=bk, TM=tm, TN=tn, double_buffer=db, unroll=un,
                                min_blocks=mb, warp_rows=wr))
    return out


# --- a planted bug (chapter 10: the tracer's race report beside compute-sanitizer's racecheck) ------------------


@cuda.jit
def tiled_missing_sync(a, b, c):
    """PLANTED BUG: ``tiled`` without the barrier after the loads: threads read tile entries others have not written yet."""
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    m, k_total = a.shape
    n = b.shape[1]
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    s = float32(0.0)
    for t in range((k_total + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        As[ty, tx] = a[row, ka] if row < m and ka < k_total else float32(0.0)
        Bs[ty, tx] = b[kb, col] if kb < k_total and col < n else float32(0.0)
        # (the cuda.syncthreads() that belongs here is missing)
        for k in range(TILE):
            s += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = s


# --- hardware-count cases (checked against Nsight Compute on the H200) -------------------------------------------


def _ncu_cases():
    from course.kernels.cases import Case

    def operands(m, k, n, seed_args=False):
        def make(rng):
            a, b = random_operands(m, k, n, rng)
            c = np.zeros((m, n), np.float32)
            if seed_args:
                return _seed_args(a, b, c)
            return (a, b, c)

        return make

    # 32×32 by 32×32: 2×2 blocks of 16×16 threads.  Counts by hand (per block: 8 warps, 2 tile steps):
    # a warp covers 2 rows × 16 columns; each half row is 64 aligned bytes = 2 sectors.
    blocks, warps, steps = 4, 8, 2
    tiled_expect = {
        "global_load_requests": blocks * warps * steps * 2,  # an a load and a b load per warp and step
        "global_load_sectors": blocks * warps * steps * 2 * 4,  # 2 rows × 2 sectors each
        "global_store_requests": blocks * warps,
        "global_store_sectors": blocks * warps * 4,
        "shared_store_requests": blocks * warps * steps * 2,
        "shared_store_wavefronts": blocks * warps * steps * 2,  # 32 consecutive words: one pass
        # Bs[k, tx] once per k; As[ty, k .. k+3] — a thread's 4 neighbouring floats, 16-byte aligned — are
        # ONE LDS.128 in the compiled kernel (ptxas merges them after unrolling; course.trace.compiler reads it),
        # so TILE / 4 loads of As per step
        "shared_load_requests": blocks * warps * steps * (TILE + TILE // 4),
        # Bs: 16 consecutive words per half warp, 2 rows 16 banks apart: one pass.  As as LDS.128: each half
        # warp (one ty) reads the same 16 bytes: one wavefront per half warp (analysis.MERGED_PHASES), 2
        "shared_load_wavefronts": blocks * warps * steps * (TILE + 2 * (TILE // 4)),
    }
    naive_expect = {
        "global_load_requests": blocks * warps * 32 * 2,  # K = 32 iterations, a and b
        # a[row, k]: 2 rows → 2 sectors; b[k, col]: 16 consecutive floats of one row → 2 sectors
        "global_load_sectors": blocks * warps * 32 * (2 + 2),
        "global_store_requests": blocks * warps,
        "global_store_sectors": blocks * warps * 4,
    }
    cases = [
        Case("matmul.naive", naive, (2, 2), (TILE, TILE), operands(32, 32, 32), expect=naive_expect,
             note="naive 32x32x32: every operand from global memory", tags=("matmul",)),
        Case("matmul.seed_tiled", seed_tiled, (2, 2), (TILE, TILE), operands(32, 32, 32, seed_args=True),
             expect=tiled_expect, note="the seed's kernel at N = 32 (a multiple of TILE, where it is right)",
             tags=("matmul",)),
        Case("matmul.tiled", tiled, (2, 2), (TILE, TILE), operands(32, 32, 32), expect=tiled_expect,
             note="tiled 32x32x32; the GPU compiler merges a thread's As[ty, k..k+3] into one 16-byte "
                  "load (LDS.128), and the tracer counts it so (course.trace.compiler)",
             tags=("matmul",)),
    ]
    # 128×16·16×128, one block of 8 warps, 2 steps of BK = 8.  Per step and warp: 4 loads of a (lanes walk
    # 4 rows × 8 columns: 4 sectors) and 4 of b (32 consecutive floats: 4 sectors), the same number of
    # shared stores, then 8 values of kk × (8 At + 8 Bs) shared loads.  regtile: the At store is 8-way and
    # the Bs load 4-way, and a warp's c stores (2 rows × 16 columns 8 floats apart) touch 32 sectors;
    # regtile_cf: every shared access one wavefront, c stores 2 rows × 64 bytes = 4 sectors.
    warps, steps = 8, 2
    common = {
        "global_load_requests": warps * steps * 8, "global_load_sectors": warps * steps * 8 * 4,
        "shared_store_requests": warps * steps * 8, "shared_load_requests": warps * steps * 8 * 16,
        "global_store_requests": warps * 64,
    }
    expect = {
        "regtile": dict(common, shared_store_wavefronts=warps * steps * (4 * 8 + 4 * 1),
                        shared_load_wavefronts=warps * steps * 8 * (8 * 1 + 8 * 4), global_store_sectors=warps * 64 * 32),
        "regtile_cf": dict(common, shared_store_wavefronts=warps * steps * 8, shared_load_wavefronts=warps * steps * 8 * 16,
                           global_store_sectors=warps * 64 * 4),
    }
    for name in ("regtile", "regtile_cf"):
        v = MATMUL_VERSIONS[name]
        cases.append(Case(f"matmul.{name}", v.kernel, v.griddim(128, 128), v.threads, operands(128, 16, 128),
                          expect=expect[name], note=f"{name} 128x16 by 16x128 (one block, 2 tile steps): {v.idea}",
                          tags=("matmul",)))
    return cases


def __getattr__(name):
    # NCU_CASES is built on first use, so that importing this module never needs course.kernels.cases.
    if name == "NCU_CASES":
        globals()["NCU_CASES"] = _ncu_cases()
        return globals()["NCU_CASES"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
