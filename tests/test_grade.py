"""The grader end to end: one run over an untouched exercise notebook and the wrong and adversarial fixtures
(solutions/ is graded the same way by tests/test_grade_solutions.py, in a file of its own so that the two runs, the
longest of the suite, go to two test workers at once).

One grading run (``--jobs 2``, small time limits) feeds every test here, because each submission
costs a fresh Jupyter kernel.  Expected outcomes come from what each fixture does (see the comments
in the fixture notebooks), not from the grader's output.
"""

import csv
import hashlib
import json
import os
import pathlib
import subprocess
import sys

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "submissions"
# one untouched exercise notebook (the others are checked without a kernel, below), the adversarial fixtures and
# one notebook of wrong kernels (the hostile fixtures are graded by tests/test_grade_sandbox.py, the solutions by
# tests/test_grade_solutions.py; wrong/wrong_kernels_a and _b, 56 exercises each, are judged the grader's way, from
# their source, by tests/test_exercises_wrong.py: graded here too, they only added rows no test read, and 35 s)
INPUTS = [ROOT / "exercises" / "05_transpose_exercises.ipynb", FIXTURES / "adversarial",
          FIXTURES / "wrong" / "mixed_wrong.ipynb"]
FIELDS = ["student", "assignment", "submission", "exercise", "score", "max_score", "status", "late", "message"]
GRADER_FILES = [ROOT / "course" / "exercises", ROOT / "course" / "grading"]


def _hashes(paths):
    files = [f for p in paths for f in (sorted(p.rglob("*")) if p.is_dir() else [p]) if f.is_file()]
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def grade_run(inputs, out) -> dict:
    """One run of the grader's command over ``inputs`` into ``out``: the gradebook's header, rows and rows by
    (submission, exercise), results.json, the inputs' and grader files' hashes before and after, the stdout."""
    before = _hashes(inputs + GRADER_FILES)
    proc = subprocess.run(
        [sys.executable, "-m", "course.grading.grade", *map(str, inputs), "--out", str(out), "--jobs", "2",
         "--cell-timeout", "4", "--timeout", "60", "--launch-timeout", "3"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "COURSE_STRICT": "1"},
    )
    after = _hashes(inputs + GRADER_FILES)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        rows = list(reader)
    results = json.loads((out / "results.json").read_text())
    book = {}
    for r in rows:  # labels are relative to the folder given (its name first, as several were given)
        assert not r["submission"].startswith("/"), r["submission"]
        rel = r["submission"]
        if rel.split("/")[0] in ("adversarial", "wrong"):
            rel = "tests/fixtures/submissions/" + rel
        book[(rel, r["exercise"])] = r
    return {"header": header, "rows": rows, "book": book, "results": results, "before": before, "after": after,
            "stdout": proc.stdout}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_run(INPUTS, tmp_path_factory.mktemp("grade"))


def row(graded, sub, exercise):
    return graded["book"][(sub, exercise)]


def test_gradebook_has_the_promised_columns_and_a_row_per_exercise(graded):
    assert graded["header"] == FIELDS
    subs = {r["submission"] for r in graded["rows"]}
    assert len(subs) == sum(len(list(d.rglob("*.ipynb"))) if d.is_dir() else 1 for d in INPUTS)
    assert graded["results"]["grader"]["jobs"] == 2
    for s in graded["results"]["submissions"]:
        assert s["exercises"], s["submission"]


def test_every_untouched_exercise_scores_zero(graded):
    exe = [r for r in graded["rows"] if "exercises/" in r["submission"] and "fixtures" not in r["submission"]]
    from course.exercises import EXERCISES

    assert len(exe) == sum(1 for name in EXERCISES if name.startswith("05."))  # the one exercise notebook graded
    for r in exe:
        assert r["score"] == "0" and r["status"] == "not attempted", r


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").glob("*.ipynb")), ids=lambda p: p.name)
def test_every_untouched_exercise_scores_zero_without_a_kernel(path):
    # the grader's steps after the notebook run: find the kernels in the source, compile, judge
    from course import exercises as E
    from course.grading.grade import expected_exercises, judge_isolated, scan, warm_up

    warm_up()
    nb = nbformat.read(path, as_version=4)
    names = expected_exercises(path.name, nb)
    assert names == nb.metadata["course"]["exercises"]
    found = scan(nb)
    for name in names:
        r = judge_isolated(found, E.get(name), launch_timeout=10)
        assert r["score"] == 0 and r["status"] == "not attempted", r


