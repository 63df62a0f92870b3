"""Tables, code and plots for the chapters: the show layer a notebook calls, as d2l keeps ``d2l.plot``.

A :class:`Table` renders as an HTML table in JupyterLab and as aligned text elsewhere (a terminal,
nbval), so wide rows never wrap inside a cell.  :func:`source` shows a library function's code with
where it lives.  ``bandwidth_table``/``bandwidth_plot`` show recorded bandwidths of one run beside
the library references (chapter 05, 07).

Defined for chapter 05 (notebooks/05_transpose.ipynb); used by every chapter.
"""

from __future__ import annotations

import html
import inspect
import re
import pathlib
from typing import Iterable, Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[2]
DASH = "—"
_NUMBER = re.compile(r"^[-+]?[\d.,]+(e[-+]?\d+)?\s*[%×x]?$")


def fmt(value, spec: str = "") -> str:
    """A cell's text: ``—`` for None, else ``format(value, spec)`` (spec ignored for non-numbers)."""
    if value is None:
        return DASH
    if isinstance(value, (int, float)) and not isinstance(value, bool) and spec:
        return format(value, spec)
    if isinstance(value, float):  # no spec: four significant digits, never a float's full repr
        return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
    return str(value)


def _missing(cell: str) -> bool:
    return cell == DASH or cell.startswith("not measured")


class Table:
    """Rows under a header: HTML in a notebook, aligned text in a terminal (``print`` or ``str``)."""

    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence], *, title: Optional[str] = None,
                 note: Optional[str] = None):
        self.columns = [str(c) for c in columns]
        self.rows = [[fmt(x) for x in row] for row in rows]
        self.title, self.note = title, note

    def __str__(self) -> str:
        widths = [max([len(c)] + [len(r[i]) for r in self.rows if i < len(r)]) for i, c in enumerate(self.columns)]

        # a dash or "not measured yet" stands for a missing number: it does not make the column text
        numeric = [all(_NUMBER.match(r[i]) for r in self.rows if i < len(r) and not _missing(r[i]))
                   for i in range(len(widths))]

        def line(cells):
            cells = list(cells) + [""] * (len(widths) - len(cells))
            return "  ".join(c.rjust(w) if num else c.ljust(w)
                             for c, w, num in zip(cells, widths, numeric)).rstrip()

        out = [self.title] if self.title else []
        out += [line(self.columns)] + [line(r) for r in self.rows]
        if self.note:
            out.append(self.note)
        return "\n".join(out)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        cap = f"<caption style='text-align:left'>{html.escape(self.title)}</caption>" if self.title else ""
        note = f"<p style='font-size:90%'>{html.escape(self.note)}</p>" if self.note else ""
        return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def show(obj) -> None:
    """Display ``obj`` (HTML in a notebook, text elsewhere) without it also becoming the cell's value."""
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(obj)
            return
    except ImportError:
        pass
    print(obj)


class Source:
    """A function's code with the file it lives in (for library helpers; kernels get editable cells)."""

    def __init__(self, fn):
        fn = getattr(fn, "py_func", fn)
        self.code = inspect.getsource(fn).rstrip()
        path = pathlib.Path(inspect.getsourcefile(fn)).resolve()
        try:
            self.where = str(path.relative_to(ROOT))
        except ValueError:
            self.where = path.name
        self.name = fn.__name__

    def __str__(self) -> str:
        return f"# {self.name}, from {self.where}\n{self.code}"

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        return f"`{self.name}`, from `{self.where}`:\n\n```python\n{self.code}\n```"


def source(fn) -> None:
    """Show a library function's code and where it lives."""
    show(Source(fn))


# --- recorded bandwidths (chapter 05, also 07) ---------------------------------------------------------

LIBS = ("memcpy", "cupy", "torch")


def copy_note(records, regime: str = "hbm") -> str:
    """Which copy "of the copy" divides by, and that it is another run than ``records``' when it is."""
    from course.measure import measurements

    ceiling = measurements.copy_ceiling(regime)
    if ceiling is None:
        return f"the {regime} copy: {measurements.NOT_MEASURED}"
    ours = {r.get("run") for r in records}
    where = "HBM" if regime == "hbm" else "L2-resident"
    text = (f"'of copy': the course's {where} copy ceiling, {ceiling['variant']} = {ceiling['gbps']:.0f} GB/s "
            f"(bytes read + written; data/measurements/kernel_profiles.json, run {ceiling.get('run')})")
    if ours and ours != {ceiling.get("run")}:
        text += f" — another run than these rows' ({', '.join(sorted(map(str, ours)))})"
    return text


