"""Recorded GPU measurements (``data/measurements/<benchmark>.json``), read for the notebooks.

Each file is a JSON list of records written by :class:`course.measure.bench.Bench` on a real GPU.  The
notebooks never time anything on a CPU backend: they show these records, labelled with where and
when they were measured, and say "not measured yet" when no record exists.

Defined for chapter 05 (notebooks/05_transpose.ipynb).
"""

from __future__ import annotations

import json
import pathlib
from typing import Iterable, Optional

DATA_DIR = pathlib.Path(__file__).resolve().parents[2] / "data" / "measurements"

NOT_MEASURED = "not measured yet"


class MeasurementError(ValueError):
    """A measurements file that cannot be read; the message names the file and what is wrong."""


def path(benchmark: str, data_dir=None) -> pathlib.Path:
    """Where the records of ``benchmark`` live."""
    return pathlib.Path(data_dir or DATA_DIR) / f"{benchmark}.json"


def load(benchmark: str, data_dir=None) -> list:
    """Every real GPU record of ``benchmark`` (an empty list when it was never measured).

    Dry-run records (``dry_run: true``, written when a benchmark script is tested on the CPU) and
    records of failures (``failed``: a version that did not pass its check) are left out: they are
    not measurements.
    """
    p = path(benchmark, data_dir)
    if not p.exists():
        return []
    try:
        records = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise MeasurementError(f"{p}: not valid JSON ({e}). Restore it from git or re-run the benchmark.") from e
    if not isinstance(records, list):
        raise MeasurementError(f"{p}: expected a JSON list of records, found {type(records).__name__}.")
    return [r for r in records if isinstance(r, dict) and not r.get("dry_run") and not r.get("failed")]


def runs(records: Iterable[dict]) -> list:
    """The run ids in ``records``, oldest first (by each run's latest date)."""
    last = {}
    for r in records:
        run = r.get("run")
        if run is not None:
            last[run] = max(last.get(run, ""), str(r.get("date", "")))
    return sorted(last, key=lambda k: (last[k], k))


def latest_run(records: Iterable[dict]) -> list:
    """The records of the most recent run only (so that every ratio compares one run with itself)."""
    records = list(records)
    ids = runs(records)
    if not ids:
        return []
    return [r for r in records if r.get("run") == ids[-1]]


def select(records: Iterable[dict], **where) -> list:
    """Records whose fields equal ``where`` (``size`` may be given as a tuple)."""
    out = []
    for r in records:
        ok = True
        for k, v in where.items():
            have = r.get(k)
            if k == "size" and have is not None:
                have, v = tuple(have), tuple(v)
            if have != v:
                ok = False
                break
        if ok:
            out.append(r)
    return out


def by_variant(records: Iterable[dict]) -> dict:
    """``{variant: record}`` (the last record of each variant wins)."""
    return {r["variant"]: r for r in records}


def value(records: Iterable[dict], variant: str, field: str = "gbps") -> Optional[float]:
    """``field`` of ``variant``'s record, or None when it was not measured."""
    rec = by_variant(records).get(variant)
    return None if rec is None else rec.get(field)


def provenance(records: Iterable[dict]) -> str:
    """One line saying where, when and with what the records were measured (or that they were not)."""
    records = list(records)
    if not records:
        return f"{NOT_MEASURED}: no recorded GPU run."
    r = records[0]
    parts = [
        f"measured on {r.get('device', '?')}",
        f"driver {r.get('driver', '?')}",
        f"numba-cuda {r.get('numba_cuda', '?')}",
    ]
    if r.get("cupy"):
        parts.append(f"CuPy {r['cupy']}")
    if r.get("torch"):
        parts.append(f"PyTorch {r['torch']}")
    date = str(r.get("date", "?"))[:16].replace("T", " ")
    parts.append(f"{date} UTC, run {r.get('run', '?')}")
    reps = sorted({x.get("reps") for x in records if x.get("reps")})
    if reps:
        parts.append(f"median of {'/'.join(map(str, reps))} CUDA-event timings each")
    return "; ".join(parts)


def describe(value_: Optional[float], unit: str = "GB/s", spec: str = ".0f") -> str:
    """A number with its unit, or "not measured yet"."""
    return NOT_MEASURED if value_ is None else f"{value_:{spec}} {unit}"


#: The course's two copy ceilings, one per regime, recorded in one run of ``kernel_profiles``
#: (``scripts/gpu/profile_kernels.py``): a 1 GiB device copy that streams from HBM, and an 8 MiB one whose
#: source and destination stay in the 50 MB L2.  Both count the bytes read plus the bytes written.
COPY_CEILINGS = {"hbm": "copy_hbm_1GiB", "l2": "copy_l2_8MiB"}


def copy_ceiling(regime: str, data_dir=None) -> Optional[dict]:
    """The recorded copy of ``regime`` (``"hbm"`` or ``"l2"``): its record (``gbps``, ``run``…), or None.

    Every "fraction of the copy" a chapter prints divides by this one record of the regime its kernel's data
    is in, so that fractions are comparable between chapters.  Defined for chapters 03–07.
    """
    if regime not in COPY_CEILINGS:
        raise ValueError(f"copy_ceiling({regime!r}): the regime is 'hbm' (data larger than the L2) or 'l2' "
                         f"(data that stays in the 50 MB L2)")
    recs = latest_run(select(load("kernel_profiles", data_dir), kind="ceiling"))
    return by_variant(recs).get(COPY_CEILINGS[regime])


def of_copy(gbps: Optional[float], regime: str, run: Optional[str] = None, data_dir=None) -> str:
    """``gbps`` as a fraction of :func:`copy_ceiling`'s copy, in words: "0.93 of the HBM copy (4247 GB/s)".

    ``run`` is the run that measured ``gbps``: when it is not the copy's run the text says so, since the
    course's rule is that a ratio compares records of one run.
    """
    ceiling = copy_ceiling(regime, data_dir)
    if gbps is None or ceiling is None or not ceiling.get("gbps"):
        return NOT_MEASURED
    where = "HBM" if regime == "hbm" else "L2-resident"
    text = f"{gbps / ceiling['gbps']:.2f} of the {where} copy ({ceiling['gbps']:.0f} GB/s"
    if run is not None and run != ceiling.get("run"):
        text += f", run {ceiling.get('run')}: another run than this figure's {run}"
    return text + ")"
