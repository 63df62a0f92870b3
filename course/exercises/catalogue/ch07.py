"""Chapter 07: a block reduction in shared memory."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size
from course.exercises.properties import (
    conflict_free,
    few_warp_splits,
    no_races,
    uses_shared,
)
from course.exercises.registry import reference, register

RED_TPB = 256  # course.kernels.reduction.TREE_THREADS
RED_PER_BLOCK = 4 * RED_TPB


def _red_input(rng, n, why):
    a = f32(rng, n)
    out = np.zeros(1, np.float32)  # the blocks add their partial sums into out[0]
    want = np.array([a.astype(np.float64).sum()], np.float32)  # small integers: every sum is exact
    return Input(f"n={n} ({why})", (ceil_div(n, RED_PER_BLOCK),), (RED_TPB,), (a, out), {1: want}, ("a", "out"))


def _red_inputs(rng):
    return [
        _red_input(rng, 1, "one element"),
        _red_input(rng, 7, "prime, less than one thread's four"),
        _red_input(rng, 1023, "one element short of one block"),
        _red_input(rng, RED_PER_BLOCK + 3, "one block and 3 elements"),
        _red_input(rng, random_size(rng, 2100, 3500), "random"),
    ]


register(Exercise(
    name="07.tree_sum",
    title="A reduction tree without bank conflicts",
    signature="tree_sum(a, out)",
    task=("Write `tree_sum(a, out)`: add all of the float32 vector a into out[0] (out starts at zero). It is "
          f"launched with threads_per_block = {RED_TPB} and blocks_per_grid = ceil(n / {RED_PER_BLOCK}): each "
          "thread first adds up to 4 elements of its block's part (any split that counts every element once), "
          "puts its value in a cuda.shared.array of 256 floats, and the block adds those up as a tree in shared "
          "memory (归约树); thread 0 then adds the block's sum into out[0] with cuda.atomic.add. Arrange the tree "
          "so that the shared-memory reads of each step are free of bank conflicts (存储体冲突) and no thread "
          "reads a value before its writer has finished."),
    make_inputs=_red_inputs,
    make_trace_input=lambda rng: _red_input(rng, 2 * RED_PER_BLOCK, "two full blocks"),
    properties=(
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the tree's shared loads (存储体冲突)",
                      hint="In each step, which words do the active lanes of one warp read? When lane t reads "
                           "word 2*stride*t, lanes 16 apart share a bank. Which pairing lets neighbouring lanes "
                           "read neighbouring words at every step?"),
        few_warp_splits(1.0),
        no_races(hint="Each step of the tree reads values that other threads wrote in the step before. What must "
                      "every thread of the block reach between two steps?"),
    ),
    hint_wrong=("Check that every element is counted exactly once: the last block is only partly filled, and "
                "threads with no element must still put a zero into the tree (and reach every barrier)."),
    hint_oob="Guard every load of a: the last block reaches past the end of a when n is not a multiple of 1024.",
    stub_hint="sum up to 4 elements per thread, then halve the number of active threads each step",
    reference=reference("reduction", "block_sequential", "REDUCTION_VERSIONS"),
    atol=1e-3,
))
