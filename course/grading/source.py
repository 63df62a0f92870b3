"""Reading a submission's source, never running it: what its top-level code defines (:func:`scan`), and
compiling only what was linted (:func:`compile_target`) for :mod:`course.grading.grade`.

A kernel is linted by :func:`course.exercises.lint_kernel` (device functions too); host-code exercises by
the exercise's own ``host_compile``. What is compiled is a function node built here (:func:`linted_def`)
from the linted body and the parameter names: the learner's decorators, annotations and default
expressions are never evaluated in the grader.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import re
import sys
from dataclasses import dataclass, field

from course import exercises as ex_mod


def shorten(text: str, n: int) -> str:
    """``text`` on one line, at most ``n`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


#: Static shared memory a block may have (48 KB): what ``cuda.shared.array`` allocates.
SHARED_LIMIT = 48 * 1024


def attr_chain(node):
    """(root, [attribute names]) of ``a.b.c`` (the grading layer's own, so it needs nothing private)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return node, parts[::-1]


@dataclass
class Found:
    """What the notebook's top-level code defines, found without running it."""

    defs: dict = field(default_factory=dict)  # name -> (cell, FunctionDef, source, decorator kind)
    rebound: dict = field(default_factory=dict)  # name -> cell where it was bound by something else
    constants: dict = field(default_factory=dict)  # name -> number
    names: ex_mod.Names = field(default_factory=ex_mod.Names)
    imported: dict = field(default_factory=dict)  # bare name -> (module, attribute)
    syntax_errors: list = field(default_factory=list)  # (cell, line, message, source)
    # name -> (cell, line, why): bound by a statement the grader could not read (a constant too deeply nested
    # to evaluate); only a kernel that uses the name pays for it
    unreadable: dict = field(default_factory=dict)
    # appended to the "<cell N>" file name the kernels are compiled under: several notebooks compiled in one
    # process (course.exercises.solution_cases) each keep their cells' source in linecache, where the tracer and
    # course.explain read a kernel's loops from; the grader scans one notebook per process and leaves it empty
    origin: str = ""


_TRUSTED_MODULES = {"numba.cuda": "cuda", "math": "math", "numpy": "numpy", "numba": "numba"}

#: What a graded kernel may take from the course: numeric constants of the teaching kernels and of the device
#: (``from course.kernels.transpose import TILE``, ``from course.device import WARP_SIZE``), read from the
#: grader's own copy. The rest of ``course`` (``course.exercises.*``, ``course.grade``, ``course.grading.*``,
#: ``course.sandbox``, ``course.gradebook``, …) is the grader's: its constants (the traced sizes, the limits)
#: are no kernel's business, and a kernel that uses a name imported from there is not judged.
PUBLIC_CONSTANTS = ("course.kernels", "course.device")
#: The functions a graded kernel may call from the course, beside these constants, are
#: :data:`course.exercises.lint.PUBLIC_DEVICE_FUNCTIONS` (``load_float4``: hardware intrinsics, no exercise's answer),
#: declared with the rest of what a kernel may use so that ``check()``'s lint and the grader's read one list.


def public_constants(module: str) -> bool:
    """True when a graded kernel may take numeric constants from ``module`` (see :data:`PUBLIC_CONSTANTS`)."""
    return any(module == m or module.startswith(m + ".") for m in PUBLIC_CONSTANTS)


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
            try:
                _scan_stmt(stmt, k, code, found)
            except RecursionError:  # e.g. N = 1 + 1 + ... (2000 terms): one statement, not the notebook
                why = (f"the expression in cell {k}, line {stmt.lineno} is nested too deeply to evaluate (CPython "
                       f"evaluates and compiles it one operator at a time, recursively)")
                for sub in ast.walk(stmt):  # ast.walk is iterative
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                        _bind(found, sub.id, k)
                        found.unreadable[sub.id] = (k, stmt.lineno, why)
    return found


def _bind(found: Found, name: str, cell: int):
    found.unreadable.pop(name, None)
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
            elif stmt.module.startswith("course.") and not public_constants(stmt.module):
                found.unreadable[bound] = (k, stmt.lineno, (
                    f"cell {k}, line {stmt.lineno} imports it from {stmt.module}, which is the grader's, not the "
                    f"course's public API (a graded kernel may take constants only from "
                    f"{' and '.join(m + '.*' if m.endswith('kernels') else m for m in PUBLIC_CONSTANTS)})"))
            elif ex_mod.public_device_function(stmt.module, alias.name):
                # a listed intrinsic (load_float4): the kernel calls the grader's own copy
                found.imported[bound] = (stmt.module, alias.name)
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
    names.device_functions |= {n for n, (mod, attr) in found.imported.items() if ex_mod.public_device_function(mod, attr)}
    return names


def _syntax_note(found: Found, target: str) -> str:
    for k, line, msg, raw in found.syntax_errors:
        if re.search(rf"\bdef\s+{re.escape(target)}\b", raw):
            return f"the cell that defines {target} (cell {k}) has a SyntaxError at line {line}: {msg}"
    return ""


def compile_target(found: Found, exercise):
    """Lint and compile the notebook's kernel for ``exercise`` in this process; raise Rejected when it cannot be judged."""
    import importlib
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
    _refuse_unreadable(found, target)
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
            if isinstance(sub, ast.Name) and sub.id in found.defs and sub.id in names.device_functions and \
                    sub.id not in seen:
                todo.append(sub.id)  # the notebook's own device functions (a listed intrinsic is the course's)
    _check_shared_memory(found, order)
    namespace = {"__builtins__": {n: getattr(builtins, n) for n in ex_mod.SAFE_BUILTINS}, "__name__": "submission"}
    trusted = {"cuda": cuda, "math": math, "numpy": np, "numba": numba}
    trusted.update({m: importlib.import_module(m) for m in ex_mod.PUBLIC_DEVICE_FUNCTIONS})  # the grader's copies
    for alias, mod in found.names.modules.items():
        namespace[alias] = trusted[mod]
    for alias, (mod, attr) in found.imported.items():
        if (mod, attr) != ("cuda", "jit"):
            namespace[alias] = getattr(trusted[mod], attr)
    namespace.update(found.constants)
    for name in reversed(order):  # device functions before the kernels that call them
        c, fn, src, k = found.defs[name]
        filename = f"<cell {c}{found.origin}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        # compile only what was linted: a function node built here from the linted body and the parameter
        # names; the learner's decorators, annotations and default expressions are never evaluated
        module = ast.fix_missing_locations(ast.Module(body=[linted_def(fn, c)], type_ignores=[]))
        exec(compile(module, filename, "exec"), namespace)
        namespace[name] = cuda.jit(device=True)(namespace[name]) if k == "device" else cuda.jit(namespace[name])
    return namespace[target]


def _refuse_unreadable(found: Found, target: str):
    """Reject ``target`` when it (or a device function it calls) names a constant the scan could not read."""
    todo, seen = [target], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in found.defs:
            continue
        seen.add(name)
        for sub in ast.walk(found.defs[name][1]):
            if isinstance(sub, ast.Name) and sub.id in found.unreadable:
                cell, line, why = found.unreadable[sub.id]
                if "grader's" in why:
                    raise Rejected("rejected", f"{name} uses {sub.id}, and {why}",
                                   "A kernel is judged on sizes it cannot know in advance: compute what it needs "
                                   "from its arguments (x.shape[0], cuda.gridsize(1)), not from the grader.")
                raise Rejected("rejected", f"{name} uses {sub.id}, and {why}: write {sub.id} as one number there",
                               f"Give {sub.id} its value as one number (e.g. `{sub.id} = 2000`) in cell {cell}, "
                               f"run the notebook again, and submit it.")
            if isinstance(sub, ast.Name) and sub.id in found.defs:
                todo.append(sub.id)


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
                                       f"`{shorten(ast.unparse(d), 60)}`)",
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
