"""A determined class (issue 27): wrong solutions that must not get full marks, hostile cells that must cost only
themselves.

tests/fixtures/submissions/cheats/ holds one notebook per class of cheat, each kernel with a comment saying what
is wrong with it. They are judged as the grader judges a submission (course.grade.judge_submission: found in the
source, linted, compiled, judged in a forked process), without running the notebook. What each row must say is
written here from what each cheat does, not from the grader's output.
"""

import pathlib


ROOT = pathlib.Path(__file__).resolve().parents[1]
CHEATS = ROOT / "tests" / "fixtures" / "submissions" / "cheats"


def _judged(name, **opts):
    from course.grade import judge_submission

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
    for name, line in [("06.sum_grid_stride", "`out[0] += s`"), ("07.tree_sum", "`out[0] += s[0]`"),
                       ("02.count_positive", "`out[0] += cuda.popc(mask)`")]:
        msg = rows[name]["message"]
        assert "no race between threads" in msg and "race on global array `out`" in msg and line in msg, msg
    # the plain += in a reduction gives a wrong sum in another thread order as well: the message says which
    assert "correct in another thread order" in rows["06.sum_grid_stride"]["message"]
