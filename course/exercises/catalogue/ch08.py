"""Chapter 08: transfers and streams — the kernel of one chunk of a pipeline, a dot product that reads mapped
(zero-copy) host memory once, and the pipeline itself: host code judged on the schedule it issues."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input, Property
from course.exercises.host import PIPELINE_CODE, host_judge, schedule
from course.exercises.inputs import ceil_div, f32, random_size, trace_size
from course.exercises.properties import atomics_at_most, coalesced, global_loads_at_most, no_races
from course.exercises.registry import register

CH_TPB = 128
CH_N = 1000
CH_FACTOR = 0.5


def _ch_input(rng, n, start, count, why):
    x = f32(rng, n)
    out = np.full(n, np.nan, np.float32)  # elements outside the chunk belong to other streams: untouched
    want = out.copy()
    want[start:start + count] = x[start:start + count] * np.float32(CH_FACTOR)
    return Input(f"n={n}, start={start}, count={count} ({why})", (ceil_div(count, CH_TPB),), (CH_TPB,),
                 (x, out, CH_FACTOR, start, count), {1: want}, ("x", "out", "factor", "start", "count"))


def _ch_inputs(rng):
    start = random_size(rng, 1, CH_N - 300)
    return [
        _ch_input(rng, CH_N, 0, 1, "first element only"),
        _ch_input(rng, CH_N, 0, 250, "first of four chunks"),
        _ch_input(rng, CH_N, 250, 250, "second of four chunks"),
        _ch_input(rng, CH_N, 997, 3, "the short last chunk"),
        _ch_input(rng, CH_N, 331, 257, "odd offset, prime count"),
        _ch_input(rng, CH_N, start, random_size(rng, 1, CH_N - start + 1), "random chunk"),
    ]


def _ch_trace_input(rng):
    """A chunk aligned to a warp's 128 bytes, of whole blocks, in a longer array: sizes drawn per check."""
    start, count = trace_size(rng, 1024), trace_size(rng, 2048, CH_TPB)
    return _ch_input(rng, start + count + trace_size(rng, 1024), start, count, "an aligned chunk of whole blocks")


register(Exercise(
    name="08.scale_chunk",
    title="One chunk of a pipeline: a kernel on [start, start + count)",
    signature="scale_chunk(x, out, factor, start, count)",
    task=("Write `scale_chunk(x, out, factor, start, count)`: out[j] = x[j] * factor for start <= j < "
          "start + count, and nothing else of out changes. This is the kernel of one chunk when a transfer is "
          "split into pieces on several streams (chapter 08): each stream copies its chunk in, runs the kernel "
          "on it, and copies it out, while the other streams' chunks are still in flight, so a kernel that "
          "touches a neighbour's elements corrupts them. It is launched with threads_per_block = "
          f"{CH_TPB} and blocks_per_grid = ceil(count / {CH_TPB}), one thread per element of the chunk; "
          "loads and stores stay coalesced (合并访存)."),
    make_inputs=_ch_inputs,
    make_trace_input=_ch_trace_input,
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Thread i of the launch handles element start + i of the arrays, and only when i < count: the "
                "elements before start and from start + count on belong to other chunks and must keep their "
                "value."),
    hint_oob="The last block has threads past the chunk's end: compare i with count before any access.",
    stub_hint="thread i of the launch handles element start + i; threads with i >= count do nothing",
))


# 08 -- a dot product over mapped (zero-copy) host memory: every byte crosses PCIe once

DM_TPB = 128
DM_BLOCKS = 4


def _dm_input(rng, n, why):
    x, y = f32(rng, n) / 4, f32(rng, n) / 4  # multiples of 1/4: every product and sum is exact
    out = np.zeros(1, np.float32)
    want = np.array([(x.astype(np.float64) * y).sum()], np.float32)
    return Input(f"n={n} ({why})", (DM_BLOCKS,), (DM_TPB,), (x, y, out), {2: want}, ("x", "y", "out"))


def _dm_inputs(rng):
    grid = DM_BLOCKS * DM_TPB
    return [
        _dm_input(rng, 1, "one element"),
        _dm_input(rng, 100, "fewer elements than threads"),
        _dm_input(rng, grid + 1, "one element more than threads"),
        _dm_input(rng, random_size(rng, 1500, 3000), "random"),
    ]


DM_TRACE_N = 8 * DM_BLOCKS * DM_TPB

