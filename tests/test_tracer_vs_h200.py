"""The tracer, run now on this machine, against the counts Nsight Compute recorded on the H200.

``data/tracer_validation.json`` holds, per validation case, what ``ncu --clock-control none`` counted on
the H200 (scripts/gpu/validate_tracer.py; provenance inside).  These tests trace every case again with
the code as it is now and demand equality on all eight counts and both bank-conflict counters — so a
change to the tracer, to the bank rules (course.trace.analysis) or to a validated kernel that breaks the
agreement fails here, on a CPU, before anyone reaches a GPU.  A case added to a module's NCU_CASES
but not yet measured fails too: run the validation on the H200 and commit its table.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

import course  # noqa: F401
from course.trace import compiler
from course.trace import trace

ROOT = pathlib.Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "data" / "tracer_validation.json").read_text())
HW = {c["name"]: c for c in RECORD["cases"]}


def _cases():
    spec = importlib.util.spec_from_file_location("validate_tracer", ROOT / "scripts" / "gpu" / "validate_tracer.py")
    vt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vt)
    cases, errors = vt.load_cases(vt.case_modules(""))
    assert not errors, errors
    return [c for _m, c in cases]


CASES = _cases()


def test_the_record_is_a_real_h200_run():
    p = RECORD["provenance"]
    assert p["device"] == "NVIDIA H200" and p["backend"] == "gpu" and p["driver"] and p["ncu"].startswith("Version")
    assert RECORD["summary"]["compared"] == RECORD["summary"]["cases"] == len(RECORD["cases"])


def test_every_validation_case_was_measured():
    missing = [c.name for c in CASES if c.name not in HW or not HW[c.name].get("ncu")]
    assert not missing, f"cases without H200 counts (run scripts/gpu/validate_tracer.py on the H200): {missing}"


@pytest.fixture
def committed_facts_only(monkeypatch, tmp_path):
    """A learner's machine: no ptxas/nvdisasm and an empty cache, so only data/compiler_facts.json counts.

    This is also what keeps the committed facts current: a kernel edited (or moved) since they were made
    has another fingerprint, its merged loads go uncounted, and the comparison fails until
    `make compiler-facts` is run.
    """
    monkeypatch.setattr(compiler, "toolchain", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiler, "_memo", {})
    monkeypatch.setattr(compiler, "_why", {})


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_tracer_equals_nsight_compute(case, committed_facts_only):
    hw = HW.get(case.name)
    if hw is None or not hw.get("ncu"):
        pytest.fail(f"{case.name}: no H200 counts recorded")
    r = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), dynshared=case.dynshared, lines=False)
    got = r.totals()
    bc = r.bank_conflicts()
    got["shared_load_bank_conflicts"], got["shared_store_bank_conflicts"] = bc["load"], bc["store"]
    want = dict(hw["ncu"])
    want.update({k: hw["ncu_extra"][k] for k in ("shared_load_bank_conflicts", "shared_store_bank_conflicts")})
    diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    assert not diff, f"{case.name}: (tracer, H200) {diff}; compiler view: {r.compiler}"


def test_without_a_compiler_the_committed_facts_still_count_the_merged_loads(committed_facts_only):
    case = next(c for c in CASES if c.name == "matmul.tiled")
    r = trace(case.kernel, case.griddim, case.blockdim, *case.args(0), lines=False)
    assert r.totals()["shared_load_requests"] == HW["matmul.tiled"]["ncu"]["shared_load_requests"] == 1280
    assert r.compiler["merged_lines"] and r.compiler["facts"].startswith("ptxas")
