"""Warps, SIMT and divergence (chapter 02): kernels where lanes of one warp go different ways, and cures.

Versions, in teaching order (each line: the idea):

0. ``record_warp_lane`` / ``branch_masks``  which warp and lane each thread of a 2-D block is, and the
                        active mask each side of a lane-parity branch sees (SIMT made visible).
1. ``even_odd_branch``  seed 002 §1.4's "bad" code: even lanes add, odd lanes multiply, an if/else on
                        ``threadIdx.x % 2``.  Both sides are one instruction, so the compiler may turn
                        the branch into a select (predication) and nothing is serialised at all.
2. ``even_odd_select``  seed 002's "good" rewrite: ``mask = threadIdx.x & 1``, one conditional
                        expression, no branch in the source.
3. ``lane_branch``      a branch that really costs: each side is a long chain of dependent arithmetic,
                        chosen by lane parity.  Every warp has lanes on both sides, so it runs both loops
                        one after the other, half its lanes idle each time.
4. ``warp_branch``      the same two paths chosen by warp (``threadIdx.x // 32``): the same work per
                        thread, but every warp runs only one loop (seed 000 §4.4: move the decision to
                        warp granularity).
5. ``flag_branch``      the path chosen by data (``flags[i]``): random flags split every warp, the same
                        flags sorted keep warps whole (seed 000 §4.4: regroup the data).
6. ``chain``            path A alone: the baseline, and the kernel of the block-size sweep (blocks that
                        are not a multiple of 32 leave lanes of their last warp empty, seed 003 §2).

Independent thread scheduling (独立线程调度, Volta and later: every thread has its own program counter,
so the 32 lanes of a warp are *not* guaranteed to run in lock-step):

7. ``warp_lock``        every thread takes one spin lock (``atomic.cas``) in turn.  The lanes that lose
                        spin while the winner, in the same warp, must get past the loop and release the
                        lock: a GPU that ran a warp's lanes in lock-step would hang here (pre-Volta GPUs
                        did); with per-thread scheduling it finishes.
8. ``last_warp_unsynced`` the classic unrolled last-warp reduction: a block's tree in shared memory down
                        to 64 values, then the first warp finishes with six ``s[t] += s[t + k]`` steps and
                        no barrier, trusting the lanes to move together.  That trust is a bug: nothing
                        makes lane 0 wait for lane 16's previous step.
9. ``last_warp_syncwarp`` the fix: each step reads into a register, ``cuda.syncwarp()``, writes,
                        ``cuda.syncwarp()`` (the pattern of NVIDIA's "Using CUDA Warp-Level Primitives").
10. ``half_warp_sum``   what a ``*_sync`` mask means: only lanes 0-15 call ``shfl_down_sync(0x0000FFFF, ...)``;
                        the mask names the lanes that take part, and every lane it names must call it.

``KERNELS`` lists each version with its NumPy reference.  ``PATH_A`` / ``PATH_B`` are the two
computations, written once in NumPy so that the references share nothing with the kernels.

Defined for chapter 02 (notebooks/02_warps_divergence.ipynb).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32

from course.kernels import registry
from course.kernels.basics import lane_count

WARP_SIZE = 32

# The two paths of the costly branch, as float32 constants (a float64 literal would turn the loop into
# float64 arithmetic, which runs at a different rate on the H200 and would muddle the comparison).
A_MUL, A_ADD = 0.9999, 0.0001  # path A: v = v * 0.9999 + 0.0001 (one FMA per step)
B_MUL, B_ADD = 0.5, 0.25  # path B: v = v * v * 0.5 + 0.25 (a multiply and an FMA; stays in [0.25, 0.75])


# --- 0: who is in which warp, and what a warp sees inside a branch ------------------------------------


@cuda.jit
def record_warp_lane(out):
    """out[ty, tx] = (warp, lane) of each thread of a 2-D block: x runs fastest, so rows fill warps."""
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tid = ty * cuda.blockDim.x + tx  # the linear thread id the hardware cuts into warps
    out[ty, tx, 0] = tid // 32
    out[ty, tx, 1] = tid % 32


@cuda.jit
def branch_masks(out):
    """Each thread records cuda.activemask() inside its side of an if/else on lane parity."""
    t = cuda.threadIdx.x
    if t % 2 == 0:
        out[t] = cuda.activemask()  # the lanes executing this side together
    else:
        out[t] = cuda.activemask()


# --- 1-2: the seed's even/odd example ------------------------------------------------------------------


@cuda.jit
def even_odd_branch(a, b, out, n):
    """out[i] = a[i] + b[i] on even lanes, a[i] * b[i] on odd lanes, with an if/else (seed 002 §1.4)."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        x = a[i]
        y = b[i]
        if cuda.threadIdx.x % 2 == 0:
            result = x + y
        else:
            result = x * y
        out[i] = result


