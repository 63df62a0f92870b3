"""Measure kernels on a real GPU: check first, then time with CUDA events, and keep a record.

The rules this module enforces (chapter 05 and every later benchmark rely on them):

- **Correct before fast.** :func:`verify` poisons the output, runs once on fresh random data and
  compares with a NumPy reference; nothing is timed until that passes.
- **GPU time only.** :func:`time_ms` times with CUDA events after a warm-up and returns one time per
  repetition; on a CPU backend it refuses (:class:`BenchError`): CPU wall time says nothing about a
  GPU's speed.
- **Records with provenance.** :class:`Bench` turns timings into records (``benchmark``, ``variant``,
  ``ms`` median, ``reps``, ``gbps``, ``size``, ``dtype``, ``device``, ``driver``, ``numba_cuda``,
  ``date``, ``run`` …); every record of one process shares one ``run`` id, so ratios are taken
  within a run.  Library references (``memcpy``, ``cupy``, ``torch``) are records like any other.

Read recorded results with :mod:`course.measure.measurements`.  Defined for chapter 05
(notebooks/05_transpose.ipynb).  The harness of ``scripts/gpu`` (:class:`Script`, :func:`scrub`, ``python -m course.bench
import|scrub``) is :mod:`course.measure.bench_harness` and the CUDA toolkit's tools :mod:`course.measure.cuda_tools`, one
layer up; each name has that one address.
"""

from __future__ import annotations

import datetime as _dt
import json
import pathlib
import platform
import statistics
import subprocess
import uuid
from typing import Callable, Iterable, Optional

import numpy as np

import course  # noqa: F401  (chooses the backend before numba is imported)
from course.backend import current as _backend

REQUIRED_FIELDS = ("benchmark", "variant", "ms", "reps", "size", "dtype", "device", "driver",
                   "numba_cuda", "date", "run")

_RUN_ID: Optional[str] = None


class BenchError(RuntimeError):
    """A measurement that must not happen (no GPU, wrong result); the message says what to do."""


def run_id() -> str:
    """The id shared by every record this process makes: UTC time plus a random suffix."""
    global _RUN_ID
    if _RUN_ID is None:
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        _RUN_ID = f"{now}-{uuid.uuid4().hex[:6]}"
    return _RUN_ID


def gbps(bytes_moved: float, ms: float) -> float:
    """Effective bandwidth in GB/s (10⁹ bytes per second) of ``bytes_moved`` in ``ms`` milliseconds."""
    if ms is None or ms <= 0:
        raise ValueError(f"gbps: the time must be a positive number of milliseconds, got {ms!r}.")
    return bytes_moved / (ms * 1e-3) / 1e9


def transpose_bytes(shape, dtype) -> int:
    """Bytes a transpose (or a copy) must move: every element read once and written once."""
    return 2 * int(np.prod(shape)) * np.dtype(dtype).itemsize


def require_gpu(what: str = "timing") -> None:
    """Raise :class:`BenchError` unless kernels run on a real GPU."""
    backend = _backend()
    if backend != "gpu":
        raise BenchError(
            f"{what} needs a real GPU, and this process runs on the '{backend}' backend: CPU wall time "
            "says nothing about how fast a kernel runs on a GPU, so the course never times it. "
            "Read the recorded H200 runs instead (course.measure.measurements.load('<benchmark>')), "
            "or run this on a machine with a CUDA GPU."
        )


# --- moving data between the libraries, whatever the array kind -------------------------------------


