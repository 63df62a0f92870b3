"""The claims ledger (data/claims.json): its schema, its quotes, its coverage of the seeds' numbers, and refresh."""

import copy
import json
import re

import pytest

from course import chapters
from course.measure import claims

SEEDS_PRESENT = claims.SEEDS_DIR.is_dir()
needs_seeds = pytest.mark.skipif(not SEEDS_PRESENT, reason="shared/seeds/ (the source articles) is not next to the repo")


@pytest.fixture(scope="module")
def ledger():
    return json.loads(claims.CLAIMS.read_text(encoding="utf-8"))


@pytest.fixture
def pristine(ledger):
    """The ledger as it was before any refresh from recorded runs (verdicts written by hand stay)."""
    out = copy.deepcopy(ledger)
    for e in out:
        if e.pop("auto", False):
            e.update(verdict="pending", measured=None)
    return out


def test_the_ledger_is_sound(ledger):
    assert claims.validate(ledger) == []
    assert len(ledger) >= 60
    assert {e["verdict"] for e in ledger} <= set(claims.VERDICTS)


def test_every_entry_has_the_schema_fields(ledger):
    for e in ledger:
        assert set(claims.REQUIRED) <= set(e), e.get("id")
        assert e["chapter"] in {ch.file[:-6] for ch in chapters.CHAPTERS}
        if e["verdict"] == "not-measurable":
            assert len(e["reason"]) > 20, e["id"]


def test_all_four_seeds_are_in_the_ledger(ledger):
    assert {e["seed"][:3] for e in ledger if e["seed"] != claims.COURSE} == set(chapters.SEEDS)


def test_chapters_02_and_03_have_their_claims(ledger):
    ids = {e["id"] for e in ledger}
    for must in ("002-even-odd-40", "002-shared-latency", "003-shared-latency", "002-tx32", "003-l2-latency",
                 "002-global-latency", "003-global-latency", "002-const-latency", "003-ga102-sm", "000-aos-soa"):
        assert must in ids
    assert len(claims.for_chapter(2, ledger)) >= 8
    assert len(claims.for_chapter("03_memory_coalescing", ledger)) >= 15


# --- validation catches what it should --------------------------------------------------------------------------


def _good():
    return {"id": "002-x", "seed": "002_9b22f37c9f847fb7.txt", "section": "1.2", "claim": "Shared Memory...~5 cycles",
            "chapter": "03_memory_coalescing", "measured": None, "verdict": "pending", "evidence": None}


@needs_seeds
def test_validate_accepts_a_good_entry_and_names_each_fault():
    assert claims.validate([_good()]) == []
    cases = {
        "verdict": ("maybe", "verdict 'maybe'"),
        "chapter": ("03_memory", "chapter '03_memory'"),
        "seed": ("002.txt", "not a seed file name"),
        "claim": ("Shared Memory...~3 cycles", "'~3 cycles' is not in"),
    }
    for key, (value, message) in cases.items():
        bad = dict(_good(), **{key: value})
        problems = claims.validate([bad])
        assert any(message in p for p in problems), (key, problems)
    no_reason = dict(_good(), verdict="not-measurable")
    assert any("needs a 'reason'" in p for p in claims.validate([no_reason]))
    unproven = dict(_good(), verdict="confirmed")
    assert any("needs 'measured' and 'evidence'" in p for p in claims.validate([unproven]))
    twice = [_good(), _good()]
    assert any("used twice" in p for p in claims.validate(twice))
    missing = _good()
    del missing["evidence"]
    assert any("missing evidence" in p for p in claims.validate([missing]))
    badcheck = dict(_good(), check={"kind": "ratio", "a": {"benchmark": "b", "variant": "v", "field": "ms"}})
    assert any("check.b" in p for p in claims.validate([badcheck]))


def test_load_raises_with_every_problem(tmp_path):
    path = tmp_path / "claims.json"
    path.write_text(json.dumps([dict(_good(), verdict="maybe", chapter="99_nowhere")]), encoding="utf-8")
    with pytest.raises(claims.ClaimsError) as err:
        claims.load(path)
    assert "verdict 'maybe'" in str(err.value) and "chapter '99_nowhere'" in str(err.value)


# --- every number the seeds state is in some claim, or excluded here with a reason ------------------------------

# Numbers in the seeds' prose that are not claims, per seed (code listings are skipped by the scanner).
EXCLUDED = {
    "000": {},
    "001": {},
    "002": {
        "99": "'99%的情况只用一维或二维': the author's habit, not a claim about GPUs",
        "3": "'避坑3' is a list label",
    },
    "003": {
        "1": "'误区1' is a list label",
        "3": "'误区3' is a list label",
    },
}

