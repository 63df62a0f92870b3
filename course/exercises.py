"""Graded exercises: one contract used by the notebook's ``check()``, by pytest and by the grader.

An :class:`Exercise` knows what the learner must write (``def <target>(...)`` decorated with
``@cuda.jit``), how it is launched, its NumPy reference, fresh inputs for every check (random data
and the awkward shapes that catch missing guards: sizes that do not fill a block or a tile,
1-element and prime sizes) and its *performance properties*, measured with the course's tracer
(:mod:`course.trace`): sectors per request on global memory (coalescing / 合并访存), wavefronts per
shared-memory request (bank conflicts / 存储体冲突), "uses shared memory at all", "no race between
threads".  A kernel that gives the right numbers but breaks a property does not get full marks, so
a missing ``cuda.syncthreads()`` fails even when the result happens to be right.

In a notebook::

    from course.exercises import check, show
    show("05.transpose_padded")                    # the task, the launch, what is checked
    check("05.transpose_padded", transpose_padded) # a short verdict with a hint

``python -m course.grade`` grades submitted notebooks with the same :func:`judge`, outside the
learner's reach.  ``python -m course.exercises build`` generates ``exercises/*.ipynb`` from
``solutions/*.ipynb`` (``--check`` fails when they drift); ``python -m course.exercises list``
lists the exercises by chapter.

Defined for chapter 00 (notebooks/00_start_here.ipynb), which explains how exercises are checked.
"""

from __future__ import annotations

import argparse
import ast
import math
import os
import pathlib
import re
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
EXERCISES_DIR = ROOT / "exercises"

#: Seconds one launch of a learner's kernel may run on the CPU engine before it counts as a hang.
LAUNCH_TIME_LIMIT = float(os.environ.get("COURSE_EXERCISE_TIME_LIMIT", "20"))


# --------------------------------------------------------------------------------------------------
# The contract


@dataclass
class Input:
    """One launch to check: a label that says why this shape, the launch, the arguments, the answers."""

    label: str
    griddim: tuple
    blockdim: tuple
    args: tuple
    expected: dict  # argument index -> the array that argument must hold afterwards
    names: tuple  # argument names, for messages ("dst[3, 16]")


