"""Several simulated devices in numba's simulator: the part of chapter 11's layer that touches its objects.

numba-cuda's simulator has one device (``FakeDeviceList`` holds one context; ``select_device`` asserts
0).  :func:`install_devices` gives it ``n``: each context becomes a device of its own that can be
entered (``with cuda.gpus[i]:``), device arrays remember the device they were made on, copies report
where their bytes went, and launches report on which device they ran with which arrays.  What is done
with those reports (counting, refusing a launch) is the caller's ``hooks`` object
(``course.multigpu._Hooks``), so this module is the only one that knows the simulator's classes.
"""

from __future__ import annotations

import numpy as np

_STATE = {"installed": False, "hooks": None}


def _hooks():
    return _STATE["hooks"]


def install_devices(n: int, hooks) -> None:
    """Present ``n`` simulated devices; ``hooks`` is told of context changes, copies and launches."""
    import numba.cuda as cuda_mod
    from numba.cuda.simulator import api
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator.cudadrv import devicearray as da
    from numba.cuda.simulator.cudadrv import devices

    _STATE["hooks"] = hooks
    gpus = devices.gpus
    gpus.lst = tuple(_context_class(devices)(i) for i in range(n))
    if _STATE["installed"]:
        return
    _STATE["installed"] = True

    devices.FakeDeviceList.current = property(
        lambda self: None if self.closed else self.lst[_hooks().current()])

    def current_context(devnum=None):
        return gpus.lst[_hooks().current() if devnum is None else devnum]

    def get_current_device():
        return current_context().device

    def select_device(dev=0):
        _hooks().select(dev)
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
        self.__dict__["_course_device"] = _hooks().current()

    def __getitem__(self, idx):
        ret = orig_getitem(self, idx)
        if isinstance(ret, cls):
            ret.__dict__["_course_device"] = self.__dict__.get("_course_device", 0)
        return ret

    def copy_to_host(self, ary=None, stream=0):
        out = orig_to_host(self, ary, stream)
        _hooks().copy(self.__dict__.get("_course_device", 0), None, self.nbytes)
        return out

    def copy_to_device(self, ary, stream=0):
        orig_to_device_m(self, ary, stream)
        src = ary.__dict__.get("_course_device", 0) if isinstance(ary, cls) else None
        _hooks().copy(src, self.__dict__.get("_course_device", 0), self.nbytes)

    cls.__init__, cls.__getitem__ = __init__, __getitem__
    cls.copy_to_host, cls.copy_to_device = copy_to_host, copy_to_device

    orig_module_to_device = da.to_device

    def to_device(ary, stream=0, copy=True, to=None):
        out = orig_module_to_device(ary, stream=stream, copy=copy, to=to)
        if to is None:
            _hooks().copy(None, _hooks().current(), np.asarray(ary).nbytes)
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
        _hooks().launch(_hooks().current(), threads, arrays, name)
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
            _hooks().push(self._device_id)
            return self

        def __exit__(self, exc_type, exc_val, exc_tb):
            _hooks().pop()

        def get_primary_context(self):
            return self

        def can_access_peer(self, peer_device):
            peer = getattr(peer_device, "id", peer_device)
            return peer != self._device_id and 0 <= int(peer) < _hooks().count()

        def enable_peer_access(self, peer_context, flags=0):
            return None

    return Context
