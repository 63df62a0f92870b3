"""course.trace on kernels whose counts, divergence and races are known by hand (CPU engine)."""


import numpy as np
import pytest

import course  # noqa: F401
from numba import cuda, float32

from course import engine
from course import trace as tr
from course.validation import tracer_suite as S
from course.trace import trace

HAND = [c for c in S.NCU_CASES if c.expect]


def test_suite_is_big_enough_and_covers_the_hard_parts():
    assert len(S.NCU_CASES) >= 20
    tags = {t for c in S.NCU_CASES for t in c.tags}
    assert {"partial-warp", "2d", "3d", "1-byte", "8-byte", "16-byte", "broadcast", "tile", "atomic"} <= tags
    assert all(set(c.expect) == set(tr.TOTAL_KEYS) for c in HAND)


@pytest.mark.parametrize("case", HAND, ids=[c.name for c in HAND])
def test_totals_equal_hand_derived_counts(case):
    report = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), lines=False)
    assert report.totals() == dict(case.expect)


def _line_of(report, text, space, op):
    rows = [r for r in report.by_line() if text in r.source and r.space == space and r.op == op]
    assert len(rows) == 1, [(r.source, r.space, r.op) for r in report.by_line()]
    return rows[0]


def test_naive_transpose_per_request():
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = np.zeros_like(a)
    r = trace(S.transpose_naive, 1, (32, 8), a, out)
    assert np.array_equal(out, a.T)
    row = _line_of(r, "out[tx, ty + j]", "global", "load")
    assert (row.requests, row.per_request, row.worst, row.ideal_per_request) == (32, 4.0, 4, 4.0)
    col = _line_of(r, "out[tx, ty + j]", "global", "store")
    assert (col.requests, col.per_request, col.worst) == (32, 32.0, 32)


@pytest.mark.parametrize("kernel,per_request", [(S.tile_f32_32, 32), (S.tile_f32_33, 1), (S.tile_f32_34, 2),
                                                (S.tile_f32_swizzle, 1)])
def test_tile_column_reads(kernel, per_request):
    a = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    out = np.zeros_like(a)
    r = trace(kernel, 1, (32, 8), a, out)
    assert np.array_equal(out, a.T)
    reads = [x for x in r.by_line() if x.space == "shared" and x.op == "load"]
    assert len(reads) == 1 and reads[0].per_request == per_request and reads[0].worst == per_request
    assert reads[0].ideal_per_request == 1.0
    # 32 requests, each per_request - 1 wavefronts above the minimum
    assert r.bank_conflicts() == {"load": 32 * (per_request - 1), "store": 0}


def test_warp_detail_of_a_conflicting_column_read():
    a = np.zeros((32, 32), np.float32)
    r = trace(S.tile_f32_32, 1, (32, 8), a, np.zeros_like(a))
    line = _line_of(r, "tile[tx, ty + j]", "shared", "load").line
    accesses = r.warp_detail(line, block=0, warp=2, occurrence=1)  # warp 2 is ty = 2; pass j = 8
    shared = [x for x in accesses if x.space == "shared"]
    assert len(shared) == 1
    w = shared[0]
    assert w.active == 32 and w.active_mask == 0xFFFFFFFF and w.wavefronts == 32 and w.array == "tile"
    # lane l reads tile[l, 2 + 8] = word 32 l + 10: bank 10 for everyone, one pass each
    assert {x.bank for x in w.lanes} == {10}
    assert sorted(x.wavefront for x in w.lanes) == list(range(32))
    assert [x.index for x in w.lanes[:3]] == [(0, 10), (1, 10), (2, 10)]
    assert w.lanes[5].thread == (5, 2, 0) and w.lanes[5].offset == 4 * (32 * 5 + 10)
    glob = [x for x in accesses if x.space == "global"][0]
    assert glob.op == "store" and glob.sectors == 4
    with pytest.raises(KeyError, match="detail_blocks"):
        r.warp_detail(line, block=3)


