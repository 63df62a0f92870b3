"""One launch whose memory counts are checked against Nsight Compute: the shared ``Case`` format.

A topic module lists its cases in ``NCU_CASES``.  ``scripts/gpu/validate_tracer.py`` traces each
case on the CPU (:func:`course.trace.trace`) and runs it under ``ncu`` on a GPU, then compares the
eight counts of :meth:`course.trace.Report.totals` with the hardware's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional

import numpy as np


@dataclass(frozen=True)
class Case:
    """A kernel, its launch shape and a recipe for fresh arguments (``make_args(rng) -> tuple``).

    ``expect`` optionally holds counts derived by hand (a subset of the totals' keys), so that the
    CPU tests check the tracer against arithmetic and the GPU run checks both against the hardware.
    ``note`` says what the case is about, or why its hardware count is uncertain.  ``check``, when given, says
    whether a launch was right: ``check(before, after) -> ''`` (right) or what is wrong where, from the arguments
    before and after the launch (host copies).
    """

    name: str
    kernel: Any
    griddim: Any
    blockdim: Any
    make_args: Callable[[np.random.Generator], tuple]
    expect: Optional[Mapping[str, int]] = None
    note: str = ""
    dynshared: int = 0
    tags: tuple = field(default_factory=tuple)
    check: Optional[Callable[[tuple, tuple], str]] = None

    def args(self, seed: int = 0) -> tuple:
        """Fresh arguments from a NumPy generator seeded with ``seed``."""
        return tuple(self.make_args(np.random.default_rng(seed)))


class At(NamedTuple):
    """An answer at some elements only: ``values`` at the flat positions ``flat`` (for :func:`compare`)."""
    flat: np.ndarray
    values: np.ndarray


def compare(want: dict, after: tuple, rtol: float, atol: float, names=None, frac: float = 0.0) -> str:
    """'' when every argument in ``want`` (index -> NumPy answer) holds its answer after the launch, but for a share
    ``frac`` of its elements, else the first wrong element (``names``: the arguments' names, default "argument i")."""
    for i, w in want.items():
        got = np.asarray(after[i])
        shape = got.shape
        if isinstance(w, At):  # the answer at some elements only (a reference too slow for every element)
            flat = np.asarray(w.flat)
            got, w = got.reshape(-1)[flat], np.asarray(w.values, dtype=np.float64)
        else:
            flat = None
            w = np.asarray(w, dtype=np.float64).reshape(shape)
        bad = ~np.isclose(got.astype(np.float64), w, rtol=rtol, atol=atol, equal_nan=True)
        if bad.sum() > frac * bad.size:
            first = np.argwhere(bad)[0]
            at = tuple(int(j) for j in first)
            where = at if flat is None else tuple(int(j) for j in np.unravel_index(int(flat[at[0]]), shape))
            name = names[i] if names else f"argument {i}"
            checked = f"{bad.size} elements" if flat is None else f"{bad.size} elements checked"
            return (f"{name}{list(where)} is {got[at]}, expected {w[at]:.7g} ({int(bad.sum())} of {checked} "
                    f"wrong)")
    return ""
