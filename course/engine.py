"""The course's CPU engine: runs ordinary ``numba.cuda`` kernels on the CPU, fast and deterministically.

numba-cuda's simulator starts one OS thread per CUDA thread and busy-polls them; this engine keeps
numba's simulator objects (its ``@cuda.jit`` wrapper, device arrays, streams) but schedules the
threads of a block as greenlets (协程) in one OS thread, switching only where CUDA threads must wait
for each other: ``cuda.syncthreads()`` and the warp-level collectives (``shfl_*_sync``, ``ballot_sync``,
``syncwarp`` …), which numba's simulator lacks and this engine adds.

Order of execution (deterministic, documented so that a race can be replayed and explained):

- blocks run one after another, in linear order (x fastest, then y, then z);
- inside a block, threads start in linear thread-id order (x fastest) and each runs until it finishes
  or waits at a barrier or a warp collective; then the next one runs;
- when every live thread waits, pending warp collectives are resolved first (lanes resume in lane
  order), then the block barrier is released (threads resume in thread-id order).

A kernel in which no thread can wait for another (no barrier, no warp collective anywhere in its code
or its device functions, judged conservatively) runs its threads as plain calls, in the same order,
without greenlets: about three times faster for the simple kernels of the first chapters.

``launch(..., seed=k)`` (or ``with order(seed=k):``) runs the same launch in another legal order — blocks
and threads permuted — so that a race shows up as a different result.

Errors a GPU would report, or hang on, stop the launch with :class:`KernelError`, naming the kernel,
its source line, the block and the thread: out-of-bounds and negative indices, a barrier that not all
threads of a block reach, a warp collective that cannot complete, an exception in the kernel, a launch
configuration a real H200 refuses, an argument a kernel cannot take, and a launch that runs past its
time limit (``COURSE_TIME_LIMIT`` seconds, default 120).
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import ctypes
import dis
import functools
import math
import os
import sys
import threading
import time

import numpy as np
from greenlet import getcurrent, greenlet

from course import device as _dev

__all__ = [
    "KernelArray",
    "KernelError",
    "current_thread",
    "install",
    "launch",
    "order",
    "stock_simulator",
]

ENGINE_FILE = os.path.abspath(__file__)
FULL_MASK = 0xFFFFFFFF
DEFAULT_TIME_LIMIT = float(os.environ.get("COURSE_TIME_LIMIT", "120"))


class KernelError(RuntimeError):
    """A kernel launch failed on the CPU engine; the message says where (line, block, thread) and what to do."""

    def __init__(self, message, *, kernel=None, line=None, block=None, thread=None, cause=None):
        super().__init__(message)
        self.kernel = kernel
        self.line = line
        self.block = block
        self.thread = thread
        self.cause = cause


_typed_cache: dict = {}


def _typed(cls):
    """KernelError that is also a ``cls`` (IndexError, ValueError …), so ``except cls`` still catches it."""
    if cls is None or issubclass(KernelError, cls):
        return KernelError
    typed = _typed_cache.get(cls)
    if typed is None:
        try:
            typed = type("KernelError", (KernelError, cls), {"__module__": __name__})
        except TypeError:  # incompatible C layout (OSError, SyntaxError …)
            typed = KernelError
        _typed_cache[cls] = typed
    return typed


def _error(cls, message, **info):
    err = _typed(cls)(message, **info)
    return err


class _LaunchTimeout(BaseException):
    """Raised asynchronously inside a running launch by the watchdog."""


# --------------------------------------------------------------------------------------------------
# Thread state and the fake ``cuda`` module a kernel sees


class Dim3:
    """threadIdx / blockIdx / blockDim / gridDim: three ints with .x .y .z."""

    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def __iter__(self):
        yield self.x
        yield self.y
        yield self.z

    def __repr__(self):
        return f"({self.x}, {self.y}, {self.z})"


class ThreadState:
    """One CUDA thread of the running block: where it is, what it waits for, how far it got."""

    __slots__ = (
        "block", "thread", "tid", "warp", "lane", "block_linear", "barriers", "warp_syncs",
        "threadIdx", "g", "wait", "site", "value", "result", "mask", "args",
    )

    def __init__(self, block, block_linear, thread, tid):
        self.block = block
        self.block_linear = block_linear
        self.thread = thread
        self.threadIdx = Dim3(*thread)
        self.tid = tid
        self.warp = tid >> 5
        self.lane = tid & 31
        self.barriers = 0
        self.warp_syncs = 0
        self.g = None
        self.wait = None
        self.site = None
        self.value = None
        self.result = None
        self.mask = FULL_MASK
        self.args = None


class _Launch:
    """Everything one launch needs while it runs."""

    def __init__(self, fn, name, grid, block, dynshared, array_class, hooks):
        self.fn = fn
        self.name = name
        self.grid = grid
        self.blockdim = block
        self.dynshared = dynshared
        self.array_class = array_class
        self.hooks = hooks
        self.user_codes = set()
        self.global_refs = []  # (globals dict, name) for every global name the user code mentions
        self.closure_values = []  # values captured by the kernel's closures (other than device functions)
        self.direct = False  # threads run as plain calls: no thread can wait for another
        self.time_limit = DEFAULT_TIME_LIMIT
        self.global_addrs = {}
        self.next_global = 1 << 32


_state = threading.local()


def _launch_state() -> _Launch | None:
    return getattr(_state, "launch", None)


def current_thread() -> ThreadState:
    """The CUDA thread now running on the engine (only valid during a launch)."""
    mod = getattr(_state, "module", None)
    if mod is None:
        raise RuntimeError("current_thread() is only meaningful while a kernel runs on the engine")
    return mod._ts


class _Shared:
    """``cuda.shared``: one array per call site per block, uninitialised (NaN / 0xA5 bytes) as on a GPU."""

    def __init__(self, mod):
        self._mod = mod
        self.allocs = {}
        self.dyn = None
        self.next_offset = 0

    def reset(self):
        self.allocs = {}
        self.dyn = None
        self.next_offset = 0

    def array(self, shape, dtype, alignment=None):
        dtype = _as_dtype(dtype)
        mod = self._mod
        if shape == 0 or shape == (0,):
            if self.dyn is None:
                buf = np.empty(mod._launch.dynshared, dtype=np.uint8)
                buf.fill(0xA5)
                self.dyn = buf
                self.dyn_addr = self._alloc(buf.nbytes)
            count = self.dyn.nbytes // dtype.itemsize
            view = self.dyn[: count * dtype.itemsize].view(dtype)
            return mod._wrap(view, "shared", "dynamic shared", self.dyn_addr, root=view)
        frame = sys._getframe(1)
        key = (frame.f_code, _instr_offset(frame.f_code, frame.f_lasti))
        arr = self.allocs.get(key)
        if arr is None:
            data = np.empty(shape, dtype=dtype)
            _poison(data)
            if data.nbytes > _dev.MAX_STATIC_SHARED_PER_BLOCK:
                raise _UserError(
                    f"cuda.shared.array of {data.nbytes} bytes exceeds the {_dev.MAX_STATIC_SHARED_PER_BLOCK} "
                    "bytes of static shared memory a block may have; use a smaller tile"
                )
            name = _assigned_name(frame) or f"shared@line{frame.f_lineno}"
            arr = mod._wrap(data, "shared", name, self._alloc(data.nbytes), root=data)
            self.allocs[key] = arr
        return arr

    def _alloc(self, nbytes):
        offset = self.next_offset
        self.next_offset = (offset + nbytes + 15) & ~15
        if self.next_offset > _dev.MAX_SHARED_PER_BLOCK_OPTIN:
            raise _UserError(
                f"the block uses {self.next_offset} bytes of shared memory, more than the "
                f"{_dev.MAX_SHARED_PER_BLOCK_OPTIN} an H200 block can have"
            )
        return offset


class _Local:
    def __init__(self, mod):
        self._mod = mod

    def array(self, shape, dtype, alignment=None):
        data = np.empty(shape, dtype=_as_dtype(dtype))
        _poison(data)
        hooks = self._mod._launch.hooks
        if hooks is None or not getattr(hooks, "traces_local", False):
            # a thread's private array: a plain ndarray, as numba's simulator gives (fast; the course's
            # tracer records global and shared memory only), the same traced or not. Its out-of-bounds
            # indices still raise; negative ones wrap around as in NumPy.
            return data
        return self._mod._wrap(data, "local", "local", 0, root=data)


class _Const:
    def __init__(self, mod):
        self._mod = mod

    def array_like(self, ary):
        if isinstance(ary, KernelArray):
            return ary
        return self._mod._wrap(np.asarray(ary), "const", "const", 0, root=np.asarray(ary))


def _atomic_target(array):
    if not isinstance(array, KernelArray):
        raise _UserError("atomics need an array argument of the kernel (or a shared array) as their first argument")
    return array


class _Atomic:
    """``cuda.atomic``: each operation is one indivisible read-modify-write returning the old value."""

    def add(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: old + val)

    def sub(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: old - val)

    def and_(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: old & val)

    def or_(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: old | val)

    def xor(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: old ^ val)

    def inc(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: 0 if old >= val else old + 1)

    def dec(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: val if (old == 0 or old > val) else old - 1)

    def exch(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: val)

    def max(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: max(old, val))

    def min(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: min(old, val))

    def nanmax(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: np.nanmax([old, val]))

    def nanmin(self, array, index, val):
        return _atomic_target(array)._atomic(index, lambda old: np.nanmin([old, val]))

    def cas(self, array, index, old, val):
        return _atomic_target(array)._atomic(index, lambda cur: val if cur == old else cur)

    def compare_and_swap(self, array, old, val):
        arr = _atomic_target(array)
        return arr._atomic((0,) * arr.a.ndim, lambda cur: val if cur == old else cur)


class _GridGroup:
    def __init__(self, mod):
        self._mod = mod

    def sync(self):
        mod = self._mod
        if mod.gridDim.x * mod.gridDim.y * mod.gridDim.z > 1:
            raise _UserError(
                "grid-wide sync needs a cooperative launch; the CPU engine runs blocks one after another, "
                "so it supports grid.sync() only with a single block"
            )
        mod.syncthreads()


class _CG:
    def __init__(self, mod):
        self._mod = mod

    def this_grid(self):
        return _GridGroup(self._mod)


class EngineCUDAModule:
    """What the name ``cuda`` means inside a kernel running on the engine."""

    warpsize = 32
    WARP_SIZE = 32

    def __init__(self, launch: _Launch, fallback):
        self._launch = launch
        self._fallback = fallback
        self.gridDim = Dim3(*launch.grid)
        self.blockDim = Dim3(*launch.blockdim)
        self._bx, self._by, self._bz = launch.blockdim
        self.blockIdx = Dim3(0, 0, 0)
        self.threadIdx = Dim3(0, 0, 0)
        self.laneid = 0
        self._ts = None
        self._sched = None
        self.shared = _Shared(self)
        self.local = _Local(self)
        self.const = _Const(self)
        self.atomic = _Atomic()
        self.cg = _CG(self)

    def __getattr__(self, name):  # vector types, fp16, libdevice …: numba's simulator has them
        if self._fallback is not None:
            return getattr(self._fallback, name)
        raise AttributeError(name)

    # -- arrays ---------------------------------------------------------------------------------
    def _wrap(self, data, space, name, base_addr, root):
        arr = self._launch.array_class.__new__(self._launch.array_class)
        arr.a = data
        arr.space = space
        arr.name = name
        arr.root = root
        arr.base_addr = base_addr
        return arr

    # -- indices ---------------------------------------------------------------------------------
    def grid(self, n):
        t, b = self.threadIdx, self.blockIdx
        x = b.x * self._bx + t.x
        if n == 1:
            return x
        y = b.y * self._by + t.y
        if n == 2:
            return (x, y)
        if n == 3:
            return (x, y, b.z * self._bz + t.z)
        raise _UserError(f"cuda.grid({n}): the grid has 1, 2 or 3 dimensions")

    def gridsize(self, n):
        g = self.gridDim
        x = g.x * self._bx
        if n == 1:
            return x
        y = g.y * self._by
        if n == 2:
            return (x, y)
        if n == 3:
            return (x, y, g.z * self._bz)
        raise _UserError(f"cuda.gridsize({n}): the grid has 1, 2 or 3 dimensions")

    # -- block barrier ---------------------------------------------------------------------------
    def _block(self, kind, value=None, mask=FULL_MASK, args=None):
        if self._launch.direct:  # pragma: no cover - _never_blocks is conservative
            raise RuntimeError("internal error: a thread waited in a launch the engine judged barrier-free; "
                               "please report this kernel")
        ts = self._ts
        frame = sys._getframe(2)
        ts.wait = kind
        ts.site = (frame.f_code, frame.f_lineno)
        ts.value = value
        ts.mask = mask
        ts.args = args
        self._sched.switch(None)
        return ts.result

    def syncthreads(self):
        self._block("bar")

    def syncthreads_count(self, predicate):
        return self._block("bar_count", bool(predicate))

    def syncthreads_and(self, predicate):
        return self._block("bar_and", bool(predicate))

    def syncthreads_or(self, predicate):
        return self._block("bar_or", bool(predicate))

    def threadfence(self):
        pass

    def threadfence_block(self):
        pass

    def threadfence_system(self):
        pass

    # -- warp collectives (Volta+ semantics, see _resolve_warp) -------------------------------
    def syncwarp(self, mask=FULL_MASK):
        self._block("syncwarp", None, mask)

    def activemask(self):
        return self._block("activemask")

    def lanemask_lt(self):
        return np.uint32((1 << self._ts.lane) - 1)

    def shfl_sync(self, mask, value, src_lane, width=32):
        return self._block("shfl", value, mask, (src_lane, width))

    def shfl_up_sync(self, mask, value, delta, width=32):
        return self._block("shfl_up", value, mask, (delta, width))

    def shfl_down_sync(self, mask, value, delta, width=32):
        return self._block("shfl_down", value, mask, (delta, width))

    def shfl_xor_sync(self, mask, value, lane_mask, width=32):
        return self._block("shfl_xor", value, mask, (lane_mask, width))

    def ballot_sync(self, mask, predicate):
        return self._block("ballot", bool(predicate), mask)

    def all_sync(self, mask, predicate):
        return self._block("all", bool(predicate), mask)

    def any_sync(self, mask, predicate):
        return self._block("any", bool(predicate), mask)

    def eq_sync(self, mask, predicate):
        # vote.sync.uni: true when the predicate's truth value is the same on every lane (not the value)
        return self._block("eq", bool(predicate), mask)

    def match_any_sync(self, mask, value):
        return self._block("match_any", value, mask)

    def match_all_sync(self, mask, value):
        return self._block("match_all", value, mask)

    # -- bit and math intrinsics (as numba's simulator, integers as on the GPU) ------------------
    def popc(self, val):
        return bin(int(val) & 0xFFFFFFFFFFFFFFFF).count("1")

    def brev(self, val):
        bits = _int_bits(val)
        return type(val)(int(format(int(val) & ((1 << bits) - 1), f"0{bits}b")[::-1], 2))

    def clz(self, val):
        bits = _int_bits(val)
        v = int(val) & ((1 << bits) - 1)
        return bits - v.bit_length()

    def ffs(self, val):
        v = int(val) & 0xFFFFFFFFFFFFFFFF
        return (v & -v).bit_length()

    def fma(self, a, b, c):
        return a * b + c

    def cbrt(self, a):
        return np.cbrt(a)

    def selp(self, a, b, c):
        return b if a else c


# --------------------------------------------------------------------------------------------------
# Arrays


class _UserError(Exception):
    """A mistake in the kernel (bad index, bad shared size …), reported with line, block and thread."""

    kind = RuntimeError


class _UserIndexError(_UserError):
    kind = IndexError


_dtype_cache: dict = {}


def _as_dtype(dtype):
    try:
        return _dtype_cache[dtype]
    except (KeyError, TypeError):
        pass
    try:
        result = np.dtype(dtype)
    except TypeError:
        from numba.cuda.np import numpy_support

        result = numpy_support.as_dtype(dtype)
    try:
        _dtype_cache[dtype] = result
    except TypeError:  # unhashable
        pass
    return result


def _poison(data):
    # Uninitialised memory is not zero on a GPU; NaN / 0xA5 bytes make a read-before-write visible
    # and keep every run identical.
    if data.dtype.kind in "fc":
        data.fill(np.nan)
    else:
        data.view(np.uint8).reshape(-1).fill(0xA5)


class KernelArray:
    """An array as a kernel sees it: NumPy storage with CUDA's indexing rules (no negative wrap-around)."""

    __slots__ = ("a", "space", "name", "root", "base_addr")

    # ---- checked access, used by __getitem__/__setitem__ and atomics; subclasses hook around them
    def _get(self, idx):
        c = idx.__class__
        try:
            if c is tuple:
                if len(idx) == 2:  # the common 2-D case, without a call
                    i, j = idx
                    if i < 0 or j < 0:  # TypeError for a slice: checked one by one below
                        raise IndexError
                elif min(idx) < 0:
                    raise IndexError
            elif c is int:
                if idx < 0:
                    raise IndexError
            elif idx < 0:
                raise IndexError
            v = self.a[idx]
        except TypeError:
            return self._get_slow(idx)
        except IndexError as exc:
            raise _UserIndexError(self._index_message(idx, exc)) from None
        if v.__class__ is np.ndarray:
            return self._view(v)
        if v.__class__ is np.void:
            return _Record(v)
        return v

    def _get_slow(self, idx):
        try:
            if idx.__class__ is tuple:
                for i in idx:
                    if i.__class__ is not slice and i < 0:
                        raise IndexError
            elif idx.__class__ is not slice and idx < 0:
                raise IndexError
            v = self.a[idx]
        except (IndexError, TypeError) as exc:
            raise _UserIndexError(self._index_message(idx, exc)) from None
        if v.__class__ is np.ndarray:
            return self._view(v)
        if v.__class__ is np.void:
            return _Record(v)
        return v

    def _set(self, idx, value):
        c = idx.__class__
        try:
            if c is int:
                if idx < 0:
                    raise IndexError
            elif c is tuple:
                try:
                    if min(idx) < 0:
                        raise IndexError
                except TypeError:  # a slice in the tuple
                    for i in idx:
                        if i.__class__ is not slice and i < 0:
                            raise IndexError from None
            elif c is not slice and idx < 0:
                raise IndexError
            vc = value.__class__
            if vc is float or vc is int or vc in _NUMBER_TYPES:
                pass  # the commonest value: a number
            elif vc is self.__class__ or isinstance(value, KernelArray):
                value = value.a
            elif isinstance(value, _Record):  # the tracer's records are a subclass
                value = value._v
            self.a[idx] = value
        except (IndexError, TypeError) as exc:
            raise _UserIndexError(self._index_message(idx, exc)) from None

    __getitem__ = _get
    __setitem__ = _set

    def _atomic(self, idx, fn):
        old = self._get(idx)
        self._set(idx, fn(old))
        return old

    def _view(self, sub):
        arr = self.__class__.__new__(self.__class__)
        arr.a = sub
        arr.space = self.space
        arr.name = self.name
        arr.root = self.root
        arr.base_addr = self.base_addr
        return arr

    def _index_message(self, idx, exc):
        shown = idx if isinstance(idx, tuple) else (idx,)
        for i in shown:
            if isinstance(i, (float, np.floating)):
                return (
                    f"index {idx!r} into `{self.name}` is a float; array indices must be integers "
                    "(use // for integer division, or int(...))"
                )
        if any(not isinstance(i, slice) and _is_int(i) and i < 0 for i in shown):
            return (
                f"index {_fmt_idx(idx)} into `{self.name}` (shape {self.a.shape}) is negative; CUDA has no "
                "wrap-around like Python: a negative index reads or writes outside the array"
            )
        if isinstance(exc, IndexError):
            return (
                f"index {_fmt_idx(idx)} is out of bounds for `{self.name}` with shape {self.a.shape}; on a GPU "
                "this reads or writes memory that is not yours. Guard the access (e.g. `if i < n:`) or "
                "launch no more threads than there are elements"
            )
        return f"cannot index `{self.name}` (shape {self.a.shape}) with {idx!r}: {exc}"

    # ---- what kernels use besides indexing
    @property
    def shape(self):
        return self.a.shape

    @property
    def size(self):
        return self.a.size

    @property
    def ndim(self):
        return self.a.ndim

    @property
    def dtype(self):
        return self.a.dtype

    @property
    def strides(self):
        return self.a.strides

    @property
    def T(self):
        return self._view(self.a.T)

    def __len__(self):
        return len(self.a)

    def __iter__(self):
        for i in range(len(self.a)):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)

    def __getattr__(self, name):
        if name in ("a", "space", "name", "root", "base_addr"):
            raise AttributeError(name)
        attr = getattr(self.a, name)
        if attr.__class__ is np.ndarray:  # .real, .imag …: views of the same memory stay checked and traced
            return self._view(attr)
        if name in _VIEW_METHODS:
            def view_method(*args, **kwargs):
                res = attr(*args, **kwargs)
                return self._view(res) if isinstance(res, np.ndarray) and res.base is not None else res
            return view_method
        return attr

    def __array_ufunc__(self, ufunc, method, *args, **kwargs):
        args = tuple(x.a if isinstance(x, KernelArray) else x for x in args)
        out = kwargs.get("out")
        if out:
            kwargs["out"] = tuple(x.a if isinstance(x, KernelArray) else x for x in out)
        return getattr(ufunc, method)(*args, **kwargs)

    def __repr__(self):
        return f"<{self.space} array {self.name} shape={self.a.shape} dtype={self.a.dtype}>"


