"""Round 10 of fresh kernels, written apart from the chapters and rounds 2–9, to judge a time predictor on unseen code.

A sigmoid-gated product, float64 unit vectors, integer square roots digit by digit, a contrast stretch of uint8
pixels, int16 stereo samples mixed to float32 mono, smallest odd factors by trial division, a warp that skips its
work when no lane is hot (any_sync, few hot warps and all of them), dot products of 32-element segments by
shfl_down, gathers of 8-byte records in a table that fits the L2 and in one far larger, box queries on four float32
columns, row sums a thread a row, a 5-point Laplacian through a haloed shared tile, a tall 32-wide matrix times a
vector staged in shared memory (rows read at a stride of 32 words and of 33), a 1024-bin histogram of uint16 in
shared memory on a fixed grid of 264 blocks, a block scan of 1024 by warp shuffles, a transpose through an unpadded
32 × 32 tile, a transpose of uint64 through a padded one, uint32 to decimal digits in a local array, a float64 dot
product on 32 blocks, exp by its Taylor series until the terms are small, (a tree reduction that adds on load, retired),
absolute deviations summed a warp an atomic, float64 atomic adds on 256 and on four million addresses, a count
kept in one shared word, bits unpacked to bytes, float32 rounded to bfloat16 by bits, Aᵀx with x staged in shared
memory, a float32 product on 8 × 8 tiles and float64 cube roots by Newton's method.  ``cases(scale)``: one
:class:`~course.kernels.cases.Case` per launch (``fresh10_<what>``, tagged ``chNN``, ``fresh10``) at H200 sizes
(``"gpu"``) or awkward CPU-engine sizes (``"small"``); each :class:`Plan` declares its arrays' bytes without building
them.

This module holds the kernels only.  Their launches — each case's plan (grid, block, arrays, NumPy answer, bytes),
the sizes, the ``SPECS`` table, ``plan``/``case``/``cases`` and ``RETIRED`` — live in
:mod:`course.kernels.fresh10_plans`, as rounds 4's to 9's do.  Compiler facts are keyed by file and line, so add to
the end of the file, never above a kernel.  ``tests/test_fresh10_cases.py`` checks every case on the CPU engine on
two seeds and at awkward shapes, that each check can fail, that the gpu-size launches keep the small ones' rule
within the byte limits, and that ptxas compiles every kernel.  Their author ran nothing on a GPU: the gpu sizes were
chosen from the bytes each launch moves and the work it does, for a time between about 20 µs and 5 ms on an H200.
"""

from __future__ import annotations

import math

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, float64, int32, int64, uint8, uint16, uint32, uint64

FULL_MASK = 0xFFFFFFFF


# --- elementwise: a gate, float64 vectors, integer roots, bytes, 2-byte samples
@cuda.jit
def glu_sigmoid_f32(a, g, out):
    """out = a·σ(g) = a / (1 + e^-g) in float32: an exponential and a divide, two loads and a store an element."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] / (float32(1) + math.exp(-g[i]))
@cuda.jit
def unit_vec3_f64(x, y, z, ox, oy, oz):
    """(ox, oy, oz) = (x, y, z) / |(x, y, z)| in float64 on three planes (zero stays zero): a float64 square root and
    a divide, 48 bytes an element."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        a, b, c = x[i], y[i], z[i]
        r = math.sqrt(a * a + b * b + c * c)
        inv = 1.0 / r if r > 0.0 else 0.0
        ox[i] = a * inv
        oy[i] = b * inv
        oz[i] = c * inv
IS_STEPS = 16
@cuda.jit
def isqrt_bitwise_u32(x, out):
    """out = ⌊√x⌋ for uint32 x, digit by digit: 16 rounds of a compare, a subtract and shifts (in int64), one branch
    a round that differs by lane."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = int64(x[i])
        r = int64(0)
        for k in range(IS_STEPS):
            b = int64(1) << (30 - 2 * k)
            t = r + b
            if v >= t:
                v -= t
                r = (r >> 1) + b
            else:
                r = r >> 1
        out[i] = uint32(r)
@cuda.jit
def contrast_u8(x, out, gain, offset):
    """out = clamp((x - 128)·gain + offset, 0, 255) truncated, for uint8 pixels: a byte in, a byte out, float32 in
    between."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = (float32(x[i]) - float32(128)) * gain + offset
        out[i] = uint8(min(max(v, float32(0)), float32(255)))
