"""Grade submitted notebooks into a gradebook: ``python -m course.grade PATH... --out DIR``.

For each submission (a notebook, or every notebook under a folder) the grader

1. reads the file once, up front, and never writes to it (its SHA-256 is checked again at the end);
2. runs a copy in a fresh Jupyter kernel, in a private temporary folder, with a per-cell time limit
   (the cell is interrupted) and a whole-notebook time limit (the kernel is killed); outputs are
   counted but not kept, so a notebook that prints gigabytes costs nothing; each cell's error is noted;
3. finds each exercise's kernel in the notebook's *source* (the last top-level ``def <target>`` in
   cell order), checks that it uses only what compiles in a CUDA kernel (no imports, no attribute
   tricks, no names the kernel cannot reach: see :func:`course.exercises.lint_kernel`), compiles it
   in the grader's own process and judges it with :func:`course.exercises.judge` — the same checks as
   the notebook's ``check()``.

Why the verdict cannot be forged from inside the notebook: the judging code runs in the grader's
process, whose ``course`` package, NumPy and numba were imported (and warmed up) before any
submission ran; nothing a notebook prints is parsed; a notebook that redefines ``check``, patches
NumPy or edits files changes only its own kernel process and its own private copy of ``course``;
the kernel source that is judged can only read its arguments and use CUDA operations.  Changes to the
grader's own files during a run are detected and reported.  This is not an operating-system sandbox:
grade untrusted work as an unprivileged user or in a container (see chapter 00).

Writes ``DIR/gradebook.csv`` (submission, exercise, score, max_score, status, message) and
``DIR/results.json`` (every check of every exercise, each notebook's run log, timings, hashes).
"""

from __future__ import annotations

import argparse
import asyncio
import ast
import builtins
import copy
import csv
import hashlib
import json
import linecache
import multiprocessing
import multiprocessing.connection
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field

import course  # noqa: F401  (chooses the backend before numba is imported)
from course import exercises as ex_mod

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = pathlib.Path(__file__).resolve().parent
FIELDS = ("submission", "exercise", "score", "max_score", "status", "message")
MAX_MESSAGE = 640


# --------------------------------------------------------------------------------------------------
# Reading the notebook's source (never executing it here)


@dataclass
class Found:
    """What the notebook's top-level code defines, found without running it."""

    defs: dict = field(default_factory=dict)  # name -> (cell, FunctionDef, source, decorator kind)
    rebound: dict = field(default_factory=dict)  # name -> cell where it was bound by something else
    constants: dict = field(default_factory=dict)  # name -> number
    names: ex_mod.Names = field(default_factory=ex_mod.Names)
    imported: dict = field(default_factory=dict)  # bare name -> (module, attribute)
    syntax_errors: list = field(default_factory=list)  # (cell, line, message, source)


_TRUSTED_MODULES = {"numba.cuda": "cuda", "math": "math", "numpy": "numpy", "numba": "numba"}


def _decorator_kind(fn: ast.FunctionDef, found: Found) -> str:
    """'kernel', 'device' or '' (not a cuda.jit function) from a def's decorators."""
    for dec in fn.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        target = dec.func if call else dec
        root, chain = ex_mod._attr_chain(target)
        name = ".".join([getattr(root, "id", "?"), *chain])
        is_jit = (
            (isinstance(root, ast.Name) and found.names.modules.get(root.id) == "cuda" and chain == ["jit"])
            or (isinstance(root, ast.Name) and found.names.modules.get(root.id) == "numba" and chain == ["cuda", "jit"])
            or (not chain and found.imported.get(name) == ("cuda", "jit"))
        )
        if is_jit:
            device = call is not None and any(
                k.arg == "device" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords
            )
            return "device" if device else "kernel"
    return ""


