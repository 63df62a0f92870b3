"""The exercise contract: references pass, wrong kernels fail with the right message, the kernel rules, solutions → exercises."""

import ast
import pathlib
import re
import textwrap

import nbformat
import numpy as np
import pytest

import course  # noqa: F401  (backend first)
import numba
from numba import cuda, float32

from course import exercises as E

ROOT = pathlib.Path(__file__).resolve().parents[1]
TILE = 32


# --- every exercise accepts the course's own kernel ------------------------------------------------


@pytest.mark.parametrize("name", [n for n, ex in E.EXERCISES.items() if ex.reference is not None])
def test_reference_kernel_gets_full_marks(name):
    ex = E.get(name)
    v = E.judge(ex, ex.reference(), seed=1)
    assert v.status == "pass" and v.score == v.max_score == ex.max_score - _not_judged(v), str(v)


def _not_judged(v) -> int:
    """Checks this machine cannot judge (no CUDA compiler: 03.bin_counts' local memory), each saying how to get it."""
    missing = [r for r in v.results if not r.judged]
    assert all("make toolkit" in r.detail for r in missing), str(v)
    return len(missing)


def test_every_chapter_with_a_notebook_solution_has_exercises():
    chapters = {int(p.name[:2]) for p in (ROOT / "solutions").glob("*.ipynb")}
    assert {1, 2, 3, 4, 5} <= chapters
    assert len(E.by_chapter(5)) >= 3
    for ch in chapters:
        assert E.by_chapter(ch), f"solutions/ has chapter {ch:02d} but no exercise is registered for it"


def test_inputs_are_fresh_and_include_edge_shapes():
    ex = E.get("05.transpose_padded")
    a = ex.make_inputs(np.random.default_rng(1))
    b = ex.make_inputs(np.random.default_rng(2))
    shapes = [i.args[0].shape[1:] for i in a]  # (batch, rows, cols): a batch of matrices
    assert (1, 1) in shapes and (17, 16) in shapes and (1, 33) in shapes and (37, 31) in shapes
    assert any(i.args[0].shape[0] > 1 for i in a)  # a batch of more than one: blockIdx.z must matter
    assert not np.array_equal(a[1].args[0], b[1].args[0])  # same shape, new data
    for inp in a:  # the expected answer is NumPy's transpose of each matrix, and the output starts out unwritten
        np.testing.assert_array_equal(inp.expected[1], np.transpose(inp.args[0], (0, 2, 1)))
        assert np.isnan(inp.args[1]).all()
    sizes = [i.args[3] for i in E.get("01.vector_add").make_inputs(np.random.default_rng(0))]
    assert 1 in sizes and 127 in sizes and 257 in sizes and any(n % E.catalogue.ch01.VEC_TPB for n in sizes)


# --- wrong solutions fail, each with the message that names the mistake ----------------------------


@cuda.jit
def add_off_by_one(a, b, out, n):
    i = cuda.grid(1)
    if i <= n:
        out[i] = a[i] + b[i]


@cuda.jit
def add_stops_short(a, b, out, n):
    i = cuda.grid(1)
    if i < n - 1:
        out[i] = a[i] + b[i]


def test_off_by_one_guards():
    v = E.judge(E.get("01.vector_add"), add_off_by_one, seed=0)
    assert v.status == "error" and v.score == 0
    assert "out of bounds" in v.message and "n=1" in v.message
    v = E.judge(E.get("01.vector_add"), add_stops_short, seed=0)
    assert v.status == "fail" and "out[0] is NaN: never written" in v.message  # n=1: nothing written at all
    assert "guard" in v.hint


@cuda.jit
def matrix_add_column_major(a, b, out):
    i = cuda.grid(1)  # the flat index split as if the matrix were stored by columns
    rows = a.shape[0]
    if i < a.size:
        row = i % rows
        col = i // rows
        out[row, col] = a[row, col] + b[col]


@cuda.jit
def matrix_add_unguarded(a, b, out):
    i = cuda.grid(1)  # no guard: the last block's threads past rows * cols split into a row past the end
    row = i // a.shape[1]
    col = i % a.shape[1]
    out[row, col] = a[row, col] + b[col]


