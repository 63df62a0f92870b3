"""``python -m course.grade PATH... --out DIR`` (and ``export``, ``merge``, ``autograder``, ``gradescope``,
``classroom``): the grader's documented command. Its command line is :mod:`course.grading.cli`; this stub only runs it, and defines no names."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("course.grading.cli", run_name="__main__", alter_sys=True)
