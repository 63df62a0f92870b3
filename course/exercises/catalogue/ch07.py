"""Chapter 07: reductions (归约) — row sums through a conflict-free tree in shared memory finished by one warp, a
block reduction with warp shuffles, inclusive and exclusive scans inside each block (前缀和), each block's minimum and maximum in one fused
tree, block sums of 512 elements through a tree with sequential addressing (judged on conflicts and warp splits), and
the same sums with four independent accumulators per thread (judged on load requests per element), and a whole sum
with one atomic per warp (warp-aggregated atomics, judged on atomics per element), and a planted divergent tree
(each block's maximum) fixed with sequential addressing (judged on warp splits), and a whole sum read with float4
loads and added with one atomic per warp (judged on sectors per load request and atomics per element), and the first
pass of a two-pass reduction on a fixed grid: each block's sum and sum of squares (judged on coalescing and no atomics)."""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import block_sums_input, ceil_div, f32, random_size, trace_size
from course.exercises.properties import (
    atomics_at_most,
    coalesced,
    coalesced_at_minimum,
    conflict_free,
    few_warp_splits,
    no_atomics,
    no_races,
    shared_bytes_at_most,
    uses_shared,
)
from course.exercises.registry import register

RED_TPB = 256  # one block per row


def _red_input(rng, rows, cols, why):
    a = f32(rng, (rows, cols))
    out = np.full(rows, np.nan, np.float32)
    want = a.astype(np.float64).sum(axis=1).astype(np.float32)  # small integers: every sum is exact
    return Input(f"{rows}x{cols} ({why})", (rows,), (RED_TPB,), (a, out), {1: want}, ("a", "out"))


def _red_inputs(rng):
    return [
        _red_input(rng, 1, 1, "one element"),
        _red_input(rng, 17, 16, "rows shorter than a warp"),
        _red_input(rng, 1, 33, "one row, one warp and one element"),
        _red_input(rng, 3, 1025, "rows one element longer than four passes of the block"),
        _red_input(rng, random_size(rng, 2, 6), random_size(rng, 300, 1500), "random"),
    ]


register(Exercise(
    name="07.tree_sum",
    title="Row sums: one block per row, a tree without bank conflicts, a warp to finish",
    signature="tree_sum(a, out)",
    task=("Write `tree_sum(a, out)`: out[r] = a[r, 0] + ... + a[r, cols - 1] for every row r of a float32 matrix "
          f"a (a segmented reduction, 分段归约). It is launched with one block per row: threads_per_block = {RED_TPB}, "
          "blocks_per_grid = rows, and a row may be shorter than a warp or many times longer than the block. "
          "Each thread first adds its elements of the row in a register, walking the row with a stride of 256 "
          "so that every load is coalesced (合并访存); then the block adds its 256 values as a tree in a "
          "cuda.shared.array (归约树), with the shared-memory reads of each step free of bank conflicts "
          "(存储体冲突) and no thread reading a value before its writer has finished. Stop the tree when 32 values "
          "are left: the first warp finishes with register shuffles (cuda.shfl_down_sync), and its lane 0 writes "
          "out[r]. No atomics: each block owns its row's sum."),
    make_inputs=_red_inputs,
    make_trace_input=lambda rng: _red_input(rng, trace_size(rng, 2, 1), trace_size(rng, 1024, RED_TPB), "rows of several passes"),
    properties=(
        coalesced_at_minimum("load", hint="Before the tree, each thread adds its elements of the row: in each of "
                             "those loads, do the 32 lanes of a warp read 32 neighbouring elements? Let "
                             "consecutive threads take consecutive elements, 256 apart between a thread's loads."),
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the tree's shared loads (存储体冲突)",
                      hint="In each step, which words do the active lanes of one warp read? When lane t reads "
                           "word 2*stride*t, lanes 16 apart share a bank. Which pairing lets neighbouring lanes "
                           "read neighbouring words at every step?"),
        few_warp_splits(1.0),
        no_atomics("global"),
        no_races(hint="Each step of the tree reads values that other threads wrote in the step before. What must "
                      "every thread of the block reach between two steps?"),
    ),
    hint_wrong=("Check that every element of the row is counted exactly once, whatever its length: threads past "
                "the end of a short row must still put a zero into the tree (and reach every barrier), and the "
                "shuffles need all 32 lanes of the first warp, with a full mask."),
    hint_oob="Guard every load of a: a row may be shorter than the block, and its length is a.shape[1].",
    stub_hint="a register sum over the row (stride 256); a shared tree down to 32 values; shuffles; lane 0 writes",
))


# 07 -- a block reduction with warp shuffles

SH_TPB = 256


def _sh_input(rng, n, why):
    return block_sums_input(rng, n, SH_TPB, why)


