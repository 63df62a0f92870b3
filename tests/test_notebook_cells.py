"""The chapters' kernel cells are generated from course/kernels/ and must not drift from it."""

import json
import re

import pytest

from course import chapters
from course.show import notebook_cells as nc

NOTEBOOKS = sorted(nc.NOTEBOOKS.glob("*.ipynb"))


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_no_kernel_cell_drifts_from_the_registry():
    bad = nc.drift()
    assert not bad, "run: python -m course.notebook_cells sync\n" + "\n".join(
        f"{p.name} cell {i}: {key}" for p, i, key in bad)


@pytest.mark.parametrize("number", range(1, 11))
def test_every_chapter_defines_its_kernels_in_cells(number):
    path = chapters.NOTEBOOKS / chapters.chapter(number).file
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert list(nc.kernel_cells(nb)), f"{path.name} has no generated kernel cell"
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    printing = [c for c in code if "getsource" in c]
    assert not printing, f"{path.name} still prints source: {printing[0][:80]!r}"


@pytest.mark.parametrize("number", range(1, 11))
def test_every_chapter_has_two_predict_tasks_and_live_timing(number):
    path = chapters.NOTEBOOKS / chapters.chapter(number).file
    code = ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]
    assert sum("lab.predict(" in c for c in code) >= 2, path.name
    assert sum("lab.yours_vs_recorded(" in c for c in code) == 1, path.name
    text = "".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")
    assert "### Your kernels, timed" in text, path.name  # the heading chapter 00 lists the chapters by
    # a prediction starts unanswered: the learner writes it
    assert all(re.search(r"^my_prediction = None", c, re.M) for c in code if "lab.predict(" in c), path.name


def test_no_leftover_test_cells():
    for path in NOTEBOOKS:
        for c in _cells(path):
            assert "ran to the end" not in "".join(c["source"]), path.name


def test_a_cell_defines_constants_and_imports_the_rest():
    text = nc.cell_source("shared_memory.tile_columns")
    assert "TILE = 32" in text.splitlines()  # a number the learner may change
    assert "from numba import cuda, float32" in text
    assert text.splitlines()[0].startswith("# from course/kernels/shared_memory.py")
    text = nc.cell_source("reduction.atomic_float4")
    assert "from course.kernels.reduction import load_float4" in text


def test_a_cell_runs_and_defines_what_it_names():
    namespace = {}
    exec(compile(nc.cell_source("transpose.tile_kernel | tile_32x33 = tile_kernel(33)"), "<cell>", "exec"), namespace)
    assert callable(namespace["tile_kernel"]) and namespace["tile_32x33"] is not None
    assert namespace["TILE"] == 32


def test_earlier_cells_are_used_not_imported():
    alone = nc.cell_source("reduction.block_strided")
    assert "import float4_or_tail" in alone
    after = nc.cell_source("reduction.block_strided", frozenset({"reduction.float4_or_tail"}))
    assert "float4_or_tail" not in after.split("@cuda.jit")[0]
    assert nc.defines("transpose.tile_kernel | tile_32x33 = tile_kernel(33)") == {
        "transpose.tile_kernel", "transpose.tile_32x33"}


def test_sync_rewrites_a_drifted_cell(tmp_path):
    src = NOTEBOOKS[5]  # 05_transpose
    copy = tmp_path / src.name
    nb = json.loads(src.read_text(encoding="utf-8"))
    i, key, cell, text = next(nc.kernel_cells(nb))
    cell["source"] = ["# edited by a learner\n"]
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert nc.drift([copy]) == [(copy, i, key)]
    assert nc.main(["check", str(copy)]) == 1
    assert nc.sync([copy]) == [(copy, i, key)]
    assert nc.drift([copy]) == []


def test_sync_leaves_the_python_version_of_language_info_alone(tmp_path):
    # the version is the Python that runs the kernel (3.11 here, 3.12 on the GPU machine): a difference in it
    # alone is not drift; a missing key is, and sync restores it without touching the committed version
    src = NOTEBOOKS[5]
    nb = json.loads(src.read_text(encoding="utf-8"))
    nb["metadata"]["language_info"]["version"] = "0.0.0"
    copy = tmp_path / src.name
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    before = copy.read_text(encoding="utf-8")
    assert nc.sync([copy]) == [] and copy.read_text(encoding="utf-8") == before
    del nb["metadata"]["language_info"]["mimetype"]
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert nc.sync([copy]) == [(copy, None, "language_info")]
    info = json.loads(copy.read_text(encoding="utf-8"))["metadata"]["language_info"]
    assert info == {**nc.language_info(), "version": "0.0.0"}


@pytest.mark.parametrize("key, words", [("nomodule", "module.name"), ("transpose.nothing", "has no 'nothing'"),
                                        ("nosuch.naive", "no module")])
def test_a_bad_key_says_what_is_wrong(key, words):
    with pytest.raises(nc.CellError, match=re.escape(words)):
        nc.cell_source(key)


def test_notebooks_carry_the_language_info_jupyterlab_writes():
    # with less, JupyterLab rewrites it when the kernel starts: opening a chapter would mark it modified
    # (tests/test_lab_command.py checks that in a browser); the version is the course's Python's
    want = {k: v for k, v in nc.language_info().items() if k != "version"}
    for path in NOTEBOOKS:
        info = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("language_info", {})
        assert {k: info.get(k) for k in want} == want, f"{path.name}: run python -m course.notebook_cells sync"


def test_committed_compiler_facts_of_notebook_cells_belong_to_a_cell():
    # IPython names a cell's file by a hash of its text, so facts committed for a chapter's kernel cell
    # (make compiler-facts) serve every learner without the toolkit, until the cell's text changes:
    # then they are stale, and the tracer would fall back to source-level counts for that kernel
    from ipykernel.compiler import get_tmp_hash_seed, murmur2_x86

    root = nc.ROOT
    hashes = set()
    for path in [*root.glob("notebooks/*.ipynb"), *root.glob("solutions/*.ipynb"), *root.glob("exercises/*.ipynb")]:
        for c in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if c["cell_type"] == "code":
                hashes.add(str(murmur2_x86("".join(c["source"]), get_tmp_hash_seed())))
    facts = json.loads((root / "data" / "compiler_facts.json").read_text())["kernels"]
    stale = [f["kernel"] for f in facts.values()
             if f["kernel"].startswith("<cell>/") and f["kernel"][7:].split(".py")[0] not in hashes]
    assert not stale, f"facts of cells that no longer exist (run make compiler-facts): {stale}"