@dataclass(frozen=True)
class Property:
    """A performance property measured on a traced launch: ``measure(report, extra) -> (ok, detail)``."""

    name: str
    measure: Callable
    hint: str
    lines: bool = False  # needs the tracer's line events (divergence)


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: what to write, how it is launched, its inputs, reference and properties."""

    name: str  # "05.transpose_padded": chapter number, dot, target
    title: str
    signature: str  # "transpose_padded(src, dst)"
    task: str  # what to do, shown by show() and in the notebooks
    make_inputs: Callable  # rng -> list[Input]: edge shapes and fresh random data
    make_trace_input: Callable  # rng -> Input: the launch the properties are measured on
    properties: tuple = ()
    hint_wrong: str = ""
    hint_oob: str = ""
    stub_hint: str = "write the kernel here"
    reference: Optional[Callable] = None  # () -> the course's own kernel that solves it, from course.kernels
    rtol: float = 0.0
    atol: float = 0.0

    @property
    def chapter(self) -> int:
        return int(self.name.split(".")[0])

    @property
    def target(self) -> str:
        return self.name.split(".", 1)[1]

    @property
    def max_score(self) -> int:
        return 1 + len(self.properties)


@dataclass
class Result:
    """One check of a verdict: what was checked, whether it held, what was seen, on which input."""

    what: str
    passed: bool
    detail: str = ""
    input: str = ""


@dataclass
class Verdict:
    """The outcome of judging one kernel: score, status, each check, and a hint for the first failure."""

    exercise: str
    status: str  # pass | partial | fail | not attempted | error | timeout | rejected | missing
    score: int
    max_score: int
    results: list = field(default_factory=list)
    hint: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def message(self) -> str:
        """One line for a gradebook: the first failure with its input, or what passed."""
        failed = [r for r in self.results if not r.passed]
        if not failed:
            return f"all {len(self.results)} checks passed" if self.results else self.status
        parts = []
        for r in failed:
            where = f" [input {r.input}]" if r.input and r is failed[0] else ""
            detail = " ".join(r.detail.split()) if r.detail else ""
            parts.append(f"{r.what}{where}: {detail}" if detail else f"{r.what}{where}")
        return "FAILED " + "; ".join(parts)

    def to_dict(self) -> dict:
        return {
            "exercise": self.exercise, "status": self.status, "score": self.score, "max_score": self.max_score,
            "message": self.message, "hint": self.hint,
            "results": [r.__dict__ for r in self.results],
        }

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {self.status.upper()}  {self.score}/{self.max_score}"]
        for r in self.results:
            mark = "PASS" if r.passed else "FAIL"
            where = f"  [input {r.input}]" if r.input else ""
            detail = f": {r.detail}" if r.detail else ""
            lines.append(f"  {mark} {r.what}{detail}{where}".replace("\n", "\n       "))
        if self.hint:
            lines.append("  hint: " + textwrap.fill(self.hint, 96, subsequent_indent="        "))
        return "\n".join(lines)

    __repr__ = __str__


# --------------------------------------------------------------------------------------------------
# Kernel source rules: what a graded kernel may use (what compiles for a GPU, and nothing that could
# reach the grader).  Used by check() for early, teaching messages and by the grader before it compiles
# a learner's kernel in its own process.

_XYZ = {"x", "y", "z"}
CUDA_API = {
    "threadIdx": _XYZ, "blockIdx": _XYZ, "blockDim": _XYZ, "gridDim": _XYZ,
    "shared": {"array"}, "local": {"array"}, "const": {"array_like"},
    "atomic": {"add", "sub", "max", "min", "and_", "or_", "xor", "exch", "inc", "dec", "cas",
               "compare_and_swap", "nanmax", "nanmin"},
    **{name: None for name in (
        "laneid", "warpsize", "grid", "gridsize", "syncthreads", "syncthreads_count", "syncthreads_and",
        "syncthreads_or", "syncwarp", "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync",
        "all_sync", "any_sync", "eq_sync", "ballot_sync", "activemask", "lanemask_lt", "threadfence",
        "threadfence_block", "threadfence_system", "popc", "brev", "clz", "ffs", "fma", "cbrt", "selp")},
}
DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "bool_", "complex64", "complex128", "intp"}
MATH_API = {n for n in dir(math) if not n.startswith("_")}
# (no .real/.imag: they would hand the kernel a raw NumPy view that the tracer does not see)
ARRAY_ATTRS = {"shape", "size", "ndim", "dtype", "x", "y", "z"}
SAFE_BUILTINS = {"range", "min", "max", "abs", "int", "float", "bool", "len", "round", "print",
                 "NotImplementedError", "ValueError", "IndexError", "RuntimeError", "AssertionError"}
_ALLOWED_NODES = (
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Expr, ast.Return, ast.Pass,
    ast.Break, ast.Continue, ast.Raise, ast.Assert, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Call, ast.Attribute, ast.Subscript, ast.Name, ast.Constant, ast.Tuple, ast.Slice, ast.NamedExpr,
    ast.keyword, ast.arguments, ast.arg, ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)
_WHY = {
    ast.Import: "imports", ast.ImportFrom: "imports", ast.ListComp: "list comprehensions",
    ast.List: "Python lists", ast.Dict: "dicts", ast.Set: "sets", ast.DictComp: "dict comprehensions",
    ast.SetComp: "set comprehensions", ast.GeneratorExp: "generator expressions", ast.Lambda: "lambdas",
    ast.FunctionDef: "functions defined inside a kernel", ast.ClassDef: "classes", ast.With: "`with` blocks",
    ast.Try: "try/except", ast.Global: "`global`", ast.Nonlocal: "`nonlocal`", ast.JoinedStr: "f-strings",
    ast.Yield: "`yield`", ast.Await: "`await`", ast.Delete: "`del`", ast.Starred: "`*` unpacking",
}


@dataclass
class Names:
    """What the module-level names a kernel uses stand for: modules, dtypes, numbers, device functions."""

    modules: dict = field(default_factory=lambda: {"cuda": "cuda", "math": "math", "np": "numpy",
                                                   "numpy": "numpy", "numba": "numba"})
    dtypes: set = field(default_factory=set)  # bare names bound to numba/numpy dtypes (float32)
    constants: set = field(default_factory=set)  # names bound to numbers
    device_functions: set = field(default_factory=set)
    cuda_functions: set = field(default_factory=set)  # bare names imported from numba.cuda (syncthreads)


def _attr_chain(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return node, parts[::-1]


def lint_kernel(fn_node: ast.FunctionDef, names: Names) -> list:
    """Problems that keep a kernel from being graded, as (line, message); empty when it may run."""
    problems = []
    local = {a.arg for a in fn_node.args.args}
    if fn_node.args.vararg or fn_node.args.kwarg or fn_node.args.kwonlyargs:
        problems.append((fn_node.lineno, "a kernel takes plain positional parameters (no *args, **kwargs)"))
    for node in ast.walk(fn_node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
    inner = set()  # attribute nodes inside a longer chain: the outermost one is checked
    for stmt in fn_node.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                inner.add(id(node.value))
            if id(node) in inner:
                continue
            line = getattr(node, "lineno", fn_node.lineno)
            if not isinstance(node, _ALLOWED_NODES):
                what = _WHY.get(type(node), f"`{type(node).__name__}`")
                problems.append((line, f"{what} cannot be used in a CUDA kernel"))
                continue
            if isinstance(node, ast.Name):
                if node.id.startswith("__"):
                    problems.append((line, f"`{node.id}` is not available in a CUDA kernel"))
                elif isinstance(node.ctx, ast.Load) and not (
                    node.id in local or node.id in SAFE_BUILTINS or node.id in names.constants
                    or node.id in names.dtypes or node.id in names.device_functions
                    or node.id in names.cuda_functions or node.id in names.modules
                ):
                    problems.append((line, f"`{node.id}` is not defined, or is not something a kernel can use "
                                           "(a number, a dtype, a device function)"))
            elif isinstance(node, ast.Attribute):
                if node.attr.startswith("_"):
                    problems.append((line, f"`.{node.attr}` is not available in a CUDA kernel"))
                    continue
                root, chain = _attr_chain(node)
                if isinstance(root, ast.Name) and root.id in names.modules and root.id not in local:
                    bad = _module_chain_problem(names.modules[root.id], chain)
                    if bad:
                        problems.append((line, f"`{root.id}.{'.'.join(chain)}`: {bad}"))
                elif node.attr not in ARRAY_ATTRS:
                    problems.append((line, f"`.{node.attr}`: a kernel may only read .shape, .size, .ndim, .dtype "
                                           "of an array (and .x/.y/.z of threadIdx and friends)"))
            elif isinstance(node, ast.Name) is False and isinstance(node, ast.Call):
                func = node.func
                if not isinstance(func, (ast.Name, ast.Attribute)):
                    problems.append((line, "only functions called by name can be used in a kernel"))
    # one message per line is enough
    seen, out = set(), []
    for line, msg in problems:
        if line not in seen:
            seen.add(line)
            out.append((line, msg))
    return out


def _module_chain_problem(module: str, chain: list) -> str:
    if module == "numba" and chain and chain[0] == "cuda":
        module, chain = "cuda", chain[1:]
    if not chain:
        return "a module cannot be used as a value in a kernel"
    if module == "cuda":
        top = chain[0]
        if top not in CUDA_API:
            return f"cuda.{top} is not part of the CUDA kernel API the course grades"
        allowed = CUDA_API[top]
        if allowed is None:
            return "" if len(chain) == 1 else f"cuda.{top} has no attribute {chain[1]!r}"
        if allowed is _XYZ and len(chain) == 1:
            return ""
        if len(chain) < 2 or chain[1] not in allowed or len(chain) > 2:
            return f"use cuda.{top}.{'/'.join(sorted(allowed))}"
        return ""
    if module == "math":
        return "" if len(chain) == 1 and chain[0] in MATH_API else "not a function of the math module"
    if module in ("numpy", "numba"):
        if len(chain) == 1 and chain[0] in DTYPES:
            return ""
        return f"{module} functions do not run inside a CUDA kernel (only its dtypes, such as {module}.float32)"
    return "not usable in a kernel"


def kernel_source_problems(kernel) -> list:
    """Lint a live kernel object (as check() gets it): problems as (line, message); [] if no source."""
    import inspect

    fn = _py_func(kernel)
    if fn is None:
        return []
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return []
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if node is None:
        return []
    names = Names()
    names.modules = {}
    scope = dict(getattr(fn, "__globals__", {}))
    for key, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            scope[key] = cell.cell_contents  # kernels made by a factory see its arguments as constants
        except ValueError:
            pass
    for key, value in scope.items():
        mod = getattr(value, "__name__", None) if type(value).__name__ == "module" else None
        if mod in ("math", "numpy", "numba"):
            names.modules[key] = mod
        elif mod and mod.startswith("numba") and mod.endswith("cuda") or type(value).__name__ == "FakeCUDAModule":
            names.modules[key] = "cuda"
        elif isinstance(value, (int, float, bool, np.integer, np.floating)):
            names.constants.add(key)
        elif key in DTYPES or type(value).__module__.startswith("numba.core.types"):
            names.dtypes.add(key)
        elif _is_device_function(value):
            names.device_functions.add(key)
        elif callable(value) and getattr(value, "__module__", "").startswith("numba.cuda") and key in CUDA_API:
            names.cuda_functions.add(key)
    first = node.lineno
    offset = fn.__code__.co_firstlineno - first
    return [(line + offset, msg) for line, msg in lint_kernel(node, names)]


def _py_func(kernel):
    for attr in ("py_func", "fn"):
        f = getattr(kernel, attr, None)
        if callable(f) and hasattr(f, "__code__"):
            return f
    return kernel if hasattr(kernel, "__code__") else None


def _is_device_function(value) -> bool:
    cls = type(value).__name__
    if cls == "FakeCUDAKernel":
        return bool(getattr(value, "_device", False))
    return cls == "CUDADispatcher" and bool(getattr(value, "targetoptions", {}).get("device"))


# --------------------------------------------------------------------------------------------------
# Judging


class _SharedBytes:
    """Engine hooks that record how many bytes of shared memory each block allocates."""

    def __init__(self):
        self.per_block = []

    def end_block(self, block):
        from course import engine

        module = getattr(engine._state, "module", None)
        shared = getattr(module, "shared", None)
        self.per_block.append(int(getattr(shared, "next_offset", 0)))

    @property
    def max_bytes(self) -> int:
        return max(self.per_block, default=0)


def _launch(kernel, inp: Input, hooks=None, time_limit=None):
    """One launch on the CPU engine, whatever the backend.

    Grading must not depend on the machine: the engine reports an out-of-bounds index or a barrier
    some threads skip (a GPU silently survives both), runs threads in one documented order, and
    stops an endless kernel at its time limit.
    """
    from course.engine import launch

    launch(kernel, inp.griddim, inp.blockdim, inp.args, hooks=hooks,
           time_limit=LAUNCH_TIME_LIMIT if time_limit is None else time_limit)


def is_stub(kernel) -> bool:
    """True when the kernel's body is still the exercise's ``raise NotImplementedError(...)`` stub."""
    import inspect

    fn = _py_func(kernel)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    body = [s for s in (node.body if node else []) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _classify(exc: BaseException):
    """(status, what, detail) for an exception raised by a launch of the learner's kernel."""
    chain, e = [], exc
    while e is not None and len(chain) < 5:
        chain.append(e)
        e = getattr(e, "cause", None) or e.__cause__ or e.__context__
    if any(isinstance(e, NotImplementedError) for e in chain):
        return "not attempted", "not written yet", "the kernel still raises NotImplementedError"
    text = str(exc).strip() or type(exc).__name__
    if "time limit" in text:
        return "timeout", "finishes in time", text
    if "out of bounds" in text or "IndexError" in text:
        return "error", "stays inside its arrays", text
    return "error", "runs without an error", f"{type(exc).__name__}: {text}" if not isinstance(
        exc, RuntimeError) else text


