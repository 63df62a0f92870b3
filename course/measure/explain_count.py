"""The counting half of :mod:`course.measure.explain`: a launch traced on a sample of its blocks and loop trips, and
what the trace found scaled to the whole grid (:class:`Counts`), with the compiler's facts added
(:func:`add_compiler_facts`: registers, loads in flight, the SASS-based instruction count).  How the sample is chosen is
:mod:`course.measure.explain`'s docstring ("Sampling"); the model that turns counts into time is there too.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from course.measure.sampling import LOOP_CAP, LoopSampler, Scaled, copy_args, kernel_def, loop_structure

MAX_SAMPLE = 12
BUDGET_S = 3.0  # tracing time explain allows itself (the compiler runs beside it, in another process)
# a trip traced with line events (the passes that count SASS per line) costs this many trips without them: measured
# on matmul_regtile (0.6 s against 0.077 s per trip of its k loop), whose first block ran 13 trips in 8 s when the
# cap was set as if both cost the same
LINE_EVENTS_COST = 8.0


@dataclass
class Counts:
    """What the sampled trace found, scaled to the whole launch."""

    blocks: int
    sampled: int
    threads_per_block: int
    gld_requests: float = 0.0
    gld_sectors: float = 0.0
    gst_requests: float = 0.0
    gst_sectors: float = 0.0
    lines: float = 0.0  # 128-byte lines of the global requests (L1 wavefronts)
    shared_wavefronts: float = 0.0
    shared_requests: float = 0.0
    atomics: float = 0.0
    atomic_chain: float = 0.0  # the most atomics on one address
    steps: float = 0.0  # warp-level line executions
    warp_instructions: Optional[float] = None  # from the SASS, when the compiler's facts are at hand
    dram_bytes: float = 0.0
    footprint: float = 0.0
    l1_hit: float = 0.0
    ilp: float = 1.0  # distinct load sites per warp of the detail block (the source's view)
    loads_in_flight: Optional[float] = None  # the SASS's: loads a warp issues before waiting (sass_flight)
    float_atomics: Optional[float] = None  # share of the global atomics that are floating-point (SASS)
    alu_share: Optional[float] = None  # share of the SASS instructions the ALU pipe runs (:data:`ALU_OPCODES`)
    partial_stores: float = 0.0  # share of store sectors partly written (4 of 32 bytes, say) and not filled by the same warp
    atomic_lanes: float = 1.0  # active lanes per atomic warp instruction
    atomic_scattered: float = 0.0  # atomic lanes whose warp spreads them over many sectors (a random histogram)
    atomic_target_bytes: float = 0.0  # bytes of the array those atomics go to
    store_target_bytes: float = 0.0  # bytes of the array partly written stores go to
    lone_partial_stores: float = 0.0  # share of store sectors the whole block leaves partly written (a scatter)
    barriers: float = 0.0  # syncthreads a block passes (the whole launch's, per block)
    load_footprint: float = 0.0  # bytes of the arrays the loads touch
    loops: list = field(default_factory=list)
    # loads that touch a sector of a large array again: [[sectors, array bytes], ...] (explain.ceilings: beyond the
    # L2 they miss, one HBM access each)
    far_retouch: list = field(default_factory=list)
    kernel_file: str = ""
    registers: Optional[int] = None
    shared_bytes: int = 0
    resident_warps: float = 0.0
    how: list = field(default_factory=list)



# --- counting --------------------------------------------------------------------------------------------------

def _sample(total: int, n: int) -> list:
    if total <= n:
        return list(range(total))
    picks = np.unique(np.linspace(0, total - 1, n).round().astype(int))
    return [int(b) for b in picks]


def host_array(a):
    if hasattr(a, "copy_to_host") and not isinstance(a, np.ndarray):
        return a.copy_to_host()
    return a


def argtypes_of(args):
    from numba import typeof

    return tuple(typeof(a) for a in args)


def _lines_and_reuse(report, targets=None, loops=()) -> tuple:
    """From the detail block: 128-byte lines per global sector, the share of load sectors the block reads again
    (L1 hits), the independent loads a warp has in flight (distinct load sites), the share of store sectors
    only partly written, active lanes per atomic, and (in ``targets``, when given):

    - ``scattered``: the share of atomic lanes whose warp spreads them over more than twice the sectors they would
      fill side by side (a random histogram's), and ``atomic_arrays``, the arrays they update;
    - ``lone_partial``: the share of store sectors the whole block leaves partly written and never reads (a random
      scatter's; a transpose's column writes fill their sectors across the block's warps, and a record updated in
      place was read first), stores of lines outside every loop only (``loops``: ``(first, last)`` lines; the
      detail pass cuts loops to two trips, so a record a thread fills over many trips would look partly written),
      and ``partial_arrays``.

    - ``gathers``: per array the block loads, the share of its load sectors that are distinct, the share of its
      warp loads whose lanes are not at one stride, and its share of the block's load sectors (:func:`_far_retouch`:
      from one block, a warp's lanes on 32 sectors look the same whether the sectors' neighbours are read by no one,
      as in a random gather, or by later blocks, as in a column walk; charging HBM's 64-byte access for all of them
      mended the first and broke the second, so the lanes' places tell them apart)."""
    accesses = report.warp_accesses(report.detail_blocks[0]) if report.detail_blocks else []
    sectors = lines = ld_sectors = st_sectors = st_partial = 0
    atom_lanes = atom_n = scattered_lanes = 0
    atom_arrays: set = set()
    written: dict = {}  # (array, sector) -> bytes the block's stores write into it
    store_sectors: list = []
    sites_per_warp: dict = {}
    # bytes each warp's own stores put into each sector: a sector one store leaves partly written and the same warp's
    # next stores fill (the fields of a structure, a pixel's channels) reaches the L2 as whole sectors do (round 8's
    # 16-byte-pixel transpose: 30.2 M L2 sectors at 92 % in 149 µs), and so does one the block also reads (a
    # structure updated in place: its sector is in the L2 when the store comes; fresh5_particles_aos, 2.7x slow at the
    # partial rate); a partial write is one that neither fills.  ``loaded``: the (array, sector)s the block reads
    by_warp: dict = {}
    loaded: set = set()
    # per array the block loads: sectors its loads touch, and how many of its warp loads have lanes at irregular
    # places (not one stride): a random gather's, not a row's, a column's or a stencil's
    ld_touch: dict = {}
    ld_irregular: dict = {}
    for w in accesses:
        if w.space == "global" and w.op == "load":
            lanes = [(i, la.addr) for i, la in enumerate(w.lanes) if la is not None]
            secs = {a // 32 for _, a in lanes}
            loaded.update((w.array, sec) for sec in secs)
            ld_touch[w.array] = ld_touch.get(w.array, 0) + len(secs)
            # one stride per lane, inactive lanes skipped (a row that ended early leaves a gap, not a gather)
            steps = {(b - a) / (j - i) for (i, a), (j, b) in zip(lanes, lanes[1:])}
            n_irr, n_all = ld_irregular.get(w.array, (0, 0))
            ld_irregular[w.array] = (n_irr + (len(steps) > 1), n_all + 1)
        elif w.space == "global" and w.op == "store":
            for la in w.lanes:
                if la is not None:
                    key = (w.warp, w.array, la.addr // 32)
                    by_warp[key] = by_warp.get(key, 0) + w.size
    for w in accesses:
        if w.space != "global":  # a shared atomic stays in its block's SM: no same-address chain across the device
            continue
        per_sector: dict = {}
        for la in w.lanes:
            if la is not None:
                per_sector[la.addr // 32] = per_sector.get(la.addr // 32, 0) + w.size
        spread = len(per_sector) > 2 * math.ceil(w.active * w.size / 32)
        if w.op == "atomic":
            atom_lanes += w.active
            atom_n += 1
            if spread:
                scattered_lanes += w.active
                atom_arrays.add(w.array)
        sectors += len(per_sector)
        lines += len({sec // 4 for sec in per_sector})
        if w.op == "load":
            ld_sectors += len(per_sector)
            sites_per_warp.setdefault(w.warp, set()).add((w.line, w.array))
        elif w.op == "store":
            st_sectors += len(per_sector)
            st_partial += sum(1 for sec, b in per_sector.items()
                              if b < 32 and by_warp[(w.warp, w.array, sec)] < 32 and (w.array, sec) not in loaded)
            in_loop = any(a <= w.line <= b for a, b in loops)
            for sec, b in per_sector.items():
                written[(w.array, sec)] = written.get((w.array, sec), 0) + b
                store_sectors.append((w.array, sec, in_loop))
    if targets is not None:
        left = [(a, sec) for a, sec, in_loop in store_sectors
                if not in_loop and written[(a, sec)] < 32 and (a, sec) not in loaded]
        distinct: dict = {}
        for a, _sec in loaded:
            distinct[a] = distinct.get(a, 0) + 1
        touched = sum(ld_touch.values())
        targets["gathers"] = {a: (distinct.get(a, 0) / n, ld_irregular[a][0] / ld_irregular[a][1], n / touched)
                              for a, n in ld_touch.items() if n}
        targets.update(scattered=scattered_lanes / atom_lanes if atom_lanes else 0.0, atomic_arrays=atom_arrays,
                       lone_partial=len(left) / st_sectors if st_sectors else 0.0,
                       partial_arrays={a for a, _ in left})
    ratio = lines / sectors if sectors else 0.25
    hit = 1.0 - len(loaded) / ld_sectors if ld_sectors else 0.0
    ilp = float(np.median([len(x) for x in sites_per_warp.values()])) if sites_per_warp else 1.0
    partial = st_partial / st_sectors if st_sectors else 0.0
    return ratio, hit, ilp, partial, (atom_lanes / atom_n if atom_n else 1.0)


def _footprint(scaled: list, args, scale, op=None) -> float:
    """Bytes of the global arrays the launch touches, each capped at an array's size (largest with largest)."""
    per_array: dict = {}
    for sc in scaled:
        for row, f in sc.rows:
            if row.space != "global" or (op is not None and row.op != op):
                continue
            for name in row.arrays:
                per_array[name] = per_array.get(name, 0.0) + row.count * f * 32 * scale / max(1, len(row.arrays))
    sizes = sorted((a.nbytes for a in args if isinstance(a, np.ndarray)), reverse=True)
    total = 0.0
    for i, b in enumerate(sorted(per_array.values(), reverse=True)):
        total += min(b, sizes[i]) if i < len(sizes) else b
    return total


def _far_retouch(load_sectors: float, sizes: dict, gathers: dict, least: float = 16e6) -> list:
    """``[[sectors, bytes], ...]``: for each global array of at least ``least`` bytes that the launch loads, the load
    sectors that come back to a sector after the block that first read it (what the L2 serves again or, for an array
    larger than the L2, misses: a random gather from a big table, each one an HBM access of its own).

    From block 0 (``gathers``: array -> (distinct share, irregular share, share of the load sectors)): an array's
    sectors are its share of the launch's ``load_sectors`` (a source line that loads two arrays counts them
    together), the sectors a block reads again itself are its own reuse (the distinct share), and only loads with
    lanes at irregular places count: a column walk's or a stencil's later blocks read a sector's neighbours soon
    after, while the L2 still holds it (round 6's wave13_3d, the exercises' transpose_flat: 30-55 M such loads, no
    extra HBM traffic)."""
    out = []
    for name, (distinct, irregular, share) in sorted(gathers.items()):
        nbytes = sizes.get(name, 0)
        again = (load_sectors * share * distinct - nbytes / 32) * irregular
        if nbytes >= least and again > 0:
            out.append([again, float(nbytes)])
    return out


def _instructions(sc, kernel_file: str, sass: dict, warps: int) -> Optional[float]:
    """Warp instructions of the traced blocks: each source line's SASS instructions × how often warps ran it.

    A line the compiler unrolled holds several copies of its instructions: the copies per execution are the
    SASS memory instructions of the line over the memory instructions the source makes per execution.
    Lines of inlined device functions (other files) run as often, on average, as the kernel's own lines.
    """
    steps = sc.steps
    if not sass or not sass.get("per_line") or not steps:
        return None
    markers = sorted(steps)
    mem: dict = {}
    for row, f in sc.rows:
        mem[row.line] = mem.get(row.line, 0) + row.requests * f
    loops = sorted(sc.loops, key=lambda lp: lp[1] - lp[0])  # innermost (shortest) first

    def inner(ln):
        return next((lp for lp in loops if lp[0] <= ln <= lp[1]), None)

    def fixed_unroll(ln):
        u = 1.0
        for first, last, n in loops:
            if first <= ln <= last and n:
                u *= n
        return u

    rows = []
    for key, n in sass["per_line"].items():
        fname, _, ln = key.rpartition(":")
        if not ln.isdigit() or not kernel_file.endswith(fname):
            rows.append((None, key, n, None))
            continue
        ln = int(ln)
        i = int(np.searchsorted(markers, ln, side="right")) - 1
        rows.append((ln, key, n, steps[markers[i]] if i >= 0 else None))
    # the copies the compiler made, measured on memory lines: SASS memory instructions over the source's per execution
    measured: dict = {}
    for ln, key, _n, s in rows:
        fl = (sass.get("mem_lines") or {}).get(key)
        if ln is not None and s and fl and mem.get(ln):
            measured[ln] = max(1.0, fl / (mem[ln] / s))
    per_loop: dict = {}
    for ln, u in measured.items():
        per_loop.setdefault(inner(ln), []).append(u)
    # a line of an unrolled loop, per execution, as the SASS's main and remainder loops say (sass_flight)
    per_exec = sass.get("per_execution") or {}
    # a line's instructions outside every SASS loop run at most once per warp (a loop unrolled whole is straight
    # code), and those of the slow-path subroutines (IEEE division's special cases) do not run: sass_flight.placement
    straight_of = sass.get("straight")
    cold_of = sass.get("cold") or {}
    # ... unless the loop's memory lines count more copies: sass_flight reads the copies of a loop with no remainder
    # beside it from its (line, opcode) groups, which fails when ptxas merges a few instructions across copies
    # (round 6's hamming_nearest: 8 copies, 16 LDS for 2 loads an iteration, read as 2 copies — 4.0x the
    # instructions the H200 ran).  A memory line's copies (its SASS memory instructions over the source's per
    # execution) at 1.5x or more of what the per-execution count implies correct the whole loop's lines; less is a
    # remainder loop's extra copy (main u + remainder 1), and fewer copies are vector loads that merged copies
    fewer: dict = {}
    for ln, key, n, _s in rows:
        if key in per_exec and ln in measured and per_exec[key] > 0:
            n -= cold_of.get(key, 0)
            n_loop = n - (min(n, straight_of.get(key, 0)) if straight_of is not None else 0)
            implied = n_loop / per_exec[key]
            if measured[ln] >= 1.5 * implied:
                lp = inner(ln)
                fewer[lp] = min(fewer.get(lp, 1.0), implied / measured[ln])
    dyn = static_kernel = dyn_kernel = 0.0
    other = 0
    for ln, key, n, s in rows:
        n -= cold_of.get(key, 0)
        if ln is None:
            other += n
            continue
        if s is None:
            dyn += n * warps  # the prologue: once per warp
            continue
        lp = inner(ln)
        n_straight = min(n, straight_of.get(key, 0)) if straight_of is not None else 0
        n_loop = n - n_straight
        # straight instructions: once per warp that runs the line, however many trips its source loops run
        once = n_straight * min(s / fixed_unroll(ln), warps) if n_straight else 0.0
        dyn += once
        static_kernel += n_straight
        dyn_kernel += once
        if not n_loop:
            continue
        # read only in an innermost loop of run-time trips (a fixed-trip loop is unrolled whole: fixed_unroll's)
        if key in per_exec and lp is not None and lp[2] is None and not any(
                o != lp and lp[0] <= o[0] and o[1] <= lp[1] for o in loops):
            # a loop's header line is traced once per entry into the loop, but its SASS (the loop control) runs
            # every trip: it executes as often as the loop's busiest line
            header = next((h for h in loops if h[0] == ln), None)
            if header is not None:
                s = max([s] + [steps[m] for m in markers if header[0] < m <= header[1]])
            f = fewer.get(lp, 1.0)
            dyn += s * per_exec[key] * f
            static_kernel += n_loop
            dyn_kernel += s * per_exec[key] * f
            continue
        if ln in measured:
            u = measured[ln]
        elif per_loop.get(lp):
            u = float(np.median(per_loop[lp]))
        else:
            u = fixed_unroll(ln)
        dyn += s * n_loop / u
        static_kernel += n_loop
        dyn_kernel += s * n_loop / u
    if static_kernel and other:
        dyn += other * dyn_kernel / static_kernel
    return dyn


def count(kernel, griddim, blockdim, args, *, dynshared=0, budget_s=BUDGET_S, copy=True, sample=None,
          loop_cap=None) -> tuple:
    """Trace a sample of the launch and scale what it found to the whole grid (see the module docstring).

    Returns ``(counts, scaled block-0 report)``: the block-0 report carries the per-line detail that
    :func:`add_compiler_facts` reads.  ``sample`` fixes how many blocks are traced (default: what the time
    budget allows, up to :data:`MAX_SAMPLE`) and ``loop_cap`` the trips a long loop runs (default: as many as the
    budget allows, 2 to :data:`LOOP_CAP`), so that a validation run is repeatable.
    """
    from course import engine
    from course.trace import trace

    fn = engine.kernel_py_func(kernel)
    grid = engine.normalise_dims(griddim, "blocks_per_grid (griddim)")
    block = engine.normalise_dims(blockdim, "threads_per_block (blockdim)")
    nblocks = grid[0] * grid[1] * grid[2]
    tpb = block[0] * block[1] * block[2]
    args = tuple(host_array(a) for a in args)
    run_args = copy_args(args, fn) if copy else args
    t0 = time.perf_counter()
    g = fn.__globals__
    missing = object()
    saved = g.get("range", missing)
    try:
        # the detail pass: every access of block 0, loops cut to 2 trips (lines per request, reuse, stores), but for a
        # loop of at most 16 (a pixel's channels, a filter's taps): cut, its later trips' reuse and the rest of the
        # sectors its stores fill were missed (round 8's RGBA blend and 16-byte-pixel transpose 2.5-3.5x slow, its
        # 16-tap FIR 2x)
        g["range"] = LoopSampler(cap=2, whole=16)
        detail = trace(kernel, griddim, blockdim, *run_args, dynshared=dynshared, blocks=[0], detail_blocks=[0],
                       lines=False, compiler=False, while_as_range=True)
        t_detail = time.perf_counter() - t0
        if loop_cap is None:  # as many trips as the budget allows: a 2-trip block took t_detail without line events
            loop_cap = int(max(2, min(LOOP_CAP, 2 * (budget_s / 3) / max(t_detail * LINE_EVENTS_COST, 1e-4))))
        unscalable = kernel_def(fn.__code__) is None
        if unscalable:  # no source to find the loops' lines in: a cut loop could not be scaled, so none is cut
            loop_cap = 1 << 62
        loops = LoopSampler(cap=loop_cap)
        g["range"] = loops
        t1 = time.perf_counter()
        first = trace(kernel, griddim, blockdim, *run_args, dynshared=dynshared, blocks=[0], detail_blocks=[],
                      while_as_range=True)
        first_trips = {k: list(v) for k, v in loops.trips.items()}
        t_one = max(time.perf_counter() - t1, 1e-4)
        n = sample if sample else int(max(1, min(MAX_SAMPLE, (budget_s - (t1 - t0) - t_one) / t_one)))
        rest = [b for b in _sample(nblocks, n) if b != 0] if nblocks > 1 else []
        reports = [first]
        if rest:
            reports.append(trace(kernel, griddim, blockdim, *run_args, dynshared=dynshared, blocks=rest,
                                 detail_blocks=[], while_as_range=True))
    finally:
        if saved is missing:
            g.pop("range", None)
        else:
            g["range"] = saved
    code = fn.__code__
    scale_all = loops.scales(code)
    first_loops = LoopSampler()
    first_loops.trips = first_trips
    structure = loop_structure(code, loops.trips)
    scaled = [Scaled(first, first_loops.scales(code), structure)] + [Scaled(r, scale_all) for r in reports[1:]]
    sampled = 1 + len(rest)
    scale = nblocks / sampled
    c = Counts(blocks=nblocks, sampled=sampled, threads_per_block=tpb)
    for sc in scaled:
        c.gld_requests += sc.total("global", "load")
        c.gld_sectors += sc.total("global", "load", "count")
        c.gst_requests += sc.total("global", "store")
        c.gst_sectors += sc.total("global", "store", "count")
        c.shared_wavefronts += sc.total("shared", "load", "count") + sc.total("shared", "store", "count")
        c.shared_requests += sc.total("shared", "load") + sc.total("shared", "store")
        # global atomics go to the L2 and, on one address, one after another across the device; a shared atomic is
        # an access of its block's shared memory (its wavefronts), in parallel on every SM
        c.atomics += sc.total("global", "atomic")
        c.shared_wavefronts += sc.total("shared", "atomic", "count")
        c.shared_requests += sc.total("shared", "atomic")
        c.steps += sum(sc.steps.values()) if sc.steps else 0.0
        raw = sum(sc.raw_steps.values()) if sc.raw_steps else 0
        c.barriers += sc.report.barriers() * (sum(sc.steps.values()) / raw if raw else 1.0)
    for k in ("gld_requests", "gld_sectors", "gst_requests", "gst_sectors", "shared_wavefronts",
              "shared_requests", "atomics", "steps"):
        setattr(c, k, getattr(c, k) * scale)
    c.barriers /= sampled  # per block
    targets: dict = {}
    ratio, c.l1_hit, c.ilp, c.partial_stores, c.atomic_lanes = _lines_and_reuse(
        detail, targets, loops=[(first, last) for first, last, _ in structure])
    # the arrays by parameter name: how large the region is that scattered atomics and partial stores go to
    sizes = {n: a.nbytes for n, a in zip(fn.__code__.co_varnames[:fn.__code__.co_argcount], args)
             if isinstance(a, np.ndarray)}
    largest = max(sizes.values(), default=0)
    c.atomic_scattered = c.atomics * c.atomic_lanes * targets.get("scattered", 0.0)
    c.atomic_target_bytes = float(max((sizes.get(a, largest) for a in targets.get("atomic_arrays", ())), default=0))
    c.store_target_bytes = float(max((sizes.get(a, largest) for a in targets.get("partial_arrays", ())), default=0))
    c.lone_partial_stores = targets.get("lone_partial", 0.0)
    c.lines = (c.gld_sectors + c.gst_sectors) * ratio
    c.loops = [list(x) for x in structure]
    c.footprint = _footprint(scaled, args, scale)
    c.far_retouch = _far_retouch(c.gld_sectors, sizes, targets.get("gathers", {}))
    c.load_footprint = _footprint(scaled, args, scale, op="load")
    if c.atomics:  # atomics on one address, one thread's after another: an output of one element takes them all
        threads = c.atomics * c.atomic_lanes
        smallest = min((a.size for a in args if isinstance(a, np.ndarray)), default=1)
        c.atomic_chain = threads / max(1, min(smallest, threads))
    if unscalable:
        c.how.append("the kernel's source was not found (its loops' lines unknown): every loop ran whole")
    if any(t[0] > t[1] for t in loops.trips.values()):
        c.how.append(f"loops of more than {loops.cap} trips ran their first {loops.cap}; their lines' counts scaled")
    c.how.append(f"traced {sampled} of {nblocks} blocks ({time.perf_counter() - t0:.1f} s)")
    c.kernel_file = code.co_filename
    return c, scaled[0]


# the SASS opcodes Hopper's ALU pipe runs (integer add/logic/shift/compare, selects, float compares and min/max,
# predicate moves): their share of a kernel's static SASS matches Nsight Compute's sm__inst_executed_pipe_alu over
# sm__inst_executed within 2.0 points (median) on the 294 profiled kernels that have compiler facts.  The pipe has
# 16 lanes per scheduler, so a warp instruction holds it two cycles (Constants.alu_cycles)
ALU_OPCODES = frozenset({"IADD3", "LOP3", "SHF", "LEA", "ISETP", "SEL", "FSETP", "FSEL", "FMNMX", "PLOP3", "P2R",
                         "R2P", "PRMT", "IMNMX", "VIMNMX", "VIMNMX3", "VIADDMNMX", "MOV"})


def alu_share_of(ops: dict) -> Optional[float]:
    """The share of a kernel's SASS instructions (``{opcode: n}``) that the ALU pipe runs; None without any."""
    total = sum(ops.values()) if ops else 0
    return sum(n for op, n in ops.items() if op in ALU_OPCODES) / total if total else None


def add_compiler_facts(c: Counts, first, sass: dict, dynshared=0) -> None:
    """Registers, shared bytes and the SASS-based instruction count (block 0's lines, scaled by all steps)."""
    c.registers = sass.get("registers") or None
    c.alu_share = alu_share_of(sass.get("ops") or {})
    c.loads_in_flight = sass.get("loads_in_flight") or None
    c.float_atomics = sass.get("float_atomics")
    c.shared_bytes = int(sass.get("shared_bytes", 0)) + int(dynshared or 0)
    wi1 = _instructions(first, c.kernel_file, sass, math.ceil(c.threads_per_block / 32))
    s1 = sum(first.steps.values())
    if wi1 is not None and s1:
        c.warp_instructions = wi1 / s1 * c.steps
        c.how.append("instructions: SASS per source line × warp executions of the line (block 0), scaled")
