"""Summing a float32 array (归约, reduction): seed 003's case study rebuilt step by step, then further.

Versions, in teaching order (each line: the idea).  Seed 003 §5 tells steps 1–4 ("1M floats: 12 ms →
5 ms → 3.2 ms → 2.8 ms"); chapter 07 measures every one on the H200.

1. ``atomic_b64``         one element per thread, each added straight into ``out[0]`` with an atomic;
                          64 threads per block (seed: "Block=64, Grid=15625", 12 ms).
2. ``atomic_b256``        the same kernel with 256 threads per block (seed: 5 ms, "occupancy 25 % → 62 %").
3. ``atomic_float4``      each thread reads 4 neighbouring floats with one 16-byte load (float4) and
                          adds their sum with one atomic: a quarter of the load instructions and atomics
                          (seed: 3.2 ms).
4. ``block_interleaved``  each block sums its values in shared memory first, one atomic per block
                          (seed: 2.8 ms); the tree uses interleaved addressing, ``tid % (2*stride) == 0``:
                          the active threads are spread over every warp (divergence, 分支分化).
5. ``block_strided``      interleaved addressing with ``index = 2*stride*tid``: active threads packed
                          into few warps, but their shared accesses hit the same banks (存储体冲突).
6. ``block_sequential``   sequential addressing, ``s[tid] += s[tid + stride]``: contiguous threads,
                          contiguous words, no conflicts.
7. ``unrolled``           seed 001 §3.2's loop unrolling: each thread first sums 4 float4 loads into 4
                          independent accumulators (16 elements), so 4 loads are in flight per thread.
8. ``warp_shuffle``       version 7, then each warp sums its 32 values with ``shfl_down_sync`` (register
                          to register, no shared memory, no barrier); shared memory passes one value
                          per warp.
9. ``grid_stride``        a grid sized to the GPU (a few blocks per SM), each thread looping over the
                          array with U independent 16-byte loads in flight, one atomic per block.
10. ``two_pass``          the same first pass writing one partial sum per block, then one block sums
                          the partials: no atomics, the same answer every run (deterministic).

``REDUCTION_VERSIONS`` holds them in that order; ``grid_stride_version`` builds the other vector
widths, unroll factors and block sizes that ``scripts/gpu/bench_reduction.py`` sweeps.  ``reference``
is NumPy's float64 sum; ``tolerance`` says how far a float32 sum may honestly be from it.
``NCU_CASES`` are small launches whose memory counts the tracer and Nsight Compute compare.

numba has no ``float4`` array type; ``vector_load(4)`` (course.kernels.vector) is an intrinsic emitting one
``ld.global.v4.f32`` (SASS ``LDG.E.128``) on the GPU.  On the CPU engine it reads the same 16 bytes
through a 16-byte structured view of the array, so the tracer sees one 16-byte access per thread.

Defined for chapter 07 (notebooks/07_reduction.ipynb); chapter 06 uses the grid-stride kernels for
its occupancy and latency-hiding sweeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import course  # (chooses the backend before numba is imported)
from course.kernels import registry
# the 16-byte loads live with the other wide-access intrinsics (chapter 07 shows gpu_vector_load's source)
from course.kernels.vector import gpu_vector_load as _gpu_vector_load  # noqa: F401
from course.kernels.vector import vector_load
from numba import cuda, float32

FULL_MASK = 0xFFFFFFFF
WARP = 32
U_ROUND = 2.0**-24  # unit roundoff of float32

#: Seed 003's times for summing "1M floats" (its case study), in teaching order of versions 1–4.
SEED_MS = {"atomic_b64": 12.0, "atomic_b256": 5.0, "atomic_float4": 3.2, "block_interleaved": 2.8}
#: Seed 003's occupancy figures for the same steps (its GPU; the chapter recomputes them).
SEED_OCCUPANCY = {"atomic_b64": 0.25, "atomic_b256": 0.62}


def reference(a: np.ndarray) -> float:
    """The answer every version is compared with: the sum in float64."""
    return float(np.sum(np.asarray(a), dtype=np.float64))  # float64 accumulation, no float64 copy of a


def tolerance(a: np.ndarray) -> float:
    """How far a float32 sum of ``a`` may be from the float64 sum: 4·√n·u·Σ|aᵢ| (u = 2⁻²⁴).

    Each float32 addition is off by at most u times its result, and no partial sum exceeds Σ|aᵢ|.
    Summed over a chain of up to n additions, independent rounding errors grow like √n (Higham,
    *Accuracy and Stability of Numerical Algorithms*, §4.2), so 4·√n·u·Σ|aᵢ| sits several standard
    deviations above what any order of summation gives — atomics in any order included — while a
    running float16 sum or a lost element is far outside it at the tests' sizes.  For zero-mean data
    at large n it is loose (partial sums stay near √n, far below Σ|aᵢ|), so large sizes are checked on
    small integers instead, whose float32 sums are exact below 2²⁴: no slack at all.
    """
    a = np.asarray(a)
    return 4.0 * math.sqrt(max(a.size, 1)) * U_ROUND * float(np.sum(np.abs(a), dtype=np.float64)) + 1e-30




load_float4 = vector_load(4)  # one 16-byte load: ld.global.v4.f32 on the GPU (course.kernels.vector)
if not course.on_gpu():
    # its address, for the GPU compiler's child (course.trace.compiler) that types a notebook's kernel calling it:
    # there course.kernels.reduction.load_float4 is the intrinsic, where a rebuilt copy of this CPU twin would
    # be a plain Python function that numba-cuda cannot type
    load_float4.__module__, load_float4.__qualname__ = __name__, "load_float4"


def _aligned(d_a, width: int) -> bool:
    """True when a device array's data starts on a multiple of ``4*width`` bytes (wide loads need it)."""
    iface = getattr(d_a, "__cuda_array_interface__", None)
    if iface is None:
        return True  # a host array on the CPU engine: nothing to fault
    return iface["data"][0] % (4 * width) == 0


