"""The memory hierarchy and coalescing (chapter 03): access patterns, memory spaces, and latency probes.

Versions, in teaching order (each line: the idea):

Coalescing (合并访存): how many 32-byte sectors one warp-wide load needs.

1. ``read_strided``     ``out[i] = src[i * stride]``: stride 1 needs 4 sectors per warp request
                        (128 bytes), stride s ≥ 8 needs 32 — one per lane (seed 001 §2.2).
2. ``read_offset``      ``out[i] = src[i + offset]``: a misaligned start costs a fifth sector, not more.
3. ``read_tx32``        seed 002 pitfall 3, literally ``src[threadIdx.x * 32]``: 32 sectors per request,
                        but every block reads the same 32 of them, so caches serve most of it.
4. ``advance_aos`` / ``advance_soa``  a particle update on an array of structs (n, 8) and on a struct
                        of arrays (8, n): the same bytes, 32 vs 4 sectors per request (seed 000 §4.1).
5. ``walk_rows`` / ``walk_cols``  scale a row-major matrix with x ↔ col (a warp walks along a row) or
                        x ↔ row (a warp walks down a column, seed 003 §3 and myth 2).

Memory spaces (seed 002 §1.2, seed 003 §3):

6. ``const_broadcast`` / ``const_per_lane`` / ``global_per_lane``  constant memory read with one address
                        per warp (a broadcast) or 32 (served one address at a time); the same per-lane
                        pattern from global memory for contrast.
7. ``local_dynamic``    a per-thread array indexed by data: it cannot live in registers, so it goes to
                        local memory (本地内存) — unless the compiler resolves the index (it does here).
   ``bin_counts_local``  per-thread counts of 16 values kept in a table updated at a data index
                        (``h[x[k, i]] += 1``): the compiler gives it 64 bytes of local memory.
8. ``many_live`` / ``many_live_capped``  sixteen live accumulators; the capped build limits registers
                        (``max_registers``) so that the compiler spills them to local memory.

Latency probes (pointer chasing, 指针追逐): one thread follows ``j = nxt[j]`` so that each load waits
for the one before; ``clock64`` around the loop gives cycles per step.

9. ``chase`` (L1 or HBM, depending on the working set), ``chase_cg`` (``ld.global.cg``: skips L1, so
   L2 or HBM), ``chase_shared``, ``chase_const``, ``chase_local`` (a 1 KB local array: L1), the
   beyond-L2 local chase ``chase_local_big_kernel()`` (many warps' local arrays, 5× the L2: DRAM), and
   ``fma_latency`` (a dependent FMA chain: what "a register access" costs in practice).
   ``chase_each``: four chains per thread, walked one after another (every load waits for the one before).

``KERNELS`` lists the bandwidth kernels with NumPy references; ``LATENCY_KERNELS`` the probes;
``NCU_CASES`` the launches the tracer's validation script runs under Nsight Compute, each with sector
counts derived by hand.

Defined for chapter 03 (notebooks/03_memory_coalescing.ipynb).
"""

from __future__ import annotations

import math
import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from course import backend
from course.kernels import registry
from numba import cuda, float32, int32, uint32

from course.kernels.cases import Case

WARP_SIZE = 32
SECTOR = 32  # bytes: the unit in which L1/L2 move global data
LINE = 128  # bytes: an L1 cache line, four sectors

# --- clock64 and cache-hinted loads: the GPU has them, the CPU engine gets stand-ins -------------------

if backend.on_gpu():
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def clock64(typingctx):
        """The SM's 64-bit cycle counter (PTX %clock64), read with a volatile mov so it is not moved."""
        sig = types.int64()

        def codegen(context, builder, signature, args):
            asm = ir.InlineAsm(ir.FunctionType(ir.IntType(64), []), "mov.u64 $0, %clock64;", "=l",
                               side_effect=True)
            return builder.call(asm, [])

        return sig, codegen

    load_cg = cuda.ldcg  # ld.global.cg: cache in L2 only

    def _jit_capped(fn):
        return cuda.jit(max_registers=16)(fn)

else:

    def clock64():
        """Stand-in on the CPU engine: there is no cycle counter to read, so latency probes report 0."""
        return 0

    def load_cg(arr, i):
        """Stand-in for cuda.ldcg on the CPU engine: an ordinary load (caches are not modelled)."""
        return arr[i]

    def _jit_capped(fn):
        return cuda.jit(fn)  # register limits mean nothing on the CPU


