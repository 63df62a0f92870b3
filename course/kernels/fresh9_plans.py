"""Round 9's launches (:mod:`course.kernels.fresh9` holds its kernels): one :class:`Plan` per case — grid, block, the
arrays made from the rng, the NumPy answer, tolerances and each array's bytes — the ``SPECS`` table, and
``plan``/``case``/``cases`` built from it (:func:`course.kernels.fresh_plans.builders`); ``RETIRED`` lists the cases
taken out after they were scored.  ``cases(scale)``: H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``).
Their author ran nothing on a GPU: the gpu sizes come from the bytes and the work of each launch.
"""

from __future__ import annotations

import math

import numpy as np

from course.kernels.cases import At
from course.kernels.fresh_plans import Plan, builders
from course.kernels.fresh_plans import cdiv as _cdiv
from course.kernels.fresh_plans import f32 as _f32
from course.kernels.fresh_plans import nbytes as _b
from course.kernels.fresh_plans import uniform as _u
from course.kernels.fresh_plans import vec as _vec
from course.kernels.fresh_plans import zeros as _zeros
from course.kernels.fresh9 import (
    AP_SEGS, CO_ATAN, CO_K, CO_STEPS, DC, DC_W, DG, GM_K, GS_RATE, HE_N, HE_T, HG_K, HG_MULT, HG_SHIFT, L1_BLOCKS,
    L1_T, MLP_H, MLP_IN, MM_FACTORS, MM_P, MS_N, MS_T, SM_GAMMA, SM_M1, SM_M2, SM_S1, SM_S2, SM_S3, SR_N, SR_READS,
    SR_T, TD, TL_T, WM_W, argmax_packed_u64, byteswap_u32, cas_mulmod_i32, column_window_max8_local,
    cordic_sincos_q30, dct8x8_shared, dgemm_tile16_f64, divmod_i32, ell_spmv_f32, gauss_mix8_logpdf,
    geometric_steps, hash_gather4, hist_equalize_tiles, l1norm_i16_264blocks, minmax_scale_shared, pow_scaled_f64,
    quat_rotate_f32x4, rotate90_u16_tiled, scatter_min_i32, shared_reads_strided, soa_to_aos3_f32,
    splitmix64_fill, sum_positive_one_address, tiny_mlp_tanh, transpose_diagonal_f32, tri_lower_matvec_warp,
    u8_column_stats, warp_majority_ballot, warp_rotate_by_data, warp_xor_scan_u32)


def _grid2(shape, block):  # a 2-D grid over (rows, cols), x along the columns
    return (_cdiv(shape[1], block[0]), _cdiv(shape[0], block[1])), block


def _u32(rng, n):
    return rng.integers(0, 1 << 32, n, dtype=np.uint32, endpoint=False)


AT_FROM, AT_SAMPLE = 1 << 20, 1 << 18  # past a million elements, references only at about 2^18 places
def _sample(n):
    """The flat places a reference is computed at: every place for small n, else both ends and random ones."""
    if n <= AT_FROM:
        return None
    r = np.random.default_rng(n).integers(0, n, AT_SAMPLE)
    return np.unique(np.concatenate([np.arange(4096), np.arange(n - 4096, n), r]))
def _at(flat, values):
    return values if flat is None else At(flat, values)


# --- elementwise
def _p_byteswap(n):
    return Plan(*_vec(n), lambda rng: (_u32(rng, n), np.zeros(n, np.uint32)), lambda a: {1: a[0].byteswap()},
                0.0, 0.0, (_b(n), _b(n)))
