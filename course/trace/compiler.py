"""What the GPU compiler makes of a kernel, without a GPU: its memory instructions per source line.

The tracer (:mod:`course.trace`) counts accesses the way the *source* makes them.  The last compiler
stage, ``ptxas``, may merge one thread's neighbouring shared-memory accesses into one wider
instruction: in the tiled matmul it turns four 4-byte loads ``As[ty, k] … As[ty, k + 3]`` into one
16-byte ``LDS.128``, so the H200 executes 1280 shared load instructions where the source makes 2048.
It does not do so in every kernel that looks alike (the register-tiled matmul keeps 16 scalar ``LDS``),
so no rule on addresses alone can say when.  The compiler can: this module compiles a kernel exactly
as numba-cuda does for an sm_90 GPU (numba → NVVM → PTX → ``ptxas`` → cubin), disassembles the cubin
with ``nvdisasm`` and returns, per source line, how many memory instructions of each kind
(``LDS``, ``LDS.128``, ``STG.E.64`` …) the machine code holds.  :mod:`course.trace` asks for these
facts only when a launch has accesses the compiler *could* merge, and merges them only on lines where
the compiler did (``docs/tracer.md``, "What the compiler merges").

Where the facts come from, first hit wins:

1. ``data/compiler_facts.json`` — committed facts for the course's own kernels (keyed by a fingerprint
   of the kernel's code, constants and argument types, so an edited kernel misses and is compiled anew);
2. a per-user cache (``$XDG_CACHE_HOME/cuda-fast-course/compiler``, default ``~/.cache/…``);
3. the CUDA compilers, when installed: NVVM (numba-cuda finds it), ``ptxas`` and ``nvdisasm`` (on
   ``PATH``, under ``CUDA_HOME``, or from the pip wheels ``make toolkit`` installs).  No GPU is needed.

Without any of them :func:`facts` returns ``None`` and the tracer keeps the source-level count, saying
so in :attr:`course.trace.Report.compiler`.  ``COURSE_COMPILER_FACTS_WRITE=1`` makes freshly compiled
facts go into the committed file as well (how ``make compiler-facts`` refreshes it).

The compile runs in a child process in hardware mode (this process has numba's simulator loaded);
the kernel travels as its code object plus the values it reads, so kernels defined in a notebook or
made by a factory (closures) work as well as module-level ones.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import pathlib
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import types
from typing import Optional

from course.trace import sass_flight

ROOT = pathlib.Path(__file__).resolve().parents[2]
FACTS_FILE = ROOT / "data" / "compiler_facts.json"
CC = (9, 0)  # the H200's compute capability: the machine the course validates against
TIMEOUT_S = 240  # one child compiles a handful of kernels; ptxas on a fully unrolled loop takes ~1 s
FORMAT = 5  # 2: the facts carry loads_in_flight; 3/4: per_execution and float_atomics; 5: straight and cold (course.trace.sass_flight)

#: A memory instruction in SASS (``nvdisasm`` / ``inspect_sass`` text): group 1 the predicate (``@P0 ``, if any),
#: group 2 the mnemonic with its modifiers (``LDS.128``, ``STG.E.U8``).  scripts/gpu/validate_tracer.py uses it too.
SASS_MEM_OP = re.compile(r"^\s*(?:/\*[0-9a-f]+\*/)?\s*(@!?U?P[T0-9]+\s+)?((?:LDG|STG|LDS|STS|LDSM|LD|ST|ATOMS|ATOMG|ATOM|RED)"
                         r"(?:\.[A-Z0-9_]+)*)\b")
_LINE = re.compile(r'//## File "([^"]*)", line (\d+)')

_memo: dict = {}  # fingerprint -> facts (or None: tried, unavailable)
_why: dict = {}  # fingerprint -> why there are no facts
_toolchain_memo: dict = {}


class CompilerUnavailable(RuntimeError):
    """No committed or cached facts for this kernel and no CUDA compiler to make them."""


# --------------------------------------------------------------------------------------------------
# Finding the tools


def _wheel_bins() -> list:
    """``bin`` folders of NVIDIA's pip wheels (nvidia-cuda-nvcc, nvidia-cuda-nvdisasm) in this environment."""
    out = []
    for p in sys.path:
        base = pathlib.Path(p) / "nvidia"
        if base.is_dir():
            out += [d for d in (base / "cu13" / "bin", base / "cuda_nvcc" / "bin", base / "cuda_nvdisasm" / "bin")
                    if d.is_dir()]
    return out


