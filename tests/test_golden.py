"""The bundled programs' golden corpus (tools/golden.py): every case's JSON report (less wall
time), saved outputs and Perfetto trace are exactly as recorded in tests/golden/programs.json."""

from __future__ import annotations

import json

import pytest

from tools import golden

EXPECTED = json.loads(golden.CORPUS.read_text())


def test_corpus_covers_every_case():
    assert sorted(EXPECTED) == sorted(golden.cases())


@pytest.mark.parametrize("name", sorted(golden.cases()))
def test_case_unchanged(name):
    got = golden.record(golden.cases()[name])
    want = EXPECTED[name]
    assert got["exit_code"] == want["exit_code"]
    assert got["report"] == want["report"]
    assert got["files"] == want["files"]
    assert got["trace"] == want["trace"]
