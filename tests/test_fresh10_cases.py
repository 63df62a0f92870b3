"""Round 10 of fresh kernels (course.kernels.fresh10) as timed cases: each launches on the CPU engine and is right on
two seeds, its check names a wrong result, the 2-D kernels stay right at awkward shapes, the gpu-scale launches keep
the small launches' rule within the H200 byte limits (on the declared sizes, without building the big arrays), three
gpu-scale argument sets build in time and one is checked in time, no name is one of rounds 2 to 9, and every kernel
compiles for the GPU (when ptxas is at hand)."""

import math
import re
import time
from concurrent.futures import ThreadPoolExecutor

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
from course.kernels import fresh9_plans as F9
from course.kernels import fresh10 as K
from course.kernels import fresh10_plans as F
from course.kernels.cases import At
from course.trace import compiler

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 17 × 16, 1 × 33 and a 1025 side, the other narrow so that the file stays fast on one core; the float32 product
# takes (m, n, k)
AWKWARD = {"laplacian5_tile_halo": [(17, 16), (1, 33), (1025, 5)],
           "transpose_tile32_nopad": [(17, 16), (1, 33), (1025, 7)],
           "transpose_u64_pad1": [(17, 16), (1, 33), (1025, 7)],
           "sgemm_tile8": [(17, 16, 33), (1, 33, 17), (1025, 5, 3)]}
# the fixed grids this round uses: 264 blocks of 64 and 32 blocks of 256 striding over the whole array
FIXED_GRIDS = ((264,), (32,))


def _short(c):
    return c.name[len("fresh10_"):]


def _kernel_name(k):
    return engine.kernel_py_func(k).__name__


def test_round10_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 32 <= len(names) <= 34
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) == 30 - len(F.RETIRED)  # thirty distinct kernels, less those retired
    for older in (F2, F3, F4, F5, F6, F7, F8, F9):  # no case and no kernel of an earlier round's names
        old_names = set(older.SPECS) | {_kernel_name(s[0]) for s in older.SPECS.values()}
        assert not set(F.SPECS) & old_names, older.__name__
        assert not {_kernel_name(c.kernel) for c in SMALL} & old_names, older.__name__
    for c in SMALL:
        assert c.name.startswith("fresh10_") and "fresh10" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert {int(t[2:]) for c in SMALL for t in c.tags if re.fullmatch(r"ch\d\d", t)} == set(range(1, 11))
    assert set(TWO_D) == set(AWKWARD)
    assert isinstance(F.RETIRED, dict)


@pytest.mark.parametrize("c", SMALL, ids=_short)
def test_each_round10_small_case_is_right_and_its_check_can_fail(c):
    right_on_two_seeds_and_its_check_can_fail(F, c, _short(c))


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_round10_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape, c.check(before, after))


def test_the_untouched_round10_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh10_utoa_decimal_local")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 1[") and "wrong" in msg


