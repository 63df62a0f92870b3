"""The grader's command line: ``python -m course.grade PATH... --out DIR`` and its other commands.

``PATH... --out DIR`` grades (:func:`course.grading.grade.grade`); ``export``, ``merge``, ``autograder``,
``gradescope`` and ``classroom`` are what instructors do with a graded class (:mod:`course.grading.gradebook`,
``docs/instructors.md``). ``python -m course.grade`` and ``python -m course.grading.grade`` both run this module.
It sits above the grader and its exports, which import neither it nor each other's command line.
"""

from __future__ import annotations

import os
import sys


def _fresh_copy_and_reexec():
    """``python -m course.grade`` re-runs itself once on a fresh copy of the course with bytecode off.

    A ``.pyc`` planted in ``course/__pycache__`` would otherwise be imported by the next run's judge; the
    copy has no ``__pycache__`` and ``-B`` writes none, so the judge's code comes from source."""
    import shutil
    import tempfile

    if os.environ.get("COURSE_GRADE_FRESH") or (len(sys.argv) > 1 and sys.argv[1] in (
            "export", "merge", "autograder", "-h", "--help")):
        return
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    scratch = tempfile.mkdtemp(prefix="course-grader-")
    shutil.copytree(pkg, os.path.join(scratch, "course"), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for root, _dirs, files in os.walk(scratch):
        for f in files:
            os.chmod(os.path.join(root, f), 0o444)
    pypath = os.pathsep.join([scratch] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x])
    env = dict(os.environ, PYTHONPATH=pypath, COURSE_GRADE_FRESH=scratch, PYTHONDONTWRITEBYTECODE="1")
    # the CUDA driver's JIT cache (else ~/.nv/ComputeCache) goes with the copy: set before the driver starts
    env["CUDA_CACHE_PATH"] = os.path.join(scratch, "cuda-cache")
    repo = os.path.dirname(pkg)
    for extra in ("data", "exercises"):  # data, not code: compiler facts, the exercise notebooks' names
        if os.path.isdir(os.path.join(repo, extra)):
            os.symlink(os.path.join(repo, extra), os.path.join(scratch, extra))
    env["COURSE_GRADE_ROOT"] = repo
    # the copy must come first on sys.path: ahead of the current folder (which `-m` would put first)
    boot = (f"import sys, runpy; sys.path.insert(0, {scratch!r}); sys.argv[0] = 'course.grade'; "
            "runpy.run_module('course.grading.cli', run_name='__main__', alter_sys=True)")
    os.execve(sys.executable, [sys.executable, "-B", "-c", boot, *sys.argv[1:]], env)


if __name__ == "__main__":
    _fresh_copy_and_reexec()

import argparse  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402

from course import exercises as ex_mod  # noqa: E402
from course.grading import grade as G  # noqa: E402
from course.grading import gradebook  # noqa: E402
from course.grading.notebook import remove_driver_cache_dirs  # noqa: E402
from course.grading.roster import parse_time  # noqa: E402

COMMANDS = ("export", "merge", "autograder", "gradescope", "classroom")


def _parse_shard(text):
    m = re.fullmatch(r"(\d+)/(\d+)", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise argparse.ArgumentTypeError(f"--shard wants i/n with 1 <= i <= n (got {text!r})")
    return int(m.group(1)), int(m.group(2))


def _parse_deadline(text):
    try:
        return parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--deadline wants an ISO date and time, e.g. 2026-12-01T23:59:00+08:00 "
                                         f"(got {text!r})") from None


def grading_arguments(p: argparse.ArgumentParser):
    """The options of every command that grades (``PATH... --out DIR`` and ``classroom``)."""
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    p.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per notebook cell (default 30)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per whole notebook run (default 300)")
    p.add_argument("--launch-timeout", type=float, default=None,
                   help=f"seconds one launch of a learner's kernel may take while judged (default {ex_mod.LAUNCH_TIME_LIMIT:g})")
    p.add_argument("--salt", "--seed", dest="salt", default=None,
                   help="salt for every submission's random inputs and property sizes (default: a secret one drawn "
                        "for this run; either way recorded in results.json, so --salt SALT regrades it exactly)")


