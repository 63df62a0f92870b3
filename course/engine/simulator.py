"""The seam to numba-cuda: every use the engine makes of numba's simulator (and of its GPU dispatcher)
lives here, so that the rest of the engine stands alone (this module imports nothing of the engine but its
messages: what it needs of a launch, the engine hands it in :func:`install`).

numba's objects are recognised by type (``isinstance`` against numba's classes, looked up where their module is
loaded: an instance of a class whose module was never imported cannot exist), never by class name.

numba's classes are patched in one place, :func:`_patch`, which remembers what each attribute held:

- ``install(...)`` (the ``cpu`` backend) makes ordinary ``kernel[griddim, blockdim](...)`` launches of numba's
  simulator run on the engine; ``stock_simulator()`` turns that off for a block of code;
- ``install_devices(n, hooks)`` (chapter 11) makes the simulator present ``n`` devices;
- ``uninstall()`` puts back every original, so that numba is as it shipped;
- on the GPU backend nothing is patched for the process: ``device_calls_as_python`` patches the GPU
  dispatcher's ``__call__`` for the duration of one engine launch, and puts it back.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading

import numpy as np

from course import device as _dev
from course.engine.messages import KernelError, typed_error

_SIM_KERNEL = ("numba.cuda.simulator.kernel", "FakeCUDAKernel")
_SIM_ARRAY = ("numba.cuda.simulator.cudadrv.devicearray", "FakeCUDAArray")
_GPU_DISPATCHER = ("numba.cuda.dispatcher", "CUDADispatcher")  # under the simulator: its stand-in class
_ARG_HINTS = (("numba.cuda.args", "ArgHint"), ("numba.cuda.simulator.args", "ArgHint"))
_CLASSES: dict = {}


def numba_class(module: str, name: str):
    """numba's class ``module.name`` if that module is loaded, else None (nothing can be an instance of it yet)."""
    cls = _CLASSES.get((module, name))
    if cls is None:
        mod = sys.modules.get(module)
        cls = getattr(mod, name, None) if mod is not None else None
        if isinstance(cls, type):
            _CLASSES[(module, name)] = cls
    return cls


def _is(value, where) -> bool:
    cls = numba_class(*where)
    return cls is not None and isinstance(value, cls)


def cuda_module():
    return sys.modules.get("numba.cuda")


def is_gpu_dispatcher(value) -> bool:
    """True for numba-cuda's real (hardware) kernel object, ``CUDADispatcher``."""
    return _is(value, _GPU_DISPATCHER)


def is_cuda_module(value) -> bool:
    """True for numba's simulated ``cuda`` module (or the engine's, which derives from it)."""
    return _is(value, ("numba.cuda.simulator.kernelapi", "FakeCUDAModule"))


def is_kernel_object(value) -> bool:
    """True for what ``@cuda.jit`` makes (a simulator kernel or device function, or a GPU dispatcher)."""
    return _is(value, _SIM_KERNEL) or _is(value, _GPU_DISPATCHER)


def device_py_func(value):
    """The Python function behind a device function object (simulator or GPU dispatcher), else None."""
    if _is(value, _SIM_KERNEL):
        return value.fn if getattr(value, "_device", False) else None
    if _is(value, _GPU_DISPATCHER) and getattr(value, "targetoptions", {}).get("device"):
        return value.py_func
    return None


def kernel_py_func(kernel):
    if _is(kernel, _SIM_KERNEL):
        return kernel.fn
    if hasattr(kernel, "py_func"):
        return kernel.py_func
    if callable(kernel) and hasattr(kernel, "__code__"):
        return kernel
    raise KernelError(
        f"{kernel!r} is not a kernel: pass a function decorated with @cuda.jit (or a plain Python function)"
    )


def is_transfer_hint(arg) -> bool:
    """True for ``cuda.In(a)``, ``cuda.Out(a)``, ``cuda.InOut(a)``: numba's transfer hints."""
    return any(_is(arg, where) for where in _ARG_HINTS)


