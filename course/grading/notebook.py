"""Running a submitted notebook: reading it whatever its shape (:func:`load_notebook`), the kernel's
environment (:func:`kernel_env`), and one run in a fresh Jupyter kernel, in :mod:`course.grading.sandbox`'s box
when given one (:func:`run_notebook`), for :mod:`course.grading.grade`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import pathlib
import sys
import time
from dataclasses import dataclass, field

#: The folder of the course package the grader runs from (its sandbox.py starts each kernel).
PACKAGE = pathlib.Path(__file__).resolve().parents[1]


@dataclass
class RunLog:
    """What happened when the notebook ran: per-cell errors, interrupted cells, output volume, time."""

    errors: list = field(default_factory=list)  # (cell, ename, evalue)
    interrupted: list = field(default_factory=list)  # cells stopped by the per-cell limit
    killed: str = ""  # why the whole run stopped early
    output_bytes: int = 0
    seconds: float = 0.0

    def problems(self) -> list:
        out = []
        if self.killed:
            out.append(self.killed)
        out += [f"cell {c} ran past the per-cell time limit and was interrupted" for c in self.interrupted]
        out += [f"cell {c} raised {e}: {v}"[:200] for c, e, v in self.errors
                if not (e == "KeyboardInterrupt" and c in self.interrupted)]
        if self.output_bytes > 10_000_000:
            out.append(f"the notebook printed {self.output_bytes / 1e6:.0f} MB of output (none of it was kept)")
        return out


#: Kernel start-up failures that say nothing about the notebook (a busy machine: ports, slow imports); the
#: run is tried once more before a submission is charged with it.
_STARTUP_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")


def run_notebook(nb, workdir: str, env: dict, cell_timeout: float, total_timeout: float, box=None) -> RunLog:
    """Execute ``nb`` (a copy) in a fresh kernel inside ``workdir``; never raises for the notebook's faults.

    A kernel that dies while starting, before any cell ran, is started once more: no cell of the learner's
    has run, so the failure is the machine's (a busy box, a slow import), not the learner's. A second failure
    is reported with the first. ``box``: the sandbox settings (see :func:`_box_config`), None to run the
    kernel as a plain child process.
    """
    extra = {"box": box} if box else {}
    log = _run_notebook_once(copy.deepcopy(nb), workdir, env, cell_timeout, total_timeout, **extra)
    if log.killed and any(m in log.killed for m in _STARTUP_FAILURES) and not log.errors and not log.output_bytes:
        first = log.killed
        log = _run_notebook_once(copy.deepcopy(nb), workdir, env, cell_timeout, total_timeout, **extra)
        if log.killed:
            log.killed += f" (a second start was tried; the first: {first[:120]})"
    return log


def _boxed_kernel_manager(workdir: str, box: dict):
    """A kernel manager whose kernel starts through :mod:`course.grading.sandbox` and talks over Unix sockets in
    ``workdir`` (a kernel with no network can still be reached), interrupted by message."""
    from jupyter_client.manager import AsyncKernelManager

    prefix = [sys.executable, "-I", "-B", str(PACKAGE / "grading" / "sandbox.py"), json.dumps(box), "--"]

    class BoxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return prefix + super().format_kernel_cmd(extra_arguments)

    for d in ("ipc", "runtime"):
        os.makedirs(os.path.join(workdir, d), exist_ok=True)
    km = BoxedKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(workdir, "ipc", "k"),
                            connection_file=os.path.join(workdir, "runtime", "kernel.json"))
    km.kernel_spec.interrupt_mode = "message"  # a signal to the wrapper would not reach a kernel in its own box
    return km


def _run_notebook_once(nb, workdir: str, env: dict, cell_timeout: float, total_timeout: float, box=None) -> RunLog:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    log = RunLog()

    class Client(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            log.output_bytes += sum(len(v) for v in _strings(content))
            if msg.get("msg_type") == "error":
                log.errors.append((cell_index, str(content.get("ename", "?"))[:100], str(content.get("evalue", ""))[:300]))
            return None  # keep nothing: outputs are not evidence, and may be huge

        async def _async_handle_timeout(self, timeout, cell=None):
            if cell is not None:
                log.interrupted.append(self.nb.cells.index(cell))
            return await super()._async_handle_timeout(timeout, cell)

    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("tags", None)  # raises-exception / skip-execution tags are not the learner's to set
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    km = _boxed_kernel_manager(workdir, box) if box else None
    client = Client(nb, km=km, timeout=cell_timeout, interrupt_on_timeout=True, allow_errors=True,
                    kernel_name="python3", startup_timeout=60, resources={"metadata": {"path": workdir}})

    async def go():
        try:
            await asyncio.wait_for(client.async_execute(env=env), total_timeout)
        except (asyncio.TimeoutError, DeadKernelError) as err:
            # nbclient reports the kill that wait_for causes as a dead kernel: tell the two apart by the clock
            over = isinstance(err, asyncio.TimeoutError) or time.monotonic() - start >= 0.95 * total_timeout
            log.killed = (f"the notebook ran past its {total_timeout:g} s limit and its kernel was stopped"
                          if over else "the notebook's kernel died (it crashed or was killed)")
        except CellTimeoutError:
            log.killed = "a cell could not be interrupted after its time limit; the kernel was stopped"
        finally:
            km = getattr(client, "km", None)
            if km is not None:
                try:
                    if await _maybe_await(km.is_alive()):
                        await _maybe_await(km.shutdown_kernel(now=True))
                except Exception:
                    pass

    start = time.monotonic()
    try:
        asyncio.run(go())
    except Exception as err:  # the kernel could not start, or nbclient failed in a way we did not foresee
        log.killed = f"the notebook could not be run ({type(err).__name__}: {err})"[:300]
    log.seconds = time.monotonic() - start
    return log


async def _maybe_await(value):
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def load_notebook(data: bytes):
    """(notebook, problems) from a file's bytes, whatever they hold; the notebook is None when unreadable.

    The notebook is rebuilt from scratch: each cell keeps its index, code cells their source as text
    (a source that is not text is treated as empty and reported), and only ``metadata.course.exercises``
    (a list of names) is kept. Nothing of the file's other structure reaches the grader or the kernel."""
    import nbformat

    problems = []
    try:
        text = data.decode("utf-8-sig")
        raw = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        why = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        return None, [f"not a readable notebook ({why})"]
    if isinstance(raw, dict) and "worksheets" in raw:  # nbformat 3: let nbformat convert it
        try:
            raw = json.loads(nbformat.writes(nbformat.reads(text, as_version=4)))
        except Exception as err:
            return None, [f"not a readable notebook (an old format nbformat could not convert: {type(err).__name__})"]
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return None, ["not a readable notebook (it has no list of cells)"]
    cells = []
    for k, cell in enumerate(raw["cells"]):
        if not isinstance(cell, dict):
            problems.append(f"cell {k} is not a notebook cell (a {type(cell).__name__}); ignored")
            cells.append(nbformat.v4.new_raw_cell(""))
            continue
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(x, str) for x in src):
            src = "".join(src)
        elif not isinstance(src, str):
            problems.append(f"cell {k}'s source is a {type(src).__name__}, not text; treated as empty")
            src = ""
        src = src.replace("\x00", "")
        kind = cell.get("cell_type")
        cells.append(nbformat.v4.new_code_cell(src) if kind == "code" else nbformat.v4.new_markdown_cell(src))
    meta = raw.get("metadata", {})
    listed = []
    if not isinstance(meta, dict):
        problems.append(f"the notebook's metadata is a {type(meta).__name__}, not a mapping; ignored")
        meta = {}
    course_meta = meta.get("course", {})
    if not isinstance(course_meta, dict):
        problems.append(f"metadata `course` is a {type(course_meta).__name__}, not a mapping; ignored")
        course_meta = {}
    ex_list = course_meta.get("exercises", [])
    if isinstance(ex_list, list):
        listed = [x for x in ex_list if isinstance(x, str)]
        if len(listed) != len(ex_list):
            problems.append("metadata `course.exercises` holds entries that are not exercise names; ignored")
    else:
        problems.append(f"metadata `course.exercises` is a {type(ex_list).__name__}, not a list; ignored")
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"course": {"exercises": listed}})
    return nb, problems


