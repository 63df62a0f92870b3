"""Races the tracer finds, graded as compute-sanitizer racecheck grades them.

Inside a block (shared and global memory): two threads touch one 4-byte word in one barrier epoch and one of
them writes — an ``error`` between warps, a ``warning`` between lanes of one warp that no ``syncwarp()`` both
took part in orders.  Between blocks (global memory): nothing orders two blocks, so a plain write and any other
access of another block, or an atomic and a plain access, always race (``error``).  Two stores of one value
are ``benign`` (racecheck does not report them).

:class:`RaceFinder` is a part of :class:`course.trace.recorder.Recorder`: it works on the recorder's analysed
columns and needs from it ``descs``, ``chunk`` (the blocks being analysed), ``chunk_vals`` (what their stores
wrote) and ``normal_rows(cols, idx)``.  :func:`racing_pairs` grades the pairs of one word.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from course.trace.analysis_vectorised import group_ids
from course.trace.arrays import value_key
from course.trace.records import ATOM, LD, R_ADDR, R_OP, R_SITE, R_SIZE, R_SPACE, R_TID, R_VAL, R_WSYNC, ST
from course.trace.sites import site_line


class RaceFinder:
    """The race finding of the recorder: inside each block as its chunk is analysed, between blocks when asked."""

    def init_races(self):
        """The race state of a launch (called by the host's ``__init__``)."""
        self.races: dict = {}  # (site, op) pair -> [space, block, {severity: (first, second)}, places, errors, warnings, benign]
        self.block_syncs: dict = {}  # block -> {tid: [syncwarp event ids, in order]} (blocks with syncwarps only)
        self.global_rows: list = []  # per chunk: global accesses, one row per (word, block, op), for races between blocks
        self._global_done = False
        self._block_base = 0  # launch-wide number of the first block of the chunk being analysed
        self.all_blocks: list = []  # launch-wide block number -> block
        self.written_descs: set = set()  # global descriptors stored to (or updated atomically) so far
        self._pending_global = None  # (cols, global writes, global accesses, first block number, blocks, values) of a chunk
        self.early_reads: dict = {}  # root base -> per word [reader block (-1 none, -2 several), first reader's block, site, tid], desc

    def chunk_races(self, cols, s, g):
        """The race work of one analysed chunk: ``cols`` its columns, ``s`` / ``g`` its shared / global accesses."""
        op, di = cols["op"], cols["di"]
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
                                    self.chunk_vals)
        self._block_base += len(self.chunk)

    def settle_global(self):
        """The global-memory race work of the chunk chunk_races held back: races inside its blocks (on arrays it
        writes), and what races between blocks need (exact rows for arrays written so far, a reader summary for
        the others)."""
        pending = self._pending_global
        if pending is None:
            return
        self._pending_global = None
        cols, gw, gidx, base, chunk, vals = pending
        saved = self._block_base, self.chunk, self.chunk_vals
        self._block_base, self.chunk, self.chunk_vals = base, chunk, vals
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
            self._block_base, self.chunk, self.chunk_vals = saved

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
        recs = self.normal_rows(cols, row[sel])
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
                    found = racing_pairs(l1, l2, syncs, self.chunk_vals)
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
        vals = self.chunk_vals
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
        return self.normal_rows(part["rows"], np.array([entry[5]]))[0]


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
