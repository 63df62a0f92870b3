"""The CPU engine's benchmark and validation suite: 26 small kernels of the kinds the course teaches.

Each entry of ``SUITE`` is one launch of about 8192 threads with a NumPy reference and a factory of
fresh arguments, so that one harness can run it on the engine, on numba's stock simulator and on a
GPU and check all three against NumPy.  The kernels, in groups:

- memory access patterns: ``copy_f32``, ``copy_f64``, ``copy_u8``, ``copy_strided`` (stride 4),
  ``copy_misaligned`` (offset 1), ``scale_broadcast`` (every thread reads one element), ``saxpy``;
- launch shapes: ``scale_partial_warp`` (48-thread blocks: the second warp is half empty),
  ``matrix_add_2d`` (chapter 01's ``matrix_add``, 16×16 blocks), ``matrix_scale_odd_block`` (24×10 blocks, partial last warp);
- shared-memory tiles: ``transpose_naive``, ``transpose_tile`` ([32][32]), ``transpose_padded``
  ([32][33]), ``transpose_swizzled`` (col ^ row), ``matmul_tiled`` (16×16 tiles),
  ``stencil_1d`` (a halo of 3), ``reverse_dynamic_shared`` (``cuda.shared.array(0, …)``);
- reductions: ``reduce_interleaved`` and ``reduce_sequential`` (shared memory and barriers),
  ``reduce_shfl_down`` (``shfl_down_sync``), ``warp_sum_shfl_xor`` (``shfl_xor_sync`` butterfly),
  ``count_positive`` (``syncthreads_count``);
- the rest: ``histogram_global`` and ``histogram_shared`` (atomics), ``clamp_device_function``
  (a ``device=True`` function), ``sort8_local`` (``cuda.local.array``).

Reduction inputs are small integers stored as floats, so every summation order gives the same exact
sum and the results can be compared bit for bit with NumPy.  Used by ``scripts/bench_engine.py`` and
``tests/test_engine_suite.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32, int32

from course.engine import normalise_dims
from course.kernels.basics import matrix_add  # chapter 01's own kernel: the case matrix_add_2d launches it

FULL_MASK = 0xFFFFFFFF
TPB = 256  # threads_per_block of the 1-D kernels
TILE = 32  # transpose tile
MM_TILE = 16  # matmul tile
MM_K = 24  # inner dimension of matmul: not a multiple of MM_TILE, so the last tile is partial
RADIUS = 3  # stencil half-width
# Shared-array shapes must be constants the GPU compiler sees: an expression inside the kernel
# (TILE + 1, TPB // 32 …) runs on the CPU but fails to type for the GPU (tests/test_gpu_typing.py).
TILE_PAD = TILE + 1
WARPS_PER_BLOCK = TPB // 32
HALO_WIDTH = TPB + 2 * RADIUS
NBINS = 16
SORT_W = 8  # elements each thread sorts in its local array


def _blocks(n, tpb):
    return (n + tpb - 1) // tpb


# --- memory access patterns ------------------------------------------------------------------------


@cuda.jit
def copy(src, dst):
    """dst[i] = src[i]: neighbouring threads touch neighbouring elements (any dtype)."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[i]


@cuda.jit
def copy_strided(src, dst, stride):
    """dst[i] = src[i * stride]: a warp's loads spread over stride times as many sectors."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[i * stride]


@cuda.jit
def copy_misaligned(src, dst, offset):
    """dst[i] = src[i + offset]: a warp's 128 bytes straddle one more sector than needed."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[i + offset]


@cuda.jit
def scale_broadcast(src, scale, dst):
    """dst[i] = src[i] * scale[0]: every thread of a warp reads the same element (a broadcast)."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[i] * scale[0]


@cuda.jit
def saxpy(a, x, y):
    """y[i] = a * x[i] + y[i] in float32."""
    i = cuda.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]


# --- launch shapes ---------------------------------------------------------------------------------


@cuda.jit
def scale_partial_warp(src, dst):
    """dst[i] = 2 * src[i] + 1, launched with 48-thread blocks so every block's second warp is half empty."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = 2 * src[i] + 1


