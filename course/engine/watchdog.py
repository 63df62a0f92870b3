"""The watchdog: stops a launch that runs past its time limit, even inside a ``while True:`` with no barrier."""

from __future__ import annotations

import ast
import contextlib
import ctypes
import hashlib
import inspect
import math
import os
import sys
import textwrap
import threading
import time

import numpy as np

from course.engine.arrays import KernelArray
from course.engine.kernel_api import state
from course.engine.messages import LaunchTimeout

# Watchdog: stops a launch that runs too long, even inside a `while True:` with no barrier


@contextlib.contextmanager
def clock_paused():
    """Stop the running launch's time limit for the duration (no-op outside a launch)."""
    lau = getattr(state, "launch", None)
    wd = getattr(lau, "watchdog", None) if lau is not None else None
    remaining = wd.pause() if wd is not None else None
    try:
        yield
    finally:
        if wd is not None:
            wd.resume(remaining)


class Watchdog:
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
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), ctypes.py_object(LaunchTimeout))

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
        except LaunchTimeout:
            pass


# Stall watch: a launch that cannot finish says so in seconds, a long one says how far it is


STALL_SECONDS = float(os.environ.get("COURSE_STALL_LIMIT", "3"))  # engine time in one `while` loop, memory unchanged
NOTE_SECONDS = 5.0  # a launch still running after this says how far it is, once
_TICK = 0.25


class StallWatch:
    """Watches one running launch from the engine's one helper thread (a tick every 0.25 s; the launch itself
    pays nothing per thread): when the running threads stay inside one ``while`` loop for :data:`STALL_SECONDS`
    of engine time while no thread finishes and no global or shared memory changes (barriers passed meanwhile
    change nothing by themselves), the loop cannot end (a ``while True:``, a spin-wait on a flag another block
    would set: blocks run in turn on the engine, or such a wait through ``cuda.syncthreads()``), and the launch stops with :class:`LaunchStalled`.  After :data:`NOTE_SECONDS` a launch that is
    merely long gets a one-line note (blocks done / total, how to stop it), printed by the launch's own thread
    between blocks."""

    def __init__(self, lau, module, kargs, watchdog, stall=None):
        self.lau, self.module, self.kargs, self.watchdog = lau, module, kargs, watchdog
        self.stall = STALL_SECONDS if stall is None else stall
        self.thread_id = threading.get_ident()
        self.fired = False
        self.engine_time = 0.0  # seconds the launch ran with its clock on (the tracer's compiles pause it)
        self.last = None
        self.cand = None  # [loop, progress token, memory fingerprint (taken on a second look), engine time]

    def start(self):
        if self.stall <= 0 or math.isinf(self.stall):
            return
        self.last = time.monotonic()
        with _watch_lock:
            _watches[self.thread_id] = self
            _ensure_helper()

    def cancel(self):
        with _watch_lock:
            if _watches.get(self.thread_id) is self:
                del _watches[self.thread_id]
        if self.fired:  # let a still-pending LaunchStalled land here (see Watchdog.cancel)
            try:
                for _ in range(10000):
                    pass
            except LaunchTimeout:
                pass

    def tick(self, now):
        """One look at the launch (the helper thread, holding _watch_lock)."""
        lau, wd = self.lau, self.watchdog
        paused = wd.timer is not None and not wd.active and not wd.fired
        if not paused:
            self.engine_time += now - self.last
        self.last = now
        if self.engine_time >= NOTE_SECONDS and not lau.noted:
            lau.note_due = True
        if paused:
            self.cand = None
            return
        loop, token, cand = self._loop_now(), self._token(), self.cand
        if loop is _ELSEWHERE:  # between two threads (the scheduler, a barrier): no look this tick
            return
        if loop is None or cand is None or cand[0] != loop or cand[1] != token:
            self.cand = [loop, token, None, self.engine_time] if loop is not None else None
            return
        if cand[2] is None:  # the same thread in the same loop a tick later: worth a look at memory
            cand[2], cand[3] = self._memory(), self.engine_time
            return
        if self.engine_time - cand[3] < self.stall:
            return
        memory = self._memory()
        if memory != cand[2]:  # the loop writes memory: it may be making progress
            cand[2], cand[3] = memory, self.engine_time
            return
        lau.stalled = (loop, self.engine_time - cand[3])
        self.fired = True
        del _watches[self.thread_id]
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), ctypes.py_object(LaunchStalled))

    def _token(self):
        """Changes whenever a thread finishes or a block ends (no cost to the launch: counters the scheduler keeps
        anyway).  Passing a barrier or a warp collective, or the scheduler moving on to another thread of the block,
        is not progress by itself: threads that loop through ``cuda.syncthreads()`` with memory unchanged and
        nobody leaving the loop are a livelock (``while flag[0] == 0: cuda.syncthreads()``)."""
        return (self.lau.threads_done, self.lau.blocks_done)

    def _loop_now(self):
        """(code, first line, last line) of the innermost ``while`` loop the running thread is in, None when it is
        in none, :data:`_ELSEWHERE` when no kernel code is running (the scheduler is between two threads)."""
        frame = sys._current_frames().get(self.thread_id)
        codes = self.lau.user_codes
        while frame is not None and frame.f_code not in codes:
            frame = frame.f_back
        if frame is None:
            return _ELSEWHERE
        return while_loop_at(frame.f_code, frame.f_lineno)

    def _memory(self):
        """A fingerprint of global memory and the running block's shared memory (taken only while a loop is
        suspect: a few times per second)."""
        h = hashlib.blake2b(digest_size=16)
        arrays = [a for a in self.kargs if isinstance(a, KernelArray)]
        shared = self.module.shared
        arrays += list(shared.allocs.values())
        for arr in arrays:
            try:
                h.update(np.ascontiguousarray(arr.a).view(np.uint8).data)
            except (TypeError, ValueError, AttributeError):
                pass
        if shared.dyn is not None:
            h.update(shared.dyn.data)
        return h.digest()


