"""The report of one traced launch: counts per line, warp detail, divergence and races."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np

from course.trace import analysis
from course import engine as _engine
from course.trace.records import (
    OPS,
    R_ADDR,
    R_BASE,
    R_NAME,
    R_OCC,
    R_OP,
    R_SITE,
    R_SIZE,
    R_SPACE,
    R_TID,
    TOTAL_KEYS,
)
from course.trace.sites import site_code, site_line, source_line

if TYPE_CHECKING:
    from course.trace.recorder import Recorder


# Results


@dataclass
class LineCounts:
    """Counts for one (source line, memory space, operation): requests and sectors or wavefronts."""

    line: int
    source: str
    function: str
    space: str  # 'global' | 'shared'
    op: str  # 'load' | 'store' | 'atomic'
    arrays: tuple
    size: int  # bytes per lane access
    requests: int
    count: int  # sectors (global) or wavefronts (shared)
    unit: str  # 'sectors' | 'wavefronts'
    worst: int  # the most sectors / wavefronts one request needed
    ideal: int  # what the requests would need if perfectly coalesced / conflict-free
    compiler_merged: bool = False  # the GPU compiler merged neighbouring accesses here into wider ones
    merge_unknown: bool = False  # it could have, but no compiler facts were at hand (source-level count)

    @property
    def per_request(self) -> float:
        """Average sectors or wavefronts per request (for shared memory: the bank-conflict degree)."""
        return self.count / self.requests if self.requests else 0.0

    @property
    def ideal_per_request(self) -> float:
        """What ``per_request`` would be for a perfectly coalesced / conflict-free access."""
        return self.ideal / self.requests if self.requests else 0.0


@dataclass
class LaneAccess:
    """One lane's part of a warp-level access."""

    lane: int
    thread: tuple  # threadIdx (x, y, z)
    index: tuple  # the element index into the array as a whole (row views resolved)
    addr: int  # byte address (global: the launch's virtual addresses; shared: offset in the block's shared memory)
    offset: int  # byte offset from the start of the array
    bank: int
    sector: int
    wavefront: Optional[int]  # shared memory: which pass serves this lane (0, 1, …); global: None


@dataclass
class WarpAccess:
    """One warp-level memory instruction: which lanes took part and what it cost."""

    line: int
    source: str
    space: str
    op: str
    array: str
    size: int
    block: tuple
    warp: int
    occurrence: int
    lanes: list  # 32 entries: LaneAccess or None (inactive lane)
    active_mask: int
    sectors: int
    wavefronts: int
    ideal: int

    @property
    def active(self) -> int:
        """How many lanes took part."""
        return bin(self.active_mask).count("1")


@dataclass
class Race:
    """Two accesses of different threads to the same bytes, at least one a write (not both atomic), that nothing
    orders: no syncthreads() between them (threads of one block), no syncwarp() both lanes took part in (lanes of
    one warp), or threads of different blocks (global memory: nothing inside a launch orders two blocks)."""

    block: tuple
    address: int  # byte offset in the block's shared memory, or in the global array
    array: str
    first: dict  # {'line', 'source', 'op', 'thread', 'block'}: the write
    second: dict  # the other access (a read, another write, or an atomic)
    count: int  # how many places (a word in a barrier interval of a block, or a global word) these lines raced on
    space: str = "shared"  # "shared" or "global"
    severity: str = "error"  # as racecheck grades it: "error" between warps (or blocks), "warning" inside one warp
    errors: int = 0  # places where threads of different warps (or blocks) race
    warnings: int = 0  # places where only lanes of one warp race
    benign: bool = False  # only stores of one value (a flag): racecheck does not report these

    def __str__(self):
        f, s = self.first, self.second
        if self.space == "global" and f.get("block") != s.get("block"):
            where = f"global array `{self.array}` (byte {self.address})"
            who = (f"{f['op']} by block {f['block']} thread {f['thread']} at line {f['line']} `{f['source']}` and "
                   f"{s['op']} by block {s['block']} thread {s['thread']} at line {s['line']} `{s['source']}`")
            why = "threads of different blocks: nothing orders them inside one launch (use cuda.atomic.*, or a second launch)"
        else:
            where = (f"{self.array} (shared byte {self.address})" if self.space == "shared"
                     else f"global array `{self.array}` (byte {self.address})") + f" in block {self.block}"
            who = (f"{f['op']} by thread {f['thread']} at line {f['line']} `{f['source']}` and "
                   f"{s['op']} by thread {s['thread']} at line {s['line']} `{s['source']}`")
            graded = self.space == "shared"  # racecheck looks at shared memory only
            if self.severity == "warning":
                why = ("lanes of one warp with no syncwarp() both take part in between (and no syncthreads())"
                       + (": racecheck's warning" if graded else ""))
            else:
                why = ("with no syncthreads() between (threads of different warps"
                       + (": racecheck's error)" if graded else ")"))
        kind = "benign race (both store the same value)" if self.benign else "race"
        return f"{kind} on {where}: {who} {why} ({self.count} place(s))"