@cuda.jit
def even_odd_select(a, b, out, n):
    """The seed's branch-free rewrite: one conditional expression on ``threadIdx.x & 1``."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        x = a[i]
        y = b[i]
        mask = cuda.threadIdx.x & 1  # 0 or 1
        out[i] = x * y if mask else x + y


# --- 3-6: a branch whose sides are long ----------------------------------------------------------------


@cuda.jit
def lane_branch(x, out, iters):
    """Path A on even lanes, path B on odd lanes: every warp runs both loops, half its lanes idle in each."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < x.size:
        v = x[i]
        if cuda.threadIdx.x % 2 == 0:
            for _ in range(iters):
                v = v * float32(A_MUL) + float32(A_ADD)
        else:
            for _ in range(iters):
                v = v * v * float32(B_MUL) + float32(B_ADD)
        out[i] = v


@cuda.jit
def warp_branch(x, out, iters):
    """The same two paths chosen per warp: even warps run A, odd warps run B, no warp runs both."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < x.size:
        v = x[i]
        if (cuda.threadIdx.x // 32) % 2 == 0:
            for _ in range(iters):
                v = v * float32(A_MUL) + float32(A_ADD)
        else:
            for _ in range(iters):
                v = v * v * float32(B_MUL) + float32(B_ADD)
        out[i] = v


@cuda.jit
def flag_branch(x, flags, out, iters):
    """Path B where flags[i] is set, else A: the data decides whether warps split."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < x.size:
        v = x[i]
        if flags[i]:
            for _ in range(iters):
                v = v * v * float32(B_MUL) + float32(B_ADD)
        else:
            for _ in range(iters):
                v = v * float32(A_MUL) + float32(A_ADD)
        out[i] = v