@cuda.jit
def matrix_scale_odd_block(a, out, factor):
    """out = factor * a with 24×10 blocks: 240 threads, so the last warp of each block has 16 lanes."""
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = factor * a[row, col]


# --- shared-memory tiles ---------------------------------------------------------------------------


@cuda.jit
def transpose_naive(a, out):
    """out[col, row] = a[row, col] straight from global memory: the stores go down a column."""
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]


@cuda.jit
def transpose_tile(a, out):
    """Transpose through a [32][32] shared tile: coalesced both ways, 32-way bank conflicts on the read."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    if row < a.shape[0] and col < a.shape[1]:
        tile[ty, tx] = a[row, col]
    cuda.syncthreads()
    out_row = cuda.blockIdx.x * TILE + ty  # the block's tile lands mirrored in out
    out_col = cuda.blockIdx.y * TILE + tx
    if out_row < out.shape[0] and out_col < out.shape[1]:
        out[out_row, out_col] = tile[tx, ty]


@cuda.jit
def transpose_padded(a, out):
    """transpose_tile with a [32][33] tile: the extra column puts a column's words in 32 different banks."""
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    if row < a.shape[0] and col < a.shape[1]:
        tile[ty, tx] = a[row, col]
    cuda.syncthreads()
    out_row = cuda.blockIdx.x * TILE + ty
    out_col = cuda.blockIdx.y * TILE + tx
    if out_row < out.shape[0] and out_col < out.shape[1]:
        out[out_row, out_col] = tile[tx, ty]


@cuda.jit
def transpose_swizzled(a, out):
    """transpose_tile with the column index XOR-ed by the row (a swizzle): conflict-free without padding."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    if row < a.shape[0] and col < a.shape[1]:
        tile[ty, tx ^ ty] = a[row, col]
    cuda.syncthreads()
    out_row = cuda.blockIdx.x * TILE + ty
    out_col = cuda.blockIdx.y * TILE + tx
    if out_row < out.shape[0] and out_col < out.shape[1]:
        out[out_row, out_col] = tile[tx, ty ^ tx]


@cuda.jit
def matmul_tiled(a, b, c):
    """c = a @ b with 16×16 shared tiles of a and b; tiles past the edges are filled with zeros."""
    sa = cuda.shared.array((MM_TILE, MM_TILE), float32)
    sb = cuda.shared.array((MM_TILE, MM_TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    m, k_total = a.shape
    n = b.shape[1]
    acc = float32(0.0)
    for t in range((k_total + MM_TILE - 1) // MM_TILE):
        k_a = t * MM_TILE + tx
        k_b = t * MM_TILE + ty
        sa[ty, tx] = a[row, k_a] if row < m and k_a < k_total else float32(0.0)
        sb[ty, tx] = b[k_b, col] if k_b < k_total and col < n else float32(0.0)
        cuda.syncthreads()
        for k in range(MM_TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()  # nobody overwrites a tile another thread still reads
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def stencil_1d(x, out):
    """out[i] = sum of x[i-3 .. i+3] (zero outside x), each block staging its slice plus a halo in shared memory."""
    s = cuda.shared.array(HALO_WIDTH, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    s[tid + RADIUS] = x[i] if i < n else float32(0.0)
    if tid < RADIUS:
        left = i - RADIUS
        right = i + TPB
        s[tid] = x[left] if left >= 0 else float32(0.0)
        s[tid + TPB + RADIUS] = x[right] if right < n else float32(0.0)
    cuda.syncthreads()
    if i < n:
        acc = float32(0.0)
        for k in range(2 * RADIUS + 1):
            acc += s[tid + k]
        out[i] = acc


@cuda.jit
def reverse_dynamic_shared(x, out):
    """Reverse each block's slice through dynamically sized shared memory (launch[..., 0, nbytes])."""
    s = cuda.shared.array(0, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i]
    cuda.syncthreads()
    out[i] = s[cuda.blockDim.x - 1 - tid]


