"""Outputs all-or-none: destinations checked before the run, temporaries renamed only when all
were written, clean errors with exit codes and one JSON document (issue 17, item 4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neuronemu import files
from neuronemu.cli import main

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = str(ROOT / "programs" / "examples" / "vector_add.s")
# two outputs, so --output and --output-dir can collide; the spin after them shows whether a
# destination error came before the run (exit 4) or after it (the instruction limit, exit 1)
TWO_OUTPUTS = """.hbm c float32[128, 4] output
.hbm d float32[128, 4] output
.sbuf t float32[128, 4]
    vector.memset t, value=1.0
    dma.copy c, t, queue=0
    dma.copy d, t, queue=0
"""
SPIN = TWO_OUTPUTS + "spin:\n    ctrl.jmp spin\n"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _kernel(tmp_path: Path, text: str = TWO_OUTPUTS) -> str:
    path = tmp_path / "k.s"
    path.write_text(text)
    return str(path)


def _error(result, code: int) -> dict:
    """The one JSON error document on stdout, with the exit code it claims."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["exit_code"] == code
    return error


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file()}


# --- collisions ------------------------------------------------------------------------------

@pytest.mark.parametrize("make_args", [
    lambda d: ["--output", f"c={d / 'x.npy'}", "--output", f"d={d / 'x.npy'}"],
    lambda d: ["--output", f"c={d / 'x.npy'}", "--output", f"d={d / 'sub' / '..' / 'x.npy'}"],
    lambda d: ["--output", f"c={d / 'out' / 'd.npy'}", "--output-dir", str(d / "out")],
    lambda d: ["--output", f"c={d / 'x.npy'}", "--trace", str(d / "x.npy")],
    lambda d: ["--output-dir", str(d), "--trace", str(d / "d.npy")],
])
def test_two_destinations_with_one_path(tmp_path: Path, make_args) -> None:
    (tmp_path / "sub").mkdir()
    kernel = _kernel(tmp_path, SPIN)
    result = invoke("run", kernel, *make_args(tmp_path), "--json")
    error = _error(result, 4)
    assert "both write" in error["message"]
    assert not (tmp_path / "x.npy").exists() and not (tmp_path / "out").exists()


def test_a_symlink_to_another_destination_collides(tmp_path: Path) -> None:
    (tmp_path / "link.npy").symlink_to(tmp_path / "x.npy")
    result = invoke("run", _kernel(tmp_path), "--output", f"c={tmp_path / 'x.npy'}",
                    "--output", f"d={tmp_path / 'link.npy'}", "--json")
    assert "both write" in _error(result, 4)["message"]


@pytest.mark.parametrize("option", ["--output", "--input"])
def test_a_name_given_twice_is_a_usage_error_with_json(tmp_path: Path, option: str) -> None:
    result = invoke("run", _kernel(tmp_path), option, f"c={tmp_path / 'a.npy'}", option,
                    f"c={tmp_path / 'b.npy'}", "--json")
    error = _error(result, 2)
    assert error["type"] == "UsageError" and error["option"] == option
    assert "'c' is given twice" in error["message"]
    assert "Usage:" in result.stderr


# --- unusable destinations, found before the run ---------------------------------------------

def test_existing_directory_as_destination(tmp_path: Path) -> None:
    (tmp_path / "c.npy").mkdir()
    result = invoke("run", _kernel(tmp_path, SPIN), "--output", f"c={tmp_path / 'c.npy'}",
                    "--json")
    assert "is a directory" in _error(result, 4)["message"]


def test_trace_to_an_existing_directory(tmp_path: Path) -> None:
    result = invoke("run", _kernel(tmp_path, SPIN), "--trace", str(tmp_path), "--json")
    # click's own check of --trace (dir_okay=False): a usage error, also as JSON
    assert _error(result, 2)["option"] == "--trace"


def test_output_dir_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = invoke("run", _kernel(tmp_path, SPIN), "--output-dir",
                    str(tmp_path / "file" / "out"), "--json")
    assert "is not a directory" in _error(result, 4)["message"]


def test_missing_output_directory(tmp_path: Path) -> None:
    result = invoke("run", _kernel(tmp_path, SPIN), "--output",
                    f"c={tmp_path / 'nope' / 'c.npy'}", "--json")
    error = _error(result, 4)
    assert "--output c: cannot write" in error["message"] and "no such directory" in error["message"]


