"""Kernels that make memory counting hard, with counts derived by hand: the tracer's validation suite.

Each entry of ``NCU_CASES`` is a :class:`course.kernels.cases.Case` whose ``expect`` holds the eight
counts of :meth:`course.trace.Report.totals`, worked out below from first principles (the comment
above each case shows the arithmetic).  ``tests/test_trace.py`` checks the tracer against these
numbers on the CPU; ``scripts/gpu/validate_tracer.py`` checks both against Nsight Compute on the
H200.  Where the hardware might disagree with the textbook rule, the case's ``note`` says so.

Conventions used in the derivations: a warp is 32 consecutive linear thread ids; every global array
starts on a 256-byte boundary (as cudaMalloc and the CPU engine both guarantee), so a float32 row of
32 elements is exactly 4 sectors; shared arrays start at a 16-byte boundary, here always at offset 0
because each kernel declares one shared array.

Also here: a few kernels with known divergence and races (``DIVERGENCE_KERNELS``, ``RACE_KERNELS``)
that the tests use.
"""

from __future__ import annotations

import math

import numpy as np

from course.kernels.cases import Case
from course.validation.tracer_kernels import (  # noqa: F401  (the kernels are part of this suite's API)
    DIVERGENCE_KERNELS,
    PARTICLE,
    PARTICLE_ALIGNED,
    RACE_KERNELS,
    ROWS,
    TILE,
    branch_by_warp,
    branch_even_odd,
    broadcast_load,
    complex_copy_c128,
    complex_copy_c64,
    copy,
    copy_2d,
    copy_2d_rowview,
    copy_3d,
    gather,
    guarded_copy,
    histogram,
    offset_load,
    record_copy,
    record_field_read,
    record_update,
    reduce_sequential,
    reduce_strided_index,
    shared_atomic,
    shared_broadcast,
    shared_gather_c128,
    shared_gather_f64,
    shared_partial_warp,
    shared_run2_f32,
    shared_run4_f32,
    shared_run4_f32_stride5,
    shared_stride_f32,
    shared_stride_u8,
    strided_load,
    tile16_pad0,
    tile16_pad1,
    tile_column_store,
    tile_f32_32,
    tile_f32_33,
    tile_f32_34,
    tile_f32_partial_swizzle,
    tile_f32_swizzle,
    tile_f64_32,
    tile_f64_33,
    tile_transpose_nosync,
    transpose_naive,
)

KEYS = (
    "global_load_requests", "global_load_sectors", "global_store_requests", "global_store_sectors",
    "shared_load_requests", "shared_load_wavefronts", "shared_store_requests", "shared_store_wavefronts",
)


def counts(gl=(0, 0), gs=(0, 0), sl=(0, 0), ss=(0, 0)) -> dict:
    """The eight totals from (requests, sectors|wavefronts) pairs: global load/store, shared load/store."""
    return dict(zip(KEYS, (*gl, *gs, *sl, *ss)))




# ---------------------------------------------------------------------------------------------------
# The cases, each with its hand derivation


def _f32(rng, n):
    return rng.standard_normal(n).astype(np.float32)


def _zeros(n, dtype=np.float32):
    return np.zeros(n, dtype)


def _mat(rng, rows, cols, dtype=np.float32):
    return rng.standard_normal((rows, cols)).astype(dtype)


CASES: list = []


def _add(name, kernel, griddim, blockdim, make_args, expect, note="", tags=()):
    CASES.append(Case(name=f"tracer_suite.{name}", kernel=kernel, griddim=griddim, blockdim=blockdim,
                      make_args=make_args, expect=expect, note=note, tags=("tracer",) + tuple(tags)))


# strided_load, 64 threads (2 warps), float32.  Lane l of warp w reads byte 4*s*(32w + l): the 32
# lanes span 128*s bytes.  For s <= 8 the 4s-byte steps leave no sector untouched (4s <= 32), so a
# request touches 128*s/32 = 4s sectors; for s >= 8 each lane has its own sector: 32.  Warp 1 starts
# at byte 128*s, a sector boundary.  Stores out[i]: 4 sectors per warp.
for _s in (1, 2, 3, 4, 8, 16, 32):
    _add(f"strided_load[stride={_s}]", strided_load, 1, 64,
         lambda rng, s=_s: (_f32(rng, 64 * s), _zeros(64), s),
         counts(gl=(2, 2 * min(4 * _s, 32)), gs=(2, 8)), tags=("global",))