def _p_divmod(n):
    def make(rng):
        a = rng.integers(0, 1 << 31, n, dtype=np.int32, endpoint=False)
        b = rng.integers(1, 1000, n, dtype=np.int32)
        b[::11] = rng.integers(1, 1 << 31, b[::11].size, dtype=np.int32, endpoint=False)  # some large divisors
        return a, b, np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    def want(a):
        return {2: a[0] // a[1], 3: a[0] % a[1]}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n),) * 4)
def _p_pow(n):
    def make(rng):
        return rng.uniform(0.01, 10.0, n), rng.uniform(-3.0, 3.0, n), _zeros(n, np.float64)
    return Plan(*_vec(n), make, lambda a: {2: np.power(a[0], a[1]) / (1.0 + a[0])}, 1e-14, 0.0,
                (_b(n, 8), _b(n, 8), _b(n, 8)))
def _p_quat(n):
    s = (n, 4)
    def make(rng):
        q = _u(rng, s)
        q /= np.sqrt((q * q).sum(axis=1, keepdims=True))
        return q, _u(rng, s, -4.0, 4.0), _zeros(s)
    def want(a):
        flat = _sample(n)
        q, v = (x.astype(np.float64) if flat is None else x[flat].astype(np.float64) for x in a[:2])
        w, (qx, qy, qz), (vx, vy, vz) = q[:, 0], q[:, 1:].T, v[:, :3].T
        tx, ty, tz = 2 * (qy * vz - qz * vy), 2 * (qz * vx - qx * vz), 2 * (qx * vy - qy * vx)
        out = v.copy()
        out[:, 0] = vx + w * tx + (qy * tz - qz * ty)
        out[:, 1] = vy + w * ty + (qz * tx - qx * tz)
        out[:, 2] = vz + w * tz + (qx * ty - qy * tx)
        if flat is None:
            return {2: out}
        return {2: At((flat[:, None] * 4 + np.arange(4)).reshape(-1), out.reshape(-1))}
    return Plan(*_vec(n), make, want, 1e-5, 1e-5, (_b(s), _b(s), _b(s)))
SM_SEED = np.uint64(0x243F6A8885A308D3)
def _splitmix_ref(n, seed=SM_SEED):
    z = seed + (np.arange(1, n + 1, dtype=np.uint64) * SM_GAMMA)
    z = (z ^ (z >> SM_S1)) * SM_M1
    z = (z ^ (z >> SM_S2)) * SM_M2
    return z ^ (z >> SM_S3)
def _p_splitmix(n):
    def want(a):  # the halves: float64 holds each exactly
        z = _splitmix_ref(n)
        out = np.empty((n, 2), np.uint32)
        out[:, 0] = z  # the low half
        out[:, 1] = z >> np.uint64(32)
        return {1: out}
    return Plan(*_vec(n), lambda rng: (SM_SEED, np.zeros((n, 2), np.uint32)), want, 0.0, 0.0, (_b((n, 2)),))


# --- warps
def _warps(a, fill=0):  # a padded to whole warps, one a row
    p = np.full(_cdiv(a.size, 32) * 32, fill, a.dtype)
    p[:a.size] = a
    return p.reshape(-1, 32)
def _p_xor_scan(n):
    return Plan(*_vec(n), lambda rng: (_u32(rng, n), np.zeros(n, np.uint32)),
                lambda a: {1: np.bitwise_xor.accumulate(_warps(a[0]), axis=1).reshape(-1)[:n]}, 0.0, 0.0,
                (_b(n), _b(n)))
def _p_rotate(n):
    def make(rng):
        return _f32(rng, n), rng.integers(0, 32, _cdiv(n, 32), dtype=np.uint8), _zeros(n)
    def want(a):
        x = _warps(a[0])
        j = (np.arange(32)[None, :] + a[1][:, None].astype(np.int64)) & 31
        return {2: (2 * np.take_along_axis(x, j, axis=1) + x).reshape(-1)[:n]}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _cdiv(n, 32), _b(n)))
MJ_T = 0.0
def _p_majority(n):
    def make(rng):
        x = _u(rng, n)
        x += np.repeat(_u(rng, _cdiv(n, 32), -0.3, 0.3), 32)[:n]  # warps leaning either way
        return x, np.float32(MJ_T), np.zeros(n, np.int32)
    def want(a):
        f = _warps(a[0] > MJ_T, False)
        c = f.sum(axis=1)
        m = np.minimum(32, n - 32 * np.arange(f.shape[0]))
        return {2: np.repeat(np.where(2 * c > m, c, -c), 32)[:n]}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(n)))


# --- access patterns
def _p_soa_to_aos(n):
    return Plan(*_vec(n), lambda rng: (_u(rng, n), _u(rng, n), _u(rng, n), np.full((n, 3), np.nan, np.float32)),
                lambda a: {3: np.stack(a[:3], axis=1)}, 0.0, 0.0, (_b(n), _b(n), _b(n), _b((n, 3))))
