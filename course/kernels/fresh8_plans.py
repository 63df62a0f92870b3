"""Round 8's launches (:mod:`course.kernels.fresh8` holds its kernels): one :class:`Plan` per case — grid, block, the
arrays made from the rng, the NumPy answer, tolerances and each array's bytes — the ``SPECS`` table, and
``plan``/``case``/``cases`` built from it (:func:`course.kernels.fresh_plans.builders`); ``RETIRED`` lists the cases
taken out after they were scored.  ``cases(scale)``: H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``).
Their author ran nothing on a GPU: the gpu sizes come from the bytes and the work of each launch.
"""

from __future__ import annotations

import math

import numpy as np

from course.kernels.fresh_plans import Plan, builders
from course.kernels.fresh_plans import cdiv as _cdiv
from course.kernels.fresh_plans import f32 as _f32
from course.kernels.fresh_plans import nbytes as _b
from course.kernels.fresh_plans import uniform as _u
from course.kernels.fresh_plans import vec as _vec
from course.kernels.fresh_plans import zeros as _zeros
from course.kernels.fresh8 import (
    CC_BLOCKS, CC_T, CM_MULT, CM_ROWS, CM_SHIFT, CR_T, CSU_N, CSU_T, EARTH_KM, FD_STEP, FD_TAPS, KM_D, KM_K, LT,
    MTF_SYMS, OP_STEPS, RL_MAX, RL_T, RM_T, RM_W, T8, T8_Y, TR, WH_N, WH_T, alpha_blend_rgba8, bitmat8_transpose,
    center_rows32_f64, center_rows33_f64, clenshaw_cheb_f64, clip_count_gridstride, contfrac_atan_f64,
    coo_spmv_t_atomic, counting_sort_u8_block, countmin_saturating_cas, fir_decimate4, fma_mixed_widths,
    fwht1024_shared, haversine_f32, kmeans_assign64, life_step_u8, linear_bias_relu16, mtf_decode_local,
    next_flag_ballot, opcode_interp, poly31_shfl_bcast, remap_rotate_u8, rmsnorm_warp128, rule110_rings,
    segmax_f64_atomic, smoothstep_clamp, stencil9_f64, table_interp_f32, transpose_i8_tile64, transpose_rgba_tiled)


def _grid2(shape, block):  # a 2-D grid over (rows, cols), x along the columns
    return (_cdiv(shape[1], block[0]), _cdiv(shape[0], block[1])), block


# --- elementwise
def _p_fma_mixed(n):
    def make(rng):
        b = rng.integers(-32768, 32768, n, dtype=np.int16)
        return _u(rng, n), b, rng.uniform(-1e4, 1e4, n), _zeros(n, np.float64)
    def want(a):  # the product is exact in float64 (24 + 16 bits), so a fused multiply-add rounds the same
        return {3: a[0].astype(np.float64) * a[1] + a[2]}
    return Plan(*_vec(n), make, want, 1e-15, 0.0, (_b(n), _b(n, 2), _b(n, 8), _b(n, 8)))
SS_E0, SS_E1 = 0.1, 0.9
def _p_smoothstep(n):
    def want(a):
        t = np.clip((a[0].astype(np.float64) - SS_E0) / (SS_E1 - SS_E0), 0, 1)
        return {1: t * t * (3 - 2 * t)}
    return Plan(*_vec(n), lambda rng: (_u(rng, n, -0.5, 1.5), _zeros(n), np.float32(SS_E0), np.float32(SS_E1)), want,
                1e-5, 1e-6, (_b(n), _b(n)))
def _bitmat_ref(w):
    bits = np.unpackbits(w.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little").reshape(-1, 8, 8)
    return np.packbits(bits.transpose(0, 2, 1).reshape(-1, 64), axis=1, bitorder="little").reshape(-1).view(np.uint64)
def _p_bitmat(n):
    def make(rng):
        w = rng.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False)
        w[::5] &= np.uint64(0x0101010101010101)  # some matrices of one column
        return w, _zeros(n, np.uint64)
    def want(a):
        return {1: _bitmat_ref(a[0])}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n, 8), _b(n, 8)))
