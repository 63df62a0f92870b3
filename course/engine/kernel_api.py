"""The kernel API: thread state and the ``cuda`` module a kernel sees while it runs on the engine."""

from __future__ import annotations

import bisect
import dis
import os
import sys
import threading

import numpy as np

from course import device as _dev
from course.engine.arrays import KernelArray, as_dtype, poison
from course.engine import shapes
from course.engine.messages import UserError

FULL_MASK = 0xFFFFFFFF
DEFAULT_TIME_LIMIT = float(os.environ.get("COURSE_TIME_LIMIT", "120"))


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


class Launch:
    """Everything one launch needs while it runs."""

    def __init__(self, fn, name, grid, block, dynshared, array_class, hooks, only_blocks=None):
        self.fn = fn
        self.only_blocks = only_blocks  # linear block indices to run (a sample), or None: the whole grid
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
        self.next_sync = 0  # the next syncwarp event id (every resolved syncwarp() is one event)
        self.view = None  # the LaunchView handed to the hooks (course.engine.hooks): set by the launcher
        self.on_syncwarp = None  # the hooks' on_syncwarp, or None
        self.preempt = None  # engine.order(seed): a random.Random that decides where a thread pauses after a load
        self.blocks_done = 0
        self.threads_done = 0  # threads that finished the kernel (the stall watch's sign of progress)
        self.blocks_total = grid[0] * grid[1] * grid[2]
        self.note_due = False  # set by the stall watch after a few seconds: the launch says how far it is, once
        self.noted = False
        self.stalled = None  # (while loop, seconds) when the stall watch stopped the launch


state = threading.local()


def launch_state() -> Launch | None:
    return getattr(state, "launch", None)


def current_module() -> EngineCUDAModule | None:
    """The ``cuda`` module of the launch now running on the engine (None outside a launch)."""
    return getattr(state, "module", None)


class PreemptingArray(KernelArray):
    """Under ``engine.order(seed)``: after a load from global or shared memory a thread may pause, so that other
    threads run between its load and its store (``out[0] += x`` then loses updates, as on a GPU)."""

    __slots__ = ()

    def __getitem__(self, idx):
        v = self._get(idx)
        if self.space != "local" and v.__class__ is not PreemptingArray:
            mod = state.module
            if mod is not None and mod._launch.preempt is not None and mod._launch.preempt.random() < 0.5:
                ts = mod._ts
                ts.wait = "yield"
                ts.site = None
                mod._sched.switch(None)
        return v


def current_thread() -> ThreadState:
    """The CUDA thread now running on the engine (only valid during a launch)."""
    mod = getattr(state, "module", None)
    if mod is None:
        raise RuntimeError("current_thread() is only meaningful while a kernel runs on the engine")
    return mod._ts


def _kernel_code(mod):
    """The code object of the kernel this launch runs (None for a callable without one)."""
    return getattr(mod._launch.fn, "__code__", None)


def _nbytes(shape, dtype) -> int:
    """Bytes of an array of ``shape`` and ``dtype``, found before anything is allocated (Python ints: no overflow)."""
    n = dtype.itemsize
    for d in shape if isinstance(shape, tuple) else (shape,):
        n *= int(d)
    return n


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
        dtype = as_dtype(dtype)
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
            shapes.check(frame, "shared", _kernel_code(mod))  # a shape a GPU compiler refuses is refused here too
            nbytes = _nbytes(shape, dtype)
            if nbytes > _dev.MAX_STATIC_SHARED_PER_BLOCK:  # checked before allocating: the CPU has no such limit
                raise UserError(
                    f"cuda.shared.array of {nbytes} bytes exceeds the {_dev.MAX_STATIC_SHARED_PER_BLOCK} "
                    "bytes of static shared memory a block may have; use a smaller tile"
                )
            data = np.empty(shape, dtype=dtype)
            poison(data)
            name = _assigned_name(frame) or f"shared@line{frame.f_lineno}"
            arr = mod._wrap(data, "shared", name, self._alloc(data.nbytes), root=data)
            self.allocs[key] = arr
        return arr

    def _alloc(self, nbytes):
        offset = self.next_offset
        self.next_offset = (offset + nbytes + 15) & ~15
        if self.next_offset > _dev.MAX_SHARED_PER_BLOCK_OPTIN:
            raise UserError(
                f"the block uses {self.next_offset} bytes of shared memory, more than the "
                f"{_dev.MAX_SHARED_PER_BLOCK_OPTIN} an H200 block can have"
            )
        return offset


