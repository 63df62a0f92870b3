"""CPU timing of the course's CPU engine against numba's stock CUDA simulator, on the engine suite.

    .venv/bin/python scripts/bench_engine.py                 # every suite kernel, both paths, profile
    .venv/bin/python scripts/bench_engine.py --only copy_f32 reduce_shfl_down --no-profile

Both paths run in this one process: an ordinary ``kernel[griddim, blockdim](*args)`` goes through the
engine (``COURSE_BACKEND=cpu``), and inside ``course.engine.stock_simulator()`` the same call goes
through numba's simulator as shipped.  Every run starts from fresh copies of the same arguments; the
outputs of both paths must equal each other bit for bit and equal the NumPy reference.  The engine
is timed ``--reps`` times after one warm-up launch (median); the stock simulator ``--stock-reps``
times (median of 3 by default; it takes seconds per launch).

These are CPU wall times of two CPU implementations, measured on this machine: they say how long a
learner waits, nothing about GPU speed.

numba's simulator has no warp shuffles.  For the two suite kernels that use them, the stock run gets
``shfl_down_sync`` / ``shfl_xor_sync`` added to numba's ``FakeCUDAModule`` for the duration, built
from the simulator's own ``syncthreads()`` the way its ``syncthreads_count`` is built (values parked
in the block manager, two block barriers per shuffle).  That is valid for these kernels because
every live thread of the block takes part in each shuffle.  Their ratios are reported, and left out
of a second geometric mean.

Then cProfile runs the engine on three representative kernels (no barrier; a shared tile with a
barrier; warp shuffles) and on the two kernels with the lowest ratio, and the script records where the
time goes, by function and by layer (kernel code, element access, shared/local allocation, barriers and
collectives, scheduling, numba objects, NumPy).  Results: ``data/engine_benchmark.json``; the table is printed last.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime
import json
import math
import os
import pathlib
import platform
import pstats
import statistics
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("COURSE_BACKEND", "cpu")

import numpy as np  # noqa: E402

import course  # noqa: E402
import course.engine  # noqa: E402
from course.validation.engine_suite import SUITE  # noqa: E402

OUT = ROOT / "data" / "engine_benchmark.json"
PROFILED = ("copy_f32", "transpose_padded", "reduce_shfl_down")  # no barrier; barrier + shared tile; warp shuffles


# --------------------------------------------------------------------------------------------------
# Warp shuffles for the stock simulator (only while the stock path runs a kernel that needs them)


def _stock_shuffle(kind):
    def shuffle(self, mask, value, arg, width=32):
        t = threading.current_thread()  # numba's BlockThread: one OS thread per CUDA thread
        parked = t._manager.__dict__.setdefault("_course_shuffle", {})
        parked[t.thread_id] = value
        t.syncthreads()  # every lane has parked its value
        lane = t.thread_id % 32
        segment = lane & ~(width - 1)
        src = lane + arg if kind == "down" else lane ^ arg
        if not segment <= src < segment + width:
            src = lane
        result = parked.get(t.thread_id - lane + src, value)
        t.syncthreads()  # every lane has read before anyone parks the next value
        return result

    shuffle.__name__ = f"shfl_{kind}_sync"
    return shuffle


@contextlib.contextmanager
def stock_warp_shuffles():
    """Add shfl_down_sync / shfl_xor_sync to numba's simulator module for the duration."""
    from numba.cuda.simulator import kernelapi

    cls = kernelapi.FakeCUDAModule
    added = []
    for kind in ("down", "xor"):
        name = f"shfl_{kind}_sync"
        if not hasattr(cls, name):
            setattr(cls, name, _stock_shuffle(kind))
            added.append(name)
    try:
        yield added
    finally:
        for name in added:
            delattr(cls, name)


# --------------------------------------------------------------------------------------------------
# Running and checking


def _fresh(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _outputs(entry, args):
    return [np.array(args[i], copy=True) for i in entry.outputs]


def _same(xs, ys):
    return all(x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True) for x, y in zip(xs, ys))


def time_launches(entry, args, reps, stock):
    """Launch ``reps`` times on fresh copies of ``args``; return (seconds per run, outputs of the last run)."""
    times, cpu, outs = [], [], None
    for _ in range(reps):
        run_args = _fresh(args)
        ctx = course.engine.stock_simulator() if stock else contextlib.nullcontext()
        shim = stock_warp_shuffles() if (stock and entry.warp_ops) else contextlib.nullcontext()
        with ctx, shim:
            c0, t0 = time.process_time(), time.perf_counter()
            entry.launch(run_args)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        outs = _outputs(entry, run_args)
    return times, cpu, outs


