"""Round 9 of fresh kernels, written apart from the chapters and rounds 2–8, to judge a time predictor on unseen code.

A byte swap of uint32 words, an integer quotient and remainder, a float64 power, quaternion rotations of 16-byte
vectors, splitmix64 numbers, a warp's inclusive xor scan by shuffles, warps rotated by an amount from the data, a
majority vote by ballot, packing three float32 arrays into 12-byte records, sums of four hashed gathers in a table
that fits the L2 and in one far larger, column sums and maxima of a uint8 image, an ELL sparse matrix-vector
product, histogram equalisation of 4096-pixel tiles in shared memory, an 8 × 8 DCT of an image through shared
tiles, shared-memory reads at strides 1 and 32 words, a transpose with blocks walked along diagonals, a 90° rotation
of uint16 images through a tile, a loop whose trip count comes from the data (random and sorted), an L1 norm on a
fixed grid of 264 blocks, min–max scaling of 11520-element chunks in 47 KB of shared memory, running maxima in a
local ring buffer, a tiny 8–16–1 tanh network a thread, one-address int32 atomics, packed uint64 arg-maxima on 64
addresses, scattered int32 atomic minima, a multiply modulo 2³¹ - 1 by compare-and-swap, a lower-triangular
matrix-vector product a warp a row, a float64 matrix product on 16 × 16 tiles, fixed-point CORDIC sines and cosines
and the log-density of a mixture of 8 Gaussians.  ``cases(scale)``: one :class:`~course.kernels.cases.Case` per
launch (``fresh9_<what>``, tagged ``chNN``, ``fresh9``) at H200 sizes (``"gpu"``) or awkward CPU-engine sizes
(``"small"``); each :class:`Plan` declares its arrays' bytes without building them.

This module holds the kernels only.  Their launches — each case's plan (grid, block, arrays, NumPy answer, bytes),
the sizes, the ``SPECS`` table, ``plan``/``case``/``cases`` and ``RETIRED`` — live in
:mod:`course.kernels.fresh9_plans`, as rounds 4's to 8's do.  Compiler facts are keyed by file and line, so add to
the end of the file, never above a kernel.  ``tests/test_fresh9_cases.py`` checks every case on the CPU engine on two
seeds and at awkward shapes, that each check can fail, that the gpu-size launches keep the small ones' rule within
the byte limits, and that ptxas compiles every kernel.  Their author ran nothing on a GPU: the gpu sizes were chosen
from the bytes each launch moves and the work it does, for a time between about 20 µs and 5 ms on an H200.
"""

from __future__ import annotations

import math

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, float64, int32, int64, uint8, uint16, uint32, uint64

FULL_MASK = 0xFFFFFFFF


# --- elementwise: bytes of a word, integer division, a float64 power, 16-byte vectors, 64-bit hashing
@cuda.jit
def byteswap_u32(x, out):
    """out = x with its four bytes in reverse order (uint32): four shifts, masks and ors an element."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = uint32(((v >> 24) & 0xFF) | ((v >> 8) & 0xFF00) | ((v << 8) & 0xFF0000) | ((v << 24) & 0xFF000000))
@cuda.jit
def divmod_i32(a, b, q, r):
    """q = a // b and r = a % b for non-negative int32 a and positive int32 b: an integer division a thread."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        x, d = a[i], b[i]
        q[i] = x // d
        r[i] = x % d
