"""The backend is chosen in one place, before numba is imported, and COURSE_BACKEND overrides it."""

import os
import subprocess
import sys

import pytest

from course import backend


def _run(code, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("COURSE_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_no_gpu_here_means_the_cpu_engine():
    if backend.gpu_count():
        pytest.skip("this machine has a GPU: the default is gpu")
    out = _run("import course; from numba import cuda; print(course.BACKEND, cuda.simulator is not None)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cpu", "True"]


@pytest.mark.parametrize("name", ["cpu", "numba-sim"])
def test_override_selects_a_cpu_backend(name):
    out = _run("import course, os; print(course.BACKEND, os.environ['NUMBA_ENABLE_CUDASIM'])", COURSE_BACKEND=name)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [name, "1"]


def test_unknown_backend_is_refused_with_the_choices():
    out = _run("import course", COURSE_BACKEND="tpu")
    assert out.returncode != 0
    assert "COURSE_BACKEND='tpu'" in out.stderr and "gpu, cpu, numba-sim" in out.stderr


def test_gpu_requested_without_a_gpu_says_so():
    if backend.gpu_count():
        pytest.skip("this machine has a GPU")
    out = _run("import course", COURSE_BACKEND="gpu")
    assert out.returncode != 0 and "no CUDA device was found" in out.stderr


def test_numba_imported_first_in_hardware_mode_is_explained():
    if backend.gpu_count():
        pytest.skip("on a GPU machine hardware mode is the right one")
    out = _run("from numba import cuda; import course", NUMBA_ENABLE_CUDASIM="0")
    assert out.returncode != 0 and "import course" in out.stderr and "Restart the kernel" in out.stderr


def test_pick_is_small_on_the_cpu():
    expected = 4096 if backend.on_gpu() else 64
    assert backend.pick(cpu=64, gpu=4096) == expected


def test_doctor_reports_backend_versions_and_limits():
    out = subprocess.run([sys.executable, "-m", "course", "doctor"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for key in ("backend", "compute_capability", "sm_count", "numba-cuda", "numpy"):
        assert key in text
    if not backend.on_gpu():
        assert "real timing" in text