def _sh_inputs(rng):
    return [
        _sh_input(rng, 1, "one element"),
        _sh_input(rng, 33, "one warp and one lane"),
        _sh_input(rng, 256, "exactly one block"),
        _sh_input(rng, 3 * 256 + 5, "three blocks and 5 elements"),
        _sh_input(rng, random_size(rng, 1000, 2000), "random"),
    ]


register(Exercise(
    name="07.block_sums_shuffle",
    title="A block reduction with warp shuffles",
    signature="block_sums_shuffle(a, out)",
    task=("Write `block_sums_shuffle(a, out)`: out[b] = the sum of block b's 256 elements of the float32 vector "
          f"a (elements past the end count as 0), launched with threads_per_block = {SH_TPB} and blocks_per_grid = "
          f"ceil(n / {SH_TPB}), one element per thread. No tree in shared memory this time: each warp adds its 32 "
          "values with register shuffles (cuda.shfl_down_sync or cuda.shfl_xor_sync, 洗牌), its lane 0 puts the "
          "warp's sum in a shared array of at most 32 floats, and after one barrier the first warp reduces those "
          "sums with shuffles again. Each block writes its own out[b]: no atomics."),
    make_inputs=_sh_inputs,
    make_trace_input=lambda rng: _sh_input(rng, trace_size(rng, 4 * SH_TPB), "whole warps"),
    properties=(
        coalesced("load"),
        shared_bytes_at_most(32 * 4, "partial sums in registers: at most 32 floats of shared memory",
                             "Shuffles keep the partial sums in registers: only the 8 warp sums need shared "
                               "memory, at most 32 floats."),
        no_atomics("global"),
        no_races(),
    ),
    hint_wrong=("A shuffle must name every lane of the warp in its mask, and every lane must call it, also lanes "
                "whose element is past the end (they add 0). After the barrier, only the first 8 slots of the "
                "shared array hold warp sums."),
    hint_oob="Guard the load of a: the last block is only partly filled.",
    stub_hint="shuffle-reduce in each warp; lane 0 writes a shared slot; syncthreads; warp 0 reduces the slots",
))


# 07 -- an inclusive scan inside each block

SC_TPB = 128


def _sc_input(rng, n, why):
    a = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    want = np.empty(n, np.float32)
    for b in range(0, n, SC_TPB):
        want[b:b + SC_TPB] = np.cumsum(a[b:b + SC_TPB].astype(np.float64))
    return Input(f"n={n} ({why})", (ceil_div(n, SC_TPB),), (SC_TPB,), (a, out), {1: want}, ("a", "out"))


def _sc_inputs(rng):
    return [
        _sc_input(rng, 1, "one element"),
        _sc_input(rng, 33, "one warp and one lane"),
        _sc_input(rng, 128, "exactly one block"),
        _sc_input(rng, 2 * 128 + 3, "two blocks and 3 elements"),
        _sc_input(rng, random_size(rng, 300, 600), "random"),
    ]


register(Exercise(
    name="07.inclusive_scan",
    title="An inclusive scan inside each block",
    signature="inclusive_scan(a, out)",
    task=("Write `inclusive_scan(a, out)`: a running sum (前缀和, inclusive scan) of each block's 128 elements: "
          "out[i] = a[start] + a[start + 1] + ... + a[i], where start = 128 * (i // 128) is the first element "
          f"of i's block. It is launched with threads_per_block = {SC_TPB} and blocks_per_grid = ceil(n / "
          f"{SC_TPB}), one element per thread. Use the Hillis-Steele steps in shared memory: in step d = 1, 2, 4, "
          "..., 64 every element adds the value d places to its left. The trap: in one step a thread reads the "
          "word that its left neighbour is about to overwrite. No thread may read a value before its writer has "
          "finished, nor overwrite one before its reader has read it (数据竞争)."),
    make_inputs=_sc_inputs,
    make_trace_input=lambda rng: _sc_input(rng, trace_size(rng, 2 * SC_TPB), "whole warps"),
    properties=(
        uses_shared(),
        coalesced("load"),
        coalesced("store"),
        conflict_free("load", name="no bank conflicts on the scan's shared loads (存储体冲突)"),
        no_races(hint="In each step a thread reads the word another thread overwrites in the same step. Read "
                      "into a register, let every thread of the block get there, then write — and again before "
                      "the next step reads."),
    ),
    hint_wrong=("After step d every element should hold the sum of up to 2d elements ending at it. If a value "
                "counts twice, a thread read a word its neighbour had already updated in the same step."),
    hint_oob="Guard the load of a and the store of out; a thread at position t < d has no left partner.",
    stub_hint="a shared copy of the block's elements; steps d = 1, 2, 4, ... add the value d places to the left",
))


# 07 -- two reductions fused in one pass: each block's minimum and maximum

MM_TPB = 256


