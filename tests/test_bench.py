"""course.measure.bench and course.measure.measurements: what can be checked without a GPU.

Timing itself needs a GPU and is refused here (tested); the arithmetic, the records, the correctness
check before timing and the reading of recorded runs are tested on the CPU backend.
"""

import json
import pathlib
import re

import numpy as np
import pytest

import course
from course.measure import bench, bench_harness, cuda_tools, measurements
from course.measure.bench import Bench, BenchError
from numba import cuda

ON_GPU = course.on_gpu()


# --- arithmetic -----------------------------------------------------------------------------------------------


def test_gbps_is_bytes_over_seconds_in_units_of_1e9():
    # 2 GiB moved in 0.5 ms: 2 * 1073741824 B / 0.0005 s = 4294967296000 B/s = 4294.967296 GB/s
    assert bench.gbps(2 * 1073741824, 0.5) == pytest.approx(4294.967296)
    # 1e9 bytes in 1000 ms is exactly 1 GB/s
    assert bench.gbps(1e9, 1000.0) == pytest.approx(1.0)


def test_gbps_refuses_a_time_that_is_not_positive():
    with pytest.raises(ValueError, match="positive"):
        bench.gbps(100, 0.0)
    with pytest.raises(ValueError, match="positive"):
        bench.gbps(100, None)


def test_transpose_moves_every_element_twice():
    # 16384² int32: 268435456 elements × 4 bytes, read once and written once = 2 GiB
    assert bench.transpose_bytes((16384, 16384), "int32") == 2 * 16384 * 16384 * 4 == 2147483648
    assert bench.transpose_bytes((3, 5), np.float64) == 2 * 15 * 8


# --- refusing to time on a CPU backend ------------------------------------------------------------------------


@pytest.mark.skipif(ON_GPU, reason="the refusal is what a CPU backend does; a GPU times")
def test_timing_is_refused_on_the_cpu_with_a_clear_message():
    with pytest.raises(BenchError) as err:
        bench.time_ms(lambda: None)
    msg = str(err.value)
    assert "real GPU" in msg and "CPU wall time" in msg and "course.measure.measurements.load" in msg
    with pytest.raises(BenchError):
        bench.host_ms(lambda: None)


@pytest.mark.skipif(ON_GPU, reason="the refusal is what a CPU backend does; a GPU times")
def test_bench_measure_refuses_on_the_cpu_unless_it_is_a_dry_run():
    with pytest.raises(BenchError, match="real GPU"):
        Bench("unit").measure("x", lambda: None, size=(4,), dtype="int32", bytes_moved=32)
    rec = Bench("unit", dry_run=True).measure("x", lambda: None, size=(4,), dtype="int32", bytes_moved=32)
    assert rec["ms"] is None and rec["gbps"] is None and rec["dry_run"] is True


def test_time_ms_divides_each_batch_and_warms_up_first(monkeypatch):
    # A fake GPU clock: each call of fn takes 2 ms of "device time"; events read the clock.
    clock = {"ms": 0.0, "calls": 0}

    def fn():
        clock["ms"] += 2.0
        clock["calls"] += 1

    class Event:
        def record(self):
            self.t = clock["ms"]

    api = (Event, lambda e: e.record(), lambda a, b: b.t - a.t, lambda: None)
    monkeypatch.setattr(bench, "require_gpu", lambda what="timing": None)
    monkeypatch.setattr(bench, "_event_api", lambda timer: api)
    times = bench.time_ms(fn, reps=3, warmup=2, batch=4)
    assert times == [2.0, 2.0, 2.0]  # 4 calls × 2 ms between two events, divided by 4
    assert clock["calls"] == 2 + 3 * 4


# --- records ------------------------------------------------------------------------------------------------------


