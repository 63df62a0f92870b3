"""Issue 14 on the H200: probes that make each number measure what its sentence says.

    python scripts/gpu/measure_probes.py --out DIR            # on the GPU: DIR/probes_*.json (+ raw logs)
    python scripts/gpu/measure_probes.py --dry-run --out DIR  # on the CPU engine: checks only, nothing timed

Parts (each checked against NumPy before it is timed; a failing part is recorded as failed, the rest goes on):

1. ``probes_latency``: dependent-FFMA latency, chains of 64 and 128 FFMAs per loop iteration in one warp
   (the difference over 64 FFMAs removes the loop overhead) and an empty loop (chapter 02/03 "21 cycles").
2. ``probes_smem``: shared-memory loads at ``lane * stride`` for strides 1…32, as a dependent chain in one
   warp (latency per load) and as 8 independent loads per iteration from full blocks (throughput):
   why strides 2 and 4 cost nothing in chapter 04's loop while 8/16/32 do (seed 000's "N-way = N×").
3. ``probes_local``: a 64-word per-thread table filled from global memory, read at data-dependent indices:
   local bytes from the compiler, time with 1 and 64 reads (chapter 03's spill demo, ``002-spill-local``).
4. ``probes_regcap``: chapter 09's ``regtile`` compiled as is and with ``max_registers`` 128 (two 256-thread
   blocks per SM) and 96: registers, blocks per SM (driver), local bytes, time (also the 60→85 % anecdote).
5. ``probes_scheduling``: an intra-warp spin lock (``atomic.cas``) run to completion (in a child process
   with a timeout: a hang is a result too), and the unrolled last-warp reduction without / with
   ``syncwarp`` over many blocks and launches: how many block sums came out wrong.
6. ``probes_libraries``: PyTorch fp32/tf32/fp16/bf16 GEMM and int8 ``torch._int_mm`` (tensor cores) at
   8192³, elementwise bandwidth in fp32/fp16/bf16, the device-to-device copy; the PCIe link (nvidia-smi).
7. ``probes_cuda_c``: ``__fadd_rn(__fmul_rn(a, b), c)`` against ``a * b + c`` (contracted to FFMA) and
   ``__dp4a`` throughput, through CuPy (NVRTC): time, and the SASS when ``cuobjdump`` is found.
8. ``probes_atomic_rate``: one global atomic add per thread (int32 and float32) at indices whose warp spreads over 1, 4
   or 32 sectors and over 1 to 2^24 bins, and one scattered 4-byte store per thread (inside and beyond the L2): the
   L2's rate for each, the throughput ceiling ``course.explain`` needs besides the same-address chain.
9. ``probes_block_rate``: launches of 2^14 to 2^20 blocks of 32 to 1024 threads that do next to nothing (thread 0
   writes one int) or one coalesced store per thread: how many blocks per second the GPU starts and retires, the
   ceiling of a grid of many small blocks (``course.explain``'s ``blocks``).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure.bench_harness import Script, scrub  # noqa: E402


def arguments(ap):
    ap.add_argument("--child", default="", help="internal: what a child process runs (lock)")


def child(args):
    if args.child.startswith("lock"):
        _, threads, tpb = args.child.split(":")
        run_lock(int(threads), int(tpb), report=True)
        return True
    if args.child == "seed_oob":
        seed_oob()
        return True
    return False


def run_lock(threads, tpb, report=False):
    """Chapter 02's intra-warp spin lock (course.kernels.warps.warp_lock: losers spin in their own loop)."""
    import time

    from course.kernels import warps

    t = time.time()
    r = warps.run_warp_lock(threads=threads, threads_per_block=tpb)
    res = {"finished": r.finished, "overlaps": r.overlaps, "threads": r.threads, "threads_per_block": tpb,
           "first_tickets": r.tickets[:40].tolist(), "wall_s": time.time() - t,
           "kernel": "course.kernels.warps.warp_lock"}
    if report:
        print(json.dumps(res))
    return res


SEED_BUG_N = 1000


