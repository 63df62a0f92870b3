"""Run numba-cuda's own simulator tests on numba's stock simulator and on the course's CPU engine.

    .venv/bin/python scripts/run_numba_sim_tests.py                  # both backends, every module
    .venv/bin/python scripts/run_numba_sim_tests.py --backends cpu   # one backend
    .venv/bin/python scripts/run_numba_sim_tests.py --modules test_warp_ops test_sync
    .venv/bin/python scripts/run_numba_sim_tests.py --report-only    # rebuild the JSON from raw records
    .venv/bin/python scripts/run_numba_sim_tests.py --backends --unskip test_warp_ops test_sync test_atomics
        # only: those modules on the engine with numba's skip_on_cudasim marks removed

The tests are the ones numba-cuda ships in ``numba/cuda/tests/cudapy`` and ``numba/cuda/tests/cudasim``.
Each test module runs in its own child process (``--child``) with ``NUMBA_ENABLE_CUDASIM=1`` and
``COURSE_BACKEND`` set: ``numba-sim`` is numba's simulator as shipped, ``cpu`` is the course's engine,
installed by ``import course``, which the child does before pytest imports numba.  pytest-timeout
stops any single test after ``--timeout`` seconds and the parent kills a child that outlives its
module budget, so nothing hangs.  Raw per-test records go to ``--raw-dir`` (one JSON line per test,
appended as tests finish, so an interrupted run resumes where it stopped); the summary with counts and
the classified differences goes to ``data/engine_numba_tests.json``.

Two shims stand in for numba-cuda's test setup, which its wheel does not ship: the repository's
``conftest.py`` fixture ``initialize_from_pytest_config`` (it only reads one command-line option), and
the ``filecheck`` package, which ``numba.cuda.testing`` imports but only FileCheck-based tests use —
those check PTX/LLVM output and skip themselves on the simulator.  A ``sitecustomize.py`` (written
under the raw folder, put on ``PYTHONPATH``) imports ``course`` in every Python process the tests
start, so tests that run a kernel in a fresh ``python -c`` (test_print) use the backend under test.

``--unskip`` runs chosen modules once more on the engine with numba's ``skip_on_cudasim`` marks
removed: those tests use what numba's simulator lacks (warp intrinsics above all), so they are
reported apart, with the GPU-only ones (that inspect PTX/LLVM or expect compile-time errors) named.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys
import time
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
RAW_DIR = ROOT / "build" / "engine_numba_tests"  # raw records, not committed
OUT = ROOT / "data" / "engine_numba_tests.json"
PACKAGES = ("numba.cuda.tests.cudapy", "numba.cuda.tests.cudasim")
BACKENDS = ("numba-sim", "cpu")


# --------------------------------------------------------------------------------------------------
# Child: one module, one backend, inside pytest


def _install_filecheck_stub():
    """numba.cuda.testing imports filecheck at module level; give it names that fail only if used."""
    try:
        import filecheck  # noqa: F401

        return
    except ImportError:
        pass

    def unavailable(*args, **kwargs):
        raise RuntimeError("filecheck is not installed (FileCheck-based tests need a GPU build anyway)")

    pkg = types.ModuleType("filecheck")
    pkg.__path__ = []
    names = {
        "matcher": ["Matcher"],
        "options": ["Options"],
        "parser": ["Parser", "pattern_for_opts"],
        "finput": ["FInput"],
    }
    sys.modules["filecheck"] = pkg
    for sub, attrs in names.items():
        mod = types.ModuleType(f"filecheck.{sub}")
        for attr in attrs:
            setattr(mod, attr, unavailable)
        sys.modules[f"filecheck.{sub}"] = mod
        setattr(pkg, sub, mod)


class _Recorder:
    """pytest plugin: one JSON line per test (outcome, seconds, short message) and the fixture numba-cuda's conftest gives."""

    def __init__(self, path, module, backend):
        self.path = path
        self.module = module
        self.backend = backend
        self.current = {}

    def pytest_addoption(self, parser):
        parser.addoption("--dump-failed-filechecks", action="store_true", default=False)

    def _fixture(self):
        import pytest

        @pytest.fixture(scope="class")
        def initialize_from_pytest_config(request):
            request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")

        return initialize_from_pytest_config

    def pytest_collectreport(self, report):
        if report.failed:
            self._write({
                "test": f"{_short_module(self.module)}::<collection>", "outcome": "error", "phase": "collect",
                "seconds": 0.0, "message": _short(report),
            })

    def pytest_runtest_logreport(self, report):
        rec = self.current.setdefault(report.nodeid, {"outcome": "passed", "seconds": 0.0, "message": ""})
        rec["seconds"] += report.duration
        if report.when == "call":
            if report.skipped:
                rec.update(outcome="skipped", message=_skip_reason(report))
            elif report.failed:
                rec.update(outcome="failed", phase="call", message=_short(report))
        elif report.skipped and rec["outcome"] == "passed":
            rec.update(outcome="skipped", message=_skip_reason(report))
        elif report.failed and rec["outcome"] in ("passed", "skipped"):
            rec.update(outcome="error", phase=report.when, message=_short(report))

    def pytest_runtest_logfinish(self, nodeid, location):
        rec = self.current.pop(nodeid, None)
        if rec is not None:
            self._write({"test": _canonical(nodeid, self.module), **rec})

    def _write(self, rec):
        rec["backend"] = self.backend
        rec["seconds"] = round(rec["seconds"], 4)
        with open(self.path, "a") as fh:
            fh.write(json.dumps(rec) + "\n")