# --- reductions --------------------------------------------------------------------------------------


@cuda.jit
def reduce_interleaved(x, out):
    """Per-block sum, interleaved addressing: thread t adds s[2·stride·t + stride] into s[2·stride·t]."""
    s = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < x.shape[0] else float32(0.0)
    cuda.syncthreads()
    stride = 1
    while stride < TPB:
        idx = 2 * stride * tid
        if idx < TPB:
            s[idx] += s[idx + stride]
        cuda.syncthreads()
        stride *= 2
    if tid == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_sequential(x, out):
    """Per-block sum, sequential addressing: the first half of the threads add the second half, halving."""
    s = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < x.shape[0] else float32(0.0)
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_shfl_down(x, out):
    """Per-block sum: each warp sums with shfl_down_sync, warp 0 sums the 8 warp totals the same way."""
    warp_sums = cuda.shared.array(WARPS_PER_BLOCK, float32)
    tid = cuda.threadIdx.x
    lane = tid % 32
    warp = tid // 32
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else float32(0.0)
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    if lane == 0:
        warp_sums[warp] = v
    cuda.syncthreads()
    if warp == 0:  # warp-uniform branch: all 32 lanes of warp 0 take part in the shuffles below
        v = warp_sums[lane] if lane < TPB // 32 else float32(0.0)
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(FULL_MASK, v, offset)
            offset //= 2
        if lane == 0:
            out[cuda.blockIdx.x] = v


@cuda.jit
def warp_sum_shfl_xor(x, out):
    """Every lane ends with its warp's sum (butterfly with shfl_xor_sync); out[i] = that sum."""
    i = cuda.grid(1)
    n = x.shape[0]
    v = x[i] if i < n else float32(0.0)  # lanes past the end still take part, with 0
    mask = 16
    while mask > 0:
        v += cuda.shfl_xor_sync(FULL_MASK, v, mask)
        mask //= 2
    if i < n:
        out[i] = v


@cuda.jit
def count_positive(x, out):
    """out[block] = how many of the block's elements are > 0, counted by syncthreads_count."""
    i = cuda.grid(1)
    positive = 1 if i < x.shape[0] and x[i] > 0 else 0  # the predicate is an int32 on the GPU
    count = cuda.syncthreads_count(positive)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = count


# --- atomics, device functions, local arrays --------------------------------------------------------


@cuda.jit
def histogram_global(values, hist):
    """hist[v] += 1 for every value, with one global atomic per element."""
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(hist, values[i], 1)


@cuda.jit
def histogram_shared(values, hist):
    """A per-block histogram in shared memory (shared atomics), then one global atomic per bin per block."""
    local_hist = cuda.shared.array(NBINS, int32)
    tid = cuda.threadIdx.x
    if tid < NBINS:
        local_hist[tid] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(local_hist, values[i], 1)
    cuda.syncthreads()
    if tid < NBINS:
        cuda.atomic.add(hist, tid, local_hist[tid])


@cuda.jit(device=True)
def clamp(v, lo, hi):
    """v limited to [lo, hi]."""
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@cuda.jit
def clamp_device_function(x, out):
    """out[i] = clamp(2 * x[i], -1, 1) through a device function."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = clamp(2 * x[i], float32(-1.0), float32(1.0))


@cuda.jit
def sort8_local(x, out):
    """Each thread copies its row of 8 into a local array, insertion-sorts it there, writes it back."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        buf = cuda.local.array(SORT_W, float32)
        for k in range(SORT_W):
            buf[k] = x[i, k]
        for k in range(1, SORT_W):
            v = buf[k]
            j = k - 1
            while j >= 0 and buf[j] > v:
                buf[j + 1] = buf[j]
                j -= 1
            buf[j + 1] = v
        for k in range(SORT_W):
            out[i, k] = buf[k]