# --- 1-3: coalescing ---------------------------------------------------------------------------------


@cuda.jit
def read_strided(src, out, stride):
    """out[i] = src[i * stride]: neighbouring lanes read elements ``stride`` apart."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        out[i] = src[i * stride]


@cuda.jit
def read_offset(src, out, offset):
    """out[i] = src[i + offset]: consecutive, but each warp's 128 bytes start ``offset`` elements late."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        out[i] = src[i + offset]


@cuda.jit
def read_tx32(src, out):
    """Seed 002 pitfall 3 as written: out[i] = src[threadIdx.x * 32] (every block reads the same elements)."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        out[i] = src[cuda.threadIdx.x * 32]


# --- 4: array of structs vs struct of arrays ------------------------------------------------------------

# A particle: position, velocity, mass, charge; 8 float32 = 32 bytes.  AoS stores particle i as row i of
# an (n, 8) array (like a C ``struct Particle p[n]``); SoA stores field f as row f of an (8, n) array.
X, Y, Z, VX, VY, VZ, MASS, CHARGE = range(8)
FIELDS = ("x", "y", "z", "vx", "vy", "vz", "mass", "charge")


@cuda.jit
def advance_aos(p, dt):
    """x += vx * dt (and y, z) for particle i stored as p[i, :]: lane k reads 32 bytes after lane k-1."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < p.shape[0]:
        p[i, X] += p[i, VX] * dt
        p[i, Y] += p[i, VY] * dt
        p[i, Z] += p[i, VZ] * dt


@cuda.jit
def advance_soa(q, dt):
    """The same update with field f of particle i stored at q[f, i]: each load is 32 consecutive floats."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < q.shape[1]:
        q[X, i] += q[VX, i] * dt
        q[Y, i] += q[VY, i] * dt
        q[Z, i] += q[VZ, i] * dt


# --- 5: walking a row-major matrix ----------------------------------------------------------------------


@cuda.jit
def walk_rows(a, out, factor):
    """out = a * factor with x ↔ col: the 32 lanes of a warp touch 32 neighbours in one row."""
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] * factor


@cuda.jit
def walk_cols(a, out, factor):
    """out = a * factor with x ↔ row: the 32 lanes of a warp touch one column, a whole row apart."""
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    col = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] * factor


# --- 6: constant memory -----------------------------------------------------------------------------------

CONST_WORDS = 1024
COEFFS = (np.arange(CONST_WORDS, dtype=np.float32) % 7 + 1) / np.float32(8)  # baked into the kernels


@cuda.jit
def const_broadcast(out, reps):
    """Every lane reads c[k] at step k: one address per warp, which constant memory broadcasts."""
    c = cuda.const.array_like(COEFFS)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        acc = float32(0)
        for k in range(reps):
            acc += c[k & 1023]
        out[i] = acc


@cuda.jit
def const_per_lane(out, reps):
    """Lane l reads c[(k + l) & 1023]: 32 addresses per warp, which constant memory serves one by one."""
    c = cuda.const.array_like(COEFFS)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        lane = cuda.threadIdx.x & 31
        acc = float32(0)
        for k in range(reps):
            acc += c[(k + lane) & 1023]
        out[i] = acc


@cuda.jit
def global_per_lane(coeffs, out, reps):
    """const_per_lane's pattern read from global memory: 32 neighbouring words, one L1 request."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        lane = cuda.threadIdx.x & 31
        acc = float32(0)
        for k in range(reps):
            acc += coeffs[(k + lane) & 1023]
        out[i] = acc


# --- 7-8: local memory and register spills -----------------------------------------------------------------

LOCAL_WORDS = 32


@cuda.jit
def local_dynamic(x, idx, out):
    """A per-thread table indexed by data (idx[i]): registers cannot be indexed, so it lives in local memory."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        t = cuda.local.array(LOCAL_WORDS, float32)
        v = x[i]
        for k in range(LOCAL_WORDS):
            t[k] = v * float32(k + 1)
        out[i] = t[idx[i] & (LOCAL_WORDS - 1)]


BINS = 16


@cuda.jit
def bin_counts_local(x, out):
    """out[b, i] = how many of column i's values x[k, i] equal b (0 <= b < 16), counted in a per-thread table
    updated at a data index: registers cannot be indexed at run time, so the table goes to local memory."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < x.shape[1]:
        h = cuda.local.array(BINS, int32)
        for b in range(BINS):
            h[b] = 0
        for k in range(x.shape[0]):
            h[x[k, i]] += 1
        for b in range(BINS):
            out[b, i] = h[b]