# --------------------------------------------------------------------------------------------------
# 1–2. one element per thread, one atomic per element


@cuda.jit
def atomic_each(a, out):
    """Seed 003 step 1–2: thread i adds a[i] straight into out[0]; every element is one atomic."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        cuda.atomic.add(out, 0, a[i])


# --------------------------------------------------------------------------------------------------
# 3. float4 loads


@cuda.jit
def atomic_float4(a, out):
    """Seed 003 step 3: thread q reads a[4q:4q+4] in one 16-byte load and adds their sum with one atomic."""
    q = cuda.grid(1)
    n = a.shape[0]
    n4 = n // 4
    if q < n4:
        x, y, z, w = load_float4(a, q)
        cuda.atomic.add(out, 0, (x + y) + (z + w))
    j = 4 * n4 + q  # the n % 4 elements past the last whole float4: the first threads take one each
    if j < n:
        cuda.atomic.add(out, 0, a[j])


# --------------------------------------------------------------------------------------------------
# 4–6. a block-level tree in shared memory, one atomic per block

TREE_THREADS = 256


@cuda.jit(device=True)
def float4_or_tail(a, q):
    """Thread q's value: the sum of float4 number q, plus element 4·n4 + q when that is one of the n % 4 leftovers."""
    n = a.shape[0]
    n4 = n // 4
    v = float32(0)
    if q < n4:
        x, y, z, w = load_float4(a, q)
        v = (x + y) + (z + w)
    j = 4 * n4 + q
    if j < n:
        v += a[j]
    return v


