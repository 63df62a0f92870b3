"""What the compiler made of issue 14's kernels: SASS for sm_90, registers, spills, instruction counts.

    python scripts/gpu/probe_sass.py --out DIR     # needs no GPU: numba -> NVVM -> PTX -> ptxas -> nvdisasm

Each kernel is compiled exactly as numba-cuda compiles it for the H200 (compute capability 9.0), in a
child process in hardware mode (course.trace.compiler's prelude), then ``ptxas -v`` (optionally with
``-maxrregcount``) and ``nvdisasm``.  Written: ``DIR/sass/<name>.sass`` (instructions only: no section
bytes, no addresses of the machine) and ``DIR/probe_sass.json`` with, per kernel, registers, spill
bytes, stack frame, instruction counts by opcode, and for the kernels whose loop is the point, the
instructions of the innermost loop (the body between a backward ``BRA`` and its target).

A kernel that does not compile is an ``error`` entry in probe_sass.json and the exit status is 1.
Nothing here is a measurement of time: this is the evidence of what each timed loop executes.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ["COURSE_BACKEND"] = "cpu"  # this process compiles nothing itself; the child runs in hardware mode

from course.trace import compiler  # noqa: E402
from course.measure.bench_harness import Script, scrub  # noqa: E402
from course.measure.cuda_tools import sass_instructions  # noqa: E402

# (name, module, attribute or factory expression, numba signature, maxrregcount or None)
JOBS = [
    ("ffma_chain_64", "course.kernels.probes", "ffma_chain_64", "void(float32[::1], float32[::1], int32)", None),
    ("ffma_chain_128", "course.kernels.probes", "ffma_chain_128", "void(float32[::1], float32[::1], int32)", None),
    ("empty_loop", "course.kernels.probes", "empty_loop", "void(float32[::1], float32[::1], int32)", None),
    ("smem_dependent", "course.kernels.probes", "smem_dependent", "void(int32[::1], int32[::1], int64, int64)", None),
    ("smem_independent", "course.kernels.probes", "smem_independent", "void(int32[::1], int32[::1], int64, int64)", None),
    ("local_table", "course.kernels.probes", "local_table", "void(float32[::1], int32[::1], float32[::1], int64)", None),
    ("local_dynamic_old", "course.kernels.memory", "local_dynamic", "void(float32[::1], int32[::1], float32[::1])", None),
    ("many_registers", "course.kernels.probes", "many_registers", "void(float32[::1], float32[::1], int64)", None),
    ("warp_lock", "course.kernels.warps", "warp_lock", "void(int32[::1], int32[::1], int32[::1], int32[::1])", None),
    ("last_warp_unsynced", "course.kernels.warps", "last_warp_unsynced", "void(float32[::1], float32[::1])", None),
    ("last_warp_syncwarp", "course.kernels.warps", "last_warp_syncwarp", "void(float32[::1], float32[::1])", None),
    ("atomic_floor", "course.kernels.probes", "atomic_floor", "void(float32[::1])", None),
    ("even_odd_branch", "course.kernels.warps", "even_odd_branch",
     "void(float32[::1], float32[::1], float32[::1], int64)", None),
    ("even_odd_select", "course.kernels.warps", "even_odd_select",
     "void(float32[::1], float32[::1], float32[::1], int64)", None),
    ("sum_one_in_flight", "course.kernels.probes", "sum_one_in_flight", "void(float32[::1], float32[::1], float32)", None),
    ("grid_stride_w1_u1", "course.kernels.reduction", "grid_stride_kernel(1, 1)", "void(float32[::1], float32[::1])", None),
    ("grid_stride_w1_u4", "course.kernels.reduction", "grid_stride_kernel(1, 4)", "void(float32[::1], float32[::1])", None),
    ("grid_stride_w4_u1", "course.kernels.reduction", "grid_stride_kernel(4, 1)", "void(float32[::1], float32[::1])", None),
    ("grid_stride_w4_u4", "course.kernels.reduction", "grid_stride_kernel(4, 4)", "void(float32[::1], float32[::1])", None),
    ("grid_stride_w4_u8", "course.kernels.reduction", "grid_stride_kernel(4, 8)", "void(float32[::1], float32[::1])", None),
    # issue 24 item 5: the kernels of three pending claims (the modulo, the cheap stencils, local memory in DRAM)
    ("sync_loop", "course.kernels.shared_memory", "sync_loop", "void(float32[::1], int64, int64)", None),
    ("mod_loop", "course.kernels.shared_memory", "mod_loop", "void(float32[::1], int64, int64)", None),
    ("counter_loop", "course.kernels.shared_memory", "counter_loop", "void(float32[::1], int64, int64)", None),
    ("stencil_global_cheap", "course.kernels.shared_memory", "stencil_global_cheap",
     "void(float32[::1], float32[::1])", None),
    ("stencil_shared_cheap", "course.kernels.shared_memory", "stencil_shared_cheap",
     "void(float32[::1], float32[::1])", None),
    ("chase_local_big", "course.kernels.memory", "chase_local_big_kernel()",
     "void(uint32[::1], int64, int64, int64[::1])", None),
    ("regtile", "course.kernels.matmul", "MATMUL_VERSIONS['regtile'].kernel",
     "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])", None),
    ("regtile_cap128", "course.kernels.matmul", "MATMUL_VERSIONS['regtile'].kernel",
     "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])", 128),
    ("regtile_cap96", "course.kernels.matmul", "MATMUL_VERSIONS['regtile'].kernel",
     "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])", 96),
]

CHILD = compiler.HARDWARE_MODE_PRELUDE + r'''
import importlib, json
from numba import cuda
import numba.cuda.dispatcher as _disp
# device functions called from a kernel compile for "the current device": say it is the H200 (cc 9.0)
_disp.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
jobs = json.loads(sys.argv[2])
out = {}
for name, module, expr, sig, cap in jobs:
    try:
        mod = importlib.import_module(module)
        k = eval(expr, vars(mod))
        fn = getattr(k, "py_func", k)
        try:
            ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0), lineinfo=True)
        except Exception:  # NVVM refuses line info on some loops with a break: compile without it
            ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
        out[name] = {"ptx": ptx}
    except Exception as e:
        out[name] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
sys.stdout.write("\n@@PTX@@" + json.dumps(out))
'''

MAX_LINES = 4000  # a listing longer than this is cut (the counts in probe_sass.json cover all of it)
PTXAS_V = re.compile(r"Used (\d+) registers")
instructions = sass_instructions


def opcode(text: str) -> str:
    t = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
    return t.split()[0] if t.split() else ""


def loops(ins: list) -> list:
    """Backward branches: ``(target address, branch address)``, innermost (shortest) first."""
    found = []
    for addr, text in ins:
        if opcode(text).startswith("BRA"):
            m = re.search(r"0x([0-9a-f]+)", text)
            if m and int(m.group(1), 16) < addr:  # (a branch to itself is the end-of-kernel trap)
                found.append((int(m.group(1), 16), addr))
    return sorted(found, key=lambda t: t[1] - t[0])


def summarise(ins: list) -> dict:
    counts: dict = {}
    for _, text in ins:
        op = opcode(text)
        counts[op] = counts.get(op, 0) + 1
    res = {"instructions": len(ins), "opcodes": dict(sorted(counts.items(), key=lambda kv: -kv[1]))}
    lp = loops(ins)
    if lp:
        lo, hi = lp[0]
        body = [t for a, t in ins if lo <= a <= hi]
        bc: dict = {}
        for t in body:
            bc[opcode(t)] = bc.get(opcode(t), 0) + 1
        res["innermost_loop"] = {"instructions": len(body), "opcodes": bc, "body": body if len(body) <= 400 else body[:400]}
        res["loops"] = len(lp)
        res["all_loops"] = []
        for lo, hi in lp[:6]:
            oc: dict = {}
            for a, t in ins:
                if lo <= a <= hi:
                    oc[opcode(t)] = oc.get(opcode(t), 0) + 1
            res["all_loops"].append({"from": f"0x{lo:04x}", "to": f"0x{hi:04x}", "instructions": sum(oc.values()),
                                     "opcodes": oc})
    return res


def ffma_chain_check(body: list) -> dict:
    """Whether each FFMA in a loop body reads the register the previous FFMA wrote (a dependent chain)."""
    ffma = [t for t in body if opcode(t) == "FFMA"]
    dep = 0
    for prev, cur in zip(ffma, ffma[1:]):
        dst = re.findall(r"R\d+", prev)[0]
        srcs = re.findall(r"R\d+", cur)[1:]
        dep += dst in srcs
    return {"ffma": len(ffma), "each_reads_previous": dep, "pairs": max(len(ffma) - 1, 0)}


def arguments(ap):
    ap.add_argument("--only", default="", help="comma-separated kernel names (probe_sass.json keeps the others)")


def main(argv=None):
    H = Script(__doc__, "probe_sass", gpu="none", reps=None, arguments=arguments, argv=argv)
    args, out = H.args, H.out
    tools = compiler.toolchain()
    if tools is None:
        sys.exit("probe_sass: ptxas and nvdisasm not found (make toolkit installs them from pip wheels).")
    (out / "sass").mkdir(exist_ok=True)
    jobs = [j for j in JOBS if not args.only or j[0] in args.only.split(",")]
    r = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), json.dumps(jobs)], capture_output=True, text=True,
                       timeout=900)
    if "@@PTX@@" not in r.stdout:
        sys.exit("probe_sass: the compile child failed:\n" + scrub(r.stderr[-3000:]))
    ptxs = json.loads(r.stdout.split("@@PTX@@", 1)[1])
    old = out / "probe_sass.json"
    summary = json.loads(old.read_text()) if old.exists() and args.only else {}  # --only updates the named kernels
    summary["toolchain"] = {"ptxas": tools["version"], "arch": "sm_90"}
    for name, module, expr, sig, cap in jobs:
        got = ptxs[name]
        if "error" in got:
            summary[name] = {"error": got["error"]}
            H.log(f"{name}: {got['error']}")
            continue
        with tempfile.TemporaryDirectory() as d:
            p = pathlib.Path(d)
            (p / "k.ptx").write_text(got["ptx"])
            cmd = [tools["ptxas"], "-arch=sm_90", "-O3", "-v", str(p / "k.ptx"), "-o", str(p / "k.cubin")]
            if cap:
                cmd.insert(3, f"-maxrregcount={cap}")
            pr = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if pr.returncode:
                summary[name] = {"error": scrub(pr.stderr[-500:])}
                H.log(f"{name}: ptxas failed: {summary[name]['error']}")
                continue
            dis = subprocess.run([tools["nvdisasm"], "-c", str(p / "k.cubin")], capture_output=True, text=True,
                                 timeout=600).stdout
        info = pr.stderr + pr.stdout
        ins = instructions(dis)
        res = {"kernel": f"{module}.{expr}", "signature": sig, "maxrregcount": cap}
        m = PTXAS_V.search(info)
        res["registers"] = int(m.group(1)) if m else None
        for key, rx in (("spill_stores_bytes", r"(\d+) bytes spill stores"), ("spill_loads_bytes", r"(\d+) bytes spill loads"),
                        ("stack_frame_bytes", r"(\d+) bytes stack frame"), ("shared_bytes", r"(\d+) bytes smem")):
            mm = re.search(rx, info)
            res[key] = int(mm.group(1)) if mm else 0
        res["ptxas_v"] = [scrub(ln.strip()) for ln in info.splitlines() if "Used" in ln or "spill" in ln or "stack" in ln]
        res.update(summarise(ins))
        if name.startswith("ffma_chain") and "innermost_loop" in res:
            res["chain"] = ffma_chain_check(res["innermost_loop"]["body"])
        shown = ins[:MAX_LINES]
        H.write_text(
            f"sass/{name}.sass",
            f"// {module}.{expr} {sig}, ptxas {tools['version']} -arch=sm_90 -O3"
            + (f" -maxrregcount={cap}" if cap else "") + "\n"
            + "\n".join(f"/*{a:04x}*/ {t}" for a, t in shown) + "\n"
            + (f"// … {len(ins) - MAX_LINES} more instructions (counts in probe_sass.json)\n" if len(ins) > MAX_LINES else ""))
        summary[name] = res
        lp = res.get("innermost_loop", {})
        H.log(f"{name:22s} regs {res['registers']!s:>4} spill {res['spill_stores_bytes']:>5}B frame "
              f"{res['stack_frame_bytes']:>5}B  {res['instructions']:5d} instr; inner loop {lp.get('instructions')} "
              f"{ {k: v for k, v in lp.get('opcodes', {}).items() if k.split('.')[0] in ('FFMA', 'LDG', 'LDS', 'LDL', 'STL', 'BRA', 'ISETP', 'FSEL', 'RED', 'ATOM', 'ATOMG')} }"
              + (f" chain {res['chain']}" if "chain" in res else ""))
    for v in summary.values():
        if isinstance(v, dict):
            v.pop("body", None)
    H.write_text("probe_sass.json", json.dumps(summary, indent=1) + "\n")
    failed = [j[0] for j in jobs if "error" in summary[j[0]]]
    H.log(f"{len(jobs) - len(failed)} of {len(jobs)} kernels -> {out.name}/probe_sass.json, sass/"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
