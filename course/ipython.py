"""In a notebook, show the course's own errors as their message alone, not as a stack of engine frames.

The error still is an error (the cell fails, nbval and the grader see it); only its display is short:
the message already names the kernel line, the block and the thread, and says what to do.
"""

from __future__ import annotations


def _short(shell, etype, evalue, tb, tb_offset=None):
    # IPython discards what a custom handler returns from run_code; showing it is the handler's job.
    # _showtraceback is what ipykernel overrides to send an "error" output, so the cell still fails.
    stb = [f"\x1b[0;31m{etype.__name__}\x1b[0m: {evalue}"]
    shell._showtraceback(etype, evalue, stb)
    return None


def register() -> None:
    """Install the short display for KernelError and BackendError when running under IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from course.backend import BackendError
    from course.engine import KernelError

    shell.set_custom_exc((KernelError, BackendError), _short)