def test_a_record_has_every_required_field_and_its_median():
    b = Bench("unit", dry_run=True)
    # median of (1, 3, 2) ms is 2 ms; 8 MiB in 2 ms = 8388608 / 0.002 / 1e9 = 4.194304 GB/s
    rec = b.record("v", [1.0, 3.0, 2.0], size=(1024, 1024), dtype=np.int32, bytes_moved=8388608, tile=32)
    assert bench.check_record(rec) == []
    assert rec["ms"] == 2.0 and rec["reps"] == 3 and rec["ms_min"] == 1.0 and rec["ms_max"] == 3.0
    assert rec["gbps"] == pytest.approx(4.194304)
    assert rec["size"] == [1024, 1024] and rec["dtype"] == "int32" and rec["tile"] == 32
    json.dumps(rec)  # a record is plain JSON


def test_check_record_names_what_is_missing():
    assert set(bench.check_record({"benchmark": "b", "variant": "v"})) >= {"ms", "run", "device", "driver"}
    rec = Bench("unit", dry_run=True).record("v", [1.0], size=(1,), dtype="int32")
    assert "gbps or tflops" in bench.check_record(rec)


def test_one_run_id_for_every_record_of_a_process():
    r1 = Bench("a", dry_run=True).record("x", None, size=(1,), dtype="int32")
    r2 = Bench("b", dry_run=True).record("y", None, size=(1,), dtype="int32")
    assert r1["run"] == r2["run"] == bench.run_id()


def test_save_keeps_other_runs_and_replaces_this_one(tmp_path):
    path = tmp_path / "unit.json"
    old = {"benchmark": "unit", "variant": "old", "run": "an-older-run", "ms": 1.0}
    path.write_text(json.dumps([old]))
    b = Bench("unit", dry_run=True)
    b.record("new", None, size=(1,), dtype="int32")
    b.save(path)
    b.save(path)  # saving again must not duplicate this run's records
    saved = json.loads(path.read_text())
    assert [r["variant"] for r in saved] == ["old", "new"]


def test_table_shows_fraction_of_memcpy_and_multiple_of_cupy():
    recs = [
        {"variant": "memcpy", "size": [8, 8], "dtype": "int32", "ms": 1.0, "gbps": 4000.0},
        {"variant": "cupy", "size": [8, 8], "dtype": "int32", "ms": 4.0, "gbps": 1000.0},
        {"variant": "mine", "size": [8, 8], "dtype": "int32", "ms": 1.25, "gbps": 3200.0},
    ]
    row = [line for line in bench.table(recs).splitlines() if line.startswith("mine")][0]
    assert "0.80" in row and "3.20" in row  # 3200/4000 and 3200/1000


# --- the check before timing ----------------------------------------------------------------------------------------


