"""Wrong solutions fail for the right reason: one plausible mistake per exercise in each fixture notebook.

tests/fixtures/submissions/wrong/wrong_kernels_a.ipynb and wrong_kernels_b.ipynb hold, for every exercise
added by issue 15 (and the changed ones), a wrong answer named as the exercise asks, with a comment that says
what is wrong. Each is judged the way the grader judges a submission: found in the notebook's source,
linted, compiled in this process (course.grading.grade.scan / judge_one; host code with course.exercises.host
.compile_host), then judged. The expected status and the words that must appear in the verdict come from
what each mistake is, written here by hand, not from the grader's output.
"""

import pathlib
import re

import nbformat
import numpy as np
import pytest

from conftest import seeded_rng
from course import exercises as E
from numba import cuda, float32

ROOT = pathlib.Path(__file__).resolve().parents[1]
WRONG = ROOT / "tests" / "fixtures" / "submissions" / "wrong"

# exercise -> (status, words the message must contain, words the hint must contain) for each fixture; the traced
# size is drawn per check (course.exercises.inputs.trace_size), so a word may name it: "{n}" stands for the traced n
# the message names ("[input n=...]", also of a split), "{warps}" for its warps, ceil(n / 32), "{mkn}" for m*k*n of
# a traced product ("[input MxK @ KxN"), "{cols/16}", "{cols/8}" for the columns of a traced "RxC" over 16, 8 (at most 32), "{thirds}" for the even three-way shares of n ([n//3, 2n//3 - n//3, ...])
EXPECT_A = {
    "01.saxpy": ("fail", ["n=513", "out[512] is NaN: never written"], ["blockIdx.y"]),
    "01.reverse": ("error", ["out of bounds", "n=1"], ["negative"]),
    "01.matrix_add": ("error", ["out of bounds", "17x16", "b[row]"], ["flat index"]),
    "01.pair_sums": ("error", ["out of bounds", "n=1", "x[2 * j + 1]"], ["second element"]),
    "02.leaky_relu": ("partial", ["no warp divergence", "if x[i] > 0:"], ["max()"]),
    "02.global_warp": ("fail", ["correct result", "blocks of (10, 5)"], ["whole number of warps"]),
    "02.scale_channels": ("partial", ["full warps", "lanes active per warp step"], ["idle"]),  # 48 of 128 lanes
    "03.soa_to_aos": ("partial", ["coalesced global stores", "32.00 sectors per request"], ["float k"]),
    "04.row_sums_swizzled": ("partial", ["4224 bytes of shared memory", "want at most 4096"], ["swizzle"]),
    "02.count_positive": ("partial", ["few global atomics", "want at most {warps}"], ["lane"]),
    "02.warp_sum_fixed": ("partial", ["no race between threads", "s[t] += s[t + offset]"], ["lockstep"]),
    "03.kinetic_energy": ("error", ["out of bounds", "q[i, VX]"], ["wrong order"]),
    "03.column_sums": ("partial", ["{cols/16} sectors per request"], ["neighbours"]),  # lanes cols/64 columns apart
    "03.aos_to_soa": ("partial", ["coalesced global loads", "32.00 sectors per request"], ["float k"]),
    # 32 lanes read 32 consecutive weights of 64 (wrapping): 4 sectors when j % 8 == 0, else 5: 312 / 64 per step
    "03.weighted_sum": ("partial", ["broadcast loads of w", "4.88 sectors per request on the"], ["depends on the lane"]),
    "04.stencil_1d": ("partial", ["uses shared memory", "reads global memory about once"], ["tile"]),
    "04.histogram": ("partial", ["uses shared memory", "{n} atomic operations"], ["shared"]),
    # ptxas merges the unpadded tile's 8 reads into two 16-byte loads, which conflict 2-way (8-way as 4-byte reads)
    "04.segment_sums": ("partial", ["no bank conflicts on the tile's strided read", "-way bank conflict"], ["gcd(8, 32)"]),
    # [lane, warp] with 8 warps: lane l at word 8l, banks 0, 8, 16, 24 with 8 distinct words each
    "04.warp_rotate": ("partial", ["no bank conflicts on shared stores", "8.00 wavefronts per request",
                                   "8-way bank conflict"], ["[lane, warp]"]),
    # a lane per float straight to dst: a warp's 16 pairs land in 16 rows of dst, 8 bytes in one sector each
    "05.transpose_pairs": ("partial", ["coalesced global stores", "16.00 sectors per request",
                                       "never goes through shared memory"], ["naive transpose"]),
    "05.transpose_padded": ("fail", ["correct result", "2 x 17x16", "no race between threads"], ["wait"]),
    "05.transpose_swizzled": ("partial", ["4224 bytes of shared memory"], ["swizzle"]),
    # the flat index walks src, as naive's threads do: each lane's 4 bytes of dst in a sector of their own
    "05.transpose_flat": ("partial", ["coalesced global stores", "32.00 sectors per request"], ["row length of dst"]),
    # chains 0 and 1 walked together, then 2 and 3: each load of nxt needs the value of the load two before it
    "03.chase_interleaved": ("partial", ["4 chases in flight", "needs the value of the load 2 loads before it",
                                         "want at least 4 loads apart"], ["Walking chain 0"]),
    # h[x[k, i]] += 1 in a 16-int table: ptxas gives it a 64-byte stack frame (judged where the compiler is installed)
    "03.bin_counts": ("partial", ["no local memory", "64 bytes of local memory per thread"], ["indexed by data"]),
    "05.transpose_mine": ("partial", ["coalesced global stores", "32.00 sectors per request"], ["store"]),
    "06.clamp_grid_stride": ("partial", ["{cols/16} sectors per request"], ["jump"]),  # runs of cols/64 floats
    "06.max_grid_stride": ("partial", ["{n} atomic operations", "want at most 8"], ["shuffles"]),  # one per element
    "06.scale_coarsened": ("partial", ["coalesced global loads", "16.00 sectors per request"], ["128 apart"]),
    "06.dot_grid_stride": ("partial", ["512 atomic operations", "want at most 2"], ["shared memory"]),
    "06.sum_grid_stride": ("partial", ["{n} atomic operations", "want at most 256"], ["register"]),
    "06.stencil_2d": ("partial", ["uses shared memory", "reads global memory about once"], ["tile"]),
    "07.block_sums_shuffle": ("partial", ["1024 bytes of shared memory", "want at most 128"], ["registers"]),
    "07.inclusive_scan": ("fail", ["correct result", "no race between threads"], ["wait"]),
    "07.min_max_blocks": ("fail", ["correct result", "is 0, expected"], ["+inf"]),  # a padded 0 wins
    "07.exclusive_scan": ("fail", ["correct result"], ["inclusive"]),
    "07.block_sums_sequential": ("partial", ["little warp divergence", "6.00 per warp"], ["0 .. stride - 1"]),
    "07.block_sums_unrolled": ("partial", ["coalesced global loads", "16.00 sectors per request"], ["128 apart"]),
    "07.warp_atomic_sum": ("partial", ["{n} atomic operations", "want at most {warps}"], ["shuffles first"]),
    # one element per 4-byte load, coalesced: a request of 32 lanes x 4 bytes, 4 sectors, where float4 loads make 16
    "07.float4_warp_sum": ("partial", ["16-byte loads by whole warps", "4.00 sectors per request"], ["load_float4"]),
    # contiguous threads on words 2·stride·t (block_strided's indexing): 1.5 splits per warp, but bank conflicts
    "07.tree_max_fixed": ("partial", ["no bank conflicts on the tree's shared loads", "-way bank conflict"],
                          ["2·stride apart"]),
    # thread 0 zeroes row b, then lane 0 of each warp adds the warp's two sums with atomics: right, but atomics
    "07.partial_moments": ("partial", ["no global atomics", "atomic operations on global memory (want none)"],
                           ["owns row b"]),
    "08.dot_mapped": ("partial", ["{n} atomic operations", "want at most 4"], ["block"]),  # one per element
    "08.pipeline": ("partial", ["0 of 32 copies use pinned host memory", "modelled time 1.00"], ["pinned"]),
    "09.matvec": ("partial", ["{cols/8} sectors per request"], ["neighbouring columns"]),  # runs of cols/32 floats
    # how many ways depends on which loads ptxas merges into LDS.64/.128, which differs between CUDA versions
    # (3-way with this machine's ptxas 13.5, 4.5-way with the H200's 13.0): the reason is the conflict
    "09.matmul_abt": ("partial", ["no bank conflicts on the tile reads", "-way bank conflict"], ["bank"]),
    # a plain tiled inner loop: 4 shared loads for 2 multiply-adds, twice the 1 per multiply-add allowed
    "09.sgemm_regtile": ("partial", ["{2mkn/32} shared-memory load requests", "want at most {mkn/32}"],
                         ["two multiply-adds"]),
    "09.matvec_t": ("error", ["out of bounds", "17x16", "a[r, c]"], ["a.shape[1]"]),
    # the seed's k // 32 steps: no step at all when k < 32, so the 1x1 product is left at 0
    "09.tiled_rect": ("fail", ["correct result", "is 0, expected"], ["rounded up"]),
    # 09.matvec's 4-byte loads: coalesced, but 4 requests of 4 sectors where one 16-byte load makes one of 16
    "09.matvec_float4": ("partial", ["16-byte loads by whole warps", "4.00 sectors per request"], ["gload4"]),
    "10.scale_rows_fixed": ("partial", ["coalesced global loads", "coalesced global stores"], ["trace"]),
    "10.block_reverse_fixed": ("fail", ["no race between threads", "out[i] = s[count - 1 - t]"], ["wait"]),
    "10.softmax_rows": ("fail", ["correct result", "large values"], ["maximum"]),
    "10.diff_fixed": ("error", ["out of bounds", "n=1", "x[i + 1]"], ["engine names the line"]),
    "11.split_scale": ("partial", ["each device gets its share of x", "{thirds}"], ["w[0]"]),  # weights ignored
    "11.split_stencil": ("fail", ["correct result", "elements wrong"], ["neighbours"]),
}
EXPECT_B = {
    "01.saxpy": ("error", ["out of bounds", "n=1"], ["x.shape[0]"]),
    "01.reverse": ("fail", ["never written", "n=131"], ["by hand"]),
    "01.matrix_add": ("partial", ["coalesced global loads", "coalesced global stores"], ["row-major"]),
    "01.pair_sums": ("fail", ["correct result", "n=255"], ["2j + 1"]),
    "02.leaky_relu": ("fail", ["correct result"], ["positive part"]),
    "02.global_warp": ("fail", ["correct result", "blocks of (12, 8)"], ["x fastest"]),
    "02.scale_channels": ("fail", ["correct result", "out[0, 32] is NaN"], ["not the block size or 32"]),
    "03.soa_to_aos": ("fail", ["correct result", "p[0, 1] is NaN: never written"], ["8n floats"]),
    "04.row_sums_swizzled": ("fail", ["correct result"], ["swizzled column"]),
    "02.count_positive": ("fail", ["correct result", "expected 1"], ["only one lane"]),
    "02.warp_sum_fixed": ("fail", ["correct result", "no race between threads"], ["wait"]),
    # data-dependent: the first input on which the wrong kernel is wrong (small integers can make n=1 right by luck)
    "03.kinetic_energy": ("fail", ["correct result"], ["vx"]),
    "03.column_sums": ("fail", ["correct result", "17x16"], ["all rows"]),
    "03.aos_to_soa": ("error", ["out of bounds", "q[i, f]"], ["8n floats"]),
    # w[0] left out: wrong on the first input whose w[0] * x[0, i] is not 0 (small integers: 1x1 may be 0 * x)
    "03.weighted_sum": ("fail", ["correct result"], ["k = 0 .. m - 1"]),
    "04.stencil_1d": ("fail", ["correct result", "n=129"], ["halo"]),
    "04.histogram": ("fail", ["correct result", "no race between threads", "h[t] = 0"], ["wait"]),
    "04.segment_sums": ("fail", ["correct result", "n=296"], ["read back at the same place"]),
    "04.warp_rotate": ("fail", ["correct result", "n=32"], ["lane 31 wraps to lane 0"]),  # rotated right
    "05.transpose_pairs": ("fail", ["correct result", "no race between threads"], ["wait"]),  # no barrier
    "05.transpose_padded": ("partial", ["2.00 wavefronts per request", "2-way bank conflict"], ["bank"]),
    "05.transpose_swizzled": ("fail", ["never written", "no race between threads"], ["wait"]),
    # split by dst.shape[0] (src's column count): the read leaves src on the first matrix that is not square
    "05.transpose_flat": ("error", ["out of bounds", "17x16"], ["dst.shape[1]"]),
    # chain 1 follows chain 0's position: out[0, 1] is two steps along chain 0, on the first input (one step)
    "03.chase_interleaved": ("fail", ["correct result", "out[0, 1] is", "1x4 starts, 1 steps"], ["its own walk"]),
    "03.bin_counts": ("fail", ["correct result", "out[15, 0] is -1", "1x1"], ["all 16 values b"]),
    "05.transpose_mine": ("fail", ["never written", "1x33"], ["tile row and column"]),
    "06.clamp_grid_stride": ("fail", ["17x16", "out[8, 0] is NaN: never written"], ["next one"]),
    # on mixed data the maximum is positive and a start at 0 goes unseen; the all-negative input catches it
    "06.max_grid_stride": ("fail", ["correct result", "is 0, expected"], ["-inf"]),
    "06.scale_coarsened": ("fail", ["n=129", "out[128] is NaN: never written"], ["128 apart"]),
    "06.dot_grid_stride": ("fail", ["correct result", "NaN"], ["first 8 slots"]),
    # no input named: n=257 loses only x[256], which a draw makes 0 once in a hundred (then n=2000-odd fails)
    "06.sum_grid_stride": ("fail", ["correct result", "elements wrong"], ["exactly once"]),
    "06.stencil_2d": ("fail", ["correct result", "1x33"], ["halo"]),
    # only warp 0's sum: wrong on any input with a second warp, the first such input named (n=33 is right by luck
    # when its one element past warp 0 is 0: small integers, drawn per run; COURSE_TEST_SEED=2942153315 drew one)
    "07.block_sums_shuffle": ("fail", ["correct result", "elements wrong"], ["shuffle"]),
    "07.inclusive_scan": ("fail", ["correct result"], ["2d elements"]),  # n=1 is right by luck when a[0] is 0
    "07.min_max_blocks": ("partial", ["no bank conflicts on the tree's shared loads", "-way bank conflict"], ["bank"]),
    "07.exclusive_scan": ("fail", ["correct result", "no race between threads", "s[t] += s[t - d]"], ["wait"]),
    "07.block_sums_sequential": ("partial", ["no bank conflicts on the tree's shared loads", "-way bank conflict"],
                                 ["block_strided"]),
    # thread 0 alone: each load a request of one lane, 1 sector (coalesced by sectors per request), n requests
    "07.block_sums_unrolled": ("partial", ["{n} global load requests for {n} elements"], ["few lanes"]),
    "07.warp_atomic_sum": ("fail", ["correct result", "n=33"], ["only one lane"]),  # every lane adds its partial
    # the n % 4 leftovers lost: wrong on n=3 (all tail), unless its elements add up to 0, then on the next input
    "07.float4_warp_sum": ("fail", ["correct result", "out[0] is"], ["n % 4"]),
    # 0 instead of -inf past the end: a negative maximum comes out 0 (n=1 when its element is negative, else the
    # short all-negative block)
    "07.tree_max_fixed": ("fail", ["correct result", "out[0] is 0, expected -"], ["-inf"]),
    # `if q >= n: return` before the barrier: on n=1, 127 threads of block 0 are gone when thread 0 reaches it
    "07.partial_moments": ("error", ["n=1", "finished without reaching it", "early `return`"],
                           ["error above names the line"]),
    "08.dot_mapped": ("partial", ["reads global memory about once", "want at most {n/4}"], ["neighbouring"]),
    "08.pipeline": ("partial", ["modelled time 0.50", "returns without waiting"], ["more chunks"]),
    "09.matvec": ("fail", ["y[0] is NaN: never written"], ["lane"]),
    "09.matmul_abt": ("partial", ["coalesced global loads", "10.00 sectors per request"], ["contiguous along k"]),
    "09.sgemm_regtile": ("partial", ["coalesced global stores", "8.00 sectors per request"], ["spacing"]),
    "10.scale_rows_fixed": ("error", ["out of bounds", "17x16"], ["a.shape[1]"]),
    "10.block_reverse_fixed": ("error", ["out of bounds", "s[t] = x[i]"], ["past the end"]),
    "10.softmax_rows": ("partial", ["512 bytes of shared memory", "want at most 0"], ["shuffles"]),
    "09.matvec_t": ("fail", ["correct result"], ["x[r]"]),
    "09.tiled_rect": ("error", ["out of bounds", "c[row, col] = s"], ["the store"]),
    # a run of float4s per lane: lanes at least 32 bytes apart, one sector each
    "09.matvec_float4": ("partial", ["16-byte loads by whole warps", "32.00 sectors per request"], ["neighbours"]),
    "10.diff_fixed": ("fail", ["correct result", "out[0] is NaN: never written"], ["still writes"]),
    "11.split_scale": ("partial", ["launches per device: {0: 3}", "got arrays of device(s)"], ["with cuda.gpus[d]"]),
    "11.split_stencil": ("partial", ["copied to each device: [{n}, {n}, {n}]", "not the whole vector"],
                         ["no more"]),
}


