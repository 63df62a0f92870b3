"""Shared memory: atomics, flags, read-only after a barrier, disjoint halves (patterns that look racy and are
not, and the ones that are).

Part of the race checker's validation suite: see :mod:`course.validation.race_suite`."""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, int32

from course.validation.races.common import B, HALF, E, W, case_adder
from course.validation.races.common import x_args as _x


# ---------------------------------------------------------------------------------------------------
# Atomics, flags, read-only after a barrier, disjoint halves


@cuda.jit
def shared_atomic_histogram(x, out):
    """Trap: every thread does atomic.add on a shared bin; barrier; read: race-free."""
    h = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    if t < 8:
        h[t] = 0
    cuda.syncthreads()
    cuda.atomic.add(h, x[t] % 8, 1)
    cuda.syncthreads()
    if t < 8:
        out[t] = h[t]


@cuda.jit
def shared_plain_histogram(x, out):
    """h[bin] += 1 without an atomic: a read-modify-write race within and between warps."""
    h = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    if t < 8:
        h[t] = 0
    cuda.syncthreads()
    h[x[t] % 8] += 1
    cuda.syncthreads()
    if t < 8:
        out[t] = h[t]


def _hist_args(rng):
    return rng.integers(0, 1000, B).astype(np.int32), np.zeros(8, np.int32)


def _hist_ref(x, out):
    return np.bincount(x % 8, minlength=8).astype(np.int32)


@cuda.jit
def atomic_then_plain_read(out):
    """atomic.add on s[0] by every thread and a plain read of s[0] with no barrier between."""
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = 0
    cuda.syncthreads()
    cuda.atomic.add(s, 0, 1)
    out[t] = s[0]


@cuda.jit
def read_only_after_barrier(x, out):
    """Trap: one store, one barrier, then everyone reads anything, many times: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    acc = float32(0)
    for j in range(B):
        acc += s[(t + j) % B]
    out[t] = acc


def _ro_ref(x, out):
    return np.full(B, x.astype(np.float64).sum(), np.float32)


@cuda.jit
def disjoint_halves(x, out):
    """Trap: with no barrier, warp 0 stores and reads the lower half, warp 1 the upper; but warp 0 reads
    each element only after writing it itself: warp 1 writes s[32:], warp 0 reads s[:32] (own stores)."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    if t < HALF:
        out[t] = s[t] * 2.0
    else:
        s[t] = s[t] + 1.0
        out[t] = s[t]


def _halves_ref(x, out):
    r = x.copy()
    r[:HALF] = x[:HALF] * np.float32(2)
    r[HALF:] = x[HALF:] + np.float32(1)
    return r


@cuda.jit
def flag_same_value(x, out):
    """Every thread writes 1 to one flag (the same value), barrier, read: a benign write-write race."""
    f = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        f[0] = 0
    cuda.syncthreads()
    if x[t] > -1000.0:
        f[0] = 1
    cuda.syncthreads()
    out[t] = f[0]


@cuda.jit
def flag_different_values(x, out):
    """Every thread writes its own id to one word: a write-write race of different values."""
    f = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    f[0] = t
    cuda.syncthreads()
    out[t] = f[0] >= 0


# ---------------------------------------------------------------------------------------------------
# The cases (what CUDA's memory model says about each kernel above, derived by hand)

CASES: list = []
_add = case_adder(CASES)

_add("shared_atomic_histogram", shared_atomic_histogram, 1, B, _hist_args, reference=_hist_ref,
     tags=("trap", "atomics"))
_add("shared_plain_histogram", shared_plain_histogram, 1, B, _hist_args, (E, W), tags=("atomics",))
_add("atomic_then_plain_read", atomic_then_plain_read, 1, B, lambda rng: (np.zeros(B, np.int32),), (E, W),
     tags=("atomics",), note="an atomic and a plain read of one word with no barrier: a race in CUDA's model")
_add("read_only_after_barrier", read_only_after_barrier, 1, B, _x(kind="ints"), reference=_ro_ref, tags=("trap",))
_add("disjoint_halves", disjoint_halves, 1, B, _x(), reference=_halves_ref, tags=("trap",))
_add("flag_same_value", flag_same_value, 1, B, _x(), (), benign=True, tags=("flag",),
     note="same-value write-write: racecheck reports nothing; the tracer calls it benign")
_add("flag_different_values", flag_different_values, 1, B, lambda rng: (np.zeros(B, np.float32), np.zeros(B, np.int32)),
     (E, W),
     tags=("flag",))
