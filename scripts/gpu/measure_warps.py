"""Chapter 02 on the H200: divergence, its cures, and block sizes that are not a multiple of 32.

    python scripts/gpu/measure_warps.py --out DIR        # on the GPU: writes DIR/warps_*.json
    python scripts/gpu/measure_warps.py --dry-run --out DIR   # on the CPU: tiny sizes, checks only, no timing

Every kernel is checked against its NumPy reference (awkward sizes, fresh random data) before it is
timed.  Timings are CUDA-event medians over ``--reps`` launches after one warm-up launch.  The PTX
and SASS of seed 002's even/odd branch are searched for branches and selects, to see whether the
compiler already removed the branch the seed warns about.

Benchmarks written (one JSON list each): warps_even_odd, warps_divergence, warps_block_size,
warps_resources.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend

import numpy as np  # noqa: E402

from course.measure.bench_harness import Script  # noqa: E402
from course.measure.cuda_tools import sass_instructions  # noqa: E402

H = Script(__doc__, "warps", reps=20)
ARGS, GPU = H.args, H.gpu
PROV = H.prov
record = H.record  # record(benchmark, variant, ms, reps, size, dtype, **extra): course.measure.bench's schema


def time_ms(launch, reps):
    """Median ms of ``launch()`` (CUDA events, 5 launches queued per timing: launch overhead hidden); None on the CPU."""
    return H.time_ms(launch, reps, warmup=2, batch=5)


from course import doctor  # noqa: E402
from course.kernels import warps  # noqa: E402
from numba import cuda  # noqa: E402

FACTS = doctor.device_facts()


def first(value):
    """numba returns a dict {signature: value} for unspecialised kernels; these have one signature."""
    return next(iter(value.values())) if isinstance(value, dict) else value


def code_of(kernel):
    """(PTX, SASS) of a kernel's one compiled signature; SASS is '' where nvdisasm is missing."""
    ptx = first(kernel.inspect_asm()) if GPU else ""
    try:
        sass = first(kernel.inspect_sass()) if GPU else ""
    except Exception as exc:  # nvdisasm not on PATH
        sass = f"(no SASS: {exc})"
    return ptx, sass


def branch_summary(ptx, sass):
    """Counts of what the compiler made of a branch: conditional branches, selects, predicated ops."""
    return {
        "ptx_conditional_branches": len(re.findall(r"@%p\d+\s+bra", ptx)),
        "ptx_selp": len(re.findall(r"\bselp\.", ptx)),
        "sass_branches": len(re.findall(r"\bBRA\b", sass)),
        "sass_predicated_fp": len(re.findall(r"@!?P\d+\s+F(ADD|MUL|FMA)", sass)),
        "sass_fsel": len(re.findall(r"\bFSEL\b", sass)),
    }


def body_lines(sass, limit=60):
    """The kernel's SASS instructions (``/*addr*/ OPCODE operands``: no section bytes, no encodings, no
    names), from the first compare after the bounds check to the store: what the branch became."""
    ins = [f"/*{a:04x}*/ {t}" for a, t in sass_instructions(sass)]
    first_cmp = next((i for i, t in enumerate(ins) if "EXIT" in t), 0)
    last = next((i for i in range(len(ins) - 1, -1, -1) if re.search(r"\bSTG", ins[i])), len(ins) - 1)
    return ins[first_cmp:last + 2][:limit]


# --- the measurements ------------------------------------------------------------------------------------


def check_all(rng):
    """Every version against NumPy on awkward sizes, before anything is timed."""
    sizes = [(1, 32), (33, 32), (300, 96), (1025, 128)] if not GPU else [(1, 32), (33, 32), (1025, 128), (1_000_003, 256)]
    for name in warps.KERNELS:
        for n, tpb in sizes:
            for flags in (warps.FLAG_PATTERNS if name == "flag_branch" else ("random",)):
                out, ref = warps.run(name, n, tpb, iters=16, rng=rng, flags=flags)
                if not np.allclose(out, ref, rtol=1e-4, atol=1e-6):
                    raise SystemExit(f"{name} n={n} block={tpb} flags={flags}: result differs from NumPy; not timing it")
    print(f"checked {len(warps.KERNELS)} versions against NumPy on sizes {sizes}")


