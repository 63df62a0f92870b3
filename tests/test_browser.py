"""Chapter 04 in a real browser: JupyterLab + headless Chromium (through Playwright), cells run, a control moved.

The test starts its own JupyterLab on a free loopback port with a token and throw-away config and
runtime folders, serving a *copy* of the chapter (so autosave can never write outputs into the
committed notebook), opens it in Debian's Chromium, runs all cells, and then moves the bank
explorer's padding slider: the drawing must widen from 32 to 33 to 34 columns while the conflict
count goes 32 → 1 → 2 wavefronts.  On failure it saves a screenshot and the server log to
``test-artifacts/``.  Chromium comes from ``sh scripts/ensure-chromium.sh`` (``make test`` runs it);
``playwright install`` is never used.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from course import chapters

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "test-artifacts"
NOTEBOOK = chapters.chapter(4).path

pytestmark = pytest.mark.timeout(150)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _require_browser():
    """Fail, never skip, when the browser stack is missing: CI must not pass by not looking."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium is not installed at {CHROMIUM}. Install it with `sh scripts/ensure-chromium.sh` "
                    "(it runs `apt-get install -y chromium`); `make test` does this before the tests.")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("The Python package `playwright` is missing: `.venv/bin/pip install -e '.[dev]'` installs it "
                    "(do not run `playwright install`; the test uses Debian's Chromium).")