def _compare(ex: Exercise, inp: Input):
    """None if every expected array matches, else a sentence naming the first wrong element."""
    for k, want in inp.expected.items():
        got = np.asarray(inp.args[k])
        name = inp.names[k]
        if ex.rtol or ex.atol:
            ok = np.isclose(got, want, rtol=ex.rtol, atol=ex.atol)
        else:
            ok = (got == want) | (np.isnan(got) & np.isnan(want))
        if ok.all():
            continue
        bad = np.argwhere(~ok)
        first = tuple(int(i) for i in bad[0])
        idx = ", ".join(map(str, first))
        g = got[first]
        if np.isnan(g):
            what = f"{name}[{idx}] is NaN: never written (or a NaN was computed)"
        else:
            what = f"{name}[{idx}] is {g:g}, expected {want[first]:g}"
        return f"{what}; {len(bad)} of {got.size} elements wrong"
    return None


def _race_on(kernel, ex: Exercise, inp: Input) -> str:
    """The first race the tracer finds when ``kernel`` runs on (a fresh copy of) ``inp``, or ''."""
    if not any(p.name == "no race between threads" for p in ex.properties):
        return ""
    try:
        from course.trace import trace

        args = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in inp.args)
        races = list(trace(kernel, inp.griddim, inp.blockdim, *args, lines=False).races())
    except Exception:  # diagnosis only: the wrong result is already reported
        return ""
    return f"{len(races)} race(s); first: {_race_text(races[0])}" if races else ""


def judge(ex: Exercise, kernel, *, seed=None, time_limit=None, lint=True) -> Verdict:
    """Run ``kernel`` on fresh inputs and a traced launch; return the verdict (never raises for the kernel's faults)."""
    rng = np.random.default_rng(seed)
    results = []

    def verdict(status, score, hint):
        return Verdict(ex.name, status, score, ex.max_score, results, hint)

    if lint:
        problems = kernel_source_problems(kernel)
        if problems:
            line, msg = problems[0]
            results.append(Result("uses only what compiles in a CUDA kernel", False, f"line {line}: {msg}"))
            return verdict("rejected", 0, "Inside a kernel only cuda.*, math.*, arithmetic, numbers, arrays and "
                                          "device functions are available: that is what compiles for the GPU.")
    if is_stub(kernel):
        results.append(Result("not written yet", False, "the kernel still raises NotImplementedError"))
        return verdict("not attempted", 0, ex.stub_hint)
    inputs = list(ex.make_inputs(rng))
    for inp in inputs:
        try:
            _launch(kernel, inp, time_limit=time_limit)
        except Exception as exc:  # the learner's kernel failed: report, never raise
            status, what, detail = _classify(exc)
            results.append(Result(what, False, detail, inp.label))
            hint = ex.stub_hint if status == "not attempted" else (
                ex.hint_oob if "inside its arrays" in what else
                "A kernel that never finishes usually has a loop whose condition never becomes false, or "
                "threads waiting at a barrier others never reach." if status == "timeout" else ex.hint_wrong)
            return verdict(status, 0, hint)
        wrong = _compare(ex, inp)
        if wrong:
            results.append(Result("correct result", False, wrong, inp.label))
            race = _race_on(kernel, ex, inp)
            if race:  # a wrong result caused by a race: say so, it is the thing to fix
                results.append(Result("no race between threads", False, race, inp.label))
                return verdict("fail", 0, no_races().hint)
            return verdict("fail", 0, ex.hint_wrong)
    results.append(Result(f"correct on {len(inputs)} inputs", True, ", ".join(i.label for i in inputs)))
    score = 1
    hint = ""
    if ex.properties:
        tin = ex.make_trace_input(rng)
        shared = _SharedBytes()
        try:
            _launch(kernel, tin, hooks=shared, time_limit=time_limit)
            wrong = _compare(ex, tin)
            if wrong:
                results.append(Result("correct result", False, wrong, tin.label))
                return verdict("fail", 0, ex.hint_wrong)
            from course.trace import trace

            tin2 = ex.make_trace_input(np.random.default_rng(rng.integers(1 << 31)))
            report = trace(kernel, tin2.griddim, tin2.blockdim, *tin2.args,
                           lines=any(p.lines for p in ex.properties),
                           time_limit=LAUNCH_TIME_LIMIT if time_limit is None else time_limit)
        except Exception as exc:
            status, what, detail = _classify(exc)
            results.append(Result(what, False, detail, tin.label))
            return verdict(status, 0, ex.hint_wrong)
        extra = {"shared_bytes": shared.max_bytes}
        for prop in ex.properties:
            ok, detail = prop.measure(report, extra)
            results.append(Result(prop.name, ok, detail, tin.label))
            if ok:
                score += 1
            elif not hint:
                hint = prop.hint
    status = "pass" if score == ex.max_score else "partial"
    return verdict(status, score, hint)


# --------------------------------------------------------------------------------------------------
# Properties, measured on a trace report (course.trace)


def _ratio(t, num, den):
    return t[num] / t[den] if t[den] else 0.0


def coalesced(kind: str, max_sectors: float = 4.0, hint: str = "") -> Property:
    """At most ``max_sectors`` 32-byte sectors per request on global loads or stores (``kind``)."""

    def measure(report, extra):
        t = report.totals()
        req = t[f"global_{kind}_requests"]
        if not req:
            return False, f"no global {kind}s were traced"
        r = _ratio(t, f"global_{kind}_sectors", f"global_{kind}_requests")
        return r <= max_sectors + 1e-9, f"{r:.2f} sectors per request (want at most {max_sectors:g})"

    what = "load" if kind == "load" else "store"
    return Property(f"coalesced global {what}s (合并访存)", measure, hint or (
        f"Look at the global {what}s: which addresses do the 32 lanes of one warp touch in one "
        f"instruction? Neighbouring lanes (threadIdx.x, threadIdx.x + 1) should touch neighbouring elements "
        f"of a row."))


def conflict_free(kind: str, max_wavefronts: float = 1.0, hint: str = "", name: str = "") -> Property:
    """Shared-memory ``kind`` (load/store) accesses take at most ``max_wavefronts`` × their conflict-free minimum.

    The minimum is the tracer's ideal wavefronts (one per request for 4-byte accesses; a 16-byte load the
    compiler made from four 4-byte ones needs 2 even without a conflict), so the degree measured is the
    bank conflicts' alone — the same for the source's count and the compiled kernel's (course.compiler).
    """

    def measure(report, extra):
        t = report.totals()
        req = t[f"shared_{kind}_requests"]
        if not req:
            return False, f"no shared-memory {kind}s"
        waves = t[f"shared_{kind}_wavefronts"]
        extra_waves = report.bank_conflicts()[kind]
        ideal = max(1, waves - extra_waves)
        degree = waves / ideal
        ways = f" (a {degree:.3g}-way bank conflict on average)" if degree > max_wavefronts + 1e-9 else ""
        return degree <= max_wavefronts + 1e-9, (
            f"{waves / req:.2f} wavefronts per request, {degree:.2f}× the conflict-free minimum{ways} "
            f"(want at most {max_wavefronts:g}×)")

    return Property(name or f"no bank conflicts on shared {kind}s (存储体冲突)", measure, hint or (
        f"Work out the bank of each lane's {kind}: bank = (word index) mod 32. If several lanes of one warp "
        f"hit different words of the same bank, the {kind} is served in several passes."))


def uses_shared(hint: str = "") -> Property:
    """The kernel stores to and loads from shared memory (so it cannot pass by skipping the tile)."""

    def measure(report, extra):
        t = report.totals()
        ok = t["shared_store_requests"] > 0 and t["shared_load_requests"] > 0
        return ok, (f"{t['shared_store_requests']} shared stores, {t['shared_load_requests']} shared loads"
                    if ok else "the kernel never goes through shared memory")

    return Property("uses shared memory (共享内存)", measure, hint or (
        "This exercise is about staging data in a cuda.shared.array tile: read it coalesced from global "
        "memory into the tile, then read the tile in the order you need."))


