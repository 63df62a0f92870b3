"""Matrix transpose, ``out[col, row] = a[row, col]``, from the naive kernel to near the memory limit.

Versions, in teaching order (each line: the idea; chapter 05 measures every one):

1. ``naive``        one thread per element, 32×32 threads: reads are coalesced (合并访存), writes land
                    ``n_rows`` elements apart, 32 sectors per store request (seed 000 §2.1).
2. ``tile_32x32``   a shared ``[32][32]`` tile: read rows, write rows; the column read of the tile is a
                    32-way bank conflict (存储体冲突) (seed 000 §2.2–2.3).
3. ``tile_32x33``   pad one column: ``[32][33]`` puts a tile column into 32 different banks (§3.1).
4. ``tile_32x34``   pad two: 34 is not coprime with 32, so the column still hits 16 banks, 2-way (§3.1).
5. ``swizzle``      ``tile[ty][tx ^ ty]``: the XOR swizzle, conflict-free with no extra memory (§3.2).
6. ``rows``         32×8 threads, each moving 4 rows of a padded tile: fewer threads, more work each.
7. ``batched``      the same, but each thread issues its 4 loads before its first shared store, so 4
                    loads are in flight instead of 1 (the compiler cannot hoist a load over a guarded
                    store: version 6's SASS alternates LDG, STS, LDG, STS).
8. ``unsigned``     the same with unsigned 32-bit index arithmetic: numba's signed indices carry a
                    negative-index wrap-around check and 64-bit math (ptxas for sm_90 gave 272
                    instructions for version 7's kernel, 144 for this one, in a local compile).
9. ``wide``         8-byte words: int32/float32 rows are read and written as int64 pairs, each thread
                    transposes 2×2 blocks in registers, 64×64 tiles in a swizzled int64 tile.
10. ``vec4``        16-byte accesses: numba has no 16-byte scalar type (a complex128 load is split into
                    two 8-byte loads), so two small intrinsics (``load4``/``store4``) emit
                    ``ld.global.v4``/``st.global.v4``; each thread transposes 4×4 blocks in registers.
                    (``uint32``, ``load4``, ``store4``: plain Python functions the CPU engine runs,
                    their GPU typing and lowering registered with numba in course.kernels.vector.)

``TRANSPOSE_VERSIONS`` holds them in that order; the factories (``rows_kernel``, ``batched_kernel``,
``unsigned_kernel``, ``wide_kernel``, ``vec4_kernel``) also build the other tile shapes that
``scripts/gpu/bench_transpose.py`` sweeps (``sweep_candidates``).  ``reference`` is the NumPy
answer; ``NCU_CASES`` are small launches that ``scripts/gpu/validate_tracer.py`` counts on the H200.

Defined for chapter 05 (notebooks/05_transpose.ipynb).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import course  # (chooses the backend before numba is imported)
from course.kernels import registry
from course.kernels.vector import load4, store4, uint32
from numba import cuda

TILE = 32


# Unsigned closure constants: numba-cuda types a np.uint32 one as uint32 (a sum with it stays 32-bit unsigned).
U32 = np.uint32 if course.on_gpu() else int  # run as Python (engine, tracer), an int gives the same index
# 16-byte alignment of vec4's shared tile lets ptxas merge 4 shared accesses into one (a compile option, not a
# launch one): numba's stock simulator raises "Array alignment is not supported in cudasim"; the engine needs none.
SHARED_ALIGN = 16 if course.on_gpu() else None


def reference(a: np.ndarray) -> np.ndarray:
    """The answer every version must give: NumPy's transpose, made contiguous."""
    return np.ascontiguousarray(np.asarray(a).T)


# --- 1. naive ----------------------------------------------------------------------------------------


@cuda.jit
def naive(a, out):
    """One thread per element: coalesced reads, stores ``n_rows`` elements apart (32 sectors each)."""
    n_rows, n_cols = a.shape
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < n_rows and col < n_cols:
        out[col, row] = a[row, col]


