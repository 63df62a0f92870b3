"""Swapping CUDA into a kernel's globals: for one launch, ``cuda`` means the engine's module and device
functions their Python code; and whether any thread of a launch can wait for another."""

from __future__ import annotations

import dis

import numpy as np

import sys
import types

from course.engine import literals, mathlib
from course.engine.simulator import cuda_module, device_py_func

# Installing the kernel's world: swap ``cuda`` and device functions in the globals it reaches


# Names through which a CUDA thread can wait for others (module methods and cooperative groups).
_BLOCKING_NAMES = frozenset({
    "syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or", "syncwarp", "activemask",
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot_sync", "all_sync", "any_sync",
    "eq_sync", "match_any_sync", "match_all_sync", "sync", "this_grid", "cg",
})
_SAFE_GLOBAL_TYPES = (int, float, complex, bool, str, bytes, np.generic, np.dtype, type(None))


def _global_names(code):
    """The names a code object loads as globals (attribute names are in co_names too, but not here)."""
    return {ins.argval for ins in dis.get_instructions(code) if ins.opname == "LOAD_GLOBAL"}


def never_blocks(lau, module) -> bool:
    """True when no thread of this launch can wait for another (no barrier, no warp collective).

    Conservative: every global a kernel or device function names must be the ``cuda`` module, NumPy,
    ``math``, a number, a dtype or type, a builtin, or a device function already found; anything else
    (another module, an object whose attributes could lead to a device function) means "may block".
    """
    import builtins
    import math as _math
    import types as _types

    for code in lau.user_codes:
        if _BLOCKING_NAMES.intersection(code.co_names):
            return False
    helpers = tuple(getattr(lau.hooks, "helpers", ()) or ())
    values = list(lau.closure_values)
    for g, name in lau.global_refs:
        if name in g:
            values.append(g[name])
        elif not hasattr(builtins, name):
            return False
    for value in values:
        if value is module or value is np or value is _math or isinstance(value, _SAFE_GLOBAL_TYPES):
            continue
        if value is mathlib.MATH or id(value) in mathlib.ENGINE_FUNCTIONS:
            continue
        if isinstance(value, type) or isinstance(value, (_types.BuiltinFunctionType, np.ufunc)):
            continue
        if isinstance(value, tuple) and all(isinstance(v, _SAFE_GLOBAL_TYPES) for v in value):
            continue
        if isinstance(value, _types.FunctionType) and value.__code__ in lau.user_codes:
            continue
        if isinstance(value, _types.FunctionType) and any(value is h for h in helpers) \
                and not _BLOCKING_NAMES.intersection(value.__code__.co_names):
            continue  # the observer's own helpers (LaunchHooks.helpers), injected into an instrumented kernel
        if type(value).__module__.startswith("numba"):  # numba types (float32 …) used as dtypes
            continue
        return False
    return True


_MATH_MODULE = sys.modules["math"]


class NumbaProxy(types.ModuleType):
    """The ``numba`` package as a kernel sees it during a launch: ``numba.cuda`` is the engine's module, every
    other attribute numba's own (so ``numba.cuda.threadIdx.x`` and ``numba.float32`` both work)."""

    def __init__(self, numba, module):
        super().__init__(numba.__name__)
        self.__dict__["_numba"] = numba
        self.__dict__["cuda"] = module

    def __getattr__(self, name):
        return getattr(self.__dict__["_numba"], name)


class Swapper:
    """Replaces, for one launch, ``cuda`` by the engine's module and device functions by their Python code."""

    def __init__(self, module, launch):
        self.module = module
        self.launch = launch
        self.saved = []  # (globals dict, name, original value)
        self.cells = []  # (closure cell, original value)
        self.seen = set()
        self.cuda = cuda_module()
        self.numba = sys.modules.get("numba")
        self._proxy = None

    def _replacement(self, value):
        """What a global or a closure cell holding ``value`` holds during the launch (None: leave it)."""
        if value is None:
            return None
        if value is self.cuda:
            return self.module
        if value is self.numba:
            if self._proxy is None:
                self._proxy = NumbaProxy(self.numba, self.module)
            return self._proxy
        if value is _MATH_MODULE:  # math typed as numba-cuda types it: float32 in, float32 out
            return mathlib.MATH
        hit = mathlib.REPLACEMENTS.get(id(value))
        if hit is not None and hit[0] is value:  # `from math import exp`
            return hit[1]
        return None

    def add(self, fn):
        code = fn.__code__
        if code in self.launch.user_codes and id(fn.__globals__) in self.seen:
            return
        self.launch.user_codes.add(code)
        stack = [code]
        while stack:  # nested functions / closures defined in the kernel
            c = stack.pop()
            self.launch.global_refs.extend((fn.__globals__, n) for n in _global_names(c))
            for const in c.co_consts:
                if hasattr(const, "co_code"):
                    self.launch.user_codes.add(const)
                    stack.append(const)
        g = fn.__globals__
        if fn.__closure__:
            for cell in fn.__closure__:
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                swap = self._replacement(value)
                if swap is not None:
                    # CUDA reached through a closure: a factory that takes the cuda module (GPU-Puzzles style)
                    # and returns the kernel body, or one that closes over the numba package
                    self.cells.append((cell, value))
                    cell.cell_contents = swap
                    self.launch.closure_values.append(swap)
                    continue
                inner = device_py_func(value)
                if inner is None:
                    self.launch.closure_values.append(value)
                if inner is not None:
                    # a device function captured by a closure (kernel factories): on the GPU backend it is a
                    # compiled dispatcher that Python cannot call, so the cell holds its Python code meanwhile
                    inner = literals.numba_function(inner)
                    self.cells.append((cell, value))
                    cell.cell_contents = inner
                    self.add(inner)
        if id(g) in self.seen:
            return
        self.seen.add(id(g))
        for name, value in list(g.items()):
            swap = self._replacement(value)
            if swap is not None:  # `cuda`, an alias of it (`nc`), or the numba package (`numba.cuda.grid(1)`)
                self.saved.append((g, name, value))
                g[name] = swap
            else:
                inner = device_py_func(value)
                if inner is not None:
                    inner = literals.numba_function(inner)
                    self.saved.append((g, name, value))
                    g[name] = inner
                    self.add(inner)

    def restore(self):
        for g, name, value in reversed(self.saved):
            g[name] = value
        self.saved.clear()
        for cell, value in reversed(self.cells):
            cell.cell_contents = value
        self.cells.clear()
