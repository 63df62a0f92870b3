"""Chapter 05: transpose (矩阵转置) — a matrix of float pairs through a shared tile (coalesced on both sides), a batch
through one padded tile per block, a swizzled tile with four elements per thread, and a design of your own on a 1-D
grid, judged on performance: on a GPU backend timed with course.measure.bench against the device copy (a point per
fraction of its bandwidth reached), on the CPU on the tracer's properties alone; and the naive transpose turned round
on a flat grid over dst, judged on coalesced stores."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input, Property
from course.exercises.inputs import ceil_div, distinct, random_size, trace_shape, trace_size
from course.exercises.properties import (
    coalesced,
    conflict_free,
    no_races,
    shared_at_most,
    shared_bytes_at_most,
    uses_shared,
)
from course.exercises.registry import register

TP_TILE = 32
TP_BLOCK = (32, 32)
SW_BLOCK = (32, 8)
MINE_TPB = 256


def _tp_input(rng, rows, cols, why, block=TP_BLOCK, batch=None, flat=False, z=True):
    shape = (rows, cols) if batch is None else (batch, rows, cols)
    src = distinct(rng, shape)
    want = np.ascontiguousarray(np.swapaxes(src, -1, -2))
    dst = np.full(want.shape, np.nan, np.float32)
    tiles = (ceil_div(cols, TP_TILE), ceil_div(rows, TP_TILE))
    if flat:
        grid = (tiles[0] * tiles[1],)
    else:
        grid = tiles if batch is None or not z else tiles + (batch,)
    label = f"{rows}x{cols}" if batch is None else f"{batch} x {rows}x{cols}"
    return Input(f"{label} ({why})", grid, block, (src, dst), {1: want}, ("src", "dst"))


def _tp_inputs(rng, **kw):
    return [
        _tp_input(rng, 1, 1, "one element", **kw),
        _tp_input(rng, 17, 16, "not square, less than a tile", **kw),
        _tp_input(rng, 1, 33, "one row, just past one tile", **kw),
        _tp_input(rng, 37, 31, "primes", **kw),
        _tp_input(rng, random_size(rng, 33, 70), random_size(rng, 33, 70), "random", **kw),
    ]


def _batched_inputs(rng):
    # a 2-D grid for a batch: each block transposes its tile of every matrix in turn (blockIdx.z is not used)
    return [
        _tp_input(rng, 1, 1, "one element", batch=1, z=False),
        _tp_input(rng, 17, 16, "not square, less than a tile", batch=2, z=False),
        _tp_input(rng, 1, 33, "one row, just past one tile", batch=3, z=False),
        _tp_input(rng, 37, 31, "primes", batch=2, z=False),
        _tp_input(rng, random_size(rng, 33, 50), random_size(rng, 33, 50), "random", batch=2, z=False),
    ]


TRANSPOSE_PROPS = (
    coalesced("load"),
    coalesced("store", hint="The store is where the naive transpose loses: lanes with consecutive threadIdx.x "
                            "should write consecutive elements of a row of dst. Swap roles inside the tile, "
                            "not in global memory."),
    uses_shared(),
    no_races(),
)

# 05 -- §2: a shared tile for 8-byte elements: pairs of floats (complex numbers, 复数) transposed as pairs

PR_TILE = 16  # 16 x 16 pairs per tile: a row of the tile is 32 floats, one warp's coalesced request
PR_BLOCK = (32, 16)


def _pr_input(rng, rows, cols, why):
    src = distinct(rng, (rows, 2 * cols))  # row r holds re, im of elements (r, 0), (r, 1), ...
    want = np.ascontiguousarray(src.reshape(rows, cols, 2).transpose(1, 0, 2).reshape(cols, 2 * rows))
    dst = np.full(want.shape, np.nan, np.float32)
    grid = (ceil_div(cols, PR_TILE), ceil_div(rows, PR_TILE))
    return Input(f"{rows}x{cols} pairs ({why})", grid, PR_BLOCK, (src, dst), {1: want}, ("src", "dst"))


def _pr_inputs(rng):
    return [
        _pr_input(rng, 1, 1, "one pair"),
        _pr_input(rng, 17, 16, "not square, just past a tile"),
        _pr_input(rng, 1, 33, "one row of pairs"),
        _pr_input(rng, 37, 31, "primes"),
        _pr_input(rng, random_size(rng, 17, 50), random_size(rng, 17, 50), "random"),
    ]


register(Exercise(
    name="05.transpose_pairs",
    title="Transpose a matrix of float pairs (complex numbers) through a shared tile",
    signature="transpose_pairs(src, dst)",
    task=("Write `transpose_pairs(src, dst)`: a matrix of rows x cols complex numbers (复数) is stored as float32 "
          "pairs (re, im): src has shape (rows, 2 * cols), element (r, c) is src[r, 2c] and src[r, 2c + 1]. Write "
          "its transpose, pairs kept together: dst has shape (cols, 2 * rows) and dst[c, 2r + k] = src[r, 2c + k] "
          f"for k = 0, 1. It is launched with threads_per_block = {PR_BLOCK} and one block per {PR_TILE}x{PR_TILE} "
          f"tile of pairs: blocks_per_grid = (ceil(cols / {PR_TILE}), ceil(rows / {PR_TILE})). As `tile_32x32` does "
          "in chapter 05 §2, stage the tile in a cuda.shared.array (共享内存) so that both sides are coalesced "
          "(合并访存): a warp is one row of 32 threads, and each of its loads and stores must touch 32 "
          "neighbouring floats — not 16 pairs 8 bytes apart. So thread x of a tile row moves float x of that "
          "row, whatever pair and half it belongs to. Wait for the whole block between the two sides (数据竞争); "
          "shapes that do not fill a tile must work too."),
    make_inputs=_pr_inputs,
    make_trace_input=lambda rng: _pr_input(rng, *trace_shape(rng, (32, 32), (PR_TILE, PR_TILE), 1536), "full tiles"),
    properties=(
        coalesced("load", hint="In one load, lane x of a warp should read float x of a row of 32 floats: 16 "
                               "pairs, both halves. A lane that reads a whole pair (two loads 8 bytes apart per "
                               "lane) spreads each request over twice the sectors."),
        coalesced("store", hint="The store is where the naive transpose loses: lane x should write float x of a "
                                "row of dst (pair x // 2, half x % 2), reading the tile where that float was put."),
        uses_shared(),
        no_races(),
    ),
    hint_wrong=("Keep pairs and floats apart: the block's tile starts at pair row blockIdx.y*16 and pair column "
                "blockIdx.x*16 of src, that is float column 32*blockIdx.x; in dst it starts at row blockIdx.x*16 "
                "and float column 32*blockIdx.y. A float x of a dst row is half x % 2 of pair x // 2."),
    hint_oob="Guard every global load and store by pairs: the last tiles hold fewer than 16 rows or 16 pairs.",
    stub_hint="a 16x32-float tile; lane x moves float x of a row in and float x of a dst row out; syncthreads between",
))

register(Exercise(
    name="05.transpose_padded",
    title="A batch of transposes through one padded tile per block",
    signature="transpose_padded(src, dst)",
    task=("Write `transpose_padded(src, dst)`: dst[b] = src[b].T for every matrix b of a batch: src is a float32 "
          "array of shape (batch, rows, cols) and dst of shape (batch, cols, rows). It is launched with "
          "threads_per_block = (32, 32) and a 2-D grid, one block per 32x32 tile position: blocks_per_grid = "
          "(ceil(cols / 32), ceil(rows / 32)). There is no blockIdx.z: each block handles its tile position in "
          "every matrix of the batch, one matrix after the other, reusing one cuda.shared.array tile. For each "
          "matrix, read the tile with coalesced loads, wait for the whole block, write it out transposed with "
          "coalesced stores (合并访存) — and do not overwrite the tile with the next matrix while some thread "
          "still reads this one (数据竞争). Reading the tile by columns puts all 32 lanes in one bank; cure it by "
          "padding the tile (填充). Shapes that do not fill a tile must work too."),
    make_inputs=_batched_inputs,
    make_trace_input=lambda rng: _tp_input(rng, *trace_shape(rng, (64, 64), (TP_TILE, TP_TILE), 3072), "full tiles",
                                                  batch=2, z=False),
    properties=TRANSPOSE_PROPS + (
        conflict_free("load", name="no bank conflicts on the tile read (存储体冲突)",
                      hint="The tile is read by columns: lane tx reads row tx. Which bank does each row "
                           "start in? Padding must make consecutive rows start in different banks for all "
                           "32 lanes, not just for some of them."),
        conflict_free("store"),
    ),
    hint_wrong=("Think of tile coordinates and global coordinates separately: the block's tile starts at "
                "row blockIdx.y*32 and column blockIdx.x*32 of src[b], but at row blockIdx.x*32 and column "
                "blockIdx.y*32 of dst[b]. Every matrix of the batch goes through the same tile: a batch of 2 or "
                "3 shows a loop that stops after the first matrix, or a tile overwritten before it was read."),
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="loop over the batch; per matrix: padded tile in, syncthreads, transposed out, and wait again",
))

register(Exercise(
    name="05.transpose_swizzled",
    title="A swizzled transpose with four elements per thread",
    signature="transpose_swizzled(src, dst)",
    task=("Write `transpose_swizzled(src, dst)`: dst = src.T for a float32 matrix src of shape (rows, cols) and "
          f"dst of shape (cols, rows). It is launched with threads_per_block = {SW_BLOCK} and one block per 32x32 "
          "tile of src: blocks_per_grid = (ceil(cols / 32), ceil(rows / 32)), so each thread moves 4 elements "
          "in and 4 out. Stage the tile in a cuda.shared.array of exactly 32x32 floats (no padding): move each "
          "row's elements to other columns with an XOR swizzle (chapter 04) so that a tile column is spread "
          "over all 32 banks (存储体冲突), and read every element back from where you put it. Loads and stores "
          "stay coalesced (合并访存); shapes that do not fill a tile must work too."),
    make_inputs=lambda rng: _tp_inputs(rng, block=SW_BLOCK),
    make_trace_input=lambda rng: _tp_input(rng, trace_size(rng, 64, TP_TILE), trace_size(rng, 96, TP_TILE), "full tiles", block=SW_BLOCK),
    properties=TRANSPOSE_PROPS + (
        conflict_free("load", name="no bank conflicts on the tile read (存储体冲突)",
                      hint="With a 32x32 tile, lane tx reading row tx, column c lands in bank c for every "
                           "lane. Which column index would send each lane to a different bank, and is it a "
                           "one-to-one map within each row?"),
        conflict_free("store"),
        shared_at_most(TP_TILE * TP_TILE * 4, "This exercise asks for the swizzle instead of padding: keep the "
                                              "tile exactly 32x32 and move the columns around instead."),
    ),
    hint_wrong=("A swizzle must be undone exactly: an element stored in row r of the tile at the swizzled column "
                "has to be read back from the same row through the same map. And with 8 rows of threads, each "
                "thread handles rows ty, ty + 8, ty + 16 and ty + 24 of the tile."),
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="each thread moves rows ty, ty+8, ty+16, ty+24 of a 32x32 tile whose column is XOR-swizzled by the row",
))


# 05 -- own design, judged on performance: on a GPU timed against the device copy

MINE_SHAPE = (8192, 8192)  # timed on a GPU: 256 MB per matrix, large enough to reach the copy's bandwidth
# Fractions of the device copy's bandwidth, one point each. The launch the exercise fixes (256 threads, one
# 32x32 tile per block, 4 elements per thread) keeps at most 32 KB in flight per SM, half of what the copy
# keeps: the course's own kernels of that shape ('unsigned', 'batched') reached 0.78-0.79 of the 4-byte copy
# in the recorded H200 run (data/measurements/transpose.json, run 20261129T170058Z-f63b76), so 0.7 is a
# well-built kernel of this shape and 0.5 a tile that overlaps little.
MINE_TIERS = (0.5, 0.7)


def time_against_copy(kernel) -> dict:
    """{"copy_ms", "mine_ms"}: ``kernel`` run once on a MINE_SHAPE matrix and checked against NumPy, then it and
    the device copy (course.kernels.transpose.copy_kernel) timed with course.measure.bench (medians of 10, 5 launches
    queued per timing). GPU only."""
    from numba import cuda

    from course.measure import bench
    from course.kernels.transpose import copy_kernel

    bench.require_gpu("timing transpose_mine")  # before anything: on a CPU backend, say so at once
    rng = np.random.default_rng(15)
    rows, cols = MINE_SHAPE
    src = rng.standard_normal(MINE_SHAPE, dtype=np.float32)
    d_src = cuda.to_device(src)
    d_dst = cuda.device_array((cols, rows), np.float32)
    grid = ceil_div(cols, TP_TILE) * ceil_div(rows, TP_TILE)

    def run():
        kernel[grid, MINE_TPB](d_src, d_dst)

    bench.verify(run, d_dst, src.T, what="transpose_mine")
    copy = copy_kernel(4)
    flat_src, flat_dst = d_src.reshape(rows * cols), d_dst.reshape(rows * cols)
    cgrid = ceil_div(rows * cols, copy.threads * copy.per_thread)

    def run_copy():
        copy[cgrid, copy.threads](flat_src, flat_dst)

    # 5 launches queued between the events: numba's per-launch host work (~0.05 ms) overlaps the GPU's
    # work instead of being added to both times (one launch per event pair flattered every kernel)
    return {"copy_ms": float(np.median(bench.time_ms(run_copy, reps=10, batch=5))),
            "mine_ms": float(np.median(bench.time_ms(run, reps=10, batch=5)))}


# The timing runs in a fresh Python process: the grader judges each kernel in a forked process, and CUDA
# cannot be used in a process forked after the driver was initialised (course.backend does that on a GPU).
# The child gets the kernel's source (already linted by check() or the grader), the numbers it reads from
# its module, and compiles it with the same restricted names the grader gives a kernel.
_CHILD = r"""
import json, math, sys
import course  # noqa: F401  (the backend first)
import numba
import numpy as np
from numba import cuda
from course.exercises.catalogue.ch05 import time_against_copy
from course.exercises.lint import SAFE_BUILTINS
import builtins
req = json.loads(sys.stdin.read())
ns = {"__builtins__": {n: getattr(builtins, n) for n in SAFE_BUILTINS}, "cuda": cuda, "math": math, "np": np,
      "numpy": np, "numba": numba, "__name__": "timed"}
