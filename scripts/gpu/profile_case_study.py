"""Chapter 10 on the H200: time, two floors, Nsight Compute counters, and compute-sanitizer on planted bugs.

    python scripts/gpu/profile_case_study.py --out DIR            # on the GPU: DIR/profile_case_study.json (+ raw logs)
    python scripts/gpu/profile_case_study.py --dry-run --out DIR  # on the CPU: the same steps on the CPU engine

The case study is chapter 09's matrix multiply at ``--size`` (default 2048³), versions ``naive``,
``tiled``, ``regtile``, ``regtile_cf`` and ``unrolled``:

1. **Time** each with CUDA events (median of ``--reps``) after checking it against NumPy on a small
   shape; measure the two ceilings in the same run: device memory bandwidth (a 1 GB device-to-device
   copy, bytes read + written) and float32 arithmetic (cuBLAS ``a @ b`` at 8192³, CUPY_TF32=0), and
   read the SM clock limit from nvidia-smi for the datasheet peak (132 SMs × 128 FP32 lanes × 2 × clock).
2. **Floors**: bytes over bandwidth (each operand read once, ``c`` written once) and work over
   throughput (2·M·N·K over the peak), per version: the larger is the floor, time/floor the gap.
3. **Nsight Compute** (``ncu --clock-control none``) in a child process that launches each version
   once: sectors and requests (global), wavefronts and instructions (shared), bank conflicts, DRAM
   bytes, achieved occupancy ``sm__warps_active.avg.pct_of_peak_sustained_active``, FMA instructions,
   issue-slot use, and warp stall reasons.  The stall metric names are looked up with
   ``ncu --query-metrics`` first (``smsp__average_warps_issue_stalled_*_per_issue_active``); what was
   asked for and what came back are both recorded.
4. **compute-sanitizer** on two planted bugs, each in a child process: ``memcheck`` on seed 002's
   tiled kernel at N = 1000 with the grid rounded up (it reads and writes past the arrays), and
   ``racecheck`` on ``tiled_missing_sync`` (the barrier after the loads removed).  The first lines of
   each report and the error/hazard counts are recorded.

With ``--dry-run`` (CPU) the same kernels run on the course's engine: the out-of-bounds write is
caught as a KernelError, the race by the tracer's ``report.races()``; nothing is timed.
Records go to DIR/profile_case_study.json (a JSON list, ``benchmark: profile_case_study``).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

from course.measure import bench, bench_harness, cuda_tools  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402
from course.measure.cuda_tools import find_tool, ncu_launches, ncu_number  # noqa: E402


def arguments(ap):
    ap.add_argument("--size", type=int, default=2048, help="M = N = K of the profiled product")
    ap.add_argument("--deadline", type=float, default=140.0, help="seconds after the start by which ncu must stop")
    ap.add_argument("--target", default="", help=argparse_suppress())  # internal: what a child process runs


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def child(args):
    global ARGS
    if args.target:
        ARGS = args
        run_target(args.target)
        return True
    return False


from numba import cuda  # noqa: E402

from course.kernels import matmul as MM  # noqa: E402

GPU = __import__("course").on_gpu()
CASE = ["naive", "tiled", "regtile", "regtile_cf", "unrolled"]
RNG = np.random.default_rng()
SEED_BUG_N = 1000 if GPU else 20
RACE_N = 64 if GPU else 16


# --- what the child processes run (under ncu or compute-sanitizer) ----------------------------------------------


def run_target(target: str) -> None:
    """Launch what ``target`` names and return: the child side of ncu and compute-sanitizer runs."""
    if target == "case":
        n = ARGS.size
        a, b = MM.random_operands(n, n, n, RNG)
        d_a, d_b = cuda.to_device(a), cuda.to_device(b)
        d_c = cuda.device_array((n, n), np.float32)
        for name in CASE:  # one launch each, in this order: ncu's launch IDs follow it
            MM.MATMUL_VERSIONS[name].launch(d_a, d_b, d_c)
            cuda.synchronize()
    elif target == "seed_oob":
        n = SEED_BUG_N
        a, b = MM.random_operands(n, n, n, RNG)
        c = np.zeros((n, n), np.float32)
        grid = (-(-n // MM.TILE), -(-n // MM.TILE))  # rounded up, as one would launch it: threads past N
        MM.seed_tiled[grid, (MM.TILE, MM.TILE)](to_dev(a).reshape(n * n), to_dev(b).reshape(n * n),
                                                to_dev(c).reshape(n * n), n)
        cuda.synchronize()
    elif target == "missing_sync":
        n = RACE_N
        a, b = MM.random_operands(n, n, n, RNG)
        c = np.zeros((n, n), np.float32)
        grid = (n // MM.TILE, n // MM.TILE)
        MM.tiled_missing_sync[grid, (MM.TILE, MM.TILE)](to_dev(a), to_dev(b), to_dev(c))
        cuda.synchronize()
    else:
        raise SystemExit(f"profile_case_study: unknown target {target!r}")


def to_dev(x):
    return cuda.to_device(x) if GPU else x


H = Script(__doc__, "profile_case_study", reps=10, arguments=arguments, child=child)
ARGS, OUT, T0 = H.args, H.out, H.t0
BENCH = H.bench("profile_case_study")
FAILED = H.failed
ME = str(pathlib.Path(__file__).resolve())


def log(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def guarded(name, fn):
    """Run one part; a failure is recorded and the script goes on."""
    log(f"--- {name}")
    try:
        return fn()
    except Exception as e:
        FAILED[name] = f"{type(e).__name__}: {e}"
        log(f"FAILED {name}: {FAILED[name][:400]}")
        return None


# --- 1. time with events, and the ceilings ----------------------------------------------------------------------


def sm_clock_mhz():
    """The SM clock limit nvidia-smi reports (MHz), or None."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
        return float(r.stdout.strip().splitlines()[0]) if r.returncode == 0 else None
    except Exception:
        return None


