"""Racy and race-free kernels whose races are derived by hand: the race checker's validation suite.

Each entry of ``RACE_CASES`` is a :class:`RaceCase`: a kernel, its launch shape, a recipe for fresh
arguments and what CUDA's memory model says about it, worked out by hand (the comment above each
kernel gives the reasoning):

- ``shared``: the severities of the shared-memory races, as compute-sanitizer racecheck grades them:
  ``"warning"`` for a race between lanes of one warp (racecheck's "warp-level programming" hazard),
  ``"error"`` for a race between threads of different warps; ``()`` when there is none;
- ``global_``: whether two threads access one global address, at least one writing, with no barrier
  between them (threads of different blocks: always a race; racecheck does not look at global memory);
- ``benign``: races that write the same value (a flag), which racecheck does not report.

``scripts/gpu/validate_races.py`` runs every case under ``compute-sanitizer --tool racecheck`` on the
H200 and records the table in ``data/race_validation.json``; ``tests/test_race_validation.py`` runs the
tracer on every case and compares.  Where the model defines a race that racecheck does not report, the
recorded table says so explicitly (``racecheck_misses``), case by case.

Blocks are 64 threads (two warps) unless a case says otherwise, so that every racy pattern can be made
to stay inside one warp (a warning) or to cross the warp boundary (an error).

The kernels live in ``course/validation/races/`` by kind (``stencils_scans``, ``reductions``, ``shared_tiles``,
``traps``, ``warp_level``, ``global_memory``), each module with its cases; ``races/common.py`` holds
:class:`RaceCase` and the launch shapes.  This module gathers the table and re-exports every kernel.
"""

from __future__ import annotations

import course  # noqa: F401  (chooses the backend before numba is imported)
from course.validation.races import stencils_scans, reductions, shared_tiles, traps, warp_level, global_memory
from course.validation.races.common import (  # noqa: F401  (re-exported)
    B, B_ALIAS, B_HALO, B_WORDS, FULL, HALF, LOW, N_MM, TILE, E, RaceCase, W,
)
from course.validation.races.stencils_scans import (  # noqa: F401  (re-exported: the kernels)
    reverse_nosync,
    reverse_sync,
    neighbour_nosync,
    stencil_nosync,
    stencil_sync,
    scan_nosync,
    scan_one_sync,
    scan_two_sync,
    scan_double_buffer,
    scan_double_buffer_nosync,
)
from course.validation.races.reductions import (  # noqa: F401  (re-exported: the kernels)
    reduce_nosync,
    reduce_sync,
)
from course.validation.races.shared_tiles import (  # noqa: F401  (re-exported: the kernels)
    tile_loop_one_sync,
    tile_loop_two_sync,
    matmul_tiled,
    matmul_no_second_sync,
    matmul_no_first_sync,
    partial_block_sync,
    partial_block_nosync,
    inplace_shift_nosync,
    inplace_shift_sync,
    own_element,
    alias_views_nosync,
    alias_views_sync,
    devfn_shared_nosync,
    devfn_shared_sync,
    bytes_neighbours_disjoint,
    byte_view_nosync,
    byte_view_sync,
)
from course.validation.races.traps import (  # noqa: F401  (re-exported: the kernels)
    shared_atomic_histogram,
    shared_plain_histogram,
    atomic_then_plain_read,
    read_only_after_barrier,
    disjoint_halves,
    flag_same_value,
    flag_different_values,
)
from course.validation.races.warp_level import (  # noqa: F401  (re-exported: the kernels)
    syncwarp_exchange,
    syncwarp_across_warps,
    shfl_then_neighbour_load,
    activemask_then_load,
    syncwarp_partial_then_full,
    syncwarp_partial_only,
    war_neighbour_in_warp,
    war_across_warps,
    rmw_pairs_in_warp,
)
from course.validation.races.global_memory import (  # noqa: F401  (re-exported: the kernels)
    global_accumulate_plain,
    global_accumulate_atomic,
    global_blocks_one_output,
    global_own_element,
    global_shift_one_block,
    global_shift_one_block_sync,
    global_shift_many_blocks_sync,
    global_flag_same_value,
    global_counter_one_warp,
)

# the table, in the order of the kernels above: shared memory by kind, warp level, global memory
RACE_CASES: list = [*stencils_scans.CASES, *reductions.CASES, *shared_tiles.CASES, *traps.CASES, *warp_level.CASES,
                     *global_memory.CASES]

CASES_BY_NAME = {c.name: c for c in RACE_CASES}


def case_identity(case: RaceCase) -> dict:
    """What a recorded run of ``case`` ran: the kernel (name and module) and its launch shape, JSON-ready.

    ``scripts/gpu/validate_races.py`` records it beside each case, so that a record run on another kernel or launch
    is noticed (``tests/test_race_validation.py``)."""
    py = getattr(case.kernel, "py_func", case.kernel)

    def dims(d):
        return list(d) if isinstance(d, tuple) else [d]

    return {"kernel": getattr(py, "__name__", ""), "module": getattr(py, "__module__", ""),
            "griddim": dims(case.griddim), "blockdim": dims(case.blockdim)}


def tracer_verdict(case: RaceCase, seed=None) -> dict:
    """What the tracer reports for ``case``: shared-memory severities (as racecheck grades them), whether there is a
    global-memory race, whether there are benign (same-value) races, and each reported pair of lines."""
    from course.trace import trace

    races = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), seed=seed, lines=False).races(benign=True)
    shared, glob, benign, pairs = set(), False, False, []
    for r in races:
        if r.benign:
            benign = True
        elif r.space == "shared":
            if r.errors:
                shared.add("error")
            if r.warnings:
                shared.add("warning")
        else:
            glob = True
        pairs.append({"space": r.space, "severity": r.severity, "errors": r.errors, "warnings": r.warnings,
                      "benign": r.benign, "array": r.array, "lines": [r.first["line"], r.second["line"]],
                      "sources": [r.first["source"], r.second["source"]], "ops": [r.first["op"], r.second["op"]]})
    return {"shared": sorted(shared), "global": glob, "benign": benign, "pairs": pairs}
