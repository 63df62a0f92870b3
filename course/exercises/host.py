"""Host-code exercises: the learner's plain Python that issues copies and launches (chapter 08's pipeline),
run with a recording stand-in for ``cuda``, checked against NumPy, and judged on the schedule it issues.

:class:`RecordingCuda` stands in for every call a pipeline needs (NumPy arrays for device and pinned memory,
kernels on the CPU engine, whatever the backend) and logs it: which stream, whether the host buffer is pinned,
which bytes. :func:`schedule` is the model of what a
GPU makes of that log (one copy engine each way, one for kernels; a pageable copy is synchronous), so the
schedule judged is the model's, on every backend, not a measurement. :func:`lint_host` and
:func:`compile_host` let the grader compile such code in its own process with nothing but what a pipeline
needs (``cuda.stream``, ``cuda.pinned_array``, ``cuda.device_array``, ``cuda.to_device``, copies, launches,
``cuda.synchronize``).
"""
from __future__ import annotations

import ast
import builtins
import types
from dataclasses import dataclass
from typing import Callable

import numpy as np

from course.engine import is_kernel_object
from course.exercises.contract import Result, Verdict

# --------------------------------------------------------------------------------------------------
# Recording what the host code issues: a stand-in for `cuda` that forwards to numba and logs each call


class _Stream:
    def __init__(self, rec, number):
        self._rec, self.number = rec, number

    def synchronize(self):
        self._rec.log.append(("sync", self.number))

    def __repr__(self):
        return f"<stream {self.number}>"


class _DeviceArray:
    """A device array (or a slice of one) whose copies are logged with their stream and byte range."""

    def __init__(self, rec, real, root, start):
        self._rec, self._real, self._root, self._start = rec, real, root, start

    @property
    def shape(self):
        return self._real.shape

    @property
    def size(self):
        return self._real.size

    @property
    def dtype(self):
        return self._real.dtype

    def __len__(self):
        return len(self._real)

    def __getitem__(self, key):
        if not isinstance(key, slice) or (key.step not in (None, 1)):
            raise TypeError("pipeline: slice a device array with [a:b] only (contiguous chunks)")
        start, stop, _ = key.indices(self._real.shape[0])
        return _DeviceArray(self._rec, self._real[start:stop], self._root, self._start + start)

    def _range(self):
        return (self._root, self._start, self._start + self._real.shape[0])

    def copy_to_device(self, ary, stream=0):
        self._rec.copy("h2d", ary, self, stream)
        src = np.asarray(ary)
        if src.shape != self._real.shape:
            raise ValueError(f"copy_to_device: a host array of shape {src.shape} into a device array of shape "
                             f"{self._real.shape}")
        self._real[...] = src

    def copy_to_host(self, ary=None, stream=0):
        self._rec.copy("d2h", ary if ary is not None else np.empty(0), self, stream, host_given=ary is not None)
        if ary is None:
            return self._real.copy()
        if np.shape(ary) != self._real.shape:
            raise ValueError(f"copy_to_host: a device array of shape {self._real.shape} into a host array of shape "
                             f"{np.shape(ary)}")
        ary[...] = self._real
        return ary


class _Kernel:
    def __init__(self, rec, real, name):
        self._rec, self._real, self._name = rec, real, name

    def __getitem__(self, config):
        if not isinstance(config, tuple) or len(config) not in (2, 3, 4):
            raise TypeError(f"launch {self._name} as {self._name}[blocks_per_grid, threads_per_block, stream](...)")
        stream = config[2] if len(config) >= 3 else 0
        rec = self._rec

        def launch(*args):
            ins = [a._range() for a in args if isinstance(a, _DeviceArray)]
            rec.log.append(("kernel", rec.stream_number(stream), ins, sum(a._real.nbytes for a in args
                                                                          if isinstance(a, _DeviceArray))))
            real_args = tuple(a._real if isinstance(a, _DeviceArray) else a for a in args)
            from course.engine import launch as engine_launch

            engine_launch(self._real, config[0], config[1], real_args, time_limit=rec.time_limit)

        return launch


