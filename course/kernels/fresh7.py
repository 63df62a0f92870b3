"""Round 7 of fresh kernels, written apart from the chapters and rounds 2–6, to judge a time predictor on unseen code.

Polar to Cartesian coordinates, a murmur finalizer hashing uint32 keys twice, a linear interpolation streamed in
float32 and in float64, rejection sampling of lattice points in a disk, per-row vote flags, a warp median by
ballot radix selection, a segmented running maximum by shuffles, a complex multiply-accumulate stored interleaved
and planar, im2col of 3 × 3 patches, a Perona–Malik diffusion step, record norms staged in shared memory (records of
4 and of 5 floats), a merge of sorted runs by co-ranks, a tiled int16 transpose, a sum with a transposed matrix, a
33-wide sliding maximum, a dependent LCG walk, de Casteljau evaluation of degree-7 Bézier curves in a local array, a
min/max of float keys on a fixed grid of 64 blocks, segmented sums of sorted keys, an int64 sum of squares, sums of
8 classes, a Kahan dot product, a 4096-bin histogram of skewed and of uniform keys, delta decoding of chunks, XTEA
encryption, a planar complex GEMM with 16 × 16 tiles, a Kronecker-product matvec on 32 × 32 blocks, Giles' float32
erfinv and a float64 Lanczos log-gamma.  ``cases(scale)``: one :class:`~course.kernels.cases.Case` per launch
(``fresh7_<what>``, tagged ``chNN``, ``fresh7``) at H200 sizes (``"gpu"``) or awkward CPU-engine sizes
(``"small"``); each :class:`Plan` declares its arrays' bytes without building them.

This module holds the kernels only.  Their launches — each case's plan (grid, block, arrays, NumPy answer, bytes),
the sizes, the ``SPECS`` table, ``plan``/``case``/``cases`` and ``RETIRED`` — live in
:mod:`course.kernels.fresh7_plans`, as rounds 4's to 6's do.  Compiler facts are keyed by file and line, so add to
the end of the file, never above a kernel.  ``tests/test_fresh7_cases.py`` checks every case on the CPU engine on two
seeds and at awkward shapes, that each check can fail, that the gpu-size launches keep the small ones' rule within
the byte limits, and that ptxas compiles every kernel.  Their author ran nothing on a GPU: the gpu sizes were chosen
from the bytes each launch moves and the work it does, for a time between about 20 µs and 5 ms on an H200.
"""

from __future__ import annotations

import math

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, float64, int16, int32, int64, uint32

FULL_MASK = 0xFFFFFFFF
M32 = 0xFFFFFFFF
NEG_BIG = -3.0e38  # stands for minus infinity in float32 tiles


# --- elementwise: sin/cos, integer hashing, one triad in two widths
@cuda.jit
def polar_to_cart(r, th, x, y):
    """x = r·cos(θ), y = r·sin(θ): two float32 arrays in, two out."""
    i = cuda.grid(1)
    if i < r.shape[0]:
        a = th[i]
        x[i] = r[i] * math.cos(a)
        y[i] = r[i] * math.sin(a)
@cuda.jit(device=True)
def mul32(h, c):
    """(h·c) mod 2³² of two values below 2³² in int64, by 16-bit halves of c (no product reaches 2⁶³)."""
    lo = h * (c & 0xFFFF)
    hi = ((h * (c >> 16)) & 0xFFFF) << 16
    return (lo + hi) & M32
@cuda.jit(device=True)
def fmix32(h):
    h ^= h >> 16
    h = mul32(h, 0x85EBCA6B)
    h ^= h >> 13
    h = mul32(h, 0xC2B2AE35)
    h ^= h >> 16
    return h
@cuda.jit
def fmix32_pair(keys, out):
    """out[i] = fmix32(k), out[n + i] = fmix32(fmix32(k) + golden) for uint32 keys k: murmur3's finalizer, two
    multiplies by halves and three xor-shifts each."""
    i = cuda.grid(1)
    n = keys.shape[0]
    if i < n:
        h = fmix32(int64(keys[i]))
        out[i] = uint32(h)
        out[n + i] = uint32(fmix32((h + 0x9E3779B9) & M32))