def _p_alpha(n):
    s = (n, 4)
    def make(rng):
        src = rng.integers(0, 256, s, dtype=np.uint8)
        src[::7, 3] = 255  # opaque and clear pixels
        src[3::7, 3] = 0
        return src, rng.integers(0, 256, s, dtype=np.uint8), _zeros(s, np.uint8)
    def want(a):
        src, dst = (v.astype(np.int64) for v in a[:2])
        al = src[:, 3:4]
        out = (src * al + dst * (255 - al) + 127) // 255
        out[:, 3] = al[:, 0] + dst[:, 3] * (255 - al[:, 0]) // 255
        return {2: out}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(s, 1),) * 3)


# --- warps
def _p_poly31(n):
    def want(a):
        c = np.zeros(_cdiv(n, 32) * 32)
        c[:n] = a[0]
        c = c.reshape(-1, 32)
        x = a[1].astype(np.float64)
        acc = np.zeros(n)
        for k in range(31, -1, -1):
            acc = acc * x + np.repeat(c[:, k], 32)[:n]
        return {2: acc}
    return Plan(*_vec(n), lambda rng: (_u(rng, n), _u(rng, n, -0.95, 0.95), _zeros(n)), want, 1e-5, 1e-4,
                (_b(n), _b(n), _b(n)))
def _p_next_flag(n):
    def make(rng):
        f = (rng.integers(0, 5, n, dtype=np.uint8) == 0).astype(np.uint8) * rng.integers(1, 256, n, dtype=np.uint8)
        f[64:96] = 0  # a warp with no flag
        return f, np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    def want(a):
        w = _cdiv(n, 32) * 32
        f = np.zeros(w, bool)
        f[:n] = a[0] != 0
        f = f.reshape(-1, 32)
        rank = (np.cumsum(f, axis=1) - f).reshape(-1)[:n]
        dist = np.zeros(f.shape, np.int64)
        nxt = np.full(f.shape[0], -1)  # the next flagged lane above, scanning down
        for lane in range(31, -1, -1):
            dist[:, lane] = np.where(nxt >= 0, nxt - lane, 0)
            nxt = np.where(f[:, lane], lane, nxt)
        return {1: rank, 2: dist.reshape(-1)[:n]}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (n, _b(n), _b(n)))
