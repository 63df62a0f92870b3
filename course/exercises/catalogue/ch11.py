"""Chapter 11: a reduction split over every device in proportion to given weights — host code, judged on the
result and on each device doing its share.

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

import numpy as np

from course.exercises.contract import LAUNCH_TIME_LIMIT, Exercise, Input, Property, Result, Verdict
from course.exercises.host import HOST_BUILTINS, HOST_NODES, HostRules, compile_host, lint_host
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

            where = [a._dev for a in args if isinstance(a, _Out)]
            self._rec.launches.append((self._rec.current(), where))
            arrays = [a._real if isinstance(a, _Out) else a for a in args]
            engine_launch(self._real, config[0], config[1], arrays, time_limit=self._rec.time_limit)

        return launch


class SplitCuda:
    """The calls a split reduction needs (``gpus``, ``to_device``, ``device_array``, ``synchronize``) on
    ``devices`` simulated devices, recorded."""

    def __init__(self, devices: int, time_limit: float | None = None):
        self.stack: list = []
        self.copied_in = collections.Counter()   # device -> elements
        self.copied_out = collections.Counter()  # device -> bytes
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
        self._rec, self._real, self._dev = rec, real, dev

    def __getattr__(self, name):
        return getattr(self._real, name)

    def copy_to_host(self, ary=None):
        self._rec.copied_out[self._dev] += self._real.nbytes
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


def _input(rng, n, weights, why):
    x = rng.integers(-8, 8, n).astype(np.float32)  # small integers: every partial and the total are exact
    return Input(f"n={n}, weights={list(weights)} ({why})", (), (), (x, list(weights)),
                 {0: float(x.astype(np.float64).sum())}, ("x", "weights"))


def _inputs(rng):
    return [
        _input(rng, 1, [1, 1], "one element, two devices"),
        _input(rng, 5, [1, 1, 1], "fewer elements than a block, three devices"),
        _input(rng, 4099, [1, 1], "prime, even shares"),
        _input(rng, 10_000, [3, 1], "a device three times as fast"),
        _input(rng, int(rng.integers(2_000, 6_000)), [2, 0, 1], "a device with no share"),
    ]


def _trace_input(rng):
    return _input(rng, 8_192, [1, 2, 1], "the recorded run")


def _run(fn, inp, time_limit=None):
    from course.kernels import multi_gpu as M

    x, weights = inp.args
    rec = SplitCuda(len(weights), time_limit)
    bound = types.FunctionType(fn.__code__, dict(fn.__globals__, cuda=rec), fn.__name__, fn.__defaults__,
                               fn.__closure__)
    got = bound(x.copy(), list(weights), _Kernel(rec, M.block_partials))
    return rec, got


def _props():
    def share(rec, inp):
        x, weights = inp.args
        want = [b - a for a, b in shares(x.shape[0], weights)]
        got = [rec.copied_in[d] for d in range(len(weights))]
        return got == want, (f"elements copied to each device: {got}; its share: {want} "
                             "(boundaries at n · (w0 + … + w(d-1)) // Σw)")

    def own_data(rec, inp):
        x, weights = inp.args
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
        return back <= 4 * blocks, (f"{back} bytes copied back to the host; the partial sums are {4 * blocks} "
                                    "bytes (the combine should move partials, not the data)")

    def prop(name, fn, hint):
        return Property(name, lambda report, extra: fn(*report), hint)

    return (
        prop("each device gets exactly its share of x", share,
             "Device d takes x[b(d):b(d+1)] with b(d) = n * (w[0] + ... + w[d-1]) // sum(w): integer arithmetic, "
             "so that the shares cover x once whatever n is."),
        prop("each device with a share launches the kernel on its own arrays", own_data,
             "Inside `with cuda.gpus[d]:` copy the share in, allocate the partials and launch: arrays made there live "
             "on device d, and a launch there runs on device d."),
        prop("only the partial sums come back to the host (最终合并)", partials_only,
             "Copy back the partials array of each device (one float per block), not the share itself."),
    )


def judge_split(ex, fn, *, seed=None, time_limit=None, lint=True) -> Verdict:
    """Judge the split: correct on every input, then the recorded run against each property."""
    from course.exercises.judging import is_stub

    rng = np.random.default_rng(seed)
    results: list = []

    def verdict(status, score, hint):
        return Verdict(ex.name, status, score, ex.max_score, results, hint)

    if getattr(fn, "py_func", None) is not None or type(fn).__name__ in ("CUDADispatcher", "FakeCUDAKernel"):
        results.append(Result("plain Python host code", False, "split_sum is decorated with @cuda.jit"))
        return verdict("rejected", 0, "split_sum runs on the host: write it as a plain Python function.")
    if is_stub(fn):
        results.append(Result("not written yet", False, "the function still raises NotImplementedError"))
        return verdict("not attempted", 0, ex.stub_hint)
    return _judge_runs(ex, fn, rng, results, verdict, time_limit)


def _judge_runs(ex, fn, rng, results, verdict, time_limit):
    inputs = list(ex.make_inputs(rng))
    trace = ex.make_trace_input(rng)
    rec = None
    for inp in inputs + [trace]:
        try:
            rec, got = _run(fn, inp, time_limit)
        except NotImplementedError:
            results.append(Result("not written yet", False, "the function still raises NotImplementedError"))
            return verdict("not attempted", 0, ex.stub_hint)
        except Exception as exc:  # the learner's code failed: report it, never raise
            text = " ".join(str(exc).split())[:400] or type(exc).__name__
            results.append(Result("runs without an error", False, f"{type(exc).__name__}: {text}", inp.label))
            return verdict("error", 0, ex.hint_wrong)
        want = inp.expected[0]
        try:
            ok = got is not None and float(got) == want
        except (TypeError, ValueError):
            ok = False
        if not ok:
            results.append(Result("correct result", False, f"returned {got!r}, the sum is {want:g}", inp.label))
            return verdict("fail", 0, ex.hint_wrong)
    results.append(Result(f"correct on {len(inputs) + 1} inputs", True, ", ".join(i.label for i in inputs)))
    score, hint = 1, ""
    for p in ex.properties:
        ok, detail = p.measure((rec, trace), {})
        results.append(Result(p.name, ok, detail, trace.label))
        score += ok
        hint = hint or ("" if ok else p.hint)
    return verdict("pass" if score == ex.max_score else "partial", score, hint)


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
    host_judge=judge_split,
    host_compile=compile_split,
))