def to_host(x) -> np.ndarray:
    """A NumPy copy of a numba device array, CuPy array, torch tensor or NumPy array."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "copy_to_host"):  # numba
        return x.copy_to_host()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    if hasattr(x, "detach"):  # torch
        return x.detach().cpu().numpy()
    return np.asarray(x)


def fill(x, value) -> None:
    """Set every element of ``x`` (any array kind above) to ``value``: the poison before a check."""
    if isinstance(x, np.ndarray):
        x[...] = value
    elif hasattr(x, "copy_to_device"):  # numba: copy from a cached poisoned device array
        key = (tuple(x.shape), np.dtype(x.dtype).str, repr(value))
        src = _POISONED.get(key)
        if src is None:
            src = _POISONED[key] = _numba_to_device(np.full(x.shape, value, dtype=x.dtype))
        x.copy_to_device(src)
    elif hasattr(x, "fill_"):  # torch takes Python numbers
        x.fill_(value.item() if hasattr(value, "item") else value)
    else:  # cupy
        x.fill(value)


_POISONED: dict = {}


def _numba_to_device(a):
    from numba import cuda

    return cuda.to_device(a)


def poison_value(dtype):
    """A value random test data almost never holds: NaN for floats, the most negative integer otherwise."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return dt.type(np.nan)
    if dt.kind in "iu":
        return np.iinfo(dt).min
    raise ValueError(f"poison_value: no poison for dtype {dt}.")


