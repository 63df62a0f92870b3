"""The grader against hostile submissions, in a class folder laid out as nbgrader and flat files.

One class is graded once, as two shards run side by side and merged (each submission costs a fresh
Jupyter kernel), with a deadline, a seed salt, and HOME/TMPDIR pointed at empty folders so that anything
written outside ``--out`` shows. The hostile notebooks are in tests/fixtures/submissions/hostile/ (each
says what it does); links, a FIFO and a file name in GBK bytes are made here, since git cannot hold them
portably. Expected outcomes come from what each fixture does, not from the grader's output.
"""

import csv
import datetime as dt
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "fixtures" / "submissions" / "hostile"
DEADLINE = "2026-11-30T12:00:00+00:00"
GBK_NAME = "学生作业_01_programming_model.ipynb".encode("gbk")


def _sandbox():
    from course.grading import sandbox

    return sandbox.describe()


def _protected():
    """Whether this machine's sandbox keeps a notebook from reaching the grader (bwrap, or another uid)."""
    d = _sandbox()
    return d["level"] == "bwrap" or d["other_uid"]


def _class(tmp: pathlib.Path) -> pathlib.Path:
    sub = tmp / "submitted"
    # nbgrader layout: submitted/<student>/<assignment>/<notebook> and its timestamp.txt
    for student, fixture, stamp in (("alice", "z_victim_01_programming_model.ipynb", "2026-11-29 10:00:00.000000 UTC"),
                                    ("bob", "lingering_01.ipynb", "2026-11-30 14:30:00.000000 UTC")):
        d = sub / student / "01_programming_model"
        d.mkdir(parents=True)
        shutil.copy(HOSTILE / fixture, d / "01_programming_model.ipynb")
        (d / "timestamp.txt").write_text(stamp)
    flat = ["a_plant_01.ipynb", "default_arg_01.ipynb", "malformed_source_01.ipynb", "malformed_metadata_01.ipynb",
            "huge_shared_04.ipynb", "z_victim_01_programming_model.ipynb"]
    if _protected():  # without a sandbox it would kill every process of the user running the tests
        flat.append("killer_01.ipynb")
    for name in flat:
        shutil.copy(HOSTILE / name, sub / name)
        os.utime(sub / name, (1700000000, 1700000000))  # 2023: on time
    shutil.copy(HOSTILE / "gbk_name_01.ipynb", os.path.join(os.fsencode(sub), GBK_NAME))
    os.utime(os.path.join(os.fsencode(sub), GBK_NAME), (1800000000, 1800000000))  # 2027: late
    # links: one out of the folder (refused), one inside it (graded); a FIFO (refused, never read)
    os.symlink(ROOT / "solutions" / "01_programming_model_solutions.ipynb", sub / "link_out_01_programming_model.ipynb")
    os.symlink(ROOT / "solutions", sub / "linked_folder")
    os.mkfifo(sub / "fifo_01_programming_model.ipynb")
    return sub


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("class")
    sub = _class(tmp)
    home, tmpdir, marks = tmp / "home", tmp / "tmpdir", tmp / "marks"
    for d in (home, tmpdir, marks):
        d.mkdir()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(tmpdir), "COURSE_FIXTURE_MARKS": str(marks),
           "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / ".local/share"), "IPYTHONDIR": str(home / ".ipython")}
    env.pop("COURSE_STRICT", None)
    env.pop("JUPYTER_CONFIG_DIR", None)
    env.pop("JUPYTER_DATA_DIR", None)
    env.pop("JUPYTER_RUNTIME_DIR", None)
    planted = ROOT / "course" / "__pycache__" / "zz_fixture_planted.txt"
    planted_before = planted.exists()
    outs = [tmp / "shard1", tmp / "shard2"]
    procs = [subprocess.Popen(
        [sys.executable, "-m", "course.grading.grade", str(sub), "--out", str(out), "--shard", f"{i}/2",
         "--cell-timeout", "8", "--timeout", "60", "--launch-timeout", "3", "--deadline", DEADLINE, "--seed", "class-a"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i, out in ((1, outs[0]), (2, outs[1]))]
    logs = [p.communicate(timeout=400) for p in procs]
    for p, (_o, e) in zip(procs, logs):
        assert p.returncode == 0, e[-3000:]
    merged = tmp / "merged"
    m = subprocess.run([sys.executable, "-m", "course.grading.grade", "merge", str(merged), *map(str, outs)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert m.returncode == 0, m.stderr
    finished = time.time()
    book_text = (merged / "gradebook.csv").read_text(encoding="utf-8")
    with open(merged / "gradebook.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    results = json.loads((merged / "results.json").read_text())
    planted_after = planted.exists()
    if planted_after and not planted_before:
        planted.unlink()  # never leave it in the checkout
    return {"rows": rows, "results": results, "tmp": tmp, "sub": sub, "home": home, "tmpdir": tmpdir,
            "marks": marks, "outs": outs, "merged": merged, "book_text": book_text, "finished": finished,
            "shard_results": [json.loads((o / "results.json").read_text()) for o in outs],
            "planted": planted_after and not planted_before, "stdout": "".join(o for o, _ in logs)}


def _lingerers():
    """Processes started by lingering_01.ipynb that are still alive."""
    alive = []
    for p in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"course-fixture-lingerer" in p.read_bytes():
                alive.append(p.parent.name)
        except OSError:
            pass
    return alive


def rows_of(graded, submission):
    return {r["exercise"]: r for r in graded["rows"] if r["submission"] == submission}


def record(graded, submission):
    return next(s for s in graded["results"]["submissions"] if s["submission"] == submission)


def test_code_in_the_def_line_never_runs_in_the_grader(graded):
    r = rows_of(graded, "default_arg_01.ipynb")
    assert r["01.matrix_add"]["status"] == "rejected" and r["01.matrix_add"]["score"] == "0"
    assert "default must be a plain number" in r["01.matrix_add"]["message"]
    # the annotation, return annotation and decorator argument are not compiled: the kernel body is judged
    assert r["01.vector_add"]["status"] == "pass", r["01.vector_add"]
    assert sorted(os.listdir(graded["marks"])) == []  # none of the four expressions ran in the grader


def test_processes_the_notebook_started_end_with_it(graded):
    time.sleep(max(0.0, graded["finished"] + 6 - time.time()))  # the lingerers would write after 4 s
    assert _lingerers() == []
    assert (graded["merged"] / "gradebook.csv").read_text(encoding="utf-8") == graded["book_text"]
    for out in graded["outs"]:
        assert "forged" not in (out / "gradebook.csv").read_text(encoding="utf-8")
    r = rows_of(graded, "bob/01_programming_model/01_programming_model.ipynb")
    assert r["01.vector_add"]["status"] == "pass"  # a right kernel still counts


def test_nothing_planted_reaches_a_later_notebook_or_the_course(graded):
    victim = record(graded, "z_victim_01_programming_model.ipynb")
    assert victim["run"]["killed"] == "" and victim["run"]["errors"] == [], victim["run"]
    statuses = {r["exercise"]: r["status"] for r in victim["exercises"]}
    assert statuses["01.vector_add"] == statuses["01.matrix_add"] == "pass", victim["exercises"]  # both right
    alice = record(graded, "alice/01_programming_model/01_programming_model.ipynb")
    assert alice["run"]["killed"] == "" and alice["run"]["errors"] == []
    changed = graded["results"]["grader"]["grader_files_changed"]
    # the grader ran on its own fresh copy of course/: nothing in it changed ("installed course: ..." entries
    # are the checkout, which people may be editing while the tests run)
    assert [c for c in changed if not c.startswith("installed course: ")] == [], changed
    if _protected():
        assert not graded["planted"] and not any("zz_fixture_planted" in c for c in changed), changed
    else:  # same uid, no bwrap: the write cannot be stopped, but it is reported
        assert not graded["planted"] or any("zz_fixture_planted" in c for c in changed)
    plant = record(graded, "a_plant_01.ipynb")
    assert plant["run"]["errors"] == []  # it ran to the end (every write it could not make was skipped)


def test_nothing_is_left_outside_out(graded):
    left = [str(p.relative_to(graded["tmp"])) for d in (graded["home"], graded["tmpdir"]) for p in d.rglob("*")]
    assert left == []


def test_a_notebook_that_kills_what_it_can_see_loses_nothing(graded):
    if not _protected():
        pytest.skip("no bwrap and not root: a notebook can signal the grader (the README says so)")
    r = rows_of(graded, "killer_01.ipynb")
    assert r["01.vector_add"]["status"] == "pass"
    assert "stopped its grading process" not in r["01.vector_add"]["message"]
    # the grader and every other submission's grading survived: every file has its record
    assert len(graded["results"]["submissions"]) == 13


def test_links_out_of_the_folder_and_fifos_are_refused_with_a_reason(graded):
    r = rows_of(graded, "link_out_01_programming_model.ipynb")[""]
    assert r["status"] == "refused" and "outside the submissions folder" in r["message"] and r["score"] == "0"
    r = rows_of(graded, "linked_folder")[""]
    assert r["status"] == "refused" and "outside the submissions folder" in r["message"]
    r = rows_of(graded, "fifo_01_programming_model.ipynb")[""]
    assert r["status"] == "refused" and "not a regular file" in r["message"]
    assert not any("solutions/" in r["submission"] for r in graded["rows"])


def test_malformed_notebooks_get_their_own_rows(graded):
    r = rows_of(graded, "malformed_source_01.ipynb")
    assert r["01.vector_add"]["status"] == "pass" and "cell 1's source is a int" in r["01.vector_add"]["message"]
    r = rows_of(graded, "malformed_metadata_01.ipynb")
    assert set(r) == {"01.vector_add", "01.matrix_add"}  # found from the kernels it defines
    assert "`course.exercises` is a int" in r["01.vector_add"]["message"]
    name = GBK_NAME.decode("gbk")
    r = rows_of(graded, name)
    assert r["01.vector_add"]["status"] == "pass" and "not UTF-8 (read as GBK)" in r["01.vector_add"]["message"]
    assert r["01.vector_add"]["student"] == "学生作业" and r["01.vector_add"]["assignment"] == "01_programming_model"


def test_a_huge_shared_array_is_refused_with_a_shared_memory_message(graded):
    r = rows_of(graded, "huge_shared_04.ipynb")["04.row_sums"]
    assert r["status"] == "rejected" and "shared memory" in r["message"] and "49,152" in r["message"]
    assert "has no attribute" not in r["message"]


def test_roster_columns_relative_paths_and_deadline(graded):
    assert list(graded["rows"][0]) == ["student", "assignment", "submission", "exercise", "score", "max_score",
                                       "status", "late", "message"]
    assert not any(r["submission"].startswith("/") or str(graded["tmp"]) in r["submission"] for r in graded["rows"])
    alice = rows_of(graded, "alice/01_programming_model/01_programming_model.ipynb")["01.vector_add"]
    assert (alice["student"], alice["assignment"], alice["late"]) == ("alice", "01_programming_model", "0")
    bob = rows_of(graded, "bob/01_programming_model/01_programming_model.ipynb")["01.vector_add"]
    assert bob["late"] == str(150)  # timestamp.txt: 14:30 against a 12:00 deadline
    assert record(graded, "bob/01_programming_model/01_programming_model.ipynb")["submitted_from"] == "timestamp.txt"
    flat = rows_of(graded, "default_arg_01.ipynb")["01.vector_add"]
    assert flat["late"] == "0" and flat["student"] == "default_arg_01"
    assert int(rows_of(graded, GBK_NAME.decode("gbk"))["01.vector_add"]["late"]) > 0  # file time in 2027


def test_shards_split_the_class_and_merge_back_whole(graded):
    a, b = ({s["submission"] for s in r["submissions"]} for r in graded["shard_results"])
    assert a and b and not a & b
    assert a | b == {s["submission"] for s in graded["results"]["submissions"]}
    from course.grading.grade import shard_of

    for i, subs in ((1, a), (2, b)):
        assert all(shard_of(s, 2) == i for s in subs)
    assert graded["results"]["grader"]["shards_missing"] == []
    assert graded["results"]["grader"]["sandbox"]["level"] in ("bwrap", "rlimits")
    assert graded["results"]["grader"]["grader_code"] == "a fresh copy of course/, bytecode off"


def test_seeds_are_recorded_per_exercise(graded):
    from course.grading.grade import exercise_seed

    for s in graded["results"]["submissions"]:
        for r in s["exercises"]:
            if r["exercise"] and s.get("sha256"):
                assert r["seed"] == exercise_seed(s["sha256"], r["exercise"], "class-a")


def test_merge_refuses_overlapping_shards(graded, tmp_path):
    m = subprocess.run([sys.executable, "-m", "course.grading.grade", "merge", str(tmp_path / "m"),
                        str(graded["outs"][0]), str(graded["outs"][0])], cwd=ROOT, capture_output=True, text=True)
    assert m.returncode != 0 and "is in both" in m.stderr


# --------------------------------------------------------------------------------------------------
# Without a notebook kernel (fast)


def _found(src):
    from course.grading.grade import scan

    return scan(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import course\nfrom numba import cuda, float32\n\n" + src)]))


def test_a_regrade_draws_the_same_inputs_and_gives_the_same_verdict():
    from course import exercises as E
    from course.grading.grade import judge_isolated, warm_up

    warm_up()
    # wrong only where a random input has an element above 0.9: which element, and its value, depend on the draw
    found = _found("@cuda.jit\ndef vector_add(a, b, out, n):\n    i = cuda.grid(1)\n    if i < n:\n"
                   "        out[i] = a[i] + b[i] if a[i] < 0.9 else 0.0\n")
    ex = E.get("01.vector_add")
    first = judge_isolated(found, ex, 5, seed=1234)
    again = judge_isolated(found, ex, 5, seed=1234)
    other = [judge_isolated(found, ex, 5, seed=s)["message"] for s in (1, 2, 3)]
    assert first["status"] == "fail" and first["message"] == again["message"] and first["seed"] == 1234
    assert any(m != first["message"] for m in other)  # the seed does choose the inputs


def test_tree_hashes_cover_bytecode(tmp_path):
    from course.grading.grade import tree_hashes

    (tmp_path / "a.py").write_text("x = 1\n")
    before = tree_hashes(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"forged")
    assert tree_hashes(tmp_path) != before


def test_the_fallback_kills_a_process_that_left_its_session():
    # what a grading worker does when there is no bubblewrap: become a subreaper, then sweep
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        from course.grading import sandbox

        sandbox.become_subreaper()
        child = subprocess.Popen([sys.executable, "-c", "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                                  "    time.sleep(300)\nos._exit(0)"])
        child.wait()
        time.sleep(0.3)
        before = len(sandbox.descendants())
        killed = sandbox.sweep()
        os.write(w, json.dumps([before, killed, len(sandbox.descendants())]).encode())
        os._exit(0)
    os.close(w)
    before, killed, after = json.loads(os.read(r, 1000))
    os.waitpid(pid, 0)
    assert before == 1 and killed == 1 and after == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process's start time from /proc")
def test_the_grader_removes_only_the_empty_cuda_cache_folders_it_made(tmp_path, monkeypatch):
    # on a GPU the driver makes ~/.nv/ComputeCache as it starts (import course probes the GPU), too early
    # for CUDA_CACHE_PATH: the grader removes those folders at the end where they are empty and new
    from course.grading.notebook import remove_driver_cache_dirs

    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / ".nv" / "ComputeCache"
    cache.mkdir(parents=True)
    remove_driver_cache_dirs()
    assert not (tmp_path / ".nv").exists()
    cache.mkdir(parents=True)  # a cache holding something is not the grader's to remove
    (cache / "index").write_text("x")
    remove_driver_cache_dirs()
    assert (cache / "index").exists()
    (cache / "index").unlink()
    os.utime(cache, (1, 1))  # nor one older than the grading process
    remove_driver_cache_dirs()
    assert cache.is_dir()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uids are held by abstract Unix sockets (Linux)")
def test_two_graders_on_one_machine_give_their_kernels_different_uids():
    # two shards graded side by side (as the class above is): without bubblewrap a root grader's kernels are
    # kept apart by their uids alone, and the killer in one shard would kill the other shard's kernel
    from course.grading import sandbox

    mine = sandbox.claim_uids(2)
    try:
        p = subprocess.run([sys.executable, "-c", "from course.grading import sandbox; print(*sandbox.claim_uids(3))"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        theirs = [int(x) for x in p.stdout.split()]
        assert len(mine) == 2 and len(theirs) == 3 and not set(mine) & set(theirs), (mine, theirs, p.stderr)
        if os.geteuid() == 0 and sandbox.uid_for(0) is not None:
            assert [sandbox.uid_for(0), sandbox.uid_for(1)] == mine
    finally:
        sandbox.release_uids()


def test_the_rlimits_fallback_limits_what_a_kernel_may_do(tmp_path):
    from course.grading import sandbox

    cfg = {"uid": None, "work": str(tmp_path), "bwrap": None, "limits": {**sandbox.LIMITS, "file_size": 1 << 20}}
    code = ("import resource\nprint(resource.getrlimit(resource.RLIMIT_FSIZE)[0], resource.getrlimit(resource.RLIMIT_AS)[0],"
            " resource.getrlimit(resource.RLIMIT_CORE)[0])\ntry:\n    open('big', 'wb').write(b'x' * (2 << 20))\n"
            "except OSError as e:\n    print('refused', e.errno)\n")
    p = subprocess.run([sys.executable, "-I", "-B", str(ROOT / "course" / "grading" / "sandbox.py"), json.dumps(cfg), "--",
                        sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    fsize, vm, core = map(int, p.stdout.split()[:3])
    assert fsize == 1 << 20 and vm == sandbox.LIMITS["address_space"] and core == 0
    assert "refused 27" in p.stdout  # EFBIG


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed here")
def test_bwrap_box_sees_no_grader_no_repository_no_network(tmp_path):
    from course.grading import sandbox

    if sandbox.bwrap_path() is None:
        pytest.skip("bubblewrap is installed but cannot make namespaces here")
    cfg = {"uid": sandbox.uid_for(0), "work": str(tmp_path), "bwrap": sandbox.bwrap_path(),
           "ro_paths": sandbox.python_paths(), "limits": sandbox.LIMITS}
    code = ("import os, socket\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]))\n"
            f"print(os.path.exists({str(ROOT / 'solutions')!r}))\n"
            "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    print('net')\nexcept OSError:\n    print('nonet')\n"
            "try:\n    open('/usr/x', 'w')\nexcept OSError:\n    print('ro')\n")
    p = subprocess.run([sys.executable, "-I", "-B", str(ROOT / "course" / "grading" / "sandbox.py"), json.dumps(cfg), "--",
                        sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    procs, repo, net, ro = p.stdout.split()
    assert int(procs) <= 3 and repo == "False" and net == "nonet" and ro == "ro", p.stdout + p.stderr


def test_deadline_and_shard_arguments_are_checked():
    from course.grading.cli import main

    with pytest.raises(SystemExit):
        main(["x.ipynb", "--out", "o", "--shard", "3/2"])
    with pytest.raises(SystemExit):
        main(["x.ipynb", "--out", "o", "--deadline", "tomorrow"])
    from course.grading.grade import parse_time

    assert parse_time("2026-11-30 14:30:00.000000 UTC") == dt.datetime(2026, 11, 30, 14, 30, tzinfo=dt.timezone.utc)


def test_the_fallback_grades_hostile_notebooks_without_bubblewrap(tmp_path):
    # COURSE_GRADE_SANDBOX=rlimits: what a machine without bubblewrap gets (limits, subreaper sweep)
    sub = tmp_path / "c"
    sub.mkdir()
    # (not a_plant_01: without bubblewrap or another uid its writes would land in this checkout)
    for name in ("lingering_01.ipynb", "default_arg_01.ipynb", "z_victim_01_programming_model.ipynb"):
        shutil.copy(HOSTILE / name, sub / name)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "COURSE_GRADE_SANDBOX": "rlimits", "COURSE_FIXTURE_MARKS": str(marks)}
    env.pop("COURSE_STRICT", None)
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "course.grading.grade", str(sub), "--out", str(out), "--jobs", "2",
                        "--cell-timeout", "8", "--timeout", "60", "--launch-timeout", "3"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["grader"]["sandbox"]["level"] == "rlimits"
    subs = {s["submission"]: s for s in results["submissions"]}
    assert subs["lingering_01.ipynb"]["run"]["processes_killed_after"] >= 2  # the sweep found them
    assert subs["z_victim_01_programming_model.ipynb"]["run"]["killed"] == ""
    assert os.listdir(marks) == []
    time.sleep(5)
    assert _lingerers() == []
    assert "forged" not in (out / "gradebook.csv").read_text(encoding="utf-8")


def test_verdicts_survive_a_notebook_that_kills_its_grading_process(monkeypatch, tmp_path):
    # where a notebook can reach its grading process (no bwrap, same uid), killing it must cost no marks:
    # the verdicts leave the process before the notebook runs
    from course.grading import grade as G

    def killed(data, opts, slot=0):
        os.kill(os.getpid(), 9)

    monkeypatch.setattr(G, "run_submission", killed)
    nb = tmp_path / "right.ipynb"
    shutil.copy(HOSTILE / "default_arg_01.ipynb", nb)
    rows = G.grade([nb], tmp_path / "out", quiet=True, launch_timeout=5)
    r = {x["exercise"]: x for x in rows}
    assert r["01.vector_add"]["status"] == "pass" and r["01.vector_add"]["score"] == 3
    assert "stopped its grading process" in r["01.vector_add"]["message"]
    assert r["01.matrix_add"]["status"] == "rejected"


def test_a_box_cannot_start_more_processes_than_its_cgroup_allows(tmp_path):
    from course.grading import sandbox

    if sandbox.pids_cgroup_root() is None:
        pytest.skip("no pids cgroup this user may make (not root, or no pids controller)")
    cg = sandbox.new_pids_cgroup(f"course-grade-{os.getpid()}-test", 20)
    try:
        cfg = {"uid": None, "work": str(tmp_path), "bwrap": None, "cgroup": cg, "limits": sandbox.LIMITS}
        code = ("import subprocess\nps = []\ntry:\n    for i in range(60):\n"
                "        ps.append(subprocess.Popen(['sleep', '3']))\nexcept OSError as e:\n    print('refused', len(ps))\n"
                "for p in ps:\n    p.kill()\n")
        p = subprocess.run([sys.executable, "-I", "-B", str(ROOT / "course" / "grading" / "sandbox.py"), json.dumps(cfg), "--",
                            sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert p.stdout.startswith("refused") and int(p.stdout.split()[1]) < 20, p.stdout + p.stderr
    finally:
        time.sleep(0.2)
        sandbox.remove_cgroup(cg)
    assert not os.path.exists(cg)


def test_host_code_exercises_compile_only_their_linted_body(tmp_path, monkeypatch):
    # chapter 08's pipeline is plain Python: its def line must not run in the grader either
    from course import exercises as E
    from course.grading.grade import judge_isolated, scan, warm_up

    warm_up()
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("COURSE_FIXTURE_MARKS", str(marks))
    src = ("import os\nimport numpy as np\nfrom numba import cuda\n\n"
           "def pipeline(x: open(os.environ['COURSE_FIXTURE_MARKS'] + '/annotation', 'w'), factor, n_streams,\n"
           "             kernel=open(os.environ['COURSE_FIXTURE_MARKS'] + '/default', 'w')):\n    return x\n")
    found = scan(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src)]))
    r = judge_isolated(found, E.get("08.pipeline"), 10)
    assert r["status"] == "rejected" and "default must be a plain number" in r["message"]
    stub = scan(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "def pipeline(x, factor, n_streams, kernel):\n    raise NotImplementedError('todo')\n")]))
    assert judge_isolated(stub, E.get("08.pipeline"), 10)["status"] == "not attempted"
    assert os.listdir(marks) == []