def _p_hash_gather(shape):
    m, n = shape
    assert m & (m - 1) == 0
    def want(a):
        acc = np.zeros(n, np.float32)
        base = np.arange(n, dtype=np.int64) * HG_K
        for k in range(HG_K):
            acc += a[0][((base + k) * HG_MULT >> HG_SHIFT) & (m - 1)]
        return {1: acc}
    return Plan(*_vec(n), lambda rng: (_f32(rng, m), _zeros(n)), want, 0.0, 0.0, (_b(m), _b(n)))
def _p_column_stats(shape):
    rows, cols = shape
    def make(rng):
        img = rng.integers(0, 200, shape, dtype=np.uint8)
        img[rows // 2, ::3] = 255
        return img, np.full(cols, -1, np.int32), np.zeros(cols, np.uint8)
    def want(a):
        return {1: a[0].sum(axis=0, dtype=np.int64), 2: a[0].max(axis=0)}
    return Plan(*_vec(cols), make, want, 0.0, 0.0, (_b(shape, 1), _b(cols), cols))
EL_SLOTS = 16
def _p_ell(shape):
    rows, m = shape  # rows of A, length of x
    s = (EL_SLOTS, rows)
    def make(rng):
        cols = rng.integers(0, m, s, dtype=np.int32)
        length = rng.integers(0, EL_SLOTS + 1, rows, dtype=np.int8)
        np.copyto(cols, -1, where=np.arange(EL_SLOTS, dtype=np.int8)[:, None] >= length[None, :])
        return cols, _f32(rng, s), _f32(rng, m), np.full(rows, np.nan, np.float32)
    def want(a):  # integer values: every sum is exact in float32
        acc = np.zeros(rows, np.float32)
        for k in range(EL_SLOTS):
            c = a[0][k]
            acc += np.where(c >= 0, a[1][k] * a[2][np.maximum(c, 0)], np.float32(0))
        return {3: acc}
    return Plan(*_vec(rows), make, want, 0.0, 0.0, (_b(s), _b(s), _b(m), _b(rows)))


# --- shared memory
def _p_hist_eq(n):
    def make(rng):
        img = rng.integers(0, 256, n, dtype=np.uint8)
        img[::2] = img[::2] // 4 + 96  # a bunched histogram
        return img, np.full(n, 7, np.uint8)
    def want(a):
        tiles = _cdiv(n, HE_N)
        key = np.arange(n, dtype=np.int32) // HE_N * 256 + a[0]  # tile · 256 + value
        cdf = np.cumsum(np.bincount(key, minlength=tiles * 256).reshape(tiles, 256), axis=1).reshape(-1)
        flat = _sample(n)
        at = slice(None) if flat is None else flat
        m = np.minimum(HE_N, n - HE_N * (np.arange(n)[at] // HE_N))
        return {1: _at(flat, cdf[key[at]] * 255 // m)}
    return Plan((_cdiv(n, HE_N),), (HE_T,), make, want, 0.0, 0.0, (n, n))
def _dct_matrix():
    k, j = np.mgrid[0:DC, 0:DC]
    c = np.sqrt(2.0 / DC) * np.cos(np.pi * (2 * j + 1) * k / (2 * DC))
    c[0] /= np.sqrt(2.0)
    return c
def _dct_ref(img):
    h, w = img.shape
    p = np.zeros((_cdiv(h, DC) * DC, _cdiv(w, DC) * DC))
    p[:h, :w] = img
    c = _dct_matrix()
    rows = (p.reshape(-1, DC) @ c.T).reshape(p.shape[0] // DC, DC, p.shape[1])  # T·Cᵀ along each tile's rows
    return (c @ rows).reshape(p.shape)[:h, :w]  # then C· down each tile's columns
def _p_dct(shape):
    return Plan(*_grid2(shape, (DC_W, DC)),
                lambda rng: (_f32(rng, shape), _dct_matrix().astype(np.float32), np.full(shape, np.nan, np.float32)),
                lambda a: {2: _dct_ref(a[0])}, 1e-5, 2e-3, (_b(shape), _b((DC, DC)), _b(shape)))
def _p_shared_reads(stride):
    def p(n):  # n outputs, 4n inputs
        nx = n * (SR_N // SR_T)
        def want(a):
            xs = np.zeros(_cdiv(nx, SR_N) * SR_N, np.float32)
            xs[:nx] = a[0]
            xs = xs.reshape(-1, SR_N)
            t = np.arange(SR_T)
            acc = np.zeros((xs.shape[0], SR_T), np.float32)
            for k in range(SR_READS):  # integer values: exact in any order
                acc += xs[:, (t * stride + k) & (SR_N - 1)]
            return {1: acc.reshape(-1)[:n]}
        return Plan((_cdiv(n, SR_T),), (SR_T,), lambda rng: (_f32(rng, nx), _zeros(n), stride), want, 0.0, 0.0,
                    (_b(nx), _b(n)))
    return p


# --- transpose
def _p_transpose_diag(shape):
    rows, cols = shape
    return Plan((_cdiv(cols, TD), _cdiv(rows, TD)), (TD, 8),
                lambda rng: (_f32(rng, shape), np.full((cols, rows), np.nan, np.float32)),
                lambda a: {1: a[0].T}, 0.0, 0.0, (_b(shape), _b((cols, rows))))
def _p_rotate90(shape):
    rows, cols = shape
    return Plan((_cdiv(cols, TD), _cdiv(rows, TD)), (TD, 8),
                lambda rng: (rng.integers(0, 1 << 16, shape, dtype=np.uint16), np.zeros((cols, rows), np.uint16)),
                lambda a: {1: np.rot90(a[0], -1)}, 0.0, 0.0, (_b(shape, 2), _b((cols, rows), 2)))


# --- latency and occupancy
GS_TOP = 20  # inputs up to 2^20: at most 49 steps
def _geometric_ref(x):
    v = x.copy()
    k = np.zeros(x.size, np.int32)
    live = np.flatnonzero(v > 1)
    while live.size:  # only the elements still above 1 each round
        v[live] *= np.float32(GS_RATE)
        k[live] += 1
        live = live[v[live] > 1]
    return k, v
def _p_geometric(order):
    def p(n):
        def make(rng):
            x = np.exp2(rng.random(n, dtype=np.float32) * np.float32(GS_TOP))
            x[:3] = (0.5, 1.0, np.float32(2.0 ** GS_TOP))
            if order == "sorted":
                x.sort()
            return x, np.full(n, -1, np.int32), np.full(n, np.nan, np.float32)
        def want(a):
            k, v = _geometric_ref(a[0])
            return {1: k, 2: v}
        return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(n), _b(n)))
    return p
def _p_l1norm(n):
    def make(rng):
        x = rng.integers(-32768, 32768, n, dtype=np.int16)
        x[:2] = (-32768, 32767)
        return x, np.full(1, 3, np.int64)
    def want(a):
        s = sum(int(np.abs(a[0][j:j + (1 << 22)].astype(np.int32)).sum(dtype=np.int64)) for j in range(0, n, 1 << 22))
        return {1: a[1] + s}
    return Plan((L1_BLOCKS,), (L1_T,), make, want, 0.0, 0.0, (_b(n, 2), 8))
def _p_minmax(n):
    def make(rng):
        x = _f32(rng, n)
        x *= np.float32(0.1)
        x[MS_N:2 * MS_N] = 1.5  # a constant run
        return x, np.full(n, np.nan, np.float32)
    def want(a):
        runs = _cdiv(n, MS_N)
        p = np.full(runs * MS_N, np.nan, np.float32)
        p[:n] = a[0]
        p = p.reshape(runs, MS_N)
        mn, mx = np.nanmin(p, axis=1, keepdims=True), np.nanmax(p, axis=1, keepdims=True)
        span = mx - mn
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(span > 0, (p - mn) / span, np.float32(0))
        return {1: out.reshape(-1)[:n]}
    return Plan((_cdiv(n, MS_N),), (MS_T,), make, want, 1e-6, 1e-7, (_b(n), _b(n)))
def _p_window_max(shape):
    n, steps = shape
    s = (steps, n)
    def want(a):
        out = a[0].copy()
        for d in range(1, WM_W):
            np.maximum(out[d:], a[0][:-d], out=out[d:])
        return {1: out}
    return Plan(*_vec(n), lambda rng: (_u(rng, s), np.full(s, np.nan, np.float32)), want, 0.0, 0.0, (_b(s), _b(s)))
def _p_mlp(n):
    s = (n, MLP_IN)
    def make(rng):
        return (_u(rng, s, -2.0, 2.0), _u(rng, (MLP_H, MLP_IN), -0.5, 0.5), _u(rng, MLP_H, -0.5, 0.5),
                _u(rng, MLP_H), _u(rng, 1), _zeros(n))
    def want(a):
        flat = _sample(n)
        x = a[0] if flat is None else a[0][flat]
        x, w1, b1, w2, b2 = (v.astype(np.float64) for v in (x,) + a[1:5])
        return {5: _at(flat, np.tanh(x @ w1.T + b1) @ w2 + b2[0])}
    return Plan(*_vec(n), make, want, 1e-5, 2e-5, (_b(s), _b((MLP_H, MLP_IN)), _b(MLP_H), _b(MLP_H), 4, _b(n)))


# --- atomics
def _p_sum_positive(n):
    def make(rng):
        return rng.integers(-50, 51, n, dtype=np.int32), np.array([7, 2], np.int32)
    def want(a):
        pos = a[0] > 0
        return {1: a[1] + np.array([a[0][pos].sum(dtype=np.int64), pos.sum()])}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), 8))
AP_KEYS = 1 << 20
def _p_argmax_packed(n):
    def make(rng):
        k = rng.integers(0, AP_KEYS, n, dtype=np.uint32)  # packed below 2⁵²: float64 checks hold them exactly
        k[5::AP_SEGS * 3] = AP_KEYS - 1  # ties on the largest key: the last index wins
        return k, np.zeros(AP_SEGS, np.uint64)
    def want(a):
        packed = np.zeros(_cdiv(n, AP_SEGS) * AP_SEGS, np.uint64)
        packed[:n] = (a[0].astype(np.uint64) << np.uint64(32)) | np.arange(n, dtype=np.uint64)
        return {1: np.maximum(a[1], packed.reshape(-1, AP_SEGS).max(axis=0))}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(AP_SEGS, 8)))
