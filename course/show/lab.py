"""The lab side of a chapter: predict a count and let the tracer answer; time your kernels beside the H200's.

- :func:`predict` compares the learner's prediction with the tracer's count and says right or wrong,
  with the reason, in one line: a count exactly, a real number within the tolerance its question
  states; a text is refused with what to write.  Until a prediction is written it keeps the answer to
  itself.  :func:`choose` does the same for a multiple-choice answer.
- :func:`yours_vs_recorded` runs the notebook's kernels: on a GPU it checks each one against NumPy
  (:func:`course.measure.bench.verify`) and then times it (:func:`course.measure.bench.time_ms`), beside the
  recorded H200 run ("yours, now" vs "recorded"); on a CPU backend it traces each one on a small
  launch and shows the tracer's counts beside the recorded run. CPU time is never shown.
- :data:`LAB_PATHS` are two-hour classroom labs (chapter sections, then graded exercises); chapter 00
  shows them with :func:`lab_paths`.

Defined for chapter 01 (notebooks/01_programming_model.ipynb); every chapter 01–10 uses both.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

import course  # (chooses the backend before numba is imported)
from course.measure.measurements import number
from course.show import display


def _shown(x) -> str:
    return f"{round(float(x), 6):g}" if number(x) is not None else str(x)


def verdict(question: str, yours, actual, why: str, by: str = "the tracer counts", *,
            tolerance: float = 0, relative: float = 0) -> str:
    """The one-line answer to a prediction (see :func:`predict`)."""
    if tolerance:
        question = f"{question} (within ±{tolerance:g})"
    if relative:
        question = f"{question} (within ±{relative:.0%})"
    if yours is None:
        return (f"{question}: write your prediction (a number) in the cell and run it again; "
                f"the answer stays hidden until then.")
    mine, real = number(yours), number(actual)
    if mine is None:
        return (f"{question}: you wrote {yours!r}, which is not a number. Write a number (for example "
                f"my_prediction = 12, no quotes) and run the cell again; the answer stays hidden until then.")
    if real is None:
        raise TypeError(f"verdict: the answer to {question!r} is {actual!r}, not a number")
    if abs(mine - real) <= tolerance + relative * abs(real) + 1e-9 * max(1.0, abs(real)):
        return f"right: {question} = {_shown(actual)}. {why}"
    return f"not quite: you said {_shown(yours)}, {by} {_shown(actual)}. {why}"


def predict(question: str, yours, actual, why: str, by: str = "the tracer counts", *,
            tolerance: float = 0, relative: float = 0) -> None:
    """Print whether ``yours`` matches ``actual``, with ``why``: one line, printed once.

    A count is judged exactly (``tolerance=0``, the default).  A real number is judged within
    ``tolerance`` (absolute) or ``relative`` (a share of the answer, for times), which the question states: the
    call site picks one tight enough that the common wrong answer fails.  A text, or anything that is not a number, is refused with what to write.
    ``by`` names who answered in a wrong verdict ("the tracer counts", "the calculator gives" ...).
    """
    print(verdict(question, yours, actual, why, by, tolerance=tolerance, relative=relative))


def compiled(kernel, *args, shipped=None) -> dict:
    """What the GPU compiler (ptxas, sm_90) gives ``kernel`` launched with ``args``: ``{"registers", "local_bytes",
    "spill_bytes", ...}`` per thread, as ``nvcc -Xptxas -v`` prints them (course.trace.compiler_typing.kernel_resources:
    committed facts, the cache, else the CUDA compiler). ``shipped``: the course's own copy of a chapter's kernel
    cell, whose committed facts answer while the cell is unchanged and no compiler is installed. Raises
    LookupError, saying what to do, where none is known.

    Defined for chapter 03 §2 (notebooks/03_memory_coalescing.ipynb)."""
    from course.trace import compiler_typing

    res, why, name = compiler_typing.kernel_resources(kernel, args, shipped=shipped)
    if res is None:
        raise LookupError(
            f"what the GPU compiler makes of {name} is not known here: data/compiler_facts.json has it only for "
            f"the kernel as the course ships it, and the CUDA compiler is not installed ({why}). `make toolkit` "
            f"installs it (no GPU needed); or run `python -m course.notebook_cells sync` to restore the cell.")
    if "error" in res:
        raise LookupError(f"the GPU compiler refused {name}: {res['error']}")
    return res


def choose(question: str, yours, actual: str, options: Sequence[str], why: str, by: str = "the course sees") -> None:
    """Print whether the option ``yours`` (one of ``options``, e.g. "a", "b", "c") is ``actual``: one line."""
    said = ", ".join(f'"{o}"' for o in options)
    if yours is None:
        print(f"{question}: write your answer ({said}) in the cell and run it again; the answer stays hidden until then.")
    elif yours not in options:
        print(f"{question}: you wrote {yours!r}; write one of {said} (with the quotes) and run the cell again.")
    elif yours == actual:
        print(f"right: {question}: {actual}. {why}")
    else:
        print(f'not quite: you said "{yours}", {by} "{actual}". {why}')


def differs(got, expected, *, rtol: float = 0.0, wrong=None, started=None) -> Optional[str]:
    """None when ``got`` equals ``expected`` (within ``rtol`` of the largest value), else what differs and where.

    ``wrong`` is a mask of wrong elements when the chapter judges them its own way (a matmul's rounding
    bound); ``started`` is what the output held before the launch, so that an element still holding it is
    named as never written.
    """
    got, want = np.asarray(got), np.asarray(expected)
    if got.shape != want.shape:
        return f"the result has shape {got.shape}, expected {want.shape}"
    if wrong is None:
        if rtol:
            scale = float(np.nanmax(np.abs(want))) if want.size else 1.0
            wrong = ~np.isclose(got, want, rtol=rtol, atol=rtol * (scale or 1.0))
        else:
            wrong = ~((got == want) | (np.isnan(got) & np.isnan(want)) if got.dtype.kind == "f" else got == want)
    wrong = np.asarray(wrong, bool)
    if not wrong.any():
        return None
    bad = np.argwhere(wrong) if got.ndim else np.zeros((1, 0), int)
    first, last = (tuple(int(i) for i in b) for b in (bad[0], bad[-1]))
    where = lambda idx: "[" + ", ".join(map(str, idx)) + "]"  # noqa: E731
    g, w = got[first], want[first]
    never = (np.isnan(g) if got.dtype.kind == "f" else False) or (started is not None and g == started)
    value = f"never written (still {g})" if never else f"got {g:g}" if got.dtype.kind in "fiu" else f"got {g}"
    span = f"; the last at {where(last)}" if len(bad) > 1 else ""
    return (f"{len(bad)} of {got.size} elements differ, the first at {where(first)}: {value}, "
            f"expected {w:g}{span}")


def compare(name: str, got, expected, *, rtol: float = 0.0, wrong=None, started=None, counts_below: bool = True,
            expected_by: str = "NumPy's answer") -> bool:
    """Say whether the kernel ``name`` left ``expected``; print what differs and where when it did not.

    The one path by which a chapter checks a learner's kernel: never a raw assertion, and the cell goes on
    (the tracer's counts are still shown).  Under ``COURSE_STRICT=1`` (``make test``) a wrong result raises,
    so a shipped kernel that is wrong fails the notebook run.
    """
    problem = differs(got, expected, rtol=rtol, wrong=wrong, started=started)
    if problem is None:
        return True
    message = (f"{name}: not {expected_by}: {problem}. " + ("The counts below are still the tracer's. " if counts_below else "")
               + "Fix the kernel's cell, run it, then this cell again.")
    if os.environ.get("COURSE_STRICT") == "1":
        raise AssertionError(message)
    print(message)
    return False


def traced(name: str, kernel, griddim, blockdim, *args, out=None, expected=None, lines: bool = False,
           detail_blocks=(), **check):
    """Trace one launch of ``kernel``, check ``out`` against ``expected`` (when given), return the :class:`Report`.

    The one way a chapter counts a kernel it shows: ``kernel[griddim, blockdim](*args)`` traced once, then,
    when ``expected`` is given, ``out`` (one of ``args``) judged by :func:`compare` with ``check``
    (``rtol``, ``expected_by``, ``started``…) under ``name``, so a wrong kernel is named and its counts still
    come back.  ``wrong``, a chapter's own mask of wrong elements, may be a function of ``out``: it can only be
    judged after the launch.  ``report.totals()`` are the counts; :func:`per_request` divides them.
    ``detail_blocks`` are the blocks whose every access is kept (for ``Report.warp_detail``; None: the tracer's
    default); none by default, since counts never need them.
    Defined for chapters 03, 04, 05, 07, 09 and 10.
    """
    from course.trace import trace

    report = trace(kernel, griddim, blockdim, *args, lines=lines,
                   detail_blocks=None if detail_blocks is None else list(detail_blocks))
    if expected is not None:
        if callable(check.get("wrong")):
            check["wrong"] = check["wrong"](out)
        compare(name, out, expected, **check)
    return report


def trace_version(name: str, kernel, version, size: tuple, inputs: tuple, out, expected, *, lines: bool = False,
                  **check) -> dict:
    """:func:`traced` at registry ``version``'s launch for ``size``: its totals.

    The launch is the version's own (``version.griddim(*size)`` blocks of ``version.threads``, arguments
    ``version.args(*inputs, out)``), so a learner's ``kernel`` (None: the version's) is counted exactly where the
    registry's is.  Defined for chapters 05, 09 and 10.
    """
    return traced(name, kernel or version.kernel, version.griddim(*size), version.threads,
                  *version.args(*inputs, out), out=out, expected=expected, lines=lines, **check).totals()


PER_REQUEST = ("ld sectors/req", "st sectors/req", "shared ld wavefronts/req", "shared st wavefronts/req")


def per_request(totals) -> dict:
    """Sectors per global request and wavefronts per shared request from a Report's totals (or the Report)."""
    if hasattr(totals, "totals"):
        totals = totals.totals()
    out = {}
    for key, num, den in (("ld sectors/req", "global_load_sectors", "global_load_requests"),
                          ("st sectors/req", "global_store_sectors", "global_store_requests"),
                          ("shared ld wavefronts/req", "shared_load_wavefronts", "shared_load_requests"),
                          ("shared st wavefronts/req", "shared_store_wavefronts", "shared_store_requests")):
        if totals.get(den):
            out[key] = totals[num] / totals[den]
    return out