@cuda.jit
def chain(x, out, iters):
    """Path A for every thread: no branch on the lane at all (the baseline and the block-size kernel)."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < x.size:
        v = x[i]
        for _ in range(iters):
            v = v * float32(A_MUL) + float32(A_ADD)
        out[i] = v


# --- 7-10: independent thread scheduling and syncwarp --------------------------------------------------

LOCK_FREE, LOCK_TAKEN = 0, 1
REDUCE_THREADS = 256  # threads per block of the last-warp reductions (their shared array's size)


@cuda.jit
def warp_lock(lock, tickets, inside, overlaps):
    """Each thread takes the spin lock ``lock[0]`` in turn and draws a ticket inside it.

    A lane that loses the compare-and-swap loops; the lane that won, in the same warp, must leave the
    loop, draw its ticket and release the lock before the losers can win.  Lock-step lanes (one program
    counter per warp) would keep running the losers' loop forever; per-thread program counters let the
    winner go on.  ``inside`` counts the threads in the critical section (it must be 0 on entry) and
    ``overlaps`` counts entries that found another thread there: 0 when the lock works.
    """
    t = cuda.grid(1)
    if t < tickets.size:
        while cuda.atomic.cas(lock, 0, LOCK_FREE, LOCK_TAKEN) != LOCK_FREE:
            pass  # spin: another lane, maybe of this very warp, holds the lock
        if cuda.atomic.add(inside, 0, 1) != 0:
            cuda.atomic.add(overlaps, 0, 1)  # someone else was inside: mutual exclusion broken
        tickets[t] = cuda.atomic.add(inside, 1, 1)  # inside[1]: the ticket counter, 0, 1, 2 ... in lock order
        cuda.atomic.sub(inside, 0, 1)
        cuda.threadfence()
        cuda.atomic.exch(lock, 0, LOCK_FREE)


@cuda.jit
def last_warp_unsynced(a, out):
    """out[block] = sum of the block's 256 elements; the last warp's six steps have no barrier (the bug)."""
    s = cuda.shared.array(REDUCE_THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * REDUCE_THREADS + t
    s[t] = a[i] if i < a.size else float32(0)
    cuda.syncthreads()
    stride = REDUCE_THREADS // 2
    while stride > 32:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t < 32:  # "a warp runs in lock-step, so no barrier is needed" -- false since Volta
        s[t] += s[t + 32]
        s[t] += s[t + 16]
        s[t] += s[t + 8]
        s[t] += s[t + 4]
        s[t] += s[t + 2]
        s[t] += s[t + 1]
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def last_warp_syncwarp(a, out):
    """The same reduction, the last warp fixed: read, syncwarp, write, syncwarp at every step."""
    s = cuda.shared.array(REDUCE_THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * REDUCE_THREADS + t
    s[t] = a[i] if i < a.size else float32(0)
    cuda.syncthreads()
    stride = REDUCE_THREADS // 2
    while stride > 32:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t < 32:
        v = s[t] + s[t + 32]
        cuda.syncwarp()  # every lane has read s[t + 32] ...
        s[t] = v
        cuda.syncwarp()  # ... and written s[t] before anyone reads it
        k = 16
        while k > 0:
            v += s[t + k]
            cuda.syncwarp()
            s[t] = v
            cuda.syncwarp()
            k //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def half_warp_sum(x, out):
    """Lanes 0-15 of each warp sum their values with shfl_down_sync(0x0000FFFF, ...); lane 0 writes the sum.

    The mask says which lanes take part: all 16 named lanes call the shuffle, the other 16 do not.  A lane
    reading from a lane outside the mask (lane 12 + 8 = 20) gets an undefined value, but lane 0's sum only
    ever reads lanes 0-15.
    """
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    if lane < 16:
        v = x[i]
        k = 8
        while k > 0:
            v += cuda.shfl_down_sync(0x0000FFFF, v, k)  # the mask: lanes 0-15 take part
            k //= 2
        if lane == 0:
            out[i // 32] = v


# --- NumPy references ------------------------------------------------------------------------------------


def PATH_A(v: np.ndarray, iters: int) -> np.ndarray:
    """Path A in float32 NumPy: v = v * 0.9999 + 0.0001, iters times."""
    v = v.astype(np.float32).copy()
    for _ in range(iters):
        v = v * np.float32(A_MUL) + np.float32(A_ADD)
    return v


def PATH_B(v: np.ndarray, iters: int) -> np.ndarray:
    """Path B in float32 NumPy: v = v * v * 0.5 + 0.25, iters times."""
    v = v.astype(np.float32).copy()
    for _ in range(iters):
        v = v * v * np.float32(B_MUL) + np.float32(B_ADD)
    return v


def reference_warp_lane(rows: int, cols: int) -> np.ndarray:
    """(warp, lane) of every thread of a (cols, rows) block, indexed [ty, tx]: linear id ty * cols + tx."""
    tid = np.arange(rows * cols).reshape(rows, cols)
    return np.stack([tid // WARP_SIZE, tid % WARP_SIZE], axis=-1)


def reference_branch_masks(threads: int) -> np.ndarray:
    """What branch_masks records in full warps: even lanes see 0x55555555, odd lanes 0xAAAAAAAA."""
    return np.where(np.arange(threads) % 2 == 0, 0x55555555, 0xAAAAAAAA).astype(np.uint32)


def lanes_in_block(n: int, threads_per_block: int) -> np.ndarray:
    """threadIdx.x of each of n elements for a 1-D launch with blocks of threads_per_block."""
    return np.arange(n) % threads_per_block


def reference_even_odd(a, b, threads_per_block):
    """a + b where threadIdx.x is even, a * b where it is odd."""
    odd = lanes_in_block(a.size, threads_per_block) % 2 == 1
    return np.where(odd, a * b, a + b).astype(a.dtype)


def reference_by_choice(x, use_b, iters):
    """Path B where use_b is True, path A elsewhere."""
    return np.where(use_b, PATH_B(x, iters), PATH_A(x, iters)).astype(np.float32)


def reference_lane_branch(x, iters, threads_per_block):
    """What lane_branch writes: A on even threadIdx.x, B on odd."""
    return reference_by_choice(x, lanes_in_block(x.size, threads_per_block) % 2 == 1, iters)


def reference_warp_branch(x, iters, threads_per_block):
    """What warp_branch writes: A in even warps of a block, B in odd warps."""
    return reference_by_choice(x, (lanes_in_block(x.size, threads_per_block) // WARP_SIZE) % 2 == 1, iters)


def reference_flag_branch(x, flags, iters):
    """What flag_branch writes: B where flags is non-zero."""
    return reference_by_choice(x, flags != 0, iters)


def reference_chain(x, iters):
    """What chain writes: path A everywhere."""
    return PATH_A(x, iters)


def reference_block_sums(a: np.ndarray, threads_per_block: int = REDUCE_THREADS) -> np.ndarray:
    """The sum of each block's elements (zero-padded), in float64: what the last-warp reductions must write."""
    pad = (-a.size) % threads_per_block
    return np.concatenate([a.astype(np.float64), np.zeros(pad)]).reshape(-1, threads_per_block).sum(axis=1)


