"""What a run does with the files it is given (issue 30): devices, FIFOs and symlinks written
through, never replaced; read-only files refused; no partial file left by SIGTERM; bf16 saved
without a second full-size copy; `.npy` from a pipe; a clear word on `.npy` files that lost their
bf16 type; assembler warnings kept when the run then fails."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from neuronemu import api, files, report
from neuronemu.cli import main
from neuronemu.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
COPY = """.hbm a float32[128, 4] input
.hbm c float32[128, 4] output
.sbuf t float32[128, 4]
    dma.copy t, a, queue=0
    dma.copy c, t, queue=0
"""
ONES = """.hbm c float32[128, 4] output
.hbm d float32[128, 4] output
.sbuf t float32[128, 4]
    vector.memset t, value=1.0
    dma.copy c, t, queue=0
    dma.copy d, t, queue=0
"""
SPIN = ONES + "spin:\n    ctrl.jmp spin\n"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _kernel(tmp_path: Path, text: str = ONES) -> str:
    path = tmp_path / "k.s"
    path.write_text(text)
    return str(path)


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _device(tmp_path: Path, name: str, minor: int) -> Path:
    """A private copy of /dev/null (minor 3) or /dev/full (minor 7): the real ones are shared
    by everything on the machine, and the old behaviour replaced them."""
    path = tmp_path / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        with open(path, "wb"):
            pass
    except (PermissionError, AttributeError, OSError) as e:
        pytest.skip(f"cannot make a device node here (needs root and a mount without nodev): "
                    f"{e}")
    return path


def _subprocess(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "neuronemu", *args], env=env, **kwargs)


# --- item 1: devices, FIFOs, symlinks, read-only files ---------------------------------------

def test_an_output_to_a_device_is_written_through(tmp_path: Path) -> None:
    null = _device(tmp_path, "null", 3)
    result = invoke("run", _kernel(tmp_path), "--output", f"c={null}", "--output",
                    f"d={null}", "--json")   # one device may take several outputs
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISCHR(null.stat().st_mode)   # still the device, not a regular .npy file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.s", "null"]
    assert json.loads(result.stdout)["outputs"]["c"]["path"] == str(null)


def test_a_full_device_is_a_clean_error_and_nothing_else_is_written(tmp_path: Path) -> None:
    full = _device(tmp_path, "full", 7)
    result = invoke("run", _kernel(tmp_path), "--output", f"c={tmp_path / 'c.npy'}",
                    "--output", f"d={full}", "--json")
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert "--output d: cannot write" in json.loads(result.stdout)["error"]["message"]
    assert "No space left on device" in result.stderr
    assert stat.S_ISCHR(full.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "k.s"]   # c not replaced


def test_asm_and_disasm_write_through_a_device(tmp_path: Path) -> None:
    null = _device(tmp_path, "null", 3)
    kernel = _kernel(tmp_path)
    assert invoke("asm", kernel, "-o", str(null)).exit_code == 0
    assert invoke("asm", kernel, "-o", str(tmp_path / "k.neo")).exit_code == 0
    assert invoke("disasm", str(tmp_path / "k.neo"), "-o", str(null)).exit_code == 0
    assert stat.S_ISCHR(null.stat().st_mode)


def test_an_output_to_a_fifo_reaches_its_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result = invoke("run", _kernel(tmp_path), "--output", f"c={fifo}")
    reader.join(timeout=30)
    if reader.is_alive():   # the FIFO was replaced: let the reader go before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=5)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert received == [_npy_bytes(np.ones((128, 4), np.float32))]


def test_an_output_through_a_symlink_replaces_its_target_and_keeps_the_link(
        tmp_path: Path) -> None:
    target, link = tmp_path / "data" / "c.npy", tmp_path / "c.npy"
    target.parent.mkdir()
    target.write_bytes(b"old")
    target.chmod(0o600)
    link.symlink_to(target)
    result = invoke("run", _kernel(tmp_path), "--output", f"c={link}")
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and link.resolve() == target
    np.testing.assert_array_equal(np.load(target), np.ones((128, 4), np.float32))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600   # its permissions kept, as cp keeps
    assert not list(tmp_path.rglob("*.partial"))


def test_output_to_the_processs_own_stdout_is_written_through(tmp_path: Path) -> None:
    """/dev/stdout is a link into /proc; the same through a link of our own, which the old
    behaviour replaced by a regular file (as it did /dev/stdout itself, as root)."""
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")
    process = _subprocess("run", _kernel(tmp_path), "--output", f"c={stdout}",
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err.decode()
    assert stdout.is_symlink()
    np.testing.assert_array_equal(np.load(io.BytesIO(out)), np.ones((128, 4), np.float32))
    assert b"output   c  float32[128, 4]" in out   # the report follows the array


def test_a_read_only_file_is_refused_before_the_run(tmp_path: Path) -> None:
    existing = tmp_path / "c.npy"
    existing.write_bytes(b"keep me")
    existing.chmod(0o444)
    result = invoke("run", _kernel(tmp_path, SPIN), "--output", f"c={existing}", "--json")
    assert result.exit_code == 4, (result.stdout, result.stderr)   # 1: it ran into the limit
    message = json.loads(result.stdout)["error"]["message"]
    assert "is read-only (mode 0444)" in message and "not replaced" in message
    assert existing.read_bytes() == b"keep me"


# --- item 3: SIGTERM while writing -----------------------------------------------------------

def test_sigterm_while_writing_leaves_no_partial_file(tmp_path: Path) -> None:
    """c goes to a temporary first; d, a FIFO nobody reads, then blocks the writer (as cp
    blocks): the moment to send SIGTERM, with a partial file on disk."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    process = _subprocess("run", _kernel(tmp_path), "--output", f"c={out / 'c.npy'}",
                          "--output", f"d={fifo}", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not list(out.glob(".c.npy.*.partial")):
        assert process.poll() is None, ("ended without blocking on the FIFO",
                                        process.communicate())
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGTERM   # ended by the signal, as the sender asked
    assert list(out.iterdir()) == []
    assert stat.S_ISFIFO(fifo.stat().st_mode)


