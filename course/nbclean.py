"""Strip notebooks for committing: ``python -m course.nbclean FILE...`` (``--check`` only reports).

Removes outputs, execution counts, widget state and the per-run metadata JupyterLab adds; keeps cell
tags (nbval and the grader read them) and everything else.  ``--check`` changes nothing and exits 1
listing the notebooks that are not clean, so CI and a test can fail on committed outputs.
"""

from __future__ import annotations

import argparse
import sys

import nbformat

# Per-run cell metadata that changes on every execution and means nothing to a reader.
VOLATILE_CELL_METADATA = ("execution", "ExecuteTime", "collapsed", "scrolled")
VOLATILE_NOTEBOOK_METADATA = ("widgets",)


def problems(nb) -> list[str]:
    """What is not clean in a notebook, one short phrase per kind of problem."""
    found = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    if any(c.get("outputs") for c in code):
        found.append("outputs")
    if any(c.get("execution_count") is not None for c in code):
        found.append("execution counts")
    if any(k in nb.metadata for k in VOLATILE_NOTEBOOK_METADATA):
        found.append("widget state")
    if any(k in c.metadata for c in nb.cells for k in VOLATILE_CELL_METADATA):
        found.append("run metadata")
    if any(c.cell_type != "code" and c.get("attachments") == {} for c in nb.cells):
        found.append("empty attachments")
    return found


def clean(nb):
    """Strip a notebook node in place and return it."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        elif cell.get("attachments") == {}:
            del cell["attachments"]
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
    for key in VOLATILE_NOTEBOOK_METADATA:
        nb.metadata.pop(key, None)
    return nb


def _read(path: str):
    try:
        return nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise SystemExit(f"nbclean: {path}: no such file.") from None
    except Exception as err:  # nbformat raises several kinds for a file that is not a notebook
        raise SystemExit(f"nbclean: {path} is not a readable notebook ({err}). Fix or remove it.") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.nbclean", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", metavar="FILE", help="notebooks (.ipynb) to clean")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 listing dirty notebooks")
    args = parser.parse_args(argv)
    dirty = []
    for path in args.files:
        nb = _read(path)
        found = problems(nb)
        if not found:
            continue
        dirty.append(path)
        if args.check:
            print(f"{path}: {', '.join(found)}")
        else:
            nbformat.write(clean(nb), path)
            print(f"cleaned {path} ({', '.join(found)})")
    if args.check and dirty:
        print(f"{len(dirty)} notebook(s) not clean; run: python -m course.nbclean {' '.join(dirty)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
