"""The exercises' solutions as timed cases (issue 24): each launches and is right, each check asks what its exercise
asks, the unseen score uses only the calibration half's constants, and the pre-registered predictions follow from
their counts."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import course  # noqa: F401  (backend first)
from course import engine
from course import exercises as E
from course.exercises import solution_cases as S
from course.measure import explain as X
from course.measure import explain_check as V

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMALL = S.cases("small")


def test_every_kernel_exercise_has_a_case_and_the_rest_say_why():
    kernels = {n for n, ex in E.EXERCISES.items() if not ex.host}
    assert {c.name for c in SMALL} == {f"sol_{E.get(n).target}" for n in kernels}
    assert set(S.SKIPPED) == {n for n, ex in E.EXERCISES.items() if ex.host}
    for c in SMALL:
        assert "solution" in c.tags and any(t.startswith("ch") for t in c.tags) and c.check is not None


def test_the_kernels_are_the_solution_notebooks_compiled_by_the_grader():
    c = next(c for c in SMALL if c.name == "sol_transpose_padded")
    src = c.kernel.py_func.__code__.co_filename
    assert src.startswith("<cell ") and c.kernel.py_func.__name__ == "transpose_padded"


@pytest.mark.parametrize("name", sorted(n for n, ex in E.EXERCISES.items() if not ex.host))
def test_each_check_asks_what_its_exercise_asks(name):
    """The NumPy answer behind a case's check equals the exercise's own expected output on its inputs."""
    ex = E.get(name)
    rng = np.random.default_rng(11)
    for inp in [ex.make_trace_input(rng), *ex.make_inputs(rng)]:
        want = S.want_of(ex.target, inp.args)
        assert set(want) == set(inp.expected), inp.label
        for i, e in inp.expected.items():
            assert S.compare({i: want[i]}, {i: e}, 1e-6, 1e-5) == "", (name, inp.label)


def test_every_small_case_launches_on_the_cpu_engine_and_is_right():
    for c in SMALL:
        before = c.args(0)
        after = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in before)
        engine.launch(c.kernel, c.griddim, c.blockdim, after, dynshared=c.dynshared)
        assert c.check(before, after) == "", c.name


def test_a_wrong_result_is_named_by_the_check():
    c = next(c for c in SMALL if c.name == "sol_reverse")
    before = c.args(0)
    after = (before[0], before[0].copy())  # not reversed
    msg = c.check(before, after)
    assert msg.startswith("out[0] is ") and "expected" in msg and "elements wrong" in msg


def _rec(name, ms, run, tags=("ch01",)):
    # a profile record as profile_kernels writes it, with no Nsight Compute counters
    return {"benchmark": "kernel_profiles", "variant": name, "kind": "case", "ms": ms, "run": run, "tags": list(tags),
            "ncu": {}}


def test_the_unseen_score_uses_the_calibration_constants_and_the_frozen_predictions():
    counts = json.loads(X.VALIDATION.read_text())["counts"]
    seen = [n for n in counts if not V.unseen(counts[n])][:6]
    sol = dict(counts[seen[0]], tags=["solution"])  # any counts will do: only the arithmetic is checked
    two = {**{n: counts[n] for n in seen}, "sol_a": sol, "sol_b": sol}
    # the chapters' cases in one run, the solutions in a later one: each group comes from its own latest run
    recs = [_rec(n, 0.5, "r1") for n in seen] + [_rec("sol_a", 1.0, "r2", ("ch01", "solution")),
                                                   _rec("sol_b", 4.0, "r2", ("ch01", "solution"))]
    records = V.records_by_case(recs)
    assert set(records) == set(seen) | {"sol_a", "sol_b"}
    k = V.fit({n: counts[n] for n in seen}, records, rounds=1)
    # unseen ms are never fitted on: a thousandfold change of them leaves the constants alone
    tampered = {n: dict(r, ms=r["ms"] * (1000 if n.startswith("sol_") else 1)) for n, r in records.items()}
    assert V.fit({n: d for n, d in two.items() if not V.unseen(d)}, tampered, rounds=1) == k
    frozen = {"sol_a": {"predicted_ms": 2.0, "limiter": "dram"}}  # hand-made: 2× over sol_a's 1.0 ms
    rows = V.unseen_rows(two, records, k, frozen)
    assert {r["case"] for r in rows} == {"sol_a", "sol_b"} and all(r["split"] == "unseen" for r in rows)
    a, b = (next(r for r in rows if r["case"] == n) for n in ("sol_a", "sol_b"))
    assert a["predicted_ms"] == 2.0 and a["limiter"] == "dram" and a["preregistered"]
    assert not b["preregistered"] and b["predicted_ms"] == b["model_ms"]
    assert b["model_ms"] == pytest.approx(X.predict(V._counts(sol), k)[0] * 1e3)
    assert V.score([a])["median_error"] == 2.0


def test_with_no_solution_records_the_unseen_group_is_empty():
    data = json.loads(X.VALIDATION.read_text())
    if data["unseen"]["n"] == 0:
        assert data["unseen"] == {"n": 0} and data["unseen_rows"] == []
    assert all(r["split"] != "unseen" for r in data["rows"])


@pytest.mark.parametrize("round_", list(V.ROUNDS))
def test_every_round_was_predicted_before_the_h200_measured_it(round_):
    """Each round's frozen file holds every case of its set, its tallies add up, and every case's profile record is
    dated after the prediction it is scored against (the file's date, or the date the case was added to it)."""
    import datetime

    pre = V.preregistered(round_)
    if not pre:
        pytest.skip(f"no pre-registration of round {round_!r} yet: python -m course.measure.explain_check "
                    f"predict-unseen --round {round_}")
    names = {c.name for c in V.case_set({"unseen": "solutions"}.get(round_, round_), "small")}
    # a case retired after its round was scored (it read like a graded solution) keeps its frozen prediction and score
    retired = set(V.retired(round_))
    assert set(pre["cases"]) == set(pre["counts"]) == names | retired and not names & retired
    assert all(V.round_of(d) == round_ for d in pre["counts"].values())
    assert pre["limiters"] == {lim: sum(v["limiter"] == lim for v in pre["cases"].values())
                               for lim in {v["limiter"] for v in pre["cases"].values()}}
    when = {n: pre["date"] for n in pre["cases"]}
    for add in pre.get("added", []):
        when.update({n: add["date"] for n in add["cases"]})
    records = V.records_by_case()
    profiled = [n for n in pre["cases"] if n in records]
    for n in profiled:
        measured = datetime.datetime.fromisoformat(records[n]["date"])
        assert measured > datetime.datetime.fromisoformat(when[n]), (n, records[n]["date"], when[n])


def test_the_profile_script_dry_runs_the_solutions(tmp_path):
    env = dict(os.environ, COURSE_BACKEND="cpu")
    out = subprocess.run([sys.executable, str(ROOT / "scripts/gpu/profile_kernels.py"), "--dry-run", "--set",
                          "solutions", "--only", "sol_vector_add,sol_histogram,sol_transpose_padded", "--out",
                          str(tmp_path)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and "3 cases" in out.stdout + out.stderr, out.stdout + out.stderr
    recs = json.loads((tmp_path / "unseen_profiles.json").read_text())
    recs = recs["records"] if isinstance(recs, dict) else recs
    assert [r["size"] for r in recs if r["variant"] == "dry_run"] == [[3]] and not [r for r in recs if r.get("failed")]
