"""Check the tracer's race reports against compute-sanitizer racecheck, and run peer-style kernels on the GPU.

    python scripts/gpu/validate_races.py --out DIR             # on the H200: < 3 min
    python scripts/gpu/validate_races.py --out DIR --dry-run   # anywhere: the CPU engine's side only
    python scripts/gpu/validate_races.py --import PATH         # a run's DIR (or its lane.tgz) -> data/race_validation.json

Cases: ``RACE_CASES`` of :mod:`course.validation.race_suite` (racy and race-free kernels, with the races
CUDA's memory model defines worked out by hand) and ``WORKLOADS`` of :mod:`course.validation.peer_styles`
(kernels written in other people's styles: closures, factories, aliases ...).

It runs under :class:`course.measure.bench_harness.Script` (``gpu="children"``): on the GPU, this process runs no kernel itself
(it checks that compute-sanitizer is there before anything starts) and starts:

1. one ``compute-sanitizer --tool racecheck`` process per race case, 8 at a time (racecheck stops printing
   after its print limit, so one process that launches many kernels would show only the first kernel's
   hazards), each running ``--role case``: compile the kernel with line information, launch it once on
   ``case.args(0)``, copy the results back, and compare race-free cases with their NumPy reference.  The
   ``RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)`` line and every reported pair of
   source lines are read from its output (within-warp hazards are racecheck's warnings, cross-warp ones
   its errors);
2. at the same time, one plain process (``--role peers``) that runs every peer-style workload on the GPU
   and compares it with NumPy, and records the provenance (device, driver, numba-cuda, date, run id).

It writes ``DIR/race_validation.json`` (the table), ``DIR/race_validation.md`` and ``DIR/racecheck_logs.tgz``
(the harness's ``write_text``: machine paths in the logs and the table become file names).
``--dry-run`` runs the tracer (:func:`course.validation.race_suite.tracer_verdict`) and the peer styles on
the CPU engine instead.  ``--import`` reads a GPU run, runs the tracer on every case here, and writes
``data/race_validation.json``; ``tests/test_race_validation.py`` re-runs the tracer against that table.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import datetime as _dt
import json
import linecache
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend (this process launches no kernel)

from course.measure.bench_harness import Script, scrub  # noqa: E402

TIME_BUDGET_S = 170      # the whole GPU run; cases not started by then are recorded as not run
CASE_TIMEOUT_S = 100     # one racecheck process
PARALLEL = 8
RACECHECK_ARGS = ["--tool", "racecheck", "--racecheck-report", "hazard", "--print-level", "info",
                  "--print-limit", "10000", "--show-backtrace", "no"]
DATA = ROOT / "data" / "race_validation.json"
# the kernels live in course/validation/races/*.py, and some cases launch the teaching kernels of course/kernels/*.py
# (racecheck names a file by its base name: the two folders share none).  A run from before the split names
# race_suite.py, whose lines have moved since: it gets no source texts here (import such a run from a checkout of the
# commit it ran)
SUITE_FILES = {p.name: p for folder in ("validation/races", "kernels")
               for p in sorted((ROOT / "course" / folder).glob("*.py")) if p.name != "__init__.py"}

SUMMARY_RE = re.compile(r"RACECHECK SUMMARY:\s*(\d+)\s+hazards? displayed\s*\((\d+)\s+errors?,\s*(\d+)\s+warnings?\)")
# "========= Error: Race reported between Write access at 0x1a0 in /x/race_suite.py:80:reverse_nosync(...)"
# "=========     and Read access at 0x1c0 in /x/race_suite.py:81:reverse_nosync(...) [64 hazards]"
HAZARD_RE = re.compile(r"(Error|Warning|ERROR|WARNING):\s*Race reported between\s+(\w+)\s+access at\s+(\S+)"
                       r"(?:\s+in\s+(\S+?):(\d+))?")
# hazard mode prints each hazard:
# "========= ERROR: Potential RAW hazard detected at __shared__ 0x80 in block (0,0,0) :"
# "=========     Write Thread (31,0,0) at 0x2d0 in /x/race_suite.py:80:reverse_nosync(...)"
# "=========     Read Thread (32,0,0) at 0x310 in /x/race_suite.py:81:reverse_nosync(...)"
# (a warning reads "Warning: (Warp Level Programming) Potential WAR hazard ..."; the function name after "at" holds
# spaces, so the source line is read from the end of the line: "... +0x360 in race_suite.py:334")
POTENTIAL_RE = re.compile(r"(Error|Warning|ERROR|WARNING):\s*(?:\([^)]*\)\s*)?Potential\s+(\w+)\s+hazard detected at"
                          r"\s+(\S+)\s+(\S+)(?:\s+in block\s*\(([^)]*)\))?")
THREAD_RE = re.compile(r"(\w+)\s+Thread\s*\(([^)]*)\)\s+at\s+(\S+)")
SOURCE_RE = re.compile(r"\sin\s+(\S+?):(\d+)\s*$")
LOG_HEAD, LOG_TAIL = 300, 60  # lines of each racecheck log kept (the counts are read from the whole output)
AND_RE = re.compile(r"and\s+(\w+)\s+access at\s+(\S+)(?:\s+in\s+(\S+?):(\d+))?(?:.*?\[(\d+)\s+hazards?\])?")


def arguments(ap) -> None:
    """This script's own arguments (the harness gives ``--out``, here optional, and ``--dry-run``)."""
    ap.add_argument("--import", dest="import_from", metavar="PATH",
                    help="a GPU run's output directory or .tgz: write data/race_validation.json from it")
    ap.add_argument("--data", default=str(DATA), help="where --import writes (default data/race_validation.json)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: every case)")
    ap.add_argument("--sanitizer", default=os.environ.get("COMPUTE_SANITIZER", ""),
                    help="the compute-sanitizer command (default: on PATH, else /usr/local/cuda/bin)")
    ap.add_argument("--role", choices=("main", "case", "peers", "tracer"), default="main", help=argparse.SUPPRESS)
    ap.add_argument("--case", default="", help=argparse.SUPPRESS)
    ap.add_argument("--gpu-backend", default="gpu", help=argparse.SUPPRESS)  # tests run the glue on the CPU


