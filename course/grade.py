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
3. then runs the notebook in a fresh Jupyter kernel inside :mod:`course.sandbox` (bubblewrap where the
   machine has it, else resource limits; another uid when the grader is root), with a fresh read-only
   copy of the course, empty ``HOME``/``IPYTHONDIR``/``JUPYTER_*`` folders, no bytecode from earlier runs,
   a per-cell and a whole-notebook time limit; every process it starts is killed when it ends. What the
   run did (errors, interrupted cells, output volume) is noted beside the verdicts, never parsed for them.

Nothing is written outside ``--out`` except a scratch folder in ``TMPDIR``, removed at the end; the
gradebook is written once, from the results, after every submission's processes are gone. Changes to
the grader's own files during a run (bytecode included) are detected and reported.

Writes ``DIR/gradebook.csv`` (student, assignment, submission, exercise, score, max_score, status, late,
message) and ``DIR/results.json`` (every check of every exercise, seeds, each notebook's run log,
timings, hashes, the sandbox used). Other commands: ``export``, ``merge``, ``autograder``,
``gradescope``, ``classroom`` (see :mod:`course.gradebook` and ``docs/instructors.md``).
"""

from __future__ import annotations

import os
import sys


def _fresh_copy_and_reexec():
    """``python -m course.grade`` re-runs itself once on a fresh copy of the course with bytecode off.

    A ``.pyc`` planted in ``course/__pycache__`` would otherwise be imported by the next run's judge; the
    copy has no ``__pycache__`` and ``-B`` writes none, so the judge's code comes from source."""
    import shutil
    import tempfile

    if os.environ.get("COURSE_GRADE_FRESH") or (len(sys.argv) > 1 and sys.argv[1] in (
            "export", "merge", "autograder", "-h", "--help")):
        return
    pkg = os.path.dirname(os.path.abspath(__file__))
    scratch = tempfile.mkdtemp(prefix="course-grader-")
    shutil.copytree(pkg, os.path.join(scratch, "course"), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for root, _dirs, files in os.walk(scratch):
        for f in files:
            os.chmod(os.path.join(root, f), 0o444)
    pypath = os.pathsep.join([scratch] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x])
    env = dict(os.environ, PYTHONPATH=pypath, COURSE_GRADE_FRESH=scratch, PYTHONDONTWRITEBYTECODE="1")
    repo = os.path.dirname(pkg)
    for extra in ("data", "exercises"):  # data, not code: compiler facts, the exercise notebooks' names
        if os.path.isdir(os.path.join(repo, extra)):
            os.symlink(os.path.join(repo, extra), os.path.join(scratch, extra))
    env["COURSE_GRADE_ROOT"] = repo
    # the copy must come first on sys.path: ahead of the current folder (which `-m` would put first)
    boot = (f"import sys, runpy; sys.path.insert(0, {scratch!r}); sys.argv[0] = 'course.grade'; "
            "runpy.run_module('course.grade', run_name='__main__', alter_sys=True)")
    os.execve(sys.executable, [sys.executable, "-B", "-c", boot, *sys.argv[1:]], env)


if __name__ == "__main__":
    _fresh_copy_and_reexec()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import ast  # noqa: E402
import builtins  # noqa: E402
import copy  # noqa: E402
import csv  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import multiprocessing  # noqa: E402
import multiprocessing.connection  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import stat  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import course  # noqa: E402  (chooses the backend before numba is imported)
from course import sandbox  # noqa: E402
from course import exercises as ex_mod  # noqa: E402

ROOT = pathlib.Path(os.environ.get("COURSE_GRADE_ROOT") or pathlib.Path(__file__).resolve().parents[1])
PACKAGE = pathlib.Path(__file__).resolve().parent
FIELDS = ("student", "assignment", "submission", "exercise", "score", "max_score", "status", "late", "message")
MAX_MESSAGE = 640
#: Largest notebook file graded (bigger ones get a row saying so).
MAX_BYTES = 64 * 1024**2
#: Static shared memory a block may have (48 KB): what ``cuda.shared.array`` allocates.
SHARED_LIMIT = 48 * 1024


