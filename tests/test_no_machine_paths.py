"""No committed file names a path of the machine that produced it, or a folder outside the repository.

A record, log, executed notebook or doc that says ``/root/out/...``, ``/work/main/...`` or
``../shared/...`` tells a reader nothing they can open, and leaks the layout of the machine that wrote
it.  Every tracked text file is scanned; the exemptions below are the few places that must name such a
path, each with its reason, matched as narrowly as possible (file and the exact text).
"""

from __future__ import annotations

import fnmatch
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: A machine path: an absolute path under a home, scratch or install folder, not inside a URL or a
#: relative path (the look-behind), or a step out of the repository into its neighbour ``shared``.
MACHINE_PATH = re.compile(r"(?<![\w.\-/:])(?:/root/|/work/|/opt/|/home/|/tmp/|/Users/|/scratch/)|\.\./shared\b")

#: (file pattern, text that may appear there, why)
EXEMPT = [
    ("scripts/gpu_lane.sh", "/tmp/site", "the GPU lane installs the carried wheels there on the lent machine: a "
     "folder the script itself creates, not a path of the machine that produced a file"),
    ("scripts/gpu/fetch-wheels.sh", "/tmp/site", "the usage line says where the GPU lane installs the wheels"),
    ("course/grading/notebook.py", "/tmp/site", "a comment explaining the GPU lane's PYTHONPATH (the folder above)"),
    ("course/measure/bench_harness.py", "``/root/…``, ``/opt/…``, ``/work/…``", "the docstring of the scrubber that removes such "
     "paths from what the benchmarks record names the prefixes it removes"),
    ("course/measure/cuda_tools.py", "/opt/nvidia/", "where Nsight Compute installs itself: a place to search for the tool"),
    ("tests/*", "/tmp/", "test inputs that name a path on purpose (a sandbox escape the grader must stop, a "
     "notebook cell's file name the compiler must shorten)"),
    ("tests/test_no_machine_paths.py", "", "this file spells out the patterns it looks for"),
]

SKIP_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".pdf", ".whl", ".tgz", ".gz", ".zip", ".woff", ".woff2",
                 ".ttf", ".cubin", ".npz", ".npy", ".pkl"}


def _git_top() -> pathlib.Path | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, capture_output=True, check=True,
                             text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return pathlib.Path(out).resolve() if out else None


def tracked_files() -> list:
    """The repository's tracked files (git), or every file outside .git/.venv/build ... when the tree is not a
    git checkout of its own (the GPU lane's copy has no .git; a folder above it may be some other repository,
    whose ``git ls-files`` would list its own files, not this tree's)."""
    if _git_top() == ROOT:
        try:
            # tracked and untracked-but-not-ignored: a copy of the working tree made for another machine (the
            # GPU lane's) may carry a .git that does not track every file it holds
            out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                 capture_output=True, check=True, timeout=60).stdout
            return [ROOT / p for p in out.decode().split("\0") if p]
        except (OSError, subprocess.SubprocessError):
            pass
    skip = {".git", ".venv", "build", "__pycache__", ".whl", "node_modules"}
    return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def _exempt(rel: str, line: str, match: str) -> bool:
    for pattern, text, _why in EXEMPT:
        if fnmatch.fnmatch(rel, pattern) and (text == "" or (text in line and match in text)):
            return True
    return False


def machine_paths(files) -> list:
    """Every (file:line, the text around it) that names a machine path and is not exempt."""
    found = []
    for path in files:
        if path.suffix.lower() in SKIP_SUFFIXES or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = path.relative_to(ROOT).as_posix()
        for n, line in enumerate(text.splitlines(), 1):
            for m in MACHINE_PATH.finditer(line):
                if not _exempt(rel, line, m.group(0)):
                    found.append(f"{rel}:{n}: ...{line[max(0, m.start() - 40):m.end() + 50].strip()}...")
    return found


def test_no_tracked_file_names_a_machine_path():
    found = machine_paths(tracked_files())
    assert not found, (f"{len(found)} machine path(s) in committed files (write paths relative to the repository, "
                       "or scrub them where a tool prints them: course.measure.bench_harness.scrub):\n  " + "\n  ".join(found[:40]))


def test_the_scanner_finds_what_it_should_and_nothing_else(tmp_path):
    cases = {
        "a.json": ('{"cmd": "python /work/main/scripts/x.py --out /root/out"}', 2),
        "b.md": ("see ../shared/gpu/README.md", 1),
        "c.log": ("========= at 0x0 in /opt/torch/lib/libtorch.so", 1),
        "d.md": ("https://example.org/opt/tmp/root/ and data/work/x and course/kernels/warps.py", 0),
        "e.txt": ("relative scripts/gpu/fetch-wheels.sh and site/executed/x", 0),
    }
    files = []
    for name, (text, _n) in cases.items():
        p = tmp_path / name
        p.write_text(text, encoding="utf-8")
        files.append(p)
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = machine_paths(files)
    finally:
        ROOT = saved
    for name, (_text, n) in cases.items():
        assert sum(f.startswith(name + ":") for f in found) == n, (name, found)


def test_every_exemption_is_still_needed():
    """An exemption that matches nothing any more is removed, so the list stays the truth."""
    files = tracked_files()
    for pattern, text, why in EXEMPT:
        if text == "":
            continue
        named = [p for p in files if fnmatch.fnmatch(p.relative_to(ROOT).as_posix(), pattern) and p.is_file()
                 and p.suffix.lower() not in SKIP_SUFFIXES]
        hits = [p for p in named if text in p.read_text(encoding="utf-8", errors="replace")]
        how = "git ls-files" if _git_top() == ROOT else f"a walk of {ROOT.name}/ (not a git checkout)"
        assert hits, (f"exemption ({pattern!r}, {text!r}) matches no file: remove it ({why}); files listed by "
                      f"{how}: {len(files)}, of them named by the pattern: "
                      f"{[p.relative_to(ROOT).as_posix() for p in named][:10]}")
