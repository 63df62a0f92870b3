"""Chapter 08's kernels against NumPy, the chunking rule, and the transfer benchmark's dry run."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import course  # noqa: F401
from course.kernels import transfers as tr
from conftest import seeded_rng

ROOT = pathlib.Path(__file__).resolve().parents[1]
RNG = seeded_rng(__name__)


@pytest.mark.parametrize("n", [1, 33, 1000])
def test_scale_matches_numpy(n):
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    tr.scale[2, 64](x, out, np.float32(1.5))  # 128 threads: a grid-stride loop for n = 1000
    np.testing.assert_array_equal(out, x * np.float32(1.5))


def test_busy_reference_is_the_recurrence():
    x = RNG.standard_normal(50)
    v = x.copy()
    for _ in range(37):
        v = v * float(tr.DECAY) + float(tr.OFFSET)
    np.testing.assert_allclose(tr.busy_reference(x, 37), v, rtol=1e-12, atol=1e-12)


def test_busy_kernel_stays_within_float32_rounding():
    n, iters = 300, 25
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    tr.busy[2, 64](x, out, iters)
    # each step rounds once or twice (a multiply and an add, ≤ 2^-24 relative each) on values below 4
    np.testing.assert_allclose(out, tr.busy_reference(x, iters), rtol=0, atol=iters * 2 * 4 * 2.0 ** -24)


def test_reread_reads_every_element_passes_times():
    passes = 3
    n = passes * tr.REREAD_STEP + 5
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    tr.reread[4, 128](x, out, passes)
    # by hand for one element: i = n - 1 wraps on every pass after the first
    i = n - 1
    by_hand = sum(float(x[(i + p * tr.REREAD_STEP) % n]) for p in range(passes))
    assert out[i] == pytest.approx(by_hand, rel=1e-5, abs=1e-5)
    np.testing.assert_allclose(out, tr.reread_reference(x, passes), rtol=1e-5, atol=1e-5)


def test_reread_refuses_too_few_elements():
    with pytest.raises(ValueError, match="passes need"):
        tr.reread_reference(np.zeros(10, np.float32), 2)


@pytest.mark.parametrize("n,pieces", [(10, 3), (1 << 20, 8), (7, 7), (5, 8)])
def test_chunks_cover_the_range(n, pieces):
    cs = tr.chunks(n, pieces)
    assert len(cs) == pieces and cs[0][0] == 0 and cs[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(cs, cs[1:]))
    sizes = [b - a for a, b in cs]
    assert max(sizes) - min(sizes) <= 1


def test_chunks_refuses_zero_pieces():
    with pytest.raises(ValueError, match="at least one"):
        tr.chunks(10, 0)


def test_blocks_for():
    assert tr.blocks_for(1) == 1
    assert tr.blocks_for(1000, 256) == 4
    assert tr.blocks_for(10**9, 256) == 132 * 16


def test_bench_transfers_dry_run(tmp_path):
    env = dict(os.environ, COURSE_BACKEND="cpu")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu" / "bench_transfers.py"), "--dry-run",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    records = json.loads((tmp_path / "transfers.json").read_text())
    variants = {rec["variant"] for rec in records}
    assert {"h2d_pageable", "h2d_pinned", "d2d", "pipelined_4_streams", "scale_mapped"} <= variants
    assert all(rec.get("dry_run") and rec.get("ms") is None for rec in records)
