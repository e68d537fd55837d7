"""The compiled-code cache (neuronemu/compiled/cache.py): a damaged file is detected by its checksum,
reported and compiled again (issue 30 item 10); a read-only cache is used as it is, and what it
lacks is compiled into a temporary directory with a notice (item 11).

The end-to-end cases run a two-instruction kernel in a child process on a copy of this version's
warm cache (the suite's compiles are done by then; a case compiles at most vector.memset, the
cheapest instruction kernel, about 7 s). Read-only caches are made read-only the way users meet them: a read-only
bind mount in a private mount namespace when running as root (as CI does; permission bits do not
stop root), permission bits otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuronemu import notices
from neuronemu.compiled import cache

ROOT = Path(__file__).resolve().parents[2]
# the compute kernel of KERNEL: an fp32 window's memset, the narrow kernel (docs/engine.md)
KERNEL_UNIT = "elementwise__memset_f32"
KERNEL = """\
.hbm c float32[128, 64] output
.sbuf t float32[128, 64]
    vector.memset t, value=1.5
    dma.copy c, t, queue=0
"""


# ---------------------------------------------------------------------------- checked files

@pytest.fixture
def told(monkeypatch):
    said: list[str] = []
    previous = notices.set_sink(said.append)
    yield said
    notices.set_sink(previous)


@pytest.fixture
def unit(tmp_path, monkeypatch):
    """A CheckedCacheFile in a cache root of its own."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    folder = cache.cache_dir() / "neuronemu_exec"
    folder.mkdir(parents=True)
    return cache.CheckedCacheFile(str(folder), "kernels.f-12.py311", ("stamp", 1))


def _flip(path: Path, at: int = -1) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x20
    path.write_bytes(bytes(data))


def test_round_trip_and_every_file_is_sealed(unit):
    unit.save(("sig", "cpu"), {"code": b"\x7fELF..."})
    assert unit.load(("sig", "cpu")) == {"code": b"\x7fELF..."}
    folder = Path(unit._folders[0])
    files = sorted(p.name for p in folder.iterdir() if p.suffix != ".lock")
    assert files == ["kernels.f-12.py311.1.nbc", "kernels.f-12.py311.nbi"]
    assert all((folder / f).read_bytes().startswith(b"neuronemu numba cache 1\n") for f in files)


_SAVER = """
import sys
from neuronemu.compiled import cache
unit = cache.CheckedCacheFile(sys.argv[1], "kernels.f-12.py311", ("stamp", 1))
for i in range(int(sys.argv[3])):
    unit.save((sys.argv[2], i), {"code": f"{sys.argv[2]} {i}".encode()})
"""


def test_processes_saving_at_once_leave_every_entry_naming_its_own_code(unit):
    """Parallel compile jobs, pytest-xdist workers and MPI ranks save into one folder at once;
    without the index lock two of them picked one data file for two signatures, and a later
    load of one signature got the other's code."""
    folder = unit._folders[0]
    writers = [subprocess.Popen([sys.executable, "-c", _SAVER, folder, f"w{k}", "40"])
               for k in range(4)]
    assert all(w.wait(timeout=120) == 0 for w in writers)
    for k in range(4):
        for i in range(40):
            assert unit.load((f"w{k}", i)) == {"code": f"w{k} {i}".encode()}


@pytest.mark.parametrize("which", ["data", "index"])
def test_a_damaged_file_is_reported_removed_and_not_loaded(unit, told, which):
    unit.save(("sig", "cpu"), {"code": b"x" * 1000})
    folder = Path(unit._folders[0])
    damaged = folder / ("kernels.f-12.py311.1.nbc" if which == "data"
                        else "kernels.f-12.py311.nbi")
    _flip(damaged, at=len(damaged.read_bytes()) // 2)
    assert unit.load(("sig", "cpu")) is None            # numba compiles it again
    assert told == [(f"neuronemu: compiled-code cache file {damaged} is damaged (checksum "
                     f"mismatch); compiling kernels.f again")]
    assert [p for p in folder.iterdir() if p.suffix != ".lock"] == []   # the unit's files are gone
    unit.save(("sig", "cpu"), {"code": b"y"})            # and the new compile is kept
    assert unit.load(("sig", "cpu")) == {"code": b"y"}


def test_a_truncated_or_foreign_file_is_damage_too(unit, told):
    unit.save(("sig", "cpu"), {"code": b"x" * 1000})
    data = Path(unit._folders[0]) / "kernels.f-12.py311.1.nbc"
    data.write_bytes(data.read_bytes()[:40])
    assert unit.load(("sig", "cpu")) is None and len(told) == 1
    unit.save(("sig", "cpu"), {"code": b"x"})
    data.write_bytes(b"\x80\x04garbage numba itself wrote")
    assert unit.load(("sig", "cpu")) is None and len(told) == 2


def test_other_packages_caches_keep_numbas_format(tmp_path):
    plain = cache.CheckedCacheFile(str(tmp_path / "elsewhere"), "m.f-1.py311", "stamp")
    (tmp_path / "elsewhere").mkdir()
    plain.save("key", {"v": 1})
    assert plain.load("key") == {"v": 1}
    assert not (tmp_path / "elsewhere" / "m.f-1.py311.nbi").read_bytes().startswith(b"neuronemu")


# ---------------------------------------------------------------------------- end to end

def _warm_copy(to: Path) -> Path:
    """A copy of this version's warm cache at ``to`` (skip when the cache is cold)."""
    source = cache.cache_dir()
    if not _kernel_files(source, ".nbi"):
        pytest.skip("this version's compiled-code cache is cold (run `neuronemu warm` first)")
    shutil.copytree(source, to)
    return to


def _kernel_files(folder: Path, suffix: str) -> list[Path]:
    unit = cache.unit_folder("neuronemu.exec.wrappers.elementwise")   # this version's folder
    return sorted(folder.glob(f"{unit}/*.{KERNEL_UNIT}-*{suffix}"))


def _run(env: dict, read_only: Path | None = None) -> subprocess.CompletedProcess:
    kernel = Path(env["TMPDIR"] if "TMPDIR" in env else env["NUMBA_CACHE_DIR"]).parent / "k.s"
    kernel.write_text(KERNEL)
    argv = [sys.executable, "-m", "neuronemu", "run", str(kernel)]
    inherited = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    full_env = {**inherited, "PYTHONPATH": str(ROOT), **env}
    if read_only is not None:
        argv = _under_read_only(read_only, argv)
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=900,
                          check=False, cwd=ROOT)