register(Exercise(
    name="08.dot_mapped",
    title="Zero-copy: a dot product that reads host memory once",
    signature="dot_mapped(x, y, out)",
    task=("Write `dot_mapped(x, y, out)`: out[0] += x[0] y[0] + x[1] y[1] + ... for float32 vectors x and y "
          "(out starts at 0). In chapter 08 x and y are mapped host memory (零拷贝, cuda.mapped_array): every "
          "load a kernel makes crosses PCIe, so each byte must be read exactly once, in full 32-byte sectors "
          f"(合并访存). It is launched with threads_per_block = {DM_TPB} and blocks_per_grid = {DM_BLOCKS} "
          "whatever n is (a grid-stride loop), and each block publishes its sum with one atomic: reduce the "
          "block's threads in shared memory (or with shuffles) first."),
    make_inputs=_dm_inputs,
    make_trace_input=lambda rng: _dm_input(rng, trace_size(rng, DM_TRACE_N), "several passes of the grid"),
    properties=(
        coalesced("load"),
        global_loads_at_most(lambda inp: 2 * inp.args[0].size * 4 // 32, "each byte of x and y once",
                             "Every load of mapped memory is a trip over PCIe: read x[i] and y[i] once each, "
                             "in one pass."),
        atomics_at_most("global", DM_BLOCKS, "one per block",
                        "Add up the block's partial sums on the GPU side first; only the block's total needs "
                        "to reach out[0]."),
        no_races(),
    ),
    hint_wrong=("Each product x[i] * y[i] must be counted once: step by the whole grid, and make sure every "
                "thread's partial sum (also a thread with no element: 0) enters the block's sum."),
    hint_oob="The grid-stride loop must stop before x.shape[0].",
    stub_hint="grid-stride partial sum in a register; block reduction; one atomic per block",
    atol=1e-2,
))



# 08 -- the pipeline: host code, judged on the schedule it issues

PL_FACTOR = 0.5
PL_MAX_FRACTION = 0.45  # 8 chunks over 4 streams: (8 + 2) / 24 = 0.42; one chunk per stream: 0.50
PL_TRACE = (1 << 14, 4)  # n, n_streams of the run whose schedule is judged


def _pl_input(rng, n, n_streams, why):
    x = f32(rng, n)
    return Input(f"n={n}, n_streams={n_streams} ({why})", (), (), (x, PL_FACTOR, n_streams),
                 {0: (x * np.float32(PL_FACTOR)).astype(np.float32)}, ("x", "factor", "n_streams"))


def _pl_inputs(rng):
    return [
        _pl_input(rng, 1, 2, "one element"),
        _pl_input(rng, 1000, 2, "two streams"),
        _pl_input(rng, 4099, 3, "prime, three streams"),
        _pl_input(rng, random_size(rng, 2000, 6000), 4, "random"),
    ]


def _covered(log, kinds, stream, rng_):
    root, a, b = rng_
    return [op for op in log if op[0] in kinds and op[1] == stream and op[4][0] == root
            and op[4][1] < b and a < op[4][2]]