_NUMBER_TYPES = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.number) or t is np.bool_)


class _Record:
    """One element of a structured array: fields by attribute (``p.x``) or by key (``p['x']``), written through."""

    __slots__ = ("_v",)

    def __init__(self, v):
        object.__setattr__(self, "_v", v)

    def __getattr__(self, name):
        try:
            return self._v[name]
        except (KeyError, ValueError, IndexError):
            raise AttributeError(f"record has no field {name!r} (fields: {self._v.dtype.names})") from None

    def __setattr__(self, name, value):
        self._v[name] = value

    def __getitem__(self, key):
        return self._v[key]

    def __setitem__(self, key, value):
        self._v[key] = value


_VIEW_METHODS = frozenset({"reshape", "view", "ravel", "squeeze", "transpose", "swapaxes"})


def _is_int(i):
    return isinstance(i, (int, np.integer))


def _fmt_idx(idx):
    if isinstance(idx, tuple):
        return "[" + ", ".join(str(int(i)) if _is_int(i) else repr(i) for i in idx) + "]"
    return f"[{int(idx)}]" if _is_int(idx) else repr(idx)


# --------------------------------------------------------------------------------------------------
# Source sites


_offsets_cache: dict = {}


def _instr_offset(code, lasti):
    """The bytecode offset of the instruction that owns ``lasti`` (CPython 3.11 inline caches move it)."""
    offs = _offsets_cache.get(code)
    if offs is None:
        offs = [ins.offset for ins in dis.get_instructions(code)]
        _offsets_cache[code] = offs
    return offs[bisect.bisect_right(offs, lasti) - 1]


