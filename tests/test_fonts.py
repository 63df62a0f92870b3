"""The CJK subset font (fonts/course-cjk.woff2) holds every Chinese character the lab and the site show.

Its character map is read here with a small WOFF2 reader (brotli and the standard library; no fontTools),
so that a new term in a chapter, the glossary or a site page fails this test until
``python scripts/subset_cjk_font.py`` has regenerated the font.
"""

from __future__ import annotations

import json
import pathlib
import re
import struct

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FONT = ROOT / "fonts" / "course-cjk.woff2"
CJK = re.compile("[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
# what the lab and the site show, as this test reads it (the script keeps its own list: both must cover these)
SHOWN = ("notebooks/*.ipynb", "exercises/*.ipynb", "solutions/*.ipynb", "course/glossary.py", "course/chapters.py",
         "course/**/*.py", "site/pages/*.md", "site/sitetool.py", "site/executed/*.nb.json", "data/claims.json")
REGENERATE = "run `python scripts/subset_cjk_font.py` (needs fontTools, brotli, fonts-noto-cjk) and commit fonts/"


def _base128(data: bytes, i: int) -> tuple:
    """WOFF2's UIntBase128 at ``data[i]``: (value, next index)."""
    value = 0
    for k in range(5):
        b = data[i + k]
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            return value, i + k + 1
    raise ValueError("UIntBase128 longer than 5 bytes")


def woff2_tables(data: bytes) -> dict:
    """{tag: table bytes as stored (transformed glyf/loca stay transformed)} of a single-font WOFF2 file."""
    assert data[:4] == b"wOF2", "not a WOFF2 file"
    flavor, num_tables, compressed = struct.unpack(">4xIxxxxH6xI", data[:24])
    assert flavor != 0x74746366, "a font collection: the course ships one face"
    i, entries = 48, []
    for _ in range(num_tables):
        flags = data[i]
        i += 1
        known = flags & 0x3F
        if known == 0x3F:
            tag, i = data[i:i + 4].decode("latin-1"), i + 4
        else:  # only the indices this reader needs; any other known table is skipped by its length alone
            tag = {0: "cmap", 10: "glyf", 11: "loca"}.get(known, f"#{known}")
        length, i = _base128(data, i)
        version = flags >> 6
        if (version == 0) == (tag in ("glyf", "loca")):  # glyf/loca: version 0 is transformed; others: not 0
            length, i = _base128(data, i)
        entries.append((tag, length))
    import brotli

    stream, tables, at = brotli.decompress(data[i:i + compressed]), {}, 0
    for tag, length in entries:  # the tables lie one after another, unpadded
        tables[tag] = stream[at:at + length]
        at += length
    assert at == len(stream), f"table lengths add up to {at}, the stream holds {len(stream)} bytes"
    return tables


def cmap_characters(cmap: bytes) -> set:
    """The characters a cmap table maps to a glyph (Unicode subtables of format 4 and 12)."""
    found = set()
    (n,) = struct.unpack(">2xH", cmap[:4])
    for k in range(n):
        platform, encoding, offset = struct.unpack(">HHI", cmap[4 + 8 * k:12 + 8 * k])
        if (platform, encoding) not in ((3, 1), (3, 10), (0, 3), (0, 4)):
            continue
        sub = cmap[offset:]
        fmt = struct.unpack(">H", sub[:2])[0]
        if fmt == 4:
            segs = struct.unpack(">H", sub[6:8])[0] // 2
            ends = struct.unpack(f">{segs}H", sub[14:14 + 2 * segs])
            base = 16 + 2 * segs
            starts = struct.unpack(f">{segs}H", sub[base:base + 2 * segs])
            deltas = struct.unpack(f">{segs}h", sub[base + 2 * segs:base + 4 * segs])
            ro_at = base + 4 * segs
            ranges = struct.unpack(f">{segs}H", sub[ro_at:ro_at + 2 * segs])
            for s, (start, end, delta, ro) in enumerate(zip(starts, ends, deltas, ranges)):
                for c in range(start, end + 1):
                    if c == 0xFFFF:
                        continue
                    if ro == 0:
                        glyph = (c + delta) & 0xFFFF
                    else:
                        where = ro_at + 2 * s + ro + 2 * (c - start)
                        glyph = struct.unpack(">H", sub[where:where + 2])[0]
                        glyph = (glyph + delta) & 0xFFFF if glyph else 0
                    if glyph:
                        found.add(chr(c))
        elif fmt == 12:
            (groups,) = struct.unpack(">12xI", sub[:16])
            for g in range(groups):
                start, end, glyph = struct.unpack(">III", sub[16 + 12 * g:28 + 12 * g])
                found.update(chr(c) for c in range(start, end + 1) if glyph + c - start)
    return found


def shown_characters() -> dict:
    """{CJK character: the first file (relative path) that shows it}."""
    first = {}
    for pattern in SHOWN:
        for path in sorted(ROOT.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            if path.suffix in (".ipynb", ".json"):
                text = json.dumps(json.loads(text), ensure_ascii=False)  # \u escapes too
            for c in CJK.findall(text):
                first.setdefault(c, str(path.relative_to(ROOT)))
    return first


@pytest.fixture(scope="module")
def font_characters() -> set:
    try:
        import brotli  # noqa: F401
    except ImportError:
        pytest.fail("The Python package `brotli` is missing (WOFF2 is brotli-compressed): "
                    ".venv/bin/pip install -e '.[dev]' installs it")
    assert FONT.is_file(), f"{FONT.relative_to(ROOT)} is missing: {REGENERATE}"
    return cmap_characters(woff2_tables(FONT.read_bytes())["cmap"])


def test_the_subset_font_holds_every_cjk_character_shown(font_characters):
    shown = shown_characters()
    assert "存" in shown and "冲" in shown, "存储体冲突 (bank conflict) is in the glossary: the scan finds nothing"
    missing = {c: f for c, f in shown.items() if c not in font_characters}
    assert not missing, (f"{len(missing)} CJK characters are not in {FONT.relative_to(ROOT)}: "
                         + ", ".join(f"{c} (first in {f})" for c, f in sorted(missing.items())[:20]) + f"; {REGENERATE}")


def test_the_subset_is_a_subset(font_characters):
    """Only what the course uses (a few hundred characters), small enough to send with every page."""
    assert "龘" not in font_characters and "A" not in font_characters, "the font is not cut down to the course's text"
    assert FONT.stat().st_size < 1_000_000, f"{FONT.stat().st_size} bytes: over the 1 MB the site allows a font"
    assert "SIL OPEN FONT LICENSE Version 1.1" in (FONT.parent / "OFL.txt").read_text(encoding="utf-8")


def test_the_lab_and_the_site_fall_back_to_it():
    """Both style sheets declare the face over the CJK ranges, name it in their font lists, and can reach it."""
    for css in (ROOT / "jupyter" / "custom" / "custom.css", ROOT / "site" / "_static" / "course.css"):
        text = css.read_text(encoding="utf-8")
        face = re.search(r"@font-face\s*{([^}]*)}", text)
        assert face and '"Course CJK"' in face[1] and 'url("course-cjk.woff2")' in face[1], css
        spans = [(int(a, 16), int(b or a, 16)) for a, b in re.findall(r"U\+([0-9A-F]+)(?:-([0-9A-F]+))?", face[1])]
        outside = [c for c in shown_characters() if not any(a <= ord(c) <= b for a, b in spans)]
        assert not outside, f"{css.name}: unicode-range leaves out {outside[:10]}"
        lists = re.findall(r"--[\w-]*font-family[\w-]*:([^;]+);", text)
        assert lists and all('"Course CJK"' in v for v in lists if "var(" not in v), (css.name, lists)
    # the site copies fonts/ into its _static/ beside course.css; the lab serves fonts/ beside custom.css
    assert '"../fonts"' in (ROOT / "site" / "conf.py").read_text()
    assert "/fonts'" in (ROOT / "Makefile").read_text() and "custom_css=True" in (ROOT / "Makefile").read_text()
