"""Profile every launch the course times (``course.measure.timed_cases``) on the H200: time and speed of light.

    python scripts/gpu/profile_kernels.py --out DIR             # on the GPU: DIR/kernel_profiles.json, DIR/ncu.csv
    python scripts/gpu/profile_kernels.py --out DIR --dry-run   # on the CPU: every case launched once, small
    python scripts/gpu/profile_kernels.py --out DIR --set solutions   # only the exercises' solutions (the unseen set)

``--set`` picks the cases: ``timed`` (the default: the chapters' kernels, what course.explain is fitted and
scored on), ``solutions`` (the exercises' solution kernels, ``course.exercises.solution_cases``, tag ``solution``:
never fitted on), ``fresh`` / ``fresh3`` … ``fresh10`` (``course.kernels.fresh`` / ``fresh3`` … ``fresh10``, tags of the same names: the
second to tenth rounds of unseen kernels) or ``all``.  A case that can say what right is (``Case.check``) is checked once on the device
before it is timed; a wrong result is recorded as a failure and the case is not timed.

Per case, in this process (no profiler attached):

- ``ms``: the kernel alone, launches queued behind a sleeping kernel (:func:`course.measure.bench.time_queued`), so
  the host's per-launch issue time is not inside;
- ``one_launch_ms``: one launch between two events, the way a notebook that times one call sees it (host
  issue time inside when the kernel is shorter than it);
- ``host_issue_ms``: the host's time to issue one launch (:func:`course.measure.bench.host_ms`): numba's launch overhead.

Then child processes under ``ncu --clock-control none``, a few cases each (``--chunk``), launch every case once
(same seeds) and Nsight Compute's counters are joined to the cases in launch order (the kernel name is checked): kernel
time (``gpu__time_duration.sum``), DRAM / L2 / L1 / SM throughput as % of peak, issue-active, achieved
and theoretical occupancy, DRAM bytes, L2 sectors, shared wavefronts, warp instructions by kind, atomics,
registers, and the warp-stall reasons.  What was asked for and what came back are both recorded.

The run also measures the copy ceilings of the two regimes (a 1 GiB and an 8 MiB device-to-device copy,
bytes read + written) and numba's launch overhead on an empty kernel, all in the same run id.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure import bench, cuda_tools  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402

METRICS = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sectors.sum", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_pipe_lsu_wavefronts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__t_set_accesses_pipe_lsu_mem_global_op_atom.sum", "l1tex__t_set_accesses_pipe_lsu_mem_global_op_red.sum",
    "lts__t_requests_srcunit_l1_op_atom.sum", "lts__t_requests_srcunit_l1_op_red.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed.sum", "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
    "sm__cycles_elapsed.avg.per_second", "sm__cycles_active.avg",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "sm__inst_executed_pipe_lsu.sum", "sm__inst_executed_pipe_fma.sum", "sm__inst_executed_pipe_alu.sum",
    "sm__inst_executed_pipe_fp64.sum", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "launch__registers_per_thread", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks", "launch__waves_per_multiprocessor",
]
STALLS = ["long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "barrier", "membar",
          "math_pipe_throttle", "wait", "not_selected", "selected", "drain", "dispatch_stall", "no_instruction",
          "tex_throttle", "branch_resolving", "sleeping", "misc", "imc_miss"]


def arguments(ap):
    from course.measure.explain_check import ROUND_MODULES  # the one registry of the blind rounds

    rounds = list(ROUND_MODULES)
    ap.add_argument("--role", default="", help=argparse_suppress())
    ap.add_argument("--only", default="", help="comma-separated case names (default: every case)")
    ap.add_argument("--set", default="timed", choices=("timed", "solutions", *rounds, "all"),
                    help="timed: the chapters' kernels; solutions: the exercises' solutions (unseen, round 1); "
                         f"{' / '.join(rounds)}: course.kernels.<set> (unseen, rounds 2-{len(rounds) + 1}); "
                         "all: every set")
    ap.add_argument("--no-ncu", action="store_true", help="time only; no Nsight Compute child")
    ap.add_argument("--chunk", type=int, default=6, help="cases per Nsight Compute child (default 6)")
    ap.add_argument("--deadline", type=float, default=560.0,
                    help="seconds from the start after which no ncu child starts and a running one is stopped; no "
                         "case starts its timing after three quarters of it (default 560: a device call's 600 s "
                         "less the set-up)")


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def selected(args, scale):
    from course.measure.explain_check import case_set  # the one list the predictions use too

    cases = case_set(args.set, scale)
    if args.only:
        want = set(args.only.split(","))
        cases = [c for c in cases if c.name in want]
    return cases


def device_args(case):
    """The case's arguments (seed 0) with every ndarray copied to the device."""
    from numba import cuda

    return tuple(cuda.to_device(a) if isinstance(a, np.ndarray) and a.ndim else a for a in case.args(seed=0))