@cuda.jit
def pow_scaled_f64(x, y, out):
    """out = x^y / (1 + x) in float64 (x > 0): a pow (a log and an exp) and a division an element."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = math.pow(v, y[i]) / (1.0 + v)
@cuda.jit
def quat_rotate_f32x4(q, v, out):
    """out = q·v·q* for unit quaternions q (n, 4) = (w, x, y, z) and 16-byte vectors v (n, 4) whose fourth float
    passes through: t = 2 q⃗ × v, v + w t + q⃗ × t, eight float32 loads and four stores a thread."""
    i = cuda.grid(1)
    if i < q.shape[0]:
        w, qx, qy, qz = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        vx, vy, vz = v[i, 0], v[i, 1], v[i, 2]
        tx = float32(2) * (qy * vz - qz * vy)
        ty = float32(2) * (qz * vx - qx * vz)
        tz = float32(2) * (qx * vy - qy * vx)
        out[i, 0] = vx + w * tx + (qy * tz - qz * ty)
        out[i, 1] = vy + w * ty + (qz * tx - qx * tz)
        out[i, 2] = vz + w * tz + (qx * ty - qy * tx)
        out[i, 3] = v[i, 3]
SM_GAMMA, SM_M1, SM_M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
SM_S1, SM_S2, SM_S3 = np.uint64(30), np.uint64(27), np.uint64(31)
SM_LOW, SM_HALF = np.uint64(0xFFFFFFFF), np.uint64(32)
@cuda.jit
def splitmix64_fill(seed, out):
    """out[i] = splitmix64 of seed + (i + 1)·γ as (low, high) uint32 halves: two 64-bit multiplies and three
    xor-shifts, two 4-byte stores side by side and no load."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        z = seed + (uint64(i) + uint64(1)) * SM_GAMMA
        z = (z ^ (z >> SM_S1)) * SM_M1
        z = (z ^ (z >> SM_S2)) * SM_M2
        z = z ^ (z >> SM_S3)
        out[i, 0] = uint32(z & SM_LOW)
        out[i, 1] = uint32(z >> SM_HALF)


# --- warps: a scan by shuffles, a rotation by the data, a vote
@cuda.jit
def warp_xor_scan_u32(x, out):
    """out = the inclusive xor scan of x within each warp's 32 elements (zero past the end): five shfl_up_sync
    steps."""
    i = cuda.grid(1)
    n = x.shape[0]
    lane = cuda.threadIdx.x % 32
    v = int64(x[i]) if i < n else int64(0)  # shuffled as int64: shfl_sync has no uint32 form
    d = 1
    while d < 32:
        o = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v = v ^ o
        d *= 2
    if i < n:
        out[i] = uint32(v)