# --- 2–4. a shared tile, padded or not ------------------------------------------------------------------


def tile_kernel(width):
    """A 32×32-thread transpose through a shared ``[32][width]`` tile (width 32, 33 or 34)."""

    @cuda.jit
    def tile_transpose(a, out):
        """Read a tile by rows into shared memory, then write the transposed tile by rows."""
        tile = cuda.shared.array((TILE, width), dtype=a.dtype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        n_rows, n_cols = a.shape
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        if row < n_rows and col < n_cols:
            tile[ty, tx] = a[row, col]  # a warp stores one tile row: 32 banks, no conflict
        cuda.syncthreads()
        # The block's output tile is the input tile's mirror: swap the block indices.
        out_row = cuda.blockIdx.x * TILE + ty
        out_col = cuda.blockIdx.y * TILE + tx
        if out_row < n_cols and out_col < n_rows:
            out[out_row, out_col] = tile[tx, ty]  # a warp reads one tile column: width decides the banks

    return tile_transpose


tile_32x32 = tile_kernel(32)
tile_32x33 = tile_kernel(33)
tile_32x34 = tile_kernel(34)


# --- 5. XOR swizzle -------------------------------------------------------------------------------------


@cuda.jit
def swizzle(a, out):
    """A ``[32][32]`` tile whose column index is XOR-ed with the row: each column spreads over 32 banks."""
    tile = cuda.shared.array((TILE, TILE), dtype=a.dtype)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n_rows, n_cols = a.shape
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    if row < n_rows and col < n_cols:
        tile[ty, tx ^ ty] = a[row, col]  # element (ty, tx) lives in column tx ^ ty of row ty
    cuda.syncthreads()
    out_row = cuda.blockIdx.x * TILE + ty
    out_col = cuda.blockIdx.y * TILE + tx
    if out_row < n_cols and out_col < n_rows:
        out[out_row, out_col] = tile[tx, ty ^ tx]  # XOR is its own inverse: element (tx, ty)


# --- 6. more work per thread -------------------------------------------------------------------------------


def rows_kernel(tile, rows):
    """``tile``×``rows`` threads move a ``tile``×``tile`` block, each thread ``tile // rows`` rows."""
    width = tile + 1  # padded; computed out here because a shared array's shape must be a constant

    @cuda.jit
    def rows_transpose(a, out):
        """Each thread copies every ``rows``-th row of the tile: one load, then its store, and again."""
        t = cuda.shared.array((tile, width), dtype=a.dtype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        n_rows, n_cols = a.shape
        row0 = cuda.blockIdx.y * tile
        col0 = cuda.blockIdx.x * tile
        for j in range(0, tile, rows):
            if row0 + ty + j < n_rows and col0 + tx < n_cols:
                t[ty + j, tx] = a[row0 + ty + j, col0 + tx]
        cuda.syncthreads()
        for j in range(0, tile, rows):
            if col0 + ty + j < n_cols and row0 + tx < n_rows:
                out[col0 + ty + j, row0 + tx] = t[tx, ty + j]

    return rows_transpose


# --- 7. all loads in flight ---------------------------------------------------------------------------------


def batched_kernel(tile, rows):
    """Version 6 with each thread's loads issued together, kept in registers, then stored."""
    steps = tile // rows
    width = tile + 1

    @cuda.jit
    def batched_transpose(a, out):
        """Load ``steps`` elements into registers, then store them: the loads overlap in flight."""
        t = cuda.shared.array((tile, width), dtype=a.dtype)
        vals = cuda.local.array(steps, dtype=a.dtype)  # indexed by unrolled constants: registers
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        n_rows, n_cols = a.shape
        row0 = cuda.blockIdx.y * tile
        col0 = cuda.blockIdx.x * tile
        for j in range(steps):
            if row0 + ty + j * rows < n_rows and col0 + tx < n_cols:
                vals[j] = a[row0 + ty + j * rows, col0 + tx]
        for j in range(steps):  # out-of-range slots store garbage that no thread ever writes out
            t[ty + j * rows, tx] = vals[j]
        cuda.syncthreads()
        for j in range(steps):
            vals[j] = t[tx, ty + j * rows]
        for j in range(steps):
            if col0 + ty + j * rows < n_cols and row0 + tx < n_rows:
                out[col0 + ty + j * rows, row0 + tx] = vals[j]

    return batched_transpose


# --- 8. unsigned index arithmetic ----------------------------------------------------------------------------


def unsigned_kernel(tile, rows):
    """Version 7 with every index a ``uint32``: no negative-index wrap-around, 32-bit arithmetic."""
    steps = tile // rows
    width = tile + 1
    TILE_U = U32(tile)
    ROWS_U = U32(rows)

    @cuda.jit
    def unsigned_transpose(a, out):
        """Version 7; numba adds ``if i < 0: i += n`` to every signed index, an unsigned one needs none."""
        t = cuda.shared.array((tile, width), dtype=a.dtype)
        vals = cuda.local.array(steps, dtype=a.dtype)
        tx = uint32(cuda.threadIdx.x)
        ty = uint32(cuda.threadIdx.y)
        n_rows = uint32(a.shape[0])
        n_cols = uint32(a.shape[1])
        row0 = uint32(uint32(cuda.blockIdx.y) * TILE_U)
        col0 = uint32(uint32(cuda.blockIdx.x) * TILE_U)
        # uint32(...) around each sum: numba widens uint32 + uint32 to uint64; the cast keeps 32 bits.
        col = uint32(col0 + tx)
        for j in range(steps):
            row = uint32(row0 + ty + uint32(j) * ROWS_U)
            if row < n_rows and col < n_cols:
                vals[j] = a[row, col]
        for j in range(steps):
            t[uint32(ty + uint32(j) * ROWS_U), tx] = vals[j]
        cuda.syncthreads()
        for j in range(steps):
            vals[j] = t[tx, uint32(ty + uint32(j) * ROWS_U)]
        col = uint32(row0 + tx)
        for j in range(steps):
            row = uint32(col0 + ty + uint32(j) * ROWS_U)
            if row < n_cols and col < n_rows:
                out[row, col] = vals[j]

    return unsigned_transpose


# --- 9. 8-byte words, 2×2 blocks in registers ------------------------------------------------------------------


def wide_kernel(tile, rows):
    """(tile/2)×rows threads move a tile×tile block of 4-byte elements as int64 pairs (8-byte accesses).

    The kernel takes ``(a, out, a2, out2, wide)``: ``a2``/``out2`` are int64 views of ``a``/``out``
    (two elements per word) and ``wide`` says they are usable (4-byte elements, even sizes).  Whole
    tiles go through the 8-byte path; edge tiles, odd sizes and other dtypes take a plain element
    path (stores uncoalesced, but only at the edges).
    """
    words = tile // 2  # int64 words per tile row
    pair_steps = words // rows  # row pairs per thread when loading
    out_steps = tile // rows  # output rows per thread when storing
    TILE_U = U32(tile)
    WORDS_U = U32(words)
    ROWS_U = U32(rows)
    SWZ = U32(words - 1)
    LOW = 0xFFFFFFFF

    @cuda.jit
    def wide_transpose(a, out, a2, out2, wide):
        """Load two rows of int64 pairs, swap their halves (a 2×2 transpose), store rows of pairs."""
        # s[i, w] holds output row i (of the tile), elements 2w and 2w+1, at word w ^ ((i >> 1) & SWZ):
        # the swizzle spreads the column of words each warp stores over all banks.
        s = cuda.shared.array((tile, words), dtype=np.int64)
        tx = uint32(cuda.threadIdx.x)
        ty = uint32(cuda.threadIdx.y)
        n_rows = uint32(a.shape[0])
        n_cols = uint32(a.shape[1])
        row0 = uint32(uint32(cuda.blockIdx.y) * TILE_U)
        col0 = uint32(uint32(cuda.blockIdx.x) * TILE_U)
        if wide != 0 and row0 + TILE_U <= n_rows and col0 + TILE_U <= n_cols:
            top = cuda.local.array(pair_steps, dtype=np.int64)
            bottom = cuda.local.array(pair_steps, dtype=np.int64)
            wcol = uint32(uint32(cuda.blockIdx.x) * WORDS_U + tx)
            for k in range(pair_steps):  # all loads first: 2 * pair_steps 8-byte loads in flight
                pair = uint32(ty + uint32(k) * ROWS_U)
                top[k] = a2[uint32(row0 + pair + pair), wcol]
                bottom[k] = a2[uint32(row0 + pair + pair + uint32(1)), wcol]
            for k in range(pair_steps):
                pair = uint32(ty + uint32(k) * ROWS_U)
                p0 = top[k]  # elements (2·pair, 2tx), (2·pair, 2tx+1) of the tile
                p1 = bottom[k]  # elements (2·pair+1, 2tx), (2·pair+1, 2tx+1)
                even = (p0 & LOW) | (p1 << 32)  # output row 2tx: (a[2·pair, 2tx], a[2·pair+1, 2tx])
                odd = ((p0 >> 32) & LOW) | ((p1 >> 32) << 32)  # output row 2tx+1
                i = uint32(tx + tx)
                s[i, uint32(pair ^ (tx & SWZ))] = even
                s[uint32(i + uint32(1)), uint32(pair ^ (tx & SWZ))] = odd
            cuda.syncthreads()
            wrow = uint32(uint32(cuda.blockIdx.y) * WORDS_U + tx)
            for k in range(out_steps):
                i = uint32(ty + uint32(k) * ROWS_U)
                out2[uint32(col0 + i), wrow] = s[i, uint32(tx ^ ((i >> uint32(1)) & SWZ))]
        else:
            # Edge tile: element by element, no shared memory (a tiny share of a large matrix).
            for r in range(ty, tile, rows):
                for c in range(tx, tile, words):
                    if row0 + r < n_rows and col0 + c < n_cols:
                        out[col0 + c, row0 + r] = a[row0 + r, col0 + c]

    return wide_transpose


_DUMMY = {}


def _int64_view(x, fallback_shape=(1, 1)):
    """``x`` viewed as int64 words (device or host array), or a 1×1 stand-in where it cannot be."""
    dt = np.dtype(x.dtype)
    if dt.itemsize == 4 and x.ndim == 2 and x.shape[1] % 2 == 0 and x.shape[0] > 0:
        return x.view(np.int64), True
    key = "host" if isinstance(x, np.ndarray) else "device"
    if key not in _DUMMY:
        _DUMMY[key] = np.zeros(fallback_shape, np.int64) if key == "host" else cuda.device_array(fallback_shape, np.int64)
    return _DUMMY[key], False


def _wide_args(a, out):
    """Arguments of a ``wide`` kernel: the arrays, their int64 views and whether the views are usable."""
    a2, ok_a = _int64_view(a)
    out2, ok_out = _int64_view(out)
    return (a, out, a2, out2, 1 if (ok_a and ok_out) else 0)


# --- 10. 16-byte accesses through two intrinsics -----------------------------------------------------------------


def vec4_kernel(tile, rows, group=1):
    """(tile/4)×rows threads move a tile×tile block of 4-byte elements in 16-byte vectors.

    The kernel takes ``(a, out, wide)``; ``wide`` says the 16-byte path is usable (4-byte elements,
    sizes multiples of 4, 16-byte aligned rows).  Whole tiles take it; the rest goes element by element.
    ``group`` > 1 (a sweep option) renumbers the blocks so that consecutive ones cover a
    group×group square of tiles.
    """
    GROUP = group
    GROUP_U = U32(group)
    words = tile // 4  # 16-byte words per tile row
    quad_steps = words // rows  # groups of 4 input rows per thread
    out_steps = tile // rows  # output rows per thread
    TILE_U = U32(tile)
    ROWS_U = U32(rows)
    FOUR = U32(4)
    SWZ = U32(7)  # 8 words of 16 bytes fill the 32 banks once

    @cuda.jit
    def vec4_transpose(a, out, wide):
        """Load 4 rows × 16 bytes, store them as 4 output rows: a 4×4 block transposed in registers."""
        # s[i, 4w:4w+4] holds output row i, word w ^ ((i >> 2) & 7): the swizzle keeps every
        # 8 lanes of a 16-byte access in 8 different bank groups.
        s = cuda.shared.array((tile, tile), dtype=a.dtype, alignment=SHARED_ALIGN)
        tx = uint32(cuda.threadIdx.x)
        ty = uint32(cuda.threadIdx.y)
        n_rows = uint32(a.shape[0])
        n_cols = uint32(a.shape[1])
        bx = uint32(cuda.blockIdx.x)
        by = uint32(cuda.blockIdx.y)
        if GROUP > 1:
            # Blocks start in the order of their linear id; renumbered, the blocks running at one
            # time read a compact square of `a` and write a compact square of `out` (instead of
            # whole rows of `a` and thin slices of many rows of `out`).
            gx = uint32(cuda.gridDim.x)
            gy = uint32(cuda.gridDim.y)
            if gx % GROUP_U == 0 and gy % GROUP_U == 0:
                bid = uint32(by * gx + bx)
                g = uint32(bid // (GROUP_U * GROUP_U))
                within = uint32(bid % (GROUP_U * GROUP_U))
                groups_x = uint32(gx // GROUP_U)
                bx = uint32((g % groups_x) * GROUP_U + within % GROUP_U)
                by = uint32((g // groups_x) * GROUP_U + within // GROUP_U)
        row0 = uint32(by * TILE_U)
        col0 = uint32(bx * TILE_U)
        if wide != 0 and row0 + TILE_U <= n_rows and col0 + TILE_U <= n_cols:
            v = cuda.local.array((quad_steps, 16), dtype=a.dtype)
            c4 = uint32(col0 + tx * FOUR)
            for k in range(quad_steps):  # all loads first: 4 * quad_steps 16-byte loads in flight
                r = uint32(row0 + (ty + uint32(k) * ROWS_U) * FOUR)
                v[k, 0], v[k, 1], v[k, 2], v[k, 3] = load4(a, r, c4)
                v[k, 4], v[k, 5], v[k, 6], v[k, 7] = load4(a, uint32(r + uint32(1)), c4)
                v[k, 8], v[k, 9], v[k, 10], v[k, 11] = load4(a, uint32(r + uint32(2)), c4)
                v[k, 12], v[k, 13], v[k, 14], v[k, 15] = load4(a, uint32(r + uint32(3)), c4)
            for k in range(quad_steps):
                w = uint32(((ty + uint32(k) * ROWS_U) ^ (tx & SWZ)) * FOUR)
                for c in range(4):  # output row 4tx + c is column c of the 4×4 block
                    i = uint32(tx * FOUR + uint32(c))
                    s[i, w] = v[k, c]
                    s[i, uint32(w + uint32(1))] = v[k, 4 + c]
                    s[i, uint32(w + uint32(2))] = v[k, 8 + c]
                    s[i, uint32(w + uint32(3))] = v[k, 12 + c]
            cuda.syncthreads()
            for k in range(out_steps):
                i = uint32(ty + uint32(k) * ROWS_U)
                w = uint32((tx ^ ((i >> uint32(2)) & SWZ)) * FOUR)
                store4(out, uint32(col0 + i), uint32(row0 + tx * FOUR),
                       s[i, w], s[i, uint32(w + uint32(1))], s[i, uint32(w + uint32(2))], s[i, uint32(w + uint32(3))])
        else:
            for r in range(ty, tile, rows):
                for c in range(tx, tile, words):
                    if row0 + r < n_rows and col0 + c < n_cols:
                        out[col0 + c, row0 + r] = a[row0 + r, col0 + c]

    return vec4_transpose


def _aligned16(x) -> bool:
    """True when ``x``'s data starts on a 16-byte boundary (host or device array)."""
    if isinstance(x, np.ndarray):
        return x.ctypes.data % 16 == 0
    cai = getattr(x, "__cuda_array_interface__", None)
    return cai is None or cai["data"][0] % 16 == 0


def _vec4_args(a, out):
    """Arguments of a ``vec4`` kernel: the arrays and whether 16-byte accesses are usable."""
    ok = (np.dtype(a.dtype).itemsize == 4 and a.shape[0] % 4 == 0 and a.shape[1] % 4 == 0
          and _aligned16(a) and _aligned16(out))
    return (a, out, 1 if ok else 0)


# --- the registry ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Version(registry.Version):
    """One transpose version: its kernel, launch shape, one-line idea and the dtypes it is meant for."""

    tile: int  # the block moves a tile×tile piece of the matrix
    threads: tuple  # threads_per_block as (x, y)
    dtypes: tuple = ("int32", "float32", "float64")
    make_args: Callable = field(default=lambda a, out: (a, out))

    def griddim(self, shape) -> tuple:
        """blocks_per_grid for an input of ``shape`` = (n_rows, n_cols): x walks columns, y rows."""
        n_rows, n_cols = shape
        return (max(1, math.ceil(n_cols / self.tile)), max(1, math.ceil(n_rows / self.tile)))

    def args(self, a, out) -> tuple:
        """The kernel's arguments for input ``a`` and output ``out`` (device or host arrays)."""
        return tuple(self.make_args(a, out))

    def launch(self, a, out) -> None:
        """Launch once: ``out`` (n_cols × n_rows) receives the transpose of ``a`` (n_rows × n_cols)."""
        if tuple(out.shape) != (a.shape[1], a.shape[0]):
            raise ValueError(
                f"transpose {self.name}: out has shape {tuple(out.shape)}, but the transpose of "
                f"a {tuple(a.shape)} matrix is {(a.shape[1], a.shape[0])}. Allocate out with the shape reversed."
            )
        grid = self.griddim(a.shape)
        if grid[1] > 65535:
            raise ValueError(
                f"transpose {self.name}: {a.shape[0]} rows need {grid[1]} blocks along y, more than the "
                f"65535 a grid allows. Transpose the matrix in slabs of at most {65535 * self.tile} rows."
            )
        self.kernel[grid, self.threads](*self.args(a, out))

    def run(self, a: np.ndarray) -> np.ndarray:
        """Transpose host array ``a`` with this version (on the GPU or the CPU engine) and return the result."""
        a = np.ascontiguousarray(a)
        if a.ndim != 2:
            raise ValueError(f"transpose {self.name}: expected a 2-D matrix, got shape {a.shape}.")
        d_a = cuda.to_device(a)
        d_out = cuda.device_array((a.shape[1], a.shape[0]), dtype=a.dtype)
        self.launch(d_a, d_out)
        return d_out.copy_to_host()


def rows_version(tile=32, rows=8, name="rows") -> Version:
    """Version 6 for a given tile and thread-row count."""
    return Version(name, f"{tile}×{rows} threads, {tile // rows} rows each, load then store",
                   rows_kernel(tile, rows), tile, (tile, rows), family="rows",
                   params={"tile": tile, "rows": rows})


def batched_version(tile=32, rows=8, name="batched") -> Version:
    """Version 7 for a given tile and thread-row count."""
    return Version(name, f"{tile}×{rows} threads, all {tile // rows} loads in flight before the stores",
                   batched_kernel(tile, rows), tile, (tile, rows), family="batched",
                   params={"tile": tile, "rows": rows})


def unsigned_version(tile=32, rows=8, name="unsigned") -> Version:
    """Version 8 for a given tile and thread-row count."""
    return Version(name, f"{tile}×{rows} threads, loads in flight, unsigned 32-bit indices",
                   unsigned_kernel(tile, rows), tile, (tile, rows), family="unsigned",
                   params={"tile": tile, "rows": rows})


def wide_version(tile=64, rows=8, name="wide") -> Version:
    """Version 9 for a given tile and thread-row count (8-byte path for 4-byte dtypes only)."""
    return Version(name, f"8-byte words, 2×2 register transposes, {tile}×{tile} swizzled tile, "
                   f"{tile // 2}×{rows} threads", wide_kernel(tile, rows), tile, (tile // 2, rows),
                   make_args=_wide_args, family="wide", params={"tile": tile, "rows": rows})


def vec4_version(tile=64, rows=8, name="vec4", group=1) -> Version:
    """Version 10 for a given tile and thread-row count (16-byte path for 4-byte dtypes only)."""
    order = f", blocks in {group}×{group} groups" if group > 1 else ""
    return Version(name, f"16-byte vectors (load4/store4 intrinsics), 4×4 register transposes, "
                   f"{tile}×{tile} swizzled tile, {tile // 4}×{rows} threads{order}",
                   vec4_kernel(tile, rows, group), tile, (tile // 4, rows), make_args=_vec4_args,
                   family="vec4", params={"tile": tile, "rows": rows, "group": group})


TRANSPOSE_VERSIONS = registry.registry(
    Version("naive", "one thread per element: coalesced reads, scattered writes (32 sectors each)",
            naive, TILE, (TILE, TILE), family="naive"),
    Version("tile_32x32", "shared [32][32] tile: both global sides coalesced, 32-way bank conflict on the column read",
            tile_32x32, TILE, (TILE, TILE), family="tile", params={"width": 32}),
    Version("tile_32x33", "padded [32][33]: a column spreads over 32 banks, conflict-free",
            tile_32x33, TILE, (TILE, TILE), family="tile", params={"width": 33}),
    Version("tile_32x34", "padded [32][34]: 34 shares the factor 2 with 32, still 2-way",
            tile_32x34, TILE, (TILE, TILE), family="tile", params={"width": 34}),
    Version("swizzle", "XOR swizzle tile[ty][tx ^ ty]: conflict-free without padding",
            swizzle, TILE, (TILE, TILE), family="swizzle"),
    rows_version(32, 8),
    batched_version(32, 8),
    unsigned_version(32, 8),
    wide_version(64, 8),
    vec4_version(64, 8),
)


def sweep_candidates() -> list:
    """Other tile shapes of versions 6–9, for one GPU run to find the best (names say tile and rows)."""
    out = []
    for tile, rows in ((32, 4), (32, 16), (64, 8), (64, 16)):
        out.append(batched_version(tile, rows, name=f"batched_t{tile}_r{rows}"))
    for tile, rows in ((32, 4), (32, 16), (64, 4), (64, 8), (64, 16)):
        out.append(unsigned_version(tile, rows, name=f"unsigned_t{tile}_r{rows}"))
    for tile, rows in ((32, 2), (32, 4), (32, 8), (32, 16), (64, 2), (64, 4), (64, 16), (64, 32)):
        out.append(wide_version(tile, rows, name=f"wide_t{tile}_r{rows}"))
    for tile, rows in ((32, 4), (32, 8), (64, 2), (64, 4), (64, 16)):
        out.append(vec4_version(tile, rows, name=f"vec4_t{tile}_r{rows}"))
    for group in (4, 8, 16):
        out.append(vec4_version(64, 8, name=f"vec4_t64_r8_g{group}", group=group))
    return out


# --- copies with the same access pattern: numba's own ceiling ----------------------------------------------------


def copy_kernel(word_bytes, per_thread=8, threads=256):
    """A plain copy in 4- or 8-byte words, ``per_thread`` loads in flight: what numba reaches without a transpose."""

    PER = per_thread
    THREADS_U = U32(threads)
    CHUNK_U = U32(threads * per_thread)

    @cuda.jit
    def copy_words(src, dst):
        """dst[:] = src[:] (1-D), each thread moving ``PER`` words ``threads`` apart."""
        vals = cuda.local.array(PER, dtype=src.dtype)
        n = uint32(src.shape[0])
        base = uint32(uint32(cuda.blockIdx.x) * CHUNK_U + uint32(cuda.threadIdx.x))
        for k in range(PER):
            i = uint32(base + uint32(k) * THREADS_U)
            if i < n:
                vals[k] = src[i]
        for k in range(PER):
            i = uint32(base + uint32(k) * THREADS_U)
            if i < n:
                dst[i] = vals[k]

    copy_words.word_bytes = word_bytes
    copy_words.threads = threads
    copy_words.per_thread = per_thread
    return copy_words


def copy16_kernel(per_thread=4, threads=256):
    """A plain copy in 16-byte vectors (``load4``/``store4`` on an (n/4)×4 view), ``per_thread`` in flight."""

    PER = per_thread
    THREADS_U = U32(threads)
    CHUNK_U = U32(threads * per_thread)

    @cuda.jit
    def copy_vec4(src, dst):
        """dst[:] = src[:] for (n/4)×4 arrays of 4-byte elements, one 16-byte row per access."""
        vals = cuda.local.array((PER, 4), dtype=src.dtype)
        n = uint32(src.shape[0])
        base = uint32(uint32(cuda.blockIdx.x) * CHUNK_U + uint32(cuda.threadIdx.x))
        for k in range(PER):
            i = uint32(base + uint32(k) * THREADS_U)
            if i < n:
                vals[k, 0], vals[k, 1], vals[k, 2], vals[k, 3] = load4(src, i, uint32(0))
        for k in range(PER):
            i = uint32(base + uint32(k) * THREADS_U)
            if i < n:
                store4(dst, i, uint32(0), vals[k, 0], vals[k, 1], vals[k, 2], vals[k, 3])

    copy_vec4.word_bytes = 16
    copy_vec4.threads = threads
    copy_vec4.per_thread = per_thread
    return copy_vec4


# --- hardware-count validation cases (course.kernels.cases.Case) ---------------------------------------------------


def _ncu_cases():
    from course.kernels.cases import Case

    shape = (64, 128)  # 2×4 tiles of 32, 1×2 of 64: small enough to trace, every warp whole

    def make_args_for(version):
        def make_args(rng):
            a = rng.integers(-(2**31), 2**31 - 1, size=shape, dtype=np.int32)
            out = np.full((shape[1], shape[0]), -1, dtype=np.int32)
            return version.args(a, out)

        return make_args

    # vec4 is left out: on the CPU its 16-byte accesses run as 4 scalar ones, so the tracer would
    # count 4 requests where the hardware counts 1.
    return [
        Case(f"transpose_{v.name}", v.kernel, v.griddim(shape), v.threads, make_args_for(v),
             note=f"transpose {v.name} of a {shape[0]}×{shape[1]} int32 matrix: {v.idea}",
             tags=("transpose",))
        for v in TRANSPOSE_VERSIONS.values() if v.family != "vec4"
    ]


def __getattr__(name):
    # NCU_CASES is built on first use, so that importing this module never needs course.kernels.cases.
    if name == "NCU_CASES":
        cases = _ncu_cases()
        globals()["NCU_CASES"] = cases
        return cases
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
