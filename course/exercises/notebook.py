"""In the notebook: :func:`show` an exercise's task, :func:`check` a kernel against it."""

from __future__ import annotations

import os
import textwrap

from course.exercises.contract import Result, Verdict
from course.exercises.judging import judge
from course.exercises.registry import get

# In the notebook


def show(name: str) -> None:
    """Print an exercise's task, how its kernel is launched, and what check() will look at."""
    ex = get(name)
    print(f"{ex.name}: {ex.title}\n")
    print(textwrap.fill(ex.task, 100))
    how = ("records every call it makes on one run (streams, pinned or pageable buffers, bytes)" if ex.host
           else "traces one launch")
    print(f"\ncheck() runs it on fresh random data and on awkward shapes, then {how} and checks:")
    print("  - the result equals the NumPy reference on every input")
    for p in ex.properties:
        print(f"  - {p.name}")


def check(name: str, kernel, *, seed=None) -> Verdict:
    """Judge ``kernel`` for exercise ``name`` and print the verdict (what passed, what failed, on which input, a hint)."""
    ex = get(name)
    if os.environ.get("COURSE_CHECK") == "skip":
        print(f"{name}: check skipped here (COURSE_CHECK=skip); the grader judges this exercise itself.")
        return Verdict(ex.name, "skipped", 0, ex.max_score)
    if kernel is None or not (callable(kernel) or hasattr(kernel, "py_func")):
        v = Verdict(ex.name, "missing", 0, ex.max_score,
                    [Result("a kernel to check", False, f"got {kernel!r}")], f"pass the kernel: check({name!r}, {ex.target})")
    else:
        v = judge(ex, kernel, seed=seed)
    print(v)
    # a stub a chapter ships for the learner to complete is not yet a failure; a kernel that was written is
    if os.environ.get("COURSE_STRICT") == "1" and not v.passed and v.status != "not attempted":
        raise AssertionError(f"{name} did not pass (COURSE_STRICT=1): {v.message}")
    return v
