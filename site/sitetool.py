"""The course as a static website: execute the chapters, import an executed run, build ``build/site/``.

    python site/sitetool.py execute --out DIR [--jobs N] [--chapters 4 5]
        Run every chapter notebook (course.chapters order) with nbclient on the current backend and write
        DIR/NN_slug.nb.json (outputs + saved widget state) and DIR/provenance.json (course.measure.bench.provenance()
        of this machine, plus per chapter: seconds, error outputs, a hash of its code cells).  The GPU lane
        runs it on the H200 (``sh scripts/gpu_lane.sh OUTDIR execute``); without a GPU it runs on the CPU
        engine and says so.
    python site/sitetool.py import LANE.TGZ
        Replace site/executed/ with the executed copies of a GPU lane run (``make site-import TGZ=...``).
    python site/sitetool.py build [--stale execute|keep] [--out build/site]
        ``make site``: assemble the Sphinx sources (build/site-src/) and run Sphinx (myst-nb, execution off).
    python site/sitetool.py stale
        List the chapters whose clean notebook changed since its executed copy (exit status 0 either way).

Executed copies are stored as ``.nb.json`` (nbformat JSON under another name): the no-outputs rule for
committed ``.ipynb`` files (notebooks/, solutions/, exercises/) does not reach them, and no tool that
strips outputs from ``*.ipynb`` can empty them by accident.

A chapter page takes its cells from the clean notebook in notebooks/ and its outputs from the executed
copy when the two have the same code cells; otherwise ("stale") ``build`` executes the clean notebook on
the CPU (``--stale execute``, the default, cached under build/site-cache/) or shows the old executed copy
(``--stale keep``, used by the fast test build), and the page says so at the top.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import html
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
EXECUTED = SITE / "executed"
PAGES = SITE / "pages"
BUILD = ROOT / "build"
SUFFIX = ".nb.json"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# --- chapters and their executed copies ----------------------------------------------------------------


def chapters():
    """The chapters that have a notebook, in the order of course/chapters.py (the one list)."""
    from course.chapters import CHAPTERS

    return [ch for ch in CHAPTERS if ch.exists]


def stem(ch) -> str:
    return ch.file[: -len(".ipynb")]


def executed_path(ch, folder: pathlib.Path = EXECUTED) -> pathlib.Path:
    return folder / f"{stem(ch)}{SUFFIX}"


def read_nb(path: pathlib.Path):
    import nbformat

    return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)


def code_sources(nb) -> list:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def code_hash(nb) -> str:
    return hashlib.sha256(json.dumps(code_sources(nb)).encode()).hexdigest()[:16]


def load_provenance(folder: pathlib.Path = EXECUTED) -> dict:
    path = folder / "provenance.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def staleness(ch, folder: pathlib.Path = EXECUTED):
    """None when the executed copy has the same code cells as notebooks/; otherwise why not."""
    path = executed_path(ch, folder)
    if not path.is_file():
        return f"no executed copy ({path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})"
    clean, done = code_sources(read_nb(ch.path)), code_sources(read_nb(path))
    if len(clean) != len(done):
        return f"{len(clean)} code cells in notebooks/{ch.file}, {len(done)} in the executed copy"
    for i, (a, b) in enumerate(zip(clean, done)):
        if a != b:
            return f"code cell {i} of notebooks/{ch.file} changed since the executed copy"
    return None


def stale_chapters(folder: pathlib.Path = EXECUTED) -> dict:
    """{notebook stem: reason} for every chapter whose executed copy is missing or out of date."""
    out = {}
    for ch in chapters():
        why = staleness(ch, folder)
        if why:
            out[stem(ch)] = why
    return out


# --- executing -----------------------------------------------------------------------------------------


def _kernel_env(backend: str | None) -> dict:
    env = dict(os.environ)
    if backend:
        env["COURSE_BACKEND"] = backend
    # the course copy first, the caller's entries after it (the kernel must still find ipykernel)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def execute_notebook(src: pathlib.Path, dst: pathlib.Path, *, backend: str | None, timeout: int) -> dict:
    """Run one notebook in a fresh kernel (cwd notebooks/) and write it, with outputs and widget state, to dst."""
    import nbformat
    from nbclient import NotebookClient

    nb = read_nb(src)
    old = dict(os.environ)
    os.environ.update(_kernel_env(backend))  # the kernel inherits this process's environment
    started = time.monotonic()
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                                store_widget_state=True, record_timing=False,
                                resources={"metadata": {"path": str(src.parent)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    _relative_paths(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [i for i, c in enumerate(code) if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(nbformat.writes(nb), encoding="utf-8")
    return {"seconds": round(time.monotonic() - started, 1), "error_cells": errors, "code_sha256": code_hash(nb)}


def _relative_paths(nb) -> None:
    """Outputs name the repository's files by their path inside it, and no other path of the machine that ran
    them (a library's file in a warning becomes ``…/dispatcher.py:748``, as :func:`course.measure.bench_harness.scrub` writes it).

    Only text is rewritten: images and other binary outputs (base64, where '/' is a letter) stay as they are.
    """
    import nbformat

    from course.measure.bench_harness import scrub

    prefix = str(ROOT) + "/"
    binary = ("image/", "application/pdf")

    def fix(x, key=""):
        if key.startswith(binary):
            return x
        if isinstance(x, str):
            return scrub(x.replace(prefix, ""))
        if isinstance(x, list):
            return [fix(v) for v in x]
        if isinstance(x, dict):
            return {k: fix(v, k) for k, v in x.items()}
        return x

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.from_dict(fix(o)) for o in cell.outputs]
    if "widgets" in nb.metadata:
        nb.metadata["widgets"] = fix(nb.metadata["widgets"])


def _execute_job(args):
    src, dst, backend, timeout = args
    try:
        return execute_notebook(pathlib.Path(src), pathlib.Path(dst), backend=backend, timeout=timeout)
    except Exception as e:  # a dead kernel, a cell past its time limit: recorded, the other chapters go on
        return {"failed": f"{type(e).__name__}: {str(e)[:2000]}"}


def machine_provenance(backend: str | None) -> dict:
    """course.measure.bench.provenance() in a fresh process on the backend the notebooks run on."""
    code = "import json, course.measure.bench as b; print(json.dumps(b.provenance()))"
    out = subprocess.run([sys.executable, "-c", code], env=_kernel_env(backend), cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"could not read the machine's provenance (course.measure.bench.provenance()):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def execute(out: pathlib.Path, *, numbers=None, jobs: int = 1, timeout: int = 900, backend: str | None = None,
            budget: float | None = None) -> dict:
    """Execute the chapters into ``out``; write out/provenance.json (after each chapter) and return it.

    ``jobs`` > 1 runs notebooks side by side: quicker, but on one GPU their timings disturb each other,
    so the GPU lane runs one at a time.  ``budget`` (seconds, jobs=1 only): chapters not started by then
    are recorded as not run, and a cell may take at most what is left of it.
    """
    backend = backend or os.environ.get("COURSE_BACKEND")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    prov = machine_provenance(backend)
    todo = [ch for ch in chapters() if numbers is None or ch.number in numbers]
    prov.update(kind="executed chapter notebooks", tool="site/sitetool.py execute", jobs=jobs, chapters={})

    def done(ch, result):
        prov["chapters"][stem(ch)] = result
        state = result.get("failed") or (f"{len(result['error_cells'])} cells with errors"
                                         if result["error_cells"] else "ok")
        print(f"{stem(ch):28} {result.get('seconds', '-'):>7} s  {state}", flush=True)
        (out / "provenance.json").write_text(json.dumps(prov, indent=1, ensure_ascii=False) + "\n")

    if jobs <= 1:
        for ch in todo:
            left = None if budget is None else budget - (time.monotonic() - started)
            if left is not None and left < 30:
                done(ch, {"failed": f"not run: the time budget of {budget:.0f} s was spent"})
                continue
            cell_limit = int(timeout if left is None else min(timeout, left))
            done(ch, _execute_job((str(ch.path), str(executed_path(ch, out)), backend, cell_limit)))
    else:
        args = [(str(ch.path), str(executed_path(ch, out)), backend, timeout) for ch in todo]
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
            for ch, result in zip(todo, pool.map(_execute_job, args)):
                done(ch, result)
    return prov


def import_run(tgz: pathlib.Path, *, allow_cpu: bool = False) -> dict:
    """Unpack ``lane/executed/`` of a GPU lane's lane.tgz into site/executed/ (replacing what is there)."""
    if not tgz.is_file():
        raise SystemExit(f"{tgz}: no such file (the lane.tgz that `sh scripts/gpu_lane.sh OUTDIR execute` wrote)")
    with tarfile.open(tgz) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and "/executed/" in f"/{m.name}"]
        files = {pathlib.PurePosixPath(m.name).name: tar.extractfile(m).read() for m in members}
    if "provenance.json" not in files:
        raise SystemExit(f"{tgz}: no executed/provenance.json inside; was it made by `gpu_lane.sh OUTDIR execute`?")
    prov = json.loads(files["provenance.json"])
    if prov.get("backend") != "gpu" and not allow_cpu:
        raise SystemExit(f"{tgz}: these copies ran on the {prov.get('backend')!r} backend, not a GPU "
                         "(pass --allow-cpu to import them anyway)")
    failed = {k: v["failed"] for k, v in prov.get("chapters", {}).items() if "failed" in v}
    for name in files:
        if not (name == "provenance.json" or name.endswith(SUFFIX)):
            raise SystemExit(f"{tgz}: unexpected file executed/{name}")
    for old in [*EXECUTED.glob(f"*{SUFFIX}"), EXECUTED / "provenance.json"]:
        old.unlink(missing_ok=True)
    EXECUTED.mkdir(parents=True, exist_ok=True)
    import nbformat

    for name, data in files.items():
        if name.endswith(SUFFIX):  # copies made before the lane scrubbed every machine path: scrub them here
            nb = nbformat.reads(data.decode("utf-8"), as_version=4)
            _relative_paths(nb)
            data = nbformat.writes(nb).encode("utf-8")
        (EXECUTED / name).write_bytes(data)
    print(f"imported {len(files) - 1} executed chapters from run {prov.get('run')} on {prov.get('device')} "
          f"into {EXECUTED.relative_to(ROOT)}/")
    for k, v in failed.items():
        print(f"  {k}: FAILED on that machine ({v[:200]}); its page will be executed on the CPU at build time")
    return prov


