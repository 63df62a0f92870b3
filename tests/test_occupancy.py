"""course.measure.occupancy: the calculator against hand arithmetic, and against the driver's recorded answers."""

import json

import pytest

import course
from course.measure import occupancy as occ
from course.measure.occupancy import GA102, occupancy


# --- hand arithmetic on the H200 (64 warps, 32 blocks, 65 536 registers in 4 slices, 228 KB shared per SM) ----------


def test_light_kernel_fills_the_sm():
    # 32 regs: 1024 per warp, 16 warps per 16 384-register slice, 64 warps; 256 threads = 8 warps -> 8 blocks
    o = occupancy(32, 256, 0)
    assert (o.blocks_per_sm, o.warps_per_sm, o.occupancy) == (8, 64, 1.0)
    assert set(o.limited_by) == {"warps", "registers"}


def test_34_registers_give_75_percent_at_256_and_50_percent_at_1024():
    # 34·32 = 1088 -> 1280 (rounded to 256); 16 384 // 1280 = 12 warps per slice, 48 per SM
    o256 = occupancy(34, 256)
    assert o256.regs_per_warp == 1280
    assert (o256.blocks_per_sm, o256.warps_per_sm) == (6, 48)
    assert o256.occupancy == pytest.approx(0.75)
    o1024 = occupancy(34, 1024)  # 48 // 32 = one block of 32 warps
    assert (o1024.blocks_per_sm, o1024.warps_per_sm, o1024.limited_by) == (1, 32, ("registers",))


def test_block_1024_is_never_at_25_percent():
    # seed 002 §1.5: "block 1024 ... occupancy only 25 %": one resident block is already 32 of 64 warps
    seen = {occupancy(r, 1024).occupancy for r in range(0, 256)}
    assert seen == {0.0, 0.5, 1.0}


def test_register_limit_per_block():
    assert occupancy(64, 1024).blocks_per_sm == 1  # 64·32·32 = 65 536 registers: exactly fits
    o = occupancy(65, 1024)  # 65·32 -> 2304 per warp, ·32 warps = 73 728 > 65 536
    assert o.blocks_per_sm == 0 and "registers" in o.reason and "does not fit" in repr(o)


def test_registers_checked_as_if_spread_over_all_slices():
    # 255 regs: 8192 per warp, 2 warps per slice = 8 per SM; 3-warp blocks -> 2 blocks (6 warps)
    o = occupancy(255, 96)
    assert (o.blocks_per_sm, o.warps_per_sm) == (2, 6)


def test_small_blocks_hit_the_block_limit():
    o = occupancy(16, 32)  # 32 blocks of 1 warp: half the warp slots
    assert (o.blocks_per_sm, o.warps_per_sm, o.limited_by) == (32, 32, ("blocks",))
    assert occupancy(16, 64).warps_per_sm == 64


def test_shared_memory_with_reserve_and_rounding():
    o = occupancy(32, 256, 48 * 1024)  # 49 152 + 1024 reserved = 50 176 B; 233 472 // 50 176 = 4 blocks
    assert (o.smem_per_block, o.blocks_per_sm, o.limited_by) == (50176, 4, ("shared memory",))
    assert occupancy(32, 64, 100).smem_per_block == 1152  # 1124 rounded up to 128 bytes
    assert occupancy(32, 64, 100).limits["shared memory"] == 233472 // 1152
    over = occupancy(32, 256, 48 * 1024 + 1)
    assert over.blocks_per_sm == 0 and "opting in" in over.reason
    assert occupancy(32, 256, 48 * 1024 + 1, optin=True).blocks_per_sm == 4


def test_block_too_large():
    o = occupancy(16, 1025)
    assert o.blocks_per_sm == 0 and "1024" in o.reason


def test_seed_003_ga102_block_64_is_not_25_percent():
    # GA102 (cc 8.6): 16 blocks × 2 warps = 32 of 48 warps; 25 % would need > 128 registers per thread
    assert occupancy(32, 64, 0, GA102).occupancy == pytest.approx(32 / 48)
    assert occupancy(128, 64, 0, GA102).occupancy > 0.25
    assert occupancy(129, 64, 0, GA102).occupancy == pytest.approx(0.25)


def test_monotone_in_registers_and_shared_memory():
    for tpb in (64, 256, 1024):
        warps = [occupancy(r, tpb).warps_per_sm for r in range(0, 256, 5)]
        assert warps == sorted(warps, reverse=True)
        warps = [occupancy(32, tpb, s).warps_per_sm for s in range(0, 48 * 1024, 1000)]
        assert warps == sorted(warps, reverse=True)


