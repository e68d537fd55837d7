"""The bundled kernels of ``programs/`` (in a checkout) or ``neuronemu/_programs`` (installed)."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from neuronemu.errors import AsmError, InputError


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


def resolve_kernel(kernel: str | Path, base: Path | None = None) -> Path:
    """The file of a kernel named on a command line or in a test: the path itself (a relative
    one first under ``base``, the test file's folder, then in the working directory), else the
    bundled program of that name (``vector_add``, ``examples/vector_add``). The one lookup of
    the CLI and ``neuronemu.testing``; reading it is ``api.assemble_file``'s job."""
    path = Path(kernel)
    candidates = [base / path] if base is not None and not path.is_absolute() else []
    candidates.append(path)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    found = find_program(str(kernel))
    if found is not None:
        return found
    where = f"looked in {base} and {Path.cwd()}; " if base is not None else ""
    raise InputError(f"no such kernel file: {kernel} ({where}bundled programs: "
                     f"`neuronemu programs` lists them)")


def listing(columns: int) -> list[str]:
    """``neuronemu programs``: each bundled program's name and first sentence, wrapped."""
    import textwrap

    found = bundled_programs()
    width = max(len(name) for name in found) + 2
    columns = max(columns, width + 30)
    return [textwrap.fill(description(path.read_text()), columns,
                          initial_indent=f"{name:<{width}}", subsequent_indent=" " * width)
            for name, path in found.items()]


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


def check_own_topology(program, target: str | None) -> None:
    """A kernel's ``.topology`` is the system it runs on: a --target naming another chip makes
    a kernel that `run` refuses and a binary that does not assemble again (the disassembled
    text says both .target and .topology), so `check` and `asm` refuse it too."""
    if target is None or program.topology is None:
        return
    from neuronemu.isa.topologies import load_topologies

    chips = load_topologies()[program.topology].target
    if chips != program.target.name:
        raise AsmError(f"topology {program.topology} is made of {chips} chips, but --target "
                       f"{target} asks for {program.target.name}: give --target {chips} (or "
                       f"none), or a .topology of {program.target.name} chips (`neuronemu "
                       f"topology` lists them)", program.directive_location("topology"))
