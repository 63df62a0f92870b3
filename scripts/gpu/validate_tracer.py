"""Check the course's tracer against Nsight Compute: every count of every validation case must be equal.

    python scripts/gpu/validate_tracer.py --out DIR             # on the H200: tracer (CPU) vs ncu (GPU), < 3 min
    python scripts/gpu/validate_tracer.py --out DIR --dry-run   # anywhere: the tracer side only

Cases: ``NCU_CASES`` of ``course.validation.tracer_suite`` and of every ``course.kernels`` module that
has one (``--modules`` narrows the list).  Each case is one kernel launch.

How (three processes: this one, which runs no kernel itself, starts the other two; it runs under
``course.measure.bench_harness.Script`` with ``gpu="children"``):

1. the **tracer** side: a child on the CPU engine (``COURSE_BACKEND=cpu``) traces each case with
   ``course.trace.trace`` and writes its eight totals, its divergence estimate and the hand-derived
   ``expect`` counts to ``DIR/tracer_side.json``;
2. the **hardware** side, at the same time: one ``ncu --clock-control none --csv --metrics ...`` run of
   a child that compiles every case first (explicit signatures, so no launch compiles) and then
   launches each once, in order; ncu's CSV goes to ``DIR/ncu.csv`` and the child's list of launches
   (with device, driver and library versions) to ``DIR/gpu_side.json``;
3. this process matches the k-th profiled launch to the k-th launched case (checking the kernel name),
   writes ``DIR/tracer_validation.json`` (per case: tracer count, ncu count, equal?) and
   ``DIR/tracer_validation.md``, and prints the table last.

Arguments of a case come from ``case.args(seed=0)`` on both sides, so data-dependent cases see the same
data.  ``smsp__thread_inst_executed_per_inst_executed.ratio`` and the bank-conflict counters are
recorded beside the eight counts for the chapters; they are not part of the equality check.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import pkgutil
import subprocess
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from course.measure.bench_harness import Script  # noqa: E402  (imports course: the backend is chosen from COURSE_BACKEND)
from course.measure.cuda_tools import ncu_launches, ncu_number  # noqa: E402

TOTAL_KEYS = [
    "global_load_requests", "global_load_sectors", "global_store_requests", "global_store_sectors",
    "shared_load_requests", "shared_load_wavefronts", "shared_store_requests", "shared_store_wavefronts",
]
METRICS = {  # course name -> Nsight Compute metric (the same table as course.trace.TOTAL_KEYS)
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "shared_load_requests": "smsp__sass_inst_executed_op_shared_ld.sum",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_store_requests": "smsp__sass_inst_executed_op_shared_st.sum",
    "shared_store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
}
EXTRA_METRICS = {
    "shared_load_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_store_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "active_threads_per_warp_instruction": "smsp__thread_inst_executed_per_inst_executed.ratio",
}
SHORT = {  # table column titles
    "global_load_requests": "gld req", "global_load_sectors": "gld sect",
    "global_store_requests": "gst req", "global_store_sectors": "gst sect",
    "shared_load_requests": "sld req", "shared_load_wavefronts": "sld wf",
    "shared_store_requests": "sst req", "shared_store_wavefronts": "sst wf",
}
TIME_BUDGET_S = 300  # a hard stop only: the run itself should take 1-2 min (126 cases); --modules splits it


def arguments(ap):
    """This script's own arguments (the harness adds ``--out`` and ``--dry-run``)."""
    ap.add_argument("--modules", default="", help="comma-separated course.kernels modules (default: every one with NCU_CASES)")
    ap.add_argument("--ncu", default=os.environ.get("NCU", "ncu"), help="the Nsight Compute command")
    ap.add_argument("--role", choices=("main", "tracer", "gpu"), default="main", help=argparse.SUPPRESS)
    ap.add_argument("--gpu-backend", default="gpu", help=argparse.SUPPRESS)  # tests run the glue on the CPU


