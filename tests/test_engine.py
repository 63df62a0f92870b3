"""The CPU engine: same results as CUDA semantics say, warp intrinsics, determinism, clear errors, no hangs.

Tests that launch with the ordinary ``kernel[griddim, blockdim](...)`` syntax also run in the GPU lane
(COURSE_BACKEND=gpu on the H200), where they check the same expectations on the hardware; the
expectations are computed here from CUDA's documented definitions, never from the engine.
"""

import numpy as np
import pytest

from course import backend
from numba import cuda
from conftest import seeded_rng

ON_GPU = backend.on_gpu()
cpu_only = pytest.mark.skipif(ON_GPU, reason="checks a CPU-engine message or scheduling property")
rng = seeded_rng(__name__)


# ------------------------------------------------------------------------------------------------ kernels

@cuda.jit
def vadd(a, b, c, n):
    i = cuda.grid(1)
    if i < n:
        c[i] = a[i] + b[i]


@cuda.jit
def vadd_unguarded(a, b, c, n):
    i = cuda.grid(1)
    c[i] = a[i] + b[i]


@cuda.jit
def index2d(out):
    row, col = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = row * 1000 + col


@cuda.jit
def linear_ids(out):
    t = cuda.threadIdx
    d = cuda.blockDim
    tid = t.x + d.x * (t.y + d.y * t.z)
    b = cuda.blockIdx.x
    out[b * d.x * d.y * d.z + tid] = tid * 100 + cuda.laneid


@cuda.jit
def shuffles(x, out_idx, out_up, out_down, out_xor, width_out):
    i = cuda.grid(1)
    v = x[i]
    out_idx[i] = cuda.shfl_sync(0xFFFFFFFF, v, 5)
    out_up[i] = cuda.shfl_up_sync(0xFFFFFFFF, v, 3)
    out_down[i] = cuda.shfl_down_sync(0xFFFFFFFF, v, 3)
    out_xor[i] = cuda.shfl_xor_sync(0xFFFFFFFF, v, 6)
    width_out[i] = cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)