def no_races(hint: str = "") -> Property:
    """No two threads of a block touch the same shared word (one writing) without a barrier between."""

    def measure(report, extra):
        races = list(report.races())
        if not races:
            return True, "no race found"
        return False, f"{len(races)} race(s); first: {_race_text(races[0])}"

    return Property("no race between threads", measure, hint or (
        "One thread reads a shared-memory word that another thread writes, and nothing makes the reader "
        "wait for the writer. What must every thread of the block reach before anyone reads the tile?"))


def _race_text(race) -> str:
    text = str(race)
    return text.splitlines()[0] if text else repr(race)


def no_divergence(hint: str = "") -> Property:
    """No branch splits a warp: every warp's lanes take the same side of every branch (分支分化)."""

    def measure(report, extra):
        div = report.divergence()
        if not div.branches:
            return True, f"no warp split; {div.avg_active_lanes:.1f} of 32 lanes active per warp step"
        b = div.branches[0]
        sides = ", ".join(f"{v} to {'the end' if k == 'exit' else f'line {k}'}" for k, v in b.sides.items())
        return False, (f"{len(div.branches)} branch(es) split warps; first at line {b.line} `{b.source}` "
                       f"({b.divergent} of {b.executions} warp executions split; lanes went {sides}); "
                       f"{div.avg_active_lanes:.1f} of 32 lanes active per warp step")

    return Property("no warp divergence (分支分化)", measure, hint or (
        "A warp runs both sides of a branch, one after the other, when its lanes disagree. Which threads "
        "handle which elements is up to you: can you arrange it so that all 32 lanes of a warp agree?"),
        lines=True)


def shared_at_most(nbytes: int, hint: str) -> Property:
    """The block allocates at most ``nbytes`` bytes of shared memory (e.g. an unpadded 32×32 tile)."""

    def measure(report, extra):
        got = extra.get("shared_bytes", 0)
        return got <= nbytes, f"{got} bytes of shared memory per block (want at most {nbytes})"

    return Property(f"no padding: at most {nbytes} bytes of shared memory per block", measure, hint)


# --------------------------------------------------------------------------------------------------
# Inputs


def _f32(rng, shape):
    # small integers stored as float32: sums and copies are exact, and values are easy to read
    return rng.integers(-50, 50, size=shape).astype(np.float32)


def _distinct(rng, shape):
    # every element different, so a value in the wrong place cannot look right by accident
    n = int(np.prod(shape))
    return (rng.permutation(n) + 1).astype(np.float32).reshape(shape)


def _random_size(rng, lo, hi):
    return int(rng.integers(lo, hi))


def _ceil(a, b):
    return (a + b - 1) // b


# 01 -- vector add with its guard


VEC_TPB = 128


def _vec_input(rng, n, why):
    a, b = _f32(rng, n), _f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (_ceil(n, VEC_TPB),), (VEC_TPB,), (a, b, out, n), {2: a + b},
                 ("a", "b", "out", "n"))


def _vec_inputs(rng):
    return [
        _vec_input(rng, 1, "one element"),
        _vec_input(rng, 127, "prime, less than one block"),
        _vec_input(rng, VEC_TPB, "exactly one block"),
        _vec_input(rng, 257, "prime, two blocks and one element"),
        _vec_input(rng, _random_size(rng, 300, 700), "random"),
    ]


# 01 -- 2-D indexing: matrix add


MAT_BLOCK = (32, 8)


def _mat_input(rng, rows, cols, why):
    a, b = _f32(rng, (rows, cols)), _f32(rng, (rows, cols))
    out = np.full((rows, cols), np.nan, np.float32)
    grid = (_ceil(cols, MAT_BLOCK[0]), _ceil(rows, MAT_BLOCK[1]))
    return Input(f"{rows}x{cols} ({why})", grid, MAT_BLOCK, (a, b, out), {2: a + b}, ("a", "b", "out"))


def _mat_inputs(rng):
    return [
        _mat_input(rng, 1, 1, "one element"),
        _mat_input(rng, 17, 16, "more rows than columns"),
        _mat_input(rng, 1, 33, "one row, just past one block"),
        _mat_input(rng, 13, 47, "primes"),
        _mat_input(rng, _random_size(rng, 9, 40), _random_size(rng, 20, 70), "random"),
    ]


# 02 -- divergence: even elements take path A, odd ones path B, and no warp takes both


DIV_TPB = 128
DIV_ITERS = 4


