"""Every transpose version against NumPy on fresh random data, awkward shapes and each dtype it claims.

CPU backend: 17×16, 1×33 (tiles mostly empty), 68×100 and 64×96 (several tiles, non-square, the
8- and 16-byte paths taken on whole tiles and the element path on the edges), 8×12 float64.
1025×512 runs for every version in the GPU lane (too slow for the CPU engine's test budget);
scripts/gpu/bench_transpose.py checks it there again before timing.
"""

import numpy as np
import pytest

import course
from course.measure import bench
from course.kernels import transpose as T
from numba import cuda

ON_GPU = course.on_gpu()
VERSIONS = list(T.TRANSPOSE_VERSIONS.values())
IDS = [v.name for v in VERSIONS]


def _check(v, shape, dtype, rng):
    a = bench.random_array(shape, dtype, rng)
    d_a = cuda.to_device(a)
    d_out = cuda.device_array((shape[1], shape[0]), dtype=a.dtype)
    expected = np.transpose(a).copy()  # not T.reference: the test derives its own answer
    bench.verify(lambda: v.launch(d_a, d_out), d_out, expected, what=f"{v.name} {shape} {dtype}")


def test_registry_is_in_teaching_order_with_one_line_ideas():
    assert IDS[:5] == ["naive", "tile_32x32", "tile_32x33", "tile_32x34", "swizzle"]  # seed 000's story
    assert IDS[5:] == ["rows", "batched", "unsigned", "wide", "vec4"]
    for v in VERSIONS:
        assert v.idea and "\n" not in v.idea
        assert v.kernel.__doc__, f"{v.name}: kernel without a docstring"
        assert v.threads[0] * v.threads[1] <= 1024


@pytest.mark.parametrize("v", VERSIONS, ids=IDS)
def test_every_version_transposes_awkward_shapes(v, rng):
    for shape, dtype in (((17, 16), "int32"), ((1, 33), "float32"), ((68, 100), "int32"), ((64, 96), "float32")):
        _check(v, shape, dtype, rng)
    if "float64" in v.dtypes:
        _check(v, (8, 12), "float64", rng)


def test_the_wide_paths_are_taken_where_they_can_be():
    # 68×100 int32: both sizes multiples of 4, so the 8- and 16-byte paths are on (for whole tiles).
    # Odd sizes or 8-byte elements must fall back to the element path.
    a = np.zeros((68, 100), np.int32)
    out = np.zeros((100, 68), np.int32)
    assert T.TRANSPOSE_VERSIONS["wide"].args(a, out)[-1] == 1
    assert T.TRANSPOSE_VERSIONS["vec4"].args(a, out)[-1] == 1
    odd = np.zeros((17, 16), np.int32)
    assert T.TRANSPOSE_VERSIONS["wide"].args(odd, np.zeros((16, 17), np.int32))[-1] == 0
    assert T.TRANSPOSE_VERSIONS["vec4"].args(odd, np.zeros((16, 17), np.int32))[-1] == 0
    f64 = np.zeros((128, 192), np.float64)
    assert T.TRANSPOSE_VERSIONS["wide"].args(f64, np.zeros((192, 128)))[-1] == 0
    assert T.TRANSPOSE_VERSIONS["vec4"].args(f64, np.zeros((192, 128)))[-1] == 0


def test_sweep_candidates_are_correct_too(rng):
    names = [v.name for v in T.sweep_candidates()]
    assert len(names) == len(set(names)) and not set(names) & set(IDS)
    for v in T.sweep_candidates():
        _check(v, (64, 64), "int32", rng)  # whole tiles of 32 and 64: the fast paths
    for v in T.sweep_candidates()[::4]:
        _check(v, (33, 70), "float32", rng)  # edges


