"""Recorded GPU measurements (``data/measurements/<benchmark>.json``), read for the notebooks.

Each file is a JSON list of records written by :class:`course.measure.bench.Bench` on a real GPU.  The
notebooks never time anything on a CPU backend: they show these records, labelled with where and
when they were measured, and say "not measured yet" when no record exists.

Defined for chapter 05 (notebooks/05_transpose.ipynb).
"""

from __future__ import annotations

import json
import numbers
import pathlib
from typing import Iterable, Optional

DATA_DIR = pathlib.Path(__file__).resolve().parents[2] / "data" / "measurements"

NOT_MEASURED = "not measured yet"


class MeasurementError(ValueError):
    """A measurements file that cannot be read; the message names the file and what is wrong."""


def number(x) -> Optional[float]:
    """``x`` as a float when it is a real number, else None: a bool (``True``, ``np.True_``), a text, None or a
    list is not a number (``True`` is not 1 measured, nor a prediction of 1).  The one rule for "is this a
    number?" that the ledger, the lab's predictions and the record look-ups share."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):  # numpy's integers and floats are Real, np.bool_ not
        return None
    return float(x)


def path(benchmark: str, data_dir=None) -> pathlib.Path:
    """Where the records of ``benchmark`` live."""
    return pathlib.Path(data_dir or DATA_DIR) / f"{benchmark}.json"


def read_json(p, *, made_by: str = "re-run the benchmark"):
    """The JSON value in recorded file ``p`` (under ``data/``), or None when the file does not exist.

    The one place a recorded file is parsed: a file that is not valid JSON raises :class:`MeasurementError`
    naming the file and what to do (``made_by``: what writes it), never a silent skip.
    """
    p = pathlib.Path(p)
    if not p.exists():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MeasurementError(f"{p}: not valid JSON ({e}). Restore it from git or {made_by}.") from e


def read(p: pathlib.Path) -> list:
    """The JSON list of records in file ``p`` as written, or [] when it does not exist.

    Read by :func:`read_json`: a file that is not a JSON list raises :class:`MeasurementError` naming the
    file and what to do, never a silent skip.
    """
    records = read_json(p)
    if records is None:
        return []
    if not isinstance(records, list):
        raise MeasurementError(f"{p}: expected a JSON list of records, found {type(records).__name__}. "
                               f"Restore it from git or re-run the benchmark.")
    return records


def measured_only(records: Iterable) -> list:
    """The records that are measurements: not dry runs (``dry_run: true``, a benchmark script tested on the
    CPU) and not failures (``failed``: a version that did not pass its check)."""
    return [r for r in records if isinstance(r, dict) and not r.get("dry_run") and not r.get("failed")]


def load(benchmark: str, data_dir=None) -> list:
    """Every real GPU record of ``benchmark``, every run (an empty list when it was never measured).

    Dry-run records and records of failures are left out (:func:`measured_only`); a file that cannot be
    read raises :class:`MeasurementError`.
    """
    return measured_only(read(path(benchmark, data_dir)))


def benchmarks(data_dir=None) -> list:
    """The benchmarks with a recorded file, by name."""
    d = pathlib.Path(data_dir or DATA_DIR)
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def load_all(data_dir=None) -> dict:
    """``{benchmark: load(benchmark)}`` for every recorded file: every run of each."""
    return {b: load(b, data_dir) for b in benchmarks(data_dir)}


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
    return of_run(records, ids[-1])


def of_run(records: Iterable[dict], run: str) -> list:
    """The records of run ``run``."""
    return [r for r in records if r.get("run") == run]


def latest(benchmark: str, data_dir=None) -> list:
    """The records of ``benchmark``'s most recent run: what a chapter compares within."""
    return latest_run(load(benchmark, data_dir))


def record(records: Iterable[dict], variant: str, **where) -> Optional[dict]:
    """The first record of ``variant`` among ``records`` whose fields equal ``where``, or None."""
    hits = select(records, variant=variant, **where)
    return hits[0] if hits else None


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


def latest_records(data_dir=None) -> dict:
    """``{(benchmark, variant): record}`` over the most recent run of every benchmark (the last record of a
    variant in that run): what a chapter looks one record up in, never a mix of two runs of one benchmark."""
    out = {}
    for benchmark, records in load_all(data_dir).items():
        for r in latest_run(records):
            if "variant" in r:
                out[(r.get("benchmark", benchmark), r["variant"])] = r
    return out


# --- the Nsight Compute validation run (data/tracer_validation.json, scripts/gpu/validate_tracer.py) ---------

VALIDATION = DATA_DIR.parent / "tracer_validation.json"


def validation_run(p=None) -> tuple:
    """``(cases, provenance)`` of the tracer's validation run: ``{case name: case}`` and the run's provenance
    (device, date, run id…), or ``({}, {})`` while it was not measured.

    The file is one run: ``{"provenance": {...}, "cases": [{"name": ..., "ncu": {count: value}}, ...]}``; a
    file of another shape raises :class:`MeasurementError` naming it.
    """
    p = pathlib.Path(p or VALIDATION)
    data = read_json(p, made_by="re-run scripts/gpu/validate_tracer.py")
    if data is None:
        return {}, {}
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise MeasurementError(f"{p}: expected {{\"provenance\": ..., \"cases\": [...]}} as "
                               f"scripts/gpu/validate_tracer.py writes it, found "
                               f"{type(data).__name__ if not isinstance(data, dict) else 'no cases list'}.")
    cases = {c["name"]: c for c in data["cases"] if isinstance(c, dict) and "name" in c}
    return cases, dict(data.get("provenance") or {})


def hardware_counts(p=None) -> dict:
    """Nsight Compute's integer counts per case name from the validation run (``ncu``), or {} when not measured."""
    cases, _prov = validation_run(p)
    return {name: {k: int(v) for k, v in c["ncu"].items() if number(v) is not None}
            for name, c in cases.items() if isinstance(c.get("ncu"), dict)}