class RecordingCuda:
    """What the learner's host code sees as ``cuda``: the calls a pipeline needs, each logged.

    Nothing reaches a GPU: "device" and "pinned" arrays are NumPy arrays (device ones start as NaN, so an
    unwritten result shows), copies are NumPy copies, kernels run on the CPU engine in issue order. Grading
    does not depend on the machine (as kernels are judged on the engine), and it also works in the grader's
    forked judging process, where CUDA cannot be used.
    """

    def __init__(self, time_limit=None):
        self.time_limit = time_limit
        self.log = []  # ("alloc_pinned", id) ("h2d"/"d2h", stream, pinned, nbytes, device range) ("kernel", ...)
        self._pinned = []  # the pinned host buffers, to recognise their views
        self._streams = []
        self._roots = 0

    # streams
    def stream(self):
        s = _Stream(self, len(self._streams) + 1)
        self._streams.append(s)
        return s

    def default_stream(self):
        return 0

    def stream_number(self, s):
        if isinstance(s, _Stream):
            return s.number
        if s in (0, None):
            return 0
        raise TypeError("pipeline: pass a stream made by cuda.stream() (or 0, the default stream)")

    def synchronize(self):
        self.log.append(("sync", None))

    # memory
    def pinned_array(self, shape, dtype=np.float64):
        a = np.empty(shape, dtype=dtype)
        self._pinned.append(a)
        return a

    def device_array(self, shape, dtype=np.float64, stream=0):
        self._roots += 1
        n = shape if isinstance(shape, int) else shape[0]
        if n < 0:
            raise ValueError(f"device_array: a negative length {n}")
        return _DeviceArray(self, _unwritten(shape, dtype), self._roots, 0)

    def to_device(self, ary, stream=0):
        """A new device array holding a copy of ``ary`` (logged as a copy in on ``stream``)."""
        d = self.device_array(np.shape(ary), np.asarray(ary).dtype)
        d.copy_to_device(ary, stream=stream)
        return d

    def is_pinned(self, a) -> bool:
        return isinstance(a, np.ndarray) and any(np.shares_memory(a, p) for p in self._pinned)

    def copy(self, kind, host, dev, stream, host_given=True):
        pinned = host_given and self.is_pinned(host)
        self.log.append((kind, self.stream_number(stream), pinned, dev._real.nbytes, dev._range()))


def _unwritten(shape, dtype):
    dt = np.dtype(dtype)
    return np.full(shape, np.nan, dt) if dt.kind in "fc" else np.full(shape, np.iinfo(dt).min if dt.kind in "iu" else 0, dt)


HOST_CUDA_API = {"stream", "pinned_array", "device_array", "to_device", "synchronize", "default_stream"}


# --------------------------------------------------------------------------------------------------
# The schedule a GPU would make of the log: one copy engine each way, one for kernels (设备重叠)


def schedule(log):
    """(modelled time, serial time, per-op timeline) for the logged copies and kernels.

    Each op takes time proportional to its bytes (a copy: its size; a kernel: the bytes of its arrays / 2, so a
    chunk's kernel lasts as long as one of its copies). An op starts when its stream's previous op has ended and
    its engine (H2D copy, D2H copy, compute) is free, in issue order. A copy from pageable memory is synchronous
    (the driver stages it through a pinned buffer): it waits for everything issued before it, and nothing
    issued after it starts before it ends. A host synchronisation (``cuda.synchronize()``, logged with stream
    None; ``stream.synchronize()``, with its number) makes the host wait: nothing issued after it starts before
    the work it waits for has ended (before, the model skipped it: chunks with cuda.synchronize() between them
    were modelled at 0.38 of the serial time, where a GPU takes all of it).
    """
    stream_end, engine_end, barrier, t_all, serial = {}, {}, 0.0, 0.0, 0.0
    timeline = []
    for op in log:
        if op[0] == "sync":
            barrier = max(barrier, t_all if op[1] is None else stream_end.get(op[1], 0.0))
            continue
        if op[0] not in ("h2d", "d2h", "kernel"):
            continue
        kind, stream = op[0], op[1]
        dur = op[3] if kind != "kernel" else op[3] / 2
        serial += dur
        sync_copy = kind != "kernel" and not op[2]
        start = max(stream_end.get(stream, 0.0), engine_end.get(kind, 0.0), barrier)
        if sync_copy or stream == 0:
            start = max(start, t_all)  # waits for all earlier work (the legacy default stream does too)
        end = start + dur
        stream_end[stream] = engine_end[kind] = end
        t_all = max(t_all, end)
        if sync_copy or stream == 0:
            barrier = end
        timeline.append((kind, stream, start, end))
    return t_all, serial, timeline


# --------------------------------------------------------------------------------------------------
# What host code may use (the grader compiles it in its own process: nothing that reaches further)

HOST_ATTRS = {"copy_to_device", "copy_to_host", "synchronize", "copy", "shape", "dtype", "size", "ndim"}
HOST_BUILTINS = {"range", "min", "max", "len", "int", "float", "enumerate", "list", "abs", "zip", "print"}
HOST_NODES = (
    ast.Assign, ast.AugAssign, ast.For, ast.While, ast.If, ast.Expr, ast.Return, ast.Pass, ast.Break,
    ast.Continue, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.Attribute,
    ast.Subscript, ast.Name, ast.Constant, ast.Tuple, ast.List, ast.Slice, ast.ListComp, ast.comprehension,
    ast.keyword, ast.arguments, ast.arg, ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)
