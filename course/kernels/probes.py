"""Probes: small kernels that measure one property of the machine each (issue 14, "every number teaches
what its text says").  scripts/gpu/measure_probes.py checks and times them on the H200; the SASS that
proves what each loop does comes from scripts/gpu/probe_sass.py (compiled for sm_90 without a GPU).

- ``ffma_chain_64`` / ``ffma_chain_128`` / ``empty_loop``: one warp runs a loop whose body is a chain of
  64 (128) dependent FFMAs, ``a = a * b + c``, each needing the one before.  The difference of the two
  chain lengths over 64 FFMAs per iteration is the dependent-FFMA latency without loop overhead.
- ``smem_dependent`` / ``smem_independent``: shared-memory loads at ``lane * stride`` words.  The first is
  a chain (each load's address is the value the previous load returned: latency); the second issues 8
  independent loads per iteration from every warp of a full block (throughput: wavefronts per cycle).
- ``local_table``: a 64-word per-thread table filled from global memory and read at indices that come
  from global memory: registers cannot be indexed at run time, so the table must live in local memory.
- (independent thread scheduling: the intra-warp lock and the last-warp reductions are chapter 02's own
  kernels, ``course.kernels.warps.warp_lock`` / ``last_warp_unsynced`` / ``last_warp_syncwarp``.)
- ``atomic_floor``: one ``atomic.add`` to ``out[0]`` per block and nothing else: the cost of the atomics a
  one-atomic-per-block kernel adds, for any grid.
- ``atomic_bins_i32`` / ``atomic_bins_f32`` / ``scatter_store``: one global atomic (or one plain store) per thread at
  an index read from memory: how fast the L2 takes atomics (and scattered 4-byte stores) when the addresses of a warp
  are spread over 1, 4 or 32 sectors and over few or many bins (``course.explain``'s atomic throughput ceiling).
"""

from __future__ import annotations

from numba import cuda, float32, int32

CHAIN = 64  # dependent FFMAs per loop iteration (the issue asks for >= 64)
LOCAL_WORDS = 64
SMEM_WORDS = 1024


def _chain(n):
    """A kernel whose loop body is ``n`` dependent FFMAs, fully unrolled (a literal range of constant length)."""

    @cuda.jit
    def ffma_chain(x, out, iters):
        i = cuda.threadIdx.x
        a = x[i]
        b = x[i + 32]
        c = x[i + 64]
        for _ in range(iters):
            for _k in range(n):
                a = a * b + c
        out[i] = a

    return ffma_chain


ffma_chain_64 = _chain(CHAIN)
ffma_chain_128 = _chain(2 * CHAIN)


@cuda.jit
def empty_loop(x, out, iters):
    """The same loop with no work in its body: what the loop itself costs (the compiler may remove it)."""
    i = cuda.threadIdx.x
    a = x[i]
    for _ in range(iters):
        a = a + float32(0)
    out[i] = a


def ffma_chain_reference(x, iters, n):
    import numpy as np

    a, b, c = (x[0:32].astype(np.float32), x[32:64].astype(np.float32), x[64:96].astype(np.float32))
    for _ in range(iters * n):
        a = (a * b + c).astype(np.float32)
    return a


@cuda.jit
def smem_dependent(table, out, stride, iters):
    """One warp: lane t starts at word (t * stride) % 1024 and follows ``j = s[j]`` (s[j] = j): a chain of loads."""
    s = cuda.shared.array(SMEM_WORDS, int32)
    t = cuda.threadIdx.x
    for k in range(t, SMEM_WORDS, cuda.blockDim.x):
        s[k] = table[k]
    cuda.syncthreads()
    j = (t * stride) % SMEM_WORDS
    for _ in range(iters):
        j = s[j]
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = j