def _traced_words(word: str, msg: str) -> str:
    """``word`` with the traced size the message names put in for its placeholders (see EXPECT_A)."""
    if "{" not in word:
        return word
    vals = {}
    n = re.search(r"\[input n=(\d+)", msg)
    if n:
        n = int(n.group(1))
        thirds = [n // 3, 2 * n // 3 - n // 3, n - 2 * n // 3]
        vals.update({"n": n, "warps": -(-n // 32), "n/4": n // 4, "thirds": str(thirds)})
    rc = re.search(r"\[input (\d+)x(\d+) \(", msg)
    if rc:
        cols = int(rc.group(2))  # lanes 4 cols/k bytes apart: a request spans 32 sectors at most
        vals.update({"cols/16": f"{min(cols / 16, 32):.2f}", "cols/8": f"{min(cols / 8, 32):.2f}"})
    mm = re.search(r"\[input (\d+)x(\d+) @ (\d+)x(\d+)", msg)
    if mm:
        m, k, _, n2 = map(int, mm.groups())
        vals.update({"mkn/32": m * k * n2 // 32, "2mkn/32": 2 * m * k * n2 // 32})
    names = ("n", "warps", "n/4", "thirds", "mkn/32", "2mkn/32", "cols/16", "cols/8")  # anything else in braces is the message's own
    return re.sub(r"\{([^}]+)\}", lambda g: str(vals[g.group(1)]) if g.group(1) in names else g.group(0), word)


def _judged(path):
    from course.exercises import host
    from course.grading.grade import judge_one, scan

    nb = nbformat.read(path, as_version=4)
    found = scan(nb)
    rows = {}
    for name in nb.metadata["course"]["exercises"]:
        ex = E.get(name)
        if ex.host:  # host code: what the grader compiles (the exercise's host_compile, else host.compile_host)
            node = found.defs[ex.target][1]
            compile_host = ex.host_compile or host.compile_host
            v = E.judge(ex, compile_host(node, f"<{path.name}>"), seed=0, lint=False)
            rows[name] = {"status": v.status, "score": v.score, "max_score": v.max_score, "message": v.message,
                          "hint": v.hint}
        else:  # inputs drawn from the run's seed: a failure prints the COURSE_TEST_SEED that draws them again
            seed = int(seeded_rng("wrong", path.name, name).integers(1 << 31))
            rows[name] = judge_one(found, ex, launch_timeout=20, seed=seed)
    return rows


#: properties read from what the GPU compiler makes of the kernel (ptxas): judged only where the compiler is installed
NEEDS_COMPILER = {"03.bin_counts"}


def _compiler_here() -> bool:
    from course.trace import compiler

    return compiler.toolchain() is not None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # softmax without its maximum overflows, as it should
@pytest.mark.parametrize("which, expect", [("a", EXPECT_A), ("b", EXPECT_B)], ids=["a", "b"])
def test_wrong_solutions_fail_for_the_right_reason(which, expect):
    path = WRONG / f"wrong_kernels_{which}.ipynb"
    rows = _judged(path)
    assert set(rows) == set(expect)
    problems = []
    for name, (status, words, hint_words) in expect.items():
        r = rows[name]
        msg, hint = " ".join(r["message"].split()), " ".join(r.get("hint", "").split())
        words = [_traced_words(w, msg) for w in words]
        if name in NEEDS_COMPILER and status == "partial" and not _compiler_here():
            # no compiler: the property is not judged, said so, and left out of the score (never passed or failed)
            if r["status"] != "pass" or "not judged here" not in msg or "make toolkit" not in msg:
                problems.append(f"{name}: without a compiler, expected a pass that says what was not judged: {msg}")
            continue
        if r["status"] != status or int(r["score"]) >= int(r["max_score"]):
            problems.append(f"{name}: {r['status']} {r['score']}/{r['max_score']}, expected {status}: {msg}")
        problems += [f"{name}: {w!r} not in the message: {msg}" for w in words if w not in msg]
        problems += [f"{name}: {w!r} not in the hint: {hint}" for w in hint_words if w not in hint]
    assert not problems, "\n".join(problems)


def test_every_new_exercise_has_two_wrong_fixtures_or_a_test():
    import json

    listed = {which: set(json.loads((WRONG / f"wrong_kernels_{which}.ipynb").read_text())["metadata"]["course"]
                         ["exercises"]) for which in "ab"}
    # these have their wrong answers in tests/test_exercises.py (11.split_sum: tests/test_exercise_split.py)
    older = {"01.vector_add", "02.even_odd_paths", "04.row_sums", "07.tree_sum", "08.scale_chunk", "11.split_sum"}
    for name in set(E.EXERCISES) - older:  # issue 15's exercises of chapters 01-10, and issue 25's of 01-11
        assert name in listed["a"], name
        assert name in listed["b"], name


# --- 07.float4_warp_sum: the chapter's atomic_float4 is not its answer, nor four 4-byte loads ----------------


def test_float4_warp_sum_is_not_the_chapters_atomic_float4():
    from course.kernels import reduction as R

    # atomic_float4 loads as the exercise asks and gets every sum right, but adds with one atomic per thread: a[4q] ..
    # a[4q + 3] in one atomic each, 32 per warp where the exercise wants one
    v = E.judge(E.get("07.float4_warp_sum"), R.atomic_float4, seed=0)
    failed = [r for r in v.results if not r.passed]
    assert v.status == "partial" and [r.what for r in failed] == [
        "few global atomics: at most one per warp of 128 elements (原子操作)"], str(v)
    n = int(re.search(r"\[input n=(\d+)", v.message).group(1))
    assert f"{n // 4} atomic operations on global memory (want at most {n // 128}" in v.message, v.message


@cuda.jit
def _float4_by_hand(a, out):
    # the float4 read as four 4-byte loads a[4q + k]: the right sum and one atomic per warp, but four requests where
    # one would do, each of them over the same 16 sectors (lanes 16 bytes apart)
    q = cuda.grid(1)
    n4 = a.shape[0] // 4
    v = float32(0)
    if q < n4:
        v = (a[4 * q] + a[4 * q + 1]) + (a[4 * q + 2] + a[4 * q + 3])
    if 4 * n4 + q < a.shape[0]:
        v += a[4 * n4 + q]
    for off in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
    if cuda.laneid == 0 and (q < n4 or 4 * n4 + q < a.shape[0]):
        cuda.atomic.add(out, 0, v)


def test_float4_warp_sum_wants_one_16_byte_load_not_four_4_byte_ones():
    v = E.judge(E.get("07.float4_warp_sum"), _float4_by_hand, seed=0)
    assert v.status == "partial" and v.score == v.max_score - 1, str(v)
    n = int(re.search(r"\[input n=(\d+)", v.message).group(1))
    # n / 32 requests (4 per warp of float4s) of 16 sectors each: 4n / 8 sectors, four times the n / 8 the bytes need
    assert f"{n // 32} global load requests for {n} elements, {n // 2} sectors: 16.00 sectors per request" in v.message
    assert f"want at most {n // 128} requests" in v.message and "load_float4" in v.hint, str(v)


# --- 07.partial_moments: the right partials from loads that are not coalesced ------------------------------


@cuda.jit
def _moments_by_runs(a, partials):
    # block b's elements as the grid-stride loop hands them out, but each thread adds one 128-float run of them
    # (b·128 + 1024·t + j): the right partials, every lane of a load 1024 floats from its neighbour
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * cuda.blockDim.x + t * cuda.gridsize(1)
    sums = float32(0)
    squares = float32(0)
    for j in range(cuda.blockDim.x):
        if start + j < a.shape[0]:
            x = a[start + j]
            sums += x
            squares += x * x
    for off in (16, 8, 4, 2, 1):
        sums += cuda.shfl_down_sync(0xFFFFFFFF, sums, off)
        squares += cuda.shfl_down_sync(0xFFFFFFFF, squares, off)
    w = cuda.shared.array((2, 4), float32)
    if t % 32 == 0:
        w[0, t // 32] = sums
        w[1, t // 32] = squares
    cuda.syncthreads()
    if t == 0:
        partials[cuda.blockIdx.x, 0] = (w[0, 0] + w[0, 1]) + (w[0, 2] + w[0, 3])
        partials[cuda.blockIdx.x, 1] = (w[1, 0] + w[1, 1]) + (w[1, 2] + w[1, 3])


def test_partial_moments_wants_the_grid_stride_loads_coalesced():
    v = E.judge(E.get("07.partial_moments"), _moments_by_runs, seed=0)
    n = int(re.search(r"\[input n=(\d+)", v.message).group(1))
    failed = [r.what for r in v.results if not r.passed]
    # the traced n is 1024·m + 17 (m = 2 .. 6): threads t <= m of each block have a run (thread m of block 0 only, of
    # 17 floats), so each of the 8 × 128 load requests has a few active lanes 4096 bytes apart, every float in a
    # sector of its own where the request's bytes need 1 (sectors per request alone, at most 4, would pass m <= 3)
    assert v.status == "partial" and failed == ["coalesced global loads: no sector more than needed (合并访存)"], str(v)
    assert f"{n} sectors for {8 * 128} requests" in v.message and "gridsize(1)" in v.hint, str(v)


# --- 05.transpose_mine: timed against the device copy on a GPU, tracer properties only on the CPU ----------


def test_transpose_mine_scores_the_fraction_of_the_copy_reached(monkeypatch):
    from course.exercises.catalogue import ch05

    tiers = [ch05.reaches_copy(f) for f in ch05.MINE_TIERS]
    for copy_ms, mine_ms, want in [(1.0, 1.1, [True, True]), (1.0, 1.6, [True, False]), (1.0, 2.5, [False, False])]:
        monkeypatch.setattr(ch05, "_TIMED", lambda kernel, c=copy_ms, m=mine_ms: (c, m))
        got = [p.measure(None, {"kernel": object()})[0] for p in tiers]
        assert got == want, (copy_ms, mine_ms, got)
    detail = tiers[0].measure(None, {"kernel": object()})[1]
    assert "0.40 of the device copy's bandwidth" in detail and "want at least 0.5" in detail

    def broken(kernel):
        raise RuntimeError("transpose_mine: 5 of 67108864 elements differ from the NumPy reference")

    monkeypatch.setattr(ch05, "_TIMED", broken)
    ok, detail = tiers[0].measure(None, {"kernel": object()})
    assert not ok and "not timed" in detail and "differ from the NumPy reference" in detail


def test_transpose_mine_is_timed_in_a_fresh_process():
    # the grader judges in a forked process, where CUDA cannot be used: the timing runs in a new one, from the
    # kernel's source. On a CPU backend that process says timing needs a GPU, which shows the source got there,
    # compiled, and reached the timer.
    from test_exercises import _solution_function

    from course.backend import on_gpu
    from course.exercises.catalogue import ch05

    if on_gpu():
        pytest.skip("on a GPU the timing itself is tested below")
    req = ch05._kernel_request(_solution_function("05.transpose_mine"))
    assert req["name"] == "transpose_mine" and req["constants"] == {"TILE": 32} and "@" not in req["source"]
    ok, detail = ch05.reaches_copy(0.5).measure(None, {"kernel": _solution_function("05.transpose_mine")})
    assert not ok and "not timed" in detail and "needs a real GPU" in detail, detail


def test_transpose_mine_is_timed_only_on_a_gpu():
    from course.backend import on_gpu

    ex = E.get("05.transpose_mine")
    timed = [p for p in ex.properties if "device copy" in p.name]
    assert len(timed) == (2 if on_gpu() else 0)
    assert "timing" in ex.task and "CPU" in ex.task  # the task says what a CPU backend does not judge


@pytest.mark.skipif("not __import__('course.backend', fromlist=['on_gpu']).on_gpu()",
                    reason="timing needs a GPU: on the CPU the tracer's properties are judged instead")
def test_on_a_gpu_the_solution_reaches_the_copy_and_a_naive_transpose_does_not():
    from test_exercises import _solution_function

    ex = E.get("05.transpose_mine")
    v = E.judge(ex, _solution_function("05.transpose_mine"), seed=0)
    timed = [r for r in v.results if "device copy" in r.what]
    assert len(timed) == 2 and timed[0].passed, str(v)


def test_the_pipeline_schedule_model():
    from course.exercises.host import schedule

    # three equal steps per chunk: serially 3 chunks x 3 = 9; over 3 streams with pinned copies the engines overlap
    def chunk(s):
        return [("h2d", s, True, 2, (1, 0, 1)), ("kernel", s, [], 4), ("d2h", s, True, 2, (2, 0, 1))]
    t, serial, _ = schedule([op for s in (1, 2, 3) for op in chunk(s)])
    assert serial == 18 and t == 10  # 2 to fill + 3 chunks x 2 + 2 to drain
    t, serial, _ = schedule([op for s in (1, 1, 1) for op in chunk(s)])  # one stream: in order, no overlap
    assert t == serial == 18
    # three streams, but the host waits after each chunk (cuda.synchronize()): nothing overlaps, 3 x 6
    t, serial, _ = schedule([op for s in (1, 2, 3) for op in chunk(s) + [("sync", None)]])
    assert t == serial == 18
    # stream.synchronize() on the stream just issued waits for it alone, which is all there is: 18 again
    t, _, _ = schedule([op for s in (1, 2, 3) for op in chunk(s) + [("sync", s)]])
    assert t == 18
    # waiting for stream 1 only after all three are issued costs nothing more than the overlap: 10
    t, _, _ = schedule([op for s in (1, 2, 3) for op in chunk(s)] + [("sync", 1)])
    assert t == 10
    pageable = [("h2d", s, False, 2, (1, 0, 1)) if op[0] == "h2d" else op for s in (1, 2, 3) for op in chunk(s)]
    t, serial, _ = schedule(pageable)  # a pageable copy waits for everything before it
    assert t > 10 and np.isclose(serial, 18)
