"""course.show.lab (predict, live timing, lab paths) and course.show.display (tables)."""

import json
import re

import numpy as np
import pytest

from course import chapters
from course.show import display, lab


def test_a_prediction_is_judged_in_one_line_with_its_reason():
    assert lab.verdict("q", None, 4, "why").endswith("the answer stays hidden until then.")
    assert "4" not in lab.verdict("q", None, 4, "why")  # nothing revealed before a prediction
    right = lab.verdict("sectors", 4, 4.0, "because.")
    assert right.startswith("right: sectors = 4.") and right.endswith("because.")
    wrong = lab.verdict("sectors", 32, 4.0, "because.")
    assert wrong.startswith("not quite: you said 32, the tracer counts 4.") and "\n" not in wrong
    assert "the calculator gives 50" in lab.verdict("o", 75, 50.0, "w", by="the calculator gives")
    assert lab.verdict("n", np.int64(7), 7, "w").startswith("right")


def test_a_count_is_judged_exactly():
    # chapter 07 Task 1: 41 blocks × 4 warps = 164 is the mistake the task is there to catch, when 163 is right
    assert lab.verdict("atomics", 164, 163, "w").startswith("not quite: you said 164, the tracer counts 163.")
    assert lab.verdict("atomics", 163.0, 163, "w").startswith("right")
    assert lab.verdict("lanes", 16.4, 16.5, "w").startswith("not quite")


def test_a_real_number_is_judged_within_the_tolerance_its_question_states():
    v = lab.verdict("occupancy in %", 62.4, 62.5, "w", by="the calculator gives", tolerance=0.5)
    assert v.startswith("right: occupancy in % (within ±0.5) = 62.5.")
    assert lab.verdict("occupancy in %", 61.9, 62.5, "w", tolerance=0.5).startswith("not quite")
    # the question states the tolerance before the answer is known too
    assert "(within ±0.01)" in lab.verdict("loads per FMA", None, 0.125, "w", tolerance=0.01)


def test_a_text_is_refused_with_what_to_write():
    for text in ("none", "4", "four"):
        v = lab.verdict("sectors", text, 4, "w")
        assert not v.startswith(("right", "not quite")) and repr(text) in v
        assert "not a number" in v and "my_prediction = 12" in v and "4." not in v.replace("'4'", "")
    assert "not a number" in lab.verdict("sectors", True, 1, "w")  # True is not the count 1
    assert "not a number" in lab.verdict("sectors", [4], 4, "w")


def test_a_choice_is_one_of_its_options(capsys):
    lab.choose("which error", None, "c", "abc", "w")
    lab.choose("which error", "d", "c", "abc", "w")
    lab.choose("which error", "c", "c", "abc", "because.")
    lab.choose("which error", "a", "c", "abc", "because.")
    hidden, refused, right, wrong = capsys.readouterr().out.splitlines()
    assert "stays hidden" in hidden and '"c"' in hidden  # the options are named, not the answer
    assert "'d'" in refused and "one of" in refused
    assert right.startswith("right") and wrong.startswith('not quite: you said "a"')


def test_compare_explains_what_differs_and_where(capsys, monkeypatch):
    monkeypatch.delenv("COURSE_STRICT", raising=False)
    want = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = want.copy()
    assert lab.compare("k", got, want) and capsys.readouterr().out == ""
    got[0, 2], got[1, 1] = np.nan, 99
    assert not lab.compare("k", got, want)
    out = capsys.readouterr().out
    assert "2 of 6 elements differ, the first at [0, 2]: never written (still nan), expected 2" in out
    assert "the last at [1, 1]" in out and "counts below" in out
    ints = np.array([5, -1, 7])
    assert "never written (still -1)" in lab.differs(ints, np.array([5, 6, 7]), started=-1)
    assert "shape (2,)" in lab.differs(np.zeros(2), np.zeros(3))
    assert lab.differs(np.float32([1.00001]), np.float32([1.0]), rtol=1e-4) is None
    monkeypatch.setenv("COURSE_STRICT", "1")
    with pytest.raises(AssertionError, match="1 of 6 elements differ"):
        lab.compare("k", want + (np.arange(6).reshape(2, 3) == 4), want)


def test_predict_prints_once_and_returns_nothing(capsys):
    assert lab.predict("q", 1, 1, "w") is None
    assert capsys.readouterr().out.count("right") == 1