@dataclass
class Branch:
    """One source line at which lanes of a warp went different ways."""

    line: int
    source: str
    executions: int  # warp-level executions of this line
    divergent: int  # how many of them split the warp
    sides: dict  # next line (or 'exit') -> lanes that went there, summed over the divergent executions


@dataclass
class Divergence:
    """Divergence summary: branches that split warps and the average active lanes per warp step."""

    branches: list  # Branch, by line
    events: list  # (line, block, warp, occurrence, {next line or 'exit': lanes}) for detail blocks
    steps: int  # warp-level line executions
    active_lanes: int  # lanes summed over those steps
    warps: dict  # (block, warp) -> (steps, active lanes summed, lanes in the warp)

    @property
    def avg_active_lanes(self) -> float:
        """Average active lanes per executed warp step (compare smsp__thread_inst_executed_per_inst_executed.ratio)."""
        return self.active_lanes / self.steps if self.steps else 0.0

    def per_warp(self, line) -> dict:
        """For one branch line: {(block, warp): [sides of each split execution]} (kept blocks only)."""
        out: dict = defaultdict(list)
        for ln, blk, warp, _k, sides in self.events:
            if ln == line:
                out[(blk, warp)].append(sides)
        return dict(out)

    @property
    def simt_efficiency(self) -> float:
        """Average active lanes over the 32 a warp could use."""
        return self.avg_active_lanes / 32.0


