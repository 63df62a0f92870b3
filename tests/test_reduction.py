"""course.kernels.reduction: every version against NumPy, the tolerance, and the tracer against hand counts.

Sizes on the CPU engine: 1, 33, 1000, 4099 and 2^14+7 for every version (a CUDA thread costs about
10 µs on the engine, more on a loaded machine, so 2^20+7 would take ~10 s per one-element-per-thread
version); 2^20+7 for ``grid_stride`` (its few threads loop over the array) and 2^18+7 for ``two_pass``.  The GPU lane runs the
same tests, and scripts/gpu/bench_reduction.py checks every version at 2^20+7 on the H200.
"""

import math

import numpy as np
import pytest

import course
from course.kernels import reduction as R
from course.trace import trace

SIZES = [1, 33, 1000, 4099, (1 << 14) + 7]


def small_ints(rng, n):
    # integers in [-8, 8]: every partial sum is an integer far below 2^24, so float32 adds are exact
    # and every version, in any order, must return exactly the float64 sum
    return rng.integers(-8, 9, n).astype(np.float32)


@pytest.mark.parametrize("name", list(R.REDUCTION_VERSIONS))
def test_every_version_exact_on_integers(name, rng):
    v = R.REDUCTION_VERSIONS[name]
    for n in SIZES:
        a = small_ints(rng, n)
        got = v.run(a)
        assert got == R.reference(a), f"{name}, n={n}: got {got}, exact sum {R.reference(a)}"


@pytest.mark.parametrize("name", list(R.REDUCTION_VERSIONS))
def test_every_version_within_tolerance_on_floats(name, rng):
    v = R.REDUCTION_VERSIONS[name]
    for n in (33, 1000, 4099):
        a = rng.standard_normal(n).astype(np.float32)
        got = v.run(a)
        assert abs(got - R.reference(a)) <= R.tolerance(a), (name, n, got, R.reference(a))


@pytest.mark.parametrize("name,n", [("grid_stride", (1 << 20) + 7), ("two_pass", (1 << 18) + 7)])
def test_grid_stride_versions_at_large_sizes(name, n, rng):
    a = small_ints(rng, n)
    assert R.REDUCTION_VERSIONS[name].run(a) == R.reference(a)


@pytest.mark.parametrize("width,unroll,threads,bps,bounds", [(1, 1, 64, 1, None), (2, 8, 128, 2, None),
                                                             (4, 2, 32, 3, None), (4, 16, 256, 1, (512, 1))])
def test_sweep_configurations(width, unroll, threads, bps, bounds, rng):
    v = R.grid_stride_version(width, unroll, threads, bps, bounds=bounds)
    for n in (1, 3, 1000, 4099):
        a = small_ints(rng, n)
        assert v.run(a) == R.reference(a), (v.name, n)


def test_tolerance_by_hand_and_tight_enough(rng):
    a = np.ones(100, np.float32)
    assert R.tolerance(a) == pytest.approx(4 * 10 * 2.0**-24 * 100)
    b = rng.standard_normal(1000).astype(np.float32)
    # losing the largest element must fail the check
    k = int(np.argmax(np.abs(b)))
    assert abs(R.reference(np.delete(b, k)) - R.reference(b)) > R.tolerance(b)
    # a running float16 sum (cumsum adds one element after the other) is far outside it: past 512 the
    # float16 spacing is 0.5, so each ~1.1 added loses ~0.1 (about 50 in all, against a tolerance of ~0.01)
    c = (1.1 + 0.01 * rng.standard_normal(1000)).astype(np.float32)
    half = float(np.cumsum(c.astype(np.float16), dtype=np.float16)[-1])
    assert abs(half - R.reference(c)) > 100 * R.tolerance(c)


def test_seed_story_in_order():
    names = list(R.REDUCTION_VERSIONS)
    assert names[:4] == ["atomic_b64", "atomic_b256", "atomic_float4", "block_interleaved"]
    assert list(R.SEED_MS) == names[:4]
    assert [R.SEED_MS[n] for n in names[:4]] == [12.0, 5.0, 3.2, 2.8]  # seed 003 §5, word for word
    v64, v256 = R.REDUCTION_VERSIONS["atomic_b64"], R.REDUCTION_VERSIONS["atomic_b256"]
    assert v64.kernel is v256.kernel and (v64.threads, v256.threads) == (64, 256)
    # seed 003: "Block=64, Grid=15625" is 10^6 elements; "Block=256, Grid=4096" is 2^20
    assert v64.griddim(10**6) == 15625 and v256.griddim(1 << 20) == 4096


