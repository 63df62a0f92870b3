"""Judging a kernel: fresh inputs and awkward shapes against the reference, then a traced launch for the
performance properties."""

from __future__ import annotations

import ast
import textwrap

import numpy as np

from course.exercises.contract import (
    LAUNCH_TIME_LIMIT,
    Exercise,
    Input,
    Result,
    Verdict,
)
from course.exercises.lint import kernel_source_problems, py_func
from course.exercises.properties import no_races, race_text

# Judging


class _SharedBytes:
    """Engine hooks that record how many bytes of shared memory each block allocates."""

    def __init__(self):
        self.per_block = []
        self.launch = None

    def begin_launch(self, launch):
        self.launch = launch  # course.engine.LaunchView

    def end_block(self, block):
        self.per_block.append(self.launch.shared_bytes)

    @property
    def max_bytes(self) -> int:
        return max(self.per_block, default=0)


def _launch(kernel, inp: Input, hooks=None, time_limit=None, seed=None):
    """One launch on the CPU engine, whatever the backend.

    Grading must not depend on the machine: the engine reports an out-of-bounds index or a barrier
    some threads skip (a GPU silently survives both), runs threads in one documented order, and
    stops an endless kernel at its time limit.
    """
    from course.engine import launch

    launch(kernel, inp.griddim, inp.blockdim, inp.args, hooks=hooks, seed=seed,
           time_limit=LAUNCH_TIME_LIMIT if time_limit is None else time_limit)


#: How many other thread orders (``launch(seed=k)``, k drawn from the judge's seed) every kernel's largest
#: input runs in besides the engine's default one: a race on a global word (``out[0] += s``) gives the right
#: answer in the default order, where each thread runs until it waits, and loses updates in another.
OTHER_ORDERS = 1


def _fresh(inp: Input) -> Input:
    """A copy of ``inp`` whose arrays are copies (the output still unwritten), for one more launch."""
    args = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in inp.args)
    return Input(inp.label, inp.griddim, inp.blockdim, args, inp.expected, inp.names)


def _size(inp: Input) -> int:
    return sum(a.size for a in inp.args if isinstance(a, np.ndarray)) + int(np.prod(inp.griddim))


#: The hint for a race the correctness point is lost to (a property's own race hint speaks of its tile).
RACE_HINT = ("Two threads touch the same word, one of them writing, and nothing orders them: `out[0] += s` is a "
             "load, an add and a store, and another thread's store can fall between them (a lost update). Give "
             "each thread or block its own word, add with cuda.atomic.add, or put a cuda.syncthreads() between "
             "the writer and the reader.")


def _race_results(ex: Exercise, kernel, spare: Input, rng, report, results, time_limit) -> list:
    """Failed Results when the kernel races: the tracer's races (every kernel, not only those with a
    ``no_races`` property, which judges them itself) and a wrong answer under another thread order."""
    failed = []
    prop = [r for r in results if r.what == no_races().name]
    if prop and not prop[0].passed:  # the exercise's own no_races property has already taken its point
        return failed
    if not prop:
        try:
            if report is None:
                from course.trace import trace

                tin = _fresh(ex.make_trace_input(np.random.default_rng(rng.integers(1 << 31))))
                report = trace(kernel, tin.griddim, tin.blockdim, *tin.args, lines=False,
                               time_limit=LAUNCH_TIME_LIMIT if time_limit is None else time_limit)
            races = list(report.races())
        except Exception:  # a trace that fails here failed on a launch the checks already passed: no verdict
            races = []
        if races:
            failed.append(Result("no race between threads", False,
                                 f"{len(races)} race(s); first: {race_text(races[0])}"))
    for _ in range(OTHER_ORDERS):
        order = int(rng.integers(1, 1 << 31))
        wrong = None
        # a seeded order runs slower on the engine than its own order (and a loaded grader slower still): a launch
        # that runs out of time here is given four times as long before anything is said, and a launch that still
        # does not finish is reported as that, not as a race (a correct tiled matmul lost its point so, graded
        # beside another test run on 2 cores)
        limit = LAUNCH_TIME_LIMIT if time_limit is None else time_limit
        for attempt in (limit, 4 * limit):
            again = _fresh(spare)
            try:
                _launch(kernel, again, time_limit=attempt, seed=order)
                wrong = _compare(ex, again)
                break
            except Exception as exc:
                status, _what, wrong = _classify(exc)
                if status != "timeout":
                    break
        else:
            failed.append(Result(f"finishes in another thread order (launch(seed={order}))", False,
                                 f"{wrong} (given {4 * limit:g} s, four times the limit)", spare.label))
            break
        if wrong:
            failed.append(Result(f"correct in another thread order (launch(seed={order}))", False,
                                 f"{wrong}: the result depends on the order threads run in, a race",
                                 spare.label))
            break
    return failed