def _div_input(rng, n, why):
    from course.kernels import warps

    x = rng.uniform(0.0, 1.0, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    odd = (np.arange(n) % 2) == 1
    want = np.where(odd, warps.PATH_B(x, DIV_ITERS), warps.PATH_A(x, DIV_ITERS)).astype(np.float32)
    return Input(f"n={n} ({why})", (_ceil(n, DIV_TPB),), (DIV_TPB,), (x, out, DIV_ITERS), {1: want},
                 ("x", "out", "iters"))


def _div_inputs(rng):
    return [
        _div_input(rng, 1, "one element"),
        _div_input(rng, 97, "prime, less than one block"),
        _div_input(rng, 128, "exactly one block"),
        _div_input(rng, 263, "prime, two blocks and 7 elements"),
        _div_input(rng, _random_size(rng, 300, 600), "random"),
    ]


# 03 -- coalescing: a particle update on a struct of arrays


SOA_TPB = 128
SOA_DT = 0.25  # a power of two: x + vx * dt is exact for the small integers the inputs hold


def _soa_input(rng, n, why):
    from course.kernels import memory

    q = _f32(rng, (8, n))
    return Input(f"n={n} ({why})", (_ceil(n, SOA_TPB),), (SOA_TPB,), (q, SOA_DT),
                 {0: memory.reference_advance_soa(q, SOA_DT)}, ("q", "dt"))


def _soa_inputs(rng):
    return [
        _soa_input(rng, 1, "one particle"),
        _soa_input(rng, 127, "prime, less than one block"),
        _soa_input(rng, 128, "exactly one block"),
        _soa_input(rng, 257, "prime, two blocks and one particle"),
        _soa_input(rng, _random_size(rng, 300, 700), "random"),
    ]


# 04 -- shared memory: row sums through a conflict-free tile


RS_TILE = 32
RS_BLOCK = (32, 8)


def _rs_input(rng, n, why):
    a = _f32(rng, (n, RS_TILE))
    out = np.full(n, np.nan, np.float32)
    return Input(f"{n}x32 ({why})", (_ceil(n, RS_TILE),), RS_BLOCK, (a, out),
                 {1: a.astype(np.float64).sum(axis=1).astype(np.float32)}, ("a", "out"))


def _rs_inputs(rng):
    return [
        _rs_input(rng, 1, "one row"),
        _rs_input(rng, 31, "prime, less than one tile"),
        _rs_input(rng, 32, "exactly one tile"),
        _rs_input(rng, 37, "prime, one tile and 5 rows"),
        _rs_input(rng, _random_size(rng, 40, 100), "random"),
    ]


# 05 -- transpose


TP_TILE = 32
TP_BLOCK = (32, 32)  # the chapter's tile kernels: one thread per element of a 32x32 tile
MINE_BLOCK = (32, 8)  # own design: 32x8 threads per 32x32 tile, so each thread moves 4 elements


def _tp_input(rng, rows, cols, why, block=TP_BLOCK):
    src = _distinct(rng, (rows, cols))
    dst = np.full((cols, rows), np.nan, np.float32)
    grid = (_ceil(cols, TP_TILE), _ceil(rows, TP_TILE))
    return Input(f"{rows}x{cols} ({why})", grid, block, (src, dst), {1: src.T.copy()}, ("src", "dst"))


def _tp_inputs(rng, block=TP_BLOCK):
    return [
        _tp_input(rng, 1, 1, "one element", block),
        _tp_input(rng, 17, 16, "not square, less than a tile", block),
        _tp_input(rng, 1, 33, "one row, just past one tile", block),
        _tp_input(rng, 37, 31, "primes", block),
        _tp_input(rng, _random_size(rng, 33, 70), _random_size(rng, 33, 70), "random", block),
    ]


def _tp_trace(rng, block=TP_BLOCK):
    return _tp_input(rng, 64, 96, "full tiles, not square", block)


# --------------------------------------------------------------------------------------------------
# The exercises


def _basics(name):
    def get():
        from course.kernels import basics

        return basics.KERNELS[name].kernel

    return get


def _transpose(name):
    """The chapter's own kernel for a transpose exercise, from course.kernels.transpose."""

    def get():
        from course.kernels import transpose

        return transpose.TRANSPOSE_VERSIONS[name].kernel

    return get


_TP_TASK = (
    "Write `{sig}`: dst = src.T for a float32 matrix src of shape (rows, cols) and dst of shape (cols, rows). "
    "It is launched with threads_per_block = {block} and one block per 32x32 tile of src: "
    "blocks_per_grid = (ceil(cols / 32), ceil(rows / 32)){per_thread}. "
    "Read src into a cuda.shared.array tile with coalesced loads, wait for the whole block, and write the "
    "tile out transposed with coalesced stores. Shapes that do not fill a tile must work too."
)


def _tp_task(sig, block):
    per = "" if block == TP_BLOCK else f", so each thread moves {TP_TILE * TP_TILE // (block[0] * block[1])} elements"
    return _TP_TASK.format(sig=sig, block=block, per_thread=per)


_TRANSPOSE_PROPS = (
    coalesced("load"),
    coalesced("store", hint="The store is where the naive transpose loses: lanes with consecutive threadIdx.x "
                            "should write consecutive elements of a row of dst. Swap roles inside the tile, "
                            "not in global memory."),
    uses_shared(),
    no_races(),
)

EXERCISES = {}


def register(ex: Exercise) -> Exercise:
    """Add an exercise to the registry (chapters add theirs here)."""
    if ex.name in EXERCISES:
        raise ValueError(f"exercise {ex.name} is registered twice")
    EXERCISES[ex.name] = ex
    return ex


register(Exercise(
    name="01.vector_add",
    title="Vector add with its guard",
    signature="vector_add(a, b, out, n)",
    task=("Write `vector_add(a, b, out, n)`: out[i] = a[i] + b[i] for every i < n, one thread per element. "
          f"It is launched with threads_per_block = {VEC_TPB} and blocks_per_grid = ceil(n / {VEC_TPB}), so the "
          "last block usually has threads with no element: they must do nothing."),
    make_inputs=_vec_inputs,
    make_trace_input=lambda rng: _vec_input(rng, 1024, "8 full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Compute each thread's global index from blockIdx.x, blockDim.x and threadIdx.x, then check "
                "which elements were never written: is your guard off by one at the end?"),
    hint_oob=("The grid has more threads than elements whenever n is not a multiple of the block. Which "
              "threads must not touch the arrays, and what comparison keeps exactly those out?"),
    stub_hint="each thread needs its global index i and must do nothing when i is past the end",
    reference=_basics("vector_add"),
))

register(Exercise(
    name="01.matrix_add",
    title="2-D indexing: matrix add",
    signature="matrix_add(a, b, out)",
    task=("Write `matrix_add(a, b, out)`: out = a + b for row-major float32 matrices of shape (rows, cols), one "
          f"thread per element, launched with threads_per_block = {MAT_BLOCK} and "
          f"blocks_per_grid = (ceil(cols / {MAT_BLOCK[0]}), ceil(rows / {MAT_BLOCK[1]})). Let x run along a row "
          "(x is the column), so that the 32 lanes of a warp touch neighbouring elements."),
    make_inputs=_mat_inputs,
    make_trace_input=lambda rng: _mat_input(rng, 16, 64, "full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Your kernel is right on some shapes and not on others. Check that x gives the column and y "
                "the row, and that each guard compares an index with the size along the same axis "
                "(out.shape[0] is the number of rows)."),
    hint_oob=("Some threads fall outside the matrix when rows or cols do not fill a block. Compare the row "
              "with the number of rows and the column with the number of columns."),
    stub_hint="find this thread's row and column with cuda.grid(2) (x first) and guard both",
    reference=_basics("matrix_add"),
))

register(Exercise(
    name="02.even_odd_paths",
    title="Divergence: two paths, and no warp runs both",
    signature="even_odd_paths(x, out, iters)",
    task=("Write `even_odd_paths(x, out, iters)`: out[i] = path A applied iters times to x[i] when i is even, "
          "path B when i is odd (path A: v = v * A_MUL + A_ADD; path B: v = v * v * B_MUL + B_ADD, in float32, "
          "constants from course.kernels.warps). It is launched with threads_per_block = "
          f"{DIV_TPB} and blocks_per_grid = ceil(n / {DIV_TPB}). Choosing the path by the parity of the "
          "thread's own index splits every warp in two (分支分化): both loops run, half the lanes idle in each. "
          "You decide which thread handles which element: make every warp take only one path."),
    make_inputs=_div_inputs,
    make_trace_input=lambda rng: _div_input(rng, 256, "two full blocks"),
    properties=(no_divergence(),),
    hint_wrong=("Each element must be computed exactly once, with the path its own index asks for. Write down, "
                "for a thread, which element it handles, then check that the map covers 0..n-1 once and "
                "that threads past the end do nothing."),
    hint_oob="Some threads have no element when n does not fill the last block: guard the index.",
    stub_hint="map threads to elements so that a warp's 32 lanes all get even elements, or all odd ones",
    reference=None,
    rtol=1e-6, atol=1e-6,
))

register(Exercise(
    name="03.advance_soa",
    title="Coalescing: particles as a struct of arrays",
    signature="advance_soa(q, dt)",
    task=("Write `advance_soa(q, dt)`: move every particle by its velocity, x += vx * dt, y += vy * dt, "
          "z += vz * dt, for particles stored as a struct of arrays (SoA): q has shape (8, n) and field f of "
          "particle i is q[f, i] (fields x, y, z, vx, vy, vz, mass, charge, numbered 0..7 as in "
          f"course.kernels.memory). It is launched with threads_per_block = {SOA_TPB} and one thread per "
          f"particle, blocks_per_grid = ceil(n / {SOA_TPB}). Each load and store of a warp should touch 32 "
          "neighbouring floats: 4 sectors per request (合并访存)."),
    make_inputs=_soa_inputs,
    make_trace_input=lambda rng: _soa_input(rng, 512, "four full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Field f of particle i is q[f, i], not q[i, f]: the first index picks the field. Only x, y and "
                "z change; velocities stay as they are."),
    hint_oob=("Two ways out of the array: threads past the last particle (guard them), or the indices in the "
              "wrong order (q has 8 rows, one per field, and n columns, one per particle)."),
    stub_hint="one thread per particle; which index of q picks the field, and which the particle?",
    reference=lambda: __import__("course.kernels.memory", fromlist=["advance_soa"]).advance_soa,
))

register(Exercise(
    name="04.row_sums",
    title="Shared memory: row sums through a conflict-free tile",
    signature="row_sums(a, out)",
    task=("Write `row_sums(a, out)`: out[r] = a[r, 0] + ... + a[r, 31] for a float32 matrix a of shape (n, 32). "
          "It is launched with threads_per_block = (32, 8) and one block per 32 rows "
          "(blocks_per_grid = ceil(n / 32)). Summing a row in one thread reads a column of lanes at once, "
          "which is not coalesced; instead let the 8 warps copy the block's 32 rows into a "
          "cuda.shared.array tile with coalesced loads, wait for each other, then let one warp sum: "
          "lane tx adds up row tx of the tile. Make that strided read of the tile free of bank conflicts."),
    make_inputs=_rs_inputs,
    make_trace_input=lambda rng: _rs_input(rng, 64, "two full tiles"),
    properties=(
        coalesced("load", hint="Summing a row inside one thread makes the warp's 32 lanes read 32 different "
                               "rows at once: 32 sectors per request. Copy the rows into shared memory first, "
                               "with threadIdx.x running along a row."),
        coalesced("store"),
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the strided tile read (存储体冲突)",
                      hint="Lane tx reads tile[tx, c]: consecutive lanes are one row apart. A row of 32 "
                           "floats is 32 words, so every lane lands in the same bank. How long must a row be "
                           "so that consecutive rows start in different banks, for every pair of lanes?"),
        no_races(),
    ),
    hint_wrong=("Check the rows of the last, partial tile (n is not always a multiple of 32): every row "
                "below n must be loaded and summed, and nothing past n touched."),
    hint_oob="The last block covers rows past n when n is not a multiple of 32: guard loads and stores.",
    stub_hint="load the block's rows into a shared tile, syncthreads, then one warp sums the rows",
    rtol=1e-6, atol=1e-4,
))