@contextlib.contextmanager
def _serve(tmp_path, notebook: pathlib.Path):
    """A JupyterLab server of our own on 127.0.0.1, serving a copy of ``notebook``; stopped afterwards."""
    _require_browser()
    assert notebook.is_file(), f"{notebook} is missing"
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(notebook, root / notebook.name)
    config, runtime = tmp_path / "config", tmp_path / "runtime"
    # no "news" toast over the outputs
    settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(runtime),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), PYTHONPATH=str(ROOT))
    log = open(tmp_path / "jupyter.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", "--ServerApp.open_browser=False", f"--ServerApp.root_dir={root}",
         # the language server and terminals are not needed here and cost start-up time
         "--ServerApp.jpserver_extensions={'jupyter_lsp': False, 'jupyter_server_terminals': False}",
         "--allow-root"],  # CI runs as root, where JupyterLab refuses to start without it
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    server = {"base": base, "token": token, "log": tmp_path / "jupyter.log", "proc": proc}
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {proc.returncode}:\n{_tail(server['log'])}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within 30 s:\n{_tail(server['log'])}")
            time.sleep(0.25)
        print(f"server up after {time.monotonic() - deadline + 30:.1f} s")
        yield server
    finally:
        # the server and the kernels it started share the new session's process group
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        except ProcessLookupError:
            pass
        log.close()


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving a copy of chapter 04 (so autosave can never write outputs into the committed notebook)."""
    with _serve(tmp_path, NOTEBOOK) as server:
        yield server


def _tail(path: pathlib.Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def _state(page) -> dict:
    """What the first bank explorer shows: the counts in its summary and drawing."""
    return page.evaluate("""() => {
        const ex = document.querySelector('.bank-explorer');
        const count = ex.querySelector('.bank-count');
        const svg = ex.querySelector('svg.bank-tile');
        const marks = [...svg.querySelectorAll('rect.lane-mark')];
        return {
            wavefronts: Number(count.dataset.wavefronts),
            text: count.textContent,
            width: Number(svg.dataset.width),
            svgWavefronts: Number(svg.dataset.wavefronts),
            marks: marks.length,
            lanes: marks.reduce((n, m) => n + m.dataset.lanes.split(' ').length, 0),
            latePasses: marks.filter(m => Number(m.dataset.pass) > 0).length,
            passRows: Number(ex.querySelector('svg.bank-passes').dataset.wavefronts),
        };
    }""")


def _expect_explorer(page, wavefronts: int, width: int):
    """Wait until the count, the tile drawing and the pass drawing all show the new state (three widget updates)."""
    from playwright.sync_api import expect

    ex = page.locator(".bank-explorer").first
    expect(ex.locator(".bank-count")).to_have_attribute("data-wavefronts", str(wavefronts), timeout=10_000)
    expect(ex.locator("svg.bank-tile")).to_have_attribute("data-width", str(width), timeout=10_000)
    expect(ex.locator("svg.bank-passes")).to_have_attribute("data-wavefronts", str(wavefronts), timeout=10_000)


def test_chapter_04_widgets_in_jupyterlab(lab):
    from playwright.sync_api import expect, sync_playwright

    started = time.monotonic()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            print(f"browser up: {time.monotonic() - started:.1f} s")
            page.goto(f"{lab['base']}/lab/tree/{NOTEBOOK.name}?token={lab['token']}")
            # Run All before the kernel is idle can leave widgets unrendered: wait for it
            expect(page.locator(".jp-StatusBar-TextItem", has_text="| Idle")).to_be_visible(timeout=40_000)
            print(f"kernel idle: {time.monotonic() - started:.1f} s")
            page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()

            count = page.locator(".bank-explorer .bank-count").first
            expect(count).to_be_visible(timeout=60_000)
            expect(count).to_have_attribute("data-wavefronts", "32", timeout=10_000)
            # every cell finished (the last one shows the timing table we wait for), and none raised
            expect(page.locator(".jp-OutputArea-output", has_text="stencil shared r=4")).to_be_visible(
                timeout=60_000)
            print(f"all cells ran: {time.monotonic() - started:.1f} s")
            errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
            assert errors.count() == 0, errors.first.inner_text()

            s = _state(page)
            assert (s["wavefronts"], s["svgWavefronts"], s["passRows"]) == (32, 32, 32), s
            assert (s["width"], s["marks"], s["lanes"], s["latePasses"]) == (32, 32, 32, 31), s
            assert "32-way bank conflict" in s["text"], s

            # move the padding slider one step right with the keyboard, as a learner would
            handle = page.locator(".bank-explorer .widget-slider", has_text="padding columns").locator(
                ".noUi-handle").first
            handle.focus()
            handle.press("ArrowRight")
            _expect_explorer(page, wavefronts=1, width=33)
            s = _state(page)
            assert (s["width"], s["marks"], s["latePasses"], s["passRows"]) == (33, 32, 0, 1), s
            assert "no bank conflict" in s["text"], s

            handle.press("ArrowRight")  # [32][34]: 2 is not coprime with 32
            _expect_explorer(page, wavefronts=2, width=34)
            s = _state(page)
            assert (s["width"], s["latePasses"], s["passRows"]) == (34, 16, 2), s
            assert "2-way bank conflict" in s["text"], s
        except BaseException:
            shot = ARTIFACTS / "browser-chapter04-failure.png"
            try:
                # JupyterLab scrolls inside its own panel: bring the explorer (if any) into the picture
                explorer = page.locator(".bank-explorer").first
                if explorer.count():
                    explorer.scroll_into_view_if_needed(timeout=2_000)
                page.screenshot(path=str(shot))
            except Exception as e:  # the screenshot must not hide the real failure
                print(f"could not save a screenshot: {e}")
            (ARTIFACTS / "browser-chapter04-jupyter.log").write_text(_tail(lab["log"], 20000))
            print(f"screenshot: {shot}\nserver log: {ARTIFACTS / 'browser-chapter04-jupyter.log'}")
            raise
        finally:
            browser.close()
    # no wall-clock assertion: on a shared 2-core machine the time says more about the neighbours than
    # about the notebook (the pytest timeout above still stops a hang)
    print(f"done: {time.monotonic() - started:.1f} s")


# what cuts a drawing off: an element between it and the cell's output area that scrolls sideways, or the
# drawing's right edge beyond the output area's
_CUT_OFF = """() => [...document.querySelectorAll('.bank-explorer')].map(ex => {
    const area = ex.closest('.jp-OutputArea-output'), edge = area.getBoundingClientRect().right;
    return [...ex.querySelectorAll('svg')].map(svg => {
        const scrolls = [];
        for (let e = svg; e !== area.parentElement; e = e.parentElement)
            if (e.scrollWidth > e.clientWidth + 1) scrolls.push(`${e.className.baseVal ?? e.className}: `
                                                              + `${e.scrollWidth} > ${e.clientWidth} px`);
        return {drawing: svg.getAttribute('class'), columns: svg.dataset.width || null, scrolls,
                beyond: Math.max(0, Math.round(svg.getBoundingClientRect().right - edge))};
    });
}).flat()"""


def test_bank_explorer_tile_shows_whole_in_a_1280px_window(tmp_path):
    """A 32-column tile (and the padded 33- and 34-column ones) shows whole, without a sideways scrollbar.

    At 1280 px with the file browser open the output area is about 850 px wide: the controls (336 px) and a
    32-column tile (732 px) side by side scrolled, cutting the tile at column 22-26.
    """
    import nbformat
    from playwright.sync_api import expect, sync_playwright

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(f"from course.show.widgets import banks\n"
                                          f"banks.bank_explorer(pattern='column', pad={pad})") for pad in (0, 1, 2)]
    path = tmp_path / "explorer_width.ipynb"
    nbformat.write(nb, path)
    ARTIFACTS.mkdir(exist_ok=True)
    with _serve(tmp_path, path) as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            page.goto(f"{lab['base']}/lab/tree/{path.name}?token={lab['token']}")
            expect(page.locator(".jp-StatusBar-TextItem", has_text="| Idle")).to_be_visible(timeout=40_000)
            page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()
            expect(page.locator(".bank-explorer .bank-count")).to_have_count(3, timeout=60_000)
            tiles = page.locator(".bank-explorer svg.bank-tile")
            assert [tiles.nth(i).get_attribute("data-width") for i in range(3)] == ["32", "33", "34"]
            page.wait_for_timeout(500)  # let the layout settle after the last widget's view
            drawings = page.evaluate(_CUT_OFF)
            assert len(drawings) == 6, drawings  # per explorer: the tile and the passes
            cut = [d for d in drawings if d["scrolls"] or d["beyond"]]
            assert not cut, f"drawings cut off at 1280 px: {cut}"
        except BaseException:
            page.locator(".bank-explorer").first.scroll_into_view_if_needed(timeout=2_000)
            page.screenshot(path=str(ARTIFACTS / "browser-explorer-width.png"))
            raise
        finally:
            browser.close()
