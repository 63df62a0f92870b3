"""The fresh kernels (course.kernels.fresh) as timed cases: each launches on the CPU engine and is right, its check
names a wrong result, the 2-D kernels stay right at awkward shapes, and the gpu-scale launches keep the small
launches' rule within the H200 byte limits (checked on the declared sizes, without building the big arrays)."""

import re

import numpy as np
import pytest

import course  # noqa: F401  (backend first)
from fresh_rounds import ARRAY_LIMIT, CASE_LIMIT, perturbed, run
from course.kernels import fresh as F

SMALL = F.cases("small")
GPU = F.cases("gpu")
TWO_D = [n for n, s in F.SPECS.items() if "2d" in s[6]]
# 1025 × 512 for the kernels without barriers; the block-per-row and shared-tile kernels get 1025 rows of a narrower
# matrix (or 40 rows of 1025 columns for the softmax, one block per row), so that the file stays fast on one core
AWKWARD = {"copy_2d_odd": [(17, 16), (1, 33), (1025, 512)], "vertical_3pt": [(17, 16), (1, 33), (1025, 512)],
           "cross_5pt_shared": [(17, 16), (1, 33), (1025, 40)], "transpose_rect": [(17, 16), (1, 33), (1025, 40)],
           "softmax_rows": [(17, 16), (1, 33), (40, 1025)]}


def test_names_tags_and_counts():
    names = [c.name for c in SMALL]
    assert len(names) == len(set(names)) and 30 <= len(names) <= 36
    assert names == [c.name for c in GPU]
    assert len({id(c.kernel) for c in SMALL}) >= 28  # about thirty distinct kernels
    for c in SMALL:
        assert c.name.startswith("fresh_") and "fresh" in c.tags and c.check is not None, c.name
        chapters = [t for t in c.tags if re.fullmatch(r"ch\d\d", t)]
        assert len(chapters) == 1 and 1 <= int(chapters[0][2:]) <= 10, (c.name, c.tags)
    assert set(TWO_D) == set(AWKWARD)


@pytest.mark.parametrize("c", SMALL, ids=lambda c: c.name)
def test_each_small_case_is_right_and_its_check_can_fail(c):
    p = F.plan(c.name[len("fresh_"):], F.SPECS[c.name[len("fresh_"):]][3])
    for seed in (0, 1):
        before, after = run(c, seed)
        assert c.check(before, after) == "", (c.name, seed, c.check(before, after))
    # the declared bytes are the arrays' bytes (the gpu-scale test trusts them)
    assert tuple(a.nbytes for a in before if isinstance(a, np.ndarray)) == p.nbytes, c.name
    # a wrong element in each argument the check compares is named
    for i in p.want(before):
        msg = c.check(before, perturbed(after, i))
        assert msg.startswith(f"argument {i}[") and "expected" in msg and "of" in msg, (c.name, i, msg)


@pytest.mark.parametrize("name,shape", [(n, s) for n in AWKWARD for s in AWKWARD[n]])
def test_the_2d_kernels_at_awkward_shapes(name, shape):
    c = F.case(name, shape)
    before, after = run(c, 3)
    assert c.check(before, after) == "", (name, shape)


def test_the_untouched_output_fails_its_check():
    c = next(c for c in SMALL if c.name == "fresh_transpose_rect")
    before = c.args(0)
    msg = c.check(before, before)
    assert msg.startswith("argument 1[") and "wrong" in msg


@pytest.mark.parametrize("name", list(F.SPECS))
def test_the_gpu_launch_keeps_the_rule_within_the_limits(name):
    small, gpu = (F.plan(name, F.SPECS[name][k]) for k in (3, 4))
    assert gpu.block == small.block, name
    assert len(gpu.grid) == len(small.grid) and np.prod(gpu.grid) > np.prod(small.grid), name
    assert max(gpu.nbytes) <= ARRAY_LIMIT and sum(gpu.nbytes) <= CASE_LIMIT, (name, gpu.nbytes)
    assert np.prod(gpu.grid) * np.prod(gpu.block) >= 132 * 256, name  # at least one block of 256 per SM
    if name == "gridstride_132":
        assert gpu.grid == (F.H200_SMS,)
