"""Kernels written the way other people write them: the course's own versions of a public puzzle set.

The problems follow the GPU-Puzzles sequence (map, zip, guard, 2-D map, broadcast, blocks, shared
memory, pooling, dot product, convolution, prefix sum, axis sum, matrix multiply); the code is the
course's own.  What matters here is the *style*, each one a way real code names CUDA:

- ``factory``: a function takes the ``cuda`` module and returns the kernel body, which the caller then
  ``cuda.jit``-s (the style of GPU-Puzzles): CUDA reaches the body through a closure cell;
- ``numba_attr``: ``numba.cuda.threadIdx.x`` through the ``numba`` module;
- ``alias``: ``from numba import cuda as nc``;
- ``partial``: a factory bound with :func:`functools.partial`, and a launch bound the same way;
- ``closure_const``: a kernel made inside a function, reading the function's arguments (constants);
- ``device_module``: device functions imported from another module
  (:mod:`course.validation.peer_helpers`), one called with a default argument left out;
- ``kernel_default``: a kernel whose last parameter has a default value, launched without it: the H200
  refuses it (numba-cuda 0.30.4: "Signature mismatch"), and so must the engine (``expect_error``).

Each :class:`Workload` builds its kernel with ``build()``, so the kernel is made the way its style makes
it, at the moment it is needed.  ``tests/test_peer_styles.py`` runs each on the CPU engine;
``scripts/gpu/validate_races.py`` runs the same workloads on the H200 and records the results.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
import numba
from numba import cuda
from numba import cuda as nc
from numba import float32

from course.validation import peer_helpers as ph
from course.validation.peer_helpers import add_scaled, clamp

TPB = 8  # threads per block in the small puzzles (as the puzzle set uses)


@dataclass(frozen=True)
class Workload:
    name: str
    style: str
    build: Callable[[], Any]  # returns the launchable kernel, made the way the style makes it
    griddim: Any
    blockdim: Any
    make_args: Callable[[np.random.Generator], tuple]
    reference: Callable[..., np.ndarray]  # NumPy's value of the first argument (the output)
    expect_error: str = ""  # the launch must fail (as on the GPU) with an exception of this type
    def args(self, seed: int = 0) -> tuple:
        return tuple(self.make_args(np.random.default_rng(seed)))


# ---------------------------------------------------------------------------------------------------
# Factories that take the cuda module (GPU-Puzzles style)


def map_factory(cuda):
    def call(out, a, size):
        i = cuda.threadIdx.x
        if i < size:
            out[i] = a[i] + 10
    return call


def zip_factory(cuda):
    def call(out, a, b, size):
        i = cuda.threadIdx.x
        if i < size:
            out[i] = a[i] + b[i]
    return call


def shared_factory(cuda):
    def call(out, a, size):
        shared = cuda.shared.array(TPB, float32)
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        local_i = cuda.threadIdx.x
        if i < size:
            shared[local_i] = a[i]
        cuda.syncthreads()
        if i < size:
            out[i] = shared[local_i] + 10
    return call


def pooling_factory(cuda):
    """out[i] = a[i-2] + a[i-1] + a[i] (missing terms are 0), through a block's shared copy."""
    def call(out, a, size):
        shared = cuda.shared.array(TPB, float32)
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        local_i = cuda.threadIdx.x
        if i < size:
            shared[local_i] = a[i]
        cuda.syncthreads()
        if i < size:
            acc = shared[local_i]
            if local_i >= 1:
                acc += shared[local_i - 1]
            if local_i >= 2:
                acc += shared[local_i - 2]
            out[i] = acc
    return call


def dot_factory(cuda):
    """out[0] = a . b with one block: products in shared memory, a tree sum, thread 0 writes."""
    def call(out, a, b, size):
        shared = cuda.shared.array(TPB, float32)
        local_i = cuda.threadIdx.x
        shared[local_i] = a[local_i] * b[local_i] if local_i < size else 0.0
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if local_i < step:
                shared[local_i] += shared[local_i + step]
            cuda.syncthreads()
            step //= 2
        if local_i == 0:
            out[0] = shared[0]
    return call


CONV_MAX = 4
CONV_SHARED = TPB + CONV_MAX  # a literal for the shape: `TPB + CONV_MAX` inside a kernel does not compile for the GPU


def conv_factory(cuda):
    """1-D convolution out[i] = sum_k a[i + k] b[k] (zero past the end), one block of TPB threads."""
    def call(out, a, b, a_size, b_size):
        sa = cuda.shared.array(CONV_SHARED, float32)
        sb = cuda.shared.array(CONV_MAX, float32)
        i = cuda.threadIdx.x
        sa[i] = a[i] if i < a_size else 0.0
        if i < CONV_MAX:
            sa[TPB + i] = a[TPB + i] if TPB + i < a_size else 0.0
            sb[i] = b[i] if i < b_size else 0.0
        cuda.syncthreads()
        if i < a_size:
            acc = float32(0)
            for k in range(b_size):
                acc += sa[i + k] * sb[k]
            out[i] = acc
    return call


