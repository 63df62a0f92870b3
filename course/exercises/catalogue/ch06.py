"""Chapter 06: grid-stride loop: a fixed grid, smaller than the data."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import f32, random_size
from course.exercises.properties import (
    coalesced,
)
from course.exercises.registry import reference, register

GS_TPB = 128
GS_BLOCKS = 2  # 256 threads in all, whatever n is: most inputs need several elements per thread
GS_FACTOR = 0.5  # a power of two: x * factor is exact


def _gs_input(rng, n, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (GS_BLOCKS,), (GS_TPB,), (x, out, GS_FACTOR),
                 {1: x * np.float32(GS_FACTOR)}, ("x", "out", "factor"))


def _gs_inputs(rng):
    grid = GS_BLOCKS * GS_TPB
    return [
        _gs_input(rng, 1, "one element"),
        _gs_input(rng, 131, "prime, fewer elements than threads"),
        _gs_input(rng, grid, "exactly one element per thread"),
        _gs_input(rng, grid + 1, "one element more than threads"),
        _gs_input(rng, 3 * grid + 7, "three passes and 7 elements"),
        _gs_input(rng, random_size(rng, 600, 1500), "random"),
    ]


register(Exercise(
    name="06.scale_grid_stride",
    title="A grid-stride loop: any n, a grid of the size you chose",
    signature="scale_grid_stride(x, out, factor)",
    task=("Write `scale_grid_stride(x, out, factor)`: out[i] = x[i] * factor for every i < x.shape[0]. "
          f"The grid is sized for the GPU, not for the data (chapter 06: enough resident warps to hide "
          f"latency, then stop): it is launched with threads_per_block = {GS_TPB} and blocks_per_grid = "
          f"{GS_BLOCKS} whatever n is, so one thread must handle several elements when n is larger than the "
          "grid. Keep each pass of the grid coalesced (合并访存): in one step, the 32 lanes of a warp touch 32 "
          "neighbouring elements."),
    make_inputs=_gs_inputs,
    make_trace_input=lambda rng: _gs_input(rng, 4 * GS_BLOCKS * GS_TPB, "four passes of the grid"),
    properties=(
        coalesced("load", hint="Each thread should step by the whole grid (cuda.gridsize(1)), not walk a "
                               "contiguous run of its own: neighbouring lanes must touch neighbouring elements "
                               "in every step."),
        coalesced("store"),
    ),
    hint_wrong=("Elements past the first blocks_per_grid * threads_per_block were never written: after its first "
                "element, a thread must go on to the next one that no other thread handles, until it passes "
                "the end of the array."),
    hint_oob="The loop must stop before x.shape[0]: test the index before every access, not only the first.",
    stub_hint="start at this thread's global index and step by the total number of threads in the grid",
    reference=reference("transfers", "scale"),
))
