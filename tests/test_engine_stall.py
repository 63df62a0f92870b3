"""A launch that cannot finish says so in seconds, naming its loop; one that is merely long says how far it is."""

import time

import numpy as np
import pytest

from course import backend
from course import engine
from course.engine import watchdog
from numba import cuda

pytestmark = pytest.mark.skipif(backend.on_gpu(), reason="the CPU engine's stall watch and messages")


@cuda.jit
def forever(out):
    i = 0
    while True:  # never ends: i changes, nothing else does
        i += 1


@cuda.jit
def wait_for_block_one(flag, out):
    b = cuda.blockIdx.x
    if b == 1:
        flag[0] = 1
    else:
        while flag[0] == 0:  # block 1 runs only after block 0 finishes, on the engine
            pass
    out[b] = b


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kernel, args, grid, line", [
    (forever, (np.zeros(1),), 1, "while True:"),
    (wait_for_block_one, (np.zeros(1, np.int32), np.zeros(2)), 2, "while flag[0] == 0:"),
])
def test_a_launch_that_cannot_finish_stops_in_seconds_naming_its_loop(kernel, args, grid, line):
    t0 = time.monotonic()
    with pytest.raises(engine.KernelError) as info:
        kernel[grid, 32](*args)
    assert time.monotonic() - t0 < 10
    msg = str(info.value)
    assert "cannot finish" in msg and line in msg and "block (0, 0, 0), thread (0, 0, 0)" in msg
    assert "blocks run one after another" in msg and "launch a second one" in msg
    assert info.value.line is not None


@cuda.jit
def long_loops(out, n):
    i = cuda.grid(1)
    s = 0.0
    k = 0
    while k < n:  # a long loop that ends
        s += k
        k += 1
    out[i] = s


@pytest.mark.timeout(30)
def test_a_merely_long_launch_is_not_stopped_and_says_how_far_it_is(monkeypatch, capfd):
    monkeypatch.setattr(watchdog, "NOTE_SECONDS", 0.5)
    monkeypatch.setattr(watchdog, "STALL_SECONDS", 1.0)
    out = np.zeros(64)
    long_loops[8, 8](out, 300000)  # about 2 s on the engine; each thread's loop well under a second
    assert out[5] == sum(range(300000))
    err = capfd.readouterr().err
    assert "still running" in err and "of 8 blocks done" in err and "interrupt the kernel" in err


@cuda.jit
def barrier_livelock(flag, out):
    t = cuda.threadIdx.x
    while flag[0] == 0:  # every thread passes the barrier again and again; nothing ever sets the flag
        cuda.syncthreads()
    out[t] = t


@cuda.jit
def barrier_loop_that_writes(out, n):
    t = cuda.threadIdx.x
    k = 0
    while k < n:  # long, with a barrier and a store each time round: it ends
        out[t] += 1.0
        cuda.syncthreads()
        k += 1


@pytest.mark.timeout(30)
def test_a_livelock_through_barriers_stops_in_seconds_naming_its_loop():
    t0 = time.monotonic()
    with pytest.raises(engine.KernelError) as info:
        barrier_livelock[1, 32](np.zeros(1, np.int32), np.zeros(32))
    assert time.monotonic() - t0 < 10
    msg = str(info.value)
    assert "cannot finish" in msg and "while flag[0] == 0:" in msg and "syncthreads" in msg
    assert info.value.line is not None and info.value.block == (0, 0, 0)


@pytest.mark.timeout(60)
def test_a_long_barrier_loop_that_writes_memory_is_not_stopped(monkeypatch):
    monkeypatch.setattr(watchdog, "STALL_SECONDS", 0.75)
    out = np.zeros(32)
    n = 36000  # about 4.8 s alone on 2 cores: twice what the assertion needs
    t0 = time.monotonic()
    barrier_loop_that_writes[1, 32](out, n)
    took = time.monotonic() - t0
    assert (out == n).all()
    assert took > 3 * 0.75, f"the loop ran {took:.1f} s: too short to show that the stall watch lets it run"
