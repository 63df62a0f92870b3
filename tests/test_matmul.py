"""Chapter 09's matmul kernels: right on awkward shapes, the seed's bug shown, bank counts derived by hand.

The big registry kernels (256 threads per block) are slow on the CPU engine, so the shape sweep runs
the same factories with small block tiles (16 threads); ``bench_matmul.py --dry-run`` (last test) runs
every registry version itself and exits non-zero if any is wrong.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import course

from course.engine import KernelError
from course.kernels import matmul as mm
from course.trace import trace
from conftest import seeded_rng

ROOT = pathlib.Path(__file__).resolve().parents[1]
RNG = seeded_rng(__name__)


def run(v, m, k, n):
    a, b = mm.random_operands(m, k, n, RNG)
    c = np.full((m, n), np.nan, np.float32)  # poisoned: an unwritten element stays NaN and counts as wrong
    v.launch(a, b, c)
    return a, b, c


# --- the check itself ------------------------------------------------------------------------------------------


def test_error_bound_accepts_float32_rounding_and_rejects_a_missing_term():
    a, b = mm.random_operands(40, 300, 30, RNG)
    # NumPy's float32 product sums in another order than any kernel: within the bound
    assert not mm.wrong_elements(a @ b, a, b).any()
    # one term left out of one sum is the size of a product, far outside K·u·Σ|a||b| — the largest term
    # of that sum, since a random product can be arbitrarily close to zero
    c = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    k = int(np.argmax(np.abs(a[3, :] * b[:, 4])))
    c[3, 4] -= a[3, k] * b[k, 4]
    wrong = mm.wrong_elements(c, a, b)
    assert wrong.sum() == 1 and wrong[3, 4]
    c[0, 0] = np.nan
    assert mm.wrong_elements(c, a, b)[0, 0]


def test_flops_and_relative_error():
    assert mm.flops(2, 3, 4) == 2 * 2 * 3 * 4
    ref = np.ones((2, 2))
    assert mm.relative_error(ref * (1 + 1e-3), ref) == pytest.approx(1e-3)


# --- correctness on awkward shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["naive", "tiled"])
@pytest.mark.parametrize("shape", [(17, 16, 33), (1, 33, 1), (33, 17, 65)])
def test_simple_versions_on_awkward_shapes(name, shape):
    a, b, c = run(mm.MATMUL_VERSIONS[name], *shape)
    assert not mm.wrong_elements(c, a, b).any()


SMALL = {  # the registry's factories with 16-thread blocks: the same code, cheap on the CPU
    "regtile": lambda: mm.regtile_version("t", "", BM=16, BN=16, BK=4, TM=4, TN=4),
    "regtile_cf": lambda: mm.regtile_version("t", "", BM=16, BN=16, BK=4, TM=4, TN=4, pad=4, strided=True),
    "vectorized": lambda: mm.fast_version("t", "", BM=16, BN=16, BK=4, TM=4, TN=4),
    "double_buffer": lambda: mm.fast_version("t", "", BM=16, BN=16, BK=4, TM=4, TN=4, double_buffer=True),
    "unrolled": lambda: mm.fast_version("t", "", BM=16, BN=16, BK=8, TM=4, TN=4, double_buffer=True, unroll=4),
    "partial_loads": lambda: mm.fast_version("t", "", BM=16, BN=32, BK=4, TM=4, TN=8, double_buffer=True, unroll=2),
    # 16×8 threads in 4 warps of 4×8: the warp arrangement the sweep tries
    "warp_rows": lambda: mm.fast_version("t", "", BM=32, BN=64, BK=4, TM=4, TN=4, double_buffer=True, unroll=2,
                                         warp_rows=4),
}


@pytest.mark.parametrize("family", list(SMALL))
@pytest.mark.parametrize("shape", [(17, 16, 33), (1, 33, 1), (32, 24, 48), (20, 12, 36)])
def test_register_tiled_factories_on_awkward_shapes(family, shape):
    # (32, 24, 48) and (20, 12, 36): K and N multiples of 4, so the 16-byte path runs (whole tiles) next
    # to the guarded one (edge tiles); the others take the guarded path only
    a, b, c = run(SMALL[family](), *shape)
    assert not mm.wrong_elements(c, a, b).any(), family


def test_sixteen_byte_path_is_taken_when_legal():
    a, b = mm.random_operands(32, 24, 48, RNG)
    c = np.zeros((32, 48), np.float32)
    assert mm.vec_ok(a, b, c) == 1
    assert mm.vec_ok(a[:, :23], b[:23], c) == 0  # K = 23: rows of a not 16-byte aligned
    v = SMALL["vectorized"]()
    report = trace(v.kernel, v.griddim(32, 48), v.threads, *v.args(a, b, c), lines=False)
    sizes = {(r.space, r.op, r.size) for r in report.by_line()}
    assert ("global", "load", 16) in sizes and ("shared", "load", 16) in sizes and ("global", "store", 16) in sizes
    assert not mm.wrong_elements(c, a, b).any()


def test_invalid_configurations_are_refused():
    with pytest.raises(ValueError, match="does not divide"):
        mm.fast_kernel(BM=16, BN=16, BK=6, TM=4, TN=4)
    with pytest.raises(ValueError, match="does not divide"):
        mm.regtile_kernel(BM=16, BN=16, BK=4, TM=3, TN=4)


# --- the seed's kernel and its bug ----------------------------------------------------------------------------


def test_seed_kernel_is_right_when_n_is_a_multiple_of_tile():
    a, b, c = run(mm.MATMUL_VERSIONS["seed_tiled"], 32, 32, 32)
    assert not mm.wrong_elements(c, a, b).any()


@pytest.mark.skipif(course.on_gpu(), reason="a GPU does not stop at an out-of-bounds access; the CPU engine does")
def test_seed_kernel_grid_rounded_up_reads_past_the_arrays():
    n = 20  # not a multiple of TILE = 16
    a, b = mm.random_operands(n, n, n, RNG)
    c = np.zeros((n, n), np.float32)
    grid = (2, 2)  # ceil(20 / 16): threads with row >= 20 index past the 400 elements
    with pytest.raises(KernelError, match="out of bounds"):
        mm.seed_tiled[grid, (mm.TILE, mm.TILE)](a.reshape(-1), b.reshape(-1), c.reshape(-1), n)


def test_seed_kernel_grid_rounded_down_gets_every_element_wrong():
    n = 20
    a, b = mm.random_operands(n, n, n, RNG)
    c = np.full((n, n), np.nan, np.float32)
    mm.seed_tiled[(1, 1), (mm.TILE, mm.TILE)](a.reshape(-1), b.reshape(-1), c.reshape(-1), n)
    # by hand: one 16×16 block writes c[:16, :16]; each of those sums stops at k = 16 of 20
    assert np.isnan(c[16:, :]).all() and np.isnan(c[:, 16:]).all()
    partial = a[:16, :16].astype(np.float64) @ b[:16, :16].astype(np.float64)
    np.testing.assert_allclose(c[:16, :16], partial, rtol=1e-4, atol=1e-4)
    assert mm.wrong_elements(c, a, b).all()


def test_seed_kernel_refuses_non_square_operands():
    a, b = mm.random_operands(4, 8, 4, RNG)
    with pytest.raises(ValueError, match="square"):
        mm.MATMUL_VERSIONS["seed_tiled"].launch(a, b, np.zeros((4, 4), np.float32))


def test_registry_order_and_fields():
    assert list(mm.MATMUL_VERSIONS) == ["naive", "seed_tiled", "tiled", "regtile", "regtile_cf", "vectorized",
                                        "double_buffer", "unrolled"]
    for v in mm.MATMUL_VERSIONS.values():
        assert v.idea and v.threads
    assert len({v.name for v in mm.sweep_candidates()}) == len(mm.sweep_candidates())


# --- what the tracer counts, derived by hand -------------------------------------------------------------------


def test_tiled_counts_by_hand():
    # 32×32·32×32 with 16×16 blocks: 4 blocks × 8 warps × 2 tile steps.  A warp covers 2 rows × 16
    # columns; 16 floats of one row are 64 bytes on a 64-byte boundary: 2 sectors, 4 per request.
    a, b = mm.random_operands(32, 32, 32, RNG)
    c = np.zeros((32, 32), np.float32)
    t = trace(mm.tiled, (2, 2), (16, 16), a, b, c, lines=False, compiler=False).totals()  # the source's accesses
    assert not mm.wrong_elements(c, a, b).any()
    steps = 4 * 8 * 2
    assert t["global_load_requests"] == steps * 2 and t["global_load_sectors"] == steps * 2 * 4
    assert t["global_store_requests"] == 32 and t["global_store_sectors"] == 32 * 4
    # shared: per warp and step, 2 stores of 32 consecutive words (1 pass each); 16 values of k, each
    # with As[ty, k] (2 words, banks 16 apart) and Bs[k, tx] (16 consecutive words): 1 pass each
    assert t["shared_store_requests"] == t["shared_store_wavefronts"] == steps * 2
    assert t["shared_load_requests"] == t["shared_load_wavefronts"] == steps * 16 * 2
    # as the GPU runs it: ptxas merges each thread's As[ty, k .. k+3] into one LDS.128 (course.trace.compiler);
    # per step 16 Bs loads + 4 LDS.128, each a 16-byte broadcast per half warp: 2 wavefronts
    t = trace(mm.tiled, (2, 2), (16, 16), a, b, c, lines=False).totals()
    assert t["shared_load_requests"] == steps * (16 + 4) and t["shared_load_wavefronts"] == steps * (16 + 2 * 4)


def _shared_rows(name):
    v = mm.MATMUL_VERSIONS[name]
    a, b = mm.random_operands(128, 8, 128, RNG)  # one block, one step of k: 8 warps
    c = np.zeros((128, 128), np.float32)
    report = trace(v.kernel, v.griddim(128, 128), v.threads, *v.args(a, b, c), lines=False)
    assert not mm.wrong_elements(c, a, b).any()
    return [r for r in report.by_line() if r.space == "shared"]


def test_regtile_bank_conflicts_by_hand():
    rows = _shared_rows("regtile")
    # At[kk, r] = ...: a warp's lanes have r = lane // 8 (4 rows) and kk = lane % 8; word kk·128 + r is
    # in bank r mod 32, so each of 4 banks holds 8 different words: 8 passes
    store_at = next(r for r in rows if r.op == "store" and "At" in r.arrays)
    assert store_at.per_request == 8
    # Bs[kk, tx·8 + j]: 16 values of tx per warp, words 8 apart, banks repeat every 4 tx: 4-way
    load_bs = next(r for r in rows if r.op == "load" and "Bs" in r.arrays)
    assert load_bs.per_request == 4
    load_at = next(r for r in rows if r.op == "load" and "At" in r.arrays)
    assert load_at.per_request == 1  # 2 values of ty: 2 words 8 banks apart


def test_regtile_cf_is_conflict_free_by_hand():
    rows = _shared_rows("regtile_cf")
    # padding 4: word kk·132 + r sits in bank (4·kk + r) mod 32: 8 kk × 4 r fill 32 banks; strided
    # columns tx + 16·j put a warp on 16 consecutive words
    for r in rows:
        assert r.per_request == 1, (r.source, r.per_request)


def test_register_tiling_cuts_shared_loads_per_multiply_add():
    # tiled: 2 shared loads per multiply-add per thread; regtile: (8 + 8) loads per 64 multiply-adds
    # K = 16: one whole tile for `tiled` (TILE = 16), two steps of BK = 8 for `regtile_cf`
    a, b = mm.random_operands(128, 16, 128, RNG)
    c = np.zeros((128, 128), np.float32)
    fma = 128 * 128 * 16  # multiply-adds of the whole product
    # (the loads the source makes: compiler=False; ptxas merges tiled's As reads 4 to 1, not regtile_cf's)
    t_tiled = trace(mm.tiled, (8, 8), (16, 16), a, b, c, lines=False, detail_blocks=[], compiler=False).totals()
    v = mm.MATMUL_VERSIONS["regtile_cf"]
    t_reg = trace(v.kernel, v.griddim(128, 128), v.threads, *v.args(a, b, c), lines=False, compiler=False).totals()
    # warp-level requests: 32 lanes per request
    assert t_tiled["shared_load_requests"] * 32 == 2 * fma
    assert t_reg["shared_load_requests"] * 32 == fma * 16 // 64


def test_ncu_cases_run_and_match_their_hand_counts():
    for case in mm.NCU_CASES:
        totals = trace(case.kernel, case.griddim, case.blockdim, *case.args(seed=1), lines=False).totals()
        for key, value in (case.expect or {}).items():
            assert totals[key] == value, (case.name, key)


def test_planted_missing_sync_is_a_race_and_wrong():
    a, b = mm.random_operands(16, 16, 16, RNG)
    c = np.zeros((16, 16), np.float32)
    races = trace(mm.tiled_missing_sync, (1, 1), (16, 16), a, b, c, lines=False).races()
    assert races and {r.first["op"] for r in races} == {"store"}
    assert mm.wrong_elements(c, a, b).any()


def test_bench_and_profile_scripts_dry_run(tmp_path):
    env = dict(os.environ, COURSE_BACKEND="cpu")
    for script in ("bench_matmul.py", "profile_case_study.py"):
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu" / script), "--dry-run", "--out", str(tmp_path)]
                           + (["--no-sweep"] if script == "bench_matmul.py" else []),
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    records = json.loads((tmp_path / "matmul.json").read_text())
    assert {r["variant"] for r in records} >= {"naive", "tiled", "regtile_cf", "unrolled"}
    assert all(r.get("dry_run") and r["ms"] is None for r in records)
    prof = json.loads((tmp_path / "profile_case_study.json").read_text())
    races = next(r for r in prof if r["variant"] == "engine:missing_sync_races")
    assert races["count"] >= 1
    oob = next(r for r in prof if r["variant"] == "engine:seed_oob")
    assert "out of bounds" in oob["message"]
