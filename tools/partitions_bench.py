"""The figures of docs/multichip.md "Partitions": whole runs in one process and under
``mpiexec -n P``, their wall time, each process's peak memory, and whether the results are the
same to the bit.

    python -m tools.partitions_bench ring            # 16-rank send/recv ring all-reduce
    python -m tools.partitions_bench allreduce-1152  # 144 chips x 8 cores, 1 MiB all-reduce

Each case runs the whole CLI (``neuronemu run ... --json``) in one process and under
``mpiexec -n P`` (P = 2, or --processes), ``--repeat`` times each, alternating, and prints the
median wall times, their ratio, every process's peak RSS (from /usr/bin/time-style accounting:
``resource.getrusage`` of the process itself, written by a wrapper) and whether the --json
documents (all times, per-rank reports, link statistics, output statistics) and the output
files are identical. Needs the mpi extra (pip install 'neuronemu[mpi]').
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "ring": [str(ROOT / "programs/collectives/ring_allreduce.s")],
    "allreduce-1152": [str(ROOT / "programs/collectives/all_reduce.s"), "--topology",
                       "trn3-ultraserver-gen2", "--ranks-per-chip", "8"],
}

# runs the CLI in this process, then writes its own peak RSS (one file per MPI process)
WRAPPER = """\
import os, resource, sys
from neuronemu.cli import main
out = sys.argv.pop(1)
try:
    main(standalone_mode=False)
finally:
    rank = os.environ.get("PMI_RANK", "0")
    with open(f"{out}.{rank}", "w") as f:
        f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


def mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        sys.exit("mpiexec not found: pip install 'neuronemu[mpi]'")
    return found


def run(args: list[str], processes: int | None, scratch: Path) -> dict:
    out = scratch / f"run-{processes or 1}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    command = [sys.executable, "-c", WRAPPER, str(out / "rss"), "run", *args, "--json",
               "--output-dir", str(out / "outputs")]
    if processes is not None:
        command = [mpiexec(), "-n", str(processes), *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr}")
    doc = json.loads(proc.stdout)
    doc.pop("wall_seconds"), doc.pop("compile_seconds")
    for entry in doc["outputs"].values():
        entry.pop("path", None)
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted((out / "outputs").iterdir())}
    rss = [int((out / f"rss.{r}").read_text()) / 1024 for r in range(processes or 1)]
    return {"wall_s": wall, "rss_mib": rss,
            "digest": hashlib.sha256(json.dumps([doc, files], sort_keys=True).encode())
            .hexdigest()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs of each (default: 5 for ring, 1 for allreduce-1152)")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    repeat = options.repeat or (5 if options.case == "ring" else 1)
    local, mpi = [], []
    with tempfile.TemporaryDirectory(prefix="neuronemu-partitions-") as scratch:
        for _ in range(repeat):
            local.append(run(CASES[options.case], None, Path(scratch)))
            mpi.append(run(CASES[options.case], options.processes, Path(scratch)))
    same = len({r["digest"] for r in local + mpi}) == 1
    report = {
        "case": options.case, "processes": options.processes, "repeat": repeat,
        "in_process_wall_s": statistics.median(r["wall_s"] for r in local),
        "mpi_wall_s": statistics.median(r["wall_s"] for r in mpi),
        "in_process_peak_rss_mib": max(r["rss_mib"][0] for r in local),
        "mpi_peak_rss_mib_per_process": [max(r["rss_mib"][p] for r in mpi)
                                         for p in range(options.processes)],
        "identical": same,
    }
    report["ratio"] = report["mpi_wall_s"] / report["in_process_wall_s"]
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            shown = f"{value:.3f}" if isinstance(value, float) else value
            print(f"{key:32s} {shown}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
