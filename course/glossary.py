"""The course's glossary: each term in English and Chinese, with a one-line definition and its chapter.

The Chinese terms follow the four source articles where they use one (线程束, 合并访存, 存储体冲突 …).
A chapter that introduces a term puts the Chinese beside the English in its text; ``table(chapter)``
shows the terms of one chapter, ``table()`` all of them.  To add a term, add a ``Term`` below: the
tests check that every term has all four fields and that its chapter is in ``course.chapters``.

Defined for chapter 00 (notebooks/00_start_here.ipynb).
"""

from __future__ import annotations

import html
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    """A glossary entry: English term, Chinese term, one-line definition, and the chapter that introduces it."""

    en: str
    zh: str
    definition: str
    chapter: int


TERMS = (
    # 00 — how the course runs
    Term("backend", "后端", "Where kernels run: a real GPU, or the course's CPU engine when there is none.", 0),
    Term("simulator", "模拟器", "numba-cuda's CPU imitation of a GPU; the course's engine drives it, "
         "one thread after another, deterministically.", 0),
    Term("tracer", "追踪器", "The course tool that records every memory access of a CPU-engine launch and "
         "counts what the hardware would do with it.", 0),
    Term("Nsight Compute (ncu)", "Nsight Compute 性能剖析器", "NVIDIA's kernel profiler, which reads the hardware "
         "counters; the course checks the tracer's counts against it.", 0),
    # 01 — the programming model
    Term("host", "主机", "The CPU and its memory; it allocates, copies and launches.", 1),
    Term("device", "设备", "The GPU and its own memory, separate from the host's.", 1),
    Term("host memory", "主机内存", "Ordinary system RAM, managed by the CPU.", 1),
    Term("device memory / global memory", "设备内存 / 全局内存（显存）",
         "The GPU's DRAM (HBM on an H200): visible to every thread and to the host through copies.", 1),
    Term("kernel", "核函数", "A function launched from the host that runs on the device once per thread.", 1),
    Term("launch configuration", "执行配置",
         "The grid and block sizes given at launch: kernel[blocks_per_grid, threads_per_block].", 1),
    Term("thread", "线程", "The smallest unit of execution; each runs the kernel with its own indices.", 1),
    Term("block (thread block)", "线程块",
         "A group of up to 1024 threads that run on one SM and can share memory and synchronise.", 1),
    Term("grid", "网格", "All the blocks of one launch; blocks are independent and cannot wait for each other.", 1),
    Term("threads_per_block", "每块线程数", "blockDim: how many threads each block has (the course's name).", 1),
    Term("blocks_per_grid", "网格块数", "gridDim: how many blocks the launch has, usually ceil(n / threads_per_block).", 1),
    Term("global index", "全局索引",
         "blockIdx.x * blockDim.x + threadIdx.x (cuda.grid(1)): which element a thread owns.", 1),
    Term("warp", "线程束", "32 threads of a block, consecutive in thread id, that the hardware issues together.", 1),
    Term("lane", "通道（束内线程号）", "A thread's position 0–31 inside its warp.", 1),
    Term("bounds guard", "边界检查", "The `if i < n` that turns away threads whose index is past the data.", 1),
    Term("tail effect", "尾部效应",
         "Idle lanes when a block is not a multiple of 32 or n not a multiple of the block.", 1),
    Term("synchronise (host)", "同步", "cuda.synchronize(): the host waits until launched work has finished.", 1),
    # 02 — warps, SIMT, divergence
    Term("SIMT", "单指令多线程", "Single instruction, multiple threads: a warp issues one instruction for all its "
         "active threads, each with its own registers and branch state.", 2),
    Term("SIMD", "单指令多数据", "Single instruction, multiple data: one instruction on a fixed-width vector, "
         "with no per-lane branching.", 2),
    Term("warp divergence", "线程束分化（Warp 发散）",
         "Lanes of one warp taking different branches, so the warp runs each path in turn.", 2),
    Term("active mask", "活跃掩码", "Which lanes of a warp take part in the current instruction.", 2),
    Term("predication", "谓词执行", "Running both sides of a short branch with the results of one side masked off, "
         "so no divergence occurs.", 2),
    Term("SM (streaming multiprocessor)", "流式多处理器",
         "One of the GPU's cores (132 on an H200): it holds resident blocks and issues their warps.", 2),
    Term("independent thread scheduling", "独立线程调度",
         "Since Volta (cc 7.0) every thread has its own program counter: the lanes of a warp may run apart and "
         "are not guaranteed to move in lock-step.", 2),
    Term("lock-step", "锁步执行", "All lanes of a warp at the same instruction at the same time: what pre-Volta "
         "GPUs did and what code may no longer assume.", 2),
    Term("warp-synchronous code", "线程束同步编程（隐式同步）",
         "Code that trusts a warp's lanes to move together instead of synchronising them: a race under "
         "independent thread scheduling.", 2),
    Term("*_sync mask", "同步掩码", "The first argument of shfl_*_sync, ballot_sync …: the lanes that take part; "
         "every lane it names must call the same intrinsic.", 2),
    Term("syncwarp", "束内同步（__syncwarp）", "cuda.syncwarp(mask): a barrier and memory fence for the named "
         "lanes of one warp, what syncthreads is for a block.", 2),
    Term("PTX", "PTX 中间代码", "NVIDIA's virtual instruction set: numba compiles a kernel to PTX, and the driver "
         "or ptxas translates PTX into the GPU's machine code.", 2),
    Term("SASS", "SASS 机器码", "The GPU's own machine code (what ptxas emits for one architecture, e.g. sm_90); "
         "what the hardware really executes, read with nvdisasm or cuobjdump.", 2),
    # 03 — memory hierarchy and coalescing
    Term("register", "寄存器", "Per-thread storage inside the SM, the fastest there is.", 3),
    Term("local memory", "本地内存", "Per-thread memory that lives in device DRAM: where spilled registers go.", 3),
    Term("constant memory", "常量内存", "Read-only device memory with a cache that broadcasts one address to a warp.", 3),
    Term("L1 cache", "L1 缓存", "The cache inside each SM, in the same storage as shared memory.", 3),
    Term("L2 cache", "L2 缓存", "The cache shared by all SMs, between them and device memory.", 3),
    Term("HBM", "高带宽内存", "High-bandwidth memory: the stacked DRAM an H200 uses as device memory.", 3),
    Term("latency", "延迟", "Time from issuing an access until its data arrives, in cycles or ns.", 3),
    Term("pointer chasing", "指针追逐", "Following j = nxt[j]: each load needs the value of the one before, so the "
         "time per step is one whole latency (how chapter 03 measures latencies).", 3),
    Term("memory-level parallelism", "内存级并行", "Several independent loads in flight at once (in one thread, or "
         "across the lanes and warps of an SM), so that one latency is paid for all of them.", 3),
    Term("bandwidth", "带宽", "Bytes moved per second; effective bandwidth counts only the bytes a kernel needs.", 3),
    Term("coalesced access", "合并访存",
         "A warp's accesses falling into few aligned 32-byte sectors, so one request moves little extra data.", 3),
    Term("sector", "扇区", "The 32-byte unit in which global memory is read and written.", 3),
    Term("memory transaction / request", "内存事务 / 请求",
         "One warp-wide load or store instruction and the sectors it needs.", 3),
    Term("stride", "步长", "The distance between addresses of neighbouring threads; large strides break coalescing.", 3),
    Term("AoS / SoA", "结构体数组 / 数组结构体",
         "Array of structures vs structure of arrays; SoA keeps one field contiguous for coalescing.", 3),
    # 04 — shared memory and banks
    Term("shared memory", "共享内存", "Fast on-chip memory that the threads of one block share, managed by the program.", 4),
    Term("barrier (syncthreads)", "同步屏障",
         "cuda.syncthreads(): no thread of the block passes until all have reached it.", 4),
    Term("bank", "存储体", "One of shared memory's 32 four-byte-wide slices; consecutive words sit in consecutive banks.", 4),
    Term("bank conflict", "存储体冲突",
         "Lanes of one request hitting different words of the same bank, so the request is served in several passes.", 4),
    Term("broadcast", "广播", "Many lanes reading the same word: served at once, not a conflict.", 4),
    Term("wavefront", "波前（访问轮次）", "One pass of a shared-memory request; an N-way conflict needs N.", 4),
    Term("padding", "填充", "Extra columns in a shared tile ([32][33]) so a column's words fall in different banks.", 4),
    Term("swizzling", "地址重排（XOR 重排）", "Permuting the column index (col ^ row) so a column spreads over all banks.", 4),
    Term("data race", "数据竞争", "Two threads touching one location, at least one writing, with no barrier between.", 4),
    # 05 — transpose
    Term("tiling", "分块", "Working on a tile of data staged in shared memory so global accesses stay coalesced.", 5),
    Term("Nsight Compute metric", "性能计数器指标", "A named hardware counter or ratio, unit__counter.rollup "
         "(e.g. l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum: sectors of global loads, summed).", 5),
    Term("stall reason", "线程束停顿原因", "Why a warp could not issue in a cycle (waiting on memory, a barrier, a "
         "busy pipe …); Nsight Compute gives cycles per issued instruction for each.", 5),
    # 06 — occupancy and latency hiding
    Term("occupancy", "占用率", "Active warps per SM divided by the most the SM can hold.", 6),
    Term("latency hiding", "延迟隐藏", "Keeping the SM busy with other ready warps while some wait for memory.", 6),
    Term("register spilling", "寄存器溢出", "Variables that do not fit in registers moved to slow local memory.", 6),
    Term("Little's law", "利特尔法则", "Bytes in flight = bandwidth × latency: the parallelism needed to reach full bandwidth.", 6),
    # 07 — reduction
    Term("reduction", "归约", "Combining many values into one (a sum), in a tree of steps.", 7),
    Term("atomic operation", "原子操作", "A read-modify-write that no other thread can interleave with.", 7),
    Term("warp shuffle", "线程束洗牌", "Lanes of a warp reading each other's registers directly (shfl_down_sync).", 7),
    Term("loop unrolling", "循环展开", "Doing several iterations' work per loop trip, with independent accumulators.", 7),
    Term("vectorized load", "向量化加载", "One instruction loading 8 or 16 bytes per thread (float2/float4).", 7),
    # 08 — host and device
    Term("PCIe", "PCIe 总线", "The link between host and device; far slower than device memory.", 8),
    Term("pageable memory", "可分页内存", "Ordinary host memory; copies from it go through a staging buffer.", 8),
    Term("pinned memory", "锁页内存", "Host memory the OS may not move, so the GPU can copy it by DMA at full speed.", 8),
    Term("zero-copy (mapped) memory", "零拷贝内存", "Pinned host memory that kernels read across the link, with no copy.", 8),
    Term("stream", "流", "A queue of copies and launches that run in order; different streams may overlap.", 8),
    # 09 — tiled matmul
    Term("GEMM", "通用矩阵乘", "General matrix multiply, C = A·B; cuBLAS is NVIDIA's library for it.", 9),
    Term("register tiling", "寄存器分块", "Each thread computing several outputs so values it loads are reused from registers.", 9),
    Term("arithmetic intensity", "算术强度", "Floating-point operations per byte moved from memory.", 9),
    # 10 — measure, don't guess
    Term("memory-bound / compute-bound", "访存受限 / 计算受限",
         "Limited by bytes over bandwidth, or by work over arithmetic throughput.", 10),
    Term("roofline", "屋顶线模型", "The lower of the two floors, bandwidth × intensity and peak compute, as a plot.", 10),
    Term("CUDA event", "CUDA 事件", "A marker recorded in a stream; two of them time GPU work without host noise.", 10),
    Term("compute-sanitizer", "计算检查器", "NVIDIA's checker for out-of-bounds accesses and races on a real GPU.", 10),
    # 11 — several GPUs
    Term("context (per device)", "上下文", "A device's state for one process: its memory and modules; "
         "`with cuda.gpus[i]:` makes device i's current, and arrays and launches inside belong to it.", 11),
    Term("peer access", "对等访问", "One GPU reading and writing another's memory directly (NVLink or PCIe), "
         "once enabled per direction.", 11),
    Term("data parallelism", "数据并行", "Every device runs the same work on its own share of the data; the "
         "partial results are combined afterwards.", 11),
    Term("all-reduce", "全归约", "A collective after which every device holds the sum (or other reduction) of "
         "everyone's buffers; NCCL does it over the fastest links.", 11),
    Term("NCCL", "NCCL 集合通信库", "NVIDIA's library of collectives between GPUs (all-reduce, broadcast ...), "
         "reached here through CuPy.", 11),
)


