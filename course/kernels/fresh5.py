"""Round 5 of fresh kernels, written apart from the chapters and rounds 2–4, to judge a time predictor on unseen code.

An Adam step in 16-byte accesses, Black–Scholes prices, a warp argsort by shuffles, ballot bit-packing, a red–black
Gauss–Seidel sweep, bfloat16 maxima on bits (blocks of 32 and of 256), particles as records and as columns, batched
32 × 32 products with a shared tile read down its rows (unpadded, padded, swizzled), a 1-D heat equation eight steps
per launch, a 27-point mean marching along z, an odd–even transposition sort, a swizzled batched transpose, pointer
chasing (random, local, four chains a thread), nibble entropies in a local array, a Thomas solver on two blocks, an
int8 dot in a 132-block grid-stride loop, a Blelloch scan, per-warp histograms, an embedding gradient by float
atomics, one counter for every thread, Bloom-filter inserts (in L2 and beyond it), a compaction of sorted keys,
Adler-32 checksums, an int8 tiled product, a lower-triangle A·Aᵀ and a float64 Runge–Kutta integration.
``cases(scale)``: one :class:`~course.kernels.cases.Case` per launch (``fresh5_<what>``, tagged ``chNN``, ``fresh5``)
at H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``); each :class:`Plan` declares its arrays' bytes
without building them.

This module holds the kernels only.  Their launches — each case's plan (grid, block, arrays, NumPy answer, bytes),
the sizes, the ``SPECS`` table, ``plan``/``case``/``cases`` and ``RETIRED`` — live in
:mod:`course.kernels.fresh5_plans`, as round 4's do.  The compiler facts in ``data/compiler_facts.json`` are keyed by
file and line, so an edit above a kernel would orphan them once the round is predicted and profiled: add to the end
of the file, never above a kernel.  ``tests/test_fresh5_cases.py`` checks every case on the CPU engine on two seeds
and at awkward shapes, that each check can fail, that the gpu-size launches keep the small ones' rule within the
byte limits, and that ptxas compiles every kernel.  Their author ran nothing on a GPU: the gpu sizes were chosen
from the bytes each launch moves and the work it does, for a time between about 20 µs and 5 ms on an H200.
"""

from __future__ import annotations

import math

import course  # noqa: F401  (chooses the backend before numba is imported)
from course.kernels.vector import gload4, gstore4
from numba import cuda, float32, int32, int64, uint32

FULL_MASK = 0xFFFFFFFF
H200_SMS = 132


# --- elementwise: four arrays in 16-byte accesses, special functions
@cuda.jit
def adam_step(p, g, m, v, lr, b1, b2, eps, c1, c2):
    """One Adam update of four parameters per thread in 16-byte loads and stores (gload4 / gstore4): m and v move
    toward g and g² at rates b1 and b2, then p steps by lr·m·c1 / (sqrt(v·c2) + eps), c1 and c2 the bias
    corrections; four arrays read, three written, n a multiple of 4."""
    q = cuda.grid(1)
    if 4 * q < p.shape[0]:
        p0, p1, p2, p3 = gload4(p, (4 * q,))
        g0, g1, g2, g3 = gload4(g, (4 * q,))
        m0, m1, m2, m3 = gload4(m, (4 * q,))
        v0, v1, v2, v3 = gload4(v, (4 * q,))
        a1, a2 = float32(1) - b1, float32(1) - b2
        m0, m1, m2, m3 = b1 * m0 + a1 * g0, b1 * m1 + a1 * g1, b1 * m2 + a1 * g2, b1 * m3 + a1 * g3
        v0, v1 = b2 * v0 + a2 * g0 * g0, b2 * v1 + a2 * g1 * g1
        v2, v3 = b2 * v2 + a2 * g2 * g2, b2 * v3 + a2 * g3 * g3
        gstore4(m, (4 * q,), m0, m1, m2, m3)
        gstore4(v, (4 * q,), v0, v1, v2, v3)
        gstore4(p, (4 * q,), p0 - lr * (m0 * c1) / (math.sqrt(v0 * c2) + eps),
                p1 - lr * (m1 * c1) / (math.sqrt(v1 * c2) + eps), p2 - lr * (m2 * c1) / (math.sqrt(v2 * c2) + eps),
                p3 - lr * (m3 * c1) / (math.sqrt(v3 * c2) + eps))
