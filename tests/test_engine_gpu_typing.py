"""The engine refuses what numba-cuda refuses for an sm_90 GPU (issue 27): a dict, string formatting.

What numba-cuda refuses is numba-cuda's own verdict (its typing in the compiler's child), never the engine's: these
kernels run on the engine's Python unless the check stops them.  Where the CUDA compiler is not installed the check
says nothing, and the tests that need it are skipped with that reason.
"""

import time

import numpy as np
import pytest

from course import backend
from course.engine import KernelError
from course.trace import compiler_typing
from numba import cuda

cpu_only = pytest.mark.skipif(backend.on_gpu(), reason="a GPU refuses these kernels itself, at compile time")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A cache of verdicts of its own, and no verdict remembered in this process."""
    from course.engine import gpu_typing

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiler_typing, "_verdicts", {})
    monkeypatch.setattr(gpu_typing, "_seen", {})
    return tmp_path


def _needs_compiler():
    if compiler_typing.typing_why():
        pytest.skip("no CUDA compiler here (make toolkit installs it): " + compiler_typing.typing_why())


@cuda.jit
def lookup_in_a_dict(out):
    i = cuda.threadIdx.x
    table = {0: 1.5, 1: 2.5}
    out[i] = table[i % 2]


@cuda.jit
def format_a_string(out):
    i = cuda.threadIdx.x
    label = "%d" % i
    out[i] = len(label)


@cuda.jit
def double_it(out):
    i = cuda.threadIdx.x
    out[i] = out[i] * 2


@cpu_only
def test_a_dict_in_a_kernel_is_refused_with_its_line(fresh):
    out = np.zeros(4, np.float32)
    t0 = time.monotonic()
    try:
        lookup_in_a_dict[1, 4](out)
    except KernelError as e:
        message = str(e)
    else:
        _needs_compiler()
        pytest.fail("a kernel with a dict ran on the engine where numba-cuda refuses it")
    assert time.monotonic() - t0 < 10, "the refusal took longer than 10 s"
    assert "kernel `lookup_in_a_dict` does not compile for a GPU" in message
    assert "test_engine_gpu_typing.py:" in message and "out[i] = table[i % 2]" in message
    assert "getitem" in message and "DictType" in message  # numba's own words, in one line
    assert "a dict does not exist inside a GPU kernel" in message
    assert "Traceback" not in message and "candidate implementations" not in message
    assert not out.any(), "nothing ran: a GPU refuses the kernel before the launch"


@cpu_only
def test_string_formatting_in_a_kernel_is_refused_as_numba_types_it(fresh):
    from numba.core.errors import TypingError

    out = np.zeros(2, np.int32)
    with pytest.raises(KernelError) as info:
        try:
            format_a_string[1, 2](out)
        except KernelError:
            raise
        else:
            _needs_compiler()
    assert isinstance(info.value, TypingError)  # `except TypingError` catches it, as after a GPU compile
    message = str(info.value)
    assert 'label = "%d" % i' in message and "mod(Literal[str](%d), int32)" in message
    assert "strings cannot be built inside a kernel" in message
    assert info.value.line == format_a_string.py_func.__code__.co_firstlineno + 3


@cpu_only
def test_a_kernel_that_compiles_runs_and_its_verdict_is_kept_on_disk(fresh):
    out = np.arange(4, dtype=np.float32)
    double_it[1, 4](out)
    np.testing.assert_array_equal(out, [0, 2, 4, 6])
    _needs_compiler()
    kept = list((fresh / "cuda-fast-course" / "compiler" / "typing").glob("*.json"))
    assert len(kept) == 1 and '"ok": true' in kept[0].read_text()


@cpu_only
def test_kernels_known_to_compile_never_reach_the_child(fresh, monkeypatch):
    def no_child(spec):
        raise AssertionError(f"asked the typing child about {spec['label']}")

    monkeypatch.setattr(compiler_typing._typing_child, "type", no_child)
    out = np.arange(4, dtype=np.float32)
    from numba import typeof

    key, _ = compiler_typing.describe(double_it.py_func, (typeof(out),))
    monkeypatch.setattr(compiler_typing, "committed", lambda: {key: {"lines": {}}})  # facts without "error": compiles
    double_it[1, 4](out)
    np.testing.assert_array_equal(out, [0, 2, 4, 6])


@cpu_only
def test_without_the_compiler_nothing_new_is_refused(fresh, monkeypatch):
    child = compiler_typing._TypingChild()
    monkeypatch.setattr(compiler_typing, "_typing_child", child)
    unavailable = compiler_typing.HARDWARE_MODE_PRELUDE + (
        "\nimport json\nprint('@@TYPING@@' + json.dumps({'available': False, 'why': 'NVVM was not found'}), "
        "flush=True)\n")
    monkeypatch.setattr(compiler_typing, "_TYPING_CHILD", unavailable)
    out = np.zeros(4, np.float32)
    lookup_in_a_dict[1, 4](out)  # runs, as it did before the check existed
    np.testing.assert_array_equal(out, [1.5, 2.5, 1.5, 2.5])
    assert compiler_typing.typing_why() == "NVVM was not found"


def test_numbas_refusal_in_one_line():
    from course.engine.gpu_typing import first_useful_line

    raw = ("No implementation of function Function(<built-in function mod>) found for signature:\n \n"
           " >>> mod(Literal[str](%d), int32)\n \nThere are 8 candidate implementations:\n - Of which 4 did not "
           "match due to:\n")
    assert first_useful_line(raw) == "No implementation of function mod for mod(Literal[str](%d), int32)"
    assert first_useful_line("Unknown attribute 'foo' of type Module(numba.cuda)\n\nFile ...") == \
        "Unknown attribute 'foo' of type Module(numba.cuda)"


@cpu_only
def test_a_traced_launch_is_refused_as_a_plain_one_is(fresh):
    # the tracer runs an instrumented copy of the kernel: the check types the learner's own function
    _needs_compiler()
    from course.trace import trace

    with pytest.raises(KernelError, match="dict"):
        trace(lookup_in_a_dict, 1, 32, np.zeros(32, np.float32))


# --- a kernel calling the course's 16-byte load (load_float4) is typed with the GPU's intrinsic ----------------

from course.kernels.reduction import load_float4  # noqa: E402  (a plain function on the engine, an intrinsic on a GPU)


@cuda.jit
def float4_sums(a, out):
    q = cuda.grid(1)
    if q < out.shape[0]:
        x, y, z, w = load_float4(a, q)
        out[q] = (x + y) + (z + w)


@cuda.jit
def float4_into_a_dict(a, out):
    q = cuda.grid(1)
    x, y, z, w = load_float4(a, q)
    sums = {0: x + y}
    out[q] = sums[0]


@cpu_only
def test_a_kernel_calling_load_float4_types_as_on_the_gpu(fresh):
    from numba import typeof

    a, out = np.arange(16, dtype=np.float32), np.zeros(4, np.float32)
    float4_sums[1, 4](a, out)
    np.testing.assert_array_equal(out, [6, 22, 38, 54])
    _needs_compiler()
    # the child rebuilds load_float4 from its address, the GPU's intrinsic: numba-cuda types the call (a copy of the
    # engine's Python twin would be a plain function it cannot type, and nothing after it would be checked)
    assert compiler_typing.gpu_typing(float4_sums.py_func, (typeof(a), typeof(out))) == {"ok": True}


@cpu_only
def test_a_dict_after_load_float4_is_refused_with_its_line(fresh):
    a, out = np.arange(16, dtype=np.float32), np.zeros(4, np.float32)
    try:
        float4_into_a_dict[1, 4](a, out)
    except KernelError as e:
        message = str(e)
    else:
        _needs_compiler()
        pytest.fail("a kernel with a dict ran on the engine where numba-cuda refuses it")
    assert "kernel `float4_into_a_dict` does not compile for a GPU" in message and "out[q] = sums[0]" in message
    assert "a dict does not exist inside a GPU kernel" in message
