"""Exports for LMS imports, Gradescope's autograder and GitHub Classroom's command grader.

The layouts are the platforms' documented import formats (written out here, not read from the code):
Canvas's gradebook CSV (Student, ID, SIS User ID, SIS Login ID, Section, then one column per assignment,
an optional "Points Possible" row), Moodle's CSV grade import (an identifier column mapped at import,
then one column per grade item), nbgrader's ``export`` CSV, and Gradescope's results.json
(``tests`` with ``score``, ``max_score``, ``output``).
"""

import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "fixtures" / "submissions" / "hostile"


def _results(tmp_path):
    """A results.json as the grader writes it: two students, two assignments, a re-submission, a late one."""
    def sub(student, assignment, label, scores, late=0, submitted="2026-11-30T10:00:00+00:00"):
        return {"submission": label, "student": student, "assignment": assignment, "late_minutes": late,
                "submitted": submitted, "sha256": "0" * 64,
                "exercises": [{"exercise": e, "score": s, "max_score": m, "status": "pass" if s == m else "fail",
                               "message": "m", "seed": 7} for e, s, m in scores]}

    results = {"grader": {"deadline": "2026-11-30T12:00:00+00:00", "seconds": 3.0},
               "submissions": [
                   sub("alice", "01_programming_model", "alice/01_programming_model/a.ipynb",
                       [("01.vector_add", 3, 3), ("01.matrix_add", 2, 3)]),
                   sub("alice", "05_transpose", "alice/05_transpose/a.ipynb", [("05.transpose_padded", 7, 7)]),
                   sub("bob", "01_programming_model", "bob/01_programming_model/old.ipynb",
                       [("01.vector_add", 0, 3), ("01.matrix_add", 0, 3)]),
                   sub("bob", "01_programming_model", "bob/01_programming_model/new.ipynb",
                       [("01.vector_add", 3, 3), ("01.matrix_add", 3, 3)], late=150,
                       submitted="2026-11-30T14:30:00+00:00"),
               ]}
    (tmp_path / "results.json").write_text(json.dumps(results))
    return results


def _read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _export(tmp_path, fmt, *extra):
    from course.grading.cli import main

    assert main(["export", str(tmp_path), "--format", fmt, *extra]) == 0
    return _read(tmp_path / f"{fmt}.csv")


def test_canvas_layout(tmp_path):
    _results(tmp_path)
    (tmp_path / "roster.csv").write_text("student,name,sis_login_id,section,id\nalice,Alice Li,ali,L1,101\n"
                                         "carol,Carol Wu,cwu,L2,103\n")
    rows = _export(tmp_path, "canvas", "--roster", str(tmp_path / "roster.csv"))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_programming_model", "05_transpose"]
    assert rows[1] == ["Points Possible", "", "", "", "", "6", "7"]
    by = {r[0]: r for r in rows[2:]}
    assert by["Alice Li"] == ["Alice Li", "101", "", "ali", "L1", "5", "7"]
    assert by["bob"][3] == "bob" and by["bob"][5:] == ["6", ""]  # the best of two submissions; no 05 submitted
    assert by["Carol Wu"][5:] == ["", ""]  # on the roster, nothing submitted: empty, not 0


def test_moodle_layout(tmp_path):
    _results(tmp_path)
    (tmp_path / "roster.csv").write_text("student,email,id\nalice,alice@uni.edu,S1\n")
    rows = _export(tmp_path, "moodle", "--roster", str(tmp_path / "roster.csv"))
    assert rows[0] == ["Username", "Email address", "ID number", "01_programming_model", "05_transpose"]
    assert rows[1] == ["alice", "alice@uni.edu", "S1", "5", "7"] and rows[2] == ["bob", "", "", "6", ""]


def test_nbgrader_layout(tmp_path):
    _results(tmp_path)
    rows = _export(tmp_path, "nbgrader")
    assert rows[0] == ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                       "raw_score", "late_submission_penalty", "score", "max_score"]
    by = {(r[3], r[0]): r for r in rows[1:]}
    assert by[("bob", "01_programming_model")][1:3] == ["2026-11-30T12:00:00+00:00", "2026-11-30T14:30:00+00:00"]
    assert by[("bob", "01_programming_model")][7:] == ["6", "0.0", "6", "6"]
    assert by[("alice", "05_transpose")][7:] == ["7", "0.0", "7", "7"]
    assert len(rows) == 4


