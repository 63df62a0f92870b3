"""What the tracer records: the layout of a normalised access record, and the choices every count follows."""

from __future__ import annotations

#: The keys of :meth:`Report.totals`, each the Nsight Compute metric named beside it.
TOTAL_KEYS = {
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "shared_load_requests": "smsp__sass_inst_executed_op_shared_ld.sum",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_store_requests": "smsp__sass_inst_executed_op_shared_st.sum",
    "shared_store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
}

#: Whether one complex element access counts as two accesses (real part, then imaginary part) of
#: half the size, per memory space.  numba loads a complex number as a two-field struct aligned to
#: one field; for global arrays the compiler cannot prove the 8/16-byte alignment a single wide
#: instruction needs, so it emits two; for shared arrays it knows the array's alignment and may merge
#: them.  These defaults are that reasoning; the H200 validation run (docs/tracer.md) decides.
#: Change it here and every count follows.
SPLIT_COMPLEX = {"global": True, "shared": False}

TRACED_SPACES = ("global", "shared")
OPS = {"ld": "load", "st": "store", "atom": "atomic"}

# A normalised record is one element access by one thread:
# (op, space, site, tid, occurrence, addr, size, array name, barrier epoch, warp-sync epoch, array base,
#  for a store: its number in the recorder's list of stored values; -1 for loads and atomics)
R_OP, R_SPACE, R_SITE, R_TID, R_OCC, R_ADDR, R_SIZE, R_NAME, R_BAR, R_WSYNC, R_BASE, R_VAL = range(12)

# The raw records' operation codes (the low two bits of their first int) and their names.
LD, ST, ATOM = 0, 1, 2
OPNAME = ("ld", "st", "atom")