def _mm_input(rng, n, why, sign=0):
    a = f32(rng, n)
    if sign:  # every element on one side of 0: a padding of 0 is then wrong for the minimum or the maximum
        a = (sign * (np.abs(a) + 1)).astype(np.float32)
    blocks = ceil_div(n, MM_TPB)
    out = np.full((blocks, 2), np.nan, np.float32)
    want = np.empty((blocks, 2), np.float32)
    for b in range(blocks):
        part = a[b * MM_TPB:(b + 1) * MM_TPB]
        want[b] = part.min(), part.max()
    return Input(f"n={n} ({why})", (blocks,), (MM_TPB,), (a, out), {1: want}, ("a", "out"))


def _mm_inputs(rng):
    return [
        _mm_input(rng, 1, "one element"),
        _mm_input(rng, 33, "one warp and one lane"),
        _mm_input(rng, 40, "a partial block, all positive", sign=1),
        _mm_input(rng, 300, "a block and a partial one, all negative", sign=-1),
        _mm_input(rng, 256, "exactly one block"),
        _mm_input(rng, 2 * 256 + 7, "two blocks and 7 elements"),
        _mm_input(rng, random_size(rng, 1000, 2000), "random"),
    ]


register(Exercise(
    name="07.min_max_blocks",
    title="Two reductions in one pass: each block's minimum and maximum",
    signature="min_max_blocks(a, out)",
    task=("Write `min_max_blocks(a, out)`: out[b, 0] = the minimum and out[b, 1] = the maximum of block b's "
          f"elements of the float32 vector a (launched with threads_per_block = {MM_TPB}, blocks_per_grid = "
          f"ceil(n / {MM_TPB}), one element per thread; the last block has fewer). Read a once: each thread loads "
          "its element, and one tree in shared memory (归约树) carries both values, in two shared arrays of 256 "
          "floats, step by step with sequential addressing so that no step has bank conflicts (存储体冲突). A "
          "thread with no element must not change either result: it brings +inf to the minimum and -inf to the "
          "maximum, not 0. Each block writes its own row of out: no atomics."),
    make_inputs=_mm_inputs,
    make_trace_input=lambda rng: _mm_input(rng, trace_size(rng, 4 * MM_TPB), "whole warps"),
    properties=(
        coalesced("load"),
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the tree's shared loads (存储体冲突)"),
        no_atomics("global"),
        no_races(hint="Each step of the tree reads what other threads wrote in the step before: every thread of "
                      "the block must reach a barrier between two steps."),
    ),
    hint_wrong=("A short last block: threads past the end bring +inf to the minimum and -inf to the maximum, "
                "and still take part in every step and every barrier. Column 0 of out is the minimum."),
    hint_oob="Guard the load of a: the last block is only partly filled.",
    stub_hint="two shared arrays; neutral values past the end; halve the active threads each step; thread 0 writes",
))


# 07 -- an exclusive scan inside each block: each element gets the sum of those before it

EX_TPB = 128


def _ex_input(rng, n, why):
    a = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    want = np.empty(n, np.float32)
    for b in range(0, n, EX_TPB):
        part = a[b:b + EX_TPB].astype(np.float64)
        want[b:b + EX_TPB] = np.cumsum(part) - part
    return Input(f"n={n} ({why})", (ceil_div(n, EX_TPB),), (EX_TPB,), (a, out), {1: want}, ("a", "out"))


def _ex_inputs(rng):
    return [
        _ex_input(rng, 1, "one element"),
        _ex_input(rng, 33, "one warp and one lane"),
        _ex_input(rng, 128, "exactly one block"),
        _ex_input(rng, 2 * 128 + 3, "two blocks and 3 elements"),
        _ex_input(rng, random_size(rng, 300, 600), "random"),
    ]


register(Exercise(
    name="07.exclusive_scan",
    title="An exclusive scan inside each block",
    signature="exclusive_scan(a, out)",
    task=("Write `exclusive_scan(a, out)`: out[i] = a[start] + ... + a[i - 1], the sum of the elements *before* i "
          "in its block of 128 (an exclusive scan, 排他前缀和: the first element of each block gets 0), where start "
          f"= 128 * (i // 128). Launched with threads_per_block = {EX_TPB} and blocks_per_grid = ceil(n / {EX_TPB}), "
          "one element per thread. Scan the block's elements in shared memory with the Hillis-Steele steps "
          "d = 1, 2, 4, ..., 64 (every value adds the one d places to its left), with no thread reading a value "
          "before its writer has finished nor overwriting one before its reader has read it (数据竞争); each "
          "thread then writes the value one place to its left (0 for the block's first)."),
    make_inputs=_ex_inputs,
    make_trace_input=lambda rng: _ex_input(rng, trace_size(rng, 2 * EX_TPB), "whole warps"),
    properties=(
        uses_shared(),
        coalesced("load"),
        coalesced("store"),
        no_races(hint="In each step a thread reads the word another thread overwrites in the same step. Read "
                      "into a register, let every thread of the block get there, then write — and again before "
                      "the next step reads."),
    ),
    hint_wrong=("Exclusive: out[i] leaves a[i] itself out, and the first element of every block is 0. If every "
                "value is off by its own element, you wrote the inclusive scan."),
    hint_oob="Guard the load of a and the store of out; a thread at position t < d has no left partner.",
    stub_hint="an inclusive scan in shared memory, then each thread writes its left neighbour's value (0 first)",
))