@cuda.jit
def _copy_not_transpose(a, out):
    """Wrong on purpose: copies a (n×n) instead of transposing it."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[i, j]


@cuda.jit
def _transpose_skipping_last_row(a, out):
    """Wrong on purpose: leaves the last output row unwritten."""
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1] - 1:
        out[col, row] = a[row, col]


def _check(kernel, a):
    d_a = cuda.to_device(a)
    d_out = cuda.device_array((a.shape[1], a.shape[0]), a.dtype)
    grid = ((a.shape[1] + 15) // 16, (a.shape[0] + 15) // 16)
    bench.verify(lambda: kernel[grid, (16, 16)](d_a, d_out), d_out, np.ascontiguousarray(a.T), what=kernel.__name__)


def test_verify_catches_a_kernel_that_does_not_transpose():
    a = bench.random_array((16, 16), np.int32, np.random.default_rng(1))
    with pytest.raises(BenchError, match="differ from the NumPy reference"):
        _check(_copy_not_transpose, a)


def test_verify_catches_unwritten_elements_through_the_poison():
    a = bench.random_array((17, 16), np.float32, np.random.default_rng(2))
    with pytest.raises(BenchError) as err:
        _check(_transpose_skipping_last_row, a)
    assert "17 never written" in str(err.value)  # the last output row has 17 elements


def test_verify_passes_a_correct_kernel_and_sees_through_stale_output():
    from course.kernels.transpose import TRANSPOSE_VERSIONS

    v = TRANSPOSE_VERSIONS["naive"]
    a = bench.random_array((17, 16), np.int32, np.random.default_rng(3))
    d_a = cuda.to_device(a)
    d_out = cuda.to_device(np.ascontiguousarray(a.T))  # already right: only the poison makes the check honest
    bench.verify(lambda: v.launch(d_a, d_out), d_out, a.T)
    with pytest.raises(BenchError, match="never written"):
        bench.verify(lambda: None, d_out, a.T, what="a launch that does nothing")


def test_random_data_never_holds_the_poison_and_is_not_zero():
    rng = np.random.default_rng(4)
    for dt in (np.int32, np.int64, np.float32, np.float64):
        x = bench.random_array((64, 64), dt, rng)
        assert x.dtype == dt
        assert not np.any(bench._is_poison(x))
        assert np.count_nonzero(x) > 4000


# --- reading recorded runs ------------------------------------------------------------------------------------------


def _write(tmp_path, records):
    (tmp_path / "unit.json").write_text(json.dumps(records))


def test_a_benchmark_never_measured_says_so(tmp_path):
    assert measurements.load("nothing-here", data_dir=tmp_path) == []
    assert measurements.provenance([]).startswith("not measured yet")
    assert measurements.describe(None) == "not measured yet"
    assert measurements.describe(1493.4) == "1493 GB/s"


def test_load_leaves_out_dry_runs_and_failures(tmp_path):
    _write(tmp_path, [
        {"variant": "a", "run": "r1", "date": "2026-11-29T10:00:00", "ms": 1.0},
        {"variant": "b", "run": "r1", "date": "2026-11-29T10:00:00", "ms": None, "dry_run": True},
        {"variant": "c", "run": "r1", "date": "2026-11-29T10:00:00", "ms": None, "failed": "boom"},
        {"variant": "d", "run": "r1", "date": "2026-11-29T10:00:00", "ms": None, "cycles_per_step": 600},
    ])
    assert [r["variant"] for r in measurements.load("unit", data_dir=tmp_path)] == ["a", "d"]


def test_latest_run_keeps_one_run_only(tmp_path):
    _write(tmp_path, [
        {"variant": "a", "run": "old", "date": "2026-11-28T10:00:00", "ms": 1.0, "gbps": 10.0},
        {"variant": "a", "run": "new", "date": "2026-11-29T09:00:00", "ms": 2.0, "gbps": 5.0},
        {"variant": "b", "run": "new", "date": "2026-11-29T09:00:01", "ms": 2.0, "gbps": 7.0},
    ])
    latest = measurements.latest_run(measurements.load("unit", data_dir=tmp_path))
    assert {r["run"] for r in latest} == {"new"} and len(latest) == 2
    assert measurements.value(latest, "a") == 5.0 and measurements.value(latest, "zzz") is None


def test_provenance_names_device_driver_versions_and_run():
    recs = [{"device": "NVIDIA H200", "driver": "580.1", "numba_cuda": "0.30.4", "cupy": "13.6",
             "date": "2026-11-29T16:00:00+00:00", "run": "r42", "reps": 20, "ms": 1.0}]
    text = measurements.provenance(recs)
    for part in ("NVIDIA H200", "580.1", "0.30.4", "CuPy 13.6", "2026-11-29 16:00", "r42", "20"):
        assert part in text


def test_a_corrupt_file_gets_a_message_that_names_it(tmp_path):
    (tmp_path / "unit.json").write_text("{not json")
    with pytest.raises(measurements.MeasurementError, match="unit.json"):
        measurements.load("unit", data_dir=tmp_path)


# --- the GPU benchmark script, in its dry-run mode ----------------------------------------------------------------


def test_bench_transpose_dry_run_checks_every_version_and_writes_records(tmp_path):
    import subprocess
    import sys

    from course.kernels.transpose import TRANSPOSE_VERSIONS

    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "bench_transpose.py"
    res = subprocess.run([sys.executable, script, "--dry-run", "--no-sweep", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "target: not measured" in res.stdout  # a dry run never claims a speed
    records = json.loads((tmp_path / "transpose.json").read_text())
    assert len({r["run"] for r in records}) == 1
    assert all(r["dry_run"] and r["ms"] is None and bench.check_record(r) == [] for r in records)
    variants = {r["variant"] for r in records}
    assert set(TRANSPOSE_VERSIONS) <= variants and {"numba_copy_4B", "numba_copy_8B"} <= variants
    assert not any(r.get("failed") for r in records)
    # and the notebooks never read a dry run as a measurement
    assert measurements.load("transpose", data_dir=tmp_path) == []


# --- the harness of scripts/gpu (course.measure.bench_harness.Script) ---------------------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "scripts" / "gpu").glob("*.py"))


# machine-like paths built from parts: no committed file names a path of a machine (tests/test_no_machine_paths.py)
OPT, WORK, ROOTDIR = "/" + "opt/", "/" + "work/", "/" + "root/"


def test_scrub_replaces_machine_paths_by_their_last_component():
    text = (f"/usr/local/cuda/bin/compute-sanitizer --tool memcheck {OPT}torch/.venv/bin/python3 "
            f"{WORK}main/scripts/gpu/x.py --out {ROOTDIR}out/lane/measurements")
    got = bench_harness.scrub(text)
    for prefix in ("/usr/", OPT, WORK, ROOTDIR):
        assert prefix not in got, got
    assert "…/compute-sanitizer" in got and "…/x.py" in got and "--tool memcheck" in got
    assert bench_harness.scrub("2 of 3 sectors, 4/8 wavefronts") == "2 of 3 sectors, 4/8 wavefronts"  # ratios stay


def test_script_refuses_to_time_without_a_gpu_unless_dry_run(tmp_path):
    if ON_GPU:
        pytest.skip("this process has a GPU")
    with pytest.raises(SystemExit, match="--dry-run"):
        bench_harness.Script("doc", "x", argv=["--out", str(tmp_path)])
    h = bench_harness.Script("doc", "x", argv=["--out", str(tmp_path / "o"), "--dry-run", "--reps", "3"])
    assert h.reps == 3 and h.dry_run and not h.gpu and (tmp_path / "o").is_dir()
    assert h.time_ms(lambda: None) is None  # on the CPU: called once, never timed
    rec = h.record("x_part", "v", None, 0, (4, 5), "float32", note=f"{ROOTDIR}secret/file.txt")
    assert rec["run"] == bench.run_id() and rec["dry_run"] is True and rec["size"] == [4, 5]
    h.guarded("boom", lambda: 1 / 0)
    assert "ZeroDivisionError" in h.failed["boom"]
    paths = h.save()
    h.save()  # saving twice records the failure once
    saved = {p.name: json.loads(p.read_text()) for p in paths}
    assert saved["x_part.json"][0]["note"] == "…/file.txt"
    assert [r["part"] for r in saved["x.json"] if r.get("failed")] == ["boom"]


def test_no_script_repeats_the_preamble_or_reaches_into_bench_privates():
    for path in SCRIPTS:
        text = path.read_text()
        assert "bench._" not in text and "._prov" not in text, f"{path.name} uses a private name of course.measure.bench"
        assert "argparse.ArgumentParser(" not in text, f"{path.name} parses its own arguments: use course.measure.bench_harness.Script"
        assert "Script(" in text, f"{path.name} does not run under course.measure.bench_harness.Script"


def test_sass_instructions_keep_instructions_only_and_resolve_labels():
    listing = """
        .section .text.k,"ax",@progbits
        .L_x_0:
        /*0000*/                   ISETP.GE.AND P0, PT, R0, 0x1, PT ;   /* 0x000fe20003f06270 */
                                                                          /* 0x000fca0003f06270 */
        /*0010*/              @!P0 BRA `(.L_x_0) ;                       /* 0x0000000000008947 */
        /*0020*/                   FSEL R3, R4, R5, P0 ;                 /* 0x0000000504037208 */
    """
    got = cuda_tools.sass_instructions(listing)
    assert got == [(0, "ISETP.GE.AND P0, PT, R0, 0x1, PT"), (0x10, "@!P0 BRA 0x0000"), (0x20, "FSEL R3, R4, R5, P0")]


def test_parse_ncu_csv_groups_metrics_by_launch():
    text = ('==PROF== Connected\n"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","k","dram__bytes_read.sum","byte","1,024"\n"0","k","gpu__time_duration.sum","ns","2000"\n'
            '"1","k","dram__bytes_read.sum","byte","4096"\n')
    got = cuda_tools.parse_ncu_csv(text)
    assert [g["dram__bytes_read.sum"] for g in got] == [1024.0, 4096.0] and got[0]["gpu__time_duration.sum"] == 2000



def test_ncu_launches_is_the_one_reader_of_ncus_csv():
    """Every script shapes ncu's launches from ncu_launches; a launch ID that is no number is not a launch."""
    text = ('==PROF== Connected\n"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
            '"1","k2","w","","n/a"\n"0","k","dram__bytes_read.sum","byte","1,024"\n"x","k3","a","","1"\n')
    assert cuda_tools.ncu_launches(text) == [
        {"id": 0, "kernel": "k", "block": None, "grid": None, "rows": [("dram__bytes_read.sum", "byte", "1,024")]},
        {"id": 1, "kernel": "k2", "block": None, "grid": None, "rows": [("w", "", "n/a")]}]
    # ncu's own columns (it writes these with --csv --metrics): the launch shape is the launch's, not a row's
    full = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","7","python","h","k(float*)","1","7","(128, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler '
            'metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","79.80"\n')
    assert cuda_tools.ncu_launches(full) == [{"id": 0, "kernel": "k(float*)", "block": "(128, 1, 1)",
                                              "grid": "(264, 1, 1)", "rows": [
                                                  ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "79.80")]}]
    assert cuda_tools.ncu_launches("no table here") == []
    number = cuda_tools.ncu_number
    assert [number("1,024"), number(" 12.5 "), number("3.0"), number(""), number(None), number("n/a")] == [
        1024, 12.5, 3, None, None, "n/a"]
    assert isinstance(number("3.0"), int) and number("n/a", words=False) is None
    scripts = ROOT / "scripts" / "gpu"
    copies = [p.name for p in scripts.glob("*.py") if re.search(r"\bimport csv\b|\bcsv\.(DictReader|reader)\b",
                                                                p.read_text(encoding="utf-8"))]
    assert not copies, f"these scripts read ncu's CSV themselves: use course.measure.cuda_tools.ncu_launches: {copies}"

def test_import_records_takes_gpu_records_only_and_replaces_their_run(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    prov = {"ms": 1.0, "reps": 3, "size": [1], "dtype": "float32", "driver": "1", "numba_cuda": "0.30.4",
            "date": "2026-12-01T05:00:00+00:00", "backend": "gpu"}
    good = dict(prov, benchmark="b", variant="v", device="NVIDIA H200", run="new", command=f"{OPT}x/python3 y")
    dry = dict(good, variant="dry", dry_run=True)
    cpu = dict(good, variant="cpu", device="none (cpu backend)")
    failed = {"benchmark": "b", "variant": "failed", "failed": "boom", "run": "new"}
    (src / "b.json").write_text(json.dumps([good, dry, cpu, failed]))
    (dst / "b.json").write_text(json.dumps([dict(good, run="old"), dict(good, variant="stale")]))
    assert bench_harness.import_records(src, dst) == {"b": 1}
    recs = json.loads((dst / "b.json").read_text())
    assert [(r["run"], r["variant"]) for r in recs] == [("old", "v"), ("new", "v")]
    assert recs[-1]["command"] == "…/python3 y"


@pytest.mark.parametrize("script", [p for p in SCRIPTS if p.name in ("measure_probes.py",)], ids=lambda p: p.name)
def test_probe_script_runs_on_the_cpu_with_dry_run(script, tmp_path):
    env = dict(os.environ, COURSE_BACKEND="cpu", PROBES_ONLY="latency,smem,scheduling")
    r = subprocess.run([sys.executable, str(script), "--dry-run", "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    sched = json.loads((tmp_path / "probes_scheduling.json").read_text())
    by = {x["variant"]: x for x in sched}
    assert by["warp_lock threads=32 tpb=32"]["finished"] is True
    assert by["last_warp_unsynced"]["wrong_blocks_total"] > 0  # the engine's order exposes the race
    assert by["last_warp_syncwarp"]["wrong_blocks_total"] == 0
    assert all(x["dry_run"] and x["ms"] is None for x in sched)
