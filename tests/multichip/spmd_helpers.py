"""Shared helpers of the multi-chip tests: assembling a kernel for a topology's chip, running it
on every rank, and independent numpy oracles of the collectives."""

from __future__ import annotations

import numpy as np

import neuronemu
from neuronemu.api import run_spmd
from neuronemu.isa.topologies import load_topologies

TOPOLOGIES = load_topologies()

# r0 = rank, r1 = world, r2 = right neighbour, r3 = left neighbour
NEIGHBOURS = """\
    ctrl.rank r0
    ctrl.world r1
    ctrl.add r2, r0, 1
    ctrl.rem r2, r2, r1            # right: (r + 1) mod n
    ctrl.sub r3, r0, 1
    ctrl.rem r3, r3, r1            # left: (r - 1) mod n, never negative
"""


def world_of(topology: str, ranks_per_chip: int = 1) -> int:
    return TOPOLOGIES[topology].chips * ranks_per_chip


def assemble_for(text: str, topology: str, filename: str = "k.s"):
    """Assemble ``text`` for the chips ``topology`` is made of."""
    return neuronemu.assemble(text, filename, target=TOPOLOGIES[topology].target)


def spmd(text: str, topology: str, inputs=None, **kwargs):
    return run_spmd(assemble_for(text, topology), topology, inputs=inputs, **kwargs)


def algorithms(world: int) -> list[str]:
    """The algorithms a collective accepts for this world (rdh only for a power of two)."""
    power_of_two = world & (world - 1) == 0
    return ["ring", "mesh", *(["rdh"] if power_of_two else []), "auto"]


def blocks(array: np.ndarray, n: int, dim: int) -> list[np.ndarray]:
    """``array`` cut into ``n`` equal consecutive blocks along ``dim``."""
    size = array.shape[dim] // n
    index = [slice(None)] * array.ndim
    out = []
    for q in range(n):
        index[dim] = slice(q * size, (q + 1) * size)
        out.append(array[tuple(index)])
    return out


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(a.view(unsigned), b.view(unsigned)))