def child(args) -> bool:
    """The two sides run as children of the main process: ``--role tracer`` (CPU engine) and ``--role gpu``
    (under ncu).  True when this process was one of them and has written its side."""
    if args.role == "tracer":
        tracer_side(args)
        return True
    if args.role == "gpu":
        gpu_side(args)
        return True
    return False


# --------------------------------------------------------------------------------------------------
# Cases


#: Suites kept apart from the teaching kernels of course.kernels, by the short name --modules uses.
VALIDATION_MODULES = {"tracer_suite": "course.validation.tracer_suite"}


def case_modules(selected: str) -> list:
    """Names of the course.kernels modules whose NCU_CASES are validated (tracer_suite first)."""
    if selected:
        return [m.strip() for m in selected.split(",") if m.strip()]
    pkg = ROOT / "course" / "kernels"
    names = sorted(m.name for m in pkgutil.iter_modules([str(pkg)]) if m.name not in ("cases", "__init__"))
    names = [n for n in names if "NCU_CASES" in (pkg / f"{n}.py").read_text(encoding="utf-8")]
    return ["tracer_suite"] + [n for n in names if n != "tracer_suite"]


def load_cases(modules: list) -> tuple:
    """[(module, Case)] for every case, and {module: error} for modules that fail to import."""
    cases, errors = [], {}
    for mod in modules:
        try:
            m = importlib.import_module(VALIDATION_MODULES.get(mod, f"course.kernels.{mod}"))
            for c in getattr(m, "NCU_CASES", ()):
                cases.append((mod, c))
        except Exception as exc:  # a broken module must not hide the others' results
            errors[mod] = f"{type(exc).__name__}: {exc}"
    return cases, errors


def kernel_name(kernel) -> str:
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None) or kernel
    return getattr(fn, "__name__", str(kernel))


# --------------------------------------------------------------------------------------------------
# Tracer side (CPU engine)


def tracer_side(args) -> None:
    from course.trace import trace  # (COURSE_BACKEND=cpu was set by the parent)

    cases, errors = load_cases(case_modules(args.modules))
    out = []
    for mod, c in cases:
        rec = {"module": mod, "name": c.name, "kernel": kernel_name(c.kernel), "note": c.note,
               "expect": dict(c.expect) if c.expect else None}
        t0 = time.perf_counter()
        try:
            r = trace(c.kernel, c.griddim, c.blockdim, *c.args(0), dynshared=c.dynshared)
            rec["tracer"] = r.totals()
            rec["compiler"] = r.compiler  # lines where ptxas merged neighbouring shared accesses (course.trace.compiler)
            bc = r.bank_conflicts()
            rec["tracer_extra"] = {"shared_load_bank_conflicts": bc["load"], "shared_store_bank_conflicts": bc["store"]}
            try:
                rec["avg_active_lanes"] = round(r.divergence().avg_active_lanes, 3)
            except Exception:
                rec["avg_active_lanes"] = None
        except Exception as exc:
            rec["tracer"] = None
            rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["trace_s"] = round(time.perf_counter() - t0, 3)
        out.append(rec)
    path = pathlib.Path(args.out) / "tracer_side.json"
    path.write_text(json.dumps({"cases": out, "module_errors": errors}, indent=1))


# --------------------------------------------------------------------------------------------------
# GPU side (run under ncu)


