"""Compile (and cache) all compiled code once: ``neuronemu warm`` from a checkout.

CI runs this before pytest so tests measure behaviour, not compiles; prints the time it took."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    from neuronemu.warm import warm

    print(f"numba cache warm in {warm():.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