def _many_live(x, out, iters):
    """Sixteen accumulators that all stay live through the loop: about 16 registers of state per thread."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        v = x[i]
        h = float32(0.5)
        a0, a1, a2, a3 = v, v + float32(1), v + float32(2), v + float32(3)
        a4, a5, a6, a7 = v + float32(4), v + float32(5), v + float32(6), v + float32(7)
        a8, a9, a10, a11 = v + float32(8), v + float32(9), v + float32(10), v + float32(11)
        a12, a13, a14, a15 = v + float32(12), v + float32(13), v + float32(14), v + float32(15)
        for _ in range(iters):  # each new value needs two old ones, so none can be dropped early
            a0, a1, a2, a3 = a1 * h + a2 * h, a2 * h + a3 * h, a3 * h + a4 * h, a4 * h + a5 * h
            a4, a5, a6, a7 = a5 * h + a6 * h, a6 * h + a7 * h, a7 * h + a8 * h, a8 * h + a9 * h
            a8, a9, a10, a11 = a9 * h + a10 * h, a10 * h + a11 * h, a11 * h + a12 * h, a12 * h + a13 * h
            a12, a13, a14, a15 = a13 * h + a14 * h, a14 * h + a15 * h, a15 * h + a0 * h, a0 * h + a1 * h
        out[i] = (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7) + (a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15)


many_live = cuda.jit(_many_live)
many_live_capped = _jit_capped(_many_live)  # max_registers=16 on the GPU: forces spills


# --- 9: latency probes (one thread; out[0] = where the chase ended, out[1] = cycles for ``steps``) ---------

CHASE_SHARED_WORDS = 4096  # 16 KB of uint32
CHASE_LOCAL_WORDS = 256
CHASE_CONST_WORDS = 256  # 1 KB: small enough for the constant cache nearest the SM


@cuda.jit
def chase(nxt, steps, warm, out):
    """Follow j = nxt[j] ``warm`` steps untimed, then ``steps`` steps between two clock64 reads."""
    j = 0
    for _ in range(warm):
        j = nxt[j]
    t0 = clock64()
    for _ in range(steps):
        j = nxt[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


@cuda.jit
def chase_cg(nxt, steps, warm, out):
    """chase with ld.global.cg loads: L1 is skipped, so a hit is an L2 hit and a miss goes to HBM."""
    j = 0
    for _ in range(warm):
        j = load_cg(nxt, j)
    t0 = clock64()
    for _ in range(steps):
        j = load_cg(nxt, j)
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


@cuda.jit
def chase_shared(nxt, steps, out):
    """Copy a chain of up to 4096 words into shared memory, then chase it there."""
    s = cuda.shared.array(CHASE_SHARED_WORDS, uint32)
    for k in range(min(nxt.size, CHASE_SHARED_WORDS)):
        s[k] = nxt[k]
    j = 0
    t0 = clock64()  # no warm-up lap: shared memory is not a cache, every access costs the same
    for _ in range(steps):
        j = s[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


CHASE_CONST = np.zeros(CHASE_CONST_WORDS, np.uint32)  # filled below with a random cycle


@cuda.jit
def chase_const(steps, out):
    """Chase a 256-word cycle held in constant memory (after one untimed pass has filled the cache)."""
    c = cuda.const.array_like(CHASE_CONST)
    j = 0
    for _ in range(CHASE_CONST_WORDS):
        j = c[j]
    t0 = clock64()
    for _ in range(steps):
        j = c[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


@cuda.jit
def chase_local(nxt, steps, out):
    """Copy a 256-word chain into a per-thread local array, then chase it there (local memory, via L1)."""
    t = cuda.local.array(CHASE_LOCAL_WORDS, uint32)
    for k in range(CHASE_LOCAL_WORDS):
        t[k] = nxt[k]
    j = 0
    for _ in range(CHASE_LOCAL_WORDS):
        j = t[j]
    t0 = clock64()
    for _ in range(steps):
        j = t[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


# chase_local above is L1-resident (1 KB): it measures L1, not the DRAM that "local memory" names.  The probe
# below makes every step of a local-memory chase miss both caches.  Local memory is interleaved per thread:
# word w of every lane of a warp sits in one 128-byte line (lane l at byte 4l), so word w of one thread
# is line w of its warp's slice, and a thread's array of W words spans W lines.  One thread alone cannot
# outgrow the L2 (512 KiB per thread at most: 131072 lines, 16 MB of lines), so the footprint comes from
# many warps chasing at once, every lane of a warp on the same chain (one line per warp and step).
# LOCAL_BIG_WORDS = 8192 (32 KiB per thread, 1 MB of lines per warp) × 256 warps = 256 MiB of lines,
# about 5× the H200's 50 MB L2 (and each SM's two warps' 2 MB is 8× its L1).
LOCAL_BIG_WORDS = 8192
LOCAL_BIG_BLOCKS = 256  # one warp each: about two warps per SM, all resident at once
_LOCAL_CHASE: dict = {}


def chase_local_big_kernel(words: int = LOCAL_BIG_WORDS):
    """The beyond-L2 local-memory chase with a per-thread array of ``words`` uint32 (a compile-time size).

    ``kernel(nxt, warm, steps, out)``: every thread copies the chain ``nxt`` (a random cycle through all
    ``words`` slots, uint32: no wrap-around test per step) into its own ``cuda.local.array`` — indexed by
    loaded data, so it cannot live in registers — then follows ``j = t[j & (words - 1)]`` for ``warm`` steps untimed and
    ``steps`` steps between two ``clock64`` reads.  Lane 0 of each warp writes ``out[2w] = j`` (checked
    against a host walk) and ``out[2w + 1]`` = its cycles.  With ``warm = words`` (one whole lap) every
    timed step reads a line the warp last touched one lap earlier; in that lap all warps together touched
    every line of the footprint (256 MiB at the default size), so the line has long left the L2 and the
    L1, and the step waits for DRAM.  cycles/step is the median over the warps of cycles / steps (the
    existing probes time one thread; here every warp is a timing thread of the same chase).  Each warp's
    chain stays inside its own 1 MB slice, so few TLB pages are in play (unlike a global chase over 1 GB).
    """
    key = (words, backend.on_gpu())
    if key in _LOCAL_CHASE:
        return _LOCAL_CHASE[key]
    if words & (words - 1):
        raise ValueError(f"chase_local_big_kernel: words must be a power of two (the index mask), not {words}")
    W = words
    MASK = np.uint32(words - 1) if backend.on_gpu() else words - 1

    @cuda.jit
    def chase_local_big(nxt, warm, steps, out):
        """Copy the chain into a per-thread local array of W words, lap it once, then time ``steps`` steps."""
        t = cuda.local.array(W, uint32)
        for k in range(W):
            t[k] = nxt[k]
        j = uint32(0)
        for _ in range(warm):
            j = t[j & MASK]
        t0 = clock64()
        for _ in range(steps):
            j = t[j & MASK]  # any index stays inside the array; SASS per step: SHL, LOP3, IADD, LDL (~12 cycles + the load)
        t1 = clock64()
        if cuda.threadIdx.x % WARP_SIZE == 0:
            w = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // WARP_SIZE
            out[2 * w] = j
            out[2 * w + 1] = t1 - t0

    _LOCAL_CHASE[key] = chase_local_big
    return chase_local_big
CHAINS = 4


@cuda.jit
def chase_each(nxt, starts, steps, out):
    """Thread t follows its CHAINS chains ``steps`` steps each from starts[t, c], one chain after another, and writes
    where each ended to out[t, c]: every load of nxt waits for the one just before it."""
    t = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if t < starts.shape[0]:
        for c in range(CHAINS):
            j = starts[t, c]
            for _ in range(steps):
                j = nxt[j]
            out[t, c] = j


@cuda.jit
def fma_latency(x, steps, out_f, out):
    """v = v * a + b, each step waiting for the last: the latency of one dependent FMA in registers."""
    v = x[0]
    a = x[1]
    b = x[2]
    t0 = clock64()
    for _ in range(steps):
        v = v * a + b
    t1 = clock64()
    out_f[0] = v
    out[0] = 0
    out[1] = t1 - t0


@cuda.jit
def scatter(dst, pos, val):
    """dst[pos[k]] = val[k]: writes a sparse chain into a big device array without copying all of it."""
    k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if k < pos.size:
        dst[pos[k]] = val[k]


# --- host side: chains and references --------------------------------------------------------------------


def random_cycle(n_slots: int, rng: np.random.Generator, visit: int | None = None) -> np.ndarray:
    """Slot numbers of a random cycle that starts at slot 0: all n_slots, or ``visit`` of them."""
    if visit is None or visit >= n_slots:
        rest = rng.permutation(np.arange(1, n_slots))
    else:
        rest = rng.choice(np.arange(1, n_slots), size=visit - 1, replace=False)
    return np.concatenate([[0], rest]).astype(np.int64)


def chain_array(order: np.ndarray, stride: int, total: int) -> np.ndarray:
    """A uint32 array of ``total`` words where word ``order[k] * stride`` holds ``order[k + 1] * stride``.

    Unsigned on purpose: with a signed index numba adds a negative-index wrap-around test to every step of
    the chase, which the compiler cannot remove; with uint32 each step is one load and one multiply-add
    (``LDG`` then ``IMAD.WIDE.U32`` in the SASS), so the cycles measured are the load's.
    """
    if (int(order.max()) + 1) * stride > total:
        raise ValueError(f"a chain over slot {int(order.max())} with stride {stride} needs more than {total} words")
    nxt = np.zeros(total, np.uint32)
    pos = order * stride
    nxt[pos] = np.roll(pos, -1)
    return nxt


def walk(nxt: np.ndarray, steps: int, start: int = 0) -> int:
    """Where j = nxt[j] ends after ``steps`` steps from ``start`` (the host reference for the probes)."""
    j = start
    for _ in range(steps):
        j = int(nxt[j])
    return j


def disjoint_starts(order: np.ndarray, stride: int, threads: int, steps: int, rng: np.random.Generator) -> np.ndarray:
    """(threads, CHAINS) uint32 start words on the cycle ``order`` (slots ``stride`` words apart): each thread's chains
    begin ``steps + 1`` slots apart from a random place, so that no two of one thread's walks meet in ``steps`` steps."""
    if CHAINS * (steps + 1) > len(order):
        raise ValueError(f"{CHAINS} walks of {steps} steps do not fit apart on a cycle of {len(order)} slots")
    first = rng.integers(0, len(order), threads)
    at = (first[:, None] + np.arange(CHAINS)[None, :] * (steps + 1)) % len(order)
    return (order[at] * stride).astype(np.uint32)