def test_row_views_resolve_to_the_whole_array():
    a = np.random.default_rng(1).standard_normal((8, 20)).astype(np.float32)
    out = np.zeros_like(a)
    r = trace(S.copy_2d_rowview, 1, (16, 8), a, out)
    assert np.array_equal(out[:, :16], a[:, :16])
    line = _line_of(r, "src[col]", "global", "load").line
    w = [x for x in r.warp_detail(line, 0, 1, 0) if x.op == "load"][0]
    assert w.lanes[0].index == (2, 0) and w.lanes[16].index == (3, 0) and w.sectors == 5


def test_partial_last_warp_counts_one_request():
    out = np.zeros(100, np.float32)
    r = trace(S.guarded_copy, 1, 128, np.ones(100, np.float32), out, 100)
    t = r.totals()
    assert t["global_load_requests"] == 4 and t["global_load_sectors"] == 13
    last = [x for x in r.warp_accesses(0) if x.warp == 3]
    assert [x.active for x in last] == [4, 4]


def test_misaligned_start_costs_one_more_sector():
    a = np.zeros(40, np.float32)
    aligned = trace(S.offset_load, 1, 32, a, np.zeros(32, np.float32), 0, lines=False).totals()
    shifted = trace(S.offset_load, 1, 32, a, np.zeros(32, np.float32), 1, lines=False).totals()
    assert (aligned["global_load_sectors"], shifted["global_load_sectors"]) == (4, 5)


@cuda.jit
def numpy_index_kernel(a, out, n):
    i = np.int32(cuda.threadIdx.x)  # learners write indices like this
    j = np.int64(n) - 1 - i
    out[i, np.uint8(1)] = a[j]


def test_numpy_scalar_indices():
    a = np.arange(32, dtype=np.float32)
    out = np.zeros((32, 2), np.float32)
    r = trace(numpy_index_kernel, 1, 32, a, out, 32)
    assert np.array_equal(out[:, 1], a[::-1])
    t = r.totals()
    # reversed but contiguous read: 4 sectors; column 1 of a (32, 2) array: bytes 8 l + 4, 8 sectors
    assert (t["global_load_sectors"], t["global_store_sectors"]) == (4, 8)


@cuda.jit
def bad_index(a):
    i = cuda.threadIdx.x
    a[i - 1] = 1.0


@cuda.jit
def past_the_end(a):
    a[cuda.threadIdx.x + 30] = 1.0


@cuda.jit
def barrier_in_branch(a):
    if cuda.threadIdx.x < 16:
        cuda.syncthreads()
    a[cuda.threadIdx.x] = 1.0


@cuda.jit
def divides_by_zero(a):
    a[cuda.threadIdx.x] = 1 // (cuda.threadIdx.x - 3)


@pytest.mark.parametrize("kernel", [bad_index, past_the_end, barrier_in_branch])
def test_errors_are_the_engines(kernel):
    with pytest.raises(engine.KernelError) as plain:
        engine.launch(kernel, 1, 32, (np.zeros(32, np.float32),))
    with pytest.raises(engine.KernelError) as traced:
        trace(kernel, 1, 32, np.zeros(32, np.float32))
    assert str(traced.value) == str(plain.value)


def test_an_integer_division_by_zero_gives_what_a_gpu_gives_traced_or_not():
    # numba-cuda compiles kernels with numpy's error model: an integer divided by zero is 0, no exception
    # (the engine types the literal 1 as numba does, int64); traced and plain launches agree
    plain, traced = np.zeros(32, np.float32), np.zeros(32, np.float32)
    with np.errstate(divide="ignore"):
        engine.launch(divides_by_zero, 1, 32, (plain,))
        trace(divides_by_zero, 1, 32, traced)
    assert plain[3] == 0 and traced[3] == 0 and np.array_equal(plain, traced)


@cuda.jit(device=True)
def load_twice(a, i):
    return a[i] + a[i + 32]


@cuda.jit
def calls_device_function(a, out):
    i = cuda.threadIdx.x
    out[i] = load_twice(a, i) + load_twice(a, 2 * i)


def test_device_functions_count_per_call_site():
    a = np.ones(128, np.float32)
    out = np.zeros(32, np.float32)
    r = trace(calls_device_function, 1, 32, a, out)
    assert np.all(out == 4)
    t = r.totals()
    # 4 loads: a[i], a[i+32] (4 sectors each), a[2i], a[2i+32] (stride 2: 8 sectors each)
    assert (t["global_load_requests"], t["global_load_sectors"]) == (4, 24)
    rows = [x for x in r.by_line() if x.op == "load"]
    assert {x.function for x in rows} == {"load_twice"}


