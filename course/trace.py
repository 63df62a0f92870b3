"""See what the memory system would do with a kernel, without a GPU: the course's warp-level tracer.

``report = trace(kernel, griddim, blockdim, *args)`` runs one launch on the CPU engine
(:func:`course.engine.launch`) and records every element read and write of global and shared arrays:
which block, warp and lane, which source site, the byte address and the access size.  It then groups
the accesses into warp-level instructions and asks :mod:`course.analysis` what each one costs:

- ``report.totals()``: the eight counts Nsight Compute reports (requests, sectors, wavefronts);
- ``report.by_line()``: the same per kernel source line, with per-request averages and worst cases;
- ``report.warp_detail(line, block, warp, occurrence)``: every lane's index, address, bank, sector;
- ``report.divergence()``: lanes on each side of every branch, average active lanes per warp step;
- ``report.races()``: shared-memory accesses of different threads with no barrier between them.

The semantics (what a warp, a request, a wavefront is; where the model and the H200 may disagree)
are written down in ``docs/tracer.md``.
"""

from __future__ import annotations

import ast
import dis
import inspect
import itertools
import linecache
import sys
import textwrap
import time
import types
from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

import numpy as np

from course import analysis
from course import compiler as _compiler
from course import engine as _engine

__all__ = ["trace", "Report", "LineCounts", "WarpAccess", "LaneAccess", "Race", "Divergence", "TOTAL_KEYS"]

#: The keys of :meth:`Report.totals`, each the Nsight Compute metric named beside it.
TOTAL_KEYS = {
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "shared_load_requests": "smsp__sass_inst_executed_op_shared_ld.sum",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_store_requests": "smsp__sass_inst_executed_op_shared_st.sum",
    "shared_store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
}

#: Whether one complex element access counts as two accesses (real part, then imaginary part) of
#: half the size, per memory space.  numba loads a complex number as a two-field struct aligned to
#: one field; for global arrays the compiler cannot prove the 8/16-byte alignment a single wide
#: instruction needs, so it emits two; for shared arrays it knows the array's alignment and may merge
#: them.  These defaults are that reasoning; the H200 validation run (docs/tracer.md) decides.
#: Change it here and every count follows.
SPLIT_COMPLEX = {"global": True, "shared": False}

_TRACED_SPACES = ("global", "shared")
_OPS = {"ld": "load", "st": "store", "atom": "atomic"}

# A normalised record is one element access by one thread:
# (op, space, site, tid, occurrence, addr, size, array name, barrier epoch, warp-sync epoch, array base)
_OP, _SPACE, _SITE, _TID, _OCC, _ADDR, _SIZE, _NAME, _BAR, _WSYNC, _BASE = range(11)


# --------------------------------------------------------------------------------------------------
# Source sites: (code object, bytecode offset of the owning instruction, part, calling sites)


_owners: dict = {}


