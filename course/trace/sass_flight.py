"""How many global loads a warp has in flight at once, read from the SASS the compiler made (issue 24).

The tracer counts a kernel's loads from its source; what it cannot see is how many of them the compiler lets a
warp issue before it must wait for the first one.  A loop with a run-time trip count is unrolled (typically 4
copies of its body, plus a remainder loop), and the copies' loads are issued back to back when their addresses do
not depend on each other's results; a pointer chase's copies wait for each other.  Memory-latency-bound time
divides by exactly this number, so :func:`loads_in_flight` measures it on the listing:

- the **hot loop** is the loop body (a backward ``BRA`` to a label above it) that holds the most ``LDG``
  instructions; without a loop holding one, the whole kernel;
- walking that body in order, each ``LDG`` adds its destination registers to the loads outstanding, and the first
  instruction that reads one of them (the warp's scoreboard wait) retires that load; the most loads outstanding at
  any point is the answer.

Measured here on the exercises' solutions (sm_90, CUDA 13's ptxas): a grid-stride sum unrolled 4× gives 4 (its
remainder loop 1), ``matvec_t``'s 8 loads per unrolled body give 4 (each ``x[r]`` is consumed before the next
row's), a pointer chase gives 1.
"""

from __future__ import annotations

import math
import re
from typing import Optional

_INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_x_\d+|\$[\w$.]+):")
_REG = re.compile(r"\bR(\d+)(\.64)?")
_TARGET = re.compile(r"\((\.L_x_\d+)\)")


def _regs(text: str) -> set:
    out: set = set()
    for m in _REG.finditer(text):
        r = int(m.group(1))
        out |= {r, r + 1} if m.group(2) else {r}
    return out


def _width(op: str) -> int:
    return 4 if ".128" in op else 2 if ".64" in op else 1


def parse(sass: str) -> tuple:
    """``([(opcode, operands)], {label: index of the next instruction})`` of an ``nvdisasm`` listing."""
    ins: list = []
    labels: dict = {}
    for line in sass.splitlines():
        m = _LABEL.match(line)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = _INS.search(line)
        if m:
            ins.append((m.group(3), m.group(4)))
    return ins, labels


def loops(ins: list, labels: dict) -> list:
    """``(first, last)`` instruction indices of every loop body: a branch back to a label at or above it."""
    out = []
    for i, (op, rest) in enumerate(ins):
        if op.startswith("BRA"):
            m = _TARGET.search(rest)
            t = labels.get(m.group(1)) if m else None
            if t is not None and t <= i:
                out.append((t, i))
    return out


def in_flight(ins: list, first: int, last: int) -> int:
    """The most ``LDG`` results outstanding at once, walking ``ins[first:last+1]`` in order."""
    pending: list = []
    best = 0
    for op, rest in ins[first:last + 1]:
        operands = rest.split(",")
        load = op.startswith("LDG")
        if op.startswith(("ST", "RED", "BRA", "EXIT", "RET", "BAR")) or not operands[0].strip().startswith("R"):
            sources = _regs(rest)  # no destination register: every register named is read
        else:
            sources = _regs(",".join(operands[1:]))
        pending = [p for p in pending if not p & sources]
        if load:
            dest = _REG.match(operands[0].strip())
            if dest:
                base = int(dest.group(1))
                pending.append(set(range(base, base + _width(op))))
        best = max(best, len(pending))
    return best


def facts(sass: str, wheres: list) -> dict:
    """What the compiler's facts carry from this module, the listing parsed once: ``loads_in_flight``,
    ``per_execution``, ``float_atomics``, and per source line the instructions that run at most once per warp
    (``straight``: outside every loop) and those that normally never run (``cold``: :func:`cold`)."""
    parsed = parse(sass)
    placed = placement(parsed, wheres)
    return {"loads_in_flight": loads_in_flight(sass, parsed), "per_execution": per_execution(sass, wheres, parsed),
            "float_atomics": float_atomic_share(sass, parsed), **placed}


def cold(parsed: tuple) -> set:
    """Indices of the instructions of the compiler's slow-path subroutines (``$__internal_…_slowpath``: the IEEE
    division's and square root's special cases, called only for denormal, huge or zero operands).  ``nvdisasm``
    places them after the kernel's last ``EXIT`` with no line marker of their own, so a listing attributes them to
    the kernel's last source line, which never runs them."""
    ins, labels = parsed
    starts = sorted((i, name) for name, i in labels.items() if name.startswith("$"))
    out: set = set()
    for k, (i, name) in enumerate(starts):
        if "slowpath" not in name:
            continue
        end = starts[k + 1][0] if k + 1 < len(starts) else len(ins)
        out |= set(range(i, end))
    return out


def placement(parsed: tuple, wheres: list) -> dict:
    """``{"straight": {"file:line": n}, "cold": {"file:line": n}}``: a line's instructions outside every loop of
    the listing (each runs at most once per warp: a source loop the compiler unrolled whole is straight code, however
    many trips the source runs) and those in slow-path subroutines (:func:`cold`)."""
    ins, labels = parsed
    if len(wheres) != len(ins):
        return {}
    skip = cold(parsed)
    inside = [False] * len(ins)
    for a, b in loops(ins, labels):
        if a in skip:
            continue
        for i in range(a, b + 1):
            inside[i] = True
    straight: dict = {}
    off: dict = {}
    for i, w in enumerate(wheres):
        if w is None:
            continue
        if i in skip:
            off[w] = off.get(w, 0) + 1
        elif not inside[i]:
            straight[w] = straight.get(w, 0) + 1
    return {"straight": straight, "cold": off}


