"""Chapter 04: shared memory: row sums through a conflict-free tile."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size
from course.exercises.properties import (
    coalesced,
    conflict_free,
    no_races,
    uses_shared,
)
from course.exercises.registry import register

RS_TILE = 32
RS_BLOCK = (32, 8)


def _rs_input(rng, n, why):
    a = f32(rng, (n, RS_TILE))
    out = np.full(n, np.nan, np.float32)
    return Input(f"{n}x32 ({why})", (ceil_div(n, RS_TILE),), RS_BLOCK, (a, out),
                 {1: a.astype(np.float64).sum(axis=1).astype(np.float32)}, ("a", "out"))


def _rs_inputs(rng):
    return [
        _rs_input(rng, 1, "one row"),
        _rs_input(rng, 31, "prime, less than one tile"),
        _rs_input(rng, 32, "exactly one tile"),
        _rs_input(rng, 37, "prime, one tile and 5 rows"),
        _rs_input(rng, random_size(rng, 40, 100), "random"),
    ]



register(Exercise(
    name="04.row_sums",
    title="Shared memory: row sums through a conflict-free tile",
    signature="row_sums(a, out)",
    task=("Write `row_sums(a, out)`: out[r] = a[r, 0] + ... + a[r, 31] for a float32 matrix a of shape (n, 32). "
          "It is launched with threads_per_block = (32, 8) and one block per 32 rows "
          "(blocks_per_grid = ceil(n / 32)). Summing a row in one thread reads a column of lanes at once, "
          "which is not coalesced; instead let the 8 warps copy the block's 32 rows into a "
          "cuda.shared.array tile with coalesced loads, wait for each other, then let one warp sum: "
          "lane tx adds up row tx of the tile. Make that strided read of the tile free of bank conflicts."),
    make_inputs=_rs_inputs,
    make_trace_input=lambda rng: _rs_input(rng, 64, "two full tiles"),
    properties=(
        coalesced("load", hint="Summing a row inside one thread makes the warp's 32 lanes read 32 different "
                               "rows at once: 32 sectors per request. Copy the rows into shared memory first, "
                               "with threadIdx.x running along a row."),
        coalesced("store"),
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the strided tile read (存储体冲突)",
                      hint="Lane tx reads tile[tx, c]: consecutive lanes are one row apart. A row of 32 "
                           "floats is 32 words, so every lane lands in the same bank. How long must a row be "
                           "so that consecutive rows start in different banks, for every pair of lanes?"),
        no_races(),
    ),
    hint_wrong=("Check the rows of the last, partial tile (n is not always a multiple of 32): every row "
                "below n must be loaded and summed, and nothing past n touched."),
    hint_oob="The last block covers rows past n when n is not a multiple of 32: guard loads and stores.",
    stub_hint="load the block's rows into a shared tile, syncthreads, then one warp sums the rows",
    rtol=1e-6, atol=1e-4,
))
