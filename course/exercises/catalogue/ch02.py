"""Chapter 02: divergence: even elements take path A, odd ones path B, and no warp takes both."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, random_size
from course.exercises.properties import (
    no_divergence,
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
    make_trace_input=lambda rng: _div_input(rng, 256, "two full blocks"),
    properties=(no_divergence(),),
    hint_wrong=("Each element must be computed exactly once, with the path its own index asks for. Write down, "
                "for a thread, which element it handles, then check that the map covers 0..n-1 once and "
                "that threads past the end do nothing."),
    hint_oob="Some threads have no element when n does not fill the last block: guard the index.",
    stub_hint="map threads to elements so that a warp's 32 lanes all get even elements, or all odd ones",
    reference=None,
    rtol=1e-6, atol=1e-6,
))