# --- chapter pages -------------------------------------------------------------------------------------


def _run_line(prov: dict) -> str:
    if prov.get("backend") == "gpu":
        bits = [f"**{prov.get('device', '?')}**", f"driver {prov.get('driver', '?')}"]
    else:
        bits = [f"**the {prov.get('backend', '?')} backend (no GPU)**"]
    bits += [f"numba-cuda {prov.get('numba_cuda', '?')}", f"date {str(prov.get('date', '?'))[:10]}",
             f"run id `{prov.get('run', '?')}`"]
    return ", ".join(bits)


def _banner(kind: str, title: str, body: str):
    import nbformat

    cell = nbformat.v4.new_markdown_cell(f"```{{admonition}} {title}\n:class: {kind} run-banner\n\n{body}\n```")
    cell.metadata["site_banner"] = True
    return cell


def _with_banner(nb, cell):
    """Put the banner right under the page title: split the title's cell after its '# ' line."""
    import nbformat

    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown" and c.source.lstrip().startswith("# "):
            title, _, rest = c.source.lstrip().partition("\n")
            c.source = title
            nb.cells[i + 1:i + 1] = [cell] + ([nbformat.v4.new_markdown_cell(rest.lstrip("\n"))] if rest.strip() else [])
            return nb
    nb.cells.insert(0, cell)
    return nb


