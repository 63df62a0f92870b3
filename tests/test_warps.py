"""Chapter 02's kernels (course/kernels/warps.py) vs NumPy, the tracer's divergence view, warp arithmetic, GPU script."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import course
from course.kernels import warps
from course.trace import trace

ROOT = pathlib.Path(__file__).resolve().parents[1]
SEED = int.from_bytes(os.urandom(4), "little")


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)  # fresh data every session; the seed is in the failure message


@pytest.mark.parametrize("name", sorted(warps.KERNELS))
@pytest.mark.parametrize("n, threads_per_block", [(1, 32), (33, 32), (100, 96), (1025, 128)])
def test_every_version_matches_numpy(name, n, threads_per_block, rng):
    patterns = warps.FLAG_PATTERNS if name == "flag_branch" else ("random",)
    for flags in patterns:
        out, ref = warps.run(name, n, threads_per_block, iters=5, rng=rng, flags=flags)
        np.testing.assert_allclose(out, ref, rtol=1e-6, err_msg=f"{name} n={n} flags={flags} seed={SEED}")


def test_paths_by_hand():
    x = np.array([0.5], np.float32)
    assert warps.PATH_A(x, 1)[0] == np.float32(0.5) * np.float32(0.9999) + np.float32(0.0001)
    assert warps.PATH_B(x, 1)[0] == np.float32(0.375)  # 0.5 * 0.5 * 0.5 + 0.25
    assert warps.PATH_B(x, 2)[0] == np.float32(0.375 * 0.375 * 0.5 + 0.25)


def test_even_odd_reference_by_hand():
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([10, 10, 10, 10], np.float32)
    np.testing.assert_array_equal(warps.reference_even_odd(a, b, 2), [11, 20, 13, 40])  # lanes 0 1 0 1


@pytest.mark.parametrize("cols, rows", [(12, 8), (32, 4), (33, 3)])
def test_warp_and_lane_of_2d_blocks(cols, rows):
    out = np.zeros((rows, cols, 2), np.int32)
    warps.record_warp_lane[1, (cols, rows)](out)
    np.testing.assert_array_equal(out, warps.reference_warp_lane(rows, cols))
    if cols == 12:
        assert out[2, 8].tolist() == [1, 0]  # thread (8, 2) is tid 2 * 12 + 8 = 32: warp 1, lane 0


@pytest.mark.skipif(course.backend.on_gpu(), reason="on a GPU the compiler decides whether the warp splits "
                    "(it may predicate both sides); chapter 02 prints what the H200 reported")
def test_active_masks_on_each_side_of_a_branch():
    masks = np.zeros(64, np.uint32)
    warps.branch_masks[1, 64](masks)
    assert masks[0] == 0x55555555 and masks[1] == 0xAAAAAAAA
    np.testing.assert_array_equal(masks, warps.reference_branch_masks(64))


def _divergence(kernel, *args, blocks=2, threads=128):
    return trace(kernel, blocks, threads, *args).divergence()


def test_tracer_sees_the_even_odd_split_and_not_the_select(rng):
    n = 256
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    d = _divergence(warps.even_odd_branch, a, b, np.zeros(n, np.float32), n)
    assert len(d.branches) == 1
    br = d.branches[0]
    assert "% 2" in br.source and br.divergent == br.executions == 8  # 8 warps, every one split
    assert sorted(br.sides.values()) == [128, 128]  # 16 lanes each way in each of 8 warps
    s = _divergence(warps.even_odd_select, a, b, np.zeros(n, np.float32), n)
    assert s.branches == [] and s.avg_active_lanes == 32.0


def test_lane_branch_loses_lanes_and_warp_branch_does_not(rng):
    x = rng.random(256).astype(np.float32)
    lane = _divergence(warps.lane_branch, x, np.zeros_like(x), 4)
    warp = _divergence(warps.warp_branch, x, np.zeros_like(x), 4)
    assert warp.branches == [] and warp.avg_active_lanes == 32.0
    assert len(lane.branches) == 1 and lane.avg_active_lanes < 24
    # every warp of lane_branch runs both loops: more warp steps for the same work
    assert lane.steps > warp.steps


def test_sorted_flags_keep_warps_whole(rng):
    x = rng.random(256).astype(np.float32)
    f = np.zeros(256, np.int32)
    f[100:] = 1  # sorted: only warp 3 (threads 96-127) holds both kinds
    d = _divergence(warps.flag_branch, x, f, np.zeros_like(x), 3)
    assert sum(1 for e in d.events if e[0] == d.branches[0].line) == 1
    assert list(warps.warp_paths(f != 0)) == [1, 1, 1, 2, 1, 1, 1, 1]


def test_warp_arithmetic_by_hand():
    alternate = np.arange(64) % 2 == 1
    assert list(warps.warp_paths(alternate)) == [2, 2]
    assert warps.expected_cost(alternate, 1.0, 2.0) == 2 * (1.0 + 2.0)
    by_warp = (np.arange(64) // 32) % 2 == 1
    assert warps.expected_cost(by_warp, 1.0, 2.0) == 1.0 + 2.0
    s = warps.warp_slots(66, 33)
    assert (s["blocks"], s["warps"]) == (2, 4) and s["busy_fraction"] == 66 / 128
    assert warps.warp_slots(1 << 20, 256)["busy_fraction"] == 1.0


def test_tracer_counts_the_empty_lanes_of_33_thread_blocks(rng):
    x = rng.random(66).astype(np.float32)
    d = _divergence(warps.chain, x, np.zeros_like(x), 2, blocks=2, threads=33)
    lanes = sorted(v[2] for v in d.warps.values())
    assert lanes == [1, 1, 32, 32]


def test_bad_flags_pattern_is_named():
    with pytest.raises(ValueError, match="flags pattern 'odd'"):
        warps.flags_for("odd", 8, np.random.default_rng(0))


def test_gpu_script_dry_run(tmp_path):
    proc = subprocess.run([sys.executable, "scripts/gpu/measure_warps.py", "--dry-run", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    files = {p.name for p in tmp_path.glob("*.json")}
    assert {"warps_even_odd.json", "warps_divergence.json", "warps_block_size.json"} <= files
    for f in tmp_path.glob("*.json"):
        for rec in json.loads(f.read_text()):
            for key in ("benchmark", "variant", "ms", "reps", "size", "dtype", "device", "driver", "numba_cuda",
                        "date", "run"):
                assert key in rec, (f.name, key)
            assert rec["dry_run"] is True and rec["ms"] is None  # never a CPU time as a GPU time
    div = {r["variant"]: r for r in json.loads((tmp_path / "warps_divergence.json").read_text())}
    assert div["flag_branch[alternate]"]["split_warps"] == div["flag_branch[alternate]"]["warps"]
    assert div["flag_branch[zeros]"]["split_warps"] == 0