SMIN_INIT = 1 << 30
def _p_scatter_min(shape):
    m, n = shape
    def make(rng):
        return (rng.integers(0, m, n, dtype=np.int32), rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int32),
                np.full(m, SMIN_INIT, np.int32))
    def want(a):
        out = a[2].copy()
        np.minimum.at(out, a[0], a[1])
        return {2: out}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(n), _b(m)))
def _powmod(base, e):  # base^e mod P elementwise, int64 (below 2³¹ each, products below 2⁶²)
    r = np.ones(e.shape, np.int64)
    b = np.broadcast_to(np.int64(base), e.shape).copy()
    e = e.copy()
    while e.any():
        r = np.where(e & 1, r * b % MM_P, r)
        b = b * b % MM_P
        e >>= 1
    return r
def _p_cas_mulmod(shape):
    m, n = shape
    def make(rng):
        keys = rng.integers(0, m, n, dtype=np.int32)  # about n / m updates an address, many at once
        return keys, rng.integers(1, MM_P, m, dtype=np.int32)
    def want(a):
        g = np.arange(n, dtype=np.int64) % MM_FACTORS
        out = a[1].astype(np.int64)
        for f in range(MM_FACTORS):
            cnt = np.bincount(a[0][g == f], minlength=m).astype(np.int64)
            out = out * _powmod(2 + f, cnt) % MM_P
        return {1: out}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(m)))