def test_divergence_of_an_even_odd_branch():
    a = np.zeros(64, np.float32)
    d = trace(S.branch_even_odd, 1, 64, a, np.zeros_like(a)).divergence()
    assert len(d.branches) == 1
    b = d.branches[0]
    assert "% 2 == 0" in b.source and (b.executions, b.divergent) == (2, 2)
    assert sorted(b.sides.values()) == [32, 32]  # 16 + 16 lanes per side in each of 2 warps
    # per warp: i = ... (32 lanes), the if (32), then-line (16), else-line (16): 96 lanes / 4 steps
    assert d.avg_active_lanes == 24.0 and d.simt_efficiency == 0.75
    assert all(v == (4, 96, 32) for v in d.warps.values())
    assert [e[4] for e in d.events] == [{b.line + 1: 16, b.line + 3: 16}] * 2
    assert d.per_warp(b.line) == {((0, 0, 0), 0): [{b.line + 1: 16, b.line + 3: 16}],
                                  ((0, 0, 0), 1): [{b.line + 1: 16, b.line + 3: 16}]}
    u = trace(S.branch_by_warp, 1, 64, a, np.zeros_like(a)).divergence()
    assert u.branches == [] and u.avg_active_lanes == 32.0


def test_divergence_of_a_tree_reduction():
    a = np.ones(128, np.float32)
    out = np.zeros(1, np.float32)
    d = trace(S.reduce_sequential, 1, 128, a, out).divergence()
    assert out[0] == 128
    by_line = {b.source: b for b in d.branches}
    # `if t < stride` splits a warp when stride is 16, 8, 4, 2, 1 (warp 0 only): 5 times
    assert by_line["if t < stride:"].divergent == 5
    # `if t == 0` splits warp 0 once: lane 0 goes on, 31 lanes leave
    # (warps 1-3 all leave: not a split; sides are summed over splitting executions only)
    assert by_line["if t == 0:"].sides == {"exit": 31, by_line["if t == 0:"].line + 1: 1}
    assert by_line["if t == 0:"].executions == 4


def _kernel_with_closure(limit):
    @cuda.jit
    def k(out):
        t = cuda.threadIdx.x
        if t < limit:
            out[t] = 1.0
    return k


def test_closures_are_traced_with_their_cells():
    out = np.zeros(32, np.float32)
    for limit in (4, 12):  # one source, two closures: the instrumented copy is cached, the cells are not
        r = trace(_kernel_with_closure(limit), 1, 32, out)
        assert r.totals()["global_store_sectors"] == (1 if limit <= 8 else 2)
        assert sorted(r.divergence().branches[0].sides.values()) == [limit, 32 - limit]


def test_divergence_without_source_uses_settrace():
    ns = {"cuda": cuda}
    exec("def k(out):\n    t = cuda.threadIdx.x\n    if t < 8:\n        out[t] = 1.0\n    else:\n        out[t] = 2.0\n", ns)
    kern = cuda.jit(ns["k"])
    out = np.zeros(32, np.float32)
    d = trace(kern, 1, 32, out).divergence()
    assert [sorted(b.sides.values()) for b in d.branches] == [[8, 24]]


def test_races_missing_syncthreads_is_caught():
    a = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    races = trace(S.tile_transpose_nosync, 1, (32, 8), a, np.zeros_like(a)).races()
    assert len(races) == 1
    race = races[0]
    assert race.first["op"] == "store" and race.second["op"] == "load" and race.array == "tile"
    assert "tile[ty + j, tx] = a[ty + j, tx]" in race.first["source"]
    assert "tile[tx, ty + j]" in race.second["source"]
    assert race.first["thread"] != race.second["thread"]
    assert "no syncthreads" in str(race)
    assert trace(S.tile_f32_33, 1, (32, 8), a, np.zeros_like(a)).races() == []
    # neighbours writing different bytes of one word do not race
    assert trace(S.shared_stride_u8, 1, 64, np.zeros(64, np.uint8), 1).races() == []


