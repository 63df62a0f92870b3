"""Chapter 11's layer: simulated devices on the CPU engine, and the reduction and transpose split over them."""

import numpy as np
import pytest

import course
from course import multigpu
from course.kernels import multi_gpu as M
from numba import cuda

pytestmark = pytest.mark.skipif(course.on_gpu(), reason="simulated devices exist on the CPU backend only")


@pytest.fixture
def two():
    multigpu.simulate(2)
    yield
    multigpu.simulate(2)


def test_each_context_is_its_own_device(two):
    assert len(cuda.gpus) == 2 and multigpu.simulated()
    made = []
    for d in range(2):
        with cuda.gpus[d]:
            assert multigpu.current_device() == d
            made.append(cuda.to_device(np.zeros(4, np.float32)))
    assert [multigpu.device_of(x) for x in made] == [0, 1]
    assert multigpu.current_device() == 0
    assert multigpu.device_of(made[1][1:3]) == 1  # a slice stays on its device


def test_select_device_outside_the_machine_is_explained(two):
    with pytest.raises(ValueError, match="devices 0 to 1"):
        cuda.select_device(5)


def test_a_launch_on_another_devices_array_needs_peer_access(two):
    @cuda.jit
    def bump(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    with cuda.gpus[0]:
        x = cuda.to_device(np.zeros(5, np.float32))
    with cuda.gpus[1], pytest.raises(course.engine.KernelError, match=r"argument 'x'.*device 0.*enable_peer_access\(1, 0\)"):
        bump[1, 32](x)
    assert multigpu.enable_peer_access(1, 0)
    with cuda.gpus[1]:
        bump[1, 32](x)
    assert x.copy_to_host().tolist() == [1.0] * 5


def test_bytes_are_counted_per_link(two):
    multigpu.reset_counters()
    with cuda.gpus[0]:
        a = cuda.to_device(np.ones(100, np.float32))          # host -> gpu0: 400 bytes
    with cuda.gpus[1]:
        b = cuda.device_array(100, np.float32)
        b.copy_to_device(a)                                    # gpu0 -> gpu1 without peer access
        b.copy_to_host()                                       # gpu1 -> host
    c = multigpu.counters()
    assert c.link_bytes[("host", "gpu0")] == 400
    assert c.link_bytes[("gpu0", "gpu1")] == 400
    assert c.link_kind[("gpu0", "gpu1")] == "via host"
    assert c.link_bytes[("gpu1", "host")] == 400
    multigpu.enable_peer_access(1, 0)
    with cuda.gpus[1]:
        b.copy_to_device(a)
    assert multigpu.counters().link_kind[("gpu0", "gpu1")] == "peer"


@pytest.mark.parametrize("devices", [1, 2, 3])
def test_split_reduction_and_transpose_equal_numpy(devices, rng):
    multigpu.simulate(devices)
    try:
        M.check_split(devices, rng)
        a = rng.standard_normal(1025 * 3).astype(np.float32)
        got = M.split_sum(a, devices)
        assert abs(got - float(a.astype(np.float64).sum())) <= 1e-5 * float(np.abs(a).sum())
        m = rng.integers(0, 100, (1025, 33)).astype(np.int32)
        assert np.array_equal(M.split_transpose(m, devices), m.T)
    finally:
        multigpu.simulate(2)


def test_each_device_gets_its_share(two, rng):
    a = rng.integers(-3, 3, 10_001).astype(np.float32)
    multigpu.reset_counters()
    M.split_sum(a, 2)
    c = multigpu.counters()
    assert c.link_bytes[("host", "gpu0")] == 5001 * 4 and c.link_bytes[("host", "gpu1")] == 5000 * 4
    assert c.launches[0] >= 1 and c.launches[1] >= 1


def test_shares_cover_everything_once():
    for n, k in ((0, 3), (1, 2), (7, 3), (100_003, 4)):
        s = M.shares(n, k)
        assert len(s) == k and s[0][0] == 0 and s[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(s, s[1:]))
        assert max(b - a for a, b in s) - min(b - a for a, b in s) <= 1
    with pytest.raises(ValueError, match="at least one device"):
        M.shares(10, 0)
