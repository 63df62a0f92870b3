"""Every kernel the course validates on the H200 types and lowers for a real GPU (sm_90).

numba's simulator and the CPU engine run Python, so they accept what a GPU compile refuses — e.g. a
shared array whose shape is an expression (``cuda.shared.array((TILE, TILE + 1), ...)``). This test
compiles each ``NCU_CASES`` kernel of ``course/kernels/`` for compute capability 9.0 in hardware mode,
in a subprocess (no GPU needed up to the NVVM step), so such a kernel fails here, not on the H200.
"""

import os
import pathlib
import subprocess
import sys

import pytest

from course.compiler import HARDWARE_MODE_PRELUDE

ROOT = pathlib.Path(__file__).resolve().parents[1]

# a bare `course` package in hardware mode (course.compiler's prelude), so that importing kernel modules
# does not choose the CPU backend here and they take their GPU setup
SCRIPT = HARDWARE_MODE_PRELUDE + r'''
import importlib
from numba import typeof
from numba import cuda
from numba.core import errors
seen, bad, count = set(), [], 0
for name in sys.argv[2:]:
    mod = importlib.import_module("course.kernels." + name)
    for case in getattr(mod, "NCU_CASES", ()):
        fn = getattr(case.kernel, "py_func", case.kernel)
        sig = tuple(typeof(a) for a in case.args(0))
        if (fn, sig) in seen:
            continue
        seen.add((fn, sig))
        count += 1
        try:
            cuda.compile_ptx(fn, sig, cc=(9, 0))
        except (errors.TypingError, errors.LoweringError) as e:
            bad.append(f"{name}.{case.name}: " + str(e).splitlines()[0][:200])
        except Exception:
            pass  # no NVVM/NVRTC on this machine: typing and lowering passed, which is what is checked
print("checked", count)
print("BAD", bad)
'''


def _modules():
    return sorted(p.stem for p in (ROOT / "course" / "kernels").glob("*.py")
                  if p.stem not in ("__init__", "cases") and "NCU_CASES" in p.read_text())


@pytest.mark.timeout(300)
def test_every_validation_kernel_types_for_the_gpu():
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT), *_modules()], capture_output=True,
                          text=True, timeout=280, env=env)
    assert "checked" in done.stdout, done.stdout + done.stderr[-3000:]
    bad = done.stdout.split("BAD", 1)[1].strip()
    assert bad == "[]", "kernels that a GPU compile refuses:\n" + bad
