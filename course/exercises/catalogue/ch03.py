"""Chapter 03: coalescing: a particle update on a struct of arrays."""

from __future__ import annotations

from course.exercises.contract import Exercise, Input
from course.exercises.inputs import ceil_div, f32, random_size
from course.exercises.properties import (
    coalesced,
)
from course.exercises.registry import reference, register

SOA_TPB = 128
SOA_DT = 0.25  # a power of two: x + vx * dt is exact for the small integers the inputs hold


def _soa_input(rng, n, why):
    from course.kernels import memory

    q = f32(rng, (8, n))
    return Input(f"n={n} ({why})", (ceil_div(n, SOA_TPB),), (SOA_TPB,), (q, SOA_DT),
                 {0: memory.reference_advance_soa(q, SOA_DT)}, ("q", "dt"))


def _soa_inputs(rng):
    return [
        _soa_input(rng, 1, "one particle"),
        _soa_input(rng, 127, "prime, less than one block"),
        _soa_input(rng, 128, "exactly one block"),
        _soa_input(rng, 257, "prime, two blocks and one particle"),
        _soa_input(rng, random_size(rng, 300, 700), "random"),
    ]



register(Exercise(
    name="03.advance_soa",
    title="Coalescing: particles as a struct of arrays",
    signature="advance_soa(q, dt)",
    task=("Write `advance_soa(q, dt)`: move every particle by its velocity, x += vx * dt, y += vy * dt, "
          "z += vz * dt, for particles stored as a struct of arrays (SoA): q has shape (8, n) and field f of "
          "particle i is q[f, i] (fields x, y, z, vx, vy, vz, mass, charge, numbered 0..7 as in "
          f"course.kernels.memory). It is launched with threads_per_block = {SOA_TPB} and one thread per "
          f"particle, blocks_per_grid = ceil(n / {SOA_TPB}). Each load and store of a warp should touch 32 "
          "neighbouring floats: 4 sectors per request (合并访存)."),
    make_inputs=_soa_inputs,
    make_trace_input=lambda rng: _soa_input(rng, 512, "four full blocks"),
    properties=(coalesced("load"), coalesced("store")),
    hint_wrong=("Field f of particle i is q[f, i], not q[i, f]: the first index picks the field. Only x, y and "
                "z change; velocities stay as they are."),
    hint_oob=("Two ways out of the array: threads past the last particle (guard them), or the indices in the "
              "wrong order (q has 8 rows, one per field, and n columns, one per particle)."),
    stub_hint="one thread per particle; which index of q picks the field, and which the particle?",
    reference=reference("memory", "advance_soa"),
))
