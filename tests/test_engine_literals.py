"""Literals as numba-cuda types them (issue 27): ``x * 2.0``, ``x + 1`` and ``s = 0.0; s += a[i]`` are float64.

NumPy 2 keeps float32 for a float32 beside a Python number (NEP 50); numba-cuda types the literal first (float64,
int64) and promotes.  Expected types come from numba-cuda itself (``compile_ptx`` for sm_90 in a child process,
where the CUDA compiler is installed); expected values from NumPy float32/float64 arithmetic, never the engine.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from course import backend
from course.trace.compiler import HARDWARE_MODE_PRELUDE
from numba import cuda, float32

ROOT = pathlib.Path(__file__).resolve().parents[1]
cpu_only = pytest.mark.skipif(backend.on_gpu(), reason="checks the engine's arithmetic, which a GPU does not run")


@cuda.jit
def accumulate(a, out):
    s = 0.0  # numba-cuda: a float64 accumulator, so the small terms are not lost
    for j in range(a.shape[0]):
        s += a[j]
    out[0] = s


@cpu_only
def test_a_sum_started_at_0_0_accumulates_in_float64():
    a = np.array([1.0] + [1e-8] * 1000, np.float32)
    out = np.zeros(1, np.float64)
    accumulate[1, 1](a, out)
    in_float32 = np.float32(1.0)
    for v in a[1:]:
        in_float32 = in_float32 + v  # float32 + float32: each 1e-8 is lost against 1.0
    assert in_float32 == 1.0
    assert out[0] == pytest.approx(1.0 + 1000 * float(np.float32(1e-8)), rel=1e-12)


@cuda.jit
def scale_and_shift(a, out):
    i = cuda.threadIdx.x
    out[i, 0] = a[i] * 2.0  # float64 multiply on the GPU (PTX mul.f64)
    out[i, 1] = a[i] + 1  # the int literal is int64: float32 + int64 is float64
    out[i, 2] = a[i] * float32(0.1)  # written as the course writes it: stays float32
    out[i, 3] = a[i] * 0.1


@cpu_only
def test_float_and_int_literals_promote_float32_as_on_a_gpu():
    x = np.float32(16777217.0 / 3)  # float32 rounding visible in the results below
    a = np.full(2, x, np.float32)
    out = np.zeros((2, 4), np.float64)
    scale_and_shift[1, 2](a, out)
    assert out[0, 0] == float(x) * 2.0
    big = np.float32(16777216.0)  # 2**24: float32 + 1 rounds back to 2**24, float64 does not
    scale_and_shift[1, 1](np.array([big], np.float32), out)
    assert out[0, 1] == 16777217.0
    scale_and_shift[1, 1](a, out)
    assert out[0, 2] == float(x * np.float32(0.1)) != float(x) * 0.1
    assert out[0, 3] == float(x) * 0.1


@cpu_only
def test_the_tracer_runs_the_same_arithmetic():
    from course.trace import trace

    a = np.array([1.0] + [1e-8] * 63, np.float32)
    out = np.zeros(1, np.float64)
    trace(accumulate, 1, 1, a, out)
    assert out[0] == pytest.approx(1.0 + 63 * float(np.float32(1e-8)), rel=1e-12)


def test_the_rewrite_leaves_bools_big_ints_and_named_float32_alone():
    from course.engine.literals import numba_function

    def f(x):
        return x * 2.0, x + 1, True, 1180591620717411303424, float32(0.5) * x, (1, 2.0)  # 2**70 is no int64

    g = numba_function(f)
    assert numba_function(f) is g and numba_function(g) is g  # one copy, and no second rewrite
    r = g(np.float32(1.5))
    assert [type(v) for v in r[:2]] == [np.float64, np.float64]
    assert r[2] is True and type(r[3]) is int and type(r[4]) is np.float32 and r[5] == (1, 2.0)

    def plain(x):
        return x

    assert numba_function(plain) is plain


# --- the engine's result types are numba-cuda's (compile_ptx for sm_90) ---------------------------------------

CASES = [  # (body of a device function of x, x's type)
    ("return x * 2.0", "float32"), ("return x + 1", "float32"), ("return x * float32(0.5)", "float32"),
    ("return 2.0 * x - 1", "float32"), ("return x * 2", "int32"), ("return x + 1", "int32"),
    ("return x / 2", "int32"), ("return x // 2", "int32"), ("return x * 0.5", "float64"),
    ("s = 0.0\n    s += x\n    return s", "float32"), ("s = 0\n    s += x\n    return s", "float32"),
    ("s = float32(0)\n    s += x\n    return s", "float32"), ("return x > 0.5", "float32"),
    # module-level numbers (SCALE = 0.5, N = 3, HALF = float32(0.5)): numba-cuda freezes them as constants
    ("return x * SCALE", "float32"), ("return x + N", "float32"), ("return x + N", "int32"),
    ("return x * N", "int32"), ("return x // N", "int32"), ("return x * HALF", "float32"),
]

TYPES = HARDWARE_MODE_PRELUDE + r'''
import json
from numba import cuda, float32, types as nt
out = {}
for i, (body, arg) in enumerate(json.loads(sys.argv[2])):
    g = {"float32": float32, "SCALE": 0.5, "N": 3, "HALF": float32(0.5)}
    exec("def d(x):\n    %s\n" % body, g)
    try:
        _, res = cuda.compile_ptx(g["d"], (getattr(nt, arg),), device=True, cc=(9, 0))
        out[i] = str(res)
    except Exception as e:
        out[i] = "error: " + type(e).__name__
print("TYPES" + json.dumps(out))
'''


@cpu_only
@pytest.mark.timeout(300)
def test_literal_result_types_are_numba_cudas():
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    done = subprocess.run([sys.executable, "-c", TYPES, str(ROOT), json.dumps(CASES)], capture_output=True,
                          text=True, timeout=280, env=env)
    assert "TYPES" in done.stdout, done.stdout + done.stderr[-3000:]
    numba_says = json.loads(done.stdout.split("TYPES", 1)[1])
    if all(t.startswith("error") for t in numba_says.values()):
        pytest.skip("numba-cuda could not compile here (no NVVM): " + numba_says["0"])

    from course.engine.literals import numba_function

    values = {"float32": np.float32(1.25), "int32": np.int32(3), "float64": np.float64(1.25)}
    engine = {}
    for i, (body, arg) in enumerate(CASES):
        g = {"float32": np.float32, "SCALE": 0.5, "N": 3, "HALF": np.float32(0.5)}
        exec("def d(x):\n    %s\n" % body, g)
        r = numba_function(g["d"])(values[arg])
        engine[str(i)] = "bool" if isinstance(r, (bool, np.bool_)) else np.dtype(type(r)).name
    assert engine == numba_says, [(CASES[int(i)], engine[i], numba_says[i]) for i in engine if engine[i] != numba_says[i]]


# --- module-level numbers and numbers a factory closes over: numba-cuda freezes them as float64/int64 -----------

SCALE = 0.1
N = 3


@cuda.jit
def scale_by_global(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i] * SCALE + N  # float64 on the GPU: SCALE is a float64 constant, N an int64 one


@cpu_only
def test_module_level_numbers_promote_as_on_a_gpu_and_the_globals_are_left_alone():
    x = np.float32(16777217.0 / 3)
    a = np.full(2, x, np.float32)
    out = np.zeros(2, np.float64)
    scale_by_global[1, 2](a, out)
    assert out[0] == float(x) * 0.1 + 3 != float(x * np.float32(0.1) + np.float32(3))
    assert type(SCALE) is float and type(N) is int  # frozen in the kernel's code copy, not in the module
    globals()["SCALE"] = 0.3  # a later value is seen at the next launch
    try:
        scale_by_global[1, 2](a, out)
    finally:
        globals()["SCALE"] = 0.1
    assert out[0] == float(x) * 0.3 + 3


def test_globals_and_closure_numbers_frozen_in_the_copy_only():
    from course.engine.literals import numba_function

    g = {"SCALE": 0.5, "N": 3, "FLAG": True, "HALF": np.float32(0.5), "BIG": 2 ** 70}
    exec("def f(x):\n    return x * SCALE, x + N, FLAG, x * HALF, BIG, [x * SCALE for _ in range(1)][0]\n", g)
    r = numba_function(g["f"])(np.float32(1.5))
    assert [type(v) for v in r] == [np.float64, np.float64, bool, np.float32, int, np.float64]
    assert type(g["SCALE"]) is float and type(g["N"]) is int

    def factory(scale):
        def k(x):
            return x * scale

        return k

    k = factory(0.5)
    assert type(numba_function(k)(np.float32(1.5))) is np.float64
    assert type(k.__closure__[0].cell_contents) is float  # the factory's own cell is untouched

