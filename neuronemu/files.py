"""The files a run reads and writes: checked ``.npy`` loading, and all-or-none saving.

Saving follows what ``cp`` and ``np.save`` do with the destination, while keeping a set of
outputs all-or-none where the filesystem allows it:

- a regular file (or a new one) is written to a hidden temporary beside it and renamed into place
  only when every file of the set was written; a symlink to one is followed, and its target is
  the file replaced (the link stays);
- a device, a FIFO, a socket, or a file reached through ``/proc`` (``/dev/stdout``, ``/dev/fd/N``,
  ``<(...)``) is written through, in place: it is never replaced by a regular file. It is written
  after every temporary, so a failure there (``/dev/full``) still leaves the regular files as
  they were; bytes already written through cannot be taken back;
- an existing file that is read-only (no write permission bit, even for root) is refused before
  the run, never replaced.

The temporaries are removed on any error, on Ctrl-C (SIGINT) and on SIGTERM/SIGHUP; the signal
is then delivered again, so the process still ends as the sender asked.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import signal
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from neuronemu.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from neuronemu.program import Program

Writer = Callable[[IO[bytes]], object]
"""Writes one file's bytes to a binary file object."""

WIDEN_PIECE = 1 << 20
"""Elements written at a time (bf16/fp8 widened to float32 a piece at a time: 4 MiB)."""

PIPE_PIECE = 1 << 24
"""Bytes read at a time from an input that cannot be mapped (a pipe)."""


# --- reading -------------------------------------------------------------------------------

def load_inputs(pairs: dict[str, str]) -> dict[str, np.ndarray]:
    """``--input NAME=FILE`` pairs -> arrays (see :func:`load_npy`)."""
    return {name: load_npy(path, f"--input {name}") for name, path in pairs.items()}


def load_npy(path: str, label: str) -> np.ndarray:
    """One ``.npy`` file, checked. The header is read first and the data size checked against the
    file, so a header that claims terabytes is an error, not an allocation; a regular file is
    memory-mapped (read-only), so a big input is read straight into the HBM image, not copied
    first. A pipe (``<(...)``, ``/dev/stdin``) has no size: it is read piece by piece, and a
    stream that ends early is an error before the whole claimed size is allocated."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{label}: no such file {path}") from None
    except OSError as e:
        raise InputError(f"{label}: cannot read {path} ({e.strerror or e})") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{label}: {path} is a directory, not a .npy file")
    if stat.S_ISREG(mode):
        return _load_regular(path, label)
    return _load_stream(path, label)


def _read_header(f: IO[bytes], path: str, label: str):
    from numpy.lib import format as npy

    try:
        version = npy.read_magic(f)
        header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, fortran_order, dtype = header(f)
    except (ValueError, EOFError) as e:
        raise InputError(f"{label}: cannot read {path} as .npy ({e})") from None
    _refuse_untyped(dtype, path, label)
    return shape, fortran_order, dtype


def _refuse_untyped(dtype, path: str, label: str) -> None:
    """``np.save`` of a bf16/fp8 array (ml_dtypes) writes raw bytes (``|V2``, ``|V1``): .npy has
    no name for those types, so the values cannot be read back as numbers."""
    if dtype.kind == "V" and dtype.names is None:
        raise InputError(
            f"{label}: {path} holds untyped {dtype.itemsize}-byte values ({dtype.str}): .npy "
            f"cannot record bfloat16 or float8 (ml_dtypes), so np.save wrote them without their "
            f"type. Save them as float32 instead, e.g. np.save(path, a.astype(np.float32)): "
            f"every bf16/fp8 value is exact in float32, and the run rounds it back to the "
            f"tensor's dtype exactly")


def _load_regular(path: str, label: str) -> np.ndarray:
    import numpy as np

    from neuronemu.hostmem import human

    size = os.path.getsize(path)
    if size == 0:
        raise InputError(f"{label}: {path} is empty (0 bytes), not a .npy file")
    try:
        with open(path, "rb") as f:
            shape, _, dtype = _read_header(f, path, label)
            data_start = f.tell()
    except OSError as e:
        raise InputError(f"{label}: cannot read {path} as .npy ({e.strerror or e})") from None
    need = math.prod(shape) * dtype.itemsize  # Python ints: exact for any claimed shape
    have = size - data_start
    if not dtype.hasobject and need > have:
        raise InputError(f"{label}: {path} is truncated or corrupt: its header declares "
                         f"{dtype}{list(shape)} = {need} bytes ({human(need)}) of data, but "
                         f"only {have} bytes follow")
    try:
        if need and not dtype.hasobject:
            try:
                return np.load(path, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError):
                pass  # not mappable (a special filesystem): read it
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{label}: cannot read {path} as .npy ({e})") from None


def _load_stream(path: str, label: str) -> np.ndarray:
    """A pipe or other unseekable file: np.load seeks back after the magic, so read it here."""
    import numpy as np

    from neuronemu.hostmem import human

    try:
        with open(path, "rb") as f:
            if not f.peek(1):
                raise InputError(f"{label}: {path} is empty (0 bytes), not a .npy file")
            shape, fortran_order, dtype = _read_header(f, path, label)
            if dtype.hasobject:
                raise InputError(f"{label}: {path} holds Python objects, which are not read "
                                 f"(only numeric arrays)")
            need = math.prod(shape) * dtype.itemsize
            data = bytearray()
            while len(data) < need:
                piece = f.read(min(PIPE_PIECE, need - len(data)))
                if not piece:
                    raise InputError(
                        f"{label}: {path} is truncated or corrupt: its header declares "
                        f"{dtype}{list(shape)} = {need} bytes ({human(need)}) of data, but the "
                        f"stream ended after {len(data)} bytes")
                data += piece
    except OSError as e:
        raise InputError(f"{label}: cannot read {path} ({e.strerror or e})") from None
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(shape[::-1]).T if fortran_order else array.reshape(shape)


# --- what is saved -------------------------------------------------------------------------

def saved_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype an output is saved as: numpy cannot round-trip ml_dtypes through .npy, so
    bf16/fp8 are saved widened to float32 (exact); native numpy dtypes as they are."""
    import numpy as np

    name = np.dtype(dtype).name
    if name == "bfloat16" or name.startswith("float8"):
        return np.dtype(np.float32)
    return np.dtype(dtype)


