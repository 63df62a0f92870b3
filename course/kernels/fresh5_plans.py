"""Round 5's launches (:mod:`course.kernels.fresh5` holds its kernels): one :class:`Plan` per case — grid, block, the
arrays made from the rng, the NumPy answer, tolerances and each array's bytes — the ``SPECS`` table, and
``plan``/``case``/``cases`` built from it (:func:`course.kernels.fresh_plans.builders`); ``RETIRED`` lists the cases
taken out after they were scored.  ``cases(scale)``: H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``).
"""

from __future__ import annotations

import math

import numpy as np

from course.kernels.fresh_plans import Plan, builders
from course.kernels.fresh_plans import blocks as _blocks
from course.kernels.fresh_plans import cdiv as _cdiv
from course.kernels.fresh_plans import f32 as _f32
from course.kernels.fresh_plans import nbytes as _b
from course.kernels.fresh_plans import uniform as _u
from course.kernels.fresh_plans import vec as _vec
from course.kernels.fresh_plans import zeros as _zeros
from course.kernels.fresh5 import (
    AD_CH, AD_MOD, AD_T, BLOOM_K, BL_N, BL_T, BZ_X, BZ_Y, BZ_Z, CU_BLOCK, CU_T, DG_BLOCKS, DG_T, HOUT, HS, HT, HW_BINS,
    HW_ITEMS, HW_T, IM, IM_ROWS, MV_W, NB_BYTES, OE_N, OE_T, SY, TH_BLOCKS, TH_T, TS, TS_ROWS, adam_step,
    adler32_chunks, ballot_bitpack, bf16_max_bits, black_scholes, blelloch_scan, bloom_insert, box27_march_z,
    chase_four, chase_one, compact_unique, count_over_atomic, embedding_backward_atomic, gemv32_conflicts,
    gemv32_padded, gemv32_swizzled, heat1d_8steps, hist64_warp_copies, i8x4_dot_gridstride, imatmul_i8_tile,
    nibble_entropy_local, oddeven_sort256, particles_aos, particles_soa, red_black_sweep, rk4_duffing_f64, syrk_lower,
    thomas_f64, transpose_swizzled_batched, warp_argsort32)


# --- launches: one plan per case
def _grid2(shape, block):  # a 2-D grid over (rows, cols), x along the columns
    return (_cdiv(shape[1], block[0]), _cdiv(shape[0], block[1])), block
