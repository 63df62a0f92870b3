"""Round 6's launches (:mod:`course.kernels.fresh6` holds its kernels): one :class:`Plan` per case — grid, block, the
arrays made from the rng, the NumPy answer, tolerances and each array's bytes — the ``SPECS`` table, and
``plan``/``case``/``cases`` built from it (:func:`course.kernels.fresh_plans.builders`); ``RETIRED`` lists the cases
taken out after they were scored.  ``cases(scale)``: H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``).
Their author ran nothing on a GPU: the gpu sizes come from the bytes and the work of each launch.
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
from course.kernels.fresh6 import (
    BM8_PER, CR_WORDS, CT, CT_ROWS, FT_N, FT_T, HM_DB, HM_T, NH_T, NH_WORDS, NM_ITEMS, NM_T, PI_MAX, PI_T, RK_T,
    RS_T, SB_X, SB_Y, SG_BM, SG_BN, SG_T, TK_K, WF_T, bessel_j0_f32, bilinear_fixed16, binary_gcd,
    binomial5_sep_shared, bmm8x8_f64, conj_transpose_padded, crc32_chunks, ema_series_in_columns, ema_series_in_rows,
    fft256_shared, hamming_nearest, joint_hist_u8, lanes_add_one_word, lower_bound_search, morton3_u16,
    nibble_hist_bin_major, nibble_hist_tid_major, norms_l1_l2_max, power_iteration_1block, quantize_u8,
    radix_sort256_ballot, rank_sort256, run_pos_ballot, sgemm_col8, top8_local, transpose_u8_4x4, unpack12_samples,
    warp_mode_match, wave13_3d, welford_rows_f64, xorshift_fill)


def _grid2(shape, block):  # a 2-D grid over (rows, cols), x along the columns
    return (_cdiv(shape[1], block[0]), _cdiv(shape[0], block[1])), block


# --- elementwise
QZ_SCALE, QZ_ZERO = 64.0, 128.0
def _p_quantize(n):
    def want(a):
        v = np.clip(a[0].astype(np.float64) * QZ_SCALE + QZ_ZERO, 0, 255)
        return {1: np.floor(v + 0.5)}
    return Plan(*_vec(n), lambda rng: (_u(rng, n, -2.5, 2.5), _zeros(n, np.uint8), np.float32(QZ_SCALE),
                                       np.float32(QZ_ZERO)), want, 0.0, 0.0, (_b(n), n), 1e-3)  # a half may round
XS_SEED = 0x2545F491
def _xorshift_ref(n, seed):
    s = ((np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B9) + np.uint64(seed)) & np.uint64(0xFFFFFFFF))
    s = s.astype(np.uint32) | np.uint32(1)
    out = np.empty((8, n), np.uint32)
    for k in range(8):
        s ^= s << np.uint32(13)
        s ^= s >> np.uint32(17)
        s ^= s << np.uint32(5)
        out[k] = s
    return out.reshape(-1)
def _p_xorshift(n):
    return Plan(*_vec(n), lambda rng: (_zeros(8 * n, np.uint32), XS_SEED + int(rng.integers(0, 1 << 20))),
                lambda a: {0: _xorshift_ref(n, a[1])}, 0.0, 0.0, (_b(8 * n),))
def _spread3(v):
    v = v.astype(np.int64)
    out = np.zeros_like(v)
    for bit in range(10):
        out |= ((v >> bit) & 1) << (3 * bit)
    return out
def _p_morton(n, tpb):
    def make(rng):
        return tuple(rng.integers(0, 1024, n, dtype=np.uint16) for _ in range(3)) + (_zeros(n, np.uint32),)
    return Plan(*_vec(n, tpb), make, lambda a: {3: _spread3(a[0]) | _spread3(a[1]) << 1 | _spread3(a[2]) << 2},
                0.0, 0.0, (_b(n, 2),) * 3 + (_b(n),))


# --- warps
def _p_run_pos(n):
    def make(rng):  # runs of one to a dozen equal values
        return (np.cumsum(rng.integers(0, 10, n, dtype=np.int8) < 3, dtype=np.int32) % 4, np.full(n, -1, np.int32))
    def want(a):
        x, i = a[0], np.arange(n)
        head = (i % 32 == 0) | np.concatenate([[True], x[1:] != x[:-1]])
        return {1: i - np.maximum.accumulate(np.where(head, i, 0))}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(n)))
def _p_mode(n):
    w = _cdiv(n, 32)
    def make(rng):  # the smaller of two draws from 0..7: low values more often, ties common
        x = np.minimum(rng.integers(0, 8, n, dtype=np.int8), rng.integers(0, 8, n, dtype=np.int8)).astype(np.int32)
        return x, np.full(w, -1, np.int32), np.full(w, -1, np.int32)
    def want(a):
        cnt = np.bincount(8 * (np.arange(n) // 32) + a[0], minlength=8 * w).reshape(w, 8)
        return {1: cnt.argmax(axis=1), 2: cnt.max(axis=1)}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(w), _b(w)))
def _p_gcd(n):
    def make(rng):
        a = rng.integers(1, 1 << 31, n, dtype=np.int32)
        b = rng.integers(1, 1 << 31, n, dtype=np.int32)
        k = a[::5].size  # a fifth of the pairs with a large common factor
        c = rng.integers(1, 1 << 15, k, dtype=np.int32)
        a[::5], b[::5] = c * rng.integers(1, 1 << 16, k, dtype=np.int32), c * rng.integers(1, 1 << 16, k, dtype=np.int32)
        return a, b, np.full(n, -1, np.int32)
    return Plan(*_vec(n), make, lambda a: {2: np.gcd(a[0], a[1])}, 0.0, 0.0, (_b(n),) * 3)
def _p_radix(n):
    def want(a):
        return {1: np.sort(_blocks(a[0], RS_T, 65535), axis=1).reshape(-1)[:n]}
    return Plan((_cdiv(n, RS_T),), (RS_T,), lambda rng: (rng.integers(0, 65536, n, dtype=np.int32),
                                                         np.full(n, -1, np.int32)), want, 0.0, 0.0, (_b(n), _b(n)))


# --- access patterns
EMA_ALPHA = 0.125
def _ema_ref(x):  # along axis 0
    y = np.empty(x.shape)
    m = x[0].astype(np.float64)
    y[0] = m
    for t in range(1, x.shape[0]):
        m = m + EMA_ALPHA * (x[t] - m)
        y[t] = m
    return y
def _p_ema_cols(shape):  # shape: (steps, series)
    return Plan(*_vec(shape[1]), lambda rng: (_f32(rng, shape), _zeros(shape), np.float32(EMA_ALPHA)),
                lambda a: {1: _ema_ref(a[0])}, 1e-5, 1e-4, (_b(shape), _b(shape)))
def _p_ema_rows(shape):  # shape: (series, steps)
    return Plan(*_vec(shape[0]), lambda rng: (_f32(rng, shape), _zeros(shape), np.float32(EMA_ALPHA)),
                lambda a: {1: _ema_ref(a[0].T).T}, 1e-5, 1e-4, (_b(shape), _b(shape)))
BI_ANGLE, BI_SCALE = 0.2, 1.1
def _bilinear_params(shape):
    h, w = shape
    ch, cw = (h - 1) / 2, (w - 1) / 2
    co, si = BI_SCALE * math.cos(BI_ANGLE), BI_SCALE * math.sin(BI_ANGLE)
    fx = 1 << 16
    return (round(fx * co), round(-fx * si), round(fx * (cw - co * cw + si * ch)),
            round(fx * si), round(fx * co), round(fx * (ch - si * cw - co * ch)))
def _bilinear_ref(src, ax, bx, cx, ay, by, cy):
    h, w = src.shape
    r, c = np.meshgrid(np.arange(h, dtype=np.int64), np.arange(w, dtype=np.int64), indexing="ij")
    sx, sy = ax * c + bx * r + cx, ay * c + by * r + cy
    ix, iy = sx >> 16, sy >> 16
    fx, fy = (sx & 0xFFFF) / 65536.0, (sy & 0xFFFF) / 65536.0
    out = np.zeros((h, w))
    for dy in range(2):
        for dx in range(2):
            yy, xx = iy + dy, ix + dx
            ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            wt = (fy if dy else 1 - fy) * (fx if dx else 1 - fx)
            out += np.where(ok, wt * src[np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)], 0)
    return out
def _p_bilinear(shape):
    params = _bilinear_params(shape)
    return Plan(*_grid2(shape, (32, 8)), lambda rng: (_f32(rng, shape), _zeros(shape)) + params,
                lambda a: {1: _bilinear_ref(a[0], *a[2:])}, 1e-5, 2e-4, (_b(shape),) * 2)
WV_C2 = 0.01 / 12
def _wave_ref(u, up, c2):
    u64 = u.astype(np.float64)
    out = u64.copy()
    if min(u.shape) > 4:
        s = (slice(2, -2),) * 3
        near = far = 0
        for ax in range(3):
            for d, acc in ((1, "near"), (2, "far")):
                lo = [slice(2, -2)] * 3
                hi = [slice(2, -2)] * 3
                n = u.shape[ax]
                lo[ax], hi[ax] = slice(2 - d, n - 2 - d), slice(2 + d, n - 2 + d)
                term = u64[tuple(lo)] + u64[tuple(hi)]
                if acc == "near":
                    near = near + term
                else:
                    far = far + term
        out[s] = 2 * u64[s] - up[s] + float(c2) * (16 * near - far - 90 * u64[s])
    return out
def _p_wave(shape):
    nz, ny, nx = shape
    return Plan((_cdiv(nx, 32), _cdiv(ny, 8), nz), (32, 8),
                lambda rng: (_f32(rng, shape), _f32(rng, shape), _zeros(shape), np.float32(WV_C2)),
                lambda a: {2: _wave_ref(a[0], a[1], a[3])}, 1e-5, 1e-3, (_b(shape),) * 3)


# --- shared memory
def _nibble_words(rng, n):  # three bytes of four with few nibble values: equal nibbles side by side
    b = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    b &= np.array([0xFF, 0x31, 0x13, 0x11], np.uint8)
    return b.reshape(-1).view(np.uint32)
def _p_nibble_hist(n):
    def make(rng):
        return _nibble_words(rng, n), np.full(16, 3, np.int32)
    def want(a):
        by = a[0].view(np.uint8)
        return {1: a[1] + np.bincount(by & 15, minlength=16) + np.bincount(by >> 4, minlength=16)}
    return Plan((_cdiv(n, NH_T * NH_WORDS),), (NH_T,), make, want, 0.0, 0.0, (_b(n), _b(16)))
def _p_rank_sort(n):
    def want(a):
        out = np.empty(n, np.float64)
        for b0 in range(0, n, RK_T):
            out[b0:b0 + RK_T] = np.sort(a[0][b0:b0 + RK_T])
        return {1: out}
    return Plan((_cdiv(n, RK_T),), (RK_T,), lambda rng: (_f32(rng, n), np.full(n, np.nan, np.float32)), want,
                0.0, 0.0, (_b(n), _b(n)))
def _p_hamming(n):
    def make(rng):
        db = rng.integers(0, 1 << 32, (HM_DB, 2), dtype=np.uint32)
        q = rng.integers(0, 1 << 32, (2, n), dtype=np.uint32)
        q[:, ::7] = db[rng.integers(0, HM_DB, q[:, ::7].shape[1])].T ^ np.uint32(5)  # some near codes
        return q[0].copy(), q[1].copy(), db, np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    def want(a):
        dist = np.empty(n, np.int64)
        idx = np.empty(n, np.int64)
        for s in range(0, n, 4096):
            d = (np.bitwise_count(a[0][s:s + 4096, None] ^ a[2][None, :, 0])
                 + np.bitwise_count(a[1][s:s + 4096, None] ^ a[2][None, :, 1])).astype(np.int64)
            idx[s:s + 4096] = d.argmin(axis=1)
            dist[s:s + 4096] = d.min(axis=1)
        return {3: dist, 4: idx}
    return Plan(*_vec(n, HM_T), make, want, 0.0, 0.0, (_b(n), _b(n), _b((HM_DB, 2)), _b(n), _b(n)))
def _p_fft(rows):
    s = (rows, FT_N)
    def want(a):
        f = np.fft.fft(a[0].astype(np.float64) + 1j * a[1], axis=1)
        return {2: f.real, 3: f.imag}
    return Plan((rows,), (FT_T,), lambda rng: (_u(rng, s), _u(rng, s), _zeros(s), _zeros(s)), want, 1e-4, 2e-4,
                (_b(s),) * 4)
def _binomial_ref(src):
    k = np.array([1, 4, 6, 4, 1], np.float64)
    p = np.pad(src.astype(np.float64), 2)
    h = sum(k[j] * p[:, j:j + src.shape[1]] for j in range(5))
    return sum(k[j] * h[j:j + src.shape[0]] for j in range(5)) / 256
def _p_binomial(shape):
    return Plan(*_grid2(shape, (SB_X, SB_Y)), lambda rng: (_f32(rng, shape), _zeros(shape)),
                lambda a: {1: _binomial_ref(a[0])}, 0.0, 0.0, (_b(shape),) * 2)


# --- transpose
def _p_transpose_u8(shape):  # shape: (rows, columns) of 4 × 4-byte blocks
    rb, cb = shape
    def make(rng):
        return (rng.integers(0, 1 << 32, (4 * rb, cb), dtype=np.uint32), np.zeros((4 * cb, rb), np.uint32))
    def want(a):
        return {1: np.ascontiguousarray(a[0].view(np.uint8).reshape(4 * rb, 4 * cb).T).view(np.uint32)}
    return Plan(*_grid2((rb, cb), (32, 8)), make, want, 0.0, 0.0, (_b((4 * rb, cb)), _b((4 * cb, rb))))
def _p_conj_transpose(shape):
    rows, cols = shape
    out = (cols, rows)
    return Plan((_cdiv(cols, CT), _cdiv(rows, CT)), (CT, CT_ROWS),
                lambda rng: (_f32(rng, shape), _f32(rng, shape), _zeros(out), _zeros(out)),
                lambda a: {2: a[0].T, 3: -a[1].T}, 0.0, 0.0, (_b(shape), _b(shape), _b(out), _b(out)))


# --- latency
def _p_search(shape):
    n, log2m = shape
    m = 1 << log2m
    def make(rng):
        table = np.arange(m, dtype=np.int32) * np.int32(8)
        table += rng.integers(0, 8, m, dtype=np.int8)  # strictly increasing
        return table, rng.integers(-5, 8 * m + 5, n, dtype=np.int32), np.full(n, -1, np.int32)
    return Plan(*_vec(n), make, lambda a: {2: np.searchsorted(a[0], a[1], "left")}, 0.0, 0.0,
                (_b(m), _b(n), _b(n)))
def _p_power(shape):
    n, iters = shape
    assert n <= PI_MAX, "the vector lives in a shared array of PI_MAX floats"
    def make(rng):
        x0 = _u(rng, n, 0.5, 1.0)
        return (_u(rng, (n, n), 0.0, 1.0), x0 / np.float32(np.linalg.norm(x0)), _zeros(n), _zeros(1), iters)
    def want(a):
        A, x, lam = a[0].T.astype(np.float64), a[1].astype(np.float64), 0.0
        for _ in range(iters):
            y = A @ x
            lam = np.linalg.norm(y)
            x = y / lam
        return {2: x, 3: [lam]}
    return Plan((1,), (PI_T,), make, want, 2e-4, 1e-6, (_b((n, n)), _b(n), _b(n), 4))
def _p_top8(n):
    s = (64, n)
    return Plan(*_vec(n), lambda rng: (rng.standard_normal(s, dtype=np.float32), _zeros((TK_K, n))),
                lambda a: {1: -np.sort(-a[0], axis=0)[:TK_K]}, 0.0, 0.0, (_b(s), _b((TK_K, n))))


# --- reductions and atomics
def _p_lanes(n, lanes):
    def make(rng):
        return rng.integers(0, 10, n, dtype=np.int32), lanes, np.full(1, 5, np.int32)
    def want(a):
        return {2: a[2] + a[0][np.arange(n) % 32 < lanes].sum()}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), 4))
def _p_joint(n):
    def make(rng):
        a = rng.integers(0, 256, n, dtype=np.uint8)
        b = (a + rng.integers(-3, 4, n, dtype=np.int8).view(np.uint8)).astype(np.uint8)  # wraps modulo 256
        return a, b, np.full(256 * 256, 2, np.int32)
    return Plan(*_vec(n), make,
                lambda a: {2: a[2] + np.bincount(a[0].astype(np.int64) * 256 + a[1], minlength=65536)}, 0.0, 0.0,
                (n, n, _b(65536)))
def _p_norms(n):
    def make(rng):
        return _f32(rng, n), np.array([1.0, 2.0]), _zeros(1)
    def want(a):
        x = np.abs(a[0].astype(np.float64))
        return {1: a[1] + [x.sum(), (x * x).sum()], 2: [x.max(initial=0.0)]}
    return Plan((_cdiv(n, NM_T * NM_ITEMS),), (NM_T,), make, want, 0.0, 0.0, (_b(n), 16, 4))
def _p_welford(shape):
    rows, cols = shape
    def make(rng):  # an offset of 100 beside a spread of 1: the naive Σx² - n·mean² would lose digits
        return (_u(rng, shape, 99.0, 101.0), _zeros(rows, np.float64), _zeros(rows, np.float64))
    def want(a):
        x = a[0].astype(np.float64)
        return {1: x.mean(axis=1), 2: x.var(axis=1)}
    return Plan((rows,), (WF_T,), make, want, 1e-9, 1e-11, (_b(shape), _b(rows, 8), _b(rows, 8)))


# --- host and device
def _crc_table():
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> np.uint32(1)) ^ np.uint32(0xEDB88320), t >> np.uint32(1)).astype(np.uint32)
    return t
def _crc_ref(data, table):
    by = data.view(np.uint8)
    r = np.full(by.shape[0], 0xFFFFFFFF, np.uint32)
    for j in range(by.shape[1]):
        r = table[(r ^ by[:, j]) & np.uint32(255)] ^ (r >> np.uint32(8))
    return r ^ np.uint32(0xFFFFFFFF)
def _p_crc(chunks):
    def make(rng):
        data = rng.integers(0, 1 << 32, (chunks, CR_WORDS), dtype=np.uint32)
        data[::4, 8:] = 0  # chunks that end in zeros
        return data, _crc_table(), _zeros(chunks, np.uint32)
    return Plan(*_vec(chunks), make, lambda a: {2: _crc_ref(a[0], a[1])}, 0.0, 0.0,
                (_b((chunks, CR_WORDS)), _b(256), _b(chunks)))
UP_SCALE = 1.0 / 2048
def _p_unpack12(pairs):
    def want(a):
        b = a[0].reshape(-1, 3).astype(np.int64)
        v = np.stack([b[:, 0] | (b[:, 1] & 15) << 8, b[:, 1] >> 4 | b[:, 2] << 4], axis=1).reshape(-1)
        return {1: (v - 2048) * UP_SCALE}
    return Plan(*_vec(pairs), lambda rng: (rng.integers(0, 256, 3 * pairs, dtype=np.uint8), _zeros(2 * pairs),
                                           np.float32(UP_SCALE)), want, 0.0, 0.0, (3 * pairs, _b(2 * pairs)))


# --- matmul and special functions
def _p_sgemm(shape):
    m, n, k = shape
    return Plan((_cdiv(n, SG_BN), _cdiv(m, SG_BM)), (SG_T,),
                lambda rng: (_f32(rng, (m, k)), _f32(rng, (k, n)), _zeros((m, n))),
                lambda a: {2: a[0].astype(np.float64) @ a[1]}, 0.0, 0.0, (_b((m, k)), _b((k, n)), _b((m, n))))
def _p_bmm8(batch):
    s = (batch, 8, 8)
    return Plan((_cdiv(batch, BM8_PER),), (64 * BM8_PER,),
                lambda rng: (_f32(rng, s).astype(np.float64), _f32(rng, s).astype(np.float64), _zeros(s, np.float64)),
                lambda a: {2: np.einsum("pik,pkj->pij", a[0], a[1])}, 0.0, 0.0, (_b(s, 8),) * 3)
def _j0_ref(x):
    x = x.astype(np.float64)
    ax = np.abs(x)
    y = x * x
    p1 = 57568490574.0 + y * (-13362590354.0 + y * (651619640.7 + y * (-11214424.18 + y * (77392.33017 + y * (
        -184.9052456)))))
    q1 = 57568490411.0 + y * (1029532985.0 + y * (9494680.718 + y * (59272.64853 + y * (267.8532712 + y))))
    z = 8.0 / np.maximum(ax, 8.0)
    y = z * z
    xx = ax - 0.785398164
    p2 = 1.0 + y * (-0.1098628627e-2 + y * (0.2734510407e-4 + y * (-0.2073370639e-5 + y * 0.2093887211e-6)))
    q2 = -0.1562499995e-1 + y * (0.1430488765e-3 + y * (-0.6911147651e-5 + y * (0.7621095161e-6 - y * 0.934935152e-7)))
    far = np.sqrt(0.636619772 / np.maximum(ax, 8.0)) * (np.cos(xx) * p2 - z * np.sin(xx) * q2)
    return np.where(ax < 8, p1 / q1, far)
def _p_j0(n):
    return Plan(*_vec(n), lambda rng: (_u(rng, n, -30, 30), _zeros(n)), lambda a: {1: _j0_ref(a[0])}, 1e-4, 5e-5,
                (_b(n), _b(n)))


_p_morton64, _p_morton1024 = (lambda n: _p_morton(n, 64)), (lambda n: _p_morton(n, 1024))
_p_search_small = _p_search_large = _p_search
_p_lanes4, _p_lanes32 = (lambda n: _p_lanes(n, 4)), (lambda n: _p_lanes(n, 32))

#: name -> (kernel, chapter, plan(shape), small shape, gpu shape, what, tags); shape: n, (rows, cols), (z, y, x),
#: (m, n, k), (n, log2 table) or (n, iterations); transpose_u8_4x4 takes its matrix in 4 × 4-byte blocks; "2d"
#: marks the kernels tried at awkward shapes, "fixed_grid" a grid that does not grow
SPECS = {
    "quantize_u8": (quantize_u8, 1, _p_quantize, 1025, 1 << 26, "float32 in, uint8 out", ("bytes",)),
    "xorshift_fill": (xorshift_fill, 1, _p_xorshift, 1030, 1 << 24, "8 words written a thread, none read",
                      ("int", "write")),
    "morton3_block64": (morton3_u16, 1, _p_morton64, 1025, 1 << 24, "uint16 in, bit spreading, blocks of 64",
                        ("int", "bytes", "blocksize")),
    "morton3_block1024": (morton3_u16, 1, _p_morton1024, 1025, 1 << 24, "the same, blocks of 1024",
                          ("int", "bytes", "blocksize")),
    "run_pos_ballot": (run_pos_ballot, 2, _p_run_pos, 1030, 1 << 26, "shuffle, ballot, clz", ("vote", "shuffle")),
    "warp_mode_match": (warp_mode_match, 2, _p_mode, 1030, 1 << 26, "match_any, popc, xor max",
                        ("vote", "shuffle")),
    "binary_gcd": (binary_gcd, 2, _p_gcd, 1025, 1 << 23, "Stein's loop, rounds differ by lane",
                   ("int", "divergence")),
    "radix_sort256_ballot": (radix_sort256_ballot, 2, _p_radix, 600, 1 << 22, "16 one-bit splits by ballot",
                             ("vote", "sort")),
    "ema_series_in_columns": (ema_series_in_columns, 3, _p_ema_cols, (37, 300), (2048, 65536),
                              "a thread per series, series in columns", ("2d", "coalesced")),
    "ema_series_in_rows": (ema_series_in_rows, 3, _p_ema_rows, (300, 37), (65536, 2048),
                           "a thread per series, series in rows", ("2d", "strided")),
    "bilinear_fixed16": (bilinear_fixed16, 3, _p_bilinear, (20, 45), (8192, 8192), "4-tap gather, 16.16 coords",
                         ("2d", "gather")),
    "wave13_3d": (wave13_3d, 3, _p_wave, (6, 9, 40), (256, 512, 512), "13-point star from global",
                  ("2d", "stencil")),
    "nibble_hist_tid_major": (nibble_hist_tid_major, 4, _p_nibble_hist, 5000, 1 << 26,
                              "private counters [thread, bin]", ("banks", "histogram")),
    "nibble_hist_bin_major": (nibble_hist_bin_major, 4, _p_nibble_hist, 5000, 1 << 26,
                              "private counters [bin, thread]", ("banks", "histogram")),
    "rank_sort256": (rank_sort256, 4, _p_rank_sort, 600, 1 << 22, "256 broadcast compares a thread", ("sort",)),
    "hamming_nearest": (hamming_nearest, 4, _p_hamming, 700, 1 << 20, "1024 codes in shared, popc",
                        ("int", "broadcast")),
    "fft256_shared": (fft256_shared, 4, _p_fft, 5, 1 << 16, "8 radix-2 stages, sin/cos twiddles", ("sfu",)),
    "binomial5_sep": (binomial5_sep_shared, 4, _p_binomial, (20, 70), (8192, 8192), "rows then columns in shared",
                      ("2d", "stencil")),
    "transpose_u8_4x4": (transpose_u8_4x4, 5, _p_transpose_u8, (9, 20), (4096, 4096), "bytes transposed in registers",
                         ("2d", "bytes")),
    "conj_transpose": (conj_transpose_padded, 5, _p_conj_transpose, (40, 70), (8192, 8192), "two padded tiles",
                       ("2d", "banks")),
    "search_small_table": (lower_bound_search, 6, _p_search_small, (1025, 10), (1 << 22, 14),
                           "14 dependent loads, 64 KB table", ("latency", "gather")),
    "search_large_table": (lower_bound_search, 6, _p_search_large, (1025, 16), (1 << 22, 27),
                           "27 dependent loads, 512 MB table", ("latency", "gather")),
    "power_iteration_1block": (power_iteration_1block, 6, _p_power, (37, 6), (1024, 6), "a whole method on one block",
                               ("fixed_grid", "latency")),
    "top8_local": (top8_local, 6, _p_top8, 1030, 1 << 21, "insertion into a local array", ("local",)),
    "lanes4_one_word": (lanes_add_one_word, 7, _p_lanes4, 1030, 1 << 22, "4 lanes of 32, one word",
                        ("atomics",)),
    "lanes32_one_word": (lanes_add_one_word, 7, _p_lanes32, 1030, 1 << 22, "all 32 lanes, one word",
                         ("atomics",)),
    "joint_hist_u8": (joint_hist_u8, 7, _p_joint, 3000, 1 << 25, "65536 bins in global, near the diagonal",
                      ("atomics", "histogram")),
    "norms_l1_l2_max": (norms_l1_l2_max, 7, _p_norms, 3000, 1 << 26, "float64 adds, float32 max",
                        ("atomics", "fp64")),
    "welford_rows_f64": (welford_rows_f64, 7, _p_welford, (5, 300), (65536, 1024), "Chan merges by shuffles",
                         ("2d", "fp64", "shuffle")),
    "crc32_chunks": (crc32_chunks, 8, _p_crc, 37, 1 << 20, "a table lookup per byte", ("int", "bytes")),
    "unpack12_samples": (unpack12_samples, 8, _p_unpack12, 1025, 1 << 25, "3 bytes in, 2 floats out", ("bytes",)),
    "sgemm_col8": (sgemm_col8, 9, _p_sgemm, (70, 65, 20), (2048, 2048, 2048), "1-D register tiles of 8",
                   ("2d", "compute")),
    "bmm8x8_f64": (bmm8x8_f64, 9, _p_bmm8, 37, 1 << 19, "a thread per element", ("fp64",)),
    "bessel_j0_f32": (bessel_j0_f32, 10, _p_j0, 1025, 1 << 24, "two fits, a branch", ("sfu", "divergence")),
}


plan, case, cases = builders(SPECS, "fresh6")

#: Cases of this round taken out of the repository after they were profiled and scored (none yet): name -> why.
RETIRED = {}