def _const_eval(node, constants):
    """The value of a simple constant expression (numbers, + - * // …, earlier constants), else raise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _const_eval(node.operand, constants)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _const_eval(node.left, constants), _const_eval(node.right, constants)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b, ast.Mod: lambda: a % b,
               ast.LShift: lambda: a << b if 0 <= b < 64 else None, ast.RShift: lambda: a >> b,
               ast.BitAnd: lambda: a & b, ast.BitOr: lambda: a | b, ast.BitXor: lambda: a ^ b,
               ast.Pow: lambda: a ** b if abs(b) <= 64 else None}
        fn = ops.get(type(node.op))
        value = fn() if fn else None
        if value is None or (isinstance(value, int) and abs(value) > 2**63):
            raise ValueError("not a simple constant")
        return value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float", "min", "max", "abs"):
        args = [_const_eval(a, constants) for a in node.args]
        return getattr(builtins, node.func.id)(*args)
    raise ValueError("not a simple constant")


def _cell_code(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def scan(nb) -> Found:
    """Walk the notebook's code cells in order and record its top-level definitions."""
    found = Found()
    found.names.modules = {}
    for k, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        try:
            code = _cell_code(raw)
            tree = ast.parse(code, filename=f"<cell {k}>")
        except SyntaxError as err:
            found.syntax_errors.append((k, err.lineno, err.msg, raw))
            continue
        except Exception as err:  # IPython's transformer can fail on odd input; treat it like a syntax error
            found.syntax_errors.append((k, None, str(err), raw))
            continue
        for stmt in tree.body:
            _scan_stmt(stmt, k, code, found)
    return found


def _bind(found: Found, name: str, cell: int):
    found.defs.pop(name, None)
    found.constants.pop(name, None)
    found.imported.pop(name, None)
    found.names.modules.pop(name, None)
    found.names.dtypes.discard(name)
    found.rebound[name] = cell


def _scan_stmt(stmt, k, code, found: Found):
    if isinstance(stmt, ast.FunctionDef):
        _bind(found, stmt.name, k)
        found.rebound.pop(stmt.name, None)
        found.defs[stmt.name] = (k, stmt, code, _decorator_kind(stmt, found))
    elif isinstance(stmt, ast.Import):
        for alias in stmt.names:
            bound = alias.asname or alias.name.split(".")[0]
            _bind(found, bound, k)
            found.rebound.pop(bound, None)
            target = alias.name if alias.asname else alias.name.split(".")[0]
            if target in _TRUSTED_MODULES:
                found.names.modules[bound] = _TRUSTED_MODULES[target]
    elif isinstance(stmt, ast.ImportFrom) and stmt.module:
        for alias in stmt.names:
            bound = alias.asname or alias.name
            _bind(found, bound, k)
            found.rebound.pop(bound, None)
            full = f"{stmt.module}.{alias.name}"
            if full in _TRUSTED_MODULES:
                found.names.modules[bound] = _TRUSTED_MODULES[full]
            elif stmt.module in _TRUSTED_MODULES:
                mod = _TRUSTED_MODULES[stmt.module]
                if mod in ("numba", "numpy") and alias.name in ex_mod.DTYPES:
                    found.names.dtypes.add(bound)
                    found.imported[bound] = (mod, alias.name)
                elif (mod == "cuda" and alias.name in ex_mod.CUDA_API) or (mod == "math" and alias.name in ex_mod.MATH_API):
                    found.names.cuda_functions.add(bound)
                    found.imported[bound] = (mod, alias.name)
                elif mod == "cuda" and alias.name == "jit":
                    found.imported[bound] = ("cuda", "jit")
            elif stmt.module.startswith("course."):
                # constants from the course itself (TILE), read from the grader's trusted copy
                mod = sys.modules.get(stmt.module)
                value = getattr(mod, alias.name, None) if mod else None
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    found.constants[bound] = value
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Name):
                    _bind(found, sub.id, k)
        if isinstance(stmt, ast.AugAssign) or stmt.value is None:
            return
        if (len(targets) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple)
                and len(targets[0].elts) == len(stmt.value.elts)
                and all(isinstance(t, ast.Name) for t in targets[0].elts)):
            for t, v in zip(targets[0].elts, stmt.value.elts):  # X, Y, Z = 0, 1, 2
                try:
                    found.constants[t.id] = _const_eval(v, found.constants)
                    found.rebound.pop(t.id, None)
                except (ValueError, ZeroDivisionError, TypeError, OverflowError):
                    pass
            return
        if len(names) == len(targets):
            try:
                value = _const_eval(stmt.value, found.constants)
            except (ValueError, ZeroDivisionError, TypeError, OverflowError):
                return
            for n in names:
                found.rebound.pop(n, None)
                found.constants[n] = value
    elif isinstance(stmt, (ast.ClassDef, ast.AsyncFunctionDef)):
        _bind(found, stmt.name, k)
    else:
        # names bound inside loops, with-blocks, try … at top level are not constants a kernel can rely on
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                _bind(found, sub.id, k)


