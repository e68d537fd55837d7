"""The bundled kernels of ``programs/`` (in a checkout) or ``neuronemu/_programs`` (installed)."""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def programs_dir() -> Path | None:
    checkout = Path(__file__).resolve().parents[1] / "programs"
    if checkout.is_dir():
        return checkout
    installed = Path(str(importlib.resources.files("neuronemu") / "_programs"))
    return installed if installed.is_dir() else None


def bundled_programs() -> dict[str, Path]:
    """``examples/vector_add`` -> path, for every bundled .s file."""
    root = programs_dir()
    if root is None:
        return {}
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in sorted(root.rglob("*.s"))}


def find_program(name: str) -> Path | None:
    programs = bundled_programs()
    name = name.removesuffix(".s")
    if name in programs:
        return programs[name]
    matches = [p for key, p in programs.items() if key.rsplit("/", 1)[-1] == name]
    return matches[0] if len(matches) == 1 else None


def description(text: str) -> str:
    """The first sentence of a kernel's leading comment block (which may span lines)."""
    words: list[str] = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        words += line.lstrip("# ").split()
        if words and words[-1].endswith(".") and words[-1] not in ("e.g.", "i.e.", "etc."):
            break
    sentence = " ".join(words)
    for end in (i for i in range(len(sentence)) if sentence.startswith(". ", i)):
        if not sentence[:end + 1].endswith(("e.g.", "i.e.", "etc.")):
            return sentence[:end + 1]
    return sentence
