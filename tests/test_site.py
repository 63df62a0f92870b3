"""The course website (``make site``): built once per test session, then read in headless Chromium.

The session builds the whole site into a temporary folder with ``--stale keep`` (a chapter whose
notebook changed since its executed copy shows the old outputs under a warning instead of being
executed again: that keeps this build to Sphinx alone).  A local HTTP server serves it; every request
the browser makes is intercepted, and any that leaves the site is recorded and refused.  Chromium is
Debian's (``sh scripts/ensure-chromium.sh``), never ``playwright install``.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import importlib.util
import json
import pathlib
import re
import tarfile
import threading
import types
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# site/ is not a package (and must not be one: `site` is a standard module): load the tool from its file
_spec = importlib.util.spec_from_file_location("sitetool", ROOT / "site" / "sitetool.py")
sitetool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sitetool)

from test_browser import CHROMIUM, CHROMIUM_ARGS, _require_browser  # noqa: E402

pytestmark = pytest.mark.timeout(300)

REFERENCE_PAGES = ("index", "chapters", "glossary", "claims", "tracer_validation", "run")


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("site")
    out = base / "out"
    origins = sitetool.build(out, stale="keep", src=base / "src")
    return {"out": out, "origins": origins}


@pytest.fixture(scope="module")
def served(built):
    """The built site over HTTP on 127.0.0.1 (a free port), for the browser."""
    handler = functools.partial(_QuietHandler, directory=str(built["out"]))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _open(browser, base: str, path: str):
    """A page loaded from the site with every outside request refused; (page, outside requests, console errors)."""
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    outside, errors = [], []

    def route(r):
        if r.request.url.startswith(base) or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.goto(base + path, wait_until="load")
    return page, outside, errors


# --- the build -----------------------------------------------------------------------------------------


def test_every_chapter_and_reference_page_is_built(built):
    out = built["out"]
    chapters = sitetool.chapters()
    assert [c.number for c in chapters][:11] == list(range(11)), "chapters 00-10 come from course/chapters.py"
    for ch in chapters:
        page = out / f"{sitetool.stem(ch)}.html"
        assert page.is_file(), f"{page.name} missing from the site"
        text = page.read_text()
        assert "run-banner" in text, f"{page.name}: no banner saying which machine ran it"
    for name in REFERENCE_PAGES:
        assert (out / f"{name}.html").is_file(), name
    assert set(built["origins"]) == {sitetool.stem(ch) for ch in chapters}


def test_each_page_names_the_machine_that_ran_it(built):
    """The banner carries the stored run's device line and run id (or says the page is out of date)."""
    prov = sitetool.load_provenance()
    assert prov, "site/executed/provenance.json is missing: run `python site/sitetool.py execute --out site/executed`"
    for key in ("run", "date", "backend", "device", "driver", "numba_cuda"):
        assert prov.get(key), f"provenance.json lacks {key}"
    for ch in sitetool.chapters():
        text = (built["out"] / f"{sitetool.stem(ch)}.html").read_text()
        if built["origins"][sitetool.stem(ch)][0] == "recorded":
            assert prov["run"] in text and prov["numba_cuda"] in text, sitetool.stem(ch)
            assert ("Executed on the CPU backend" in text) == (prov["backend"] != "gpu"), sitetool.stem(ch)
        else:
            assert "Outputs out of date" in text, sitetool.stem(ch)


def test_stale_pages_are_listed(built, capsys):
    """Reports (never fails on) chapters whose notebook changed since its executed copy."""
    stale = {k: why for k, (origin, why) in built["origins"].items() if why}
    with capsys.disabled():
        print(f"\nstale site pages: {len(stale)} of {len(sitetool.chapters())}"
              + "".join(f"\n  {k}: {v}" for k, v in stale.items()))
    assert {k for k, (origin, _) in built["origins"].items() if origin != "recorded"} == set(stale)
    run = (built["out"] / "run.html").read_text()
    stale_part = run.split('id="stale-pages"', 1)[1]
    for k in stale:
        assert k in stale_part, k
    if not stale:
        assert "none" in stale_part


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "script", "link"):
                self.hrefs.append(a[key])


def test_internal_links_resolve(built):
    out = built["out"]
    parsed = {}
    for page in out.glob("*.html"):
        p = _Links()
        p.feed(page.read_text())
        parsed[page.name] = p
    broken = []
    for name, p in parsed.items():
        for href in p.hrefs:
            url = urllib.parse.urlparse(href)
            if url.scheme in ("http", "https", "mailto", "data", "javascript"):
                continue
            target = (out / name).parent / urllib.parse.unquote(url.path) if url.path else out / name
            if not target.exists():
                broken.append(f"{name}: {href}")
            elif url.fragment and target.suffix == ".html" and target.name in parsed \
                    and url.fragment not in parsed[target.name].ids:
                broken.append(f"{name}: {href} (no id {url.fragment!r})")
    assert not broken, "\n".join(broken[:40])


