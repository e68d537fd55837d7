"""The host-memory check sees a container's memory limit (cgroups v2 and v1), not only the
host's MemAvailable, which a container shares with the whole machine (issue 30 item 12).
Fake /sys/fs/cgroup trees stand in for the kernel's."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuronemu
from neuronemu import hostmem as resources
from neuronemu.errors import ResourceError

GIB, MIB = 1 << 30, 1 << 20
V1_UNLIMITED = "9223372036854771712"


def _write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text + "\n")


def _membership(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cgroup"
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def _fresh_walk():
    resources._limited_groups.cache_clear()
    yield
    resources._limited_groups.cache_clear()


def test_v2_limit_of_the_namespace_root(tmp_path):
    root = tmp_path / "fs"
    _write(root, memory__max=str(2 * GIB), memory__current=str(GIB + 256 * MIB),
           memory__stat="anon 1\ninactive_file 268435456\nactive_file 5")
    limit, left = resources.cgroup_memory(root, _membership(tmp_path, "0::/\n"))
    # used = current - inactive file cache = 1 GiB; left = 2 GiB - 1 GiB
    assert (limit, left) == (2 * GIB, GIB)


def test_v2_unlimited_is_none(tmp_path):
    root = tmp_path / "fs"
    _write(root, memory__max="max", memory__current=str(GIB))
    assert resources.cgroup_memory(root, _membership(tmp_path, "0::/\n")) is None


def test_v2_tightest_ancestor_wins(tmp_path):
    root = tmp_path / "fs"
    _write(root, memory__max="max", memory__current="0")
    _write(root / "outer", memory__max=str(GIB), memory__current=str(768 * MIB))
    _write(root / "outer" / "job", memory__max=str(8 * GIB), memory__current=str(512 * MIB))
    found = resources.cgroup_memory(root, _membership(tmp_path, "0::/outer/job\n"))
    assert found == (GIB, 256 * MIB)


def test_v1_memory_controller(tmp_path):
    root = tmp_path / "fs"
    _write(root / "memory", memory__limit_in_bytes=V1_UNLIMITED, memory__usage_in_bytes="0")
    _write(root / "memory" / "docker" / "abc", memory__limit_in_bytes=str(4 * GIB),
           memory__usage_in_bytes=str(3 * GIB), memory__stat="total_inactive_file 0")
    membership = _membership(tmp_path, "12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n")
    assert resources.cgroup_memory(root, membership) == (4 * GIB, GIB)


def test_v1_unlimited_and_missing_tree_are_none(tmp_path):
    root = tmp_path / "fs"
    _write(root / "memory", memory__limit_in_bytes=V1_UNLIMITED, memory__usage_in_bytes="5")
    assert resources.cgroup_memory(root, _membership(tmp_path, "4:memory:/\n")) is None
    assert resources.cgroup_memory(tmp_path / "none", tmp_path / "no-file") is None


def test_the_run_is_refused_at_the_container_limit(tmp_path, monkeypatch):
    """A kernel that fits the host's MemAvailable but not the container's limit is a
    ResourceError naming the limit, not an OOM kill part-way through."""
    root = tmp_path / "fs"
    _write(root, memory__max=str(512 * MIB), memory__current=str(128 * MIB))
    monkeypatch.setattr(resources, "CGROUP_ROOT", root)
    monkeypatch.setattr(resources, "PROC_CGROUP", _membership(tmp_path, "0::/\n"))
    total, available = resources.host_memory()
    assert available == 384 * MIB and total <= 512 * MIB
    program = neuronemu.assemble(".hbm x float32[16384, 16384] input init=zeros\n", "k.s")
    with pytest.raises(ResourceError) as raised:        # 1 GiB of HBM
        neuronemu.run(program)
    assert "this container has 384.0 MiB available of its 512.0 MiB memory limit (cgroup)" \
        in raised.value.message
