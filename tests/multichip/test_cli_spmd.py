"""`neuronemu run KERNEL --topology NAME`: JSON, traces, per-rank input files, outputs with a
leading world axis, and the errors of the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from spmd_helpers import TOPOLOGIES

from neuronemu.cli import main

KERNEL = """\
.hbm x int32[2, 8] input
.hbm y int32[2, 8] output
.hbm z int32[2, 8] output
    ctrl.rank r0
    ctrl.world r1
    ctrl.add r2, r0, 1
    ctrl.rem r2, r2, r1
    ctrl.sub r3, r0, 1
    ctrl.rem r3, r3, r1
    cc.all_reduce y, x, op=add, algorithm=ring
    cc.send x, peer=r2
    cc.recv z, peer=r3
"""


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def write_kernel(tmp_path: Path, text: str = KERNEL) -> Path:
    path = tmp_path / "k.s"
    path.write_text(text)
    return path


def test_json_on_trn2_48xlarge(tmp_path: Path) -> None:
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn2.48xlarge", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["topology"] == "trn2.48xlarge"
    assert doc["world"] == 16 and doc["ranks_per_chip"] == 1
    assert doc["target"] == "trn2"
    assert doc["outputs"]["y"]["shape"] == [16, 2, 8]
    assert doc["outputs"]["z"]["shape"] == [16, 2, 8]
    assert doc["outputs"]["y"]["dtype"] == "int32"
    ranks = doc["ranks"]
    assert [r["rank"] for r in ranks] == list(range(16))
    assert [r["chip"] for r in ranks] == list(range(16))
    assert all(r["core"] == 0 for r in ranks)
    assert doc["time_ns"] == max(r["time_ns"] for r in ranks) > 0
    net = doc["network"]
    # ring all-reduce: 2 (n - 1) steps of n messages; then one message per rank
    assert net["messages"] == 2 * 15 * 16 + 16
    assert net["bytes"] > 0 and net["link_bytes"] >= net["bytes"]
    assert all("->" in name and {"messages", "bytes", "busy_ns"} <= set(stats)
               for name, stats in net["links"].items())
    # nothing on stderr but, on a machine where this code was never compiled, the one-time
    # compile notice (docs/engine.md)
    assert all(line.startswith("neuronemu: compiling")
               for line in result.stderr.splitlines()), result.stderr


def test_trace_has_one_process_per_rank(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn2.48xlarge",
                    "--trace", trace)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(trace.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert {e["pid"] for e in events if "pid" in e} == set(range(16))
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert sorted(names) == list(range(16))
    assert names[3].startswith("rank 3")
    # every rank has timed events of its own (its cc instructions)
    timed = {e["pid"] for e in events if e.get("ph") == "X"}
    assert timed == set(range(16))


def test_per_rank_input_file_and_output_dir(tmp_path: Path) -> None:
    x = np.random.default_rng(0).integers(-1000, 1000, (16, 2, 8)).astype(np.int32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn2.48xlarge",
                    "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", out, "--json")
    assert result.exit_code == 0, result.stderr
    y = np.load(out / "y.npy")
    z = np.load(out / "z.npy")
    assert y.shape == z.shape == (16, 2, 8)
    assert np.array_equal(y, np.broadcast_to(x.astype(np.int64).sum(0), (16, 2, 8)))
    assert np.array_equal(z, np.roll(x, 1, axis=0))
    doc = json.loads(result.stdout)
    assert doc["outputs"]["y"]["path"] == str(out / "y.npy")


def test_shared_input_file_goes_to_every_rank(tmp_path: Path) -> None:
    x = np.arange(16, dtype=np.int32).reshape(2, 8)
    np.save(tmp_path / "x.npy", x)
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn1.32xlarge",
                    "--ranks-per-chip", "2",
                    "--input", f"x={tmp_path / 'x.npy'}", "--output", f"y={tmp_path / 'y.npy'}",
                    "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["world"] == 32 and doc["ranks_per_chip"] == 2
    assert [(r["chip"], r["core"]) for r in doc["ranks"][:3]] == [(0, 0), (0, 1), (1, 0)]
    assert np.array_equal(np.load(tmp_path / "y.npy"), np.broadcast_to(32 * x, (32, 2, 8)))


def test_trace_names_chip_and_core_of_each_rank(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn1.2xlarge",
                    "--ranks-per-chip", "2", "--trace", trace)
    assert result.exit_code == 0, result.stderr
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names[0].startswith("rank 0 (chip 0, core 0)")
    assert names[1].startswith("rank 1 (chip 0, core 1)")


def test_text_report(tmp_path: Path) -> None:
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn2.48xlarge")
    assert result.exit_code == 0, result.stderr
    assert "16 ranks" in result.stdout
    assert "y  int32[16, 2, 8]" in result.stdout


def test_unknown_topology_lists_the_topologies(tmp_path: Path) -> None:
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn2.48xlage")
    assert result.exit_code != 0
    assert "Traceback" not in result.stdout + result.stderr
    assert "trn2.48xlage" in result.stderr
    for name in TOPOLOGIES:
        assert name in result.stderr


def test_too_many_ranks_per_chip(tmp_path: Path) -> None:
    result = invoke("run", write_kernel(tmp_path), "--topology", "trn2.48xlarge",
                    "--ranks-per-chip", "9")
    assert result.exit_code == 4
    assert "ranks_per_chip must be 1..8" in result.stderr


def test_deadlock_exit_code_and_location(tmp_path: Path) -> None:
    text = ".hbm y float32[2, 8] output\n    ctrl.rank r0\n    ctrl.bne r0, 1, done\n" \
           "    cc.recv y, peer=0\ndone:\n"
    path = write_kernel(tmp_path, text)
    result = invoke("run", path, "--topology", "trn2.48xlarge")
    assert result.exit_code == 5
    assert "Traceback" not in result.stdout + result.stderr
    assert "k.s:4:5: error: deadlock:" in result.stderr
    assert "rank 1 waits at" in result.stderr
    result = invoke("run", path, "--topology", "trn2.48xlarge", "--json")
    assert result.exit_code == 5


def test_bundled_program_by_name(tmp_path: Path) -> None:
    """collectives/all_reduce has no .target: the topology's chips decide it."""
    result = invoke("run", "collectives/all_reduce", "--topology", "trn1.32xlarge", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["target"] == "trn1"
    assert doc["world"] == 16
    assert doc["outputs"]["y"]["shape"] == [16, 256, 1024]
