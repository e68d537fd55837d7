"""`neuronemu dap`, driven by a scripted Debug Adapter Protocol client over a subprocess's
stdin / stdout, as an editor drives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "programs/labs/02-matmul/starter.s"
NKI = ROOT / "programs/nki/residual_relu.py"


class Client:
    def __init__(self):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, "-m", "neuronemu", "dap"], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.seq = 0
        self.events: list[dict] = []

    def _read(self) -> dict:
        length = None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the adapter closed its output"
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode().partition(":")
            assert name == "Content-Length"
            length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, command: str, **arguments) -> dict:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.proc.stdin.flush()
        while True:
            message = self._read()
            if message["type"] == "event":
                self.events.append(message)
                continue
            assert message["request_seq"] == self.seq
            return message

    def wait(self, event: str) -> dict:
        while True:
            found = [e for e in self.events if e["event"] == event]
            if found:
                self.events.remove(found[0])
                return found[0]["body"]
            message = self._read()
            assert message["type"] == "event"
            self.events.append(message)

    def stopped_line(self) -> tuple[int, dict]:
        body = self.wait("stopped")
        frames = self.request("stackTrace", threadId=1)["body"]["stackFrames"]
        return frames[0]["line"], body

    def variables(self, scope: str) -> dict:
        frame = self.request("stackTrace", threadId=1)["body"]["stackFrames"][0]
        scopes = self.request("scopes", frameId=frame["id"])["body"]["scopes"]
        ref = next(s["variablesReference"] for s in scopes if s["name"] == scope)
        items = self.request("variables", variablesReference=ref)["body"]["variables"]
        return {v["name"]: v for v in items}

    def close(self):
        self.request("disconnect")
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


@pytest.fixture
def client():
    c = Client()
    yield c
    if c.proc.poll() is None:
        c.proc.kill()


def test_a_session_on_the_lab_starter(client):
    init = client.request("initialize", adapterID="neuronemu")
    assert init["success"] and init["body"]["supportsStepBack"]
    client.wait("initialized")
    assert client.request("launch", program=str(STARTER), stopOnEntry=True)["success"]
    bps = client.request("setBreakpoints", source={"path": str(STARTER)},
                         breakpoints=[{"line": 33, "condition": "r1 == 1"}, {"line": 26}])
    verified = [b["verified"] for b in bps["body"]["breakpoints"]]
    assert verified == [True, False]
    client.request("configurationDone")
    line, body = client.stopped_line()
    assert (line, body["reason"]) == (20, "entry")
    client.request("continue", threadId=1)
    line, body = client.stopped_line()
    assert (line, body["reason"]) == (33, "breakpoint")
    regs = client.variables("Registers")
    assert regs["r1"]["value"] == "1" and regs["$step"]["value"] == "15"
    tiles = client.variables("Tiles")
    assert tiles["acc"]["value"] == "float32[128, 512]"
    rows = client.request("variables", variablesReference=tiles["acc"]["variablesReference"])
    assert len(rows["body"]["variables"]) == 128
    value = client.request("evaluate", expression="r1 + 1", context="repl")
    assert value["body"]["result"] == "2"
    client.request("next", threadId=1)
    assert client.stopped_line()[0] == 34
    client.request("stepBack", threadId=1)
    line, _ = client.stopped_line()
    assert line == 33 and client.variables("Registers")["$step"]["value"] == "15"
    client.request("reverseContinue", threadId=1)
    line, body = client.stopped_line()
    assert line == 20 and "start" in body["description"].lower()   # r1 == 1 only once before
    client.request("stepOut", threadId=1)   # not in a loop: runs on (stops at the breakpoint)
    assert client.stopped_line()[0] == 33
    bad = client.request("evaluate", expression="nosuch", context="repl")
    assert not bad["success"] and "not a tile" in bad["message"]
    client.close()


def test_an_nki_script_has_its_python_line_over_the_generated_one(client):
    client.request("initialize", adapterID="neuronemu")
    client.request("launch", program=str(NKI))
    client.request("setBreakpoints", source={"path": str(NKI)}, breakpoints=[{"line": 22}])
    client.request("configurationDone")
    client.wait("stopped")
    client.request("continue", threadId=1)
    client.wait("stopped")
    frames = client.request("stackTrace", threadId=1)["body"]["stackFrames"]
    assert frames[0]["source"]["path"] == str(NKI) and frames[0]["line"] == 22
    assert frames[1]["source"]["name"] == "residual_relu.nki.s"
    ref = frames[1]["source"]["sourceReference"]
    text = client.request("source", sourceReference=ref)["body"]["content"]
    assert text.splitlines()[frames[1]["line"] - 1].strip().startswith("vector.tensor_tensor")
    tiles = client.variables("Tiles")
    assert tiles["a_sb"]["value"] == "sb_L17_0: float32[128, 64]"
    client.close()