@pytest.mark.parametrize("name", ["07_reduction_exercises.ipynb", "07_reduction_solutions.ipynb", "07_reduction.ipynb",
                                  "bob_07_reduction_exercises.ipynb", "07_reduction_exercises (1).ipynb"])
def test_the_chapter_number_in_a_file_name_picks_its_exercises(name):
    """Exercise and solution notebooks are named NN_topic_exercises/_solutions: the grader still finds chapter NN's."""
    from course import exercises as E
    from course.grading.grade import expected_exercises

    chapter_07 = [n for n in E.EXERCISES if n.startswith("07.")]  # exercise ids start with their chapter
    assert len(chapter_07) >= 3 and expected_exercises(name, None) == chapter_07


@pytest.mark.parametrize("parts, want", [
    (["bob_05_transpose.ipynb"], ("bob", "05_transpose")),
    (["bob_05_transpose_exercises.ipynb"], ("bob", "05_transpose")),
    (["05_transpose_exercises.ipynb"], ("05_transpose_exercises", "05_transpose")),
    (["alice", "alice-05_transpose_exercises.ipynb"], ("alice", "05_transpose")),
    (["alice", "05_transpose", "05_transpose.ipynb"], ("alice", "05_transpose")),
])
def test_an_exercise_notebook_names_its_chapter_as_the_assignment(parts, want):
    from course.grading.roster import roster_fields

    assert roster_fields(parts) == want


def test_wrong_solutions_fail_with_the_right_message(graded):
    w = "tests/fixtures/submissions/wrong/mixed_wrong.ipynb"  # one notebook, six wrong kernels (its metadata lists them)
    r = row(graded, w, "01.vector_add")  # `i <= n`
    assert r["status"] == "error" and "out of bounds" in r["message"] and r["score"] == "0"
    r = row(graded, w, "01.matrix_add")  # guard compares col with shape[0]
    assert r["status"] == "error" and "17x16" in r["message"]
    r = row(graded, w, "04.row_sums")  # no shared memory
    assert r["status"] == "partial" and "uses shared memory" in r["message"] and "32.00 sectors" in r["message"]
    r = row(graded, w, "05.transpose_padded")  # [32][34]
    assert r["status"] == "partial" and "2.00 wavefronts per request" in r["message"]
    assert int(r["score"]) == int(r["max_score"]) - 1
    r = row(graded, w, "05.transpose_swizzled")  # no syncthreads
    assert r["score"] == "0" and "race" in r["message"]
    r = row(graded, w, "05.transpose_mine")  # tile written back untransposed
    assert r["status"] == "fail" and "1x33" in r["message"]


def test_forgeries_earn_nothing(graded):
    f = "tests/fixtures/submissions/adversarial/forge_05_transpose.ipynb"
    rows = [row(graded, f, e) for e in ("05.transpose_padded", "05.transpose_swizzled", "05.transpose_mine")]
    assert [r["score"] for r in rows] == ["0", "0", "0"]
    assert rows[0]["status"] == "fail" and "never written" in rows[0]["message"]  # despite patched check/NumPy
    assert rows[1]["status"] == "rejected" and "__" in rows[1]["message"]  # escape attempt from the kernel
    assert rows[2]["status"] == "rejected" and "np.sum" in rows[2]["message"]
    assert "PASS 7/7" not in graded["stdout"]  # the fake verdict it printed never reached us
    run = next(s["run"] for s in graded["results"]["submissions"] if f.endswith(s["submission"]))
    # every forgery ran; the edit of its copy of course/ failed (read-only), or, in a kernel that owns its copy
    # (root, no sandbox), changed only that copy (checked in-cell).  The failure is an OSError: plain OSError
    # on a read-only mount (EROFS), its subclass PermissionError where file modes refuse it (EACCES: the
    # fallback sandbox's kernel, seen on the H200 as root without bubblewrap)
    failed = [(c, e) for c, e, _ in run["errors"]]
    assert run["errors"] == [] or failed in ([(2, "OSError")], [(2, "PermissionError")]), run["errors"]
    assert not os.path.exists("/tmp/pwned")


