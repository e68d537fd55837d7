"""Assembly speed in lines per second (issue 17 item 7: >= 100,000 lines/s).

Usage: python -m tools.asm_speed [--lines N] [--repeat N] [--dir DIR] [--no-cli] [--json]
                                [--checkout DIR]

Generates three kernels of --lines lines (default 16,001) in --dir (default a temporary
directory) and times ``neuronemu.api.assemble_file`` on each in this (warm) process: median of
--repeat runs, reading the file included, interpreter start excluded.

  repeated  a 7-line body (dma.copy, vector.tensor_tensor, scalar.activation,
            vector.tensor_scalar, ctrl.mov) repeated: identical lines are resolved once
  distinct  the same instructions with unrolled offsets and immediates: every instruction line
            differs from every other, so each is tokenized, parsed, resolved, checked, lowered
  comments  three comment or blank lines per instruction line (the body of `repeated`)

It also times the whole CLI, `python -m neuronemu check repeated.s` (interpreter start
included), median of 3. --checkout measures another checkout's neuronemu (default: this one).
The machine this runs on may be shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = """\
.hbm a float32[128, 512] input
.hbm b float32[128, 512] input
.hbm c float32[128, 512] output
.sbuf at float32[128, 512]
.sbuf bt float32[128, 512]
.sbuf ct float32[128, 512]
"""
BODY = """\
    dma.copy at[:, 0:256], a[:, 0:256], queue=0          # HBM -> SBUF
    dma.copy bt, b, queue=1
    vector.tensor_tensor ct, at, bt, op=add
    scalar.activation ct, at, func=exp, scale=0.5
    vector.tensor_scalar ct[0:64, 0:128], ct[0:64, 0:128], op0=multiply, operand0=2.0
    ctrl.mov r1, 3
    dma.copy c, ct, queue=0
"""
WIDE = 1 << 22   # columns of the HBM tensors of `distinct` (assembly allocates nothing)
DISTINCT_HEADER = f"""\
.hbm a bfloat16[128, {WIDE}] input
.hbm b bfloat16[128, {WIDE}] input
.hbm c bfloat16[128, {WIDE}] output
.sbuf at bfloat16[128, 8192]
.sbuf bt bfloat16[128, 8192]
.sbuf ct bfloat16[128, 8192]
"""


def _distinct_body(k: int) -> str:
    """The body with every line made unique by k (offsets, queues, immediates)."""
    o = k % 7936
    p = 1 + k % 128
    return (f"    dma.copy at[:, {o}:{o} + 256], a[:, 256*{k}:256*{k}+256], queue={k % 16}\n"
            f"    dma.copy bt[:, 0:512], b[:, 512*{k}:512*{k}+512], queue={(k + 1) % 16}\n"
            f"    vector.tensor_tensor ct[0:{p}, {o}:{o}+256], at[0:{p}, {o}:{o}+256], "
            f"bt[0:{p}, 0:256], op=add\n"
            f"    scalar.activation ct[:, {o}:{o}+128], at[:, 0:128], func=exp, scale={k}.5\n"
            f"    vector.tensor_scalar ct[0:64, {o}:{o}+128], ct[0:64, 0:128], op0=multiply, "
            f"operand0={k}.25\n"
            f"    ctrl.mov r1, {k}\n"
            f"    dma.copy c[:, 256*{k}:256*{k}+256], ct[:, {o}:{o}+256], queue={(k + 2) % 16}\n")


def _fill(header: str, body, lines: int) -> str:
    out = [header]
    count = header.count("\n")
    k = 0
    while count < lines:
        chunk = body(k).splitlines(keepends=True)[: lines - count]
        out.extend(chunk)
        count += len(chunk)
        k += 1
    return "".join(out)


def _commented(k: int) -> str:
    lines = []
    for line in BODY.splitlines(keepends=True):
        lines += [f"# step {k}: the next instruction moves or computes a tile\n", "\n",
                  "    # (comment lines and blank lines are skipped by the parser)\n", line]
    return "".join(lines)


def generate(directory: Path, lines: int) -> dict[str, Path]:
    """Write the three kernels; {name: path}."""
    texts = {
        "repeated": _fill(HEADER, lambda k: BODY, lines),
        "distinct": _fill(DISTINCT_HEADER, _distinct_body, lines),
        "comments": _fill(HEADER, _commented, lines),
    }
    paths = {}
    for name, text in texts.items():
        paths[name] = directory / f"{name}.s"
        paths[name].write_text(text)
    return paths


def time_assembly(path: Path, repeat: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of assemble_file(path) in this process, after one warm-up.
    CPU time (this process) is less disturbed by other load on a shared machine."""
    from neuronemu.api import assemble_file

    assemble_file(path)
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        assemble_file(path)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def time_cli(path: Path, checkout: Path, repeat: int = 3) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "neuronemu", "check", str(path)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=16_001)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--no-cli", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    checkout = str(args.checkout.resolve())
    if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != checkout:
        # measure that checkout's neuronemu: run again with it first on the import path
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [checkout, *filter(None, [os.environ.get("PYTHONPATH")])])}
        again = subprocess.run([sys.executable, "-m", "tools.asm_speed", *sys.argv[1:]],
                               check=False, env=env, cwd=Path(__file__).resolve().parents[1])
        sys.exit(again.returncode)
    import neuronemu

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        paths = generate(directory, args.lines)
        results = {}
        for name, path in paths.items():
            seconds, cpu = time_assembly(path, args.repeat)
            results[name] = {"seconds": seconds, "lines_per_s": args.lines / seconds,
                             "cpu_seconds": cpu, "cpu_lines_per_s": args.lines / cpu}
        if not args.no_cli:
            results["cli_check_repeated_s"] = time_cli(paths["repeated"], args.checkout.resolve())
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"neuronemu from {Path(neuronemu.__file__).parent}; {args.lines} lines per file; "
          f"median of {args.repeat}; load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    for name in paths:
        r = results[name]
        print(f"  {name:9} {r['seconds'] * 1000:8.1f} ms  {r['lines_per_s']:10,.0f} lines/s   "
              f"(CPU {r['cpu_seconds'] * 1000:8.1f} ms  {r['cpu_lines_per_s']:10,.0f} lines/s)")
    if "cli_check_repeated_s" in results:
        print(f"  `neuronemu check repeated.s` (whole process): "
              f"{results['cli_check_repeated_s']:.2f} s")


if __name__ == "__main__":
    main()
