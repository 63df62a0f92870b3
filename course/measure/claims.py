"""The claims ledger: every quantitative or checkable claim of the four source articles, and what was measured.

``data/claims.json`` holds one entry per claim:

- ``id``        a short stable name (``002-shared-latency``);
- ``seed``      the article's file name in ``shared/seeds/``; ``section`` where in it;
- ``claim``     the article's own words, short (``...`` joins fragments that are apart in the text);
- ``chapter``   the notebook that tests it (``03_memory_coalescing``: a chapter of :mod:`course.chapters`);
- ``measured``  what was measured, with its unit, or null until it is;
- ``verdict``   ``confirmed``, ``corrected``, ``refuted``, ``not-measurable`` (then ``reason`` says why) or
                ``pending``;
- ``evidence``  the record (``data/measurements/<benchmark>.json: variant``) or notebook cell that shows it.

Every measurable claim carries a ``check``: which recorded value answers it, and the range the claim
states.  A reference (``a``, ``b``) names a record of ``data/measurements/<benchmark>.json`` by
``benchmark``, ``variant``, ``field`` (a key, or a list of keys into nested fields) and optionally
``where`` (other fields the record must have: ``{"size": [16384, 16384], "dtype": "int32"}``) and ``over``
(``sum``/``max``/``min``/``count`` of the field over every matching record of the newest run), or a case of
the Nsight Compute validation run (``data/tracer_validation.json``) by ``case`` and ``field``
(``["ncu", "shared_load_wavefronts"]``), or a field of another recorded JSON file under ``data/`` by
``file`` and ``field``; ``scale`` multiplies the value.  A bool is no number (:func:`measurements.number`) but
where the reference says ``"yes_no": true``: then true is 1, false 0.  Files are read by ``measurements``.  Kinds:

- ``value`` (a), ``ratio`` (a / b), ``loss`` (1 - b / a), ``attribute`` (a device attribute, ``name``);
- ``arithmetic``: ``expr``, plain arithmetic on numbers the claim itself states (launch sizes, padding);
- ``all``: ``checks``, a list of checks; the claim holds when every one of them holds;
- ``limiter``: ``profile`` (a case of ``kernel_profiles.json``) and ``limiter`` (:data:`LIMITERS`): holds when
  :func:`course.measure.explain_check.measured_limiter` finds that unit busiest there (else ``refuted``); no range.
  The course's own claims (``seed`` ``"course"``, ``id`` ``course-…``) are such sentences of its chapters.

The verdict follows from the value: inside ``range`` (widened by ``tolerance``, a fraction: 0.15 lets a
value 15 % outside still agree — pointer chasing adds one address calculation per step to every
latency, about 4 cycles) is ``confirmed``, outside is ``if_outside`` (``corrected`` or ``refuted``).  A
claim whose record is not there yet is ``pending`` and names the record that will answer it
(``planned``).  ``not-measurable`` is only for what an H200 driven from Python cannot show, with a
``reason``.

``python -m course.claims check`` re-derives every verdict from the records and fails when one
disagrees, when a cited file does not exist (or lies outside the repository), when a claim's evidence
does not name the record its check reads, or when a measurable claim has no check.  :func:`refresh`
fills ``measured``, ``evidence`` and the verdict of entries it owns (``auto``) or that are pending; a
chapter's table (:func:`table`) does the same on the fly, so a notebook shows new measurements as soon
as they are recorded; ``python -m course.claims refresh`` writes the refreshed ledger back.

Defined for chapters 02 and 03 (notebooks/02_warps_divergence.ipynb, notebooks/03_memory_coalescing.ipynb);
every chapter shows its claims with :func:`table`.
"""

from __future__ import annotations

import ast
import copy
import html
import json
import math
import operator
import pathlib
import re
import sys

