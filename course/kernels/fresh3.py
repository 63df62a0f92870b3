"""Round 3 of fresh kernels, written apart from the chapters and round 2, to judge a time predictor on unseen code.

tanh, bit tricks, float16 decoding, 3-byte pixels, lookup tables, CSR products, stencils, a float64 transpose, warp-per-
row work, local arrays, data-dependent loops, atomics, a ballot compaction, n-body, small and strip matmuls, Mandelbrot.
``cases(scale)``: one :class:`~course.kernels.cases.Case` per launch (``fresh3_<what>``, tagged ``chNN``, ``fresh3``)
at H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``); each :class:`Plan` declares its arrays' bytes
(for the sparse cases an upper bound) without building them.
"""

from __future__ import annotations

import math

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from course.kernels.fresh_plans import Plan, builders
from course.kernels.fresh_plans import cdiv as _cdiv
from course.kernels.fresh_plans import f32 as _f32
from course.kernels.fresh_plans import nbytes as _b
from course.kernels.fresh_plans import uniform as _u
from course.kernels.fresh_plans import vec as _vec
from course.kernels.fresh_plans import zeros as _zeros
from numba import cuda, float32, float64, int32, int64

FULL_MASK = 0xFFFFFFFF
H200_SMS = 132
INT32_MIN = -2147483648

# --- elementwise: special functions, bits, bytes
@cuda.jit
def gelu_tanh(x, out):
    """GELU by its tanh approximation in float32, blocks of 1024 threads: one tanh and six multiplies per element."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        u = float32(0.7978845608) * (v + float32(0.044715) * v * v * v)
        out[i] = float32(0.5) * v * (float32(1.0) + math.tanh(u))
@cuda.jit
def popc_brev(x, pop, rev):
    """Per 32-bit word: its number of set bits and its bits reversed (one integer instruction each)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        pop[i], rev[i] = cuda.popc(x[i]), cuda.brev(x[i])
@cuda.jit
def half_to_float_bits(h, out):
    """float16 (as uint16) to float32 bits by integer arithmetic, 2-byte loads; subnormal halves flush to zero."""
    i = cuda.grid(1)
    if i < h.shape[0]:
        b = int64(h[i])
        e = (b >> 10) & 31
        bits = (b & 0x8000) << 16
        if e == 31:
            bits |= 0x7F800000 | ((b & 1023) << 13)
        elif e > 0:
            bits |= ((e + 112) << 23) | ((b & 1023) << 13)
        out[i] = bits
@cuda.jit
def rgb_to_gray(rgb, gray):
    """(77·R + 150·G + 29·B + 128) >> 8 per pixel of 3-byte records: three byte loads at stride 3, one byte store."""
    i = cuda.grid(1)
    if i < gray.shape[0]:
        gray[i] = (77 * int32(rgb[i, 0]) + 150 * int32(rgb[i, 1]) + 29 * int32(rgb[i, 2]) + 128) >> 8
@cuda.jit
def reverse_scale(x, out, s):
    """out[n-1-i] = s·x[i] in blocks of 1024: each warp reads ascending and writes descending addresses."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[x.shape[0] - 1 - i] = s * x[i]
@cuda.jit
def outer_product(x, y, out):
    """out[r, c] = x[r]·y[c] on a 64 × 4 block: one load of y per element, x[r] shared by the row (write-bound)."""
    c, r = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = x[r] * y[c]

# --- access patterns
LUT_N = 256
@cuda.jit
def lut_global(idx, lut, out):
    """out[i] = lut[idx[i]]: a 256-entry table read from global memory at byte indices (cached, data-dependent)."""
    i = cuda.grid(1)
    if i < idx.shape[0]:
        out[i] = lut[idx[i]]
@cuda.jit
def lut_shared(idx, lut, out):
    """The same lookup from a copy of the table in shared memory (blocks of 512: random banks per warp)."""
    tab = cuda.shared.array(LUT_N, float32)
    t = cuda.threadIdx.x
    if t < LUT_N:
        tab[t] = lut[t]
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < idx.shape[0]:
        out[i] = tab[idx[i]]
@cuda.jit
def spmv_csr_thread(rowptr, cols, vals, x, y):
    """y = A·x for A in CSR, one thread per row (0–64 entries): lanes walk rows of different lengths apart."""
    r = cuda.grid(1)
    if r < y.shape[0]:
        acc = float32(0)
        for k in range(rowptr[r], rowptr[r + 1]):
            acc += vals[k] * x[cols[k]]
        y[r] = acc
@cuda.jit
def laplace7_3d(src, dst):
    """The 7-point Laplacian of a 3-D grid from global memory: a 64 × 4 block of (x, y) columns marching along z."""
    x, y = cuda.grid(2)
    nz, ny, nx = src.shape
    if x < nx and y < ny:
        for z in range(nz):
            zero = float32(0)
            v = ((src[z, y, x - 1] if x > 0 else zero) + (src[z, y, x + 1] if x + 1 < nx else zero)
                 + (src[z, y - 1, x] if y > 0 else zero) + (src[z, y + 1, x] if y + 1 < ny else zero)
                 + (src[z - 1, y, x] if z > 0 else zero) + (src[z + 1, y, x] if z + 1 < nz else zero))
            dst[z, y, x] = v - float32(6.0) * src[z, y, x]
# --- warps: sparse rows, norms, data-dependent loops
@cuda.jit
def spmv_csr_warp(rowptr, cols, vals, x, y):
    """The same CSR product with one warp per row: lanes read a row's entries side by side, then shuffles add."""
    r, lane = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // 32, cuda.threadIdx.x % 32
    acc = float32(0)
    if r < y.shape[0]:
        for k in range(rowptr[r] + lane, rowptr[r + 1], 32):
            acc += vals[k] * x[cols[k]]
    for off in (16, 8, 4, 2, 1):
        acc += cuda.shfl_down_sync(FULL_MASK, acc, off)
    if lane == 0 and r < y.shape[0]:
        y[r] = acc