@cuda.jit
def pcm16_stereo_to_mono(x, out, scale):
    """out[i] = (x[i, 0] + x[i, 1])·scale: interleaved int16 left and right samples (4 bytes) to one float32."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = (float32(x[i, 0]) + float32(x[i, 1])) * scale


# --- warps: trial division, a skip by any_sync, segment dots by shfl_down
@cuda.jit
def smallest_odd_factor(x, out):
    """out = the smallest factor d ≥ 3 of each odd int32 x ≥ 3 (x itself when prime), by trial division with odd d
    while d² ≤ x: a composite stops early, a prime runs √x / 2 integer remainders, and a warp waits for its slowest
    lane."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        d = 3
        while d * d <= v:
            if v % d == 0:
                break
            d += 2
        out[i] = d if d * d <= v else v
WS_TERMS = 16
@cuda.jit
def warp_skip_any_sync(x, t, out):
    """out = Σₖ e^(-k·x²)·cos(k·x)/k over k = 1…16 for every element of a warp in which any element exceeds t, else
    0: any_sync decides for the whole warp, so a cold warp only loads and stores."""
    i = cuda.grid(1)
    n = x.shape[0]
    v = x[i] if i < n else float32(0)
    hot = cuda.any_sync(FULL_MASK, i < n and v > t)
    if i < n:
        acc = float32(0)
        if hot:
            for k in range(1, WS_TERMS + 1):
                kf = float32(k)
                acc += math.exp(-kf * v * v) * math.cos(kf * v) / kf
        out[i] = acc