def test_export_says_what_is_missing(tmp_path):
    p = subprocess.run([sys.executable, "-m", "course.grading.grade", "export", str(tmp_path), "--format", "canvas"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "no results.json" in p.stderr


def test_gradescope_results_schema(tmp_path):
    from course.grading.gradebook import gradescope_results

    out = gradescope_results(_results(tmp_path))
    assert out["score"] == 3 + 2 + 7 + 0 + 0 + 3 + 3
    t = out["tests"][1]
    assert t["name"] == "01.matrix_add" and (t["score"], t["max_score"], t["status"]) == (2, 3, "failed")
    assert "seeded with 7" in t["output"]
    assert all({"name", "score", "max_score", "output"} <= set(x) for x in out["tests"])
    empty = gradescope_results({"grader": {}, "submissions": []})
    assert empty["score"] == 0 and "No notebook" in empty["output"]


def test_gradescope_autograder_runs_against_a_root(tmp_path):
    z = tmp_path / "autograder.zip"
    p = subprocess.run([sys.executable, "-m", "course.grading.grade", "autograder", "--out", str(z)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    root = tmp_path / "autograder"
    with zipfile.ZipFile(z) as f:
        names = f.namelist()
        assert {"setup.sh", "run_autograder", "pyproject.toml", "course/grading/grade.py"} <= set(names)
        assert not any("__pycache__" in n for n in names)
        assert (f.getinfo("run_autograder").external_attr >> 16) & 0o111
        f.extractall(root / "source")
    # Gradescope copies run_autograder to /autograder and the submission to /autograder/submission
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    (root / "submission").mkdir()
    shutil.copy(HOSTILE / "z_victim_01_programming_model.ipynb", root / "submission" / "my work.ipynb")
    env = {**os.environ, "COURSE_AUTOGRADER_ROOT": str(root), "COURSE_AUTOGRADER_PYTHON": sys.executable}
    env.pop("COURSE_STRICT", None)
    p = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads((root / "results" / "results.json").read_text())
    assert [t["name"] for t in out["tests"]] == ["01.vector_add", "01.matrix_add"]  # from its metadata
    tests = {t["name"]: t for t in out["tests"]}
    assert (tests["01.vector_add"]["score"], tests["01.vector_add"]["max_score"]) == (3, 3)
    assert tests["01.matrix_add"]["score"] == tests["01.matrix_add"]["max_score"], tests["01.matrix_add"]  # right too
    assert tests["01.vector_add"]["status"] == "passed" and "seeded with" in tests["01.vector_add"]["output"]
    assert out["score"] == sum(t["score"] for t in out["tests"])


def test_classroom_command_mode(tmp_path):
    nb = tmp_path / "01_programming_model.ipynb"
    shutil.copy(HOSTILE / "default_arg_01.ipynb", nb)  # vector_add right, matrix_add refused
    env = {**os.environ}
    env.pop("COURSE_STRICT", None)

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "course.grading.grade", "classroom", str(nb), "--timeout", "60", *extra],
                              cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)

    p = run()
    assert p.returncode == 1 and "FAIL 01.matrix_add: 0/3" in p.stdout, p.stdout + p.stderr
    assert "PASS 01.vector_add: 3/3" in p.stdout


def test_classroom_exit_status_follows_the_named_exercise(monkeypatch, capsys):
    from course.grading import gradebook
    from course.grading import grade as G

    rows = [{"submission": "a.ipynb", "exercise": "01.vector_add", "score": 0, "max_score": 3, "message": "no"},
            {"submission": "a.ipynb", "exercise": "01.matrix_add", "score": 3, "max_score": 3, "message": "ok"}]
    monkeypatch.setattr(G, "grade", lambda paths, out, quiet=True, own_process=False, **k: rows)
    assert gradebook.classroom(["a.ipynb"], "01.matrix_add") == 0
    assert gradebook.classroom(["a.ipynb"], "01.vector_add") == 1
    assert gradebook.classroom(["a.ipynb"]) == 1
    assert gradebook.classroom(["a.ipynb"], "09.nothing") == 1
    assert "Points 3/3" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["canvas", "moodle", "nbgrader"])
def test_export_of_an_empty_class(tmp_path, fmt):
    (tmp_path / "results.json").write_text(json.dumps({"grader": {}, "submissions": []}))
    rows = _export(tmp_path, fmt)
    assert len(rows) >= 1
