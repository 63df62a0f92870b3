"""float32 stays float32 in ``math.*`` (issue 27), as numba-cuda types it, and a float32 overflow is inf as on a GPU.

Expected values come from IEEE float32 arithmetic (NumPy's float32, correctly rounded) and from numba-cuda's own
typing (``compile_ptx`` for sm_90 in a child process, where the CUDA compiler is installed), never from the engine.
"""

import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from course import backend
from course.trace.compiler import HARDWARE_MODE_PRELUDE
from numba import cuda

ROOT = pathlib.Path(__file__).resolve().parents[1]
cpu_only = pytest.mark.skipif(backend.on_gpu(), reason="checks the engine's exact float32 rounding")


@cuda.jit
def naive_softmax(x, out):
    # no max subtracted: exp(209) overflows float32 (max about 3.4e38), the sum is inf and inf / inf is NaN
    i = cuda.threadIdx.x
    s = math.exp(x[0]) + math.exp(x[1]) + math.exp(x[2])
    out[i] = math.exp(x[i]) / s


def test_a_float32_softmax_overflows_as_on_a_gpu():
    x = np.array([209, 1, 2], np.float32)
    out = np.zeros(3, np.float32)
    naive_softmax[1, 3](x, out)
    assert np.isnan(out[0]) and out[1] == 0 and out[2] == 0


@cuda.jit
def exp_into_float64(x, out):
    out[0] = math.exp(x[0])  # float32 in: a float32 result, widened only by the store
    out[1] = math.sqrt(x[0]) * math.sqrt(x[0])  # float32 * float32 stays float32
    out[2] = math.exp(x[0] * x[0])  # 14.0**2 = 196: exp overflows float32
    out[3] = math.sqrt(x[0] - x[0] - x[0])  # sqrt of a negative: NaN, not Python's ValueError
    out[4] = math.log(x[0] - x[0])  # log(0): -inf
    out[5] = math.pow(x[0], x[0])  # 14**14 = 1.1e16, rounded to float32
    out[6] = math.floor(x[0] / x[1])  # 14 / 4 = 3.5 -> 3.0


@cpu_only
def test_math_of_float32_is_float32():
    x = np.array([14, 4], np.float32)
    out = np.zeros(7, np.float64)
    exp_into_float64[1, 1](x, out)
    f = np.float32
    assert out[0] == float(f(math.exp(14.0))) != math.exp(14.0)
    assert out[1] == float(f(f(math.sqrt(14.0)) * f(math.sqrt(14.0))))
    assert out[2] == math.inf
    assert math.isnan(out[3]) and out[4] == -math.inf
    assert out[5] == float(f(14.0 ** 14)) != 14.0 ** 14
    assert out[6] == 3.0


@cuda.jit
def int_and_float64_args(n, y, out):
    out[0] = math.sqrt(n)  # an integer argument: float64 (numba-cuda's Math_unary: int64 -> float64)
    out[1] = math.exp(y)  # float64 stays float64
    out[2] = math.pow(y, 2)


def test_integer_and_float64_arguments_give_float64():
    out = np.zeros(3, np.float64)
    int_and_float64_args[1, 1](np.int32(2), np.float64(1.5), out)
    assert out[0] == math.sqrt(2) and out[1] == math.exp(1.5) and out[2] == 2.25


# --- the engine's result types are numba-cuda's (compile_ptx for sm_90) ---------------------------------------

CASES = [("exp", ("float32",)), ("exp", ("float64",)), ("exp", ("int32",)), ("log", ("float32",)),
         ("sqrt", ("float32",)), ("sqrt", ("int64",)), ("sin", ("float32",)), ("cos", ("float32",)),
         ("tanh", ("float32",)), ("fabs", ("float32",)), ("floor", ("float32",)), ("ceil", ("float32",)),
         ("floor", ("int32",)), ("ceil", ("float64",)), ("trunc", ("float32",)), ("log2", ("float32",)),
         ("expm1", ("float32",)), ("pow", ("float32", "float32")), ("pow", ("float32", "int32")),
         ("pow", ("float32", "int64")), ("pow", ("float32", "float64")), ("pow", ("int32", "int32")),
         ("atan2", ("float32", "float32")), ("atan2", ("float32", "int32")), ("hypot", ("float32", "float32")),
         ("fmod", ("float32", "float32")), ("copysign", ("float32", "float64")), ("isnan", ("float32",))]

TYPES = HARDWARE_MODE_PRELUDE + r'''
import json, math
from numba import cuda, types as nt
out = {}
for i, (name, args) in enumerate(json.loads(sys.argv[2])):
    g = {"math": math}
    params = ", ".join("a%d" % k for k in range(len(args)))
    exec("def d(%s):\n    return math.%s(%s)\n" % (params, name, params), g)
    try:
        _, res = cuda.compile_ptx(g["d"], tuple(getattr(nt, a) for a in args), device=True, cc=(9, 0))
        out[i] = str(res)
    except Exception as e:
        out[i] = "error: " + type(e).__name__
print("TYPES" + json.dumps(out))
'''


@cpu_only
@pytest.mark.timeout(300)
def test_math_result_types_are_numba_cudas():
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    done = subprocess.run([sys.executable, "-c", TYPES, str(ROOT), json.dumps(CASES)], capture_output=True,
                          text=True, timeout=280, env=env)
    assert "TYPES" in done.stdout, done.stdout + done.stderr[-3000:]
    numba_says = {i: t for i, t in json.loads(done.stdout.split("TYPES", 1)[1]).items()}
    if all(t.startswith("error") for t in numba_says.values()):
        pytest.skip("numba-cuda could not compile here (no NVVM): " + numba_says["0"])

    from course.engine.mathlib import MATH

    values = {"float32": np.float32(1.25), "float64": np.float64(1.25), "int32": np.int32(3), "int64": 3}
    engine = {}
    for i, (name, args) in enumerate(CASES):
        r = getattr(MATH, name)(*(values[a] for a in args))
        engine[str(i)] = {np.float32: "float32", np.float64: "float64", float: "float64", bool: "bool"}.get(
            type(r), type(r).__name__)
    assert {CASES[int(i)]: t for i, t in engine.items()} == {CASES[int(i)]: t for i, t in numba_says.items()}
