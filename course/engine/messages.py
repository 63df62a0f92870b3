"""What the engine says when a launch fails: :class:`KernelError` and the messages that name line, block and thread."""

from __future__ import annotations

import os


class KernelError(RuntimeError):
    """A kernel launch failed on the CPU engine; the message says where (line, block, thread) and what to do."""

    __module__ = "course.engine"  # its public home (tracebacks, pickling)

    def __init__(self, message, *, kernel=None, line=None, block=None, thread=None, cause=None):
        super().__init__(message)
        self.kernel = kernel
        self.line = line
        self.block = block
        self.thread = thread
        self.cause = cause


_typed_cache: dict = {}


def _typed(cls):
    """KernelError that is also a ``cls`` (IndexError, ValueError …), so ``except cls`` still catches it."""
    if cls is None or issubclass(KernelError, cls):
        return KernelError
    typed = _typed_cache.get(cls)
    if typed is None:
        try:
            typed = type("KernelError", (KernelError, cls), {"__module__": "course.engine"})
        except TypeError:  # incompatible C layout (OSError, SyntaxError …)
            typed = KernelError
        _typed_cache[cls] = typed
    return typed


def typed_error(cls, message, **info):
    """A KernelError that is also a ``cls``, with ``message`` and the ``info`` of :class:`KernelError`."""
    return _typed(cls)(message, **info)


class LaunchTimeout(BaseException):
    """Raised asynchronously inside a running launch by the watchdog."""



class UserError(Exception):
    """A mistake in the kernel (bad index, bad shared size …), reported with line, block and thread."""

    kind = RuntimeError


class UserIndexError(UserError):
    kind = IndexError



# --------------------------------------------------------------------------------------------------
# Messages


def _user_frames(lau, tb):
    frames = []
    while tb is not None:
        if tb.tb_frame.f_code in lau.user_codes:
            frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _where(code, line):
    import linecache

    src = linecache.getline(code.co_filename, line).strip()
    fname = code.co_filename
    if "ipykernel" in fname or fname.startswith("<"):
        place = f"line {line} of the notebook cell defining `{code.co_name}`"
    else:
        place = f"{os.path.relpath(fname) if not os.path.isabs(fname) or fname.startswith(os.getcwd()) else fname}:{line} (in `{code.co_name}`)"
    return place, src


def _thread_desc(ts):
    return f"block {tuple(ts.block)}, thread {tuple(ts.thread)}"


def thread_error(lau, ts, exc):
    """The KernelError a launch raises when thread ``ts`` stopped with ``exc``."""
    if isinstance(exc, KernelError):
        return exc
    return _launch_error(lau, ts, exc, timeout=isinstance(exc, LaunchTimeout))


def _launch_error(lau, ts, exc, timeout=False):
    tb = exc.__traceback__ if exc is not None else None
    frames = _user_frames(lau, tb) if tb is not None else []
    lines = []
    line_no = None
    if frames:
        code, line_no = frames[-1]
        place, src = _where(code, line_no)
        lines.append(f"at {place}:")
        if src:
            lines.append(f"    {src}")
        if len(frames) > 1:
            kcode, kline = frames[0]
            kplace, ksrc = _where(kcode, kline)
            lines.append(f"  called from {kplace}:  {ksrc}")
    where = "\n".join(lines)
    if timeout and getattr(lau, "stalled", None) is not None:
        return stall_error(lau, ts, exc)
    if timeout:
        head = (
            f"kernel `{lau.name}` ran past its time limit on the CPU engine ({lau.time_limit:g} s); "
            f"{_thread_desc(ts)} was running"
        )
        advice = (
            "A loop that never ends (check its condition and step) looks like this; so does a problem too large "
            "for the CPU: use a smaller size (course.pick(cpu=..., gpu=...)) or raise COURSE_TIME_LIMIT."
        )
        return KernelError(f"{head}\n{where}\n{advice}", kernel=lau.name, line=line_no, block=ts.block, thread=ts.thread)
    if isinstance(exc, UserError):
        kind, detail, cls = "error", str(exc), exc.kind
    else:
        kind, detail, cls = type(exc).__name__, str(exc) or type(exc).__name__, type(exc)
    if not isinstance(exc, UserError):  # an exception the kernel raised: its text as numba's simulator puts it
        tag = f"tid={list(ts.thread)} ctaid={list(ts.block)}"
        detail = f"{tag}: {exc}" if str(exc) else tag
    msg = f"{kind} in kernel `{lau.name}`, {_thread_desc(ts)}\n{where}\n{detail}"
    return typed_error(cls, msg, kernel=lau.name, line=line_no, block=ts.block, thread=ts.thread, cause=exc)