def _find(tool: str) -> Optional[str]:
    for d in _wheel_bins():
        if (d / tool).exists():
            return str(d / tool)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (pathlib.Path(home) / "bin" / tool).exists():
        return str(pathlib.Path(home) / "bin" / tool)
    found = shutil.which(tool)
    if found:
        return found
    if pathlib.Path("/usr/local/cuda/bin", tool).exists():
        return str(pathlib.Path("/usr/local/cuda/bin", tool))
    return None


def toolchain() -> Optional[dict]:
    """``{"ptxas": path, "nvdisasm": path, "version": "…"}`` when both tools are found, else None."""
    if "t" in _toolchain_memo:
        return _toolchain_memo["t"]
    ptxas, nvdisasm = _find("ptxas"), _find("nvdisasm")
    result = None
    if ptxas and nvdisasm:
        try:
            v = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=30).stdout
            m = re.search(r"release ([\d.]+), (V[\d.]+)", v)
            result = {"ptxas": ptxas, "nvdisasm": nvdisasm, "version": m.group(2) if m else v.strip()[-40:]}
        except (OSError, subprocess.SubprocessError):
            result = None
    _toolchain_memo["t"] = result
    return result


# --------------------------------------------------------------------------------------------------
# Describing a kernel: a fingerprint (the cache key) and a portable spec (what the child rebuilds)


def rel_filename(name: str) -> str:
    """A source file name that is the same on every machine: repo-relative, or an IPython cell's own name."""
    try:
        return pathlib.Path(name).resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        pass
    if "ipykernel_" in name or name.startswith("<ipython-input"):
        return "<cell>/" + pathlib.Path(name).name  # ipykernel names a cell's file by a hash of its text
    return name


def _device_fn(value):
    """The Python function behind a device-function object (simulator or GPU), else None (the engine's rule)."""
    from course.engine import device_py_func  # the parent process only: the child never describes

    return device_py_func(value)


def _importable(value) -> Optional[tuple]:
    """(module, qualified name) when ``value`` is reachable by import under that name, else None."""
    mod, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not mod or not qual or mod == "__main__" or "<locals>" in qual:
        return None
    obj = sys.modules.get(mod)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return (mod, qual) if obj is value else None


def _code_names(code) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def _code_print(code, h) -> None:
    """Fingerprint a function's code by its source text (the same on every Python version), else bytecode."""
    h.update(rel_filename(code.co_filename).encode() + b":%d" % code.co_firstlineno)
    try:
        import inspect

        h.update(inspect.getsource(code).encode())
        return
    except (OSError, TypeError):
        pass
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_print(c, h)
        else:
            h.update(repr((type(c).__name__, c)).encode())


