"""What one grading run draws and stores, for :mod:`course.grade`: the run's secret salt and each exercise's seed
(:func:`new_salt`, :func:`exercise_seed`), and the bound on every string it writes (:func:`bounded`)."""

from __future__ import annotations

import hashlib


def exercise_seed(sha256: str, exercise: str, salt: str) -> int:
    """The seed of an exercise's random inputs (and of the sizes its properties are measured on) for one
    submission: from its bytes and the run's salt, so a regrade of the same file with the same ``--salt``
    draws the same inputs, and nobody without the salt can compute them in advance."""
    return int(hashlib.sha256(f"{salt}:{sha256}:{exercise}".encode()).hexdigest()[:8], 16)


def new_salt() -> str:
    """A grading run's secret salt (128 bits from :mod:`secrets`): recorded in results.json, never shown to learners."""
    import secrets

    return secrets.token_hex(16)


#: Characters any one string of results.json may have (a check's detail, a hint, a run log's note): a
#: submission chooses its exception messages, and three of 100 MB made a 300 MB results.json.
MAX_STORED = 2000


def bounded(value, n: int = MAX_STORED):
    """``value`` (JSON-able: dicts, lists, strings) with every string cut to ``n`` characters, saying what was cut."""
    if isinstance(value, str):
        return value if len(value) <= n else f"{value[:n]} … [{len(value) - n:,} more characters cut]"
    if isinstance(value, dict):
        return {bounded(k, 200): bounded(v, n) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [bounded(v, n) for v in value]
    return value
