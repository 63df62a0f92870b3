"""How CUDA code becomes fast: the library behind the course's notebooks.

Importing ``course`` chooses where kernels run (see :mod:`course.backend`) and does nothing else.
Import it before ``from numba import cuda``.
"""

from course.backend import choose as _choose

BACKEND = _choose()

from course.backend import on_gpu, pick  # noqa: E402
from course import ipython as _ipython  # noqa: E402

_ipython.register()

__all__ = ["BACKEND", "explain", "on_gpu", "pick"]


def explain(kernel, griddim, blockdim, *args, dynshared=0, **options):
    """Why is it this fast?  The predicted H200 time and limiter of ``kernel[griddim, blockdim](*args)``.

    The one door to :func:`course.measure.explain.explain` (defined for chapter 01): on a CPU it traces a sample
    of the launch and predicts; on a GPU it also measures.  Returns an :class:`~course.measure.explain.Explanation`
    (``.ms``, ``.limiter``, ``.ceilings``, ``.launch_overhead_ms``, ``.plot()``).
    """
    from course.measure.explain import explain as _explain  # the learner's door: imported when used, never at import

    return _explain(kernel, griddim, blockdim, *args, dynshared=dynshared, **options)