def _props():
    def pinned(rec, inp):
        copies = [op for op in rec.log if op[0] in ("h2d", "d2h")]
        if not copies:
            return False, "no copies between host and device were issued"
        bad = [op for op in copies if not op[2]]
        return not bad, (f"{len(copies) - len(bad)} of {len(copies)} copies use pinned host memory"
                         + ("" if not bad else f"; the first pageable one is a {bad[0][0].upper()} of {bad[0][3]} bytes"))

    def streams(rec, inp):
        ks = {op[1] for op in rec.log if op[0] == "kernel"}
        cs = {op[1] for op in rec.log if op[0] in ("h2d", "d2h")}
        used = (ks | cs) - {0}
        ok = len(ks - {0}) >= 2 and 0 not in ks | cs
        return ok, (f"kernels on {len(ks - {0})} stream(s), copies on {len(cs - {0})}"
                    + (", some on the default stream" if 0 in ks | cs else "") + f"; {len(used)} streams used in all "
                    "(want kernels and copies on at least 2 streams, none on the default stream)")

    def chunks(rec, inp):
        log = rec.log
        kernels = [(i, op) for i, op in enumerate(log) if op[0] == "kernel"]
        n_streams = inp.args[2]
        if len(kernels) < n_streams:
            return False, f"{len(kernels)} kernel launch(es) for {n_streams} streams: split the work into chunks"
        for i, op in kernels:
            if len(op[2]) < 2:
                return False, "a kernel launch does not get its chunk's input and output device arrays"
            before = _covered(log[:i], ("h2d",), op[1], op[2][0])
            after = _covered(log[i + 1:], ("d2h",), op[1], op[2][1])
            if not before or not after:
                what = "copied in on its stream before it" if not before else "copied out on its stream after it"
                return False, f"kernel launch {kernels.index((i, op)) + 1}: its chunk is not {what}"
        return True, f"{len(kernels)} chunks, each copied in, processed and copied out on one stream"

    def overlap(rec, inp):
        t, serial, _ = schedule(rec.log)
        if not serial:
            return False, "nothing was issued"
        frac = t / serial
        return frac <= PL_MAX_FRACTION + 1e-9, (f"modelled time {frac:.2f} of the serial time (one copy engine each way and "
                                    f"one for kernels; want at most {PL_MAX_FRACTION:.2f})")

    def synced(rec, inp):
        log = rec.log
        last = max((i for i, op in enumerate(log) if op[0] == "d2h"), default=None)
        if last is None:
            return False, "no copy back to the host"
        after = [op for op in log[last + 1:] if op[0] == "sync"]
        streams_out = {op[1] for op in log if op[0] == "d2h"}
        ok = any(op[1] is None for op in after) or streams_out <= {op[1] for op in after}
        return ok, ("the host waits for the copies back before using the result" if ok else
                    "the function returns without waiting for the last copies back to the host: on a GPU the "
                    "result may not have arrived yet")

    def prop(name, fn, hint):
        return Property(name, lambda report, extra: fn(*report), hint)

    return (
        prop("pinned host buffers (锁页内存)", pinned,
             "A copy from pageable memory is synchronous: the driver stages it through a pinned buffer of its own. "
             "Copy x into a buffer from cuda.pinned_array once, and copy results back into another."),
        prop("copies and kernels on at least 2 streams (流)", streams,
             "Work on one stream runs in order. Give each chunk's three steps to one stream, and different chunks "
             "to different streams (cuda.stream()), passing stream= to copies and as the launch's third item."),
        prop("chunked: each chunk copied in, processed and copied out in order on its stream", chunks,
             "Split x into pieces; for each piece issue copy-in, kernel, copy-out on the same stream."),
        prop(f"the schedule overlaps copies with kernels (at most {PL_MAX_FRACTION:.2f} of the serial time)", overlap,
             "With one chunk per stream, a stream's copy-out cannot overlap its own copy-in. Use more chunks than "
             "the three steps need to fill the pipeline, with pinned buffers."),
        prop("waits for the GPU before returning the result", synced,
             "Copies on a stream return at once. Which call makes the host wait until they are done?"),
    )


register(Exercise(
    name="08.pipeline",
    title="A pinned-memory pipeline over streams, judged on its schedule",
    signature="pipeline(x, factor, n_streams, kernel)",
    task=("Write the host function `pipeline(x, factor, n_streams, kernel)` (plain Python, no @cuda.jit): it "
          "returns a new NumPy array x * factor computed on the GPU by `kernel`, a grid-stride kernel "
          "kernel(d_in, d_out, factor) that scales a whole device array (launch it as kernel[blocks_per_grid, "
          "threads_per_block, stream](...)). x is ordinary pageable memory. Make the copies overlap with the "
          "kernels: copy x once into a buffer from cuda.pinned_array (锁页内存), make n_streams streams with "
          "cuda.stream() (流), split the work into chunks, and issue each chunk's copy in (copy_to_device with "
          "stream=), kernel and copy out (copy_to_host into a pinned buffer, stream=) on one stream, the chunks "
          "spread over the streams; wait for the GPU before returning. It is judged on the result and on the "
          "schedule it issues: the course records every call (which stream, pinned or pageable, which bytes) and "
          "models the GPU's copy engines and compute engine (one engine for each copy direction, one for "
          "kernels; a pageable copy is synchronous). When judged, nothing reaches a GPU: the copies are NumPy "
          "copies and the kernels run on the CPU engine, one after another, so the schedule is the model's, not a "
          "measurement; on a GPU, time the same function yourself with course.measure.bench."),
    make_inputs=_pl_inputs,
    make_trace_input=lambda rng: _pl_input(rng, trace_size(rng, PL_TRACE[0], 256), PL_TRACE[1], "the traced run"),
    properties=_props(),
    hint_wrong=("The result must be x * factor for every element: check that the chunks cover 0..n-1 once "
                "(the last one is shorter), and that you return the pinned output buffer's contents after "
                "waiting for the GPU."),
    stub_hint="pinned buffers, streams, then per chunk: copy in, kernel, copy out on one stream; synchronise; return",
    host_judge=host_judge(PIPELINE_CODE),
    host_kernel=lambda: __import__("course.kernels.transfers", fromlist=["scale"]).scale,
))
