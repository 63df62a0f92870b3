"""One launch: its configuration checked, its arguments prepared, its world installed, its grid run."""

from __future__ import annotations

import contextlib

import numpy as np

from course import device as _dev
from course.engine import gpu_typing, literals, simulator
from course.engine.arrays import KernelArray, Record
from course.engine.hooks import LaunchHooks, LaunchView
from course.engine.kernel_api import (
    DEFAULT_TIME_LIMIT,
    EngineCUDAModule,
    Launch,
    PreemptingArray,
    launch_state,
    state,
)
from course.engine.messages import KernelError, LaunchTimeout, stall_error, typed_error
from course.engine.scheduler import run_grid
from course.engine.swap import Swapper, never_blocks
from course.engine.watchdog import StallWatch, Watchdog

# Launch


_order_seed = None


@contextlib.contextmanager
def order(seed=None):
    """Run the launches inside this block in another legal thread order (``seed=None``: the default order)."""
    global _order_seed
    saved = _order_seed
    _order_seed = seed
    try:
        yield
    finally:
        _order_seed = saved


def normalise_dims(value, what):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims = (int(value), 1, 1)
    elif isinstance(value, tuple) and 1 <= len(value) <= 3:
        for v in value:
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise typed_error(TypeError, _dim_message(what, value))
        dims = tuple(int(v) for v in value) + (1,) * (3 - len(value))
    elif isinstance(value, tuple):
        raise typed_error(ValueError, _dim_message(what, value))
    else:
        raise typed_error(TypeError, _dim_message(what, value))
    if min(dims) < 1:
        raise typed_error(ValueError, f"{what} {value!r} has a dimension below 1: a launch needs at least one block of one thread")
    return dims


def _dim_message(what, value):
    hint = ""
    if isinstance(value, float) or (isinstance(value, tuple) and any(isinstance(v, float) for v in value)):
        hint = " (a float: compute it with integer division, e.g. (n + threads_per_block - 1) // threads_per_block)"
    # numba's own sentence first (its tests and users search for it), then the course's explanation
    short = what.split("(")[-1].rstrip(")") if "(" in what else what
    values = list(value) if isinstance(value, tuple) else [value]
    numba_says = (f"{short} must be a sequence of 1, 2 or 3 integers, got {values}" if isinstance(value, tuple)
                  and not 1 <= len(value) <= 3 else f"{short} must be a sequence of integers, got {values}")
    return f"{numba_says}: {what} must be an int or a tuple of 1 to 3 ints{hint}"


def _check_config(grid, block):
    threads = block[0] * block[1] * block[2]
    if threads > _dev.MAX_THREADS_PER_BLOCK:
        raise typed_error(ValueError,
            f"a block of {block[0]}×{block[1]}×{block[2]} = {threads} threads is more than the "
            f"{_dev.MAX_THREADS_PER_BLOCK} a block may have on an H200 (a GPU refuses this launch); use fewer threads "
            "per block and more blocks"
        )
    for axis, (b, lim) in enumerate(zip(block, _dev.MAX_BLOCK_DIM)):
        if b > lim:
            raise KernelError(f"blockDim.{'xyz'[axis]} = {b} exceeds the limit {lim}")
    for axis, (g, lim) in enumerate(zip(grid, _dev.MAX_GRID_DIM)):
        if g > lim:
            raise KernelError(f"gridDim.{'xyz'[axis]} = {g} exceeds the limit {lim}")


_SCALARS = (int, float, complex, bool, np.generic)


def _prepare_args(fn, args, launch, module):
    """Turn launch arguments into what the kernel sees; returns (kernel args, write-backs)."""
    names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    if len(args) != len(names) and not (fn.__code__.co_flags & 0x04):
        defaults = fn.__defaults__ or ()
        note = ""
        if len(names) - len(defaults) <= len(args) < len(names):
            # numba-cuda 0.30 on the H200: "Signature mismatch: 2 argument types given, but function takes 3
            # arguments" -- a kernel parameter's default is not filled in (a device function's is)
            note = (". A GPU does not fill in a kernel parameter's default value either (numba-cuda: "
                    "'Signature mismatch'); pass every argument at the launch, or move the default into a device "
                    "function")
        raise typed_error(TypeError,
            f"kernel `{launch.name}` takes {len(names)} argument(s) ({', '.join(names)}) but the launch passed "
            f"{len(args)}{note}"
        )
    out, writebacks = [], []
    for pos, arg in enumerate(args):
        name = names[pos] if pos < len(names) else f"arg{pos}"
        host = None
        if simulator.is_transfer_hint(arg):
            # cuda.In/Out/InOut: numba's own transfer rules (In copies in only, Out/InOut copy back)
            retr = []
            arg = arg.to_device(retr)
            writebacks.append((None, retr))
        if isinstance(arg, np.void):
            # a record passed by value: fields by attribute (r.x) or key (r['x']), written through
            out.append(Record(arg))
            continue
        simulated = simulator.host_array(arg)
        if simulated is not None:
            host = simulated
        elif isinstance(arg, np.ndarray):
            host = arg
        elif hasattr(arg, "copy_to_host") and hasattr(arg, "__cuda_array_interface__"):
            host = arg.copy_to_host()
            writebacks.append((arg, host))
        elif isinstance(arg, (_SCALARS, tuple)):
            out.append(arg)
            continue
        elif isinstance(arg, (list, dict, set, str, bytes)) or arg is None:
            kind = "None" if arg is None else type(arg).__name__
            raise KernelError(
                f"argument {pos + 1} (`{name}`) of kernel `{launch.name}` is a {kind}; a kernel takes NumPy "
                "arrays, device arrays (cuda.to_device) and numbers. "
                + ("Convert it with np.asarray(...) first." if kind in ("list", "tuple") else "")
            )
        else:
            out.append(arg)
            continue
        if host.ndim == 0:
            out.append(host)
            continue
        if host.dtype == object:
            raise KernelError(
                f"argument {pos + 1} (`{name}`) of kernel `{launch.name}` is an array of Python objects; "
                "use a numeric dtype (np.float32, np.int32 …)"
            )
        root = host
        while isinstance(root.base, np.ndarray):
            root = root.base
        key = id(root)
        base = launch.global_addrs.get(key)
        if base is None:
            base = launch.next_global
            launch.global_addrs[key] = base
            launch.next_global = (base + root.nbytes + 511) & ~255
        out.append(module._wrap(host, "global", name, base, root=root))
    return out, writebacks