def seed_oob():
    """The child under compute-sanitizer: seed 002's tiled kernel at N = 1000, grid rounded up (past the arrays)."""
    from numba import cuda

    from course.kernels import matmul as MM

    n = SEED_BUG_N
    a, b = MM.random_operands(n, n, n, np.random.default_rng())
    grid = (-(-n // MM.TILE), -(-n // MM.TILE))
    d = [cuda.to_device(x.reshape(n * n)) for x in (a, b, np.zeros((n, n), np.float32))]
    MM.seed_tiled[grid, (MM.TILE, MM.TILE)](d[0], d[1], d[2], n)
    cuda.synchronize()


H = Script(__doc__, "probes", reps=15, arguments=arguments, child=child)
GPU, OUT, log = H.gpu, H.out, H.log

from numba import cuda  # noqa: E402

from course.measure import occupancy  # noqa: E402
from course.kernels import matmul as MM  # noqa: E402
from course.kernels import probes as P  # noqa: E402

RNG = np.random.default_rng()


def dev(x):
    return cuda.to_device(x) if GPU else x


def host(x):
    return x.copy_to_host() if GPU else x


def first(v):
    return next(iter(v.values())) if isinstance(v, dict) else v


def sm_clock_hz():
    """The SM clock under load: nvidia-smi's current clock read right after a timed kernel (MHz→Hz)."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
        return float(r.stdout.strip().splitlines()[0]) * 1e6
    except Exception:
        return None


def resources(kernel):
    if not GPU:
        return {}
    return {"regs_per_thread": int(first(kernel.get_regs_per_thread())),
            "local_bytes_per_thread": int(first(kernel.get_local_mem_per_thread()))}


# --- 1. dependent FFMA latency -----------------------------------------------------------------------------------


def latency():
    x = (RNG.random(96, dtype=np.float32) * 0.5 + 0.25).astype(np.float32)  # b in [0.25, 0.75): no overflow
    d_x, d_o = dev(x), dev(np.zeros(32, np.float32))
    for name, k, n in (("chain64", P.ffma_chain_64, P.CHAIN), ("chain128", P.ffma_chain_128, 2 * P.CHAIN)):
        k[1, 32](d_x, d_o, 2)
        want = P.ffma_chain_reference(x, 2, n)
        got = host(d_o)
        if not np.allclose(got, want, rtol=1e-4):
            raise AssertionError(f"{name}: got {got[:3]}, NumPy {want[:3]}")
    iters = 20000 if GPU else 2
    times = {}
    for name, k in (("empty_loop", P.empty_loop), ("chain64", P.ffma_chain_64), ("chain128", P.ffma_chain_128)):
        times[name] = H.time_ms(lambda k=k: k[1, 32](d_x, d_o, iters), warmup=2, batch=1)
    hz = sm_clock_hz() if GPU else None
    per = {}
    if GPU:
        per["chain64"] = times["chain64"] * 1e-3 * hz / (iters * P.CHAIN)
        per["chain128"] = times["chain128"] * 1e-3 * hz / (iters * 2 * P.CHAIN)
        diff = (times["chain128"] - times["chain64"]) * 1e-3 * hz / (iters * P.CHAIN)
        per["difference"] = diff
    for name in times:
        H.record("probes_latency", name, times[name], H.reps, [1, 32], "float32", iters=iters,
                 ffma_per_iteration={"empty_loop": 0, "chain64": 64, "chain128": 128}[name],
                 cycles_per_ffma=per.get(name), sm_clock_hz_after=hz, launch="1 block of 32 threads (one warp)",
                 **resources({"empty_loop": P.empty_loop, "chain64": P.ffma_chain_64, "chain128": P.ffma_chain_128}[name]))
    if GPU:
        H.record("probes_latency", "ffma_latency_difference", None, 0, [1, 32], "float32", iters=iters,
                 cycles_per_ffma=per["difference"], sm_clock_hz_after=hz,
                 how="(t(chain128) - t(chain64)) / (iters * 64 FFMA) * SM clock: the loop overhead cancels")
        log(f"FFMA latency: {per['chain64']:.2f} (64), {per['chain128']:.2f} (128), difference {per['difference']:.2f} "
            f"cycles; empty loop {times['empty_loop']:.3f} ms")


# --- 2. shared memory: latency and throughput against stride -------------------------------------------------------


def smem():
    table = np.arange(P.SMEM_WORDS, dtype=np.int32)
    d_t = dev(table)
    strides = (1, 2, 4, 8, 16, 32) if GPU else (1, 32)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT if GPU else 1
    hz = None
    dep_iters = 20000 if GPU else 3
    ind_iters = 1000 if GPU else 2
    blocks, threads = (sms * 2, 1024) if GPU else (2, 64)
    d_o1 = dev(np.zeros(32, np.int32))
    d_o2 = dev(np.zeros(blocks * threads, np.int32))
    for stride in strides:
        P.smem_dependent[1, 32](d_t, d_o1, stride, dep_iters)
        want = (np.arange(32) * stride) % P.SMEM_WORDS
        if not np.array_equal(host(d_o1), want):
            raise AssertionError(f"smem_dependent stride {stride}: {host(d_o1)[:4]} != {want[:4]}")
        P.smem_independent[blocks, threads](d_t, d_o2, stride, ind_iters)
        base = (np.arange(32) * stride) % P.SMEM_WORDS
        offs = (np.arange(ind_iters) * 32) % P.SMEM_WORDS
        per_lane = sum(((base[:, None] + offs[None, :] + 32 * m) % P.SMEM_WORDS).sum(axis=1) for m in range(8))
        want2 = np.tile(per_lane, blocks * threads // 32)
        if not np.array_equal(host(d_o2).astype(np.int64), want2.astype(np.int32).astype(np.int64)):
            raise AssertionError(f"smem_independent stride {stride}: wrong sums")
        t_dep = H.time_ms(lambda s=stride: P.smem_dependent[1, 32](d_t, d_o1, s, dep_iters), batch=1)
        t_ind = H.time_ms(lambda s=stride: P.smem_independent[blocks, threads](d_t, d_o2, s, ind_iters), batch=1)
        if GPU and hz is None:
            hz = sm_clock_hz()
        way = int(np.max(np.bincount(np.unique((np.arange(32) * stride) % P.SMEM_WORDS) % 32)))
        dep_cycles = t_dep * 1e-3 * hz / dep_iters if GPU else None
        loads_per_sm = blocks * (threads // 32) * ind_iters * 8 / sms
        ind_cycles = t_ind * 1e-3 * hz / loads_per_sm if GPU else None
        H.record("probes_smem", f"dependent_s{stride}", t_dep, H.reps, [32], "int32", stride=stride, ways=way,
                 iters=dep_iters, cycles_per_load=dep_cycles, sm_clock_hz=hz, launch="1 warp, j = s[j] chain",
                 **resources(P.smem_dependent))
        H.record("probes_smem", f"independent_s{stride}", t_ind, H.reps, [blocks, threads], "int32", stride=stride,
                 ways=way, iters=ind_iters, cycles_per_warp_load_per_sm=ind_cycles, sm_clock_hz=hz,
                 launch=f"{blocks} blocks x {threads} threads, 8 independent loads per iteration",
                 **resources(P.smem_independent))
        if GPU:
            log(f"smem stride {stride:2d} ({way:2d}-way): dependent {dep_cycles:6.1f} cycles/load, "
                f"independent {ind_cycles:5.2f} cycles per warp-load per SM")


# --- 3. local memory --------------------------------------------------------------------------------------------


def local():
    n = (1 << 22) if GPU else 257
    x = RNG.standard_normal(n, dtype=np.float32)
    idx = RNG.integers(0, 4096, n, dtype=np.int64).astype(np.int32)
    d_x, d_i, d_o = dev(x), dev(idx), dev(np.zeros(n, np.float32))
    for reads in (1, 64) if GPU else (1, 3):
        P.local_table[-(-n // 128), 128](d_x, d_i, d_o, reads)
        # reference
        i = np.arange(n)
        acc = np.zeros(n, np.float32)
        j = idx.astype(np.int64)
        for _ in range(reads):
            k = (j & 63).astype(np.int64)
            acc = (acc + x[(i + k * 4099) % n]).astype(np.float32)
            j = (j * 13 + 7) & 4095
        if not np.allclose(host(d_o), acc, rtol=1e-5, atol=1e-5):
            raise AssertionError(f"local_table reads={reads}: differs from NumPy")
        ms = H.time_ms(lambda r=reads: P.local_table[-(-n // 128), 128](d_x, d_i, d_o, r))
        H.record("probes_local", f"local_table_r{reads}", ms, H.reps, [n], "float32", reads=reads,
                 table_words=P.LOCAL_WORDS, global_bytes=4 * n * (P.LOCAL_WORDS + 2),
                 **resources(P.local_table))
        log(f"local_table reads={reads}: {ms} ms, {resources(P.local_table)}")


# --- 4. a register cap on regtile ---------------------------------------------------------------------------------


def regcap():
    base = MM.MATMUL_VERSIONS["regtile"]
    n = 4096 if GPU else 128
    a, b = MM.random_operands(n, n, n, RNG)
    d_a, d_b, d_c = dev(a), dev(b), dev(np.zeros((n, n), np.float32))
    small = 256 if GPU else 128
    sa, sb = MM.random_operands(small, small, small, RNG)
    ref = MM.reference(sa, sb)
    threads = base.threads[0]
    for cap in (None, 128, 96):
        k = base.kernel if cap is None or not GPU else cuda.jit(max_registers=cap)(base.kernel.py_func)
        if not GPU and cap is not None:
            continue  # the CPU engine has no registers to cap

        def launch(m_a, m_b, m_c, k=k):
            m, nn = m_c.shape
            k[base.griddim(m, nn), base.threads](*base.args(m_a, m_b, m_c))

        d_sa, d_sb, d_sc = dev(sa), dev(sb), dev(np.full((small, small), np.nan, np.float32))
        launch(d_sa, d_sb, d_sc)
        err = np.abs(host(d_sc) - ref).max() / np.abs(ref).max()
        if not err < 1e-4:
            raise AssertionError(f"regtile cap {cap}: relative error {err}")
        extra = {}
        if GPU:
            extra = resources(k)
            extra["driver_blocks_per_sm"] = occupancy.driver_blocks_per_sm(k, threads)
            extra["warps_per_sm"] = extra["driver_blocks_per_sm"] * threads // 32
            extra["occupancy"] = extra["warps_per_sm"] / 64
        rec = H.measure("probes_regcap", f"regtile_cap{cap or 'none'}", lambda: launch(d_a, d_b, d_c),
                        size=(n, n, n), dtype="float32", flops=2.0 * n ** 3, max_registers=cap, threads=threads, **extra)
        log(f"regtile cap {cap}: {rec.get('ms')} ms, {extra}")


# --- 5. independent thread scheduling -----------------------------------------------------------------------------


def scheduling():
    from course.kernels import warps

    for threads, tpb in ((32, 32), (4096, 256)):
        variant = f"warp_lock threads={threads} tpb={tpb}"
        if GPU:
            cmd = [sys.executable, __file__, "--out", str(OUT), "--child", f"lock:{threads}:{tpb}"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                out = r.stdout.strip().splitlines()
                res = json.loads(out[-1]) if r.returncode == 0 and out else {"error": scrub(r.stderr[-800:]),
                                                                               "finished": False}
                res.update(returncode=r.returncode, timed_out=False)
            except subprocess.TimeoutExpired:
                res = {"finished": False, "timed_out": True, "timeout_s": 60}
        else:
            res = dict(run_lock(threads, tpb), timed_out=False, executed_on="the course's CPU engine")
        H.record("probes_scheduling", variant, None, 0, [threads], "int32", **res,
                 what="every thread takes one atomic.cas spin lock (losers spin in a loop of their own) and "
                      "leaves; finishes only with independent thread scheduling (per-thread program counters)")
        log(f"{variant}: {res}")
    blocks = 65536 if GPU else 4
    trials = 20 if GPU else 1
    for name in ("last_warp_unsynced", "last_warp_syncwarp"):
        k = warps.LAST_WARP[name]
        wrong_total, with_wrong, example = 0, 0, None
        for seed in range(trials):
            if GPU:
                rng = np.random.default_rng(seed)
                a = rng.integers(1, 16, blocks * 256).astype(np.float32)
                d_o = cuda.device_array(blocks, np.float32)
                k[blocks, 256](cuda.to_device(a), d_o)
                got = d_o.copy_to_host().astype(np.float64)
                want = a.reshape(blocks, 256).astype(np.float64).sum(axis=1)
                bad = np.flatnonzero(got != want)
                wrong = int(bad.size)
                if wrong and example is None:
                    example = {"block": int(bad[0]), "got": float(got[bad[0]]), "want": float(want[bad[0]])}
            else:
                r = warps.run_last_warp(name, blocks, rng=np.random.default_rng(seed))
                wrong = r.wrong_blocks
                if wrong and example is None:
                    example = {"block": r.first_wrong, "got": r.got, "want": r.want}
            wrong_total += wrong
            with_wrong += wrong > 0
        ms = None
        if GPU:
            d_a = cuda.to_device(np.ones(blocks * 256, np.float32))
            ms = H.time_ms(lambda: k[blocks, 256](d_a, d_o))
        H.record("probes_scheduling", name, ms, H.reps if GPU else 0, [blocks, 256], "float32", blocks=blocks,
                 trials=trials, wrong_blocks_total=wrong_total, trials_with_wrong=with_wrong, first_wrong=example,
                 data="small integers 1..15 in float32: every sum exact, a wrong block is a lost update",
                 kernel=f"course.kernels.warps.{name}", **resources(k))
        log(f"{name}: {wrong_total} wrong block sums in {trials} trials of {blocks} blocks ({with_wrong} trials with any)")


# --- 5b. the one atomic per block: its floor beside chapters 06 and 07's times ----------------------------------


def atomics():
    """Chapter 06's block-size table and chapter 07's block versions, each beside the cost of its atomics alone
    (``probes.atomic_floor`` on the same grid) and, for the one-round kernels, the same kernel writing per-block
    partials instead (no atomic)."""
    from course.measure import bench
    from course.kernels import reduction as R

    n = (1 << 28) if GPU else 4099
    host_a = RNG.integers(-8, 9, n, dtype=np.int8).astype(np.float32)  # exact float32 sums
    want = float(host_a.astype(np.float64).sum())
    d_a = dev(host_a)
    d_out = dev(np.zeros(1, np.float32))
    d_floor = dev(np.zeros(1, np.float32))

    def queued(fn):
        return float(np.median(bench.time_queued(fn, reps=H.reps, budget_ms=3.0))) if GPU else (fn(), None)[1]

    def check_out(v):
        run = v.launcher(d_a, d_out)
        run()
        got = float(host(d_out)[0])
        if got != want:
            raise AssertionError(f"{v.name}: got {got}, exact {want}")
        return run

    rows = []
    for w, u in ((1, 1), (4, 4)):
        for threads in (32, 64, 128, 256, 512, 1024) if GPU else (32, 256):
            base = R.grid_stride_version(w, u, threads, 1, name=f"one_round_w{w}_u{u}_t{threads}")
            g = max(1, -(-n // (threads * w * u)))
            v = R.Version(base.name, "one round per thread", base.kernel, threads, lambda nn, ver, g=g: g, width=w,
                          family="one_round", params=dict(base.params, blocks_per_sm=None))
            run = check_out(v)
            kp = R.grid_stride_kernel(w, u, partials=True)
            d_p = dev(np.zeros(g, np.float32))
            kp[g, threads](d_a, d_p)
            if float(np.sum(host(d_p), dtype=np.float64)) != want:
                raise AssertionError(f"{v.name} with per-block partials: wrong sum")
            rows.append(("occupancy_block_size", v.name, threads, g, queued(run),
                         queued(lambda: kp[g, threads](d_a, d_p)),
                         queued(lambda g=g, t=threads: P.atomic_floor[g, t](d_floor))))
    for name in ("block_interleaved", "block_strided", "block_sequential", "unrolled", "warp_shuffle"):
        v = R.REDUCTION_VERSIONS.get(name)
        if v is None:
            continue
        run = check_out(v)
        g = v.griddim(n)
        rows.append(("reduction", name, v.threads, g, queued(run), None,
                     queued(lambda g=g, t=v.threads: P.atomic_floor[g, t](d_floor))))
    for chapter_bench, name, threads, g, ms, p_ms, floor in rows:
        H.record("probes_atomics", name, ms, H.reps if GPU else 0, [n], "float32", of=chapter_bench,
                 threads_per_block=threads, blocks=g, atomics=g, partials_ms=p_ms, atomic_floor_ms=floor,
                 gbps=(4 * n / (ms * 1e6)) if ms else None, gbps_partials=(4 * n / (p_ms * 1e6)) if p_ms else None,
                 timer="course.measure.bench.time_queued (calls queued behind a sleeping kernel)",
                 floor_kernel="probes.atomic_floor: thread 0 of every block adds to out[0], nothing else")
        if GPU:
            log(f"{chapter_bench:20s} {name:24s} {g:>8d} blocks: {ms:8.4f} ms; partials "
                f"{p_ms if p_ms is None else round(p_ms, 4)} ms; atomic floor {floor:8.4f} ms")


# --- 5b'. Little's law with one load in flight ------------------------------------------------------------------


def littles_law():
    """Bandwidth against warps per SM for a sum with exactly one 4-byte load in flight per thread
    (``probes.sum_one_in_flight``) beside chapter 06's ``w1_u1`` (which ptxas unrolls: 4 loads in flight)."""
    from course.measure import bench
    from course.kernels import reduction as R

    n = (1 << 28) if GPU else 4099
    host_a = RNG.integers(-8, 9, n, dtype=np.int8).astype(np.float32)
    want = float(host_a.astype(np.float64).sum())
    d_a, d_out = dev(host_a), dev(np.zeros(1, np.float32))
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT if GPU else 1
    sentinel = np.float32(1e30)
    for bps in (1, 2, 4, 8, 16) if GPU else (1,):
        g = sms * bps

        if GPU:
            d_out.copy_to_device(np.zeros(1, np.float32))
        else:
            d_out[0] = 0
        P.sum_one_in_flight[g, 128](d_a, d_out, sentinel)
        got = float(host(d_out)[0])
        if got != want:
            raise AssertionError(f"sum_one_in_flight: {got} != {want}")
        v = R.grid_stride_version(1, 1, 128, bps, name=f"w1_u1_t128_b{bps}")
        run = v.launcher(d_a, d_out)
        run()
        if float(host(d_out)[0]) != want:
            raise AssertionError(f"{v.name}: wrong sum")
        for name, fn, loads in ((f"one_in_flight_t128_b{bps}", lambda: P.sum_one_in_flight[g, 128](d_a, d_out, sentinel), 1),
                                (v.name, run, 4)):
            ms = float(np.median(bench.time_queued(fn, reps=H.reps, budget_ms=3.0))) if GPU else (fn(), None)[1]
            warps = bps * 4
            H.record("probes_littles_law", name, ms, H.reps if GPU else 0, [n], "float32", blocks_per_sm=bps,
                     warps_per_sm=warps, threads_per_block=128, blocks=g,
                     loads_in_flight_per_thread=loads, bytes_in_flight_per_sm=warps * 32 * 4 * loads,
                     gbps=(4 * n / (ms * 1e6)) if ms else None,
                     note="loads in flight from the sm_90 SASS (data/probe_sass): one_in_flight has 1 LDG per "
                          "iteration behind a data-dependent exit; w1_u1's loop is unrolled 4x, 4 LDG before the FADDs")
            if GPU:
                log(f"{name:24s} {warps:3d} warps/SM: {4 * n / (ms * 1e6):7.0f} GB/s")


# --- 5c. memcheck on chapter 10's planted out-of-bounds kernel -----------------------------------------------


def memcheck():
    from course.measure import cuda_tools

    tool = cuda_tools.find_tool("compute-sanitizer")
    if not GPU or tool is None:
        log(f"memcheck skipped ({'CPU' if not GPU else 'compute-sanitizer not found'})")
        return
    import re

    cmd = [tool, "--tool", "memcheck", "--report-api-errors", "no", "--show-backtrace", "no", "--print-limit", "10000",
           sys.executable, __file__, "--out", str(OUT), "--child", "seed_oob"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    text = scrub(r.stdout + "\n" + r.stderr)
    H.write_text("probes_memcheck.log", " ".join(scrub(c) for c in cmd) + "\n\n" + text[-60000:])
    lines = text.splitlines()
    reports = []
    for i, ln in enumerate(lines):
        if "Invalid __global__" in ln:
            reports.append([x.replace("=========", "").strip() for x in lines[i:i + 5] if x.strip()])
    writes = [r for r in reports if "write" in r[0]]
    m = re.search(r"ERROR SUMMARY:\s*(\d+)\s+error", text)
    H.record("probes_memcheck", "seed_oob", None, 0, [SEED_BUG_N] * 3, "float32", tool="memcheck",
             returncode=r.returncode, errors=int(m.group(1)) if m else None,
             invalid_global_write=len(re.findall(r"Invalid __global__ write", text)),
             invalid_global_read=len(re.findall(r"Invalid __global__ read", text)),
             first_reports=reports[:6], first_write_reports=writes[:6], options="--report-api-errors no --show-backtrace no --print-limit 10000",
             planted="seed 002's tiled matmul, grid rounded up at N = 1000 (not a multiple of TILE): threads past N "
                     "read and write past the arrays", command=" ".join(scrub(c) for c in cmd[1:]))
    log(f"memcheck: {len(reports)} invalid-access reports, rc {r.returncode}")


# --- 6. the libraries: tensor cores, mixed precision, the link ---------------------------------------------------


def libraries():
    if not GPU:
        log("libraries: skipped on the CPU (PyTorch/CuPy GPU work only)")
        return
    import torch

    dev_t = torch.device("cuda")
    n = 8192
    g = torch.Generator(device=dev_t).manual_seed(int(RNG.integers(1 << 30)))
    a32 = torch.randn(n, n, device=dev_t, generator=g)
    b32 = torch.randn(n, n, device=dev_t, generator=g)
    ref = None
    for name, dt, tf32 in (("gemm_fp32", torch.float32, False), ("gemm_tf32", torch.float32, True),
                           ("gemm_fp16", torch.float16, False), ("gemm_bf16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a, b = a32.to(dt), b32.to(dt)
        c = a @ b
        if ref is None:
            sa, sb = a32[:512].double(), b32[:, :512].double()
            ref = sa @ sb
        rel = float(((c[:512, :512].double() - ref).norm() / ref.norm()).item())
        rec = H.measure("probes_libraries", name, lambda a=a, b=b: torch.matmul(a, b), timer="torch", warmup=3,
                        size=(n, n, n), dtype=str(dt).replace("torch.", ""), flops=2.0 * n ** 3,
                        relative_error_vs_fp64=rel, library="torch", allow_tf32=tf32)
        log(f"{name}: {rec['ms']:.3f} ms, {rec['tflops']:.0f} TFLOP/s, rel err {rel:.1e}")
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ai = torch.randint(-128, 128, (n, n), device=dev_t, dtype=torch.int8, generator=g)
        bi = torch.randint(-128, 128, (n, n), device=dev_t, dtype=torch.int8, generator=g)
        try:
            ci = torch._int_mm(ai, bi)
        except RuntimeError:  # some builds want the second operand column-major
            bi = bi.t().contiguous().t()
            ci = torch._int_mm(ai, bi)
        want = ai[:256].double() @ bi[:, :256].double()  # exact: |sums| < 2^53
        exact = bool(torch.equal(ci[:256, :256].double(), want))
        rec = H.measure("probes_libraries", "int_mm_int8", lambda: torch._int_mm(ai, bi), timer="torch", warmup=3,
                        size=(n, n, n), dtype="int8", flops=2.0 * n ** 3, exact_vs_fp64=exact,
                        library="torch._int_mm (int8 in, int32 out; tflops = tera integer ops/s)")
        log(f"int8 _int_mm: {rec['ms']:.3f} ms, {rec['tflops']:.0f} TOP/s, exact {exact}")
    except Exception as e:
        H.failed["int_mm"] = f"{type(e).__name__}: {str(e)[:300]}"
    elems = 1 << 28
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.randn(elems, device=dev_t, dtype=dt, generator=g)
        y = torch.empty_like(x)
        torch.mul(x, 2, out=y)
        if not torch.equal(y, x * 2):
            raise AssertionError(f"mul {dt}")
        nbytes = 2 * elems * x.element_size()
        name = str(dt).replace("torch.", "")
        rec = H.measure("probes_libraries", f"scale_{name}", lambda x=x, y=y: torch.mul(x, 2, out=y), timer="torch",
                        warmup=3, size=(elems,), dtype=name, bytes_moved=nbytes, library="torch.mul(x, 2, out=y)")
        rec["elements_per_ns"] = elems / (rec["ms"] * 1e6)
        rec = H.measure("probes_libraries", f"copy_{name}", lambda x=x, y=y: y.copy_(x), timer="torch", warmup=3,
                        size=(elems,), dtype=name, bytes_moved=nbytes, library="torch copy_ (device to device)")
        log(f"{name}: scale and copy {rec['gbps']:.0f} GB/s (copy)")
        del x, y
    fields = "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max"
    try:
        q = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=20).stdout.strip()
        vals = dict(zip(fields.split(","), [v.strip() for v in q.split(",")]))
    except Exception as e:
        vals = {"error": str(e)[:200]}
    H.record("probes_libraries", "pcie_link", None, 0, [0], "none", **vals,
             note="read with nvidia-smi; the link may train down when idle (gen.current), gen.max is what it can do")
    log(f"PCIe: {vals}")


# --- 7. CUDA C through CuPy: __fadd_rn vs contraction, __dp4a --------------------------------------------------

CUDA_C = r"""
extern "C" __global__ void mul_add_contracted(const float* x, float* out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = x[i], b = x[i + 1], c = x[i + 2];
    for (int k = 0; k < iters; ++k) { a = a * b + c; a = a * b + c; a = a * b + c; a = a * b + c; }
    out[i] = a;
}
extern "C" __global__ void mul_add_rn(const float* x, float* out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = x[i], b = x[i + 1], c = x[i + 2];
    for (int k = 0; k < iters; ++k) {
        a = __fadd_rn(__fmul_rn(a, b), c); a = __fadd_rn(__fmul_rn(a, b), c);
        a = __fadd_rn(__fmul_rn(a, b), c); a = __fadd_rn(__fmul_rn(a, b), c);
    }
    out[i] = a;
}
extern "C" __global__ void dp4a_rate(const int* x, int* out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int a = x[i], b = x[i + 1], c0 = 0, c1 = 1, c2 = 2, c3 = 3;
    for (int k = 0; k < iters; ++k) {
        c0 = __dp4a(a, b, c0); c1 = __dp4a(a, b ^ k, c1); c2 = __dp4a(a ^ k, b, c2); c3 = __dp4a(a, b + k, c3);
    }
    out[i] = c0 + c1 + c2 + c3;
}
extern "C" __global__ void ffma_rate(const float* x, float* out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = x[i], b = x[i + 1], c0 = 0.f, c1 = 1.f, c2 = 2.f, c3 = 3.f;
    for (int k = 0; k < iters; ++k) { c0 = a * c0 + b; c1 = a * c1 + b; c2 = a * c2 + b; c3 = a * c3 + b; }
    out[i] = c0 + c1 + c2 + c3;
}
"""


def cuda_c():
    if not GPU:
        log("CUDA C probes: skipped on the CPU (CuPy/NVRTC on the GPU only)")
        return
    import cupy as cp

    from course.measure import cuda_tools

    nvcc, cuobjdump = cuda_tools.find_tool("nvcc"), cuda_tools.find_tool("cuobjdump")
    sass_note = "no nvcc/cuobjdump found"
    mod = None
    if nvcc and cuobjdump:
        src = OUT / "probes_cuda_c.cu"
        src.write_text(CUDA_C)
        cubin = OUT / "probes_cuda_c.cubin"
        r = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", "-o", str(cubin), str(src)], capture_output=True,
                           text=True, timeout=120)
        if r.returncode == 0:
            d = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, timeout=60)
            H.write_text("probes_cuda_c.sass", d.stdout)
            sass_note = "nvcc -cubin -arch=sm_90 -O3; cuobjdump -sass: probes_cuda_c.sass"
            mod = cp.RawModule(path=str(cubin))
        else:
            sass_note = "nvcc failed: " + scrub(r.stderr[-300:])
    if mod is None:
        mod = cp.RawModule(code=CUDA_C, options=("-arch=sm_90",))
    n_threads = 132 * 2048
    iters = 4096
    x = cp.asarray((RNG.random(n_threads + 3) * 0.5 + 0.25).astype(np.float32))
    xi = cp.asarray(RNG.integers(-(1 << 31), 1 << 31, n_threads + 3, dtype=np.int64).astype(np.int32))
    out_f = cp.empty(n_threads, cp.float32)
    out_i = cp.empty(n_threads, cp.int32)
    results = {}
    for name, arr, out, ops_per_iter in (("mul_add_contracted", x, out_f, 4), ("mul_add_rn", x, out_f, 4),
                                         ("ffma_rate", x, out_f, 4), ("dp4a_rate", xi, out_i, 4)):
        f = mod.get_function(name)

        def launch(f=f, arr=arr, out=out):
            f((n_threads // 256,), (256,), (arr, out, np.int32(iters)))

        launch()
        cp.cuda.Device().synchronize()
        ms = H.time_ms(launch, timer="cupy", batch=1)
        results[name] = cp.asnumpy(out[:4])
        ops = n_threads * iters * ops_per_iter
        H.record("probes_cuda_c", name, ms, H.reps, [n_threads, iters], "int32" if "dp4a" in name else "float32",
                 ops=ops, gops_per_s=ops / (ms * 1e6), sass=sass_note, library="CuPy RawModule (CUDA C)",
                 dependent_chain=name.startswith("mul_add"))
        log(f"{name}: {ms:.3f} ms, {ops / (ms * 1e6):.0f} G ops/s")
    # contraction changes the rounding: the two versions of the same chain differ in the last bits
    H.record("probes_cuda_c", "contraction_vs_rn_first_outputs", None, 0, [4], "float32",
             contracted=results["mul_add_contracted"].tolist(), rn=results["mul_add_rn"].tolist(),
             note="bitwise different where FFMA's single rounding differs from FMUL+FADD's two")


# --- 8. the L2's atomic rate: spread over sectors and bins; scattered stores -------------------------------------


def _per_warp(keys, item=4):
    """Mean distinct addresses and distinct 32-byte sectors per warp of 32 consecutive threads."""
    w = np.sort(keys[: keys.size // 32 * 32].reshape(-1, 32), axis=1)
    addrs = 1 + (np.diff(w, axis=1) != 0).sum(axis=1)
    sec = w * item // 32
    sectors = 1 + (np.diff(sec, axis=1) != 0).sum(axis=1)
    return float(addrs.mean()), float(sectors.mean())


def atomic_rate():
    """One atomic (or store) per thread: int32 / float32 adds at keys spread as named, scattered stores."""
    from course.measure import bench

    n = (1 << 24) if GPU else 4099
    tpb = 256
    g = -(-n // tpb)
    i = np.arange(n, dtype=np.int64)

    def queued(fn):
        return float(np.median(bench.time_queued(fn, reps=H.reps, budget_ms=3.0))) if GPU else None

    patterns = [("one_address", np.zeros(n, np.int32), 1),
                ("warp_uniform", (i // 32).astype(np.int32), n // 32 + 1),
                ("coalesced_unique", i.astype(np.int32), n),
                ("sector_per_lane", (i * 8 % (8 * n)).astype(np.int32) if GPU else (i * 8).astype(np.int32), 8 * n)]
    for b in (32, 256, 1024, 8192, 1 << 16, 1 << 20, 1 << 24):
        patterns.append((f"random_{b}", RNG.integers(0, b, n, dtype=np.int32), b))
    for kind, kernel, dtype in (("i32", P.atomic_bins_i32, np.int32), ("f32", P.atomic_bins_f32, np.float32)):
        for name, keys, bins in patterns:
            if kind == "f32" and name == "one_address":
                continue  # 2^24 float ones on one address lose exactness; the float chain is probes_atomics'
            if bins * 4 > (1 << 30):
                continue
            d_keys, d_bins = dev(keys), dev(np.zeros(bins, dtype))
            kernel[g, tpb](d_keys, d_bins)
            want = np.bincount(keys, minlength=bins).astype(dtype)
            if not np.array_equal(host(d_bins), want):
                raise AssertionError(f"atomic {kind} {name}: wrong bins")
            ms = queued(lambda: kernel[g, tpb](d_keys, d_bins))
            addrs, sectors = _per_warp(keys)
            H.record("probes_atomic_rate", f"atomic_{kind}_{name}", ms, H.reps if GPU else 0, [n], kind, bins=bins,
                     threads_per_block=tpb, blocks=g, addresses_per_warp=addrs, sectors_per_warp=sectors,
                     bins_bytes=bins * 4, per_s=(n / (ms * 1e-3)) if ms else None,
                     sectors_per_s=(n / 32 * sectors / (ms * 1e-3)) if ms else None,
                     timer="course.measure.bench.time_queued (calls queued behind a sleeping kernel)")
            if GPU:
                log(f"atomic {kind} {name:18s}: {ms:8.4f} ms, {n / ms / 1e6:7.2f} G/s, "
                    f"{addrs:5.1f} addresses / {sectors:5.1f} sectors per warp")
    for m in ((1 << 22, 1 << 24, 1 << 26) if GPU else (4099,)):
        g2 = -(-m // tpb)
        x = RNG.integers(-50, 51, m, dtype=np.int8).astype(np.float32)
        for name, perm in (("identity", np.arange(m, dtype=np.int32)), ("random", RNG.permutation(m).astype(np.int32))):
            d_perm, d_x, d_out = dev(perm), dev(x), dev(np.zeros(m, np.float32))
            P.scatter_store[g2, tpb](d_perm, d_x, d_out)
            want = np.zeros(m, np.float32)
            want[perm] = x
            if not np.array_equal(host(d_out), want):
                raise AssertionError(f"scatter {name} {m}: wrong")
            ms = queued(lambda: P.scatter_store[g2, tpb](d_perm, d_x, d_out))
            H.record("probes_atomic_rate", f"scatter_{name}_{m}", ms, H.reps if GPU else 0, [m], "float32",
                     threads_per_block=tpb, blocks=g2, footprint_bytes=12 * m,
                     per_s=(m / (ms * 1e-3)) if ms else None,
                     timer="course.measure.bench.time_queued (calls queued behind a sleeping kernel)")
            if GPU:
                log(f"scatter {name:8s} {m:>9d}: {ms:8.4f} ms, {m / ms / 1e6:7.2f} G stores/s")


def block_rate():
    """Blocks per second: ``probes.block_touch`` (thread 0 writes one int) and ``probes.fill_index`` (every thread
    one store) over grids of 2^14..2^20 blocks of 32..1024 threads."""
    from course.measure import bench

    for tpb in (32, 64, 128, 256, 512, 1024):
        for g in ((1 << 14, 1 << 16, 1 << 18, 1 << 20) if GPU else (5,)):
            for name, kernel, n in (("touch", P.block_touch, g), ("fill", P.fill_index, g * tpb)):
                if n * 4 > (1 << 30):
                    continue
                d_out = dev(np.zeros(n, np.int32))
                kernel[g, tpb](d_out)
                want = np.ones(n, np.int32) if name == "touch" else np.arange(n, dtype=np.int32)
                if not np.array_equal(host(d_out), want):
                    raise AssertionError(f"block_rate {name} {g}x{tpb}: wrong")
                ms = float(np.median(bench.time_queued(lambda: kernel[g, tpb](d_out), reps=H.reps,
                                                       budget_ms=3.0))) if GPU else None
                H.record("probes_block_rate", f"{name}_t{tpb}_g{g}", ms, H.reps if GPU else 0, [n], "int32",
                         threads_per_block=tpb, blocks=g, bytes_stored=4 * n,
                         blocks_per_s=(g / (ms * 1e-3)) if ms else None,
                         timer="course.measure.bench.time_queued (calls queued behind a sleeping kernel)")
                if GPU:
                    log(f"block_rate {name:5s} {g:>8d} x {tpb:4d}: {ms:8.4f} ms, {g / ms / 1e6:7.3f} G blocks/s")


PARTS = (("latency", latency), ("smem", smem), ("local", local), ("regcap", regcap), ("scheduling", scheduling),
         ("atomics", atomics), ("memcheck", memcheck), ("littles_law", littles_law), ("libraries", libraries), ("cuda_c", cuda_c),
         ("atomic_rate", atomic_rate), ("block_rate", block_rate))
only = os.environ.get("PROBES_ONLY")
for part, fn in PARTS:
    if only and part not in only.split(","):
        continue
    log(f"--- {part}")
    H.guarded(part, fn)
    H.save()  # after every part: a later part that overruns the lane's time limit loses nothing before it
H.finish()