@cuda.jit
def black_scholes(s, k, t, call, put, r, vol):
    """European call and put prices in float32: a log, a square root, an exp and four erfc per option (the normal
    CDF as erfc(-x/√2)/2, the put from N(-d) so that nothing cancels); three arrays read, two written."""
    i = cuda.grid(1)
    if i < s.shape[0]:
        si, ki, ti = s[i], k[i], t[i]
        sq = math.sqrt(ti)
        d1 = (math.log(si / ki) + (r + float32(0.5) * vol * vol) * ti) / (vol * sq)
        d2 = d1 - vol * sq
        disc = ki * math.exp(-r * ti)
        h = float32(0.70710678)
        call[i] = si * float32(0.5) * math.erfc(-d1 * h) - disc * float32(0.5) * math.erfc(-d2 * h)
        put[i] = disc * float32(0.5) * math.erfc(d2 * h) - si * float32(0.5) * math.erfc(d1 * h)


# --- warps: shuffles, ballots, half the lanes idle
@cuda.jit
def warp_argsort32(x, vals, order):
    """Each run of 32 floats sorted within its warp by a bitonic network of xor shuffles (15 steps, no shared
    memory): lanes carry (value, index) pairs, ties broken by the index, so the order is a stable argsort."""
    i = cuda.grid(1)
    lane, n = cuda.threadIdx.x % 32, x.shape[0]
    v = x[i] if i < n else float32(math.inf)
    j = int32(i)
    for k in (2, 4, 8, 16, 32):
        d = k // 2
        while d > 0:
            ov = cuda.shfl_xor_sync(FULL_MASK, v, d)
            oj = cuda.shfl_xor_sync(FULL_MASK, j, d)
            smaller = ov < v or (ov == v and oj < j)
            if ((lane & d) == 0) == ((lane & k) == 0):  # this lane keeps the smaller of the pair
                if smaller:
                    v, j = ov, oj
            elif not smaller:
                v, j = ov, oj
            d //= 2
    if i < n:
        vals[i] = v
        order[i] = j