# offset_load float32, offset 1: warp 0 reads bytes 4..131 -> sectors 0..4 (5), warp 1 bytes 132..259
# -> sectors 4..8 (5).  Stores 4 + 4.
_add("offset_load[f32,+1]", offset_load, 1, 64, lambda rng: (_f32(rng, 65), _zeros(64), 1),
     counts(gl=(2, 10), gs=(2, 8)), tags=("global",))
# offset_load float64, offset 1: warp 0 bytes 8..263 -> sectors 0..8 (9); warp 1 bytes 264..519 ->
# sectors 8..16 (9).  float64 stores: 256 bytes per warp = 8 sectors each.
_add("offset_load[f64,+1]", offset_load, 1, 64,
     lambda rng: (rng.standard_normal(65), np.zeros(64), 1),
     counts(gl=(2, 18), gs=(2, 16)), tags=("global",))
# 1-byte copy: 32 lanes x 1 byte = one sector per warp.
_add("copy[u8]", copy, 1, 64, lambda rng: (rng.integers(0, 255, 64, dtype=np.uint8), _zeros(64, np.uint8)),
     counts(gl=(2, 2), gs=(2, 2)), tags=("global",))
# 2-byte copy: 64 bytes per warp = 2 sectors.
_add("copy[i16]", copy, 1, 64, lambda rng: (rng.integers(-99, 99, 64).astype(np.int16), _zeros(64, np.int16)),
     counts(gl=(2, 4), gs=(2, 4)), tags=("global",))
# 8-byte copy: 256 bytes per warp = 8 sectors.
_add("copy[f64]", copy, 1, 64, lambda rng: (rng.standard_normal(64), np.zeros(64)),
     counts(gl=(2, 16), gs=(2, 16)), tags=("global",))
# 1-byte elements with stride 4: bytes 0, 4, ..., 124 -> 4 sectors per warp; u8 stores 1 sector.
_add("strided_load[u8,stride=4]", strided_load, 1, 64,
     lambda rng: (rng.integers(0, 255, 256, dtype=np.uint8), _zeros(64, np.uint8), 4),
     counts(gl=(2, 8), gs=(2, 2)), tags=("global",))
# broadcast: every lane reads bytes 0..3 -> 1 sector per warp.
_add("broadcast_load", broadcast_load, 1, 64, lambda rng: (_f32(rng, 4), _zeros(64)),
     counts(gl=(2, 2), gs=(2, 8)), tags=("global",))
# guard with n = 100, 128 threads: warps 0-2 full (4 sectors each), warp 3 has lanes 96..99 only:
# bytes 384..399, one sector.  4 requests, 13 sectors, both ways.
_add("guarded_copy[n=100]", guarded_copy, 1, 128, lambda rng: (_f32(rng, 100), _zeros(100), 100),
     counts(gl=(4, 13), gs=(4, 13)), tags=("global", "partial-warp"))
# copy_2d, block (16, 8), arrays (8, 20) float32 (row pitch 80 bytes).  Warp w = rows 2w, 2w+1,
# columns 0..15: bytes 160w + [0, 64) and 160w + 80 + [0, 64).  Warp 0: sectors {0,1} and {2,3,4}
# -> 5; the pattern repeats every 160 bytes = 5 sectors, so each of the 4 warps touches 5 sectors.
_add("copy_2d[block 16x8, width 20]", copy_2d, 1, (16, 8),
     lambda rng: (_mat(rng, 8, 20), np.zeros((8, 20), np.float32)),
     counts(gl=(4, 20), gs=(4, 20)), tags=("global", "2d"))
_add("copy_2d_rowview[block 16x8, width 20]", copy_2d_rowview, 1, (16, 8),
     lambda rng: (_mat(rng, 8, 20), np.zeros((8, 20), np.float32)),
     counts(gl=(4, 20), gs=(4, 20)), tags=("global", "2d"))
# copy_2d, block (24, 3) = 72 threads, arrays (3, 24): warps are tids 0-31, 32-63, 64-71, i.e. bytes
# 0..127, 128..255, 256..287 of the contiguous array: 4 + 4 + 1 sectors, 3 requests.
_add("copy_2d[block 24x3, partial warp]", copy_2d, 1, (24, 3),
     lambda rng: (_mat(rng, 3, 24), np.zeros((3, 24), np.float32)),
     counts(gl=(3, 9), gs=(3, 9)), tags=("global", "2d", "partial-warp"))