def gpu_side(args) -> None:
    import numpy as np

    from course.measure import bench
    from numba import cuda, typeof

    cases, errors = load_cases(case_modules(args.modules))
    prepared = []
    for mod, c in cases:
        entry = {"module": mod, "name": c.name, "kernel": kernel_name(c.kernel), "launched": False}
        try:
            host = c.args(0)
            dev = tuple(cuda.to_device(a) if isinstance(a, np.ndarray) and a.ndim > 0 else a for a in host)
            sig = tuple(typeof(a) for a in dev)
            compile_now = getattr(c.kernel, "compile", None)  # numba's simulator has none
            if compile_now is not None:
                compiled = compile_now(sig)  # compile now, so that the profiled launch only runs
                entry["sass_memory_ops"] = sass_memory_ops(compiled)
            prepared.append((entry, c, dev))
        except Exception as exc:
            entry["error"] = f"compile: {type(exc).__name__}: {exc}"
            traceback.print_exc()
            prepared.append((entry, None, None))
    cuda.synchronize()
    launched = []
    for entry, c, dev in prepared:
        if c is None:
            launched.append(entry)
            continue
        try:
            if c.dynshared:
                c.kernel[c.griddim, c.blockdim, 0, c.dynshared](*dev)
            else:
                c.kernel[c.griddim, c.blockdim](*dev)
            cuda.synchronize()
            entry["launched"] = True
        except Exception as exc:
            entry["error"] = f"launch: {type(exc).__name__}: {exc}"
        launched.append(entry)
    prov = bench.provenance()
    path = pathlib.Path(args.out) / "gpu_side.json"
    path.write_text(json.dumps({"launches": launched, "provenance": prov, "module_errors": errors}, indent=1))


def sass_memory_ops(compiled):
    """The memory instructions of a compiled kernel's SASS, counted by opcode (static, not executed).

    Explains a difference with ncu: e.g. ``LDS.128`` where the tracer sees four 4-byte loads, or a
    predicated ``@P0 LDS``.  Needs nvdisasm; returns a note when it is missing.
    """
    from course.trace.compiler import SASS_MEM_OP  # (this runs in the GPU child, where course is imported)

    try:
        sass = compiled.inspect_sass()
    except Exception as exc:  # nvdisasm not on PATH, or an older numba-cuda
        return {"unavailable": f"{type(exc).__name__}: {str(exc)[:80]}"}
    ops: dict = {}
    for line in sass.splitlines():
        m = SASS_MEM_OP.match(line)
        if m:
            key = ("@P " if m.group(1) else "") + m.group(2)
            ops[key] = ops.get(key, 0) + 1
    return ops


# --------------------------------------------------------------------------------------------------
# Parsing ncu's CSV


def parse_ncu_csv(text: str) -> list:
    """Profiled launches in order: [{'id', 'kernel', metric name: value}] (a value that is no number: None)."""
    return [{"id": launch["id"], "kernel": launch["kernel"],
             **{name: ncu_number(value, words=False) for name, _, value in launch["rows"]}}
            for launch in ncu_launches(text)]


# --------------------------------------------------------------------------------------------------
# Orchestration and the report


def run_children(args, out: pathlib.Path) -> tuple:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    me = str(pathlib.Path(__file__).resolve())
    common = ["--out", str(out)] + (["--modules", args.modules] if args.modules else [])
    tracer = subprocess.Popen([sys.executable, me, "--role", "tracer"] + common,
                              env=dict(env, COURSE_BACKEND="cpu"), cwd=ROOT)
    gpu_log = None
    if not args.dry_run:
        metrics = ",".join(list(METRICS.values()) + list(EXTRA_METRICS.values()))
        cmd = [args.ncu, "--clock-control", "none", "--target-processes", "application-only", "--csv",
               "--print-units", "base", "--metrics", metrics,
               "--log-file", str(out / "ncu.csv"), sys.executable, me, "--role", "gpu"] + common
        try:
            gpu_log = subprocess.run(cmd, env=dict(env, COURSE_BACKEND=args.gpu_backend), cwd=ROOT, capture_output=True,
                                     text=True, timeout=TIME_BUDGET_S)
            (out / "gpu_side.log").write_text(gpu_log.stdout + "\n--- stderr\n" + gpu_log.stderr)
            csv_path = out / "ncu.csv"
            if '"ID"' not in (csv_path.read_text() if csv_path.exists() else "") and '"ID"' in gpu_log.stdout:
                csv_path.write_text(gpu_log.stdout)  # this ncu printed its CSV to stdout, not to --log-file
        except subprocess.TimeoutExpired as exc:
            (out / "gpu_side.log").write_text(f"ncu run killed after {TIME_BUDGET_S} s\n{exc.stdout or ''}\n{exc.stderr or ''}")
            print(f"the ncu run took more than {TIME_BUDGET_S} s and was stopped; use --modules to run fewer cases",
                  file=sys.stderr)
            gpu_log = subprocess.CompletedProcess(cmd, 124)
    tracer.wait(timeout=TIME_BUDGET_S)
    return tracer.returncode, (gpu_log.returncode if gpu_log else None)