@cuda.jit
def ballot_bitpack(x, thr, bits):
    """bits[w] = the 32 answers of x > thr of warp w as one word: a ballot, and lane 0 stores it (32× fewer bytes
    written than read)."""
    i = cuda.grid(1)
    hit = i < x.shape[0] and x[i] > thr
    word = cuda.ballot_sync(FULL_MASK, hit)
    if cuda.threadIdx.x % 32 == 0 and i < x.shape[0]:
        bits[i // 32] = word
@cuda.jit
def red_black_sweep(u, f, h2, color):
    """Half a Gauss–Seidel sweep of the Poisson equation in place: the interior cells with (row + column) % 2 ==
    color take the mean of their four neighbours plus h²·f / 4; the other half of the threads (a checkerboard, so
    every other lane of each warp) does nothing. 32 × 8 blocks."""
    c, r = cuda.grid(2)
    rows, cols = u.shape
    if r >= 1 and r < rows - 1 and c >= 1 and c < cols - 1 and (r + c) % 2 == color:
        u[r, c] = (u[r - 1, c] + u[r + 1, c] + u[r, c - 1] + u[r, c + 1] + h2 * f[r, c]) * float32(0.25)


# --- access patterns: 2-byte floats on bits, records against columns
@cuda.jit
def bf16_max_bits(a, b, out):
    """The larger of two bfloat16 values, compared on their 16 bits (no NaN in the data): sign-magnitude bits
    become ordered keys (negative: all bits flipped; positive: the sign bit set), the larger key wins."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        x, y = int32(a[i]), int32(b[i])
        kx = x ^ 0xFFFF if x >= 0x8000 else x ^ 0x8000
        ky = y ^ 0xFFFF if y >= 0x8000 else y ^ 0x8000
        out[i] = a[i] if kx >= ky else b[i]
@cuda.jit
def particles_aos(p, dt, g, drag):
    """One time step of particles stored as 32-byte records (x, y, z, vx, vy, vz, mass, charge): gravity and a
    drag that divides by the mass, then the position moves; seven fields read, six written, at a 32-byte stride."""
    i = cuda.grid(1)
    if i < p.shape[0]:
        k = float32(1) - drag * dt / p[i, 6]
        vx, vy, vz = p[i, 3] * k, p[i, 4] * k, (p[i, 5] - g * dt) * k
        p[i, 3], p[i, 4], p[i, 5] = vx, vy, vz
        p[i, 0] += vx * dt
        p[i, 1] += vy * dt
        p[i, 2] += vz * dt
@cuda.jit
def particles_soa(q, dt, g, drag):
    """The same step with the particles stored as eight columns (q[field, i]): every access of a warp is one
    contiguous 128-byte run."""
    i = cuda.grid(1)
    if i < q.shape[1]:
        k = float32(1) - drag * dt / q[6, i]
        vx, vy, vz = q[3, i] * k, q[4, i] * k, (q[5, i] - g * dt) * k
        q[3, i], q[4, i], q[5, i] = vx, vy, vz
        q[0, i] += vx * dt
        q[1, i] += vy * dt
        q[2, i] += vz * dt


# --- shared memory: a tile read down its rows, three layouts
MV_W = 8  # matrices per block: a warp each
@cuda.jit
def gemv32_conflicts(mats, x, y):
    """y[b] = mats[b]·x[b] for a batch of 32 × 32 matrices, a warp per matrix (blocks of 256: eight): the warp copies
    its matrix row by row into a 32 × 32 shared tile (coalesced), then lane l walks row l: the 32 lanes read one
    column at a time, all in one bank (32-way conflicts)."""
    tile = cuda.shared.array((MV_W, 32, 32), float32)
    xs = cuda.shared.array((MV_W, 32), float32)
    w, lane = cuda.threadIdx.x // 32, cuda.threadIdx.x % 32
    b = cuda.blockIdx.x * MV_W + w
    if b < mats.shape[0]:
        for r in range(32):
            tile[w, r, lane] = mats[b, r, lane]
        xs[w, lane] = x[b, lane]
        cuda.syncwarp()
        s = float32(0)
        for k in range(32):
            s += tile[w, lane, k] * xs[w, k]
        y[b, lane] = s
@cuda.jit
def gemv32_padded(mats, x, y):
    """The same product with each tile padded to 32 × 33: row l starts l banks further on, no conflicts."""
    tile = cuda.shared.array((MV_W, 32, 33), float32)
    xs = cuda.shared.array((MV_W, 32), float32)
    w, lane = cuda.threadIdx.x // 32, cuda.threadIdx.x % 32
    b = cuda.blockIdx.x * MV_W + w
    if b < mats.shape[0]:
        for r in range(32):
            tile[w, r, lane] = mats[b, r, lane]
        xs[w, lane] = x[b, lane]
        cuda.syncwarp()
        s = float32(0)
        for k in range(32):
            s += tile[w, lane, k] * xs[w, k]
        y[b, lane] = s
@cuda.jit
def gemv32_swizzled(mats, x, y):
    """The same product in an unpadded tile whose element (r, c) sits at column c ^ r (an xor swizzle): the lanes of
    a warp reading (l, k) hit columns k ^ l, 32 different banks."""
    tile = cuda.shared.array((MV_W, 32, 32), float32)
    xs = cuda.shared.array((MV_W, 32), float32)
    w, lane = cuda.threadIdx.x // 32, cuda.threadIdx.x % 32
    b = cuda.blockIdx.x * MV_W + w
    if b < mats.shape[0]:
        for r in range(32):
            tile[w, r, lane ^ r] = mats[b, r, lane]
        xs[w, lane] = x[b, lane]
        cuda.syncwarp()
        s = float32(0)
        for k in range(32):
            s += tile[w, lane, k ^ lane] * xs[w, k]
        y[b, lane] = s


# --- shared memory: stencils and a sorting network
HT, HS = 256, 8  # threads (and points staged) per block, time steps per launch
HOUT = HT - 2 * HS  # points a block writes: the valid region shrinks by one each step
@cuda.jit
def heat1d_8steps(u, out, alpha):
    """Eight explicit steps of the 1-D heat equation u += alpha·(left - 2u + right) (zero outside) in one launch: a
    block stages 256 points in shared memory, steps them eight times between two buffers (a barrier each step) and
    writes the 240 in the middle that are still exact (temporal blocking)."""
    s0 = cuda.shared.array(HT, float32)
    s1 = cuda.shared.array(HT, float32)
    t, n = cuda.threadIdx.x, u.shape[0]
    gi = cuda.blockIdx.x * HOUT - HS + t
    inside = gi >= 0 and gi < n
    s0[t] = u[gi] if inside else float32(0)
    cuda.syncthreads()
    for _ in range(HS // 2):
        v = s0[t]
        if t > 0 and t < HT - 1 and inside:
            v += alpha * (s0[t - 1] - float32(2) * v + s0[t + 1])
        s1[t] = v
        cuda.syncthreads()
        v = s1[t]
        if t > 0 and t < HT - 1 and inside:
            v += alpha * (s1[t - 1] - float32(2) * v + s1[t + 1])
        s0[t] = v
        cuda.syncthreads()
    if t >= HS and t < HT - HS and inside:
        out[gi] = s0[t]
BZ_X, BZ_Y, BZ_Z = 32, 8, 16  # a block's columns and rows, and the planes it marches through
BZ_TX, BZ_TY = BZ_X + 2, BZ_Y + 2
@cuda.jit
def box27_march_z(src, dst):
    """The mean of each 3 × 3 × 3 neighbourhood (zero outside): a 32 × 8 block marches through 16 planes, staging
    each plane's 34 × 10 tile in shared memory, summing its 3 × 3 window once, and keeping the last three planes'
    sums in registers (a 3-D grid: x, y and the chunk of planes)."""
    tile = cuda.shared.array((BZ_TY, BZ_TX), float32)
    nz, ny, nx = src.shape
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x0, y0 = cuda.blockIdx.x * BZ_X - 1, cuda.blockIdx.y * BZ_Y - 1
    z0 = cuda.blockIdx.z * BZ_Z
    z1 = min(z0 + BZ_Z, nz)
    tid = ty * BZ_X + tx
    prev, cur = float32(0), float32(0)
    for z in range(z0 - 1, z1 + 1):
        for k in range(tid, BZ_TY * BZ_TX, BZ_X * BZ_Y):
            yy, xx = y0 + k // BZ_TX, x0 + k % BZ_TX
            ok = z >= 0 and z < nz and yy >= 0 and yy < ny and xx >= 0 and xx < nx
            tile[k // BZ_TX, k % BZ_TX] = src[z, yy, xx] if ok else float32(0)
        cuda.syncthreads()
        q = ((tile[ty, tx] + tile[ty, tx + 1] + tile[ty, tx + 2])
             + (tile[ty + 1, tx] + tile[ty + 1, tx + 1] + tile[ty + 1, tx + 2])
             + (tile[ty + 2, tx] + tile[ty + 2, tx + 1] + tile[ty + 2, tx + 2]))
        cuda.syncthreads()
        x, y = x0 + 1 + tx, y0 + 1 + ty
        if z > z0 and x < nx and y < ny:
            dst[z - 1, y, x] = (prev + cur + q) * float32(1.0 / 27.0)
        prev, cur = cur, q
OE_N, OE_T = 256, 128  # values sorted per block, threads per block (one compare-exchange each per phase)
@cuda.jit
def oddeven_sort256(x):
    """Sort every run of 256 floats in place by odd–even transposition in shared memory: 256 phases, each one
    compare-exchange per thread on the even or the odd pairs and a barrier (the tail padded with +inf)."""
    s = cuda.shared.array(OE_N, float32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * OE_N
    for h in range(2):
        j = base + h * OE_T + t
        s[h * OE_T + t] = x[j] if j < n else float32(math.inf)
    cuda.syncthreads()
    for phase in range(OE_N):
        i = 2 * t + (phase & 1)
        if i + 1 < OE_N:
            lo, hi = s[i], s[i + 1]
            if hi < lo:
                s[i], s[i + 1] = hi, lo
        cuda.syncthreads()
    for h in range(2):
        j = base + h * OE_T + t
        if j < n:
            x[j] = s[h * OE_T + t]


# --- transpose
TS, TS_ROWS = 32, 8
@cuda.jit
def transpose_swizzled_batched(src, dst):
    """dst[b] = src[b].T for a batch of matrices (grid z: the batch), through an unpadded 32 × 32 tile whose element
    (r, c) sits at column c ^ r: both the row-wise writes and the column-wise reads touch 32 banks (32 × 8 threads,
    four rows each)."""
    tile = cuda.shared.array((TS, TS), float32)
    bz, tx, ty = cuda.blockIdx.z, cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = src.shape[1], src.shape[2]
    r0, c0 = cuda.blockIdx.y * TS, cuda.blockIdx.x * TS
    for j in range(ty, TS, TS_ROWS):
        if r0 + j < rows and c0 + tx < cols:
            tile[j, tx ^ j] = src[bz, r0 + j, c0 + tx]
    cuda.syncthreads()
    for j in range(ty, TS, TS_ROWS):
        if c0 + j < cols and r0 + tx < rows:
            dst[bz, c0 + j, r0 + tx] = tile[tx, j ^ tx]


# --- latency: dependent loads, local arrays, small and fixed grids
@cuda.jit
def chase_one(nxt, start, out, steps):
    """Follow ``steps`` links of an index table from each start (p = nxt[p]): every load waits for the one before."""
    i = cuda.grid(1)
    if i < start.shape[0]:
        p = start[i]
        for _ in range(steps):
            p = nxt[p]
        out[i] = p
@cuda.jit
def chase_four(nxt, start, out, steps):
    """The same chains, four per thread (chains i, i + q, i + 2q, i + 3q with q = ceil(chains / 4)): four
    independent loads in flight per step, a quarter of the threads."""
    i = cuda.grid(1)
    c = start.shape[0]
    q = (c + 3) // 4
    if i < q:
        p0 = start[i]
        p1 = start[i + q] if i + q < c else p0
        p2 = start[i + 2 * q] if i + 2 * q < c else p0
        p3 = start[i + 3 * q] if i + 3 * q < c else p0
        for _ in range(steps):
            p0 = nxt[p0]
            p1 = nxt[p1]
            p2 = nxt[p2]
            p3 = nxt[p3]
        out[i] = p0
        if i + q < c:
            out[i + q] = p1
        if i + 2 * q < c:
            out[i + 2 * q] = p2
        if i + 3 * q < c:
            out[i + 3 * q] = p3
NB_BYTES = 64  # bytes per chunk: 128 nibbles
@cuda.jit
def nibble_entropy_local(data, ent):
    """The entropy in bits of the 128 nibbles of each 64-byte row, a thread per row: 16 counters in a per-thread
    array indexed by the data (so in local memory), then -Σ p·log2 p over the counters that are not zero."""
    i = cuda.grid(1)
    if i < data.shape[0]:
        cnt = cuda.local.array(16, int32)
        for k in range(16):
            cnt[k] = 0
        for j in range(NB_BYTES):
            b = data[i, j]
            cnt[b & 15] += 1
            cnt[b >> 4] += 1
        h = float32(0)
        for k in range(16):
            if cnt[k] > 0:
                pk = float32(cnt[k]) * float32(1.0 / (2 * NB_BYTES))
                h -= pk * math.log2(pk)
        ent[i] = h
TH_T, TH_BLOCKS = 128, 2  # 256 systems, a thread each
@cuda.jit
def thomas_f64(a, b, c, d, cp, x):
    """256 tridiagonal systems solved by the Thomas algorithm in float64, a thread per system on two blocks: column s
    of a, b, c, d holds system s (the threads of a warp read neighbouring words), a forward sweep of divides that
    each wait for the one before, then the back substitution; cp is scratch."""
    s = cuda.grid(1)
    n = a.shape[0]
    if s < a.shape[1]:
        inv = 1.0 / b[0, s]
        cprev, xprev = c[0, s] * inv, d[0, s] * inv
        cp[0, s], x[0, s] = cprev, xprev
        for i in range(1, n):
            inv = 1.0 / (b[i, s] - a[i, s] * cprev)
            cprev = c[i, s] * inv
            xprev = (d[i, s] - a[i, s] * xprev) * inv
            cp[i, s], x[i, s] = cprev, xprev
        for i in range(n - 2, -1, -1):
            xprev = x[i, s] - cp[i, s] * xprev
            x[i, s] = xprev
DG_T, DG_BLOCKS = 256, H200_SMS
DG_WARPS = DG_T // 32
@cuda.jit
def i8x4_dot_gridstride(a, b, total):
    """total += the dot product of two int8 vectors packed four to an int32 word: a grid-stride loop over words on
    a fixed grid of 132 blocks (one per SM), the bytes unpacked with shifts and sign fixes, int64 sums, shuffles,
    eight shared slots and one int64 atomic per block."""
    ws = cuda.shared.array(DG_WARPS, int64)
    t = cuda.threadIdx.x
    acc = int64(0)
    for w in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        wa, wb = a[w], b[w]
        for sh in (0, 8, 16, 24):
            xa, xb = (wa >> sh) & 255, (wb >> sh) & 255
            acc += (xa - ((xa & 128) << 1)) * (xb - ((xb & 128) << 1))
    for off in (16, 8, 4, 2, 1):
        acc += cuda.shfl_down_sync(FULL_MASK, acc, off)
    if t % 32 == 0:
        ws[t // 32] = acc
    cuda.syncthreads()
    if t == 0:
        s = int64(0)
        for k in range(DG_WARPS):
            s += ws[k]
        cuda.atomic.add(total, 0, s)


# --- reductions, scans, histograms and atomics
BL_N, BL_T = 1024, 512  # values per block, threads per block (two values each)
BL_SH = BL_N + BL_N // 32  # one spare word per 32
@cuda.jit
def blelloch_scan(x, out):
    """Exclusive int32 prefix sums of each run of 1024: Blelloch's up-sweep and down-sweep in shared memory (ten
    levels each, a barrier per level), every index offset by index // 32 so that a level's accesses spread over
    the banks."""
    s = cuda.shared.array(BL_SH, int32)
    t, n = cuda.threadIdx.x, x.shape[0]
    base = cuda.blockIdx.x * BL_N
    for h in range(2):
        j = h * BL_T + t
        s[j + (j >> 5)] = x[base + j] if base + j < n else int32(0)
    d = 1
    while d < BL_N:
        cuda.syncthreads()
        k = (2 * t + 2) * d - 1
        if k < BL_N:
            i = k - d
            s[k + (k >> 5)] += s[i + (i >> 5)]
        d *= 2
    if t == 0:
        s[BL_N - 1 + ((BL_N - 1) >> 5)] = 0
    d = BL_N // 2
    while d >= 1:
        cuda.syncthreads()
        k = (2 * t + 2) * d - 1
        if k < BL_N:
            i = k - d
            ai, ak = i + (i >> 5), k + (k >> 5)
            left = s[ai]
            s[ai] = s[ak]
            s[ak] += left
        d //= 2
    cuda.syncthreads()
    for h in range(2):
        j = h * BL_T + t
        if base + j < n:
            out[base + j] = s[j + (j >> 5)]
HW_BINS, HW_T, HW_ITEMS = 64, 256, 16
HW_WARPS = HW_T // 32
@cuda.jit
def hist64_warp_copies(keys, counts):
    """A 64-bin histogram of skewed byte keys with one copy of the bins per warp in shared memory (8 × 64): a warp's
    atomics meet only its own lanes; then thread k < 64 adds the eight copies of bin k and makes one global atomic
    (16 keys per thread)."""
    h = cuda.shared.array((HW_WARPS, HW_BINS), int32)
    t, w = cuda.threadIdx.x, cuda.threadIdx.x // 32
    for k in range(t, HW_WARPS * HW_BINS, HW_T):
        h[k // HW_BINS, k % HW_BINS] = 0
    cuda.syncthreads()
    base = cuda.blockIdx.x * HW_T * HW_ITEMS
    for q in range(HW_ITEMS):
        i = base + q * HW_T + t
        if i < keys.shape[0]:
            cuda.atomic.add(h, (w, keys[i]), 1)
    cuda.syncthreads()
    if t < HW_BINS:
        s = int32(0)
        for c in range(HW_WARPS):
            s += h[c, t]
        if s > 0:
            cuda.atomic.add(counts, t, int32(s))
@cuda.jit
def embedding_backward_atomic(grad, ids, table):
    """table[ids[r], :] += grad[r, :], the gradient of an embedding lookup: a float atomic per element from a 32 × 8
    block of (column, row) threads; a quarter of the rows share 64 hot ids, so their atomics meet on the same words."""
    c, r = cuda.grid(2)
    if r < grad.shape[0] and c < grad.shape[1]:
        cuda.atomic.add(table, (ids[r], c), grad[r, c])
@cuda.jit
def count_over_atomic(x, thr, count):
    """How many |x| > thr, counted the plain way: every thread that qualifies adds 1 to the same word."""
    i = cuda.grid(1)
    if i < x.shape[0] and abs(x[i]) > thr:
        cuda.atomic.add(count, 0, 1)
BLOOM_K = 3  # bits set per key
@cuda.jit
def bloom_insert(keys, words, mask):
    """Insert 32-bit keys into a Bloom filter of mask + 1 bits (a power of two): two integer hashes (shift-xor and
    multiply rounds) give the key's three bits h1 + j·h2, each set with an atomic or on its 32-bit word."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        h = int64(keys[i]) & 0xFFFFFFFF
        h ^= h >> 16
        h = (h * 0x45D9F3B) & 0xFFFFFFFF
        h ^= h >> 16
        h = (h * 0x45D9F3B) & 0xFFFFFFFF
        h1 = h ^ (h >> 16)
        h = h1 ^ 0x5BD1E995
        h ^= h >> 15
        h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
        h ^= h >> 12
        h = (h * 0x297A2D39) & 0xFFFFFFFF
        h2 = (h ^ (h >> 15)) | 1
        for j in range(BLOOM_K):
            bit = (h1 + j * h2) & mask
            cuda.atomic.or_(words, bit >> 5, uint32(1 << (bit & 31)))
