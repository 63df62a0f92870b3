"""The scheduler: blocks one after another, a block's threads as greenlets (协程) switched only where
CUDA threads wait for each other (barriers, warp collectives), and the collectives' results."""

from __future__ import annotations

import contextvars

import numpy as np
from greenlet import getcurrent, greenlet

from course.engine.arrays import poison
from course.engine.kernel_api import FULL_MASK, Dim3, ThreadState
from course.engine.messages import (
    divergence_error,
    mask_mismatch_error,
    mask_outside_error,
    not_arrived_error,
    progress_note,
    stuck_error,
    thread_error,
)

_DONE = object()


class _WorkerPool:
    """Greenlets that run CUDA threads; a worker is reused as soon as its thread finishes.

    Starting and finishing a greenlet costs about 10 µs; switching to a live one about 0.5 µs. A kernel
    without barriers therefore runs all of a block's threads on one worker, and a kernel with barriers
    needs one worker per thread of a block, reused by every block of the launch.
    """

    def __init__(self, fn, kargs, sched):
        self.fn = fn
        self.kargs = kargs
        self.sched = sched
        self.free = []

    def _loop(self, ts):
        fn, kargs, sched = self.fn, self.kargs, self.sched
        while True:
            fn(*kargs)
            sched.switch(_DONE)

    def start(self, ts):
        if self.free:
            w = self.free.pop()
        else:
            w = greenlet(self._loop, self.sched)
            # contextvars (numpy's errstate among them) are per greenlet: start from the launcher's
            w.gr_context = contextvars.copy_context()
        ts.g = w
        return w.switch(ts)


def run_grid(lau, module, fn, kargs, seed):
    gx, gy, gz = lau.grid
    bx, by, bz = lau.blockdim
    blocks = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
    threads = [(x, y, z) for z in range(bz) for y in range(by) for x in range(bx)]
    rng = np.random.default_rng(seed) if seed is not None else None
    block_order = list(range(len(blocks))) if lau.only_blocks is None else list(lau.only_blocks)
    if rng is not None:
        rng.shuffle(block_order)
    hooks = lau.hooks
    begin = getattr(hooks, "begin_block", None)
    end = getattr(hooks, "end_block", None)
    pool = _WorkerPool(fn, kargs, getcurrent())
    module._sched = pool.sched
    for bl in block_order:
        b = blocks[bl]
        module.blockIdx = Dim3(*b)
        module.shared.reset()
        if begin:
            begin(b)
        _run_block(lau, module, pool, b, bl, threads, rng)
        if end:
            end(b)
        lau.blocks_done += 1
        if lau.note_due and not lau.noted:
            lau.noted = True
            progress_note(lau)


def _run_block(lau, module, pool, block, block_linear, thread_coords, rng):
    states = [ThreadState(block, block_linear, t, i) for i, t in enumerate(thread_coords)]
    view = lau.view
    if rng is not None:
        perm = list(range(len(states)))
        rng.shuffle(perm)
        runq = [states[i] for i in perm]
        rank = {id(ts): r for r, ts in enumerate(runq)}
        sort_key = lambda t: rank[id(t)]  # noqa: E731
    else:
        runq = states
        sort_key = lambda t: t.tid  # noqa: E731
    if lau.direct:
        fn, kargs = pool.fn, pool.kargs
        for ts in runq:
            module._ts = ts
            view.thread = ts  # the hooks' LaunchView.thread
            module.threadIdx = ts.threadIdx
            module.laneid = ts.lane
            try:
                fn(*kargs)
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:  # every kernel failure becomes a KernelError
                raise thread_error(lau, ts, exc) from None
            ts.wait = "exited"
            lau.threads_done += 1
        return
    live = len(states)
    on_barrier = getattr(lau.hooks, "on_barrier", None)
    free = pool.free
    waiting = []
    while True:
        for ts in runq:
            module._ts = ts
            view.thread = ts  # the hooks' LaunchView.thread
            module.threadIdx = ts.threadIdx
            module.laneid = ts.lane
            try:
                if ts.g is None:
                    res = pool.start(ts)
                else:
                    res = ts.g.switch()
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:  # every kernel failure becomes a KernelError
                raise thread_error(lau, ts, exc) from None
            if res is _DONE:
                live -= 1
                ts.wait = "exited"
                lau.threads_done += 1
                free.append(ts.g)
                ts.g = None
            else:
                waiting.append(ts)
        if not waiting:
            return
        # 0. threads that paused after a load (engine.order(seed)): run them again, in a fresh random order
        if lau.preempt is not None:
            ready = [ts for ts in waiting if ts.wait == "yield"]
            if ready:
                for ts in ready:
                    ts.wait = None
                waiting = [ts for ts in waiting if ts.wait is not None]
                lau.preempt.shuffle(ready)
                runq = ready
                continue
        # 1. warp collectives whose lanes have all arrived
        runq = _resolve_warps(lau, waiting, states)
        if runq:
            waiting = [ts for ts in waiting if ts.wait is not None]
            runq.sort(key=sort_key)
            continue
        # 2. the block barrier, once every thread of the block waits at one
        at_bar = [ts for ts in waiting if ts.wait.startswith("bar")]
        if len(at_bar) == len(waiting) == live and live == len(states):
            sites = {ts.site for ts in at_bar}
            if len(sites) > 1:
                raise divergence_error(lau, at_bar)
            kind = at_bar[0].wait
            if kind != "bar":
                vals = [ts.value for ts in at_bar]
                res = (sum(vals) if kind == "bar_count" else int(all(vals)) if kind == "bar_and" else int(any(vals)))
            else:
                res = None
            for ts in at_bar:
                ts.barriers += 1
                ts.wait = None
                ts.result = res
            if on_barrier:
                on_barrier(block)
            runq = sorted(at_bar, key=sort_key)
            waiting = []
            continue
        raise stuck_error(lau, waiting, states)