def test_a_flat_index_split_by_columns_or_unguarded():
    v = E.judge(E.get("01.matrix_add"), matrix_add_column_major, seed=0)
    # every element right, but consecutive lanes walk down a column: 16 rows of 64 floats, 256 bytes apart
    assert v.results[0].passed and v.status == "partial", str(v)
    failed = {r.what: r.detail for r in v.results if not r.passed}
    assert set(failed) == {"coalesced global loads (合并访存)", "coalesced global stores (合并访存)"}, str(v)
    assert "in the order" in E.get("01.matrix_add").task
    v = E.judge(E.get("01.matrix_add"), matrix_add_unguarded, seed=0)
    assert v.status == "error" and "1x1" in v.message and "out of bounds" in v.message, str(v)
    assert "guard the flat index" in v.hint


@cuda.jit
def transpose_pad34(src, dst):
    tile = cuda.shared.array((TILE, 34), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    out_row = cuda.blockIdx.x * TILE + ty
    out_col = cuda.blockIdx.y * TILE + tx
    for b in range(src.shape[0]):
        if row < src.shape[1] and col < src.shape[2]:
            tile[ty, tx] = src[b, row, col]
        cuda.syncthreads()
        if out_row < dst.shape[1] and out_col < dst.shape[2]:
            dst[b, out_row, out_col] = tile[tx, ty]
        cuda.syncthreads()


def test_padding_34_is_a_two_way_conflict():
    # lane tx reads word tx*34 + ty: bank (2*tx + ty) % 32, so lanes tx and tx + 16 share a bank: 2 passes
    v = E.judge(E.get("05.transpose_padded"), transpose_pad34, seed=0)
    assert v.status == "partial" and v.score == v.max_score - 1
    failed = [r for r in v.results if not r.passed]
    assert len(failed) == 1 and "tile read" in failed[0].what
    assert "2.00 wavefronts per request" in failed[0].detail
    assert "coprime" not in v.hint and "bank" in v.hint  # teaches, does not give the number away


@cuda.jit
def row_sums_no_shared(a, out):
    row = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    if cuda.threadIdx.y == 0 and row < a.shape[0]:
        s = float32(0)
        for c in range(TILE):
            s += a[row, c]
        out[row] = s


def test_skipping_shared_memory_fails():
    v = E.judge(E.get("04.row_sums"), row_sums_no_shared, seed=0)
    assert v.status == "partial"
    failed = {r.what: r.detail for r in v.results if not r.passed}
    assert "uses shared memory (共享内存)" in failed
    # each lane walks its own row: 32 lanes x 32 different rows (128 bytes apart) = 32 sectors per load
    assert failed["coalesced global loads (合并访存)"].startswith("32.00 sectors per request")


@cuda.jit
def transpose_pad_expression(src, dst):
    tile = cuda.shared.array((TILE, TILE + 1), float32)  # right on the CPU; numba-cuda's typing refuses the shape
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    b = cuda.blockIdx.z
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    if row < src.shape[1] and col < src.shape[2]:
        tile[ty, tx] = src[b, row, col]
    cuda.syncthreads()
    out_row = cuda.blockIdx.x * TILE + ty
    out_col = cuda.blockIdx.y * TILE + tx
    if out_row < dst.shape[1] and out_col < dst.shape[2]:
        dst[b, out_row, out_col] = tile[tx, ty]


def test_a_tile_shape_a_gpu_cannot_compile_is_an_error_that_says_how_to_write_it():
    v = E.judge(E.get("05.transpose_padded"), transpose_pad_expression, seed=0)
    assert v.status == "error" and v.score == 0
    assert "TILE + 1" in v.message and "TILE_PAD = TILE + 1" in v.message, v.message


@cuda.jit
def row_sums_no_barrier(a, out):
    # warps 0-6 load the tile, the last warp sums it, and nobody waits: right in the engine's default order
    tile = cuda.shared.array((TILE, 33), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.x * TILE
    if ty < 7:
        for r in range(ty, TILE, 7):
            if row0 + r < a.shape[0]:
                tile[r, tx] = a[row0 + r, tx]
    if ty == 7 and row0 + tx < a.shape[0]:
        s = float32(0)
        for c in range(TILE):
            s += tile[tx, c]
        out[row0 + tx] = s


def test_missing_barrier_is_a_race_even_when_the_result_is_right():
    v = E.judge(E.get("04.row_sums"), row_sums_no_barrier, seed=0)
    assert v.results[0].passed, str(v)  # every result right ...
    failed = [r for r in v.results if not r.passed]
    assert [r.what for r in failed] == ["no race between threads"], str(v)  # ... and still not full marks
    assert "syncthreads" not in v.hint and "wait" in v.hint


def test_divergent_warps_cost_a_point_even_when_the_result_is_right():
    from course.kernels import warps

    # lane_branch picks the path by threadIdx.x parity: right answers, but every warp runs both loops
    v = E.judge(E.get("02.even_odd_paths"), warps.lane_branch, seed=0)
    assert v.results[0].passed and v.status == "partial", str(v)
    failed = [r for r in v.results if not r.passed]
    assert failed[0].what.startswith("no warp divergence")
    # half the lanes idle on each side of the branch: every warp execution on the trace input splits, one per
    # warp of its n (drawn per check: the input names it)
    warps_ = int(failed[0].input.split("n=")[1].split()[0]) // 32
    assert f"{warps_} of {warps_} warp executions split" in failed[0].detail


@cuda.jit
def kinetic_energy_aos(q, e):
    i = cuda.grid(1)  # q[i, field] on an (8, n) array: the array-of-structs order
    if i < q.shape[1]:
        e[i] = float32(0.5) * q[i, 6] * (q[i, 3] * q[i, 3] + q[i, 4] * q[i, 4] + q[i, 5] * q[i, 5])


def test_array_of_structs_indexing_is_caught():
    v = E.judge(E.get("03.kinetic_energy"), kinetic_energy_aos, seed=0)
    assert v.status == "error" and "out of bounds" in v.message and "wrong order" in v.hint


@cuda.jit
def transpose_stub(src, dst):
    raise NotImplementedError("05.transpose_padded: write it")


@cuda.jit
def counts_in_a_table(x, out):
    i = cuda.grid(1)
    if i < x.shape[1]:
        h = cuda.local.array(16, numba.int32)
        for b in range(16):
            h[b] = 0
        for k in range(x.shape[0]):
            h[x[k, i]] += 1
        for b in range(16):
            out[b, i] = h[b]


def test_a_check_this_machine_cannot_judge_says_so_and_is_left_out_of_the_score(monkeypatch):
    from course.trace import compiler_typing

    ex = E.get("03.bin_counts")
    monkeypatch.setattr(compiler_typing, "gpu_resources", lambda fn, argtypes: None)
    monkeypatch.setattr(compiler_typing, "resources_why", lambda fn, argtypes: "ptxas was not found")
    v = E.judge(ex, counts_in_a_table, seed=3)  # right counts; its table would be in local memory
    assert (v.status, v.score, v.max_score) == ("pass", 1, ex.max_score - 1), str(v)
    text = str(v)
    assert "NOT JUDGED HERE no local memory" in text and "ptxas was not found" in text and "make toolkit" in text
    assert v.message.startswith("all 1 checks judged here passed; not judged here: no local memory")
    assert not v.hint  # nothing to fix in the kernel


def test_untouched_stub_scores_zero():
    v = E.judge(E.get("05.transpose_padded"), transpose_stub)
    assert v.status == "not attempted" and v.score == 0


def test_check_prints_a_verdict_and_strict_mode_raises(capsys, monkeypatch):
    monkeypatch.delenv("COURSE_STRICT", raising=False)  # make test sets it for the notebooks
    v = E.check("05.transpose_padded", transpose_pad34, seed=0)
    out = capsys.readouterr().out
    assert "05.transpose_padded: PARTIAL" in out and "FAIL no bank conflicts on the tile read" in out
    assert "hint:" in out and re.search(r"input 2 x \d+x\d+ \(full tiles\)", out), out
    assert v.score == v.max_score - 1
    monkeypatch.setenv("COURSE_STRICT", "1")
    with pytest.raises(AssertionError, match="did not pass"):
        E.check("01.vector_add", add_off_by_one)
    with pytest.raises(KeyError, match="no exercise"):
        E.check("05.nonexistent", add_off_by_one)


def test_strict_mode_lets_a_chapter_ship_its_stub(capsys, monkeypatch):
    # the chapters end their sections in graded tasks whose kernel is the learner's to write: under
    # COURSE_STRICT=1 (make test) the untouched stub says "not attempted" and the notebook run goes on
    monkeypatch.setenv("COURSE_STRICT", "1")
    v = E.check("05.transpose_padded", transpose_stub)
    assert v.status == "not attempted" and "NOT ATTEMPTED" in capsys.readouterr().out.upper()


# --- what a graded kernel may use ------------------------------------------------------------------


def _lint(src, **names):
    fn = ast.parse(textwrap.dedent(src)).body[0]
    n = E.Names()
    for key, value in names.items():
        setattr(n, key, value)
    return E.lint_kernel(fn, n)


@pytest.mark.parametrize("body, word", [
    ("import os", "imports"),
    ("x = a.__class__", "__class__"),
    ("x = getattr(a, 'b')", "getattr"),
    ("open('/tmp/x', 'w')", "open"),
    ("x = np.sum(a)", "numpy functions"),
    ("x = cuda.api", "cuda.api"),
    ("x = [i for i in range(3)]", "list comprehensions"),
    ("x = a.tofile", ".tofile"),
    ("a.real[0] = 1", ".real"),  # a raw NumPy view would bypass the tracer
    ("x = __builtins__", "__builtins__"),
    ("x = f'{a}'", "f-strings"),
])
def test_lint_rejects_what_does_not_compile_or_could_reach_the_grader(body, word):
    problems = _lint(f"def k(a):\n    {body}\n")
    assert problems and word in problems[0][1], problems


def test_lint_accepts_ordinary_kernels():
    src = """
    def k(a, out):
        tile = cuda.shared.array((TILE, 33), float32)
        tx = cuda.threadIdx.x
        i, j = cuda.grid(2)
        if i < a.shape[0] and j < a.shape[1]:
            tile[tx, 0] = math.sqrt(a[i, j]) + helper(a[i, j])
        cuda.syncthreads()
        cuda.atomic.add(out, 0, 1)
        for c in range(min(TILE, a.shape[1])):
            out[c] = float32(tile[c, 0])
    """
    assert _lint(src, constants={"TILE"}, dtypes={"float32"}, device_functions={"helper"}) == []


# --- exercises/ generated from solutions/ --------------------------------------------------------------


def test_strip_solutions_keeps_the_signature_and_raises_with_a_hint():
    src = "@cuda.jit\ndef transpose_padded(src, dst):\n    # BEGIN SOLUTION\n    x = 1\n    # END SOLUTION\n"
    out = E.strip_solutions(src)
    assert "x = 1" not in out and "def transpose_padded(src, dst):" in out
    assert "    raise NotImplementedError('05.transpose_padded: " in out
    with pytest.raises(ValueError, match="no '# END SOLUTION'"):
        E.strip_solutions("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without a '# BEGIN SOLUTION'"):
        E.strip_solutions("x = 1\n# END SOLUTION\n")


def test_exercises_are_in_step_with_solutions():
    assert E.build(check_only=True) == [], "run `python -m course.exercises build` and commit exercises/"


def test_build_check_notices_drift(tmp_path):
    sol, exe = tmp_path / "solutions", tmp_path / "exercises"
    sol.mkdir()
    (sol / "05_transpose_solutions.ipynb").write_bytes((ROOT / "solutions/05_transpose_solutions.ipynb").read_bytes())
    assert E.build(check_only=True, solutions=sol, exercises=exe) == ["exercises/05_transpose_exercises.ipynb"]
    assert not exe.exists()  # --check changes nothing
    E.build(solutions=sol, exercises=exe)
    assert E.build(check_only=True, solutions=sol, exercises=exe) == []
    nb = nbformat.read(exe / "05_transpose_exercises.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    listed = nbformat.read(sol / "05_transpose_solutions.ipynb", as_version=4).metadata["course"]["exercises"]
    assert "BEGIN SOLUTION" not in code and code.count("raise NotImplementedError") == len(listed) == 5  # one stub each
    nb.cells[0].source += " edited"
    nbformat.write(nb, exe / "05_transpose_exercises.ipynb")
    assert E.build(check_only=True, solutions=sol, exercises=exe) == ["exercises/05_transpose_exercises.ipynb"]
    # an exercise notebook left behind by a renamed solution is named, and a solution misnamed is refused
    (exe / "05_transpose.ipynb").write_text("{}", encoding="utf-8")
    assert any("05_transpose.ipynb" in d and "05_transpose_solutions.ipynb" in d
               for d in E.build(check_only=True, solutions=sol, exercises=exe))
    (sol / "05_transpose_solutions.ipynb").rename(sol / "05_transpose.ipynb")
    with pytest.raises(SystemExit, match="rename it 05_transpose_solutions.ipynb"):
        E.build(check_only=True, solutions=sol, exercises=exe)


def test_a_chapter_its_exercises_and_its_solutions_have_names_of_their_own():
    """JupyterLab titles a tab with the file's name: three tabs of chapter 07 must not all read 07_reduction.ipynb."""
    from course.chapters import CHAPTERS

    for c in CHAPTERS:
        if not E.by_chapter(c.number):
            continue
        stem = f"{c.number:02d}_{c.slug}"
        paths = (ROOT / "notebooks" / f"{stem}.ipynb", ROOT / "exercises" / f"{stem}_exercises.ipynb",
                 ROOT / "solutions" / f"{stem}_solutions.ipynb")
        assert all(p.is_file() for p in paths), [str(p.relative_to(ROOT)) for p in paths if not p.is_file()]
    assert sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb")) == sorted(
        p.name.replace("_solutions.ipynb", "_exercises.ipynb") for p in (ROOT / "solutions").glob("*.ipynb"))


def test_committed_exercise_notebooks_carry_no_outputs():
    paths = [*ROOT.glob("solutions/*.ipynb"), *ROOT.glob("exercises/*.ipynb")]
    assert paths
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        for c in nb.cells:
            if c.cell_type == "code":
                assert c.outputs == [] and c.execution_count is None, p
        assert nb.metadata["course"]["exercises"], p


# --- every exercise's solution (solutions/*.ipynb) gets full marks --------------------------------


def _solution_function(name):
    """The function that solutions/<chapter>_solutions.ipynb defines for exercise ``name`` (its imports and solution cells run)."""
    from course.chapters import CHAPTERS

    ex = E.get(name)
    chapter = next(c for c in CHAPTERS if c.number == ex.chapter)
    return _run_definitions(ROOT / "solutions" / chapter.file.replace(".ipynb", "_solutions.ipynb"))[ex.target]


def _run_definitions(path):
    """Run a notebook's code cells in order, except the show(...) and check(...) calls: its definitions."""
    import linecache

    nb = nbformat.read(path, as_version=4)
    scope = {"__name__": "__main__"}  # a notebook's namespace, as IPython makes it
    for k, c in enumerate(nb.cells):
        if c.cell_type == "code" and not c.source.lstrip().startswith(("show(", "check(")):
            name = f"<{path.relative_to(ROOT)} cell {k}>"  # as IPython does: inspect.getsource finds each cell
            linecache.cache[name] = (len(c.source), None, c.source.splitlines(True), name)
            exec(compile(c.source, name, "exec"), scope)
    return scope


def test_every_chapter_has_its_exercises_in_its_solution_notebook():
    from course.chapters import CHAPTERS

    stems = {c.number: f"{c.number:02d}_{c.slug}" for c in CHAPTERS}
    for ch in range(1, 11):
        names = [ex.name for ex in E.by_chapter(ch)]
        assert len(names) >= 3, (ch, names)
        nb = nbformat.read(ROOT / "solutions" / f"{stems[ch]}_solutions.ipynb", as_version=4)
        assert nb.metadata["course"]["exercises"] == names
        assert (ROOT / "exercises" / f"{stems[ch]}_exercises.ipynb").is_file()


# Every solution's full marks are judged twice elsewhere, so not a third time here: by its own notebook (each
# solutions/ notebook calls check() on every exercise, and under the suite's COURSE_STRICT=1 a verdict short of a
# pass raises, so nbval fails), and by the grader from the notebook's source (tests/test_grade_solutions.py: every
# row at full marks).


@pytest.mark.parametrize("name", list(E.EXERCISES))
def test_untouched_exercise_notebook_scores_zero(name):
    # the stub that exercises/ holds (solution blocks stripped), judged as the notebook's check() would
    from course.chapters import CHAPTERS

    ex = E.get(name)
    chapter = next(c for c in CHAPTERS if c.number == ex.chapter)
    v = E.judge(ex, _run_definitions(ROOT / "exercises" / chapter.file.replace(".ipynb", "_exercises.ipynb"))[ex.target],
                seed=0)
    assert v.status == "not attempted" and v.score == 0, str(v)


@cuda.jit
def clamp_one_per_thread(x, out, lo, hi):
    col, row = cuda.grid(2)  # no loop: right only while the matrix fits in the grid's 64 x 8 threads
    if row < x.shape[0] and col < x.shape[1]:
        out[row, col] = min(max(x[row, col], lo), hi)


@cuda.jit
def clamp_column_runs(x, out, lo, hi):
    # each thread walks its own run of ceil(cols / 64) columns: correct, but lanes are a run apart
    col0, row0 = cuda.grid(2)
    width, height = cuda.gridsize(2)
    per = (x.shape[1] + width - 1) // width
    for row in range(row0, x.shape[0], height):
        for col in range(col0 * per, min(col0 * per + per, x.shape[1])):
            out[row, col] = min(max(x[row, col], lo), hi)


def test_grid_stride_without_the_loop_or_with_runs_fails():
    ex = E.get("06.clamp_grid_stride")
    v = E.judge(ex, clamp_one_per_thread, seed=0)
    # 64 x 8 threads: 1x1 is right, 17x16 leaves row 8 unwritten
    assert v.status == "fail" and v.score == 0
    assert "17x16" in v.message and "out[8, 0] is NaN: never written" in v.message, v.message
    assert "next one" in v.hint
    v = E.judge(ex, clamp_column_runs, seed=0)
    assert v.results[0].passed and v.status == "partial", str(v)
    failed = {r.what: r.detail for r in v.results if not r.passed}
    # c columns (drawn per check, a multiple of 64) over 64 threads: runs of c/64 floats, lanes 4c/64 bytes
    # apart: a request spans 32 x c/16 bytes = c/16 sectors (16 for the 256 columns it was always traced at)
    traced = next(r for r in v.results if r.what == "coalesced global loads (合并访存)").input  # "RxC (...)"
    cols = int(traced.split("x")[1].split()[0])
    want = f"{cols / 16:.2f} sectors per request"
    assert failed["coalesced global loads (合并访存)"].startswith(want), (want, failed)
    assert failed["coalesced global stores (合并访存)"].startswith(want), (want, failed)


@cuda.jit
def tree_sum_strided(a, out):
    # index = 2*stride*tid: no divergence to speak of, but at stride 1 lanes t and t + 16 read words 2t and 2t + 32
    s = cuda.shared.array(256, float32)
    tid = cuda.threadIdx.x
    v = float32(0)
    for col in range(tid, a.shape[1], 256):
        v += a[cuda.blockIdx.x, col]
    s[tid] = v
    cuda.syncthreads()
    stride = 1
    while stride < 256:
        index = 2 * stride * tid
        if index < 256:
            s[index] += s[index + stride]
        cuda.syncthreads()
        stride *= 2
    if tid == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def tree_sum_interleaved(a, out):
    # tid % (2*stride) == 0: conflict-free, but every warp splits at strides 1..16
    s = cuda.shared.array(256, float32)
    tid = cuda.threadIdx.x
    v = float32(0)
    for col in range(tid, a.shape[1], 256):
        v += a[cuda.blockIdx.x, col]
    s[tid] = v
    cuda.syncthreads()
    stride = 1
    while stride < 256:
        if tid % (2 * stride) == 0:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride *= 2
    if tid == 0:
        out[cuda.blockIdx.x] = s[0]


def test_reduction_tree_with_conflicts_or_divergence_loses_a_point():
    ex = E.get("07.tree_sum")
    v = E.judge(ex, tree_sum_strided, seed=0)
    assert v.results[0].passed and v.status == "partial", str(v)
    failed = [r for r in v.results if not r.passed]
    assert [r.what for r in failed] == ["no bank conflicts on the tree's shared loads (存储体冲突)"], str(v)
    assert "bank conflict" in failed[0].detail
    v = E.judge(ex, tree_sum_interleaved, seed=0)
    assert v.results[0].passed and v.status == "partial", str(v)
    failed = [r for r in v.results if not r.passed]
    assert len(failed) == 1 and failed[0].what.startswith("little warp divergence"), str(v)
    # per block: 8 warps x 5 steps (strides 1..16) + 4 + 2 + 1 (strides 32, 64, 128) + 1 at `if tid == 0` = 48
    # splits over 8 warps = 6.00 per warp
    assert "6.00 per warp" in failed[0].detail


@cuda.jit
def chunk_forgets_start(x, out, factor, start, count):
    i = cuda.grid(1)
    if i < count:
        out[i] = x[i] * factor


@cuda.jit
def chunk_guards_the_array(x, out, factor, start, count):
    j = start + cuda.grid(1)
    if j < x.shape[0]:  # stays inside the array, but runs over into the next chunk
        out[j] = x[j] * factor


def test_chunk_kernel_must_keep_to_its_chunk():
    ex = E.get("08.scale_chunk")
    v = E.judge(ex, chunk_forgets_start, seed=0)
    assert v.status == "fail" and "start=250" in v.message and "out[0] is" in v.message and "expected nan" in v.message
    v = E.judge(ex, chunk_guards_the_array, seed=0)
    # the first input's chunk is element 0 only; its block of 128 threads also writes elements 1..127
    assert v.status == "fail" and "start=0, count=1" in v.message and "127 of 1000 elements wrong" in v.message
    assert "other chunks" in v.hint


@cuda.jit
def tree_sum_runs(a, out):
    # each thread adds a run of neighbouring elements: right, but a warp's lanes read a run apart in each load
    s = cuda.shared.array(256, float32)
    tid = cuda.threadIdx.x
    per = (a.shape[1] + 255) // 256
    v = float32(0)
    for col in range(tid * per, min(tid * per + per, a.shape[1])):
        v += a[cuda.blockIdx.x, col]
    s[tid] = v
    cuda.syncthreads()
    stride = 128
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = s[0]


def test_reduction_tree_whose_first_loads_are_strided_loses_a_point():
    # rows of c columns (drawn per check, a multiple of 256): runs of c/256 floats, lanes 4c/256 bytes apart: c/256
    # times the sectors a request needs (4x for the rows of 1024 it was always traced at)
    v = E.judge(E.get("07.tree_sum"), tree_sum_runs, seed=0)
    assert v.results[0].passed and v.status == "partial", str(v)
    failed = [r for r in v.results if not r.passed]
    assert [r.what for r in failed] == ["coalesced global loads: no sector more than needed (合并访存)"], str(v)
    cols = int(failed[0].input.split("x")[1].split()[0])
    assert f"{cols / 256:.2f}× the minimum" in failed[0].detail, failed[0]


@cuda.jit
def add_minus(a, b, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a[i] - b[i]


@cuda.jit
def add_typo(a, b, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a[i] + b[i] + undefined_name  # noqa: F821


def test_the_hint_follows_the_mistake():
    ex = E.get("01.vector_add")
    # a - b writes every element, all wrong: the indexing hint ("only the first block's ...") does not fit
    v = E.judge(ex, add_minus, seed=0, lint=False)
    assert v.status == "fail" and v.hint != ex.hint_wrong and "formula" in v.hint
    # stops short of the end: some right, some never written, the exercise's own hint
    v = E.judge(ex, add_stops_short, seed=0)
    assert v.hint == ex.hint_wrong
    # does not run at all: the hint points to the error, not to the rows of a tile
    v = E.judge(ex, add_typo, seed=0, lint=False)
    assert v.status == "error" and v.hint != ex.hint_wrong and "error above" in v.hint


def test_every_notebook_carries_the_chapters_kernel_metadata():
    # a notebook whose language_info is only {"name": "python"} shows as modified as soon as its kernel starts
    import json
    import pathlib

    from course.exercises.build import KERNEL_METADATA

    root = pathlib.Path(__file__).resolve().parent.parent
    chapter = json.loads((root / "notebooks" / "00_start_here.ipynb").read_text(encoding="utf-8"))["metadata"]
    assert {k: chapter[k] for k in KERNEL_METADATA} == KERNEL_METADATA
    for folder in ("notebooks", "solutions", "exercises"):
        for path in sorted((root / folder).glob("*.ipynb")):
            meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
            for key, want in KERNEL_METADATA.items():
                assert meta.get(key) == want, f"{folder}/{path.name}: metadata {key} is {meta.get(key)}, not the chapters'"
