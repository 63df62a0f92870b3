"""course.trace.sass_flight on hand-written SASS listings: loads in flight, per-execution counts, float atomics.

Each listing is written here in nvdisasm's format, with the answer worked out by hand in the comment beside it, so
that the functions are checked against arithmetic, not against their own output.
"""

from course.trace import sass_flight as F


def _listing(body: list) -> str:
    """An nvdisasm-style listing: ``(label or None, where or None, instruction)`` rows."""
    out, addr, where = [], 0, None
    for label, w, ins in body:
        if label:
            out.append(f"{label}:")
        if w and w != where:
            out.append(f'\t//## File "k.py", line {w}')
            where = w
        out.append(f"        /*{addr:04x}*/                   {ins} ;")
        addr += 16
    return "\n".join(out)


# a loop unrolled 4x: four independent loads issued before the first add uses one (4 in flight), then a remainder
# loop with one load consumed at once (1 in flight); the hot loop is the one with the most loads
UNROLLED = [
    (None, 7, "ISETP.GE.AND P0, PT, R2, R3, PT"),
    (".L_x_1", 8, "LDG.E R6, desc[UR6][R4.64]"),
    (None, 8, "FADD R9, R6, R9"),
    (None, 7, "ISETP.NE.AND P1, PT, R2, RZ, PT"),
    (None, 7, "@P1 BRA `(.L_x_1)"),
    (".L_x_2", 8, "LDG.E R10, desc[UR6][R4.64]"),
    (None, 8, "LDG.E R11, desc[UR6][R4.64+0x200]"),
    (None, 8, "LDG.E R12, desc[UR6][R4.64+0x400]"),
    (None, 8, "LDG.E R13, desc[UR6][R4.64+0x600]"),
    (None, 8, "FADD R9, R10, R9"),
    (None, 8, "FADD R9, R11, R9"),
    (None, 8, "FADD R9, R12, R9"),
    (None, 8, "FADD R9, R13, R9"),
    (None, 7, "IADD3 R2, R2, 0x4, RZ"),
    (None, 7, "@P0 BRA `(.L_x_2)"),
    (None, 9, "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R9"),
    (None, 9, "EXIT"),
]

# a pointer chase unrolled 2x: the second load's address is the first load's result (1 in flight)
CHASE = [
    (".L_x_1", 5, "LDG.E R4, desc[UR6][R2.64]"),
    (None, 5, "IMAD.WIDE R2, R4, 0x4, R6"),
    (None, 5, "LDG.E R5, desc[UR6][R2.64]"),
    (None, 5, "IMAD.WIDE R2, R5, 0x4, R6"),
    (None, 4, "@P0 BRA `(.L_x_1)"),
    (None, 6, "RED.E.ADD.STRONG.GPU [R8.64], R5"),
    (None, 6, "EXIT"),
]


def test_loads_in_flight_counts_the_loads_issued_before_their_first_use():
    assert F.loads_in_flight(_listing(UNROLLED)) == 4
    assert F.loads_in_flight(_listing(CHASE)) == 1


def test_a_wide_load_is_outstanding_until_any_of_its_registers_is_read():
    body = [(None, 3, "LDG.E.128 R4, desc[UR6][R2.64]"), (None, 3, "LDG.E R9, desc[UR6][R2.64+0x10]"),
            (None, 4, "FADD R10, R7, R9"), (None, 4, "EXIT")]  # R7 is the .128 load's last register
    assert F.loads_in_flight(_listing(body)) == 2
    assert F.loads_in_flight(_listing([(None, 1, "FADD R1, R2, R3"), (None, 1, "EXIT")])) is None


def test_per_execution_divides_the_main_loops_copies_by_the_unroll():
    ins = _listing(UNROLLED)
    wheres = []
    for text in ins.splitlines():
        if text.strip().startswith("//## File"):
            w = "k.py:" + text.rsplit("line ", 1)[1]
        elif F.is_instruction(text):
            wheres.append(w)
    got = F.per_execution(ins, wheres)
    # main loop: line 8 has 8 instructions against the remainder's 2 -> u = 4: 8 / 4 = 2 per execution of line 8;
    # line 7 has 2 (IADD3, BRA) in the main loop: 2 / 4 = 0.5 per trip
    assert got == {"k.py:8": 2.0, "k.py:7": 0.5}
    assert F.per_execution(ins, wheres[:-1]) == {}  # the markers do not match the instructions: nothing read


def test_float_atomic_share():
    assert F.float_atomic_share(_listing(UNROLLED)) == 1.0
    assert F.float_atomic_share(_listing(CHASE)) == 0.0
    assert F.float_atomic_share(_listing([(None, 1, "EXIT")])) is None
