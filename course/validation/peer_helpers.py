"""Device functions that live in a module of their own, for the peer-style workloads.

A kernel in :mod:`course.validation.peer_styles` calls them through an import (``from ... import``,
a module alias), the way real code splits helpers from kernels.  ``add_scaled`` has a default
argument.  The names of CUDA reach these bodies through ``numba.cuda`` imported under another name.
"""

import course  # noqa: F401  (chooses the backend before numba is imported)
import numba.cuda as ncu


@ncu.jit(device=True)
def clamp(x, lo, hi):
    """x limited to [lo, hi]."""
    return min(max(x, lo), hi)


@ncu.jit(device=True)
def add_scaled(x, y, k=2.0):
    """x + k y, with k = 2 when the caller leaves it out."""
    return x + k * y


@ncu.jit(device=True)
def warp_sum(v):
    """The sum of v over the 32 lanes of a full warp (lane 0 holds it), with shfl_down_sync."""
    off = 16
    while off > 0:
        v += ncu.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    return v


@ncu.jit(device=True)
def global_index():
    """This thread's index in a 1-D grid, spelled out from threadIdx, blockIdx and blockDim."""
    return ncu.blockIdx.x * ncu.blockDim.x + ncu.threadIdx.x
