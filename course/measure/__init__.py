"""Measure: timing on a GPU (:mod:`.bench`), the harness of ``scripts/gpu`` (:mod:`.bench_harness`), Nsight Compute
and SASS (:mod:`.cuda_tools`), recorded runs (:mod:`.measurements`), occupancy from real resource use
(:mod:`.occupancy`) and the articles' claims checked against the records (:mod:`.claims`).

Each is imported from its module (``from course.measure import bench``); this package defines nothing.
"""
