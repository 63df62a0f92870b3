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


# an outer loop (line 4) around an inner loop (line 5) the compiler unrolled 4x with no remainder loop beside it:
# per copy LDS, 2 FFMA, 2 FMUL, FADD (6), then the inner loop's control IADD3, ISETP, BRA (3) -> 27 instructions;
# then the kernel's EXIT and a slow-path subroutine nvdisasm lists after it with no line marker (so under line 6)
NESTED = ([(None, 3, "MOV R2, RZ"), (".L_x_1", 4, "IADD3 R3, R3, 0x1, RZ")]
          + [(".L_x_2" if c == 0 and k == 0 else None, 5, op) for c in range(4)
             for k, op in enumerate(("LDS R6, [R7]", "FFMA R9, R6, R6, R9", "FFMA R10, R6, R9, R10",
                                     "FMUL R11, R9, R10", "FMUL R12, R11, R11", "FADD R13, R12, R13"))]
          + [(None, 5, "IADD3 R7, R7, 0x10, RZ"), (None, 5, "ISETP.NE.AND P0, PT, R7, R8, PT"),
             (None, 5, "@P0 BRA `(.L_x_2)"),
             (None, 4, "ISETP.NE.AND P1, PT, R3, R4, PT"), (None, 4, "@P1 BRA `(.L_x_1)"),
             (None, 6, "EXIT"),
             ("$__internal_0_$__cuda_sm20_rcp_rn_f32_slowpath", None, "MUFU.RCP R9, R8"),
             (None, None, "RET.REL.NODEC R8 `(k)")])


def _wheres(ins):
    wheres, w = [], None
    for text in ins.splitlines():
        if text.strip().startswith("//## File"):
            w = "k.py:" + text.rsplit("line ", 1)[1]
        elif F.is_instruction(text):
            wheres.append(w)
    return wheres


def test_an_inner_loop_is_not_the_outer_loops_remainder_and_its_copies_are_read_from_its_body():
    ins = _listing(NESTED)
    # the inner loop: 24 of its 27 instructions are in (line, opcode) groups of 4 (LDS 4, FFMA 8, FMUL 8, FADD 4):
    # 0.89 of the body repeats 4 times (8: only the 16 FFMA/FMUL) -> 4 copies, 27 / 4 per execution of line 5; the
    # outer loop holds it and has no remainder beside it: not read (line 4 stays the caller's estimate)
    assert F.per_execution(ins, _wheres(ins)) == {"k.py:5": 27 / 4}


def test_repetition_needs_a_long_enough_body_that_repeats():
    six = [("LDS", ""), ("FFMA", ""), ("FFMA", ""), ("FMUL", ""), ("FMUL", ""), ("FADD", "")]
    assert F.repetition(six * 4 + [("BRA", "")], ["k.py:5"] * 25) == 4
    assert F.repetition(six * 2 + [("BRA", "")], ["k.py:5"] * 13) == 1  # 13 instructions: too short to read
    odd = [("LDS", ""), ("FFMA", ""), ("FMUL", "")] * 9  # 27: 9 of each, which neither 2, 4 nor 8 divides
    assert F.repetition(odd, ["k.py:5"] * 27) == 1


def test_placement_separates_straight_code_and_the_slow_path_subroutines():
    ins = _listing(NESTED)
    got = F.placement(F.parse(ins), _wheres(ins))
    # straight: line 3's MOV and line 6's EXIT; the subroutine's MUFU and RET (listed under line 6) are cold;
    # lines 4 and 5 are all inside loops
    assert got == {"straight": {"k.py:3": 1, "k.py:6": 1}, "cold": {"k.py:6": 2}}
    assert F.placement(F.parse(ins), _wheres(ins)[:-1]) == {}  # markers not matching the instructions: nothing read
