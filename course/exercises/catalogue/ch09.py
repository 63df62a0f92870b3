"""Chapter 09: tiled matrix multiply for any shape."""

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
from course.exercises.registry import reference, register

MM_TILE = 16  # course.kernels.matmul.TILE
MM_BLOCK = (MM_TILE, MM_TILE)


def _mm_input(rng, m, k, n, why):
    a, b = f32(rng, (m, k)) / 8, f32(rng, (k, n)) / 8  # multiples of 1/8 below 7: every sum is exact
    c = np.full((m, n), np.nan, np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    return Input(f"{m}x{k} @ {k}x{n} ({why})", (ceil_div(n, MM_TILE), ceil_div(m, MM_TILE)), MM_BLOCK, (a, b, c),
                 {2: want}, ("a", "b", "c"))


def mm_inputs(rng):
    return [
        _mm_input(rng, 1, 1, 1, "one element"),
        _mm_input(rng, 17, 16, 16, "one row past a tile"),
        _mm_input(rng, 1, 33, 5, "k not a multiple of the tile"),
        _mm_input(rng, 13, 19, 23, "primes"),
        _mm_input(rng, random_size(rng, 10, 34), random_size(rng, 10, 40), random_size(rng, 10, 34), "random"),
    ]


def mm_trace(rng):
    return _mm_input(rng, 32, 32, 32, "full tiles")


MM_PROPS = (
    uses_shared(hint="The point of the tile is reuse: each element of a and b is loaded from global memory once "
                     "per tile and then read 16 times from a cuda.shared.array."),
    coalesced("load"),
    coalesced("store"),
    conflict_free("load", name="no bank conflicts on the tile reads (存储体冲突)"),
    no_races(),
)

register(Exercise(
    name="09.matmul_tiled",
    title="Tiled matrix multiply, correct for any shape",
    signature="matmul_tiled(a, b, c)",
    task=("Write `matmul_tiled(a, b, c)`: c = a @ b for float32 matrices a (m, k), b (k, n), c (m, n). It is "
          f"launched with threads_per_block = {MM_BLOCK} and one block per {MM_TILE}x{MM_TILE} tile of c: "
          f"blocks_per_grid = (ceil(n / {MM_TILE}), ceil(m / {MM_TILE})). Stage {MM_TILE}x{MM_TILE} tiles of a "
          "and b in shared memory (分块), as the seed's kernel does, but for every shape: the seed's kernel "
          "assumes N is a multiple of TILE and loses the last columns of a (and writes outside c) otherwise."),
    make_inputs=mm_inputs,
    make_trace_input=mm_trace,
    properties=MM_PROPS,
    hint_wrong=("Count the tiles along k rounded up, not down, and think about what a thread must put in the "
                "tile when its element lies past the edge of a or b: something that adds nothing to the sum."),
    hint_oob=("Tiles at the edges reach past a, b and c: guard each load (row < m and k-index < k for a; "
              "k-index < k and col < n for b) and the store. Every thread must still reach every barrier."),
    stub_hint="loop over ceil(k / TILE) tiles: load, syncthreads, multiply-add, syncthreads; guard the edges",
    reference=reference("matmul", "tiled", "MATMUL_VERSIONS"),
    atol=1e-4,
))
