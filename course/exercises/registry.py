"""The registry of exercises: :func:`register` (each chapter module of :mod:`course.exercises.catalogue`
adds its own), :func:`get`, :func:`by_chapter`, :func:`by_target`, and :func:`reference`, the one getter of
the course's own kernel that solves an exercise."""

from __future__ import annotations

import importlib
from typing import Callable, Optional

from course.exercises.contract import Exercise

EXERCISES = {}


def reference(module: str, name: str, versions: Optional[str] = None) -> Callable:
    """A getter of the course's own kernel for an exercise, imported when first asked for: the kernel of
    ``course.kernels.<module>.<versions>[name]`` where the module keeps its versions in a table, else the
    module's attribute ``name``."""

    def get():
        mod = importlib.import_module(f"course.kernels.{module}")
        table = getattr(mod, versions) if versions else {}
        return table[name].kernel if name in table else getattr(mod, name)

    return get


def register(ex: Exercise) -> Exercise:
    """Add an exercise to the registry (chapters add theirs here)."""
    if ex.name in EXERCISES:
        raise ValueError(f"exercise {ex.name} is registered twice")
    EXERCISES[ex.name] = ex
    return ex



def get(name: str) -> Exercise:
    """The exercise called ``name`` (e.g. "05.transpose_padded"), with a clear message if there is none."""
    try:
        return EXERCISES[name]
    except KeyError:
        raise KeyError(f"there is no exercise {name!r}; the exercises are: {', '.join(EXERCISES)}") from None


def by_chapter(chapter: int) -> list:
    """The exercises of one chapter, in order."""
    return [ex for ex in EXERCISES.values() if ex.chapter == chapter]


def by_target(target: str) -> Optional[Exercise]:
    """The exercise whose function is called ``target``, or None."""
    return next((ex for ex in EXERCISES.values() if ex.target == target), None)
