"""Chapter 02: warps — which warp a thread is in (a warp never spans two blocks), two paths with no divergent
warp, a warp vote (ballot), the warp-synchronous bug of older CUDA code fixed with syncwarp, and rows of 48
channels packed into full warps."""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import block_sums_input, ceil_div, f32, random_size, trace_size
from course.exercises.properties import (
    atomics_at_most,
    busy_lanes_at_least,
    coalesced,
    no_divergence,
    no_races,
    uses_shared,
)
from course.exercises.registry import register

DIV_TPB = 128
DIV_ITERS = 4


def _div_input(rng, n, why):
    from course.kernels import warps

    x = rng.uniform(0.0, 1.0, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    odd = (np.arange(n) % 2) == 1
    want = np.where(odd, warps.PATH_B(x, DIV_ITERS), warps.PATH_A(x, DIV_ITERS)).astype(np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, DIV_TPB),), (DIV_TPB,), (x, out, DIV_ITERS), {1: want},
                 ("x", "out", "iters"))


def _div_inputs(rng):
    return [
        _div_input(rng, 1, "one element"),
        _div_input(rng, 97, "prime, less than one block"),
        _div_input(rng, 128, "exactly one block"),
        _div_input(rng, 263, "prime, two blocks and 7 elements"),
        _div_input(rng, random_size(rng, 300, 600), "random"),
    ]



register(Exercise(
    name="02.even_odd_paths",
    title="Divergence: two paths, and no warp runs both",
    signature="even_odd_paths(x, out, iters)",
    task=("Write `even_odd_paths(x, out, iters)`: out[i] = path A applied iters times to x[i] when i is even, "
          "path B when i is odd (path A: v = v * A_MUL + A_ADD; path B: v = v * v * B_MUL + B_ADD, in float32, "
          "constants from course.kernels.warps). It is launched with threads_per_block = "
          f"{DIV_TPB} and blocks_per_grid = ceil(n / {DIV_TPB}). Choosing the path by the parity of the "
          "thread's own index splits every warp in two (分支分化): both loops run, half the lanes idle in each. "
          "You decide which thread handles which element: make every warp take only one path."),
    make_inputs=_div_inputs,
    make_trace_input=lambda rng: _div_input(rng, trace_size(rng, 512, DIV_TPB), "whole blocks"),
    properties=(no_divergence(),),
    hint_wrong=("Each element must be computed exactly once, with the path its own index asks for. Write down, "
                "for a thread, which element it handles, then check that the map covers 0..n-1 once and "
                "that threads past the end do nothing."),
    hint_oob="Some threads have no element when n does not fill the last block: guard the index.",
    stub_hint="map threads to elements so that a warp's 32 lanes all get even elements, or all odd ones",
    reference=None,
    rtol=1e-6, atol=1e-6,
))


# 02 -- count positives with a warp vote ------------------------------------------------------------

CNT_TPB = 128


def _cnt_input(rng, n, why, frac=None):
    x = f32(rng, n)
    if frac is not None:
        x = np.where(rng.random(n) < frac, np.abs(x) + 1, -np.abs(x)).astype(np.float32)
    out = np.zeros(1, np.int32)
    return Input(f"n={n} ({why})", (ceil_div(n, CNT_TPB),), (CNT_TPB,), (x, out),
                 {1: np.array([(x > 0).sum()], np.int32)}, ("x", "out"))


def _cnt_inputs(rng):
    return [
        _cnt_input(rng, 1, "one element", frac=1.0),
        _cnt_input(rng, 33, "one warp and one lane"),
        _cnt_input(rng, 128, "all positive", frac=1.0),
        _cnt_input(rng, 200, "none positive", frac=0.0),
        _cnt_input(rng, random_size(rng, 300, 700), "random"),
    ]


CNT_TRACE_N = 1024

