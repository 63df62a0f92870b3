"""Chapter 11 on every GPU of the machine: peers, copies between devices, split reduction and transpose, NCCL.

    python scripts/gpu/multi_gpu.py --out DIR             # on the GPU(s): DIR/multi_gpu.json (~1 min)
    python scripts/gpu/multi_gpu.py --dry-run --out DIR   # on the CPU: 2 simulated devices, checks only

One process, one run id; every record carries ``device_count`` (how many GPUs the machine has) beside
the usual provenance, and ``devices`` (how many of them the measurement used).

1. **peers**: ``can_access_peer(i, j)`` for every ordered pair.
2. **copies** of 256 MiB: on one device (device-to-device, the reference), device ``i`` → ``j`` directly
   after ``enable_peer_access`` (NVLink or PCIe peer-to-peer), and ``i`` → host → ``j`` through a pinned
   buffer; on one GPU only the first and the host round trip exist.  Each copy is timed with CUDA events
   on the destination's stream (host round trip: wall clock around both synchronised halves).
3. **split reduction** of 2^30 float32 (4 GiB) over k = 1 … N devices: the shares are placed first (not
   timed); then every device reduces its share on its own stream (chapter 07's ``two_pass``), and the k
   partial sums are combined on the host.  Recorded: wall time of the launches until every device is
   done, each device's own event time, and the combine's time apart.  Checked exactly first (small
   integers).
4. **split transpose** of 16384² int32 over k devices (chapter 05's [32][33] tile per band), the gather
   of the column bands to the host timed apart.
5. **all-reduce** of 256 MiB float32 per device through NCCL (CuPy's ``cupy.cuda.nccl``, one
   communicator per device in this process), against the same sum done by hand with peer copies to
   device 0, an add there, and copies back.  One device: NCCL runs a 1-rank all-reduce (a local copy).

NVLink multicast stays off (NCCL_NVLS_ENABLE=0): on a shared host it can take the GPUs out of service.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

for key, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                   ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[key] = value


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for multi_gpu.json")
    ap.add_argument("--dry-run", action="store_true", help="CPU backend, 2 simulated devices, checks only")
    ap.add_argument("--reps", type=int, default=15, help="timed repetitions (median reported)")
    return ap.parse_args()


ARGS = parse()
if ARGS.dry_run:
    os.environ["COURSE_BACKEND"] = "cpu"

import numpy as np  # noqa: E402

import course  # noqa: E402  (chooses the backend before numba)
from course import bench, multigpu  # noqa: E402
from course.kernels import multi_gpu as M  # noqa: E402
from numba import cuda  # noqa: E402

GPU = course.on_gpu()
if not GPU:
    multigpu.simulate(2)
N = multigpu.device_count()
B = bench.Bench("multi_gpu", dry_run=not GPU)
T0 = time.perf_counter()
ERRORS: list = []


def log(msg):
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def rec(variant, times, *, size, dtype, devices, **extra):
    return B.record(variant, times, size=size, dtype=dtype, device_count=N, devices=devices, **extra)


def sync_all(k):
    for d in range(k):
        with cuda.gpus[d]:
            cuda.synchronize()


def wall_ms(fn, k, reps):
    """Median-ready list of wall milliseconds of ``fn`` until devices 0..k-1 are all done."""
    fn()
    sync_all(k)
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync_all(k)
        out.append((time.perf_counter() - t) * 1e3)
    return out


def event_ms(fn, dev, reps, batch=10):
    """Event milliseconds per call of ``fn`` on device ``dev``'s default stream.

    ``batch`` calls run between the two events, so that numba's host-side work for one call (tens of
    microseconds) overlaps the GPU's work on the previous one instead of being counted as GPU time.
    """
    with cuda.gpus[dev]:
        fn()
        cuda.synchronize()
        out = []
        for _ in range(reps):
            start, stop = cuda.event(), cuda.event()
            start.record()
            for _ in range(batch):
                fn()
            stop.record()
            stop.synchronize()
            out.append(cuda.event_elapsed_time(start, stop) / batch)
    return out


# --- 1. peers --------------------------------------------------------------------------------------------------
log(f"{N} device(s)")
peers = {f"{i}->{j}": multigpu.can_access_peer(i, j) for i in range(N) for j in range(N) if i != j}
rec("peers", None, size=[N], dtype="none", devices=N, peers=peers)

# --- checks first ----------------------------------------------------------------------------------------------
for k in range(1, N + 1):
    try:
        M.check_split(k)
        log(f"split reduction and transpose over {k} device(s): equal to NumPy")
    except AssertionError as exc:
        ERRORS.append(str(exc))
        log(f"CHECK FAILED: {exc}")

# --- 2. copies ------------------------------------------------------------------------------------------------
COPY_BYTES = 256 * 2**20 if GPU else 2**12
n_copy = COPY_BYTES // 4
host = np.arange(n_copy, dtype=np.float32)
bufs = []
for d in range(N):
    with cuda.gpus[d]:
        bufs.append((cuda.to_device(host), cuda.device_array(n_copy, np.float32)))
    if multigpu.device_of(bufs[d][0]) != d:
        ERRORS.append(f"device_of says {multigpu.device_of(bufs[d][0])} for an array made on device {d}")
if GPU:
    with cuda.gpus[0]:
        src, dst = bufs[0]
        t = event_ms(lambda: dst.copy_to_device(src), 0, ARGS.reps)
        rec("copy_same_device", t, size=[COPY_BYTES], dtype="uint8", devices=1, bytes_moved=2 * COPY_BYTES,
            note="read + write on one device (GB/s counts both); 10 copies queued between the events")
        # is that copy the GPU's time or numba's? the host time to issue one copy, and CuPy's copy of the same bytes
        rec("copy_same_device_host", None, size=[COPY_BYTES], dtype="uint8", devices=1,
            host_ms_per_call=bench.host_ms(lambda: dst.copy_to_device(src), calls=20),
            note="host milliseconds numba needs to issue one device-to-device copy (no synchronisation)")
        try:
            import cupy as cp

            c_src, c_dst = cp.asarray(src), cp.asarray(dst)
            rec("copy_same_device_cupy", bench.time_ms(lambda: c_dst.__setitem__(Ellipsis, c_src), reps=ARGS.reps,
                                                       timer="cupy", batch=10),
                size=[COPY_BYTES], dtype="uint8", devices=1, bytes_moved=2 * COPY_BYTES,
                note="the same buffers copied by CuPy (its events, 10 copies queued between them)")
        except ImportError:
            log("CuPy missing: no reference copy")
        pinned = cuda.pinned_array(n_copy, np.float32)

        def round_trip():
            src.copy_to_host(pinned)
            dst.copy_to_device(pinned)

        rec("copy_via_host_same_device", wall_ms(round_trip, 1, ARGS.reps), size=[COPY_BYTES], dtype="uint8",
            devices=1, bytes_moved=COPY_BYTES, note="device 0 -> pinned host -> device 0, GB/s of the payload")
for i in range(N):
    for j in range(N):
        if i == j:
            continue
        src, dst = bufs[i][0], bufs[j][1]
        direct = multigpu.enable_peer_access(j, i) and multigpu.enable_peer_access(i, j)

        def peer_copy(src=src, dst=dst, j=j):
            with cuda.gpus[j]:
                dst.copy_to_device(src)

        peer_copy()
        ok = np.array_equal(dst.copy_to_host(), host)
        if not ok:
            ERRORS.append(f"copy {i}->{j} wrong")
        if GPU:
            rec(f"copy_peer_{i}to{j}", event_ms(peer_copy, j, ARGS.reps), size=[COPY_BYTES], dtype="uint8",
                devices=2, bytes_moved=COPY_BYTES, peer_access=direct)
            pinned = cuda.pinned_array(n_copy, np.float32)

            def via_host(src=src, dst=dst, i=i, j=j, pinned=pinned):
                with cuda.gpus[i]:
                    src.copy_to_host(pinned)
                with cuda.gpus[j]:
                    dst.copy_to_device(pinned)

            rec(f"copy_via_host_{i}to{j}", wall_ms(via_host, N, ARGS.reps), size=[COPY_BYTES], dtype="uint8",
                devices=2, bytes_moved=COPY_BYTES)
del bufs

# --- 3. split reduction -----------------------------------------------------------------------------------------
n_red = 2**30 if GPU else 2**14
a = (np.arange(n_red, dtype=np.int64) % 7 - 3).astype(np.float32)   # exact in float32 at this size
expected = float(a.astype(np.float64).sum())
for k in range(1, N + 1):
    parts = M.place_rows(a, k)
    outs = M.reduce_parts(parts)
    got = M.combine(outs)
    if got != expected:
        ERRORS.append(f"split sum over {k}: {got} != {expected}")
        continue
    if not GPU:
        rec(f"reduce_split_{k}", None, size=[n_red], dtype="float32", devices=k)
        continue
    launch = lambda parts=parts: M.reduce_parts(parts)  # noqa: E731
    rec(f"reduce_split_{k}", wall_ms(launch, k, ARGS.reps), size=[n_red], dtype="float32", devices=k,
        bytes_moved=n_red * 4, what="wall: launches on every device until all are done")
    for d in range(k):
        v = M.R.REDUCTION_VERSIONS[M.REDUCTION]
        with cuda.gpus[d]:
            out = cuda.device_array(1, np.float32)
            run = v.launcher(parts[d], out)
        rec(f"reduce_split_{k}_dev{d}", event_ms(run, d, ARGS.reps), size=[int(parts[d].shape[0])],
            dtype="float32", devices=k, bytes_moved=int(parts[d].shape[0]) * 4, what="one device's events")
    rec(f"reduce_combine_{k}", wall_ms(lambda outs=outs: M.combine(outs), k, ARGS.reps), size=[k],
        dtype="float32", devices=k, what="copy k partial sums to the host and add them")
    del parts, outs
del a

# --- 4. split transpose -------------------------------------------------------------------------------------------
shape = (16384, 16384) if GPU else (68, 100)
m = np.random.default_rng(7).integers(0, 2**31 - 1, shape, dtype=np.int64).astype(np.int32)
for k in range(1, N + 1):
    parts = M.place_rows(m, k)
    outs = M.transpose_parts(parts)
    if not np.array_equal(M.gather_columns(outs), m.T):
        ERRORS.append(f"split transpose over {k} devices wrong")
        continue
    if not GPU:
        rec(f"transpose_split_{k}", None, size=list(shape), dtype="int32", devices=k)
        continue
    rec(f"transpose_split_{k}", wall_ms(lambda parts=parts: M.transpose_parts(parts), k, ARGS.reps),
        size=list(shape), dtype="int32", devices=k, bytes_moved=bench.transpose_bytes(shape, "int32"))
    bands = []
    for d, out in enumerate(outs):
        with cuda.gpus[d]:
            bands.append(cuda.pinned_array(out.shape, out.dtype))

    def gather(outs=outs, bands=bands):
        for d, out in enumerate(outs):
            with cuda.gpus[d]:
                out.copy_to_host(bands[d])

    rec(f"transpose_gather_{k}", wall_ms(gather, k, 5), size=list(shape), dtype="int32", devices=k,
        bytes_moved=m.nbytes, what="copy every column band into pinned host memory (assembling them is host work)")
    del parts, outs
del m

# --- 5. all-reduce: NCCL vs by hand ---------------------------------------------------------------------------------
if GPU:
    try:
        import cupy as cp
        from cupy.cuda import nccl

        n_ar = 64 * 2**20  # 256 MiB of float32 per device
        comms = nccl.NcclCommunicator.initAll(list(range(N)))
        sends, recvs, streams = [], [], []
        for d in range(N):
            with cp.cuda.Device(d):
                sends.append(cp.full(n_ar, d + 1, dtype=cp.float32))
                recvs.append(cp.empty(n_ar, dtype=cp.float32))
                streams.append(cp.cuda.Stream(non_blocking=True))

        def all_reduce():
            nccl.groupStart()
            for d in range(N):
                with cp.cuda.Device(d):
                    comms[d].allReduce(sends[d].data.ptr, recvs[d].data.ptr, n_ar, nccl.NCCL_FLOAT32,
                                       nccl.NCCL_SUM, streams[d].ptr)
            nccl.groupEnd()
            for d in range(N):
                streams[d].synchronize()

        all_reduce()
        want = N * (N + 1) / 2
        for d in range(N):
            with cp.cuda.Device(d):
                if float(recvs[d][0]) != want or float(recvs[d][-1]) != want:
                    ERRORS.append(f"nccl all-reduce wrong on device {d}")
        times = []
        for _ in range(ARGS.reps):
            t = time.perf_counter()
            all_reduce()
            times.append((time.perf_counter() - t) * 1e3)
        ms = statistics.median(times)
        busbw = 2 * (N - 1) / N * n_ar * 4 / (ms * 1e-3) / 1e9 if N > 1 else None
        rec("allreduce_nccl", times, size=[n_ar], dtype="float32", devices=N, bytes_moved=n_ar * 4,
            busbw_gbps=busbw, nccl_version=nccl.get_version(), what="wall, all streams synchronised")

        def by_hand():
            with cp.cuda.Device(0):
                acc = sends[0].copy()
                for d in range(1, N):
                    tmp = cp.empty_like(acc)
                    cp.cuda.runtime.memcpyPeer(tmp.data.ptr, 0, sends[d].data.ptr, d, n_ar * 4)
                    acc += tmp
            for d in range(N):
                if d == 0:
                    recvs[0][...] = acc
                else:
                    cp.cuda.runtime.memcpyPeer(recvs[d].data.ptr, d, acc.data.ptr, 0, n_ar * 4)
            for d in range(N):
                with cp.cuda.Device(d):
                    cp.cuda.Device(d).synchronize()

        by_hand()
        for d in range(N):
            with cp.cuda.Device(d):
                if float(recvs[d][0]) != want:
                    ERRORS.append(f"all-reduce by hand wrong on device {d}")
        times = []
        for _ in range(ARGS.reps):
            t = time.perf_counter()
            by_hand()
            times.append((time.perf_counter() - t) * 1e3)
        rec("allreduce_by_hand", times, size=[n_ar], dtype="float32", devices=N, bytes_moved=n_ar * 4,
            what="peer copies to device 0, add, peer copies back; wall")
    except Exception as exc:  # NCCL missing or failing: record why, the rest stands
        ERRORS.append(f"all-reduce: {type(exc).__name__}: {exc}")
        log(f"all-reduce not measured: {exc}")

for r in B.records:
    if r.get("ms") is not None:
        log(f"{r['variant']:28} {r['ms']:9.3f} ms  {r.get('gbps') or '':>10}")
path = B.save(pathlib.Path(ARGS.out) / "multi_gpu.json")
log(f"wrote {len(B.records)} records to {path.name}; errors: {ERRORS or 'none'}")
sys.exit(1 if ERRORS else 0)
