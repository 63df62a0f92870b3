"""Round 6 of fresh kernels, written apart from the chapters and rounds 2–5, to judge a time predictor on unseen code.

A float32 → uint8 quantizer, a xorshift stream writer, 3-D Morton codes (blocks of 64 and of 1024), run positions by
ballot and clz, a warp mode by match_any, Stein's binary gcd, a 16-pass ballot radix sort of 256 keys, an exponential
moving average of series held in columns and in rows, a bilinear warp in 16.16 fixed point, a 13-point wave step in
3-D, private nibble counters in shared memory (conflicting and spread layouts), a rank sort, a Hamming nearest
neighbour against a shared table, a 256-point FFT in shared memory, a separable 5 × 5 binomial blur, a 4 × 4 byte
transpose in registers, a conjugate transpose, binary searches in a small and a large table, a power iteration in
one block, a top-8 selection in a local array, one-word atomics from 4 and from 32 lanes of a warp, a joint
256 × 256 histogram, three norms in one pass, Welford row statistics merged by Chan's rule, CRC-32 of 256-byte
chunks, 12-bit sample unpacking, a 1-D register-tiled sgemm, batched 8 × 8 float64 products and a float32 Bessel J0.
``cases(scale)``: one :class:`~course.kernels.cases.Case` per launch (``fresh6_<what>``, tagged ``chNN``, ``fresh6``)
at H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``); each :class:`Plan` declares its arrays' bytes
without building them.

This module holds the kernels only.  Their launches — each case's plan (grid, block, arrays, NumPy answer, bytes),
the sizes, the ``SPECS`` table, ``plan``/``case``/``cases`` and ``RETIRED`` — live in
:mod:`course.kernels.fresh6_plans`, as rounds 4's and 5's do.  Compiler facts are keyed by file and line, so add to
the end of the file, never above a kernel.  ``tests/test_fresh6_cases.py`` checks every case on the CPU engine on two
seeds and at awkward shapes, that each check can fail, that the gpu-size launches keep the small ones' rule within
the byte limits, and that ptxas compiles every kernel.  Their author ran nothing on a GPU: the gpu sizes were chosen
from the bytes each launch moves and the work it does, for a time between about 20 µs and 5 ms on an H200.
"""

from __future__ import annotations

import math

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, float64, int32, int64, uint8, uint32

FULL_MASK = 0xFFFFFFFF


# --- elementwise: bytes out, a write-only stream, bit interleaving
@cuda.jit
def quantize_u8(x, q, scale, zero):
    """q = clamp(x·scale + zero, 0, 255) rounded half up, as uint8: 4 bytes read, 1 written per element."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = min(max(x[i] * scale + zero, float32(0)), float32(255))
        q[i] = uint8(int32(v + float32(0.5)))
@cuda.jit
def xorshift_fill(out, seed):
    """Eight xorshift32 draws per thread from a seed hashed from its index, written to out[k·n + i]: nothing read
    from memory, 32 bytes written a thread (eight coalesced stores)."""
    i = cuda.grid(1)
    n = out.shape[0] // 8
    if i < n:
        s = ((int64(i) * 0x9E3779B9 + seed) & 0xFFFFFFFF) | 1
        for k in range(8):
            s ^= (s << 13) & 0xFFFFFFFF
            s ^= s >> 17
            s ^= (s << 5) & 0xFFFFFFFF
            out[k * n + i] = uint32(s)
@cuda.jit
def morton3_u16(x, y, z, code):
    """The 30-bit Morton code of three 10-bit coordinates read as uint16: each spread to every third bit by four
    shift-or-mask rounds, then interleaved."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        c = int64(0)
        for axis in range(3):
            v = int64(x[i]) if axis == 0 else (int64(y[i]) if axis == 1 else int64(z[i]))
            v = (v | (v << 16)) & 0x030000FF
            v = (v | (v << 8)) & 0x0300F00F
            v = (v | (v << 4)) & 0x030C30C3
            v = (v | (v << 2)) & 0x09249249
            c |= v << axis
        code[i] = uint32(c)


