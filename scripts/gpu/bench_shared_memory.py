"""Chapter 04 on the H200: what bank conflicts cost in time, and when staging in shared memory pays.

    python scripts/gpu/bench_shared_memory.py --out DIR             # on the GPU: DIR/shared_memory.json (< 1 min)
    python scripts/gpu/bench_shared_memory.py --dry-run --out DIR   # on the CPU: tiny sizes, checks only, no timing

What it does, in one process (one run id), with ``course.kernels.shared_memory``:

1. **checks** ``conflict_loop`` (every stride timed), ``sync_loop`` / ``mod_loop`` / ``counter_loop``
   and ``stencil_global`` / ``stencil_shared`` (every radius timed, sizes 1, 33, 1000 and — on the GPU —
   2^20 + 3) and the cheap pair (sizes 1, 33, 1025·k + 17, one more than two blocks' outputs, and on
   the GPU 2^20 + 3) against NumPy; nothing is timed unless all pass.
2. **conflicts in time** (variants ``conflict stride=S``): a grid of 8 blocks per SM, 256 threads each,
   every lane summing ``iters`` shared loads at stride S.  The chapter compares the time ratio to
   stride 1 with the wavefront ratio ``gcd(S, 32)`` (seed 000: "N 路冲突意味着 N 倍的生效延迟").
3. **barriers** (variants ``sync every=E block=B``; seed 000 §4.2, seed 001 §3.2): ``sync_loop``, the
   conflict-free loop with a ``syncthreads`` after every E loads (0: none), in blocks of 128 and 1024
   threads with the same 2048 threads per SM — does a barrier cost more when it is more frequent and
   spans more warps?  Beside them, at block 128 (seed 000 §4.5, "除法、取模等昂贵运算应外提或替换"):
   ``mod every=E block=128`` (``mod_loop``: the same int64 ``k % every`` test and branch, no barrier)
   and ``counter every=64 block=128`` (``counter_loop``: the modulo replaced by a counter) — mod / counter
   is what the modulo costs, all else equal.
4. **shared memory vs the caches** (seed 003, myth 3; variants ``stencil global r=R`` and
   ``stencil shared r=R``): a moving sum of width 2R + 1 over 2^26 float32, read straight from global
   memory (neighbours' reads served by L1/L2) or staged in shared memory with a halo; GB/s counts the
   bytes that must move (n reads + n writes), beside ``memcpy`` (device-to-device copy) of the same size.
   Those are limited by instruction issue (clamped indices, a run-time radius); ``stencil global cheap
   r=1`` / ``stencil shared cheap r=1`` are the radius-1 pair with cheap indices and eight outputs per
   thread (``stencil_global_cheap`` / ``stencil_shared_cheap``), limited by memory: the claim's test.
5. re-times ``memcpy`` and stride 1 at the end (``… #2``): differences smaller than the spread between
   the two rounds are noise.

Records follow ``course.measure.bench``'s schema (benchmark ``shared_memory``); the last lines printed are a
summary table.
"""

from __future__ import annotations

import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure import bench  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402

H = Script(__doc__, "shared_memory", reps=20)
ARGS, GPU, log = H.args, H.gpu, H.log
T0 = time.perf_counter()
B = H.bench("shared_memory")

from course.kernels import shared_memory as sm  # noqa: E402
from numba import cuda  # noqa: E402

STRIDES = (1, 2, 3, 4, 8, 16, 32, 33)
RADII = (0, 1, 2, 4, 8, 16)
SYNC_EVERY = (0, 64, 8, 1)
SYNC_BLOCKS = (128, 1024)
# the cheap stencils: awkward sizes (none a multiple of a block's outputs but the last), past two blocks so
# that an interior block runs too
CHEAP_SIZES = (1, 33, 1025 + 17, 1025 * 4 + 17, 2 * sm.CHEAP_SPAN + 1, 3 * sm.CHEAP_SPAN)


def dev(a):
    return cuda.to_device(a) if GPU else a


def host(a):
    return a.copy_to_host() if GPU else a


