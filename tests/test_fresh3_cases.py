"""Round 3 of fresh kernels (course.kernels.fresh3) as timed cases: each launches on the CPU engine and is right on two
seeds, its check names a wrong result, the 2-D and 3-D kernels stay right at awkward shapes, the gpu-scale launches
keep the small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays),
three gpu-scale argument sets build in time, and every kernel compiles for the GPU (when ptxas is at hand)."""

import re

import numpy as np
import pytest

import course  # noqa: F401  (backend first)
from fresh_rounds import (ARRAY_LIMIT, CASE_LIMIT, builds_in_time_and_as_declared, every_kernel_compiles_for_the_gpu,
                          perturbed, run)
from course import engine
from course.kernels import fresh as F2
from course.kernels import fresh3 as F
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
SPARSE = {"spmv_csr_thread", "spmv_csr_warp"}  # their nbytes are upper bounds (random row lengths)
FEW_THREADS = {"nbody_accel"}  # a thread per body / per column: fewer threads than SMs × 256 on purpose
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and 1025 × 512 where the engine runs it fast; the kernels with barriers or long per-thread loops get
# 1025 of a narrower second dimension, so that the file stays fast on one core
AWKWARD = {"outer_product": [(17, 16), (1, 33), (1025, 512)], "copy_rows_warp": [(17, 16), (1, 33), (1025, 512)],
           "row_l2norm_warp": [(17, 16), (1, 33), (1025, 512)],
           "box3_global": [(17, 16), (1, 33), (1025, 40)], "box7_shared": [(17, 16), (1, 33), (1025, 20)],
           "transpose_f64": [(17, 16), (1, 33), (1025, 40)], "mandelbrot": [(17, 16), (1, 33), (1025, 20)],
           "laplace7_3d": [(3, 17, 16), (1, 1, 33), (2, 1025, 20)],
           "matmul_row_strip": [(17, 16, 33), (1, 33, 17), (1025, 20, 17)]}


def _short(c):
    return c.name[len("fresh3_"):]


def test_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 30 <= len(names) <= 36
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) >= 28  # about thirty distinct kernels
    assert not set(F.SPECS) & set(F2.SPECS)  # no case of round 2's names
    kernel_name = lambda k: engine.kernel_py_func(k).__name__  # noqa: E731
    assert not {kernel_name(c.kernel) for c in SMALL} & {kernel_name(s[0]) for s in F2.SPECS.values()}
    for c in SMALL:
        assert c.name.startswith("fresh3_") and "fresh3" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert set(TWO_D) == set(AWKWARD)


@pytest.mark.parametrize("c", SMALL, ids=_short)
def test_each_small_case_is_right_and_its_check_can_fail(c):
    p = F.plan(_short(c), F.SPECS[_short(c)][3])
    for seed in (0, 1):
        before, after = run(c, seed)
        assert c.check(before, after) == "", (c.name, seed, c.check(before, after))
    # the declared bytes are the arrays' bytes (an upper bound for the sparse cases; the gpu-scale test trusts them)
    got = tuple(a.nbytes for a in before if isinstance(a, np.ndarray))
    assert len(got) == len(p.nbytes) and all(g <= d for g, d in zip(got, p.nbytes)), (c.name, got, p.nbytes)
    assert _short(c) in SPARSE or got == p.nbytes, c.name
    # a wrong element in each argument the check compares is named (every element where a fraction may be off)
    for i in p.want(before):
        msg = c.check(before, perturbed(after, i, p.frac > 0))
        assert msg.startswith(f"argument {i}[") and "expected" in msg and "of" in msg, (c.name, i, msg)


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape, c.check(before, after))


def test_the_untouched_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh3_transpose_f64")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 1[") and "wrong" in msg


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_gpu_launch_keeps_the_rule_within_the_limits(name):
    small, gpu = (F.plan(name, F.SPECS[name][k]) for k in (3, 4))
    assert gpu.block == small.block, name
    assert len(gpu.grid) == len(small.grid), name
    assert max(gpu.nbytes) <= ARRAY_LIMIT and sum(gpu.nbytes) <= CASE_LIMIT, (name, gpu.nbytes)
    if "fixed_grid" in F.SPECS[name][6]:
        assert gpu.grid == small.grid and gpu.grid in ((1,), (8,)), name
        return
    assert np.prod(gpu.grid) > np.prod(small.grid), name
    if name not in FEW_THREADS:
        assert np.prod(gpu.grid) * np.prod(gpu.block) >= 132 * 256, name  # at least a block of 256 per SM


@pytest.mark.parametrize("name", ["rgb_to_gray", "collatz_steps", "matmul_row_strip"])
def test_three_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in one child process."""
    every_kernel_compiles_for_the_gpu(SMALL)