def reference_chase_each(nxt: np.ndarray, starts: np.ndarray, steps: int) -> np.ndarray:
    """Where each walk of chase_each ends: ``steps`` steps of j = nxt[j] from every start, on the host."""
    j = starts.astype(np.int64)
    for _ in range(steps):
        j = nxt[j].astype(np.int64)
    return j.astype(nxt.dtype)


def reference_bin_counts(x: np.ndarray) -> np.ndarray:
    """bin_counts_local's answer: out[b, i] = how many x[k, i] equal b, for b < BINS."""
    return (x[None, :, :] == np.arange(BINS)[:, None, None]).sum(axis=1).astype(np.int32)


def fma_reference(v: float, a: float, b: float, steps: int) -> np.float32:
    """fma_latency's final value in float32 NumPy (without FMA contraction: compare with a tolerance)."""
    v, a, b = np.float32(v), np.float32(a), np.float32(b)
    for _ in range(steps):
        v = v * a + b
    return v


CHASE_CONST[:] = chain_array(random_cycle(CHASE_CONST_WORDS, np.random.default_rng(3)), 1, CHASE_CONST_WORDS)


def reference_strided(src, n, stride):
    """What read_strided writes: every stride-th element."""
    return src[: n * stride : stride].copy()


def reference_offset(src, n, offset):
    """What read_offset writes."""
    return src[offset: offset + n].copy()


