"""Kernel cells of the chapters, generated from ``course/kernels/`` (the one source).

A chapter defines the kernels it discusses in real code cells that the learner can change and re-run;
the cells after them (tracer counts, checks, timing) use the notebook's definitions.  Each such cell
carries ``"course": {"kernel": KEY}`` in its metadata, and its text is :func:`cell_source` of that key:
the objects ``KEY`` names, copied from their module in ``course/kernels/``, preceded by the imports
and constants they need (a number such as ``TILE`` is defined in the cell, so that it can be
changed; anything else is imported from the module).

``python -m course.notebook_cells sync``  rewrites every marked cell from the registry;
``python -m course.notebook_cells check`` changes nothing and exits 1 naming the drifted cells
(``tests/test_notebook_cells.py`` runs the check).  ``python -m course.notebook_cells show KEY`` prints
a cell.  A key is ``module.name`` (``transpose.naive``) or several names of one module joined by
``+`` (``warps.lane_branch+warp_branch``); ``KEY | extra line`` lines are appended verbatim (to
build a kernel from a factory: ``transpose.tile_kernel | tile_32x33 = tile_kernel(33)``).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import inspect
import json
import pathlib
import sys
import textwrap
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = "course.kernels"

HEADER = ("# from course/kernels/{module}.py: change it and re-run the cells below "
          "(python -m course.notebook_cells sync restores it)")

# How a cell imports a module its kernel uses, by the name the kernel source gives it.
MODULE_IMPORTS = {"math": "import math", "numba": "import numba", "np": "import numpy as np",
                  "cuda": "from numba import cuda"}


class CellError(ValueError):
    """A kernel key that does not name what it should."""


def parse_key(key: str):
    """``'mod.a+b | extra'`` -> ``('mod', ['a', 'b'], ['extra'])``."""
    head, *extra = [p.strip() for p in key.split("|")]
    module, sep, names = head.partition(".")
    if not sep or not names:
        raise CellError(f"kernel key {key!r}: write it as 'module.name' (a module of {PACKAGE}).")
    return module, [n.strip() for n in names.split("+")], extra


def _python_function(obj):
    # numba's dispatcher (and the CPU engine's) keeps the Python function it compiles in .py_func
    return getattr(obj, "py_func", obj)


def _bound_and_loaded(tree):
    bound, loaded = set(), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.append(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, loaded


def _literal(value) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, (int, float, str)):
        return True
    if isinstance(value, tuple):
        return all(_literal(v) for v in value)
    return False


def _numba_name(name, value) -> bool:
    # numba's types (float32, int64 ...) are imported from numba, as the kernel modules do
    import numba

    return getattr(numba, name, None) is value and not isinstance(value, types.ModuleType)


def defines(key: str) -> set:
    """``module.name`` of every function or kernel the cell for ``key`` defines (its names, extra assignments)."""
    module_name, names, extra = parse_key(key)
    bound = set(names)
    for line in extra:
        bound |= _bound_and_loaded(ast.parse(line))[0]
    return {f"{module_name}.{n}" for n in bound}


def cell_source(key: str, earlier=frozenset()) -> str:
    """The text of the code cell for ``key``: header, imports, constants, the objects' source.

    ``earlier`` holds ``module.name`` of what earlier kernel cells of the notebook define: the cell uses
    the notebook's definition of those (the learner's, edits included) instead of importing them.
    """
    module_name, names, extra = parse_key(key)
    try:
        module = importlib.import_module(f"{PACKAGE}.{module_name}")
    except ImportError as err:
        raise CellError(f"kernel key {key!r}: no module {PACKAGE}.{module_name} ({err}).") from None
    bodies = []
    for name in names:
        if not hasattr(module, name):
            raise CellError(f"kernel key {key!r}: {PACKAGE}.{module_name} has no {name!r}.")
        fn = _python_function(getattr(module, name))
        try:
            bodies.append(textwrap.dedent(inspect.getsource(fn)).rstrip())
        except (TypeError, OSError) as err:
            raise CellError(f"kernel key {key!r}: no source for {name!r} ({err}).") from None
    code = "\n\n\n".join(bodies)
    if extra:
        code += "\n\n\n" + "\n".join(extra)
    bound, loaded = _bound_and_loaded(ast.parse(code))
    imports, constants, from_module = [], [], []
    seen = set()
    for name in loaded:
        if name in bound or name in seen or hasattr(builtins, name) or name not in vars(module):
            continue
        value = vars(module)[name]
        if f"{module_name}.{name}" in earlier and not _literal(value):
            continue
        seen.add(name)
        if isinstance(value, types.ModuleType):
            line = MODULE_IMPORTS.get(name)
            if line is None:
                parent, _, leaf = value.__name__.rpartition(".")
                line = (f"import {name}" if value.__name__ == name else
                        f"from {parent} import {leaf}" if parent and leaf == name else
                        f"import {value.__name__} as {name}")
            imports.append(line)
        elif _numba_name(name, value):
            imports.append(f"from numba import {name}")
        elif _literal(value):
            constants.append(f"{name} = {value!r}")
        else:
            from_module.append(name)
    order = {line: i for i, line in enumerate(MODULE_IMPORTS.values())}
    numba_names = sorted(line.split()[-1] for line in set(imports) if line.startswith("from numba import ")
                         and line != MODULE_IMPORTS["cuda"])
    imports = [line for line in set(imports) if not line.startswith("from numba import ")]
    if "cuda" in seen or numba_names:
        cuda_import = "cuda" in seen and isinstance(vars(module).get("cuda"), types.ModuleType)
        imports.append("from numba import " + ", ".join((["cuda"] if cuda_import else []) + numba_names))
    head = [HEADER.format(module=module_name)]
    head += sorted(imports, key=lambda line: (order.get(line, 98 if line.startswith("from numba") else 99), line))
    if from_module:
        head.append(f"from {PACKAGE}.{module_name} import {', '.join(from_module)}")
    if constants:
        head += [""] + constants
    return "\n".join(head) + "\n\n\n" + code


def _notebooks(paths=None):
    return [pathlib.Path(p) for p in paths] if paths else sorted(NOTEBOOKS.glob("*.ipynb"))


def kernel_cells(nb: dict):
    """``(index, key, cell, text)`` for every generated kernel cell of a notebook (its JSON as a dict).

    ``text`` is what the cell should hold: :func:`cell_source` with what earlier kernel cells define.
    """
    earlier: set = set()
    for i, cell in enumerate(nb.get("cells", [])):
        key = cell.get("metadata", {}).get("course", {}).get("kernel")
        if key and cell.get("cell_type") == "code":
            yield i, key, cell, cell_source(key, frozenset(earlier))
            earlier |= defines(key)


def drift(paths=None) -> list:
    """``(notebook, cell index, key)`` of every kernel cell whose text differs from the registry."""
    found = []
    for path in _notebooks(paths):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, key, cell, text in kernel_cells(nb):
            if "".join(cell["source"]) != text:
                found.append((path, i, key))
    return found


def _as_lines(text: str) -> list:
    return text.splitlines(keepends=True)


def write_notebook(path, nb: dict) -> None:
    """Write a notebook as nbformat and JupyterLab do (1-space indent, sorted keys, non-ASCII kept, final newline)."""
    pathlib.Path(path).write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def language_info() -> dict:
    """The ``language_info`` the course's kernel (ipykernel) reports, which JupyterLab writes into a notebook.

    A notebook committed with less is rewritten by JupyterLab as soon as its kernel starts, so that merely
    opening it marks it modified; committed with this, it opens clean (on the same Python version).
    Its ``version`` is the Python that runs the kernel: no committed value matches every Python, so the
    notebooks keep the course's (environment.yml) and :func:`sync` leaves a version-only difference alone.
    """
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def _without_version(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "version"}


def sync(paths=None) -> list:
    """Rewrite every drifted kernel cell from the registry, and the notebook's ``language_info`` (its keys other
    than ``version``, which stays as committed: see :func:`language_info`); return what changed."""
    changed = []
    info = language_info()
    for path in _notebooks(paths):
        nb = json.loads(path.read_text(encoding="utf-8"))  # read right before writing: others edit too
        have = nb.get("metadata", {}).get("language_info") or {}
        touched = _without_version(have) != _without_version(info)  # the version depends on the machine
        if touched:
            new = dict(info)
            if "version" in have:
                new["version"] = have["version"]
            nb.setdefault("metadata", {})["language_info"] = new
            changed.append((path, None, "language_info"))
        for i, key, cell, text in list(kernel_cells(nb)):
            if "".join(cell["source"]) != text:
                cell["source"] = _as_lines(text)
                changed.append((path, i, key))
                touched = True
        if touched:
            write_notebook(path, nb)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.notebook_cells", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("sync", "check"):
        p = sub.add_parser(command)
        p.add_argument("notebooks", nargs="*", help="notebooks (default: notebooks/*.ipynb)")
    show = sub.add_parser("show")
    show.add_argument("key")
    args = parser.parse_args(argv)
    if args.command == "show":
        print(cell_source(args.key))
        return 0
    if args.command == "sync":
        for path, i, key in sync(args.notebooks):
            print(f"synced {path.name}" + (f" cell {i}: {key}" if i is not None else f": {key}"))
        return 0
    bad = drift(args.notebooks)
    for path, i, key in bad:
        print(f"{path.name} cell {i} ({key}) differs from course/kernels/; run: python -m course.notebook_cells sync")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
