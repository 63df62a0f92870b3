"""Global memory: racecheck does not look at it; CUDA's memory model defines these races all the same.

Part of the race checker's validation suite: see :mod:`course.validation.race_suite`."""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda

from course.validation.races.common import B, case_adder
from course.validation.races.common import f32 as _f32
from course.validation.races.common import ints as _ints


# ---------------------------------------------------------------------------------------------------
# Global memory (racecheck does not look at it; CUDA's memory model defines these races all the same)


@cuda.jit
def global_accumulate_plain(x, out):
    """out[0] += x[i] from every thread of every block: lost updates."""
    i = cuda.grid(1)
    out[0] += x[i]


@cuda.jit
def global_accumulate_atomic(x, out):
    """Trap: the same with atomic.add: race-free."""
    i = cuda.grid(1)
    cuda.atomic.add(out, 0, x[i])


def _accum_ref(x, out):
    return np.array([x.astype(np.float64).sum()], np.float32)


@cuda.jit
def global_blocks_one_output(x, out):
    """Thread 0 of every block writes its block's value to out[0]: different blocks, different values."""
    if cuda.threadIdx.x == 0:
        out[0] = x[cuda.blockIdx.x]


@cuda.jit
def global_own_element(x, out):
    """Trap: out[i] = 2 x[i], each thread its own element: race-free."""
    i = cuda.grid(1)
    out[i] = 2.0 * x[i]


def _own_global_ref(x, out):
    return (2 * x).astype(np.float32)


@cuda.jit
def global_shift_one_block(a):
    """a[t] = a[t + 1] in place in one block, no barrier: thread t reads what thread t + 1 overwrites."""
    t = cuda.threadIdx.x
    if t < a.shape[0] - 1:
        a[t] = a[t + 1]


@cuda.jit
def global_shift_one_block_sync(a):
    """Read into a register, syncthreads (orders global memory within the block too), write: race-free."""
    t = cuda.threadIdx.x
    v = a[t + 1] if t < a.shape[0] - 1 else a[t]
    cuda.syncthreads()
    a[t] = v


def _gshift_ref(a):
    return np.concatenate([a[1:], a[-1:]])


@cuda.jit
def global_shift_many_blocks_sync(a, out):
    """Barrier inside each block, but thread 63 of block k reads a[64(k+1)], which block k+1 writes:
    no barrier orders two blocks."""
    i = cuda.grid(1)
    n = a.shape[0]
    v = a[i + 1] if i + 1 < n else a[i]
    cuda.syncthreads()
    a[i] = v
    out[i] = v


@cuda.jit
def global_flag_same_value(x, flag):
    """Every thread of every block writes 1 to flag[0]: a benign same-value write."""
    if x[cuda.grid(1)] > -1000.0:
        flag[0] = 1


@cuda.jit
def global_counter_one_warp(out):
    """out[0] += 1 by the 32 lanes of one warp: a lost-update race inside a warp."""
    out[0] += 1


# ---------------------------------------------------------------------------------------------------
# The cases (what CUDA's memory model says about each kernel above, derived by hand)

CASES: list = []
_add = case_adder(CASES)

_add("global_accumulate_plain", global_accumulate_plain, 4, B, lambda rng: (_ints(rng, 4 * B), np.zeros(1, np.float32)),
     (), True, tags=("global",))
_add("global_accumulate_atomic", global_accumulate_atomic, 4, B,
     lambda rng: (_ints(rng, 4 * B), np.zeros(1, np.float32)), reference=_accum_ref, tags=("global", "trap"))
_add("global_blocks_one_output", global_blocks_one_output, 4, B, lambda rng: (_f32(rng, 4), np.zeros(1, np.float32)),
     (), True, tags=("global",))
_add("global_own_element", global_own_element, 4, B, lambda rng: (_f32(rng, 4 * B), np.zeros(4 * B, np.float32)),
     reference=_own_global_ref, tags=("global", "trap"))
_add("global_shift_one_block", global_shift_one_block, 1, B, lambda rng: (_f32(rng, B),), (), True,
     tags=("global", "in place"))
_add("global_shift_one_block_sync", global_shift_one_block_sync, 1, B, lambda rng: (_f32(rng, B),),
     reference=_gshift_ref, tags=("global", "in place"))
_add("global_shift_many_blocks_sync", global_shift_many_blocks_sync, 3, B,
     lambda rng: (_f32(rng, 3 * B), np.zeros(3 * B, np.float32)), (), True, tags=("global", "blocks"))
_add("global_flag_same_value", global_flag_same_value, 4, B, lambda rng: (_f32(rng, 4 * B), np.zeros(1, np.int32)),
     (), False, benign=True, tags=("global", "flag"))
_add("global_counter_one_warp", global_counter_one_warp, 1, 32, lambda rng: (np.zeros(1, np.int32),), (), True,
     tags=("global", "warp"))
