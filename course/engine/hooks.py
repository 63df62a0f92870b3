"""The interface through which a launch calls an observer (the tracer, the grader's shared-memory meter).

``launch(..., hooks=obj)`` takes any object with some of these members; every member is optional (the
engine reads each with ``getattr(hooks, name, default)``), so a hooks object declares only what it uses.

What the engine hands an observer, and nothing else of its own:

- **a launch**, :class:`LaunchView`: its kernel's name, grid and block, the code objects of the kernel and of the
  device functions it reaches, the thread now running, and the shared memory the running block holds —
  handed to ``begin_launch`` once, before the first block;
- **each thread**, :class:`ThreadView` (the engine's ``ThreadState`` is one): its block, thread index, linear
  id, warp and lane, and its warp-sync epoch (how many ``syncwarp()`` it passed) — ``LaunchView.thread``;
- **each access**, through the array class: an observer's ``array_class`` subclasses
  :class:`course.engine.KernelArray` and wraps its public access methods (``__getitem__`` and ``__setitem__``,
  the checked load and store; ``atomic(index, fn)``, one read-modify-write; ``view_of(sub)``, a view sharing
  the array's identity), which see the array (``space``, ``name``, ``base_addr``, ``root``, ``a``), the index,
  the kind of access and the value; the running thread is ``LaunchView.thread``;
- **the block's order**: ``begin_block``, ``on_barrier`` (a ``syncthreads`` released), ``on_syncwarp`` (a
  ``syncwarp`` resolved: its event number and the linear ids of the lanes that took part), ``end_block``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Optional, Protocol


class ThreadView(Protocol):
    """One CUDA thread of the running block, as an observer sees it (read only)."""

    #: the block's index (x, y, z)
    block: tuple
    #: the thread's index in its block (x, y, z): ``cuda.threadIdx``
    thread: tuple
    #: the linear thread id in the block (x fastest)
    tid: int
    #: ``tid // 32`` and ``tid % 32``
    warp: int
    lane: int
    #: barriers (``syncthreads``) this thread has passed in its block
    barriers: int
    #: ``syncwarp()`` calls this thread has passed: two lanes' accesses are ordered by a syncwarp both took
    warp_syncs: int


class LaunchView:
    """What a launch is, as an observer sees it: handed to ``begin_launch`` before the first block runs.

    ``codes`` grows while the launch runs (a device function reached through an attribute joins it on its first
    call); ``thread`` is the thread running now (a :class:`ThreadView`), set by the engine at every switch, so
    that an access reads who made it in one attribute look-up.
    """

    __slots__ = ("name", "grid", "block", "codes", "thread", "_shared")

    def __init__(self, name: str, grid: tuple, block: tuple, codes: Collection, shared) -> None:
        self.name = name
        self.grid = grid
        self.block = block
        self.codes = codes
        self.thread: Optional[ThreadView] = None
        self._shared = shared

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def shared_bytes(self) -> int:
        """Bytes of shared memory (static and dynamic) the running block has allocated so far."""
        return int(self._shared.next_offset)


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

    def begin_launch(self, launch: LaunchView) -> None:
        """The launch is about to run its first block."""

    def begin_block(self, block: tuple) -> None:
        """Block ``block`` (x, y, z) is about to run."""

    def on_barrier(self, block: tuple) -> None:
        """Every thread of ``block`` has reached a ``cuda.syncthreads()``; they are about to go on."""

    def on_syncwarp(self, event: int, tids: list) -> None:
        """The lanes ``tids`` (linear thread ids) passed one ``syncwarp()`` together, event number ``event`` of
        the launch (numbered in the order they resolve)."""

    def end_block(self, block: tuple) -> None:
        """Every thread of ``block`` has finished."""