def test_the_round10_references_agree_with_independent_ones():
    """The integer roots, smallest factors, decimal digits, bfloat16 bits, Taylor sums and cube roots match plain
    Python; the sampled Laplacian rows and transposed places match the whole arrays."""
    xs = np.array([0, 1, 2, 3, 15, 16, 17, 99, 65535 ** 2, 65535 ** 2 - 1, 0xFFFFFFFF], np.uint32)
    assert list(F._isqrt_ref(xs)) == [math.isqrt(int(v)) for v in xs]
    spf = F._smallest_odd_factors(1 << 12)
    for v in (3, 9, 15, 21, 25, 49, 97, 1001, 4087, 4093):
        assert spf[v] == min(d for d in range(3, v + 1, 2) if v % d == 0), v
    vs = np.array([0, 7, 10, 12345, 1000000000, 0xFFFFFFFF], np.uint32)
    d, length = F._utoa_ref(vs)
    for row, k, v in zip(d, length, vs):
        assert bytes(row[:k]).decode() == str(int(v)) and not row[k:].any() and k == len(str(int(v)))
    bits = np.array([0x3F800000, 0x3F808000, 0x3F818000, 0x3F80C000, 0x7F800000, 0x7F800001, 0xFFFFFFFF],
                    np.uint32)
    assert list(F._bf16_ref(bits)) == [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0x7F80, 0x7FC0, 0xFFFF]
    f = np.array([1.0, -2.5, 3.140625, 1e-3, 3.0e38], np.float32)  # within half a bfloat16 step of the float32
    back = (F._bf16_ref(f.view(np.uint32)).astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(back[:3], f[:3]) and np.all(np.abs(back - f) <= np.abs(f) * 2.0 ** -9)
    x = np.array([0.0, 0.5, 1.0, 7.0, 24.0])
    s, k = F._exp_taylor_ref(x)
    assert np.allclose(s, np.exp(x), rtol=1e-14, atol=0) and k[0] == 1 and 60 < k[-1] < K.ET_MAX
    img = np.random.default_rng(0).integers(-5, 6, (33, 21)).astype(np.float32)
    p = np.pad(img, 1)
    full = 4 * img - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    r = np.array([0, 5, 31, 32])
    assert np.array_equal(F._laplacian_rows(img, r), full[r])
    big = np.arange(2048 * 600, dtype=np.float32).reshape(2048, 600)
    t = F._transposed(big)
    assert isinstance(t, At) and np.array_equal(big.T.reshape(-1)[t.flat], t.values)


def test_the_round10_pairs_differ_in_their_one_change_only():
    """The gather pair shares kernel and launch (a table 32 times larger), the skip pair kernel, launch and bytes (one
    warp in 32 hot, or all), the scatter pair kernel and launch (256 addresses or four million), and the staged pair
    plan and launch (only the shared stride differs)."""
    for x, y in (("gather_rec8_l2", "gather_rec8_hbm"), ("warp_skip_sparse", "warp_skip_dense"),
                 ("scatter_add_f64_256", "scatter_add_f64_4m")):
        assert F.SPECS[x][0] is F.SPECS[y][0]
    gpu = {k: F.plan(k, s[4]) for k, s in F.SPECS.items()}
    for x, y in (("warp_skip_sparse", "warp_skip_dense"), ("skinny_matvec32_staged", "skinny_matvec32_padded")):
        assert (gpu[x].grid, gpu[x].block, gpu[x].nbytes) == (gpu[y].grid, gpu[y].block, gpu[y].nbytes)
    assert F.SPECS["skinny_matvec32_staged"][2] is F.SPECS["skinny_matvec32_padded"][2]
    a, b = gpu["gather_rec8_l2"], gpu["gather_rec8_hbm"]
    assert (a.grid, a.block, a.nbytes[1:]) == (b.grid, b.block, b.nbytes[1:]) and b.nbytes[0] == 32 * a.nbytes[0]
    assert a.nbytes[0] < 60e6 < b.nbytes[0]  # the H200's L2 holds the one table, not the other
    a, b = gpu["scatter_add_f64_256"], gpu["scatter_add_f64_4m"]
    assert (a.grid, a.block, a.nbytes[:2]) == (b.grid, b.block, b.nbytes[:2]) and a.nbytes[2] < b.nbytes[2] < 60e6
    n = 32 * 64
    hot = [(F.plan(k, n).make(np.random.default_rng(0))[0] > F.WS_HOT - 0.1).reshape(-1, 32).any(axis=1)
           for k in ("warp_skip_sparse", "warp_skip_dense")]
    assert hot[0].sum() == 2 and hot[1].all()


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_round10_gpu_launch_keeps_the_rule_within_the_limits(name):
    gpu_launch_keeps_the_rule_within_the_limits(F, name, FIXED_GRIDS)


@pytest.mark.parametrize("name", ["smallest_odd_factor", "utoa_decimal_local", "f32_to_bf16_rne"])
def test_three_round10_gpu_argument_sets_build_in_time_and_as_declared(name):
    builds_in_time_and_as_declared(F.plan(name, F.SPECS[name][4]), name)


def test_a_round10_gpu_reference_checks_in_time():
    """A gpu-scale argument set of the Taylor sums, its outputs filled from the sampled reference, passes its check
    in well under the 5 s a gpu case may take on the host."""
    name = "exp_taylor_until_f64"
    c = F.case(name, F.SPECS[name][4])
    t = time.perf_counter()
    before = c.args(0)
    after = tuple(a.copy() for a in before)
    for i, w in F.plan(name, F.SPECS[name][4]).want(before).items():
        after[i].reshape(-1)[w.flat] = w.values
    assert c.check(before, after) == ""
    assert time.perf_counter() - t < 5.0


@pytest.mark.skipif(compiler.toolchain() is None, reason="ptxas/nvdisasm not installed (make toolkit)")
def test_every_round10_kernel_compiles_for_the_gpu():
    """What ptxas makes of each kernel (registers): looked up where known, the rest compiled in two child processes
    at once (one a half of the cases: until the round's facts are committed, thirty kernels take about 24 s in one)."""
    one = {}
    for c in SMALL:  # one case a kernel: the pairs compile to the same facts
        one.setdefault(id(c.kernel), c)
    kernels = list(one.values())
    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(every_kernel_compiles_for_the_gpu, kernels[h::2]) for h in range(2)]:
            f.result()
