"""The tracer's entry point: :func:`trace` runs one launch on the CPU engine and returns its :class:`Report`."""

from __future__ import annotations

import sys
import time

import numpy as np

from course.trace import compiler as _compiler
from course import engine as _engine
from course.trace.markers import TID_FN, instrument, settrace_lines
from course.trace.markers import while_as_range as _while_as_range
from course.trace.recorder import Recorder
from course.trace.report import Report

# Entry point


def _engine_host(a):
    """A NumPy view of a device array (what numba would type), else the argument itself."""
    if hasattr(a, "copy_to_host") and hasattr(a, "_ary"):
        return a._ary
    return a


def trace(kernel, griddim, blockdim, *args, dynshared=0, detail_blocks=None, lines=True, seed=None,
          time_limit=None, compiler=None, blocks=None, while_as_range=False) -> Report:
    """Run one launch on the CPU engine, recording every global and shared element access; return a :class:`Report`.

    ``detail_blocks``: blocks whose every access is kept for :meth:`Report.warp_detail` and
    :meth:`Report.warp_accesses` (default: all blocks when the grid has at most 64, else the first 4);
    counts, races and divergence always cover the whole launch.  ``lines=False`` skips the line
    events that :meth:`Report.divergence` needs (a little faster).

    ``compiler``: where a thread's neighbouring shared accesses could be merged into one wide instruction,
    count them the way the GPU compiler built the kernel (:mod:`course.trace.compiler`) — ``None`` (default)
    when its facts can be had, ``False`` never (the source's own accesses), ``True`` always (an error
    when no facts can be had).  :attr:`Report.compiler` says what was done.

    ``blocks``: trace only these blocks (linear indices): a sample; every count then covers those blocks alone.

    ``while_as_range``: run the kernel's grid-stride ``while`` loops as ``range`` loops
    (:func:`course.trace.markers.while_as_range`), so that a ``range`` stand-in can cut them short
    (:func:`course.explain` samples that way); the counts are those of the same trips.
    """
    fn = _engine.kernel_py_func(kernel)
    grid = _engine.normalise_dims(griddim, "blocks_per_grid (griddim)")
    gx, gy, gz = grid

    def linear(b):
        if isinstance(b, (int, np.integer)):
            b = int(b)
            return (b % gx, (b // gx) % gy, b // (gx * gy))
        b = tuple(int(x) for x in b)
        return b + (0,) * (3 - len(b))

    if detail_blocks is None:
        keep = None if gx * gy * gz <= 64 else {linear(b) for b in range(4)}
    else:
        keep = {linear(b) for b in detail_blocks}
    job, why = None, ""
    if compiler is not False:
        try:
            from numba import typeof

            job = _compiler.describe(fn, tuple(typeof(_engine_host(a)) for a in args))
        except Exception as e:  # an argument numba cannot type: the launch will say so
            why = f"the arguments could not be typed for the GPU compiler ({type(e).__name__})"
    inst = instrument(fn, while_as_range) if lines else None  # (code, weights): line markers, else sys.settrace
    if inst is not None:
        run = own = inst[0]
    else:  # the kernel itself, or its copy with grid-stride loops as range loops
        own = (_while_as_range(fn) if while_as_range else None) or fn
        run = kernel if own is fn else own
    # the code the engine runs: its copy with the literals typed as numba-cuda types them (engine.numba_function)
    rec = Recorder(_engine.numba_function(own).__code__, keep, lines,
                   line_weights=inst[1] if inst is not None else None,
                   compiler_mode=compiler, compiler_job=job, compiler_why=why)
    tracer = settrace_lines(rec) if lines and inst is None else None
    g = fn.__globals__
    missing = object()
    saved = g.get(TID_FN, missing)  # the kernel module's own value of the name, put back afterwards
    if rec.line_helper is not None:
        g[TID_FN] = rec.line_helper
    old = sys.gettrace()
    t0 = time.perf_counter()
    if tracer is not None:
        sys.settrace(tracer)
    try:
        _engine.launch(run, grid, blockdim, args, dynshared=dynshared, hooks=rec, seed=seed,
                       time_limit=time_limit, blocks=blocks, typing_of=fn)
    finally:
        if tracer is not None:
            sys.settrace(old)
        if saved is missing:
            g.pop(TID_FN, None)
        else:
            g[TID_FN] = saved
    rec.flush()
    seconds = time.perf_counter() - t0
    return Report(rec, fn.__name__, griddim, blockdim, seconds, lines)
