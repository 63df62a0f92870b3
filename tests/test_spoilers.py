"""No exercise's answer is readable in a chapter, in exercises/ or in the package (issue 15, item 5).

Each solution function (the ``def <target>`` of an exercise in solutions/*.ipynb) is compared with every
function defined in notebooks/*.ipynb, exercises/*.ipynb and course/**/*.py, nested ones included. Names are
normalised before the comparison: every identifier (the function's name, parameters, locals, globals) is
renamed in order of first appearance, docstrings are dropped, and comments never reach the AST. So a copy
whose variables were renamed is still a copy; a kernel that differs in what it computes or how it indexes
(another operator, another loop, a missing guard) is not. A second, looser check catches near-copies (the
chapter's kernel with one line changed): no function may share more than NEAR of the solution's statements,
each compared with its names normalised. A third check measures how alike a solution reads to every function of
the chapters (notebooks/*.ipynb) and of course/kernels/: difflib's SequenceMatcher ratio on the characters of the
two functions' source with names normalised as above (``ast.unparse`` of the canonical tree, so layout and comments
do not count either); a solution at SIMILAR or more is the chapter's kernel with a few characters changed.
"""

import ast
import collections
import copy
import difflib
import functools
import pathlib

import nbformat
import pytest

from course import exercises as E

ROOT = pathlib.Path(__file__).resolve().parents[1]

# The course's worked example: chapter 00 shows check() on it with course.kernels.basics.vector_add (a pass)
# and without its guard (a fail), so its answer is public by design. It is not counted among the exercises
# a learner solves on their own (see test_enough_exercises_besides_the_worked_example).
WORKED_EXAMPLES = {"01.vector_add"}

# The share of a solution's statements that one readable function may have in common with it. The chapters'
# own kernels that the exercises used to ask for shared 0.64-1.0 of theirs (the padded and swizzled
# transposes, the tiled matmul); a variation that changes the indexing or the algorithm shares at most half.
NEAR = 0.6
# A find-the-bug exercise hands the learner a planted kernel (``*_planted`` in course/exercises/catalogue) to
# fix: its answer is close to it by design. Such a kernel must still not be the answer itself (the exact check).
PLANTED_SUFFIX = "_planted"
# How alike (difflib ratio on the normalised source, see the module docstring) a solution may read to a kernel of a
# chapter or of course/kernels/. Measured before issue 25: the worked example 1.00, 01.matrix_add 0.99 and
# 10.scale_rows_fixed 0.96 (both chapter 01's matrix_add), 07.tree_sum 0.90 (course/kernels/multi_gpu.py's
# block_partials), 01.saxpy 0.90 (chapter 01's vector_add_grid), 06.clamp_grid_stride 0.87 (chapter 08's scale),
# 05.transpose_padded 0.87 (chapter 05's tile_transpose); the next was 0.81.
SIMILAR = 0.85


class _Canonical(ast.NodeTransformer):
    """Rename every identifier to n0, n1, … in order of first appearance; drop docstrings and annotations."""

    def __init__(self):
        self.names = {}

    def _name(self, name):
        return self.names.setdefault(name, f"n{len(self.names)}")

    def visit_FunctionDef(self, node):
        node.name = self._name(node.name)
        node.decorator_list = []
        node.returns = None
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:] or [ast.Pass()]
        node.body = body
        self.generic_visit(node)
        return node

    def visit_arg(self, node):
        node.arg = self._name(node.arg)
        node.annotation = None
        return node

    def visit_Name(self, node):
        node.id = self._name(node.id)
        return node


def canonical(fn: ast.FunctionDef) -> str:
    """The function's shape with its names normalised (see the module docstring)."""
    import copy

    return ast.dump(_Canonical().visit(copy.deepcopy(fn)), annotate_fields=False, include_attributes=False)


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _notebook_code(path):
    from IPython.core.inputtransformer2 import TransformerManager

    nb = nbformat.read(path, as_version=4)
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            yield k, ast.parse(TransformerManager().transform_cell(cell.source))
        except SyntaxError:
            continue