def terms(chapter: int | None = None) -> tuple[Term, ...]:
    """All terms, or those introduced in one chapter."""
    return tuple(t for t in TERMS if chapter is None or t.chapter == chapter)


def lookup(word: str) -> Term:
    """The entry whose English or Chinese term contains ``word`` (case-insensitive)."""
    key = word.lower()
    hits = [t for t in TERMS if key in t.en.lower() or key in t.zh]
    exact = [t for t in hits if key in (t.en.lower(), t.zh)]
    if exact or len(hits) == 1:
        return (exact or hits)[0]
    if not hits:
        raise KeyError(f"{word!r} is not in the glossary; course.glossary.table() lists every term.")
    raise KeyError(f"{word!r} matches several terms: {', '.join(t.en for t in hits)}. Be more specific.")


class GlossaryTable:
    """A set of terms as a table: HTML in a notebook, plain text elsewhere."""

    def __init__(self, entries):
        self.entries = tuple(entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return "\n".join(f"{t.chapter:02d}  {t.en} / {t.zh}: {t.definition}" for t in self.entries)

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr>" + "".join(
                f"<td style='text-align:left'>{html.escape(str(c))}</td>"
                for c in (t.en, t.zh, t.definition, f"{t.chapter:02d}")
            ) + "</tr>"
            for t in self.entries
        )
        head = "".join(f"<th style='text-align:left'>{h}</th>" for h in ("English", "中文", "meaning", "chapter"))
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def table(chapter: int | None = None) -> GlossaryTable:
    """The glossary (or one chapter's terms) as a table to show in a notebook cell."""
    return GlossaryTable(terms(chapter))
