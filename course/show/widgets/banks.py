"""The bank-mapping explorer: a shared-memory tile coloured by bank, and one warp's 32 accesses on it.

Chapter 04 (notebooks/04_shared_memory.ipynb) introduces it.  Choose a tile (rows × columns, plus
padding columns), an element size (1, 2, 4, 8 or 16 bytes), an XOR swizzle on or off, and what the
32 lanes of a warp read — a row, a column, a stride, or any Python expression of ``lane`` — and see
which bank (存储体) each lane hits, how many wavefronts (passes through the banks) the access needs
and so the bank-conflict (存储体冲突) degree.

Layers, so that each can be tested alone:

- :class:`Tile` and :func:`lane_coords` turn the learner's choice into 32 byte addresses
  (pure arithmetic, no widgets);
- :func:`analyse` asks :mod:`course.trace.analysis` how the hardware serves them (the bank rules live
  there, once, for the tracer and the widgets alike);
- :func:`tile_svg`, :func:`passes_svg` and :func:`summary` draw a finished :class:`BankAccess`;
- :class:`BankExplorer` wires ipywidgets controls to those functions.

Indices are *logical*: ``tile[row][col]`` as the kernel's code writes it, with ``col`` below the
data width ``cols``.  Padding and swizzling change only where that element lives in memory, which is
the whole point of both cures.
"""

from __future__ import annotations

import ast
import html
import math
import operator
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from course.trace import analysis

WARP_SIZE = analysis.WARP_SIZE
BANKS = analysis.BANKS
BANK_BYTES = analysis.BANK_BYTES
ELEMENT_SIZES = (1, 2, 4, 8, 16)
PATTERNS = ("row", "column", "stride", "expression")
MAX_SIDE = 64  # rows and columns beyond this make a drawing nobody can read (and a slow one)
TITLE_CELLS = 2048  # hover titles on every cell only up to this many cells: they double the drawing's size

Coord = Optional[tuple]  # (row, col) of the logical tile, or None for an inactive lane


class PatternError(ValueError):
    """The access pattern cannot be evaluated; the message says what, where and what to do."""


# --- the tile: logical index -> byte address ---------------------------------------------------------


@dataclass(frozen=True)
class Tile:
    """A 2-D shared array ``tile[rows][cols + pad]`` of ``itemsize``-byte elements, optionally swizzled.

    ``swizzle`` stores logical ``tile[row][col]`` at physical column ``col ^ (row % W)``, where ``W``
    is the largest power of two (at most 32) that divides ``cols``: a permutation inside each row, so
    a row stays in its own bytes (row accesses stay contiguous) while a column is spread over banks.
    """

    rows: int = 32
    cols: int = 32
    pad: int = 0
    itemsize: int = 4
    swizzle: bool = False

    def __post_init__(self):
        for name in ("rows", "cols"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value <= MAX_SIDE:
                raise PatternError(f"tile {name} must be a whole number from 1 to {MAX_SIDE}, got {value!r}")
        if not isinstance(self.pad, int) or not 0 <= self.pad <= MAX_SIDE:
            raise PatternError(f"padding must be a whole number of columns from 0 to {MAX_SIDE}, got {self.pad!r}")
        if self.itemsize not in ELEMENT_SIZES:
            raise PatternError(f"element size must be one of {ELEMENT_SIZES} bytes, got {self.itemsize!r}")

    @property
    def width(self) -> int:
        """Columns per row in memory: data columns plus padding."""
        return self.cols + self.pad

    @property
    def swizzle_period(self) -> int:
        """W in ``col ^ (row % W)``: the largest power of two <= 32 that divides ``cols``."""
        return math.gcd(self.cols, 32)

    @property
    def nbytes(self) -> int:
        """Shared memory the tile occupies, padding included."""
        return self.rows * self.width * self.itemsize

    def declaration(self) -> str:
        """The tile as CUDA C would declare it, e.g. ``float tile[32][33]``."""
        ctype = {1: "char", 2: "short", 4: "float", 8: "double", 16: "float4"}[self.itemsize]
        return f"{ctype} tile[{self.rows}][{self.width}]"

    def physical_col(self, row: int, col: int) -> int:
        """The column in memory where logical ``tile[row][col]`` is stored."""
        return col ^ (row % self.swizzle_period) if self.swizzle else col

    def address(self, row: int, col: int) -> int:
        """Byte offset of logical ``tile[row][col]`` from the tile's start."""
        return (row * self.width + self.physical_col(row, col)) * self.itemsize

    def bank_of_cell(self, row: int, pcol: int) -> int:
        """Bank of the first byte of the element stored at physical ``(row, pcol)``."""
        return analysis.bank_of((row * self.width + pcol) * self.itemsize)

    def logical_of_cell(self, row: int, pcol: int) -> Optional[int]:
        """The logical column stored at physical ``(row, pcol)``; None for a padding cell."""
        if pcol >= self.cols:
            return None
        return pcol ^ (row % self.swizzle_period) if self.swizzle else pcol


# --- the warp's access pattern -------------------------------------------------------------------------

_BINOPS: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_UNARY: dict[type, Callable] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
                                ast.Not: operator.not_}