def timing():
    # correct first, on an awkward shape
    for name in CASE:
        a, b = MM.random_operands(33, 17, 65, RNG)
        c = np.full((33, 65), np.nan, np.float32)
        d_c = to_dev(c)
        MM.MATMUL_VERSIONS[name].launch(to_dev(a), to_dev(b), d_c)
        got = bench.to_host(d_c)
        if MM.wrong_elements(got, a, b).any():
            raise bench.BenchError(f"{name}: wrong on 33x17·17x65; not timed")
    n = ARGS.size if GPU else 16
    a, b = MM.random_operands(n, n, n, RNG)
    d_a, d_b = to_dev(a), to_dev(b)
    d_c = cuda.device_array((n, n), np.float32) if GPU else np.zeros((n, n), np.float32)
    fl = MM.flops(n, n, n)
    for name in CASE:
        v = MM.MATMUL_VERSIONS[name]
        launch = v.kernel[v.griddim(n, n), v.threads]
        args = v.args(d_a, d_b, d_c)
        times = bench.time_ms(lambda: launch(*args), reps=ARGS.reps, warmup=2) if GPU else None
        rec = BENCH.record(f"time:{name}", times, size=(n, n, n), dtype="float32", flops=fl, kernel=name,
                           part="timing", bytes_floor=3 * n * n * 4)
        if rec.get("ms"):
            log(f"  {name:12s} {rec['ms']:8.3f} ms {rec['tflops']:6.2f} TFLOP/s")
    if not GPU:
        return
    # ceilings in the same run
    big = 1 << 28  # 1 GB of float32
    src = cuda.device_array(big, np.float32)
    dst = cuda.device_array(big, np.float32)
    times = bench.time_ms(lambda: dst.copy_to_device(src), reps=ARGS.reps, warmup=2)
    rec = BENCH.record("ceiling:d2d_copy", times, size=(big * 4,), dtype="float32", bytes_moved=2 * big * 4,
                       part="ceiling", note="device-to-device copy, bytes read + written")
    log(f"  d2d copy {rec['gbps']:.0f} GB/s")
    try:
        import cupy as cp

        m = 8192
        ga = cp.random.standard_normal((m, m), dtype=cp.float32)
        gb = cp.random.standard_normal((m, m), dtype=cp.float32)
        gc = cp.empty((m, m), cp.float32)
        times = bench.time_ms(lambda: cp.matmul(ga, gb, out=gc), reps=5, warmup=2, timer="cupy")
        rec = BENCH.record("ceiling:cublas_fp32", times, size=(m, m, m), dtype="float32", flops=MM.flops(m, m, m),
                           part="ceiling", CUPY_TF32=os.environ.get("CUPY_TF32"),
                           note="CuPy a @ b float32 (cuBLAS), tensor cores off")
        log(f"  cuBLAS fp32 at 8192^3: {rec['tflops']:.1f} TFLOP/s")
    except Exception as e:
        log(f"  cuBLAS ceiling skipped: {type(e).__name__}: {e}")
    clock = sm_clock_mhz()
    if clock:
        dev = cuda.get_current_device()
        sms = dev.MULTIPROCESSOR_COUNT
        peak = sms * 128 * 2 * clock * 1e6 / 1e12  # cc 9.0: 128 FP32 lanes per SM, an FMA is 2 flops
        BENCH.record("ceiling:fp32_peak_datasheet", None, size=(1,), dtype="float32", part="ceiling",
                     tflops_peak=peak, sm_count=sms, clock_mhz=clock,
                     note="computed, not timed: SMs x 128 FP32 lanes x 2 flops x max SM clock (nvidia-smi)")
        log(f"  FP32 peak from the clock limit: {peak:.1f} TFLOP/s ({sms} SMs at {clock:.0f} MHz)")