def bench_one(entry, reps, stock_reps, seed):
    """Time one suite kernel on both paths and check both against each other and NumPy."""
    args = entry.args(np.random.default_rng(seed))
    expected = [np.asarray(e) for e in entry.expected(args)]
    time_launches(entry, args, 1, stock=False)  # warm-up: caches of the engine (code offsets, names)
    eng_times, eng_cpu, eng_out = time_launches(entry, args, reps, stock=False)
    stock_times, stock_cpu, stock_out = time_launches(entry, args, stock_reps, stock=True)
    eng_ms = statistics.median(eng_times) * 1e3
    stock_ms = statistics.median(stock_times) * 1e3
    return {
        "kernel": entry.name,
        "threads": entry.threads(),
        "shape": list(entry.shape),
        "engine_ms": round(eng_ms, 2),
        "engine_runs_ms": [round(t * 1e3, 2) for t in eng_times],
        "stock_ms": round(stock_ms, 1),
        "stock_runs_ms": [round(t * 1e3, 1) for t in stock_times],
        "ratio": round(stock_ms / eng_ms, 2),
        # CPU seconds of the whole process (all threads): less sensitive to other load on the machine
        "engine_cpu_ms": round(statistics.median(eng_cpu) * 1e3, 2),
        "stock_cpu_ms": round(statistics.median(stock_cpu) * 1e3, 1),
        "cpu_ratio": round(statistics.median(stock_cpu) / max(statistics.median(eng_cpu), 1e-9), 2),
        "engine_us_per_thread": round(eng_ms * 1e3 / entry.threads(), 2),
        "identical": _same(eng_out, stock_out),
        "engine_matches_numpy": _same(eng_out, expected),
        "stock_matches_numpy": _same(stock_out, expected),
        "stock_shim": list(entry.warp_ops),
    }


# --------------------------------------------------------------------------------------------------
# Profile: where the engine's time goes


_ACCESS = {"_get", "_set", "_atomic", "_view", "_wrap", "__getattr__", "shape", "size", "ndim", "dtype", "strides",
           "__len__", "__iter__", "__array__", "_atomic_target", "add", "sub", "and_", "or_", "xor", "inc", "dec",
           "exch", "max", "min", "cas", "view_method"}
_ALLOC = {"array", "as_dtype", "poison", "_alloc", "_instr_offset", "_assigned_name", "array_like", "reset"}
_SYNC = {"_block", "_resolve_warps", "_compute_collective", "syncthreads", "syncthreads_count", "syncthreads_and",
         "syncthreads_or", "syncwarp", "activemask"}
LAYERS = {
    "kernel": "kernel code (the kernel's own Python lines)",
    "access": "engine: array element access and atomics (KernelArray)",
    "alloc": "engine: cuda.shared/local.array calls (allocation, dtype conversion)",
    "sync": "engine: barriers and warp collectives",
    "sched": "engine: thread scheduling (greenlet switches, run queue, thread state)",
    "numba": "numba objects called by the kernel or the engine (float32(...), as_dtype)",
    "numpy": "NumPy and builtins",
    "other": "other",
}


def _layer(filename, funcname, kernel_files):
    """Which part of the work a profiled function belongs to (a key of LAYERS)."""
    f = filename.replace("\\", "/")
    if f in kernel_files:
        return "kernel"
    if "course/engine/" in f:
        if funcname in _ACCESS or funcname.startswith("<lambda>"):
            return "access"
        if funcname in _ALLOC:
            return "alloc"
        if funcname in _SYNC or funcname.endswith("_sync"):
            return "sync"
        return "sched"
    if "greenlet" in funcname or "greenlet" in f:
        return "sched"
    if "/numba/" in f or "/numba_cuda/" in f or "importlib" in f:
        return "numba"
    if "numpy" in f or f == "~" or funcname.startswith(("<method", "<built-in")):
        return "numpy"
    return "other"