HOST_DTYPES = {"float32", "float64", "int32", "int64"}


@dataclass(frozen=True)
class HostRules:
    """What one host-code exercise may use: the ``cuda`` API, attributes, builtins and syntax; ``what`` names
    the code in messages. The grader compiles a submission with nothing more (:func:`compile_host`)."""

    cuda_api: frozenset
    attrs: frozenset = frozenset(HOST_ATTRS)
    builtins: frozenset = frozenset(HOST_BUILTINS)
    nodes: tuple = HOST_NODES
    what: str = "the pipeline"


PIPELINE = HostRules(cuda_api=frozenset(HOST_CUDA_API))


def lint_host(fn: ast.FunctionDef, rules: HostRules = PIPELINE) -> list:
    """Problems that keep host code from being judged, as (line, message); empty when it may run."""
    problems = []
    local = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    for stmt in fn.body:
        for node in ast.walk(stmt):
            line = getattr(node, "lineno", fn.lineno)
            if not isinstance(node, rules.nodes):
                problems.append((line, f"`{type(node).__name__}` is not needed in {rules.what}'s host code"))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not (
                    node.id in local or node.id in rules.builtins or node.id in ("cuda", "np", "numpy")):
                problems.append((line, f"`{node.id}` is not defined in the function (use its arguments, cuda, np)"))
            elif isinstance(node, ast.Attribute):
                if node.attr.startswith("_"):
                    problems.append((line, f"`.{node.attr}` is not available here"))
                elif isinstance(node.value, ast.Name) and node.value.id == "cuda":
                    if node.attr not in rules.cuda_api:
                        problems.append((line, f"cuda.{node.attr}: {rules.what} needs only cuda."
                                               f"{', cuda.'.join(sorted(rules.cuda_api))}"))
                elif isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"):
                    if node.attr not in HOST_DTYPES:
                        problems.append((line, f"np.{node.attr}: only NumPy dtypes here (np.float32 ...)"))
                elif node.attr not in rules.attrs:
                    problems.append((line, f"`.{node.attr}`: here only {', '.join(sorted(rules.attrs))}"))
    seen, out = set(), []
    for line, msg in problems:
        if line not in seen:
            seen.add(line)
            out.append((line, msg))
    return out


def compile_host(fn_node: ast.FunctionDef, filename: str = "<cell>", rules: HostRules = PIPELINE):
    """A function from the linted source of a host-code exercise, with only safe builtins (for the grader)."""
    problems = lint_host(fn_node, rules)
    if problems:
        line, msg = problems[0]
        raise ValueError(f"line {line} (in {fn_node.name}): {msg}")
    clean = ast.fix_missing_locations(ast.Module(body=[_without_decorators(fn_node)], type_ignores=[]))
    namespace = {"__builtins__": {n: getattr(builtins, n) for n in rules.builtins}, "np": np, "numpy": np,
                 "__name__": "submission"}
    exec(compile(clean, filename, "exec"), namespace)
    return namespace[fn_node.name]


def _without_decorators(fn_node):
    import copy

    clean = copy.copy(fn_node)
    clean.decorator_list = []
    clean.returns = None
    return clean


def _host_problems(fn, rules: HostRules = PIPELINE) -> list:
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return []
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if node is None:
        return []
    offset = fn.__code__.co_firstlineno - node.lineno
    return [(line + offset, msg) for line, msg in lint_host(node, rules)]



# --------------------------------------------------------------------------------------------------
# Judging: run the host code with the recording cuda, compare, then read the schedule of one run


def run_host(fn, inp, ex_kernel, time_limit=None):
    """Call host code ``fn`` on ``inp`` (its arguments, then the kernel it is handed) with a fresh
    :class:`RecordingCuda` as its ``cuda``: (recording, result)."""
    from course.exercises.contract import LAUNCH_TIME_LIMIT

    rec = RecordingCuda(LAUNCH_TIME_LIMIT if time_limit is None else time_limit)
    bound = types.FunctionType(fn.__code__, dict(fn.__globals__, cuda=rec), fn.__name__, fn.__defaults__,
                               fn.__closure__)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in inp.args]
    got = bound(*args, _Kernel(rec, ex_kernel(), "kernel"))
    return rec, got


def result_wrong(got, inp) -> str | None:
    """None when host code returned the expected array (``inp.expected[0]``), else what is wrong with it."""
    want = inp.expected[0]
    if got is None:
        return "the function returned None: return the result array"
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"the result has shape {got.shape}, expected {want.shape}"
    bad = np.flatnonzero(~((got == want) | (np.isnan(got) & np.isnan(want))))
    if not bad.size:
        return None
    k = int(bad[0])
    what = "NaN: never written" if np.isnan(got[k]) else f"{got[k]:g}, expected {want[k]:g}"
    return f"result[{k}] is {what}; {bad.size} of {want.size} elements wrong"