@cuda.jit
def votes(x, ballot, all_, any_, eq_):
    i = cuda.grid(1)
    p = x[i] > 0
    ballot[i] = cuda.ballot_sync(0xFFFFFFFF, p)
    all_[i] = cuda.all_sync(0xFFFFFFFF, p)
    any_[i] = cuda.any_sync(0xFFFFFFFF, p)
    eq_[i] = cuda.eq_sync(0xFFFFFFFF, x[i] // 1000)


@cuda.jit
def active_masks(out):
    i = cuda.grid(1)
    if cuda.threadIdx.x % 2 == 0:
        out[i] = cuda.activemask()
    else:
        out[i] = cuda.activemask()


@cuda.jit
def warp_sum(x, out):
    i = cuda.grid(1)
    v = x[i]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        cuda.atomic.add(out, 0, v)


@cuda.jit
def block_votes(x, counts, ands, ors):
    i = cuda.grid(1)
    p = 1 if x[i] > 0 else 0  # the predicate is an int32 on the GPU
    c = cuda.syncthreads_count(p)
    a = cuda.syncthreads_and(p)
    o = cuda.syncthreads_or(p)
    if cuda.threadIdx.x == 0:
        counts[cuda.blockIdx.x] = c
        ands[cuda.blockIdx.x] = a
        ors[cuda.blockIdx.x] = o


@cuda.jit
def atomic_old_values(counter, olds):
    i = cuda.grid(1)
    olds[i] = cuda.atomic.add(counter, 0, 1)


@cuda.jit
def block_reduce(x, out):
    s = cuda.shared.array(256, dtype=np.float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.shape[0] else 0.0
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def two_shared_on_one_line(out):
    a = cuda.shared.array(32, dtype=np.int32); b = cuda.shared.array(32, dtype=np.int32)  # noqa: E702
    t = cuda.threadIdx.x
    a[t] = t
    b[t] = 100 + t
    cuda.syncthreads()
    out[t] = a[t] * 1000 + b[t]


@cuda.jit
def dynamic_shared(x, out):
    s = cuda.shared.array(0, dtype=np.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[cuda.blockDim.x - 1 - t]


@cuda.jit(device=True)
def square(v):
    return v * v


@cuda.jit
def uses_device_fn(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = square(x[i]) + 1


@cuda.jit
def local_and_const(x, out):
    tmp = cuda.local.array(4, dtype=np.float32)
    i = cuda.grid(1)
    if i < x.shape[0]:
        for k in range(4):
            tmp[k] = x[i] * k
        out[i] = tmp[0] + tmp[1] + tmp[2] + tmp[3]


# ------------------------------------------------------------------------------------------------ results

@pytest.mark.parametrize("n", [1, 33, 50000])
def test_vector_add_matches_numpy(n):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = np.full(n, np.nan, np.float32)
    vadd[(n + 255) // 256, 256](a, b, c, n)
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("shape", [(17, 16), (1, 33), (37, 5)])
def test_2d_grid_indices(shape):
    out = np.full(shape, -1, np.int64)
    blocks = ((shape[0] + 7) // 8, (shape[1] + 15) // 16)
    index2d[blocks, (8, 16)](out)
    rows, cols = np.indices(shape)
    np.testing.assert_array_equal(out, rows * 1000 + cols)


def test_linear_thread_ids_and_lanes_follow_x_then_y_then_z():
    block = (5, 3, 4)  # 60 threads: warps of 32 consecutive linear ids, the second one partial
    out = np.full(2 * 60, -1, np.int64)
    linear_ids[2, block](out)
    tid = np.tile(np.arange(60), 2)
    np.testing.assert_array_equal(out, tid * 100 + tid % 32)


def _shfl_reference(x, kind, arg, width=32):
    """CUDA's documented __shfl_*_sync results for a full warp (CUDA C++ Programming Guide, warp shuffle)."""
    res = np.empty_like(x)
    for lane in range(len(x)):
        w = lane // 32 * 32
        ln = lane % 32
        seg = ln & ~(width - 1)
        if kind == "idx":
            src = seg + arg % width
        elif kind == "up":
            src = ln - arg if ln - arg >= seg else ln
        elif kind == "down":
            src = ln + arg if ln + arg < seg + width else ln
        else:
            src = ln ^ arg
            if (src & ~(width - 1)) > seg:
                src = ln
        res[lane] = x[w + src]
    return res


def test_shuffles_follow_their_cuda_definitions():
    n = 64
    x = rng.integers(0, 10**6, n).astype(np.int32)
    outs = [np.zeros(n, np.int32) for _ in range(5)]
    shuffles[1, n](x, *outs)
    np.testing.assert_array_equal(outs[0], _shfl_reference(x, "idx", 5))
    np.testing.assert_array_equal(outs[1], _shfl_reference(x, "up", 3))
    np.testing.assert_array_equal(outs[2], _shfl_reference(x, "down", 3))
    np.testing.assert_array_equal(outs[3], _shfl_reference(x, "xor", 6))
    np.testing.assert_array_equal(outs[4], _shfl_reference(x, "xor", 1))


def test_votes_follow_their_cuda_definitions():
    n = 64
    x = rng.integers(-5, 5, n).astype(np.int32)
    x[32:] = np.abs(x[32:]) + 1  # the second warp: all positive
    x[32:] = 7000 + x[32:]  # … and x // 1000 equal across it
    ballot, all_, any_, eq_ = (np.zeros(n, np.int64) for _ in range(4))
    votes[1, n](x, ballot, all_, any_, eq_)
    for w in range(2):
        p = x[w * 32:(w + 1) * 32] > 0
        bits = sum(1 << lane for lane in range(32) if p[lane])
        assert set(ballot[w * 32:(w + 1) * 32] & 0xFFFFFFFF) == {bits}  # an int32 bit pattern on the GPU
        assert set(all_[w * 32:(w + 1) * 32] != 0) == {bool(p.all())}
        assert set(any_[w * 32:(w + 1) * 32] != 0) == {bool(p.any())}
        q = (x[w * 32:(w + 1) * 32] // 1000) != 0  # eq_sync compares truth values (vote.sync.uni)
        assert set(eq_[w * 32:(w + 1) * 32] != 0) == {bool((q == q[0]).all())}


def test_activemask_inside_a_divergent_branch():
    out = np.zeros(32, np.int64)
    active_masks[1, 32](out)
    assert set(out[0::2]) == {0x55555555}
    assert set(out[1::2]) == {0xAAAAAAAA}


def test_warp_shuffle_reduction_is_exact():
    x = rng.integers(0, 1000, 1024).astype(np.int64)
    out = np.zeros(1, np.int64)
    warp_sum[4, 256](x, out)
    assert out[0] == x.sum()


def test_syncthreads_count_and_or():
    x = rng.integers(-3, 3, 4 * 128).astype(np.int32)
    x[128:256] = 1  # block 1: all true
    x[256:384] = 0  # block 2: all false
    counts, ands, ors = (np.zeros(4, np.int64) for _ in range(3))
    block_votes[4, 128](x, counts, ands, ors)
    p = (x > 0).reshape(4, 128)
    np.testing.assert_array_equal(counts, p.sum(axis=1))
    np.testing.assert_array_equal(ands != 0, p.all(axis=1))
    np.testing.assert_array_equal(ors != 0, p.any(axis=1))


def test_atomic_add_returns_each_old_value_once():
    counter = np.zeros(1, np.int64)
    olds = np.full(300, -1, np.int64)
    atomic_old_values[3, 100](counter, olds)
    assert counter[0] == 300
    assert sorted(olds) == list(range(300))


@pytest.mark.parametrize("n", [1, 255, 1000])
def test_shared_memory_block_reduction(n):
    x = rng.standard_normal(n)
    blocks = (n + 255) // 256
    out = np.zeros(blocks)
    block_reduce[blocks, 256](x, out)
    # another summation order: the error is bounded by the sum of magnitudes, not by the (maybe tiny) sum
    np.testing.assert_allclose(out.sum(), x.sum(), rtol=0, atol=1e-13 * np.abs(x).sum())


def test_two_shared_arrays_on_one_line_do_not_alias():
    out = np.zeros(32, np.int64)
    two_shared_on_one_line[1, 32](out)
    t = np.arange(32)
    np.testing.assert_array_equal(out, t * 1000 + 100 + t)


def test_dynamic_shared_memory():
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    dynamic_shared[1, 64, 0, 64 * 4](x, out)
    np.testing.assert_array_equal(out, x[::-1])


def test_device_functions_local_arrays():
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(100, np.float32)
    uses_device_fn[1, 128](x, out)
    np.testing.assert_allclose(out, x * x + 1, rtol=1e-6)
    local_and_const[1, 128](x, out)
    np.testing.assert_allclose(out, x * 6, rtol=1e-6)


def test_device_arrays_round_trip():
    a = rng.standard_normal(500).astype(np.float32)
    b = rng.standard_normal(500).astype(np.float32)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array_like(a)
    vadd[2, 256](d_a, d_b, d_c, 500)
    cuda.synchronize()
    np.testing.assert_array_equal(d_c.copy_to_host(), a + b)


# ------------------------------------------------------------------------------------------------ engine-only

from course import engine  # noqa: E402


@cpu_only
def test_uninitialised_shared_memory_is_poisoned_not_zero():
    @cuda.jit
    def read_before_write(out):
        s = cuda.shared.array(32, dtype=np.float32)
        out[cuda.threadIdx.x] = s[cuda.threadIdx.x]

    out = np.zeros(32, np.float32)
    read_before_write[1, 32](out)
    assert np.isnan(out).all()


@cpu_only
def test_out_of_bounds_names_line_block_and_thread():
    n = 1000
    a = np.ones(n, np.float32)
    c = np.zeros(n, np.float32)
    with pytest.raises(engine.KernelError) as info:
        vadd_unguarded[4, 256](a, a, c, n)
    msg = str(info.value)
    assert "vadd_unguarded" in msg
    assert "c[i] = a[i] + b[i]" in msg
    assert "block (3, 0, 0), thread (232, 0, 0)" in msg  # 3*256 + 232 = 1000, the first index past the end
    assert "out of bounds" in msg and "if i < n" in msg
    assert info.value.block == (3, 0, 0) and info.value.thread == (232, 0, 0)


@cpu_only
def test_negative_index_is_an_error_not_a_wraparound():
    @cuda.jit
    def shift_left(a, out):
        i = cuda.grid(1)
        out[i] = a[i - 1]

    with pytest.raises(engine.KernelError, match="negative"):
        shift_left[1, 32](np.ones(32), np.zeros(32))


@cpu_only
def test_float_index_gets_a_hint():
    @cuda.jit
    def half(a, out):
        i = cuda.grid(1)
        out[i] = a[i / 2]

    with pytest.raises(engine.KernelError, match="//"):
        half[1, 32](np.ones(32), np.zeros(32))


@cpu_only
def test_exception_in_device_function_names_both_lines():
    @cuda.jit(device=True)
    def bad(a, i):
        return a[i + 100]

    @cuda.jit
    def calls_bad(x, out):
        i = cuda.grid(1)
        out[i] = bad(x, i)

    with pytest.raises(engine.KernelError) as info:
        calls_bad[1, 4](np.arange(4), np.zeros(4, np.int64))
    msg = str(info.value)
    assert "out of bounds" in msg and "return a[i + 100]" in msg and "out[i] = bad(x, i)" in msg


@cpu_only
def test_syncthreads_in_divergent_branch_stops_with_a_message():
    @cuda.jit
    def divergent_barrier(out):
        t = cuda.threadIdx.x
        if t < 16:
            cuda.syncthreads()
        out[t] = t

    with pytest.raises(engine.KernelError) as info:
        divergent_barrier[1, 64](np.zeros(64))
    msg = str(info.value)
    assert "syncthreads" in msg and "finished without reaching it" in msg


@cpu_only
def test_barriers_at_different_lines_are_divergence():
    @cuda.jit
    def two_barriers(out):
        t = cuda.threadIdx.x
        if t % 2 == 0:
            cuda.syncthreads()
        else:
            cuda.syncthreads()
        out[t] = t

    with pytest.raises(engine.KernelError, match="barrier divergence"):
        two_barriers[1, 32](np.zeros(32))


@cpu_only
def test_shuffle_with_a_lane_missing_from_the_collective_deadlocks_with_a_message():
    @cuda.jit
    def half_shuffle(out):
        t = cuda.threadIdx.x
        if t < 16:
            out[t] = cuda.shfl_down_sync(0xFFFFFFFF, t, 1)
        else:
            cuda.syncthreads()

    with pytest.raises(engine.KernelError, match="deadlock"):
        half_shuffle[1, 32](np.zeros(32))


@cpu_only
@pytest.mark.timeout(30)
def test_endless_loop_stops_at_the_time_limit():
    @cuda.jit
    def spin(out):
        i = 0
        while out[0] == 0:
            i += 1

    with pytest.raises(engine.KernelError) as info:
        engine.launch(spin, 1, 32, (np.zeros(1),), time_limit=0.5)
    msg = str(info.value)
    assert "time limit" in msg and "while out[0] == 0" in msg


@cpu_only
@pytest.mark.parametrize(
    "config, args, needle",
    [
        ((1, 2048), (np.zeros(4),), "1024"),
        ((2.5, 32), (np.zeros(4),), "integer division"),
        ((1, 32), ([1, 2, 3],), "np.asarray"),
        ((1, 32), (np.zeros(4), np.zeros(4)), "takes 1 argument"),
    ],
)
def test_bad_launches_are_explained(config, args, needle):
    @cuda.jit
    def one_arg(a):
        pass

    with pytest.raises(engine.KernelError, match=needle):
        one_arg[config](*args)


@cpu_only
def test_launch_without_configuration_is_explained():
    @cuda.jit
    def k(a):
        pass

    with pytest.raises(engine.KernelError, match=r"k\[blocks_per_grid, threads_per_block\]"):
        k(np.zeros(3))


@cuda.jit
def racy_last_writer(out, slot):
    # every thread writes its id to one slot, then reads it back: a race by construction
    slot[0] = cuda.threadIdx.x
    out[cuda.threadIdx.x] = slot[0]


@cpu_only
def test_default_order_is_deterministic_and_seeds_expose_races():
    results = []
    for _ in range(2):
        out, slot = np.zeros(64, np.int64), np.zeros(1, np.int64)
        racy_last_writer[1, 64](out, slot)
        results.append((out.copy(), slot[0]))
    assert np.array_equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]
    # in the documented order each thread runs to completion before the next: it reads its own id
    np.testing.assert_array_equal(results[0][0], np.arange(64))
    seeded = set()
    for seed in range(5):
        out, slot = np.zeros(64, np.int64), np.zeros(1, np.int64)
        with engine.order(seed=seed):
            racy_last_writer[1, 64](out, slot)
        seeded.add(int(slot[0]))
    assert len(seeded) > 1, "another legal order should leave another thread's id as the last write"


@cpu_only
def test_a_correct_kernel_is_order_independent():
    x = rng.standard_normal(1000)
    ref = None
    for seed in (None, 1, 2):
        out = np.zeros(4)
        with engine.order(seed=seed):
            block_reduce[4, 256](x, out)
        ref = out if ref is None else ref
        np.testing.assert_allclose(out, ref, rtol=1e-12)


@cpu_only
def test_engine_and_stock_simulator_agree():
    x = rng.standard_normal(300)
    out_engine, out_stock = np.zeros(2), np.zeros(2)
    block_reduce[2, 256](x, out_engine)
    with engine.stock_simulator():
        block_reduce[2, 256](x, out_stock)
    np.testing.assert_array_equal(out_engine, out_stock)


@cpu_only
def test_hooks_see_thread_identity_and_barrier_epochs():
    seen = []

    class Recording(engine.KernelArray):
        __slots__ = ()

        def __setitem__(self, idx, value):
            ts = engine.current_thread()
            seen.append((self.space, ts.block, ts.tid, ts.warp, ts.lane, ts.barriers))
            self._set(idx, value)

    class Hooks:
        array_class = Recording

    x = np.ones(40)
    engine.launch(block_reduce, 1, 64, (x, np.zeros(1)), hooks=Hooks())
    first = [s for s in seen if s[0] == "shared" and s[5] == 0]
    assert len(first) == 64 and {s[2] for s in first} == set(range(64))
    assert all(s[3] == s[2] // 32 and s[4] == s[2] % 32 for s in first)
    assert any(s[5] > 0 for s in seen)


def test_device_reports_its_limits():
    dev = cuda.get_current_device()
    assert dev.MAX_THREADS_PER_BLOCK == 1024 and dev.WARP_SIZE == 32 and dev.MULTIPROCESSOR_COUNT > 0


@cpu_only
def test_kernel_errors_keep_their_python_type():
    @cuda.jit
    def raises(flag):
        if flag:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        raises[1, 1](True)
    with pytest.raises(IndexError):
        vadd_unguarded[1, 64](np.ones(8), np.ones(8), np.zeros(8), 8)
    with pytest.raises(TypeError):
        raises[2.0, 1]


@cpu_only
def test_forall_with_no_work_launches_nothing():
    @cuda.jit
    def touch(x):
        x[0] = 1

    x = np.zeros(3)
    touch.forall(0)(x)
    assert x[0] == 0


@cpu_only
def test_debug_kernels_stop_on_division_by_zero():
    @cuda.jit(debug=True, opt=False)
    def divide(r, x, y):
        r[0] = y[0] / x[0]
        r[1] = y[0]

    r = np.zeros(2)
    with pytest.raises(FloatingPointError):
        divide[1, 1](r, np.zeros(1), np.ones(1))
    assert r.tolist() == [0.0, 0.0]


def _scaling_kernel(k):
    @cuda.jit(device=True)
    def scale(v):
        return v * k

    @cuda.jit
    def kern(a):
        i = cuda.grid(1)
        if i < a.shape[0]:
            a[i] = scale(a[i])

    return kern, scale


def test_engine_runs_kernels_whose_device_functions_sit_in_a_closure():
    # engine.launch runs on the CPU on every backend; in the GPU lane `scale` is a compiled dispatcher
    kern, scale = _scaling_kernel(3)
    a = np.arange(10.0)
    engine.launch(kern, 1, 32, (a,))
    np.testing.assert_array_equal(a, np.arange(10.0) * 3)
    cells = [c.cell_contents for c in kern.py_func.__closure__]
    assert scale in cells, "the closure is restored after the launch"


@cpu_only
@pytest.mark.timeout(60)
def test_a_timed_out_launch_leaves_the_interpreter_healthy_for_tracing():
    # regression: clearing the watchdog's exception with PyThreadState_SetAsyncExc(id, NULL) left
    # CPython 3.11's eval breaker set, and the next launch under sys.settrace spun forever
    import sys

    @cuda.jit
    def spin(out):
        while out[0] == 0:
            pass

    with pytest.raises(engine.KernelError, match="time limit"):
        engine.launch(spin, 1, 32, (np.zeros(1),), time_limit=0.3)
    out = np.zeros(64)
    old = sys.gettrace()
    sys.settrace(lambda frame, event, arg: None)
    try:
        vadd[1, 64](np.ones(64), np.ones(64), out, 64)
    finally:
        sys.settrace(old)
    assert (out == 2).all()


# --------------------------------------------------------------- arrays beyond the H200's limits: refused, never allocated

@cuda.jit
def huge_local(out):
    x = cuda.local.array(2 ** 34, np.float32)  # 64 GiB per thread: the CPU must not try (32 threads, one each)
    x[0] = 1
    out[0] = x[0]


@cuda.jit
def huge_shared(out):
    x = cuda.shared.array((2 ** 20, 2 ** 20), np.float32)
    x[0, 0] = 1
    out[0] = x[0, 0]


@cuda.jit
def dynamic_shared_one(out):
    x = cuda.shared.array(0, np.float32)
    x[0] = 1
    out[0] = x[0]


@pytest.mark.parametrize("kernel, dynshared, message", [
    (huge_local, 0, "512 KiB"),                      # cc 9.0: 512 KiB of local memory per thread
    (huge_shared, 0, "static shared memory"),        # 48 KiB of static shared memory per block
    (dynamic_shared_one, 2 ** 40, "dynamic shared memory"),  # 227 KiB per block at most, opted in
])
def test_an_array_beyond_the_h200s_limits_is_refused_before_it_is_allocated(kernel, dynshared, message):
    from course.engine import launch

    with pytest.raises(Exception, match=message):  # within seconds, under the memory of a laptop
        launch(kernel, 1, 32, [np.zeros(1, np.float32)], dynshared=dynshared)


@cuda.jit(device=True)
def shared_of_size(a, size):
    s = cuda.shared.array(size, np.float32)  # numba types `size` as the literal its caller passes (its test_atomics)
    s[0] = a[0]
    return s[0]


@cuda.jit
def literal_to_device_fn(a, out):
    out[0] = shared_of_size(a, 32)


@cuda.jit
def shape_from_kernel_argument(a, out, n):
    s = cuda.shared.array(n, np.float32)  # a launch argument: a GPU compile refuses it
    s[0] = a[0]
    out[0] = s[0]


def test_a_device_functions_parameter_may_size_an_array_a_kernels_may_not():
    from course.engine import launch

    a, out = np.full(1, 3.0, np.float32), np.zeros(1, np.float32)
    launch(literal_to_device_fn, 1, 1, [a, out])
    assert out[0] == 3.0
    with pytest.raises(Exception, match="known only at launch"):
        launch(shape_from_kernel_argument, 1, 1, [a, out, 4])
