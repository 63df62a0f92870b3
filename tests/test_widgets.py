"""Chapter 04's widgets and kernels, without a browser: set controls from Python, assert on the state.

Every expected count here is derived by hand (the bank of word w is w % 32; an n-way conflict is n
distinct words in one bank), never read back from the code under test.
"""

import math
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from course.kernels import shared_memory as sm
from course.show.widgets import banks
from course.show.widgets.banks import PatternError, Tile, explore
from conftest import seeded_rng
from course.trace.compiler import HARDWARE_MODE_PRELUDE

# --- the tile: where logical elements live --------------------------------------------------------------


def test_addresses_of_a_plain_padded_and_swizzled_tile():
    assert Tile(32, 32).address(1, 0) == 128  # row 1 starts after 32 floats
    assert Tile(32, 32, pad=1).address(1, 0) == 132  # ... after 33 floats when padded
    assert Tile(32, 32, itemsize=8).address(0, 3) == 24
    # swizzled: logical (5, 1) sits at column 1 ^ 5 = 4 of row 5
    assert Tile(32, 32, swizzle=True).address(5, 1) == (5 * 32 + 4) * 4
    assert Tile(32, 32).nbytes == 4096 and Tile(32, 32, pad=1).nbytes == 4224  # 3.125 % more


def test_swizzle_is_a_permutation_of_each_row():
    t = Tile(32, 32, swizzle=True)
    for row in range(32):
        assert sorted(t.physical_col(row, c) for c in range(32)) == list(range(32))
        assert all(t.logical_of_cell(row, t.physical_col(row, c)) == c for c in range(32))


def test_bad_tiles_are_refused_with_a_message():
    with pytest.raises(PatternError, match="element size"):
        Tile(32, 32, itemsize=3)
    with pytest.raises(PatternError, match="rows"):
        Tile(0, 32)


# --- counts: the chapter's claims, by hand ---------------------------------------------------------------


def test_a_row_is_one_pass_and_a_column_of_32x32_is_32():
    assert explore(pattern="row", value=5).wavefronts == 1
    a = explore(pattern="column", value=7)
    assert a.wavefronts == 32 and a.ideal == 1
    assert {p.bank for p in a.passes} == {7}  # the whole column in bank 7
    assert sorted(p.wavefront for p in a.passes) == list(range(32))
    assert banks.degree_text(a) == "32-way bank conflict"


# pad p: bank of (r, c) is (r * p + c) % 32, so the 32 rows use 32 / gcd(p, 32) banks: gcd(p, 32)-way
PAD_WAYS = {0: 32, 1: 1, 2: 2, 3: 1, 4: 4, 5: 1, 6: 2, 7: 1, 8: 8}


@pytest.mark.parametrize("pad,ways", sorted(PAD_WAYS.items()))
def test_padding_must_be_coprime_with_32(pad, ways):
    assert explore(pattern="column", pad=pad).wavefronts == ways


def test_swizzle_cures_columns_and_keeps_rows_in_their_128_bytes():
    col = explore(pattern="column", value=3, swizzle=True)
    assert col.wavefronts == 1
    row = explore(pattern="row", value=9, swizzle=True)
    assert row.wavefronts == 1
    assert sorted(row.addrs) == list(range(9 * 128, 10 * 128, 4))  # the same 128 bytes as unswizzled


# s[lane * stride]: 32 words in 32 / gcd(stride, 32) banks
STRIDE_WAYS = {1: 1, 2: 2, 3: 1, 4: 4, 5: 1, 6: 2, 8: 8, 12: 4, 16: 16, 17: 1, 31: 1, 32: 32, 33: 1}


@pytest.mark.parametrize("stride,ways", sorted(STRIDE_WAYS.items()))
def test_strides(stride, ways):
    assert explore(pattern="stride", value=stride).wavefronts == ways


def test_every_odd_stride_is_free():
    for stride in range(1, 64, 2):
        assert explore(pattern="stride", value=stride).wavefronts == 1, stride