def _resolve_warps(lau, waiting, states):
    """Complete every warp collective whose participating lanes have all arrived; return the lanes to resume.

    A collective other than ``syncwarp`` is the lanes of one warp at one call site passing one mask; lanes at
    that site with another mask form another collective (CUDA: each half of a warp may name itself).  A lane
    outside the mask it passes, lanes whose masks name each other but differ, and lanes of the mask that finish
    the kernel without arriving are errors (undefined or a hang on a GPU), named with their line."""
    resumed = []
    groups = {}
    for ts in waiting:
        if ts.wait is not None and not ts.wait.startswith("bar"):
            # syncwarp(mask) waits for the lanes of ITS mask, wherever in the code they call it with that mask;
            # the other collectives pair the lanes that reach one call site
            key = (ts.warp, ts.wait, ts.mask if ts.wait == "syncwarp" else ts.site)
            groups.setdefault(key, []).append(ts)
    if not groups:
        return resumed
    for (warp, kind, _where), lanes in groups.items():
        base = warp * 32
        warp_states = states[base : base + 32]
        if kind == "activemask":
            # every live lane of the warp waits somewhere: those waiting here are the converged set
            if any(t.wait is None for t in warp_states):
                continue
            mask = 0
            for t in lanes:
                mask |= 1 << t.lane
            for t in lanes:
                t.result = np.uint32(mask)
            calls = [lanes]
        elif kind == "syncwarp":
            mask = lanes[0].mask & FULL_MASK
            here = {t.lane for t in lanes}
            if any((mask >> t.lane) & 1 and t.wait != "exited" and t.lane not in here for t in warp_states):
                continue
            _compute_collective(kind, lanes, mask)
            calls = [lanes]
        else:
            outside = [t for t in lanes if not (t.mask >> t.lane) & 1]
            if outside:
                raise mask_outside_error(lau, kind, lanes, outside)
            by_mask = {}
            for t in lanes:
                by_mask.setdefault(t.mask & FULL_MASK, []).append(t)
            calls = []
            for mask, call in by_mask.items():
                here = {t.lane for t in call}
                other = [t for t in lanes if t.lane not in here and (mask >> t.lane) & 1]
                if other:
                    raise mask_mismatch_error(lau, kind, call, other)
                absent = [t for t in warp_states if (mask >> t.lane) & 1 and t.lane not in here]
                if any(t.wait != "exited" for t in absent):
                    continue  # a lane of the mask waits elsewhere: it may still come
                if absent and not _may_return_early(lau):
                    # they ran past the call to the kernel's end: on a GPU the others wait for them
                    raise not_arrived_error(lau, kind, call, absent)
                _compute_collective(kind, call, mask)
                calls.append(call)
        for call in calls:
            if kind == "syncwarp":
                # the one warp-level operation that orders memory: an event the tracer can name.  shfl_*_sync, votes
                # and match order execution only (racecheck reports a shared store, a shfl, a neighbour's load);
                # activemask() orders nothing
                for t in call:
                    t.warp_syncs += 1
                if lau.on_syncwarp is not None:  # an observer (the tracer) orders accesses by the syncs both lanes took
                    lau.on_syncwarp(lau.next_sync, [t.tid for t in call])
                lau.next_sync += 1
            for t in call:
                t.wait = None
            resumed.extend(call)
    return resumed