@cuda.jit
def smem_independent(table, out, stride, iters):
    """Every warp of the block: 8 independent loads per iteration at lane * stride (+ a per-load offset)."""
    s = cuda.shared.array(SMEM_WORDS, int32)
    t = cuda.threadIdx.x
    for k in range(t, SMEM_WORDS, cuda.blockDim.x):
        s[k] = table[k]
    cuda.syncthreads()
    lane = t % 32
    base = (lane * stride) % SMEM_WORDS
    acc = 0
    for it in range(iters):
        off = (it * 32) % SMEM_WORDS  # a multiple of 32 words: the same banks, so the same conflict degree
        acc += s[(base + off) % SMEM_WORDS]
        acc += s[(base + off + 32) % SMEM_WORDS]
        acc += s[(base + off + 64) % SMEM_WORDS]
        acc += s[(base + off + 96) % SMEM_WORDS]
        acc += s[(base + off + 128) % SMEM_WORDS]
        acc += s[(base + off + 160) % SMEM_WORDS]
        acc += s[(base + off + 192) % SMEM_WORDS]
        acc += s[(base + off + 224) % SMEM_WORDS]
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = acc


@cuda.jit
def local_table(x, idx, out, reads):
    """A per-thread table of 64 values from global memory, read ``reads`` times at data-dependent indices."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    n = x.size
    if i < out.size:
        t = cuda.local.array(LOCAL_WORDS, float32)
        for k in range(LOCAL_WORDS):
            t[k] = x[(i + k * 4099) % n]
        acc = float32(0)
        j = idx[i]
        for _ in range(reads):
            v = t[j & (LOCAL_WORDS - 1)]
            acc += v
            j = (j * 13 + 7) & 4095  # the next index depends on data the compiler cannot see
        out[i] = acc


@cuda.jit
def atomic_floor(out):
    """Thread 0 of every block adds 1 to out[0]: one same-address atomic per block, nothing else."""
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, float32(1))


@cuda.jit
def atomic_bins_i32(keys, bins):
    """bins[keys[i]] += 1 (int32), one global atomic per thread."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        cuda.atomic.add(bins, keys[i], 1)


@cuda.jit
def atomic_bins_f32(keys, bins):
    """bins[keys[i]] += 1.0 (float32), one global atomic per thread."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        cuda.atomic.add(bins, keys[i], float32(1))


@cuda.jit
def scatter_store(perm, x, out):
    """out[perm[i]] = x[i]: one 4-byte store per thread at an index read from memory."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[perm[i]] = x[i]


WANTS = 320  # live values a thread of many_registers keeps: more than the 255 registers a thread may have


def _many_registers_source(n: int) -> str:
    """``n`` scalars, each updated every iteration from its neighbour, so all ``n`` stay live at once."""
    body = ["def many_registers(x, out, iters):",
            "    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x",
            "    m = x.size"]
    body += [f"    a{k} = x[(i + {k}) % m]" for k in range(n)]
    body += ["    for _ in range(iters):"]
    body += [f"        a{k} = a{k} * a{(k + 1) % n} + float32(0.5)" for k in range(n)]
    body += ["    out[i] = " + " + ".join(f"a{k}" for k in range(n))]
    return "\n".join(body) + "\n"


_ns = {"cuda": cuda, "float32": float32}
exec(compile(_many_registers_source(WANTS), "<course.kernels.probes.many_registers>", "exec"), _ns)
many_registers = cuda.jit(_ns["many_registers"])


@cuda.jit
def sum_one_in_flight(a, out, sentinel):
    """Chapter 06's Little's-law case as the text means it: each thread has ONE 4-byte load in flight.

    The loop exits when a value equals ``sentinel`` (a value the data never holds), so the branch after
    each load depends on it: the compiler cannot issue the next iteration's load before this one returns
    (it does not speculate loads past a data-dependent exit), unlike the plain grid-stride sum, which ptxas
    unrolls four times with four loads in flight.  One atomic per block at the end, as in the chapter.
    """
    s = cuda.shared.array(1, float32)
    if cuda.threadIdx.x == 0:
        s[0] = 0
    cuda.syncthreads()
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.gridDim.x * cuda.blockDim.x
    acc = float32(0)
    while i < a.size:
        v = a[i]
        if v == sentinel:
            break
        acc += v
        i += stride
    cuda.atomic.add(s, 0, acc)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def block_touch(out):
    """Thread 0 of each block writes 1 to out[block]: a block that does next to nothing, so that a launch of many
    is timed by how fast the GPU starts and retires blocks."""
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = 1


@cuda.jit
def fill_index(out):
    """out[i] = i: one coalesced 4-byte store per thread and no load (the block rate beside the stores' bytes)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = i