def test_broadcast_is_not_a_conflict_but_several_words_of_one_bank_are():
    a = explore(pattern="expression", expression="0")
    assert (a.wavefronts, a.distinct_words) == (1, 1)
    assert explore(pattern="expression", expression="lane // 4").wavefronts == 1  # 8 words, 8 banks
    # 4 words (0, 32, 64, 96), all bank 0, 8 lanes each: 4 passes, not 32
    assert explore(pattern="expression", expression="(lane % 4) * 32").wavefronts == 4


def test_wide_elements():
    # 32 lanes x 8 bytes = 256 bytes: two passes of 128 bytes at best
    a = explore(pattern="row", itemsize=8)
    assert (a.wavefronts, a.ideal) == (2, 2)
    assert explore(pattern="row", itemsize=16).wavefronts == 4  # 512 bytes
    # a float64 column of [32][32]: rows 256 bytes apart, all in banks 0-1; half warps of 16: 16 + 16
    assert explore(pattern="column", itemsize=8).wavefronts == 32
    assert explore(pattern="column", itemsize=8, pad=1).wavefronts == 2
    # 1- and 2-byte rows: 32 or 64 bytes, one pass
    assert explore(pattern="row", itemsize=1).wavefronts == 1
    assert explore(pattern="row", itemsize=2).wavefronts == 1


def test_inactive_lanes_and_narrow_tiles():
    a = explore(pattern="expression", expression="lane if lane < 16 else None")
    assert a.active == 16 and a.wavefronts == 1
    # a 16-wide tile: a warp's "row" covers two rows, like blockDim.x == 16
    a = explore(pattern="row", rows=16, cols=16)
    assert a.coords[16] == (1, 0)
    # a 16-high tile read by columns continues in the next column: rows 0-15 of col 0, then col 1
    a = explore(pattern="column", rows=16, cols=16)
    assert a.coords[15] == (15, 0) and a.coords[16] == (0, 1)
    # 16 rows x 16 floats: column c sits in banks c and c+16 alternately -> 8 words per bank
    assert a.wavefronts == 8


# --- the expression: safe, and clear when wrong ------------------------------------------------------------


@pytest.mark.parametrize("text,hint", [
    ("lane / 2", "//"),
    ("lane *", "Cannot read"),
    ("x + 1", "unknown name 'x'"),
    ("lane * 100", "outside"),
    ("(lane, 40)", "outside"),
    ("lane < 3", "true/false"),
    ("", "empty"),
    ("lane // 0", "division by zero"),
    ("2 ** 1000", "exponent"),
])
def test_bad_expressions_get_a_message(text, hint):
    with pytest.raises(PatternError, match=None) as e:
        explore(pattern="expression", expression=text)
    assert hint in str(e.value)


@pytest.mark.parametrize("text", [
    "__import__('os').system('echo pwned')",
    "lane.__class__",
    "[c for c in ()]",
    "(lambda: 0)()",
    "open('/etc/passwd')",
    "globals()",
    "'a' * 10",
    "1.5",
])
def test_expressions_cannot_do_anything_but_arithmetic(text):
    with pytest.raises(PatternError):
        banks.parse_lane_expression(text)


def test_expressions_with_names_and_functions():
    a = explore(pattern="expression", expression="(lane, min(lane * 2, cols - 1))")
    assert a.coords[0] == (0, 0) and a.coords[31] == (31, 31)
    a = explore(pattern="expression", expression="lane * 32 % (rows * cols)")
    assert a.wavefronts == 32


# --- drawing reads the result ------------------------------------------------------------------------------


def _svg(text):
    return ET.fromstring(text)


