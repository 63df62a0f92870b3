"""Chapter 08: one chunk of a pipelined transfer: a kernel on [start, start + count)."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size
from course.exercises.properties import (
    coalesced,
)
from course.exercises.registry import register

CH_TPB = 128
CH_N = 1000
CH_FACTOR = 0.5


def _ch_input(rng, n, start, count, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)  # elements outside the chunk belong to other streams: untouched
    want = out.copy()
    want[start:start + count] = x[start:start + count] * np.float32(CH_FACTOR)
    return Input(f"n={n}, start={start}, count={count} ({why})", (ceil_div(count, CH_TPB),), (CH_TPB,),
                 (x, out, CH_FACTOR, start, count), {1: want}, ("x", "out", "factor", "start", "count"))


def _ch_inputs(rng):
    start = random_size(rng, 1, CH_N - 300)
    return [
        _ch_input(rng, CH_N, 0, 1, "first element only"),
        _ch_input(rng, CH_N, 0, 250, "first of four chunks"),
        _ch_input(rng, CH_N, 250, 250, "second of four chunks"),
        _ch_input(rng, CH_N, 997, 3, "the short last chunk"),
        _ch_input(rng, CH_N, 331, 257, "odd offset, prime count"),
        _ch_input(rng, CH_N, start, random_size(rng, 1, CH_N - start + 1), "random chunk"),
    ]


register(Exercise(
    name="08.scale_chunk",
    title="One chunk of a pipeline: a kernel on [start, start + count)",
    signature="scale_chunk(x, out, factor, start, count)",
    task=("Write `scale_chunk(x, out, factor, start, count)`: out[j] = x[j] * factor for start <= j < "
          "start + count, and nothing else of out changes. This is the kernel of one chunk when a transfer is "
          "split into pieces on several streams (chapter 08): each stream copies its chunk in, runs the kernel "
          "on it, and copies it out, while the other streams' chunks are still in flight, so a kernel that "
          "touches a neighbour's elements corrupts them. It is launched with threads_per_block = "
          f"{CH_TPB} and blocks_per_grid = ceil(count / {CH_TPB}), one thread per element of the chunk; "
          "loads and stores stay coalesced (合并访存)."),
    make_inputs=_ch_inputs,
    make_trace_input=lambda rng: _ch_input(rng, 4096, 1024, 2048, "an aligned chunk of 16 blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Thread i of the launch handles element start + i of the arrays, and only when i < count: the "
                "elements before start and from start + count on belong to other chunks and must keep their "
                "value."),
    hint_oob="The last block has threads past the chunk's end: compare i with count before any access.",
    stub_hint="thread i of the launch handles element start + i; threads with i >= count do nothing",
))