LIVE = ("To run it yourself: `make lab` opens the course in JupyterLab (no GPU needed; kernels then run on the "
        "CPU engine), then open `notebooks/{file}`.")


def _merged(clean, done):
    """The clean notebook's cells with the executed copy's outputs (their code cells are the same)."""
    import copy

    page = copy.deepcopy(clean)
    outputs = [c for c in done.cells if c.cell_type == "code"]
    for cell, run in zip((c for c in page.cells if c.cell_type == "code"), outputs):
        cell.outputs = run.get("outputs", [])
        cell.execution_count = run.get("execution_count")
    if "widgets" in done.metadata:
        page.metadata["widgets"] = done.metadata["widgets"]
    return page


def chapter_page(ch, prov: dict, stale: str = "execute", cache: pathlib.Path = BUILD / "site-cache", why=None):
    """(notebook for the page, one-word origin): 'recorded' (executed copy), 'cpu-now' or 'stale-kept'.

    ``why``: the chapter's :func:`staleness`, None when its executed copy is up to date.
    """
    clean = read_nb(ch.path)
    chap = prov.get("chapters", {}).get(stem(ch), {})
    if why is None and "failed" not in chap:
        page = _merged(clean, read_nb(executed_path(ch)))
        if prov.get("backend") == "gpu":
            kind, title = "tip", f"Executed on {prov.get('device', 'a GPU')}"
            body = (f"This page shows the outputs of one run of `notebooks/{ch.file}` on {_run_line(prov)} "
                    "(see [the run](run.md)). Timings on it are real GPU timings of that run.")
        else:
            kind, title = "warning", "Executed on the CPU backend (no GPU): waiting for the H200 run"
            body = (f"This page shows one run of `notebooks/{ch.file}` on {_run_line(prov)}: kernels ran on the "
                    "course's CPU engine, so counts come from the tracer and every GPU figure is a *recorded* H200 "
                    "measurement read from `data/`, never CPU time. The GPU lane replaces this copy with an H200 run.")
        if chap.get("error_cells"):
            body += f"\n\nCode cells that raised an error in that run (counted from 0): {chap['error_cells']}."
        return _with_banner(page, _banner(kind, title, body)), "recorded"
    if "failed" in chap:
        why = f"run {prov.get('run')} could not execute it: {chap['failed'][:300]}"
    if stale == "keep":
        path = executed_path(ch)
        page = read_nb(path) if path.is_file() else clean
        made = f" (run on {_run_line(prov)})" if path.is_file() and prov else ""
        body = (f"The stored outputs{made} do not match `notebooks/{ch.file}` as it is now: {why}. This quick "
                "build shows them as they are (`make site` executes the chapter on the CPU instead).")
        return _with_banner(page, _banner("danger", "Outputs out of date", body)), "stale-kept"
    key = hashlib.sha256(ch.path.read_bytes()).hexdigest()[:16]
    cached = cache / f"{stem(ch)}-{key}{SUFFIX}"
    if not cached.is_file():
        print(f"  {ch.file}: executing on the CPU ({why})", flush=True)
        result = execute_notebook(ch.path, cached, backend="cpu", timeout=900)
        if result["error_cells"]:
            print(f"  {ch.file}: cells with errors: {result['error_cells']}", flush=True)
    page = _merged(clean, read_nb(cached))
    import importlib.metadata

    when = time.strftime("%Y-%m-%d", time.gmtime(cached.stat().st_mtime))
    body = (f"The stored run does not cover `notebooks/{ch.file}` as it is now ({why}), so this page was executed on the "
            f"**CPU backend** when the site was built ({when}, numba-cuda {importlib.metadata.version('numba-cuda')}, "
            "no GPU): counts come from the tracer and GPU figures are recorded "
            "H200 measurements from `data/`; nothing on this page was timed on a GPU. The next GPU lane run "
            "replaces it with an H200 execution.")
    return _with_banner(page, _banner("warning", "Executed on the CPU at build time", body)), \
        "cpu-now"