def test_tile_drawing_marks_every_lane_with_its_pass():
    a = explore(pattern="column", value=0)
    svg = _svg(banks.tile_svg(a))
    assert svg.get("data-wavefronts") == "32"
    marks = [e for e in svg.iter() if e.get("class") == "lane-mark"]
    assert len(marks) == 32
    assert sorted(int(m.get("data-pass")) for m in marks) == list(range(32))
    lanes = sorted(int(x) for m in marks for x in m.get("data-lanes").split())
    assert lanes == list(range(32))
    # a broadcast is one marked cell holding all 32 lanes
    svg = _svg(banks.tile_svg(explore(pattern="expression", expression="0")))
    marks = [e for e in svg.iter() if e.get("class") == "lane-mark"]
    assert len(marks) == 1 and len(marks[0].get("data-lanes").split()) == 32


def test_padding_cells_are_drawn_grey():
    svg = banks.tile_svg(explore(pattern="row", pad=1))
    assert _svg(svg).get("data-width") == "33"
    assert svg.count("padding:") == 32  # one pad cell per row


def test_passes_drawing_has_one_row_per_wavefront():
    for pad, ways in ((0, 32), (2, 2), (1, 1)):
        a = explore(pattern="column", pad=pad)
        svg = _svg(banks.passes_svg(a.passes, 4, a.addrs))
        assert svg.get("data-wavefronts") == str(ways)


# --- the widget: move a control, the state follows ------------------------------------------------------------


def test_explorer_follows_its_controls_quickly():
    ex = banks.bank_explorer(pattern="column")
    assert ex.access.wavefronts == 32 and "32-way" in ex.w_summary.value
    before = ex.w_tile.value
    t0 = time.perf_counter()
    ex.w_pad.value = 1
    assert time.perf_counter() - t0 < 2.0  # a hang guard only: "well under a second" on an idle machine; CI shares 2 cores
    assert ex.access.wavefronts == 1 and "no bank conflict" in ex.w_summary.value
    assert ex.w_tile.value != before and 'data-width="33"' in ex.w_tile.value
    ex.w_pad.value = 2
    assert ex.access.wavefronts == 2
    ex.w_pad.value = 0
    ex.w_swizzle.value = True
    assert ex.access.wavefronts == 1
    ex.w_swizzle.value = False
    ex.w_itemsize.value = 8
    assert ex.access.wavefronts == 32 and ex.access.ideal == 2
    ex.w_itemsize.value = 4
    ex.w_pattern.value = "stride"
    ex.w_value.value = 2
    assert ex.access.wavefronts == 2
    assert ex.w_expr.disabled and not ex.w_value.disabled


def test_explorer_stays_quick_on_the_largest_tile():
    ex = banks.bank_explorer(rows=64, cols=64, pattern="column")
    t0 = time.perf_counter()
    ex.w_pad.value = 8
    assert time.perf_counter() - t0 < 2.0
    # 64 rows of 72 floats: row r starts at bank 8r % 32, so a column's 32 lanes (rows 0-31) use 4 banks
    assert ex.access.wavefronts == 8
    ex.w_rows.value = 65  # the control clamps; the function refuses with a message
    assert ex.w_rows.value == 64
    with pytest.raises(PatternError, match="from 1 to 64"):
        explore(rows=65)


def test_pattern_descriptions_read_like_code():
    assert banks.describe_pattern(Tile(32, 32), "column", 3) == "tile[lane][3]"
    assert banks.describe_pattern(Tile(16, 16), "row", 2) == "tile[2 + lane // 16][lane % 16] (16 lanes per row)"
    assert banks.describe_pattern(Tile(8, 32), "column", 0) == "tile[lane % 8][0 + lane // 8] (8 lanes per column)"


def test_explorer_shows_a_bad_expression_and_keeps_the_last_drawing():
    ex = banks.bank_explorer(pattern="expression", expression="lane * 2")
    assert ex.access.wavefronts == 2
    drawing = ex.w_tile.value
    ex.w_expr.value = "lane / 2"
    assert "//" in ex.error and "bank-error" in ex.w_summary.value
    assert ex.w_tile.value == drawing and ex.access.wavefronts == 2
    ex.w_expr.value = "lane * 4"
    assert ex.error == "" and ex.access.wavefronts == 4


