"""Warp synchronisation as Volta and later define it, and the races a learner meets first (issue 16).

- ``syncwarp(mask)`` waits for the lanes of its own mask only; a lane outside its own mask is an error;
- the tracer orders two lanes only through a syncwarp both took part in; shuffles order execution, not
  memory; ``activemask()`` orders nothing;
- global-memory races are reported (name the argument and the lines), severities as racecheck grades them,
  same-value stores are benign, and ``engine.order(seed)`` makes a lost update show as a wrong result.
"""

from __future__ import annotations

import numpy as np
import pytest

import course
from numba import cuda, float32
from course import engine
from course.trace import trace
from course.validation import race_suite as R

FULL = 0xFFFFFFFF


def _run(case, seed=None):
    args = case.args(0)
    work = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with engine.order(seed):
        case.kernel[case.griddim, case.blockdim](*work)
    return args, work


# ---------------------------------------------------------------------------------------------------
# syncwarp(mask)


@pytest.mark.parametrize("seed", [None, 1, 2, 3, 4, 5])
def test_a_full_warp_syncwarp_is_not_released_by_a_half_warp_one(seed):
    # lanes 0-15 run an extra phase ordered by syncwarp(0xFFFF); lanes 16-31 wait at syncwarp() for all 32
    # lanes: before issue 16 the engine let lanes 0-15's syncwarp(0xFFFF) release them, and they read NaN
    case = R.CASES_BY_NAME["syncwarp_partial_then_full"]
    args, work = _run(case, seed)
    np.testing.assert_array_equal(work[-1], case.reference(*args))


@cuda.jit
def _outside_own_mask(out):
    lane = cuda.threadIdx.x % 32
    cuda.syncwarp(0x0000FFFF)  # lanes 16-31 are not in the mask they pass
    out[lane] = lane


@pytest.mark.skipif(course.on_gpu(), reason="the CPU engine's check: a GPU does not stop a lane outside its own "
                    "syncwarp mask (undefined behaviour, no error)")
def test_a_lane_outside_its_own_mask_is_an_error_that_says_where_and_what_to_do():
    with pytest.raises(engine.KernelError) as err:
        _outside_own_mask[1, 32](np.zeros(32, np.float32))
    msg = str(err.value)
    assert "_outside_own_mask" in msg and "block (0, 0, 0)" in msg and "thread (16, 0, 0)" in msg
    assert "cuda.syncwarp(0x0000FFFF)" in msg  # the line
    assert "not in" in msg or "leaves out" in msg
    assert "Put this lane in the mask" in msg
    assert err.value.thread == (16, 0, 0) and err.value.line is not None


@cuda.jit
def _two_halves(x, out):
    s = cuda.shared.array(32, float32)
    lane = cuda.threadIdx.x
    s[lane] = x[lane]
    if lane < 16:
        cuda.syncwarp(0x0000FFFF)
        out[lane] = s[lane + 16]  # written by a lane of the other half, which this sync does not include
    else:
        cuda.syncwarp(0xFFFF0000)
        out[lane] = s[lane - 16]


def test_each_half_waits_for_its_own_mask_and_the_tracer_sees_no_order_across_halves():
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    _two_halves[1, 32](x, out)  # both halves finish (no deadlock): each sync has all of its lanes
    races = trace(_two_halves, 1, 32, x, np.zeros(32, np.float32)).races()
    # one race per pair of lines (the store, and each half's load), all between lanes of one warp
    assert len(races) == 2 and all(r.severity == "warning" and r.errors == 0 for r in races)


# ---------------------------------------------------------------------------------------------------
# What orders memory between lanes


def test_shuffles_order_execution_not_memory():
    r = R.tracer_verdict(R.CASES_BY_NAME["shfl_then_neighbour_load"])
    assert r["shared"] == ["warning"]


def test_activemask_is_not_a_sync_point():
    assert R.tracer_verdict(R.CASES_BY_NAME["activemask_then_load"])["shared"] == ["warning"]
    # ... but it still returns the lanes that reach it together (engine-side behaviour unchanged)
    case = R.CASES_BY_NAME["activemask_then_load"]
    args, work = _run(case)
    np.testing.assert_array_equal(work[-1], args[0][np.arange(64) ^ 1])


def test_syncwarp_orders_the_lanes_that_took_part():
    assert R.tracer_verdict(R.CASES_BY_NAME["syncwarp_exchange"])["shared"] == []
    assert R.tracer_verdict(R.CASES_BY_NAME["reduce_warp_syncwarp"])["shared"] == []
    # ... and only them: lanes 16-31 never synced with lanes 0-15
    assert R.tracer_verdict(R.CASES_BY_NAME["syncwarp_partial_only"])["shared"] == ["warning"]
    # ... and only inside the warp
    assert R.tracer_verdict(R.CASES_BY_NAME["syncwarp_across_warps"])["shared"] == ["error"]


# ---------------------------------------------------------------------------------------------------
# Severity, benign flags, global memory