def test_grid_sizes():
    v = R.REDUCTION_VERSIONS["atomic_float4"]
    assert v.griddim(1 << 20) == (1 << 20) // 4 // 256
    assert v.griddim(3) == 1  # three leftovers, no whole float4: still one block
    assert R.REDUCTION_VERSIONS["unrolled"].griddim(1 << 20) == (1 << 20) // 16 // 256
    gs = R.REDUCTION_VERSIONS["grid_stride"]
    assert gs.griddim(1 << 28) == 4 * R.sm_count()
    assert gs.griddim(10) == 1  # never more blocks than there is work for


def test_bad_input_messages():
    v = R.REDUCTION_VERSIONS["grid_stride"]
    with pytest.raises(ValueError, match="1-D float32"):
        v.launcher(np.zeros(8, np.float64), np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="1-D float32"):
        v.launcher(np.zeros((2, 4), np.float32), np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="width 3"):
        R.vector_load(3)
    assert R.REDUCTION_VERSIONS["two_pass"].run(np.zeros(0, np.float32)) == 0.0


def test_sweep_lists():
    cands = R.sweep_candidates()
    assert len(cands) == 14 and len(set(cands)) == 14
    assert all(t * b <= 2048 for t, b in R.sweep_launches())
    assert all(t <= 512 for t, _ in R.sweep_launches((512, 1)))
    with pytest.raises(ValueError, match="launch bounds"):
        R.grid_stride_version(4, 16, 1024, 1, bounds=(512, 1))


# --- the tracer: hand-counted memory traffic (the same cases run under Nsight Compute on the H200) -------------------


@pytest.mark.parametrize("case", R.NCU_CASES, ids=lambda c: c.name)
def test_ncu_cases_match_hand_counts(case):
    rep = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), lines=False)
    totals = rep.totals()
    for key, want in case.expect.items():
        assert totals[key] == want, (case.name, key, totals[key], want)


def test_float4_is_one_16_byte_access_per_thread():
    a = np.arange(4096, dtype=np.float32)
    rep = trace(R.atomic_float4, 4, 256, a, np.zeros(1, np.float32), lines=False)
    t = rep.totals()
    assert t["global_load_sectors"] / t["global_load_requests"] == 16  # 32 lanes × 16 B = 512 B = 16 sectors


def test_interleaved_diverges_and_strided_conflicts():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(4096).astype(np.float32), np.zeros(1, np.float32))
    reps = {name: trace(R.REDUCTION_VERSIONS[name].kernel, 4, 256, *args) for name in
            ("block_interleaved", "block_strided", "block_sequential")}
    eff = {k: r.divergence().simt_efficiency for k, r in reps.items()}
    assert eff["block_interleaved"] < eff["block_strided"] and eff["block_interleaved"] < eff["block_sequential"]
    waves = {k: r.totals()["shared_load_wavefronts"] / r.totals()["shared_load_requests"] for k, r in reps.items()}
    assert waves["block_sequential"] == 1 and waves["block_interleaved"] == 1
    assert waves["block_strided"] == pytest.approx(380 / 100)


@pytest.mark.skipif(not course.on_gpu(), reason="needs a GPU: checks the 16-byte load in the compiled code")
def test_gpu_float4_compiles_to_128_bit_loads():
    from numba import cuda

    a = cuda.to_device(np.ones(1024, np.float32))
    out = cuda.to_device(np.zeros(1, np.float32))
    R.atomic_float4[1, 256](a, out)
    ptx = list(R.atomic_float4.inspect_asm().values())[0]
    assert "ld.global.v4.f32" in ptx
    assert math.isclose(out.copy_to_host()[0], 1024.0)


def test_benchmark_dry_run(tmp_path):
    """scripts/gpu/bench_reduction.py --dry-run: every version checked on the CPU, records in the shared schema."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    from course.measure import bench

    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, COURSE_BACKEND="cpu")
    res = subprocess.run([sys.executable, str(root / "scripts/gpu/bench_reduction.py"), "--dry-run", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, env=env, cwd=root)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    records = json.loads((tmp_path / "reduction.json").read_text())
    assert {r["variant"] for r in records} >= set(R.REDUCTION_VERSIONS)
    assert all(r["dry_run"] and r["ms"] is None for r in records)  # nothing timed on the CPU
    assert all(not bench.check_record(r) for r in records)
    assert "DRY RUN" in res.stdout