# --- chapter 04's kernels: correct on fresh random data, and the hand counts they carry ----------------


@pytest.mark.parametrize("name,itemsize", [("strided_read", 4), ("strided_read_f64", 8), ("strided_read_c128", 16)])
def test_strided_kernels_match_numpy(name, itemsize, rng):
    inp = sm.random_1d(rng, itemsize)
    # 3 blocks of 48 threads: the second warp of each block is half empty
    for stride in (0, 1, 2, 7, 32, 33):
        out = sm.run_strided(name, inp, stride, blocks=3, threads_per_block=48)
        np.testing.assert_array_equal(out, sm.reference_strided(inp, stride, 3, 48))


def test_broadcast_and_indexed_kernels_match_numpy(rng):
    inp = sm.random_1d(rng)
    out = np.zeros(2 * 40, np.float32)
    sm.broadcast_read[2, 40](inp, out)
    np.testing.assert_array_equal(out, sm.reference_broadcast(inp, 2, 40))
    idx = rng.integers(0, sm.N_WORDS, 32).astype(np.int32)
    out = np.zeros(2 * 40, np.float32)
    sm.indexed_read[2, 40](inp, idx, out)
    np.testing.assert_array_equal(out, sm.reference_indexed(inp, idx, 2, 40))


@pytest.mark.parametrize("name", [n for n, v in sm.KERNELS.items() if v.kind == "tile"])
def test_tile_kernels_match_numpy(name, rng):
    itemsize = sm.KERNELS[name].itemsize
    for n_tiles in (1, 3):
        inp = sm.random_tiles(rng, n_tiles, itemsize)
        out = sm.run_tile(name, inp)
        np.testing.assert_array_equal(out, sm.tile_reference(name)(inp))
        # the reference itself, on one element of the last tile: a transpose (or, for tile_rows, a copy)
        row, col = 32 * (n_tiles - 1) + 2, 5
        assert out[row, col] == (inp[row, col] if name == "tile_rows" else inp[32 * (n_tiles - 1) + 5, 2])


def test_tile_kernels_refuse_partial_tiles_with_a_message():
    with pytest.raises(ValueError, match="whole 32×32 tiles"):
        sm.run_tile("tile_columns", np.zeros((17, 16), np.float32))


def test_closed_forms_agree_with_the_explorer():
    # the gcd formulas of the chapter, against the explorer's generic bank rules, for every stride
    for itemsize in (4, 8, 16):
        for stride in range(0, 34):
            assert sm.stride_wavefronts(stride, itemsize) == \
                explore(pattern="stride", value=stride, itemsize=itemsize).wavefronts, (itemsize, stride)
    for itemsize in (4, 8):
        for pad in range(0, 9):
            assert sm.padded_column_wavefronts(pad, itemsize) == \
                explore(pattern="column", pad=pad, itemsize=itemsize).wavefronts, (itemsize, pad)
    # and against hand values written out
    assert [sm.stride_wavefronts(s) for s in (1, 2, 4, 8, 16, 32, 3)] == [1, 2, 4, 8, 16, 32, 1]
    assert [sm.stride_wavefronts(s, 8) for s in (1, 2, 16, 17)] == [2, 4, 32, 2]
    assert [sm.stride_wavefronts(s, 16) for s in (1, 2, 8)] == [4, 8, 32]
    assert math.gcd(2, 32) == sm.padded_column_wavefronts(2) == 2


def test_ncu_cases_are_well_formed():
    names = [c.name for c in sm.NCU_CASES]
    assert len(names) == len(set(names)) and len(names) >= 20
    for case in sm.NCU_CASES:
        args = case.args(seed=3)
        assert all(isinstance(a, (np.ndarray, int, np.integer)) for a in args), case.name
        assert set(case.expect) <= {"shared_load_requests", "shared_load_wavefronts",
                                    "shared_store_requests", "shared_store_wavefronts"}