# 07 -- §6: a block tree with sequential addressing, two elements per thread added on the way in

SQ_TPB = 256
SQ_PER_BLOCK = 2 * SQ_TPB


def _sq_input(rng, n, why):
    a = f32(rng, n)
    blocks = ceil_div(n, SQ_PER_BLOCK)
    out = np.full(blocks, np.nan, np.float32)
    padded = np.zeros(blocks * SQ_PER_BLOCK, np.float64)
    padded[:n] = a
    want = padded.reshape(blocks, SQ_PER_BLOCK).sum(axis=1).astype(np.float32)
    return Input(f"n={n} ({why})", (blocks,), (SQ_TPB,), (a, out), {1: want}, ("a", "out"))


def _sq_inputs(rng):
    return [
        _sq_input(rng, 1, "one element"),
        _sq_input(rng, 300, "one block, its second half short"),
        _sq_input(rng, SQ_PER_BLOCK, "exactly one block"),
        _sq_input(rng, 3 * SQ_PER_BLOCK + 7, "three blocks and 7 elements"),
        _sq_input(rng, random_size(rng, 2000, 4000), "random"),
    ]


register(Exercise(
    name="07.block_sums_sequential",
    title="Block sums of 512 elements: a tree with sequential addressing",
    signature="block_sums_sequential(a, out)",
    task=(f"Write `block_sums_sequential(a, out)`: out[b] = a[512b] + ... + a[512b + 511] for a float32 vector a "
          f"(elements past the end count as 0). It is launched with threads_per_block = {SQ_TPB} and "
          f"blocks_per_grid = ceil(n / {SQ_PER_BLOCK}): each thread adds two elements {SQ_TPB} apart as it loads "
          "them (coalesced, 合并访存), puts the sum in a cuda.shared.array of 256 floats, and the block adds those "
          "as a tree. Use sequential addressing (顺序寻址, chapter 07 §6): in each step the first half of the "
          "active threads adds the second half, so that the reads are free of bank conflicts (存储体冲突) and "
          "whole warps are active or idle together (分支分化 only in the last five steps). Thread 0 writes out[b]: "
          "no atomics."),
    make_inputs=_sq_inputs,
    make_trace_input=lambda rng: _sq_input(rng, trace_size(rng, 4 * SQ_PER_BLOCK, SQ_PER_BLOCK), "whole blocks"),
    properties=(
        coalesced("load", hint="Thread t's two elements are 256 apart: a[512b + t] and a[512b + 256 + t]. Taking "
                               "a[512b + 2t] and its neighbour instead puts the lanes 8 bytes apart."),
        conflict_free("load", name="no bank conflicts on the tree's shared loads (存储体冲突)",
                      hint="With index = 2 * stride * tid, lanes read words 2·stride apart: at stride 16 the "
                           "active lanes all land in bank 0 (§6's block_strided). Which pairing keeps "
                           "neighbouring lanes on neighbouring words in every step?"),
        few_warp_splits(1.0, hint="With tid % (2 * stride) == 0 the working threads are spread over every warp: "
                                  "all 8 warps split in each of the first steps (§6's block_interleaved). Let the "
                                  "working threads be 0 .. stride - 1, so that only the last five steps, inside "
                                  "warp 0, split a warp."),
        no_atomics("global"),
        no_races(hint="Each step reads what other threads wrote in the step before: every thread of the block, "
                      "the idle ones too, must reach the barrier between two steps."),
    ),
    hint_wrong=("Every element must be counted once: a thread whose elements lie past the end of a puts 0 into "
                "the tree (the second half of the last block may be short, or empty), and the tree must start "
                "from all 256 values."),
    hint_oob="Guard both loads: the last block's elements may run past a.shape[0], its second half first.",
    stub_hint="two guarded loads added in a register; a shared tree, halving the active threads each step; thread 0 writes",
))


# 07 -- §7: four independent accumulators per thread, each element loaded once in a coalesced request

UN_TPB = 128
UN_K = 4
UN_PER_BLOCK = UN_K * UN_TPB  # 512 elements per block


def _un_input(rng, n, why):
    inp = _sq_input(rng, n, why)  # the same sums of 512 elements per block, launched with 128 threads
    return Input(inp.label, inp.griddim, (UN_TPB,), inp.args, inp.expected, inp.names)


