"""Round 7 of fresh kernels (course.kernels.fresh7) as timed cases: each launches on the CPU engine and is right on two
seeds, its check names a wrong result, the 2-D kernels stay right at awkward shapes, the gpu-scale launches keep the
small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays), three
gpu-scale argument sets build in time, no name is one of rounds 2 to 6, and every kernel compiles for the GPU (when
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
from course.kernels import fresh7_plans as F
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and a 1025 side, the other narrow so that the file stays fast on one core; the cgemm takes (m, n, k)
AWKWARD = {"im2col3x3": [(17, 16), (1, 33), (1025, 5)],
           "perona_malik_step": [(17, 16), (1, 33), (1025, 5)],
           "transpose_i16": [(17, 16), (1, 33), (1025, 7)],
           "add_transposed": [(17, 16), (1, 33), (1025, 7)],
           "cgemm16_planar": [(17, 16, 33), (1, 33, 17), (1025, 5, 3)]}
# the fixed grid this round uses: 64 blocks striding over the whole array
FIXED_GRIDS = ((64,),)


def _short(c):
    return c.name[len("fresh7_"):]


def _kernel_name(k):
    return engine.kernel_py_func(k).__name__


def test_round7_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 32 <= len(names) <= 34
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) == 30  # thirty distinct kernels
    for older in (F2, F3, F4, F5, F6):  # no case and no kernel of an earlier round's names
        assert not set(F.SPECS) & set(older.SPECS), older.__name__
        assert not {_kernel_name(c.kernel) for c in SMALL} & {_kernel_name(s[0]) for s in older.SPECS.values()}
    for c in SMALL:
        assert c.name.startswith("fresh7_") and "fresh7" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert set(TWO_D) == set(AWKWARD)
    assert isinstance(F.RETIRED, dict)


@pytest.mark.parametrize("c", SMALL, ids=_short)
def test_each_round7_small_case_is_right_and_its_check_can_fail(c):
    right_on_two_seeds_and_its_check_can_fail(F, c, _short(c))


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_round7_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape, c.check(before, after))


def test_the_untouched_round7_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh7_merge_runs512")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 1[") and "wrong" in msg


def test_the_round7_references_agree_with_independent_ones():
    """The erfinv reference inverts math.erf; the Bézier reference (Bernstein sums) matches a de Casteljau in float64;
    the XTEA reference matches the published test vector of the all-zero key and block."""
    x = np.array([-0.9999, -0.5, 0.0, 0.25, 0.999999], np.float32)
    assert all(abs(math.erf(y) - float(v)) < 1e-12 for y, v in zip(F.plan("erfinv_giles", 5).want((x, None))[1].values, x))
    p = F.plan("bezier7_local", 4)
    ctrl, t, _ = p.make(np.random.default_rng(0))
    pts = ctrl.astype(np.float64).copy()
    for r in range(1, 8):
        pts[:, :8 - r] = pts[:, :8 - r] + t * (pts[:, 1:9 - r] - pts[:, :8 - r])
    assert np.allclose(p.want((ctrl, t, None))[2], pts[:, 0], rtol=1e-12, atol=1e-12)
    z = np.zeros(1, np.uint32)
    o0, o1 = F.plan("xtea_encrypt", 1).want((z, z, np.zeros(4, np.uint32))).values()
    assert (int(o0[0]), int(o1[0])) == (0xDEE9D4D8, 0xF7131ED9)


def test_the_round7_pairs_differ_in_their_one_change_only():
    """The lerp pair shares kernel and launch (its arrays twice the bytes in float64), the record pair its kernel and
    launch, the histogram pair kernel, launch and bytes, the complex pair its bytes."""
    n = F.SPECS["lerp_f32"][4]
    a, b = F.plan("lerp_f32", n), F.plan("lerp_f64", n)
    assert (a.grid, a.block) == (b.grid, b.block) and tuple(2 * x for x in a.nbytes) == b.nbytes
    for x, y in (("lerp_f32", "lerp_f64"), ("record_norms_w4", "record_norms_w5"),
                 ("hist4096_skewed", "hist4096_uniform")):
        assert F.SPECS[x][0] is F.SPECS[y][0]
    r4, r5 = (F.plan(k, 5000) for k in ("record_norms_w4", "record_norms_w5"))
    assert (r4.grid, r4.block) == (r5.grid, r5.block)
    h = [F.plan(k, 5000) for k in ("hist4096_skewed", "hist4096_uniform")]
    assert len({(p.grid, p.block, p.nbytes) for p in h}) == 1
    ci, cp = (F.plan(k, F.SPECS[k][4]) for k in ("complex_mac_interleaved", "complex_mac_planar"))
    assert sum(ci.nbytes) == sum(cp.nbytes) and ci.grid == cp.grid


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_round7_gpu_launch_keeps_the_rule_within_the_limits(name):
    gpu_launch_keeps_the_rule_within_the_limits(F, name, FIXED_GRIDS)


@pytest.mark.parametrize("name", ["xtea_encrypt", "hist4096_skewed", "merge_runs512"])
def test_three_round7_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_round7_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in one child process."""
    every_kernel_compiles_for_the_gpu(SMALL)


def test_the_erfinv_reference_at_the_gpu_size_checks_a_sample_with_the_far_tails():
    """At 2^25 elements the erfinv reference (math.erf per element, Newton) answers at 2^16 spread positions and 4096
    far-tail ones (it took hours on every element, and round 7's first two H200 runs ran out of time in it); a wrong
    element there is found, and reported at its own index."""
    from course.kernels.cases import compare

    p = F.plan("erfinv_giles", 1 << 25)
    x = np.zeros(1 << 25, np.float32)
    x[::9] = 0.9999
    w = p.want((x, None))[1]
    assert 1 << 16 <= w.flat.size <= (1 << 16) + 4096 and set(range(0, 9 * 4096, 9)) <= set(w.flat.tolist())
    out = np.zeros_like(x)
    out.reshape(-1)[w.flat] = w.values
    assert compare({1: w}, (x, out), p.rtol, p.atol) == ""
    out[9 * 17] += 0.5
    assert "argument 1[153]" in compare({1: w}, (x, out), p.rtol, p.atol)