def counts_table(names, traced: dict, hardware: dict, case: str = "{}", columns=PER_REQUEST) -> display.Table:
    """The tracer's counts per request of each launch ``traced[name]`` (totals) beside the H200's for ``names``.

    ``hardware`` is Nsight Compute's counts per case (:func:`course.measure.measurements.hardware_counts`) and
    ``case`` the case's name for a launch's name (``"transpose_{}"``); a case not measured says so.  Defined for
    chapter 05.
    """
    from course.measure import measurements

    rows = []
    for name in names:
        for who, totals in (("tracer (yours)", traced[name]), ("H200", hardware.get(case.format(name)))):
            if totals is None:
                rows.append([name, who, measurements.NOT_MEASURED])
                continue
            per = per_request(totals)
            rows.append([name, who] + [display.fmt(per.get(c), ".2f") for c in columns])
    return display.Table(["version", "source"] + list(columns), rows)


@dataclass
class Launch:
    """One checked launch: ``kernel[griddim, blockdim](*make_args(arrays))`` must leave ``expected`` in
    ``arrays[out]``.

    ``arrays`` are NumPy arrays (copied to the device on a GPU); ``make_args`` turns them into the
    kernel's arguments (default: as they are; a transpose's 8-byte version adds views of them).
    ``bytes_moved`` gives GB/s when timed, ``flops`` TFLOP/s; ``exact=False`` compares within ``rtol``
    (float sums); ``accumulate=True`` says the kernel adds into ``arrays[out]``, which is zeroed
    before each run instead of poisoned.  ``expected`` may be a function of no arguments that computes it:
    it is called once, when a result is first compared (a launch that is only predicted never needs it, and
    NumPy's answer at a chapter's size can take seconds).
    """

    griddim: Any
    blockdim: Any
    arrays: Sequence
    out: int
    expected: Any  # an array, or a function of no arguments returning it
    make_args: Callable = tuple
    bytes_moved: Optional[float] = None
    flops: Optional[float] = None
    exact: bool = True
    rtol: float = 1e-4
    accumulate: bool = False

    def want(self) -> np.ndarray:
        """The expected result (computed now, once, when ``expected`` is a function)."""
        if callable(self.expected):
            self.expected = self.expected()
        return self.expected