class _Local:
    def __init__(self, mod):
        self._mod = mod

    def array(self, shape, dtype, alignment=None):
        shapes.check(sys._getframe(1), "local", _kernel_code(self._mod))
        dtype = as_dtype(dtype)
        nbytes = _nbytes(shape, dtype)
        if nbytes > _dev.MAX_LOCAL_PER_THREAD:  # checked before allocating: every thread gets its own copy here
            raise UserError(
                f"cuda.local.array of {nbytes} bytes per thread exceeds the {_dev.MAX_LOCAL_PER_THREAD} bytes "
                f"({_dev.MAX_LOCAL_PER_THREAD // 1024} KiB) of local memory a thread may have on an H200 (the GPU's "
                "compiler refuses the kernel: "
                "'uses too much local data'); keep per-thread arrays small, or use shared or global memory"
            )
        data = np.empty(shape, dtype=dtype)
        poison(data)
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
        raise UserError("atomics need an array argument of the kernel (or a shared array) as their first argument")
    return array


class _Atomic:
    """``cuda.atomic``: each operation is one indivisible read-modify-write returning the old value."""

    def add(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: old + val)

    def sub(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: old - val)

    def and_(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: old & val)

    def or_(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: old | val)

    def xor(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: old ^ val)

    def inc(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: 0 if old >= val else old + 1)

    def dec(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: val if (old == 0 or old > val) else old - 1)

    def exch(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: val)

    def max(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: max(old, val))

    def min(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: min(old, val))

    def nanmax(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: np.nanmax([old, val]))

    def nanmin(self, array, index, val):
        return _atomic_target(array).atomic(index, lambda old: np.nanmin([old, val]))

    def cas(self, array, index, old, val):
        return _atomic_target(array).atomic(index, lambda cur: val if cur == old else cur)

    def compare_and_swap(self, array, old, val):
        arr = _atomic_target(array)
        return arr.atomic((0,) * arr.a.ndim, lambda cur: val if cur == old else cur)


class _GridGroup:
    def __init__(self, mod):
        self._mod = mod

    def sync(self):
        mod = self._mod
        if mod.gridDim.x * mod.gridDim.y * mod.gridDim.z > 1:
            raise UserError(
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

    def __init__(self, launch: Launch, fallback):
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
        raise UserError(f"cuda.grid({n}): the grid has 1, 2 or 3 dimensions")

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
        raise UserError(f"cuda.gridsize({n}): the grid has 1, 2 or 3 dimensions")

    # -- block barrier ---------------------------------------------------------------------------
    def _block(self, kind, value=None, mask=FULL_MASK, args=None):
        if self._launch.direct:  # pragma: no cover - never_blocks is conservative
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
        """Wait for the lanes named in ``mask`` (and only those) to reach a syncwarp with this mask; orders
        their memory accesses (Volta and later).  The calling lane must be in its own mask."""
        ts = self._ts
        m = int(mask) & FULL_MASK
        if not (m >> ts.lane) & 1:
            raise UserError(
                f"cuda.syncwarp({m:#010x}) called by lane {ts.lane} of warp {ts.warp}, which its own mask leaves "
                f"out: on a GPU that is undefined behaviour (a lane may only wait with the lanes its mask names, "
                f"itself among them). Put this lane in the mask (bit {ts.lane}: mask | (1 << lane)), or call "
                "syncwarp only from the lanes the mask names")
        self._block("syncwarp", None, m)

    def activemask(self):
        # Not a synchronisation point: it neither orders memory nor makes lanes wait for each other on a GPU.
        # The engine gathers the lanes that reach it together only to say which they are (the converged set).
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
        # a NumPy integer counts its own width (popc of an int32 -1, e.g. a full ballot, is 32 as on a GPU)
        bits = 8 * val.itemsize if hasattr(val, "itemsize") else 64
        return bin(int(val) & ((1 << bits) - 1)).count("1")

    def brev(self, val):
        bits = int_bits(val)
        return type(val)(int(format(int(val) & ((1 << bits) - 1), f"0{bits}b")[::-1], 2))

    def clz(self, val):
        bits = int_bits(val)
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



def int_bits(val):
    """Width of an integer for clz/brev: its NumPy size; a Python int counts as 32 bits, as in numba's
    simulator (a kernel with an explicit int32 signature receives Python ints for int32 arguments)."""
    return 8 * val.itemsize if hasattr(val, "itemsize") else 32