RM_EPS = 1e-5
def _p_rmsnorm(rows):
    s = (rows, RM_W)
    def make(rng):
        x = _u(rng, s, -2.0, 2.0)
        x[1::9] *= np.float32(1e-3)  # quiet rows, where eps matters
        return x, _u(rng, RM_W, 0.5, 1.5), _zeros(s), np.float32(RM_EPS)
    def want(a):
        x = a[0].astype(np.float64)
        return {2: x / np.sqrt((x * x).mean(axis=1, keepdims=True) + RM_EPS) * a[1]}
    return Plan((_cdiv(rows, RM_T // 32),), (RM_T,), make, want, 1e-5, 1e-6, (_b(s), _b(RM_W), _b(s)))


# --- warps: the same programs with opcodes per element and per warp
def _p_opcodes(n, per_warp):
    def make(rng):
        if per_warp:
            ops = np.repeat(rng.integers(0, 4, (OP_STEPS, _cdiv(n, 32)), dtype=np.uint8), 32, axis=1)[:, :n].copy()
        else:
            ops = rng.integers(0, 4, (OP_STEPS, n), dtype=np.uint8)
        return _u(rng, n), ops, _zeros(n)
    def want(a):
        v = a[0].astype(np.float64)
        for op in a[1]:
            v = np.select([op == 0, op == 1, op == 2], [0.5 * v + 0.25, np.sqrt(np.abs(v) + 0.25) - 0.5, np.sin(2 * v)],
                          0.5 * v * v - 0.5)
        return {2: v}
    return Plan(*_vec(n), make, want, 1e-4, 1e-4, (_b(n), _b((OP_STEPS, n), 1), _b(n)))


# --- access patterns
def _p_table_interp(shape):
    m, n = shape
    def make(rng):
        u = rng.random(n, dtype=np.float32)
        u[:4] = (0.0, np.nextafter(np.float32(1), np.float32(0)), 0.5, 0.25)  # both ends of the table
        return _u(rng, m), u, _zeros(n)
    def want(a):
        t = a[0].astype(np.float64)
        pos = a[1].astype(np.float64) * (m - 1)
        j = np.minimum(pos.astype(np.int64), m - 2)
        f = (pos - j).astype(np.float32)
        return {2: t[j] + f * (t[j + 1] - t[j])}
    return Plan(*_vec(n), make, want, 1e-6, 1e-6, (_b(m), _b(n), _b(n)))
def _p_fir_decimate(n):
    nx = FD_STEP * n
    def want(a):
        x = np.zeros(nx + FD_TAPS)
        x[:nx] = a[0]
        win = np.lib.stride_tricks.sliding_window_view(x, FD_TAPS)[:nx:FD_STEP][:n]
        return {2: win @ a[1].astype(np.float64)}
    return Plan(*_vec(n), lambda rng: (_f32(rng, nx), rng.integers(-8, 9, FD_TAPS).astype(np.float32), _zeros(n)),
                want, 0.0, 0.0, (_b(nx), _b(FD_TAPS), _b(n)))
RR_ANGLE = 0.5236  # about 30°
RR_CS, RR_SN = round(math.cos(RR_ANGLE) * 65536), round(math.sin(RR_ANGLE) * 65536)
def _remap_ref(src):
    h, w = src.shape
    r, c = np.mgrid[0:h, 0:w].astype(np.int64)
    dx, dy = c - w // 2, r - h // 2
    sx = ((RR_CS * dx - RR_SN * dy + 32768) >> 16) + w // 2
    sy = ((RR_SN * dx + RR_CS * dy + 32768) >> 16) + h // 2
    ok = (sx >= 0) & (sx < w) & (sy >= 0) & (sy < h)
    return np.where(ok, src[np.clip(sy, 0, h - 1), np.clip(sx, 0, w - 1)], 0)
def _p_remap(shape):
    return Plan(*_grid2(shape, (32, 8)),
                lambda rng: (rng.integers(1, 256, shape, dtype=np.uint8), np.full(shape, 7, np.uint8), RR_CS, RR_SN),
                lambda a: {1: _remap_ref(a[0])}, 0.0, 0.0, (_b(shape, 1), _b(shape, 1)))
def _stencil9_ref(u):
    out = u.copy()
    if min(u.shape) > 2:
        c = u[1:-1, 1:-1]
        edges = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
        corners = u[:-2, :-2] + u[:-2, 2:] + u[2:, :-2] + u[2:, 2:]
        out[1:-1, 1:-1] = (4.0 * edges + corners - 20.0 * c) / 6.0
    return out
def _p_stencil9(shape):
    return Plan(*_grid2(shape, (32, 8)), lambda rng: (_f32(rng, shape).astype(np.float64), _zeros(shape, np.float64)),
                lambda a: {1: _stencil9_ref(a[0])}, 1e-15, 0.0, (_b(shape, 8), _b(shape, 8)))
def _life_ref(g):
    p = np.pad(g.astype(np.int64), 1)
    h, w = g.shape
    cnt = sum(p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
    return ((cnt == 3) | ((g != 0) & (cnt == 2))).astype(np.uint8)
def _p_life(shape):
    return Plan(*_grid2(shape, (32, 8)),
                lambda rng: ((rng.integers(0, 8, shape, dtype=np.uint8) < 3).astype(np.uint8),
                             np.full(shape, 9, np.uint8)),
                lambda a: {1: _life_ref(a[0])}, 0.0, 0.0, (_b(shape, 1), _b(shape, 1)))


# --- shared memory
def _p_center_rows(rows):
    s = (rows, 32)
    def make(rng):
        return _f32(rng, s).astype(np.float64), _zeros(s, np.float64), np.full(rows, np.nan)
    def want(a):
        mu = a[0].mean(axis=1)
        return {1: a[0] - mu[:, None], 2: mu}
    return Plan((_cdiv(rows, CR_T),), (CR_T,), make, want, 0.0, 0.0, (_b(s, 8), _b(s, 8), _b(rows, 8)))
def _fwht_ref(x):
    n = x.size
    v = np.zeros(_cdiv(n, WH_N) * WH_N)
    v[:n] = x
    v = v.reshape(-1, WH_N)
    h = 1
    while h < WH_N:
        q = v.reshape(v.shape[0], -1, 2, h)
        v = np.stack([q[:, :, 0] + q[:, :, 1], q[:, :, 0] - q[:, :, 1]], axis=2).reshape(v.shape[0], WH_N)
        h *= 2
    return v.reshape(-1)[:n]
def _p_fwht(n):
    return Plan((_cdiv(n, WH_N),), (WH_T,), lambda rng: (_f32(rng, n), np.full(n, np.nan, np.float32)),
                lambda a: {1: _fwht_ref(a[0])}, 0.0, 0.0, (_b(n), _b(n)))
def _p_counting_sort(n):
    def make(rng):
        k = rng.integers(0, 256, n, dtype=np.uint8)
        k[::3] = k[::3] & 0x0F  # many repeats of low keys
        return k, np.full(n, 0xEE, np.uint8)
    def want(a):
        return {1: np.concatenate([np.sort(a[0][b0:b0 + CSU_N]) for b0 in range(0, n, CSU_N)])}
    return Plan((_cdiv(n, CSU_N),), (CSU_T,), make, want, 0.0, 0.0, (n, n))
def _p_kmeans(n):
    def make(rng):
        return _f32(rng, (n, KM_D)), _f32(rng, (KM_K, KM_D)), np.full(n, -9, np.int32), _zeros(n)
    def want(a):
        p, c = a[0].astype(np.int64), a[1].astype(np.int64)
        d = ((p[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        lab = d.argmin(axis=1)  # the first minimum: the lowest index on ties
        return {2: lab, 3: d[np.arange(n), lab]}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b((n, KM_D)), _b((KM_K, KM_D)), _b(n), _b(n)))


# --- transpose
def _p_transpose_rgba(shape):
    rows, cols = shape
    return Plan((_cdiv(cols, TR), _cdiv(rows, TR)), (TR, 8),
                lambda rng: (_f32(rng, (rows, cols, 4)), np.full((cols, rows, 4), np.nan, np.float32)),
                lambda a: {1: a[0].transpose(1, 0, 2)}, 0.0, 0.0, (_b((rows, cols, 4)), _b((cols, rows, 4))))
def _p_transpose_i8(shape):
    rows, cols = shape
    return Plan((_cdiv(cols, T8), _cdiv(rows, T8)), (T8, T8_Y),
                lambda rng: (rng.integers(-128, 128, shape, dtype=np.int8), np.zeros((cols, rows), np.int8)),
                lambda a: {1: a[0].T}, 0.0, 0.0, (_b(shape, 1), _b((cols, rows), 1)))


# --- latency
def _mtf_ref(idx):
    steps, n = idx.shape
    mtf = np.tile(np.arange(MTF_SYMS, dtype=np.uint8), (n, 1))
    out = np.empty((steps, n), np.uint8)
    cols, place = np.arange(n), np.arange(MTF_SYMS)
    for s in range(steps):
        j = idx[s].astype(np.int64)
        sym = mtf[cols, j]
        shifted = np.concatenate([sym[:, None], mtf[:, :-1]], axis=1)
        mtf = np.where(place[None, :] <= j[:, None], shifted, mtf)
        out[s] = sym
    return out
def _p_mtf(shape):
    n, steps = shape
    s = (steps, n)
    def make(rng):  # the indices of text after a move-to-front: small ones most often
        return np.minimum(rng.integers(0, MTF_SYMS, s, dtype=np.uint8), rng.integers(0, MTF_SYMS, s, dtype=np.uint8)), \
            np.full(s, 0xEE, np.uint8)
    return Plan(*_vec(n), make, lambda a: {1: _mtf_ref(a[0])}, 0.0, 0.0, (_b(s, 1), _b(s, 1)))
RL_RINGS = 4  # the fixed grid: a block a ring
def _p_rule110(shape):
    length, gens = shape
    assert length <= RL_MAX
    def want(a):
        c = a[0].astype(np.int64)
        for _ in range(gens):
            c = (110 >> (np.roll(c, 1, axis=1) * 4 + c * 2 + np.roll(c, -1, axis=1))) & 1
        return {0: c}
    return Plan((RL_RINGS,), (RL_T,), lambda rng: (rng.integers(0, 2, (RL_RINGS, length), dtype=np.uint8), gens),
                want, 0.0, 0.0, (_b((RL_RINGS, length), 1),))
CL_LO, CL_HI = -1.0, 1.0
def _p_clip(n):
    def make(rng):
        return _u(rng, n, -1.5, 1.5), np.float32(CL_LO), np.float32(CL_HI), np.full(1, 5, np.int32)
    def want(a):
        x = a[0]
        return {0: np.clip(x, CL_LO, CL_HI), 3: a[3] + ((x < CL_LO) | (x > CL_HI)).sum()}
    return Plan((CC_BLOCKS,), (CC_T,), make, want, 0.0, 0.0, (_b(n), 4))
def _p_contfrac(n):
    def make(rng):
        x = rng.uniform(-1.0, 1.0, n)
        x[:3] = (-1.0, 0.0, 1.0)
        return x, _zeros(n, np.float64)
    return Plan(*_vec(n), make, lambda a: {1: np.arctan(a[0])}, 1e-13, 1e-15, (_b(n, 8), _b(n, 8)))


# --- atomics
def _p_coo(shape):
    m, nnz = shape
    def make(rng):
        rows = (np.arange(nnz, dtype=np.int64) * m // nnz).astype(np.int32)  # sorted, nnz / m entries a row
        cols = rng.integers(0, m, nnz, dtype=np.int32)
        return rows, cols, _f32(rng, nnz), _f32(rng, m), _f32(rng, m)
    def want(a):  # integer values: every order of the float32 adds gives the same sum
        return {4: a[4] + np.bincount(a[1], weights=a[2].astype(np.float64) * a[3][a[0]], minlength=m)}
    return Plan(*_vec(nnz), make, want, 0.0, 0.0, (_b(nnz), _b(nnz), _b(nnz), _b(m), _b(m)))
CM_CAP = 1024  # a counter takes at most about 400 successful swaps: a hot one saturates soon
def _p_countmin(shape):
    w, n = shape
    cap = min(max(n // 128, 4), CM_CAP)
    def make(rng):
        u = rng.random(n, dtype=np.float32)  # u⁴: a few small keys take most inserts
        u *= u
        u *= u
        u *= np.float32(1 << 24)
        return u.astype(np.int32), np.zeros(CM_ROWS * w, np.int32), cap
    def want(a):  # weights are positive, so the saturated sums do not depend on the order of the adds
        k = a[0].astype(np.int64)
        wt = 1 + (k & 3)
        rows = [np.bincount(((k * CM_MULT[r]) >> CM_SHIFT) & (w - 1), weights=wt, minlength=w) for r in range(CM_ROWS)]
        return {1: np.minimum(np.concatenate(rows), cap)}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(CM_ROWS * w)))
SM_INIT = -2.0
def _p_segmax(shape):
    m, n = shape
    def make(rng):
        return rng.integers(0, m, n, dtype=np.int32), rng.uniform(-1.0, 1.0, n), np.full(m, SM_INIT)
    def want(a):
        out = a[2].copy()
        np.maximum.at(out, a[0], a[1])
        return {2: out}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(n, 8), _b(m, 8)))


# --- matmul and special functions
def _p_linear(shape):
    batch, nout, k = shape
    def make(rng):
        return _f32(rng, (batch, k)), _f32(rng, (nout, k)), _f32(rng, nout) * 50, _zeros((batch, nout))
    def want(a):
        return {3: np.maximum(a[0].astype(np.float64) @ a[1].T + a[2], 0)}
    return Plan((_cdiv(nout, LT), _cdiv(batch, LT)), (LT, LT), make, want, 0.0, 0.0,
                (_b((batch, k)), _b((nout, k)), _b(nout), _b((batch, nout))))
def _p_haversine(n):
    def make(rng):  # the second point at most 0.3 rad of latitude and 2 of longitude away: never near antipodal,
        # where float32 arcsine loses digits
        lat1, lon1 = _u(rng, n, -1.2, 1.2), _u(rng, n, -3.14, 3.14)
        return lat1, lon1, lat1 + _u(rng, n, -0.3, 0.3), lon1 + _u(rng, n, -2.0, 2.0), _zeros(n)
    def want(a):
        p1, l1, p2, l2 = (v.astype(np.float64) for v in a[:4])
        h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin((l2 - l1) / 2) ** 2
        return {4: 2 * EARTH_KM * np.arcsin(np.sqrt(np.minimum(h, 1)))}
    return Plan(*_vec(n), make, want, 1e-5, 1e-3, (_b(n),) * 5)
CH_TERMS = 32
def _p_clenshaw(n):
    def make(rng):
        coef = rng.uniform(-1.0, 1.0, CH_TERMS) / (1 + np.arange(CH_TERMS))
        return coef, rng.uniform(-1.0, 1.0, n), _zeros(n, np.float64)
    return Plan(*_vec(n), make, lambda a: {2: np.polynomial.chebyshev.chebval(a[1], a[0])}, 1e-12, 1e-13,
                (_b(CH_TERMS, 8), _b(n, 8), _b(n, 8)))


_p_interp_l2 = _p_interp_hbm = _p_table_interp
_p_ops_lane, _p_ops_warp = (lambda n: _p_opcodes(n, False)), (lambda n: _p_opcodes(n, True))
_p_segmax16 = _p_segmax64k = _p_segmax

#: name -> (kernel, chapter, plan(shape), small shape, gpu shape, what, tags); shape: n, (rows, cols), (m, n) of a
#: table or segment count and a length, (n, steps), (length, generations) or (batch, out, k); "2d" marks the kernels
#: tried at awkward shapes, "fixed_grid" a grid that does not grow
SPECS = {
    "fma_mixed_widths": (fma_mixed_widths, 1, _p_fma_mixed, 1025, 1 << 26, "f32·i16 + f64 to f64, 22 bytes an element",
                         ("stream", "dtype", "fp64")),
    "smoothstep_clamp": (smoothstep_clamp, 1, _p_smoothstep, 1025, 1 << 26, "a float32 divide, a clamp, a cubic",
                         ("stream",)),
    "bitmat8_transpose": (bitmat8_transpose, 1, _p_bitmat, 1030, 1 << 26, "uint64 8 × 8 bit transposes, xor-swaps",
                          ("int", "bits")),
    "alpha_blend_rgba8": (alpha_blend_rgba8, 1, _p_alpha, 1025, 1 << 26, "uint8 pixels, byte loads, divides by 255",
                          ("bytes", "int")),
    "poly31_shfl_bcast": (poly31_shfl_bcast, 2, _p_poly31, 1030, 1 << 25, "32 shfl_sync broadcasts and FMAs a lane",
                          ("shuffle", "compute")),
    "next_flag_ballot": (next_flag_ballot, 2, _p_next_flag, 1030, 1 << 26, "ballot, popc under lanemask_lt, ffs",
                         ("vote", "bytes")),
    "rmsnorm_warp128": (rmsnorm_warp128, 2, _p_rmsnorm, 77, 1 << 20, "a warp a row of 128, xor-shuffle sum",
                        ("shuffle", "stream")),
    "opcode_interp_by_lane": (opcode_interp, 2, _p_ops_lane, 1030, 1 << 25, "8 opcodes, random in each warp",
                              ("divergence", "sfu")),
    "opcode_interp_by_warp": (opcode_interp, 2, _p_ops_warp, 1030, 1 << 25, "the same, one opcode a warp",
                              ("divergence", "sfu")),
    "table_interp_l2": (table_interp_f32, 3, _p_interp_l2, (1000, 1025), (1 << 22, 1 << 25),
                        "random lerps in a 16 MB table", ("gather", "l2")),
    "table_interp_hbm": (table_interp_f32, 3, _p_interp_hbm, (5000, 1025), (1 << 27, 1 << 25),
                         "random lerps in a 512 MB table", ("gather", "hbm")),
    "fir_decimate4": (fir_decimate4, 3, _p_fir_decimate, 1025, 1 << 24, "16 taps at a stride of 4, overlapping",
                      ("strided",)),
    "remap_rotate_u8": (remap_rotate_u8, 3, _p_remap, (20, 45), (8192, 8192), "uint8 gathers along a 30° line",
                        ("2d", "gather", "bytes")),
    "stencil9_f64": (stencil9_f64, 3, _p_stencil9, (20, 45), (8192, 8192), "nine float64 loads a point",
                     ("2d", "stencil", "fp64")),
    "life_step_u8": (life_step_u8, 3, _p_life, (20, 45), (16384, 16384), "eight uint8 neighbours, a rule",
                     ("2d", "stencil", "bytes")),
    "center_rows_w32": (center_rows32_f64, 4, _p_center_rows, 300, 1 << 21, "float64 rows read at stride 64 words",
                        ("banks", "fp64")),
    "center_rows_w33": (center_rows33_f64, 4, _p_center_rows, 300, 1 << 21, "the same tile padded to 33",
                        ("banks", "fp64")),
    "fwht1024_shared": (fwht1024_shared, 4, _p_fwht, 2100, 1 << 26, "ten butterfly stages, a barrier each",
                        ("butterfly",)),
    "counting_sort_u8": (counting_sort_u8_block, 4, _p_counting_sort, 3000, 1 << 26,
                         "shared atomics, a scan, binary searches", ("sort", "atomics", "scan")),
    "kmeans_assign64": (kmeans_assign64, 4, _p_kmeans, 1025, 1 << 24, "64 broadcast centroids a point",
                        ("broadcast", "compute")),
    "transpose_rgba_f32": (transpose_rgba_tiled, 5, _p_transpose_rgba, (40, 70), (4096, 4096),
                           "16-byte pixels through a padded tile", ("2d", "bytes")),
    "transpose_i8_tile64": (transpose_i8_tile64, 5, _p_transpose_i8, (40, 70), (16384, 16384), "int8, a 64 × 65 tile",
                            ("2d", "bytes")),
    "mtf_decode_local": (mtf_decode_local, 6, _p_mtf, (300, 20), (1 << 17, 512), "a 16-byte list in local memory",
                         ("local", "divergence")),
    "rule110_4blocks": (rule110_rings, 6, _p_rule110, (1100, 10), (16384, 1500), "a barrier a generation, 4 blocks",
                        ("fixed_grid", "small_grid")),
    "clip_count_132blocks": (clip_count_gridstride, 6, _p_clip, 3000, 1 << 25, "grid-stride on 132 blocks of 128",
                             ("fixed_grid", "atomics")),
    "contfrac_atan_f64": (contfrac_atan_f64, 6, _p_contfrac, 1025, 1 << 23, "24 dependent float64 divides",
                          ("latency", "fp64")),
    "coo_spmv_t": (coo_spmv_t_atomic, 7, _p_coo, (300, 1030), (1 << 22, 1 << 25), "a gather, a scattered float atomic",
                   ("atomics", "gather")),
    "countmin_saturating": (countmin_saturating_cas, 7, _p_countmin, (1024, 3000), (1 << 20, 1 << 25),
                            "4 CAS loops a key, skewed keys", ("atomics", "cas")),
    "segmax_f64_16": (segmax_f64_atomic, 7, _p_segmax16, (16, 1030), (16, 1 << 25), "float64 atomic max, 16 addresses",
                      ("atomics", "fp64")),
    "segmax_f64_64k": (segmax_f64_atomic, 7, _p_segmax64k, (200, 1030), (1 << 16, 1 << 25),
                       "the same on 65536 addresses", ("atomics", "fp64")),
    "linear_bias_relu16": (linear_bias_relu16, 9, _p_linear, (40, 35, 20), (2048, 2048, 1024),
                           "x·wᵀ + b, ReLU, 16 × 16 tiles", ("2d", "compute")),
    "haversine_f32": (haversine_f32, 10, _p_haversine, 1025, 1 << 25, "sin, cos, sqrt, asin in float32", ("sfu",)),
    "clenshaw_cheb_f64": (clenshaw_cheb_f64, 10, _p_clenshaw, 1025, 1 << 25, "31 dependent float64 steps of 2 FMAs",
                          ("fp64",)),
}


plan, case, cases = builders(SPECS, "fresh8")

#: Cases of this round taken out of the repository after they were profiled and scored (none yet): name -> why.
RETIRED = {}