def _under_read_only(folder: Path, argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return argv
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    if probe.returncode != 0 or shutil.which("mount") is None:
        pytest.skip("root without mount namespaces (unshare -m): cannot make a read-only cache")
    script = ('mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"')
    return ["unshare", "-m", "sh", "-c", script, str(folder), *argv]


def _clean(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Aborted" not in result.stderr
    assert "c  float32[128, 64]" in result.stdout


def test_a_damaged_kernel_file_is_compiled_again(tmp_path):
    copy = _warm_copy(tmp_path / "numba" / "neuronemu" / cache.toolchain_key())
    (data,) = _kernel_files(copy, ".nbc")
    _flip(data, at=len(data.read_bytes()) // 2)           # a bit flip inside the object code
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    first = _run(env)
    _clean(first)
    assert f"compiled-code cache file {data} is damaged (checksum mismatch)" in first.stderr
    again = _run(env)                                     # repaired: loads, says nothing
    _clean(again)
    assert "damaged" not in again.stderr and "compiling" not in again.stderr


def test_a_warm_read_only_cache_is_used_as_it_is(tmp_path):
    home = tmp_path / "cache"
    _warm_copy(home / "neuronemu" / "numba" / cache.toolchain_key())
    spare = tmp_path / "tmp"
    spare.mkdir()
    result = _run({"XDG_CACHE_HOME": str(home), "TMPDIR": str(spare)}, read_only=home)
    _clean(result)
    assert "compiling" not in result.stderr and "compiled-code cache" not in result.stderr
    assert list(spare.iterdir()) == []                    # nothing compiled anywhere
    assert not list((ROOT / "neuronemu").rglob("*.nbi"))  # nor into the package


def test_a_read_only_cache_lacking_a_unit_compiles_it_into_the_fallback(tmp_path):
    home = tmp_path / "cache"
    copy = _warm_copy(home / "neuronemu" / "numba" / cache.toolchain_key())
    for path in _kernel_files(copy, ""):
        path.unlink()
    spare = tmp_path / "tmp"
    spare.mkdir()
    env = {"XDG_CACHE_HOME": str(home), "TMPDIR": str(spare)}
    result = _run(env, read_only=home)
    _clean(result)
    fallback = spare / f"neuronemu-{os.getuid()}" / "numba" / cache.toolchain_key()
    assert (f"the compiled-code cache {copy} is read-only (its compiled code is still used): "
            f"compiled code is cached in {fallback} instead") in result.stderr
    assert f"cached in {fallback};" in result.stderr       # the compile notice names it too
    cached = [p.name for p in fallback.rglob("*") if p.is_file()]
    assert cached and all(KERNEL_UNIT in name for name in cached), cached  # the missing unit only
    again = _run(env, read_only=home)
    _clean(again)
    assert "compiling" not in again.stderr


def test_a_read_only_home_without_a_cache_falls_back_to_a_temporary_directory(tmp_path):
    home = tmp_path / "cache"
    home.mkdir()
    spare = tmp_path / "tmp"
    fallback = spare / f"neuronemu-{os.getuid()}" / "numba" / cache.toolchain_key()
    _warm_copy(fallback)                                   # warm, so nothing compiles here
    result = _run({"XDG_CACHE_HOME": str(home), "TMPDIR": str(spare)}, read_only=home)
    _clean(result)
    why = "Read-only file system" if os.geteuid() == 0 else "Permission denied"
    assert (f"the compiled-code cache {home / 'neuronemu' / 'numba' / cache.toolchain_key()} "
            f"cannot be created ({why}): compiled code is cached in {fallback} "
            f"instead") in result.stderr
    assert "RuntimeError" not in result.stderr
