"""A traced warp, lane by lane: pick a line, a block and a warp of a finished trace and see how it is served.

Chapter 04 (notebooks/04_shared_memory_banks.ipynb) introduces it.  It reads a finished
:class:`course.trace.Report` and never runs a kernel again: the lanes' indices, byte addresses,
banks and wavefronts (shared memory) or sectors (global memory) all come from the report's
``warp_detail``, and the drawing of the banks is :func:`course.show.widgets.banks.passes_svg`.

It also holds the chapter's *three-way evidence*: for each hardware-count case, the count derived
by hand, the tracer's count on the CPU, and the count Nsight Compute measured on the H200
(``data/tracer_validation.json``, written by ``scripts/gpu/validate_tracer.py``), or
"not measured yet" while that file does not exist.
"""

from __future__ import annotations

import html
import math
import pathlib
from dataclasses import dataclass, field
from typing import Optional

from course.measure import measurements
from course.measure.measurements import NOT_MEASURED  # the one text for a value no run recorded
from course.trace import analysis
from course.show.widgets.banks import passes_svg

VALIDATION = measurements.VALIDATION


# --- pure functions over a finished report --------------------------------------------------------------


def warps_per_block(report) -> int:
    """Warps in one block of the traced launch (a partial last warp counts)."""
    return -(-math.prod(report.block) // analysis.WARP_SIZE)


def line_choices(report, shared_first: bool = True) -> list[tuple[str, int]]:
    """(label, line) for every source line that touched memory; shared-memory lines first."""
    seen: dict[int, tuple] = {}
    for row in report.by_line():
        rank = 0 if row.space == "shared" else 1
        old = seen.get(row.line)
        if old is None or rank < old[0]:
            seen[row.line] = (rank, row.source.strip())
    order = sorted(seen, key=lambda ln: (seen[ln][0] if shared_first else 0, ln))
    return [(f"line {ln}: {seen[ln][1]}", ln) for ln in order]


def access_label(wa) -> str:
    """e.g. 'shared load of tile (4 bytes)'."""
    return f"{wa.space} {wa.op} of {wa.array} ({wa.size} bytes)"


def describe(wa) -> str:
    """One line: which warp, which access, and what it costs against the minimum."""
    where = f"block {tuple(wa.block)}, warp {wa.warp}, line {wa.line} (time {wa.occurrence} there)"
    if wa.space == "shared":
        if wa.ideal and wa.wavefronts > wa.ideal:
            ratio = wa.wavefronts / wa.ideal
            verdict = f"{ratio:g}-way bank conflict" if ratio == int(ratio) else f"{ratio:.2g}× the minimum"
        else:
            verdict = "no bank conflict"
        cost = f"{wa.wavefronts} wavefront{'s' if wa.wavefronts != 1 else ''} (at best {wa.ideal}) → {verdict}"
    else:
        cost = f"{wa.sectors} sector{'s' if wa.sectors != 1 else ''} of 32 bytes (at best {wa.ideal})"
    return f"{where}: {access_label(wa)}, {wa.active} active lanes: {cost}"


def lanes_table_html(wa) -> str:
    """Each lane's thread, index, byte offset and bank/pass (shared) or sector (global), as an HTML table."""
    shared = wa.space == "shared"
    head = ["lane", "threadIdx", "index", "byte offset"] + (["bank", "pass"] if shared else ["sector"])
    rows = []
    for lane, la in enumerate(wa.lanes):
        if la is None:
            cells = [str(lane), "—", "inactive", "", ""] + ([""] if shared else [])
        else:
            thread = "(" + ", ".join(str(v) for v in la.thread[: 2 if la.thread[2] == 0 else 3]) + ")"
            index = "[" + "][".join(str(i) for i in la.index) + "]"
            cells = [str(lane), thread, index, str(la.offset)]
            cells += [str(la.bank), str(la.wavefront)] if shared else [str(la.sector)]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return ('<table class="trace-lanes" style="font-family:monospace;font-size:11px">'
            "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def passes_of(wa) -> list:
    """The access as :func:`course.trace.analysis.shared_passes` answers: per lane LanePass(bank, wavefront) or None."""
    return [None if la is None else analysis.LanePass(la.bank, la.wavefront) for la in wa.lanes]


def access_svg(wa) -> str:
    """Banks × passes for a shared access; for a global one, lanes per 32-byte sector (no banks there)."""
    if wa.space == "shared":
        return passes_svg(passes_of(wa), wa.size, [None if la is None else la.addr for la in wa.lanes])
    by_sector: dict[int, list[int]] = {}
    for la in wa.lanes:
        if la is not None:
            by_sector.setdefault(la.sector, []).append(la.lane)
    items = "".join(f"<li>sector {s}: lanes {html.escape(_span(lanes))}</li>" for s, lanes in sorted(by_sector.items()))
    return f'<ul class="trace-sectors" data-sectors="{len(by_sector)}">{items}</ul>'


def _span(lanes: list[int]) -> str:
    if len(lanes) > 1 and lanes == list(range(lanes[0], lanes[-1] + 1)):
        return f"{lanes[0]}–{lanes[-1]}"
    return ", ".join(map(str, lanes))


# --- the widget -----------------------------------------------------------------------------------------------


@dataclass
class TraceView:
    """Dropdowns over a finished trace report: line, block, warp, occurrence, and which access on the line."""

    report: object
    line: Optional[int] = None
    block: Optional[tuple] = None
    warp: int = 0
    occurrence: int = 0
    accesses: list = field(default_factory=list, init=False)
    current: object = field(default=None, init=False)
    error: str = field(default="", init=False)

    def __post_init__(self):
        import ipywidgets as w

        r = self.report
        if not r.detail_blocks:
            raise ValueError("this report kept no block in detail; trace again with detail_blocks=[0]")
        lines = line_choices(r)
        if not lines:
            raise ValueError("the traced kernel made no global or shared memory access")
        style = {"description_width": "initial"}
        self.w_line = w.Dropdown(options=lines, value=self.line if self.line is not None else lines[0][1],
                                 description="line", style=style, layout=w.Layout(width="520px"))
        blocks = [(str(tuple(b)), tuple(b)) for b in r.detail_blocks]
        self.w_block = w.Dropdown(options=blocks, value=tuple(self.block) if self.block is not None else blocks[0][1],
                                  description="block", style=style, layout=w.Layout(width="200px"))
        self.w_warp = w.BoundedIntText(self.warp, min=0, max=warps_per_block(r) - 1, description="warp",
                                       style=style, layout=w.Layout(width="140px"))
        self.w_occ = w.BoundedIntText(self.occurrence, min=0, max=10**6, description="time on the line",
                                      style=style, layout=w.Layout(width="170px"))
        self.w_access = w.Dropdown(options=[], description="access", style=style, layout=w.Layout(width="360px"))
        self.w_summary = w.HTML()
        self.w_summary.add_class("trace-summary")
        self.w_drawing = w.HTML()
        self.w_table = w.HTML()
        for c in (self.w_line, self.w_block, self.w_warp, self.w_occ):
            c.observe(self._reselect, names="value")
        self.w_access.observe(self._redraw, names="value")
        self.widget = w.VBox([w.HBox([self.w_line, self.w_block]), w.HBox([self.w_warp, self.w_occ, self.w_access]),
                              self.w_summary, self.w_drawing,
                              w.Accordion(children=[self.w_table], titles=("every lane",))])
        self.widget.add_class("trace-view")
        self._reselect()

    def _reselect(self, _change=None):
        """Look the chosen warp up in the report (no kernel runs) and list the accesses on that line."""
        try:
            self.accesses = self.report.warp_detail(self.w_line.value, self.w_block.value, self.w_warp.value,
                                                    self.w_occ.value)
        except KeyError as e:
            self.accesses = []
            self.error = str(e.args[0]) if e.args else str(e)
        else:
            self.error = "" if self.accesses else (
                f"warp {self.w_warp.value} of block {self.w_block.value} made no access on line {self.w_line.value} "
                f"at time {self.w_occ.value} there (a loop runs a line several times, counted from 0; "
                "try time 0, or another warp)")
        # shared accesses first: they are what this chapter is about
        self.accesses.sort(key=lambda wa: (wa.space != "shared", wa.op))
        options = [(access_label(wa), i) for i, wa in enumerate(self.accesses)]
        self.w_access.unobserve(self._redraw, names="value")
        self.w_access.options = options
        self.w_access.value = 0 if options else None
        self.w_access.observe(self._redraw, names="value")
        self._redraw()

    def _redraw(self, _change=None):
        i = self.w_access.value
        if i is None or not self.accesses:
            self.current = None
            self.w_summary.value = f'<span class="trace-error" style="color:#b00">{html.escape(self.error)}</span>'
            self.w_drawing.value = ""
            self.w_table.value = ""
            return
        wa = self.accesses[i]
        self.current = wa
        data = f'data-wavefronts="{wa.wavefronts}" data-sectors="{wa.sectors}" data-ideal="{wa.ideal}"'
        self.w_summary.value = f'<span class="trace-count" {data}>{html.escape(describe(wa))}</span>'
        self.w_drawing.value = access_svg(wa)
        self.w_table.value = lanes_table_html(wa)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def trace_view(report, **choice) -> TraceView:
    """A view of one finished trace report (choose ``line``, ``block``, ``warp``, ``occurrence`` to start)."""
    return TraceView(report, **choice)


# --- three-way evidence: arithmetic, tracer, H200 -------------------------------------------------------------


def hardware_counts(path: pathlib.Path = VALIDATION) -> dict:
    """Nsight Compute's counts per case name from the H200 validation run, or {} when not measured yet.

    Read by :func:`course.measure.measurements.hardware_counts`, the one reader of the validation run:
    ``{"provenance": ..., "cases": [{"name": ..., "ncu": {...}}]}``, counts keyed as
    :data:`course.trace.TOTAL_KEYS`.
    """
    return measurements.hardware_counts(path)


def provenance(path: pathlib.Path = VALIDATION) -> str:
    """Where the hardware counts come from (device, date, versions), or 'not measured yet'."""
    cases, meta = measurements.validation_run(path)
    if not cases and not meta:
        return NOT_MEASURED
    keys = ("device", "driver", "numba_cuda", "ncu", "date", "run")
    return ", ".join(f"{k}: {meta[k]}" for k in keys if meta.get(k)) or str(pathlib.Path(path).name)


@dataclass(frozen=True)
class Evidence:
    """One count three ways: by hand, by the tracer on the CPU, by Nsight Compute on the H200 (or None)."""

    case: str
    metric: str
    arithmetic: Optional[int]
    tracer: int
    h200: Optional[int]

    @property
    def agree(self) -> Optional[bool]:
        """True when every available count is equal; None while the H200 has not measured it."""
        if self.h200 is None:
            return None
        return self.tracer == self.h200 and (self.arithmetic is None or self.arithmetic == self.h200)


def evidence(case, totals: dict, hardware: dict) -> list[Evidence]:
    """The shared-memory counts of ``case`` three ways (``totals`` from the tracer, ``hardware`` from the file)."""
    hw = hardware.get(case.name, {})
    metrics = [k for k in ("shared_load_requests", "shared_load_wavefronts", "shared_store_requests",
                           "shared_store_wavefronts") if k in totals]
    return [Evidence(case.name, m, (case.expect or {}).get(m), int(totals[m]), hw.get(m)) for m in metrics]


def evidence_table(rows: list[Evidence]) -> str:
    """A plain-text table of :class:`Evidence` rows; H200 cells say 'not measured yet' until measured."""
    out = [f"{'case':44} {'count':24} {'by hand':>8} {'tracer':>8} {'H200':>16}  agree"]
    for e in rows:
        h200 = NOT_MEASURED if e.h200 is None else str(e.h200)
        agree = "—" if e.agree is None else ("yes" if e.agree else "NO")
        hand = "" if e.arithmetic is None else str(e.arithmetic)
        out.append(f"{e.case:44} {e.metric:24} {hand:>8} {e.tracer:>8} {h200:>16}  {agree}")
    return "\n".join(out)
