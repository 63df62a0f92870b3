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
