"""Regenerate fonts/course-cjk.woff2: Noto Sans CJK SC cut down to the Chinese characters the course uses.

    python scripts/subset_cjk_font.py [--font NotoSansCJK-Regular.ttc] [--index 2]

Readers without a system CJK font (a fresh Linux, a container) would see Chinese terms as empty boxes;
the site (site/_static/course.css) and the lab (jupyter/custom/custom.css) fall back to this subset,
which holds exactly the CJK characters found in :data:`SOURCES`.  ``tests/test_fonts.py`` fails when a
source gains a character the subset lacks: run this script again and commit the new font.

Needs fontTools and brotli (``pip install fonttools brotli``; not needed by the course or its tests) and
the OFL-licensed Noto Sans CJK collection (Debian: ``apt-get install fonts-noto-cjk``; face 2 of the
.ttc is the Simplified Chinese one).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "fonts" / "course-cjk.woff2"
DEBIAN_FONT = pathlib.Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
SC_INDEX = 2  # JP, KR, SC, TC, HK, then the Mono faces

# Every text the lab or the site can show: chapters, exercises, the package (glossary, chapter titles,
# messages), the site's pages and executed chapters, the docs it includes, the recorded data (claims quote
# the articles).
SOURCES = ("notebooks/*.ipynb", "exercises/*.ipynb", "solutions/*.ipynb", "course/**/*.py", "site/pages/*.md",
           "site/*.py", "site/executed/*.json", "docs/*.md", "data/**/*.json", "README.md")
# CJK symbols and punctuation, Extension A, the unified ideographs, compatibility ideographs, full-width forms
CJK = re.compile("[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
UNICODE_RANGE = "U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+FF00-FFEF"  # the same, for @font-face


def used_characters(root: pathlib.Path = ROOT) -> set:
    """The CJK characters of every file in :data:`SOURCES` (JSON read as text, escapes decoded)."""
    found = set()
    for pattern in SOURCES:
        for path in sorted(root.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            if path.suffix in (".ipynb", ".json"):
                text = json.dumps(json.loads(text), ensure_ascii=False)
            found.update(CJK.findall(text))
    return found


def subset(font: pathlib.Path, index: int, chars: set, out: pathlib.Path) -> None:
    """Write the woff2 subset of face ``index`` of ``font`` holding ``chars`` (and its name table, licence included)."""
    from fontTools import subset as fs

    options = fs.Options()
    options.flavor = "woff2"
    options.font_number = index
    options.name_IDs = ["*"]  # keep the copyright (0) and the licence (13, 14) inside the font
    options.name_languages = ["*"]
    options.hinting = False  # screens of today render CJK outlines well without it; a third smaller
    options.desubroutinize = True  # compresses better under brotli
    options.layout_features = ["*"]
    f = fs.load_font(str(font), options)
    s = fs.Subsetter(options)
    s.populate(unicodes=sorted(ord(c) for c in chars))
    s.subset(f)
    out.parent.mkdir(parents=True, exist_ok=True)
    fs.save_font(f, str(out), options)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/subset_cjk_font.py", description=__doc__.splitlines()[0])
    p.add_argument("--font", type=pathlib.Path, default=DEBIAN_FONT, help="Noto Sans CJK .ttc or an SC .otf")
    p.add_argument("--index", type=int, default=SC_INDEX, help="face in a .ttc (2: Noto Sans CJK SC)")
    p.add_argument("--out", type=pathlib.Path, default=OUT)
    a = p.parse_args(argv)
    if not a.font.is_file():
        sys.exit(f"{a.font} not found: install Debian's fonts-noto-cjk (apt-get install fonts-noto-cjk) or pass "
                 "--font with Noto Sans CJK SC (OFL) from github.com/notofonts/noto-cjk")
    chars = used_characters()
    subset(a.font, a.index, chars, a.out)
    print(f"{a.out.relative_to(ROOT) if a.out.is_relative_to(ROOT) else a.out}: {len(chars)} characters, "
          f"{a.out.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
