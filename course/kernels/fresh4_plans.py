"""Round 4's launches (:mod:`course.kernels.fresh4` holds its kernels): one :class:`Plan` per case — grid, block, the
arrays made from the rng, the NumPy answer, tolerances and each array's bytes — the ``SPECS`` table, and
``plan``/``case``/``cases`` built from it (:func:`course.kernels.fresh_plans.builders`); ``RETIRED`` lists the cases
taken out after they were scored.  ``cases(scale)``: H200 sizes (``"gpu"``) or awkward CPU-engine sizes (``"small"``).
"""

from __future__ import annotations

import numpy as np

from course.kernels.fresh_plans import Plan, builders
from course.kernels.fresh_plans import blocks as _blocks
from course.kernels.fresh_plans import cdiv as _cdiv
from course.kernels.fresh_plans import f32 as _f32
from course.kernels.fresh_plans import nbytes as _b
from course.kernels.fresh_plans import uniform as _u
from course.kernels.fresh_plans import vec as _vec
from course.kernels.fresh_plans import zeros as _zeros
from course.kernels.fresh4 import (
    CS_ITEMS, CS_T, DQ_GROUP, GR_CHUNK, GR_D, GV_KC, GV_WARPS, INT32_MAX, IT, IT_ROWS, LSE_T, MC_BLOCKS, MC_T, N1_T,
    PK_MAX, PK_T, R8, RB, RB_T, SB, SEG_ROWS, SEG_W, WH_BINS, WH_ITEMS, WH_T, ballot_first_match, box_iou,
    dequant_int8, downsample2_3d, embedding_rows, first_index_of_key, float_to_half_bits, gemv_split_k, gram_f64,
    hist_warp_aggregated, kepler_newton, logsumexp_1024, median3x3_local, monte_carlo_hits, normalize_one_block,
    pack_segments, piecewise_by_class, pixel_shuffle2, rank8_update, scan_chained, seg32_scan_padded,
    seg32_scan_unpadded, sgemm_reg4x4, sobel_shared, softplus_sigmoid_f64, sqdiff_vec4, transpose_in_place,
    u16_row_gain, warp_row_argmin, weighted_hist_shared)


# --- launches: one plan per case
def _grid2(shape, block):  # a 2-D grid over (rows, cols), x along the columns
    return (_cdiv(shape[1], block[0]), _cdiv(shape[0], block[1])), block
def _i32(rng, shape):  # small integers as int32, built through int8
    return rng.integers(-50, 51, size=shape, dtype=np.int8).astype(np.int32)
def _p_softplus(n):
    def want(a):
        return {1: np.logaddexp(0, a[0]), 2: 1 / (1 + np.exp(-a[0]))}
    return Plan(*_vec(n), lambda rng: (rng.uniform(-30, 30, n), _zeros(n, np.float64), _zeros(n, np.float64)), want,
                1e-12, 1e-15, (_b(n, 8),) * 3)
def _p_u16_gain(shape):
    rows = shape[0]
    def make(rng):
        return (rng.integers(0, 1 << 16, shape, dtype=np.uint16), rng.integers(64, 512, rows, dtype=np.uint16),
                _zeros(shape, np.uint16), -300)
    def want(a):
        return {2: np.clip(((a[0].astype(np.int64) * a[1][:, None] + 128) >> 8) + a[3], 0, 65535)}
    return Plan(*_grid2(shape, (128, 2)), make, want, 0.0, 0.0, (_b(shape, 2), _b(rows, 2), _b(shape, 2)))
def _p_piecewise(n, per_warp):
    def make(rng):
        if per_warp:  # one class for each run of 32 elements: a warp's lanes agree
            cls = np.repeat(rng.integers(0, 4, _cdiv(n, 32), dtype=np.uint8), 32)[:n]
        else:
            cls = rng.integers(0, 4, n, dtype=np.uint8)
        return _u(rng, n, -2, 2), cls, _zeros(n)
    def want(a):
        v, k = a[0].astype(np.float64), a[1]
        return {2: np.select([k == 0, k == 1, k == 2], [v ** 3 - v, np.exp(-v), np.sqrt(np.abs(v) + 1)],
                             2 * np.sin(v))}
    return Plan(*_vec(n), make, want, 1e-5, 4e-6, (_b(n), n, _b(n)))
