"""What instructors do with a graded class: exports, shards, Gradescope and GitHub Classroom.

Built on the grader (:func:`course.grading.grade.grade`, :func:`~course.grading.grade.write_outputs`); the commands
below are parsed by :mod:`course.grading.cli`.

``python -m course.grade export GRADES_DIR --format canvas|moodle|nbgrader [--roster roster.csv]``
    writes ``GRADES_DIR/<format>.csv`` from ``GRADES_DIR/results.json``, one row per student, in the
    platform's import layout (see :data:`LAYOUTS`); scores are the sums of the exercises' scores per
    assignment (late work is marked in ``gradebook.csv`` and in nbgrader's ``timestamp``; no penalty is
    applied: that is the instructor's rule to set).
``python -m course.grade merge OUT SHARD_DIR...``
    joins the results of ``--shard i/n`` runs into one ``OUT/gradebook.csv`` and ``results.json``.
``python -m course.grade autograder --out autograder.zip``
    builds a Gradescope autograder (``setup.sh`` installs the course, ``run_autograder`` grades
    ``/autograder/submission`` on the CPU engine and writes ``/autograder/results/results.json``).
``python -m course.grade gradescope [--root DIR]``
    what ``run_autograder`` runs (``--root`` or ``COURSE_AUTOGRADER_ROOT``, default ``/autograder``).
``python -m course.grade classroom NOTEBOOK [--exercise NAME]``
    GitHub Classroom's command grader: prints each verdict and the points, exits 0 only when every
    (or the named) exercise has full marks.

The roster (optional) is a CSV with a ``student`` column (the folder name of nbgrader's layout, or the
name part of a flat file) and any of ``name``, ``first_name``, ``last_name``, ``email``, ``id``,
``sis_user_id``, ``sis_login_id``, ``section``, ``username``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import shutil
import sys
import tempfile
import zipfile
from collections import OrderedDict

from course.grading import grade as G

#: The header each export writes (tests check them against the platforms' documented layouts).
LAYOUTS = {
    # Canvas Gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then one column per
    # assignment (a new name creates the assignment); the second row may hold "Points Possible".
    "canvas": ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
    # Moodle "Import grades from CSV": any identifier column, mapped at import to username / email /
    # ID number; then one column per grade item.
    "moodle": ["Username", "Email address", "ID number"],
    # nbgrader export (its CsvExportPlugin): one row per student and assignment.
    "nbgrader": ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                 "raw_score", "late_submission_penalty", "score", "max_score"],
}


def load_results(grades_dir) -> dict:
    path = pathlib.Path(grades_dir) / "results.json"
    if not path.is_file():
        raise SystemExit(f"course.grade: no results.json in {grades_dir} (grade first: python -m course.grade PATH --out DIR)")
    return json.loads(path.read_text(encoding="utf-8"))


def load_roster(path) -> dict:
    """student -> {column: value} from a roster CSV (an empty dict without one)."""
    if not path:
        return {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if "student" not in (reader.fieldnames or []):
            raise SystemExit(f"course.grade: the roster {path} needs a `student` column (found {reader.fieldnames})")
        return {r["student"]: {k: (v or "") for k, v in r.items()} for r in reader}


def totals(results: dict) -> "OrderedDict":
    """(student, assignment) -> {score, max_score, late_minutes, submitted, submissions} summed over exercises.

    A student with several notebooks for one assignment (re-submissions) keeps the best one."""
    best = OrderedDict()
    for s in sorted(results["submissions"], key=lambda s: (s.get("student", ""), s.get("assignment", ""), s["submission"])):
        key = (s.get("student") or s["submission"], s.get("assignment") or "")
        score = sum(int(r["score"]) for r in s["exercises"])
        top = sum(int(r["max_score"]) for r in s["exercises"])
        entry = {"score": score, "max_score": top, "late_minutes": s.get("late_minutes", ""),
                 "submitted": s.get("submitted") or "", "submission": s["submission"]}
        if key not in best or score > best[key]["score"]:
            best[key] = entry
    return best


def export(grades_dir, fmt: str, roster_path=None) -> pathlib.Path:
    """Write ``GRADES_DIR/<fmt>.csv``; return its path."""
    if fmt not in LAYOUTS:
        raise SystemExit(f"course.grade export: --format must be one of {', '.join(LAYOUTS)} (got {fmt!r})")
    results = load_results(grades_dir)
    roster = load_roster(roster_path)
    tot = totals(results)
    students = sorted({k[0] for k in tot} | set(roster))
    assignments = sorted({k[1] for k in tot})
    top = {a: max((v["max_score"] for k, v in tot.items() if k[1] == a), default=0) for a in assignments}
    out = pathlib.Path(grades_dir) / f"{fmt}.csv"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    col = {a: a or "ungraded" for a in assignments}
    if fmt == "canvas":
        w.writerow(LAYOUTS["canvas"] + [col[a] for a in assignments])
        w.writerow(["Points Possible", "", "", "", ""] + [top[a] for a in assignments])
        for st in students:
            r = roster.get(st, {})
            name = r.get("name") or " ".join(x for x in (r.get("first_name"), r.get("last_name")) if x) or st
            w.writerow([name, r.get("id", ""), r.get("sis_user_id", ""), r.get("sis_login_id") or st,
                        r.get("section", "")] + [tot.get((st, a), {}).get("score", "") for a in assignments])
    elif fmt == "moodle":
        w.writerow(LAYOUTS["moodle"] + [col[a] for a in assignments])
        for st in students:
            r = roster.get(st, {})
            w.writerow([r.get("username") or st, r.get("email", ""), r.get("id", "")]
                       + [tot.get((st, a), {}).get("score", "") for a in assignments])
    else:  # nbgrader
        deadline = (results.get("grader") or {}).get("deadline") or ""
        w.writerow(LAYOUTS["nbgrader"])
        for (st, a), v in tot.items():
            r = roster.get(st, {})
            w.writerow([a, deadline, v["submitted"], st, r.get("last_name", ""), r.get("first_name", ""),
                        r.get("email", ""), v["score"], 0.0, v["score"], v["max_score"]])
    out.write_text(buf.getvalue(), encoding="utf-8")
    return out


# --------------------------------------------------------------------------------------------------
# Shards


def merge(out_dir, shard_dirs) -> list:
    """Join shard results into ``out_dir``; refuse shards graded with different settings or overlapping."""
    shards = [load_results(d) for d in shard_dirs]
    keys = ("cell_timeout", "timeout", "launch_timeout", "salt", "backend", "deadline")
    first = shards[0]["grader"]
    for d, s in zip(shard_dirs, shards):
        diff = [k for k in keys if s["grader"].get(k) != first.get(k)]
        if diff:
            raise SystemExit(f"course.grade merge: {d} was graded with other settings ({', '.join(diff)})")
    n = {tuple(s["grader"].get("shard") or (1, 1))[1] for s in shards}
    seen = {}
    subs = []
    for d, s in zip(shard_dirs, shards):
        for sub in s["submissions"]:
            if sub["submission"] in seen:
                raise SystemExit(f"course.grade merge: {sub['submission']} is in both {seen[sub['submission']]} and {d}")
            seen[sub["submission"]] = d
            subs.append(sub)
    got = sorted(tuple(s["grader"].get("shard") or (1, 1))[0] for s in shards)
    missing = sorted(set(range(1, max(n) + 1)) - set(got)) if len(n) == 1 else []
    subs.sort(key=lambda s: s["submission"])
    rows = [{"student": s.get("student", ""), "assignment": s.get("assignment", ""), "submission": s["submission"],
             "exercise": r["exercise"], "score": r["score"], "max_score": r["max_score"], "status": r["status"],
             "late": s.get("late_minutes", ""), "message": r["message"]} for s in subs for r in s["exercises"]]
    summary = {"grader": {**first, "shard": None, "merged_from": [str(d) for d in shard_dirs],
                          "shards_missing": missing,
                          "seconds": round(sum(s["grader"].get("seconds", 0) for s in shards), 1),
                          "grader_files_changed": sorted({f for s in shards for f in s["grader"].get("grader_files_changed", [])})},
               "submissions": subs}
    pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
    G.write_outputs(out_dir, rows, summary)
    if missing:
        print(f"warning: shards {missing} of {max(n)} are missing", file=sys.stderr)
    return rows


# --------------------------------------------------------------------------------------------------
# Gradescope


SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu, no GPU).
set -euo pipefail
apt-get install -y -qq python3 python3-venv python3-pip bubblewrap >/dev/null || apt-get install -y -qq python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q --upgrade pip
/autograder/venv/bin/pip install -q /autograder/source
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. COURSE_AUTOGRADER_ROOT and COURSE_AUTOGRADER_PYTHON exist for tests.
ROOT="${COURSE_AUTOGRADER_ROOT:-/autograder}"
PY="${COURSE_AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
cd "$ROOT/source" 2>/dev/null || cd "$ROOT"
export COURSE_BACKEND="${COURSE_BACKEND:-cpu}"
exec "$PY" -m course.grade gradescope --root "$ROOT"
"""


