"""The engine's two seams: what it hands an observer (course.engine.hooks), and its patches of numba (simulator).

The observer sees a launch (``LaunchView``), each thread (``LaunchView.thread``), each block's syncwarps and shared
memory, through declared names only; numba's classes are patched in one registry that ``uninstall`` empties,
putting back numba's own objects; numba's types are recognised by type, not by name.
"""

import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import course  # first: chooses the backend
from course import engine
from course.engine import simulator
from numba import cuda

ON_GPU = course.on_gpu()
cpu_only = pytest.mark.skipif(ON_GPU, reason="patches numba's simulator, which the GPU backend does not load")


@cuda.jit
def _two_warps(out):
    t = cuda.threadIdx.x
    a = cuda.shared.array(10, np.float64)  # 80 bytes
    b = cuda.shared.array(3, np.int32)  # 12 bytes, from offset 80: the block then holds 96 (16-byte steps)
    a[t % 10] = t
    b[t % 3] = t
    cuda.syncwarp()
    out[t] = t


class _Observer:
    def __init__(self):
        self.events, self.shared, self.threads, self.launch = [], [], [], None

    def begin_launch(self, launch):
        self.launch = launch
        self.seen = (launch.name, launch.grid, launch.block, launch.threads_per_block, launch.thread)

    def on_syncwarp(self, event, tids):
        self.events.append((event, tuple(tids)))
        self.threads.append(self.launch.thread.tid)  # the lane that completed the syncwarp is still running

    def end_block(self, block):
        self.shared.append((block, self.launch.shared_bytes))


def test_an_observer_sees_the_launch_its_syncwarps_and_shared_bytes():
    obs = _Observer()
    out = np.zeros(64, np.int32)
    engine.launch(_two_warps, 2, 64, (out,), hooks=obs)
    assert obs.seen == ("_two_warps", (2, 1, 1), (64, 1, 1), 64, None)  # no thread runs before the first block
    warp0, warp1 = tuple(range(32)), tuple(range(32, 64))
    # one syncwarp per warp per block, numbered in the order they resolve across the launch
    assert obs.events == [(0, warp0), (1, warp1), (2, warp0), (3, warp1)]
    assert obs.shared == [((0, 0, 0), 96), ((1, 0, 0), 96)]
    # the code that runs: the engine's copy with the literals typed as numba-cuda types them
    assert engine.numba_function(engine.kernel_py_func(_two_warps)).__code__ in obs.launch.codes
    np.testing.assert_array_equal(out, np.arange(64))


