"""The launches the course times, as :class:`course.kernels.cases.Case` objects: what the H200 profile
(``scripts/gpu/profile_kernels.py``) measures and what :func:`course.explain` is validated on.

One list for both sides, so that "predicted" and "measured" are about the same launch: the same kernel,
the same ``griddim``/``blockdim``, arguments of the same shapes and dtypes.  Sizes are chosen so that a
launch runs well past numba's launch overhead (tens of µs to a few ms on the H200) and, for the
streaming kernels, so that the data is several times the 50 MB L2 (the HBM regime); a few cases are
repeated small enough to stay in the L2 between launches (tag ``l2``), which is the other regime a
"fraction of the copy" can mean.

Arguments that no result depends on (the source of a strided read, say) are zeros (``np.zeros``: the CPU
side maps no pages it does not touch), so a 2 GB source costs the CPU nothing when only sampled blocks
read it.  ``scale="small"`` gives every case at a size the CPU engine runs whole in a second or two (the
tests use it to check that each case launches).
"""

from __future__ import annotations

import math

import numpy as np

from course.kernels import basics as B
from course.kernels import matmul as MM
from course.kernels import memory as M
from course.kernels import probes as P
from course.kernels import reduction as R
from course.kernels import shared_memory as S
from course.kernels import transpose as T
from course.kernels import warps as W
from course.kernels.cases import Case

H200_SMS = 132  # the grid rules that depend on the SM count are the H200's, on every machine


def _f32(rng, n):
    return rng.standard_normal(n, dtype=np.float32)


def _case(name, kernel, grid, block, make_args, chapter, *tags, note="", dynshared=0):
    return Case(name, kernel, grid, block, make_args, note=note, dynshared=dynshared,
                tags=(f"ch{chapter:02d}",) + tags)


