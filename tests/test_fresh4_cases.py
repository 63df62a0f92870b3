"""Round 4 of fresh kernels (course.kernels.fresh4) as timed cases: each launches on the CPU engine and is right on two
seeds, its check names a wrong result, the 2-D and 3-D kernels stay right at awkward shapes, the gpu-scale launches
keep the small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays),
three gpu-scale argument sets build in time, no name is one of rounds 2 and 3, and every kernel compiles for the GPU
(when ptxas is at hand)."""

import re

import numpy as np
import pytest

import course  # noqa: F401  (backend first)
from fresh_rounds import (ARRAY_LIMIT, CASE_LIMIT, builds_in_time_and_as_declared, every_kernel_compiles_for_the_gpu,
                          right_on_two_seeds_and_its_check_can_fail, run)
from course import engine
from course.kernels import fresh as F2
from course.kernels import fresh3 as F3
from course.kernels import fresh4_plans as F
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and 1025 × N, N narrow (64 at most) so that the file stays fast on one core; the kernels with barriers
# or long per-thread loops get a narrower N still. The 3-D kernels take (z, y, x) or (channels, h, w), sgemm (m, n, k);
# the in-place transpose needs a square: 17, 1, 33 and 65 (three tiles a side, the last one with one row).
AWKWARD = {"u16_row_gain": [(17, 16), (1, 33), (1025, 64)], "embedding_rows": [(17, 16), (1, 33), (1025, 64)],
           "rank8_update": [(17, 16), (1, 33), (1025, 64)], "warp_row_argmin": [(17, 16), (1, 33), (1025, 40)],
           "ballot_first_match": [(17, 16), (1, 33), (1025, 40)], "gemv_split_k": [(17, 16), (1, 33), (1025, 40)],
           "median3x3_local": [(17, 16), (1, 33), (1025, 24)], "sobel_shared": [(17, 16), (1, 33), (1025, 20)],
           "transpose_in_place": [(17, 17), (1, 1), (33, 33), (65, 65)],
           "downsample2_3d": [(3, 17, 16), (1, 1, 33), (2, 1025, 20)],
           "pixel_shuffle2": [(3, 17, 16), (1, 1, 33), (2, 1025, 10)],
           "sgemm_reg4x4": [(17, 16, 33), (1, 33, 17), (1025, 9, 5)]}


def _short(c):
    return c.name[len("fresh4_"):]


def _kernel_name(k):
    return engine.kernel_py_func(k).__name__


def test_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 30 <= len(names) <= 34
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) == 30  # thirty distinct kernels
    for older in (F2, F3):  # no case and no kernel of round 2's or round 3's names
        assert not set(F.SPECS) & set(older.SPECS), older.__name__
        assert not {_kernel_name(c.kernel) for c in SMALL} & {_kernel_name(s[0]) for s in older.SPECS.values()}
    for c in SMALL:
        assert c.name.startswith("fresh4_") and "fresh4" in c.tags and c.check is not None, c.name
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
    c = next(c for c in SMALL if c.name == "fresh4_transpose_in_place")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 0[") and "wrong" in msg


def test_the_chained_scan_leaves_its_ticket_and_flags_ready_for_the_next_launch():
    c = F.case("scan_chained", 10000)  # three chained blocks, launched twice on the same arrays
    before, after = run(c, 4)
    engine.launch(c.kernel, c.griddim, c.blockdim, after, dynshared=c.dynshared)
    assert c.check(before, after) == "", c.check(before, after)


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
    assert np.prod(gpu.grid) * np.prod(gpu.block) >= 132 * 256, name  # at least a block of 256 per SM


@pytest.mark.parametrize("name", ["float_to_half", "pack_segments", "ballot_first_match"])
def test_three_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in one child process."""
    every_kernel_compiles_for_the_gpu(SMALL)