def prefix_block_sums_factory(cuda):
    """out[b] = the sum of block b's TPB elements, by an in-block Hillis-Steele scan (last element)."""
    def call(out, a, size):
        shared = cuda.shared.array(TPB, float32)
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        t = cuda.threadIdx.x
        shared[t] = a[i] if i < size else 0.0
        cuda.syncthreads()
        off = 1
        while off < TPB:
            v = shared[t - off] if t >= off else 0.0
            cuda.syncthreads()
            shared[t] += v
            cuda.syncthreads()
            off *= 2
        if t == TPB - 1:
            out[cuda.blockIdx.x] = shared[t]
    return call


def matmul_factory(cuda):
    """Tiled out = a @ b for square n, TPB x TPB tiles."""
    def call(out, a, b, n):
        sa = cuda.shared.array((TPB, TPB), float32)
        sb = cuda.shared.array((TPB, TPB), float32)
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        li = cuda.threadIdx.x
        lj = cuda.threadIdx.y
        acc = float32(0)
        for k0 in range(0, n, TPB):
            sa[li, lj] = a[i, k0 + lj] if i < n and k0 + lj < n else 0.0
            sb[li, lj] = b[k0 + li, j] if k0 + li < n and j < n else 0.0
            cuda.syncthreads()
            for k in range(TPB):
                acc += sa[li, k] * sb[k, lj]
            cuda.syncthreads()
        if i < n and j < n:
            out[i, j] = acc
    return call


# ---------------------------------------------------------------------------------------------------
# Through the numba module, an alias, closures over constants


@cuda.jit
def map2d_numba_attr(out, a, size):
    """2-D map with numba.cuda.threadIdx spelled through the numba module."""
    i = numba.cuda.threadIdx.x
    j = numba.cuda.threadIdx.y
    if i < size and j < size:
        out[i, j] = a[i, j] + 10


@nc.jit
def broadcast_alias(out, a, b, size):
    """out[i, j] = a[i, 0] + b[0, j], with the module imported as nc."""
    i = nc.threadIdx.x
    j = nc.threadIdx.y
    if i < size and j < size:
        out[i, j] = a[i, 0] + b[0, j]


@numba.cuda.jit
def blocks_numba_grid(out, a, size):
    """Blocks: numba.cuda.grid(1), decorated as numba.cuda.jit."""
    i = numba.cuda.grid(1)
    if i < size:
        out[i] = a[i] + 10


