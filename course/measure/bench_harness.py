"""The harness every ``scripts/gpu/*.py`` runs under, and what happens to its records afterwards.

:class:`Script` parses a script's arguments, refuses to time without a GPU (``--dry-run`` checks on the CPU
engine), keeps the output folder, provenance and run id, runs parts guarded and saves records in the schema
of :class:`course.measure.bench.Bench`.  :func:`scrub` takes machine paths out of what is saved; :func:`import_records`
merges a GPU run's records into ``data/measurements``; ``python -m course.bench import|scrub`` is :func:`main`.

The measuring itself (checks, CUDA-event timing, provenance, records) is :mod:`course.measure.bench`, the layer below;
the CUDA toolkit's tools (Nsight Compute, SASS) are :mod:`course.measure.cuda_tools`.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil
import statistics
import sys
import time
import traceback
from typing import Callable, Iterable, Optional

from course.measure import bench
from course.backend import current as _backend
from course.measure.bench import REQUIRED_FIELDS, Bench, provenance, run_id

PROV_KEYS = ("device", "driver", "numba_cuda", "date", "run", "compute_capability", "sm_count", "cuda_driver_api",
             "clocks_sm_mhz", "clocks_mem_mhz", "clocks_max_sm_mhz", "numba", "numpy", "cupy", "torch", "backend")

_PATH = re.compile(r"(?<![\w.])(?:/(?:root|home|work|opt|tmp|usr|var|mnt|srv|data)(?:/[^\s'\":,)\]]*)?)")


def scrub(text: str) -> str:
    """``text`` with every absolute path of the machine replaced by its last component (``…/name``).

    Records, logs and reports that go into the repository must not name the machine that made them
    (``/root/…``, ``/opt/…``, ``/work/…``): the name of the file is what a reader needs.
    """
    if not isinstance(text, str):
        return text

    def short(m):
        tail = m.group(0).rstrip("/").rsplit("/", 1)[-1]
        return f"…/{tail}" if tail else "…"

    return _PATH.sub(short, text)


class Script:
    """The harness every ``scripts/gpu/*.py`` runs under: arguments, backend check, output folder, run id,
    provenance, logging, guarded parts, records in :class:`Bench`'s schema, queued timing, saving.

    A script starts with::

        ROOT = pathlib.Path(__file__).resolve().parents[2]; sys.path.insert(0, str(ROOT))
        if "--dry-run" in sys.argv: os.environ["COURSE_BACKEND"] = "cpu"   # before course picks a backend
        from course.measure.bench_harness import Script
        H = Script(__doc__, "warps", reps=20)

    ``--out DIR`` (required), ``--dry-run`` (the CPU engine, tiny sizes, checks only, nothing timed) and
    ``--reps`` are always there; ``arguments(ap)`` adds a script's own.  Without a GPU and without
    ``--dry-run`` the script stops with a message saying what to do.
    """

    #: where a script's kernels run, the ``gpu=`` argument: ``"here"`` this process times them (refused without
    #: a GPU unless ``--dry-run``); ``"children"`` this process starts the processes that run them (under Nsight
    #: Compute or compute-sanitizer) and judges their output, so it checks the tool, not the backend, and the
    #: provenance is the children's; ``"none"`` nothing runs on a GPU (the script compiles and reads SASS).
    GPU_MODES = ("here", "children", "none")

    def __init__(self, doc: str, name: str, *, reps: Optional[int] = 20, arguments: Optional[Callable] = None,
                 argv=None, child: Optional[Callable] = None, gpu: str = "here", out_required: bool = True):
        if gpu not in self.GPU_MODES:
            raise ValueError(f"Script(gpu={gpu!r}): use one of {self.GPU_MODES}")
        ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("--out", required=out_required, help="directory for the JSON records (and raw logs)")
        if gpu != "none":
            ap.add_argument("--dry-run", action="store_true",
                            help="CPU backend, tiny sizes, checks only, no timing" if gpu == "here" else
                            "the CPU engine's side only: no GPU, no profiler or sanitizer")
        if reps is not None:
            ap.add_argument("--reps", type=int, default=reps, help=f"timed repetitions per variant (default {reps})")
        if arguments is not None:
            arguments(ap)
        self.args = ap.parse_args(argv)
        self.parser = ap  # for a script's own checks of its arguments: H.parser.error(...)
        self.name = name
        self.dry_run = bool(getattr(self.args, "dry_run", False))
        self.gpu = gpu == "here" and _backend() == "gpu"
        self.t0 = time.time()
        if child is not None and child(self.args):
            sys.exit(0)  # a child process (under ncu or compute-sanitizer) did its launches
        if gpu == "here":
            if self.dry_run and self.gpu:
                raise SystemExit(f"{name}: --dry-run runs on the CPU engine, but this process chose the GPU backend: "
                                 "set COURSE_BACKEND=cpu before course is imported (the script's first lines do).")
            if not self.gpu and not self.dry_run:
                raise SystemExit(f"{name}: no GPU here (backend '{_backend()}'). Run it on a CUDA GPU, "
                                 "or add --dry-run to check its kernels on the CPU engine (nothing is timed).")
        self.out = pathlib.Path(self.args.out) if self.args.out else None
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
        # the children's provenance is theirs (they ran on the GPU); here only the run id is shared
        self.prov = provenance() if gpu == "here" else {"run": run_id()}
        self.benches: dict = {}
        self.failed: dict = {}
        self._failed_recorded: set = set()

    def require_tool(self, command: str, what: str) -> str:
        """The full path of ``command`` (e.g. ``ncu``); without it the script stops saying what it needs and
        that ``--dry-run`` does without."""
        found = shutil.which(command)
        if found is None:
            raise SystemExit(f"{self.name}: `{command}` ({what}) not found. Run on a machine with the CUDA toolkit's "
                             f"tools on PATH, or add --dry-run for the CPU engine's side only.")
        return found

    @property
    def reps(self) -> int:
        return getattr(self.args, "reps", 1)

    def elapsed(self) -> float:
        """Seconds since the script started."""
        return time.time() - self.t0

    def log(self, msg: str) -> None:
        print(f"[{self.elapsed():6.1f}s] {msg}", flush=True)

    def optional(self, module: str):
        """``module`` imported, or None (logged) where it is missing: a missing library is a missing reference,
        not a failed run."""
        try:
            return __import__(module)
        except Exception as e:
            self.log(f"{module} not available ({type(e).__name__}: {e}); its references are skipped")
            return None

    def bench(self, benchmark: str) -> Bench:
        """The :class:`Bench` of ``benchmark`` (one per name, sharing this process's provenance and run id)."""
        if benchmark not in self.benches:
            self.benches[benchmark] = Bench(benchmark, dry_run=self.dry_run, prov=self.prov)
        return self.benches[benchmark]

    def record(self, benchmark: str, variant: str, ms, reps, size, dtype, **extra) -> dict:
        """One record in :class:`Bench`'s schema from a median already taken (``ms`` None where not timed)."""
        rec = {"benchmark": benchmark, "variant": variant, "ms": ms, "reps": reps,
               "size": [int(s) for s in size] if isinstance(size, (list, tuple)) else size, "dtype": dtype}
        rec.update({k: self.prov[k] for k in PROV_KEYS if k in self.prov})
        if self.dry_run:
            rec["dry_run"] = True
        rec.update(extra)
        self.bench(benchmark).records.append(rec)
        return rec

    def time_ms(self, launch: Callable[[], None], reps: Optional[int] = None, *, warmup: int = 2, batch: int = 5,
                timer: str = "numba") -> Optional[float]:
        """Median milliseconds per ``launch()`` (:func:`time_ms`: CUDA events, ``batch`` launches queued
        between two events so the host's launch overhead overlaps the GPU's work); on the CPU one plain
        call (a check that it runs) and None."""
        if not self.gpu:
            launch()
            return None
        return statistics.median(bench.time_ms(launch, reps=reps or self.reps, warmup=warmup, batch=batch, timer=timer))

    def measure(self, benchmark: str, variant: str, fn: Callable[[], None], *, size, dtype, bytes_moved=None,
                flops=None, reps: Optional[int] = None, warmup: int = 2, batch: int = 1, timer: str = "numba",
                **extra) -> dict:
        """Time ``fn`` (already checked) and record it with :meth:`Bench.record` (median, min, max, GB/s or
        TFLOP/s); on the CPU run it once and record no time."""
        if self.gpu:
            times = bench.time_ms(fn, reps=reps or self.reps, warmup=warmup, batch=batch, timer=timer)
        else:
            fn()
            times = None
        return self.bench(benchmark).record(variant, times, size=size, dtype=dtype, bytes_moved=bytes_moved,
                                            flops=flops, **extra)

    def guarded(self, part: str, fn: Callable, *args, **kwargs):
        """Run one part of the script; a failure is logged and kept (a ``failed`` record), the rest goes on."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # reported, recorded, and the script's exit status says so
            self.failed[part] = f"{type(e).__name__}: {scrub(str(e))[:1500]}"
            self.log(f"FAILED {part}: {self.failed[part]}")
            traceback.print_exc()
            return None

    def save(self) -> list:
        """Write every benchmark's records to ``OUT/<benchmark>.json`` (failures as ``failed`` records of the
        script's own benchmark); returns the paths."""
        for part, msg in self.failed.items():
            if part in self._failed_recorded:
                continue
            self._failed_recorded.add(part)
            self.bench(self.name).records.append(
                {"benchmark": self.name, "variant": "failed", "part": part, "failed": msg, "run": run_id(),
                 "ms": None, "dry_run": self.dry_run or None})
        paths = []
        for b in self.benches.values():
            for rec in b.records:
                for k, v in list(rec.items()):
                    if isinstance(v, str):
                        rec[k] = scrub(v)
                    elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                        rec[k] = [scrub(x) for x in v]
            paths.append(b.save(self.out / f"{b.benchmark}.json"))
        return paths

    def finish(self) -> None:
        """Save, print where the records went, and exit 1 when a part failed."""
        paths = self.save()
        n = sum(len(b.records) for b in self.benches.values())
        self.log(f"{n} records -> {', '.join(p.name for p in paths)}; run {run_id()}; "
                 f"{len(self.failed)} failed parts{(': ' + ', '.join(self.failed)) if self.failed else ''}")
        sys.exit(1 if self.failed else 0)

    def write_text(self, name: str, text: str) -> pathlib.Path:
        """A raw artifact (log, SASS, report) under OUT, machine paths scrubbed."""
        p = self.out / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(scrub(text))
        return p


# --- records of a GPU run into the repository -------------------------------------------------------------


def import_records(src_dir, dst_dir=None, *, names: Optional[Iterable[str]] = None, drop=()) -> dict:
    """Merge the records a GPU run wrote (``src_dir/<benchmark>.json``) into the recorded measurements.

    Only real GPU records are taken (no ``dry_run``, a ``device`` that is a GPU, every required field);
    records of the same run already there are replaced, other runs kept.  ``drop`` names records known to
    be wrong as ``"benchmark:variant"`` (the commit that imports says why).  Returns ``{benchmark: count}``.
    """
    drop = set(drop)
    from course.measure import measurements

    src_dir = pathlib.Path(src_dir)
    dst_dir = pathlib.Path(dst_dir or measurements.DATA_DIR)
    done = {}
    for p in sorted(src_dir.glob("*.json")):
        if names is not None and p.stem not in names:
            continue
        try:
            recs = json.loads(p.read_text())
        except json.JSONDecodeError:
            continue
        if not isinstance(recs, list) or not recs or not all(isinstance(r, dict) and "benchmark" in r for r in recs):
            continue
        good = [r for r in recs if not r.get("dry_run") and not r.get("failed") and r.get("backend", "gpu") == "gpu"
                and all(k in r for k in REQUIRED_FIELDS) and str(r.get("device", "")).startswith("NVIDIA")
                and f"{r.get('benchmark')}:{r.get('variant')}" not in drop]
        if not good:
            continue
        good = json.loads(scrub(json.dumps(good)))
        runs_new = {r.get("run") for r in good}
        dst = dst_dir / p.name
        kept = []
        if dst.exists():
            kept = [r for r in json.loads(dst.read_text()) if r.get("run") not in runs_new]
        dst.write_text(json.dumps(kept + good, indent=1) + "\n")
        done[p.stem] = len(good)
    return done


def scrub_file(path) -> bool:
    """Rewrite ``path`` (a JSON list of records or a text log) with every machine path scrubbed; True if it changed."""
    path = pathlib.Path(path)
    text = path.read_text()
    if path.suffix == ".json":
        new = json.dumps(json.loads(scrub(text)), indent=1, ensure_ascii=False) + "\n" if _PATH.search(text) else text
    else:
        new = scrub(text)
    if new != text:
        path.write_text(new)
    return new != text


def main(argv=None) -> int:
    """``python -m course.bench import SRC_DIR`` (records of a GPU run into data/measurements) or
    ``python -m course.bench scrub FILE...`` (machine paths out of recorded files)."""
    ap = argparse.ArgumentParser(prog="python -m course.bench", description=main.__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    imp = sub.add_parser("import", help="merge SRC_DIR/<benchmark>.json (GPU records only) into data/measurements")
    imp.add_argument("src")
    imp.add_argument("--only", default="", help="comma-separated benchmark names")
    imp.add_argument("--dst", default=None)
    imp.add_argument("--drop", action="append", default=[], help="benchmark:variant of a record known to be wrong")
    scr = sub.add_parser("scrub", help="replace machine paths in recorded files")
    scr.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "import":
        done = import_records(args.src, args.dst, names=args.only.split(",") if args.only else None, drop=args.drop)
        for name, n in done.items():
            print(f"{name}: {n} records imported")
        return 0 if done else 1
    for f in args.files:
        print(f"{f}: {'scrubbed' if scrub_file(f) else 'clean'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
