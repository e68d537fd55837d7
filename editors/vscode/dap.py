"""VS Code starts this with the python3 on PATH: `neuronemu dap` (neuronemu must be installed
in that Python)."""

import sys

from neuronemu.cli import main

sys.exit(main(["dap"]))
