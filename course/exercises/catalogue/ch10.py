"""Chapter 10: measure, don't guess — two planted kernels to diagnose with the course's tools (the tracer's
sectors per request; the engine's out-of-bounds report and the tracer's races, as memcheck and racecheck do on
a GPU), a row-wise softmax with one warp per row, and a planted read past the end to find with the engine's
out-of-bounds report."""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size, trace_size
from course.exercises.properties import (
    coalesced,
    global_loads_at_most,
    no_races,
    shared_bytes_at_most,
    uses_shared,
)
from course.exercises.registry import register

# 10 -- measure, don't guess: a planted uncoalesced kernel


RW_TPB = 128
RW_BLOCKS = 4  # a fixed grid: a grid-stride loop covers any shape


@cuda.jit
def scale_rows_planted(a, w, out):
    """The planted kernel of 10.scale_rows_fixed: right on every shape, and slow."""
    rows = a.shape[0]
    k = cuda.grid(1)
    while k < a.shape[0] * a.shape[1]:  # every element once, whatever the shape
        row = k % rows
        col = k // rows
        out[row, col] = a[row, col] * w[row]
        k += cuda.gridsize(1)


def _rw_input(rng, rows, cols, why):
    a, w = f32(rng, (rows, cols)), f32(rng, rows)
    out = np.full((rows, cols), np.nan, np.float32)
    return Input(f"{rows}x{cols} ({why})", (RW_BLOCKS,), (RW_TPB,), (a, w, out), {2: a * w[:, None]},
                 ("a", "w", "out"))


def _rw_inputs(rng):
    return [
        _rw_input(rng, 1, 1, "one element"),
        _rw_input(rng, 17, 16, "more rows than columns"),
        _rw_input(rng, 1, 33, "one row"),
        _rw_input(rng, random_size(rng, 9, 40), random_size(rng, 20, 70), "random, several passes of the grid"),
    ]


register(Exercise(
    name="10.scale_rows_fixed",
    title="Measure, don't guess: a planted slow kernel",
    signature="scale_rows_fixed(a, w, out)",
    task=("`course.exercises.catalogue.ch10.scale_rows_planted(a, w, out)` scales row r of a float32 matrix a by "
          f"w[r] (out = a * w[:, None]) with a grid-stride loop over the elements, launched with threads_per_block "
          f"= {RW_TPB} and blocks_per_grid = {RW_BLOCKS} whatever the shape. Its answers are right on every shape "
          "and it is still several times slower than it should be. Do not guess: trace it (course.trace, "
          "report.table()) and read sectors per request line by line, then write `scale_rows_fixed(a, w, out)`: "
          "the same result and the same launch, with every load and store at the floor of 4 sectors per request "
          "(合并访存)."),
    make_inputs=_rw_inputs,
    make_trace_input=lambda rng: _rw_input(rng, trace_size(rng, 16, 4), trace_size(rng, 128, 32), "several passes of the grid"),
    properties=(coalesced("load", hint="Read the trace line by line: which access needs the most sectors per request, "
                                       "and which index do the 32 lanes of a warp (consecutive k) change on it?"),
                coalesced("store")),
    hint_wrong=("Row r is scaled by w[r], for every column of the row; every element once, whatever the shape: "
                "the loop's k runs over all rows * cols elements, and splitting it must give every (row, column) "
                "pair exactly once."),
    hint_oob="Whatever order k walks the matrix in, the row must stay below a.shape[0] and the column below a.shape[1].",
    stub_hint="trace the planted kernel first: which index runs along the lanes of a warp?",
))


# 10 -- measure, don't guess: a planted kernel with a race and an out-of-bounds access

BR_TPB = 128


@cuda.jit
def block_reverse_planted(x, out):
    """The planted kernel of 10.block_reverse_fixed: two bugs, found with the tools, not by staring."""
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * 128 + t
    s[t] = x[i]
    start = cuda.blockIdx.x * 128
    count = min(128, x.shape[0] - start)
    if t < count:
        out[i] = s[count - t]


