"""Literals typed as numba-cuda types them: a float constant is a float64, an integer constant an int64.

NumPy 2 treats a Python number beside a NumPy scalar as "weak" (NEP 50): ``x * 2.0``, ``x + 1`` and ``s = 0.0;
s += a[i]`` stay float32 for a float32 ``x`` or ``a``.  numba-cuda types the literals themselves (``2.0`` float64,
``1`` int64) and then promotes, so on a GPU all three are float64: ``x * 2.0`` is a double multiply (the PTX
holds ``mul.f64``) and the sum accumulates in float64.  The engine runs each kernel and device function with
its float and int constants replaced by NumPy float64 and int64 scalars, which NumPy promotes as numba-cuda
does; ``float32(0.5)``, as the course's kernels write it, stays float32.  The tracer's marked copy of a kernel
(:mod:`course.trace.markers`) goes through :func:`numba_code` too, so both run the same arithmetic.
"""

from __future__ import annotations

import types
import weakref

import numpy as np

_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_codes: dict = {}  # id(code) -> (code, its numba-typed copy)
_functions: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # function -> (its code, its copy)


def _const(c):
    if type(c) is float:
        return np.float64(c)
    if type(c) is int and _INT64[0] <= c <= _INT64[1]:
        return np.int64(c)
    if type(c) is types.CodeType:
        return numba_code(c)
    return c


def numba_code(code: types.CodeType) -> types.CodeType:
    """``code`` with its float and int constants (and those of the functions defined in it) as float64/int64."""
    hit = _codes.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    consts = tuple(_const(c) for c in code.co_consts)
    new = code if all(a is b for a, b in zip(consts, code.co_consts)) else code.replace(co_consts=consts)
    _codes[id(code)] = (code, new)
    _codes[id(new)] = (new, new)
    return new


def numba_function(fn):
    """``fn`` run with :func:`numba_code` (the same globals, closure cells and defaults), or ``fn`` itself when
    none of its constants change.  The same copy each time, until ``fn``'s code is replaced."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None:
        return fn
    hit = _functions.get(fn)
    if hit is not None and hit[0] is code:
        return hit[1]
    new_code = numba_code(code)
    if new_code is code:
        new = fn
    else:
        new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__module__ = fn.__module__
        new.__doc__ = fn.__doc__
        new.__wrapped__ = fn
    _functions[fn] = (code, new)
    return new