class _Describer:
    """Walks a kernel and what it reads; builds the fingerprint and the spec together."""

    def __init__(self):
        self.h = hashlib.sha256()
        self.funcs: dict = {}  # id(fn) -> index in specs
        self.specs: list = []

    def value(self, v, depth=0):
        """A spec entry for one global or closure value (and its part of the fingerprint)."""
        h = self.h
        if isinstance(v, types.ModuleType):
            name = v.__name__
            if name.startswith("numba.cuda"):
                name = "numba.cuda"  # the simulator's module stands for the real one
            h.update(b"mod:" + name.encode())
            return ("mod", name)
        inner = _device_fn(v)
        if inner is not None or isinstance(v, types.FunctionType):
            fn = inner if inner is not None else v
            ref = _importable(v)
            self.func(fn, depth + 1)  # its code is part of the fingerprint even when imported by name
            if ref is not None:
                return ("attr",) + ref
            return ("dev" if inner is not None else "py", self.funcs[id(fn)])
        ref = _importable(v) if not isinstance(v, (int, float, complex, str, bytes, bool, tuple)) else None
        if ref is not None:
            h.update(("attr:%s.%s" % ref).encode())
            return ("attr",) + ref
        try:
            data = pickle.dumps(v, protocol=4)
        except Exception:
            h.update(("unpicklable:" + type(v).__name__).encode())
            return ("missing", type(v).__name__)
        h.update(b"val:" + repr(v).encode() + type(v).__name__.encode())
        return ("val", data)

    def func(self, fn, depth=0):
        if id(fn) in self.funcs or depth > 20:
            return self.funcs.get(id(fn))
        idx = len(self.specs)
        self.funcs[id(fn)] = idx
        spec = {"name": fn.__name__, "code": None, "globals": {}, "closure": None, "defaults": None}
        self.specs.append(spec)
        code = fn.__code__
        self.h.update(b"fn:" + fn.__name__.encode())
        _code_print(code, self.h)
        spec["code"] = marshal.dumps(code)
        spec["filename"] = code.co_filename
        g = fn.__globals__
        for name in sorted(_code_names(code)):
            if name in g:
                self.h.update(b"g:" + name.encode())
                spec["globals"][name] = self.value(g[name], depth)
        spec["module"] = g.get("__name__")
        if fn.__closure__:
            cells = []
            for cell in fn.__closure__:
                try:
                    cells.append(self.value(cell.cell_contents, depth))
                except ValueError:
                    cells.append(("empty",))
            spec["closure"] = cells
        if fn.__defaults__:
            spec["defaults"] = self.value(tuple(fn.__defaults__), depth)
        return idx


def describe(fn, argtypes) -> tuple:
    """(fingerprint, spec) of kernel function ``fn`` compiled for ``argtypes`` (numba types)."""
    d = _Describer()
    d.func(fn)
    d.h.update(repr((tuple(str(t) for t in argtypes), CC, FORMAT)).encode())
    spec = {"functions": d.specs, "kernel": 0, "argtypes": pickle.dumps(tuple(argtypes), protocol=4),
            "cc": CC,
            "label": f"{rel_filename(fn.__code__.co_filename)}:{fn.__code__.co_firstlineno} {fn.__name__}"
                     f"({', '.join(str(t) for t in argtypes)})"}
    return d.h.hexdigest()[:32], spec


# --------------------------------------------------------------------------------------------------
# The child: rebuild, compile, disassemble


#: The start of a child script (``python -c``, the repository root as ``sys.argv[1]``) that imports the
#: course's modules as for a GPU, on a machine without one: numba in hardware mode, and a bare ``course``
#: package whose backend says "gpu", so kernel modules take their GPU branch (course.on_gpu()) and
#: kernels type and compile as on the H200.  tests/test_gpu_typing.py starts its child the same way.
HARDWARE_MODE_PRELUDE = r'''
import os, sys, types
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
os.environ.pop("COURSE_BACKEND", None)
root = sys.argv[1]
pkg = types.ModuleType("course"); pkg.__path__ = [root + "/course"]; sys.modules["course"] = pkg
sys.path.insert(0, root)
import course.backend as backend
backend._chosen = "gpu"
pkg.on_gpu, pkg.pick, pkg.BACKEND = backend.on_gpu, backend.pick, "gpu"
'''

_CHILD = HARDWARE_MODE_PRELUDE + r'''
import pickle, json
from course.trace import compiler
compiler.target_without_a_driver()
jobs = pickle.load(sys.stdin.buffer)
out = [compiler._child_compile(job, sys.argv[2], sys.argv[3]) for job in jobs]
sys.stdout.write("\n@@FACTS@@" + json.dumps(out))
'''


def target_without_a_driver() -> None:
    """In a child, before compiling: numba-cuda compiles a device function (``cuda.jit(device=True)``) for the current
    device's compute capability, which it asks the driver for (``CUDADispatcher.compile_device``); without a GPU that
    raised CudaSupportError, and every kernel calling one had no compiler facts. Without a driver, the course's target
    (:data:`CC`) is the current device's. (Called after the child's import path is set: importing numba in the
    prelude, before the typing child restores its parent's path, loaded the system's numpy instead of the lane's.)"""
    import numba.cuda.dispatcher as dispatcher

    real = dispatcher.get_current_device

    class Target:
        compute_capability = CC

    def current_device():
        try:
            return real()
        except Exception:
            return Target()

    dispatcher.get_current_device = current_device