def _assigned_name(frame):
    """The variable a ``cuda.shared.array(...)`` call is assigned to, for messages (best effort)."""
    try:
        import linecache

        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno, frame.f_globals).strip()
        if "=" in line:
            name = line.split("=", 1)[0].strip()
            if name.isidentifier():
                return name
    except Exception:
        pass
    return None


# --------------------------------------------------------------------------------------------------
# Installing the kernel's world: swap ``cuda`` and device functions in the globals it reaches


def _cuda_module():
    return sys.modules.get("numba.cuda")


def _device_py_func(value):
    """The Python function behind a device function object (simulator or GPU dispatcher), else None."""
    cls = type(value).__name__
    if cls == "FakeCUDAKernel" and getattr(value, "_device", False):
        return value.fn
    if cls == "CUDADispatcher" and getattr(value, "targetoptions", {}).get("device"):
        return value.py_func
    return None


def _kernel_py_func(kernel):
    cls = type(kernel).__name__
    if cls == "FakeCUDAKernel":
        return kernel.fn
    if hasattr(kernel, "py_func"):
        return kernel.py_func
    if callable(kernel) and hasattr(kernel, "__code__"):
        return kernel
    raise KernelError(
        f"{kernel!r} is not a kernel: pass a function decorated with @cuda.jit (or a plain Python function)"
    )


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


