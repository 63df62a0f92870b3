"""Chapter 01: the programming model — a guarded vector add (the course's worked example), SAXPY on a 2-D grid of
1-D blocks, a reversal, a 2-D array on a 1-D grid (a vector added to every row), and pair sums (a grid sized for
the output)."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import HINT_ALL_WRONG, Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size, trace_size
from course.exercises.properties import coalesced
from course.exercises.registry import reference, register

# 01 -- vector add with its guard: the worked example (chapter 00 checks the course's own kernel with it)

VEC_TPB = 128


def _vec_input(rng, n, why):
    a, b = f32(rng, n), f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, VEC_TPB),), (VEC_TPB,), (a, b, out, n), {2: a + b},
                 ("a", "b", "out", "n"))


def _vec_inputs(rng):
    return [
        _vec_input(rng, 1, "one element"),
        _vec_input(rng, 127, "prime, less than one block"),
        _vec_input(rng, VEC_TPB, "exactly one block"),
        _vec_input(rng, 257, "prime, two blocks and one element"),
        _vec_input(rng, random_size(rng, 300, 700), "random"),
    ]



register(Exercise(
    name="01.vector_add",
    title="Vector add with its guard",
    signature="vector_add(a, b, out, n)",
    task=("Write `vector_add(a, b, out, n)`: out[i] = a[i] + b[i] for every i < n, one thread per element. "
          f"It is launched with threads_per_block = {VEC_TPB} and blocks_per_grid = ceil(n / {VEC_TPB}), so the "
          "last block usually has threads with no element: they must do nothing."),
    make_inputs=_vec_inputs,
    make_trace_input=lambda rng: _vec_input(rng, trace_size(rng, 1024, VEC_TPB), "whole blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_all_wrong=HINT_ALL_WRONG,
    hint_wrong=("Only the first block's elements right and the rest never written? Then every block works on the "
                "same elements: a thread's global index is blockIdx.x * blockDim.x + threadIdx.x (cuda.grid(1)), "
                "not threadIdx.x alone. If only the last few elements are wrong, look at the guard against n."),
    hint_oob=("The grid has more threads than elements whenever n is not a multiple of the block. Which "
              "threads must not touch the arrays, and what comparison keeps exactly those out?"),
    stub_hint="each thread needs its global index i and must do nothing when i is past the end",
    reference=reference("basics", "vector_add", "KERNELS"),
))

# 01 -- saxpy on a 2-D grid of 1-D blocks: the global index when the blocks are numbered in two dimensions

SAXPY_TPB = 128
SAXPY_GRID_X = 4  # blocks per row of the grid, whatever n is


def _saxpy_grid(n):
    blocks = ceil_div(n, SAXPY_TPB)
    return (SAXPY_GRID_X, ceil_div(blocks, SAXPY_GRID_X))


def _saxpy_input(rng, n, why):
    alpha = np.float32(rng.choice([0.5, -2.0, 0.25, 3.0]))  # exact in float32 on small integers
    x, y = f32(rng, n), f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", _saxpy_grid(n), (SAXPY_TPB,), (alpha, x, y, out),
                 {3: (alpha * x + y).astype(np.float32)}, ("alpha", "x", "y", "out"))


def _saxpy_inputs(rng):
    row = SAXPY_GRID_X * SAXPY_TPB
    return [
        _saxpy_input(rng, 1, "one element"),
        _saxpy_input(rng, 129, "one block and one element"),
        _saxpy_input(rng, row + 1, "one row of blocks and one element"),
        _saxpy_input(rng, random_size(rng, 3 * row + 1, 6 * row), "random, several rows of blocks"),
    ]


register(Exercise(
    name="01.saxpy",
    title="SAXPY on a 2-D grid of 1-D blocks",
    signature="saxpy(alpha, x, y, out)",
    task=("Write `saxpy(alpha, x, y, out)`: out[i] = alpha * x[i] + y[i] for every i < x.shape[0] (the BLAS "
          f"routine SAXPY), one thread per element. The blocks are 1-D (threads_per_block = {SAXPY_TPB}) but the "
          f"grid is 2-D: blocks_per_grid = ({SAXPY_GRID_X}, ceil(ceil(n / {SAXPY_TPB}) / {SAXPY_GRID_X})), "
          "as a library launches when it fixes gridDim.x. Number the blocks row by row (blockIdx.y, then "
          "blockIdx.x), give each thread its element from that number, and let the threads of the last blocks "
          "that have no element do nothing. cuda.grid(1) knows only blockIdx.x."),
    make_inputs=_saxpy_inputs,
    make_trace_input=lambda rng: _saxpy_input(rng, trace_size(rng, 2048), "whole warps"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Elements past the first row of blocks never written? Then blocks with blockIdx.y > 0 work on "
                "the same elements as the first row: a block's number counts the whole rows of blocks before "
                "it (gridDim.x blocks each), then blockIdx.x. alpha multiplies x only."),
    hint_oob="The last blocks have threads past the end of the arrays: compare the index with x.shape[0].",
    stub_hint="number the block from blockIdx.y, gridDim.x and blockIdx.x; then the thread's index; guard it",
))


# 01 -- reverse -------------------------------------------------------------------------------------

REV_TPB = 128


def _rev_input(rng, n, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, REV_TPB),), (REV_TPB,), (x, out), {1: x[::-1].copy()}, ("x", "out"))


def _rev_inputs(rng):
    return [
        _rev_input(rng, 1, "one element"),
        _rev_input(rng, 2, "two elements"),
        _rev_input(rng, 131, "prime, one block and 3"),
        _rev_input(rng, 256, "exactly two blocks"),
        _rev_input(rng, random_size(rng, 300, 700), "random"),
    ]


register(Exercise(
    name="01.reverse",
    title="Reverse a vector",
    signature="reverse(x, out)",
    task=("Write `reverse(x, out)`: out[i] = x[n - 1 - i] for every i < n = x.shape[0]. One thread per element, "
          f"threads_per_block = {REV_TPB}, blocks_per_grid = ceil(n / {REV_TPB}). The lanes of a warp should still "
          "read one contiguous piece of x and write one contiguous piece of out (合并访存), only in opposite orders."),
    make_inputs=_rev_inputs,
    make_trace_input=lambda rng: _rev_input(rng, trace_size(rng, 1024, REV_TPB), "whole blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong="Try n = 1 and n = 2 by hand: which element of x must land in out[0], and which in out[n - 1]?",
    hint_oob="Threads past the end must do nothing, and n - 1 - i must never be negative: guard i first.",
    stub_hint="thread i writes out[i] from the mirrored position of x",
))


# 01 -- matrix_add on a 1-D grid (variation: one flat index split into a row and a column)

MAT_TPB = 128


def _mat_input(rng, rows, cols, why):
    a, b = f32(rng, (rows, cols)), f32(rng, cols)
    out = np.full((rows, cols), np.nan, np.float32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(rows * cols, MAT_TPB),), (MAT_TPB,), (a, b, out),
                 {2: a + b[None, :]}, ("a", "b", "out"))


def _mat_inputs(rng):
    return [
        _mat_input(rng, 1, 1, "one element"),
        _mat_input(rng, 17, 16, "more rows than columns"),
        _mat_input(rng, 1, 33, "one row"),
        _mat_input(rng, 13, 47, "primes"),
        _mat_input(rng, random_size(rng, 9, 40), random_size(rng, 20, 70), "random"),
    ]


register(Exercise(
    name="01.matrix_add",
    title="A 2-D array on a 1-D grid: add a vector to every row",
    signature="matrix_add(a, b, out)",
    task=("Write `matrix_add(a, b, out)`: out[r, c] = a[r, c] + b[c] for a row-major float32 matrix a of shape "
          "(rows, cols) and a vector b of length cols (NumPy's broadcasting: out = a + b). The grid is 1-D this "
          f"time, one thread per element: threads_per_block = {MAT_TPB}, blocks_per_grid = ceil(rows * cols / "
          f"{MAT_TPB}). Split the thread's flat index into the row and the column of its element, in the order "
          "the matrix lies in memory, so that the 32 lanes of a warp touch neighbouring elements of a and out "
          "(合并访存)."),
    make_inputs=_mat_inputs,
    make_trace_input=lambda rng: _mat_input(rng, trace_size(rng, 16, 2), trace_size(rng, 64, 32), "whole warps"),
    properties=(
        coalesced("load", hint="Consecutive lanes have consecutive flat indices. In a row-major matrix, which of "
                               "the row and the column changes from one element to the next in memory?"),
        coalesced("store"),
    ),
    hint_wrong=("Row-major: element (r, c) is number r * cols + c, so the row is the flat index divided by the "
                "number of columns and the column what remains. b is indexed by the column."),
    hint_oob=("The grid has more threads than elements when rows * cols is not a multiple of the block: guard "
              "the flat index against the number of elements before splitting it."),
    stub_hint="flat index from cuda.grid(1); guard it against rows * cols; row and column from it",
))


# 01 -- pair sums: two input elements per thread, half as many threads as inputs

PS_TPB = 128


def _ps_input(rng, n, why):
    x = f32(rng, n)
    m = (n + 1) // 2
    out = np.full(m, np.nan, np.float32)
    padded = np.zeros(2 * m, np.float32)
    padded[:n] = x
    return Input(f"n={n} ({why})", (ceil_div(m, PS_TPB),), (PS_TPB,), (x, out),
                 {1: padded[0::2] + padded[1::2]}, ("x", "out"))


def _ps_inputs(rng):
    return [
        _ps_input(rng, 1, "one element: its pair has no second"),
        _ps_input(rng, 2, "one pair"),
        _ps_input(rng, 255, "odd, one block's pairs"),
        _ps_input(rng, 258, "one block's pairs and one more"),
        _ps_input(rng, random_size(rng, 300, 700), "random"),
    ]


register(Exercise(
    name="01.pair_sums",
    title="Two elements per thread: pair sums",
    signature="pair_sums(x, out)",
    task=("Write `pair_sums(x, out)`: out[j] = x[2j] + x[2j + 1] for every j < out.shape[0] = ceil(n / 2), where "
          "an element past the end of x counts as 0 (so for odd n the last pair is x[n - 1] alone). One thread "
          f"per output: threads_per_block = {PS_TPB}, blocks_per_grid = ceil(ceil(n / 2) / {PS_TPB}). The grid "
          "is sized for out, not for x: each thread's index is a pair, and the guard for its second element is "
          "not the guard for its first."),
    make_inputs=_ps_inputs,
    make_trace_input=lambda rng: _ps_input(rng, trace_size(rng, 2048, 2 * PS_TPB), "whole blocks"),
    properties=(coalesced("store"),),
    hint_wrong=("Thread j owns pair j: elements 2j and 2j + 1 of x. For odd n the last thread has a first "
                "element and no second one: it still writes out[j]."),
    hint_oob=("The grid covers out, and x is twice as long: guard j against out.shape[0], and the second "
              "element against x.shape[0] on its own."),
    stub_hint="j from cuda.grid(1); guard j; add x[2j] and, if it exists, x[2j + 1]",
))