register(Exercise(
    name="05.transpose_padded",
    title="Transpose with a padded tile",
    signature="transpose_padded(src, dst)",
    task=_tp_task("transpose_padded(src, dst)", TP_BLOCK) + (
        " Reading the tile by columns puts all 32 lanes in one bank; cure it by padding the tile."),
    make_inputs=_tp_inputs,
    make_trace_input=_tp_trace,
    properties=_TRANSPOSE_PROPS + (
        conflict_free("load", name="no bank conflicts on the tile read (存储体冲突)",
                      hint="The tile is read by columns: lane tx reads row tx. Which bank does each row "
                           "start in? Padding must make consecutive rows start in different banks for all "
                           "32 lanes, not just for some of them."),
        conflict_free("store"),
    ),
    hint_wrong=("Think of tile coordinates and global coordinates separately: the block's tile starts at "
                "row blockIdx.y*32 and column blockIdx.x*32 of src, but at row blockIdx.x*32 and column "
                "blockIdx.y*32 of dst. Shapes that are not square show a mix-up of rows and columns."),
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="stage a padded shared tile: coalesced read of src, syncthreads, coalesced write of dst",
    reference=_transpose("tile_32x33"),
))

register(Exercise(
    name="05.transpose_swizzled",
    title="Transpose with a swizzled tile",
    signature="transpose_swizzled(src, dst)",
    task=_tp_task("transpose_swizzled(src, dst)", TP_BLOCK) + (
        " Do not pad the tile (exactly 32x32 floats): instead move each row's elements to other columns "
        "with an XOR swizzle (chapter 04), so that a tile column is spread over all 32 banks, and read "
        "every element back from where you put it."),
    make_inputs=_tp_inputs,
    make_trace_input=_tp_trace,
    properties=_TRANSPOSE_PROPS + (
        conflict_free("load", name="no bank conflicts on the tile read (存储体冲突)",
                      hint="With a 32x32 tile, lane tx reading row tx, column c lands in bank c for every "
                           "lane. Which column index would send each lane to a different bank, and is it a "
                           "one-to-one map within each row?"),
        conflict_free("store"),
        shared_at_most(TP_TILE * TP_TILE * 4, "This exercise asks for the swizzle instead of padding: keep the "
                                              "tile exactly 32x32 and move the columns around instead."),
    ),
    hint_wrong=("A swizzle must be undone exactly: the element stored at tile[r, c ^ r] has to be read back "
                "from tile[r, c ^ r] with the same r. Check which of your indices is the row inside the tile."),
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="stage a 32x32 tile with the column XOR-swizzled by the row; read it back through the same map",
    reference=_transpose("swizzle"),
))

register(Exercise(
    name="05.transpose_mine",
    title="Transpose of your own design, judged on performance",
    signature="transpose_mine(src, dst)",
    task=_tp_task("transpose_mine(src, dst)", MINE_BLOCK) + (
        " Any design is fine; it is judged only on what the memory system would do: coalesced global loads "
        "and stores (at most 4 sectors per request), shared-memory accesses without bank conflicts (each at its "
        "conflict-free minimum of wavefronts: 1 for a 4-byte access), shared memory used, and no race."),
    make_inputs=lambda rng: _tp_inputs(rng, MINE_BLOCK),
    make_trace_input=lambda rng: _tp_trace(rng, MINE_BLOCK),
    properties=_TRANSPOSE_PROPS + (
        conflict_free("load", name="shared loads at their conflict-free minimum (存储体冲突)"),
        conflict_free("store", name="shared stores at their conflict-free minimum (存储体冲突)"),
    ),
    hint_wrong="Check the tile's origin in src and in dst separately; non-square shapes show a mix-up.",
    hint_oob="Guard every global load and store: the last tiles are only partly inside src and dst.",
    stub_hint="your own design: coalesced in, conflict-free through shared memory, coalesced out",
    reference=_transpose("rows"),
))


# --------------------------------------------------------------------------------------------------
# Chapters 06-10


# 06 -- grid-stride loop: a fixed grid, smaller than the data


GS_TPB = 128
GS_BLOCKS = 2  # 256 threads in all, whatever n is: most inputs need several elements per thread
GS_FACTOR = 0.5  # a power of two: x * factor is exact


def _gs_input(rng, n, why):
    x = _f32(rng, n)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n} ({why})", (GS_BLOCKS,), (GS_TPB,), (x, out, GS_FACTOR),
                 {1: x * np.float32(GS_FACTOR)}, ("x", "out", "factor"))


def _gs_inputs(rng):
    grid = GS_BLOCKS * GS_TPB
    return [
        _gs_input(rng, 1, "one element"),
        _gs_input(rng, 131, "prime, fewer elements than threads"),
        _gs_input(rng, grid, "exactly one element per thread"),
        _gs_input(rng, grid + 1, "one element more than threads"),
        _gs_input(rng, 3 * grid + 7, "three passes and 7 elements"),
        _gs_input(rng, _random_size(rng, 600, 1500), "random"),
    ]


def _transfers(name):
    def get():
        from course.kernels import transfers

        return getattr(transfers, name)

    return get


register(Exercise(
    name="06.scale_grid_stride",
    title="A grid-stride loop: any n, a grid of the size you chose",
    signature="scale_grid_stride(x, out, factor)",
    task=("Write `scale_grid_stride(x, out, factor)`: out[i] = x[i] * factor for every i < x.shape[0]. "
          f"The grid is sized for the GPU, not for the data (chapter 06: enough resident warps to hide "
          f"latency, then stop): it is launched with threads_per_block = {GS_TPB} and blocks_per_grid = "
          f"{GS_BLOCKS} whatever n is, so one thread must handle several elements when n is larger than the "
          "grid. Keep each pass of the grid coalesced (合并访存): in one step, the 32 lanes of a warp touch 32 "
          "neighbouring elements."),
    make_inputs=_gs_inputs,
    make_trace_input=lambda rng: _gs_input(rng, 4 * GS_BLOCKS * GS_TPB, "four passes of the grid"),
    properties=(
        coalesced("load", hint="Each thread should step by the whole grid (cuda.gridsize(1)), not walk a "
                               "contiguous run of its own: neighbouring lanes must touch neighbouring elements "
                               "in every step."),
        coalesced("store"),
    ),
    hint_wrong=("Elements past the first blocks_per_grid * threads_per_block were never written: after its first "
                "element, a thread must go on to the next one that no other thread handles, until it passes "
                "the end of the array."),
    hint_oob="The loop must stop before x.shape[0]: test the index before every access, not only the first.",
    stub_hint="start at this thread's global index and step by the total number of threads in the grid",
    reference=_transfers("scale"),
))


# 07 -- a block reduction in shared memory


RED_TPB = 256  # course.kernels.reduction.TREE_THREADS
RED_PER_BLOCK = 4 * RED_TPB


def _red_input(rng, n, why):
    a = _f32(rng, n)
    out = np.zeros(1, np.float32)  # the blocks add their partial sums into out[0]
    want = np.array([a.astype(np.float64).sum()], np.float32)  # small integers: every sum is exact
    return Input(f"n={n} ({why})", (_ceil(n, RED_PER_BLOCK),), (RED_TPB,), (a, out), {1: want}, ("a", "out"))


def _red_inputs(rng):
    return [
        _red_input(rng, 1, "one element"),
        _red_input(rng, 7, "prime, less than one thread's four"),
        _red_input(rng, 1023, "one element short of one block"),
        _red_input(rng, RED_PER_BLOCK + 3, "one block and 3 elements"),
        _red_input(rng, _random_size(rng, 2100, 3500), "random"),
    ]


