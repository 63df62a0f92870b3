"""A determined class (issue 27): wrong solutions that must not get full marks, hostile cells that must cost only
themselves.

tests/fixtures/submissions/cheats/ holds one notebook per class of cheat, each kernel with a comment saying what
is wrong with it. They are judged as the grader judges a submission (course.grading.grade.judge_submission: found in the
source, linted, compiled, judged in a forked process), without running the notebook. What each row must say is
written here from what each cheat does, not from the grader's output.
"""

import json
import pathlib

import pytest

from course.trace import compiler


ROOT = pathlib.Path(__file__).resolve().parents[1]
CHEATS = ROOT / "tests" / "fixtures" / "submissions" / "cheats"


def _judged(name, **opts):
    from course.grading.grade import judge_submission

    data = (CHEATS / name).read_bytes()
    record = judge_submission(name, data, {"launch_timeout": 20, "salt": "fixed for the test", **opts})
    return record, {r["exercise"]: r for r in record["exercises"]}


def _not_full(rows):
    return [f"{n}: {r['status']} {r['score']}/{r['max_score']}: {r['message']}" for n, r in rows.items()
            if r["score"] >= r["max_score"]]


# --- 1. races on one global word ----------------------------------------------------------------------------


def test_a_race_on_one_global_word_costs_the_point_and_names_its_line():
    _, rows = _judged("races.ipynb")
    assert set(rows) == {"06.sum_grid_stride", "07.tree_sum", "02.count_positive"}
    assert not _not_full(rows), _not_full(rows)
    for name, line in [("06.sum_grid_stride", "`out[0] += s`"), ("07.tree_sum", "`out[r] += s[t]`"),
                       ("02.count_positive", "`out[0] += cuda.popc(mask)`")]:
        msg = rows[name]["message"]
        assert "no race between threads" in msg and "race on global array `out`" in msg and line in msg, msg
    # the plain += in a reduction gives a wrong sum in another thread order as well: the message says which
    assert "correct in another thread order" in rows["06.sum_grid_stride"]["message"]


# --- 3. a secret salt per grading run --------------------------------------------------------------------------


def _grade_without_running(monkeypatch, tmp_path, name, **kw):
    from course.grading import grade as G

    monkeypatch.setattr(G, "run_notebook", lambda *a, **k: G.RunLog())  # the verdicts alone, no Jupyter kernel
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    G.grade([CHEATS / name], out, quiet=True, use_sandbox=False, **kw)
    return json.loads((out / "results.json").read_text()), (out / "gradebook.csv").read_text()


def test_the_salt_is_secret_per_run_recorded_and_a_regrade_with_it_draws_the_same_inputs(monkeypatch, tmp_path):
    first, book = _grade_without_running(monkeypatch, tmp_path, "races.ipynb")
    second, _ = _grade_without_running(monkeypatch, tmp_path, "races.ipynb")
    salt = first["grader"]["salt"]
    assert salt and len(salt) >= 32 and salt != second["grader"]["salt"]  # 128 bits, new every run
    assert salt not in book  # the gradebook (what learners may be shown) does not carry it

    def seeds(results):
        return [r["seed"] for s in results["submissions"] for r in s["exercises"]]

    assert seeds(first) != seeds(second)  # nobody can compute a run's inputs before it starts
    again, _ = _grade_without_running(monkeypatch, tmp_path, "races.ipynb", salt=salt)
    assert seeds(again) == seeds(first) and again["grader"]["salt_from"] == "--salt"


def test_shards_must_share_a_salt_given_on_the_command_line(capsys, tmp_path):
    from course.grading import cli

    with pytest.raises(SystemExit) as err:
        cli.main([str(CHEATS / "races.ipynb"), "--out", str(tmp_path), "--shard", "1/2"])
    assert err.value.code == 2 and "--shard needs --salt" in capsys.readouterr().err


# --- 5. one odd cell costs only itself -------------------------------------------------------------------------


