"""Chapter 10: find the bug: a planted missing barrier."""

from __future__ import annotations

from course.exercises.catalogue.ch09 import MM_BLOCK, MM_TILE, mm_inputs, mm_trace
from course.exercises.contract import Exercise
from course.exercises.properties import (
    no_races,
    uses_shared,
)
from course.exercises.registry import reference, register

register(Exercise(
    name="10.matmul_fixed",
    title="Find the bug: a tiled kernel that races",
    signature="matmul_fixed(a, b, c)",
    task=("course.kernels.matmul.tiled_missing_sync multiplies matrices through shared tiles, and its answer "
          "is sometimes right and sometimes not. Do not guess: run it, compare with NumPy, and read the "
          "tracer's race report (course.trace: report.races()), then write `matmul_fixed(a, b, c)`, the same "
          f"kernel without the bug: c = a @ b, launched with threads_per_block = {MM_BLOCK} and "
          f"blocks_per_grid = (ceil(n / {MM_TILE}), ceil(m / {MM_TILE})). It is judged on the result and on "
          "the tracer finding no race between threads (数据竞争)."),
    make_inputs=mm_inputs,
    make_trace_input=mm_trace,
    properties=(uses_shared(), no_races()),
    hint_wrong=("Compare with the planted kernel line by line where the race report points: which shared "
                "words does a thread read before the threads that write them have run?"),
    hint_oob="Keep the planted kernel's guards: every load past the edge of a or b loads a zero instead.",
    stub_hint="start from inspect.getsource(matmul.tiled_missing_sync) and fix what the race report shows",
    reference=reference("matmul", "tiled", "MATMUL_VERSIONS"),
    atol=1e-4,
))
