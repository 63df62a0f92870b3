"""What the memory system does with one warp's access: banks, wavefronts, sectors (pure functions).

These are the *analyse* layer of the course's tracer (:mod:`course.trace`): they take the byte
addresses the 32 lanes of one warp-level instruction touch and say how the hardware serves them.
No numba, no kernels: every function here can be checked by hand.

Conventions (the same everywhere in the course):

- ``addrs`` is a sequence of up to 32 byte addresses, one per lane, in lane order; ``None`` marks an
  inactive lane (it exited, took the other side of a branch, or does not exist in a partial warp).
- ``size`` is the access size in bytes (1, 2, 4, 8 or 16: what one lane reads or writes).
- Shared memory (共享内存) has 32 banks (存储体) of 4-byte words: byte ``a`` is in word ``a // 4``
  and bank ``(a // 4) % 32``.  One *wavefront* is one pass through the banks in which every bank
  delivers at most one word; lanes that want *the same word* share it (broadcast / multicast).
- Global memory is moved in 32-byte *sectors*; a request's cost is the number of distinct sectors
  its active lanes touch (coalesced access / 合并访存 means few sectors per request).

The one rule that differs between access sizes is :data:`SHARED_PHASE_LANES`: how many consecutive
lanes the hardware serves together in one *phase* (a wavefront carries at most 128 bytes, so an
8-byte access is served half a warp at a time and a 16-byte access a quarter warp at a time).
Change the rule there and every count in the course follows.  ``docs/tracer.md`` says where the
H200 agrees with it and where that is still being checked.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple, Optional, Sequence

from course.device import BANK_BYTES, LINE_BYTES, SECTOR_BYTES, WARP_SIZE
from course.device import SHARED_BANKS as BANKS

WAVEFRONT_BYTES = BANKS * BANK_BYTES  # 128: what one pass through the banks can carry

#: Lanes served together in one phase, by access size in bytes.  A phase costs as many wavefronts
#: as its worst bank needs; the phases of one instruction add up.  Accesses of 1, 2 and 4 bytes are
#: served as a whole warp; 8-byte accesses by half warps (lanes 0-15, 16-31); 16-byte accesses by
#: quarter warps (lanes 0-7, 8-15, ...).  THE place to change if the hardware says otherwise.
SHARED_PHASE_LANES = {1: 32, 2: 32, 4: 32, 8: 16, 16: 8}

#: Access sizes whose phases the hardware serves together, and over how many lanes: the phases inside
#: one group of that many consecutive lanes take ONE wavefront when they together ask for at most 128
#: bytes of distinct words (counted per phase) and no bank needs two different words in the group.
#: Measured on the H200 (data/tracer_validation.json, 2026-11-29): an 8-byte broadcast (every lane
#: reads one double) and pairs of lanes sharing a double (s[t // 2]) take 1 wavefront, not the 2 that
#: half-warp phases give; s[t % 16] (each half reads the same 128 bytes) still takes 2 — so 8-byte
#: phases merge across the whole warp.  A 16-byte broadcast (the tiled matmul's LDS.128 of As[ty, k:k+4],
#: every lane the same 16 bytes) takes 2 wavefronts, not the 4 of quarter-warp phases nor the 1 of a
#: whole-warp merge — so 16-byte phases merge in pairs (half warps).
MERGED_PHASES = {8: 32, 16: 16}

#: A structured dtype carrying this key in its metadata is a *vector*, not a record: the course's CPU
#: twins of 16-byte loads view a row of floats as wide elements (course.kernels.vector.gload4, the
#: vectorized reductions), and the tracer counts one access of the whole element, as the GPU's one
#: LDG.E.128/LDS.128 — not the byte-by-byte field accesses of a record (course.trace).
VECTOR_DTYPE_KEY = "course_vector"


def vector_dtype(nfloats: int):
    """The dtype of ``nfloats`` float32 seen as one wide element (see VECTOR_DTYPE_KEY)."""
    import numpy as np

    return np.dtype([(f"f{k}", np.float32) for k in range(nfloats)], metadata={VECTOR_DTYPE_KEY: True})


def is_vector_dtype(dtype) -> bool:
    md = dtype.metadata
    return bool(md and md.get(VECTOR_DTYPE_KEY))


Addrs = Sequence[Optional[int]]


class LanePass(NamedTuple):
    """Where one lane's shared-memory access is served: its (first) bank and the wavefront number."""

    bank: int
    wavefront: int