def test_max_regs_for():
    assert occ.max_regs_for(64, 256) == 32
    assert occ.max_regs_for(48, 256) == 40  # 40·32 = 1280: 12 warps per slice
    assert occupancy(occ.max_regs_for(48, 256) + 1, 256).warps_per_sm < 48


def test_bad_input_message():
    with pytest.raises(ValueError, match="block size must be positive"):
        occupancy(32, 0)


# --- Little's law ---------------------------------------------------------------------------------------------------


def test_littles_law_by_hand():
    assert occ.bytes_in_flight(4e12, 600e-9) == pytest.approx(2.4e6)
    # 2.4 MB over 132 SMs with 512 B per warp in flight (32 lanes × 16 B) -> 35.5 warps per SM
    assert occ.warps_needed(4e12, 600e-9, 512) == pytest.approx(2.4e6 / 132 / 512)
    bw = occ.bandwidth_from_warps(occ.warps_needed(4e12, 600e-9, 512), 512, 600e-9)
    assert bw == pytest.approx(4e12)


# --- CPU behaviour and the driver's recorded answers -----------------------------------------------------------------


@pytest.mark.skipif(course.on_gpu(), reason="checks the CPU backend's messages")
def test_driver_needs_a_gpu():
    from course.kernels import reduction

    with pytest.raises(RuntimeError, match="needs a GPU"):
        occ.driver_blocks_per_sm(reduction.atomic_each, 256)


@pytest.mark.skipif(course.on_gpu(), reason="checks the CPU backend's lookup of recorded figures")
def test_resources_on_cpu_come_from_records():
    from course.kernels import reduction

    name = occ.kernel_name(reduction.atomic_each)
    assert name == "course.kernels.reduction.atomic_each"
    if any(r.get("kernel") == name for r in occ.recorded()):
        assert occ.resources(reduction.atomic_each).regs_per_thread > 0
    else:
        with pytest.raises(LookupError, match="measure_occupancy.py"):
            occ.resources(reduction.atomic_each)


def test_recorded_is_the_latest_run_read_as_every_recorded_file(tmp_path):
    from course.measure import measurements

    def rec(run, date, regs, **more):
        return {"benchmark": "occupancy", "variant": "kernel", "kernel": "k", "regs_per_thread": regs,
                "shared_per_block": 0, "rows": [], "run": run, "date": date, **more}

    path = tmp_path / "occupancy.json"
    path.write_text(json.dumps([rec("old", "2026-11-01T00:00:00", 40), rec("new", "2026-11-02T00:00:00", 32),
                                rec("dry", "2026-11-03T00:00:00", 99, dry_run=True),
                                dict(rec("new", "2026-11-02T00:00:00", 0), variant="sweep")]))
    # one run, the newest measured one: a kernel's registers come from one compiler, never two runs' mix
    assert [(r["run"], r["regs_per_thread"]) for r in occ.recorded(path)] == [("new", 32)]
    assert occ.recorded(tmp_path / "none.json") == []
    path.write_text("[{")
    with pytest.raises(measurements.MeasurementError, match="occupancy.json: not valid JSON"):
        occ.recorded(path)


def _driver_rows():
    if not occ.RECORDED.is_file():
        return []
    recs = [r for r in json.loads(occ.RECORDED.read_text()) if r.get("variant") == "kernel" and not r.get("dry_run")]
    return [(r["kernel"], r["regs_per_thread"], r["shared_per_block"], row) for r in recs for row in r["rows"]]


@pytest.mark.skipif(not _driver_rows(), reason="not measured yet: run scripts/gpu/measure_occupancy.py on a GPU")
def test_model_agrees_with_the_driver_on_every_recorded_kernel():
    bad = []
    for kernel, regs, smem, (tpb, dyn, driver, _model) in _driver_rows():
        mine = occupancy(regs, tpb, smem + dyn).blocks_per_sm
        if mine != (driver if driver is not None else 0):  # None: the driver refused the launch shape
            bad.append((kernel, regs, smem, tpb, dyn, driver, mine))
    assert not bad, f"{len(bad)} disagreements, first: {bad[:5]}"