def profile_one(entry, seed):
    """cProfile one engine launch of ``entry``; return total time, top functions and time per layer."""
    args = _fresh(entry.args(np.random.default_rng(seed)))
    entry.launch(_fresh(args))  # warm-up
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    entry.launch(args)
    prof.disable()
    wall = time.perf_counter() - t0
    stats = pstats.Stats(prof)
    kernel_files = set()
    fn = getattr(entry.kernel, "fn", None) or getattr(entry.kernel, "py_func", None)
    if fn is not None:
        kernel_files.add(fn.__code__.co_filename.replace("\\", "/"))
    rows, layers = [], {}
    total_tt = 0.0
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():
        total_tt += tt
        name = f"{os.path.basename(filename)}:{line}({func})" if line else func
        rows.append({"function": name, "calls": nc, "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4)})
        layer = LAYERS[_layer(filename, func, kernel_files)]
        layers[layer] = layers.get(layer, 0.0) + tt
    rows.sort(key=lambda r: -r["tottime_s"])
    return {
        "kernel": entry.name,
        "threads": entry.threads(),
        "wall_s_under_profiler": round(wall, 3),
        "profiled_s": round(total_tt, 3),
        "by_layer": {k: {"s": round(v, 4), "share": round(v / total_tt, 3)} for k, v in sorted(layers.items(), key=lambda kv: -kv[1])},
        "top_functions": rows[:15],
    }


# --------------------------------------------------------------------------------------------------


def machine_facts():
    """CPU, Python and library versions, load and date: what a CPU timing depends on."""
    import importlib.metadata as md

    cpu = platform.processor() or ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "numba": md.version("numba"),
        "numba_cuda": md.version("numba-cuda"),
        "numpy": md.version("numpy"),
        "greenlet": md.version("greenlet"),
        "backend": course.BACKEND,
        "engine_commit": _engine_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _engine_version():
    """The last commit that touched course/engine/, '+dirty' when the working copy differs from it."""
    import subprocess

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("log", "-1", "--format=%h", "--", "course/engine") or "unknown"
    return commit + ("+dirty" if git("status", "--porcelain", "--", "course/engine") else "")


def compact(doc):
    """A run in a few lines: when, where, how loaded, the summary and each kernel's ratio."""
    m = doc.get("machine", {})
    return {
        "date": m.get("date"),
        "engine_commit": m.get("engine_commit", "unknown"),
        "load_average_1_5_15": m.get("load_average_1_5_15"),
        "method": doc.get("method"),
        "summary": doc.get("summary"),
        "ratios": {r["kernel"]: r["ratio"] for r in doc.get("kernels", [])},
        "cpu_ratios": {r["kernel"]: r.get("cpu_ratio") for r in doc.get("kernels", [])},
    }


def previous_runs(path):
    """Earlier full runs recorded in ``path`` (kept so that run-to-run variation stays visible)."""
    try:
        old = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return []
    if old.get("summary", {}).get("kernels") != len(SUITE):  # a partial run (--only) is not history
        return old.get("history", [])
    return old.get("history", []) + [compact(old)]


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main(argv=None):
    """Benchmark, check, profile, write the JSON, print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", nargs="+", help="suite kernels to run (default: all)")
    p.add_argument("--reps", type=int, default=3, help="timed engine launches per kernel (median)")
    p.add_argument("--stock-reps", type=int, default=3, help="timed stock-simulator launches per kernel (median)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--out", type=pathlib.Path, default=OUT)
    a = p.parse_args(argv)
    if course.BACKEND != "cpu":
        sys.exit(f"bench_engine.py compares the CPU engine with numba's simulator; COURSE_BACKEND is {course.BACKEND!r}, use cpu")
    names = a.only or list(SUITE)
    unknown = [n for n in names if n not in SUITE]
    if unknown:
        sys.exit(f"unknown suite kernel(s) {unknown}; choose from {list(SUITE)}")
    facts = machine_facts()
    t_start = time.time()
    records = []
    for n in names:
        rec = bench_one(SUITE[n], a.reps, a.stock_reps, a.seed)
        records.append(rec)
        print(f"  {n:24s} engine {rec['engine_ms']:9.1f} ms   stock {rec['stock_ms']:9.1f} ms   ×{rec['ratio']:6.1f}"
              f"   identical={rec['identical']} numpy={rec['engine_matches_numpy']}", flush=True)
    to_profile = [n for n in PROFILED if n in names]
    worst = sorted(records, key=lambda r: r["ratio"])[:2]  # and the kernels where the engine gains least
    to_profile += [r["kernel"] for r in worst if r["kernel"] not in to_profile]
    profiles = [] if a.no_profile else [profile_one(SUITE[n], a.seed) for n in to_profile]
    facts["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    ratios = [r["ratio"] for r in records]
    plain = [r["ratio"] for r in records if not r["stock_shim"]]
    eng_total = sum(r["engine_ms"] for r in records) / 1e3
    stock_total = sum(r["stock_ms"] for r in records) / 1e3
    summary = {
        "kernels": len(records),
        "engine_total_s": round(eng_total, 2),
        "stock_total_s": round(stock_total, 1),
        "total_ratio": round(stock_total / eng_total, 2),
        "geomean_ratio": round(_geomean(ratios), 2),
        "geomean_cpu_ratio": round(_geomean([r["cpu_ratio"] for r in records]), 2),
        "geomean_ratio_without_shuffle_shim": round(_geomean(plain), 2) if plain else None,
        "min_ratio": min(ratios),
        "min_ratio_kernel": min(records, key=lambda r: r["ratio"])["kernel"],
        "kernels_at_least_20x": sum(r >= 20 for r in ratios),
        "all_identical": all(r["identical"] for r in records),
        "all_match_numpy": all(r["engine_matches_numpy"] and r["stock_matches_numpy"] for r in records),
        "wall_s": round(time.time() - t_start, 1),
    }
    doc = {
        "what": ("CPU wall time, on this machine, of the course's CPU engine (greenlet scheduler) and of numba-cuda's "
                 "stock CUDA simulator, running the same kernels in one process. CPU timing of CPU simulators: "
                 "not GPU performance."),
        "command": "python scripts/bench_engine.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip(),
        "method": (f"wall time (perf_counter) and CPU time of the process (process_time, all threads) per launch; per kernel: fresh copies of one argument set (seed {a.seed}); engine: 1 warm-up + {a.reps} timed launches "
                   f"(median); stock: {a.stock_reps} timed launch(es) (median); outputs compared bit for bit with each other "
                   "and with the NumPy reference. Kernels listed in stock_shim ran on the stock simulator with warp "
                   "shuffles added by this script (numba's simulator lacks them), built from its own syncthreads()."),
        "machine": facts,
        "summary": summary,
        "kernels": records,
        "profile": profiles,
    }
    doc["history"] = previous_runs(a.out)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")

    if profiles:
        print("\nwhere the engine's time goes (cProfile, own time per layer):")
        for prof in profiles:
            shares = ", ".join(f"{k.split(' (')[0].removeprefix('engine: ')} {v['share']:.0%}"
                               for k, v in prof["by_layer"].items() if v["share"] >= 0.05)
            print(f"  {prof['kernel']:20s} {prof['profiled_s']:6.2f} s profiled: {shares}")
    print(f"\nCPU wall time, engine vs numba's stock simulator (same process; not GPU timing) -> {a.out.relative_to(ROOT) if a.out.is_relative_to(ROOT) else a.out}")
    print(f"{'kernel':24s} {'threads':>7s} {'engine ms':>10s} {'stock ms':>10s} {'ratio':>7s} {'cpu ratio':>9s}  same  numpy")
    for r in records:
        mark = "*" if r["stock_shim"] else " "
        print(f"{r['kernel']:24s} {r['threads']:7d} {r['engine_ms']:10.1f} {r['stock_ms']:10.1f} {r['ratio']:6.1f}{mark} {r['cpu_ratio']:9.1f}"
              f"  {'yes' if r['identical'] else 'NO':4s}  {'yes' if r['engine_matches_numpy'] and r['stock_matches_numpy'] else 'NO'}")
    s = summary
    print(f"{'total':24s} {'':7s} {s['engine_total_s'] * 1e3:10.1f} {s['stock_total_s'] * 1e3:10.1f} {s['total_ratio']:6.1f}")
    print(f"geometric mean ×{s['geomean_ratio']} wall, ×{s['geomean_cpu_ratio']} CPU time (×{s['geomean_ratio_without_shuffle_shim']} without the * kernels, whose "
          f"stock run used this script's shuffle shim); lowest ×{s['min_ratio']} ({s['min_ratio_kernel']}); "
          f"{s['kernels_at_least_20x']}/{s['kernels']} kernels at ≥ 20×")
    return 0 if s["all_identical"] and s["all_match_numpy"] else 1


if __name__ == "__main__":
    sys.exit(main())
