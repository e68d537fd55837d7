"""neuronemu: a functional, cycle-approximate emulator of the AWS NeuronCore ISA.

Importing the package is light: no numba, not even numpy (the API loads on first use
of ``assemble``/``run``/``Result``, numba on first run), so the pytest plugin
this package installs costs an unrelated test suite nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuronemu.errors import (
    AsmError,
    InputError,
    Interrupted,
    LimitReached,
    NeuronemuError,
    ResourceError,
    RuntimeFault,
)

if TYPE_CHECKING:
    from neuronemu.api import Result, assemble, assemble_file, run

__version__ = "0.1.0"
__all__ = ["AsmError", "InputError", "Interrupted", "LimitReached", "NeuronemuError",
           "ResourceError", "Result", "RuntimeFault", "__version__", "assemble", "assemble_file",
           "run"]

_API = ("Result", "assemble", "assemble_file", "run")


def __getattr__(name: str):
    """The API's names, imported on first use (PEP 562)."""
    if name in _API:
        from neuronemu import api

        return getattr(api, name)
    raise AttributeError(f"module 'neuronemu' has no attribute {name!r}")