# --- the trace view: reads a finished report, never runs the kernel again ------------------------------


@pytest.fixture(scope="module")
def report34():
    from course.trace import trace

    x = sm.random_tiles(seeded_rng(__name__, "report34"), 1)
    out = np.zeros_like(x)
    report = trace(sm.tile_columns_pad34, 1, (32, 32), x, out, lines=False)
    np.testing.assert_array_equal(out, sm.reference_tile_transpose(x))
    return report


def _load_line(report):
    return next(r.line for r in report.by_line() if r.space == "shared" and r.op == "load")


def test_trace_view_shows_the_lanes_banks_and_passes_of_a_warp(report34, monkeypatch):
    from course import engine
    from course.show.widgets import trace_view as tv

    def no_launch(*a, **k):
        raise AssertionError("the trace view ran a kernel")

    monkeypatch.setattr(engine, "launch", no_launch)
    view = tv.trace_view(report34, line=_load_line(report34), warp=3)
    wa = view.current
    assert (wa.space, wa.op, wa.warp) == ("shared", "load", 3)
    # by hand: warp 3 has ty = 3; lane r reads tile[r][3], word 34r + 3, bank (2r + 3) % 32
    assert [la.bank for la in wa.lanes] == [(2 * r + 3) % 32 for r in range(32)]
    assert [la.index for la in wa.lanes] == [(r, 3) for r in range(32)]
    assert wa.wavefronts == 2 and "2-way bank conflict" in view.w_summary.value
    # rows r and r + 16 share a bank; the first to ask is served first
    assert [la.wavefront for la in wa.lanes] == [0] * 16 + [1] * 16
    assert 'data-wavefronts="2"' in view.w_drawing.value
    assert view.w_table.value.count("<tr>") == 33
    # the global store on the same line: one row of 32 floats, 4 sectors
    view.w_access.value = [i for i, a in enumerate(view.accesses) if a.space == "global"][0]
    assert view.current.sectors == 4 and 'data-sectors="4"' in view.w_drawing.value
    # another warp, then a time the line was never run
    view.w_warp.value = 0
    assert view.current.lanes[1].bank == 2
    view.w_occ.value = 5
    assert view.current is None and "time 5" in view.error


def test_trace_view_explains_a_block_that_was_not_kept(report34):
    from course.show.widgets import trace_view as tv

    view = tv.trace_view(report34)
    view.w_block.options = [("(9, 0, 0)", (9, 0, 0))]  # as if a learner asked for a block never kept
    assert view.current is None and "detail_blocks" in view.error


def test_three_way_evidence(tmp_path):
    from course.show.widgets import trace_view as tv

    case = next(c for c in sm.NCU_CASES if c.name == "shared_memory.tile_columns")
    totals = {"shared_load_requests": 64, "shared_load_wavefronts": 2048, "shared_store_requests": 64,
              "shared_store_wavefronts": 64}
    rows = tv.evidence(case, totals, {})
    assert all(e.h200 is None and e.agree is None for e in rows)
    assert "not measured yet" in tv.evidence_table(rows)
    # 2 tiles = 64 warps; a column read is 32 wavefronts each: 2048, by hand
    assert {e.metric: e.arithmetic for e in rows}["shared_load_wavefronts"] == 64 * 32
    path = tmp_path / "tracer_validation.json"
    path.write_text('{"provenance": {"device": "NVIDIA H200"}, "cases": [{"name": "shared_memory.tile_columns", '
                    '"ncu": {"shared_load_requests": 64, "shared_load_wavefronts": 2047}}]}')
    hw = tv.hardware_counts(path)
    rows = tv.evidence(case, totals, hw)
    agree = {e.metric: e.agree for e in rows}
    assert agree == {"shared_load_requests": True, "shared_load_wavefronts": False,
                     "shared_store_requests": None, "shared_store_wavefronts": None}
    assert "NVIDIA H200" in tv.provenance(path)
    assert tv.hardware_counts(tmp_path / "missing.json") == {}