ADAM = dict(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, t=10)
def _p_adam(n):
    assert n % 4 == 0, "four parameters per thread: n a multiple of 4"
    lr, b1, b2, eps = (np.float32(ADAM[k]) for k in ("lr", "b1", "b2", "eps"))
    c1, c2 = np.float32(1 / (1 - 0.9 ** ADAM["t"])), np.float32(1 / (1 - 0.999 ** ADAM["t"]))
    def make(rng):
        return (_u(rng, n), _u(rng, n), _u(rng, n, -0.1, 0.1), _u(rng, n, 0.0, 0.01), lr, b1, b2, eps, c1, c2)
    def want(a):
        g = a[1].astype(np.float64)
        m = float(b1) * a[2] + (1 - float(b1)) * g
        v = float(b2) * a[3] + (1 - float(b2)) * g * g
        return {0: a[0] - float(lr) * (m * float(c1)) / (np.sqrt(v * float(c2)) + float(eps)), 2: m, 3: v}
    return Plan(*_vec(n // 4), make, want, 1e-5, 1e-6, (_b(n),) * 4)
BS_R, BS_VOL = 0.03, 0.25
def _erfc(x):
    """erfc by the Chebyshev fit of Numerical Recipes (relative error below 1.2e-7), vectorised for the gpu sizes."""
    z = np.abs(x)
    t = 1 / (1 + 0.5 * z)
    poly = (-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    r = t * np.exp(poly)
    return np.where(x >= 0, r, 2 - r)
def _bs_ref(s, k, t):
    s, k, t = (x.astype(np.float64) for x in (s, k, t))
    sq = np.sqrt(t)
    d1 = (np.log(s / k) + (BS_R + 0.5 * BS_VOL ** 2) * t) / (BS_VOL * sq)
    d2 = d1 - BS_VOL * sq
    disc = k * np.exp(-BS_R * t)
    def cdf(x):
        return 0.5 * _erfc(-x / math.sqrt(2))
    return s * cdf(d1) - disc * cdf(d2), disc * cdf(-d2) - s * cdf(-d1)
def _p_bs(n):
    def make(rng):
        return (_u(rng, n, 10, 100), _u(rng, n, 10, 100), _u(rng, n, 0.25, 2), _zeros(n), _zeros(n),
                np.float32(BS_R), np.float32(BS_VOL))
    def want(a):
        call, put = _bs_ref(a[0], a[1], a[2])
        return {3: call, 4: put}
    return Plan(*_vec(n), make, want, 1e-4, 2e-4, (_b(n),) * 5)
def _p_argsort(n):
    def want(a):
        rows = _blocks(a[0], 32, np.inf)
        o = np.argsort(rows, axis=1, kind="stable")
        return {1: np.take_along_axis(rows, o, axis=1).reshape(-1)[:n],
                2: (o + 32 * np.arange(rows.shape[0])[:, None]).reshape(-1)[:n]}
    return Plan(*_vec(n), lambda rng: (_f32(rng, n), _zeros(n), np.full(n, -1, np.int32)), want, 0.0, 0.0,
                (_b(n), _b(n), _b(n)))
def _p_bitpack(n):
    w = _cdiv(n, 32)
    def want(a):
        hit = np.zeros(32 * w, bool)
        hit[:n] = a[0] > a[1]
        return {2: np.packbits(hit.reshape(-1, 8), axis=1, bitorder="little").reshape(-1).view("<u4")}
    return Plan(*_vec(n), lambda rng: (_u(rng, n), np.float32(0.3), _zeros(w, np.uint32)), want, 0.0, 0.0,
                (_b(n), _b(w)))
def _p_red_black(shape):
    rows, cols = shape
    def want(a):
        u, f = a[0].astype(np.float64), a[1]
        out = u.copy()
        if rows > 2 and cols > 2:
            odd_r, odd_c = np.arange(1, rows - 1) % 2 == 1, np.arange(1, cols - 1) % 2 == 1
            new = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] + float(a[2]) * f[1:-1, 1:-1]) * 0.25
            pick = (odd_r[:, None] ^ odd_c[None, :]) == bool(a[3] % 2)
            out[1:-1, 1:-1][pick] = new[pick]
        return {0: out}
    return Plan(*_grid2(shape, (32, 8)), lambda rng: (_f32(rng, shape), _f32(rng, shape), np.float32(0.25), 1),
                want, 0.0, 0.0, (_b(shape),) * 2)
def _bf16_bits(rng, n):  # random bfloat16 bit patterns, an all-ones exponent (inf, NaN) made finite
    x = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    full = (x & 0x7F80) == 0x7F80
    x[full] &= np.uint16(0xBFFF)
    x[::97] = 0x8000  # -0 beside +0 and equal values: the ties
    x[::89] = 0
    return x
def _bf16_key(x):
    x = x.astype(np.int32)
    return np.where(x >= 0x8000, x ^ 0xFFFF, x ^ 0x8000)
def _p_bf16_max(n, tpb):
    def make(rng):
        a, b = _bf16_bits(rng, n), _bf16_bits(rng, n)
        b[::7] = a[::7]
        return a, b, _zeros(n, np.uint16)
    return Plan(*_vec(n, tpb), make, lambda a: {2: np.where(_bf16_key(a[0]) >= _bf16_key(a[1]), a[0], a[1])},
                0.0, 0.0, (_b(n, 2),) * 3)
PT_DT, PT_G, PT_DRAG = 0.01, 9.81, 0.1
def _particles(rng, n):
    p = _u(rng, (n, 8), -1, 1)
    p[:, 6] = _u(rng, n, 1, 2)
    return p
def _particles_ref(p):
    p = p.astype(np.float64)
    k = 1 - PT_DRAG * PT_DT / p[:, 6]
    p[:, 3] *= k
    p[:, 4] *= k
    p[:, 5] = (p[:, 5] - PT_G * PT_DT) * k
    p[:, 0:3] += p[:, 3:6] * PT_DT
    return p
_PT_ARGS = tuple(np.float32(v) for v in (PT_DT, PT_G, PT_DRAG))
def _p_aos(n):
    return Plan(*_vec(n), lambda rng: (_particles(rng, n),) + _PT_ARGS, lambda a: {0: _particles_ref(a[0])},
                1e-5, 1e-6, (_b((n, 8)),))
def _p_soa(n):
    return Plan(*_vec(n), lambda rng: (np.ascontiguousarray(_particles(rng, n).T),) + _PT_ARGS,
                lambda a: {0: _particles_ref(a[0].T).T}, 1e-5, 1e-6, (_b((8, n)),))
def _p_gemv32(nb):
    return Plan((_cdiv(nb, MV_W),), (32 * MV_W,),
                lambda rng: (_f32(rng, (nb, 32, 32)), _f32(rng, (nb, 32)), _zeros((nb, 32))),
                lambda a: {2: np.einsum("brk,bk->br", a[0].astype(np.float64), a[1])}, 0.0, 0.0,
                (_b((nb, 32, 32)), _b((nb, 32)), _b((nb, 32))))
HEAT_ALPHA = 0.2
def _heat_ref(u, steps):
    u = u.astype(np.float64)
    for _ in range(steps):
        p = np.pad(u, 1)
        u = u + HEAT_ALPHA * (p[:-2] - 2 * u + p[2:])
    return u
def _p_heat(n):
    return Plan((_cdiv(n, HOUT),), (HT,), lambda rng: (_f32(rng, n), _zeros(n), np.float32(HEAT_ALPHA)),
                lambda a: {1: _heat_ref(a[0], HS)}, 1e-5, 1e-4, (_b(n),) * 2)
def _box27_ref(src):
    s = np.pad(src.astype(np.float64), 1)
    s = s[:, :, :-2] + s[:, :, 1:-1] + s[:, :, 2:]  # three passes of three: the 27 terms, separable
    s = s[:, :-2] + s[:, 1:-1] + s[:, 2:]
    return (s[:-2] + s[1:-1] + s[2:]) / 27
def _p_box27(shape):
    nz, ny, nx = shape
    return Plan((_cdiv(nx, BZ_X), _cdiv(ny, BZ_Y), _cdiv(nz, BZ_Z)), (BZ_X, BZ_Y),
                lambda rng: (_f32(rng, shape), _zeros(shape)), lambda a: {1: _box27_ref(a[0])}, 1e-6, 1e-6,
                (_b(shape),) * 2)
def _p_oddeven(n):
    return Plan((_cdiv(n, OE_N),), (OE_T,), lambda rng: (_u(rng, n, -100, 100),),
                lambda a: {0: np.sort(_blocks(a[0], OE_N, np.inf), axis=1).reshape(-1)[:n]}, 0.0, 0.0, (_b(n),))
def _p_transpose(shape):
    nb, rows, cols = shape
    out = (nb, cols, rows)
    return Plan((_cdiv(cols, TS), _cdiv(rows, TS), nb), (TS, TS_ROWS), lambda rng: (_f32(rng, shape), _zeros(out)),
                lambda a: {1: a[0].transpose(0, 2, 1)}, 0.0, 0.0, (_b(shape), _b(out)))
CH_STEPS, CH_TABLE, CH_WINDOW = 128, 32, 256  # links followed, table entries per chain (at least), a local cycle
def _chase_table(rng, m, local):
    """A table of m entries (a power of two) whose links form one cycle through all of it (``local``: a cycle inside
    each window of 256 entries, 1 KB), by a full-period affine map x -> a·x + c mod m (a = 1 mod 4, c odd, both
    drawn): each link jumps far, and the table builds in a fraction of a second at 2^25 entries, where a shuffled
    permutation takes seconds."""
    a = np.uint32(4 * int(rng.integers(1 << 18, 1 << 20)) + 1)
    c = np.uint32(2 * int(rng.integers(0, 1 << 20)) + 1)
    x = np.arange(m, dtype=np.uint32)  # uint32 products wrap modulo 2^32, a multiple of m
    if local:
        w = np.uint32(CH_WINDOW - 1)
        return ((x & ~w) | ((a * (x & w) + c) & w)).view(np.int32)
    return ((a * x + c) & np.uint32(m - 1)).view(np.int32)
def _chase_ref(nxt, start, steps):
    p = start.copy()
    for _ in range(steps):
        p = nxt[p]
    return p
def _p_chase(chains, local, per_thread):
    m = 1 << max(CH_TABLE * chains - 1, CH_WINDOW).bit_length()  # a power of two
    def make(rng):
        return (_chase_table(rng, m, local), rng.integers(0, m, chains, dtype=np.int32),
                np.full(chains, -1, np.int32), CH_STEPS)
    return Plan(*_vec(_cdiv(chains, per_thread)), make, lambda a: {2: _chase_ref(a[0], a[1], a[3])}, 0.0, 0.0,
                (_b(m), _b(chains), _b(chains)))
def _nibble_data(rng, rows):  # rows of few symbols next to random ones: entropies from 0 to 4 bits
    masks = np.array([0x00, 0x01, 0x11, 0x33, 0x0F, 0x77, 0xFF], np.uint8)
    return rng.integers(0, 256, (rows, NB_BYTES), dtype=np.uint8) & masks[rng.integers(0, 7, rows)][:, None]
def _entropy_ref(data, step=1 << 16):
    rows = data.shape[0]
    cnt = np.zeros((rows, 16), np.int64)
    for r0 in range(0, rows, step):  # in chunks of rows: no 4 GB index array at the gpu size
        d = data[r0:r0 + step]
        at = 16 * np.arange(d.shape[0])[:, None]
        cnt[r0:r0 + step] = (np.bincount((at + (d & 15)).reshape(-1), minlength=16 * d.shape[0])
                             + np.bincount((at + (d >> 4)).reshape(-1), minlength=16 * d.shape[0])).reshape(-1, 16)
    p = cnt / (2 * NB_BYTES)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(cnt > 0, p * np.log2(p), 0).sum(axis=1)
def _p_nibble(rows):
    return Plan(*_vec(rows, 128), lambda rng: (_nibble_data(rng, rows), _zeros(rows)),
                lambda a: {1: _entropy_ref(a[0])}, 1e-5, 1e-5, (rows * NB_BYTES, _b(rows)))
TH_SYS = TH_T * TH_BLOCKS
def _thomas_ref(a, b, c, d):
    n = a.shape[0]
    cp, x = np.empty_like(a), np.empty_like(a)
    cp[0], x[0] = c[0] / b[0], d[0] / b[0]
    for i in range(1, n):
        inv = 1.0 / (b[i] - a[i] * cp[i - 1])
        cp[i], x[i] = c[i] * inv, (d[i] - a[i] * x[i - 1]) * inv
    for i in range(n - 2, -1, -1):
        x[i] -= cp[i] * x[i + 1]
    return x
def _p_thomas(n):
    s = (n, TH_SYS)
    def make(rng):
        return (rng.uniform(-1, 1, s), rng.uniform(4, 5, s), rng.uniform(-1, 1, s), rng.uniform(-1, 1, s),
                _zeros(s, np.float64), _zeros(s, np.float64))
    return Plan((TH_BLOCKS,), (TH_T,), make, lambda a: {5: _thomas_ref(*a[:4])}, 1e-10, 1e-12, (_b(s, 8),) * 6)
def _p_i8dot(words):
    def make(rng):
        return (rng.integers(-128, 128, 4 * words, dtype=np.int8).view(np.int32),
                rng.integers(-128, 128, 4 * words, dtype=np.int8).view(np.int32), np.full(1, 7, np.int64))
    def want(a):
        x, y, step = a[0].view(np.int8), a[1].view(np.int8), 1 << 24
        dot = sum(int((x[i:i + step].astype(np.int16) * y[i:i + step]).sum(dtype=np.int64))
                  for i in range(0, x.size, step))  # every product fits int16
        return {2: a[2] + dot}
    return Plan((DG_BLOCKS,), (DG_T,), make, want, 0.0, 0.0, (_b(words), _b(words), 8))
def _i32(rng, shape):  # small integers as int32, built through int8
    return rng.integers(-50, 51, size=shape, dtype=np.int8).astype(np.int32)
def _p_blelloch(n):
    def want(a):
        b = _blocks(a[0], BL_N)
        return {1: (np.cumsum(b, axis=1) - b).reshape(-1)[:n]}
    return Plan((_cdiv(n, BL_N),), (BL_T,), lambda rng: (_i32(rng, n), _zeros(n, np.int32)), want, 0.0, 0.0,
                (_b(n), _b(n)))
def _p_hist64(n):
    def make(rng):  # geometric: bin 0 takes about 15 %, bin 63 the tail
        return np.minimum(rng.geometric(0.15, n) - 1, HW_BINS - 1).astype(np.uint8), _zeros(HW_BINS, np.int32)
    return Plan((_cdiv(n, HW_T * HW_ITEMS),), (HW_T,), make,
                lambda a: {1: a[1] + np.bincount(a[0], minlength=HW_BINS)}, 0.0, 0.0, (n, _b(HW_BINS)))
EB_HOT = 64  # ids a quarter of the rows share
def _p_embed_grad(shape):
    rows, dim = shape
    vocab = max(rows // 4, 7)
    def make(rng):
        ids = rng.integers(0, vocab, rows, dtype=np.int32)
        hot = rng.random(rows) < 0.25
        ids[hot] = rng.integers(0, min(EB_HOT, vocab), int(hot.sum()), dtype=np.int32)
        return _f32(rng, shape), ids, _f32(rng, (vocab, dim))
    def want(a):
        out = a[2].astype(np.float64)
        np.add.at(out, a[1], a[0])
        return {2: out}
    return Plan(*_grid2(shape, (32, 8)), make, want, 0.0, 0.0, (_b(shape), _b(rows), _b((vocab, dim))))
def _p_count(n):
    return Plan(*_vec(n), lambda rng: (_u(rng, n), np.float32(0.5), np.full(1, 3, np.int32)),
                lambda a: {2: a[2] + np.count_nonzero(np.abs(a[0]) > a[1])}, 0.0, 0.0, (_b(n), 4))
def _bloom_ref(keys, words, mask):
    def mul(h, k):
        return (h * k) & 0xFFFFFFFF
    h = keys.astype(np.int64) & 0xFFFFFFFF
    h ^= h >> 16
    h = mul(h, 0x45D9F3B)
    h ^= h >> 16
    h = mul(h, 0x45D9F3B)
    h1 = h ^ (h >> 16)
    h = h1 ^ 0x5BD1E995
    h ^= h >> 15
    h = mul(h, 0x2C1B3C6D)
    h ^= h >> 12
    h = mul(h, 0x297A2D39)
    h2 = (h ^ (h >> 15)) | 1
    out = words.copy()
    for j in range(BLOOM_K):
        bit = (h1 + j * h2) & mask
        np.bitwise_or.at(out, bit >> 5, (np.int64(1) << (bit & 31)).astype(np.uint32))
    return out
def _p_bloom(shape):
    n, log2bits = shape
    w = 1 << (log2bits - 5)
    return Plan(*_vec(n), lambda rng: (rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int32), _zeros(w, np.uint32),
                                       np.int64((1 << log2bits) - 1)),
                lambda a: {1: _bloom_ref(a[0], a[1], int(a[2]))}, 0.0, 0.0, (_b(n), _b(w)))
def _p_unique(n):
    nblk = _cdiv(n, CU_BLOCK)
    def make(rng):  # sorted keys in runs: a new key after one element in three, at random steps
        step = rng.integers(0, 3, n, dtype=np.int8) == 0
        keys = np.cumsum(step * rng.integers(1, 1000, n, dtype=np.int16), dtype=np.int64) - (1 << 40)
        head = np.ones(nblk * CU_BLOCK, np.int32)
        head[n:] = 0
        head[1:n] = keys[1:] != keys[:-1]
        offs = np.zeros(nblk, np.int32)
        np.cumsum(head.reshape(nblk, CU_BLOCK).sum(axis=1)[:-1], out=offs[1:])
        return keys, offs, _zeros(n, np.int64)
    def want(a):
        k = a[0]
        u = k[np.concatenate([[True], k[1:] != k[:-1]])]  # the keys are sorted: their heads are the distinct values
        return {2: np.concatenate([u, np.zeros(n - u.size, np.int64)])}
    return Plan((nblk,), (CU_T,), make, want, 0.0, 0.0, (_b(n, 8), _b(nblk), _b(n, 8)))
def _adler_ref(data, step=4096):
    w = AD_CH - np.arange(AD_CH)
    out = np.empty(data.shape[0], np.int64)
    for c0 in range(0, data.shape[0], step):
        d = data[c0:c0 + step].astype(np.int64)
        out[c0:c0 + step] = (((AD_CH + d @ w) % AD_MOD) << 16) | ((1 + d.sum(axis=1)) % AD_MOD)
    return out
def _p_adler(chunks):
    def make(rng):
        data = rng.integers(0, 256, (chunks, AD_CH), dtype=np.uint8)
        data[::3, ::2] = 255  # chunks with long runs of 0xFF: the sums at their largest
        return data, _zeros(chunks, np.uint32)
    return Plan((chunks,), (AD_T,), make, lambda a: {1: _adler_ref(a[0])}, 0.0, 0.0,
                (chunks * AD_CH, _b(chunks)))
def _p_imatmul(shape):
    m, n, k = shape
    def make(rng):
        return (rng.integers(-128, 128, (m, k), dtype=np.int8), rng.integers(-128, 128, (k, n), dtype=np.int8),
                np.full((m, n), -1, np.int32))
    return Plan((_cdiv(n, IM), _cdiv(m, IM)), (IM, IM_ROWS), make,
                lambda a: {2: a[0].astype(np.float64) @ a[1]}, 0.0, 0.0, (m * k, k * n, _b((m, n))))  # exact
def _p_syrk(shape):
    n, k = shape
    g = _cdiv(n, SY)
    return Plan((g, g), (SY, SY), lambda rng: (_f32(rng, (n, k)), _zeros((n, n))),
                lambda a: {1: np.tril(a[0].astype(np.float64) @ a[0].T)}, 0.0, 0.0, (_b((n, k)), _b((n, n))))
RK_DT, RK_DELTA, RK_BETA = 0.01, 0.2, 1.0
def _rk4_ref(x0, v0, steps):
    p, q = x0.copy(), v0.copy()
    dt, hh, h6 = RK_DT, 0.5 * RK_DT, RK_DT / 6.0
    def acc(x, v):
        return -RK_DELTA * v - x - RK_BETA * x * x * x
    for _ in range(steps):
        a1 = acc(p, q)
        p2, q2 = p + hh * q, q + hh * a1
        a2 = acc(p2, q2)
        p3, q3 = p + hh * q2, q + hh * a2
        a3 = acc(p3, q3)
        p4, q4 = p + dt * q3, q + dt * a3
        a4 = acc(p4, q4)
        p, q = p + h6 * (q + 2.0 * q2 + 2.0 * q3 + q4), q + h6 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
    return p, q
def _p_rk4(shape):
    n, steps = shape
    def make(rng):
        return (rng.uniform(-2, 2, n), rng.uniform(-2, 2, n), _zeros(n, np.float64), _zeros(n, np.float64),
                RK_DT, steps, RK_DELTA, RK_BETA)
    def want(a):
        p, q = _rk4_ref(a[0], a[1], a[5])
        return {2: p, 3: q}
    return Plan(*_vec(n, 128), make, want, 1e-9, 1e-12, (_b(n, 8),) * 4)
_p_bf16_32, _p_bf16_256 = (lambda n: _p_bf16_max(n, 32)), (lambda n: _p_bf16_max(n, 256))
_p_chase_random, _p_chase_local = (lambda c: _p_chase(c, False, 1)), (lambda c: _p_chase(c, True, 1))
_p_chase_ilp4 = lambda c: _p_chase(c, False, 4)  # noqa: E731

#: name -> (kernel, chapter, plan(shape), small shape, gpu shape, what, tags); shape: n, (rows, cols), (z, y, x),
#: (batch, rows, cols), (m, n, k), (n, k), (n, log2 bits) or (n, steps); "2d" marks the kernels tried at awkward
#: shapes, "fixed_grid" a grid that does not grow
SPECS = {
    "adam_step_vec4": (adam_step, 1, _p_adam, 1028, 1 << 24, "4 arrays in, 3 out, 16-byte accesses",
                       ("vector",)),
    "black_scholes": (black_scholes, 1, _p_bs, 1025, 1 << 24, "log, exp, sqrt, 4 erfc in float32", ("sfu",)),
    "warp_argsort32": (warp_argsort32, 2, _p_argsort, 1025, 1 << 25, "bitonic by xor shuffles", ("shuffle", "sort")),
    "ballot_bitpack": (ballot_bitpack, 2, _p_bitpack, 1030, 1 << 26, "a ballot word per warp", ("vote",)),
    "red_black_sweep": (red_black_sweep, 2, _p_red_black, (17, 45), (8192, 8192), "checkerboard, half the lanes idle",
                        ("2d", "divergence", "stencil")),
    "bf16_max_block32": (bf16_max_bits, 3, _p_bf16_32, 1031, 1 << 26, "2-byte bits, blocks of 32",
                         ("bytes", "blocksize")),
    "bf16_max_block256": (bf16_max_bits, 3, _p_bf16_256, 1031, 1 << 26, "2-byte bits, blocks of 256",
                          ("bytes", "blocksize")),
    "particles_aos": (particles_aos, 3, _p_aos, 1025, 1 << 23, "32-byte records", ("aos",)),
    "particles_soa": (particles_soa, 3, _p_soa, 1025, 1 << 23, "eight columns", ("soa",)),
    "gemv32_conflicts": (gemv32_conflicts, 4, _p_gemv32, 21, 1 << 16, "tile rows read by lanes: 32-way",
                         ("banks",)),
    "gemv32_padded": (gemv32_padded, 4, _p_gemv32, 21, 1 << 16, "the tile padded to 33", ("banks",)),
    "gemv32_swizzled": (gemv32_swizzled, 4, _p_gemv32, 21, 1 << 16, "xor-swizzled columns", ("banks",)),
    "heat1d_8steps": (heat1d_8steps, 4, _p_heat, 1500, 1 << 25, "8 steps in shared, temporal blocking",
                      ("stencil",)),
    "box27_march_z": (box27_march_z, 4, _p_box27, (5, 9, 70), (256, 512, 512), "27-point mean, planes in shared",
                      ("2d", "stencil")),
    "oddeven_sort256": (oddeven_sort256, 4, _p_oddeven, 300, 1 << 23, "256 phases, a barrier each", ("sort",)),
    "transpose_swizzled": (transpose_swizzled_batched, 5, _p_transpose, (2, 40, 70), (32, 1024, 2048),
                           "batched, xor-swizzled tile", ("2d", "banks")),
    "chase_random": (chase_one, 6, _p_chase_random, 1025, 1 << 20, "128 dependent loads, one random cycle",
                     ("latency", "gather")),
    "chase_local": (chase_one, 6, _p_chase_local, 1025, 1 << 20, "the same, cycles of 256 entries",
                    ("latency", "gather")),
    "chase_random_ilp4": (chase_four, 6, _p_chase_ilp4, 1025, 1 << 20, "four chains a thread",
                          ("latency", "gather", "ilp")),
    "nibble_entropy_local": (nibble_entropy_local, 6, _p_nibble, 300, 1 << 22, "16 counters, dynamic index",
                             ("local", "sfu")),
    "thomas_2blocks": (thomas_f64, 6, _p_thomas, 37, 2048, "256 serial float64 solves", ("fp64", "fixed_grid")),
    "i8x4_dot_132blocks": (i8x4_dot_gridstride, 6, _p_i8dot, 9000, 1 << 26, "grid-stride, one block per SM",
                           ("int", "gridstride", "fixed_grid")),
    "blelloch_scan": (blelloch_scan, 7, _p_blelloch, 2500, 1 << 25, "up- and down-sweep, offset banks", ("scan",)),
    "hist64_warp_copies": (hist64_warp_copies, 7, _p_hist64, 5000, 1 << 26, "a shared copy per warp",
                           ("atomics",)),
    "embedding_backward": (embedding_backward_atomic, 7, _p_embed_grad, (17, 45), (1 << 18, 128),
                           "float atomics into a 32 MB table, 64 hot rows", ("2d", "atomics", "scatter")),
    "count_over_one_atomic": (count_over_atomic, 7, _p_count, 1025, 1 << 23, "every thread, one word",
                              ("atomics",)),
    "bloom_insert_l2": (bloom_insert, 7, _p_bloom, (1025, 12), (1 << 24, 26), "hashes, atomic or, 8 MB",
                        ("int", "atomics", "l2")),
    "bloom_insert_hbm": (bloom_insert, 7, _p_bloom, (1025, 16), (1 << 23, 32), "the same, 512 MB of bits",
                         ("int", "atomics", "hbm")),
    "compact_unique": (compact_unique, 7, _p_unique, 5000, 1 << 24, "int64 keys, offsets from the host",
                       ("scan", "int")),
    "adler32_chunks": (adler32_chunks, 8, _p_adler, 5, 65536, "a block per 4 KB chunk", ("bytes", "int")),
    "imatmul_i8": (imatmul_i8_tile, 9, _p_imatmul, (40, 70, 50), (2048, 2048, 1024), "int8 in, 32x32 tiles",
                   ("2d", "int", "compute")),
    "syrk_lower": (syrk_lower, 9, _p_syrk, (40, 20), (4096, 512), "a a.T, blocks above the diagonal idle",
                   ("2d", "compute")),
    "rk4_duffing_f64": (rk4_duffing_f64, 10, _p_rk4, (300, 12), (1 << 20, 256), "float64 RK4 chain",
                        ("fp64", "compute")),
}


plan, case, cases = builders(SPECS, "fresh5")

#: Cases of this round taken out of the repository after they were profiled and scored (none yet): name -> why.
RETIRED = {}