# --- 2. Nsight Compute ---------------------------------------------------------------------------------------

BASE_METRICS = [
    "gpu__time_duration.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__registers_per_thread",
    "launch__occupancy_limit_registers",
]
STALL_FALLBACK = ["barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "math_pipe_throttle",
                  "not_selected", "selected", "wait", "lg_throttle", "dispatch_stall", "no_instruction",
                  "membar", "branch_resolving", "drain", "imc_miss", "tex_throttle", "sleeping", "misc"]


def stall_metrics(known):
    """Warp-stall metric names this ncu knows, else the usual list; and where they came from."""
    names = sorted(n for n in known if re.fullmatch(r"smsp__average_warps_issue_stalled_\w+_per_issue_active", n))
    if names:
        return [f"{n}.ratio" for n in names], "ncu --query-metrics"
    return [f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in STALL_FALLBACK], "fallback list"


MINIMAL = BASE_METRICS[:11] + ["sm__warps_active.avg.pct_of_peak_sustained_active"]


def parse_ncu_csv(text):
    """Profiled launches in launch order: [{'kernel': name, 'metrics': {name: value}, 'units': {...}}]."""
    out = []
    for launch in ncu_launches(text):
        rows = [r for r in launch["rows"] if r[0]]
        out.append({"kernel": launch["kernel"], "metrics": {name: ncu_number(value) for name, _, value in rows},
                    "units": {name: unit for name, unit, _ in rows}})
    return out