@cuda.jit
def row_l2norm_warp(a, out):
    """The L2 norm of each row by one warp (blocks of 64: two rows), squares summed by a butterfly of xor shuffles."""
    r, lane = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // 32, cuda.threadIdx.x % 32
    s = float32(0)
    if r < a.shape[0]:
        for c in range(lane, a.shape[1], 32):
            s += a[r, c] * a[r, c]
    for m in (16, 8, 4, 2, 1):
        s += cuda.shfl_xor_sync(FULL_MASK, s, m)
    if lane == 0 and r < a.shape[0]:
        out[r] = math.sqrt(s)
@cuda.jit
def collatz_steps(start, steps, cap):
    """Collatz steps to reach 1 (at most ``cap``): a while loop whose trip count differs from lane to lane."""
    i = cuda.grid(1)
    if i < start.shape[0]:
        v, k = int64(start[i]), 0
        while v != 1 and k < cap:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        steps[i] = k

# --- shared memory: blurs, bodies, digits
B7, R7, T7 = 16, 3, 22  # the 7 × 7 blur: 16 × 16 threads, a 22 × 22 tile with a 3-element halo
@cuda.jit
def box3_global(src, dst):
    """The mean of each 3 × 3 neighbourhood (zero outside), nine loads from global per output, 16 × 16 blocks."""
    c, r = cuda.grid(2)
    rows, cols = src.shape
    if r < rows and c < cols:
        acc = float32(0)
        for dr in range(-1, 2):
            for dc in range(-1, 2):
                rr, cc = r + dr, c + dc
                if rr >= 0 and rr < rows and cc >= 0 and cc < cols:
                    acc += src[rr, cc]
        dst[r, c] = acc * float32(1.0 / 9.0)