def _never_blocks(lau, module) -> bool:
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
    values = list(lau.closure_values)
    for g, name in lau.global_refs:
        if name in g:
            values.append(g[name])
        elif not hasattr(builtins, name):
            return False
    for value in values:
        if value is module or value is np or value is _math or isinstance(value, _SAFE_GLOBAL_TYPES):
            continue
        if isinstance(value, type) or isinstance(value, (_types.BuiltinFunctionType, np.ufunc)):
            continue
        if isinstance(value, tuple) and all(isinstance(v, _SAFE_GLOBAL_TYPES) for v in value):
            continue
        if isinstance(value, _types.FunctionType) and value.__code__ in lau.user_codes:
            continue
        if isinstance(value, _types.FunctionType) and value.__module__ == "course.trace" \
                and not _BLOCKING_NAMES.intersection(value.__code__.co_names):
            continue  # the tracer's own recording helpers, injected into an instrumented kernel
        if type(value).__module__.startswith("numba"):  # numba types (float32 …) used as dtypes
            continue
        return False
    return True


class _Swapper:
    """Replaces, for one launch, ``cuda`` by the engine's module and device functions by their Python code."""

    def __init__(self, module, launch):
        self.module = module
        self.launch = launch
        self.saved = []  # (globals dict, name, original value)
        self.cells = []  # (closure cell, original value)
        self.seen = set()
        self.cuda = _cuda_module()

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
                inner = _device_py_func(value)
                if inner is None:
                    self.launch.closure_values.append(value)
                if inner is not None:
                    # a device function captured by a closure (kernel factories): on the GPU backend it is a
                    # compiled dispatcher that Python cannot call, so the cell holds its Python code meanwhile
                    self.cells.append((cell, value))
                    cell.cell_contents = inner
                    self.add(inner)
        if id(g) in self.seen:
            return
        self.seen.add(id(g))
        for name, value in list(g.items()):
            if value is self.cuda:
                self.saved.append((g, name, value))
                g[name] = self.module
            else:
                inner = _device_py_func(value)
                if inner is not None:
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


# --------------------------------------------------------------------------------------------------
# Launch


_order_seed = None


@contextlib.contextmanager
def order(seed=None):
    """Run the launches inside this block in another legal thread order (``seed=None``: the default order)."""
    global _order_seed
    saved = _order_seed
    _order_seed = seed
    try:
        yield
    finally:
        _order_seed = saved


def _normalise_dims(value, what):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims = (int(value), 1, 1)
    elif isinstance(value, tuple) and 1 <= len(value) <= 3:
        for v in value:
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise _error(TypeError, _dim_message(what, value))
        dims = tuple(int(v) for v in value) + (1,) * (3 - len(value))
    elif isinstance(value, tuple):
        raise _error(ValueError, _dim_message(what, value))
    else:
        raise _error(TypeError, _dim_message(what, value))
    if min(dims) < 1:
        raise _error(ValueError, f"{what} {value!r} has a dimension below 1: a launch needs at least one block of one thread")
    return dims


