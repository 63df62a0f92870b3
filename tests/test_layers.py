"""The layers of ``course/`` stay visible: no module over ~700 lines, no private name crossing a module boundary.

A module's ``_name`` is its own business; what another module needs is public (no leading underscore), so
that a change inside one module cannot silently break another.  Parsed with ``ast``, never imported.
"""

import ast
import importlib
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


# --- layers -------------------------------------------------------------------------------------------------
# Every module of course/ belongs to one layer (the longest prefix below that names it), and a layer imports
# only from itself and the layers it builds on (module-level imports, imports inside functions and under
# ``if TYPE_CHECKING:`` all count). The README's layout table says the same, row by row.
LAYERS = {
    "facts": {"course.device", "course.chapters", "course.glossary"},
    "engine": {"course.engine"},
    "choose": {"course", "course.backend", "course.ipython", "course.multigpu"},
    "analyse": {"course.trace.analysis", "course.trace.analysis_vectorised"},
    "trace": {"course.trace"},
    "kernels": {"course.kernels"},
    "validation": {"course.validation"},
    "measure": {"course.measure"},
    "show": {"course.show", "course.show.lookup"},  # lookup reads recorded runs through measure
    "judge": {"course.exercises", "course.grading"},
    "commands": {"course.__main__", "course.doctor", "course.nbclean", "course.mywork", "course.grade", "course.claims",
                 "course.bench", "course.notebook_cells"},
}
#: What each layer builds on (not transitive: a layer names every layer it imports from).
BUILDS_ON = {
    "facts": set(),
    "engine": {"facts"},
    "choose": {"facts", "engine"},
    "analyse": {"facts"},
    "trace": {"facts", "engine", "analyse"},
    "kernels": {"facts", "choose", "analyse"},
    "validation": {"facts", "choose", "engine", "trace", "kernels"},
    "measure": {"facts", "choose", "engine", "analyse", "trace", "kernels"},  # explain traces kernels
    "show": {"facts", "choose", "analyse", "trace", "measure"},
    "judge": {"facts", "choose", "engine", "analyse", "trace", "kernels", "measure"},
    "commands": {"facts", "choose", "engine", "analyse", "trace", "kernels", "validation", "measure", "show",
                 "judge"},
}
#: ``python -m`` commands kept at their documented address after their module moved: old name -> module run.
STUBS = {"course.grade": "course.grading.cli", "course.claims": "course.measure.claims",
         "course.bench": "course.measure.bench_harness", "course.notebook_cells": "course.show.notebook_cells"}


def layer_of(module: str):
    """The declared layer of ``module`` (the longest declared prefix that names it), or None."""
    best = None
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (layer, prefix)
    return best and best[0]


def _main_guard(node) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("__name__ == '__main__'", "'__main__' == __name__")


def course_imports(module: str, source: str, path: pathlib.Path, scripted: bool = True) -> set:
    """The course modules ``source`` imports, anywhere in it: ``from course.x import name`` is ``course.x.name``
    when that is a module, else ``course.x``; relative imports are resolved; ``importlib.import_module`` and
    ``runpy.run_module`` of a constant name count too. A parent package imported implicitly is not an import.

    ``scripted=False`` leaves out what a module-level ``if __name__ == "__main__":`` block imports: that code runs
    only when the file is run as a script, as the module ``__main__``, so it is never part of importing ``module``
    (``python -m course.grading.grade`` runs the grader's command line, which imports the grader)."""
    out = set()
    package = _package_of(module, path)
    tree = ast.parse(source)
    skipped = set()
    if not scripted:
        for top in tree.body:
            if _main_guard(top):
                skipped.update(id(n) for n in ast.walk(top))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        names = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("import_module", "run_module") and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names = [node.args[0].value]
        for name in names:
            while name and name not in MODULES:  # ``import course.trace.entry`` imports that module
                name = name.rpartition(".")[0]
            if name and (name == "course" or name.startswith("course.")) and name != module:
                out.add(name)
    return out


GRAPH = {m: course_imports(m, p.read_text(encoding="utf-8"), p) for m, p in MODULES.items()}