@cuda.jit
def warp_rotate_by_data(x, rot, out):
    """out[i] = 2·x[j] + x[i] with j the lane rot[warp] places up (mod 32) in the same warp (zero past the end): the
    source lane of the shfl_sync comes from an array, one byte read by the whole warp."""
    i = cuda.grid(1)
    n = x.shape[0]
    lane = cuda.threadIdx.x % 32
    v = x[i] if i < n else float32(0)
    r = int32(rot[i // 32]) if i < n else 0
    o = cuda.shfl_sync(FULL_MASK, v, (lane + r) & 31)
    if i < n:
        out[i] = float32(2) * o + v
@cuda.jit
def warp_majority_ballot(x, t, out):
    """c = how many of the warp's elements exceed t (popc of a ballot); out = c where they are a strict majority of
    the warp's elements in range, else -c."""
    i = cuda.grid(1)
    n = x.shape[0]
    f = i < n and x[i] > t
    c = cuda.popc(cuda.ballot_sync(FULL_MASK, f))
    m = min(32, n - (i // 32) * 32)
    if i < n:
        out[i] = c if 2 * c > m else -c


# --- access patterns: 12-byte records, hashed gathers, byte columns, a sparse matrix in ELL form
@cuda.jit
def soa_to_aos3_f32(x, y, z, out):
    """out[i] = (x[i], y[i], z[i]): three coalesced float32 loads, three stores 12 bytes apart."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i, 0] = x[i]
        out[i, 1] = y[i]
        out[i, 2] = z[i]
HG_K, HG_MULT, HG_SHIFT = 4, 2654435761, 7
@cuda.jit
def hash_gather4(table, out):
    """out[i] = Σₖ table[h(4i + k)] over four k, h(j) = (j·2654435761 >> 7) mod m for a power of two m: four loads
    at scattered places computed from the index."""
    i = cuda.grid(1)
    m = table.shape[0]
    if i < out.shape[0]:
        acc = float32(0)
        for k in range(HG_K):
            j = (int64(HG_K * i + k) * HG_MULT >> HG_SHIFT) & (m - 1)
            acc += table[j]
        out[i] = acc
@cuda.jit
def u8_column_stats(img, total, peak):
    """For each column of a (rows, cols) uint8 image, a thread walks down the rows: total = the int32 sum, peak = the
    largest byte (a warp reads 32 adjacent bytes a row)."""
    c = cuda.grid(1)
    rows, cols = img.shape
    if c < cols:
        s = 0
        mx = 0
        for r in range(rows):
            v = int32(img[r, c])
            s += v
            mx = max(mx, v)
        total[c] = s
        peak[c] = uint8(mx)
@cuda.jit
def ell_spmv_f32(cols, vals, x, y):
    """y = A·x for A in ELL form stored by slot (k, rows): row r's entries are (cols[k, r], vals[k, r]), -1 marks an
    empty slot. Coalesced reads of the slots, a gather of x, a row's length from the data."""
    r = cuda.grid(1)
    slots, rows = cols.shape
    if r < rows:
        acc = float32(0)
        for k in range(slots):
            c = cols[k, r]
            if c < 0:
                break
            acc += vals[k, r] * x[c]
        y[r] = acc


# --- shared memory: a histogram and its scan, a separable 8 × 8 transform, reads at two strides
HE_T, HE_PER = 256, 16  # threads (one a bin), pixels a thread
HE_N = HE_T * HE_PER
@cuda.jit
def hist_equalize_tiles(img, out):
    """Each run of 4096 uint8 pixels equalised by its own histogram: shared int32 atomics count the 256 values, a
    Hillis–Steele scan in shared memory (eight steps, two buffers) gives the cumulative counts, and each pixel maps
    to cdf[v]·255 // (pixels in the run)."""
    h = cuda.shared.array((2, HE_T), int32)
    t, n = cuda.threadIdx.x, img.shape[0]
    base = cuda.blockIdx.x * HE_N
    m = min(HE_N, n - base)
    h[0, t] = 0
    cuda.syncthreads()
    for q in range(HE_PER):
        j = q * HE_T + t
        if j < m:
            cuda.atomic.add(h, (0, int32(img[base + j])), 1)
    cuda.syncthreads()
    src = 0
    d = 1
    while d < HE_T:
        v = h[src, t]
        if t >= d:
            v += h[src, t - d]
        h[1 - src, t] = v
        src = 1 - src
        cuda.syncthreads()
        d *= 2
    for q in range(HE_PER):
        j = q * HE_T + t
        if j < m:
            out[base + j] = uint8(h[src, int32(img[base + j])] * 255 // m)
DC = 8  # the transform's side; blocks of 32 × 8 threads hold four 8 × 8 tiles side by side
DC_W = 32
@cuda.jit
def dct8x8_shared(img, cmat, out):
    """The 2-D DCT C·T·Cᵀ of each 8 × 8 tile T of a float32 image (zero outside), C the orthonormal DCT-II matrix:
    C and four tiles in shared memory, a pass along rows into a second shared tile, a pass down columns, eight
    multiply-adds a thread each."""
    cs = cuda.shared.array((DC, DC), float32)
    tile = cuda.shared.array((DC, DC_W), float32)
    tmp = cuda.shared.array((DC, DC_W), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    c, r = cuda.grid(2)
    h, w = img.shape
    if tx < DC:
        cs[ty, tx] = cmat[ty, tx]
    tile[ty, tx] = img[r, c] if r < h and c < w else float32(0)
    cuda.syncthreads()
    u, c0 = tx % DC, (tx // DC) * DC
    acc = float32(0)
    for k in range(DC):
        acc += tile[ty, c0 + k] * cs[u, k]
    tmp[ty, tx] = acc
    cuda.syncthreads()
    acc = float32(0)
    for k in range(DC):
        acc += cs[ty, k] * tmp[k, tx]
    if r < h and c < w:
        out[r, c] = acc
SR_T, SR_N, SR_READS = 256, 1024, 32  # threads, floats a block stages, reads a thread
SR_PER = SR_N // SR_T
@cuda.jit
def shared_reads_strided(x, out, stride):
    """Each block stages 1024 float32 of x in shared memory; thread t sums s[(t·stride + k) mod 1024] over 32 k.
    Stride 1: a warp reads 32 banks at once; stride 32: every lane the same bank (32-way conflicts)."""
    s = cuda.shared.array(SR_N, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * SR_N
    for q in range(SR_PER):
        j = q * SR_T + t
        s[j] = x[base + j] if base + j < n else float32(0)
    cuda.syncthreads()
    acc = float32(0)
    for k in range(SR_READS):
        acc += s[(t * stride + k) & (SR_N - 1)]
    i = cuda.blockIdx.x * SR_T + t
    if i < out.shape[0]:
        out[i] = acc


# --- transpose: blocks along diagonals, a rotation of 2-byte pixels
TD = 32  # tile side; blocks of 32 × 8, four rows each
TD_PAD = TD + 1
@cuda.jit
def transpose_diagonal_f32(src, dst):
    """dst = srcᵀ in float32 through a 32 × 33 shared tile, block b = x + gx·y taking tile row b mod gy and tile
    column (b // gy + b mod gy) mod gx: consecutive blocks walk a diagonal, not one row of tiles."""
    tile = cuda.shared.array((TD, TD_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape
    gx, gy = cuda.gridDim.x, cuda.gridDim.y
    b = cuda.blockIdx.x + gx * cuda.blockIdx.y
    by = b % gy
    bx = (b // gy + by) % gx
    c0, r0 = bx * TD, by * TD
    for k in range(0, TD, 8):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            tile[ty + k, tx] = src[r, c]
    cuda.syncthreads()
    for k in range(0, TD, 8):
        r, c = c0 + ty + k, r0 + tx
        if r < cols and c < rows:
            dst[r, c] = tile[tx, ty + k]
@cuda.jit
def rotate90_u16_tiled(src, dst):
    """dst = src turned 90° clockwise (dst[c, rows - 1 - r] = src[r, c]) for uint16 through a 32 × 33 shared tile:
    64-byte loads and stores a warp, the stores running down the columns of src."""
    tile = cuda.shared.array((TD, TD_PAD), uint16)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape
    c0, r0 = cuda.blockIdx.x * TD, cuda.blockIdx.y * TD
    for k in range(0, TD, 8):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            tile[ty + k, tx] = src[r, c]
    cuda.syncthreads()
    for k in range(0, TD, 8):
        dr, sr = c0 + ty + k, r0 + tx  # dst row = src column; the source row of this lane
        if dr < cols and sr < rows:
            dst[dr, rows - 1 - sr] = tile[tx, ty + k]


# --- latency and occupancy: trip counts from the data, a fixed grid, 47 KB of shared memory, a local ring, registers
GS_RATE = 0.75
@cuda.jit
def geometric_steps(x, steps, last):
    """Multiply each float32 by 0.75 until it is at most 1: steps = how many times, last = where it ended. A warp
    runs as long as its slowest lane."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        k = 0
        while v > float32(1):
            v = v * float32(GS_RATE)
            k += 1
        steps[i] = k
        last[i] = v
L1_BLOCKS, L1_T = 264, 64  # the fixed grid: two blocks of two warps an SM
@cuda.jit
def l1norm_i16_264blocks(x, out):
    """out[0] += Σ|x| for int16 x by a grid-stride loop on 264 blocks of 64: an int32 sum a thread, a tree in shared
    int64, one int64 atomic a block."""
    s = cuda.shared.array(L1_T, int64)
    t = cuda.threadIdx.x
    acc = 0
    for j in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        acc += abs(int32(x[j]))
    s[t] = acc
    cuda.syncthreads()
    d = L1_T // 2
    while d > 0:
        if t < d:
            s[t] += s[t + d]
        cuda.syncthreads()
        d //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])
MS_T, MS_PER = 256, 45  # threads, elements a thread
MS_N = MS_T * MS_PER  # 11520 float32: 45 KB a block, with the two 1 KB trees 47 KB
@cuda.jit
def minmax_scale_shared(x, out):
    """Each run of 11520 float32 scaled to (x - min) / (max - min) of its run (0 where they are equal): the run
    staged in 45 KB of shared memory, the extremes by two shared trees, then scaled from shared memory."""
    s = cuda.shared.array(MS_N, float32)
    lo = cuda.shared.array(MS_T, float32)
    hi = cuda.shared.array(MS_T, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * MS_N
    m = min(MS_N, n - base)
    a, b = float32(3.0e38), float32(-3.0e38)
    for q in range(MS_PER):
        j = q * MS_T + t
        if j < m:
            v = x[base + j]
            s[j] = v
            a, b = min(a, v), max(b, v)
    lo[t], hi[t] = a, b
    cuda.syncthreads()
    d = MS_T // 2
    while d > 0:
        if t < d:
            lo[t] = min(lo[t], lo[t + d])
            hi[t] = max(hi[t], hi[t + d])
        cuda.syncthreads()
        d //= 2
    mn, span = lo[0], hi[0] - lo[0]
    for q in range(MS_PER):
        j = q * MS_T + t
        if j < m:
            out[base + j] = (s[j] - mn) / span if span > float32(0) else float32(0)
WM_W = 8  # the window
@cuda.jit
def column_window_max8_local(x, out):
    """out[t, c] = the largest of x[t - 7 … t, c] down each column of a (T, n) time-major float32 array: a thread a
    column keeps the last 8 values in a local ring buffer written at t mod 8 and scanned whole each step."""
    c = cuda.grid(1)
    steps, n = x.shape
    if c < n:
        ring = cuda.local.array(WM_W, float32)
        for k in range(WM_W):
            ring[k] = float32(-3.0e38)
        for t in range(steps):
            ring[t % WM_W] = x[t, c]
            m = ring[0]
            for k in range(1, WM_W):
                m = max(m, ring[k])
            out[t, c] = m
MLP_IN, MLP_H = 8, 16
@cuda.jit
def tiny_mlp_tanh(x, w1, b1, w2, b2, y):
    """y = w2·tanh(w1·x + b1) + b2 for each 8-float input row, 16 hidden units: the row and the hidden values in
    registers (unrolled local arrays), the 161 weights read by every thread (cached broadcasts), 16 tanh."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = cuda.local.array(MLP_IN, float32)
        for k in range(MLP_IN):
            v[k] = x[i, k]
        acc = b2[0]
        for j in range(MLP_H):
            z = b1[j]
            for k in range(MLP_IN):
                z += w1[j, k] * v[k]
            acc += w2[j] * math.tanh(z)
        y[i] = acc


# --- atomics: one address, 64 addresses of packed keys, scattered minima, a multiply by compare-and-swap
@cuda.jit
def sum_positive_one_address(x, total):
    """total[0] += x[i] and total[1] += 1 for every positive int32 x[i]: every thread's atomics on the same two
    words."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        if v > 0:
            cuda.atomic.add(total, 0, v)
            cuda.atomic.add(total, 1, 1)
AP_SEGS = 64
AP_SHIFT = np.uint64(32)
@cuda.jit
def argmax_packed_u64(keys, out):
    """out[i mod 64] = max(out[i mod 64], key·2³² + i) by a uint64 atomic max: the largest key (below 2²⁰) of each
    of 64 interleaved segments and the last index that holds it; a warp's atomics go to 32 neighbouring addresses."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        cuda.atomic.max(out, i & (AP_SEGS - 1), (uint64(keys[i]) << AP_SHIFT) | uint64(i))
@cuda.jit
def scatter_min_i32(idx, vals, out):
    """out[idx[i]] = min(out[idx[i]], vals[i]) by an int32 atomic min at random addresses."""
    i = cuda.grid(1)
    if i < vals.shape[0]:
        cuda.atomic.min(out, idx[i], vals[i])
MM_P = 2147483647  # 2³¹ - 1
MM_FACTORS = 5  # element i multiplies by 2 + i mod 5
@cuda.jit
def cas_mulmod_i32(keys, table):
    """table[keys[i]] = table[keys[i]]·(2 + i mod 5) mod 2³¹ - 1 by a compare-and-swap loop on int32 (the product in
    int64): products commute, so the result does not depend on the order."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        j = keys[i]
        g = int64(2 + i % MM_FACTORS)
        old = table[j]
        while True:
            new = int32((int64(old) * g) % MM_P)
            prev = cuda.atomic.cas(table, j, old, new)
            if prev == old:
                break
            old = prev


# --- matmul: a triangular matrix-vector product, a float64 product on tiles
TL_T = 256  # threads a block: 8 rows
@cuda.jit
def tri_lower_matvec_warp(a, x, y):
    """y = tril(A)·x for a square float32 A, a warp a row: the lanes read row r's first r + 1 elements coalesced (a
    row's work grows with r), an xor-shuffle sum."""
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    n = a.shape[0]
    if row < n:
        acc = float32(0)
        for c in range(lane, row + 1, 32):
            acc += a[row, c] * x[c]
        for d in (16, 8, 4, 2, 1):
            acc += cuda.shfl_xor_sync(FULL_MASK, acc, d)
        if lane == 0:
            y[row] = acc
DG = 16  # tile side; blocks of 16 × 16
@cuda.jit
def dgemm_tile16_f64(a, b, c):
    """c = a·b in float64 with a (m, k) and b (k, n): 16 × 16 tiles of each in shared memory a step (2 KB each), 16
    float64 multiply-adds a thread a step."""
    sa = cuda.shared.array((DG, DG), float64)
    sb = cuda.shared.array((DG, DG), float64)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    m, k = a.shape
    n = b.shape[1]
    acc = 0.0
    for k0 in range(0, k, DG):
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k else 0.0
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < k and col < n else 0.0
        cuda.syncthreads()
        for q in range(DG):
            acc += sa[ty, q] * sb[q, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


# --- special functions: CORDIC in fixed point, a mixture's log-density
CO_STEPS = 24
CO_ATAN = tuple(int(round(math.atan(2.0 ** -k) * (1 << 30))) for k in range(CO_STEPS))  # Q30 radians
CO_K = int(round((1 << 30) / math.prod(math.sqrt(1 + 4.0 ** -k) for k in range(CO_STEPS))))  # 1/gain in Q30
@cuda.jit
def cordic_sincos_q30(theta, cs, sn):
    """cos and sin of Q30 angles in [-π/2, π/2] by 24 CORDIC rotations in 64-bit integers: a shift-and-add step each,
    its direction from the sign of the remaining angle (a per-lane choice), the arctangents from a constant table."""
    i = cuda.grid(1)
    if i < theta.shape[0]:
        z = int64(theta[i])
        x, y = int64(CO_K), int64(0)
        for k in range(CO_STEPS):
            dx, dy = y >> k, x >> k
            if z >= 0:
                x, y, z = x - dx, y + dy, z - CO_ATAN[k]
            else:
                x, y, z = x + dx, y - dy, z + CO_ATAN[k]
        cs[i] = int32(x)
        sn[i] = int32(y)
GM_K = 8
@cuda.jit
def gauss_mix8_logpdf(x, mu, isig, logw, out):
    """out = log Σₖ exp(logw[k] - ((x - mu[k])·isig[k])² / 2) over 8 components in float32, by the largest exponent
    first: 8 exponentials and a log a thread, the 24 parameters read by every thread."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        top = float32(-3.0e38)
        for k in range(GM_K):
            z = (v - mu[k]) * isig[k]
            top = max(top, logw[k] - float32(0.5) * z * z)
        s = float32(0)
        for k in range(GM_K):
            z = (v - mu[k]) * isig[k]
            s += math.exp(logw[k] - float32(0.5) * z * z - top)
        out[i] = top + math.log(s)