def _br_input(rng, n, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    want = np.concatenate([x[b:b + BR_TPB][::-1] for b in range(0, n, BR_TPB)])
    return Input(f"n={n} ({why})", (ceil_div(n, BR_TPB),), (BR_TPB,), (x, out), {1: want}, ("x", "out"))


def _br_inputs(rng):
    return [
        _br_input(rng, 1, "one element"),
        _br_input(rng, 128, "exactly one block"),
        _br_input(rng, 129, "one block and one element"),
        _br_input(rng, random_size(rng, 300, 600), "random"),
    ]


register(Exercise(
    name="10.block_reverse_fixed",
    title="Measure, don't guess: a planted race and an out-of-bounds access",
    signature="block_reverse_fixed(x, out)",
    task=("`course.exercises.catalogue.ch10.block_reverse_planted(x, out)` reverses each block's piece of x through "
          "shared memory: the block's 128 elements (fewer in the last block) come out in the opposite order, "
          f"out[start + j] = x[start + count - 1 - j]. It is launched with threads_per_block = {BR_TPB} and "
          f"blocks_per_grid = ceil(n / {BR_TPB}). It has two bugs that a GPU run may never show: find them with "
          "the tools of chapter 10 — the CPU engine stops an out-of-bounds access with the block, thread and line "
          "(as compute-sanitizer's memcheck does on a GPU), and the tracer's report.races() finds the race "
          "(racecheck) — then write `block_reverse_fixed(x, out)` without them."),
    make_inputs=_br_inputs,
    make_trace_input=lambda rng: _br_input(rng, trace_size(rng, 4 * BR_TPB), "whole warps"),
    properties=(uses_shared(), coalesced("load"), coalesced("store"), no_races()),
    hint_wrong=("Work out by hand which element of s thread t must read when the block is full (count = 128): "
                "the mirror of t in 0..count-1."),
    hint_oob=("Read the error: which array, which index, which thread? The last block has threads past the end "
              "of x."),
    stub_hint="run the planted kernel on n = 129 and read the error; then trace it on full blocks and read races()",
))


# 10 -- softmax of each row, one warp per row

SM_BLOCK = (32, 4)


def _sm_input(rng, rows, cols, why, shift=0.0):
    # the shift is added before the reference is computed: x + 200 rounds to float32 (a step of 1.5e-5 at 200),
    # so a reference of the unshifted values would differ from every right kernel by up to that much
    x = (rng.standard_normal((rows, cols)) * 3 + shift).astype(np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(rows, SM_BLOCK[1]),), SM_BLOCK, (x, out), {1: want}, ("x", "out"))


def _sm_inputs(rng):
    # exp(200+) overflows float32: the row max must be subtracted first
    big = _sm_input(rng, 3, 40, "large values: exp overflows without the max", shift=200.0)
    return [
        _sm_input(rng, 1, 1, "one element"),
        _sm_input(rng, 17, 16, "rows past a block, short rows"),
        _sm_input(rng, 1, 33, "one row, just past a warp"),
        big,
        _sm_input(rng, random_size(rng, 5, 12), random_size(rng, 60, 150), "random"),
    ]


SM_TRACE = (8, 128)

