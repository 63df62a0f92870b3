"""The layers of ``course/`` stay visible: no module over ~700 lines, no private name crossing a module boundary.

A module's ``_name`` is its own business; what another module needs is public (no leading underscore), so
that a change inside one module cannot silently break another.  Parsed with ``ast``, never imported.
"""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
COURSE = ROOT / "course"
MAX_LINES = 700
#: Modules still over the limit, each with why; test_exemptions_are_still_needed fails once one is short enough.
OVER_THE_LIMIT: dict = {}


def _modules() -> dict:
    """Dotted module name -> path, for every module of the course package."""
    out = {}
    for path in sorted(COURSE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package_of(module: str, path: pathlib.Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def private_reaches(module: str, source: str, path: pathlib.Path) -> list:
    """``(line, text)`` for each private name of another course module that ``source`` imports or uses."""
    tree = ast.parse(source)
    bound = {}  # local name -> the course module it stands for
    found = []
    package = _package_of(module, path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import: resolve against this module's package
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            if not (base == "course" or base.startswith("course.")):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in MODULES:
                    bound[alias.asname or alias.name] = full
                elif _private(alias.name) and base != module:
                    found.append((node.lineno, f"from {base} import {alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "course" or alias.name.startswith("course."):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound["course"] = "course"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        chain, value = [], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not (isinstance(value, ast.Name) and value.id in bound):
            continue
        target = ".".join([bound[value.id], *reversed(chain)])
        if target in MODULES and target != module:
            found.append((node.lineno, f"{target}.{node.attr}"))
    return sorted(found)


def test_the_checker_sees_private_reaches():
    here = COURSE / "trace" / "entry.py"
    src = ("from course.engine import _state\nfrom course import engine as e\nimport course.engine\n"
           "e._kernel_py_func(k)\ncourse.engine.launcher._order_seed\ne.launch(k)\nself._x\ne.__doc__\n")
    assert private_reaches("course.trace.entry", src, here) == [
        (1, "from course.engine import _state"),
        (4, "course.engine._kernel_py_func"),
        (5, "course.engine.launcher._order_seed"),
    ]
    # a module's own private names, attributes of objects and dunder names are fine
    own = "from course.trace.entry import _engine_host\n"
    assert private_reaches("course.trace.entry", own, here) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_a_module_boundary(module):
    path = MODULES[module]
    found = private_reaches(module, path.read_text(encoding="utf-8"), path)
    assert not found, (f"{path.relative_to(ROOT)} reaches into another module's private names (make what it "
                       f"needs public, or move the code): " + "; ".join(f"line {ln}: {t}" for ln, t in found))


def _lengths() -> dict:
    return {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES.values()}


def test_no_module_is_over_700_lines():
    long = {f: n for f, n in _lengths().items() if n > MAX_LINES and f not in OVER_THE_LIMIT}
    assert not long, f"split these along their seams (see the README's layout table): {long}"


def test_exemptions_are_still_needed():
    lengths = _lengths()
    done = [f for f in OVER_THE_LIMIT if lengths.get(f, 0) <= MAX_LINES]
    assert not done, f"no longer over {MAX_LINES} lines (or gone): remove from OVER_THE_LIMIT: {done}"


# A layer imports only from the layers below it (lazy imports inside functions count too): choose the
# backend and the device's facts, then run (engine), count (analysis), record (trace).
BELOW = {
    "course.device": set(),
    "course.engine": {"course", "course.device"},
    "course.trace.analysis": {"course", "course.device"},
    "course.trace.analysis_vectorised": {"course", "course.device", "course.trace.analysis"},
    "course.trace": {"course", "course.device", "course.engine", "course.trace.analysis", "course.trace.analysis_vectorised",
                     "course.trace.compiler"},
}


def _course_imports(path: pathlib.Path) -> set:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "course" else [f"course.{a.name}" for a in node.names]
            out.update(n for n in names if n == "course" or n.startswith("course."))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name == "course" or a.name.startswith("course."))
    return out


def _layer_of(module: str) -> str:
    return max((layer for layer in BELOW if module == layer or module.startswith(layer + ".")), key=len,
               default=module)


@pytest.mark.parametrize("layer", sorted(BELOW))
def test_a_layer_imports_only_from_the_layers_below(layer):
    wrong = {}
    for module, path in MODULES.items():
        if _layer_of(module) != layer:
            continue
        for imported in _course_imports(path):
            target = _layer_of(imported) if imported != "course" else "course"
            if target != layer and target not in BELOW[layer]:
                wrong.setdefault(str(path.relative_to(ROOT)), set()).add(imported)
    assert not wrong, f"{layer} reaches up into a higher layer (pass what it needs down, or move the code): {wrong}"


def _layout_paths() -> set:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return {p for row in rows for p in re.findall(r"`([^`]+)`", row.split("|")[1])}


def test_the_readmes_layout_table_matches_the_tree():
    named = _layout_paths()
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"the README's layout table names paths that do not exist: {missing}"
    parts = {f"course/{p.name}" + ("/" if p.is_dir() else "") for p in COURSE.iterdir()
             if (p.suffix == ".py" and not p.name.startswith("__")) or (p.is_dir() and (p / "__init__.py").exists())}
    unnamed = sorted(p for p in parts if p not in named)
    assert not unnamed, f"add these to the README's layout table: {unnamed}"


def test_the_engine_reads_of_its_hooks_only_what_launchhooks_declares():
    """Every ``getattr(hooks, "name", ...)`` in the engine is a member of the LaunchHooks protocol, and every
    member of the protocol is read somewhere: the interface the tracer implements is the one the engine uses."""
    read = set()
    for path in (COURSE / "engine").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) >= 2 and "hooks" in ast.unparse(node.args[0]) \
                    and isinstance(node.args[1], ast.Constant):
                read.add(node.args[1].value)
    protocol = next(n for n in ast.walk(ast.parse((COURSE / "engine" / "hooks.py").read_text(encoding="utf-8")))
                    if isinstance(n, ast.ClassDef) and n.name == "LaunchHooks")
    declared = {n.target.id for n in protocol.body if isinstance(n, ast.AnnAssign)} | \
               {n.name for n in protocol.body if isinstance(n, ast.FunctionDef)}
    assert read == declared, f"read by the engine but not declared: {read - declared}; declared, never read: {declared - read}"