def _p_argmin(shape):
    rows = shape[0]
    return Plan((_cdiv(rows, 4),), (128,), lambda rng: (_f32(rng, shape), _zeros(rows), np.full(rows, -1, np.int32)),
                lambda a: {1: a[0].min(axis=1), 2: a[0].argmin(axis=1)}, 0.0, 0.0, (_b(shape), _b(rows), _b(rows)))
BF_TARGET = 7
def _p_first_match(shape):
    rows, cols = shape
    values = max(cols // 4, 8)  # a match every `values` columns on average: 1024 at 4096 columns
    def want(a):
        hit = a[0] == a[1]
        return {2: np.where(hit.any(axis=1), hit.argmax(axis=1), -1)}
    return Plan((rows,), (32,), lambda rng: (rng.integers(0, values, shape, dtype=np.int16), BF_TARGET,
                                             _zeros(rows, np.int32)), want, 0.0, 0.0, (_b(shape, 2), _b(rows)))
def _p_dequant(n):
    g = _cdiv(n, DQ_GROUP)
    return Plan(*_vec(n), lambda rng: (rng.integers(-128, 128, n, dtype=np.int8), _u(rng, g, 0.001, 0.1), _zeros(n)),
                lambda a: {2: a[0].astype(np.float32) * np.repeat(a[1], DQ_GROUP)[:n]}, 0.0, 0.0, (n, _b(g), _b(n)))
def _float_bits(rng, n):  # float32 bit patterns in the normal halves' range (exponent fields 113–142), ±0, ties, ±inf
    b = rng.integers(0, 1 << 32, n, dtype=np.uint32) & np.uint32(0x807FFFFF)
    b |= rng.integers(113, 143, n, dtype=np.uint32) << np.uint32(23)
    b[::97] = (b[::97] & np.uint32(0xFFFFE000)) | np.uint32(0x1000)  # exactly half way: round to even
    b[::101] &= np.uint32(0x80000000)
    b[::211] = (b[::211] & np.uint32(0x807FFFFF)) | np.uint32(150 << 23)  # 2^23 and more: ±inf as a half
    return b
def _p_half(n):
    def want(a):
        with np.errstate(over="ignore"):  # the ±inf on purpose
            return {1: a[0].view(np.float32).astype(np.float16).view(np.uint16)}
    return Plan(*_vec(n, 512), lambda rng: (_float_bits(rng, n), _zeros(n, np.uint16)), want, 0.0, 0.0,
                (_b(n), _b(n, 2)))
def _boxes(rng, n):  # integer corners: x0, y0 in 0–90, widths and heights 1–30 (every sum and product exact)
    lo = rng.integers(0, 91, (n, 2), dtype=np.uint8)
    return np.hstack([lo, lo + rng.integers(1, 31, (n, 2), dtype=np.uint8)]).astype(np.float32)
def _iou_ref(a, b):
    w = np.maximum(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0)
    h = np.maximum(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0)
    inter = w.astype(np.float64) * h
    return inter / ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) - inter)
def _p_iou(n):
    return Plan(*_vec(n, 128), lambda rng: (_boxes(rng, n), _boxes(rng, n), _zeros(n)),
                lambda a: {2: _iou_ref(a[0], a[1])}, 1e-6, 0.0, (_b((n, 4)), _b((n, 4)), _b(n)))
