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

``KERNELS`` lists each version with its NumPy reference.  ``PATH_A`` / ``PATH_B`` are the two
computations, written once in NumPy so that the references share nothing with the kernels.

Defined for chapter 02 (notebooks/02_warps_divergence.ipynb).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from numba import cuda, float32

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


# --- the registry ------------------------------------------------------------------------------------------


class Version(NamedTuple):
    """One kernel version: the kernel, its idea, and how to run it on fresh data and check it."""

    kernel: object
    idea: str
    kind: str  # "even_odd" (a, b, out, n) or "paths" (x, [flags,] out, iters)


KERNELS = {
    "even_odd_branch": Version(even_odd_branch, "seed 002: if/else on threadIdx.x % 2", "even_odd"),
    "even_odd_select": Version(even_odd_select, "seed 002: mask = threadIdx.x & 1, a conditional expression",
                               "even_odd"),
    "lane_branch": Version(lane_branch, "long paths chosen by lane parity: every warp runs both", "paths"),
    "warp_branch": Version(warp_branch, "the same paths chosen per warp: each warp runs one", "paths"),
    "flag_branch": Version(flag_branch, "the path chosen by data: random flags vs sorted flags", "paths"),
    "chain": Version(chain, "path A only, no lane-dependent branch", "paths"),
}


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
