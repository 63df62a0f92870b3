"""Grade submitted notebooks into a gradebook: ``python -m course.grade PATH... --out DIR``.

For each submission (a notebook, or every notebook under a folder: flat files or nbgrader's
``SUBMISSIONS/<student>/<assignment>/*.ipynb``) the grader

1. reads the file once, up front (no links out of the submissions folder, no FIFOs, nothing over
   :data:`MAX_BYTES`), and never writes to it (its SHA-256 is checked again at the end); a notebook of
   any shape (a cell whose source is a number, metadata of the wrong type, a name in GBK bytes) gets
   its own row, never a crashed run;
2. judges each exercise from the notebook's *source*, before anything of the learner's runs: the last
   top-level ``def <target>`` in cell order is linted (:func:`course.exercises.lint_kernel`: only what
   compiles in a CUDA kernel), and the grader compiles only what it linted: a function node it builds
   itself from the linted body and the parameter names (no decorators, annotations or default
   expressions of the learner's are ever evaluated); each exercise is judged in its own forked process
   with time and memory limits, on random inputs seeded from the submission's hash (recorded, so a
   regrade reproduces every score);
3. then runs the notebook in a fresh Jupyter kernel inside :mod:`course.grading.sandbox` (bubblewrap where the
   machine has it, else resource limits; another uid when the grader is root), with a fresh read-only
   copy of the course, empty ``HOME``/``IPYTHONDIR``/``JUPYTER_*`` folders, no bytecode from earlier runs,
   a per-cell and a whole-notebook time limit; every process it starts is killed when it ends. What the
   run did (errors, interrupted cells, output volume) is noted beside the verdicts, never parsed for them.

Nothing is written outside ``--out`` except a scratch folder in ``TMPDIR``, removed at the end; the
gradebook is written once, from the results, after every submission's processes are gone. Changes to
the grader's own files during a run (bytecode included) are detected and reported.

Writes ``DIR/gradebook.csv`` (student, assignment, submission, exercise, score, max_score, status, late,
message) and ``DIR/results.json`` (every check of every exercise, seeds, each notebook's run log,
timings, hashes, the sandbox used). The command line, with its other commands (``export``, ``merge``,
``autograder``, ``gradescope``, ``classroom``: :mod:`course.grading.gradebook`, ``docs/instructors.md``), is
:mod:`course.grading.cli`; ``python -m course.grading.grade`` runs it. The parts live in
:mod:`course.grading` (``source``: reading and compiling code; ``notebook``: running it in the box;
``roster``: the submissions folder) and :mod:`course.grading.sandbox`; this module re-exports what they offer.
"""

from __future__ import annotations

if __name__ == "__main__":  # the command line lives in course.grading.cli: run it before importing anything here
    import runpy

    runpy.run_module("course.grading.cli", run_name="__main__", alter_sys=True)

import csv
import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

import course  # chooses the backend before numba is imported
from course.grading import sandbox
from course import exercises as ex_mod
from course.grading.notebook import (  # the grader's parts, re-exported: its one public surface
    RunLog,
    kernel_env,
    load_notebook,
    run_notebook,
)
from course.grading.roster import (
    MAX_BYTES,
    Entry,
    collect,
    display_name,
    inside,
    parse_time,
    read_entry,
    shard_of,
    submitted_at,
)
from course.grading.output import MAX_STORED, bounded, exercise_seed, new_salt
from course.grading.source import (
    SHARED_LIMIT,
    Found,
    Rejected,
    attr_chain,
    compile_target,
    linted_def,
    scan,
)

#: What other code (tests, course.grading.gradebook, scripts) may use, the grader's parts included.
__all__ = ["FIELDS", "MAX_BYTES", "MAX_STORED", "SHARED_LIMIT", "Entry", "Found", "Rejected", "RunLog", "attr_chain", "collect",
           "compile_target", "display_name", "exercise_seed", "expected_exercises", "grade", "grade_one",
           "inside", "judge_isolated", "judge_one", "judge_submission", "kernel_env",
           "linted_def", "load_notebook", "new_salt", "bounded", "parse_time", "read_entry", "run_notebook", "run_submission",
           "scan", "shard_of", "submitted_at", "tree_hashes", "warm_up", "write_outputs"]