def reference_tx32(src, n, threads_per_block):
    """What read_tx32 writes: src[(i % threads_per_block) * 32]."""
    return src[(np.arange(n) % threads_per_block) * 32].copy()


def reference_advance_aos(p, dt):
    """advance_aos in NumPy: positions moved by velocity times dt."""
    q = p.copy()
    q[:, [X, Y, Z]] += q[:, [VX, VY, VZ]] * np.float32(dt)
    return q


def reference_advance_soa(q, dt):
    """advance_soa in NumPy."""
    r = q.copy()
    r[[X, Y, Z], :] += r[[VX, VY, VZ], :] * np.float32(dt)
    return r


def reference_const(n, reps, threads_per_block, per_lane):
    """What const_broadcast (per_lane=False) and const_per_lane / global_per_lane write."""
    lane = (np.arange(n) % threads_per_block) & 31 if per_lane else np.zeros(n, np.int64)
    acc = np.zeros(n, np.float32)
    for k in range(reps):
        acc += COEFFS[(k + lane) & 1023]
    return acc


def reference_many_live(x, iters):
    """_many_live in NumPy, element-wise over x."""
    h = np.float32(0.5)
    a = [x.astype(np.float32) + np.float32(k) for k in range(16)]
    for _ in range(iters):
        for g in range(0, 16, 4):  # the kernel updates four at a time: the last group sees new a0, a1
            a[g:g + 4] = [a[(k + 1) % 16] * h + a[(k + 2) % 16] * h for k in range(g, g + 4)]
    return (sum(a[:8][1:], a[0]) + sum(a[8:][1:], a[8])).astype(np.float32)


