"""Round 7's launches (:mod:`course.kernels.fresh7` holds its kernels): one :class:`Plan` per case — grid, block, the
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
from course.kernels.fresh7 import (
    CG, CS_ITEMS, CS_T, DD_CHUNK, DD_T, KD_PER, KD_T, LZ_C, LZ_G, MD_PAD, MM_BLOCKS, MM_T, MR_RUN, RJ_ACCEPT, RN_T,
    SQ_T, TI, WM_PER, WM_R, WM_T, XT_DELTA, XT_ROUNDS, add_transposed_tiles, bezier7_decasteljau, cgemm16_planar,
    class_sums8_shared, complex_mac_interleaved, complex_mac_planar, delta_decode_chunks, erfinv_giles, fmix32_pair,
    hist4096_global, im2col3x3, kahan_dot_f32, kron32_matvec, lcg_walk, lerp_stream, lgamma_lanczos_f64,
    merge_runs_shared, minmax_keys_gridstride, perona_malik_step, polar_to_cart, record_norms_staged,
    rejection_disk, row_flags_vote, segsum_sorted_atomic, sumsq_i64_block, transpose_i16_tiled, warp_median_radix,
    warp_seg_max_shfl, window_max33_shared, xtea_encrypt)

M32 = np.uint64(0xFFFFFFFF)


def _grid2(shape, block):  # a 2-D grid over (rows, cols), x along the columns
    return (_cdiv(shape[1], block[0]), _cdiv(shape[0], block[1])), block


def _u32(rng, n):
    return rng.integers(0, 1 << 32, n, dtype=np.uint32)


# --- elementwise
def _p_polar(n):
    def want(a):
        r, th = a[0].astype(np.float64), a[1].astype(np.float64)
        return {2: r * np.cos(th), 3: r * np.sin(th)}
    return Plan(*_vec(n), lambda rng: (_u(rng, n, 0.0, 4.0), _u(rng, n, -3.2, 3.2), _zeros(n), _zeros(n)), want,
                1e-5, 1e-5, (_b(n),) * 4)
def _fmix_ref(h):
    h = h.astype(np.uint64)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & M32
    h ^= h >> np.uint64(16)
    return h
def _p_fmix(n):
    def want(a):
        h = _fmix_ref(a[0])
        return {1: np.concatenate([h, _fmix_ref((h + np.uint64(0x9E3779B9)) & M32)])}
    return Plan(*_vec(n), lambda rng: (_u32(rng, n), _zeros(2 * n, np.uint32)), want, 0.0, 0.0, (_b(n), _b(2 * n)))
LP_T = 0.375
def _p_lerp(n, dt):
    item = np.dtype(dt).itemsize
    def make(rng):
        return _f32(rng, n).astype(dt), _f32(rng, n).astype(dt), _zeros(n, dt), dt(LP_T)
    def want(a):
        return {2: a[0] + LP_T * (a[1].astype(np.float64) - a[0])}
    return Plan(*_vec(n), make, want, 0.0, 1e-5, (_b(n, item),) * 3)


# --- warps
def _rejection_ref(seeds):
    s = seeds.astype(np.int64) | 1
    kept = np.zeros(s.size, np.int64)
    tries, sx, sy = np.zeros_like(kept), np.zeros_like(kept), np.zeros_like(kept)
    while (kept < RJ_ACCEPT).any():
        go = kept < RJ_ACCEPT
        t = s.copy()
        t ^= (t << 13) & 0xFFFFFFFF
        t ^= t >> 17
        t ^= (t << 5) & 0xFFFFFFFF
        s = np.where(go, t, s)
        px, py = (s & 0xFFFF) - 32768, (s >> 16) - 32768
        hit = go & (px * px + py * py < (1 << 30))
        tries += go
        sx += np.where(hit, px, 0)
        sy += np.where(hit, py, 0)
        kept += hit
    return np.stack([sx, sy]), tries
def _p_rejection(n):
    def make(rng):
        return _u32(rng, n), _zeros((2, n), np.int32), _zeros(n, np.int32)
    def want(a):
        sums, tries = _rejection_ref(a[0])
        return {1: sums, 2: tries}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b((2, n)), _b(n)))
def _p_row_flags(rows):
    s = (rows, 32)
    def make(rng):
        x = _f32(rng, s)
        x[::3] = np.abs(x[::3]) + 1  # all-positive rows
        x[1::7, 5] = np.nan
        x[2::11, 30] = np.inf
        return x, np.full(rows, -1, np.int32)
    def want(a):
        x = a[0]
        fin = np.isfinite(x).all(axis=1)
        return {1: fin * 1 + (x < 0).any(axis=1) * 2 + (x > 0).sum(axis=1) * 4}
    return Plan((_cdiv(rows, 8),), (256,), make, want, 0.0, 0.0, (_b(s), _b(rows)))
def _p_median(n):
    w = _cdiv(n, 32)
    def make(rng):
        x = rng.integers(0, 1 << 20, n, dtype=np.int32)
        x[::4] = x[::4] & 0x3F  # many ties and small keys
        return x, np.full(w, -1, np.int32)
    def want(a):
        p = np.full(w * 32, MD_PAD, np.int64)
        p[:n] = a[0]
        return {1: np.sort(p.reshape(w, 32), axis=1)[:, 15]}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(w)))
def _p_segmax(n):
    def make(rng):
        return _f32(rng, n), (rng.integers(0, 8, n, dtype=np.uint8) == 0).astype(np.uint8), _zeros(n)
    def want(a):
        x, h = a[0], a[1].astype(bool) | (np.arange(n) % 32 == 0)
        out = x.astype(np.float64).copy()
        for i in range(1, n):
            if not h[i]:
                out[i] = max(out[i], out[i - 1])
        return {2: out}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), n, _b(n)))


# --- access patterns
def _p_cmac_inter(n):
    s = (n, 2)
    def want(a):
        x, y, c = (v.astype(np.float64) for v in a)
        return {2: np.stack([c[:, 0] + x[:, 0] * y[:, 0] - x[:, 1] * y[:, 1],
                             c[:, 1] + x[:, 0] * y[:, 1] + x[:, 1] * y[:, 0]], axis=1)}
    return Plan(*_vec(n), lambda rng: (_f32(rng, s), _f32(rng, s), _f32(rng, s)), want, 0.0, 0.0, (_b(s),) * 3)
def _p_cmac_planar(n):
    def want(a):
        xr, xi, yr, yi, cr, ci = (v.astype(np.float64) for v in a)
        return {4: cr + xr * yr - xi * yi, 5: ci + xr * yi + xi * yr}
    return Plan(*_vec(n), lambda rng: tuple(_f32(rng, n) for _ in range(6)), want, 0.0, 0.0, (_b(n),) * 6)
def _im2col_ref(img):
    h, w = img.shape
    p = np.pad(img, 1)
    return np.stack([p[dy:dy + h, dx:dx + w].reshape(-1) for dy in range(3) for dx in range(3)])
def _p_im2col(shape):
    h, w = shape
    return Plan(*_grid2(shape, (32, 8)), lambda rng: (_f32(rng, shape), np.full((9, h * w), -7, np.float32)),
                lambda a: {1: _im2col_ref(a[0])}, 0.0, 0.0, (_b(shape), _b((9, h * w))))
PM_KINV2, PM_DT = 1.0 / 400, 0.2
def _pm_ref(u):
    u = u.astype(np.float64)
    p = np.pad(u, 1, mode="edge")
    h, w = u.shape
    acc = 0
    for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        d = p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] - u
        acc = acc + np.exp(-d * d * PM_KINV2) * d
    return u + PM_DT * acc
def _p_perona(shape):
    return Plan(*_grid2(shape, (32, 8)),
                lambda rng: (_f32(rng, shape), _zeros(shape), np.float32(PM_KINV2), np.float32(PM_DT)),
                lambda a: {1: _pm_ref(a[0])}, 1e-5, 1e-4, (_b(shape),) * 2)


# --- shared memory
def _p_record_norms(n, w):
    def want(a):
        return {1: np.sqrt((a[0].astype(np.float64) ** 2).sum(axis=1))}
    return Plan(*_vec(n, RN_T), lambda rng: (_f32(rng, (n, w)), _zeros(n)), want, 1e-6, 0.0, (_b((n, w)), _b(n)))
def _sorted_runs(rng, n):
    per = _cdiv(n, MR_RUN) * MR_RUN
    x = np.full(per, np.inf, np.float32)
    x[:n] = _f32(rng, n)
    return np.sort(x.reshape(-1, MR_RUN), axis=1).reshape(-1)[:n].copy()
def _p_merge(n):
    def want(a):
        out = np.empty(n)
        for b0 in range(0, n, 2 * MR_RUN):
            out[b0:b0 + 2 * MR_RUN] = np.sort(a[0][b0:b0 + 2 * MR_RUN])
        return {1: out}
    return Plan((_cdiv(n, 2 * MR_RUN),), (MR_RUN,), lambda rng: (_sorted_runs(rng, n), np.full(n, np.nan, np.float32)),
                want, 0.0, 0.0, (_b(n), _b(n)))
def _p_window_max(n):
    def want(a):
        p = np.full(n + 2 * WM_R, -np.inf)
        p[WM_R:WM_R + n] = a[0]
        return {1: np.lib.stride_tricks.sliding_window_view(p, 2 * WM_R + 1).max(axis=1)}
    return Plan((_cdiv(n, WM_T * WM_PER),), (WM_T,), lambda rng: (_f32(rng, n), _zeros(n)), want, 0.0, 0.0,
                (_b(n), _b(n)))


# --- transpose
def _p_transpose_i16(shape):
    rows, cols = shape
    return Plan((_cdiv(cols, TI), _cdiv(rows, TI)), (TI, 8),
                lambda rng: (rng.integers(-30000, 30000, shape, dtype=np.int16), np.zeros((cols, rows), np.int16)),
                lambda a: {1: a[0].T}, 0.0, 0.0, (_b(shape, 2), _b((cols, rows), 2)))
def _p_add_transposed(shape):
    rows, cols = shape
    return Plan((_cdiv(cols, TI), _cdiv(rows, TI)), (TI, 8),
                lambda rng: (_f32(rng, shape), _f32(rng, (cols, rows)), _zeros(shape)),
                lambda a: {2: a[0].astype(np.float64) + a[1].T}, 0.0, 0.0, (_b(shape), _b((cols, rows)), _b(shape)))


# --- latency
def _p_lcg(shape):
    n, steps = shape
    def want(a):
        x = a[0].astype(np.int64)
        for _ in range(steps):
            x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
            x ^= x >> 11
        return {1: x}
    return Plan(*_vec(n), lambda rng: (_u32(rng, n), _zeros(n, np.uint32), steps), want, 0.0, 0.0, (_b(n), _b(n)))
def _p_bezier(n):
    def make(rng):
        return _u(rng, (2, 8, n)), _u(rng, n, 0.0, 1.0), _zeros((2, n))
    def want(a):
        t = a[1].astype(np.float64)
        k = np.arange(8)[:, None]
        basis = np.array([math.comb(7, j) for j in range(8)])[:, None] * t ** k * (1 - t) ** (7 - k)
        return {2: (a[0] * basis[None]).sum(axis=1)}
    return Plan(*_vec(n), make, want, 1e-5, 1e-5, (_b((2, 8, n)), _b(n), _b((2, n))))
def _p_minmax(n):
    def make(rng):
        x = rng.standard_normal(n, dtype=np.float32)
        return x.view(np.int32), np.array([0x7FFFFFFF, -0x80000000], np.int32)
    def want(a):
        b = a[0].astype(np.int64)
        key = b ^ ((b >> 31) & 0x7FFFFFFF)
        return {1: [key.min(), key.max()]}
    return Plan((MM_BLOCKS,), (MM_T,), make, want, 0.0, 0.0, (_b(n), 8))


# --- reductions and atomics
def _p_segsum(n):
    m = max(n // 16, 1)
    def make(rng):
        keys = np.cumsum(rng.integers(0, 20, n, dtype=np.int8) == 0, dtype=np.int32)
        np.minimum(keys, m - 1, out=keys)
        return keys, _f32(rng, n), np.full(m, 0.5, np.float32)
    def want(a):
        return {2: a[2] + np.bincount(a[0], weights=a[1], minlength=m)}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(n), _b(m)))
def _p_sumsq(n):
    def make(rng):
        return rng.integers(0, 1001, n, dtype=np.int16), np.full(1, 7, np.int64)
    def want(a):
        v = a[0].astype(np.int64)
        return {1: a[1] + (v * v).sum()}
    return Plan(*_vec(n, SQ_T), make, want, 0.0, 0.0, (_b(n, 2), 8))
def _p_class_sums(n):
    def make(rng):
        cls = np.minimum(rng.integers(0, 8, n, dtype=np.int8), rng.integers(0, 8, n, dtype=np.int8)).astype(np.uint8)
        return cls, _f32(rng, n), np.full(8, 1.0), np.full(8, 2, np.int32)
    def want(a):
        return {2: a[2] + np.bincount(a[0], weights=a[1], minlength=8), 3: a[3] + np.bincount(a[0], minlength=8)}
    return Plan((_cdiv(n, CS_T * CS_ITEMS),), (CS_T,), make, want, 0.0, 0.0, (n, _b(n), 64, _b(8)))
def _p_kahan(n):
    def want(a):
        return {2: a[2] + (a[0].astype(np.float64) * a[1]).sum()}
    return Plan((_cdiv(n, KD_T * KD_PER),), (KD_T,), lambda rng: (_f32(rng, n), _f32(rng, n), np.full(1, 0.25)),
                want, 0.0, 0.0, (_b(n), _b(n), 8))
def _p_hist4096(n, skewed):
    def make(rng):
        if skewed:  # u⁴: a few low bins take most keys
            u = rng.random(n, dtype=np.float32)
            u *= u
            u *= u
            u *= np.float32(4096)
            keys = u.astype(np.int32)
        else:
            keys = rng.integers(0, 4096, n, dtype=np.int32)
        return keys, np.full(4096, 1, np.int32)
    return Plan(*_vec(n), make, lambda a: {1: a[1] + np.bincount(a[0] & 4095, minlength=4096)}, 0.0, 0.0,
                (_b(n), _b(4096)))


# --- host and device
def _p_delta(n):
    chunks = _cdiv(n, DD_CHUNK)
    def make(rng):
        return (rng.integers(-100, 101, n, dtype=np.int16), rng.integers(-10 ** 6, 10 ** 6, chunks, dtype=np.int32),
                np.full(n, -1, np.int32))
    def want(a):
        p = np.zeros(chunks * DD_CHUNK, np.int64)
        p[:n] = a[0]
        run = np.cumsum(p.reshape(chunks, DD_CHUNK), axis=1) + a[1][:, None]
        return {2: run.reshape(-1)[:n]}
    return Plan((chunks,), (DD_T,), make, want, 0.0, 0.0, (_b(n, 2), _b(chunks), _b(n)))
def _xtea_ref(v0, v1, key):
    v0, v1, k = v0.astype(np.uint64), v1.astype(np.uint64), key.astype(np.uint64)
    s = np.uint64(0)
    for _ in range(XT_ROUNDS):
        v0 = (v0 + (((((v1 << np.uint64(4)) & M32) ^ (v1 >> np.uint64(5))) + v1) ^ (s + k[int(s) & 3]))) & M32
        s = (s + np.uint64(XT_DELTA)) & M32
        v1 = (v1 + (((((v0 << np.uint64(4)) & M32) ^ (v0 >> np.uint64(5))) + v0) ^ (s + k[(int(s) >> 11) & 3]))) & M32
    return v0, v1
def _p_xtea(n):
    def make(rng):
        return _u32(rng, n), _u32(rng, n), _u32(rng, 4), _zeros(n, np.uint32), _zeros(n, np.uint32)
    def want(a):
        o0, o1 = _xtea_ref(a[0], a[1], a[2])
        return {3: o0, 4: o1}
    return Plan(*_vec(n), make, want, 0.0, 0.0, (_b(n), _b(n), 16, _b(n), _b(n)))


# --- matmul and special functions
def _p_cgemm(shape):
    m, n, k = shape
    def want(a):
        A = a[0].astype(np.float64) + 1j * a[1]
        B = a[2].astype(np.float64) + 1j * a[3]
        C = A @ B
        return {4: C.real, 5: C.imag}
    return Plan((_cdiv(n, CG), _cdiv(m, CG)), (CG, CG),
                lambda rng: (_f32(rng, (m, k)), _f32(rng, (m, k)), _f32(rng, (k, n)), _f32(rng, (k, n)),
                             _zeros((m, n)), _zeros((m, n))), want, 0.0, 0.0,
                (_b((m, k)),) * 2 + (_b((k, n)),) * 2 + (_b((m, n)),) * 2)
def _p_kron(batch):
    s = (batch, 32, 32)
    def make(rng):
        small = rng.integers(-3, 4, (2, 32, 32), dtype=np.int8).astype(np.float32)
        return _f32(rng, s), small[0].copy(), small[1].copy(), _zeros(s)
    def want(a):
        x, A, B = (v.astype(np.float64) for v in a[:3])
        return {3: B @ x @ A.T}  # (einsum without optimize: 32^5 products per block, minutes at 2^16 blocks)
    return Plan((batch,), (32, 32), make, want, 0.0, 0.0, (_b(s), _b((32, 32)), _b((32, 32)), _b(s)))
def _p_erfinv(n):
    def make(rng):
        x = _u(rng, n, -0.999, 0.999)
        k = x[::9].size  # a ninth in the far tails
        x[::9] = (np.sign(rng.standard_normal(k)) * (1 - 10.0 ** rng.uniform(-6.5, -3, k))).astype(np.float32)
        return x, _zeros(n)
    def want(a):  # at most 2^16 + 4096 elements: the reference runs math.erf per element (2^25: hours)
        flat = np.arange(n) if n <= 1 << 16 else np.union1d(np.linspace(0, n - 1, 1 << 16).astype(np.int64),
                                                             np.arange(0, 9 * 4096, 9))  # and 4096 far tails
        return {1: At(flat, _erfinv_ref(a[0][flat]))}
    return Plan(*_vec(n), make, want, 2e-5, 1e-6, (_b(n), _b(n)))
_ERF = np.frompyfunc(math.erf, 1, 1)
def _erfinv_ref(x):  # Newton on math.erf from a rough start, in float64
    x = x.astype(np.float64)
    y = np.sign(x) * np.sqrt(-np.log((1 - x) * (1 + x)))  # above the root: the steps come down to it
    for _ in range(60):
        y = y - (_ERF(y).astype(np.float64) - x) / (2 / math.sqrt(math.pi) * np.exp(-y * y))
    return y
def _p_lgamma(n):
    def want(a):
        return {1: np.array([math.lgamma(v) for v in a[0]])}
    return Plan(*_vec(n), lambda rng: (rng.uniform(0.01, 40.0, n), _zeros(n, np.float64)), want, 1e-11, 1e-11,
                (_b(n, 8), _b(n, 8)))


assert LZ_G == 7.0 and len(LZ_C) == 9  # the kernel's Lanczos set, which math.lgamma checks
_p_lerp32, _p_lerp64 = (lambda n: _p_lerp(n, np.float32)), (lambda n: _p_lerp(n, np.float64))
_p_norms4, _p_norms5 = (lambda n: _p_record_norms(n, 4)), (lambda n: _p_record_norms(n, 5))
_p_hist_skewed, _p_hist_uniform = (lambda n: _p_hist4096(n, True)), (lambda n: _p_hist4096(n, False))

#: name -> (kernel, chapter, plan(shape), small shape, gpu shape, what, tags); shape: n, (rows, cols), (m, n, k) or
#: (n, steps); "2d" marks the kernels tried at awkward shapes, "fixed_grid" a grid that does not grow
SPECS = {
    "polar_to_cart": (polar_to_cart, 1, _p_polar, 1025, 1 << 26, "two float32 in, two out, cos and sin", ("sfu",)),
    "fmix32_pair": (fmix32_pair, 1, _p_fmix, 1030, 1 << 25, "murmur finalizer twice, 16-bit multiply halves",
                    ("int",)),
    "lerp_f32": (lerp_stream, 1, _p_lerp32, 1025, 1 << 26, "a + t(b - a), float32", ("stream", "dtype")),
    "lerp_f64": (lerp_stream, 1, _p_lerp64, 1025, 1 << 26, "the same, float64", ("stream", "dtype", "fp64")),
    "rejection_disk": (rejection_disk, 2, _p_rejection, 1030, 1 << 22, "16 accepted draws, tries differ by lane",
                       ("int", "divergence")),
    "row_flags_vote": (row_flags_vote, 2, _p_row_flags, 77, 1 << 21, "all_sync, any_sync, ballot popc a row",
                       ("vote",)),
    "warp_median_radix": (warp_median_radix, 2, _p_median, 1030, 1 << 24, "20 ballot rounds of radix select",
                          ("vote", "select")),
    "warp_seg_max_shfl": (warp_seg_max_shfl, 2, _p_segmax, 1030, 1 << 26, "segmented max scan by shfl_up",
                          ("shuffle", "scan")),
    "complex_mac_interleaved": (complex_mac_interleaved, 3, _p_cmac_inter, 1025, 1 << 25,
                                "c += a·b, (re, im) side by side", ("aos",)),
    "complex_mac_planar": (complex_mac_planar, 3, _p_cmac_planar, 1025, 1 << 25, "the same, six planes",
                           ("soa",)),
    "im2col3x3": (im2col3x3, 3, _p_im2col, (20, 45), (4096, 4096), "9 rows written per pixel", ("2d", "gather")),
    "perona_malik_step": (perona_malik_step, 3, _p_perona, (20, 45), (8192, 8192), "4 neighbours, exp conductance",
                          ("2d", "stencil", "sfu")),
    "record_norms_w4": (record_norms_staged, 4, _p_norms4, 1025, 1 << 24, "records of 4 read at stride 4 in shared",
                        ("banks",)),
    "record_norms_w5": (record_norms_staged, 4, _p_norms5, 1025, 1 << 24, "records of 5 read at stride 5 in shared",
                        ("banks",)),
    "merge_runs512": (merge_runs_shared, 4, _p_merge, 1300, 1 << 24, "co-rank binary searches in shared",
                      ("sort",)),
    "window_max33": (window_max33_shared, 4, _p_window_max, 2100, 1 << 26, "33 shared reads an output",
                     ("stencil",)),
    "transpose_i16": (transpose_i16_tiled, 5, _p_transpose_i16, (40, 70), (8192, 8192), "2-byte tile, padded",
                      ("2d", "bytes")),
    "add_transposed": (add_transposed_tiles, 5, _p_add_transposed, (40, 70), (8192, 8192), "a + bᵀ, one tile",
                       ("2d",)),
    "lcg_walk": (lcg_walk, 6, _p_lcg, (1025, 40), (1 << 22, 256), "a dependent integer chain", ("latency", "int")),
    "bezier7_local": (bezier7_decasteljau, 6, _p_bezier, 1025, 1 << 22, "28 lerps in a local array", ("local",)),
    "minmax_keys_64blocks": (minmax_keys_gridstride, 6, _p_minmax, 3000, 1 << 25, "grid-stride on 64 blocks",
                             ("fixed_grid", "atomics")),
    "segsum_sorted": (segsum_sorted_atomic, 7, _p_segsum, 1030, 1 << 25, "one float atomic per run and warp",
                      ("atomics", "shuffle")),
    "sumsq_i64": (sumsq_i64_block, 7, _p_sumsq, 1500, 1 << 26, "int64 shuffles, one atomic a block",
                  ("atomics", "int")),
    "class_sums8": (class_sums8_shared, 7, _p_class_sums, 3000, 1 << 26, "8 shared addresses, float and int",
                    ("atomics", "histogram")),
    "kahan_dot": (kahan_dot_f32, 7, _p_kahan, 10000, 1 << 26, "compensated float32, float64 block sums",
                  ("atomics", "fp64")),
    "hist4096_skewed": (hist4096_global, 7, _p_hist_skewed, 3000, 1 << 26, "4096 global bins, keys 4096·u⁴",
                        ("atomics", "histogram")),
    "hist4096_uniform": (hist4096_global, 7, _p_hist_uniform, 3000, 1 << 26, "4096 global bins, uniform keys",
                         ("atomics", "histogram")),
    "delta_decode_chunks": (delta_decode_chunks, 8, _p_delta, 2100, 1 << 26, "int16 deltas to int32 by block scans",
                            ("scan", "bytes")),
    "xtea_encrypt": (xtea_encrypt, 8, _p_xtea, 1025, 1 << 24, "32 cycles of shifts, xors and adds", ("int",)),
    "cgemm16_planar": (cgemm16_planar, 9, _p_cgemm, (40, 35, 20), (1024, 1024, 2048), "four 16 × 16 tiles a step",
                       ("2d", "compute")),
    "kron32_matvec": (kron32_matvec, 9, _p_kron, 3, 1 << 16, "B·X·Aᵀ on 32 × 32 blocks", ("compute",)),
    "erfinv_giles": (erfinv_giles, 10, _p_erfinv, 1025, 1 << 25, "log, two polynomials, a branch",
                     ("sfu", "divergence")),
    "lgamma_lanczos_f64": (lgamma_lanczos_f64, 10, _p_lgamma, 1025, 1 << 24, "eight float64 divides, a reflection",
                           ("fp64",)),
}


plan, case, cases = builders(SPECS, "fresh7")

#: Cases of this round taken out of the repository after they were profiled and scored (none yet): name -> why.
RETIRED = {}
