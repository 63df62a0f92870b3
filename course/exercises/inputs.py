"""Helpers for the exercises' inputs: random data that every sum keeps exact, awkward sizes."""

from __future__ import annotations

import math

import numpy as np

from course.exercises.contract import Input

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


def block_sums_input(rng, n, threads_per_block, why):
    """One launch of a kernel writing one sum per block: n floats, blocks_per_grid = ceil(n / threads_per_block),
    out poisoned with NaN, each block's expected sum taken over its slice (the last one padded with zeros)."""
    a = f32(rng, n)
    blocks = ceil_div(n, threads_per_block)
    out = np.full(blocks, np.nan, np.float32)
    padded = np.zeros(blocks * threads_per_block, np.float64)
    padded[:n] = a
    want = padded.reshape(blocks, threads_per_block).sum(axis=1).astype(np.float32)
    return Input(f"n={n} ({why})", (blocks,), (threads_per_block,), (a, out), {1: want}, ("a", "out"))


def trace_size(rng, around, unit=32):
    """The size of the launch a kernel's properties are measured on, drawn per check: a multiple of ``unit``
    (a warp, by default) from about half to one and a half times ``around`` (a hundred or more sizes). The grader seeds ``rng`` from the run's secret salt, so
    no kernel can recognise the launch it is traced on (by its size, or by a constant of the grader's)."""
    k = max(1, around // unit)
    lo, hi = max(1, k // 2), k + k // 2 + 1
    while True:  # never the old, public traced size itself (a kernel could have been tuned to that launch)
        n = unit * int(rng.integers(lo, hi))
        if n != around or hi - lo <= 1:
            return n


def trace_shape(rng, around, units, most):
    """A shape for the traced launch, drawn per check: each dimension as :func:`trace_size` draws it (``around`` and
    ``units`` per dimension), drawn again until the dimensions' product is at most ``most`` (the size the judge can
    trace within its time: check() stays under 2 s warm). Used where several dimensions multiply the work."""
    while True:
        shape = tuple(trace_size(rng, a, u) for a, u in zip(around, units))
        if math.prod(shape) <= most and shape != tuple(around):
            return shape
