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

Each part runs under :class:`course.measure.bench_harness.Script`: a wrong result or an error (NCCL missing) stops that
part before it is timed and becomes a ``failed`` record in multi_gpu.json; the other parts still run and
the exit status is 1.  Without a GPU and without ``--dry-run`` the script stops and says so.

NVLink multicast stays off (NCCL_NVLS_ENABLE=0): on a shared host it can take the GPUs out of service.
"""

from __future__ import annotations

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
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure.bench_harness import Script  # noqa: E402

H = Script(__doc__, "multi_gpu", reps=15)

from course import multigpu  # noqa: E402
from course.measure import bench  # noqa: E402
from course.kernels import multi_gpu as M  # noqa: E402
from numba import cuda  # noqa: E402

GPU = H.gpu
if not GPU:
    multigpu.simulate(2)  # --dry-run: two devices of the CPU engine
N = multigpu.device_count()
B = H.bench("multi_gpu")


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
    """Event milliseconds per call of ``fn`` on device ``dev``'s default stream (:func:`course.measure.bench.time_ms`
    in that device's context: one warm-up call, ``batch`` calls queued between the two events so that
    numba's host-side work for one call overlaps the GPU's work on the previous one)."""
    with cuda.gpus[dev]:
        return bench.time_ms(fn, reps=reps, warmup=1, batch=batch)


def check(ok, msg):
    if not ok:
        raise AssertionError(msg)


# --- 1. peers --------------------------------------------------------------------------------------------------


def peers():
    found = {f"{i}->{j}": multigpu.can_access_peer(i, j) for i in range(N) for j in range(N) if i != j}
    rec("peers", None, size=[N], dtype="none", devices=N, peers=found)


# --- checks first ----------------------------------------------------------------------------------------------


def check_split(k):
    M.check_split(k)
    H.log(f"split reduction and transpose over {k} device(s): equal to NumPy")


# --- 2. copies ------------------------------------------------------------------------------------------------
COPY_BYTES = 256 * 2**20 if GPU else 2**12
N_COPY = COPY_BYTES // 4


def copy_buffers(host):
    """(source filled with ``host``, empty destination) on every device."""
    bufs = []
    for d in range(N):
        with cuda.gpus[d]:
            bufs.append((cuda.to_device(host), cuda.device_array(N_COPY, np.float32)))
        on = multigpu.device_of(bufs[d][0])
        check(on == d, f"device_of says {on} for an array made on device {d}")
    return bufs


def copy_same_device(bufs):
    with cuda.gpus[0]:
        src, dst = bufs[0]
        t = event_ms(lambda: dst.copy_to_device(src), 0, H.reps)
        rec("copy_same_device", t, size=[COPY_BYTES], dtype="uint8", devices=1, bytes_moved=2 * COPY_BYTES,
            note="read + write on one device (GB/s counts both); 10 copies queued between the events")
        # is that copy the GPU's time or numba's? the host time to issue one copy, and CuPy's copy of the same bytes
        rec("copy_same_device_host", None, size=[COPY_BYTES], dtype="uint8", devices=1,
            host_ms_per_call=bench.host_ms(lambda: dst.copy_to_device(src), calls=20),
            note="host milliseconds numba needs to issue one device-to-device copy (no synchronisation)")
        try:
            import cupy as cp

            c_src, c_dst = cp.asarray(src), cp.asarray(dst)
            rec("copy_same_device_cupy", bench.time_ms(lambda: c_dst.__setitem__(Ellipsis, c_src), reps=H.reps,
                                                       timer="cupy", batch=10),
                size=[COPY_BYTES], dtype="uint8", devices=1, bytes_moved=2 * COPY_BYTES,
                note="the same buffers copied by CuPy (its events, 10 copies queued between them)")
        except ImportError:
            H.log("CuPy missing: no reference copy")
        pinned = cuda.pinned_array(N_COPY, np.float32)

        def round_trip():
            src.copy_to_host(pinned)
            dst.copy_to_device(pinned)

        rec("copy_via_host_same_device", wall_ms(round_trip, 1, H.reps), size=[COPY_BYTES], dtype="uint8",
            devices=1, bytes_moved=COPY_BYTES, note="device 0 -> pinned host -> device 0, GB/s of the payload")


def copy_between(bufs, host, i, j):
    src, dst = bufs[i][0], bufs[j][1]
    direct = multigpu.enable_peer_access(j, i) and multigpu.enable_peer_access(i, j)

    def peer_copy():
        with cuda.gpus[j]:
            dst.copy_to_device(src)

    peer_copy()
    check(np.array_equal(dst.copy_to_host(), host), f"copy {i}->{j} wrong")
    if not GPU:
        return
    rec(f"copy_peer_{i}to{j}", event_ms(peer_copy, j, H.reps), size=[COPY_BYTES], dtype="uint8",
        devices=2, bytes_moved=COPY_BYTES, peer_access=direct)
    pinned = cuda.pinned_array(N_COPY, np.float32)

    def via_host():
        with cuda.gpus[i]:
            src.copy_to_host(pinned)
        with cuda.gpus[j]:
            dst.copy_to_device(pinned)

    rec(f"copy_via_host_{i}to{j}", wall_ms(via_host, N, H.reps), size=[COPY_BYTES], dtype="uint8",
        devices=2, bytes_moved=COPY_BYTES)


def copies():
    host = np.arange(N_COPY, dtype=np.float32)
    bufs = copy_buffers(host)
    if GPU:
        H.guarded("copy_same_device", copy_same_device, bufs)
    for i in range(N):
        for j in range(N):
            if i != j:
                H.guarded(f"copy_{i}to{j}", copy_between, bufs, host, i, j)


# --- 3. split reduction -----------------------------------------------------------------------------------------


def reduce_split(a, expected, k):
    n_red = a.shape[0]
    parts = M.place_rows(a, k)
    outs = M.reduce_parts(parts)
    got = M.combine(outs)
    check(got == expected, f"split sum over {k}: {got} != {expected}")
    if not GPU:
        rec(f"reduce_split_{k}", None, size=[n_red], dtype="float32", devices=k)
        return
    runs, outs = M.reduce_launchers(parts)  # buffers allocated here, once: the timings below launch only
    rec(f"reduce_split_{k}", wall_ms(lambda: M.launch_all(runs), k, H.reps), size=[n_red], dtype="float32",
        devices=k, bytes_moved=n_red * 4,
        what="wall: one host thread launches on every device in turn, until all are done (buffers allocated before)")
    for d in range(k):
        rec(f"reduce_split_{k}_dev{d}", event_ms(runs[d], d, H.reps), size=[int(parts[d].shape[0])],
            dtype="float32", devices=k, bytes_moved=int(parts[d].shape[0]) * 4, what="one device's events")
    check(M.combine(outs) == expected, f"split sum over {k} from the timed launches is wrong")
    rec(f"reduce_combine_{k}", wall_ms(lambda: M.combine(outs), k, H.reps), size=[k],
        dtype="float32", devices=k, what="copy k partial sums to the host and add them")


def reductions():
    n_red = 2**30 if GPU else 2**14
    a = (np.arange(n_red, dtype=np.int64) % 7 - 3).astype(np.float32)   # exact in float32 at this size
    expected = float(a.astype(np.float64).sum())
    for k in range(1, N + 1):
        H.guarded(f"reduce_split_{k}", reduce_split, a, expected, k)


# --- 4. split transpose -------------------------------------------------------------------------------------------


def transpose_split(m, k):
    shape = m.shape
    parts = M.place_rows(m, k)
    outs = M.transpose_parts(parts)
    check(np.array_equal(M.gather_columns(outs), m.T), f"split transpose over {k} devices wrong")
    if not GPU:
        rec(f"transpose_split_{k}", None, size=list(shape), dtype="int32", devices=k)
        return
    runs, outs = M.transpose_launchers(parts)  # the output bands allocated here, once: the timings launch only
    rec(f"transpose_split_{k}", wall_ms(lambda: M.launch_all(runs), k, H.reps), size=list(shape), dtype="int32",
        devices=k, bytes_moved=bench.transpose_bytes(shape, "int32"),
        what="wall: one host thread launches on every device in turn, until all are done (bands allocated before)")
    for d in range(k):
        band = tuple(int(x) for x in parts[d].shape)
        rec(f"transpose_split_{k}_dev{d}", event_ms(runs[d], d, H.reps), size=list(band), dtype="int32", devices=k,
            bytes_moved=bench.transpose_bytes(band, "int32"), what="one device's events")
    check(np.array_equal(M.gather_columns(outs), m.T), f"split transpose over {k} from the timed launches is wrong")
    bands = []
    for d, out in enumerate(outs):
        with cuda.gpus[d]:
            bands.append(cuda.pinned_array(out.shape, out.dtype))

    def gather():
        for d, out in enumerate(outs):
            with cuda.gpus[d]:
                out.copy_to_host(bands[d])

    rec(f"transpose_gather_{k}", wall_ms(gather, k, 5), size=list(shape), dtype="int32", devices=k,
        bytes_moved=m.nbytes, what="copy every column band into pinned host memory (assembling them is host work)")


def transposes():
    shape = (16384, 16384) if GPU else (68, 100)
    m = np.random.default_rng(7).integers(0, 2**31 - 1, shape, dtype=np.int64).astype(np.int32)
    for k in range(1, N + 1):
        H.guarded(f"transpose_split_{k}", transpose_split, m, k)


# --- 5. all-reduce: NCCL vs by hand ---------------------------------------------------------------------------------


def all_reduces():
    import cupy as cp
    from cupy.cuda import nccl

    n_ar = 64 * 2**20  # 256 MiB of float32 per device
    want = N * (N + 1) / 2
    comms = nccl.NcclCommunicator.initAll(list(range(N)))
    sends, recvs, streams = [], [], []
    for d in range(N):
        with cp.cuda.Device(d):
            sends.append(cp.full(n_ar, d + 1, dtype=cp.float32))
            recvs.append(cp.empty(n_ar, dtype=cp.float32))
            streams.append(cp.cuda.Stream(non_blocking=True))

    def wall(fn):
        times = []
        for _ in range(H.reps):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
        return times

    def all_reduce():
        nccl.groupStart()
        for d in range(N):
            with cp.cuda.Device(d):
                comms[d].allReduce(sends[d].data.ptr, recvs[d].data.ptr, n_ar, nccl.NCCL_FLOAT32,
                                   nccl.NCCL_SUM, streams[d].ptr)
        nccl.groupEnd()
        for d in range(N):
            streams[d].synchronize()

    def nccl_part():
        all_reduce()
        for d in range(N):
            with cp.cuda.Device(d):
                check(float(recvs[d][0]) == want and float(recvs[d][-1]) == want,
                      f"nccl all-reduce wrong on device {d}")
        times = wall(all_reduce)
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

    def by_hand_part():
        by_hand()
        for d in range(N):
            with cp.cuda.Device(d):
                check(float(recvs[d][0]) == want, f"all-reduce by hand wrong on device {d}")
        rec("allreduce_by_hand", wall(by_hand), size=[n_ar], dtype="float32", devices=N, bytes_moved=n_ar * 4,
            what="peer copies to device 0, add, peer copies back; wall")

    H.guarded("allreduce_nccl", nccl_part)
    H.guarded("allreduce_by_hand", by_hand_part)


def main():
    H.log(f"{N} device(s)" + ("" if GPU else " simulated on the CPU engine (--dry-run: checks only)"))
    H.guarded("peers", peers)
    for k in range(1, N + 1):
        H.guarded(f"check_split_{k}", check_split, k)
    H.guarded("copies", copies)
    H.guarded("reductions", reductions)
    H.guarded("transposes", transposes)
    if GPU:
        H.guarded("allreduce", all_reduces)  # NCCL missing or failing: recorded as a failed part, the rest stands
    for r in B.records:
        if r.get("ms") is not None:
            H.log(f"{r['variant']:28} {r['ms']:9.3f} ms  {r.get('gbps') or '':>10}")
    H.finish()


if __name__ == "__main__":
    main()
