"""Chapter 09: matrix products — a matrix-vector product with one warp per row, a tiled c = a @ b.T, a
register-tiled SGEMM with 2x2 outputs per thread (judged on shared loads per multiply-add), the transposed
product y = a.T @ x with one thread per column, the seed's tiled kernel made correct for every shape with a
rectangular 8x32 tile (§3: judged on edge shapes and global loads per multiply-add), and the warp-per-row
matrix-vector product with 16-byte loads (§6: judged on load requests and sectors)."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input, Property
from course.exercises.inputs import ceil_div, f32, random_size, trace_shape, trace_size
from course.exercises.properties import (
    coalesced,
    conflict_free,
    no_atomics,
    no_races,
    shared_loads_at_most,
    uses_shared,
)
from course.exercises.registry import register

# 09 -- matrix-vector product, one warp per row

MV_BLOCK = (32, 4)


def _mv_input(rng, rows, cols, why):
    a, x = f32(rng, (rows, cols)) / 8, f32(rng, cols) / 8
    y = np.full(rows, np.nan, np.float32)
    want = (a.astype(np.float64) @ x).astype(np.float32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(rows, MV_BLOCK[1]),), MV_BLOCK, (a, x, y), {2: want},
                 ("a", "x", "y"))


def _mv_inputs(rng):
    return [
        _mv_input(rng, 1, 1, "one element"),
        _mv_input(rng, 17, 16, "rows past a block, short rows"),
        _mv_input(rng, 1, 33, "one row, just past a warp"),
        _mv_input(rng, random_size(rng, 5, 20), random_size(rng, 60, 200), "random"),
    ]


register(Exercise(
    name="09.matvec",
    title="Matrix-vector product: one warp per row",
    signature="matvec(a, x, y)",
    task=("Write `matvec(a, x, y)`: y = a @ x for a float32 matrix a of shape (rows, cols) and vectors x (cols) "
          f"and y (rows). It is launched with threads_per_block = {MV_BLOCK} and blocks_per_grid = ceil(rows / "
          f"{MV_BLOCK[1]}): warp threadIdx.y of the block owns one row. One thread per row would make a warp read "
          "32 rows at once (32 sectors per request); instead the 32 lanes of the row's warp walk along the row "
          "together (lane l takes columns l, l + 32, ...: coalesced, 合并访存), each adding its products, and the "
          "warp adds its 32 partial sums with shuffles (洗牌) before one lane writes y."),
    make_inputs=_mv_inputs,
    make_trace_input=lambda rng: _mv_input(rng, trace_size(rng, 8, MV_BLOCK[1]), trace_size(rng, 256, 32), "whole blocks"),
    properties=(coalesced("load", hint="Lanes of one warp should read neighbouring columns of one row in each "
                                       "step, not one column of 32 different rows."),
                no_atomics("global", "Each warp owns its row: the warp adds up its partial sums itself (shuffles) "
                                     "and one lane writes y.")),
    hint_wrong=("Every column of the row must be counted once: lane l takes l, l + 32, ... < cols; after the "
                "shuffles only lane 0 holds the whole sum (with shfl_down), every lane with shfl_xor."),
    hint_oob="Rows past the last one (the last block) and columns past cols must not be read.",
    stub_hint="row = blockIdx.x * 4 + threadIdx.y; lanes stride the row by 32; shuffle-reduce; lane 0 writes",
    atol=1e-3,
))


# 09 -- c = a @ b.T through shared tiles

MM_TILE = 16
MM_BLOCK = (MM_TILE, MM_TILE)


def _mt_input(rng, m, k, n, why):
    a, b = f32(rng, (m, k)) / 8, f32(rng, (n, k)) / 8
    c = np.full((m, n), np.nan, np.float32)
    want = (a.astype(np.float64) @ b.T.astype(np.float64)).astype(np.float32)
    return Input(f"{m}x{k} @ ({n}x{k}).T ({why})", (ceil_div(n, MM_TILE), ceil_div(m, MM_TILE)), MM_BLOCK, (a, b, c),
                 {2: want}, ("a", "b", "c"))


def _mt_inputs(rng):
    return [
        _mt_input(rng, 1, 1, 1, "one element"),
        _mt_input(rng, 17, 16, 16, "one row past a tile"),
        _mt_input(rng, 1, 33, 5, "k not a multiple of the tile"),
        _mt_input(rng, 13, 19, 23, "primes"),
        _mt_input(rng, random_size(rng, 10, 34), random_size(rng, 10, 40), random_size(rng, 10, 34), "random"),
    ]


register(Exercise(
    name="09.matmul_abt",
    title="Tiled multiply by a transposed matrix: c = a @ b.T",
    signature="matmul_abt(a, b, c)",
    task=("Write `matmul_abt(a, b, c)`: c = a @ b.T for float32 matrices a (m, k), b (n, k) and c (m, n), so "
          "c[i, j] is the dot product of row i of a and row j of b (as in attention's Q Kᵀ). It is launched with "
          f"threads_per_block = {MM_BLOCK} and one block per {MM_TILE}x{MM_TILE} tile of c: blocks_per_grid = "
          f"(ceil(n / {MM_TILE}), ceil(m / {MM_TILE})). Stage tiles of a and b in shared memory as chapter 09 "
          "does (分块), for every shape. Two things change with b's layout: which index of b the lanes of a warp "
          "should walk along to load it coalesced (合并访存), and how the tile of b is then read in the inner "
          "loop without bank conflicts (存储体冲突)."),
    make_inputs=_mt_inputs,
    make_trace_input=lambda rng: _mt_input(rng, *trace_shape(rng, (32, 32, 32), (MM_TILE,) * 3, 40_960), "full tiles"),
    properties=(
        uses_shared(hint="Each element of a and b should be loaded from global memory once per tile and then "
                         "read 16 times from a cuda.shared.array."),
        coalesced("load", hint="Rows of b are contiguous along k: lanes with neighbouring threadIdx.x should "
                               "load neighbouring k of one row of b."),
        coalesced("store"),
        conflict_free("load", name="no bank conflicts on the tile reads (存储体冲突)",
                      hint="In the inner loop, lane tx reads the tile of b at a row that depends on tx: which "
                           "bank does each row start in?"),
        no_races(),
    ),
    hint_wrong=("c[i, j] pairs row i of a with row j of b. Count the tiles along k rounded up, and put 0 in a "
                "tile slot whose element lies past the edge of a or b."),
    hint_oob=("Tiles at the edges reach past a, b and c: guard each load (row < m and k-index < k for a; "
              "row < n and k-index < k for b) and the store. Every thread must still reach every barrier."),
    stub_hint="tiles of a and b, both loaded along k; syncthreads; multiply-add; syncthreads; guard the edges",
    atol=1e-4,
))


# 09 -- a register-tiled SGEMM: 2x2 outputs per thread

RT_THREADS = (16, 16)
RT_TILE = 32  # the block's tile of c: 32x32, each thread 2x2 of it
RT_BK = 16


def _rt_input(rng, m, k, n, why):
    a, b = f32(rng, (m, k)) / 8, f32(rng, (k, n)) / 8
    c = np.full((m, n), np.nan, np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    return Input(f"{m}x{k} @ {k}x{n} ({why})", (ceil_div(n, RT_TILE), ceil_div(m, RT_TILE)), RT_THREADS, (a, b, c),
                 {2: want}, ("a", "b", "c"))


def _rt_inputs(rng):
    return [
        _rt_input(rng, 1, 1, 1, "one element"),
        _rt_input(rng, 17, 16, 16, "less than one tile"),
        _rt_input(rng, 1, 33, 5, "k not a multiple of the tile"),
        _rt_input(rng, 37, 19, 41, "primes, past one tile"),
        _rt_input(rng, random_size(rng, 33, 50), random_size(rng, 10, 40), random_size(rng, 20, 50), "random"),
    ]


RT_TRACE = (64, 32, 64)  # about the traced m, k, n: drawn per check in whole tiles, m k n at most 1.5 x 32^3


def RT_MAX_SHARED_LOADS(inp):
    """A plain 16x16 tiled kernel makes 2 shared loads per multiply-add: m*n*k*2/32 warp requests for the traced
    (m, k) @ (k, n); 2x2 per thread halves that (4 loads for 4 multiply-adds)."""
    (m, k), n = inp.args[0].shape, inp.args[1].shape[1]
    return m * k * n // 32

register(Exercise(
    name="09.sgemm_regtile",
    title="Register tiling: 2x2 outputs per thread",
    signature="sgemm_regtile(a, b, c)",
    task=("Write `sgemm_regtile(a, b, c)`: c = a @ b for float32 a (m, k), b (k, n), c (m, n). It is launched "
          f"with threads_per_block = {RT_THREADS} and one block per {RT_TILE}x{RT_TILE} tile of c: blocks_per_grid "
          f"= (ceil(n / {RT_TILE}), ceil(m / {RT_TILE})), so each thread computes 4 elements of c (寄存器分块). "
          f"Stage a {RT_TILE}x{RT_BK} tile of a and a {RT_BK}x{RT_TILE} tile of b in shared memory per step along "
          "k; in the inner loop each thread loads 2 values of a and 2 of b into registers and does 4 "
          "multiply-adds with them, half the shared loads per multiply-add of the plain tiled kernel. Choose "
          "which 2x2 elements a thread owns so that its warp's stores and the tile reads stay coalesced and free "
          "of bank conflicts; correct for every shape."),
    make_inputs=_rt_inputs,
    make_trace_input=lambda rng: _rt_input(rng, *trace_shape(rng, RT_TRACE, (RT_TILE, RT_BK, RT_TILE), 49_152),
                                           "full tiles"),
    properties=(
        uses_shared(),
        coalesced("load"),
        coalesced("store", hint="If a thread's 2x2 outputs are neighbours, lanes of a warp store every other "
                                "element. Which spacing of a thread's 2 columns keeps a warp's stores contiguous?"),
        conflict_free("load", name="no bank conflicts on the tile reads (存储体冲突)"),
        shared_loads_at_most(RT_MAX_SHARED_LOADS, "one per multiply-add",
                             "Each value loaded from a shared tile into a register should serve two multiply-adds: "
                             "load a[i0], a[i1], b[j0], b[j1] once per k, then use all four products."),
        no_races(),
    ),
    hint_wrong=("Each thread owns 2 rows and 2 columns of the block's 32x32 tile; check that the four cover the "
                "tile once, the tiles along k are rounded up, and slots past the edges hold 0."),
    hint_oob="Guard every load of a and b and every store of c: edge tiles reach past the matrices.",
    stub_hint="4 accumulators in registers; per k-tile: load 32x16 and 16x32, sync, 16 steps of 2+2 loads and 4 FMAs",
    atol=1e-4,
))


# 09 -- the transposed product y = a.T @ x: one thread per column, coalesced without a warp per row

MVT_TPB = 128


def _mvt_input(rng, rows, cols, why):
    a, x = f32(rng, (rows, cols)) / 8, f32(rng, rows) / 8
    y = np.full(cols, np.nan, np.float32)
    want = (a.astype(np.float64).T @ x).astype(np.float32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(cols, MVT_TPB),), (MVT_TPB,), (a, x, y), {2: want},
                 ("a", "x", "y"))


def _mvt_inputs(rng):
    return [
        _mvt_input(rng, 1, 1, "one element"),
        _mvt_input(rng, 17, 16, "short columns, less than a warp"),
        _mvt_input(rng, 1, 129, "one row, one block and one column"),
        _mvt_input(rng, random_size(rng, 20, 60), random_size(rng, 130, 300), "random"),
    ]


MVT_TRACE = (32, 256)

register(Exercise(
    name="09.matvec_t",
    title="The transposed product y = a.T @ x, coalesced with one thread per column",
    signature="matvec_t(a, x, y)",
    task=("Write `matvec_t(a, x, y)`: y[c] = Σ_r a[r, c] · x[r] for a row-major float32 matrix a of shape (rows, "
          f"cols) (y = a.T @ x). It is launched with threads_per_block = {MVT_TPB} and blocks_per_grid = ceil(cols / "
          f"{MVT_TPB}): one thread per column, each adding its column's products in a register (float32). Unlike "
          "09.matvec, no warp per row is needed: when the lanes of a warp own neighbouring columns, each step "
          "of their loops reads 32 neighbouring elements of one row of a (合并访存), and all of them read the "
          "same x[r]."),
    make_inputs=_mvt_inputs,
    make_trace_input=lambda rng: _mvt_input(rng, trace_size(rng, MVT_TRACE[0], 8), trace_size(rng, MVT_TRACE[1], MVT_TPB), "whole blocks"),
    properties=(
        coalesced("load", hint="In one step of the loop, which elements of a do the 32 lanes of a warp read? If a "
                               "lane walks along a row, lanes are a whole row apart: let the lane own the column "
                               "and walk down it."),
        no_atomics("global", hint="Each thread owns its column's sum: write y[c] once."),
    ),
    hint_wrong=("y has one element per column of a: thread c adds a[r, c] * x[r] over every row r, and guards c "
                "against a.shape[1], not a.shape[0]."),
    hint_oob="Threads past the last column must do nothing: compare the column with a.shape[1].",
    stub_hint="one thread per column: loop over the rows, add a[r, c] * x[r] in a register, write y[c]",
    atol=1e-3,
))


# 09 -- §3: the seed's tiled kernel correct for every shape, with a rectangular tile: 8 rows x 32 columns of c, k in
# steps of 32

RR_THREADS = (32, 8)  # a warp per row of the block's tile: 32 neighbouring columns of c
RR_ROWS, RR_COLS, RR_K = 8, 32, 32


def _rr_input(rng, m, k, n, why):
    a, b = f32(rng, (m, k)) / 8, f32(rng, (k, n)) / 8
    c = np.full((m, n), np.nan, np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    return Input(f"{m}x{k} @ {k}x{n} ({why})", (ceil_div(n, RR_COLS), ceil_div(m, RR_ROWS)), RR_THREADS, (a, b, c),
                 {2: want}, ("a", "b", "c"))


def _rr_inputs(rng):
    return [
        _rr_input(rng, 1, 1, 1, "one element"),
        _rr_input(rng, 17, 16, 16, "rows past a tile, k shorter than one step"),
        _rr_input(rng, 1, 33, 5, "k one past a step, n less than a warp"),
        _rr_input(rng, 13, 19, 23, "primes"),
        _rr_input(rng, 9, 65, 33, "one past a tile in every dimension"),
        _rr_input(rng, random_size(rng, 10, 40), random_size(rng, 10, 80), random_size(rng, 10, 80), "random"),
    ]


RR_TRACE = (16, 64, 64)  # about the traced m, k, n: drawn per check in whole tiles and steps, m k n at most 49152


def _rect_global_loads():
    """Global loads per multiply-add at most 5/32: per step of 32 along k a thread loads 1 element of a and 4 of b
    and does 32 multiply-adds with what its block staged (one warp request serves 32 lanes)."""

    def measure(report, extra):
        (m, k), n = extra["input"].args[0].shape, extra["input"].args[1].shape[1]
        req = report.totals()["global_load_requests"]
        most = m * k * n * 5 // (32 * 32)
        return req <= most, (f"{req} global load requests for {m * k * n} multiply-adds: {req * 32 / (m * k * n):.3f} "
                             f"loads per multiply-add (want at most {most}: 5/32 = 0.156, 1 of a and 4 of b per "
                             f"thread for each step of 32 along k)")

    return Property("global loads per multiply-add at most 5/32 (tiles reused from shared memory, 分块)", measure,
                    "Stage a whole 8x32 tile of a and a 32x32 tile of b per step (each thread 1 element of a and 4 "
                    "rows of b), then run 32 multiply-adds from shared memory: a step of 8 along k loads twice "
                    "as often per multiply-add, and reading a or b from global memory in the inner loop 2 per "
                    "multiply-add.")


register(Exercise(
    name="09.tiled_rect",
    title="The seed's tiled kernel, correct for every shape, with an 8x32 tile",
    signature="tiled_rect(a, b, c)",
    task=("Write `tiled_rect(a, b, c)`: c = a @ b for float32 a (m, k), b (k, n), c (m, n), any shape. It is "
          f"launched with threads_per_block = {RR_THREADS} and one block per {RR_ROWS}x{RR_COLS} tile of c: "
          f"blocks_per_grid = (ceil(n / {RR_COLS}), ceil(m / {RR_ROWS})), so a warp owns 32 neighbouring columns of "
          f"one row of c. Walk k in steps of {RR_K}: per step, stage the {RR_ROWS}x{RR_K} tile of a (one element "
          f"per thread, lanes along k) and the {RR_K}x{RR_COLS} tile of b (4 rows per thread) in shared memory "
          "(分块), sync, add 32 products, sync. Then fix what chapter 09 §3 found in the seed's kernel: round the "
          "number of steps up, load 0 for every tile slot outside a or b, store only inside c, and let every "
          "thread reach every barrier."),
    make_inputs=_rr_inputs,
    make_trace_input=lambda rng: _rr_input(rng, *trace_shape(rng, RR_TRACE, (RR_ROWS, RR_K, RR_COLS), 49_152),
                                           "whole tiles"),
    properties=(
        uses_shared(),
        _rect_global_loads(),
        coalesced("load", hint="Lanes of a warp (neighbouring threadIdx.x) should load neighbouring k of one row of "
                               "a and neighbouring columns of one row of b."),
        coalesced("store"),
        conflict_free("load", name="no bank conflicts on the tile reads (存储体冲突)"),
        no_races(),
    ),
    hint_wrong=("Count the steps along k rounded up, (k + 31) // 32: with k // 32, as the seed's N / TILE, the "
                "last k % 32 terms are never added (all of them when k < 32). Put 0 in every tile slot whose "
                "element lies past the edge of a or b."),
    hint_oob=("Edge tiles reach past a, b and c: guard each load (row < m and the k-index < k for a; the k-index "
              "< k and col < n for b) and the store (row < m and col < n). Every thread must still reach both "
              "syncthreads()."),
    stub_hint="tiles 8x32 of a and 32x32 of b per step along k, zeros past the edges; sync; 32 products; sync; "
              "guarded store",
    atol=1e-4,
))


# 09 -- §6: the warp-per-row matrix-vector product with 16-byte loads

MV4_BLOCK = MV_BLOCK


def _mv4_input(rng, rows, cols, why):
    a, x = f32(rng, (rows, cols)) / 8, f32(rng, cols) / 8
    y = np.full(rows, np.nan, np.float32)
    want = (a.astype(np.float64) @ x).astype(np.float32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(rows, MV4_BLOCK[1]),), MV4_BLOCK, (a, x, y), {2: want},
                 ("a", "x", "y"))


def _mv4_inputs(rng):
    return [
        _mv4_input(rng, 1, 4, "one float4"),
        _mv4_input(rng, 17, 16, "rows past a block, 4 float4s per row"),
        _mv4_input(rng, 1, 132, "one row: a warp's 128 floats and one float4 more"),
        _mv4_input(rng, 6, 388, "three warp steps and one float4"),
        _mv4_input(rng, random_size(rng, 5, 20), 4 * random_size(rng, 15, 100), "random"),
    ]


def _wide_row_loads():
    """16-byte loads by whole warps: at most one request per 128 floats of a and of x, 16 sectors each."""

    def measure(report, extra):
        rows, cols = extra["input"].args[0].shape  # cols a multiple of 128 in the traced input: no partial step
        t = report.totals()
        req, sectors = t["global_load_requests"], t["global_load_sectors"]
        if not req:
            return False, "no global loads were traced"
        most = 2 * rows * cols // 128  # a once and x once per row, 32 lanes x 16 bytes per request
        return req <= most and sectors <= 2 * rows * cols * 4 // 32, (
            f"{req} global load requests for a {rows}x{cols} a and x read once per row, {sectors} sectors: "
            f"{sectors / req:.2f} sectors per request (want at most {most} requests of 16 sectors: 32 lanes x 16 "
            f"bytes, each sector once)")

    return Property("16-byte loads by whole warps: 16 sectors per load request (one per 128 floats)", measure,
                    "Each lane should read 4 neighbouring floats of the row, and the same 4 of x, with one 16-byte "
                    "load each: `gload4(a, (row, 4 * q))` and `gload4(x, (4 * q,))` return them from one "
                    "instruction. Four 4-byte loads make four requests where one would do; lanes whose float4s "
                    "are not neighbours spread a request over 32 sectors.")


register(Exercise(
    name="09.matvec_float4",
    title="Matrix-vector product with 16-byte loads",
    signature="matvec_float4(a, x, y)",
    task=("Write `matvec_float4(a, x, y)`: y = a @ x for a float32 matrix a of shape (rows, cols) and vectors x "
          "(cols) and y (rows), where cols is a multiple of 4 (so every row starts on 16 bytes). It is launched as "
          f"09.matvec, with threads_per_block = {MV4_BLOCK} and blocks_per_grid = ceil(rows / {MV4_BLOCK[1]}): "
          "warp threadIdx.y of the block owns one row. Read the row as float4s, as chapter 09 §6's `vectorized` "
          "reads its tiles: lane l takes float4s q = l, l + 32, ... < cols / 4, each with one 16-byte load "
          "(向量化访存) of a and one of x (`gload4(a, (row, 4 * q))`, `gload4(x, (4 * q,))`, after `from "
          "course.kernels.vector import gload4`), adds the 4 products, and the warp adds its 32 partial sums with "
          "shuffles (洗牌) before one lane writes y."),
    make_inputs=_mv4_inputs,
    make_trace_input=lambda rng: _mv4_input(rng, trace_size(rng, 8, MV4_BLOCK[1]), trace_size(rng, 512, 128),
                                            "whole blocks, whole warp steps"),
    properties=(
        _wide_row_loads(),
        no_atomics("global", "Each warp owns its row: the warp adds up its partial sums itself (shuffles) and one "
                             "lane writes y."),
    ),
    hint_wrong=("Every float4 of the row must be counted once: lane l takes q = l, l + 32, ... < cols // 4 and adds "
                "all 4 products of a[row, 4q .. 4q + 3] and x[4q .. 4q + 3]; after shfl_down only lane 0 holds "
                "the whole sum."),
    hint_oob="Rows past the last one (the last block) and float4s past cols // 4 must not be read.",
    stub_hint="row = blockIdx.x * 4 + threadIdx.y; lanes stride the row by 32 float4s with gload4; shuffle-reduce; "
              "lane 0 writes",
    atol=1e-3,
))