# --- registry of the bandwidth kernels ---------------------------------------------------------------------


Version = registry.Version  # one kernel version: its name, idea and kernel (nothing of its own here)


KERNELS = registry.registry(
    Version("read_strided", "out[i] = src[i * stride]", read_strided),
    Version("read_offset", "out[i] = src[i + offset]: misaligned by offset elements", read_offset),
    Version("read_tx32", "seed 002 pitfall 3: src[threadIdx.x * 32]", read_tx32),
    Version("advance_aos", "particles as an array of structs (n, 8)", advance_aos),
    Version("advance_soa", "particles as a struct of arrays (8, n)", advance_soa),
    Version("walk_rows", "x ↔ col: a warp walks along a row", walk_rows),
    Version("walk_cols", "x ↔ row: a warp walks down a column", walk_cols),
    Version("const_broadcast", "constant memory, one address per warp", const_broadcast),
    Version("const_per_lane", "constant memory, 32 addresses per warp", const_per_lane),
    Version("global_per_lane", "the same 32 addresses from global memory", global_per_lane),
    Version("local_dynamic", "a data-indexed per-thread array: local memory", local_dynamic),
    Version("many_live", "16 live accumulators, registers unlimited", many_live),
    Version("many_live_capped", "the same, capped at 16 registers: spills", many_live_capped),
)

LATENCY_KERNELS = {"chase": chase, "chase_cg": chase_cg, "chase_shared": chase_shared, "chase_const": chase_const,
                   "chase_local": chase_local, "fma_latency": fma_latency}


def random_particles(n: int, rng: np.random.Generator) -> np.ndarray:
    """n random particles as an (n, 8) float32 array of structs."""
    return rng.standard_normal((n, len(FIELDS))).astype(np.float32)


def to_soa(p: np.ndarray) -> np.ndarray:
    """The same particles as an (8, n) struct of arrays."""
    return p.T.copy()  # a copy even for n = 1, where p.T would already count as contiguous


# --- arithmetic: sectors per request, by hand -------------------------------------------------------------


def sectors_strided(stride: int, itemsize: int = 4) -> int:
    """Sectors one full warp needs for src[i * stride] when the warp's first element is sector-aligned.

    The 32 lanes span 32 * stride * itemsize bytes, all of it touched when a lane's step is under 32
    bytes (32 / (stride * itemsize) lanes share each sector); from a 32-byte step on, every lane needs a
    sector of its own.
    """
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    return min(WARP_SIZE, math.ceil(WARP_SIZE * stride * itemsize / SECTOR))


def sectors_offset(offset: int, itemsize: int = 4) -> int:
    """Sectors one full warp needs for 32 consecutive elements starting ``offset`` elements past a boundary."""
    span = WARP_SIZE * itemsize
    start = (offset * itemsize) % SECTOR
    return math.ceil((start + span) / SECTOR)


def useful_fraction(sectors: int, lanes: int = WARP_SIZE, itemsize: int = 4) -> float:
    """Bytes the lanes asked for over bytes the sectors moved."""
    return lanes * itemsize / (sectors * SECTOR)


def const_serialisation(lanes_addresses) -> int:
    """How many times a constant-memory read is replayed: the number of different addresses in the warp."""
    return len({a for a in lanes_addresses if a is not None})


