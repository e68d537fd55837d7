"""Inputs: integer values outside the declared dtype are refused, not saturated (issue 17,
item 7); empty and truncated .npy files and headers claiming terabytes are clean exit-4 errors
(item 4, 5); a big input is not copied on its way into HBM (item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from numpy.lib import format as npy

import neuronemu
from neuronemu.cli import main
from neuronemu.errors import InputError
from neuronemu.exec import core

INT_KERNEL = """.hbm x {dtype}[4, 8] input
.hbm y {dtype}[4, 8] output
.sbuf t {dtype}[4, 8]
    dma.copy t, x, queue=0
    dma.copy y, t, queue=0
"""


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _program(dtype: str):
    return neuronemu.assemble(INT_KERNEL.format(dtype=dtype), "k.s")


@pytest.mark.parametrize("dtype, value, low, high", [
    ("int8", 300, -128, 127),
    ("int8", -129, -128, 127),
    ("uint8", -1, 0, 255),
    ("uint8", 256.0, 0, 255),          # an integral float is checked the same way
    ("int16", 40000, -32768, 32767),
    ("uint16", 70000, 0, 65535),
    ("int32", 2 ** 31, -2 ** 31, 2 ** 31 - 1),
    ("uint32", 2 ** 32, 0, 2 ** 32 - 1),
])
def test_integer_input_out_of_range_is_refused(dtype: str, value, low: int, high: int) -> None:
    array = np.zeros((4, 8), np.int64 if isinstance(value, int) else np.float64)
    array[2, 5] = value
    with pytest.raises(InputError) as info:
        neuronemu.run(_program(dtype), {"x": array})
    message = info.value.message
    assert f"input 'x' holds {int(value)}" in message
    assert f"outside the range of {dtype}: {low}..{high}" in message
    assert "flat index 21" in message
    assert info.value.exit_code == 4


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32"])
def test_integer_inputs_at_the_ends_of_the_range_are_exact(dtype: str) -> None:
    info = np.iinfo(dtype)
    array = np.array([info.min, info.max, 0, 1] * 8, np.int64).reshape(4, 8)
    result = neuronemu.run(_program(dtype), {"x": array})
    np.testing.assert_array_equal(result.outputs["y"], array.astype(dtype))


def test_bool_input_accepts_only_0_and_1() -> None:
    array = np.zeros((4, 8), np.int64)
    neuronemu.run(_program("bool_"), {"x": array + 1})
    with pytest.raises(InputError, match="outside the range of bool_: 0..1"):
        neuronemu.run(_program("bool_"), {"x": array + 2})


def test_non_integer_float_into_int_names_the_value() -> None:
    array = np.zeros((4, 8))
    array[0, 3] = 2.5
    with pytest.raises(InputError, match=r"non-integer values \(e.g. 2.5 at flat index 3\)"):
        neuronemu.run(_program("int8"), {"x": array})


def test_cli_out_of_range_input_exit_4_json(tmp_path: Path) -> None:
    kernel = tmp_path / "k.s"
    kernel.write_text(INT_KERNEL.format(dtype="int8"))
    array = np.zeros((4, 8), np.int16)
    array[0, 0] = 300
    np.save(tmp_path / "x.npy", array)
    result = invoke("run", str(kernel), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir",
                    str(tmp_path / "out"), "--json")
    assert result.exit_code == 4
    error = json.loads(result.stdout)["error"]
    assert "input 'x' holds 300" in error["message"] and "-128..127" in error["message"]
    assert error["line"] == 1
    assert not (tmp_path / "out").exists()


# --- .npy files ------------------------------------------------------------------------------

VECTOR_ADD = str(Path(__file__).resolve().parents[2] / "programs" / "examples" / "vector_add.s")


def _bytes(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def _header_only(path: Path, shape: tuple[int, ...], data: bytes = b"") -> str:
    with open(path, "wb") as f:
        npy.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        f.write(data)
    return str(path)


@pytest.mark.parametrize("make, fragment", [
    (lambda d: _bytes(d / "e.npy", b""), "is empty (0 bytes)"),
    (lambda d: _header_only(d / "tb.npy", (1 << 20, 1 << 20), b"\0" * 64),
     "header declares float32[1048576, 1048576] = 4398046511104 bytes (4.0 TiB)"),
    (lambda d: _header_only(d / "short.npy", (128, 512), b"\0" * 100), "only 100 bytes follow"),
    (lambda d: _bytes(d / "magic.npy", b"\x93NUMPY"), "cannot read"),
    (lambda d: str(d), "is a directory"),
])
def test_bad_npy_files_are_clean_input_errors(tmp_path: Path, make, fragment: str) -> None:
    result = invoke("run", VECTOR_ADD, "--input", f"a={make(tmp_path)}", "--json")
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert fragment in json.loads(result.stdout)["error"]["message"]


def test_npy_input_is_memory_mapped(tmp_path: Path, monkeypatch) -> None:
    """A big input is read through a read-only map into HBM, piece by piece: no whole-size copy
    besides HBM itself (the piece size is shrunk so that a small test array has many)."""
    monkeypatch.setattr(core, "SLAB_ELEMENTS", 1000)
    a = np.random.default_rng(1).standard_normal((128, 512)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    from neuronemu import files

    loaded = files.load_npy(str(tmp_path / "a.npy"), "--input a")
    assert isinstance(loaded, np.memmap) and not loaded.flags.writeable
    result = invoke("run", VECTOR_ADD, "--input", f"a={tmp_path / 'a.npy'}", "--output",
                    f"c={tmp_path / 'c.npy'}")
    assert result.exit_code == 0, result.stderr
    b = neuronemu.run(neuronemu.assemble_file(VECTOR_ADD)).tensors["b"]
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), a + b)


# --- initialisers generated piece by piece ---------------------------------------------------

@pytest.mark.parametrize("init, whole", [
    ("normal(0.5, 2)", lambda rng, shape: rng.normal(0.5, 2, size=shape)),
    ("uniform(-1, 3)", lambda rng, shape: rng.uniform(-1, 3, size=shape)),
    ("relu_normal(0, 1)", lambda rng, shape: np.maximum(rng.normal(0, 1, size=shape), 0)),
    ("arange", lambda rng, shape: np.arange(np.prod(shape), dtype=np.float64).reshape(shape)),
    ("identity", lambda rng, shape: np.eye(shape[0])),
])
def test_pieces_equal_one_draw_of_the_whole_shape(monkeypatch, init: str, whole) -> None:
    import zlib

    monkeypatch.setattr(core, "SLAB_ELEMENTS", 777)  # pieces that end mid-row
    program = neuronemu.assemble(f".hbm w float32[96, 96] input init={init}\n", "k.s")
    tensor = program.tensors["w"]
    rng = np.random.default_rng([5, zlib.crc32(b"w")])
    np.testing.assert_array_equal(core.initial_values(tensor, 5), whole(rng, (96, 96)))
    result = neuronemu.run(program, seed=5)
    np.testing.assert_array_equal(result.tensors["w"],
                                  whole(np.random.default_rng([5, zlib.crc32(b"w")]),
                                        (96, 96)).astype(np.float32))


def test_an_input_numpy_cannot_read_is_an_input_error():
    """Found by the third 100,000-case fuzz run (seed 13): a memoryview of a structured array
    (PEP 3118 format 'T{f:a:h:b:}', item size 6) made np.asarray raise RuntimeError; a ragged
    list made it raise ValueError."""
    import neuronemu

    program = neuronemu.assemble(".hbm x int32[1, 1] input\n.hbm y int32[1, 1] output\n")
    structured = memoryview(np.zeros((1, 1), dtype=np.dtype([("a", "<f4"), ("b", "<i2")])))
    with pytest.raises(RuntimeError):
        np.asarray(structured)   # what numpy does with it (the reason for the check)
    for value in (structured, [[1, [2, 3]]]):
        with pytest.raises(neuronemu.InputError, match="input 'x' cannot be read as an array"):
            neuronemu.run(program, inputs={"x": value})