def rebuild(spec):
    """In a child: the kernel function of a :func:`describe` spec, its globals, closure and device functions rebuilt."""
    import importlib

    from numba import cuda

    built: dict = {}

    def resolve(ref):
        kind = ref[0]
        if kind == "mod":
            return importlib.import_module(ref[1])
        if kind == "attr":
            obj = importlib.import_module(ref[1])
            for part in ref[2].split("."):
                obj = getattr(obj, part)
            return obj
        if kind == "val":
            return pickle.loads(ref[1])
        if kind in ("dev", "py"):
            fn = build(ref[1])
            return cuda.jit(device=True)(fn) if kind == "dev" else fn
        raise RuntimeError(f"the kernel reads a value of type {ref[1]} that cannot be sent to the compiler")

    def build(i):
        if i in built:
            return built[i]
        f = spec["functions"][i]
        g = {"__builtins__": __builtins__, "__name__": f.get("module") or "__kernel__"}
        code = marshal.loads(f["code"])
        closure = None
        if f["closure"] is not None:
            closure = tuple(types.CellType() for _ in f["closure"])
        fn = types.FunctionType(code, g, f["name"], None, closure)
        built[i] = fn
        for name, ref in f["globals"].items():
            g[name] = resolve(ref)
        if closure is not None:
            for cell, ref in zip(closure, f["closure"]):
                if ref[0] != "empty":
                    cell.cell_contents = resolve(ref)
        if f["defaults"] is not None:
            fn.__defaults__ = resolve(f["defaults"])
        return fn

    return build(spec["kernel"])


