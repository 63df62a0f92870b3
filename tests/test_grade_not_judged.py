"""course.grade and the checks a machine cannot judge (03.bin_counts' local bytes without the CUDA compiler)."""

import json

import nbformat

import course  # noqa: F401

BIN_COUNTS_IN_REGISTERS = '''import course
from numba import cuda, int32


@cuda.jit
def bin_counts(x, out):
    i = cuda.grid(1)
    if i < x.shape[1]:
        for b in range(16):
            c = 0
            for k in range(x.shape[0]):
                if x[k, i] == b:
                    c += 1
            out[b, i] = c
'''


def test_the_grader_names_the_checks_this_machine_could_not_judge(tmp_path, monkeypatch):
    """A check left out of the score (no CUDA compiler here) is listed in results.json, so an instructor knows
    that another grading machine would count it."""
    from course.grading import grade as G
    from course.trace import compiler_typing

    monkeypatch.setattr(compiler_typing, "gpu_resources", lambda fn, argtypes: None)
    monkeypatch.setattr(compiler_typing, "resources_why", lambda fn, argtypes: "ptxas was not found")
    sub = tmp_path / "alice"
    sub.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BIN_COUNTS_IN_REGISTERS)])
    nbformat.write(nb, sub / "03_memory_coalescing_exercises.ipynb")
    rows = G.grade([str(tmp_path)], str(tmp_path / "out"), jobs=1)
    mine = [r for r in rows if r["exercise"] == "03.bin_counts"]
    assert mine and mine[0]["status"] == "pass" and "not judged here" in mine[0]["message"], mine
    summary = json.loads((tmp_path / "out" / "results.json").read_text())
    nj = summary["grader"]["not_judged"]
    assert len(nj) == 1 and nj[0].startswith("03.bin_counts: no local memory"), nj
