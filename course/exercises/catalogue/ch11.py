"""Chapter 11: host code that splits work over every device in proportion to given weights — a reduction, an
element-wise scale gathered back, and a stencil whose shares need a halo — judged on the result and on each
device doing its share.

The learner's plain Python runs with a ``cuda`` of the judge's: as many simulated devices as there are weights,
arrays that are NumPy copies tagged with the device they were made on, and launches on the CPU engine — on every
machine, so that the grade does not depend on how many GPUs the grading machine has (a one-GPU grader would
otherwise never see a split), and no device is touched in the grader's forked judging process.  Per device it
records the elements copied in, the kernels launched and where their arrays live, and the bytes copied back.
"""

from __future__ import annotations

import ast
import collections
import types
from typing import Callable

import numpy as np
from numba import cuda

from course.exercises.contract import LAUNCH_TIME_LIMIT, Exercise, Input, Property
from course.exercises.host import (
    HOST_BUILTINS,
    HOST_NODES,
    HostCode,
    HostRules,
    compile_host,
    host_judge,
    lint_host,
    result_wrong,
)
from course.exercises.inputs import trace_size
from course.exercises.registry import register

SPLIT_THREADS = 256
SPLIT_PER_BLOCK = 1024  # elements one block of the given kernel sums
SPLIT_API = {"gpus", "to_device", "device_array", "synchronize"}


