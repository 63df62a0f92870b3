"""Chapter 11: the course's reduction and transpose split over several devices, and how the pieces meet.

Defined for chapter 11 (notebooks/11_multi_gpu.ipynb).  No new kernel: each device runs a version of
chapter 07 or chapter 05 on its share; what is new is where the data lives and what crosses between
devices.

1. ``place_rows`` gives every device a contiguous share (rows of a matrix, elements of a vector) — a
   copy host → device each, as a data-parallel job (数据并行) starts.
2. ``reduce_parts`` launches the reduction on every device, each on its own stream, before waiting for
   any: the devices work at the same time.  ``combine`` then brings one float per device to the host
   and adds them — the final combine whose cost the chapter measures.
3. ``transpose_parts`` transposes each device's band of rows into a band of the output's columns, on
   that device; ``gather_columns`` assembles the bands on the host.

Every function runs on real GPUs (numba-cuda) and on the CPU engine's simulated devices
(``course.multigpu.simulate``), where the bytes that cross each link are counted.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

import course
from course.kernels import reduction as R
from course.kernels import transpose as T

REDUCTION = "two_pass"   # chapter 07's version without atomics: per-block partials, then one block
TRANSPOSE = "tile_32x33"  # chapter 05's padded [32][33] tile: correct for any shape


PARTIAL_THREADS = 256
PARTIAL_PER_BLOCK = 4 * PARTIAL_THREADS


@cuda.jit
def block_partials(x, partials):
    """partials[b] = the sum of block b's 1024 elements of x: four loads per thread, then a shared tree.

    Given to exercise 11.split_sum, which writes the host code around it.
    """
    acc = cuda.shared.array(PARTIAL_THREADS, float32)
    t = cuda.threadIdx.x
    first = cuda.blockIdx.x * PARTIAL_PER_BLOCK + t
    s = float32(0)
    for k in range(4):
        if first + k * PARTIAL_THREADS < x.shape[0]:
            s += x[first + k * PARTIAL_THREADS]
    acc[t] = s
    cuda.syncthreads()
    half = PARTIAL_THREADS // 2
    while half > 0:
        if t < half:
            acc[t] += acc[t + half]
        cuda.syncthreads()
        half //= 2
    if t == 0:
        partials[cuda.blockIdx.x] = acc[0]


def shares(n: int, devices: int) -> list:
    """Split ``n`` items into ``devices`` contiguous (start, stop) shares, as equal as possible."""
    if devices < 1:
        raise ValueError(f"shares: need at least one device, got {devices}.")
    base, extra = divmod(n, devices)
    out, start = [], 0
    for d in range(devices):
        stop = start + base + (1 if d < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def place_rows(a: np.ndarray, devices: int) -> list:
    """Copy share ``d`` of ``a`` (its rows, or elements for a vector) to device ``d``; returns the device arrays."""
    parts = []
    for d, (start, stop) in enumerate(shares(a.shape[0], devices)):
        with cuda.gpus[d]:
            parts.append(cuda.to_device(np.ascontiguousarray(a[start:stop])))
    return parts


def reduce_launchers(parts: list, version: str = REDUCTION) -> tuple:
    """Per device, its output (and the version's partials) allocated once and a function that launches the
    reduction of its share again: ``(runs, outs)``.  Calling every run (:func:`launch_all`) is the split alone,
    with nothing allocated: what a benchmark times."""
    v = R.REDUCTION_VERSIONS[version]
    runs, outs = [], []
    for d, part in enumerate(parts):
        with cuda.gpus[d]:
            out = cuda.device_array(1, np.float32)
            if part.shape[0]:
                runs.append(v.launcher(part, out))
            else:  # an empty share sums to 0 and launches nothing
                out.copy_to_device(np.zeros(1, np.float32))
                runs.append(_nothing)
            outs.append(out)
    return runs, outs


def _nothing() -> None:
    pass


def launch_all(runs: list) -> None:
    """Call device ``d``'s launcher with device ``d`` current, for every device, without waiting for any."""
    for d, run in enumerate(runs):
        with cuda.gpus[d]:
            run()


def reduce_parts(parts: list, version: str = REDUCTION) -> list:
    """Launch the reduction on every device (its own stream), without waiting; returns each device's 1-float result."""
    runs, outs = reduce_launchers(parts, version)
    launch_all(runs)
    return outs


def combine(outs: list) -> float:
    """Bring each device's partial sum to the host and add them: the final combine (one float per device)."""
    total = np.float64(0.0)
    for d, out in enumerate(outs):
        with cuda.gpus[d]:
            total += np.float64(out.copy_to_host()[0])
    return float(total)


def split_sum(a: np.ndarray, devices: int, version: str = REDUCTION) -> float:
    """Sum a float32 vector with its shares on ``devices`` devices."""
    a = np.ascontiguousarray(a, dtype=np.float32).ravel()
    return combine(reduce_parts(place_rows(a, devices), version))


def transpose_launchers(parts: list, version: str = TRANSPOSE) -> tuple:
    """Per device, its band of the output allocated once and a function that transposes its band of rows into it
    again: ``(runs, outs)`` (see :func:`reduce_launchers`)."""
    v = T.TRANSPOSE_VERSIONS[version]
    runs, outs = [], []
    for d, part in enumerate(parts):
        with cuda.gpus[d]:
            out = cuda.device_array((part.shape[1], part.shape[0]), dtype=part.dtype)
            runs.append((lambda part=part, out=out: v.launch(part, out)) if part.shape[0] else _nothing)
            outs.append(out)
    return runs, outs


def transpose_parts(parts: list, version: str = TRANSPOSE) -> list:
    """On each device, transpose its band of rows (r × n_cols) into a band of columns (n_cols × r)."""
    runs, outs = transpose_launchers(parts, version)
    launch_all(runs)
    return outs


def gather_columns(outs: list) -> np.ndarray:
    """Copy every device's column band to the host and put them side by side: the full transpose."""
    bands = []
    for d, out in enumerate(outs):
        with cuda.gpus[d]:
            bands.append(out.copy_to_host())
    return np.hstack(bands)


def split_transpose(a: np.ndarray, devices: int, version: str = TRANSPOSE) -> np.ndarray:
    """Transpose a matrix with its row bands on ``devices`` devices."""
    return gather_columns(transpose_parts(place_rows(np.ascontiguousarray(a), devices), version))


def check_split(devices: int, rng=None) -> None:
    """Check both splits against NumPy on fresh random data and awkward shapes; raises on a mismatch."""
    rng = rng or np.random.default_rng()
    for n in (1, 33, 1000, 4099):
        a = rng.integers(-8, 8, n).astype(np.float32)  # small integers: the float32 sum is exact
        got = split_sum(a, devices)
        if got != float(a.astype(np.float64).sum()):
            raise AssertionError(f"split_sum over {devices} devices, n={n}: got {got}, NumPy says {a.sum()}")
    for shape in ((17, 16), (1, 33), (68, 100)) if not course.on_gpu() else ((17, 16), (1, 33), (1025, 512)):
        a = rng.integers(0, 2**31 - 1, shape, dtype=np.int64).astype(np.int32)
        got = split_transpose(a, devices)
        if not np.array_equal(got, a.T):
            raise AssertionError(f"split_transpose over {devices} devices, shape {shape}: differs from a.T")