ROOT = pathlib.Path(os.environ.get("COURSE_GRADE_ROOT") or pathlib.Path(__file__).resolve().parents[2])
PACKAGE = pathlib.Path(__file__).resolve().parents[1]
FIELDS = ("student", "assignment", "submission", "exercise", "score", "max_score", "status", "late", "message")
MAX_MESSAGE = 640
# --------------------------------------------------------------------------------------------------
# Reading the notebook's source (never executing it here)


# --------------------------------------------------------------------------------------------------
# Running the notebook in a fresh kernel


# --------------------------------------------------------------------------------------------------
# One submission: read it whatever its shape, judge it from source, then run it in the box


def expected_exercises(path_name: str, nb) -> list:
    """The exercises a submission is graded on: from its metadata, its file name, and what it defines."""
    names = []
    meta = (nb.metadata.get("course", {}) if nb is not None else {}) or {}
    listed = meta.get("exercises", []) if isinstance(meta, dict) else []
    names += [n for n in (listed if isinstance(listed, list) else []) if isinstance(n, str) and n in ex_mod.EXERCISES]
    for m in re.finditer(r"(?<!\d)(\d\d)_", str(path_name)):
        names += [e.name for e in ex_mod.by_chapter(int(m.group(1)))]
    if nb is not None and not names:
        found_defs = set()
        for cell in nb.cells:
            src = cell.get("source", "")
            if cell.get("cell_type") == "code" and isinstance(src, str):
                found_defs.update(re.findall(r"^def\s+(\w+)", src, re.M))
        names += [e.name for e in ex_mod.EXERCISES.values() if e.target in found_defs]
    order = list(ex_mod.EXERCISES)
    return sorted(set(names), key=order.index)


def judge_submission(label: str, data: bytes, opts: dict) -> dict:
    """Every exercise of one submission judged from its source (nothing of the learner's runs): a record."""
    sha = hashlib.sha256(data).hexdigest()
    record = {"submission": label, "sha256": sha, "run": None, "exercises": [], "problems": []}
    nb, problems = load_notebook(data)
    record["problems"] = problems
    name = pathlib.PurePath(label).name
    if nb is None:
        for ex in expected_exercises(name, None) or [""]:
            record["exercises"].append(_row(ex, "unreadable", 0, _max(ex), f"{problems[0]}; open it in JupyterLab, "
                                            "save, and submit again"))
        return record
    names = expected_exercises(name, nb)
    if not names:
        record["exercises"].append(_row("", "missing", 0, 0, "no course exercise found in this notebook (no exercise "
                                        "metadata, no chapter number in its name, no exercise function defined)"))
        return record
    found = scan(nb)
    if opts.get("salt") is None:  # judged alone (not by grade(), which draws one per run): a secret salt too
        opts = {**opts, "salt": new_salt()}
        record["salt"] = opts["salt"]
    for ex in names:
        seed = exercise_seed(sha, ex, opts["salt"])
        record["exercises"].append(judge_isolated(found, ex_mod.get(ex), opts["launch_timeout"], seed=seed))
    return record


