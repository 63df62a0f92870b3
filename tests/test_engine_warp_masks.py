"""Warp collectives honour their mask (issue 27): only the lanes a mask names take part.

CUDA C++ Programming Guide, warp vote and shuffle functions: "Each calling thread must have its own bit set in
the mask and all non-exited threads named in mask must execute the same intrinsic with the same mask, or the
result is undefined"; a shuffle from a lane that does not take part returns an undefined value.  The engine
computes what CUDA defines for the lanes in the mask, gives an undefined value as NaN (floats) or 0xA5 bytes
(integers), as it does for uninitialised memory, and stops with a message naming the line and the lanes for
the rest.  Expected values come from those definitions, never from the engine.
"""

import numpy as np
import pytest

from course import backend
from course import engine
from numba import cuda

cpu_only = pytest.mark.skipif(backend.on_gpu(), reason="checks a CPU-engine message")


@cuda.jit
def two_halves_one_call(out):
    lane = cuda.threadIdx.x % 32
    mask = 0x0000FFFF if lane < 16 else 0xFFFF0000  # each half names itself: two collectives at one line
    out[cuda.threadIdx.x] = cuda.ballot_sync(mask, True)


def test_each_mask_is_its_own_collective_at_one_call_site():
    out = np.zeros(64, np.int64)
    two_halves_one_call[1, 64](out)
    bits = out & 0xFFFFFFFF  # ballot is an int32 bit pattern on the GPU
    for w in range(2):
        assert set(bits[w * 32: w * 32 + 16]) == {0x0000FFFF}
        assert set(bits[w * 32 + 16: w * 32 + 32]) == {0xFFFF0000}


@cuda.jit
def ballot_half_mask_all_lanes(out):
    out[cuda.threadIdx.x] = cuda.ballot_sync(0xFFFF, True)  # lanes 16-31 call it with a mask that leaves them out


@cpu_only
def test_a_lane_outside_the_mask_it_passes_is_named_with_the_line():
    with pytest.raises(engine.KernelError) as info:
        ballot_half_mask_all_lanes[1, 32](np.zeros(32, np.int64))
    msg = str(info.value)
    assert "ballot_sync(0xFFFF, True)" in msg  # the kernel's line
    assert "lanes 16-31" in msg and "0x0000ffff" in msg
    assert "lanes 0-15" in msg and "get 0x0000ffff" in msg  # what the lanes in the mask get on a GPU
    assert "block (0, 0, 0)" in msg


@cuda.jit
def shfl_down_half_mask_all_lanes(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0xFFFF, x[t], 16)


@cpu_only
def test_shfl_down_with_a_half_mask_called_by_every_lane_is_an_error_not_lane_16s_value():
    x = np.arange(32, dtype=np.float32) + 100
    out = np.zeros(32, np.float32)
    with pytest.raises(engine.KernelError) as info:
        shfl_down_half_mask_all_lanes[1, 32](x, out)
    msg = str(info.value)
    assert "shfl_down_sync(0xFFFF, x[t], 16)" in msg and "lanes 16-31" in msg
    assert out[0] != x[16]


@cuda.jit
def shfl_down_from_outside_the_mask(x, out):
    t = cuda.threadIdx.x
    if t < 16:
        out[t] = cuda.shfl_down_sync(0xFFFF, x[t], 4)  # lanes 12-15 read lanes 16-19: not in the mask


def test_a_shuffle_from_a_lane_outside_the_mask_is_undefined_and_the_rest_defined():
    x = np.arange(32, dtype=np.float32) + 100
    out = np.full(32, -1, np.float32)
    shfl_down_from_outside_the_mask[1, 32](x, out)
    np.testing.assert_array_equal(out[:12], x[4:16])  # defined: the source lane takes part
    if not backend.on_gpu():  # undefined on a GPU; the engine shows it as NaN (as uninitialised memory)
        assert np.isnan(out[12:16]).all()


@cuda.jit
def full_mask_half_the_lanes(x, out):
    t = cuda.threadIdx.x
    v = x[t]
    if t < 16:
        v = cuda.shfl_down_sync(0xFFFFFFFF, v, 1)  # lanes 16-31 never get here
    out[t] = v


@cpu_only
@pytest.mark.timeout(10)
def test_a_full_mask_shuffle_reached_by_half_the_lanes_names_the_lanes_that_did_not_arrive():
    with pytest.raises(engine.KernelError) as info:
        full_mask_half_the_lanes[1, 32](np.zeros(32, np.float32), np.zeros(32, np.float32))
    msg = str(info.value)
    assert "deadlock" in msg and "shfl_down_sync(0xFFFFFFFF, v, 1)" in msg
    assert "lanes 16-31" in msg and "did not arrive" in msg
    assert "cuda.activemask()" in msg  # what to do


@cuda.jit
def early_return_then_full_mask(x, out):
    t = cuda.threadIdx.x
    if t >= 20:
        return  # exited lanes do not take part (CUDA: "all non-exited threads named in mask")
    out[t] = cuda.shfl_down_sync(0xFFFFFFFF, x[t], 1)


def test_lanes_that_returned_before_a_full_mask_shuffle_do_not_block_it():
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    early_return_then_full_mask[1, 32](x, out)
    np.testing.assert_array_equal(out[:19], x[1:20])


@cuda.jit
def masks_disagree(out):
    lane = cuda.threadIdx.x
    mask = 0xFFFFFFFF if lane == 0 else 0xFFFFFFFE
    out[lane] = cuda.ballot_sync(mask, True)


@cpu_only
@pytest.mark.timeout(10)
def test_lanes_passing_different_masks_that_name_each_other_are_named():
    with pytest.raises(engine.KernelError) as info:
        masks_disagree[1, 32](np.zeros(32, np.int64))
    msg = str(info.value)
    assert "ballot_sync(mask, True)" in msg and "same mask" in msg and "lane 0" in msg