from course import chapters
from course.measure import measurements
from course.measure.measurements import NOT_MEASURED, number  # the one text for 'not measured', the one number rule

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLAIMS = ROOT / "data" / "claims.json"
MEASUREMENTS = ROOT / "data" / "measurements"
VALIDATION = ROOT / "data" / "tracer_validation.json"
SEEDS_DIR = ROOT.parent / "shared" / "seeds"

VERDICTS = ("confirmed", "corrected", "refuted", "not-measurable", "pending")
REQUIRED = ("id", "seed", "claim", "chapter", "measured", "verdict", "evidence")
CHAPTER_IDS = tuple(ch.file[: -len(".ipynb")] for ch in chapters.CHAPTERS)
SEED_FILE = re.compile(r"^(\d{3})_[0-9a-f]{16}\.txt$")
CHECK_KINDS = ("value", "ratio", "loss", "attribute", "arithmetic", "all", "limiter")
COURSE = "course"  # the seed of the course's own claims
#: What the profile's counters alone decide (``atomics`` needs the tracer's count of serialised atomics).
LIMITERS = ("dram", "l2", "l1", "shared", "issue", "latency", "launch")
PROFILES = "kernel_profiles"
JUDGED = ("confirmed", "corrected", "refuted")


class ClaimsError(ValueError):
    """The ledger is malformed; the message lists every problem with the entry it is in."""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def seed_text(seed: str, seeds_dir: pathlib.Path = SEEDS_DIR) -> str | None:
    """The article's text with whitespace collapsed, or None where shared/seeds is not present."""
    path = seeds_dir / seed
    return _norm(path.read_text(encoding="utf-8")) if path.is_file() else None


def validate(entries, seeds_dir: pathlib.Path = SEEDS_DIR) -> list:
    """Every problem of a ledger as a list of messages (empty when the ledger is sound)."""
    problems = []
    if not isinstance(entries, list):
        return ["the ledger must be a JSON list of entries"]
    seen = set()
    texts: dict = {}
    for n, e in enumerate(entries):
        where = f"entry {n} ({e.get('id', 'no id')})" if isinstance(e, dict) else f"entry {n}"
        if not isinstance(e, dict):
            problems.append(f"{where}: not an object")
            continue
        missing = [k for k in REQUIRED if k not in e]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
            continue
        if e["id"] in seen:
            problems.append(f"{where}: id {e['id']!r} is used twice")
        seen.add(e["id"])
        if e["seed"] == COURSE and not str(e["id"]).startswith(COURSE + "-"):
            problems.append(f"{where}: the course's own claim needs an id starting with 'course-'")
        elif e["seed"] != COURSE and not SEED_FILE.match(str(e["seed"])):
            problems.append(f"{where}: seed {e['seed']!r} is not a seed file name like 002_9b22f37c9f847fb7.txt")
        elif not str(e["id"]).startswith(e["seed"][:3]):
            problems.append(f"{where}: id should start with the seed number {e['seed'][:3]}")
        if e["chapter"] not in CHAPTER_IDS:
            problems.append(f"{where}: chapter {e['chapter']!r} is not one of {', '.join(CHAPTER_IDS)}")
        if e["verdict"] not in VERDICTS:
            problems.append(f"{where}: verdict {e['verdict']!r} is not one of {', '.join(VERDICTS)}")
        if e["verdict"] == "not-measurable" and not e.get("reason"):
            problems.append(f"{where}: a not-measurable claim needs a 'reason'")
        if e["verdict"] in ("confirmed", "corrected", "refuted") and not (e["measured"] and e["evidence"]):
            problems.append(f"{where}: a {e['verdict']} claim needs 'measured' and 'evidence'")
        if not isinstance(e["claim"], str) or not e["claim"].strip():
            problems.append(f"{where}: empty claim")
        elif SEED_FILE.match(str(e["seed"])):  # the course's own claims are its words: nothing to quote
            if e["seed"] not in texts:
                texts[e["seed"]] = seed_text(e["seed"], seeds_dir)
            text = texts[e["seed"]]
            if text is not None:
                for frag in e["claim"].split("..."):
                    if _norm(frag) and _norm(frag) not in text:
                        problems.append(f"{where}: {_norm(frag)!r} is not in {e['seed']} (quote the article's words)")
        check = e.get("check")
        if check is not None:
            problems += [f"{where}: {p}" for p in _check_problems(check)]
    return problems


