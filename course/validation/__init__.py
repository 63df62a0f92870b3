"""Validation suites, apart from the teaching kernels of ``course.kernels``: the engine's (``engine_suite``),
the tracer's (``tracer_suite`` with its kernels in ``tracer_kernels``: counts checked against Nsight Compute)
and the race checker's (``race_suite``, ``peer_styles``)."""
