"""The seeded random-data fixture: fresh data each run, the same data on a replay, the seed shown on a failure."""

import os
import pathlib
import subprocess
import sys
import zlib

import numpy as np

from conftest import seeded_rng

HERE = pathlib.Path(__file__).resolve().parent


def test_the_same_key_draws_the_same_data_and_another_key_other_data():
    a, b, c = seeded_rng("x").random(4), seeded_rng("x").random(4), seeded_rng("y").random(4)
    assert (a == b).all() and not (a == c).all()


def test_a_failing_test_prints_the_seed_that_replays_it(tmp_path):
    (tmp_path / "test_fails.py").write_text(
        "def test_draw(rng):\n    print('drawn', rng.integers(1 << 30))\n    assert False\n")
    env = {**os.environ, "COURSE_TEST_SEED": "4242", "PYTHONPATH": str(HERE)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-p", "no:cacheprovider",
                          "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_fails.py")],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "COURSE_TEST_SEED=4242" in run.stdout, run.stdout[-2000:]
    # the data is a function of the seed and the test's id alone: the replay draws it again
    want = np.random.default_rng([4242, zlib.crc32(b"test_fails.py::test_draw")]).integers(1 << 30)
    assert f"drawn {want}" in run.stdout, run.stdout[-2000:]


def test_the_files_run_first_exist():
    # conftest.LONG_FIRST orders the suite (longest files first); a renamed file would silently drop out of it
    import conftest

    missing = [name for name in conftest.LONG_FIRST if not (conftest.ROOT / name).is_file()]
    assert not missing and len(set(conftest.LONG_FIRST)) == len(conftest.LONG_FIRST), missing
