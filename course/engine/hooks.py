"""The interface through which a launch calls an observer (the tracer, the grader's shared-memory meter).

``launch(..., hooks=obj)`` takes any object with some of these members; every member is optional (the
engine reads each with ``getattr(hooks, name, default)``), so a hooks object declares only what it uses.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Optional, Protocol


class LaunchHooks(Protocol):
    """What a launch asks of its hooks object (every member optional)."""

    #: the class the kernel's arrays are made of (a subclass of :class:`course.engine.KernelArray`); default
    #: KernelArray
    array_class: Optional[type]
    #: True: ``cuda.local.array`` gives a kernel array of ``array_class`` too (default: a plain ndarray)
    traces_local: bool
    #: functions the observer put into the kernel's globals that never wait for another thread (the
    #: tracer's line recorder): they do not stop the engine running threads as plain calls
    helpers: Collection[Callable]

    def begin_block(self, block: tuple) -> None:
        """Block ``block`` (x, y, z) is about to run; :func:`course.engine.launch_state` describes the launch."""

    def on_barrier(self, block: tuple) -> None:
        """Every thread of ``block`` has reached a ``cuda.syncthreads()``; they are about to go on."""

    def end_block(self, block: tuple) -> None:
        """Every thread of ``block`` has finished."""
