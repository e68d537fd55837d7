"""Writing generated files, shared by the generators (tools/gen_isa.py, tools/gen_highlight.py):
each writes only what changed, and ``--check`` (the freshness tests) writes nothing."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_generated(files: dict[Path, str], check: bool, tool: str) -> int:
    """Write the files whose text changed (none with ``check``); 1 when ``check`` finds one
    stale, else 0. ``tool`` is the command that regenerates them, for the message."""
    stale = []
    for path, text in files.items():
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    if check and stale:
        print("stale generated files: " + ", ".join(map(str, stale)) + f"; run {tool}")
        return 1
    for p in stale:
        print(f"wrote {p}")
    return 0
