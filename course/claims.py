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

An entry may carry a ``check``: which recorded GPU value answers it (a record's field, a ratio of two
records, a device attribute), the range the claim states, and optionally a ``tolerance`` (a fraction:
0.15 lets a value 15 % outside the range still agree — pointer chasing adds one address calculation per
step to every latency, about 4 cycles).  :func:`refresh` reads
``data/measurements/`` and fills ``measured``, ``evidence`` and — where a range is given — the verdict;
a chapter's table (:func:`table`) does the same on the fly, so a notebook shows new measurements as
soon as they are recorded.  ``python -m course.claims check`` validates the file;
``python -m course.claims refresh`` writes the refreshed ledger back.

Defined for chapters 02 and 03 (notebooks/02_warps_divergence.ipynb, notebooks/03_memory_coalescing.ipynb).
"""

from __future__ import annotations

import copy
import html
import json
import pathlib
import re
import sys

from course import chapters

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "data" / "claims.json"
MEASUREMENTS = ROOT / "data" / "measurements"
SEEDS_DIR = ROOT.parent / "shared" / "seeds"

VERDICTS = ("confirmed", "corrected", "refuted", "not-measurable", "pending")
REQUIRED = ("id", "seed", "claim", "chapter", "measured", "verdict", "evidence")
CHAPTER_IDS = tuple(ch.file[: -len(".ipynb")] for ch in chapters.CHAPTERS)
SEED_FILE = re.compile(r"^(\d{3})_[0-9a-f]{16}\.txt$")
CHECK_KINDS = ("value", "ratio", "loss", "attribute")
NOT_MEASURED = "not measured yet"


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
        if not SEED_FILE.match(str(e["seed"])):
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
        elif SEED_FILE.match(str(e["seed"])):
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


def _check_problems(check) -> list:
    if not isinstance(check, dict) or check.get("kind") not in CHECK_KINDS:
        return [f"check must be an object with kind in {CHECK_KINDS}"]
    out = []
    kind = check["kind"]
    if kind == "attribute":
        if not check.get("name"):
            out.append("an attribute check needs 'name'")
    else:
        for side in ("a", "b") if kind in ("ratio", "loss") else ("a",):
            ref = check.get(side)
            if not isinstance(ref, dict) or not all(ref.get(k) for k in ("benchmark", "variant", "field")):
                out.append(f"check.{side} needs benchmark, variant and field")
    rng = check.get("range")
    if rng is not None and not (isinstance(rng, list) and len(rng) == 2 and rng[0] <= rng[1]):
        out.append("check.range must be [low, high]")
    tol = check.get("tolerance", 0.0)
    if not isinstance(tol, (int, float)) or not 0 <= tol < 1:
        out.append("check.tolerance must be a fraction in [0, 1)")
    if check.get("if_outside", "corrected") not in ("corrected", "refuted"):
        out.append("check.if_outside must be 'corrected' or 'refuted'")
    return out


def load(path=CLAIMS) -> list:
    """The ledger, validated (raises :class:`ClaimsError` listing every problem)."""
    entries = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    problems = validate(entries)
    if problems:
        raise ClaimsError(f"{path} has {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return entries


# --- measurements -----------------------------------------------------------------------------------------


def load_records(directory=MEASUREMENTS) -> dict:
    """Recorded GPU runs: {(benchmark, variant): record}, the newest record per pair; dry runs are skipped."""
    out: dict = {}
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.json")):
        try:
            recs = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(recs, list):
            continue
        for r in recs:
            if not isinstance(r, dict) or r.get("dry_run") or "benchmark" not in r or "variant" not in r:
                continue
            key = (r["benchmark"], r["variant"])
            if key not in out or str(r.get("date", "")) >= str(out[key].get("date", "")):
                out[key] = dict(r, _file=path.name)
    return out


def _field(records, ref):
    rec = records.get((ref["benchmark"], ref["variant"]))
    if rec is None or rec.get(ref["field"]) is None:
        return None, None
    return float(rec[ref["field"]]), rec


def _provenance(rec, ref) -> str:
    return (f"data/measurements/{rec.get('_file', ref['benchmark'] + '.json')}: {ref['variant']} "
            f"({rec.get('device', '?')}, {str(rec.get('date', '?'))[:10]}, run {rec.get('run', '?')})")


def measure(check, records) -> tuple:
    """(value, evidence) for a check from recorded runs, or (None, None) when they are not recorded yet."""
    kind = check["kind"]
    if kind == "attribute":
        for (bench, _v), rec in sorted(records.items()):
            attrs = rec.get("attributes")
            if isinstance(attrs, dict) and isinstance(attrs.get(check["name"]), (int, float)):
                value = attrs[check["name"]] / check.get("scale", 1)
                return value, _provenance(rec, {"benchmark": bench, "variant": _v}) + f", {check['name']}"
        return None, None
    a, rec_a = _field(records, check["a"])
    if a is None:
        return None, None
    if kind == "value":
        return a, _provenance(rec_a, check["a"]) + f", {check['a']['field']}"
    b, rec_b = _field(records, check["b"])
    if b is None or b == 0 or a == 0:
        return None, None
    value = a / b if kind == "ratio" else 1.0 - b / a
    evidence = f"{_provenance(rec_a, check['a'])} vs {_provenance(rec_b, check['b'])}, {check['a']['field']}"
    return value, evidence


def _fmt(value, unit) -> str:
    if unit == "loss":
        return f"{value * 100:.0f} % loss"
    if abs(value) >= 1000 or value == int(value):
        text = f"{value:,.0f}".replace(",", " ")
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def refresh(entries, records=None) -> list:
    """A copy of the ledger with measured, evidence and (where a check states a range) verdict from the records.

    Only entries that are pending, or whose verdict an earlier refresh set (``auto``), are touched, so a
    verdict written by hand stays.
    """
    records = load_records() if records is None else records
    out = copy.deepcopy(entries)
    for e in out:
        check = e.get("check")
        if not check or not (e["verdict"] == "pending" or e.get("auto")):
            continue
        value, evidence = measure(check, records)
        if value is None:
            continue
        e["measured"] = _fmt(value, check.get("unit", ""))
        e["evidence"] = evidence
        e["auto"] = True
        rng = check.get("range")
        if rng is not None:
            tol = check.get("tolerance", 0.0)
            inside = rng[0] * (1 - tol) <= value <= rng[1] * (1 + tol)
            e["verdict"] = "confirmed" if inside else check.get("if_outside", "corrected")
    return out


# --- showing a chapter's claims ---------------------------------------------------------------------------------


def for_chapter(chapter: str, entries=None) -> list:
    """The claims a chapter tests (``chapter``: '03_memory_coalescing', or a chapter number)."""
    if isinstance(chapter, int):
        chapter = chapters.chapter(chapter).file[: -len(".ipynb")]
    if chapter not in CHAPTER_IDS:
        raise KeyError(f"{chapter!r} is not a chapter; use one of {', '.join(CHAPTER_IDS)} or a number 0-10")
    entries = load() if entries is None else entries
    return [e for e in entries if e["chapter"] == chapter]


def _claimed(e) -> str:
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
            yield (e["id"], f"{e['seed'][:3]} §{e.get('section', '')}", e["claim"], _claimed(e), measured,
                   e["verdict"], e["evidence"] or "")

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
    counts = {v: sum(e["verdict"] == v for e in entries) for v in VERDICTS}
    print(f"{len(entries)} claims, sound: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
