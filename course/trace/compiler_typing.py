"""Typing only: would numba-cuda compile this kernel for a GPU?  (the CPU engine asks before a launch)  And what
ptxas gives it: registers and local memory per thread (an exercise's property asks, chapter 03 §2).

The engine runs Python, so it runs kernels a GPU refuses (a dict, ``'%d' % i``).  One child per process, started on
the first kernel that needs it and kept, types each unknown kernel signature with numba-cuda's own front end
(``compile_cuda``: typing and lowering to LLVM; no NVVM, no ptxas; ~20-400 ms a kernel after a ~2 s start).  The
kernel travels as :func:`course.trace.compiler.describe` makes it; a kernel whose committed compiler facts say it
compiled, or whose verdict is cached on disk (the compiler's user cache, ``typing/``), never reaches the child.

The same child answers :func:`gpu_resources`: numba-cuda's PTX for sm_90 (NVVM) put through ``ptxas -v``, about
0.2 s a kernel where a fresh compiler child (:func:`course.trace.compiler.summary`, with ``nvdisasm``) takes 2-3 s.
"""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
from typing import Optional

from course.trace.compiler import (
    HARDWARE_MODE_PRELUDE,
    ROOT,
    committed,
    describe,
    lookup,
    ptxas_resources,
    rebuild,
    summary,
    toolchain,
    user_cache,
)


TYPING_TIMEOUT_S = 60  # one kernel's typing; the child's start (importing numba-cuda) is inside the first

_TYPING_CHILD = HARDWARE_MODE_PRELUDE + r'''
import json, pickle, struct
# the parent's import path, in the parent's order and first (a wheel folder on PYTHONPATH, such as the GPU lane's numpy
# 2.4 that numba-cuda needs, must win over the system's site-packages, which -I puts first), without its sitecustomize
_parent = json.loads(sys.argv[2])
sys.path[:] = _parent + [p for p in sys.path if p not in _parent]
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")
from course.trace import compiler_typing as compiler
from course.trace.compiler import target_without_a_driver
target_without_a_driver()
out = sys.stdout
out.write("@@TYPING@@" + json.dumps(compiler._child_ready()) + "\n"); out.flush()
while True:
    head = sys.stdin.buffer.read(4)
    if len(head) < 4:
        break  # the parent is gone or done
    spec = pickle.loads(sys.stdin.buffer.read(struct.unpack("<I", head)[0]))
    out.write("@@TYPING@@" + json.dumps(compiler._child_answer(spec)) + "\n"); out.flush()
'''


def _child_ready() -> dict:
    """In the typing child: whether numba-cuda's compiler (NVVM) is here, and numba-cuda's version."""
    try:
        from numba.cuda.cudadrv import nvvm

        available = bool(nvvm.is_available())
    except Exception as e:  # numba-cuda not importable in hardware mode
        return {"available": False, "why": f"{type(e).__name__}: {e}"[:300]}
    return {"available": available, "why": "" if available else "NVVM (the CUDA compiler) was not found"}


def _child_answer(spec) -> dict:
    """In the typing child: the answer to one request (a typing verdict, or ptxas's resources when ``job`` says so)."""
    return _child_resources(spec) if spec.get("job") == "resources" else _child_type(spec)


