"""Graded exercises: one contract used by the notebook's ``check()``, by pytest and by the grader.

An :class:`Exercise` knows what the learner must write (``def <target>(...)`` decorated with
``@cuda.jit``), how it is launched, its NumPy reference, fresh inputs for every check (random data
and the awkward shapes that catch missing guards: sizes that do not fill a block or a tile,
1-element and prime sizes) and its *performance properties*, measured with the course's tracer
(:mod:`course.trace`): sectors per request on global memory (coalescing / 合并访存), wavefronts per
shared-memory request (bank conflicts / 存储体冲突), "uses shared memory at all", "no race between
threads".  A kernel that gives the right numbers but breaks a property does not get full marks, so
a missing ``cuda.syncthreads()`` fails even when the result happens to be right.

In a notebook::

    from course.exercises import check, show
    show("05.transpose_padded")                    # the task, the launch, what is checked
    check("05.transpose_padded", transpose_padded) # a short verdict with a hint

``python -m course.grade`` grades submitted notebooks with the same :func:`judge`, outside the
learner's reach.  ``python -m course.exercises build`` generates ``exercises/*.ipynb`` from
``solutions/*.ipynb`` (``--check`` fails when they drift); ``python -m course.exercises list``
lists the exercises by chapter.

Defined for chapter 00 (notebooks/00_start_here.ipynb), which explains how exercises are checked.

Modules: :mod:`~course.exercises.contract` (Input, Property, Exercise, Verdict), :mod:`~course.exercises.lint`
(what a graded kernel may use), :mod:`~course.exercises.properties`, :mod:`~course.exercises.inputs`,
:mod:`~course.exercises.judging` (:func:`judge`), :mod:`~course.exercises.registry`, one module per chapter
in :mod:`~course.exercises.catalogue`, :mod:`~course.exercises.notebook` (:func:`show`, :func:`check`) and
:mod:`~course.exercises.build` (the exercise notebooks).
"""

from __future__ import annotations

from course.exercises import catalogue  # noqa: F401  (registers every chapter's exercises)
from course.exercises.build import (
    EXERCISES_DIR,
    ROOT,
    SOLUTIONS,
    build,
    exercise_notebook,
    main,
    strip_solutions,
)
from course.exercises.contract import (
    LAUNCH_TIME_LIMIT,
    Exercise,
    Input,
    Property,
    Result,
    Verdict,
)
from course.exercises.judging import is_stub, judge
from course.exercises.lint import (
    ARRAY_ATTRS,
    CUDA_API,
    DTYPES,
    MATH_API,
    PUBLIC_DEVICE_FUNCTIONS,
    SAFE_BUILTINS,
    Names,
    attr_chain,
    kernel_source_problems,
    lint_kernel,
    public_device_function,
)
from course.exercises.notebook import check, show
from course.exercises.properties import (
    coalesced,
    conflict_free,
    few_warp_splits,
    no_divergence,
    no_races,
    shared_at_most,
    uses_shared,
)
from course.exercises.registry import (
    EXERCISES,
    by_chapter,
    by_target,
    get,
    reference,
    register,
)

__all__ = [
    "ARRAY_ATTRS", "CUDA_API", "DTYPES", "EXERCISES", "EXERCISES_DIR", "LAUNCH_TIME_LIMIT", "MATH_API", "PUBLIC_DEVICE_FUNCTIONS", "ROOT",
    "SAFE_BUILTINS", "SOLUTIONS", "Exercise", "Input", "Names", "Property", "Result", "Verdict", "attr_chain",
    "build", "by_chapter", "by_target", "check", "coalesced", "conflict_free", "exercise_notebook",
    "few_warp_splits", "get", "is_stub", "judge", "kernel_source_problems", "lint_kernel", "main",
    "no_divergence", "no_races", "public_device_function", "reference", "register", "shared_at_most", "show", "strip_solutions",
    "uses_shared",
]
