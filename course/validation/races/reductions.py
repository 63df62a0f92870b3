"""Shared memory: block reductions, with barriers, without, and with warp-level steps (chapter 02's last-warp
reductions, imported from :mod:`course.kernels.warps`).

Part of the race checker's validation suite: see :mod:`course.validation.race_suite`."""

from __future__ import annotations

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32

from course.kernels.warps import REDUCE_THREADS, last_warp_syncwarp, last_warp_unsynced
from course.validation.races.common import B, W, case_adder
from course.validation.races.common import ints as _ints


# ---------------------------------------------------------------------------------------------------
# Reductions


@cuda.jit
def reduce_nosync(x, out):
    """Tree reduction with sequential addressing and no barrier inside the loop."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * B + t]
    cuda.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_sync(x, out):
    """The same with syncthreads() after each step: race-free."""
    s = cuda.shared.array(B, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * B + t]
    cuda.syncthreads()
    stride = B // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


# The last-warp pair is chapter 02's own (course.kernels.warps), launched as the chapter launches it: blocks of
# REDUCE_THREADS, the size of its shared array (a 64-thread block would read words no thread wrote)
def _block_sums(x, out):
    return x.reshape(-1, x.size // out.size).astype(np.float64).sum(axis=1).astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# The cases (what CUDA's memory model says about each kernel above, derived by hand)

CASES: list = []
_add = case_adder(CASES)

# reduce: stride 32 crosses warps (thread t < 32 reads s[t+32], written... only at the initial store,
# which is before the barrier); later steps: thread t writes s[t] while thread t - stride reads it;
# for stride 32 the readers are t < 32 and the writers of s[32..63] do not write again -> stride 16..1
# inside warp 0 only.  Step stride=32 writes s[0..31] (warp 0) while ... the next step (stride 16) reads
# s[16..31] (warp 0 lanes 0..15) -> warp 0 only.  So warnings only.
_add("reduce_nosync", reduce_nosync, 2, B, lambda rng: (_ints(rng, 2 * B), np.zeros(2, np.float32)), (W,),
     tags=("reduction",), note="every racing pair is inside warp 0: racecheck grades it a warning")
_add("reduce_sync", reduce_sync, 2, B, lambda rng: (_ints(rng, 2 * B), np.zeros(2, np.float32)),
     reference=_block_sums, tags=("reduction",))
# last_warp_unsynced: the tree steps down to 64 have barriers; below them warp 0 alone (t < 32) runs six steps with
# none, each lane reading words its neighbours write: every racing pair is inside warp 0 -> a warning only
_add("reduce_warp_unsynced", last_warp_unsynced, 2, REDUCE_THREADS,
     lambda rng: (_ints(rng, 2 * REDUCE_THREADS), np.zeros(2, np.float32)), (W,), tags=("reduction", "warp"),
     note="chapter 02's last_warp_unsynced (course.kernels.warps)")
_add("reduce_warp_syncwarp", last_warp_syncwarp, 2, REDUCE_THREADS,
     lambda rng: (_ints(rng, 2 * REDUCE_THREADS), np.zeros(2, np.float32)), reference=_block_sums,
     tags=("reduction", "warp"), note="chapter 02's last_warp_syncwarp (course.kernels.warps)")