def reference_half_warp_sum(x: np.ndarray) -> np.ndarray:
    """Lanes 0-15 of each 32-element warp summed (x.size a multiple of 32)."""
    return x.astype(np.float64).reshape(-1, 32)[:, :16].sum(axis=1)


# --- running the scheduling demos ----------------------------------------------------------------------------


class LockResult(NamedTuple):
    """What a warp_lock launch left behind: did every thread get through, one at a time?"""

    threads: int
    tickets: np.ndarray  # the order in which threads took the lock (a permutation of 0 .. threads-1 when sound)
    overlaps: int  # entries that found another thread inside (0 when the lock excludes)

    @property
    def finished(self) -> bool:
        return bool(np.array_equal(np.sort(self.tickets), np.arange(self.threads)))


def run_warp_lock(threads: int = 32, threads_per_block: int = 32, kernel=None) -> LockResult:
    """Launch warp_lock (or ``kernel``, same arguments) with ``threads`` threads (one warp by default).

    On a GPU without per-thread scheduling this launch never returns; on cc >= 7.0 it must finish.  A
    caller timing it on a real GPU should run it in a child process with a time limit.
    """
    lock = np.zeros(1, np.int32)
    tickets = np.full(threads, -1, np.int32)
    inside = np.zeros(2, np.int32)
    overlaps = np.zeros(1, np.int32)
    (kernel or warp_lock)[-(-threads // threads_per_block), threads_per_block](lock, tickets, inside, overlaps)
    return LockResult(threads, tickets, int(overlaps[0]))


LAST_WARP = {"last_warp_unsynced": last_warp_unsynced, "last_warp_syncwarp": last_warp_syncwarp}


class ReduceResult(NamedTuple):
    """A last-warp reduction checked block by block against NumPy."""

    name: str
    blocks: int
    wrong_blocks: int  # blocks whose sum differs from the exact sum
    first_wrong: int  # index of the first wrong block, -1 when none
    got: float  # that block's result (or block 0's when none is wrong)
    want: float


def run_last_warp(name: str, blocks: int = 64, rng=None, kernel=None) -> ReduceResult:
    """Run ``last_warp_unsynced`` or ``last_warp_syncwarp`` (or ``kernel``, reported under ``name``) over
    ``blocks`` blocks of 256 fresh values.

    The values are small integers stored as float32, so every partial sum is exact and any difference
    from NumPy is a missed update, never rounding.
    """
    if kernel is None and name not in LAST_WARP:
        raise KeyError(f"{name!r}: use one of {', '.join(LAST_WARP)}")
    rng = np.random.default_rng(0) if rng is None else rng
    a = rng.integers(1, 16, blocks * REDUCE_THREADS).astype(np.float32)
    out = np.zeros(blocks, np.float32)
    (kernel or LAST_WARP[name])[blocks, REDUCE_THREADS](a, out)
    want = reference_block_sums(a)
    wrong = np.flatnonzero(out.astype(np.float64) != want)
    k = int(wrong[0]) if wrong.size else 0
    return ReduceResult(name, blocks, int(wrong.size), int(wrong[0]) if wrong.size else -1, float(out[k]),
                        float(want[k]))


# --- the registry ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Version(registry.Version):
    """One kernel version: the kernel, its idea, and how to run it on fresh data and check it."""

    kind: str  # "even_odd" (a, b, out, n) or "paths" (x, [flags,] out, iters)


KERNELS = registry.registry(
    Version("even_odd_branch", "seed 002: if/else on threadIdx.x % 2", even_odd_branch, "even_odd"),
    Version("even_odd_select", "seed 002: mask = threadIdx.x & 1, a conditional expression",
            even_odd_select, "even_odd"),
    Version("lane_branch", "long paths chosen by lane parity: every warp runs both", lane_branch, "paths"),
    Version("warp_branch", "the same paths chosen per warp: each warp runs one", warp_branch, "paths"),
    Version("flag_branch", "the path chosen by data: random flags vs sorted flags", flag_branch, "paths"),
    Version("chain", "path A only, no lane-dependent branch", chain, "paths"),
)


def flags_for(pattern: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Flags for flag_branch: 'zeros', 'alternate' (lane parity), 'random' (half set), or 'sorted' (random, sorted)."""
    if pattern == "zeros":
        return np.zeros(n, np.int32)
    if pattern == "alternate":
        return (np.arange(n) % 2).astype(np.int32)
    if pattern in ("random", "sorted"):
        f = (rng.random(n) < 0.5).astype(np.int32)
        return np.sort(f) if pattern == "sorted" else f
    raise ValueError(f"flags pattern {pattern!r}: use 'zeros', 'alternate', 'random' or 'sorted'")


FLAG_PATTERNS = ("zeros", "alternate", "random", "sorted")


def run(name: str, n: int, threads_per_block: int = 128, iters: int = 8, rng=None, flags: str = "random"):
    """Launch version ``name`` on fresh random data of n elements; return (output, NumPy reference)."""
    rng = np.random.default_rng(0) if rng is None else rng
    version = KERNELS[name]
    blocks = -(-n // threads_per_block)
    if version.kind == "even_odd":
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        version.kernel[blocks, threads_per_block](a, b, out, n)
        return out, reference_even_odd(a, b, threads_per_block)
    x = rng.random(n).astype(np.float32)  # in [0, 1): both paths stay bounded
    out = np.zeros(n, np.float32)
    if name == "flag_branch":
        f = flags_for(flags, n, rng)
        version.kernel[blocks, threads_per_block](x, f, out, iters)
        return out, reference_flag_branch(x, f, iters)
    version.kernel[blocks, threads_per_block](x, out, iters)
    ref = {"lane_branch": reference_lane_branch, "warp_branch": reference_warp_branch}.get(name)
    return out, (ref(x, iters, threads_per_block) if ref else reference_chain(x, iters))


# --- arithmetic ---------------------------------------------------------------------------------------------


def warp_paths(choice: np.ndarray) -> np.ndarray:
    """How many different paths each warp of a 1-D block takes: 1 or 2 per warp (choice: bool per thread)."""
    choice = np.asarray(choice, bool)
    pad = (-choice.size) % WARP_SIZE
    warps = np.concatenate([choice, np.repeat(choice[-1:], pad)]).reshape(-1, WARP_SIZE)
    return 1 + (warps.any(axis=1) & ~warps.all(axis=1))


def expected_cost(choice: np.ndarray, cost_a: float, cost_b: float) -> float:
    """Issue time of the warps of ``choice`` (True = path B) if a split warp runs both paths back to back."""
    choice = np.asarray(choice, bool)
    pad = (-choice.size) % WARP_SIZE
    warps = np.concatenate([choice, np.repeat(choice[-1:], pad)]).reshape(-1, WARP_SIZE)
    runs_a = (~warps).any(axis=1)
    runs_b = warps.any(axis=1)
    return float(runs_a.sum() * cost_a + runs_b.sum() * cost_b)


def warp_slots(n: int, threads_per_block: int) -> dict:
    """Blocks, warps and lane use of a 1-D launch over n elements (chapter 01's lane count, one line)."""
    lc = lane_count(n, threads_per_block)
    return {"threads_per_block": threads_per_block, "blocks": lc.blocks_per_grid, "warps": lc.warps,
            "busy_fraction": lc.busy_fraction}


BLOCK_SIZES = (32, 33, 48, 64, 65, 96, 100, 128, 129, 160, 192, 255, 256, 257, 384, 512, 640, 1000, 1024)
