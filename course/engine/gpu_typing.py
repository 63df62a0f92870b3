"""Refusing what a GPU compile refuses: a launch asks numba-cuda's typing (where it is installed) first.

The engine runs kernels as Python, so a dict, ``'%d' % i`` or a list inside a kernel would run here while
numba-cuda refuses to compile it for the H200 ("No implementation of function getitem / mod").  Before a kernel
signature first runs, :func:`check` asks :func:`course.trace.compiler_typing.gpu_typing` (committed facts, a verdict cached
on disk, else one typing child per process) and raises numba's refusal as a :class:`KernelError` that names the
kernel, its file and line, numba's first useful line and what to do.  Without the CUDA compiler nothing new is
refused.  ``COURSE_GPU_TYPING=0`` turns the check off.
"""

from __future__ import annotations

import linecache
import os
import re

import numpy as np

from course.engine import simulator
from course.engine.messages import typed_error

_COURSE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FUNCTION = re.compile(r"Function\(<(?:built-in function|function) ([\w.]+)[^>]*>\)")

#: What to do, by what numba-cuda's message names (first hit wins).
_ADVICE = (
    (re.compile(r"(?:get|set)item\(array\(.*\), (?:\w*Tuple\()?.*float"),
     "an array index must be an integer: `/` gives a float in Python and in numba-cuda, so use `//` (i // 2), "
     "or int(...)"),
    (re.compile(r"No implementation of function (?:array|local\.array|shared\.array)\b"),
     "the shape of cuda.shared.array / cuda.local.array must be a constant numba-cuda knows when it compiles (a "
     "literal, or a global constant), not a value known only at launch such as a kernel argument"),
    (re.compile(r"DictType|build_map|\bdict\b", re.I),
     "a dict does not exist inside a GPU kernel: use an array indexed by an integer (a lookup table passed in as "
     "an argument, or cuda.local.array for a small per-thread one)"),
    (re.compile(r"unicode_type|Literal\[str\]|format", re.I),
     "strings cannot be built inside a kernel ('%d' % x, f-strings, str.format, str(x)): print(...) takes constant "
     "strings and numbers (print('i =', i)), or write the value into an output array and format it on the host"),
    (re.compile(r"reflected list|List\(|build_list|\blist\b", re.I),
     "a Python list does not exist inside a kernel: use cuda.local.array(n, dtype) for a small per-thread array, "
     "or an array passed in as an argument"),
)
_DEFAULT_ADVICE = ("use only what numba-cuda compiles inside a kernel: numbers, arrays, tuples, math functions and "
                   "cuda.* (numba-cuda's documentation, 'Supported Python features in CUDA Python')")


def _argtypes(args, host_array):
    """The numba types a GPU launch gives ``args`` (None when one cannot be typed: then nothing is checked)."""
    from numba import typeof

    out = []
    for a in args:
        host = host_array(a)
        if host is None and hasattr(a, "copy_to_host") and hasattr(a, "__cuda_array_interface__"):
            host = np.empty(a.shape, a.dtype)  # a device array types as the host array of its shape and dtype
        try:
            out.append(typeof(host if host is not None else a))
        except Exception:
            return None
    return tuple(out)


def first_useful_line(message: str) -> str:
    """numba's refusal in one line: ``No implementation of function mod for mod(Literal[str](%d), int32)``."""
    lines = [ln.strip() for ln in _ANSI.sub("", message).splitlines() if ln.strip()]
    if not lines:
        return "numba-cuda refused it"
    head = _FUNCTION.sub(lambda m: m.group(1).rpartition(".")[2], lines[0]).rstrip(":")
    call = next((ln[3:].strip() for ln in lines[1:4] if ln.startswith(">>>")), None)
    if call and head.endswith("found for signature"):
        head = head[: -len(" found for signature")] + f" for {call}"
    return head


def refusal_message(name, fn, refused) -> str:
    """What a learner reads when numba-cuda refuses kernel ``name`` (``refused``: :func:`gpu_typing`'s dict)."""
    message = refused.get("message", "")
    file, line = refused.get("file"), refused.get("line")
    src = ""
    if not file or not line:  # numba named no statement: the kernel's own first line
        file, line = fn.__code__.co_filename, fn.__code__.co_firstlineno
    else:
        src = linecache.getline(file, line).strip()
    if "ipykernel" in file or file.startswith("<"):
        place = f"line {line} of the notebook cell that defines it" if src else "it (in the notebook cell that defines it)"
    else:
        place = f"{os.path.relpath(file) if file.startswith(os.getcwd()) else file}:{line}"
        place = place if src else f"it (defined at {place})"
    said = first_useful_line(message) + "\n" + message
    advice = next((text for rx, text in _ADVICE if rx.search(said)), _DEFAULT_ADVICE)
    return (f"kernel `{name}` does not compile for a GPU: numba-cuda refuses {place}"
            + (f":\n    {src}\n" if src else "\n")
            + f"{refused.get('error', 'TypingError')}: {first_useful_line(message)}\n"
            f"What to do: {advice}.\n"
            "(The CPU engine could run it, but a GPU launch would fail the same way: the engine checks each kernel "
            "with numba-cuda's own typing for an H200.)")


def check(kernel, fn, name, args, host_array) -> None:
    """Raise numba-cuda's refusal of ``fn`` for these ``args`` as a KernelError; nothing when it compiles or
    when no CUDA compiler is here.  ``host_array``: the host array behind a simulated device array, else None."""
    if simulator.is_gpu_dispatcher(kernel):  # a real GPU build: numba-cuda compiles it anyway
        return
    if os.environ.get("COURSE_GPU_TYPING", "1") == "0":
        return
    if fn.__code__.co_filename.startswith(_COURSE):
        return  # the course's own kernels compile for the H200 (the GPU lane runs them); some use intrinsics
        # (course.kernels.vector) whose GPU form the child cannot rebuild from the engine's
    argtypes = _argtypes(args, host_array)
    if argtypes is None:
        return
    memo = (fn.__code__, argtypes)
    verdict = _seen.get(memo, _seen)
    if verdict is _seen:
        verdict = _seen[memo] = _ask(fn, argtypes)
    if verdict is None or "refused" not in verdict or not verdict["refused"].get("line"):
        # a refusal that names no statement may be the child's rebuild, not the kernel (a CPU-side device
        # function standing for a GPU intrinsic): the engine's own checks speak instead
        return
    from numba.core.errors import TypingError

    raise typed_error(TypingError, refusal_message(name, fn, verdict["refused"]), kernel=name,
                      line=verdict["refused"].get("line"))


_seen: dict = {}  # (code, argtypes) -> verdict: a launch loop asks once (a global changed later is not seen)


def _ask(fn, argtypes):
    # the GPU compiler's child lives with the tracer's compiler facts (one describer, one cache); imported here,
    # when a launch is checked, never when the engine is imported
    from course.trace import compiler_typing

    return compiler_typing.gpu_typing(fn, argtypes)
