"""What the blind rounds' case tests (tests/test_fresh_cases.py, test_fresh3_cases.py, test_fresh4_cases.py, test_fresh5_cases.py, test_fresh6_cases.py, test_fresh7_cases.py) share:
the byte limits of a gpu-scale launch, a case run on the CPU engine, an output with a wrong element, and the checks
that a gpu argument set builds in time and that every kernel compiles for the GPU.  Not a test file itself."""

import time

import numpy as np

from course import engine
from course.trace import compiler
from numba import typeof

ARRAY_LIMIT = 1 << 30  # bytes: no array over 1 GiB
CASE_LIMIT = 2 << 30  # bytes: a case's arrays together


def run(c, seed):
    """``(arguments, arguments after the launch)`` of case ``c`` on seed ``seed`` (the launch runs on copies)."""
    before = c.args(seed)
    after = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in before)
    engine.launch(c.kernel, c.griddim, c.blockdim, after, dynshared=c.dynshared)
    return before, after


def perturbed(after, i, everywhere=False):
    """``after`` with argument ``i`` wrong in its middle element (in every element when ``everywhere``)."""
    a = after[i].copy()
    flat = a.reshape(-1)
    at = slice(None) if everywhere else flat.size // 2
    flat[at] = flat[at] ^ 1 if a.dtype.kind in "iu" else flat[at] + 1
    return after[:i] + (a,) + after[i + 1:]


def builds_in_time_and_as_declared(plan, name):
    """A gpu-scale argument set of ``plan`` is made in under 3 s and has the bytes the plan declares."""
    t = time.perf_counter()
    args = plan.make(np.random.default_rng(0))
    assert time.perf_counter() - t < 3.0, name
    assert tuple(a.nbytes for a in args if isinstance(a, np.ndarray)) == plan.nbytes, name


def every_kernel_compiles_for_the_gpu(cases):
    """What ptxas makes of each case's kernel (registers): looked up where known, the rest compiled in one child."""
    described = {}
    for c in cases:
        fn = engine.kernel_py_func(c.kernel)
        types = tuple(typeof(a) for a in c.args(0))
        described[c.name] = (fn, types, compiler.describe(fn, types))
    missing = {k: spec for _, _, (k, spec) in described.values() if compiler.lookup(k) is None}
    compiled = compiler.compile_facts(missing) if missing else {}
    for name, (fn, types, (key, spec)) in described.items():
        if key in compiled:
            f = compiled[key]
            s = f if "error" in f else f.get("sass")
        else:
            s = compiler.summary(fn, types, described=(key, spec))
        assert isinstance(s, dict) and "error" not in s and "registers" in s, (name, s)