def test_every_module_has_a_declared_layer():
    undeclared = sorted(m for m in MODULES if layer_of(m) is None)
    assert not undeclared, f"declare these modules' layer in LAYERS (and the README's layout table): {undeclared}"
    gone = sorted(p for prefixes in LAYERS.values() for p in prefixes if p not in MODULES)
    assert not gone, f"LAYERS names modules that do not exist: {gone}"
    assert set(BUILDS_ON) == set(LAYERS)


def test_the_layer_checker_sees_function_level_and_relative_imports():
    here = COURSE / "measure" / "bench.py"
    src = ("import course\nfrom . import measurements\ndef f():\n    from course.show import lab\n"
           "    import course.trace.entry\n    importlib.import_module('course.grading.grade')\n"
           "from course.trace import trace\nimport numpy\n")
    assert course_imports("course.measure.bench", src, here) == {
        "course", "course.measure.measurements", "course.show.lab", "course.trace.entry", "course.grading.grade",
        "course.trace"}
    assert layer_of("course.trace.analysis") == "analyse" and layer_of("course.trace.entry") == "trace"
    assert layer_of("course.show.widgets.banks") == "show" and layer_of("course") == "choose"
    script = ("import course.trace\nif __name__ == '__main__':\n    import runpy\n"
              "    runpy.run_module('course.grading.cli', run_name='__main__')\n")
    assert course_imports("course.measure.bench", script, here) == {"course.trace", "course.grading.cli"}
    assert course_imports("course.measure.bench", script, here, scripted=False) == {"course.trace"}


#: Imports against the layers' direction, each a learner's door that imports when it is called, never at import.
DOORS = {("course", "course.measure.explain"): "course.explain(...): the explainer's one door (issue 24)",
         ("course.measure.explain_check", "course.exercises.solution_cases"):
             "the validation's unseen set is the exercises' solutions, which only the judge layer can read (the "
             "grader's path from a notebook cell to a kernel); imported by the count commands, never at import (issue 24)",
         ("course.engine.gpu_typing", "course.trace.compiler_typing"):
             "a launch asks the GPU compiler's typing child whether numba-cuda would compile the kernel (issue 27); "
             "one describer and one cache with the tracer's compiler facts; imported at the first check, never at "
             "import"}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_layer_imports_only_from_the_layers_it_builds_on(layer):
    wrong = {}
    for module, imported in GRAPH.items():
        if layer_of(module) != layer:
            continue
        for target in imported:
            if (module, target) in DOORS:
                continue
            if layer_of(target) != layer and layer_of(target) not in BUILDS_ON[layer]:
                wrong.setdefault(str(MODULES[module].relative_to(ROOT)), set()).add(f"{target} ({layer_of(target)})")
    assert not wrong, (f"the {layer} layer imports from a layer it does not build on (pass what it needs down, "
                       f"move the code, or declare the dependency in BUILDS_ON if it is right): {wrong}")


def import_circles(graph: dict) -> list:
    """The strongly connected parts of ``graph`` with more than one module (Tarjan's algorithm), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(tuple(sorted(part)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


#: Import circles not broken yet, each with why; test_circle_exemptions_are_still_needed fails once one is gone.
CIRCLES: dict = {}


def test_the_circle_finder_finds_circles():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_circles(g) == [("a", "b", "c")]


#: What importing each module imports (a script's ``if __name__ == "__main__":`` block left out, see course_imports).
IMPORTED = {m: course_imports(m, p.read_text(encoding="utf-8"), p, scripted=False) for m, p in MODULES.items()}


def _without_doors(graph: dict) -> dict:
    return {m: {t for t in ts if (m, t) not in DOORS} for m, ts in graph.items()}


def test_no_import_circle_between_modules():
    new = [c for c in import_circles(_without_doors(IMPORTED)) if c not in CIRCLES]
    assert not new, f"import circles (break them: pass what is needed down, or move the code): {new}"


def test_circle_exemptions_are_still_needed():
    found = set(import_circles(_without_doors(IMPORTED)))
    done = [c for c in CIRCLES if c not in found]
    assert not done, f"no longer a circle (or a different one now): update CIRCLES: {done}"


def reexporting_getattrs(source: str) -> list:
    """Module-level ``__getattr__``/``__dir__`` that import (another module's names reached through this one).

    A ``__getattr__`` that builds one of the module's own names on first use (``NCU_CASES`` in the kernel
    modules) imports nothing itself and gives no name a second address."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__") and any(
                isinstance(n, (ast.Import, ast.ImportFrom)) or (isinstance(n, ast.Attribute) and n.attr == "import_module")
                for n in ast.walk(node)):
            found.append(node.name)
    return found


