"""The counting rules of :mod:`course.trace.analysis`, vectorised with NumPy for many warp-level instructions at once.

The tracer (:mod:`course.trace`) counts whole launches with these; ``tests/test_analysis.py`` checks that
they agree with the scalar rules of :mod:`course.trace.analysis` on every case.
"""

from __future__ import annotations

import numpy as np

from course.trace import analysis


def warp_of(gt, nthreads):
    return (gt // nthreads) * ((nthreads + 31) // 32) + (gt % nthreads) // 32


def group_ids(cols, first=False):
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


def occurrence(gid):
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


def global_cost(gi, addr, size, G):
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
        _, _, firsts = group_ids([gi, sec], first=True)
        return np.bincount(gi[firsts], minlength=G)
    u = np.unique((gi << w) | sec)  # distinct (instruction, sector) pairs
    return np.bincount(u >> w, minlength=G)


def shared_cost(gi, addr, size, lane, G):
    """Wavefronts and ideal wavefronts per warp-level instruction (the rule of analysis.shared_wavefronts)."""
    top = int(size.max()) + 1
    pl = np.array([analysis.phase_lanes(int(s)) for s in range(top)], dtype=np.int64)
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
