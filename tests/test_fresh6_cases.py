"""Round 6 of fresh kernels (course.kernels.fresh6) as timed cases: each launches on the CPU engine and is right on two
seeds, its check names a wrong result, the 2-D and 3-D kernels stay right at awkward shapes, the gpu-scale launches
keep the small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays),
three gpu-scale argument sets build in time, no name is one of rounds 2 to 5, and every kernel compiles for the GPU
(when ptxas is at hand)."""

import re
import zlib

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
from course.kernels import fresh6_plans as F
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and a 1025 side, the other narrow so that the file stays fast on one core. The 3-D stencil takes
# (z, y, x), the sgemm (m, n, k), the byte transpose its 4 × 4-byte blocks. welford_rows_f64 runs a block of 128 per
# row: its 1025 goes to the columns (40 × 1025), as 1025 rows would be 131 072 engine threads.
AWKWARD = {"ema_series_in_columns": [(17, 16), (1, 33), (1025, 9)],
           "ema_series_in_rows": [(17, 16), (1, 33), (1025, 9)],
           "bilinear_fixed16": [(17, 16), (1, 33), (1025, 12)],
           "wave13_3d": [(5, 17, 16), (1, 1, 33), (5, 1025, 6)],
           "binomial5_sep": [(17, 16), (1, 33), (1025, 12)],
           "transpose_u8_4x4": [(17, 16), (1, 33), (1025, 3)],
           "conj_transpose": [(17, 16), (1, 33), (1025, 12)],
           "welford_rows_f64": [(17, 16), (1, 33), (40, 1025)],
           "sgemm_col8": [(17, 16, 33), (1, 33, 17), (1025, 9, 5)]}
# the fixed grid this round uses: one block for a whole power iteration
FIXED_GRIDS = ((1,),)


def _short(c):
    return c.name[len("fresh6_"):]


def _kernel_name(k):
    return engine.kernel_py_func(k).__name__


def test_round6_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 32 <= len(names) <= 34
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) == 31  # thirty-one distinct kernels
    for older in (F2, F3, F4, F5):  # no case and no kernel of an earlier round's names
        assert not set(F.SPECS) & set(older.SPECS), older.__name__
        assert not {_kernel_name(c.kernel) for c in SMALL} & {_kernel_name(s[0]) for s in older.SPECS.values()}
    for c in SMALL:
        assert c.name.startswith("fresh6_") and "fresh6" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert set(TWO_D) == set(AWKWARD)
    assert isinstance(F.RETIRED, dict)


@pytest.mark.parametrize("c", SMALL, ids=_short)
def test_each_round6_small_case_is_right_and_its_check_can_fail(c):
    right_on_two_seeds_and_its_check_can_fail(F, c, _short(c))


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_round6_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape, c.check(before, after))


def test_the_untouched_round6_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh6_radix_sort256_ballot")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 1[") and "wrong" in msg


def test_the_crc_reference_is_zlibs():
    p = F.plan("crc32_chunks", 5)
    data, table, _ = p.make(np.random.default_rng(0))
    want = p.want((data, table, None))[2]
    assert [int(w) for w in want] == [zlib.crc32(row.tobytes()) for row in data]


def test_the_round6_pairs_differ_in_their_one_change_only():
    """The block-size pair shares kernel and arrays, the search and lane pairs their kernel, the nibble pair its
    launch and arrays, the two averages their bytes at the gpu size."""
    n = F.SPECS["morton3_block64"][3]
    p64, p1024 = F.plan("morton3_block64", n), F.plan("morton3_block1024", n)
    assert (p64.block, p1024.block) == ((64,), (1024,)) and p64.nbytes == p1024.nbytes
    for a, b in (("search_small_table", "search_large_table"), ("lanes4_one_word", "lanes32_one_word"),
                 ("morton3_block64", "morton3_block1024")):
        assert F.SPECS[a][0] is F.SPECS[b][0]
    pair = [F.plan(k, 5000) for k in ("nibble_hist_tid_major", "nibble_hist_bin_major")]
    assert len({(p.grid, p.block, p.nbytes) for p in pair}) == 1
    col, row = (F.plan(k, F.SPECS[k][4]) for k in ("ema_series_in_columns", "ema_series_in_rows"))
    assert col.nbytes == row.nbytes and col.grid == row.grid


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_round6_gpu_launch_keeps_the_rule_within_the_limits(name):
    gpu_launch_keeps_the_rule_within_the_limits(F, name, FIXED_GRIDS)


@pytest.mark.parametrize("name", ["crc32_chunks", "nibble_hist_tid_major", "lanes32_one_word"])
def test_three_round6_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_round6_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in one child process."""
    every_kernel_compiles_for_the_gpu(SMALL)