def npy_writer(array: np.ndarray) -> Writer:
    """Writes ``array`` as .npy, in :func:`saved_dtype`, the bytes of ``np.save(array)`` (of
    ``array.astype(float32)`` for bf16/fp8), a piece at a time: a widened array is never copied
    whole, and the file object need not be seekable (np.save asks a real file for its position,
    which a FIFO or a pipe cannot give)."""
    from numpy.lib import format as npy

    target = saved_dtype(array.dtype)

    def write(f: IO[bytes]) -> None:
        header = npy.header_data_from_array_1_0(array)
        header["descr"] = npy.dtype_to_descr(target)
        try:
            npy.write_array_header_1_0(f, header)
        except ValueError:   # a header over 64 KiB (thousands of dimensions): np.save's 2.0
            npy.write_array_header_2_0(f, header)
        flat = array.ravel(order="F" if header["fortran_order"] else "C")
        for start in range(0, flat.size, WIDEN_PIECE):
            f.write(flat[start: start + WIDEN_PIECE].astype(target, copy=False).data)
    return write


def json_writer(doc: object) -> Writer:
    return lambda f: f.write(json.dumps(doc).encode())


# --- where it goes -------------------------------------------------------------------------

def written_through(path: str | Path) -> bool:
    """True for an existing file that is not replaced but written in place: a device, FIFO or
    socket, or any file named through ``/proc`` (``/dev/stdout``, ``/dev/fd/N``: the process's
    own descriptors, which a rename would only cut off)."""
    current = os.path.abspath(path)
    for _ in range(40):   # the kernel's own limit on symlinks followed
        if os.path.realpath(os.path.dirname(current)).startswith("/proc/"):
            return os.path.exists(current)
        if not os.path.islink(current):
            break
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False   # new (or a dangling link): created
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def destinations(program: Program, output_files: dict[str, str], output_dir: Path | None,
                 trace_path: Path | None) -> dict[str, str]:
    """``label -> path`` of every file a run will write: --output, then DIR/NAME.npy for the
    outputs --output did not name, then --trace; checked before the kernel runs (so a long run is
    not wasted): no two the same file, none an existing directory or read-only file, every
    directory writable. Files written through (devices, FIFOs) may be shared: nothing is
    replaced there."""
    for name in output_files:
        if name not in program.tensors or program.tensors[name].role != "output":
            names = ", ".join(t.name for t in program.outputs()) or "none"
            raise InputError(f"--output {name}: the kernel has no output '{name}' "
                             f"(outputs: {names})")
    files = {f"--output {name}": path for name, path in output_files.items()}
    if output_dir is not None:
        for t in program.outputs():
            if t.name not in output_files:
                files[f"--output-dir {t.name}"] = str(output_dir / f"{t.name}.npy")
    if trace_path is not None:
        files["--trace"] = str(trace_path)
    seen: dict[str, str] = {}
    for label, path in files.items():
        if not written_through(path):
            key = os.path.normcase(os.path.realpath(path))
            if key in seen:
                raise InputError(f"{seen[key]} and {label} both write {path}: give each its "
                                 f"own file")
            seen[key] = label
        check_destination(label, Path(path), output_dir)
    return files


