"""The learner's own copy of the course's notebooks: ``python course/mywork.py [FOLDER]`` (``make lab`` runs it).

``make lab`` opens JupyterLab in ``my-work/`` (git-ignored), not in the checkout: the chapters
(``notebooks/``) and the exercise notebooks (``exercises/``) are copied there the first time, and a later
run copies only the files that are not there yet, so a learner's edits are never overwritten and a
``git pull`` of the course never collides with them.  A notebook the course changed since it was copied
is named, with how to get the new version (move the old copy aside and run ``make lab`` again).
``solutions/`` is not copied: the learner's lab does not show it (``make lab-instructor`` opens the whole
checkout).
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
COPIED = ("notebooks", "exercises")  # what a learner works in; solutions/ stays with the instructor


def prepare(work: pathlib.Path, source: pathlib.Path = ROOT) -> tuple[list, list]:
    """Copy every notebook of COPIED that ``work`` lacks; return (copied, changed in the course since copied)."""
    copied, changed = [], []
    for folder in COPIED:
        for src in sorted((source / folder).glob("*.ipynb")):
            dst = work / folder / src.name
            if not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
                copied.append(dst)
            elif src.stat().st_mtime > dst.stat().st_mtime and src.read_bytes() != dst.read_bytes():
                changed.append(dst)
    return copied, changed


def main(argv=None) -> int:
    """``python course/mywork.py [FOLDER]`` (default ``my-work`` in the checkout)."""
    p = argparse.ArgumentParser(prog="python course/mywork.py", description=__doc__.splitlines()[0])
    p.add_argument("folder", nargs="?", default=str(ROOT / "my-work"))
    work = pathlib.Path(p.parse_args(argv).folder).resolve()
    copied, changed = prepare(work)
    if copied:
        print(f"copied {len(copied)} notebook(s) into {work} (your copy: edit freely, git pull leaves it alone)")
    for path in changed:
        rel = path.relative_to(work)
        print(f"the course updated {rel} after you copied it; yours is kept. For the new version, rename yours "
              f"(e.g. {rel.with_name(rel.stem + '-mine.ipynb')}) and run make lab again.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
