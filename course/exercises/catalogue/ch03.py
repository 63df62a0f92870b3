"""Chapter 03: coalescing (合并访存) — kinetic energy from a struct of arrays, column sums walking down, an array
of structs converted into a struct of arrays with both sides as coalesced as they can be, and weighted sums whose
weights every warp reads as a broadcast (广播); pointer chases kept in flight together (内存级并行, §1), and counts
kept in registers rather than local memory (本地内存, §2)."""

from __future__ import annotations

import numpy as np

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size, trace_size
from course.exercises.properties import broadcast_loads, coalesced, loads_in_flight, no_local_memory
from course.exercises.registry import register

# 03 -- kinetic energy of particles stored as a struct of arrays

KE_TPB = 128
VX, VY, VZ, MASS = 3, 4, 5, 6


def _ke_input(rng, n, why):
    q = f32(rng, (8, n))
    e = np.full(n, np.nan, np.float32)
    v2 = q[VX].astype(np.float64) ** 2 + q[VY].astype(np.float64) ** 2 + q[VZ].astype(np.float64) ** 2
    want = (0.5 * q[MASS] * v2).astype(np.float32)
    return Input(f"n={n} ({why})", (ceil_div(n, KE_TPB),), (KE_TPB,), (q, e), {1: want}, ("q", "e"))


def _ke_inputs(rng):
    return [
        _ke_input(rng, 1, "one particle"),
        _ke_input(rng, 127, "prime, less than one block"),
        _ke_input(rng, 257, "prime, two blocks and one particle"),
        _ke_input(rng, random_size(rng, 300, 700), "random"),
    ]


register(Exercise(
    name="03.kinetic_energy",
    title="Coalescing: kinetic energy from a struct of arrays",
    signature="kinetic_energy(q, e)",
    task=("Write `kinetic_energy(q, e)`: e[i] = 0.5 * mass * (vx^2 + vy^2 + vz^2) for particle i, with particles "
          "stored as a struct of arrays (SoA) as in chapter 03: q has shape (8, n) and field f of particle i is "
          "q[f, i] (fields x, y, z, vx, vy, vz, mass, charge numbered 0..7, so vx, vy, vz, mass are 3, 4, 5, 6). "
          f"One thread per particle, threads_per_block = {KE_TPB}, blocks_per_grid = ceil(n / {KE_TPB}). Every "
          "load and store of a warp should touch 32 neighbouring floats: 4 sectors per request (合并访存)."),
    make_inputs=_ke_inputs,
    make_trace_input=lambda rng: _ke_input(rng, trace_size(rng, 512), "whole warps"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong="Field f of particle i is q[f, i]: the first index picks the field. Which rows hold vx, vy, vz, mass?",
    hint_oob=("Two ways out of the array: threads past the last particle (guard them), or the indices in the "
              "wrong order (q has 8 rows, one per field, and n columns, one per particle)."),
    stub_hint="one thread per particle; read its velocity and mass from the right rows of q",
    rtol=1e-6, atol=1e-3,
))


# 03 -- column sums: one thread per column, walking down

CS_TPB = 64


def _cs_input(rng, rows, cols, why):
    a = f32(rng, (rows, cols))
    out = np.full(cols, np.nan, np.float32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(cols, CS_TPB),), (CS_TPB,), (a, out),
                 {1: a.astype(np.float64).sum(axis=0).astype(np.float32)}, ("a", "out"))


def _cs_inputs(rng):
    return [
        _cs_input(rng, 1, 1, "one element"),
        _cs_input(rng, 17, 16, "more rows than columns"),
        _cs_input(rng, 1, 33, "one row"),
        _cs_input(rng, 33, 1, "one column"),
        _cs_input(rng, random_size(rng, 5, 40), random_size(rng, 65, 150), "random"),
    ]


register(Exercise(
    name="03.column_sums",
    title="Coalescing: column sums, walking down",
    signature="column_sums(a, out)",
    task=("Write `column_sums(a, out)`: out[c] = a[0, c] + a[1, c] + ... + a[rows - 1, c] for a row-major float32 "
          f"matrix a of shape (rows, cols). It is launched with threads_per_block = {CS_TPB} and blocks_per_grid "
          f"= ceil(cols / {CS_TPB}): one thread per column, each adding up its column in a loop over the rows. "
          "Which thread gets which column decides whether each step of that loop is one coalesced request "
          "(合并访存) or 32 scattered ones."),
    make_inputs=_cs_inputs,
    make_trace_input=lambda rng: _cs_input(rng, trace_size(rng, 8, 1), trace_size(rng, 256, CS_TPB), "whole blocks"),
    properties=(coalesced("load", hint="In one step of the loop, the 32 lanes of a warp read one element each: "
                                       "are those 32 elements neighbours in memory?"), coalesced("store")),
    hint_wrong="Every column must be summed once, over all rows: check the last block's columns and a single row.",
    hint_oob="Threads past the last column must do nothing; the loop runs over a.shape[0] rows.",
    stub_hint="one thread per column; loop over the rows",
))