_COMPARE: dict[type, Callable] = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
                                  ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCS: dict[str, Callable] = {"min": min, "max": max, "abs": abs}
_LIMIT = 1 << 40  # no index is ever this large; stops 9**9**9 before it eats the kernel's memory
_HELP = ("Write an expression of lane (0-31) with + - * // % ** << >> & | ^ ~, comparisons, "
         "`a if cond else b`, min/max/abs, and the names rows and cols; it gives a flat index into "
         "the tile (row-major), a pair (row, col), or None for a lane that does not read.")


def parse_lane_expression(text: str) -> Callable[[dict], object]:
    """Compile a Python expression of ``lane`` into a safe evaluator, or raise PatternError.

    Only arithmetic on integers is allowed (see ``_HELP``): no attribute access, no calls other than
    min/max/abs, no names other than lane, rows and cols.  The expression is checked once here and
    evaluated by walking the tree, never with ``eval``.
    """
    if not isinstance(text, str) or not text.strip():
        raise PatternError("The expression is empty. " + _HELP)
    if len(text) > 300:
        raise PatternError("The expression is longer than 300 characters; keep it to one index formula.")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        where = f" at column {e.offset}" if e.offset else ""
        raise PatternError(f"Cannot read the expression {text.strip()!r}: {e.msg}{where}. {_HELP}") from None
    source = text.strip()

    def bad(node: ast.AST, why: str) -> PatternError:
        seg = ast.get_source_segment(source, node) or type(node).__name__
        return PatternError(f"In {source!r}, `{seg}` is not allowed: {why}. {_HELP}")

    def check(node: ast.AST) -> None:
        if isinstance(node, ast.Expression):
            check(node.body)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                why = ("`/` is true division and gives a fraction; use `//` for an index"
                       if isinstance(node.op, ast.Div) else "only integer arithmetic is allowed")
                raise bad(node, why)
            check(node.left)
            check(node.right)
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise bad(node, "unknown operator")
            check(node.operand)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                check(v)
        elif isinstance(node, ast.Compare):
            if any(type(op) not in _COMPARE for op in node.ops):
                raise bad(node, "only < <= > >= == != comparisons are allowed")
            check(node.left)
            for c in node.comparators:
                check(c)
        elif isinstance(node, ast.IfExp):
            check(node.test)
            check(node.body)
            check(node.orelse)
        elif isinstance(node, ast.Tuple):
            if len(node.elts) != 2:
                raise bad(node, "a pair (row, col) has exactly two parts")
            for e in node.elts:
                check(e)
        elif isinstance(node, ast.Constant):
            if not (node.value is None or isinstance(node.value, (bool, int))):
                raise bad(node, "only whole-number constants (and None) are allowed")
        elif isinstance(node, ast.Name):
            if node.id not in ("lane", "rows", "cols"):
                raise bad(node, f"unknown name {node.id!r}; the names are lane, rows and cols")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise bad(node, "the only functions are min(...), max(...) and abs(...)")
            if not node.args:
                raise bad(node, "min/max/abs need at least one argument")
            for a in node.args:
                check(a)
        else:
            raise bad(node, "only arithmetic on lane, rows and cols is allowed")

    check(tree)

    def run(node: ast.AST, env: dict):
        if isinstance(node, ast.Expression):
            return run(node.body, env)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.Tuple):
            return tuple(run(e, env) for e in node.elts)
        if isinstance(node, ast.IfExp):
            return run(node.body, env) if run(node.test, env) else run(node.orelse, env)
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                value = True
                for v in node.values:
                    value = run(v, env)
                    if not value:
                        return value
                return value
            value = False
            for v in node.values:
                value = run(v, env)
                if value:
                    return value
            return value
        if isinstance(node, ast.Compare):
            left = run(node.left, env)
            for op, c in zip(node.ops, node.comparators):
                right = run(c, env)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            return _FUNCS[node.func.id](*(_int(run(a, env), node) for a in node.args))
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](_int(run(node.operand, env), node))
        if isinstance(node, ast.BinOp):
            a, b = _int(run(node.left, env), node), _int(run(node.right, env), node)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0:
                raise bad(node, f"division by zero when lane = {env['lane']}")
            if isinstance(node.op, ast.Pow) and (b < 0 or b > 64):
                raise bad(node, f"the exponent is {b} when lane = {env['lane']}; keep it between 0 and 64")
            if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b <= 64:
                raise bad(node, f"the shift is {b} when lane = {env['lane']}; keep it between 0 and 64")
            value = _BINOPS[type(node.op)](a, b)
            if abs(value) > _LIMIT:
                raise bad(node, f"it reaches {value} when lane = {env['lane']}, far beyond any tile")
            return value
        raise AssertionError(type(node))  # check() rejected everything else

    def _int(value, node):
        if value is None or isinstance(value, tuple):
            raise bad(node, "None and (row, col) pairs can only be the whole result, not part of a sum")
        return int(value)

    return lambda env: run(tree, env)