# --- generated pages -----------------------------------------------------------------------------------


def _md_cell(text) -> str:
    return "" if text is None else html.escape(str(text)).replace("|", "&#124;").replace("\n", " ")


def md_table(head, rows) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def chapter_table(with_links: bool = True) -> str:
    from course.chapters import CHAPTERS

    rows = []
    for ch in CHAPTERS:
        name = f"[{ch.title}]({stem(ch)}.ipynb)" if (with_links and ch.exists) else _md_cell(ch.title)
        rows.append((f"{ch.number:02d}", name, ch.title_zh, ch.seeds))
    lines = ["| # | chapter | 章节 | seed sections |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {_md_cell(c)} | {_md_cell(d)} |" for a, b, c, d in rows]
    return "\n".join(lines)


def glossary_table() -> str:
    from course.glossary import TERMS

    return md_table(("term", "术语", "definition", "chapter"),
                    [(t.en, t.zh, t.definition, f"{t.chapter:02d}") for t in sorted(TERMS, key=lambda t: t.chapter)])


def claims_table() -> str:
    from course.measure.claims import source

    claims = json.loads((ROOT / "data" / "claims.json").read_text())
    counts = {}
    for c in claims:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    table = md_table(("id", "seed §", "claim (原文)", "measured", "verdict", "evidence", "note"),
                     [(c["id"], source(c), c["claim"], c.get("measured", ""),
                       c["verdict"], c.get("evidence", ""), c.get("note", "")) for c in claims])
    return f"{len(claims)} claims: {summary}.\n\n{table}"


