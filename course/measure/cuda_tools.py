"""The CUDA toolkit's tools, for the scripts in ``scripts/gpu``: finding them, Nsight Compute, SASS.

:func:`find_tool` finds ``ncu``, ``compute-sanitizer``, ``cuobjdump`` or ``nvdisasm``; :func:`ncu_profile` runs a
child command under Nsight Compute and :func:`parse_ncu_csv` reads its launches; :func:`sass_instructions`
reads an nvdisasm listing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from typing import Iterable, Optional

from course.measure.bench import BenchError
from course.measure.bench_harness import scrub

# --- tools of the CUDA toolkit: Nsight Compute -------------------------------------------------------------


def find_tool(name: str) -> Optional[str]:
    """``name`` (ncu, compute-sanitizer, cuobjdump, nvdisasm, nvcc) on PATH, inside an installed NVIDIA wheel
    (``nvidia/*/bin`` on ``sys.path``), or in the usual CUDA / Nsight folders (the newest): the one finder of the
    scripts' tools.  (The tracer's ``course.trace.compiler`` looks in the wheels first, on purpose: it wants the
    ptxas the course pins, not the machine's.)"""
    import glob
    import os
    import shutil
    import sys

    hit = shutil.which(name)
    if hit:
        return hit
    for entry in sys.path:
        found = sorted(glob.glob(os.path.join(entry or ".", "nvidia", "*", "bin", name)))
        if found:
            return found[0]
    for pattern in (f"/usr/local/cuda*/bin/{name}", f"/opt/nvidia/nsight-compute/*/{name}",
                    f"/usr/local/cuda*/nsight-compute*/{name}"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
    return None


def ncu_launches(text: str) -> list:
    """The launches of ``ncu --csv`` output in ID order, ``[{"id": n, "kernel": name, "block": text, "grid": text,
    "rows": [(metric, unit, value text)]}]``: the one reader of ncu's CSV (its table starts at the line that begins
    with ``"ID"``); ``block`` and ``grid`` are ncu's ``"(256, 1, 1)"``, None where its table has no such column;
    each script shapes the launches as its records need (:func:`parse_ncu_csv` is the course's shape)."""
    import csv
    import io

    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    launches: dict = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        try:
            key = int(row["ID"])
        except (KeyError, TypeError, ValueError):
            continue
        d = launches.setdefault(key, {"id": key, "kernel": row.get("Kernel Name", ""), "block": row.get("Block Size"),
                                      "grid": row.get("Grid Size"), "rows": []})
        d["rows"].append((row.get("Metric Name", ""), row.get("Metric Unit", ""), row.get("Metric Value")))
    return [launches[k] for k in sorted(launches)]


def ncu_number(text, *, words: bool = True):
    """A value of ncu's CSV as a number (``"1,024"`` -> 1024, ``"12.5"`` -> 12.5; an int when whole); an empty
    field is None, and text that is not a number stays text (``words=False``: None, as for ``n/a``)."""
    t = (text or "").strip().replace(",", "")
    try:
        v = float(t)
    except ValueError:
        return (t or None) if words else None
    return int(v) if v.is_integer() else v


def parse_ncu_csv(text: str) -> list:
    """Profiled launches in order, ``[{"kernel": name, "id": n, metric: value}]``, from ``ncu --csv`` output
    (each value a float where it parses, else its text)."""
    out = []
    for launch in ncu_launches(text):
        d = {"id": launch["id"], "kernel": launch["kernel"]}
        for name, _unit, value in launch["rows"]:
            raw = (value or "").replace(",", "")
            try:
                d[name] = float(raw)
            except ValueError:
                d[name] = raw
        out.append(d)
    return out


def ncu_profile(argv: list, metrics: Iterable[str], *, kernel_regex: Optional[str] = None,
                launch_count: Optional[int] = None, timeout: float = 180) -> tuple:
    """Run ``argv`` (a child command) under ``ncu --clock-control none`` for ``metrics``; returns
    ``(launches, log)`` with the launches as :func:`parse_ncu_csv` gives them and the scrubbed output."""
    ncu = find_tool("ncu")
    if ncu is None:
        raise BenchError("ncu (Nsight Compute) not found on PATH or under /usr/local/cuda*/bin")
    cmd = [ncu, "--clock-control", "none", "--csv", "--print-units", "base", "--metrics", ",".join(metrics)]
    if kernel_regex:
        cmd += ["-k", f"regex:{kernel_regex}"]
    if launch_count:
        cmd += ["--launch-count", str(launch_count)]
    # A session of its own: on a timeout the whole group goes (ncu and the child it profiles), so that reading the
    # pipes cannot wait on a grandchild that still holds them (subprocess.run's timeout kills ncu alone).
    proc = subprocess.Popen(cmd + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired as timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = proc.communicate()
        raise BenchError(f"ncu did not finish within {timeout:.0f} s (killed with the process it profiled); "
                         f"last output: {scrub((out + err)[-1500:])}") from timed_out
    text = out + "\n" + err
    return parse_ncu_csv(out), scrub(" ".join(cmd[1:]) + "\n" + text[-20000:])


def query_metrics(ncu: str, timeout: float = 120) -> set:
    """Base metric names this ncu knows on this GPU (``ncu --query-metrics``); empty when the query fails."""
    try:
        r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=timeout)
        return set(re.findall(r"^([a-z0-9]+__[a-z0-9_]+)\s", r.stdout, flags=re.M))
    except Exception:  # no answer: the caller asks for its metrics as they are
        return set()


# --- SASS as instructions ----------------------------------------------------------------------------------

_SASS_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+([^;]*)")


_SASS_LABEL = re.compile(r"^\s*(\.L_x_\d+):")


def sass_instructions(sass: str) -> list:
    """``[(address, instruction text)]`` of an nvdisasm listing: instructions only (no directives, no bytes);
    branch labels (``.L_x_3``) are replaced by the address they name."""
    out, labels, pending = [], {}, []
    for line in sass.splitlines():
        lm = _SASS_LABEL.match(line)
        if lm:
            pending.append(lm.group(1))
            continue
        m = _SASS_INSTR.match(line)
        if m and not m.group(2).startswith("."):
            addr = int(m.group(1), 16)
            for lab in pending:
                labels[lab] = addr
            pending = []
            out.append((addr, m.group(2).split("/*")[0].strip()))
    return [(a, re.sub(r"`\((\.L_x_\d+)\)", lambda mm: f"0x{labels.get(mm.group(1), 0):04x}", t)) for a, t in out]