@cuda.jit
def everyone_writes_s0(out):
    s = cuda.shared.array(1, float32)
    s[0] = cuda.threadIdx.x
    cuda.syncthreads()
    out[cuda.threadIdx.x] = s[0]


@cuda.jit
def atomics_only(out):
    s = cuda.shared.array(1, float32)
    if cuda.threadIdx.x == 0:
        s[0] = 0
    cuda.syncthreads()
    cuda.atomic.add(s, 0, 1.0)
    cuda.syncthreads()
    out[cuda.threadIdx.x] = s[0]


def test_write_write_races_and_atomics():
    races = trace(everyone_writes_s0, 1, 64, np.zeros(64, np.float32)).races()
    assert len(races) == 1 and races[0].first["op"] == races[0].second["op"] == "store"
    assert races[0].address == 0
    r = trace(atomics_only, 1, 64, np.zeros(64, np.float32))
    assert r.races() == [] and r.atomics() == {"shared": 2}  # one warp-level atomic per warp
    assert r.totals()["shared_store_requests"] == 1  # the `if` store by lane 0 only


def test_complex_rule_is_switchable(monkeypatch):
    case = next(c for c in S.NCU_CASES if c.name.endswith("complex_copy[c64]"))
    monkeypatch.setitem(tr.SPLIT_COMPLEX, "shared", False)
    monkeypatch.setitem(tr.SPLIT_COMPLEX, "global", False)
    whole = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), lines=False).totals()
    # one 8-byte access per element: 256 bytes = 8 sectors per warp; shared: 2 half warps
    assert (whole["global_load_requests"], whole["global_load_sectors"]) == (2, 16)
    assert (whole["shared_store_requests"], whole["shared_store_wavefronts"]) == (2, 4)
    monkeypatch.setitem(tr.SPLIT_COMPLEX, "shared", True)
    monkeypatch.setitem(tr.SPLIT_COMPLEX, "global", True)
    split = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), lines=False).totals()
    # two 4-byte accesses per element: twice the requests, each spanning a warp's 256 bytes (8 sectors);
    # in shared memory the real parts are words 2l: 16 banks, 2 words each -> 2 wavefronts per request
    assert (split["global_load_requests"], split["global_load_sectors"]) == (4, 32)
    assert (split["shared_store_requests"], split["shared_store_wavefronts"]) == (4, 8)


def test_detail_blocks_and_lines_switch():
    a = np.ones(256 * 80, np.float32)
    r = trace(S.copy, 80, 256, a, np.zeros_like(a), lines=False)
    assert r.detail_blocks == [(b, 0, 0) for b in range(4)]
    assert r.totals()["global_load_requests"] == 80 * 8
    with pytest.raises(RuntimeError, match="lines=True"):
        r.divergence()
    r2 = trace(S.copy, 80, 256, a, np.zeros_like(a), detail_blocks=[79], lines=False)
    assert r2.detail_blocks == [(79, 0, 0)] and len(r2.warp_accesses(79)) == 16
    assert "global" in r2.table()