def loads_in_flight(sass: str, parsed: Optional[tuple] = None) -> Optional[int]:
    """Loads a warp has in flight in the kernel's hot loop (see the module docstring); None without an ``LDG``.
    ``parsed``: :func:`parse`'s answer for ``sass``, when the caller has it."""
    ins, labels = parsed or parse(sass)
    n_ldg = [0]
    for op, _ in ins:
        n_ldg.append(n_ldg[-1] + op.startswith("LDG"))
    if not n_ldg[-1]:
        return None
    bodies = [(n_ldg[b + 1] - n_ldg[a], a, b) for a, b in loops(ins, labels)]
    bodies = [x for x in bodies if x[0]]
    if not bodies:
        return max(1, in_flight(ins, 0, len(ins) - 1))
    _, a, b = max(bodies, key=lambda x: (x[0], -(x[2] - x[1])))  # most loads; the innermost of equals
    return max(1, in_flight(ins, a, b))


def is_instruction(text: str) -> bool:
    """Whether a listing line is an instruction :func:`parse` counts."""
    return bool(_INS.search(text))


def per_execution(sass: str, wheres: list, parsed: Optional[tuple] = None) -> dict:
    """``{"file:line": SASS instructions per execution of the line}`` for the lines of an unrolled loop.

    A loop with a run-time trip count is compiled as a main loop holding ``u`` copies of its body and a remainder
    loop holding one: a line's instructions in the main loop over its instructions in the smallest other loop that
    holds the line give ``u`` (the largest such ratio of the loop's lines, rounded to a power of two, since the loop
    header's own instructions do not multiply).  A line of that main loop then executes ``count / u`` instructions
    per source execution: static counts over all copies said ``count + remainder``, 1.3–3.9× too many on loops
    without a memory instruction (whose copies could not be measured from the memory lines).  Lines of loops without
    a remainder partner are left out (the caller keeps its own estimate).  ``wheres``: each instruction's source
    ``file:line`` in order (the :func:`is_instruction` lines; the caller reads the listing's line markers).
    """
    ins, labels = parsed or parse(sass)
    if len(wheres) != len(ins):
        return {}
    skip = cold((ins, labels))
    spans = [(a, b) for a, b in loops(ins, labels) if a not in skip and b > a]
    bodies = []
    for a, b in spans:
        c: dict = {}
        for w in wheres[a:b + 1]:
            if w is not None:
                c[w] = c.get(w, 0) + 1
        bodies.append(c)
    out: dict = {}
    for i, body in enumerate(bodies):
        a, b = spans[i]
        # the remainder partners: other loops beside this one (not nested in it, nor holding it) that share lines
        # with it and are smaller (a loop nested inside is an inner loop, not a remainder)
        partners = [o for j, o in enumerate(bodies) if j != i and set(o) & set(body) and sum(o.values()) < sum(body.values())
                    and (spans[j][1] < a or spans[j][0] > b)]
        ratios = [n / min(o[w] for o in partners if w in o) for w, n in body.items() if any(w in o for o in partners)]
        if ratios and max(ratios) >= 1.5:
            u = 2 ** round(math.log2(max(ratios)))
        elif not any(o != spans[i] and a <= o[0] and o[1] <= b for o in spans):
            u = repetition(ins[a:b + 1], wheres[a:b + 1])  # an innermost loop without a remainder loop beside it
        else:
            continue
        if u > 8 or u < 2:  # no runtime unroll goes that far: some other structure; or not unrolled: not read
            continue
        for w, n in body.items():
            if n / u > out.get(w, 0):
                out[w] = n / u
    return out


REPEATED = 0.85  # share of a loop's instructions in (line, opcode) groups whose counts the copies divide


def repetition(body: list, wheres: list) -> int:
    """Copies of the source loop's body in one SASS loop, read from the body alone: the largest ``u`` of 8, 4 and 2
    such that :data:`REPEATED` of its instructions fall in (source line, opcode) groups whose counts ``u`` divides (the
    loop control and the index arithmetic the copies share do not repeat); 1 when none does or the body is short.
    Checked on listings: n-body's inner loop (228 instructions, 4 copies: 0.88 at 4), a grid-stride sum (0.94 at 4),
    Mandelbrot's one-copy loop (0.57 at 2)."""
    if len(body) < 24:
        return 1
    groups: dict = {}
    for (op, _), w in zip(body, wheres):
        k = (w, op.split(".")[0])
        groups[k] = groups.get(k, 0) + 1
    for u in (8, 4, 2):
        if sum(v for v in groups.values() if v % u == 0) >= REPEATED * len(body):
            return u
    return 1


def float_atomic_share(sass: str, parsed: Optional[tuple] = None) -> Optional[float]:
    """The share of global atomics (``ATOMG``/``REDG``/``RED``/``ATOM``) that are floating-point (``.F32``/``.F64``):
    one after another on one address, a float add takes about 1.8 ns on the H200, an integer one about 0.75 ns."""
    ins, _ = parsed or parse(sass)
    atoms = [op for op, _ in ins if op.startswith(("ATOMG", "REDG", "RED.", "ATOM."))]
    if not atoms:
        return None
    return sum(".F32" in op or ".F64" in op or ".F16" in op for op in atoms) / len(atoms)
