"""A graded kernel may call the course's 16-byte load intrinsics, and no other function of the course (issue 25).

``course.exercises.lint.PUBLIC_DEVICE_FUNCTIONS`` lists them (``course.kernels.reduction.load_float4`` and
``course.kernels.vector``'s loads): hardware intrinsics that are no exercise's answer. The grader's source scan
(course.grading.source) binds a submission's import of one to the grader's own copy, the lint lets the kernel call
it, and ``check()``'s lint of a live kernel does the same; every other function of ``course`` (a reference kernel, a
device function that is half an answer) stays refused with the lint's message. What each case must give is written
here from what the kernel does, not from the grader's output.
"""

import json
import os
import pathlib
import subprocess
import sys

import nbformat
import numpy as np
import pytest

from course import exercises as E
from course.grading.source import Rejected, compile_target, scan

ROOT = pathlib.Path(__file__).resolve().parents[1]

HEAD = "import course\nfrom numba import cuda, float32"

# thread q adds float4 number q with one atomic (the function it calls is named F, bound by the import under test)
CALLS_F = '''
@cuda.jit
def float4_warp_sum(a, out):
    q = cuda.grid(1)
    if q < a.shape[0] // 4:
        x, y, z, w = F(a, q)
        cuda.atomic.add(out, 0, (x + y) + (z + w))
'''

# the exercise's answer (07.float4_warp_sum), calling the intrinsic under the name `load4_of`
ANSWER = '''
@cuda.jit
def float4_warp_sum(a, out):
    q = cuda.grid(1)
    n4 = a.shape[0] // 4
    v = float32(0)
    if q < n4:
        x, y, z, w = load4_of(a, q)
        v = (x + y) + (z + w)
    if 4 * n4 + q < a.shape[0]:
        v += a[4 * n4 + q]
    for off in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
    if cuda.laneid == 0 and (q < n4 or 4 * n4 + q < a.shape[0]):
        cuda.atomic.add(out, 0, v)
'''


def _notebook(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def _compiled(import_line, kernel=CALLS_F):
    return compile_target(scan(_notebook(HEAD, import_line, kernel)), E.get("07.float4_warp_sum"))


@pytest.mark.parametrize("import_line", [
    "from course.kernels.reduction import load_float4 as F",
    "from course.kernels.reduction import load_float4\nF = 1\nfrom course.kernels.reduction import load_float4 as F",
])
def test_a_kernel_may_call_load_float4_under_any_name(import_line):
    kernel = _compiled(import_line)
    a = np.arange(1, 1031, dtype=np.float32)  # 1030: 257 float4s, a tail of 2 this kernel leaves out
    out = np.zeros(1, np.float32)
    kernel[2, 256](a, out)
    assert out[0] == a[:1028].sum()  # it ran the grader's load_float4: every float4 added once


@pytest.mark.parametrize("module, name", [(m, n) for m, names in E.PUBLIC_DEVICE_FUNCTIONS.items() for n in names])
def test_every_listed_intrinsic_is_accepted(module, name):
    kernel = '''
@cuda.jit
def float4_warp_sum(a, out):
    if cuda.grid(1) == 0:
        out[0] = F
'''
    # named, not called: the lint accepts the name; what it returns is the intrinsic's business (tested above)
    assert _compiled(f"from {module} import {name} as F", kernel) is not None


@pytest.mark.parametrize("import_line", [
    "from course.kernels.reduction import float4_or_tail as F",  # a device function of the chapter: half an answer
    "from course.kernels.reduction import atomic_float4 as F",  # a reference kernel
    "from course.kernels.reduction import load_sum4 as F",  # another device function that loads 16 bytes
    "from course.kernels.vector import gstore4 as F",  # an intrinsic that is not on the list
    "from course.kernels.vector import vector_load as F",  # host code that makes intrinsics
])
def test_any_other_function_of_the_course_is_refused_as_before(import_line):
    with pytest.raises(Rejected) as err:
        _compiled(import_line)
    assert err.value.status == "rejected"
    # cell 2 (cells count from 0), line 5: the call F(a, q) (the cell's leading blank line is not counted)
    assert "cell 2, line 5 (in float4_warp_sum): `F` is not defined, or is not something a kernel can use" in str(err.value)


def test_a_listed_name_from_another_module_is_not_trusted():
    # load_float4 is trusted as course.kernels.reduction's; a module of the grader's that had the same name is not
    with pytest.raises(Rejected) as err:
        _compiled("from course.exercises.catalogue.ch07 import load_float4 as F")
    assert "which is the grader's" in str(err.value)


def _module(tmp_path, name, import_line):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + "\n" + import_line + "\n" + CALLS_F)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_checks_lint_accepts_load_float4_and_still_refuses_another_course_function(tmp_path):
    from course.exercises.lint import kernel_source_problems
    from course.kernels import reduction as R

    # load_float4 is a plain Python function on the CPU engine (an intrinsic on a GPU): listed, so a kernel may call it
    assert kernel_source_problems(R.atomic_float4) == []
    assert kernel_source_problems(_module(tmp_path, "k_listed", "from course.kernels.reduction import load_float4 "
                                                                "as F").float4_warp_sum) == []
    problems = kernel_source_problems(_module(tmp_path, "k_other", "from course.kernels.vector import vector_load "
                                                                   "as F").float4_warp_sum)
    # line 9 of the file: two lines of HEAD, the import, CALLS_F's blank first line, the decorator, def, q, if, the call
    assert [line for line, _ in problems] == [9] and "`F` is not defined" in problems[0][1], problems


def _class_notebook(path, *cells):
    nb = _notebook(*cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.mark.timeout(240)
def test_the_grader_grades_a_submission_that_calls_load_float4(tmp_path):
    subs = tmp_path / "class"
    subs.mkdir()
    # alice imports it under another name and writes the exercise's answer; bob imports a chapter device function
    _class_notebook(subs / "alice_07_reduction.ipynb", HEAD, "from course.kernels.reduction import load_float4 as load4_of",
                    ANSWER)
    _class_notebook(subs / "bob_07_reduction.ipynb", HEAD, "from course.kernels.reduction import float4_or_tail as F",
                    CALLS_F)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "course.grade", str(subs), "--out", str(out), "--jobs", "2",
                           "--cell-timeout", "20", "--timeout", "120", "--launch-timeout", "20"],
                          cwd=ROOT, capture_output=True, text=True, timeout=230, env={**os.environ, "COURSE_STRICT": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    rows = {(s["submission"].split("_")[0], r["exercise"]): r for s in results["submissions"] for r in s["exercises"]}
    alice, bob = rows[("alice", "07.float4_warp_sum")], rows[("bob", "07.float4_warp_sum")]
    assert alice["status"] == "pass" and alice["score"] == alice["max_score"] > 0, alice
    assert bob["status"] == "rejected" and bob["score"] == 0, bob
    assert "`F` is not defined, or is not something a kernel can use" in bob["message"], bob