register(Exercise(
    name="10.softmax_rows",
    title="Softmax of each row, one warp per row",
    signature="softmax_rows(x, out)",
    task=("Write `softmax_rows(x, out)`: out[r, c] = exp(x[r, c] - m_r) / sum_j exp(x[r, j] - m_r), with m_r the "
          "maximum of row r (subtracting it keeps exp from overflowing; it does not change the result), for a "
          f"float32 matrix x of shape (rows, cols). It is launched with threads_per_block = {SM_BLOCK} and "
          f"blocks_per_grid = ceil(rows / {SM_BLOCK[1]}): warp threadIdx.y owns one row, its lanes stride along "
          "the row (coalesced, 合并访存), and the warp finds the row's maximum and then its sum with shuffles "
          "(洗牌): no shared memory, no atomics. Read each element of x at most three times (for the maximum, "
          "for the sum of exponentials, for the output). Correct for rows of any length, including large "
          "values."),
    make_inputs=_sm_inputs,
    make_trace_input=lambda rng: _sm_input(rng, trace_size(rng, SM_TRACE[0], SM_BLOCK[1]), trace_size(rng, SM_TRACE[1], 32), "whole blocks"),
    properties=(
        coalesced("load"),
        coalesced("store"),
        global_loads_at_most(lambda inp: 3 * inp.args[0].size * 4 // 32, "each element at most 3 times",
                             "Two passes over the row are enough: the maximum, then the sum of exponentials; the "
                             "output pass may read x again. Does a step read more than that?"),
        shared_bytes_at_most(0, "registers and shuffles only: no shared memory",
                             "A warp can combine its lanes' values with shuffles: no shared array is needed."),
    ),
    hint_wrong=("Subtract the row's maximum before exp: exp(100) already overflows float32. Both reductions must see the whole row and every lane must get the result (shfl_xor leaves it in "
                "every lane; with shfl_down only lane 0 has it — broadcast it with shfl_sync). Lanes past the end "
                "of a short row contribute -inf to the maximum and 0 to the sum."),
    hint_oob="Rows past the last (the last block) and columns past cols must not be read.",
    stub_hint="row = blockIdx.x * 4 + threadIdx.y; warp max by shuffles; warp sum of exp by shuffles; write",
    rtol=1e-5, atol=1e-7,
))


# 10 -- measure, don't guess: a planted kernel that reads past the end (memcheck's finding, on the CPU engine)

DF_TPB = 128


@cuda.jit
def diff_planted(x, out):
    """The planted kernel of 10.diff_fixed: out[i] = x[i + 1] - x[i]; looks right, and reads past the end."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i + 1] - x[i]


def _df_input(rng, n, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    want = np.zeros(n, np.float32)
    want[:-1] = x[1:] - x[:-1]  # the last element has no right neighbour: 0
    return Input(f"n={n} ({why})", (ceil_div(n, DF_TPB),), (DF_TPB,), (x, out), {1: want}, ("x", "out"))


def _df_inputs(rng):
    return [
        _df_input(rng, 1, "one element"),
        _df_input(rng, 2, "two elements"),
        _df_input(rng, 128, "exactly one block"),
        _df_input(rng, 129, "one block and one element"),
        _df_input(rng, random_size(rng, 300, 700), "random"),
    ]


register(Exercise(
    name="10.diff_fixed",
    title="Measure, don't guess: a planted read past the end",
    signature="diff_fixed(x, out)",
    task=("`course.exercises.catalogue.ch10.diff_planted(x, out)` computes forward differences out[i] = x[i + 1] - "
          f"x[i], launched with threads_per_block = {DF_TPB} and blocks_per_grid = ceil(n / {DF_TPB}). On a GPU it "
          "usually returns plausible numbers, because reading one float past the end rarely faults; "
          "compute-sanitizer's memcheck would name the read, and so does the course's CPU engine. Run it on the "
          "engine, read the error (kernel, line, block, thread), then write `diff_fixed(x, out)`: the same "
          "launch and the same differences, with out[n - 1] = 0 (the last element has no right neighbour), and "
          "every load and store coalesced (合并访存)."),
    make_inputs=_df_inputs,
    make_trace_input=lambda rng: _df_input(rng, trace_size(rng, 1024, DF_TPB), "whole blocks"),
    # x[i + 1] is one float off the 32-byte grid: a warp's 128 bytes straddle 5 sectors, the floor for that load
    properties=(coalesced("load", max_sectors=5), coalesced("store")),
    hint_wrong=("out[i] is x[i + 1] - x[i] for every i but the last, and out[n - 1] is 0: a thread that has no "
                "right neighbour still writes its element."),
    hint_oob=("The engine names the line and the thread: which thread reads x[i + 1] when i + 1 is already past "
              "the end? It still has an element of out to write."),
    stub_hint="run the planted kernel on the engine first: which thread reads past the end, and what should it write?",
))