def nsight_compute():
    ncu = find_tool("ncu")
    if not GPU or not ncu:
        log(f"ncu skipped ({'dry run' if not GPU else 'ncu not found'})")
        BENCH.records.append({"benchmark": "profile_case_study", "variant": "ncu:skipped", "ms": None,
                              "run": bench.run_id(), "reason": "dry run" if not GPU else "ncu not found",
                              "dry_run": ARGS.dry_run or None})
        return
    known = cuda_tools.query_metrics(ncu, timeout=60)
    stalls, source = stall_metrics(known)
    wanted = BASE_METRICS + stalls
    # one unknown name makes ncu refuse the whole run: ask only for what this ncu lists
    metrics = [x for x in wanted if not known or x.split(".")[0] in known]
    dropped = [x for x in wanted if x not in metrics]
    csv_path = OUT / "profile_ncu.csv"

    def profile(names):
        cmd = [ncu, "--clock-control", "none", "--csv", "--page", "details", "--metrics", ",".join(names),
               "--log-file", str(csv_path), sys.executable, ME, "--out", str(OUT), "--target", "case",
               "--size", str(ARGS.size)]
        if csv_path.exists():
            csv_path.unlink()
        left = DEADLINE - (time.time() - T0)
        if left < 20:
            raise TimeoutError(f"only {left:.0f} s left of the script's budget: ncu not started")
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
        except subprocess.TimeoutExpired as e:
            res = subprocess.CompletedProcess(cmd, None, e.stdout or "", f"ncu stopped after {left:.0f} s (budget)")
            if isinstance(res.stdout, bytes):
                res.stdout = res.stdout.decode(errors="replace")
        with open(OUT / "profile_ncu.log", "a") as f:
            f.write(" ".join(cmd) + "\n\n" + res.stdout[-20000:] + "\n" + res.stderr[-20000:] + "\n\n")
        return cmd, res, (parse_ncu_csv(csv_path.read_text()) if csv_path.exists() else [])

    log(f"ncu: {len(metrics)} metrics ({len(stalls)} stall reasons from {source}; {len(dropped)} unknown here, "
        f"left out) on {len(CASE)} kernels at {ARGS.size}^3")
    cmd, res, launches = profile(metrics)
    if not launches and DEADLINE - (time.time() - T0) > 30:
        log(f"ncu gave nothing (rc {res.returncode}); again with the {len(MINIMAL)} basic metrics")
        metrics = MINIMAL
        cmd, res, launches = profile(metrics)
    if len(launches) != len(CASE):
        log(f"ncu returned {len(launches)} launches for {len(CASE)} kernels (rc {res.returncode}); see profile_ncu.log")
    for name, launch in zip(CASE, launches):
        m = launch["metrics"]
        dur_ns = m.get("gpu__time_duration.sum")
        unit = launch["units"].get("gpu__time_duration.sum", "")
        ms = None
        if isinstance(dur_ns, (int, float)):
            ms = dur_ns / {"ns": 1e6, "nsecond": 1e6, "us": 1e3, "usecond": 1e3, "ms": 1.0, "msecond": 1.0,
                           "s": 1e-3, "second": 1e-3}.get(unit, 1e6)
        BENCH.record(f"ncu:{name}", [ms] if ms else None, size=(ARGS.size,) * 3, dtype="float32",
                           flops=MM.flops(ARGS.size, ARGS.size, ARGS.size), kernel=name, part="ncu",
                           ncu_kernel=launch["kernel"][:200], metrics=m, units=launch["units"],
                           asked=metrics, left_out_unknown=dropped, stall_source=source, returned=sorted(m),
                           missing=[x for x in metrics if x not in m], command=" ".join(cmd[:8]) + " ...",
                           note="ms from gpu__time_duration under ncu (one launch, clocks as found)")
        occ = m.get("sm__warps_active.avg.pct_of_peak_sustained_active")
        log(f"  {name:12s} occupancy {occ}%  shared wavefronts/instr "
            f"{_ratio(m, 'l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum', 'smsp__sass_inst_executed_op_shared_ld.sum')}"
            f"  top stall {top_stall(m)}")


def _ratio(m, a, b):
    x, y = m.get(a), m.get(b)
    return f"{x / y:.2f}" if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y else "-"


def top_stall(m):
    """The stall reason with the largest per-issue ratio."""
    st = {k: v for k, v in m.items() if "issue_stalled" in k and isinstance(v, (int, float))}
    if not st:
        return "-"
    k = max(st, key=st.get)
    return f"{k.split('stalled_')[1].split('_per_issue')[0]} ({st[k]:.2f})"


# --- 3. compute-sanitizer on planted bugs ------------------------------------------------------------------------


def summary_counts(text):
    """The ERROR SUMMARY / RACECHECK SUMMARY numbers of a compute-sanitizer report."""
    out = {}
    m = re.search(r"ERROR SUMMARY:\s*(\d+)\s+error", text)
    if m:
        out["errors"] = int(m.group(1))
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+)\s+hazard", text)
    if m:
        out["hazards"] = int(m.group(1))
    out["invalid_global_write"] = len(re.findall(r"Invalid __global__ write", text))
    out["invalid_global_read"] = len(re.findall(r"Invalid __global__ read", text))
    out["race_reports"] = len(re.findall(r"(?i)race reported|hazard detected|Race reported", text))
    return out


