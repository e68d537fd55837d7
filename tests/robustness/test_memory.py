"""Resource limits instead of MemoryError, and HBM that costs a tensor's size once (issue 17,
item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu import hostmem
from neuronemu.cli import main
from neuronemu.errors import ResourceError
from neuronemu.exec.core import make_memories

ROOT = Path(__file__).resolve().parents[2]
G1 = Path("/work/shared/research/robustness-repro-2026-11/G1_40GB_tensor.s")
HUGE = ".hbm x float32[100000, 100000] input\n"  # G1: 40 GB, legal on every target


def _small_host(monkeypatch, available: int = 1 << 30) -> None:
    monkeypatch.setattr(hostmem, "host_memory", lambda: (4 << 30, available))


def test_huge_tensor_is_a_resource_error_before_allocating(monkeypatch) -> None:
    _small_host(monkeypatch)
    with pytest.raises(ResourceError) as info:
        neuronemu.run(neuronemu.assemble(HUGE, "g1.s"))
    message = info.value.message
    assert "'x' float32[100000, 100000], is 37.3 GiB" in message
    assert "1.0 GiB available of 4.0 GiB" in message
    assert info.value.exit_code == 6 and info.value.location.line == 1


def test_cli_resource_error_exit_6_json(tmp_path: Path, monkeypatch) -> None:
    _small_host(monkeypatch)
    kernel = tmp_path / "g1.s"
    kernel.write_text(HUGE)
    result = CliRunner().invoke(main, ["run", str(kernel), "--json"])
    assert result.exit_code == 6
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ResourceError" and "host memory" in error["message"]


def test_multichip_counts_every_rank(monkeypatch) -> None:
    text = ".hbm x float32[4096, 4096] input init=zeros\n"  # 64 MiB per rank
    program = neuronemu.assemble(text, "k.s", target="trn2")
    assert hostmem.run_bytes(program, 16) > 16 * (64 << 20)
    _small_host(monkeypatch, available=512 << 20)
    neuronemu.run(program)  # one rank fits
    with pytest.raises(ResourceError, match="on 16 ranks"):
        from neuronemu.api import run_spmd

        run_spmd(program, "trn2.48xlarge")


@pytest.mark.skipif(not G1.exists(), reason="reproducer not available")
def test_g1_reproducer_on_this_host() -> None:
    _, available = hostmem.host_memory()
    if available is None or available > 60 << 30:
        pytest.skip("this host could hold the 40 GB tensor")
    result = subprocess.run([sys.executable, "-m", "neuronemu", "run", str(G1), "--json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert result.returncode == 6, result.stderr
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    assert "37.3 GiB" in json.loads(result.stdout)["error"]["message"]


def test_host_memory_reads_proc_meminfo() -> None:
    total, available = hostmem.host_memory()
    assert total is not None and available is not None and 0 < available <= total


def test_hbm_padding_keeps_the_never_written_pattern() -> None:
    program = neuronemu.assemble(".hbm a float32[3, 5] input init=zeros\n"
                                 ".hbm b uint8[7] output\n", "k.s")
    hbm = make_memories(program)[2]
    a, b = program.tensors["a"], program.tensors["b"]
    assert (hbm[0, a.offset + a.nbytes: b.offset] == 0xFF).all()  # padding after a
    assert (hbm[0, b.offset + b.nbytes:] == 0xFF).all()
    result = neuronemu.run(program)
    assert (result.tensors["a"] == 0).all() and result.tensors["a"].dtype == np.float32


def test_result_tensors_are_views_not_copies() -> None:
    result = neuronemu.run(neuronemu.assemble_file(ROOT / "programs/examples/vector_add.s"))
    for array in result.tensors.values():
        assert not array.flags.owndata


PEAK_SCRIPT = """
import resource, sys
import numpy as np
import neuronemu
small = neuronemu.assemble(".hbm x float32[128, 512] input\\n.sbuf t float32[128, 512]\\n"
                           "dma.copy t, x, queue=0\\n", "s.s")
neuronemu.run(small, {"x": np.ones((128, 512), np.float32)})
x = np.ones((8192, 8192), np.float32)  # 256 MiB
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
big = neuronemu.assemble(".hbm x float32[8192, 8192] input\\n"
                         ".sbuf t float32[128, 512]\\ndma.copy t, x[0:128, 0:512], queue=0\\n",
                         "b.s")
result = neuronemu.run(big, {"x": x})
assert result.tensors["x"][5, 7] == 1.0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024 / x.nbytes)
"""


def test_a_big_input_costs_about_its_size_once_more() -> None:
    """Peak memory of a run with a 256 MiB input, beyond the input array itself: the HBM image
    (1x) and the timing model's tables (at most 0.25x), not 3-4 copies."""
    result = subprocess.run([sys.executable, "-c", PEAK_SCRIPT], capture_output=True, text=True,
                            cwd=ROOT, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    extra = float(result.stdout.split()[-1])
    assert extra < 1.6, f"the run cost {extra:.2f}x the input's size on top of the input"