def lane_coords(tile: Tile, pattern: str = "row", value: int = 0, expression: str = "") -> list[Coord]:
    """The logical ``(row, col)`` each of the 32 lanes reads, or None for a lane that does not read.

    - ``row``: lanes read consecutive elements from the start of row ``value``, as the warps of a
      block with ``blockDim.x == cols`` do for ``tile[ty][tx]`` (a narrow tile spans several rows).
    - ``column``: lanes read down column ``value``, as ``tile[tx][ty]`` does (continuing in the next
      column when the tile has fewer than 32 rows).
    - ``stride``: lane reads flat element ``(lane * value) % (rows * cols)`` in row-major order,
      like ``s[(lane * stride) % n]`` on a 1-D array.
    - ``expression``: a Python expression of ``lane`` (see :func:`parse_lane_expression`).
    """
    n = tile.rows * tile.cols
    if pattern == "row":
        if not 0 <= value < tile.rows:
            raise PatternError(f"row {value} is outside the tile: rows are 0 to {tile.rows - 1}")
        flat = [value * tile.cols + lane for lane in range(WARP_SIZE)]
        return [divmod(i, tile.cols) if i < n else None for i in flat]
    if pattern == "column":
        if not 0 <= value < tile.cols:
            raise PatternError(f"column {value} is outside the tile: data columns are 0 to {tile.cols - 1}")
        out: list[Coord] = []
        for lane in range(WARP_SIZE):
            extra_col, row = divmod(lane, tile.rows)
            col = value + extra_col
            out.append((row, col) if col < tile.cols else None)
        return out
    if pattern == "stride":
        if not isinstance(value, int) or value < 0:
            raise PatternError(f"the stride must be a whole number >= 0, got {value!r}")
        return [divmod((lane * value) % n, tile.cols) for lane in range(WARP_SIZE)]
    if pattern == "expression":
        evaluate = parse_lane_expression(expression)
        out = []
        for lane in range(WARP_SIZE):
            got = evaluate({"lane": lane, "rows": tile.rows, "cols": tile.cols})
            out.append(_to_coord(tile, got, lane, expression))
        return out
    raise PatternError(f"unknown access pattern {pattern!r}; choose one of {', '.join(PATTERNS)}")