def kernel_env(work: str, pkg: str) -> dict:
    """The kernel's environment: a few of the grader's variables (none of its secrets), the course copy
    first on the path, and empty folders of its own for everything a kernel reads at start-up."""
    keep = ("PATH", "LANG", "LANGUAGE", "TZ", "COURSE_BACKEND", "LD_LIBRARY_PATH", "SSL_CERT_FILE")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith(("LC_", "NUMBA_", "CUDA_", "NVIDIA_"))}
    # the copy first; whatever the grader's own PYTHONPATH holds stays reachable after it (a machine that has
    # ipykernel or numpy only there — the GPU lane's /tmp/site — would otherwise lose its kernel)
    env["PYTHONPATH"] = os.pathsep.join(
        [pkg] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if x and not x.startswith(os.environ.get("COURSE_GRADE_FRESH") or "\0")])
    dirs = {"HOME": "home", "IPYTHONDIR": "ipython", "JUPYTER_CONFIG_DIR": "jupyter/config",
            "JUPYTER_DATA_DIR": "jupyter/data", "JUPYTER_RUNTIME_DIR": "runtime", "MPLCONFIGDIR": "mpl",
            "TMPDIR": "tmp", "XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data",
            "NUMBA_CACHE_DIR": "cache/numba", "CUDA_CACHE_PATH": "cache/cuda"}  # the driver's JIT cache: not ~/.nv
    for var, sub in dirs.items():
        path = os.path.join(work, sub)
        os.makedirs(path, exist_ok=True)
        env[var] = path
    # no bytecode is written anywhere, and the course copy has none: its modules always come from source
    # (a PYTHONPYCACHEPREFIX would also recompile all of numba and NumPy in every kernel: seconds each)
    env.update(COURSE_CHECK="skip", PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1", JUPYTER_PLATFORM_DIRS="1",
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


def remove_driver_cache_dirs():
    """Remove ~/.nv/ComputeCache and ~/.nv where they are empty and younger than this process: on a GPU the
    driver may make them as it starts, which ``import course`` does (its GPU probe) before this module can
    point ``CUDA_CACHE_PATH`` into the scratch folder (as the re-run on the fresh copy has it)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: start time, clock ticks after boot
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime"))
        started = boot + ticks / os.sysconf("SC_CLK_TCK") - 1
        nv = os.path.join(os.path.expanduser("~"), ".nv")
        for d in (os.path.join(nv, "ComputeCache"), nv):
            if os.path.isdir(d) and not os.path.islink(d) and not os.listdir(d) and os.stat(d).st_mtime >= started:
                os.rmdir(d)
    except (OSError, ValueError, IndexError, StopIteration):
        pass