def phase_lanes(size: int) -> int:
    """How many consecutive lanes one phase serves for an access of ``size`` bytes."""
    lanes = SHARED_PHASE_LANES.get(size)
    if lanes is None:  # sizes a numba kernel cannot produce in one instruction: 128 bytes per phase
        lanes = max(1, WAVEFRONT_BYTES // size) if size > 0 else WARP_SIZE
    return lanes


def _check(addrs: Addrs, size: int) -> None:
    if not isinstance(size, (int,)) or size < 1:
        raise ValueError(f"access size {size!r} must be a positive number of bytes (1, 2, 4, 8 or 16)")
    if len(addrs) > WARP_SIZE:
        raise ValueError(f"{len(addrs)} addresses given; a warp has at most {WARP_SIZE} lanes")


def bank_of(byte_addr: int) -> int:
    """The shared-memory bank (0-31) that holds byte ``byte_addr``."""
    return (byte_addr // BANK_BYTES) % BANKS


def words_of(byte_addr: int, size: int) -> range:
    """The 4-byte word numbers an access of ``size`` bytes at ``byte_addr`` touches."""
    return range(byte_addr // BANK_BYTES, (byte_addr + size - 1) // BANK_BYTES + 1)


def sector_of(byte_addr: int) -> int:
    """The 32-byte sector number that holds byte ``byte_addr``."""
    return byte_addr // SECTOR_BYTES


def phases(n_lanes: int, size: int) -> list[range]:
    """The lane groups served one after another for an access of ``size`` bytes."""
    step = phase_lanes(size)
    return [range(lo, min(lo + step, n_lanes)) for lo in range(0, n_lanes, step)]


def _merge_groups(addrs: Addrs, size: int) -> list:
    """The lane groups whose phases are served in one wavefront (see MERGED_PHASES); [] when none."""
    span = MERGED_PHASES.get(size)
    if span is None:
        return []
    out = []
    for lo in range(0, len(addrs), span):
        group = range(lo, min(lo + span, len(addrs)))
        if all(addrs[i] is None for i in group) or not _fits_one_wavefront(addrs, size, group):
            continue
        union: dict[int, set[int]] = defaultdict(set)  # bank -> distinct words, the group's phases together
        for i in group:
            if addrs[i] is not None:
                for w in words_of(addrs[i], size):
                    union[w % BANKS].add(w)
        if all(len(ws) == 1 for ws in union.values()):
            out.append(group)
    return out


def _group_of(lane: int, groups: list) -> Optional[range]:
    for g in groups:
        if lane in g:
            return g
    return None


def shared_passes(addrs: Addrs, size: int) -> list[Optional[LanePass]]:
    """Per lane: the bank it uses and the wavefront (0, 1, ...) that serves it; None if inactive.

    Inside a phase, each bank serves its distinct words in the order of the first lane that asks
    for each; lanes asking for the same word get it in the same pass (broadcast).  A wide access
    (8 or 16 bytes) touches several banks; ``bank`` is the first and ``wavefront`` the pass in which
    the lane has all its words.  Wavefront numbers continue across phases; the phases of a merged
    group (MERGED_PHASES) share one.
    """
    _check(addrs, size)
    out: list[Optional[LanePass]] = [None] * len(addrs)
    groups = _merge_groups(addrs, size)
    base = 0
    for lanes in phases(len(addrs), size):
        group = _group_of(lanes.start, groups)
        if group is not None:
            if lanes.start == group.start:
                for lane in group:
                    if addrs[lane] is not None:
                        out[lane] = LanePass(bank_of(addrs[lane]), base)
                base += 1
            continue
        rank: dict[int, int] = {}  # word -> its pass inside this phase
        per_bank: dict[int, int] = defaultdict(int)  # bank -> distinct words seen so far
        for lane in lanes:
            a = addrs[lane]
            if a is None:
                continue
            for w in words_of(a, size):
                if w not in rank:
                    rank[w] = per_bank[w % BANKS]
                    per_bank[w % BANKS] += 1
        if not rank:
            continue  # a phase with no active lane costs nothing
        for lane in lanes:
            a = addrs[lane]
            if a is not None:
                out[lane] = LanePass(bank_of(a), base + max(rank[w] for w in words_of(a, size)))
        base += max(per_bank.values())
    return out


def shared_wavefronts(addrs: Addrs, size: int) -> int:
    """Wavefronts one shared-memory instruction needs (0 if no lane is active).

    Per phase: the largest number of *distinct* 4-byte words any one bank must deliver; phases add,
    except that the phases of a merged group (MERGED_PHASES) take one wavefront together.
    With 4-byte accesses and one phase this is the textbook "n-way bank conflict" degree.
    """
    _check(addrs, size)
    groups = _merge_groups(addrs, size)
    total = len(groups)
    for lanes in phases(len(addrs), size):
        if _group_of(lanes.start, groups) is not None:
            continue
        per_bank: dict[int, set[int]] = defaultdict(set)
        for lane in lanes:
            a = addrs[lane]
            if a is not None:
                for w in words_of(a, size):
                    per_bank[w % BANKS].add(w)
        if per_bank:
            total += max(len(ws) for ws in per_bank.values())
    return total


def _fits_one_wavefront(addrs: Addrs, size: int, group: range) -> bool:
    """A merge group whose phases together ask for at most 128 bytes of distinct words (counted per phase)."""
    total = 0
    for lanes in phases(len(group), size):
        total += BANK_BYTES * len({w for lane in lanes if addrs[group.start + lane] is not None
                                   for w in words_of(addrs[group.start + lane], size)})
    return total <= WAVEFRONT_BYTES


#: Lanes over which the conflict-free minimum (ncu's wavefronts minus its bank-conflict counter) is
#: reckoned for wide accesses: half warps.  Measured on the H200: a half warp asking for at most 128
#: bytes (counted per phase) has a minimum of one wavefront (16-byte quarters 0 and 8*(t//8): 2 per
#: warp, 2 conflicts), 8-byte phases one each (s[(16t) % 128]: minimum 2 per warp) — and never more
#: than the access actually took (an 8-byte broadcast: 1 wavefront, no conflict).
IDEAL_GROUP_LANES = {8: 16, 16: 16}


def shared_ideal_wavefronts(addrs: Addrs, size: int) -> int:
    """Wavefronts the same instruction would need without bank conflicts (ncu: wavefronts − conflicts).

    One per active phase; for 8- and 16-byte accesses one per half warp whose phases together ask for
    at most 128 bytes (IDEAL_GROUP_LANES); never more than :func:`shared_wavefronts`.
    """
    _check(addrs, size)
    span = IDEAL_GROUP_LANES.get(size, WARP_SIZE)
    total = 0
    for lo in range(0, len(addrs), span):
        group = range(lo, min(lo + span, len(addrs)))
        active = [lanes for lanes in phases(len(group), size)
                  if any(addrs[group.start + i] is not None for i in lanes)]
        if not active:
            continue
        total += 1 if size in IDEAL_GROUP_LANES and _fits_one_wavefront(addrs, size, group) else len(active)
    return min(total, shared_wavefronts(addrs, size))


def global_sectors(addrs: Addrs, size: int) -> int:
    """Distinct 32-byte sectors the active lanes of one global-memory request touch."""
    if len(addrs) > WARP_SIZE:
        raise ValueError(f"{len(addrs)} addresses given; a warp has at most {WARP_SIZE} lanes")
    sectors = set()
    for a in addrs:
        if a is not None:
            sectors.update(range(a // SECTOR_BYTES, (a + size - 1) // SECTOR_BYTES + 1))
    return len(sectors)


def global_lines(addrs: Addrs, size: int) -> int:
    """Distinct 128-byte cache lines the active lanes of one global-memory request touch."""
    lines = set()
    for a in addrs:
        if a is not None:
            lines.update(range(a // LINE_BYTES, (a + size - 1) // LINE_BYTES + 1))
    return len(lines)


def global_ideal_sectors(n_active: int, size: int) -> int:
    """Sectors a perfectly coalesced request of ``n_active`` lanes needs: ceil(n * size / 32)."""
    return -(-n_active * size // SECTOR_BYTES)


def active_mask(addrs: Addrs) -> int:
    """The 32-bit mask of active lanes (bit i set when lane i has an address)."""
    mask = 0
    for lane, a in enumerate(addrs):
        if a is not None:
            mask |= 1 << lane
    return mask