def _to_coord(tile: Tile, got, lane: int, expression: str) -> Coord:
    n = tile.rows * tile.cols
    where = f"{expression.strip()!r} gives {got!r} for lane {lane}"
    if got is None:
        return None
    if isinstance(got, bool):
        raise PatternError(f"{where}: a comparison is true/false, not an index; use it inside `a if cond else b`")
    if isinstance(got, int):
        if not 0 <= got < n:
            raise PatternError(f"{where}, outside the {tile.rows}×{tile.cols} tile (flat indices 0 to {n - 1}); "
                               f"add `% {n}` to wrap around")
        return divmod(got, tile.cols)
    if isinstance(got, tuple):
        row, col = got
        if any(v is None or isinstance(v, bool) for v in got):
            raise PatternError(f"{where}: row and col must both be whole numbers")
        if not (0 <= row < tile.rows and 0 <= col < tile.cols):
            raise PatternError(f"{where}, outside the tile: rows 0 to {tile.rows - 1}, data columns 0 to "
                               f"{tile.cols - 1}")
        return (row, col)
    raise PatternError(f"{where}: expected a whole number, a pair (row, col) or None")


# --- analysis: what the banks do with those addresses ------------------------------------------------


@dataclass(frozen=True)
class BankAccess:
    """One warp's shared-memory access on a tile, analysed: per-lane addresses, banks and passes."""

    tile: Tile
    coords: tuple  # per lane: (row, col) or None
    addrs: tuple  # per lane: byte address or None
    passes: tuple  # per lane: analysis.LanePass(bank, wavefront) or None
    wavefronts: int
    ideal: int
    label: str = ""

    @property
    def active(self) -> int:
        """Lanes that read."""
        return sum(a is not None for a in self.addrs)

    @property
    def degree(self) -> float:
        """Conflict degree: wavefronts over the conflict-free minimum (1 means no bank conflict)."""
        return self.wavefronts / self.ideal if self.ideal else 0.0

    @property
    def distinct_words(self) -> int:
        """Distinct 4-byte words the warp touches (lanes sharing a word are served by broadcast)."""
        return len({w for a in self.addrs if a is not None for w in analysis.words_of(a, self.tile.itemsize)})

    def lanes_at(self, row: int, col: int) -> list[int]:
        """Lanes that read logical ``tile[row][col]``."""
        return [lane for lane, c in enumerate(self.coords) if c == (row, col)]


def analyse(tile: Tile, coords: Sequence[Coord], label: str = "") -> BankAccess:
    """Addresses, banks, passes and wavefront counts for one warp reading ``coords`` of ``tile``."""
    addrs = tuple(None if c is None else tile.address(*c) for c in coords)
    return BankAccess(
        tile=tile,
        coords=tuple(coords),
        addrs=addrs,
        passes=tuple(analysis.shared_passes(addrs, tile.itemsize)),
        wavefronts=analysis.shared_wavefronts(addrs, tile.itemsize),
        ideal=analysis.shared_ideal_wavefronts(addrs, tile.itemsize),
        label=label,
    )


def explore(rows=32, cols=32, pad=0, itemsize=4, swizzle=False, pattern="row", value=0, expression="") -> BankAccess:
    """Everything the explorer shows for one setting of its controls (raises PatternError on bad input)."""
    tile = Tile(int(rows), int(cols), int(pad), int(itemsize), bool(swizzle))
    coords = lane_coords(tile, pattern, int(value), expression)
    return analyse(tile, coords, label=describe_pattern(tile, pattern, value, expression))


def describe_pattern(tile: Tile, pattern: str, value: int = 0, expression: str = "") -> str:
    """The access in the words of kernel code, e.g. ``tile[lane][0]`` (column 0)."""
    if pattern == "row":
        if tile.cols >= WARP_SIZE:
            return f"tile[{value}][lane]"
        return f"tile[{value} + lane // {tile.cols}][lane % {tile.cols}] ({tile.cols} lanes per row)"
    if pattern == "column":
        if tile.rows >= WARP_SIZE:
            return f"tile[lane][{value}]"
        return f"tile[lane % {tile.rows}][{value} + lane // {tile.rows}] ({tile.rows} lanes per column)"
    if pattern == "stride":
        return f"flat element (lane × {value}) % {tile.rows * tile.cols}"
    return expression.strip()


def degree_text(access: BankAccess) -> str:
    """'no bank conflict', '32-way bank conflict', or '1.5× the minimum' for uneven wide accesses."""
    if access.active == 0:
        return "no lane reads"
    d = access.degree
    if d == 1:
        return "no bank conflict"
    if d == int(d):
        return f"{int(d)}-way bank conflict"
    return f"bank conflict: {d:.2g}× the minimum"