def build_report(out: pathlib.Path, dry_run: bool, ncu: str = "ncu", run: str | None = None) -> dict:
    tside = json.loads((out / "tracer_side.json").read_text())
    gside = None if dry_run else json.loads((out / "gpu_side.json").read_text()) if (out / "gpu_side.json").exists() else None
    profiled = parse_ncu_csv((out / "ncu.csv").read_text()) if (out / "ncu.csv").exists() else []
    # k-th profiled launch <-> k-th case that launched
    hw = {}
    problems = []
    if gside:
        launched = [e for e in gside["launches"] if e.get("launched")]
        if len(launched) != len(profiled):
            problems.append(f"{len(launched)} cases launched but ncu profiled {len(profiled)} kernels")
        for e, p in zip(launched, profiled):
            if e["kernel"] not in p["kernel"]:
                problems.append(f"launch {p['id']}: ncu kernel {p['kernel'][:60]!r} is not `{e['kernel']}`")
            hw[e["name"]] = p
    records = []
    for t in tside["cases"]:
        rec = {k: t.get(k) for k in ("module", "name", "kernel", "note", "expect", "tracer", "tracer_extra", "compiler",
                                     "avg_active_lanes", "error")}
        p = hw.get(t["name"])
        if p is not None:
            rec["ncu"] = {k: p.get(m) for k, m in METRICS.items()}
            rec["ncu_extra"] = {k: p.get(m) for k, m in EXTRA_METRICS.items()}
            rec["ncu_kernel"] = p["kernel"]
        else:
            rec["ncu"] = None
        if gside:
            e = next((x for x in gside["launches"] if x["name"] == t["name"]), None)
            if e and e.get("error"):
                rec["gpu_error"] = e["error"]
            if e and e.get("sass_memory_ops") is not None:
                rec["sass_memory_ops"] = e["sass_memory_ops"]
        tr = rec["tracer"]
        if tr and rec["ncu"]:
            rec["equal"] = {k: tr[k] == rec["ncu"][k] for k in TOTAL_KEYS}
            rec["all_equal"] = all(rec["equal"].values())
        else:
            rec["equal"], rec["all_equal"] = None, None
        if tr and rec["expect"]:
            rec["expect_equal"] = all(tr[k] == v for k, v in rec["expect"].items())
        records.append(rec)
    prov = (gside or {}).get("provenance") or {
        "device": "none (dry run: tracer side only)", "driver": "none", "run": run,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
    }
    if not dry_run:
        try:
            prov["ncu"] = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[-1]
        except Exception:
            prov["ncu"] = None
    compared = [r for r in records if r["all_equal"] is not None]
    summary = {
        "cases": len(records),
        "compared": len(compared),
        "all_equal": sum(1 for r in compared if r["all_equal"]),
        "differ": [r["name"] for r in compared if not r["all_equal"]],
        "tracer_vs_hand_mismatch": [r["name"] for r in records if r.get("expect_equal") is False],
        "errors": [r["name"] for r in records if r.get("error") or r.get("gpu_error")],
        "problems": problems + [f"module {m}: {e}" for m, e in tside.get("module_errors", {}).items()],
    }
    report = {"provenance": prov, "metrics": METRICS, "extra_metrics": EXTRA_METRICS, "summary": summary,
              "cases": records}
    (out / "tracer_validation.json").write_text(json.dumps(report, indent=1))
    (out / "tracer_validation.md").write_text(markdown(report))
    return report