# copy_3d, block (8, 4, 2), a (2, 4, 10), out (2, 4, 8).  Warp 0 is z = 0: a's rows y = 0..3 at bytes
# 40y + [0, 32): sectors {0}, {1,2}, {2,3}, {3,4} -> 5; warp 1 (z = 1) starts at byte 160 = sector 5:
# 5 more.  out is contiguous: 128 bytes per warp, 4 sectors.
_add("copy_3d[block 8x4x2]", copy_3d, 1, (8, 4, 2),
     lambda rng: (rng.standard_normal((2, 4, 10)).astype(np.float32), np.zeros((2, 4, 8), np.float32)),
     counts(gl=(2, 10), gs=(2, 8)), tags=("global", "3d"))
# gather: idx (int64, 8 bytes) costs 8 sectors per warp; a[idx[i]] depends on the data (no hand count).
_add("gather[random]", gather, 1, 64,
     lambda rng: (_f32(rng, 1024), rng.integers(0, 1024, 64), _zeros(64)), None,
     note="data-dependent: the tracer's count is only compared with the hardware's", tags=("global",))
# naive transpose, one 32x32 tile, block (32, 8), 4 passes: 32 warp-loads of one 128-byte row (4
# sectors) and 32 warp-stores of one column (lane l writes row l: 32 sectors).
_add("transpose_naive[32x32]", transpose_naive, 1, (TILE, ROWS),
     lambda rng: (_mat(rng, TILE, TILE), np.zeros((TILE, TILE), np.float32)),
     counts(gl=(32, 128), gs=(32, 1024)), tags=("global",))
# histogram: 64 int32 loads (2 warps x 4 sectors); the atomics are not loads or stores.
_add("histogram[global atomics]", histogram, 1, 64,
     lambda rng: (rng.integers(0, 1000, 64).astype(np.int32), np.zeros(8, np.int32)),
     counts(gl=(2, 8)), note="atomics (RED) appear in neither op_ld nor op_st", tags=("global", "atomic"))

# shared_stride_f32, 64 threads.  Warp w stores words s*k for k = 32w..32w+31 (and loads s*(k^1), the
# same set).  Those words fall in 32/gcd(s,32) banks with gcd(s,32) distinct words each, so every
# request needs gcd(s,32) wavefronts.  out stores: 2 x 4 sectors.
for _s in (1, 2, 3, 4, 8, 16, 17, 32):
    _g = math.gcd(_s, 32)
    _add(f"shared_stride_f32[stride={_s}]", shared_stride_f32, 1, 64,
         lambda rng, s=_s: (_zeros(64), s),
         counts(gs=(2, 8), sl=(2, 2 * _g), ss=(2, 2 * _g)), tags=("shared",))
# shared_stride_u8: stride 1 -> a warp's 32 bytes are 8 words in 8 banks: 1 wavefront.  Stride 8 ->
# bytes 8k are words 2k: 16 even banks, 2 words each: 2.  Stride 128 -> words 32k, all bank 0: 32.
# out (uint8) stores: 1 sector per warp.
for _s, _wf in ((1, 1), (8, 2), (128, 32)):
    _add(f"shared_stride_u8[stride={_s}]", shared_stride_u8, 1, 64,
         lambda rng, s=_s: (_zeros(64, np.uint8), s),
         counts(gs=(2, 2), sl=(2, 2 * _wf), ss=(2, 2 * _wf)), tags=("shared", "1-byte"))
# shared_broadcast, 64 threads: 1 store (s[t], 1 wavefront) and 3 loads per warp: s[0] (one word),
# s[t//2] (16 words in 16 banks), s[t%4 + 40] (4 words): all 1 wavefront.
_add("shared_broadcast", shared_broadcast, 1, 64, lambda rng: (_zeros(64),),
     counts(gs=(2, 8), sl=(6, 6), ss=(2, 2)), tags=("shared", "broadcast"))