def test_table_text_aligns_numbers_right_and_words_left():
    t = display.Table(["name", "ms"], [["naive", "12.5"], ["tile_32x33", "3"], ["x", None]])
    lines = str(t).splitlines()
    assert lines[1].startswith("naive ") and lines[1].endswith("12.5")
    assert lines[3].endswith("—")
    assert "<td>tile_32x33</td>" in t._repr_html_()
    assert "&lt;b&gt;" in display.Table(["<b>"], [])._repr_html_()


def test_source_names_the_file():
    s = str(display.Source(lab.verdict))
    assert s.startswith("# verdict, from course/show/lab.py") and "def verdict" in s


def _copy_launch(label, kernel, size, rng):
    a = rng.standard_normal(size).astype(np.float32)
    return lab.Launch(1, 64, [a, np.zeros_like(a)], out=1, expected=a.copy(), bytes_moved=2 * a.nbytes)


def test_live_timing_on_the_cpu_shows_counts_never_time(capsys):
    import course
    from numba import cuda

    if course.on_gpu():
        pytest.skip("the CPU path of yours_vs_recorded: this test runs on a CPU backend")

    @cuda.jit
    def copy(a, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            out[i] = a[i]

    @cuda.jit
    def wrong(a, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            out[i] = a[0]

    rec = [{"variant": "copy", "ms": 0.25, "gbps": 100.0, "device": "NVIDIA H200", "run": "r1", "date": "2026-11-29"}]
    lab.yours_vs_recorded({"copy": copy, "wrong": wrong}, _copy_launch, size=1 << 20, traced_size=64, records=rec)
    out = capsys.readouterr().out
    assert "0.250 ms, 100 GB/s" in out and "CPU time" in out
    row = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("copy ", "wrong "))}
    assert row["copy"][1] == "yes" and row["wrong"][1] == "NO"
    assert " ms" not in " ".join(row["copy"][2:-3])  # the learner's own columns hold counts, no time


def test_lab_paths_fit_two_hours_and_name_real_places():
    from course.exercises import registry

    for path in lab.LAB_PATHS:
        assert path.minutes <= 120, path.title
        for ex in path.exercises:
            assert ex in registry.EXERCISES, f"{path.title}: no exercise {ex}"
        for step in path.steps:
            nb = json.loads((chapters.NOTEBOOKS / chapters.chapter(step.chapter).file).read_text(encoding="utf-8"))
            headings = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
            for token in re.findall(r"§(\d+)(?:–(\d+))?", step.sections):
                for n in filter(None, token):
                    assert re.search(rf"^## {n}(\.| ·)", headings, re.M), f"{path.title}: chapter {step.chapter} has no §{n}"
            if "Predict" in step.sections:
                assert "## Predict, run, see" in headings


def test_recorded_sass_and_ncu_tables():
    recs = [{"variant": "a", "sass": {"registers": 20, "instructions": 72, "ops": {"LDG.E": 1, "FFMA": 9}},
             "ncu": {"DRAM Throughput [%]": 11.5, "sm__inst_executed.sum": 121.6e6}},
            {"variant": "b"}]
    sass = str(display.sass_table(["a", "b"], recs))
    assert "LDG.E 1" in sass and "FFMA" not in sass and "not measured" in sass.splitlines()[2]
    ncu = str(display.ncu_table(["a", "b"], recs))
    assert "11.5" in ncu and "121.6" in ncu
    assert display.ncu_value({"DRAM Throughput [%]": 3}, "DRAM Throughput") == 3
    assert display.sweep_plot([]) is None


