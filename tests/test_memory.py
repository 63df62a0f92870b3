"""Chapter 03's kernels (course/kernels/memory.py) vs NumPy, sector arithmetic vs the tracer, latency probes, GPU script."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import course
from course.kernels import memory as m
from course.trace import trace

ROOT = pathlib.Path(__file__).resolve().parents[1]
SEED = int.from_bytes(os.urandom(4), "little")


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def blocks(n, tpb):
    return -(-n // tpb)


# --- bandwidth kernels vs NumPy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 33, 1025])
def test_reads_match_numpy(n, rng):
    for s in (1, 2, 7, 32, 64):
        src = rng.standard_normal(n * s).astype(np.float32)
        out = np.zeros(n, np.float32)
        m.read_strided[blocks(n, 128), 128](src, out, s)
        np.testing.assert_array_equal(out, src[::s][:n], err_msg=f"stride {s} seed {SEED}")
    src = rng.standard_normal(n + 33).astype(np.float32)
    for off in (0, 1, 31, 33):
        out = np.zeros(n, np.float32)
        m.read_offset[blocks(n, 128), 128](src, out, off)
        np.testing.assert_array_equal(out, src[off:off + n])
    src = rng.standard_normal(96 * 32).astype(np.float32)
    out = np.zeros(n, np.float32)
    m.read_tx32[blocks(n, 96), 96](src, out)
    np.testing.assert_array_equal(out, src[(np.arange(n) % 96) * 32])


@pytest.mark.parametrize("n", [1, 33, 1025])
def test_particles_aos_and_soa_match_numpy(n, rng):
    p = m.random_particles(n, rng)
    q = m.to_soa(p)
    assert not np.shares_memory(p, q)  # n = 1 once made q a view of p
    dt = np.float32(0.25)
    want = p.copy()
    want[:, 0:3] += want[:, 3:6] * dt  # x, y, z += vx, vy, vz * dt
    m.advance_aos[blocks(n, 128), 128](p, dt)
    m.advance_soa[blocks(n, 128), 128](q, dt)
    np.testing.assert_allclose(p, want, rtol=1e-6)
    np.testing.assert_allclose(q, want.T, rtol=1e-6)


@pytest.mark.parametrize("shape", [(17, 16), (1, 33), (1025, 512)])
def test_walks_match_numpy(shape, rng):
    rows, cols = shape
    a = rng.standard_normal(shape).astype(np.float32)
    for kernel, grid in ((m.walk_rows, (blocks(cols, 32), blocks(rows, 8))), (m.walk_cols, (blocks(rows, 32), blocks(cols, 8)))):
        out = np.zeros_like(a)
        kernel[grid, (32, 8)](a, out, np.float32(-1.5))
        np.testing.assert_array_equal(out, a * np.float32(-1.5))


def test_constant_kernels_match_numpy():
    n, reps = 70, 40
    out = np.zeros(n, np.float32)
    lane = (np.arange(n) % 64) % 32
    want_lane = sum(m.COEFFS[(k + lane) % 1024] for k in range(reps))
    want_bcast = np.full(n, sum(m.COEFFS[k] for k in range(reps)), np.float32)
    m.const_broadcast[2, 64](out, reps)
    np.testing.assert_allclose(out, want_bcast, rtol=1e-5)
    m.const_per_lane[2, 64](out, reps)
    np.testing.assert_allclose(out, want_lane, rtol=1e-5)
    m.global_per_lane[2, 64](m.COEFFS.copy(), out, reps)
    np.testing.assert_allclose(out, want_lane, rtol=1e-5)


def test_local_and_many_live_match_numpy(rng):
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.float32)
    m.local_dynamic[2, 64](x, idx, out)
    np.testing.assert_allclose(out, x * ((idx & 31) + 1))
    for kernel in (m.many_live, m.many_live_capped):
        kernel[2, 64](x, out, 7)
        np.testing.assert_allclose(out, m.reference_many_live(x, 7), rtol=1e-5)
    # one iteration by hand for thread 0: a_k starts at v + k; the first group of four uses old values
    v = np.float32(2.0)
    h = np.float32(0.5)
    a = [v + np.float32(k) for k in range(16)]
    first = [a[k + 1] * h + a[k + 2] * h for k in range(4)]
    assert first == [np.float32(3.5), np.float32(4.5), np.float32(5.5), np.float32(6.5)]  # (v+k+1 + v+k+2) / 2
    one = m.reference_many_live(np.array([2.0], np.float32), 1)[0]
    # a0 … a13 become v + k + 1.5; a14 and a15 see the new a0 = 3.5 and a1 = 4.5
    by_hand = sum(2 + k + 1.5 for k in range(14)) + (17 + 3.5) * 0.5 + (3.5 + 4.5) * 0.5
    assert one == pytest.approx(by_hand, rel=1e-6)


# --- sectors: arithmetic by hand, then the tracer -----------------------------------------------------------------


def test_sector_arithmetic_by_hand():
    assert [m.sectors_strided(s) for s in (1, 2, 3, 4, 7, 8, 9, 64)] == [4, 8, 12, 16, 28, 32, 32, 32]
    assert m.sectors_strided(1, itemsize=8) == 8 and m.sectors_strided(4, itemsize=8) == 32
    assert [m.sectors_offset(o) for o in (0, 1, 7, 8, 9, 16, 31, 32)] == [4, 5, 5, 4, 5, 4, 5, 4]
    assert m.useful_fraction(4) == 1.0 and m.useful_fraction(32) == 0.125
    assert m.const_serialisation([0] * 32) == 1 and m.const_serialisation(list(range(32))) == 32
    assert m.const_serialisation([None] * 16 + [5] * 16) == 1
    with pytest.raises(ValueError):
        m.sectors_strided(0)


def _load_sectors(kernel, *args, blocks=2, threads=64):
    t = trace(kernel, blocks, threads, *args, lines=False).totals()
    return t["global_load_sectors"] / t["global_load_requests"]


def test_tracer_agrees_with_the_stride_and_offset_arithmetic(rng):
    for s in list(range(1, 17)) + [31, 32, 33, 64]:
        src = rng.standard_normal(128 * s).astype(np.float32)
        assert _load_sectors(m.read_strided, src, np.zeros(128, np.float32), s) == m.sectors_strided(s), s
    src = rng.standard_normal(128 + 40).astype(np.float32)
    for off in range(0, 33):
        assert _load_sectors(m.read_offset, src, np.zeros(128, np.float32), off) == m.sectors_offset(off), off


@pytest.mark.parametrize("case", m.NCU_CASES, ids=lambda c: c.name)
def test_ncu_cases_trace_to_their_hand_counts(case):
    totals = trace(case.kernel, case.griddim, case.blockdim, *case.args(seed=1), lines=False).totals()
    for key, want in case.expect.items():
        assert totals[key] == want, (case.name, key, totals[key], want)


# --- latency probes ------------------------------------------------------------------------------------------------


def test_random_cycle_is_one_cycle_through_every_slot(rng):
    order = m.random_cycle(50, rng)
    assert order[0] == 0 and sorted(order) == list(range(50))
    nxt = m.chain_array(order, 4, 200)
    assert nxt.dtype == np.uint32  # unsigned: no wrap-around test in the timed loop
    seen = [m.walk(nxt, k) for k in range(50)]
    assert sorted(seen) == [4 * s for s in range(50)]  # every slot once ...
    assert m.walk(nxt, 50) == 0  # ... and back to the start
    sparse = m.random_cycle(1000, rng, visit=10)
    assert len(set(sparse)) == 10 and sparse[0] == 0
    with pytest.raises(ValueError, match="needs more than"):
        m.chain_array(order, 4, 100)


def test_probes_end_where_the_host_walk_ends(rng):
    out = np.zeros(2, np.int64)
    order = m.random_cycle(32, rng)
    nxt = m.chain_array(order, 32, 32 * 32)
    for kernel in (m.chase, m.chase_cg):
        kernel[1, 1](nxt, 45, 32, out)
        assert out[0] == order[(32 + 45) % 32] * 32
        if course.backend.on_gpu():
            assert out[1] > 0  # clock64 counted something
        else:
            assert out[1] == 0  # no cycle counter on the CPU: the probe must not pretend
    sh = m.chain_array(m.random_cycle(m.CHASE_SHARED_WORDS, rng), 1, m.CHASE_SHARED_WORDS)
    m.chase_shared[1, 1](sh, 77, out)
    assert out[0] == m.walk(sh, 77)
    loc = m.chain_array(m.random_cycle(m.CHASE_LOCAL_WORDS, rng), 1, m.CHASE_LOCAL_WORDS)
    m.chase_local[1, 1](loc, 20, out)
    assert out[0] == m.walk(loc, m.CHASE_LOCAL_WORDS + 20)
    m.chase_const[1, 1](20, out)
    assert out[0] == m.walk(m.CHASE_CONST, m.CHASE_CONST_WORDS + 20)
    assert sorted(m.CHASE_CONST) == list(range(m.CHASE_CONST_WORDS))  # one cycle through all 256 words
    f = np.zeros(1, np.float32)
    m.fma_latency[1, 1](np.array([0.5, 0.5, 0.5], np.float32), 3, f, out)
    assert f[0] == np.float32(0.9375)  # 0.5 -> 0.75 -> 0.875 -> 0.9375


def test_four_chains_per_thread_end_where_the_host_walks_end(rng):
    # a cycle 0 -> 2 -> 1 -> 3 -> 0 by hand: two steps from 0 reach 1, from 3 reach 2
    order = np.array([0, 2, 1, 3])
    nxt = m.chain_array(order, 1, 4)
    assert list(m.reference_chase_each(nxt, np.array([[0, 3, 2, 1]], np.uint32), 2)[0]) == [1, 2, 3, 0]
    steps = 9
    order = m.random_cycle(m.CHAINS * (steps + 1) + 3, rng)
    nxt = m.chain_array(order, 1, len(order))
    starts = m.disjoint_starts(order, 1, 40, steps, rng)
    visited = [{int(m.walk(nxt, k, int(s))) for s in row for k in range(steps + 1)} for row in starts]
    assert all(len(v) == m.CHAINS * (steps + 1) for v in visited)  # one thread's four walks never meet
    out = np.zeros((40, m.CHAINS), np.uint32)
    m.chase_each[1, 64](nxt, starts, np.int32(steps), out)
    assert [[m.walk(nxt, steps, int(s)) for s in row] for row in starts] == out.tolist()
    with pytest.raises(ValueError, match="do not fit"):
        m.disjoint_starts(order, 1, 1, len(order), rng)


def test_bin_counts_local_counts_each_value(rng):
    x = np.array([[3, 0], [3, 15], [7, 15]], np.int32)  # column 0: 3, 3, 7; column 1: 0, 15, 15
    want = np.zeros((m.BINS, 2), np.int32)
    want[3, 0], want[7, 0], want[0, 1], want[15, 1] = 2, 1, 1, 2
    assert np.array_equal(m.reference_bin_counts(x), want)
    x = rng.integers(0, m.BINS, (5, 70)).astype(np.int32)
    out = np.full((m.BINS, 70), -1, np.int32)
    m.bin_counts_local[2, 64](x, out)
    assert np.array_equal(out, m.reference_bin_counts(x)) and (out.sum(axis=0) == 5).all()


def test_scatter_writes_a_sparse_chain(rng):
    dst = np.zeros(1000, np.uint32)
    pos = np.array([0, 100, 900], np.int64)
    m.scatter[1, 32](dst, pos, np.array([100, 900, 0], np.uint32))
    assert m.walk(dst, 3) == 0 and m.walk(dst, 1) == 100 and dst.sum() == 1000


# --- the GPU script, dry run ------------------------------------------------------------------------------------------


def test_gpu_script_dry_run(tmp_path):
    proc = subprocess.run([sys.executable, "scripts/gpu/measure_memory.py", "--dry-run", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    names = {p.stem for p in tmp_path.glob("*.json")}
    assert {"memory_stride", "memory_offset", "memory_tx32", "memory_aos_soa", "memory_walk", "memory_const",
            "memory_local", "memory_latency", "memory_latency_sweep"} <= names
    for path in tmp_path.glob("*.json"):
        for rec in json.loads(path.read_text()):
            assert rec["dry_run"] is True and rec["ms"] is None
            assert rec.get("cycles_per_step") is None  # no cycles invented on the CPU
    lat = {r["variant"] for r in json.loads((tmp_path / "memory_latency.json").read_text())}
    # the claims ledger reads these variants: keep the names in step with data/claims.json
    ledger = json.loads((ROOT / "data" / "claims.json").read_text())
    # a pending claim's "planned" measurement names a variant no script makes yet: only made ones must exist
    checks = [c["check"] for c in ledger if c.get("check") and not c.get("planned")]
    checks += [sub for ch in checks if ch["kind"] == "all" for sub in ch["checks"]]  # an all-of check's parts
    wanted = {ch[side]["variant"] for ch in checks for side in ("a", "b")
              if side in ch and ch[side].get("benchmark") == "memory_latency"}
    assert wanted <= lat, wanted - lat