_CODE = re.compile(r"[;{}]|^//|^#include|^__global__|^for\(|^(int|float|dim3) ")


def seed_numbers(text):
    """Every number in an article's prose: headings' and list items' leading numbers and code lines skipped."""
    found = set()
    for line in text.splitlines():
        s = line.strip()
        if not s or _CODE.search(s):
            continue
        s = re.sub(r"^\d+(\.\d+)*[\s、.]", "", s)  # "1.2 内存层次" or "3. 避免同步原语"
        # a number glued to Latin letters is a name (GA102, H100, FP16, float4), not a quantity
        found |= set(re.findall(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?", s))
    return found


def _in(number, text):
    return re.search(rf"(?<!\d)(?<!\d\.){re.escape(number)}(?!\d|\.\d)", text) is not None


def test_the_scanner_finds_numbers_and_skips_code():
    text = "1.2 内存层次\n每个Block最多1024个线程\nint n = 50000;\n延迟 20-30周期，约 3.2ms\n3. 列表项"
    assert seed_numbers(text) == {"1024", "20", "30", "3.2"}


@needs_seeds
@pytest.mark.parametrize("seed", sorted(chapters.SEEDS))
def test_every_number_of_a_seed_is_claimed_or_excluded(ledger, seed):
    path = next(claims.SEEDS_DIR.glob(f"{seed}_*.txt"))
    quoted = " ".join(e["claim"] + " " + (e.get("note") or "") for e in ledger if e["seed"].startswith(seed))
    missing = sorted(n for n in seed_numbers(path.read_text(encoding="utf-8"))
                     if not _in(n, quoted) and n not in EXCLUDED[seed])
    assert not missing, f"seed {seed}: numbers in no claim of data/claims.json and not excluded: {missing}"


@needs_seeds
def test_exclusions_are_real_numbers_of_their_seed():
    for seed, numbers in EXCLUDED.items():
        path = next(claims.SEEDS_DIR.glob(f"{seed}_*.txt"))
        assert set(numbers) <= seed_numbers(path.read_text(encoding="utf-8")), seed


# --- refresh: recorded runs fill measured and verdict -------------------------------------------------------------


def _rec(bench, variant, run="r1", date="2026-11-30T10:00:00", **fields):
    base = dict(benchmark=bench, variant=variant, ms=None, reps=20, size=1, dtype="int32", device="NVIDIA H200",
                driver="580", numba_cuda="0.30.4", date=date, run=run)
    return base | fields


def _write(tmp_path, records):
    d = tmp_path / "measurements"
    d.mkdir()
    by = {}
    for r in records:
        by.setdefault(r["benchmark"], []).append(r)
    for bench, recs in by.items():
        (d / f"{bench}.json").write_text(json.dumps(recs), encoding="utf-8")
    return d


def test_refresh_sets_measured_and_verdict_from_records(pristine, tmp_path):
    ledger = pristine
    d = _write(tmp_path, [
        _rec("memory_latency", "chase 16 KB shared array", cycles_per_step=29.0),
        _rec("memory_latency", "chase 1 KB constant array", cycles_per_step=58.0),
        _rec("warps_even_odd", "even_odd_branch", ms=2.0),
        _rec("warps_even_odd", "even_odd_select", ms=1.96),
        _rec("memory_device", "attributes", attributes={"MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
                                                        "WARP_SIZE": 32}),
        # a dry run and an older run must not win
        _rec("memory_latency", "chase_cg 4096 lines in 4 MB, warm", cycles_per_step=250.0, dry_run=True),
        _rec("probes_latency", "ffma_latency_difference", cycles_per_ffma=9.0, date="2026-11-01T00:00:00", run="old"),
        _rec("probes_latency", "ffma_latency_difference", cycles_per_ffma=4.0, run="new"),
    ])
    new = {e["id"]: e for e in claims.refresh(ledger, claims.load_records(d))}
    # shared: 29 cycles is outside seed 002's ~5 (3-7) and inside seed 003's 20-30
    assert new["002-shared-latency"]["verdict"] == "corrected"
    assert new["002-shared-latency"]["measured"] == "29 cycles"
    assert new["003-shared-latency"]["verdict"] == "confirmed"
    assert "measurements/memory_latency.json" in new["003-shared-latency"]["evidence"]
    # constant hit 58 cycles: under 002's ~100 (a hit is faster), and 2.0x shared (003 says about equal)
    assert new["002-const-latency"]["verdict"] == "confirmed"
    assert new["003-const-latency"]["verdict"] == "corrected"
    assert new["003-const-latency"]["measured"].startswith("2 ")
    # even/odd: 1 - 1.96 / 2.0 = 2 % loss, far from the claimed 40 %: refuted
    assert new["002-even-odd-40"]["measured"] == "2 % loss"
    assert new["002-even-odd-40"]["verdict"] == "refuted"
    # 233472 bytes = 228 KB per SM: outside 48-164 KB
    assert new["002-shared-48-164"]["measured"] == "228 KB"
    assert new["002-shared-48-164"]["verdict"] == "corrected"
    assert new["002-warp-32"]["verdict"] == "confirmed"
    # the newest non-dry record is used: 4 cycles, not 9; the dry-run L2 value is ignored
    assert new["002-reg-latency"]["measured"] == "4 cycles"
    assert new["002-reg-latency"]["verdict"] == "corrected"  # ~1 cycle claimed
    assert "run new" in new["002-reg-latency"]["evidence"]
    assert "planned" not in new["002-reg-latency"]
    assert new["003-l2-latency"]["verdict"] == "pending" and new["003-l2-latency"]["measured"] is None


def test_refresh_tolerance_widens_the_range_by_a_fraction(pristine, tmp_path):
    ledger = pristine
    # seed 003: shared memory 20-30 cycles, checked with tolerance 0.15: up to 34.5 cycles agrees
    for cycles, verdict in ((34.0, "confirmed"), (35.0, "corrected"), (17.5, "confirmed"), (16.5, "corrected")):
        d = tmp_path / str(cycles)
        d.mkdir()
        (d / "memory_latency.json").write_text(json.dumps([_rec("memory_latency", "chase 16 KB shared array",
                                                               cycles_per_step=cycles)]))
        new = next(e for e in claims.refresh(ledger, claims.load_records(d)) if e["id"] == "003-shared-latency")
        assert new["verdict"] == verdict, cycles
    bad = dict(_good(), check={"kind": "value", "a": {"benchmark": "b", "variant": "v", "field": "f"},
                               "range": [1, 2], "tolerance": 1.5})
    assert any("tolerance" in p for p in claims.validate([bad]))


def test_refresh_keeps_verdicts_written_by_hand(pristine, tmp_path):
    ledger = pristine
    d = _write(tmp_path, [_rec("memory_latency", "chase 16 KB shared array", cycles_per_step=29.0)])
    hand = copy.deepcopy(ledger)
    entry = next(e for e in hand if e["id"] == "002-shared-latency")
    entry.update(verdict="corrected", measured="31 cycles (by hand)", evidence="notebook cell x")
    new = next(e for e in claims.refresh(hand, claims.load_records(d)) if e["id"] == "002-shared-latency")
    assert new["measured"] == "31 cycles (by hand)"


def test_chapter_table_says_not_measured_yet_without_records(pristine, tmp_path):
    ledger = pristine
    t = claims.table(3, ledger, records={})
    text = repr(t)
    assert claims.NOT_MEASURED in text
    assert "002-shared-latency" in text and "003-l2-latency" in text
    html = t._repr_html_()
    assert html.count("<tr>") == 1 + len(claims.for_chapter(3, ledger))
    with pytest.raises(KeyError, match="not a chapter"):
        claims.for_chapter("03_memory", ledger)


# --- the ledger agrees with the repository: cited files, checks, verdicts ---------------------------------------


def test_the_committed_ledger_agrees_with_its_records(ledger):
    """What `python -m course.claims check` runs: every verdict re-derived from the records it cites."""
    assert claims.audit(ledger) == []
    assert claims.main(["check"]) == 0


def test_every_measurable_claim_has_a_check_and_cites_only_the_repository(ledger):
    for e in ledger:
        if e["verdict"] != "not-measurable":
            assert e.get("check"), e["id"]
        text = " ".join(str(e.get(k) or "") for k in ("evidence", "planned", "note"))
        assert "shared/gpu" not in text and "../" not in text, e["id"]
    # not measurable only for what an H200 driven from Python cannot show: another GPU's figures (GA102's SMs, the
    # H100's bandwidth) among them
    assert {e["id"] for e in ledger if e["verdict"] == "not-measurable"} == {"002-texture-latency", "003-ga102-sm",
                                                                             "001-hbm-3tb"}


def _audit_one(entry, tmp_path, records=None):
    return claims.audit([entry], records if records is not None else claims.Records(records=[], cases={}),
                        root=claims.ROOT)


def test_audit_names_a_cited_file_that_does_not_exist_or_lies_outside(tmp_path):
    gone = dict(_good(), evidence="data/measurements/no_such_run.json: x", verdict="not-measurable", reason="r" * 30)
    assert any("no_such_run.json, which does not exist" in p for p in _audit_one(gone, tmp_path))
    outside = dict(gone, evidence="shared/gpu/README.md, 'Ceilings'")
    assert any("outside the repository" in p for p in _audit_one(outside, tmp_path))
    fine = dict(gone, evidence="data/measurements/transpose.json: naive")
    assert _audit_one(fine, tmp_path) == []


def _ratio_check(rng, if_outside="corrected"):
    return {"kind": "ratio", "a": {"benchmark": "b", "variant": "slow", "field": "ms"},
            "b": {"benchmark": "b", "variant": "fast", "field": "ms"}, "range": rng, "if_outside": if_outside}


def test_audit_rederives_the_verdict_from_the_records(tmp_path):
    recs = claims.Records(records=[_rec("b", "slow", ms=5.0), _rec("b", "fast", ms=1.0)], cases={})
    entry = dict(_good(), check=_ratio_check([2, 1e9], "refuted"), verdict="confirmed", measured="5x",
                 evidence="data/measurements/b.json: slow vs fast")
    root_ok = [p for p in claims.audit([entry], recs) if "does not exist" not in p]
    assert root_ok == []
    wrong = dict(entry, verdict="refuted")
    assert any("the records give 'confirmed'" in p for p in claims.audit([wrong], recs))
    # the verdict must follow from the record it cites: evidence that names another file is caught
    elsewhere = dict(entry, evidence="data/measurements/transpose.json: naive")
    assert any("does not name data/measurements/b.json" in p for p in claims.audit([elsewhere], recs))
    # a measurable claim without a check, a pending claim without a planned record, a verdict without records
    assert any("needs a check" in p for p in claims.audit([dict(entry, check=None)], recs))
    pending = dict(entry, verdict="pending", measured=None, evidence=None,
                   check=dict(_ratio_check([2, 1e9]), a={"benchmark": "b", "variant": "other", "field": "ms"}))
    assert any("'planned'" in p for p in claims.audit([pending], recs))
    assert claims.audit([dict(pending, planned="data/measurements/b.json: other")], recs) == []
    assert any("not there" in p for p in claims.audit([dict(pending, verdict="confirmed", measured="x",
                                                            evidence="data/measurements/b.json")], recs))
    # a pending claim whose record has arrived must get its verdict
    arrived = dict(entry, verdict="pending", planned="data/measurements/b.json: slow")
    assert any("the records give 'confirmed'" in p for p in claims.audit([arrived], recs))


def test_checks_select_by_where_combine_over_records_and_read_ncu_cases():
    recs = claims.Records(records=[
        _rec("t", "naive", ms=4.0, size=[16384, 16384], dtype="int32"),
        _rec("t", "naive", ms=0.25, size=[4096, 4096], dtype="int32"),
        _rec("t", "tile", ms=2.0, size=[16384, 16384], dtype="int32"),
        _rec("o", "kernel", run="r1", mismatches=[], rows=[[1], [2], [3]]),
        _rec("o", "kernel", run="r1", mismatches=[[9]], rows=[[4]]),
    ], cases={"tile_32x32": {"ncu": {"shared_load_wavefronts": 8192, "shared_load_requests": 256}}})
    big = {"size": [16384, 16384]}
    ratio = {"kind": "ratio", "a": {"benchmark": "t", "variant": "naive", "field": "ms", "where": big},
             "b": {"benchmark": "t", "variant": "tile", "field": "ms", "where": big}, "range": [1.5, 3]}
    assert claims.judge(ratio, recs)[:2] == (2.0, "confirmed")
    small = dict(ratio, a=dict(ratio["a"], where={"size": [4096, 4096]}))
    assert claims.judge(small, recs)[1] == "corrected"  # 0.125: outside
    over = {"kind": "value", "a": {"benchmark": "o", "variant": "kernel", "field": "mismatches", "over": "sum"},
            "range": [0, 0]}
    assert claims.judge(over, recs)[:2] == (1.0, "corrected")
    rows = dict(over, a=dict(over["a"], field="rows"), range=[4, 4])
    assert claims.judge(rows, recs)[:2] == (4.0, "confirmed")
    case = {"kind": "ratio", "a": {"case": "tile_32x32", "field": ["ncu", "shared_load_wavefronts"]},
            "b": {"case": "tile_32x32", "field": ["ncu", "shared_load_requests"]}, "range": [32, 32]}
    value, verdict, evidence = claims.judge(case, recs)
    assert (value, verdict) == (32.0, "confirmed") and "data/tracer_validation.json" in evidence
    both = {"kind": "all", "checks": [case, small], "if_outside": "refuted"}
    assert claims.judge(both, recs)[1] == "refuted"
    assert claims.judge({"kind": "all", "checks": [case, ratio]}, recs)[1] == "confirmed"
    assert claims.judge({"kind": "arithmetic", "expr": "ceil(50000 / 256)", "range": [196, 196]}, recs)[:2] == \
        (196.0, "confirmed")
    missing = dict(ratio, b={"benchmark": "t", "variant": "nowhere", "field": "ms"})
    assert claims.judge(missing, recs) == (None, None, None)
    # a field of another recorded file under data/ (the tracer's validation file stands in for one)
    from_file = {"kind": "value", "a": {"file": "data/tracer_validation.json", "field": ["summary", "cases"]},
                 "range": [1, 1e9]}
    value, verdict, evidence = claims.judge(from_file, recs)
    assert value >= 1 and verdict == "confirmed" and evidence.startswith("data/tracer_validation.json")
    scaled = {"kind": "value", "a": {"file": "data/tracer_validation.json", "field": ["summary", "cases"], "scale": 0},
              "range": [0, 0]}
    assert claims.judge(scaled, recs)[:2] == (0.0, "confirmed")
    assert claims.judge(dict(from_file, a={"file": "data/none.json", "field": "x"}), recs) == (None, None, None)
    assert any("under data/" in p for p in claims.validate([dict(_good(), check=dict(from_file, a={"file": "../x.json", "field": "f"}))]))


def test_a_bool_is_no_number_unless_the_reference_reads_a_yes_no_outcome():
    recs = claims.Records(records=[_rec("p", "lock", finished=True), _rec("p", "stuck", finished=False),
                                   _rec("p", "odd", finished=1)], cases={})
    plain = {"kind": "value", "a": {"benchmark": "p", "variant": "lock", "field": "finished"}, "range": [1, 1]}
    assert claims.judge(plain, recs) == (None, None, None)  # True is not the number 1: nothing recorded to judge
    yes_no = dict(plain, a=dict(plain["a"], yes_no=True))
    assert claims.judge(yes_no, recs)[:2] == (1.0, "confirmed")
    assert claims.judge(dict(yes_no, a=dict(yes_no["a"], variant="stuck")), recs)[:2] == (0.0, "corrected")
    # a yes/no field that recorded a number is not a yes/no outcome
    assert claims.judge(dict(yes_no, a=dict(yes_no["a"], variant="odd")), recs) == (None, None, None)
    bad = dict(_good(), check=dict(yes_no, a=dict(yes_no["a"], yes_no="yes")))
    assert any("yes_no must be true or false" in p for p in claims.validate([bad]))


def test_a_field_of_a_corrupt_recorded_file_stops_the_check_and_names_the_file(monkeypatch, tmp_path):
    from course.measure import measurements

    (tmp_path / "data").mkdir()
    report = tmp_path / "data" / "report.json"
    report.write_text('{"registers": 40', encoding="utf-8")
    monkeypatch.setattr(claims, "ROOT", tmp_path)
    check = {"kind": "value", "a": {"file": "data/report.json", "field": "registers"}, "range": [0, 64]}
    none = claims.Records(records=[], cases={})
    # before, the ledger skipped such a file silently and left the claim pending
    with pytest.raises(measurements.MeasurementError, match=r"report\.json: not valid JSON.*Restore it from git"):
        claims.judge(check, none)
    report.write_text('{"registers": 40}', encoding="utf-8")
    assert claims.judge(check, none)[:2] == (40.0, "confirmed")
    report.unlink()
    assert claims.judge(check, none) == (None, None, None)  # not recorded yet: pending


def test_arithmetic_checks_evaluate_numbers_only():
    assert claims._arith("32 * 33 / (32 * 32)") == 1.03125
    for bad in ("__import__('os')", "x + 1", "open('f')", ""):
        with pytest.raises((ValueError, SyntaxError)):
            claims._arith(bad)
    assert any("expr" in p for p in claims.validate([dict(_good(), check={"kind": "arithmetic", "expr": "a + 1"})]))


# --- limiter claims: "kernel X is limited by Y", read from the Nsight Compute profile -----------------------------


def _profile(variant, ms, dram=0.0, l2=0.0, l1=0.0, sm=0.0, shared_wf=0.0):
    ncu = {"dram__throughput.avg.pct_of_peak_sustained_elapsed": dram,
           "lts__throughput.avg.pct_of_peak_sustained_elapsed": l2,
           "l1tex__throughput.avg.pct_of_peak_sustained_elapsed": l1,
           "sm__throughput.avg.pct_of_peak_sustained_elapsed": sm,
           "l1tex__data_pipe_lsu_wavefronts.sum": 100.0, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": shared_wf}
    return _rec("kernel_profiles", variant, ms=ms, kind="case", ncu=ncu)


def _course_claim(profile, limiter):
    return {"id": "course-x", "seed": claims.COURSE, "section": "4", "claim": f"{profile} is limited by {limiter}",
            "chapter": "04_shared_memory_banks", "measured": None, "verdict": "pending", "evidence": None,
            "check": {"kind": "limiter", "profile": profile, "limiter": limiter}}


def test_a_limiter_claim_is_confirmed_by_the_busiest_unit_and_a_wrong_one_refused():
    recs = claims.Records(records=[
        _profile("stencil", 0.08, dram=45, l2=59, l1=22, sm=85),   # the SM's issue is busiest: issue
        _profile("copy", 0.5, dram=92, l2=88, l1=20, sm=10),       # DRAM
        _profile("chase", 0.5, dram=30, l2=40, l1=20, sm=50),      # nothing at 60 %: latency
        _profile("tiny", 0.002, dram=5, l2=5, l1=5, sm=5),         # nothing at 60 % and under 4 µs: launch
        _profile("tile", 2.0, l1=93, sm=72, shared_wf=90),         # L1 busiest, its wavefronts mostly shared
    ], cases={})
    for profile, limiter in (("stencil", "issue"), ("copy", "dram"), ("chase", "latency"), ("tiny", "launch"),
                             ("tile", "shared")):
        value, verdict, evidence = claims.judge(_course_claim(profile, limiter)["check"], recs)
        assert (value, verdict) == (limiter, "confirmed"), profile
        assert "data/measurements/kernel_profiles.json" in evidence and "dram" in evidence
    # the chapter 04 sentence the review found wrong: "the stencil is limited by DRAM"
    wrong = dict(_course_claim("stencil", "dram"), verdict="confirmed", measured="dram",
                 evidence="data/measurements/kernel_profiles.json: stencil")
    assert claims.judge(wrong["check"], recs)[:2] == ("issue", "refuted")
    assert any("the records give 'refuted' (issue" in p for p in claims.audit([wrong], recs))
    right = dict(wrong, check=dict(wrong["check"], limiter="issue"))
    assert [p for p in claims.audit([right], recs) if "does not exist" not in p] == []
    # refresh fills a pending one from the profile; a missing profile leaves it pending
    done = claims.refresh([_course_claim("copy", "dram"), _course_claim("nowhere", "dram")], recs)
    assert done[0]["verdict"] == "confirmed" and done[0]["measured"] == "dram" and done[1]["verdict"] == "pending"
    assert claims.ClaimsTable(done).__repr__().startswith("[confirmed] course-x (course §4)")


def test_validate_names_a_bad_limiter_claim():
    assert claims.validate([_course_claim("stencil", "issue")]) == []
    assert any("one of dram" in p for p in claims.validate([_course_claim("stencil", "memory")]))
    assert any("one of dram" in p for p in claims.validate([_course_claim("", "issue")]))
    # atomics are serialised in L2, which no throughput counter sees: the ledger cannot check that limiter
    assert any("one of dram" in p for p in claims.validate([_course_claim("reduce", "atomics")]))
    assert any("starting with 'course-'" in p for p in claims.validate([dict(_course_claim("s", "issue"), id="004-s")]))


def test_the_ledger_holds_the_course_limiter_sentences(ledger):
    """The sentences issue 24's review found wrong are now claims the ledger re-checks against the profile."""
    limits = {e["check"]["profile"]: e["check"]["limiter"] for e in ledger
              if (e.get("check") or {}).get("kind") == "limiter"}
    for profile in ("stencil_global_r0", "stencil_shared_r0", "read_strided_s1", "matmul_naive_2048", "chain",
                    "sync_loop_e0", "sync_loop_e1"):
        assert profile in limits, profile