register(Exercise(
    name="02.count_positive",
    title="A warp vote: count the positive elements",
    signature="count_positive(x, out)",
    task=("Write `count_positive(x, out)`: add to out[0] (an int32, starting at 0) the number of elements of x "
          f"that are > 0. It is launched with threads_per_block = {CNT_TPB} and blocks_per_grid = ceil(n / "
          f"{CNT_TPB}). One atomic add per positive element is correct but serialises on one address; a warp "
          "can instead vote (cuda.ballot_sync gives every lane a 32-bit mask of the lanes whose condition holds, "
          "cuda.popc counts its bits), so that one lane adds the warp's count: at most one atomic per warp. "
          "Every lane of the warp must take part in the vote, also those past the end of x."),
    make_inputs=_cnt_inputs,
    make_trace_input=lambda rng: _cnt_input(rng, trace_size(rng, CNT_TRACE_N), "whole warps"),
    properties=(
        coalesced("load"),
        atomics_at_most("global", lambda inp: ceil_div(inp.args[0].size, 32), "one per warp",
                        "Let the warp agree first: which single lane should publish the warp's count, and how "
                        "does it learn how many of the 32 lanes said yes?"),
    ),
    hint_wrong=("Count each element once: a lane past the end votes 'no'. ballot_sync's mask must name every "
                "lane of the warp (0xffffffff), and only one lane per warp may add the count."),
    hint_oob="A lane past the end must not read x, but it must still take part in the vote.",
    stub_hint="each lane decides yes/no; the warp votes; one lane adds the number of yes votes",
))


# 02 -- the warp-synchronous bug, fixed with syncwarp -----------------------------------------------

WS_TPB = 64


def _ws_input(rng, n, why):
    return block_sums_input(rng, n, WS_TPB, why)


def _ws_inputs(rng):
    return [
        _ws_input(rng, 1, "one element"),
        _ws_input(rng, 40, "less than one block"),
        _ws_input(rng, 64, "exactly one block"),
        _ws_input(rng, 64 * 3 + 5, "three blocks and 5 elements"),
        _ws_input(rng, random_size(rng, 300, 700), "random"),
    ]


@cuda.jit
def warp_sum_planted(a, out):
    """The planted kernel of 02.warp_sum_fixed: right only while a warp's lanes run in lockstep."""
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * 64 + t
    s[t] = a[i] if i < a.shape[0] else float32(0)
    cuda.syncthreads()
    if t < 32:
        s[t] += s[t + 32]
        s[t] += s[t + 16]
        s[t] += s[t + 8]
        s[t] += s[t + 4]
        s[t] += s[t + 2]
        s[t] += s[t + 1]
        if t == 0:
            out[cuda.blockIdx.x] = s[0]


register(Exercise(
    name="02.warp_sum_fixed",
    title="The warp-synchronous bug, fixed with syncwarp",
    signature="warp_sum_fixed(a, out)",
    task=("`course.exercises.catalogue.ch02.warp_sum_planted` sums each block's 64 elements of a into "
          "out[blockIdx.x]: after one barrier, warp 0 finishes the sum in shared memory with no barrier at all, "
          "relying on its 32 lanes running in lockstep (the 'warp-synchronous' trick of older CUDA code). Since "
          "Volta, the lanes of a warp may run apart (independent thread scheduling), and the trick becomes a race "
          "between lanes. Run the planted kernel, trace it (report.races()), and write `warp_sum_fixed(a, out)`: "
          f"the same computation, launched with threads_per_block = {WS_TPB} and blocks_per_grid = ceil(n / "
          f"{WS_TPB}), still through shared memory and without shuffles, made correct with cuda.syncwarp() "
          "(线程束同步): a lane must not read a word another lane of its warp is about to write, nor before it "
          "has written it."),
    make_inputs=_ws_inputs,
    make_trace_input=lambda rng: _ws_input(rng, trace_size(rng, 256), "whole warps"),
    properties=(
        uses_shared(hint="The exercise is about the shared-memory version: keep the partial sums in a "
                         "cuda.shared.array of 64 floats."),
        no_races(hint=("Lanes of one warp are not in lockstep: between a lane's read of its partner's word and "
                       "its own write, and between one step and the next, the warp must meet. Does every lane "
                       "reach each meeting point, including the lanes whose result no longer matters?")),
    ),
    hint_wrong=("Each step reads words that other lanes wrote in the step before: if a lane runs ahead, it "
                "reads an old value. Where must the lanes of the warp wait for each other?"),
    hint_oob="Guard the load of a: the last block is only partly filled, and its missing elements count as 0.",
    stub_hint="start from the planted kernel: which lanes of warp 0 read words that other lanes write?",
))


