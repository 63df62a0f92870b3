"""Every kernel the course validates on the H200 types and lowers for a real GPU (sm_90).

numba's simulator and the CPU engine run Python, so they may accept what a GPU compile refuses. The engine
refuses the array shapes numba-cuda refuses (``cuda.shared.array((TILE, TILE + 1), ...)``: course/engine/shapes.py,
compared with numba's own typing at the end of this file); other typing rules are not modelled. This test
compiles each ``NCU_CASES`` kernel of ``course/kernels/`` for compute capability 9.0 in hardware mode,
in a subprocess (no GPU needed up to the NVVM step), so such a kernel fails here, not on the H200.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from course.trace.compiler import HARDWARE_MODE_PRELUDE

ROOT = pathlib.Path(__file__).resolve().parents[1]

# a bare `course` package in hardware mode (course.trace.compiler's prelude), so that importing kernel modules
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


# --- the CPU engine refuses the array shapes a GPU compile refuses (course/engine/shapes.py), and only those --------

SHAPES = ["32", "TILE", "(TILE, 33)", "(32, 32 + 1)", "2 * 4", "-(-32)", "T", "m", "q", "z",
          "TILE + 1", "(TILE, TILE + 1)", "TILE // 2", "n", "a.shape[0]", "mod.TILE", "True", "p", "(q, p)"]

SHAPE_MODULE = '''
import types
from numba import cuda, float32

TILE = 32
T = (32, 33)
mod = types.ModuleType("mod")
mod.TILE = 32
'''

SHAPE_KERNEL = '''

def k{i}(a, n):
    m = 32 * 2
    q = TILE
    p = TILE + 1
    z = q
    s = cuda.shared.array({shape}, float32)
    a[0] = 0
    a[n % TILE] = 0  # names read in a subscript target are not assigned (issue 24: `keys[t] % NB`)
    a[q % TILE] += 0
'''

GPU_VERDICTS = HARDWARE_MODE_PRELUDE + r'''
import importlib.util, json
from numba import cuda, types as nt
from numba.core import errors
spec = importlib.util.spec_from_file_location("shape_cases", sys.argv[2])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
out = {}
for i in range(int(sys.argv[3])):
    try:
        cuda.compile_ptx(getattr(m, f"k{i}"), (nt.float32[:], nt.int64), cc=(9, 0))
        out[i] = "compiles"
    except (errors.TypingError, errors.LoweringError):
        out[i] = "refused"
    except Exception:
        out[i] = "compiles"  # no NVVM here: typing and lowering passed, which is what decides
print("VERDICTS" + json.dumps(out))
'''


@pytest.mark.timeout(300)
def test_the_engine_refuses_exactly_the_array_shapes_a_gpu_compile_refuses(tmp_path):
    import importlib.util

    import numpy as np

    from course.engine import launch

    path = tmp_path / "shape_cases.py"
    path.write_text(SHAPE_MODULE + "".join(SHAPE_KERNEL.format(i=i, shape=s) for i, s in enumerate(SHAPES)))
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    done = subprocess.run([sys.executable, "-c", GPU_VERDICTS, str(ROOT), str(path), str(len(SHAPES))],
                          capture_output=True, text=True, timeout=280, env=env)
    assert "VERDICTS" in done.stdout, done.stdout + done.stderr[-3000:]
    gpu = {SHAPES[int(i)]: v for i, v in json.loads(done.stdout.split("VERDICTS", 1)[1]).items()}

    spec = importlib.util.spec_from_file_location("shape_cases_engine", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from numba import cuda

    engine = {}
    for i, shape in enumerate(SHAPES):
        try:
            launch(cuda.jit(getattr(mod, f"k{i}")), 1, 1, [np.zeros(64, np.float32), 8])
            engine[shape] = "compiles"
        except Exception as e:
            engine[shape] = "refused" if "the shape must be a constant" in str(e) else f"other: {e}"
    assert set(gpu.values()) == {"compiles", "refused"}  # the cases tell the two apart
    assert engine == gpu