def _close(got, launch: Launch) -> np.ndarray:
    """Which elements of ``got`` are within ``rtol`` of the expected result (of its largest value, for the atol)."""
    want = launch.want()
    scale = float(np.abs(want).max()) if np.size(want) else 1.0
    return np.isclose(got, want, rtol=launch.rtol, atol=launch.rtol * (scale or 1.0))


def _matches(got, launch: Launch) -> bool:
    if launch.exact:
        return np.array_equal(got, launch.want())
    return bool(_close(got, launch).all())


def _gpu_row(name, kernel, launch: Launch):
    """Check one launch on the GPU against NumPy, then time the kernel alone: (median ms, rate text)."""
    from numba import cuda

    from course.measure import bench

    dev = [cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in launch.arrays]
    out = dev[launch.out]
    args = launch.make_args(dev)

    def launch_once():
        kernel[launch.griddim, launch.blockdim](*args)

    if launch.exact and not launch.accumulate:
        bench.verify(launch_once, out, launch.want(), what=name)  # poisons, runs, compares every bit
    else:
        # an accumulator starts at zero; float results are compared within rtol of the largest value
        start = 0 if launch.accumulate else bench.poison_value(np.dtype(out.dtype))
        bench.fill(out, start)
        launch_once()
        cuda.synchronize()
        got = out.copy_to_host()
        if not _matches(got, launch):
            bad = int(np.count_nonzero(~_close(got, launch)))
            raise bench.BenchError(f"{name}: {bad} of {got.size} elements differ from the NumPy reference. "
                                   "Fix the kernel before timing it.")
    # the kernel alone: launches queued behind a sleeping kernel, so numba's ~20-50 µs of host time per launch
    # is not inside (an accumulator keeps adding: the work per launch is the same); the host's time apart
    ms = statistics.median(bench.time_queued(launch_once, reps=10))
    host = bench.host_ms(launch_once, calls=10)
    rate = None
    if launch.bytes_moved:
        rate = f"{launch.bytes_moved / ms / 1e6:.0f} GB/s"
    elif launch.flops:
        rate = f"{launch.flops / ms / 1e9:.2f} TFLOP/s"
    return ms, rate, host