# --- hardware-count cases (Nsight Compute on the H200 checks the tracer against these) --------------------

_N = 256  # 8 warps in 2 blocks of 128
_TPB = 128
_W = _N // WARP_SIZE


def _strided_case(stride):
    return Case(
        name=f"memory.read_strided[stride={stride}]", kernel=read_strided, griddim=_N // _TPB, blockdim=_TPB,
        make_args=lambda rng, s=stride: (rng.standard_normal(_N * s).astype(np.float32),
                                         np.zeros(_N, np.float32), s),
        expect={"global_load_requests": _W, "global_load_sectors": _W * sectors_strided(stride),
                "global_store_requests": _W, "global_store_sectors": _W * 4},
        note=f"src[i * {stride}] of float32", tags=("global", "chapter03"))


def _offset_case(offset):
    return Case(
        name=f"memory.read_offset[offset={offset}]", kernel=read_offset, griddim=_N // _TPB, blockdim=_TPB,
        make_args=lambda rng, o=offset: (rng.standard_normal(_N + 64).astype(np.float32),
                                         np.zeros(_N, np.float32), o),
        expect={"global_load_requests": _W, "global_load_sectors": _W * sectors_offset(offset),
                "global_store_requests": _W, "global_store_sectors": _W * 4},
        note=f"src[i + {offset}] of float32", tags=("global", "chapter03"))


NCU_CASES = (
    [_strided_case(s) for s in (1, 2, 3, 4, 8, 32, 64)]
    + [_offset_case(o) for o in (0, 1, 7, 8, 16)]
    + [
        Case(name="memory.read_tx32", kernel=read_tx32, griddim=_N // _TPB, blockdim=_TPB,
             make_args=lambda rng: (rng.standard_normal(_TPB * 32).astype(np.float32), np.zeros(_N, np.float32)),
             expect={"global_load_requests": _W, "global_load_sectors": _W * 32,
                     "global_store_requests": _W, "global_store_sectors": _W * 4},
             note="src[threadIdx.x * 32]: 32 sectors per request", tags=("global", "chapter03")),
        # 3 read-modify-writes of 2 loads each: 6 load and 3 store requests per warp
        Case(name="memory.advance_aos", kernel=advance_aos, griddim=_N // _TPB, blockdim=_TPB,
             make_args=lambda rng: (random_particles(_N, rng), np.float32(0.01)),
             expect={"global_load_requests": 6 * _W, "global_load_sectors": 6 * _W * 32,
                     "global_store_requests": 3 * _W, "global_store_sectors": 3 * _W * 32},
             note="particle i at p[i, :]: lanes 32 bytes apart", tags=("global", "chapter03")),
        Case(name="memory.advance_soa", kernel=advance_soa, griddim=_N // _TPB, blockdim=_TPB,
             make_args=lambda rng: (to_soa(random_particles(_N, rng)), np.float32(0.01)),
             expect={"global_load_requests": 6 * _W, "global_load_sectors": 6 * _W * 4,
                     "global_store_requests": 3 * _W, "global_store_sectors": 3 * _W * 4},
             note="field f of particle i at q[f, i]: lanes 4 bytes apart", tags=("global", "chapter03")),
        # a 64 x 64 float32 matrix, blocks of 32 x 8: 16 blocks, 8 warps each, 128 warps
        Case(name="memory.walk_rows", kernel=walk_rows, griddim=(2, 8), blockdim=(32, 8),
             make_args=lambda rng: (rng.standard_normal((64, 64)).astype(np.float32),
                                    np.zeros((64, 64), np.float32), np.float32(2)),
             expect={"global_load_requests": 128, "global_load_sectors": 128 * 4,
                     "global_store_requests": 128, "global_store_sectors": 128 * 4},
             note="x <-> col", tags=("global", "chapter03")),
        Case(name="memory.walk_cols", kernel=walk_cols, griddim=(2, 8), blockdim=(32, 8),
             make_args=lambda rng: (rng.standard_normal((64, 64)).astype(np.float32),
                                    np.zeros((64, 64), np.float32), np.float32(2)),
             expect={"global_load_requests": 128, "global_load_sectors": 128 * 32,
                     "global_store_requests": 128, "global_store_sectors": 128 * 32},
             note="x <-> row: rows 256 bytes apart", tags=("global", "chapter03")),
    ]
)
