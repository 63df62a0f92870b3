"""Helpers for the exercises' inputs: random data that every sum keeps exact, awkward sizes."""

from __future__ import annotations

import numpy as np

# Inputs


def f32(rng, shape):
    # small integers stored as float32: sums and copies are exact, and values are easy to read
    return rng.integers(-50, 50, size=shape).astype(np.float32)


def distinct(rng, shape):
    # every element different, so a value in the wrong place cannot look right by accident
    n = int(np.prod(shape))
    return (rng.permutation(n) + 1).astype(np.float32).reshape(shape)


def random_size(rng, lo, hi):
    return int(rng.integers(lo, hi))


def ceil_div(a, b):
    return (a + b - 1) // b