def divergence_error(lau, at_bar):
    by_site = {}
    for ts in at_bar:
        by_site.setdefault(ts.site, []).append(ts)
    parts = []
    for (code, line), tss in by_site.items():
        place, src = _where(code, line)
        parts.append(f"  {len(tss)} thread(s), e.g. thread {tuple(tss[0].thread)}, wait at {place}: {src}")
    ts = at_bar[0]
    return KernelError(
        f"barrier divergence (同步分歧) in kernel `{lau.name}`, block {tuple(ts.block)}: threads of one block "
        "wait at different cuda.syncthreads() calls, which on a GPU hangs or corrupts data:\n"
        + "\n".join(parts)
        + "\nEvery thread of a block must reach the same syncthreads() the same number of times: keep barriers out of "
        "`if` branches that depend on the thread.",
        kernel=lau.name, block=ts.block, thread=ts.thread,
    )


def stuck_error(lau, waiting, states):
    exited = [ts for ts in states if ts.wait == "exited"]
    sample = waiting[0]
    code, line = sample.site
    place, src = _where(code, line)
    what = "cuda.syncthreads()" if sample.wait.startswith("bar") else f"a warp collective ({sample.wait})"
    if exited and sample.wait.startswith("bar"):
        first = exited[0]
        reason = (
            f"{len(exited)} thread(s) of the block (e.g. thread {tuple(first.thread)}) finished without reaching it, "
            "so on a GPU the barrier would wait for them forever (or let the block continue with undefined results). "
            "This happens when a barrier sits inside an `if` that some threads skip, or after an early `return`: "
            "keep every thread alive until after the last syncthreads() and guard only the memory accesses."
        )
    else:
        missing = []
        for ts in waiting:
            if not ts.wait.startswith("bar"):
                base = ts.warp * 32
                for t in states[base : base + 32]:
                    if (ts.mask >> t.lane) & 1 and t.wait not in ("exited",) and (t.wait != ts.wait or t.site != ts.site):
                        missing.append(t)
                break
        detail = ""
        if missing:
            m = missing[0]
            mplace = _where(*m.site)[0] if m.site else "elsewhere"
            detail = f" Lane {m.lane} (thread {tuple(m.thread)}) named in the mask waits at {mplace} instead."
        reason = (
            "not every thread named by its mask arrives there, so on a GPU this would hang." + detail +
            " All lanes in the mask must execute the same collective; pass cuda.activemask() or a mask of the lanes that really arrive."
        )
    return KernelError(
        f"deadlock in kernel `{lau.name}`, block {tuple(sample.block)}: {len(waiting)} thread(s), e.g. thread "
        f"{tuple(sample.thread)}, wait at {what} ({place}: {src}), but {reason}",
        kernel=lau.name, line=line, block=sample.block, thread=sample.thread,
    )


# Warp collectives and their masks (CUDA C++ Programming Guide, warp vote / shuffle / match functions: "Each calling
# thread must have its own bit set in the mask and all non-exited threads named in mask must execute the same
# intrinsic with the same mask, or the result is undefined")


def lanes_text(lanes) -> str:
    """``lane 3``, ``lanes 16-31``, ``lanes 0, 2, 4-7``: lane numbers in ranges."""
    nums = sorted({t if isinstance(t, int) else t.lane for t in lanes})
    parts, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ("lane " if len(nums) == 1 else "lanes ") + ", ".join(parts)


def _call_name(kind):
    return f"cuda.{kind}_sync"


def _warp_head(lau, what, call):
    ts = call[0]
    code, line = ts.site
    place, src = _where(code, line)
    return ts, line, (f"{what} in kernel `{lau.name}`, block {tuple(ts.block)}, warp {ts.warp}\n"
                      f"at {place}:\n    {src}\n")