def _box_config(work: str, pkg: str, slot: int) -> dict:
    """What :mod:`course.grading.sandbox` needs to start one kernel (a JSON-able dict)."""
    uid = sandbox.uid_for(slot)
    fresh = os.environ.get("COURSE_GRADE_FRESH") or "\0"
    # Python and its packages (the venv may live inside the repository: its folder is bound, the repository
    # is not), the grader's PYTHONPATH entries (the GPU lane's wheels), the course copy
    ro = set(sandbox.python_paths()) | {pkg}
    ro |= {x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x and os.path.isdir(x)}
    ro = {p for p in ro if os.path.realpath(p) not in (str(ROOT.resolve()), os.path.realpath(os.getcwd()))
          and not p.startswith(fresh) and not inside(os.path.realpath(work), os.path.realpath(p))
          or p == pkg}
    return {"uid": uid, "work": work, "bwrap": sandbox.bwrap_path(), "ro_paths": sorted(ro), "readonly": [pkg],
            "address_space": course.BACKEND != "gpu", "limits": sandbox.LIMITS}


def run_submission(data: bytes, opts: dict, slot: int = 0) -> dict:
    """Run one submission's notebook in the box (a fresh kernel, a fresh read-only course copy); its run log."""
    nb, _ = load_notebook(data)
    if nb is None:
        return None
    scratch = opts.get("scratch") or tempfile.gettempdir()
    work = tempfile.mkdtemp(prefix="k-", dir=scratch)
    cgroup = None
    try:
        os.chmod(work, 0o711)
        pkg = os.path.join(work, "pkg")
        shutil.copytree(PACKAGE, os.path.join(pkg, "course"), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for root, _dirs, files in os.walk(pkg):  # read-only: a notebook cannot change the course it imports
            for f in files:
                os.chmod(os.path.join(root, f), 0o444)
            os.chmod(root, 0o555)
        env = kernel_env(work, pkg)
        if opts.get("worker"):  # this process too reads no Jupyter/IPython config but its own empty folders
            for var in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
                os.environ[var] = os.path.join(work, "grader", var.lower())
                os.makedirs(os.environ[var], exist_ok=True)
            os.environ["JUPYTER_PLATFORM_DIRS"] = "1"
            os.environ.pop("JUPYTER_PATH", None)
            os.environ.pop("JUPYTER_CONFIG_PATH", None)
        box = _box_config(work, pkg, slot) if opts.get("sandbox", True) else None
        if box:
            cgroup = box["cgroup"] = sandbox.new_pids_cgroup(f"course-grade-{os.getpid()}-{slot}",
                                                             sandbox.LIMITS["processes"])
        log = run_notebook(nb, work, env, opts["cell_timeout"], opts["timeout"], box=box)
    finally:
        # everything the notebook started, wherever it went (only in a grading worker: elsewhere this process
        # may have children of its own)
        left = sandbox.sweep() if opts.get("worker") else 0
        sandbox.remove_cgroup(cgroup)
        for root, _dirs, _files in os.walk(work):
            os.chmod(root, 0o755)
        shutil.rmtree(work, ignore_errors=True)
    out = {**log.__dict__, "problems": log.problems(), "processes_killed_after": left}
    return out


def grade_one(label: str, data: bytes, opts: dict, slot: int = 0) -> dict:
    """Judge, then run, one submission in this process (what a grading worker does); a JSON-able record."""
    record = judge_submission(label, data, opts)
    t0 = time.monotonic()
    record["run"] = run_submission(data, opts, slot) if record.get("sha256") else None
    record["seconds"] = time.monotonic() - t0
    return _with_run_notes(record)


def _with_run_notes(record: dict) -> dict:
    """Each row's message gains what went wrong in the notebook's run (the verdict stays first)."""
    run = record.get("run") or {}
    notes = (record.get("problems") or [])[:2] + (run.get("problems") or [])[:4]
    if notes and record.get("exercises") and record["exercises"][0]["status"] not in ("unreadable", "refused"):
        note = "; ".join(notes)
        for row in record["exercises"]:
            row["message"] = f"{_shorten(row['message'], 320)} | notebook: {_shorten(note, 300)}"
    return record


def judge_one(found: Found, exercise, launch_timeout: float, seed=None) -> dict:
    """Compile and judge one exercise's kernel from the notebook's source; a gradebook row (never raises)."""
    try:
        kernel = compile_target(found, exercise)
        verdict = ex_mod.judge(exercise, kernel, lint=False, time_limit=launch_timeout, seed=seed)
        return _row(exercise.name, verdict.status, verdict.score, verdict.max_score, verdict.message,
                    results=bounded([r.__dict__ for r in verdict.results]), hint=bounded(verdict.hint), seed=seed)
    except Rejected as rej:
        return _row(exercise.name, rej.status, 0, exercise.max_score, str(rej), hint=bounded(rej.hint), seed=seed)
    except Exception as err:  # compiling the learner's code failed in a way the lint did not foresee
        return _row(exercise.name, "error", 0, exercise.max_score, f"could not compile {exercise.target}: "
                    f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}", seed=seed)


#: Extra address space a judged kernel may allocate (shared/local arrays, big Python ints) before it fails.
JUDGE_MEMORY_BYTES = 2 * 1024**3


def judge_isolated(found: Found, exercise, launch_timeout: float, hard_limit: float | None = None,
                   seed=None) -> dict:
    """:func:`judge_one` in a forked process with a hard time and memory limit, so that nothing one kernel
    does (a C-level loop the engine's watchdog cannot interrupt, a huge allocation, a crash) costs the
    other exercises their rows."""
    # six launches, a trace and a race diagnosis, each under launch_timeout
    limit = hard_limit if hard_limit is not None else 8 * launch_timeout + 30
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: judge, send one JSON line, exit without running any cleanup of the parent's
        code = 0
        try:
            os.close(read)
            if not course.on_gpu():  # CUDA reserves tens of GB of address space: an RLIMIT_AS stops any CUDA
                _limit_memory(JUDGE_MEMORY_BYTES)  # process (05.transpose_mine's timing child); time limit stays
            data = json.dumps(judge_one(found, exercise, launch_timeout, seed)).encode()
            with os.fdopen(write, "wb") as f:
                f.write(data)
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write)
    chunks, deadline = [], time.monotonic() + limit
    with os.fdopen(read, "rb") as f:
        os.set_blocking(f.fileno(), False)
        import select

        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, 9)
                break
            ready, _, _ = select.select([f], [], [], min(left, 1.0))
            if ready:
                chunk = f.read()
                if not chunk:
                    break
                chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        if time.monotonic() >= deadline:
            why = f"judging took longer than {limit:g} s and was stopped (an endless loop the engine could not interrupt?)"
            return _row(exercise.name, "timeout", 0, exercise.max_score, why, seed=seed)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        why = ("judging this kernel ran out of memory or crashed"
               + (f" (signal {sig})" if sig else "") + "; does it allocate a huge array?")
        return _row(exercise.name, "error", 0, exercise.max_score, why, seed=seed)


