"""What the blind rounds' kernel modules (:mod:`course.kernels.fresh`, :mod:`course.kernels.fresh3`) share: a launch
:class:`Plan`, the array makers, and the builder of their :class:`~course.kernels.cases.Case` lists.

A module declares ``SPECS = {name: (kernel, chapter, plan(shape) -> Plan, small shape, gpu shape, what, tags)}``
and gets ``plan``/``case``/``cases`` from :func:`builders`.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from course.kernels.cases import Case, compare

#: One launch: grid, block, make(rng) -> args, want(before) -> {index: NumPy answer}, rtol, atol, each array's bytes
#: (an upper bound where a size is random), the fraction of elements allowed off (float32 rounding decides a branch)
Plan = namedtuple("Plan", "grid block make want rtol atol nbytes frac", defaults=(0.0,))


def cdiv(a, b):
    return -(-a // b)


def f32(rng, shape):
    """Small integers as float32, built through int8 (no int64 temporary at 2^26 elements): sums exact in any order."""
    return rng.integers(-50, 51, size=shape, dtype=np.int8).astype(np.float32)


def uniform(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def nbytes(shape, item=4):
    return int(np.prod(shape)) * item


def zeros(shape, dtype=np.float32):
    return np.zeros(shape, dtype)


def vec(n, tpb=256):
    """(grid, block) of one thread per element."""
    return (cdiv(n, tpb),), (tpb,)


def blocks(a, per, fill=0.0):
    """``a`` padded with ``fill`` to whole runs of ``per``, as rows (float64: sums are exact)."""
    p = np.full(cdiv(a.size, per) * per, fill, np.float64)
    p[:a.size] = a
    return p.reshape(-1, per)


def builders(specs: dict, tag: str) -> tuple:
    """``(plan(name, shape), case(name, shape), cases(scale))`` for a module's ``specs``: cases named
    ``<tag>_<name>``, tagged ``chNN`` and ``tag``, each checked against its plan's NumPy answer."""
    def plan(name: str, shape) -> Plan:
        """The launch of case ``name`` at ``shape``."""
        return specs[name][2](shape)

    def case(name: str, shape) -> Case:
        """Case ``name`` launched at ``shape``."""
        kernel, chapter, _, _, _, what, tags = specs[name]
        p = plan(name, shape)
        return Case(f"{tag}_{name}", kernel, p.grid, p.block, p.make, note=f"{what} (shape {shape})",
                    tags=(f"ch{chapter:02d}", tag) + tags,
                    check=lambda before, after: compare(p.want(before), after, p.rtol, p.atol, frac=p.frac))

    def cases(scale: str = "gpu") -> list:
        """One case per launch (``scale="small"``: the same launch rules at awkward sizes for the CPU engine)."""
        return [case(name, s[3 if scale == "small" else 4]) for name, s in specs.items()]

    return plan, case, cases