def test_a_constant_too_deep_to_compile_costs_only_the_kernels_that_use_it():
    # deep_constant_01.ipynb: cell 2 is N = 1 + 1 + ... (2000 terms); vector_add is right and never names N,
    # saxpy is right but tests N > 0
    record, rows = _judged("deep_constant_01.ipynb")
    assert rows["01.vector_add"]["status"] == "pass", rows["01.vector_add"]
    saxpy = rows["01.saxpy"]
    assert saxpy["status"] == "rejected" and saxpy["score"] == 0
    assert "uses N" in saxpy["message"] and "cell 2, line 1" in saxpy["message"] and "nested too deeply" in saxpy[
        "message"] and "one number" in saxpy["message"], saxpy
    assert "N = 2000" in saxpy["hint"]


# --- 6. bounded output -----------------------------------------------------------------------------------------


def test_huge_exception_messages_are_cut_and_say_so(monkeypatch, tmp_path):
    # huge_messages_01.ipynb: three kernels each raise a 100 MB message ("ab" * 50000000). numba-cuda refuses to build
    # that string in a kernel, so with the GPU typing check on (a CUDA compiler installed) each is "does not compile
    # for a GPU" (the next test); with it off the CPU engine runs them and the messages must come out cut
    monkeypatch.setenv("COURSE_GPU_TYPING", "0")
    results, book = _grade_without_running(monkeypatch, tmp_path, "huge_messages_01.ipynb", salt="s")
    out = next(tmp_path.iterdir())
    assert (out / "results.json").stat().st_size < 200_000 and len(book) < 20_000
    rows = results["submissions"][0]["exercises"]
    assert [r["status"] for r in rows] == ["error"] * 3
    details = [c["detail"] for r in rows for c in r["results"] if not c["passed"]]
    assert len(details) == 3 and all("more characters cut]" in d and len(d) < 2100 for d in details), details
    assert all("abab" in r["message"] and len(r["message"]) <= 640 for r in rows)


@pytest.mark.skipif(compiler.toolchain() is None, reason="no CUDA compiler: the GPU typing check gives no verdict")
def test_a_kernel_that_builds_a_huge_string_is_refused_as_a_gpu_would_and_the_message_stays_short(monkeypatch,
                                                                                                 tmp_path):
    monkeypatch.delenv("COURSE_GPU_TYPING", raising=False)
    results, book = _grade_without_running(monkeypatch, tmp_path, "huge_messages_01.ipynb", salt="s")
    rows = results["submissions"][0]["exercises"]
    assert [r["status"] for r in rows] == ["error"] * 3 and len(book) < 20_000
    assert all("does not compile for a GPU" in r["message"] and "strings cannot be built inside a kernel" in
               r["message"] and len(r["message"]) <= 640 for r in rows), [r["message"] for r in rows]


def test_every_stored_string_is_bounded():
    from course.grading.output import bounded

    got = bounded({"a": ["x" * 5000, {"b": "y" * 10}], "n": 3}, 100)
    assert got["a"][0] == "x" * 100 + " … [4,900 more characters cut]" and got["a"][1] == {"b": "y" * 10}
    assert got["n"] == 3


# --- 2. properties measured on sizes drawn per run, with nothing of the grader's importable --------------------


def test_a_kernel_cannot_recognise_the_launch_its_properties_are_measured_on():
    # traced_size.ipynb: count_positive votes only when n == the grader's CNT_TRACE_N (imported from
    # course.exercises.catalogue.ch02); sum_grid_stride adds in registers only when n == 4096, the traced size
    # the exercise always had. Both are right everywhere and cheap only there.
    _, rows = _judged("traced_size.ipynb")
    assert not _not_full(rows), _not_full(rows)
    cnt = rows["02.count_positive"]
    assert cnt["status"] == "rejected" and "CNT_TRACE_N" in cnt["message"] and "course.exercises.catalogue.ch02" in cnt[
        "message"] and "the grader's" in cnt["message"] and "course.kernels" in cnt["message"], cnt
    sg = rows["06.sum_grid_stride"]
    n = int(sg["message"].split("[input n=")[1].split()[0])
    assert sg["status"] == "partial" and f"{n} atomic operations on global memory" in sg["message"], sg  # one each


