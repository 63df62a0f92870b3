"""``python -m course.grade PATH... --out DIR`` (and ``export``, ``merge``, ``autograder``, ``gradescope``,
``classroom``): the grader's documented command. The grader is :mod:`course.grading.grade`; this stub only runs it, and defines no names."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("course.grading.grade", run_name="__main__", alter_sys=True)
