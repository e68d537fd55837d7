"""Reads of memory nothing wrote are reported as located warnings (exact to the byte)."""

from __future__ import annotations

import contextlib
import json

import numpy as np
from click.testing import CliRunner

import neuronemu
from neuronemu.cli import main

KERNEL = """.hbm x float32[128, 64] input
.hbm y float32[128, 64] output
.sbuf a float32[128, 64]
.sbuf b float32[128, 64]
dma.copy a, x
{body}
dma.copy y, a
"""


def _warnings(body: str) -> list[str]:
    program = neuronemu.assemble(KERNEL.format(body=body), filename="k.s")
    return [w.render() for w in neuronemu.run(program).warnings]


def test_reading_an_unwritten_buffer_warns_at_the_operand() -> None:
    (warning,) = _warnings("vector.tensor_tensor a, a, b, op=add")
    assert warning.startswith("k.s:6:28: warning: vector.tensor_tensor reads 'b' (data2)")


def test_written_buffers_do_not_warn() -> None:
    assert _warnings("vector.memset b, value=1.0\nvector.tensor_tensor a, a, b, op=add") == []


def test_writing_part_of_a_buffer_leaves_the_rest_unwritten() -> None:
    body = "vector.memset b[:, 0:16], value=1.0\nvector.tensor_tensor a, a, b, op=add"
    assert len(_warnings(body)) == 1
    assert _warnings("vector.memset b[:, 0:16], value=1.0\n"
                     "vector.tensor_tensor a[:, 0:16], a[:, 0:16], b[:, 0:16], op=add") == []


def test_hbm_outputs_are_unwritten_until_stored_and_inputs_are_written() -> None:
    source = """.hbm x float32[128, 64] input
.hbm y float32[128, 64] output
.sbuf a float32[128, 64]
dma.copy a, y
dma.copy y, a
"""
    result = neuronemu.run(neuronemu.assemble(source, filename="k.s"))
    assert "reads 'y' (src)" in result.warnings[0].render()
    assert np.isnan(result.outputs["y"]).all()


def test_cli_prints_warnings_to_stderr_and_json(tmp_path) -> None:
    runner = CliRunner()
    with contextlib.chdir(tmp_path):  # a scratch directory
        with open("k.s", "w") as f:
            f.write(KERNEL.format(body="vector.tensor_tensor a, a, b, op=add"))
        result = runner.invoke(main, ["run", "k.s", "--json"])
    assert result.exit_code == 0
    assert "k.s:6:28: warning:" in result.stderr
    (warning,) = json.loads(result.stdout)["warnings"]
    assert (warning["line"], warning["column"], warning["type"]) == (6, 28, "Diagnostic")