def cases(scale: str = "gpu") -> list:
    """Every timed launch, in chapter order (``scale="small"``: the same launches, shrunk for the CPU)."""
    small = scale == "small"
    out = []
    add = out.append

    # --- chapter 01: vector add, grid-stride, 2-D
    for n, tag in ((1 << 25, "hbm"), (1 << 20, "l2")):
        name, n = f"vector_add_n{n}", (4099 if small else n)
        tpb = 256
        add(_case(name, B.vector_add, B.blocks_for(n, tpb), tpb,
                  lambda rng, n=n: (_f32(rng, n), _f32(rng, n), np.zeros(n, np.float32), n), 1, tag))
    n = 5000 if small else 1 << 25
    add(_case("vector_add_grid", B.vector_add_grid, 8 if small else 8 * H200_SMS, 256,
              lambda rng, n=n: (_f32(rng, n), _f32(rng, n), np.zeros(n, np.float32), n), 1, "hbm"))
    rows, cols = (40, 70) if small else (4096, 8192)
    add(_case("matrix_add", B.matrix_add, (math.ceil(cols / 16), math.ceil(rows / 16)), (16, 16),
              lambda rng: (rng.standard_normal((rows, cols), dtype=np.float32),
                           rng.standard_normal((rows, cols), dtype=np.float32),
                           np.zeros((rows, cols), np.float32)), 1, "hbm"))

    # --- chapter 02: branches
    n = 3000 if small else 1 << 25
    for k in ("even_odd_branch", "even_odd_select"):
        add(_case(k, W.KERNELS[k].kernel, math.ceil(n / 256), 256,
                  lambda rng, n=n: (_f32(rng, n), _f32(rng, n), np.zeros(n, np.float32), n), 2, "hbm"))
    n, iters = (2000, 4) if small else (1 << 24, 64)
    for k in ("lane_branch", "warp_branch", "chain"):
        add(_case(k, W.KERNELS[k].kernel, math.ceil(n / 128), 128,
                  lambda rng, n=n: (rng.random(n, dtype=np.float32), np.zeros(n, np.float32), iters), 2, "alu"))
    add(_case("flag_branch_random", W.KERNELS["flag_branch"].kernel, math.ceil(n / 128), 128,
              lambda rng, n=n: (rng.random(n, dtype=np.float32), (rng.random(n) < 0.5).astype(np.int32),
                                np.zeros(n, np.float32), iters), 2, "alu"))

    # --- chapter 03: coalescing, AoS/SoA, walking a matrix, constant and local memory
    n = 3000 if small else 1 << 24
    for stride in (1, 2, 4, 8, 32):
        add(_case(f"read_strided_s{stride}", M.read_strided, math.ceil(n / 256), 256,
                  lambda rng, n=n, s=stride: (np.zeros(n * s, np.float32), np.zeros(n, np.float32), s), 3, "hbm"))
    for offset in (0, 1, 16):
        add(_case(f"read_offset_o{offset}", M.read_offset, math.ceil(n / 256), 256,
                  lambda rng, n=n, o=offset: (np.zeros(n + 64, np.float32), np.zeros(n, np.float32), o), 3, "hbm"))
    add(_case("read_tx32", M.read_tx32, math.ceil(n / 256), 256,
              lambda rng, n=n: (np.zeros(256 * 32, np.float32), np.zeros(n, np.float32)), 3, "store"))
    p = 1000 if small else 1 << 22
    add(_case("advance_aos", M.advance_aos, math.ceil(p / 256), 256,
              lambda rng, p=p: (M.random_particles(p, rng), np.float32(0.01)), 3, "hbm"))
    add(_case("advance_soa", M.advance_soa, math.ceil(p / 256), 256,
              lambda rng, p=p: (M.to_soa(M.random_particles(p, rng)), np.float32(0.01)), 3, "hbm"))
    side = 80 if small else 8192
    for k, grid in (("walk_rows", (math.ceil(side / 32), math.ceil(side / 8))),
                    ("walk_cols", (math.ceil(side / 32), math.ceil(side / 8)))):
        add(_case(k, M.KERNELS[k].kernel, grid, (32, 8),
                  lambda rng, side=side: (rng.standard_normal((side, side), dtype=np.float32),
                                          np.zeros((side, side), np.float32), np.float32(2)), 3, "hbm"))
    n, reps = (500, 8) if small else (1 << 22, 256)
    add(_case("const_broadcast", M.const_broadcast, math.ceil(n / 256), 256,
              lambda rng, n=n: (np.zeros(n, np.float32), reps), 3, "const"))
    add(_case("const_per_lane", M.const_per_lane, math.ceil(n / 256), 256,
              lambda rng, n=n: (np.zeros(n, np.float32), reps), 3, "const"))
    add(_case("global_per_lane", M.global_per_lane, math.ceil(n / 256), 256,
              lambda rng, n=n: (M.COEFFS.copy(), np.zeros(n, np.float32), reps), 3, "l1"))
    n = 3000 if small else 1 << 24
    add(_case("local_dynamic", M.local_dynamic, math.ceil(n / 256), 256,
              lambda rng, n=n: (_f32(rng, n), rng.integers(0, 1 << 20, n, dtype=np.int32),
                                np.zeros(n, np.float32)), 3, "local"))

    # --- chapter 04: banks, barriers, stencils
    blocks, iters = (4, 8) if small else (64 * H200_SMS, 512)
    for stride in (1, 2, 32):
        add(_case(f"conflict_loop_s{stride}", S.conflict_loop, blocks, 256,
                  lambda rng, s=stride: (np.zeros(blocks * 256, np.float32), s, iters), 4, "shared"))
    for every in (0, 1):
        add(_case(f"sync_loop_e{every}", S.sync_loop, blocks, 256,
                  lambda rng, e=every: (np.zeros(blocks * 256, np.float32), iters, e), 4, "shared"))
    n = 3000 if small else 1 << 24
    for radius in (0, 3, 8):
        for k, kern in (("stencil_global", S.stencil_global), ("stencil_shared", S.stencil_shared)):
            add(_case(f"{k}_r{radius}", kern, math.ceil(n / S.STENCIL_THREADS), S.STENCIL_THREADS,
                      lambda rng, n=n, r=radius: (rng.integers(-8, 8, n).astype(np.float32),
                                                  np.zeros(n, np.float64), r), 4, "stencil"))

    # --- chapter 05: every transpose version, HBM; two in the L2
    for shape, tag in (((8192, 8192), "hbm"), ((1024, 1024), "l2")):
        label, shape = shape[0], ((70, 100) if small else shape)
        for name, v in T.TRANSPOSE_VERSIONS.items():
            if tag == "l2" and name not in ("naive", "tile_32x33", "batched"):
                continue
            grid = v.griddim(shape)

            def make(rng, v=v, shape=shape):
                a = rng.integers(-1 << 30, 1 << 30, shape, dtype=np.int32)
                return tuple(v.args(a, np.zeros(shape[::-1], np.int32)))

            add(_case(f"transpose_{name}_{label}", v.kernel, grid, v.threads, make, 5, tag))

    # --- chapter 06: live registers and a capped version (occupancy)
    n, iters = (2000, 4) if small else (1 << 24, 64)
    for k in ("many_live", "many_live_capped"):
        add(_case(k, M.KERNELS[k].kernel, math.ceil(n / 256), 256,
                  lambda rng, n=n: (rng.random(n, dtype=np.float32), np.zeros(n, np.float32), iters), 6, "alu"))

    # --- chapter 07: every reduction version's main kernel at 2^26 floats; two at 2^20
    for n, tag in ((1 << 26, "hbm"), (1 << 20, "l2")):
        label, n = n, (5000 if small else n)
        for name, v in R.REDUCTION_VERSIONS.items():
            if tag == "l2" and name not in ("warp_shuffle", "grid_stride"):
                continue
            grid = v.griddim(n) if v.family not in ("grid_stride", "two_pass") else _resident_grid(v, n, small)
            out_len = grid if v.finish is not None else 1

            def make(rng, n=n, out_len=out_len):
                return (rng.standard_normal(n, dtype=np.float32), np.zeros(out_len, np.float32))

            add(_case(f"reduce_{name}_{label}", v.kernel, grid, v.threads, make, 7, tag, "atomics" if v.atomics else "tree"))

    # --- chapter 09/10: every matmul version at 2048³
    n = 48 if small else 2048
    for name, v in MM.MATMUL_VERSIONS.items():
        grid = v.griddim(n, n)

        def make(rng, v=v, n=n):
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            return tuple(v.args(a, b, np.zeros((n, n), np.float32)))

        add(_case(f"matmul_{name}_2048", v.kernel, grid, v.threads, make, 9, "matmul"))

    # --- probes: one same-address atomic per block
    blocks = 8 if small else 64 * H200_SMS
    add(_case("atomic_floor", P.atomic_floor, blocks, 32, lambda rng: (np.zeros(1, np.float32),), 7, "atomics"))
    return out


def _resident_grid(v, n, small):
    """A grid-stride version's blocks_per_grid on the H200 (blocks per SM × 132), whatever machine builds the case."""
    per_block = v.threads * v.width * v.params.get("unroll", 1)
    sms = 1 if small else H200_SMS
    return max(1, min(v.params.get("blocks_per_sm", 4) * sms, -(-n // per_block)))


def by_name(scale: str = "gpu") -> dict:
    """name -> case."""
    return {c.name: c for c in cases(scale)}
