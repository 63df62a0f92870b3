"""``exercises/`` from ``solutions/``: every ``# BEGIN SOLUTION`` … ``# END SOLUTION`` block becomes a stub."""

from __future__ import annotations

import argparse
import pathlib
import re

from course import chapters
from course.exercises.registry import EXERCISES, by_target

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
EXERCISES_DIR = ROOT / "exercises"


def chapter_stem(name: str) -> str:
    """``07_reduction`` for ``07_reduction_exercises.ipynb`` or ``07_reduction_solutions.ipynb`` (a path's name).

    exercises/07_reduction_exercises.ipynb comes from solutions/07_reduction_solutions.ipynb (course.chapters says
    why the names differ); the grader still reads the chapter from the leading number."""
    for suffix in (chapters.EXERCISES_SUFFIX, chapters.SOLUTIONS_SUFFIX, ".ipynb"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


# exercises/ from solutions/


# What every notebook of the course says about its kernel, the chapters' metadata: with language_info
# complete, JupyterLab does not mark a notebook modified as soon as its kernel starts (it fills in what is
# missing).  tests/test_exercises.py checks that chapters, solutions and exercises all carry it.
KERNEL_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                      "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                      "pygments_lexer": "ipython3", "version": "3.11.7"},
}

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION\b.*$")
END = re.compile(r"^[ \t]*# END SOLUTION\b.*$")


def _stub_hint(before: str) -> str:
    """The stub hint for a solution block: the exercise whose function encloses it, else a generic one."""
    defs = re.findall(r"^\s*def\s+(\w+)\s*\(", before, re.M)
    for target in reversed(defs):
        ex = by_target(target)
        if ex:
            return f"{ex.name}: {ex.stub_hint}"
    return "write your code here"


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace every ``# BEGIN SOLUTION`` … ``# END SOLUTION`` block with a stub that raises NotImplementedError."""
    out, lines, i = [], source.splitlines(), 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            if END.match(lines[i]):
                raise ValueError(f"{where}: '# END SOLUTION' without a '# BEGIN SOLUTION' before it")
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not END.match(lines[j]):
            if BEGIN.match(lines[j]):
                raise ValueError(f"{where}: '# BEGIN SOLUTION' inside another solution block (line {j + 1})")
            j += 1
        if j == len(lines):
            raise ValueError(f"{where}: '# BEGIN SOLUTION' at line {i + 1} has no '# END SOLUTION'")
        hint = _stub_hint("\n".join(lines[:i]))
        out.append(f"{m.group('indent')}raise NotImplementedError({hint!r})")
        i = j + 1
    return "\n".join(out)


def exercise_notebook(solution_nb):
    """The exercise notebook for a solution notebook: solutions stubbed, outputs removed, marked as an exercise."""
    import copy

    nb = copy.deepcopy(solution_nb)
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source, f"cell {k}")
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    for key, value in KERNEL_METADATA.items():
        nb.metadata[key] = copy.deepcopy(value)
    nb.metadata.setdefault("course", {})["generated_from"] = "solutions/ by python -m course.exercises build"
    return nb


def build(check_only: bool = False, solutions=SOLUTIONS, exercises=EXERCISES_DIR) -> list:
    """Write exercises/NN_topic_exercises.ipynb from solutions/NN_topic_solutions.ipynb; with ``check_only``, return
    the drifted files instead."""
    import nbformat

    drift = []
    exercises = pathlib.Path(exercises)
    wanted = set()
    for src in sorted(pathlib.Path(solutions).glob("*.ipynb")):
        if not src.name.endswith(chapters.SOLUTIONS_SUFFIX):
            raise SystemExit(f"{src}: a solution notebook's name ends in {chapters.SOLUTIONS_SUFFIX} (its exercise "
                             f"notebook is named after it); rename it {src.stem}{chapters.SOLUTIONS_SUFFIX}")
        nb = nbformat.read(src, as_version=4)
        text = nbformat.writes(exercise_notebook(nb)) + "\n"
        dst = exercises / (chapter_stem(src.name) + chapters.EXERCISES_SUFFIX)
        wanted.add(dst.name)
        current = dst.read_text(encoding="utf-8") if dst.exists() else None
        if current != text:
            drift.append(str(dst.relative_to(exercises.parent)) if exercises.parent in dst.parents else str(dst))
            if not check_only:
                exercises.mkdir(parents=True, exist_ok=True)
                dst.write_text(text, encoding="utf-8")
    for extra in sorted(pathlib.Path(exercises).glob("*.ipynb")):
        if extra.name not in wanted:
            drift.append(f"{extra} (no solution notebook {chapter_stem(extra.name)}{chapters.SOLUTIONS_SUFFIX})")
    return drift


def main(argv=None) -> int:
    """``python -m course.exercises build [--check] | list``."""
    p = argparse.ArgumentParser(prog="python -m course.exercises", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="generate exercises/*.ipynb from solutions/*.ipynb")
    b.add_argument("--check", action="store_true", help="change nothing; exit 1 if exercises/ has drifted")
    sub.add_parser("list", help="list the exercises by chapter")
    args = p.parse_args(argv)
    if args.cmd == "list":
        for ex in EXERCISES.values():
            print(f"{ex.name:24} {ex.max_score} pts  {ex.title}")
        return 0
    drift = build(check_only=args.check)
    if args.check:
        if drift:
            print("exercises/ is out of step with solutions/: " + ", ".join(drift)
                  + "\nRun `python -m course.exercises build` (or `make exercises`) and commit the result.")
            return 1
        print("exercises/ matches solutions/.")
        return 0
    print("wrote " + (", ".join(drift) if drift else "nothing (already up to date)"))
    return 0

