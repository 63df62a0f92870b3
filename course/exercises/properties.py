"""Performance properties, measured on a trace report (:mod:`course.trace`)."""

from __future__ import annotations

import math

import numpy as np

from course.exercises.contract import Property

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
    bank conflicts' alone — the same for the source's count and the compiled kernel's (course.trace.compiler).
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


def uses_shared(fraction: float = 0.25, hint: str = "") -> Property:
    """The kernel's data moves through shared memory: in each traced block, the shared words that are both
    written (stored or updated atomically) and read are at least ``fraction`` of min(threads per block,
    global words the block loads). One dummy shared word, or a tile written and never read, does not count."""

    def measure(report, extra):
        t = report.totals()
        if not (t["shared_store_requests"] or t["shared_load_requests"]):
            return False, "the kernel never goes through shared memory"
        worst = None
        for b in report.detail_blocks:
            written, read, loaded = set(), set(), set()
            for w in report.warp_accesses(b, costs=False):
                lanes = [x for x in w.lanes if x is not None]
                if w.space == "shared":
                    words = {x.addr // 4 for x in lanes}
                    if w.op in ("store", "atomic"):
                        written |= words
                    if w.op in ("load", "atomic"):
                        read |= words
                elif w.space == "global" and w.op == "load":
                    loaded |= {(w.array, x.offset // 4) for x in lanes}
            threads = math.prod(report.block)
            need = fraction * min(threads, len(loaded))
            used = len(written & read)
            if worst is None or used - need < worst[0] - worst[1]:
                worst = (used, need, b, len(loaded), threads)
        used, need, b, loaded, threads = worst
        detail = (f"block {b}: {used} shared words written and read back, for {loaded} global words loaded by "
                  f"{threads} threads (want at least {fraction:g} × {min(threads, loaded)} = {need:g})")
        return used >= need, detail

    return Property("uses shared memory (共享内存)", measure, hint or (
        "This exercise is about staging data in a cuda.shared.array tile: read it coalesced from global "
        "memory into the tile, then read the tile in the order you need."))


def no_races(hint: str = "") -> Property:
    """No two threads of a block touch the same shared word (one writing) without a barrier between."""

    def measure(report, extra):
        races = list(report.races())
        if not races:
            return True, "no race found"
        return False, f"{len(races)} race(s); first: {race_text(races[0])}"

    return Property("no race between threads", measure, hint or (
        "One thread reads a shared-memory word that another thread writes, and nothing makes the reader "
        "wait for the writer. What must every thread of the block reach before anyone reads the tile?"))


def race_text(race) -> str:
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


# --- counts of one launch: atomics, sectors, shared loads, shared bytes (issue 15) -------------------------


def _limit(limit, extra):
    """A property's limit: a number, or a function of the traced Input (``extra["input"]``) when the traced
    size is drawn per check (course.exercises.inputs.trace_size)."""
    return int(limit(extra["input"])) if callable(limit) else limit


def thread_atomics(report, space: str):
    """Thread-level atomic operations on ``space`` memory in a traced launch, or None when the trace did not
    keep every block in detail (the tracer counts warp-level requests for the whole launch, lanes per block)."""
    if len(report.detail_blocks) < math.prod(report.grid):
        return None
    return sum(w.active for b in report.detail_blocks for w in report.warp_accesses(b, costs=False)
               if w.op == "atomic" and w.space == space)


def atomics_at_most(space: str, limit, per: str, hint: str) -> Property:
    """At most ``limit`` thread-level atomic operations on ``space`` memory in the traced launch (原子操作)."""

    def measure(report, extra):
        n = thread_atomics(report, space)
        if n is None:
            return False, "the trace kept too few blocks to count atomics per thread (a grid of at most 64 blocks)"
        limit_ = _limit(limit, extra)
        return n <= limit_, f"{n} atomic operations on {space} memory (want at most {limit_}: {per})"

    return Property(f"few {space} atomics: at most {per} (原子操作)", measure, hint)


def no_atomics(space: str = "global", hint: str = "") -> Property:
    """No atomic operation on ``space`` memory: each block or warp owns its output."""

    def measure(report, extra):
        n = thread_atomics(report, space)
        if n is None:
            return False, "the trace kept too few blocks to count atomics per thread"
        return n == 0, f"{n} atomic operations on {space} memory (want none)"

    return Property(f"no {space} atomics", measure, hint or "Each block owns its own output element: write it.")


def global_loads_at_most(max_sectors, what: str, hint: str) -> Property:
    """At most ``max_sectors`` 32-byte sectors loaded from global memory in the traced launch (each byte once)."""

    def measure(report, extra):
        got, most = report.totals()["global_load_sectors"], _limit(max_sectors, extra)
        return got <= most, f"{got} sectors loaded from global memory (want at most {most}: {what})"

    most = "" if callable(max_sectors) else f"at most {max_sectors} sectors "
    return Property(f"reads global memory about once: {most}({what})", measure, hint)


def shared_loads_at_most(max_requests, what: str, hint: str) -> Property:
    """At most ``max_requests`` warp-level shared-memory load requests in the traced launch (register reuse): a
    number, or a function of the traced Input."""

    def measure(report, extra):
        got, most = report.totals()["shared_load_requests"], _limit(max_requests, extra)
        return got <= most, f"{got} shared-memory load requests (want at most {most}: {what})"

    most = "" if callable(max_requests) else f"at most {max_requests} "
    return Property(f"register reuse: {most}shared load requests ({what})", measure, hint)


def shared_bytes_at_most(nbytes: int, name: str, hint: str) -> Property:
    """The block allocates at most ``nbytes`` bytes of shared memory (named for what the limit means)."""

    def measure(report, extra):
        got = extra.get("shared_bytes", 0)
        return got <= nbytes, f"{got} bytes of shared memory per block (want at most {nbytes})"

    return Property(name, measure, hint)


def coalesced_at_minimum(kind: str = "load", hint: str = "") -> Property:
    """Global ``kind`` requests touch no more sectors than their accesses need (合并访存), whatever the access width.

    Unlike :func:`coalesced` (at most 4 sectors per request, right for 4-byte accesses), this compares with the
    tracer's ideal for each request, so 16-byte vector loads (16 sectors per warp) count as coalesced too.
    """

    def measure(report, extra):
        rows = [r for r in report.by_line() if r.space == "global" and r.op == kind]
        count, ideal = sum(r.count for r in rows), sum(r.ideal for r in rows)
        if not rows or not ideal:
            return False, f"no global {kind}s were traced"
        return count <= ideal, (f"{count} sectors for {sum(r.requests for r in rows)} requests, "
                                f"{count / ideal:.2f}× the minimum their bytes need (want 1×)")

    what = "load" if kind == "load" else "store"
    return Property(f"coalesced global {what}s: no sector more than needed (合并访存)", measure, hint or (
        f"Which addresses do the 32 lanes of one warp touch in one {what}? Neighbouring lanes should touch "
        f"neighbouring elements."))


def broadcast_loads(array: str, hint: str = "") -> Property:
    """Every global load of ``array`` is a broadcast: one 32-byte sector per warp request, all lanes of a warp
    reading the same word (广播), the way constant memory wants a uniform read (chapter 03 §3). Counted per
    request of ``array`` alone in the blocks the trace kept in detail (a source line may load other arrays too)."""

    def measure(report, extra):
        req = sectors = 0
        for b in report.detail_blocks:
            for w in report.warp_accesses(b, costs=False):
                if w.space == "global" and w.op == "load" and w.array == array:
                    req += 1
                    sectors += len({x.addr // 32 for x in w.lanes if x is not None})
        if not req:
            return False, f"no global loads of {array} were traced"
        return sectors <= req, (f"{sectors / req:.2f} sectors per request on the {req} loads of {array} "
                                f"(want 1: one address for the whole warp)")

    return Property(f"broadcast loads of {array}: one address per warp (广播)", measure, hint or (
        f"At each step, do all 32 lanes of a warp read the same element of {array}? A lane-dependent index "
        f"spreads one request over several addresses."))


def busy_lanes_at_least(lanes: float, hint: str = "") -> Property:
    """On average at least ``lanes`` of a warp's 32 lanes are active per warp step (line events): the launch's
    threads are packed into full warps rather than left idle by a shape that is not a multiple of 32."""

    def measure(report, extra):
        got = report.divergence().avg_active_lanes
        return got >= lanes - 1e-9, f"{got:.2f} of 32 lanes active per warp step (want at least {lanes:g})"

    return Property(f"full warps: at least {lanes:g} of 32 lanes busy per warp step", measure, hint or (
        "Count the lanes that have work in each warp: do whole warps sit idle, or do warps start inside a "
        "row and end inside the next? Number the elements with one flat index over the whole launch."),
        lines=True)


def loads_in_flight(array: str, at_least: int, hint: str) -> Property:
    """Each load of ``array`` (a chain: slot j holds the next slot) takes its address from a load of it issued at least
    ``at_least`` loads of ``array`` earlier in the same thread, so that many can be in flight at once (内存级并行).

    Read from the trace and the chain's own data: load k at slot s depends on the latest earlier load of the same
    thread that returned s (the value of ``array`` at its slot). A walk of one chain at a time makes each load wait
    for the one just before (distance 1); four chains interleaved in one loop put three independent loads between
    a load and the one that needs its value (distance 4). Counted in the blocks the trace kept in detail, each
    thread's loads in program order.
    """

    def measure(report, extra):
        inp = extra["input"]
        data = np.asarray(inp.args[inp.names.index(array)]).ravel()
        per_thread: dict = {}
        for b in report.detail_blocks:
            for w in report.warp_accesses(b, costs=False):
                if w.space == "global" and w.op == "load" and w.array == array:
                    for x in w.lanes:
                        if x is not None:
                            per_thread.setdefault((b, x.thread), []).append(x.offset // data.itemsize)
        if not per_thread:
            return False, f"no global loads of {array} were traced"
        worst = None  # (distance, thread, k)
        dependent = 0
        for thread, slots in per_thread.items():
            last = {}  # value returned -> the position of the latest load that returned it
            for k, s in enumerate(slots):
                if s in last:
                    dependent += 1
                    d = k - last[s]
                    if worst is None or d < worst[0]:
                        worst = (d, thread, k)
                last[int(data[s])] = k
        if worst is None:
            return False, f"no load of {array} takes its address from an earlier load of {array}: nothing is chased"
        d, (b, t), k = worst
        before = "the load just before it" if d == 1 else f"the load {d} loads before it"
        return d >= at_least, (f"{dependent} loads of {array} take their address from an earlier one; the nearest: "
                               f"thread {t} of block {b}, whose load {k} of {array} needs the value of {before} "
                               f"(want at least {at_least} loads apart: {at_least} in flight)")

    return Property(f"{at_least} chases in flight: each load of {array} at least {at_least} loads after the one it "
                    f"needs (内存级并行)", measure, hint)


NOT_JUDGED_COMPILER = ("the CUDA compiler is not installed here ({why}), so what it makes of the kernel cannot be "
                       "read: `make toolkit` installs it (NVIDIA's pip wheels, about 250 MB, no GPU needed), then "
                       "run the check again. This check is left out of the score until then.")


def no_local_memory(hint: str) -> Property:
    """The GPU compiler gives the kernel no local memory (本地内存): ``ptxas -v`` for sm_90 reports a 0-byte stack
    frame for the traced launch's argument types (:func:`course.trace.compiler_typing.gpu_resources`), the number
    numba's ``get_local_mem_per_thread()`` reports on a GPU. Where the CUDA compiler is not installed it is not
    judged, and says how to get it."""

    def measure(report, extra):
        from numba import typeof

        from course.exercises.lint import py_func
        from course.trace import compiler_typing

        kernel, fn = extra["kernel"], py_func(extra["kernel"])
        try:
            argtypes = tuple(typeof(a) for a in extra["input"].args)
        except Exception as e:  # the launch ran, so this is the course's limit, not the kernel's
            return None, f"its arguments could not be typed for the compiler ({type(e).__name__})"
        res = compiler_typing.gpu_resources(fn, argtypes) if fn is not None else None
        if res is None and hasattr(kernel, "get_local_mem_per_thread"):  # a GPU backend without ptxas: numba's own
            try:
                kernel.compile(argtypes)
                res = {"local_bytes": int(kernel.get_local_mem_per_thread(argtypes)), "spill_bytes": 0,
                       "registers": int(kernel.get_regs_per_thread(argtypes))}
            except Exception:
                res = None
        if res is None:
            why = (compiler_typing.resources_why(fn, argtypes) if fn is not None else "") or "no compiler answered"
            return None, NOT_JUDGED_COMPILER.format(why=why)
        if "error" in res:
            return False, f"the GPU compiler refused the kernel: {res['error']}"
        spills = f", {res['spill_bytes']} of them spilled registers" if res.get("spill_bytes") else ""
        return res["local_bytes"] == 0, (f"the compiler (ptxas, sm_90) gives it {res['local_bytes']} bytes of local "
                                         f"memory per thread{spills} and {res['registers']} registers (want 0 bytes)")

    return Property("no local memory: the compiler keeps every value in registers (本地内存)", measure, hint)