def shares(n: int, weights) -> list:
    """The contiguous (start, stop) share of each device: boundaries at n · (w_0 + … + w_{d-1}) // Σw."""
    total, acc, bounds = sum(weights), 0, [0]
    for w in weights:
        acc += w
        bounds.append(n * acc // total)
    return list(zip(bounds, bounds[1:]))


# --- what the learner's code sees as `cuda`: simulated devices, with every copy and launch written down ------------


class _Device:
    def __init__(self, rec, d):
        self._rec, self._d = rec, d

    def __enter__(self):
        self._rec.stack.append(self._d)
        return self

    def __exit__(self, *exc):
        self._rec.stack.pop()


class _Kernel:
    """The kernel the learner is given: each launch is written down with its device and its arrays' devices,
    then runs on the CPU engine."""

    def __init__(self, rec, real):
        self._rec, self._real = rec, real

    def __getitem__(self, config):
        if not isinstance(config, tuple) or len(config) < 2:
            raise TypeError("launch the kernel as kernel[blocks, threads](share, partials)")

        def launch(*args):
            from course.engine import launch as engine_launch

            rec = self._rec
            where = [a._dev for a in args if isinstance(a, _Out)]
            rec.launches.append((rec.current(), where))
            arrays = [a._real if isinstance(a, _Out) else a for a in args]
            engine_launch(self._real, config[0], config[1], arrays, time_limit=rec.time_limit)
            if len(args) > 1 and isinstance(args[1], _Out):  # what the kernel wrote: its result (split_sum: partials)
                args[1]._written = True
                if rec.shift:
                    args[1]._real += rec.shift
                    rec.shifted += args[1]._real.size

        return launch


class SplitCuda:
    """The calls a split reduction needs (``gpus``, ``to_device``, ``device_array``, ``synchronize``) on
    ``devices`` simulated devices, recorded."""

    def __init__(self, devices: int, time_limit: float | None = None, shift: float = 0.0):
        self.stack: list = []
        self.copied_in = collections.Counter()   # device -> elements
        self.copied_out = collections.Counter()  # device -> bytes
        self.results_out = collections.Counter()  # device -> bytes of arrays a kernel wrote (its results) copied back
        self.shift, self.shifted = shift, 0  # added to every element a launch wrote; how many elements that was
        self.partials_used = None  # (ok, detail) of the follow-up run with shifted partials (11.split_sum)
        self.launches: list = []                 # (device, [device of each array argument])
        self.gpus = [_Device(self, d) for d in range(devices)]
        self.time_limit = LAUNCH_TIME_LIMIT if time_limit is None else time_limit

    def current(self) -> int:
        return self.stack[-1] if self.stack else 0

    def to_device(self, ary, stream=0):
        ary = np.array(ary, copy=True)
        self.copied_in[self.current()] += ary.size
        return _Out(self, ary, self.current())

    def device_array(self, shape, dtype=np.float32):
        dtype = np.dtype(dtype)
        # device memory starts uninitialised: NaN (or a junk integer) makes a partial nobody wrote visible
        fill = np.nan if dtype.kind in "fc" else -12345
        return _Out(self, np.full(shape, fill, dtype), self.current())

    def synchronize(self):
        pass  # the engine's launches have finished when they return


class _Out:
    """A device array of one simulated device, whose copies back to the host are counted."""

    def __init__(self, rec, real, dev):
        self._rec, self._real, self._dev, self._written = rec, real, dev, False

    def __getattr__(self, name):
        return getattr(self._real, name)

    def copy_to_host(self, ary=None):
        self._rec.copied_out[self._dev] += self._real.nbytes
        if self._written:
            self._rec.results_out[self._dev] += self._real.nbytes
        if ary is None:
            return self._real.copy()
        ary[...] = self._real
        return ary


# --- lint and compile: the host-code rules of course.exercises.host, with what a split needs ------------------------

SPLIT_RULES = HostRules(
    cuda_api=frozenset(SPLIT_API),
    attrs=frozenset({"copy_to_host", "shape", "dtype", "size", "append"}),
    builtins=frozenset(HOST_BUILTINS | {"sum", "NotImplementedError"}),
    nodes=HOST_NODES + (ast.With, ast.withitem, ast.Raise),  # `with cuda.gpus[d]:`; the stub's raise
    what="this exercise",
)


def lint_split(fn: ast.FunctionDef) -> list:
    """Problems that keep the host code from being judged, as (line, message); empty when it may run."""
    return lint_host(fn, SPLIT_RULES)


def compile_split(fn_node: ast.FunctionDef, filename: str = "<cell>"):
    """A function from the linted source, with only safe builtins (for the grader)."""
    return compile_host(fn_node, filename, SPLIT_RULES)


# --- inputs, properties, judging --------------------------------------------------------------------------------------


def _sum_input(rng, n, weights, why):
    x = rng.integers(-8, 8, n).astype(np.float32)  # small integers: every partial and the total are exact
    return Input(f"n={n}, weights={list(weights)} ({why})", (), (), (x, list(weights)),
                 {0: float(x.astype(np.float64).sum())}, ("x", "weights"))


def _inputs(rng):
    return [
        _sum_input(rng, 1, [1, 1], "one element, two devices"),
        _sum_input(rng, 5, [1, 1, 1], "fewer elements than a block, three devices"),
        _sum_input(rng, 4099, [1, 1], "prime, even shares"),
        _sum_input(rng, 10_000, [3, 1], "a device three times as fast"),
        _sum_input(rng, int(rng.integers(2_000, 6_000)), [2, 0, 1], "a device with no share"),
    ]


def _trace_input(rng):
    return _sum_input(rng, trace_size(rng, 8_192), [1, 2, 1], "the recorded run")


def _runner(kernel: Callable, shift: float = 0.0) -> Callable:
    """How the one host judge (course.exercises.host.host_judge) runs a split: the learner's function on as many
    simulated devices as the input has weights, handed ``kernel()``; (recording, result)."""

    def run(ex, fn, inp, time_limit=None):
        rec = SplitCuda(len(inp.args[1]), time_limit, shift)
        bound = types.FunctionType(fn.__code__, dict(fn.__globals__, cuda=rec), fn.__name__, fn.__defaults__,
                                   fn.__closure__)
        args = [a.copy() if isinstance(a, np.ndarray) else list(a) if isinstance(a, list) else a for a in inp.args]
        got = bound(*args, _Kernel(rec, kernel()))
        return rec, got

    return run


def _sum_kernel():
    from course.kernels import multi_gpu as M

    return M.block_partials


def _sum_wrong(got, inp):
    want = inp.expected[0]
    try:
        ok = got is not None and float(got) == want
    except (TypeError, ValueError):
        ok = False
    return None if ok else f"returned {got!r}, the sum is {want:g}"


#: What the judge adds to every partial a device computes in its follow-up run of the traced input: a sum made of
#: the partials copied back moves by SHIFT per partial; one computed on the host from x does not.
SHIFT = 0.5


def _partials_follow_up(ex, fn, inp, rec, time_limit):
    """Run the traced input again with every partial shifted by SHIFT; note on ``rec`` whether the sum followed."""
    try:
        again, got = _runner(_sum_kernel, SHIFT)(ex, fn, inp, time_limit)
        want = inp.expected[0] + SHIFT * again.shifted
        ok = got is not None and float(got) == want
        detail = "" if ok else (
            f"with every one of the {again.shifted} partials the devices computed moved by {SHIFT:g} (the judge's "
            f"check), the function still returned {got!r}, not {want:g}: the sum returned is not made of the "
            "partials copied back (add those on the host, not x)")
    except Exception as exc:  # the same code ran on the same input a moment ago: report it, never raise
        ok, detail = False, f"a second run of the traced input failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    rec.partials_used = (ok, detail)


def _props():
    def share(rec, inp):
        x, weights = inp.args[:2]
        want = [b - a for a, b in shares(x.shape[0], weights)]
        got = [rec.copied_in[d] for d in range(len(weights))]
        return got == want, (f"elements copied to each device: {got}; its share: {want} "
                             "(boundaries at n · (w0 + … + w(d-1)) // Σw)")

    def own_data(rec, inp):
        x, weights = inp.args[:2]
        busy = [d for d, (a, b) in enumerate(shares(x.shape[0], weights)) if b > a]
        launched = collections.Counter(dev for dev, _ in rec.launches)
        foreign = [(dev, where) for dev, where in rec.launches if any(w != dev for w in where)]
        idle = [d for d in busy if not launched[d]]
        ok = not idle and not foreign
        detail = f"launches per device: {dict(sorted(launched.items()))}"
        if idle:
            detail += f"; device(s) {idle} have a share but launched nothing"
        if foreign:
            detail += f"; a launch on device {foreign[0][0]} got arrays of device(s) {foreign[0][1]}"
        return ok, detail

    def partials_only(rec, inp):
        blocks = sum(-(-n // SPLIT_PER_BLOCK) for n in rec.copied_in.values())  # of the shares it did copy in
        back = sum(rec.copied_out.values())
        if back > 4 * blocks:
            return False, (f"{back} bytes copied back to the host; the partial sums are {4 * blocks} "
                           "bytes (the combine should move partials, not the data)")
        # of the shares each device did copy in (whether they are the right shares is the first property's)
        want = {d: 4 * -(-n // SPLIT_PER_BLOCK) for d, n in sorted(rec.copied_in.items()) if n}
        short = [d for d in want if rec.results_out[d] < want[d]]
        if short:
            got = {d: rec.results_out[d] for d in want}
            return False, (f"bytes of partial sums copied back per device: {got}; each device's partials are "
                           f"{want} bytes: device(s) {short} sent back too few or none. The sum must be made of "
                           "the partials every device computed, copied back (partials.copy_to_host())")
        ok, detail = rec.partials_used if rec.partials_used is not None else (True, "")
        if not ok:
            return False, detail
        return True, (f"{back} bytes copied back to the host, each device's partials ({4 * blocks} bytes in all), "
                      "and the sum returned is made of them")

    def prop(name, fn, hint):
        return Property(name, lambda report, extra: fn(*report), hint)

    return (
        prop("each device gets exactly its share of x", share,
             "Device d takes x[b(d):b(d+1)] with b(d) = n * (w[0] + ... + w[d-1]) // sum(w): integer arithmetic, "
             "so that the shares cover x once whatever n is."),
        prop("each device with a share launches the kernel on its own arrays", own_data,
             "Inside `with cuda.gpus[d]:` copy the share in, allocate the device's arrays and launch: arrays made there "
             "live on device d, and a launch there runs on device d."),
        prop("only the partial sums come back to the host (最终合并)", partials_only,
             "Copy back the partials array of each device (one float per block), not the share itself."),
    )


register(Exercise(
    name="11.split_sum",
    title="A reduction split over every device, in proportion to their speed",
    signature="split_sum(x, weights, kernel)",
    task=("Write the host function `split_sum(x, weights, kernel)` (plain Python, no @cuda.jit) that returns the "
          "sum of the float32 vector x, computed by every device in cuda.gpus, device d taking a contiguous share in "
          "proportion to weights[d] (数据并行: a faster device gets more): its share is x[b(d):b(d+1)] with "
          "b(d) = n * (w[0] + … + w[d-1]) // sum(w). For each device with a non-empty share, inside "
          "`with cuda.gpus[d]:`, copy the share in (cuda.to_device), allocate one float32 per block "
          f"(cuda.device_array), and launch kernel[blocks, {SPLIT_THREADS}](share, partials): `kernel` sums "
          f"{SPLIT_PER_BLOCK} elements per block into partials[block], so blocks = ceil(len(share) / "
          f"{SPLIT_PER_BLOCK}). Then bring every device's partials back and add them on the host in float64. "
          "Judged on the result and on each device doing its share (recorded per device: elements copied in, "
          "launches and where their arrays live, bytes copied back). The judge runs it on as many simulated devices "
          "as there are weights, on the CPU engine, on every machine."),
    make_inputs=_inputs,
    make_trace_input=_trace_input,
    properties=_props(),
    hint_wrong=("Check the share boundaries with integer arithmetic (n * partial_weight_sum // total), that empty "
                "shares launch nothing, and that you add every partial of every device."),
    stub_hint="shares from the weights; per device: with cuda.gpus[d]: copy in, partials, launch; add the partials",
    host_judge=host_judge(HostCode(run=_runner(_sum_kernel), wrong=_sum_wrong, follow_up=_partials_follow_up)),
    host_compile=compile_split,
))


# --- two more splits: an element-wise scale gathered back, and a stencil whose shares need a halo -------------------

SCALE_THREADS = 256


@cuda.jit
def scale_share(share, out, factor):
    """out[i] = factor * share[i]: the kernel 11.split_scale hands to the host code, one thread per element."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = factor * share[i]


@cuda.jit
def stencil_share(piece, out, first):
    """out[i] = piece[first + i - 1] + piece[first + i] + piece[first + i + 1], a neighbour outside ``piece``
    counting as 0: the kernel 11.split_stencil hands to the host code. ``piece`` is a device's share with the
    halo it copied, ``first`` where the share starts in it."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        j = first + i
        s = piece[j]
        if j > 0:
            s += piece[j - 1]
        if j + 1 < piece.shape[0]:
            s += piece[j + 1]
        out[i] = s


def _split_inputs(make):
    def inputs(rng):
        return [
            make(rng, 1, [1, 1], "one element, two devices"),
            make(rng, 5, [1, 1, 1], "fewer elements than a block, three devices"),
            make(rng, 1021, [1, 1], "prime, even shares"),
            make(rng, 3001, [3, 1], "a device three times as fast"),
            make(rng, int(rng.integers(800, 2_000)), [2, 0, 1], "a device with no share"),
        ]

    return inputs


def _scale_input(rng, n, weights, why):
    x = rng.integers(-50, 50, n).astype(np.float32)
    factor = np.float32(rng.choice([0.5, -2.0, 3.0]))
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n}, weights={list(weights)} ({why})", (), (), (x, list(weights), factor, out),
                 {0: (factor * x).astype(np.float32)}, ("x", "weights", "factor", "out"))


def _stencil_ref(x):
    p = np.concatenate([[0], x.astype(np.float64), [0]])
    return (p[:-2] + p[1:-1] + p[2:]).astype(np.float32)


def _stencil_input(rng, n, weights, why):
    x = rng.integers(-50, 50, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    return Input(f"n={n}, weights={list(weights)} ({why})", (), (), (x, list(weights), out),
                 {0: _stencil_ref(x)}, ("x", "weights", "out"))


def _split_props(halo: int):
    """Each device copies in its share (and at most ``halo`` neighbours on each side), launches on its own arrays,
    and sends back its share of the result once."""

    def copied(rec, inp):
        x, weights = inp.args[:2]
        want = [b - a for a, b in shares(x.shape[0], weights)]
        got = [rec.copied_in[d] for d in range(len(weights))]
        if not halo:
            return got == want, (f"elements copied to each device: {got}; its share: {want} "
                                 "(boundaries at n · (w0 + … + w(d-1)) // Σw)")
        ok = all(w <= g <= w + 2 * halo if w else g == 0 for g, w in zip(got, want))
        return ok, (f"elements copied to each device: {got}; its share: {want}, plus at most {halo} neighbour on "
                    "each side (its halo, 光环区), not the whole vector")

    def back_once(rec, inp):
        n = inp.args[0].shape[0]
        back = sum(rec.copied_out.values())
        return back <= 4 * n, (f"{back} bytes copied back to the host; the result is {4 * n} bytes "
                               "(each device sends back its share of the result, once)")

    def prop(name, fn, hint):
        return Property(name, lambda report, extra: fn(*report), hint)

    own = _props()[1]
    return (
        prop("each device gets its share of x" + (" and its halo" if halo else ""), copied,
             "Device d takes x[b(d):b(d+1)] with b(d) = n * (w[0] + ... + w[d-1]) // sum(w)"
             + (", and the one element on each side of it that the stencil reads — no more." if halo else ".")),
        own,
        prop("each device's result comes back once", back_once,
             "Copy back only the device's own out array (its share of the result), once."),
    )



register(Exercise(
    name="11.split_scale",
    title="Scatter, launch, gather: an element-wise kernel over every device",
    signature="split_scale(x, weights, factor, out, kernel)",
    task=("Write the host function `split_scale(x, weights, factor, out, kernel)` (plain Python, no @cuda.jit): "
          "fill the host array out with factor * x, computed by every device in cuda.gpus, device d taking the "
          "contiguous share x[b(d):b(d+1)] with b(d) = n * (w[0] + … + w[d-1]) // sum(w) (数据并行). For each "
          "device with a non-empty share, inside `with cuda.gpus[d]:`, copy the share in (cuda.to_device), "
          "allocate its result (cuda.device_array(length, np.float32)), launch "
          f"kernel[ceil(length / {SCALE_THREADS}), {SCALE_THREADS}](share, result, factor), and copy the result "
          "back into its place in out (copy_to_host). Return out. Judged on the result and on each device doing "
          "its share (elements copied in, launches and where their arrays live, bytes copied back), on as many "
          "simulated devices as there are weights, on every machine."),
    make_inputs=_split_inputs(_scale_input),
    make_trace_input=lambda rng: _scale_input(rng, trace_size(rng, 4_096), [1, 2, 1], "the recorded run"),
    properties=_split_props(0),
    hint_wrong=("Check the share boundaries with integer arithmetic (n * partial_weight_sum // total), that empty "
                "shares launch nothing, and that each device's result lands in out at its own share's place."),
    stub_hint="shares from the weights; per device: with cuda.gpus[d]: copy in, result array, launch, copy back",
    host_judge=host_judge(HostCode(run=_runner(lambda: scale_share), wrong=result_wrong)),
    host_compile=compile_split,
))

register(Exercise(
    name="11.split_stencil",
    title="A stencil split over the devices: each share with its halo",
    signature="split_stencil(x, weights, out, kernel)",
    task=("Write the host function `split_stencil(x, weights, out, kernel)` (plain Python, no @cuda.jit): fill "
          "the host array out with the 3-point sum out[i] = x[i-1] + x[i] + x[i+1] (a neighbour outside x counts as "
          "0), computed by every device, device d taking the share x[b(d):b(d+1)] with b(d) = n * (w[0] + … + "
          "w[d-1]) // sum(w). A device needs one neighbour on each side of its share that another device owns: "
          "copy in the share with that halo (光环区, x[max(b(d) - 1, 0):min(b(d+1) + 1, n)]), allocate the share's "
          "result, launch "
          f"kernel[ceil(length / {SCALE_THREADS}), {SCALE_THREADS}](piece, result, first), where first is where "
          "the share starts in the piece (0 or 1), and copy the result back into its place in out. Return out. "
          "Judged on the result, on each device copying its share and its halo and no more, launching on its own "
          "arrays, and sending back its share of the result once."),
    make_inputs=_split_inputs(_stencil_input),
    make_trace_input=lambda rng: _stencil_input(rng, trace_size(rng, 4_096), [1, 2, 1], "the recorded run"),
    properties=_split_props(1),
    hint_wrong=("The elements next to a share's boundaries need their neighbours from the next share: copy them "
                "in with the share (one on each side, except at the ends of x), and tell the kernel where the share "
                "starts in what you copied."),
    stub_hint="per device: with cuda.gpus[d]: copy the share with its halo, a result array, launch, copy back",
    host_judge=host_judge(HostCode(run=_runner(lambda: stencil_share), wrong=result_wrong)),
    host_compile=compile_split,
))