for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "intp"):
    if hasattr(numba, name):
        ns[name] = getattr(numba, name)
ns.update(req["constants"])
try:
    exec(compile(req["source"], "<transpose_mine>", "exec"), ns)
    print(json.dumps(time_against_copy(cuda.jit(ns[req["name"]]))))
except Exception as err:
    print(json.dumps({"error": f"{type(err).__name__}: {err}"}))
"""


def _kernel_request(kernel) -> dict:
    """The kernel's source without decorators, its name, and the numbers it reads from its module."""
    import ast
    import inspect
    import textwrap

    from course.exercises.lint import py_func

    fn = py_func(kernel)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError) as err:
        raise ValueError(f"the kernel's source cannot be read, so it cannot be timed in a fresh process ({err})") from err
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    node.decorator_list = []
    consts = {k: v for k, v in getattr(fn, "__globals__", {}).items()
              if k in fn.__code__.co_names and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"source": ast.unparse(node), "name": node.name, "constants": consts}


_TIMINGS: dict = {}


def _TIMED(kernel):
    """(copy_ms, mine_ms) for ``kernel``, timed in a fresh process (see _CHILD); cached per source."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    req = _kernel_request(kernel)
    key = json.dumps(req, sort_keys=True)
    if key not in _TIMINGS:
        root = str(pathlib.Path(__file__).resolve().parents[3])  # the folder that holds the course package
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "")
                                                                    .split(os.pathsep) if p]))
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=key, capture_output=True, text=True,
                              timeout=300, env=env)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        out = json.loads(lines[-1]) if lines else {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
        _TIMINGS[key] = out
    out = _TIMINGS[key]
    if "error" in out:
        raise RuntimeError(out["error"])
    return out["copy_ms"], out["mine_ms"]


def reaches_copy(fraction: float) -> Property:
    """On a GPU: the kernel's bandwidth reaches ``fraction`` of a device-to-device copy's (course.measure.bench)."""

    def measure(report, extra):
        kernel = extra.get("kernel")
        try:
            copy_ms, mine_ms = _TIMED(kernel)
        except Exception as err:  # a wrong result on the big matrix, or a kernel the GPU refuses
            return False, f"not timed: {' '.join(str(err).split())[:300]}"
        got = copy_ms / mine_ms
        rows, cols = MINE_SHAPE
        from course.measure import bench

        gb = bench.gbps(bench.transpose_bytes(MINE_SHAPE, np.float32), mine_ms)
        return got >= fraction, (f"{got:.2f} of the device copy's bandwidth on {rows}x{cols} float32 "
                                 f"({mine_ms:.3f} ms, {gb:.0f} GB/s; copy {copy_ms:.3f} ms) (want at least "
                                 f"{fraction:g})")

    return Property(f"on this GPU, at least {fraction:g} of the device copy's bandwidth (timed)", measure,
                    "Time it yourself with course.measure.bench and compare with the chapter's versions: are all "
                    "loads in flight before the stores, and does each thread move enough elements?")


def _mine_props():
    from course.backend import on_gpu

    props = TRANSPOSE_PROPS + (
        conflict_free("load", name="shared loads at their conflict-free minimum (存储体冲突)"),
        conflict_free("store", name="shared stores at their conflict-free minimum (存储体冲突)"),
    )
    return props + tuple(reaches_copy(f) for f in MINE_TIERS) if on_gpu() else props


register(Exercise(
    name="05.transpose_mine",
    title="Transpose of your own design, judged on performance",
    signature="transpose_mine(src, dst)",
    task=("Write `transpose_mine(src, dst)`: dst = src.T for a float32 matrix src of shape (rows, cols) and dst "
          f"of shape (cols, rows). It is launched on a 1-D grid: threads_per_block = {MINE_TPB} (a 1-D block) "
          "and one block per 32x32 tile of src, blocks_per_grid = ceil(cols / 32) * ceil(rows / 32), the tiles "
          "numbered row by row (block b is tile row b // ceil(cols / 32), tile column b % ceil(cols / 32)). "
          "So each thread moves 4 elements, and you decide how the 256 threads cover the tile. Any design is "
          "fine; it is judged on what the memory system would do (coalesced loads and stores, 合并访存; shared "
          "accesses at their conflict-free minimum, 存储体冲突; shared memory used; no race) and, on a GPU "
          f"backend, timed with course.measure.bench on a {MINE_SHAPE[0]}x{MINE_SHAPE[1]} matrix against the device "
          f"copy: one point for reaching {MINE_TIERS[0]:g} of the copy's bandwidth, one more for "
          f"{MINE_TIERS[1]:g}. On a CPU backend there is no timing (CPU time says nothing about a GPU): only the "
          "tracer's properties are judged, and the timed points are not counted."),
    make_inputs=lambda rng: _tp_inputs(rng, block=(MINE_TPB,), flat=True),
    make_trace_input=lambda rng: _tp_input(rng, trace_size(rng, 64, TP_TILE), trace_size(rng, 96, TP_TILE), "full tiles", block=(MINE_TPB,), flat=True),
    properties=_mine_props(),
    hint_wrong=("Check the tile's origin in src and in dst separately (non-square shapes show a mix-up), and "
                "how the 1-D block number becomes a tile row and column: the tiles are numbered row by row."),
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="block b is one 32x32 tile; 256 threads = 8 rows of 32 lanes, each moving 4 elements",
))


# 05 -- §1: the naive transpose turned round: a flat 1-D grid that walks dst, so the stores are coalesced

FL_TPB = 256


def _fl_input(rng, rows, cols, why):
    src = distinct(rng, (rows, cols))
    want = np.ascontiguousarray(src.T)
    dst = np.full(want.shape, np.nan, np.float32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(rows * cols, FL_TPB),), (FL_TPB,), (src, dst), {1: want},
                 ("src", "dst"))


def _fl_inputs(rng):
    return [
        _fl_input(rng, 1, 1, "one element"),
        _fl_input(rng, 17, 16, "not square"),
        _fl_input(rng, 1, 33, "one row"),
        _fl_input(rng, 33, 1, "one column"),
        _fl_input(rng, 37, 31, "primes"),
        _fl_input(rng, random_size(rng, 33, 70), random_size(rng, 33, 70), "random"),
    ]


register(Exercise(
    name="05.transpose_flat",
    title="The naive transpose turned round: a flat grid over dst, coalesced stores",
    signature="transpose_flat(src, dst)",
    task=("Write `transpose_flat(src, dst)`: dst = src.T for a float32 matrix src of shape (rows, cols), dst of "
          f"shape (cols, rows). It is launched on a 1-D grid, one thread per element: threads_per_block = {FL_TPB}, "
          f"blocks_per_grid = ceil(rows * cols / {FL_TPB}). `naive` in chapter 05 §1 lets consecutive threads walk "
          "a row of the source: its loads are coalesced (合并访存) and its stores land n_rows elements apart, a "
          "sector each. Turn that round: let the flat thread index walk dst in row-major order (行优先), so that "
          "the 32 lanes of a warp store 32 neighbouring floats of a row of dst, and read each element from src "
          "wherever it is: the loads are now the strided side. No shared memory: this is still the one-line "
          "transpose, with the cost moved to the reads."),
    make_inputs=_fl_inputs,
    make_trace_input=lambda rng: _fl_input(rng, *trace_shape(rng, (64, 64), (32, 32), 3072), "whole tiles"),
    properties=(
        coalesced("store", hint="Which element of dst does thread i write? If i walks src row by row, lanes i and "
                                "i + 1 write dst[c, r] and dst[c + 1, r], a row of dst apart. Split i by the row "
                                "length of dst, not of src."),
        shared_bytes_at_most(0, "no shared memory: the index alone moves the strided side",
                             "No tile here: the exercise moves the strided side from the stores to the loads "
                             "with the index alone."),
    ),
    hint_wrong=("dst has shape (cols, rows): a row of dst is rows long. Split the flat index by dst.shape[1] into "
                "dst's row and column; the element comes from src with the two swapped."),
    hint_oob=("Guard the flat index: the last block runs past rows * cols. And split it by the row length of dst, "
              "dst.shape[1]: a row and a column taken from another length fall outside one of the two arrays "
              "when the matrix is not square."),
    stub_hint="one flat index per thread over dst, split into dst's row and column; read src with them swapped",
))