CU_T, CU_ITEMS = 256, 8
CU_BLOCK, CU_WARPS = CU_T * CU_ITEMS, CU_T // 32
@cuda.jit
def compact_unique(keys, offs, uniq):
    """The distinct values of sorted int64 keys packed to the front of uniq, in order (the second pass of a
    two-pass compaction: offs[block] = the heads in the blocks before, counted by the host). A thread counts the
    run heads among its 8 consecutive keys, a shuffle scan and a scan of the 8 warp totals give its first slot,
    and it writes its heads one after another."""
    ws = cuda.shared.array(CU_WARPS, int32)
    t, lane, w = cuda.threadIdx.x, cuda.threadIdx.x % 32, cuda.threadIdx.x // 32
    n = keys.shape[0]
    first = cuda.blockIdx.x * CU_BLOCK + t * CU_ITEMS
    cnt = 0
    for q in range(CU_ITEMS):
        i = first + q
        if i < n and (i == 0 or keys[i] != keys[i - 1]):
            cnt += 1
    v = cnt
    for d in (1, 2, 4, 8, 16):
        u = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += u
    if lane == 31:
        ws[w] = v
    cuda.syncthreads()
    if w == 0:
        s = ws[lane] if lane < CU_WARPS else 0
        for d in (1, 2, 4):
            u = cuda.shfl_up_sync(FULL_MASK, s, d)
            if lane >= d:
                s += u
        if lane < CU_WARPS:
            ws[lane] = s
    cuda.syncthreads()
    pos = offs[cuda.blockIdx.x] + v - cnt
    if w > 0:
        pos += ws[w - 1]
    for q in range(CU_ITEMS):
        i = first + q
        if i < n and (i == 0 or keys[i] != keys[i - 1]):
            uniq[pos] = keys[i]
            pos += 1