# --- item 4: bf16 outputs saved without a second full-size copy ------------------------------

def test_a_bf16_output_is_saved_without_a_full_size_float32_copy(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """Memory allocated after the run (tracemalloc counts numpy's buffers): the saved file and
    the report need pieces, not a float32 copy of the output (let alone two: the old code made
    one to write and one to print saved_dtype). The pieces are shrunk so that they are small
    next to the array."""
    rows, columns = 128, 16384
    kernel = _kernel(tmp_path, f".hbm c bfloat16[{rows}, {columns}] output\n"
                               f".sbuf t bfloat16[128, 4]\n    vector.memset t, value=1.0\n")
    monkeypatch.setattr(report, "SUMMARY_PIECE", 1 << 14, raising=False)
    monkeypatch.setattr(files, "WIDEN_PIECE", 1 << 14, raising=False)
    real_run, after_run = api.run, {}

    def run(*args, **kwargs):
        result = real_run(*args, **kwargs)
        tracemalloc.reset_peak()
        after_run["bytes"] = tracemalloc.get_traced_memory()[0]
        return result

    monkeypatch.setattr(api, "run", run)
    tracemalloc.start()
    try:
        result = invoke("run", kernel, "--output", f"c={tmp_path / 'c.npy'}", "--json")
        extra = tracemalloc.get_traced_memory()[1] - after_run["bytes"]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["outputs"]["c"]["saved_dtype"] == "float32"
    float32_copy = rows * columns * 4
    assert extra < float32_copy / 2, f"{extra / 2**20:.1f} MiB allocated after the run"
    saved = np.load(tmp_path / "c.npy")
    assert saved.dtype == np.float32 and saved.shape == (rows, columns)


@pytest.mark.parametrize("dtype, saved", [(ml_dtypes.bfloat16, np.float32),
                                          (ml_dtypes.float8_e4m3fn, np.float32),
                                          (np.float32, np.float32), (np.int8, np.int8),
                                          (np.bool_, np.bool_)])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_the_writer_writes_the_bytes_of_np_save(monkeypatch, dtype, saved, layout: str) -> None:
    """bf16/fp8 as np.save writes them widened to float32 (exact); other dtypes as np.save
    writes them; in pieces that end mid-row, whatever the array's memory layout."""
    monkeypatch.setattr(files, "WIDEN_PIECE", 1000)
    values = np.random.default_rng(3).standard_normal((37, 182)).astype(dtype)
    values = {"C": values, "F": np.asfortranarray(values), "strided": values[:, ::2]}[layout]
    buffer = io.BytesIO()
    files.npy_writer(values)(buffer)
    assert buffer.getvalue() == _npy_bytes(values.astype(saved))


# --- item 13: --input from a pipe ------------------------------------------------------------

def test_input_from_a_pipe(tmp_path: Path) -> None:
    a = np.random.default_rng(7).standard_normal((128, 4)).astype(np.float32)
    process = _subprocess("run", _kernel(tmp_path, COPY), "--input", "a=/dev/stdin",
                          "--output", f"c={tmp_path / 'c.npy'}", stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = process.communicate(_npy_bytes(a), timeout=300)
    assert process.returncode == 0, err.decode()
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), a)


