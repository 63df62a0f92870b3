"""Independent thread scheduling on the CPU engine (chapter 02, issue 14 item 1): the intra-warp lock
finishes, the unrolled last warp without syncwarp is wrong in every engine order, the fixed one right in
all of them, and a *_sync mask names the lanes that take part."""

import numpy as np
import pytest

import course
from course import engine
from course.kernels import warps

pytestmark = pytest.mark.skipif(course.BACKEND != "cpu", reason="engine orders are a CPU-engine tool")


@pytest.mark.parametrize("threads,tpb", [(32, 32), (1, 32), (33, 32), (200, 64)])
def test_the_intra_warp_lock_finishes_and_excludes(threads, tpb):
    r = warps.run_warp_lock(threads, tpb)
    assert r.finished and r.overlaps == 0
    assert sorted(r.tickets.tolist()) == list(range(threads))


@pytest.mark.parametrize("seed", [None, 0, 1, 7])
def test_the_unsynced_last_warp_is_wrong_and_the_syncwarp_one_right_in_every_order(seed):
    rng = np.random.default_rng(seed)
    if seed is None:
        bad = warps.run_last_warp("last_warp_unsynced", blocks=4, rng=rng)
        good = warps.run_last_warp("last_warp_syncwarp", blocks=4, rng=np.random.default_rng(seed))
    else:
        with engine.order(seed=seed):
            bad = warps.run_last_warp("last_warp_unsynced", blocks=4, rng=rng)
            good = warps.run_last_warp("last_warp_syncwarp", blocks=4, rng=np.random.default_rng(seed))
    assert bad.wrong_blocks > 0 and bad.got != bad.want
    assert good.wrong_blocks == 0 and good.first_wrong == -1


def test_last_warp_checks_against_an_exact_reference_on_a_partial_block():
    a = np.arange(300, dtype=np.float32)  # two blocks, the second with 44 values and 212 zeros
    out = np.zeros(2, np.float32)
    warps.last_warp_syncwarp[2, warps.REDUCE_THREADS](a, out)
    np.testing.assert_array_equal(out, [a[:256].sum(), a[256:].sum()])
    np.testing.assert_array_equal(warps.reference_block_sums(a), [a[:256].sum(), a[256:].sum()])
    with pytest.raises(KeyError, match="use one of"):
        warps.run_last_warp("no_such_version")


def test_a_sync_mask_names_the_lanes_that_take_part():
    x = np.random.default_rng(3).integers(0, 50, 96).astype(np.float32)
    out = np.zeros(3, np.float32)
    warps.half_warp_sum[1, 96](x, out)
    np.testing.assert_array_equal(out, warps.reference_half_warp_sum(x))
