"""The recorder: the hooks object handed to the engine (:class:`course.engine.LaunchHooks`); it records
accesses and analyses each chunk of blocks with the vectorised counting rules of
:mod:`course.trace.analysis_vectorised`."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from course.trace import analysis
from course.trace import compiler as _compiler
from course import engine as _engine
from course.trace.analysis_vectorised import (
    global_cost,
    group_ids,
    occurrence,
    shared_cost,
    warp_of,
)
from course.trace.arrays import make_array_class
from course.trace.races import RaceFinder
from course.trace.records import ATOM, OPNAME, SPLIT_COMPLEX, ST
from course.trace.sites import site_code, site_id, site_line

# Recording
#
# The hot path (every element access) appends five integers to one flat list and nothing else:
#   d = 4 * (array descriptor) + op (0 load, 1 store, 2 atomic), site key, thread id, byte address,
#   warp-sync epoch (syncwarp()s the thread passed).  What each store wrote goes to ``vals``, in order.
# The site key is ``f_lasti`` for accesses in the kernel itself, or a registered number (>= 2**20)
# for accesses in device functions (innermost frame plus its callers).  Everything else (sites,
# occurrences, warps, costs, races, divergence) is worked out with NumPy for many blocks at once, in
# ``flush``; the counting there follows course.trace.analysis exactly (tests check the two agree).

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


class Recorder(RaceFinder):
    """The hooks object handed to the engine: records accesses, then analyses each block as it ends (its races:
    :class:`~course.trace.races.RaceFinder`)."""

    def __init__(self, kernel_code, detail_blocks, lines, *, line_weights=None, compiler_mode=None,
                 compiler_job=None, compiler_why=""):
        """``kernel_code``: the code object the engine runs (the instrumented copy when ``line_weights`` is given:
        its line markers call :attr:`helpers`); ``compiler_mode``, ``compiler_job``, ``compiler_why``: see
        :meth:`compiler_facts`."""
        self.kcode = kernel_code
        self.detail_blocks = detail_blocks  # None: every block; else a set of (x, y, z)
        self.flat: list = []  # five ints per access (see above)
        self.vals: list = []  # the value of each store, in record order (benign same-value races)
        self.chunk_vals: list = []  # this chunk's values (analysis, races)
        self.init_races()
        self.bar_marks: list = []  # access count at each barrier release: the barrier epochs
        self.barriers_total = 0  # barrier releases over the whole launch (bar_marks is per chunk)
        self.cur = [None]  # [the engine's LaunchView of this launch]: cur[0].thread is the running thread
        self.user_ids = frozenset()  # id() of the kernel's and device functions' code objects
        self.lines_on = lines
        self.line_events: list = []  # flat (tid, line) pairs (the sys.settrace fallback)
        self.thread_lines: list = []  # (tid, [line, line, ...]) per thread of the running block (markers)
        self.line_arrays: list = []  # (tids, lines) NumPy pairs of the blocks not yet analysed
        self.n_line = 0  # line events in line_arrays
        self.pending_div: list = []  # (events, block index per event, blocks) awaiting the divergence analysis
        self.pending_n = 0
        self.line_weights: dict = line_weights or {}  # marker line -> source lines it stands for
        self.descs: list = []
        self.desc_ids: dict = {}
        self.far_keys: dict = {}  # (id(code), callers, lasti) -> key >= _FAR
        self.far_list: list = []  # key - _FAR -> (code, callers, lasti)
        # aggregates over the whole launch
        self.site_stats: dict = {}  # (space, op, site) -> [requests, cost, worst, ideal, names, size]
        self.kept: dict = {}  # block -> dict of NumPy columns (detail blocks only)
        self._kept_rows: dict = {}
        self.div_steps = 0
        self.div_active = 0
        self.branches: dict = {}  # line -> [warp executions, divergent ones, {next line: lanes}]
        self.branch_events: list = []
        self.warp_steps: dict = {}
        self.chunk: list = []  # (block, first access, end, first line event, end) of blocks not yet analysed
        self.nthreads = 0
        self._start = (0, 0)
        self.arrays: dict = {}  # (space, base) -> (name, root shape, itemsize)
        self.syncs: dict = defaultdict(list)  # tid -> syncwarp events it took part in, this block (on_syncwarp)
        # what the GPU compiler merges (course.trace.compiler)
        self.compiler_mode = compiler_mode  # None: use facts when they can be had; False: never; True: required
        self.compiler_job = compiler_job  # (fingerprint, spec) of the kernel and its argument types
        self.compiler_why = compiler_why
        self._facts = UNSET
        self._widths: dict = {}
        self.vector_candidates: set = set()  # sites with runs the compiler could merge
        self.vector_merged: set = set()  # sites whose runs were merged (the compiler did)
        self.helpers: tuple = ()  # LaunchHooks.helpers: what an instrumented kernel's markers call
        if line_weights is not None:
            def tid_fn():  # a kernel thread's first call: the ``append`` its line markers call
                return self.new_thread_lines()

            self.helpers = (tid_fn,)  # it never waits: the engine may still run threads as plain calls
        self.array_class = make_array_class(self)

    @property
    def line_helper(self):
        """The function an instrumented kernel's prologue calls (put in its globals as ``markers.TID_FN``)."""
        return self.helpers[0] if self.helpers else None

    # ---- engine hooks (course.engine.LaunchHooks)
    def begin_launch(self, launch):
        self.cur[0] = launch
        self.nthreads = launch.threads_per_block

    def begin_block(self, block):
        # the launch's code objects grow as device functions are first reached
        self.user_ids = frozenset(id(c) for c in self.cur[0].codes)
        self._start = (len(self.flat) // 5, self.n_line)

    def on_syncwarp(self, event, tids):
        syncs = self.syncs
        for t in tids:
            syncs[t].append(event)

    def on_barrier(self, block):
        self.bar_marks.append(len(self.flat) // 5)
        self.barriers_total += 1

    def end_block(self, block):
        if self.syncs:  # the warp syncs of this block: who took part in which, in order
            self.block_syncs[block] = dict(self.syncs)
            self.syncs.clear()
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
            self.chunk_vals = self.vals[:]
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
        self.thread_lines.append((self.cur[0].thread.tid, lines))
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
        self.chunk_races(cols, s, g)

    def _merge_vectors(self, gt, site, op, shared, size, A, epoch):
        """Merge a thread's neighbouring shared accesses where the GPU compiler emits one wide instruction.

        A *candidate* is a run of 4- or 8-byte accesses by one thread at one site (one source
        instruction), one after another in that thread's order and in one barrier epoch, at addresses
        ``a, a + s, …`` that fill an aligned 8- or 16-byte block.  ``ptxas`` may turn such a run into one
        ``LDS.64``/``LDS.128`` (``STS`` for stores) — or may not (course/trace/compiler.py says why no rule on
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
        """What ptxas made of this kernel (course.trace.compiler), looked up or compiled once; None if unknown."""
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
            r = self._kept_rows[block] = self.normal_rows(cols, np.arange(len(cols["op"])))
        return r

    def normal_rows(self, cols, idx):
        descs = self.descs
        out = []
        op, di, site, tid, occ, addr, size, epoch, ws, val = (
            cols[k][idx].tolist() for k in ("op", "di", "site", "tid", "occ", "addr", "size", "epoch", "ws", "val"))
        for j in range(len(op)):
            d = descs[di[j]]
            out.append((OPNAME[op[j]], d.space, site[j], tid[j], occ[j], addr[j], size[j], d.name, epoch[j], ws[j],
                        d.base, val[j]))
        return out

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
