"""Array shapes a GPU can compile: ``cuda.shared.array`` and ``cuda.local.array`` need their shape at compile time.

numba-cuda types the shape argument and accepts only an integer *literal* or a tuple of them.  Checked with
``numba.cuda.compile_ptx`` for sm_90 (numba-cuda 0.30): a number, ``2 * 4`` or ``(32, 32 + 1)`` (Python folds
literal arithmetic), a global or closure name bound to an int or a tuple of ints (``TILE``), and a local name
assigned one of those compile; ``TILE + 1``, ``(TILE, TILE + 1)``, ``B // 2``, a kernel parameter,
``a.shape[0]``, ``module.TILE``, a call and ``True`` are refused with a ``TypingError``.  The CPU engine would
happily allocate any of them, so a kernel that runs here would not compile on a GPU: :func:`check` refuses
the same shapes, with the fix, the first time each call site runs.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from course.engine.messages import UserError

_verdicts: dict = {}  # (code, line) -> problem text or None


def check(frame, kind: str, kernel_code=None) -> None:
    """Raise :class:`UserError` when the ``cuda.<kind>.array`` call on ``frame``'s line has a shape numba-cuda
    cannot compile (once per call site; a kernel whose source cannot be read is not checked).

    ``kernel_code`` is the launched kernel's code object: a *kernel's* parameters are values of the launch, never
    constants, but a device function's may be (numba types an argument its caller passes as a literal as that
    literal: numba-cuda's own ``test_atomics`` sizes shared arrays so), so only the kernel's count as refused."""
    in_kernel = frame.f_code is kernel_code
    key = (frame.f_code, frame.f_lineno, in_kernel)
    if key not in _verdicts:
        try:
            _verdicts[key] = _problem(frame, kind, in_kernel)
        except Exception:  # no source (exec'd from a string), or a parse this module does not foresee
            _verdicts[key] = None
    if _verdicts[key]:
        raise UserError(_verdicts[key])


def _problem(frame, kind: str, in_kernel: bool):
    lines, start = inspect.getsourcelines(frame.f_code)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    fn = tree.body[0]
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    line = frame.f_lineno - start + 1
    params = {a.arg for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs} if in_kernel else set()
    assigned: dict = {}  # local name -> the values assigned to it (None: assigned some other way)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(node.value)
                else:  # a tuple unpacks into names; `out[keys[t] % NB] = v` binds no name (NB stays a constant)
                    for n in _bound_names(t):
                        assigned.setdefault(n, []).append(None)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            targets = [node.target] if hasattr(node, "target") else [i.optional_vars for i in node.items]
            for t in targets:
                for n in _bound_names(t) if t is not None else ():
                    assigned.setdefault(n, []).append(None)
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)
                and isinstance(node.func, ast.Attribute) and node.func.attr == "array"
                and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == kind):
            continue
        shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "shape"), None)
        if shape is None:
            continue
        bad = _not_constant(shape, params, assigned, 0)
        if bad is not None:
            return _message(kind, shape, bad)
    return None


def _bound_names(target):
    """The names an assignment target binds: ``a``, ``(a, b)``, ``*rest``; not the names read inside a subscript or
    attribute target (``h[keys[t] % NB] += 1`` reads NB, it does not assign it)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound_names(e)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _not_constant(node, params, assigned, depth):
    """The sub-expression that keeps ``node`` from being a compile-time constant for numba, or None."""
    if depth > 8:
        return None
    if isinstance(node, ast.Constant):
        return None if isinstance(node.value, int) and not isinstance(node.value, bool) else node
    if isinstance(node, ast.Tuple):
        return next((b for b in (_not_constant(e, params, assigned, depth) for e in node.elts) if b is not None), None)
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):  # Python folds arithmetic on literals only
        leaves = [n for n in ast.walk(node) if not isinstance(n, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))]
        return None if all(isinstance(n, ast.Constant) and type(n.value) is int for n in leaves) else node
    if isinstance(node, ast.Name):
        if node.id in params:
            return node
        for value in assigned.get(node.id, ()):  # a local: each value assigned to it must be constant
            if value is None or _not_constant(value, params, assigned, depth + 1) is not None:
                return node
        return None  # a global or closure name: numba reads its value when it compiles
    return node


def _message(kind: str, shape, bad) -> str:
    what, part = ast.unparse(shape), ast.unparse(bad)
    fix = ("give it its own name at module level (e.g. `TILE_PAD = TILE + 1`, then `(TILE, TILE_PAD)`)"
           if isinstance(bad, (ast.BinOp, ast.UnaryOp)) else
           "use a number, or a module-level name bound to one (a kernel argument or an array's shape is known "
           "only at launch: allocate with a fixed maximum, or pass a global array)")
    return (f"cuda.{kind}.array({what}, ...): the shape must be a constant the GPU compiler knows when it compiles the "
            f"kernel, and `{part}` is not (numba-cuda refuses it with a TypingError); {fix}")