def sanitizer():
    tool = find_tool("compute-sanitizer")
    # --report-api-errors no: numba-cuda's start-up asks the driver for entry points it may lack
    # (cuGetProcAddress → CUDA_ERROR_INVALID_VALUE, thousands of them), which would fill the print limit
    # before the kernel's own invalid accesses are reported
    runs = [("memcheck", "seed_oob", ["--tool", "memcheck", "--report-api-errors", "no", "--show-backtrace", "no",
                                      "--print-limit", "200"]),
            ("racecheck", "missing_sync", ["--tool", "racecheck", "--racecheck-report", "all", "--print-limit", "12"])]
    if not GPU or not tool:
        log(f"compute-sanitizer skipped ({'dry run' if not GPU else 'not found'}); the CPU engine's view instead")
        cpu_view()
        return
    for name, target, opts in runs:
        size = SEED_BUG_N if target == "seed_oob" else RACE_N
        cmd = [tool, *opts, sys.executable, ME, "--out", str(OUT), "--target", target]
        t = time.time()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=45)
            text = res.stdout + "\n" + res.stderr
            rc = res.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            text, rc = f"timed out after 45 s\n{out}", None
        text = bench_harness.scrub(text)
        H.write_text(f"sanitizer_{name}.log", " ".join(cmd) + "\n\n" + text[-40000:])
        lines = [ln for ln in text.splitlines() if ln.startswith("=========")
                 and "cuGetProcAddress" not in ln and "Host Frame" not in ln and "Saved host backtrace" not in ln]
        counts = summary_counts(text)
        # the report lines that name the planted bug: each invalid access, its kernel, thread and address
        invalid = []
        all_lines = text.splitlines()
        for i, ln in enumerate(all_lines):
            if "Invalid __global__" in ln or "Invalid __shared__" in ln:
                invalid.append([x.replace("=========", "").strip() for x in all_lines[i:i + 4]])
        BENCH.record(
            f"sanitizer:{name}", None, size=(size, size, size), dtype="float32", part="sanitizer",
            tool=name, target=target, N=size, TILE=MM.TILE, returncode=rc,
            seconds=time.time() - t, counts=counts, report_head=lines[:60], command=" ".join(cmd),
            invalid_access_reports=invalid[:12], invalid_access_count=len(invalid),
            planted="seed 002's kernel, grid rounded up at N not a multiple of TILE: reads and writes past "
                    "the arrays" if target == "seed_oob" else
                    "tiled matmul without the syncthreads() after the shared loads",
        )
        log(f"  {name} on {target}: {counts} (rc {rc})")


def cpu_view():
    """The same planted bugs on the CPU engine: a KernelError for the out-of-bounds access, the tracer's races."""
    from course.engine import KernelError
    from course.trace import trace

    try:
        run_target("seed_oob")
        found = "no error raised"
    except KernelError as e:
        found = str(e)
    BENCH.record("engine:seed_oob", None, size=(SEED_BUG_N,) * 3, dtype="float32", part="sanitizer",
                 executed_on="the course's CPU engine (on the GPU host), not the GPU", message=found[:2000])
    log(f"  engine on seed_oob: {found.splitlines()[0][:200]}")
    n = RACE_N
    a, b = MM.random_operands(n, n, n, RNG)
    c = np.zeros((n, n), np.float32)
    report = trace(MM.tiled_missing_sync, (n // MM.TILE, n // MM.TILE), (MM.TILE, MM.TILE), a, b, c, lines=False)
    races = report.races()
    BENCH.record("engine:missing_sync_races", None, size=(n, n, n), dtype="float32", part="sanitizer",
                 executed_on="the course's tracer on the CPU (on the GPU host), not the GPU",
                 races=[str(r) for r in races[:10]], count=len(races), wrong=int(MM.wrong_elements(c, a, b).sum()))
    log(f"  tracer on tiled_missing_sync: {len(races)} racing line pairs; {int(MM.wrong_elements(c, a, b).sum())} wrong elements")


DEADLINE = ARGS.deadline  # seconds after the start (default 140): the whole script must finish within about 150 s
guarded("timing", timing)
guarded("compute-sanitizer", sanitizer)  # before ncu: two short runs, certain to fit
guarded("nsight compute", nsight_compute)

path = H.save()[0]
print()
print(f"{'record':32s} {'ms':>9s} {'TFLOP/s':>8s}  note")
for r in BENCH.records:
    ms = r.get("ms")
    t = r.get("tflops")
    extra = r.get("counts") or (f"{r.get('count')} races" if "count" in r else "")
    print(f"{r['variant']:32s} {('%9.3f' % ms) if ms else '        -'} {('%8.2f' % t) if t else '       -'}  {extra}")
print(f"{len(BENCH.records)} records -> {path}; {len(FAILED)} failed parts; run {bench.run_id()}; {time.time() - T0:.0f} s")
sys.exit(1 if FAILED else 0)