def numpy_dtype(numba_type):
    """The NumPy dtype of a numba type (``float32``, a record type …) that ``np.dtype`` does not know."""
    from numba.cuda.np import numpy_support

    return numpy_support.as_dtype(numba_type)


def host_array(arg):
    """The NumPy array behind a device array of numba's simulator (``FakeCUDAArray``), else None."""
    if _is(arg, _SIM_ARRAY):
        return arg._ary
    return None


def fallback_module(grid, block):
    """numba's simulated ``cuda`` module, for what the engine's own does not define (vector types, fp16 …)."""
    try:
        from numba.cuda.simulator.kernelapi import FakeCUDAModule

        return FakeCUDAModule(grid, block, 0)
    except Exception:
        return None


# --------------------------------------------------------------------------------------------------
# Patches: one registry, one way out

_ABSENT = object()
_ORIGINALS: list = []  # (owner, name, what its own __dict__ held or _ABSENT), in the order the patches went in
#: what install() was handed, and what is installed: ``engine`` (launch, normalise_dims, launch_state) when
#: simulator launches run on the engine; ``devices``, the hooks of the simulated devices; ``call``, numba's own
#: FakeCUDAKernel.__call__ while the course's stands in its place
_STATE: dict = {"engine": None, "devices": None, "call": None}
_ENABLED = True


def _patch(owner, name, value):
    """Set ``owner.name`` (a class or a module of numba), remembering what it held for :func:`uninstall`."""
    _ORIGINALS.append((owner, name, vars(owner).get(name, _ABSENT)))
    setattr(owner, name, value)


def installed() -> list:
    """``(owner, name)`` of every attribute of numba the course has replaced, in the order it did."""
    return [(owner, name) for owner, name, _ in _ORIGINALS]


def uninstall() -> None:
    """Put back everything :func:`install` and :func:`install_devices` replaced: numba as it shipped."""
    while _ORIGINALS:
        owner, name, old = _ORIGINALS.pop()
        if old is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, old)
    _STATE.update(engine=None, devices=None, call=None)


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


def _kernel_call(self, *args):
    """``FakeCUDAKernel.__call__`` while installed: a launch on the engine (``cpu`` backend), and a launch on one of
    the simulated devices is reported to their hooks."""
    engine = _STATE["engine"] if _ENABLED else None
    if engine is not None and engine[2]() is not None:
        # a device function reached through a closure or an attribute: swap its globals for this launch too
        engine[2]().swapper.add(self.fn)
        return self.fn(*args)
    if self._device:
        return _STATE["call"](self, *args)
    if engine is not None and (self.grid_dim is None or self.block_dim is None):
        raise typed_error(ValueError,
            f"launch configuration was not specified: kernel `{self.fn.__name__}` was called without one; write "
            f"{self.fn.__name__}[blocks_per_grid, threads_per_block](...)"
        )
    if _STATE["devices"] is not None:
        _report_launch(self, args)
    if engine is None:
        return _STATE["call"](self, *args)
    if self.extensions:  # numba's argument extensions (prepare_args), applied as numba's simulator does
        retr = []
        args = tuple(functools.reduce(lambda tv, ext: ext.prepare_args(*tv, stream=0, retr=retr),
                                      self.extensions, (None, a))[1] for a in args)
    return engine[0](self, self.grid_dim, self.block_dim, args, dynshared=self.dynshared_size)


def _install_kernel_call():
    from numba.cuda.simulator import kernel as simkernel

    if _STATE["call"] is None:
        _STATE["call"] = simkernel.FakeCUDAKernel.__call__
        _patch(simkernel.FakeCUDAKernel, "__call__", _kernel_call)