def check_destination(label: str, path: Path, output_dir: Path | None = None) -> None:
    """``path`` can be written: a file written through is writable; otherwise (following
    symlinks) not a directory, not read-only, and its directory exists (or is --output-dir,
    which is created when the outputs are written) and takes new files."""
    if written_through(path):
        if not os.access(path, os.W_OK):
            raise InputError(f"{label}: cannot write {path}: permission denied")
        return
    if path.is_dir():
        raise InputError(f"{label}: cannot write {path}: it is a directory")
    _refuse_read_only(label, path)
    final = Path(os.path.realpath(path))
    directory = final.parent
    while not directory.exists():  # --output-dir is created when the outputs are written
        if directory.parent == directory:
            break
        directory = directory.parent
    if not directory.is_dir():
        raise InputError(f"{label}: cannot write {path}: {directory} is not a directory")
    will_exist = output_dir is not None and (os.path.realpath(final.parent)
                                             == os.path.realpath(output_dir))
    if directory != final.parent and not will_exist:
        raise InputError(f"{label}: cannot write {path}: no such directory {final.parent}")
    try:  # the only sure test of writability (root, ACLs, read-only mounts): try it
        with _removed_on_termination():
            temporary, fd = _create_temporary(directory / final.name)
            os.close(fd)
            temporary.unlink()
    except OSError as e:
        raise InputError(f"{label}: cannot write {path}: {e.strerror or e} ({directory})"
                         ) from None


