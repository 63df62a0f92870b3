"""``python -m course.bench import|scrub``: the harness's documented command. Timing is
:mod:`course.measure.bench`, the command :mod:`course.measure.bench_harness`; this stub only runs it, and defines no names."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("course.measure.bench_harness", run_name="__main__", alter_sys=True)