def _child_compile(spec, ptxas, nvdisasm) -> dict:
    """In the child: rebuild the kernel, compile it for sm_90, return its memory instructions per line."""
    from numba import cuda

    try:
        kernel = rebuild(spec)
        argtypes = pickle.loads(spec["argtypes"])
        ptx, _ = cuda.compile_ptx(kernel, argtypes, cc=tuple(spec["cc"]), lineinfo=True)
    except Exception as e:  # reported to the parent, which falls back to source-level counts
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d)
        (p / "k.ptx").write_text(ptx)
        cc = "sm_%d%d" % tuple(spec["cc"])
        r = subprocess.run([ptxas, f"-arch={cc}", "-O3", "-lineinfo", "-v", str(p / "k.ptx"), "-o", str(p / "k.cubin")],
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        if r.returncode:
            return {"error": "ptxas: " + (r.stderr or r.stdout).strip()[:300]}
        resources = ptxas_resources(r.stderr + r.stdout)
        r = subprocess.run([nvdisasm, "-g", "-c", str(p / "k.cubin")], capture_output=True, text=True,
                           timeout=TIMEOUT_S)
        if r.returncode:
            return {"error": "nvdisasm: " + (r.stderr or r.stdout).strip()[:300]}
    return {"lines": sass_by_line(r.stdout), "sass": dict(resources, **sass_summary_of(r.stdout))}


def sass_lines(sass: str):
    """``(source "file:line" or None, instruction text)`` for each line of an ``nvdisasm -g`` listing."""
    where = None
    for text in sass.splitlines():
        m = _LINE.search(text)
        if m:
            where = f"{rel_filename(m.group(1))}:{m.group(2)}"
            continue
        yield where, text


def sass_by_line(sass: str) -> dict:
    """``{"file:line": {mnemonic: count}}`` of the memory instructions in ``nvdisasm -g`` output."""
    lines: dict = {}
    for where, text in sass_lines(sass):
        mm = SASS_MEM_OP.match(text)
        if mm and where is not None:
            ops = lines.setdefault(where, {})
            ops[mm.group(2)] = ops.get(mm.group(2), 0) + 1
    return lines


_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores")
_SASS_ANY = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")


def ptxas_resources(text: str) -> dict:
    """Registers per thread, static shared bytes, stack frame and spill bytes from ``ptxas -v`` output."""
    def first(rx):
        m = rx.search(text)
        return int(m.group(1)) if m else 0

    return {"registers": first(_PTXAS_REGS), "shared_bytes": first(_PTXAS_SMEM),
            "local_bytes": first(_PTXAS_STACK), "spill_bytes": first(_PTXAS_SPILL)}


def sass_summary_of(sass: str) -> dict:
    """Every SASS instruction of an ``nvdisasm -g`` listing counted per source line and by opcode class.

    ``{"instructions": n, "per_line": {"file:line": n}, "ops": {opcode: n}, "loads_in_flight": n or None, "per_execution":
    {"file:line": n}, "float_atomics": share or None}``; what :mod:`course.measure.explain`
    reads to estimate a launch's instruction count (static counts: a loop's body counts once per copy the
    compiler made of it, which is why it is read per line beside the tracer's executed lines).
    """
    per_line: dict = {}
    ops: dict = {}
    n = 0
    for where, text in sass_lines(sass):
        mm = _SASS_ANY.match(text)
        if not mm or mm.group(2) in ("NOP",):
            continue
        n += 1
        per_line[where or "?"] = per_line.get(where or "?", 0) + 1
        ops[mm.group(2)] = ops.get(mm.group(2), 0) + 1
    wheres = [where for where, text in sass_lines(sass) if sass_flight.is_instruction(text)]
    return {"instructions": n, "per_line": per_line, "ops": ops, **sass_flight.facts(sass, wheres)}


# --------------------------------------------------------------------------------------------------
# Stores


def _user_cache() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "cuda-fast-course" / "compiler"


def _committed() -> dict:
    c = _memo.get("__committed__")
    if c is None:
        try:
            c = json.loads(FACTS_FILE.read_text()).get("kernels", {})
        except (OSError, ValueError):
            c = {}
        _memo["__committed__"] = c
    return c


def user_cache() -> pathlib.Path:
    """The per-user cache folder of compiled facts (:mod:`course.trace.compiler_typing` keeps its verdicts under it)."""
    return _user_cache()


def committed() -> dict:
    """The committed facts of ``data/compiler_facts.json``: ``{fingerprint: facts}`` (an "error" key: it did not compile)."""
    return _committed()


def _store(key, facts) -> None:
    try:
        d = _user_cache()
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(facts))
        os.replace(tmp, d / f"{key}.json")
    except OSError:
        pass


def write_committed(new: dict) -> None:
    """Add facts to ``data/compiler_facts.json`` (kept sorted, so a diff shows what changed); under a lock, so that
    the test workers of ``make compiler-facts`` can add theirs at once without losing each other's."""
    import fcntl

    with open(FACTS_FILE.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _write_committed(new)


def _write_committed(new: dict) -> None:
    try:
        data = json.loads(FACTS_FILE.read_text())
    except (OSError, ValueError):
        data = {}
    data.setdefault("what", "SASS memory instructions per source line of the course's kernels, compiled for sm_90 "
                            "by course/trace/compiler.py (numba-cuda -> NVVM -> ptxas -> nvdisasm); read by course/trace.py")
    kernels = data.setdefault("kernels", {})
    kernels.update(new)
    data["kernels"] = dict(sorted(kernels.items()))
    tmp = FACTS_FILE.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, FACTS_FILE)
    _memo.pop("__committed__", None)


def lookup(key) -> Optional[dict]:
    """Facts already known for ``key`` (committed or cached), else None."""
    if key in _memo:
        return _memo[key]
    f = _committed().get(key)
    if f is None:
        try:
            f = json.loads((_user_cache() / f"{key}.json").read_text())
        except (OSError, ValueError):
            f = None
    if f is not None:
        _memo[key] = f
    return f