def _un_inputs(rng):
    return [
        _un_input(rng, 1, "one element"),
        _un_input(rng, 130, "one block, two accumulators short"),
        _un_input(rng, UN_PER_BLOCK, "exactly one block"),
        _un_input(rng, 2 * UN_PER_BLOCK + 385, "two blocks and 385 elements"),
        _un_input(rng, random_size(rng, 2000, 4000), "random"),
    ]


def _load_requests_at_most_one_per_32():
    from course.exercises.contract import Property

    def measure(report, extra):
        n = extra["input"].args[0].size
        got, most = report.totals()["global_load_requests"], ceil_div(n, 32)
        return got <= most, (f"{got} global load requests for {n} elements: {got / max(n, 1):.4f} per element "
                             f"(want at most {most}: 1/32 per element)")

    return Property("each element loaded once, 32 to a request: at most 1/32 load request per element", measure,
                    "Count the loads: every element of a should be read exactly once, by a warp request whose 32 "
                    "lanes read 32 neighbouring elements. Are some elements read twice, or by a request of few lanes?")


register(Exercise(
    name="07.block_sums_unrolled",
    title="Block sums with four independent accumulators per thread",
    signature="block_sums_unrolled(a, out)",
    task=(f"Write `block_sums_unrolled(a, out)`: out[b] = a[512b] + ... + a[512b + 511] (elements past the end "
          f"count as 0), launched with threads_per_block = {UN_TPB} and blocks_per_grid = ceil(n / {UN_PER_BLOCK}). "
          f"As `unrolled` does in chapter 07 §7 (loop unrolling, 循环展开), each thread keeps {UN_K} independent "
          f"accumulators (独立累加器): thread t of block b loads a[512b + t], a[512b + 128 + t], a[512b + 256 + t] "
          "and a[512b + 384 + t] into four separate sums, so that the four loads are in flight at once; then the "
          "block adds its 128 thread sums (a shared-memory tree, or shuffles) and one thread writes out[b]. No "
          "atomics. Each element is loaded once, in coalesced requests (合并访存)."),
    make_inputs=_un_inputs,
    make_trace_input=lambda rng: _un_input(rng, trace_size(rng, 4 * UN_PER_BLOCK, UN_PER_BLOCK), "whole blocks"),
    properties=(
        coalesced("load", hint="Thread t's four elements are 128 apart. If thread t takes a[4t] .. a[4t + 3] "
                               "instead, the lanes of one load are 16 bytes apart: 16 sectors per request."),
        _load_requests_at_most_one_per_32(),
        no_atomics("global"),
        no_races(),
    ),
    hint_wrong=("Every element must be counted once: guard each of the four loads on its own (the last block may "
                "end inside any of its four quarters), and let every thread bring its sum, 0 or not, into the "
                "block's total."),
    hint_oob="Guard each of the four loads separately: the last block's quarters may run past a.shape[0].",
    stub_hint="four guarded loads 128 apart into four sums; add the block's 128 sums; one thread writes out[b]",
))


# 07 -- §3: one element per thread as in atomic_each, but one atomic per warp (warp-aggregated atomics)

WA_TPB = 256


def _wa_input(rng, n, why):
    a = f32(rng, n)  # small integers: the sum is exact in any order of the atomics
    out = np.zeros(1, np.float32)
    want = np.array([a.astype(np.float64).sum()], np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, WA_TPB),), (WA_TPB,), (a, out), {1: want}, ("a", "out"))


def _wa_inputs(rng):
    return [
        _wa_input(rng, 1, "one element"),
        _wa_input(rng, 33, "one warp and one lane"),
        _wa_input(rng, WA_TPB, "exactly one block"),
        _wa_input(rng, 3 * WA_TPB + 45, "three blocks, a warp and 13 lanes"),
        _wa_input(rng, random_size(rng, 1000, 3000), "random"),
    ]