class Rejected(Exception):
    """The notebook's code for an exercise cannot be judged; ``status`` and the message say why."""

    def __init__(self, status, message, hint=""):
        super().__init__(message)
        self.status = status
        self.hint = hint


def _lint_names(found: Found) -> ex_mod.Names:
    names = ex_mod.Names()
    names.modules = dict(found.names.modules)
    names.dtypes = set(found.names.dtypes)
    names.constants = set(found.constants)
    names.cuda_functions = set(found.names.cuda_functions)
    names.device_functions = {n for n, d in found.defs.items() if d[3] == "device"}
    return names


def _syntax_note(found: Found, target: str) -> str:
    for k, line, msg, raw in found.syntax_errors:
        if re.search(rf"\bdef\s+{re.escape(target)}\b", raw):
            return f"the cell that defines {target} (cell {k}) has a SyntaxError at line {line}: {msg}"
    return ""


def compile_target(found: Found, exercise):
    """Lint and compile the notebook's kernel for ``exercise`` in this process; raise Rejected when it cannot be judged."""
    import math

    import numba
    import numpy as np
    from numba import cuda

    target = exercise.target
    if target not in found.defs:
        note = _syntax_note(found, target)
        if note:
            raise Rejected("error", note, "Fix the syntax error, run the cell, and submit again.")
        if target in found.rebound:
            raise Rejected("missing", f"{target} is bound in cell {found.rebound[target]} by something other than "
                                      f"`def {target}(...)`: the exercise asks you to write the kernel yourself")
        others = [n for n, d in found.defs.items() if d[3] == "kernel" and ex_mod.by_target(n) is None]
        extra = f"; found @cuda.jit kernel(s) {', '.join(others)}: rename yours to {target}" if others else ""
        raise Rejected("missing", f"no `def {target}` in the notebook (was the exercise cell deleted, or the "
                                  f"function renamed?){extra}", f"The exercise asks for {exercise.signature}.")
    cell, node, code, kind = found.defs[target]
    if kind != "kernel":
        raise Rejected("rejected", f"{target} (cell {cell}) is not decorated with @cuda.jit",
                       "Write the kernel as a function decorated with @cuda.jit.")
    names = _lint_names(found)
    todo, order, seen = [target], [], set()
    while todo:  # the kernel and every device function it calls, each linted
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        c, fn, src, _ = found.defs[name]
        problems = ex_mod.lint_kernel(fn, names)
        if problems:
            line, msg = problems[0]
            raise Rejected("rejected", f"cell {c}, line {line} (in {name}): {msg}",
                           "Inside a kernel only cuda.*, math.*, arithmetic, numbers, arrays and device functions "
                           "are available: that is what compiles for the GPU.")
        order.append(name)
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Name) and sub.id in names.device_functions and sub.id not in seen:
                todo.append(sub.id)
    namespace = {"__builtins__": {n: getattr(builtins, n) for n in ex_mod.SAFE_BUILTINS}, "__name__": "submission"}
    trusted = {"cuda": cuda, "math": math, "numpy": np, "numba": numba}
    for alias, mod in found.names.modules.items():
        namespace[alias] = trusted[mod]
    for alias, (mod, attr) in found.imported.items():
        if (mod, attr) != ("cuda", "jit"):
            namespace[alias] = getattr(trusted[mod], attr)
    namespace.update(found.constants)
    for name in reversed(order):  # device functions before the kernels that call them
        c, fn, src, k = found.defs[name]
        filename = f"<cell {c}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        clean = copy.copy(fn)
        clean.decorator_list = []  # the grader applies cuda.jit itself, with no options from the notebook
        clean.returns = None
        module = ast.fix_missing_locations(ast.Module(body=[clean], type_ignores=[]))
        exec(compile(module, filename, "exec"), namespace)
        namespace[name] = cuda.jit(device=True)(namespace[name]) if k == "device" else cuda.jit(namespace[name])
    return namespace[target]


