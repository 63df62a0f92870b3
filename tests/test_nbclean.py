"""nbclean strips outputs, counts and widget state, keeps tags and sources, and --check reports dirt."""

import pathlib
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course import nbclean

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _dirty_notebook(path):
    nb = new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    md = new_markdown_cell("# Title\n\n线程束 warp")
    timed = new_code_cell("print('hi')", execution_count=3, metadata={"tags": ["nbval-ignore-output"]})
    timed.outputs = [new_output("stream", name="stdout", text="hi\n")]
    timed.metadata["execution"] = {"iopub.execute_input": "2026-11-29T15:00:00Z"}
    plot = new_code_cell("plt.plot([1, 2])", execution_count=4, metadata={"scrolled": True})
    plot.outputs = [
        new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}),
        new_output("execute_result", data={"text/plain": "[<Line2D>]"}, execution_count=4),
    ]
    err = new_code_cell("1/0", execution_count=5, metadata={"tags": ["raises-exception", "grader"]})
    err.outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]
    nb.cells = [md, timed, plot, err, new_code_cell("x = 1")]
    nbformat.write(nb, path)
    return nb


def test_clean_strips_what_it_should_and_keeps_the_rest(tmp_path):
    path = tmp_path / "dirty.ipynb"
    before = _dirty_notebook(path)
    assert nbclean.main([str(path)]) == 0
    after = nbformat.read(path, as_version=4)
    assert [c.source for c in after.cells] == [c.source for c in before.cells]
    assert [c.cell_type for c in after.cells] == [c.cell_type for c in before.cells]
    for cell in after.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
        assert "execution" not in cell.metadata and "scrolled" not in cell.metadata
    assert "widgets" not in after.metadata
    assert after.metadata["kernelspec"]["name"] == "python3"
    assert after.cells[1].metadata["tags"] == ["nbval-ignore-output"]
    assert after.cells[3].metadata["tags"] == ["raises-exception", "grader"]
    assert after.cells[0].source.endswith("线程束 warp")
    nbformat.validate(after)


def test_check_reports_without_touching(tmp_path, capsys):
    path = tmp_path / "dirty.ipynb"
    _dirty_notebook(path)
    raw = path.read_bytes()
    assert nbclean.main(["--check", str(path)]) == 1
    out = capsys.readouterr().out
    assert str(path) in out
    for phrase in ("outputs", "execution counts", "widget state", "run metadata"):
        assert phrase in out
    assert path.read_bytes() == raw


def test_round_trip_is_stable(tmp_path):
    path = tmp_path / "nb.ipynb"
    _dirty_notebook(path)
    nbclean.main([str(path)])
    once = path.read_bytes()
    assert nbclean.main(["--check", str(path)]) == 0
    nbclean.main([str(path)])
    assert path.read_bytes() == once  # cleaning a clean notebook changes nothing, not even formatting


def test_only_dirty_files_are_listed(tmp_path, capsys):
    dirty, tidy = tmp_path / "dirty.ipynb", tmp_path / "tidy.ipynb"
    _dirty_notebook(dirty)
    _dirty_notebook(tidy)
    nbclean.main([str(tidy)])
    capsys.readouterr()
    assert nbclean.main(["--check", str(tidy), str(dirty)]) == 1
    out = capsys.readouterr().out
    assert str(dirty) in out and str(tidy) not in out


def test_command_line(tmp_path):
    # one run only: each start imports numba (through `import course`), seconds on a loaded machine
    path = tmp_path / "dirty.ipynb"
    _dirty_notebook(path)
    check = subprocess.run(
        [sys.executable, "-m", "course.nbclean", "--check", str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert check.returncode == 1 and "not clean" in check.stderr and str(path) in check.stdout


def test_missing_file_is_explained(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        nbclean.main([str(tmp_path / "nope.ipynb")])


def test_not_a_notebook_is_explained(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("not json")
    with pytest.raises(SystemExit, match="not a readable notebook"):
        nbclean.main([str(bad)])


@pytest.mark.parametrize(
    "path", sorted(p.relative_to(ROOT) for d in ("notebooks", "solutions", "exercises") for p in (ROOT / d).glob("**/*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts),
    ids=str,
)
def test_committed_notebooks_are_clean(path):
    found = nbclean.problems(nbformat.read(ROOT / path, as_version=4))
    assert not found, f"{path} carries {', '.join(found)}: run python -m course.nbclean {path}"