register(Exercise(
    name="07.warp_atomic_sum",
    title="One atomic per warp: a warp-aggregated sum",
    signature="warp_atomic_sum(a, out)",
    task=("Write `warp_atomic_sum(a, out)`: out[0] = a[0] + ... + a[n - 1] for a float32 vector a; out[0] starts at "
          f"0. It is launched as `atomic_each` in chapter 07 §3 is, one element per thread: threads_per_block = "
          f"{WA_TPB}, blocks_per_grid = ceil(n / {WA_TPB}). But instead of one atomic add (原子操作) per element, "
          "each warp first adds its 32 elements in registers with shuffles (cuda.shfl_down_sync or "
          "cuda.shfl_xor_sync, 洗牌), and only one lane per warp adds the warp's sum to out[0]: warp-aggregated "
          "atomics (warp 级聚合原子操作). A warp with no element at all adds nothing. No shared memory is needed; "
          "the loads stay coalesced (合并访存)."),
    make_inputs=_wa_inputs,
    make_trace_input=lambda rng: _wa_input(rng, trace_size(rng, 8 * WA_TPB), "whole warps"),
    properties=(
        coalesced("load"),
        atomics_at_most("global", lambda inp: ceil_div(inp.args[0].size, 32), "one per warp",
                        "Add the warp's 32 elements with shuffles first; then one lane (lane 0, say) adds the "
                        "warp's sum with a single atomic. Every other lane adds nothing."),
    ),
    hint_wrong=("Every element must be counted once: all 32 lanes take part in every shuffle, with a full mask, "
                "also lanes past the end (they bring 0), and after the shuffles only one lane of each warp adds "
                "its value to out[0]: the other lanes hold partial sums that are already inside it."),
    hint_oob="Guard the load of a: the last warp may be only partly inside the vector.",
    stub_hint="a guarded load (0 past the end); five shuffles down; lane 0 of each warp adds with one atomic",
))


# 07 -- §13: a divergent tree fixed, on a block maximum of 256 elements over 128 threads (two per thread)

TM_TPB = 128
TM_PER_BLOCK = 2 * TM_TPB


@cuda.jit
def tree_max_planted(a, out):
    """The planted kernel of 07.tree_max_fixed: the right maxima, through block_interleaved's divergent tree."""
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * 256 + t
    first = a[i] if i < a.shape[0] else -math.inf
    second = a[i + 128] if i + 128 < a.shape[0] else -math.inf
    s[t] = max(first, second)
    cuda.syncthreads()
    stride = 1
    while stride < 128:
        if t % (2 * stride) == 0:  # the working threads are spread over all four warps
            s[t] = max(s[t], s[t + stride])
        cuda.syncthreads()
        stride *= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


def _tm_input(rng, n, why, negative=False):
    a = f32(rng, n)
    if negative:  # every element below 0: a padding of 0 would win
        a = (-(np.abs(a) + 1)).astype(np.float32)
    blocks = ceil_div(n, TM_PER_BLOCK)
    out = np.full(blocks, np.nan, np.float32)
    want = np.array([a[b * TM_PER_BLOCK:(b + 1) * TM_PER_BLOCK].max() for b in range(blocks)], np.float32)
    return Input(f"n={n} ({why})", (blocks,), (TM_TPB,), (a, out), {1: want}, ("a", "out"))


def _tm_inputs(rng):
    return [
        _tm_input(rng, 1, "one element"),
        _tm_input(rng, 100, "one block, its second half empty, all negative", negative=True),
        _tm_input(rng, TM_PER_BLOCK, "exactly one block"),
        _tm_input(rng, 2 * TM_PER_BLOCK + 131, "two blocks and 131 elements, all negative", negative=True),
        _tm_input(rng, random_size(rng, 1000, 3000), "random"),
    ]


register(Exercise(
    name="07.tree_max_fixed",
    title="A divergent tree fixed: each block's maximum with sequential addressing",
    signature="tree_max_fixed(a, out)",
    task=("`course.exercises.catalogue.ch07.tree_max_planted(a, out)` writes out[b] = the maximum of block b's "
          f"{TM_PER_BLOCK} elements of the float32 vector a, launched with threads_per_block = {TM_TPB} and "
          f"blocks_per_grid = ceil(n / {TM_PER_BLOCK}): each thread takes the larger of a[256b + t] and "
          "a[256b + 128 + t] (-inf past the end), then the block runs `block_interleaved`'s tree (chapter 07 §13): "
          "the threads with t % (2 * stride) == 0 work, so in the first steps every warp splits (分支分化). Its "
          "results are right. Write `tree_max_fixed(a, out)`: the same launch, loads and result, with a tree in "
          "which the working threads are contiguous, so that whole warps are active or idle together and only "
          "the last five steps and thread 0's write split warp 0 (6 splits over a block's 4 warps: at most 1.5 "
          "per warp), its shared reads free of bank conflicts "
          "(存储体冲突), and no thread reading a value before its writer has finished (数据竞争). Thread 0 writes "
          "out[b]: no atomics."),
    make_inputs=_tm_inputs,
    make_trace_input=lambda rng: _tm_input(rng, trace_size(rng, 4 * TM_PER_BLOCK, TM_PER_BLOCK), "whole blocks"),
    properties=(
        coalesced("load"),
        few_warp_splits(1.5, hint="With t % (2 * stride) == 0 the working threads are spread over every warp, "
                                  "so all four warps split in each of the first five steps. Let threads "
                                  "0 .. stride - 1 work, with the stride halving from 64: only the steps inside "
                                  "warp 0 (and thread 0's write) split a warp."),
        conflict_free("load", name="no bank conflicts on the tree's shared loads (存储体冲突)",
                      hint="Contiguous threads are half the fix: which words do they read? When thread t works "
                           "on word 2·stride·t (§6's block_strided), neighbouring lanes read words 2·stride apart "
                           "and share banks. Let thread t work on word t, its partner a fixed distance above."),
        no_atomics("global"),
        no_races(hint="Each step reads what other threads wrote in the step before: every thread of the block, "
                      "the idle ones too, must reach the barrier between two steps."),
    ),
    hint_wrong=("A thread with no element brings -inf, never 0 (all the elements may be negative), and the tree "
                "must end with the maximum of all 128 values in s[0]: count the steps from 64 down to 1."),
    hint_oob="Guard both loads: the last block's elements may run past a.shape[0], its second half first.",
    stub_hint="start from the planted kernel: which threads work in each step, and which words do they read?",
))


