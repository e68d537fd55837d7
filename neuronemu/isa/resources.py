"""Locate the ISA data directory, in a source checkout (``isa/``) or an installed wheel (``_isa/``)."""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path


@functools.lru_cache(maxsize=1)
def isa_dir() -> Path:
    checkout = Path(__file__).resolve().parents[2] / "isa"
    if (checkout / "grammar.lark").is_file():
        return checkout
    installed = Path(str(importlib.resources.files("neuronemu") / "_isa"))
    if (installed / "grammar.lark").is_file():
        return installed
    raise FileNotFoundError("neuronemu: cannot find the ISA tables (isa/ or neuronemu/_isa/)")