def summary(access: BankAccess) -> str:
    """One line for the learner: the access, wavefronts against the minimum, and the verdict."""
    t = access.tile
    bcast = ""
    if access.distinct_words < access.active * max(1, t.itemsize // BANK_BYTES):
        bcast = f"; {access.active} lanes touch {access.distinct_words} distinct words (the rest is broadcast)"
    return (f"{t.declaration()}{' (swizzled)' if t.swizzle else ''}, {access.label}: "
            f"{access.wavefronts} wavefront{'s' if access.wavefronts != 1 else ''} "
            f"(at best {access.ideal}) → {degree_text(access)}{bcast}")


# --- drawing (reads a finished BankAccess; never runs a kernel) --------------------------------------


def bank_colour(bank: int) -> str:
    """A colour per bank: hues around the wheel, alternating lightness so neighbours differ."""
    hue = (bank * 360 / BANKS) % 360
    light = 78 if bank % 2 == 0 else 66
    return f"hsl({hue:.0f},70%,{light}%)"


PASS_COLOURS = ("#111111", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def _pass_colour(p: int) -> str:
    """The outline colour of pass ``p``: eight fixed colours, then a distinct dark hue per pass up to 32."""
    if p < len(PASS_COLOURS):
        return PASS_COLOURS[p]
    # golden-angle steps around the wheel: no two of the 24 later passes share a hue; dark enough to read
    hue = (20 + (p - len(PASS_COLOURS)) * 137.508) % 360
    return f"hsl({hue:.0f},75%,{32 if p % 2 else 42}%)"


def _lanes_text(lanes: list[int]) -> str:
    if len(lanes) == 1:
        return str(lanes[0])
    if lanes == list(range(lanes[0], lanes[-1] + 1)):
        return f"{lanes[0]}–{lanes[-1]}"
    return f"{lanes[0]},…"


# a drawing wider than its cell's output area shrinks to fit (the viewBox keeps it in proportion) instead of
# being cut off behind a scrollbar
_SHRINK = "max-width:100%;height:auto"


def tile_svg(access: BankAccess, max_px: int = 720) -> str:
    """The tile as an SVG: each element coloured by its bank, padding greyed, the warp's reads outlined.

    The outline colour is the wavefront that serves the lane (black: the first; red: the second; …),
    the number inside is the lane.  Data attributes carry the counts so that tests can read them.
    """
    t = access.tile
    cell = max(8, min(24, max_px // max(t.width, 1)))
    font = max(6, int(cell * 0.45))
    left, top = 26, 16
    w = left + t.width * cell + 2
    h = top + t.rows * cell + 2
    marked: dict[tuple, list[int]] = {}
    for lane, c in enumerate(access.coords):
        if c is not None:
            marked.setdefault((c[0], t.physical_col(*c)), []).append(lane)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="bank-tile" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" style="{_SHRINK}" data-wavefronts="{access.wavefronts}" data-ideal="{access.ideal}" '
        f'data-marked="{sum(len(v) for v in marked.values())}" data-rows="{t.rows}" data-width="{t.width}" '
        f'font-family="monospace" font-size="{font}">'
    ]
    step = 1 if t.width <= 40 else 4
    for pc in range(0, t.width, step):
        parts.append(f'<text x="{left + pc * cell + cell / 2:.1f}" y="{top - 4}" text-anchor="middle" '
                     f'fill="#555">{pc}</text>')
    step = 1 if t.rows <= 40 else 4
    for r in range(0, t.rows, step):
        parts.append(f'<text x="{left - 3}" y="{top + r * cell + cell * 0.7:.1f}" text-anchor="end" '
                     f'fill="#555">{r}</text>')
    titles = t.rows * t.width <= TITLE_CELLS
    parts.append('<g stroke="#fff" stroke-width="0.5">')
    for r in range(t.rows):
        for pc in range(t.width):
            x, y = left + pc * cell, top + r * cell
            bank = t.bank_of_cell(r, pc)
            logical = t.logical_of_cell(r, pc)
            fill = "#e8e8e8" if logical is None else bank_colour(bank)
            rect = f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}"'
            if titles:
                what = "padding" if logical is None else f"tile[{r}][{logical}]"
                rect += f'><title>{what}: byte {(r * t.width + pc) * t.itemsize}, bank {bank}</title></rect>'
            else:
                rect += "/>"
            parts.append(rect)
    parts.append("</g>")
    for (r, pc), lanes in sorted(marked.items()):
        x, y = left + pc * cell, top + r * cell
        p = max(access.passes[lane].wavefront for lane in lanes)
        colour = _pass_colour(p)
        parts.append(f'<rect class="lane-mark" x="{x + 1}" y="{y + 1}" width="{cell - 2}" height="{cell - 2}" '
                     f'fill="none" stroke="{colour}" stroke-width="2" data-lanes="{" ".join(map(str, lanes))}" '
                     f'data-pass="{p}"><title>lane{"s" if len(lanes) > 1 else ""} {_lanes_text(lanes)}: '
                     f'bank {access.passes[lanes[0]].bank}, wavefront {p}</title></rect>')
        if cell >= 12:
            parts.append(f'<text x="{x + cell / 2:.1f}" y="{y + cell * 0.68:.1f}" text-anchor="middle" '
                         f'fill="{colour}" font-weight="bold">{html.escape(_lanes_text(lanes))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def passes_svg(passes: Sequence, itemsize: int = 4, addrs: Optional[Sequence] = None, max_px: int = 720) -> str:
    """The banks as the hardware serves them: one column per bank, one row per wavefront, lanes inside.

    ``passes`` is :func:`course.trace.analysis.shared_passes`'s answer (per lane a LanePass or None).  With
    ``addrs``, a wide (8- or 16-byte) access is drawn in every bank it touches, not only the first.
    """
    cell = max(14, min(24, (max_px - 60) // BANKS))
    font = max(7, int(cell * 0.42))
    n_pass = 1 + max((p.wavefront for p in passes if p is not None), default=-1)
    left, top = 70, 16
    w = left + BANKS * cell + 2
    h = top + max(n_pass, 1) * cell + 2
    cells: dict[tuple, list[int]] = {}
    for lane, p in enumerate(passes):
        if p is None:
            continue
        if addrs is not None and addrs[lane] is not None:
            banks = sorted({wd % BANKS for wd in analysis.words_of(addrs[lane], itemsize)})
        else:
            banks = [p.bank]
        for b in banks:
            cells.setdefault((p.wavefront, b), []).append(lane)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="bank-passes" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" style="{_SHRINK}" data-wavefronts="{n_pass}" font-family="monospace" font-size="{font}">']
    for b in range(BANKS):
        parts.append(f'<text x="{left + b * cell + cell / 2:.1f}" y="{top - 4}" text-anchor="middle" '
                     f'fill="#555">{b}</text>')
    for p in range(n_pass):
        parts.append(f'<text x="{left - 4}" y="{top + p * cell + cell * 0.68:.1f}" text-anchor="end" '
                     f'fill="{_pass_colour(p)}">pass {p}</text>')
        for b in range(BANKS):
            lanes = cells.get((p, b))
            x, y = left + b * cell, top + p * cell
            fill = bank_colour(b) if lanes else "#f4f4f4"
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="#fff"/>')
            if lanes:
                parts.append(f'<text x="{x + cell / 2:.1f}" y="{y + cell * 0.68:.1f}" text-anchor="middle">'
                             f'{html.escape(_lanes_text(lanes))}<title>bank {b}, pass {p}: lanes '
                             f'{", ".join(map(str, lanes))}</title></text>')
    parts.append("</svg>")
    return "".join(parts)


# --- the widget -----------------------------------------------------------------------------------------


@dataclass
class BankExplorer:
    """ipywidgets controls around :func:`explore`; ``.access`` is the last good result, ``.error`` the last problem.

    Tests (and learners) may set any control's ``.value`` from Python; the drawing and the summary
    follow at once.
    """

    rows: int = 32
    cols: int = 32
    pad: int = 0
    itemsize: int = 4
    swizzle: bool = False
    pattern: str = "row"
    value: int = 0
    expression: str = "(lane * 2) % (rows * cols)"
    access: Optional[BankAccess] = field(default=None, init=False)
    error: str = field(default="", init=False)

    def __post_init__(self):
        import ipywidgets as w

        style = {"description_width": "initial"}
        lay = w.Layout(width="300px")
        self.w_rows = w.BoundedIntText(self.rows, min=1, max=MAX_SIDE, description="rows", style=style, layout=lay)
        self.w_cols = w.BoundedIntText(self.cols, min=1, max=MAX_SIDE, description="data columns", style=style,
                                       layout=lay)
        self.w_pad = w.IntSlider(self.pad, min=0, max=8, description="padding columns", style=style,
                                 continuous_update=True, layout=lay)
        self.w_itemsize = w.Dropdown(options=[(f"{s} bytes", s) for s in ELEMENT_SIZES], value=self.itemsize,
                                     description="element size", style=style, layout=lay)
        self.w_swizzle = w.Checkbox(self.swizzle, description="XOR swizzle: tile[row][col ^ row]", style=style,
                                    indent=False)
        self.w_pattern = w.ToggleButtons(options=list(PATTERNS), value=self.pattern, description="warp reads",
                                         style={"button_width": "auto", "description_width": "initial"},
                                         layout=w.Layout(width="auto"))
        self.w_value = w.IntSlider(self.value, min=0, max=64, description="row / column / stride", style=style,
                                   continuous_update=True, layout=lay)
        self.w_expr = w.Text(self.expression, description="expression of lane", style=style,
                             layout=lay, continuous_update=False)
        self.w_summary = w.HTML(layout=w.Layout(min_height="2.5em"))
        self.w_summary.add_class("bank-summary")
        self.w_tile = w.HTML(layout=w.Layout(max_width="100%"))
        self.w_tile.add_class("bank-tile-view")
        self.w_passes = w.HTML(layout=w.Layout(max_width="100%"))
        self.w_passes.add_class("bank-passes-view")
        self.controls = [self.w_rows, self.w_cols, self.w_pad, self.w_itemsize, self.w_swizzle, self.w_pattern,
                         self.w_value, self.w_expr]
        for c in self.controls:
            c.observe(self._changed, names="value")
        # the controls in a column on the left, the tile they change beside them where the output area is wide
        # enough (about 1070 px), else below them at full size (a 32-column tile is 730 px wide); the passes below
        controls = w.VBox([self.w_rows, self.w_cols, self.w_itemsize, self.w_pad, self.w_swizzle, self.w_pattern,
                           self.w_value, self.w_expr], layout=w.Layout(min_width="320px", margin="0 16px 0 0"))
        self.widget = w.VBox([
            w.HBox([controls, self.w_tile], layout=w.Layout(align_items="flex-start", flex_flow="row wrap")),
            self.w_summary,
            w.HTML("<b>The same access, bank by bank, pass by pass</b> (each pass delivers at most one "
                   "4-byte word per bank; lanes that share a word share its pass):"),
            self.w_passes,
        ])
        self.widget.add_class("bank-explorer")
        self.update()

    def _changed(self, _change=None):
        self.update()

    def settings(self) -> dict:
        """The controls' current values, as keyword arguments of :func:`explore`."""
        return dict(rows=self.w_rows.value, cols=self.w_cols.value, pad=self.w_pad.value,
                    itemsize=self.w_itemsize.value, swizzle=self.w_swizzle.value, pattern=self.w_pattern.value,
                    value=self.w_value.value, expression=self.w_expr.value)

    def update(self) -> None:
        """Recompute from the controls and redraw; a bad setting shows its message and keeps the drawing."""
        s = self.settings()
        self.w_value.disabled = s["pattern"] == "expression"
        self.w_expr.disabled = s["pattern"] != "expression"
        try:
            access = explore(**s)
        except PatternError as e:
            self.error = str(e)
            self.w_summary.value = f'<span class="bank-error" style="color:#b00">{html.escape(self.error)}</span>'
            return
        self.error = ""
        self.access = access
        # drawings first, the count last: a browser sees the new count after the new pictures
        self.w_tile.value = tile_svg(access)
        self.w_passes.value = passes_svg(access.passes, access.tile.itemsize, access.addrs)
        self.w_summary.value = (f'<span class="bank-count" data-wavefronts="{access.wavefronts}" '
                                f'data-ideal="{access.ideal}">{html.escape(summary(access))}</span>')

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def bank_explorer(**settings) -> BankExplorer:
    """A bank-mapping explorer, started from ``settings`` (rows, cols, pad, itemsize, swizzle, pattern, …)."""
    return BankExplorer(**settings)
