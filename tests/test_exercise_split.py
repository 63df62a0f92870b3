"""Exercise 11.split_sum: the solution scores full marks; each wrong split fails for its own reason."""

import ast
import json
import pathlib
import textwrap

import pytest

import course
from course import exercises, multigpu
from course.exercises.catalogue import ch11

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _solution_source() -> str:
    nb = json.loads((ROOT / "solutions" / "11_multi_gpu_solutions.ipynb").read_text())
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if src.startswith("def split_sum"):
            return src
    raise AssertionError("solutions/11_multi_gpu_solutions.ipynb has no split_sum cell")


def _compile(source: str):
    tree = ast.parse(textwrap.dedent(source))
    return ch11.compile_split(tree.body[0])


SOLUTION = _solution_source()


def _variant(old: str, new: str):
    assert old in SOLUTION, old
    return _compile(SOLUTION.replace(old, new))


def test_the_solution_scores_full_marks():
    v = exercises.judge(exercises.get("11.split_sum"), _compile(SOLUTION), seed=1)
    assert v.status == "pass" and v.score == v.max_score == 4, v.message


@pytest.mark.skipif(course.on_gpu(), reason="simulate() exists on the CPU backend only")
def test_the_judge_leaves_the_notebooks_devices_as_they_were():
    multigpu.simulate(2)
    exercises.judge(exercises.get("11.split_sum"), _compile(SOLUTION), seed=2)
    assert multigpu.device_count() == 2


def test_judging_touches_no_device_of_numba(monkeypatch):
    # the grader judges in a forked process, where a CUDA driver the parent initialised cannot be used: the
    # judge's devices are its own (as many as the weights), whatever numba's cuda offers on this machine
    from numba import cuda

    def no_device(*args, **kwargs):
        raise AssertionError("the judge used numba's devices")

    for name in ("to_device", "device_array", "synchronize", "select_device"):
        monkeypatch.setattr(cuda, name, no_device)
    monkeypatch.setattr(multigpu, "device_count", no_device)
    v = exercises.judge(exercises.get("11.split_sum"), _compile(SOLUTION), seed=8)
    assert v.status == "pass" and v.score == v.max_score == 4, v.message


def test_a_partial_no_block_wrote_is_not_zero():
    # one block too few: on a GPU the last partial is whatever the memory held; the judge's is NaN
    fn = _variant("kernel[blocks, 256](share, out)", "kernel[max(blocks - 1, 1), 256](share, out)")
    v = exercises.judge(exercises.get("11.split_sum"), fn, seed=9)
    assert v.status == "fail" and "nan" in v.message.lower(), v.message


def test_even_shares_ignore_the_weights():
    fn = _variant("bounds.append(n * running // total_weight)", "bounds.append(n * (len(bounds)) // len(weights))")
    v = exercises.judge(exercises.get("11.split_sum"), fn, seed=3)
    assert v.status == "partial"
    failed = [r.what for r in v.results if not r.passed]
    assert failed == ["each device gets exactly its share of x"], v.message


def test_everything_on_device_zero_is_not_a_split():
    fn = _variant("with cuda.gpus[d]:", "with cuda.gpus[0]:")
    v = exercises.judge(exercises.get("11.split_sum"), fn, seed=4)
    failed = [r.what for r in v.results if not r.passed]
    assert "each device gets exactly its share of x" in failed
    assert "each device with a share launches the kernel on its own arrays" in failed


def test_copying_the_shares_back_is_not_a_combine():
    fn = _variant("        for value in out.copy_to_host():\n            total += float(value)",
                  "        for value in out.copy_to_host():\n            total += float(value)\n"
                  "        share.copy_to_host()")
    v = exercises.judge(exercises.get("11.split_sum"), fn, seed=5)
    failed = [r.what for r in v.results if not r.passed]
    assert failed == ["only the partial sums come back to the host (最终合并)"], v.message


def test_summing_x_on_the_host_and_sending_nothing_back_is_not_a_combine():
    # issue 27: the devices launch their shares, but nothing comes back; the host adds x itself (right sum)
    fn = _variant("    for out in partials:  # the final combine: one float per block crosses back to the host\n"
                  "        for value in out.copy_to_host():\n            total += float(value)",
                  "    for value in x:\n        total += float(value)")
    v = exercises.judge(exercises.get("11.split_sum"), fn, seed=5)
    failed = [r for r in v.results if not r.passed]
    assert v.status == "partial" and v.score == v.max_score - 1, v.message
    assert [r.what for r in failed] == ["only the partial sums come back to the host (最终合并)"], v.message
    # every device had a share of the traced run (weights [1, 2, 1]) and sent back none of its partials
    assert "bytes of partial sums copied back per device: {0: 0, 1: 0, 2: 0}" in failed[0].detail, v.message
    assert "device(s) [0, 1, 2] sent back too few or none" in failed[0].detail, v.message


def test_partials_copied_back_and_ignored_are_not_a_combine():
    # the partials come back, as the property counted before, but the sum returned is x's, added on the host
    fn = _variant("    return total\n", "    total = 0.0\n    for value in x:\n        total += float(value)\n"
                  "    return total\n")
    v = exercises.judge(exercises.get("11.split_sum"), fn, seed=5)
    failed = [r for r in v.results if not r.passed]
    assert v.status == "partial" and [r.what for r in failed] == [
        "only the partial sums come back to the host (最终合并)"], v.message
    assert "moved by 0.5" in failed[0].detail and "not made of the partials copied back" in failed[0].detail, v.message


def test_a_lost_share_gives_a_wrong_sum():
    fn = _variant("    for d in range(len(weights)):", "    for d in range(len(weights) - 1):")
    v = exercises.judge(exercises.get("11.split_sum"), fn, seed=6)
    assert v.status == "fail" and v.score == 0
    assert "the sum is" in v.message


def test_the_stub_scores_nothing():
    stub = exercises.strip_solutions(SOLUTION)
    v = exercises.judge(exercises.get("11.split_sum"), _compile(stub), seed=7)
    assert v.status == "not attempted" and v.score == 0


@pytest.mark.parametrize("line, why", [
    ("    import os", "not needed in this exercise.s host code"),
    ("    open('x', 'w')", "open"),
    ("    cuda.select_device(1)", "cuda.select_device"),
    ("    x.__class__", "__class__"),
])
def test_the_grader_compiles_only_what_a_split_needs(line, why):
    source = SOLUTION.replace("    n = x.shape[0]", line + "\n    n = x.shape[0]")
    with pytest.raises(ValueError, match=why):
        _compile(source)


def test_shares_follow_the_weights():
    assert ch11.shares(10, [1, 1]) == [(0, 5), (5, 10)]
    assert ch11.shares(10, [3, 1]) == [(0, 7), (7, 10)]
    assert ch11.shares(5, [2, 0, 1]) == [(0, 3), (3, 3), (3, 5)]
    for n in (0, 1, 7, 10_001):
        s = ch11.shares(n, [2, 5, 1])
        assert s[0][0] == 0 and s[-1][1] == n and all(a[1] == b[0] for a, b in zip(s, s[1:]))
