"""The seam to numba-cuda: every use the engine makes of numba's simulator (and of its GPU dispatcher)
lives here, so that the rest of the engine stands alone.

``install()`` makes ordinary ``kernel[griddim, blockdim](...)`` launches of numba's simulator run on the
engine; ``stock_simulator()`` turns that off for a block of code.
"""

from __future__ import annotations

import contextlib
import functools
import sys

from course import device as _dev
from course.engine.kernel_api import launch_state
from course.engine.messages import KernelError, typed_error


def cuda_module():
    return sys.modules.get("numba.cuda")


def device_py_func(value):
    """The Python function behind a device function object (simulator or GPU dispatcher), else None."""
    cls = type(value).__name__
    if cls == "FakeCUDAKernel" and getattr(value, "_device", False):
        return value.fn
    if cls == "CUDADispatcher" and getattr(value, "targetoptions", {}).get("device"):
        return value.py_func
    return None


def kernel_py_func(kernel):
    cls = type(kernel).__name__
    if cls == "FakeCUDAKernel":
        return kernel.fn
    if hasattr(kernel, "py_func"):
        return kernel.py_func
    if callable(kernel) and hasattr(kernel, "__code__"):
        return kernel
    raise KernelError(
        f"{kernel!r} is not a kernel: pass a function decorated with @cuda.jit (or a plain Python function)"
    )




def host_array(arg):
    """The NumPy array behind a device array of numba's simulator (``FakeCUDAArray``), else None."""
    if type(arg).__name__ == "FakeCUDAArray":
        return arg._ary
    return None


def fallback_module(grid, block):
    """numba's simulated ``cuda`` module, for what the engine's own does not define (vector types, fp16 …)."""
    try:
        from numba.cuda.simulator.kernelapi import FakeCUDAModule

        return FakeCUDAModule(grid, block, 0)
    except Exception:
        return None


_gpu_dispatch_patched = False


def patch_gpu_dispatcher():
    """On the GPU backend, let a device function reached any way (``module.fn(...)``) run as Python in a launch."""
    global _gpu_dispatch_patched
    if _gpu_dispatch_patched:
        return
    try:
        from numba.cuda.dispatcher import CUDADispatcher
    except ImportError:  # pragma: no cover
        return
    original = CUDADispatcher.__call__

    def call(self, *args, **kwargs):
        lau = launch_state()
        if lau is not None and self.targetoptions.get("device"):
            lau.swapper.add(self.py_func)
            return self.py_func(*args, **kwargs)
        return original(self, *args, **kwargs)

    CUDADispatcher.__call__ = call
    _gpu_dispatch_patched = True


# --------------------------------------------------------------------------------------------------
# Hooking into numba's simulator


_ENABLED = True
_installed = False
_orig_call = None


@contextlib.contextmanager
def stock_simulator():
    """Inside this block, launches run on numba's simulator exactly as shipped (for comparisons)."""
    global _ENABLED
    saved = _ENABLED
    _ENABLED = False
    try:
        yield
    finally:
        _ENABLED = saved


def _patched_call(self, *args):
    from course.engine.launcher import launch

    lau = launch_state()
    if lau is not None and _ENABLED:
        # a device function reached through a closure or an attribute: swap its globals for this launch too
        lau.swapper.add(self.fn)
        return self.fn(*args)
    if self._device or not _ENABLED:
        return _orig_call(self, *args)
    if self.grid_dim is None or self.block_dim is None:
        raise typed_error(ValueError,
            f"launch configuration was not specified: kernel `{self.fn.__name__}` was called without one; write "
            f"{self.fn.__name__}[blocks_per_grid, threads_per_block](...)"
        )
    grid, block = self.grid_dim, self.block_dim
    if self.extensions:  # numba's argument extensions (prepare_args), applied as numba's simulator does
        retr = []
        args = tuple(functools.reduce(lambda tv, ext: ext.prepare_args(*tv, stream=0, retr=retr),
                                      self.extensions, (None, a))[1] for a in args)
    return launch(self, grid, block, args, dynshared=self.dynshared_size)


