"""Chapter 03 on the H200: coalescing sweeps, memory spaces, spills, and latency by pointer chasing.

    python scripts/gpu/measure_memory.py --out DIR            # on the GPU: writes DIR/memory_*.json
    python scripts/gpu/measure_memory.py --dry-run --out DIR  # on the CPU: tiny sizes, checks only, no timing
    python scripts/gpu/measure_memory.py --parts latency --out DIR  # only the named parts (and the checks)

Every bandwidth kernel is checked against its NumPy reference (awkward sizes, fresh random data)
before it is timed; every latency probe's final index is checked against a walk of its chain on the
host.  Bandwidth: CUDA-event medians over ``--reps`` launches after a warm-up.  Latency: one thread,
``clock64`` around a dependent chain of loads, cycles per step (SM clock cycles; each step also pays
an address calculation of a few cycles, as in every pointer-chase measurement).  One latency probe is
not one thread: ``chase local array beyond L2`` times every warp of 256 chasing at once (their local
arrays together 5× the L2, so that each step reads DRAM) and reports the median over the warps.

Benchmarks written: memory_stride, memory_offset, memory_tx32, memory_aos_soa, memory_walk,
memory_const, memory_local, memory_latency, memory_latency_sweep.
"""

from __future__ import annotations

import os
import pathlib
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure import cuda_tools  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402

NCU_STRIDES = (1, 2, 4, 8, 16, 32, 64)
NCU_N = 1 << 24


def arguments(ap):
    ap.add_argument("--child", default="", help="internal: what a child process under ncu runs")
    ap.add_argument("--parts", default="", help="comma-separated parts to run (e.g. latency); default: all")


