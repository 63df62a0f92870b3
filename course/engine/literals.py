"""Literals typed as numba-cuda types them: a float constant is a float64, an integer constant an int64.

NumPy 2 treats a Python number beside a NumPy scalar as "weak" (NEP 50): ``x * 2.0``, ``x + 1`` and ``s = 0.0;
s += a[i]`` stay float32 for a float32 ``x`` or ``a``.  numba-cuda types the literals themselves (``2.0`` float64,
``1`` int64) and then promotes, so on a GPU all three are float64: ``x * 2.0`` is a double multiply (the PTX
holds ``mul.f64``) and the sum accumulates in float64.  The engine runs each kernel and device function with
its float and int constants replaced by NumPy float64 and int64 scalars, which NumPy promotes as numba-cuda
does; ``float32(0.5)``, as the course's kernels write it, stays float32.  The tracer's marked copy of a kernel
(:mod:`course.trace.markers`) goes through :func:`numba_code` too, so both run the same arithmetic.

Module-level numbers (``SCALE = 0.5``, ``N = 3``) and numbers a kernel factory closes over are frozen by
numba-cuda as float64/int64 constants when it compiles the kernel.  The copy does the same with the values the
globals and closure cells hold when it is made: each ``LOAD_GLOBAL`` of a float or int global becomes a
``LOAD_CONST`` of its float64/int64 value, and such a closure cell is replaced, in the copy only, by a new cell
holding the float64/int64.  The module's globals and the kernel's own cells are never written (the tracer
fingerprints the kernel from them while the explainer may be describing it on another thread); a copy is made
again when one of those values changes.
"""

from __future__ import annotations

import dis
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


_LOAD_GLOBAL = dis.opmap["LOAD_GLOBAL"]
_LOAD_CONST, _NOP, _EXTENDED_ARG = dis.opmap["LOAD_CONST"], dis.opmap["NOP"], dis.opmap["EXTENDED_ARG"]
_CACHES = dis._inline_cache_entries
_GLOBAL_CACHES = _CACHES[_LOAD_GLOBAL] if isinstance(_CACHES, list) else _CACHES.get("LOAD_GLOBAL", 0)


def _frozen(value):
    """The float64/int64 numba-cuda freezes a global or closure value as, else None (bools, NumPy scalars,
    ints beyond int64 and everything else stay as they are)."""
    c = _const(value) if type(value) in (float, int) else value
    return c if c is not value else None


def _numbers_loaded(code, g) -> tuple:
    """((name, value), ...) of the float and int globals ``code`` (and the functions defined in it) loads."""
    if g is None:
        return ()
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(ins.argval for ins in dis.get_instructions(c) if ins.opcode == _LOAD_GLOBAL)
        stack.extend(k for k in c.co_consts if type(k) is types.CodeType)
    return tuple(sorted((n, g[n]) for n in names if n in g and _frozen(g[n]) is not None))


def _freeze_globals(code, numbers: dict) -> types.CodeType:
    """``code`` with each ``LOAD_GLOBAL`` of a name in ``numbers`` (not one pushing NULL for a call, not one
    behind an EXTENDED_ARG) replaced by a ``LOAD_CONST`` of its value: same length, offsets and line table, the
    inline caches of the old instruction become NOPs."""
    consts, raw = list(code.co_consts), bytearray(code.co_code)
    index = {}
    for ins in dis.get_instructions(code):
        if ins.opcode != _LOAD_GLOBAL or ins.argval not in numbers or ins.arg & 1 or ins.arg > 0xFF:
            continue
        k = index.get(ins.argval)
        if k is None:
            k = index[ins.argval] = len(consts)
            consts.append(numbers[ins.argval])
        units = [(_NOP, 0)] * (1 + _GLOBAL_CACHES)
        if k <= 0xFF:
            units[0] = (_LOAD_CONST, k)
        elif k <= 0xFFFF and _GLOBAL_CACHES >= 1:
            units[0], units[1] = (_EXTENDED_ARG, k >> 8), (_LOAD_CONST, k & 0xFF)
        else:
            continue
        for j, (op, arg) in enumerate(units):
            raw[ins.offset + 2 * j: ins.offset + 2 * j + 2] = bytes((op, arg))
    if not index:
        return code
    return code.replace(co_code=bytes(raw), co_consts=tuple(consts))


def numba_code(code: types.CodeType, g: dict | None = None) -> types.CodeType:
    """``code`` with its float and int constants (and those of the functions defined in it) as float64/int64,
    and, given its globals ``g``, its float and int globals loaded as float64/int64 constants."""
    numbers = _numbers_loaded(code, g)
    key = (id(code), numbers)
    try:
        hit = _codes.get(key)
    except TypeError:  # an unhashable value cannot be here (floats and ints only); be safe anyway
        hit, key = None, (id(code), ())
    if hit is not None and hit[0] is code:
        return hit[1]
    frozen = {n: _frozen(v) for n, v in numbers}
    consts = tuple(numba_code(c, g) if type(c) is types.CodeType else _const(c) for c in code.co_consts)
    new = code if all(a is b for a, b in zip(consts, code.co_consts)) else code.replace(co_consts=consts)
    new = _freeze_globals(new, frozen) if frozen else new
    _codes[key] = (code, new)
    _codes[(id(new), numbers)] = (new, new)
    return new


def _frozen_closure(fn):
    """``fn``'s closure with each cell holding a float or int replaced by a new cell holding its float64/int64
    (``fn``'s own cells untouched), or the closure itself when no cell holds one."""
    cells = fn.__closure__
    if not cells:
        return cells
    new = []
    for cell in cells:
        try:
            value = _frozen(cell.cell_contents)
        except ValueError:  # an empty cell
            value = None
        new.append(cell if value is None else types.CellType(value))
    return cells if all(a is b for a, b in zip(new, cells)) else tuple(new)


def _cell_values(fn) -> tuple:
    out = []
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            v = None
        out.append((type(v), v) if type(v) in (float, int) else id(v))
    return tuple(out)


def numba_function(fn):
    """``fn`` run with :func:`numba_code` (the same globals and defaults; closure cells holding numbers frozen
    in new cells), or ``fn`` itself when nothing changes.  The same copy each time, until ``fn``'s code or
    the numbers it reads from its globals or closure change."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None:
        return fn
    key = (code, _numbers_loaded(code, fn.__globals__), _cell_values(fn))
    hit = _functions.get(fn)
    if hit is not None and hit[0] == key:
        return hit[1]
    if getattr(fn, "__wrapped__", None) is not None and _functions.get(fn.__wrapped__, (None, None))[1] is fn:
        return fn  # already a copy
    new_code = numba_code(code, fn.__globals__)
    closure = _frozen_closure(fn)
    if new_code is code and closure is fn.__closure__:
        new = fn
    else:
        new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__module__ = fn.__module__
        new.__doc__ = fn.__doc__
        new.__wrapped__ = fn
    _functions[fn] = (key, new)
    return new
