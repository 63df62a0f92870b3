"""Chapter 08 on the H200: host↔device bandwidth, small copies, streams overlapping copies and kernels, zero-copy.

    python scripts/gpu/bench_transfers.py --out DIR            # on the GPU: DIR/transfers.json
    python scripts/gpu/bench_transfers.py --dry-run --out DIR  # on the CPU: tiny sizes, checks only, no timing

One process, one ``run`` id, every time from CUDA events (host clocks only for allocation costs,
labelled ``timer: host``).

1. **Bandwidth by size**: host→device and device→host copies of 4 KB … 1 GB from pageable
   (``np.empty``) and pinned (``cuda.pinned_array``, 锁页内存) host memory, and one pageable array
   pinned for the copy with ``cuda.pinned``; device→device copies as the device's own memory
   bandwidth (bytes read + written).  The PCIe link nvidia-smi reports is recorded beside them.
2. **Many small copies vs one large**: 64 MB from pinned memory as 1, 16, 256, 4096 and 16384 copies.
3. **Streams**: 256 MB through ``busy`` (its ``iters`` calibrated so one chunk's kernel takes about as
   long as the chunk's copy): serially on one stream, then in 8 chunks over 1, 2, 4 and 8 streams.
   For 4 streams every chunk's copy in, kernel and copy out are bracketed by events, and each
   event's time relative to a start event is recorded (``variant: timeline``), so the chapter can
   draw the timeline from the record.
4. **Zero-copy (mapped) memory**: ``scale`` and ``reread`` (8 passes) reading a ``cuda.mapped_array``
   directly, against the same kernels on a device copy (with the copy's time counted too).
5. Pinned allocation cost against ``np.empty`` (host clock).

Every kernel result is compared with its NumPy reference before anything is timed.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure import bench  # noqa: E402
from course.measure.bench import BenchError  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402

H = Script(__doc__, "transfers", reps=7)
ARGS, GPU, OUT, T0, log = H.args, H.gpu, H.out, H.t0, H.log

from numba import cuda  # noqa: E402

from course.kernels import transfers as TR  # noqa: E402

RNG = np.random.default_rng()
BENCH = H.bench("transfers")
FAILED = H.failed
THREADS = 256
F32 = np.dtype(np.float32)

if GPU:
    SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30]
    SMALL_TOTAL = 64 << 20
    SMALL_COUNTS = [1, 16, 256, 4096, 16384]
    PIPE_N = 64 << 20  # elements: 256 MB of float32
    PIPE_CHUNKS = 8
    MAPPED_N = 64 << 20
else:
    SIZES = [4 << 10, 64 << 10]
    SMALL_TOTAL = 64 << 10
    SMALL_COUNTS = [1, 16]
    PIPE_N = 4 * 1024
    PIPE_CHUNKS = 4
    MAPPED_N = 8 * 4099


def part(name):
    """Run one part; a failure is recorded and the script goes on to the next part."""
    def wrap(fn):
        log(f"--- {name}")
        try:
            fn()
        except Exception as e:
            FAILED[name] = f"{type(e).__name__}: {e}"
            log(f"FAILED {name}: {FAILED[name][:400]}")
        return fn
    return wrap


def timed(variant, fn, *, size, bytes_moved=None, reps=None, warmup=2, **extra):
    """Time ``fn`` with CUDA events (nothing on the CPU) and record it."""
    times = None if not GPU else bench.time_ms(fn, reps=reps or ARGS.reps, warmup=warmup)
    rec = BENCH.record(variant, times, size=size, dtype="float32", bytes_moved=bytes_moved, **extra)
    if rec.get("ms") is not None:
        g = f"{rec['gbps']:8.1f} GB/s" if rec.get("gbps") else ""
        log(f"  {variant:28s} {str(size):>14s} {rec['ms']:9.3f} ms {g}")
    return rec


def pcie_link():
    """What nvidia-smi says about the PCIe link (generation and width, current and maximum)."""
    fields = "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        vals = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")] if r.returncode == 0 else []
        return dict(zip(fields.split(","), vals)) if vals else {"error": r.stderr.strip()[:200]}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def engines():
    """Copy engines and concurrency the device reports (numba device attributes), or the error."""
    out = {}
    if not GPU:
        return out
    dev = cuda.get_current_device()
    for name in ("ASYNC_ENGINE_COUNT", "CONCURRENT_KERNELS", "CAN_MAP_HOST_MEMORY", "UNIFIED_ADDRESSING"):
        try:
            out[name] = int(getattr(dev, name))
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"[:120]
    return out


LINK = pcie_link() if GPU else {}
ENGINES = engines()
if ENGINES:
    log(f"device: {ENGINES}")
    H.record("transfers", "device_engines", None, 0, [0], "none", **ENGINES,
             note="numba device attributes: ASYNC_ENGINE_COUNT is the number of copy engines (DMA) the driver reports")
if LINK:
    log(f"PCIe link as nvidia-smi reports it: {LINK}")


# --- 1. bandwidth by size ------------------------------------------------------------------------------------


@part("bandwidth by size")
def bandwidth():
    big = max(SIZES) // F32.itemsize
    pageable = np.full(big, 1.5, np.float32)  # touched, so the first copy does not pay for page faults
    pinned = cuda.pinned_array(big, np.float32)
    pinned[:] = 1.5
    back_pageable = np.empty_like(pageable)
    back_pinned = cuda.pinned_array(big, np.float32)
    d = cuda.device_array(big, np.float32)
    d2 = cuda.device_array(big, np.float32)
    # check once: what goes over and comes back is what was sent
    src = RNG.standard_normal(1024).astype(np.float32)
    pinned[:1024] = src
    d[:1024].copy_to_device(pinned[:1024])
    d[:1024].copy_to_host(back_pageable[:1024])
    if not np.array_equal(back_pageable[:1024], src):
        raise BenchError("host→device→host round trip changed the data")
    pinned[:1024] = 1.5
    for nbytes in SIZES:
        n = nbytes // F32.itemsize
        dv, dv2 = d[:n], d2[:n]
        hp, hq, bp, bq = pageable[:n], pinned[:n], back_pageable[:n], back_pinned[:n]
        reps = ARGS.reps if nbytes >= (1 << 20) else 30
        common = dict(size=(nbytes,), bytes_moved=nbytes, reps=reps, link=LINK)
        timed("h2d_pageable", lambda: dv.copy_to_device(hp), memory="pageable", direction="h2d", **common)
        timed("h2d_pinned", lambda: dv.copy_to_device(hq), memory="pinned", direction="h2d", **common)
        timed("d2h_pageable", lambda: dv.copy_to_host(bp), memory="pageable", direction="d2h", **common)
        timed("d2h_pinned", lambda: dv.copy_to_host(bq), memory="pinned", direction="d2h", **common)
        # the device's own memory: a copy reads and writes every byte
        timed("d2d", lambda: dv2.copy_to_device(dv), memory="device", direction="d2d",
              **dict(common, bytes_moved=2 * nbytes), note="bytes read + written")
        # the copies themselves: asynchronous copies on one stream, queued behind a sleeping kernel so the
        # events see the copy engine's time only; the host's cost of issuing one copy is its own figure
        if GPU:
            st = cuda.stream()
            for variant, fn, moved in (
                    ("h2d_pinned_queued", lambda: dv.copy_to_device(hq, stream=st), nbytes),
                    ("d2h_pinned_queued", lambda: dv.copy_to_host(bq, stream=st), nbytes),
                    ("d2d_queued", lambda: dv2.copy_to_device(dv, stream=st), 2 * nbytes)):
                times = bench.time_queued(fn, reps=reps, stream=st)
                host = bench.host_ms(fn, calls=20)
                rec = BENCH.record(variant, times, size=(nbytes,), dtype="float32", bytes_moved=moved, link=LINK,
                                   memory=variant.split("_")[1] if "pinned" in variant else "device",
                                   direction=variant.split("_")[0], timer="events on the copy's stream, queued",
                                   host_issue_ms=host, note="GPU time of the copy alone (copies queued behind a "
                                   "sleeping kernel); host_issue_ms: host time to issue one asynchronous copy")
                log(f"  {variant:28s} {nbytes:>14d} {rec['ms']:9.4f} ms {rec['gbps']:8.1f} GB/s; host issue {host:.4f} ms")
            # numba's per-call overhead alone: launching an empty kernel, host clock
            if nbytes == SIZES[0]:
                tiny_in, tiny_out = dv[:32], dv2[:32]
                TR.scale[1, 32](tiny_in, tiny_out, np.float32(1))  # compiled and loaded before the clock starts
                cuda.synchronize()
                host_launch = bench.host_ms(lambda: TR.scale[1, 32](tiny_in, tiny_out, np.float32(1)), calls=50)
                H.record("transfers", "host_overhead_kernel_launch", host_launch, 50, [32], "float32", timer="host",
                         note="host milliseconds to issue one numba kernel launch (no synchronisation)")
    # an existing pageable array pinned for the duration of the copies
    n = max(SIZES) // F32.itemsize
    with cuda.pinned(pageable):
        timed("h2d_pinned_context", lambda: d[:n].copy_to_device(pageable[:n]), size=(n * 4,), bytes_moved=n * 4,
              memory="pageable pinned with cuda.pinned()", direction="h2d", link=LINK)


# --- 2. many small copies vs one large ------------------------------------------------------------------------


@part("many small copies")
def small_copies():
    n_total = SMALL_TOTAL // F32.itemsize
    host = cuda.pinned_array(n_total, np.float32)
    host[:] = RNG.standard_normal(n_total).astype(np.float32)
    d = cuda.device_array(n_total, np.float32)
    for count in SMALL_COUNTS:
        pieces = TR.chunks(n_total, count)
        views = [(d[a:b], host[a:b]) for a, b in pieces]  # made once: slicing is host work, not copying

        def copy_all(views=views):
            for dv, hv in views:
                dv.copy_to_device(hv)

        copy_all()
        if not np.array_equal(d.copy_to_host(), host):
            raise BenchError(f"{count} copies: the device array differs from the host array")
        rec = timed(f"h2d_pinned_{count}_copies", copy_all, size=(SMALL_TOTAL,), bytes_moved=SMALL_TOTAL,
                    reps=5, warmup=1, copies=count, bytes_per_copy=SMALL_TOTAL // count)
        if rec.get("ms") is not None:
            rec["us_per_copy"] = rec["ms"] * 1e3 / count


# --- 3. streams: overlap copies with kernels --------------------------------------------------------------------


def check_busy(x, out, iters):
    ref = TR.busy_reference(x, iters)
    # float32 rounding: each step adds at most ~2 ulp of a value below 2 in magnitude
    tol = 4 * (iters + 1) * 2.0 ** -24 * (np.abs(ref).max() + 1)
    err = np.abs(out.astype(np.float64) - ref)
    if not np.all(err <= tol):
        raise BenchError(f"busy: {int((~(err <= tol)).sum())} elements off the reference by more than {tol:.1e}")


@part("streams and overlap")
def streams():
    n = PIPE_N
    h_in = cuda.pinned_array(n, np.float32)
    h_in[:] = RNG.standard_normal(n).astype(np.float32)
    h_out = cuda.pinned_array(n, np.float32)
    d_in = cuda.device_array(n, np.float32)
    d_out = cuda.device_array(n, np.float32)
    pieces = TR.chunks(n, PIPE_CHUNKS)
    chunk = pieces[0][1] - pieces[0][0]
    # calibrate: one chunk's kernel about as long as one chunk's host→device copy
    iters = 64
    if GPU:
        copy_ms = float(np.median(bench.time_ms(lambda: d_in[:chunk].copy_to_device(h_in[:chunk]), reps=5)))
        blocks = TR.blocks_for(chunk, THREADS)
        k_ms = float(np.median(bench.time_ms(lambda: TR.busy[blocks, THREADS](d_in[:chunk], d_out[:chunk], 256), reps=5)))
        iters = int(max(16, min(100000, 256 * copy_ms / k_ms)))
        log(f"  chunk of {chunk * 4 >> 20} MB: copy {copy_ms:.3f} ms, busy(256) {k_ms:.3f} ms -> iters = {iters}")
    views = [(d_in[a:b], d_out[a:b], h_in[a:b], h_out[a:b], TR.blocks_for(b - a, THREADS)) for a, b in pieces]

    def serial():
        d_in.copy_to_device(h_in)
        TR.busy[TR.blocks_for(n, THREADS), THREADS](d_in, d_out, iters)
        d_out.copy_to_host(h_out)

    pools = {k: [cuda.stream() for _ in range(k)] for k in (1, 2, 4, 8)}

    def pipelined(k, marks=None):
        TR.pipeline(h_in, h_out, d_in, d_out, pools[k], PIPE_CHUNKS, iters, THREADS, marks=marks)

    # checks: every variant gives the NumPy answer
    serial()
    cuda.synchronize()
    check_busy(h_in, h_out, iters)
    for k in pools:
        h_out[:] = np.nan
        pipelined(k)
        cuda.synchronize()
        check_busy(h_in, h_out, iters)
    total = 2 * n * 4
    common = dict(size=(n * 4,), bytes_moved=total, iters=iters, chunks=PIPE_CHUNKS, reps=5, warmup=1)
    serial_rec = timed("serial_one_stream", serial, streams=0, **common,
                       note="copy in, kernel, copy out, one after another on the default stream")
    for k in pools:
        timed(f"pipelined_{k}_streams", lambda k=k: pipelined(k), streams=k, **common)
    # the pieces, measured alone, for the ideal overlap
    if GPU:
        di, do, hi, ho, blocks = views[0]
        parts = {
            "h2d": float(np.median(bench.time_ms(lambda: di.copy_to_device(hi), reps=5))),
            "kernel": float(np.median(bench.time_ms(lambda: TR.busy[blocks, THREADS](di, do, iters), reps=5))),
            "d2h": float(np.median(bench.time_ms(lambda: do.copy_to_host(ho), reps=5))),
        }
        BENCH.record("chunk_parts", [sum(parts.values())], size=(chunk * 4,), dtype="float32", parts_ms=parts,
                     iters=iters, note="one chunk's copy in, kernel and copy out, each timed alone")
        # the timeline of one 4-stream run, every event relative to a start event on the default stream
        k = 4
        marks = [[cuda.event(timing=True) for _ in range(4)] for _ in views]
        start, stop = cuda.event(timing=True), cuda.event(timing=True)
        pipelined(k)  # warm
        cuda.synchronize()
        start.record()
        pipelined(k, marks)
        stop.record()
        stop.synchronize()
        events = []
        for ci, m in enumerate(marks):
            t = [cuda.event_elapsed_time(start, e) for e in m]
            for op, (a, b) in zip(("h2d", "kernel", "d2h"), zip(t[:-1], t[1:])):
                events.append({"chunk": ci, "stream": ci % k, "op": op, "start_ms": a, "end_ms": b})
        total_ms = cuda.event_elapsed_time(start, stop)
        check_busy(h_in, h_out, iters)
        BENCH.record("timeline", [total_ms], size=(n * 4,), dtype="float32", bytes_moved=total, streams=k, engines=ENGINES,
                     chunks=PIPE_CHUNKS, iters=iters, events=events, serial_ms=serial_rec.get("ms"),
                     note="events recorded on each stream before and after each operation; an interval is "
                          "when the stream reached the first event until the operation completed, so it "
                          "includes waiting for a copy engine another stream holds")
        log(f"  timeline: {len(events)} intervals over {total_ms:.3f} ms (serial {serial_rec.get('ms')})")


# --- 4. zero-copy (mapped) memory ---------------------------------------------------------------------------------


@part("mapped memory")
def mapped():
    n = MAPPED_N
    passes = 8
    x = RNG.standard_normal(n).astype(np.float32)
    h_map = cuda.mapped_array(n, np.float32)  # page-locked host memory the GPU can address directly
    h_map[:] = x
    h_pin = cuda.pinned_array(n, np.float32)
    h_pin[:] = x
    d_x = cuda.device_array(n, np.float32)
    d_out = cuda.device_array(n, np.float32)
    blocks = TR.blocks_for(n, THREADS)
    factor = np.float32(1.5)
    # checks
    TR.scale[blocks, THREADS](h_map, d_out, factor)
    if not np.array_equal(d_out.copy_to_host(), TR.scale_reference(x, factor)):
        raise BenchError("scale on mapped memory differs from NumPy")
    TR.reread[blocks, THREADS](h_map, d_out, passes)
    ref = TR.reread_reference(x, passes)
    got = d_out.copy_to_host()
    if not np.all(np.abs(got - ref) <= passes * 2.0 ** -23 * (np.abs(x).max() * passes)):
        raise BenchError("reread on mapped memory differs from NumPy")
    d_x.copy_to_device(h_pin)
    common = dict(size=(n * 4,), reps=5, warmup=1)
    timed("scale_mapped", lambda: TR.scale[blocks, THREADS](h_map, d_out, factor), bytes_moved=n * 4,
          memory="mapped", reads_per_element=1, **common, note="bytes moved: the input read across PCIe once")
    timed("scale_copy_then_device", lambda: (d_x.copy_to_device(h_pin), TR.scale[blocks, THREADS](d_x, d_out, factor)),
          bytes_moved=n * 4, memory="pinned + device", reads_per_element=1, **common,
          note="explicit copy of the input, then the kernel on device memory")
    timed("scale_device", lambda: TR.scale[blocks, THREADS](d_x, d_out, factor), bytes_moved=2 * n * 4,
          memory="device", reads_per_element=1, **common, note="bytes read + written in device memory")
    timed(f"reread{passes}_mapped", lambda: TR.reread[blocks, THREADS](h_map, d_out, passes),
          bytes_moved=passes * n * 4, memory="mapped", reads_per_element=passes, **common)
    timed(f"reread{passes}_copy_then_device",
          lambda: (d_x.copy_to_device(h_pin), TR.reread[blocks, THREADS](d_x, d_out, passes)),
          bytes_moved=passes * n * 4, memory="pinned + device", reads_per_element=passes, **common)


# --- 5. what pinned memory costs to get ---------------------------------------------------------------------------


@part("allocation cost")
def allocation():
    nbytes = max(SIZES)
    n = nbytes // 4
    for name, what, alloc in (("alloc_numpy_empty", "np.empty", lambda: np.empty(n, np.float32)),
                              ("alloc_numpy_touched", "np.full (pages touched)", lambda: np.full(n, 1.0, np.float32)),
                              ("alloc_pinned_array", "cuda.pinned_array", lambda: cuda.pinned_array(n, np.float32)),
                              ("alloc_mapped_array", "cuda.mapped_array", lambda: cuda.mapped_array(n, np.float32))):
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            arr = alloc()
            ts.append((time.perf_counter() - t) * 1e3)
            del arr
        rec = BENCH.record(name, ts if GPU else None,
                           size=(nbytes,), dtype="float32", timer="host", allocator=what,
                           note="host clock around the allocation (no GPU work involved)")
        if rec.get("ms") is not None:
            log(f"  {what:24s} {nbytes >> 20} MB: {rec['ms']:8.2f} ms")


# --- save and summarise ------------------------------------------------------------------------------------------

path = H.save()[0]
print()
print(f"{'variant':30s} {'bytes':>12s} {'ms':>9s} {'GB/s':>8s}")
for r in BENCH.records:
    if "size" not in r or r["variant"] == "timeline":
        continue
    ms = r.get("ms")
    g = r.get("gbps")
    print(f"{r['variant']:30s} {r['size'][0]:12d} {('%9.3f' % ms) if ms is not None else '        -'} "
          f"{('%8.1f' % g) if g else '       -'}")
print(f"{len(BENCH.records)} records -> {path}; {len(FAILED)} failed parts; run {bench.run_id()}; {time.time() - T0:.0f} s")
sys.exit(1 if FAILED else 0)