# 03 -- AoS to SoA: both sides as coalesced as they can be

AS_TPB = 128


def _as_input(rng, n, why):
    p = f32(rng, (n, 8))
    q = np.full((8, n), np.nan, np.float32)
    return Input(f"n={n} ({why})", (ceil_div(8 * n, AS_TPB),), (AS_TPB,), (p, q), {1: p.T.copy()}, ("p", "q"))


def _as_inputs(rng):
    return [
        _as_input(rng, 1, "one particle"),
        _as_input(rng, 15, "less than one block's 16 particles"),
        _as_input(rng, 33, "two blocks and one particle"),
        _as_input(rng, random_size(rng, 40, 120), "random"),
    ]


register(Exercise(
    name="03.aos_to_soa",
    title="Coalescing: convert an array of structs into a struct of arrays",
    signature="aos_to_soa(p, q)",
    task=("Write `aos_to_soa(p, q)`: q[f, i] = p[i, f] for particles stored as an array of structs p of shape "
          "(n, 8) (8 float fields per particle, 32 bytes) converted into a struct of arrays q of shape (8, n). It "
          f"is launched with one thread per float: threads_per_block = {AS_TPB}, blocks_per_grid = ceil(8 * n / "
          f"{AS_TPB}). The obvious mapping (one thread per particle, 8 loads each) makes a warp's loads "
          "touch 32 particles 32 bytes apart: 32 sectors per request. With one thread per float, let a warp "
          "read 32 consecutive floats of p (coalesced loads, 合并访存) and keep its stores within a few "
          "sectors: at most 8 per request."),
    make_inputs=_as_inputs,
    make_trace_input=lambda rng: _as_input(rng, trace_size(rng, 256), "whole blocks"),
    properties=(
        coalesced("load", hint="Number the floats of p as they lie in memory, 0 .. 8n-1: if thread k reads float "
                               "k, a warp reads 128 contiguous bytes. Which particle and field is float k?"),
        coalesced("store", max_sectors=8, hint="A warp's 32 floats belong to 4 particles: each of the 8 rows of "
                                               "q receives 4 neighbouring floats, one sector per row."),
    ),
    hint_wrong="Float k of p is field k % 8 of particle k // 8; it goes to q[field, particle].",
    hint_oob="There are 8n floats: threads with k >= 8 * n do nothing.",
    stub_hint="thread k moves float k of p: work out its particle and field",
))


# 03 -- the way back: a struct of arrays into an array of structs

SA_TPB = 128


def _sa_input(rng, n, why):
    q = f32(rng, (8, n))
    p = np.full((n, 8), np.nan, np.float32)
    return Input(f"n={n} ({why})", (ceil_div(8 * n, SA_TPB),), (SA_TPB,), (q, p), {1: q.T.copy()}, ("q", "p"))


def _sa_inputs(rng):
    return [
        _sa_input(rng, 1, "one particle"),
        _sa_input(rng, 15, "less than one block's 16 particles"),
        _sa_input(rng, 33, "two blocks and one particle"),
        _sa_input(rng, random_size(rng, 40, 120), "random"),
    ]


register(Exercise(
    name="03.soa_to_aos",
    title="Coalescing: a struct of arrays back into an array of structs",
    signature="soa_to_aos(q, p)",
    task=("Write `soa_to_aos(q, p)`: p[i, f] = q[f, i], the struct of arrays q of shape (8, n) (field f of every "
          "particle in row f) turned back into an array of structs p of shape (n, 8) (8 floats, 32 bytes, per "
          f"particle). It is launched with one thread per float: threads_per_block = {SA_TPB}, blocks_per_grid = "
          f"ceil(8 * n / {SA_TPB}). One thread per particle would make a warp's stores land 32 bytes apart: 32 "
          "sectors per request. Let a warp write 32 consecutive floats of p (coalesced stores, 合并访存) and keep "
          "its loads within a few sectors: at most 8 per request."),
    make_inputs=_sa_inputs,
    make_trace_input=lambda rng: _sa_input(rng, trace_size(rng, 256), "whole blocks"),
    properties=(
        coalesced("store", hint="Number the floats of p as they lie in memory, 0 .. 8n-1: if thread k writes float "
                                "k, a warp writes 128 contiguous bytes. Which particle and field is float k?"),
        coalesced("load", max_sectors=8, hint="A warp's 32 floats of p belong to 4 particles: it reads 4 "
                                              "neighbouring floats from each of the 8 rows of q, one sector per row."),
    ),
    hint_wrong=("Float k of p is field k % 8 of particle k // 8; it comes from q[field, particle]. p holds 8n "
                "floats, one per thread of the grid: every k below 8 * n writes one."),
    hint_oob="There are 8n floats: threads with k >= 8 * n do nothing.",
    stub_hint="thread k writes float k of p: work out its particle and field",
))


