"""``math`` as a kernel sees it on the engine: typed as numba-cuda types it, so float32 stays float32.

Python's ``math.exp`` takes and returns a float64, so on the engine ``math.exp(x)`` of a float32 ``x`` was a
float64: ``exp(209)`` (about 2e90) did not overflow, where a GPU's float32 ``expf`` gives inf and a float32
softmax NaN.  numba-cuda's typing (``numba/cuda/cudamath.py``; checked with ``compile_ptx`` for sm_90 in
tests/test_engine_float32.py) is: a float32 argument gives a float32 result, a float64 or integer (or bool)
argument a float64 one — ``floor``, ``ceil`` and ``trunc`` included, which return a *float* in a kernel;
two-argument functions (``pow``, ``atan2``, ``hypot``, ``copysign``, ``fmod``, ``remainder``) stay float32
only when both arguments are float32 (``pow`` also for a float32 and an int32; a Python int literal is an
int64 and gives float64).  Values are Python's float64 results rounded to float32, within the GPU's
documented error (CUDA C++ Programming Guide, "Mathematical Functions": ``expf`` 2 ulp, ``sqrtf`` 0 ulp …);
where Python raises (``sqrt(-1)``, ``log(0)``, ``exp(1000)``) a GPU returns NaN, -inf or inf, and so does
the engine.  Every other name is Python's own ``math``.
"""

from __future__ import annotations

import math as _math
import types

import numpy as np

_F32 = np.float32
_F32_MAX = float(np.finfo(np.float32).max)

UNARY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "degrees", "erf", "erfc", "exp", "exp2",
         "expm1", "fabs", "floor", "ceil", "gamma", "lgamma", "log", "log10", "log1p", "log2", "radians", "sin",
         "sinh", "sqrt", "tan", "tanh", "trunc")
BINARY = ("atan2", "hypot", "copysign", "fmod", "remainder", "nextafter")

_NP = {"acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan,
       "atanh": np.arctanh, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log10": np.log10,
       "log1p": np.log1p, "log2": np.log2, "sqrt": np.sqrt, "cosh": np.cosh, "sinh": np.sinh, "atan2": np.arctan2,
       "hypot": np.hypot, "fmod": np.fmod, "remainder": np.remainder, "copysign": np.copysign, "pow": np.power}


def _is_f32(x) -> bool:
    return x.__class__ is _F32


def _to_f32(r: float):
    if -_F32_MAX <= r <= _F32_MAX or r != r:
        return _F32(r)
    return _F32(_math.copysign(_math.inf, r))  # beyond float32's range: inf, as the GPU's float32 function gives


def _fallback(name, dtype, *args):
    """Where Python's math raises (domain or range), NumPy's IEEE answer: NaN, inf or -inf, as on a GPU."""
    fn = _NP.get(name)
    if fn is None:
        if name == "gamma":
            return dtype(_math.inf if args[0] == 0 or args[0] > 0 else _math.nan)
        if name == "lgamma":
            return dtype(_math.inf)
        if name in ("acos", "asin"):
            return dtype(_math.nan)
        return dtype(_math.nan)
    with np.errstate(all="ignore"):
        return fn(*(dtype(a) for a in args))


def _unary(name):
    py = getattr(_math, name)
    to_float = name in ("floor", "ceil", "trunc")  # Python returns an int; numba-cuda a float of the argument's type

    def fn(x):
        if _is_f32(x):
            try:
                return _to_f32(py(float(x)))
            except (OverflowError, ValueError):
                return _F32(_fallback(name, _F32, x))
        try:
            r = py(x)
            return float(r) if to_float else r
        except (OverflowError, ValueError):
            return float(_fallback(name, np.float64, x))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"math.{name} as numba-cuda types it: float32 -> float32, float64 or an integer -> float64."
    return fn


def _binary(name):
    py = getattr(_math, name)

    def fn(x, y):
        f32 = _is_f32(x) and _is_f32(y)
        try:
            r = py(float(x) if f32 else x, float(y) if f32 else y)
        except (OverflowError, ValueError, ZeroDivisionError):
            return _fallback(name, _F32, x, y) if f32 else float(_fallback(name, np.float64, x, y))
        return _to_f32(r) if f32 else float(r)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"math.{name} as numba-cuda types it: float32 only when both arguments are float32."
    return fn


_I32_LIKE = (np.int8, np.int16, np.int32, np.uint8, np.uint16)


def pow(x, y):
    """math.pow as numba-cuda types it: (float32, float32) and (float32, int32) give float32, the rest float64."""
    f32 = _is_f32(x) and (_is_f32(y) or y.__class__ in _I32_LIKE)
    try:
        r = _math.pow(float(x), float(y))
    except (OverflowError, ValueError, ZeroDivisionError):
        dtype = _F32 if f32 else np.float64
        with np.errstate(all="ignore"):
            r = np.power(dtype(x), dtype(y))
        return r if f32 else float(r)
    return _to_f32(r) if f32 else r


class EngineMath(types.ModuleType):
    """The ``math`` module a kernel sees during a launch (numba-cuda's typing); other names are Python's math."""

    def __init__(self):
        super().__init__("math", __doc__)
        for name in UNARY:
            if hasattr(_math, name):
                setattr(self, name, _unary(name))
        for name in BINARY:
            if hasattr(_math, name):
                setattr(self, name, _binary(name))
        self.pow = pow

    def __getattr__(self, name):
        return getattr(_math, name)


MATH = EngineMath()

#: Python's math functions (``from math import exp``) and what a kernel calls instead during a launch.
REPLACEMENTS = {id(getattr(_math, name)): (getattr(_math, name), getattr(MATH, name))
                for name in UNARY + BINARY + ("pow",) if hasattr(_math, name)}
ENGINE_FUNCTIONS = frozenset(id(v) for _, v in REPLACEMENTS.values())
