"""course.trace.compiler: what ptxas makes of a kernel, read without a GPU, and how the tracer uses it."""

from __future__ import annotations

import numpy as np
import pytest

import course  # noqa: F401
from course.trace import compiler
from course.trace import trace
from numba import cuda, float32, typeof

WIDTH = 64
NEEDS_TOOLKIT = pytest.mark.skipif(compiler.toolchain() is None,
                                   reason="ptxas/nvdisasm not installed (make toolkit); `make test` installs them")

SASS = """
        //## File "/somewhere/course/kernels/matmul.py", line 272
        /*0400*/                   LDS R4, [R2] ;
        /*0410*/                   LDS.128 R8, [R3+0x10] ;
        /*0420*/               @P0 LDS R5, [R2+0x40] ;
        /*0430*/                   FFMA R6, R4, R8, R6 ;
        //## File "/somewhere/course/kernels/matmul.py", line 274
        /*0500*/               @!P1 STG.E desc[UR4][R6.64], R7 ;
        /*0510*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
"""


def test_sass_by_line_counts_memory_instructions_under_their_source_line():
    lines = compiler.sass_by_line(SASS)
    assert lines == {"/somewhere/course/kernels/matmul.py:272": {"LDS": 2, "LDS.128": 1},
                     "/somewhere/course/kernels/matmul.py:274": {"STG.E": 1}}
    f = {"lines": lines}
    assert compiler.vector_widths(f, "/somewhere/course/kernels/matmul.py", 272, store=False) == [16]
    assert compiler.vector_widths(f, "/somewhere/course/kernels/matmul.py", 272, store=True) == []
    assert compiler.vector_widths(None, "x.py", 1, store=False) == []


def test_file_names_are_the_same_on_every_machine():
    assert compiler.rel_filename(str(compiler.ROOT / "course" / "kernels" / "matmul.py")) == "course/kernels/matmul.py"
    assert compiler.rel_filename("/tmp/ipykernel_4242/1234567.py") == "<cell>/1234567.py"


def _make(k_stride):
    @cuda.jit
    def row_sum(a, out):
        s = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        for k in range(4):
            s[t + 64 * k] = a[t + 64 * k]
        cuda.syncthreads()
        acc = float32(0.0)
        for k in range(4):
            acc += s[k_stride * t + k]
        out[t] = acc

    return row_sum


def _fn(kernel):
    return getattr(kernel, "fn", None) or kernel.py_func


def test_the_fingerprint_follows_code_constants_and_types():
    a = np.zeros(256, np.float32)
    types_ = (typeof(a), typeof(a[:64]))
    k4, k4b, k3 = _make(4), _make(4), _make(3)
    key4, spec = compiler.describe(_fn(k4), types_)
    assert compiler.describe(_fn(k4b), types_)[0] == key4  # the same code and closure value
    assert compiler.describe(_fn(k3), types_)[0] != key4  # another closure value
    assert compiler.describe(_fn(k4), (typeof(a.astype(np.float64)), types_[1]))[0] != key4  # other types
    assert spec["label"].endswith("row_sum(array(float32, 1d, C), array(float32, 1d, C))")


