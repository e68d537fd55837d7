"""Locate the ISA data directory, in a source checkout (``isa/``) or an installed wheel
(``_isa/``), and read its TOML files: every table of ``isa/`` is read here, by one reader."""

from __future__ import annotations

import functools
import importlib.resources
import tomllib
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


def read_toml(path: Path) -> dict:
    """One TOML file of an ISA directory (the bundled one or a test's copy), parsed."""
    with path.open("rb") as f:
        return tomllib.load(f)


def read_table(name: str) -> dict:
    """The bundled table ``isa/<name>.toml``, parsed (callers cache what they build from it)."""
    return read_toml(isa_dir() / f"{name}.toml")