def test_gpu_script_dry_run(tmp_path):
    """scripts/gpu/measure_occupancy.py --dry-run: the sweeps' configurations checked on the CPU, nothing timed."""
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, COURSE_BACKEND="cpu")
    res = subprocess.run([sys.executable, str(root / "scripts/gpu/measure_occupancy.py"), "--dry-run", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, env=env, cwd=root)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    for name in ("occupancy_sweep", "occupancy_block_size"):
        records = json.loads((tmp_path / f"{name}.json").read_text())
        assert records and all(r["dry_run"] and r["ms"] is None for r in records)


NCU_HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _ncu_row(launch, kernel, block, grid, metric, value):
    return (f'"{launch}","4242","python3","host","{kernel}","1","7","{block}","{grid}","0","9.0",'
            f'"Command line profiler metrics","{metric}","%","{value}"')


def _record_achieved(tmp_path, text):
    """The script's records and problems for ncu output ``text``: the script imported in a child (a dry run, so
    on the CPU engine whatever this process chose), its record_achieved fed ``text``."""
    import os
    import pathlib
    import subprocess
    import sys

    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "measure_occupancy.py"
    (tmp_path / "ncu.csv").write_text(text)
    code = (
        "import importlib.util, json, sys\n"
        f"sys.argv = ['measure_occupancy.py', '--dry-run', '--out', {str(tmp_path / 'out')!r}]\n"
        f"spec = importlib.util.spec_from_file_location('measure_occupancy', {str(script)!r})\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\n"
        f"ach = mod.record_achieved(open({str(tmp_path / 'ncu.csv')!r}).read())\n"
        "print('RESULT', json.dumps({'records': ach.records, 'errors': mod.ERRORS}))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, COURSE_BACKEND="cpu"))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(res.stdout.split("RESULT ", 1)[1])


def test_achieved_occupancy_reads_ncus_csv_through_the_one_parser(tmp_path):
    """measure_occupancy.py's ncu step on a hand-written ``ncu --csv --metrics`` table: two probe launches, then the
    six measured ones; each measured launch is recorded under its label with ncu's block, grid and percentages."""
    achieved, theoretical = "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct"
    rows = [NCU_HEAD, '==PROF== a line ncu writes among its table is no launch',
            _ncu_row(0, "probe(float*)", "(128, 1, 1)", "(1, 1, 1)", achieved, "3.1"),
            _ncu_row(1, "probe(float*)", "(1024, 1, 1)", "(1, 1, 1)", achieved, "2.5")]
    measured = [("atomic_b64(float*)", "(64, 1, 1)", "(16384, 1, 1)", "79.80", "100"),
                ("atomic_b256(float*)", "(256, 1, 1)", "(4096, 1, 1)", "88.1", "100"),
                ("grid_stride(float*)", "(256, 1, 1)", "(528, 1, 1)", "n/a", "100"),
                ("gs_w4u4(float*)", "(256, 1, 1)", "(1056, 1, 1)", "93.25", "100"),
                ("gs_w4u4(float*)", "(1024, 1, 1)", "(264, 1, 1)", "91", "100"),
                ("gs_w1u1(float*)", "(128, 1, 1)", "(264, 1, 1)", "12.5", "25")]
    for k, (kernel, block, grid, ach, theo) in enumerate(measured, start=2):
        rows += [_ncu_row(k, kernel, block, grid, theoretical, theo), _ncu_row(k, kernel, block, grid, achieved, ach)]
    got = _record_achieved(tmp_path, "==PROF== Connected to process 4242\n" + "\n".join(rows) + "\n")
    assert got["errors"] == []
    recs = got["records"]
    assert [r["variant"] for r in recs][::5] == ["atomic_b64 at 2^20", "grid_stride w1 u1, 128 threads, 2 blocks/SM, 2^26"]
    assert [(r["kernel"], r["block"], r["grid"], r["achieved_pct"], r["theoretical_pct"]) for r in recs] == [
        ("atomic_b64(float*)", "(64, 1, 1)", "(16384, 1, 1)", 79.8, 100.0),
        ("atomic_b256(float*)", "(256, 1, 1)", "(4096, 1, 1)", 88.1, 100.0),
        ("grid_stride(float*)", "(256, 1, 1)", "(528, 1, 1)", None, 100.0),  # ncu's n/a: not measured
        ("gs_w4u4(float*)", "(256, 1, 1)", "(1056, 1, 1)", 93.25, 100.0),
        ("gs_w4u4(float*)", "(1024, 1, 1)", "(264, 1, 1)", 91.0, 100.0),
        ("gs_w1u1(float*)", "(128, 1, 1)", "(264, 1, 1)", 12.5, 25.0)]
    assert [r["size"] for r in recs] == [[1 << 20]] * 3 + [[1 << 26]] * 3 and all(r["source"] == "ncu" for r in recs)


def test_achieved_occupancy_records_nothing_when_ncu_saw_fewer_launches(tmp_path):
    rows = [NCU_HEAD] + [_ncu_row(k, "k(float*)", "(64, 1, 1)", "(8, 1, 1)", "m", "1") for k in range(5)]
    got = _record_achieved(tmp_path, "\n".join(rows) + "\n")
    assert got["records"] == [] and len(got["errors"]) == 1
    assert "5 launch(es), fewer than the 6 measured ones; nothing recorded" in got["errors"][0]
