"""The recorder: the hooks object handed to the engine (:class:`course.engine.LaunchHooks`); it records
accesses and analyses each chunk of blocks with the vectorised counting rules of
:mod:`course.analysis_vectorised`."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from course import analysis
from course import compiler as _compiler
from course import engine as _engine
from course.analysis_vectorised import (
    global_cost,
    group_ids,
    occurrence,
    shared_cost,
    warp_of,
)
from course.trace.arrays import make_array_class, value_key
from course.trace.records import (
    ATOM,
    LD,
    OPNAME,
    R_ADDR,
    R_OP,
    R_SITE,
    R_SPACE,
    R_SIZE,
    R_TID,
    R_VAL,
    R_WSYNC,
    SPLIT_COMPLEX,
    ST,
)
from course.trace.sites import site_code, site_id, site_line

# Recording
#
# The hot path (every element access) appends five integers to one flat list and nothing else:
#   d = 4 * (array descriptor) + op (0 load, 1 store, 2 atomic), site key, thread id, byte address,
#   warp-sync epoch (syncwarp()s the thread passed).  What each store wrote goes to ``vals``, in order.
# The site key is ``f_lasti`` for accesses in the kernel itself, or a registered number (>= 2**20)
# for accesses in device functions (innermost frame plus its callers).  Everything else (sites,
# occurrences, warps, costs, races, divergence) is worked out with NumPy for many blocks at once, in
# ``flush``; the counting there follows course.analysis exactly (tests check the two agree).

UNSET = object()
_FAR = 1 << 20  # site keys at or above this are registered (code, callers, lasti) triples
_CHUNK = 400_000  # recorded ints after which the blocks so far are analysed (bounds memory)
_LAZY_LINE_EVENTS = 2_000_000  # line events kept for a later divergence report before analysing them now


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


class Recorder:
    """The hooks object handed to the engine: records accesses, then analyses each block as it ends."""

    def __init__(self, kernel_code, detail_blocks, lines):
        self.kcode = kernel_code
        self.detail_blocks = detail_blocks  # None: every block; else a set of (x, y, z)
        self.flat: list = []  # five ints per access (see above)
        self.vals: list = []  # the value of each store, in record order (benign same-value races)
        self._vals = []  # this chunk's values (analysis)
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
        self.races: dict = {}  # (site, op) pair -> [space, block, {severity: (first, second)}, places, errors, warnings, benign]
        self.block_syncs: dict = {}  # block -> {tid: [syncwarp event ids, in order]} (blocks with syncwarps only)
        self.global_rows: list = []  # per chunk: global accesses, one row per (word, block, op), for races between blocks
        self._global_done = False
        self._block_base = 0
        self.all_blocks: list = []  # launch-wide block number -> block
        self.written_descs: set = set()
        self._pending_global = None  # (cols, global writes, global accesses, first block number, blocks) of a chunk  # global descriptors stored to (or updated atomically) so far
        self.early_reads: dict = {}  # root base -> per word [reader block (-1 none, -2 several), first reader's block, site, tid], desc  # launch-wide number of the first block of the chunk being analysed
        self.div_steps = 0
        self.div_active = 0
        self.branches: dict = {}  # line -> [warp executions, divergent ones, {next line: lanes}]
        self.branch_events: list = []
        self.warp_steps: dict = {}
        self.chunk: list = []  # (block, first access, end, first line event, end) of blocks not yet analysed
        self.nthreads = 0
        self._start = (0, 0)
        self.arrays: dict = {}  # (space, base) -> (name, root shape, itemsize)
        self.array_class = make_array_class(self)
        # what the GPU compiler merges (course.compiler): set up by trace()
        self.compiler_mode = None  # None: use facts when they can be had; False: never; True: required
        self.compiler_job = None  # (fingerprint, spec) of the kernel and its argument types
        self.compiler_why = ""
        self._facts = UNSET
        self._widths: dict = {}
        self.vector_candidates: set = set()  # sites with runs the compiler could merge
        self.vector_merged: set = set()  # sites whose runs were merged (the compiler did)
        self.helpers: tuple = ()  # LaunchHooks.helpers: the line recorder trace() puts in the kernel's globals

    # ---- engine hooks
    def begin_block(self, block):
        lau = _engine.launch_state()
        self.cur[0] = _engine.current_module()
        self.user_ids = frozenset(id(c) for c in lau.user_codes)
        self.nthreads = lau.blockdim[0] * lau.blockdim[1] * lau.blockdim[2]
        self._start = (len(self.flat) // 5, self.n_line)

    def on_barrier(self, block):
        self.bar_marks.append(len(self.flat) // 5)

    def end_block(self, block):
        lau = _engine.launch_state()
        if lau is not None and lau.sync_log:  # the warp syncs of this block: who took part in which, in order
            per: dict = defaultdict(list)
            for eid, tids in lau.sync_log:
                for t in tids:
                    per[t].append(eid)
            self.block_syncs[block] = dict(per)
            lau.sync_log.clear()
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
            self._vals = self.vals[:]
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
        del self.vals[:]
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
            return site_id(self.kcode, key, part)
        code, callers, lasti = self.far_list[key - _FAR]
        return site_id((code, callers) if callers else code, lasti, part)

    # ---- analysis of a chunk of blocks
    def _process(self, raw, bi):
        D, K, T, A, WS = raw[:, 0], raw[:, 1], raw[:, 2], raw[:, 3], raw[:, 4]
        is_st = (D & 3) == ST
        VAL = np.where(is_st, np.cumsum(is_st) - 1, -1)  # a store's entry in `vals` (what it wrote)
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
            D, K, T, A, WS, VAL, di, op, shared, size, epoch, split, bi = (
                x[idx] for x in (D, K, T, A, WS, VAL, di, op, shared, size, epoch, split, bi))
            part = np.where(split, sub + 1, 0)
            size = np.where(split, size // 2, size)
            A = A + np.where(part == 2, size, 0)
            n = len(D)
        # sites: raw keys -> site ids (two raw keys may be one site, see owner_table)
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
                D, K, T, A, WS, VAL, di, op, shared, size, epoch, bi, site, part, gt = (
                    x[keep] for x in (D, K, T, A, WS, VAL, di, op, shared, size, epoch, bi, site, part, gt))
                n = len(D)
        us_, sc = np.unique(site, return_inverse=True)  # compact site numbers for packing keys
        occ = occurrence(gt * (int(sc.max()) + 1) + sc)
        # warp-level instructions: the same (block, warp, site, occurrence, op, space)
        gi, G, first = group_ids([occ, sc, warp_of(gt, self.nthreads), op * 2 + shared], first=True)
        gsize, gsh, gop, gsite, gdi = size[first], shared[first], op[first], site[first], di[first]
        nact = np.bincount(gi, minlength=G)
        cost = np.zeros(G, dtype=np.int64)
        ideal = np.zeros(G, dtype=np.int64)
        g = shared == 0
        if g.any():
            cost += global_cost(gi[g], A[g], size[g], G)
            ideal += np.where(gsh == 0, -(-nact * gsize // analysis.SECTOR_BYTES), 0)
        s = ~g
        if s.any():
            c, i = shared_cost(gi[s], A[s], size[s], T[s] & 31, G)
            cost += c
            ideal += i
        # per site
        si, S, sfirst = group_ids([np.searchsorted(us_, gsite), gop * 2 + gsh], first=True)
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
            key = ("shared" if gsh[f] else "global", OPNAME[gop[f]], int(gsite[f]))
            st = stats.get(key)
            if st is None:
                stats[key] = st = [0, 0, 0, 0, set(), int(gsize[f])]
            st[0] += int(req[j])
            st[1] += int(csum[j])
            st[2] = max(st[2], int(cmax[j]))
            st[3] += int(isum[j])
            st[4] |= names[j]
        cols = dict(op=op, shared=shared, di=di, site=site, tid=T, occ=occ, addr=A, size=size, epoch=epoch, ws=WS,
                    bi=bi, val=VAL)
        bounds = np.searchsorted(bi, np.arange(len(self.chunk) + 1))
        for j, c in enumerate(self.chunk):
            if self._keep(c[0]) and bounds[j] < bounds[j + 1]:
                self.kept[c[0]] = {k: v[bounds[j]:bounds[j + 1]] for k, v in cols.items()}
        # races inside a block, shared memory
        if s.any() and (op[s] != LD).any():
            self._find_races(cols, s)
        # global memory: analysed lazily, when races() asks or when the next chunk comes (so a launch of one chunk,
        # the common case, pays nothing more unless its races are asked for)
        self.settle_global()
        self.all_blocks.extend(c[0] for c in self.chunk)
        gw = (op != LD) & g
        if gw.any():
            self.written_descs.update(np.unique(di[gw]).tolist())
        if g.any():
            self._pending_global = (cols, np.nonzero(gw)[0], np.nonzero(g)[0], self._block_base, list(self.chunk),
                                    self._vals)
        self._block_base += len(self.chunk)

    def settle_global(self):
        """The global-memory race work of the chunk _process held back: races inside its blocks (on arrays it
        writes), and what races between blocks need (exact rows for arrays written so far, a reader summary for
        the others)."""
        pending = self._pending_global
        if pending is None:
            return
        self._pending_global = None
        cols, gw, gidx, base, chunk, vals = pending
        saved = self._block_base, self.chunk, self._vals
        self._block_base, self.chunk, self._vals = base, chunk, vals
        try:
            descs = self.descs
            di = cols["di"]
            if len(gw):
                lut = np.zeros(len(descs), dtype=bool)
                lut[np.unique(di[gw])] = True
                cand = np.zeros(len(di), dtype=bool)
                cand[gidx] = lut[di[gidx]]
                if cand.any():
                    self._find_races(cols, cand)
            lut = np.zeros(len(descs), dtype=bool)
            lut[list(self.written_descs)] = True
            ex = lut[di[gidx]]
            if ex.any():
                self._keep_global_rows(cols, gidx[ex])
            if not ex.all():
                self._note_early_reads(cols, gidx[~ex])
        finally:
            self._block_base, self.chunk, self._vals = saved

    def _merge_vectors(self, gt, site, op, shared, size, A, epoch):
        """Merge a thread's neighbouring shared accesses where the GPU compiler emits one wide instruction.

        A *candidate* is a run of 4- or 8-byte accesses by one thread at one site (one source
        instruction), one after another in that thread's order and in one barrier epoch, at addresses
        ``a, a + s, …`` that fill an aligned 8- or 16-byte block.  ``ptxas`` may turn such a run into one
        ``LDS.64``/``LDS.128`` (``STS`` for stores) — or may not (course/compiler.py says why no rule on
        addresses can decide), so candidates are merged only on source lines where the compiled kernel
        holds vector shared instructions of that width.  Returns (rows to keep, or None, and the sizes).
        """
        cand = np.nonzero(shared.astype(bool) & (op != ATOM) & ((size == 4) | (size == 8)))[0]
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
                                                            site_line(sid), store=op == ST)
        return w

    def facts_if_known(self):
        """The compiler facts if they were looked up (None if not, or if there were none)."""
        return self._facts if self._facts is not UNSET else None

    def vector_merged_known(self):
        """True when compiler facts were consulted, so unmerged candidates are known not to be merged."""
        return self._facts is not UNSET and bool(self._facts) and "lines" in self._facts

    def compiler_facts(self):
        """What ptxas made of this kernel (course.compiler), looked up or compiled once; None if unknown."""
        if self._facts is UNSET:
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
        op, di, site, tid, occ, addr, size, epoch, ws, val = (
            cols[k][idx].tolist() for k in ("op", "di", "site", "tid", "occ", "addr", "size", "epoch", "ws", "val"))
        for j in range(len(op)):
            d = descs[di[j]]
            out.append((OPNAME[op[j]], d.space, site[j], tid[j], occ[j], addr[j], size[j], d.name, epoch[j], ws[j],
                        d.base, val[j]))
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
        wi, W = group_ids([cols["bi"][row], cols["epoch"][row], word])
        writes = np.bincount(wi, weights=(cols["op"][row] != LD), minlength=W)
        tid = cols["tid"][row]
        tmin = np.full(W, 1 << 40, dtype=np.int64)
        tmax = np.full(W, -1, dtype=np.int64)
        np.minimum.at(tmin, wi, tid)
        np.maximum.at(tmax, wi, tid)
        cand = (writes > 0) & (tmin != tmax)
        if not cand.any():
            return
        # threads touching different bytes of one word do not race (a uint8 array, 4 threads a word): where every
        # access of a word has one size and is aligned to it, a race needs two threads and a write at one address
        sub = np.nonzero(cand[wi])[0]
        a_, sz_ = cols["addr"][row[sub]], cols["size"][row[sub]]
        smin = np.full(W, 1 << 40, dtype=np.int64)
        smax = np.zeros(W, dtype=np.int64)
        np.minimum.at(smin, wi[sub], sz_)
        np.maximum.at(smax, wi[sub], sz_)
        misaligned = np.zeros(W, dtype=bool)
        misaligned[wi[sub][(a_ % sz_) != 0]] = True
        ai, A_ = group_ids([wi[sub], a_])
        aw = np.bincount(ai, weights=(cols["op"][row[sub]] != LD), minlength=A_)
        amin = np.full(A_, 1 << 40, dtype=np.int64)
        amax = np.full(A_, -1, dtype=np.int64)
        np.minimum.at(amin, ai, tid[sub])
        np.maximum.at(amax, ai, tid[sub])
        same_addr = np.zeros(W, dtype=bool)
        same_addr[wi[sub][((aw > 0) & (amin != amax))[ai]]] = True
        cand &= same_addr | (smin != smax) | misaligned
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
            syncs = self.block_syncs.get(block)
            by_site: dict = {}
            for _b, r in lst:
                by_site.setdefault((r[R_SITE], r[R_OP]), []).append(r)
            for (s1, op1), l1 in by_site.items():
                if op1 == "ld":
                    continue
                for (s2, op2), l2 in by_site.items():
                    if op1 == "atom" and op2 == "atom":
                        continue
                    found = racing_pairs(l1, l2, syncs, self._vals)
                    if found:
                        self._note_race((s1, op1), (s2, op2), l1[0][R_SPACE], block, found)

    def _note_race(self, a, b, space, block, found):
        """Count one place (an epoch's word of a block) where sites ``a`` and ``b`` race; ``found`` as racing_pairs."""
        key = tuple(sorted([a, b], key=lambda x: (site_line(x[0]), x[1])))
        race = self.races.get(key)
        if race is None:
            race = self.races[key] = [space, block, {}, 0, 0, 0, 0]
        race[3] += 1
        real = {sev: p for sev, p in found.items() if not p[2]}
        if real:
            for sev, p in real.items():
                race[4 if sev == "error" else 5] += 1
                race[2].setdefault(sev, (block, p[0], p[1], p[3] if len(p) > 3 else block))
        else:
            race[6] += 1
            for sev, p in found.items():
                race[2].setdefault("benign-" + sev, (block, p[0], p[1], p[3] if len(p) > 3 else block))

    # ---- races between blocks (global memory)
    def _keep_global_rows(self, cols, idx):
        """One row per (4-byte word, block, op) of this chunk's global accesses: what global_races() needs."""
        a, sz = cols["addr"][idx], cols["size"][idx]
        wlo = a >> 2
        nw = ((a + sz - 1) >> 2) - wlo + 1
        if (nw == 1).all():
            row, word = idx, wlo
        else:
            rep = np.repeat(np.arange(len(idx)), nw)
            word = wlo[rep] + (np.arange(len(rep)) - (np.cumsum(nw) - nw)[rep])
            row = idx[rep]
        blk = cols["bi"][row]
        op = cols["op"][row]
        gi, G, first = group_ids([word, blk, op], first=True)
        vals = self._vals
        val = np.array([value_key(vals[i]) if i >= 0 else 0 for i in cols["val"][row].tolist()], dtype=np.int64)
        vmin = np.full(G, np.iinfo(np.int64).max, dtype=np.int64)
        vmax = np.full(G, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(vmin, gi, val)
        np.maximum.at(vmax, gi, val)
        f = row[first]
        self.global_rows.append(dict(
            word=word[first], blk=blk[first] + self._block_base, op=op[first], vmin=vmin, vmax=vmax,
            rows=self._rows_lazy(cols, f), bi=blk[first].copy(), chunk=[c[0] for c in self.chunk]))

    def _note_early_reads(self, cols, idx):
        """Loads from global arrays nothing has written yet: per 4-byte word of the array, which block read it
        (one, or -2 for several) and one reader's site and thread; no sort, memory the size of the array."""
        descs = self.descs
        di = cols["di"][idx]
        for d in np.unique(di).tolist():
            desc = descs[d]
            sel = idx[di == d]
            st = self.early_reads.get(desc.base)
            if st is None:
                nwords = (int(np.prod(desc.shape)) * desc.itemsize + 3) >> 2
                st = self.early_reads[desc.base] = [np.full(nwords, -1, dtype=np.int64), np.zeros(nwords, np.int64),
                                                   np.zeros(nwords, np.int64), np.zeros(nwords, np.int64), d]
            w = (cols["addr"][sel] - desc.base) >> 2
            ok = (w >= 0) & (w < len(st[0]))
            w, sel = w[ok], sel[ok]
            blk = cols["bi"][sel] + self._block_base
            cur = st[0][w]
            several = (cur >= 0) & (cur != blk)
            st[0][w[several]] = -2
            fresh = cur == -1
            st[0][w[fresh]] = blk[fresh]
            st[1][w[fresh]] = blk[fresh]
            st[2][w[fresh]] = cols["site"][sel[fresh]]
            st[3][w[fresh]] = cols["tid"][sel[fresh]]
            again = st[0][w]  # two blocks of this chunk both found a fresh word: the last one won
            st[0][w[(again >= 0) & (again != blk)]] = -2

    def _rows_lazy(self, cols, idx):
        """The columns of some records, kept to make normalised rows later (only races need them)."""
        return {k: v[idx] for k, v in cols.items()}

    def global_races(self):
        """Add the races between blocks to ``self.races``: a word written (not atomically) by one block and read,
        written or updated atomically by another, or updated atomically by one and read or written by another.
        No barrier orders two blocks, so these always race (severity error).  Computed once, when asked."""
        if self._global_done:
            return
        self.settle_global()
        self._global_done = True
        if not self.global_rows:
            return
        parts = list(self.global_rows)
        for base, (state, first, site, tid, d) in self.early_reads.items():
            if d not in self.written_descs:
                continue
            w = np.nonzero(state != -1)[0]
            if not len(w):
                continue
            desc = self.descs[d]
            n = len(w)
            z = np.zeros(n, dtype=np.int64)
            rows = {"op": z + LD, "di": z + d, "site": site[w], "tid": tid[w], "occ": z, "addr": base + (w << 2),
                    "size": z + min(4, desc.size), "epoch": z, "ws": z, "val": z}
            parts.append({"word": (base >> 2) + w, "blk": state[w], "op": z + LD, "vmin": z, "vmax": z, "rows": rows,
                          "first": first[w]})
        self._parts = parts
        word = np.concatenate([p["word"] for p in parts])
        blk = np.concatenate([p["blk"] for p in parts])
        op = np.concatenate([p["op"] for p in parts])
        written = np.unique(word[op != LD])
        keep = np.isin(word, written)
        if not keep.any():
            return
        pi = np.concatenate([np.full(len(p["word"]), j) for j, p in enumerate(parts)])[keep]
        ri = np.concatenate([np.arange(len(p["word"])) for p in parts])[keep]
        word, blk, op = word[keep], blk[keep], op[keep]
        vmin = np.concatenate([p["vmin"] for p in parts])[keep]
        vmax = np.concatenate([p["vmax"] for p in parts])[keep]
        wi, W = group_ids([word])
        bmin = np.full(W, np.iinfo(np.int64).max, dtype=np.int64)
        bmax = np.full(W, -1, dtype=np.int64)
        np.minimum.at(bmin, wi, blk)
        np.maximum.at(bmax, wi, blk)
        multi = bmin != bmax
        if not multi.any():
            return
        sel = np.nonzero(multi[wi])[0]
        by_word: dict = defaultdict(list)
        for j in sel.tolist():
            by_word[int(wi[j])].append(j)
        for js in by_word.values():
            entries = [(int(blk[j]), int(op[j]), int(vmin[j]), int(vmax[j]), int(pi[j]), int(ri[j])) for j in js]
            # pairs of (site, op) from different blocks that conflict: one plain write, or an atomic and a plain access
            found: dict = {}
            for x in entries:
                if x[1] == LD:
                    continue
                for y in entries:
                    if y[0] == x[0] or (x[1] == ATOM and y[1] == ATOM):
                        continue
                    benign = x[1] == ST and y[1] == ST and x[2] == x[3] == y[2] == y[3] and not x[2] & 1
                    xr, yr = self._global_row(x), self._global_row(y)
                    k = tuple(sorted([(xr[R_SITE], xr[R_OP]), (yr[R_SITE], yr[R_OP])],
                                     key=lambda z: (site_line(z[0]), z[1])))
                    prev = found.get(k)
                    if prev is None or (prev[2] and not benign):
                        found[k] = (xr, yr, benign, x, y)
            for k, (xr, yr, benign, x, y) in found.items():
                self._note_race(k[0], k[1], "global", self._global_block(x),
                                {"error": (xr, yr, benign, self._global_block(y))})

    def _global_block(self, entry):
        part = self._parts[entry[4]]
        if "first" in part:  # an early read: the first block that read the word
            return self.all_blocks[int(part["first"][entry[5]])]
        return part["chunk"][int(part["bi"][entry[5]])]

    def _global_row(self, entry):
        part = self._parts[entry[4]]
        return self._rows(part["rows"], np.array([entry[5]]))[0]

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
        k = occurrence(gts * (int(Ls.max()) + 1) + Ls)
        wg = gts >> 5  # warps, unique in the chunk (nthreads is a multiple of 32 or warps end with blocks)
        if self.nthreads % 32:
            wg = (gts // self.nthreads) * ((self.nthreads + 31) // 32) + (gts % self.nthreads) // 32
        si, S, sfirst = group_ids([wg, Ls, k], first=True)
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
        lanes = np.bincount(np.searchsorted(uw, warp_of(ut, self.nthreads)), minlength=len(uw))
        nw_per_block = (self.nthreads + 31) // 32
        for j, w in enumerate(uw.tolist()):
            block = blocks[w // nw_per_block]
            self.warp_steps[(block, w % nw_per_block)] = (int(wsteps[j]), int(wact[j]), int(lanes[j]))
        # where the lanes of each step went next
        pi, P, pfirst = group_ids([si, nxt + 1], first=True)
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



def synced_between(syncs, a, b):
    """True when lanes ``a`` and ``b`` (normalised records of one warp) are ordered by a syncwarp() both took part
    in, after one access and before the other.  ``syncs``: {tid: [event ids in the thread's order]}; a record's
    R_WSYNC is how many of its thread's events came before the access.  A shuffle or a vote orders nothing."""
    if not syncs:
        return False
    sa, sb = syncs.get(a[R_TID]), syncs.get(b[R_TID])
    if not sa or not sb:
        return False
    wa, wb = a[R_WSYNC], b[R_WSYNC]
    after_a, before_a = set(sa[wa:]), set(sa[:wa])
    return any(e in after_a for e in sb[:wb]) or any(e in before_a for e in sb[wb:])


def same_value(vals, i, j):
    """True when stores number ``i`` and ``j`` of ``vals`` wrote one plain number."""
    if vals is None or i < 0 or j < 0:
        return False
    try:
        return bool(vals[i] == vals[j])
    except Exception:  # an odd value: not the same
        return False


def racing_pairs(writes, others, syncs=None, vals=None, limit=4096):
    """The racing pairs of two lists of accesses to one word in one barrier epoch of one block, by severity.

    Returns {severity: (write, other, benign)} with severity ``"error"`` (threads of different warps) and/or
    ``"warning"`` (lanes of one warp not ordered by a syncwarp() both took part in), as compute-sanitizer
    racecheck grades them.  ``benign``: two stores of one value (``vals``: what each store wrote, indexed by a
    record's R_VAL; racecheck does not report them); a real race
    is preferred when there is one.  Different bytes of one word do not race.  ``limit`` bounds the pairs
    looked at once a pair of each severity is found.
    """
    found: dict = {}
    n = 0
    for w in writes:
        wt, wa, wz = w[R_TID], w[R_ADDR], w[R_SIZE]
        for o in others:
            ot = o[R_TID]
            if ot == wt or not (wa < o[R_ADDR] + o[R_SIZE] and o[R_ADDR] < wa + wz):
                continue
            sev = "warning" if ot >> 5 == wt >> 5 else "error"
            prev = found.get(sev)
            if prev is not None and not prev[2]:
                continue
            if sev == "warning" and synced_between(syncs, w, o):
                continue
            benign = w[R_OP] == "st" and o[R_OP] == "st" and same_value(vals, w[R_VAL], o[R_VAL])
            if prev is None or (prev[2] and not benign):
                found[sev] = (w, o, benign)
            n += 1
            if len(found) == 2 and not any(p[2] for p in found.values()):
                return found
        if n > limit and found:
            return found
    return found