@cuda.jit
def block_interleaved(a, out):
    """Seed 003 step 4: a shared-memory tree, interleaved addressing; thread tid works while tid % (2·stride) == 0."""
    s = cuda.shared.array(TREE_THREADS, float32)
    tid = cuda.threadIdx.x
    s[tid] = float4_or_tail(a, cuda.blockIdx.x * TREE_THREADS + tid)
    cuda.syncthreads()
    stride = 1
    while stride < TREE_THREADS:
        if tid % (2 * stride) == 0:  # active threads 0, 2, 4 … then 0, 4, 8 …: every warp stays busy
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride *= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def block_strided(a, out):
    """Interleaved addressing without divergence: thread tid adds s[2·stride·tid + stride] into s[2·stride·tid]."""
    s = cuda.shared.array(TREE_THREADS, float32)
    tid = cuda.threadIdx.x
    s[tid] = float4_or_tail(a, cuda.blockIdx.x * TREE_THREADS + tid)
    cuda.syncthreads()
    stride = 1
    while stride < TREE_THREADS:
        index = 2 * stride * tid  # threads 0 … 127, then 0 … 63: whole warps idle, but lanes 2·stride words apart
        if index < TREE_THREADS:
            s[index] += s[index + stride]
        cuda.syncthreads()
        stride *= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def block_sequential(a, out):
    """Sequential addressing: the first half of the threads add the second half, halving each step."""
    s = cuda.shared.array(TREE_THREADS, float32)
    tid = cuda.threadIdx.x
    s[tid] = float4_or_tail(a, cuda.blockIdx.x * TREE_THREADS + tid)
    cuda.syncthreads()
    stride = TREE_THREADS // 2
    while stride > 0:
        if tid < stride:  # contiguous threads read contiguous words: 32 banks, no conflict
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


# --------------------------------------------------------------------------------------------------
# 7. loop unrolling with independent accumulators (seed 001 §3.2)

UNROLL = 4


@cuda.jit
def unrolled(a, out):
    """Each thread sums 4 float4 loads (16 floats) into 4 independent accumulators, then the sequential tree."""
    s = cuda.shared.array(TREE_THREADS, float32)
    tid = cuda.threadIdx.x
    n = a.shape[0]
    n4 = n // 4
    base = cuda.blockIdx.x * (TREE_THREADS * UNROLL) + tid  # this thread's quads: base, base+256, base+512, base+768
    sum0 = float32(0)
    sum1 = float32(0)
    sum2 = float32(0)
    sum3 = float32(0)
    # four loads that do not depend on each other: all four are in flight at once
    if base < n4:
        x, y, z, w = load_float4(a, base)
        sum0 = (x + y) + (z + w)
    if base + TREE_THREADS < n4:
        x, y, z, w = load_float4(a, base + TREE_THREADS)
        sum1 = (x + y) + (z + w)
    if base + 2 * TREE_THREADS < n4:
        x, y, z, w = load_float4(a, base + 2 * TREE_THREADS)
        sum2 = (x + y) + (z + w)
    if base + 3 * TREE_THREADS < n4:
        x, y, z, w = load_float4(a, base + 3 * TREE_THREADS)
        sum3 = (x + y) + (z + w)
    j = 4 * n4 + cuda.blockIdx.x * TREE_THREADS + tid
    if cuda.blockIdx.x == 0 and j < n:
        sum0 += a[j]
    s[tid] = (sum0 + sum1) + (sum2 + sum3)
    cuda.syncthreads()
    stride = TREE_THREADS // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


# --------------------------------------------------------------------------------------------------
# 8. warp shuffles


@cuda.jit(device=True)
def warp_sum(v):
    """Sum v over the 32 lanes of a warp with shfl_down_sync: lane 0 ends with the total (5 steps)."""
    offset = WARP // 2
    while offset > 0:
        v += cuda.shfl_down_sync(FULL_MASK, v, offset)  # lane i adds lane i+offset's value, register to register
        offset //= 2
    return v