def predicted(kernel, launch: Launch) -> Optional[object]:
    """:func:`course.explain` of one launch (on copies of its arrays), or None when it cannot say (the reason is
    printed): the time the H200 would take and the ceiling that binds."""
    from course.measure import explain

    try:  # explain traces copies of the arrays it is given: the launch's own stay as they are
        return explain.explain(kernel, launch.griddim, launch.blockdim, *launch.make_args(list(launch.arrays)),
                               measure=False, budget_s=PREDICT_BUDGET_S)
    except Exception as e:  # a kernel the engine refuses says so where it is traced; here only why no prediction
        print(f"no prediction for this kernel: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        return None


PREDICT_BUDGET_S = 1.5  # tracing time per kernel in a "your kernels" table (the compiler runs beside it)
PREDICT_MAX_ELEMENTS = 1 << 25  # a CPU predicts at the chapter's size up to this many elements, else at a smaller one


def predict_size(size):
    """The size a CPU predicts at: ``size`` itself, or halved (each dimension) until it has at most
    :data:`PREDICT_MAX_ELEMENTS` elements, so that the arrays fit a laptop's memory."""
    if isinstance(size, (tuple, list)):
        dims = list(size)
        while int(np.prod(dims)) > PREDICT_MAX_ELEMENTS:
            dims = [max(1, d // 2) for d in dims]
        return type(size)(dims)
    n = int(size)
    while n > PREDICT_MAX_ELEMENTS:
        n //= 2
    return n


def _pred_text(e) -> str:
    if e is None:
        return "—"
    return f"{e.ms * 1e3:.1f} µs, {e.limiter}"


def _recorded(records, variant):
    for r in records or ():
        if r.get("variant") == variant:
            rate = (f"{r['gbps']:.0f} GB/s" if r.get("gbps") else
                    f"{r['tflops']:.2f} TFLOP/s" if r.get("tflops") else None)
            return f"{r['ms']:.3f} ms" + (f", {rate}" if rate else "")
    return None


def yours_vs_recorded(kernels: dict, setup: Callable, *, size, traced_size, records=(),
                      recorded_names: Optional[dict] = None, title: str = "",
                      counts: Optional[Callable] = None) -> None:
    """Run the notebook's ``kernels`` ({label: kernel}) and show them beside the recorded H200 run.

    ``setup(label, kernel, size, rng) -> Launch`` builds one checked launch.  On a GPU every kernel is checked
    on ``size`` and then timed there ("yours, now"); on a CPU backend each is traced on ``traced_size``
    (checked too) and the row shows the tracer's counts per request: CPU time says nothing about a GPU.
    ``records`` is the recorded run (``course.measure.measurements``) and ``recorded_names`` maps a label to its
    variant there (default: the same name).  ``counts(report) -> {column: value}`` picks what the CPU
    rows show (default: sectors and wavefronts per request, :func:`per_request`).  The table is displayed, not returned (a
    verdict shows once).
    """
    from course.measure import measurements

    rng = np.random.default_rng()
    names = recorded_names or {}
    rows = []
    if course.on_gpu():
        from numba import cuda

        here = cuda.get_current_device().name
        here = here.decode() if isinstance(here, bytes) else here
        for label, kernel in kernels.items():
            launch = setup(label, kernel, size, rng)
            ms, rate, host = _gpu_row(label, kernel, launch)
            e = predicted(kernel, launch)
            rows.append([label, f"{ms:.3f} ms" + (f", {rate}" if rate else ""), f"{host * 1e3:.0f} µs",
                         _pred_text(e), _recorded(records, names.get(label, label)) or measurements.NOT_MEASURED])
        columns = ["kernel", f"yours, kernel alone ({here}, {_size(size)})", "host time per launch",
                   "predicted (H200)", f"recorded ({_size(size)})"]
        from course.measure import explain

        note = ("checked against NumPy, then timed: launches queued behind a sleeping kernel, so the kernel alone "
                "(median of 10); the host's time to issue one launch (numba's launch overhead) apart. Predicted by "
                f"course.explain ({explain.stated_error()}). Recorded: " + (
                    measurements.provenance(records) if records else measurements.NOT_MEASURED))
    else:
        from course.trace import trace

        found = []
        for label, kernel in kernels.items():
            launch = setup(label, kernel, traced_size, rng)
            arrays = [np.array(a) if isinstance(a, np.ndarray) else a for a in launch.arrays]
            if launch.accumulate:
                arrays[launch.out][...] = 0
            # totals need no per-line bookkeeping; a custom ``counts`` (divergence, say) may
            report = trace(kernel, launch.griddim, launch.blockdim, *launch.make_args(arrays),
                           **({} if counts else {"lines": False, "detail_blocks": []}))
            found.append((label, _matches(arrays[launch.out], launch),
                          counts(report) if counts else per_request(report.totals())))
        keys = list(PER_REQUEST) if counts is None else list(dict.fromkeys(k for *_, per in found for k in per))
        at = predict_size(size)
        preds = {label: (predicted(kernel, setup(label, kernel, at, rng)) if ok else None)
                 for (label, ok, _), kernel in zip(found, kernels.values())}
        for label, ok, per in found:
            rows.append([label, "yes" if ok else "NO"] + [display.fmt(per.get(k), ".2f") for k in keys]
                        + [_pred_text(preds[label]),
                           _recorded(records, names.get(label, label)) or measurements.NOT_MEASURED])
        columns = ["kernel", "correct"] + keys + [f"predicted H200 ({_size(at)})", f"recorded H200 ({_size(size)})"]
        from course.measure import explain

        note = ("No GPU here: the tracer's counts of your kernels; the H200 time course.explain predicts from them "
                f"(a prediction, not a measurement: {explain.stated_error()}); and the recorded H200 run (CPU time "
                "says nothing about a GPU). Recorded: " + (measurements.provenance(records) if records
                                                           else measurements.NOT_MEASURED))
        title = title or f"Yours, now: the tracer's counts on {_size(traced_size)}"
    table = display.Table(columns, rows, title=title or None, note=note)
    display.show(table)


def _size(size) -> str:
    if isinstance(size, (tuple, list)):
        return "×".join(str(s) for s in size)
    return f"n={size:,}"


# --- lab paths: two hours of a classroom, chapter sections and exercises -------------------------------------


@dataclass(frozen=True)
class Step:
    """One stop of a lab path: a chapter's sections (as its headings number them), minutes, and what to do."""

    chapter: int
    sections: str
    minutes: int
    doing: str


@dataclass(frozen=True)
class LabPath:
    """A two-hour lab for a classroom: the sections to work through, then graded exercises (``course.exercises``)."""

    title: str
    audience: str
    steps: tuple
    exercises: tuple
    exercise_minutes: int

    @property
    def minutes(self) -> int:
        return sum(s.minutes for s in self.steps) + self.exercise_minutes


LAB_PATHS = (
    LabPath("A · First kernels and coalescing", "no CUDA yet",
            (Step(1, "§2–4, §6", 25, "vector add, 1-D/2-D indices, warps; the two predict tasks"),
             Step(2, "§1, §3–5, Predict", 20, "warps and divergence; the two predict tasks"),
             Step(3, "§4, Predict", 30, "sectors per request, strides, AoS vs SoA, x ↔ col; the two predict tasks")),
            ("01.vector_add", "01.matrix_add", "02.even_odd_paths", "03.column_sums"), 45),
    LabPath("B · Shared memory, bank conflicts and the transpose", "chapter 01–03 done (or path A)",
            (Step(4, "§2–7, Predict", 35, "banks, the gcd rule, padding and the swizzle; the bank explorer; the predict tasks"),
             Step(5, "§1–4", 35, "the transpose from naive to swizzled, counted by the tracer; the predict tasks")),
            ("04.row_sums", "04.stencil_1d", "05.transpose_padded"), 50),
    LabPath("C · Reductions, occupancy and latency", "chapter 01–04 done",
            (Step(6, "§1, §4 (Your kernel)", 25, "four budgets per SM, Little's law; the grid-stride sum and its predict tasks"),
             Step(7, "§3–9, Predict", 40, "ten reduction versions: atomics, trees, shuffles, grid-stride; the predict tasks")),
            ("06.sum_grid_stride", "07.tree_sum", "07.block_sums_shuffle"), 55),
    LabPath("D · Matmul, transfers and measuring", "chapter 01–07 done",
            (Step(9, "§2–5, Predict", 35, "naive → tiled → register tiles; the predict tasks"),
             Step(8, "§2, §4", 15, "pinned memory, the streams pipeline"),
             Step(10, "§1, §3, §5, Predict", 25, "events, floors, the profile and the sanitizer; the predict tasks")),
            ("09.matvec", "09.matmul_abt", "10.scale_rows_fixed"), 45),
)


def lab_paths() -> None:
    """Show the lab paths (chapter 00): one table per path, sections then exercises."""
    from course import chapters

    for path in LAB_PATHS:
        rows = [[f"{s.minutes} min", f"{chapters.chapter(s.chapter).file} {s.sections}", s.doing] for s in path.steps]
        notebooks = dict.fromkeys(f"exercises/{chapters.chapter(int(e[:2])).exercises_file}" for e in path.exercises)
        rows.append([f"{path.exercise_minutes} min", ", ".join(notebooks), ", ".join(path.exercises)])
        display.show(display.Table(["time", "where", "what"], rows,
                                   title=f"{path.title} ({path.minutes} min; for: {path.audience})"))