def _limit_memory(extra: int):
    try:
        import resource

        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[0])
        cap = pages * os.sysconf("SC_PAGE_SIZE") + extra
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (OSError, ValueError, ImportError):
        pass  # not Linux: the time limit still applies


def _shorten(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _max(name):
    return ex_mod.EXERCISES[name].max_score if name in ex_mod.EXERCISES else 0


def _row(exercise, status, score, max_score, message, **extra):
    message = " ".join(bounded(str(message), 4 * MAX_MESSAGE).split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    return {"exercise": exercise, "score": score, "max_score": max_score, "status": status, "message": message, **extra}


def _fallback_rows(label, data, status, message) -> list:
    """Rows for a submission whose grading process failed: one per exercise it would have had."""
    try:
        nb, _ = load_notebook(data) if data is not None else (None, [])
        names = expected_exercises(pathlib.PurePath(label).name, nb) or [""]
    except Exception:
        names = [""]
    return [_row(n, status, 0, _max(n), message) for n in names]


def _worker(conn, label, data, opts, slot):
    """A grading process: send the verdicts as soon as they exist, then the notebook's run log.

    The verdicts leave before anything of the learner's runs, so a notebook that kills this process
    cannot cost a right kernel its marks."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # neither a kernel's print() nor the Jupyter kernel's chatter reaches our output
        os.dup2(devnull, 2)
        sandbox.become_subreaper()
        try:
            record = judge_submission(label, data, opts)
        except BaseException as err:  # report, never leave the parent waiting
            record = {"submission": label, "sha256": hashlib.sha256(data).hexdigest(), "exercises": _fallback_rows(
                label, data, "grader error", f"the grader failed on this submission: {type(err).__name__}: {err}")}
        conn.send(json.dumps({"judged": record}))
        try:
            run = run_submission(data, {**opts, "worker": True}, slot)
        except BaseException as err:
            run = {"killed": f"the grader could not run the notebook: {type(err).__name__}: {err}"[:300],
                   "problems": [f"the grader could not run the notebook: {type(err).__name__}"]}
        conn.send(json.dumps({"run": run}))
    finally:
        sandbox.sweep()
        conn.close()


# --------------------------------------------------------------------------------------------------
# Many submissions


def tree_hashes(root: pathlib.Path) -> dict:
    """SHA-256 of every file under ``root`` (the grader's own code and any bytecode beside it), to notice tampering."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
def warm_up():
    """Import and exercise everything judging needs, before any submission runs (see the module docstring)."""
    import importlib
    import pkgutil

    import course.kernels as kernels

    # everything a notebook may take constants from (``from course.kernels.warps import A_MUL``) is
    # imported now, from files no submission has touched yet
    for mod in pkgutil.iter_modules(kernels.__path__):
        importlib.import_module(f"course.kernels.{mod.name}")
    for package in ("course", "course.trace", "course.measure", "course.show", "course.grading"):
        for mod in pkgutil.iter_modules(importlib.import_module(package).__path__):
            if not mod.ispkg and mod.name not in ("__main__", "grade"):
                try:
                    importlib.import_module(f"{package}.{mod.name}")
                except Exception:  # a module that needs something absent here is not one kernels take constants from
                    pass
    import course.engine

    try:
        import course.trace  # noqa: F401
    except Exception:  # judging reports it per exercise; grading the rest still works
        pass

    import nbclient  # noqa: F401
    import nbformat  # noqa: F401
    from IPython.core.inputtransformer2 import TransformerManager  # noqa: F401

    nb = {"cells": [{"cell_type": "code", "source": "from numba import cuda\n@cuda.jit\ndef vector_add(a, b, out, n):\n"
                     "    i = cuda.grid(1)\n    if i < n:\n        out[i] = a[i] + b[i]\n", "metadata": {}}]}
    import nbformat as nbf

    found = scan(nbf.from_dict(nb))
    kernel = compile_target(found, ex_mod.get("01.vector_add"))
    ex_mod.judge(ex_mod.get("01.vector_add"), kernel, lint=False, seed=0)


def grade(paths, out_dir, jobs=1, cell_timeout=30.0, timeout=300.0, launch_timeout=None, quiet=False,
          shard=None, deadline=None, salt=None, use_sandbox=True, own_process=False) -> list:
    """Grade every notebook under ``paths`` into ``out_dir``; return the gradebook rows.

    ``shard``: (i, n) grades only the submissions :func:`shard_of` gives to shard i; ``deadline``: a UTC
    datetime, work submitted after it is marked late; ``salt``: the salt of every submission's input seeds
    (``None``: a secret one drawn for this run, recorded in results.json so that ``--salt`` regrades it);
    ``own_process``: this process is the grader's alone (the command line), so it may reap and kill every
    process below it at the end (orphans of a grading process killed on its time limit)."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    if own_process:
        sandbox.become_subreaper()
    watched = {"course": PACKAGE}
    if (ROOT / "course").resolve() != PACKAGE.resolve() and (ROOT / "course").is_dir():
        watched["installed course"] = ROOT / "course"
    before = {k: tree_hashes(v) for k, v in watched.items()}
    warm_up()
    box = sandbox.describe() if use_sandbox else {"level": "none"}
    entries = collect(paths)
    if shard:
        entries = [e for e in entries if shard_of(e.label, shard[1]) == shard[0]]
    salt_from, salt = ("--salt", str(salt)) if salt is not None else ("drawn for this run (secret)", new_salt())
    opts = {"cell_timeout": cell_timeout, "timeout": timeout, "salt": salt, "sandbox": use_sandbox,
            "launch_timeout": launch_timeout or ex_mod.LAUNCH_TIME_LIMIT}
    scratch = tempfile.mkdtemp(prefix="course-grade-", dir=sandbox.scratch_parent(tempfile.gettempdir()))
    os.chmod(scratch, 0o711)  # the kernels' own uid must reach their folders inside
    opts["scratch"] = scratch
    if use_sandbox:  # uids no other grader on this machine gives its kernels now (shards side by side)
        sandbox.claim_uids(max(1, jobs))
    per_ex = 8 * opts["launch_timeout"] + 30  # judge_isolated's own limit per exercise
    hard = timeout + 120 + per_ex * len(ex_mod.EXERCISES)
    records, data_of = {}, {}
    for e in entries:
        data_of[e.label] = read_entry(e)
        if data_of[e.label] is None:
            records[e.label] = {"submission": e.label, "sha256": None, "run": None, "refused": e.refused,
                                "exercises": [_row("", "refused", 0, 0, e.refused)]}
    ctx = multiprocessing.get_context("fork")
    pending = [e for e in entries if data_of[e.label] is not None]
    running = {}  # conn -> [entry, process, deadline, slot, record or None]
    free_slots = list(range(max(1, jobs)))
    try:
        while pending or running:
            while pending and free_slots:
                e = pending.pop(0)
                slot = free_slots.pop(0)
                parent, child = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(child, e.label, data_of[e.label], opts, slot), daemon=True)
                proc.start()
                child.close()
                running[parent] = [e, proc, time.monotonic() + hard, slot, None]
                if not quiet:
                    print(f"grading {e.label}", file=sys.stderr)
            ready = multiprocessing.connection.wait(list(running), timeout=1.0)
            for conn in ready:
                st = running[conn]
                e = st[0]
                try:
                    msg = json.loads(conn.recv())
                except (EOFError, OSError, ValueError):
                    msg = None
                if msg and "judged" in msg:
                    st[4] = msg["judged"]
                    continue
                rec = st[4]
                if rec is None:  # died before its verdicts: rows from what the file names
                    rec = {"submission": e.label, "sha256": hashlib.sha256(data_of[e.label]).hexdigest(),
                           "exercises": _fallback_rows(e.label, data_of[e.label], "grader error",
                                                       "the grading process for this submission died")}
                rec["run"] = msg["run"] if msg and "run" in msg else {
                    "killed": "the notebook's run stopped its grading process",
                    "problems": ["the notebook's run stopped its grading process (the verdicts were already in)"]}
                records[e.label] = _with_run_notes(rec)
                running.pop(conn)
                st[1].join(5)
                free_slots.append(st[3])
            now = time.monotonic()
            for conn, st in list(running.items()):
                if now > st[2]:
                    st[1].kill()
                    st[1].join(5)
                    running.pop(conn)
                    free_slots.append(st[3])
                    e = st[0]
                    rec = st[4] or {"submission": e.label, "exercises": _fallback_rows(
                        e.label, data_of[e.label], "timeout", f"grading this submission took longer than {hard:g} s; stopped")}
                    rec["run"] = {"killed": f"grading took longer than {hard:g} s; stopped",
                                  "problems": [f"grading took longer than {hard:g} s; stopped"]}
                    records[e.label] = _with_run_notes(rec)
    finally:
        for st in running.values():
            st[1].kill()
        for st in running.values():
            st[1].join(5)
        if own_process:  # what a killed grading process left behind (its kernel dies with it; their children not)
            sandbox.sweep()
        sandbox.remove_stale_cgroups()
        sandbox.release_uids()
        for root, _dirs, _files in os.walk(scratch):
            try:
                os.chmod(root, 0o755)
            except OSError:
                pass
        shutil.rmtree(scratch, ignore_errors=True)
    after = {k: tree_hashes(v) for k, v in watched.items()}
    changed = sorted(f"{k}: {f}" if k != "course" else f for k in watched
                     for f in set(before[k]) | set(after[k]) if before[k].get(f) != after[k].get(f))
    rows, submissions = [], []
    for e in entries:
        rec = records[e.label]
        data = data_of[e.label]
        try:
            now_data = read_entry(Entry(path=e.path, label=e.label, root=e.root)) if data is not None else None
        except Exception:
            now_data = None
        rec["unchanged"] = data is None or now_data == data
        rec.update(student=e.student, assignment=e.assignment)
        if e.note:
            rec["name_note"] = e.note
            for r in rec["exercises"]:
                r["message"] = _shorten(f"{r['message']} | {e.note}", MAX_MESSAGE)
        when, source = submitted_at(e)
        rec["submitted"] = when.isoformat() if when else None
        rec["submitted_from"] = source
        late = ""
        if deadline is not None and when is not None:
            late = max(0, int((when - deadline).total_seconds() // 60))
        rec["late_minutes"] = late
        submissions.append(rec)
        for r in rec["exercises"]:
            rows.append({"student": e.student, "assignment": e.assignment, "submission": e.label,
                         "exercise": r["exercise"], "score": r["score"], "max_score": r["max_score"],
                         "status": r["status"], "late": late, "message": r["message"]})
    # a check this machine cannot judge (03.bin_counts' local bytes, without the CUDA compiler) is left out of the
    # score and of its maximum: the instructor is told, since another grading machine would count it
    not_judged = sorted({f"{r['exercise']}: {c.get('what', '?')}" for rec in submissions for r in rec["exercises"]
                         for c in r.get("results", []) if c.get("judged") is False})
    summary = {
        "grader": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                   "not_judged": not_judged,
                   "seconds": round(time.time() - started, 1), "jobs": jobs, "cell_timeout": cell_timeout,
                   "timeout": timeout, "launch_timeout": opts["launch_timeout"], "backend": course.BACKEND,
                   "grader_files_changed": changed, "sandbox": box, "salt": salt, "salt_from": salt_from,
                   "grader_code": "a fresh copy of course/, bytecode off" if os.environ.get("COURSE_GRADE_FRESH")
                   and str(PACKAGE).startswith(os.environ["COURSE_GRADE_FRESH"]) else "the checkout's course/",
                   "shard": list(shard) if shard else None,
                   "deadline": deadline.isoformat() if deadline else None},
        "submissions": submissions,
    }
    write_outputs(out_dir, rows, summary)
    if not_judged:
        print("warning: checks this machine cannot judge were left out of the scores and their maxima (install the "
              "CUDA compiler with `make toolkit` and grade again to count them): " + "; ".join(not_judged),
              file=sys.stderr)
    if changed:
        print("warning: the grader's own files changed during grading (a submission may have written to them): "
              + ", ".join(changed), file=sys.stderr)
    return rows


def write_outputs(out_dir, rows, summary):
    """gradebook.csv and results.json, written once, from the results (never appended to)."""
    out_dir = pathlib.Path(out_dir)
    rows = [{**r, "message": bounded(r["message"], MAX_MESSAGE)} for r in rows]
    tmp = out_dir / ".gradebook.csv.tmp"
    with open(tmp, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out_dir / "gradebook.csv")
    summary = bounded(json.loads(json.dumps(summary, default=str)))  # whatever part of the grader wrote a string
    (out_dir / "results.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