def even_odd(rng):
    n = 1 << 26 if GPU else 1 << 10
    tpb = 256
    a = cuda.to_device(rng.standard_normal(n).astype(np.float32))
    b = cuda.to_device(rng.standard_normal(n).astype(np.float32))
    out = cuda.device_array(n, np.float32)
    blocks = -(-n // tpb)
    for name in ("even_odd_branch", "even_odd_select"):
        k = warps.KERNELS[name].kernel
        ms = time_ms(lambda: k[blocks, tpb](a, b, out, n), ARGS.reps)
        ptx, sass = code_of(k)
        extra = branch_summary(ptx, sass) if GPU else {}
        record("warps_even_odd", name, ms, ARGS.reps, n, "float32", threads_per_block=tpb,
               gbps=(12 * n / ms / 1e6) if ms else None, sass_excerpt=body_lines(sass) if GPU else [], **extra)


def divergence(rng):
    n = 1 << 24 if GPU else 1 << 9
    iters = 256 if GPU else 4
    tpb = 256
    x = cuda.to_device(rng.random(n).astype(np.float32))
    out = cuda.device_array(n, np.float32)
    blocks = -(-n // tpb)
    flops_a, flops_b = 2, 3  # one FMA; a multiply and an FMA
    for name in ("lane_branch", "warp_branch"):
        k = warps.KERNELS[name].kernel
        ms = time_ms(lambda: k[blocks, tpb](x, out, iters), ARGS.reps)
        ptx, sass = code_of(k)
        record("warps_divergence", name, ms, ARGS.reps, n, "float32", threads_per_block=tpb, iters=iters,
               paths_per_warp=2 if name == "lane_branch" else 1,
               tflops=(n * iters * (flops_a + flops_b) / 2 / ms / 1e9) if ms else None,
               **(branch_summary(ptx, sass) if GPU else {}))
    for pattern in ("zeros", "ones", "alternate", "random", "sorted"):
        f = np.ones(n, np.int32) if pattern == "ones" else warps.flags_for(pattern, n, rng)
        split = int((warps.warp_paths(f != 0) == 2).sum())
        d_f = cuda.to_device(f)
        k = warps.flag_branch
        ms = time_ms(lambda: k[blocks, tpb](x, d_f, out, iters), ARGS.reps)
        record("warps_divergence", f"flag_branch[{pattern}]", ms, ARGS.reps, n, "float32", threads_per_block=tpb,
               iters=iters, split_warps=split, warps=n // 32, share_b=float(f.mean()),
               tflops=(n * iters * (flops_a * (1 - f.mean()) + flops_b * f.mean()) / ms / 1e9) if ms else None)


def block_sizes(rng):
    n = 1 << 24 if GPU else 1 << 9
    iters = 64 if GPU else 2
    x = cuda.to_device(rng.random(n).astype(np.float32))
    out = cuda.device_array(n, np.float32)
    for tpb in warps.BLOCK_SIZES:
        slots = warps.warp_slots(n, tpb)
        ms = time_ms(lambda: warps.chain[slots["blocks"], tpb](x, out, iters), ARGS.reps)
        record("warps_block_size", f"threads_per_block={tpb}", ms, ARGS.reps, n, "float32", threads_per_block=tpb,
               iters=iters, blocks=slots["blocks"], warps=slots["warps"], busy_fraction=slots["busy_fraction"],
               tflops=(n * iters * 2 / ms / 1e9) if ms else None)


def resources(rng=None):
    if not GPU:
        return
    for name, v in warps.KERNELS.items():
        k = v.kernel
        record("warps_resources", name, None, 0, 0, "float32", regs_per_thread=first(k.get_regs_per_thread()),
               local_bytes_per_thread=first(k.get_local_mem_per_thread()))


def main():
    t0 = time.time()
    rng = np.random.default_rng(2026)
    print("device:", FACTS.get("device", FACTS["backend"]), "| run", PROV["run"], "| dry run" if not GPU else "")
    check_all(rng)
    failed = []
    for step in (even_odd, divergence, block_sizes, resources):
        try:  # one failing part must not lose the others' records
            step(rng)
        except Exception:
            traceback.print_exc()
            failed.append(step.__name__)
    for part in failed:
        H.failed[part] = "raised (traceback above)"
    H.save()
    out = H.out
    RECORDS = {b.benchmark: b.records for b in H.benches.values()}
    print(f"\n{'benchmark':18} {'variant':28} {'ms':>9}  extra")
    for bench, recs in RECORDS.items():
        for r in recs:
            ms = "—" if r["ms"] is None else f"{r['ms']:.4f}"
            extra = {k: r[k] for k in ("gbps", "tflops", "split_warps", "warps", "sass_branches", "ptx_selp",
                                       "regs_per_thread") if r.get(k) is not None}
            print(f"{bench:18} {r['variant']:28} {ms:>9}  {extra}")
    print(f"wrote {sum(map(len, RECORDS.values()))} records to {out} in {time.time() - t0:.1f} s")
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)} (tracebacks above)")


if __name__ == "__main__":
    main()