# --- warps: ballots, matches, divergent loops
@cuda.jit
def run_pos_ballot(x, pos):
    """pos[i] = how far i is from the start of its run of equal values within its warp: the left neighbour by a
    shuffle, a ballot of the run heads, the highest head at or below the lane by clz."""
    i = cuda.grid(1)
    lane, n = cuda.threadIdx.x % 32, x.shape[0]
    v = x[i] if i < n else int32(-1)
    left = cuda.shfl_up_sync(FULL_MASK, v, 1)
    heads = cuda.ballot_sync(FULL_MASK, lane == 0 or left != v)
    m = uint32(heads & ((int64(2) << lane) - 1))
    if i < n:
        pos[i] = lane - (31 - cuda.clz(m))
@cuda.jit
def warp_mode_match(x, mode, count):
    """The most frequent value of each warp's 32 (ties: the smallest): match_any gives each lane its peers, popc
    their number, and an xor-shuffle maximum of (count, -value) picks the winner; lane 0 writes two words."""
    i = cuda.grid(1)
    n = x.shape[0]
    v = x[i] if i < n else int32(-1 - cuda.threadIdx.x % 32)  # tail lanes: values of their own
    peers = cuda.match_any_sync(FULL_MASK, v)
    key = (cuda.popc(peers) << 16) | (0xFFFF - v) if i < n else 0
    for d in (16, 8, 4, 2, 1):
        key = max(key, cuda.shfl_xor_sync(FULL_MASK, key, d))
    if cuda.threadIdx.x % 32 == 0 and i < n:
        mode[i // 32] = 0xFFFF - (key & 0xFFFF)
        count[i // 32] = key >> 16
@cuda.jit
def binary_gcd(a, b, g):
    """gcd(a, b) of positive int32 pairs by Stein's algorithm: trailing zeros counted as popc((x & -x) - 1), then
    subtract-and-shift until one is zero; the number of rounds differs from lane to lane."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        u, v = int64(a[i]), int64(b[i])
        shift = cuda.popc(((u | v) & -(u | v)) - 1)
        u >>= cuda.popc((u & -u) - 1)
        while v != 0:
            v >>= cuda.popc((v & -v) - 1)
            if u > v:
                u, v = v, u
            v -= u
        g[i] = int32(u << shift)
RS_T, RS_BITS = 256, 16  # keys per block (a thread each), bits sorted on
RS_WARPS = RS_T // 32
@cuda.jit
def radix_sort256_ballot(x, out):
    """Sort each run of 256 16-bit keys (int32, the tail padded with 65535) by 16 one-bit stable splits in shared
    memory: a ballot and popc rank a key among its warp's zeros, eight warp counts (three barriers a pass) place it."""
    s = cuda.shared.array(RS_T, int32)
    wz = cuda.shared.array(RS_WARPS, int32)
    t, n = cuda.threadIdx.x, x.shape[0]
    lane, w = t % 32, t // 32
    i = cuda.blockIdx.x * RS_T + t
    s[t] = x[i] if i < n else int32(65535)
    cuda.syncthreads()
    for b in range(RS_BITS):
        k = s[t]
        zero = ((k >> b) & 1) == 0
        zb = cuda.ballot_sync(FULL_MASK, zero)
        before = cuda.popc(zb & ((1 << lane) - 1))
        if lane == 0:
            wz[w] = cuda.popc(zb)
        cuda.syncthreads()
        total = 0
        for q in range(RS_WARPS):
            c = wz[q]
            total += c
            if q < w:
                before += c
        dst = before if zero else total + t - before
        cuda.syncthreads()
        s[dst] = k
        cuda.syncthreads()
    if i < n:
        out[i] = s[t]


# --- access patterns: a thread per column or per row, a gather through fixed point, a wide 3-D stencil
@cuda.jit
def ema_series_in_columns(x, y, alpha):
    """The exponential moving average y[t] = y[t-1] + alpha·(x[t] - y[t-1]) (y[0] = x[0]) of many series stored as
    the columns of x (x[t, s]), a thread per series stepping through time: the lanes of a warp read and write
    neighbouring words."""
    s = cuda.grid(1)
    if s < x.shape[1]:
        m = x[0, s]
        y[0, s] = m
        for t in range(1, x.shape[0]):
            m += alpha * (x[t, s] - m)
            y[t, s] = m
@cuda.jit
def ema_series_in_rows(x, y, alpha):
    """The same average of series stored as the rows of x (x[s, t]), a thread per series: the lanes of a warp read
    and write words a whole row apart."""
    s = cuda.grid(1)
    if s < x.shape[0]:
        m = x[s, 0]
        y[s, 0] = m
        for t in range(1, x.shape[1]):
            m += alpha * (x[s, t] - m)
            y[s, t] = m
@cuda.jit
def bilinear_fixed16(src, dst, ax, bx, cx, ay, by, cy):
    """dst[r, c] = src sampled at the affine image of (c, r) with bilinear weights, the source coordinates in 16.16
    fixed point (x = ax·c + bx·r + cx): four gathered taps, zero outside. 32 × 8 blocks."""
    c, r = cuda.grid(2)
    h, w = src.shape
    if r < dst.shape[0] and c < dst.shape[1]:
        sx, sy = ax * c + bx * r + cx, ay * c + by * r + cy
        ix, iy = sx >> 16, sy >> 16
        fx, fy = float32(sx & 0xFFFF) * float32(1.0 / 65536), float32(sy & 0xFFFF) * float32(1.0 / 65536)
        acc = float32(0)
        for dy in range(2):
            for dx in range(2):
                yy, xx = iy + dy, ix + dx
                if yy >= 0 and yy < h and xx >= 0 and xx < w:
                    wy = fy if dy == 1 else float32(1) - fy
                    wx = fx if dx == 1 else float32(1) - fx
                    acc += wy * wx * src[yy, xx]
        dst[r, c] = acc
@cuda.jit
def wave13_3d(u, up, out, c2):
    """One leapfrog step of the 3-D wave equation, out = 2u - up + c2·L(u), L the fourth-order 13-point star (two
    neighbours each way on each axis) read straight from global memory; within two cells of a face out = u. A 3-D
    grid of 32 × 8 blocks, one plane each."""
    x, y = cuda.grid(2)
    z = cuda.blockIdx.z
    nz, ny, nx = u.shape
    if x < nx and y < ny:
        c = u[z, y, x]
        if x < 2 or y < 2 or z < 2 or x >= nx - 2 or y >= ny - 2 or z >= nz - 2:
            out[z, y, x] = c
        else:
            near = u[z, y, x - 1] + u[z, y, x + 1] + u[z, y - 1, x] + u[z, y + 1, x] + u[z - 1, y, x] + u[z + 1, y, x]
            far = u[z, y, x - 2] + u[z, y, x + 2] + u[z, y - 2, x] + u[z, y + 2, x] + u[z - 2, y, x] + u[z + 2, y, x]
            lap = float32(16) * near - far - float32(90) * c
            out[z, y, x] = float32(2) * c - up[z, y, x] + c2 * lap


# --- shared memory: private counters in two layouts, a rank sort, a broadcast table, an FFT, a blur
NH_T, NH_WORDS, NH_BINS = 128, 16, 16  # threads, words per thread, bins
NH_CNT = NH_T * NH_BINS
@cuda.jit
def nibble_hist_tid_major(words, bins):
    """A 16-bin histogram of the nibbles of uint32 words, each thread counting into its own 16 counters in shared
    memory at [thread·16 + nibble] (no atomics: the counters are private); threads t and t + 2 share a bank for
    every nibble, so equal nibbles in a warp collide. Then thread k < 16 adds bin k over the block, one atomic."""
    cnt = cuda.shared.array(NH_CNT, int32)
    t, n = cuda.threadIdx.x, words.shape[0]
    for k in range(NH_BINS):
        cnt[t * NH_BINS + k] = 0
    base = cuda.blockIdx.x * NH_T * NH_WORDS
    for q in range(NH_WORDS):
        i = base + q * NH_T + t
        if i < n:
            w = words[i]
            for s in range(8):
                cnt[t * NH_BINS + ((w >> (4 * s)) & 15)] += 1
    cuda.syncthreads()
    if t < NH_BINS:
        tot = int32(0)
        for u in range(NH_T):
            tot += cnt[u * NH_BINS + t]
        cuda.atomic.add(bins, t, tot)
@cuda.jit
def nibble_hist_bin_major(words, bins):
    """The same histogram with the private counters at [nibble·128 + thread]: lane l always in bank l, whatever
    the nibbles."""
    cnt = cuda.shared.array(NH_CNT, int32)
    t, n = cuda.threadIdx.x, words.shape[0]
    for k in range(NH_BINS):
        cnt[k * NH_T + t] = 0
    base = cuda.blockIdx.x * NH_T * NH_WORDS
    for q in range(NH_WORDS):
        i = base + q * NH_T + t
        if i < n:
            w = words[i]
            for s in range(8):
                cnt[((w >> (4 * s)) & 15) * NH_T + t] += 1
    cuda.syncthreads()
    if t < NH_BINS:
        tot = int32(0)
        for u in range(NH_T):
            tot += cnt[t * NH_T + u]
        cuda.atomic.add(bins, t, tot)
RK_T = 256
@cuda.jit
def rank_sort256(x, out):
    """Sort each run of 256 floats by ranks: a thread stages its value, counts the values of the tile that come
    before it (smaller, or equal at a lower index: 256 broadcast reads of shared memory) and writes its value at
    that rank. The tail of the last run is left out of the tile."""
    s = cuda.shared.array(RK_T, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * RK_T
    m = min(RK_T, n - base)
    if t < m:
        s[t] = x[base + t]
    cuda.syncthreads()
    if t < m:
        v = s[t]
        r = 0
        for j in range(m):
            o = s[j]
            if o < v or (o == v and j < t):
                r += 1
        out[base + r] = v
HM_DB, HM_T = 1024, 256  # codes in the table, threads per block
@cuda.jit
def hamming_nearest(qlo, qhi, db, dist, idx):
    """For each 64-bit query (two uint32 words), the nearest of 1024 codes in Hamming distance (ties: the lowest
    index): the block copies the table into shared memory, then every thread scans it in the same order (each
    read a broadcast), two xors and two popc per code."""
    sl = cuda.shared.array(HM_DB, uint32)
    sh = cuda.shared.array(HM_DB, uint32)
    t = cuda.threadIdx.x
    for k in range(t, HM_DB, HM_T):
        sl[k], sh[k] = db[k, 0], db[k, 1]
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < qlo.shape[0]:
        a, b = qlo[i], qhi[i]
        best, at = 65, 0
        for k in range(HM_DB):
            d = cuda.popc(a ^ sl[k]) + cuda.popc(b ^ sh[k])
            if d < best:
                best, at = d, k
        dist[i], idx[i] = best, at
FT_N, FT_T = 256, 128  # points per transform, threads per block (a butterfly each per stage)
@cuda.jit
def fft256_shared(re, im, ore, oim):
    """The forward DFT of each row of 256 complex points (re, im as two float32 arrays): loaded in bit-reversed
    order (brev) into shared memory, then eight radix-2 stages of 128 butterflies with twiddles from sin and cos,
    a barrier after each."""
    sr = cuda.shared.array(FT_N, float32)
    si = cuda.shared.array(FT_N, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    for h in range(2):
        j = h * FT_T + t
        r = cuda.brev(uint32(j)) >> 24
        sr[r], si[r] = re[row, j], im[row, j]
    cuda.syncthreads()
    half = 1
    while half < FT_N:
        p = t % half
        i = (t // half) * 2 * half + p
        ang = float32(-math.pi) * float32(p) / float32(half)
        wr, wi = math.cos(ang), math.sin(ang)
        br, bi = sr[i + half], si[i + half]
        tr, ti = wr * br - wi * bi, wr * bi + wi * br
        ar, ai = sr[i], si[i]
        sr[i], si[i] = ar + tr, ai + ti
        sr[i + half], si[i + half] = ar - tr, ai - ti
        cuda.syncthreads()
        half *= 2
    for h in range(2):
        j = h * FT_T + t
        ore[row, j], oim[row, j] = sr[j], si[j]
SB_X, SB_Y, SB_R = 32, 8, 2  # block columns, rows, blur radius
SB_TX, SB_TY = SB_X + 2 * SB_R, SB_Y + 2 * SB_R
@cuda.jit
def binomial5_sep_shared(src, dst):
    """The 5 × 5 binomial blur ([1 4 6 4 1]ᵀ[1 4 6 4 1] / 256, zero outside) in one kernel: a 32 × 8 block stages
    a 36 × 12 tile, blurs its rows into a 32 × 12 shared buffer, then its columns from there."""
    tile = cuda.shared.array((SB_TY, SB_TX), float32)
    hz = cuda.shared.array((SB_TY, SB_X), float32)
    rows, cols = src.shape
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tid = ty * SB_X + tx
    x0, y0 = cuda.blockIdx.x * SB_X - SB_R, cuda.blockIdx.y * SB_Y - SB_R
    for k in range(tid, SB_TY * SB_TX, SB_X * SB_Y):
        yy, xx = y0 + k // SB_TX, x0 + k % SB_TX
        tile[k // SB_TX, k % SB_TX] = src[yy, xx] if yy >= 0 and yy < rows and xx >= 0 and xx < cols else float32(0)
    cuda.syncthreads()
    for k in range(tid, SB_TY * SB_X, SB_X * SB_Y):
        r, c = k // SB_X, k % SB_X
        hz[r, c] = (tile[r, c] + tile[r, c + 4] + float32(4) * (tile[r, c + 1] + tile[r, c + 3])
                    + float32(6) * tile[r, c + 2])
    cuda.syncthreads()
    r, c = y0 + SB_R + ty, x0 + SB_R + tx
    if r < rows and c < cols:
        v = hz[ty, tx] + hz[ty + 4, tx] + float32(4) * (hz[ty + 1, tx] + hz[ty + 3, tx]) + float32(6) * hz[ty + 2, tx]
        dst[r, c] = v * float32(1.0 / 256)


# --- transpose: bytes in registers, complex through shared tiles
@cuda.jit
def transpose_u8_4x4(src, dst):
    """The transpose of a uint8 matrix held as uint32 words (4 bytes a word): thread (c, r) loads word c of rows
    4r..4r+3 (coalesced), transposes the 4 × 4 bytes with shifts and masks, and stores word r of rows 4c..4c+3."""
    c, r = cuda.grid(2)
    if r < src.shape[0] // 4 and c < src.shape[1]:
        w0, w1 = int64(src[4 * r, c]), int64(src[4 * r + 1, c])
        w2, w3 = int64(src[4 * r + 2, c]), int64(src[4 * r + 3, c])
        for j in range(4):
            sh = 8 * j
            o = ((w0 >> sh) & 255) | (((w1 >> sh) & 255) << 8) | (((w2 >> sh) & 255) << 16) | (((w3 >> sh) & 255) << 24)
            dst[4 * c + j, r] = uint32(o)
CT, CT_ROWS = 32, 8
CT_PAD = CT + 1
@cuda.jit
def conj_transpose_padded(sre, sim, dre, dim):
    """The conjugate transpose of a complex matrix held as two float32 planes: two 32 × 33 shared tiles (real and
    imaginary), 32 × 8 threads, four rows each, the imaginary part negated on the way out."""
    tr = cuda.shared.array((CT, CT_PAD), float32)
    ti = cuda.shared.array((CT, CT_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = sre.shape
    r0, c0 = cuda.blockIdx.y * CT, cuda.blockIdx.x * CT
    for j in range(ty, CT, CT_ROWS):
        if r0 + j < rows and c0 + tx < cols:
            tr[j, tx], ti[j, tx] = sre[r0 + j, c0 + tx], sim[r0 + j, c0 + tx]
    cuda.syncthreads()
    for j in range(ty, CT, CT_ROWS):
        if c0 + j < cols and r0 + tx < rows:
            dre[c0 + j, r0 + tx], dim[c0 + j, r0 + tx] = tr[tx, j], -ti[tx, j]


# --- latency: searches, one block for a whole algorithm, a local array
@cuda.jit
def lower_bound_search(table, q, out):
    """out[i] = the first index of a sorted int32 table whose entry is not below q[i], by bisection: log2(size)
    loads, each waiting for the one before."""
    i = cuda.grid(1)
    if i < q.shape[0]:
        v = q[i]
        lo, hi = 0, table.shape[0]
        while lo < hi:
            mid = (lo + hi) // 2
            if table[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
PI_T, PI_MAX = 256, 2048  # threads of the one block, largest order
PI_WARPS = PI_T // 32
@cuda.jit
def power_iteration_1block(at, x0, x, lam, iters):
    """``iters`` steps of the power method x <- A·x / |A·x| on one block of 256 (A given transposed, so a thread's
    row reads are coalesced across the warp): the vector in shared memory, the norm by shuffles and eight shared
    slots, two barriers a step; lam = the last norm."""
    xs = cuda.shared.array(PI_MAX, float32)
    ys = cuda.shared.array(PI_MAX, float32)
    slot = cuda.shared.array(PI_WARPS, float32)
    t, n = cuda.threadIdx.x, x0.shape[0]
    for r in range(t, n, PI_T):
        xs[r] = x0[r]
    cuda.syncthreads()
    norm = float32(0)
    for _ in range(iters):
        ss = float32(0)
        for r in range(t, n, PI_T):
            y = float32(0)
            for k in range(n):
                y += at[k, r] * xs[k]
            ys[r] = y
            ss += y * y
        for d in (16, 8, 4, 2, 1):
            ss += cuda.shfl_xor_sync(FULL_MASK, ss, d)
        if t % 32 == 0:
            slot[t // 32] = ss
        cuda.syncthreads()
        tot = float32(0)
        for k in range(PI_WARPS):
            tot += slot[k]
        norm = math.sqrt(tot)
        for r in range(t, n, PI_T):
            xs[r] = ys[r] / norm
        cuda.syncthreads()
    for r in range(t, n, PI_T):
        x[r] = xs[r]
    if t == 0:
        lam[0] = norm
TK_K = 8
@cuda.jit
def top8_local(data, top):
    """The eight largest of each column of a (64, n) float32 array, a thread per column (coalesced rows): a sorted
    list of 8 in a per-thread array, each new value inserted by shifting the smaller ones down (a data-dependent
    index: local memory)."""
    i = cuda.grid(1)
    if i < data.shape[1]:
        best = cuda.local.array(TK_K, float32)
        for k in range(TK_K):
            best[k] = -math.inf
        for j in range(data.shape[0]):
            v = data[j, i]
            if v > best[TK_K - 1]:
                k = TK_K - 1
                while k > 0 and best[k - 1] < v:
                    best[k] = best[k - 1]
                    k -= 1
                best[k] = v
        for k in range(TK_K):
            top[k, i] = best[k]


# --- reductions and atomics
@cuda.jit
def lanes_add_one_word(x, lanes, total):
    """total[0] += x[i] by an atomic from the first ``lanes`` lanes of every warp only (the others read nothing)."""
    i = cuda.grid(1)
    if i < x.shape[0] and cuda.threadIdx.x % 32 < lanes:
        cuda.atomic.add(total, 0, x[i])
@cuda.jit
def joint_hist_u8(a, b, bins):
    """The joint histogram of two uint8 images, 256 × 256 int32 bins in global memory (256 KB), an atomic per
    pixel pair; the images are alike, so most pairs fall near the diagonal."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        cuda.atomic.add(bins, int32(a[i]) * 256 + int32(b[i]), 1)
NM_T, NM_ITEMS = 256, 4
NM_WARPS = NM_T // 32
@cuda.jit
def norms_l1_l2_max(x, sums, mx):
    """Σ|x| and Σx² (float64) and max |x| (float32) in one pass, four elements a thread: shuffles, eight shared
    slots each, then one float64 atomic add per sum and one float32 atomic max per block."""
    s1s = cuda.shared.array(NM_WARPS, float64)
    s2s = cuda.shared.array(NM_WARPS, float64)
    ms = cuda.shared.array(NM_WARPS, float32)
    t = cuda.threadIdx.x
    s1, s2, m = float64(0), float64(0), float32(0)
    base = cuda.blockIdx.x * NM_T * NM_ITEMS
    for q in range(NM_ITEMS):
        i = base + q * NM_T + t
        if i < x.shape[0]:
            v = abs(x[i])
            s1 += v
            s2 += float64(v) * v
            m = max(m, v)
    for d in (16, 8, 4, 2, 1):
        s1 += cuda.shfl_down_sync(FULL_MASK, s1, d)
        s2 += cuda.shfl_down_sync(FULL_MASK, s2, d)
        m = max(m, cuda.shfl_down_sync(FULL_MASK, m, d))
    if t % 32 == 0:
        s1s[t // 32], s2s[t // 32], ms[t // 32] = s1, s2, m
    cuda.syncthreads()
    if t == 0:
        for k in range(1, NM_WARPS):
            s1 += s1s[k]
            s2 += s2s[k]
            m = max(m, ms[k])
        cuda.atomic.add(sums, 0, s1)
        cuda.atomic.add(sums, 1, s2)
        cuda.atomic.max(mx, 0, m)
WF_T = 128
WF_WARPS = WF_T // 32
@cuda.jit
def welford_rows_f64(a, mean, var):
    """The mean and population variance of each row of a float32 matrix, a block of 128 per row: each thread runs
    Welford's update in float64 over its strided elements, then the (count, mean, M2) triples are merged by Chan's
    rule through xor shuffles and four shared slots."""
    sc = cuda.shared.array(WF_WARPS, float64)
    sm = cuda.shared.array(WF_WARPS, float64)
    s2 = cuda.shared.array(WF_WARPS, float64)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    cnt, mu, m2 = float64(0), float64(0), float64(0)
    for j in range(t, a.shape[1], WF_T):
        v = float64(a[row, j])
        cnt += 1.0
        d = v - mu
        mu += d / cnt
        m2 += d * (v - mu)
    for off in (16, 8, 4, 2, 1):
        nb = cuda.shfl_xor_sync(FULL_MASK, cnt, off)
        mb = cuda.shfl_xor_sync(FULL_MASK, mu, off)
        qb = cuda.shfl_xor_sync(FULL_MASK, m2, off)
        tot = cnt + nb
        if nb > 0:
            d = mb - mu
            mu, m2 = mu + d * nb / tot, m2 + qb + d * d * cnt * nb / tot
            cnt = tot
    if t % 32 == 0:
        sc[t // 32], sm[t // 32], s2[t // 32] = cnt, mu, m2
    cuda.syncthreads()
    if t == 0:
        for k in range(1, WF_WARPS):
            nb = sc[k]
            if nb > 0:
                tot = cnt + nb
                d = sm[k] - mu
                mu, m2 = mu + d * nb / tot, m2 + s2[k] + d * d * cnt * nb / tot
                cnt = tot
        mean[row], var[row] = mu, m2 / cnt


# --- host and device: what a buffer holds when it arrives
CR_WORDS = 64  # uint32 words per chunk (256 bytes)
@cuda.jit
def crc32_chunks(data, table, crc):
    """The CRC-32 (zlib's) of each 256-byte chunk, a thread per chunk: the 256-entry table copied into shared
    memory, then one table lookup per byte, each waiting for the one before (data-dependent banks)."""
    tab = cuda.shared.array(256, uint32)
    t = cuda.threadIdx.x
    for k in range(t, 256, cuda.blockDim.x):
        tab[k] = table[k]
    cuda.syncthreads()
    c = cuda.grid(1)
    if c < data.shape[0]:
        r = int64(0xFFFFFFFF)
        for j in range(CR_WORDS):
            w = int64(data[c, j])
            for s in range(4):
                r = int64(tab[(r ^ (w >> (8 * s))) & 255]) ^ (r >> 8)
        crc[c] = uint32(r ^ 0xFFFFFFFF)
@cuda.jit
def unpack12_samples(packed, out, scale):
    """Samples packed two to three bytes (12 bits each, little-endian) widened to float32: out = (v - 2048)·scale,
    a thread per pair (three byte loads at a 3-byte stride, two stores)."""
    p = cuda.grid(1)
    if p < out.shape[0] // 2:
        b0, b1, b2 = int32(packed[3 * p]), int32(packed[3 * p + 1]), int32(packed[3 * p + 2])
        out[2 * p] = float32((b0 | ((b1 & 15) << 8)) - 2048) * scale
        out[2 * p + 1] = float32(((b1 >> 4) | (b2 << 4)) - 2048) * scale


# --- matmul: one column of eight a thread, small float64 products
SG_BM, SG_BN, SG_BK, SG_TM = 64, 64, 8, 8
SG_T = SG_BM * SG_BN // SG_TM  # 512 threads
@cuda.jit
def sgemm_col8(a, b, c):
    """c = a·b in float32, 64 × 64 tiles of c on blocks of 512: 64 × 8 slices of a and 8 × 64 of b in shared
    memory, each thread eight rows of one column in a local array of 8 accumulators (1-D register tiling: b's value
    loaded once per k for eight products)."""
    sa = cuda.shared.array((SG_BM, SG_BK), float32)
    sb = cuda.shared.array((SG_BK, SG_BN), float32)
    t = cuda.threadIdx.x
    m, n, kk = a.shape[0], b.shape[1], a.shape[1]
    row0, col0 = cuda.blockIdx.y * SG_BM, cuda.blockIdx.x * SG_BN
    tc, tr = t % SG_BN, t // SG_BN
    acc = cuda.local.array(SG_TM, float32)
    for q in range(SG_TM):
        acc[q] = float32(0)
    ar, ac = t // SG_BK, t % SG_BK
    br, bc = t // SG_BN, t % SG_BN
    for k0 in range(0, kk, SG_BK):
        sa[ar, ac] = a[row0 + ar, k0 + ac] if row0 + ar < m and k0 + ac < kk else float32(0)
        sb[br, bc] = b[k0 + br, col0 + bc] if k0 + br < kk and col0 + bc < n else float32(0)
        cuda.syncthreads()
        for k in range(SG_BK):
            bv = sb[k, tc]
            for q in range(SG_TM):
                acc[q] += sa[tr * SG_TM + q, k] * bv
        cuda.syncthreads()
    for q in range(SG_TM):
        r = row0 + tr * SG_TM + q
        if r < m and col0 + tc < n:
            c[r, col0 + tc] = acc[q]
BM8_PER = 4  # 8 × 8 products per block of 256
@cuda.jit
def bmm8x8_f64(a, b, c):
    """c[p] = a[p]·b[p] for a batch of 8 × 8 float64 matrices, a thread per element of c (64 a matrix, four
    matrices a block), eight products from global memory (a's row and b's column are read by neighbours too)."""
    t = cuda.threadIdx.x
    p = cuda.blockIdx.x * BM8_PER + t // 64
    i, j = (t % 64) // 8, t % 8
    if p < a.shape[0]:
        s = 0.0
        for k in range(8):
            s += a[p, i, k] * b[p, k, j]
        c[p, i, j] = s


# --- float32 special functions with a branch
@cuda.jit
def bessel_j0_f32(x, out):
    """J0(x) in float32 by the rational and asymptotic fits of Numerical Recipes: below |x| = 8 two degree-5
    polynomials in x² and a divide, above it a square root, a cos, a sin and two short polynomials (the lanes of a
    warp take either branch)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        ax = abs(v)
        if ax < float32(8):
            y = v * v
            p = float32(57568490574.0) + y * (float32(-13362590354.0) + y * (float32(651619640.7) + y * (
                float32(-11214424.18) + y * (float32(77392.33017) + y * float32(-184.9052456)))))
            q = float32(57568490411.0) + y * (float32(1029532985.0) + y * (float32(9494680.718) + y * (
                float32(59272.64853) + y * (float32(267.8532712) + y))))
            out[i] = p / q
        else:
            z = float32(8) / ax
            y = z * z
            xx = ax - float32(0.785398164)
            p = float32(1) + y * (float32(-0.1098628627e-2) + y * (float32(0.2734510407e-4) + y * (
                float32(-0.2073370639e-5) + y * float32(0.2093887211e-6))))
            q = float32(-0.1562499995e-1) + y * (float32(0.1430488765e-3) + y * (float32(-0.6911147651e-5) + y * (
                float32(0.7621095161e-6) - y * float32(0.934935152e-7))))
            out[i] = math.sqrt(float32(0.636619772) / ax) * (math.cos(xx) * p - z * math.sin(xx) * q)
