"""Warp-level synchronisation (``syncwarp``, shuffles, ``activemask``) and write-after-read alone.

Part of the race checker's validation suite: see :mod:`course.validation.race_suite`."""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32

from course.validation.races.common import B, FULL, HALF, LOW, E, W, case_adder
from course.validation.races.common import x_args as _x


# ---------------------------------------------------------------------------------------------------
# Warp-level synchronisation


@cuda.jit
def syncwarp_exchange(x, out):
    """Warp-synchronous done right: store, syncwarp, read the partner lane's element: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncwarp()
    out[t] = s[t ^ 1]


def _xor1_ref(x, out):
    return x[np.arange(B) ^ 1]


@cuda.jit
def syncwarp_across_warps(x, out):
    """syncwarp orders one warp only: reading the other warp's element after it is still a race."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncwarp()
    out[t] = s[(t + HALF) % B]


@cuda.jit
def shfl_then_neighbour_load(x, out):
    """Store, shfl_sync, read the neighbour's element: a shuffle orders execution, not memory;
    racecheck reports a warp-level hazard."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    v = cuda.shfl_sync(FULL, t, 0)
    out[t] = s[t ^ 1] + float32(v - v)


@cuda.jit
def activemask_then_load(x, out):
    """activemask() neither waits nor orders memory: the neighbour read still races (warning)."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    m = cuda.activemask()
    out[t] = s[t ^ 1] + float32(m & 0)


@cuda.jit
def syncwarp_partial_then_full(x, out):
    """Lanes 0-15 run an extra phase ordered by syncwarp(0xFFFF); then a full-warp syncwarp orders their
    writes before lanes 16-31 read them: race-free (one warp; Volta's independent thread scheduling)."""
    s = cuda.shared.array(HALF, float32)
    lane = cuda.threadIdx.x
    if lane < 16:
        s[lane] = x[lane]
        cuda.syncwarp(LOW)
        s[lane + 16] = s[15 - lane] * 2.0
    cuda.syncwarp()
    out[lane] = s[31 - lane]


def _partial_full_ref(x, out):
    s = np.zeros(HALF, np.float32)
    s[:16] = x[:16]
    s[16:] = s[15::-1] * np.float32(2)
    return s[::-1].copy()


@cuda.jit
def syncwarp_partial_only(x, out):
    """Lanes 0-15 store and sync among themselves (mask 0xFFFF); lanes 16-31 read those elements with no
    sync they take part in: a warp-level race."""
    s = cuda.shared.array(HALF, float32)
    lane = cuda.threadIdx.x
    if lane < 16:
        s[lane] = x[lane]
        cuda.syncwarp(LOW)
    else:
        out[lane] = s[lane - 16]


# ---------------------------------------------------------------------------------------------------
# Write-after-read alone (what racecheck reports of it)


@cuda.jit
def war_neighbour_in_warp(x, out):
    """Lane t reads s[t ^ 1], then stores to s[t]: its partner's store lands on what it read (WAR inside a warp)."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    v = s[t ^ 1]
    s[t] = v * 2.0
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def war_across_warps(x, out):
    """Thread t reads s[(t + 32) % 64] (the other warp's element), then stores to s[t]: WAR between warps."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    v = s[(t + HALF) % B]
    s[t] = v * 2.0
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def rmw_pairs_in_warp(out):
    """s[t // 2] += 1: two lanes of one warp read-modify-write one word at one instruction."""
    s = cuda.shared.array(HALF, float32)
    t = cuda.threadIdx.x
    if t < HALF:
        s[t] = 0.0
    cuda.syncthreads()
    s[t // 2] += 1.0
    cuda.syncthreads()
    if t < HALF:
        out[t] = s[t]


# ---------------------------------------------------------------------------------------------------
# The cases (what CUDA's memory model says about each kernel above, derived by hand)

CASES: list = []
_add = case_adder(CASES)

_add("syncwarp_exchange", syncwarp_exchange, 1, B, _x(), reference=_xor1_ref, tags=("trap", "warp"))
_add("syncwarp_across_warps", syncwarp_across_warps, 1, B, _x(), (E,), tags=("warp",))
_add("shfl_then_neighbour_load", shfl_then_neighbour_load, 1, B, _x(), (W,), tags=("warp", "shuffle"))
_add("activemask_then_load", activemask_then_load, 1, B, _x(), (W,), tags=("warp",))
_add("syncwarp_partial_then_full", syncwarp_partial_then_full, 1, HALF, _x(HALF), reference=_partial_full_ref,
     tags=("trap", "warp", "syncwarp mask"))
_add("syncwarp_partial_only", syncwarp_partial_only, 1, HALF, _x(HALF), (W,), tags=("warp", "syncwarp mask"))
_add("war_neighbour_in_warp", war_neighbour_in_warp, 1, B, _x(), (W,), tags=("write after read", "warp"))
_add("war_across_warps", war_across_warps, 1, B, _x(), (E,), tags=("write after read",))
_add("rmw_pairs_in_warp", rmw_pairs_in_warp, 1, B, lambda rng: (np.zeros(HALF, np.float32),), (W,),
     tags=("warp", "read-modify-write"), note="pairs of lanes of one warp update one word at one instruction")