# 07 -- §4: float4 loads as in atomic_float4, the warp's shuffles of §3, one atomic per warp (128 elements)

F4_TPB = 256
F4_PER_BLOCK = 4 * F4_TPB  # one float4 per thread


def _f4_input(rng, n, why):
    a = f32(rng, n)  # small integers: the sum is exact in any order of the atomics
    out = np.zeros(1, np.float32)
    want = np.array([a.astype(np.float64).sum()], np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, F4_PER_BLOCK),), (F4_TPB,), (a, out), {1: want}, ("a", "out"))


def _f4_inputs(rng):
    k = random_size(rng, 1, 3)
    return [
        _f4_input(rng, 3, "shorter than one float4: the tail alone"),
        _f4_input(rng, 130, "one warp's 128 elements and a tail of 2"),
        _f4_input(rng, F4_PER_BLOCK, "exactly one block"),
        _f4_input(rng, 1025 * k + 17, f"1025·{k} + 17: a tail of {(1025 * k + 17) % 4}, a part-filled last block"),
        _f4_input(rng, random_size(rng, 1000, 5000), "random"),
    ]


def _wide_load_requests():
    """At most one global load request per 128 elements, each sector once: 32 lanes × 16 bytes per request."""
    from course.exercises.contract import Property

    def measure(report, extra):
        n = extra["input"].args[0].size  # a multiple of 128 (the traced size): no tail
        t = report.totals()
        req, sectors = t["global_load_requests"], t["global_load_sectors"]
        if not req:
            return False, "no global loads were traced"
        most = ceil_div(n, 128)
        return req <= most and sectors <= ceil_div(4 * n, 32), (
            f"{req} global load requests for {n} elements, {sectors} sectors: {sectors / req:.2f} sectors per request "
            f"(want at most {most} requests of 16 sectors: 32 lanes × 16 bytes, each sector once)")

    return Property("16-byte loads by whole warps: 16 sectors per load request (one per 128 elements)", measure,
                    "Each lane should read its 4 floats with one 16-byte load: `load_float4(a, q)` returns a[4q] .. "
                    "a[4q + 3] from one instruction. Four 4-byte loads make four requests of 4 sectors (or "
                    "16, each sector read four times) where one would do.")


register(Exercise(
    name="07.float4_warp_sum",
    title="float4 loads and one atomic per warp",
    signature="float4_warp_sum(a, out)",
    task=("Write `float4_warp_sum(a, out)`: out[0] = a[0] + ... + a[n - 1] for a float32 vector a; out[0] starts at "
          f"0. It is launched with threads_per_block = {F4_TPB} and blocks_per_grid = ceil(n / {F4_PER_BLOCK}): "
          "thread q = cuda.grid(1) reads float4 number q, a[4q] .. a[4q + 3], with one 16-byte load (`load_float4(a, q)` "
          "returns the four, after `from course.kernels.reduction import load_float4`) when q < n // 4, as "
          "`atomic_float4` does in chapter 07 §4; the n % 4 elements past the last whole float4 go to the first "
          "threads, one each. Then, instead of one atomic add (原子操作) per thread, each warp adds its 32 values "
          "with shuffles (cuda.shfl_down_sync, 洗牌, as in §3) and one lane adds the warp's sum to out[0]: one "
          "atomic per 128 elements. A warp with no element adds nothing."),
    make_inputs=_f4_inputs,
    make_trace_input=lambda rng: _f4_input(rng, trace_size(rng, 4096, 128), "whole warps of float4s"),
    properties=(
        _wide_load_requests(),
        atomics_at_most("global", lambda inp: ceil_div(inp.args[0].size, 128), "one per warp of 128 elements",
                        "Add the warp's 32 float4 sums with shuffles first; then one lane (lane 0, say) adds the "
                        "warp's sum with a single atomic. Every other lane adds nothing."),
    ),
    hint_wrong=("Every element must be counted once: the float4s cover a[0] .. a[4·(n // 4) - 1] only, so the last "
                "n % 4 elements (all of them when n < 4) need a thread each; all 32 lanes take part in every "
                "shuffle, with a full mask (lanes with nothing bring 0), and only one lane of each warp adds."),
    hint_oob="Guard the float4 load with q < n // 4, and the tail element with 4·(n // 4) + q < n.",
    stub_hint="a guarded float4 load (0 past the end) plus one tail element; five shuffles down; lane 0 of each "
              "warp adds with one atomic",
))