def test_a_kernel_cannot_recognise_the_shape_its_exercise_was_always_traced_at():
    # traced_size.ipynb: stencil_2d, dot_mapped, sgemm_regtile and softmax_rows take the cheap path everywhere but
    # on the one shape their exercise was always traced at (32x64, n=4096, 32x32 @ 32x32, 8x128), where their
    # limits were fixed numbers; traced on a drawn shape, each loses the point it was after
    _, rows = _judged("traced_size.ipynb")
    lost = {"06.stencil_2d": "reads global memory about once", "08.dot_mapped": "few global atomics",
            "09.sgemm_regtile": "register reuse", "10.softmax_rows": "reads global memory about once"}
    for name, prop in lost.items():
        r = rows[name]
        failed = [line for line in r["message"].splitlines() if line.startswith("FAILED")]
        assert r["status"] == "partial" and r["score"] < r["max_score"], r
        assert prop in " ".join(failed) and "32x64" not in r["message"] and "8x128" not in r["message"], r


def test_the_traced_size_is_drawn_from_the_seed():
    import numpy as np

    from course import exercises as E

    ex = E.get("06.sum_grid_stride")
    sizes = {ex.make_trace_input(np.random.default_rng(s)).args[0].size for s in range(40)}
    assert len(sizes) > 20 and all(n % 32 == 0 and 2048 <= n <= 6144 for n in sizes), sizes


def test_a_kernel_may_take_constants_from_the_teaching_kernels_only():
    from course.grading.source import public_constants

    assert public_constants("course.kernels.transpose") and public_constants("course.device")
    for grader in ("course.exercises", "course.exercises.catalogue.ch02", "course.grade", "course.grading.source",
                   "course.sandbox", "course.gradebook", "course.kernelsx"):
        assert not public_constants(grader), grader


# --- 4. properties that measure what they claim ----------------------------------------------------------------


def test_one_dummy_shared_word_does_not_count_as_using_shared_memory():
    # hollow_properties.ipynb: block_reverse_fixed writes and reads s[0] only, and reverses straight from x
    _, rows = _judged("hollow_properties.ipynb")
    r = rows["10.block_reverse_fixed"]
    assert r["status"] == "partial" and r["score"] == r["max_score"] - 1, r
    assert "uses shared memory" in r["message"] and "1 shared words written and read back" in r["message"], r


def test_a_pipeline_that_waits_after_every_chunk_is_serial():
    # hollow_properties.ipynb: pipeline calls cuda.synchronize() after each chunk's copy back: the host issues the
    # next chunk only when the last has ended, so the schedule is the serial one (1.00 of it, not the 0.38 the
    # model gave when it skipped the synchronisation)
    _, rows = _judged("hollow_properties.ipynb")
    r = rows["08.pipeline"]
    assert r["status"] == "partial" and r["score"] == r["max_score"] - 1, r
    assert "the schedule overlaps copies with kernels" in r["message"] and "modelled time 1.00 of the serial" in r[
        "message"], r


def test_a_split_sum_that_sends_nothing_back_is_not_a_combine():
    # hollow_properties.ipynb: split_sum launches each device's share, copies nothing back and adds x on the host
    _, rows = _judged("hollow_properties.ipynb")
    r = rows["11.split_sum"]
    assert r["status"] == "partial" and r["score"] == r["max_score"] - 1, r
    msg = " ".join(r["message"].split())
    assert "only the partial sums come back" in msg and "copied back per device: {0: 0, 1: 0, 2: 0}" in msg, r


def test_the_old_public_traced_size_is_never_drawn():
    # a kernel tuned to the launch the judge used to trace must never meet it again
    import numpy as np

    from course.exercises.inputs import trace_shape, trace_size

    rng = np.random.default_rng(0)
    assert 4096 not in {trace_size(rng, 4096) for _ in range(2000)}
    assert (64, 64) not in {trace_shape(rng, (64, 64), (16, 16), 64 * 64 * 3) for _ in range(500)}