def _ref_problems(ref, side) -> list:
    if not isinstance(ref, dict):
        return [f"check.{side} must be an object"]
    if "case" in ref:
        return [] if ref.get("field") else [f"check.{side} (a validation case) needs 'field'"]
    if "file" in ref:
        ok = isinstance(ref["file"], str) and ref["file"].startswith("data/") and ".." not in ref["file"]
        return [] if ok and ref.get("field") else [f"check.{side} (a file) needs a 'file' under data/ and a 'field'"]
    if not all(ref.get(k) for k in ("benchmark", "variant", "field")):
        return [f"check.{side} needs benchmark, variant and field (or case and field)"]
    if "where" in ref and not isinstance(ref["where"], dict):
        return [f"check.{side}.where must be an object"]
    if ref.get("over") not in (None, "sum", "max", "min", "count"):
        return [f"check.{side}.over must be sum, max, min or count"]
    if not isinstance(ref.get("yes_no", False), bool):
        return [f"check.{side}.yes_no must be true or false"]
    return []


def _check_problems(check, nested=False) -> list:
    if not isinstance(check, dict) or check.get("kind") not in CHECK_KINDS:
        return [f"check must be an object with kind in {CHECK_KINDS}"]
    out = []
    kind = check["kind"]
    if kind == "attribute":
        if not check.get("name"):
            out.append("an attribute check needs 'name'")
    elif kind == "arithmetic":
        try:
            _arith(check.get("expr", ""))
        except (ValueError, SyntaxError, ZeroDivisionError) as e:
            out.append(f"check.expr: {e}")
    elif kind == "limiter" and (not check.get("profile") or check.get("limiter") not in LIMITERS):
        out.append(f"a limiter check needs 'profile' (a case of {PROFILES}.json) and 'limiter', one of {', '.join(LIMITERS)}")
    elif kind == "all":
        subs = check.get("checks")
        if nested or not isinstance(subs, list) or not subs:
            out.append("an 'all' check needs 'checks', a non-empty list of checks (not nested)")
        else:
            for k, sub in enumerate(subs):
                out += [f"checks[{k}]: {p}" for p in _check_problems(sub, nested=True)]
                if isinstance(sub, dict) and sub.get("range") is None:
                    out.append(f"checks[{k}] needs a range")
    elif kind != "limiter":
        for side in ("a", "b") if kind in ("ratio", "loss") else ("a",):
            out += _ref_problems(check.get(side), side)
    rng = check.get("range")
    if rng is not None and not (isinstance(rng, list) and len(rng) == 2 and rng[0] <= rng[1]):
        out.append("check.range must be [low, high]")
    tol = check.get("tolerance", 0.0)
    if not isinstance(tol, (int, float)) or not 0 <= tol < 1:
        out.append("check.tolerance must be a fraction in [0, 1)")
    if check.get("if_outside", "corrected") not in ("corrected", "refuted"):
        out.append("check.if_outside must be 'corrected' or 'refuted'")
    return out


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS = {"ceil": math.ceil, "floor": math.floor, "gcd": math.gcd, "min": min, "max": max}


def _arith(expr: str) -> float:
    """Plain arithmetic (numbers, + - * / // % **, ceil, floor, gcd, min, max): no names, no calls beyond those."""

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and not node.keywords):
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise ValueError(f"{expr!r}: only numbers, + - * / // % ** and {', '.join(_FUNCS)} are allowed")

    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("an arithmetic check needs 'expr'")
    return float(ev(ast.parse(expr, mode="eval")))