def is_stub(kernel) -> bool:
    """True when the kernel's body is still the exercise's ``raise NotImplementedError(...)`` stub."""
    import inspect

    fn = py_func(kernel)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    body = [s for s in (node.body if node else []) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


#: Characters of an exception's text a verdict keeps: a kernel may raise a message of any size.
MAX_DETAIL = 1500


def cut(text: str, n: int = MAX_DETAIL) -> str:
    """``text`` with at most ``n`` characters kept, saying how many were cut."""
    text = str(text)
    return text if len(text) <= n else f"{text[:n]} … [{len(text) - n:,} more characters cut]"


def _classify(exc: BaseException):
    """(status, what, detail) for an exception raised by a launch of the learner's kernel."""
    chain, e = [], exc
    while e is not None and len(chain) < 5:
        chain.append(e)
        e = getattr(e, "cause", None) or e.__cause__ or e.__context__
    if any(isinstance(e, NotImplementedError) for e in chain):
        return "not attempted", "not written yet", "the kernel still raises NotImplementedError"
    text = cut(str(exc).strip() or type(exc).__name__)
    if "time limit" in text:
        return "timeout", "finishes in time", text
    if "out of bounds" in text or "IndexError" in text:
        return "error", "stays inside its arrays", text
    return "error", "runs without an error", f"{cut(type(exc).__name__, 100)}: {text}" if not isinstance(
        exc, RuntimeError) else text


def _compare(ex: Exercise, inp: Input):
    """None if every expected array matches, else a sentence naming the first wrong element."""
    for k, want in inp.expected.items():
        got = np.asarray(inp.args[k])
        name = inp.names[k]
        if ex.rtol or ex.atol:
            ok = np.isclose(got, want, rtol=ex.rtol, atol=ex.atol)
        else:
            ok = (got == want) | (np.isnan(got) & np.isnan(want))
        if ok.all():
            continue
        bad = np.argwhere(~ok)
        first = tuple(int(i) for i in bad[0])
        idx = ", ".join(map(str, first))
        g = got[first]
        if np.isnan(g):
            what = f"{name}[{idx}] is NaN: never written (or a NaN was computed)"
        else:
            what = f"{name}[{idx}] is {g:g}, expected {want[first]:g}"
        return f"{what}; {len(bad)} of {got.size} elements wrong"
    return None


# The hint follows the mistake: an exercise's hint_wrong describes its likely wrong result, which does not
# fit a kernel that stopped with an error; where it describes an indexing mistake, the exercise says what
# to tell a kernel that wrote every element with a wrong value (Exercise.hint_all_wrong).
HINT_DID_NOT_RUN = ("The kernel stopped before it produced a result: the error above names the line and what "
                    "went wrong. Fix that first; the result is checked once the kernel runs.")
HINT_TIMEOUT = ("A kernel that never finishes usually has a loop whose condition never becomes false, or "
                "threads waiting at a barrier others never reach.")

def _hint_for_error(ex: Exercise, status: str, what: str) -> str:
    if status == "not attempted":
        return ex.stub_hint
    if "inside its arrays" in what:
        return ex.hint_oob
    if status == "timeout":
        return HINT_TIMEOUT
    return HINT_DID_NOT_RUN


def _poisoned(inp: Input) -> bool:
    """True when every expected output starts as NaN (not an accumulator that starts at zero)."""
    return all(np.asarray(inp.args[k]).dtype.kind == "f" and np.isnan(inp.args[k]).all() for k in inp.expected)


def _hint_for_wrong(ex: Exercise, inp: Input, poisoned: bool) -> str:
    """ex.hint_wrong, unless every expected element was written with a wrong value (a formula mistake).

    ``poisoned``: the outputs started as NaN, so a number in every element means every one was written.
    """
    if not poisoned or ex.hint_all_wrong is None:
        return ex.hint_wrong
    for k, want in inp.expected.items():
        got = np.asarray(inp.args[k], np.float64)
        want = np.asarray(want, np.float64)
        if got.shape != want.shape or np.isnan(got).any():
            return ex.hint_wrong
        ok = np.isclose(got, want, rtol=ex.rtol, atol=ex.atol) if (ex.rtol or ex.atol) else got == want
        if ok.any():
            return ex.hint_wrong
    return ex.hint_all_wrong


def _race_on(kernel, ex: Exercise, inp: Input) -> str:
    """The first race the tracer finds when ``kernel`` runs on (a fresh copy of) ``inp``, or ''."""
    if not any(p.name == "no race between threads" for p in ex.properties):
        return ""
    try:
        from course.trace import trace

        args = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in inp.args)
        races = list(trace(kernel, inp.griddim, inp.blockdim, *args, lines=False).races())
    except Exception:  # diagnosis only: the wrong result is already reported
        return ""
    return f"{len(races)} race(s); first: {race_text(races[0])}" if races else ""


