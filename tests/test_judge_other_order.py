"""The judge's second thread order (issue 27): a launch that only runs out of time there is given longer, and one
that never finishes is said to be that, not a race. Seen: a correct 09.tiled_rect graded 'partial: ... a race'
when its seeded-order launch passed the 3 s limit on a loaded 2-core grader."""

import numpy as np

import course  # noqa: F401
from course import exercises as E
from course.exercises import judging as J


def _vector_add():
    from numba import cuda

    @cuda.jit
    def vector_add(a, b, out, n):
        i = cuda.grid(1)
        if i < n:
            out[i] = a[i] + b[i]

    return vector_add


def _spare(ex):
    return J._fresh(max(ex.make_inputs(np.random.default_rng(5)), key=J._size))


def _slow_in_order(monkeypatch, slow_calls):
    """_launch that runs out of time on its first ``slow_calls`` seeded launches, and is right after them."""
    real, seen = J._launch, []

    def launch(kernel, inp, hooks=None, time_limit=None, seed=None):
        if seed is not None:
            seen.append(time_limit)
            if len(seen) <= slow_calls:
                raise RuntimeError(f"kernel `vector_add` ran past its time limit on the CPU engine ({time_limit:g} s)")
        return real(kernel, inp, hooks=hooks, time_limit=time_limit, seed=seed)

    monkeypatch.setattr(J, "_launch", launch)
    return seen


def test_a_slow_second_order_is_given_longer_and_is_no_race(monkeypatch):
    ex = E.get("01.vector_add")
    seen = _slow_in_order(monkeypatch, 1)
    failed = J._race_results(ex, _vector_add(), _spare(ex), np.random.default_rng(1), None, [], 2.0)
    assert failed == [] and seen == [2.0, 8.0]


def test_a_second_order_that_never_finishes_says_so(monkeypatch):
    ex = E.get("01.vector_add")
    _slow_in_order(monkeypatch, 2)
    failed = J._race_results(ex, _vector_add(), _spare(ex), np.random.default_rng(1), None, [], 2.0)
    assert len(failed) == 1 and failed[0].what.startswith("finishes in another thread order")
    assert "race" not in failed[0].detail and "8 s" in failed[0].detail
