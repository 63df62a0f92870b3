"""Chapter 05 on the H200: every transpose version, a sweep of tile shapes, and the library references.

    python scripts/gpu/bench_transpose.py --out DIR            # on the GPU: DIR/transpose.json, DIR/transpose_sass/
    python scripts/gpu/bench_transpose.py --dry-run --out DIR  # on the CPU: tiny sizes, checks only, no timing

One process, one ``run`` id.  First every version (``TRANSPOSE_VERSIONS`` and ``sweep_candidates()``)
is checked against NumPy on awkward shapes (17×16, 1×33, 68×100 and, on the GPU, 130×196, 1025×512,
192×256; int32, float32, and float64 for the registry).  Then, for each size (16384² int32, 16384² float32,
4096² int32), each variant is checked again on that size's fresh random data with a poisoned
output, and timed with CUDA events: ``--reps`` launches after a warm-up, in two rounds over all
variants (the records keep both rounds' medians, so noise can be told from a difference).  Each
timed repetition is ``--batch`` launches back to back between two events, so the host's launch
overhead overlaps the GPU work; each record also says how long the host takes to issue one launch
(``host_ms_per_launch``) and flags ``launch_bound`` when that is close to the GPU time.

References in the same run: ``memcpy`` (CuPy device-to-device copy), ``memcpy_torch``, ``cupy``
(``ascontiguousarray(a.T)``), ``torch`` (``.t().contiguous()``) and numba copy kernels with 4- and
8-byte words (``numba_copy_4B``, ``numba_copy_8B``: what numba reaches without transposing).

Then: PTX, cubin and (when nvdisasm is found) SASS of every version into DIR/transpose_sass/, with
instruction counts and registers in DIR/transpose_sass.json and in each record; Nsight Compute
(sections SpeedOfLight, WarpStateStats, SchedulerStats, Occupancy, LaunchStats, plus DRAM bytes and
instructions) on
every registry version, the best sweep candidate and the numba copies at 8192² int32, in one ncu run
of a child process (DIR/transpose_ncu.csv/.json, and ``ncu`` in the 16384² records; skipped with
--no-ncu or when time runs short).  Last a table and the target check (best version >= 0.80 of
memcpy and >= 3x CuPy at 16384² int32).
"""

from __future__ import annotations

import argparse
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

import numpy as np  # noqa: E402

from course.measure import bench  # noqa: E402
from course.measure.bench import BenchError  # noqa: E402
from course.measure.bench_harness import Script  # noqa: E402
from course.measure.cuda_tools import find_tool, ncu_launches, ncu_number  # noqa: E402


def arguments(ap):
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=5, help="launches between two events per timed repetition")
    ap.add_argument("--no-sweep", action="store_true", help="registry versions only")
    ap.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute profile of the main versions")
    ap.add_argument("--ncu", default=os.environ.get("NCU", "ncu"), help="the Nsight Compute command")
    ap.add_argument("--profile", default="", help=argparse.SUPPRESS)  # internal: the child ncu watches
    ap.add_argument("--profile-size", type=int, default=8192, help=argparse.SUPPRESS)


H = Script(__doc__, "transpose", reps=10, arguments=arguments)
ARGS, GPU, OUT, T0, log = H.args, H.gpu, H.out, H.t0, H.log

import course  # noqa: E402
from numba import cuda  # noqa: E402

from course.kernels import transpose as T  # noqa: E402


# --- what to measure ---------------------------------------------------------------------------------------

VERSIONS = list(T.TRANSPOSE_VERSIONS.values())
SWEEP = [] if ARGS.no_sweep else T.sweep_candidates()
CATEGORY = {v.name: "course" for v in VERSIONS} | {v.name: "sweep" for v in SWEEP}

if GPU:
    SIZES = [((16384, 16384), "int32"), ((16384, 16384), "float32"), ((4096, 4096), "int32")]
    # (68, 100) and (192, 256) take the 8- and 16-byte paths on whole tiles, the others the edge paths
    CHECK_SHAPES = [(17, 16), (1, 33), (130, 196), (1025, 512), (68, 100), (192, 256)]
