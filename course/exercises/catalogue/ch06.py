"""Chapter 06: a grid sized for the GPU, not the data — a 2-D grid-stride clamp, a sum that adds in registers and
publishes once per thread (judged on atomics), a 2-D stencil whose halo is loaded once, a maximum with one atomic
per warp, four independent loads per thread (latency hiding by more bytes in flight), and a dot product with one
atomic per block."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size, trace_size
from course.exercises.properties import (
    atomics_at_most,
    coalesced,
    global_loads_at_most,
    no_races,
    shared_bytes_at_most,
    uses_shared,
)
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
    make_trace_input=lambda rng: _gs_input(rng, trace_size(rng, 16, 8), trace_size(rng, 256, 64), "several passes down and across"),
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
    make_trace_input=lambda rng: _sg_input(rng, trace_size(rng, SG_TRACE_N), "several passes of the grid"),
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


S2_TRACE = (32, 64)  # about the traced shape: drawn per check in whole blocks (course.exercises.inputs.trace_size)


def S2_MAX_SECTORS(inp):
    """The sectors the traced launch may load: each block loads its 32x8 elements (8 row requests of 4 sectors),
    2 halo rows (4 sectors each) and 2 halo columns (8 single-sector requests each): 56 sectors, 60 allowed; a
    direct 5-point stencil loads about 5x32 per block."""
    return inp.griddim[0] * inp.griddim[1] * 60

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
    make_trace_input=lambda rng: _s2_input(rng, trace_size(rng, S2_TRACE[0], S2_BLOCK[1]), trace_size(rng, S2_TRACE[1], S2_BLOCK[0]), "whole blocks"),
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


# 06 -- a maximum on a fixed grid: registers, then the warp, then one atomic per warp

MX_TPB = 128
MX_BLOCKS = 2
MX_WARPS = MX_BLOCKS * MX_TPB // 32


def _mx_input(rng, n, why, negative=False):
    x = f32(rng, n)
    if negative:
        x = -np.abs(x) - 1  # every element below zero: a running maximum that starts at 0 is wrong
    out = np.full(1, -np.inf, np.float32)
    return Input(f"n={n} ({why})", (MX_BLOCKS,), (MX_TPB,), (x, out), {1: np.array([x.max()], np.float32)},
                 ("x", "out"))


def _mx_inputs(rng):
    grid = MX_BLOCKS * MX_TPB
    return [
        _mx_input(rng, 1, "one element"),
        _mx_input(rng, 33, "one warp and one lane"),
        _mx_input(rng, grid + 1, "one element more than threads"),
        _mx_input(rng, random_size(rng, 700, 1500), "all negative", negative=True),
        _mx_input(rng, random_size(rng, 1500, 3000), "random"),
    ]


register(Exercise(
    name="06.max_grid_stride",
    title="A maximum on a fixed grid: registers, a warp, one atomic per warp",
    signature="max_grid_stride(x, out)",
    task=("Write `max_grid_stride(x, out)`: out[0] = the largest element of the float32 vector x (out starts at "
          f"-inf). It is launched with threads_per_block = {MX_TPB} and blocks_per_grid = {MX_BLOCKS}, whatever n "
          "is. Each thread walks x with a coalesced grid-stride loop (合并访存) keeping its running maximum in a "
          "register; then the 32 lanes of each warp combine theirs with register shuffles (cuda.shfl_down_sync or "
          "cuda.shfl_xor_sync, 洗牌), and lane 0 publishes the warp's maximum with cuda.atomic.max: at most one "
          f"atomic per warp ({MX_WARPS} in all), where one per element would queue n atomics on one address."),
    make_inputs=_mx_inputs,
    make_trace_input=lambda rng: _mx_input(rng, trace_size(rng, 16 * MX_BLOCKS * MX_TPB), "several passes of the grid"),
    properties=(
        coalesced("load"),
        atomics_at_most("global", MX_WARPS, "one per warp",
                        "The lanes of a warp can compare their values in registers (shuffles) before anyone "
                        "touches memory: how many of the warp's lanes then need to publish?"),
    ),
    hint_wrong=("Every element must be compared once, and a thread with no element must not win: start its "
                "running maximum at -inf (or at its first element), not at 0 — x may be all negative. Every lane "
                "of the warp must take part in each shuffle, with a full mask."),
    hint_oob="The loop must stop before x.shape[0]: test the index before every access.",
    stub_hint="grid-stride loop into a register maximum; five shuffles per warp; lane 0: cuda.atomic.max",
))


# 06 -- latency hiding by independent loads: four elements per thread, all loaded before any is stored

CO_TPB = 128
CO_PER_THREAD = 4
CO_PER_BLOCK = CO_TPB * CO_PER_THREAD


def _co_input(rng, n, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    factor = np.float32(rng.choice([0.5, -2.0, 3.0]))
    return Input(f"n={n} ({why})", (ceil_div(n, CO_PER_BLOCK),), (CO_TPB,), (x, out, factor),
                 {1: (x * factor).astype(np.float32)}, ("x", "out", "factor"))


def _co_inputs(rng):
    return [
        _co_input(rng, 1, "one element"),
        _co_input(rng, 129, "one block's first pass and one element"),
        _co_input(rng, CO_PER_BLOCK - 1, "one element short of a block's four passes"),
        _co_input(rng, CO_PER_BLOCK + 3, "one block and 3 elements"),
        _co_input(rng, random_size(rng, 1100, 2500), "random"),
    ]


register(Exercise(
    name="06.scale_coarsened",
    title="Latency hiding with independent loads: four elements per thread",
    signature="scale_coarsened(x, out, factor)",
    task=("Write `scale_coarsened(x, out, factor)`: out[i] = factor * x[i] for every i < x.shape[0]. Each "
          f"thread handles {CO_PER_THREAD} elements (thread coarsening, 线程粗化): it is launched with "
          f"threads_per_block = {CO_TPB} and blocks_per_grid = ceil(n / {CO_PER_BLOCK}), block b owning elements "
          f"{CO_PER_BLOCK}·b … {CO_PER_BLOCK}·b + {CO_PER_BLOCK - 1}. Little's law (chapter 06): with fewer warps "
          "in flight, each must keep more bytes in flight, so let every thread issue its four independent loads "
          "before it uses any of them. Keep each of the four passes coalesced (合并访存): in one load, the 32 "
          "lanes of a warp read 32 neighbouring elements."),
    make_inputs=_co_inputs,
    make_trace_input=lambda rng: _co_input(rng, trace_size(rng, 4 * CO_PER_BLOCK, CO_PER_BLOCK), "whole blocks"),
    properties=(
        coalesced("load", hint="Which elements do the 32 lanes of a warp read in one of the four loads? If "
                               "thread t takes four neighbouring elements, lanes are 16 bytes apart: let the "
                               "block's threads take consecutive elements in each pass, 128 apart between passes."),
        coalesced("store"),
    ),
    hint_wrong=("Every element of the block's 512 once: the four elements of thread t are 128 apart, starting "
                "at the block's first element plus t. Elements past the end of x must be neither read nor "
                "written, but the other elements of the same thread still must."),
    hint_oob="Guard each of the four elements on its own: the last block is only partly filled.",
    stub_hint="block start + t + 128 * k for k = 0..3: four guarded loads into registers, then four stores",
))


# 06 -- a dot product on a fixed grid: registers, warp sums in shared memory, one atomic per block

DG_TPB = 256
DG_BLOCKS = 2


def _dg_input(rng, n, why):
    x, y = f32(rng, n), f32(rng, n)
    out = np.zeros(1, np.float32)
    return Input(f"n={n} ({why})", (DG_BLOCKS,), (DG_TPB,), (x, y, out),
                 {2: np.array([(x.astype(np.float64) * y).sum()], np.float32)}, ("x", "y", "out"))


def _dg_inputs(rng):
    grid = DG_BLOCKS * DG_TPB
    return [
        _dg_input(rng, 1, "one element"),
        _dg_input(rng, 33, "one warp and one lane"),
        _dg_input(rng, grid + 1, "one element more than threads"),
        _dg_input(rng, random_size(rng, 1500, 3000), "random"),
    ]


register(Exercise(
    name="06.dot_grid_stride",
    title="A dot product on a fixed grid: one atomic per block",
    signature="dot_grid_stride(x, y, out)",
    task=("Write `dot_grid_stride(x, y, out)`: out[0] = Σ x[i]·y[i] over the float32 vectors x and y (out starts "
          f"at 0). It is launched with threads_per_block = {DG_TPB} and blocks_per_grid = {DG_BLOCKS}, whatever n "
          "is: few blocks, so each thread walks the vectors with a coalesced grid-stride loop (合并访存) and adds "
          "its products in a register. Then reduce the block: each warp adds its 32 sums with shuffles, lane 0 "
          "of each warp puts the warp's sum in a shared array of at most 32 floats, and after one barrier the "
          "first warp adds those and its lane 0 publishes the block's sum with one cuda.atomic.add: one atomic "
          f"per block ({DG_BLOCKS} in all)."),
    make_inputs=_dg_inputs,
    make_trace_input=lambda rng: _dg_input(rng, trace_size(rng, 8 * DG_BLOCKS * DG_TPB), "several passes of the grid"),
    properties=(
        coalesced("load"),
        atomics_at_most("global", DG_BLOCKS, "one per block",
                        "After the shuffles every warp has one sum; the block's 8 warps can meet in shared "
                        "memory so that a single thread of the block publishes."),
        shared_bytes_at_most(32 * 4, "partial sums in registers: at most 32 floats of shared memory",
                             "The products are added in registers and by shuffles: only the 8 warp sums need "
                             "shared memory."),
        no_races(),
    ),
    hint_wrong=("Every product once: step by the whole grid, stop at x.shape[0]. After the barrier, only the "
                "first 8 slots of the shared array hold warp sums: the first warp's other lanes must add 0, and "
                "every lane of a warp must take part in each shuffle."),
    hint_oob="The loop must stop before x.shape[0]: test the index before every access.",
    stub_hint="grid-stride products into a register; shuffles per warp; 8 shared slots; warp 0; one atomic",
    atol=1e-3,
))