def mask_outside_error(lau, kind, lanes, outside):
    mask = outside[0].mask & 0xFFFFFFFF
    inside = [t for t in lanes if (t.mask >> t.lane) & 1]
    ts, line, head = _warp_head(lau, "warp collective with a lane outside its own mask", outside)
    got = ""
    if kind == "ballot" and inside and all(t.mask == mask for t in inside):
        bits = 0
        for t in inside:
            if t.value:
                bits |= 1 << t.lane
        got = f" ({lanes_text(inside)}, in the mask, get {bits:#010x})"
    return KernelError(
        head + f"{lanes_text(outside)} {'calls' if len(outside) == 1 else 'call'} {_call_name(kind)} with mask {mask:#010x}, which leaves them out: on a GPU "
        f"each calling lane must be in the mask it passes, or the result is undefined. Only the lanes the mask names "
        f"take part{got}. Call it only from those lanes (an `if` around the call), or pass a mask that names every "
        "caller (cuda.activemask(), or 0xFFFFFFFF when the whole warp calls it).",
        kernel=lau.name, line=line, block=ts.block, thread=outside[0].thread,
    )


def mask_mismatch_error(lau, kind, call, other):
    mask = call[0].mask & 0xFFFFFFFF
    ts, line, head = _warp_head(lau, "warp collective with different masks", call)
    masks = sorted({t.mask & 0xFFFFFFFF for t in other})
    return KernelError(
        head + f"{lanes_text(call)} {'passes' if len(call) == 1 else 'pass'} mask {mask:#010x}, which names {lanes_text(other)}, but those pass "
        f"{', '.join(f'{m:#010x}' for m in masks)}: on a GPU every lane a mask names must call the collective with "
        "the same mask, or the result is undefined (or the warp hangs). Compute one mask for every lane that calls "
        "it (e.g. cuda.activemask() just before), or give each group of lanes a mask that names only itself.",
        kernel=lau.name, line=line, block=ts.block, thread=ts.thread,
    )


def not_arrived_error(lau, kind, call, absent):
    mask = call[0].mask & 0xFFFFFFFF
    ts, line, head = _warp_head(lau, "deadlock at a warp collective", call)
    return KernelError(
        head + f"{lanes_text(call)} {'waits' if len(call) == 1 else 'wait'} at {_call_name(kind)} with mask {mask:#010x}, but {lanes_text(absent)} "
        "named in the mask did not arrive: they went past it (an `if` they skip) and finished the kernel, so on a GPU "
        "the lanes that did call it would wait for them (a hang) or read undefined values. Every lane in the mask must "
        "call the collective: move it out of the `if` (guard only the memory accesses), or pass the mask of the lanes "
        "that really call it (cuda.activemask() inside the `if`).",
        kernel=lau.name, line=line, block=ts.block, thread=ts.thread,
    )


def stall_error(lau, ts, exc):
    """The KernelError of a launch the stall watch stopped: one thread in one ``while`` loop, nothing changing."""
    (code, first, _last), seconds = lau.stalled
    place, src = _where(code, first)
    who = f"block {tuple(ts.block)}, thread {tuple(ts.thread)}" if ts is not None else "a thread"
    return KernelError(
        f"kernel `{lau.name}` cannot finish: {who} has been in the `while` loop at {place} for {seconds:.1f} s while "
        "no thread finished or left it and no global or shared memory changed (passing `cuda.syncthreads()` or a "
        f"warp collective changes nothing by itself), so nothing can make its condition change:\n    {src}\n"
        "If the loop waits for a value another block writes (a flag, a counter): on the CPU engine blocks run one "
        "after another, so that block never runs while this one waits; on a GPU such a wait may hang or deadlock too "
        "(CUDA does not promise that the blocks of a grid run at the same time). Do not wait for other blocks inside "
        "a kernel: end the kernel there and launch a second one (a launch boundary is a grid-wide barrier), or "
        "combine results with atomics that do not wait. If it is a loop that never ends, check its condition and what "
        "changes it. (A loop that really runs this long without writing memory: raise COURSE_STALL_LIMIT, in seconds.)",
        kernel=lau.name, line=first, block=getattr(ts, "block", None), thread=getattr(ts, "thread", None),
    )


def progress_note(lau):
    """One line on stderr: a launch still running after a few seconds says how far it is and how to stop it."""
    import sys

    done, total = lau.blocks_done, lau.blocks_total
    print(f"[course engine] kernel `{lau.name}` is still running on the CPU: {done} of {total} blocks done "
          f"({100 * done / max(total, 1):.0f} %). To stop it, interrupt the kernel (Jupyter: the ■ button, or "
          f"Kernel → Interrupt; a script: Ctrl-C); a smaller problem runs faster (course.pick(cpu=..., gpu=...)).",
          file=sys.stderr, flush=True)
