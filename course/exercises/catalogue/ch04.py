"""Chapter 04: shared memory (共享内存) — row sums through a conflict-free tile (padded, then swizzled), a 1-D
stencil through a tile with a halo, a histogram privatised in shared memory (judged on global atomics, on skewed
data), segment sums whose stride-8 read of a tile is made conflict-free (padding, or an odd stride), and each warp's
32 values rotated by one lane through a tile laid out so that a warp's words lie in 32 different banks."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, distinct, f32, random_size, trace_size
from course.exercises.properties import (
    atomics_at_most,
    coalesced,
    conflict_free,
    global_loads_at_most,
    no_races,
    shared_bytes_at_most,
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
    make_trace_input=lambda rng: _rs_input(rng, trace_size(rng, 96, RS_TILE), "whole tiles"),
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


# 04 -- a 1-D stencil through a shared tile with a halo

ST_TPB = 128
ST_R = 2
ST_W = (1.0, 2.0, 4.0, 2.0, 1.0)  # weights of x[i-2] .. x[i+2]; out of range counts as 0


def _st_ref(x):
    n = x.shape[0]
    pad = np.zeros(n + 2 * ST_R, np.float64)
    pad[ST_R:ST_R + n] = x
    out = np.zeros(n, np.float64)
    for k, w in enumerate(ST_W):
        out += w * pad[k:k + n]
    return out.astype(np.float32)


def _st_input(rng, n, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, ST_TPB),), (ST_TPB,), (x, out), {1: _st_ref(x)}, ("x", "out"))


def _st_inputs(rng):
    return [
        _st_input(rng, 1, "one element"),
        _st_input(rng, 3, "shorter than the stencil"),
        _st_input(rng, 129, "one block and one element"),
        _st_input(rng, 256, "two full blocks"),
        _st_input(rng, random_size(rng, 300, 700), "random"),
    ]


ST_TRACE_N = 1024

register(Exercise(
    name="04.stencil_1d",
    title="A 1-D stencil through a shared tile with a halo",
    signature="stencil_1d(x, out)",
    task=("Write `stencil_1d(x, out)`: out[i] = x[i-2] + 2 x[i-1] + 4 x[i] + 2 x[i+1] + x[i+2], where x outside "
          f"0..n-1 counts as 0 (模板计算). It is launched with threads_per_block = {ST_TPB} and blocks_per_grid = "
          f"ceil(n / {ST_TPB}). Read directly, every element of x is loaded five times from global memory. "
          f"Instead let the block copy its {ST_TPB} elements plus a halo (光环区) of {ST_R} on each side into a "
          "cuda.shared.array once, with coalesced loads, wait, and compute from the tile."),
    make_inputs=_st_inputs,
    make_trace_input=lambda rng: _st_input(rng, trace_size(rng, ST_TRACE_N), "whole warps"),
    properties=(
        uses_shared(),
        coalesced("load"),
        coalesced("store"),
        # n floats are n * 4 / 32 sectors; each block's two halos add at most one sector each side, twice
        global_loads_at_most(lambda inp: inp.args[0].size * 4 // 32 + inp.griddim[0] * 2 * 2,
                             "each element once, plus the halos",
                             "Count how many times each element of x is loaded from global memory: the tile "
                             "should be filled once, and only the halo elements loaded by two blocks."),
        no_races(),
    ),
    hint_wrong=("Check the edges: the halo of the first block and of the last one lies partly outside x, and "
                "those elements count as 0. Is every halo slot of the tile written before it is read?"),
    hint_oob="Guard every load of x (the halo reaches 2 past both ends) and the store of out.",
    stub_hint="tile of 128 + 4 floats: load the block's part and its halo, syncthreads, then the weighted sum",
))


# 04 -- a histogram: global atomics, then privatised in shared memory

HI_BINS = 32
HI_TPB = 128
HI_PER_BLOCK = 8 * HI_TPB


def _hi_input(rng, n, why, skew=None):
    x = rng.integers(0, HI_BINS, size=n).astype(np.int32)
    if skew is not None:  # a fraction `skew` of the elements in one bin: the case where atomics collide
        hot = int(rng.integers(0, HI_BINS))
        x = np.where(rng.random(n) < skew, hot, x).astype(np.int32)
    hist = np.zeros(HI_BINS, np.int32)
    want = np.bincount(x, minlength=HI_BINS).astype(np.int32)
    return Input(f"n={n} ({why})", (ceil_div(n, HI_PER_BLOCK),), (HI_TPB,), (x, hist), {1: want}, ("x", "hist"))


def _hi_inputs(rng):
    return [
        _hi_input(rng, 1, "one element"),
        _hi_input(rng, 100, "less than one block"),
        _hi_input(rng, HI_PER_BLOCK + 7, "one block and 7 elements"),
        _hi_input(rng, 1500, "every element in one bin", skew=1.0),
        _hi_input(rng, random_size(rng, 2000, 3000), "random, 90% in one bin", skew=0.9),
    ]


HI_TRACE_N = 4 * HI_PER_BLOCK

register(Exercise(
    name="04.histogram",
    title="A histogram: from global atomics to shared-memory privatisation",
    signature="histogram(x, hist)",
    task=(f"Write `histogram(x, hist)`: hist[b] += the number of elements of x equal to b, for int32 values in "
          f"0..{HI_BINS - 1} (hist starts at zero, {HI_BINS} int32 bins). It is launched with threads_per_block = "
          f"{HI_TPB} and blocks_per_grid = ceil(n / {HI_PER_BLOCK}): each block counts {HI_PER_BLOCK} elements, 8 "
          "per thread. One cuda.atomic.add on hist per element is correct, but on skewed data (most elements in "
          "one bin) thousands of atomics queue on one address. Privatise (私有化): let each block count into its "
          "own histogram in a cuda.shared.array with shared-memory atomics, then add it into hist with at most "
          f"one global atomic per bin. Read x coalesced (合并访存); it is checked on skewed data too."),
    make_inputs=_hi_inputs,
    make_trace_input=lambda rng: _hi_input(rng, trace_size(rng, HI_TRACE_N), "90% in one bin",
                                           skew=0.9),
    properties=(
        uses_shared(hint="Count into a histogram of the block's own, in a cuda.shared.array: atomics on shared "
                         "memory stay inside the SM."),
        coalesced("load"),
        atomics_at_most("global", lambda inp: HI_BINS * inp.griddim[0], "one per bin per block",
                        "Each block should count into its own copy of the histogram first and publish each bin "
                        "once at the end."),
        no_races(hint="The block's histogram must be all zeros before any thread counts into it, and complete "
                      "before any thread publishes it. What must every thread reach in between?"),
    ),
    hint_wrong=("Every element must be counted once: check the last, partial block, and that the shared "
                "histogram starts at zero in every block."),
    hint_oob="Guard the loads of x: the last block reaches past the end.",
    stub_hint="count into a histogram of the block's own first; publish it once at the end",
))


# 04 -- row sums through a swizzled tile: conflict-free without padding

register(Exercise(
    name="04.row_sums_swizzled",
    title="Row sums through a swizzled tile: no conflicts, no padding",
    signature="row_sums_swizzled(a, out)",
    task=("Write `row_sums_swizzled(a, out)`: the row sums of 04.row_sums (out[r] = a[r, 0] + ... + a[r, 31] for "
          "a float32 matrix of shape (n, 32)), with the same launch: threads_per_block = (32, 8), one block per 32 "
          "rows. The 8 warps copy the block's rows into a cuda.shared.array of exactly 32 x 32 floats with "
          "coalesced loads, wait, and lane tx of one warp adds up row tx of the tile. This time the tile may not "
          "be padded (4096 bytes of shared memory, no more): store element (r, c) in column c XOR r of row r "
          "(an XOR swizzle, 异或重排), so that the lanes reading one column each hit a different bank."),
    make_inputs=_rs_inputs,
    make_trace_input=lambda rng: _rs_input(rng, trace_size(rng, 96, RS_TILE), "whole tiles"),
    properties=(
        coalesced("load"),
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the strided tile read (存储体冲突)",
                      hint="Lane tx reads row tx of the tile, one column at a time. Without padding, word "
                           "(r, c) is in bank c: all 32 lanes in one bank. Where must the swizzle put element "
                           "(r, c) so that lanes with different r see different banks for the same c?"),
        conflict_free("store", name="no bank conflicts on the tile's stores (存储体冲突)"),
        shared_bytes_at_most(32 * 32 * 4, "no padding: at most 4096 bytes of shared memory per block",
                             "Padding the tile to 33 columns would work too, and costs 128 bytes per tile: "
                             "this exercise asks for the swizzle, which costs none."),
        no_races(),
    ),
    hint_wrong=("The swizzle moves elements within a row only: an element must be read back from the swizzled "
                "column it was stored in, with the row's own r. Rows past the end of a count as 0."),
    hint_oob="Guard the loads: the last block's rows may run past a.shape[0], and its sums past out.",
    stub_hint="store each element at its swizzled column; syncthreads; lane tx reads row tx through the same swizzle",
))


# 04 -- segment sums: a strided read of a shared tile, made conflict-free by padding or an odd stride (§2, §3)

SG_LEN = 8  # floats per segment: lane t reads words 8t .. 8t + 7 of the tile, stride 8
SG_TPB = 128
SG_PER_BLOCK = SG_LEN * SG_TPB  # 1024 floats per block


def _sg_input(rng, m, why):
    x = f32(rng, m * SG_LEN)
    out = np.full(m, np.nan, np.float32)
    want = x.astype(np.float64).reshape(m, SG_LEN).sum(axis=1).astype(np.float32)
    return Input(f"n={m * SG_LEN} ({m} segments, {why})", (ceil_div(m, SG_TPB),), (SG_TPB,), (x, out), {1: want},
                 ("x", "out"))


def _sg_inputs(rng):
    return [
        _sg_input(rng, 1, "one segment"),
        _sg_input(rng, 37, "prime, less than one block"),
        _sg_input(rng, SG_TPB, "exactly one block"),
        _sg_input(rng, SG_TPB + 3, "one block and 3 segments"),
        _sg_input(rng, random_size(rng, 200, 500), "random"),
    ]


register(Exercise(
    name="04.segment_sums",
    title="Segment sums: a strided read of a shared tile without bank conflicts",
    signature="segment_sums(x, out)",
    task=(f"Write `segment_sums(x, out)`: out[i] = x[8i] + x[8i + 1] + ... + x[8i + 7], for a float32 vector x of "
          f"8m elements and m segments (分段求和). It is launched with threads_per_block = {SG_TPB} and "
          f"blocks_per_grid = ceil(m / {SG_TPB}): block b sums segments {SG_TPB}b .. {SG_TPB}b + {SG_TPB - 1}, "
          f"thread t of it segment {SG_TPB}b + t. Thread t reading x[8i + k] itself puts its lanes 32 bytes apart: "
          f"not coalesced. Instead let the block copy its {SG_PER_BLOCK} floats into a cuda.shared.array with "
          "coalesced loads, wait, and let thread t add up its 8 words of the tile. Read as they are, those words "
          "are 8 apart: a stride of 8 words, an 8-way bank conflict by §3's rule (存储体冲突; where the compiler "
          "merges the 8 reads into 16-byte loads, still a 2-way one). Lay the tile out so that each request of "
          "that read takes the fewest wavefronts its bytes need (an odd stride between segments, or a pad word "
          "after every 32)."),
    make_inputs=_sg_inputs,
    make_trace_input=lambda rng: _sg_input(rng, trace_size(rng, 2 * SG_TPB), "whole warps"),
    properties=(
        coalesced("load", hint="Thread t reading x[8i + k] makes neighbouring lanes 8 floats apart: every lane "
                               "its own 32-byte sector. Copy the block's floats into shared memory first, with "
                               "neighbouring lanes on neighbouring elements."),
        coalesced("store"),
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the tile's strided read (存储体冲突)",
                      hint="Thread t reads words 8t + k: lanes t and t + 4 are 32 words apart, in the same bank, "
                           "8 lanes per bank (§3: gcd(8, 32) = 8). §3 says which strides are free. Either give "
                           "each segment 9 words, or insert one unused word after every 32 so that word w "
                           "moves to w + w // 32."),
        no_races(),
    ),
    hint_wrong=("Check the last, partial block (m is not always a multiple of 128): every segment below m must "
                "be loaded and summed, nothing past the end touched, and the tile read back at the same place "
                "each word was stored (with the padding or the stride it was stored with)."),
    hint_oob="The last block covers floats past the end of x when m is not a multiple of 128: guard the loads "
             "and the stores of out.",
    stub_hint="copy the block's 1024 floats into a padded shared tile, syncthreads, then thread t sums its 8 words",
))


# 04 -- §2: each warp's 32 values rotated by one lane through shared memory, every access in 32 different banks

RT_TPB = 256


def _rt_input(rng, n, why):
    a = distinct(rng, n)
    lane = np.arange(n) % 32
    want = a[np.arange(n) - lane + (lane + 1) % 32]  # whole warps: the source stays inside the vector
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, RT_TPB),), (RT_TPB,), (a, out), {1: want}, ("a", "out"))


def _rt_inputs(rng):
    return [
        _rt_input(rng, 32, "one warp"),
        _rt_input(rng, RT_TPB, "exactly one block"),
        _rt_input(rng, RT_TPB + 96, "one block and three warps"),
        _rt_input(rng, 32 * random_size(rng, 9, 40), "random, whole warps"),
    ]


register(Exercise(
    name="04.warp_rotate",
    title="Rotate each warp's values by one lane through a conflict-free tile",
    signature="warp_rotate(a, out)",
    task=("Write `warp_rotate(a, out)`: for a float32 vector a whose length n is a multiple of 32 (whole warps, "
          "not always whole blocks), out[i] = a[i - lane + (lane + 1) % 32] with lane = i % 32: each group of 32 "
          "is rotated left by one (lane 31 takes lane 0's value). It is launched with threads_per_block = "
          f"{RT_TPB}, blocks_per_grid = ceil(n / {RT_TPB}). Go through a cuda.shared.array (共享内存, no shuffles): "
          "each thread stores its element, the block waits, each thread reads its neighbour's word. Chapter 04 §2: "
          "shared memory has 32 banks (存储体), word w in bank w % 32, and a warp's access costs as many passes as "
          "its busiest bank has distinct words. Lay the tile out so that the 32 lanes of a warp store to, and "
          "read from, 32 different banks (存储体冲突)."),
    make_inputs=_rt_inputs,
    make_trace_input=lambda rng: _rt_input(rng, trace_size(rng, 2 * RT_TPB), "whole warps"),
    properties=(
        uses_shared(),
        conflict_free("store", hint="Which word does lane l of warp w store to? With a tile indexed [lane, warp], "
                                    "lanes are 8 words apart (8 warps per block): 4 banks, 8 lanes each. Index "
                                    "it so that neighbouring lanes store to neighbouring words."),
        conflict_free("load", hint="A rotation of 32 neighbouring words is still one word per bank: read the "
                                   "neighbour's word in the same layout you stored it in."),
        coalesced("load"),
        coalesced("store"),
        no_races(),
    ),
    hint_wrong=("Lane l takes the value of lane (l + 1) % 32 of its own warp: the warp's first element is "
                "i - i % 32, and lane 31 wraps to lane 0, not to the next warp."),
    hint_oob="Guard the global load and store against a.shape[0]: the last block may hold fewer than 8 warps.",
    stub_hint="store your element in the tile; syncthreads; read lane (lane + 1) % 32 of your warp; store",
))
