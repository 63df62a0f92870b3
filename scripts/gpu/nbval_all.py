"""Run every chapter and solution notebook under nbval on the GPU, one pytest per file, several at a time.

    python3 scripts/gpu/nbval_all.py --out DIR --commit SHA [--jobs 12] [--timeout 540]

Writes DIR/h200_nbval.json (the record ``data/artifacts/h200_nbval.json`` keeps) and DIR/nbval_<name>.log per
notebook.  Each notebook runs ``python3 -m pytest --nbval-lax`` in its own process with a time limit, so one
notebook that hangs or dies is recorded as failed and the others still run.  The commit is passed in (the
device's copy of the tree has no git history).

The device image lacks greenlet (the CPU engine's scheduler, imported by ``course``): fetch it with the numpy
wheel, ``bash ../shared/gpu/fetch-wheels.sh greenlet pytest-timeout``, and carry ``.whl``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import json
import os
import pathlib
import platform
import re
import secrets
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _one(path: pathlib.Path, out: pathlib.Path, timeout: float) -> dict:
    t0 = time.perf_counter()
    log = out / f"nbval_{path.stem}.log"
    env = dict(os.environ)  # the notebooks' kernels run in notebooks/: the repository root goes on the path
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env.get("PYTHONPATH", "")) if x)
    try:
        p = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-q", "-p", "no:cacheprovider",
                            str(path.relative_to(ROOT))], cwd=ROOT, capture_output=True, text=True,
                           timeout=timeout, env=env)
        text, code = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text = f"{e.stdout or ''}{e.stderr or ''}\n[timed out after {timeout:.0f} s]"
        code = 124
    log.write_text(text)
    m = re.search(r"(\d+) passed", text)
    return {"file": str(path.relative_to(ROOT)), "exit": code, "cells_passed": int(m.group(1)) if m else 0,
            "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=540.0)
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    files = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        rows = list(ex.map(lambda f: _one(f, out, a.timeout), files))
    import numba_cuda
    import numpy
    from numba import cuda
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip().splitlines()[0]
    now = dt.datetime.now(dt.timezone.utc)
    rec = {
        "what": f"every chapter and solution notebook under nbval (--nbval-lax) on the GPU backend, one pytest per "
                f"file, {a.jobs} at a time (scripts/gpu/nbval_all.py)",
        "run": now.strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3),
        "date": now.strftime("%Y-%m-%d"),
        "device": cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes)
        else cuda.get_current_device().name,
        "driver": driver, "numba_cuda": numba_cuda.__version__, "numpy": numpy.__version__,
        "python": platform.python_version(), "commit": a.commit,
        "files": rows, "all_passed": all(r["exit"] == 0 for r in rows),
    }
    (out / "h200_nbval.json").write_text(json.dumps(rec, indent=1) + "\n")
    for r in rows:
        print(f"{r['exit']:4d} {r['cells_passed']:4d} {r['seconds']:8.1f}s {r['file']}")
    print("all passed" if rec["all_passed"] else "SOME FAILED", rec["run"])


if __name__ == "__main__":
    main()