def build_autograder(out_zip, repo=None) -> pathlib.Path:
    """Write a Gradescope autograder zip: setup.sh, run_autograder and the course (code, exercises, data)."""
    repo = pathlib.Path(repo or os.environ.get("COURSE_GRADE_ROOT") or pathlib.Path(__file__).resolve().parents[2])
    out_zip = pathlib.Path(out_zip)
    skip = {"__pycache__", ".ipynb_checkpoints"}
    with zipfile.ZipFile(out_zip, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
        for top in ("course", "exercises", "data"):
            for p in sorted((repo / top).rglob("*")):
                if p.is_file() and not skip & set(p.parts) and not p.suffix == ".pyc":
                    z.write(p, str(p.relative_to(repo)))
        for f in ("pyproject.toml", "README.md"):
            if (repo / f).is_file():
                z.write(repo / f, f)
    return out_zip


def gradescope_results(results: dict) -> dict:
    """Gradescope's results.json from the grader's: one test per exercise (score, max_score, output)."""
    tests, total = [], 0
    for s in results["submissions"]:
        for r in s["exercises"]:
            if not r["exercise"]:
                tests.append({"name": f"{s['submission']}", "score": 0, "max_score": 0, "status": "failed",
                              "output": r["message"], "visibility": "visible"})
                continue
            out = r["message"]
            if r.get("hint"):
                out += f"\n\nHint: {r['hint']}"
            if r.get("seed") is not None:
                out += f"\n\n(inputs seeded with {r['seed']}, drawn from this submission and the run's secret salt)"
            tests.append({"name": r["exercise"], "number": r["exercise"].split(".")[0],
                          "score": int(r["score"]), "max_score": int(r["max_score"]),
                          "status": "passed" if int(r["score"]) == int(r["max_score"]) else "failed",
                          "output": out, "visibility": "visible"})
            total += int(r["score"])
    if not results["submissions"]:
        return {"score": 0, "output": "No notebook (.ipynb) was found in the submission: upload your notebook.",
                "tests": [], "visibility": "visible"}
    return {"score": total, "execution_time": int((results.get("grader") or {}).get("seconds", 0)),
            "output": "Graded by the course's grader on the CPU engine (every check of the notebook's check()).",
            "tests": tests, "visibility": "visible", "stdout_visibility": "hidden"}


def gradescope(root=None, jobs=1, own_process=False) -> int:
    root = pathlib.Path(root or os.environ.get("COURSE_AUTOGRADER_ROOT") or "/autograder")
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="course-gradescope-"))
    try:
        sub = root / "submission"
        G.grade([sub] if sub.exists() else [], work, jobs=jobs, quiet=True, own_process=own_process)
        results = load_results(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = gradescope_results(results)
    (results_dir / "results.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"score {out['score']} ({len(out['tests'])} tests)")
    return 0


# --------------------------------------------------------------------------------------------------
# GitHub Classroom


def classroom(paths, exercise=None, own_process=False, **opts) -> int:
    """Grade, print each verdict and ``Points a/b``; exit 0 only when every (or the named) exercise has full marks."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="course-classroom-"))
    try:
        rows = G.grade(paths, work, quiet=True, own_process=own_process, **opts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if exercise:
        rows = [r for r in rows if r["exercise"] == exercise]
        if not rows:
            print(f"no exercise {exercise} in {', '.join(map(str, paths))}")
            return 1
    score = sum(int(r["score"]) for r in rows)
    top = sum(int(r["max_score"]) for r in rows)
    for r in rows:
        mark = "PASS" if int(r["score"]) == int(r["max_score"]) and int(r["max_score"]) > 0 else "FAIL"
        print(f"{mark} {r['exercise'] or r['submission']}: {r['score']}/{r['max_score']} {r['message']}")
    print(f"Points {score}/{top}")
    return 0 if rows and score == top and top > 0 else 1