def test_the_running_thread_is_the_one_making_each_access():
    seen = []
    obs = types.SimpleNamespace()

    class Watching(engine.KernelArray):
        __slots__ = ()

        def __setitem__(self, idx, value):
            t = obs.launch.thread
            seen.append((self.space, t.block, t.tid, t.warp, t.lane, t.warp_syncs))
            engine.KernelArray.__setitem__(self, idx, value)

    obs.array_class = Watching
    obs.begin_launch = lambda launch: setattr(obs, "launch", launch)
    engine.launch(_two_warps, 1, 64, (np.zeros(64, np.int32),), hooks=obs)
    outs = [s for s in seen if s[0] == "global"]
    assert [s[2] for s in outs] == list(range(64))  # threads run in linear id order (course/engine/__init__.py)
    assert all(s[3] == s[2] // 32 and s[4] == s[2] % 32 and s[5] == 1 for s in outs)  # after one syncwarp
    assert all(s[5] == 0 for s in seen if s[0] == "shared")  # before it


def test_numba_types_are_recognised_by_type_not_by_name():
    def plain(x):
        return x

    Impostor = type("FakeCUDAKernel", (), {"fn": plain, "_device": True})
    assert engine.is_kernel_object(_two_warps) and not engine.is_kernel_object(plain)
    assert not engine.is_kernel_object(Impostor()) and engine.device_py_func(Impostor()) is None
    assert engine.kernel_py_func(plain) is plain


def test_the_gpu_dispatcher_patch_lasts_one_launch(monkeypatch):
    """On the GPU backend a device function reached as ``module.fn(...)`` runs as Python during an engine launch,
    and numba's dispatcher is back as it was when the launch ends."""
    mod = types.ModuleType("numba.cuda.dispatcher")

    def own_call(self, *args):
        return "compiled"

    Dispatcher = type("CUDADispatcher", (), {"__call__": own_call, "__module__": "numba.cuda.dispatcher"})
    mod.CUDADispatcher = Dispatcher
    monkeypatch.setitem(sys.modules, "numba.cuda.dispatcher", mod)
    monkeypatch.setattr(simulator, "_CLASSES", {})
    device = Dispatcher()
    device.targetoptions, device.py_func = {"device": True}, lambda x: x + 1
    added = []
    with simulator.device_calls_as_python(added.append):
        assert device(1) == 2 and added == [device.py_func]
    assert vars(Dispatcher)["__call__"] is own_call and device(1) == "compiled"


_UNINSTALL = textwrap.dedent("""
    import course
    from course import engine, multigpu
    from numba.cuda.simulator import api, kernel
    from numba.cuda.simulator.cudadrv import devicearray, devices
    from numba.core.types import abstract
    import numba.cuda as cuda

    ABSENT = object()
    watched = [(kernel.FakeCUDAKernel, n) for n in ("__call__", "__getitem__", "forall")]
    watched += [(devicearray.FakeCUDAArray, n) for n in ("__init__", "__getitem__", "copy_to_host", "copy_to_device")]
    watched += [(m, n) for m in (cuda, api) for n in ("current_context", "get_current_device", "select_device")]
    watched += [(cuda, "jit"), (cuda, "to_device"), (devicearray, "to_device"), (devices.FakeDeviceList, "current"),
                (devices.gpus, "lst"), (devices.FakeCUDADevice, "MAX_THREADS_PER_BLOCK"), (devices.FakeCUDADevice, "name"),
                (abstract.Type, "__call__")]
    before = [vars(o).get(n, ABSENT) for o, n in watched]
    engine.install()
    multigpu.simulate(2)
    changed = [f"{getattr(o, '__name__', o)}.{n}" for (o, n), b in zip(watched, before) if vars(o).get(n, ABSENT) is not b]
    assert len(changed) == len(watched), ("install left these as numba made them", len(changed), len(watched))
    engine.uninstall()
    left = [f"{getattr(o, '__name__', o)}.{n}" for (o, n), b in zip(watched, before) if vars(o).get(n, ABSENT) is not b]
    assert not left, ("uninstall did not restore", left)
    assert len(cuda.gpus) == 1
    print("restored", len(watched))
""")


@cpu_only
def test_uninstall_puts_back_numbas_own_objects():
    """numba as it ships (the ``numba-sim`` backend patches nothing), then install + simulated devices, then uninstall:
    every attribute they replaced is numba's own object again (or absent again, where the course added it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM",)}
    env["COURSE_BACKEND"] = "numba-sim"
    out = subprocess.run([sys.executable, "-c", _UNINSTALL], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["restored", "21"]


@cpu_only
def test_the_numba_sim_backend_patches_nothing():
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM",)}
    env["COURSE_BACKEND"] = "numba-sim"
    code = "import course\nfrom numba import cuda\nfrom course.engine import simulator\nprint(simulator.installed())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["[]"]


@cpu_only
def test_the_fast_scalar_casts_give_what_numbas_own_give():
    """float32(x), int32(x) … on the engine take a short path (simulator._patch_scalar_casts): the same value of the
    same type as numba's own ``Type.__call__``, for every scalar type and every class the short path takes; a
    numba type as the argument still makes a signature."""
    import numba
    from numba.core.types import abstract

    assert (abstract.Type, "__call__") in simulator.installed()
    numbas = abstract.Type.__call__.__wrapped__
    kinds = [numba.types.float16, numba.float32, numba.float64, numba.int8, numba.int16, numba.int32, numba.int64,
             numba.uint8, numba.uint16, numba.uint32, numba.uint64, numba.boolean]
    values = [0, 7, -3, 2**31 - 1, 1.5, -2.75, 3e38, True, False, np.float32(2.5), np.float64(-0.1), np.float16(1.25),
              np.int8(-5), np.int16(300), np.int32(-70000), np.int64(2**40), np.uint8(200), np.uint16(60000),
              np.uint32(2**31 + 5), np.uint64(2**63), np.bool_(True)]
    assert {v.__class__ for v in values} == set(simulator._CAST_CLASSES)
    with np.errstate(all="ignore"):
        for t in kinds:
            for v in values:
                try:
                    want = numbas(t, v)
                except (OverflowError, ValueError, TypeError) as err:
                    with pytest.raises(type(err)):
                        t(v)
                    continue
                got = t(v)
                assert got.__class__ is want.__class__, (t, v, got, want)
                assert got == want or (got != got and want != want), (t, v, got, want)
    sig = numba.float32(numba.int32, numba.float32)
    assert str(sig) == "(int32, float32) -> float32"
