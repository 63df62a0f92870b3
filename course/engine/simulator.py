"""The seam to numba-cuda: every use the engine makes of numba's simulator (and of its GPU dispatcher)
lives here, so that the rest of the engine stands alone.

``install()`` makes ordinary ``kernel[griddim, blockdim](...)`` launches of numba's simulator run on the
engine; ``stock_simulator()`` turns that off for a block of code.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

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




def numpy_dtype(numba_type):
    """The NumPy dtype of a numba type (``float32``, a record type …) that ``np.dtype`` does not know."""
    from numba.cuda.np import numpy_support

    return numpy_support.as_dtype(numba_type)


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
        "MULTIPROCESSOR_COUNT": _dev.SM_COUNT,
        "WARP_SIZE": _dev.WARP_SIZE,
        "MAX_THREADS_PER_MULTIPROCESSOR": _dev.MAX_THREADS_PER_SM,
        "MAX_REGISTERS_PER_BLOCK": _dev.REGS_PER_BLOCK,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": _dev.SHARED_PER_SM,
    }
    cls = devices.FakeCUDADevice
    for key, value in facts.items():
        if not hasattr(cls, key):
            setattr(cls, key, value)
    if not hasattr(cls, "name"):
        cls.name = "CPU engine (modelled on NVIDIA H200)"


# --- several devices (chapter 11) -------------------------------------------------------------------------------
# numba-cuda's simulator has one device (``FakeDeviceList`` holds one context; ``select_device`` asserts 0).
# ``install_devices`` gives it ``n``: each context becomes a device of its own that can be entered
# (``with cuda.gpus[i]:``), device arrays remember the device they were made on, copies report where their
# bytes went, and launches report on which device they ran with which arrays.  What is done with those
# reports (counting, refusing a launch) is the caller's ``hooks`` object (``course.multigpu``), so that this
# seam stays the only module that knows the simulator's classes.

_DEVICES = {"installed": False, "hooks": None}


def _device_hooks():
    return _DEVICES["hooks"]


def install_devices(n: int, hooks) -> None:
    """Present ``n`` simulated devices; ``hooks`` is told of context changes, copies and launches."""
    import numba.cuda as cuda_mod
    from numba.cuda.simulator import api
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator.cudadrv import devicearray as da
    from numba.cuda.simulator.cudadrv import devices

    _DEVICES["hooks"] = hooks
    gpus = devices.gpus
    gpus.lst = tuple(_context_class(devices)(i) for i in range(n))
    if _DEVICES["installed"]:
        return
    _DEVICES["installed"] = True

    devices.FakeDeviceList.current = property(
        lambda self: None if self.closed else self.lst[_device_hooks().current()])

    def current_context(devnum=None):
        return gpus.lst[_device_hooks().current() if devnum is None else devnum]

    def get_current_device():
        return current_context().device

    def select_device(dev=0):
        _device_hooks().select(dev)
        return current_context().device

    for module in (cuda_mod, api):
        module.current_context = current_context
        module.get_current_device = get_current_device
        module.select_device = select_device

    # device arrays remember their device; copies report their bytes
    cls = da.FakeCUDAArray
    orig_init, orig_getitem = cls.__init__, cls.__getitem__
    orig_to_host, orig_to_device_m = cls.copy_to_host, cls.copy_to_device

    def __init__(self, ary, stream=0):
        orig_init(self, ary, stream)
        self.__dict__["_course_device"] = _device_hooks().current()

    def __getitem__(self, idx):
        ret = orig_getitem(self, idx)
        if isinstance(ret, cls):
            ret.__dict__["_course_device"] = self.__dict__.get("_course_device", 0)
        return ret

    def copy_to_host(self, ary=None, stream=0):
        out = orig_to_host(self, ary, stream)
        _device_hooks().copy(self.__dict__.get("_course_device", 0), None, self.nbytes)
        return out

    def copy_to_device(self, ary, stream=0):
        orig_to_device_m(self, ary, stream)
        src = ary.__dict__.get("_course_device", 0) if isinstance(ary, cls) else None
        _device_hooks().copy(src, self.__dict__.get("_course_device", 0), self.nbytes)

    cls.__init__, cls.__getitem__ = __init__, __getitem__
    cls.copy_to_host, cls.copy_to_device = copy_to_host, copy_to_device

    orig_module_to_device = da.to_device

    def to_device(ary, stream=0, copy=True, to=None):
        out = orig_module_to_device(ary, stream=stream, copy=copy, to=to)
        if to is None:
            _device_hooks().copy(None, _device_hooks().current(), np.asarray(ary).nbytes)
        return out

    for module in (cuda_mod, da):
        module.to_device = to_device

    orig_call = simkernel.FakeCUDAKernel.__call__

    def __call__(self, *args):
        arrays = []
        names = getattr(getattr(self, "fn", None), "__code__", None)
        names = names.co_varnames[: names.co_argcount] if names else ()
        for k, arg in enumerate(args):
            if isinstance(arg, cls):
                name = names[k] if k < len(names) else f"#{k}"
                arrays.append((name, arg.__dict__.get("_course_device", 0), int(arg.size)))
        grid = getattr(self, "grid_dim", (1, 1, 1))
        block = getattr(self, "block_dim", (1, 1, 1))
        threads = int(np.prod(grid)) * int(np.prod(block))
        name = getattr(getattr(self, "fn", None), "__name__", "kernel")
        _device_hooks().launch(_device_hooks().current(), threads, arrays, name)
        return orig_call(self, *args)

    simkernel.FakeCUDAKernel.__call__ = __call__


def _context_class(devices):
    """A simulator context that is a device of its own: it can be entered and knows its peers."""

    class Device(devices.FakeCUDADevice):
        def __init__(self, dev_id):
            super().__init__()
            self.id = dev_id
            self.uuid = f"GPU-00000000-0000-0000-0000-{dev_id:012d}"

    class Context(devices.FakeCUDAContext):
        def __init__(self, device_id):
            super().__init__(device_id)
            self._device = Device(device_id)
            self.handle = self

        def __enter__(self):
            _device_hooks().push(self._device_id)
            return self

        def __exit__(self, exc_type, exc_val, exc_tb):
            _device_hooks().pop()

        def get_primary_context(self):
            return self

        def can_access_peer(self, peer_device):
            peer = getattr(peer_device, "id", peer_device)
            return peer != self._device_id and 0 <= int(peer) < _device_hooks().count()

        def enable_peer_access(self, peer_context, flags=0):
            return None

    return Context