def instructor_command(argv) -> int:
    """``export``, ``merge``, ``autograder``, ``gradescope``, ``classroom`` (``argv[0]``), run from their arguments."""
    cmd, rest = argv[0], argv[1:]
    if cmd == "export":
        p = argparse.ArgumentParser(prog="python -m course.grade export")
        p.add_argument("grades_dir")
        p.add_argument("--format", required=True, choices=sorted(gradebook.LAYOUTS))
        p.add_argument("--roster", default=None, help="CSV with a student column (names, emails, SIS ids)")
        a = p.parse_args(rest)
        print(f"wrote {gradebook.export(a.grades_dir, a.format, a.roster)}")
        return 0
    if cmd == "merge":
        p = argparse.ArgumentParser(prog="python -m course.grade merge")
        p.add_argument("out")
        p.add_argument("shards", nargs="+")
        a = p.parse_args(rest)
        rows = gradebook.merge(a.out, a.shards)
        print(f"wrote {os.path.join(a.out, 'gradebook.csv')} ({len(rows)} rows from {len(a.shards)} shards)")
        return 0
    if cmd == "autograder":
        p = argparse.ArgumentParser(prog="python -m course.grade autograder")
        p.add_argument("--out", default="autograder.zip")
        a = p.parse_args(rest)
        print(f"wrote {gradebook.build_autograder(a.out)}")
        return 0
    if cmd == "gradescope":
        p = argparse.ArgumentParser(prog="python -m course.grade gradescope")
        p.add_argument("--root", default=None)
        p.add_argument("--jobs", type=int, default=1)
        a = p.parse_args(rest)
        return gradebook.gradescope(a.root, a.jobs, own_process=True)
    if cmd == "classroom":
        p = argparse.ArgumentParser(prog="python -m course.grade classroom")
        p.add_argument("paths", nargs="+")
        p.add_argument("--exercise", default=None, help="only this exercise decides the exit status")
        grading_arguments(p)
        a = p.parse_args(rest)
        return gradebook.classroom(a.paths, a.exercise, own_process=True, jobs=a.jobs, cell_timeout=a.cell_timeout,
                                   timeout=a.timeout, launch_timeout=a.launch_timeout, salt=a.salt)
    raise SystemExit(f"course.grade: unknown command {cmd}")


def main(argv=None) -> int:
    """Command line: ``python -m course.grade PATH... --out DIR [--jobs N] [--shard i/n] [--deadline T] ...``;
    ``export``, ``merge``, ``autograder``, ``gradescope``, ``classroom``: see :mod:`course.grading.gradebook`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] and argv[0] in COMMANDS:
            return instructor_command(argv)
        p = argparse.ArgumentParser(prog="python -m course.grade", description=G.__doc__.splitlines()[0],
                                    epilog="other commands: export, merge, autograder, gradescope, classroom "
                                           "(python -m course.grade COMMAND --help)")
        p.add_argument("paths", nargs="+", help="notebooks, or folders searched for *.ipynb")
        p.add_argument("--out", required=True, help="folder for gradebook.csv and results.json")
        grading_arguments(p)
        p.add_argument("--shard", type=_parse_shard, default=None, help="grade only shard i of n (e.g. 2/8)")
        p.add_argument("--deadline", type=_parse_deadline, default=None,
                       help="mark work submitted after this time late (ISO 8601; no zone = UTC)")
        args = p.parse_args(argv)
        if args.shard and args.salt is None:
            p.error("--shard needs --salt SALT, the same in every shard (merge checks), e.g. a secrets.token_hex(16)")
        missing = [x for x in args.paths if not os.path.lexists(x)]
        if missing:
            print(f"course.grade: no such file or folder: {', '.join(missing)}", file=sys.stderr)
            return 2
        rows = G.grade(args.paths, args.out, jobs=args.jobs, cell_timeout=args.cell_timeout, timeout=args.timeout,
                       launch_timeout=args.launch_timeout, shard=args.shard, deadline=args.deadline, salt=args.salt,
                       own_process=True)
        width = max((len(r["submission"]) for r in rows), default=10)
        for r in rows:
            line = (f"{r['submission']:{width}}  {r['exercise']:22}  {r['score']}/{r['max_score']}  {r['status']:13} "
                    f"{r['message'][:90]}")
            print(line.encode("utf-8", "backslashreplace").decode("utf-8"))
        print(f"wrote {os.path.join(args.out, 'gradebook.csv')} and results.json ({len(rows)} rows)")
        return 0
    finally:
        fresh = os.environ.get("COURSE_GRADE_FRESH")
        if fresh and os.path.basename(fresh).startswith("course-grader-") and __name__ == "__main__":
            for root, _dirs, _files in os.walk(fresh):
                os.chmod(root, 0o755)
            shutil.rmtree(fresh, ignore_errors=True)
        if __name__ == "__main__":
            remove_driver_cache_dirs()


if __name__ == "__main__":
    sys.exit(main())
