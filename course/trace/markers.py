"""Line markers: the kernel re-compiled with a marker before every statement, for the divergence report."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from course.trace.recorder import Recorder


# Line events for divergence
#
# The kernel's source is re-compiled with a marker before every statement (and in every loop
# condition) that appends (thread, line) to a list: far cheaper than sys.settrace, which slows every
# Python call while it is on.  When the source is not available, sys.settrace does the same job.

TID_FN, _TIDVAR = "__course_trace_tid__", "__course_tid__"


_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
             ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) + ((ast.Match,) if hasattr(ast, "Match") else ())


class _Marker(ast.NodeTransformer):
    """Puts a line marker before every run of simple statements, every compound statement and every loop test.

    A run of simple statements is executed by the same lanes from its first line to its last, so one
    marker stands for all its lines; ``weights[line]`` says how many source lines the run covers.
    """

    def __init__(self):
        self.weights: dict = {}

    def mark(self, line, weight=1):
        self.weights[line] = max(self.weights.get(line, 1), weight)
        # __course_tid__(line): the thread's own list.append (made by the prologue): two loads and a call
        return ast.Call(func=ast.Name(id=_TIDVAR, ctx=ast.Load()), args=[ast.Constant(line)], keywords=[])

    def body(self, stmts):
        out: list = []
        run: list = []

        def end_run():
            if run:
                out.append(ast.Expr(self.mark(run[0].lineno, len({st.lineno for st in run}))))
                out.extend(run)
                run.clear()

        for st in stmts:
            if not isinstance(st, _COMPOUND):
                run.append(st)
                continue
            end_run()
            st = self.visit(st)
            if not isinstance(st, ast.While):  # a while line is marked in its condition, once per test
                out.append(ast.Expr(self.mark(st.lineno)))
            out.append(st)
        end_run()
        return out

    def generic_visit(self, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return node  # nested definitions: leave alone
        for fname in ("body", "orelse", "finalbody"):
            stmts = getattr(node, fname, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                setattr(node, fname, self.body(stmts))
        if isinstance(node, ast.Try):
            for h in node.handlers:
                h.body = self.body(h.body)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            # the for line runs once per iteration: count it with the body's first marker (same lanes)
            # rather than with a marker of its own; a split at the loop's end shows at the body's last line
            first = node.body[0]
            line = _marker_line(first)
            if line is not None and not isinstance(node.body[1] if len(node.body) > 1 else None, ast.While):
                self.weights[line] += 1
            else:
                node.body.insert(0, ast.Expr(self.mark(node.lineno)))
        if isinstance(node, ast.While):
            node.test = ast.BoolOp(op=ast.Or(), values=[self.mark(node.lineno), node.test])
        return node


_INSTRUMENTED: dict = {}  # (id(original code), marked, loops) -> (original code, copy's code or None, weights)


def _marker_line(node):
    """The line a marker statement made by _Marker records, or None for any other statement."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
            and node.value.func.id == _TIDVAR:
        return node.value.args[0].value
    return None


def instrument(fn, while_as_range=False):
    """A copy of kernel ``fn`` whose statements report (thread, line), and the line weights; None if no source.
    ``while_as_range``: its grid-stride ``while`` loops also run as ``range`` loops (:func:`while_as_range`)."""
    return _copy_of(fn, mark=True, loops=while_as_range)


def while_as_range(fn):
    """A copy of kernel ``fn`` whose grid-stride loops run as ``range`` loops, or None when it has none.

    A ``while i < n: …; i += stride`` loop (its last statement the step; ``i``, ``n`` and ``stride`` assigned
    nowhere else in the body; no ``continue`` or ``else``) runs exactly the trips of ``for i in range(i, n,
    stride): …`` when ``stride > 0``, and its ``else`` leaves ``i`` where the while would (a ``break`` leaves it
    as the while does).  As a ``range`` loop it can be cut short and its lines' counts scaled back up
    (:class:`course.measure.sampling.LoopSampler`): that is what :func:`course.explain` needs of a grid-stride
    kernel at a size of millions.  Line numbers are the original's: the ``for`` stands on the ``while``'s line,
    and the step's line still runs once per trip (a dead sum in its place)."""
    made = _copy_of(fn, mark=False, loops=True)
    return made[0] if made else None


def _copy_of(fn, mark, loops):
    """:func:`_instrumented_code` of ``fn``, made once per code object and kind, as a function: (function, line
    weights), or None."""
    key = (id(fn.__code__), mark, loops)
    hit = _INSTRUMENTED.get(key)
    if hit is None or hit[0] is not fn.__code__:
        made = _instrumented_code(fn, mark=mark, loops=loops)
        hit = _INSTRUMENTED[key] = (fn.__code__,) + (made if made else (None, None))
    return _function(fn, hit[1], hit[2])


def _function(fn, code, weights):
    if code is None:
        return None
    closure = None
    if code.co_freevars:
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        try:
            closure = tuple(cells[v] for v in code.co_freevars)
        except KeyError:
            return None
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new, weights


