"""In a notebook, a failing kernel fails its cell with a short, located message (not engine frames)."""

import nbclient
import nbformat
import pytest

from course import backend

pytestmark = pytest.mark.skipif(backend.on_gpu(), reason="the message comes from the CPU engine")


def _run(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbclient.NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute()
    return nb


def test_out_of_bounds_in_a_cell_is_an_error_output_naming_line_block_thread():
    nb = _run(
        "import course\nfrom numba import cuda\nimport numpy as np",
        "@cuda.jit\ndef fill(a):\n    i = cuda.grid(1)\n    a[i] = i\nfill[2, 32](np.zeros(40))",
        "print('later cells still run')",
    )
    (err,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert err.ename == "KernelError"
    assert "block (1, 0, 0), thread (8, 0, 0)" in err.evalue
    assert "line 4 of the notebook cell defining `fill`" in err.evalue and "a[i] = i" in err.evalue
    assert len(err.traceback) == 1 and "course/engine" not in err.traceback[0] and "numba" not in err.traceback[0]
    assert nb.cells[2].outputs[0].text.strip() == "later cells still run"


def test_a_cell_that_fails_still_fails_for_nbclient():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import course\nfrom numba import cuda\nimport numpy as np\n"
        "@cuda.jit\ndef k(a):\n    a[cuda.grid(1) - 1] = 1\nk[1, 4](np.zeros(4))")]
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="negative"):
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