@cuda.jit
def box7_shared(src, dst):
    """The mean of each 7 × 7 neighbourhood (zero outside) from a 22 × 22 shared tile: 49 shared reads per output."""
    tile = cuda.shared.array((T7, T7), float32)
    rows, cols = src.shape
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r0, c0 = cuda.blockIdx.y * B7 - R7, cuda.blockIdx.x * B7 - R7
    for k in range(ty * B7 + tx, T7 * T7, B7 * B7):  # 484 tile cells, 256 threads: two rounds
        r, c = r0 + k // T7, c0 + k % T7
        tile[k // T7, k % T7] = src[r, c] if r >= 0 and r < rows and c >= 0 and c < cols else float32(0)
    cuda.syncthreads()
    r, c = r0 + R7 + ty, c0 + R7 + tx
    if r < rows and c < cols:
        acc = float32(0)
        for dr in range(2 * R7 + 1):
            for dc in range(2 * R7 + 1):
                acc += tile[ty + dr, tx + dc]
        dst[r, c] = acc * float32(1.0 / 49.0)
NB_T, NB_EPS2 = 128, 0.01
@cuda.jit
def nbody_accel(pos, acc):
    """Softened gravity on every body from all n: tiles of 128 bodies (x, y, z, m) staged in shared memory."""
    sp = cuda.shared.array((NB_T, 4), float32)
    t, n, i = cuda.threadIdx.x, pos.shape[0], cuda.grid(1)
    xi, yi, zi = float32(0), float32(0), float32(0)
    if i < n:
        xi, yi, zi = pos[i, 0], pos[i, 1], pos[i, 2]
    ax, ay, az = float32(0), float32(0), float32(0)
    for base in range(0, n, NB_T):
        j = base + t
        for q in range(4):
            sp[t, q] = pos[j, q] if j < n else float32(0)
        cuda.syncthreads()
        for k in range(min(NB_T, n - base)):
            dx, dy, dz = sp[k, 0] - xi, sp[k, 1] - yi, sp[k, 2] - zi
            inv = float32(1.0) / math.sqrt(dx * dx + dy * dy + dz * dz + float32(NB_EPS2))
            w = sp[k, 3] * inv * inv * inv
            ax, ay, az = ax + dx * w, ay + dy * w, az + dz * w
        cuda.syncthreads()
    if i < n:
        acc[i, 0], acc[i, 1], acc[i, 2] = ax, ay, az
RX_T, RX_ITEMS, RX_BINS = 256, 8, 16
@cuda.jit
def digit_count16(keys, counts, shift):
    """A radix pass: a block counts the 4-bit digit at ``shift`` of 2048 keys in 16 shared bins, writes its row."""
    h = cuda.shared.array(RX_BINS, int32)
    t = cuda.threadIdx.x
    if t < RX_BINS:
        h[t] = 0
    cuda.syncthreads()
    base = cuda.blockIdx.x * RX_T * RX_ITEMS + t
    for k in range(RX_ITEMS):
        j = base + k * RX_T
        if j < keys.shape[0]:
            cuda.atomic.add(h, (keys[j] >> shift) & 15, 1)
    cuda.syncthreads()
    if t < RX_BINS:
        counts[cuda.blockIdx.x * RX_BINS + t] = h[t]

# --- transpose and row copies
T64, T64_PAD, T64_ROWS = 32, 33, 8
@cuda.jit
def transpose_f64(src, dst):
    """dst = src.T in float64 through a 32 × 33 shared tile, a 32 × 8 block moving four rows per thread."""
    tile = cuda.shared.array((T64, T64_PAD), float64)
    rows, cols = src.shape
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    c = cuda.blockIdx.x * T64 + tx
    for j in range(ty, T64, T64_ROWS):
        r = cuda.blockIdx.y * T64 + j
        if r < rows and c < cols:
            tile[j, tx] = src[r, c]
    cuda.syncthreads()
    c2 = cuda.blockIdx.y * T64 + tx  # a row of dst is a column of src
    for j in range(ty, T64, T64_ROWS):
        r2 = cuda.blockIdx.x * T64 + j
        if r2 < cols and c2 < rows:
            dst[r2, c2] = tile[tx, j]
@cuda.jit
def copy_rows_warp(src, dst):
    """A matrix copy with one warp per row looping over its columns (blocks of 128: four rows)."""
    r, lane = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // 32, cuda.threadIdx.x % 32
    if r < src.shape[0]:
        for c in range(lane, src.shape[1], 32):
            dst[r, c] = src[r, c]

# --- occupancy and latency: few threads, local memory, grid shapes
SORT_K = 16
@cuda.jit
def sort16_local(x):
    """Sort each column of 16 in place: insertion sort in a per-thread array indexed at run time (local memory)."""
    i = cuda.grid(1)
    if i < x.shape[1]:
        v = cuda.local.array(SORT_K, float32)
        for k in range(SORT_K):
            v[k] = x[k, i]
        for k in range(1, SORT_K):
            key, j = v[k], k - 1
            while j >= 0 and v[j] > key:
                v[j + 1] = v[j]
                j -= 1
            v[j + 1] = key
        for k in range(SORT_K):
            x[k, i] = v[k]
@cuda.jit
def leaky_relu_gs(x, out, slope):
    """Leaky ReLU in a grid-stride loop, launched on 1 block of 1024 threads (one SM) or on 8 blocks."""
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        v = x[i]
        out[i] = v if v > float32(0) else slope * v

# --- reductions and atomics
AM_T, AM_ITEMS = 512, 4
@cuda.jit
def max_atomic_i32(x, out):
    """The max of int32 data: every thread an atomicMax on one shared word, then one global atomicMax per block."""
    best = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        best[0] = int32(INT32_MIN)
    cuda.syncthreads()
    base = cuda.blockIdx.x * AM_T * AM_ITEMS + t
    m = int32(INT32_MIN)
    for k in range(AM_ITEMS):
        j = base + k * AM_T
        if j < x.shape[0]:
            m = max(m, x[j])
    cuda.atomic.max(best, 0, m)
    cuda.syncthreads()
    if t == 0:
        cuda.atomic.max(out, 0, best[0])
@cuda.jit
def histogram_global_1024(keys, bins):
    """1024 bins counted straight in global memory, one atomicAdd per key (no shared-memory privatisation)."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        cuda.atomic.add(bins, keys[i], 1)
S64_T, S64_WARPS = 1024, 32
@cuda.jit
def sum_f64_shuffle(x, total):
    """A float64 total: shuffle sums in 32 warps, again in warp 0, one float64 atomicAdd per block of 1024."""
    ws = cuda.shared.array(S64_WARPS, float64)
    t, n = cuda.threadIdx.x, x.shape[0]
    i = cuda.blockIdx.x * 2 * S64_T + t
    v = x[i] if i < n else float64(0)
    if i + S64_T < n:
        v += x[i + S64_T]
    for off in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(FULL_MASK, v, off)
    if t % 32 == 0:
        ws[t // 32] = v
    cuda.syncthreads()
    if t < 32:
        v = ws[t]
        for off in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(FULL_MASK, v, off)
        if t == 0:
            cuda.atomic.add(total, 0, v)
CP_T, CP_WARPS, CP_SLOTS = 128, 4, 5  # CP_SLOTS = CP_WARPS + 1
@cuda.jit
def compact_positive(x, out, counts):
    """Keep x > 0 at the front of each block's 128 slots: ballot + popc ranks, a scan of 4 warp counts, a scatter."""
    woff = cuda.shared.array(CP_SLOTS, int32)
    t, i = cuda.threadIdx.x, cuda.grid(1)
    lane, w = t % 32, t // 32
    keep = i < x.shape[0] and x[i] > float32(0)
    votes = cuda.ballot_sync(FULL_MASK, keep)
    rank = cuda.popc(votes & ((1 << lane) - 1))
    if lane == 0:
        woff[w + 1] = cuda.popc(votes)
    cuda.syncthreads()
    if t == 0:
        woff[0] = 0
        for k in range(1, CP_WARPS + 1):
            woff[k] += woff[k - 1]
        counts[cuda.blockIdx.x] = woff[CP_WARPS]
    cuda.syncthreads()
    if keep:
        out[cuda.blockIdx.x * CP_T + woff[w] + rank] = x[i]

# --- matmul
BM, BM_TX, BM_TY = 64, 64, 4
@cuda.jit
def bmm64_shared(a, b, c):
    """Batched 64 × 64 products, a 64 × 4 block per pair: both in shared memory (32 KB), 16 outputs per thread."""
    sa = cuda.shared.array((BM, BM), float32)
    sb = cuda.shared.array((BM, BM), float32)
    bi, tx, ty = cuda.blockIdx.x, cuda.threadIdx.x, cuda.threadIdx.y
    for k in range(ty * BM_TX + tx, BM * BM, BM_TX * BM_TY):
        sa[k // BM, k % BM] = a[bi, k // BM, k % BM]
        sb[k // BM, k % BM] = b[bi, k // BM, k % BM]
    cuda.syncthreads()
    for r in range(ty, BM, BM_TY):
        acc = float32(0)
        for k in range(BM):
            acc += sa[r, k] * sb[k, tx]
        c[bi, r, tx] = acc
STRIP = 256
@cuda.jit
def matmul_row_strip(a, b, c):
    """c = a·b, no shared memory, a block of 256 per strip of a row: a[row, k] broadcast, b[k, col] coalesced."""
    row, col = cuda.blockIdx.y, cuda.blockIdx.x * STRIP + cuda.threadIdx.x
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc

# --- compute-bound
@cuda.jit
def mandelbrot(out, x0, y0, sx, sy, maxit):
    """Escape counts of a Mandelbrot tile in float32: loops of 0 to ``maxit`` trips, neighbours diverging."""
    c, r = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        cr, ci = x0 + float32(c) * sx, y0 + float32(r) * sy
        zr, zi, k = float32(0), float32(0), 0
        while k < maxit and zr * zr + zi * zi <= float32(4.0):
            zr, zi = zr * zr - zi * zi + cr, float32(2.0) * zr * zi + ci
            k += 1
        out[r, c] = k
@cuda.jit
def logistic_f64(x, out, rate, iters):
    """``iters`` steps of the logistic map v ← r·v·(1 - v): a long dependent chain of float64 operations."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        for _ in range(iters):
            v = rate * v * (float64(1.0) - v)
        out[i] = v

# --- launches: one plan per case
def _grid2(shape, block):  # a 2-D grid over (rows, cols), x along the columns
    return (_cdiv(shape[1], block[0]), _cdiv(shape[0], block[1])), block
def _shifts(a, r):  # the (2r+1)^2 shifted views of a zero-padded float64 copy of a
    p = np.pad(a.astype(np.float64), r)
    return [p[dr:dr + a.shape[0], dc:dc + a.shape[1]] for dr in range(2 * r + 1) for dc in range(2 * r + 1)]
_REV8 = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint32)
def _brev(x):
    return sum(_REV8[(x >> (8 * k)) & 255] << (24 - 8 * k) for k in range(4)).astype(np.uint32)
def _p_gelu(n):
    def want(a):
        v = a[0].astype(np.float64)
        return {1: 0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))}
    return Plan(*_vec(n, 1024), lambda rng: (_u(rng, n, -4, 4), _zeros(n)), want, 1e-5, 1e-6, (_b(n),) * 2)
def _p_bits(n):
    return Plan(*_vec(n, 128), lambda rng: (rng.integers(0, 1 << 32, n, dtype=np.uint32), _zeros(n, np.int32),
                                            _zeros(n, np.uint32)),
                lambda a: {1: np.bitwise_count(a[0]), 2: _brev(a[0])}, 0.0, 0.0, (_b(n),) * 3)
def _halves(rng, n):  # random float16 bit patterns: normal numbers (exponent 1–30) and some ±0
    h = rng.integers(0, 1 << 16, n, dtype=np.uint16) & np.uint16(0x83FF)  # sign and mantissa
    h |= rng.integers(1, 31, n, dtype=np.uint16) << 10
    h[::101] &= np.uint16(0x8000)
    return h
def _p_half(n):
    return Plan(*_vec(n, 128), lambda rng: (_halves(rng, n), _zeros(n, np.uint32)),
                lambda a: {1: a[0].view(np.float16).astype(np.float32).view(np.uint32)}, 0.0, 0.0, (_b(n, 2), _b(n)))
def _p_rgb(n):
    return Plan(*_vec(n, 256), lambda rng: (rng.integers(0, 256, (n, 3), dtype=np.uint8), _zeros(n, np.uint8)),
                lambda a: {1: (a[0].astype(np.int32) @ np.array([77, 150, 29]) + 128) >> 8}, 0.0, 0.0, (3 * n, n))
def _p_reverse(n):
    return Plan(*_vec(n, 1024), lambda rng: (_f32(rng, n), _zeros(n), np.float32(-3.0)),
                lambda a: {1: a[2] * a[0][::-1]}, 0.0, 0.0, (_b(n),) * 2)
def _p_outer(shape):
    rows, cols = shape
    return Plan(*_grid2(shape, (64, 4)), lambda rng: (_f32(rng, rows), _f32(rng, cols), _zeros(shape)),
                lambda a: {2: np.outer(a[0], a[1])}, 0.0, 0.0, (_b(rows), _b(cols), _b(shape)))
def _p_lut(n, tpb):
    return Plan(*_vec(n, tpb), lambda rng: (rng.integers(0, 256, n, dtype=np.uint8), _u(rng, LUT_N), _zeros(n)),
                lambda a: {2: a[1][a[0]]}, 0.0, 0.0, (n, _b(LUT_N), _b(n)))
def _csr(rng, rows):  # row lengths 0–64, random columns, small-integer values
    rowptr = np.zeros(rows + 1, np.int32)
    np.cumsum(rng.integers(0, 65, rows, dtype=np.int8), out=rowptr[1:], dtype=np.int32)
    nnz = int(rowptr[-1])
    return rowptr, rng.integers(0, rows, nnz, dtype=np.int32), _f32(rng, nnz), _f32(rng, rows), _zeros(rows)
def _p_csr(rows, warp):
    def want(a):
        rid = np.repeat(np.arange(rows), np.diff(a[0]))
        return {4: np.bincount(rid, weights=a[2].astype(np.float64) * a[3][a[1]], minlength=rows)}
    launch = ((_cdiv(rows, 4),), (128,)) if warp else _vec(rows, 64)
    return Plan(*launch, lambda rng: _csr(rng, rows), want, 0.0, 0.0,
                (_b(rows + 1), _b(64 * rows), _b(64 * rows), _b(rows), _b(rows)))
def _p_laplace3d(shape):
    def want(a):
        p, m = np.pad(a[0].astype(np.float64), 1), slice(1, -1)
        return {1: (p[:-2, m, m] + p[2:, m, m] + p[m, :-2, m] + p[m, 2:, m] + p[m, m, :-2] + p[m, m, 2:]
                    - 6 * p[m, m, m])}
    return Plan((_cdiv(shape[2], 64), _cdiv(shape[1], 4)), (64, 4), lambda rng: (_f32(rng, shape), _zeros(shape)),
                want, 0.0, 0.0, (_b(shape),) * 2)
def _p_l2norm(shape):
    return Plan((_cdiv(shape[0], 2),), (64,), lambda rng: (_f32(rng, shape), _zeros(shape[0])),
                lambda a: {1: np.sqrt((a[0].astype(np.float64) ** 2).sum(axis=1))}, 1e-6, 0.0,
                (_b(shape), _b(shape[0])))
def _collatz_ref(start, cap):
    v, k = start.astype(np.int64), np.zeros(start.size, np.int64)
    for _ in range(cap):
        live = v != 1
        if not live.any():
            break
        v = np.where(live, np.where(v % 2 == 0, v // 2, 3 * v + 1), v)
        k += live
    return k
def _p_collatz(n):
    return Plan(*_vec(n, 128), lambda rng: (rng.integers(1, 1 << 20, n, dtype=np.int32), _zeros(n, np.int32), 300),
                lambda a: {1: _collatz_ref(a[0], a[2])}, 0.0, 0.0, (_b(n),) * 2)
def _p_box(shape, r, kernel_block):
    return Plan(*_grid2(shape, kernel_block), lambda rng: (_f32(rng, shape), _zeros(shape)),
                lambda a: {1: sum(_shifts(a[0], r)) / (2 * r + 1) ** 2}, 1e-6, 1e-5, (_b(shape),) * 2)
def _nbody_ref(p):
    out = np.zeros((p.shape[0], 3))
    q = p.astype(np.float64)
    for s in range(0, p.shape[0], 256):
        d = q[None, :, :3] - q[s:s + 256, None, :3]
        inv = 1 / np.sqrt((d * d).sum(axis=2) + NB_EPS2)
        out[s:s + 256] = (d * (q[None, :, 3] * inv ** 3)[:, :, None]).sum(axis=1)
    return out
def _p_nbody(n):
    make = lambda rng: (np.hstack([_u(rng, (n, 3)), _u(rng, (n, 1), 0.5, 1.0)]), _zeros((n, 3)))  # noqa: E731
    return Plan(*_vec(n, NB_T), make, lambda a: {1: _nbody_ref(a[0])}, 1e-3, 2e-5 * n, (_b((n, 4)), _b((n, 3))))
def _p_digits(n):
    m = _cdiv(n, RX_T * RX_ITEMS)
    def want(a):
        blk = np.arange(n) // (RX_T * RX_ITEMS)
        return {1: np.bincount(blk * RX_BINS + ((a[0] >> a[2]) & 15), minlength=m * RX_BINS)}
    return Plan((m,), (RX_T,), lambda rng: (rng.integers(0, 1 << 32, n, dtype=np.uint32),
                                            _zeros(m * RX_BINS, np.int32), 4), want, 0.0, 0.0, (_b(n), _b(m * RX_BINS)))
def _p_transpose64(shape):
    return Plan((_cdiv(shape[1], T64), _cdiv(shape[0], T64)), (T64, T64_ROWS),
                lambda rng: (_f32(rng, shape).astype(np.float64), _zeros(shape[::-1], np.float64)),
                lambda a: {1: a[0].T}, 0.0, 0.0, (_b(shape, 8),) * 2)
def _p_copy_rows(shape):
    return Plan((_cdiv(shape[0], 4),), (128,), lambda rng: (_f32(rng, shape), _zeros(shape)),
                lambda a: {1: a[0]}, 0.0, 0.0, (_b(shape),) * 2)
def _p_sort16(m):
    return Plan(*_vec(m, 64), lambda rng: (_u(rng, (SORT_K, m), -100, 100),),
                lambda a: {0: np.sort(a[0], axis=0)}, 0.0, 0.0, (_b((SORT_K, m)),))
def _p_leaky(n, blocks):
    return Plan((blocks,), (1024,), lambda rng: (_f32(rng, n), _zeros(n), np.float32(0.25)),
                lambda a: {1: np.where(a[0] > 0, a[0], a[2] * a[0])}, 0.0, 0.0, (_b(n),) * 2)
def _p_atomax(n):
    return Plan(*_vec(_cdiv(n, AM_ITEMS), AM_T), lambda rng: (rng.integers(INT32_MIN, 1 << 31, n, dtype=np.int32),
                                                              np.full(1, INT32_MIN, np.int32)),
                lambda a: {1: max(int(a[1][0]), int(a[0].max()))}, 0.0, 0.0, (_b(n), 4))
def _p_ghist(n):
    return Plan(*_vec(n, 256), lambda rng: (rng.integers(0, 1024, n, dtype=np.int32), _zeros(1024, np.int32)),
                lambda a: {1: a[1] + np.bincount(a[0], minlength=1024)}, 0.0, 0.0, (_b(n), _b(1024)))
def _p_sum64(n):
    return Plan(*_vec(_cdiv(n, 2), S64_T), lambda rng: (_f32(rng, n).astype(np.float64), _zeros(1, np.float64)),
                lambda a: {1: a[1] + a[0].sum()}, 0.0, 0.0, (_b(n, 8), 8))
def _p_compact(n):
    m = _cdiv(n, CP_T)
    def want(a):  # kept values keep their order, from the front of their block's slice
        keep, blk, out = a[0] > 0, np.arange(n) // CP_T, np.zeros(n)
        counts = np.bincount(blk[keep], minlength=m)
        slot = blk * CP_T + np.cumsum(keep) - 1 - np.concatenate(([0], np.cumsum(counts)))[blk]
        out[slot[keep]] = a[0][keep]
        return {1: out, 2: counts}
    return Plan(*_vec(n, CP_T), lambda rng: (_f32(rng, n), _zeros(n), _zeros(m, np.int32)), want, 0.0, 0.0,
                (_b(n), _b(n), _b(m)))
def _p_bmm(batch):
    s = (batch, BM, BM)
    return Plan((batch,), (BM_TX, BM_TY), lambda rng: (_f32(rng, s), _f32(rng, s), _zeros(s)),
                lambda a: {2: np.matmul(a[0].astype(np.float64), a[1])}, 0.0, 0.0, (_b(s),) * 3)
def _p_strip(shape):
    m, n, k = shape
    return Plan((_cdiv(n, STRIP), m), (STRIP,), lambda rng: (_f32(rng, (m, k)), _f32(rng, (k, n)), _zeros((m, n))),
                lambda a: {2: a[0].astype(np.float64) @ a[1]}, 0.0, 0.0, (_b((m, k)), _b((k, n)), _b((m, n))))
def _mandel_ref(a):
    h, w = a[0].shape
    cr = (a[1] + np.arange(w, dtype=np.float32) * a[3])[None, :].repeat(h, 0).reshape(-1)
    ci = (a[2] + np.arange(h, dtype=np.float32) * a[4])[:, None].repeat(w, 1).reshape(-1)
    k, live, zr, zi = np.zeros(h * w, np.int64), np.arange(h * w), *np.zeros((2, h * w), np.float32)
    for _ in range(a[5]):
        go = zr * zr + zi * zi <= np.float32(4.0)
        live, zr, zi = live[go], zr[go], zi[go]
        zr, zi = zr * zr - zi * zi + cr[live], np.float32(2.0) * zr * zi + ci[live]
        k[live] += 1
    return k.reshape(h, w)
def _p_mandel(shape):
    h, w = shape
    maxit = 64 if h * w < 1 << 16 else 256
    return Plan(*_grid2(shape, (16, 16)), lambda rng: (_zeros(shape, np.int32), np.float32(-2.0), np.float32(-1.25),
                                                       np.float32(2.5 / w), np.float32(2.5 / h), maxit),
                lambda a: {0: _mandel_ref(a)}, 0.0, 0.0, (_b(shape),), 0.01)
def _p_logistic(n):
    iters = 64 if n < 1 << 16 else 2000
    def want(a):
        v = a[0].copy()
        for _ in range(a[3]):
            v = a[2] * v * (1.0 - v)
        return {1: v}
    return Plan(*_vec(n, 128), lambda rng: (rng.uniform(0.05, 0.95, n), _zeros(n, np.float64), 2.8, iters), want,
                1e-9, 1e-12, (_b(n, 8),) * 2)
FILL = H200_SMS * 2048 * 2  # threads of the compute loops: two full waves of 2048 threads per SM
_p_lut_global, _p_lut_shared = (lambda n: _p_lut(n, 256)), (lambda n: _p_lut(n, 512))
_p_csr_thread, _p_csr_warp = (lambda n: _p_csr(n, False)), (lambda n: _p_csr(n, True))
_p_box3, _p_box7 = (lambda s: _p_box(s, 1, (16, 16))), (lambda s: _p_box(s, R7, (B7, B7)))
_p_leaky1, _p_leaky8 = (lambda n: _p_leaky(n, 1)), (lambda n: _p_leaky(n, 8))

#: name -> (kernel, chapter, plan(shape), small shape, gpu shape, what, tags); shape: n, (rows, cols), (z, y, x) or
#: (m, n, k); "2d" marks the kernels tried at awkward shapes, "fixed_grid" a grid that does not grow with n
SPECS = {
    "gelu_tanh": (gelu_tanh, 1, _p_gelu, 1500, 1 << 24, "tanh in float32, blocks of 1024", ("sfu",)),
    "popc_brev": (popc_brev, 1, _p_bits, 1025, 1 << 25, "int32 bit tricks", ("int",)),
    "reverse_scale": (reverse_scale, 1, _p_reverse, 1500, 1 << 25, "reversed writes, blocks of 1024", ()),
    "outer_product": (outer_product, 1, _p_outer, (17, 45), (8192, 8192), "write-bound, 64x4 blocks", ("2d",)),
    "half_to_float": (half_to_float_bits, 3, _p_half, 1030, 1 << 26, "float16 as uint16", ("bytes",)),
    "rgb_to_gray": (rgb_to_gray, 3, _p_rgb, 1027, 1 << 25, "3-byte pixel records", ("bytes",)),
    "lut_global": (lut_global, 3, _p_lut_global, 1100, 1 << 26, "256-float table in global", ("lut",)),
    "spmv_csr_thread": (spmv_csr_thread, 3, _p_csr_thread, 333, 1 << 20, "CSR, thread per row", ("sparse",)),
    "laplace7_3d": (laplace7_3d, 3, _p_laplace3d, (5, 9, 70), (256, 256, 256), "7-point 3-D stencil", ("2d",)),
    "spmv_csr_warp": (spmv_csr_warp, 2, _p_csr_warp, 333, 1 << 20, "CSR, warp per row", ("sparse",)),
    "row_l2norm_warp": (row_l2norm_warp, 2, _p_l2norm, (17, 45), (65536, 1000), "warp per row, xor", ("2d",)),
    "collatz_steps": (collatz_steps, 2, _p_collatz, 1025, 1 << 22, "data-dependent while", ("divergence",)),
    "lut_shared": (lut_shared, 4, _p_lut_shared, 1100, 1 << 26, "the table in shared memory", ("lut",)),
    "box3_global": (box3_global, 4, _p_box3, (17, 45), (6000, 4000), "3x3 mean from global", ("2d",)),
    "box7_shared": (box7_shared, 4, _p_box7, (17, 45), (4096, 4096), "7x7 mean, shared tile", ("2d",)),
    "nbody_accel": (nbody_accel, 4, _p_nbody, 200, 16384, "n-body, shared tiles", ("compute",)),
    "digit_count16": (digit_count16, 4, _p_digits, 5000, 1 << 25, "radix digit count", ("atomics",)),
    "transpose_f64": (transpose_f64, 5, _p_transpose64, (17, 45), (8192, 2048), "float64 tile", ("2d", "fp64")),
    "copy_rows_warp": (copy_rows_warp, 5, _p_copy_rows, (17, 45), (16384, 3000), "warp per row copy", ("2d",)),
    "sort16_local": (sort16_local, 6, _p_sort16, 200, 1 << 21, "local array, dynamic index", ("local",)),
    "gridstride_1block": (leaky_relu_gs, 6, _p_leaky1, 3000, 1 << 20, "1 block", ("gridstride", "fixed_grid")),
    "gridstride_8blocks": (leaky_relu_gs, 6, _p_leaky8, 3000, 1 << 20, "8 blocks", ("gridstride", "fixed_grid")),
    "max_atomic_i32": (max_atomic_i32, 7, _p_atomax, 5000, 1 << 25, "atomicMax, shared then global", ("atomics",)),
    "histogram_global": (histogram_global_1024, 7, _p_ghist, 1025, 1 << 24, "1024 global bins", ("atomics",)),
    "sum_f64_shuffle": (sum_f64_shuffle, 7, _p_sum64, 2500, 1 << 25, "float64 shuffles", ("fp64", "atomics")),
    "compact_positive": (compact_positive, 7, _p_compact, 1000, 1 << 25, "ballot compaction", ("vote",)),
    "bmm64_shared": (bmm64_shared, 9, _p_bmm, 3, 8192, "batched 64x64 in shared", ("compute",)),
    "matmul_row_strip": (matmul_row_strip, 9, _p_strip, (17, 300, 40), (2048, 1024, 512), "row strips", ("2d",)),
    "mandelbrot": (mandelbrot, 10, _p_mandel, (17, 45), (2048, 2048), "divergent compute", ("2d", "compute")),
    "logistic_f64": (logistic_f64, 10, _p_logistic, 1025, FILL, "float64 chain", ("compute", "fp64")),
}


plan, case, cases = builders(SPECS, "fresh3")

#: Cases of this round that were profiled (run 20261202T074500Z-bde18f) and scored against their frozen predictions,
#: then taken out of the repository because they read like graded solutions (tests/test_spoilers.py: a learner reads
#: course/); their source is at commit a850eb4, their counts in data/explain_predictions_fresh3.json, and they stay in
#: the round's score (removing them after the fact would change it).
RETIRED = {
    "fresh3_column_max": "0.92 alike to 03.column_sums's solution, 0.87 to 01.pair_sums's",
}
