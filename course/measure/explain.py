"""Why is it this fast?  A launch's time on the H200, predicted on the CPU from what the tracer counts.

:func:`explain` traces a sample of the launch's blocks on the CPU engine (:func:`course.trace.trace`),
scales the counts to the whole grid, reads what the GPU compiler made of the kernel (registers, SASS
instructions per source line: :func:`course.trace.compiler.summary`) and the occupancy model
(:mod:`course.measure.occupancy`), and turns them into one time per **ceiling** — the time the launch would take if
that one unit were the only limit:

=========  ==================================================================================================
``dram``   bytes that must come from (or go to) HBM over the measured copy bandwidth; nothing when the
           launch's data fits in the L2 and stays there between launches (the "L2-resident" regime); sectors
           left partly written in an array beyond the L2 (a random scatter) go at the rate the H200 probe measured
``l2``     32-byte sectors between the SMs and the L2 (loads that miss L1, every store) over the L2's rate, plus the
           misses of loads that come back, at irregular places, to a sector of an array larger than the L2 (a random
           gather from a big table, a pointer chase: each an HBM access of 64 bytes) at ``far_miss_per_s`` (fitted)
``l1``     the L1/shared data path: one wavefront per cycle per SM — the 128-byte lines of every global
           request (an uncoalesced request needs many) plus every shared-memory wavefront
``shared`` the same path when shared-memory wavefronts (bank conflicts included) are most of it
``issue``  warp instructions over 4 schedulers × 132 SMs × the clock (one instruction per cycle each); the
           instructions are the SASS's per source line × the tracer's executions of the line, a line of an
           unrolled loop counted per execution as the SASS's main and remainder loops (or the copies its body
           repeats) say (:func:`course.trace.sass_flight.per_execution`); instructions outside every SASS loop
           run at most once per warp, and the slow-path subroutines not at all
           (:func:`course.trace.sass_flight.placement`); or, when more than half the SASS is integer, logic,
           compare or select instructions, the ALU pipe's two cycles for each (16 lanes a scheduler), which Nsight
           Compute's SM throughput counts as well
``atomics`` atomics on one address, one after another (a float add ~1.76 ns each lane, measured on the H200; an
           integer add ~0.75 ns each warp instruction, as ptxas aggregates a warp's integer atomics on one address;
           the SASS says which a kernel makes), or scattered atomics (a warp's lanes on many
           sectors: a random histogram) at the L2's rate for an array of that size (4.4 G/s on 128 bytes of bins,
           12 G/s on 4 KB, 100 G/s on 4 MB: ``probes_atomic_rate``), whichever is longer
``latency`` global loads one after another per warp: too few in flight to cover the memory latency
           (Little's law with the warps an SM holds and the loads each has in flight — as many as the SASS
           issues before its first wait, :func:`course.trace.sass_flight.loads_in_flight`; the round trip is the
           L2's when the launch's data stay in the L2, HBM's otherwise; HBM's is chapter 06's Little's-law probe,
           0.40 µs, ``probes_littles_law``), or a warp's own instructions one after another (each waits
           ``dependent_cycles`` for the one before: few warps per scheduler cannot hide that), whichever is longer;
           plus each barrier (``barrier_s`` for a block of 8 warps, in proportion to its warps: a barrier waits for
           the block's slowest warp) and each wave of blocks' start and drain (``wave_s``), once per wave of resident
           blocks
``blocks`` blocks started and retired: the GPU starts about 1.66 G blocks a second (all SMs together), so a grid of
           2^18 blocks of 32 to 512 threads takes 0.160 ms whatever they do (``probes_block_rate``; so do the
           exercises' 2^25-element kernels in 2^18 blocks of 64 to 128 threads, 2 to 8 bytes an element)
``launch`` a launch's own floor (~2 µs on the H200, with launches queued)
=========  ==================================================================================================

The prediction is the largest ceiling, plus a share of the next one (units overlap, but not perfectly).
The **limiter** is named as Nsight Compute's busiest unit is (:func:`limiter_of`): each unit's predicted
utilisation is its ceiling at the unit's *peak* rate over the predicted time, and the busiest unit is the limiter
when it reaches :data:`BUSY` (60 %) of its peak; otherwise ``latency`` (``launch`` under :data:`LAUNCH_BOUND_S`),
and ``atomics`` when same-address atomics take 60 % of the time.  So a streaming kernel whose latency ceiling is
the largest is still ``l2`` or ``dram`` when that unit is busy enough, as the profile would say;
the constants (bandwidths, latency, the overlap) live in :data:`H200` and were fitted on part of the
course's profiled kernels (``data/explain_validation.json``), whose other part measures the error.
``launch_overhead_ms`` is numba's host time to issue a launch, which a notebook that times one call sees
on top: it is kept apart, never inside ``ms``.

Sampling (so that any launch answers in a few seconds on 2 cores): block 0 is traced first and timed; then
up to :data:`MAX_SAMPLE` blocks spread evenly over the grid (first and last included) are traced, as many as
the time budget allows; every count is scaled by blocks in the grid ÷ blocks traced.  A grid of blocks that
do different work (a tail block, a data-dependent branch) is covered as well as its sample is.  A ``range`` loop
of many trips runs its first few (2 to :data:`~course.measure.sampling.LOOP_CAP`, as the budget allows) and its
lines' counts are scaled by trips asked ÷ trips run (:class:`~course.measure.sampling.LoopSampler`); a grid-stride
``while i < n: …; i += stride`` loop is run as the ``range`` loop of the same trips for this
(:func:`course.trace.markers.while_as_range`); any other ``while`` loop runs whole.  :attr:`Explanation.sampled`
says how many blocks were traced, :attr:`Explanation.how` what was cut.

Defined for chapter 01 (notebooks/01_programming_model.ipynb, "How long does it take?") and used by every
chapter's "your kernels" cells (:mod:`course.show.lab`).
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import pathlib
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

import course
from course import device as _dev
from course.measure.explain_count import (BUDGET_S, LINE_EVENTS_COST, MAX_SAMPLE, Counts,  # noqa: F401
                                          add_compiler_facts, argtypes_of, count, host_array)

ROOT = pathlib.Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "data" / "explain_validation.json"

LIMITERS = ("dram", "l2", "l1", "shared", "issue", "fp64", "atomics", "latency", "launch")


@dataclass(frozen=True)
class Constants:
    """The H200's measured constants the prediction uses (one place; fitted where marked)."""

    clock_hz: float = 1.98e9  # sm__cycles_elapsed.avg.per_second under load (kernel_profiles run)
    sms: int = _dev.SM_COUNT
    schedulers: int = 4
    dram_bps: float = 4.25e12  # the 1 GiB device copy of the same run, bytes read + written
    # the peak Nsight Compute's dram__throughput % is taken of: DRAM bytes / time / that % in the profile run, the
    # same 4.81 TB/s on each of its 30 cases over 30 % (a copy reaches 88 % of it)
    dram_peak_bps: float = 4.81e12
    l2_bps: float = 6.4e12  # lts__t_sectors over time × lts% of vector_add (n = 2^25) in the same run
    l2_resident_bytes: float = 40e6  # data below this stays in the 50 MB L2 between launches
    l1_wavefronts_per_cycle: float = 1.0
    issue_efficiency: float = 0.85  # fitted: the share of issue slots a busy kernel keeps
    # cycles a warp instruction holds the ALU pipe (16 lanes per scheduler): Nsight's ALU pipe % is 2 × the ALU share
    # of the instructions × issue-active % (vector_add: 2 × 20.97 M / 44.04 M × 36.47 % = 34.7 %, measured 34.84 %;
    # lane_branch: 91.4 %, measured 91.44 %), so an integer-heavy kernel fills the ALU before the schedulers
    alu_cycles: float = 2.0
    # a global load's round trip from HBM: 383–444 ns with one 4-byte load in flight per thread at 68 KB to 1.1 MB in
    # flight device-wide (probes_littles_law, run 20261201T053454Z-5844da; bytes in flight / bandwidth)
    latency_s: float = 400e-9
    l2_latency_s: float = 300e-9  # fitted: a load's round trip when the launch's data stay in the L2
    atomic_same_address_s: float = 1.76e-9  # probes_atomics: one same-address float atomic after another
    # an integer add on one address: 0.75 ns, from two launches of about a million warp-aggregated int32 atomics each
    # (sol_count_positive 792.6 µs, fresh_ballot_count 794.3 µs; both predicted 2.4x slow at the float rate)
    atomic_int_same_address_s: float = 0.75e-9
    # scattered atomics (lanes of a warp on many sectors) by the bytes of the array they update: lane atomics per second,
    # int32 and float32 alike (geometric mean), probes_atomic_rate run 20261202T132453Z-8241f0 (2^24 random keys);
    # coalesced atomics (a warp on one run of addresses) are L2 sectors and, on one address, the chain above
    atomic_scatter_rates: tuple = ((128, 4.44e9), (1024, 5.58e9), (4096, 11.81e9), (32768, 37.93e9),
                                   (262144, 78.78e9), (4194304, 99.65e9), (67108864, 31.19e9))
    # partly written store sectors to an array beyond the L2 (a random scatter): HBM reads and writes whole lines, at
    # 21.4 G sectors/s into 64 MB and 16.7 G/s into 256 MB (same run; inside the L2 it is l2_partial_sectors_per_s)
    scatter_beyond_rates: tuple = ((67108864, 21.38e9), (268435456, 16.67e9))
    launch_floor_s: float = 2.0e-6  # an empty kernel, queued: ~1.3 µs; a small real one ~2–3 µs
    overlap: float = 0.3  # fitted: the share of the second ceiling that adds to the first
    l2_partial_sectors_per_s: float = 7.0e10  # fitted: store sectors written only in part (a scattered store)
    default_registers: int = 32  # without compiler facts
    l1_latency_s: float = 40e-9  # fitted: a load that hits L1
    barrier_s: float = 300e-9  # fitted: what one syncthreads adds to the chain of a block of 8 warps
    # misses of loads that come back to a sector of an array beyond the L2, per second (fitted; see ceilings)
    far_miss_per_s: float = 44e9
    l2_fill_share: float = 0.5  # L2 sectors of work per HBM sector filled or drained (the profile's lts counters)
    max_instructions_per_step: float = 32.0  # the profile's most SASS instructions per traced warp line step
    instructions_per_step: float = 6.0  # fitted fallback: SASS per traced warp line step, without compiler facts
    dependent_cycles: float = 4.0  # fitted: cycles a warp waits between its own instructions (a dependent chain)
    wave_s: float = 300e-9  # fitted: what starting a wave of blocks and draining it adds to each wave's chain
    # blocks the GPU starts and retires per second, all SMs together: 1.66 G/s for 2^20 blocks of 32 to 512 threads
    # that do next to nothing, the same with one store per thread (probes_block_rate, run 20261202T164012Z-152016);
    # blocks of 1024 threads (two per SM) 1.25 G/s: their start and drain is the latency ceiling's wave_s
    blocks_per_s: float = 1.66e9


