"""Traced arrays: a KernelArray subclass (and a record class) whose element accesses append raw records."""

from __future__ import annotations

import itertools
import sys
from typing import Protocol

import numpy as np

from course.trace import analysis
from course import engine as _engine
from course.trace.records import ATOM, LD, ST, TRACED_SPACES
from course.trace.sites import owner_table



class RecordSink(Protocol):
    """What a traced array class reads of its recorder (:class:`course.trace.recorder.Recorder` is one)."""

    flat: list  # five ints per access are appended here (see course/trace/recorder.py)
    vals: list  # the value of each store, in record order
    cur: list  # [the engine's LaunchView]: cur[0].thread is the running thread
    kcode: object  # the code object of the kernel the engine runs
    user_ids: frozenset  # id() of the kernel's and its device functions' code objects

    def desc_of(self, arr, field=None, size=None) -> int: ...

    def far_key(self, code, callers, lasti) -> int: ...


def _offset(addr, idx, strides):
    """addr + the byte offset of element ``idx`` (an int, a NumPy integer or a tuple of them)."""
    if idx.__class__ is tuple:
        if len(idx) == 2:
            i, j = idx
            return addr + (i if i.__class__ is int else int(i)) * strides[0] + (j if j.__class__ is int else int(j)) * strides[1]
        for i, s in zip(idx, strides):
            addr += (i if i.__class__ is int else int(i)) * s
        return addr
    return addr + int(idx) * strides[0]


# What each store wrote goes to a second list, ``rec.vals`` (one entry per store record, in the same order):
# two stores of one value (a flag set by many threads) are a benign race, which racecheck does not report.
# A value that is not a plain number (an array, a record, a byte of a packed field) is UNKNOWN: equal to nothing.


class _Unknown:
    __slots__ = ()

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return "UNKNOWN"


UNKNOWN = _Unknown()
_HASH_MASK = (1 << 60) - 1
_unique = itertools.count(1)


def value_key(value) -> int:
    """An int equal for two stores of one number (even), and never repeated otherwise (odd)."""
    if value is UNKNOWN:
        return (next(_unique) << 1) | 1
    try:
        h = hash(value)
    except TypeError:
        return (next(_unique) << 1) | 1
    if h == -2:  # CPython hashes -1 and -2 alike
        h = hash(value + 0.5)
    return (h & _HASH_MASK) << 1


