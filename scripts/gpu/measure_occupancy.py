"""Chapter 06 on the H200: the occupancy model against the driver, and latency hiding measured.

    python scripts/gpu/measure_occupancy.py --out DIR             # on the GPU: DIR/occupancy*.json (~1 min)
    python scripts/gpu/measure_occupancy.py --dry-run --out DIR   # on the CPU: model only, small checks, no timing

1. **Model vs driver, every kernel of the course.**  Launches every ``NCU_CASES`` case of every
   module in ``course.kernels`` and every reduction and transpose version once (which compiles
   them), then for each compiled kernel records its registers per thread, static shared and local
   memory, and — for every block size 32, 64, …, 1024 and dynamic shared memory 0, 4 KB, 16 KB and
   40 KB — the driver's ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` next to
   ``course.measure.occupancy.occupancy`` (benchmark ``occupancy``, variant ``kernel``).  The CPU tests check
   the model against every one of these figures.
2. **Bandwidth against warps per SM** (benchmark ``occupancy_sweep``): the grid-stride sum of 2^28
   floats with 1 or 4 floats per load and 1, 4, 8 or 16 loads per thread per round (8 and 16 also with
   launch bounds, which let ptxas keep them all in flight), 128 threads per block and 1…16 blocks per
   SM (4…64 warps per SM): Little's law says bandwidth = bytes in flight / latency until the memory
   system saturates.
3. **Block size** (``occupancy_block_size``): one element per thread (blocks = n / threads) for block
   sizes 32 … 1024, and seed 002's "block 1024 vs 256" with the kernel that has the most registers,
   each with its occupancy from the model and the driver.
4. **Achieved occupancy** (``occupancy_achieved``): seed 003's workflow — the theoretical figure, then
   Nsight Compute's ``sm__warps_active.avg.pct_of_peak_sustained_active`` — for seed 003's two first
   steps at 2^20 and for grid-stride sums, run under ``ncu`` in a child process.

Every configuration is checked against the float64 sum before it is timed.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import pkgutil
import subprocess
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure import bench, cuda_tools, occupancy  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402
from course.measure.cuda_tools import ncu_launches, ncu_number  # noqa: E402

H = Script(__doc__, "occupancy", reps=10)
ARGS, GPU, log = H.args, H.gpu, H.log
T0 = time.perf_counter()

from course.kernels import reduction as R  # noqa: E402
from numba import cuda  # noqa: E402

KERNELS = H.bench("occupancy")
SWEEP = H.bench("occupancy_sweep")
BLOCKS = H.bench("occupancy_block_size")
ERRORS: list = []
BLOCK_SIZES = list(range(32, 1025, 32))
DYN_SHARED = (0, 4096, 16384, 40000)


# --- 1. every kernel: resources, driver vs model ------------------------------------------------------------------


def _dev(x):
    return cuda.to_device(x) if (GPU and isinstance(x, np.ndarray)) else x


def compile_everything():
    """Launch every NCU case and every registered version once; return the kernels that ran (by id)."""
    kernels = {}
    import course.kernels as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name in ("cases", "engine_suite") or (not GPU and info.name != "reduction"):
            continue  # a dry run checks this script, not the other chapters' kernels
        try:
            mod = importlib.import_module(f"course.kernels.{info.name}")
            cases = list(getattr(mod, "NCU_CASES", ()))
        except Exception as e:
            ERRORS.append(f"import course.kernels.{info.name}: {type(e).__name__}: {e}")
            continue
        for case in cases:
            try:
                args = tuple(_dev(a) for a in case.args(0))
                case.kernel[case.griddim, case.blockdim, 0, case.dynshared](*args)
                kernels[id(case.kernel)] = (case.kernel, f"NCU case {case.name}")
            except Exception as e:
                ERRORS.append(f"case {case.name}: {type(e).__name__}: {e}")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(4099).astype(np.float32)
    versions = dict(R.REDUCTION_VERSIONS)
    for w, u, bounds in R.sweep_candidates() if GPU else [(4, 8, None)]:
        versions[f"sweep_w{w}_u{u}_{bounds}"] = R.grid_stride_version(w, u, 256, 2, bounds=bounds)
    for name, v in versions.items():
        try:
            v.run(a)
            for k in v.kernels:
                kernels[id(k)] = (k, f"reduction {name}")
        except Exception as e:
            ERRORS.append(f"reduction {name}: {type(e).__name__}: {e}")
    try:
        if not GPU:
            return list(kernels.values())
        from course.kernels import transpose as T

        m = rng.integers(0, 100, (64, 128)).astype(np.int32)
        for name, v in T.TRANSPOSE_VERSIONS.items():
            try:
                v.run(m)
                kernels[id(v.kernel)] = (v.kernel, f"transpose {name}")
            except Exception as e:
                ERRORS.append(f"transpose {name}: {type(e).__name__}: {e}")
    except Exception as e:
        ERRORS.append(f"transpose: {type(e).__name__}: {e}")
    return list(kernels.values())


def kernel_records(kernels):
    """One record per compiled kernel overload: resources and the driver-vs-model grid."""
    mismatches = 0
    for kernel, where in kernels:
        overloads = getattr(kernel, "overloads", {}) if GPU else {}
        for sig, ov in list(overloads.items()):
            try:
                regs, smem = int(ov.regs_per_thread), int(ov.shared_mem_per_block)
                local, maxthreads = int(ov.local_mem_per_thread), int(ov.max_threads_per_block)
                rows, bad = [], []
                for dyn in DYN_SHARED:
                    for tpb in BLOCK_SIZES:
                        try:
                            drv = occupancy.driver_blocks_per_sm(kernel, tpb, dyn, signature=sig)
                        except Exception:  # the driver refuses the request (e.g. too much shared memory): None
                            drv = None
                        model = occupancy.occupancy(regs, tpb, smem + dyn).blocks_per_sm
                        rows.append([tpb, dyn, drv, model])
                        if (drv if drv is not None else 0) != model:
                            bad.append([tpb, dyn, drv, model])
                mismatches += len(bad)
                KERNELS.record("kernel", None, size=[0], dtype="none", kernel=occupancy.kernel_name(kernel),
                               signature=str(sig), where=where, regs_per_thread=regs, shared_per_block=smem,
                               local_per_thread=local, max_threads_per_block=maxthreads,
                               rows=rows, columns=["threads_per_block", "dynamic_shared", "driver (None: refused)", "model"],
                               mismatches=bad)
            except Exception as e:
                ERRORS.append(f"resources of {occupancy.kernel_name(kernel)}: {type(e).__name__}: {e}")
    return mismatches


# --- timing (queued behind a sleeping kernel: course.measure.bench.time_queued) -------------------------------------------


def time_queued(fn, reps):
    """Per-call GPU milliseconds (``reps`` values), each the mean of several calls queued behind a sleep."""
    return bench.time_queued(fn, reps=reps, budget_ms=3.0)


_FLOOR: list = []


def atomic_floor_ms(blocks, threads):
    """GPU ms of one same-address atomic per block and nothing else, on this grid (issue 14's confound)."""
    from course.kernels import probes

    if not _FLOOR:
        _FLOOR.append(cuda.device_array(1, np.float32))
    d = _FLOOR[0]
    return float(np.median(time_queued(lambda: probes.atomic_floor[blocks, threads](d), ARGS.reps)))


def partials_ms(v, d_a, n, want):
    """The same one-round kernel writing one partial sum per block (no atomic): checked, then timed."""
    k = R.grid_stride_kernel(v.params["width"], v.params["unroll"], partials=True)
    g = v.griddim(n)
    d_p = cuda.device_array(g, np.float32)
    k[g, v.threads](d_a, d_p)
    got = float(np.sum(d_p.copy_to_host(), dtype=np.float64))
    if got != want:
        raise AssertionError(f"{v.name} with per-block partials: sum {got}, exact {want}")
    return float(np.median(time_queued(lambda: k[g, v.threads](d_a, d_p), ARGS.reps)))


# --- 2. bandwidth against warps per SM ----------------------------------------------------------------------------------


def checked_launcher(v, d_a, d_out, want, tol):
    run = v.launcher(d_a, d_out)
    run()
    got = float(d_out.copy_to_host()[0]) if GPU else float(d_out[0])
    if not abs(got - want) <= tol:
        raise AssertionError(f"{v.name}: got {got}, float64 sum {want}")
    return run


def occupancy_of(v):
    res = occupancy.resources(v.kernel)
    occ = occupancy.occupancy(res.regs_per_thread, v.threads, res.shared_per_block)
    drv = occupancy.driver_blocks_per_sm(v.kernel, v.threads)
    return res, occ, drv


def sweep_warps(d_a, d_out, n, want, tol):
    sms = R.sm_count()
    kinds = ((1, 1, None), (1, 4, None), (4, 1, None), (4, 4, None), (4, 8, None), (4, 8, (1024, 1)), (4, 16, (512, 1)))
    for w, u, bounds in kinds if GPU else ((1, 1, None), (4, 16, (512, 1))):
        lb = f"_lb{bounds[0]}x{bounds[1]}" if bounds else ""
        for bps in (1, 2, 3, 4, 6, 8, 10, 12, 16) if GPU else (1, 3):
            v = R.grid_stride_version(w, u, 128, bps, name=f"w{w}_u{u}{lb}_t128_b{bps}", bounds=bounds)
            try:
                run = checked_launcher(v, d_a, d_out, want, tol)
                if not GPU:
                    SWEEP.record(v.name, None, size=[n], dtype="float32", bytes_moved=4 * n, params=v.params)
                    continue
                res, occ, drv = occupancy_of(v)
                resident = min(bps, drv)
                SWEEP.record(v.name, time_queued(run, ARGS.reps), size=[n], dtype="float32", bytes_moved=4 * n,
                             params=v.params, blocks_per_grid=v.griddim(n), sm_count=sms,
                             warps_per_sm=resident * 4, requested_warps_per_sm=bps * 4,
                             bytes_per_thread_per_round=4 * w * u, regs_per_thread=res.regs_per_thread,
                             driver_blocks_per_sm=drv, model_blocks_per_sm=occ.blocks_per_sm,
                             clocks_sm_mhz=SWEEP.prov.get("clocks_sm_mhz"))
            except Exception as e:
                ERRORS.append(f"sweep {v.name}: {type(e).__name__}: {e}")
        log(f"warps sweep w{w} u{u}{lb} done")


# --- 3. block size ---------------------------------------------------------------------------------------------------------


def one_per_thread(width, unroll, threads):
    """The grid-stride kernel with a grid large enough that each thread does one round (the classic launch)."""
    v = R.grid_stride_version(width, unroll, threads, 1, name=f"one_round_w{width}_u{unroll}_t{threads}")

    def blocks(n, ver):
        return max(1, -(-n // (threads * width * unroll)))

    return R.Version(v.name, f"one round per thread, {threads} threads per block", v.kernel, threads, blocks,
                     width=width, family="one_round", params=dict(v.params, blocks_per_sm=None))


def sweep_block_size(d_a, d_out, n, want, tol):
    for w, u in ((1, 1), (4, 4)) if GPU else ((4, 4),):
        for threads in (32, 64, 128, 256, 512, 1024) if GPU else (32, 256):
            v = one_per_thread(w, u, threads)
            try:
                run = checked_launcher(v, d_a, d_out, want, tol)
                if not GPU:
                    BLOCKS.record(v.name, None, size=[n], dtype="float32", bytes_moved=4 * n, params=v.params)
                    continue
                res, occ, drv = occupancy_of(v)
                extra = {}
                try:  # issue 14: the one atomic per block, priced alone, and the kernel without it
                    extra = dict(atomic_floor_ms=atomic_floor_ms(v.griddim(n), threads),
                                 partials_ms=partials_ms(v, d_a, n, want), atomics=v.griddim(n))
                except Exception as e:
                    ERRORS.append(f"block size {v.name} floor/partials: {type(e).__name__}: {e}")
                BLOCKS.record(v.name, time_queued(run, ARGS.reps), size=[n], dtype="float32", bytes_moved=4 * n,
                              params=v.params, launch="one round per thread", threads_per_block=threads,
                              blocks_per_grid=v.griddim(n), regs_per_thread=res.regs_per_thread,
                              driver_blocks_per_sm=drv, model_blocks_per_sm=occ.blocks_per_sm, occupancy=occ.occupancy,
                              **extra)
            except Exception as e:
                ERRORS.append(f"block size {v.name}: {type(e).__name__}: {e}")
    # seed 002: block 1024 vs 256, each with the grid filled to the driver's resident limit
    for w, u in ((4, 4), (4, 8), (1, 8)) if GPU else ((4, 4),):
        for threads in (256, 1024):
            name = f"resident_w{w}_u{u}_t{threads}"
            try:
                probe = R.grid_stride_version(w, u, threads, 1, name=name)
                checked_launcher(probe, d_a, d_out, want, tol)
                bps = occupancy.driver_blocks_per_sm(probe.kernel, threads) if GPU else 1
                v = R.grid_stride_version(w, u, threads, max(bps, 1), name=name)
                run = checked_launcher(v, d_a, d_out, want, tol)
                if not GPU:
                    BLOCKS.record(name, None, size=[n], dtype="float32", bytes_moved=4 * n, params=v.params)
                    continue
                res, occ, drv = occupancy_of(v)
                BLOCKS.record(name, time_queued(run, ARGS.reps), size=[n], dtype="float32", bytes_moved=4 * n,
                              params=v.params, launch="all resident blocks, grid-stride", threads_per_block=threads,
                              blocks_per_grid=v.griddim(n), regs_per_thread=res.regs_per_thread,
                              driver_blocks_per_sm=drv, model_blocks_per_sm=occ.blocks_per_sm, occupancy=occ.occupancy)
            except Exception as e:
                ERRORS.append(f"block size {name}: {type(e).__name__}: {e}")
    log("block-size sweep done")


# --- 4. achieved occupancy under Nsight Compute (seed 003 §4's workflow) ------------------------------------------------

NCU_METRICS = ("sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct")

# (label, version factory source, n): launched in this order by the child process under ncu
ACHIEVED = (
    ("atomic_b64 at 2^20", "R.REDUCTION_VERSIONS['atomic_b64']", 1 << 20),
    ("atomic_b256 at 2^20", "R.REDUCTION_VERSIONS['atomic_b256']", 1 << 20),
    ("grid_stride at 2^20", "R.REDUCTION_VERSIONS['grid_stride']", 1 << 20),
    ("grid_stride w4 u4, 256 threads, all resident, 2^26", "R.grid_stride_version(4, 4, 256, occ(4, 4, 256))", 1 << 26),
    ("grid_stride w4 u4, 1024 threads, all resident, 2^26", "R.grid_stride_version(4, 4, 1024, occ(4, 4, 1024))", 1 << 26),
    ("grid_stride w1 u1, 128 threads, 2 blocks/SM, 2^26", "R.grid_stride_version(1, 1, 128, 2)", 1 << 26),
)

CHILD = r'''
import sys
import numpy as np
import course
from course.measure import occupancy
from course.kernels import reduction as R
from numba import cuda

def occ(w, u, t):
    probe = R.grid_stride_version(w, u, t, 1)
    probe.run(np.ones(4096, np.float32))
    return occupancy.driver_blocks_per_sm(probe.kernel, t)

todo = [%s]
runs = []
for make, n in todo:
    v = make()
    d_a = cuda.to_device(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    d_out = cuda.device_array(1, np.float32)
    runs.append(v.launcher(d_a, d_out))
cuda.synchronize()
for run in runs:
    run()
cuda.synchronize()
print("launched", len(runs))
'''


def achieved_occupancy(out_dir):
    """Run the ACHIEVED launches under ncu and record achieved vs theoretical occupancy (GPU only)."""
    if not GPU:
        return
    ncu = cuda_tools.find_tool("ncu")
    if ncu is None:
        ERRORS.append("achieved occupancy: ncu not found on PATH")
        return
    child = pathlib.Path(out_dir) / "_occupancy_ncu_child.py"
    child.parent.mkdir(parents=True, exist_ok=True)
    child.write_text(CHILD % ", ".join(f"(lambda: {src}, {n})" for _, src, n in ACHIEVED))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    # every launch is profiled; the occ() probes come first, the last len(ACHIEVED) are the measured ones
    cmd = [ncu, "--clock-control", "none", "--csv", "--metrics", ",".join(NCU_METRICS), sys.executable, str(child)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    except Exception as e:
        ERRORS.append(f"achieved occupancy: {type(e).__name__}: {e}")
        return
    finally:
        child.unlink(missing_ok=True)
    if not ncu_launches(res.stdout):
        ERRORS.append(f"achieved occupancy: no ncu output (rc {res.returncode}): {res.stderr[-500:]}")
        return
    record_achieved(res.stdout)


def record_achieved(text):
    """Record the ACHIEVED launches of ncu's CSV ``text`` (benchmark ``occupancy_achieved``) and return the Bench.

    ncu profiled every launch of the child: the occ() probes' runs first, then one launch per ACHIEVED entry,
    so the last len(ACHIEVED) launches are the measured ones, in ACHIEVED's order. Fewer launches than that: a
    problem, and nothing recorded (a label must never name another launch's figures)."""
    ach = H.bench("occupancy_achieved")
    launches = ncu_launches(text)
    if len(launches) < len(ACHIEVED):
        ERRORS.append(f"achieved occupancy: ncu reported {len(launches)} launch(es), fewer than the {len(ACHIEVED)} "
                      f"measured ones; nothing recorded (see the child's output under ncu)")
        return ach
    for (label, _src, n), launch in zip(ACHIEVED, launches[-len(ACHIEVED):]):
        m = {name: ncu_number(value, words=False) for name, _unit, value in launch["rows"]}
        pct = [None if m.get(name) is None else float(m[name]) for name in NCU_METRICS]
        ach.record(label, None, size=[n], dtype="float32", kernel=launch["kernel"][:120], block=launch["block"],
                   grid=launch["grid"], achieved_pct=pct[0], theoretical_pct=pct[1], source="ncu")
    for r in ach.records:
        log(f"ncu: {r['variant']:52} achieved {r['achieved_pct']}% of theoretical {r['theoretical_pct']}%")
    return ach


def main():
    kernels = compile_everything()
    log(f"compiled and ran {len(kernels)} kernels")
    mismatches = kernel_records(kernels) if GPU else 0

    n = (1 << 28) if GPU else 4099
    rng = np.random.default_rng()
    host = rng.integers(-8, 9, n, dtype=np.int8).astype(np.float32)  # exact float32 sums: a check with no slack
    want, tol = R.reference(host), 0.0
    d_a = cuda.to_device(host) if GPU else host
    d_out = cuda.device_array(1, np.float32) if GPU else np.zeros(1, np.float32)
    sweep_warps(d_a, d_out, n, want, tol)
    sweep_block_size(d_a, d_out, n, want, tol)
    del d_a
    achieved_occupancy(ARGS.out)

    H.save()
    print()
    print(f"occupancy, {'GPU: ' + str(KERNELS.prov.get('device')) if GPU else 'DRY RUN on the CPU (no timing)'}; "
          f"run {bench.run_id()}; {time.perf_counter() - T0:.0f} s")
    n_rows = sum(len(r["rows"]) for r in KERNELS.records)
    print(f"model vs driver: {len(KERNELS.records)} kernel overloads, {n_rows} (block size, dynamic shared) pairs, "
          f"{mismatches} mismatches")
    for r in KERNELS.records:
        if r["mismatches"]:
            print(f"  {r['kernel']} ({r['regs_per_thread']} regs, {r['shared_per_block']} B): {r['mismatches'][:4]}")
    if GPU:
        print(f"{'variant':28} {'warps/SM':>8} {'GB/s':>7}")
        for r in SWEEP.records + BLOCKS.records:
            print(f"{r['variant']:28} {r.get('warps_per_sm', r.get('occupancy', '')) or '':>8} {r.get('gbps') or 0:7.0f}")
    if ERRORS:
        print(f"\n{len(ERRORS)} problem(s):")
        for e in ERRORS:
            print("  -", e)
    return 1 if (ERRORS and not GPU) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        sys.exit(2)