_early_returns: dict = {}  # kernel code -> whether it has a `return` before its end


def _may_return_early(lau):
    """Whether the kernel has an explicit ``return`` before its last statement (an unreadable source counts as yes).

    Lanes that return early have exited when the others reach a full-mask collective, which CUDA allows ("all
    non-exited threads named in mask"); lanes that skip the collective and run to the kernel's end have not."""
    code = getattr(lau.fn, "__code__", None)
    if code not in _early_returns:
        try:
            import ast
            import inspect
            import textwrap

            fn = ast.parse(textwrap.dedent(inspect.getsource(code))).body[0]
            last = fn.body[-1]
            early = False
            stack = list(fn.body)
            while stack:
                node = stack.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                    continue
                if isinstance(node, ast.Return) and node is not last:
                    early = True
                    break
                stack.extend(ast.iter_child_nodes(node))
            _early_returns[code] = early
        except Exception:
            _early_returns[code] = True
    return _early_returns[code]


def _i32(bits):
    return np.uint32(bits).view(np.int32)


def _undefined(value):
    """What the engine gives for a value CUDA leaves undefined: NaN, or 0xA5 bytes, as uninitialised memory."""
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, float):
        return float("nan")
    if isinstance(value, int):
        return int(_i32(0xA5A5A5A5))
    if isinstance(value, np.generic):
        out = np.empty(1, value.dtype)
        poison(out)
        return out[0]
    return value


def _compute_collective(kind, lanes, mask=FULL_MASK):
    by_lane = {t.lane: t for t in lanes}
    if kind == "syncwarp":
        for t in lanes:
            t.result = None
        return
    if kind.startswith("shfl"):
        for t in lanes:
            arg, width = t.args
            width = int(width)
            seg = t.lane & ~(width - 1)
            if kind == "shfl":
                src = seg + (int(arg) % width)
            elif kind == "shfl_up":
                src = t.lane - int(arg)
                if src < seg:
                    src = t.lane
            elif kind == "shfl_down":
                src = t.lane + int(arg)
                if src >= seg + width:
                    src = t.lane
            else:
                src = t.lane ^ int(arg)
                if (src & ~(width - 1)) > seg:
                    src = t.lane
            # A source lane outside the mask gives an undefined value on a GPU (CUDA's guide): NaN / 0xA5 bytes
            # here, so that a result that uses it shows it (half a warp summing with 0xFFFF reads such values in
            # lanes whose sums nobody uses).  One of the mask that has exited: the caller's own value, as before.
            src &= 31
            if not (mask >> src) & 1:
                t.result = _undefined(t.value)
            else:
                t.result = by_lane.get(src, t).value
        return
    preds = [t.value for t in lanes]
    # result types as numba-cuda types them on the GPU: ballot and match masks are int32 bit patterns,
    # votes are booleans, activemask is uint32
    if kind == "ballot":
        bits = 0
        for t in lanes:
            if t.value:
                bits |= 1 << t.lane
        res = _i32(bits)
    elif kind == "all":
        res = all(preds)
    elif kind == "any":
        res = any(preds)
    elif kind == "eq":
        res = all(p == preds[0] for p in preds)
    elif kind == "match_any":
        for t in lanes:
            bits = 0
            for u in lanes:
                if u.value == t.value:
                    bits |= 1 << u.lane
            t.result = _i32(bits)
        return
    elif kind == "match_all":
        same = all(p == preds[0] for p in preds)
        bits = 0
        for t in lanes:
            bits |= 1 << t.lane
        res = (_i32(bits if same else 0), same)
    else:  # pragma: no cover - every kind above is produced by EngineCUDAModule
        raise AssertionError(kind)
    for t in lanes:
        t.result = res