def make_array_class(rec: RecordSink):
    """A KernelArray subclass whose element accesses append raw records to ``rec.flat``."""
    extend = rec.flat.extend
    cur = rec.cur
    getframe = sys._getframe
    numbers = _engine.NUMBER_TYPES  # NumPy scalar types: stored as they are
    kcode = rec.kcode
    traced = TRACED_SPACES
    vappend = rec.vals.append

    def init(arr):
        # per view: (descriptor * 4, byte address of the view's first element, strides, shared?)
        if arr.space not in traced:
            return None
        d = rec.desc_of(arr)
        o = arr.base_addr + (arr.a.ctypes.data - arr.root.ctypes.data)
        st = arr.a.strides
        # last: may a full index read the element straight from NumPy (a plain dtype, 1 or 2 dimensions)?
        plain = arr.a.dtype.fields is None and arr.a.ndim in (1, 2)
        return (d << 2, o, st, arr.space == "shared", st[0] if st else 0, st[1] if len(st) > 1 else 0,
                arr.a.ndim if plain else 0)

    def far(frame):
        # the innermost kernel or device-function frame; device functions carry their call sites
        user = rec.user_ids
        while frame is not None and id(frame.f_code) not in user:
            frame = frame.f_back
        if frame is None:  # pragma: no cover - accesses always come from kernel code
            return 0
        code = frame.f_code
        if code is kcode:
            return frame.f_lasti
        callers = []
        f = frame.f_back
        while f is not None and id(f.f_code) in user:
            callers.append((f.f_code, owner_table(f.f_code)[f.f_lasti >> 1]))
            f = f.f_back
        return rec.far_key(code, tuple(callers), frame.f_lasti)

    def record(arr, tr, idx, op, frame):
        d, o, strides, shared = tr[:4]
        addr = o + idx * strides[0] if idx.__class__ is int else _offset(o, idx, strides)
        key = frame.f_lasti if frame.f_code is kcode else far(frame)
        ts = cur[0].thread
        extend((d + op, key, ts.tid, addr, ts.warp_syncs))
        if op == ST:
            vappend(UNKNOWN)

    base = _engine.KernelArray
    get, put, base_atomic = base.__getitem__, base.__setitem__, base.atomic  # the engine's checked accesses

    class TracedArray(base):
        """A kernel array that reports each element access to the tracer."""

        __slots__ = ("_tr",)

        def __getitem__(self, idx):
            try:
                tr = self._tr
            except AttributeError:
                tr = self._tr = init(self)
            if tr is None:
                return get(self, idx)
            # the body of record(), inlined: this runs for every load
            d, addr, strides, shared, s0, s1, fast = tr
            c = idx.__class__
            if c is int and fast == 1 and idx >= 0:
                try:  # the engine's checks, for the commonest case; anything unusual goes through them
                    v = self.a[idx]
                except IndexError:
                    return get(self, idx)
                addr += idx * s0
            elif c is tuple and fast == 2 and len(idx) == 2 and idx[0].__class__ is int and idx[1].__class__ is int \
                    and idx[0] >= 0 and idx[1] >= 0:
                try:
                    v = self.a[idx]
                except IndexError:
                    return get(self, idx)
                addr += idx[0] * s0 + idx[1] * s1
            else:
                v = get(self, idx)
                if v.__class__ is TracedArray:
                    return v  # a row view or slice: its elements are recorded when they are accessed
                if c is int:
                    addr += idx * s0
                else:  # tuples, NumPy integers (which must not overflow in int32 arithmetic)
                    addr = _offset(addr, idx, strides)
                if v.__class__ is Record and not analysis.is_vector_dtype(self.a.dtype):
                    # p[i] of a structured array: on the GPU p[i].x loads the field alone, so the
                    # record reports its field accesses, not this one
                    return TracedRecord(self.a[idx], self, addr)
            frame = getframe(1)
            ts = cur[0].thread
            extend((d, frame.f_lasti if frame.f_code is kcode else far(frame), ts.tid, addr, ts.warp_syncs))
            return v

        def __setitem__(self, idx, value):
            try:
                tr = self._tr
            except AttributeError:
                tr = self._tr = init(self)
            vc = value.__class__
            if tr is not None and (vc is float or vc is int or vc in numbers):
                # the commonest store, a number at a full index of a plain 1-D or 2-D array: straight to
                # NumPy (anything unusual, or an index out of range, goes through the engine's checks)
                d, addr, strides, shared, s0, s1, fast = tr
                c = idx.__class__
                if c is int and fast == 1 and idx >= 0:
                    off = idx * s0
                elif c is tuple and fast == 2 and len(idx) == 2 and idx[0].__class__ is int \
                        and idx[1].__class__ is int and idx[0] >= 0 and idx[1] >= 0:
                    off = idx[0] * s0 + idx[1] * s1
                else:
                    off = None
                if off is not None:
                    try:
                        self.a[idx] = value
                    except (IndexError, TypeError, ValueError, OverflowError):
                        put(self, idx, value)
                    frame = getframe(1)
                    ts = cur[0].thread
                    extend((d + ST, frame.f_lasti if frame.f_code is kcode else far(frame), ts.tid,
                            addr + off, ts.warp_syncs))
                    vappend(value)
                    return
            put(self, idx, value)
            if vc is TracedRecord:  # a whole record copied: its fields are loaded one by one
                value._note_all(LD, getframe(1))
            if tr is None:
                return
            a = self.a
            d, addr, strides, shared, s0, s1, _fast = tr
            if idx.__class__ is tuple:
                if len(idx) != a.ndim or slice in map(type, idx):
                    return _record_region(self, idx, getframe(1))
                if len(idx) == 2 and idx[0].__class__ is int and idx[1].__class__ is int:
                    addr += idx[0] * s0 + idx[1] * s1
                else:
                    addr = _offset(addr, idx, strides)
            else:
                if a.ndim != 1 or idx.__class__ is slice:
                    return _record_region(self, idx, getframe(1))
                addr = addr + idx * s0 if idx.__class__ is int else _offset(addr, idx, strides)
            frame = getframe(1)
            ts = cur[0].thread
            if a.dtype.fields and not analysis.is_vector_dtype(a.dtype):
                return _bytewise(self, addr, ST, frame)
            extend((d + ST, frame.f_lasti if frame.f_code is kcode else far(frame), ts.tid, addr, ts.warp_syncs))
            vappend(value if vc is float or vc is int or vc in numbers else UNKNOWN)

        def atomic(self, idx, fn):
            old = base_atomic(self, idx, fn)
            try:
                tr = self._tr
            except AttributeError:
                tr = self._tr = init(self)
            if tr is not None:
                record(self, tr, idx, ATOM, getframe(1))
            return old

    Record = _engine.Record

    class TracedRecord(Record):
        """One element of a structured array that reports each field read and write (p.x, p['x'])."""

        __slots__ = ("_arr", "_addr")

        def __init__(self, v, arr, addr):
            Record.__init__(self, v)
            object.__setattr__(self, "_arr", arr)
            object.__setattr__(self, "_addr", addr)

        def _note(self, name, op, frame):
            arr = self._arr
            dtype = arr.a.dtype
            fields = dtype.fields
            if arr.space not in traced or not fields or name not in fields:
                return
            addr = self._addr + fields[name][1]
            if dtype.isalignedstruct:  # np.dtype(..., align=True): one access of the field's size
                ts = cur[0].thread
                extend(((rec.desc_of(arr, name) << 2) + op, frame.f_lasti if frame.f_code is kcode else far(frame),
                        ts.tid, addr, ts.warp_syncs))
                if op == ST:
                    vappend(UNKNOWN)
                return
            # a packed record (NumPy's default) has alignment 1 for numba: the GPU code moves a field byte
            # by byte (LDG.E.U8 per byte, seen in the SASS)
            _bytewise(arr, addr, op, frame, name, fields[name][0].itemsize)

        def _note_all(self, op, frame):
            _bytewise(self._arr, self._addr, op, frame)

        def __getattr__(self, name):
            v = Record.__getattr__(self, name)
            self._note(name, LD, getframe(1))
            return v

        def __setattr__(self, name, value):
            Record.__setattr__(self, name, value)
            self._note(name, ST, getframe(1))

        def __getitem__(self, key):
            v = Record.__getitem__(self, key)
            if key.__class__ is str:
                self._note(key, LD, getframe(1))
            return v

        def __setitem__(self, key, value):
            Record.__setitem__(self, key, value)
            if key.__class__ is str:
                self._note(key, ST, getframe(1))

    def _bytewise(arr, addr, op, frame, field="", nbytes=None):
        # one 1-byte access per byte, in order: a field of a packed record, or ("" field) a whole record
        # copied, which numba's GPU code moves byte by byte aligned or not (32 LDG.E.U8 and 32 STG.E.U8 for
        # a 32-byte record, in the SASS)
        if arr.space not in traced:
            return
        ts = cur[0].thread
        key = frame.f_lasti if frame.f_code is kcode else far(frame)
        ws = ts.warp_syncs
        d = (rec.desc_of(arr, field, 1) << 2) + op
        for b in range(arr.a.dtype.itemsize if nbytes is None else nbytes):
            extend((d, key, ts.tid, addr + b, ws))
            if op == ST:
                vappend(UNKNOWN)

    def _record_region(arr, idx, frame):
        # a whole row or slice assigned at once: one store per element
        view = arr.view_of(arr.a[idx])
        tr = view._tr = init(view)
        for j in np.ndindex(view.a.shape):
            record(view, tr, j, ST, frame)

    return TracedArray
