"""What every part of the race checker's validation suite shares: launch shapes, :class:`RaceCase`, argument
recipes and the helper that adds a case to a list.  See :mod:`course.validation.race_suite`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)

B = 64          # threads per block in the 1-D cases (two warps)
HALF = 32
TILE = 16       # matmul tile: (16, 16) blocks, 8 warps
N_MM = 32       # matmul size: 2 tiles along k
# shapes of shared arrays must be literal ints for the GPU compiler: `B + 2` inside a kernel is an int64
# expression, which the engine accepts and numba-cuda refuses (seen on the H200)
B_HALO = B + 2
B_ALIAS = B + HALF
B_WORDS = B // 4
FULL = 0xFFFFFFFF
LOW = 0x0000FFFF


@dataclass(frozen=True)
class RaceCase:
    """One launch and what CUDA's memory model says about its races (derived by hand)."""

    name: str
    kernel: Any
    griddim: Any
    blockdim: Any
    make_args: Callable[[np.random.Generator], tuple]
    shared: tuple = ()          # severities of shared-memory races: subset of ("error", "warning")
    global_: bool = False       # a global-memory race (racecheck does not look at global memory)
    benign: bool = False        # same-value writes only (a flag): racecheck reports nothing
    note: str = ""
    tags: tuple = field(default_factory=tuple)
    reference: Optional[Callable[..., np.ndarray]] = None  # race-free cases: NumPy's value of the last argument

    def args(self, seed: int = 0) -> tuple:
        return tuple(self.make_args(np.random.default_rng(seed)))

    @property
    def racy(self) -> bool:
        return bool(self.shared) or self.global_


def f32(rng, n):
    return rng.standard_normal(n).astype(np.float32)


def ints(rng, n):
    return rng.integers(0, 100, n).astype(np.float32)  # small integers: exact float sums in any order


def x_args(n=B, kind="f32"):
    if kind == "ints":
        return lambda rng: (ints(rng, n), np.zeros(n, np.float32))
    return lambda rng: (f32(rng, n), np.zeros(n, np.float32))


def reverse_ref(x, out):
    return x[::-1].copy()


def case_adder(cases: list):
    """A function that appends a :class:`RaceCase` to ``cases``, taking its fields as arguments."""

    def add(name, kernel, grid, block, make_args, shared=(), global_=False, benign=False, note="", tags=(),
            reference=None):
        cases.append(RaceCase(name, kernel, grid, block, make_args, tuple(shared), global_, benign, note,
                                tuple(tags), reference))

    return add


E, W = "error", "warning"
