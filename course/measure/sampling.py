"""How :func:`course.explain` samples a launch: long ``range`` loops cut short, their lines' counts scaled back up.

:class:`LoopSampler` stands in for ``range`` in the kernel's module while it is traced; :func:`loop_structure`
reads the kernel's loops (for the compiler's unrolling); :class:`Scaled` is a report's per-line counts with the
sampled loops' lines scaled to what the whole loops would count.
"""

from __future__ import annotations

import numpy as np

LOOP_CAP = 16  # a ``for … in range(…)`` of more trips runs only its first LOOP_CAP (its lines' counts are scaled)


class LoopSampler:
    """Stands in for ``range`` in the kernel's module while it is traced: long loops run their first
    :data:`LOOP_CAP` trips, and each loop's header line keeps (trips asked for, trips run)."""

    def __init__(self, cap: int = LOOP_CAP, whole: int = 0):
        self.cap = cap
        self.whole = whole  # a loop of at most this many trips runs them all, whatever the cap
        self.trips: dict = {}  # (filename, header line) -> [asked, run, calls]

    def __call__(self, *a):
        import sys

        r = range(*a)
        f = sys._getframe(1)
        st = self.trips.setdefault((f.f_code.co_filename, f.f_lineno), [0, 0, 0])
        st[0] += len(r)
        st[2] += 1
        if len(r) <= max(self.cap, self.whole):
            st[1] += len(r)
            return r
        st[1] += self.cap
        return r[: self.cap]

    def scales(self, code) -> dict:
        """``{line: factor}`` for the lines of ``code``'s file inside sampled loops (nested loops multiply)."""
        import ast

        sampled = {ln: asked / run for (fname, ln), (asked, run, _calls) in self.trips.items()
                   if fname == code.co_filename and run and asked > run}
        if not sampled:
            return {}
        tree = _module_tree(code)
        if tree is None:
            return {}
        out: dict = {}
        for node in ast.walk(tree):  # a grid-stride while runs as a range loop on its own line when traced
            if isinstance(node, (ast.For, ast.While)) and node.lineno in sampled:
                f = sampled[node.lineno]
                for ln in range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1):
                    out[ln] = out.get(ln, 1.0) * f
        return out


def _module_tree(code):
    """The parsed source of the file (or notebook cell: linecache has those) that ``code`` was compiled from, with
    its own line numbers; None without one."""
    import ast
    import linecache

    text = "".join(linecache.getlines(code.co_filename))
    if not text:
        return None
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def kernel_def(code):
    """The ``def`` of the function compiled to ``code``, parsed from its file or notebook cell with the file's own
    line numbers, or None without its source."""
    import ast

    tree = _module_tree(code)
    if tree is None:
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.lineno <= code.co_firstlineno + 1
                 and n.name == code.co_name and (n.end_lineno or 0) >= code.co_firstlineno), None)


def loop_structure(code, trips: dict) -> list:
    """The kernel's loops (``for … in range(…)``, ``for … in (constants, …)`` and ``while``): ``(header line, last line, trips if the compiler can unroll it
    fully, else None)``.  A loop whose bounds name no parameter and no local of the kernel has the same trips in
    every thread, known when the kernel compiles: ptxas unrolls such small loops completely, so their body's SASS
    holds one copy per trip."""
    import ast

    fn = kernel_def(code)
    if fn is None:
        return []
    params = {a.arg for a in fn.args.args}
    local = {t.id for n in ast.walk(fn) for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.While):  # a grid-stride loop: the compiler may unroll it, never completely
            out.append((node.lineno, node.end_lineno or node.lineno, None))
            continue
        if isinstance(node, ast.For) and isinstance(node.iter, (ast.Tuple, ast.List)) and node.iter.elts and all(
                isinstance(e, ast.Constant) for e in node.iter.elts):
            # a loop over a tuple of constants (a shuffle network's offsets): its trips are known when the kernel
            # compiles and the compiler unrolls it, one copy of its body (and of any loop inside it) per element
            # (round 5's warp_argsort32: a while loop inside `for k in (2, 4, 8, 16, 32)` is four SASS loops)
            out.append((node.lineno, node.end_lineno or node.lineno, float(len(node.iter.elts))))
            continue
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)
                and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"):
            continue
        parts = list(ast.walk(node.iter))[1:]
        fixed = all(not isinstance(x, (ast.Attribute, ast.Subscript, ast.Call)) for x in parts) and not any(
            isinstance(x, ast.Name) and (x.id in params or x.id in local) for x in parts)
        st = trips.get((code.co_filename, node.lineno))
        n = st[0] / st[2] if st and st[2] else None
        out.append((node.lineno, node.end_lineno or node.lineno, n if fixed and n and n <= 64 else None))
    return out


class Scaled:
    """A report's per-line counts with the sampled loops' lines scaled up (what the full loops would count)."""

    def __init__(self, report, scale_of: dict, loops=()):
        self.loops = list(loops)
        self.rows = []
        # a sampled loop's lines (the kernel's file); accesses in a device function of another file (a 16-byte load
        # helper, say) are counted where the helper's lines are: scaled like the kernel's longest sampled loop
        widest = max(scale_of.values(), default=1.0)
        for row in report.by_line():
            f = scale_of.get(row.line, 1.0 if row.function == report.kernel else widest)
            self.rows.append((row, f))
        self.report = report
        self.steps = {}
        self.raw_steps = {}
        try:
            for line, n in report.line_steps().items():
                self.steps[line] = n * scale_of.get(line, 1.0)
                self.raw_steps[line] = n
        except RuntimeError:
            pass

    def total(self, space, op, what="requests") -> float:
        return sum(getattr(r, what) * f for r, f in self.rows if r.space == space and r.op == op)


def copy_args(args, fn=None):
    """Copies of the array arguments the kernel may write (all of them when its source cannot say): the sampled
    blocks write only a few elements, but those are the learner's; an array the kernel only reads is traced as it is
    (a 2 GB source of a strided read took seconds to copy)."""
    written = written_parameters(fn) if fn is not None else None
    return tuple(np.array(a) if isinstance(a, np.ndarray) and (written is None or i in written) else a
                 for i, a in enumerate(args))


def written_parameters(fn):
    """Positions of ``fn``'s parameters its source can write: stored into (``p[...] = ``, ``p[...] += ``) or handed to
    a call (an atomic, a device function); None when the source is not at hand or a store goes through any other
    name than a parameter or a ``cuda.shared/local.array`` (a view or alias of a parameter could be written)."""
    import ast

    fdef = kernel_def(fn.__code__)
    if fdef is None:
        return None
    params = [a.arg for a in fdef.args.args]
    local_arrays = {t.id for n in ast.walk(fdef) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                    and isinstance(n.value.func, ast.Attribute) and n.value.func.attr in ("array", "array_like")
                    for t in n.targets if isinstance(t, ast.Name)}
    out = set()
    for node in ast.walk(fdef):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            base = node.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if not isinstance(base, ast.Name):
                return None
            if base.id in params:
                out.add(params.index(base.id))
            elif base.id not in local_arrays:
                return None  # a store through another name: maybe a view of a parameter
        elif isinstance(node, ast.Call):
            for arg in list(node.args) + [k.value for k in node.keywords]:
                if isinstance(arg, ast.Name) and arg.id in params:
                    out.add(params.index(arg.id))
    return out