def install(launch, normalise_dims, launch_state):
    """Make ordinary ``kernel[griddim, blockdim](...)`` launches of numba's simulator run on the engine (the ``cpu``
    backend): ``launch(kernel, grid, block, args, dynshared=)`` runs one, ``normalise_dims(value, what)`` checks a
    launch configuration, ``launch_state()`` is the launch now running (None outside one)."""
    if _STATE["engine"] is not None:
        return
    from numba.cuda.simulator import kernel as simkernel

    cls = simkernel.FakeCUDAKernel
    orig_getitem, orig_forall = cls.__getitem__, cls.forall

    def getitem(self, configuration):
        if not _ENABLED:
            return orig_getitem(self, configuration)
        if not isinstance(configuration, tuple) or len(configuration) < 2:
            raise typed_error(ValueError,
                f"a launch needs kernel[blocks_per_grid, threads_per_block]; got kernel[{configuration!r}]"
            )
        self.grid_dim = normalise_dims(configuration[0], "blocks_per_grid (griddim)")
        self.block_dim = normalise_dims(configuration[1], "threads_per_block (blockdim)")
        self.dynshared_size = configuration[3] if len(configuration) == 4 else 0
        return self

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        if _ENABLED and ntasks == 0:  # no work: numba launches nothing (numba-cuda issue 5017)
            return lambda *args: None
        return orig_forall(self, ntasks, tpb, stream, sharedmem)

    _STATE["engine"] = (launch, normalise_dims, launch_state)
    _install_kernel_call()
    _patch(cls, "__getitem__", getitem)
    _patch(cls, "forall", forall)
    _patch_device_facts()
    _patch_jit_options()
    _patch_scalar_casts()


@contextlib.contextmanager
def device_calls_as_python(add):
    """For one engine launch on the GPU backend: a device function (a GPU dispatcher) reached any way
    (``module.fn(...)``) runs as Python, its globals swapped by ``add(py_func)``; put back when the launch ends.
    Nothing is patched where numba's GPU dispatcher is not loaded (the simulator backends)."""
    cls = numba_class(*_GPU_DISPATCHER)
    if cls is None or cls.__module__ != _GPU_DISPATCHER[0]:  # the simulator's stand-in: nothing to catch
        yield
        return
    original, own = cls.__call__, vars(cls).get("__call__", _ABSENT)
    me = threading.get_ident()

    def call(self, *args, **kwargs):
        if threading.get_ident() == me and self.targetoptions.get("device"):
            add(self.py_func)
            return self.py_func(*args, **kwargs)
        return original(self, *args, **kwargs)

    cls.__call__ = call
    try:
        yield
    finally:
        if own is _ABSENT:
            del cls.__call__
        else:
            cls.__call__ = own


# Options of numba-cuda's GPU ``cuda.jit`` that only steer the GPU compiler; numba's simulator refuses them
_GPU_COMPILER_OPTIONS = ("lineinfo", "max_registers", "launch_bounds")


#: Values that are never a numba type: ``float32(x)`` of one of them is a cast (numba's own rule, below).
_CAST_CLASSES = frozenset({int, float, bool, np.bool_, np.float16, np.float32, np.float64, np.int8, np.int16,
                           np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64})


def _patch_scalar_casts():
    """``float32(x)``, ``int32(x)`` … in a kernel on the engine, without numba's per-call cost.

    numba's ``Type.__call__`` imports ``numba.core.typing`` and asks ``isinstance(arg, Type)`` (an ABC check) on
    every call, then casts a non-type with ``cast_python_value``: about 5 µs a cast, a seventh of the engine's time
    on kernels that cast in their loops (measured on tests/test_fresh5_cases.py). The fast path takes only
    arguments whose class is a Python or NumPy scalar (never a numba type) and does what numba does with them;
    anything else goes to numba's own ``__call__``."""
    from numba.core.types import abstract

    orig = abstract.Type.__call__
    fast = _CAST_CLASSES

    def __call__(self, *args):
        if len(args) == 1 and args[0].__class__ in fast:
            return self.cast_python_value(args[0])
        return orig(self, *args)

    __call__.__wrapped__ = orig
    _patch(abstract.Type, "__call__", __call__)


