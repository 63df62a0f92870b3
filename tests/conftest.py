import os
import pathlib
import secrets
import sys
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import course  # noqa: E402,F401  (chooses the backend before anything imports numba)
import numpy as np  # noqa: E402
import pytest  # noqa: E402

#: The seed of this run's random test data: fresh each run (a kernel right by luck does not pass for long),
#: the same data again with ``COURSE_TEST_SEED=<seed>`` (a failing test prints it).
SEED = int(os.environ.get("COURSE_TEST_SEED") or secrets.randbits(32))
# `make test` runs pytest-xdist workers, started after this file is read: they inherit the seed from here
os.environ["COURSE_TEST_SEED"] = str(SEED)


def seeded_rng(*key) -> np.random.Generator:
    """A NumPy generator drawn from this run's :data:`SEED` and ``key`` (a module's or a test's name), so that
    each test gets the same data on a replay whatever ran before it."""
    return np.random.default_rng([SEED, *(zlib.crc32(str(k).encode()) for k in key)])


@pytest.fixture
def rng(request) -> np.random.Generator:
    """Fresh random data for one test; a failure prints the seed that replays it."""
    return seeded_rng(request.node.nodeid)


def pytest_report_header(config):
    return f"random test data: COURSE_TEST_SEED={SEED}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        report.sections.append(("random test data", f"drawn with COURSE_TEST_SEED={SEED}: set it to draw the "
                                                    "same data again"))
    return report

# Submissions used by the grader's tests are data, not notebooks for nbval to run.
collect_ignore = ["fixtures"]


#: The files that take longest (seconds on 2 cores, three workers, --durations; 2026-12-04), run first. Each worker
#: takes whole files (``--dist loadfile``) in collection order, so a long file collected last (the grader's run over
#: solutions/, say) keeps one worker busy after the others have finished: longest first leaves the short ones to
#: fill in at the end.
LONG_FIRST = ("tests/test_grade_solutions.py", "tests/test_grade_sandbox.py", "tests/test_site.py",
              "tests/test_exercises_wrong.py", "tests/test_browser.py", "tests/test_grade.py",
              "tests/test_grade_cheats.py", "notebooks/09_tiled_matmul.ipynb", "tests/test_fresh5_cases.py",
              "tests/test_grade_export.py", "tests/test_spoilers.py", "tests/test_engine_stall.py",
              "tests/test_fresh3_cases.py", "notebooks/05_transpose.ipynb", "notebooks/07_reduction.ipynb")


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}

    def where(item):
        try:
            return pathlib.Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
        except ValueError:
            return ""

    items.sort(key=lambda item: rank.get(where(item), len(rank)))  # stable: each file's tests keep their order
