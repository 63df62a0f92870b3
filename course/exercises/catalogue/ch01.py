"""Chapter 01: a vector add with its guard, and 2-D indexing (a matrix add)."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size
from course.exercises.properties import (
    coalesced,
)
from course.exercises.registry import reference, register

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


# 01 -- 2-D indexing: matrix add


MAT_BLOCK = (32, 8)


def _mat_input(rng, rows, cols, why):
    a, b = f32(rng, (rows, cols)), f32(rng, (rows, cols))
    out = np.full((rows, cols), np.nan, np.float32)
    grid = (ceil_div(cols, MAT_BLOCK[0]), ceil_div(rows, MAT_BLOCK[1]))
    return Input(f"{rows}x{cols} ({why})", grid, MAT_BLOCK, (a, b, out), {2: a + b}, ("a", "b", "out"))


def _mat_inputs(rng):
    return [
        _mat_input(rng, 1, 1, "one element"),
        _mat_input(rng, 17, 16, "more rows than columns"),
        _mat_input(rng, 1, 33, "one row, just past one block"),
        _mat_input(rng, 13, 47, "primes"),
        _mat_input(rng, random_size(rng, 9, 40), random_size(rng, 20, 70), "random"),
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
    hint_wrong=("Compute each thread's global index from blockIdx.x, blockDim.x and threadIdx.x, then check "
                "which elements were never written: is your guard off by one at the end?"),
    hint_oob=("The grid has more threads than elements whenever n is not a multiple of the block. Which "
              "threads must not touch the arrays, and what comparison keeps exactly those out?"),
    stub_hint="each thread needs its global index i and must do nothing when i is past the end",
    reference=reference("basics", "vector_add", "KERNELS"),
))

register(Exercise(
    name="01.matrix_add",
    title="2-D indexing: matrix add",
    signature="matrix_add(a, b, out)",
    task=("Write `matrix_add(a, b, out)`: out = a + b for row-major float32 matrices of shape (rows, cols), one "
          f"thread per element, launched with threads_per_block = {MAT_BLOCK} and "
          f"blocks_per_grid = (ceil(cols / {MAT_BLOCK[0]}), ceil(rows / {MAT_BLOCK[1]})). Let x run along a row "
          "(x is the column), so that the 32 lanes of a warp touch neighbouring elements."),
    make_inputs=_mat_inputs,
    make_trace_input=lambda rng: _mat_input(rng, 16, 64, "full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Your kernel is right on some shapes and not on others. Check that x gives the column and y "
                "the row, and that each guard compares an index with the size along the same axis "
                "(out.shape[0] is the number of rows)."),
    hint_oob=("Some threads fall outside the matrix when rows or cols do not fill a block. Compare the row "
              "with the number of rows and the column with the number of columns."),
    stub_hint="find this thread's row and column with cuda.grid(2) (x first) and guard both",
    reference=reference("basics", "matrix_add", "KERNELS"),
))
