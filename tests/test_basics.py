"""Chapter 01's kernels match NumPy on fresh random data and awkward sizes; lane counts match hand arithmetic."""

import itertools

import numpy as np
import pytest

import course
from course.kernels import basics
from course.kernels.basics import active_lanes_per_warp, blocks_for, lane_count

# Sizes that do not fill a block or a warp; 50000 is seed 001's size.
SIZES = [1, 33, 1000, 50000]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", ["vector_add", "vector_add_grid"])
def test_vector_add_matches_numpy(name, n, rng):
    kernel, reference = basics.KERNELS[name].kernel, basics.KERNELS[name].reference
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    kernel[blocks_for(n, 256), 256](a, b, out, n)
    np.testing.assert_array_equal(out, reference(a, b))


@pytest.mark.parametrize("threads_per_block", [32, 96, 256])
def test_five_step_host_function(threads_per_block, rng):
    a = rng.random(1000, dtype=np.float32)
    b = rng.random(1000, dtype=np.float32)
    np.testing.assert_array_equal(basics.vector_add_host(a, b, threads_per_block), a + b)


def test_host_function_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="two 1-D arrays of one length"):
        basics.vector_add_host(np.zeros(3, np.float32), np.zeros(4, np.float32))


def test_unguarded_kernel_is_right_when_the_grid_fits_exactly(rng):
    a, b = rng.random(256, dtype=np.float32), rng.random(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    basics.vector_add_unguarded[2, 128](a, b, out, 256)
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.skipif(course.on_gpu(), reason="on a GPU an out-of-bounds access is not reported")
def test_unguarded_kernel_fails_when_threads_outnumber_elements(rng):
    from course.engine import KernelError

    a, b = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    out = np.zeros(1000, np.float32)
    with pytest.raises(KernelError) as info:
        basics.vector_add_unguarded[4, 256](a, b, out, 1000)
    message = str(info.value)
    # threads run in order, so the first to fail owns element 1000: block 1000 // 256 = 3, thread 1000 - 768 = 232
    assert "block (3, 0, 0)" in message and "thread (232, 0, 0)" in message
    assert "out[i] = a[i] + b[i]" in message and "basics.py" in message
    assert "if i < n" in message  # it says what to do


@pytest.mark.skipif(course.on_gpu(), reason="on a GPU the launch is refused by the driver instead")
def test_block_over_1024_threads_is_refused():
    from course.engine import KernelError

    with pytest.raises(KernelError, match="1024"):
        basics.vector_add[1, 2048](np.zeros(4), np.zeros(4), np.zeros(4), 4)


@pytest.mark.parametrize("n,threads_per_block", [(10, 4), (33, 32), (1000, 96)])
def test_record_index_1d(n, threads_per_block):
    block_of, thread_of, index_of = (np.full(n, -1, np.int64) for _ in range(3))
    basics.record_index_1d[blocks_for(n, threads_per_block), threads_per_block](block_of, thread_of, index_of)
    # element i belongs to block i // threads_per_block, thread i % threads_per_block
    want = basics.reference_index_1d(n, threads_per_block)
    for got, expected in zip((block_of, thread_of, index_of), want):
        np.testing.assert_array_equal(got, expected)
    assert block_of[-1] == (n - 1) // threads_per_block


@pytest.mark.parametrize("shape,block", [((17, 16), (16, 16)), ((1, 33), (32, 1)), ((5, 6), (4, 2))])
def test_record_index_2d(shape, block):
    rows = np.full(shape, -1, np.int64)
    cols = np.full(shape, -1, np.int64)
    grid = (blocks_for(shape[1], block[0]), blocks_for(shape[0], block[1]))
    basics.record_index_2d[grid, block](rows, cols)
    want_rows, want_cols = np.indices(shape)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(cols, want_cols)


# 1025x512 takes about 2 s on the CPU engine; the others cover every kind of ragged edge.
@pytest.mark.parametrize("shape", [(17, 16), (1, 33), (33, 1), (40, 70), (1025, 512)])
def test_matrix_add_matches_numpy(shape, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    block = (32, 8)
    grid = (blocks_for(shape[1], block[0]), blocks_for(shape[0], block[1]))
    basics.matrix_add[grid, block](a, b, out)
    np.testing.assert_array_equal(out, basics.reference_matrix_add(a, b))


# --- lane counting: expected values worked out by hand ---------------------------------------------


def test_blocks_for_is_a_ceiling_division():
    assert blocks_for(50000, 256) == 196  # 195 * 256 = 49920 < 50000 <= 196 * 256 = 50176
    assert blocks_for(256, 256) == 1
    assert blocks_for(257, 256) == 2
    assert blocks_for(0, 256) == 0
    with pytest.raises(ValueError, match="threads_per_block > 0"):
        blocks_for(10, 0)


def test_seed_001_launch():
    lc = lane_count(50000, 256)
    assert lc.blocks_per_grid == 196
    assert lc.warps_per_block == 8
    assert lc.threads == lc.lanes == 50176  # 256 is a multiple of 32: no partial warps
    assert lc.idle_in_partial_warps == 0
    assert lc.idle_past_end == 176  # 50176 - 50000
    # the last block holds 50000 - 195*256 = 80 elements: warps of 32, 32, 16, then five empty warps
    assert active_lanes_per_warp(50000, 256)[-8:].tolist() == [32, 32, 16, 0, 0, 0, 0, 0]


def test_block_not_a_multiple_of_32():
    lc = lane_count(1000, 100)
    assert lc.blocks_per_grid == 10  # 1000 / 100, exactly
    assert lc.warps_per_block == 4  # 100 threads need ceil(100/32) = 4 warps = 128 lanes
    assert lc.lanes == 1280
    assert lc.idle_in_partial_warps == 280  # 28 empty lanes in each of 10 blocks
    assert lc.idle_past_end == 0
    assert active_lanes_per_warp(1000, 100)[:4].tolist() == [32, 32, 32, 4]


def test_both_causes_at_once():
    lc = lane_count(1001, 100)
    assert lc.blocks_per_grid == 11
    assert lc.lanes == 11 * 128
    assert lc.idle_in_partial_warps == 11 * 28
    assert lc.idle_past_end == 1100 - 1001
    assert lc.idle == 1408 - 1001
    assert lc.busy_fraction == pytest.approx(1001 / 1408)
    assert active_lanes_per_warp(1001, 100)[-4:].tolist() == [1, 0, 0, 0]


def test_block_of_33_wastes_almost_half():
    lc = lane_count(132, 33)
    assert (lc.blocks_per_grid, lc.warps_per_block, lc.lanes) == (4, 2, 256)
    assert lc.idle == 124  # 31 empty lanes in each block's second warp
    assert active_lanes_per_warp(132, 33).tolist() == [32, 1] * 4


def test_2d_1025_by_512():
    lc = lane_count((1025, 512), (32, 8))
    assert lc.grid == (16, 129)  # x: 512/32 columns of blocks; y: ceil(1025/8) rows of blocks
    assert lc.lanes == 16 * 129 * 256
    # the last row of blocks covers rows 1024..1031 but only row 1024 exists: 7 rows x 512 idle
    assert lc.idle == lc.idle_past_end == 7 * 512
    per_warp = active_lanes_per_warp((1025, 512), (32, 8)).reshape(129, 16, 8)
    assert (per_warp[:128] == 32).all()
    assert (per_warp[128, :, 0] == 32).all() and (per_warp[128, :, 1:] == 0).all()


def _brute_force_active(shape, block):
    """Walk every thread of every block the way the hardware numbers them, and count in-bounds lanes."""
    rows, cols = shape
    bx, by = block
    per_block = -(-bx * by // 32)
    counts = []
    for block_y, block_x in itertools.product(range(-(-rows // by)), range(-(-cols // bx))):
        warps = [0] * per_block
        for ty, tx in itertools.product(range(by), range(bx)):
            row, col = block_y * by + ty, block_x * bx + tx
            warps[(ty * bx + tx) // 32] += row < rows and col < cols
        counts += warps
    return counts


@pytest.mark.parametrize("trial", range(5))
def test_active_lanes_agree_with_a_brute_force_walk(trial, rng):
    shape = tuple(int(v) for v in rng.integers(1, 50, size=2))
    block = tuple(int(v) for v in rng.integers(1, 24, size=2))
    got = active_lanes_per_warp(shape, block)
    assert got.tolist() == _brute_force_active(shape, block), (shape, block)
    assert got.sum() == shape[0] * shape[1]


def test_lane_count_refuses_bad_shapes():
    with pytest.raises(ValueError, match="same number of dimensions"):
        lane_count((4, 4), 16)
    with pytest.raises(ValueError, match="positive sizes"):
        lane_count(10, 0)


# --- NCU validation cases: the arguments are right, and the tracer agrees with the hand counts ----------


@pytest.mark.parametrize("case", basics.NCU_CASES, ids=lambda c: c.name)
def test_ncu_cases_run_and_match_numpy(case):
    args = case.args(seed=1)
    case.kernel[case.griddim, case.blockdim](*args)
    a, b, out = args[:3]
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("case", basics.NCU_CASES, ids=lambda c: c.name)
def test_tracer_counts_match_the_hand_counts(case):
    trace = pytest.importorskip("course.trace", reason="the tracer (course/trace.py) is not in this checkout").trace
    totals = trace(case.kernel, case.griddim, case.blockdim, *case.args(seed=2)).totals()
    assert {k: totals[k] for k in case.expect} == dict(case.expect)
