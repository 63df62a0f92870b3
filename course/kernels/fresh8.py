"""Round 8 of fresh kernels, written apart from the chapters and rounds 2–7, to judge a time predictor on unseen code.

A multiply-add of float32, int16 and float64 into float64, a clamped smoothstep, the transpose of 8 × 8 bit
matrices packed in uint64 words, alpha blending of RGBA8 pixels, a degree-31 polynomial whose coefficients a warp
broadcasts by shuffles, ranks and next-flag distances from ballots, an RMS norm of 128-wide rows a warp each,
linear interpolation in a table that fits the L2 and in one far larger, a decimating 16-tap FIR, a fixed-point
rotation of a uint8 image by gathers, a 9-point float64 Laplacian, a step of Conway's Life, centring of float64
rows through a shared tile 32 and 33 float64 wide, a Walsh–Hadamard transform of 1024 points in shared memory, a
counting sort of byte keys in shared memory, a k-means assignment to 64 shared centroids, tiled transposes of
16-byte RGBA float32 pixels and of int8, move-to-front decoding with a list in a local array, Rule 110 on rings in four
blocks, clipping in place on a fixed grid of 132 blocks, a little interpreter of opcodes that differ by lane or by
warp, arctan by a float64 continued fraction, Aᵀx of a COO matrix by float atomics, a count-min sketch of
saturating counters updated by compare-and-swap, float64 segment maxima by atomics on 16 and on 65536 addresses,
a linear layer with bias and ReLU on 16 × 16 tiles, haversine distances and a float64 Clenshaw sum of 32 Chebyshev
terms.  ``cases(scale)``: one :class:`~course.kernels.cases.Case` per launch (``fresh8_<what>``, tagged ``chNN``,
``fresh8``) at H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``); each :class:`Plan` declares its
arrays' bytes without building them.

This module holds the kernels only.  Their launches — each case's plan (grid, block, arrays, NumPy answer, bytes),
the sizes, the ``SPECS`` table, ``plan``/``case``/``cases`` and ``RETIRED`` — live in
:mod:`course.kernels.fresh8_plans`, as rounds 4's to 7's do.  Compiler facts are keyed by file and line, so add to
the end of the file, never above a kernel.  ``tests/test_fresh8_cases.py`` checks every case on the CPU engine on two
seeds and at awkward shapes, that each check can fail, that the gpu-size launches keep the small ones' rule within
the byte limits, and that ptxas compiles every kernel.  Their author ran nothing on a GPU: the gpu sizes were chosen
from the bytes each launch moves and the work it does, for a time between about 20 µs and 5 ms on an H200.
"""

from __future__ import annotations

import math

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, float64, int8, int32, int64, uint8

FULL_MASK = 0xFFFFFFFF


# --- elementwise: mixed widths, a clamp and a polynomial, 64-bit bit games, bytes
@cuda.jit
def fma_mixed_widths(a, b, c, out):
    """out = a·b + c with a float32, b int16, c and out float64: 22 bytes an element in four widths."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = float64(a[i]) * float64(b[i]) + c[i]
@cuda.jit
def smoothstep_clamp(x, out, e0, e1):
    """out = t²(3 - 2t) with t = (x - e0) / (e1 - e0) clamped to [0, 1], all in float32."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = (x[i] - e0) / (e1 - e0)
        t = min(max(t, float32(0)), float32(1))
        out[i] = t * t * (float32(3) - float32(2) * t)
BT_M1, BT_M2, BT_M3 = np.uint64(0x00AA00AA00AA00AA), np.uint64(0x0000CCCC0000CCCC), np.uint64(0x00000000F0F0F0F0)
BT_S1, BT_S2, BT_S3 = np.uint64(7), np.uint64(14), np.uint64(28)
@cuda.jit
def bitmat8_transpose(words, out):
    """Each uint64 holds an 8 × 8 bit matrix (byte r is row r, bit c of it column c); out holds its transpose: three
    rounds of a masked xor-swap of bits 7, 14 and 28 places apart (Hacker's Delight)."""
    i = cuda.grid(1)
    if i < words.shape[0]:
        x = words[i]
        t = (x ^ (x >> BT_S1)) & BT_M1
        x = x ^ t ^ (t << BT_S1)
        t = (x ^ (x >> BT_S2)) & BT_M2
        x = x ^ t ^ (t << BT_S2)
        t = (x ^ (x >> BT_S3)) & BT_M3
        x = x ^ t ^ (t << BT_S3)
        out[i] = x