@cuda.jit(device=True)
def block_sum(v):
    """Sum v over the block: shuffles inside each warp, one shared word per warp, shuffles again; thread 0 gets it."""
    partial = cuda.shared.array(WARP, float32)
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    v = warp_sum(v)
    if lane == 0:
        partial[warp] = v
    cuda.syncthreads()
    total = float32(0)
    if warp == 0:
        nwarps = (cuda.blockDim.x + WARP - 1) // WARP
        if lane < nwarps:
            total = partial[lane]
        total = warp_sum(total)
    return total


@cuda.jit
def warp_shuffle(a, out):
    """Version 7's loads and accumulators, then block_sum: shuffles instead of 8 shared-memory tree levels."""
    tid = cuda.threadIdx.x
    n = a.shape[0]
    n4 = n // 4
    base = cuda.blockIdx.x * (TREE_THREADS * UNROLL) + tid
    sum0 = float32(0)
    sum1 = float32(0)
    sum2 = float32(0)
    sum3 = float32(0)
    if base < n4:
        x, y, z, w = load_float4(a, base)
        sum0 = (x + y) + (z + w)
    if base + TREE_THREADS < n4:
        x, y, z, w = load_float4(a, base + TREE_THREADS)
        sum1 = (x + y) + (z + w)
    if base + 2 * TREE_THREADS < n4:
        x, y, z, w = load_float4(a, base + 2 * TREE_THREADS)
        sum2 = (x + y) + (z + w)
    if base + 3 * TREE_THREADS < n4:
        x, y, z, w = load_float4(a, base + 3 * TREE_THREADS)
        sum3 = (x + y) + (z + w)
    j = 4 * n4 + cuda.blockIdx.x * TREE_THREADS + tid
    if cuda.blockIdx.x == 0 and j < n:
        sum0 += a[j]
    total = block_sum((sum0 + sum1) + (sum2 + sum3))
    if tid == 0:
        cuda.atomic.add(out, 0, total)


# --------------------------------------------------------------------------------------------------
# 9–10. a grid sized to the GPU: grid-stride loops, many loads in flight; one or two passes

_GRID_STRIDE: dict = {}
_load1 = vector_load(1)
_load2 = vector_load(2)


@cuda.jit(device=True)
def load_sum1(a, i):
    """a[i] (one 4-byte load)."""
    return _load1(a, i)


@cuda.jit(device=True)
def load_sum2(a, i):
    """a[2i] + a[2i+1] from one 8-byte load."""
    x, y = _load2(a, i)
    return x + y


@cuda.jit(device=True)
def load_sum4(a, i):
    """a[4i] + … + a[4i+3] from one 16-byte load."""
    x, y, z, w = load_float4(a, i)
    return (x + y) + (z + w)


LOAD_SUM = {1: load_sum1, 2: load_sum2, 4: load_sum4}


@cuda.jit(device=True)
def load_into1(vals, o, a, i):
    """vals[o] = a[i]."""
    vals[o] = _load1(a, i)


@cuda.jit(device=True)
def load_into2(vals, o, a, i):
    """vals[o:o+2] = a[2i:2i+2], one 8-byte load."""
    x, y = _load2(a, i)
    vals[o] = x
    vals[o + 1] = y


@cuda.jit(device=True)
def load_into4(vals, o, a, i):
    """vals[o:o+4] = a[4i:4i+4], one 16-byte load."""
    x, y, z, w = load_float4(a, i)
    vals[o] = x
    vals[o + 1] = y
    vals[o + 2] = z
    vals[o + 3] = w


LOAD_INTO = {1: load_into1, 2: load_into2, 4: load_into4}


