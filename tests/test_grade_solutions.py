"""The grader end to end on solutions/: every exercise's solution, graded by the command an instructor runs (a fresh
Jupyter kernel per notebook, ``--jobs 2``), scores full marks, and no solution or grader file is changed.  Apart from
tests/test_grade.py's run over the fixtures so that the two runs, the suite's longest, can go to two workers."""

from test_grade import FIELDS, ROOT, grade_run

import pytest

N_SOLUTIONS = len(list((ROOT / "solutions").glob("*.ipynb")))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_run([ROOT / "solutions"], tmp_path_factory.mktemp("grade_solutions"))


def test_a_row_per_exercise_of_every_solution_notebook(graded):
    assert graded["header"] == FIELDS
    assert len({r["submission"] for r in graded["rows"]}) == N_SOLUTIONS
    assert graded["results"]["grader"]["jobs"] == 2
    for s in graded["results"]["submissions"]:
        assert s["exercises"], s["submission"]


def test_every_solution_scores_full_marks(graded):
    from course.exercises import EXERCISES

    assert len(graded["rows"]) == len(EXERCISES)  # every registered exercise has its solution
    for r in graded["rows"]:
        assert r["status"] == "pass" and r["score"] == r["max_score"] and int(r["score"]) > 0, r


def test_no_solution_or_grader_file_was_changed(graded):
    assert graded["before"] == graded["after"]
    assert all(s["unchanged"] for s in graded["results"]["submissions"])
    assert not [f for f in graded["results"]["grader"]["grader_files_changed"] if f.startswith("exercises")]
