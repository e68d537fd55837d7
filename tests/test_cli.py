"""The command line: outputs, JSON, exit codes (README), bad input with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neuronemu.cli import main

ROOT = Path(__file__).resolve().parents[1]
VECTOR_ADD = str(ROOT / "programs" / "examples" / "vector_add.s")
SHAPE = (128, 512)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def assert_clean_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_run_bundled_kernel_without_flags() -> None:
    result = invoke("run", VECTOR_ADD)
    assert result.exit_code == 0, result.stderr
    assert "c  float32[128, 512]" in result.stdout
    assert "dma 3" in result.stdout and "vector 1" in result.stdout
    assert "min" in result.stdout and "mean" in result.stdout


def test_run_by_bundled_name() -> None:
    assert invoke("run", "softmax").exit_code == 0


def test_json_is_one_document_on_stdout() -> None:
    result = invoke("run", VECTOR_ADD, "--json", "--target", "trn1")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    assert doc["target"] == "trn1"
    assert doc["instructions"] == {"dma": 3, "vector": 1, "total": 4}
    assert doc["outputs"]["c"]["shape"] == [128, 512]
    assert doc["outputs"]["c"]["dtype"] == "float32"
    assert "path" not in doc["outputs"]["c"]
    # nothing on stderr but, on a machine where this code was never compiled, the one-time
    # compile notice (docs/engine.md)
    assert all(line.startswith("neuronemu: compiling")
               for line in result.stderr.splitlines()), result.stderr


def test_inputs_and_outputs_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(SHAPE).astype(np.float32)
    b = rng.standard_normal(SHAPE)  # float64: rounded to the declared float32
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / "sum.npy"
    result = invoke("run", VECTOR_ADD, "--input", f"a={tmp_path / 'a.npy'}", "--input",
                    f"b={tmp_path / 'b.npy'}", "--output", f"c={out}", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["outputs"]["c"]["path"] == str(out)
    np.testing.assert_array_equal(np.load(out), a + b.astype(np.float32))


def test_output_dir_writes_every_output(tmp_path: Path) -> None:
    result = invoke("run", "layernorm", "--output-dir", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    saved = np.load(tmp_path / "out" / "y.npy")
    # bf16 cannot be stored in .npy: widened exactly to float32, and the JSON says so
    assert saved.dtype == np.float32 and doc["outputs"]["y"]["saved_dtype"] == "float32"
    assert saved.shape == (256, 1024)


def test_same_seed_same_files_other_seed_differs(tmp_path: Path) -> None:
    for name, seed in (("s0", "0"), ("s0again", "0"), ("s1", "1")):
        assert invoke("run", VECTOR_ADD, "--seed", seed, "--output",
                      f"c={tmp_path / name}.npy").exit_code == 0
    s0, again, s1 = (np.load(tmp_path / f"{n}.npy") for n in ("s0", "s0again", "s1"))
    assert s0.tobytes() == again.tobytes()
    assert s0.tobytes() != s1.tobytes()


@pytest.mark.parametrize("make_input, fragments", [
    (lambda d: str(d / "missing.npy"), ["--input a: no such file"]),
    (lambda d: _save(d, np.zeros((128, 256), np.float32)),
     ["input 'a' has shape (128, 256)", "float32[128, 512]"]),
    (lambda d: _save(d, np.array(["x"] * 65536).reshape(SHAPE)),
     ["input 'a' has dtype <U1", "float32"]),
    (lambda d: _write(d, b"not a numpy file"), ["--input a: cannot read"]),
])
def test_bad_input_files_exit_4_and_write_nothing(tmp_path: Path, make_input, fragments) -> None:
    out_dir = tmp_path / "out"
    result = invoke("run", VECTOR_ADD, "--input", f"a={make_input(tmp_path)}",
                    "--output-dir", str(out_dir))
    assert_clean_error(result, 4, *fragments)
    assert not out_dir.exists() or not any(out_dir.iterdir())


def _save(directory: Path, array: np.ndarray) -> str:
    path = directory / "input.npy"
    np.save(path, array)
    return str(path)


def _write(directory: Path, data: bytes) -> str:
    path = directory / "input.npy"
    path.write_bytes(data)
    return str(path)


def test_unknown_input_name(tmp_path: Path) -> None:
    path = _save(tmp_path, np.zeros(SHAPE, np.float32))
    assert_clean_error(invoke("run", VECTOR_ADD, "--input", f"q={path}"), 4,
                       "kernel has no tensor 'q'", "inputs: a, b")


def test_unknown_output_name_writes_nothing(tmp_path: Path) -> None:
    result = invoke("run", VECTOR_ADD, "--output", f"c={tmp_path / 'c.npy'}", "--output",
                    f"zz={tmp_path / 'zz.npy'}")
    assert_clean_error(result, 4, "the kernel has no output 'zz'", "outputs: c")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_leaves_no_partial_files(tmp_path: Path) -> None:
    result = invoke("run", "layernorm", "--output", f"y={tmp_path / 'missing_dir' / 'y.npy'}")
    assert_clean_error(result, 4, "--output y: cannot write")
    assert list(tmp_path.iterdir()) == []


def test_malformed_option_is_a_usage_error() -> None:
    result = invoke("run", VECTOR_ADD, "--input", "a.npy")
    assert result.exit_code == 2
    assert "expected NAME=FILE.npy" in result.stderr


def test_bad_target_lists_the_legal_ones() -> None:
    result = invoke("run", VECTOR_ADD, "--target", "trn9")
    assert result.exit_code == 2
    assert "trn1" in result.stderr and "trn3" in result.stderr


def test_missing_kernel_file() -> None:
    assert_clean_error(invoke("run", "no_such_kernel.s"), 4, "no such kernel file")


BAD_KERNEL = """.sbuf t float32[128, 512]
vector.tensor_tensor t, t, t, op=ad
"""


def test_assembly_error_is_located_with_a_caret(tmp_path: Path) -> None:
    path = tmp_path / "bad.s"
    path.write_text(BAD_KERNEL)
    result = invoke("run", str(path))
    assert_clean_error(result, 3, f"{path}:2:34: error: vector.tensor_tensor argument 'op'",
                       "did you mean 'add'?", "    2 | vector.tensor_tensor t, t, t, op=ad\n",
                       "^~")
    assert result.stdout == ""


def test_assembly_error_with_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.s"
    path.write_text(BAD_KERNEL)
    result = invoke("check", str(path), "--json")
    assert result.exit_code == 3
    error = json.loads(result.stdout)["error"]
    assert (error["type"], error["line"], error["column"], error["exit_code"]) == (
        "AsmError", 2, 34, 3)
    assert "error:" in result.stderr


def test_runtime_fault_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "loop.s"
    path.write_text("ctrl.mov r0, 0\nspin:\nctrl.jmp spin\n")
    result = invoke("run", str(path), "--max-instructions", "1000")
    assert_clean_error(result, 1, "instruction limit of 1000 reached", "loop.s:3:")


def test_check_ok() -> None:
    result = invoke("check", VECTOR_ADD)
    assert result.exit_code == 0
    assert "ok" in result.stdout and "4 instructions" in result.stdout


def test_isa_listing_and_entry() -> None:
    listing = invoke("isa")
    assert listing.exit_code == 0
    assert "tensor.matmul" in listing.stdout and "vector.bn_aggr" in listing.stdout
    entry = invoke("isa", "tensor.matmul")
    assert entry.exit_code == 0 and "nki.isa.nc_matmul" in entry.stdout
    doc = json.loads(invoke("isa", "--json").stdout)
    names = {e["mnemonic"]: e for e in doc["instructions"]}
    assert names["scalar.activation"]["nki"] == "nki.isa.activation"
    assert names["scalar.activation"]["targets"] == ["trn1", "trn2", "trn3"]


def test_isa_unknown_suggests() -> None:
    """An unknown name is a usage error (exit 2; 4 is for bad files)."""
    result = invoke("isa", "tensor_tensr")
    assert_clean_error(result, 2, "unknown instruction, engine or enum value 'tensor_tensr'", "tensor_tensor")


def test_isa_engine_lists_its_instructions() -> None:
    result = invoke("isa", "vector")
    assert result.exit_code == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert "vector.tensor_tensor" in names and all(n.startswith("vector.") for n in names)


def test_isa_reference_documents_every_instruction() -> None:
    """docs/isa.md (tools/gen_isa.py) has a section for every instruction of the tables."""
    from neuronemu.isa.table import load_isa

    text = (Path(__file__).resolve().parents[1] / "docs" / "isa.md").read_text()
    missing = [name for name in load_isa().instructions if f"### `{name}`" not in text]
    assert not missing, f"docs/isa.md lacks {missing}: run python -m tools.gen_isa"


def test_programs_fit_the_terminal_and_keep_whole_sentences() -> None:
    result = CliRunner().invoke(main, ["programs"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    entries = " ".join(lines)
    assert "collectives/all_reduce" in entries and "examples/vector_add" in entries
    assert "e.g." not in [line.split()[-1] for line in lines]   # no sentence cut at e.g.


def test_programs_lists_examples() -> None:
    result = invoke("programs")
    assert result.exit_code == 0
    for name in ("vector_add", "matmul_tile", "matmul_tiled", "softmax", "layernorm"):
        assert f"examples/{name}" in result.stdout


def test_python_dash_m_entry_point() -> None:
    result = subprocess.run([sys.executable, "-m", "neuronemu", "run", VECTOR_ADD, "--json"],
                            capture_output=True, text=True, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["instructions"]["total"] == 4


def test_asm_and_check_refuse_a_target_other_than_the_topology_chips(tmp_path: Path) -> None:
    """`asm --target trn3` took `.topology trn2.48xlarge` and wrote a .neo that did not
    assemble again (its text says both .target trn3 and the trn2 topology; issue 30)."""
    kernel = str(ROOT / "programs" / "collectives" / "ring_allreduce.s")
    binary = tmp_path / "k.neo"
    for command in (["asm", kernel, "--target", "trn3", "-o", str(binary)],
                    ["check", kernel, "--target", "trn3"]):
        result = invoke(*command)
        assert result.exit_code == 3, result.output
        assert (f"{kernel}:3:1: error: topology trn2.48xlarge is made of trn2 chips, but "
                f"--target trn3 asks for trn3: give --target trn2 (or none)") in result.stderr
    assert not binary.exists()
    ok = invoke("asm", kernel, "--target", "trn2", "-o", str(binary))
    assert ok.exit_code == 0, ok.output
    again = invoke("check", str(binary))
    assert again.exit_code == 0, again.output


def test_explicit_sync_past_its_trace_is_located_and_names_the_cli_option(tmp_path: Path
                                                                        ) -> None:
    """A .sync explicit run past 2^20 timed instructions failed unlocated, naming the API's
    max_trace_events, which the CLI did not have (issue 30): --max-trace-events N."""
    kernel = tmp_path / "x.s"
    kernel.write_text(".sync explicit\n.sbuf t float32[128, 64]\n    ctrl.mov r0, 0\ntop:\n"
                      "    vector.memset t, value=0.0\n    ctrl.add r0, r0, 1\n"
                      "    ctrl.blt r0, 200, top\n")
    result = invoke("run", str(kernel), "--max-trace-events", "150", "--json")
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert (error["line"], error["column"]) == (1, 1)
    assert error["message"] == (
        "sync mode explicit replays every timed instruction from the trace, but the run "
        "executed 200 of them and the trace holds 150; raise it with --max-trace-events N "
        "(API: max_trace_events=; 168 bytes of memory each), or leave it unset: every "
        "event is then kept")
    assert invoke("run", str(kernel), "--max-trace-events", "200").exit_code == 0
    assert invoke("run", str(kernel)).exit_code == 0   # the default keeps them all
    assert invoke("run", str(kernel), "--max-trace-events", "0").exit_code == 2