def judge(ex: Exercise, kernel, *, seed=None, time_limit=None, lint=True) -> Verdict:
    """Run ``kernel`` on fresh inputs and a traced launch; return the verdict (never raises for the kernel's faults)."""
    if ex.host_judge is not None:  # host code (chapter 08's pipeline): its own runs and schedule
        return ex.host_judge(ex, kernel, seed=seed, time_limit=time_limit, lint=lint)
    rng = np.random.default_rng(seed)
    results = []

    def verdict(status, score, hint):  # a check this machine cannot judge counts in neither score nor maximum
        return Verdict(ex.name, status, score, ex.max_score - sum(not r.judged for r in results), results, hint)

    if lint:
        problems = kernel_source_problems(kernel)
        if problems:
            line, msg = problems[0]
            results.append(Result("uses only what compiles in a CUDA kernel", False, f"line {line}: {msg}"))
            return verdict("rejected", 0, "Inside a kernel only cuda.*, math.*, arithmetic, numbers, arrays and "
                                          "device functions are available: that is what compiles for the GPU.")
    if is_stub(kernel):
        results.append(Result("not written yet", False, "the kernel still raises NotImplementedError"))
        return verdict("not attempted", 0, ex.stub_hint)
    inputs = list(ex.make_inputs(rng))
    spare = _fresh(max(inputs, key=_size))  # the largest input, unwritten, for another thread order
    for inp in inputs:
        poisoned = _poisoned(inp)
        try:
            _launch(kernel, inp, time_limit=time_limit)
        except Exception as exc:  # the learner's kernel failed: report, never raise
            status, what, detail = _classify(exc)
            results.append(Result(what, False, detail, inp.label))
            return verdict(status, 0, _hint_for_error(ex, status, what))
        wrong = _compare(ex, inp)
        if wrong:
            results.append(Result("correct result", False, wrong, inp.label))
            race = _race_on(kernel, ex, inp)
            if race:  # a wrong result caused by a race: say so, it is the thing to fix
                results.append(Result("no race between threads", False, race, inp.label))
                return verdict("fail", 0, no_races().hint)
            return verdict("fail", 0, _hint_for_wrong(ex, inp, poisoned))
    results.append(Result(f"correct on {len(inputs)} inputs", True, ", ".join(i.label for i in inputs)))
    score = 1
    hint = ""
    report = None
    if ex.properties:
        tin = ex.make_trace_input(rng)
        shared = _SharedBytes()
        poisoned = _poisoned(tin)
        try:
            _launch(kernel, tin, hooks=shared, time_limit=time_limit)
            wrong = _compare(ex, tin)
            if wrong:
                results.append(Result("correct result", False, wrong, tin.label))
                return verdict("fail", 0, _hint_for_wrong(ex, tin, poisoned))
            from course.trace import trace

            tin2 = ex.make_trace_input(np.random.default_rng(rng.integers(1 << 31)))
            report = trace(kernel, tin2.griddim, tin2.blockdim, *tin2.args,
                           lines=any(p.lines for p in ex.properties),
                           time_limit=LAUNCH_TIME_LIMIT if time_limit is None else time_limit)
        except Exception as exc:
            status, what, detail = _classify(exc)
            results.append(Result(what, False, detail, tin.label))
            return verdict(status, 0, _hint_for_error(ex, status, what))
        extra = {"shared_bytes": shared.max_bytes, "kernel": kernel, "input": tin2}  # kernel: properties that time it on a GPU
        for prop in ex.properties:
            ok, detail = prop.measure(report, extra)
            results.append(Result(prop.name, bool(ok), detail, tin2.label, judged=ok is not None))
            if ok:
                score += 1
            elif ok is not None and not hint:
                hint = prop.hint
    raced = _race_results(ex, kernel, spare, rng, report, results, time_limit)
    if raced:  # the correctness point needs a result that does not depend on the order threads run in
        results[1:1] = raced
        score -= 1
        hint = RACE_HINT
    top = ex.max_score - sum(not r.judged for r in results)
    status = "pass" if score == top else "partial" if score else "fail"
    return verdict(status, score, hint)