def _unwritable_directory(tmp_path: Path) -> Path:
    directory = tmp_path / "locked"
    directory.mkdir()
    directory.chmod(0o500)
    try:
        (directory / "probe").touch()
    except OSError:
        return directory
    (directory / "probe").unlink()
    # root ignores permissions: fall back to a read-only system directory if there is one
    for candidate in (Path("/sys"), Path("/proc/self")):
        try:
            (candidate / "neuronemu-probe").touch()
        except OSError:
            return candidate
    pytest.skip("no directory this user cannot write")


def test_unwritable_directory_is_found_before_the_run(tmp_path: Path) -> None:
    locked = _unwritable_directory(tmp_path)
    try:
        result = invoke("run", _kernel(tmp_path, SPIN), "--max-instructions", "10000000000",
                        "--output", f"c={locked / 'c.npy'}", "--json")
        error = _error(result, 4)  # exit 1 would mean the kernel ran (and hit its limit) first
        assert "--output c: cannot write" in error["message"]
    finally:
        if locked.is_relative_to(tmp_path):
            locked.chmod(0o700)


# --- all or none -----------------------------------------------------------------------------

def test_a_failed_write_leaves_existing_files_and_no_temporaries(tmp_path: Path,
                                                                 monkeypatch) -> None:
    kernel = _kernel(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "c.npy").write_bytes(b"old c")
    (out / "d.npy").write_bytes(b"old d")
    before = _files(tmp_path)
    calls = []

    def failing_writer(array):
        def write(f):
            calls.append(array.shape)
            if len(calls) == 2:  # c was written in full; d fails half-way
                f.write(b"half")
                raise OSError(28, "No space left on device")
            np.save(f, array)
        return write
    monkeypatch.setattr(files, "npy_writer", failing_writer)
    result = invoke("run", kernel, "--output-dir", str(out), "--json")
    error = _error(result, 4)
    assert "No space left on device" in error["message"]
    assert len(calls) == 2
    assert _files(tmp_path) == before  # old files intact, no .partial left


def test_a_failed_write_removes_the_output_dir_it_made(tmp_path: Path, monkeypatch) -> None:
    kernel = _kernel(tmp_path)

    def failing_writer(array):
        def write(f):
            raise OSError(28, "No space left on device")
        return write
    monkeypatch.setattr(files, "npy_writer", failing_writer)
    result = invoke("run", kernel, "--output-dir", str(tmp_path / "new" / "out"), "--json")
    _error(result, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.s"]


def test_writes_nothing_when_the_run_fails(tmp_path: Path) -> None:
    result = invoke("run", _kernel(tmp_path, SPIN), "--max-instructions", "100",
                    "--output-dir", str(tmp_path / "new" / "out"), "--trace",
                    str(tmp_path / "t.json"), "--json")
    assert _error(result, 1)["limit"] == "instructions"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.s"]


def test_success_replaces_files_and_keeps_normal_permissions(tmp_path: Path) -> None:
    (tmp_path / "c.npy").write_bytes(b"old")
    result = invoke("run", _kernel(tmp_path), "--output", f"c={tmp_path / 'c.npy'}",
                    "--output-dir", str(tmp_path / "a" / "b"), "--trace",
                    str(tmp_path / "t.json"), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["outputs"]["d"]["path"] == str(tmp_path / "a" / "b" / "d.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), np.ones((128, 4), np.float32))
    assert not (tmp_path / "a" / "b" / "c.npy").exists()  # --output wins for c
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "t.json").stat().st_mode & 0o777 == 0o666 & ~umask
    assert not [p for p in tmp_path.rglob("*.partial")]


# --- option ranges ---------------------------------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["--seed", "-1"], "--seed"),
    (["--seed", str(2 ** 63)], "--seed"),
    (["--rounding-seed", str(2 ** 64)], "--rounding-seed"),
    (["--max-instructions", str(2 ** 63)], "--max-instructions"),
    (["--max-instructions", "0"], "--max-instructions"),
    (["--timeout", "-1"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--timeout", "soon"], "--timeout"),
    (["--topology", "trn2.48xlarge", "--ranks-per-chip", str(2 ** 63)], "--ranks-per-chip"),
])
def test_integer_options_out_of_range(args: list[str], option: str) -> None:
    result = invoke("run", VECTOR_ADD, *args, "--json")
    error = _error(result, 2)
    assert error["type"] == "UsageError" and error["option"] == option
    assert "Usage:" in result.stderr


def test_largest_legal_seed_runs() -> None:
    result = invoke("run", VECTOR_ADD, "--seed", str(2 ** 63 - 1), "--rounding-seed",
                    str(2 ** 63 - 1), "--stochastic-rounding", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["seed"] == 2 ** 63 - 1
