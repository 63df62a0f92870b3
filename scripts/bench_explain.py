"""How long course.explain takes on this machine, for every launch the course times: data/explain_cost.json.

    python scripts/bench_explain.py [--only name,...] [--out data/explain_cost.json]

Each case of ``course.measure.timed_cases`` at its H200 size (arrays built first, not timed) is explained once,
cold (the compiler's facts from data/compiler_facts.json, or compiled when missing), with the default time
budget; wall seconds per case, the blocks traced and the loop cap used are recorded with the machine's core
count. The target (issue 24) is 5 s on 2 cores for every launch; the file says which cases miss it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("COURSE_BACKEND", "cpu")

import course  # noqa: E402
from course.measure import explain, timed_cases  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default=str(ROOT / "data" / "explain_cost.json"))
    args = ap.parse_args(argv)
    want = set(args.only.split(",")) if args.only else None
    rows = []
    for c in timed_cases.cases():
        if want and c.name not in want:
            continue
        a = c.args(seed=0)
        t0 = time.perf_counter()
        e = explain.explain(c.kernel, c.griddim, c.blockdim, *a, dynshared=c.dynshared, measure=False)
        s = time.perf_counter() - t0
        rows.append({"case": c.name, "seconds": round(s, 2), "sampled": e.sampled, "how": e.counts.how})
        print(f"{c.name}: {s:.2f} s ({e.sampled} blocks)", flush=True)
    over = [r["case"] for r in rows if r["seconds"] > 5]
    out = {"what": "wall seconds of one course.explain call per timed case (scripts/bench_explain.py)",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "cores": os.cpu_count(), "python": platform.python_version(), "backend": course.BACKEND,
           "budget_s": explain.BUDGET_S, "cases": len(rows),
           "max_seconds": max((r["seconds"] for r in rows), default=None),
           "median_seconds": sorted(r["seconds"] for r in rows)[len(rows) // 2] if rows else None,
           "over_5s": over, "rows": rows}
    pathlib.Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"max {out['max_seconds']} s, median {out['median_seconds']} s; over 5 s: {over or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
