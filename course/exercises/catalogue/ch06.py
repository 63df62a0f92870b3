"""Chapter 06: a grid sized for the GPU, not the data — a 2-D grid-stride clamp, a sum that adds in registers and
publishes once per thread (judged on atomics), and a 2-D stencil whose halo is loaded once."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size
from course.exercises.properties import atomics_at_most, coalesced, global_loads_at_most, no_races, uses_shared
from course.exercises.registry import register

# 06 -- a 2-D grid-stride loop: clamp a matrix with a grid of the size you chose

GS_BLOCK = (32, 4)
GS_GRID = (2, 2)  # 64 x 8 threads, whatever the matrix
GS_LO, GS_HI = -10.0, 20.0


def _gs_input(rng, rows, cols, why):
    x = f32(rng, (rows, cols))
    out = np.full((rows, cols), np.nan, np.float32)
    return Input(f"{rows}x{cols} ({why})", GS_GRID, GS_BLOCK, (x, out, GS_LO, GS_HI),
                 {1: np.clip(x, GS_LO, GS_HI).astype(np.float32)}, ("x", "out", "lo", "hi"))


def _gs_inputs(rng):
    return [
        _gs_input(rng, 1, 1, "one element"),
        _gs_input(rng, 17, 16, "more rows than columns, less than the grid's columns"),
        _gs_input(rng, 1, 65, "one row, one column past the grid"),
        _gs_input(rng, 8, 64, "exactly one element per thread"),
        _gs_input(rng, 9, 64, "one row past the grid"),
        _gs_input(rng, random_size(rng, 17, 40), random_size(rng, 130, 200), "random, several passes each way"),
    ]


register(Exercise(
    name="06.clamp_grid_stride",
    title="A 2-D grid-stride loop: any matrix, a grid of the size you chose",
    signature="clamp_grid_stride(x, out, lo, hi)",
    task=("Write `clamp_grid_stride(x, out, lo, hi)`: out[r, c] = min(max(x[r, c], lo), hi) for every element "
          "of the float32 matrix x. The grid is sized for the GPU, not for the data (chapter 06: enough resident "
          f"warps to hide latency, then stop): it is launched with threads_per_block = {GS_BLOCK} and "
          f"blocks_per_grid = {GS_GRID} whatever the shape, x along a row, so one thread must handle several "
          "elements in both directions: a grid-stride loop over the rows and, inside it, over the columns. Keep "
          "each pass coalesced (合并访存): in one step, the 32 lanes of a warp touch 32 neighbouring elements of "
          "a row."),
    make_inputs=_gs_inputs,
    make_trace_input=lambda rng: _gs_input(rng, 16, 256, "two passes down, four across"),
    properties=(
        coalesced("load", hint="In every step, neighbouring lanes (threadIdx.x) must touch neighbouring elements "
                               "of one row: which index should x give, and how far should a thread jump along "
                               "the row so that this stays true?"),
        coalesced("store"),
    ),
    hint_wrong=("Elements past the grid's 64 columns or 8 rows never written? After its first element, a thread "
                "must go on to the next one no other thread handles, along the row (by the grid's width in "
                "threads) and down the columns (by its height), until it passes the end in each direction."),
    hint_oob="Each loop must stop before its own axis ends: rows before x.shape[0], columns before x.shape[1].",
    stub_hint="cuda.grid(2) and cuda.gridsize(2), x first; loop over rows by the grid's height, columns by its width",
))


# 06 -- a sum on a fixed grid: registers first, one atomic per thread

SG_TPB = 128
SG_BLOCKS = 2


def _sg_input(rng, n, why):
    x = f32(rng, n)
    out = np.zeros(1, np.float32)
    return Input(f"n={n} ({why})", (SG_BLOCKS,), (SG_TPB,), (x, out),
                 {1: np.array([x.astype(np.float64).sum()], np.float32)}, ("x", "out"))


def _sg_inputs(rng):
    grid = SG_BLOCKS * SG_TPB
    return [
        _sg_input(rng, 1, "one element"),
        _sg_input(rng, 131, "fewer elements than threads"),
        _sg_input(rng, grid + 1, "one element more than threads"),
        _sg_input(rng, random_size(rng, 1500, 3000), "random"),
    ]


SG_TRACE_N = 16 * SG_BLOCKS * SG_TPB

register(Exercise(
    name="06.sum_grid_stride",
    title="A sum on a fixed grid: add in registers, publish once",
    signature="sum_grid_stride(x, out)",
    task=("Write `sum_grid_stride(x, out)`: add every element of the float32 vector x into out[0] (which starts "
          f"at 0). It is launched with threads_per_block = {SG_TPB} and blocks_per_grid = {SG_BLOCKS}, whatever n "
          "is. cuda.atomic.add(out, 0, x[i]) for every element is correct, and all n atomics queue on one "
          "address. Let each thread instead walk the array with a coalesced grid-stride loop (合并访存), add its "
          "elements in a register, and publish its partial sum with one atomic: at most one atomic per thread."),
    make_inputs=_sg_inputs,
    make_trace_input=lambda rng: _sg_input(rng, SG_TRACE_N, "16 passes of the grid"),
    properties=(
        coalesced("load"),
        atomics_at_most("global", SG_BLOCKS * SG_TPB, "one per thread",
                        "A register is private to its thread and costs nothing to add into: how many of the "
                        "thread's elements can it hold the sum of before anyone else needs to know?"),
    ),
    hint_wrong=("Every element must be added exactly once: step by the whole grid, stop at x.shape[0], and let "
                "each thread publish only what it added itself."),
    hint_oob="The loop must stop before x.shape[0]: test the index before every access.",
    stub_hint="grid-stride loop into a local sum; one cuda.atomic.add at the end",
    atol=1e-3,
))


# 06 -- a 2-D stencil through a shared tile with a halo

S2_BLOCK = (32, 8)


def _s2_ref(a):
    p = np.zeros((a.shape[0] + 2, a.shape[1] + 2), np.float64)
    p[1:-1, 1:-1] = a
    out = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    return out.astype(np.float32)


def _s2_input(rng, rows, cols, why):
    a = f32(rng, (rows, cols))
    out = np.full((rows, cols), np.nan, np.float32)
    grid = (ceil_div(cols, S2_BLOCK[0]), ceil_div(rows, S2_BLOCK[1]))
    return Input(f"{rows}x{cols} ({why})", grid, S2_BLOCK, (a, out), {1: _s2_ref(a)}, ("a", "out"))


def _s2_inputs(rng):
    return [
        _s2_input(rng, 1, 1, "one element"),
        _s2_input(rng, 17, 16, "more rows than columns"),
        _s2_input(rng, 1, 33, "one row, just past one block"),
        _s2_input(rng, 13, 47, "primes"),
        _s2_input(rng, random_size(rng, 9, 30), random_size(rng, 33, 70), "random"),
    ]


S2_TRACE = (32, 64)
# each block loads its 32x8 elements (8 row requests of 4 sectors), 2 halo rows (4 sectors each) and 2 halo
# columns (8 single-sector requests each): 56 sectors; a direct 5-point stencil loads about 5x32 per block
S2_MAX_SECTORS = (S2_TRACE[0] // 8) * (S2_TRACE[1] // 32) * 60

register(Exercise(
    name="06.stencil_2d",
    title="A 2-D stencil through a shared tile with a halo",
    signature="stencil_2d(a, out)",
    task=("Write `stencil_2d(a, out)`: the 5-point Laplacian out[r, c] = 4 a[r, c] - a[r-1, c] - a[r+1, c] - "
          "a[r, c-1] - a[r, c+1] of a float32 matrix, where a outside the matrix counts as 0 (模板计算). It is "
          f"launched with threads_per_block = {S2_BLOCK} and blocks_per_grid = (ceil(cols / {S2_BLOCK[0]}), "
          f"ceil(rows / {S2_BLOCK[1]})), one thread per element, x along a row. Each element is needed by five "
          "threads: stage the block's 8x32 elements and a one-element halo (光环区) on every side in a "
          "cuda.shared.array, loaded from global memory once with coalesced row loads, then compute from the "
          "tile."),
    make_inputs=_s2_inputs,
    make_trace_input=lambda rng: _s2_input(rng, *S2_TRACE, "full blocks"),
    properties=(
        uses_shared(),
        coalesced("load"),
        coalesced("store"),
        global_loads_at_most(S2_MAX_SECTORS, "each element once, plus the halo",
                             "Count the loads of one block: its 8 rows of 32, two halo rows and two halo columns. "
                             "Every other read should come from the tile."),
        no_races(),
    ),
    hint_wrong=("Check the halo: the tile is 10x34, element (r, c) of the block sits at tile[ty + 1, tx + 1], and "
                "halo slots outside the matrix must hold 0 before anyone reads them."),
    hint_oob="Guard every load of a (the halo reaches one past every edge) and the store of out.",
    stub_hint="a 10x34 shared tile: the block's 8x32 elements, then its halo rows and columns; syncthreads; 5 reads",
))
