"""The contract of an exercise: its inputs, properties, the exercise itself, and the verdict on a kernel."""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Optional

#: Seconds one launch of a learner's kernel may run on the CPU engine before it counts as a hang.
LAUNCH_TIME_LIMIT = float(os.environ.get("COURSE_EXERCISE_TIME_LIMIT", "20"))


# --------------------------------------------------------------------------------------------------
# The contract


@dataclass
class Input:
    """One launch to check: a label that says why this shape, the launch, the arguments, the answers."""

    label: str
    griddim: tuple
    blockdim: tuple
    args: tuple
    expected: dict  # argument index -> the array that argument must hold afterwards
    names: tuple  # argument names, for messages ("dst[3, 16]")


@dataclass(frozen=True)
class Property:
    """A performance property measured on a traced launch: ``measure(report, extra) -> (ok, detail)``.

    ``ok`` None: the property cannot be judged on this machine (what the GPU compiler makes of a kernel, where
    the compiler is not installed); ``detail`` then says why and how to get it. Such a check is shown as not
    judged and left out of the score and of its maximum: it neither passes nor fails the kernel.
    """

    name: str
    measure: Callable
    hint: str
    lines: bool = False  # needs the tracer's line events (divergence)


HINT_ALL_WRONG = ("Every element was written and every one is wrong, so the threads reach the right places: what "
                  "each thread computes is not the exercise's formula. Compare the first wrong element above "
                  "(got, expected) with the formula in the exercise's statement.")


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: what to write, how it is launched, its inputs, reference and properties."""

    name: str  # "05.transpose_padded": chapter number, dot, target
    title: str
    signature: str  # "transpose_padded(src, dst)"
    task: str  # what to do, shown by show() and in the notebooks
    make_inputs: Callable  # rng -> list[Input]: edge shapes and fresh random data
    make_trace_input: Callable  # rng -> Input: the launch the properties are measured on
    properties: tuple = ()
    hint_wrong: str = ""
    # the hint when every element was written and every one is wrong (a formula, not an indexing, mistake);
    # None: hint_wrong fits that case too.  HINT_ALL_WRONG is the course's own.
    hint_all_wrong: Optional[str] = None
    hint_oob: str = ""
    stub_hint: str = "write the kernel here"
    reference: Optional[Callable] = None  # () -> the course's own kernel that solves it, from course.kernels
    rtol: float = 0.0
    atol: float = 0.0
    # host-code exercises (chapter 08's pipeline): the learner writes plain Python that issues copies and
    # launches; judge() hands it to host_judge (made by course.exercises.host.host_judge), with host_kernel() the
    # kernel the host code is given to launch
    host_judge: Optional[Callable] = None
    host_kernel: Optional[Callable] = None
    # how the grader turns a submitted host function's def node into a function: lint it with the
    # exercise's whitelist and compile only that (raises ValueError with the reason when rejected)
    host_compile: Optional[Callable] = None

    @property
    def chapter(self) -> int:
        return int(self.name.split(".")[0])

    @property
    def target(self) -> str:
        return self.name.split(".", 1)[1]

    @property
    def host(self) -> bool:
        """True for a host-code exercise (plain Python, no @cuda.jit)."""
        return self.host_judge is not None

    @property
    def max_score(self) -> int:
        return 1 + len(self.properties)


@dataclass
class Result:
    """One check of a verdict: what was checked, whether it held, what was seen, on which input."""

    what: str
    passed: bool
    detail: str = ""
    input: str = ""
    judged: bool = True  # False: this machine cannot judge it (then passed is False, and it is not scored)


@dataclass
class Verdict:
    """The outcome of judging one kernel: score, status, each check, and a hint for the first failure."""

    exercise: str
    status: str  # pass | partial | fail | not attempted | error | timeout | rejected | missing
    score: int
    max_score: int
    results: list = field(default_factory=list)
    hint: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def message(self) -> str:
        """One line for a gradebook: the first failure with its input, or what passed."""
        failed = [r for r in self.results if not r.passed and r.judged]
        unjudged = [r for r in self.results if not r.judged]
        if unjudged and not failed:
            judged = len(self.results) - len(unjudged)
            return (f"all {judged} checks judged here passed; not judged here: "
                    + "; ".join(f"{r.what}: {' '.join(r.detail.split())}" for r in unjudged))
        if not failed:
            return f"all {len(self.results)} checks passed" if self.results else self.status
        parts = []
        for r in failed:
            where = f" [input {r.input}]" if r.input and r is failed[0] else ""
            detail = " ".join(r.detail.split()) if r.detail else ""
            parts.append(f"{r.what}{where}: {detail}" if detail else f"{r.what}{where}")
        return "FAILED " + "; ".join(parts)

    def to_dict(self) -> dict:
        return {
            "exercise": self.exercise, "status": self.status, "score": self.score, "max_score": self.max_score,
            "message": self.message, "hint": self.hint,
            "results": [r.__dict__ for r in self.results],
        }

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {self.status.upper()}  {self.score}/{self.max_score}"]
        for r in self.results:
            mark = "PASS" if r.passed else "FAIL" if r.judged else "NOT JUDGED HERE"
            where = f"  [input {r.input}]" if r.input else ""
            detail = f": {r.detail}" if r.detail else ""
            lines.append(f"  {mark} {r.what}{detail}{where}".replace("\n", "\n       "))
        if self.hint:
            lines.append("  hint: " + textwrap.fill(self.hint, 96, subsequent_indent="        "))
        return "\n".join(lines)

    __repr__ = __str__
