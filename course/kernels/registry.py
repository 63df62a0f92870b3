"""The one type of a kernel registry entry: a named version of a kernel and its one-line idea.

Every kernel module lists its versions in a dict, name → :class:`Version` (``KERNELS``,
``TRANSPOSE_VERSIONS``, ``REDUCTION_VERSIONS``, ``MATMUL_VERSIONS``).  What all entries share lives here:
the name, the idea, the kernel, and for the families a factory builds (the tile shapes, vector widths and
unroll factors a GPU sweep tries) the family's name and the factory's parameters.  A module adds what
launching its kernels needs in a small subclass (a transpose's tile and threads, a reduction's grid
rule, a matmul's block tile) and keeps its own ``launch``/``run``/``griddim``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Version:
    """One version of a kernel: its name in the registry, its one-line idea, the kernel itself."""

    name: str
    idea: str
    kernel: object
    family: str = field(default="", kw_only=True)  # the factory's name for factory-built versions
    params: dict = field(default_factory=dict, kw_only=True)  # the factory's arguments

    @property
    def kernels(self) -> tuple:
        """Every kernel this version launches (for resource and occupancy reports)."""
        return (self.kernel,)


def registry(*versions: Version) -> dict:
    """name → version, in the order given; two versions of one name are a mistake."""
    out: dict = {}
    for v in versions:
        if v.name in out:
            raise ValueError(f"two kernel versions are named {v.name!r}: give each its own name.")
        out[v.name] = v
    return out