else:
    if not ARGS.dry_run:
        sys.exit("bench_transpose: no GPU here. Run it on the H200, or use --dry-run to test it on the CPU.")
    SIZES = [((64, 96), "int32"), ((64, 64), "float32")]
    CHECK_SHAPES = [(17, 16), (1, 33), (68, 100)]

RNG = np.random.default_rng()
FAILED: dict = {}
# name: (kernel, word dtype, elements of that dtype per row of the view)
COPY_KERNELS = {"numba_copy_4B": (T.copy_kernel(4), np.int32, 1), "numba_copy_8B": (T.copy_kernel(8), np.int64, 1),
                "numba_copy_16B": (T.copy16_kernel(), np.int32, 4)}


def copy_launch(name, d_a, d_out, n_elements, itemsize):
    """A bound launch of numba copy ``name`` over the bytes of ``d_a`` into ``d_out`` (None if it does not fit)."""
    k, word, per_row = COPY_KERNELS[name]
    if itemsize * n_elements % (np.dtype(word).itemsize * per_row):
        return None, None
    src, dst = d_a.reshape(n_elements).view(word), d_out.reshape(n_elements).view(word)
    if per_row > 1:
        src, dst = src.reshape(src.shape[0] // per_row, per_row), dst.reshape(dst.shape[0] // per_row, per_row)
    blocks = -(-src.shape[0] // (k.threads * k.per_thread))
    launch = k[blocks, k.threads]
    return (lambda: launch(src, dst)), blocks


if ARGS.profile:
    # The child that ncu watches: each named variant launched once on an n×n int32 matrix, in order.
    n = ARGS.profile_size
    a = bench.random_array((n, n), "int32", RNG)
    d_a, d_out = cuda.to_device(a), cuda.device_array((n, n), np.int32)
    table = {v.name: v for v in VERSIONS + SWEEP}
    for name in ARGS.profile.split(","):
        if name in table:
            table[name].launch(d_a, d_out)
        else:
            copy_launch(name, d_a, d_out, a.size, 4)[0]()
        cuda.synchronize()
    sys.exit(0)

BENCH = H.bench("transpose")


# --- 1. correctness on awkward shapes -------------------------------------------------------------------


def check_version(v, shapes, dtypes):
    """Run ``v`` on every shape and dtype with fresh random data and a poisoned output."""
    for shape in shapes:
        for dtype in dtypes:
            a = bench.random_array(shape, dtype, RNG)
            d_a = cuda.to_device(a)
            d_out = cuda.device_array((shape[1], shape[0]), dtype=a.dtype)
            bench.verify(lambda: v.launch(d_a, d_out), d_out, T.reference(a),
                         what=f"transpose {v.name} on {shape[0]}x{shape[1]} {dtype}")


log(f"backend {course.BACKEND}; checking {len(VERSIONS) + len(SWEEP)} versions on {CHECK_SHAPES}")
for v in VERSIONS + SWEEP:
    dtypes = ["int32", "float32"] + (["float64"] if v in VERSIONS and "float64" in v.dtypes else [])
    try:
        check_version(v, CHECK_SHAPES, dtypes)
    except Exception as e:  # recorded and left out of the timing, never timed wrong
        FAILED[v.name] = f"{type(e).__name__}: {e}"
        log(f"FAILED {v.name}: {FAILED[v.name][:300]}")
log(f"checked; {len(FAILED)} failed")


# --- 2. timing ---------------------------------------------------------------------------------------------


def kernel_resources(kernel, args):
    """Registers, shared and local memory per thread/block of the compiled specialisation for ``args``."""
    if not GPU:
        return {}
    try:
        from numba import typeof

        sig = tuple(typeof(x) for x in args)
        over = kernel.overloads[sig]
        return {"registers": int(over.regs_per_thread), "shared_bytes": int(over.shared_mem_per_block),
                "local_bytes": int(over.local_mem_per_thread)}
    except Exception as e:
        return {"resources_error": f"{type(e).__name__}: {e}"}


cp = H.optional("cupy") if GPU else None
torch = H.optional("torch") if GPU else None



def variants_for(a, d_a, d_out, ref, dtype):
    """(name, run_once, output, expected, timer, extra) for every variant at this size."""
    out = []
    for v in VERSIONS + SWEEP:
        if v.name in FAILED:
            continue
        extra = {"category": CATEGORY[v.name], "idea": v.idea, "family": v.family, "params": v.params,
                 "tile": v.tile, "threads_per_block": list(v.threads),
                 "blocks_per_grid": list(v.griddim(a.shape))}
        # Bind the launch once: arguments and configuration are not rebuilt inside the timed loop.
        launch = v.kernel[v.griddim(a.shape), v.threads]
        args = v.args(d_a, d_out)
        out.append((v.name, (lambda launch=launch, args=args: launch(*args)), d_out, ref, "numba", extra, v))
    # numba copies: the same bytes, no transpose (1-D views of the same buffers)
    for name, (k, *_) in COPY_KERNELS.items():
        fn, blocks = copy_launch(name, d_a, d_out, a.size, np.dtype(dtype).itemsize)
        if fn is None:
            continue
        extra = {"category": "numba-copy", "idea": f"copy in {k.word_bytes}-byte words, {k.per_thread} per thread",
                 "threads_per_block": [k.threads], "blocks_per_grid": [blocks]}
        out.append((name, fn, d_out, None, "numba", extra, None))  # expected None: a copy, checked against the input
    return out


def measure_size(shape, dtype):
    log(f"size {shape[0]}x{shape[1]} {dtype}: random data, NumPy reference")
    a = bench.random_array(shape, dtype, RNG)
    ref = T.reference(a)
    nbytes = bench.transpose_bytes(shape, dtype)
    d_a = cuda.to_device(a)
    d_out = cuda.device_array((shape[1], shape[0]), dtype=a.dtype)
    plan = []  # (name, fn, timer, extra)
    # NumPy's answers, also on the GPU so that comparing 2 GiB does not cost a copy back per variant
    ref_dev = cp.asarray(ref) if cp is not None else None
    flat_dev = cp.asarray(a.reshape(a.size)) if cp is not None else None
    for name, fn, out_arr, expected, timer, extra, v in variants_for(a, d_a, d_out, ref, dtype):
        try:
            if expected is None:  # a copy: the output must equal the input, element by element
                bench.verify(fn, out_arr.reshape(a.size), a.reshape(a.size), what=f"{name} {shape} {dtype}",
                             expected_device=flat_dev)
            else:
                bench.verify(fn, out_arr, expected, what=f"{name} {shape} {dtype}", expected_device=ref_dev)
        except Exception as e:
            FAILED[f"{name}@{shape}"] = f"{type(e).__name__}: {e}"
            log(f"FAILED {name} at {shape} {dtype}: {str(e)[:300]}")
            continue
        if v is not None:
            extra = dict(extra, **kernel_resources(v.kernel, v.args(d_a, d_out)))
        plan.append((name, fn, timer, extra))
    plan += library_plan(a, ref, shape, dtype, ref_dev)
    if not plan:
        return
    # two rounds over all variants: a variant's two medians say how much noise there is
    times = {name: [] for name, *_ in plan}
    rounds = {name: [] for name, *_ in plan}
    host = {}
    for _ in range(0 if ARGS.dry_run else 2):
        for name, fn, timer, _extra in plan:
            if f"{name}@{shape}" in FAILED:
                continue
            try:
                t = bench.time_ms(fn, reps=ARGS.reps, warmup=ARGS.warmup, timer=timer, batch=ARGS.batch)
            except Exception as e:  # one variant's trouble must not cost the run
                FAILED[f"{name}@{shape}"] = f"timing: {type(e).__name__}: {e}"
                log(f"FAILED timing {name} at {shape} {dtype}: {str(e)[:300]}")
                continue
            times[name] += t
            rounds[name].append(float(np.median(t)))
    if not ARGS.dry_run:
        for name, fn, timer, _extra in plan:
            if f"{name}@{shape}" not in FAILED:
                host[name] = bench.host_ms(fn, calls=10, timer=timer)
    for name, _fn, timer, extra in plan:
        if f"{name}@{shape}" in FAILED:
            continue
        more = {}
        if name in host:
            # When issuing a launch takes the host longer than the GPU needs to run it, the time is the host's.
            more = {"host_ms_per_launch": host[name],
                    "launch_bound": bool(times[name] and host[name] >= 0.8 * float(np.median(times[name])))}
        rec = BENCH.record(name, times[name] or None, size=shape, dtype=dtype, bytes_moved=nbytes,
                           timer=timer, ms_rounds=rounds[name], batch=ARGS.batch, **more, **extra)
        if rec.get("gbps"):
            log(f"  {name:22s} {rec['ms']:8.3f} ms {rec['gbps']:7.0f} GB/s (rounds {', '.join(f'{x:.3f}' for x in rounds[name])})")
    del d_a, d_out, ref_dev, flat_dev


def library_plan(a, ref, shape, dtype, ref_dev=None):
    """memcpy / cupy / torch references, each checked against NumPy before it is timed."""
    plan = []
    ca = None
    if cp is not None:
        ca = cp.asarray(a)
        cdst = cp.empty_like(ca)
        holder = {}

        def memcpy():
            cdst.data.copy_from_device_async(ca.data, ca.nbytes)

        def cupy_t():
            holder["out"] = cp.ascontiguousarray(ca.T)

        try:
            bench.verify(memcpy, cdst, a, what="memcpy (CuPy device-to-device copy)", expected_device=ca)
            cupy_t()
            _check_equal(holder["out"], ref, "cupy ascontiguousarray(a.T)", ref_dev)  # a fresh array each call
            plan.append(("memcpy", memcpy, "cupy", {"category": "library", "idea": "cudaMemcpyAsync device to device (CuPy)"}))
            plan.append(("cupy", cupy_t, "cupy", {"category": "library", "idea": "cupy.ascontiguousarray(a.T)"}))
        except Exception as e:
            log(f"cupy references failed: {e}")
    if torch is not None and torch.cuda.is_available():
        ta = torch.from_numpy(a).cuda()
        tdst = torch.empty_like(ta)
        holder = {}

        def memcpy_torch():
            tdst.copy_(ta)

        def torch_t():
            holder["out"] = ta.t().contiguous()

        try:
            bench.verify(memcpy_torch, tdst, a, what="memcpy_torch (PyTorch copy_)", expected_device=ca)
            torch_t()
            _check_equal(holder["out"], ref, "torch .t().contiguous()", ref_dev)
            plan.append(("memcpy_torch", memcpy_torch, "torch", {"category": "library", "idea": "tensor.copy_ device to device (PyTorch)"}))
            plan.append(("torch", torch_t, "torch", {"category": "library", "idea": "a.t().contiguous() (PyTorch)"}))
        except Exception as e:
            log(f"torch references failed: {e}")
    return plan


def _check_equal(got, expected, what, expected_device=None):
    """Raise unless ``got`` (a fresh library result) has exactly the bits of NumPy's ``expected``."""
    if expected_device is not None and bench.equal_on_device(got, expected_device):
        return
    got = bench.to_host(got)
    if got.shape != expected.shape or not np.array_equal(got, expected):
        raise BenchError(f"{what}: differs from the NumPy reference")


def guarded(step, *args):
    """Run one step of the benchmark; a crash is logged and recorded, and the run goes on."""
    try:
        return step(*args)
    except Exception as e:
        import traceback

        FAILED[f"{step.__name__}{args}"] = f"{type(e).__name__}: {e}"
        log(f"FAILED {step.__name__}{args}: {type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}")
        return None


for shape, dtype in SIZES:
    guarded(measure_size, shape, dtype)
    BENCH.save(OUT / "transpose.json")  # what is measured so far survives anything later


# --- 3. what the compiler made of each version --------------------------------------------------------------


SASS_OPS = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "BAR", "BRA", "IMAD", "IADD3", "LEA", "ISETP", "SEL", "SHF", "LOP3", "MOV")


def summarise_sass(text):
    """Instruction count and memory/arithmetic instruction mix (by opcode with width) of a SASS listing."""
    counts, total = {}, 0
    for line in text.splitlines():
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if not m:
            continue
        total += 1
        op = m.group(1)
        if op.split(".")[0] in SASS_OPS:
            key = op if op.split(".")[0] in ("LDG", "STG", "LDS", "STS", "LDL", "STL") else op.split(".")[0]
            counts[key] = counts.get(key, 0) + 1
    return {"instructions": total, "ops": counts}


def dump_code():
    if not GPU:
        log("SASS dump skipped (no GPU: numba's CPU backend compiles nothing)")
        return {}
    sass_dir = OUT / "transpose_sass"
    sass_dir.mkdir(exist_ok=True)
    nvdisasm, cuobjdump = find_tool("nvdisasm"), find_tool("cuobjdump")
    if nvdisasm:
        os.environ["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + os.environ.get("PATH", "")
    cc = cuda.get_current_device().compute_capability
    summary = {}
    kernels = [(v.name, v.kernel) for v in VERSIONS + SWEEP] + [(n, k) for n, (k, *_) in COPY_KERNELS.items()]
    for name, kernel in kernels:
        info = {}
        for sig, over in kernel.overloads.items():
            if "int32" not in str(sig[0]) and not name.startswith("numba_copy"):
                continue
            try:
                lib = over._codelibrary
                info.update(registers=int(over.regs_per_thread), local_bytes=int(over.local_mem_per_thread),
                            shared_bytes=int(over.shared_mem_per_block), signature=str(sig))
                (sass_dir / f"{name}.ptx").write_text(lib.get_asm_str(cc=cc))
                cubin = lib.get_cubin(cc=cc)
                # numba-cuda 0.30.4 returns a cuda.core ObjectCode here (its own inspect_sass trips on it)
                data = cubin if isinstance(cubin, (bytes, bytearray)) else getattr(cubin, "code", None)
                if not isinstance(data, (bytes, bytearray)):
                    raise TypeError(f"cubin of type {type(cubin).__name__}, no bytes in it")
                path = sass_dir / f"{name}.cubin"
                path.write_bytes(bytes(data))
                text = None
                for tool, args in ((nvdisasm, [str(path)]), (cuobjdump, ["-sass", str(path)])):
                    if tool and text is None:
                        r = subprocess.run([tool] + args, capture_output=True, text=True, timeout=60)
                        text = r.stdout if r.returncode == 0 and re.search(r"/\*[0-9a-f]{4}\*/", r.stdout) else None
                        if text is None:
                            info[f"{os.path.basename(tool)}_error"] = (r.stderr or r.stdout)[-300:]
                if text:
                    (sass_dir / f"{name}.sass").write_text(text)
                    info.update(summarise_sass(text))
                else:
                    info["sass"] = "no disassembler found (nvdisasm, cuobjdump); the cubin is saved"
            except Exception as e:
                info["error"] = f"{type(e).__name__}: {e}"[:300]
            break
        summary[name] = info
    (OUT / "transpose_sass.json").write_text(json.dumps(summary, indent=1) + "\n")
    for rec in BENCH.records:
        if rec["variant"] in summary:
            rec["sass"] = summary[rec["variant"]]
    log(f"code of {len(summary)} kernels in {sass_dir} (nvdisasm: {nvdisasm or 'not found'})")
    return summary


SASS = guarded(dump_code) or {}

# --- 4. Nsight Compute on the main versions: where each one's time goes --------------------------------------

NCU_METRICS = "dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum,gpu__time_duration.sum"
NCU_SECTIONS = ("SpeedOfLight", "WarpStateStats", "SchedulerStats", "Occupancy", "LaunchStats")
NCU_BUDGET_S = 330  # the GPU lane stops a script at 400 s


def parse_ncu_csv(text):
    """Profiled launches in order: [{'kernel': name, 'metric name [unit]': value}] from ncu's --csv output."""
    return [{"kernel": launch["kernel"], **{f"{name} [{unit}]" if unit else name: ncu_number(value)
                                            for name, unit, value in launch["rows"]}}
            for launch in ncu_launches(text)]


def profile_with_ncu():
    ncu = find_tool(ARGS.ncu)
    left = NCU_BUDGET_S - (time.time() - T0)
    if not GPU or ARGS.no_ncu or not ncu or left < 60:
        log(f"ncu profile skipped ({'no GPU' if not GPU else 'asked' if ARGS.no_ncu else 'ncu not found' if not ncu else 'no time left'})")
        return {}
    big = [r for r in BENCH.records if tuple(r.get("size", ())) == SIZES[0][0] and r["dtype"] == "int32" and r.get("gbps")]
    best = max((r for r in big if r.get("category") == "sweep"), key=lambda r: r["gbps"], default=None)
    names = [v.name for v in VERSIONS if v.name not in FAILED] + ([best["variant"]] if best else []) + list(COPY_KERNELS)
    me = str(pathlib.Path(__file__).resolve())
    cmd = [ncu, "--clock-control", "none", "--csv", "--print-units", "base", "--page", "details",
           "--metrics", NCU_METRICS]
    for sec in NCU_SECTIONS:
        cmd += ["--section", sec]
    cmd += ["--log-file", str(OUT / "transpose_ncu.csv"), sys.executable, me, "--out", str(OUT),
            "--profile", ",".join(names), "--profile-size", str(ARGS.profile_size)]
    log(f"ncu on {len(names)} kernels at {ARGS.profile_size}² int32 (at most {left:.0f} s)")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
        (OUT / "transpose_ncu.log").write_text(res.stdout[-20000:] + "\n" + res.stderr[-20000:])
    except subprocess.TimeoutExpired:
        log("ncu stopped: out of time")
        return {}
    csv_path = OUT / "transpose_ncu.csv"
    launches = parse_ncu_csv(csv_path.read_text()) if csv_path.exists() else []
    if len(launches) != len(names):
        log(f"ncu profiled {len(launches)} launches for {len(names)} kernels; see transpose_ncu.log")
    profile = {name: dict(l, size=[ARGS.profile_size] * 2, dtype="int32") for name, l in zip(names, launches)}
    (OUT / "transpose_ncu.json").write_text(json.dumps(profile, indent=1) + "\n")
    for rec in big:
        if rec["variant"] in profile:
            rec["ncu"] = profile[rec["variant"]]
    return profile


NCU = guarded(profile_with_ncu) or {}

# --- 5. save, table, target ---------------------------------------------------------------------------------

for name, msg in FAILED.items():
    BENCH.records.append({"benchmark": "transpose", "variant": name.split("@")[0], "failed": msg,
                          "run": bench.run_id(), "ms": None, "dry_run": ARGS.dry_run or None})
path = BENCH.save(OUT / "transpose.json")
timed = [r for r in BENCH.records if "size" in r]
print()
print(bench.table(timed))
print()


def target_check():
    big = [r for r in timed if tuple(r["size"]) == SIZES[0][0] and r["dtype"] == SIZES[0][1]]
    by = {r["variant"]: r for r in big}
    ours = [r for r in big if r.get("category") in ("course", "sweep") and r.get("gbps")]
    if not ours or not by.get("memcpy", {}).get("gbps"):
        return "target: not measured (dry run or a reference missing)"
    best = max(ours, key=lambda r: r["gbps"])
    frac = best["gbps"] / by["memcpy"]["gbps"]
    mult = best["gbps"] / by["cupy"]["gbps"] if by.get("cupy", {}).get("gbps") else float("nan")
    verdict = "MET" if frac >= 0.80 and mult >= 3.0 else "MISSED"
    return (f"target {verdict}: best {best['variant']} {best['gbps']:.0f} GB/s = {frac:.2f} of memcpy "
            f"({by['memcpy']['gbps']:.0f}), {mult:.2f}x CuPy; needs >= 0.80 and >= 3x")


print(target_check())
print(f"{len(timed)} records -> {path}; {len(FAILED)} failures; run {bench.run_id()}; {time.time() - T0:.0f} s")
sys.exit(1 if FAILED else 0)
