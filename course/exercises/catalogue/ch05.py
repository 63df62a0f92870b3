"""Chapter 05: transpose."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, distinct, random_size
from course.exercises.properties import (
    coalesced,
    conflict_free,
    no_races,
    shared_at_most,
    uses_shared,
)
from course.exercises.registry import reference, register

TP_TILE = 32
TP_BLOCK = (32, 32)  # the chapter's tile kernels: one thread per element of a 32x32 tile
MINE_BLOCK = (32, 8)  # own design: 32x8 threads per 32x32 tile, so each thread moves 4 elements


def _tp_input(rng, rows, cols, why, block=TP_BLOCK):
    src = distinct(rng, (rows, cols))
    dst = np.full((cols, rows), np.nan, np.float32)
    grid = (ceil_div(cols, TP_TILE), ceil_div(rows, TP_TILE))
    return Input(f"{rows}x{cols} ({why})", grid, block, (src, dst), {1: src.T.copy()}, ("src", "dst"))


def _tp_inputs(rng, block=TP_BLOCK):
    return [
        _tp_input(rng, 1, 1, "one element", block),
        _tp_input(rng, 17, 16, "not square, less than a tile", block),
        _tp_input(rng, 1, 33, "one row, just past one tile", block),
        _tp_input(rng, 37, 31, "primes", block),
        _tp_input(rng, random_size(rng, 33, 70), random_size(rng, 33, 70), "random", block),
    ]


def _tp_trace(rng, block=TP_BLOCK):
    return _tp_input(rng, 64, 96, "full tiles, not square", block)



_TP_TASK = (
    "Write `{sig}`: dst = src.T for a float32 matrix src of shape (rows, cols) and dst of shape (cols, rows). "
    "It is launched with threads_per_block = {block} and one block per 32x32 tile of src: "
    "blocks_per_grid = (ceil(cols / 32), ceil(rows / 32)){per_thread}. "
    "Read src into a cuda.shared.array tile with coalesced loads, wait for the whole block, and write the "
    "tile out transposed with coalesced stores. Shapes that do not fill a tile must work too."
)


def _tp_task(sig, block):
    per = "" if block == TP_BLOCK else f", so each thread moves {TP_TILE * TP_TILE // (block[0] * block[1])} elements"
    return _TP_TASK.format(sig=sig, block=block, per_thread=per)


TRANSPOSE_PROPS = (
    coalesced("load"),
    coalesced("store", hint="The store is where the naive transpose loses: lanes with consecutive threadIdx.x "
                            "should write consecutive elements of a row of dst. Swap roles inside the tile, "
                            "not in global memory."),
    uses_shared(),
    no_races(),
)


register(Exercise(
    name="05.transpose_padded",
    title="Transpose with a padded tile",
    signature="transpose_padded(src, dst)",
    task=_tp_task("transpose_padded(src, dst)", TP_BLOCK) + (
        " Reading the tile by columns puts all 32 lanes in one bank; cure it by padding the tile."),
    make_inputs=_tp_inputs,
    make_trace_input=_tp_trace,
    properties=TRANSPOSE_PROPS + (
        conflict_free("load", name="no bank conflicts on the tile read (存储体冲突)",
                      hint="The tile is read by columns: lane tx reads row tx. Which bank does each row "
                           "start in? Padding must make consecutive rows start in different banks for all "
                           "32 lanes, not just for some of them."),
        conflict_free("store"),
    ),
    hint_wrong=("Think of tile coordinates and global coordinates separately: the block's tile starts at "
                "row blockIdx.y*32 and column blockIdx.x*32 of src, but at row blockIdx.x*32 and column "
                "blockIdx.y*32 of dst. Shapes that are not square show a mix-up of rows and columns."),
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="stage a padded shared tile: coalesced read of src, syncthreads, coalesced write of dst",
    reference=reference("transpose", "tile_32x33", "TRANSPOSE_VERSIONS"),
))

register(Exercise(
    name="05.transpose_swizzled",
    title="Transpose with a swizzled tile",
    signature="transpose_swizzled(src, dst)",
    task=_tp_task("transpose_swizzled(src, dst)", TP_BLOCK) + (
        " Do not pad the tile (exactly 32x32 floats): instead move each row's elements to other columns "
        "with an XOR swizzle (chapter 04), so that a tile column is spread over all 32 banks, and read "
        "every element back from where you put it."),
    make_inputs=_tp_inputs,
    make_trace_input=_tp_trace,
    properties=TRANSPOSE_PROPS + (
        conflict_free("load", name="no bank conflicts on the tile read (存储体冲突)",
                      hint="With a 32x32 tile, lane tx reading row tx, column c lands in bank c for every "
                           "lane. Which column index would send each lane to a different bank, and is it a "
                           "one-to-one map within each row?"),
        conflict_free("store"),
        shared_at_most(TP_TILE * TP_TILE * 4, "This exercise asks for the swizzle instead of padding: keep the "
                                              "tile exactly 32x32 and move the columns around instead."),
    ),
    hint_wrong=("A swizzle must be undone exactly: the element stored at tile[r, c ^ r] has to be read back "
                "from tile[r, c ^ r] with the same r. Check which of your indices is the row inside the tile."),
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="stage a 32x32 tile with the column XOR-swizzled by the row; read it back through the same map",
    reference=reference("transpose", "swizzle", "TRANSPOSE_VERSIONS"),
))

register(Exercise(
    name="05.transpose_mine",
    title="Transpose of your own design, judged on performance",
    signature="transpose_mine(src, dst)",
    task=_tp_task("transpose_mine(src, dst)", MINE_BLOCK) + (
        " Any design is fine; it is judged only on what the memory system would do: coalesced global loads "
        "and stores (at most 4 sectors per request), shared-memory accesses without bank conflicts (each at its "
        "conflict-free minimum of wavefronts: 1 for a 4-byte access), shared memory used, and no race."),
    make_inputs=lambda rng: _tp_inputs(rng, MINE_BLOCK),
    make_trace_input=lambda rng: _tp_trace(rng, MINE_BLOCK),
    properties=TRANSPOSE_PROPS + (
        conflict_free("load", name="shared loads at their conflict-free minimum (存储体冲突)"),
        conflict_free("store", name="shared stores at their conflict-free minimum (存储体冲突)"),
    ),
    hint_wrong="Check the tile's origin in src and in dst separately; non-square shapes show a mix-up.",
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="your own design: coalesced in, conflict-free through shared memory, coalesced out",
    reference=reference("transpose", "rows", "TRANSPOSE_VERSIONS"),
))