def random_array(shape, dtype, rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """Fresh random data of ``shape``/``dtype`` (never zeros: they hide unwritten outputs)."""
    rng = rng if rng is not None else np.random.default_rng()
    dt = np.dtype(dtype)
    if dt in (np.float32, np.float64):
        return rng.standard_normal(shape, dtype=dt)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        # Leave out the poison value (the minimum) so a written element never looks unwritten.
        return rng.integers(info.min + 1, info.max, size=shape, dtype=dt, endpoint=True)
    raise ValueError(f"random_array: unsupported dtype {dt}.")


def verify(run_once: Callable[[], None], out, expected: np.ndarray, *, what: str = "kernel",
           exact: bool = True, rtol: float = 1e-6, expected_device=None) -> None:
    """Poison ``out``, call ``run_once()``, and raise :class:`BenchError` unless ``out`` equals ``expected``.

    ``exact`` compares bit patterns (a transpose or a copy must reproduce every bit, NaN payloads
    included); otherwise values within ``rtol``.  ``expected_device``, a CuPy copy of ``expected``,
    makes a large exact check run on the GPU (the reference is still NumPy's); the message of a
    failure always comes from the host.  Works on every backend (the CPU engine too): checking is
    not timing.
    """
    expected = np.asarray(expected)
    if tuple(out.shape) != expected.shape:
        raise BenchError(f"{what}: output shape {tuple(out.shape)} differs from the reference's {expected.shape}.")
    fill(out, poison_value(expected.dtype))
    run_once()
    _synchronize()
    if exact and expected_device is not None and equal_on_device(out, expected_device):
        return
    got = to_host(out)
    if exact:
        bad = _bits(got) != _bits(expected)
    else:
        bad = ~np.isclose(got, expected, rtol=rtol, atol=0.0)
    n_bad = int(np.count_nonzero(bad))
    if n_bad:
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        unwritten = int(np.count_nonzero(_is_poison(got)))
        raise BenchError(
            f"{what}: {n_bad} of {expected.size} elements differ from the NumPy reference "
            f"(first at index {first}: got {got[first]!r}, expected {expected[first]!r}; "
            f"{unwritten} never written). Fix the kernel before timing it."
        )


def _bits(x: np.ndarray) -> np.ndarray:
    """``x`` viewed as unsigned integers of its itemsize: equality of bit patterns."""
    x = np.ascontiguousarray(x)
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.itemsize in (1, 2, 4, 8) else x


def equal_on_device(out, expected_device) -> bool:
    """True when ``out`` (any CUDA array) holds exactly the bits of ``expected_device`` (CuPy)."""
    import cupy

    got = cupy.asarray(out)
    if got.shape != expected_device.shape or got.dtype != expected_device.dtype:
        return False
    kind = f"u{got.dtype.itemsize}"
    return bool(cupy.array_equal(got.view(kind), expected_device.view(kind)))


def _is_poison(x: np.ndarray) -> np.ndarray:
    return _bits(x) == _bits(np.full(1, poison_value(x.dtype), dtype=x.dtype))[0]


def _synchronize() -> None:
    from numba import cuda

    cuda.synchronize()


# --- timing ------------------------------------------------------------------------------------------------


def time_ms(fn: Callable[[], None], *, reps: int = 20, warmup: int = 3, timer: str = "numba",
            batch: int = 1) -> list:
    """Milliseconds per call of ``fn``, one value per repetition, timed between two CUDA events.

    Each repetition launches ``fn`` ``batch`` times back to back between the events and divides, so
    that the host's launch overhead overlaps the GPU's work instead of being counted (it still is
    when one call's host overhead exceeds its GPU time: see :func:`host_ms`).  ``warmup`` calls come
    first.  ``timer`` picks whose events: ``numba`` (default), ``cupy`` or ``torch`` (each library
    times its own work).  Refuses on a CPU backend.
    """
    require_gpu("timing")
    if reps < 1 or batch < 1:
        raise ValueError("time_ms: reps and batch must be at least 1.")
    make, record, elapsed, sync = _event_api(timer)
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        start, stop = make(), make()
        record(start)
        for _ in range(batch):
            fn()
        record(stop)
        times.append(elapsed(start, stop) / batch)
    return times


_SLEEP: dict = {}


def _sleep_kernel():
    """A one-thread kernel that sleeps ``iterations`` × 10 µs: it holds the stream while the host queues work."""
    if "k" not in _SLEEP:
        from numba import cuda

        @cuda.jit
        def sleep_kernel(iterations):
            for _ in range(iterations):
                cuda.nanosleep(10000)

        _SLEEP["k"] = sleep_kernel
    return _SLEEP["k"]


def time_queued(fn: Callable[[], None], *, reps: int = 10, inner: Optional[int] = None, stream=None,
                details: bool = False, slow_ms: float = 20.0, budget_ms: float = 2.0):
    """Milliseconds per call of ``fn`` on the GPU alone: ``inner`` calls queued behind a sleeping kernel.

    A sleeping one-thread kernel holds ``stream`` while the host issues the start event, ``inner`` calls
    of ``fn`` and the stop event, so the calls run back to back and the events see no host gaps: the
    time of the work itself, without the host's per-call overhead (measure that with :func:`host_ms`).
    ``fn`` must queue its work on ``stream`` (a numba stream; default: the default stream) and not wait
    for it (kernels, asynchronous copies from pinned or device memory).  ``inner`` defaults to enough
    calls for about ``budget_ms``; a call slower than ``slow_ms`` is timed alone, a few times.  With
    ``details`` returns ``(times, inner, launch_bound)``: ``launch_bound`` is True when the host needed
    longer to queue the calls than the sleep lasted (the time then includes host gaps).
    Refuses on a CPU backend.
    """
    require_gpu("timing")
    import time

    from numba import cuda

    s = stream if stream is not None else cuda.default_stream()
    sleep = _sleep_kernel()

    def event_ms(f):
        a, b = cuda.event(timing=True), cuda.event(timing=True)
        a.record(s)
        f()
        b.record(s)
        b.synchronize()
        return cuda.event_elapsed_time(a, b)

    sleep[1, 1, s](1)
    fn()
    cuda.synchronize()
    one = event_ms(fn)  # one call, launch gap included: an upper bound
    t = time.perf_counter()
    fn()
    host = (time.perf_counter() - t) * 1e3  # what queueing one call costs the host
    cuda.synchronize()
    if one > slow_ms:
        times = [event_ms(fn) for _ in range(max(2, min(reps, int(2000 / one))))]
        return (times, 1, False) if details else times
    if inner is None:
        inner = int(min(50, max(1, budget_ms / max(one, 1e-3))))
    per_iter = max(event_ms(lambda: sleep[1, 1, s](100)) / 100, 1e-3)
    iters = int((inner * host * 1.5 + 0.3) / per_iter) + 1
    times, launch_bound = [], False
    for _ in range(reps):
        start, stop = cuda.event(timing=True), cuda.event(timing=True)
        sleep[1, 1, s](iters)
        t = time.perf_counter()
        start.record(s)
        for _ in range(inner):
            fn()
        stop.record(s)
        queued = (time.perf_counter() - t) * 1e3
        stop.synchronize()
        launch_bound |= queued > iters * per_iter  # the sleep ran out before the queue was full
        times.append(cuda.event_elapsed_time(start, stop) / inner)
    return (times, inner, launch_bound) if details else times


def one_launch_ms(fn: Callable[[], None], *, reps: int = 5) -> list:
    """Milliseconds of one call of ``fn`` between two CUDA events, ``reps`` times: what a notebook that times one
    launch sees (the host's issue time inside when the kernel is shorter than it; compare :func:`time_queued`)."""
    require_gpu("timing")
    from numba import cuda

    out = []
    for _ in range(reps):
        a, b = cuda.event(timing=True), cuda.event(timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cuda.event_elapsed_time(a, b))
    return out


def host_ms(fn: Callable[[], None], *, calls: int = 20, timer: str = "numba") -> float:
    """Host milliseconds to issue one call of ``fn`` (no synchronisation): the launch overhead."""
    require_gpu("timing")
    import time

    *_, sync = _event_api(timer)
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    sync()
    return (t1 - t0) * 1e3 / calls


def _event_api(timer: str):
    if timer == "numba":
        from numba import cuda

        def elapsed(a, b):
            b.synchronize()
            return cuda.event_elapsed_time(a, b)

        return (lambda: cuda.event(timing=True)), (lambda e: e.record()), elapsed, cuda.synchronize
    if timer == "cupy":
        import cupy

        def elapsed(a, b):
            b.synchronize()
            return cupy.cuda.get_elapsed_time(a, b)

        return cupy.cuda.Event, (lambda e: e.record()), elapsed, cupy.cuda.Device().synchronize
    if timer == "torch":
        import torch

        def elapsed(a, b):
            b.synchronize()
            return a.elapsed_time(b)

        return (lambda: torch.cuda.Event(enable_timing=True)), (lambda e: e.record()), elapsed, torch.cuda.synchronize
    raise ValueError(f"time_ms: timer must be 'numba', 'cupy' or 'torch', not {timer!r}.")


# --- provenance and records ------------------------------------------------------------------------------------


def _version(module: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def _nvidia_smi(field: str) -> Optional[str]:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        line = out.stdout.strip().splitlines()
        return line[0].strip() if out.returncode == 0 and line else None
    except Exception:
        return None


def provenance() -> dict:
    """Where and with what this process measures: device, driver, library versions, run id, date."""
    info = {
        "run": run_id(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "backend": _backend(),
        "numba": _version("numba"),
        "numba_cuda": _version("numba-cuda"),
        "numpy": np.__version__,
        "cupy": _version("cupy") or _version("cupy-cuda12x") or _version("cupy-cuda13x"),
        "torch": _version("torch"),
        "python": platform.python_version(),
    }
    if info["backend"] == "gpu":
        from numba import cuda

        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        cuda_version = cuda.cudadrv.driver.driver.get_version()
        info.update(
            device=name,
            compute_capability=".".join(map(str, dev.compute_capability)),
            sm_count=dev.MULTIPROCESSOR_COUNT,
            driver=_nvidia_smi("driver_version") or "unknown",
            cuda_driver_api=".".join(map(str, cuda_version)),
            clocks_sm_mhz=_nvidia_smi("clocks.sm"),
            clocks_mem_mhz=_nvidia_smi("clocks.mem"),
            clocks_max_sm_mhz=_nvidia_smi("clocks.max.sm"),
        )
    else:
        info.update(device=f"none ({info['backend']} backend)", driver="none")
    return info


class Bench:
    """Records of one benchmark measured in this process (one ``run`` id), saved as a JSON list."""

    def __init__(self, benchmark: str, *, dry_run: bool = False, prov: Optional[dict] = None):
        self.benchmark = benchmark
        self.dry_run = dry_run
        self.records: list = []
        self.prov = prov if prov is not None else provenance()

    def record(self, variant: str, times_ms: Optional[list], *, size, dtype, bytes_moved=None,
               flops=None, **extra) -> dict:
        """Add the record of one measurement (``times_ms`` as :func:`time_ms` returns them) and return it."""
        rec = {"benchmark": self.benchmark, "variant": variant}
        if times_ms:
            ms = statistics.median(times_ms)
            rec.update(ms=ms, reps=len(times_ms), ms_min=min(times_ms), ms_max=max(times_ms))
            if bytes_moved is not None:
                rec["gbps"] = gbps(bytes_moved, ms)
            if flops is not None:
                rec["tflops"] = flops / (ms * 1e-3) / 1e12
        else:
            rec.update(ms=None, reps=0)
            if bytes_moved is not None:
                rec["gbps"] = None
        # records that describe a kernel rather than data (occupancy tables) carry dtype "none"
        rec.update(size=[int(s) for s in size], dtype="none" if dtype in (None, "none") else np.dtype(dtype).name)
        if bytes_moved is not None:
            rec["bytes"] = int(bytes_moved)
        for key in ("device", "driver", "numba_cuda", "date", "run", "compute_capability", "sm_count",
                    "cuda_driver_api", "clocks_sm_mhz", "clocks_mem_mhz", "clocks_max_sm_mhz", "numba", "numpy", "cupy", "torch",
                    "backend"):
            if key in self.prov:
                rec[key] = self.prov[key]
        if self.dry_run:
            rec["dry_run"] = True
        rec.update(extra)
        self.records.append(rec)
        return rec

    def measure(self, variant: str, fn: Callable[[], None], *, size, dtype, bytes_moved=None,
                reps: int = 20, warmup: int = 3, timer: str = "numba", batch: int = 1, **extra) -> dict:
        """Time ``fn`` (already verified) and record it; in a dry run record the shape without timing."""
        times = None if self.dry_run else time_ms(fn, reps=reps, warmup=warmup, timer=timer, batch=batch)
        return self.record(variant, times, size=size, dtype=dtype, bytes_moved=bytes_moved, **extra)

    def save(self, path) -> pathlib.Path:
        """Write the records to ``path`` (a JSON list), keeping records of other runs already there."""
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = []
        if path.exists():
            try:
                kept = [r for r in json.loads(path.read_text()) if r.get("run") != run_id()]
            except (json.JSONDecodeError, AttributeError):
                kept = []
        path.write_text(json.dumps(kept + self.records, indent=1, default=_json_default) + "\n")
        return path


def _json_default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def check_record(rec: dict) -> list:
    """The required fields missing from a record (empty when it is complete)."""
    missing = [k for k in REQUIRED_FIELDS if k not in rec]
    if rec.get("ms") is not None and "gbps" not in rec and "tflops" not in rec:
        missing.append("gbps or tflops")
    return missing


def table(records: Iterable[dict], *, reference: str = "memcpy", versus: str = "cupy") -> str:
    """A text table of records: ms, GB/s, fraction of ``reference`` and multiple of ``versus`` (same size and dtype)."""
    records = list(records)
    lines = [f"{'variant':24s} {'size':>13s} {'dtype':>7s} {'ms':>8s} {'GB/s':>7s} {'x ' + reference:>9s} {'x ' + versus:>7s}"]
    index = {(r["variant"], tuple(r["size"]), r["dtype"]): r for r in records}
    for r in records:
        key = (tuple(r["size"]), r["dtype"])
        ref = index.get((reference,) + key)
        vs = index.get((versus,) + key)
        g = r.get("gbps")
        frac = g / ref["gbps"] if g and ref and ref.get("gbps") else None
        mult = g / vs["gbps"] if g and vs and vs.get("gbps") else None
        size = "x".join(map(str, r["size"]))
        lines.append(
            f"{r['variant']:24s} {size:>13s} {r['dtype']:>7s} "
            f"{_fmt(r.get('ms'), '8.3f')} {_fmt(g, '7.0f')} {_fmt(frac, '9.2f')} {_fmt(mult, '7.2f')}"
        )
    return "\n".join(lines)


def _fmt(x, spec):
    width = int(spec.split(".")[0])
    return f"{x:{spec}}" if x is not None else "-".rjust(width)