def run_page(prov: dict, origins: dict) -> str:
    keys = ("run", "date", "backend", "device", "driver", "cuda_driver_api", "compute_capability", "sm_count",
            "numba", "numba_cuda", "numpy", "cupy", "python", "tool")
    facts = md_table(("field", "value"), [(k, prov[k]) for k in keys if prov.get(k) is not None]) if prov else \
        "No executed copies are stored yet: every chapter page was executed on the CPU at build time."
    rows = []
    for ch in chapters():
        c = prov.get("chapters", {}).get(stem(ch), {})
        state = c.get("failed") or (f"errors in code cells {c['error_cells']}" if c.get("error_cells") else
                                    ("ok" if c else "not in this run"))
        rows.append((stem(ch), c.get("seconds", ""), state, origins.get(stem(ch), "")))
    table = md_table(("chapter", "seconds", "in the run", "this page built from"), rows)
    return facts + "\n\n" + table


def _best(records, key, exclude):
    """The record with the highest ``key`` among the largest problem size, and its reference records
    (same size and dtype, variants listed in ``exclude``), as {variant: record}."""
    size = max((tuple(r["size"]) for r in records), key=math.prod)
    cands = [r for r in records if tuple(r["size"]) == size and r.get(key)
             and not any(r["variant"].startswith(e) for e in exclude)]
    if not cands:
        return None, {}
    best = max(cands, key=lambda r: r[key])
    refs = {r["variant"]: r for r in records
            if tuple(r["size"]) == size and r["dtype"] == best["dtype"] and r["variant"] in exclude and r.get(key)}
    return best, refs


