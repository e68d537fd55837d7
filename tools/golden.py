"""The golden corpus of the bundled programs: check it, or record it.

For every case (a bundled program on a target, on one core or a topology, some with stochastic
rounding) this does what ``neuronemu run NAME --json --output-dir D --trace T`` does, through the
library modules the CLI uses (``neuronemu.files`` saves, ``neuronemu.report`` builds the
document), and keeps the JSON report minus its wall-clock fields, the sha256 of every saved
output file and of the Perfetto trace. tests/golden/programs.json holds the recorded corpus; tests/test_golden.py checks
it. An engine change must leave every case identical: outputs bit for bit, cycles, trace.

    python -m tools.golden            check, print one line per case, exit 1 on a difference
    python -m tools.golden --update   record (only on the engine the corpus should describe)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "golden" / "programs.json"

ONE_CORE = ["examples/vector_add", "examples/matmul_tile", "examples/matmul_tiled",
            "examples/softmax", "examples/layernorm", "timing/single_buffer",
            "timing/double_buffer", "timing/explicit_sync", "timing/pe_row_tiles",
            "dma/weight_stream", "dma/weight_stream_compressed", "dma/queues"]
EVERY_TARGET = ["examples/vector_add", "examples/matmul_tiled", "examples/softmax",
                "examples/layernorm", "timing/double_buffer"]
COLLECTIVES = ["collectives/all_reduce", "collectives/ring_allreduce",
               "collectives/ring_allgather", "collectives/pairwise_alltoall"]
TEST_PROGRAMS = ROOT / "tests" / "programs"   # racy.s and deadlock.s: their errors are results


def cases() -> dict[str, dict]:
    """Case name -> the ``neuronemu run`` options it uses (``kernel``, ``target``,
    ``topology``, ``seed``, ``stochastic_rounding``, ``rounding_seed``; absent: the default)."""
    out = {}
    for name in ONE_CORE:
        out[f"{name}@trn2"] = {"kernel": name, "target": "trn2"}
    for name in EVERY_TARGET:
        for target in ("trn1", "trn3"):
            out[f"{name}@{target}"] = {"kernel": name, "target": target}
    for name in ("examples/softmax", "examples/matmul_tiled"):
        out[f"{name}@trn2+sr"] = {"kernel": name, "target": "trn2", "stochastic_rounding": True,
                                  "rounding_seed": 7}
    out["examples/vector_add@trn2+seed5"] = {"kernel": "examples/vector_add", "seed": 5}
    for name in COLLECTIVES:
        out[f"{name}@trn2.48xlarge"] = {"kernel": name, "topology": "trn2.48xlarge"}
    out["collectives/all_reduce@trn1.32xlarge"] = {"kernel": "collectives/all_reduce",
                                                   "target": "trn1", "topology": "trn1.32xlarge"}
    for path in sorted(TEST_PROGRAMS.glob("*.s")):
        out[f"tests/programs/{path.stem}@trn2"] = {"kernel": str(path)}
    return out


def _strip(value):
    """The report without wall-clock times and paths (of the checkout and temporaries)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()
                if k not in ("wall_seconds", "compile_seconds", "path", "trace", "kernel")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, str):   # diagnostics name files by absolute path
        return value.replace(str(ROOT), "<checkout>")
    return value


def _trace_hash(raw: bytes) -> str:
    """sha256 of the trace with the checkout's path replaced (the trace names the kernel file)."""
    return hashlib.sha256(raw.replace(str(ROOT).encode(), b"<checkout>")).hexdigest()


def record(case: dict) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        out_dir, trace = Path(scratch) / "out", Path(scratch) / "trace.json"
        exit_code, report = run(case, out_dir, trace)
        files = {}
        if out_dir.exists():
            for path in sorted(out_dir.iterdir()):
                files[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        trace_hash = _trace_hash(trace.read_bytes()) if trace.exists() else None
    # (a JSON round trip: the recorded corpus holds what --json prints, lists not tuples)
    return {"exit_code": exit_code, "report": _strip(json.loads(json.dumps(report))),
            "files": files, "trace": trace_hash}


def run(case: dict, out_dir: Path, trace: Path) -> tuple[int, dict]:
    """(exit code, --json document) of ``neuronemu run`` with ``case``'s options, every output
    saved to ``out_dir`` and the trace to ``trace``: the CLI's own path (neuronemu.runs)."""
    from neuronemu import api, report, runs
    from neuronemu.cli import DEFAULT_TIMEOUT
    from neuronemu.errors import NeuronemuError

    # the options the CLI passes, defaults included (the suite's golden corpus keys runs by them)
    options = {"seed": case.get("seed", 0), "max_instructions": api.DEFAULT_MAX_INSTRUCTIONS,
               "timeout": DEFAULT_TIMEOUT,
               "stochastic_rounding": case.get("stochastic_rounding", False),
               "rounding_seed": case.get("rounding_seed")}
    program = None
    try:
        path, program = runs.assemble(case["kernel"], case.get("target"), case.get("topology"))
        done = runs.run(path, program, topology=case.get("topology"), output_dir=out_dir,
                        trace_path=trace, **options)
    except NeuronemuError as e:
        return e.exit_code, report.error_document(e, program.warnings if program else ())
    return 0, done.document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="record the corpus")
    parser.add_argument("-k", default="", help="only cases whose name contains this")
    options = parser.parse_args()
    expected = json.loads(CORPUS.read_text()) if CORPUS.exists() else {}
    got, failed = {}, 0
    for name, args in cases().items():
        if options.k not in name:
            continue
        got[name] = record(args)
        same = expected.get(name) == got[name]
        failed += not same and not options.update
        print(f"{'recorded' if options.update else 'ok' if same else 'DIFFERS'}  {name}",
              flush=True)
    if options.update:
        CORPUS.parent.mkdir(parents=True, exist_ok=True)
        CORPUS.write_text(json.dumps({**expected, **got}, indent=1, sort_keys=True) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