@cuda.jit
def lerp_stream(a, b, out, t):
    """out = a + t·(b - a) in the arrays' own dtype (float32 or float64): two reads and a write per element."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        u = a[i]
        out[i] = u + t * (b[i] - u)


# --- warps: loops whose length differs by lane, votes, radix selection, segmented scans
RJ_ACCEPT = 16  # points each thread keeps
@cuda.jit
def rejection_disk(seeds, sums, tries):
    """Each thread draws lattice points (x, y) in [-32768, 32768)² from a xorshift32 stream until 16 fall inside
    the disk x² + y² < 2³⁰; it writes the sums of the kept x and y and how many draws it took (which varies by
    lane)."""
    i = cuda.grid(1)
    if i < seeds.shape[0]:
        s = int64(seeds[i]) | 1
        kept, n = 0, 0
        sx, sy = int64(0), int64(0)
        while kept < RJ_ACCEPT:
            s ^= (s << 13) & M32
            s ^= s >> 17
            s ^= (s << 5) & M32
            n += 1
            px, py = (s & 0xFFFF) - 32768, (s >> 16) - 32768
            if px * px + py * py < (1 << 30):
                sx += px
                sy += py
                kept += 1
        sums[0, i], sums[1, i], tries[i] = sx, sy, n
@cuda.jit
def row_flags_vote(x, flags):
    """A warp per row of 32 float32: bit 0 all finite (all_sync), bit 1 any negative (any_sync), bits 2.. how many
    are positive (popc of a ballot); lane 0 writes the word."""
    t = cuda.threadIdx.x
    row = cuda.blockIdx.x * (cuda.blockDim.x // 32) + t // 32
    if row < x.shape[0]:  # whole warps drop out together
        v = x[row, t % 32]
        fin = cuda.all_sync(FULL_MASK, abs(v) <= float32(3.0e38))
        neg = cuda.any_sync(FULL_MASK, v < float32(0))
        pos = cuda.popc(cuda.ballot_sync(FULL_MASK, v > float32(0)))
        if t % 32 == 0:
            flags[row] = (1 if fin else 0) | (2 if neg else 0) | (pos << 2)
MD_BITS, MD_PAD = 20, (1 << 20) - 1  # key bits, the tail's filler
@cuda.jit
def warp_median_radix(x, med):
    """The 16th smallest of each warp's 32 keys (0 ≤ key < 2²⁰, the tail padded with 2²⁰ - 1), selected MSB first:
    20 rounds of a ballot of the candidates' zero bits and a popc decide one bit of the answer each."""
    i = cuda.grid(1)
    n = x.shape[0]
    v = x[i] if i < n else int32(MD_PAD)
    cand = int64(FULL_MASK)
    k = 15
    pref = 0
    for b in range(MD_BITS - 1, -1, -1):
        zb = int64(cuda.ballot_sync(FULL_MASK, ((v >> b) & 1) == 0)) & cand
        c = cuda.popc(uint32(zb))
        if k < c:
            cand = zb
        else:
            k -= c
            cand = cand & ~zb
            pref |= 1 << b
    if cuda.threadIdx.x % 32 == 0 and i < n:
        med[i // 32] = pref
@cuda.jit
def warp_seg_max_shfl(x, head, out):
    """The running maximum of x within segments that start where head is 1 (and at each warp's first lane): five
    shfl_up rounds carry a value and a seen-a-head flag."""
    i = cuda.grid(1)
    lane, n = cuda.threadIdx.x % 32, x.shape[0]
    v = x[i] if i < n else float32(NEG_BIG)
    f = int32(head[i]) if i < n else int32(1)
    d = 1
    while d < 32:
        ov = cuda.shfl_up_sync(FULL_MASK, v, d)
        of = cuda.shfl_up_sync(FULL_MASK, f, d)
        if lane >= d and f == 0:
            v = max(v, ov)
            f = of
        d *= 2
    if i < n:
        out[i] = v


# --- access patterns: interleaved against planar, a patch gather, a nonlinear stencil
@cuda.jit
def complex_mac_interleaved(a, b, c):
    """c += a·b for complex numbers stored as (n, 2) float32 rows (re, im side by side)."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        ar, ai, br, bi = a[i, 0], a[i, 1], b[i, 0], b[i, 1]
        c[i, 0] += ar * br - ai * bi
        c[i, 1] += ar * bi + ai * br
@cuda.jit
def complex_mac_planar(ar, ai, br, bi, cr, ci):
    """The same c += a·b with real and imaginary parts in six separate float32 arrays."""
    i = cuda.grid(1)
    if i < ar.shape[0]:
        xr, xi, yr, yi = ar[i], ai[i], br[i], bi[i]
        cr[i] += xr * yr - xi * yi
        ci[i] += xr * yi + xi * yr
@cuda.jit
def im2col3x3(img, cols):
    """cols[3·dy + dx, r·w + c] = img[r + dy - 1, c + dx - 1] (zero outside): nine coalesced rows written from
    nine overlapping reads a pixel. 32 × 8 blocks."""
    c, r = cuda.grid(2)
    h, w = img.shape
    if r < h and c < w:
        p = r * w + c
        for dy in range(3):
            for dx in range(3):
                yy, xx = r + dy - 1, c + dx - 1
                v = float32(0)
                if yy >= 0 and yy < h and xx >= 0 and xx < w:
                    v = img[yy, xx]
                cols[3 * dy + dx, p] = v
@cuda.jit
def perona_malik_step(u, out, kinv2, dt):
    """One explicit Perona–Malik step: out = u + dt·Σ g(d)·d over the four neighbour differences d, with the
    conductance g(d) = exp(-d²·kinv2) (a neighbour outside the image gives d = 0). 32 × 8 blocks."""
    c, r = cuda.grid(2)
    h, w = u.shape
    if r < h and c < w:
        m = u[r, c]
        acc = float32(0)
        for q in range(4):
            rr = r + (1 if q == 0 else (-1 if q == 1 else 0))
            cc = c + (1 if q == 2 else (-1 if q == 3 else 0))
            if rr >= 0 and rr < h and cc >= 0 and cc < w:
                d = u[rr, cc] - m
                acc += math.exp(-d * d * kinv2) * d
        out[r, c] = m + dt * acc


# --- shared memory: records staged at strides 4 and 5, co-rank merging, a wide sliding window
RN_T, RN_MAXW = 128, 8  # threads per block, widest record
RN_WORDS = RN_T * RN_MAXW
@cuda.jit
def record_norms_staged(recs, out):
    """out[i] = |recs[i]| for records of w float32 (w = recs.shape[1] ≤ 8): the block copies its 128 records into
    shared memory word by word (coalesced), then thread t reads its record at s[t·w + k] — a stride of w words."""
    s = cuda.shared.array(RN_WORDS, float32)
    t, n, w = cuda.threadIdx.x, recs.shape[0], recs.shape[1]
    base = cuda.blockIdx.x * RN_T
    for q in range(w):
        j = q * RN_T + t
        g = base * w + j
        if g < n * w:
            s[j] = recs[g // w, g % w]
    cuda.syncthreads()
    i = base + t
    if i < n:
        acc = float32(0)
        for k in range(w):
            v = s[t * w + k]
            acc += v * v
        out[i] = math.sqrt(acc)
MR_RUN = 256  # each block merges two sorted runs of 256 (a thread per element of each)
@cuda.jit
def merge_runs_shared(x, out):
    """Merge the sorted runs x[512j : 512j + 256] and x[512j + 256 : 512j + 512] into out: both staged in shared
    memory, each element placed at its index plus its co-rank in the other run (a binary search of 8–9 steps;
    ties: the first run first). The tail is padded with a huge value."""
    sa = cuda.shared.array(MR_RUN, float32)
    sb = cuda.shared.array(MR_RUN, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * 2 * MR_RUN
    ia, ib = base + t, base + MR_RUN + t
    sa[t] = x[ia] if ia < n else float32(3.0e38)
    sb[t] = x[ib] if ib < n else float32(3.0e38)
    cuda.syncthreads()
    a, b = sa[t], sb[t]
    lo, hi = 0, MR_RUN  # elements of b's run below a
    while lo < hi:
        mid = (lo + hi) // 2
        if sb[mid] < a:
            lo = mid + 1
        else:
            hi = mid
    pa = base + t + lo
    lo, hi = 0, MR_RUN  # elements of a's run at or below b
    while lo < hi:
        mid = (lo + hi) // 2
        if sa[mid] <= b:
            lo = mid + 1
        else:
            hi = mid
    pb = base + t + lo
    if ia < n and pa < n:
        out[pa] = a
    if ib < n and pb < n:
        out[pb] = b
WM_T, WM_PER, WM_R = 256, 8, 16  # threads, outputs a thread, window radius
WM_TILE = WM_T * WM_PER + 2 * WM_R
@cuda.jit
def window_max33_shared(x, out):
    """out[i] = max(x[i - 16 .. i + 16]) (clipped at the ends): the block stages 2048 + 32 values in shared
    memory, then each thread makes 8 outputs of 33 shared reads each."""
    s = cuda.shared.array(WM_TILE, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * WM_T * WM_PER
    for j in range(t, WM_TILE, WM_T):
        g = base - WM_R + j
        s[j] = x[g] if g >= 0 and g < n else float32(NEG_BIG)
    cuda.syncthreads()
    for q in range(WM_PER):
        o = q * WM_T + t
        m = s[o]
        for k in range(1, 2 * WM_R + 1):
            m = max(m, s[o + k])
        if base + o < n:
            out[base + o] = m


# --- transpose: 2-byte elements through a tile, a transposed operand beside a straight one
TI = 32  # tile side; blocks of 32 × 8 threads, four rows each
TI_PAD = TI + 1
@cuda.jit
def transpose_i16_tiled(src, dst):
    """dst = srcᵀ for int16 through a 32 × 33 shared tile (two elements share a bank word)."""
    tile = cuda.shared.array((TI, TI_PAD), int16)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape
    c0, r0 = cuda.blockIdx.x * TI, cuda.blockIdx.y * TI
    for k in range(0, TI, 8):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            tile[ty + k, tx] = src[r, c]
    cuda.syncthreads()
    for k in range(0, TI, 8):
        r, c = c0 + ty + k, r0 + tx  # dst row = src column
        if r < cols and c < rows:
            dst[r, c] = tile[tx, ty + k]
@cuda.jit
def add_transposed_tiles(a, b, out):
    """out = a + bᵀ (b stored (cols, rows)): b's tile goes through a padded 32 × 33 shared tile, a is read
    straight, both coalesced."""
    tile = cuda.shared.array((TI, TI_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    c0, r0 = cuda.blockIdx.x * TI, cuda.blockIdx.y * TI
    for k in range(0, TI, 8):
        br, bc = c0 + ty + k, r0 + tx  # b[br, bc] lands at out[bc, br]
        if br < cols and bc < rows:
            tile[ty + k, tx] = b[br, bc]
    cuda.syncthreads()
    for k in range(0, TI, 8):
        r, c = r0 + ty + k, c0 + tx
        if r < rows and c < cols:
            out[r, c] = a[r, c] + tile[tx, ty + k]


# --- latency: a dependent integer chain, a local array, a fixed grid
@cuda.jit
def lcg_walk(seeds, out, steps):
    """steps dependent rounds of x = (1664525·x + 1013904223) mod 2³² followed by x ^= x >> 11, from each seed."""
    i = cuda.grid(1)
    if i < seeds.shape[0]:
        x = int64(seeds[i])
        for _ in range(steps):
            x = (x * 1664525 + 1013904223) & M32
            x ^= x >> 11
        out[i] = uint32(x)
BZ_DEG = 7
BZ_PTS = BZ_DEG + 1
@cuda.jit
def bezier7_decasteljau(ctrl, t, out):
    """A point of each degree-7 Bézier curve in 2-D (ctrl[d, k, i], k = 0..7) at t[i] by de Casteljau: the 8
    control values of a coordinate copied to a local array, then 28 in-place lerps."""
    i = cuda.grid(1)
    if i < t.shape[0]:
        p = cuda.local.array(BZ_PTS, float32)
        u = t[i]
        for d in range(2):
            for k in range(BZ_DEG + 1):
                p[k] = ctrl[d, k, i]
            for r in range(1, BZ_DEG + 1):
                for k in range(BZ_DEG + 1 - r):
                    p[k] = p[k] + u * (p[k + 1] - p[k])
            out[d, i] = p[0]
MM_BLOCKS, MM_T = 64, 256  # the fixed grid
@cuda.jit
def minmax_keys_gridstride(bits, mm):
    """The smallest and largest float32 (given as their int32 bits) as order-keeping int32 keys
    (b ^ ((b >> 31) & 0x7FFFFFFF)): a grid-stride loop of 64 blocks, xor-shuffle min and max, one atomic min and
    one atomic max a warp."""
    i = cuda.grid(1)
    stride = cuda.gridDim.x * cuda.blockDim.x
    lo, hi = int32(0x7FFFFFFF), int32(-0x80000000)
    for j in range(i, bits.shape[0], stride):
        b = bits[j]
        key = int32(b ^ ((b >> 31) & 0x7FFFFFFF))
        lo, hi = min(lo, key), max(hi, key)
    for d in (16, 8, 4, 2, 1):
        lo = min(lo, cuda.shfl_xor_sync(FULL_MASK, lo, d))
        hi = max(hi, cuda.shfl_xor_sync(FULL_MASK, hi, d))
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.min(mm, 0, lo)
        cuda.atomic.max(mm, 1, hi)


# --- reductions and atomics
@cuda.jit
def segsum_sorted_atomic(keys, vals, sums):
    """sums[k] += the values of key k, keys sorted: a segmented inclusive scan by shfl_up (a step adds only where
    the key d lanes back is the same), then the last lane of each run in a warp adds its total, one float atomic."""
    i = cuda.grid(1)
    lane, n = cuda.threadIdx.x % 32, keys.shape[0]
    k = keys[i] if i < n else int32(-1)
    v = vals[i] if i < n else float32(0)
    d = 1
    while d < 32:
        ov = cuda.shfl_up_sync(FULL_MASK, v, d)
        ok = cuda.shfl_up_sync(FULL_MASK, k, d)
        if lane >= d and ok == k:
            v += ov
        d *= 2
    nk = cuda.shfl_down_sync(FULL_MASK, k, 1)
    if i < n and (lane == 31 or nk != k):
        cuda.atomic.add(sums, k, v)
SQ_T = 512
SQ_WARPS = SQ_T // 32
@cuda.jit
def sumsq_i64_block(x, total):
    """total[0] += Σ x² of int16 values in int64: shfl_down sums in each warp, the 16 warp sums in shared memory
    added by warp 0, one 64-bit atomic a block of 512."""
    part = cuda.shared.array(SQ_WARPS, int64)
    i, t = cuda.grid(1), cuda.threadIdx.x
    v = int64(0)
    if i < x.shape[0]:
        v = int64(x[i])
        v = v * v
    for d in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(FULL_MASK, v, d)
    if t % 32 == 0:
        part[t // 32] = v
    cuda.syncthreads()
    if t < 32:
        v = part[t] if t < SQ_WARPS else int64(0)
        for d in (8, 4, 2, 1):
            v += cuda.shfl_down_sync(FULL_MASK, v, d)
        if t == 0:
            cuda.atomic.add(total, 0, v)
CS_T, CS_ITEMS, CS_K = 256, 4, 8  # threads, items a thread, classes
@cuda.jit
def class_sums8_shared(cls, val, sums, counts):
    """Per-class sums (float64) and counts of values labelled 0..7: shared float32 and int32 atomics on 8
    addresses for the block's 1024 items, then 16 global atomics a block."""
    ss = cuda.shared.array(CS_K, float32)
    sc = cuda.shared.array(CS_K, int32)
    t, n = cuda.threadIdx.x, cls.shape[0]
    if t < CS_K:
        ss[t], sc[t] = 0, 0
    cuda.syncthreads()
    base = cuda.blockIdx.x * CS_T * CS_ITEMS
    for q in range(CS_ITEMS):
        i = base + q * CS_T + t
        if i < n:
            k = cls[i]
            cuda.atomic.add(ss, k, val[i])
            cuda.atomic.add(sc, k, 1)
    cuda.syncthreads()
    if t < CS_K:
        cuda.atomic.add(sums, t, float64(ss[t]))
        cuda.atomic.add(counts, t, sc[t])
KD_T, KD_PER = 256, 32
KD_WARPS = KD_T // 32
@cuda.jit
def kahan_dot_f32(x, y, acc):
    """acc[0] += x·y: each thread keeps a compensated (Kahan) float32 sum of 32 products spaced a grid apart, the
    block adds the threads' sums in float64 (shuffles, then 8 warp sums in shared), one float64 atomic a block."""
    part = cuda.shared.array(KD_WARPS, float64)
    i, t = cuda.grid(1), cuda.threadIdx.x
    stride = cuda.gridDim.x * cuda.blockDim.x
    s, comp = float32(0), float32(0)
    for q in range(KD_PER):
        j = i + q * stride
        if j < x.shape[0]:
            yk = x[j] * y[j] - comp
            tk = s + yk
            comp = (tk - s) - yk
            s = tk
    v = float64(s)
    for d in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(FULL_MASK, v, d)
    if t % 32 == 0:
        part[t // 32] = v
    cuda.syncthreads()
    if t == 0:
        tot = float64(0)
        for w in range(KD_WARPS):
            tot += part[w]
        cuda.atomic.add(acc, 0, tot)
@cuda.jit
def hist4096_global(keys, bins):
    """bins[key] += 1 straight in global memory, 4096 bins, one atomic a key."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        cuda.atomic.add(bins, keys[i] & 4095, 1)


# --- host and device: a stream decoded chunk by chunk, a block cipher
DD_CHUNK, DD_T = 1024, 256  # deltas a chunk (a block), threads per block (four deltas each)
DD_PER = DD_CHUNK // DD_T
DD_WARPS = DD_T // 32
@cuda.jit
def delta_decode_chunks(deltas, bases, out):
    """out = bases[chunk] + the running sum of int16 deltas within each chunk of 1024: a thread sums its 4, a warp
    scan by shfl_up, the 8 warp totals scanned in shared memory, then 4 outputs a thread."""
    wsum = cuda.shared.array(DD_WARPS, int32)
    t, n = cuda.threadIdx.x, deltas.shape[0]
    lane, w = t % 32, t // 32
    c = cuda.blockIdx.x
    first = c * DD_CHUNK + t * DD_PER
    own = cuda.local.array(DD_PER, int32)
    tot = int32(0)
    for q in range(DD_PER):
        j = first + q
        own[q] = deltas[j] if j < n else int32(0)
        tot += own[q]
    inc = tot
    d = 1
    while d < 32:
        o = cuda.shfl_up_sync(FULL_MASK, inc, d)
        if lane >= d:
            inc += o
        d *= 2
    if lane == 31:
        wsum[w] = inc
    cuda.syncthreads()
    off = bases[c]
    for q in range(w):
        off += wsum[q]
    run = off + inc - tot
    for q in range(DD_PER):
        run += own[q]
        if first + q < n:
            out[first + q] = run
XT_ROUNDS, XT_DELTA = 32, 0x9E3779B9
@cuda.jit
def xtea_encrypt(v0s, v1s, key, o0, o1):
    """XTEA (32 cycles) of each 64-bit block (v0, v1) under a 128-bit key in four words: shifts, xors and adds mod
    2³² in int64, two key-word lookups a cycle."""
    i = cuda.grid(1)
    if i < v0s.shape[0]:
        v0, v1, s = int64(v0s[i]), int64(v1s[i]), int64(0)
        for _ in range(XT_ROUNDS):
            v0 = (v0 + ((((((v1 << 4) & M32) ^ (v1 >> 5)) + v1) ^ (s + key[s & 3])) & M32)) & M32
            s = (s + XT_DELTA) & M32
            v1 = (v1 + ((((((v0 << 4) & M32) ^ (v0 >> 5)) + v0) ^ (s + key[(s >> 11) & 3])) & M32)) & M32
        o0[i], o1[i] = uint32(v0), uint32(v1)


# --- matmul: complex tiles, a Kronecker product on one block
CG = 16  # tile side; blocks of 16 × 16
@cuda.jit
def cgemm16_planar(ar, ai, br, bi, cr, ci):
    """C = A·B for complex matrices held as real and imaginary float32 planes: four 16 × 16 shared tiles a step,
    four multiply-adds per k a thread."""
    sar = cuda.shared.array((CG, CG), float32)
    sai = cuda.shared.array((CG, CG), float32)
    sbr = cuda.shared.array((CG, CG), float32)
    sbi = cuda.shared.array((CG, CG), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.blockIdx.x * CG + tx, cuda.blockIdx.y * CG + ty
    m, k = ar.shape
    n = br.shape[1]
    accr, acci = float32(0), float32(0)
    for k0 in range(0, k, CG):
        ka, kb = k0 + tx, k0 + ty
        ok_a, ok_b = row < m and ka < k, kb < k and col < n
        sar[ty, tx] = ar[row, ka] if ok_a else float32(0)
        sai[ty, tx] = ai[row, ka] if ok_a else float32(0)
        sbr[ty, tx] = br[kb, col] if ok_b else float32(0)
        sbi[ty, tx] = bi[kb, col] if ok_b else float32(0)
        cuda.syncthreads()
        for q in range(CG):
            xr, xi, yr, yi = sar[ty, q], sai[ty, q], sbr[q, tx], sbi[q, tx]
            accr += xr * yr - xi * yi
            acci += xr * yi + xi * yr
        cuda.syncthreads()
    if row < m and col < n:
        cr[row, col], ci[row, col] = accr, acci
KR = 32
@cuda.jit
def kron32_matvec(x, a, b, y):
    """y[p] = B·X[p]·Aᵀ for each 32 × 32 block X[p], that is (A ⊗ B)·vec(X): a block of 32 × 32 threads stages Aᵀ,
    B and X in shared memory, forms T = X·Aᵀ, then B·T, 32 multiply-adds an element each."""
    sat = cuda.shared.array((KR, KR), float32)
    sb = cuda.shared.array((KR, KR), float32)
    sx = cuda.shared.array((KR, KR), float32)
    st = cuda.shared.array((KR, KR), float32)
    p, j, i = cuda.blockIdx.x, cuda.threadIdx.x, cuda.threadIdx.y
    sat[j, i] = a[i, j]
    sb[i, j] = b[i, j]
    sx[i, j] = x[p, i, j]
    cuda.syncthreads()
    acc = float32(0)
    for q in range(KR):
        acc += sx[i, q] * sat[q, j]
    st[i, j] = acc
    cuda.syncthreads()
    acc = float32(0)
    for q in range(KR):
        acc += sb[i, q] * st[q, j]
    y[p, i, j] = acc


# --- special functions
@cuda.jit
def erfinv_giles(x, y):
    """Giles' single-precision erfinv: w = -log((1 - x)(1 + x)), then one of two polynomials (9 terms in w - 2.5,
    or in sqrt(w) - 3 for the far tails), times x."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        w = -math.log((float32(1) - v) * (float32(1) + v))
        if w < float32(5):
            w = w - float32(2.5)
            p = float32(2.81022636e-08)
            p = float32(3.43273939e-07) + p * w
            p = float32(-3.5233877e-06) + p * w
            p = float32(-4.39150654e-06) + p * w
            p = float32(0.00021858087) + p * w
            p = float32(-0.00125372503) + p * w
            p = float32(-0.00417768164) + p * w
            p = float32(0.246640727) + p * w
            p = float32(1.50140941) + p * w
        else:
            w = math.sqrt(w) - float32(3)
            p = float32(-0.000200214257)
            p = float32(0.000100950558) + p * w
            p = float32(0.00134934322) + p * w
            p = float32(-0.00367342844) + p * w
            p = float32(0.00573950773) + p * w
            p = float32(-0.0076224613) + p * w
            p = float32(0.00943887047) + p * w
            p = float32(1.00167406) + p * w
            p = float32(2.83297682) + p * w
        y[i] = p * v
LZ_G = 7.0
LZ_C = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
        12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
@cuda.jit
def lgamma_lanczos_f64(x, y):
    """log Γ(x) in float64 for x > 0 by Lanczos (g = 7, nine terms: eight divisions), with the reflection
    log Γ(x) = log(π / sin πx) - log Γ(1 - x) below 1/2."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        refl = v < 0.5
        z = (1.0 - v if refl else v) - 1.0
        s = LZ_C[0]
        for k in range(1, 9):
            s += LZ_C[k] / (z + k)
        tt = z + LZ_G + 0.5
        lg = 0.5 * math.log(2.0 * math.pi) + (z + 0.5) * math.log(tt) - tt + math.log(s)
        if refl:
            lg = math.log(math.pi / math.sin(math.pi * v)) - lg
        y[i] = lg