# 07 -- §9: the first pass of a two-pass reduction on a grid sized to the GPU: each block's Σx and Σx², no atomics

PM_TPB, PM_BLOCKS = 128, 8  # a fixed grid, whatever n is (on the H200: a few blocks per SM)
PM_GRID = PM_TPB * PM_BLOCKS


def _pm_input(rng, n, why):
    a = f32(rng, n)  # small integers: every partial sum, of x and of x², is exact in float32 in any order
    block = (np.arange(n) % PM_GRID) // PM_TPB  # the block whose threads a grid-stride loop hands element i to
    x = a.astype(np.float64)
    want = np.stack([np.bincount(block, x, PM_BLOCKS), np.bincount(block, x * x, PM_BLOCKS)], 1).astype(np.float32)
    out = np.full((PM_BLOCKS, 2), np.nan, np.float32)
    return Input(f"n={n} ({why})", (PM_BLOCKS,), (PM_TPB,), (a, out), {1: want}, ("a", "partials"))


def _pm_inputs(rng):
    k = random_size(rng, 1, 4)
    return [
        _pm_input(rng, 1, "one element: 7 blocks and 127 threads with nothing to add"),
        _pm_input(rng, 100, "shorter than one block"),
        _pm_input(rng, 3 * PM_GRID + 77, "three passes of the grid and 77 elements"),
        _pm_input(rng, 1025 * k + 17, f"1025·{k} + 17: not a multiple of the grid's {PM_GRID} threads"),
        _pm_input(rng, random_size(rng, 2000, 5000), "random"),
    ]


register(Exercise(
    name="07.partial_moments",
    title="The first pass of a two-pass reduction: each block's sum and sum of squares",
    signature="partial_moments(a, partials)",
    task=(f"Write `partial_moments(a, partials)`, the first pass of a two-pass reduction (两遍归约, chapter 07 §9) "
          f"that the second pass turns into a mean and a variance (方差). It is launched on a grid sized to the GPU, "
          f"not to n: threads_per_block = {PM_TPB} and blocks_per_grid = {PM_BLOCKS}, whatever n is. Thread "
          "q = cuda.grid(1) walks the float32 vector a with a grid-stride loop (网格跨步循环): elements q, q + S, "
          "q + 2S, ... below n, where S = cuda.gridsize(1), so that the 32 lanes of a warp read 32 neighbouring "
          "floats on every trip (合并访存), and it adds x and x * x into two register sums. Then each block adds "
          "its threads' two sums (shared memory, or shuffles) and writes its partial sums (部分和): partials[b, 0] "
          "= the sum of x, partials[b, 1] = the sum of x² over the elements block b's threads visited. partials "
          "starts unwritten; no atomics: block b owns row b. Every thread, one with no element too, reaches every "
          "barrier of the block (同步分歧 otherwise)."),
    make_inputs=_pm_inputs,
    make_trace_input=lambda rng: _pm_input(rng, trace_size(rng, 4 * PM_GRID, PM_GRID) + 17, "passes of the grid"),
    properties=(
        # measured against each request's own minimum: a request of a few scattered lanes is not coalesced either,
        # while a[q] read twice in one trip (which ptxas loads once, and the tracer counts twice) is
        coalesced_at_minimum("load", hint="Start thread q at q = cuda.grid(1) and step by the whole grid, "
                             "cuda.gridsize(1): then the 32 lanes of a warp read 32 neighbouring floats on every "
                             "trip, 4 sectors. A thread that walks a run of floats of its own puts its neighbours "
                             "a run apart, each lane in a sector of its own."),
        no_atomics("global", hint="Block b owns row b of partials: add in registers, then in the block, and let "
                                  "one thread write both sums. The second pass adds the rows: nothing to add "
                                  "atomically."),
        no_races(),
    ),
    hint_wrong=("Which elements does block b add? With a grid-stride loop thread q takes q, q + S, q + 2S, ... "
                "(S = cuda.gridsize(1)), so block b's elements are not one slice of a. Every thread, one with no "
                "element too, brings its two sums (0 and 0) into the block's reduction; column 0 is the sum of x, "
                "column 1 the sum of x * x."),
    hint_oob="The grid-stride loop must stop before a.shape[0]: test the index before every load.",
    stub_hint="a grid-stride loop into two register sums (x and x * x); a block reduction of both; one thread "
              "writes partials[b, 0] and partials[b, 1]",
))