# --------------------------------------------------------------------------------------------------
# Running the notebook in a fresh kernel


@dataclass
class RunLog:
    """What happened when the notebook ran: per-cell errors, interrupted cells, output volume, time."""

    errors: list = field(default_factory=list)  # (cell, ename, evalue)
    interrupted: list = field(default_factory=list)  # cells stopped by the per-cell limit
    killed: str = ""  # why the whole run stopped early
    output_bytes: int = 0
    seconds: float = 0.0

    def problems(self) -> list:
        out = []
        if self.killed:
            out.append(self.killed)
        out += [f"cell {c} ran past the per-cell time limit and was interrupted" for c in self.interrupted]
        out += [f"cell {c} raised {e}: {v}"[:200] for c, e, v in self.errors
                if not (e == "KeyboardInterrupt" and c in self.interrupted)]
        if self.output_bytes > 10_000_000:
            out.append(f"the notebook printed {self.output_bytes / 1e6:.0f} MB of output (none of it was kept)")
        return out


#: Kernel start-up failures that say nothing about the notebook (a busy machine: ports, slow imports); the
#: run is tried once more before a submission is charged with it.
_STARTUP_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")


def run_notebook(nb, workdir: str, env: dict, cell_timeout: float, total_timeout: float) -> RunLog:
    """Execute ``nb`` (a copy) in a fresh kernel inside ``workdir``; never raises for the notebook's faults.

    A kernel that dies while starting, before any cell ran, is started once more: no cell of the learner's
    has run, so the failure is the machine's (a busy box, a slow import), not the learner's. A second failure
    is reported with the first.
    """
    log = _run_notebook_once(copy.deepcopy(nb), workdir, env, cell_timeout, total_timeout)
    if log.killed and any(m in log.killed for m in _STARTUP_FAILURES) and not log.errors and not log.output_bytes:
        first = log.killed
        log = _run_notebook_once(copy.deepcopy(nb), workdir, env, cell_timeout, total_timeout)
        if log.killed:
            log.killed += f" (a second start was tried; the first: {first[:120]})"
    return log