# 02 -- a branch on the data: leaky ReLU without a divergent warp

LR_TPB = 128


def _lr_input(rng, n, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    want = np.where(x > 0, x, np.float32(0.125) * x).astype(np.float32)  # 0.125: exact on small integers
    return Input(f"n={n} ({why})", (ceil_div(n, LR_TPB),), (LR_TPB,), (x, out), {1: want}, ("x", "out"))


def _lr_inputs(rng):
    return [
        _lr_input(rng, 1, "one element"),
        _lr_input(rng, 33, "one warp and one lane"),
        _lr_input(rng, 129, "one block and one element"),
        _lr_input(rng, random_size(rng, 300, 700), "random"),
    ]


register(Exercise(
    name="02.leaky_relu",
    title="A branch on the data, without a divergent warp",
    signature="leaky_relu(x, out)",
    task=("Write `leaky_relu(x, out)`: out[i] = x[i] if x[i] > 0 else 0.125 * x[i], for every i < x.shape[0], one "
          f"thread per element (threads_per_block = {LR_TPB}, blocks_per_grid = ceil(n / {LR_TPB})). On random data "
          "the lanes of a warp disagree about the sign, so `if x[i] > 0:` splits every warp (分支分化) and it runs "
          "both sides one after the other. Compute the same value without a branch that depends on the data: "
          "max and min of x[i] and 0 give its positive and negative parts. The guard against n is the one "
          "branch left, and it splits no warp of the traced launch (n a multiple of 32)."),
    make_inputs=_lr_inputs,
    make_trace_input=lambda rng: _lr_input(rng, trace_size(rng, 1024, LR_TPB), "whole blocks"),
    properties=(
        no_divergence(hint="Which branch depends on the value each lane loaded? An expression with max() and "
                           "min() gives the same number with every lane on one path."),
        coalesced("load"),
        coalesced("store"),
    ),
    hint_wrong=("Positive elements stay as they are, the others are multiplied by 0.125 (zero stays zero): the "
                "positive part max(v, 0) plus 0.125 times the negative part min(v, 0)."),
    hint_oob="Threads past the end must do nothing: guard the index against x.shape[0].",
    stub_hint="no `if` on the value: out = positive part + 0.125 * negative part",
))


# 02 -- which warp: a warp never spans two blocks ---------------------------------------------------


def _gw_input(rng, blocks, bx, by, why):
    threads = bx * by
    warps_per_block = ceil_div(threads, 32)
    b, t = np.divmod(np.arange(blocks * threads), threads)  # t: the linear id in the block, x fastest
    want = (b * warps_per_block + t // 32).astype(np.int32).reshape(blocks, by, bx)
    out = np.full((blocks, by, bx), -1, np.int32)
    return Input(f"{blocks} blocks of ({bx}, {by}) ({why})", (blocks,), (bx, by), (out,), {0: want}, ("out",))


def _gw_inputs(rng):
    return [
        _gw_input(rng, 3, 12, 8, "96 threads: three full warps"),
        _gw_input(rng, 4, 10, 5, "50 threads: a full warp and one of 18 lanes"),
        _gw_input(rng, 2, 7, 3, "21 threads: one partial warp"),
        _gw_input(rng, 3, 33, 2, "66 threads: rows longer than a warp"),
        _gw_input(rng, int(rng.integers(2, 6)), int(rng.integers(3, 20)), int(rng.integers(2, 9)), "random shape"),
    ]


register(Exercise(
    name="02.global_warp",
    title="Which warp: a warp never spans two blocks",
    signature="global_warp(out)",
    task=("Write `global_warp(out)`: launched on a 1-D grid of 2-D blocks (blockDim = (bx, by)), every thread writes "
          "the launch-wide number of its warp (线程束) into out[blockIdx.x, threadIdx.y, threadIdx.x]. The hardware "
          "cuts a block into warps by the linear thread id, tid = threadIdx.x + threadIdx.y * bx (x fastest), 32 "
          "consecutive ids a warp, and numbers them block after block: block b holds warps "
          "b * w ... b * w + w - 1, with w = ceil(bx * by / 32) warps per block. A block is cut into warps on its "
          "own, so when bx * by is not a multiple of 32 its last warp is partial and the next block starts a new "
          "warp: the launch-wide thread index // 32 is then wrong."),
    make_inputs=_gw_inputs,
    make_trace_input=lambda rng: _gw_input(rng, trace_size(rng, 8, 1), 16, 8, "whole warps"),
    properties=(coalesced("store"),),
    hint_wrong=("Two things decide a thread's warp: its linear id in the block, x fastest (tid = threadIdx.x + "
                "threadIdx.y * bx), and the warps per block, w = ceil(bx * by / 32): the block's first warp is "
                "blockIdx.x * w and the thread's is tid // 32 after it. The launch-wide index // 32 is right only when "
                "every block is a whole number of warps."),
    hint_oob="out has one slot per thread of the launch: out[blockIdx.x, threadIdx.y, threadIdx.x].",
    stub_hint="tid from threadIdx.x, threadIdx.y and blockDim.x; warps per block, rounded up; the block's first warp",
))


# 02 -- §6: rows of 48 elements (not a multiple of 32) packed into full warps with one flat index

CH_CHANNELS = 48
CH_TPB = 128


def _ch_input(rng, rows, why):
    x, w = f32(rng, (rows, CH_CHANNELS)), f32(rng, CH_CHANNELS)
    out = np.full(x.shape, np.nan, np.float32)
    return Input(f"{rows}x{CH_CHANNELS} ({why})", (ceil_div(rows * CH_CHANNELS, CH_TPB),), (CH_TPB,), (x, w, out),
                 {2: (x * w).astype(np.float32)}, ("x", "w", "out"))


def _ch_inputs(rng):
    return [
        _ch_input(rng, 1, "one row, less than a block"),
        _ch_input(rng, 3, "three rows, one element more than a block"),
        _ch_input(rng, 8, "eight rows, exactly three blocks"),
        _ch_input(rng, random_size(rng, 9, 60), "random"),
    ]


register(Exercise(
    name="02.scale_channels",
    title="Rows of 48 channels packed into full warps",
    signature="scale_channels(x, w, out)",
    task=(f"Write `scale_channels(x, w, out)`: out[r, c] = x[r, c] * w[c] for a float32 matrix x of shape (rows, "
          f"{CH_CHANNELS}) — {CH_CHANNELS} channels per row, not a multiple of 32 — and channel weights w of length "
          f"{CH_CHANNELS}. It is launched with threads_per_block = {CH_TPB} and blocks_per_grid = ceil(rows * "
          f"{CH_CHANNELS} / {CH_TPB}): as many threads as elements, rounded up to whole blocks. As chapter 02 §6 "
          f"shows, a block of {CH_CHANNELS} threads per row would be two warps, the second half empty (尾部效应): "
          "instead number the elements with one flat index over the whole launch, so that every warp but the "
          "last has 32 busy lanes, and find each element's row and channel from it. Loads and stores stay "
          "coalesced (合并访存)."),
    make_inputs=_ch_inputs,
    make_trace_input=lambda rng: _ch_input(rng, trace_size(rng, 32, 8), "whole blocks"),
    properties=(
        busy_lanes_at_least(31.0, hint=f"Every thread of the launch should own one element: thread i of the grid "
                                       f"takes element i of the flattened matrix, row i // {CH_CHANNELS}, channel "
                                       f"i % {CH_CHANNELS}. A thread per channel of one row leaves lanes idle."),
        coalesced("load"),
        coalesced("store"),
    ),
    hint_wrong=(f"Flat index i = blockIdx.x * {CH_TPB} + threadIdx.x covers rows * {CH_CHANNELS} elements: its row "
                f"is i // {CH_CHANNELS} and its channel i % {CH_CHANNELS} (the row length, not the block size or "
                "32)."),
    hint_oob=f"Guard the flat index against rows * {CH_CHANNELS}: the last block runs past the end.",
    stub_hint=f"one flat index per thread; row = i // {CH_CHANNELS}, channel = i % {CH_CHANNELS}; guard; one store",
))