def launcher(case, dargs):
    k = case.kernel[case.griddim, case.blockdim, 0, case.dynshared] if case.dynshared else case.kernel[case.griddim,
                                                                                                          case.blockdim]

    def run():
        k(*dargs)

    return run


def child(args) -> bool:
    """Under ncu: launch every case once, in order, and list them (True: this process was the child)."""
    if args.role != "ncu":
        return False
    from numba import cuda

    done = []
    for case in selected(args, "gpu"):
        try:
            d = device_args(case)
            cuda.synchronize()
            launcher(case, d)()
            cuda.synchronize()
            done.append({"case": case.name, "kernel": case.kernel.py_func.__name__, "ok": True})
        except Exception as e:  # keep going: the parent records which cases have no counters
            done.append({"case": case.name, "kernel": getattr(case.kernel, "__name__", "?"), "ok": False,
                         "error": f"{type(e).__name__}: {str(e)[:500]}"})
        del d
    pathlib.Path(args.out, "ncu_child.json").write_text(json.dumps(done, indent=1))
    return True


H = Script(__doc__, "kernel_profiles", reps=10, arguments=arguments, child=child)


def host_copy(a):
    return a.copy_to_host() if hasattr(a, "copy_to_host") else a


def checked(case, before, dargs, run):
    """Launch once and compare with the case's own answer (``Case.check``); raise when the result is wrong."""
    from numba import cuda

    run()
    cuda.synchronize()
    if case.check is not None:
        wrong = case.check(before, tuple(host_copy(a) for a in dargs))
        if wrong:
            raise AssertionError(f"{case.name}: wrong result on the device, not timed: {wrong}")


def time_case(case):
    from numba import cuda

    before = case.args(seed=0)
    d = tuple(cuda.to_device(a) if isinstance(a, np.ndarray) and a.ndim else a for a in before)
    run = launcher(case, d)
    checked(case, before, d, run)
    times, inner, launch_bound = bench.time_queued(run, reps=H.reps, details=True)
    one = bench.one_launch_ms(run, reps=5)
    host = bench.host_ms(run, calls=20)
    cuda.synchronize()
    ms = float(np.median(times))
    return {"ms": ms, "ms_min": float(min(times)), "ms_max": float(max(times)), "inner": inner,
            "launch_bound": bool(launch_bound), "one_launch_ms": float(np.median(one)),
            "host_issue_ms": float(host)}


def run_file():
    """The benchmark (file) of this run's own records (ceilings, overhead, meta): ``kernel_profiles`` for ``--set
    timed`` or ``all``, else (the unseen sets) ``unseen_profiles``.  The unseen cases live in a file of their own so that their run never
    hides the chapters' profile run from the readers that take a benchmark's latest run (chapters' profile tables,
    the copy ceilings, the ledger's limiter claims)."""
    return "kernel_profiles" if H.args.set in ("timed", "all") else "unseen_profiles"


def case_file(case):
    """``unseen_profiles`` for a case tagged as unseen (an exercise's solution, a claim's launch), else
    ``kernel_profiles``."""
    from course.measure.explain_check import UNSEEN_TAGS

    return "unseen_profiles" if set(UNSEEN_TAGS) & set(case.tags) else "kernel_profiles"


