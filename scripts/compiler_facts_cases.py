"""Add the compiler facts of every launch course.explain is validated on (the chapters' timed cases and the claims'
launches, at their small sizes: the same argument types) to data/compiler_facts.json.  ``make compiler-facts`` runs
it after the notebooks, whose runs do not launch all of them (the claims' kernels, the timed cases' sizes), and the
shipped kernels a chapter's compiler question answers for without a compiler (``course.show.lab.compiled``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("COURSE_COMPILER_FACTS_WRITE", "1")

import course  # noqa: F401  (the backend first)
from numba import typeof

import numpy as np

from course import engine
from course.kernels import memory
from course.measure import claim_cases, timed_cases
from course.trace import compiler

#: (name, kernel, arguments) of every launch whose facts the committed file must hold
launches = [(c.name, c.kernel, c.args(0)) for c in timed_cases.cases("small") + claim_cases.cases("small")]
# chapter 03 §2 asks ptxas's local bytes of bin_counts_local (notebooks/03_memory_coalescing.ipynb)
launches.append(("bin_counts_local", memory.bin_counts_local, (np.zeros((8, 128), np.int32),
                                                               np.zeros((16, 128), np.int32))))
found = missing = 0
for name, kernel, args in launches:
    fn = engine.kernel_py_func(kernel)
    types = tuple(typeof(a) for a in args)
    if compiler.facts(fn, types) is None:
        missing += 1
        print(f"no facts for {name}: {compiler.why(compiler.describe(fn, types)[0])}")
    else:
        found += 1
print(f"compiler facts: {found} launches, {missing} without")
sys.exit(1 if missing else 0)
