"""The kernels of three claims that were pending (issue 24 item 5): results against NumPy on awkward sizes, what the
compiler makes of them, their cases, and the GPU scripts' variants that the ledger's checks name."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from course.kernels import memory as m
from course.kernels import shared_memory as sm
from course.measure import claim_cases
from course.trace import compiler
from numba import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
L2_BYTES = 50 * 1024 * 1024  # the H200's L2

# none a multiple of a block's CHEAP_SPAN = 2048 outputs but the last; 4117 and 4097 have an interior block
STENCIL_SIZES = (1, 2, 33, 1025 + 17, 1025 * 4 + 17, 2 * 2048 + 1, 3 * 2048)


def clamped_moving_sum(x):
    """x[i-1] + x[i] + x[i+1] with the ends repeated, written out by hand (not the module's reference)."""
    padded = np.concatenate([x[:1], x, x[-1:]]).astype(np.float64)
    return padded[:-2] + padded[1:-1] + padded[2:]


@pytest.mark.parametrize("n", STENCIL_SIZES)
@pytest.mark.parametrize("kernel", [sm.stencil_global_cheap, sm.stencil_shared_cheap], ids=["global", "shared"])
def test_cheap_stencils_match_numpy_on_awkward_sizes(kernel, n):
    x = np.random.default_rng(n).integers(-9, 10, n).astype(np.float32)  # small integers: exact float32 sums
    out = np.full(n, np.nan, np.float32)
    kernel[sm.stencil_cheap_blocks(n), sm.CHEAP_THREADS](x, out)
    np.testing.assert_array_equal(out, clamped_moving_sum(x))


def test_cheap_stencil_blocks_cover_every_output_once():
    assert sm.CHEAP_SPAN == 2048  # 256 threads x 8 outputs, as the bench records say
    assert [sm.stencil_cheap_blocks(n) for n in (1, 2048, 2049, 1 << 26)] == [1, 1, 2, 1 << 15]


@pytest.mark.parametrize("every", [0, 1, 3, 64])
@pytest.mark.parametrize("kernel", [sm.mod_loop, sm.counter_loop], ids=["mod", "counter"])
def test_mod_and_counter_loops_count_the_same_marks(kernel, every):
    blocks, tpb, iters = 2, 48, 70  # 48: a half-empty warp; 70: not a multiple of 64 or 3
    out = np.full(blocks * tpb, np.nan, np.float32)
    kernel[blocks, tpb](out, iters, every)
    t = np.tile(np.arange(tpb), blocks)
    sums = (((t[:, None] + np.arange(iters)) & 1023) % 7).sum(axis=1)  # s[w] = w % 7, read at (t + k) & 1023
    marks = {0: 0, 1: 70, 3: 23, 64: 1}[every]  # k < 70 with k % every == every - 1, counted by hand
    np.testing.assert_array_equal(out, (sums + marks).astype(np.float32))


def test_local_chase_ends_where_the_host_walk_ends_in_every_warp():
    words, blocks = 64, 3
    rng = np.random.default_rng(7)
    order = m.random_cycle(words, rng)
    nxt = m.chain_array(order, 1, words)
    out = np.full(2 * blocks, -1, np.int64)
    m.chase_local_big_kernel(words)[blocks, 32](nxt, words, 10, out)
    # a cycle through all 64 slots: one lap returns to 0, then 10 more steps follow the order
    assert list(out[0::2]) == [int(order[10])] * blocks
    assert m.chase_local_big_kernel(words) is m.chase_local_big_kernel(words)  # built once per size


def test_local_chase_footprint_is_several_l2s():
    warps = m.LOCAL_BIG_BLOCKS  # one warp per block
    lines = warps * m.LOCAL_BIG_WORDS  # word w of a thread is line w of its warp's slice
    assert lines * m.LINE >= 4 * L2_BYTES
    assert m.LOCAL_BIG_WORDS * 4 <= 512 * 1024  # within CUDA's local memory per thread


needs_compiler = pytest.mark.skipif(compiler.toolchain() is None, reason="needs ptxas and nvdisasm (make toolkit)")
F32 = types.float32[::1]


def _ops(kernel, argtypes):
    s = compiler.summary(kernel.py_func, argtypes)
    assert s is not None and "error" not in s, s
    return s["ops"]


@needs_compiler
def test_sass_mod_loop_calls_the_64_bit_remainder_and_counter_loop_divides_nothing():
    mod = _ops(sm.mod_loop, (F32, types.int64, types.int64))
    counter = _ops(sm.counter_loop, (F32, types.int64, types.int64))
    # both divide once before the loop (the fill loop's trip count, by blockDim: __cuda_sm20_div_s64); the
    # modulo adds a call of __cuda_sm20_rem_s64 (when a value needs more than 32 bits) per copy of the loop
    # body and a 32-bit path beside each (a float reciprocal, multiply-high, corrections)
    assert mod["CALL"] >= counter["CALL"] + 2 and mod["MUFU"] >= counter["MUFU"] + 2
    assert mod["BAR"] == counter["BAR"] == 1  # the fill's barrier only: none in the loop


@needs_compiler
def test_sass_local_chase_array_stays_in_local_memory():
    ops = _ops(m.chase_local_big_kernel(), (types.uint32[::1], types.int64, types.int64, types.int64[::1]))
    assert ops.get("LDL", 0) >= 1 and any(op.startswith("STL") for op in ops)


@needs_compiler
def test_sass_cheap_stencils_read_and_write_once_per_element_in_the_interior():
    g = _ops(sm.stencil_global_cheap, (F32, F32))
    s = _ops(sm.stencil_shared_cheap, (F32, F32))
    # interior path + clamped path, 8 outputs each: the global one 3 loads per output in both
    assert g["LDG"] == 2 * 3 * sm.CHEAP_OUTPUTS and g["STG"] == 2 * sm.CHEAP_OUTPUTS
    # the shared one: one load and one shared store per input, and the halo: one (t < 2) in the interior
    # path, two (t == 0, t == 1) in the clamped one; one barrier
    assert s["LDG"] == s["STS"] == 2 * sm.CHEAP_OUTPUTS + 1 + 2
    assert s["LDS"] == 3 * sm.CHEAP_OUTPUTS * 2 and s["BAR"] == 1


def test_claim_cases_launch_on_the_cpu_and_are_the_bench_launches_on_the_gpu():
    small = claim_cases.cases("small")
    for case in small:
        assert "claim" in case.tags and any(t.startswith("ch") for t in case.tags)
        args = case.args(seed=1)
        case.kernel[case.griddim, case.blockdim](*args)
    big = claim_cases.by_name("gpu")
    assert set(big) == {c.name for c in small}
    for name in ("stencil_global_cheap_r1", "stencil_shared_cheap_r1"):
        assert big[name].griddim * sm.CHEAP_SPAN >= 1 << 26 and big[name].blockdim == sm.CHEAP_THREADS
    for name in ("mod_loop_e64", "mod_loop_e0", "counter_loop_e64", "sync_loop_e0_b128"):
        assert big[name].griddim * big[name].blockdim == 132 * 2048 and big[name].blockdim == 128
    chase = big["chase_local_beyond_l2"]
    assert chase.griddim * chase.blockdim // 32 * m.LOCAL_BIG_WORDS * m.LINE >= 4 * L2_BYTES


CLAIMS = ("003-myth-shared-cache", "000-div-mod", "002-local-latency")


def test_dry_runs_write_every_variant_the_three_claims_check(tmp_path):
    ledger = json.loads((ROOT / "data" / "claims.json").read_text())
    entries = {e["id"]: e for e in ledger if e["id"] in CLAIMS}
    assert set(entries) == set(CLAIMS) and all(e.get("check") for e in entries.values())
    wanted = {}
    for e in entries.values():
        for side in ("a", "b"):
            if side in e["check"]:
                wanted.setdefault(e["check"][side]["benchmark"], set()).add(e["check"][side]["variant"])
    runs = [("bench_shared_memory.py", []), ("measure_memory.py", ["--parts", "latency"])]
    procs = [subprocess.Popen([sys.executable, str(ROOT / "scripts" / "gpu" / script), "--dry-run",
                               "--out", str(tmp_path / script), *extra], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, cwd=ROOT) for script, extra in runs]
    for p in procs:  # both at once: the two scripts take a few seconds each
        output, _ = p.communicate(timeout=300)
        assert p.returncode == 0, output[-3000:]
    written = {}
    for f in tmp_path.glob("*/*.json"):
        for rec in json.loads(f.read_text()):
            written.setdefault(rec["benchmark"], set()).add(rec["variant"])
    for bench, variants in wanted.items():
        assert variants <= written.get(bench, set()), (bench, variants - written.get(bench, set()))