def _dim_message(what, value):
    hint = ""
    if isinstance(value, float) or (isinstance(value, tuple) and any(isinstance(v, float) for v in value)):
        hint = " (a float: compute it with integer division, e.g. (n + threads_per_block - 1) // threads_per_block)"
    # numba's own sentence first (its tests and users search for it), then the course's explanation
    short = what.split("(")[-1].rstrip(")") if "(" in what else what
    values = list(value) if isinstance(value, tuple) else [value]
    numba_says = (f"{short} must be a sequence of 1, 2 or 3 integers, got {values}" if isinstance(value, tuple)
                  and not 1 <= len(value) <= 3 else f"{short} must be a sequence of integers, got {values}")
    return f"{numba_says}: {what} must be an int or a tuple of 1 to 3 ints{hint}"


def _check_config(grid, block):
    threads = block[0] * block[1] * block[2]
    if threads > _dev.MAX_THREADS_PER_BLOCK:
        raise _error(ValueError,
            f"a block of {block[0]}×{block[1]}×{block[2]} = {threads} threads is more than the "
            f"{_dev.MAX_THREADS_PER_BLOCK} a block may have on an H200 (a GPU refuses this launch); use fewer threads "
            "per block and more blocks"
        )
    for axis, (b, lim) in enumerate(zip(block, _dev.MAX_BLOCK_DIM)):
        if b > lim:
            raise KernelError(f"blockDim.{'xyz'[axis]} = {b} exceeds the limit {lim}")
    for axis, (g, lim) in enumerate(zip(grid, _dev.MAX_GRID_DIM)):
        if g > lim:
            raise KernelError(f"gridDim.{'xyz'[axis]} = {g} exceeds the limit {lim}")


_SCALARS = (int, float, complex, bool, np.generic)


def _prepare_args(fn, args, launch, module):
    """Turn launch arguments into what the kernel sees; returns (kernel args, write-backs)."""
    names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    if len(args) != len(names) and not (fn.__code__.co_flags & 0x04):
        raise _error(TypeError,
            f"kernel `{launch.name}` takes {len(names)} argument(s) ({', '.join(names)}) but the launch passed {len(args)}"
        )
    out, writebacks = [], []
    for pos, arg in enumerate(args):
        name = names[pos] if pos < len(names) else f"arg{pos}"
        host = None
        if type(arg).__name__ in ("In", "Out", "InOut") and hasattr(arg, "to_device"):
            # cuda.In/Out/InOut: numba's own transfer rules (In copies in only, Out/InOut copy back)
            retr = []
            arg = arg.to_device(retr)
            writebacks.append((None, retr))
        if isinstance(arg, np.void):
            # a record passed by value: fields by attribute (r.x) or key (r['x']), written through
            out.append(_Record(arg))
            continue
        if type(arg).__name__ == "FakeCUDAArray":
            host = arg._ary
        elif isinstance(arg, np.ndarray):
            host = arg
        elif hasattr(arg, "copy_to_host") and hasattr(arg, "__cuda_array_interface__"):
            host = arg.copy_to_host()
            writebacks.append((arg, host))
        elif isinstance(arg, (_SCALARS, tuple)):
            out.append(arg)
            continue
        elif isinstance(arg, (list, dict, set, str, bytes)) or arg is None:
            kind = "None" if arg is None else type(arg).__name__
            raise KernelError(
                f"argument {pos + 1} (`{name}`) of kernel `{launch.name}` is a {kind}; a kernel takes NumPy "
                "arrays, device arrays (cuda.to_device) and numbers. "
                + ("Convert it with np.asarray(...) first." if kind in ("list", "tuple") else "")
            )
        else:
            out.append(arg)
            continue
        if host.ndim == 0:
            out.append(host)
            continue
        if host.dtype == object:
            raise KernelError(
                f"argument {pos + 1} (`{name}`) of kernel `{launch.name}` is an array of Python objects; "
                "use a numeric dtype (np.float32, np.int32 …)"
            )
        root = host
        while isinstance(root.base, np.ndarray):
            root = root.base
        key = id(root)
        base = launch.global_addrs.get(key)
        if base is None:
            base = launch.next_global
            launch.global_addrs[key] = base
            launch.next_global = (base + root.nbytes + 511) & ~255
        out.append(module._wrap(host, "global", name, base, root=root))
    return out, writebacks


_gpu_dispatch_patched = False


def _patch_gpu_dispatcher():
    """On the GPU backend, let a device function reached any way (``module.fn(...)``) run as Python in a launch."""
    global _gpu_dispatch_patched
    if _gpu_dispatch_patched:
        return
    try:
        from numba.cuda.dispatcher import CUDADispatcher
    except ImportError:  # pragma: no cover
        return
    original = CUDADispatcher.__call__

    def call(self, *args, **kwargs):
        lau = _launch_state()
        if lau is not None and self.targetoptions.get("device"):
            lau.swapper.add(self.py_func)
            return self.py_func(*args, **kwargs)
        return original(self, *args, **kwargs)

    CUDADispatcher.__call__ = call
    _gpu_dispatch_patched = True


def launch(kernel, griddim, blockdim, args, *, dynshared=0, hooks=None, seed=None, time_limit=None):
    """Run one kernel launch on the CPU engine (whatever the backend); arrays in ``args`` are updated in place."""
    if type(kernel).__name__ == "CUDADispatcher":
        _patch_gpu_dispatcher()
    if _launch_state() is not None:
        raise KernelError("a kernel cannot launch another kernel on the CPU engine (no dynamic parallelism)")
    fn = _kernel_py_func(kernel)
    name = getattr(fn, "__name__", "kernel")
    grid = _normalise_dims(griddim, "blocks_per_grid (griddim)")
    block = _normalise_dims(blockdim, "threads_per_block (blockdim)")
    _check_config(grid, block)
    if seed is None:
        seed = _order_seed
    array_class = getattr(hooks, "array_class", None) or KernelArray
    lau = _Launch(fn, name, grid, block, int(dynshared or 0), array_class, hooks)
    fallback = None
    try:
        from numba.cuda.simulator.kernelapi import FakeCUDAModule

        fallback = FakeCUDAModule(grid, block, 0)
    except Exception:
        pass
    module = EngineCUDAModule(lau, fallback)
    kargs, writebacks = _prepare_args(fn, tuple(args), lau, module)
    swapper = _Swapper(module, lau)
    lau.swapper = swapper
    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    lau.time_limit = limit
    watchdog = _Watchdog(limit)
    lau.watchdog = watchdog
    _state.launch = lau
    _state.module = module
    try:
        swapper.add(fn)
        lau.direct = _never_blocks(lau, module)
        watchdog.start()
        errstate = np.errstate(divide="raise") if getattr(kernel, "_debug", False) else contextlib.nullcontext()
        try:
            with errstate:
                _run_grid(lau, module, fn, kargs, seed)
        except _LaunchTimeout:  # landed between two threads, in the scheduler itself
            raise KernelError(
                f"kernel `{name}` ran past its time limit on the CPU engine ({limit:g} s). Use a smaller problem "
                "(course.pick(cpu=..., gpu=...)) or raise COURSE_TIME_LIMIT.", kernel=name
            ) from None
    finally:
        watchdog.cancel()
        swapper.restore()
        _state.launch = None
        _state.module = None
    for dev_arr, host in writebacks:
        if dev_arr is None:  # numba's writeback functions of a cuda.In/Out/InOut argument
            for wb in host:
                wb()
        else:
            dev_arr.copy_to_device(host)


