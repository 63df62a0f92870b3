"""Every recorded GPU figure carries its provenance, and none comes from a dry run or a CPU backend."""

import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "data" / "measurements").glob("*.json"))
REQUIRED = ("benchmark", "variant", "ms", "reps", "size", "dtype", "device", "driver", "numba_cuda", "date", "run")


def test_there_are_recorded_runs():
    assert FILES, "data/measurements/ holds no recorded GPU runs"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_file_is_a_list_of_records_with_provenance(path):
    records = json.loads(path.read_text())
    assert isinstance(records, list) and records, f"{path.name}: must be a non-empty JSON list of records"
    runs = set()
    for i, rec in enumerate(records):
        where = f"{path.name} record {i} ({rec.get('variant')})"
        missing = [k for k in REQUIRED if k not in rec]
        assert not missing, f"{where}: missing {missing}"
        assert rec["benchmark"] == path.stem or path.stem.startswith(rec["benchmark"]), where
        assert not rec.get("dry_run"), f"{where}: a dry run (no GPU) must never be recorded"
        assert rec.get("backend", "gpu") == "gpu", f"{where}: recorded on the {rec.get('backend')} backend"
        assert rec["device"] and "cpu" not in str(rec["device"]).lower(), where
        assert rec["date"][:4].isdigit(), where
        for key in ("gbps", "tflops"):
            if rec.get(key) is not None:
                assert rec["ms"] is not None and rec["ms"] > 0, f"{where}: {key} without a measured time"
        runs.add(rec["run"])
    assert all(runs), path.name


# --- the copy ceilings: one per regime, one run --------------------------------------------------------------


def _ceiling_records(tmp_path, runs):
    """kernel_profiles.json with one HBM and one L2 copy per (run, date, hbm GB/s, l2 GB/s)."""
    recs = []
    for run, date, hbm, l2 in runs:
        for variant, gbps in (("copy_hbm_1GiB", hbm), ("copy_l2_8MiB", l2)):
            recs.append({"benchmark": "kernel_profiles", "variant": variant, "kind": "ceiling", "ms": 1.0,
                         "gbps": gbps, "run": run, "date": date})
        recs.append({"benchmark": "kernel_profiles", "variant": "stencil", "kind": "case", "ms": 1.0, "run": run,
                     "date": date})
    (tmp_path / "kernel_profiles.json").write_text(json.dumps(recs))
    return tmp_path


def test_copy_ceiling_reads_the_newest_run_of_its_regime(tmp_path):
    from course.measure import measurements

    d = _ceiling_records(tmp_path, [("old", "2026-01-01", 1000.0, 900.0), ("new", "2026-02-01", 4000.0, 3900.0)])
    assert measurements.copy_ceiling("hbm", d)["gbps"] == 4000.0
    assert measurements.copy_ceiling("l2", d)["gbps"] == 3900.0
    assert measurements.copy_ceiling("l2", d)["run"] == "new"
    with pytest.raises(ValueError, match="'hbm'"):
        measurements.copy_ceiling("dram", d)
    assert measurements.copy_ceiling("hbm", tmp_path / "nothing") is None


def test_of_copy_says_the_fraction_and_when_runs_differ(tmp_path):
    from course.measure import measurements

    d = _ceiling_records(tmp_path, [("r1", "2026-02-01", 4000.0, 3000.0)])
    assert measurements.of_copy(3000.0, "hbm", "r1", d) == "0.75 of the HBM copy (4000 GB/s)"
    assert measurements.of_copy(1500.0, "l2", None, d) == "0.50 of the L2-resident copy (3000 GB/s)"
    other = measurements.of_copy(3000.0, "hbm", "r0", d)
    assert other.startswith("0.75 of the HBM copy") and "another run than this figure's r0" in other
    assert measurements.of_copy(None, "hbm", None, d) == measurements.NOT_MEASURED


def test_the_recorded_copy_ceilings_are_of_one_run_and_stream_at_hbm_speed():
    from course.measure import measurements

    hbm, l2 = measurements.copy_ceiling("hbm"), measurements.copy_ceiling("l2")
    assert hbm and l2, "data/measurements/kernel_profiles.json lacks copy_hbm_1GiB or copy_l2_8MiB"
    assert hbm["run"] == l2["run"]
    # the H200's HBM3e peak is 4.8 TB/s: a copy above it, or below half of it, is a broken record
    assert 2400 < hbm["gbps"] < 4800
    # size is the buffer's bytes; the HBM copy's two buffers overflow the L2 many times, the L2 copy's fit in it
    assert hbm["bytes"] == 2 * hbm["size"][0] > 10 * 50 * 2**20 and l2["bytes"] == 2 * l2["size"][0] <= 50 * 2**20


# --- the one reader: measurements.py reads every recorded file, for the ledger and the widgets too -----------------


def _r(variant, run, date, **fields):
    return dict(benchmark="b", variant=variant, run=run, date=date, device="NVIDIA H200", **fields)


