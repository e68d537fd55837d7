"""``python -m neuronemu.nki script.py [args]``: run an unmodified NKI script on neuronemu
(``import nki`` resolves to ``neuronemu.nki``; see ``neuronemu.nki.dropin``)."""

import sys

from neuronemu.nki.dropin import run_script

USAGE = "usage: python -m neuronemu.nki SCRIPT.py [ARGS...]"

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(USAGE + "\n\nRuns SCRIPT.py as __main__ with `import nki`, `nki.language`, `nki.isa`, "
          "`nki.typing`, `nki.collectives` resolving to neuronemu.nki.",
          file=sys.stderr if len(sys.argv) < 2 else sys.stdout)
    sys.exit(2 if len(sys.argv) < 2 else 0)
sys.exit(run_script(sys.argv[1], sys.argv[2:]))