@dataclass(frozen=True)
class HostCode:
    """What differs between host-code exercises (08.pipeline, chapter 11's splits) for the one judge,
    :func:`host_judge`: how the code runs and what its result must be.

    ``run(ex, fn, inp, time_limit)`` calls the learner's function with the exercise's recording ``cuda``:
    (recording, result); ``wrong(result, inp)`` is None when right, else a sentence. ``rules``: when given,
    the judge lints the function's source with them first (``lint_result``, ``lint_hint`` say so); the
    grader's ``host_compile`` applies an exercise's rules in any case. ``on_host``: the hint for a function
    decorated with @cuda.jit (default: its name runs on the host). ``follow_up(ex, fn, inp, rec, time_limit)``:
    a further run of the traced input whose findings a property reads from ``rec`` (11.split_sum shifts every
    partial, to see that the sum returned is made of them)."""

    run: Callable
    wrong: Callable = result_wrong
    rules: HostRules | None = None
    lint_result: str = ""
    lint_hint: str = ""
    on_host: str = ""
    follow_up: Callable | None = None


def _run_pipeline(ex, fn, inp, time_limit):
    return run_host(fn, inp, ex.host_kernel, time_limit)


PIPELINE_CODE = HostCode(
    run=_run_pipeline, rules=PIPELINE, lint_result="uses only what a pipeline needs",
    lint_hint=("The host code needs cuda.stream, cuda.pinned_array, cuda.device_array, copies and launches: "
               "nothing else."),
    on_host="The pipeline runs on the host: write it as a plain Python function.")


def host_judge(code: HostCode) -> Callable:
    """The judge of one kind of host code (an Exercise's ``host_judge``): correct on every input and on the
    traced one, then one recorded run of the traced input against each property (``ex.properties`` measure
    ``(recording, input)``)."""

    def judge(ex, fn, *, seed=None, time_limit=None, lint=True) -> Verdict:
        return _judge_host(code, ex, fn, seed, time_limit, lint)

    return judge


def _judge_host(code: HostCode, ex, fn, seed, time_limit, lint) -> Verdict:
    from course.exercises.judging import is_stub

    rng = np.random.default_rng(seed)
    results = []

    def verdict(status, score, hint):
        return Verdict(ex.name, status, score, ex.max_score, results, hint)

    if getattr(fn, "py_func", None) is not None or is_kernel_object(fn):
        results.append(Result("plain Python host code", False, f"{ex.target} is decorated with @cuda.jit"))
        return verdict("rejected", 0, code.on_host or f"{ex.target} runs on the host: write it as a plain Python "
                                                      "function.")
    if is_stub(fn):  # before the lint: the stub's `raise` is not host code the exercise needs
        results.append(Result("not written yet", False, "the function still raises NotImplementedError"))
        return verdict("not attempted", 0, ex.stub_hint)
    if lint and code.rules is not None:
        problems = _host_problems(fn, code.rules)
        if problems:
            line, msg = problems[0]
            results.append(Result(code.lint_result, False, f"line {line}: {msg}"))
            return verdict("rejected", 0, code.lint_hint)
    inputs = list(ex.make_inputs(rng))
    trace = ex.make_trace_input(rng)
    rec = None
    for inp in inputs + [trace]:
        try:
            rec, got = code.run(ex, fn, inp, time_limit)
        except NotImplementedError:
            results.append(Result("not written yet", False, "the function still raises NotImplementedError"))
            return verdict("not attempted", 0, ex.stub_hint)
        except Exception as exc:  # the learner's code failed: report, never raise
            text = " ".join(str(exc).split())[:400] or type(exc).__name__
            results.append(Result("runs without an error", False, f"{type(exc).__name__}: {text}", inp.label))
            return verdict("error", 0, ex.hint_wrong)
        wrong = code.wrong(got, inp)
        if wrong:
            results.append(Result("correct result", False, wrong, inp.label))
            return verdict("fail", 0, ex.hint_wrong)
    results.append(Result(f"correct on {len(inputs) + 1} inputs", True, ", ".join(i.label for i in inputs)))
    if code.follow_up is not None:
        code.follow_up(ex, fn, trace, rec, time_limit)
    score, hint = 1, ""
    for prop in ex.properties:
        ok, detail = prop.measure((rec, trace), {})
        results.append(Result(prop.name, ok, detail, trace.label))
        if ok:
            score += 1
        elif not hint:
            hint = prop.hint
    return verdict("pass" if score == ex.max_score else "partial", score, hint)