class Report:
    """What one traced launch did to the memory system (see the module docstring for the methods)."""

    def __init__(self, rec: Recorder, kernel_name, griddim, blockdim, seconds, lines):
        self._rec = rec
        self.kernel = kernel_name
        self.griddim = griddim
        self.blockdim = blockdim
        self.seconds = seconds
        self._lines = lines
        self.detail_blocks = sorted(rec.kept)

    @property
    def grid(self) -> tuple:
        """The launch's blocks per grid as (x, y, z), however ``griddim`` was written."""
        return _engine.normalise_dims(self.griddim, "griddim")

    @property
    def block(self) -> tuple:
        """The launch's threads per block as (x, y, z), however ``blockdim`` was written."""
        return _engine.normalise_dims(self.blockdim, "blockdim")

    @property
    def compiler(self) -> dict:
        """What the GPU compiler's view added to the counts (course.trace.compiler, docs/tracer.md).

        ``facts``: the toolchain whose machine code was read (None: none at hand); ``merged_lines``: source
        lines where the compiler merged a thread's neighbouring shared accesses into one wider instruction
        and the counts follow it; ``unknown_lines``: lines where it could have but no facts were at hand,
        so the counts are the source's; ``why``: why there were no facts.
        """
        rec = self._rec
        f = rec.facts_if_known()
        lines = lambda sites: sorted({site_line(x) for x in sites})  # noqa: E731
        return {
            "facts": (f"ptxas {f.get('toolchain')} for sm_{f.get('cc', '9.0').replace('.', '')}"
                      if f and "lines" in f else None),
            "merged_lines": lines(rec.vector_merged),
            "unknown_lines": [] if rec.vector_merged_known() else lines(rec.vector_candidates - rec.vector_merged),
            "why": rec.compiler_why,
        }

    # ---- counts
    def totals(self) -> dict:
        """The eight Nsight Compute counts for the whole launch (keys: :data:`TOTAL_KEYS`)."""
        t = dict.fromkeys(TOTAL_KEYS, 0)
        for (space, op, _site), s in self._rec.site_stats.items():
            if op == "atom":
                continue
            kind = "load" if op == "ld" else "store"
            unit = "sectors" if space == "global" else "wavefronts"
            t[f"{space}_{kind}_requests"] += s[0]
            t[f"{space}_{kind}_{unit}"] += s[1]
        return t

    def bank_conflicts(self) -> dict:
        """Shared wavefronts above the conflict-free minimum, {'load': n, 'store': n} (ncu's bank-conflict counters)."""
        out = {"load": 0, "store": 0}
        for (space, op, _site), s in self._rec.site_stats.items():
            if space == "shared" and op != "atom":
                out["load" if op == "ld" else "store"] += s[1] - s[3]
        return out

    def atomics(self) -> dict:
        """Atomic operations (not part of the load/store counts, as in Nsight Compute): requests per space."""
        out: dict = defaultdict(int)
        for (space, op, _site), s in self._rec.site_stats.items():
            if op == "atom":
                out[space] += s[0]
        return dict(out)

    def by_line(self) -> list:
        """Counts per (source line, space, operation), in source order: a list of :class:`LineCounts`."""
        rows: dict = {}
        for (space, op, site), s in self._rec.site_stats.items():
            code = site_code(site)
            line = site_line(site)
            key = (code.co_filename, line, space, op)
            row = rows.get(key)
            if row is None:
                rows[key] = row = LineCounts(
                    line=line, source=source_line(code, line), function=code.co_name, space=space, op=OPS[op],
                    arrays=(), size=s[5], requests=0, count=0,
                    unit="sectors" if space == "global" else "wavefronts", worst=0, ideal=0,
                )
            row.requests += s[0]
            row.count += s[1]
            row.worst = max(row.worst, s[2])
            row.ideal += s[3]
            row.arrays = tuple(sorted(set(row.arrays) | s[4]))
            if site in self._rec.vector_merged:
                row.compiler_merged = True
                row.size = max(row.size, s[5])
            elif site in self._rec.vector_candidates and not self._rec.vector_merged_known():
                row.merge_unknown = True
        order = {"load": 0, "store": 1, "atomic": 2}
        return sorted(rows.values(), key=lambda r: (r.function != self.kernel, r.line, r.space, order[r.op]))

    def table(self) -> str:
        """A plain-text table of :meth:`by_line`, for printing."""
        head = f"{'line':>5}  {'space':6} {'op':6} {'requests':>8} {'per req':>8} {'worst':>5} {'ideal':>6}  source"
        out = [f"kernel {self.kernel}: grid {self.griddim}, block {self.blockdim}", head]
        for r in self.by_line():
            unit = "sect" if r.unit == "sectors" else "wavef"
            out.append(
                f"{r.line:>5}  {r.space:6} {r.op:6} {r.requests:>8} {r.per_request:>6.2f} {unit[0]}"
                f" {r.worst:>5} {r.ideal_per_request:>6.2f}  {r.source}"
            )
        t = self.totals()
        out.append("totals: " + ", ".join(f"{k}={v}" for k, v in t.items()))
        c = self.compiler
        if c["merged_lines"]:
            out.append(f"line(s) {', '.join(map(str, c['merged_lines']))}: counted as the GPU compiler built them "
                       f"(neighbouring shared accesses merged into wider ones; {c['facts']})")
        if c["unknown_lines"]:
            out.append(f"line(s) {', '.join(map(str, c['unknown_lines']))}: the GPU compiler may merge these shared "
                       f"accesses into wider ones, and no compiler was at hand to say ({c['why'] or 'no facts'}); "
                       "the counts are the source's (`make toolkit` installs the compilers)")
        return "\n".join(out)

    def __repr__(self):
        return self.table()

    # ---- per-warp detail
    def warp_accesses(self, block=0, costs=True) -> list:
        """Every warp-level access of one kept block, in program order of its first lane.

        ``costs=False``: the lanes and what they touched only, for a reader that needs no more (the grader's
        properties that look at addresses): each access's ``sectors``, ``wavefronts`` and ``ideal`` and each lane's
        ``wavefront`` are None, not worked out (most of the time this takes)."""
        blk = self._block_key(block)
        recs = self._rec.rows(blk)
        groups: dict = {}
        first: dict = {}
        for i, r in enumerate(recs):
            key = (r[R_SPACE], r[R_OP], r[R_SITE], r[R_TID] >> 5, r[R_OCC])
            if key not in groups:
                groups[key] = []
                first[key] = i
            groups[key].append(r)
        return [self._warp_access(blk, key, groups[key], costs) for key in sorted(groups, key=first.get)]

    def warp_detail(self, line, block=0, warp=0, occurrence=0) -> list:
        """The accesses on source ``line`` by ``warp`` of ``block``, its ``occurrence``-th time there.

        Returns a list of :class:`WarpAccess` (one per memory instruction on that line, e.g. two loads
        and a store for ``s[i] += s[i + k]``), each with 32 lane entries (None for inactive lanes).
        ``block`` is a linear block number or an (x, y, z) tuple; it must be one of ``detail_blocks``.
        """
        blk = self._block_key(block)
        recs = self._rec.rows(blk)
        groups: dict = {}
        for r in recs:
            if r[R_TID] >> 5 != warp or r[R_OCC] != occurrence or site_line(r[R_SITE]) != line:
                continue
            groups.setdefault((r[R_SPACE], r[R_OP], r[R_SITE]), []).append(r)
        return [self._warp_access(blk, (k[0], k[1], k[2], warp, occurrence), g) for k, g in groups.items()]

    def lines_with_accesses(self) -> list:
        """Source lines that made memory accesses (handy for widget menus)."""
        return sorted({r.line for r in self.by_line()})

    def _block_key(self, block):
        gx, gy, gz = self.grid
        if isinstance(block, (int, np.integer)):
            b = int(block)
            blk = (b % gx, (b // gx) % gy, b // (gx * gy))
        else:
            blk = tuple(block) + (0,) * (3 - len(tuple(block)))
        if blk not in self._rec.kept:
            raise KeyError(
                f"block {blk} was not kept in detail; this report keeps {self.detail_blocks}. "
                "Trace again with detail_blocks=[...] naming the block you want to inspect."
            )
        return blk

    def _warp_access(self, blk, key, group, costs=True):
        space, op, site, warp, occ = key
        bx, by, bz = self.block
        size = group[0][R_SIZE]
        addrs = [None] * 32
        for r in group:
            addrs[r[R_TID] & 31] = r[R_ADDR]
        passes = analysis.shared_passes(addrs, size) if space == "shared" and costs else [None] * 32
        lanes: list = [None] * 32
        arrays = self._rec.arrays
        bxy = bx * by
        for r in group:
            tid = r[R_TID]
            lane = tid & 31
            base = r[R_BASE]
            _name, shape, itemsize = arrays.get((space, base), (None, (), size))
            addr = int(r[R_ADDR])
            offset = addr - int(base)
            p = passes[lane]
            lanes[lane] = LaneAccess(
                lane=lane, thread=(tid % bx, (tid // bx) % by, tid // bxy),
                index=_unravel(offset // itemsize, shape) if shape else (), addr=addr, offset=offset,
                bank=analysis.bank_of(addr), sector=analysis.sector_of(addr),
                wavefront=None if p is None else p.wavefront,
            )
        if costs:
            cost, ideal = _cost(space, addrs, size)
            sectors, wavefronts = analysis.global_sectors(addrs, size), cost if space == "shared" else 0
        else:
            sectors = wavefronts = ideal = None
        line = site_line(site)
        return WarpAccess(
            line=line, source=source_line(site_code(site), line), space=space, op=OPS[op], array=group[0][R_NAME], size=size,
            block=blk, warp=warp, occurrence=occ, lanes=lanes, active_mask=analysis.active_mask(addrs),
            sectors=sectors, wavefronts=wavefronts, ideal=ideal,
        )

    # ---- divergence and races
    def divergence(self) -> Divergence:
        """Which branches split warps, and the average number of active lanes per warp step."""
        if not self._lines:
            raise RuntimeError("this trace ran without line events; call trace(..., lines=True) to see divergence")
        rec = self._rec
        rec.drain_divergence()
        code = rec.kcode
        branches = []
        for line, (execs, div, sides) in rec.branches.items():
            if not div:
                continue
            named = {("exit" if k is None else k): v for k, v in sides.items()}
            branches.append(Branch(line=line, source=source_line(code, line), executions=execs, divergent=div,
                                   sides=named))
        branches.sort(key=lambda b: b.line)
        events = [
            (line, blk, warp, k, {("exit" if n is None else n): c for n, c in sd.items()})
            for line, blk, warp, k, sd in rec.branch_events
        ]
        return Divergence(branches=branches, events=events, steps=rec.div_steps, active_lanes=rec.div_active,
                          warps=dict(rec.warp_steps))

    def line_steps(self) -> dict:
        """Warp-level executions of each marked source line ``{line: n}`` (a marker stands for a run of simple
        statements: :meth:`line_weights` says how many lines); needs ``lines=True``."""
        if not self._lines:
            raise RuntimeError("this trace ran without line events; call trace(..., lines=True)")
        rec = self._rec
        rec.drain_divergence()
        return {line: b[0] for line, b in rec.branches.items()}

    def barriers(self) -> int:
        """Block-wide barriers (``syncthreads``) released, summed over the traced blocks."""
        return self._rec.barriers_total

    def line_weights(self) -> dict:
        """How many source lines each marker stands for ``{marker line: n}`` (1 where absent)."""
        return dict(self._rec.line_weights)

    def races(self, benign: bool = False) -> list:
        """Races in shared and global memory, as :class:`Race` objects (one per pair of source lines).

        Two accesses race when they touch the same bytes from different threads, at least one writes, they are
        not both atomic, and nothing orders them: threads of one block with no syncthreads() between, lanes of
        one warp with no syncwarp() both took part in between (shuffles and votes do not order memory), threads
        of different blocks always.  ``severity`` is racecheck's grading ("warning" inside one warp, "error"
        otherwise).  Stores of one value by many threads (a flag) are benign: listed only with ``benign=True``.
        """
        rec = self._rec
        rec.global_races()
        out = []
        bx, by, _bz = self.block

        def thread(tid):
            return (tid % bx, (tid // bx) % by, tid // (bx * by))

        def side(r, blk):
            line = site_line(r[R_SITE])
            return {"line": line, "source": source_line(site_code(r[R_SITE]), line), "op": OPS[r[R_OP]],
                    "thread": thread(r[R_TID]), "block": blk}

        for (space, _blk, ex, count, errors, warnings, _n_benign) in rec.races.values():
            is_benign = not (errors or warnings)
            if is_benign and not benign:
                continue
            sev = "error" if errors or (is_benign and "benign-error" in ex) else "warning"
            blk, w, o, oblk = ex[("benign-" if is_benign else "") + sev]
            addr = int(max(w[R_ADDR], o[R_ADDR]))
            if space == "global":
                addr -= w[R_BASE]
            out.append(Race(block=blk, address=addr, array=w[R_NAME], first=side(w, blk), second=side(o, oblk),
                            count=count, space=space, severity=sev, errors=errors, warnings=warnings,
                            benign=is_benign))
        out.sort(key=lambda r: (r.first["line"], r.second["line"]))
        return out



def _unravel(flat: int, shape: tuple) -> tuple:
    """``np.unravel_index(flat, shape)`` as a tuple of ints (C order), or () where NumPy raises (out of range)."""
    if len(shape) == 1:
        return (flat,) if 0 <= flat < shape[0] else ()
    if flat < 0:
        return ()
    out = []
    for d in reversed(shape):
        if d <= 0:
            return ()
        flat, r = divmod(flat, d)
        out.append(r)
    return tuple(reversed(out)) if flat == 0 else ()


def _cost(space, addrs, size):
    if space == "shared":
        return analysis.shared_wavefronts(addrs, size), analysis.shared_ideal_wavefronts(addrs, size)
    n = sum(1 for a in addrs if a is not None)
    return analysis.global_sectors(addrs, size), analysis.global_ideal_sectors(n, size)