# --- matmul
def _p_tri_matvec(n):
    def make(rng):  # products below 150, sums below 2^24: exact in float32 in any order
        return _f32(rng, (n, n)), rng.integers(-3, 4, n, dtype=np.int8).astype(np.float32), np.full(n, np.nan,
                                                                                                 np.float32)
    def want(a):
        return {2: np.tril(a[0]) @ a[1]}
    return Plan((_cdiv(n, TL_T // 32),), (TL_T,), make, want, 0.0, 0.0, (_b((n, n)), _b(n), _b(n)))
def _p_dgemm(shape):
    m, n, k = shape
    def make(rng):
        return _f32(rng, (m, k)).astype(np.float64), _f32(rng, (k, n)).astype(np.float64), _zeros((m, n), np.float64)
    return Plan(*_grid2((m, n), (DG, DG)), make, lambda a: {2: a[0] @ a[1]}, 0.0, 0.0,
                (_b((m, k), 8), _b((k, n), 8), _b((m, n), 8)))


# --- special functions
def _cordic_ref(theta):
    z = theta.astype(np.int64)
    x = np.full(z.shape, CO_K, np.int64)
    y = np.zeros(z.shape, np.int64)
    for k in range(CO_STEPS):
        up = z >= 0
        dx, dy = y >> k, x >> k
        x, y = np.where(up, x - dx, x + dx), np.where(up, y + dy, y - dy)
        z = np.where(up, z - CO_ATAN[k], z + CO_ATAN[k])
    return x, y
def _p_cordic(n):
    def make(rng):
        th = (rng.uniform(-math.pi / 2, math.pi / 2, n) * (1 << 30)).astype(np.int32)
        th[:3] = (0, int(math.pi / 2 * (1 << 30)), -int(math.pi / 2 * (1 << 30)))
        return th, np.zeros(n, np.int32), np.zeros(n, np.int32)
    def want(a):
        flat = _sample(n)
        x, y = _cordic_ref(a[0] if flat is None else a[0][flat])
        return {1: _at(flat, x), 2: _at(flat, y)}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n),) * 3)
