"""Which files a submissions folder holds, and who and what each one is, for :mod:`course.grading.grade`.

nbgrader's ``<student>/<assignment>/*.ipynb`` and flat files; links followed only inside the folder;
FIFOs, devices and huge files refused with a reason; names in any bytes shown readably; deterministic
shards; submission times from nbgrader's ``timestamp.txt`` or the file.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import stat
from dataclasses import dataclass

#: The repository (the grader may run from a fresh copy of course/: it says where it came from).
ROOT = pathlib.Path(os.environ.get("COURSE_GRADE_ROOT") or pathlib.Path(__file__).resolve().parents[2])


#: Largest notebook file graded (bigger ones get a row saying so).
MAX_BYTES = 64 * 1024**2


@dataclass
class Entry:
    """One file to grade (or to refuse), found under a submissions folder."""

    path: str  # where to read it (may hold undecodable bytes, as the OS gives them)
    label: str  # its name relative to the submissions folder, printable
    student: str = ""
    assignment: str = ""
    refused: str = ""  # why it is not graded (a link out of the folder, not a file, too big)
    note: str = ""  # something about its name (not UTF-8)
    root: str = ""


def display_name(raw: str) -> tuple:
    """(printable name, note) for a file name from the OS: UTF-8, else GBK (a zip from Chinese Windows), else escaped."""
    b = os.fsencode(raw)
    try:
        return b.decode("utf-8"), ""
    except UnicodeDecodeError:
        pass
    try:
        return b.decode("gbk"), "its file name is not UTF-8 (read as GBK)"
    except UnicodeDecodeError:
        return b.decode("utf-8", "backslashreplace"), "its file name is not UTF-8 (shown escaped)"


def _assignment_names() -> list:
    """One assignment per exercise notebook, named by its chapter: ``07_reduction`` for 07_reduction_exercises.ipynb."""
    from course.exercises.build import chapter_stem

    return sorted({chapter_stem(p.name) for p in (ROOT / "exercises").glob("*.ipynb")}, key=len, reverse=True)


def roster_fields(parts: list) -> tuple:
    """(student, assignment) from a path relative to the submissions folder.

    ``<student>/<assignment>/x.ipynb`` (nbgrader), ``<student>/x.ipynb``, or a flat ``x.ipynb`` where the
    course notebook's name in the file name (``alice_05_transpose.ipynb``, ``alice_05_transpose_exercises.ipynb``)
    gives the assignment."""
    stem = pathlib.PurePath(parts[-1]).stem
    known = [a for a in _assignment_names() if a in stem]
    if len(parts) >= 3:
        return parts[0], parts[1]
    if len(parts) == 2:
        return parts[0], known[0] if known else stem
    if known:  # bob_07_reduction.ipynb, bob_07_reduction_exercises.ipynb: bob
        student = re.sub(re.escape(known[0]) + "(_exercises|_solutions)?", "", stem, count=1).strip("_- .")
        return student or stem, known[0]
    return stem, ""


def collect(paths) -> list:
    """Every notebook under ``paths`` (files, or folders searched recursively), in a stable order, as Entries.

    Links are followed only while they stay inside the folder given; a link out of it, a FIFO or device,
    or a file over :data:`MAX_BYTES` becomes an Entry with ``refused`` set (its row says why)."""
    out = []
    args = [str(p) for p in paths]
    for arg in args:
        if os.path.isdir(arg):
            root = os.path.realpath(arg)
            found = []
            for dirpath, dirnames, filenames in os.walk(arg, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if d != ".ipynb_checkpoints")
                for d in list(dirnames):
                    full = os.path.join(dirpath, d)
                    if os.path.islink(full):
                        dirnames.remove(d)
                        if not inside(os.path.realpath(full), root):
                            found.append((full, "a link to a folder outside the submissions folder; submit the "
                                                "notebooks themselves"))
                for f in filenames:
                    full = os.path.join(dirpath, f)
                    if f.endswith(".ipynb") or (os.path.islink(full) and os.path.realpath(full).endswith(".ipynb")):
                        found.append((full, ""))
            for full, why in sorted(found, key=lambda x: os.fsencode(x[0])):
                rel = os.path.relpath(full, arg)
                out.append(_entry(full, rel, root, why))
        else:
            out.append(_entry(arg, os.path.basename(arg), os.path.realpath(os.path.dirname(os.path.abspath(arg))), ""))
    if len(args) > 1:  # several folders: the label keeps which one (two may hold the same names)
        for e, arg in zip(out, _arg_of(out, args)):
            e.label = f"{display_name(os.path.basename(os.path.normpath(arg)))[0]}/{e.label}"
    seen = {}
    for e in out:  # still the same (two folders of one name, a name GBK and UTF-8 read alike): numbered
        n = seen[e.label] = seen.get(e.label, 0) + 1
        if n > 1:
            e.label = f"{e.label} ({n})"
    return out


def _arg_of(entries, args):
    res = []
    for e in entries:
        res.append(next((a for a in args if os.path.isdir(a) and os.path.realpath(a) == e.root), os.path.dirname(e.path) or "."))
    return res


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _entry(full: str, rel: str, root: str, why: str) -> Entry:
    parts = [display_name(p)[0] for p in pathlib.PurePath(rel).parts]
    label = "/".join(parts)
    note = display_name(os.path.basename(full))[1]
    student, assignment = roster_fields(parts)
    e = Entry(path=full, label=label, student=student, assignment=assignment, note=note, root=root)
    if why:
        e.refused = why
    elif os.path.islink(full) and not inside(os.path.realpath(full), root):
        e.refused = "a link to a file outside the submissions folder; submit the notebook itself"
    return e


def read_entry(e: Entry):
    """The file's bytes, or None with ``e.refused`` set (never blocks on a FIFO, never follows a link out)."""
    if e.refused:
        return None
    try:
        fd = os.open(os.path.realpath(e.path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as err:
        e.refused = f"cannot read the file ({err.strerror or err})"
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            e.refused = "not a regular file (a pipe, device or folder); submit the notebook file itself"
            return None
        if st.st_size > MAX_BYTES:
            e.refused = (f"the file is {st.st_size / 1e6:.0f} MB, over the {MAX_BYTES / 1e6:.0f} MB a notebook may be; "
                         "clear its outputs and submit again")
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def shard_of(label: str, n: int) -> int:
    """Which of ``n`` shards (1-based) grades a submission: from its label alone, so every machine agrees."""
    return int(hashlib.sha256(label.encode("utf-8", "surrogateescape")).hexdigest()[:12], 16) % n + 1


def submitted_at(e: Entry):
    """(UTC datetime, source) of a submission: nbgrader's ``timestamp.txt`` beside it, else the file's time."""
    import datetime as dt

    folder = os.path.dirname(e.path)
    ts = os.path.join(folder, "timestamp.txt")
    if os.path.isfile(ts) and not os.path.islink(ts):
        try:
            with open(ts, encoding="utf-8", errors="replace") as f:
                text = f.read(200).strip()
            return parse_time(text), "timestamp.txt"
        except (OSError, ValueError):
            pass
    try:
        return dt.datetime.fromtimestamp(os.lstat(e.path).st_mtime, dt.timezone.utc), "file time"
    except OSError:
        return None, ""


def parse_time(text: str):
    """A UTC datetime from ISO 8601 or nbgrader's ``2026-11-30 12:00:00.000000 UTC``; naive means UTC."""
    import datetime as dt

    t = text.strip().replace(" UTC", "+00:00").replace("Z", "+00:00")
    when = dt.datetime.fromisoformat(t)
    return when.replace(tzinfo=dt.timezone.utc) if when.tzinfo is None else when.astimezone(dt.timezone.utc)