def bandwidth_table(names, records, *, regime: str = "hbm", versus: str = "cupy") -> Table:
    """One row per variant of one recorded run: ms, GB/s, fraction of the course's copy ceiling of ``regime``
    (:func:`course.measure.measurements.copy_ceiling`), multiple of ``versus``."""
    from course.measure import measurements

    by = measurements.by_variant(records)
    ceiling = measurements.copy_ceiling(regime)
    ref = ceiling.get("gbps") if ceiling else None
    vs = by.get(versus, {}).get("gbps")
    rows = []
    for name in names:
        r = by.get(name)
        if not r or not r.get("gbps"):
            rows.append([name, measurements.NOT_MEASURED])
            continue
        rounds = ", ".join(f"{x:.3f}" for x in r.get("ms_rounds", []))
        rows.append([name, f"{r['ms']:.3f}", f"{r['gbps']:.0f}", fmt(r["gbps"] / ref if ref else None, ".2f"),
                     fmt(r["gbps"] / vs if vs else None, ".2f"), rounds])
    note = f"{measurements.provenance(records)}. {copy_note(records, regime)}" if records else None
    return Table(["variant", "ms", "GB/s", "of copy", f"x {versus}", "rounds (ms)"], rows, note=note)


def bandwidth_plot(names, records, title: str, *, libs=LIBS) -> None:
    """Bars of recorded GB/s per variant, library references as dashed lines (nothing without a run)."""
    from course.measure import measurements

    by = measurements.by_variant(records)
    if not any(by.get(n, {}).get("gbps") for n in names):
        print(f"{title}: {measurements.NOT_MEASURED} (no recorded H200 run)")
        return
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.bar(list(names), [by.get(n, {}).get("gbps") or 0 for n in names], color="#4c72b0")
    for lib, colour in zip(libs, ("black", "#dd8452", "#55a868")):
        if by.get(lib, {}).get("gbps"):
            ax.axhline(by[lib]["gbps"], color=colour, ls="--", lw=1, label=f"{lib} {by[lib]['gbps']:.0f} GB/s")
    ax.set_ylabel("GB/s (read + write)")
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=30)
    if any(by.get(lib, {}).get("gbps") for lib in libs):
        ax.legend(loc="upper left", fontsize=8)
    plt.tight_layout()
    plt.show()


# --- what the GPU run recorded about each kernel: its SASS and its Nsight Compute profile (chapter 05) ------

MEMORY_OPS = ("LDG", "STG", "LDS", "STS", "LDL", "STL")


def sass_table(names, records) -> Table:
    """Registers, SASS instructions and memory instructions of each variant, from the SASS the GPU run dumped."""
    from course.measure import measurements

    by = measurements.by_variant(records)
    rows = []
    for name in names:
        sass = by.get(name, {}).get("sass")
        if not sass or "instructions" not in sass:
            rows.append([name, (sass or {}).get("registers"), measurements.NOT_MEASURED, ""])
            continue
        mem = ", ".join(f"{k} {v}" for k, v in sorted(sass["ops"].items()) if k[:3] in MEMORY_OPS)
        rows.append([name, sass["registers"], sass["instructions"], mem])
    return Table(["version", "regs", "SASS instr", "memory instructions"], rows)


NCU_COLUMNS = (("DRAM %", "DRAM Throughput"), ("instr (M)", "sm__inst_executed.sum"),
               ("cycles/issue", "Warp Cycles Per Issued Instruction"), ("no eligible %", "No Eligible"),
               ("occupancy %", "Achieved Occupancy"), ("regs", "Registers Per Thread"))


def ncu_value(profile: dict, name: str):
    """A metric of a recorded Nsight Compute profile by name (its key may carry a unit: ``name [unit]``)."""
    for key, value in profile.items():
        if key == name or key.startswith(name + " ["):
            return value
    return None


def ncu_table(names, records, columns=NCU_COLUMNS) -> Table:
    """One row per variant: the recorded Nsight Compute metrics of ``columns`` ((label, metric) pairs)."""
    from course.measure import measurements

    by = measurements.by_variant(records)
    rows = []
    for name in names:
        prof = by.get(name, {}).get("ncu")
        if not prof:
            rows.append([name, measurements.NOT_MEASURED])
            continue
        cells = []
        for label, metric in columns:
            v = ncu_value(prof, metric)
            if isinstance(v, (int, float)) and label.startswith("instr"):
                v = v / 1e6
            cells.append(f"{v:.1f}" if isinstance(v, (int, float)) else (v or DASH))
        rows.append([name] + cells)
    return Table(["version"] + [label for label, _ in columns], rows)


def sweep_plot(records, *, xlabel: str = "GB/s (16384² int32); red: registry versions, purple: sweep"):
    """Bars of every recorded course and sweep variant, with the HBM copy ceiling, 0.8 × it and 3 × CuPy; returns the best."""
    from course.measure import measurements

    ours = sorted((r for r in records if r.get("category") in ("course", "sweep") and r.get("gbps")),
                  key=lambda r: r["gbps"])
    if not ours:
        print("sweep:", measurements.NOT_MEASURED)
        return None
    import matplotlib.pyplot as plt

    by = measurements.by_variant(records)
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(ours) + 1))
    ax.barh([r["variant"] for r in ours], [r["gbps"] for r in ours],
            color=["#c44e52" if r.get("category") == "course" else "#8172b2" for r in ours])
    ceiling = measurements.copy_ceiling("hbm")
    if ceiling:
        ax.axvline(ceiling["gbps"], color="black", ls="--", lw=1, label="HBM copy")
        ax.axvline(0.8 * ceiling["gbps"], color="grey", ls=":", lw=1, label="0.80 × the copy")
    if by.get("cupy", {}).get("gbps"):
        ax.axvline(3 * by["cupy"]["gbps"], color="#dd8452", ls=":", lw=1, label="3 × CuPy")
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8, loc="lower right")
    plt.tight_layout()
    plt.show()
    return ours[-1]