def _canonical(nodeid, module):
    """'…/cudapy/test_x.py::TestC::test_m' -> 'cudapy.test_x::TestC::test_m' (same on every machine)."""
    return f"{_short_module(module)}::{nodeid.partition('::')[2]}"


def _short(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    else:
        text = str(report.longrepr)
    text = text.strip()
    return text[:1500]


def _skip_reason(report):
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2]).removeprefix("Skipped: ")[:300]
    return str(lr)[:300]


def child(module, backend, record, timeout, unskip=False):
    """Run one test module under pytest in this process, on ``backend``."""
    os.environ["COURSE_BACKEND"] = backend
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    sys.path.insert(0, str(ROOT))
    import course  # (chooses the backend, installs the engine on cpu, before numba loads)

    assert course.BACKEND == backend, course.BACKEND
    _install_filecheck_stub()
    if unskip:
        # run the tests numba-cuda marks skip_on_cudasim (e.g. warp intrinsics, which its simulator lacks)
        import numba.cuda.testing as testing

        testing.skip_on_cudasim = lambda reason: (lambda test: test)
    import pytest

    rec = _Recorder(record, module, backend)
    plugin = types.ModuleType("course_numba_sim_plugin")
    plugin.initialize_from_pytest_config = rec._fixture()
    plugin.pytest_addoption = rec.pytest_addoption
    plugin.pytest_collectreport = rec.pytest_collectreport
    plugin.pytest_runtest_logreport = rec.pytest_runtest_logreport
    plugin.pytest_runtest_logfinish = rec.pytest_runtest_logfinish
    empty_ini = pathlib.Path(record).with_suffix(".ini")
    empty_ini.write_text("[pytest]\n")
    args = [
        "-c", str(empty_ini), "-p", "no:cacheprovider", "--import-mode=importlib", "-q", "-rN",
        f"--timeout={timeout}", "--timeout-method=signal", "-W", "ignore", "--pyargs", module,
    ]
    return pytest.main(args, plugins=[plugin])


# --------------------------------------------------------------------------------------------------
# Parent: every module in a child process, then the report


def _done_modules(raw):
    done = set()
    if raw.exists():
        for line in raw.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("module_done"):
                done.add(rec["module"])
    return done


SITECUSTOMIZE = """\
# Written by scripts/run_numba_sim_tests.py: some numba-cuda tests run their kernels in a fresh
# `python -c ...` subprocess; importing course here makes those use the backend under test too.
import os
if os.environ.get("COURSE_NUMBA_TESTS_BACKEND"):
    import course  # noqa: F401
"""


def _site_dir(raw_dir):
    site = raw_dir / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return site


def engine_version():
    """The last commit that touched course/engine/, '+dirty' when the working copy differs from it."""
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("log", "-1", "--format=%h", "--", "course/engine") or "unknown"
    dirty = git("status", "--porcelain", "--", "course/engine")
    return commit + ("+dirty" if dirty else "")