class _WhileAsRange(ast.NodeTransformer):
    """Rewrites the grid-stride ``while`` loops of one function as ``range`` loops (see :func:`while_as_range`)."""

    def __init__(self):
        self.changed = 0

    @staticmethod
    def _stores(nodes) -> set:
        return {n.id for st in nodes for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    @staticmethod
    def _own_continue(stmts) -> bool:
        """A ``continue`` of this loop (not of a loop nested in it)."""
        todo = list(stmts)
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Continue):
                return True
            if isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
                todo.extend(n.orelse)  # a nested loop's body has its own continue
                continue
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            todo.extend(ast.iter_child_nodes(n))
        return False

    def visit_While(self, node):
        self.generic_visit(node)
        t = node.test
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Lt)
                and isinstance(t.left, ast.Name)) or node.orelse or not node.body:
            return node
        i, bound, step = t.left.id, t.comparators[0], node.body[-1]
        if not (isinstance(step, ast.AugAssign) and isinstance(step.op, ast.Add) and isinstance(step.target, ast.Name)
                and step.target.id == i):
            return node
        body = node.body[:-1]
        invariant = {n.id for e in (bound, step.value) for n in ast.walk(e) if isinstance(n, ast.Name)} | {i}
        if not body or self._stores(body) & invariant or self._own_continue(body):
            return node
        # i0 = i; for i in range(i0, n, s): body; else: i = where the while would have left it (a break leaves i
        # as the while does; a loop cut short by the sampler leaves i where the whole loop ends, for a tail loop)
        i0 = f"__course_i0_{node.lineno}__"
        src = (f"{i0} = {i}\n"
               f"for {i} in range({i0}, __b__, __s__):\n    pass\n"
               f"else:\n    {i} = {i0} if {i0} >= __b__ else {i0} + (__b__ - {i0} + __s__ - 1) // __s__ * __s__\n")
        first, loop = ast.parse(src).body

        class _Put(ast.NodeTransformer):
            def visit_Name(self, n):
                if n.id == "__b__":
                    return ast.copy_location(_copy(bound), n)
                if n.id == "__s__":
                    return ast.copy_location(_copy(step.value), n)
                return n

        first, loop = _Put().visit(first), _Put().visit(loop)
        # the step's line still runs once per trip (a dead sum in its place), so that its line's counts and the
        # SASS of that line (the add, the compare, the branch) count as in the while loop
        keep = ast.Assign(targets=[ast.Name(id=f"__course_step_{node.lineno}__", ctx=ast.Store())],
                          value=ast.BinOp(left=ast.Name(id=i, ctx=ast.Load()), op=ast.Add(), right=_copy(step.value)))
        for n in ast.walk(keep):
            ast.copy_location(n, step)
        loop.body = body + [keep]
        for n in ast.walk(first):
            if hasattr(n, "lineno"):
                n.lineno = n.end_lineno = node.lineno
                n.col_offset, n.end_col_offset = node.col_offset, node.col_offset
        ast.copy_location(loop, node)
        for n in ast.walk(loop.iter):
            ast.copy_location(n, node)
        for st in loop.orelse:  # on the step's line: it runs once, where the step ran once per trip
            for n in ast.walk(st):
                ast.copy_location(n, step)
        self.changed += 1
        return [first, loop]


def _copy(expr):
    return ast.parse(ast.unparse(expr), mode="eval").body


def _instrumented_code(fn, mark=True, loops=False):
    """Compile the marked copy of ``fn``'s source (``loops``: its grid-stride loops as ``range`` loops):
    (code object, line weights), or None (no source, or nothing to change)."""
    try:
        lines, start = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != fn.__name__:
        return None
    fdef = tree.body[0]
    fdef.decorator_list = []
    ast.increment_lineno(tree, start - 1)
    first = fdef.body[0].lineno if fdef.body else fdef.lineno
    m = _Marker()
    doc = []
    if fdef.body and isinstance(fdef.body[0], ast.Expr) and isinstance(fdef.body[0].value, ast.Constant) \
            and isinstance(fdef.body[0].value.value, str):
        doc = [fdef.body.pop(0)]  # a docstring is not a line that runs
    if not fdef.body:
        return None
    if loops:
        w = _WhileAsRange()
        fdef = w.visit(fdef)
        if not w.changed and not mark:
            return None
    if mark:
        fdef.body = m.body(fdef.body)
        prologue = ast.parse(f"{_TIDVAR} = {TID_FN}()").body[0]
        for n in ast.walk(prologue):
            if hasattr(n, "lineno"):
                n.lineno = n.end_lineno = first
        fdef.body[:0] = doc + [prologue]
    else:
        fdef.body[:0] = doc
    freevars = fn.__code__.co_freevars
    if freevars:
        outer = ast.FunctionDef(
            name="__course_outer__",
            args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=v) for v in freevars], vararg=None,
                               kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
            body=[fdef, ast.Return(value=ast.Name(id=fn.__name__, ctx=ast.Load()))],
            decorator_list=[], returns=None, type_comment=None,
            **({"type_params": []} if "type_params" in ast.FunctionDef._fields else {}),
        )
        ast.copy_location(outer, fdef)
        tree.body = [outer]
    ast.fix_missing_locations(tree)
    try:
        module_code = compile(tree, fn.__code__.co_filename, "exec")
    except (SyntaxError, ValueError):
        return None
    code = _find_code(module_code, fn.__name__)
    if code is None or set(code.co_freevars) - set(freevars):
        return None
    return code, m.weights


def _find_code(code, name):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name:
                return c
            found = _find_code(c, name)
            if found is not None:
                return found
    return None


def settrace_lines(rec: Recorder):
    """The fallback: a sys.settrace function recording (thread, line) for kernel frames."""
    extend = rec.line_events.extend
    cur = rec.cur

    def local(frame, event, arg):
        if event == "line":
            extend((cur[0].thread.tid, frame.f_lineno))
        return local

    def glob(frame, event, arg):
        if id(frame.f_code) in rec.user_ids:
            return local
        return None

    return glob