def test_the_getattr_checker_sees_a_reexport():
    lazy = "def __getattr__(name):\n    import importlib\n    return getattr(importlib.import_module('m'), name)\n"
    own = "def __getattr__(name):\n    if name == 'X':\n        return _build()\n    raise AttributeError(name)\n"
    assert reexporting_getattrs(lazy) == ["__getattr__"] and reexporting_getattrs(own) == []


def test_no_module_reexports_through_a_module_getattr():
    found = {str(p.relative_to(ROOT)): f for p in MODULES.values() if (f := reexporting_getattrs(p.read_text("utf-8")))}
    assert not found, f"a module __getattr__ gives a name a second address; import it from its module: {found}"


@pytest.mark.parametrize("stub", sorted(STUBS))
def test_a_command_stub_only_runs_the_moved_module(stub):
    """``python -m course.grade`` etc. keep working, and the old address defines nothing (one address per name)."""
    tree = ast.parse(MODULES[stub].read_text(encoding="utf-8"))
    doc, guard = tree.body[0], tree.body[1:]
    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), f"{stub}: start with a docstring"
    assert len(guard) == 1 and isinstance(guard[0], ast.If) and ast.unparse(guard[0].test) == "__name__ == '__main__'", \
        f"{stub}: a stub is its docstring and one `if __name__ == '__main__':` block"
    body = [ast.unparse(n) for n in guard[0].body]
    assert body == ["import runpy", f"runpy.run_module('{STUBS[stub]}', run_name='__main__', alter_sys=True)"], body
    assert STUBS[stub] in MODULES
    module = importlib.import_module(stub)
    assert not [k for k in vars(module) if not (k.startswith("__") and k.endswith("__"))]


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


def _layout_rows() -> list:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines() if line.startswith("| `")]


def _module_at(path: str):
    """The course module a README path names (a package for a folder), or None outside course/."""
    p = ROOT / path
    if not path.startswith("course/"):
        return None
    parts = list(pathlib.Path(path.rstrip("/")).with_suffix("").parts)
    return ".".join(parts) if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py" else None


def test_the_readmes_layer_column_says_what_the_test_declares():
    wrong, seen = [], set()
    for row in _layout_rows():
        for path in re.findall(r"`([^`]+)`", row[0]):
            module = _module_at(path)
            if module is None:
                assert row[1] == "—", f"README layout row {path}: outside course/ the layer column is '—'"
                continue
            seen.add(row[1])
            if layer_of(module) != row[1]:
                wrong.append(f"{path}: README says {row[1]}, tests/test_layers.py says {layer_of(module)}")
    assert not wrong, "the README's layout table and LAYERS disagree: " + "; ".join(wrong)
    assert seen == set(LAYERS), f"layers the README's table never names: {sorted(set(LAYERS) - seen)}"


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



# --- private attributes -------------------------------------------------------------------------------------
# ``obj._name`` where ``obj`` is not ``self``/``cls``: the attribute is private to the class that defines it. A
# use is a reach when ``_name`` is defined by a class of another course module (a method, a class attribute or
# ``self._name = ...`` in a method) and by no class of the using module: where both define it the checker
# cannot tell whose object it is, and it says nothing (sound, not complete). ``getattr``/``setattr``/
# ``hasattr`` with a constant private name count as uses.


def class_privates(source: str) -> set:
    """Private attribute names the classes of ``source`` define."""
    out = set()
    for cls in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in cls.body and _private(node.name):
                out.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node in cls.body:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                out.update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr) \
                    and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                out.add(node.attr)
    return out