_DONE = object()


class _WorkerPool:
    """Greenlets that run CUDA threads; a worker is reused as soon as its thread finishes.

    Starting and finishing a greenlet costs about 10 µs; switching to a live one about 0.5 µs. A kernel
    without barriers therefore runs all of a block's threads on one worker, and a kernel with barriers
    needs one worker per thread of a block, reused by every block of the launch.
    """

    def __init__(self, fn, kargs, sched):
        self.fn = fn
        self.kargs = kargs
        self.sched = sched
        self.free = []

    def _loop(self, ts):
        fn, kargs, sched = self.fn, self.kargs, self.sched
        while True:
            fn(*kargs)
            sched.switch(_DONE)

    def start(self, ts):
        if self.free:
            w = self.free.pop()
        else:
            w = greenlet(self._loop, self.sched)
            # contextvars (numpy's errstate among them) are per greenlet: start from the launcher's
            w.gr_context = contextvars.copy_context()
        ts.g = w
        return w.switch(ts)


def _run_grid(lau, module, fn, kargs, seed):
    gx, gy, gz = lau.grid
    bx, by, bz = lau.blockdim
    blocks = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
    threads = [(x, y, z) for z in range(bz) for y in range(by) for x in range(bx)]
    rng = np.random.default_rng(seed) if seed is not None else None
    block_order = list(range(len(blocks)))
    if rng is not None:
        rng.shuffle(block_order)
    hooks = lau.hooks
    begin = getattr(hooks, "begin_block", None)
    end = getattr(hooks, "end_block", None)
    pool = _WorkerPool(fn, kargs, getcurrent())
    module._sched = pool.sched
    for bl in block_order:
        b = blocks[bl]
        module.blockIdx = Dim3(*b)
        module.shared.reset()
        if begin:
            begin(b)
        _run_block(lau, module, pool, b, bl, threads, rng)
        if end:
            end(b)


def _run_block(lau, module, pool, block, block_linear, thread_coords, rng):
    states = [ThreadState(block, block_linear, t, i) for i, t in enumerate(thread_coords)]
    if rng is not None:
        perm = list(range(len(states)))
        rng.shuffle(perm)
        runq = [states[i] for i in perm]
        rank = {id(ts): r for r, ts in enumerate(runq)}
        sort_key = lambda t: rank[id(t)]  # noqa: E731
    else:
        runq = states
        sort_key = lambda t: t.tid  # noqa: E731
    if lau.direct:
        fn, kargs = pool.fn, pool.kargs
        for ts in runq:
            module._ts = ts
            module.threadIdx = ts.threadIdx
            module.laneid = ts.lane
            try:
                fn(*kargs)
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - every kernel failure becomes a KernelError
                raise _thread_error(lau, ts, exc) from None
            ts.wait = "exited"
        return
    live = len(states)
    on_barrier = getattr(lau.hooks, "on_barrier", None)
    free = pool.free
    waiting = []
    while True:
        for ts in runq:
            module._ts = ts
            module.threadIdx = ts.threadIdx
            module.laneid = ts.lane
            try:
                if ts.g is None:
                    res = pool.start(ts)
                else:
                    res = ts.g.switch()
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - every kernel failure becomes a KernelError
                raise _thread_error(lau, ts, exc) from None
            if res is _DONE:
                live -= 1
                ts.wait = "exited"
                free.append(ts.g)
                ts.g = None
            else:
                waiting.append(ts)
        if not waiting:
            return
        # 1. warp collectives whose lanes have all arrived
        runq = _resolve_warps(lau, waiting, states)
        if runq:
            waiting = [ts for ts in waiting if ts.wait is not None]
            runq.sort(key=sort_key)
            continue
        # 2. the block barrier, once every thread of the block waits at one
        at_bar = [ts for ts in waiting if ts.wait.startswith("bar")]
        if len(at_bar) == len(waiting) == live and live == len(states):
            sites = {ts.site for ts in at_bar}
            if len(sites) > 1:
                raise _divergence_error(lau, at_bar)
            kind = at_bar[0].wait
            if kind != "bar":
                vals = [ts.value for ts in at_bar]
                res = (sum(vals) if kind == "bar_count" else int(all(vals)) if kind == "bar_and" else int(any(vals)))
            else:
                res = None
            for ts in at_bar:
                ts.barriers += 1
                ts.wait = None
                ts.result = res
            if on_barrier:
                on_barrier(block)
            runq = sorted(at_bar, key=sort_key)
            waiting = []
            continue
        raise _stuck_error(lau, waiting, states, live)


def _resolve_warps(lau, waiting, states):
    """Complete every warp collective whose participating lanes have all arrived; return the lanes to resume."""
    resumed = []
    groups = {}
    for ts in waiting:
        if ts.wait is not None and not ts.wait.startswith("bar"):
            key = (ts.warp, ts.wait, ts.site if ts.wait != "syncwarp" else None)
            groups.setdefault(key, []).append(ts)
    if not groups:
        return resumed
    for (warp, kind, _site), lanes in groups.items():
        base = warp * 32
        warp_states = states[base : base + 32]
        if kind == "activemask":
            # every live lane of the warp waits somewhere: those waiting here are the converged set
            if any(t.wait is None for t in warp_states):
                continue
            mask = 0
            for t in lanes:
                mask |= 1 << t.lane
            for t in lanes:
                t.result = np.uint32(mask)
        else:
            mask = lanes[0].mask & FULL_MASK
            here = {t.lane for t in lanes}
            needed = [t for t in warp_states if (mask >> t.lane) & 1 and t.wait != "exited"]
            if any(t.lane not in here for t in needed):
                continue
            _compute_collective(kind, lanes, mask, warp_states)
        for t in lanes:
            t.warp_syncs += 1
            t.wait = None
        resumed.extend(lanes)
    return resumed


def _int_bits(val):
    """Width of an integer for clz/brev: its NumPy size; a Python int counts as 32 bits, as in numba's
    simulator (a kernel with an explicit int32 signature receives Python ints for int32 arguments)."""
    return 8 * val.itemsize if hasattr(val, "itemsize") else 32


def _i32(bits):
    return np.uint32(bits).view(np.int32)