H200 = Constants()  # the defaults; :func:`constants` is what predictions use


def constants() -> Constants:
    """The constants fitted by the last validation (``data/explain_validation.json``), else the defaults."""
    if "k" not in _FITTED:
        k = H200
        try:
            saved = json.loads(VALIDATION.read_text())["constants"]
            k = Constants(**{f: saved[f] for f in Constants.__dataclass_fields__ if f in saved})
        except (OSError, ValueError, KeyError, TypeError):
            pass
        _FITTED["k"] = k
    return _FITTED["k"]


_FITTED: dict = {}


@dataclass
class Explanation:
    """One launch explained: predicted time on the H200, the ceiling that binds, and why."""

    kernel: str
    ms: float
    limiter: str
    ceilings: dict  # limiter -> ms, binding first
    launch_overhead_ms: float
    why: str
    counts: Counts
    sampled: int
    seconds: float
    error: str = ""  # the stated error of predictions on held-out kernels
    measured_ms: Optional[float] = None

    def __repr__(self):
        head = f"{self.kernel}: predicted {self.ms * 1e3:.1f} µs on the H200, limited by {self.limiter}"
        if self.measured_ms is not None:
            head += f" (measured here: {self.measured_ms * 1e3:.1f} µs)"
        return head + f". {self.why}" + (f" [{self.error}]" if self.error else "")

    def table(self) -> str:
        """The ceilings as text, binding first."""
        rows = [f"{'ceiling':9s} {'µs':>10s}"] + [f"{k:9s} {v * 1e3:10.2f}" for k, v in self.ceilings.items()]
        return "\n".join(rows)

    def plot(self, ax=None):
        """The ceilings as horizontal bars (roofline-style: the longest bar is the limit), prediction marked."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.35 * len(self.ceilings) + 1))
        names = list(self.ceilings)[::-1]
        vals = [self.ceilings[n] * 1e3 for n in names]
        ax.barh(names, vals, color=["tab:red" if n == self.limiter else "tab:gray" for n in names])
        ax.axvline(self.ms * 1e3, color="k", ls="--", lw=1, label=f"predicted {self.ms * 1e3:.1f} µs")
        if self.measured_ms is not None:
            ax.axvline(self.measured_ms * 1e3, color="tab:blue", lw=1.5, label=f"measured {self.measured_ms * 1e3:.1f} µs")
        ax.set_xlabel("µs on the H200 if this were the only limit")
        ax.set_title(f"{self.kernel}: limited by {self.limiter}")
        ax.legend(loc="lower right", fontsize=8)
        return ax


# --- the model -------------------------------------------------------------------------------------------------


def ceilings(c: Counts, k: Constants = H200) -> dict:
    """One time in seconds per ceiling (see the module docstring), unsorted."""
    from course.measure import occupancy

    regs = c.registers or k.default_registers
    try:
        occ = occupancy.occupancy(regs, c.threads_per_block, c.shared_bytes)
        blocks_per_sm = max(1, occ.blocks_per_sm)
    except Exception:  # a block too large for the model: the launch itself will say so
        blocks_per_sm = 1
    wpb = math.ceil(c.threads_per_block / 32)
    c.resident_warps = max(1.0, min(blocks_per_sm * wpb, c.blocks * wpb / k.sms))
    out = {}
    c.dram_bytes = 0.0 if c.footprint <= k.l2_resident_bytes else c.footprint
    out["dram"] = c.dram_bytes / k.dram_bps
    full_st = c.gst_sectors * (1.0 - c.partial_stores)
    part_st = c.gst_sectors * c.partial_stores
    # loads that miss L1 go to the L2; a small array read by every block is fetched once per SM at most
    l2_loads = min(c.gld_sectors * (1.0 - c.l1_hit), k.sms * c.load_footprint / 32) if c.load_footprint else \
        c.gld_sectors * (1.0 - c.l1_hit)
    # the L2 also works for what HBM fills and drains: about half a sector of L2 work per HBM sector (vector_add,
    # read_strided: lts__t_sectors minus the L1's sectors over the DRAM sectors, in the profile run)
    l2_sectors = l2_loads + full_st + c.atomics + k.l2_fill_share * c.dram_bytes / 32
    out["l2"] = l2_sectors * 32 / k.l2_bps + part_st / k.l2_partial_sectors_per_s
    # loads that come back to a sector of an array larger than the L2 (a random gather from a big table, a pointer
    # chase) miss it in the share of the array the L2 cannot hold: each miss one HBM access of 64 bytes, at
    # far_miss_per_s on the L2 (fitted; round 5's chases and round 8's table_interp_hbm measured 42-47 G/s of 64-byte
    # HBM accesses, with the L2 the busiest unit; before, predicted 2.4-3.5x fast)
    far = sum(n * max(0.0, 1.0 - k.l2_resident_bytes / b) for n, b in c.far_retouch)
    if far:
        out["l2"] += far / k.far_miss_per_s
        out["dram"] += far * 64 / k.dram_bps
    lone_st = c.gst_sectors * c.lone_partial_stores
    if lone_st and c.store_target_bytes > k.l2_resident_bytes:
        # sectors left partly written in an array beyond the L2: HBM reads and writes the lines around them
        out["dram"] += lone_st / rate_at(k.scatter_beyond_rates, c.store_target_bytes)
    l1_wf = c.lines + c.shared_wavefronts
    # the SMs that have work: a grid of fewer blocks than SMs leaves the rest idle (round 4's 8-block Monte Carlo was
    # predicted 20x fast with its instructions spread over all 132)
    busy_sms = max(1, min(k.sms, c.blocks))
    t_l1 = l1_wf / (busy_sms * k.clock_hz * k.l1_wavefronts_per_cycle)
    out["shared" if c.shared_wavefronts > c.lines else "l1"] = t_l1
    wi = c.warp_instructions if c.warp_instructions is not None else c.steps * k.instructions_per_step
    # a loop the compiler unrolled but the count could not see (no memory line in it) inflates the SASS estimate:
    # no course kernel issues more than ~36 warp instructions per traced line step (the naive matmul's loop)
    wi = min(wi, c.steps * k.max_instructions_per_step) if c.steps else wi
    # the schedulers issue one instruction a cycle, but an ALU instruction holds the ALU pipe two: an integer-heavy
    # kernel (more than half its SASS on the ALU) is limited by that pipe, which Nsight's SM throughput counts too
    slots = max(wi, wi * (c.alu_share or 0.0) * k.alu_cycles)
    out["issue"] = slots / (busy_sms * k.schedulers * k.clock_hz * k.issue_efficiency)
    out["atomics"] = atomics_s(c, k)
    # latency: each wave of resident blocks waits for its loads one round trip after another
    waves = c.blocks / (blocks_per_sm * k.sms)
    warps = c.blocks * wpb
    # loads in flight per warp: what the SASS issues before its first wait (an unrolled loop's copies), else the
    # source's distinct load sites
    flight = c.loads_in_flight or c.ilp
    trips = (c.gld_requests / warps) / max(1.0, flight) if warps else 0.0
    # a load that misses L1 waits for the L2 (data that stay there between launches) or for HBM
    miss = k.l2_latency_s if c.footprint <= k.l2_resident_bytes else k.latency_s
    lat = c.l1_hit * k.l1_latency_s + (1.0 - c.l1_hit) * miss
    # a barrier waits for the block's slowest warp: one more round of the chain
    # (no store drain: a warp exits with its stores in flight; a fitted drain of 0.4–0.8 µs per block made every
    # streaming kernel latency-bound, where the profile finds the L2 busiest)
    own = (wi / warps) * k.dependent_cycles / k.clock_hz if warps else 0.0
    # a barrier waits for the block's slowest warp, the longer the more warps wait at it: barrier_s is a block of 8
    # warps' (chapter 05's tile transposes in blocks of 32 warps were predicted 0.67x with one cost for every block)
    chain = max(trips * lat, own) + c.barriers * k.barrier_s * wpb / 8 + k.wave_s
    out["latency"] = max(1.0, waves) * chain if (c.gld_requests or own) else 0.0
    out["blocks"] = c.blocks / k.blocks_per_s
    out["launch"] = k.launch_floor_s
    return out


def rate_at(table, nbytes: float) -> float:
    """A measured rate at ``nbytes``, interpolated in log-log between the table's (bytes, rate) points, held flat
    beyond its ends."""
    xs = [math.log(b) for b, _ in table]
    ys = [math.log(r) for _, r in table]
    return float(math.exp(np.interp(math.log(max(nbytes, 1.0)), xs, ys)))


def atomic_throughput_s(c: Counts, k: Constants = H200) -> float:
    """The L2's time for the launch's scattered atomics at the rate the probe measured for an array of that size."""
    if not c.atomic_scattered:
        return 0.0
    return c.atomic_scattered / rate_at(k.atomic_scatter_rates, c.atomic_target_bytes)


def atomics_s(c: Counts, k: Constants = H200) -> float:
    """The atomics ceiling: the longest same-address chain, one atomic after another at the float or the integer rate
    (the SASS's share; without it the float rate, the slower), or the scattered atomics at the L2's rate
    (:func:`atomic_throughput_s`), whichever is longer."""
    share = 1.0 if c.float_atomics is None else c.float_atomics
    # integer atomics on one address merge per warp instruction: ptxas aggregates them (round 5's count_over_atomic:
    # VOTEU, UFLO, POPC and one REDG per warp; 0.196 ms = 262,144 warp instructions x 0.75 ns, where its 4.46 M lanes
    # were predicted 17x slow); float adds do not (chapter 07's reduce_atomic: 67 M lanes x 1.76 ns = 118 ms, measured)
    int_chain = min(c.atomic_chain, c.atomics) if c.atomics else c.atomic_chain
    chain = (c.atomic_chain * share * k.atomic_same_address_s + int_chain * (1 - share) * k.atomic_int_same_address_s)
    return max(chain, atomic_throughput_s(c, k))


def combine(ceil: dict, k: Constants = H200) -> float:
    """The predicted time: the largest ceiling plus ``overlap`` × the next."""
    v = sorted(ceil.values(), reverse=True)
    return v[0] + k.overlap * (v[1] if len(v) > 1 else 0.0)


_WHY = {
    "dram": "the bytes it must move to and from HBM take longest: fewer bytes (no re-reads, smaller types) "
            "or a kernel that does more per byte moves the limit",
    "l2": "traffic between the SMs and the L2 takes longest: many sectors per request (uncoalesced, or the same "
          "data fetched again) — coalesce, or reuse through shared memory",
    "l1": "the L1's data path is busiest: global requests that touch many 128-byte lines each (uncoalesced) — "
          "make neighbouring lanes touch neighbouring addresses",
    "shared": "shared-memory wavefronts take longest (bank conflicts multiply them): pad or swizzle the tile, "
              "or load wider",
    "issue": "the schedulers issue instructions every cycle: fewer instructions per element (cheaper "
             "indices, wider loads, more work per thread) is the way down",
    "fp64": "the double-precision pipe is the limit",
    "atomics": "atomics on one address run one after another: combine in the block first (shared memory or "
               "shuffles), then one atomic per block",
    "latency": "no unit is busy: too few loads in flight to hide the memory latency — more independent loads "
               "per thread (unroll, wider loads) or more warps per SM",
    "launch": "the launch is so small that its fixed cost is most of it: do more per launch",
    "alu": "the SM's ALU pipe is full: {share:.0%} of the instructions are integer, logic, compare or select ones, "
           "and each holds the ALU (16 lanes a scheduler) two cycles — fewer index computations (hoist them out of "
           "loops, cheaper indices), or float work in their place",
    # the binding ceiling when no unit is busy (the limiter is then "latency", as the profile would name it)
    "blocks": "no unit is busy: the GPU starts and retires blocks no faster than about 1.66 G a second, and this "
              "grid has so many small blocks that starting them is the limit — fewer, larger blocks, or a "
              "grid-stride loop that gives each thread several elements",
}


def why_of(limiter: str, ordered: dict, alu_share: Optional[float] = None, k: Constants = H200) -> str:
    """The sentence for ``limiter``; for ``latency`` whose binding ceiling is the block rate, the block rate's; for
    ``issue`` when the ALU pipe fills before the schedulers (``alu_share`` × ``alu_cycles`` > 1), the ALU's."""
    if limiter == "latency" and ordered and next(iter(ordered)) == "blocks":
        return _WHY["blocks"]
    if limiter == "issue" and (alu_share or 0.0) * k.alu_cycles > 1.0:
        return _WHY["alu"].format(share=alu_share)
    return _WHY[limiter]


def stated_error() -> str:
    """The accuracy on held-out kernels, as recorded by the last validation (``data/explain_validation.json``);
    read once per process, as :func:`constants` is."""
    if "error" not in _FITTED:
        try:
            data = json.loads(VALIDATION.read_text())
            v = data["held_out"]
            text = (f"on {v['n']} held-out H200 kernels: median error {v['median_error']:.2f}×, "
                    f"{v['within_2x']:.0%} within 2×, limiter right on {v['limiter_agree']:.0%}")
            # kernels like a learner's own, predicted before the H200 measured them: the latest round that has any
            u = next((data[r] for r in reversed(data.get("rounds", [])) if (data.get(r) or {}).get("n")), {})
            if u.get("n"):
                text += (f"; on {u['n']} kernels it had never seen, predicted before the H200 measured them: "
                         f"{u['median_error']:.2f}×, {u['within_2x']:.0%} within 2×, limiter {u['limiter_agree']:.0%}")
            _FITTED["error"] = text
        except (OSError, ValueError, KeyError):
            _FITTED["error"] = "not yet validated"
    return _FITTED["error"]


L2_BYTES = 50e6  # the H200's L2 (50 MB): the most that can stay resident between launches
BUSY = 0.6  # a unit at this share of its peak is the limiter (Nsight Compute's rule of thumb; explain_check's too)
LAUNCH_BOUND_S = 4e-6  # a launch this short with no busy unit is "launch"


def limiter_of(ceil: dict, seconds: float, k: Constants = H200, sm_share: float = 1.0) -> str:
    """The limiter as the profile names it: the unit with the highest predicted share of its peak, if it reaches
    :data:`BUSY`; ``atomics`` when same-address atomics take that share of the time; else ``latency`` (or
    ``launch`` for a launch under :data:`LAUNCH_BOUND_S`).  The ceilings are at achievable rates; a unit's peak is
    higher where the two differ (DRAM: a copy's 4.25 TB/s of a 4.81 TB/s peak; the schedulers: ``issue_efficiency``).
    ``sm_share`` is the share of the SMs that have work: Nsight Compute averages an SM's units over all 132, so a
    grid of 8 blocks keeps its 8 SMs' schedulers busy and shows 6 % of them (round 4's Monte Carlo: 5 %)."""
    if ceil.get("atomics", 0.0) >= BUSY * seconds:
        return "atomics"
    peak = {"dram": k.dram_bps / k.dram_peak_bps, "issue": k.issue_efficiency * sm_share, "l2": 1.0,
            "l1": sm_share, "shared": sm_share}
    util = {u: ceil[u] * f / seconds for u, f in peak.items() if u in ceil and seconds > 0}
    best = max(util, key=util.get) if util else None
    if best is not None and util[best] >= BUSY:
        return best
    return "launch" if seconds < LAUNCH_BOUND_S else "latency"


def predict(c: Counts, k: Constants | None = None) -> tuple:
    """(seconds, limiter, ceilings in seconds sorted binding first) for counted launch ``c``."""
    k = k or constants()
    ceil = ceilings(c, k)
    ordered = dict(sorted(ceil.items(), key=lambda kv: -kv[1]))
    seconds = combine(ceil, k)
    return seconds, limiter_of(ceil, seconds, k, min(1.0, c.blocks / k.sms)), ordered


def explain(kernel, griddim, blockdim, *args, dynshared=0, measure=None, budget_s=BUDGET_S) -> Explanation:
    """Explain one launch ``kernel[griddim, blockdim](*args)`` on the H200: predicted time, limiter, ceilings.

    Works on every backend: on the CPU the kernel is traced (on copies of the arrays); on a GPU it is also
    measured (launches queued behind a sleeping kernel, launch overhead apart) unless ``measure=False``.
    """
    from course import engine
    from course.trace import compiler

    t0 = time.perf_counter()
    fn = engine.kernel_py_func(kernel)
    host_args = tuple(host_array(a) for a in args)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        argtypes = argtypes_of(host_args)
        # described here, before count() swaps `range` in the kernel's globals for its loop sampler: described
        # in the worker thread while tracing ran, the fingerprint saw the sampler, missed the cached facts and
        # the prediction fell back to the rough estimate (a different answer on the first call of a process)
        fut = pool.submit(compiler.summary, fn, argtypes, True, compiler.describe(fn, argtypes))
    except Exception:
        fut = None
    c, first = count(kernel, griddim, blockdim, host_args, dynshared=dynshared, budget_s=budget_s)
    sass = None
    if fut is not None:
        try:
            sass = fut.result(timeout=max(0.5, 4.5 - (time.perf_counter() - t0)))
        except Exception:  # no compiler, or it took too long: the fallback estimate below says so
            sass = None
    pool.shutdown(wait=False)
    if sass and "error" not in sass:
        add_compiler_facts(c, first, sass, dynshared)
    else:
        c.how.append("instructions: no compiler facts; warp line steps × a fitted average")
    seconds, limiter, ordered = predict(c)
    measured = None
    if measure is not False and course.on_gpu():
        measured = measure_ms(kernel, griddim, blockdim, args, dynshared=dynshared)
    return Explanation(kernel=fn.__name__, ms=seconds * 1e3, limiter=limiter,
                       ceilings={k: v * 1e3 for k, v in ordered.items()},
                       launch_overhead_ms=launch_overhead_ms(), why=why_of(limiter, ordered, c.alu_share), counts=c, sampled=c.sampled,
                       seconds=time.perf_counter() - t0, error=stated_error(),
                       measured_ms=None if measured is None else measured)


def launch_overhead_ms() -> float:
    """numba's host time to issue one launch: measured here on a GPU, else the H200 run's record."""
    if course.on_gpu():
        from numba import cuda

        from course.measure import bench

        if "empty" not in _OVERHEAD:
            @cuda.jit
            def empty(x):
                pass

            _OVERHEAD["empty"] = empty
            _OVERHEAD["x"] = cuda.device_array(1, np.float32)
        k, x = _OVERHEAD["empty"], _OVERHEAD["x"]
        k[1, 32](x)
        return bench.host_ms(lambda: k[1, 32](x), calls=50)
    if "recorded" not in _OVERHEAD:  # the profile run's record, read once per process
        from course.measure import measurements

        found = [float(r["host_issue_ms"]) for r in measurements.latest_run(measurements.load("kernel_profiles"))
                 if r.get("variant") == "empty_kernel" and r.get("host_issue_ms")]
        _OVERHEAD["recorded"] = found[0] if found else float("nan")
    return _OVERHEAD["recorded"]


_OVERHEAD: dict = {}


def measure_ms(kernel, griddim, blockdim, args, *, dynshared=0) -> float:
    """The kernel alone on this GPU, launches queued (:func:`course.measure.bench.time_queued`), in ms."""
    import statistics

    from course.measure import bench

    from numba import cuda

    # NumPy arguments go to the device once, as copies: numba would otherwise copy them in and back around every
    # timed launch (the transfers inside the time, and the learner's arrays overwritten)
    dargs = tuple(cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args)
    k = kernel[griddim, blockdim, 0, dynshared] if dynshared else kernel[griddim, blockdim]
    return statistics.median(bench.time_queued(lambda: k(*dargs), reps=5))