def check(rng):
    """Every timed kernel against NumPy, on awkward sizes, before anything is timed."""
    blocks, tpb, iters = (6, 256, 64) if GPU else (2, 48, 20)  # 48: a half-empty second warp
    for stride in STRIDES:
        out = dev(np.full(blocks * tpb, np.nan, np.float32))
        sm.conflict_loop[blocks, tpb](out, stride, iters)
        expected = sm.reference_conflict_loop(stride, iters, blocks, tpb)
        if not np.array_equal(host(out), expected):
            raise SystemExit(f"conflict_loop stride={stride}: differs from NumPy; nothing timed")
    for every in SYNC_EVERY:
        out = dev(np.full(blocks * tpb, np.nan, np.float32))
        sm.sync_loop[blocks, tpb](out, iters, every)
        if not np.array_equal(host(out), sm.reference_sync_loop(iters, blocks, tpb)):
            raise SystemExit(f"sync_loop every={every}: differs from NumPy; nothing timed")
    for every in SYNC_EVERY:
        for kernel in (sm.mod_loop, sm.counter_loop):
            out = dev(np.full(blocks * tpb, np.nan, np.float32))
            kernel[blocks, tpb](out, iters, every)
            if not np.array_equal(host(out), sm.reference_mod_loop(iters, every, blocks, tpb)):
                raise SystemExit(f"{kernel.__name__} every={every}: differs from NumPy; nothing timed")
    cheap_sizes = CHEAP_SIZES + (((1 << 20) + 3,) if GPU else ())
    for n in cheap_sizes:
        x = rng.integers(0, 10, n).astype(np.float32)
        xd = dev(x)
        expected = sm.reference_stencil(x, 1)
        for kernel in (sm.stencil_global_cheap, sm.stencil_shared_cheap):
            out = dev(np.full(n, np.nan, np.float32))
            kernel[sm.stencil_cheap_blocks(n), sm.CHEAP_THREADS](xd, out)
            if not np.array_equal(host(out), expected):
                raise SystemExit(f"{kernel.__name__} n={n}: differs from NumPy; nothing timed")
    sizes = (1, 33, 1000, (1 << 20) + 3) if GPU else (1, 33, 1000)
    for n in sizes:
        x = rng.integers(0, 10, n).astype(np.float32)  # small integers: float32 sums are exact
        xd = dev(x)
        for radius in RADII:
            expected = sm.reference_stencil(x, radius)
            for kernel in (sm.stencil_global, sm.stencil_shared):
                out = dev(np.full(n, np.nan, np.float32))
                kernel[-(-n // sm.STENCIL_THREADS), sm.STENCIL_THREADS](xd, out, radius)
                if not np.array_equal(host(out), expected):
                    raise SystemExit(f"{kernel.__name__} n={n} radius={radius}: differs from NumPy; nothing timed")
    log(f"checked conflict_loop (strides {STRIDES}), sync_loop, mod_loop, counter_loop (every {SYNC_EVERY}), "
        f"both stencils (radii {RADII}, n in {sizes}) and the cheap pair (n in {cheap_sizes})")


def conflicts(sms: int, tag: str = "", strides=STRIDES):
    tpb, iters = 256, (4096 if GPU else 8)
    blocks = 8 * sms
    out = dev(np.zeros(blocks * tpb, np.float32))
    for stride in strides:
        B.measure(f"conflict stride={stride}{tag}", lambda s=stride: sm.conflict_loop[blocks, tpb](out, s, iters),
                  size=(blocks, tpb, iters), dtype=np.float32, reps=ARGS.reps,
                  wavefronts_per_load=sm.stride_wavefronts(stride), shared_loads=blocks * tpb // 32 * iters)


def barriers(sms: int):
    iters = 4096 if GPU else 8
    for tpb in SYNC_BLOCKS:
        blocks = sms * 2048 // tpb  # the same threads per SM for both block sizes
        out = dev(np.zeros(blocks * tpb, np.float32))
        for every in SYNC_EVERY:
            B.measure(f"sync every={every} block={tpb}",
                      lambda e=every, b=blocks, t=tpb: sm.sync_loop[b, t](out, iters, e),
                      size=(blocks, tpb, iters), dtype=np.float32, reps=ARGS.reps, sync_every=every,
                      threads_per_block=tpb, barriers_per_thread=(iters // every if every else 0))
        if tpb != 128:
            continue
        # seed 000 §4.5: the modulo alone (no barrier), and with the modulo replaced by a counter
        for label, kernel, every in (("mod", sm.mod_loop, 64), ("mod", sm.mod_loop, 0),
                                     ("counter", sm.counter_loop, 64)):
            B.measure(f"{label} every={every} block={tpb}",
                      lambda k=kernel, e=every, b=blocks, t=tpb: k[b, t](out, iters, e),
                      size=(blocks, tpb, iters), dtype=np.float32, reps=ARGS.reps, sync_every=every,
                      threads_per_block=tpb, barriers_per_thread=0,
                      modulos_per_thread=(iters if (label == "mod" and every) else 0))


def memcpy(n, tag=""):
    src, dst = dev(np.ones(n, np.float32)), dev(np.zeros(n, np.float32))
    if GPU:
        import cupy

        s, d = cupy.asarray(src), cupy.asarray(dst)
        fn = lambda: cupy.copyto(d, s)  # noqa: E731  (a device-to-device copy)
        B.measure(f"memcpy{tag}", fn, size=(n,), dtype=np.float32, bytes_moved=2 * 4 * n, reps=ARGS.reps,
                  timer="cupy")
    else:
        B.record(f"memcpy{tag}", None, size=(n,), dtype=np.float32, bytes_moved=2 * 4 * n)


def stencils(rng):
    n = (1 << 26) if GPU else 1000
    x = dev(rng.integers(0, 10, n).astype(np.float32))
    out = dev(np.zeros(n, np.float32))
    blocks = -(-n // sm.STENCIL_THREADS)
    for radius in RADII:
        for name, kernel in (("global", sm.stencil_global), ("shared", sm.stencil_shared)):
            B.measure(f"stencil {name} r={radius}",
                      lambda k=kernel, r=radius: k[blocks, sm.STENCIL_THREADS](x, out, r),
                      size=(n,), dtype=np.float32, bytes_moved=2 * 4 * n, reps=ARGS.reps,
                      radius=radius, reads_per_output=2 * radius + 1)
    cheap_blocks = sm.stencil_cheap_blocks(n)
    for name, kernel in (("global", sm.stencil_global_cheap), ("shared", sm.stencil_shared_cheap)):
        B.measure(f"stencil {name} cheap r=1", lambda k=kernel: k[cheap_blocks, sm.CHEAP_THREADS](x, out),
                  size=(n,), dtype=np.float32, bytes_moved=2 * 4 * n, reps=ARGS.reps, radius=1, reads_per_output=3,
                  outputs_per_thread=sm.CHEAP_OUTPUTS, threads_per_block=sm.CHEAP_THREADS)
    return n


def summary():
    recs = {r["variant"]: r for r in B.records}
    print()
    print(bench.provenance()["device"], "·", "dry run (no timing)" if not GPU else f"run {bench.run_id()}")
    print(f"{'variant':26s} {'ms':>9s} {'GB/s':>7s}  note")
    one = recs.get("conflict stride=1", {}).get("ms")
    for r in B.records:
        ms, g = r.get("ms"), r.get("gbps")
        note = ""
        if r["variant"].startswith("conflict") and ms and one:
            note = f"{ms / one:5.2f}x stride 1  (wavefronts {r['wavefronts_per_load']}x)"
        ms_s = f"{ms:9.4f}" if ms is not None else "        -"
        g_s = f"{g:7.0f}" if g is not None else "      -"
        print(f"{r['variant']:26s} {ms_s} {g_s}  {note}")


def main():
    rng = np.random.default_rng()
    check(rng)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT if GPU else 1
    conflicts(sms)
    log("conflict sweep done")
    barriers(sms)
    log("barriers done")
    n = stencils(rng)
    memcpy(n)
    log("stencils and memcpy done")
    memcpy(n, " #2")
    conflicts(sms, " #2", strides=(1, 32))
    path = H.save()[0]
    log(f"wrote {len(B.records)} records to {path}")
    summary()


if __name__ == "__main__":
    main()