def run_backend(backend, modules, timeout, module_budget, raw_dir, unskip=False):
    """Run every module on one backend (resuming where a previous run stopped)."""
    raw = raw_dir / (f"{backend}-unskipped.jsonl" if unskip else f"{backend}.jsonl")
    done = _done_modules(raw)
    site = _site_dir(raw_dir)
    for i, module in enumerate(modules, 1):
        if module in done:
            continue
        t0 = time.time()
        engine = engine_version()  # per module: the lead may commit while a pass runs
        cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", module,
               "--backend", backend, "--record", str(raw), "--timeout", str(timeout)] + (["--unskip"] if unskip else [])
        env = dict(os.environ, COURSE_BACKEND=backend, NUMBA_ENABLE_CUDASIM="1", COURSE_NUMBA_TESTS_BACKEND=backend,
                   PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
        status = "ok"
        try:
            proc = subprocess.run(cmd, env=env, cwd=raw_dir, capture_output=True, text=True, timeout=module_budget)
            rc = proc.returncode
            tail = (proc.stdout + proc.stderr)[-600:]
        except subprocess.TimeoutExpired:
            rc, status, tail = None, "module budget exceeded", ""
        secs = time.time() - t0
        # pytest exit codes: 0 all passed, 1 some failed, 5 none collected; anything else is a crash
        if rc not in (0, 1, 2, 5):  # 2: collection errors, recorded by the plugin
            status = status if rc is None else f"child exited with {rc}"
            with open(raw, "a") as fh:
                fh.write(json.dumps({"test": f"{_short_module(module)}::<module>", "outcome": "error",
                                     "phase": "runner", "seconds": round(secs, 2), "backend": backend,
                                     "message": f"{status}: {tail}"}) + "\n")
        with open(raw, "a") as fh:
            fh.write(json.dumps({"module_done": True, "module": module, "seconds": round(secs, 2), "rc": rc,
                                 "engine": engine}) + "\n")
        print(f"[{backend}] {i:3d}/{len(modules)} {module:55s} rc={rc} {secs:7.1f} s", flush=True)


def _short_module(module):
    parts = module.split(".")
    return f"{parts[-2]}.{parts[-1]}"


def _forget(raw, modules):
    """Drop the raw records of ``modules`` so that they run again."""
    prefixes = tuple(_short_module(m) + "::" for m in modules)
    keep = []
    for line in raw.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("module_done") and rec["module"] in modules:
            continue
        if "test" in rec and rec["test"].startswith(prefixes):
            continue
        keep.append(line)
    raw.write_text("".join(k + "\n" for k in keep))


def load_raw(raw_dir, backend):
    """Per test: the record of one backend (last one wins), and per module: its run record."""
    return load_raw_file(raw_dir / f"{backend}.jsonl")


def load_raw_file(raw):
    """Per test: its record (last one wins), and per module: its run record."""
    tests, modules = {}, {}
    if not raw.exists():
        return tests, modules
    for line in raw.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("module_done"):
            modules[rec["module"]] = rec
            continue
        name = rec["test"]
        if name.startswith("numba.cuda.tests."):  # records written before names were shortened
            name = name.removeprefix("numba.cuda.tests.")
            rec["test"] = name
        if name.endswith("::<module>") and rec.get("message", "").startswith("child exited with 2"):
            continue  # the collection error itself is recorded as <collection>
        tests[name] = rec
    return tests, modules


# Why a test that passes on numba's simulator does not pass on the engine, decided by reading the
# test and the engine's message.  Keys are test ids or module prefixes (longest match wins).
# Categories: "engine bug", "intentional difference", "warp intrinsics now present", "test harness".
BUG = "engine bug"
INTENDED = "intentional difference"
HARNESS = "test harness issue"
CLASSIFIED: dict[str, tuple[str, str]] = {
    "cudapy.test_array_alignment::TestCudasimUnsupportedAlignment": (
        INTENDED, "the engine accepts alignment= on cuda.local/shared.array, as a GPU does; numba's simulator refuses "
        "it ('not supported in cudasim') and the test checks for that refusal. The course's own kernels need it "
        "(transpose vec4, the vectorized matmul, complex128 shared tiles: alignment=16 is what lets ptxas emit "
        "16-byte shared instructions), so refusing it would stop them running on the CPU"),
    "cudapy.test_errors::TestJitErrors": (
        INTENDED, "same exception type as numba, but the engine's own message wording (e.g. 'blocks_per_grid (griddim) "
        "must be an int or a tuple of 1 to 3 ints'); the test looks for numba's exact sentence"),
    "cudapy.test_userexc::TestUserExc::test_user_exception": (
        INTENDED, "the message names block and thread in the engine's words ('block (0, 0, 0), thread (0, 0, 0)'); "
        "the test looks for the simulator's 'tid=[0, 0, 0] ctaid=[0, 0, 0]'"),
    "cudapy.test_complex::TestAtomicOnComplexComponents": (
        BUG, "atomics on arr.real / arr.imag refused (engine-bugs.md #1)"),
    "cudapy.test_exception::TestException::test_zero_division_error_in_debug": (
        BUG, "debug=True kernels did not raise on division by zero (engine-bugs.md #4)"),
    "cudapy.test_exception": (BUG, "kernel exceptions lost their Python type (engine-bugs.md #2)"),
    "cudapy.test_forall::TestForAll::test_forall_no_work": (BUG, "forall(0) raised instead of launching nothing (engine-bugs.md #3)"),
    "cudapy.test_record_dtype": (BUG, "record (structured scalar) arguments arrive as 0-d arrays (engine-bugs.md #5)"),
    "cudasim.test_cudasim_issues::TestCudaSimIssues::test_record_access": (
        BUG, "record (structured scalar) arguments arrive as 0-d arrays (engine-bugs.md #5)"),
    "cudapy.test_retrieve_autoconverted_arrays": (BUG, "cuda.In/Out/InOut arguments not unwrapped (engine-bugs.md #6)"),
    "cudapy.test_sm::TestSharedMemory::test_shared_recarray": (
        BUG, "a record element read from one array cannot be stored into another (engine-bugs.md #7)"),
    "cudapy.test_recursion::TestSelfRecursion::test_inner_explicit_sig": (
        BUG, "a self-recursive device function reached through a closure sends the engine's swapper into endless recursion (engine-bugs.md #8)"),
}

# Tests run with skip_on_cudasim removed that cannot pass on any simulator, or fail for a known reason.
GPU_ONLY = "GPU-only test"
UNSKIPPED_CLASSIFIED: dict[str, tuple[str, str]] = {
    "cudapy.test_warp_ops::TestCudaWarpOperations::test_shfl_sync_const_mode_val": (
        GPU_ONLY, "inspects the generated LLVM IR (kernel.inspect_llvm)"),
    "cudapy.test_warp_ops::TestCudaWarpOperations::test_shfl_sync_const_mode_val_sm100": (
        GPU_ONLY, "compiles for sm_100 and inspects the generated code"),
    "cudapy.test_warp_ops::TestCudaWarpOperations::test_vote_sync_const_mode_val_sm100": (
        GPU_ONLY, "compiles for sm_100 and inspects the generated code"),
    "cudapy.test_warp_ops::TestCudaWarpOperations::test_vote_sync_type_validation": (
        GPU_ONLY, "expects numba's compile-time typing errors for explicit signatures (no simulator applies "
        "signatures); on the way it stores a full ballot into int32, which raises on the engine (engine-bugs.md #10)"),
    "cudapy.test_warp_ops::TestCudaWarpOperations::test_vote_sync_const_mode_val": (
        GPU_ONLY, "inspects the generated LLVM IR (kernel.inspect_llvm); before engine a36fe8d its kernels also "
        "failed on the engine (engine-bugs.md #10)"),
    "cudapy.test_warp_ops::TestCudaWarpOperations::test_lanemask_lt": (BUG, "cuda.lanemask_lt() is missing (engine-bugs.md #9)"),
}

# Messages that identify an intentional difference without reading the test.
AUTO_RULES = [
    ("barrier divergence", "intentional difference",
     "strict barrier-divergence detection: threads of one block wait at different syncthreads() calls"),
    ("finished without reaching it", "intentional difference",
     "strict barrier detection: some threads exited before a syncthreads() the others wait at"),
    ("is negative; CUDA has no", "intentional difference",
     "negative indices are errors on the engine (numba's simulator wraps them like NumPy)"),
]


def classify(test, engine_rec):
    best = None
    for key, value in CLASSIFIED.items():
        if test == key or test.startswith(key):
            if best is None or len(key) > len(best[0]):
                best = (key, value)
    if best is not None:
        return best[1]
    msg = engine_rec.get("message", "") if engine_rec else ""
    for needle, cat, why in AUTO_RULES:
        if needle in msg:
            return cat, why
    return "unclassified", "not reviewed yet"


def machine_facts():
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
        "cpu": cpu, "cpu_count": os.cpu_count(), "python": platform.python_version(),
        "numba": md.version("numba"), "numba_cuda": md.version("numba-cuda"),
        "numpy": md.version("numpy"), "greenlet": md.version("greenlet"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def report(raw_dir, out, modules_run, timeout):
    """Merge both backends' raw records into one JSON file with counts and classified differences."""
    stock, stock_mods = load_raw(raw_dir, "numba-sim")
    eng, eng_mods = load_raw(raw_dir, "cpu")
    names = sorted(set(stock) | set(eng))
    counts = {}
    for backend, recs in (("numba-sim", stock), ("cpu", eng)):
        c = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "missing": 0}
        for n in names:
            r = recs.get(n)
            if r is None:
                c["missing"] += 1
            else:
                c[{"error": "errors"}.get(r["outcome"], r["outcome"])] += 1
        mods = stock_mods if backend == "numba-sim" else eng_mods
        c["seconds"] = round(sum(m["seconds"] for m in mods.values()), 1)
        engines = {}
        for m, rec in mods.items():
            engines.setdefault(rec.get("engine", "unknown"), []).append(_short_module(m))
        c["engine_commits"] = {k: (len(v) if len(v) > 5 else v) for k, v in engines.items()}
        counts[backend] = c
    per_test, regressions, improvements = [], [], []
    for n in names:
        s, e = stock.get(n), eng.get(n)
        row = {"test": n,
               "numba_sim": s["outcome"] if s else None, "cpu": e["outcome"] if e else None,
               "numba_sim_s": s["seconds"] if s else None, "cpu_s": e["seconds"] if e else None}
        per_test.append(row)
        if s and s["outcome"] == "passed" and (e is None or e["outcome"] != "passed"):
            cat, why = classify(n, e)
            regressions.append({"test": n, "cpu": e["outcome"] if e else None, "category": cat, "reason": why,
                                "engine_message": (e or {}).get("message", "")[:800]})
        elif e and e["outcome"] == "passed" and (s is None or s["outcome"] != "passed"):
            improvements.append({"test": n, "numba_sim": s["outcome"] if s else None,
                                 "numba_sim_message": (s or {}).get("message", "")[:300]})
    by_cat = {}
    for r in regressions:
        by_cat[r["category"]] = by_cat.get(r["category"], 0) + 1
    unskipped, unskipped_mods = load_raw_file(raw_dir / "cpu-unskipped.jsonl")
    extra = None
    if unskipped:
        c = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
        for r in unskipped.values():
            c[{"error": "errors"}.get(r["outcome"], r["outcome"])] += 1
        extra = {
            "what": ("tests numba-cuda marks skip_on_cudasim, run on the engine with that mark removed "
                     "(their kernels use features numba's simulator lacks, such as warp intrinsics); "
                     "numba's simulator cannot run them"),
            "modules": sorted(_short_module(m) for m in unskipped_mods),
            "engine_commits": sorted({m.get("engine", "unknown") for m in unskipped_mods.values()}),
            "counts": c,
            "tests": [{"test": n, "cpu": r["outcome"], "message": r.get("message", "")[:600],
                       **(dict(zip(("category", "reason"), UNSKIPPED_CLASSIFIED.get(n, ("unclassified", "not reviewed"))))
                          if r["outcome"] != "passed" else {})}
                      for n, r in sorted(unskipped.items())],
        }
    doc = {
        "what": ("numba-cuda's own simulator tests (numba/cuda/tests/cudapy and cudasim, NUMBA_ENABLE_CUDASIM=1) "
                 "run on numba's stock simulator (COURSE_BACKEND=numba-sim) and on the course's CPU engine "
                 "(COURSE_BACKEND=cpu); CPU-only runs, no GPU involved"),
        "command": "python scripts/run_numba_sim_tests.py",
        "machine": machine_facts(),
        "per_test_timeout_s": timeout,
        "modules": modules_run,
        "counts": counts,
        "passed_on_numba_sim_not_on_cpu": {"count": len(regressions), "by_category": by_cat, "tests": regressions},
        "passed_on_cpu_not_on_numba_sim": {"count": len(improvements), "tests": improvements},
        "tests": per_test,
    }
    if extra:
        doc["engine_with_skip_on_cudasim_removed"] = extra
        print(f"engine, skip_on_cudasim removed ({', '.join(extra['modules'])}): {extra['counts']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{'backend':10s} {'passed':>7s} {'failed':>7s} {'skipped':>8s} {'errors':>7s} {'missing':>8s} {'seconds':>9s}")
    for b, c in counts.items():
        print(f"{b:10s} {c['passed']:7d} {c['failed']:7d} {c['skipped']:8d} {c['errors']:7d} {c['missing']:8d} {c['seconds']:9.1f}")
    print(f"passed on numba-sim but not on the engine: {len(regressions)} {by_cat}")
    print(f"passed on the engine but not on numba-sim: {len(improvements)}")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def main(argv=None):
    """Command line: run the children (or be one), then write the report."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", nargs="*", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument("--modules", nargs="+", help="module names (test_warp_ops or numba.cuda.tests.cudapy.test_warp_ops)")
    p.add_argument("--timeout", type=float, default=120, help="seconds per test (pytest-timeout)")
    p.add_argument("--module-budget", type=float, default=1800, help="seconds per module before its child is killed")
    p.add_argument("--raw-dir", type=pathlib.Path, default=RAW_DIR)
    p.add_argument("--out", type=pathlib.Path, default=OUT)
    p.add_argument("--fresh", action="store_true", help="forget earlier raw records of the chosen backends")
    p.add_argument("--redo", action="store_true", help="run the chosen --modules again (their old records are replaced)")
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--unskip", nargs="*", metavar="MODULE",
                   help="also run these modules on the engine with numba's skip_on_cudasim marks removed "
                        "(default with no names: test_warp_ops)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--backend", help=argparse.SUPPRESS)
    p.add_argument("--record", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return child(a.child, a.backend, a.record, a.timeout, unskip=a.unskip is not None)
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    a.raw_dir.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    all_modules = _all_modules_without_numba()
    if a.modules:
        wanted = {m.split(".")[-1] for m in a.modules}
        modules = [m for m in all_modules if m.split(".")[-1] in wanted]
    else:
        modules = all_modules
    if not a.report_only:
        for backend in a.backends:
            raw = a.raw_dir / f"{backend}.jsonl"
            if a.fresh and raw.exists():
                raw.unlink()
            if a.redo and raw.exists():
                _forget(raw, {m for m in modules})
            run_backend(backend, modules, a.timeout, a.module_budget, a.raw_dir)
        if a.unskip is not None and not a.child:
            wanted = set(a.unskip or ["test_warp_ops"])
            unskip_modules = [m for m in all_modules if m.split(".")[-1] in wanted]
            raw = a.raw_dir / "cpu-unskipped.jsonl"
            if raw.exists():
                _forget(raw, set(unskip_modules))
            run_backend("cpu", unskip_modules, a.timeout, a.module_budget, a.raw_dir, unskip=True)
    report(a.raw_dir, a.out, [_short_module(m) for m in modules], a.timeout)
    return 0


def _all_modules_without_numba():
    # find the test folders from numba_cuda's location without importing numba in this (parent) process
    import importlib.util

    spec = importlib.util.find_spec("numba_cuda")
    base = pathlib.Path(spec.origin).parent / "numba" / "cuda" / "tests"
    out = []
    for pkg in PACKAGES:
        folder = base / pkg.split(".")[-1]
        out += [f"{pkg}.{p.stem}" for p in sorted(folder.glob("test_*.py"))]
    return out


if __name__ == "__main__":
    sys.exit(main())
