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
  order), then the block barrier is released (threads resume in thread-id order);
- ``syncwarp(mask)`` completes once every live lane of *its* mask waits at a ``syncwarp`` with that mask
  (Volta's rule: lanes at ``syncwarp()`` are not released by lanes at ``syncwarp(0xFFFF)``); a lane that
  calls it with a mask leaving itself out is an error.  Other collectives pair the lanes at one call site.

A kernel in which no thread can wait for another (no barrier, no warp collective anywhere in its code
or its device functions, judged conservatively) runs its threads as plain calls, in the same order,
without greenlets: about three times faster for the simple kernels of the first chapters.

``launch(..., seed=k)`` (or ``with order(seed=k):``) runs the same launch in another legal order — blocks
and threads permuted, and a thread may pause right after a load from global or shared memory — so that a
race shows up as a different result (``out[0] += x`` loses updates, as on a GPU).

Errors a GPU would report, or hang on, stop the launch with :class:`KernelError`, naming the kernel,
its source line, the block and the thread: out-of-bounds and negative indices, a barrier that not all
threads of a block reach, a warp collective that cannot complete, an exception in the kernel, a launch
configuration a real H200 refuses, an argument a kernel cannot take, and a launch that runs past its
time limit (``COURSE_TIME_LIMIT`` seconds, default 120).


Modules: :mod:`~course.engine.kernel_api` (thread state, the ``cuda`` a kernel sees),
:mod:`~course.engine.arrays`, :mod:`~course.engine.swap` (CUDA swapped into a kernel's globals),
:mod:`~course.engine.launcher` (one launch), :mod:`~course.engine.scheduler`,
:mod:`~course.engine.messages`, :mod:`~course.engine.watchdog`, :mod:`~course.engine.hooks` (the interface
an observer such as the tracer implements) and :mod:`~course.engine.simulator` (the one seam to numba's
simulator: ``install``/``uninstall``, ``stock_simulator``).
"""

from __future__ import annotations

from course.engine.arrays import NUMBER_TYPES, KernelArray, Record
from course.engine.hooks import LaunchHooks, LaunchView, ThreadView
from course.engine.kernel_api import (
    DEFAULT_TIME_LIMIT,
    FULL_MASK,
    Dim3,
    EngineCUDAModule,
    ThreadState,
    current_thread,
)
from course.engine.launcher import install, launch, normalise_dims, order
from course.engine.literals import numba_function
from course.engine.messages import KernelError
from course.engine.simulator import (
    device_py_func,
    is_cuda_module,
    is_kernel_object,
    kernel_py_func,
    stock_simulator,
    uninstall,
)
from course.engine.watchdog import clock_paused

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "FULL_MASK",
    "NUMBER_TYPES",
    "Dim3",
    "EngineCUDAModule",
    "KernelArray",
    "KernelError",
    "LaunchHooks",
    "LaunchView",
    "Record",
    "ThreadState",
    "ThreadView",
    "clock_paused",
    "current_thread",
    "device_py_func",
    "install",
    "is_cuda_module",
    "is_kernel_object",
    "kernel_py_func",
    "launch",
    "normalise_dims",
    "numba_function",
    "order",
    "stock_simulator",
    "uninstall",
]
