"""Round 4 of fresh kernels, written apart from the chapters and rounds 2–3, to judge a time predictor on unseen code.

A float64 softplus, 16-bit gains, int8 dequantisation, float16 rounding by bits, box IoU on 16-byte records, an
embedding gather, a 3-D downsample, a pixel shuffle, four-way divergence, warp argmins and ballot searches, 32-wide
segment scans with and without padding, a Sobel tile, weighted and warp-aggregated histograms, an in-place transpose, a
3 × 3 median in a local array, 16-byte loads, one- and eight-block launches, a log-sum-exp, a one-pass chained scan,
first-index atomics, a ragged pack, register-blocked, split-K, rank-8 and Gram products, Kepler's equation in float64.
``cases(scale)``: one :class:`~course.kernels.cases.Case` per launch (``fresh4_<what>``, tagged ``chNN``, ``fresh4``)
at H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``); each :class:`Plan` declares its arrays' bytes
without building them.

This module holds the kernels only.  Their launches — each case's plan (grid, block, arrays, NumPy answer, bytes),
the sizes, the ``SPECS`` table, ``plan``/``case``/``cases`` and ``RETIRED`` — live in
:mod:`course.kernels.fresh4_plans` (the two made one module of more than 700 lines).  The split left every kernel on
the line it had when the round was predicted (``data/explain_predictions_fresh4.json``, commit 42b0f45) and profiled:
the compiler facts in ``data/compiler_facts.json`` are keyed by file and line, so an edit above a kernel would
orphan them.  Keep it so: add to the end of the file, never above a kernel.  ``tests/test_fresh4_cases.py`` checks
every case on the CPU engine on two seeds and at awkward shapes, that each check can fail, that the gpu-size launches
keep the small ones' rule within the byte limits, and that ptxas compiles every kernel.  Their author ran them once
on the H200 before the prediction, for correctness and the 20 µs–5 ms range only, and kept no time.
"""

from __future__ import annotations

import math

import course  # noqa: F401  (chooses the backend before numba is imported)
from course.kernels.vector import gload4, gstore4
from numba import cuda, float32, float64, int32, int64

FULL_MASK = 0xFFFFFFFF
H200_SMS = 132
INT32_MAX = 2147483647

# --- elementwise: float64, 16-bit pixels, divergence
@cuda.jit
def softplus_sigmoid_f64(x, sp, sig):
    """Softplus log(1 + e^x) and its derivative, the sigmoid, in float64 and stable for any x: from one exp(-|x|),
    sp = max(x, 0) + log1p(e) and sig = 1 / (1 + e) or e / (1 + e) by the sign of x (one exp, one log1p, one divide)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        e = math.exp(-abs(v))
        inv = 1.0 / (1.0 + e)
        sp[i] = math.log1p(e) + (v if v > 0.0 else 0.0)
        sig[i] = inv if v >= 0.0 else e * inv
@cuda.jit
def u16_row_gain(img, gain, out, offset):
    """A 16-bit image times a per-row gain in 8.8 fixed point, plus an offset, clamped to 0–65535 (128 × 2 blocks)."""
    c, r = cuda.grid(2)
    if r < img.shape[0] and c < img.shape[1]:
        v = ((int32(img[r, c]) * int32(gain[r]) + 128) >> 8) + offset
        out[r, c] = min(max(v, 0), 65535)
@cuda.jit
def piecewise_by_class(x, cls, out):
    """One of four formulas per element, chosen by its class byte (0–3): a warp runs every path one of its lanes takes,
    one after another (random classes: up to four; classes constant per warp: one)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v, k = x[i], cls[i]
        if k == 0:
            r = v * v * v - v
        elif k == 1:
            r = math.exp(-v)
        elif k == 2:
            r = math.sqrt(abs(v) + float32(1.0))
        else:
            r = float32(2.0) * math.sin(v)
        out[i] = r