def private_attribute_uses(source: str) -> list:
    """``(line, text, attribute)`` for each ``obj._name`` (and getattr/setattr/hasattr) not on self, cls or super()."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            value = node.value
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                continue
            found.append((node.lineno, ast.unparse(node), node.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
                and _private(node.args[1].value) and ast.unparse(node.args[0]) not in ("self", "cls"):
            found.append((node.lineno, ast.unparse(node), node.args[1].value))
    return found


PRIVATES = {m: class_privates(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}


def attribute_reaches(module: str, source: str, privates: dict) -> list:
    """``(line, text, attribute, owners)`` for each private attribute of another module's class ``source`` uses."""
    own = class_privates(source)
    out = []
    for line, text, attr in private_attribute_uses(source):
        owners = sorted(m for m, names in privates.items() if m != module and attr in names)
        if owners and attr not in own:
            out.append((line, text, attr, tuple(owners)))
    return out


#: Attribute-level reaches not removed yet: (module, attribute) -> why. test_attribute_exemptions_are_still_needed
#: fails once one is gone.
_INSIDE = "inside the engine, between its own files: the engine's internals are not restructured in this pass"
ATTRIBUTE_REACHES = {
    ("course.engine.launcher", "_wrap"): _INSIDE + " (kernel_api's _wrap of a kernel's cuda module)",
    ("course.engine.scheduler", "_sched"): _INSIDE + " (kernel_api's per-block scheduler slot)",
    ("course.engine.scheduler", "_ts"): _INSIDE + " (kernel_api's thread state)",
    ("course.engine.launcher", "_ts"): _INSIDE + " (the stall watchdog names the thread that was running)",
}


def test_the_checker_sees_private_attribute_reaches():
    privates = {"course.a": {"_ts", "_get"}, "course.b": {"_own"}}
    src = ("class B:\n    def __init__(self):\n        self._own = 1\n    def f(self, o):\n"
           "        return o._ts, o._own, self._ts, super()._get, getattr(o, '_get'), o._unknown\n")
    assert [(ln, t) for ln, t, _, _ in attribute_reaches("course.b", src, privates)] == [
        (5, "o._ts"), (5, "getattr(o, '_get')")]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_attribute_of_another_modules_class_is_used(module):
    found = [(ln, t, o) for ln, t, a, o in attribute_reaches(module, MODULES[module].read_text("utf-8"), PRIVATES)
             if (module, a) not in ATTRIBUTE_REACHES]
    assert not found, (f"{MODULES[module].relative_to(ROOT)} uses private attributes of another module's class "
                       f"(make them public or add a method there): "
                       + "; ".join(f"line {ln}: {t} (defined in {', '.join(o)})" for ln, t, o in found))


def test_attribute_exemptions_are_still_needed():
    used = {(m, a) for m, p in MODULES.items() for _, _, a, _ in attribute_reaches(m, p.read_text("utf-8"), PRIVATES)}
    done = sorted(k for k in ATTRIBUTE_REACHES if k not in used)
    assert not done, f"no longer used across a module boundary: remove from ATTRIBUTE_REACHES: {done}"


def test_shared_rules_are_defined_once():
    """One rule in one place: the 'not measured yet' text, Script.optional, the number rule (a bool is none), the
    finder of the GPU scripts' CUDA tools."""
    sources = {p: p.read_text(encoding="utf-8") for d in (COURSE, COURSE.parent / "scripts") for p in d.rglob("*.py")}
    for pattern, where in ((r"^\s*NOT_MEASURED\s*=", "course/measure/measurements.py"),
                           (r"^\s*def optional\(", "course/measure/bench_harness.py"),
                           (r"^\s*def _?number\(", "course/measure/measurements.py"),
                           (r"^\s*def find_tool\(", "course/measure/cuda_tools.py")):
        found = sorted(str(p.relative_to(COURSE.parent)) for p, text in sources.items()
                       if re.search(pattern, text, flags=re.M))
        assert found == [where], f"{pattern!r} should be defined once, in {where}: found in {found}"