# shared_gather_f64, 64 threads, s = 128 float64.  Per warp: idx load (int32, 4 sectors), two 8-byte
# stores s[t], s[t+64] (each: 2 half-warps of 16 consecutive doubles = 32 distinct banks -> 2
# wavefronts), out store (float64, 8 sectors).  The load s[idx[t]] depends on the pattern:
_F64_PATTERNS = {
    # 16 lanes x 8 bytes per half warp, all banks once: 1 per half warp
    "t": (lambda t: t, 2),
    # every lane the same word pair: the half-warp rule says 1 per half warp (2 in all), but the H200
    # serves both halves in ONE wavefront (measured 2026-11-29; analysis.MERGED_PHASES)
    "0": (lambda t: 0 * t, 1),
    # lanes l and l+16 read the same double: each half warp reads 128 contiguous bytes: 2 in all
    "t%16": (lambda t: t % 16, 2),
    # pairs of lanes share a double: each half warp reads 64 bytes in its own 16 banks; the halves
    # together ask for 128 bytes with no bank needing two words: ONE wavefront on the H200 (measured)
    "t//2": (lambda t: t // 2, 1),
    # stride 2 doubles: a half warp touches words 4l, 4l+1 (l = 0..15): banks 0,1,4,5,..,28,29 twice: 2 per
    # half warp, 4 in all
    "2t": (lambda t: 2 * t, 4),
    # stride 16 doubles = 128 bytes, wrapping at 128 doubles: a half warp reads 8 distinct doubles (lanes
    # l and l+8 share one), all in banks 0 and 1: 8 per half warp, 16 in all
    "16t%128": (lambda t: (16 * t) % 128, 16),
}
for _label, (_fn, _wf) in _F64_PATTERNS.items():
    _idx = np.array([_fn(t) for t in range(64)], dtype=np.int32)
    _add(f"shared_gather_f64[{_label}]", shared_gather_f64, 1, 64,
         lambda rng, i=_idx: (i.copy(), np.zeros(64)),
         counts(gl=(2, 8), gs=(2, 16), sl=(2, 2 * _wf), ss=(4, 8)),
         note="8-byte shared accesses: half warps, merged into one wavefront when they fit (H200-measured)",
         tags=("shared", "8-byte"))
# shared_gather_c128, 64 threads, s = 64 complex128 (16 bytes each).  Per warp: a[t] load (complex128:
# two 8-byte requests at a 16-byte stride, 16 sectors each), idx load (int32, 4 sectors), store s[t]
# (16 bytes: 4 quarter warps of 128 contiguous bytes, 1 wavefront each -> 4), out store (2 x 16 sectors).
# The load s[idx[t]]: quarter-warp phases, and the two quarters of a half warp share one wavefront when
# together they ask for <= 128 bytes (counted per quarter) with no bank needing two words
# (analysis.MERGED_PHASES; measured first in matmul.tiled's 16-byte broadcast: 2 per warp):
_C128_PATTERNS = {
    "t": (lambda t: t, 4),  # each quarter 128 contiguous bytes: 4 per warp
    "0": (lambda t: 0 * t, 2),  # everyone the same 16 bytes: one per half warp
    "t//8": (lambda t: t // 8, 2),  # one element per quarter, 32 bytes per half: one per half warp
    "t//2": (lambda t: t // 2, 2),  # pairs share: 64 + 64 bytes per half, every bank once: one per half
    # each quarter reads the same 128 bytes: counted per quarter that is 256 bytes a half: no merge, 4
    # (a rule of half-warp phases would say 2: this case tells the two apart)
    "t%8": (lambda t: t % 8, 4),
    # quarter q reads element 8q: the same 4 banks, different words: 2 per half warp
    "8*(t//8)": (lambda t: 8 * (t // 8), 4),
}
for _label, (_fn, _wf) in _C128_PATTERNS.items():
    _idx = np.array([_fn(t) for t in range(64)], dtype=np.int32)
    _add(f"shared_gather_c128[{_label}]", shared_gather_c128, 1, 64,
         lambda rng, i=_idx: ((rng.standard_normal(64) + 1j * rng.standard_normal(64)), i.copy(),
                              np.zeros(64, np.complex128)),
         counts(gl=(6, 72), gs=(4, 64), sl=(2, 2 * _wf), ss=(2, 8)),
         note="16-byte shared loads: quarter warps, two quarters in one wavefront when they fit",
         tags=("shared", "16-byte", "complex"))
# Runs of neighbouring floats one thread reads (64 threads, float32).  The source makes 4 (2) loads per
# thread; ptxas may make them one LDS.128 (LDS.64), and the tracer follows what the compiled kernel holds
# (course.trace.compiler).  shared_run4_f32: stores s[t + 64k]: 4 x 1 wavefront per warp; loads, if merged: one
# 16-byte request per warp, lanes 16 bytes apart = 4 quarter phases of 128 bytes -> 4 wavefronts; if not:
# 4 requests, word 4l + k, 4 lanes per bank -> 4-way: 16 wavefronts per warp.
_add("shared_run4_f32", shared_run4_f32, 1, 64, lambda rng: (_f32(rng, 256), _zeros(64)),
     counts(gl=(8, 32), gs=(2, 8), sl=(2, 8), ss=(8, 8)),
     note="a thread's 4 neighbouring floats: one LDS.128 if the compiler merges them",
     tags=("shared", "compiler-merge"))
# shared_run2_f32: merged: one 8-byte request per warp, 32 x 8 = 256 bytes in 2 half-warp phases: 2
# wavefronts; not merged: 2 requests, words 2l + k, 2-way -> 2 wavefronts each.
_add("shared_run2_f32", shared_run2_f32, 1, 64, lambda rng: (_f32(rng, 128), _zeros(64)),
     counts(gl=(4, 16), gs=(2, 8), sl=(2, 4), ss=(4, 4)),
     note="a thread's 2 neighbouring floats: one LDS.64 if the compiler merges them",
     tags=("shared", "compiler-merge"))
# shared_run4_f32_stride5: not 16-byte aligned for 3 threads in 4: the compiler cannot merge; 4 requests
# per warp, word 5l + k: gcd(5, 32) = 1, every bank once: 1 wavefront each.
_add("shared_run4_f32_stride5", shared_run4_f32_stride5, 1, 64, lambda rng: (_f32(rng, 320), _zeros(64)),
     counts(gl=(10, 40), gs=(2, 8), sl=(8, 8), ss=(10, 10)),
     note="neighbouring floats that are not 16-byte aligned: no merge", tags=("shared", "compiler-merge"))
# Structured records (64 threads, PARTICLE = 8 float32 = 32 bytes).  What numba's GPU code does (read in
# the SASS, course.trace.compiler): a field of a packed record (NumPy's default dtype: alignment 1) moves byte
# by byte — p[i].x is 4 LDG.E.U8 — while a field of an aligned record (np.dtype(..., align=True)) is one
# access of its size; a whole-record copy is byte by byte either way.  At 32-byte steps every access
# touches its own sector: 32 per request.
#   record_field_read: packed 4 byte loads per warp (8 requests), aligned 1 (2); 2 stores of out (4 each).
#   record_update: loads of x, vx, y, vy, stores of x, y: packed 16 + 8 per warp, aligned 4 + 2.
#   record_copy: 32 byte loads + 32 byte stores per warp.


def _particles(rng, dtype=PARTICLE, n=64):
    p = np.zeros(n, dtype)
    for name in dtype.names:
        p[name] = rng.standard_normal(n).astype(np.float32)
    return p


for _dt, _lbl, _k in ((PARTICLE, "packed", 4), (PARTICLE_ALIGNED, "aligned", 1)):
    _add(f"record_field_read[{_lbl}]", record_field_read, 2, 32,
         lambda rng, dt=_dt: (_particles(rng, dt), _zeros(64)),
         counts(gl=(2 * _k, 64 * _k), gs=(2, 8)), note=f"p[i].x of a {_lbl} record", tags=("global", "record"))
    _add(f"record_update[{_lbl}]", record_update, 2, 32,
         lambda rng, dt=_dt: (_particles(rng, dt), np.float32(0.5)),
         counts(gl=(8 * _k, 256 * _k), gs=(4 * _k, 128 * _k)),
         note=f"q = p[i]; q.x = q.x + q.vx * dt; q.y += q.vy * dt ({_lbl} record)", tags=("global", "record"))
_add("record_copy[packed]", record_copy, 2, 32, lambda rng: (_particles(rng), np.zeros(64, PARTICLE)),
     counts(gl=(64, 2048), gs=(64, 2048)), note="out[i] = p[i]: byte by byte", tags=("global", "record"))
# shared_partial_warp, 40 threads: warps of 32 and 8 lanes.  Store s[t]: 1 wavefront each; load
# s[39 - t]: distinct consecutive words, 1 each; out stores: warp 0 4 sectors, warp 1 bytes 128..159 = 1.
_add("shared_partial_warp[40 threads]", shared_partial_warp, 1, 40, lambda rng: (_zeros(40),),
     counts(gs=(2, 5), sl=(2, 2), ss=(2, 2)), tags=("shared", "partial-warp"))

# The 32x32 tiles, block (32, 8), 4 passes each way: 32 warp-instructions per access.  Global: rows
# of 128 bytes (float32, 4 sectors) or 256 bytes (float64, 8 sectors).  Row stores tile[r, tx]: 32
# consecutive words, 1 wavefront (float64: 2 half warps, 2).  Column loads tile[tx, r], row pitch P
# words: lane tx is at word tx*P + r, bank (tx*P + r) % 32.
_TILE_ARGS = {
    4: lambda rng: (_mat(rng, TILE, TILE), np.zeros((TILE, TILE), np.float32)),
    8: lambda rng: (_mat(rng, TILE, TILE, np.float64), np.zeros((TILE, TILE), np.float64)),
}


def _tile_case(name, kernel, load_wf, store_wf, itemsize=4, note=""):
    sectors = 4 * itemsize // 4
    _add(name, kernel, 1, (TILE, ROWS), _TILE_ARGS[itemsize],
         counts(gl=(32, 32 * sectors), gs=(32, 32 * sectors), sl=(32, 32 * load_wf), ss=(32, 32 * store_wf)),
         note=note, tags=("shared", "tile"))


# P = 32: every lane in the same bank, 32 distinct words: 32.
_tile_case("tile_f32_32", tile_f32_32, 32, 1)
# P = 33: bank (tx + r) % 32, all different: 1.
_tile_case("tile_f32_33", tile_f32_33, 1, 1)
# P = 34: bank (2tx + r) % 32: 16 banks, 2 lanes each: 2.
_tile_case("tile_f32_34", tile_f32_34, 2, 1)
# swizzle: load word 32tx + (r ^ tx), bank r ^ tx: distinct for distinct tx: 1; store word 32r + (tx ^ r): 1.
_tile_case("tile_f32_swizzle", tile_f32_swizzle, 1, 1)
# partial swizzle: bank r ^ (tx & 7) takes 8 values, lanes tx, tx+8, tx+16, tx+24 share one: 4.
_tile_case("tile_f32_partial_swizzle", tile_f32_partial_swizzle, 4, 1)
# column store tile[tx, r] into [32][32]: 32-way on the store side; row loads: 1.
_tile_case("tile_column_store", tile_column_store, 1, 32)
# float64 [32][32]: half warp tx = 0..15 reads words 64tx + 2r, +1: banks 2r, 2r+1 only, 16 distinct
# words each: 16 per half warp, 32 in all.
_tile_case("tile_f64_32", tile_f64_32, 32, 2, itemsize=8)
# float64 [32][33]: words 66tx + 2r: banks (2tx + 2r) % 32 and +1 for tx = 0..15: all 32 once: 1 per
# half warp, 2 in all.
_tile_case("tile_f64_33", tile_f64_33, 2, 2, itemsize=8,
           note="8-byte shared accesses: the half-warp rule is an assumption the H200 run checks")

# 16x16 tiles, block (16, 16) = 8 warps of two rows each; a (16, 16) float32: each warp reads 128
# contiguous bytes (4 sectors), writes the same.
#   [16][16] store tile[ty, tx]: words 16ty + tx over two rows = 32 consecutive words: 1.
#   [16][16] load tile[tx, ty]: bank (16tx + ty) % 32 = ty or 16 + ty by the parity of tx: 4 banks, 8
#   words each: 8.
#   [16][17] store: words 17a + tx (row a) and 17a + 17 + tx (row a+1): 17a and 17a + 32 share a bank: 2.
#   [16][17] load: bank (17tx + ty) % 32; 17tx % 32 (tx < 16) is {0,2,..,14} U {17,19,..,31}; with
#   ty = a and a + 1, bank a is hit by (tx=0, ty=a) and (tx=15, ty=a+1), all others once: 2.
_add("tile16_pad0[block 16x16]", tile16_pad0, 1, (16, 16),
     lambda rng: (_mat(rng, 16, 16), np.zeros((16, 16), np.float32)),
     counts(gl=(8, 32), gs=(8, 32), sl=(8, 64), ss=(8, 8)), tags=("shared", "tile", "2d"))
_add("tile16_pad1[block 16x16]", tile16_pad1, 1, (16, 16),
     lambda rng: (_mat(rng, 16, 16), np.zeros((16, 16), np.float32)),
     counts(gl=(8, 32), gs=(8, 32), sl=(8, 16), ss=(8, 16)), tags=("shared", "tile", "2d"))

# Reductions, 2 blocks of 128 threads (4 warps).  Per block: the a load (4 requests x 4 sectors), the
# initial s[t] store (4 x 1), the final s[0] load (1 x 1) and out store (1 request, 1 sector).
# Sequential: stride 64 has warps 0, 1 active; 32, 16, 8, 4, 2, 1 warp 0 only: 8 warp-iterations,
# each two loads (s[t], s[t+stride]) and one store, all contiguous: 1 wavefront.
#   loads 16 + 1 = 17 requests / 17 wavefronts; stores 8 + 4 = 12 / 12.
# Strided index (index = 2*stride*t): active warps per stride 1,2,..,64: 2,1,1,1,1,1,1 (8 in all).
#   Wavefronts of s[index] (= of the store) per stride: 1: 2 warps x 2 (even words over 64 words);
#   2: 4 (words 4t, t < 32: 8 banks x 4); 4: 4; 8: 4; 16: 4 (words 32t, t < 4); 32: 2; 64: 1.  The
#   s[index + stride] load has the same counts.  Loads: 2*(4+4+4+4+4+2+1) = 46, + 1 final = 47;
#   stores: 23 + 4 = 27.
_RED_NOTE = ("warps whose lanes all fail `if` may still issue predicated-off instructions on the GPU; "
             "the hardware count says whether ncu counts them")
_add("reduce_sequential[2x128]", reduce_sequential, 2, 128, lambda rng: (_f32(rng, 256), _zeros(2)),
     counts(gl=(8, 32), gs=(2, 2), sl=(34, 34), ss=(24, 24)), note=_RED_NOTE, tags=("shared", "reduction"))
_add("reduce_strided_index[2x128]", reduce_strided_index, 2, 128, lambda rng: (_f32(rng, 256), _zeros(2)),
     counts(gl=(8, 32), gs=(2, 2), sl=(34, 94), ss=(24, 54)), note=_RED_NOTE, tags=("shared", "reduction"))

# Shared atomics, one warp: s[t] = 0 (1 request, 1 wavefront), the final s[t] load (1, 1), out stores
# (1 request, 4 sectors); the 32 atomics on s[0..3] are not loads or stores.
_add("shared_atomic", shared_atomic, 1, 32, lambda rng: (np.zeros(32, np.int32),),
     counts(gs=(1, 4), sl=(1, 1), ss=(1, 1)),
     note="shared atomics (ATOMS): assumed to be in neither op_ld nor op_st", tags=("shared", "atomic"))

# complex64 / complex128 copies through shared memory, 64 threads, counted as course.trace.SPLIT_COMPLEX
# says: global accesses as two half-size accesses (real, imaginary), shared ones as one 8/16-byte access.
# complex64 global a[t]: two requests per warp, the real parts at bytes 8l (4 bytes each) span 256 bytes =
# 8 sectors, the imaginary parts too: 2 x 8 per warp, loads and stores alike.  Shared s[t] (8 bytes): 2
# half warps, 1 each -> 2; s[t ^ 1] the same set -> 2.
# complex128 global: two requests per warp of 8-byte parts at a 16-byte stride: 512 bytes = 16 sectors
# each.  Shared 16-byte accesses: 4 quarter warps of 8 lanes x 16 bytes = 128 bytes, 1 wavefront each -> 4.
_CNOTE = ("how numba's complex accesses compile (one wide instruction or two, per memory space) is "
          "course.trace.SPLIT_COMPLEX's guess; the hardware count decides")
_add("complex_copy[c64]", complex_copy_c64, 1, 64,
     lambda rng: ((rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64),
                  np.zeros(64, np.complex64)),
     counts(gl=(4, 32), gs=(4, 32), sl=(2, 4), ss=(2, 4)), note=_CNOTE, tags=("shared", "8-byte", "complex"))
_add("complex_copy[c128]", complex_copy_c128, 1, 64,
     lambda rng: (rng.standard_normal(64) + 1j * rng.standard_normal(64), np.zeros(64, np.complex128)),
     counts(gl=(4, 64), gs=(4, 64), sl=(2, 8), ss=(2, 8)), note=_CNOTE, tags=("shared", "16-byte", "complex"))

NCU_CASES = list(CASES)