_ELSEWHERE = ("elsewhere",)  # _loop_now: no kernel code on the launch's stack
_watches: dict = {}  # OS thread id -> the StallWatch of the launch running on it
_watch_lock = threading.Lock()
_helper = []


def _ensure_helper():
    """Start the one helper thread that ticks every running launch's StallWatch (once per process)."""
    if _helper and _helper[0].is_alive():
        return
    t = threading.Thread(target=_helper_loop, name="course-engine-stallwatch", daemon=True)
    _helper[:] = [t]
    t.start()


def _helper_loop():
    while True:
        time.sleep(_TICK)
        with _watch_lock:
            now = time.monotonic()
            for watch in list(_watches.values()):
                try:
                    watch.tick(now)
                except Exception:  # a look that failed (an array resized under us …): try again next tick
                    watch.cand = None


class LaunchStalled(LaunchTimeout):
    """Raised asynchronously inside a launch whose thread cannot leave a ``while`` loop."""


_while_loops: dict = {}  # code -> [(first line, last line)] of its while loops (None: no source)


def while_loop_at(code, line):
    """(code, first, last) of the innermost ``while`` loop of ``code`` around ``line``, else None."""
    loops = _while_loops.get(code, ())
    if code not in _while_loops:
        try:
            lines, start = inspect.getsourcelines(code)
            tree = ast.parse(textwrap.dedent("".join(lines)))
            loops = [(n.lineno + start - 1, n.end_lineno + start - 1) for n in ast.walk(tree) if isinstance(n, ast.While)]
        except (OSError, TypeError, SyntaxError, IndentationError):
            loops = []
        _while_loops[code] = loops
    inner = None
    for first, last in loops:
        if first <= line <= last and (inner is None or first >= inner[0]):
            inner = (first, last)
    return (code,) + inner if inner else None
