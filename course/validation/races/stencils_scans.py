"""Shared memory: reversal, stencils and scans (Hillis-Steele) — with and without the barriers they need.

Part of the race checker's validation suite: see :mod:`course.validation.race_suite`."""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32

from course.validation.races.common import B, B_HALO, E, W, case_adder
from course.validation.races.common import reverse_ref as _reverse_ref
from course.validation.races.common import x_args as _x


# ---------------------------------------------------------------------------------------------------
# Shared memory: reversal (a barrier between store and cross-warp load)


@cuda.jit
def reverse_nosync(x, out):
    """s[t] = x[t]; out[t] = s[63 - t]: thread t reads what thread 63 - t (the other warp) wrote."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[B - 1 - t]


@cuda.jit
def reverse_sync(x, out):
    """The same with syncthreads() between: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[B - 1 - t]


@cuda.jit
def neighbour_nosync(x, out):
    """out[t] = s[t ^ 1]: the partner lane is in the same warp, so only a warp-level hazard."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[t ^ 1]


# ---------------------------------------------------------------------------------------------------
# Stencils


@cuda.jit
def stencil_nosync(x, out):
    """3-point stencil with halo; no barrier: lane 31 reads s[33] (written by thread 32, other warp)."""
    s = cuda.shared.array(B_HALO, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * B + t
    n = x.shape[0]
    s[t + 1] = x[i]
    if t == 0:
        s[0] = x[i - 1] if i > 0 else 0.0
    if t == B - 1:
        s[B + 1] = x[i + 1] if i + 1 < n else 0.0
    out[i] = s[t] + s[t + 1] + s[t + 2]


@cuda.jit
def stencil_sync(x, out):
    """The same with syncthreads() before the reads: race-free."""
    s = cuda.shared.array(B_HALO, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * B + t
    n = x.shape[0]
    s[t + 1] = x[i]
    if t == 0:
        s[0] = x[i - 1] if i > 0 else 0.0
    if t == B - 1:
        s[B + 1] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    out[i] = s[t] + s[t + 1] + s[t + 2]


def _stencil_ref(x, out):
    p = np.concatenate([[0], x, [0]]).astype(np.float64)
    return (p[:-2] + p[1:-1] + p[2:]).astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# Scans (Hillis-Steele inclusive prefix sum over one block)


@cuda.jit
def scan_nosync(x, out):
    """Each step reads s[t - off] and writes s[t] with no barrier at all."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    off = 1
    while off < B:
        if t >= off:
            s[t] += s[t - off]
        off *= 2
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def scan_one_sync(x, out):
    """One barrier per step, after the write: thread t writes s[t] while thread t + off reads it."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    off = 1
    while off < B:
        if t >= off:
            s[t] += s[t - off]
        cuda.syncthreads()
        off *= 2
    out[t] = s[t]


@cuda.jit
def scan_two_sync(x, out):
    """Read, barrier, write, barrier: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    off = 1
    while off < B:
        v = s[t - off] if t >= off else 0.0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        off *= 2
    out[t] = s[t]


@cuda.jit
def scan_double_buffer(x, out):
    """Ping-pong between two buffers, one barrier per step: race-free."""
    s = cuda.shared.array((2, B), float32)
    t = cuda.threadIdx.x
    s[0, t] = x[t]
    cuda.syncthreads()
    src = 0
    off = 1
    while off < B:
        v = s[src, t]
        if t >= off:
            v += s[src, t - off]
        s[1 - src, t] = v
        cuda.syncthreads()
        src = 1 - src
        off *= 2
    out[t] = s[src, t]


@cuda.jit
def scan_double_buffer_nosync(x, out):
    """Ping-pong without the barrier: step k+1 reads what step k of other threads has not written yet."""
    s = cuda.shared.array((2, B), float32)
    t = cuda.threadIdx.x
    s[0, t] = x[t]
    cuda.syncthreads()
    src = 0
    off = 1
    while off < B:
        v = s[src, t]
        if t >= off:
            v += s[src, t - off]
        s[1 - src, t] = v
        src = 1 - src
        off *= 2
    cuda.syncthreads()
    out[t] = s[src, t]


def _scan_ref(x, out):
    return np.cumsum(x.astype(np.float64)).astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# The cases (what CUDA's memory model says about each kernel above, derived by hand)

CASES: list = []
_add = case_adder(CASES)

_add("reverse_nosync", reverse_nosync, 1, B, _x(), (E,), tags=("missing barrier",))
_add("reverse_sync", reverse_sync, 1, B, _x(), reference=_reverse_ref)
_add("neighbour_nosync", neighbour_nosync, 1, B, _x(), (W,), tags=("warp",))
# stencil: lanes read s[t] and s[t+2] (written by lanes t-1, t+1) -> same warp except at 31|32 -> both
_add("stencil_nosync", stencil_nosync, 3, B, _x(3 * B), (E, W), tags=("stencil",))
_add("stencil_sync", stencil_sync, 3, B, _x(3 * B), reference=_stencil_ref, tags=("stencil",))
# scans: off = 1..16 stays in a warp except at the boundary; off = 32 crosses it -> both
_add("scan_nosync", scan_nosync, 1, B, _x(kind="ints"), (E, W), tags=("scan",))
_add("scan_one_sync", scan_one_sync, 1, B, _x(kind="ints"), (E, W), tags=("scan",),
     note="write s[t] vs read s[t] by thread t + off in the same barrier interval")
_add("scan_two_sync", scan_two_sync, 1, B, _x(kind="ints"), reference=_scan_ref, tags=("scan",))
_add("scan_double_buffer", scan_double_buffer, 1, B, _x(kind="ints"), reference=_scan_ref,
     tags=("scan", "double buffer"))
_add("scan_double_buffer_nosync", scan_double_buffer_nosync, 1, B, _x(kind="ints"), (E, W),
     tags=("scan", "double buffer"))
