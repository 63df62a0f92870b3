"""The watchdog: stops a launch that runs past its time limit, even inside a ``while True:`` with no barrier."""

from __future__ import annotations

import contextlib
import ctypes
import math
import threading
import time

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
