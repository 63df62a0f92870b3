"""Round 5 of fresh kernels (course.kernels.fresh5) as timed cases: each launches on the CPU engine and is right on two
seeds, its check names a wrong result, the 2-D and 3-D kernels stay right at awkward shapes, the gpu-scale launches
keep the small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays),
three gpu-scale argument sets build in time, no name is one of rounds 2, 3 and 4, and every kernel compiles for the
GPU (when ptxas is at hand)."""

import re

import numpy as np
import pytest

import course  # noqa: F401  (backend first)
from fresh_rounds import (builds_in_time_and_as_declared, every_kernel_compiles_for_the_gpu,
                          gpu_launch_keeps_the_rule_within_the_limits, right_on_two_seeds_and_its_check_can_fail, run)
from course import engine
from course.kernels import fresh as F2
from course.kernels import fresh3 as F3
from course.kernels import fresh4_plans as F4
from course.kernels import fresh5_plans as F
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and 1025 × N, N narrow so that the file stays fast on one core. The 3-D kernels take (z, y, x) or
# (batch, rows, cols), the int8 product (m, n, k). syrk_lower takes a's (n, k) and computes an n × n triangle: its
# 1025 goes to k (33 × 1025), as a 1025 × 1025 triangle of 16 × 16 blocks would take minutes on the engine.
AWKWARD = {"red_black_sweep": [(17, 16), (1, 33), (1025, 64)],
           "box27_march_z": [(3, 17, 16), (1, 1, 33), (2, 1025, 20)],
           "transpose_swizzled": [(3, 17, 16), (1, 1, 33), (2, 1025, 20)],
           "imatmul_i8": [(17, 16, 33), (1, 33, 17), (1025, 9, 5)],
           "syrk_lower": [(17, 16), (1, 33), (33, 1025)],
           "embedding_backward": [(17, 16), (1, 33), (1025, 64)]}
# the fixed grids this round uses: two blocks of 128 (a handful of SMs busy) and one block per H200 SM
FIXED_GRIDS = ((2,), (132,))


def _short(c):
    return c.name[len("fresh5_"):]


def _kernel_name(k):
    return engine.kernel_py_func(k).__name__


def test_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 32 <= len(names) <= 34
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) == 30  # thirty distinct kernels
    for older in (F2, F3, F4):  # no case and no kernel of round 2's, 3's or 4's names
        assert not set(F.SPECS) & set(older.SPECS), older.__name__
        assert not {_kernel_name(c.kernel) for c in SMALL} & {_kernel_name(s[0]) for s in older.SPECS.values()}
    for c in SMALL:
        assert c.name.startswith("fresh5_") and "fresh5" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert set(TWO_D) == set(AWKWARD)
    assert isinstance(F.RETIRED, dict)


@pytest.mark.parametrize("c", SMALL, ids=_short)
def test_each_small_case_is_right_and_its_check_can_fail(c):
    right_on_two_seeds_and_its_check_can_fail(F, c, _short(c))


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape, c.check(before, after))


def test_the_untouched_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh5_oddeven_sort256")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 0[") and "wrong" in msg


def test_the_pairs_differ_in_their_one_change_only():
    """The block-size pair shares kernel and arrays, the chase pair its kernel, the bank trio its arrays."""
    n = F.SPECS["bf16_max_block32"][3]
    p32, p256 = F.plan("bf16_max_block32", n), F.plan("bf16_max_block256", n)
    assert (p32.block, p256.block) == ((32,), (256,)) and p32.nbytes == p256.nbytes
    assert F.SPECS["chase_random"][0] is F.SPECS["chase_local"][0]
    r, loc = (F.plan(k, 1025).make(np.random.default_rng(0)) for k in ("chase_random", "chase_local"))
    assert sorted(r[0]) == sorted(loc[0]) == list(range(r[0].size))  # both tables are permutations
    trio = [F.plan(k, 21) for k in ("gemv32_conflicts", "gemv32_padded", "gemv32_swizzled")]
    assert len({(p.grid, p.block, p.nbytes) for p in trio}) == 1


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_gpu_launch_keeps_the_rule_within_the_limits(name):
    gpu_launch_keeps_the_rule_within_the_limits(F, name, FIXED_GRIDS)


@pytest.mark.parametrize("name", ["compact_unique", "chase_random", "bloom_insert_hbm"])
def test_three_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in one child process."""
    every_kernel_compiles_for_the_gpu(SMALL)