# --- warps: a warp per row
@cuda.jit
def warp_row_argmin(a, val, idx):
    """Each row's minimum and its first column, one warp per row (blocks of 128: four rows): lanes keep a (value,
    column) pair, then five xor-shuffle rounds keep the smaller value, the smaller column on a tie."""
    r, lane = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // 32, cuda.threadIdx.x % 32
    best, where = float32(math.inf), int32(INT32_MAX)
    if r < a.shape[0]:
        for c in range(lane, a.shape[1], 32):
            v = a[r, c]
            if v < best:
                best, where = v, int32(c)
    for m in (16, 8, 4, 2, 1):
        ov = cuda.shfl_xor_sync(FULL_MASK, best, m)
        oi = cuda.shfl_xor_sync(FULL_MASK, where, m)
        if ov < best or (ov == best and oi < where):
            best, where = ov, oi
    if lane == 0 and r < a.shape[0]:
        val[r], idx[r] = best, where
@cuda.jit
def ballot_first_match(a, target, first):
    """The first column of each int16 row equal to ``target`` (-1 if none), a block of one warp per row: the warp tests
    32 columns at a time, a ballot says which matched, and the whole warp stops at the first hit (ffs)."""
    r, lane = cuda.blockIdx.x, cuda.threadIdx.x
    cols = a.shape[1]
    found = -1
    for c0 in range(0, cols, 32):
        c = c0 + lane
        hits = cuda.ballot_sync(FULL_MASK, c < cols and a[r, c] == target)
        if hits != 0:
            found = c0 + cuda.ffs(hits) - 1
            break
    if lane == 0:
        first[r] = found