def attr_chain(node):
    """(root, [attribute names]) of ``a.b.c`` (the grading layer's own, so it needs nothing private)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return node, parts[::-1]


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
        root, chain = attr_chain(target)
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
    if getattr(exercise, "host", False):
        return _compile_host(found, exercise, cell, node, code)
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
    _check_shared_memory(found, order)
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
        # compile only what was linted: a function node built here from the linted body and the parameter
        # names; the learner's decorators, annotations and default expressions are never evaluated
        module = ast.fix_missing_locations(ast.Module(body=[linted_def(fn, c)], type_ignores=[]))
        exec(compile(module, filename, "exec"), namespace)
        namespace[name] = cuda.jit(device=True)(namespace[name]) if k == "device" else cuda.jit(namespace[name])
    return namespace[target]


#: Every node type a compiled kernel may contain: the function node built by :func:`linted_def` and what
#: :func:`course.exercises.lint_kernel` lets through in a body.
_COMPILED_NODES = (
    ast.FunctionDef, ast.arguments, ast.arg, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While,
    ast.If, ast.Expr, ast.Return, ast.Pass, ast.Break, ast.Continue, ast.Raise, ast.Assert, ast.BinOp,
    ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.Attribute, ast.Subscript, ast.Name,
    ast.Constant, ast.Tuple, ast.Slice, ast.NamedExpr, ast.keyword, ast.expr_context, ast.operator,
    ast.unaryop, ast.boolop, ast.cmpop,
)


def _compile_host(found: Found, exercise, cell, node, src):
    """A host-code exercise (plain Python: chapter 08's pipeline, chapter 11's split): compiled by the
    exercise's own ``host_compile`` (its whitelist over the body; :func:`course.exercises.host.compile_host`
    by default), given a function node built here, so nothing of the learner's ``def`` line (decorators,
    annotations, default expressions) is ever evaluated."""
    from course.exercises import host as H

    body = [x for x in node.body if not (isinstance(x, ast.Expr) and isinstance(x.value, ast.Constant))]
    if body and isinstance(body[0], ast.Raise) and body[0].exc is not None and getattr(
            body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc, "id", "") == "NotImplementedError":
        raise Rejected("not attempted", "FAILED not written yet: the function still raises NotImplementedError",
                       getattr(exercise, "stub_hint", ""))
    fn = linted_def(node, cell, check_body=False)  # the body is the exercise's whitelist's to check
    filename = f"<cell {cell}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    compile_fn = getattr(exercise, "host_compile", None) or H.compile_host
    try:
        return compile_fn(ast.fix_missing_locations(fn), filename)
    except ValueError as err:
        raise Rejected("rejected", f"cell {cell}, {err}",
                       "Host code here may use only its arguments, what the exercise names, and NumPy dtypes.") from None


def linted_def(fn: ast.FunctionDef, cell, allowed=None, check_body=True) -> ast.FunctionDef:
    """A new function node: ``fn``'s name, plain parameter names, number defaults and its (linted) body.

    Everything else of the learner's ``def`` line (decorators, annotations, default expressions,
    keyword-only or ``*`` parameters) would run in the grader when the ``def`` is executed: it is either
    refused here or not copied. The result is checked node by node against a whitelist."""
    a = fn.args
    where = f"cell {cell}, line {fn.lineno} (in {fn.name})"
    if a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs:
        raise Rejected("rejected", f"{where}: a kernel takes plain positional parameters (no /, *args, **kwargs)",
                       "Write the parameters as the exercise's signature shows them.")
    defaults = []
    for d in a.defaults:
        if not (isinstance(d, ast.Constant) and type(d.value) in (int, float, bool)):
            raise Rejected("rejected", f"{where}: a parameter's default must be a plain number (found "
                                       f"`{_shorten(ast.unparse(d), 60)}`)",
                           "Kernels get every argument from the launch; drop the default.")
        defaults.append(ast.Constant(d.value))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=x.arg) for x in a.args], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=defaults)
    node = ast.FunctionDef(name=fn.name, args=args, body=fn.body, decorator_list=[], returns=None,
                           type_comment=None, **({"type_params": []} if sys.version_info >= (3, 12) else {}))
    node = ast.copy_location(node, fn)
    for sub in ast.walk(node) if check_body else ast.walk(node.args):
        if not isinstance(sub, allowed or _COMPILED_NODES):
            raise Rejected("rejected", f"{where}: `{type(sub).__name__}` cannot be used in a CUDA kernel")
        if isinstance(sub, ast.FunctionDef) and sub is not node:
            raise Rejected("rejected", f"{where}: functions defined inside a kernel cannot be used")
    return node


_ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
             "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool_": 1, "complex64": 8, "complex128": 16,
             "intp": 8}


def _check_shared_memory(found: Found, order):
    """Refuse a kernel whose ``cuda.shared.array`` sizes (constants) add up to more than a block may have."""
    total, first = 0, None
    for name in order:
        c, fn, src, _ = found.defs[name]
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            root, chain = attr_chain(node.func)
            if not (isinstance(root, ast.Name) and chain[-2:] == ["shared", "array"]
                    and found.names.modules.get(root.id) in ("cuda", "numba")):
                continue
            shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "shape"), None)
            dtype = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "dtype"), None)
            try:
                dims = shape.elts if isinstance(shape, ast.Tuple) else [shape]
                count = 1
                for d in dims:
                    count *= int(_const_eval(d, found.constants))
            except (ValueError, TypeError, AttributeError, ZeroDivisionError, OverflowError):
                continue
            dname = dtype.attr if isinstance(dtype, ast.Attribute) else getattr(dtype, "id", "")
            dname = found.imported.get(dname, (None, dname))[1]
            total += count * _ITEMSIZE.get(dname, 4)
            first = first or (c, node.lineno, name)
    if total > SHARED_LIMIT:
        c, line, name = first
        raise Rejected("rejected", f"cell {c}, line {line} (in {name}): shared memory: the kernel's "
                                   f"cuda.shared.array(s) need {total:,} bytes per block; a block may have at most "
                                   f"{SHARED_LIMIT:,} bytes (48 KB) of static shared memory",
                       "Use a smaller tile: shared memory is per block, and small (48 KB static).")


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


def run_notebook(nb, workdir: str, env: dict, cell_timeout: float, total_timeout: float, box=None) -> RunLog:
    """Execute ``nb`` (a copy) in a fresh kernel inside ``workdir``; never raises for the notebook's faults.

    A kernel that dies while starting, before any cell ran, is started once more: no cell of the learner's
    has run, so the failure is the machine's (a busy box, a slow import), not the learner's. A second failure
    is reported with the first. ``box``: the sandbox settings (see :func:`_box_config`), None to run the
    kernel as a plain child process.
    """
    extra = {"box": box} if box else {}
    log = _run_notebook_once(copy.deepcopy(nb), workdir, env, cell_timeout, total_timeout, **extra)
    if log.killed and any(m in log.killed for m in _STARTUP_FAILURES) and not log.errors and not log.output_bytes:
        first = log.killed
        log = _run_notebook_once(copy.deepcopy(nb), workdir, env, cell_timeout, total_timeout, **extra)
        if log.killed:
            log.killed += f" (a second start was tried; the first: {first[:120]})"
    return log


def _boxed_kernel_manager(workdir: str, box: dict):
    """A kernel manager whose kernel starts through :mod:`course.sandbox` and talks over Unix sockets in
    ``workdir`` (a kernel with no network can still be reached), interrupted by message."""
    from jupyter_client.manager import AsyncKernelManager

    prefix = [sys.executable, "-I", "-B", str(PACKAGE / "sandbox.py"), json.dumps(box), "--"]

    class BoxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return prefix + super().format_kernel_cmd(extra_arguments)

    for d in ("ipc", "runtime"):
        os.makedirs(os.path.join(workdir, d), exist_ok=True)
    km = BoxedKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(workdir, "ipc", "k"),
                            connection_file=os.path.join(workdir, "runtime", "kernel.json"))
    km.kernel_spec.interrupt_mode = "message"  # a signal to the wrapper would not reach a kernel in its own box
    return km


def _run_notebook_once(nb, workdir: str, env: dict, cell_timeout: float, total_timeout: float, box=None) -> RunLog:
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
    km = _boxed_kernel_manager(workdir, box) if box else None
    client = Client(nb, km=km, timeout=cell_timeout, interrupt_on_timeout=True, allow_errors=True,
                    kernel_name="python3", startup_timeout=60, resources={"metadata": {"path": workdir}})

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
# One submission: read it whatever its shape, judge it from source, then run it in the box


def load_notebook(data: bytes):
    """(notebook, problems) from a file's bytes, whatever they hold; the notebook is None when unreadable.

    The notebook is rebuilt from scratch: each cell keeps its index, code cells their source as text
    (a source that is not text is treated as empty and reported), and only ``metadata.course.exercises``
    (a list of names) is kept. Nothing of the file's other structure reaches the grader or the kernel."""
    import nbformat

    problems = []
    try:
        text = data.decode("utf-8-sig")
        raw = json.loads(text)
    except (UnicodeDecodeError, ValueError) as err:
        why = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        return None, [f"not a readable notebook ({why})"]
    if isinstance(raw, dict) and "worksheets" in raw:  # nbformat 3: let nbformat convert it
        try:
            raw = json.loads(nbformat.writes(nbformat.reads(text, as_version=4)))
        except Exception as err:
            return None, [f"not a readable notebook (an old format nbformat could not convert: {type(err).__name__})"]
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return None, ["not a readable notebook (it has no list of cells)"]
    cells = []
    for k, cell in enumerate(raw["cells"]):
        if not isinstance(cell, dict):
            problems.append(f"cell {k} is not a notebook cell (a {type(cell).__name__}); ignored")
            cells.append(nbformat.v4.new_raw_cell(""))
            continue
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(x, str) for x in src):
            src = "".join(src)
        elif not isinstance(src, str):
            problems.append(f"cell {k}'s source is a {type(src).__name__}, not text; treated as empty")
            src = ""
        src = src.replace("\x00", "")
        kind = cell.get("cell_type")
        cells.append(nbformat.v4.new_code_cell(src) if kind == "code" else nbformat.v4.new_markdown_cell(src))
    meta = raw.get("metadata", {})
    listed = []
    if not isinstance(meta, dict):
        problems.append(f"the notebook's metadata is a {type(meta).__name__}, not a mapping; ignored")
        meta = {}
    course_meta = meta.get("course", {})
    if not isinstance(course_meta, dict):
        problems.append(f"metadata `course` is a {type(course_meta).__name__}, not a mapping; ignored")
        course_meta = {}
    ex_list = course_meta.get("exercises", [])
    if isinstance(ex_list, list):
        listed = [x for x in ex_list if isinstance(x, str)]
        if len(listed) != len(ex_list):
            problems.append("metadata `course.exercises` holds entries that are not exercise names; ignored")
    else:
        problems.append(f"metadata `course.exercises` is a {type(ex_list).__name__}, not a list; ignored")
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"course": {"exercises": listed}})
    return nb, problems


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