def _compute_collective(kind, lanes, mask, warp_states):
    by_lane = {t.lane: t for t in lanes}
    if kind == "syncwarp":
        for t in lanes:
            t.result = None
        return
    if kind.startswith("shfl"):
        for t in lanes:
            arg, width = t.args
            width = int(width)
            seg = t.lane & ~(width - 1)
            if kind == "shfl":
                src = seg + (int(arg) % width)
            elif kind == "shfl_up":
                src = t.lane - int(arg)
                if src < seg:
                    src = t.lane
            elif kind == "shfl_down":
                src = t.lane + int(arg)
                if src >= seg + width:
                    src = t.lane
            else:
                src = t.lane ^ int(arg)
                if (src & ~(width - 1)) > seg:
                    src = t.lane
            # A source lane that does not take part (not in mask, or exited) gives an undefined value on a
            # GPU; the engine returns the caller's own value, deterministically.
            source = by_lane.get(src & 31, t)
            t.result = source.value
        return
    preds = [t.value for t in lanes]
    # result types as numba-cuda types them on the GPU: ballot and match masks are int32 bit patterns,
    # votes are booleans, activemask is uint32
    if kind == "ballot":
        bits = 0
        for t in lanes:
            if t.value:
                bits |= 1 << t.lane
        res = _i32(bits)
    elif kind == "all":
        res = all(preds)
    elif kind == "any":
        res = any(preds)
    elif kind == "eq":
        res = all(p == preds[0] for p in preds)
    elif kind == "match_any":
        for t in lanes:
            bits = 0
            for u in lanes:
                if u.value == t.value:
                    bits |= 1 << u.lane
            t.result = _i32(bits)
        return
    elif kind == "match_all":
        same = all(p == preds[0] for p in preds)
        bits = 0
        for t in lanes:
            bits |= 1 << t.lane
        res = (_i32(bits if same else 0), same)
    else:  # pragma: no cover - every kind above is produced by EngineCUDAModule
        raise AssertionError(kind)
    for t in lanes:
        t.result = res


# --------------------------------------------------------------------------------------------------
# Messages


def _user_frames(lau, tb):
    frames = []
    while tb is not None:
        if tb.tb_frame.f_code in lau.user_codes:
            frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _where(code, line):
    import linecache

    src = linecache.getline(code.co_filename, line).strip()
    fname = code.co_filename
    if "ipykernel" in fname or fname.startswith("<"):
        place = f"line {line} of the notebook cell defining `{code.co_name}`"
    else:
        place = f"{os.path.relpath(fname) if not os.path.isabs(fname) or fname.startswith(os.getcwd()) else fname}:{line} (in `{code.co_name}`)"
    return place, src


def _thread_desc(ts):
    return f"block {tuple(ts.block)}, thread {tuple(ts.thread)}"


def _thread_error(lau, ts, exc):
    """The KernelError a launch raises when thread ``ts`` stopped with ``exc``."""
    if isinstance(exc, KernelError):
        return exc
    return _launch_error(lau, ts, exc, timeout=isinstance(exc, _LaunchTimeout))


def _launch_error(lau, ts, exc, timeout=False):
    tb = exc.__traceback__ if exc is not None else None
    frames = _user_frames(lau, tb) if tb is not None else []
    lines = []
    line_no = None
    if frames:
        code, line_no = frames[-1]
        place, src = _where(code, line_no)
        lines.append(f"at {place}:")
        if src:
            lines.append(f"    {src}")
        if len(frames) > 1:
            kcode, kline = frames[0]
            kplace, ksrc = _where(kcode, kline)
            lines.append(f"  called from {kplace}:  {ksrc}")
    where = "\n".join(lines)
    if timeout:
        head = (
            f"kernel `{lau.name}` ran past its time limit on the CPU engine ({lau.time_limit:g} s); "
            f"{_thread_desc(ts)} was running"
        )
        advice = (
            "A loop that never ends (check its condition and step) looks like this; so does a problem too large "
            "for the CPU: use a smaller size (course.pick(cpu=..., gpu=...)) or raise COURSE_TIME_LIMIT."
        )
        return KernelError(f"{head}\n{where}\n{advice}", kernel=lau.name, line=line_no, block=ts.block, thread=ts.thread)
    if isinstance(exc, _UserError):
        kind, detail, cls = "error", str(exc), exc.kind
    else:
        kind, detail, cls = type(exc).__name__, str(exc) or type(exc).__name__, type(exc)
    if not isinstance(exc, _UserError):  # an exception the kernel raised: its text as numba's simulator puts it
        tag = f"tid={list(ts.thread)} ctaid={list(ts.block)}"
        detail = f"{tag}: {exc}" if str(exc) else tag
    msg = f"{kind} in kernel `{lau.name}`, {_thread_desc(ts)}\n{where}\n{detail}"
    return _error(cls, msg, kernel=lau.name, line=line_no, block=ts.block, thread=ts.thread, cause=exc)


def _divergence_error(lau, at_bar):
    by_site = {}
    for ts in at_bar:
        by_site.setdefault(ts.site, []).append(ts)
    parts = []
    for (code, line), tss in by_site.items():
        place, src = _where(code, line)
        parts.append(f"  {len(tss)} thread(s), e.g. thread {tuple(tss[0].thread)}, wait at {place}: {src}")
    ts = at_bar[0]
    return KernelError(
        f"barrier divergence (同步分歧) in kernel `{lau.name}`, block {tuple(ts.block)}: threads of one block "
        "wait at different cuda.syncthreads() calls, which on a GPU hangs or corrupts data:\n"
        + "\n".join(parts)
        + "\nEvery thread of a block must reach the same syncthreads() the same number of times: keep barriers out of "
        "`if` branches that depend on the thread.",
        kernel=lau.name, block=ts.block, thread=ts.thread,
    )


def _stuck_error(lau, waiting, states, live):
    exited = [ts for ts in states if ts.wait == "exited"]
    sample = waiting[0]
    code, line = sample.site
    place, src = _where(code, line)
    what = "cuda.syncthreads()" if sample.wait.startswith("bar") else f"a warp collective ({sample.wait})"
    if exited and sample.wait.startswith("bar"):
        first = exited[0]
        reason = (
            f"{len(exited)} thread(s) of the block (e.g. thread {tuple(first.thread)}) finished without reaching it, "
            "so on a GPU the barrier would wait for them forever (or let the block continue with undefined results). "
            "This happens when a barrier sits inside an `if` that some threads skip, or after an early `return`: "
            "keep every thread alive until after the last syncthreads() and guard only the memory accesses."
        )
    else:
        missing = []
        for ts in waiting:
            if not ts.wait.startswith("bar"):
                base = ts.warp * 32
                for t in states[base : base + 32]:
                    if (ts.mask >> t.lane) & 1 and t.wait not in ("exited",) and (t.wait != ts.wait or t.site != ts.site):
                        missing.append(t)
                break
        detail = ""
        if missing:
            m = missing[0]
            mplace = _where(*m.site)[0] if m.site else "elsewhere"
            detail = f" Lane {m.lane} (thread {tuple(m.thread)}) named in the mask waits at {mplace} instead."
        reason = (
            "not every thread named by its mask arrives there, so on a GPU this would hang." + detail +
            " All lanes in the mask must execute the same collective; pass cuda.activemask() or a mask of the lanes that really arrive."
        )
    return KernelError(
        f"deadlock in kernel `{lau.name}`, block {tuple(sample.block)}: {len(waiting)} thread(s), e.g. thread "
        f"{tuple(sample.thread)}, wait at {what} ({place}: {src}), but {reason}",
        kernel=lau.name, line=line, block=sample.block, thread=sample.thread,
    )


