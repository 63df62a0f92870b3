"""Chapter 01: the programming model — a guarded vector add (the course's worked example), SAXPY, a reversal,
and 2-D indexing (a vector added to every row of a matrix)."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import HINT_ALL_WRONG, Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size
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
    make_trace_input=lambda rng: _vec_input(rng, 1024, "8 full blocks"),
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

# 01 -- saxpy ---------------------------------------------------------------------------------------

SAXPY_TPB = 128


def _saxpy_input(rng, n, why):
    alpha = np.float32(rng.choice([0.5, -2.0, 0.25, 3.0]))  # exact in float32 on small integers
    x, y = f32(rng, n), f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, SAXPY_TPB),), (SAXPY_TPB,), (alpha, x, y, out),
                 {3: (alpha * x + y).astype(np.float32)}, ("alpha", "x", "y", "out"))


def _saxpy_inputs(rng):
    return [
        _saxpy_input(rng, 1, "one element"),
        _saxpy_input(rng, 127, "prime, less than one block"),
        _saxpy_input(rng, 129, "one block and one element"),
        _saxpy_input(rng, random_size(rng, 300, 700), "random"),
    ]


register(Exercise(
    name="01.saxpy",
    title="SAXPY: out = alpha * x + y",
    signature="saxpy(alpha, x, y, out)",
    task=("Write `saxpy(alpha, x, y, out)`: out[i] = alpha * x[i] + y[i] for every i < x.shape[0] (the BLAS "
          f"routine SAXPY). One thread per element, threads_per_block = {SAXPY_TPB}, blocks_per_grid = "
          f"ceil(n / {SAXPY_TPB}). There is no n argument this time: the array knows its own length."),
    make_inputs=_saxpy_inputs,
    make_trace_input=lambda rng: _saxpy_input(rng, 1024, "8 full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong="Each thread handles the element of its own global index; alpha multiplies x only.",
    hint_oob="The last block has threads past the end of the arrays: compare the index with x.shape[0].",
    stub_hint="global index from the block and thread; do nothing past x.shape[0]",
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
    make_trace_input=lambda rng: _rev_input(rng, 1024, "8 full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong="Try n = 1 and n = 2 by hand: which element of x must land in out[0], and which in out[n - 1]?",
    hint_oob="Threads past the end must do nothing, and n - 1 - i must never be negative: guard i first.",
    stub_hint="thread i writes out[i] from the mirrored position of x",
))


# 01 -- matrix_add (variation: a vector added to every row) -------------------------------------------

MAT_BLOCK = (32, 8)


def _mat_input(rng, rows, cols, why):
    a, b = f32(rng, (rows, cols)), f32(rng, cols)
    out = np.full((rows, cols), np.nan, np.float32)
    grid = (ceil_div(cols, MAT_BLOCK[0]), ceil_div(rows, MAT_BLOCK[1]))
    return Input(f"{rows}x{cols} ({why})", grid, MAT_BLOCK, (a, b, out), {2: a + b[None, :]}, ("a", "b", "out"))


def _mat_inputs(rng):
    return [
        _mat_input(rng, 1, 1, "one element"),
        _mat_input(rng, 17, 16, "more rows than columns"),
        _mat_input(rng, 1, 33, "one row, just past one block"),
        _mat_input(rng, 13, 47, "primes"),
        _mat_input(rng, random_size(rng, 9, 40), random_size(rng, 20, 70), "random"),
    ]


register(Exercise(
    name="01.matrix_add",
    title="2-D indexing: add a vector to every row",
    signature="matrix_add(a, b, out)",
    task=("Write `matrix_add(a, b, out)`: out[r, c] = a[r, c] + b[c] for a row-major float32 matrix a of shape "
          "(rows, cols) and a vector b of length cols (NumPy's broadcasting: out = a + b). One thread per element, "
          f"threads_per_block = {MAT_BLOCK} and blocks_per_grid = (ceil(cols / {MAT_BLOCK[0]}), "
          f"ceil(rows / {MAT_BLOCK[1]})). Let x run along a row (x is the column), so that the 32 lanes of a warp "
          "touch neighbouring elements of a, b and out."),
    make_inputs=_mat_inputs,
    make_trace_input=lambda rng: _mat_input(rng, 16, 64, "full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Your kernel is right on some shapes and not on others. Check that x gives the column and y "
                "the row, that b is indexed by the column, and that each guard compares an index with the size "
                "along the same axis (out.shape[0] is the number of rows)."),
    hint_oob=("Some threads fall outside the matrix when rows or cols do not fill a block. Compare the row "
              "with the number of rows and the column with the number of columns."),
    stub_hint="find this thread's row and column with cuda.grid(2) (x first) and guard both",
))
