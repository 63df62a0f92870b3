"""The launches that answer three pending claims of the ledger (issue 24 item 5), as :class:`Case` objects.

Each is the launch a GPU script times for a claim's ``check`` (``data/claims.json``), with the same
``griddim``/``blockdim`` and arguments of the same shapes, so that :func:`course.explain` can predict it
before the H200 measures it:

- ``003-myth-shared-cache`` (chapter 04): ``stencil_global_cheap_r1`` / ``stencil_shared_cheap_r1``, the
  radius-1 stencils with cheap indices at 2^26 float32 (``scripts/gpu/bench_shared_memory.py``:
  ``stencil global cheap r=1`` / ``stencil shared cheap r=1``).
- ``000-div-mod`` (chapter 07's claim, chapter 04's loop): ``mod_loop_e64``, ``mod_loop_e0``,
  ``counter_loop_e64`` and ``sync_loop_e0_b128`` in blocks of 128 threads, 2048 threads per SM, 4096
  iterations (the same script: ``mod every=64 block=128``, ``mod every=0 block=128``, ``counter every=64
  block=128``, ``sync every=0 block=128``).
- ``002-local-latency`` (chapter 03): ``chase_local_beyond_l2``, 256 warps each chasing its own local
  array, 256 MiB of lines in all (``scripts/gpu/measure_memory.py``: ``chase local array beyond L2``).

``scale="small"`` shrinks every case for the CPU engine (the same kernels; the local chase with a
64-word array, a kernel of its own since the size is a compile-time constant).
"""

from __future__ import annotations

import numpy as np

from course.kernels import memory as M
from course.kernels import shared_memory as S
from course.kernels.cases import Case

H200_SMS = 132  # the launches are the H200's on every machine


def _case(name, kernel, grid, block, make_args, chapter, *tags, note=""):
    return Case(name, kernel, grid, block, make_args, note=note, tags=(f"ch{chapter:02d}", "claim") + tags)


def cases(scale: str = "gpu") -> list:
    """The claim launches (``scale="small"``: the same launches, shrunk for the CPU)."""
    small = scale == "small"
    out = []

    # 003-myth-shared-cache: 2^26 float32 in and out, HBM; small integers so that float32 sums are exact
    n = 3 * S.CHEAP_SPAN + 17 if small else 1 << 26
    for name, kernel in (("stencil_global_cheap_r1", S.stencil_global_cheap),
                         ("stencil_shared_cheap_r1", S.stencil_shared_cheap)):
        out.append(_case(name, kernel, S.stencil_cheap_blocks(n), S.CHEAP_THREADS,
                         lambda rng, n=n: (rng.integers(0, 10, n).astype(np.float32), np.zeros(n, np.float32)),
                         4, "hbm", "stencil", note="claim 003-myth-shared-cache"))

    # 000-div-mod: bench_shared_memory.py's barrier launch at block 128 (2048 threads per SM)
    tpb = 128
    blocks, iters = (4, 8) if small else (H200_SMS * 2048 // tpb, 4096)
    for name, kernel, every in (("mod_loop_e64", S.mod_loop, 64), ("mod_loop_e0", S.mod_loop, 0),
                                ("counter_loop_e64", S.counter_loop, 64), ("sync_loop_e0_b128", S.sync_loop, 0)):
        out.append(_case(name, kernel, blocks, tpb,
                         lambda rng, e=every: (np.zeros(blocks * tpb, np.float32), iters, e),
                         4, "shared", note="claim 000-div-mod"))

    # 002-local-latency: one warm lap and one timed lap of every warp's chase
    words, nblocks = (64, 4) if small else (M.LOCAL_BIG_WORDS, M.LOCAL_BIG_BLOCKS)

    def chase_args(rng, words=words, warps=nblocks):
        nxt = M.chain_array(M.random_cycle(words, rng), 1, words)
        return nxt, words, words, np.zeros(2 * warps, np.int64)

    out.append(_case("chase_local_beyond_l2", M.chase_local_big_kernel(words), nblocks, 32, chase_args, 3, "latency",
                     note="claim 002-local-latency"))
    return out


def by_name(scale: str = "gpu") -> dict:
    """name -> case."""
    return {c.name: c for c in cases(scale)}
