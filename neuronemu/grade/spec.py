"""What a lab is, as the grader sees it: the kernel's interface, the shapes it is tried on, how
inputs are drawn, the float64 oracle, the limits and the cycle budget.

A lab kernel takes its sizes from ``.const`` lines; the grader rewrites their values (the line
stays where it is, so diagnostics keep their line numbers) and checks that the tensors the
kernel then declares are exactly the lab's interface. The oracle never looks at the engine: it
computes the expected outputs in float64 (ml_dtypes for the narrow types) from the inputs the
grader drew, with an error bound per element derived from the dtypes (docs/numerics.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

Params = dict[str, int]
Tensor = tuple[str, tuple[int, ...], str]          # (dtype, shape, role)
Expected = tuple[np.ndarray, np.ndarray | float]   # (float64 values, bound per element)

# Performance tiers: (modelled time / the reference's, fraction of the performance points).
# A time within 1.2x of the reference gets full marks, as the issue asks.
TIERS: tuple[tuple[float, float], ...] = ((1.2, 1.0), (1.5, 0.6), (2.0, 0.3))

CORRECTNESS_POINTS = 70.0
PERFORMANCE_POINTS = 30.0


@dataclass(frozen=True)
class Variant:
    """One shape the kernel is graded on."""

    name: str
    params: Params
    shown: bool = False     # the shape the starter is written for (the student saw it)
    timed: bool = False     # graded against the cycle budget too


@dataclass(frozen=True)
class Lab:
    name: str                                   # the folder under programs/labs/
    title: str
    params: tuple[str, ...]                     # .const names the grader rewrites
    variants: tuple[Variant, ...]
    interface: Callable[[Params], dict[str, Tensor]]
    inputs: Callable[[np.random.Generator, Params], dict[str, np.ndarray]]
    oracle: Callable[[dict[str, np.ndarray], Params], dict[str, Expected]]
    target: str = "trn2"
    topology: str | None = None                 # run on every rank of this system
    sync: str | None = None                     # "explicit": the kernel must declare it
    forbidden: tuple[str, ...] = ()             # instructions the lab is about writing by hand
    stochastic_rounding: bool = False
    max_instructions: int = 2_000_000
    timeout: float = 30.0                       # seconds of execution per run
    notes: str = ""

    def variant(self, name: str) -> Variant:
        return next(v for v in self.variants if v.name == name)


@dataclass
class Budget:
    """The reference solution's modelled time per timed variant (ns), recorded in the lab's
    ``budget.json`` so grading needs no solution on the student's machine."""

    reference_ns: dict[str, float] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Budget:
        if not path.is_file():
            return cls()
        return cls(dict(json.loads(path.read_text())["reference_ns"]))

    def save(self, path: Path) -> None:
        doc = {"reference_ns": {k: round(v, 3) for k, v in sorted(self.reference_ns.items())},
               "tiers": [list(t) for t in TIERS],
               "note": "modelled ns of the reference solution; re-record with "
                       "`python -m tools.labs record`"}
        path.write_text(json.dumps(doc, indent=2) + "\n")


def tier_fraction(ratio: float) -> float:
    """The fraction of the performance points for ``time / reference time``."""
    for limit, fraction in TIERS:
        if ratio <= limit:
            return fraction
    return 0.0


def tiers_text() -> str:
    parts = [f"<= {limit:g}x: {fraction:.0%}" for limit, fraction in TIERS]
    return ", ".join(parts) + ", slower: 0%"
