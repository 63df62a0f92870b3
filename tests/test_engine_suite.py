"""The engine suite's kernels give NumPy's answer on fresh random data, at the benchmark size and at awkward sizes.

The odd sizes leave blocks and warps partly empty: 17×16 and 1×33 for the 2-D kernels, 1, 33 and 1000
elements for the guarded 1-D ones.  A few launches also run on numba's stock simulator (tiny sizes,
it is slow) to check that both paths agree.
"""

import numpy as np
import pytest

import course
from course.validation.engine_suite import SUITE

CASES = [(name, shape) for name, k in SUITE.items() for shape in (k.shape,) + k.odd_shapes]


def _check(entry, args, expected):
    for pos, want in zip(entry.outputs, expected):
        got = np.asarray(args[pos])
        assert got.shape == want.shape and got.dtype == want.dtype, (entry.name, got.shape, want.shape)
        if course.on_gpu() and not entry.exact_on_gpu:
            # the GPU may contract a*x + y into one FMA: one rounding instead of NumPy's two
            np.testing.assert_allclose(got, want, rtol=4e-7, atol=1e-6, err_msg=f"{entry.name}: output argument {pos}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{entry.name}: output argument {pos}")


def test_suite_is_large_enough_and_each_launch_has_about_8192_threads():
    assert len(SUITE) >= 20
    for name, entry in SUITE.items():
        assert 8000 <= entry.threads() <= 9000, (name, entry.threads())


def test_suite_covers_the_kinds_the_issue_lists():
    import inspect

    sources = "\n".join(inspect.getsource(k.kernel.py_func if hasattr(k.kernel, "py_func") else k.kernel.fn)
                        for k in SUITE.values())
    for needle in ("shfl_down_sync", "shfl_xor_sync", "syncthreads_count", "cuda.atomic.add", "cuda.local.array",
                   "cuda.shared.array(0", "TILE_PAD", "tx ^ ty", "cuda.syncthreads()"):
        assert needle in sources, needle
    assert {np.dtype(np.float64), np.dtype(np.uint8)} <= {
        np.asarray(SUITE[n].args(np.random.default_rng(0))[0]).dtype for n in ("copy_f64", "copy_u8")
    }


@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES])
def test_kernel_matches_numpy(name, shape, rng):
    entry = SUITE[name]
    args = entry.args(rng, shape)
    expected = entry.expected(args)
    entry.launch(args, shape)
    _check(entry, args, expected)


def test_references_are_not_trivially_satisfied(rng):
    # the sentinel outputs must differ from the answer, or a kernel that writes nothing would pass
    for name, entry in SUITE.items():
        args = entry.args(rng)
        for pos, want in zip(entry.outputs, entry.expected(args)):
            assert not np.array_equal(np.asarray(args[pos]), want), name


STOCK_CHECKED = ["copy_strided", "transpose_swizzled", "reduce_sequential", "count_positive", "histogram_shared",
                 "sort8_local", "reverse_dynamic_shared"]


@pytest.mark.skipif(course.BACKEND != "cpu", reason="compares the CPU engine with numba's simulator")
@pytest.mark.parametrize("name", STOCK_CHECKED)
def test_engine_and_stock_simulator_agree_bit_for_bit(name, rng):
    from course.engine import stock_simulator

    entry = SUITE[name]
    shape = (17, 16) if len(entry.shape) == 2 else (256,)  # one or two blocks: the stock simulator is slow
    args = entry.args(rng, shape)
    a_engine = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    a_stock = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    entry.launch(a_engine, shape)
    with stock_simulator():
        entry.launch(a_stock, shape)
    for pos in entry.outputs:
        np.testing.assert_array_equal(a_engine[pos], a_stock[pos])
    _check(entry, a_engine, entry.expected(args))