@cuda.jit
def warp_segdot32_down(a, b, out):
    """out[s] = Σ a[32s + l]·b[32s + l] over a warp's 32 lanes (zero past the end): a product a lane, five
    shfl_down_sync steps, lane 0 stores."""
    i = cuda.grid(1)
    n = a.shape[0]
    p = a[i] * b[i] if i < n else float32(0)
    for d in (16, 8, 4, 2, 1):
        p += cuda.shfl_down_sync(FULL_MASK, p, d)
    if cuda.threadIdx.x % 32 == 0 and i < n:
        out[i // 32] = p


# --- access patterns: 8-byte records gathered, boxes on four columns, a thread a row
@cuda.jit
def gather_rec8_idx(table, idx, out):
    """out[i] = table[j, 0] + 2·table[j, 1] for j = idx[i]: one 8-byte record of two float32 gathered a thread."""
    i = cuda.grid(1)
    if i < idx.shape[0]:
        j = idx[i]
        out[i] = table[j, 0] + float32(2) * table[j, 1]
@cuda.jit
def aabb_query_soa4(x0, y0, x1, y1, qx0, qy0, qx1, qy1, hit):
    """hit = 1 where the box [x0, x1] × [y0, y1] (four float32 columns: 16 bytes a box) meets the query box, else 0:
    short-circuit compares, one byte stored."""
    i = cuda.grid(1)
    if i < x0.shape[0]:
        hit[i] = uint8(1) if (x0[i] <= qx1 and x1[i] >= qx0 and y0[i] <= qy1 and y1[i] >= qy0) else uint8(0)
@cuda.jit
def row_sum_thread_f32(x, out):
    """out[r] = Σ x[r, :] for a (rows, 64) float32 matrix, a thread a row: a warp's 32 loads a step lie 256 bytes
    apart, and each thread walks its own row."""
    r = cuda.grid(1)
    rows, w = x.shape
    if r < rows:
        acc = float32(0)
        for k in range(w):
            acc += x[r, k]
        out[r] = acc


# --- shared memory: a haloed tile, a 32-wide matrix staged at two strides, a histogram, a block scan
LP = 16  # tile side; blocks of 16 × 16
LP_H = LP + 2
@cuda.jit
def laplacian5_tile_halo(src, dst):
    """dst = 4·centre - (up + down + left + right) for a float32 image (zero outside) through an 18 × 18 shared tile:
    every thread loads its centre, the tile's edge threads the one-cell halo beyond it."""
    tile = cuda.shared.array((LP_H, LP_H), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    c, r = cuda.grid(2)
    rows, cols = src.shape
    inr = r < rows
    tile[ty + 1, tx + 1] = src[r, c] if inr and c < cols else float32(0)
    if tx == 0:
        tile[ty + 1, 0] = src[r, c - 1] if inr and 0 < c <= cols else float32(0)
    if tx == LP - 1:
        tile[ty + 1, LP + 1] = src[r, c + 1] if inr and c + 1 < cols else float32(0)
    if ty == 0:
        tile[0, tx + 1] = src[r - 1, c] if c < cols and 0 < r <= rows else float32(0)
    if ty == LP - 1:
        tile[LP + 1, tx + 1] = src[r + 1, c] if c < cols and r + 1 < rows else float32(0)
    cuda.syncthreads()
    if inr and c < cols:
        dst[r, c] = (float32(4) * tile[ty + 1, tx + 1] - tile[ty, tx + 1] - tile[ty + 2, tx + 1]
                     - tile[ty + 1, tx] - tile[ty + 1, tx + 2])
SK_T, SK_W = 256, 32  # threads (one a row), the matrix's width
SK_PAD = SK_W + 1
SK_N, SK_NP = SK_T * SK_W, SK_T * SK_PAD  # the staged floats, unpadded and padded
@cuda.jit
def skinny_matvec32_staged(x, w, out):
    """out = x·w for a (rows, 32) float32 x, a thread a row: the block's 256 rows staged coalesced in 32 KB of shared
    memory, then thread t reads its row at s[32t + k], all 32 lanes of a warp in one bank (32-way conflicts)."""
    s = cuda.shared.array(SK_N, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * SK_T
    rows = x.shape[0]
    for q in range(SK_W):
        f = q * SK_T + t
        r, k = base + f // SK_W, f % SK_W
        s[f] = x[r, k] if r < rows else float32(0)
    cuda.syncthreads()
    acc = float32(0)
    for k in range(SK_W):
        acc += s[t * SK_W + k] * w[k]
    if base + t < rows:
        out[base + t] = acc
@cuda.jit
def skinny_matvec32_padded(x, w, out):
    """The same product with the staged rows 33 words apart (33 KB): thread t reads s[33t + k], the lanes of a warp
    in 32 different banks."""
    s = cuda.shared.array(SK_NP, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * SK_T
    rows = x.shape[0]
    for q in range(SK_W):
        f = q * SK_T + t
        rl, k = f // SK_W, f % SK_W
        s[rl * SK_PAD + k] = x[base + rl, k] if base + rl < rows else float32(0)
    cuda.syncthreads()
    acc = float32(0)
    for k in range(SK_W):
        acc += s[t * SK_PAD + k] * w[k]
    if base + t < rows:
        out[base + t] = acc
HS_BINS, HS_SHIFT = 1024, 6  # the top 10 bits of a uint16
HS_BLOCKS, HS_T = 264, 64  # the fixed grid: two blocks of two warps an SM
@cuda.jit
def hist1024_u16_shared(x, hist):
    """hist[v >> 6] += 1 for uint16 v by a grid-stride loop on 264 blocks of 64: a shared int32 histogram of 1024
    bins a block, then one global atomic a non-empty bin."""
    h = cuda.shared.array(HS_BINS, int32)
    t = cuda.threadIdx.x
    for k in range(t, HS_BINS, HS_T):
        h[k] = 0
    cuda.syncthreads()
    for j in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(h, int32(x[j]) >> HS_SHIFT, 1)
    cuda.syncthreads()
    for k in range(t, HS_BINS, HS_T):
        c = h[k]
        if c != 0:
            cuda.atomic.add(hist, k, c)
SB_T = 1024  # threads a block: 32 warps
@cuda.jit
def scan_block_warps_i32(x, out, sums):
    """out = the inclusive scan of x within each block's 1024 int32 elements, sums = each block's total: a warp scan
    by five shfl_up_sync steps, the 32 warp totals scanned by warp 0 in shared memory, added back."""
    tot = cuda.shared.array(32, int64)
    t = cuda.threadIdx.x
    lane, wp = t % 32, t // 32
    i = cuda.grid(1)
    v = int64(x[i]) if i < x.shape[0] else int64(0)
    for d in (1, 2, 4, 8, 16):
        o = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += o
    if lane == 31:
        tot[wp] = v
    cuda.syncthreads()
    if wp == 0:
        s = tot[lane]
        for d in (1, 2, 4, 8, 16):
            o = cuda.shfl_up_sync(FULL_MASK, s, d)
            if lane >= d:
                s += o
        tot[lane] = s
    cuda.syncthreads()
    if wp > 0:
        v += tot[wp - 1]
    if i < x.shape[0]:
        out[i] = int32(v)
    if t == SB_T - 1:
        sums[cuda.blockIdx.x] = int32(v)


# --- transpose: an unpadded float32 tile, a padded uint64 one
TT = 32  # tile side; blocks of 32 × 8, four rows each
@cuda.jit
def transpose_tile32_nopad(src, dst):
    """dst = srcᵀ in float32 through a 32 × 32 shared tile without padding: the reads down the tile's columns put all
    32 lanes of a warp in one bank."""
    tile = cuda.shared.array((TT, TT), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape
    c0, r0 = cuda.blockIdx.x * TT, cuda.blockIdx.y * TT
    for k in range(0, TT, 8):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            tile[ty + k, tx] = src[r, c]
    cuda.syncthreads()
    for k in range(0, TT, 8):
        r, c = c0 + ty + k, r0 + tx
        if r < cols and c < rows:
            dst[r, c] = tile[tx, ty + k]
TT_PAD = TT + 1
@cuda.jit
def transpose_u64_pad1(src, dst):
    """dst = srcᵀ for uint64 through a 32 × 33 shared tile (8.4 KB): 256-byte loads and stores a warp, the tile
    padded by one 8-byte word a row."""
    tile = cuda.shared.array((TT, TT_PAD), uint64)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape
    c0, r0 = cuda.blockIdx.x * TT, cuda.blockIdx.y * TT
    for k in range(0, TT, 8):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            tile[ty + k, tx] = src[r, c]
    cuda.syncthreads()
    for k in range(0, TT, 8):
        r, c = c0 + ty + k, r0 + tx
        if r < cols and c < rows:
            dst[r, c] = tile[tx, ty + k]


# --- latency and occupancy: digits in a local array, 32 blocks, a series until its terms are small
UT_D = 10  # the most decimal digits of a uint32
@cuda.jit
def utoa_decimal_local(x, digits, length):
    """digits[i] = the ASCII decimal digits of uint32 x[i], most significant first, zero bytes after; length = how
    many: the digits made least significant first into a 10-byte local array, read back from a moving index."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        buf = cuda.local.array(UT_D, uint8)
        v = int64(x[i])
        k = 0
        while True:
            buf[k] = uint8(48 + v % 10)
            v //= 10
            k += 1
            if v == 0:
                break
        for j in range(UT_D):
            digits[i, j] = buf[k - 1 - j] if j < k else uint8(0)
        length[i] = uint8(k)
DT_BLOCKS, DT_T = 32, 256  # the fixed grid: a quarter of the SMs
@cuda.jit
def dot_f64_32blocks(a, b, out):
    """out[0] += Σ a·b in float64 by a grid-stride loop on 32 blocks of 256 (most SMs idle): a tree in shared float64,
    one float64 atomic a block."""
    s = cuda.shared.array(DT_T, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for j in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        acc += a[j] * b[j]
    s[t] = acc
    cuda.syncthreads()
    d = DT_T // 2
    while d > 0:
        if t < d:
            s[t] += s[t + d]
        cuda.syncthreads()
        d //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])
ET_EPS, ET_MAX = 1e-17, 200
@cuda.jit
def exp_taylor_until_f64(x, out, terms):
    """out = Σ xᵏ/k! in float64 for x ≥ 0, adding terms (each the last times x / k, a float64 divide) while a term
    exceeds 10⁻¹⁷ of the sum; terms = how many were added: from 1 at x = 0 to about 80 at x = 24."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        s, term = 1.0, 1.0
        k = 0
        while k < ET_MAX and term > ET_EPS * s:
            k += 1
            term = term * v / float64(k)
            s += term
        out[i] = s
        terms[i] = k


# --- reductions and atomics: a warp an atomic, scattered float64 adds, one shared word
# (retired: reduce_firstadd_partials stood here, a block tree that adds two elements as it loads them; it was
# profiled and scored with round 10 (run 20261204T015403Z-1c12f2), then taken out because it reads like a
# graded solution: see fresh10_plans.RETIRED.  These comment lines keep the kernels below it on their lines:
# compiler facts are keyed by file and line.)
#
#
#
#
#
#
#
#
#
#
#
#
#
#
#
#
@cuda.jit
def abs_dev_warp_atomic(x, c, out):
    """out[0] += Σ |x - c|: a float32 sum a warp by five shfl_down_sync steps, then lane 0's one float64 atomic on the
    single address."""
    i = cuda.grid(1)
    v = abs(x[i] - c) if i < x.shape[0] else float32(0)
    for d in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(FULL_MASK, v, d)
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(out, 0, float64(v))
@cuda.jit
def scatter_add_f64(idx, vals, out):
    """out[idx[i]] += vals[i] by a float64 atomic add at addresses from the data."""
    i = cuda.grid(1)
    if i < vals.shape[0]:
        cuda.atomic.add(out, idx[i], vals[i])
@cuda.jit
def count_eq_shared_counter(x, target, count):
    """count[0] += how many int32 x equal target: every matching thread's atomic on one shared word of its block,
    then one global atomic a block."""
    c = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        c[0] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.shape[0] and x[i] == target:
        cuda.atomic.add(c, 0, 1)
    cuda.syncthreads()
    if t == 0:
        cuda.atomic.add(count, 0, c[0])


# --- after a transfer: bits to bytes, float32 to bfloat16
@cuda.jit
def unpack_bits_u8(packed, bits):
    """bits[8i + k] = bit k of packed[i] (least significant first): a byte read, eight single-byte stores a thread
    side by side."""
    i = cuda.grid(1)
    if i < packed.shape[0]:
        b = int32(packed[i])
        for k in range(8):
            bits[8 * i + k] = uint8((b >> k) & 1)
BF_ABS, BF_INF, BF_QUIET = 0x7FFFFFFF, 0x7F800000, 0x40
@cuda.jit
def f32_to_bf16_rne(x, out):
    """out = the bfloat16 bits of the float32 whose bits are x (uint32), rounded to nearest even by adding 0x7FFF
    plus the kept low bit; a NaN keeps its sign and top bits and is made quiet."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = int64(x[i])
        if (u & BF_ABS) > BF_INF:
            out[i] = uint16((u >> 16) | BF_QUIET)
        else:
            out[i] = uint16((u + 0x7FFF + ((u >> 16) & 1)) >> 16)


# --- matmul: Aᵀx with x in shared memory, a float32 product on 8 × 8 tiles
GT_T = 256  # threads a block, rows of x staged a step
@cuda.jit
def gemv_t_xshared(a, x, y):
    """y = Aᵀ·x for a row-major (rows, cols) float32 A, a thread a column: 256 elements of x staged in shared memory
    a step, then a warp reads 32 adjacent columns of a row at a time (coalesced) and x by broadcast."""
    xs = cuda.shared.array(GT_T, float32)
    t = cuda.threadIdx.x
    col = cuda.grid(1)
    rows, cols = a.shape
    acc = float32(0)
    for r0 in range(0, rows, GT_T):
        xs[t] = x[r0 + t] if r0 + t < rows else float32(0)
        cuda.syncthreads()
        if col < cols:
            for k in range(min(GT_T, rows - r0)):
                acc += a[r0 + k, col] * xs[k]
        cuda.syncthreads()
    if col < cols:
        y[col] = acc
SG = 8  # tile side; blocks of 8 × 8
@cuda.jit
def sgemm_tile8(a, b, c):
    """c = a·b in float32 with a (m, k) and b (k, n): 8 × 8 tiles of each in shared memory a step (256 bytes each),
    8 multiply-adds a thread between two barriers."""
    sa = cuda.shared.array((SG, SG), float32)
    sb = cuda.shared.array((SG, SG), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    m, k = a.shape
    n = b.shape[1]
    acc = float32(0)
    for k0 in range(0, k, SG):
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k else float32(0)
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < k and col < n else float32(0)
        cuda.syncthreads()
        for q in range(SG):
            acc += sa[ty, q] * sb[q, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


# --- special functions: a float64 cube root
CB_STEPS = 3
@cuda.jit
def cbrt_newton_f64(x, out):
    """out = ∛x in float64: a float32 guess exp(log|x| / 3), then three Newton steps y ← (2y + |x| / y²) / 3 (two
    float64 divides each), the sign put back."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        a = abs(v)
        y = 0.0
        if a > 0.0:
            y = float64(math.exp(math.log(float32(a)) / float32(3)))
            for _ in range(CB_STEPS):
                y = (2.0 * y + a / (y * y)) / 3.0
        out[i] = y if v >= 0.0 else -y
