"""What the blind rounds' case tests (tests/test_fresh_cases.py, test_fresh3_cases.py, test_fresh4_cases.py, test_fresh5_cases.py, test_fresh6_cases.py, test_fresh7_cases.py, test_fresh8_cases.py, test_fresh9_cases.py, test_fresh10_cases.py) share:
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


def right_on_two_seeds_and_its_check_can_fail(F, c, short):
    """Case ``c`` (plan ``short`` of round module ``F``) is right on seeds 0 and 1, its arrays have the bytes its plan
    declares (the gpu-scale checks trust them), and a wrong element in each argument its check compares is named
    (every element where a fraction may be off)."""
    p = F.plan(short, F.SPECS[short][3])
    for seed in (0, 1):
        before, after = run(c, seed)
        assert c.check(before, after) == "", (c.name, seed, c.check(before, after))
    got = tuple(a.nbytes for a in before if isinstance(a, np.ndarray))
    assert got == p.nbytes, (c.name, got, p.nbytes)
    for i in p.want(before):
        msg = c.check(before, perturbed(after, i, p.frac > 0))
        assert msg.startswith(f"argument {i}[") and "expected" in msg and "of" in msg, (c.name, i, msg)


def gpu_launch_keeps_the_rule_within_the_limits(F, name, fixed_grids):
    """Plan ``name``'s gpu launch keeps the small one's block and grid rank within the byte limits; a fixed grid is
    one of ``fixed_grids`` at both scales with ten times the bytes, any other grid grows to a block of 256 per SM."""
    small, gpu = (F.plan(name, F.SPECS[name][k]) for k in (3, 4))
    assert gpu.block == small.block, name
    assert len(gpu.grid) == len(small.grid), name
    assert max(gpu.nbytes) <= ARRAY_LIMIT and sum(gpu.nbytes) <= CASE_LIMIT, (name, gpu.nbytes)
    if "fixed_grid" in F.SPECS[name][6]:
        assert gpu.grid == small.grid and gpu.grid in fixed_grids, name
        assert sum(gpu.nbytes) > 10 * sum(small.nbytes), name  # the same grid, much more work
        return
    assert np.prod(gpu.grid) > np.prod(small.grid), name
    assert np.prod(gpu.grid) * np.prod(gpu.block) >= 132 * 256, name  # at least a block of 256 per SM


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
