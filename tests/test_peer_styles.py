"""Kernels written in other people's styles run on the CPU engine as on a GPU (issue 16, part 1).

The workloads (course/validation/peer_styles.py) are the course's own versions of a public puzzle set,
each reaching CUDA another way: a factory that takes the ``cuda`` module (a closure), ``numba.cuda``
through the ``numba`` module, an alias, ``functools.partial``, closures over constants, device functions
imported from another module, a kernel parameter with a default.  Each must give NumPy's answer on the
engine, in the default thread order and in two others.  ``data/race_validation.json`` holds what the same
workloads gave on the H200 (scripts/gpu/validate_races.py); the engine must agree with it.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import course
from course import engine
from course.validation.peer_styles import WORKLOADS, launch

RECORD = pathlib.Path(__file__).resolve().parents[1] / "data" / "race_validation.json"


def _run(w, seed=None):
    args = w.args(0)
    work = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    with engine.order(seed):
        launch(w, work)
    return work[0], w.reference(*args)


RUNS = [w for w in WORKLOADS if not w.expect_error]


@pytest.mark.parametrize("w", RUNS, ids=[w.name for w in RUNS])
def test_workload_gives_numpys_answer(w):
    got, expected = _run(w)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("seed", [1, 2])
def test_workloads_in_other_thread_orders(seed):
    for w in RUNS:
        got, expected = _run(w, seed)
        np.testing.assert_array_equal(got, expected, err_msg=w.name)


def test_a_kernel_parameter_default_is_refused_as_on_the_gpu():
    w = next(w for w in WORKLOADS if w.name == "kernel_default")
    with pytest.raises(TypeError) as err:
        _run(w)
    msg = str(err.value)
    if course.on_gpu():  # numba-cuda's own refusal, which names neither the kernel nor the cure
        assert "Signature mismatch: 2 argument types given, but function takes 3 arguments" in msg
    else:  # the engine refuses it as the GPU does, and says where and what to do
        assert "kernel_default" in msg and "takes 3 argument(s) (out, a, k)" in msg and "pass every argument" in msg


def test_every_style_is_covered():
    styles = {w.style for w in WORKLOADS}
    assert styles >= {"factory", "numba_attr", "alias", "partial", "closure_const", "device_module", "kernel_default"}


def test_closure_cells_are_restored_after_a_launch():
    """The engine swaps what a closure cell holds only for the launch: the kernel still sees numba.cuda after."""
    from numba import cuda

    from course.validation.peer_styles import map_factory

    body = map_factory(cuda)
    kernel = cuda.jit(body)
    out, a = np.zeros(4, np.float32), np.arange(4, dtype=np.float32)
    kernel[1, 4](out, a, 4)
    np.testing.assert_array_equal(out, a + 10)
    cells = [c.cell_contents for c in body.__closure__]
    assert cuda in cells


def test_the_h200_ran_the_same_workloads_with_the_same_results():
    if not RECORD.exists():
        pytest.fail("data/race_validation.json is missing: run scripts/gpu/validate_races.py on the H200 and --import it")
    rec = json.loads(RECORD.read_text())
    assert rec["provenance"]["device"] == "NVIDIA H200" and rec["provenance"]["backend"] == "gpu"
    peers = {p["name"]: p for p in rec.get("peer_styles") or []}
    assert set(peers) == {w.name for w in WORKLOADS}, "the H200 record lists other workloads: run the validation again"
    for w in WORKLOADS:
        r = peers[w.name]
        if w.expect_error:  # the GPU refused it: so does the engine (test above)
            assert not r["ok"] and r.get("error", "").startswith(w.expect_error), (w.name, r)
        else:  # NumPy's answer on the H200, as on the engine (tests above)
            assert r["ok"], f"{w.name} did not give NumPy's answer on the H200: {r}"