def test_landing_page_reads_its_figures_from_data(built):
    text = (built["out"] / "index.html").read_text()
    from course.measure import measurements as M

    t = M.latest_run(M.load("transpose"))
    assert t[0]["run"] in text, "the transpose headline names its run"
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text))  # the code block is highlighted word by word
    assert "make lab" in words and "make test" in words
    for ch in sitetool.chapters():
        assert f'href="{sitetool.stem(ch)}.html"' in text, ch.file


# --- the browser ---------------------------------------------------------------------------------------


def _pages():
    return [f"{n}.html" for n in REFERENCE_PAGES] + [f"{sitetool.stem(c)}.html" for c in sitetool.chapters()]


def test_pages_in_chromium_stay_inside_the_site(served, browser):
    problems = []
    for path in _pages():
        page, outside, errors = _open(browser, served, path)
        try:
            images = page.evaluate("""() => [...document.images].map(i => [i.getAttribute('src'),
                                     i.complete && i.naturalWidth > 0])""")
            bad = [src for src, ok in images if not ok]
            if outside:
                problems.append(f"{path}: requests outside the site: {outside}")
            if errors:
                problems.append(f"{path}: console errors: {errors}")
            if bad:
                problems.append(f"{path}: images that did not load: {bad}")
            if path.startswith(("05_", "07_")):
                assert images, f"{path} shows no picture"  # plots arrive as image files
            if path == "index.html":  # Chinese terms: the reader's CJK font, else the site's own subset font
                fonts = page.evaluate("getComputedStyle(document.querySelector('h1')).fontFamily")
                assert "Noto Sans CJK SC" in fonts and "Microsoft YaHei" in fonts and "Course CJK" in fonts, fonts
            if path == "glossary.html":  # the site's font loads (from the site) and renders a glossary term
                loaded = page.evaluate("""async () => (await document.fonts.load("16px 'Course CJK'", "存储体冲突"))
                                          .map(f => f.status)""")
                assert loaded == ["loaded"], f"glossary.html: the subset font did not load: {loaded}"
        finally:
            page.close()
    assert not problems, "\n".join(problems)


def _saved_state(stem: str) -> dict:
    nb = json.loads((ROOT / "site" / "executed" / f"{stem}{sitetool.SUFFIX}").read_text())
    return nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]


def _tile_facts(svg: str):
    """(data-width, data-wavefronts, lane marks) of a bank-tile drawing, from its SVG text."""
    def attr(name):
        m = re.search(rf'{name}="(\d+)"', svg)
        return m and m[1]
    return attr("data-width"), attr("data-wavefronts"), len(re.findall(r'class="lane-mark"', svg))


def test_chapter_04_bank_explorer_renders_from_saved_state(served, browser):
    stem = sitetool.stem(sitetool.chapters()[4])
    # what the executed copy saved: each displayed explorer's tile drawing is the value of an HTML widget
    state, shown = _saved_state(stem), []
    nb = json.loads((ROOT / "site" / "executed" / f"{stem}{sitetool.SUFFIX}").read_text())
    todo = [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for c in nb["cells"]
            for o in c.get("outputs", []) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    while todo:  # the displayed views and everything inside them
        mid = todo.pop()
        shown.append(mid)
        todo += [c.removeprefix("IPY_MODEL_") for c in state[mid]["state"].get("children", [])]
    saved = [_tile_facts(state[m]["state"]["value"]) for m in shown
             if "bank-tile-view" in state[m]["state"].get("_dom_classes", [])]
    assert saved, "the executed copy saved no bank-explorer drawing"
    page, outside, errors = _open(browser, served, f"{stem}.html")
    try:
        page.locator(".static-widget .bank-explorer svg.bank-tile").first.wait_for(timeout=10_000)
        drawn = page.eval_on_selector_all(".static-widget .bank-explorer", """els => els.map(ex => {
            const svg = ex.querySelector('svg.bank-tile'), count = ex.querySelector('.bank-count');
            return {w: svg.dataset.width, wf: svg.dataset.wavefronts, marks: svg.querySelectorAll('rect.lane-mark').length,
                    count: count && count.dataset.wavefronts, text: count && count.textContent};
        })""")
        assert len(drawn) == len(saved), (drawn, saved)
        for d in drawn:
            assert (d["w"], d["wf"], d["marks"]) in saved, d
            assert d["marks"] > 0, "the bank picture has no lanes marked"
            assert d["count"] == d["wf"] and "bank conflict" in d["text"], d
        explorer = page.locator(".static-widget .bank-explorer").first
        # the controls show the saved values and are disabled: nothing pretends to recompute
        assert explorer.locator("input, select, button").count() > 5
        assert explorer.locator("input:enabled, select:enabled, button:enabled").count() == 0
        note = page.locator(".static-widget-note").first
        assert "Saved view" in note.inner_text() and "make lab" in note.inner_text()
        assert not outside and not errors, (outside, errors)
    finally:
        page.close()


def test_search_box_finds_a_chapter(served, browser):
    page, outside, errors = _open(browser, served, "search.html?q=coalescing")
    try:
        hits = page.locator("#search-results li")
        hits.first.wait_for(timeout=20_000)
        assert any("coalescing" in t.lower() or "03" in t for t in hits.all_inner_texts())
        assert not outside and not errors, (outside, errors)
    finally:
        page.close()


# --- the pieces, on made-up notebooks ------------------------------------------------------------------


def _nb(codes, outputs=None):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · Title\n\nIntro text.")]
    for i, c in enumerate(codes):
        cell = nbformat.v4.new_code_cell(c)
        if outputs:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=outputs[i])]
        nb.cells.append(cell)
    return nb


