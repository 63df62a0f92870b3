"""How fast the grader grades: submissions per minute per core -> data/grade_benchmark.json.

    .venv/bin/python scripts/bench_grade.py [--copies 8] [--jobs N] [--skip-solutions] [--out data/grade_benchmark.json]

Two workloads, each graded by ``python -m course.grade`` as an instructor runs it (sandbox included):

* ``small``: ``--copies`` copies of a short right notebook (two chapter-01 kernels, nothing else): the
  grader's own cost per submission (a fresh kernel in its box, the judging of two exercises);
* ``solutions``: every notebook in ``solutions/`` (each runs its whole chapter, as a learner's would).

This is a CPU measurement of the grader on this machine (it records the machine's CPU and core count,
never a path); it says how to size a class's grading (docs/instructors.md), not anything about GPUs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMALL = ROOT / "tests" / "fixtures" / "submissions" / "hostile" / "z_victim_01_programming_model.ipynb"


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run(paths, jobs: int) -> dict:
    out = tempfile.mkdtemp(prefix="bench-grade-")
    try:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "course.grading.grade", *map(str, paths), "--out", out, "--jobs", str(jobs)],
                           cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if p.returncode != 0:
            raise SystemExit(f"grading failed:\n{p.stderr[-2000:]}")
        results = json.loads(pathlib.Path(out, "results.json").read_text())
    finally:
        shutil.rmtree(out, ignore_errors=True)
    subs = results["submissions"]
    rows = [r for s in subs for r in s["exercises"]]
    return {"submissions": len(subs), "exercises": len(rows), "jobs": jobs, "seconds": round(seconds, 1),
            "all_passed": all(r["status"] == "pass" for r in rows),
            "per_minute": round(60 * len(subs) / seconds, 2),
            "per_minute_per_core": round(60 * len(subs) / seconds / jobs, 2),
            "seconds_per_submission_per_core": round(seconds * jobs / len(subs), 2),
            "sandbox": results["grader"]["sandbox"]["level"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--copies", type=int, default=8)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--skip-solutions", action="store_true")
    p.add_argument("--out", default=str(ROOT / "data" / "grade_benchmark.json"))
    a = p.parse_args(argv)
    workloads = {}
    load_before = round(os.getloadavg()[0], 2)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "course"], cwd=ROOT, capture_output=True, text=True).stdout
    commit += " (course/ has uncommitted changes)" if dirty.strip() else ""
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        for i in range(a.copies):
            shutil.copy(SMALL, pathlib.Path(tmp, f"student{i:03d}.ipynb"))
        workloads["small"] = run([tmp], a.jobs)
        print("small", workloads["small"], file=sys.stderr)
    if not a.skip_solutions:
        workloads["solutions"] = run([ROOT / "solutions"], a.jobs)
        print("solutions", workloads["solutions"], file=sys.stderr)
    doc = {
        "what": "course.grading.grade throughput: submissions graded per minute per core (CPU; the grader, not a GPU)",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "system": f"{platform.system()} {platform.release()}",
                    # other work on the machine slows the grader: the 1-minute load average before and after
                    "load_before": load_before, "load_after": round(os.getloadavg()[0], 2)},
        "workloads": workloads,
    }
    pathlib.Path(a.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
