"""The README's first command, `make lab`, serves JupyterLab with chapter 00 open (checked in headless Chromium),
in the learner's own copy (``my-work/``, here a temporary folder through ``MY_WORK``): solutions/ is not in it,
and opening a chapter or an exercise notebook marks nothing modified.

`make lab` runs with ``VENV`` pointing at a stand-in for a virtual environment whose ``bin/`` runs the
interpreter of this test (and whose stamp is fresh, so make installs nothing): the Makefile's own lab recipe
runs, with the packages this suite runs with, and nothing is built inside the checkout.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
START = ROOT / "notebooks" / "00_start_here.ipynb"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.timeout(150)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _first_heading(path):
    import json

    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    raise AssertionError(f"{path} has no markdown heading")


def _venv_of_this_interpreter(path: pathlib.Path) -> pathlib.Path:
    """A folder laid out as the Makefile expects a virtual environment (bin/python, bin/jupyter, a fresh
    .installed stamp) that runs the interpreter of this test."""
    bin_ = path / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").symlink_to(sys.executable)
    jupyter = bin_ / "jupyter"
    jupyter.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m jupyter "$@"\n')
    jupyter.chmod(0o755)
    (path / ".installed").touch()  # newer than pyproject.toml: make has nothing to install
    return path


def test_make_lab_opens_chapter_00(tmp_path):
    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("Chromium is missing: `sh scripts/ensure-chromium.sh` installs it (make test runs it first)")
    from playwright.sync_api import sync_playwright

    before = hashlib.sha256(START.read_bytes()).hexdigest()
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    log = open(tmp_path / "lab.log", "wb")
    work = tmp_path / "my-work"
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"VENV={_venv_of_this_interpreter(tmp_path / 'venv')}", f"PORT={port}", f"MY_WORK={work}",
         f"LAB_ARGS=--no-browser --IdentityProvider.token={token} --ServerApp.open_browser=False"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail("`make lab` did not serve JupyterLab:\n" + (tmp_path / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page()
            try:
                page.goto(f"{base}/?token={token}")  # where `make lab` sends the browser
                # the notebook named on the command line opens as the active tab, with its kernel
                tab = page.locator(".lm-TabBar-tab.jp-mod-current", has_text="00_start_here.ipynb")
                tab.first.wait_for(timeout=60000)
                # … and shows the chapter itself: its first heading, read from the file
                heading = page.locator(".jp-RenderedMarkdown h1").first
                heading.wait_for(timeout=60000)
                assert _first_heading(START) in heading.inner_text()
                # Chinese in the chapter can fall back to the course's own font (jupyter/custom/custom.css):
                # it is in the content's font list and loads for a CJK term, system CJK fonts or none
                font = page.evaluate("""async () => {
                    const faces = await document.fonts.load("16px 'Course CJK'", "存储体冲突");
                    return {family: getComputedStyle(document.querySelector('.jp-RenderedMarkdown')).fontFamily,
                            loaded: faces.map(f => f.status), holds: document.fonts.check("16px 'Course CJK'", "存储体冲突")};
                }""")
                assert "Course CJK" in font["family"] and font["loaded"] == ["loaded"] and font["holds"], font
                # the kernel started and told JupyterLab its language: opening alone changed nothing
                page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=60000)
                page.wait_for_timeout(1500)
                assert page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0, \
                    "opening chapter 00 marked it modified (compare its metadata with what JupyterLab writes)"
                # and no "Would you like to get notified about official Jupyter news?" toast covers it
                toasts = page.locator(".jp-toast-message, .Toastify__toast")
                assert not any("news" in t.lower() for t in toasts.all_inner_texts()), toasts.all_inner_texts()
                # the file browser's root is the learner's copy: chapters and exercises, no solutions
                import json

                with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=10) as answer:
                    names = {item["name"] for item in json.load(answer)["content"]}
                assert {"notebooks", "exercises"} <= names and "solutions" not in names, names
                # an exercise notebook opens clean too (its language_info is the chapters')
                page.goto(f"{base}/lab/tree/exercises/07_reduction_exercises.ipynb?token={token}")
                page.locator(".lm-TabBar-tab.jp-mod-current", has_text="07_reduction_exercises.ipynb").first.wait_for(
                    timeout=60000)
                page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=60000)
                page.wait_for_timeout(1500)
                assert page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0, \
                    "opening an exercise notebook marked it modified"
            except Exception:
                (ROOT / "test-artifacts").mkdir(exist_ok=True)
                page.screenshot(path=str(ROOT / "test-artifacts" / "make_lab.png"))
                raise
            finally:
                browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    assert hashlib.sha256(START.read_bytes()).hexdigest() == before, "opening the course must not modify chapter 00"
    assert (work / "notebooks" / START.name).read_bytes() == START.read_bytes()  # the copy the lab opened
    assert not (work / "solutions").exists()


def test_my_work_copies_what_is_missing_and_never_overwrites(tmp_path, capsys):
    from course import mywork

    work = tmp_path / "my-work"
    copied, changed = mywork.prepare(work)
    chapters = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in (work / "notebooks").glob("*.ipynb")) == chapters
    assert (work / "exercises" / "07_reduction_exercises.ipynb").exists() and not (work / "solutions").exists()
    assert len(copied) == len(chapters) + len(list((ROOT / "exercises").glob("*.ipynb"))) and not changed
    mine = work / "notebooks" / START.name
    mine.write_text("the learner's edits", encoding="utf-8")
    (work / "exercises" / "07_reduction_exercises.ipynb").unlink()  # deleted: copied again
    copied, changed = mywork.prepare(work)
    assert copied == [work / "exercises" / "07_reduction_exercises.ipynb"] and not changed
    assert mine.read_text(encoding="utf-8") == "the learner's edits"
    # the course changed a notebook after the learner's last save: named, still not overwritten
    then = (ROOT / "notebooks" / START.name).stat().st_mtime - 3600  # older than the course's copy, whenever it was made
    os.utime(mine, (then, then))
    assert mywork.main([str(work)]) == 0
    out = capsys.readouterr().out
    assert f"notebooks/{START.name}" in out and "yours is kept" in out
    assert mine.read_text(encoding="utf-8") == "the learner's edits"


def test_the_gitignore_keeps_my_work_out_of_the_repository():
    assert "/my-work/" in (ROOT / ".gitignore").read_text().splitlines()