@pytest.mark.parametrize("data, fragment", [
    (b"", "is empty (0 bytes)"),
    (_npy_bytes(np.zeros((128, 4), np.float32))[:-10], "the stream ended after 2038 bytes"),
    (b"\x93NUMPY", "cannot read"),
], ids=["empty", "truncated", "no-header"])
def test_a_bad_pipe_is_a_clean_input_error(tmp_path: Path, data: bytes, fragment: str) -> None:
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as f:
            f.write(data)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        with pytest.raises(InputError, match=re.escape(fragment)):
            files.load_npy(f"/dev/fd/{read}", "--input a")
    finally:
        feeder.join(timeout=5)
        os.close(read)


def test_a_pipe_in_fortran_order_reads_as_np_load_reads_a_file(tmp_path: Path) -> None:
    a = np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4))
    read, write = os.pipe()
    threading.Thread(target=lambda: os.write(write, _npy_bytes(a)) and os.close(write),
                     daemon=True).start()
    try:
        np.testing.assert_array_equal(files.load_npy(f"/dev/fd/{read}", "--input a"), a)
    finally:
        os.close(read)


# --- item 16: a .npy that lost its bf16 type -------------------------------------------------

def test_an_untyped_bf16_npy_says_why_and_what_to_save(tmp_path: Path) -> None:
    kernel = _kernel(tmp_path, COPY.replace("float32", "bfloat16"))
    a = np.random.default_rng(2).standard_normal((128, 4)).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "a.npy", a)   # numpy writes |V2: it has no name for bfloat16
    result = invoke("run", kernel, "--input", f"a={tmp_path / 'a.npy'}", "--json")
    assert result.exit_code == 4, (result.stdout, result.stderr)
    message = json.loads(result.stdout)["error"]["message"]
    assert "(|V2)" in message and "cannot record bfloat16" in message
    assert "a.astype(np.float32)" in message
    # the advice works, and exactly: float32 holds every bf16 value
    np.save(tmp_path / "a.npy", a.astype(np.float32))
    result = invoke("run", kernel, "--input", f"a={tmp_path / 'a.npy'}", "--output",
                    f"c={tmp_path / 'c.npy'}")
    assert result.exit_code == 0, result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), a.astype(np.float32))


# --- item 15: assembler warnings kept when the run fails -------------------------------------

WARNED_SPIN = SPIN.replace("value=1.0", "value=1/3")


def test_assembler_warnings_are_kept_when_the_run_fails(tmp_path: Path) -> None:
    kernel = _kernel(tmp_path, WARNED_SPIN)
    text = invoke("run", kernel, "--max-instructions", "100")
    assert text.exit_code == 1
    warning = text.stderr.index("warning: integer division 1/3 is 0")
    assert warning < text.stderr.index("error: instruction limit of 100")
    as_json = invoke("run", kernel, "--max-instructions", "100", "--json")
    doc = json.loads(as_json.stdout)
    assert doc["error"]["limit"] == "instructions"
    assert [(w["line"], w["column"]) for w in doc["warnings"]] == [(4, 28)]
    assert "integer division 1/3 is 0" in doc["warnings"][0]["message"]