def test_tracing_a_tile_transpose_matches_the_untraced_launch():
    # a 128x128 tile transpose (16 blocks of 256 threads): the tracer's main use; its cost is a benchmark's
    # (scripts/bench_tracer.py -> data/tracer_cost.json, checked below), not a timed test on a shared machine
    n = 128

    @cuda.jit
    def tiled(a, out):
        tile = cuda.shared.array((32, 33), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        x = cuda.blockIdx.x * 32 + tx
        y = cuda.blockIdx.y * 32 + ty
        for j in range(0, 32, 8):
            tile[ty + j, tx] = a[y + j, x]
        cuda.syncthreads()
        x = cuda.blockIdx.y * 32 + tx
        y = cuda.blockIdx.x * 32 + ty
        for j in range(0, 32, 8):
            out[y + j, x] = tile[tx, ty + j]

    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    plain, traced = np.zeros_like(a), np.zeros_like(a)
    engine.launch(tiled, (4, 4), (32, 8), (a, plain))
    trace(tiled, (4, 4), (32, 8), a, traced)
    assert np.array_equal(plain, a.T) and np.array_equal(traced, a.T)


def test_the_tracer_cost_benchmark_meets_its_target():
    # the target: tracing costs at most 3x an untraced launch's CPU time, on every kernel of the engine suite
    import json
    import pathlib

    rec = json.loads((pathlib.Path(__file__).parents[1] / "data" / "tracer_cost.json").read_text())
    rows, summary = rec["kernels"], rec["summary"]
    assert len(rows) == summary["kernels"] >= 20 and rec["machine"]["cpus"] == 2
    assert {r["kernel"] for r in rows} >= {"copy_f32", "matmul_tiled"}
    for r in rows:
        assert r["identical_outputs"], r["kernel"]
        ratio = min(r["traced_runs_ms"]) / min(r["plain_runs_ms"])
        assert abs(ratio - r["ratio_of_minima"]) < 0.01, r["kernel"]  # the record is self-consistent
        assert ratio <= summary["target"] == 3.0, (r["kernel"], ratio)
    assert summary["at_most_target"] == len(rows) and summary["all_identical"]


def _validate_module():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "validate_tracer.py"
    spec = importlib.util.spec_from_file_location("validate_tracer", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_validation_script_parses_ncu_csv_and_matches_launches(tmp_path):
    import json

    vt = _validate_module()
    head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",' \
           '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
    rows = []
    for lid, kname, vals in ((0, "strided_load(Array<float, 1>)", {"global_load_sectors": "1,024"}),
                             (1, "copy(Array<char, 1>)", {"global_load_sectors": "3"})):
        for key, metric in vt.METRICS.items():
            v = vals.get(key, "2")
            rows.append(f'"{lid}","1","python3","h","{kname}","1","7","(64, 1, 1)","(1, 1, 1)","0","9.0",'
                        f'"Command line profiler metrics","{metric}","","{v}"')
    text = "==PROF== Connected to process 1\n" + head + "\n" + "\n".join(rows) + "\n"
    launches = vt.parse_ncu_csv(text)
    assert [x["id"] for x in launches] == [0, 1]
    assert launches[0][vt.METRICS["global_load_sectors"]] == 1024
    # a report from both sides: case b matches ncu on every count, case a does not
    tracer = {k: 2 for k in vt.TOTAL_KEYS}
    (tmp_path / "tracer_side.json").write_text(json.dumps({"cases": [
        {"module": "m", "name": "a", "kernel": "strided_load", "note": "", "expect": None, "tracer": tracer},
        {"module": "m", "name": "b", "kernel": "copy", "note": "", "expect": None, "tracer": dict(tracer, global_load_sectors=3)},
    ]}))
    (tmp_path / "gpu_side.json").write_text(json.dumps({"launches": [
        {"name": "a", "kernel": "strided_load", "launched": True}, {"name": "b", "kernel": "copy", "launched": True}],
        "provenance": {"device": "test"}}))
    (tmp_path / "ncu.csv").write_text(text)
    report = vt.build_report(tmp_path, dry_run=False)
    s = report["summary"]
    assert (s["compared"], s["all_equal"], s["differ"], s["problems"]) == (2, 1, ["a"], [])
    assert report["cases"][0]["equal"]["global_load_sectors"] is False
    assert "**2 / 1024**" in (tmp_path / "tracer_validation.md").read_text()


def test_validation_script_dry_run(tmp_path):
    import json
    import subprocess
    import sys
    import pathlib

    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "validate_tracer.py"
    res = subprocess.run([sys.executable, str(script), "--dry-run", "--out", str(tmp_path), "--modules", "tracer_suite"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    report = json.loads((tmp_path / "tracer_validation.json").read_text())
    assert report["summary"]["cases"] == len(S.NCU_CASES) and report["summary"]["tracer_vs_hand_mismatch"] == []
    assert "| tracer_suite.tile_f32_32 |" in res.stdout


FAKE_NCU = r'''#!/usr/bin/env python3
# a stand-in for Nsight Compute: runs the program, then reports each launch with every metric = 1
import json, pathlib, subprocess, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("Version fake")
    sys.exit(0)
opts, i = {}, 0
while args[i].startswith("--"):
    if args[i] == "--csv":
        i += 1
        continue
    opts[args[i]] = args[i + 1]
    i += 2
prog = args[i:]
rc = subprocess.call(prog)
out = pathlib.Path(prog[prog.index("--out") + 1])
launched = [e for e in json.loads((out / "gpu_side.json").read_text())["launches"] if e["launched"]]
rows = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
for k, e in enumerate(launched):
    rows += [f'"{k}","{e["kernel"]}(Array<float>)","{m}","","1"' for m in opts["--metrics"].split(",")]
pathlib.Path(opts["--log-file"]).write_text("==PROF== fake\n" + "\n".join(rows) + "\n")
sys.exit(rc)
'''


def test_validation_script_end_to_end_with_a_stand_in_ncu(tmp_path):
    import json
    import os
    import pathlib
    import subprocess
    import sys

    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU)
    ncu.chmod(0o755)
    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "validate_tracer.py"
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    res = subprocess.run([sys.executable, str(script), "--out", str(out), "--modules", "tracer_suite",
                          "--gpu-backend", "cpu"], capture_output=True, text=True, timeout=300, env=env)
    report = json.loads((out / "tracer_validation.json").read_text())
    s = report["summary"]
    assert s["problems"] == [], (s["problems"], res.stderr[-2000:])
    assert s["compared"] == s["cases"] == len(S.NCU_CASES) and s["all_equal"] == 0
    assert res.returncode == 1 and "equal" in res.stdout.splitlines()[-1]


def test_sass_memory_ops_counts_memory_instructions():
    vt = _validate_module()

    class Compiled:
        def inspect_sass(self):
            return "\n".join([
                "        /*0200*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;",
                "        /*0210*/               @P6 BRA 0x2b0 ;",
                "        /*0230*/                   LDS R4, [R0] ;",
                "        /*0280*/                   LDS.128 R8, [R6+0x100] ;",
                "        /*0290*/                   LDS R5, [R0+0x4] ;",
                "        /*0300*/               @!P1 LDG.E R7, desc[UR6][R6.64] ;",
                "        /*0310*/                   RED.E.ADD.STRONG.GPU desc[UR4][R2.64], R5 ;",
            ])

    assert vt.sass_memory_ops(Compiled()) == {"LDS": 2, "LDS.128": 1, "@P LDG.E": 1, "RED.E.ADD.STRONG.GPU": 1}

    class NoDisassembler:
        def inspect_sass(self):
            raise RuntimeError("nvdisasm not found")

    assert "unavailable" in vt.sass_memory_ops(NoDisassembler())


def test_a_lanes_index_is_numpys_unravel_index_and_empty_out_of_range():
    from course.trace.report import _unravel

    for shape in [(5,), (3, 4), (2, 3, 4), (1, 33), (17, 16), (0,), (4, 0), (7, 1, 3)]:
        size = int(np.prod(shape))
        for flat in range(-3, size + 4):
            try:
                want = tuple(int(i) for i in np.unravel_index(flat, shape))
            except ValueError:  # out of range (or an empty shape): the lane's index is left empty
                want = ()
            assert _unravel(flat, shape) == want, (flat, shape)


def test_warp_accesses_without_costs_have_the_same_lanes_and_no_costs():
    # costs=False (the grader's address-only properties): the same accesses and lanes, costs left None
    from course.kernels import transpose as T

    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    r = trace(T.tile_32x32, (2, 2), (32, 32), a, np.zeros_like(a))
    full, bare = r.warp_accesses(1), r.warp_accesses(1, costs=False)
    assert len(full) == len(bare) > 0 and any(w.space == "shared" for w in full)
    for f, b in zip(full, bare):
        assert (f.line, f.space, f.op, f.array, f.warp, f.active_mask) == (b.line, b.space, b.op, b.array, b.warp,
                                                                         b.active_mask)
        assert [(x.thread, x.index, x.addr, x.offset, x.bank, x.sector) if x else None for x in f.lanes] == \
            [(x.thread, x.index, x.addr, x.offset, x.bank, x.sector) if x else None for x in b.lanes]
        assert b.sectors is b.wavefronts is b.ideal is None and all(x.wavefront is None for x in b.lanes if x)
        assert f.sectors > 0 and (f.space != "shared" or f.wavefronts > 0)