def load(path=CLAIMS) -> list:
    """The ledger, validated (raises :class:`ClaimsError` listing every problem)."""
    entries = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    problems = validate(entries)
    if problems:
        raise ClaimsError(f"{path} has {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return entries


# --- measurements -----------------------------------------------------------------------------------------


def _read_records(directory):
    """Every record of every run under ``directory`` (:func:`course.measure.measurements.load_all`)."""
    for benchmark, recs in measurements.load_all(directory).items():
        for r in recs:
            if "benchmark" in r and "variant" in r:
                yield dict(r, _file=f"{benchmark}.json")


def load_records(directory=MEASUREMENTS) -> dict:
    """{(benchmark, variant): record} of each benchmark's latest run (:func:`measurements.latest_records`)."""
    return {key: dict(r, _file=f"{key[0]}.json") for key, r in measurements.latest_records(directory).items()}


ANY_RUN = object()  # ``run`` for :meth:`Records.find` when any run will do (None: a record without a run id)


class Records:
    """Every recorded run (all records per (benchmark, variant), newest first) and the Nsight Compute cases;
    a ratio divides two records of one run (:meth:`find` takes the run, :func:`measure` picks it)."""

    def __init__(self, directory=MEASUREMENTS, validation=VALIDATION, records=None, cases=None):
        self.by_key: dict = {}
        source = _read_records(directory) if records is None else (dict(r) for r in records)
        for r in source:
            r.setdefault("_file", f"{r['benchmark']}.json")
            self.by_key.setdefault((r["benchmark"], r["variant"]), []).append(r)
        for recs in self.by_key.values():
            recs.sort(key=lambda r: str(r.get("date", "")), reverse=True)
        self.cases: dict = {}
        self.validation_provenance: dict = {}
        if cases is not None:
            self.cases = dict(cases)
        elif validation is not None:
            self.cases, self.validation_provenance = measurements.validation_run(validation)

    @classmethod
    def of(cls, records):
        """Records from what a caller has: None (read data/), a Records, or {(benchmark, variant): record}."""
        if records is None:
            return cls()
        if isinstance(records, cls):
            return records
        return cls(records=list(records.values()), validation=None)

    def matching(self, ref) -> list:
        """Every record a reference names (benchmark, variant, ``where``), newest first."""
        recs = self.by_key.get((ref["benchmark"], ref["variant"]), [])
        where = ref.get("where") or {}
        return [r for r in recs if all(_same(r.get(k), v) for k, v in where.items())]

    def find(self, ref, run=ANY_RUN):
        """The newest record matching a reference, of run ``run`` only when given; None when there is none."""
        matches = self.matching(ref)
        if run is not ANY_RUN:
            matches = [r for r in matches if r.get("run") == run]
        return matches[0] if matches else None

    def runs(self, ref) -> list:
        """The runs that recorded what a reference names, newest first (a case: the validation run)."""
        if "file" in ref or "case" in ref:
            return [None if "file" in ref else self.validation_provenance.get("run")]
        out = []
        for r in self.matching(ref):
            if r.get("run") not in out:
                out.append(r.get("run"))
        return out


def _same(have, want) -> bool:
    if isinstance(have, (list, tuple)) and isinstance(want, (list, tuple)):
        return list(have) == list(want)
    return have == want


def _dig(obj, field):
    for key in field if isinstance(field, list) else [field]:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def _value(ref, raw):
    """A recorded field as a number (a bool is none); a yes/no outcome (``"yes_no": true``): a bool as 1.0 / 0.0."""
    if ref.get("yes_no"):
        return float(raw) if isinstance(raw, bool) else None
    return number(raw)


def _field_name(field) -> str:
    return ".".join(field) if isinstance(field, list) else str(field)


def _resolve(store: Records, ref, run=ANY_RUN):
    """(value, run, evidence text) for one reference (times its ``scale``, default 1), or (None, None, None)."""
    value, run_, evidence = _resolve1(store, ref, run)
    if value is not None and ref.get("scale") is not None:
        value *= ref["scale"]
        evidence += f" × {ref['scale']:g}"
    return value, run_, evidence


def _resolve1(store: Records, ref, run=ANY_RUN):
    if "file" in ref:  # another recorded file of data/ (a compiler report, say): a field of its JSON
        data = measurements.read_json(ROOT / ref["file"], made_by="re-run the scripts/gpu/ script that records it")
        value = _value(ref, _dig(data, ref["field"]))
        if value is None:
            return None, None, None
        return value, None, f"{ref['file']}: {_field_name(ref['field'])}"
    if "case" in ref:
        case = store.cases.get(ref["case"])
        value = _value(ref, _dig(case, ref["field"])) if case else None
        if value is None:
            return None, None, None
        prov = store.validation_provenance
        return value, prov.get("run"), (
            f"data/tracer_validation.json: case {ref['case']} (Nsight Compute, {prov.get('device', '?')}, "
            f"{str(prov.get('date', '?'))[:10]}, run {prov.get('run', '?')}), {_field_name(ref['field'])}")
    where = ref.get("where") or {}
    at = "".join(f", {k}={v}" for k, v in where.items())
    if ref.get("over"):
        rec, value = _aggregate(store, ref, run)
        if value is None:
            return None, None, None
        return value, rec.get("run"), (
            f"data/measurements/{rec['_file']}: every {ref['variant']!r} record{at} of run {rec.get('run', '?')} "
            f"({rec.get('device', '?')}, {str(rec.get('date', '?'))[:10]}), {ref['over']} of {_field_name(ref['field'])}")
    rec = store.find(ref, run)
    value = _value(ref, _dig(rec, ref["field"])) if rec else None
    if value is None:
        return None, None, None
    return value, rec.get("run"), (
        f"data/measurements/{rec['_file']}: {ref['variant']}{at} ({rec.get('device', '?')}, "
        f"{str(rec.get('date', '?'))[:10]}, run {rec.get('run', '?')}), {_field_name(ref['field'])}")


_OVER = {"sum": sum, "max": max, "min": min, "count": len}


def _aggregate(store: Records, ref, run=ANY_RUN):
    """(newest record of ``run``, or of any run, the field combined over every matching record of its run)."""
    newest = store.find(ref, run)
    if newest is None:
        return None, None
    recs = [r for r in store.matching(ref) if r.get("run") == newest.get("run")]
    vals = []
    for r in recs:
        v = _dig(r, ref["field"])
        v = len(v) if isinstance(v, (list, dict)) else _value(ref, v)
        if v is None:
            return newest, None
        vals.append(v)
    return newest, float(_OVER[ref["over"]](vals))


def measure(check, records) -> tuple:
    """(value, evidence) for a check from recorded runs, or (None, None) when they are not recorded yet.

    For an ``all`` check the value is the list of its checks' values.
    """
    store = Records.of(records)
    kind = check["kind"]
    if kind == "arithmetic":
        return _arith(check["expr"]), f"arithmetic: {check['expr']}"
    if kind == "all":
        values, evidence = [], []
        for sub in check["checks"]:
            v, ev = measure(sub, store)
            if v is None:
                return None, None
            values.append(v)
            evidence.append(ev)
        return values, "; ".join(evidence)
    if kind == "limiter":
        return _limiter(store, check["profile"])
    if kind == "attribute":
        for (_bench, variant), recs in sorted(store.by_key.items()):
            rec = recs[0]
            attrs = rec.get("attributes")
            if isinstance(attrs, dict) and isinstance(attrs.get(check["name"]), (int, float)):
                value = attrs[check["name"]] / check.get("scale", 1)
                return value, (f"data/measurements/{rec['_file']}: {variant} ({rec.get('device', '?')}, "
                               f"{str(rec.get('date', '?'))[:10]}, run {rec.get('run', '?')}), {check['name']}")
        return None, None
    if kind == "value":
        a, _run, ev_a = _resolve(store, check["a"])
        return (None, None) if a is None else (a, ev_a)
    # a ratio compares records of one run: the newest run that recorded both sides, never one of each
    for run in store.runs(check["a"]):
        a, run_a, ev_a = _resolve(store, check["a"], run)
        b, run_b, ev_b = _resolve(store, check["b"], run_a)
        if a is None or b is None or run_a != run_b:
            continue
        if b == 0 or (kind == "loss" and a == 0):
            return None, None
        value = a / b if kind == "ratio" else 1.0 - b / a
        return value, f"{ev_a} vs {ev_b}"
    return None, None


_UNITS = {"dram": "dram__throughput", "l2": "lts__throughput", "l1": "l1tex__throughput", "sm": "sm__throughput"}


def _limiter(store: Records, profile: str):
    """(the limiter Nsight Compute finds in a profiled case, evidence with every unit's %), or (None, None)."""
    from course.measure.explain_check import measured_limiter
    rec = store.find({"benchmark": PROFILES, "variant": profile})
    ncu = (rec or {}).get("ncu")
    if not ncu or not rec.get("ms"):
        return None, None
    pcts = ", ".join(f"{u} {ncu[k]:.0f} %" for u, m in _UNITS.items() if (k := f"{m}.avg.pct_of_peak_sustained_elapsed") in ncu)
    return measured_limiter(rec, {}), (
        f"data/measurements/{rec['_file']}: {profile} ({rec.get('device', '?')}, {str(rec.get('date', '?'))[:10]}, "
        f"run {rec.get('run', '?')}), Nsight Compute, % of peak: {pcts}; {rec['ms'] * 1e3:.1f} µs")


def _inside(check, value) -> bool:
    rng = check["range"]
    tol = check.get("tolerance", 0.0)
    return rng[0] * (1 - tol) <= value <= rng[1] * (1 + tol) if rng[0] >= 0 else rng[0] <= value <= rng[1] * (1 + tol)


def judge(check, records) -> tuple:
    """(value, verdict, evidence) that the records give a check: verdict None when not recorded yet
    (or when the check states no range)."""
    value, evidence = measure(check, records)
    if value is None:
        return None, None, None
    if check["kind"] == "all":
        ok = all(_inside(sub, v) for sub, v in zip(check["checks"], value))
    elif check["kind"] == "limiter":
        ok = value == check["limiter"]
    elif check.get("range") is None:
        return value, None, evidence
    else:
        ok = _inside(check, value)
    default = "refuted" if check["kind"] == "limiter" else "corrected"  # a wrong limiter is wrong, not off by a bit
    return value, ("confirmed" if ok else check.get("if_outside", default)), evidence


def _fmt(value, unit) -> str:
    if isinstance(value, str):  # a limiter
        return f"{value} {unit}".strip()
    if isinstance(value, list):
        return "; ".join(_fmt(v, "") for v in value) + (f" {unit}" if unit else "")
    if unit == "loss":
        return f"{value * 100:.0f} % loss"
    if abs(value) >= 1000 or value == int(value):
        text = f"{value:,.0f}".replace(",", " ")
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def refresh(entries, records=None) -> list:
    """A copy of the ledger with measured, evidence and verdict from the records.

    Only entries that are pending, or whose verdict an earlier refresh set (``auto``), are touched, so a
    verdict written by hand stays (``python -m course.claims check`` says when it no longer agrees).
    """
    store = Records.of(records)
    out = copy.deepcopy(entries)
    for e in out:
        check = e.get("check")
        if not check or not (e["verdict"] == "pending" or e.get("auto")):
            continue
        value, verdict, evidence = judge(check, store)
        if value is None or verdict is None:
            continue
        e["measured"] = _fmt(value, check.get("unit", ""))
        e["evidence"] = evidence
        e["auto"] = True
        e["verdict"] = verdict
        e.pop("planned", None)
    return out


# --- the ledger's own truth: paths, checks, verdicts -------------------------------------------------------

#: A path the evidence cites: repository-relative (data/..., notebooks/..., course/..., docs/..., scripts/...)
#: or anything that points outside the repository (shared/..., ../...).
CITED_PATH = re.compile(r"(?<![\w/.])((?:\.\./)?(?:data|notebooks|course|docs|scripts|solutions|tests|shared)"
                        r"/[\w./-]*\w\.(?:json|ipynb|py|md|txt|sh|csv|tgz))")
OUTSIDE = ("shared/", "../")


def cited_paths(text) -> list:
    """The files a piece of text cites, in order."""
    return CITED_PATH.findall(text or "")


def _check_files(check) -> set:
    if check["kind"] == "all":
        return set().union(*(_check_files(c) for c in check["checks"]))
    if check["kind"] == "attribute":
        return {"data/measurements/"}
    if check["kind"] == "arithmetic":
        return set()
    out = {f"data/measurements/{PROFILES}.json"} if check["kind"] == "limiter" else set()
    for side in ("a", "b"):
        ref = check.get(side)
        if isinstance(ref, dict):
            out.add(ref["file"] if "file" in ref else
                    "data/tracer_validation.json" if "case" in ref else f"data/measurements/{ref['benchmark']}.json")
    return out


def audit(entries, records=None, root=ROOT) -> list:
    """Every way the ledger disagrees with the repository, as messages (empty when it agrees).

    - a cited file that does not exist, or lies outside the repository;
    - a measurable claim (not ``not-measurable``) without a check that states a range;
    - a verdict that the check, run on the records, does not give (a pending claim whose record exists
      is one too), and a pending claim that does not name its ``planned`` record;
    - evidence that does not name the file the check reads.
    """
    store = Records.of(records)
    root = pathlib.Path(root)
    problems = []
    for e in entries:
        where = e.get("id", "?")
        for field in ("evidence", "planned", "note"):
            for path in cited_paths(e.get(field)):
                if path.startswith(OUTSIDE):
                    problems.append(f"{where}: {field} cites {path}, outside the repository; cite the recorded run")
                elif field != "planned" and not (root / path).exists():  # a planned record does not exist yet
                    problems.append(f"{where}: {field} cites {path}, which does not exist")
        check = e.get("check")
        if e["verdict"] == "not-measurable":
            continue
        if not check or (check["kind"] not in ("all", "limiter") and check.get("range") is None):
            problems.append(f"{where}: a {e['verdict']} claim needs a check with a range")
            continue
        value, verdict, _evidence = judge(check, store)
        if verdict is None:
            if e["verdict"] != "pending":
                problems.append(f"{where}: verdict {e['verdict']!r}, but the records its check reads are not there")
            elif not e.get("planned"):
                problems.append(f"{where}: a pending claim must name the record that will answer it ('planned')")
            continue
        if verdict != e["verdict"]:
            problems.append(f"{where}: verdict {e['verdict']!r}, but the records give {verdict!r} "
                            f"({_fmt(value, check.get('unit', ''))})")
        text = e.get("evidence") or ""
        for f in sorted(_check_files(check)):
            if f not in text:
                problems.append(f"{where}: the evidence does not name {f}, which its check reads")
    return problems


# --- showing a chapter's claims ---------------------------------------------------------------------------------


def for_chapter(chapter: str, entries=None) -> list:
    """The claims a chapter tests (``chapter``: '03_memory_coalescing', or a chapter number)."""
    if isinstance(chapter, int):
        chapter = chapters.chapter(chapter).file[: -len(".ipynb")]
    if chapter not in CHAPTER_IDS:
        raise KeyError(f"{chapter!r} is not a chapter; use one of {', '.join(CHAPTER_IDS)} or a number 0-10")
    entries = load() if entries is None else entries
    return [e for e in entries if e["chapter"] == chapter]


def source(e) -> str:
    """Where a claim comes from, short: ``002 §1.2`` (a seed and its section) or ``course §3`` (a chapter's own)."""
    return f"{COURSE if e['seed'] == COURSE else e['seed'][:3]} §{e.get('section', '')}"


def _claimed(e) -> str:
    if (e.get("check") or {}).get("kind") == "limiter":
        return f"limited by {e['check']['limiter']}"
    rng = (e.get("check") or {}).get("range")
    if rng is None:
        return ""
    unit = e["check"].get("unit", "")
    if unit == "loss":
        return f"{rng[0] * 100:.0f}–{rng[1] * 100:.0f} % loss"
    hi = "∞" if rng[1] >= 1e9 else f"{rng[1]:g}"
    text = f"{rng[0]:g}–{hi} {unit}".strip() if rng[0] != rng[1] else f"{rng[0]:g} {unit}"
    tol = e["check"].get("tolerance")
    return f"{text} (±{tol * 100:.0f} %)" if tol else text


class ClaimsTable:
    """A chapter's claims, claimed vs measured: HTML in a notebook, plain text elsewhere."""

    def __init__(self, entries):
        self.entries = list(entries)

    def rows(self):
        for e in self.entries:
            measured = e["measured"] or NOT_MEASURED
            if e["verdict"] == "not-measurable":
                measured = f"not measurable: {e.get('reason', '')}"
            evidence = e["evidence"] or (f"planned: {e['planned']}" if e.get("planned") else "")
            yield (e["id"], source(e), e["claim"], _claimed(e), measured,
                   e["verdict"], evidence)

    def __repr__(self):
        out = []
        for id_, where, claim, claimed, measured, verdict, evidence in self.rows():
            out.append(f"[{verdict}] {id_} ({where}): {claim}")
            if claimed:
                out.append(f"    the claim, as a range: {claimed}")
            out.append(f"    measured: {measured}")
            if evidence:
                out.append(f"    evidence: {evidence}")
        return "\n".join(out) if out else "(no claims for this chapter)"

    def _repr_html_(self):
        head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                       ("id", "seed", "claim (原文)", "claimed", "measured", "verdict", "evidence"))
        body = []
        colour = {"confirmed": "#1a7f37", "corrected": "#9a6700", "refuted": "#cf222e", "pending": "#57606a",
                  "not-measurable": "#57606a"}
        for row in self.rows():
            cells = [html.escape(str(c)) for c in row]
            cells[5] = f"<b style='color:{colour.get(row[5], '#000')}'>{cells[5]}</b>"
            body.append("<tr>" + "".join(f"<td style='text-align:left'>{c}</td>" for c in cells) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def table(chapter, entries=None, records=None) -> ClaimsTable:
    """A chapter's claims with whatever has been recorded so far (refreshed on the fly, nothing written)."""
    entries = load() if entries is None else entries
    return ClaimsTable(for_chapter(chapter, refresh(entries, records)))


def main(argv=None) -> int:
    """``python -m course.claims check|refresh``."""
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else "check"
    entries = json.loads(CLAIMS.read_text(encoding="utf-8"))
    problems = validate(entries)
    if problems:
        print("\n".join(problems))
        return 1
    if cmd == "refresh":
        new = refresh(entries)
        changed = sum(1 for a, b in zip(entries, new) if a != b)
        CLAIMS.write_text(json.dumps(new, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"refreshed {changed} of {len(new)} claims from {MEASUREMENTS}")
        return 0
    if cmd != "check":
        print("usage: python -m course.claims [check|refresh]")
        return 2
    problems = audit(entries)
    counts = {v: sum(e["verdict"] == v for e in entries) for v in VERDICTS}
    checked = sum(1 for e in entries if e.get("check"))
    print(f"{len(entries)} claims ({checked} with a check): " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    if problems:
        print(f"{len(problems)} disagreement(s) with the records:\n  " + "\n  ".join(problems))
        return 1
    print("every verdict follows from the records it cites; every cited file exists")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
