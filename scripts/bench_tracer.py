"""What tracing costs: CPU time of ``course.trace.trace`` against an untraced launch on the CPU engine.

    .venv/bin/python scripts/bench_tracer.py                     # every engine-suite kernel
    .venv/bin/python scripts/bench_tracer.py --only copy_f32 transpose_padded --reps 7

The target (issue 4): tracing costs at most 3x an untraced launch.  The kernels are the engine suite's
(course/validation/engine_suite.py: 26 launches of about 8192 threads — strided, misaligned and broadcast
loads, float64 and uint8 copies, shared tiles with padding and swizzles, 2-D blocks, partial warps,
reductions with barriers and shuffles, atomics, device functions, local arrays), each run the ordinary
way (``kernel[griddim, blockdim](*args)`` on the engine) and under ``trace`` with its defaults (line
events for the divergence report on, compiler facts looked up where needed).  CPU time
(``time.process_time``), ``--reps`` interleaved pairs after a warm-up of each, from fresh copies of the
same arguments; the ratio is the median of the pairs' ratios (the ratio of the two minima is recorded
beside it); the traced run's outputs must equal the untraced run's.  Results:
``data/tracer_cost.json``.  CPU timing of CPU code: nothing here is GPU performance.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("COURSE_BACKEND", "cpu")

import numpy as np  # noqa: E402

import course  # noqa: E402,F401  (chooses the backend before numba is imported)
from course.validation.engine_suite import SUITE  # noqa: E402
from course.trace import trace  # noqa: E402

OUT = ROOT / "data" / "tracer_cost.json"
TARGET = 3.0


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def measure(sk, reps):
    rng = np.random.default_rng(0)
    args = sk.args(rng)
    grid, block, dyn = sk.config(sk.shape)
    plain, traced = [], []
    a1, a2 = _copy(args), _copy(args)
    sk.launch(a1)  # warm-up: caches of both paths
    trace(sk.kernel, grid, block, *a2, dynshared=dyn)
    out_plain = out_traced = None
    for _ in range(reps):
        a1 = _copy(args)
        t = time.process_time()
        sk.launch(a1)
        plain.append(time.process_time() - t)
        a2 = _copy(args)
        t = time.process_time()
        trace(sk.kernel, grid, block, *a2, dynshared=dyn)
        traced.append(time.process_time() - t)
        out_plain, out_traced = a1, a2
    same = all(np.array_equal(out_plain[i], out_traced[i], equal_nan=True) for i in sk.outputs)
    # the ratio: median over the interleaved pairs (each pair sees the same machine state; on a shared
    # 2-core VM single runs vary up to 2x, so a ratio of two minima can pair a lucky run with an unlucky one)
    pairs = sorted(t / u for t, u in zip(traced, plain))
    return {"kernel": sk.name, "threads": sk.threads(), "plain_ms": round(1e3 * min(plain), 2),
            "traced_ms": round(1e3 * min(traced), 2), "ratio": round(pairs[len(pairs) // 2], 2),
            "ratio_of_minima": round(min(traced) / min(plain), 2),
            "plain_runs_ms": [round(1e3 * x, 2) for x in plain], "traced_runs_ms": [round(1e3 * x, 2) for x in traced],
            "identical_outputs": bool(same)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="suite kernel names")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args(argv)
    names = args.only or list(SUITE)
    rows = []
    t0 = time.time()
    for name in names:
        r = measure(SUITE[name], args.reps)
        rows.append(r)
        print(f"{name:24} untraced {r['plain_ms']:8.1f} ms   traced {r['traced_ms']:8.1f} ms   "
              f"{r['ratio']:5.2f}x  {'same outputs' if r['identical_outputs'] else 'OUTPUTS DIFFER'}", flush=True)
    ratios = [r["ratio"] for r in rows]
    summary = {"kernels": len(rows), "target": TARGET, "max_ratio": max(ratios),
               "max_ratio_kernel": rows[ratios.index(max(ratios))]["kernel"],
               "geomean_ratio": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 2),
               "at_most_target": sum(r <= TARGET for r in ratios),
               "all_identical": all(r["identical_outputs"] for r in rows), "wall_s": round(time.time() - t0, 1)}
    doc = {"what": "CPU time of course.trace.trace vs an untraced launch on the CPU engine, engine-suite kernels. "
                   "CPU timing of CPU code: not GPU performance.",
           "command": "python scripts/bench_tracer.py " + " ".join(argv or sys.argv[1:]),
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")},
           "summary": summary, "kernels": rows}
    if not args.only:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.out}")
    print(f"{summary['at_most_target']}/{summary['kernels']} kernels at <= {TARGET}x; worst {summary['max_ratio']}x "
          f"({summary['max_ratio_kernel']}), geometric mean {summary['geomean_ratio']}x")
    return 0 if summary["all_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
