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
