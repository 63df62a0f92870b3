"""Round 8 of fresh kernels (course.kernels.fresh8) as timed cases: each launches on the CPU engine and is right on two
seeds, its check names a wrong result, the 2-D kernels stay right at awkward shapes, the gpu-scale launches keep the
small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays), three
gpu-scale argument sets build in time, no name is one of rounds 2 to 7, and every kernel compiles for the GPU (when
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
from course.kernels import fresh8 as K
from course.kernels import fresh8_plans as F
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and a 1025 side, the other narrow so that the file stays fast on one core; the linear layer takes
# (batch, out, k)
AWKWARD = {"remap_rotate_u8": [(17, 16), (1, 33), (1025, 5)],
           "stencil9_f64": [(17, 16), (1, 33), (1025, 5)],
           "life_step_u8": [(17, 16), (1, 33), (1025, 5)],
           "transpose_rgba_f32": [(17, 16), (1, 33), (1025, 7)],
           "transpose_i8_tile64": [(17, 16), (1, 33), (1025, 7)],
           "linear_bias_relu16": [(17, 16, 33), (1, 33, 17), (1025, 5, 3)]}
# the fixed grids this round uses: 4 blocks of one ring each, 132 blocks striding over the whole array
FIXED_GRIDS = ((4,), (132,))


def _short(c):
    return c.name[len("fresh8_"):]


def _kernel_name(k):
    return engine.kernel_py_func(k).__name__


def test_round8_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 32 <= len(names) <= 34
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) == 30  # thirty distinct kernels
    for older in (F2, F3, F4, F5, F6, F7):  # no case and no kernel of an earlier round's names
        assert not set(F.SPECS) & set(older.SPECS), older.__name__
        assert not {_kernel_name(c.kernel) for c in SMALL} & {_kernel_name(s[0]) for s in older.SPECS.values()}
    for c in SMALL:
        assert c.name.startswith("fresh8_") and "fresh8" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert set(TWO_D) == set(AWKWARD)
    assert isinstance(F.RETIRED, dict)


@pytest.mark.parametrize("c", SMALL, ids=_short)
def test_each_round8_small_case_is_right_and_its_check_can_fail(c):
    right_on_two_seeds_and_its_check_can_fail(F, c, _short(c))


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_round8_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape, c.check(before, after))


def test_the_untouched_round8_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh8_counting_sort_u8")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 1[") and "wrong" in msg


def test_the_round8_references_agree_with_independent_ones():
    """The Walsh–Hadamard reference matches Sylvester's Hadamard matrix; the bit-matrix reference keeps the identity
    and moves row 0, column 1 to row 1, column 0; the polynomial reference matches np.polyval; the haversine
    reference gives a quarter of the equator and of a meridian; the continued fraction's depth is enough for
    arctan 1."""
    x = np.random.default_rng(0).integers(-5, 6, 2 * K.WH_N).astype(np.float32)
    h = np.array([[1.0]])
    while h.shape[0] < K.WH_N:
        h = np.kron(h, np.array([[1.0, 1.0], [1.0, -1.0]]))
    got = F.plan("fwht1024_shared", x.size).want((x, None))[1]
    assert np.array_equal(got, (x.reshape(2, -1).astype(np.float64) @ h).reshape(-1))
    w = np.array([0x8040201008040201, 1 << 1, 1 << 8], np.uint64)
    assert list(F.plan("bitmat8_transpose", 3).want((w, None))[1]) == [0x8040201008040201, 1 << 8, 1 << 1]
    p = F.plan("poly31_shfl_bcast", 40)
    coef, xs, _ = p.make(np.random.default_rng(1))
    y = p.want((coef, xs, None))[2]
    assert np.allclose(y[:32], np.polyval(coef[:32][::-1].astype(np.float64), xs[:32].astype(np.float64)))
    assert np.allclose(y[32:], np.polyval(coef[32:][::-1].astype(np.float64), xs[32:].astype(np.float64)))
    z = np.zeros(2, np.float32)
    quarter = np.array([0.0, math.pi / 2], np.float32)
    d = F.plan("haversine_f32", 2).want((z, z, quarter[::-1].copy(), quarter, None))[4]
    assert np.allclose(d, math.pi / 2 * K.EARTH_KM, rtol=1e-6)
    f = 2.0 * K.CF_DEPTH + 1.0
    for k in range(K.CF_DEPTH, 0, -1):
        f = (2.0 * k - 1.0) + k * k / f
    assert abs(1.0 / f - math.pi / 4) < 1e-15


def test_the_round8_pairs_differ_in_their_one_change_only():
    """The opcode pair shares kernel, launch and bytes (only the opcodes' spread differs), the table pair its kernel
    and launch (a table 32 times larger), the segment pair kernel, launch and values, and the centring pair its
    launch and bytes (the tile's width differs)."""
    for x, y in (("opcode_interp_by_lane", "opcode_interp_by_warp"), ("table_interp_l2", "table_interp_hbm"),
                 ("segmax_f64_16", "segmax_f64_64k")):
        assert F.SPECS[x][0] is F.SPECS[y][0]
    gpu = {k: F.plan(k, s[4]) for k, s in F.SPECS.items()}
    for x, y in (("opcode_interp_by_lane", "opcode_interp_by_warp"), ("center_rows_w32", "center_rows_w33")):
        assert (gpu[x].grid, gpu[x].block, gpu[x].nbytes) == (gpu[y].grid, gpu[y].block, gpu[y].nbytes)
    a, b = gpu["table_interp_l2"], gpu["table_interp_hbm"]
    assert (a.grid, a.block, a.nbytes[1:]) == (b.grid, b.block, b.nbytes[1:]) and b.nbytes[0] == 32 * a.nbytes[0]
    assert a.nbytes[0] < 60e6 < b.nbytes[0]  # the H200's L2 holds the one table, not the other
    a, b = gpu["segmax_f64_16"], gpu["segmax_f64_64k"]
    assert (a.grid, a.block, a.nbytes[:2]) == (b.grid, b.block, b.nbytes[:2])
    ops = [F.plan(k, 100).make(np.random.default_rng(0))[1] for k in ("opcode_interp_by_lane", "opcode_interp_by_warp")]
    assert len(np.unique(ops[0][:, :32], axis=None)) > 1
    assert all(len(np.unique(ops[1][s, w:w + 32])) == 1 for s in range(K.OP_STEPS) for w in (0, 32, 64))


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_round8_gpu_launch_keeps_the_rule_within_the_limits(name):
    gpu_launch_keeps_the_rule_within_the_limits(F, name, FIXED_GRIDS)


@pytest.mark.parametrize("name", ["contfrac_atan_f64", "countmin_saturating", "rule110_4blocks"])
def test_three_round8_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_round8_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in one child process."""
    every_kernel_compiles_for_the_gpu(SMALL)