def test_no_submission_or_grader_file_was_changed(graded):
    assert graded["before"] == graded["after"]
    assert all(s["unchanged"] for s in graded["results"]["submissions"])
    changed = graded["results"]["grader"]["grader_files_changed"]
    assert not [f for f in changed if f.startswith("exercises") or f == "grade.py"]  # the forgery wrote to its own copy


def test_hang_exception_oob_huge_output(graded):
    m = "tests/fixtures/submissions/adversarial/misbehaving.ipynb"  # see its cells 2-4 and kernels
    for exercise in ("01.vector_add", "01.matrix_add", "04.row_sums", "05.transpose_padded"):
        msg = row(graded, m, exercise)["message"]
        assert "cell 2 raised RuntimeError" in msg and "cell 3 ran past the per-cell time limit" in msg, msg
        assert "30 MB of output" in msg, msg
    r = row(graded, m, "05.transpose_padded")  # a kernel that never ends
    assert r["status"] == "timeout" and "time limit" in r["message"]
    r = row(graded, m, "01.vector_add")
    assert r["status"] == "error" and "out of bounds" in r["message"]
    r = row(graded, m, "01.matrix_add")
    assert r["status"] == "error" and "ZeroDivisionError" in r["message"]
    r = row(graded, m, "04.row_sums")  # a right kernel still counts, whatever else the notebook does
    assert r["status"] == "pass" and r["score"] == r["max_score"]
    run = next(s["run"] for s in graded["results"]["submissions"] if m.endswith(s["submission"]))
    assert run["output_bytes"] >= 30_000_000 and "outputs" not in run  # counted, never stored


def test_syntax_error_deleted_and_renamed_cells_corrupt_json(graded):
    a = "tests/fixtures/submissions/adversarial/"
    r = row(graded, a + "broken_05_transpose.ipynb", "05.transpose_padded")
    assert r["status"] == "error" and "SyntaxError" in r["message"]
    r = row(graded, a + "broken_05_transpose.ipynb", "05.transpose_swizzled")
    assert r["status"] == "missing" and "deleted" in r["message"]
    r = row(graded, a + "broken_05_transpose.ipynb", "05.transpose_mine")
    assert r["status"] == "missing" and "my_transpose" in r["message"]
    r = row(graded, a + "corrupt_04_shared_memory_banks.ipynb", "04.row_sums")  # row from its file name
    assert r["status"] == "unreadable" and "not a readable notebook" in r["message"]


def test_whole_notebook_limit_stops_the_kernel(tmp_path):
    from course.grading.grade import run_notebook

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)"),
        nbformat.v4.new_code_cell("while True:\n    time.sleep(0.1)  # ignores interrupts"),
        nbformat.v4.new_code_cell("print('never')"),
    ])
    log = run_notebook(nb, str(tmp_path), dict(os.environ), cell_timeout=30, total_timeout=6)
    assert "limit" in log.killed and log.seconds < 20


def _found(src):
    from course.grading.grade import scan

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import course\nfrom numba import cuda, float32\n\n" + src)])
    return scan(nb)