def test_copy_kernels_copy(rng):
    for k, dtype, per_row in ((T.copy_kernel(4), np.int32, 1), (T.copy_kernel(8), np.int64, 1), (T.copy16_kernel(), np.int32, 4)):
        n = 3000 if per_row == 1 else 750  # not a multiple of the block's share: the tail is guarded
        shape = (n,) if per_row == 1 else (n, per_row)
        a = bench.random_array(shape, dtype, rng)
        d_a, d_b = cuda.to_device(a), cuda.device_array(shape, dtype)
        blocks = -(-n // (k.threads * k.per_thread))
        bench.verify(lambda: k[blocks, k.threads](d_a, d_b), d_b, a, what=k.__name__)


def test_a_wrong_output_shape_gets_a_clear_message():
    v = T.TRANSPOSE_VERSIONS["tile_32x33"]
    with pytest.raises(ValueError, match=r"the transpose of a \(4, 6\) matrix is \(6, 4\)"):
        v.launch(np.zeros((4, 6), np.int32), np.zeros((4, 6), np.int32))
    with pytest.raises(ValueError, match="2-D"):
        v.run(np.zeros(5, np.int32))
    tall = np.zeros((32 * 65535 + 1, 1), np.int8)  # one row too many for a grid's y dimension
    with pytest.raises(ValueError, match="65535"):
        v.launch(tall, np.zeros((1, tall.shape[0]), np.int8))


def test_ncu_cases_launch_and_transpose():
    from course import engine

    cases = T.NCU_CASES
    assert {c.name for c in cases} == {f"transpose_{n}" for n in IDS if n != "vec4"}
    for case in cases[::3]:
        args = case.args(seed=5)
        a, out = args[0], args[1]
        engine.launch(case.kernel, case.griddim, case.blockdim, args)
        assert np.array_equal(out, a.T), case.name


def test_tracer_sees_the_bank_conflicts_of_seed_000():
    # One 32×32 block of int32: the column read tile[tx][ty] hits words tx*width + ty, so bank
    # (tx*width + ty) % 32: width 32 → one bank, 32 passes; 33 → 32 banks, 1; 34 → 16 banks, 2 passes.
    # The naive store: 32 lanes write 32 different rows, 4 bytes each → 32 sectors per request.
    from course.trace import trace

    rng = np.random.default_rng(6)
    expect = {"naive": (None, 32), "tile_32x32": (32, 4), "tile_32x33": (1, 4), "tile_32x34": (2, 4), "swizzle": (1, 4)}
    for name, (wavefronts, sectors) in expect.items():
        v = T.TRANSPOSE_VERSIONS[name]
        a = rng.integers(-9, 9, size=(32, 32)).astype(np.int32)
        out = np.zeros((32, 32), np.int32)
        tot = trace(v.kernel, v.griddim(a.shape), v.threads, *v.args(a, out)).totals()
        assert tot["global_store_sectors"] == sectors * tot["global_store_requests"] == sectors * 32
        if wavefronts is not None:
            assert tot["shared_load_wavefronts"] == wavefronts * tot["shared_load_requests"] == wavefronts * 32


@pytest.mark.skipif(not ON_GPU, reason="1025×512 for every version takes minutes on the CPU engine; the GPU lane runs it")
@pytest.mark.parametrize("v", VERSIONS, ids=IDS)
def test_every_version_on_1025x512_on_the_gpu(v, rng):
    for dtype in ("int32", "float32", "float64"):
        _check(v, (1025, 512), dtype, rng)
        _check(v, (512, 1024), dtype, rng)


def test_python_run_of_unsigned_kernels_with_the_gpus_constants(monkeypatch):
    # On the GPU backend the constants are np.uint32 and the tracer still runs the kernels as Python
    # (the GPU lane runs chapter 05 there): every index must reach the arrays as a plain int.
    from course.trace import trace

    monkeypatch.setattr(T, "U32", np.uint32)
    rng = np.random.default_rng(7)
    for v in (T.unsigned_version(32, 8), T.wide_version(64, 8), T.vec4_version(64, 8)):
        a = bench.random_array((68, 100), "int32", rng)
        out = np.zeros((100, 68), np.int32)
        trace(v.kernel, v.griddim(a.shape), v.threads, *v.args(a, out))
        assert np.array_equal(out, a.T), v.name


def test_grouped_block_order_covers_every_tile_once():
    # grid 6×4 tiles of 32: divisible by 2, so the blocks are renumbered in 2×2 groups; 5×3 is not,
    # so the plain order is kept.  A tile missed by the renumbering stays poisoned.
    rng = np.random.default_rng(8)
    v = T.vec4_version(32, 8, group=2)
    _check(v, (128, 192), "int32", rng)
    _check(v, (96, 160), "float32", rng)