def _p_gauss_mix(n):
    def make(rng):
        mu = np.sort(_u(rng, GM_K, -4.0, 4.0))
        return _u(rng, n, -6.0, 6.0), mu, _u(rng, GM_K, 0.5, 3.0), np.log(_u(rng, GM_K, 0.05, 1.0)), _zeros(n)
    def want(a):
        flat = _sample(n)
        x = a[0] if flat is None else a[0][flat]
        x, mu, isig, lw = (v.astype(np.float64) for v in (x,) + a[1:4])
        e = lw[None, :] - 0.5 * ((x[:, None] - mu[None, :]) * isig[None, :]) ** 2
        top = e.max(axis=1)
        return {4: _at(flat, top + np.log(np.exp(e - top[:, None]).sum(axis=1)))}
    return Plan(*_vec(n), make, want, 2e-6, 2e-5, (_b(n), _b(GM_K), _b(GM_K), _b(GM_K), _b(n)))


_p_gather_l2 = _p_gather_hbm = _p_hash_gather
_p_reads_s1, _p_reads_s32 = _p_shared_reads(1), _p_shared_reads(32)
_p_steps_random, _p_steps_sorted = _p_geometric("random"), _p_geometric("sorted")

#: name -> (kernel, chapter, plan(shape), small shape, gpu shape, what, tags); shape: n, (rows, cols), (m, n) of a
#: table or address count and a length, (rows, length of x), (n, steps) or (m, n, k); "2d" marks the kernels tried
#: at awkward shapes, "fixed_grid" a grid that does not grow
SPECS = {
    "byteswap_u32": (byteswap_u32, 1, _p_byteswap, 1025, 1 << 26, "uint32 byte reversal, shifts and masks",
                     ("stream", "int", "bits")),
    "divmod_i32": (divmod_i32, 1, _p_divmod, 1025, 1 << 25, "an int32 quotient and remainder", ("int",)),
    "pow_scaled_f64": (pow_scaled_f64, 1, _p_pow, 1025, 1 << 24, "float64 pow and a divide", ("fp64", "sfu")),
    "quat_rotate_f32x4": (quat_rotate_f32x4, 1, _p_quat, 1025, 1 << 23, "16-byte vectors rotated by quaternions",
                          ("stream", "vector")),
    "splitmix64_fill": (splitmix64_fill, 1, _p_splitmix, 1025, 1 << 25, "64-bit multiplies, stores only",
                        ("int", "store")),
    "warp_xor_scan_u32": (warp_xor_scan_u32, 2, _p_xor_scan, 1030, 1 << 26, "five shfl_up_sync steps",
                          ("shuffle", "scan")),
    "warp_rotate_by_data": (warp_rotate_by_data, 2, _p_rotate, 1030, 1 << 26, "shfl_sync from a lane in the data",
                            ("shuffle",)),
    "warp_majority_ballot": (warp_majority_ballot, 2, _p_majority, 1030, 1 << 26, "ballot and popc a warp",
                             ("vote",)),
    "soa_to_aos3_f32": (soa_to_aos3_f32, 3, _p_soa_to_aos, 1025, 1 << 25, "three arrays into 12-byte records",
                        ("aos", "stream")),
    "hash_gather4_l2": (hash_gather4, 3, _p_gather_l2, (1 << 10, 1025), (1 << 22, 1 << 24),
                        "4 hashed loads in a 16 MB table", ("gather", "l2")),
    "hash_gather4_hbm": (hash_gather4, 3, _p_gather_hbm, (1 << 13, 1025), (1 << 27, 1 << 24),
                         "4 hashed loads in a 512 MB table", ("gather", "hbm")),
    "u8_column_stats": (u8_column_stats, 3, _p_column_stats, (37, 300), (1024, 1 << 16),
                        "a thread a byte column, 32 bytes a warp a row", ("bytes", "stream")),
    "ell_spmv_f32": (ell_spmv_f32, 3, _p_ell, (300, 200), (1 << 22, 1 << 22), "16 ELL slots, gathers of x",
                     ("gather", "sparse")),
    "hist_equalize_tiles": (hist_equalize_tiles, 4, _p_hist_eq, 5000, 1 << 26, "shared atomics, a scan, a lookup",
                            ("atomics", "scan", "bytes")),
    "dct8x8_shared": (dct8x8_shared, 4, _p_dct, (20, 45), (8192, 8192), "two passes of 8 FMAs through shared tiles",
                      ("2d", "compute")),
    "shared_reads_stride1": (shared_reads_strided, 4, _p_reads_s1, 700, 1 << 23, "32 shared reads, no conflict",
                             ("banks",)),
    "shared_reads_stride32": (shared_reads_strided, 4, _p_reads_s32, 700, 1 << 23, "the same, 32-way conflicts",
                              ("banks",)),
    "transpose_diagonal_f32": (transpose_diagonal_f32, 5, _p_transpose_diag, (40, 70), (8192, 8192),
                               "a padded tile, blocks along diagonals", ("2d",)),
    "rotate90_u16_tiled": (rotate90_u16_tiled, 5, _p_rotate90, (40, 70), (8192, 16384), "uint16 turned 90°",
                           ("2d", "bytes")),
    "geometric_steps_random": (geometric_steps, 6, _p_steps_random, 1025, 1 << 23, "0–49 trips a lane, mixed",
                               ("divergence", "latency")),
    "geometric_steps_sorted": (geometric_steps, 6, _p_steps_sorted, 1025, 1 << 23, "the same, sorted inputs",
                               ("divergence", "latency")),
    "l1norm_i16_264blocks": (l1norm_i16_264blocks, 6, _p_l1norm, 3000, 1 << 24, "grid-stride on 264 blocks of 64",
                             ("fixed_grid", "atomics")),
    "minmax_scale_shared": (minmax_scale_shared, 6, _p_minmax, 13000, 1 << 26, "47 KB of shared memory a block",
                            ("occupancy", "shared")),
    "column_window_max8_local": (column_window_max8_local, 6, _p_window_max, (300, 20), (1 << 18, 256),
                                 "a ring of 8 floats in local memory", ("local",)),
    "tiny_mlp_tanh": (tiny_mlp_tanh, 6, _p_mlp, 1025, 1 << 24, "8–16–1 network, 16 tanh a thread",
                      ("registers", "sfu")),
    "sum_positive_one_address": (sum_positive_one_address, 7, _p_sum_positive, 1025, 1 << 22,
                                 "int32 atomics on two words", ("atomics",)),
    "argmax_packed_u64": (argmax_packed_u64, 7, _p_argmax_packed, 1025, 1 << 24, "uint64 atomic max, 64 addresses",
                          ("atomics",)),
    "scatter_min_i32": (scatter_min_i32, 7, _p_scatter_min, (500, 1025), (1 << 20, 1 << 24),
                        "int32 atomic min at random addresses", ("atomics", "scatter")),
    "cas_mulmod_i32": (cas_mulmod_i32, 7, _p_cas_mulmod, (64, 1025), (1 << 14, 1 << 21),
                       "CAS loops, 128 updates an address", ("atomics", "cas")),
    "tri_lower_matvec_warp": (tri_lower_matvec_warp, 9, _p_tri_matvec, 77, 8192, "a warp a row of tril(A)",
                              ("matvec", "imbalance")),
    "dgemm_tile16_f64": (dgemm_tile16_f64, 9, _p_dgemm, (40, 35, 20), (1536, 1536, 1536), "float64 16 × 16 tiles",
                         ("2d", "fp64", "compute")),
    "cordic_sincos_q30": (cordic_sincos_q30, 10, _p_cordic, 1025, 1 << 23, "24 shift-and-add rotations",
                          ("int", "latency")),
    "gauss_mix8_logpdf": (gauss_mix8_logpdf, 10, _p_gauss_mix, 1025, 1 << 24, "8 exp and a log a thread",
                          ("sfu",)),
}


plan, case, cases = builders(SPECS, "fresh9")

#: Cases of this round taken out of the repository after they were profiled and scored (none yet): name -> why.
RETIRED = {}