# --- recorded runs, looked up by the chapters (chapters 02-04) ----------------------------------------------


def recorder(records: Optional[dict] = None):
    """``recorded(benchmark, variant, field="ms")``: a field of the benchmark's most recent run, or None.

    ``records`` is :func:`course.measure.measurements.latest_records` (one run per benchmark; read when not
    given).  Defined for chapters 02 and 03.
    """
    from course.measure import measurements

    records = measurements.latest_records() if records is None else records

    def recorded(benchmark, variant, field="ms"):
        rec = records.get((benchmark, variant))
        return None if rec is None else rec.get(field)

    return recorded


def measured(value, unit: str = "ms", spec: str = ".3f") -> str:
    """``value`` with its unit, or "not measured yet" when no run has recorded it."""
    from course.measure import measurements

    return measurements.NOT_MEASURED if value is None else f"{value:{spec}} {unit}"


def per_request(counts: dict, case: str, kind: str = "global_load"):
    """Sectors (global) or wavefronts (shared) per request of ``kind`` in one case's recorded counts, or None."""
    hw = counts.get(case)
    unit = "sectors" if kind.startswith("global") else "wavefronts"
    if not hw or not hw.get(f"{kind}_requests"):
        return None
    return hw[f"{kind}_{unit}"] / hw[f"{kind}_requests"]


def shared_lines(report, *, ideal: bool = True) -> Table:
    """The shared-memory lines of a traced launch: wavefronts per request (and the ideal), with the source."""
    rows = [[r.line, r.op, "/".join(r.arrays), f"{r.per_request:.2f}"] + ([f"{r.ideal_per_request:.0f}"] if ideal else [])
            + [r.source] for r in report.by_line() if r.space == "shared"]
    return Table(["line", "op", "array", "wavefronts/req"] + (["ideal"] if ideal else []) + ["source"], rows)


def occupancy_table(rows) -> Table:
    """``course.measure.occupancy.Occupancy`` results as a table: block, registers, shared, blocks and warps per SM, limit."""
    return Table(["threads/block", "regs/thread", "shared B/block", "blocks/SM", "warps/SM", "occupancy", "limited by"],
                 [[o.threads_per_block, o.regs_per_thread, o.shared_per_block, o.blocks_per_sm,
                   f"{o.warps_per_sm}/{o.max_warps_per_sm}", f"{o.occupancy:.0%}", " and ".join(o.limited_by)]
                  for o in rows])


# --- the profile: what limits a kernel (every chapter that names a limiter) ------------------------------------

PROFILE_UNITS = (("DRAM %", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                 ("L2 %", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
                 ("L1 %", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),
                 ("SM %", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                 ("issue %", "smsp__issue_active.avg.pct_of_peak_sustained_active"))


def profile_table(cases, *, title: Optional[str] = None) -> Table:
    """The H200 profile of each case of ``data/measurements/kernel_profiles.json`` (or ``unseen_profiles.json``): time,
    each unit's % of peak, warp instructions and the busiest unit by the course's rule (``explain_check.measured_limiter``)."""
    from course.measure import measurements
    from course.measure.explain_check import measured_limiter, records_by_case

    by = records_by_case()  # the chapters' profile run, or the unseen cases' (unseen_profiles.json) for theirs
    rows = []
    for case in cases:
        r = by.get(case)
        n = (r or {}).get("ncu")
        if not n:
            rows.append([case, measurements.NOT_MEASURED])
            continue
        rows.append([case, f"{r['ms'] * 1e3:.1f}"] + [fmt(n.get(key), ".0f") for _, key in PROFILE_UNITS]
                    + [f"{n.get('sm__inst_executed.sum', 0) / 1e6:.1f}", measured_limiter(r, {})])
    cols = ["case", "µs"] + [c for c, _ in PROFILE_UNITS] + ["warp instr. (M)", "busiest"]
    recs = [by[c] for c in cases if c in by]
    note = ("Nsight Compute, % of peak; busiest: the largest of DRAM, L2, L1/shared, SM, or 'latency' when none "
            "reaches 60 % ('launch' under 4 µs). "
            # one line per run shown (the chapters' profile run, the unseen cases' run)
            + " ".join(measurements.provenance([r for r in recs if r.get("run") == run])
                       for run in dict.fromkeys(r.get("run") for r in recs))) if recs else None
    return Table(cols, rows, title=title, note=note)