def test_the_gpu_path_checks_before_it_times(monkeypatch):
    # lab._gpu_row on the CPU engine with the GPU timer stubbed: the checks are the ones a GPU runs
    from numba import cuda

    from course.measure import bench

    timed = []
    # the kernel alone, queued (numba's launch overhead is not inside), and the host's issue time apart
    monkeypatch.setattr(bench, "time_queued", lambda fn, reps: timed.append(fn) or [2.0, 1.0, 3.0])
    monkeypatch.setattr(bench, "host_ms", lambda fn, calls: 0.03)

    @cuda.jit
    def double(a, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            out[i] = a[i] * 2

    @cuda.jit
    def half_done(a, out):
        i = cuda.grid(1)
        if i < a.shape[0] // 2:
            out[i] = a[i] * 2

    @cuda.jit
    def total(a, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            cuda.atomic.add(out, 0, a[i])

    a = np.arange(100, dtype=np.float32) - 50
    for exact in (True, False):
        launch = lab.Launch(2, 64, [a, np.zeros_like(a)], out=1, expected=2 * a, exact=exact, bytes_moved=800)
        assert lab._gpu_row("double", double, launch) == (2.0, "0 GB/s", 0.03)
        with pytest.raises(bench.BenchError, match="differ"):
            lab._gpu_row("half_done", half_done, launch)
    acc = lab.Launch(2, 64, [a, np.zeros(1, np.float32)], out=1, expected=np.array([a.sum()], np.float32),
                     accumulate=True, flops=1e9)
    assert lab._gpu_row("total", total, acc) == (2.0, "0.50 TFLOP/s", 0.03)
    assert len(timed) == 3  # only kernels that passed were timed


def test_missing_numbers_keep_a_column_numeric_and_floats_are_short():
    t = display.Table(["name", "ms"], [["a", 12.5], ["b", "not measured yet"], ["c", 0.5953600108623505]])
    lines = str(t).splitlines()
    assert lines[1].endswith("  12.5") and lines[3].endswith("0.5954")  # right-aligned, 4 digits
    assert len(lines[1]) == len(lines[3])
    assert display.fmt(2129017.001) == "2129017" and display.fmt(3) == "3"


def test_trace_version_traces_at_the_registrys_launch_checks_and_returns_totals(monkeypatch, capsys):
    from course.kernels import transpose as T

    monkeypatch.delenv("COURSE_STRICT", raising=False)
    v = T.TRANSPOSE_VERSIONS["naive"]
    a = np.arange(64 * 128, dtype=np.int32).reshape(64, 128)
    out = np.full((128, 64), -1, np.int32)
    t = lab.trace_version("naive", None, v, ((64, 128),), (a,), out, a.T, started=-1)
    np.testing.assert_array_equal(out, a.T)
    # by hand: a warp reads 32 neighbours of one row (128 bytes: 4 sectors) and writes them 64 elements apart
    # (32 sectors); 2x4 blocks of 32x32 threads = 256 warps, one request each way
    assert (t["global_load_requests"], t["global_load_sectors"]) == (256, 4 * 256)
    assert (t["global_store_requests"], t["global_store_sectors"]) == (256, 32 * 256)
    assert capsys.readouterr().out == ""
    # the learner's kernel replaces the registry's at the same launch; `wrong` is judged on the output after it
    seen = []
    out = np.full((128, 64), -1, np.int32)
    lab.trace_version("mine", T.TRANSPOSE_VERSIONS["tile_32x33"].kernel, v, ((64, 128),), (a,), out, a.T + 1,
                      wrong=lambda o: seen.append(o.copy()) or o != a.T + 1, started=-1)
    np.testing.assert_array_equal(seen[0], a.T)
    assert "mine: not NumPy's answer: 8192 of 8192 elements differ" in capsys.readouterr().out


def test_traced_counts_any_launch_checks_its_output_and_names_a_wrong_one(monkeypatch, capsys):
    from numba import cuda

    monkeypatch.delenv("COURSE_STRICT", raising=False)

    @cuda.jit
    def every_other(src, out):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < out.size:
            out[i] = src[2 * i]

    src = np.arange(256, dtype=np.float32)
    out = np.zeros(128, np.float32)
    rep = lab.traced("every_other", every_other, 2, 64, src, out, out=out, expected=src[::2])
    # by hand: 4 warps; a warp's 32 lanes read 32 floats 8 bytes apart = 256 bytes = 8 sectors, and write
    # 32 neighbours = 128 bytes = 4 sectors
    t = rep.totals()
    assert (t["global_load_requests"], t["global_load_sectors"]) == (4, 32)
    assert lab.per_request(t)["ld sectors/req"] == 8 and lab.per_request(t)["st sectors/req"] == 4
    assert capsys.readouterr().out == ""
    # no expected answer: counted, nothing judged
    lab.traced("every_other", every_other, 2, 64, src, np.zeros(128, np.float32))
    assert capsys.readouterr().out == ""
    # a wrong answer is named, and the counts still come back
    rep = lab.traced("every_other", every_other, 2, 64, src, out, out=out, expected=src[1::2])
    assert rep.totals()["global_load_sectors"] == 32
    assert "every_other: not NumPy's answer: 128 of 128 elements differ, the first at [0]: got 0, expected 1" \
        in capsys.readouterr().out