# --- conversions and access patterns
DQ_GROUP = 128
@cuda.jit
def dequant_int8(q, scale, out):
    """int8 weights to float32 with one scale per group of 128 (q · scale[i // 128]): 1-byte loads, a shared scale."""
    i = cuda.grid(1)
    if i < q.shape[0]:
        out[i] = float32(q[i]) * scale[i // DQ_GROUP]
@cuda.jit
def float_to_half_bits(bits, out):
    """float32 (its uint32 bits) to float16 bits by integer arithmetic, rounding to nearest even: overflow gives ±inf,
    results below the smallest normal half flush to ±0 (the input holds no NaN)."""
    i = cuda.grid(1)
    if i < bits.shape[0]:
        b = int64(bits[i])
        sign = (b >> 16) & 0x8000
        e = ((b >> 23) & 255) - 112  # the half's exponent field: a bias of 15 instead of 127
        m = b & 0x7FFFFF
        if e <= 0:
            h = sign
        elif e >= 31:
            h = sign | 0x7C00
        else:
            h = sign | (e << 10) | (m >> 13)
            rest = m & 0x1FFF
            if rest > 0x1000 or (rest == 0x1000 and (h & 1) == 1):
                h += 1  # a carry out of the mantissa raises the exponent, and 65520 and above become inf
        out[i] = h
@cuda.jit
def box_iou(a, b, iou):
    """Intersection over union of box pairs stored as 16-byte records (x0, y0, x1, y1): eight strided loads a pair."""
    i = cuda.grid(1)
    if i < iou.shape[0]:
        ax0, ay0, ax1, ay1 = a[i, 0], a[i, 1], a[i, 2], a[i, 3]
        bx0, by0, bx1, by1 = b[i, 0], b[i, 1], b[i, 2], b[i, 3]
        w = max(min(ax1, bx1) - max(ax0, bx0), float32(0))
        h = max(min(ay1, by1) - max(ay0, by0), float32(0))
        inter = w * h
        union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
        iou[i] = inter / union
@cuda.jit
def embedding_rows(table, ids, out):
    """out[r, :] = table[ids[r], :]: rows of a table picked by index, a 32 × 8 block of (column, row) threads."""
    c, r = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = table[ids[r], c]
@cuda.jit
def downsample2_3d(src, dst):
    """The mean of each 2 × 2 × 2 cube of a volume (the last plane, row or column repeated at odd sizes): a 3-D grid of
    32 × 4 × 2 blocks, eight loads at stride 2 per output."""
    x, y, z = cuda.grid(3)
    nz, ny, nx = src.shape
    if z < dst.shape[0] and y < dst.shape[1] and x < dst.shape[2]:
        x0, y0, z0 = 2 * x, 2 * y, 2 * z
        x1, y1, z1 = min(x0 + 1, nx - 1), min(y0 + 1, ny - 1), min(z0 + 1, nz - 1)
        s = ((src[z0, y0, x0] + src[z0, y0, x1]) + (src[z0, y1, x0] + src[z0, y1, x1])
             + (src[z1, y0, x0] + src[z1, y0, x1]) + (src[z1, y1, x0] + src[z1, y1, x1]))
        dst[z, y, x] = s * float32(0.125)
@cuda.jit
def pixel_shuffle2(src, dst):
    """Depth to space by 2: dst[c, y, x] = src[4c + 2(y % 2) + x % 2, y // 2, x // 2], a thread per output on a 3-D grid
    of 64 × 4 × 1 blocks (x, y, channel): each warp reads half-rows of two input planes."""
    x, y, c = cuda.grid(3)
    if c < dst.shape[0] and y < dst.shape[1] and x < dst.shape[2]:
        dst[c, y, x] = src[4 * c + 2 * (y % 2) + x % 2, y // 2, x // 2]

# --- shared memory: bank conflicts, a stencil tile, float atomics
SEG_W, SEG_PAD, SEG_ROWS = 32, 33, 256  # a block: 256 runs of 32, one run per thread
@cuda.jit
def seg32_scan_unpadded(x, out):
    """Inclusive sums within each run of 32: a block stages 256 runs in a 256 × 32 shared tile (coalesced), then each
    thread walks its own run along a row, so the 32 lanes of a warp hit one bank: 32-way conflicts on purpose."""
    tile = cuda.shared.array((SEG_ROWS, SEG_W), float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * SEG_ROWS * SEG_W
    for k in range(SEG_W):
        j = k * SEG_ROWS + t
        tile[j // SEG_W, j % SEG_W] = x[base + j] if base + j < n else float32(0)
    cuda.syncthreads()
    acc = float32(0)
    for k in range(SEG_W):
        acc += tile[t, k]
        tile[t, k] = acc
    cuda.syncthreads()
    for k in range(SEG_W):
        j = k * SEG_ROWS + t
        if base + j < n:
            out[base + j] = tile[j // SEG_W, j % SEG_W]
@cuda.jit
def seg32_scan_padded(x, out):
    """The same scan with the tile padded to 256 × 33: a thread's run starts one bank further on, no conflicts."""
    tile = cuda.shared.array((SEG_ROWS, SEG_PAD), float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * SEG_ROWS * SEG_W
    for k in range(SEG_W):
        j = k * SEG_ROWS + t
        tile[j // SEG_W, j % SEG_W] = x[base + j] if base + j < n else float32(0)
    cuda.syncthreads()
    acc = float32(0)
    for k in range(SEG_W):
        acc += tile[t, k]
        tile[t, k] = acc
    cuda.syncthreads()
    for k in range(SEG_W):
        j = k * SEG_ROWS + t
        if base + j < n:
            out[base + j] = tile[j // SEG_W, j % SEG_W]
SB, ST = 16, 18  # the Sobel tile: 16 × 16 threads, an 18 × 18 tile with a one-pixel halo
@cuda.jit
def sobel_shared(src, dst):
    """The gradient magnitude sqrt(gx² + gy²) of the 3 × 3 Sobel filters (zero outside) from an 18 × 18 shared tile
    that the 16 × 16 block fills in two rounds."""
    tile = cuda.shared.array((ST, ST), float32)
    rows, cols = src.shape
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r0, c0 = cuda.blockIdx.y * SB - 1, cuda.blockIdx.x * SB - 1
    for k in range(ty * SB + tx, ST * ST, SB * SB):
        r, c = r0 + k // ST, c0 + k % ST
        tile[k // ST, k % ST] = src[r, c] if r >= 0 and r < rows and c >= 0 and c < cols else float32(0)
    cuda.syncthreads()
    r, c = r0 + 1 + ty, c0 + 1 + tx
    if r < rows and c < cols:
        gx = ((tile[ty, tx + 2] + float32(2) * tile[ty + 1, tx + 2] + tile[ty + 2, tx + 2])
              - (tile[ty, tx] + float32(2) * tile[ty + 1, tx] + tile[ty + 2, tx]))
        gy = ((tile[ty + 2, tx] + float32(2) * tile[ty + 2, tx + 1] + tile[ty + 2, tx + 2])
              - (tile[ty, tx] + float32(2) * tile[ty, tx + 1] + tile[ty, tx + 2]))
        dst[r, c] = math.sqrt(gx * gx + gy * gy)
WH_T, WH_BINS, WH_ITEMS = 512, 256, 16
@cuda.jit
def weighted_hist_shared(keys, w, bins):
    """bins[k] += w[i] for each byte key k = keys[i]: float atomics on 256 shared bins in a grid-stride loop (blocks of
    512, 16 keys per thread), then one global float atomic per bin and block."""
    h = cuda.shared.array(WH_BINS, float32)
    t = cuda.threadIdx.x
    if t < WH_BINS:
        h[t] = float32(0)
    cuda.syncthreads()
    for i in range(cuda.grid(1), keys.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(h, keys[i], w[i])
    cuda.syncthreads()
    if t < WH_BINS:
        cuda.atomic.add(bins, t, h[t])

# --- transpose
IT, IT_PAD, IT_ROWS = 32, 33, 8
@cuda.jit
def transpose_in_place(a):
    """A square matrix transposed in place: block (x, y) with x <= y swaps tiles (y, x) and (x, y) through two padded
    32 × 33 shared tiles (32 × 8 threads, four rows each); the blocks above the diagonal (x > y) return at once."""
    ta = cuda.shared.array((IT, IT_PAD), float32)
    tb = cuda.shared.array((IT, IT_PAD), float32)
    bx, by = cuda.blockIdx.x, cuda.blockIdx.y
    if bx > by:
        return
    n, tx, ty = a.shape[0], cuda.threadIdx.x, cuda.threadIdx.y
    for j in range(ty, IT, IT_ROWS):
        r, c = by * IT + j, bx * IT + tx
        if r < n and c < n:
            ta[j, tx] = a[r, c]  # tile (by, bx)
        r2, c2 = bx * IT + j, by * IT + tx
        if r2 < n and c2 < n:
            tb[j, tx] = a[r2, c2]  # tile (bx, by)
    cuda.syncthreads()
    for j in range(ty, IT, IT_ROWS):
        r, c = by * IT + j, bx * IT + tx
        if r < n and c < n:
            a[r, c] = tb[tx, j]
        r2, c2 = bx * IT + j, by * IT + tx
        if r2 < n and c2 < n:
            a[r2, c2] = ta[tx, j]

# --- occupancy and latency: local arrays, wide loads, small grids
@cuda.jit
def median3x3_local(src, dst):
    """The median of each 3 × 3 neighbourhood (edges repeated): nine values in a per-thread array, five rounds of a
    selection sort; every loop has a constant trip count, so the compiler can unroll them all and keep the array in
    registers (32 × 8 blocks)."""
    c, r = cuda.grid(2)
    rows, cols = src.shape
    if r < rows and c < cols:
        v = cuda.local.array(9, float32)
        for dr in range(3):
            rr = min(max(r + dr - 1, 0), rows - 1)
            for dc in range(3):
                v[3 * dr + dc] = src[rr, min(max(c + dc - 1, 0), cols - 1)]
        for k in range(5):
            for j in range(k + 1, 9):
                if v[j] < v[k]:
                    v[j], v[k] = v[k], v[j]
        dst[r, c] = v[4]
@cuda.jit
def sqdiff_vec4(a, b, out):
    """out = (a - b)² four elements per thread, in 16-byte loads and stores (gload4 / gstore4); n is a multiple of 4."""
    q = cuda.grid(1)
    if 4 * q < a.shape[0]:
        a0, a1, a2, a3 = gload4(a, (4 * q,))
        b0, b1, b2, b3 = gload4(b, (4 * q,))
        d0, d1, d2, d3 = a0 - b0, a1 - b1, a2 - b2, a3 - b3
        gstore4(out, (4 * q,), d0 * d0, d1 * d1, d2 * d2, d3 * d3)
MC_BLOCKS, MC_T = 8, 1024
@cuda.jit
def monte_carlo_hits(seeds, iters, hits):
    """Points of the unit square inside the quarter disc from ``iters`` pairs of xorshift32 draws per thread (16-bit
    coordinates, an exact integer test), a shuffle sum per warp and one atomic per warp: 8 blocks of 1024 threads."""
    i = cuda.grid(1)
    s = int64(seeds[i])
    k = 0
    for _ in range(iters):
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        px = s >> 16
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        py = s >> 16
        if px * px + py * py < 4294967296:
            k += 1
    for off in (16, 8, 4, 2, 1):
        k += cuda.shfl_down_sync(FULL_MASK, k, off)
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(hits, 0, k)
N1_T = 1024
@cuda.jit
def normalize_one_block(x, out):
    """out = x / ‖x‖ by one block of 1024 threads (grid (1,)): a strided sum of squares, shuffles and 32 shared slots
    for the total, then a second strided pass that scales; one block needs no second launch and no grid-wide sync."""
    ws = cuda.shared.array(32, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    s = float32(0)
    for i in range(t, n, N1_T):
        s += x[i] * x[i]
    for off in (16, 8, 4, 2, 1):
        s += cuda.shfl_xor_sync(FULL_MASK, s, off)
    if t % 32 == 0:
        ws[t // 32] = s
    cuda.syncthreads()
    if t < 32:
        s = ws[t]
        for off in (16, 8, 4, 2, 1):
            s += cuda.shfl_xor_sync(FULL_MASK, s, off)
        if t == 0:
            ws[0] = float32(1) / math.sqrt(s)
    cuda.syncthreads()
    inv = ws[0]
    for i in range(t, n, N1_T):
        out[i] = x[i] * inv

# --- reductions, scans and atomics
LSE_T = 1024
@cuda.jit
def logsumexp_1024(x, out):
    """log Σ exp over each run of 1024 values, a block of 1024 threads per run: the maximum by xor shuffles and 32
    shared slots (every warp finishes it), then Σ exp(x - max) the same way; out[b] = max + log(sum)."""
    ws = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * LSE_T + t
    v = x[i] if i < x.shape[0] else float32(-math.inf)
    m = v
    for off in (16, 8, 4, 2, 1):
        m = max(m, cuda.shfl_xor_sync(FULL_MASK, m, off))
    if t % 32 == 0:
        ws[t // 32] = m
    cuda.syncthreads()
    m = ws[t % 32]
    for off in (16, 8, 4, 2, 1):
        m = max(m, cuda.shfl_xor_sync(FULL_MASK, m, off))
    cuda.syncthreads()  # every warp has read the maxima: the slots take the sums
    e = math.exp(v - m)
    for off in (16, 8, 4, 2, 1):
        e += cuda.shfl_xor_sync(FULL_MASK, e, off)
    if t % 32 == 0:
        ws[t // 32] = e
    cuda.syncthreads()
    if t < 32:
        e = ws[t]
        for off in (16, 8, 4, 2, 1):
            e += cuda.shfl_xor_sync(FULL_MASK, e, off)
        if t == 0:
            out[cuda.blockIdx.x] = m + math.log(e)
CS_T, CS_ITEMS, CS_WARPS = 256, 16, 8  # 4096 elements per block: 16 rounds of 256
@cuda.jit
def scan_chained(x, out, ticket, flag, carry):
    """An inclusive int32 scan of the whole array in one pass. A block takes a ticket k (an atomic counter, so that it
    waits only on blocks already running), scans its 4096 elements in 16 rounds of a shuffle scan held in registers,
    waits for block k-1's flag, publishes its own running total and flag, then adds the total before it. The last
    block resets the ticket and each block the flag it read: the arrays are ready for the next launch."""
    ws = cuda.shared.array(CS_WARPS, int32)
    info = cuda.shared.array(2, int32)
    vals = cuda.local.array(CS_ITEMS, int32)
    t, lane, w = cuda.threadIdx.x, cuda.threadIdx.x % 32, cuda.threadIdx.x // 32
    if t == 0:
        info[0] = cuda.atomic.add(ticket, 0, 1)
    cuda.syncthreads()
    k, n = info[0], x.shape[0]
    base = k * CS_T * CS_ITEMS
    run = int32(0)
    for r in range(CS_ITEMS):
        j = base + r * CS_T + t
        v = x[j] if j < n else int32(0)
        for d in (1, 2, 4, 8, 16):
            u = cuda.shfl_up_sync(FULL_MASK, v, d)
            if lane >= d:
                v = int32(v + u)
        if lane == 31:
            ws[w] = v
        cuda.syncthreads()
        if w == 0:
            s = ws[lane] if lane < CS_WARPS else int32(0)
            for d in (1, 2, 4):
                u = cuda.shfl_up_sync(FULL_MASK, s, d)
                if lane >= d:
                    s = int32(s + u)
            if lane < CS_WARPS:
                ws[lane] = s
        cuda.syncthreads()
        if w > 0:
            v = int32(v + ws[w - 1])
        vals[r] = run + v
        run = int32(run + ws[CS_WARPS - 1])
        cuda.syncthreads()
    if t == 0:
        before = int32(0)
        if k > 0:
            while cuda.atomic.add(flag, k - 1, 0) == 0:
                pass
            before = cuda.atomic.add(carry, k - 1, 0)
            cuda.atomic.exch(flag, k - 1, 0)
        if k + 1 < cuda.gridDim.x:
            cuda.atomic.exch(carry, k, before + run)
            cuda.threadfence()
            cuda.atomic.exch(flag, k, 1)
        else:
            cuda.atomic.exch(ticket, 0, 0)
        info[1] = before
    cuda.syncthreads()
    before = info[1]
    for r in range(CS_ITEMS):
        j = base + r * CS_T + t
        if j < n:
            out[j] = vals[r] + before
@cuda.jit
def hist_warp_aggregated(keys, bins):
    """A histogram of few, skewed keys straight in global memory: the lanes holding one key find each other
    (match_any), and the lowest of them adds the group's count with one atomic."""
    i = cuda.grid(1)
    k = keys[i] if i < keys.shape[0] else -1
    peers = cuda.match_any_sync(FULL_MASK, k)
    if k >= 0 and (peers & cuda.lanemask_lt()) == 0:
        cuda.atomic.add(bins, k, cuda.popc(peers))
@cuda.jit
def first_index_of_key(keys, first):
    """first[k] = the smallest i with keys[i] == k: a plain read first, an atomicMin only when it would lower the value
    (once the early blocks have run, most keys are settled and most threads skip the atomic)."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        k = keys[i]
        if i < first[k]:
            cuda.atomic.min(first, k, int32(i))

# --- host and device: a ragged staging copy
PK_T, PK_MAX = 256, 4096
@cuda.jit
def pack_segments(src, start, length, offset, dst):
    """Pack ragged segments (0–4096 floats each, anywhere in src) back to back into dst, a block of 256 per segment:
    the loop's trip count is the data's, as in a staging step before one large copy to the host."""
    s, t = cuda.blockIdx.x, cuda.threadIdx.x
    a, m, o = start[s], length[s], offset[s]
    for j in range(t, m, PK_T):
        dst[o + j] = src[a + j]

# --- matmul: register blocking, Gram matrices, thin and split products
RB, RB_K, RB_T = 64, 16, 16  # a 64 × 64 tile of c per block of 16 × 16 threads, 4 × 4 outputs each, k in steps of 16
@cuda.jit
def sgemm_reg4x4(a, b, c):
    """c = a·b: a block computes a 64 × 64 tile, each thread a 4 × 4 grid of it (rows ty + 16i, columns tx + 16j) in a
    local array that the unrolled loops keep in registers; 64 × 16 and 16 × 64 slices of a and b in shared memory."""
    sa = cuda.shared.array((RB, RB_K), float32)
    sb = cuda.shared.array((RB_K, RB), float32)
    acc = cuda.local.array((4, 4), float32)
    ra = cuda.local.array(4, float32)
    rb = cuda.local.array(4, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    m, n, kk = a.shape[0], b.shape[1], a.shape[1]
    row0, col0 = cuda.blockIdx.y * RB, cuda.blockIdx.x * RB
    tid = ty * RB_T + tx
    for i in range(4):
        for j in range(4):
            acc[i, j] = float32(0)
    for k0 in range(0, kk, RB_K):
        for q in range(4):  # 1024 elements of each slice, four per thread
            e = q * RB_T * RB_T + tid
            r, k = e // RB_K, e % RB_K
            sa[r, k] = a[row0 + r, k0 + k] if row0 + r < m and k0 + k < kk else float32(0)
            k2, c2 = e // RB, e % RB
            sb[k2, c2] = b[k0 + k2, col0 + c2] if k0 + k2 < kk and col0 + c2 < n else float32(0)
        cuda.syncthreads()
        for k in range(RB_K):
            for i in range(4):
                ra[i] = sa[ty + RB_T * i, k]
                rb[i] = sb[k, tx + RB_T * i]
            for i in range(4):
                for j in range(4):
                    acc[i, j] += ra[i] * rb[j]
        cuda.syncthreads()
    for i in range(4):
        for j in range(4):
            r, c2 = row0 + ty + RB_T * i, col0 + tx + RB_T * j
            if r < m and c2 < n:
                c[r, c2] = acc[i, j]
GR_D, GR_STEP, GR_CHUNK = 16, 32, 2048  # a 16 × 16 result, 32 rows staged per step, 2048 rows per block
@cuda.jit
def gram_f64(a, b, c):
    """c += aᵀ·b in float64 for tall a, b (n × 16): a 16 × 16 block keeps one output per thread over 2048 rows, 32 rows
    of a and b at a time in shared memory, then adds it to c with one float64 atomic per thread."""
    sa = cuda.shared.array((GR_STEP, GR_D), float64)
    sb = cuda.shared.array((GR_STEP, GR_D), float64)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n = a.shape[0]
    acc = float64(0)
    for r0 in range(cuda.blockIdx.x * GR_CHUNK, min(n, (cuda.blockIdx.x + 1) * GR_CHUNK), GR_STEP):
        for h in range(GR_STEP // GR_D):
            r = r0 + ty + GR_D * h
            sa[ty + GR_D * h, tx] = a[r, tx] if r < n else float64(0)
            sb[ty + GR_D * h, tx] = b[r, tx] if r < n else float64(0)
        cuda.syncthreads()
        for k in range(GR_STEP):
            acc += sa[k, ty] * sb[k, tx]
        cuda.syncthreads()
    cuda.atomic.add(c, (ty, tx), acc)
R8 = 8
@cuda.jit
def rank8_update(a, b, c):
    """c += a·b for a thin a (m × 8) and b (8 × n): a thread per element of c on 64 × 4 blocks, the eight products in a
    loop of constant trip count; c is read and written once, so memory sets the pace."""
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = c[row, col]
        for k in range(R8):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc
GV_WARPS, GV_KC = 8, 2048
@cuda.jit
def gemv_split_k(a, x, y):
    """y += a·x with the columns cut in chunks of 2048: block (i, j) gives each of its 8 warps a row and chunk j, lanes
    stride the chunk, a shuffle sum, one float atomic per warp into y (a grid of rows/8 × columns/2048 blocks)."""
    w, lane = cuda.threadIdx.x // 32, cuda.threadIdx.x % 32
    r = cuda.blockIdx.x * GV_WARPS + w
    c0 = cuda.blockIdx.y * GV_KC
    c1 = min(c0 + GV_KC, a.shape[1])
    s = float32(0)
    if r < a.shape[0]:
        for c in range(c0 + lane, c1, 32):
            s += a[r, c] * x[c]
    for off in (16, 8, 4, 2, 1):
        s += cuda.shfl_down_sync(FULL_MASK, s, off)
    if lane == 0 and r < a.shape[0]:
        cuda.atomic.add(y, r, s)

# --- float64, data-dependent loops
@cuda.jit
def kepler_newton(mean, ecc, out, tol, maxit):
    """The eccentric anomaly E of E - e·sin E = M by Newton's method in float64, until a step is below ``tol`` (at most
    ``maxit`` steps): more steps at high eccentricity, so the lanes of a warp stop at different times."""
    i = cuda.grid(1)
    if i < mean.shape[0]:
        m, e = mean[i], ecc[i]
        ea = m if e < 0.8 else math.pi
        for _ in range(maxit):
            d = (ea - e * math.sin(ea) - m) / (1.0 - e * math.cos(ea))
            ea -= d
            if abs(d) < tol:
                break
        out[i] = ea