# --------------------------------------------------------------------------------------------------
# Watchdog: stops a launch that runs too long, even inside a `while True:` with no barrier


@contextlib.contextmanager
def clock_paused():
    """Stop the running launch's time limit for the duration (no-op outside a launch)."""
    lau = getattr(_state, "launch", None)
    wd = getattr(lau, "watchdog", None) if lau is not None else None
    remaining = wd.pause() if wd is not None else None
    try:
        yield
    finally:
        if wd is not None:
            wd.resume(remaining)


class _Watchdog:
    def __init__(self, limit):
        self.limit = limit
        self.thread_id = threading.get_ident()
        self.lock = threading.Lock()
        self.active = False
        self.fired = False
        self.timer = None

    def start(self, seconds=None):
        if not self.limit or self.limit <= 0 or math.isinf(self.limit):
            return
        seconds = self.limit if seconds is None else seconds
        self.active = True
        self.deadline = time.monotonic() + seconds
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def pause(self):
        """Stop the clock (the tracer compiling the kernel for its facts is not the kernel's time)."""
        if self.timer is None:
            return None
        with self.lock:
            if not self.active:
                return None
            self.active = False
            self.timer.cancel()
            return max(0.0, self.deadline - time.monotonic())

    def resume(self, remaining):
        if remaining is not None and not self.fired:
            self.start(remaining)

    def _fire(self):
        with self.lock:
            if self.active:
                self.fired = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), ctypes.py_object(_LaunchTimeout))

    def cancel(self):
        if self.timer is None:
            return
        try:
            with self.lock:
                self.active = False
                self.timer.cancel()
            if self.fired:
                # The exception was raised in the launch (the usual case) or is still pending: a few
                # backward jumps let a pending one land here. Clearing it with SetAsyncExc(id, NULL)
                # instead leaves CPython 3.11's eval breaker set for good, which hangs a later
                # sys.settrace session (seen: the tracer's line fallback after a timed-out launch).
                for _ in range(10000):
                    pass
        except _LaunchTimeout:
            pass


# --------------------------------------------------------------------------------------------------
# Hooking into numba's simulator


_ENABLED = True
_installed = False
_orig_call = None


@contextlib.contextmanager
def stock_simulator():
    """Inside this block, launches run on numba's simulator exactly as shipped (for comparisons)."""
    global _ENABLED
    saved = _ENABLED
    _ENABLED = False
    try:
        yield
    finally:
        _ENABLED = saved


def _patched_call(self, *args):
    lau = _launch_state()
    if lau is not None and _ENABLED:
        # a device function reached through a closure or an attribute: swap its globals for this launch too
        lau.swapper.add(self.fn)
        return self.fn(*args)
    if self._device or not _ENABLED:
        return _orig_call(self, *args)
    if self.grid_dim is None or self.block_dim is None:
        raise _error(ValueError,
            f"launch configuration was not specified: kernel `{self.fn.__name__}` was called without one; write "
            f"{self.fn.__name__}[blocks_per_grid, threads_per_block](...)"
        )
    grid, block = self.grid_dim, self.block_dim
    if self.extensions:  # numba's argument extensions (prepare_args), applied as numba's simulator does
        retr = []
        args = tuple(functools.reduce(lambda tv, ext: ext.prepare_args(*tv, stream=0, retr=retr),
                                      self.extensions, (None, a))[1] for a in args)
    return launch(self, grid, block, args, dynshared=self.dynshared_size)


def _patched_getitem(self, configuration):
    if not isinstance(configuration, tuple) or len(configuration) < 2:
        raise _error(ValueError,
            f"a launch needs kernel[blocks_per_grid, threads_per_block]; got kernel[{configuration!r}]"
        )
    self.grid_dim = _normalise_dims(configuration[0], "blocks_per_grid (griddim)")
    self.block_dim = _normalise_dims(configuration[1], "threads_per_block (blockdim)")
    self.dynshared_size = configuration[3] if len(configuration) == 4 else 0
    return self


def install():
    """Make ordinary ``kernel[griddim, blockdim](...)`` launches run on this engine (the ``cpu`` backend)."""
    global _installed, _orig_call
    if _installed:
        return
    from numba.cuda.simulator import kernel as simkernel

    _orig_call = simkernel.FakeCUDAKernel.__call__
    _orig_getitem = simkernel.FakeCUDAKernel.__getitem__

    def getitem(self, configuration):
        if not _ENABLED:
            return _orig_getitem(self, configuration)
        return _patched_getitem(self, configuration)

    _orig_forall = simkernel.FakeCUDAKernel.forall

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        if _ENABLED and ntasks == 0:  # no work: numba launches nothing (numba-cuda issue 5017)
            return lambda *args: None
        return _orig_forall(self, ntasks, tpb, stream, sharedmem)

    simkernel.FakeCUDAKernel.__call__ = _patched_call
    simkernel.FakeCUDAKernel.__getitem__ = getitem
    simkernel.FakeCUDAKernel.forall = forall
    _patch_device_facts()
    _installed = True


def _patch_device_facts():
    """Give the simulated device the attributes a learner queries (modelled on the H200), and timing events."""
    try:
        from numba.cuda.simulator.cudadrv import devices
    except ImportError:  # pragma: no cover
        return
    facts = {
        "MAX_THREADS_PER_BLOCK": _dev.MAX_THREADS_PER_BLOCK,
        "MAX_BLOCK_DIM_X": _dev.MAX_BLOCK_DIM[0],
        "MAX_BLOCK_DIM_Y": _dev.MAX_BLOCK_DIM[1],
        "MAX_BLOCK_DIM_Z": _dev.MAX_BLOCK_DIM[2],
        "MAX_GRID_DIM_X": _dev.MAX_GRID_DIM[0],
        "MAX_GRID_DIM_Y": _dev.MAX_GRID_DIM[1],
        "MAX_GRID_DIM_Z": _dev.MAX_GRID_DIM[2],
        "MAX_SHARED_MEMORY_PER_BLOCK": _dev.MAX_STATIC_SHARED_PER_BLOCK,
        "MULTIPROCESSOR_COUNT": 132,
        "WARP_SIZE": _dev.WARP_SIZE,
        "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
        "MAX_REGISTERS_PER_BLOCK": 65536,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
    }
    cls = devices.FakeCUDADevice
    for key, value in facts.items():
        if not hasattr(cls, key):
            setattr(cls, key, value)
    if not hasattr(cls, "name"):
        cls.name = "CPU engine (modelled on NVIDIA H200)"