def _cell(r, k):
    tr = (r.get("tracer") or {}).get(k)
    hw = (r.get("ncu") or {}).get(k)
    if tr is None:
        return "error"
    if r.get("ncu") is None:
        return str(tr)
    return f"{tr}" if tr == hw else f"**{tr} / {hw}**"


def markdown(report) -> str:
    p = report["provenance"]
    s = report["summary"]
    head = [
        "# Tracer counts vs Nsight Compute",
        "",
        f"Device: {p.get('device')}, driver {p.get('driver')}, numba-cuda {p.get('numba_cuda')}, "
        f"ncu {p.get('ncu')}, date {p.get('date')}.",
        "",
        "Each cell is the tracer's count; where ncu disagrees it shows **tracer / ncu**. "
        "`avg lanes`: the tracer's active lanes per warp step vs ncu's "
        "`smsp__thread_inst_executed_per_inst_executed.ratio` (per SASS instruction: not expected equal).",
        "",
        f"{s['compared']} of {s['cases']} cases compared; {s['all_equal']} equal on all eight counts.",
        "",
    ]
    cols = ["case"] + [SHORT[k] for k in TOTAL_KEYS] + ["avg lanes", "equal"]
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in report["cases"]:
        ratio = (r.get("ncu_extra") or {}).get("active_threads_per_warp_instruction")
        lanes = r.get("avg_active_lanes")
        lanes_cell = f"{lanes}" if ratio is None else f"{lanes} / {ratio:.2f}" if isinstance(ratio, (int, float)) else f"{lanes}"
        eq = "n/a" if r.get("all_equal") is None else ("yes" if r["all_equal"] else "NO")
        if r.get("error") or r.get("gpu_error"):
            eq = "error: " + (r.get("error") or r.get("gpu_error"))[:60]
        rows.append("| " + " | ".join([r["name"]] + [_cell(r, k) for k in TOTAL_KEYS] + [lanes_cell, eq]) + " |")
    tail = [""]
    if s["differ"]:
        tail.append("Differ: " + ", ".join(s["differ"]))
        tail.append("")
        tail.append("Memory instructions in the SASS of the differing cases (static counts):")
        for r in report["cases"]:
            if r.get("all_equal") is False and r.get("sass_memory_ops"):
                ops = ", ".join(f"{k} x{v}" for k, v in sorted(r["sass_memory_ops"].items()))
                tail.append(f"- {r['name']}: {ops}")
    if s["tracer_vs_hand_mismatch"]:
        tail.append("Tracer differs from the hand-derived counts: " + ", ".join(s["tracer_vs_hand_mismatch"]))
    for prob in s["problems"]:
        tail.append("Problem: " + prob)
    return "\n".join(head + rows + tail) + "\n"


def main(argv=None) -> int:
    H = Script(__doc__, "tracer_validation", gpu="children", reps=None, arguments=arguments, child=child, argv=argv)
    args, out = H.args, H.out
    if not H.dry_run:
        H.require_tool(args.ncu, "Nsight Compute")
    for stale in ("tracer_side.json", "gpu_side.json", "ncu.csv"):
        (out / stale).unlink(missing_ok=True)
    trc, gpu = run_children(args, out)
    if trc != 0 or not (out / "tracer_side.json").exists():
        print("the tracer side failed; see its output above", file=sys.stderr)
        return 1
    report = build_report(out, H.dry_run, ncu=args.ncu, run=H.prov["run"])
    print((out / "tracer_validation.md").read_text())
    s = report["summary"]
    H.log(f"{s['cases']} cases, {s['compared']} compared with ncu, {s['all_equal']} equal; "
          f"{len(s['tracer_vs_hand_mismatch'])} differ from hand counts; written to {out / 'tracer_validation.json'}")
    if gpu not in (None, 0):
        print(f"the ncu run exited with {gpu}; see {out / 'gpu_side.log'}", file=sys.stderr)
        return 1
    return 0 if not s["tracer_vs_hand_mismatch"] and not s["differ"] else 1


if __name__ == "__main__":
    sys.exit(main())