def corpus() -> dict:
    """canonical form -> where it is defined ("path:name", the first place), for every function a learner can read."""
    out = {}
    for where, fn in _readable_functions():
        out.setdefault(canonical(fn), where)
    return out


@functools.lru_cache(maxsize=1)
def _readable_functions() -> tuple:
    """(where, FunctionDef) for every function in the chapters, exercises/ and the package, parsed once."""
    out = []
    paths = [*sorted(ROOT.glob("notebooks/*.ipynb")), *sorted(ROOT.glob("exercises/*.ipynb"))]
    for path in paths:
        for k, tree in _notebook_code(path):
            out += [(f"{path.relative_to(ROOT)} cell {k}: {fn.name}", fn) for fn in _functions(tree)]
    for path in sorted((ROOT / "course").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out += [(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}", fn) for fn in _functions(tree)]
    return tuple(out)


@functools.lru_cache(maxsize=1)
def solutions() -> tuple:
    """(exercise name, where, FunctionDef) for every exercise's solution function in solutions/*.ipynb."""
    found = {}
    for path in sorted(ROOT.glob("solutions/*.ipynb")):
        for k, tree in _notebook_code(path):
            for fn in tree.body:
                if isinstance(fn, ast.FunctionDef):
                    ex = E.by_target(fn.name)
                    if ex is not None and ex.chapter == int(path.name[:2]):
                        found[ex.name] = (f"{path.relative_to(ROOT)} cell {k}", fn)  # the last def wins
    return tuple((name, where, fn) for name, (where, fn) in sorted(found.items()))


def test_canonical_form_ignores_names_and_docstrings_but_not_what_the_code_does():
    a = ast.parse("def f(x, out):\n    '''doc'''\n    i = cuda.grid(1)\n    if i < x.size:\n        out[i] = x[i]\n")
    b = ast.parse("def g(src, dst):\n    k = cuda.grid(1)  # a comment\n    if k < src.size:\n        dst[k] = src[k]\n")
    c = ast.parse("def g(src, dst):\n    k = cuda.grid(1)\n    if k <= src.size:\n        dst[k] = src[k]\n")
    d = ast.parse("def g(src, dst):\n    k = cuda.grid(1)\n    if k < src.size:\n        dst[k] = src[k] * 2\n")
    fa, fb, fc, fd = (t.body[0] for t in (a, b, c, d))
    assert canonical(fa) == canonical(fb)
    assert canonical(fa) != canonical(fc) and canonical(fa) != canonical(fd)


def test_every_exercise_has_one_solution_function():
    names = {name for name, _, _ in solutions()}
    assert names == set(E.EXERCISES), sorted(set(E.EXERCISES) ^ names)


@pytest.fixture(scope="module")
def readable():
    return corpus()


def test_no_solution_is_readable_in_the_chapters_exercises_or_package(readable):
    leaks = []
    for name, where, fn in solutions():
        if name in WORKED_EXAMPLES:
            continue
        hit = readable.get(canonical(fn))
        if hit:
            leaks.append(f"{name} ({where}) is the same code as {hit}")
    assert not leaks, "exercise answers readable elsewhere:\n" + "\n".join(leaks)


def _statement_forms(fn) -> dict:
    """Each statement of ``fn`` (for a loop or a branch: its header) with names normalised, counted."""
    import copy
    from collections import Counter

    fn = _Canonical().visit(copy.deepcopy(fn))
    out = Counter()
    for node in ast.walk(fn):
        if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef):
            head = node.iter if isinstance(node, ast.For) else node.test if isinstance(node, (ast.If, ast.While)) else node
            out[ast.dump(head, annotate_fields=False)] += 1
    return out




def test_no_solution_is_a_near_copy_of_a_readable_function():
    others = [(where, forms, sum(forms.values())) for where, fn in _readable_functions()
              for forms in [_statement_forms(fn)]]
    near = []
    for name, where, fn in solutions():
        if name in WORKED_EXAMPLES:
            continue
        mine = _statement_forms(fn)
        size = sum(mine.values())
        for other, forms, their_size in others:
            if other.endswith(PLANTED_SUFFIX) and other.startswith("course/exercises/catalogue/"):
                continue
            # the share is at most min(size) / max(size) (the common part of the smaller, the union of the larger)
            if min(size, their_size) <= NEAR * max(size, their_size):
                continue
            union = sum((mine | forms).values())
            share = sum((mine & forms).values()) / union if union else 0.0
            if share > NEAR:
                near.append(f"{name} ({where}) shares {share:.2f} of its statements with {other}")
    assert not near, "near-copies of readable code:\n" + "\n".join(near)


def test_the_spoiler_check_finds_a_copy():
    # the worked example's answer is course.kernels.basics.vector_add (renamed: a, b, out, n): the check sees it
    from course.kernels import basics

    sol = {name: fn for name, _, fn in solutions()}
    import inspect
    import textwrap

    mine = canonical(sol["01.vector_add"])
    theirs = ast.parse(textwrap.dedent(inspect.getsource(basics.vector_add.py_func))).body[0]
    assert canonical(theirs) == mine


def test_enough_exercises_besides_the_worked_example():
    own = [ex for name, ex in E.EXERCISES.items() if name not in WORKED_EXAMPLES]
    assert len(own) >= 44, len(own)  # issue 25: at least 45 graded exercises, the worked example one of them
    for chapter in range(1, 12):
        mine = [ex.name for ex in own if ex.chapter == chapter]
        assert len(mine) >= 3, (chapter, mine)


def _statements(fn):
    """Source lines of the solution's statements that are long enough to be an answer on their own."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.While, ast.For, ast.Return)):
            text = " ".join(ast.unparse(node).split("\n")[0].split())
            if len(text) >= 24:
                out.add(text)
    return out


def test_hints_do_not_contain_the_solutions_code():
    # the task states what to compute (out[i] = alpha * x[i] + y[i] is the specification); hints guide, and
    # must not hand over a line of the answer
    for name, _where, fn in solutions():
        ex = E.get(name)
        texts = [ex.hint_wrong, ex.hint_oob, ex.stub_hint, *(p.hint for p in ex.properties)]
        blob = " ".join(" ".join(t.split()) for t in texts if t)
        for line in _statements(fn):
            assert line not in blob, f"{name}: a hint gives the line `{line}` of the solution"


def canonical_source(fn) -> str:
    """The function's source with names normalised (no decorators, docstrings, annotations or comments)."""
    return ast.unparse(_Canonical().visit(copy.deepcopy(fn)))


def similarity(a: str, b: str) -> float:
    """difflib's ratio of two normalised sources: 2 × matched characters / total characters."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def lcs_length(a: str, b: str) -> int:
    """The length of the longest common subsequence of ``a`` and ``b`` (bit-parallel, Hyyrö 2004: one big-integer
    step per character of ``a``)."""
    masks: dict = {}
    for i, ch in enumerate(b):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for ch in a:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - bin(v).count("1")


def _alike(mine: str, others) -> list:
    """(ratio, where) for every function of ``others`` ((where, normalised source)) at SIMILAR or more."""
    out = []
    counts = collections.Counter(mine)
    for where, theirs in others:
        # each bound is at least difflib's ratio, so a pair under SIMILAR on one cannot reach it: the lengths
        # (difflib's real_quick_ratio), the characters in common (its quick_ratio), then 2 × LCS / total (its
        # matching blocks are one common subsequence of the two, so they match at most LCS characters); the exact
        # ratio, O(n·m) in Python, only for the few pairs left
        total = len(mine) + len(theirs)
        if 2 * min(len(mine), len(theirs)) < SIMILAR * total:
            continue
        if 2 * sum((counts & _counter(theirs)).values()) < SIMILAR * total:
            continue
        if 2 * lcs_length(mine, theirs) < SIMILAR * total:
            continue
        r = similarity(mine, theirs)
        if r >= SIMILAR:
            out.append((r, where))
    return out


@functools.lru_cache(maxsize=None)
def _counter(text: str) -> collections.Counter:
    return collections.Counter(text)


def _chapter_and_package_kernels():
    return [(where, canonical_source(fn)) for where, fn in _readable_functions()
            if where.startswith(("notebooks/", "course/kernels/"))]


def test_the_similarity_sees_a_renamed_kernel_with_one_index_changed_and_not_another_algorithm():
    copy_ = ast.parse("def f(a, b, out):\n    col, row = cuda.grid(2)\n    if row < out.shape[0] and col < out.shape[1]:"
                      "\n        out[row, col] = a[row, col] + b[col]\n").body[0]
    changed = ast.parse("def g(x, y, z):\n    c, r = cuda.grid(2)\n    if r < z.shape[0] and c < z.shape[1]:"
                        "\n        z[r, c] = x[r, c] * y[r]\n").body[0]
    other = ast.parse("def g(x, z):\n    i = cuda.grid(1)\n    r = i // z.shape[1]\n    c = i % z.shape[1]\n"
                      "    if i < z.size:\n        z[r, c] = x[r, z.shape[1] - 1 - c]\n").body[0]
    a, b, c = (canonical_source(f) for f in (copy_, changed, other))
    assert similarity(a, b) >= SIMILAR  # another operator and b[row]: still the same kernel to a reader
    assert similarity(a, c) < SIMILAR  # a flat index split into row and column, a mirrored read


def test_the_lcs_bound_is_the_longest_common_subsequence_and_never_under_difflibs_ratio():
    import random

    def lcs_by_table(a, b):  # the textbook dynamic programme
        row = [0] * (len(b) + 1)
        for ch in a:
            prev = 0
            for j, cb in enumerate(b, 1):
                prev, row[j] = row[j], prev + 1 if ch == cb else max(row[j], row[j - 1])
        return row[-1]

    gen = random.Random(0)
    sources = [canonical_source(fn) for _, fn in _readable_functions()[:40]]
    pairs = [("", "abc"), ("abc", ""), ("abcbdab", "bdcaba")]
    pairs += [("".join(gen.choice("ab(x) ") for _ in range(gen.randrange(1, 90))),
               "".join(gen.choice("ab(x) ") for _ in range(gen.randrange(1, 90)))) for _ in range(200)]
    pairs += [(sources[i], sources[i + 1]) for i in range(0, 38, 2)]
    assert lcs_length("abcbdab", "bdcaba") == 4
    for a, b in pairs:
        n = lcs_length(a, b)
        assert n == lcs_by_table(a, b), (a, b)
        if a or b:
            assert 2 * n / (len(a) + len(b)) >= similarity(a, b) - 1e-12, (a, b)


def test_the_worked_example_is_seen_as_chapter_01s_kernel():
    # it is exempt by design (chapter 00 checks the course's own kernel with it): the measure must still see it
    sol = {name: fn for name, _, fn in solutions()}
    hits = _alike(canonical_source(sol["01.vector_add"]), _chapter_and_package_kernels())
    assert any(r == 1.0 and where.startswith("notebooks/01_programming_model.ipynb") for r, where in hits), hits


def test_no_solution_reads_like_a_chapter_or_package_kernel():
    others = _chapter_and_package_kernels()
    alike = []
    for name, where, fn in solutions():
        if name in WORKED_EXAMPLES:
            continue
        for r, other in _alike(canonical_source(fn), others):
            alike.append(f"{name} ({where}) is {r:.2f} alike to {other}")
    assert not alike, f"solutions at least {SIMILAR} alike (difflib, names normalised) to readable kernels:\n" + \
        "\n".join(alike)
