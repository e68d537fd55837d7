"""`neuronemu debug` on the command line: scripts, --batch, --json, errors, NKI scripts."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from neuronemu.cli import main
from neuronemu.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
STARTER = str(ROOT / "programs/labs/02-matmul/starter.s")
NKI = str(ROOT / "programs/nki/residual_relu.py")


def debug(tmp_path, commands: str, *args: str):
    script = tmp_path / "cmds.gdb"
    script.write_text(commands)
    return CliRunner().invoke(main, ["debug", *args, "-x", str(script), "--batch"])


def test_json_prints_one_document_per_command(tmp_path):
    result = debug(tmp_path, "break 33\ncontinue\nprint r1\nprint nosuch\n", STARTER, "--json")
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["command"] for d in docs] == [None, "break 33", "continue", "print r1",
                                            "print nosuch"]
    assert docs[2]["position"]["step"] == 12 and docs[3]["value"] == 0
    assert docs[4]["ok"] is False and "'nosuch' is not a tile" in docs[4]["error"]["message"]
    assert result.exit_code == 1     # --batch with a failed command


def test_no_colours_without_a_terminal(tmp_path):
    result = debug(tmp_path, "break 33\ncontinue\nwhere\nblah\n", STARTER)
    assert "\x1b[" not in result.output
    assert "(nemu) continue\nBreakpoint 1, starter.s:33, pc 8, step 12" in result.output


def test_a_bad_command_is_located_in_the_script(tmp_path):
    result = debug(tmp_path, "break 33\nprint acc[0, 999]\n", STARTER)
    assert "cmds.gdb:2:11: error: index 999 is out of bounds" in result.output
    assert "    2 | print acc[0, 999]" in result.output
    assert result.exit_code == 1


def test_a_missing_kernel_is_an_input_error(tmp_path):
    result = debug(tmp_path, "", str(tmp_path / "nope.s"))
    assert result.exit_code == InputError.exit_code
    assert "no such kernel file" in result.output


def test_nki_breakpoint_on_a_python_line_and_variable_names(tmp_path):
    result = debug(tmp_path, "break 24\ncontinue\ncontinue\nprint y_sb[0, 0]\nwhere\n", NKI,
                   "--json")
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    frames = docs[3]["position"]["frames"]
    assert [(Path(f["file"]).name, f["line"]) for f in frames] == [
        ("residual_relu.py", 24), ("residual_relu.nki.s", 25)]
    assert docs[4]["symbol"] == "sb_L23_1"      # the second pass's slot of line 23's ring


def test_a_script_that_runs_no_kernel(tmp_path):
    script = tmp_path / "nothing.py"
    script.write_text("x = 1\n")
    result = debug(tmp_path, "", str(script))
    assert "ran to its end without running an NKI kernel" in result.output


def test_a_script_that_raises_is_located(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("x = 1\nraise ValueError('no inputs')\n")
    result = debug(tmp_path, "", str(script))
    assert "broken.py:2:1: error: the script raised ValueError: no inputs" in result.output
