"""Kernels for chapter 08 (host ↔ device transfers and streams): work to overlap with copies, and reads of host memory.

- ``scale``   ``out[i] = factor · x[i]``, grid-stride: reads each element once.  Run on a mapped
              (zero-copy, 零拷贝) host array it pulls every element across PCIe exactly once — the case
              where zero-copy memory can pay.
- ``busy``    ``iters`` multiply-adds per element (``v = v·0.999 + 0.001``), grid-stride: a kernel whose
              run time can be dialled to match a copy's, so that a timeline shows copies and kernels
              overlapping on different streams (流).
- ``reread``  each thread sums ``passes`` elements spread over the array: the same bytes are read
              ``passes`` times.  On device memory the repeats come from L2 and HBM; on mapped host memory
              every one of them crosses PCIe — the case where zero-copy memory hurts.

Each has a NumPy reference (``*_reference``).  ``chunks`` splits an array into the pieces a
multi-stream pipeline copies and processes one by one.

Defined for chapter 08 (notebooks/08_host_device_streams.ipynb).
"""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32

DECAY = np.float32(0.999)
OFFSET = np.float32(0.001)
REREAD_STEP = 4099  # elements between the passes of one thread: far apart, so each pass is new data


@cuda.jit
def scale(x, out, factor):
    """``out[i] = factor * x[i]`` for every i (grid-stride): each input element read once."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < x.shape[0]:
        out[i] = x[i] * factor
        i += stride


def scale_reference(x, factor):
    """What ``scale`` computes, in NumPy (float32)."""
    return (np.asarray(x, np.float32) * np.float32(factor)).astype(np.float32)


@cuda.jit
def busy(x, out, iters):
    """``iters`` multiply-adds per element: arithmetic whose time is set by ``iters``, not by memory."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < x.shape[0]:
        v = x[i]
        for _ in range(iters):
            v = v * float32(0.999) + float32(0.001)
        out[i] = v
        i += stride


def busy_reference(x, iters):
    """What ``busy`` computes: the same recurrence in float64 (the kernel's float32 stays within ~1e-5 of it)."""
    v = np.asarray(x, np.float64).copy()
    a, b = float(DECAY), float(OFFSET)
    # v_n = a^n v_0 + b (1 - a^n) / (1 - a): the closed form of n steps of v = a v + b
    an = a ** iters
    return an * v + b * (1.0 - an) / (1.0 - a)


@cuda.jit
def reread(x, out, passes):
    """``out[i] = Σ_p x[(i + p·STEP) mod n]``: every element of ``x`` is read ``passes`` times in all.

    Needs ``passes · STEP <= n`` (one wrap-around at most: a subtraction, not a slow 64-bit modulo).
    """
    n = x.shape[0]
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        s = float32(0.0)
        for p in range(passes):
            j = i + p * REREAD_STEP
            if j >= n:
                j -= n
            s += x[j]
        out[i] = s
        i += stride


def reread_reference(x, passes):
    """What ``reread`` computes, in float64."""
    x = np.asarray(x, np.float64)
    n = x.shape[0]
    if passes * REREAD_STEP > n:
        raise ValueError(f"reread: {passes} passes need at least {passes * REREAD_STEP} elements, got {n}.")
    idx = np.arange(n)
    return sum(x[(idx + p * REREAD_STEP) % n] for p in range(passes))


def chunks(n: int, pieces: int) -> list:
    """``pieces`` (start, stop) ranges covering 0..n, sizes differing by at most one element."""
    if pieces < 1:
        raise ValueError(f"chunks: need at least one piece, got {pieces}.")
    bounds = np.linspace(0, n, pieces + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def pipeline(h_in, h_out, d_in, d_out, streams, pieces, iters, threads_per_block=256, marks=None):
    """Copy in, ``busy``, copy out, chunk by chunk, chunk i on ``streams[i % len(streams)]``.

    ``h_in``/``h_out`` should be pinned (``cuda.pinned_array``): only then are the copies asynchronous
    and can overlap.  ``marks``, when given, holds four events per chunk, recorded on the chunk's
    stream before the copy in and after each of the three steps (a timeline).  Nothing waits here:
    synchronise (``cuda.synchronize()`` or an event) before reading ``h_out``.
    """
    for ci, (a, b) in enumerate(chunks(h_in.shape[0], pieces)):
        s = streams[ci % len(streams)]
        if marks is not None:
            marks[ci][0].record(stream=s)
        d_in[a:b].copy_to_device(h_in[a:b], stream=s)
        if marks is not None:
            marks[ci][1].record(stream=s)
        busy[blocks_for(b - a, threads_per_block), threads_per_block, s](d_in[a:b], d_out[a:b], iters)
        if marks is not None:
            marks[ci][2].record(stream=s)
        d_out[a:b].copy_to_host(h_out[a:b], stream=s)
        if marks is not None:
            marks[ci][3].record(stream=s)


def blocks_for(n: int, threads_per_block: int = 256, max_blocks: int = 132 * 16) -> int:
    """blocks_per_grid for a grid-stride kernel over n elements: enough to fill the GPU, never more than needed."""
    return max(1, min(max_blocks, -(-n // threads_per_block)))
