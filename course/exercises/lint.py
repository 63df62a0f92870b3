"""Kernel source rules: what a graded kernel may use (what compiles for a GPU, and nothing that could reach
the grader).  Used by check() for early, teaching messages and by the grader before it compiles a
learner's kernel in its own process."""

from __future__ import annotations

import ast
import math
import textwrap
from dataclasses import dataclass, field

import numpy as np

from course import engine

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
#: The course's device helpers a graded kernel may call, by module: hardware intrinsics that are no exercise's
#: answer (one 16-byte load: ``from course.kernels.reduction import load_float4``; ``course.kernels.vector``'s
#: 16-byte loads of a matrix row or an index tuple). A submission's import of one of them is bound to the grader's own
#: copy (:mod:`course.grading.source`); every other function of ``course`` stays refused (a reference kernel, a
#: device function such as ``float4_or_tail``: a kernel writes its own).  Beside
#: :data:`course.grading.source.PUBLIC_CONSTANTS`, the numbers a kernel may take from the course.
PUBLIC_DEVICE_FUNCTIONS = {
    "course.kernels.reduction": ("load_float4",),
    "course.kernels.vector": ("load4", "gload4", "sload4"),
}


def public_device_function(module: str, name: str) -> bool:
    """True when a graded kernel may call ``module.name`` (see :data:`PUBLIC_DEVICE_FUNCTIONS`)."""
    return name in PUBLIC_DEVICE_FUNCTIONS.get(module, ())


def public_device_functions() -> dict:
    """``{id(function): "module.name"}`` of :data:`PUBLIC_DEVICE_FUNCTIONS`, the objects this process imported."""
    import importlib

    out = {}
    for module, names in PUBLIC_DEVICE_FUNCTIONS.items():
        mod = importlib.import_module(module)
        for name in names:
            out[id(getattr(mod, name))] = f"{module}.{name}"
    return out


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


def attr_chain(node):
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
                root, chain = attr_chain(node)
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

    fn = py_func(kernel)
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
    public = public_device_functions()  # load_float4 is a plain function on the CPU engine, an intrinsic on a GPU
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
        elif mod and mod.startswith("numba") and mod.endswith("cuda") or engine.is_cuda_module(value) or \
                isinstance(value, engine.EngineCUDAModule):
            names.modules[key] = "cuda"
        elif isinstance(value, (int, float, bool, np.integer, np.floating)):
            names.constants.add(key)
        elif key in DTYPES or type(value).__module__.startswith("numba.core.types"):
            names.dtypes.add(key)
        elif is_device_function(value) or id(value) in public:
            names.device_functions.add(key)
        elif callable(value) and (getattr(value, "__module__", None) or "").startswith("numba.cuda") and key in CUDA_API:
            names.cuda_functions.add(key)
    # the source inspect read starts at co_firstlineno (the first decorator's line, not the def's): its line 1
    offset = fn.__code__.co_firstlineno - 1
    return [(line + offset, msg) for line, msg in lint_kernel(node, names)]


def py_func(kernel):
    """The Python function a kernel object wraps (the engine's rule), or None when there is none."""
    try:
        fn = engine.kernel_py_func(kernel)
    except engine.KernelError:
        return None
    return fn if callable(fn) and hasattr(fn, "__code__") else None


def is_device_function(value) -> bool:
    return engine.device_py_func(value) is not None