def test_severity_is_racechecks():
    within = trace(R.neighbour_nosync, 1, 64, *R.CASES_BY_NAME["neighbour_nosync"].args(0)).races()
    across = trace(R.reverse_nosync, 1, 64, *R.CASES_BY_NAME["reverse_nosync"].args(0)).races()
    assert [r.severity for r in within] == ["warning"] and within[0].errors == 0
    assert [r.severity for r in across] == ["error"] and across[0].warnings == 0
    assert "racecheck's warning" in str(within[0]) and "no syncthreads()" in str(across[0])


def test_same_value_stores_are_benign():
    case = R.CASES_BY_NAME["flag_same_value"]
    rep = trace(case.kernel, case.griddim, case.blockdim, *case.args(0))
    assert rep.races() == []
    benign = rep.races(benign=True)
    assert len(benign) == 1 and benign[0].benign and "same value" in str(benign[0])
    # different values are a real race
    case = R.CASES_BY_NAME["flag_different_values"]
    assert trace(case.kernel, case.griddim, case.blockdim, *case.args(0)).races()


def test_global_races_name_the_argument_and_the_lines():
    case = R.CASES_BY_NAME["global_accumulate_plain"]
    races = trace(case.kernel, case.griddim, case.blockdim, *case.args(0)).races()
    assert races and all(r.space == "global" and r.array == "out" and r.severity == "error" for r in races)
    assert "global array `out`" in str(races[0]) and "out[0] += x[i]" in str(races[0])
    # thread 0 of each block writes out[0]: a race between blocks only
    case = R.CASES_BY_NAME["global_blocks_one_output"]
    races = trace(case.kernel, case.griddim, case.blockdim, *case.args(0)).races()
    assert len(races) == 1 and races[0].first["block"] != races[0].second["block"]
    text = str(races[0])
    assert "global array `out`" in text and "out[0] = x[cuda.blockIdx.x]" in text and "different blocks" in text
    # one block, no barrier between: a race; with a barrier: none
    shift = R.CASES_BY_NAME["global_shift_one_block"]
    r = trace(shift.kernel, shift.griddim, shift.blockdim, *shift.args(0)).races()
    assert len(r) == 1 and r[0].space == "global" and r[0].array == "a" and {"error", "warning"} >= {r[0].severity}
    ok = R.CASES_BY_NAME["global_shift_one_block_sync"]
    assert trace(ok.kernel, ok.griddim, ok.blockdim, *ok.args(0)).races() == []


@cuda.jit
def _late_writer(a, out):
    i = cuda.grid(1)
    half = a.shape[0] // 2
    if i < half:  # the first half of the blocks reads the upper half of a, eight times
        acc = float32(0)
        for _ in range(8):
            acc += a[i + half]
        out[i] = acc
    else:  # the second half of the blocks writes it
        a[i] = 0.0


def test_reads_before_an_array_is_written_still_race_with_other_blocks():
    # the tracer analyses blocks in chunks: here the reads come chunks before the first store to `a`
    n = 64 * 400
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    rep = trace(_late_writer, 400, 64, a, np.zeros(n, np.float32), lines=False)
    races = rep.races()
    assert len(races) == 1 and races[0].space == "global" and races[0].array == "a"
    r = races[0]
    assert {r.first["op"], r.second["op"]} == {"store", "load"} and r.first["block"] != r.second["block"]
    assert r.count == n // 2  # every word of the upper half


def test_atomics_do_not_race_with_each_other():
    case = R.CASES_BY_NAME["global_accumulate_atomic"]
    assert trace(case.kernel, case.griddim, case.blockdim, *case.args(0)).races() == []


# ---------------------------------------------------------------------------------------------------
# Lost updates under engine.order(seed)


@pytest.mark.skipif(course.on_gpu(), reason="engine.order(seed) chooses the CPU engine's thread order; on a GPU "
                    "the hardware does, and even the default order loses updates")
def test_a_lost_update_shows_as_a_wrong_result_in_another_thread_order():
    case = R.CASES_BY_NAME["global_accumulate_plain"]
    args, work = _run(case)  # the default order runs each thread's += without a pause: the "right" sum
    total = args[0].astype(np.float64).sum()
    assert work[1][0] == total
    sums = [_run(case, seed)[1][1][0] for seed in (1, 2, 3)]
    assert all(s < total for s in sums), sums  # updates lost, as on a GPU
    # a race-free kernel is unaffected by the pauses
    ok = R.CASES_BY_NAME["global_accumulate_atomic"]
    for seed in (1, 2, 3):
        a, w = _run(ok, seed)
        assert w[1][0] == a[0].astype(np.float64).sum()


def test_a_lost_update_in_shared_memory_too():
    case = R.CASES_BY_NAME["shared_plain_histogram"]
    args = case.args(0)
    want = np.bincount(args[0] % 8, minlength=8)
    got = [_run(case, seed)[1][1] for seed in (1, 2, 3)]
    assert any(g.sum() < want.sum() for g in got)


# ---------------------------------------------------------------------------------------------------
# Other names for the GPU compiler's options


def test_lineinfo_and_other_gpu_compiler_options_are_accepted():
    @cuda.jit(lineinfo=True, max_registers=32)
    def k(out):
        out[cuda.threadIdx.x] = 1

    out = np.zeros(8, np.float32)
    k[1, 8](out)
    assert out.sum() == 8