# --- host and device: checking what arrived
AD_CH, AD_T, AD_MOD = 4096, 256, 65521
AD_WARPS = AD_T // 32
@cuda.jit
def adler32_chunks(data, sums):
    """The Adler-32 checksum of each 4096-byte chunk of a received buffer, a block of 256 per chunk: the sums
    Σ d and Σ (4096 - j)·d of the serial definition in int64 over 16 bytes a thread (coalesced byte loads), shuffles
    and shared slots, then thread 0 folds them modulo 65521."""
    ws = cuda.shared.array((2, AD_WARPS), int64)
    c, t = cuda.blockIdx.x, cuda.threadIdx.x
    s1, s2 = int64(0), int64(0)
    for j in range(t, AD_CH, AD_T):
        v = int64(data[c, j])
        s1 += v
        s2 += (AD_CH - j) * v
    for off in (16, 8, 4, 2, 1):
        s1 += cuda.shfl_down_sync(FULL_MASK, s1, off)
        s2 += cuda.shfl_down_sync(FULL_MASK, s2, off)
    if t % 32 == 0:
        ws[0, t // 32], ws[1, t // 32] = s1, s2
    cuda.syncthreads()
    if t == 0:
        lo, hi = int64(1), int64(AD_CH)
        for k in range(AD_WARPS):
            lo += ws[0, k]
            hi += ws[1, k]
        sums[c] = ((hi % AD_MOD) << 16) | (lo % AD_MOD)


# --- matmul: int8 tiles, a triangle
IM, IM_ROWS = 32, 8
@cuda.jit
def imatmul_i8_tile(a, b, c):
    """c = a·b for int8 a and b into int32: a 32 × 8 block computes a 32 × 32 tile of c, each thread one column and
    four rows (ty, ty + 8, ty + 16, ty + 24) in four int32 accumulators; 32 × 32 slices of a and b are widened to
    int32 in shared memory (a's read is a broadcast, b's a row)."""
    sa = cuda.shared.array((IM, IM), int32)
    sb = cuda.shared.array((IM, IM), int32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    m, n, kk = a.shape[0], b.shape[1], a.shape[1]
    row0, col = cuda.blockIdx.y * IM, cuda.blockIdx.x * IM + tx
    acc0, acc1, acc2, acc3 = int32(0), int32(0), int32(0), int32(0)
    for k0 in range(0, kk, IM):
        for j in range(ty, IM, IM_ROWS):
            sa[j, tx] = int32(a[row0 + j, k0 + tx]) if row0 + j < m and k0 + tx < kk else int32(0)
            sb[j, tx] = int32(b[k0 + j, col]) if k0 + j < kk and col < n else int32(0)
        cuda.syncthreads()
        for k in range(IM):
            bv = sb[k, tx]
            acc0 = int32(acc0 + sa[ty, k] * bv)
            acc1 = int32(acc1 + sa[ty + 8, k] * bv)
            acc2 = int32(acc2 + sa[ty + 16, k] * bv)
            acc3 = int32(acc3 + sa[ty + 24, k] * bv)
        cuda.syncthreads()
    if col < n:
        if row0 + ty < m:
            c[row0 + ty, col] = acc0
        if row0 + ty + 8 < m:
            c[row0 + ty + 8, col] = acc1
        if row0 + ty + 16 < m:
            c[row0 + ty + 16, col] = acc2
        if row0 + ty + 24 < m:
            c[row0 + ty + 24, col] = acc3
SY, SY_PAD = 16, 17
@cuda.jit
def syrk_lower(a, c):
    """The lower triangle of c = a·aᵀ (a is n × k): 16 × 16 blocks on a square grid, those above the diagonal return
    at once; a block stages 16 × 16 slices of its two row bands of a, the second padded to 17 because the threads
    read it by column."""
    sa = cuda.shared.array((SY, SY), float32)
    sb = cuda.shared.array((SY, SY_PAD), float32)
    bx, by = cuda.blockIdx.x, cuda.blockIdx.y
    if bx > by:
        return
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n, kk = a.shape
    ra, rb = by * SY + ty, bx * SY + ty
    acc = float32(0)
    for k0 in range(0, kk, SY):
        sa[ty, tx] = a[ra, k0 + tx] if ra < n and k0 + tx < kk else float32(0)
        sb[ty, tx] = a[rb, k0 + tx] if rb < n and k0 + tx < kk else float32(0)
        cuda.syncthreads()
        for k in range(SY):
            acc += sa[ty, k] * sb[tx, k]
        cuda.syncthreads()
    r, col = by * SY + ty, bx * SY + tx
    if r < n and col <= r:
        c[r, col] = acc


# --- float64 arithmetic in a loop
@cuda.jit
def rk4_duffing_f64(x0, v0, x, v, dt, steps, delta, beta):
    """``steps`` classical Runge–Kutta steps of the damped Duffing oscillator x'' = -delta·x' - x - beta·x³ in
    float64, one initial state per thread: four evaluations a step, each waiting for the one before."""
    i = cuda.grid(1)
    if i < x0.shape[0]:
        p, q = x0[i], v0[i]
        hh, h6 = 0.5 * dt, dt / 6.0
        for _ in range(steps):
            a1 = -delta * q - p - beta * p * p * p
            p2, q2 = p + hh * q, q + hh * a1
            a2 = -delta * q2 - p2 - beta * p2 * p2 * p2
            p3, q3 = p + hh * q2, q + hh * a2
            a3 = -delta * q3 - p3 - beta * p3 * p3 * p3
            p4, q4 = p + dt * q3, q + dt * a3
            a4 = -delta * q4 - p4 - beta * p4 * p4 * p4
            p += h6 * (q + 2.0 * q2 + 2.0 * q3 + q4)
            q += h6 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        x[i] = p
        v[i] = q