def ceilings():
    """The two copy ceilings (HBM: 1 GiB, L2: 8 MiB; bytes read + written) and numba's overhead on an empty kernel."""
    from numba import cuda

    out = []
    for label, nbytes in (("copy_hbm_1GiB", 1 << 30), ("copy_l2_8MiB", 8 << 20)):
        src = cuda.device_array(nbytes // 4, np.float32)
        dst = cuda.device_array(nbytes // 4, np.float32)
        run = lambda: dst.copy_to_device(src)  # noqa: E731  (a device-to-device cudaMemcpy)
        times = bench.time_queued(run, reps=H.reps)
        ms = float(np.median(times))
        out.append(H.record(run_file(), label, ms, len(times), [nbytes], "float32", bytes=2 * nbytes,
                            gbps=2 * nbytes / ms / 1e6, kind="ceiling"))

    @cuda.jit
    def empty(x):
        pass

    x = cuda.device_array(1, np.float32)
    run = lambda: empty[1, 32](x)  # noqa: E731
    run()
    cuda.synchronize()
    times = bench.time_queued(run, reps=H.reps)
    one = bench.one_launch_ms(run, reps=20)
    host = bench.host_ms(run, calls=200)
    out.append(H.record(run_file(), "empty_kernel", float(np.median(times)), len(times), [1], "float32",
                        one_launch_ms=float(np.median(one)), host_issue_ms=float(host), kind="overhead"))
    return out


def profile(cases):
    """Nsight Compute's counters for ``cases``, a few cases per ncu child (``--chunk``), so that a child that runs out
    of time (``--deadline``) loses its own cases only: those are recorded as failures and the rest keep theirs."""
    ncu = H.require_tool("ncu", "Nsight Compute")
    known = cuda_tools.query_metrics(ncu)
    asked = METRICS + [f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in STALLS]
    metrics = [m for m in asked if not known or m.split(".")[0] in known]
    prof, logs = {}, []
    names = [c.name for c in cases]
    for i in range(0, len(names), H.args.chunk):
        chunk = names[i:i + H.args.chunk]
        left = H.args.deadline - H.elapsed()
        if left < 20:
            for name in chunk:
                H.failed[f"ncu:{name}"] = f"not profiled: the run's deadline ({H.args.deadline:.0f} s) came first"
            continue
        argv = [sys.executable, str(pathlib.Path(__file__).resolve()), "--role", "ncu", "--out", str(H.out),
                "--set", H.args.set, "--only", ",".join(chunk)]
        child_file = pathlib.Path(H.out, "ncu_child.json")
        child_file.unlink(missing_ok=True)
        try:
            launches, log = cuda_tools.ncu_profile(argv, metrics, timeout=left - 10)
        except Exception as e:  # this chunk has no counters; the next one may
            for name in chunk:
                H.failed[f"ncu:{name}"] = f"{type(e).__name__}: {str(e)[:600]}"
            H.log(f"ncu chunk {chunk[0]}..{chunk[-1]} failed: {str(e)[:200]}")
            continue
        logs.append(log)
        H.log(f"ncu: {len(launches)} launches of {chunk[0]}..{chunk[-1]}")
        done = json.loads(child_file.read_text()) if child_file.exists() else []
        ok = [d for d in done if d["ok"]]
        for d, launch in zip(ok, launches):
            if d["kernel"] not in launch.get("kernel", ""):
                H.failed[f"ncu:{d['case']}"] = f"launch order mismatch: {d['kernel']} vs {launch.get('kernel', '')[:60]}"
                continue
            prof[d["case"]] = {k: v for k, v in launch.items() if k not in ("id", "kernel")}
        for d in done:
            if not d["ok"]:
                H.failed[f"ncu:{d['case']}"] = d["error"]
    H.write_text("ncu_log.txt", "\n\n".join(logs))
    return prof, metrics, sorted(set(asked) - set(metrics))


def main():
    cases = selected(H.args, "small" if H.dry_run else "gpu")
    H.log(f"{len(cases)} cases")
    if H.dry_run:
        from course import engine

        def launch_and_check(c):
            before = c.args(0)
            after = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in before)
            engine.launch(c.kernel, c.griddim, c.blockdim, after, dynshared=c.dynshared)
            wrong = c.check(before, after) if c.check is not None else ""
            if wrong:
                raise AssertionError(f"{c.name}: wrong result on the CPU engine: {wrong}")

        for c in cases:
            H.guarded(c.name, launch_and_check, c)
        H.record(run_file(), "dry_run", None, 0, [len(cases)], "-")
        H.finish()
    H.guarded("ceilings", ceilings)
    rows = {}
    for c in cases:
        if H.elapsed() > 0.75 * H.args.deadline:  # keep a quarter of the time for Nsight Compute and the saving
            H.failed[c.name] = f"not timed: {H.elapsed():.0f} s of the run's {H.args.deadline:.0f} s had gone"
            continue
        r = H.guarded(c.name, time_case, c)
        if r is not None:
            rows[c.name] = r
            H.log(f"{c.name}: {r['ms']:.4f} ms queued, {r['one_launch_ms']:.4f} ms one launch, "
                  f"host {r['host_issue_ms'] * 1e3:.1f} us")
    prof, metrics, dropped = ({}, [], [])
    if not H.args.no_ncu:
        got = H.guarded("ncu", profile, [c for c in cases if c.name in rows])
        if got:
            prof, metrics, dropped = got
    for c in cases:
        if c.name not in rows:
            continue
        r = rows[c.name]
        args = c.args(seed=0)
        shapes = [[list(a.shape), str(a.dtype)] if isinstance(a, np.ndarray) else repr(a) for a in args]
        H.record(case_file(c), c.name, r.pop("ms"), H.reps, [int(np.prod(a.shape)) for a in args
                                                                  if isinstance(a, np.ndarray)][:1] or [0],
                 next((str(a.dtype) for a in args if isinstance(a, np.ndarray)), "-"),
                 kind="case", kernel=c.kernel.py_func.__name__, griddim=c.griddim, blockdim=c.blockdim,
                 dynshared=c.dynshared, args=shapes, tags=list(c.tags), ncu=prof.get(c.name), **r)
    H.record(run_file(), "ncu_metrics", None, 0, [len(metrics)], "-", kind="meta",
             metrics=metrics, dropped=dropped, timer="time_queued")
    H.finish()


main()