def test_latest_records_keep_one_run_per_benchmark(tmp_path):
    from course.measure import measurements

    (tmp_path / "b.json").write_text(json.dumps([
        _r("slow", "old", "2026-11-01T00:00:00", ms=9.0), _r("only_old", "old", "2026-11-01T00:00:00", ms=1.0),
        _r("slow", "new", "2026-11-02T00:00:00", ms=5.0), _r("dry", "new", "2026-11-02T00:00:00", ms=0.1, dry_run=True)]))
    got = measurements.latest_records(tmp_path)
    # the newest run only: its 5 ms, not the older 9 ms; a variant of the older run alone is not mixed in
    assert {k: r["ms"] for k, r in got.items()} == {("b", "slow"): 5.0}
    assert measurements.record(measurements.latest("b", tmp_path), "slow")["run"] == "new"
    assert measurements.record(measurements.load("b", tmp_path), "missing") is None


def test_a_number_is_a_real_number_and_a_bool_is_not():
    """The one rule the ledger, the lab's predictions and the look-ups share: True is not the count 1."""
    import numpy as np

    from course.measure import measurements

    numbers = [3, 2.5, np.int32(4), np.float32(0.5), -0.0]
    assert [measurements.number(x) for x in numbers] == [3.0, 2.5, 4.0, 0.5, 0.0]
    assert all(type(measurements.number(x)) is float for x in numbers)
    assert [measurements.number(x) for x in (True, False, np.True_, "3", None, [1], {"a": 1})] == [None] * 7


def test_the_ledger_reads_through_the_same_reader_and_stops_at_a_corrupt_file(tmp_path):
    from course.measure import claims, measurements

    (tmp_path / "b.json").write_text(json.dumps([_r("slow", "r1", "2026-11-01T00:00:00", ms=1.0)]))
    (tmp_path / "broken.json").write_text("[{not json")
    # before, the ledger skipped a corrupt file silently and judged without it; now it says which file
    with pytest.raises(measurements.MeasurementError, match="broken.json.*Restore it from git"):
        claims.Records(directory=tmp_path, validation=None)
    with pytest.raises(measurements.MeasurementError, match="broken.json"):
        claims.load_records(tmp_path)


def test_a_ratio_of_the_ledger_never_divides_records_of_two_runs():
    from course.measure import claims

    ratio = {"kind": "ratio", "a": {"benchmark": "b", "variant": "slow", "field": "ms"},
             "b": {"benchmark": "b", "variant": "fast", "field": "ms"}, "range": [2, 3]}
    # the newest run measured only `slow` (10 ms); the older one measured both (5 / 2 ms): 2.5, from the older run
    store = claims.Records(records=[_r("slow", "new", "2026-11-02T00:00:00", ms=10.0),
                                    _r("slow", "old", "2026-11-01T00:00:00", ms=5.0),
                                    _r("fast", "old", "2026-11-01T00:00:00", ms=2.0)], cases={})
    value, verdict, evidence = claims.judge(ratio, store)
    assert (value, verdict) == (2.5, "confirmed")
    assert evidence.count("run old") == 2 and "run new" not in evidence
    # each side recorded in another run only: no ratio at all (pending), not 10 / 2
    apart = claims.Records(records=[_r("slow", "new", "2026-11-02T00:00:00", ms=10.0),
                                    _r("fast", "old", "2026-11-01T00:00:00", ms=2.0)], cases={})
    assert claims.judge(ratio, apart) == (None, None, None)
    # a record over a validation case: two runs, never divided
    mixed = dict(ratio, b={"case": "c", "field": ["ncu", "n"]})
    cases = claims.Records(records=[_r("slow", "new", "2026-11-02T00:00:00", ms=10.0)], cases={"c": {"ncu": {"n": 5}}})
    assert claims.judge(mixed, cases) == (None, None, None)


def test_the_validation_run_has_one_schema_and_a_message_for_another(tmp_path):
    from course.measure import measurements

    p = tmp_path / "tracer_validation.json"
    assert measurements.validation_run(p) == ({}, {}) and measurements.hardware_counts(p) == {}
    p.write_text(json.dumps({"provenance": {"run": "r9", "device": "NVIDIA H200"},
                             "cases": [{"name": "k[1]", "ncu": {"global_load_requests": 4.0, "note": "x"}},
                                       {"name": "k[2]", "ncu": None, "error": "ncu failed"}]}))
    cases, prov = measurements.validation_run(p)
    assert set(cases) == {"k[1]", "k[2]"} and prov["run"] == "r9"
    assert measurements.hardware_counts(p) == {"k[1]": {"global_load_requests": 4}}
    p.write_text('[{"name": "k[1]", "ncu": {}}]')  # the list some older readers also accepted
    with pytest.raises(measurements.MeasurementError, match="tracer_validation.json.*validate_tracer.py"):
        measurements.validation_run(p)