def exercise_seed(sha256: str, exercise: str, salt: str = "") -> int:
    """The seed of an exercise's random inputs for one submission: from its bytes, so a regrade of the same
    file draws the same inputs (``--seed`` changes them for a whole class)."""
    return int(hashlib.sha256(f"{salt}:{sha256}:{exercise}".encode()).hexdigest()[:8], 16)


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
    for ex in names:
        seed = exercise_seed(sha, ex, opts.get("seed", ""))
        record["exercises"].append(judge_isolated(found, ex_mod.get(ex), opts["launch_timeout"], seed=seed))
    return record


def kernel_env(work: str, pkg: str) -> dict:
    """The kernel's environment: a few of the grader's variables (none of its secrets), the course copy
    first on the path, and empty folders of its own for everything a kernel reads at start-up."""
    keep = ("PATH", "LANG", "LANGUAGE", "TZ", "COURSE_BACKEND", "LD_LIBRARY_PATH", "SSL_CERT_FILE")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith(("LC_", "NUMBA_", "CUDA_", "NVIDIA_"))}
    # the copy first; whatever the grader's own PYTHONPATH holds stays reachable after it (a machine that has
    # ipykernel or numpy only there — the GPU lane's /tmp/site — would otherwise lose its kernel)
    env["PYTHONPATH"] = os.pathsep.join(
        [pkg] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if x and not x.startswith(os.environ.get("COURSE_GRADE_FRESH") or "\0")])
    dirs = {"HOME": "home", "IPYTHONDIR": "ipython", "JUPYTER_CONFIG_DIR": "jupyter/config",
            "JUPYTER_DATA_DIR": "jupyter/data", "JUPYTER_RUNTIME_DIR": "runtime", "MPLCONFIGDIR": "mpl",
            "TMPDIR": "tmp", "XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data",
            "NUMBA_CACHE_DIR": "cache/numba"}
    for var, sub in dirs.items():
        path = os.path.join(work, sub)
        os.makedirs(path, exist_ok=True)
        env[var] = path
    # no bytecode is written anywhere, and the course copy has none: its modules always come from source
    # (a PYTHONPYCACHEPREFIX would also recompile all of numba and NumPy in every kernel: seconds each)
    env.update(COURSE_CHECK="skip", PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1", JUPYTER_PLATFORM_DIRS="1",
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


def _box_config(work: str, pkg: str, slot: int) -> dict:
    """What :mod:`course.sandbox` needs to start one kernel (a JSON-able dict)."""
    uid = sandbox.uid_for(slot)
    fresh = os.environ.get("COURSE_GRADE_FRESH") or "\0"
    # Python and its packages (the venv may live inside the repository: its folder is bound, the repository
    # is not), the grader's PYTHONPATH entries (the GPU lane's wheels), the course copy
    ro = set(sandbox.python_paths()) | {pkg}
    ro |= {x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x and os.path.isdir(x)}
    ro = {p for p in ro if os.path.realpath(p) not in (str(ROOT.resolve()), os.path.realpath(os.getcwd()))
          and not p.startswith(fresh) and not _inside(os.path.realpath(work), os.path.realpath(p))
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
                    results=[r.__dict__ for r in verdict.results], hint=verdict.hint, seed=seed)
    except Rejected as rej:
        return _row(exercise.name, rej.status, 0, exercise.max_score, str(rej), hint=rej.hint, seed=seed)
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
            _limit_memory(JUDGE_MEMORY_BYTES)
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
    message = " ".join(str(message).split())
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


@dataclass
class Entry:
    """One file to grade (or to refuse), found under a submissions folder."""

    path: str  # where to read it (may hold undecodable bytes, as the OS gives them)
    label: str  # its name relative to the submissions folder, printable
    student: str = ""
    assignment: str = ""
    refused: str = ""  # why it is not graded (a link out of the folder, not a file, too big)
    note: str = ""  # something about its name (not UTF-8)
    root: str = ""


def display_name(raw: str) -> tuple:
    """(printable name, note) for a file name from the OS: UTF-8, else GBK (a zip from Chinese Windows), else escaped."""
    b = os.fsencode(raw)
    try:
        return b.decode("utf-8"), ""
    except UnicodeDecodeError:
        pass
    try:
        return b.decode("gbk"), "its file name is not UTF-8 (read as GBK)"
    except UnicodeDecodeError:
        return b.decode("utf-8", "backslashreplace"), "its file name is not UTF-8 (shown escaped)"


def _assignment_names() -> list:
    return sorted({p.stem for p in (ROOT / "exercises").glob("*.ipynb")}, key=len, reverse=True)


def _roster_fields(parts: list) -> tuple:
    """(student, assignment) from a path relative to the submissions folder.

    ``<student>/<assignment>/x.ipynb`` (nbgrader), ``<student>/x.ipynb``, or a flat ``x.ipynb`` where the
    course notebook's name in the file name (``alice_05_transpose.ipynb``) gives the assignment."""
    stem = pathlib.PurePath(parts[-1]).stem
    known = [a for a in _assignment_names() if a in stem]
    if len(parts) >= 3:
        return parts[0], parts[1]
    if len(parts) == 2:
        return parts[0], known[0] if known else stem
    if known:
        student = stem.replace(known[0], "").strip("_- .")
        return student or stem, known[0]
    return stem, ""


def collect(paths) -> list:
    """Every notebook under ``paths`` (files, or folders searched recursively), in a stable order, as Entries.

    Links are followed only while they stay inside the folder given; a link out of it, a FIFO or device,
    or a file over :data:`MAX_BYTES` becomes an Entry with ``refused`` set (its row says why)."""
    out = []
    args = [str(p) for p in paths]
    for arg in args:
        if os.path.isdir(arg):
            root = os.path.realpath(arg)
            found = []
            for dirpath, dirnames, filenames in os.walk(arg, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if d != ".ipynb_checkpoints")
                for d in list(dirnames):
                    full = os.path.join(dirpath, d)
                    if os.path.islink(full):
                        dirnames.remove(d)
                        if not _inside(os.path.realpath(full), root):
                            found.append((full, "a link to a folder outside the submissions folder; submit the "
                                                "notebooks themselves"))
                for f in filenames:
                    full = os.path.join(dirpath, f)
                    if f.endswith(".ipynb") or (os.path.islink(full) and os.path.realpath(full).endswith(".ipynb")):
                        found.append((full, ""))
            for full, why in sorted(found, key=lambda x: os.fsencode(x[0])):
                rel = os.path.relpath(full, arg)
                out.append(_entry(full, rel, root, why))
        else:
            out.append(_entry(arg, os.path.basename(arg), os.path.realpath(os.path.dirname(os.path.abspath(arg))), ""))
    if len(args) > 1:  # several folders: the label keeps which one (two may hold the same names)
        for e, arg in zip(out, _arg_of(out, args)):
            e.label = f"{display_name(os.path.basename(os.path.normpath(arg)))[0]}/{e.label}"
    seen = {}
    for e in out:  # still the same (two folders of one name, a name GBK and UTF-8 read alike): numbered
        n = seen[e.label] = seen.get(e.label, 0) + 1
        if n > 1:
            e.label = f"{e.label} ({n})"
    return out


def _arg_of(entries, args):
    res = []
    for e in entries:
        res.append(next((a for a in args if os.path.isdir(a) and os.path.realpath(a) == e.root), os.path.dirname(e.path) or "."))
    return res


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _entry(full: str, rel: str, root: str, why: str) -> Entry:
    parts = [display_name(p)[0] for p in pathlib.PurePath(rel).parts]
    label = "/".join(parts)
    note = display_name(os.path.basename(full))[1]
    student, assignment = _roster_fields(parts)
    e = Entry(path=full, label=label, student=student, assignment=assignment, note=note, root=root)
    if why:
        e.refused = why
    elif os.path.islink(full) and not _inside(os.path.realpath(full), root):
        e.refused = "a link to a file outside the submissions folder; submit the notebook itself"
    return e


def read_entry(e: Entry):
    """The file's bytes, or None with ``e.refused`` set (never blocks on a FIFO, never follows a link out)."""
    if e.refused:
        return None
    try:
        fd = os.open(os.path.realpath(e.path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as err:
        e.refused = f"cannot read the file ({err.strerror or err})"
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            e.refused = "not a regular file (a pipe, device or folder); submit the notebook file itself"
            return None
        if st.st_size > MAX_BYTES:
            e.refused = (f"the file is {st.st_size / 1e6:.0f} MB, over the {MAX_BYTES / 1e6:.0f} MB a notebook may be; "
                         "clear its outputs and submit again")
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def shard_of(label: str, n: int) -> int:
    """Which of ``n`` shards (1-based) grades a submission: from its label alone, so every machine agrees."""
    return int(hashlib.sha256(label.encode("utf-8", "surrogateescape")).hexdigest()[:12], 16) % n + 1


def submitted_at(e: Entry):
    """(UTC datetime, source) of a submission: nbgrader's ``timestamp.txt`` beside it, else the file's time."""
    import datetime as dt

    folder = os.path.dirname(e.path)
    ts = os.path.join(folder, "timestamp.txt")
    if os.path.isfile(ts) and not os.path.islink(ts):
        try:
            with open(ts, encoding="utf-8", errors="replace") as f:
                text = f.read(200).strip()
            return parse_time(text), "timestamp.txt"
        except (OSError, ValueError):
            pass
    try:
        return dt.datetime.fromtimestamp(os.lstat(e.path).st_mtime, dt.timezone.utc), "file time"
    except OSError:
        return None, ""


def parse_time(text: str):
    """A UTC datetime from ISO 8601 or nbgrader's ``2026-11-30 12:00:00.000000 UTC``; naive means UTC."""
    import datetime as dt

    t = text.strip().replace(" UTC", "+00:00").replace("Z", "+00:00")
    when = dt.datetime.fromisoformat(t)
    return when.replace(tzinfo=dt.timezone.utc) if when.tzinfo is None else when.astimezone(dt.timezone.utc)


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
    for mod in pkgutil.iter_modules(sys.modules["course"].__path__):
        if not mod.ispkg and mod.name not in ("__main__", "grade"):
            try:
                importlib.import_module(f"course.{mod.name}")
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
          shard=None, deadline=None, seed="", use_sandbox=True, own_process=False) -> list:
    """Grade every notebook under ``paths`` into ``out_dir``; return the gradebook rows.

    ``shard``: (i, n) grades only the submissions :func:`shard_of` gives to shard i; ``deadline``: a UTC
    datetime, work submitted after it is marked late; ``seed``: a salt for every submission's input seeds;
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
    opts = {"cell_timeout": cell_timeout, "timeout": timeout, "seed": seed, "sandbox": use_sandbox,
            "launch_timeout": launch_timeout or ex_mod.LAUNCH_TIME_LIMIT}
    scratch = tempfile.mkdtemp(prefix="course-grade-", dir=sandbox.scratch_parent(tempfile.gettempdir()))
    os.chmod(scratch, 0o711)  # the kernels' own uid must reach their folders inside
    opts["scratch"] = scratch
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
    summary = {
        "grader": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                   "seconds": round(time.time() - started, 1), "jobs": jobs, "cell_timeout": cell_timeout,
                   "timeout": timeout, "launch_timeout": opts["launch_timeout"], "backend": course.BACKEND,
                   "grader_files_changed": changed, "sandbox": box, "seed": seed,
                   "grader_code": "a fresh copy of course/, bytecode off" if os.environ.get("COURSE_GRADE_FRESH")
                   and str(PACKAGE).startswith(os.environ["COURSE_GRADE_FRESH"]) else "the checkout's course/",
                   "shard": list(shard) if shard else None,
                   "deadline": deadline.isoformat() if deadline else None},
        "submissions": submissions,
    }
    write_outputs(out_dir, rows, summary)
    if changed:
        print("warning: the grader's own files changed during grading (a submission may have written to them): "
              + ", ".join(changed), file=sys.stderr)
    return rows


def write_outputs(out_dir, rows, summary):
    """gradebook.csv and results.json, written once, from the results (never appended to)."""
    out_dir = pathlib.Path(out_dir)
    tmp = out_dir / ".gradebook.csv.tmp"
    with open(tmp, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out_dir / "gradebook.csv")
    (out_dir / "results.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")


def _parse_shard(text):
    m = re.fullmatch(r"(\d+)/(\d+)", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise argparse.ArgumentTypeError(f"--shard wants i/n with 1 <= i <= n (got {text!r})")
    return int(m.group(1)), int(m.group(2))


def _parse_deadline(text):
    try:
        return parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--deadline wants an ISO date and time, e.g. 2026-12-01T23:59:00+08:00 "
                                         f"(got {text!r})") from None


def grading_arguments(p: argparse.ArgumentParser):
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    p.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per notebook cell (default 30)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per whole notebook run (default 300)")
    p.add_argument("--launch-timeout", type=float, default=None,
                   help=f"seconds one launch of a learner's kernel may take while judged (default {ex_mod.LAUNCH_TIME_LIMIT:g})")
    p.add_argument("--seed", default="", help="salt for every submission's random inputs (recorded; default none)")


def main(argv=None) -> int:
    """Command line: ``python -m course.grade PATH... --out DIR [--jobs N] [--shard i/n] [--deadline T] ...``;
    ``export``, ``merge``, ``autograder``, ``gradescope``, ``classroom``: see :mod:`course.gradebook`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] and argv[0] in ("export", "merge", "autograder", "gradescope", "classroom"):
            from course import gradebook

            return gradebook.main(argv)
        p = argparse.ArgumentParser(prog="python -m course.grade", description=__doc__.splitlines()[0],
                                    epilog="other commands: export, merge, autograder, gradescope, classroom "
                                           "(python -m course.grade COMMAND --help)")
        p.add_argument("paths", nargs="+", help="notebooks, or folders searched for *.ipynb")
        p.add_argument("--out", required=True, help="folder for gradebook.csv and results.json")
        grading_arguments(p)
        p.add_argument("--shard", type=_parse_shard, default=None, help="grade only shard i of n (e.g. 2/8)")
        p.add_argument("--deadline", type=_parse_deadline, default=None,
                       help="mark work submitted after this time late (ISO 8601; no zone = UTC)")
        args = p.parse_args(argv)
        missing = [x for x in args.paths if not os.path.lexists(x)]
        if missing:
            print(f"course.grade: no such file or folder: {', '.join(missing)}", file=sys.stderr)
            return 2
        rows = grade(args.paths, args.out, jobs=args.jobs, cell_timeout=args.cell_timeout, timeout=args.timeout,
                     launch_timeout=args.launch_timeout, shard=args.shard, deadline=args.deadline, seed=args.seed,
                     own_process=True)
        width = max((len(r["submission"]) for r in rows), default=10)
        for r in rows:
            line = (f"{r['submission']:{width}}  {r['exercise']:22}  {r['score']}/{r['max_score']}  {r['status']:13} "
                    f"{r['message'][:90]}")
            print(line.encode("utf-8", "backslashreplace").decode("utf-8"))
        print(f"wrote {os.path.join(args.out, 'gradebook.csv')} and results.json ({len(rows)} rows)")
        return 0
    finally:
        fresh = os.environ.get("COURSE_GRADE_FRESH")
        if fresh and os.path.basename(fresh).startswith("course-grader-") and __name__ == "__main__":
            for root, _dirs, _files in os.walk(fresh):
                os.chmod(root, 0o755)
            shutil.rmtree(fresh, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
