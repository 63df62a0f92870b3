"""See what the memory system would do with a kernel, without a GPU: the course's warp-level tracer.

``report = trace(kernel, griddim, blockdim, *args)`` runs one launch on the CPU engine
(:func:`course.engine.launch`) and records every element read and write of global and shared arrays:
which block, warp and lane, which source site, the byte address and the access size.  It then groups
the accesses into warp-level instructions and asks :mod:`course.trace.analysis` what each one costs:

- ``report.totals()``: the eight counts Nsight Compute reports (requests, sectors, wavefronts);
- ``report.by_line()``: the same per kernel source line, with per-request averages and worst cases;
- ``report.warp_detail(line, block, warp, occurrence)``: every lane's index, address, bank, sector;
- ``report.divergence()``: lanes on each side of every branch, average active lanes per warp step;
- ``report.races()``: shared- and global-memory races (nothing orders the two accesses), graded as racecheck does.

The semantics (what a warp, a request, a wavefront is; where the model and the H200 may disagree)
are written down in ``docs/tracer.md``.

Modules: :mod:`~course.trace.entry` (:func:`trace`), :mod:`~course.trace.recorder` (the engine hooks:
records, then counts with :mod:`course.trace.analysis_vectorised`), :mod:`~course.trace.races` (shared- and
global-memory races, their severities, benign same-value stores), :mod:`~course.trace.arrays` (traced arrays),
:mod:`~course.trace.sites`, :mod:`~course.trace.markers` (line markers for divergence),
:mod:`~course.trace.records` (the record layout, ``SPLIT_COMPLEX``) and :mod:`~course.trace.report`.
"""

from __future__ import annotations

from course.trace.entry import trace
from course.trace.records import SPLIT_COMPLEX, TOTAL_KEYS
from course.trace.report import (
           Branch,
           Divergence,
           LaneAccess,
           LineCounts,
           Race,
           Report,
           WarpAccess,
)
from course.trace.sites import site_code, site_line

__all__ = ["trace", "Report", "LineCounts", "WarpAccess", "LaneAccess", "Race", "Divergence", "TOTAL_KEYS",
           "Branch", "SPLIT_COMPLEX", "site_code", "site_line"]