def launch(kernel, griddim, blockdim, args, *, dynshared=0, hooks: LaunchHooks | None = None, seed=None, time_limit=None,
           blocks=None, typing_of=None):
    """Run one kernel launch on the CPU engine (whatever the backend); arrays in ``args`` are updated in place.

    ``blocks``: run only these blocks (linear indices, x fastest), in this order: a sample of the grid, for a
    tracer that extrapolates (:func:`course.explain`); the other blocks' outputs are not written.
    """
    if launch_state() is not None:
        raise KernelError("a kernel cannot launch another kernel on the CPU engine (no dynamic parallelism)")
    fn = simulator.kernel_py_func(kernel)
    name = getattr(fn, "__name__", "kernel")
    grid = normalise_dims(griddim, "blocks_per_grid (griddim)")
    block = normalise_dims(blockdim, "threads_per_block (blockdim)")
    _check_config(grid, block)
    if seed is None:
        seed = _order_seed
    array_class = getattr(hooks, "array_class", None)
    if array_class is None:
        array_class = KernelArray if seed is None else PreemptingArray
    dynshared = int(dynshared or 0)
    if dynshared > _dev.MAX_SHARED_PER_BLOCK_OPTIN:
        raise KernelError(f"{name}: {dynshared} bytes of dynamic shared memory requested at launch (the fourth "
                          f"value in kernel[grid, block, stream, bytes]); an H200 block can have at most "
                          f"{_dev.MAX_SHARED_PER_BLOCK_OPTIN}")
    only = None
    if blocks is not None:
        total = grid[0] * grid[1] * grid[2]
        only = [int(b) for b in blocks]
        bad = [b for b in only if not 0 <= b < total]
        if bad:
            raise KernelError(f"{name}: blocks={bad[:3]} are outside the grid of {total} blocks")
    run = literals.numba_function(fn)  # float and int constants typed as numba-cuda types them
    lau = Launch(run, name, grid, block, dynshared, array_class, hooks, only_blocks=only)
    if seed is not None and array_class is PreemptingArray:
        import random

        lau.preempt = random.Random(seed)
    module = EngineCUDAModule(lau, simulator.fallback_module(grid, block))
    lau.view = LaunchView(name, grid, block, lau.user_codes, module.shared)
    lau.on_syncwarp = getattr(hooks, "on_syncwarp", None)
    begin_launch = getattr(hooks, "begin_launch", None)
    kargs, writebacks = _prepare_args(fn, tuple(args), lau, module)
    # what a GPU compile refuses is refused here too, before anything runs (``typing_of``: the learner's own function
    # when ``kernel`` is the tracer's instrumented copy of it)
    gpu_typing.check(kernel, typing_of or fn, name, args, simulator.host_array)
    swapper = Swapper(module, lau)
    lau.swapper = swapper
    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    lau.time_limit = limit
    watchdog = Watchdog(limit)
    lau.watchdog = watchdog
    stallwatch = StallWatch(lau, module, kargs, watchdog)
    state.launch = lau
    state.module = module
    try:
        swapper.add(run)
        lau.direct = lau.preempt is None and never_blocks(lau, module)
        if begin_launch is not None:
            begin_launch(lau.view)
        watchdog.start()
        stallwatch.start()
        errstate = np.errstate(divide="raise") if getattr(kernel, "_debug", False) else contextlib.nullcontext()
        try:
            with errstate, simulator.device_calls_as_python(swapper.add):
                run_grid(lau, module, run, kargs, seed)
        except LaunchTimeout as exc:  # landed between two threads, in the scheduler itself
            if lau.stalled is not None:
                raise stall_error(lau, module._ts, exc) from None
            raise KernelError(
                f"kernel `{name}` ran past its time limit on the CPU engine ({limit:g} s). Use a smaller problem "
                "(course.pick(cpu=..., gpu=...)) or raise COURSE_TIME_LIMIT.", kernel=name
            ) from None
    finally:
        stallwatch.cancel()
        watchdog.cancel()
        swapper.restore()
        state.launch = None
        state.module = None
    for dev_arr, host in writebacks:
        if dev_arr is None:  # numba's writeback functions of a cuda.In/Out/InOut argument
            for wb in host:
                wb()
        else:
            dev_arr.copy_to_device(host)


def install():
    """Make ordinary ``kernel[griddim, blockdim](...)`` launches of numba's simulator run on this engine (the ``cpu``
    backend); :func:`course.engine.simulator.uninstall` puts numba back as it shipped."""
    simulator.install(launch, normalise_dims, launch_state)