def grid_stride_kernel(width=4, unroll=4, partials=False, bounds=None):
    """A grid-stride sum: ``unroll`` independent ``width``-float loads in flight per thread, block_sum, then one
    atomic per block (``partials=False``) or one partial sum per block written to ``out[blockIdx.x]``.

    ``bounds=(max_threads, min_blocks)`` are CUDA launch bounds: they tell the compiler how few blocks per
    SM it may plan for, so it may use more registers.  Without them ptxas keeps the register count low by
    starting the additions of an unroll of 8 before all 8 loads are issued (about 2 loads in flight);
    with (1024, 1) all 8 stay in flight (seen in sm_90 SASS from CUDA 13.5's ptxas).
    """
    key = (width, unroll, partials, bounds, course.on_gpu())
    if key in _GRID_STRIDE:
        return _GRID_STRIDE[key]
    load_sum = LOAD_SUM[width]
    load_into = LOAD_INTO[width]
    W, U = width, unroll
    UW = U * W  # a compile-time constant: the size of the register buffer
    # numba's simulator (the CPU engine) takes no launch bounds; the GPU refuses larger blocks, and so does
    # Version.launcher on every backend
    jit = cuda.jit(launch_bounds=bounds) if (bounds and course.on_gpu()) else cuda.jit

    @jit
    def grid_stride_sum(a, out):
        """Each thread strides over the vectors by the grid size, ``U`` loads at a time, into ``U`` accumulators."""
        n = a.shape[0]
        nv = n // W  # whole vectors
        tid = cuda.threadIdx.x
        q = cuda.blockIdx.x * cuda.blockDim.x + tid
        stride = cuda.gridDim.x * cuda.blockDim.x
        acc = cuda.local.array(U, float32)  # indexed by unrolled constants only: stays in registers
        vals = cuda.local.array(UW, float32)
        for k in range(U):
            acc[k] = 0
        i = q
        full = nv - (U - 1) * stride  # below this, all U vectors i, i+stride, … exist: no bound checks
        while i < full:
            for k in range(U):  # first all U loads: U·W floats on their way before any is needed
                load_into(vals, k * W, a, i + k * stride)
            for k in range(U):  # then the additions, each into its own accumulator
                v = vals[k * W]
                for e in range(1, W):
                    v += vals[k * W + e]
                acc[k] += v
            i += U * stride
        while i < nv:  # the last partial round
            acc[0] += load_sum(a, i)
            i += stride
        j = nv * W + q  # the n % W floats after the last whole vector
        if j < n:
            acc[0] += a[j]
        v = acc[0]
        for k in range(1, U):
            v += acc[k]
        total = block_sum(v)
        if tid == 0:
            if partials:
                out[cuda.blockIdx.x] = total
            else:
                cuda.atomic.add(out, 0, total)

    grid_stride_sum.width = width
    grid_stride_sum.unroll = unroll
    grid_stride_sum.bounds = bounds
    grid_stride_sum.tag = (f"w{width}_u{unroll}" + ("_partials" if partials else "")
                           + (f"_lb{bounds[0]}x{bounds[1]}" if bounds else ""))  # tells factory kernels apart
    _GRID_STRIDE[key] = grid_stride_sum
    return grid_stride_sum


@cuda.jit
def finish_partials(partials, out):
    """Second pass of ``two_pass``: one block sums the per-block partials and writes out[0] (no atomic)."""
    v = float32(0)
    i = cuda.threadIdx.x
    while i < partials.shape[0]:
        v += partials[i]
        i += cuda.blockDim.x
    total = block_sum(v)
    if cuda.threadIdx.x == 0:
        out[0] = total


# --------------------------------------------------------------------------------------------------
# Launching: grid sizes, zeroing out[0], the registry


def sm_count() -> int:
    """SMs of the GPU in use; on the CPU the engine's stand-in (1: one block per 'SM' keeps CPU runs short)."""
    if course.on_gpu():
        return cuda.get_current_device().MULTIPROCESSOR_COUNT
    return 1


# the second pass of two_pass: one block sums the partials (a launch parameter: a CPU runs a smaller block)
FINISH_THREADS = course.pick(cpu=64, gpu=1024)


