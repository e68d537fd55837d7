"""The ISA tables: consistent, every derived file fresh, every example runs."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neuronemu
from neuronemu.isa.table import load_isa

ROOT = Path(__file__).resolve().parents[1]
ISA = load_isa()
INSTRUCTIONS = sorted(ISA.instructions.values(), key=lambda d: d.opcode)


def test_generated_files_are_fresh() -> None:
    """Editing isa/*.toml without rerunning tools/gen_isa.py fails here."""
    result = subprocess.run([sys.executable, "-m", "tools.gen_isa", "--check"],
                            check=False, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_opcodes_are_unique_and_carry_the_engine() -> None:
    opcodes = [d.opcode for d in INSTRUCTIONS]
    assert len(set(opcodes)) == len(opcodes)
    engines = ISA.enums["engine"]
    for d in INSTRUCTIONS:
        assert d.opcode >> 8 == engines.values[d.engine], d.name


@pytest.mark.parametrize("definition", INSTRUCTIONS, ids=lambda d: d.name)
def test_semantics_function_exists(definition) -> None:
    """The function, and its narrow kernels with the test of what each covers, if it has any
    (neuronemu/exec/kernels.py)."""
    module, function = definition.semantics.split(".")
    semantics = importlib.import_module(f"neuronemu.semantics.{module}")
    assert hasattr(semantics, function)
    narrow = getattr(semantics, "NARROW", {}).get(function, ())
    for name in (narrow,) if isinstance(narrow, str) else narrow:
        assert hasattr(semantics, name)
        assert callable(getattr(semantics, f"{name}_covers"))


# inline compression (no public API, ARCHITECTURE.md 5.4) and the lowering of NKI's
# t.indirect() views (a view of a tile, not an nki.isa call: neuronemu/nki/_indirection.py)
NO_NKI_NAME = {"dma.compress", "dma.decompress", "vector.indirect_gather",
               "vector.indirect_scatter"}


@pytest.mark.parametrize("definition", INSTRUCTIONS, ids=lambda d: d.name)
def test_entry_is_documented(definition) -> None:
    assert definition.summary.endswith(".")
    for arg in definition.args:
        if arg.kind not in ("tile", "reg", "reg_or_int", "label"):
            assert arg.doc, f"{definition.name} argument {arg.name} has no doc"
    # sequencer instructions and the NO_NKI_NAME entries have no nki.isa name
    if definition.engine not in ("ctrl", "sync") and definition.name not in NO_NKI_NAME:
        assert definition.nki and definition.nki.startswith(("nki.isa.", "nki.collectives.")), (
            definition.name)


@pytest.mark.parametrize("definition", INSTRUCTIONS, ids=lambda d: d.name)
def test_example_runs(definition) -> None:
    """Each table example, with its setup, assembles and runs on every target it supports, and
    executes the example instruction itself."""
    source = definition.example_program
    for target in definition.targets or ("trn1", "trn2", "trn3"):
        program = neuronemu.assemble(f".target {target}\n{source}",
                                     filename=f"{definition.name}.s")
        result = neuronemu.run(program)
        assert result.instructions.get(definition.engine, 0) >= 1


def _run_example(definition) -> neuronemu.Result:
    program = neuronemu.assemble(definition.example_program)
    return neuronemu.run(program)


def _final_tile(result: neuronemu.Result, name: str) -> np.ndarray:
    return result.tiles[name].astype(np.float64)


def test_table_examples_compute_what_their_setups_imply() -> None:
    """Spot values of a few examples, computed by hand from their setup lines."""
    matmul = _run_example(ISA.instructions["tensor.matmul"])
    assert np.all(_final_tile(matmul, "acc") == 128 * 0.25 * 2.0)
    activation = _run_example(ISA.instructions["scalar.activation"])
    assert np.allclose(_final_tile(activation, "rowsum"), 512 * np.exp(0.0), rtol=1e-6)
    scalar = _run_example(ISA.instructions["vector.tensor_scalar"])
    assert np.all(_final_tile(scalar, "y") == (3.0 - 1.0) * 0.5)
    aggr = _run_example(ISA.instructions["vector.bn_aggr"])
    values = np.arange(512, dtype=np.float64)
    assert np.allclose(_final_tile(aggr, "mv"), [values.mean(), values.var()], rtol=1e-6)


def test_import_is_light() -> None:
    code = ("import sys, neuronemu; "
            "heavy = [m for m in ('numba', 'lark', 'click', 'ml_dtypes') if m in sys.modules]; "
            "print(heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


def test_every_kernel_has_its_wrapper() -> None:
    from neuronemu.exec import kernels

    for entry in kernels.all_entries():
        assert kernels.wrapper(entry).__name__ == entry


def test_a_kernel_imports_only_its_semantics_module() -> None:
    """A run pays numba's set-up of a semantics module's functions only when it uses one."""
    code = ("import sys; from neuronemu.exec import kernels; kernels.wrapper('dma__copy'); "
            "print(sorted(m for m in sys.modules if m.startswith('neuronemu.semantics.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=ROOT)
    assert result.stdout.strip() == "['neuronemu.semantics.alu', 'neuronemu.semantics.dma']"


def _swap_arguments(text: str, entry: str, first: str, second: str) -> str:
    """``text`` (a table) with two argument lines of ``[entry]`` swapped."""
    head, _, body = text.partition(f"[{entry}]\n")
    lines = body.split("\n")
    a = next(i for i, line in enumerate(lines) if f'name = "{first}"' in line)
    b = next(i for i, line in enumerate(lines) if f'name = "{second}"' in line)
    lines[a], lines[b] = lines[b], lines[a]
    return f"{head}[{entry}]\n" + "\n".join(lines)


def test_entries_sharing_a_semantics_function_must_agree_on_its_arguments(tmp_path) -> None:
    """The compiled function reads arguments by slot: GpSimd's tensor_scalar declaring op0 and
    operand0 the other way round from Vector's would swap them silently. The loader refuses it
    and the generator reports it with the entry's origin, without a traceback."""
    import shutil

    from neuronemu.isa.resources import isa_dir
    from neuronemu.isa.table import TableError

    bad = tmp_path / "isa"
    shutil.copytree(isa_dir(), bad)
    table = bad / "gpsimd.toml"
    table.write_text(_swap_arguments(table.read_text(), "tensor_scalar", "op0", "operand0"))
    with pytest.raises(TableError, match=r"^isa/gpsimd.toml: \[tensor_scalar\]: shares semantics "
                                         r"'elementwise.tensor_scalar' with isa/vector.toml: "
                                         r"\[tensor_scalar\].*argument 2 is 'operand0' \(scalar\) "
                                         r"here but 'op0' \(enum\)"):
        load_isa(str(bad))
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_isa.py"), "--check",
                             "--isa", str(bad)], check=False, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("error: isa/gpsimd.toml: [tensor_scalar]: shares semantics")
    assert "Traceback" not in result.stderr


def test_argument_names_are_the_slots_of_the_table() -> None:
    """Each generated name is its argument's position in every entry of its semantics function
    (an independent reading of the tables, not the generator's)."""
    for d in INSTRUCTIONS:
        module, function = d.semantics.split(".")
        names = importlib.import_module(f"neuronemu.isa.args.{module}")
        for slot, a in enumerate(d.args):
            key = f"{function}_{a.name}".upper().replace(".", "_")
            if a.timing:   # read by the timing model only: no slot of the function's
                assert not hasattr(names, key), (d.name, a.name)
                continue
            assert getattr(names, key) == slot, (d.name, a.name)


def test_generated_names_may_not_collide(tmp_path) -> None:
    """activation's reduce_res and an argument res of activation_reduce would both be named
    ACTIVATION_REDUCE_RES: the generator refuses rather than let one shadow the other."""
    import shutil

    from neuronemu.isa.resources import isa_dir

    bad = tmp_path / "isa"
    shutil.copytree(isa_dir(), bad)
    table = bad / "scalar.toml"
    head, _, body = table.read_text().partition("[activation_reduce]\n")
    table.write_text(f"{head}[activation_reduce]\n" + body.replace('name = "alpha"',
                                                                    'name = "res"', 1))
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_isa.py"), "--check",
                             "--isa", str(bad)], check=False, capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("error: isa/scalar.toml: [activation_reduce]: argument 'res' "
                                    "would be named ACTIVATION_REDUCE_RES"), result.stderr


def test_a_timing_argument_comes_last_and_need_not_be_shared(tmp_path) -> None:
    """A keyword only the timing model reads (``timing = true``) is not a slot of the
    semantics function: one entry may declare it where the others sharing the function do
    not; before another argument it would shift that argument's slot, which is refused."""
    import shutil

    from neuronemu.isa.resources import isa_dir
    from neuronemu.isa.table import TableError

    def with_arg(entry_name: str, before: str | None, line: str) -> Path:
        """The tables with ``line`` added to vector's ``entry_name``: before its argument
        ``before``, or after its last."""
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        shutil.copytree(isa_dir(), root)
        table = root / "vector.toml"
        head, rest = table.read_text().split(f"[{entry_name}]\n", 1)
        entry, tail = rest.split("\n[", 1)
        lines = entry.split("\n")
        if before is None:
            at = max(i for i, t in enumerate(lines) if t.startswith("  { name = "))
            lines.insert(at + 1, line)
        else:
            at = next(i for i, t in enumerate(lines) if t.startswith(f'  {{ name = "{before}"'))
            lines.insert(at, line)
        table.write_text(f"{head}[{entry_name}]\n" + "\n".join(lines) + f"\n[{tail}")
        return root

    hint = ('  {{ name = "{}", kind = "bool", keyword = true, default = false, timing = true, '
            'doc = "a timing hint" }},')
    isa = load_isa(str(with_arg("tensor_copy", None, hint.format("late"))))
    assert [a.name for a in isa.instructions["vector.tensor_copy"].args][-1] == "late"
    with pytest.raises(TableError, match=r"'early' is a timing argument: it comes after every "
                                         r"other argument"):
        load_isa(str(with_arg("tensor_scalar", "op0", hint.format("early"))))
