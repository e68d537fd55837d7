"""neuronemu: a functional, cycle-approximate emulator of the AWS NeuronCore ISA.

Importing the package is light (no numba, no lark); they load on first assemble/run.
"""

from neuronemu.api import Result, assemble, assemble_file, run
from neuronemu.errors import (
    AsmError,
    InputError,
    Interrupted,
    LimitReached,
    NeuronemuError,
    ResourceError,
    RuntimeFault,
)

__version__ = "0.1.0"
__all__ = ["AsmError", "InputError", "Interrupted", "LimitReached", "NeuronemuError",
           "ResourceError", "Result", "RuntimeFault", "__version__", "assemble", "assemble_file",
           "run"]