def make_axis_sum(ncols):
    """A factory that closes over a constant: out[r] = the sum of row r's ncols columns, one block per row."""
    @cuda.jit
    def axis_sum(out, a):
        s = cuda.shared.array(TPB, float32)
        r = cuda.blockIdx.y
        t = cuda.threadIdx.x
        acc = float32(0)
        c = t
        while c < ncols:
            acc += a[r, c]
            c += TPB
        s[t] = acc
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                s[t] += s[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[r] = s[0]
    return axis_sum


def make_scale(k):
    """A kernel made inside a function, reading its argument k."""
    def scale(out, a):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = a[i] * k
    return cuda.jit(scale)


def guard_factory(cuda, offset):
    """Guard: more threads than data; the factory takes the module and a constant."""
    def call(out, a, size):
        i = cuda.threadIdx.x
        if i < size:
            out[i] = a[i] + offset
    return call


@cuda.jit
def device_module(out, a, b, size):
    """Device functions from another module: ph.global_index(), clamp(), add_scaled() with k left out."""
    i = ph.global_index()
    if i < size:
        out[i] = clamp(add_scaled(a[i], b[i]), -1.0, 1.0)


@cuda.jit
def device_module_warp(out, a):
    """A warp sum from another module's device function (shfl_down_sync inside it)."""
    i = cuda.grid(1)
    v = ph.warp_sum(a[i])
    if cuda.threadIdx.x % 32 == 0:
        out[i // 32] = v


@cuda.jit
def kernel_default(out, a, k=3.0):
    """A kernel whose last parameter has a default, launched without it."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] * k


# ---------------------------------------------------------------------------------------------------
# The workloads


def _f(rng, *shape):
    return rng.integers(-8, 9, shape).astype(np.float32)  # small integers: exact sums in any order


WORKLOADS: list = []


def _w(name, style, build, grid, block, make_args, reference, expect_error=""):
    WORKLOADS.append(Workload(name, style, build, grid, block, make_args, reference, expect_error))


_w("map", "factory", lambda: cuda.jit(map_factory(cuda)), 1, 4,
   lambda r: (np.zeros(4, np.float32), _f(r, 4), 4), lambda out, a, size: a + 10)
_w("zip", "factory", lambda: cuda.jit(zip_factory(cuda)), 1, 4,
   lambda r: (np.zeros(4, np.float32), _f(r, 4), _f(r, 4), 4), lambda out, a, b, size: a + b)
_w("guard", "factory", lambda: cuda.jit(guard_factory(cuda, 10)), 1, 8,
   lambda r: (np.zeros(4, np.float32), _f(r, 4), 4), lambda out, a, size: a + 10)
_w("map2d", "numba_attr", lambda: map2d_numba_attr, 1, (3, 3),
   lambda r: (np.zeros((2, 2), np.float32), _f(r, 2, 2), 2), lambda out, a, size: a + 10)
_w("broadcast", "alias", lambda: broadcast_alias, 1, (3, 3),
   lambda r: (np.zeros((2, 2), np.float32), _f(r, 2, 1), _f(r, 1, 2), 2), lambda out, a, b, size: a + b)
_w("blocks", "numba_attr", lambda: blocks_numba_grid, 3, 4,
   lambda r: (np.zeros(9, np.float32), _f(r, 9), 9), lambda out, a, size: a + 10)
_w("blocks_partial", "partial", lambda: cuda.jit(functools.partial(guard_factory, cuda)(10)), 1, 16,
   lambda r: (np.zeros(9, np.float32), _f(r, 9), 9), lambda out, a, size: a + 10)
_w("shared", "factory", lambda: cuda.jit(shared_factory(cuda)), 2, TPB,
   lambda r: (np.zeros(10, np.float32), _f(r, 10), 10), lambda out, a, size: a + 10)


def _pool_ref(out, a, size):
    r = a.astype(np.float64).copy()
    for i in range(size):
        lo = (i // TPB) * TPB  # the puzzle's block-local window
        r[i] = a[max(lo, i - 2):i + 1].sum()
    return r.astype(np.float32)


_w("pooling", "factory", lambda: cuda.jit(pooling_factory(cuda)), 1, TPB,
   lambda r: (np.zeros(TPB, np.float32), _f(r, TPB), TPB), _pool_ref)
_w("dot", "factory", lambda: cuda.jit(dot_factory(cuda)), 1, TPB,
   lambda r: (np.zeros(1, np.float32), _f(r, 6), _f(r, 6), 6),
   lambda out, a, b, size: np.array([np.dot(a.astype(np.float64), b)], np.float32))


def _conv_ref(out, a, b, a_size, b_size):
    p = np.concatenate([a, np.zeros(b_size, np.float32)]).astype(np.float64)
    return np.array([sum(p[i + k] * b[k] for k in range(b_size)) for i in range(a_size)], np.float32)


_w("conv", "factory", lambda: cuda.jit(conv_factory(cuda)), 1, TPB,
   lambda r: (np.zeros(6, np.float32), _f(r, 6), _f(r, 3), 6, 3), _conv_ref)
_w("prefix_block_sums", "factory", lambda: cuda.jit(prefix_block_sums_factory(cuda)), 2, TPB,
   lambda r: (np.zeros(2, np.float32), _f(r, 15), 15),
   lambda out, a, size: np.array([a[:TPB].sum(), a[TPB:].sum()], np.float32))
_w("axis_sum", "closure_const", lambda: make_axis_sum(6), (1, 4), TPB,
   lambda r: (np.zeros(4, np.float32), _f(r, 4, 6)), lambda out, a: a.astype(np.float64).sum(axis=1).astype(np.float32))
_w("matmul", "factory", lambda: cuda.jit(matmul_factory(cuda)), (2, 2), (TPB, TPB),
   lambda r: (np.zeros((13, 13), np.float32), _f(r, 13, 13), _f(r, 13, 13), 13),
   lambda out, a, b, n: (a.astype(np.float64) @ b).astype(np.float32))
_w("scale", "closure_const", lambda: make_scale(3.0), 2, 32,
   lambda r: (np.zeros(40, np.float32), _f(r, 40)), lambda out, a: a * 3)
_w("device_module", "device_module", lambda: device_module, 2, 32,
   lambda r: (np.zeros(50, np.float32), _f(r, 50) / 16, _f(r, 50) / 16, 50),
   lambda out, a, b, size: np.clip(a + 2 * b, -1, 1).astype(np.float32))
_w("device_module_warp", "device_module", lambda: device_module_warp, 2, 64,
   lambda r: (np.zeros(4, np.float32), _f(r, 128)),
   lambda out, a: a.reshape(4, 32).astype(np.float64).sum(axis=1).astype(np.float32))
_w("kernel_default", "kernel_default", lambda: kernel_default, 1, 32,
   lambda r: (np.zeros(20, np.float32), _f(r, 20)), lambda out, a: a * 3, expect_error="TypeError")

WORKLOADS_BY_NAME = {w.name: w for w in WORKLOADS}


def launch(w: Workload, args: tuple) -> None:
    """Launch ``w`` on ``args`` (arrays updated in place); partial-style workloads launch through a partial."""
    kernel = w.build()
    if w.style == "partial":
        functools.partial(kernel[w.griddim, w.blockdim], args[0])(*args[1:])
    else:
        kernel[w.griddim, w.blockdim](*args)
