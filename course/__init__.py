"""How CUDA code becomes fast: the library behind the course's notebooks.

Importing ``course`` chooses where kernels run (see :mod:`course.backend`) and does nothing else.
Import it before ``from numba import cuda``.
"""

from course.backend import choose as _choose

BACKEND = _choose()

from course.backend import on_gpu, pick  # noqa: E402
from course import ipython as _ipython  # noqa: E402

_ipython.register()

__all__ = ["BACKEND", "on_gpu", "pick"]