# --- the timed kernels and their GPU script -------------------------------------------------------------------


def test_timed_kernels_match_numpy(rng):
    out = np.full(2 * 48, np.nan, np.float32)
    for stride in (1, 2, 33):
        sm.conflict_loop[2, 48](out, stride, 40)
        # by hand for lane 1, stride 2: words 2..41, values w % 7, summed
        if stride == 2:
            assert out[1] == sum(w % 7 for w in range(2, 42))
        np.testing.assert_array_equal(out, sm.reference_conflict_loop(stride, 40, 2, 48))
    for every in (0, 1, 5):
        sm.sync_loop[2, 48](out, 40, every)
        np.testing.assert_array_equal(out, sm.reference_sync_loop(40, 2, 48))
    assert out[50] == sum(w % 7 for w in range(2, 42))  # block 1, thread 2: words 2..41
    for n in (1, 33, 300):
        x = rng.integers(0, 10, n).astype(np.float32)
        for radius in (0, 1, 16):
            expected = sm.reference_stencil(x, radius)
            if n == 33 and radius == 1:
                assert expected[0] == 2 * x[0] + x[1] and expected[5] == x[4] + x[5] + x[6]
            for kernel in (sm.stencil_global, sm.stencil_shared):
                out = np.full(n, np.nan, np.float32)
                kernel[-(-n // sm.STENCIL_THREADS), sm.STENCIL_THREADS](x, out, radius)
                np.testing.assert_array_equal(out, expected)


def test_gpu_script_dry_run(tmp_path):
    import json
    import subprocess
    import sys

    root = sm.__file__.rsplit("/course/", 1)[0]
    done = subprocess.run([sys.executable, "scripts/gpu/bench_shared_memory.py", "--dry-run", "--out", str(tmp_path)],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    records = json.loads((tmp_path / "shared_memory.json").read_text())
    variants = {r["variant"] for r in records}
    assert {"conflict stride=1", "conflict stride=32", "stencil global r=16", "stencil shared r=0", "memcpy",
            "sync every=1 block=1024", "sync every=0 block=128"} <= variants
    for r in records:
        assert r["dry_run"] is True and r["ms"] is None  # a dry run never pretends to have timed anything
        for key in ("benchmark", "variant", "reps", "size", "dtype", "device", "driver", "numba_cuda", "date", "run"):
            assert key in r, key
    assert len({r["run"] for r in records}) == 1
    assert "conflict stride=33" in done.stdout  # the summary table is printed last


# --- the explorer's answers equal the tracer's on the chapter's kernels -------------------------------------------

EXPLORER_FOR_TILE_KERNEL = {  # kernel -> the explorer settings of its shared load (warp 0: column 0; size from KERNELS)
    "tile_columns": dict(pattern="column"),
    "tile_columns_pad33": dict(pattern="column", pad=1),
    "tile_columns_pad34": dict(pattern="column", pad=2),
    "tile_columns_swizzle": dict(pattern="column", swizzle=True),
    "tile_rows": dict(pattern="row"),
    "tile_columns_f64": dict(pattern="column"),
    "tile_columns_f64_pad33": dict(pattern="column", pad=1),
}


def _shared_load(report):
    line = next(r.line for r in report.by_line() if r.space == "shared" and r.op == "load")
    return next(wa for wa in report.warp_detail(line, 0, 0) if wa.space == "shared" and wa.op == "load")


@pytest.mark.parametrize("name", sorted(EXPLORER_FOR_TILE_KERNEL))
def test_explorer_equals_tracer_on_tile_kernels(name, rng):
    from course.trace import trace

    itemsize = sm.KERNELS[name].itemsize
    x = sm.random_tiles(rng, 1, itemsize)
    wa = _shared_load(trace(sm.KERNELS[name].kernel, 1, (32, 32), x, np.zeros_like(x), lines=False))
    a = explore(itemsize=itemsize, **EXPLORER_FOR_TILE_KERNEL[name])
    assert [la.offset for la in wa.lanes] == list(a.addrs)  # the same bytes of the tile
    assert [(la.bank, la.wavefront) for la in wa.lanes] == [(p.bank, p.wavefront) for p in a.passes]
    assert (wa.wavefronts, wa.ideal) == (a.wavefronts, a.ideal)


@pytest.mark.parametrize("itemsize,name", [(4, "strided_read"), (8, "strided_read_f64"), (16, "strided_read_c128")])
def test_explorer_equals_tracer_on_strided_kernels(itemsize, name, rng):
    from course.trace import trace

    x = sm.random_1d(rng, itemsize)
    for stride in (1, 2, 3, 8, 32, 33):
        wa = _shared_load(trace(sm.KERNELS[name].kernel, 1, 32, x, np.zeros(32, x.dtype), stride, lines=False))
        a = explore(pattern="stride", value=stride, itemsize=itemsize)  # a 32×32 tile is the 1024 elements
        assert [la.offset for la in wa.lanes] == list(a.addrs), stride
        assert [la.wavefront for la in wa.lanes] == [p.wavefront for p in a.passes], stride
        assert wa.wavefronts == a.wavefronts == sm.stride_wavefronts(stride, itemsize), stride


# --- the kernels also type for a real GPU (numba's CUDA target, not the simulator) -----------------------------

# hardware mode: a bare `course` package whose backend says "gpu", so that importing it does not choose the CPU
# backend for this process and kernel modules take their GPU branch
_GPU_TYPING = HARDWARE_MODE_PRELUDE + r'''
from numba import cuda, typeof, float32, int64
from numba.core import errors
from course.kernels import shared_memory as sm
sigs = {c.kernel.__name__: tuple(typeof(a) for a in c.args(0)) for c in sm.NCU_CASES}
sigs.update({k.__name__: (float32[::1], int64, int64) for k in (sm.conflict_loop, sm.sync_loop)})
sigs.update({k.__name__: (float32[::1], float32[::1], int64) for k in (sm.stencil_global, sm.stencil_shared)})
sigs.update({k.__name__: (float32[::1], int64, int64) for k in (sm.mod_loop, sm.counter_loop)})
sigs.update({k.__name__: (float32[::1], float32[::1]) for k in (sm.stencil_global_cheap, sm.stencil_shared_cheap)})
bad = []
for name, sig in sigs.items():
    try:
        cuda.compile_ptx(getattr(sm, name).py_func, sig, cc=(9, 0))
    except (errors.TypingError, errors.LoweringError) as e:
        bad.append(name + ": " + str(e).splitlines()[0])
    except Exception:
        pass  # no NVRTC/NVVM on this machine: typing and lowering passed, which is what is checked
print("checked", len(sigs), "kernels")
print("GPU typing errors:", bad)
'''


def test_kernels_type_for_the_gpu_target():
    """The simulator and the engine run Python and may accept what a GPU compile refuses: check it here."""
    import subprocess
    import sys

    root = sm.__file__.rsplit("/course/", 1)[0]
    done = subprocess.run([sys.executable, "-c", _GPU_TYPING, root], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in __import__("os").environ.items() if k != "COURSE_BACKEND"})
    assert "checked 21 kernels" in done.stdout, done.stdout + done.stderr
    assert "GPU typing errors: []" in done.stdout, done.stdout


def test_bank_explorer_pass_colours_stay_distinct_and_the_tile_sits_by_its_controls():
    from course.show.widgets import banks

    colours = [banks._pass_colour(p) for p in range(32)]  # a 32-way conflict has 32 passes
    assert len(set(colours)) == 32
    ex = banks.bank_explorer(pattern="column")
    top = ex.widget.children[0]
    assert ex.w_tile in top.children and ex.w_pad in top.children[0].children  # picture beside the controls
    assert ex.w_pattern.style.button_width == "auto"  # "expression" is not cut