def _refuse_read_only(label: str, path: Path) -> None:
    """An existing file without write permission is the user's "do not change": as root the
    rename would succeed, so ask the mode bits as well as access()."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return   # new
    if not os.access(path, os.W_OK) or not mode & 0o222:
        raise InputError(f"{label}: cannot write {path}: the file is read-only (mode "
                         f"{stat.S_IMODE(mode):04o}); it was not replaced. Make it writable "
                         f"(chmod u+w) or remove it first, or write elsewhere")


# --- writing -------------------------------------------------------------------------------

def save_all(files: dict[str, tuple[str, Writer]], directory: Path | None = None
             ) -> dict[str, str]:
    """Write every ``label -> (path, write(binary file))`` or none (module docstring):
    ``directory`` (--output-dir) is created first if missing; regular files go to temporaries,
    then the files written through are written, then the temporaries are renamed into place. On
    any failure, Ctrl-C or SIGTERM the temporaries and the directories made are removed, and
    existing regular files are left as they were. (The renames themselves, all within
    directories already written to, are the one step that is not all-or-none.) Returns
    ``label -> path``."""
    staged: list[tuple[Path, Path, str]] = []
    made: list[Path] = []
    done = False
    with _removed_on_termination():
        try:
            if directory is not None:
                try:
                    made += _make_directories(directory)
                except OSError as e:
                    raise InputError(f"--output-dir: cannot create {directory}: "
                                     f"{e.strerror or e}") from None
            through = {label: item for label, item in files.items() if written_through(item[0])}
            for label, (dest, write) in files.items():
                if label in through:
                    continue
                _refuse_read_only(label, Path(dest))   # it may have changed during the run
                final = Path(os.path.realpath(dest))   # a symlink's target, the link kept
                try:
                    temporary, fd = _create_temporary(final)
                    staged.append((temporary, final, label))
                    _keep_mode(fd, final)
                    with os.fdopen(fd, "wb") as f:
                        write(f)
                except OSError as e:
                    raise InputError(f"{label}: cannot write {dest}: {e.strerror or e}"
                                     ) from None
            for label, (dest, write) in through.items():
                try:
                    with open(os.open(dest, os.O_WRONLY | os.O_TRUNC), "wb") as f:
                        write(f)
                except OSError as e:
                    raise InputError(f"{label}: cannot write {dest}: {e.strerror or e}"
                                     ) from None
            for temporary, final, label in staged:
                try:
                    os.replace(temporary, final)
                except OSError as e:
                    raise InputError(f"{label}: cannot write {final}: {e.strerror or e}"
                                     ) from None
            done = True
        finally:
            if not done:
                for temporary, _, _ in staged:
                    with contextlib.suppress(OSError):
                        temporary.unlink()
                for created in reversed(made):
                    with contextlib.suppress(OSError):
                        created.rmdir()
    return {label: dest for label, (dest, _) in files.items()}


def _keep_mode(fd: int, final: Path) -> None:
    """A replaced file keeps its permissions (as ``cp`` onto it would); a new one gets the
    default (0o666 less the umask, from os.open)."""
    try:
        os.fchmod(fd, stat.S_IMODE(os.stat(final).st_mode))
    except FileNotFoundError:
        pass


def _create_temporary(final: Path) -> tuple[Path, int]:
    """A new file next to ``final`` (same directory, so the rename is atomic), with the
    permissions a new file gets (0o666 less the umask); a unique name, so two runs writing the
    same destination never share a temporary."""
    while True:
        temporary = final.with_name(f".{final.name}.{secrets.token_hex(4)}.partial")
        try:
            return temporary, os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _make_directories(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return those created, outermost first."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir()
    return list(reversed(missing))


class _Terminated(BaseException):
    """SIGTERM/SIGHUP arrived while files were being written (BaseException, like
    KeyboardInterrupt: no ``except Exception`` may swallow it before the clean-up)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_TERMINATING = (signal.SIGTERM, signal.SIGHUP) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,)


@contextlib.contextmanager
def _removed_on_termination() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into an exception inside the block, so that its ``finally`` removes
    the temporaries; afterwards deliver the signal again under the handler it had (by default:
    the process ends, killed by that signal, as the sender expects). Python runs handlers in the
    main thread only; elsewhere the block runs unguarded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        raise _Terminated(signum)

    previous = {sig: signal.signal(sig, raise_terminated) or signal.SIG_DFL
                for sig in _TERMINATING}   # (None: a handler not set from Python; the default)
    try:
        yield
    except _Terminated as e:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        previous = {}
        os.kill(os.getpid(), e.signum)   # the default handler ends the process here
        raise SystemExit(128 + e.signum) from None   # a handler that returned: still stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def save_outputs(destinations: dict[str, str], outputs: Mapping[str, np.ndarray],
                 output_dir: Path | None, trace: Callable[[], Writer]) -> dict[str, str]:
    """Save a run's outputs (and its trace, written by ``trace()``, if ``--trace`` is among the
    :func:`destinations`) all-or-none; returns output name -> the file written."""
    writers = {label: (dest, npy_writer(outputs[label.split()[1]]))
               for label, dest in destinations.items() if label != "--trace"}
    if "--trace" in destinations:
        writers["--trace"] = (destinations["--trace"], trace())
    saved = save_all(writers, output_dir)
    return {label.split()[1]: dest for label, dest in saved.items() if label != "--trace"}