def _zero(d_out):
    """out[0] = 0 before an atomic version adds into it (a memset on the GPU: no kernel launch)."""
    if course.on_gpu():
        from numba.cuda.cudadrv.driver import device_memset

        device_memset(d_out, 0, 4)
    elif isinstance(d_out, np.ndarray):
        d_out[:1] = 0
    else:
        d_out.copy_to_device(np.zeros(d_out.shape, np.float32))


def _blocks(n_items: int, per_block: int) -> int:
    return max(1, -(-n_items // per_block))


@dataclass(frozen=True)
class Version(registry.Version):
    """One reduction version: its kernel(s), threads_per_block, one-line idea, and how blocks_per_grid follows from n.

    ``launcher(d_a, d_out)`` allocates what the version needs once and returns a no-argument function that
    runs the whole reduction (zeroing ``out[0]`` first where it adds with atomics), so a benchmark times
    exactly the work of one sum.
    """

    threads: int
    blocks: Callable  # (n, version) -> blocks_per_grid
    seed_step: str = ""
    width: int = 1  # floats per load (the array must be aligned to 4·width bytes)
    atomics: bool = True
    finish: object = None  # second-pass kernel (two_pass)

    def griddim(self, n: int) -> int:
        """blocks_per_grid for an array of n floats."""
        return int(self.blocks(n, self))

    @property
    def kernels(self) -> tuple:
        """Every kernel this version launches (for resource and occupancy reports)."""
        return (self.kernel,) if self.finish is None else (self.kernel, self.finish)

    def launcher(self, d_a, d_out):
        """A function that sums device array ``d_a`` into ``d_out[0]`` each time it is called."""
        if getattr(d_a, "ndim", 1) != 1 or np.dtype(d_a.dtype) != np.float32:
            raise ValueError(
                f"reduction {self.name}: expected a 1-D float32 array, got shape {getattr(d_a, 'shape', '?')} "
                f"dtype {d_a.dtype}. Convert with np.ascontiguousarray(a, dtype=np.float32).ravel()."
            )
        if self.width > 1 and not _aligned(d_a, self.width):
            raise ValueError(
                f"reduction {self.name}: its {4 * self.width}-byte loads need the array to start on a multiple of "
                f"{4 * self.width} bytes, and this one does not (a slice of another array?). Pass a fresh array "
                "(cuda.to_device(a)) or use a version with 4-byte loads."
            )
        n = int(d_a.shape[0])
        grid = self.griddim(n)
        kernel, threads = self.kernel, self.threads
        if self.finish is not None:
            partials = cuda.device_array(grid, np.float32) if course.on_gpu() else np.zeros(grid, np.float32)
            finish = self.finish

            def run():
                kernel[grid, threads](d_a, partials)
                finish[1, FINISH_THREADS](partials, d_out)

            return run

        def run():
            _zero(d_out)
            kernel[grid, threads](d_a, d_out)

        return run

    def run(self, a: np.ndarray) -> float:
        """Sum host array ``a`` with this version (on the GPU or the CPU engine) and return the float32 result."""
        a = np.ascontiguousarray(a, dtype=np.float32).ravel()
        if a.size == 0:
            return 0.0
        if course.on_gpu():
            d_a = cuda.to_device(a)
            d_out = cuda.device_array(1, np.float32)
            self.launcher(d_a, d_out)()
            return float(d_out.copy_to_host()[0])
        out = np.zeros(1, np.float32)
        self.launcher(a, out)()
        return float(out[0])


def _per_thread(n, v):
    return _blocks(n, v.threads)


def _per_float4(n, v):
    return _blocks(max(n // 4, n % 4), v.threads)


def _per_16(n, v):
    # 16 floats per thread (4 float4), and the block-0 threads also take the n % 4 leftovers
    return _blocks(max(-(-n // 4), 1), v.threads * UNROLL)


def _resident(blocks_per_sm):
    """blocks_per_grid = blocks_per_sm × SMs, but never more blocks than there is work for."""

    def blocks(n, v):
        per_block = v.threads * v.width * v.params.get("unroll", 1)
        return max(1, min(blocks_per_sm * sm_count(), -(-n // per_block)))

    return blocks


def grid_stride_version(width=4, unroll=4, threads=256, blocks_per_sm=4, name=None, two_pass=False,
                        bounds=None) -> Version:
    """Version 9 (or 10 with ``two_pass``) for a given vector width, unroll, block size and blocks per SM."""
    if bounds and threads > bounds[0]:
        raise ValueError(f"grid_stride_version: {threads} threads per block, but the launch bounds {bounds} "
                         f"allow at most {bounds[0]}; use fewer threads or other bounds.")
    lb = f"_lb{bounds[0]}x{bounds[1]}" if bounds else ""
    name = name or f"{'two_pass' if two_pass else 'grid_stride'}_w{width}_u{unroll}{lb}_t{threads}_b{blocks_per_sm}"
    kernel = grid_stride_kernel(width, unroll, partials=two_pass, bounds=bounds)
    idea = (f"{blocks_per_sm} blocks/SM of {threads}, grid-stride, {unroll} loads of {4 * width} B in flight "
            + ("per thread; per-block partials, then one block sums them" if two_pass else "per thread, one atomic per block"))
    return Version(name, idea, kernel, threads, _resident(blocks_per_sm), width=width, atomics=not two_pass,
                   finish=finish_partials if two_pass else None, family="two_pass" if two_pass else "grid_stride",
                   params={"width": width, "unroll": unroll, "threads": threads, "blocks_per_sm": blocks_per_sm,
                           "bounds": list(bounds) if bounds else None})


REDUCTION_VERSIONS = registry.registry(
    Version("atomic_b64", "one element per thread, one atomic each, 64 threads per block",
            atomic_each, 64, _per_thread, seed_step="003 §5 step 1 (12 ms)", family="atomic"),
    Version("atomic_b256", "the same kernel, 256 threads per block",
            atomic_each, 256, _per_thread, seed_step="003 §5 step 2 (5 ms)", family="atomic"),
    Version("atomic_float4", "4 floats per thread in one 16-byte load, one atomic per thread",
            atomic_float4, 256, _per_float4, seed_step="003 §5 step 3 (3.2 ms)", width=4, family="atomic"),
    Version("block_interleaved", "a shared-memory tree per block, interleaved addressing (divergent), one atomic per block",
            block_interleaved, TREE_THREADS, _per_float4, seed_step="003 §5 step 4 (2.8 ms)", width=4, family="tree"),
    Version("block_strided", "interleaved addressing with index = 2·stride·tid: no divergence, bank conflicts",
            block_strided, TREE_THREADS, _per_float4, width=4, family="tree"),
    Version("block_sequential", "sequential addressing: no divergence, no bank conflicts",
            block_sequential, TREE_THREADS, _per_float4, width=4, family="tree"),
    Version("unrolled", "4 float4 loads per thread into 4 independent accumulators, then the tree (seed 001 §3.2)",
            unrolled, TREE_THREADS, _per_16, width=4, family="tree"),
    Version("warp_shuffle", "version 7 with shfl_down_sync inside each warp; shared memory only between warps",
            warp_shuffle, TREE_THREADS, _per_16, width=4, family="shuffle"),
    grid_stride_version(4, 4, 256, 4, name="grid_stride"),
    grid_stride_version(4, 4, 256, 4, name="two_pass", two_pass=True),
)


def sweep_candidates() -> list:
    """Kernels for the benchmark's sweep, as (width, unroll, launch bounds): every vector width × unroll
    (compiled once each), widest loads first, then 16-byte loads with launch bounds that let ptxas keep
    8 or 16 loads in flight.  The launch parameters (threads, blocks per SM) come from ``sweep_launches``."""
    plain = [(w, u, None) for w in (4, 2, 1) for u in (1, 2, 4, 8)]
    return plain + [(4, 8, (1024, 1)), (4, 16, (512, 1))]


def sweep_launches(bounds=None) -> list:
    """(threads_per_block, blocks_per_sm) pairs the benchmark tries for a sweep kernel (within its launch bounds)."""
    out = []
    for threads in (128, 256, 512, 1024):
        for bps in (1, 2, 4, 8, 16, 32):
            if threads * bps <= 2048 and (bounds is None or threads <= bounds[0]):  # more would not be resident
                out.append((threads, bps))
    return out


# --------------------------------------------------------------------------------------------------
# Hardware-count validation cases (course.kernels.cases.Case)


def _ncu_cases():
    from course.kernels.cases import Case

    n = 4096  # 1024 float4: 4 blocks of 256 for versions 3–6, every warp whole, no leftovers

    def make_args(rng):
        return (rng.standard_normal(n).astype(np.float32), np.zeros(1, np.float32))

    # Hand counts: one 16-byte load per thread, 32 lanes × 16 B = 512 B = 16 sectors per request;
    # 1024 threads = 32 warps = 32 requests.
    float4_loads = {"global_load_requests": 32, "global_load_sectors": 512}
    cases = [
        Case("reduction_atomic_b256", atomic_each, n // 256, 256, make_args,
             expect={"global_load_requests": n // 32, "global_load_sectors": n // 32 * 4},
             note="one 4-byte load per thread: 4 sectors per request; one atomic per element", tags=("reduction",)),
    ]
    # Shared memory, per block of 256 (8 warps), tree levels stride = 1 … 128 (or 128 … 1):
    # - warps with an active thread per level: interleaved 8,8,8,8,8,4,2,1 = 47; strided and sequential
    #   4,2,1,1,1,1,1,1 = 12.  Each active warp loads twice and stores once per level; thread 0 loads
    #   s[0] once more for the atomic, and every warp stores its value once before the tree (8).
    # - wavefronts: interleaved and sequential touch distinct banks (1 per request); strided lanes are
    #   2·stride words apart: loads 2·(4·2 + 2·4 + 8 + 8 + 8 + 4 + 2 + 1) = 94, stores 47.
    tree = {
        "block_interleaved": {"shared_load_requests": 4 * (2 * 47 + 1), "shared_load_wavefronts": 4 * (2 * 47 + 1),
                              "shared_store_requests": 4 * (47 + 8), "shared_store_wavefronts": 4 * (47 + 8)},
        "block_strided": {"shared_load_requests": 4 * (2 * 12 + 1), "shared_load_wavefronts": 4 * (94 + 1),
                          "shared_store_requests": 4 * (12 + 8), "shared_store_wavefronts": 4 * (47 + 8)},
        "block_sequential": {"shared_load_requests": 4 * (2 * 12 + 1), "shared_load_wavefronts": 4 * (2 * 12 + 1),
                             "shared_store_requests": 4 * (12 + 8), "shared_store_wavefronts": 4 * (12 + 8)},
    }
    for name in ("atomic_float4", "block_interleaved", "block_strided", "block_sequential"):
        v = REDUCTION_VERSIONS[name]
        cases.append(Case(f"reduction_{name}", v.kernel, v.griddim(n), v.threads, make_args,
                          expect=dict(float4_loads, **tree.get(name, {})),
                          note=f"reduction {name} of {n} floats: {v.idea}", tags=("reduction",)))
    v = REDUCTION_VERSIONS["warp_shuffle"]
    cases.append(Case("reduction_warp_shuffle", v.kernel, v.griddim(n), v.threads, make_args, expect=dict(float4_loads),
                      note=f"reduction warp_shuffle of {n} floats: {v.idea}", tags=("reduction",)))
    return cases


def __getattr__(name):
    # NCU_CASES is built on first use, so that importing this module never needs course.kernels.cases.
    if name == "NCU_CASES":
        cases = _ncu_cases()
        globals()["NCU_CASES"] = cases
        return cases
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