def headline_table() -> str:
    """The measured headline results, computed from the recorded H200 runs in data/."""
    from course.measure import measurements as M

    def rec(r):
        return f"`data/measurements/{r['benchmark']}.json`, run `{r['run']}` ({r['device']}, {r['date'][:10]})"

    def size(r):
        return "×".join(map(str, r["size"])) + f" {r['dtype']}"

    rows = []
    best, refs = _best(M.latest_run(M.load("transpose")), "gbps", ("memcpy", "cupy", "torch", "numba_copy"))
    if best and "memcpy" in refs:
        vs = f", {best['gbps'] / refs['cupy']['gbps']:.2f}× CuPy's transpose" if "cupy" in refs else ""
        rows.append((f"best transpose, {size(best)}", f"{best['gbps']:.0f} GB/s (`{best['variant']}`) = "
                     f"{best['gbps'] / refs['memcpy']['gbps']:.2f} of the device copy{vs}", rec(best)))
    best, refs = _best(M.latest_run(M.load("reduction")), "gbps", ("memcpy", "cupy"))
    if best and "memcpy" in refs:
        vs = f", {best['gbps'] / refs['cupy']['gbps']:.2f}× `cupy.sum`" if "cupy" in refs else ""
        rows.append((f"best reduction, {size(best)}", f"{best['gbps']:.0f} GB/s (`{best['variant']}`) = "
                     f"{best['gbps'] / refs['memcpy']['gbps']:.2f}× the copy's GB/s{vs}", rec(best)))
    best, refs = _best(M.latest_run(M.load("matmul")), "tflops", ("cublas", "torch_fp32", "torch_tf32"))
    if best and "cublas" in refs:
        rows.append((f"best fp32 matmul, {size(best)}", f"{best['tflops']:.1f} TFLOP/s (`{best['variant']}`) = "
                     f"{best['tflops'] / refs['cublas']['tflops']:.2f} of cuBLAS ({refs['cublas']['tflops']:.1f})",
                     rec(best)))
    tv = json.loads((ROOT / "data" / "tracer_validation.json").read_text())
    s, p = tv.get("summary", {}), tv.get("provenance", {})
    rows.append(("tracer vs Nsight Compute", f"{s.get('all_equal')} of {s.get('compared')} kernel launches equal on "
                 "every count", f"`data/tracer_validation.json` ({p.get('device', '?')}, {str(p.get('date', '?'))[:10]}); "
                 "[the table](tracer_validation.md)"))
    out = ["| what | result | record |", "|---|---|---|"]
    out += [f"| {_md_cell(a)} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out)


def _fill(template: str, values: dict) -> str:
    for k, v in values.items():
        template = template.replace("{{ " + k + " }}", v)
    if "{{ " in template:
        raise SystemExit(f"site/pages: unfilled placeholder near {template[template.index('{{ '):][:40]!r}")
    return template


def _write_if_changed(path: pathlib.Path, text: str) -> None:
    """Keep the file's time when nothing changed, so that Sphinx reads only the pages that did."""
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _site_links(nb, files) -> None:
    """HTML outputs link chapters by notebook file (course.chapters.ChapterMap): point them at the pages."""
    pattern = re.compile(r'href="(\d\d_[a-z0-9_]+)\.ipynb"')

    def fix(m):
        return f'href="{m[1]}.html"' if f"{m[1]}.ipynb" in files else m[0]

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text/html" in data:
                text = data["text/html"]
                data["text/html"] = pattern.sub(fix, "".join(text) if isinstance(text, list) else text)


def assemble(src: pathlib.Path, *, stale: str = "execute", numbers=None) -> dict:
    """Write the Sphinx sources into ``src``; returns {notebook stem: (origin, why stale or None)}."""
    import nbformat

    src.mkdir(parents=True, exist_ok=True)
    prov = load_provenance()
    origins, outdated = {}, stale_chapters()  # one look at notebooks/: other pages must agree with it
    todo = [ch for ch in chapters() if numbers is None or ch.number in numbers]
    for ch in todo:
        page, origins[stem(ch)] = chapter_page(ch, prov, stale, why=outdated.get(stem(ch)))
        _site_links(page, {c.file for c in todo})
        _write_if_changed(src / ch.file, nbformat.writes(page))
    keep = {ch.file for ch in todo} | {p.name for p in PAGES.glob("*.md")}
    for old in src.iterdir():  # a chapter dropped from the list, or left out of this build
        if old.is_file() and old.name not in keep:
            old.unlink()
    values = {
        "chapter_table": chapter_table(),
        "chapter_toctree": "\n".join(f"{stem(ch)}" for ch in todo),
        "glossary_table": glossary_table(),
        "claims_table": claims_table(),
        "headline_table": headline_table(),
        "run_table": run_page(prov, origins),
        "stale_list": "\n".join(f"- `{k}`: {v}" for k, v in outdated.items()) or "- none",
        "tracer_validation": (ROOT / "docs" / "tracer_validation.md").read_text(encoding="utf-8").split("\n", 1)[1],
        "run_summary": _run_line(prov) if prov else "no stored run (every chapter executed on the CPU at build time)",
    }
    for page in PAGES.glob("*.md"):
        _write_if_changed(src / page.name, _fill(page.read_text(encoding="utf-8"), values))
    return {k: (v, outdated.get(k)) for k, v in origins.items()}


def build(out: pathlib.Path = BUILD / "site", *, stale: str = "execute", numbers=None, quiet: bool = True,
          src: pathlib.Path | None = None) -> dict:
    """Assemble the sources (default build/site-src/) and run Sphinx into ``out``; {notebook stem: origin}."""
    src = src or BUILD / ("site-src" if numbers is None else "site-src-part")
    started = time.monotonic()
    origins = assemble(src, stale=stale, numbers=numbers)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(SITE), "-d", str(src.parent / (src.name + "-doctrees")),
           "--keep-going", "-W", str(src), str(out)]
    if quiet:
        cmd.insert(3, "-q")
    subprocess.run(cmd, check=True, cwd=ROOT)
    counts = {o: sum(1 for v, _ in origins.values() if v == o) for o in sorted({v for v, _ in origins.values()})}
    print(f"site built in {time.monotonic() - started:.0f} s: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}"
          f"/index.html; chapter pages: {counts}")
    return origins


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="site/sitetool.py", description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("execute", help="execute the chapters into a folder (the GPU lane's `execute` step)")
    e.add_argument("--out", type=pathlib.Path, required=True)
    e.add_argument("--jobs", type=int, default=1)
    e.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    e.add_argument("--chapters", type=int, nargs="*")
    e.add_argument("--budget", type=float, help="seconds for the whole run (chapters not started by then are skipped)")
    i = sub.add_parser("import", help="unpack a GPU lane's lane.tgz into site/executed/")
    i.add_argument("tgz", type=pathlib.Path)
    i.add_argument("--allow-cpu", action="store_true")
    b = sub.add_parser("build", help="build the website (make site)")
    b.add_argument("--out", type=pathlib.Path, default=BUILD / "site")
    b.add_argument("--stale", choices=("execute", "keep"), default="execute")
    b.add_argument("--chapters", type=int, nargs="*")
    sub.add_parser("stale", help="list chapters whose executed copy is out of date")
    a = ap.parse_args(argv)
    if a.cmd == "execute":
        prov = execute(a.out, numbers=a.chapters, jobs=a.jobs, timeout=a.timeout, budget=a.budget)
        bad = [k for k, v in prov["chapters"].items() if "failed" in v]
        return 1 if bad else 0
    if a.cmd == "import":
        import_run(a.tgz, allow_cpu=a.allow_cpu)
        return 0
    if a.cmd == "build":
        build(a.out, stale=a.stale, numbers=a.chapters)
        return 0
    stale = stale_chapters()
    for k, v in stale.items():
        print(f"{k}: {v}")
    print(f"{len(stale)} of {len(chapters())} chapter pages stale")
    return 0


if __name__ == "__main__":
    sys.exit(main())