def _child_resources(spec) -> dict:
    """In the typing child: ``{"resources": {registers, local_bytes, spill_bytes, ...}}`` from ``ptxas -v`` on the
    kernel's PTX for sm_90 (-O3, as the driver compiles it), ``{"error": why}`` when it does not compile, or
    ``{"unknown": why}`` when ptxas is not here or the kernel cannot be rebuilt."""
    from numba import cuda

    tc = toolchain()
    if tc is None:
        return {"unknown": "ptxas was not found"}
    try:
        kernel = rebuild(spec)
        argtypes = pickle.loads(spec["argtypes"])
    except Exception as e:
        return {"unknown": f"{type(e).__name__}: {e}"[:300]}
    try:
        ptx, _ = cuda.compile_ptx(kernel, argtypes, cc=tuple(spec["cc"]))
    except Exception as e:
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d)
        (p / "k.ptx").write_text(ptx)
        cc = "sm_%d%d" % tuple(spec["cc"])
        try:
            r = subprocess.run([tc["ptxas"], f"-arch={cc}", "-O3", "-v", str(p / "k.ptx"), "-o", str(p / "k.cubin")],
                               capture_output=True, text=True, timeout=TYPING_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as e:
            return {"unknown": f"ptxas did not run: {e}"[:300]}
    if r.returncode:
        return {"error": "ptxas: " + (r.stderr or r.stdout).strip()[:300]}
    return {"resources": dict(ptxas_resources(r.stderr + r.stdout), toolchain=tc["version"])}


def _child_type(spec) -> dict:
    """In the typing child: ``{"ok": True}``, ``{"refused": {...}}`` (numba-cuda's error) or ``{"unknown": why}``."""
    from numba.cuda import types as nt
    from numba.cuda.compiler import compile_cuda

    try:
        kernel = rebuild(spec)
        argtypes = pickle.loads(spec["argtypes"])
    except Exception as e:  # something the child cannot rebuild: no verdict, never a refusal
        return {"unknown": f"{type(e).__name__}: {e}"[:300]}
    where = _where_typing_failed()
    where.clear()
    try:
        compile_cuda(kernel, nt.void, argtypes, cc=tuple(spec["cc"]))
    except Exception as e:
        from numba.core.errors import NumbaError

        try:
            from numba.cuda.core.errors import NumbaError as CudaNumbaError
        except ImportError:
            CudaNumbaError = NumbaError
        if not isinstance(e, (NumbaError, CudaNumbaError)):
            return {"unknown": f"{type(e).__name__}: {e}"[:300]}
        loc = getattr(e, "loc", None) or where.get("loc")
        return {"refused": {"error": type(e).__name__, "message": str(e)[:4000],
                            "file": getattr(loc, "filename", None), "line": getattr(loc, "line", None)}}
    return {"ok": True}


_failed_at: dict = {}


def _where_typing_failed() -> dict:
    """In the typing child: ``{"loc": ir.Loc}`` of the innermost statement being typed when an error went through.

    numba-cuda 0.30's TypingError from a failed overload carries no location (its error context catches only its
    own NumbaError class), so the child wraps numba-cuda's ``new_error_context`` to note the statement itself.
    """
    if _failed_at.get("patched"):
        return _failed_at["where"]
    import contextlib

    where: dict = {}
    _failed_at.update(patched=True, where=where)
    try:
        from numba.cuda.core import errors as cuda_errors
        from numba.cuda.core import ir
    except ImportError:
        return where
    original = cuda_errors.new_error_context

    @contextlib.contextmanager
    def noting(fmt_, *args, **kwargs):
        try:
            with original(fmt_, *args, **kwargs):
                yield
        except Exception:
            loc = kwargs.get("loc") or next((a for a in args if isinstance(a, ir.Loc)), None)
            if loc is not None and "loc" not in where:
                where["loc"] = loc
            raise

    for mod in list(sys.modules.values()):
        if (getattr(mod, "__name__", "") or "").startswith("numba.cuda") and \
                getattr(mod, "new_error_context", None) is original:
            mod.new_error_context = noting
    return where


def _numba_cuda_version() -> str:
    try:
        from importlib.metadata import version

        return version("numba-cuda")
    except Exception:
        return "?"


class _TypingChild:
    """The long-lived typing child of this process (None-safe: ``available`` False when there is none)."""

    def __init__(self):
        import threading

        self.proc = None
        self.available = None  # unknown until started
        self.why = ""
        self.lock = threading.Lock()
        self.buf = b""

    def _readline(self, deadline) -> Optional[dict]:
        import select
        import time

        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.startswith(b"@@TYPING@@"):
                    return json.loads(line[len(b"@@TYPING@@"):])
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk

    def _start(self) -> None:
        import atexit
        import time

        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "COURSE_BACKEND")}
        try:
            # -I: no sitecustomize or PYTHON* variables (one that imports course would load numba's simulator
            # before the child's hardware mode); the parent's import path is handed over instead
            self.proc = subprocess.Popen([sys.executable, "-I", "-B", "-c", _TYPING_CHILD, str(ROOT), json.dumps(sys.path)],
                                         stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        except OSError as e:
            self.available, self.why = False, f"the typing child did not start: {e}"
            return
        atexit.register(self.close)
        ready = self._readline(time.monotonic() + TYPING_TIMEOUT_S)
        if ready is None:
            self.close()
            self.available, self.why = False, "the typing child did not answer"
            return
        self.available, self.why = bool(ready.get("available")), ready.get("why", "")
        if not self.available:
            self.close()

    def type(self, spec) -> Optional[dict]:
        import struct
        import time

        with self.lock:
            if self.available is None:
                self._start()
            if not self.available:
                return None
            data = pickle.dumps(spec, protocol=4)
            try:
                self.proc.stdin.write(struct.pack("<I", len(data)) + data)
                self.proc.stdin.flush()
            except OSError:
                self.close()
                self.available, self.why = False, "the typing child stopped"
                return None
            out = self._readline(time.monotonic() + TYPING_TIMEOUT_S)
            if out is None:  # hung or died: no verdict now, and no more asking in this process
                self.close()
                self.available, self.why = False, "the typing child did not answer in time"
            return out

    def close(self) -> None:
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            try:
                p.stdin.close()
                p.wait(timeout=5)
            except (OSError, subprocess.SubprocessError):
                p.kill()
                p.wait()


_typing_child = _TypingChild()
_verdicts: dict = {}  # fingerprint -> verdict, in this process


def gpu_typing(fn, argtypes) -> Optional[dict]:
    """How numba-cuda types kernel ``fn`` for ``argtypes`` (numba types) on an sm_90 GPU.

    ``{"ok": True}`` when it compiles (committed facts say so, a cached verdict, or the typing child), ``{"refused":
    {"error", "message", "file", "line"}}`` when numba-cuda refuses it, None when unknown (no CUDA compiler here,
    or the kernel reads something that cannot be sent to the child).  ``COURSE_GPU_TYPING=0`` turns it off.
    """
    if os.environ.get("COURSE_GPU_TYPING", "1") == "0":
        return None
    key, spec = describe(fn, argtypes)
    memo = ("typing", key)
    if memo in _verdicts:
        return _verdicts[memo]
    f = committed().get(key)
    if f is not None and "error" not in f:
        _verdicts[memo] = {"ok": True}  # it compiled (the committed facts)
        return _verdicts[memo]
    cached = _disk_verdict("typing", key)
    if cached is not None:
        _verdicts[memo] = cached
        return cached
    verdict = _typing_child.type(spec)
    if verdict is not None and "unknown" in verdict:
        verdict = None
    _verdicts[memo] = verdict
    if verdict is not None:
        _keep_verdict("typing", key, verdict)
    return verdict


def _disk_verdict(kind: str, key: str):
    """A verdict of ``kind`` (``typing``, ``resources``) cached on disk for this numba-cuda version, else None."""
    try:
        cached = json.loads((user_cache() / kind / f"{key}.json").read_text())
        if cached.get("numba_cuda") == _numba_cuda_version():
            return cached["verdict"]
    except (OSError, ValueError, KeyError):
        pass
    return None


def _keep_verdict(kind: str, key: str, verdict) -> None:
    """Cache a verdict on disk (written whole, then renamed), except under the grader, which writes nothing outside
    its --out folder (tests/test_grade_sandbox.py)."""
    if os.environ.get("COURSE_GRADE_FRESH"):
        return
    path = user_cache() / kind / f"{key}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{key}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"numba_cuda": _numba_cuda_version(), "verdict": verdict}))
        os.replace(tmp, path)
    except OSError:
        pass


_resources_why: dict = {}  # fingerprint -> why gpu_resources has no answer


def gpu_resources(fn, argtypes) -> Optional[dict]:
    """What ptxas gives kernel ``fn`` for ``argtypes`` (numba types) on an sm_90 GPU, as ``nvcc -Xptxas -v`` prints it.

    ``{"registers", "local_bytes" (the stack frame: local memory per thread), "spill_bytes", "shared_bytes",
    "toolchain"}``; ``{"error": why}`` when the kernel does not compile for a GPU; None when it cannot be known
    here (no CUDA compiler: :func:`resources_why` says so).  Committed or cached compiler facts answer first, then a
    verdict cached on disk (``resources/``), then the typing child.
    """
    key, spec = describe(fn, argtypes)
    memo = ("resources", key)
    if memo in _verdicts:
        return _verdicts[memo]
    if os.environ.get("COURSE_COMPILER_FACTS_WRITE"):  # make compiler-facts: the full facts, into the committed file
        summary(fn, argtypes)
    f = lookup(key)  # the tracer's facts (data/compiler_facts.json or its cache) hold the same ptxas numbers
    if f is not None and "sass" in f:
        _verdicts[memo] = {k: f["sass"][k] for k in ("registers", "local_bytes", "spill_bytes", "shared_bytes")}
        _verdicts[memo]["toolchain"] = f.get("toolchain", "?")
        return _verdicts[memo]
    cached = _disk_verdict("resources", key)
    if cached is not None:
        _verdicts[memo] = cached
        return cached
    if toolchain() is None:
        _resources_why[key] = "ptxas (the CUDA compiler's last stage) was not found"
        return None
    out = _typing_child.type(dict(spec, job="resources"))
    if out is None or "unknown" in out:
        _resources_why[key] = (out or {}).get("unknown") or _typing_child.why or "the compiler child did not answer"
        return None
    verdict = out["resources"] if "resources" in out else {"error": out.get("error", "it did not compile")}
    _verdicts[memo] = verdict
    _keep_verdict("resources", key, verdict)
    return verdict


def resources_why(fn, argtypes) -> str:
    """Why :func:`gpu_resources` gave no answer for this kernel ("" when it did, or was not asked)."""
    return _resources_why.get(describe(fn, argtypes)[0], "")


def _same_code(fn, shipped) -> bool:
    """True when function ``fn`` is ``shipped``'s code as the course ships it: the same source and the same numbers
    in the globals it names (a chapter's kernel cell, unchanged, beside its source in ``course/kernels/``)."""
    import inspect

    try:
        if inspect.getsource(fn) != inspect.getsource(shipped):
            return False
    except (OSError, TypeError):
        return False
    names = set(fn.__code__.co_names)

    def numbers(f):
        return {k: v for k, v in f.__globals__.items() if k in names and isinstance(v, (int, float))}

    return numbers(fn) == numbers(shipped)


def kernel_resources(kernel, args, shipped=None) -> tuple:
    """``(resources or None, why none, kernel name)``: :func:`gpu_resources` of a kernel object launched with ``args``.

    ``shipped``: the course's copy of a chapter's kernel cell (a module's kernel). While the cell is unchanged its
    committed facts answer for it: a cell's own fingerprint takes in the notebook's globals named like its
    attributes (an ``x`` beside ``threadIdx.x``), so it is not the same from one run of a chapter to the next.
    """
    from numba import typeof

    from course.engine import kernel_py_func

    fn = kernel_py_func(kernel)
    argtypes = tuple(typeof(a) for a in args)
    res = gpu_resources(fn, argtypes)
    if res is None and shipped is not None and _same_code(fn, kernel_py_func(shipped)):
        res = gpu_resources(kernel_py_func(shipped), argtypes)
    return res, "" if res is not None else (resources_why(fn, argtypes) or "no compiler answered"), fn.__name__


def typing_why() -> str:
    """Why :func:`gpu_typing` gives no verdicts in this process ("" while it does, or before it was asked)."""
    return _typing_child.why