# --------------------------------------------------------------------------------------------------
# Children


def role_case(args) -> None:
    """On the GPU, under racecheck: launch one case once (compiled with line info), check race-free results."""
    import numpy as np

    import course
    from numba import cuda

    from course.validation.race_suite import CASES_BY_NAME

    c = CASES_BY_NAME[args.case]
    rec = {"name": c.name, "launched": False}
    try:
        kernel = c.kernel
        py = getattr(kernel, "py_func", None)
        if py is not None and course.BACKEND == "gpu":
            kernel = cuda.jit(lineinfo=True)(py)  # racecheck then names source lines
        host = c.args(0)
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in host]
        kernel[c.griddim, c.blockdim](*dev)
        cuda.synchronize()
        rec["launched"] = True
        last = dev[-1].copy_to_host() if hasattr(dev[-1], "copy_to_host") else dev[-1]
        if c.reference is not None:
            exp = c.reference(*c.args(0))
            rec["reference_ok"] = bool(np.array_equal(last, exp) or np.allclose(last, exp, rtol=1e-5, atol=1e-5))
    except Exception as exc:
        rec["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        traceback.print_exc()
    pathlib.Path(args.out, "cases").mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out, "cases", f"{c.name}.json").write_text(json.dumps(rec))


def role_peers(args) -> None:
    """Run every peer-style workload on this process's backend; compare with NumPy; record provenance."""
    import numpy as np

    import course
    from course.measure import bench
    from course.validation.peer_styles import WORKLOADS, launch

    out = []
    for w in WORKLOADS:
        rec = {"name": w.name, "style": w.style}
        t0 = time.perf_counter()
        try:
            host = w.args(0)
            if course.BACKEND == "gpu":
                from numba import cuda

                dev = tuple(cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in host)
                launch(w, dev)
                cuda.synchronize()
                got = dev[0].copy_to_host()
            else:
                work = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in host)
                launch(w, work)
                got = work[0]
            exp = w.reference(*w.args(0))
            rec["ok"] = bool(np.array_equal(got, exp))
            if not rec["ok"]:
                rec["got"] = np.asarray(got).ravel()[:16].tolist()
                rec["expected"] = np.asarray(exp).ravel()[:16].tolist()
        except Exception as exc:
            rec["ok"] = False
            rec["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
            rec["error_types"] = [c.__name__ for c in type(exc).__mro__]
        if w.expect_error:  # a launch the GPU refuses: it must fail with that type of error
            rec["expect_error"] = w.expect_error
            rec["as_expected"] = w.expect_error in rec.get("error_types", [])
        else:
            rec["as_expected"] = rec["ok"]
        rec["seconds"] = round(time.perf_counter() - t0, 3)
        out.append(rec)
    pathlib.Path(args.out, "peer_styles.json").write_text(
        json.dumps({"provenance": bench.provenance(), "workloads": out}, indent=1))


def role_tracer(args) -> None:
    """On the CPU engine: the tracer's verdict on every case."""
    import course  # noqa: F401
    from course.validation.race_suite import RACE_CASES, tracer_verdict

    names = _selected(args)
    out = {}
    for c in RACE_CASES:
        if names and c.name not in names:
            continue
        t0 = time.perf_counter()
        try:
            out[c.name] = tracer_verdict(c)
        except Exception as exc:
            out[c.name] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        out[c.name]["seconds"] = round(time.perf_counter() - t0, 3)
    pathlib.Path(args.out, "tracer_side.json").write_text(json.dumps(out, indent=1))


# --------------------------------------------------------------------------------------------------
# Reading racecheck's output


def parse_racecheck(text: str) -> dict:
    """Errors, warnings and hazards of one racecheck run, and each reported pair of accesses."""
    found = list(SUMMARY_RE.finditer(text))
    m = found[-1] if found else None  # the last summary (a run prints one)
    res = {"summary": m is not None}
    if m:
        res.update(hazards=int(m.group(1)), errors=int(m.group(2)), warnings=int(m.group(3)))
    pairs = []
    lines = text.splitlines()
    for k, ln in enumerate(lines):
        h = HAZARD_RE.search(ln)
        if not h:
            continue
        pair = {"severity": h.group(1).lower(), "first": {"op": h.group(2).lower(),
                                                          "line": int(h.group(5)) if h.group(5) else None}}
        for nxt in lines[k + 1:k + 3]:
            a = AND_RE.search(nxt)
            if a:
                pair["second"] = {"op": a.group(1).lower(), "line": int(a.group(4)) if a.group(4) else None}
                if a.group(5):
                    pair["count"] = int(a.group(5))
                break
        pairs.append(pair)
    # hazard mode: one report per hazard; group them by (severity, kind, access, line, access, line)
    groups: dict = {}
    for k, ln in enumerate(lines):
        h = POTENTIAL_RE.search(ln)
        if not h:
            continue
        sides = []
        for x in lines[k + 1:k + 3]:
            a = THREAD_RE.search(x)
            if a:
                src = SOURCE_RE.search(x)
                sides.append({"op": a.group(1).lower(), "line": int(src.group(2)) if src else None,
                              "file": pathlib.Path(src.group(1)).name if src else None,
                              "thread": a.group(2).replace(" ", "")})
        key = (h.group(1).lower(), h.group(2).upper()) + tuple((q["op"], q["line"]) for q in sides)
        g = groups.get(key)
        if g is None:
            groups[key] = g = {"severity": h.group(1).lower(), "kind": h.group(2).upper(), "space": h.group(3),
                               "block": (h.group(5) or "").replace(" ", ""), "count": 0}
            if sides:
                g["first"] = sides[0]
            if len(sides) > 1:
                g["second"] = sides[1]
        g["count"] += 1
    pairs.extend(groups.values())
    res["pairs"] = pairs
    if not m:  # no summary line: count the reports themselves
        res["errors"] = sum(p["severity"] == "error" for p in pairs)
        res["warnings"] = sum(p["severity"] == "warning" for p in pairs)
    return res


def racecheck_severities(rc: dict) -> list:
    """["error"], ["warning"], both or none: what racecheck reported for one case."""
    out = []
    if rc.get("errors"):
        out.append("error")
    if rc.get("warnings"):
        out.append("warning")
    return out


# --------------------------------------------------------------------------------------------------
# Orchestration


def _selected(args) -> set:
    return {n.strip() for n in args.cases.split(",") if n.strip()}


def _env(backend: str) -> dict:
    pp = [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(pp), COURSE_BACKEND=backend, PYTHONUNBUFFERED="1")


def find_sanitizer(given: str) -> str:
    from course.measure import cuda_tools

    for cand in ([given] if given else []) + [cuda_tools.find_tool("compute-sanitizer") or ""]:
        if cand and (shutil.which(cand) or pathlib.Path(cand).exists()):
            return cand
    raise SystemExit("compute-sanitizer not found: put it on PATH, or pass --sanitizer /path/to/compute-sanitizer "
                     "(it comes with the CUDA toolkit), or use --dry-run for the CPU side only")


def case_names(args) -> list:
    """Case names, read in a child on the CPU backend (this process's backend may be the GPU's)."""
    code = ("import json,course;from course.validation.race_suite import RACE_CASES as R;"
            "print(json.dumps([c.name for c in R]))")
    res = subprocess.run([sys.executable, "-c", code], env=_env("cpu"), cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    if res.returncode:
        raise SystemExit(f"could not import course.validation.race_suite:\n{res.stderr[-3000:]}")
    names = json.loads(res.stdout.strip().splitlines()[-1])
    sel = {n.strip() for n in args.cases.split(",") if n.strip()}
    unknown = sel - set(names)
    if unknown:
        raise SystemExit(f"--cases: unknown case(s) {sorted(unknown)}; known: {', '.join(names)}")
    return [n for n in names if not sel or n in sel]


def run_gpu(H: Script, names: list, sanitizer: str) -> dict:
    """Every case under racecheck (``PARALLEL`` at a time) and the peer styles beside them, on the GPU."""
    args, out = H.args, H.out
    me = str(pathlib.Path(__file__).resolve())
    logs = out / "racecheck"
    logs.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    peers = subprocess.Popen([sys.executable, me, "--role", "peers", "--out", str(out)], env=_env(args.gpu_backend), cwd=ROOT,
                             stdout=open(out / "peers.log", "w"), stderr=subprocess.STDOUT)

    def one(name):
        if time.monotonic() - t_start > TIME_BUDGET_S - 20:
            return name, {"not_run": f"the {TIME_BUDGET_S} s budget was spent before this case started"}
        cmd = [sanitizer] + RACECHECK_ARGS + [sys.executable, me, "--role", "case", "--case", name, "--out", str(out)]
        t0 = time.monotonic()
        try:
            res = subprocess.run(cmd, env=_env(args.gpu_backend), cwd=ROOT, capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
            text, rc = res.stdout + "\n--- stderr\n" + res.stderr, res.returncode
        except subprocess.TimeoutExpired as exc:
            text, rc = f"killed after {CASE_TIMEOUT_S} s\n{exc.stdout or ''}\n{exc.stderr or ''}", 124
        text = text if isinstance(text, str) else str(text)
        all_lines = text.splitlines()
        if len(all_lines) > LOG_HEAD + LOG_TAIL:  # keep the logs small; the counts below read the whole text
            all_lines = all_lines[:LOG_HEAD] + [f"... {len(all_lines) - LOG_HEAD - LOG_TAIL} lines left out ..."] + \
                all_lines[-LOG_TAIL:]
        H.write_text(f"racecheck/{name}.log", "\n".join(all_lines) + "\n")
        rec = parse_racecheck(text)
        rec["exit_code"] = rc
        rec["seconds"] = round(time.monotonic() - t0, 1)
        return name, rec

    results = {}
    with futures.ThreadPoolExecutor(PARALLEL) as pool:
        for name, rec in pool.map(one, names):
            results[name] = rec
            H.log(f"{name:34s} {rec.get('errors', '-')!s:>4} errors {rec.get('warnings', '-')!s:>4} warnings "
                  f"({rec.get('seconds', '-')} s)")
    try:
        peers.wait(timeout=max(10, TIME_BUDGET_S - (time.monotonic() - t_start)))
    except subprocess.TimeoutExpired:
        peers.kill()
        peers.wait()
    H.write_text("peers.log", (out / "peers.log").read_text(errors="replace"))
    sanitizer_version = ""
    try:
        v = subprocess.run([sanitizer, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        sanitizer_version = v.splitlines()[-1] if v else ""
    except Exception as exc:
        sanitizer_version = f"unknown ({type(exc).__name__})"
    with tarfile.open(out / "racecheck_logs.tgz", "w:gz") as tar:
        tar.add(logs, arcname="racecheck")
        if (out / "cases").exists():
            tar.add(out / "cases", arcname="cases")
    return {"racecheck": results, "sanitizer": sanitizer_version, "wall_s": round(time.monotonic() - t_start, 1)}


def build_table(H: Script, names: list, gpu: dict | None, tracer: dict | None) -> dict:
    """The validation table: per case the hand-derived model, racecheck's verdict and the tracer's."""
    out = H.out
    model = json.loads(subprocess.run(
        [sys.executable, "-c",
         "import json,course;from course.validation.race_suite import RACE_CASES as R, case_identity as I;"
         "print(json.dumps({c.name:{'shared':list(c.shared),'global':c.global_,'benign':c.benign,"
         "'note':c.note,'tags':list(c.tags),**I(c)} for c in R}))"],
        env=_env("cpu"), cwd=ROOT, capture_output=True, text=True, timeout=120).stdout.strip().splitlines()[-1])
    peers = json.loads((out / "peer_styles.json").read_text()) if (out / "peer_styles.json").exists() else {}
    prov = dict(peers.get("provenance") or {})
    if gpu:
        prov["sanitizer"] = gpu.get("sanitizer")
        prov["racecheck_args"] = " ".join(RACECHECK_ARGS)
        prov["wall_s"] = gpu.get("wall_s")
    prov.setdefault("date", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    cases = []
    for n in names:
        rec = {"name": n, "model": model.get(n)}
        if gpu:
            rc = gpu["racecheck"].get(n, {})
            gside = out / "cases" / f"{n}.json"
            rec["gpu"] = json.loads(gside.read_text()) if gside.exists() else {"launched": False, "error": "no record"}
            rec["racecheck"] = rc
            rec["racecheck_shared"] = racecheck_severities(rc) if rc.get("summary") or rc.get("pairs") is not None else None
        if tracer:
            rec["tracer"] = tracer.get(n)
        cases.append(rec)
    table = {"provenance": prov, "cases": cases, "peer_styles": peers.get("workloads")}
    table["summary"] = summarise(table)
    H.write_text("race_validation.json", json.dumps(table, indent=1))
    H.write_text("race_validation.md", markdown(table))
    return table


def summarise(table: dict) -> dict:
    s = {"cases": len(table["cases"]), "racecheck_run": 0, "racecheck_matches_model": 0, "model_differs": [],
         "launch_errors": [], "reference_failures": []}
    for c in table["cases"]:
        m = c.get("model") or {}
        if c.get("racecheck_shared") is not None and c["racecheck"].get("summary"):
            s["racecheck_run"] += 1
            if sorted(c["racecheck_shared"]) == sorted(m.get("shared", [])):
                s["racecheck_matches_model"] += 1
            else:
                s["model_differs"].append(c["name"])
        g = c.get("gpu") or {}
        if g.get("error"):
            s["launch_errors"].append(c["name"])
        if g.get("reference_ok") is False:
            s["reference_failures"].append(c["name"])
    peers = table.get("peer_styles") or []
    s["peer_styles"] = {"workloads": len(peers), "ok": sum(1 for p in peers if p.get("ok")),
                        "failed": [p["name"] for p in peers if not p.get("ok")],
                        "not_as_expected": [p["name"] for p in peers if not p.get("as_expected", p.get("ok"))]}
    return s


def markdown(table: dict) -> str:
    p, s = table["provenance"], table["summary"]
    rows = [
        "# Race checks: the hand-derived model, compute-sanitizer racecheck, the tracer",
        "",
        f"Device: {p.get('device')}, driver {p.get('driver')}, numba-cuda {p.get('numba_cuda')}, "
        f"sanitizer {p.get('sanitizer')}, date {p.get('date')}, run {p.get('run')}.",
        "",
        f"{s['racecheck_run']} of {s['cases']} cases ran under racecheck; {s['racecheck_matches_model']} agree with "
        "the model on shared memory (racecheck does not look at global memory).",
        "",
        "| case | model shared | model global | racecheck (E/W) | tracer shared | tracer global |",
        "|---|---|---|---|---|---|",
    ]
    for c in table["cases"]:
        m = c.get("model") or {}
        rc = c.get("racecheck") or {}
        tr = c.get("tracer") or {}
        rcs = f"{rc.get('errors', '-')}/{rc.get('warnings', '-')}" if rc else "-"
        rows.append(f"| {c['name']} | {','.join(m.get('shared', [])) or '-'}{' (benign)' if m.get('benign') else ''} | "
                    f"{'yes' if m.get('global') else '-'} | {rcs} | {','.join(tr.get('shared', [])) or '-'} | "
                    f"{'yes' if tr.get('global') else '-'} |")
    peers = table.get("peer_styles") or []
    if peers:
        rows += ["", "Peer styles: " + ", ".join(f"{q['name']} ({q['style']}): {'ok' if q.get('ok') else 'FAILED ' + q.get('error', '')[:60]}"
                                                 for q in peers)]
    return "\n".join(rows) + "\n"


# --------------------------------------------------------------------------------------------------
# Importing a GPU run into data/


def find_run(path: pathlib.Path) -> pathlib.Path:
    """The directory holding race_validation.json inside a run's output (a directory or a .tgz)."""
    if path.is_file() and path.suffix in (".tgz", ".gz"):
        dest = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"race_validation_import_{os.getpid()}"
        with tarfile.open(path) as tar:
            tar.extractall(dest, filter="data")
        path = dest
    hits = sorted(path.rglob("race_validation.json"))
    if not hits:
        inner = sorted(path.rglob("lane.tgz"))
        if inner:
            return find_run(inner[0])
        raise SystemExit(f"--import: no race_validation.json under {path}")
    return hits[0].parent


def import_run(args) -> None:
    run = find_run(pathlib.Path(args.import_from))
    table = json.loads((run / "race_validation.json").read_text())
    if not any(c.get("racecheck") for c in table["cases"]):
        raise SystemExit(f"--import: {run} holds no racecheck results (a --dry-run?): nothing to record")
    tmp = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"race_validation_tracer_{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    me = str(pathlib.Path(__file__).resolve())
    subprocess.run([sys.executable, me, "--role", "tracer", "--out", str(tmp)], env=_env("cpu"), cwd=ROOT, check=True,
                   timeout=600)
    tracer = json.loads((tmp / "tracer_side.json").read_text())
    for c in table["cases"]:
        c["tracer"] = tracer.get(c["name"])
        log = run / "racecheck" / f"{c['name']}.log"
        if log.exists() and c.get("racecheck"):  # read the pairs again with this version's parser (the counts
            again = parse_racecheck(log.read_text())  # come from the run: its log was shortened)
            c["racecheck"]["pairs"] = again["pairs"]
        for q in (c.get("racecheck") or {}).get("pairs") or []:
            # the source text of each line, so that the record survives edits that move lines (import right after
            # the run, before the suite's files change)
            for side in (q.get("first"), q.get("second")):
                if side and side.get("line") and side.get("file") in SUITE_FILES:
                    side["source"] = linecache.getline(str(SUITE_FILES[side["file"]]), side["line"]).strip()
        # keep the table small: one example pair per distinct line pair
        pairs = (c.get("racecheck") or {}).get("pairs") or []
        seen, keep = set(), []
        for q in pairs:
            key = (q.get("severity"), (q.get("first") or {}).get("line"), (q.get("second") or {}).get("line"))
            if key not in seen:
                seen.add(key)
                keep.append(q)
        if c.get("racecheck"):
            c["racecheck"]["pairs"] = keep
    table["summary"] = summarise(table)
    table["imported"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    pathlib.Path(args.data).write_text(scrub(json.dumps(table, indent=1)) + "\n")
    print(markdown(table))
    print(f"wrote {args.data}")


ROLES = {"case": role_case, "peers": role_peers, "tracer": role_tracer}


def child(args) -> bool:
    """``--role case|peers|tracer``: a process this script started; it does its part and the harness exits 0."""
    if args.role in ROLES:
        ROLES[args.role](args)
        return True
    return False


def main(argv=None) -> int:
    H = Script(__doc__, "validate_races", reps=None, arguments=arguments, argv=argv, child=child,
               gpu="children", out_required=False)
    args = H.args
    if not args.import_from and not args.out:
        H.parser.error("give --out DIR (a run) or --import PATH (record a run in data/)")
    if args.import_from:
        import_run(args)
        return 0
    out = H.out
    sanitizer = None if H.dry_run else find_sanitizer(args.sanitizer)  # before anything starts
    names = case_names(args)
    me = str(pathlib.Path(__file__).resolve())
    if H.dry_run:
        sel = ["--cases", args.cases] if args.cases else []
        subprocess.run([sys.executable, me, "--role", "tracer", "--out", str(out)] + sel, env=_env("cpu"), cwd=ROOT,
                       check=True, timeout=600)
        subprocess.run([sys.executable, me, "--role", "peers", "--out", str(out)], env=_env("cpu"), cwd=ROOT,
                       check=True, timeout=600)
        tracer = json.loads((out / "tracer_side.json").read_text())
        table = build_table(H, names, None, tracer)
    else:
        gpu = run_gpu(H, names, sanitizer)
        table = build_table(H, names, gpu, None)
    print((out / "race_validation.md").read_text())
    s = table["summary"]
    print(json.dumps(s, indent=1))
    H.log(f"{len(names)} cases: race_validation.json, race_validation.md{'' if H.dry_run else ', racecheck_logs.tgz'} "
          f"in {out.name}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