def _run_notebook_once(nb, workdir: str, env: dict, cell_timeout: float, total_timeout: float) -> RunLog:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    log = RunLog()

    class Client(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            log.output_bytes += sum(len(v) for v in _strings(content))
            if msg.get("msg_type") == "error":
                log.errors.append((cell_index, content.get("ename", "?"), str(content.get("evalue", ""))[:300]))
            return None  # keep nothing: outputs are not evidence, and may be huge

        async def _async_handle_timeout(self, timeout, cell=None):
            if cell is not None:
                log.interrupted.append(self.nb.cells.index(cell))
            return await super()._async_handle_timeout(timeout, cell)

    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("tags", None)  # raises-exception / skip-execution tags are not the learner's to set
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = Client(nb, timeout=cell_timeout, interrupt_on_timeout=True, allow_errors=True, kernel_name="python3",
                    startup_timeout=60, resources={"metadata": {"path": workdir}})

    async def go():
        try:
            await asyncio.wait_for(client.async_execute(env=env), total_timeout)
        except (asyncio.TimeoutError, DeadKernelError) as err:
            # nbclient reports the kill that wait_for causes as a dead kernel: tell the two apart by the clock
            over = isinstance(err, asyncio.TimeoutError) or time.monotonic() - start >= 0.95 * total_timeout
            log.killed = (f"the notebook ran past its {total_timeout:g} s limit and its kernel was stopped"
                          if over else "the notebook's kernel died (it crashed or was killed)")
        except CellTimeoutError:
            log.killed = "a cell could not be interrupted after its time limit; the kernel was stopped"
        finally:
            km = getattr(client, "km", None)
            if km is not None:
                try:
                    if await _maybe_await(km.is_alive()):
                        await _maybe_await(km.shutdown_kernel(now=True))
                except Exception:
                    pass

    start = time.monotonic()
    try:
        asyncio.run(go())
    except Exception as err:  # the kernel could not start, or nbclient failed in a way we did not foresee
        log.killed = f"the notebook could not be run ({type(err).__name__}: {err})"[:300]
    log.seconds = time.monotonic() - start
    return log


async def _maybe_await(value):
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


# --------------------------------------------------------------------------------------------------
# One submission


def expected_exercises(path_name: str, nb) -> list:
    """The exercises a submission is graded on: from its metadata, its file name, and what it defines."""
    names = []
    meta = (nb.metadata.get("course", {}) if nb is not None else {}) or {}
    listed = meta.get("exercises", []) if isinstance(meta, dict) else []
    names += [n for n in listed if isinstance(n, str) and n in ex_mod.EXERCISES]
    for m in re.finditer(r"(?<!\d)(\d\d)_", path_name):
        names += [e.name for e in ex_mod.by_chapter(int(m.group(1)))]
    if nb is not None and not names:
        found_defs = set()
        for cell in nb.cells:
            if cell.get("cell_type") == "code":
                found_defs.update(re.findall(r"^def\s+(\w+)", cell.get("source", ""), re.M))
        names += [e.name for e in ex_mod.EXERCISES.values() if e.target in found_defs]
    order = list(ex_mod.EXERCISES)
    return sorted(set(names), key=order.index)


def grade_one(label: str, data: bytes, opts: dict) -> dict:
    """Grade one submission given its bytes; returns a JSON-able record with one entry per exercise."""
    import nbformat

    record = {"submission": label, "sha256": hashlib.sha256(data).hexdigest(), "run": None, "exercises": []}
    t0 = time.monotonic()
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
    except Exception as err:
        why = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        names = expected_exercises(pathlib.Path(label).name, None) or [""]
        for name in names:
            record["exercises"].append(_row(name, "unreadable", 0, _max(name),
                                            f"not a readable notebook ({why}); open it in JupyterLab, save, and submit again"))
        return record
    names = expected_exercises(pathlib.Path(label).name, nb)
    work = tempfile.mkdtemp(prefix="grade-")
    try:
        path = os.path.join(work, "submission.ipynb")
        with open(path, "wb") as f:
            f.write(data)
        # the kernel imports its own copy of the course: whatever it does to it stays in that copy
        pkg = os.path.join(work, "pkg")
        shutil.copytree(PACKAGE, os.path.join(pkg, "course"), ignore=shutil.ignore_patterns("__pycache__"))
        # the copy first; whatever the grader's own PYTHONPATH holds stays reachable after it (a machine that
        # has ipykernel or numpy only there — the GPU lane's /tmp/site — would otherwise lose its kernel)
        pypath = os.pathsep.join([pkg] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x])
        env = dict(os.environ, PYTHONPATH=pypath, COURSE_CHECK="skip", PYTHONDONTWRITEBYTECODE="1")
        env.pop("COURSE_STRICT", None)
        log = run_notebook(nbformat.reads(data.decode("utf-8"), as_version=4), work, env,
                           opts["cell_timeout"], opts["timeout"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record["run"] = {**log.__dict__, "problems": log.problems()}
    found = scan(nb)
    if not names:
        record["exercises"].append(_row("", "missing", 0, 0, "no course exercise found in this notebook (no exercise "
                                        "metadata, no chapter number in its name, no exercise function defined)"))
        return record
    note = "; ".join(log.problems()[:4])
    for name in names:
        row = judge_isolated(found, ex_mod.get(name), opts["launch_timeout"])
        if note:  # both halves kept readable: the verdict first, then what went wrong in the run
            row["message"] = f"{_shorten(row['message'], 320)} | notebook: {_shorten(note, 300)}"
        record["exercises"].append(row)
    record["seconds"] = time.monotonic() - t0
    return record


def judge_one(found: Found, exercise, launch_timeout: float) -> dict:
    """Compile and judge one exercise's kernel from the notebook's source; a gradebook row (never raises)."""
    try:
        kernel = compile_target(found, exercise)
        verdict = ex_mod.judge(exercise, kernel, lint=False, time_limit=launch_timeout)
        return _row(exercise.name, verdict.status, verdict.score, verdict.max_score, verdict.message,
                    results=[r.__dict__ for r in verdict.results], hint=verdict.hint)
    except Rejected as rej:
        return _row(exercise.name, rej.status, 0, exercise.max_score, str(rej), hint=rej.hint)
    except Exception as err:  # compiling the learner's code failed in a way the lint did not foresee
        return _row(exercise.name, "error", 0, exercise.max_score, f"could not compile {exercise.target}: "
                    f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")


#: Extra address space a judged kernel may allocate (shared/local arrays, big Python ints) before it fails.
JUDGE_MEMORY_BYTES = 2 * 1024**3


def judge_isolated(found: Found, exercise, launch_timeout: float, hard_limit: float | None = None) -> dict:
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
            _limit_memory(JUDGE_MEMORY_BYTES)
            data = json.dumps(judge_one(found, exercise, launch_timeout)).encode()
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
            return _row(exercise.name, "timeout", 0, exercise.max_score, why)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        why = ("judging this kernel ran out of memory or crashed"
               + (f" (signal {sig})" if sig else "") + "; does it allocate a huge array?")
        return _row(exercise.name, "error", 0, exercise.max_score, why)


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
    message = " ".join(str(message).split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    return {"exercise": exercise, "score": score, "max_score": max_score, "status": status, "message": message, **extra}


def _fallback_rows(label, data, status, message) -> list:
    """Rows for a submission whose grading process failed: one per exercise it would have had."""
    import nbformat

    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:
        nb = None
    names = expected_exercises(pathlib.Path(label).name, nb) or [""]
    return [_row(n, status, 0, _max(n), message) for n in names]


def _child(conn, label, data, opts):
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # neither a kernel's print() nor the Jupyter kernel's chatter reaches our output
        os.dup2(devnull, 2)
        result = grade_one(label, data, opts)
    except BaseException as err:  # report, never leave the parent waiting
        result = {"submission": label, "exercises": _fallback_rows(
            label, data, "grader error", f"the grader failed on this submission: {type(err).__name__}: {err}")}
    conn.send(json.dumps(result))
    conn.close()


# --------------------------------------------------------------------------------------------------
# Many submissions


def collect(paths) -> list:
    """Notebook files named by ``paths`` (files, or folders searched recursively), in a stable order."""
    out = []
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
        else:
            out.append(p)
    return out


def tree_hashes(root: pathlib.Path) -> dict:
    """SHA-256 of every .py file under ``root`` (the grader's own code), to notice tampering."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def warm_up():
    """Import and exercise everything judging needs, before any submission runs (see the module docstring)."""
    import importlib
    import pkgutil

    import course.kernels as kernels

    # everything a notebook may take constants from (``from course.kernels.warps import A_MUL``) is
    # imported now, from files no submission has touched yet
    for mod in pkgutil.iter_modules(kernels.__path__):
        importlib.import_module(f"course.kernels.{mod.name}")
    for mod in pkgutil.iter_modules(sys.modules["course"].__path__):
        if not mod.ispkg and mod.name not in ("__main__", "grade"):
            try:
                importlib.import_module(f"course.{mod.name}")
            except Exception:  # a module that needs something absent here is not one kernels take constants from
                pass
    import course.engine  # noqa: F401

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


def grade(paths, out_dir, jobs=1, cell_timeout=30.0, timeout=300.0, launch_timeout=None, quiet=False) -> list:
    """Grade every notebook under ``paths`` into ``out_dir``; return the gradebook rows."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    before = tree_hashes(PACKAGE)
    warm_up()
    files = collect(paths)
    jobs_in = []
    for p in files:
        try:
            data = p.read_bytes()
        except OSError as err:
            data = None
            jobs_in.append((str(p), None, f"cannot read the file ({err.strerror or err})"))
            continue
        jobs_in.append((str(p), data, None))
    opts = {"cell_timeout": cell_timeout, "timeout": timeout,
            "launch_timeout": launch_timeout or ex_mod.LAUNCH_TIME_LIMIT}
    per_ex = 8 * opts["launch_timeout"] + 30  # judge_isolated's own limit per exercise
    hard = timeout + 90 + per_ex * len(ex_mod.EXERCISES)
    records = {}
    data_of = {label: data for label, data, _ in jobs_in}
    ctx = multiprocessing.get_context("fork")
    pending = list(jobs_in)
    running = {}  # conn -> (label, process, deadline)
    try:
        while pending or running:
            while pending and len(running) < max(1, jobs):
                label, data, err = pending.pop(0)
                if data is None:
                    records[label] = {"submission": label, "exercises": [_row("", "unreadable", 0, 0, err)]}
                    continue
                parent, child = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(child, label, data, opts), daemon=True)
                proc.start()
                child.close()
                running[parent] = (label, proc, time.monotonic() + hard)
                if not quiet:
                    print(f"grading {label}", file=sys.stderr)
            ready = multiprocessing.connection.wait(list(running), timeout=1.0)
            for conn in ready:
                label, proc, _ = running.pop(conn)
                try:
                    records[label] = json.loads(conn.recv())
                except (EOFError, OSError, ValueError):
                    records[label] = {"submission": label, "exercises": _fallback_rows(
                        label, data_of[label], "grader error", "the grading process for this submission died")}
                proc.join(5)
            now = time.monotonic()
            for conn, (label, proc, deadline) in list(running.items()):
                if now > deadline:
                    proc.kill()
                    proc.join(5)
                    running.pop(conn)
                    records[label] = {"submission": label, "exercises": _fallback_rows(
                        label, data_of[label], "timeout", f"grading this submission took longer than {hard:g} s; stopped")}
    finally:
        for conn, (label, proc, _) in running.items():
            proc.kill()
    after = tree_hashes(PACKAGE)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    rows, submissions = [], []
    for label, data, _ in jobs_in:
        rec = records[label]
        try:
            now_hash = hashlib.sha256(pathlib.Path(label).read_bytes()).hexdigest()
        except OSError:
            now_hash = None
        rec["unchanged"] = data is None or now_hash == hashlib.sha256(data).hexdigest()
        submissions.append(rec)
        for r in rec["exercises"]:
            rows.append({"submission": label, **{k: r[k] for k in FIELDS[1:]}})
    with open(out_dir / "gradebook.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    summary = {
        "grader": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                   "seconds": round(time.time() - started, 1), "jobs": jobs, "cell_timeout": cell_timeout,
                   "timeout": timeout, "launch_timeout": opts["launch_timeout"], "backend": course.BACKEND,
                   "grader_files_changed": changed},
        "submissions": submissions,
    }
    (out_dir / "results.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    if changed:
        print("warning: the grader's own files changed during grading (a submission may have written to them): "
              + ", ".join(changed), file=sys.stderr)
    return rows


def main(argv=None) -> int:
    """Command line: ``python -m course.grade PATH... --out DIR [--jobs N] [--cell-timeout S] [--timeout S]``."""
    p = argparse.ArgumentParser(prog="python -m course.grade", description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", help="notebooks, or folders searched for *.ipynb")
    p.add_argument("--out", required=True, help="folder for gradebook.csv and results.json")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    p.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per notebook cell (default 30)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per whole notebook run (default 300)")
    p.add_argument("--launch-timeout", type=float, default=None,
                   help=f"seconds one launch of a learner's kernel may take while judged (default {ex_mod.LAUNCH_TIME_LIMIT:g})")
    args = p.parse_args(argv)
    missing = [x for x in args.paths if not os.path.exists(x)]
    if missing:
        print(f"course.grade: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = grade(args.paths, args.out, jobs=args.jobs, cell_timeout=args.cell_timeout, timeout=args.timeout,
                 launch_timeout=args.launch_timeout)
    width = max((len(r["submission"]) for r in rows), default=10)
    for r in rows:
        print(f"{r['submission']:{width}}  {r['exercise']:22}  {r['score']}/{r['max_score']}  {r['status']:13} {r['message'][:90]}")
    print(f"wrote {os.path.join(args.out, 'gradebook.csv')} and results.json ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