@cuda.jit
def alpha_blend_rgba8(src, dst, out):
    """src over dst for (n, 4) uint8 RGBA pixels: colour = (s·a + d·(255 - a) + 127) // 255, alpha = a + d_a·(255 -
    a) // 255, in int32; a thread a pixel, eight byte loads and four byte stores."""
    i = cuda.grid(1)
    if i < src.shape[0]:
        a = int32(src[i, 3])
        for ch in range(3):
            out[i, ch] = uint8((int32(src[i, ch]) * a + int32(dst[i, ch]) * (255 - a) + 127) // 255)
        out[i, 3] = uint8(a + int32(dst[i, 3]) * (255 - a) // 255)


# --- warps: broadcasts by shuffles, ballots, a warp per row
PB_DEG = 31
@cuda.jit
def poly31_shfl_bcast(coef, x, y):
    """Each warp's 32 consecutive coefficients make one polynomial of degree 31; every lane evaluates it at its own
    x by Horner, coefficient k fetched from lane k by shfl_sync (32 shuffles and 32 multiply-adds a lane)."""
    i = cuda.grid(1)
    n = x.shape[0]
    c = coef[i] if i < n else float32(0)
    v = x[i] if i < n else float32(0)
    acc = float32(0)
    for k in range(PB_DEG, -1, -1):
        acc = acc * v + cuda.shfl_sync(FULL_MASK, c, k)
    if i < n:
        y[i] = acc
@cuda.jit
def next_flag_ballot(flags, rank, dist):
    """Within each warp's 32 flags: rank = how many lanes below are flagged (popc of the ballot under lanemask_lt),
    dist = how many lanes up the next flagged one is (ffs of the ballot shifted past this lane; 0 when none)."""
    i = cuda.grid(1)
    n = flags.shape[0]
    lane = cuda.threadIdx.x % 32
    f = i < n and flags[i] != 0
    b = cuda.ballot_sync(FULL_MASK, f)
    below = cuda.popc(b & cuda.lanemask_lt())
    above = (int64(b) & FULL_MASK) >> (lane + 1)  # the ballot is an int32: keep its sign bit a plain bit
    if i < n:
        rank[i] = below
        dist[i] = cuda.ffs(above)
RM_W, RM_T = 128, 256  # row width, threads per block (8 rows)
RM_PER = RM_W // 32
@cuda.jit
def rmsnorm_warp128(x, g, y, eps):
    """y = x / sqrt(mean(x²) + eps) · g for rows of 128 float32, a warp per row: four coalesced loads a lane, an
    xor-shuffle butterfly for the sum of squares (every lane gets it), four stores."""
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if row < x.shape[0]:  # whole warps drop out together
        v = cuda.local.array(RM_PER, float32)
        ss = float32(0)
        for q in range(RM_PER):
            v[q] = x[row, lane + 32 * q]
            ss += v[q] * v[q]
        for d in (16, 8, 4, 2, 1):
            ss += cuda.shfl_xor_sync(FULL_MASK, ss, d)
        r = float32(1) / math.sqrt(ss / float32(RM_W) + eps)
        for q in range(RM_PER):
            c = lane + 32 * q
            y[row, c] = v[q] * r * g[c]


# --- access patterns: a data-dependent gather, overlapping strided reads, a rotated gather, 2-D stencils
@cuda.jit
def table_interp_f32(table, u, out):
    """out = the table linearly interpolated at u·(m - 1) for u in [0, 1): the position in float64 (u widened), two
    neighbouring loads at a random place in the table."""
    i = cuda.grid(1)
    m = table.shape[0]
    if i < u.shape[0]:
        pos = float64(u[i]) * (m - 1)
        j = min(int32(pos), m - 2)
        f = float32(pos - j)
        t0 = table[j]
        out[i] = t0 + f * (table[j + 1] - t0)
FD_TAPS, FD_STEP = 16, 4
@cuda.jit
def fir_decimate4(x, h, y):
    """y[i] = Σₖ h[k]·x[4i + k] over 16 taps (zero past the end): each lane reads 16 floats starting 16 bytes after
    its neighbour's, so a warp's loads overlap four times."""
    i = cuda.grid(1)
    n = x.shape[0]
    if i < y.shape[0]:
        acc = float32(0)
        base = FD_STEP * i
        for k in range(FD_TAPS):
            if base + k < n:
                acc += h[k] * x[base + k]
        y[i] = acc
@cuda.jit
def remap_rotate_u8(src, dst, cs, sn):
    """dst[r, c] = src at the rotation of (c, r) about the centre by the angle of (cs, sn) in 16.16 fixed point,
    rounded to the nearest pixel (0 outside): a gather of bytes along a tilted line a warp. 32 × 8 blocks."""
    c, r = cuda.grid(2)
    h, w = src.shape
    if r < h and c < w:
        cx, cy = w // 2, h // 2
        dx, dy = c - cx, r - cy
        sx = ((cs * dx - sn * dy + 32768) >> 16) + cx
        sy = ((sn * dx + cs * dy + 32768) >> 16) + cy
        v = uint8(0)
        if sx >= 0 and sx < w and sy >= 0 and sy < h:
            v = src[sy, sx]
        dst[r, c] = v
@cuda.jit
def stencil9_f64(u, out):
    """The 9-point Laplacian (4·edges + corners - 20·centre) / 6 of a float64 grid inside, a copy of u on its border:
    nine float64 loads a point from global memory. 32 × 8 blocks."""
    c, r = cuda.grid(2)
    h, w = u.shape
    if r < h and c < w:
        if r == 0 or c == 0 or r == h - 1 or c == w - 1:
            out[r, c] = u[r, c]
        else:
            edges = u[r - 1, c] + u[r + 1, c] + u[r, c - 1] + u[r, c + 1]
            corners = u[r - 1, c - 1] + u[r - 1, c + 1] + u[r + 1, c - 1] + u[r + 1, c + 1]
            out[r, c] = (4.0 * edges + corners - 20.0 * u[r, c]) / 6.0
@cuda.jit
def life_step_u8(cur, nxt):
    """One generation of Conway's Life on a uint8 grid of 0/1 (dead outside): eight neighbour loads, a count, the
    B3/S23 rule. 32 × 8 blocks."""
    c, r = cuda.grid(2)
    h, w = cur.shape
    if r < h and c < w:
        cnt = 0
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                yy, xx = r + dy, c + dx
                if (dy != 0 or dx != 0) and yy >= 0 and yy < h and xx >= 0 and xx < w:
                    cnt += int32(cur[yy, xx])
        alive = cur[r, c] != 0
        nxt[r, c] = uint8(1) if cnt == 3 or (alive and cnt == 2) else uint8(0)


# --- shared memory: a tile 32 and 33 float64 wide, butterflies, a counting sort, broadcast reads
CR_T, CR_W = 128, 32  # rows a block (a thread each), row width
@cuda.jit
def center_rows32_f64(x, y, mean):
    """y = x - its row mean for rows of 32 float64, 128 rows a block: the block stages its rows in a 128 × 32 shared
    tile (coalesced), thread t sums row t at tile[t, k] (a stride of 64 words: every lane in the same two banks),
    then the block writes y coalesced."""
    tile = cuda.shared.array((CR_T, CR_W), float64)
    mu = cuda.shared.array(CR_T, float64)
    t, rows = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * CR_T
    for q in range(CR_W):
        j = q * CR_T + t
        r = base + j // CR_W
        if r < rows:
            tile[j // CR_W, j % CR_W] = x[r, j % CR_W]
    cuda.syncthreads()
    s = 0.0
    if base + t < rows:
        for k in range(CR_W):
            s += tile[t, k]
        mean[base + t] = s / CR_W
    mu[t] = s / CR_W
    cuda.syncthreads()
    for q in range(CR_W):
        j = q * CR_T + t
        r = base + j // CR_W
        if r < rows:
            y[r, j % CR_W] = tile[j // CR_W, j % CR_W] - mu[j // CR_W]
CR_PAD = CR_W + 1
@cuda.jit
def center_rows33_f64(x, y, mean):
    """The same centring with the tile one float64 wider (128 × 33): row t starts 66 words after row t - 1, so a
    warp's lanes spread over the banks."""
    tile = cuda.shared.array((CR_T, CR_PAD), float64)
    mu = cuda.shared.array(CR_T, float64)
    t, rows = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * CR_T
    for q in range(CR_W):
        j = q * CR_T + t
        r = base + j // CR_W
        if r < rows:
            tile[j // CR_W, j % CR_W] = x[r, j % CR_W]
    cuda.syncthreads()
    s = 0.0
    if base + t < rows:
        for k in range(CR_W):
            s += tile[t, k]
        mean[base + t] = s / CR_W
    mu[t] = s / CR_W
    cuda.syncthreads()
    for q in range(CR_W):
        j = q * CR_T + t
        r = base + j // CR_W
        if r < rows:
            y[r, j % CR_W] = tile[j // CR_W, j % CR_W] - mu[j // CR_W]
WH_N, WH_T = 1024, 512  # points a transform (a block), threads (a butterfly each a stage)
@cuda.jit
def fwht1024_shared(x, out):
    """The unnormalised Walsh–Hadamard transform of each run of 1024 float32 (the tail padded with zeros): ten
    stages of butterflies (a + b, a - b) at strides 1 … 512 in shared memory, a barrier between stages."""
    s = cuda.shared.array(WH_N, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * WH_N
    for k in range(t, WH_N, WH_T):
        s[k] = x[base + k] if base + k < n else float32(0)
    cuda.syncthreads()
    h = 1
    while h < WH_N:
        j = (t // h) * 2 * h + t % h
        a, b = s[j], s[j + h]
        s[j], s[j + h] = a + b, a - b
        cuda.syncthreads()
        h *= 2
    for k in range(t, WH_N, WH_T):
        if base + k < n:
            out[base + k] = s[k]
CSU_T, CSU_PER = 256, 8  # threads (one a bin), keys a thread
CSU_N = CSU_T * CSU_PER
CSU_WARPS = CSU_T // 32
@cuda.jit
def counting_sort_u8_block(keys, out):
    """Each run of 2048 uint8 keys sorted: shared int32 atomics count the 256 values, a warp-shuffle scan and a scan
    of the 8 warp totals give each value's end, and each output place finds its value by an 8-step binary search of
    those ends (coalesced stores)."""
    cnt = cuda.shared.array(CSU_T, int32)
    ends = cuda.shared.array(CSU_T, int32)
    wsum = cuda.shared.array(CSU_WARPS, int32)
    t, n = cuda.threadIdx.x, keys.shape[0]
    lane, w = t % 32, t // 32
    base = cuda.blockIdx.x * CSU_N
    m = min(CSU_N, n - base)
    cnt[t] = 0
    cuda.syncthreads()
    for q in range(CSU_PER):
        j = q * CSU_T + t
        if j < m:
            cuda.atomic.add(cnt, int32(keys[base + j]), 1)
    cuda.syncthreads()
    v = cnt[t]
    d = 1
    while d < 32:
        o = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += o
        d *= 2
    if lane == 31:
        wsum[w] = v
    cuda.syncthreads()
    for q in range(w):
        v += wsum[q]
    ends[t] = v
    cuda.syncthreads()
    for q in range(CSU_PER):
        p = q * CSU_T + t
        if p < m:
            lo, hi = 0, CSU_T - 1  # the first value whose end lies past p
            while lo < hi:
                mid = (lo + hi) // 2
                if ends[mid] > p:
                    hi = mid
                else:
                    lo = mid + 1
            out[base + p] = uint8(lo)
KM_K, KM_D = 64, 4  # centroids, dimensions
@cuda.jit
def kmeans_assign64(pts, cent, label, dist):
    """Each 4-D point's nearest of 64 centroids (squared distance, the lowest index on ties): the block loads the
    centroids into shared memory (a thread a coordinate), then every thread walks them all — broadcast reads,
    eight flops and a compare a centroid."""
    sc = cuda.shared.array((KM_K, KM_D), float32)
    t = cuda.threadIdx.x
    if t < KM_K * KM_D:
        sc[t // KM_D, t % KM_D] = cent[t // KM_D, t % KM_D]
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < pts.shape[0]:
        p0, p1, p2, p3 = pts[i, 0], pts[i, 1], pts[i, 2], pts[i, 3]
        best, arg = float32(3.0e38), -1
        for k in range(KM_K):
            d0, d1, d2, d3 = p0 - sc[k, 0], p1 - sc[k, 1], p2 - sc[k, 2], p3 - sc[k, 3]
            d = d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3
            if d < best:
                best, arg = d, k
        label[i], dist[i] = arg, best


# --- transpose: 16-byte pixels, 1-byte elements through a 64-wide tile
TR = 32  # tile side for the RGBA transpose; blocks of 32 × 8, four rows each
TR_PAD = TR + 1
@cuda.jit
def transpose_rgba_tiled(src, dst):
    """dst[c, r, :] = src[r, c, :] for (rows, cols, 4) float32 pixels through a 32 × 33 × 4 shared tile (padded by
    one pixel, four words): four channel loads and four channel stores a pixel."""
    tile = cuda.shared.array((TR, TR_PAD, 4), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape[0], src.shape[1]
    c0, r0 = cuda.blockIdx.x * TR, cuda.blockIdx.y * TR
    for k in range(0, TR, 8):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            for ch in range(4):
                tile[ty + k, tx, ch] = src[r, c, ch]
    cuda.syncthreads()
    for k in range(0, TR, 8):
        r, c = c0 + ty + k, r0 + tx  # dst row = src column
        if r < cols and c < rows:
            for ch in range(4):
                dst[r, c, ch] = tile[tx, ty + k, ch]
T8, T8_Y = 64, 4  # tile side, block rows (blocks of 64 × 4, sixteen rows each)
T8_PAD = T8 + 1
@cuda.jit
def transpose_i8_tile64(src, dst):
    """dst = srcᵀ for int8 through a 64 × 65 shared tile: a warp loads and stores 32 bytes a row."""
    tile = cuda.shared.array((T8, T8_PAD), int8)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape
    c0, r0 = cuda.blockIdx.x * T8, cuda.blockIdx.y * T8
    for k in range(0, T8, T8_Y):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            tile[ty + k, tx] = src[r, c]
    cuda.syncthreads()
    for k in range(0, T8, T8_Y):
        r, c = c0 + ty + k, r0 + tx
        if r < cols and c < rows:
            dst[r, c] = tile[tx, ty + k]


# --- latency: a list in a local array, a few blocks for many generations, a fixed grid, opcodes, a chain of divides
MTF_SYMS = 16
@cuda.jit
def mtf_decode_local(idx, out):
    """Move-to-front decoding down each column of a (T, n) time-major uint8 stream of indices 0–15: each thread keeps
    its list of 16 symbols in a local array, reads the symbol at the index, shifts the ones before it up a place and
    puts it in front (indices that come from the data: local memory, loops as long as the index)."""
    i = cuda.grid(1)
    steps, n = idx.shape
    if i < n:
        mtf = cuda.local.array(MTF_SYMS, uint8)
        for k in range(MTF_SYMS):
            mtf[k] = k
        for s in range(steps):
            j = int32(idx[s, i])
            sym = mtf[j]
            for p in range(j, 0, -1):
                mtf[p] = mtf[p - 1]
            mtf[0] = sym
            out[s, i] = sym
RL_T, RL_MAX = 512, 16384  # threads a ring, longest ring
@cuda.jit
def rule110_rings(cells, gens):
    """gens generations of the Rule 110 automaton on each ring of uint8 cells (a row, one block each): the ring
    lives in two shared buffers used in turn, each thread updates cells t, t + 512, … and a barrier ends a step."""
    buf = cuda.shared.array((2, RL_MAX), uint8)
    t, b = cuda.threadIdx.x, cuda.blockIdx.x
    n = cells.shape[1]
    for j in range(t, n, RL_T):
        buf[0, j] = cells[b, j]
    cuda.syncthreads()
    for g in range(gens):
        src = g & 1
        for j in range(t, n, RL_T):
            left = int32(buf[src, j - 1 if j > 0 else n - 1])
            mid = int32(buf[src, j])
            right = int32(buf[src, j + 1 if j + 1 < n else 0])
            buf[1 - src, j] = uint8((110 >> (left * 4 + mid * 2 + right)) & 1)
        cuda.syncthreads()
    for j in range(t, n, RL_T):
        cells[b, j] = buf[gens & 1, j]
CC_BLOCKS, CC_T = 132, 128  # the fixed grid: one block of four warps an SM
@cuda.jit
def clip_count_gridstride(x, lo, hi, count):
    """x clipped to [lo, hi] in place by a grid-stride loop on 132 blocks of 128, count[0] += how many changed: a
    shuffle sum a warp and one int32 atomic a warp."""
    c = 0
    for j in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        v = x[j]
        if v < lo:
            x[j] = lo
            c += 1
        elif v > hi:
            x[j] = hi
            c += 1
    for d in (16, 8, 4, 2, 1):
        c += cuda.shfl_down_sync(FULL_MASK, c, d)
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(count, 0, c)
OP_STEPS = 8
@cuda.jit
def opcode_interp(x, ops, out):
    """Run a program of 8 opcodes (ops[s, i], 0–3) on each float32: 0: v/2 + 1/4, 1: sqrt(|v| + 1/4) - 1/2,
    2: sin 2v, 3: v²/2 - 1/2 (each keeps v in [-1, 1]). Opcodes that differ within a warp serialise the four
    branches; the same opcode across a warp does not."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        for s in range(OP_STEPS):
            op = ops[s, i]
            if op == 0:
                v = float32(0.5) * v + float32(0.25)
            elif op == 1:
                v = math.sqrt(abs(v) + float32(0.25)) - float32(0.5)
            elif op == 2:
                v = math.sin(float32(2) * v)
            else:
                v = float32(0.5) * v * v - float32(0.5)
        out[i] = v
CF_DEPTH = 24
@cuda.jit
def contfrac_atan_f64(x, y):
    """arctan x for |x| ≤ 1 by Gauss's continued fraction x / (1 + x²/(3 + 4x²/(5 + 9x²/(7 + …)))), 24 levels
    evaluated from the bottom: 24 dependent float64 divisions a thread."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        v2 = v * v
        f = 2.0 * CF_DEPTH + 1.0
        for k in range(CF_DEPTH, 0, -1):
            f = (2.0 * k - 1.0) + (k * k) * v2 / f
        y[i] = v / f


# --- atomics: scattered float adds, saturating counters by CAS, float64 maxima on few and many addresses
@cuda.jit
def coo_spmv_t_atomic(rows, cols, vals, x, y):
    """y += Aᵀ·x for A in COO form (entries sorted by row): entry e gathers x[rows[e]] (runs of one address) and adds
    vals[e]·x there to y[cols[e]] (a random address) by a float32 atomic."""
    e = cuda.grid(1)
    if e < vals.shape[0]:
        cuda.atomic.add(y, cols[e], vals[e] * x[rows[e]])
CM_ROWS, CM_SHIFT = 4, 16
CM_MULT = (0x2545F491, 0x6C8E9CF5, 0x1B873593, 0x5BD1E995)  # below 2³¹: key·mult < 2⁵⁵ in int64
@cuda.jit
def countmin_saturating_cas(keys, table, cap):
    """Insert keys (below 2²⁴, weight 1 + key % 4) into a count-min sketch of 4 rows of w int32 counters that stop at
    cap: each row's counter is bumped by a compare-and-swap loop, and left alone once it reached cap."""
    i = cuda.grid(1)
    w = table.shape[0] // CM_ROWS
    if i < keys.shape[0]:
        key = int64(keys[i])
        wt = int32(1 + (key & 3))
        for r in range(CM_ROWS):
            j = r * w + int32(((key * CM_MULT[r]) >> CM_SHIFT) & (w - 1))
            old = table[j]
            while old < cap:
                prev = cuda.atomic.cas(table, j, old, int32(min(old + wt, cap)))
                if prev == old:
                    break
                old = prev
@cuda.jit
def segmax_f64_atomic(seg, vals, out):
    """out[seg[i]] = max(out[seg[i]], vals[i]) in float64 by an atomic max (a compare-and-swap loop on the GPU)."""
    i = cuda.grid(1)
    if i < vals.shape[0]:
        cuda.atomic.max(out, seg[i], vals[i])


# --- matmul: a linear layer on tiles
LT = 16  # tile side; blocks of 16 × 16
LT_PAD = LT + 1
@cuda.jit
def linear_bias_relu16(x, w, b, y):
    """y = relu(x·wᵀ + b) with x (batch, k) and w (out, k), both read along k: 16 × 16 tiles of each in shared
    memory a step (w's tile 17 wide, read down a column), 16 multiply-adds a thread a step, the bias and ReLU
    before the store."""
    sx = cuda.shared.array((LT, LT), float32)
    sw = cuda.shared.array((LT, LT_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.blockIdx.x * LT + tx, cuda.blockIdx.y * LT + ty
    batch, k = x.shape
    nout = w.shape[0]
    wrow = cuda.blockIdx.x * LT + ty  # the output this thread loads for the tile
    acc = float32(0)
    for k0 in range(0, k, LT):
        kk = k0 + tx
        sx[ty, tx] = x[row, kk] if row < batch and kk < k else float32(0)
        sw[ty, tx] = w[wrow, kk] if wrow < nout and kk < k else float32(0)
        cuda.syncthreads()
        for q in range(LT):
            acc += sx[ty, q] * sw[tx, q]
        cuda.syncthreads()
    if row < batch and col < nout:
        y[row, col] = max(acc + b[col], float32(0))


# --- special functions: great-circle distances, a Chebyshev sum in float64
EARTH_KM = 6371.0
@cuda.jit
def haversine_f32(lat1, lon1, lat2, lon2, d):
    """The great-circle distance in km between two points given in radians: four sines, two cosines, a square root
    and an arcsine in float32."""
    i = cuda.grid(1)
    if i < d.shape[0]:
        p1, p2 = lat1[i], lat2[i]
        s1 = math.sin(float32(0.5) * (p2 - p1))
        s2 = math.sin(float32(0.5) * (lon2[i] - lon1[i]))
        a = s1 * s1 + math.cos(p1) * math.cos(p2) * s2 * s2
        d[i] = float32(2 * EARTH_KM) * math.asin(math.sqrt(min(a, float32(1))))
@cuda.jit
def clenshaw_cheb_f64(coef, x, y):
    """y = Σₖ coef[k]·Tₖ(x) over 32 Chebyshev terms by Clenshaw's recurrence b = 2x·b₁ - b₂ + cₖ in float64: 31
    dependent steps, the coefficients read from global memory (the same for every thread)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        b1, b2 = 0.0, 0.0
        for k in range(coef.shape[0] - 1, 0, -1):
            b0 = 2.0 * v * b1 - b2 + coef[k]
            b2 = b1
            b1 = b0
        y[i] = v * b1 - b2 + coef[0]