def compile_facts(specs: dict) -> dict:
    """Compile ``{key: spec}`` in one child process; return ``{key: facts}`` (facts may hold an "error")."""
    tc = toolchain()
    if tc is None:
        raise CompilerUnavailable("ptxas and nvdisasm were not found (make toolkit installs them)")
    keys = list(specs)
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), tc["ptxas"], tc["nvdisasm"]],
                           input=pickle.dumps([specs[k] for k in keys], protocol=4), capture_output=True,
                           timeout=TIMEOUT_S * max(1, len(keys)))
    except subprocess.TimeoutExpired as e:
        raise CompilerUnavailable(f"the compiler did not finish in {e.timeout:.0f} s") from None
    out = r.stdout.decode(errors="replace")
    if "@@FACTS@@" not in out:
        err = (r.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise CompilerUnavailable(f"the compiler child failed: {err[:300]}")
    results = json.loads(out.split("@@FACTS@@", 1)[1])
    facts = {}
    for k, res in zip(keys, results):
        res["kernel"] = specs[k]["label"]
        res["toolchain"] = tc["version"]
        res["cc"] = "%d.%d" % CC
        facts[k] = res
    return facts


def facts_for(key, spec, compile: bool = True) -> Optional[dict]:
    """The facts for a described kernel (see :func:`describe`): looked up, else compiled when ``compile``.

    Returns ``{"lines": {"file:line": {mnemonic: count}}, "toolchain": ..., "cc": ..., "key": ...}``, a
    dict with ``"error"`` when the kernel did not compile for the GPU, or None when no compiler is at hand.
    """
    f = lookup(key)
    if f is None and key in _memo:
        return None  # tried before in this process: no compiler
    if f is None and compile:
        try:
            f = compile_facts({key: spec})[key]
        except CompilerUnavailable as e:
            _memo[key] = None
            _why[key] = str(e)
            return None
        _memo[key] = f
        if "error" not in f:
            _store(key, f)
    if f is None:
        _why.setdefault(key, "no compiler facts for this kernel")
        return None
    if os.environ.get("COURSE_COMPILER_FACTS_WRITE") and "error" not in f and key not in _committed():
        write_committed({key: f})  # e.g. facts from the user cache, while refreshing the committed file
    return dict(f, key=key)


def facts(fn, argtypes, compile: bool = True) -> Optional[dict]:
    """:func:`facts_for` of kernel function ``fn`` compiled for ``argtypes`` (numba types)."""
    key, spec = describe(fn, argtypes)
    return facts_for(key, spec, compile)


def summary(fn, argtypes, compile: bool = True, described: Optional[tuple] = None) -> Optional[dict]:
    """Registers, shared/local bytes and SASS instruction counts of ``fn`` compiled for ``argtypes``.

    Facts recorded before this summary existed hold only the memory instructions per line: those are compiled
    again when ``compile`` (and a compiler is at hand), else None.  ``described`` is :func:`describe`'s
    ``(fingerprint, spec)`` when the caller took it already (before anything swapped a name in the kernel's
    globals, as the explainer's loop sampler does while it traces).
    """
    key, spec = described if described is not None else describe(fn, argtypes)
    f = facts_for(key, spec, compile=compile)
    if f is not None and "sass" not in f and "error" not in f and compile and toolchain() is not None:
        try:
            f = compile_facts({key: spec})[key]
        except CompilerUnavailable:
            return None
        _memo[key] = f
        if "error" not in f:
            _store(key, f)
            if os.environ.get("COURSE_COMPILER_FACTS_WRITE"):
                write_committed({key: f})
    if f is None or "error" in f:
        return f
    if "sass" not in f:
        return None
    return dict(f["sass"], mem_lines={k: sum(v.values()) for k, v in f.get("lines", {}).items()})


def why(key) -> str:
    """Why no facts are known for ``key`` (after :func:`facts_for` returned None)."""
    return _why.get(key, "")


def vector_widths(f: Optional[dict], filename: str, line: int, store: bool) -> list:
    """Widths in bytes (16, 8) of vector shared-memory instructions the compiler emitted at one source line."""
    if not f or "lines" not in f:
        return []
    ops = f["lines"].get(f"{rel_filename(filename)}:{line}", {})
    prefix = "STS." if store else "LDS."
    out = set()
    for op in ops:
        if op.startswith(prefix):
            for part in op.split(".")[1:]:
                if part in ("64", "128"):
                    out.add(int(part) // 8)
    return sorted(out, reverse=True)

