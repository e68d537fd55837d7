"""The debugger on a multi-rank run: breakpoints on a rank, the focus, steps across cc.*
instructions, going back, deadlocks and faults, watches, the DAP threads.

The kernel is lab 7's starter (the naive ring all-reduce) with COLS = 16, on the 16 ranks of a
trn2.48xlarge. Oracles, from the kernel's text by hand: at step k (r4 = k) rank r receives
x of rank r - 1 - k (mod 16), and its acc then holds x summed over ranks r, r - 1, ..., r - 1 - k,
summed here in float64 by numpy; every rank's y is the sum over all ranks. Going back is checked
against a second debugger that only runs forward."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neuronemu
from neuronemu import api
from neuronemu.debug import repl
from neuronemu.debug.expr import CommandError, Text
from neuronemu.debug.session import Debugger
from neuronemu.errors import NeuronemuError

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "programs/labs/07-ring-allreduce/starter.s"
TOPOLOGY, WORLD, COLS = "trn2.48xlarge", 16, 16
# lines of the starter
SEND_LINE, RECV_LINE, ADD_LINE = 28, 29, 30


@pytest.fixture(scope="module")
def ring(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ring") / "ring.s"
    text = STARTER.read_text()
    assert ".const COLS = 4096" in text
    path.write_text(text.replace(".const COLS = 4096", f".const COLS = {COLS}"))
    return path


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((WORLD, 128, COLS)).astype(np.float32)


def debugger(ring: Path, x: np.ndarray, **options) -> Debugger:
    return repl.load(ring, topology=TOPOLOGY, inputs={"x": x}, **options)


def value(d: Debugger, expression: str):
    return d.evaluate(Text(expression))


def test_a_breakpoint_on_one_rank_stops_only_there(ring, x):
    d = debugger(ring, x)
    reply = d.break_at(Text(f"{ADD_LINE} rank 5 if r4 == 2"))
    assert "on rank 5" in reply.text
    reply = d.cont()
    assert reply.doc["reason"] == "breakpoint"
    assert reply.doc["position"]["rank"] == 5 and reply.doc["position"]["world"] == WORLD
    assert reply.text.startswith("Breakpoint 1, rank 5, ring.s:30")
    assert int(value(d, "r0")) == 5 and int(value(d, "r4")) == 2 and int(value(d, "$rank")) == 5
    received = value(d, "passing[:, r6, :]")
    np.testing.assert_array_equal(received, x[(5 - 1 - 2) % WORLD])
    d.step()
    expected = sum(x[(5 - j) % WORLD].astype(np.float64) for j in range(4))
    np.testing.assert_allclose(value(d, "acc"), expected, rtol=1e-5, atol=1e-5)


def test_a_breakpoint_on_every_rank_stops_in_the_drivers_order(ring, x):
    d = debugger(ring, x)
    d.break_at(Text(str(SEND_LINE)))
    seen = []
    for _ in range(WORLD + 1):
        d.cont()
        seen.append((d.machine.focus, int(value(d, "r4"))))
    # every rank reaches its first cc.send in rank order; then rank 0 its second
    assert seen == [(r, 0) for r in range(WORLD)] + [(0, 1)]
    ranks = d.info("ranks").doc["ranks"]
    assert [r["focus"] for r in ranks].index(True) == 0
    assert {r["state"] for r in ranks[1:]} <= {"ready", "waits in cc.send"}


def test_stepping_over_a_recv_and_back(ring, x):
    d = debugger(ring, x)
    d.break_at(Text(f"{RECV_LINE} rank 3"))
    d.cont()
    step = d.steps
    before = value(d, "passing[:, r6, :]").copy()
    assert np.isnan(before).all()        # never written yet: the rank's NaN fill
    d.step()                             # other ranks run until the message is there
    assert d.machine.focus == 3 and d.steps == step + 1
    np.testing.assert_array_equal(value(d, "passing[:, 1, :]"), x[2])
    d.reverse_step()
    assert d.steps == step and d.pc == d.places.resolve(Text(str(RECV_LINE)))[0][0]
    assert np.isnan(value(d, "passing[:, 1, :]")).all()
    d.reverse_cont()                     # no earlier hit on rank 3: back to the start
    assert d.steps == 0 and d.machine.focus == 3


def test_going_back_matches_a_forward_run(ring, x):
    d = debugger(ring, x, max_instructions=10_000)
    d.machine.checkpoint_seconds = 0.0   # a checkpoint after every chunk of the loop
    d.machine.copy_share = 1.0
    d.machine._chunk = d.machine.MAX_CHUNK = 3
    d.rank(7)
    d.goto(60)
    late = (value(d, "acc").copy(), [int(value(d, f"r{k}")) for k in range(8)])
    assert len(d.machine.checkpoints) > 10
    d.goto(25)
    fresh = debugger(ring, x)
    fresh.rank(7)
    fresh.goto(25)
    np.testing.assert_array_equal(value(d, "acc"), value(fresh, "acc"))
    np.testing.assert_array_equal(value(d, "passing"), value(fresh, "passing"))
    assert d.time_ns() == fresh.time_ns()
    d.goto(60)
    np.testing.assert_array_equal(value(d, "acc"), late[0])
    assert [int(value(d, f"r{k}")) for k in range(8)] == late[1]


def test_the_end_holds_the_sum_and_the_times_of_a_plain_run(ring, x):
    d = debugger(ring, x)
    reply = d.cont()
    assert reply.doc["reason"] == "finished" and d.machine.done
    assert "finished on every rank (16)" in reply.text
    plain = api.run_spmd(neuronemu.assemble_file(ring), TOPOLOGY, {"x": x})
    total = x.astype(np.float64).sum(axis=0)
    for r in range(WORLD):
        d.rank(r)
        np.testing.assert_allclose(value(d, "y"), total, rtol=1e-4, atol=1e-4)
        assert d.time_ns() == plain.ranks[r].timing.time_ns
        assert d.steps == plain.ranks[r].steps


DEADLOCK = """\
.target trn1
.topology trn1.2xlarge ranks_per_chip=2
.sbuf a float32[4, 8]
.sbuf b float32[4, 8]
    ctrl.rank r0
    ctrl.sub r1, 1, r0
    vector.memset a, value=1.0
    cc.recv b, peer=r1
    cc.send a, peer=r1