def _patch_jit_options():
    """Let ``cuda.jit(lineinfo=True)`` and the like work on the engine, as they do on a GPU (nothing to compile)."""
    mod = cuda_module()
    orig = getattr(mod, "jit", None)
    if orig is None:
        return

    @functools.wraps(orig)
    def jit(*args, **kws):
        for key in _GPU_COMPILER_OPTIONS:
            kws.pop(key, None)
        return orig(*args, **kws)

    _patch(mod, "jit", jit)


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
        "name": "CPU engine (modelled on NVIDIA H200)",
    }
    cls = devices.FakeCUDADevice
    for key, value in facts.items():
        if not hasattr(cls, key):
            _patch(cls, key, value)


# --- several devices (chapter 11) -------------------------------------------------------------------------------
# numba-cuda's simulator has one device (``FakeDeviceList`` holds one context; ``select_device`` asserts 0).
# ``install_devices`` gives it ``n``: each context becomes a device of its own that can be entered
# (``with cuda.gpus[i]:``), device arrays remember the device they were made on, copies report where their
# bytes went, and launches report on which device they ran with which arrays.  What is done with those
# reports (counting, refusing a launch) is the caller's ``hooks`` object (``course.multigpu``), so that this
# seam stays the only module that knows the simulator's classes.


def _device_hooks():
    return _STATE["devices"]


def _report_launch(kernel, args):
    """Tell the devices' hooks of a launch: on which device, with which of its arrays (from where)."""
    cls = numba_class(*_SIM_ARRAY)
    arrays = []
    code = getattr(getattr(kernel, "fn", None), "__code__", None)
    names = code.co_varnames[: code.co_argcount] if code else ()
    for k, arg in enumerate(args):
        if cls is not None and isinstance(arg, cls):
            name = names[k] if k < len(names) else f"#{k}"
            arrays.append((name, arg.__dict__.get("_course_device", 0), int(arg.size)))
    grid = getattr(kernel, "grid_dim", None) or (1, 1, 1)
    block = getattr(kernel, "block_dim", None) or (1, 1, 1)
    threads = int(np.prod(grid)) * int(np.prod(block))
    name = getattr(getattr(kernel, "fn", None), "__name__", "kernel")
    hooks = _device_hooks()
    hooks.launch(hooks.current(), threads, arrays, name)


def install_devices(n: int, hooks) -> None:
    """Present ``n`` simulated devices; ``hooks`` is told of context changes, copies and launches."""
    import numba.cuda as cuda_mod
    from numba.cuda.simulator import api
    from numba.cuda.simulator.cudadrv import devicearray as da
    from numba.cuda.simulator.cudadrv import devices

    first = _STATE["devices"] is None
    _STATE["devices"] = hooks
    gpus = devices.gpus
    contexts = tuple(_context_class(devices)(i) for i in range(n))
    if not first:
        gpus.lst = contexts
        return
    _patch(gpus, "lst", contexts)
    _patch(devices.FakeDeviceList, "current",
           property(lambda self: None if self.closed else self.lst[_device_hooks().current()]))

    def current_context(devnum=None):
        return gpus.lst[_device_hooks().current() if devnum is None else devnum]

    def get_current_device():
        return current_context().device

    def select_device(dev=0):
        _device_hooks().select(dev)
        return current_context().device

    for module in (cuda_mod, api):
        _patch(module, "current_context", current_context)
        _patch(module, "get_current_device", get_current_device)
        _patch(module, "select_device", select_device)

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

    for name, fn in (("__init__", __init__), ("__getitem__", __getitem__), ("copy_to_host", copy_to_host),
                     ("copy_to_device", copy_to_device)):
        _patch(cls, name, fn)

    orig_module_to_device = da.to_device

    def to_device(ary, stream=0, copy=True, to=None):
        out = orig_module_to_device(ary, stream=stream, copy=copy, to=to)
        if to is None:
            _device_hooks().copy(None, _device_hooks().current(), np.asarray(ary).nbytes)
        return out

    for module in (cuda_mod, da):
        _patch(module, "to_device", to_device)
    _install_kernel_call()  # the one FakeCUDAKernel.__call__: it reports launches to these hooks


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
