"""Source sites: (code object, bytecode offset of the owning instruction, part, calling sites) as small ints."""

from __future__ import annotations

import dis
import linecache

# Source sites: (code object, bytecode offset of the owning instruction, part, calling sites)


_owners: dict = {}


def owner_table(code):
    """For every code unit of ``code``: the offset of the instruction it belongs to (inline caches included)."""
    table = _owners.get(code)
    if table is None:
        n = len(code.co_code) // 2
        table = [0] * (n + 1)
        offs = [ins.offset for ins in dis.get_instructions(code)] + [2 * n]
        for a, b in zip(offs, offs[1:]):
            for unit in range(a // 2, b // 2):
                table[unit] = a
        _owners[code] = table
    return table


_lines: dict = {}


def line_of(code, offset):
    """The source line of the instruction at ``offset`` in ``code``."""
    key = (code, offset)
    line = _lines.get(key)
    if line is None:
        line = code.co_firstlineno
        for start, end, ln in code.co_lines():
            if start <= offset < end and ln is not None:
                line = ln
                break
        _lines[key] = line
    return line


def source_line(code, line):
    return linecache.getline(code.co_filename, line).strip()


# Sites are small ints (hashing a code object is slow); SITES[sid] = (code, offset, callers, part).
SITES: list = []
_SITE_IDS: dict = {}  # (id(code) or (code, callers), instruction offset, part) -> sid


def site_id(ckey, lasti, part=0):
    """The site id of an access made at ``f_lasti`` in code ``ckey`` (inline caches mapped to their instruction)."""
    code, callers = (ckey, ()) if ckey.__class__ is not tuple else ckey
    off = owner_table(code)[lasti >> 1]
    k = (id(code) if not callers else ckey, off, part)
    sid = _SITE_IDS.get(k)
    if sid is None:
        sid = _SITE_IDS[k] = len(SITES)
        SITES.append((code, off, callers, part))
    return sid


def site_line(sid):
    """The source line of a site (its innermost frame)."""
    code, off = SITES[sid][0], SITES[sid][1]
    return line_of(code, off)


def site_code(sid):
    """The code object a site belongs to."""
    return SITES[sid][0]
