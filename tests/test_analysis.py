"""course.trace.analysis: banks, wavefronts and sectors on hand-derived warps (no kernels run here)."""

import math

import numpy as np
import pytest

from course.trace import analysis as an


def lanes(fn, n=32):
    return [fn(lane) for lane in range(n)]


def test_bank_of_wraps_every_128_bytes():
    assert [an.bank_of(a) for a in (0, 3, 4, 124, 127, 128, 132, 4096 + 8)] == [0, 0, 1, 31, 31, 0, 1, 2]


@pytest.mark.parametrize("stride", range(1, 33))
def test_4_byte_stride_conflict_degree_is_gcd(stride):
    # Lane l uses word s*l.  s*l mod 32 repeats with period 32/g (g = gcd(s, 32)), so the 32 lanes fall
    # in 32/g banks, g distinct words in each: g wavefronts.
    addrs = lanes(lambda l: 4 * stride * l)
    assert an.shared_wavefronts(addrs, 4) == math.gcd(stride, 32)


def test_broadcast_and_multicast_cost_one_pass():
    assert an.shared_wavefronts([0] * 32, 4) == 1  # every lane the same word
    assert an.shared_wavefronts(lanes(lambda l: 4 * (l // 4)), 4) == 1  # 8 words, 8 banks, 4 lanes each
    # two different words in bank 0, 16 lanes on each: 2 passes, not 32
    assert an.shared_wavefronts(lanes(lambda l: 0 if l < 16 else 128), 4) == 2
    # lanes reading different bytes of one word do not conflict
    assert an.shared_wavefronts(lanes(lambda l: l % 4), 1) == 1


def test_inactive_lanes_do_not_count():
    assert an.shared_wavefronts([None] * 32, 4) == 0
    assert an.global_sectors([None] * 32, 4) == 0
    # only lanes 0 and 16 active, both in bank 0, different words: 2
    addrs = [None] * 32
    addrs[0], addrs[16] = 0, 128
    assert an.shared_wavefronts(addrs, 4) == 2
    # a partial warp (8 lanes) given as a short list
    assert an.shared_wavefronts([4 * l for l in range(8)], 4) == 1
    assert an.active_mask(addrs) == (1 | 1 << 16)


def test_small_elements():
    assert an.shared_wavefronts(lanes(lambda l: l), 1) == 1  # 32 bytes in 8 banks
    assert an.shared_wavefronts(lanes(lambda l: 2 * l), 2) == 1  # 64 bytes in 16 banks
    assert an.shared_wavefronts(lanes(lambda l: 8 * l), 1) == 2  # words 2l: 16 banks x 2
    assert an.shared_wavefronts(lanes(lambda l: 128 * l), 1) == 32  # all in bank 0


def test_8_byte_accesses_are_served_by_half_warps():
    # 16 lanes x 8 bytes = 128 bytes = one pass per half warp
    assert an.shared_wavefronts(lanes(lambda l: 8 * l), 8) == 2
    assert an.shared_ideal_wavefronts(lanes(lambda l: 8 * l), 8) == 2
    # only the first half warp active: one pass
    assert an.shared_wavefronts(lanes(lambda l: 8 * l if l < 16 else None), 8) == 1
    # stride 2 doubles: a half warp covers banks 0,1,4,5,...,28,29 twice: 2 per half
    assert an.shared_wavefronts(lanes(lambda l: 16 * l), 8) == 4
    # column of a [32][32] double tile: every lane in banks 0 and 1: 16 per half warp
    assert an.shared_wavefronts(lanes(lambda l: 256 * l), 8) == 32
    # measured on the H200 (data/tracer_validation.json): half warps that together ask for at most
    # 128 bytes without a bank needing two words share ONE wavefront —
    assert an.shared_wavefronts([0] * 32, 8) == 1  # everyone reads one double
    assert an.shared_wavefronts(lanes(lambda l: 8 * (l // 2)), 8) == 1  # pairs share a double: 64 + 64 bytes
    # — but not when each half asks for 128 bytes, even the same 128 bytes
    assert an.shared_wavefronts(lanes(lambda l: 8 * (l % 16)), 8) == 2


def test_16_byte_accesses_are_served_by_quarter_warps():
    assert an.shared_wavefronts(lanes(lambda l: 16 * l), 16) == 4
    assert an.shared_wavefronts(lanes(lambda l: 16 * l if l < 8 else None), 16) == 1
    # stride 32 bytes: a quarter warp touches banks 0-3, 8-11, 16-19, 24-27 twice
    assert an.shared_wavefronts(lanes(lambda l: 32 * l), 16) == 8
    # measured on the H200 (matmul.tiled: LDS.128 of As[ty, k:k+4], every lane the same 16 bytes): 2
    # wavefronts — the two quarters of each half warp share one, the halves do not
    assert an.shared_wavefronts([0] * 32, 16) == 2
    assert an.shared_ideal_wavefronts([0] * 32, 16) == 2
    assert an.shared_wavefronts(lanes(lambda l: 16 * (l // 8)), 16) == 2  # a quarter per 16 bytes: 32 bytes a half
    # the merge needs the two quarters to fit in 128 bytes together: the same 128 bytes twice is 2 per half
    assert an.shared_wavefronts(lanes(lambda l: 16 * (l % 8)), 16) == 4
    assert [p.wavefront for p in an.shared_passes([0] * 32, 16)] == [0] * 16 + [1] * 16


def test_phase_rule_lives_in_one_table():
    assert [len(an.phases(32, s)) for s in (1, 2, 4, 8, 16)] == [1, 1, 1, 2, 4]
    assert an.phase_lanes(8) == an.SHARED_PHASE_LANES[8]


def test_shared_passes_numbers_each_lane():
    # stride 2 words: lanes l and l + 16 share bank 2l; the lower lane goes first
    p = an.shared_passes(lanes(lambda l: 8 * l), 4)
    assert [x.bank for x in p[:3]] == [0, 2, 4]
    assert [x.wavefront for x in p] == [0] * 16 + [1] * 16
    # broadcast: everybody in pass 0
    assert {x.wavefront for x in an.shared_passes([12] * 32, 4)} == {0}
    # 8-byte: passes continue across half warps
    p8 = an.shared_passes(lanes(lambda l: 8 * l), 8)
    assert [x.wavefront for x in p8] == [0] * 16 + [1] * 16
    assert an.shared_passes([None, 4], 4) == [None, an.LanePass(1, 0)]
    # the number of passes agrees with shared_wavefronts
    rng = np.random.default_rng(1)
    for _ in range(50):
        addrs = [int(a) * 4 if rng.random() > 0.2 else None for a in rng.integers(0, 256, 32)]
        used = [x.wavefront for x in an.shared_passes(addrs, 4) if x is not None]
        assert (max(used) + 1 if used else 0) == an.shared_wavefronts(addrs, 4)


def test_global_sectors():
    assert an.global_sectors(lanes(lambda l: 4 * l), 4) == 4  # 128 aligned bytes
    assert an.global_sectors(lanes(lambda l: 4 + 4 * l), 4) == 5  # misaligned by one float: +1
    assert an.global_sectors(lanes(lambda l: 32 * l), 4) == 32  # one sector per lane
    assert an.global_sectors([64] * 32, 4) == 1  # broadcast
    assert an.global_sectors(lanes(lambda l: 8 * l), 8) == 8
    assert an.global_sectors(lanes(lambda l: l), 1) == 1
    assert an.global_sectors([24], 16) == 2  # bytes 24..39 straddle a sector boundary
    assert an.global_lines(lanes(lambda l: 4 + 4 * l), 4) == 2
    assert an.global_ideal_sectors(32, 4) == 4 and an.global_ideal_sectors(1, 4) == 1
    assert an.global_ideal_sectors(32, 8) == 8 and an.global_ideal_sectors(3, 1) == 1


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="at most 32"):
        an.shared_wavefronts([0] * 33, 4)
    with pytest.raises(ValueError, match="positive"):
        an.shared_wavefronts([0], 0)
    with pytest.raises(ValueError, match="at most 32"):
        an.global_sectors([0] * 40, 4)


def test_tracer_vectorised_counting_agrees_with_analysis():
    # course.trace counts many warps at once with NumPy; it must follow these functions exactly
    from course.trace import analysis_vectorised as vec

    rng = np.random.default_rng(7)
    for size in (1, 2, 4, 8, 16, 24, 32):  # 24, 32: whole records of a structured dtype, 128 bytes per phase
        patterns = []
        for _ in range(40):
            base = int(rng.integers(0, 64)) * size
            stride = int(rng.choice([0, 1, 2, 3, 4, 8, 16, 17, 32, 33]))
            lane_fn = [lambda l: l, lambda l: l // 2, lambda l: l // 4, lambda l: l // 8, lambda l: l % 8,
                       lambda l: l % 16][int(rng.integers(0, 6))]  # shared elements: where phases merge
            active = rng.random(32) > rng.choice([0.0, 0.25])
            patterns.append([base + stride * size * lane_fn(l) if active[l] else None for l in range(32)])
        gi, addr, sz, lane = [], [], [], []
        for g, p in enumerate(patterns):
            for l, a in enumerate(p):
                if a is not None:
                    gi.append(g), addr.append(a), sz.append(size), lane.append(l)
        G = len(patterns)
        gi, addr, sz, lane = (np.array(x, dtype=np.int64) for x in (gi, addr, sz, lane))
        wf, ideal = vec.shared_cost(gi, addr, sz, lane, G)
        sec = vec.global_cost(gi, addr + (1 << 32), sz, G)
        for g, p in enumerate(patterns):
            assert wf[g] == an.shared_wavefronts(p, size), (size, p)
            assert ideal[g] == an.shared_ideal_wavefronts(p, size)
            assert sec[g] == an.global_sectors([None if a is None else a + (1 << 32) for a in p], size)