# --- the registry ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteKernel:
    """One suite launch: kernel, problem shape, launch shape, fresh arguments and the NumPy answer."""

    name: str
    kernel: Any
    shape: tuple  # default problem shape: about 8192 threads
    make_args: Callable[[np.random.Generator, tuple], tuple]
    config: Callable[[tuple], tuple]  # shape -> (griddim, blockdim, dynamic shared bytes)
    reference: Callable[..., tuple]  # the arguments before the launch -> expected outputs
    outputs: tuple  # positions of the arguments the kernel writes
    odd_shapes: tuple = ()  # awkward problem shapes the tests also run
    warp_ops: tuple = field(default_factory=tuple)  # warp intrinsics used (numba's simulator lacks them)
    exact_on_gpu: bool = True  # False where the GPU may fuse a*b+c into one FMA (one rounding, not two)

    def args(self, rng, shape=None):
        """Fresh arguments for ``shape`` (default: the suite shape)."""
        return self.make_args(rng, self.shape if shape is None else shape)

    def launch(self, args, shape=None):
        """Launch the kernel on ``args`` the ordinary way, ``kernel[griddim, blockdim](...)``."""
        grid, block, dyn = self.config(self.shape if shape is None else shape)
        if dyn:
            self.kernel[grid, block, 0, dyn](*args)
        else:
            self.kernel[grid, block](*args)

    def threads(self, shape=None):
        """How many CUDA threads the launch has."""
        grid, block, _ = self.config(self.shape if shape is None else shape)
        return math.prod(normalise_dims(grid, "griddim")) * math.prod(normalise_dims(block, "blockdim"))

    def expected(self, args):
        """The NumPy answer for ``args`` (taken before the launch), one array per output."""
        return tuple(self.reference(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]))


def _config_1d(tpb=TPB):
    return lambda shape: (_blocks(shape[0], tpb), tpb, 0)


def _config_2d(bx, by):
    return lambda shape: ((_blocks(shape[1], bx), _blocks(shape[0], by)), (bx, by), 0)


