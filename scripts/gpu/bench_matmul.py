"""Chapter 09 on the H200: every matmul version, a sweep of tile configurations, and cuBLAS in float32.

    python scripts/gpu/bench_matmul.py --out DIR            # on the GPU: DIR/matmul.json, DIR/matmul_sass/
    python scripts/gpu/bench_matmul.py --dry-run --out DIR  # on the CPU: tiny sizes, checks only, no timing

One process, one ``run`` id.

1. **Correct first.**  Every version (``MATMUL_VERSIONS``) and every sweep candidate
   (``sweep_candidates()``) runs on awkward shapes (17×16·16×33, 1×33·33×1, 130×20·20×140, and on the
   GPU 1025×512·512×260 and 256³) with fresh random data and a NaN-poisoned output, and each element
   is compared with NumPy's float64 product within :func:`course.kernels.matmul.error_bound` (the
   rounding error float32 may make: ``2(K+1)·u·(|a|@|b|)``).  The seed's kernel runs only where it is
   right (N a multiple of TILE); its bug is recorded on N = 1000 with the grid rounded down, where it
   writes nothing outside the arrays but gets elements wrong (the rounded-up grid would write past ``c``:
   ``profile_case_study.py`` runs that under compute-sanitizer).
2. **The big product** (``--size``, default 8192³): float64 reference through CuPy on upcast inputs,
   then cuBLAS float32 (CuPy ``a @ b`` with ``CUPY_TF32=0``), PyTorch float32 with
   ``allow_tf32 = False`` and, for context only, PyTorch with TF32 tensor cores allowed.  Each result
   is checked element by element against the same bound (a worst-case bound: it catches wrong terms,
   not TF32), and its relative error ‖c−ref‖/‖ref‖ says which arithmetic ran: float32 summation of
   K = 8192 random products lands near u·K/√2/√K ≈ 4e-6, TF32 (10 mantissa bits) near 2⁻¹¹ ≈ 5e-4.
   Above 5e-5 a result is flagged ``float32_like: false``, and a course kernel so flagged fails.
   Every course kernel is checked this way on the big size before it is timed.
3. **Timing**: CUDA events, a warm-up, ``--reps`` repetitions in two rounds (slow versions: one round
   of 3); ``tflops`` = 2·M·N·K / time.  Sweep candidates are left out when the script's time budget
   (``--budget`` seconds) is running out, and the record says so.
4. **What the compiler made**: registers, shared and local memory of every kernel; PTX and SASS of the
   registry versions and the best candidate into DIR/matmul_sass/ with instruction counts (FFMA,
   LDS.128, LDG.E.128 …).
5. A table, then the target check: best course kernel ≥ 0.50 of cuBLAS float32 at the big size.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "--dry-run" in sys.argv:
    os.environ["COURSE_BACKEND"] = "cpu"  # before course chooses a backend
# CuPy reads CUPY_TF32 once, at import: "0" keeps cuBLAS on true float32 (no TF32 tensor cores).
os.environ["CUPY_TF32"] = "0"

import numpy as np  # noqa: E402

from course.measure import bench  # noqa: E402
from course.measure.cuda_tools import find_tool  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402


def arguments(ap):
    ap.add_argument("--size", type=int, default=8192, help="M = N = K of the timed product")
    ap.add_argument("--budget", type=float, default=130.0, help="seconds after which sweep candidates are skipped")
    ap.add_argument("--no-sweep", action="store_true", help="registry versions only")


H = Script(__doc__, "matmul", reps=5, arguments=arguments)
ARGS, GPU, OUT, T0, log = H.args, H.gpu, H.out, H.t0, H.log

import course  # noqa: E402
from numba import cuda  # noqa: E402

from course.kernels import matmul as MM  # noqa: E402

RNG = np.random.default_rng()
BENCH = H.bench("matmul")
FAILED: dict = {}  # variant -> message: recorded as matmul's own "failed" records (one per variant)
CHECKS: list = []


VERSIONS = list(MM.MATMUL_VERSIONS.values())
SWEEP = [] if ARGS.no_sweep else MM.sweep_candidates()
if ARGS.dry_run and SWEEP:
    SWEEP = [v for v in SWEEP if v.params["BM"] == 64][:1]  # one candidate: the sweep's code path, cheaply
CATEGORY = {v.name: "course" for v in VERSIONS} | {v.name: "sweep" for v in SWEEP}

if GPU:
    CHECK_SHAPES = [(17, 16, 33), (1, 33, 1), (130, 20, 140), (1025, 512, 260), (256, 256, 256)]
    SEED_N = [256, 512]
    SEED_BUG_N = 1000
else:
    CHECK_SHAPES = [(5, 12, 9)]
    SEED_N = [32]
    SEED_BUG_N = 40


# --- 1. correctness on awkward shapes --------------------------------------------------------------------


def to_dev(x):
    return cuda.to_device(x) if GPU else x


def run_checked(v, m, k, n):
    """Run ``v`` once on fresh m×k·k×n data with a poisoned output; raise if any element is wrong."""
    a, b = MM.random_operands(m, k, n, RNG)
    c = np.full((m, n), np.nan, np.float32)
    d_a, d_b, d_c = to_dev(a), to_dev(b), to_dev(c)
    v.launch(d_a, d_b, d_c)
    got = bench.to_host(d_c)
    wrong = MM.wrong_elements(got, a, b)
    n_wrong = int(wrong.sum())
    if n_wrong:
        first = tuple(int(i) for i in np.argwhere(wrong)[0])
        raise bench.BenchError(f"{v.name} on {m}x{k}·{k}x{n}: {n_wrong} of {got.size} elements wrong "
                               f"(first {first}: {got[first]!r}, expected {MM.reference(a, b)[first]!r}; "
                               f"{int(np.isnan(got).sum())} never written)")
    return MM.relative_error(got, MM.reference(a, b))


def check_version(v):
    shapes = [(s, s, s) for s in SEED_N] if not v.any_shape else CHECK_SHAPES
    for m, k, n in shapes:
        err = run_checked(v, m, k, n)
        CHECKS.append({"variant": v.name, "shape": [m, k, n], "ok": True, "relative_error": err})


def seed_bug():
    """The seed's kernel on N not a multiple of TILE with the grid rounded down (no out-of-bounds access)."""
    n = SEED_BUG_N
    a, b = MM.random_operands(n, n, n, RNG)
    c = np.full((n, n), np.nan, np.float32)
    d_a, d_b, d_c = to_dev(a), to_dev(b), to_dev(c)
    grid = (n // MM.TILE, n // MM.TILE)
    MM.seed_tiled[grid, (MM.TILE, MM.TILE)](d_a.reshape(n * n), d_b.reshape(n * n), d_c.reshape(n * n), n)
    got = bench.to_host(d_c)
    wrong = MM.wrong_elements(got, a, b)
    rec = {"variant": "seed_tiled_bug", "N": n, "TILE": MM.TILE, "grid": list(grid),
           "wrong": int(wrong.sum()), "unwritten": int(np.isnan(got).sum()), "elements": int(got.size),
           "note": "grid rounded down: the last N % TILE rows and columns are never written, and every "
                   "written element misses the last N % TILE terms of its sum"}
    CHECKS.append(rec)
    log(f"seed_tiled at N={n}: {rec['wrong']} of {rec['elements']} elements wrong, {rec['unwritten']} never written")


log(f"backend {course.BACKEND}; checking {len(VERSIONS)} versions and {len(SWEEP)} sweep candidates on {CHECK_SHAPES}")
seed_bug()
SKIPPED: list = []
for v in VERSIONS + SWEEP:
    if v in SWEEP and time.time() - T0 > 0.55 * ARGS.budget:
        SKIPPED.append(v.name)
        continue
    t = time.time()
    try:
        check_version(v)
        log(f"  {v.name:26s} right on every shape ({time.time() - t:.1f} s, compile included)")
    except Exception as e:  # recorded and left out of the timing, never timed wrong
        FAILED[v.name] = f"{type(e).__name__}: {e}"
        CHECKS.append({"variant": v.name, "ok": False, "error": FAILED[v.name][:500]})
        log(f"FAILED {v.name}: {FAILED[v.name][:300]}")
if SKIPPED:
    log(f"time budget: {len(SKIPPED)} sweep candidates not compiled: {SKIPPED}")


# --- 2–3. the big product: references, checks, timing ------------------------------------------------------

cp = H.optional("cupy") if GPU else None
torch = H.optional("torch") if GPU else None
LIB_INFO = {"CUPY_TF32": os.environ.get("CUPY_TF32")}


def kernel_resources(kernel, args):
    """Registers, shared and local memory of the compiled specialisation for ``args``."""
    if not GPU:
        return {}
    try:
        from numba import typeof

        over = kernel.overloads[tuple(typeof(x) for x in args)]
        return {"registers": int(over.regs_per_thread), "shared_bytes": int(over.shared_mem_per_block),
                "local_bytes": int(over.local_mem_per_thread)}
    except Exception as e:
        return {"resources_error": f"{type(e).__name__}: {e}"}


FLOAT32_REL = 5e-5  # between float32's ~4e-6 and TF32's ~5e-4 at K = 8192 (see the docstring)


def big_product(size):
    m = n = k = size
    fl = MM.flops(m, n, k)
    log(f"size {m}x{k}·{k}x{n} float32: random data on the device, float64 reference")
    if not GPU:
        a, b = MM.random_operands(m, k, n, RNG)
        for v in VERSIONS + SWEEP:
            if v.name not in FAILED and v.any_shape and v.name not in SKIPPED:
                BENCH.record(v.name, None, size=(m, n, k), dtype="float32", flops=fl,
                             category=CATEGORY[v.name], idea=v.idea, params=v.params)
        return
    ga = cp.random.standard_normal((m, k), dtype=cp.float32)
    gb = cp.random.standard_normal((k, n), dtype=cp.float32)
    ref = ga.astype(cp.float64) @ gb.astype(cp.float64)
    bound = 2.0 * (k + 1) * 2.0 ** -24 * (cp.abs(ga).astype(cp.float64) @ cp.abs(gb).astype(cp.float64)) + 1e-30
    ref_norm = float(cp.linalg.norm(ref))

    def judge(c, what):
        c64 = c.astype(cp.float64)
        err = cp.abs(c64 - ref)
        wrong = int((~(err <= bound)).sum())  # NaN compares false: counted wrong
        rel = float(cp.linalg.norm(c64 - ref)) / ref_norm
        return {"wrong": wrong, "relative_error": rel, "unwritten": int(cp.isnan(c).sum()),
                "float32_like": bool(rel < FLOAT32_REL)}

    plan = []  # (name, fn, timer, extra)
    # libraries
    gc = cp.empty((m, n), cp.float32)

    def cublas():
        cp.matmul(ga, gb, out=gc)

    cublas()
    res = judge(gc, "cublas")
    LIB_INFO["cublas_check"] = res
    log(f"  cublas (CuPy, CUPY_TF32=0): relative error {res['relative_error']:.2e}, {res['wrong']} outside the float32 bound")
    plan.append(("cublas", cublas, "cupy", {"category": "library", "idea": "CuPy a @ b float32 (cuBLAS), CUPY_TF32=0",
                                           "tf32": False, **res}))
    if torch is not None and torch.cuda.is_available():
        ta = torch.as_tensor(ga, device="cuda")
        tb = torch.as_tensor(gb, device="cuda")
        tc = torch.empty((m, n), device="cuda", dtype=torch.float32)
        LIB_INFO["torch_allow_tf32_default"] = bool(torch.backends.cuda.matmul.allow_tf32)
        LIB_INFO["torch_float32_matmul_precision_default"] = torch.get_float32_matmul_precision()

        def torch_fp32():
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.matmul(ta, tb, out=tc)

        def torch_tf32():
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.matmul(ta, tb, out=tc)

        for name, fn, tf32 in (("torch_fp32", torch_fp32, False), ("torch_tf32", torch_tf32, True)):
            fn()
            torch.cuda.synchronize()
            res = judge(cp.asarray(tc), name)
            log(f"  {name}: relative error {res['relative_error']:.2e}, {res['wrong']} outside the float32 bound")
            plan.append((name, fn, "torch", {"category": "library" if not tf32 else "library-tf32",
                                             "idea": f"torch.matmul float32, allow_tf32={tf32}", "tf32": tf32, **res}))
        torch.backends.cuda.matmul.allow_tf32 = False
    # course kernels, checked on this size before timing
    d_a, d_b = cuda.as_cuda_array(ga), cuda.as_cuda_array(gb)
    for v in VERSIONS + SWEEP:
        if v.name in FAILED or v.name in SKIPPED:
            continue
        if not v.any_shape:
            if size % MM.TILE:
                continue
            args = MM._seed_args(d_a, d_b, cuda.device_array((m, n), np.float32))
            dc = args[2].reshape(m, n)
        else:
            dc = cuda.device_array((m, n), np.float32)
            args = v.args(d_a, d_b, dc)
        launch = v.kernel[v.griddim(m, n), v.threads]
        cc = cp.asarray(dc)
        cc.fill(cp.nan)
        t = time.time()
        launch(*args)
        cuda.synchronize()
        first_ms = (time.time() - t) * 1e3
        res = judge(cc, v.name)
        if res["wrong"] or not res["float32_like"]:
            FAILED[f"{v.name}@{size}"] = (f"{res['wrong']} elements outside the float32 bound ({res['unwritten']} "
                                          f"unwritten), relative error {res['relative_error']:.1e}")
            log(f"FAILED {v.name} at {size}: {FAILED[f'{v.name}@{size}']}")
            continue
        extra = {"category": CATEGORY[v.name], "idea": v.idea, "family": v.family, "params": v.params,
                 "threads_per_block": list(v.threads), "blocks_per_grid": list(v.griddim(m, n)),
                 "first_run_ms": first_ms, **res, **kernel_resources(v.kernel, args)}
        plan.append((v.name, (lambda launch=launch, args=args: launch(*args)), "numba", extra))
    # timing: slow versions once round of 3, the others two rounds of --reps
    for name, fn, timer, extra in plan:
        slow = extra.get("first_run_ms", 0) > 400
        rounds = 1 if slow else 2
        reps = 3 if slow else ARGS.reps
        times, medians = [], []
        for _ in range(rounds):
            t = bench.time_ms(fn, reps=reps, warmup=0 if slow else 2, timer=timer)
            times += t
            medians.append(float(np.median(t)))
        rec = BENCH.record(name, times, size=(m, n, k), dtype="float32", flops=fl, timer=timer,
                           ms_rounds=medians, **extra)
        log(f"  {name:26s} {rec['ms']:9.3f} ms {rec['tflops']:7.2f} TFLOP/s (rounds {', '.join(f'{x:.3f}' for x in medians)})")
    ref = bound = None  # free the float64 reference's device memory (judge is done with it)


big_product(ARGS.size if GPU else 8)


# --- 4. what the compiler made of the kernels -----------------------------------------------------------------


SASS_OPS = ("FFMA", "LDS", "STS", "LDG", "STG", "LDL", "STL", "BAR", "BRA", "IMAD", "IADD3", "LEA", "ISETP", "MOV")


def summarise_sass(text):
    """Instruction count and the mix of memory and arithmetic opcodes (with widths) of a SASS listing."""
    counts, total = {}, 0
    for line in text.splitlines():
        mt = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if not mt:
            continue
        total += 1
        op = mt.group(1)
        base = op.split(".")[0]
        if base in SASS_OPS:
            key = op if base in ("LDG", "STG", "LDS", "STS", "LDL", "STL") else base
            counts[key] = counts.get(key, 0) + 1
    return {"instructions": total, "ops": counts}


def inner_loop(text):
    """The loop that holds the FFMAs: its length and FFMA share (what the multiply-add loop costs per turn)."""
    ins = [l for l in text.splitlines() if re.match(r"\s+/\*[0-9a-f]{4,}\*/", l)]
    addr = [int(re.match(r"\s+/\*([0-9a-f]{4,})\*/", l).group(1), 16) for l in ins]
    ffma = [i for i, l in enumerate(ins) if "FFMA" in l]
    if not ffma:
        return {}
    for j in range(ffma[-1], len(ins)):
        mt = re.search(r"BRA (0x[0-9a-f]+)", ins[j])
        if mt and int(mt.group(1), 16) <= addr[ffma[0]]:
            start = addr.index(int(mt.group(1), 16)) if int(mt.group(1), 16) in addr else ffma[0]
            body = ins[start:j + 1]
            n_ffma = sum("FFMA" in l for l in body)
            return {"loop_instructions": len(body), "loop_ffma": n_ffma, "loop_ffma_share": n_ffma / len(body)}
    return {}


def dump_code():
    if not GPU:
        log("SASS dump skipped (no GPU: numba's CPU backend compiles nothing)")
        return {}
    sass_dir = OUT / "matmul_sass"
    sass_dir.mkdir(exist_ok=True)
    nvdisasm, cuobjdump = find_tool("nvdisasm"), find_tool("cuobjdump")
    if nvdisasm:
        os.environ["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + os.environ.get("PATH", "")
    cc = cuda.get_current_device().compute_capability
    timed = {r["variant"]: r for r in BENCH.records if r.get("tflops") and r.get("category") in ("course", "sweep")}
    best = max(timed.values(), key=lambda r: r["tflops"])["variant"] if timed else None
    summary = {}
    for v in VERSIONS + SWEEP:
        if v.name in SKIPPED:
            continue
        info = {"best": v.name == best}
        for sig, over in v.kernel.overloads.items():
            try:
                info.update(registers=int(over.regs_per_thread), local_bytes=int(over.local_mem_per_thread),
                            shared_bytes=int(over.shared_mem_per_block), signature=str(sig))
                if v in VERSIONS or v.name == best:  # full listings for the registry and the winner
                    lib = over._codelibrary
                    (sass_dir / f"{v.name}.ptx").write_text(lib.get_asm_str(cc=cc))
                    cubin = lib.get_cubin(cc=cc)
                    (sass_dir / f"{v.name}.cubin").write_bytes(cubin)
                    text = None
                    try:
                        text = over.inspect_sass()
                    except Exception as e:
                        info["inspect_sass"] = f"{type(e).__name__}: {e}"[:200]
                        if cuobjdump:
                            r = subprocess.run([cuobjdump, "-sass", str(sass_dir / f"{v.name}.cubin")],
                                               capture_output=True, text=True, timeout=60)
                            text = r.stdout if r.returncode == 0 and "/*0000*/" in r.stdout else None
                    if text:
                        (sass_dir / f"{v.name}.sass").write_text(text)
                        info.update(summarise_sass(text))
                        info.update(inner_loop(text))
            except Exception as e:
                info["error"] = f"{type(e).__name__}: {e}"[:300]
            break
        summary[v.name] = info
    (OUT / "matmul_sass.json").write_text(json.dumps(summary, indent=1) + "\n")
    for rec in BENCH.records:
        if rec["variant"] in summary:
            rec["sass"] = summary[rec["variant"]]
    if best:
        log(f"best course kernel {best}: {summary.get(best)}")
    log(f"code of {len(summary)} kernels in {sass_dir} (nvdisasm: {nvdisasm or 'not found'})")
    return summary


SASS = dump_code()


# --- 5. save, table, target -------------------------------------------------------------------------------------

for name, msg in FAILED.items():
    BENCH.records.append({"benchmark": "matmul", "variant": name.split("@")[0], "failed": msg,
                          "run": bench.run_id(), "ms": None, "dry_run": ARGS.dry_run or None})
for rec in BENCH.records:
    rec.setdefault("libraries", LIB_INFO)
if SKIPPED:
    BENCH.records.append({"benchmark": "matmul", "variant": "sweep_skipped", "skipped": SKIPPED, "ms": None,
                          "run": bench.run_id(), "note": "left out to stay within the time budget",
                          "dry_run": ARGS.dry_run or None})
(OUT / "matmul_checks.json").write_text(json.dumps({"run": bench.run_id(), "checks": CHECKS,
                                                    "libraries": LIB_INFO}, indent=1, default=str) + "\n")
path = BENCH.save(OUT / "matmul.json")
timed = [r for r in BENCH.records if "size" in r]


def _fmt(x, spec):
    width = int(spec.split(".")[0])
    return f"{x:{spec}}" if x is not None else "-".rjust(width)


def table(records):
    by = {r["variant"]: r for r in records}
    ref = by.get("cublas", {}).get("tflops")
    lines = [f"{'variant':28s} {'ms':>9s} {'TFLOP/s':>8s} {'x cuBLAS':>9s} {'regs':>5s} {'rel.err':>9s}"]
    for r in sorted(records, key=lambda r: -(r.get("tflops") or 0)):
        t = r.get("tflops")
        lines.append(f"{r['variant']:28s} {_fmt(r.get('ms'), '9.3f')} {_fmt(t, '8.2f')} "
                     f"{_fmt(t / ref if t and ref else None, '9.2f')} {str(r.get('registers', '-')):>5s} "
                     f"{_fmt(r.get('relative_error'), '9.1e')}")
    return "\n".join(lines)


def target_check():
    by = {r["variant"]: r for r in timed}
    ours = [r for r in timed if r.get("category") in ("course", "sweep") and r.get("tflops")]
    if not ours or not by.get("cublas", {}).get("tflops"):
        return "target: not measured (dry run or cuBLAS missing)"
    best = max(ours, key=lambda r: r["tflops"])
    frac = best["tflops"] / by["cublas"]["tflops"]
    verdict = "MET" if frac >= 0.50 else "MISSED"
    return (f"target {verdict}: best {best['variant']} {best['tflops']:.2f} TFLOP/s = {frac:.2f} of cuBLAS float32 "
            f"({by['cublas']['tflops']:.2f} TFLOP/s) at {ARGS.size}^3; needs >= 0.50")


print()
print(table(timed))
print()
print(target_check())
print(f"{len(timed)} records -> {path}; {len(FAILED)} failures; run {bench.run_id()}; {time.time() - T0:.0f} s")
sys.exit(1 if FAILED else 0)
