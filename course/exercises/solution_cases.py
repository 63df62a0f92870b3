"""The exercises' solution kernels as timed launches (issue 24): the set :func:`course.explain` has never been fitted on.

``cases(scale)`` gives one :class:`course.kernels.cases.Case` per kernel exercise of
:mod:`course.exercises.registry`, named ``sol_<target>`` and tagged ``chNN`` and ``solution``.  The kernel is the one
``solutions/NN_*_solutions.ipynb`` defines, turned into a kernel by the grader's own path
(:func:`course.grading.source.scan` and :func:`~course.grading.source.compile_target`: the solution cell linted and
compiled, as a submission is), so the profile times exactly what the course's solutions are.

Each launch follows its exercise's launch rule (threads_per_block and the grid formula of its task) at a size that,
on the H200, runs well past numba's launch overhead: streaming kernels move several times the 50 MB L2 (2^24–2^25
floats), and kernels whose grid the exercise fixes (2 or 4 blocks, a grid-stride loop) get about 2000 trips per
thread.  Data are small integers stored as float32 (:func:`course.exercises.inputs.f32`'s idea), so every sum is
exact in any order and a case's ``check`` can compare with NumPy exactly.  ``scale="small"`` is the same launch
rule shrunk so that the CPU engine runs each case whole in well under a second.

Every case has a ``check(before, after)``: the NumPy answer from the arguments before the launch, compared with
the arguments after it ('' when right, else what is wrong where).  Each check's NumPy rule is itself checked against
the exercise's own expected output on its traced input (``tests/test_solution_cases.py``), so a check cannot drift
from what the exercise asks.

:data:`SKIPPED` lists the exercises without a case, each with why.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np

from course.kernels.cases import Case, compare

#: Exercises without a case here, each with why.
SKIPPED = {
    "08.pipeline": "host code (streams and copies), not a kernel: nothing to launch standalone",
    "11.split_sum": "host code over several devices, not a kernel",
    "11.split_scale": "host code over several devices, not a kernel",
    "11.split_stencil": "host code over several devices, not a kernel",
}


def _cdiv(a, b):
    return -(-a // b)


def _f32(rng, shape):
    # small integers as float32 (int8 first: a 2^25-element input costs no int64 temporary)
    return rng.integers(-50, 50, size=shape, dtype=np.int8).astype(np.float32)


def _blocks(a, per, fill=0.0):
    """``a`` padded with ``fill`` to whole pieces of ``per`` elements, as rows (float64, so sums are exact)."""
    m = _cdiv(a.size, per)
    p = np.full(m * per, fill, np.float64)
    p[: a.size] = a
    return p.reshape(m, per)


def _scan(a, per):
    return _blocks(a, per).cumsum(axis=1).reshape(-1)[: a.size]


# Each spec: small -> (griddim, blockdim, make_args(rng), want(args) -> {argument index: array}, rtol, atol).
# ``want`` reads only the arguments before the launch (accumulators start from their value there).

def _vec1(n, tpb):
    """(x, out) of n floats, one thread per element."""
    return (_cdiv(n, tpb),), (tpb,), (lambda rng: (_f32(rng, n), np.zeros(n, np.float32)))


def _vector_add(small):
    n = 3000 if small else 1 << 24
    return ((_cdiv(n, 128),), (128,), lambda rng: (_f32(rng, n), _f32(rng, n), np.zeros(n, np.float32), n),
            lambda a: {2: a[0] + a[1]})


def _saxpy(small):
    n = 3000 if small else 1 << 24
    return ((4, _cdiv(_cdiv(n, 128), 4)), (128,),
            lambda rng: (np.float32(0.5), _f32(rng, n), _f32(rng, n), np.zeros(n, np.float32)),
            lambda a: {3: a[0] * a[1] + a[2]})


def _reverse(small):
    n = 3000 if small else 1 << 25
    return (*_vec1(n, 128), lambda a: {1: a[0][::-1]})


def _matrix_add(small):
    rows, cols = (40, 70) if small else (4096, 4096)
    return ((_cdiv(rows * cols, 128),), (128,),
            lambda rng: (_f32(rng, (rows, cols)), _f32(rng, cols), np.zeros((rows, cols), np.float32)),
            lambda a: {2: a[0] + a[1][None, :]})


def _pair_sums(small):
    n = 3001 if small else 1 << 25
    m = _cdiv(n, 2)
    return ((_cdiv(m, 128),), (128,), lambda rng: (_f32(rng, n), np.zeros(m, np.float32)),
            lambda a: {1: _blocks(a[0], 2).sum(axis=1)})


def _even_odd_paths(small):
    from course.kernels import warps

    n, iters = (2000, 4) if small else (1 << 22, 64)

    def want(a):
        odd = np.arange(a[0].size) % 2 == 1
        return {1: np.where(odd, warps.PATH_B(a[0], a[2]), warps.PATH_A(a[0], a[2])).astype(np.float32)}

    return ((_cdiv(n, 128),), (128,),
            lambda rng: (rng.uniform(0.0, 1.0, n).astype(np.float32), np.zeros(n, np.float32), iters), want,
            1e-5, 1e-5)


def _count_positive(small):
    n = 3000 if small else 1 << 25
    return ((_cdiv(n, 128),), (128,), lambda rng: (_f32(rng, n), np.zeros(1, np.int32)),
            lambda a: {1: a[1] + np.int32((a[0] > 0).sum())})


def _warp_sum_fixed(small):
    n = 3000 if small else 1 << 24
    return ((_cdiv(n, 64),), (64,), lambda rng: (_f32(rng, n), np.zeros(_cdiv(n, 64), np.float32)),
            lambda a: {1: _blocks(a[0], 64).sum(axis=1)})


def _leaky_relu(small):
    n = 3000 if small else 1 << 25
    return (*_vec1(n, 128), lambda a: {1: np.where(a[0] > 0, a[0], np.float32(0.125) * a[0])})


def _global_warp(small):
    blocks, bx, by = (7, 12, 10) if small else (1 << 18, 12, 10)  # 120 threads: a partial fourth warp per block

    def want(a):
        nb, ny, nx = a[0].shape  # out is (blocks, by, bx)
        b, t = np.divmod(np.arange(nb * ny * nx), ny * nx)
        return {0: (b * _cdiv(ny * nx, 32) + t // 32).astype(np.int32).reshape(nb, ny, nx)}

    return (blocks,), (bx, by), lambda rng: (np.full((blocks, by, bx), -1, np.int32),), want


def _scale_channels(small):
    rows = 50 if small else 1 << 19
    return ((_cdiv(rows * 48, 128),), (128,),
            lambda rng: (_f32(rng, (rows, 48)), _f32(rng, 48), np.zeros((rows, 48), np.float32)),
            lambda a: {2: a[0] * a[1]})


def _kinetic_energy(small):
    n = 3000 if small else 1 << 23
    return ((_cdiv(n, 128),), (128,), lambda rng: (_f32(rng, (8, n)), np.zeros(n, np.float32)),
            lambda a: {1: 0.5 * a[0][6].astype(np.float64) * (a[0][3] ** 2 + a[0][4] ** 2 + a[0][5] ** 2)}, 1e-6, 1e-3)


def _column_sums(small):
    rows, cols = (20, 300) if small else (1024, 16384)
    return ((_cdiv(cols, 64),), (64,), lambda rng: (_f32(rng, (rows, cols)), np.zeros(cols, np.float32)),
            lambda a: {1: a[0].sum(axis=0, dtype=np.float64)})


def _aos_to_soa(small):
    n = 500 if small else 1 << 22
    return ((_cdiv(8 * n, 128),), (128,), lambda rng: (_f32(rng, (n, 8)), np.zeros((8, n), np.float32)),
            lambda a: {1: a[0].T})


def _soa_to_aos(small):
    n = 500 if small else 1 << 22
    return ((_cdiv(8 * n, 128),), (128,), lambda rng: (_f32(rng, (8, n)), np.zeros((n, 8), np.float32)),
            lambda a: {1: a[0].T})


def _weighted_sum(small):
    m, n = (16, 700) if small else (64, 1 << 18)
    return ((_cdiv(n, 128),), (128,), lambda rng: (_f32(rng, (m, n)), _f32(rng, m), np.zeros(n, np.float32)),
            lambda a: {2: a[1].astype(np.float64) @ a[0]})


def _row_sums(small):
    n = 200 if small else 1 << 19
    return ((_cdiv(n, 32),), (32, 8), lambda rng: (_f32(rng, (n, 32)), np.zeros(n, np.float32)),
            lambda a: {1: a[0].sum(axis=1, dtype=np.float64)})


def _stencil_1d(small):
    n = 3000 if small else 1 << 25

    def want(a):
        p = np.pad(a[0].astype(np.float64), 2)
        return {1: p[:-4] + 2 * p[1:-3] + 4 * p[2:-2] + 2 * p[3:-1] + p[4:]}

    return (*_vec1(n, 128), want)


def _histogram(small):
    n = 5000 if small else 1 << 25
    return ((_cdiv(n, 1024),), (128,),
            lambda rng: (rng.integers(0, 32, size=n, dtype=np.int32), np.zeros(32, np.int32)),
            lambda a: {1: a[1] + np.bincount(a[0], minlength=32).astype(np.int32)})


def _segment_sums(small):
    m = 400 if small else 1 << 22
    return ((_cdiv(m, 128),), (128,), lambda rng: (_f32(rng, 8 * m), np.zeros(m, np.float32)),
            lambda a: {1: a[0].reshape(-1, 8).sum(axis=1, dtype=np.float64)})


def _warp_rotate(small):
    n = 32 * 90 if small else 1 << 25
    return ((_cdiv(n, 256),), (256,), lambda rng: (_f32(rng, n), np.zeros(n, np.float32)),
            lambda a: {1: np.roll(a[0].reshape(-1, 32), -1, axis=1).reshape(-1)})


def _transpose_pairs(small):
    rows, cols = (40, 50) if small else (4096, 4096)
    return ((_cdiv(cols, 16), _cdiv(rows, 16)), (32, 16),
            lambda rng: (_f32(rng, (rows, 2 * cols)), np.zeros((cols, 2 * rows), np.float32)),
            lambda a: {1: a[0].reshape(a[0].shape[0], -1, 2).transpose(1, 0, 2).reshape(a[0].shape[1] // 2, -1)})


def _transpose_padded(small):
    batch, rows, cols = (2, 40, 70) if small else (4, 2048, 2048)
    return ((_cdiv(cols, 32), _cdiv(rows, 32)), (32, 32),
            lambda rng: (_f32(rng, (batch, rows, cols)), np.zeros((batch, cols, rows), np.float32)),
            lambda a: {1: a[0].transpose(0, 2, 1)})


def _transpose_2d(block, grid_rule):
    def spec(small):
        rows, cols = (40, 70) if small else (8192, 4096)
        return (grid_rule(rows, cols), block,
                lambda rng: (_f32(rng, (rows, cols)), np.zeros((cols, rows), np.float32)), lambda a: {1: a[0].T})
    return spec


def _transpose_mine(small):
    rows, cols = (40, 70) if small else (8192, 8192)  # the size its task times it on
    return ((_cdiv(cols, 32) * _cdiv(rows, 32),), (256,),
            lambda rng: (_f32(rng, (rows, cols)), np.zeros((cols, rows), np.float32)), lambda a: {1: a[0].T})


def _clamp_grid_stride(small):
    rows, cols = (24, 300) if small else (1024, 1024)
    return ((2, 2), (32, 4), lambda rng: (_f32(rng, (rows, cols)), np.zeros((rows, cols), np.float32), -10.0, 20.0),
            lambda a: {1: np.clip(a[0], a[2], a[3])})


def _sum_grid_stride(small):
    n = 3000 if small else 1 << 19  # 256 threads: 2048 trips each
    return ((2,), (128,), lambda rng: (_f32(rng, n), np.zeros(1, np.float32)),
            lambda a: {1: a[1] + a[0].sum(dtype=np.float64)})


def _stencil_2d(small):
    rows, cols = (30, 70) if small else (4096, 4096)

    def want(a):
        p = np.pad(a[0].astype(np.float64), 1)
        return {1: 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]}

    return ((_cdiv(cols, 32), _cdiv(rows, 8)), (32, 8),
            lambda rng: (_f32(rng, (rows, cols)), np.zeros((rows, cols), np.float32)), want)


def _max_grid_stride(small):
    n = 3000 if small else 1 << 19
    return ((2,), (128,), lambda rng: (_f32(rng, n), np.full(1, -np.inf, np.float32)),
            lambda a: {1: np.maximum(a[1], a[0].max())})


def _scale_coarsened(small):
    n = 3000 if small else 1 << 25
    return ((_cdiv(n, 512),), (128,), lambda rng: (_f32(rng, n), np.zeros(n, np.float32), np.float32(0.5)),
            lambda a: {1: a[2] * a[0]})


def _dot_grid_stride(small):
    n = 3000 if small else 1 << 20  # 512 threads: 2048 trips each
    return ((2,), (256,), lambda rng: (_f32(rng, n), _f32(rng, n), np.zeros(1, np.float32)),
            lambda a: {2: a[2] + a[0].astype(np.float64) @ a[1]})


def _tree_sum(small):
    rows, cols = (5, 700) if small else (4096, 4096)
    return ((rows,), (256,), lambda rng: (_f32(rng, (rows, cols)), np.zeros(rows, np.float32)),
            lambda a: {1: a[0].sum(axis=1, dtype=np.float64)})


def _block_sums(tpb, per):
    def spec(small):
        n = 3000 if small else 1 << 25
        return ((_cdiv(n, per),), (tpb,), lambda rng: (_f32(rng, n), np.zeros(_cdiv(n, per), np.float32)),
                lambda a: {1: _blocks(a[0], per).sum(axis=1)})
    return spec


def _inclusive_scan(small):
    n = 3000 if small else 1 << 25
    return (*_vec1(n, 128), lambda a: {1: _scan(a[0], 128)})


def _exclusive_scan(small):
    n = 3000 if small else 1 << 25
    return (*_vec1(n, 128), lambda a: {1: _scan(a[0], 128) - a[0]})


def _min_max_blocks(small):
    n = 3000 if small else 1 << 25
    m = _cdiv(n, 256)
    return ((m,), (256,), lambda rng: (_f32(rng, n), np.zeros((m, 2), np.float32)),
            lambda a: {1: np.stack([_blocks(a[0], 256, np.inf).min(axis=1), _blocks(a[0], 256, -np.inf).max(axis=1)], 1)})


# A float32 total built by 2^20 atomics in any order: the data's mean (-0.5) takes it past 2^24, where float32 no
# longer holds every integer, so the order of the additions shows in the last digits (H200 run 20261202T040213Z-e5bce2:
# -17055968 against NumPy's float64 -1.70559e+07): compared to 1e-5 of the total, not exactly
ATOMIC_SUM_TOL = (1e-5, 0.0)


def _warp_atomic_sum(small):
    n = 3000 if small else 1 << 25  # 2^20 warps, one same-address atomic each
    return ((_cdiv(n, 256),), (256,), lambda rng: (_f32(rng, n), np.zeros(1, np.float32)),
            lambda a: {1: a[1] + a[0].sum(dtype=np.float64)}, *ATOMIC_SUM_TOL)


def _float4_warp_sum(small):
    n = 3001 if small else (1 << 25) + 3  # float4 loads, the n % 4 tail, one same-address atomic per warp
    return ((_cdiv(n, 1024),), (256,), lambda rng: (_f32(rng, n), np.zeros(1, np.float32)),
            lambda a: {1: a[1] + a[0].sum(dtype=np.float64)}, *ATOMIC_SUM_TOL)


def _tree_max_fixed(small):
    n = 3000 if small else 1 << 25
    return ((_cdiv(n, 256),), (128,), lambda rng: (_f32(rng, n), np.zeros(_cdiv(n, 256), np.float32)),
            lambda a: {1: _blocks(a[0], 256, -np.inf).max(axis=1)})


def _partial_moments(small):
    n = 3000 if small else 1 << 21  # the fixed grid of 8 x 128 threads: 2048 trips each

    def want(a):
        block = (np.arange(a[0].size) % 1024) // 128  # the block a grid-stride loop hands element i to
        x = a[0].astype(np.float64)
        return {1: np.stack([np.bincount(block, x, 8), np.bincount(block, x * x, 8)], 1)}

    # each block's sum of 2^18 squares (about 2·10^8) is past 2^24, where float32 no longer holds every integer
    return (8,), (128,), lambda rng: (_f32(rng, n), np.zeros((8, 2), np.float32)), want, 1e-5, 0.0


def _scale_chunk(small):
    n, start, count = (3000, 700, 1500) if small else (1 << 25, 1 << 23, 1 << 24)

    def want(a):
        out, s, c = a[1].copy(), a[3], a[4]
        out[s:s + c] = a[0][s:s + c] * np.float32(a[2])
        return {1: out}

    return ((_cdiv(count, 128),), (128,),
            lambda rng: (_f32(rng, n), np.full(n, 7.0, np.float32), 0.5, start, count), want)


def _dot_mapped(small):
    n = 3000 if small else 1 << 20  # 512 threads: 2048 trips each
    return ((4,), (128,), lambda rng: (_f32(rng, n), _f32(rng, n), np.zeros(1, np.float32)),
            lambda a: {2: a[2] + a[0].astype(np.float64) @ a[1]})


def _matvec(small):
    rows, cols = (30, 100) if small else (4096, 4096)
    return ((_cdiv(rows, 4),), (32, 4), lambda rng: (_f32(rng, (rows, cols)), _f32(rng, cols), np.zeros(rows, np.float32)),
            lambda a: {2: a[0].astype(np.float64) @ a[1]})


def _matmul_abt(small):
    m, n, k = (40, 36, 50) if small else (2048, 2048, 2048)
    return ((_cdiv(n, 16), _cdiv(m, 16)), (16, 16),
            lambda rng: (_f32(rng, (m, k)), _f32(rng, (n, k)), np.zeros((m, n), np.float32)),
            lambda a: {2: a[0].astype(np.float64) @ a[1].T.astype(np.float64)})


def _sgemm_regtile(small):
    m, n, k = (40, 70, 50) if small else (2048, 2048, 2048)
    return ((_cdiv(n, 32), _cdiv(m, 32)), (16, 16),
            lambda rng: (_f32(rng, (m, k)), _f32(rng, (k, n)), np.zeros((m, n), np.float32)),
            lambda a: {2: a[0].astype(np.float64) @ a[1].astype(np.float64)})


def _matvec_t(small):
    rows, cols = (30, 300) if small else (512, 32768)
    return ((_cdiv(cols, 128),), (128,), lambda rng: (_f32(rng, (rows, cols)), _f32(rng, rows), np.zeros(cols, np.float32)),
            lambda a: {2: a[1].astype(np.float64) @ a[0]})


def _tiled_rect(small):
    m, n, k = (40, 70, 50) if small else (2048, 2048, 2048)
    return ((_cdiv(n, 32), _cdiv(m, 8)), (32, 8),
            lambda rng: (_f32(rng, (m, k)), _f32(rng, (k, n)), np.zeros((m, n), np.float32)),
            lambda a: {2: a[0].astype(np.float64) @ a[1].astype(np.float64)})


def _matvec_float4(small):
    rows, cols = (30, 100) if small else (4096, 4096)  # cols a multiple of 4: 16-byte rows
    return ((_cdiv(rows, 4),), (32, 4), lambda rng: (_f32(rng, (rows, cols)), _f32(rng, cols), np.zeros(rows, np.float32)),
            lambda a: {2: a[0].astype(np.float64) @ a[1]})


def _scale_rows_fixed(small):
    rows, cols = (24, 150) if small else (1024, 1024)  # 512 threads: 2048 elements each
    return ((4,), (128,), lambda rng: (_f32(rng, (rows, cols)), _f32(rng, rows), np.zeros((rows, cols), np.float32)),
            lambda a: {2: a[0] * a[1][:, None]})


def _block_reverse_fixed(small):
    n = 3001 if small else (1 << 25) + 77  # a short last block

    def want(a):
        x = a[0]
        whole = (x.size // 128) * 128  # whole blocks at once, then the short last one
        return {1: np.concatenate([x[:whole].reshape(-1, 128)[:, ::-1].reshape(-1), x[whole:][::-1]])}

    return (*_vec1(n, 128), want)


def _softmax_rows(small):
    rows, cols = (10, 150) if small else (8192, 2048)

    def want(a):
        e = np.exp(a[0].astype(np.float64) - a[0].max(axis=1, keepdims=True))
        return {1: e / e.sum(axis=1, keepdims=True)}

    return ((_cdiv(rows, 4),), (32, 4),
            lambda rng: ((rng.standard_normal((rows, cols)) * 3).astype(np.float32), np.zeros((rows, cols), np.float32)),
            want, 1e-5, 1e-7)


def _diff_fixed(small):
    n = 3000 if small else 1 << 25

    def want(a):
        out = np.zeros_like(a[0])
        out[:-1] = a[0][1:] - a[0][:-1]
        return {1: out}

    return (*_vec1(n, 128), want)


def _chase_interleaved(small):
    # one random cycle over 2^24 slots (64 MB of uint32, past the 50 MB L2), four starts per thread anywhere on it
    slots, threads, steps = (4096, 200, 20) if small else (1 << 24, 1 << 15, 256)

    def make(rng):
        from course.kernels import memory as m

        order = m.random_cycle(slots, rng)
        nxt = m.chain_array(order, 1, slots)
        starts = rng.integers(0, slots, (threads, 4)).astype(np.uint32)
        return nxt, starts, np.int32(steps), np.full((threads, 4), 0xFFFFFFFF, np.uint32)

    def want(a):
        j = a[1].astype(np.int64)
        for _ in range(int(a[2])):
            j = a[0][j].astype(np.int64)
        return {3: j.astype(np.uint32)}

    return (_cdiv(threads, 64),), (64,), make, want


def _bin_counts(small):
    rows, cols = (8, 300) if small else (64, 1 << 20)  # 256 MB of int32 values 0..15, one thread per column

    def make(rng):
        return (rng.integers(0, 16, (rows, cols), dtype=np.int8).astype(np.int32),
                np.full((16, cols), -1, np.int32))

    def want(a):  # one bin at a time: no (16, rows, cols) temporary
        return {1: np.stack([(a[0] == b).sum(axis=0) for b in range(16)]).astype(np.int32)}

    return (_cdiv(cols, 64),), (64,), make, want


#: exercise target -> spec(small)
SPECS = {
    "vector_add": _vector_add, "saxpy": _saxpy, "reverse": _reverse, "matrix_add": _matrix_add,
    "pair_sums": _pair_sums,
    "even_odd_paths": _even_odd_paths, "count_positive": _count_positive, "warp_sum_fixed": _warp_sum_fixed,
    "leaky_relu": _leaky_relu, "global_warp": _global_warp, "scale_channels": _scale_channels,
    "kinetic_energy": _kinetic_energy, "column_sums": _column_sums, "aos_to_soa": _aos_to_soa,
    "chase_interleaved": _chase_interleaved, "bin_counts": _bin_counts,
    "soa_to_aos": _soa_to_aos, "weighted_sum": _weighted_sum,
    "row_sums": _row_sums, "stencil_1d": _stencil_1d, "histogram": _histogram, "row_sums_swizzled": _row_sums,
    "segment_sums": _segment_sums, "warp_rotate": _warp_rotate,
    "transpose_pairs": _transpose_pairs, "transpose_padded": _transpose_padded,
    "transpose_swizzled": _transpose_2d((32, 8), lambda r, c: (_cdiv(c, 32), _cdiv(r, 32))),
    "transpose_mine": _transpose_mine,
    "transpose_flat": _transpose_2d((256,), lambda r, c: (_cdiv(r * c, 256),)),
    "clamp_grid_stride": _clamp_grid_stride, "sum_grid_stride": _sum_grid_stride, "stencil_2d": _stencil_2d,
    "max_grid_stride": _max_grid_stride, "scale_coarsened": _scale_coarsened, "dot_grid_stride": _dot_grid_stride,
    "tree_sum": _tree_sum, "block_sums_shuffle": _block_sums(256, 256), "inclusive_scan": _inclusive_scan,
    "min_max_blocks": _min_max_blocks, "exclusive_scan": _exclusive_scan,
    "block_sums_sequential": _block_sums(256, 512), "block_sums_unrolled": _block_sums(128, 512),
    "warp_atomic_sum": _warp_atomic_sum, "tree_max_fixed": _tree_max_fixed, "float4_warp_sum": _float4_warp_sum,
    "partial_moments": _partial_moments,
    "scale_chunk": _scale_chunk, "dot_mapped": _dot_mapped,
    "matvec": _matvec, "matmul_abt": _matmul_abt, "sgemm_regtile": _sgemm_regtile, "matvec_t": _matvec_t,
    "tiled_rect": _tiled_rect, "matvec_float4": _matvec_float4,
    "scale_rows_fixed": _scale_rows_fixed, "block_reverse_fixed": _block_reverse_fixed,
    "softmax_rows": _softmax_rows, "diff_fixed": _diff_fixed,
}




def _checker(want_fn, rtol, atol, names):
    def check(before, after):
        return compare(want_fn(before), after, rtol, atol, names)
    return check


def solution_kernels() -> dict:
    """exercise name -> the kernel its solution notebook defines, compiled by the grader's path."""
    import nbformat

    import course.kernels
    from course.chapters import CHAPTERS
    from course.exercises import registry
    from course.exercises.build import SOLUTIONS
    from course.grading import source

    # what a solution takes constants from (``from course.kernels.warps import A_MUL``) is read from the loaded
    # module, as the grader's warm-up loads them
    for mod in pkgutil.iter_modules(course.kernels.__path__):
        importlib.import_module(f"course.kernels.{mod.name}")
    out = {}
    for chapter in CHAPTERS:
        exercises = [ex for ex in registry.by_chapter(chapter.number) if not ex.host]
        if not exercises:
            continue
        nb = nbformat.read(SOLUTIONS / chapter.file.replace(".ipynb", "_solutions.ipynb"), as_version=4)
        found = source.scan(nb)
        # each notebook's cells under names of their own ("<cell 5 of 03_...>"): kept apart in linecache, so that
        # course.explain finds each kernel's loops in its own source (with a shared "<cell 5>", the last notebook
        # compiled hid the others', and their sampled loops went unscaled)
        found.origin = f" of {chapter.file.replace('.ipynb', '_solutions.ipynb')}"
        for ex in exercises:
            out[ex.name] = source.compile_target(found, ex)
    return out


def cases(scale: str = "gpu") -> list:
    """One case per kernel exercise, in chapter order (``scale="small"``: the same launch rules, shrunk for the CPU)."""
    from course.exercises import registry

    small = scale == "small"
    out = []
    for name, kernel in solution_kernels().items():
        ex = registry.get(name)
        grid, block, make, want, *tol = SPECS[ex.target](small)
        rtol, atol = tol if tol else (max(ex.rtol, 1e-6), max(ex.atol, 0.0))
        names = tuple(p.strip() for p in ex.signature.split("(", 1)[1].rstrip(")").split(","))
        out.append(Case(f"sol_{ex.target}", kernel, grid, block, make, note=f"exercise {name}: {ex.title}",
                        tags=(f"ch{ex.chapter:02d}", "solution"), check=_checker(want, rtol, atol, names)))
    return out


def want_of(target: str, args: tuple) -> dict:
    """The NumPy answer a case's check uses, on any arguments of the exercise's layout (the tests compare it with
    the exercise's own expected output)."""
    return SPECS[target](True)[3](args)


def by_name(scale: str = "gpu") -> dict:
    """name -> case."""
    return {c.name: c for c in cases(scale)}