def child(args):
    """Under ncu: one launch of read_strided per stride of NCU_STRIDES at NCU_N elements, in that order."""
    if args.child != "stride_ncu":
        return False
    from numba import cuda

    from course.kernels import memory as mm

    src = cuda.device_array(NCU_N * max(NCU_STRIDES), np.float32)
    out = cuda.device_array(NCU_N, np.float32)
    for s in NCU_STRIDES:
        mm.read_strided[-(-NCU_N // 256), 256](src, out, s)
    cuda.synchronize()
    return True


H = Script(__doc__, "memory", reps=20, arguments=arguments, child=child)
ARGS, GPU, PROV = H.args, H.gpu, H.prov
record = H.record  # record(benchmark, variant, ms, reps, size, dtype, **extra): course.measure.bench's schema


def time_ms(launch, reps):
    """Median ms of ``launch()`` (CUDA events, 5 launches queued per timing: launch overhead hidden); None on the CPU."""
    return H.time_ms(launch, reps, warmup=2, batch=5)


from course import doctor  # noqa: E402
from course.kernels import memory as m  # noqa: E402
from numba import cuda  # noqa: E402

FACTS = doctor.device_facts()
KB, MB = 1 << 10, 1 << 20


def gbps(nbytes, ms):
    return nbytes / ms / 1e6 if ms else None


def first(value):
    return next(iter(value.values())) if isinstance(value, dict) else value


def blocks(n, tpb):
    return -(-n // tpb)


def fail(what):
    raise SystemExit(f"{what}: result differs from the reference; not timing it")


# --- correctness first ---------------------------------------------------------------------------------------


def check_all(rng):
    """Each bandwidth kernel against NumPy on awkward sizes (1, 33, 1025 elements; 17x16, 1x33, 1025x512)."""
    for n in (1, 33, 1025):
        for s in (1, 3, 32):
            src = rng.standard_normal(n * s).astype(np.float32)
            out = np.zeros(n, np.float32)
            m.read_strided[blocks(n, 128), 128](src, out, s)
            if not np.array_equal(out, m.reference_strided(src, n, s)):
                fail(f"read_strided n={n} stride={s}")
        src = rng.standard_normal(n + 40).astype(np.float32)
        m.read_offset[blocks(n, 128), 128](src, out, 7)
        if not np.array_equal(out, m.reference_offset(src, n, 7)):
            fail(f"read_offset n={n}")
        src = rng.standard_normal(128 * 32).astype(np.float32)
        m.read_tx32[blocks(n, 128), 128](src, out)
        if not np.array_equal(out, m.reference_tx32(src, n, 128)):
            fail(f"read_tx32 n={n}")
        p = m.random_particles(n, rng)
        q = m.to_soa(p)
        ref_p, ref_q = m.reference_advance_aos(p, 0.01), m.reference_advance_soa(q, 0.01)
        m.advance_aos[blocks(n, 128), 128](p, np.float32(0.01))
        m.advance_soa[blocks(n, 128), 128](q, np.float32(0.01))
        if not (np.allclose(p, ref_p, atol=1e-6) and np.allclose(q, ref_q, atol=1e-6)):
            fail(f"advance_aos/soa n={n}")
        o = np.zeros(n, np.float32)
        for k, per_lane, args in ((m.const_broadcast, False, ()), (m.const_per_lane, True, ()),
                                  (m.global_per_lane, True, (m.COEFFS.copy(),))):
            k[blocks(n, 64), 64](*args, o, 50)
            if not np.allclose(o, m.reference_const(n, 50, 64, per_lane), rtol=1e-5):
                fail(f"{k} n={n}")
        x = rng.standard_normal(n).astype(np.float32)
        idx = rng.integers(0, 1 << 20, n).astype(np.int32)
        m.local_dynamic[blocks(n, 64), 64](x, idx, o)
        if not np.allclose(o, x * ((idx & 31) + 1)):
            fail(f"local_dynamic n={n}")
        for k in (m.many_live, m.many_live_capped):
            k[blocks(n, 64), 64](x, o, 6)
            if not np.allclose(o, m.reference_many_live(x, 6), rtol=1e-4):
                fail(f"many_live n={n}")
    shapes = [(17, 16), (1, 33), (1025, 512)] if GPU else [(17, 16), (1, 33)]
    for rows, cols in shapes:
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        for k, grid in ((m.walk_rows, (blocks(cols, 32), blocks(rows, 8))),
                        (m.walk_cols, (blocks(rows, 32), blocks(cols, 8)))):
            out2 = np.zeros_like(a)
            k[grid, (32, 8)](a, out2, np.float32(3))
            if not np.array_equal(out2, a * np.float32(3)):
                fail(f"{k} {rows}x{cols}")
    print("bandwidth kernels agree with NumPy")


# --- coalescing --------------------------------------------------------------------------------------------------


def strides_and_offsets(rng):
    n = 1 << 24 if GPU else 256
    tpb = 256
    max_stride = 64
    # on the GPU the source is left uninitialised: its values do not matter to the timing
    src = cuda.device_array(n * max_stride, np.float32) if GPU else rng.standard_normal(n * max_stride).astype(np.float32)
    out = cuda.device_array(n, np.float32) if GPU else np.zeros(n, np.float32)
    strides = range(1, max_stride + 1) if GPU else (1, 2, 8, 32, 64)
    for s in strides:
        ms = time_ms(lambda: m.read_strided[blocks(n, tpb), tpb](src, out, s), ARGS.reps)
        sec = m.sectors_strided(s)
        record("memory_stride", f"stride={s}", ms, ARGS.reps, n, "float32", stride=s, sectors_per_request=sec,
               useful_fraction=m.useful_fraction(sec), gbps=gbps(8 * n, ms),
               gbps_moved=gbps(n * 4 + n // 32 * sec * 32, ms))
    n2 = 1 << 26 if GPU else 256
    src2 = cuda.device_array(n2 + 64, np.float32) if GPU else rng.standard_normal(n2 + 64).astype(np.float32)
    out2 = cuda.device_array(n2, np.float32) if GPU else np.zeros(n2, np.float32)
    for off in (range(0, 33) if GPU else (0, 1, 8)):
        ms = time_ms(lambda: m.read_offset[blocks(n2, tpb), tpb](src2, out2, off), ARGS.reps)
        sec = m.sectors_offset(off)
        record("memory_offset", f"offset={off}", ms, ARGS.reps, n2, "float32", offset=off, sectors_per_request=sec,
               gbps=gbps(8 * n2, ms))
    # seed 002 pitfall 3: the literal threadIdx.x * 32 against the global-index stride 32 of the sweep
    ms = time_ms(lambda: m.read_tx32[blocks(n, tpb), tpb](src, out), ARGS.reps)
    record("memory_tx32", "src[threadIdx.x * 32]", ms, ARGS.reps, n, "float32", sectors_per_request=32,
           distinct_bytes_read=tpb * 32 * 4, gbps=gbps(8 * n, ms))
    ms = time_ms(lambda: m.read_strided[blocks(n, tpb), tpb](src, out, 32), ARGS.reps)
    record("memory_tx32", "src[i * 32] (global index)", ms, ARGS.reps, n, "float32", sectors_per_request=32,
           distinct_bytes_read=n * 32, gbps=gbps(8 * n, ms))
    ms = time_ms(lambda: m.read_strided[blocks(n, tpb), tpb](src, out, 1), ARGS.reps)
    record("memory_tx32", "src[i] (coalesced)", ms, ARGS.reps, n, "float32", sectors_per_request=4,
           distinct_bytes_read=n * 4, gbps=gbps(8 * n, ms))


def layouts(rng):
    n = 1 << 24 if GPU else 256
    tpb = 256
    p = cuda.to_device(m.random_particles(n, rng)) if GPU else m.random_particles(n, rng)
    q = cuda.to_device(m.to_soa(m.random_particles(n, rng))) if GPU else m.to_soa(m.random_particles(n, rng))
    dt = np.float32(1e-6)
    useful = n * 36  # 6 fields read, 3 written, 4 bytes each
    for name, k, arr, sec in (("AoS (n, 8)", m.advance_aos, p, 32), ("SoA (8, n)", m.advance_soa, q, 4)):
        ms = time_ms(lambda: k[blocks(n, tpb), tpb](arr, dt), ARGS.reps)
        record("memory_aos_soa", name, ms, ARGS.reps, n, "float32", struct_bytes=32, sectors_per_request=sec,
               gbps=gbps(useful, ms))
    rows = cols = 8192 if GPU else 64
    a = cuda.to_device(rng.standard_normal((rows, cols)).astype(np.float32)) if GPU else \
        rng.standard_normal((rows, cols)).astype(np.float32)
    out = cuda.device_array((rows, cols), np.float32) if GPU else np.zeros((rows, cols), np.float32)
    for name, k, grid, sec in (("walk_rows (x <-> col)", m.walk_rows, (blocks(cols, 32), blocks(rows, 8)), 4),
                               ("walk_cols (x <-> row)", m.walk_cols, (blocks(rows, 32), blocks(cols, 8)), 32)):
        ms = time_ms(lambda: k[grid, (32, 8)](a, out, np.float32(2)), ARGS.reps)
        record("memory_walk", name, ms, ARGS.reps, rows * cols, "float32", shape=[rows, cols],
               sectors_per_request=sec, gbps=gbps(8 * rows * cols, ms))


def spaces(rng):
    n = 1 << 22 if GPU else 128
    reps = 256 if GPU else 8
    tpb = 256
    out = cuda.device_array(n, np.float32) if GPU else np.zeros(n, np.float32)
    g = cuda.to_device(m.COEFFS.copy()) if GPU else m.COEFFS.copy()
    for name, k, args, addrs in (("const_broadcast", m.const_broadcast, (), 1),
                                 ("const_per_lane", m.const_per_lane, (), 32),
                                 ("global_per_lane", m.global_per_lane, (g,), 32)):
        ms = time_ms(lambda: k[blocks(n, tpb), tpb](*args, out, reps), ARGS.reps)
        record("memory_const", name, ms, ARGS.reps, n, "float32", reads_per_thread=reps,
               addresses_per_warp_read=addrs, reads_per_ns=(n * reps / ms / 1e6) if ms else None,
               gbps=gbps(4 * n * reps, ms))  # bytes the threads read, however they were served
    n2 = 1 << 22 if GPU else 128
    x = cuda.to_device(rng.standard_normal(n2).astype(np.float32)) if GPU else rng.standard_normal(n2).astype(np.float32)
    idx = cuda.to_device(rng.integers(0, 1 << 20, n2).astype(np.int32)) if GPU else \
        rng.integers(0, 1 << 20, n2).astype(np.int32)
    o2 = cuda.device_array(n2, np.float32) if GPU else np.zeros(n2, np.float32)
    iters = 64 if GPU else 2
    for name, k, args in (("local_dynamic", m.local_dynamic, (x, idx, o2)),
                          ("many_live", m.many_live, (x, o2, iters)),
                          ("many_live_capped", m.many_live_capped, (x, o2, iters))):
        ms = time_ms(lambda: k[blocks(n2, tpb), tpb](*args), ARGS.reps)
        regs = first(k.get_regs_per_thread()) if GPU else None
        local = first(k.get_local_mem_per_thread()) if GPU else None
        work = {"tflops": (n2 * iters * 16 * 3 / ms / 1e9) if ms else None} if "many" in name else \
            {"gbps": gbps(12 * n2, ms)}  # many_live: 16 values x (mul + fma) per iteration; local_dynamic: x, idx, out
        record("memory_local", name, ms, ARGS.reps, n2, "float32", regs_per_thread=regs,
               local_bytes_per_thread=local, iters=iters if "many" in name else None, **work)


# --- latency -------------------------------------------------------------------------------------------------


def dev(a):
    return cuda.to_device(a) if GPU else a


def probe(kernel, args, steps, expect):
    """Run a latency probe; check where it ended; return cycles per step (None on the CPU)."""
    out = cuda.device_array(2, np.int64) if GPU else np.zeros(2, np.int64)
    kernel[1, 1](*args, out)
    res = out.copy_to_host() if GPU else out
    if expect is not None and int(res[0]) != int(expect):
        raise SystemExit(f"{kernel}: the chase ended at {int(res[0])}, the host walk at {int(expect)}")
    return float(res[1]) / steps if GPU else None


def sparse_chain(total_words, n_visit, stride, rng):
    """A chain of n_visit random lines in a region of total_words int32, written on the device by scatter."""
    order = m.random_cycle(total_words // stride, rng, visit=n_visit)
    pos = (order * stride).astype(np.int64)
    nxt = cuda.device_array(total_words, np.uint32) if GPU else np.zeros(total_words, np.uint32)
    val = np.roll(pos, -1).astype(np.uint32)
    m.scatter[blocks(len(pos), 256), 256](nxt, dev(pos), dev(val))
    return nxt, pos


def flush_l2():
    """Evict L2 (50 MB on an H200) by copying 256 MB through it."""
    if not GPU:
        return
    n = 1 << 26
    a, b = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)
    m.read_strided[blocks(n, 256), 256](a, b, 1)
    cuda.synchronize()


def latency(rng):
    steps = 16384 if GPU else 64
    line_words = m.LINE // 4
    rows = []

    def add(variant, level, cycles, **extra):
        rows.append(record("memory_latency", variant, None, 1, extra.pop("size", 0), "int32", level=level,
                           cycles_per_step=cycles, steps=steps, **extra))

    xf = dev(np.array([0.3, 0.9, 0.1], np.float32))
    of = cuda.device_array(1, np.float32) if GPU else np.zeros(1, np.float32)
    add("fma dependent chain", "register (FFMA latency)", probe(m.fma_latency, (xf, steps, of), steps, 0))
    # L1: 16 KB of 128-byte lines in random order, one warm lap, default loads
    order = m.random_cycle(16 * KB // m.LINE, rng)
    nxt = m.chain_array(order, line_words, 16 * KB // 4)
    add("chase 16 KB, default loads", "L1", probe(m.chase, (dev(nxt), steps, len(order)), steps,
                                                 order[(len(order) + steps) % len(order)] * line_words), size=16 * KB)
    small = m.chain_array(m.random_cycle(m.CHASE_LOCAL_WORDS, rng), 1, m.CHASE_LOCAL_WORDS)
    add("chase 1 KB local array", "local memory (L1)", probe(m.chase_local, (dev(small), steps), steps,
                                                           m.walk(small, m.CHASE_LOCAL_WORDS + steps)), size=1 * KB)
    rows.append(local_beyond_l2(rng))
    sh = m.chain_array(m.random_cycle(m.CHASE_SHARED_WORDS, rng), 1, m.CHASE_SHARED_WORDS)
    add("chase 16 KB shared array", "shared memory", probe(m.chase_shared, (dev(sh), steps), steps,
                                                         m.walk(sh, steps)),
        size=16 * KB)
    add("chase 1 KB constant array", "constant cache", probe(m.chase_const, (steps,), steps,
                                                           m.walk(m.CHASE_CONST, m.CHASE_CONST_WORDS + steps)),
        size=1 * KB)
    # L2: 4096 lines scattered over 4 MB, one warm lap, ld.global.cg (L1 skipped)
    n_visit = 4096 if GPU else 32
    region = 4 * MB if GPU else 64 * KB
    nxt, pos = sparse_chain(region // 4, n_visit, line_words, rng)
    add("chase_cg 4096 lines in 4 MB, warm", "L2", probe(m.chase_cg, (nxt, steps, n_visit), steps,
                                                         pos[(n_visit + steps) % n_visit]), size=region)
    # HBM: lines never touched since L2 was flushed; no warm lap, fewer steps than lines
    for region, label in (((1 << 30) if GPU else 256 * KB, "1 GB"), ((32 * MB) if GPU else 128 * KB, "32 MB")):
        cold_visit = steps + 1
        total = region // 4
        nxt, pos = sparse_chain(total, min(cold_visit, total // line_words), line_words, rng)
        flush_l2()
        add(f"chase_cg cold lines in {label}", "HBM (cold" + (", TLB misses likely)" if label == "1 GB" else ")"),
            probe(m.chase_cg, (nxt, steps, 0), steps, pos[steps % len(pos)]), size=region)
    del nxt


def local_beyond_l2(rng):
    """``chase local array beyond L2``: every warp chases its own local array, 256 MiB of lines in all (seed 002 §1.2).

    ``m.chase_local_big_kernel`` explains the layout: a thread's word w is line w of its warp's slice, so
    warps × words lines (× 128 bytes) is the footprint; one warm lap, then ``words`` timed steps, each
    reading a line last touched one lap (the whole footprint) earlier.  cycles/step: the median over
    the warps of each warp's clock64 cycles / steps (min and max kept beside it).
    """
    words, nblocks = (m.LOCAL_BIG_WORDS, m.LOCAL_BIG_BLOCKS) if GPU else (64, 4)
    tpb = 32
    warps = nblocks * tpb // 32
    kernel = m.chase_local_big_kernel(words)
    nxt = m.chain_array(m.random_cycle(words, rng), 1, words)
    warm = steps = words
    out = cuda.device_array(2 * warps, np.int64) if GPU else np.zeros(2 * warps, np.int64)
    kernel[nblocks, tpb](dev(nxt), warm, steps, out)
    res = out.copy_to_host() if GPU else out
    expect = m.walk(nxt, warm + steps)
    ends = res[0::2]
    if not (ends == expect).all():
        raise SystemExit(f"chase_local_big: {int((ends != expect).sum())} of {warps} warps ended away from the host "
                         f"walk's {expect}")
    cycles = res[1::2] / steps
    footprint = warps * words * m.LINE  # lines of all warps' slices, whole 128-byte lines
    local = first(kernel.get_local_mem_per_thread()) if GPU else None
    l2 = int(cuda.get_current_device().L2_CACHE_SIZE) if GPU else None
    if l2 and footprint < 4 * l2:
        raise SystemExit(f"chase_local_big: a footprint of {footprint} bytes is under 4x this L2 ({l2} bytes)")
    return record("memory_latency", "chase local array beyond L2", None, 1, footprint, "uint32",
                  level="local memory (DRAM: footprint 5x the L2)", cycles_per_step=float(np.median(cycles)) if GPU else None,
                  cycles_per_step_min=float(cycles.min()) if GPU else None,
                  cycles_per_step_max=float(cycles.max()) if GPU else None, steps=steps, warm_steps=warm,
                  warps=warps, threads_per_block=tpb, words_per_thread=words, footprint_bytes=footprint,
                  l2_bytes=l2, local_bytes_per_thread=local,
                  method="every warp times its own chase; median over warps of clock64 cycles / steps")


def latency_sweep(rng):
    sizes = ([8, 16, 32, 64, 128, 192, 256, 384, 512, 1024, 2048, 4096, 8192, 16384, 24576, 32768, 49152,
              65536, 98304, 131072] if GPU else [8, 16])
    steps = 16384 if GPU else 32
    line_words = m.LINE // 4
    for kb in sizes:
        slots = kb * KB // m.LINE
        order = m.random_cycle(slots, rng)
        nxt = m.chain_array(order, line_words, kb * KB // 4)
        cyc = probe(m.chase, (dev(nxt), steps, slots), steps, order[(slots + steps) % slots] * line_words)
        record("memory_latency_sweep", f"{kb} KB", None, 1, kb * KB, "int32", working_set_bytes=kb * KB,
               cycles_per_step=cyc, steps=steps, loads="default (L1 and L2)")


DEVICE_ATTRIBUTES = (
    "MULTIPROCESSOR_COUNT", "WARP_SIZE", "MAX_THREADS_PER_BLOCK", "MAX_GRID_DIM_X", "MAX_GRID_DIM_Y",
    "MAX_GRID_DIM_Z", "MAX_THREADS_PER_MULTIPROCESSOR", "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "MAX_REGISTERS_PER_BLOCK", "MAX_REGISTERS_PER_MULTIPROCESSOR", "MAX_SHARED_MEMORY_PER_BLOCK",
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", "TOTAL_CONSTANT_MEMORY",
    "L2_CACHE_SIZE", "CLOCK_RATE", "MEMORY_CLOCK_RATE", "GLOBAL_MEMORY_BUS_WIDTH",
)


def device_attributes(rng=None):
    """The device's own numbers (cuDeviceGetAttribute): the facts several seed claims are about."""
    if not GPU:
        record("memory_device", "attributes", None, 0, 0, "-", attributes={})
        return
    dev = cuda.get_current_device()
    attrs = {}
    for name in DEVICE_ATTRIBUTES:
        try:
            attrs[name] = int(getattr(dev, name))
        except Exception as exc:  # an attribute this driver or binding does not know
            attrs[name] = f"unavailable: {exc.__class__.__name__}"
    record("memory_device", "attributes", None, 0, 0, "-", attributes=attrs)


NCU_METRICS = ("dram__bytes_read.sum", "dram__sectors_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
               "gpu__time_duration.sum")


def stride_dram(rng):
    """Nsight Compute on the stride sweep: DRAM bytes actually read per useful byte, stride 1…64 (issue 14 item 7)."""
    if not GPU:
        print("stride_dram: ncu runs on the GPU only")
        return
    launches, text = cuda_tools.ncu_profile([sys.executable, __file__, "--out", str(H.out), "--child", "stride_ncu"],
                                       NCU_METRICS, kernel_regex="read_strided", launch_count=len(NCU_STRIDES))
    H.write_text("memory_stride_ncu.log", text)
    if len(launches) != len(NCU_STRIDES):
        raise RuntimeError(f"ncu returned {len(launches)} launches for {len(NCU_STRIDES)} strides (see memory_stride_ncu.log)")
    for s, L in zip(NCU_STRIDES, launches):
        useful = 4 * NCU_N
        dram = L.get("dram__bytes_read.sum")
        record("memory_stride_ncu", f"stride={s}", (L.get("gpu__time_duration.sum") or 0) / 1e6 or None, 1, NCU_N,
               "float32", stride=s, source="ncu --clock-control none (one launch)",
               dram_bytes_read=dram, dram_sectors_read=L.get("dram__sectors_read.sum"),
               l2_sectors_read_from_l1=L.get("lts__t_sectors_srcunit_tex_op_read.sum"),
               l1_sectors=L.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
               l1_requests=L.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
               useful_bytes=useful, dram_bytes_per_useful_byte=(dram / useful) if dram else None,
               dram_bytes_per_element=(dram / NCU_N) if dram else None,
               metrics=list(NCU_METRICS))
        print(f"ncu stride {s:2d}: DRAM {dram and dram / NCU_N:.1f} bytes per 4-byte element read")


def main():
    t0 = time.time()
    rng = np.random.default_rng(2026)
    print("device:", FACTS.get("device", FACTS["backend"]), "| run", PROV["run"], "| dry run" if not GPU else "")
    check_all(rng)
    failed = []
    steps = (device_attributes, strides_and_offsets, stride_dram, layouts, spaces, latency, latency_sweep)
    if ARGS.parts:
        unknown = set(ARGS.parts.split(",")) - {f.__name__ for f in steps}
        if unknown:
            raise SystemExit(f"--parts: no part named {', '.join(sorted(unknown))}; the parts: "
                             f"{', '.join(f.__name__ for f in steps)}")
        steps = tuple(f for f in steps if f.__name__ in ARGS.parts.split(","))
    for step in steps:
        t = time.time()
        try:  # one failing part (say, a probe that does not compile) must not lose the others' records
            step(rng)
        except Exception:
            traceback.print_exc()
            failed.append(step.__name__)
        print(f"{step.__name__}: {time.time() - t:.1f} s")
    for part in failed:
        H.failed[part] = "raised (traceback above)"
    H.save()
    out = H.out
    RECORDS = {b.benchmark: b.records for b in H.benches.values()}
    print(f"\n{'benchmark':21} {'variant':36} {'ms':>9}  extra")
    for name, recs in RECORDS.items():
        for r in recs:
            ms = "—" if r["ms"] is None else f"{r['ms']:.4f}"
            extra = {k: (round(r[k], 1) if isinstance(r[k], float) else r[k])
                     for k in ("gbps", "sectors_per_request", "cycles_per_step", "regs_per_thread",
                               "local_bytes_per_thread", "reads_per_ns") if r.get(k) is not None}
            print(f"{name:21} {r['variant']:36} {ms:>9}  {extra}")
    print(f"wrote {sum(map(len, RECORDS.values()))} records to {out} in {time.time() - t0:.1f} s")
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)} (tracebacks above)")


if __name__ == "__main__":
    main()
