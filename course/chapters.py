"""The chapters of the course, in order, with their notebook files: the one place that lists them.

Each chapter names the sections of the four source articles (``shared/seeds/``) it takes up, so that
chapter 00 can say where each part of the articles is taught.  ``exists`` looks at ``notebooks/``.

Defined for chapter 00 (notebooks/00_start_here.ipynb).
"""

from __future__ import annotations

import html
import pathlib
from dataclasses import dataclass

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
# A chapter, its exercises and its solutions have names of their own, so that JupyterLab's tabs (titled by
# file name) say which is open: 07_reduction.ipynb, 07_reduction_exercises.ipynb, 07_reduction_solutions.ipynb.
EXERCISES_SUFFIX = "_exercises.ipynb"
SOLUTIONS_SUFFIX = "_solutions.ipynb"

# The four source articles, by the number their file name starts with.
SEEDS = {
    "000": "What is really hard about CUDA: from 'it runs' to 'it runs fast' (写CUDA到底难在哪)",
    "001": "CUDA core principles and challenges, from programming model to bottlenecks (深入CUDA核心原理与应用挑战)",
    "002": "Chapter 1: the CUDA programming model, from grid to warp (CUDA编程模型回顾)",
    "003": "CUDA basics for latency analysis (CUDA基础回顾：延迟分析)",
}


@dataclass(frozen=True)
class Chapter:
    """One chapter: its number, notebook file, English and Chinese titles, and the seed sections it teaches."""

    number: int
    slug: str
    title: str
    title_zh: str
    seeds: str

    @property
    def file(self) -> str:
        return f"{self.number:02d}_{self.slug}.ipynb"

    @property
    def exercises_file(self) -> str:
        """Its graded exercises' notebook in exercises/ (generated from :attr:`solutions_file` in solutions/)."""
        return f"{self.number:02d}_{self.slug}{EXERCISES_SUFFIX}"

    @property
    def solutions_file(self) -> str:
        """Its exercises' solution notebook in solutions/ (the instructor's; the learner's lab does not show it)."""
        return f"{self.number:02d}_{self.slug}{SOLUTIONS_SUFFIX}"

    @property
    def path(self) -> pathlib.Path:
        return NOTEBOOKS / self.file

    @property
    def exists(self) -> bool:
        """True when the chapter's notebook is in notebooks/ (chapters are written one by one)."""
        return self.path.is_file()


CHAPTERS = (
    Chapter(0, "start_here", "Start here: how the course works", "从这里开始：课程怎么用", "all four, summarised"),
    Chapter(1, "programming_model", "The programming model: host, device, grid, block, thread",
            "编程模型：主机、设备、网格、线程块、线程", "001 §1–2.1, 002 §1.1, 003 §2 and §4 (the flow)"),
    Chapter(2, "warps_divergence", "Warps, SIMT and divergence", "线程束、SIMT 与分支分化",
            "002 §1.4, 003 §1, 000 §4.4, 001 §2.1"),
    Chapter(3, "memory_coalescing", "The memory hierarchy and coalescing", "存储层次与合并访存",
            "002 §1.2 and §1.5 pitfall 3, 003 §3 and myth 2, 001 §1.1 and §2.2, 000 §1 and §4.1"),
    Chapter(4, "shared_memory_banks", "Shared memory and its 32 banks", "共享内存与 32 个存储体",
            "000 §2.3–3.2 and §4.2, 002 §1.3 and §1.5 pitfall 2, 003 myth 3"),
    Chapter(5, "transpose", "Matrix transpose, from naive to the memory limit", "矩阵转置：从朴素到逼近带宽上限",
            "000 §2–3, 001 §3.1"),
    Chapter(6, "occupancy_latency", "Occupancy and latency hiding", "占用率与延迟隐藏",
            "003 §4–5, 002 §1.5 pitfall 1, 000 §4.3"),
    Chapter(7, "reduction", "The reduction case study", "归约案例", "003 §5 case study, 001 §3.2, 000 §4.5"),
    Chapter(8, "host_device_streams", "Host ↔ device transfers and streams", "主机与设备间传输与流",
            "001 §1 and §4.1, 000 §4.6"),
    Chapter(9, "tiled_matmul", "Tiled matrix multiply", "分块矩阵乘法", "002 §1.3"),
    Chapter(10, "measure_dont_guess", "Measure, don't guess", "测量驱动，而非直觉驱动",
            "000 §4.7 and §5, 001 §4.3 and §6, 003 §4"),
    Chapter(11, "multi_gpu", "Several GPUs", "多 GPU", "001 §4.2"),
)

# Parts of the articles the course mentions but does not teach, and why (shown in chapter 00).
NOT_TAUGHT = {
    "001 §4.2 (training)": "gradient accumulation and loss scaling: about training frameworks, not about how a kernel runs "
                           "(chapter 11 teaches the devices, copies and all-reduce that data parallelism rests on)",
    "001 §5": "Hopper/Blackwell features, HIP, SYCL: an outlook; Tensor Cores come up only as what cuBLAS may use (chapter 09)",
}


def chapter(number: int) -> Chapter:
    """The chapter with this number."""
    for ch in CHAPTERS:
        if ch.number == number:
            return ch
    raise KeyError(f"There is no chapter {number}; the course has chapters 0 to {CHAPTERS[-1].number}.")


class ChapterMap:
    """The chapter list as a table: HTML in a notebook, plain text elsewhere."""

    def __init__(self, chapters=CHAPTERS):
        self.chapters = tuple(chapters)

    def _rows(self):
        for ch in self.chapters:
            yield (f"{ch.number:02d}", ch.title, ch.title_zh, ch.seeds, ch.file, "yes" if ch.exists else "not yet")

    def __repr__(self) -> str:
        head = ("no", "chapter", "章节", "seed sections", "notebook", "written")
        rows = [head, *self._rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("", "chapter", "章节", "seed sections", "notebook", "written"))
        body = []
        for no, title, zh, seeds, file, written in self._rows():
            name = f'<a href="{html.escape(file)}">{html.escape(file)}</a>' if written == "yes" else html.escape(file)
            cells = (no, html.escape(title), html.escape(zh), html.escape(seeds), name, written)
            body.append("<tr>" + "".join(f"<td style='text-align:left'>{c}</td>" for c in cells) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def table() -> ChapterMap:
    """The chapter map, to show in a notebook cell."""
    return ChapterMap()