def _owner_table(code):
    """For every code unit of ``code``: the offset of the instruction it belongs to (inline caches included)."""
    table = _owners.get(code)
    if table is None:
        n = len(code.co_code) // 2
        table = [0] * (n + 1)
        offs = [ins.offset for ins in dis.get_instructions(code)] + [2 * n]
        for a, b in zip(offs, offs[1:]):
            for unit in range(a // 2, b // 2):
                table[unit] = a
        _owners[code] = table
    return table


_lines: dict = {}


def _line_of(code, offset):
    """The source line of the instruction at ``offset`` in ``code``."""
    key = (code, offset)
    line = _lines.get(key)
    if line is None:
        line = code.co_firstlineno
        for start, end, ln in code.co_lines():
            if start <= offset < end and ln is not None:
                line = ln
                break
        _lines[key] = line
    return line


def _source(code, line):
    return linecache.getline(code.co_filename, line).strip()


# Sites are small ints (hashing a code object is slow); _SITES[sid] = (code, offset, callers, part).
_SITES: list = []
_SITE_IDS: dict = {}  # (id(code) or (code, callers), instruction offset, part) -> sid


def _site_id(ckey, lasti, part=0):
    """The site id of an access made at ``f_lasti`` in code ``ckey`` (inline caches mapped to their instruction)."""
    code, callers = (ckey, ()) if ckey.__class__ is not tuple else ckey
    off = _owner_table(code)[lasti >> 1]
    k = (id(code) if not callers else ckey, off, part)
    sid = _SITE_IDS.get(k)
    if sid is None:
        sid = _SITE_IDS[k] = len(_SITES)
        _SITES.append((code, off, callers, part))
    return sid


def site_line(sid):
    """The source line of a site (its innermost frame)."""
    code, off = _SITES[sid][0], _SITES[sid][1]
    return _line_of(code, off)


def site_code(sid):
    """The code object a site belongs to."""
    return _SITES[sid][0]


# --------------------------------------------------------------------------------------------------
# Recording
#
# The hot path (every element access) appends five integers to one flat list and nothing else:
#   d = 4 * (array descriptor) + op (0 load, 1 store, 2 atomic), site key, thread id, byte address,
#   warp-sync epoch (shared memory only; 0 for global).
# The site key is ``f_lasti`` for accesses in the kernel itself, or a registered number (>= 2**20)
# for accesses in device functions (innermost frame plus its callers).  Everything else (sites,
# occurrences, warps, costs, races, divergence) is worked out with NumPy for many blocks at once, in
# ``flush``; the counting there follows course.analysis exactly (tests check the two agree).

_LD, _ST, _ATOM = 0, 1, 2
_UNSET = object()
_OPNAME = ("ld", "st", "atom")
_FAR = 1 << 20  # site keys at or above this are registered (code, callers, lasti) triples
_CHUNK = 400_000  # recorded ints after which the blocks so far are analysed (bounds memory)
_LAZY_LINE_EVENTS = 2_000_000  # line events kept for a later divergence report before analysing them now


def _phase_lanes(size):
    return analysis.phase_lanes(size)


class _Desc:
    """What every access to one array (or one field of a structured array) shares: space, size, name, base."""

    __slots__ = ("space", "size", "name", "base", "shape", "itemsize", "split", "shared")

    def __init__(self, arr, split, field=None, size=None):
        self.space = arr.space
        self.shared = arr.space == "shared"
        self.itemsize = arr.root.dtype.itemsize
        self.size = arr.a.dtype.itemsize if field is None else arr.a.dtype.fields[field][0].itemsize
        if size is not None:
            self.size = size
        self.name = arr.name if not field else f"{arr.name}.{field}"
        self.base = arr.base_addr
        self.shape = arr.root.shape
        self.split = split


class _Recorder:
    """The hooks object handed to the engine: records accesses, then analyses each block as it ends."""

    def __init__(self, kernel_code, detail_blocks, lines):
        self.kcode = kernel_code
        self.detail_blocks = detail_blocks  # None: every block; else a set of (x, y, z)
        self.flat: list = []  # five ints per access (see above)
        self.bar_marks: list = []  # access count at each barrier release: the barrier epochs
        self.cur = [None]  # [the engine's module of this launch]: cur[0]._ts is the running thread
        self.user_ids = frozenset()  # id() of the kernel's and device functions' code objects
        self.lines_on = lines
        self.line_events: list = []  # flat (tid, line) pairs (the sys.settrace fallback)
        self.thread_lines: list = []  # (tid, [line, line, ...]) per thread of the running block (markers)
        self.line_arrays: list = []  # (tids, lines) NumPy pairs of the blocks not yet analysed
        self.n_line = 0  # line events in line_arrays
        self.pending_div: list = []  # (events, block index per event, blocks) awaiting the divergence analysis
        self.pending_n = 0
        self.line_weights: dict = {}  # marker line -> source lines it stands for
        self.descs: list = []
        self.desc_ids: dict = {}
        self.far_keys: dict = {}  # (id(code), callers, lasti) -> key >= _FAR
        self.far_list: list = []  # key - _FAR -> (code, callers, lasti)
        # aggregates over the whole launch
        self.site_stats: dict = {}  # (space, op, site) -> [requests, cost, worst, ideal, names, size]
        self.kept: dict = {}  # block -> dict of NumPy columns (detail blocks only)
        self._kept_rows: dict = {}
        self.races: dict = {}
        self.div_steps = 0
        self.div_active = 0
        self.branches: dict = {}  # line -> [warp executions, divergent ones, {next line: lanes}]
        self.branch_events: list = []
        self.warp_steps: dict = {}
        self.chunk: list = []  # (block, first access, end, first line event, end) of blocks not yet analysed
        self.nthreads = 0
        self._start = (0, 0)
        self.arrays: dict = {}  # (space, base) -> (name, root shape, itemsize)
        self.array_class = _make_array_class(self)
        # what the GPU compiler merges (course.compiler): set up by trace()
        self.compiler_mode = None  # None: use facts when they can be had; False: never; True: required
        self.compiler_job = None  # (fingerprint, spec) of the kernel and its argument types
        self.compiler_why = ""
        self._facts = _UNSET
        self._widths: dict = {}
        self.vector_candidates: set = set()  # sites with runs the compiler could merge
        self.vector_merged: set = set()  # sites whose runs were merged (the compiler did)

    # ---- engine hooks
    def begin_block(self, block):
        st = _engine._state
        self.cur[0] = st.module
        self.user_ids = frozenset(id(c) for c in st.launch.user_codes)
        self.nthreads = st.launch.blockdim[0] * st.launch.blockdim[1] * st.launch.blockdim[2]
        self._start = (len(self.flat) // 5, self.n_line)

    def on_barrier(self, block):
        self.bar_marks.append(len(self.flat) // 5)

    def end_block(self, block):
        self._collect_lines()
        self.chunk.append((block, self._start[0], len(self.flat) // 5, self._start[1], self.n_line))
        if len(self.flat) + 2 * self.n_line > _CHUNK:
            self.flush()

    def flush(self):
        """Analyse the blocks recorded so far (NumPy works best on many blocks at once)."""
        if not self.chunk:
            return
        n = len(self.flat) // 5
        if n:
            raw = np.fromiter(self.flat, np.int64, 5 * n).reshape(n, 5)
            bi = np.repeat(np.arange(len(self.chunk)), [c[2] - c[1] for c in self.chunk])
            self._process(raw, bi)
        if self.lines_on and self.line_arrays:
            ev = np.stack([np.concatenate([t for t, _ in self.line_arrays]),
                           np.concatenate([ln for _, ln in self.line_arrays])], axis=1)
            bi = np.repeat(np.arange(len(self.chunk)), [c[4] - c[3] for c in self.chunk])
            # analysed when Report.divergence() asks (most uses never do), unless too many pile up
            self.pending_div.append((ev, bi, [c[0] for c in self.chunk]))
            self.pending_n += len(ev)
            if self.pending_n > _LAZY_LINE_EVENTS:
                self.drain_divergence()
        self.line_arrays.clear()
        self.n_line = 0
        del self.flat[:]
        del self.line_events[:]
        del self.bar_marks[:]
        del self.chunk[:]

    def new_thread_lines(self):
        """Called once by each thread of the instrumented kernel: the ``append`` its line markers call."""
        lines: list = []
        self.thread_lines.append((self.cur[0]._ts.tid, lines))
        return lines.append

    def _collect_lines(self):
        """The block's line events as NumPy (tids, lines): per-thread lists, or the fallback's flat pairs."""
        tl = self.thread_lines
        if tl:
            lens = np.fromiter((len(x) for _, x in tl), np.int64, len(tl))
            total = int(lens.sum())
            if total:
                lines = np.fromiter(itertools.chain.from_iterable(x for _, x in tl), np.int64, total)
                tids = np.repeat(np.fromiter((t for t, _ in tl), np.int64, len(tl)), lens)
                self.line_arrays.append((tids, lines))
                self.n_line += total
            tl.clear()
        if self.line_events:
            ev = np.fromiter(self.line_events, np.int64, len(self.line_events)).reshape(-1, 2)
            self.line_arrays.append((ev[:, 0].copy(), ev[:, 1].copy()))
            self.n_line += len(ev)
            del self.line_events[:]

    def _keep(self, block):
        return self.detail_blocks is None or block in self.detail_blocks

    # ---- registries
    def desc_of(self, arr, field=None, size=None):
        """The descriptor of an array's accesses; with ``field``, of one field of a structured array ("" : the
        whole record), and ``size``, of accesses that many bytes wide (a packed record moves byte by byte)."""
        key = (arr.space, arr.base_addr, arr.name, arr.a.dtype.str, field, size)
        d = self.desc_ids.get(key)
        if d is None:
            split = field is None and arr.a.dtype.kind == "c" and bool(SPLIT_COMPLEX.get(arr.space))
            d = self.desc_ids[key] = len(self.descs)
            desc = _Desc(arr, split, field or None, size)
            self.descs.append(desc)
            self.arrays.setdefault((desc.space, desc.base), (arr.name, desc.shape, desc.itemsize))
        return d

    def far_key(self, code, callers, lasti):
        k = (id(code), callers, lasti)
        v = self.far_keys.get(k)
        if v is None:
            v = self.far_keys[k] = _FAR + len(self.far_list)
            self.far_list.append((code, callers, lasti))
        return v

    def _site_for(self, key4):
        key, part = key4 >> 2, key4 & 3
        if key < _FAR:
            return _site_id(self.kcode, key, part)
        code, callers, lasti = self.far_list[key - _FAR]
        return _site_id((code, callers) if callers else code, lasti, part)

    # ---- analysis of a chunk of blocks
    def _process(self, raw, bi):
        D, K, T, A, WS = raw[:, 0], raw[:, 1], raw[:, 2], raw[:, 3], raw[:, 4]
        n = len(D)
        descs = self.descs
        dsh = np.array([d.shared for d in descs], dtype=np.int64)
        dsz = np.array([d.size for d in descs], dtype=np.int64)
        dsp = np.array([d.split for d in descs], dtype=bool)
        di = D >> 2
        op = D & 3
        shared = dsh[di]
        size = dsz[di]
        # barrier epoch: barriers released before the access (only compared inside one block)
        epoch = np.searchsorted(np.asarray(self.bar_marks, dtype=np.int64), np.arange(n), side="right")
        part = np.zeros(n, dtype=np.int64)
        split = dsp[di]
        if split.any():  # one complex access -> real part, then imaginary part
            rep = 1 + split.astype(np.int64)
            idx = np.repeat(np.arange(n), rep)
            sub = np.arange(len(idx)) - (np.cumsum(rep) - rep)[idx]
            D, K, T, A, WS, di, op, shared, size, epoch, split, bi = (
                x[idx] for x in (D, K, T, A, WS, di, op, shared, size, epoch, split, bi))
            part = np.where(split, sub + 1, 0)
            size = np.where(split, size // 2, size)
            A = A + np.where(part == 2, size, 0)
            n = len(D)
        # sites: raw keys -> site ids (two raw keys may be one site, see _owner_table)
        key4 = K * 4 + part
        top = int(key4.max())
        if top < (1 << 22):  # the usual case: a lookup table instead of a sort
            uk = np.nonzero(np.bincount(key4, minlength=top + 1))[0]
            lut = np.zeros(top + 1, dtype=np.int64)
            lut[uk] = [self._site_for(int(k)) for k in uk]
            site = lut[key4]
        else:
            uk, inv = np.unique(key4, return_inverse=True)
            site = np.array([self._site_for(int(k)) for k in uk], dtype=np.int64)[inv]
        gt = bi * self.nthreads + T  # thread, unique in the chunk
        if self.compiler_mode is not False and shared.any():
            keep, size = self._merge_vectors(gt, site, op, shared, size, A, epoch)
            if keep is not None:
                D, K, T, A, WS, di, op, shared, size, epoch, bi, site, part, gt = (
                    x[keep] for x in (D, K, T, A, WS, di, op, shared, size, epoch, bi, site, part, gt))
                n = len(D)
        us_, sc = np.unique(site, return_inverse=True)  # compact site numbers for packing keys
        occ = _occurrence(gt * (int(sc.max()) + 1) + sc)
        # warp-level instructions: the same (block, warp, site, occurrence, op, space)
        gi, G, first = _group_ids([occ, sc, _warp_of(gt, self.nthreads), op * 2 + shared], first=True)
        gsize, gsh, gop, gsite, gdi = size[first], shared[first], op[first], site[first], di[first]
        nact = np.bincount(gi, minlength=G)
        cost = np.zeros(G, dtype=np.int64)
        ideal = np.zeros(G, dtype=np.int64)
        g = shared == 0
        if g.any():
            cost += _global_cost(gi[g], A[g], size[g], G)
            ideal += np.where(gsh == 0, -(-nact * gsize // analysis.SECTOR_BYTES), 0)
        s = ~g
        if s.any():
            c, i = _shared_cost(gi[s], A[s], size[s], T[s] & 31, G)
            cost += c
            ideal += i
        # per site
        si, S, sfirst = _group_ids([np.searchsorted(us_, gsite), gop * 2 + gsh], first=True)
        req = np.bincount(si, minlength=S)
        csum = np.bincount(si, weights=cost, minlength=S)
        isum = np.bincount(si, weights=ideal, minlength=S)
        cmax = np.zeros(S, dtype=np.int64)
        np.maximum.at(cmax, si, cost)
        names: dict = defaultdict(set)
        for a, b in set(zip(si.tolist(), gdi.tolist())):
            names[a].add(descs[b].name)
        stats = self.site_stats
        for j in range(S):
            f = sfirst[j]
            key = ("shared" if gsh[f] else "global", _OPNAME[gop[f]], int(gsite[f]))
            st = stats.get(key)
            if st is None:
                stats[key] = st = [0, 0, 0, 0, set(), int(gsize[f])]
            st[0] += int(req[j])
            st[1] += int(csum[j])
            st[2] = max(st[2], int(cmax[j]))
            st[3] += int(isum[j])
            st[4] |= names[j]
        cols = dict(op=op, shared=shared, di=di, site=site, tid=T, occ=occ, addr=A, size=size, epoch=epoch, ws=WS,
                    bi=bi)
        bounds = np.searchsorted(bi, np.arange(len(self.chunk) + 1))
        for j, c in enumerate(self.chunk):
            if self._keep(c[0]) and bounds[j] < bounds[j + 1]:
                self.kept[c[0]] = {k: v[bounds[j]:bounds[j + 1]] for k, v in cols.items()}
        if s.any() and (op[s] != _LD).any():
            self._find_races(cols, s)

    def _merge_vectors(self, gt, site, op, shared, size, A, epoch):
        """Merge a thread's neighbouring shared accesses where the GPU compiler emits one wide instruction.

        A *candidate* is a run of 4- or 8-byte accesses by one thread at one site (one source
        instruction), one after another in that thread's order and in one barrier epoch, at addresses
        ``a, a + s, …`` that fill an aligned 8- or 16-byte block.  ``ptxas`` may turn such a run into one
        ``LDS.64``/``LDS.128`` (``STS`` for stores) — or may not (course/compiler.py says why no rule on
        addresses can decide), so candidates are merged only on source lines where the compiled kernel
        holds vector shared instructions of that width.  Returns (rows to keep, or None, and the sizes).
        """
        cand = np.nonzero(shared.astype(bool) & (op != _ATOM) & ((size == 4) | (size == 8)))[0]
        if len(cand) < 2:
            return None, size
        # per thread, per site, in program order (a stable sort on one combined key)
        cs = site[cand]
        cs = cs - cs.min()
        order = cand[np.argsort(gt[cand] * (int(cs.max()) + 1) + cs, kind="stable")]
        o_gt, o_site, o_op, o_ep, o_a, o_sz = (x[order] for x in (gt, site, op, epoch, A, size))
        m = len(order)
        taken = np.zeros(m, dtype=bool)
        runs = []  # (width, positions in `order` of the runs' first accesses)
        for width in (16, 8):
            need = width // o_sz  # accesses one run of this width takes: 2 or 4
            ok = (o_a % width == 0) & (width > o_sz) & ~taken
            for j in range(1, 4):  # the j-th access after p continues p's run (where p's run needs one)
                cont = np.zeros(m, dtype=bool)
                if j < m:
                    cont[:-j] = ((o_gt[j:] == o_gt[:-j]) & (o_site[j:] == o_site[:-j]) & (o_op[j:] == o_op[:-j])
                                 & (o_ep[j:] == o_ep[:-j]) & (o_a[j:] == o_a[:-j] + j * o_sz[:-j]) & ~taken[j:])
                ok &= cont | (j >= need)
            starts = np.nonzero(ok)[0]
            if len(starts):
                runs.append((width, starts))
                taken[starts] = True
                for j in range(1, 4):
                    taken[starts[j < need[starts]] + j] = True
        if not runs:
            return None, size
        for _w, starts in runs:
            self.vector_candidates.update(np.unique(o_site[starts]).tolist())
        facts = self.compiler_facts()
        if not facts or "lines" not in facts:
            return None, size
        size = size.copy()
        drop = np.zeros(len(size), dtype=bool)
        for width, starts in runs:
            pairs = o_site[starts] * 4 + o_op[starts]
            up, inv = np.unique(pairs, return_inverse=True)
            good = np.array([width in self._vector_widths(int(p) >> 2, int(p) & 3) for p in up.tolist()])
            acc = good[inv.reshape(-1)]
            if not acc.any():
                continue
            st = starts[acc]
            size[order[st]] = width
            need = width // o_sz[st]
            for j in range(1, 4):
                drop[order[st[j < need] + j]] = True
            self.vector_merged.update(np.unique(o_site[st]).tolist())
        if not drop.any():
            return None, size
        return np.nonzero(~drop)[0], size

    def _vector_widths(self, sid, op):
        key = (sid, op)
        w = self._widths.get(key)
        if w is None:
            w = self._widths[key] = _compiler.vector_widths(self.compiler_facts(), site_code(sid).co_filename,
                                                            site_line(sid), store=op == _ST)
        return w

    def vector_merged_known(self):
        """True when compiler facts were consulted, so unmerged candidates are known not to be merged."""
        return self._facts is not _UNSET and bool(self._facts) and "lines" in self._facts

    def compiler_facts(self):
        """What ptxas made of this kernel (course.compiler), looked up or compiled once; None if unknown."""
        if self._facts is _UNSET:
            self._facts = None
            if self.compiler_job is not None and self.compiler_mode is not False:
                key, spec = self.compiler_job
                with _engine.clock_paused():  # a compile is not the kernel's time
                    self._facts = _compiler.facts_for(key, spec)
                if self._facts is None:
                    self.compiler_why = _compiler.why(key)
                    if self.compiler_mode is True:
                        raise _compiler.CompilerUnavailable(
                            f"trace(..., compiler=True): no compiler facts for this kernel: {self.compiler_why}")
                elif "error" in self._facts:
                    self.compiler_why = "the kernel did not compile for the GPU: " + self._facts["error"]
        return self._facts

    def rows(self, block):
        """Normalised records of a kept block: (op, space, site, tid, occ, addr, size, name, epoch, ws, base)."""
        r = self._kept_rows.get(block)
        if r is None:
            cols = self.kept[block]
            r = self._kept_rows[block] = self._rows(cols, np.arange(len(cols["op"])))
        return r

    def _rows(self, cols, idx):
        descs = self.descs
        out = []
        op, di, site, tid, occ, addr, size, epoch, ws = (
            cols[k][idx].tolist() for k in ("op", "di", "site", "tid", "occ", "addr", "size", "epoch", "ws"))
        for j in range(len(op)):
            d = descs[di[j]]
            out.append((_OPNAME[op[j]], d.space, site[j], tid[j], occ[j], addr[j], size[j], d.name, epoch[j], ws[j],
                        d.base))
        return out

    def _find_races(self, cols, smask):
        # accesses to one 4-byte word in one barrier epoch of one block; a race needs two threads and a write
        idx = np.nonzero(smask)[0]
        a, sz = cols["addr"][idx], cols["size"][idx]
        wlo = a >> 2
        nw = ((a + sz - 1) >> 2) - wlo + 1
        rep = np.repeat(np.arange(len(idx)), nw)
        word = wlo[rep] + (np.arange(len(rep)) - (np.cumsum(nw) - nw)[rep])
        row = idx[rep]
        wi, W = _group_ids([cols["bi"][row], cols["epoch"][row], word])
        writes = np.bincount(wi, weights=(cols["op"][row] != _LD), minlength=W)
        tid = cols["tid"][row]
        tmin = np.full(W, 1 << 40, dtype=np.int64)
        tmax = np.full(W, -1, dtype=np.int64)
        np.minimum.at(tmin, wi, tid)
        np.maximum.at(tmax, wi, tid)
        cand = (writes > 0) & (tmin != tmax)
        if not cand.any():
            return
        sel = np.nonzero(cand[wi])[0]
        groups: dict = defaultdict(list)
        recs = self._rows(cols, row[sel])
        blocks = cols["bi"][row[sel]].tolist()
        for w, b, r in zip(wi[sel].tolist(), blocks, recs):
            groups[w].append((b, r))
        for lst in groups.values():
            block = self.chunk[lst[0][0]][0]
            by_site: dict = {}
            for _b, r in lst:
                by_site.setdefault((r[_SITE], r[_OP]), []).append(r)
            for (s1, op1), l1 in by_site.items():
                if op1 == "ld":
                    continue
                for (s2, op2), l2 in by_site.items():
                    if op1 == "atom" and op2 == "atom":
                        continue
                    pair = _first_racing_pair(l1, l2)
                    if pair is None:
                        continue
                    key = tuple(sorted([(s1, op1), (s2, op2)], key=lambda x: (site_line(x[0]), x[1])))
                    race = self.races.get(key)
                    if race is None:
                        self.races[key] = [block, pair[0], pair[1], 1]
                    else:
                        race[3] += 1

    def drain_divergence(self):
        """Analyse the line events kept for the divergence report."""
        for ev, bi, blocks in self.pending_div:
            self._divergence(ev, bi, blocks)
        self.pending_div.clear()
        self.pending_n = 0

    def _divergence(self, ev, bi, blocks):
        T, L = ev[:, 0], ev[:, 1]
        n = len(T)
        gt = bi * self.nthreads + T
        order = np.argsort(gt, kind="stable")  # each thread's lines, in the order it ran them
        gts, Ls = gt[order], L[order]
        nxt = np.full(n, -1, dtype=np.int64)
        nxt[:-1] = np.where(gts[1:] == gts[:-1], Ls[1:], -1)
        k = _occurrence(gts * (int(Ls.max()) + 1) + Ls)
        wg = gts >> 5  # warps, unique in the chunk (nthreads is a multiple of 32 or warps end with blocks)
        if self.nthreads % 32:
            wg = (gts // self.nthreads) * ((self.nthreads + 31) // 32) + (gts % self.nthreads) // 32
        si, S, sfirst = _group_ids([wg, Ls, k], first=True)
        active = np.bincount(si, minlength=S)
        sline = Ls[sfirst]
        weight = self._weights(sline)  # a marker may stand for a run of several source lines
        self.div_steps += int(weight.sum())
        self.div_active += int((active * weight).sum())
        # per warp: steps, lanes summed, lanes present
        sw = wg[sfirst]
        uw, wi = np.unique(sw, return_inverse=True)
        wsteps = np.bincount(wi, weights=weight)
        wact = np.bincount(wi, weights=active * weight)
        ut = np.unique(gts)
        lanes = np.bincount(np.searchsorted(uw, _warp_of(ut, self.nthreads)), minlength=len(uw))
        nw_per_block = (self.nthreads + 31) // 32
        for j, w in enumerate(uw.tolist()):
            block = blocks[w // nw_per_block]
            self.warp_steps[(block, w % nw_per_block)] = (int(wsteps[j]), int(wact[j]), int(lanes[j]))
        # where the lanes of each step went next
        pi, P, pfirst = _group_ids([si, nxt + 1], first=True)
        pcount = np.bincount(pi, minlength=P)
        pstep = si[pfirst]
        nsides = np.bincount(pstep, minlength=S)
        for line, c in zip(*np.unique(sline, return_counts=True)):
            b = self.branches.get(int(line))
            if b is None:
                self.branches[int(line)] = b = [0, 0, defaultdict(int)]
            b[0] += int(c)
        div = nsides > 1
        if div.any():
            per_step: dict = defaultdict(dict)
            for st, nx, c in zip(pstep.tolist(), (nxt[pfirst]).tolist(), pcount.tolist()):
                if div[st]:
                    per_step[st][None if nx < 0 else nx] = c
            for st, sides in per_step.items():
                line = int(sline[st])
                b = self.branches[line]
                b[1] += 1
                for nx, c in sides.items():
                    b[2][nx] += c
                w = int(sw[st])
                block = blocks[w // nw_per_block]
                if self._keep(block):
                    self.branch_events.append((line, block, w % nw_per_block, int(k[sfirst[st]]), sides))


    def _weights(self, lines):
        w = self.line_weights
        if not w:
            return np.ones(len(lines), dtype=np.int64)
        table = np.ones(max(int(lines.max()), max(w)) + 1, dtype=np.int64)
        for line, v in w.items():
            table[line] = v
        return table[lines]


def _warp_of(gt, nthreads):
    return (gt // nthreads) * ((nthreads + 31) // 32) + (gt % nthreads) // 32


def _group_ids(cols, first=False):
    """Number the distinct rows of non-negative int columns: (id per row, how many ids[, first row of each id])."""
    n = len(cols[0])
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return (z, 0, z) if first else (z, 0)
    widths = [max(int(c.max()), 1).bit_length() for c in cols]
    if sum(widths) <= 62:
        key = cols[0].astype(np.int64, copy=True)
        for c, w in zip(cols[1:], widths[1:]):
            key <<= w
            key |= c
        if first:
            u, idx, inv = np.unique(key, return_index=True, return_inverse=True)
            return inv.reshape(-1), len(u), idx
        u, inv = np.unique(key, return_inverse=True)
        return inv.reshape(-1), len(u)
    order = np.lexsort(cols[::-1])
    change = np.zeros(n, dtype=bool)
    for c in cols:
        cs = c[order]
        change[1:] |= cs[1:] != cs[:-1]
    ids = np.cumsum(change)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = ids
    count = int(ids[-1]) + 1
    if first:
        fidx = np.full(count, n, dtype=np.int64)
        np.minimum.at(fidx, inv, np.arange(n))
        return inv, count, fidx
    return inv, count


def _occurrence(gid):
    """For each element: how many earlier elements have the same group id (0 for the first)."""
    n = len(gid)
    order = np.argsort(gid, kind="stable")
    sk = gid[order]
    start = np.ones(n, dtype=bool)
    start[1:] = sk[1:] != sk[:-1]
    pos = np.arange(n)
    first = np.maximum.accumulate(np.where(start, pos, 0))
    occ = np.empty(n, dtype=np.int64)
    occ[order] = pos - first
    return occ


def _global_cost(gi, addr, size, G):
    """Distinct 32-byte sectors per warp-level instruction (the rule of analysis.global_sectors)."""
    lo = addr // analysis.SECTOR_BYTES
    ns = (addr + size - 1) // analysis.SECTOR_BYTES - lo + 1
    if (ns > 1).any():
        rep = np.repeat(np.arange(len(lo)), ns)
        sec = lo[rep] + (np.arange(len(rep)) - (np.cumsum(ns) - ns)[rep])
        gi = gi[rep]
    else:
        sec = lo
    sec = sec - sec.min()
    w = max(int(sec.max()), 1).bit_length()
    if w + max(G, 1).bit_length() > 62:  # pragma: no cover - sectors spread over 2**40 bytes
        _, _, firsts = _group_ids([gi, sec], first=True)
        return np.bincount(gi[firsts], minlength=G)
    u = np.unique((gi << w) | sec)  # distinct (instruction, sector) pairs
    return np.bincount(u >> w, minlength=G)


def _shared_cost(gi, addr, size, lane, G):
    """Wavefronts and ideal wavefronts per warp-level instruction (the rule of analysis.shared_wavefronts)."""
    top = int(size.max()) + 1
    pl = np.array([_phase_lanes(int(s)) for s in range(top)], dtype=np.int64)
    # analysis.MERGED_PHASES: lanes whose phases may share one wavefront (a group); other sizes: one
    # group per phase, which never merges
    span = np.array([analysis.MERGED_PHASES.get(int(s), analysis.WARP_SIZE) for s in range(top)], dtype=np.int64)
    mergeable = np.array([int(s) in analysis.MERGED_PHASES for s in range(top)], dtype=bool)
    phase = lane // pl[size]
    group = lane // span[size]
    nph = -(-analysis.WARP_SIZE // int(pl[np.unique(size)].min()))  # room for every phase of an instruction
    ngr = analysis.WARP_SIZE // int(span[np.unique(size)].min())
    wlo = addr >> 2
    nw = ((addr + size - 1) >> 2) - wlo + 1
    gg = gi * ngr + group  # (instruction, group)
    if (nw > 1).any():
        rep = np.repeat(np.arange(len(wlo)), nw)
        word = wlo[rep] + (np.arange(len(rep)) - (np.cumsum(nw) - nw)[rep])
        gp = gg[rep] * nph + phase[rep]
    else:
        word = wlo
        gp = gg * nph + phase
    base = int(word.min()) & ~(analysis.BANKS - 1)  # keeps word % 32 = bank
    word = word - base
    w = max(int(word.max()), 1).bit_length()
    u = np.unique((gp << w) | word)  # distinct words per (instruction, group, phase)
    u2, cnt = np.unique(((u >> w) << 5) | (u & (analysis.BANKS - 1)), return_counts=True)  # words per bank
    mx = np.zeros(G * ngr * nph, dtype=np.int64)
    np.maximum.at(mx, u2 >> 5, cnt)
    mx = mx.reshape(G * ngr, nph)
    gwaves, gideal = mx.sum(axis=1), (mx > 0).sum(axis=1)  # per (instruction, group), phases added
    isize = np.zeros(G * ngr, dtype=np.int64)
    isize[gg] = size
    cand = mergeable[isize] & (gwaves > 0)
    if cand.any():
        words_sum = np.bincount((u >> w) // nph, minlength=G * ngr)  # distinct words, counted per phase
        uu = np.unique((((u >> w) // nph) << w) | (u & ((1 << w) - 1)))  # distinct words per group, phases together
        ub, ucnt = np.unique(((uu >> w) << 5) | (uu & (analysis.BANKS - 1)), return_counts=True)
        umax = np.zeros(G * ngr, dtype=np.int64)
        np.maximum.at(umax, ub >> 5, ucnt)
        fits = cand & (words_sum * analysis.BANK_BYTES <= analysis.WAVEFRONT_BYTES)
        gwaves = np.where(fits & (umax <= 1), 1, gwaves)
        # the conflict-free minimum (analysis.shared_ideal_wavefronts): one per fitting group where the
        # group is a half warp (16-byte); 8-byte groups span the warp, their minimum stays one per phase
        same = np.array([analysis.IDEAL_GROUP_LANES.get(int(s)) == analysis.MERGED_PHASES.get(int(s))
                         for s in range(top)], dtype=bool)
        gideal = np.where(fits & same[isize], 1, gideal)
    waves = gwaves.reshape(G, ngr).sum(axis=1)
    return waves, np.minimum(gideal.reshape(G, ngr).sum(axis=1), waves)


def _cost(space, addrs, size):
    if space == "shared":
        return analysis.shared_wavefronts(addrs, size), analysis.shared_ideal_wavefronts(addrs, size)
    n = sum(1 for a in addrs if a is not None)
    return analysis.global_sectors(addrs, size), analysis.global_ideal_sectors(n, size)


def _first_racing_pair(writes, others):
    for w in writes:
        for o in others:
            # lanes of one warp separated by a warp-level sync (syncwarp, shfl …) are ordered;
            # different bytes of one word (1- and 2-byte elements) do not race
            if o[_TID] != w[_TID] and not (o[_TID] >> 5 == w[_TID] >> 5 and o[_WSYNC] != w[_WSYNC]) \
                    and w[_ADDR] < o[_ADDR] + o[_SIZE] and o[_ADDR] < w[_ADDR] + w[_SIZE]:
                return w, o
    return None


def _offset(addr, idx, strides):
    """addr + the byte offset of element ``idx`` (an int, a NumPy integer or a tuple of them)."""
    if idx.__class__ is tuple:
        if len(idx) == 2:
            i, j = idx
            return addr + (i if i.__class__ is int else int(i)) * strides[0] + (j if j.__class__ is int else int(j)) * strides[1]
        for i, s in zip(idx, strides):
            addr += (i if i.__class__ is int else int(i)) * s
        return addr
    return addr + int(idx) * strides[0]


def _make_array_class(rec: _Recorder):
    """A KernelArray subclass whose element accesses append raw records to ``rec.flat``."""
    extend = rec.flat.extend
    cur = rec.cur
    getframe = sys._getframe
    numbers = _engine._NUMBER_TYPES  # NumPy scalar types: stored as they are
    kcode = rec.kcode
    traced = _TRACED_SPACES

    def init(arr):
        # per view: (descriptor * 4, byte address of the view's first element, strides, shared?)
        if arr.space not in traced:
            return None
        d = rec.desc_of(arr)
        o = arr.base_addr + (arr.a.ctypes.data - arr.root.ctypes.data)
        st = arr.a.strides
        # last: may a full index read the element straight from NumPy (a plain dtype, 1 or 2 dimensions)?
        plain = arr.a.dtype.fields is None and arr.a.ndim in (1, 2)
        return (d << 2, o, st, arr.space == "shared", st[0] if st else 0, st[1] if len(st) > 1 else 0,
                arr.a.ndim if plain else 0)

    def far(frame):
        # the innermost kernel or device-function frame; device functions carry their call sites
        user = rec.user_ids
        while frame is not None and id(frame.f_code) not in user:
            frame = frame.f_back
        if frame is None:  # pragma: no cover - accesses always come from kernel code
            return 0
        code = frame.f_code
        if code is kcode:
            return frame.f_lasti
        callers = []
        f = frame.f_back
        while f is not None and id(f.f_code) in user:
            callers.append((f.f_code, _owner_table(f.f_code)[f.f_lasti >> 1]))
            f = f.f_back
        return rec.far_key(code, tuple(callers), frame.f_lasti)

    def record(arr, tr, idx, op, frame):
        d, o, strides, shared = tr[:4]
        addr = o + idx * strides[0] if idx.__class__ is int else _offset(o, idx, strides)
        key = frame.f_lasti if frame.f_code is kcode else far(frame)
        ts = cur[0]._ts
        extend((d + op, key, ts.tid, addr, ts.warp_syncs if shared else 0))

    base = _engine.KernelArray
    get = base._get

    class TracedArray(base):
        """A kernel array that reports each element access to the tracer."""

        __slots__ = ("_tr",)

        def __getitem__(self, idx):
            try:
                tr = self._tr
            except AttributeError:
                tr = self._tr = init(self)
            if tr is None:
                return get(self, idx)
            # the body of record(), inlined: this runs for every load
            d, addr, strides, shared, s0, s1, fast = tr
            c = idx.__class__
            if c is int and fast == 1 and idx >= 0:
                try:  # the engine's checks, for the commonest case; anything unusual goes through them
                    v = self.a[idx]
                except IndexError:
                    return get(self, idx)
                addr += idx * s0
            elif c is tuple and fast == 2 and len(idx) == 2 and idx[0].__class__ is int and idx[1].__class__ is int \
                    and idx[0] >= 0 and idx[1] >= 0:
                try:
                    v = self.a[idx]
                except IndexError:
                    return get(self, idx)
                addr += idx[0] * s0 + idx[1] * s1
            else:
                v = get(self, idx)
                if v.__class__ is TracedArray:
                    return v  # a row view or slice: its elements are recorded when they are accessed
                if c is int:
                    addr += idx * s0
                else:  # tuples, NumPy integers (which must not overflow in int32 arithmetic)
                    addr = _offset(addr, idx, strides)
                if v.__class__ is Record and not analysis.is_vector_dtype(self.a.dtype):
                    # p[i] of a structured array: on the GPU p[i].x loads the field alone, so the
                    # record reports its field accesses, not this one
                    return TracedRecord(v._v, self, addr)
            frame = getframe(1)
            ts = cur[0]._ts
            extend((d, frame.f_lasti if frame.f_code is kcode else far(frame), ts.tid, addr,
                    ts.warp_syncs if shared else 0))
            return v

        def __setitem__(self, idx, value):
            try:
                tr = self._tr
            except AttributeError:
                tr = self._tr = init(self)
            vc = value.__class__
            if tr is not None and (vc is float or vc is int or vc in numbers):
                # the commonest store, a number at a full index of a plain 1-D or 2-D array: straight to
                # NumPy (anything unusual, or an index out of range, goes through the engine's checks)
                d, addr, strides, shared, s0, s1, fast = tr
                c = idx.__class__
                if c is int and fast == 1 and idx >= 0:
                    off = idx * s0
                elif c is tuple and fast == 2 and len(idx) == 2 and idx[0].__class__ is int \
                        and idx[1].__class__ is int and idx[0] >= 0 and idx[1] >= 0:
                    off = idx[0] * s0 + idx[1] * s1
                else:
                    off = None
                if off is not None:
                    try:
                        self.a[idx] = value
                    except (IndexError, TypeError, ValueError, OverflowError):
                        self._set(idx, value)
                    frame = getframe(1)
                    ts = cur[0]._ts
                    extend((d + _ST, frame.f_lasti if frame.f_code is kcode else far(frame), ts.tid,
                            addr + off, ts.warp_syncs if shared else 0))
                    return
            self._set(idx, value)
            if vc is TracedRecord:  # a whole record copied: its fields are loaded one by one
                value._note_all(_LD, getframe(1))
            if tr is None:
                return
            a = self.a
            d, addr, strides, shared, s0, s1, _fast = tr
            if idx.__class__ is tuple:
                if len(idx) != a.ndim or slice in map(type, idx):
                    return _record_region(self, idx, getframe(1))
                if len(idx) == 2 and idx[0].__class__ is int and idx[1].__class__ is int:
                    addr += idx[0] * s0 + idx[1] * s1
                else:
                    addr = _offset(addr, idx, strides)
            else:
                if a.ndim != 1 or idx.__class__ is slice:
                    return _record_region(self, idx, getframe(1))
                addr = addr + idx * s0 if idx.__class__ is int else _offset(addr, idx, strides)
            frame = getframe(1)
            ts = cur[0]._ts
            if a.dtype.fields and not analysis.is_vector_dtype(a.dtype):
                return _bytewise(self, addr, _ST, frame)
            extend((d + _ST, frame.f_lasti if frame.f_code is kcode else far(frame), ts.tid, addr,
                    ts.warp_syncs if shared else 0))

        def _atomic(self, idx, fn):
            old = base._atomic(self, idx, fn)
            try:
                tr = self._tr
            except AttributeError:
                tr = self._tr = init(self)
            if tr is not None:
                record(self, tr, idx, _ATOM, getframe(1))
            return old

    Record = _engine._Record

    class TracedRecord(Record):
        """One element of a structured array that reports each field read and write (p.x, p['x'])."""

        __slots__ = ("_arr", "_addr")

        def __init__(self, v, arr, addr):
            object.__setattr__(self, "_v", v)
            object.__setattr__(self, "_arr", arr)
            object.__setattr__(self, "_addr", addr)

        def _note(self, name, op, frame):
            arr = self._arr
            dtype = arr.a.dtype
            fields = dtype.fields
            if arr.space not in traced or not fields or name not in fields:
                return
            addr = self._addr + fields[name][1]
            if dtype.isalignedstruct:  # np.dtype(..., align=True): one access of the field's size
                ts = cur[0]._ts
                extend(((rec.desc_of(arr, name) << 2) + op, frame.f_lasti if frame.f_code is kcode else far(frame),
                        ts.tid, addr, ts.warp_syncs if arr.space == "shared" else 0))
                return
            # a packed record (NumPy's default) has alignment 1 for numba: the GPU code moves a field byte
            # by byte (LDG.E.U8 per byte, seen in the SASS)
            _bytewise(arr, addr, op, frame, name, fields[name][0].itemsize)

        def _note_all(self, op, frame):
            _bytewise(self._arr, self._addr, op, frame)

        def __getattr__(self, name):
            v = Record.__getattr__(self, name)
            self._note(name, _LD, getframe(1))
            return v

        def __setattr__(self, name, value):
            Record.__setattr__(self, name, value)
            self._note(name, _ST, getframe(1))

        def __getitem__(self, key):
            v = Record.__getitem__(self, key)
            if key.__class__ is str:
                self._note(key, _LD, getframe(1))
            return v

        def __setitem__(self, key, value):
            Record.__setitem__(self, key, value)
            if key.__class__ is str:
                self._note(key, _ST, getframe(1))

    def _bytewise(arr, addr, op, frame, field="", nbytes=None):
        # one 1-byte access per byte, in order: a field of a packed record, or ("" field) a whole record
        # copied, which numba's GPU code moves byte by byte aligned or not (32 LDG.E.U8 and 32 STG.E.U8 for
        # a 32-byte record, in the SASS)
        if arr.space not in traced:
            return
        ts = cur[0]._ts
        key = frame.f_lasti if frame.f_code is kcode else far(frame)
        ws = ts.warp_syncs if arr.space == "shared" else 0
        d = (rec.desc_of(arr, field, 1) << 2) + op
        for b in range(arr.a.dtype.itemsize if nbytes is None else nbytes):
            extend((d, key, ts.tid, addr + b, ws))

    def _record_region(arr, idx, frame):
        # a whole row or slice assigned at once: one store per element
        view = arr._view(arr.a[idx])
        tr = view._tr = init(view)
        for j in np.ndindex(view.a.shape):
            record(view, tr, j, _ST, frame)

    return TracedArray


# --------------------------------------------------------------------------------------------------
# Line events for divergence
#
# The kernel's source is re-compiled with a marker before every statement (and in every loop
# condition) that appends (thread, line) to a list: far cheaper than sys.settrace, which slows every
# Python call while it is on.  When the source is not available, sys.settrace does the same job.

_TID_FN, _TIDVAR = "__course_trace_tid__", "__course_tid__"


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


_INSTRUMENTED: dict = {}  # id(original code) -> (original code, instrumented code or None, weights)


def _marker_line(node):
    """The line a marker statement made by _Marker records, or None for any other statement."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
            and node.value.func.id == _TIDVAR:
        return node.value.args[0].value
    return None


def _instrument(fn):
    """A copy of kernel ``fn`` whose statements report (thread, line), and the line weights; None if no source."""
    hit = _INSTRUMENTED.get(id(fn.__code__))
    if hit is None or hit[0] is not fn.__code__:
        made = _instrumented_code(fn)
        hit = _INSTRUMENTED[id(fn.__code__)] = (fn.__code__,) + (made if made else (None, None))
    code, weights = hit[1], hit[2]
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


def _instrumented_code(fn):
    """Compile the marked copy of ``fn``'s source: (code object, line weights), or None."""
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
    fdef.body = m.body(fdef.body)
    prologue = ast.parse(f"{_TIDVAR} = {_TID_FN}()").body[0]
    for n in ast.walk(prologue):
        if hasattr(n, "lineno"):
            n.lineno = n.end_lineno = first
    fdef.body[:0] = doc + [prologue]
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


def _settrace_lines(rec: _Recorder):
    """The fallback: a sys.settrace function recording (thread, line) for kernel frames."""
    extend = rec.line_events.extend
    cur = rec.cur

    def local(frame, event, arg):
        if event == "line":
            extend((cur[0]._ts.tid, frame.f_lineno))
        return local

    def glob(frame, event, arg):
        if id(frame.f_code) in rec.user_ids:
            return local
        return None

    return glob


# --------------------------------------------------------------------------------------------------
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
    """Two shared-memory accesses of different threads of one block, at least one a write, no barrier between."""

    block: tuple
    address: int  # byte offset in the block's shared memory
    array: str
    first: dict  # {'line', 'source', 'op', 'thread'}: the write
    second: dict  # the other access (a read or another write)
    count: int  # how many (epoch, word) places this pair of lines raced on, over all blocks

    def __str__(self):
        f, s = self.first, self.second
        return (
            f"race on {self.array} (shared byte {self.address}) in block {self.block}: "
            f"{f['op']} by thread {f['thread']} at line {f['line']} `{f['source']}` and "
            f"{s['op']} by thread {s['thread']} at line {s['line']} `{s['source']}` "
            f"with no syncthreads() between ({self.count} place(s))"
        )


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

    def __init__(self, rec: _Recorder, kernel_name, griddim, blockdim, seconds, lines):
        self._rec = rec
        self.kernel = kernel_name
        self.griddim = griddim
        self.blockdim = blockdim
        self.seconds = seconds
        self._lines = lines
        self.detail_blocks = sorted(rec.kept)

    @property
    def compiler(self) -> dict:
        """What the GPU compiler's view added to the counts (course.compiler, docs/tracer.md).

        ``facts``: the toolchain whose machine code was read (None: none at hand); ``merged_lines``: source
        lines where the compiler merged a thread's neighbouring shared accesses into one wider instruction
        and the counts follow it; ``unknown_lines``: lines where it could have but no facts were at hand,
        so the counts are the source's; ``why``: why there were no facts.
        """
        rec = self._rec
        f = rec._facts if rec._facts is not _UNSET else None
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
                    line=line, source=_source(code, line), function=code.co_name, space=space, op=_OPS[op],
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
    def warp_accesses(self, block=0) -> list:
        """Every warp-level access of one kept block, in program order of its first lane."""
        blk = self._block_key(block)
        recs = self._rec.rows(blk)
        groups: dict = {}
        first: dict = {}
        for i, r in enumerate(recs):
            key = (r[_SPACE], r[_OP], r[_SITE], r[_TID] >> 5, r[_OCC])
            if key not in groups:
                groups[key] = []
                first[key] = i
            groups[key].append(r)
        return [self._warp_access(blk, key, groups[key]) for key in sorted(groups, key=first.get)]

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
            if r[_TID] >> 5 != warp or r[_OCC] != occurrence or site_line(r[_SITE]) != line:
                continue
            groups.setdefault((r[_SPACE], r[_OP], r[_SITE]), []).append(r)
        return [self._warp_access(blk, (k[0], k[1], k[2], warp, occurrence), g) for k, g in groups.items()]

    def lines_with_accesses(self) -> list:
        """Source lines that made memory accesses (handy for widget menus)."""
        return sorted({r.line for r in self.by_line()})

    def _block_key(self, block):
        gx, gy, gz = _dims(self.griddim)
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

    def _warp_access(self, blk, key, group):
        space, op, site, warp, occ = key
        bx, by, bz = _dims(self.blockdim)
        size = group[0][_SIZE]
        addrs = [None] * 32
        for r in group:
            addrs[r[_TID] & 31] = r[_ADDR]
        passes = analysis.shared_passes(addrs, size) if space == "shared" else [None] * 32
        lanes: list = [None] * 32
        for r in group:
            lane = r[_TID] & 31
            tid = r[_TID]
            thread = (tid % bx, (tid // bx) % by, tid // (bx * by))
            base = r[_BASE]
            name, shape, itemsize = self._rec.arrays.get((space, base), (r[_NAME], (), size))
            offset = r[_ADDR] - base
            try:
                index = tuple(int(i) for i in np.unravel_index(offset // itemsize, shape)) if shape else ()
            except ValueError:
                index = ()
            p = passes[lane]
            lanes[lane] = LaneAccess(
                lane=lane, thread=thread, index=index, addr=int(r[_ADDR]), offset=int(offset),
                bank=analysis.bank_of(r[_ADDR]), sector=analysis.sector_of(r[_ADDR]),
                wavefront=None if p is None else p.wavefront,
            )
        cost, ideal = _cost(space, addrs, size)
        line = site_line(site)
        return WarpAccess(
            line=line, source=_source(site_code(site), line), space=space, op=_OPS[op], array=group[0][_NAME], size=size,
            block=blk, warp=warp, occurrence=occ, lanes=lanes, active_mask=analysis.active_mask(addrs),
            sectors=analysis.global_sectors(addrs, size), wavefronts=cost if space == "shared" else 0, ideal=ideal,
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
            branches.append(Branch(line=line, source=_source(code, line), executions=execs, divergent=div,
                                   sides=named))
        branches.sort(key=lambda b: b.line)
        events = [
            (line, blk, warp, k, {("exit" if n is None else n): c for n, c in sd.items()})
            for line, blk, warp, k, sd in rec.branch_events
        ]
        return Divergence(branches=branches, events=events, steps=rec.div_steps, active_lanes=rec.div_active,
                          warps=dict(rec.warp_steps))

    def races(self) -> list:
        """Shared-memory races (two threads, one address, at least one write, no barrier between): :class:`Race` list."""
        out = []
        bx, by, _bz = _dims(self.blockdim)

        def thread(tid):
            return (tid % bx, (tid // bx) % by, tid // (bx * by))

        for (blk, w, o, count) in self._rec.races.values():
            def side(r):
                line = site_line(r[_SITE])
                return {"line": line, "source": _source(site_code(r[_SITE]), line), "op": _OPS[r[_OP]],
                        "thread": thread(r[_TID])}
            out.append(Race(block=blk, address=int(max(w[_ADDR], o[_ADDR])), array=w[_NAME], first=side(w),
                            second=side(o), count=count))
        out.sort(key=lambda r: (r.first["line"], r.second["line"]))
        return out


def _engine_host(a):
    """A NumPy view of a device array (what numba would type), else the argument itself."""
    if hasattr(a, "copy_to_host") and hasattr(a, "_ary"):
        return a._ary
    return a


def _dims(d):
    if isinstance(d, (int, np.integer)):
        return (int(d), 1, 1)
    d = tuple(int(x) for x in d)
    return d + (1,) * (3 - len(d))


# --------------------------------------------------------------------------------------------------
# Entry point


def trace(kernel, griddim, blockdim, *args, dynshared=0, detail_blocks=None, lines=True, seed=None,
          time_limit=None, compiler=None) -> Report:
    """Run one launch on the CPU engine, recording every global and shared element access; return a :class:`Report`.

    ``detail_blocks``: blocks whose every access is kept for :meth:`Report.warp_detail` and
    :meth:`Report.warp_accesses` (default: all blocks when the grid has at most 64, else the first 4);
    counts, races and divergence always cover the whole launch.  ``lines=False`` skips the line
    events that :meth:`Report.divergence` needs (a little faster).

    ``compiler``: where a thread's neighbouring shared accesses could be merged into one wide instruction,
    count them the way the GPU compiler built the kernel (:mod:`course.compiler`) — ``None`` (default)
    when its facts can be had, ``False`` never (the source's own accesses), ``True`` always (an error
    when no facts can be had).  :attr:`Report.compiler` says what was done.
    """
    fn = _engine._kernel_py_func(kernel)
    grid = _engine._normalise_dims(griddim, "blocks_per_grid (griddim)")
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
    rec = _Recorder(fn.__code__, keep, lines)
    rec.compiler_mode = compiler
    if compiler is not False:
        try:
            from numba import typeof

            rec.compiler_job = _compiler.describe(fn, tuple(typeof(_engine_host(a)) for a in args))
        except Exception as e:  # noqa: BLE001 - an argument numba cannot type: the launch will say so
            rec.compiler_why = f"the arguments could not be typed for the GPU compiler ({type(e).__name__})"
    run = kernel
    tracer = None
    g = fn.__globals__
    saved = {k: g[k] for k in (_TID_FN,) if k in g}
    if lines:
        inst = _instrument(fn)
        if inst is not None:
            inst, rec.line_weights = inst
            run = inst
            rec.kcode = inst.__code__
            rec.array_class = _make_array_class(rec)
            g[_TID_FN] = lambda: rec.new_thread_lines()  # a course.trace function: the engine's direct mode allows it
        else:
            tracer = _settrace_lines(rec)
    old = sys.gettrace()
    t0 = time.perf_counter()
    if tracer is not None:
        sys.settrace(tracer)
    try:
        _engine.launch(run, grid, blockdim, args, dynshared=dynshared, hooks=rec, seed=seed,
                       time_limit=time_limit)
    finally:
        if tracer is not None:
            sys.settrace(old)
        for k in (_TID_FN,):
            if k in saved:
                g[k] = saved[k]
            else:
                g.pop(k, None)
    rec.flush()
    seconds = time.perf_counter() - t0
    return Report(rec, fn.__name__, griddim, blockdim, seconds, lines)