def _p_embed(shape):
    rows, dim = shape
    vocab = max(rows // 4, 7)  # 65536 rows of 128 floats at the gpu size: a 32 MB table
    def make(rng):
        return _f32(rng, (vocab, dim)), rng.integers(0, vocab, rows, dtype=np.int32), _zeros(shape)
    return Plan(*_grid2(shape, (32, 8)), make, lambda a: {2: a[0][a[1]]}, 0.0, 0.0,
                (_b((vocab, dim)), _b(rows), _b(shape)))
def _p_down3(shape):
    out = tuple(_cdiv(s, 2) for s in shape)
    def want(a):
        p = np.pad(a[0].astype(np.float64), [(0, s % 2) for s in shape], mode="edge")
        return {1: p.reshape(out[0], 2, out[1], 2, out[2], 2).mean(axis=(1, 3, 5))}
    return Plan((_cdiv(out[2], 32), _cdiv(out[1], 4), _cdiv(out[0], 2)), (32, 4, 2),
                lambda rng: (_f32(rng, shape), _zeros(out)), want, 0.0, 0.0, (_b(shape), _b(out)))
def _p_shuffle(shape):
    ch, h, w = shape
    out = (ch, 2 * h, 2 * w)
    def want(a):  # src[4c + 2i + j, y, x] lands at dst[c, 2y + i, 2x + j]
        return {1: a[0].reshape(ch, 2, 2, h, w).transpose(0, 3, 1, 4, 2).reshape(out)}
    return Plan((_cdiv(2 * w, 64), _cdiv(2 * h, 4), ch), (64, 4, 1),
                lambda rng: (_f32(rng, (4 * ch, h, w)), _zeros(out)), want, 0.0, 0.0, (_b((4 * ch, h, w)), _b(out)))
def _p_seg32(n):
    return Plan((_cdiv(n, SEG_ROWS * SEG_W),), (SEG_ROWS,), lambda rng: (_f32(rng, n), _zeros(n)),
                lambda a: {1: _blocks(a[0], SEG_W).cumsum(axis=1).reshape(-1)[:n]}, 0.0, 0.0, (_b(n),) * 2)
def _p_sobel(shape):
    def want(a):
        p = np.pad(a[0].astype(np.float64), 1)
        def s(dr, dc):
            return p[dr:dr + shape[0], dc:dc + shape[1]]
        gx = (s(0, 2) + 2 * s(1, 2) + s(2, 2)) - (s(0, 0) + 2 * s(1, 0) + s(2, 0))
        gy = (s(2, 0) + 2 * s(2, 1) + s(2, 2)) - (s(0, 0) + 2 * s(0, 1) + s(0, 2))
        return {1: np.sqrt(gx * gx + gy * gy)}
    return Plan(*_grid2(shape, (SB, SB)), lambda rng: (_f32(rng, shape), _zeros(shape)), want, 1e-6, 0.0,
                (_b(shape),) * 2)
def _p_whist(n):
    def make(rng):
        u = rng.integers(0, 256, (2, n), dtype=np.uint8)
        keys = ((u[0].astype(np.uint16) + u[1]) >> 1).astype(np.uint8)  # triangular: the middle bins the busiest
        return keys, _f32(rng, n), _zeros(WH_BINS)
    return Plan((_cdiv(n, WH_T * WH_ITEMS),), (WH_T,), make,
                lambda a: {2: a[2] + np.bincount(a[0], weights=a[1], minlength=WH_BINS)}, 0.0, 0.0,
                (n, _b(n), _b(WH_BINS)))
def _p_inplace(shape):
    assert shape[0] == shape[1], "an in-place transpose needs a square matrix"
    g = _cdiv(shape[0], IT)
    return Plan((g, g), (IT, IT_ROWS), lambda rng: (_f32(rng, shape),), lambda a: {0: a[0].T}, 0.0, 0.0, (_b(shape),))
def _p_median(shape):
    def want(a):
        p = np.pad(a[0], 1, mode="edge")
        nine = [p[dr:dr + shape[0], dc:dc + shape[1]] for dr in range(3) for dc in range(3)]
        return {1: np.median(np.stack(nine), axis=0)}
    return Plan(*_grid2(shape, (32, 8)), lambda rng: (_f32(rng, shape), _zeros(shape)), want, 0.0, 0.0,
                (_b(shape),) * 2)
def _p_sqdiff(n):
    assert n % 4 == 0, "four floats per thread: n a multiple of 4"
    return Plan(*_vec(n // 4), lambda rng: (_f32(rng, n), _f32(rng, n), _zeros(n)),
                lambda a: {2: (a[0].astype(np.float64) - a[1]) ** 2}, 0.0, 0.0, (_b(n),) * 3)
def _xorshift(s):
    s ^= (s << 13) & 0xFFFFFFFF
    s ^= s >> 17
    return s ^ ((s << 5) & 0xFFFFFFFF)
def _mc_ref(seeds, iters):
    s, hits = seeds.astype(np.uint64), 0
    for _ in range(iters):
        s = _xorshift(s)
        px = s >> 16
        s = _xorshift(s)
        py = s >> 16
        hits += int(np.count_nonzero(px * px + py * py < 1 << 32))
    return hits
def _p_mc(iters):
    m = MC_BLOCKS * MC_T
    return Plan((MC_BLOCKS,), (MC_T,), lambda rng: (rng.integers(1, 1 << 32, m, dtype=np.uint32), iters,
                                                    np.zeros(1, np.int64)),
                lambda a: {2: a[2] + _mc_ref(a[0], a[1])}, 0.0, 0.0, (_b(m), 8))
def _p_norm(n):
    return Plan((1,), (N1_T,), lambda rng: (_f32(rng, n), _zeros(n)),
                lambda a: {1: a[0] / np.sqrt((a[0].astype(np.float64) ** 2).sum())}, 2e-6, 0.0, (_b(n),) * 2)
def _p_lse(n):
    m = _cdiv(n, LSE_T)
    def want(a):
        b = _blocks(a[0], LSE_T, -np.inf)
        top = b.max(axis=1)
        return {1: top + np.log(np.exp(b - top[:, None]).sum(axis=1))}
    return Plan((m,), (LSE_T,), lambda rng: (_u(rng, n, -10, 10), _zeros(m)), want, 1e-5, 1e-5, (_b(n), _b(m)))
def _p_scan_chained(n):
    m = _cdiv(n, CS_T * CS_ITEMS)
    make = lambda rng: (_i32(rng, n), _zeros(n, np.int32), _zeros(1, np.int32), _zeros(m, np.int32),  # noqa: E731
                        _zeros(m, np.int32))
    # the scan, and the ticket and flags back at zero for the next launch (the carries are scratch)
    return Plan((m,), (CS_T,), make, lambda a: {1: np.cumsum(a[0], dtype=np.int64), 2: np.zeros(1), 3: np.zeros(m)},
                0.0, 0.0, (_b(n), _b(n), 4, _b(m), _b(m)))
HW_KEYS = 16
_HW_LUT = (15 - np.floor(np.log2(np.maximum(np.arange(1 << 16), 1)))).astype(np.int32)  # key 0 for half the values
def _p_hwagg(n):
    make = lambda rng: (_HW_LUT[rng.integers(0, 1 << 16, n, dtype=np.uint16)], _zeros(HW_KEYS, np.int32))  # noqa: E731
    return Plan(*_vec(n), make,
                lambda a: {1: a[1] + np.bincount(a[0], minlength=HW_KEYS)}, 0.0, 0.0, (_b(n), _b(HW_KEYS)))
def _p_first_index(n, nkeys):
    def want(a):
        first = np.full(nkeys, INT32_MAX, np.int64)
        keys, at = np.unique(a[0], return_index=True)
        first[keys] = at
        return {1: np.minimum(first, a[1])}
    return Plan(*_vec(n), lambda rng: (rng.integers(0, nkeys, n, dtype=np.int32), np.full(nkeys, INT32_MAX, np.int32)),
                want, 0.0, 0.0, (_b(n), _b(nkeys)))
def _p_pack(nseg):
    total = nseg * PK_MAX // 2
    def make(rng):
        length = rng.integers(0, PK_MAX + 1, nseg, dtype=np.int32)
        start = rng.integers(0, total - length + 1, dtype=np.int32)
        offset = np.zeros(nseg, np.int32)
        np.cumsum(length[:-1], out=offset[1:])
        return _f32(rng, total), start, length, offset, _zeros(nseg * PK_MAX)
    def want(a):
        out, m = np.zeros(nseg * PK_MAX), int(a[2].sum())
        out[:m] = a[0][np.repeat(a[1] - a[3], a[2]) + np.arange(m)]
        return {4: out}
    return Plan((nseg,), (PK_T,), make, want, 0.0, 0.0, (_b(total), _b(nseg), _b(nseg), _b(nseg), _b(nseg * PK_MAX)))
def _p_sgemm(shape):
    m, n, k = shape
    return Plan((_cdiv(n, RB), _cdiv(m, RB)), (RB_T, RB_T),
                lambda rng: (_f32(rng, (m, k)), _f32(rng, (k, n)), _zeros((m, n))),
                lambda a: {2: a[0].astype(np.float64) @ a[1]}, 0.0, 0.0, (_b((m, k)), _b((k, n)), _b((m, n))))
def _p_gram(n):
    s, d = (n, GR_D), (GR_D, GR_D)
    f64 = lambda rng, shape: _f32(rng, shape).astype(np.float64)  # noqa: E731
    return Plan((_cdiv(n, GR_CHUNK),), d, lambda rng: (f64(rng, s), f64(rng, s), f64(rng, d)),
                lambda a: {2: a[2] + a[0].T @ a[1]}, 0.0, 0.0, (_b(s, 8), _b(s, 8), _b(d, 8)))
def _p_rank8(shape):
    rows, cols = shape
    return Plan(*_grid2(shape, (64, 4)), lambda rng: (_f32(rng, (rows, R8)), _f32(rng, (R8, cols)), _f32(rng, shape)),
                lambda a: {2: a[2] + a[0].astype(np.float64) @ a[1]}, 0.0, 0.0,
                (_b((rows, R8)), _b((R8, cols)), _b(shape)))
def _p_gemv(shape):
    rows, cols = shape
    return Plan((_cdiv(rows, GV_WARPS), _cdiv(cols, GV_KC)), (32 * GV_WARPS,),
                lambda rng: (_f32(rng, shape), _f32(rng, cols), _f32(rng, rows)),
                lambda a: {2: a[2] + a[0].astype(np.float64) @ a[1]}, 0.0, 0.0, (_b(shape), _b(cols), _b(rows)))
def _kepler_ref(m, e, tol, maxit):
    ea, live = np.where(e < 0.8, m, np.pi), np.ones(m.size, bool)
    for _ in range(maxit):
        d = (ea - e * np.sin(ea) - m) / (1.0 - e * np.cos(ea))
        ea = np.where(live, ea - d, ea)
        live &= np.abs(d) >= tol
        if not live.any():
            break
    return ea
def _p_kepler(n):
    return Plan(*_vec(n, 128), lambda rng: (rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 0.99, n),
                                            _zeros(n, np.float64), 1e-12, 50),
                lambda a: {2: _kepler_ref(a[0], a[1], a[3], a[4])}, 0.0, 1e-10, (_b(n, 8),) * 3)
_p_piecewise_random, _p_piecewise_warp = (lambda n: _p_piecewise(n, False)), (lambda n: _p_piecewise(n, True))
_p_first_hot, _p_first_spread = (lambda n: _p_first_index(n, 16)), (lambda n: _p_first_index(n, max(n // 16, 16)))

#: name -> (kernel, chapter, plan(shape), small shape, gpu shape, what, tags); shape: n, (rows, cols), (z, y, x),
#: (channels, h, w) or (m, n, k); "2d" marks the kernels tried at awkward shapes, "fixed_grid" a grid that does not grow
SPECS = {
    "softplus_f64": (softplus_sigmoid_f64, 1, _p_softplus, 1025, 1 << 24, "float64 exp, log1p, divide",
                     ("fp64", "sfu")),
    "u16_row_gain": (u16_row_gain, 1, _p_u16_gain, (17, 45), (8192, 8192), "uint16 pixels, 128x2 blocks",
                     ("2d", "bytes")),
    "piecewise_random": (piecewise_by_class, 2, _p_piecewise_random, 1025, 1 << 24, "4 paths, random classes",
                         ("divergence",)),
    "piecewise_by_warp": (piecewise_by_class, 2, _p_piecewise_warp, 1025, 1 << 24, "4 paths, a class per warp",
                          ("divergence",)),
    "warp_row_argmin": (warp_row_argmin, 2, _p_argmin, (17, 45), (65536, 512), "warp per row, pair shuffles", ("2d",)),
    "ballot_first_match": (ballot_first_match, 2, _p_first_match, (17, 45), (32768, 4096), "blocks of 32, early exit",
                           ("2d", "vote")),
    "dequant_int8": (dequant_int8, 3, _p_dequant, 1030, 1 << 26, "int8 to float32, group scales", ("bytes",)),
    "float_to_half": (float_to_half_bits, 3, _p_half, 1031, 1 << 25, "float16 rounding on bits", ("bytes", "int")),
    "box_iou_aos": (box_iou, 3, _p_iou, 1025, 1 << 23, "16-byte records", ("aos",)),
    "embedding_rows": (embedding_rows, 3, _p_embed, (17, 45), (1 << 18, 128), "row gather, 32 MB table",
                       ("2d", "gather")),
    "downsample2_3d": (downsample2_3d, 3, _p_down3, (5, 9, 70), (256, 512, 512), "3-D grid, 32x4x2 blocks", ("2d",)),
    "seg32_scan_conflicts": (seg32_scan_unpadded, 4, _p_seg32, 9000, 1 << 25, "32-way bank conflicts", ("banks",)),
    "seg32_scan_padded": (seg32_scan_padded, 4, _p_seg32, 9000, 1 << 25, "the tile padded to 33", ("banks",)),
    "sobel_shared": (sobel_shared, 4, _p_sobel, (17, 45), (6144, 6144), "3x3 Sobel, shared tile", ("2d", "stencil")),
    "weighted_hist_shared": (weighted_hist_shared, 4, _p_whist, 5000, 1 << 25, "float atomics in shared",
                             ("atomics",)),
    "transpose_in_place": (transpose_in_place, 5, _p_inplace, (45, 45), (8192, 8192), "two tiles swapped", ("2d",)),
    "pixel_shuffle2": (pixel_shuffle2, 5, _p_shuffle, (3, 9, 35), (64, 512, 512), "depth to space", ("2d",)),
    "median3x3_local": (median3x3_local, 6, _p_median, (17, 45), (4096, 4096), "a local array of 9", ("2d", "local")),
    "sqdiff_vec4_l2": (sqdiff_vec4, 6, _p_sqdiff, 1028, 3 << 20, "16-byte accesses, 36 MB: L2", ("vector", "l2")),
    "sqdiff_vec4_hbm": (sqdiff_vec4, 6, _p_sqdiff, 1028, 1 << 25, "16-byte accesses, 384 MB", ("vector", "hbm")),
    "monte_carlo_8blocks": (monte_carlo_hits, 6, _p_mc, 3, 4096, "8 blocks of 1024", ("compute", "fixed_grid")),
    "normalize_1block": (normalize_one_block, 6, _p_norm, 3000, 1 << 20, "1 block, two passes",
                         ("gridstride", "fixed_grid")),
    "logsumexp_1024": (logsumexp_1024, 7, _p_lse, 1500, 1 << 25, "blocks of 1024, shuffles", ("sfu",)),
    "scan_chained": (scan_chained, 7, _p_scan_chained, 5000, 1 << 22, "one-pass scan, chained blocks",
                     ("scan", "atomics")),
    "hist_warp_aggregated": (hist_warp_aggregated, 7, _p_hwagg, 1025, 1 << 25, "match_any, 16 skewed keys",
                             ("atomics", "vote")),
    "first_index_hot": (first_index_of_key, 7, _p_first_hot, 1025, 1 << 25, "atomicMin on 16 keys", ("atomics",)),
    "first_index_spread": (first_index_of_key, 7, _p_first_spread, 1025, 1 << 24, "atomicMin on 2^20 keys",
                           ("atomics",)),
    "pack_segments": (pack_segments, 8, _p_pack, 7, 16384, "a block per ragged segment", ()),
    "sgemm_reg4x4": (sgemm_reg4x4, 9, _p_sgemm, (40, 70, 20), (2048, 2048, 1024), "64x64 tiles, 4x4 per thread",
                     ("2d", "compute")),
    "gram_f64": (gram_f64, 9, _p_gram, 700, 1 << 20, "a.T b in float64, atomics", ("fp64", "atomics")),
    "rank8_update": (rank8_update, 9, _p_rank8, (17, 45), (8192, 8192), "c += a b with k = 8", ("2d",)),
    "gemv_split_k": (gemv_split_k, 9, _p_gemv, (17, 4500), (4096, 16384), "split-K, an atomic per warp",
                     ("2d", "atomics")),
    "kepler_newton": (kepler_newton, 10, _p_kepler, 1025, 1 << 20, "float64 Newton steps, data-dependent",
                      ("fp64", "compute", "divergence")),
}


plan, case, cases = builders(SPECS, "fresh4")

#: Cases of this round taken out of the repository after they were profiled and scored (none yet): name -> why.
RETIRED = {}
