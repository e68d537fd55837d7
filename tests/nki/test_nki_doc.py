"""docs/nki.md runs as written: its kernel, unchanged (`import nki`), run through the drop-in
switch, prints the output the page shows and writes the timeline it describes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "nki.md"


def test_the_doc_kernel_prints_what_the_page_shows(tmp_path):
    text = DOC.read_text()
    code = re.search(r"```python\n# file: swiglu.py\n(.*?)```", text, re.DOTALL).group(1)
    shown = re.search(r"`python -m neuronemu.nki swiglu.py` prints.*?```text\n(.*?)```", text,
                      re.DOTALL).group(1)
    (tmp_path / "swiglu.py").write_text(code)
    # this checkout's package, whichever neuronemu the interpreter has installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, "-m", "neuronemu.nki", "swiglu.py"], cwd=tmp_path,
                         capture_output=True, text=True, check=True, env=env).stdout
    assert out == shown
    trace = json.loads((tmp_path / "swiglu_trace.json").read_text())
    sources = {e["args"]["source"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert sources and all(s.startswith("swiglu.py:") for s in sources)


def test_the_doc_names_the_version_it_mirrors():
    from neuronemu import nki

    assert f"NKI {nki.NKI_VERSION} dialect" in DOC.read_text()