def few_warp_splits(max_per_warp: float, hint: str = "") -> Property:
    """At most ``max_per_warp`` warp-splitting branch executions per warp on average (分支分化).

    For kernels where some divergence cannot be avoided (the last five steps of a reduction tree
    split warp 0), unlike :func:`no_divergence`, which wants none at all.
    """

    def measure(report, extra):
        div = report.divergence()
        warps = max(len(div.warps), 1)
        splits = sum(b.divergent for b in div.branches)
        per = splits / warps
        worst = max(div.branches, key=lambda b: b.divergent, default=None)
        where = f"; most at line {worst.line} `{worst.source}`" if worst is not None and splits else ""
        return per <= max_per_warp + 1e-9, (f"{splits} warp splits over {warps} warps: {per:.2f} per warp "
                                            f"(want at most {max_per_warp:g}){where}")

    return Property(f"little warp divergence: at most {max_per_warp:g} split per warp (分支分化)", measure, hint or (
        "A warp runs both sides of a branch when its lanes disagree. Which threads are active at each step? "
        "If whole warps are active or idle together, only the last few steps can split a warp."), lines=True)


def _reduction(name):
    def get():
        from course.kernels import reduction

        return reduction.REDUCTION_VERSIONS[name].kernel

    return get


register(Exercise(
    name="07.tree_sum",
    title="A reduction tree without bank conflicts",
    signature="tree_sum(a, out)",
    task=("Write `tree_sum(a, out)`: add all of the float32 vector a into out[0] (out starts at zero). It is "
          f"launched with threads_per_block = {RED_TPB} and blocks_per_grid = ceil(n / {RED_PER_BLOCK}): each "
          "thread first adds up to 4 elements of its block's part (any split that counts every element once), "
          "puts its value in a cuda.shared.array of 256 floats, and the block adds those up as a tree in shared "
          "memory (归约树); thread 0 then adds the block's sum into out[0] with cuda.atomic.add. Arrange the tree "
          "so that the shared-memory reads of each step are free of bank conflicts (存储体冲突) and no thread "
          "reads a value before its writer has finished."),
    make_inputs=_red_inputs,
    make_trace_input=lambda rng: _red_input(rng, 2 * RED_PER_BLOCK, "two full blocks"),
    properties=(
        uses_shared(),
        conflict_free("load", name="no bank conflicts on the tree's shared loads (存储体冲突)",
                      hint="In each step, which words do the active lanes of one warp read? When lane t reads "
                           "word 2*stride*t, lanes 16 apart share a bank. Which pairing lets neighbouring lanes "
                           "read neighbouring words at every step?"),
        few_warp_splits(1.0),
        no_races(hint="Each step of the tree reads values that other threads wrote in the step before. What must "
                      "every thread of the block reach between two steps?"),
    ),
    hint_wrong=("Check that every element is counted exactly once: the last block is only partly filled, and "
                "threads with no element must still put a zero into the tree (and reach every barrier)."),
    hint_oob="Guard every load of a: the last block reaches past the end of a when n is not a multiple of 1024.",
    stub_hint="sum up to 4 elements per thread, then halve the number of active threads each step",
    reference=_reduction("block_sequential"),
    atol=1e-3,
))


# 08 -- one chunk of a pipelined transfer: a kernel on [start, start + count)


CH_TPB = 128
CH_N = 1000
CH_FACTOR = 0.5


def _ch_input(rng, n, start, count, why):
    x = _f32(rng, n)
    out = np.full(n, np.nan, np.float32)  # elements outside the chunk belong to other streams: untouched
    want = out.copy()
    want[start:start + count] = x[start:start + count] * np.float32(CH_FACTOR)
    return Input(f"n={n}, start={start}, count={count} ({why})", (_ceil(count, CH_TPB),), (CH_TPB,),
                 (x, out, CH_FACTOR, start, count), {1: want}, ("x", "out", "factor", "start", "count"))


def _ch_inputs(rng):
    start = _random_size(rng, 1, CH_N - 300)
    return [
        _ch_input(rng, CH_N, 0, 1, "first element only"),
        _ch_input(rng, CH_N, 0, 250, "first of four chunks"),
        _ch_input(rng, CH_N, 250, 250, "second of four chunks"),
        _ch_input(rng, CH_N, 997, 3, "the short last chunk"),
        _ch_input(rng, CH_N, 331, 257, "odd offset, prime count"),
        _ch_input(rng, CH_N, start, _random_size(rng, 1, CH_N - start + 1), "random chunk"),
    ]


register(Exercise(
    name="08.scale_chunk",
    title="One chunk of a pipeline: a kernel on [start, start + count)",
    signature="scale_chunk(x, out, factor, start, count)",
    task=("Write `scale_chunk(x, out, factor, start, count)`: out[j] = x[j] * factor for start <= j < "
          "start + count, and nothing else of out changes. This is the kernel of one chunk when a transfer is "
          "split into pieces on several streams (chapter 08): each stream copies its chunk in, runs the kernel "
          "on it, and copies it out, while the other streams' chunks are still in flight, so a kernel that "
          "touches a neighbour's elements corrupts them. It is launched with threads_per_block = "
          f"{CH_TPB} and blocks_per_grid = ceil(count / {CH_TPB}), one thread per element of the chunk; "
          "loads and stores stay coalesced (合并访存)."),
    make_inputs=_ch_inputs,
    make_trace_input=lambda rng: _ch_input(rng, 4096, 1024, 2048, "an aligned chunk of 16 blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Thread i of the launch handles element start + i of the arrays, and only when i < count: the "
                "elements before start and from start + count on belong to other chunks and must keep their "
                "value."),
    hint_oob="The last block has threads past the chunk's end: compare i with count before any access.",
    stub_hint="thread i of the launch handles element start + i; threads with i >= count do nothing",
))


# 09 -- tiled matrix multiply for any shape


MM_TILE = 16  # course.kernels.matmul.TILE
MM_BLOCK = (MM_TILE, MM_TILE)