def test_a_kernel_the_engine_cannot_interrupt_is_stopped_and_the_rest_still_graded(monkeypatch):
    import time

    from course import exercises as E
    from course.grading import grade as G
    from course.grading.grade import judge_isolated

    # a judge stuck in one C call (which the engine's watchdog, acting between bytecodes, cannot stop): the
    # forked judging process is killed at its hard limit. (Numba's typing of literals now makes the old example,
    # 9 ** 99999999, an int64 power that wraps at once, and a base past int64 is refused as numba refuses it.)
    found = _found("@cuda.jit\ndef vector_add(a, b, out, n):\n    i = cuda.grid(1)\n")
    real = G.ex_mod.judge
    monkeypatch.setattr(G.ex_mod, "judge", lambda *a, **k: time.sleep(100))
    r = judge_isolated(found, E.get("01.vector_add"), launch_timeout=1, hard_limit=4)
    assert r["status"] == "timeout" and "stopped" in r["message"]
    monkeypatch.setattr(G.ex_mod, "judge", real)
    good = _found("@cuda.jit\ndef vector_add(a, b, out, n):\n    i = cuda.grid(1)\n    if i < n:\n"
                  "        out[i] = a[i] + b[i]\n")
    assert judge_isolated(good, E.get("01.vector_add"), launch_timeout=5)["status"] == "pass"


def test_a_kernel_that_allocates_too_much_fails_alone():
    from course import exercises as E
    from course.grading.grade import judge_isolated

    found = _found("@cuda.jit\ndef vector_add(a, b, out, n):\n    x = cuda.local.array(2 ** 34, float32)\n"
                   "    x[0] = 1\n")
    r = judge_isolated(found, E.get("01.vector_add"), launch_timeout=5, hard_limit=60)
    assert r["status"] == "error" and r["score"] == 0, r


def test_a_kernel_that_dies_while_starting_is_started_again(monkeypatch):
    # a kernel lost before any cell ran is the machine's failure, not the learner's: one more start
    from course.grading import grade as G
    from course.grading import notebook as N

    calls = []

    def once(nb, workdir, env, cell_timeout, total_timeout):
        calls.append(1)
        log = G.RunLog()
        if len(calls) == 1:
            log.killed = "the notebook could not be run (RuntimeError: Kernel died before replying to kernel_info)"
        return log

    monkeypatch.setattr(N, "_run_notebook_once", once)
    assert G.run_notebook({}, ".", {}, 1, 1).killed == "" and len(calls) == 2
    calls.clear()

    def always(nb, workdir, env, cell_timeout, total_timeout):
        calls.append(1)
        log = G.RunLog()
        log.killed = "the notebook could not be run (RuntimeError: Kernel died before replying to kernel_info)"
        return log

    monkeypatch.setattr(N, "_run_notebook_once", always)
    log = G.run_notebook({}, ".", {}, 1, 1)
    assert len(calls) == 2 and "a second start was tried" in log.killed  # then it is reported, not hidden

    def cell_error(nb, workdir, env, cell_timeout, total_timeout):  # a notebook's own fault: no second run
        calls.append(1)
        log = G.RunLog()
        log.errors.append((2, "RuntimeError", "boom"))
        return log

    calls.clear()
    monkeypatch.setattr(N, "_run_notebook_once", cell_error)
    G.run_notebook({}, ".", {}, 1, 1)
    assert len(calls) == 1


def test_the_notebook_kernel_keeps_the_graders_python_path(monkeypatch, tmp_path):
    # the kernel imports its own copy of the course first; what the grader's PYTHONPATH holds must stay
    # reachable after it (on the GPU lane ipykernel lives only there: replacing it killed every kernel)
    from course.grading import grade as G

    seen = {}

    def fake_run(nb, workdir, env, cell_timeout, total_timeout, box=None):
        seen["path"] = env["PYTHONPATH"].split(os.pathsep)
        return G.RunLog()

    monkeypatch.setattr(G, "run_notebook", fake_run)
    monkeypatch.setattr(G, "judge_isolated", lambda found, ex, t, seed=None: G._row(ex.name, "pass", 1, 1, "stub"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), str(tmp_path / "repo")]))
    data = (pathlib.Path(__file__).parent / "fixtures/submissions/adversarial/misbehaving.ipynb").read_bytes()
    G.grade_one("misbehaving.ipynb", data, {"cell_timeout": 1, "timeout": 1, "launch_timeout": 1})
    path = seen["path"]
    assert path[0].endswith("pkg") and path[1:] == [str(tmp_path / "site"), str(tmp_path / "repo")]
