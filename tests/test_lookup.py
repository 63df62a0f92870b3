"""course.show.lookup: recorded runs as the chapters look them up (one run, ratios within it)."""

import pytest

from course.show import lookup

RUN = [  # one run, as a benchmark writes it: sizes in increasing order
    {"variant": "slow", "size": [1024], "ms": 3.0, "run": "r1"},
    {"variant": "slow", "size": [4096], "ms": 12.0, "run": "r1"},
    {"variant": "fast", "size": [1024], "ms": 0.5, "run": "r1"},
    {"variant": "fast", "size": [4096], "ms": 1.5, "run": "r1"},
    {"variant": "ncu:k", "run": "r1", "ms": 2.0,
     "metrics": {"smsp__average_warp_latency_issue_stalled_long_scoreboard_per_issue_active.ratio": 7.5,
                 "smsp__average_warp_latency_issue_stalled_barrier_per_issue_active.ratio": 1.25,
                 "smsp__average_warp_latency_issue_stalled_wait_per_issue_active.ratio": 2.0,
                 "launch__registers_per_thread": 40}},
]


def test_a_run_finds_a_variant_at_a_size_and_its_ratios_stay_inside_it():
    run = lookup.Run(records=RUN)
    assert run.get("slow", 4096)["ms"] == 12.0 and run.get("slow", (1024,))["ms"] == 3.0
    assert run.get("slow")["size"] == [4096]  # no size: the last (largest) recorded
    assert run.get("slow", 2048) is None and run.get("nothing") is None
    assert run.ratio("slow", "fast", size=4096) == 8.0  # 12 / 1.5
    assert run.ratio("slow", "fast", size=1024) == 6.0  # 3 / 0.5
    assert run.ratio("slow", "missing", size=1024) is None
    assert run.value("fast", size=1024) == 0.5 and run.value("fast", "gbps", 1024) is None


def test_metrics_and_stalls_come_from_a_records_profile():
    run = lookup.Run(records=RUN)
    assert run.metric("ncu:k", "launch__registers_per_thread") == 40
    assert run.metric("ncu:k", "absent") is None and run.metric("ncu:gone", "x") is None
    assert run.stalls("ncu:k", 2) == [("long_scoreboard", 7.5), ("wait", 2.0)]
    assert run.stalls("ncu:k")[-1] == ("barrier", 1.25) and run.stalls("ncu:gone") == []


def test_an_unmeasured_run_is_empty_and_says_so():
    run = lookup.Run(records=[])
    assert not run and run.get("slow") is None and run.ratio("a", "b") is None
    assert run.provenance().startswith("not measured yet")
    with pytest.raises(TypeError, match="give one of the two"):
        lookup.Run()


def test_ratio_and_regime():
    assert lookup.ratio(3, 4) == 0.75 and lookup.ratio(3, 0) is None
    assert lookup.ratio(None, 2) is None and lookup.ratio(True, 2) is None and lookup.ratio("3", 1) is None
    # 2^20 floats (4 MiB) stay in the 50 MB L2; 2^22 floats (16 MiB) still do; 2^28 floats (1 GiB) stream from HBM
    assert lookup.regime(4 * 2**20) == "l2" and lookup.regime(16 * 2**20) == "l2"
    assert lookup.regime(16 * 2**20 + 4) == "hbm" and lookup.regime(4 * 2**28) == "hbm"


def test_occupancy_rows_read_the_recorded_resources(monkeypatch):
    from course.measure import occupancy
    from course.kernels import reduction

    def resources(kernel):
        if kernel is reduction.REDUCTION_VERSIONS["atomic_b64"].kernel:
            return occupancy.Resources("atomic_each", 16, 0, 0, 1024, "recorded here")
        raise LookupError("none")

    monkeypatch.setattr(occupancy, "resources", resources)
    rows = lookup.occupancy_rows({k: reduction.REDUCTION_VERSIONS[k] for k in ("atomic_b64", "block_sequential")})
    name, regs, smem, tpb, o, source = rows[0]
    # by hand: 64 threads = 2 warps per block; 16 registers never bind; the 32-blocks-per-SM limit holds
    # 32 blocks x 2 warps = 64 warps = every warp slot of the H200's SM: 100 %
    assert (name, regs, smem, tpb, source) == ("atomic_b64", 16, 0, 64, "recorded here")
    assert (o.blocks_per_sm, o.warps_per_sm, o.occupancy) == (32, 64, 1.0)
    assert rows[1][0] == "block_sequential" and rows[1][4] is None and rows[1][5] == "not measured yet"