def _mm_input(rng, m, k, n, why):
    a, b = _f32(rng, (m, k)) / 8, _f32(rng, (k, n)) / 8  # multiples of 1/8 below 7: every sum is exact
    c = np.full((m, n), np.nan, np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    return Input(f"{m}x{k} @ {k}x{n} ({why})", (_ceil(n, MM_TILE), _ceil(m, MM_TILE)), MM_BLOCK, (a, b, c),
                 {2: want}, ("a", "b", "c"))


def _mm_inputs(rng):
    return [
        _mm_input(rng, 1, 1, 1, "one element"),
        _mm_input(rng, 17, 16, 16, "one row past a tile"),
        _mm_input(rng, 1, 33, 5, "k not a multiple of the tile"),
        _mm_input(rng, 13, 19, 23, "primes"),
        _mm_input(rng, _random_size(rng, 10, 34), _random_size(rng, 10, 40), _random_size(rng, 10, 34), "random"),
    ]


def _mm_trace(rng):
    return _mm_input(rng, 32, 32, 32, "full tiles")


def _matmul(name):
    def get():
        from course.kernels import matmul

        return matmul.MATMUL_VERSIONS[name].kernel if name in matmul.MATMUL_VERSIONS else getattr(matmul, name)

    return get


_MM_PROPS = (
    uses_shared(hint="The point of the tile is reuse: each element of a and b is loaded from global memory once "
                     "per tile and then read 16 times from a cuda.shared.array."),
    coalesced("load"),
    coalesced("store"),
    conflict_free("load", name="no bank conflicts on the tile reads (存储体冲突)"),
    no_races(),
)

register(Exercise(
    name="09.matmul_tiled",
    title="Tiled matrix multiply, correct for any shape",
    signature="matmul_tiled(a, b, c)",
    task=("Write `matmul_tiled(a, b, c)`: c = a @ b for float32 matrices a (m, k), b (k, n), c (m, n). It is "
          f"launched with threads_per_block = {MM_BLOCK} and one block per {MM_TILE}x{MM_TILE} tile of c: "
          f"blocks_per_grid = (ceil(n / {MM_TILE}), ceil(m / {MM_TILE})). Stage {MM_TILE}x{MM_TILE} tiles of a "
          "and b in shared memory (分块), as the seed's kernel does, but for every shape: the seed's kernel "
          "assumes N is a multiple of TILE and loses the last columns of a (and writes outside c) otherwise."),
    make_inputs=_mm_inputs,
    make_trace_input=_mm_trace,
    properties=_MM_PROPS,
    hint_wrong=("Count the tiles along k rounded up, not down, and think about what a thread must put in the "
                "tile when its element lies past the edge of a or b: something that adds nothing to the sum."),
    hint_oob=("Tiles at the edges reach past a, b and c: guard each load (row < m and k-index < k for a; "
              "k-index < k and col < n for b) and the store. Every thread must still reach every barrier."),
    stub_hint="loop over ceil(k / TILE) tiles: load, syncthreads, multiply-add, syncthreads; guard the edges",
    reference=_matmul("tiled"),
    atol=1e-4,
))


# 10 -- find the bug: a planted missing barrier


register(Exercise(
    name="10.matmul_fixed",
    title="Find the bug: a tiled kernel that races",
    signature="matmul_fixed(a, b, c)",
    task=("course.kernels.matmul.tiled_missing_sync multiplies matrices through shared tiles, and its answer "
          "is sometimes right and sometimes not. Do not guess: run it, compare with NumPy, and read the "
          "tracer's race report (course.trace: report.races()), then write `matmul_fixed(a, b, c)`, the same "
          f"kernel without the bug: c = a @ b, launched with threads_per_block = {MM_BLOCK} and "
          f"blocks_per_grid = (ceil(n / {MM_TILE}), ceil(m / {MM_TILE})). It is judged on the result and on "
          "the tracer finding no race between threads (数据竞争)."),
    make_inputs=_mm_inputs,
    make_trace_input=_mm_trace,
    properties=(uses_shared(), no_races()),
    hint_wrong=("Compare with the planted kernel line by line where the race report points: which shared "
                "words does a thread read before the threads that write them have run?"),
    hint_oob="Keep the planted kernel's guards: every load past the edge of a or b loads a zero instead.",
    stub_hint="start from inspect.getsource(matmul.tiled_missing_sync) and fix what the race report shows",
    reference=_matmul("tiled"),
    atol=1e-4,
))


def get(name: str) -> Exercise:
    """The exercise called ``name`` (e.g. "05.transpose_padded"), with a clear message if there is none."""
    try:
        return EXERCISES[name]
    except KeyError:
        raise KeyError(f"there is no exercise {name!r}; the exercises are: {', '.join(EXERCISES)}") from None


def by_chapter(chapter: int) -> list:
    """The exercises of one chapter, in order."""
    return [ex for ex in EXERCISES.values() if ex.chapter == chapter]


def by_target(target: str) -> Optional[Exercise]:
    """The exercise whose function is called ``target``, or None."""
    return next((ex for ex in EXERCISES.values() if ex.target == target), None)


# --------------------------------------------------------------------------------------------------
# In the notebook


def show(name: str) -> None:
    """Print an exercise's task, how its kernel is launched, and what check() will look at."""
    ex = get(name)
    print(f"{ex.name}: {ex.title}\n")
    print(textwrap.fill(ex.task, 100))
    print("\ncheck() runs it on fresh random data and on awkward shapes, then traces one launch and checks:")
    print("  - the result equals the NumPy reference on every input")
    for p in ex.properties:
        print(f"  - {p.name}")


def check(name: str, kernel, *, seed=None) -> Verdict:
    """Judge ``kernel`` for exercise ``name`` and print the verdict (what passed, what failed, on which input, a hint)."""
    ex = get(name)
    if os.environ.get("COURSE_CHECK") == "skip":
        print(f"{name}: check skipped here (COURSE_CHECK=skip); the grader judges this exercise itself.")
        return Verdict(ex.name, "skipped", 0, ex.max_score)
    if kernel is None or not (callable(kernel) or hasattr(kernel, "py_func")):
        v = Verdict(ex.name, "missing", 0, ex.max_score,
                    [Result("a kernel to check", False, f"got {kernel!r}")], f"pass the kernel: check({name!r}, {ex.target})")
    else:
        v = judge(ex, kernel, seed=seed)
    print(v)
    if os.environ.get("COURSE_STRICT") == "1" and not v.passed:
        raise AssertionError(f"{name} did not pass (COURSE_STRICT=1): {v.message}")
    return v


# --------------------------------------------------------------------------------------------------
# exercises/ from solutions/


BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION\b.*$")
END = re.compile(r"^[ \t]*# END SOLUTION\b.*$")


def _stub_hint(source: str, before: str) -> str:
    """The stub hint for a solution block: the exercise whose function encloses it, else a generic one."""
    defs = re.findall(r"^\s*def\s+(\w+)\s*\(", before, re.M)
    for target in reversed(defs):
        ex = by_target(target)
        if ex:
            return f"{ex.name}: {ex.stub_hint}"
    return "write your code here"


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace every ``# BEGIN SOLUTION`` … ``# END SOLUTION`` block with a stub that raises NotImplementedError."""
    out, lines, i = [], source.splitlines(), 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            if END.match(lines[i]):
                raise ValueError(f"{where}: '# END SOLUTION' without a '# BEGIN SOLUTION' before it")
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not END.match(lines[j]):
            if BEGIN.match(lines[j]):
                raise ValueError(f"{where}: '# BEGIN SOLUTION' inside another solution block (line {j + 1})")
            j += 1
        if j == len(lines):
            raise ValueError(f"{where}: '# BEGIN SOLUTION' at line {i + 1} has no '# END SOLUTION'")
        hint = _stub_hint(source, "\n".join(lines[:i]))
        out.append(f"{m.group('indent')}raise NotImplementedError({hint!r})")
        i = j + 1
    return "\n".join(out)


def exercise_notebook(solution_nb):
    """The exercise notebook for a solution notebook: solutions stubbed, outputs removed, marked as an exercise."""
    import copy

    nb = copy.deepcopy(solution_nb)
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source, f"cell {k}")
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    nb.metadata.setdefault("course", {})["generated_from"] = "solutions/ by python -m course.exercises build"
    return nb


def build(check_only: bool = False, solutions=SOLUTIONS, exercises=EXERCISES_DIR) -> list:
    """Write exercises/*.ipynb from solutions/*.ipynb; with ``check_only``, return the drifted files instead."""
    import nbformat

    drift = []
    exercises = pathlib.Path(exercises)
    wanted = set()
    for src in sorted(pathlib.Path(solutions).glob("*.ipynb")):
        nb = nbformat.read(src, as_version=4)
        text = nbformat.writes(exercise_notebook(nb)) + "\n"
        dst = exercises / src.name
        wanted.add(dst.name)
        current = dst.read_text(encoding="utf-8") if dst.exists() else None
        if current != text:
            drift.append(str(dst.relative_to(exercises.parent)) if exercises.parent in dst.parents else str(dst))
            if not check_only:
                exercises.mkdir(parents=True, exist_ok=True)
                dst.write_text(text, encoding="utf-8")
    for extra in sorted(pathlib.Path(exercises).glob("*.ipynb")):
        if extra.name not in wanted:
            drift.append(f"{extra} (no solution notebook of that name)")
    return drift


def main(argv=None) -> int:
    """``python -m course.exercises build [--check] | list``."""
    p = argparse.ArgumentParser(prog="python -m course.exercises", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="generate exercises/*.ipynb from solutions/*.ipynb")
    b.add_argument("--check", action="store_true", help="change nothing; exit 1 if exercises/ has drifted")
    sub.add_parser("list", help="list the exercises by chapter")
    args = p.parse_args(argv)
    if args.cmd == "list":
        for ex in EXERCISES.values():
            print(f"{ex.name:24} {ex.max_score} pts  {ex.title}")
        return 0
    drift = build(check_only=args.check)
    if args.check:
        if drift:
            print("exercises/ is out of step with solutions/: " + ", ".join(drift)
                  + "\nRun `python -m course.exercises build` (or `make exercises`) and commit the result.")
            return 1
        print("exercises/ matches solutions/.")
        return 0
    print("wrote " + (", ".join(drift) if drift else "nothing (already up to date)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
