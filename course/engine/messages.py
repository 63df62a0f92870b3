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
