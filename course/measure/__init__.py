"""Measure: timing on a GPU (:mod:`.bench`), the harness of ``scripts/gpu`` (:mod:`.bench_harness`), Nsight Compute
and SASS (:mod:`.cuda_tools`), recorded runs (:mod:`.measurements`), occupancy from real resource use
(:mod:`.occupancy`) the articles' claims checked against the records (:mod:`.claims`), the launches the course times
(:mod:`.timed_cases`) and why each takes the time it takes (:mod:`.explain`: ``course.explain``).

Each is imported from its module (``from course.measure import bench``); this package defines nothing.
"""
