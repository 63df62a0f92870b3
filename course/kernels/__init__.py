"""Every kernel of the course, once, by topic (``course/kernels/<topic>.py``).

Each topic module holds its kernel versions, a registry of them and a NumPy reference; a module may
also expose ``NCU_CASES`` (a list of :class:`course.kernels.cases.Case`) that
``scripts/gpu/validate_tracer.py`` runs under Nsight Compute to check the tracer's counts.

Shared by the topics: ``registry.py`` (the one ``Version`` type every registry's entries derive from) and
``vector.py`` (the 16-byte load/store intrinsics: one instruction on the GPU, one wide access when traced).
"""