def _f32(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def _small_ints_f32(rng, shape):
    # small integers as float32: every summation order gives the same, exact sum
    return rng.integers(-8, 9, size=shape).astype(np.float32)


def _sentinel(shape, dtype=np.float32):
    out = np.empty(shape, dtype=dtype)
    out.fill(np.nan if np.dtype(dtype).kind == "f" else 0x5A)
    return out


def _block_sums(x):
    padded = np.zeros(_blocks(x.size, TPB) * TPB, dtype=np.float64)
    padded[: x.size] = x
    return padded.reshape(-1, TPB).sum(axis=1).astype(np.float32)


def _warp_sums_each(x):
    padded = np.zeros(_blocks(x.size, 32) * 32, dtype=np.float64)
    padded[: x.size] = x
    sums = padded.reshape(-1, 32).sum(axis=1)
    return np.repeat(sums, 32)[: x.size].astype(np.float32)


def _stencil(x):
    padded = np.concatenate([np.zeros(RADIUS), x.astype(np.float64), np.zeros(RADIUS)])
    return np.convolve(padded, np.ones(2 * RADIUS + 1), mode="valid").astype(np.float32)


def _clamp_ref(x):
    return np.clip(np.float32(2) * x, np.float32(-1), np.float32(1))


N = 8192
ODD_2D = ((17, 16), (1, 33))
ODD_1D = ((1,), (33,), (1000,))



def _with_odd_1d(k):
    # 1-D kernels with a bounds guard also run on sizes that leave a block (and a warp) partly empty
    if k.odd_shapes or len(k.shape) != 1 or k.name == "reverse_dynamic_shared":  # that one needs whole blocks
        return k
    return replace(k, odd_shapes=ODD_1D)


SUITE: dict[str, SuiteKernel] = {
    k.name: _with_odd_1d(k)
    for k in [
        SuiteKernel(
            "copy_f32", copy, (N,),
            lambda rng, s: (_f32(rng, s), _sentinel(s)),
            _config_1d(), lambda src, dst: (src,), (1,),
        ),
        SuiteKernel(
            "copy_f64", copy, (N,),
            lambda rng, s: (rng.standard_normal(s), _sentinel(s, np.float64)),
            _config_1d(), lambda src, dst: (src,), (1,),
        ),
        SuiteKernel(
            "copy_u8", copy, (N,),
            lambda rng, s: (rng.integers(0, 256, size=s, dtype=np.uint8), _sentinel(s, np.uint8)),
            _config_1d(), lambda src, dst: (src,), (1,),
        ),
        SuiteKernel(
            "copy_strided", copy_strided, (N,),
            lambda rng, s: (_f32(rng, (s[0] * 4,)), _sentinel(s), 4),
            _config_1d(), lambda src, dst, stride: (src[::stride][: dst.size],), (1,),
        ),
        SuiteKernel(
            "copy_misaligned", copy_misaligned, (N,),
            lambda rng, s: (_f32(rng, (s[0] + 1,)), _sentinel(s), 1),
            _config_1d(), lambda src, dst, off: (src[off : off + dst.size],), (1,),
        ),
        SuiteKernel(
            "scale_broadcast", scale_broadcast, (N,),
            lambda rng, s: (_f32(rng, s), _f32(rng, (1,)), _sentinel(s)),
            _config_1d(), lambda src, scale, dst: (src * scale[0],), (2,),
        ),
        SuiteKernel(
            "saxpy", saxpy, (N,),
            lambda rng, s: (np.float32(rng.standard_normal()), _f32(rng, s), _f32(rng, s)),
            _config_1d(), lambda a, x, y: (a * x + y,), (2,), exact_on_gpu=False,
        ),
        SuiteKernel(
            "scale_partial_warp", scale_partial_warp, (N,),
            lambda rng, s: (_f32(rng, s), _sentinel(s)),
            _config_1d(48), lambda src, dst: (np.float32(2) * src + np.float32(1),), (1,),
        ),
        SuiteKernel(
            "matrix_add_2d", matrix_add, (64, 128),
            lambda rng, s: (_f32(rng, s), _f32(rng, s), _sentinel(s)),
            _config_2d(16, 16), lambda a, b, out: (a + b,), (2,), ODD_2D,
        ),
        SuiteKernel(
            "matrix_scale_odd_block", matrix_scale_odd_block, (60, 136),
            lambda rng, s: (_f32(rng, s), _sentinel(s), np.float32(1.5)),
            _config_2d(24, 10), lambda a, out, f: (f * a,), (1,), ODD_2D,
        ),
        SuiteKernel(
            "transpose_naive", transpose_naive, (64, 128),
            lambda rng, s: (_f32(rng, s), _sentinel(s[::-1])),
            _config_2d(16, 16), lambda a, out: (a.T,), (1,), ODD_2D,
        ),
        SuiteKernel(
            "transpose_tile", transpose_tile, (64, 128),
            lambda rng, s: (_f32(rng, s), _sentinel(s[::-1])),
            _config_2d(TILE, TILE), lambda a, out: (a.T,), (1,), ODD_2D,
        ),
        SuiteKernel(
            "transpose_padded", transpose_padded, (64, 128),
            lambda rng, s: (_f32(rng, s), _sentinel(s[::-1])),
            _config_2d(TILE, TILE), lambda a, out: (a.T,), (1,), ODD_2D,
        ),
        SuiteKernel(
            "transpose_swizzled", transpose_swizzled, (64, 128),
            lambda rng, s: (_f32(rng, s), _sentinel(s[::-1])),
            _config_2d(TILE, TILE), lambda a, out: (a.T,), (1,), ODD_2D,
        ),
        SuiteKernel(
            "matmul_tiled", matmul_tiled, (64, 128),
            lambda rng, s: (_small_ints_f32(rng, (s[0], MM_K)), _small_ints_f32(rng, (MM_K, s[1])), _sentinel(s)),
            _config_2d(MM_TILE, MM_TILE),
            lambda a, b, c: ((a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32),), (2,), ODD_2D,
        ),
        SuiteKernel(
            "stencil_1d", stencil_1d, (N,),
            lambda rng, s: (_small_ints_f32(rng, s), _sentinel(s)),
            _config_1d(), lambda x, out: (_stencil(x),), (1,),
        ),
        SuiteKernel(
            "reverse_dynamic_shared", reverse_dynamic_shared, (N,),
            lambda rng, s: (_f32(rng, s), _sentinel(s)),
            lambda s: (s[0] // TPB, TPB, TPB * 4),
            lambda x, out: (x.reshape(-1, TPB)[:, ::-1].reshape(-1),), (1,),
        ),
        SuiteKernel(
            "reduce_interleaved", reduce_interleaved, (N,),
            lambda rng, s: (_small_ints_f32(rng, s), _sentinel((_blocks(s[0], TPB),))),
            _config_1d(), lambda x, out: (_block_sums(x),), (1,),
        ),
        SuiteKernel(
            "reduce_sequential", reduce_sequential, (N,),
            lambda rng, s: (_small_ints_f32(rng, s), _sentinel((_blocks(s[0], TPB),))),
            _config_1d(), lambda x, out: (_block_sums(x),), (1,),
        ),
        SuiteKernel(
            "reduce_shfl_down", reduce_shfl_down, (N,),
            lambda rng, s: (_small_ints_f32(rng, s), _sentinel((_blocks(s[0], TPB),))),
            _config_1d(), lambda x, out: (_block_sums(x),), (1,), warp_ops=("shfl_down_sync",),
        ),
        SuiteKernel(
            "warp_sum_shfl_xor", warp_sum_shfl_xor, (N,),
            lambda rng, s: (_small_ints_f32(rng, s), _sentinel(s)),
            _config_1d(), lambda x, out: (_warp_sums_each(x),), (1,), warp_ops=("shfl_xor_sync",),
        ),
        SuiteKernel(
            "count_positive", count_positive, (N,),
            lambda rng, s: (_f32(rng, s), _sentinel((_blocks(s[0], TPB),), np.int32)),
            _config_1d(),
            lambda x, out: (np.array([np.count_nonzero(x[b * TPB : (b + 1) * TPB] > 0) for b in range(out.size)],
                                     dtype=np.int32),), (1,),
        ),
        SuiteKernel(
            "histogram_global", histogram_global, (N,),
            lambda rng, s: (rng.integers(0, NBINS, size=s).astype(np.int32), np.zeros(NBINS, np.int32)),
            _config_1d(), lambda v, h: (np.bincount(v, minlength=NBINS).astype(np.int32),), (1,),
        ),
        SuiteKernel(
            "histogram_shared", histogram_shared, (N,),
            lambda rng, s: (rng.integers(0, NBINS, size=s).astype(np.int32), np.zeros(NBINS, np.int32)),
            _config_1d(), lambda v, h: (np.bincount(v, minlength=NBINS).astype(np.int32),), (1,),
        ),
        SuiteKernel(
            "clamp_device_function", clamp_device_function, (N,),
            lambda rng, s: (_f32(rng, s), _sentinel(s)),
            _config_1d(), lambda x, out: (_clamp_ref(x),), (1,),
        ),
        SuiteKernel(
            "sort8_local", sort8_local, (N,),
            lambda rng, s: (_f32(rng, (s[0], SORT_W)), _sentinel((s[0], SORT_W))),
            _config_1d(), lambda x, out: (np.sort(x, axis=1),), (1,),
        ),
    ]
}