# 03 -- §3: one weight vector for every thread: each warp reads w[k] as a broadcast, x[k, i] coalesced

WS_TPB = 128


def _ws_input(rng, m, n, why):
    x, w = f32(rng, (m, n)), f32(rng, m)  # small integers: every sum is exact
    out = np.full(n, np.nan, np.float32)
    want = (w.astype(np.float64) @ x.astype(np.float64)).astype(np.float32)
    return Input(f"{m}x{n} ({why})", (ceil_div(n, WS_TPB),), (WS_TPB,), (x, w, out), {2: want}, ("x", "w", "out"))


def _ws_inputs(rng):
    return [
        _ws_input(rng, 1, 1, "one weight, one column"),
        _ws_input(rng, 5, 127, "five weights, prime, less than one block"),
        _ws_input(rng, 64, 129, "64 weights, one block and one column"),
        _ws_input(rng, random_size(rng, 2, 70), random_size(rng, 200, 600), "random"),
    ]


register(Exercise(
    name="03.weighted_sum",
    title="Weighted sums: one weight vector read as a broadcast",
    signature="weighted_sum(x, w, out)",
    task=("Write `weighted_sum(x, w, out)`: out[i] = w[0] * x[0, i] + w[1] * x[1, i] + ... + w[m - 1] * x[m - 1, i] "
          "for a float32 matrix x of shape (m, n) and weights w of length m, one thread per column i: "
          f"threads_per_block = {WS_TPB}, blocks_per_grid = ceil(n / {WS_TPB}). Every thread needs the same "
          "weights. As chapter 03 §3 shows for constant memory, a read is cheapest when all 32 lanes of a warp "
          "read the same address at once: a broadcast (广播). w is an argument, so it stays in global memory "
          "(cuda.const arrays are fixed when the kernel is compiled), and there a uniform read is one 32-byte "
          "sector per request. So at step k every lane reads w[k], and x[k, i] with neighbouring lanes on "
          "neighbouring columns (合并访存)."),
    make_inputs=_ws_inputs,
    make_trace_input=lambda rng: _ws_input(rng, 64, trace_size(rng, 4 * WS_TPB, WS_TPB), "64 weights, whole blocks"),
    properties=(
        broadcast_loads("w", hint="At step k, every lane of a warp should read the same weight w[k]. A start that "
                                  "depends on the lane (k + lane, say) makes one request read up to 32 weights."),
        coalesced("load"),
        coalesced("store"),
    ),
    hint_wrong=("out[i] needs all m products w[k] * x[k, i], for k = 0 .. m - 1 = w.shape[0] - 1, added in a "
                "register that starts at 0 and written once."),
    hint_oob="Guard column i against x.shape[1]: the last block is only partly filled.",
    stub_hint="one column per thread; a register sum over k of w[k] * x[k, i]; one store",
))


# 03 -- §1: four pointer chases per thread, interleaved, so that four loads are in flight at once

CH_TPB = 64
CH_CHAINS = 4  # course.kernels.memory.CHAINS


def _ch_input(rng, threads, steps, why):
    from course.kernels import memory as m

    order = m.random_cycle(4 * CH_CHAINS * (steps + 1), rng)  # room for every thread's four walks to stay apart
    nxt = m.chain_array(order, 1, len(order))
    starts = m.disjoint_starts(order, 1, threads, steps, rng)
    out = np.full((threads, CH_CHAINS), 0xFFFFFFFF, np.uint32)  # never a slot: an unwritten end shows
    return Input(f"{threads}x{CH_CHAINS} starts, {steps} steps ({why})", (ceil_div(threads, CH_TPB),),
                 (CH_TPB,), (nxt, starts, np.int32(steps), out), {3: m.reference_chase_each(nxt, starts, steps)},
                 ("nxt", "starts", "steps", "out"))


def _ch_inputs(rng):
    return [
        _ch_input(rng, 1, 1, "one thread, one step"),
        _ch_input(rng, 3, 0, "no steps: each walk ends where it starts"),
        _ch_input(rng, 65, 7, "one block and one thread"),
        _ch_input(rng, random_size(rng, 20, 130), random_size(rng, 2, 12), "random"),
    ]