def test_staleness_compares_code_cells(tmp_path):
    import nbformat

    clean = tmp_path / "99_made_up.ipynb"
    ch = types.SimpleNamespace(file=clean.name, path=clean)
    nbformat.write(_nb(["x = 1", "print(x)"]), clean)
    assert sitetool.staleness(ch, tmp_path).startswith("no executed copy")
    done = _nb(["x = 1", "print(x)"], outputs=["", "1\n"])
    done.cells[0].source = "# 99 · Title\n\nThe text changed: not stale."
    sitetool.executed_path(ch, tmp_path).write_text(nbformat.writes(done))
    assert sitetool.staleness(ch, tmp_path) is None
    nbformat.write(_nb(["x = 2", "print(x)"]), clean)
    assert "code cell 0" in sitetool.staleness(ch, tmp_path)
    nbformat.write(_nb(["x = 1"]), clean)
    assert "1 code cells" in sitetool.staleness(ch, tmp_path)


def test_page_takes_text_from_the_notebook_and_outputs_from_the_run():
    clean = _nb(["x = 1", "print(x)"])
    clean.cells[0].source = "# 99 · Title\n\nNew text."
    done = _nb(["x = 1", "print(x)"], outputs=["", "1\n"])
    done.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"m": {}}}}
    page = sitetool._merged(clean, done)
    assert page.cells[0].source.endswith("New text.")
    assert page.cells[2].outputs[0]["text"] == "1\n"
    assert page.metadata["widgets"] == done.metadata["widgets"]
    assert clean.cells[2].outputs == []  # the clean notebook is left as it was
    page = sitetool._with_banner(page, sitetool._banner("tip", "Executed on X", "body"))
    assert [c.source.split("\n")[0] for c in page.cells[:3]] == ["# 99 · Title", "```{admonition} Executed on X",
                                                                  "New text."]


def test_import_refuses_a_run_that_is_not_from_a_gpu(tmp_path):
    tgz = tmp_path / "lane.tgz"
    lane = tmp_path / "lane" / "executed"
    lane.mkdir(parents=True)
    (lane / "provenance.json").write_text(json.dumps({"backend": "cpu", "run": "r"}))
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "lane", arcname="lane")
    before = sorted(p.name for p in sitetool.EXECUTED.iterdir())
    with pytest.raises(SystemExit, match="not a GPU"):
        sitetool.import_run(tgz)
    empty = tmp_path / "empty.tgz"
    with tarfile.open(empty, "w:gz") as tar:
        tar.add(tmp_path / "lane" / "executed" / "provenance.json", arcname="lane/other.json")
    with pytest.raises(SystemExit, match="no executed/provenance.json"):
        sitetool.import_run(empty)
    assert sorted(p.name for p in sitetool.EXECUTED.iterdir()) == before


def test_the_site_loads_nothing_from_a_cdn():
    """The widget drawing is the site's own file; no script or style of the site names an outside host."""
    conf = (ROOT / "site" / "conf.py").read_text()
    assert "nb_ipywidgets_js" in conf and "http" not in conf.split("nb_ipywidgets_js", 1)[1].split("\n", 1)[0]
    for f in (ROOT / "site" / "_static").iterdir():
        assert "http://" not in f.read_text() and "https://" not in f.read_text(), f


def test_a_changed_chapter_is_executed_on_the_cpu_with_its_widget_state(tmp_path):
    """The build's fallback for a stale chapter: a real nbclient run on the CPU backend, widget state kept."""
    import nbformat

    clean = tmp_path / "99_made_up.ipynb"
    nb = _nb(["import course, ipywidgets\nprint('backend', course.BACKEND, course.__file__)\nipywidgets.IntSlider(7)"])
    nbformat.write(nb, clean)
    ch = types.SimpleNamespace(file=clean.name, path=clean, number=99)
    page, origin = sitetool.chapter_page(ch, {}, "execute", cache=tmp_path / "cache", why="code cell 0 changed")
    assert origin == "cpu-now"
    outputs = page.cells[-1].outputs
    assert any("backend cpu course/__init__.py" in o.get("text", "") for o in outputs), outputs  # no machine path
    view = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    state = page.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    model = state[view[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]]
    assert model["model_name"] == "IntSliderModel" and model["state"]["value"] == 7
    assert "Executed on the CPU at build time" in page.cells[1].source and "code cell 0 changed" in page.cells[1].source
    assert list((tmp_path / "cache").glob("99_made_up-*.nb.json")), "the CPU run is cached for the next build"
