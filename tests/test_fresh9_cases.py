"""Round 9 of fresh kernels (course.kernels.fresh9) as timed cases: each launches on the CPU engine and is right on two
seeds, its check names a wrong result, the 2-D kernels stay right at awkward shapes, the gpu-scale launches keep the
small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays), three
gpu-scale argument sets build in time, no name is one of rounds 2 to 8, and every kernel compiles for the GPU (when
ptxas is at hand)."""

import math
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
from course.kernels import fresh5_plans as F5
from course.kernels import fresh6_plans as F6
from course.kernels import fresh7_plans as F7
from course.kernels import fresh8_plans as F8
from course.kernels import fresh9 as K
from course.kernels import fresh9_plans as F
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and a 1025 side, the other narrow so that the file stays fast on one core; the float64 product
# takes (m, n, k)
AWKWARD = {"dct8x8_shared": [(17, 16), (1, 33), (1025, 5)],
           "transpose_diagonal_f32": [(17, 16), (1, 33), (1025, 7)],
           "rotate90_u16_tiled": [(17, 16), (1, 33), (1025, 7)],
           "dgemm_tile16_f64": [(17, 16, 33), (1, 33, 17), (1025, 5, 3)]}
# the fixed grid this round uses: 264 blocks striding over the whole array
FIXED_GRIDS = ((264,),)


def _short(c):
    return c.name[len("fresh9_"):]


def _kernel_name(k):
    return engine.kernel_py_func(k).__name__


def test_round9_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 32 <= len(names) <= 34
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) == 30  # thirty distinct kernels
    for older in (F2, F3, F4, F5, F6, F7, F8):  # no case and no kernel of an earlier round's names
        assert not set(F.SPECS) & set(older.SPECS), older.__name__
        assert not {_kernel_name(c.kernel) for c in SMALL} & {_kernel_name(s[0]) for s in older.SPECS.values()}
    for c in SMALL:
        assert c.name.startswith("fresh9_") and "fresh9" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert set(TWO_D) == set(AWKWARD)
    assert isinstance(F.RETIRED, dict)


@pytest.mark.parametrize("c", SMALL, ids=_short)
def test_each_round9_small_case_is_right_and_its_check_can_fail(c):
    right_on_two_seeds_and_its_check_can_fail(F, c, _short(c))


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_round9_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape, c.check(before, after))


def test_the_untouched_round9_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh9_hist_equalize_tiles")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 1[") and "wrong" in msg


def test_the_round9_references_agree_with_independent_ones():
    """The splitmix64 reference gives the published first output for seed 0; the CORDIC reference is within 2⁻²⁰ of
    cos and sin; the DCT reference is orthonormal (it keeps the sum of squares) and puts a constant tile in its
    corner; the byte swap, the geometric steps and the modular powers match plain Python."""
    assert int(F._splitmix_ref(1, np.uint64(0))[0]) == 0xE220A8397B1DCDAF
    th = np.linspace(-math.pi / 2, math.pi / 2, 101)
    x, y = F._cordic_ref((th * (1 << 30)).astype(np.int32))
    assert np.abs(x / 2.0 ** 30 - np.cos(th)).max() < 2 ** -20 and np.abs(y / 2.0 ** 30 - np.sin(th)).max() < 2 ** -20
    img = np.random.default_rng(0).integers(-5, 6, (16, 24)).astype(np.float64)
    d = F._dct_ref(img)
    assert np.isclose((d ** 2).sum(), (img ** 2).sum())
    flat = F._dct_ref(np.ones((8, 8)))
    assert np.isclose(flat[0, 0], 8.0) and np.allclose(flat.reshape(-1)[1:], 0.0)
    w = np.array([0x01020304, 0xA0B0C0D0], np.uint32)
    assert list(F.plan("byteswap_u32", 2).want((w, None))[1]) == [0x04030201, 0xD0C0B0A0]
    xs = np.array([0.5, 1.0, 1.5, 1000.0], np.float32)
    k, _ = F._geometric_ref(xs)
    want = []
    for v in xs:
        c, v = 0, np.float32(v)
        while v > 1:
            v, c = np.float32(v * np.float32(K.GS_RATE)), c + 1
        want.append(c)
    assert list(k) == want
    e = np.array([0, 1, 5, 40, 1000])
    assert list(F._powmod(3, e)) == [pow(3, int(v), K.MM_P) for v in e]


def test_the_round9_pairs_differ_in_their_one_change_only():
    """The gather pair shares kernel and launch (a table 32 times larger), the shared-read pair kernel, launch and
    bytes (only the stride differs), and the steps pair kernel, launch and bytes (the inputs sorted or not)."""
    for x, y in (("hash_gather4_l2", "hash_gather4_hbm"), ("shared_reads_stride1", "shared_reads_stride32"),
                 ("geometric_steps_random", "geometric_steps_sorted")):
        assert F.SPECS[x][0] is F.SPECS[y][0]
    gpu = {k: F.plan(k, s[4]) for k, s in F.SPECS.items()}
    for x, y in (("shared_reads_stride1", "shared_reads_stride32"), ("geometric_steps_random", "geometric_steps_sorted")):
        assert (gpu[x].grid, gpu[x].block, gpu[x].nbytes) == (gpu[y].grid, gpu[y].block, gpu[y].nbytes)
    a, b = gpu["hash_gather4_l2"], gpu["hash_gather4_hbm"]
    assert (a.grid, a.block, a.nbytes[1:]) == (b.grid, b.block, b.nbytes[1:]) and b.nbytes[0] == 32 * a.nbytes[0]
    assert a.nbytes[0] < 60e6 < b.nbytes[0]  # the H200's L2 holds the one table, not the other
    xs = [F.plan(k, 1000).make(np.random.default_rng(0))[0] for k in ("geometric_steps_random",
                                                                     "geometric_steps_sorted")]
    assert np.array_equal(np.sort(xs[0]), xs[1]) and not np.array_equal(xs[0], xs[1])
    assert [F.plan(k, 100).make(np.random.default_rng(0))[2] for k in ("shared_reads_stride1",
                                                                       "shared_reads_stride32")] == [1, 32]


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_round9_gpu_launch_keeps_the_rule_within_the_limits(name):
    gpu_launch_keeps_the_rule_within_the_limits(F, name, FIXED_GRIDS)


@pytest.mark.parametrize("name", ["cas_mulmod_i32", "cordic_sincos_q30", "geometric_steps_sorted"])
def test_three_round9_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_round9_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in one child process."""
    every_kernel_compiles_for_the_gpu(SMALL)