register(Exercise(
    name="03.chase_interleaved",
    title="Latency: four pointer chases in flight at once",
    signature="chase_interleaved(nxt, starts, steps, out)",
    task=("Write `chase_interleaved(nxt, starts, steps, out)`: thread t follows four chains j = nxt[j] (指针追逐, "
          "pointer chasing, as chapter 03 §1 measures latency), chain c starting at starts[t, c], `steps` steps "
          "each, and writes where chain c ended to out[t, c]. nxt and starts are uint32; one thread per row of "
          f"starts, threads_per_block = {CH_TPB}, blocks_per_grid = ceil(starts.shape[0] / {CH_TPB}). A load whose "
          "address is the value of the load before it must wait for that load: walked one chain after another "
          "(chase_each in §1), every load waits a whole latency. The four chains do not depend on each other: "
          "advance all four in the same loop, one step of each per turn, so that each load of nxt comes 4 loads "
          "after the one whose value it needs and four are in flight at once (内存级并行, memory-level "
          "parallelism)."),
    make_inputs=_ch_inputs,
    make_trace_input=lambda rng: _ch_input(rng, trace_size(rng, 64), 6, "whole warps"),
    properties=(
        loads_in_flight("nxt", CH_CHAINS, hint=(
            "Walking chain 0 to its end before chain 1 makes every load wait for the one just before it. Keep four "
            "positions, one per chain, and in each turn of one loop over the steps advance each of the four once.")),
    ),
    hint_wrong=("out[t, c] is where chain c of thread t ends: `steps` times j = nxt[j] from j = starts[t, c] (0 "
                "steps: the start itself). Each chain moves only along its own walk."),
    hint_oob="Guard thread t against starts.shape[0]: the last block is only partly filled.",
    stub_hint="one thread per row of starts; four positions, all four advanced in each turn of one loop",
))


# 03 -- §2: counts kept in registers: a table updated at a data index lives in local memory

BC_TPB = 64
BC_BINS = 16  # course.kernels.memory.BINS


def _bc_input(rng, rows, cols, why):
    from course.kernels import memory as m

    x = rng.integers(0, BC_BINS, (rows, cols)).astype(np.int32)
    out = np.full((BC_BINS, cols), -1, np.int32)
    return Input(f"{rows}x{cols} ({why})", (ceil_div(cols, BC_TPB),), (BC_TPB,), (x, out),
                 {1: m.reference_bin_counts(x)}, ("x", "out"))


def _bc_inputs(rng):
    return [
        _bc_input(rng, 1, 1, "one value"),
        _bc_input(rng, 17, 33, "17 values per column, one warp and one column"),
        _bc_input(rng, 3, 65, "one block and one column"),
        _bc_input(rng, random_size(rng, 2, 12), random_size(rng, 70, 200), "random"),
    ]


register(Exercise(
    name="03.bin_counts",
    title="Registers, not local memory: counts at indices the compiler knows",
    signature="bin_counts(x, out)",
    task=("Write `bin_counts(x, out)`: out[b, i] = how many of the values x[0, i], x[1, i], ..., x[rows - 1, i] of "
          f"column i equal b, for b = 0 .. {BC_BINS - 1}, for an int32 matrix x of shape (rows, cols) with values in "
          f"0 .. {BC_BINS - 1} and out of shape ({BC_BINS}, cols). One thread per column: threads_per_block = "
          f"{BC_TPB}, blocks_per_grid = ceil(cols / {BC_TPB}). bin_counts_local in chapter 03 §2 counts into a "
          "per-thread table h[x[k, i]] += 1; registers cannot be indexed by a value known only at run time, so the "
          "compiler puts that table in local memory (本地内存). Count so that every index is "
          "known when the kernel is compiled (a loop over range(16), or one variable per count): the compiler "
          "then keeps every count in a register. Judged on what the GPU compiler (ptxas, sm_90) reports, where it "
          "is installed (make toolkit)."),
    make_inputs=_bc_inputs,
    make_trace_input=lambda rng: _bc_input(rng, 8, trace_size(rng, 64), "whole warps"),
    properties=(
        no_local_memory(hint=(
            "A table indexed by data (h[x[k, i]]) cannot be a set of registers: a register is named in the "
            "instruction itself. Make every index a number the compiler knows: for each b of range(16), count the "
            "values equal to b in a register of its own. A local array indexed only by a literal-range loop's "
            "counter stays in registers only where the compiler unrolls that loop completely (h[b] += v == b is "
            "unrolled; an if inside the loop can stop it): the check reports what the compiler did.")),
    ),
    hint_wrong=("out[b, i] counts the k with x[k, i] == b, over all rows of column i, for all 16 values b (0 "
                "where none): every one of the 16 rows of out is written."),
    hint_oob="Guard column i against x.shape[1]: the last block is only partly filled.",
    stub_hint="one thread per column; one count per value b, each at an index known when compiling",
))
