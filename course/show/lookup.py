"""Recorded runs as a chapter looks them up: one run of a benchmark, its records by variant and size, ratios
within it, and the Nsight Compute metrics a record carries.

Every chapter looked records up with a helper of its own (``rec``, ``ratio``, ``m``, ``stalls``,
``kernel_table``); they live here once.  The records themselves are read only through
:mod:`course.measure.measurements` (the one reader), and a :class:`Run` holds one run of one benchmark, so
that every ratio it gives compares a run with itself — the course's rule.

Defined for chapter 07 (notebooks/07_reduction.ipynb); used by chapters 06, 07, 08 and 10.
"""

from __future__ import annotations

import numbers
from typing import Iterable, Optional

from course.measure import measurements

#: Data up to this size stays in the H200's 50 MB L2 while a kernel streams it (chapter 07's 2^20 floats, 4 MB);
#: larger data streams from HBM.  A third of the L2: the copy ceiling of the L2 regime moves 8 MiB in and out.
L2_RESIDENT_BYTES = 16 * 2**20


def ratio(a, b) -> Optional[float]:
    """``a / b`` when both are numbers and ``b`` is not 0, else None (a figure that was not measured)."""
    a, b = measurements.number(a), measurements.number(b)
    return a / b if a is not None and b else None


def regime(nbytes: int) -> str:
    """Where ``nbytes`` of data live while a kernel streams them: ``"l2"`` (they fit, see
    :data:`L2_RESIDENT_BYTES`) or ``"hbm"``, the regime :func:`course.measure.measurements.copy_ceiling` takes."""
    return "l2" if nbytes <= L2_RESIDENT_BYTES else "hbm"


class Run:
    """One recorded run of one benchmark, looked up by variant (and size): its ratios compare it with itself.

    ``Run("reduction")`` is the benchmark's most recent run (:func:`course.measure.measurements.latest`);
    ``Run(records=...)`` the records given (tests, or a run picked another way).  A run that was never
    measured is empty: every look-up answers None, and the chapter prints "not measured yet".
    """

    def __init__(self, benchmark: Optional[str] = None, *, records: Optional[Iterable[dict]] = None):
        if (benchmark is None) == (records is None):
            raise TypeError("Run(benchmark) reads the benchmark's latest run; Run(records=...) takes the records "
                            "given: give one of the two")
        self.records = measurements.latest(benchmark) if records is None else list(records)

    def __bool__(self) -> bool:
        return bool(self.records)

    def provenance(self) -> str:
        """Where, when and with what this run was measured (or that it was not)."""
        return measurements.provenance(self.records)

    def get(self, variant: str, size=None) -> Optional[dict]:
        """The record of ``variant`` (at ``size``: an int for 1-D, or a tuple), or None; without a size, the
        last record of the variant (the benchmarks record sizes in increasing order: the largest)."""
        where = {} if size is None else {"size": (size,) if isinstance(size, numbers.Integral) else tuple(size)}
        rows = measurements.select(self.records, variant=variant, **where)
        return rows[-1] if rows else None

    def value(self, variant: str, field: str = "ms", size=None):
        """``field`` of :meth:`get`'s record, or None."""
        rec = self.get(variant, size)
        return None if rec is None else rec.get(field)

    def ratio(self, a: str, b: str, field: str = "ms", size=None) -> Optional[float]:
        """``field`` of variant ``a`` over ``field`` of variant ``b`` (a slow/fast ratio of times), or None."""
        return ratio(self.value(a, field, size), self.value(b, field, size))

    def metric(self, variant: str, key: str):
        """Nsight Compute's ``key`` in the record of ``variant`` (its ``metrics``), or None."""
        rec = self.get(variant)
        return None if rec is None else (rec.get("metrics") or {}).get(key)

    def stalls(self, variant: str, top: int = 4) -> list:
        """The ``top`` largest warp stall reasons of ``variant``'s profile: ``[(reason, cycles per issued
        instruction)]``, largest first (Nsight Compute's ``smsp__average_warp_latency_issue_stalled_<reason>...``)."""
        rec = self.get(variant)
        if not rec:
            return []
        st = {name.split("stalled_")[1].split("_per_issue")[0]: v for name, v in (rec.get("metrics") or {}).items()
              if "issue_stalled" in name and measurements.number(v) is not None}
        return sorted(st.items(), key=lambda kv: -kv[1])[:top]


def occupancy_rows(versions: dict) -> list:
    """``[(name, registers, shared bytes, threads per block, Occupancy or None, source)]`` for registry ``versions``.

    The registers and shared memory are the compiler's (:func:`course.measure.occupancy.resources`: live on a GPU,
    else its recorded report); a version whose report is missing has None and says "not measured yet".
    Defined for chapter 06.
    """
    import course
    from course.measure import occupancy

    rows = []
    for name, v in versions.items():
        if course.on_gpu():
            import numpy as np

            v.run(np.ones(4096, np.float32))  # compiles the kernel: the compiler's resource report exists from then on
        try:
            r = occupancy.resources(v.kernel)
        except LookupError:
            rows.append((name, None, None, v.threads, None, measurements.NOT_MEASURED))
            continue
        o = occupancy.occupancy(r.regs_per_thread, v.threads, r.shared_per_block)
        rows.append((name, r.regs_per_thread, r.shared_per_block, v.threads, o, r.source))
    return rows
