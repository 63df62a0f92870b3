"""The set-up files agree with each other, and committed notebooks carry no outputs."""

import json
import pathlib
import re
import subprocess

import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower()


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_norm(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]}
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = lines.index("  - pip:")
    pinned = {_norm(line.strip()[2:]) for line in lines[start + 1 :] if line.strip().startswith("- ")}
    assert pinned == wanted, (
        f"only in pyproject.toml: {sorted(wanted - pinned)}; only in environment.yml: {sorted(pinned - wanted)}"
    )


def test_numpy_is_pinned_below_2_5():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    numpy = [d for d in deps if d.startswith("numpy")]
    assert numpy and "<2.5" in numpy[0], "numba-cuda 0.30.4 calls np.row_stack, removed in numpy 2.5"


def _tracked_notebooks():
    out = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True)
    files = out.stdout.split() if out.returncode == 0 else []
    if not files:  # not a git checkout (an sdist, say): look at the files themselves
        files = [str(p.relative_to(ROOT)) for p in ROOT.glob("*/**/*.ipynb") if ".venv" not in p.parts]
    return files


def test_committed_notebooks_carry_no_outputs():
    dirty = []
    for rel in _tracked_notebooks():
        if rel.startswith("tests/fixtures/"):
            continue  # the grader's test submissions: some are corrupt or carry outputs on purpose
        nb = json.loads((ROOT / rel).read_text())
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count")):
                dirty.append(f"{rel} cell {i}")
    assert not dirty, "strip outputs (python -m course.nbclean FILE) from: " + ", ".join(dirty)


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands[0] == "make lab" and commands[1] == "make test"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#")]
    assert ci[-1] == "make test"


def test_nbformat_and_jupyter_events_import_without_the_uri_grammar():
    # pyproject.toml keeps jsonschema below 4.25: its format-nongpl extra (jupyter-events asks for it) would add
    # rfc3987-syntax, which builds an Earley parser on import, in every process that reads a notebook
    import sys

    code = ("import sys, nbformat, jupyter_events.validators\n"
            "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
            "nbformat.validate(nb)\n"
            "print(sorted(m for m in sys.modules if m.startswith('rfc3987_syntax')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["[]"], out.stdout