def _patched_getitem(self, configuration):
    from course.engine.launcher import normalise_dims

    if not isinstance(configuration, tuple) or len(configuration) < 2:
        raise typed_error(ValueError,
            f"a launch needs kernel[blocks_per_grid, threads_per_block]; got kernel[{configuration!r}]"
        )
    self.grid_dim = normalise_dims(configuration[0], "blocks_per_grid (griddim)")
    self.block_dim = normalise_dims(configuration[1], "threads_per_block (blockdim)")
    self.dynshared_size = configuration[3] if len(configuration) == 4 else 0
    return self


def install():
    """Make ordinary ``kernel[griddim, blockdim](...)`` launches run on this engine (the ``cpu`` backend)."""
    global _installed, _orig_call
    if _installed:
        return
    from numba.cuda.simulator import kernel as simkernel

    _orig_call = simkernel.FakeCUDAKernel.__call__
    _orig_getitem = simkernel.FakeCUDAKernel.__getitem__

    def getitem(self, configuration):
        if not _ENABLED:
            return _orig_getitem(self, configuration)
        return _patched_getitem(self, configuration)

    _orig_forall = simkernel.FakeCUDAKernel.forall

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        if _ENABLED and ntasks == 0:  # no work: numba launches nothing (numba-cuda issue 5017)
            return lambda *args: None
        return _orig_forall(self, ntasks, tpb, stream, sharedmem)

    simkernel.FakeCUDAKernel.__call__ = _patched_call
    simkernel.FakeCUDAKernel.__getitem__ = getitem
    simkernel.FakeCUDAKernel.forall = forall
    _patch_device_facts()
    _patch_jit_options()
    _installed = True


# Options of numba-cuda's GPU ``cuda.jit`` that only steer the GPU compiler; numba's simulator refuses them
_GPU_COMPILER_OPTIONS = ("lineinfo", "max_registers", "launch_bounds")


def _patch_jit_options():
    """Let ``cuda.jit(lineinfo=True)`` and the like work on the engine, as they do on a GPU (nothing to compile)."""
    mod = cuda_module()
    orig = getattr(mod, "jit", None)
    if orig is None or getattr(orig, "_course_accepts_gpu_options", False):
        return

    @functools.wraps(orig)
    def jit(*args, **kws):
        for key in _GPU_COMPILER_OPTIONS:
            kws.pop(key, None)
        return orig(*args, **kws)

    jit._course_accepts_gpu_options = True
    mod.jit = jit


def _patch_device_facts():
    """Give the simulated device the attributes a learner queries (modelled on the H200), and timing events."""
    try:
        from numba.cuda.simulator.cudadrv import devices
    except ImportError:  # pragma: no cover
        return
    facts = {
        "MAX_THREADS_PER_BLOCK": _dev.MAX_THREADS_PER_BLOCK,
        "MAX_BLOCK_DIM_X": _dev.MAX_BLOCK_DIM[0],
        "MAX_BLOCK_DIM_Y": _dev.MAX_BLOCK_DIM[1],
        "MAX_BLOCK_DIM_Z": _dev.MAX_BLOCK_DIM[2],
        "MAX_GRID_DIM_X": _dev.MAX_GRID_DIM[0],
        "MAX_GRID_DIM_Y": _dev.MAX_GRID_DIM[1],
        "MAX_GRID_DIM_Z": _dev.MAX_GRID_DIM[2],
        "MAX_SHARED_MEMORY_PER_BLOCK": _dev.MAX_STATIC_SHARED_PER_BLOCK,
        "MULTIPROCESSOR_COUNT": 132,
        "WARP_SIZE": _dev.WARP_SIZE,
        "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
        "MAX_REGISTERS_PER_BLOCK": 65536,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
    }
    cls = devices.FakeCUDADevice
    for key, value in facts.items():
        if not hasattr(cls, key):
            setattr(cls, key, value)
    if not hasattr(cls, "name"):
        cls.name = "CPU engine (modelled on NVIDIA H200)"