@NEEDS_TOOLKIT
def test_a_kernel_made_here_compiles_and_the_tracer_follows_ptxas(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # compile now, not from a cache
    monkeypatch.setattr(compiler, "_memo", {})
    monkeypatch.delenv("COURSE_COMPILER_FACTS_WRITE", raising=False)
    a = np.arange(256, dtype=np.float32)
    merged, unaligned = _make(4), _make(3)  # s[4t + k]: 16-byte aligned runs; s[3t + k]: not
    out = np.zeros(64, np.float32)
    r = trace(merged, 1, 64, a, out)
    assert np.array_equal(out, a.reshape(64, 4).sum(axis=1))
    line = r.compiler["merged_lines"]
    assert len(line) == 1 and "acc += s[k_stride * t + k]" in open(__file__).read().splitlines()[line[0] - 1]
    assert r.totals()["shared_load_requests"] == 2  # one LDS.128 per warp
    assert trace(merged, 1, 64, a, out, compiler=False).totals()["shared_load_requests"] == 8  # the source's 4 per warp
    r3 = trace(unaligned, 1, 64, a, out)
    assert r3.compiler["merged_lines"] == [] and r3.compiler["facts"]  # asked, and ptxas did not merge
    assert r3.totals()["shared_load_requests"] == 8
    assert list(tmp_path.rglob("*.json"))  # cached for next time


@NEEDS_TOOLKIT
def test_a_kernel_that_does_not_compile_for_the_gpu_keeps_source_counts(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiler, "_memo", {})

    @cuda.jit
    def bad(a, out):
        s = cuda.shared.array((4, WIDTH), float32)
        scale = {0: 1.0}  # a dict: runs on the CPU, not on a GPU (numba-cuda has no dict)
        t = cuda.threadIdx.x
        for k in range(4):
            s[k, t] = a[4 * t + k]
        cuda.syncthreads()
        acc = float32(0.0)
        for k in range(4):
            acc += s[k, t] + s[0, 4 * (t // 4) + k]
        out[t] = acc * scale[0]

    # the engine refuses it before it runs (issue 27: what a GPU compile refuses is refused, traced or not) ...
    from course import backend
    from course.engine import KernelError

    if not backend.on_gpu():  # on a GPU machine numba-cuda's own compile refuses it, at its launch
        with pytest.raises(KernelError, match="dict"):
            trace(bad, 1, 64, np.ones(256, np.float32), np.zeros(64, np.float32))
    # ... and with that check off (COURSE_GPU_TYPING=0) the tracer keeps the source's counts and says why
    monkeypatch.setenv("COURSE_GPU_TYPING", "0")
    r = trace(bad, 1, 64, np.ones(256, np.float32), np.zeros(64, np.float32))
    assert r.compiler["facts"] is None and "did not compile for the GPU" in r.compiler["why"]


def test_without_facts_the_tracer_says_which_lines_it_could_not_settle(monkeypatch, tmp_path):
    monkeypatch.setattr(compiler, "toolchain", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiler, "_memo", {})
    k = _make(4)
    a = np.arange(256, dtype=np.float32)
    r = trace(k, 1, 64, a, np.zeros(64, np.float32))
    assert r.compiler["facts"] is None and r.compiler["unknown_lines"] and "ptxas" in r.compiler["why"]
    assert r.totals()["shared_load_requests"] == 8  # the source's count, said to be so
    assert any(row.merge_unknown for row in r.by_line())
    assert "may merge these shared accesses" in r.table() and "make toolkit" in r.table()
    with pytest.raises(compiler.CompilerUnavailable, match="no compiler facts"):
        trace(k, 1, 64, a, np.zeros(64, np.float32), compiler=True)


# --- what ptxas gives a kernel: registers and local memory (chapter 03 §2, the exercise 03.bin_counts) -------------


@NEEDS_TOOLKIT
def test_a_table_updated_at_a_data_index_gets_local_memory_and_counts_in_registers_do_not(monkeypatch, tmp_path):
    from course import engine
    from course.kernels import memory as m
    from course.trace import compiler_typing

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiler, "_memo", {})
    monkeypatch.setattr(compiler_typing, "_verdicts", {})
    monkeypatch.delenv("COURSE_COMPILER_FACTS_WRITE", raising=False)

    @cuda.jit
    def per_value(x, out):  # the bin b is the loop's counter: known when compiling
        i = cuda.grid(1)
        if i < x.shape[1]:
            for b in range(16):
                c = 0
                for k in range(x.shape[0]):
                    if x[k, i] == b:
                        c += 1
                out[b, i] = c

    x, out = np.zeros((8, 64), np.int32), np.zeros((16, 64), np.int32)
    argtypes = (typeof(x), typeof(out))
    table = compiler_typing.gpu_resources(engine.kernel_py_func(m.bin_counts_local), argtypes)
    assert table["local_bytes"] == 16 * 4  # the whole table of 16 int32 counts
    assert compiler_typing.gpu_resources(per_value.py_func, argtypes)["local_bytes"] == 0
    assert list((tmp_path / "cuda-fast-course" / "compiler" / "resources").glob("*.json"))  # cached for next time


def test_the_chapters_prediction_needs_no_compiler(monkeypatch, tmp_path):
    # chapter 03 §2 asks ptxas's local bytes of its bin_counts_local cell: without a compiler or a cache,
    # data/compiler_facts.json answers for the course's copy while the cell is unchanged (run make compiler-facts
    # after editing course/kernels/memory.py above the kernel); a changed cell is refused with what to do
    import json

    from course.kernels import memory as m
    from course.show import lab
    from course.trace import compiler_typing

    nb = json.loads((compiler.ROOT / "notebooks" / "03_memory_coalescing.ipynb").read_text(encoding="utf-8"))
    text = next("".join(c["source"]) for c in nb["cells"]
                if c["cell_type"] == "code" and c["metadata"].get("course", {}).get("kernel") == "memory.bin_counts_local")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiler, "_memo", {})
    monkeypatch.setattr(compiler_typing, "_verdicts", {})
    monkeypatch.setattr(compiler_typing, "toolchain", lambda: None)
    monkeypatch.delenv("COURSE_COMPILER_FACTS_WRITE", raising=False)
    x, out = np.zeros((8, 128), np.int32), np.zeros((16, 128), np.int32)
    cell = tmp_path / "cell.py"  # the cell's text, in a file of its own (its globals: a notebook's, say an x)
    cell.write_text(text)
    ns = {"__name__": "__main__", "x": np.arange(3)}
    exec(compile(text, str(cell), "exec"), ns)
    assert lab.compiled(ns["bin_counts_local"], x, out, shipped=m.bin_counts_local)["local_bytes"] == 16 * 4
    ns["BINS"] = 8  # the learner's change: no facts for it here
    with pytest.raises(LookupError, match="make toolkit"):
        lab.compiled(ns["bin_counts_local"], x, out, shipped=m.bin_counts_local)



@NEEDS_TOOLKIT
def test_a_kernel_that_calls_a_device_function_compiles_without_a_gpu(monkeypatch, tmp_path):
    """numba-cuda compiles a device function for the current device's compute capability, which it asks the driver
    for: without a GPU the compiler child answers sm_90 (before, every such kernel — chapter 07's warp-shuffle
    reduction, the tiled matmuls — had no compiler facts and the explainer fell back to a rough instruction
    estimate)."""
    from course import engine
    from course.kernels import reduction

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # compile now, not from a cache
    monkeypatch.setattr(compiler, "_memo", {})
    monkeypatch.delenv("COURSE_COMPILER_FACTS_WRITE", raising=False)
    x = np.ones(64, np.float32)
    fn = engine.kernel_py_func(reduction.warp_shuffle)
    assert {"load_float4", "block_sum"} <= set(fn.__code__.co_names)  # two device functions of the module
    key, spec = compiler.describe(fn, (typeof(x), typeof(x)))
    f = compiler.compile_facts({key: spec})[key]
    assert "error" not in f, f.get("error")
    assert f["sass"]["registers"] > 0 and any("LDG.E.128" in v for v in f["lines"].values())  # load_float4's


def test_the_childrens_prelude_imports_neither_numba_nor_numpy():
    """The typing child runs with -I and puts its parent's import path back only after the prelude: a numba (or numpy)
    imported in the prelude comes from the system's site-packages, not from the path the parent had (the GPU lane's
    numpy 2.4 wheel: with the system's numpy 2.5 every kernel cell's compile failed with 'no attribute row_stack')."""
    import subprocess
    import sys

    code = compiler.HARDWARE_MODE_PRELUDE + "\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'numpy')))"
    r = subprocess.run([sys.executable, "-I", "-c", code, str(compiler.ROOT)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.strip() == "[]", r.stdout