"""


def test_a_deadlock_is_a_fault_that_going_back_leaves(tmp_path):
    path = tmp_path / "dead.s"
    path.write_text(DEADLOCK)
    d = repl.load(path)
    assert d.machine.world == 2
    reply = d.cont()
    assert reply.doc["reason"] == "fault"
    assert "deadlock: 2 of 2 ranks" in reply.doc["position"]["fault"]
    assert "rank 1 waits at" in reply.text
    with pytest.raises(CommandError, match="cannot go on"):
        d.step()
    d.reverse_step()
    assert "fault" not in d.position() and d.steps == 2
    assert d.info("ranks").doc["ranks"][0]["state"] in ("running", "ready")


FAULT_ON_RANK_1 = """\
.target trn1
.topology trn1.2xlarge ranks_per_chip=2
.sbuf a float32[4, 2, 8]
    ctrl.rank r0
    ctrl.mul r1, r0, 2
    vector.memset a[:, r1, :], value=1.0
"""


def test_a_fault_on_one_rank_moves_the_focus_there(tmp_path):
    path = tmp_path / "oob.s"
    path.write_text(FAULT_ON_RANK_1)
    d = repl.load(path)
    reply = d.cont()
    assert reply.doc["reason"] == "fault" and d.machine.focus == 1
    assert reply.doc["position"]["fault"].startswith("rank 1: ")
    assert d.pc == 2 and d.steps == 2 and int(value(d, "r1")) == 2
    d.rank(0)
    assert d.machine.finished   # rank 0 ran to its end before rank 1 ran


def test_a_watch_belongs_to_a_rank(ring, x):
    d = debugger(ring, x)
    d.rank(2)
    reply = d.watch(Text("acc[0, 1]"))
    assert "acc[0, 1] of rank 2" in reply.text
    reply = d.cont()                     # rank 0 and 1 write their acc first: not watched
    assert reply.doc["reason"] == "watch" and d.machine.focus == 2
    [hit] = reply.doc["watches"]
    assert hit["old"] == "nan" and hit["new"] == pytest.approx(float(x[2][0, 1]))
    d.cont()                             # the first add, after rank 2's first recv
    new = d.position()
    assert d.machine.focus == 2 and new["frames"][0]["line"] == ADD_LINE + 1
    assert float(value(d, "acc[0, 1]")) == pytest.approx(float(x[2][0, 1] + x[1][0, 1]))


def test_a_kernel_with_a_collective_and_no_topology_is_a_world_of_one(tmp_path):
    path = tmp_path / "one.s"
    path.write_text(".target trn2\n.sbuf a float32[4, 8]\n.sbuf b float32[4, 8]\n"
                    "    vector.memset a, value=2.0\n    cc.all_reduce b, a, op=add\n")
    d = repl.load(path)
    assert not d.ranks
    d.break_at(Text("5"))
    assert d.cont().doc["reason"] == "breakpoint"    # a flagged cc.* stops before it runs
    assert np.isnan(value(d, "b")).all()
    d.step()
    np.testing.assert_array_equal(value(d, "b"), np.full((4, 8), 2.0, np.float32))
    with pytest.raises(NeuronemuError, match="this run has one core"):
        d.break_at(Text("4 rank 1"))


@pytest.mark.parametrize("command, message", [
    ("break 30 rank 16", "rank takes a rank number, 0..15"),
    ("break 30 rank x", "rank takes a rank number, 0..15"),
    ("rank 16", "no rank 16: ranks 0..15"),
    ("rank two", "rank takes a rank number"),
])
def test_rank_errors(ring, x, command, message):
    prompt = repl.Prompt(debugger(ring, x), write=lambda s: None)
    with pytest.raises(NeuronemuError, match=message):
        prompt.dispatch(Text(command))


def test_the_cli_debugs_a_rank_of_the_lab_starter(tmp_path):
    script = tmp_path / "s.gdb"
    script.write_text(f"break {ADD_LINE} rank 1\ncontinue\nprint r0\ninfo ranks\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "neuronemu", "debug", str(STARTER),
                           "--topology", TOPOLOGY, "-x", str(script), "--batch", "--json"],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    docs = [json.loads(line) for line in done.stdout.splitlines()]
    assert docs[2]["position"]["rank"] == 1 and docs[3]["value"] == 1
    assert [r["focus"] for r in docs[4]["ranks"]] == [r == 1 for r in range(WORLD)]


def registers(client, thread: int) -> dict[str, str]:
    frame = client.request("stackTrace", threadId=thread)["body"]["stackFrames"][0]
    scopes = client.request("scopes", frameId=frame["id"])["body"]["scopes"]
    ref = next(s["variablesReference"] for s in scopes if s["name"] == "Registers")
    items = client.request("variables", variablesReference=ref)["body"]["variables"]
    return {v["name"]: v["value"] for v in items}


def test_dap_threads_are_the_ranks(ring, x, tmp_path):
    from tests.debug.test_dap import Client

    np.save(tmp_path / "x.npy", x)
    client = Client()
    try:
        client.request("initialize", adapterID="neuronemu")
        client.wait("initialized")
        launch = client.request("launch", program=str(ring), topology=TOPOLOGY,
                                inputs={"x": str(tmp_path / "x.npy")})
        assert launch["success"], launch
        client.request("setBreakpoints", source={"path": str(ring)},
                       breakpoints=[{"line": ADD_LINE, "condition": "$rank == 4"}])
        client.request("configurationDone")
        client.wait("stopped")
        threads = client.request("threads")["body"]["threads"]
        assert [t["name"] for t in threads] == [f"rank {r}" for r in range(WORLD)]
        client.request("continue", threadId=1)
        body = client.wait("stopped")
        assert body["reason"] == "breakpoint" and body["threadId"] == 5
        frames = client.request("stackTrace", threadId=5)["body"]["stackFrames"]
        assert frames[0]["line"] == ADD_LINE
        regs = registers(client, thread=5)
        assert regs["$rank"] == "4" and regs["r0"] == "4"
        assert registers(client, thread=8)["r0"] == "7"      # looking at rank 7
        client.request("stepBack", threadId=5)
        assert client.wait("stopped")["threadId"] == 5
        client.close()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
