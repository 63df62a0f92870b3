import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import course  # noqa: E402,F401  (chooses the backend before anything imports numba)

# Submissions used by the grader's tests are data, not notebooks for nbval to run.
collect_ignore = ["fixtures"]
